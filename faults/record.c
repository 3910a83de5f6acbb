/*
 * The recorder of libcrashcheck.so: raw system-call helpers, the content
 * hash, the snapshots of the WATCH directory and the trace lines.
 *
 * Everything here talks to the kernel through syscall(2) so that none of it
 * passes through the interposed functions (ours or libfiu's): the trace must
 * not count itself, and a planned fault must never hit the recorder.
 *
 * Cost. A program may make thousands of small writes to a large file, so
 * nothing here may cost in proportion to the file per call: a successful
 * write is recorded as the range it wrote (snap_range), the trace stays
 * open (trace_fd), and a descriptor's path comes from a cache that the
 * fstat the wrapper makes anyway proves current (fd_cache). Each shortcut
 * falls back to the old, whole way whenever it cannot prove itself.
 *
 * What is left per call is system calls, each as dear as a small write.
 * A write recorded as a range makes five besides its own: fstat, F_GETFL
 * and lseek before it (preload.c: the "before" state, the flags the line
 * names, the offset), then the fstat and pread of the read-back
 * descriptor (the size after the call, and the proof). The line is built
 * without stdio or malloc (struct sb) and copied into a shared mapping of
 * the trace (trace_put), which cost a fifth of a traced write as a
 * write(2) and the fstat that guarded it. tests/test_recorder.py counts
 * them.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "cc.h"

long cc_sys_open(const char *path, int flags, int mode)
{
	return syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}

/*
 * Open PATH (at DIRFD) read-only with FLAGS, for the recorder to read a
 * file the program wrote: with O_NOATIME where we may (the file's owner,
 * or CAP_FOWNER), so that a program's files do not show that we read
 * them, and a read-back after each write does not update the inode.
 */
long cc_open_read(int dirfd, const char *path, int flags)
{
	long fd = syscall(SYS_openat, dirfd, path, flags | O_RDONLY | O_NOATIME, 0);

	if (fd < 0 && errno == EPERM)
		fd = syscall(SYS_openat, dirfd, path, flags | O_RDONLY, 0);
	return fd;
}

long cc_sys_close(int fd)
{
	return syscall(SYS_close, fd);
}

long cc_sys_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		long n = syscall(SYS_write, fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= n;
	}
	return 0;
}

static void fill_stat(const struct stat *st, uint64_t *ino, int *mode, long long *size)
{
	if (ino)
		*ino = st->st_ino;
	if (mode)
		*mode = st->st_mode;
	if (size)
		*size = st->st_size;
}

/*
 * fstat(2) itself where the architecture has it: a traced write makes three,
 * and newfstatat(fd, "", AT_EMPTY_PATH) costs a fifth more (it looks at the
 * empty name first).
 */
long cc_sys_fstat(int fd, struct stat *st)
{
#ifdef SYS_fstat
	return syscall(SYS_fstat, fd, st);
#else
	return syscall(SYS_newfstatat, fd, "", st, AT_EMPTY_PATH);
#endif
}

long cc_sys_fstat_ino(int fd, uint64_t *ino, int *mode, long long *size)
{
	struct stat st;

	if (cc_sys_fstat(fd, &st) < 0)
		return -1;
	fill_stat(&st, ino, mode, size);
	return 0;
}

long cc_sys_stat_ino(const char *path, uint64_t *ino, int *mode, long long *size)
{
	struct stat st;

	if (syscall(SYS_newfstatat, AT_FDCWD, path, &st, 0) < 0)
		return -1;
	fill_stat(&st, ino, mode, size);
	return 0;
}

static void vsay(const char *fmt, va_list ap)
{
	char line[1024];
	int n;

	memcpy(line, "crashcheck: ", 12);
	n = vsnprintf(line + 12, sizeof(line) - 13, fmt, ap);
	if (n < 0)
		n = 0;
	n += 12;
	if (n > (int)sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	cc_sys_write_all(2, line, n);
}

void cc_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(fmt, ap);
	va_end(ap);
	syscall(SYS_exit_group, 2);
	_exit(2);
}

void cc_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(fmt, ap);
	va_end(ap);
}

void cc_fd_path(int fd, char *buf, size_t size)
{
	char proc[64];
	long n;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = syscall(SYS_readlinkat, AT_FDCWD, proc, buf, size - 1);
	if (n < 0)
		n = 0;
	buf[n] = '\0';
}

/*
 * The paths of descriptors, per process. readlink() of /proc/self/fd/N costs
 * a /proc lookup and a d_path() per call, several times the write it
 * describes; the answer only changes when the descriptor is closed or
 * replaced (close, dup2, an open that reuses the number: forgotten there)
 * or a name changes (rename, unlink: names_gen in the shared mapping, so a
 * rename by another process of the tree counts too). An entry is used only
 * when the fstat the wrapper made anyway shows the same inode, still linked
 * (an unlinked file reads "path (deleted)"), and names_gen has not moved
 * since the readlink; anything else reads the link again.
 */
#define FD_CACHE_NR 1024
#define FD_CACHE_PATH 512

static struct fd_cache_ent {
	int busy;		/* try-lock: taken = another thread, read the link */
	bool ok;		/* path holds the link of fd */
	uint64_t dev, ino;	/* the file it was read for */
	uint64_t gen;		/* names_gen before the readlink */
	char path[FD_CACHE_PATH];
	int rdfd;		/* ours, read-only, on rd_dev/rd_ino; 0 = none */
	uint64_t rd_dev, rd_ino;
} fd_cache[FD_CACHE_NR];

static bool try_lock(int *l)
{
	return !__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE);
}

static void unlock(int *l)
{
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

void cc_fd_path_st(int fd, const struct stat *st, char *buf, size_t size)
{
	struct fd_cache_ent *e;
	uint64_t gen;
	size_t n;

	if (fd < 0 || fd >= FD_CACHE_NR || !st || !st->st_nlink || !cc.sh) {
		cc_fd_path(fd, buf, size);
		return;
	}
	e = &fd_cache[fd];
	if (!try_lock(&e->busy)) {
		cc_fd_path(fd, buf, size);
		return;
	}
	gen = __atomic_load_n(&cc.sh->names_gen, __ATOMIC_ACQUIRE);
	if (e->ok && e->dev == st->st_dev && e->ino == st->st_ino && e->gen == gen &&
	    (n = strlen(e->path)) < size) {
		memcpy(buf, e->path, n + 1);
		goto out;
	}
	e->ok = false;
	cc_fd_path(fd, buf, size);
	n = strlen(buf);
	if (n && n < sizeof(e->path)) {
		memcpy(e->path, buf, n + 1);
		e->dev = st->st_dev;
		e->ino = st->st_ino;
		e->gen = gen;
		e->ok = true;
	}
out:
	unlock(&e->busy);
}

/* our descriptor RDFD still is the one we opened on DEV:INO */
static bool still_ours(int rdfd, uint64_t dev, uint64_t ino)
{
	struct stat st;

	return cc_sys_fstat(rdfd, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
}

static void drop_rdfd(struct fd_cache_ent *e)
{
	/* a number the program took over is the program's: not closed */
	if (e->rdfd > 0 && still_ours(e->rdfd, e->rd_dev, e->rd_ino))
		cc_sys_close(e->rdfd);
	e->rdfd = 0;
}

void cc_fd_forget(int fd)
{
	struct fd_cache_ent *e;

	if (fd < 0 || fd >= FD_CACHE_NR)
		return;
	e = &fd_cache[fd];
	/* taken: the holder compares the inode on its next use anyway, and a
	 * read-back descriptor left open is closed when the number is next
	 * forgotten */
	if (try_lock(&e->busy)) {
		e->ok = false;
		drop_rdfd(e);
		unlock(&e->busy);
	}
}

/*
 * A read-only descriptor of the file open at FD (fstat ST), to read back
 * what a write put there: the program's may be write-only, and opening
 * /proc/self/fd/N again for every write costs more than the write. Kept per
 * descriptor until the program closes or replaces FD, at a high number (the
 * trace's floor) so that the program's own numbering does not change.
 *
 * The kept one is handed out unchecked: the program may have closed it or
 * dup2()ed its own file over it, so the caller fstats it before reading
 * anything (one fstat, taken after the record's seq, which the range
 * snapshot needs anyway for the size) and, if it is no longer on ST's
 * inode, asks again passing it as STALE: that number is the program's now,
 * forgotten and never closed, and a new one is opened and checked. -1 when
 * none can be had: the caller opens one of its own.
 */
static int trace_fd_floor(void);

int cc_fd_reader(int fd, const struct stat *st, int stale)
{
	struct fd_cache_ent *e;
	char proc[64];
	int rd = -1, lo, floor;

	if (fd < 0 || fd >= FD_CACHE_NR)
		return -1;
	e = &fd_cache[fd];
	if (!try_lock(&e->busy))
		return -1;
	if (e->rdfd > 0) {
		if (e->rdfd != stale && e->rd_dev == st->st_dev && e->rd_ino == st->st_ino) {
			rd = e->rdfd;
			goto out;
		}
		/* an open descriptor never changes inode: one that failed the
		 * check is not ours any more */
		if (e->rdfd == stale)
			e->rdfd = 0;
		else
			drop_rdfd(e);
	}
	floor = trace_fd_floor();
	if (!floor)
		goto out;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	lo = cc_open_read(AT_FDCWD, proc, O_CLOEXEC);
	if (lo < 0)
		goto out;
	rd = syscall(SYS_fcntl, lo, F_DUPFD_CLOEXEC, floor);
	cc_sys_close(lo);
	if (rd < 0 || !still_ours(rd, st->st_dev, st->st_ino)) {
		if (rd >= 0)
			cc_sys_close(rd);
		rd = -1;
		goto out;
	}
	e->rdfd = rd;
	e->rd_dev = st->st_dev;
	e->rd_ino = st->st_ino;
out:
	unlock(&e->busy);
	return rd;
}

void cc_names_changed(void)
{
	if (cc.sh)
		__atomic_add_fetch(&cc.sh->names_gen, 1, __ATOMIC_RELEASE);
}

/* ---- inodes some process may change without an intercepted write ------ */

void cc_taint(uint64_t dev, uint64_t ino)
{
	struct cc_shared *sh = cc.sh;
	uint64_t i, nr = __atomic_load_n(&sh->taint_nr, __ATOMIC_ACQUIRE);

	for (i = 0; i < nr && i < CC_TAINT_MAX; i++)
		if (__atomic_load_n(&sh->taint[i].ready, __ATOMIC_ACQUIRE) &&
		    sh->taint[i].dev == dev && sh->taint[i].ino == ino)
			return;
	/* two processes may add the same inode twice: harmless */
	i = __atomic_fetch_add(&sh->taint_nr, 1, __ATOMIC_ACQ_REL);
	if (i >= CC_TAINT_MAX)
		return;		/* full: taint_nr past the end taints every inode */
	sh->taint[i].dev = dev;
	sh->taint[i].ino = ino;
	__atomic_store_n(&sh->taint[i].ready, 1, __ATOMIC_RELEASE);
}

static bool tainted(uint64_t dev, uint64_t ino)
{
	struct cc_shared *sh = cc.sh;
	uint64_t nr = __atomic_load_n(&sh->taint_nr, __ATOMIC_ACQUIRE);

	if (nr > CC_TAINT_MAX)
		return true;
	for (uint64_t i = 0; i < nr; i++) {
		/* claimed but not yet written: it may be this one */
		if (!__atomic_load_n(&sh->taint[i].ready, __ATOMIC_ACQUIRE))
			return true;
		if (sh->taint[i].dev == dev && sh->taint[i].ino == ino)
			return true;
	}
	return false;
}

/*
 * The inodes this process has snapshotted, each with the fstat its last
 * snapshot was taken under. A range snapshot is applied by the explorer to
 * the content it last knew, so it is only taken when this process's own
 * last snapshot of the inode is what the explorer last knew -- the fstat
 * before the write matches the one we recorded (size, mtime, ctime). A
 * process that never snapshotted the inode (an exec'd child, a file opened
 * without O_CREAT or O_TRUNC) takes a whole one first. Any other change,
 * by another process or by something we do not intercept, shows as a
 * different fstat and costs a whole snapshot, never a wrong one; only a
 * same-size unseen write within one timestamp tick could slip past, which
 * is what the taint list above is for.
 */
#define KNOWN_NR 32

static int known_busy;
static unsigned known_next;
static struct known_ent {
	bool used;
	uint64_t dev, ino;
	long long size;
	struct timespec mtim, ctim;
} known[KNOWN_NR];

static bool same_ts(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

static void known_set(const struct stat *st)
{
	struct known_ent *e = NULL;

	if (!try_lock(&known_busy))
		return;
	for (int i = 0; i < KNOWN_NR; i++)
		if (known[i].used && known[i].dev == st->st_dev && known[i].ino == st->st_ino)
			e = &known[i];
	if (!e)
		e = &known[known_next++ % KNOWN_NR];
	e->used = true;
	e->dev = st->st_dev;
	e->ino = st->st_ino;
	e->size = st->st_size;
	e->mtim = st->st_mtim;
	e->ctim = st->st_ctim;
	unlock(&known_busy);
}

static bool known_current(const struct stat *st)
{
	bool ok = false;

	if (!try_lock(&known_busy))
		return false;
	for (int i = 0; i < KNOWN_NR; i++) {
		const struct known_ent *e = &known[i];
		if (e->used && e->dev == st->st_dev && e->ino == st->st_ino) {
			ok = e->size == st->st_size && same_ts(&e->mtim, &st->st_mtim) &&
			     same_ts(&e->ctim, &st->st_ctim);
			break;
		}
	}
	unlock(&known_busy);
	return ok;
}

/*
 * Fold ".", ".." and repeated slashes out of the absolute path BUF, in
 * place, as the harness's reader folds them (os.path.normpath): a path the
 * program spelled "work/../in/new" lies outside WATCH, and what lies
 * under it is a prefix test.
 */
static void fold_path(char *buf)
{
	char *out = buf, *p = buf;

	if (*p != '/')
		return;
	while (*p) {
		char *seg;
		size_t n;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		seg = p;
		while (*p && *p != '/')
			p++;
		n = p - seg;
		if (n == 1 && seg[0] == '.')
			continue;
		if (n == 2 && seg[0] == '.' && seg[1] == '.') {
			while (out > buf && *--out != '/')
				;
			continue;
		}
		*out++ = '/';
		memmove(out, seg, n);
		out += n;
	}
	if (out == buf)
		*out++ = '/';
	*out = '\0';
}

void cc_abs_path(int dirfd, const char *path, char *buf, size_t size)
{
	char base[CC_PATH_MAX];

	buf[0] = '\0';
	if (!path)
		return;
	if (path[0] == '/') {
		snprintf(buf, size, "%s", path);
		fold_path(buf);
		return;
	}
	if (dirfd == AT_FDCWD) {
		long n = syscall(SYS_getcwd, base, sizeof(base));
		if (n <= 0)
			base[0] = '\0';
	} else {
		cc_fd_path(dirfd, base, sizeof(base));
	}
	while (path[0] == '.' && path[1] == '/')
		path += 2;
	if (!strcmp(base, "/"))
		base[0] = '\0';
	snprintf(buf, size, "%s/%s", base, path);
	fold_path(buf);
}

/*
 * The 64-bit content hash that names snapshot files. Not a cryptographic
 * hash: what it must give is that two different contents of one run do
 * not share a name by accident (about 2^-64 per pair), at the speed of
 * memory, because every write of a large file is hashed (BLAKE2b, which
 * it replaces, was a fifth of a traced program's time). Four lanes take
 * 8 bytes each per 32-byte stripe with a multiply and a rotate (the round
 * of xxHash64, whose constants these are), then the lanes, the tail and
 * the length are folded and the result avalanched. Nothing outside the
 * library computes it: the harness only reads the names.
 */
#define H_P1 0x9e3779b185ebca87ULL
#define H_P2 0xc2b2ae3d27d4eb4fULL
#define H_P3 0x165667b19e3779f9ULL
#define H_P4 0x85ebca77c2b2ae63ULL
#define H_P5 0x27d4eb2f165667c5ULL

static inline uint64_t rotl64(uint64_t x, int n)
{
	return (x << n) | (x >> (64 - n));
}

static inline uint64_t load64(const uint8_t *p)
{
	uint64_t w;

	memcpy(&w, p, 8);	/* host byte order: a name only has to hold on this machine */
	return w;
}

static inline uint64_t load32(const uint8_t *p)
{
	uint32_t w;

	memcpy(&w, p, 4);
	return w;
}

static inline uint64_t h_round(uint64_t acc, uint64_t w)
{
	return rotl64(acc + w * H_P2, 31) * H_P1;
}

static inline uint64_t h_merge(uint64_t h, uint64_t lane)
{
	return (h ^ h_round(0, lane)) * H_P1 + H_P4;
}

/* the four lanes of the 32-byte stripes, as one */
static inline uint64_t h_lanes(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
	uint64_t h = rotl64(a, 1) + rotl64(b, 7) + rotl64(c, 12) + rotl64(d, 18);

	return h_merge(h_merge(h_merge(h_merge(h, a), b), c), d);
}

/* H after the stripes, the bytes [P, END) that make no whole stripe */
static uint64_t h_finish(uint64_t h, const uint8_t *p, const uint8_t *end)
{
	for (; end - p >= 8; p += 8)
		h = rotl64(h ^ h_round(0, load64(p)), 27) * H_P1 + H_P4;
	if (end - p >= 4) {
		h = rotl64(h ^ (load32(p) * H_P1), 23) * H_P2 + H_P3;
		p += 4;
	}
	for (; p < end; p++)
		h = rotl64(h ^ (*p * H_P5), 11) * H_P1;
	h ^= h >> 33;
	h *= H_P2;
	h ^= h >> 29;
	h *= H_P3;
	h ^= h >> 32;
	return h;
}

uint64_t cc_hash(const void *buf, size_t len)
{
	const uint8_t *p = buf, *end = p + len;
	uint64_t h;

	if (len >= 32) {
		uint64_t a = H_P1 + H_P2, b = H_P2, c = 0, d = -H_P1;

		for (; end - p >= 32; p += 32) {
			a = h_round(a, load64(p));
			b = h_round(b, load64(p + 8));
			c = h_round(c, load64(p + 16));
			d = h_round(d, load64(p + 24));
		}
		h = h_lanes(a, b, c, d);
	} else {
		h = H_P5;
	}
	return h_finish(h + len, p, end);
}

/*
 * cc_hash over bytes that come in pieces (a file read a chunk at a time,
 * a hole given as zeros): the same stripes, the same tail, the same
 * answer as cc_hash over them all at once.
 */
void cc_hash_init(struct cc_hasher *h)
{
	h->a = H_P1 + H_P2;
	h->b = H_P2;
	h->c = 0;
	h->d = -H_P1;
	h->total = 0;
	h->tail_len = 0;
}

static inline void hash_stripe(struct cc_hasher *h, const uint8_t *p)
{
	h->a = h_round(h->a, load64(p));
	h->b = h_round(h->b, load64(p + 8));
	h->c = h_round(h->c, load64(p + 16));
	h->d = h_round(h->d, load64(p + 24));
}

void cc_hash_feed(struct cc_hasher *h, const void *buf, size_t len)
{
	const uint8_t *p = buf, *end = p + len;

	h->total += len;
	if (h->tail_len) {
		size_t n = 32 - h->tail_len < len ? 32 - h->tail_len : len;

		memcpy(h->tail + h->tail_len, p, n);
		h->tail_len += n;
		p += n;
		if (h->tail_len < 32)
			return;
		hash_stripe(h, h->tail);
		h->tail_len = 0;
	}
	for (; end - p >= 32; p += 32)
		hash_stripe(h, p);
	memcpy(h->tail, p, end - p);
	h->tail_len = end - p;
}

uint64_t cc_hash_end(const struct cc_hasher *st)
{
	uint64_t h = st->total >= 32 ? h_lanes(st->a, st->b, st->c, st->d) : H_P5;

	return h_finish(h + st->total, st->tail, st->tail + st->tail_len);
}

/* the digest's bytes in order, as hexdigest() prints them */
static void hash_hex(uint64_t h, char out[17])
{
	static const char hex[] = "0123456789abcdef";

	for (int i = 0; i < 8; i++) {
		uint8_t b = h >> (8 * i);
		out[2 * i] = hex[b >> 4];
		out[2 * i + 1] = hex[b & 15];
	}
	out[16] = '\0';
}

/*
 * The text of one trace line. It starts in the caller's stack frame, which
 * holds every line a write makes (a path, a range of up to CC_INLINE_MAX
 * bytes as hex), and moves to the heap only for a longer one: a walk of a
 * large directory, a long path. No stdio: the line is a few integers and
 * strings, and vsnprintf plus a malloc per line cost more than the rest of
 * the line together. On allocation failure it stops growing and the line
 * is dropped with a warning: a half line would be read as a corrupt trace.
 */
#define SB_STACK 4096

struct sb {
	char *buf;		/* stack, or heap when heap */
	size_t len, cap;	/* bytes written, bytes buf holds */
	bool oom;
	bool heap;
	char stack[SB_STACK];
};

static void sb_init(struct sb *sb)
{
	sb->buf = sb->stack;
	sb->len = 0;
	sb->cap = sizeof(sb->stack);
	sb->oom = sb->heap = false;
}

static void sb_release(struct sb *sb)
{
	if (sb->heap)
		free(sb->buf);
	sb_init(sb);
}

static void __attribute__((noinline)) sb_grow_slow(struct sb *sb, size_t more)
{
	size_t want = sb->cap * 2;
	char *p;

	while (want < sb->len + more + 1)
		want *= 2;
	p = sb->heap ? realloc(sb->buf, want) : malloc(want);
	if (!p) {
		sb->oom = true;
		return;
	}
	if (!sb->heap)
		memcpy(p, sb->buf, sb->len);
	sb->buf = p;
	sb->cap = want;
	sb->heap = true;
}

/* room for MORE bytes and a NUL (plan_json_quote writes one), or oom */
static inline void sb_grow(struct sb *sb, size_t more)
{
	if (!sb->oom && sb->len + more + 1 > sb->cap)
		sb_grow_slow(sb, more);
}

static inline void sb_add(struct sb *sb, const char *s, size_t len)
{
	sb_grow(sb, len);
	if (sb->oom)
		return;
	memcpy(sb->buf + sb->len, s, len);
	sb->len += len;
}

/* a string literal */
#define sb_lit(sb, s) sb_add((sb), "" s, sizeof(s) - 1)

static inline void sb_str(struct sb *sb, const char *s)
{
	sb_add(sb, s, strlen(s));
}

/* V in decimal, as printf's %llu */
static void sb_u64(struct sb *sb, uint64_t v)
{
	char tmp[20], *p = tmp + sizeof(tmp);

	do {
		*--p = '0' + v % 10;
		v /= 10;
	} while (v);
	sb_add(sb, p, tmp + sizeof(tmp) - p);
}

/* V in decimal, as printf's %lld */
static void sb_i64(struct sb *sb, long long v)
{
	if (v < 0) {
		sb_lit(sb, "-");
		sb_u64(sb, -(uint64_t)v);
	} else {
		sb_u64(sb, v);
	}
}

/* LEN bytes of DATA as lowercase hex digits */
static void sb_hex(struct sb *sb, const void *data, size_t len)
{
	static const char digit[] = "0123456789abcdef";
	const uint8_t *p = data;
	char *o;

	sb_grow(sb, 2 * len);
	if (sb->oom)
		return;
	/* through a local pointer: a store through sb->buf could alias sb->len */
	o = sb->buf + sb->len;
	for (size_t i = 0; i < len; i++) {
		*o++ = digit[p[i] >> 4];
		*o++ = digit[p[i] & 15];
	}
	sb->len += 2 * len;
}

/*
 * S as a JSON string, exactly as plan_json_quote() writes it (the harness
 * and the tests compare traces byte for byte). A path almost never needs an
 * escape: printable ASCII other than '"' and '\' is copied while it is
 * checked, in one pass; anything else is left to plan_json_quote, which
 * measures first and writes second.
 */
static void sb_quote(struct sb *sb, const char *s)
{
	size_t len = strlen(s), need = 0, i;
	char *p;

	sb_grow(sb, len + 2);
	if (sb->oom)
		return;
	p = sb->buf + sb->len;
	*p++ = '"';
	for (i = 0; i < len; i++) {
		unsigned char c = s[i];

		if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\')
			break;
		p[i] = c;
	}
	if (i == len) {
		p[len] = '"';
		sb->len += len + 2;
		return;
	}
	plan_json_quote(NULL, 0, &need, s, len);
	sb_grow(sb, need);
	if (sb->oom)
		return;
	plan_json_quote(sb->buf + sb->len, need + 1, &(size_t){ 0 }, s, len);
	sb->len += need;
}

bool cc_under_watch(const char *path)
{
	return cc.watch && !strncmp(path, cc.watch, cc.watch_len) &&
	       path[cc.watch_len] == '/';
}

/* shared by the preload's hooks and the supervisor's calls.c */
void cc_snap_parent(struct cc_rec *r, int which)
{
	const char *p = which == 2 ? r->path2 : r->path;

	if (cc.recorder && cc_under_watch(p))
		r->snap |= which == 2 ? SNAP_DIR2 : SNAP_DIR;
}

void cc_snap_self(struct cc_rec *r)
{
	if (cc.recorder && (cc_under_watch(r->path) || !strcmp(r->path, cc.watch)))
		r->snap |= SNAP_SELF;
}

/*
 * Hashes this process has seen stored, so that a blob written again (a
 * whole snapshot of unchanged content, a block of zeros) costs no lookup in
 * SNAPDIR. A slot holds a whole hash or 0; a lost race only costs a lookup.
 */
#define STORED_NR 4096
static uint64_t stored[STORED_NR];

static bool stored_has(uint64_t h)
{
	return h && __atomic_load_n(&stored[h % STORED_NR], __ATOMIC_RELAXED) == h;
}

static void stored_add(uint64_t h)
{
	__atomic_store_n(&stored[h % STORED_NR], h, __ATOMIC_RELAXED);
}

/* ---- the scratch: its budget, and when it is full ---------------------- */

/* one line appended to CRASHCHECK_NOTE, which the harness reads after the run */
static void note_line(const char *fmt, va_list ap)
{
	char line[CC_PATH_MAX + 256];
	int fd, n;

	if (!cc.note)
		return;
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	fd = cc_sys_open(cc.note, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	cc_sys_write_all(fd, line, n);
	cc_sys_close(fd);
}

/*
 * The run cannot be recorded within what the harness gave it: say why in
 * CRASHCHECK_NOTE, then kill the run's process group: the harness sets a
 * note only for a run it started in a session of its own. The harness
 * reports such a run as its own failure (harness-error), never as the
 * program's: a run stopped half way says nothing about it. Without a
 * note, the reason goes to stderr and only this process is killed.
 *
 * Under the supervisor this runs in the supervisor, not in the program:
 * it knows every process of the program (its tracees, in whatever
 * process group or session they put themselves), kills those
 * (cc.stop_program), and then itself alone, whoever started it, with or
 * without a note; its SIGKILL is the run's end the harness sees, as the
 * preload's.
 */
void cc_stop_run(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (cc.note)
		note_line(fmt, ap);
	else
		vsay(fmt, ap);
	va_end(ap);
	if (cc.stop_program)
		cc.stop_program();
	else if (cc.note)
		syscall(SYS_kill, 0, SIGKILL);
	syscall(SYS_kill, syscall(SYS_getpid), SIGKILL);
	syscall(SYS_exit_group, 137);
	_exit(137);
}

static void stop_full(const char *what, const char *path, int err)
{
	cc_stop_run("full %s %s %s", err == EDQUOT ? "EDQUOT" : "ENOSPC", what,
		    path);
}

/* a snapshot's write to PATH (written aside, removed here) failed: a full
 * scratch stops the run, with room made for its note first; anything else
 * only loses the snapshot */
static void store_failed(const char *what, const char *path, int err)
{
	syscall(SYS_unlinkat, AT_FDCWD, path, 0);
	if (err == ENOSPC || err == EDQUOT)
		stop_full(what, path, err);
	cc_warn("%s snapshot '%s': %s", what, path, strerror(err));
}

/* N more bytes of snapshots to store: past CRASHCHECK_LIMIT the run stops */
static void charge(uint64_t n)
{
	uint64_t now;

	if (!cc.limit || !n)
		return;
	now = __atomic_add_fetch(&cc.sh->stored, n, __ATOMIC_RELAXED);
	if (now > cc.limit)
		cc_stop_run("limit-stored %llu", (unsigned long long)cc.limit);
}

/* the file NAME, of SIZE bytes, is to be snapshotted */
static void check_size(const char *name, long long size)
{
	if (cc.limit && size > 0 && (unsigned long long)size > cc.limit)
		cc_stop_run("limit-file %llu %lld %s", (unsigned long long)cc.limit,
			    size, name);
}

static void __attribute__((format(printf, 1, 2))) note(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	note_line(fmt, ap);
	va_end(ap);
}

/*
 * A call of the program on the work directory failed with ENOSPC or
 * EDQUOT that no rule planned: the scratch itself is full, and the
 * program's answer to it is not what the case was about. Noted once per
 * process (a program may retry for ever); the harness decides, for a spec
 * that runs on a full disk on purpose expects it.
 */
static bool noted;	/* cc_note_failure's, once a process */

void cc_note_failure(const struct cc_rec *r, int err)
{
	if (noted || !cc.note || (err != ENOSPC && err != EDQUOT) || r->fired ||
	    !r->path[0] || !(cc_under_watch(r->path) || !strcmp(r->path, cc.watch)))
		return;
	noted = true;
	note("program-full %s %s %s", err == EDQUOT ? "EDQUOT" : "ENOSPC",
	     call_table[r->call].name, r->path);
}

/* Store LEN bytes of DATA once under SNAPDIR/<hash>; put the hash in HEX. */
static int store_blob(const void *data, size_t len, char hex[17])
{
	char path[CC_PATH_MAX], tmp[CC_PATH_MAX];
	uint64_t h = cc_hash(data, len);
	int out = -1, ret = -1;

	hash_hex(h, hex);
	if (stored_has(h))
		return 0;
	snprintf(path, sizeof(path), "%s/%s", cc.snapdir, hex);
	if (syscall(SYS_faccessat, AT_FDCWD, path, F_OK) == 0) {
		ret = 0;
		goto out;
	}
	charge(len);
	/* write aside and rename, so a reader never sees half a snapshot */
	/* a thread id is unique among the live threads of every process */
	snprintf(tmp, sizeof(tmp), "%s/.%s.%ld", cc.snapdir, hex,
		 (long)syscall(SYS_gettid));
	out = cc_sys_open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (out < 0) {
		store_failed("open", tmp, errno);
		goto out;
	}
	if (cc_sys_write_all(out, data, len) < 0) {
		store_failed("write", tmp, errno);
		goto out;
	}
	if (syscall(SYS_renameat, AT_FDCWD, tmp, AT_FDCWD, path) < 0) {
		store_failed("rename", tmp, errno);
		goto out;
	}
	ret = 0;
out:
	if (!ret)
		stored_add(h);
	if (out >= 0)
		cc_sys_close(out);
	return ret;
}

/* a blob written aside as TMP, whose content hashes to H, put in its place */
static int place_blob(const char *tmp, uint64_t h, char hex[17])
{
	char path[CC_PATH_MAX];

	hash_hex(h, hex);
	snprintf(path, sizeof(path), "%s/%s", cc.snapdir, hex);
	if (stored_has(h) || syscall(SYS_faccessat, AT_FDCWD, path, F_OK) == 0) {
		syscall(SYS_unlinkat, AT_FDCWD, tmp, 0);
		stored_add(h);
		return 0;
	}
	if (syscall(SYS_renameat, AT_FDCWD, tmp, AT_FDCWD, path) < 0) {
		store_failed("rename", tmp, errno);
		return -1;
	}
	stored_add(h);
	return 0;
}

static long pwrite_all(int fd, const char *buf, size_t len, long long off)
{
	while (len) {
		long n = syscall(SYS_pwrite64, fd, buf, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = ENOSPC;
			return -1;
		}
		buf += n;
		len -= n;
		off += n;
	}
	return 0;
}

static long pread_some(int fd, char *buf, size_t len, long long off)
{
	long n;

	do
		n = syscall(SYS_pread64, fd, buf, len, off);
	while (n < 0 && errno == EINTR);
	return n;
}

/*
 * Files larger than STREAM_MIN, and writes of more than that, are
 * snapshotted a chunk at a time: the recorder's memory does not grow with
 * the file, and of a sparse file only the data is read and stored (its
 * holes are hashed as the zeros they read as, and stay holes in the blob).
 */
#define STREAM_MIN (1 << 20)
#define CHUNK (1 << 20)
static const uint8_t zeros[1 << 16];

static void hash_zeros(struct cc_hasher *h, long long n)
{
	while (n > 0) {
		size_t k = n < (long long)sizeof(zeros) ? (size_t)n : sizeof(zeros);

		cc_hash_feed(h, zeros, k);
		n -= k;
	}
}

/*
 * Snapshot SIZE bytes of the regular file FD, a chunk at a time, into a
 * blob; its hash in HEX, the bytes it holds in *GOT (fewer when the file
 * shrank meanwhile). -1: nothing stored (the reason was said).
 */
static int store_stream(int fd, long long size, char hex[17], long long *got)
{
	char tmp[CC_PATH_MAX], *buf = NULL;
	struct cc_hasher h;
	long long off = 0;
	int out = -1, ret = -1;

	*got = 0;
	snprintf(tmp, sizeof(tmp), "%s/.stream.%ld", cc.snapdir,
		 (long)syscall(SYS_gettid));
	out = cc_sys_open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0) {
		store_failed("open", tmp, errno);
		return -1;
	}
	buf = malloc(CHUNK);
	if (!buf)
		goto out;
	cc_hash_init(&h);
	while (off < size) {
		long long data = syscall(SYS_lseek, fd, off, SEEK_DATA), hole;

		if (data < 0 && errno == ENXIO) {
			/* a hole to the end, or the file shrank */
			struct stat st;

			if (cc_sys_fstat(fd, &st) == 0 && st.st_size < size)
				size = st.st_size > off ? st.st_size : off;
			data = hole = size;
		} else if (data < 0) {
			data = off;	/* no SEEK_DATA here: read it all */
			hole = size;
		} else {
			if (data > size)
				data = size;
			hole = syscall(SYS_lseek, fd, data, SEEK_HOLE);
			if (hole < 0 || hole > size)
				hole = size;
		}
		hash_zeros(&h, data - off);
		off = data;
		while (off < hole) {
			long n = pread_some(fd, buf, hole - off < CHUNK ? hole - off : CHUNK,
					    off);

			if (n < 0)
				goto out;
			if (n == 0) {
				size = hole = off;	/* shrank under us */
				break;
			}
			charge(n);
			cc_hash_feed(&h, buf, n);
			if (pwrite_all(out, buf, n, off) < 0) {
				store_failed("write", tmp, errno);
				goto out;
			}
			off += n;
		}
	}
	if (syscall(SYS_ftruncate, out, off) < 0) {
		store_failed("truncate", tmp, errno);
		goto out;
	}
	cc_sys_close(out);
	out = -1;
	*got = off;
	ret = place_blob(tmp, cc_hash_end(&h), hex);
out:
	free(buf);
	if (out >= 0) {
		cc_sys_close(out);
		syscall(SYS_unlinkat, AT_FDCWD, tmp, 0);
	}
	return ret;
}

/*
 * Read LEN bytes of FD at OFF; fewer when the file ends. Into SMALL (of
 * SMALL_LEN bytes) when they fit, else into a new buffer: free the result
 * when it is not SMALL.
 */
static char *read_at(int fd, long long off, long long len, long long *got,
		     char *small, size_t small_len)
{
	char *data = small && (unsigned long long)len <= small_len ? small :
		     malloc(len ? len : 1);

	*got = 0;
	if (!data)
		return NULL;
	while (*got < len) {
		long n = syscall(SYS_pread64, fd, data + *got, len - *got, off + *got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			if (data != small)
				free(data);
			return NULL;
		}
		if (n == 0)
			break;	/* shrank under us */
		*got += n;
	}
	return data;
}

/* how a snap.files entry starts: "1234":{"size":5 (a comma before all but
 * the first) */
static void sb_file_head(struct sb *sb, bool *first, uint64_t ino, long long size)
{
	if (!*first)
		sb_lit(sb, ",");
	*first = false;
	sb_lit(sb, "\"");
	sb_u64(sb, ino);
	sb_lit(sb, "\":{\"size\":");
	sb_i64(sb, size);
}

/*
 * "1234":{"size":5,"hash":"9f..."} for the regular file NAME open at FD,
 * whose fstat is ST. A small one is read whole, in one read that keeps
 * hash and copy of the same bytes; a large one a chunk at a time, its holes
 * skipped (store_stream). One larger than CRASHCHECK_LIMIT stops the run.
 */
static void snap_file_fd(struct sb *sb, int fd, const struct stat *st, bool *first,
			 const char *name)
{
	long long got;
	char hex[17], *data = NULL;
	int rc;

	if (!S_ISREG(st->st_mode))
		return;
	check_size(name, st->st_size);
	if (st->st_size > STREAM_MIN) {
		rc = store_stream(fd, st->st_size, hex, &got);
	} else {
		data = read_at(fd, 0, st->st_size, &got, NULL, 0);
		if (!data)
			return;
		rc = store_blob(data, got, hex);
	}
	if (rc == 0) {
		sb_file_head(sb, first, st->st_ino, got);
		sb_lit(sb, ",\"hash\":\"");
		sb_add(sb, hex, 16);
		sb_lit(sb, "\"}");
		/* the fstat came first: a change after it shows next time */
		if (got == st->st_size)
			known_set(st);
	}
	free(data);
}

/*
 * Fstat R's snap_fd into ST, after the record's seq: the one fstat a file
 * snapshot makes. A borrowed descriptor (the program's, or a kept reader)
 * must still be on the inode the call wrote, or nothing is read from it:
 * a kept reader the program closed or dup2()ed over is replaced (see
 * cc_fd_reader), and when no reader can be had a fresh descriptor of the
 * program's FD, closed after, still gives the whole snapshot. False: no
 * descriptor of the file the call wrote can be had, no snapshot.
 */
static bool snap_fd_stat(struct cc_rec *r, struct stat *st)
{
	char proc[64];
	int fd;

	if (cc_sys_fstat(r->snap_fd, st) == 0 &&
	    (!r->snap_fd_borrowed || !r->has_st ||
	     (st->st_dev == r->st.st_dev && st->st_ino == r->st.st_ino)))
		return true;
	if (!r->snap_fd_borrowed || !r->has_st)
		return false;
	if (r->snap_fd_kept) {
		fd = cc_fd_reader(r->fd, &r->st, r->snap_fd);
		if (fd >= 0 && cc_sys_fstat(fd, st) == 0 &&
		    st->st_dev == r->st.st_dev && st->st_ino == r->st.st_ino) {
			r->snap_fd = fd;
			return true;
		}
	}
	r->snap_fd = -1;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", r->fd);
	fd = cc_open_read(AT_FDCWD, proc, O_CLOEXEC);
	if (fd < 0)
		return false;
	/* the caller closes it, whatever comes of it */
	r->snap_fd = fd;
	r->snap_fd_borrowed = r->snap_fd_kept = false;
	return cc_sys_fstat(fd, st) == 0 && st->st_dev == r->st.st_dev &&
	       st->st_ino == r->st.st_ino;
}

/* bytes [POS, POS+LEN) of what the call handed down equal DATA */
static bool handed_at(const struct cc_rec *r, long long pos, const char *data,
		      long long len)
{
	if (r->buf)
		return !memcmp((const char *)r->buf + pos, data, len);
	for (int i = 0; i < r->iovcnt && len > 0; i++) {
		long long il = r->iov[i].iov_len;
		size_t n;

		if (pos >= il) {
			pos -= il;
			continue;
		}
		n = il - pos < len ? il - pos : len;
		if (memcmp((const char *)r->iov[i].iov_base + pos, data, n))
			return false;
		pos = 0;
		data += n;
		len -= n;
	}
	return len == 0;
}

static bool handed_down(const struct cc_rec *r, const char *data, long long len)
{
	return handed_at(r, 0, data, len);
}

/*
 * A range of more than STREAM_MIN bytes, read back, checked against what
 * the call handed down and stored a chunk at a time. False: the bytes
 * differ, or cannot be read (the caller takes the file whole).
 */
static bool store_range_stream(const struct cc_rec *r, int fd, long long off,
			       long long len, char hex[17])
{
	char tmp[CC_PATH_MAX], *buf = malloc(CHUNK);
	struct cc_hasher h;
	long long pos = 0;
	bool ok = false;
	int out = -1;

	if (!buf)
		return false;
	snprintf(tmp, sizeof(tmp), "%s/.stream.%ld", cc.snapdir,
		 (long)syscall(SYS_gettid));
	out = cc_sys_open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0) {
		store_failed("open", tmp, errno);
		goto out;
	}
	cc_hash_init(&h);
	while (pos < len) {
		long n = pread_some(fd, buf, len - pos < CHUNK ? len - pos : CHUNK,
				    off + pos);

		if (n <= 0 || !handed_at(r, pos, buf, n))
			goto out;
		charge(n);
		cc_hash_feed(&h, buf, n);
		if (pwrite_all(out, buf, n, pos) < 0) {
			store_failed("write", tmp, errno);
			goto out;
		}
		pos += n;
	}
	cc_sys_close(out);
	out = -1;
	ok = place_blob(tmp, cc_hash_end(&h), hex) == 0;
out:
	if (out >= 0) {
		cc_sys_close(out);
		syscall(SYS_unlinkat, AT_FDCWD, tmp, 0);
	}
	free(buf);
	return ok;
}

/*
 * "1240":{"size":12289,"off":4096,"len":4096,"hash":"..."} for a write
 * that put LEN=ret bytes at OFF: after the call the file is SIZE bytes and
 * [off, off+len) holds the blob; every other byte is what the last snapshot
 * of the inode showed, cut or zero-extended to SIZE. Taken after the record's
 * seq, like any snapshot, so it includes every call with a lower seq.
 *
 * False means "take a whole snapshot": the inode may change unseen
 * (tainted), the explorer's last content of it may not be ours
 * (known_current), or the bytes read back are not the ones the call was
 * handed (another writer got in between, or off is wrong).
 */
static bool snap_range(struct sb *sb, const struct cc_rec *r, const struct stat *st,
		       bool *first)
{
	long long off = r->off, len = r->ret, got;
	char hex[17], small[CC_INLINE_MAX], *data = NULL;
	bool ok = false;

	if (!r->has_st || !r->off_exact || !r->has_off || off < 0 || len <= 0 ||
	    r->snap_fd < 0 || tainted(r->st.st_dev, r->st.st_ino) ||
	    !known_current(&r->st))
		return false;
	if (st->st_dev != r->st.st_dev || st->st_ino != r->st.st_ino ||
	    off + len > st->st_size)
		return false;
	/* the harness replays the file whole, whatever the range */
	check_size(r->path, st->st_size);
	if (len > STREAM_MIN) {
		if (!store_range_stream(r, r->snap_fd, off, len, hex))
			return false;
	} else {
		data = read_at(r->snap_fd, off, len, &got, small, sizeof(small));
		if (!data || got != len || !handed_down(r, data, len))
			goto out;
		/* small: the bytes go in the line, as hex; a file of their
		 * own would cost more than the write (create, write, rename) */
		if (len > CC_INLINE_MAX && store_blob(data, len, hex) < 0)
			goto out;
	}
	sb_file_head(sb, first, st->st_ino, st->st_size);
	sb_lit(sb, ",\"off\":");
	sb_i64(sb, off);
	sb_lit(sb, ",\"len\":");
	sb_i64(sb, len);
	if (len <= CC_INLINE_MAX) {
		sb_lit(sb, ",\"data\":\"");
		sb_hex(sb, data, len);
	} else {
		sb_lit(sb, ",\"hash\":\"");
		sb_add(sb, hex, 16);
	}
	sb_lit(sb, "\"}");
	known_set(st);
	ok = true;
out:
	if (data && data != small)
		free(data);
	return ok;
}

/*
 * The names under WATCH. A snapshot of names is a directory's listing,
 * keyed by the directory's inode: "dirs":{"1300":{"target":1234,
 * "sub":{"d":1301},"ln":{"l":"target"}}} -- a regular file as its inode,
 * a directory as {"d":inode}, a symbolic link as {"l":what it holds};
 * anything else (a fifo, a socket, a device) is not listed. A call that
 * changes names lists only the directories it changed (cc_rec.snap), so a
 * program making thousands of files in a tree pays for one directory per
 * call, not for the tree; the init record, sync and syncfs list the
 * whole tree, and give the content of every regular file in it.
 */
#define TREE_DEPTH 64		/* directories deeper than this are not walked */

/* the inodes a whole-tree walk has given content for: a file with several
 * names is one snap.files entry */
struct inoset {
	uint64_t *slot;		/* open addressing; 0 = empty (no inode is 0) */
	size_t cap, nr;
};

static bool inoset_add(struct inoset *s, uint64_t ino)
{
	size_t i;

	if (!ino)
		return true;
	if (2 * (s->nr + 1) > s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 256;
		uint64_t *slot = calloc(cap, sizeof(*slot));

		if (!slot)
			return true;	/* no memory: at worst an entry twice */
		for (size_t j = 0; j < s->cap; j++) {
			if (!s->slot[j])
				continue;
			for (i = s->slot[j] % cap; slot[i]; i = (i + 1) % cap)
				;
			slot[i] = s->slot[j];
		}
		free(s->slot);
		s->slot = slot;
		s->cap = cap;
	}
	for (i = ino % s->cap; s->slot[i]; i = (i + 1) % s->cap)
		if (s->slot[i] == ino)
			return false;
	s->slot[i] = ino;
	s->nr++;
	return true;
}

struct dent {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/* the d_type of NAME in DFD, asked of the inode when the listing does not say */
static int dent_type(int dfd, const struct dent *d)
{
	struct stat st;

	if (d->d_type != DT_UNKNOWN)
		return d->d_type;
	if (syscall(SYS_newfstatat, dfd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return DT_UNKNOWN;
	if (S_ISREG(st.st_mode))
		return DT_REG;
	if (S_ISDIR(st.st_mode))
		return DT_DIR;
	if (S_ISLNK(st.st_mode))
		return DT_LNK;
	return DT_UNKNOWN;
}

/*
 * Call FN for each entry of the directory open at DFD but "." and ".."
 * (that it lists as a regular file, a directory or a symbolic link).
 */
static void each_entry(int dfd, void (*fn)(int dfd, const struct dent *d, int type, void *arg),
		       void *arg)
{
	/* on the heap: a walk goes TREE_DEPTH directories deep, and the
	 * program's thread may have a small stack */
	enum { DENTS = 8192 };
	char *buf = malloc(DENTS);

	if (!buf)
		return;
	for (;;) {
		long n = syscall(SYS_getdents64, dfd, buf, DENTS);

		if (n <= 0)
			break;
		for (long off = 0; off < n;) {
			const struct dent *d = (const void *)(buf + off);
			int type;

			off += d->d_reclen;
			if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
				continue;
			type = dent_type(dfd, d);
			if (type == DT_REG || type == DT_DIR || type == DT_LNK)
				fn(dfd, d, type, arg);
		}
	}
	free(buf);
}

struct listing {
	struct sb *sb;
	bool first;
};

static void list_one(int dfd, const struct dent *d, int type, void *arg)
{
	struct listing *l = arg;
	char target[CC_PATH_MAX];
	long n;

	if (type == DT_LNK) {
		n = syscall(SYS_readlinkat, dfd, d->d_name, target, sizeof(target) - 1);
		if (n < 0)
			return;
		target[n] = '\0';
	}
	if (!l->first)
		sb_lit(l->sb, ",");
	l->first = false;
	sb_quote(l->sb, d->d_name);
	if (type == DT_REG) {
		sb_lit(l->sb, ":");
		sb_u64(l->sb, d->d_ino);
	} else if (type == DT_DIR) {
		sb_lit(l->sb, ":{\"d\":");
		sb_u64(l->sb, d->d_ino);
		sb_lit(l->sb, "}");
	} else {
		sb_lit(l->sb, ":{\"l\":");
		sb_quote(l->sb, target);
		sb_lit(l->sb, "}");
	}
}

/* "1300":{...} for the directory open at DFD; FIRST: no comma before */
static void sb_listing(struct sb *sb, int dfd, uint64_t dino, bool *first)
{
	struct listing l = { sb, true };

	if (!*first)
		sb_lit(sb, ",");
	*first = false;
	sb_lit(sb, "\"");
	sb_u64(sb, dino);
	sb_lit(sb, "\":{");
	each_entry(dfd, list_one, &l);
	sb_lit(sb, "}");
}

/* what a walk of a tree writes, and where it has been */
struct walk {
	struct sb *sb;
	bool files;		/* write files' contents, not listings */
	bool *first;
	struct inoset seen;	/* files: the inodes given; listings: the directories */
	int depth;
};

static void walk_dir(struct walk *w, int dfd, uint64_t dino);

static void walk_one(int dfd, const struct dent *d, int type, void *arg)
{
	struct walk *w = arg;
	struct stat st;
	int fd;

	if (type == DT_DIR) {
		if (w->depth >= TREE_DEPTH)
			return;
		fd = cc_open_read(dfd, d->d_name, O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return;
		if (cc_sys_fstat(fd, &st) == 0) {
			w->depth++;
			walk_dir(w, fd, st.st_ino);
			w->depth--;
		}
		cc_sys_close(fd);
		return;
	}
	if (!w->files || type != DT_REG || !inoset_add(&w->seen, d->d_ino))
		return;
	fd = cc_open_read(dfd, d->d_name, O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return;
	if (cc_sys_fstat(fd, &st) == 0)
		snap_file_fd(w->sb, fd, &st, w->first, d->d_name);
	cc_sys_close(fd);
}

/*
 * The listings (or with W->files the files' contents) of the directory
 * open at DFD and of every directory under it. A listing is written
 * before the walk goes down: the object of listings is flat. getdents
 * keeps its place in DFD, so walk_one can go down in the middle of it.
 */
static void walk_dir(struct walk *w, int dfd, uint64_t dino)
{
	if (!w->files) {
		/* a directory reached twice (a bind mount) is listed once */
		if (!inoset_add(&w->seen, dino))
			return;
		sb_listing(w->sb, dfd, dino, w->first);
		syscall(SYS_lseek, dfd, 0L, SEEK_SET);
	}
	each_entry(dfd, walk_one, w);
}

/* the tree under the directory at PATH: its listings, or its files */
static void walk_tree(struct sb *sb, const char *path, bool files, bool *first)
{
	struct walk w = { sb, files, first, { NULL, 0, 0 }, 0 };
	struct stat st;
	int dfd = cc_open_read(AT_FDCWD, path, O_DIRECTORY | O_CLOEXEC);

	if (dfd < 0)
		return;
	if (cc_sys_fstat(dfd, &st) == 0)
		walk_dir(&w, dfd, st.st_ino);
	cc_sys_close(dfd);
	free(w.seen.slot);
}

/* the listing of the directory at PATH, unless its inode is in DONE (of
 * NDONE, at most 3) */
static void snap_listing(struct sb *sb, const char *path, uint64_t *done, int *ndone,
			 bool *first)
{
	struct stat st;
	int dfd = cc_open_read(AT_FDCWD, path, O_DIRECTORY | O_CLOEXEC);

	if (dfd < 0)
		return;
	if (cc_sys_fstat(dfd, &st) == 0) {
		for (int i = 0; i < *ndone; i++)
			if (done[i] == st.st_ino)
				goto out;
		done[(*ndone)++] = st.st_ino;
		sb_listing(sb, dfd, st.st_ino, first);
	}
out:
	cc_sys_close(dfd);
}

/* PATH's directory (all of it but the last name) into BUF */
static void parent_of(const char *path, char *buf, size_t size)
{
	const char *slash = strrchr(path, '/');
	size_t n = slash ? (size_t)(slash - path) : 0;

	if (n >= size)
		n = size - 1;
	memcpy(buf, path, n);
	buf[n ? n : 0] = '\0';
	if (!n && slash)
		snprintf(buf, size, "/");
}

/* the whole tree: every listing and every regular file's content */
static void snap_all(struct sb *sb)
{
	bool first = true;

	sb_lit(sb, "\"dirs\":{");
	walk_tree(sb, cc.watch, false, &first);
	sb_lit(sb, "},\"files\":{");
	first = true;
	walk_tree(sb, cc.watch, true, &first);
	sb_lit(sb, "}");
}

static uint64_t next_seq(void)
{
	return __atomic_fetch_add(&cc.sh->seq, 1, __ATOMIC_SEQ_CST);
}

/*
 * The trace stays open, one descriptor per process, instead of an open and
 * a close per line. The program owns the descriptor table, though: it may
 * close every descriptor it did not open (closefrom, close_range), or dup2()
 * its own file onto our number. So the descriptor sits high, above where
 * open() hands out numbers, and before each line an fstat checks that it
 * is still the trace (same st_dev and st_ino); if not, we open it again and
 * never touch that number, which is the program's now. A forked child
 * keeps writing to the inherited one: O_APPEND keeps the lines of a tree
 * whole. When no high number can be had (a low RLIMIT_NOFILE), or another
 * thread holds the descriptor, the line goes the old way, open and close.
 */
static int trace_busy;		/* try-lock of the three below */
static int trace_fd = -1;	/* our descriptor of the trace, -1 = none */
static uint64_t trace_dev, trace_ino;

/* A descriptor of the trace: for the shared mapping (CRASHCHECK_SHARED)
 * read and write, and no O_APPEND, on which pwrite would append; else
 * for appending lines. */
static int trace_open(void)
{
	return cc_sys_open(cc.trace, (cc.sh_file ? O_RDWR : O_WRONLY | O_APPEND) |
			   O_CREAT | O_CLOEXEC, 0644);
}

/*
 * The lowest number our descriptors (the trace, the read-back ones) may
 * take, 0 = keep none: near the limit, where open() gets only when the
 * program holds almost every descriptor it may, but never so high that the
 * kernel grows a huge descriptor table. Read once per process.
 */
static int fd_floor = -1;	/* trace_fd_floor's, once read */

static int trace_fd_floor(void)
{
	struct { uint64_t cur, max; } lim;
	int f = __atomic_load_n(&fd_floor, __ATOMIC_RELAXED);

	if (f >= 0)
		return f;
	if (syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, NULL, &lim) < 0 || lim.cur < 128)
		f = 0;
	else
		f = (lim.cur > 1024 ? 1024 : (int)lim.cur) - 64;
	__atomic_store_n(&fd_floor, f, __ATOMIC_RELAXED);
	return f;
}

static bool trace_fd_current(void)
{
	struct stat st;

	return trace_fd >= 0 && cc_sys_fstat(trace_fd, &st) == 0 &&
	       st.st_dev == trace_dev && st.st_ino == trace_ino;
}

static void trace_fd_reopen(void)
{
	struct stat st;
	int fd, floor = trace_fd_floor(), hi;

	trace_fd = -1;	/* gone or the program's: never closed by us */
	if (!floor)
		return;
	fd = trace_open();
	if (fd < 0)
		return;
	hi = syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, floor);
	cc_sys_close(fd);
	if (hi < 0)
		return;
	if (cc_sys_fstat(hi, &st) < 0) {
		cc_sys_close(hi);
		return;
	}
	trace_fd = hi;
	trace_dev = st.st_dev;
	trace_ino = st.st_ino;
}

/*
 * With CRASHCHECK_SHARED, the process tree shares a mapping of counters
 * (cc.sh), and the trace is written the way a shared mapping allows: a
 * line's place is handed out by one atomic add on cc.sh->trace_end, and
 * the line is copied there through a MAP_SHARED mapping of the trace,
 * with no system call (the page cache keeps it when the process dies).
 * The file grows by fallocate(2), which never shrinks it, in steps that
 * double, so it ends in zeros past the last line. fallocate also
 * allocates the pages: a full file system shows as a refused fallocate
 * here, not as a SIGBUS in the program when a page of a sparse file
 * cannot be had. A line that cannot go through the mapping (another
 * thread holds it, fallocate refused, no high descriptor) is pwrite(2)n
 * at its place instead.
 *
 * A process can die between taking a place and filling it, or half-way
 * through filling it (SIGKILL from anyone, at any instruction): the
 * place then holds zeros, or zeros and part of the line. The copy puts
 * the line's first byte last, so a line whose '{' is there is whole, and
 * the reader (harness/engine/trace.py, clean) keeps of a text line holding a
 * zero byte only the record that starts after its last zero.
 * Without CRASHCHECK_SHARED each process's counters are its own, so
 * lines are appended (O_APPEND), as before.
 */
#define TRACE_MAP_MIN 4096
static char *tmap;		/* our mapping of the trace, NULL = none */
static uint64_t tmap_len;	/* its length; the file is at least as long */
static bool tmap_off;		/* mapping refused once: pwrite from then on */

/* Map the trace to at least END bytes; trace_busy held. */
static bool trace_map(uint64_t end)
{
	uint64_t want = TRACE_MAP_MIN;
	void *p;

	if (tmap_off || trace_fd < 0)
		return false;
	while (want < end || want < 2 * tmap_len)
		want *= 2;
	if (syscall(SYS_fallocate, trace_fd, 0, 0L, (long)want) < 0) {
		tmap_off = true;
		return false;
	}
	if (tmap)
		p = (void *)syscall(SYS_mremap, tmap, tmap_len, want, MREMAP_MAYMOVE);
	else
		p = (void *)syscall(SYS_mmap, NULL, want, PROT_READ | PROT_WRITE,
				    MAP_SHARED, trace_fd, 0L);
	if (p == MAP_FAILED) {
		tmap_off = true;
		return false;
	}
	tmap = p;
	tmap_len = want;
	return true;
}

static bool trace_pwrite(int fd, uint64_t off, const char *buf, size_t len)
{
	while (len) {
		long n = syscall(SYS_pwrite64, fd, buf, len, (long)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		buf += n;
		off += n;
		len -= n;
	}
	return true;
}

/* LEN bytes of BUF at OFF of the trace, through the mapping where it
 * can be had; trace_busy held */
static bool trace_put(uint64_t off, const char *buf, size_t len)
{
	if (off + len > tmap_len) {
		if (!trace_fd_current())
			trace_fd_reopen();
		if (!trace_map(off + len))
			return trace_fd >= 0 && trace_pwrite(trace_fd, off, buf, len);
	}
	memcpy(tmap + off + 1, buf + 1, len - 1);
	__atomic_store_n(tmap + off, buf[0], __ATOMIC_RELEASE);
	return true;
}

/* the line SB through FD: at its place OFF with CRASHCHECK_SHARED, else
 * appended */
static bool trace_write(int fd, uint64_t off, const struct sb *sb)
{
	return cc.sh_file ? trace_pwrite(fd, off, sb->buf, sb->len) :
			    cc_sys_write_all(fd, sb->buf, sb->len) == 0;
}

static int emit_warned;	/* emit() said once that a line was lost */

static void emit(struct sb *sb)
{
	bool done = false;
	uint64_t off = 0;
	int fd;

	sb_lit(sb, "\n");
	if (sb->oom) {
		if (!__atomic_exchange_n(&emit_warned, 1, __ATOMIC_SEQ_CST))
			cc_warn("trace line dropped: out of memory");
		goto out;
	}
	if (cc.sh_file)
		off = __atomic_fetch_add(&cc.sh->trace_end, sb->len, __ATOMIC_SEQ_CST);
	if (try_lock(&trace_busy)) {
		if (cc.sh_file) {
			done = trace_put(off, sb->buf, sb->len);
		} else {
			if (!trace_fd_current())
				trace_fd_reopen();
			done = trace_fd >= 0 && trace_write(trace_fd, off, sb);
		}
		unlock(&trace_busy);
	}
	if (!done) {
		fd = trace_open();
		if (fd < 0 || !trace_write(fd, off, sb)) {
			if (!__atomic_exchange_n(&emit_warned, 1, __ATOMIC_SEQ_CST))
				cc_warn("write trace '%s': %s", cc.trace, strerror(errno));
		}
		if (fd >= 0)
			cc_sys_close(fd);
	}
out:
	sb_release(sb);
}

/*
 * The process id every line carries. getpid(2) is a system call since glibc
 * 2.25 stopped caching it, one per line; the id only changes in the child
 * of fork, whose handler below asks again. A child made without fork's
 * handlers (vfork, _Fork, a raw clone) writes its lines under its parent's
 * id until it execs: the id only labels lines, nothing is matched on it.
 * kill_self() asks the kernel, never this.
 */
static pid_t trace_pid;

void cc_after_fork_child(void)
{
	trace_pid = syscall(SYS_getpid);
	/* the child has one thread: a lock held by another one is free */
	trace_busy = 0;
	known_busy = 0;
	for (int i = 0; i < FD_CACHE_NR; i++)
		fd_cache[i].busy = 0;
	cc_callsite_after_fork();
}

void cc_record_reset(void)
{
	if (trace_fd >= 0)
		cc_sys_close(trace_fd);
	trace_fd = -1;
	trace_dev = trace_ino = 0;
	if (tmap)
		syscall(SYS_munmap, tmap, (long)tmap_len);
	tmap = NULL;
	tmap_len = 0;
	tmap_off = false;
	trace_busy = known_busy = 0;
	known_next = 0;
	memset(known, 0, sizeof(known));
	for (int i = 0; i < FD_CACHE_NR; i++) {
		fd_cache[i].busy = 0;
		fd_cache[i].ok = false;
		drop_rdfd(&fd_cache[i]);
	}
	memset(stored, 0, sizeof(stored));
	noted = false;
	emit_warned = 0;
	trace_pid = 0;
}

void cc_trace_pid(pid_t pid)
{
	trace_pid = pid;
}

void cc_trace_init(void)
{
	char exe[CC_PATH_MAX];
	long n;

	trace_pid = syscall(SYS_getpid);
	if (!cc.trace)
		return;
	n = syscall(SYS_readlinkat, AT_FDCWD, "/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	cc_trace_start(trace_pid, syscall(SYS_getppid), exe);
}

void cc_trace_start(pid_t pid, pid_t ppid, const char *exe)
{
	struct sb sb;
	uint64_t seq;
	bool first;

	if (!cc.trace)
		return;
	sb_init(&sb);
	first = __atomic_fetch_add(&cc.sh->inits, 1, __ATOMIC_SEQ_CST) == 0;
	if (first && cc.sh_file) {
		/* a trace that holds lines already is added to, as O_APPEND did */
		long long size;
		uint64_t zero = 0;

		if (cc_sys_stat_ino(cc.trace, NULL, NULL, &size) == 0 && size > 0)
			__atomic_compare_exchange_n(&cc.sh->trace_end, &zero,
						    (uint64_t)size, false,
						    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	}
	seq = next_seq();
	sb_lit(&sb, "{\"ev\":\"init\",\"seq\":");
	sb_u64(&sb, seq);
	sb_lit(&sb, ",\"pid\":");
	sb_i64(&sb, pid);
	sb_lit(&sb, ",\"ppid\":");
	sb_i64(&sb, ppid);
	sb_lit(&sb, ",\"exe\":");
	sb_quote(&sb, exe);
	sb_lit(&sb, ",\"plan\":");
	sb_quote(&sb, cc.plan_text ? cc.plan_text : "");
	sb_lit(&sb, ",\"watch\":");
	if (cc.watch)
		sb_quote(&sb, cc.watch);
	else
		sb_lit(&sb, "null");
	if (cc.backend) {
		sb_lit(&sb, ",\"backend\":");
		sb_quote(&sb, cc.backend);
	}
	/*
	 * Only the first process's listing is the durable starting state the
	 * harness set up; an exec'd child starts somewhere in the middle.
	 */
	if (cc.recorder && first) {
		uint64_t root;

		sb_lit(&sb, ",\"snap\":{");
		if (cc_sys_stat_ino(cc.watch, &root, NULL, NULL) == 0) {
			sb_lit(&sb, "\"root\":");
			sb_u64(&sb, root);
			sb_lit(&sb, ",");
		}
		snap_all(&sb);
		sb_lit(&sb, "}");
	}
	sb_lit(&sb, "}");
	emit(&sb);
}

/* ---- the record of a call, shared by both backends -------------------- */

void cc_rec_init(struct cc_rec *r, int call)
{
	r->call = call;
	r->n = 0;
	r->rule = -1;
	r->fired = false;
	r->fd = -1;
	r->path[0] = r->path2[0] = '\0';
	r->has_ino = r->is_dir = r->is_reg = false;
	r->has_off = r->has_len = false;
	r->off = r->len = 0;
	r->oflags = r->msflags = r->mapflags = -1;
	r->renflags = 0;
	r->rwflags = 0;
	r->ret = 0;
	r->err = 0;
	r->snap = 0;
	r->snap_fd = -1;
	r->snap_fd_borrowed = r->snap_fd_kept = false;
	r->dev = 0;
	r->has_st = false;
	r->fdflags = -1;
	r->buf = NULL;
	r->iov = NULL;
	r->iovcnt = 0;
	r->off_exact = false;
	r->pos = -1;
	r->tofree = NULL;
	r->at = NULL;
	r->frames = NULL;
	r->nframes = 0;
	r->maplen = 0;
	/* the seq its line would get is at least this one: a call seen
	 * before CRASHCHECK_TRACE_FROM is one the caller does not want */
	r->lite = cc.trace_from &&
		  __atomic_load_n(&cc.sh->seq, __ATOMIC_RELAXED) < cc.trace_from;
	r->thin = false;
}

/*
 * Whether the write R describes (after pre(): its rule decided) is recorded
 * thin under CRASHCHECK_TRACE_FULL: outside the full seqs, chosen by no
 * rule, to a regular file under WATCH whose descriptor has none of O_SYNC,
 * O_DSYNC and O_DIRECT (such a write is durable or on the device when it
 * returns, so what it wrote matters to any crash after it). Its line keeps
 * the file (fstat), the flags (F_GETFL) and what the call returned, and
 * says "thin": no offset and no snapshot, the three system calls of a
 * write's range snapshot (lseek, fstat after, the read-back) left out. The
 * sweep runs a case that way where it expects the program to go on to an
 * fsync that snapshots the file whole, which makes those writes moot; a
 * thin line it would need to read sends the case to a full run.
 */
bool cc_thin_write(struct cc_rec *r)
{
	uint64_t s;

	if (!cc.thin_on)
		return false;
	/* the seq its line gets is at least this one (as for a lite call):
	 * one above HI surely is outside; one below LO may not be where
	 * other processes make calls, and its line says thin */
	s = __atomic_load_n(&cc.sh->seq, __ATOMIC_RELAXED);
	r->thin = (s < cc.full_lo || s > cc.full_hi) && r->rule < 0 &&
		  cc.trace && !r->lite && !cc.snap_full && r->has_st && r->is_reg &&
		  r->fdflags >= 0 &&
		  !(r->fdflags & (O_SYNC | O_DSYNC | O_DIRECT)) &&
		  !(r->rwflags & (RWF_SYNC | RWF_DSYNC)) &&
		  cc_under_watch(r->path);
	return r->thin;
}

/* "NAME" in a list of flags (a comma before all but the first) */
static void sb_flag(struct sb *sb, const char *name, bool *first)
{
	if (!*first)
		sb_lit(sb, ",");
	*first = false;
	sb_lit(sb, "\"");
	sb_str(sb, name);
	sb_lit(sb, "\"");
}

static void add_oflags(struct sb *sb, int fl, int rwf)
{
	static const struct { int bit; const char *name; } names[] = {
		{ O_CREAT, "O_CREAT" }, { O_EXCL, "O_EXCL" },
		{ O_TRUNC, "O_TRUNC" }, { O_APPEND, "O_APPEND" },
		{ O_DIRECT, "O_DIRECT" },
	};
	bool first = true;

	sb_lit(sb, ",\"flags\":[");
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (fl & names[i].bit)
			sb_flag(sb, names[i].name, &first);
	}
	/* O_TMPFILE is O_DIRECTORY plus a bit of its own: a file with no
	 * name until linkat gives it one */
	if ((fl & O_TMPFILE) == O_TMPFILE)
		sb_flag(sb, "O_TMPFILE", &first);
	/* O_SYNC is O_DSYNC plus a bit of its own */
	if ((fl & O_SYNC) == O_SYNC)
		sb_flag(sb, "O_SYNC", &first);
	else if (fl & O_DSYNC)
		sb_flag(sb, "O_DSYNC", &first);
	/* pwritev2's own, for this one write */
	if (rwf & RWF_DSYNC)
		sb_flag(sb, "RWF_DSYNC", &first);
	if (rwf & RWF_SYNC)
		sb_flag(sb, "RWF_SYNC", &first);
	if (rwf & RWF_APPEND)
		sb_flag(sb, "RWF_APPEND", &first);
	sb_lit(sb, "]");
}

static void add_flag_list(struct sb *sb, const char *const *names, const int *bits,
			  size_t nr, int fl)
{
	bool first = true;

	sb_lit(sb, ",\"flags\":[");
	for (size_t i = 0; i < nr; i++) {
		if ((fl & bits[i]) == bits[i])
			sb_flag(sb, names[i], &first);
	}
	sb_lit(sb, "]");
}

/*
 * How a call or crash line starts: {"ev":"EV","seq":N,"pid":P,"call":"C","n":N
 * (the harness reads these first fields by their place, trace.Lazy). The
 * seq is taken here, before any snapshot the line carries.
 */
static void sb_head_seq(struct sb *sb, const char *ev, const struct cc_rec *r,
			uint64_t seq)
{
	sb_lit(sb, "{\"ev\":\"");
	sb_str(sb, ev);
	sb_lit(sb, "\",\"seq\":");
	sb_u64(sb, seq);
	sb_lit(sb, ",\"pid\":");
	sb_i64(sb, trace_pid);
	sb_lit(sb, ",\"call\":\"");
	sb_str(sb, call_table[r->call].name);
	sb_lit(sb, "\",\"n\":");
	sb_u64(sb, r->n);
	if (r->at) {
		char site[CC_PATH_MAX + 32];

		if (cc_callsite(r->at, site, sizeof(site))) {
			sb_lit(sb, ",\"at\":");
			sb_quote(sb, site);
		}
	}
	for (int i = 0; i < r->nframes; i++) {
		const struct cc_frame *f = &r->frames[i];
		char site[CC_PATH_MAX + 32];

		snprintf(site, sizeof(site), "%s+0x%llx", f->obj ? f->obj : "",
			 (unsigned long long)f->off);
		if (i == 0)
			sb_lit(sb, ",\"at\":");
		else if (i == 1)
			sb_lit(sb, ",\"up\":[");
		else
			sb_lit(sb, ",");
		sb_quote(sb, site);
	}
	if (r->nframes > 1)
		sb_lit(sb, "]");
}

static void sb_head(struct sb *sb, const char *ev, const struct cc_rec *r)
{
	sb_head_seq(sb, ev, r, next_seq());
}

/*
 * What a call changed: the listings of the directories it names (the one
 * holding path, the one holding path2, path itself; a directory moved in
 * from outside WATCH with all under it) and the file it touched.
 */
static void snap_some(struct sb *sb, struct cc_rec *r)
{
	bool first = true, ffirst = true, any = false;
	char dir[CC_PATH_MAX];
	uint64_t done[3];
	int ndone = 0;
	struct stat st;

	if (r->snap & (SNAP_DIR | SNAP_DIR2 | SNAP_SELF | SNAP_TREE2)) {
		sb_lit(sb, "\"dirs\":{");
		if (r->snap & SNAP_DIR) {
			parent_of(r->path, dir, sizeof(dir));
			snap_listing(sb, dir, done, &ndone, &first);
		}
		if (r->snap & SNAP_DIR2) {
			parent_of(r->path2, dir, sizeof(dir));
			snap_listing(sb, dir, done, &ndone, &first);
		}
		if (r->snap & SNAP_SELF)
			snap_listing(sb, r->path, done, &ndone, &first);
		if (r->snap & SNAP_TREE2)
			walk_tree(sb, r->path2, false, &first);
		sb_lit(sb, "}");
		any = true;
	}
	if (!(r->snap & SNAP_TREE2) && !((r->snap & SNAP_FILE) && r->snap_fd >= 0))
		return;
	if (any)
		sb_lit(sb, ",");
	sb_lit(sb, "\"files\":{");
	if ((r->snap & SNAP_FILE) && r->snap_fd >= 0 && snap_fd_stat(r, &st) &&
	    (!(r->snap & SNAP_RANGE) || cc.snap_full || !snap_range(sb, r, &st, &ffirst)))
		snap_file_fd(sb, r->snap_fd, &st, &ffirst, r->path);
	if (r->snap & SNAP_TREE2)
		walk_tree(sb, r->path2, true, &ffirst);
	sb_lit(sb, "}");
}

/*
 * An EINTR the plan injects stands for a signal that interrupted the call,
 * and a signal interrupts a call with EINTR only when its handler was
 * installed without SA_RESTART (Linux interrupts no write to a local
 * regular file in any case). The line of such a fault lists the signals
 * that could have done it, "intr":[14] ([] when none), so that the harness
 * can tell a fault that cannot happen where the program ran
 * (crash-model.md, "Severity"). The preload reads the dispositions in the
 * program; the supervisor cannot read another process's handler flags,
 * and lists every signal it catches (/proc/PID/status, SigCgt), as if none
 * had SA_RESTART. Signals 32 and 33 are glibc's own (thread cancellation,
 * setuid across threads), sent only by the calls that need them.
 */
static bool intr_signal(int sig)
{
	return sig != SIGKILL && sig != SIGSTOP && sig != 32 && sig != 33;
}

static void add_intr(struct sb *sb)
{
	uint64_t caught = 0;
	bool first = true;
	int sig;

	if (cc.backend) {
		char path[64], buf[4096];
		const char *at;
		long fd, n;

		snprintf(path, sizeof(path), "/proc/%d/status", (int)trace_pid);
		fd = cc_sys_open(path, O_RDONLY | O_CLOEXEC, 0);
		n = fd < 0 ? -1 : syscall(SYS_read, fd, buf, sizeof(buf) - 1);
		if (fd >= 0)
			cc_sys_close(fd);
		if (n <= 0)
			return;		/* not known: no field, as before */
		buf[n] = '\0';
		at = strstr(buf, "\nSigCgt:");
		if (!at)
			return;
		caught = strtoull(at + 9, NULL, 16);
	} else {
		/* the kernel's struct sigaction on x86-64 and aarch64 */
		struct { unsigned long handler, flags, restorer, mask; } ksa;

		for (sig = 1; sig <= 64; sig++)
			if (syscall(SYS_rt_sigaction, sig, NULL, &ksa, 8) == 0 &&
			    ksa.handler != (unsigned long)SIG_DFL &&
			    ksa.handler != (unsigned long)SIG_IGN &&
			    !(ksa.flags & SA_RESTART))
				caught |= 1ULL << (sig - 1);
	}
	sb_lit(sb, ",\"intr\":[");
	for (sig = 1; sig <= 64; sig++) {
		if (!(caught & (1ULL << (sig - 1))) || !intr_signal(sig))
			continue;
		if (!first)
			sb_lit(sb, ",");
		sb_i64(sb, sig);
		first = false;
	}
	sb_lit(sb, "]");
}

/*
 * The call's line. A lite call (before CRASHCHECK_TRACE_FROM) takes its
 * seq, so that the lines after it are numbered as in a whole trace, and
 * has a line only when a rule fired on it or another process took the
 * seqs up to the start meanwhile: with the fields it has (no path, no
 * offset), for the faulted calls are all in the trace and a line once
 * the trace has started is never missing.
 */
void cc_trace_call(struct cc_rec *r)
{
	struct sb sb;
	uint64_t seq;

	if (r->err)
		cc_note_failure(r, r->err);
	if (!cc.trace)
		goto out;
	seq = next_seq();
	if (r->lite && !r->fired && seq < cc.trace_from)
		goto out;
	sb_init(&sb);
	sb_head_seq(&sb, "call", r, seq);
	if (r->fd >= 0) {
		sb_lit(&sb, ",\"fd\":");
		sb_i64(&sb, r->fd);
	}
	if (r->path[0]) {
		sb_lit(&sb, ",\"path\":");
		sb_quote(&sb, r->path);
	}
	if (r->path2[0]) {
		sb_lit(&sb, ",\"path2\":");
		sb_quote(&sb, r->path2);
	}
	if (r->has_ino) {
		sb_lit(&sb, ",\"ino\":");
		sb_u64(&sb, r->ino);
	}
	if (r->is_dir)
		sb_lit(&sb, ",\"dir\":true");
	if (r->has_off) {
		sb_lit(&sb, ",\"off\":");
		sb_i64(&sb, r->off);
	}
	if (r->has_len) {
		sb_lit(&sb, ",\"len\":");
		sb_i64(&sb, r->len);
	}
	if (r->oflags >= 0)
		add_oflags(&sb, r->oflags, r->rwflags);
	if (r->msflags >= 0) {
		static const char *const n[] = { "MS_SYNC", "MS_ASYNC", "MS_INVALIDATE" };
		static const int b[] = { MS_SYNC, MS_ASYNC, MS_INVALIDATE };
		add_flag_list(&sb, n, b, 3, r->msflags);
	}
	if (r->mapflags >= 0) {
		static const char *const n[] = { "MAP_SHARED", "MAP_PRIVATE" };
		static const int b[] = { MAP_SHARED, MAP_PRIVATE };
		add_flag_list(&sb, n, b, 2, r->mapflags);
	}
	if (r->renflags) {
		static const char *const n[] = { "RENAME_NOREPLACE", "RENAME_EXCHANGE",
						 "RENAME_WHITEOUT" };
		static const int b[] = { 1, 2, 4 };
		add_flag_list(&sb, n, b, 3, r->renflags);
	}
	sb_lit(&sb, ",\"ret\":");
	sb_i64(&sb, r->ret);
	sb_lit(&sb, ",\"errno\":");
	sb_i64(&sb, r->err);
	if (r->thin)
		sb_lit(&sb, ",\"thin\":true");
	if (r->rule >= 0 && r->fired) {
		char act[32];

		plan_action_str(&cc.plan.rules[r->rule], act, sizeof(act));
		sb_lit(&sb, ",\"fault\":{\"rule\":");
		sb_i64(&sb, r->rule);
		sb_lit(&sb, ",\"action\":\"");
		sb_str(&sb, act);
		sb_lit(&sb, "\"}");
		if (cc.plan.rules[r->rule].action == PLAN_ERRNO &&
		    cc.plan.rules[r->rule].err == EINTR)
			add_intr(&sb);
	}

	if (cc.recorder && r->snap) {
		sb_lit(&sb, ",\"snap\":{");
		if (r->snap & SNAP_ALL)
			snap_all(&sb);
		else
			snap_some(&sb, r);
		sb_lit(&sb, "}");
	}
	sb_lit(&sb, "}");
	emit(&sb);
out:
	if (r->snap_fd >= 0 && !r->snap_fd_borrowed)
		cc_sys_close(r->snap_fd);
	r->snap_fd = -1;
}

void cc_trace_crash(const struct cc_rec *r, const char *when)
{
	struct sb sb;

	if (!cc.trace)
		return;
	sb_init(&sb);
	sb_head(&sb, "crash", r);
	sb_lit(&sb, ",\"when\":\"");
	sb_str(&sb, when);
	sb_lit(&sb, "\",\"rule\":");
	sb_i64(&sb, r->rule);
	sb_lit(&sb, "}");
	emit(&sb);
}
