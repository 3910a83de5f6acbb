/*
 * What each trapped system call means to the supervisor: the file it
 * works on, the fault a plan puts on it, the trace line and snapshots
 * the recorder (faults/record.c, shared with the preload) makes of it.
 *
 * The line of a call is the preload's line of the same call: the same
 * fields, the same snapshots after the same calls, taken by the same
 * code. What differs is where the facts come from: the thread's /proc
 * entries (fd/N for a descriptor's file, fdinfo/N for its position and
 * flags, cwd, maps) and its memory (process_vm_readv), read by the
 * supervisor while the thread is stopped, instead of the program's own
 * fstat, lseek and fcntl.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "sv.h"

const struct sc_info sc_table[SC__COUNT] = {
#define CALL(name, point, faults, cls)
#define ALIAS(name, base)
#define WRAP(...)
#define SYSCALL(sys, call) [SC_##sys] = { #sys, CALL_##call },
#include "../calls.def"
#undef CALL
#undef ALIAS
#undef WRAP
#undef SYSCALL
};

/* the kernel's restart codes: the call was interrupted by a signal */
#define ERESTARTSYS 512
#define ERESTART_RESTARTBLOCK 516

/* at most this many buffers in a vector (UIO_MAXIOV) */
#define SV_IOV_MAX 1024

static bool tracing(const struct cc_rec *r)
{
	return cc.trace && !r->lite;
}

static bool want_path(const struct cc_rec *r)
{
	return tracing(r) || cc.has_glob[r->call];
}

static void set_stat(struct cc_rec *r, const struct stat *st)
{
	r->st = *st;
	r->has_st = true;
	r->has_ino = true;
	r->ino = st->st_ino;
	r->dev = st->st_dev;
	r->is_reg = S_ISREG(st->st_mode);
	r->is_dir = S_ISDIR(st->st_mode);
}

static void stat_fd(struct cc_rec *r, pid_t tid, int fd)
{
	struct stat st;

	if (sv_fd_stat(tid, fd, &st) == 0)
		set_stat(r, &st);
}

static void stat_path(struct cc_rec *r, const char *path)
{
	struct stat st;

	if (path[0] && stat(path, &st) == 0) {
		r->has_ino = true;
		r->ino = st.st_ino;
		r->dev = st.st_dev;
		r->is_reg = S_ISREG(st.st_mode);
		r->is_dir = S_ISDIR(st.st_mode);
	}
}

/*
 * Describe the descriptor a call works on: its file (stat, which a range
 * snapshot is checked against), its path, and with FLAGS its open flags
 * and position (the preload's fstat, readlink, F_GETFL and lseek).
 */
static void use_fd(struct pending *c, pid_t tid, int fd, bool flags)
{
	struct cc_rec *r = &c->r;
	long long pos = -1;
	struct stat st;
	int fl, got;

	r->fd = fd;
	if (fd < 0 || !want_path(r))
		return;
	flags = flags && tracing(r);
	got = sv_fd_facts(c->proc, tid, fd, &st, flags ? &fl : NULL, &pos);
	if (got & SV_GOT_STAT)
		set_stat(r, &st);
	sv_fd_path_cached(c->proc, tid, fd, r->has_st ? &r->st : NULL, r->path,
			  sizeof(r->path));
	if (got & SV_GOT_FLAGS) {
		r->fdflags = fl;
		r->oflags = fl & (O_APPEND | O_DIRECT | O_SYNC | O_DSYNC);
		c->pos = pos;
	}
}

/* the path at ADDR, made absolute against DIRFD, into OUT ("" when it
 * cannot be read) */
static void use_path(struct pending *c, pid_t tid, int dirfd, uint64_t addr,
		     char *out, size_t size)
{
	char path[CC_PATH_MAX];

	out[0] = '\0';
	if (!want_path(&c->r) || !sv_read_str(tid, addr, path, sizeof(path)))
		return;
	sv_abs_path(tid, dirfd, path, out, size);
}

/* ---- snapshots after the call: as preload.c takes them ------------------ */

static void snap_fd(struct pending *c, pid_t tid, int fd)
{
	struct cc_rec *r = &c->r;

	if (!cc.recorder || fd < 0 || r->snap_fd >= 0 || !cc_under_watch(r->path))
		return;
	if (!r->has_ino)
		stat_fd(r, tid, fd);
	if (!r->is_reg)
		return;
	/* a kept reader of the inode the call saw, else a fresh one */
	if (r->has_st) {
		r->snap_fd = sv_fd_reader(c->proc, tid, fd, &r->st);
		r->snap_fd_borrowed = r->snap_fd >= 0;
	}
	if (r->snap_fd < 0)
		r->snap_fd = sv_fd_open(tid, fd, 0);
	if (r->snap_fd >= 0)
		r->snap |= SNAP_FILE;
}

static void snap_path(struct cc_rec *r, const char *path)
{
	struct stat st;

	if (!cc.recorder || r->snap_fd >= 0 || !cc_under_watch(path))
		return;
	r->snap_fd = cc_open_read(AT_FDCWD, path, O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (r->snap_fd < 0)
		return;
	if (fstat(r->snap_fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(r->snap_fd);
		r->snap_fd = -1;
		return;
	}
	r->snap |= SNAP_FILE;
}

/* mapped MAP_SHARED: stores may change it with no system call */
static void taint_rec(const struct cc_rec *r)
{
	if (cc.recorder && !cc.snap_full && r->has_ino && r->is_reg &&
	    cc_under_watch(r->path))
		cc_taint(r->dev, r->ino);
}

/* ---- writes ----------------------------------------------------------------- */

static bool is_write(int sc)
{
	return sc == SC_write || sc == SC_pwrite64 || sc == SC_writev ||
	       sc == SC_pwritev || sc == SC_pwritev2;
}

static bool is_vector(int sc)
{
	return sc == SC_writev || sc == SC_pwritev || sc == SC_pwritev2;
}

/* copy_file_range, sendfile, splice: a write of the range copied */
static bool is_copy(int sc)
{
	return sc == SC_copy_file_range || sc == SC_sendfile || sc == SC_splice;
}

/* the argument that holds the descriptor written to, and the count */
static int out_arg(int sc)
{
	return sc == SC_copy_file_range || sc == SC_splice ? 2 : 0;
}

static int count_arg(int sc)
{
	return sc == SC_copy_file_range || sc == SC_splice ? 4 :
	       sc == SC_sendfile ? 3 : 2;
}

/* a vector write with a file offset of its own (pwritev2's -1: none) */
static bool has_offset(const struct pending *c)
{
	return c->sc == SC_pwrite64 || c->sc == SC_pwritev ||
	       (c->sc == SC_pwritev2 && (long long)c->args[3] != -1);
}

/* read the vector of a writev-family call; its total length */
static size_t read_vector(struct pending *c, pid_t tid)
{
	int cnt = (int)c->args[2];
	size_t total = 0;

	if (cnt <= 0 || cnt > SV_IOV_MAX)
		return 0;
	c->iov = malloc(sizeof(*c->iov) * cnt);
	if (!c->iov)
		return 0;
	if (sv_read(tid, c->args[1], c->iov, sizeof(*c->iov) * cnt) !=
	    (long)(sizeof(*c->iov) * cnt)) {
		free(c->iov);
		c->iov = NULL;
		return 0;
	}
	c->iovcnt = cnt;
	for (int i = 0; i < cnt; i++)
		total += c->iov[i].iov_len;
	return total;
}

/* the first LEN bytes the call handed down, copied from the thread; NULL
 * when they cannot be read */
static char *handed(struct pending *c, pid_t tid, size_t len)
{
	struct iovec local, remote[SV_IOV_MAX];
	char *buf = malloc(len ? len : 1);
	int n = 0;

	if (!buf)
		return NULL;
	if (!is_vector(c->sc)) {
		if (sv_read(tid, c->args[1], buf, len) == (long)len)
			return buf;
		free(buf);
		return NULL;
	}
	for (size_t left = len; n < c->iovcnt && left; n++) {
		remote[n] = c->iov[n];
		if (remote[n].iov_len > left)
			remote[n].iov_len = left;
		left -= remote[n].iov_len;
	}
	local.iov_base = buf;
	local.iov_len = len;
	if (process_vm_readv(tid, &local, 1, remote, n, 0) == (ssize_t)len)
		return buf;
	free(buf);
	return NULL;
}

/*
 * A short vector write: the supervisor writes the first WANT bytes of the
 * vector itself, through a duplicate of the thread's descriptor (the same
 * open file, so the same offset moves and O_APPEND holds), and the call
 * is skipped with what that write returned. False when it cannot be
 * made: the rule stays unfired and the call runs whole.
 */
static bool short_vector(struct pending *c, pid_t tid, pid_t tgid, size_t want,
			 unsigned align)
{
	struct iovec one;
	char *buf = NULL, *got = NULL;
	int pidfd = -1, fd = -1;
	ssize_t n;

	if (!c->iov || posix_memalign((void **)&buf, align, want) != 0)
		return false;
	/* O_DIRECT wants the buffer aligned: copied into ours */
	got = handed(c, tid, want);
	if (!got)
		goto out;
	memcpy(buf, got, want);
	pidfd = syscall(SYS_pidfd_open, tgid, 0);
	if (pidfd < 0)
		goto out;
	fd = syscall(SYS_pidfd_getfd, pidfd, (int)c->args[0], 0);
	if (fd < 0)
		goto out;
	one.iov_base = buf;
	one.iov_len = want;
	n = syscall(SYS_pwritev2, fd, &one, 1,
		    has_offset(c) ? (long)c->args[3] : -1L, 0L,
		    c->sc == SC_pwritev2 ? (int)c->args[5] : 0);
	c->skip_ret = n >= 0 ? n : -errno;
	c->skip = sv_skip(tid, c->skip_ret);
	if (c->skip) {
		/* what was handed down, for the range snapshot's proof */
		c->data = buf;
		buf = NULL;
	}
out:
	if (fd >= 0)
		close(fd);
	if (pidfd >= 0)
		close(pidfd);
	free(got);
	free(buf);
	return c->skip;
}

/* the O_DIRECT alignment of the thread's descriptor FD */
static unsigned dio_align(pid_t tid, int fd)
{
	int mine = sv_fd_open(tid, fd, 0);
	unsigned a;

	if (mine < 0)
		return 512;
	a = cc_dio_align(mine);
	close(mine);
	return a;
}

/* a short write, as the plan's rule says: preload.c's shorten() */
static void shorten(struct pending *c, pid_t tid, pid_t tgid, size_t count)
{
	const struct plan_rule *p = &cc.plan.rules[c->r.rule];
	int fd = (int)c->args[out_arg(c->sc)];
	unsigned align = 1;
	size_t want;
	long long pos;
	int fl;

	want = p->bytes ? p->bytes : count / 2;
	if (!want)
		want = 1;
	if ((sv_fd_facts(c->proc, tid, fd, NULL, &fl, &pos) & SV_GOT_FLAGS) &&
	    (fl & O_DIRECT)) {
		/* fewer bytes, but still whole blocks, or the kernel says EINVAL */
		align = dio_align(tid, fd);
		want -= want % align;
		if (want < align)
			want = align;
	}
	/* a write that cannot be made shorter leaves the rule unfired */
	if (want >= count)
		return;
	if (is_vector(c->sc))
		c->r.fired = short_vector(c, tid, tgid, want, align < 64 ? 64 : align);
	else
		c->r.fired = sv_set_arg(tid, count_arg(c->sc), want);
}

/*
 * Where the bytes of a write or writev went, as preload.c's write_off():
 * the position before the call for a regular file, the position after it
 * less what was written on an O_APPEND descriptor, both asked where the
 * flags are unknown. True when off is where the bytes went.
 */
static bool write_off(struct pending *c, pid_t tid, long long ret)
{
	struct cc_rec *r = &c->r;
	long long after = -1;
	int fl;
	bool append = r->fdflags >= 0 &&
		      ((r->fdflags & O_APPEND) || (r->rwflags & RWF_APPEND));
	bool before_only = r->fdflags >= 0 && !append && r->is_reg;

	if (!tracing(r))
		return false;
	if (before_only) {
		if (c->pos < 0)
			return false;
		r->off = c->pos;
		r->has_off = true;
		return ret > 0;
	}
	if (!(sv_fd_facts(c->proc, tid, r->fd, NULL, &fl, &after) & SV_GOT_FLAGS))
		after = -1;
	if (ret > 0 && after >= 0) {
		r->off = after - ret;
		r->has_off = true;
		return true;
	}
	/* a failed or empty append was to go at the end of a regular file (its
	 * size before the call), as preload.c's append_end() says */
	if (append)
		c->pos = r->has_st && r->is_reg ? (long long)r->st.st_size : after;
	if (c->pos >= 0) {
		r->off = c->pos;
		r->has_off = true;
	}
	return false;
}

/* after a write: a range snapshot of what it wrote (record.c takes it only
 * when it can prove it), the whole file otherwise */
static void snap_write(struct pending *c, pid_t tid, bool exact)
{
	struct cc_rec *r = &c->r;

	if (!cc.recorder || r->fd < 0 || !cc_under_watch(r->path))
		return;
	if (r->ret > 0 && r->has_st && r->is_reg && !cc.snap_full) {
		if (!c->data)
			c->data = handed(c, tid, r->ret);
		if (c->data) {
			r->buf = c->data;
			r->off_exact = exact;
			r->snap_fd = sv_fd_reader(c->proc, tid, r->fd, &r->st);
			r->snap_fd_borrowed = r->snap_fd >= 0;
			if (r->snap_fd < 0)
				r->snap_fd = sv_fd_open(tid, r->fd, 0);
			if (r->snap_fd >= 0) {
				r->snap |= SNAP_RANGE | SNAP_FILE;
				return;
			}
		}
	}
	snap_fd(c, tid, r->fd);
}

/* ---- mappings --------------------------------------------------------------- */

/*
 * The file mapping that holds ADDR in the thread's /proc maps, as
 * preload.c's map_lookup() finds it in its own.
 */
static struct map_hit *map_lookup(pid_t tid, uint64_t addr)
{
	struct map_hit *m = calloc(1, sizeof(*m));
	char path[64], line[CC_PATH_MAX + 256];
	FILE *f;

	if (!m)
		return NULL;
	snprintf(path, sizeof(path), "/proc/%d/maps", tid);
	f = fopen(path, "re");
	if (!f)
		return m;
	while (fgets(line, sizeof(line), f)) {
		unsigned long s, e;
		unsigned long long off, ino;
		char perms[8];
		int pos = 0;
		size_t len;

		if (sscanf(line, "%lx-%lx %7s %llx %*s %llu %n",
			   &s, &e, perms, &off, &ino, &pos) < 5 || addr < s || addr >= e)
			continue;
		if (!ino || !pos || line[pos] != '/')
			break;	/* anonymous memory */
		len = strlen(line + pos);
		if (len && line[pos + len - 1] == '\n')
			line[pos + len - 1] = '\0';
		snprintf(m->path, sizeof(m->path), "%s", line + pos);
		m->ino = ino;
		m->off = off + (addr - s);
		m->len = e - addr;
		m->shared = perms[3] == 's';
		break;
	}
	fclose(f);
	return m;
}

static void use_map(struct pending *c)
{
	struct cc_rec *r = &c->r;

	if (!c->map || !c->map->len || !want_path(r))
		return;
	snprintf(r->path, sizeof(r->path), "%s", c->map->path);
	r->ino = c->map->ino;
	r->has_ino = true;
	r->is_reg = true;
	r->off = c->map->off;
	r->has_off = true;
}

/* ---- the seccomp stop ------------------------------------------------------- */

/* count the call and decide the rule that fires on it */
static unsigned long count_rule(void *ctx, size_t i, bool add)
{
	(void)ctx;
	return add ? ++cc.sh->rules[i] : cc.sh->rules[i];
}

/*
 * copy_file_range, sendfile, splice, as preload.c's copy_describe and
 * copy_prepare: the line describes the output, its descriptor, path and
 * offset (copy_file_range's and splice's OFF_OUT when given, else the
 * descriptor's position before the call), and the bytes asked. The
 * snapshot after is the whole file: the bytes never pass through the
 * program's memory.
 */
static void describe_copy(struct pending *c, pid_t tid)
{
	struct cc_rec *r = &c->r;
	const uint64_t *a = c->args;
	uint64_t off_out = c->sc == SC_sendfile ? 0 : a[3];
	long long off;

	use_fd(c, tid, (int)a[out_arg(c->sc)], true);
	r->has_len = true;
	r->len = (long long)a[count_arg(c->sc)];
	if (off_out) {
		c->pos = sv_read(tid, off_out, &off, sizeof(off)) == sizeof(off) ? off : -1;
	} else if (!tracing(r) || !r->is_reg) {
		c->pos = -1;
	}
}

/*
 * The file a link names, as preload.c's link_source: a descriptor's
 * (AT_EMPTY_PATH with "", or /proc/self/fd/N: an O_TMPFILE's, which
 * reads "/dir/#N (deleted)") or a path.
 */
static void link_source(struct pending *c, pid_t tid, int olddir, uint64_t addr,
			int flags)
{
	struct cc_rec *r = &c->r;
	char old[CC_PATH_MAX], *end;
	long fd;

	if (!want_path(r) || !sv_read_str(tid, addr, old, sizeof(old)))
		return;
	if ((flags & AT_EMPTY_PATH) && !old[0]) {
		sv_fd_path(tid, olddir, r->path, sizeof(r->path));
		return;
	}
	if (!strncmp(old, "/proc/self/fd/", 14)) {
		fd = strtol(old + 14, &end, 10);
		if (end != old + 14 && !*end && fd >= 0 && fd <= INT32_MAX) {
			sv_fd_path(tid, (int)fd, r->path, sizeof(r->path));
			if (r->path[0])
				return;
		}
	}
	sv_abs_path(tid, olddir, old, r->path, sizeof(r->path));
}

/* what the call works on, before it runs (and before the plan decides:
 * a rule's glob needs the path) */
static void describe(struct pending *c, pid_t tid)
{
	struct cc_rec *r = &c->r;
	const uint64_t *a = c->args;

	switch (c->sc) {
	case SC_write:
	case SC_pwrite64:
		use_fd(c, tid, (int)a[0], true);
		r->len = a[2];
		break;
	case SC_writev:
	case SC_pwritev:
	case SC_pwritev2:
		use_fd(c, tid, (int)a[0], true);
		r->len = read_vector(c, tid);
		/* pwritev2's own flags, for this write (RWF_DSYNC: durable
		 * when it returns); its offset is a[3], a[4] the high half
		 * the x86_64 kernel ignores */
		if (c->sc == SC_pwritev2)
			r->rwflags = (int)a[5];
		break;
	case SC_copy_file_range:
	case SC_sendfile:
	case SC_splice:
		describe_copy(c, tid);
		break;
	case SC_mkdir:
	case SC_symlink:
		use_path(c, tid, AT_FDCWD, a[c->sc == SC_symlink], r->path, sizeof(r->path));
		break;
	case SC_mkdirat:
		use_path(c, tid, (int)a[0], a[1], r->path, sizeof(r->path));
		break;
	case SC_symlinkat:
		use_path(c, tid, (int)a[1], a[2], r->path, sizeof(r->path));
		break;
	case SC_rmdir:
		use_path(c, tid, AT_FDCWD, a[0], r->path, sizeof(r->path));
		if (tracing(r))
			stat_path(r, r->path);
		break;
	case SC_link:
		link_source(c, tid, AT_FDCWD, a[0], 0);
		use_path(c, tid, AT_FDCWD, a[1], r->path2, sizeof(r->path2));
		break;
	case SC_linkat:
		link_source(c, tid, (int)a[0], a[1], (int)a[4]);
		use_path(c, tid, (int)a[2], a[3], r->path2, sizeof(r->path2));
		break;
	case SC_open:
		use_path(c, tid, AT_FDCWD, a[0], r->path, sizeof(r->path));
		r->oflags = (int)a[1];
		break;
	case SC_creat:
		use_path(c, tid, AT_FDCWD, a[0], r->path, sizeof(r->path));
		r->oflags = O_WRONLY | O_CREAT | O_TRUNC;
		break;
	case SC_openat:
		use_path(c, tid, (int)a[0], a[1], r->path, sizeof(r->path));
		r->oflags = (int)a[2];
		break;
	case SC_openat2: {
		uint64_t how[3] = { 0, 0, 0 };

		use_path(c, tid, (int)a[0], a[1], r->path, sizeof(r->path));
		if (a[3] >= sizeof(uint64_t) && sv_read(tid, a[2], how, sizeof(uint64_t)) ==
		    sizeof(uint64_t))
			r->oflags = (int)how[0];
		break;
	}
	case SC_close:
	case SC_fsync:
	case SC_fdatasync:
	case SC_syncfs:
	case SC_ftruncate:
	case SC_fallocate:
	case SC_mmap:
		use_fd(c, tid, c->sc == SC_mmap ? (int)a[4] : (int)a[0], false);
		break;
	case SC_sync_file_range:
		use_fd(c, tid, (int)a[0], true);
		break;
	case SC_msync:
	case SC_munmap:
		use_map(c);
		break;
	case SC_rename:
	case SC_renameat:
	case SC_renameat2: {
		bool at = c->sc != SC_rename;

		use_path(c, tid, at ? (int)a[0] : AT_FDCWD, at ? a[1] : a[0],
			 r->path, sizeof(r->path));
		use_path(c, tid, at ? (int)a[2] : AT_FDCWD, at ? a[3] : a[1],
			 r->path2, sizeof(r->path2));
		if (c->sc == SC_renameat2)
			r->renflags = (unsigned)a[4];
		break;
	}
	case SC_unlink:
	case SC_unlinkat:
		if (c->sc == SC_unlink)
			use_path(c, tid, AT_FDCWD, a[0], r->path, sizeof(r->path));
		else
			use_path(c, tid, (int)a[0], a[1], r->path, sizeof(r->path));
		if (tracing(r))
			stat_path(r, r->path);
		break;
	case SC_truncate:
		use_path(c, tid, AT_FDCWD, a[0], r->path, sizeof(r->path));
		break;
	default:
		break;
	}
}

/*
 * munmap is trapped for all memory, and counted only where it unmaps a
 * shared mapping of a file (malloc unmaps anonymous memory all the time,
 * and the preload counts the program's own munmaps, not libc's): C gets
 * the mapping, or false for one that does not count.
 */
static bool map_counts(struct pending *c, struct task *t)
{
	if (!t->proc->shared_maps && c->sc == SC_munmap)
		return false;
	c->map = map_lookup(t->tid, c->args[0]);
	return c->sc != SC_munmap || (c->map && c->map->len && c->map->shared);
}

/*
 * The program's stdout and stderr when it started (device and inode),
 * which faults never hit: a program must be able to say what went wrong,
 * and under this backend its messages are write calls like any other.
 * The call is still counted, so call numbers stay those of its trace.
 */
static struct { bool set; dev_t dev; ino_t ino; } std_out[2];

void sv_std_outputs(pid_t pid)
{
	for (int i = 0; i < 2; i++) {
		struct stat st;

		std_out[i].set = sv_fd_stat(pid, i + 1, &st) == 0;
		std_out[i].dev = st.st_dev;
		std_out[i].ino = st.st_ino;
	}
}

static bool is_std_output(struct pending *c, pid_t tid)
{
	struct cc_rec *r = &c->r;
	struct stat st;

	if (r->fd < 0)
		return false;
	if (!r->has_st) {
		if (sv_fd_stat(tid, r->fd, &st) < 0)
			return false;
		set_stat(r, &st);
	}
	for (int i = 0; i < 2; i++)
		if (std_out[i].set && std_out[i].dev == r->st.st_dev &&
		    std_out[i].ino == r->st.st_ino)
			return true;
	return false;
}

enum sv_resume sv_entry(struct task *t, int sc, const uint64_t args[6])
{
	pid_t tid = t->tid, tgid = t->proc->tgid;
	const struct plan_rule *p;
	struct pending *c;
	struct cc_rec *r;

	c = calloc(1, sizeof(*c));
	if (!c)
		cc_die("supervise: out of memory");
	c->sc = sc;
	c->proc = t->proc;
	c->pos = -1;
	memcpy(c->args, args, sizeof(c->args));
	r = &c->r;
	cc_rec_init(r, sc_table[sc].call);
	if ((sc == SC_munmap || sc == SC_msync) && !map_counts(c, t)) {
		sv_pending_free(c);
		return SV_CONT;
	}
	describe(c, tid);

	r->n = ++cc.sh->calls[r->call];
	/* the program's stdout and stderr: counted, as the trace numbers
	 * them (glob rules too), never faulted */
	if (cc.has_rules[r->call])
		r->rule = plan_fire(&cc.plan, &(struct plan_call){
			r->call, r->n, r->path, cc.watch, is_std_output(c, tid) },
			count_rule, NULL);
	p = r->rule >= 0 ? &cc.plan.rules[r->rule] : NULL;
	/* where the program made it, for a line that will be written */
	if (cc.trace && (!r->lite || p)) {
		r->nframes = sv_unwind(t->proc, tid, c->frames, c->paths, SV_FRAMES);
		r->frames = c->frames;
	}

	/* the number is free once the call runs, whatever it returns */
	if (sc == SC_close)
		sv_fd_forget(t->proc, (int)args[0]);
	if (p && p->action == PLAN_CRASH) {
		r->fired = true;
		cc_trace_pid(tgid);
		cc_trace_crash(r, "before");
		sv_kill(tgid);
		sv_pending_free(c);
		return SV_KILLED;
	}
	if (is_write(sc))
		cc_thin_write(r);
	if ((is_write(sc) || is_copy(sc)) && p && p->action == PLAN_SHORT)
		shorten(c, tid, tgid, (size_t)r->len);
	if (p && p->action == PLAN_ERRNO) {
		c->skip_ret = -p->err;
		c->skip = r->fired = sv_skip(tid, c->skip_ret);
	}
	if (!tracing(r) && !(p && p->action == PLAN_CRASH_AFTER)) {
		/* nothing wanted after the call: it takes its seq now (a lite
		 * call's line, if any, is written as the preload writes it) */
		cc_trace_pid(tgid);
		cc_trace_call(r);
		sv_pending_free(c);
		return SV_CONT;
	}
	t->call = c;
	return SV_EXIT;
}

/* ---- the exit stop ---------------------------------------------------------- */

/* what the call changed, once it returned RET (its result, or -errno) */
static void after(struct pending *c, struct task *t, long long ret)
{
	struct cc_rec *r = &c->r;
	const uint64_t *a = c->args;
	pid_t tid = t->tid;
	bool ok = r->err == 0;

	switch (c->sc) {
	case SC_write:
	case SC_writev:
	case SC_pwrite64:
	case SC_pwritev:
	case SC_pwritev2:
		r->has_len = true;
		if (r->thin)
			break;
		if (has_offset(c)) {
			r->has_off = true;
			r->off = (long long)a[3];
			/* pwrite on an O_APPEND descriptor appends on Linux */
			snap_write(c, tid, r->oflags >= 0 && !(r->oflags & O_APPEND) &&
				   !(r->rwflags & RWF_APPEND));
		} else {
			snap_write(c, tid, write_off(c, tid, ret));
		}
		break;
	case SC_open:
	case SC_openat:
	case SC_openat2:
	case SC_creat:
		if (ok) {
			r->fd = (int)ret;
			if (tracing(r))
				stat_fd(r, tid, r->fd);
		}
		if (r->oflags >= 0 && (r->oflags & (O_CREAT | O_TRUNC))) {
			cc_snap_parent(r, 1);
			if (ok)
				snap_fd(c, tid, r->fd);
		}
		break;
	case SC_fsync:
	case SC_fdatasync:
		/* even a failed fsync: the harness needs what the file held then */
		if (r->is_dir)
			cc_snap_self(r);
		else
			snap_fd(c, tid, r->fd);
		break;
	case SC_sync:
	case SC_syncfs:
		if (cc.recorder)
			r->snap |= SNAP_DIR | SNAP_ALL;
		break;
	case SC_sync_file_range:
		r->has_off = r->has_len = true;
		r->off = (long long)a[1];
		r->len = (long long)a[2];
		snap_fd(c, tid, r->fd);
		break;
	case SC_mmap:
		r->has_off = r->has_len = true;
		r->off = (long long)a[5];
		r->len = (long long)a[1];
		r->mapflags = (int)a[3] & (MAP_SHARED | MAP_PRIVATE);
		if (ok) {
			t->proc->shared_maps++;
			taint_rec(r);
		}
		snap_fd(c, tid, r->fd);
		break;
	case SC_msync:
	case SC_munmap:
		if (c->sc == SC_msync)
			r->msflags = (int)a[2];
		if (c->map && c->map->len) {
			r->has_len = true;
			r->len = a[1] < c->map->len ? (long long)a[1] : (long long)c->map->len;
			snap_path(r, r->path);
		}
		break;
	case SC_rename:
	case SC_renameat:
	case SC_renameat2:
		cc_names_changed();
		if (tracing(r))
			stat_path(r, ok ? r->path2 : r->path);
		cc_snap_parent(r, 1);
		cc_snap_parent(r, 2);
		/* a directory moved in from outside: all under it is new */
		if (cc.recorder && ok && r->is_dir && !cc_under_watch(r->path) &&
		    cc_under_watch(r->path2))
			r->snap |= SNAP_TREE2;
		snap_path(r, r->path2);
		break;
	case SC_unlink:
	case SC_unlinkat:
	case SC_rmdir:
		cc_names_changed();
		cc_snap_parent(r, 1);
		break;
	case SC_mkdir:
	case SC_mkdirat:
		if (tracing(r))
			stat_path(r, r->path);
		cc_snap_parent(r, 1);
		/* the new directory is empty: its listing says it exists */
		cc_snap_self(r);
		break;
	case SC_link:
	case SC_linkat:
		cc_names_changed();
		if (tracing(r))
			stat_path(r, ok ? r->path2 : r->path);
		cc_snap_parent(r, 2);
		snap_path(r, r->path2);
		break;
	case SC_symlink:
	case SC_symlinkat:
		cc_snap_parent(r, 1);
		break;
	case SC_copy_file_range:
	case SC_sendfile:
	case SC_splice:
		if (c->pos >= 0) {
			r->has_off = true;
			r->off = c->pos;
		}
		snap_fd(c, tid, r->fd);
		break;
	case SC_ftruncate:
		r->has_len = true;
		r->len = (long long)a[1];
		snap_fd(c, tid, r->fd);
		break;
	case SC_truncate:
		r->has_len = true;
		r->len = (long long)a[1];
		if (tracing(r))
			stat_path(r, r->path);
		snap_path(r, r->path);
		break;
	case SC_fallocate:
		r->has_off = r->has_len = true;
		r->off = (long long)a[2];
		r->len = (long long)a[3];
		snap_fd(c, tid, r->fd);
		break;
	default:
		break;
	}
}

enum sv_resume sv_exit(struct task *t, long long rval)
{
	struct pending *c = t->call;
	struct cc_rec *r = &c->r;
	const struct plan_rule *p = r->rule >= 0 ? &cc.plan.rules[r->rule] : NULL;
	long long ret = c->skip ? c->skip_ret : rval;
	bool crash_after = p && p->action == PLAN_CRASH_AFTER;
	pid_t tgid = t->proc->tgid;

	t->call = NULL;
	if (c->skip)
		sv_set_return(t->tid, ret);
	r->err = ret < 0 && ret >= -4095 ? (int)-ret : 0;
	/* interrupted, to be restarted or to fail with EINTR: the program
	 * asks again if it restarts, and is counted again */
	if (r->err >= ERESTARTSYS && r->err <= ERESTART_RESTARTBLOCK)
		r->err = EINTR;
	r->ret = r->err ? -1 : ret;
	after(c, t, ret);
	if (crash_after)
		r->fired = true;
	cc_trace_pid(tgid);
	cc_trace_call(r);
	if (crash_after) {
		cc_trace_crash(r, "after");
		sv_kill(tgid);
		sv_pending_free(c);
		return SV_KILLED;
	}
	sv_pending_free(c);
	return SV_CONT;
}

/* ---- exec ------------------------------------------------------------------- */

void sv_exec(struct proc *p, pid_t ppid)
{
	char proc[64], exe[CC_PATH_MAX];
	ssize_t n;

	snprintf(proc, sizeof(proc), "/proc/%d/exe", p->tgid);
	n = readlink(proc, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	cc_trace_start(p->tgid, ppid, exe);
}
