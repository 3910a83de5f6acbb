/*
 * What a trace line's snapshot holds: the content of a file, whole or the
 * range a write wrote when that can be proved enough (the inodes that may
 * change unseen, the inodes this process last snapshotted), and the
 * listings of the directories under WATCH. The blobs go to the store
 * (store.c); the line is trace.c's.
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

#include "rules.h"
#include "record.h"

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

	if (!cc_try_lock(&known_busy))
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
	cc_unlock(&known_busy);
}

static bool known_current(const struct stat *st)
{
	bool ok = false;

	if (!cc_try_lock(&known_busy))
		return false;
	for (int i = 0; i < KNOWN_NR; i++) {
		const struct known_ent *e = &known[i];
		if (e->used && e->dev == st->st_dev && e->ino == st->st_ino) {
			ok = e->size == st->st_size && same_ts(&e->mtim, &st->st_mtim) &&
			     same_ts(&e->ctim, &st->st_ctim);
			break;
		}
	}
	cc_unlock(&known_busy);
	return ok;
}

bool cc_under_watch(const char *path)
{
	return cc.watch && !strncmp(path, cc.watch, cc.watch_len) &&
	       path[cc.watch_len] == '/';
}

/* the rules' (rules/), for both backends */
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
	cc_check_size(name, st->st_size);
	if (st->st_size > STREAM_MIN) {
		rc = cc_store_stream(fd, st->st_size, hex, &got);
	} else {
		data = read_at(fd, 0, st->st_size, &got, NULL, 0);
		if (!data)
			return;
		rc = cc_store_blob(data, got, hex);
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
	if (cc_sys_fstat(r->snap_fd, st) == 0 &&
	    (!r->snap_fd_borrowed || !r->has_st ||
	     (st->st_dev == r->st.st_dev && st->st_ino == r->st.st_ino)))
		return true;
	if (!r->snap_fd_borrowed || !r->has_st)
		return false;
	/* a descriptor not ours to close is not used: another is had, which
	 * the caller closes unless it is borrowed too */
	cc.io->fd_resnap(r);
	return r->snap_fd >= 0 && cc_sys_fstat(r->snap_fd, st) == 0 &&
	       st->st_dev == r->st.st_dev && st->st_ino == r->st.st_ino;
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
		cc_store_failed("open", tmp, errno);
		goto out;
	}
	cc_hash_init(&h);
	while (pos < len) {
		long n = cc_pread_some(fd, buf, len - pos < CHUNK ? len - pos : CHUNK,
				    off + pos);

		if (n <= 0 || !handed_at(r, pos, buf, n))
			goto out;
		cc_charge(n);
		cc_hash_feed(&h, buf, n);
		if (cc_pwrite_all(out, buf, n, pos) < 0) {
			cc_store_failed("write", tmp, errno);
			goto out;
		}
		pos += n;
	}
	cc_sys_close(out);
	out = -1;
	ok = cc_place_blob(tmp, cc_hash_end(&h), hex) == 0;
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
	cc_check_size(r->path, st->st_size);
	if (len > STREAM_MIN) {
		if (!store_range_stream(r, r->snap_fd, off, len, hex))
			return false;
	} else {
		data = read_at(r->snap_fd, off, len, &got, small, sizeof(small));
		if (!data || got != len || !handed_down(r, data, len))
			goto out;
		/* small: the bytes go in the line, as hex; a file of their
		 * own would cost more than the write (create, write, rename) */
		if (len > CC_INLINE_MAX && cc_store_blob(data, len, hex) < 0)
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
void cc_snap_all(struct sb *sb)
{
	bool first = true;

	sb_lit(sb, "\"dirs\":{");
	walk_tree(sb, cc.watch, false, &first);
	sb_lit(sb, "},\"files\":{");
	first = true;
	walk_tree(sb, cc.watch, true, &first);
	sb_lit(sb, "}");
}

/*
 * What a call changed: the listings of the directories it names (the one
 * holding path, the one holding path2, path itself; a directory moved in
 * from outside WATCH with all under it) and the file it touched.
 */
void cc_snap_some(struct sb *sb, struct cc_rec *r)
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

void cc_snap_reset(void)
{
	known_busy = 0;
	known_next = 0;
	memset(known, 0, sizeof(known));
}

/* the child of fork(): a lock another thread held is free */
void cc_snap_after_fork(void)
{
	known_busy = 0;
}
