/*
 * Each intercepted call's rule, once for both backends (rules.h): what it
 * works on, what the plan decides from, what its line says and what the
 * recorder snapshots after it. The facts come from the backend (cc.io):
 * the preload's own fstat, lseek and /proc/self, or the supervisor's
 * view of a stopped thread. Adding a call is a row of calls.def and its
 * three hooks here.
 *
 * A hook runs in the backend's context: in the program, inside a wrapper
 * (nothing here may call an intercepted function: raw system calls
 * only), or in the supervisor, while the thread is stopped. Either way
 * the hooks of one call run in one thread, in order: describe, the plan's
 * decision (rule_decide), prepare, the call, after.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "rules.h"

#define io (cc.io)

/* ---- the helpers every rule shares ------------------------------------- */

/* the call is recorded: a trace, and the call not before its start */
static bool tracing(const struct cc_rec *r)
{
	return cc.trace && !r->lite;
}

/* what the call works on is wanted: for its line, or a glob rule */
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

static void stat_fd(struct cc_rec *r, int fd)
{
	struct stat st;

	if (io->fd_facts(r, fd, &st, NULL) & CC_GOT_STAT)
		set_stat(r, &st);
}

/* PATH as the program sees it now: both backends share its file system */
static void stat_path(struct cc_rec *r, const char *path)
{
	struct stat st;

	if (path[0] && syscall(SYS_newfstatat, AT_FDCWD, path, &st, 0) == 0) {
		r->has_ino = true;
		r->ino = st.st_ino;
		r->dev = st.st_dev;
		r->is_reg = S_ISREG(st.st_mode);
		r->is_dir = S_ISDIR(st.st_mode);
	}
}

/*
 * Describe the descriptor a call works on. The fstat comes first: it is
 * what proves the cached path of the descriptor current, and for the write
 * family it is the "before" that a range snapshot is checked against.
 * FLAGS: the open flags the line names (a traced call only).
 */
static void use_fd(struct cc_rec *r, int fd, bool flags)
{
	struct stat st;
	long fl = -1;
	int got;

	r->fd = fd;
	if (fd < 0 || !want_path(r))
		return;
	flags = flags && tracing(r);
	got = io->fd_facts(r, fd, &st, flags ? &fl : NULL);
	if (got & CC_GOT_STAT)
		set_stat(r, &st);
	io->fd_path(r, fd, r->has_st ? &r->st : NULL, r->path, sizeof(r->path));
	if (got & CC_GOT_FLAGS) {
		r->fdflags = fl;
		r->oflags = fl & (O_APPEND | O_DIRECT | O_SYNC | O_DSYNC);
	}
}

/* PATH made absolute against DIRFD (AT_FDCWD: the working directory) and
 * folded, into BUF */
static void join_path(struct cc_rec *r, int dirfd, const char *path, char *buf,
		      size_t size)
{
	buf[0] = '\0';
	if (path[0] != '/') {
		if (dirfd == AT_FDCWD)
			io->cwd(r, buf, size);
		else
			io->fd_link(r, dirfd, buf, size);
	}
	cc_path_join(buf, size, path);
}

/* the path at ADDR, made absolute against DIRFD, into OUT ("" when it
 * cannot be read), when it is wanted */
static void use_path(struct cc_rec *r, int dirfd, cc_ptr addr, char *out, size_t size)
{
	char path[CC_PATH_MAX];

	out[0] = '\0';
	if (!want_path(r) || !addr || !io->read_str(r, addr, path, sizeof(path)))
		return;
	join_path(r, dirfd, path, out, size);
}

/* after the call: snapshot the file open at FD, when it lies under WATCH
 * (for a range snapshot when asked: SNAP_RANGE) */
static void snap_fd(struct cc_rec *r, int fd)
{
	if (!cc.recorder || fd < 0 || r->snap_fd >= 0 || !cc_under_watch(r->path))
		return;
	if (!r->has_ino)
		stat_fd(r, fd);
	if (!r->is_reg)
		return;
	io->fd_snap(r, fd, r->snap & SNAP_RANGE);
	if (r->snap_fd >= 0)
		r->snap |= SNAP_FILE;
}

/* after the call: snapshot the file now at PATH, when it lies under WATCH */
static void snap_path(struct cc_rec *r, const char *path)
{
	int mode;

	if (!cc.recorder || r->snap_fd >= 0 || !cc_under_watch(path))
		return;
	r->snap_fd = cc_open_read(AT_FDCWD, path, O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (r->snap_fd < 0)
		return;
	if (cc_sys_fstat_ino(r->snap_fd, NULL, &mode, NULL) < 0 || !S_ISREG(mode)) {
		cc_sys_close(r->snap_fd);
		r->snap_fd = -1;
		return;
	}
	r->snap |= SNAP_FILE;
}

/*
 * After a write-family call: ask for a range snapshot of the bytes it wrote
 * (the recorder takes one only when it can prove it enough: the bytes
 * read back are those handed down), with the whole file as the fallback.
 * EXACT says OFF is where the bytes went.
 */
static void snap_write(struct cc_rec *r, int fd, cc_ptr buf, cc_ptr iov, int cnt,
		       bool exact)
{
	if (!cc.recorder || fd < 0 || !cc_under_watch(r->path))
		return;
	if (r->ret > 0 && r->has_st && r->is_reg && !cc.snap_full &&
	    io->handed(r, buf, iov, cnt)) {
		r->snap |= SNAP_RANGE;
		r->off_exact = exact;
	}
	snap_fd(r, fd);
}

/*
 * The file behind R may change with no intercepted write: stores through a
 * MAP_SHARED mapping, or a stdio buffer that libc writes out with its
 * internal write (at exit, on fseek, from putc). Its writes are then
 * recorded whole, in every process of the tree, for the rest of the run.
 */
static void taint_rec(const struct cc_rec *r)
{
	if (cc.recorder && !cc.snap_full && r->has_ino && r->is_reg &&
	    cc_under_watch(r->path))
		cc_taint(r->dev, r->ino);
}

/* ---- counting and deciding ------------------------------------------------ */

const struct plan_rule *rule_of(const struct cc_rec *r, enum plan_action a)
{
	if (r->rule < 0 || cc.plan.rules[r->rule].action != a)
		return NULL;
	return &cc.plan.rules[r->rule];
}

/* the count of glob rule I, the next one with ADD: a process tree counts
 * in one sequence (the preload's counters are in the CRASHCHECK_SHARED
 * mapping) */
static unsigned long count_rule(void *ctx, size_t i, bool add)
{
	(void)ctx;
	if (!add)
		return __atomic_load_n(&cc.sh->rules[i], __ATOMIC_SEQ_CST);
	return __atomic_add_fetch(&cc.sh->rules[i], 1, __ATOMIC_SEQ_CST);
}

void rule_std_set(int i, uint64_t dev, uint64_t ino)
{
	cc.sh->std[i].dev = dev;
	cc.sh->std[i].ino = ino;
	cc.sh->std[i].ok = 1;
}

/*
 * DEV:INO was the tree's stdout or stderr at its start: a fault aimed at
 * the program's files never fires on a call to these (crash-model.md: a
 * program must be able to say what went wrong), even in a child whose own
 * descriptors 1 and 2 are elsewhere (a shell's `cat > file` writes its
 * file through descriptor 1).
 */
static bool is_std(uint64_t dev, uint64_t ino)
{
	if (__atomic_load_n(&cc.sh->std_ready, __ATOMIC_ACQUIRE) != 2)
		return false;
	for (int i = 0; i < 2; i++)
		if (cc.sh->std[i].ok && cc.sh->std[i].dev == dev &&
		    cc.sh->std[i].ino == ino)
			return true;
	return false;
}

void rule_decide(struct cc_rec *r)
{
	bool std;

	r->n = __atomic_add_fetch(&cc.sh->calls[r->call], 1, __ATOMIC_SEQ_CST);
	if (!cc.has_rules[r->call])
		return;
	/* the tree's stdout and stderr: counted as ever (glob rules too:
	 * the numbers are the trace's), never faulted */
	if (r->fd >= 0 && !r->has_ino)
		stat_fd(r, r->fd);
	std = r->fd >= 0 && r->has_ino && is_std(r->dev, r->ino);
	r->rule = plan_fire(&cc.plan, &(struct plan_call){
		r->call, r->n, r->path, cc.watch, std }, count_rule, NULL);
}

/*
 * The calls whose after hook keeps the paths of later calls right: an
 * open, whose descriptor number may have been closed unseen (close_range,
 * a raw system call) and what was known of it is stale, and the calls
 * that change names, after which any cached path may be. Needed whenever
 * paths are: a trace, or a glob rule of any call.
 */
bool rule_after_always(const struct cc_rec *r)
{
	if (!cc.trace && !cc.any_glob)
		return false;
	switch (r->call) {
	case CALL_open:
	case CALL_openat:
	case CALL_creat:
	case CALL_rename:
	case CALL_renameat:
	case CALL_renameat2:
	case CALL_unlink:
	case CALL_unlinkat:
	case CALL_rmdir:
	case CALL_link:
	case CALL_linkat:
		return true;
	default:
		return false;
	}
}

/* bytes to pass down for a short write of COUNT, or COUNT when none; the
 * O_DIRECT alignment it kept to into *ALIGN (1 without O_DIRECT) */
static size_t shorten(struct cc_rec *r, int fd, size_t count, unsigned *align)
{
	const struct plan_rule *p = rule_of(r, PLAN_SHORT);
	size_t want;
	long fl;

	if (align)
		*align = 1;
	if (!p)
		return count;
	want = p->bytes ? p->bytes : count / 2;
	if (!want)
		want = 1;
	if ((io->fd_facts(r, fd, NULL, &fl) & CC_GOT_FLAGS) && (fl & O_DIRECT)) {
		/* fewer bytes, but still whole blocks, or the kernel says EINVAL */
		unsigned a = io->dio_align(r, fd);

		want -= want % a;
		if (want < a)
			want = a;
		if (align)
			*align = a;
	}
	/* a write that cannot be made shorter leaves the rule unfired */
	if (want >= count)
		return count;
	r->fired = true;
	return want;
}

/*
 * Where the bytes of a write() or writev() go. Without O_APPEND they go
 * at the position before the call: on a regular file that is the whole
 * answer. O_APPEND moves them to the end, so only the position after the
 * call tells (off = after - ret); a failed or empty call leaves the
 * position where it was, so "after" is also "before" then. Anything else
 * (flags unknown, a device whose position does not move as a file's
 * does) asks both times. An offset that is wrong anyway (another holder
 * of the open file moved it in between) never becomes a wrong range: the
 * range snapshot reads the bytes back at off and takes the whole file
 * when they differ.
 */
enum { POS_BEFORE, POS_AFTER, POS_BOTH };

static int pos_plan(const struct cc_rec *r)
{
	if (r->fdflags < 0)
		return POS_BOTH;
	if ((r->fdflags & O_APPEND) || (r->rwflags & RWF_APPEND))
		return POS_AFTER;
	return r->is_reg ? POS_BEFORE : POS_BOTH;
}

/* the position before a write that needs it, -1 otherwise */
static long long cur_pos(const struct cc_rec *r, int fd)
{
	if (!tracing(r) || pos_plan(r) == POS_AFTER)
		return -1;
	return io->fd_pos((struct cc_rec *)r, fd);
}

/*
 * Where a failed or empty append to a regular file was to go: the file's
 * end (its size before the call), not the descriptor's position, which an
 * append moves only when it writes (0 on a file just opened O_APPEND).
 * A fault on such a call is aimed at the call the recorded run made at
 * the end; recording the position would make every faulted append look
 * like another call. AFTER (the position) for anything else.
 */
static long long append_end(const struct cc_rec *r, long long after)
{
	return r->has_st && r->is_reg ? (long long)r->st.st_size : after;
}

/*
 * Set the offset of a write() or writev() that returned RET from r->pos
 * (cur_pos) and, where pos_plan() says, the position after the call. True
 * when off is where the bytes went (a range snapshot needs it).
 */
static bool write_off(struct cc_rec *r, int fd, long long ret)
{
	int how = pos_plan(r);
	long long before = r->pos, after;

	if (!tracing(r))
		return false;
	if (how == POS_BEFORE) {
		if (before < 0)
			return false;
		r->off = before;
		r->has_off = true;
		return ret > 0;
	}
	after = io->fd_pos(r, fd);
	if (ret > 0 && after >= 0) {
		r->off = after - ret;
		r->has_off = true;
		return true;
	}
	if (how == POS_AFTER)
		before = append_end(r, after);
	if (before >= 0) {
		r->off = before;
		r->has_off = true;
	}
	return false;
}

/* pwrite on an O_APPEND descriptor appends on Linux, whatever OFF says */
static bool pos_exact(const struct cc_rec *r)
{
	return r->oflags >= 0 && !(r->oflags & O_APPEND);
}

/* ---- write family ----------------------------------------------------------- */

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"

void rule_write_describe(struct cc_rec *r, int fd, cc_ptr buf, size_t count)
{
	use_fd(r, fd, true);
}

void rule_write_prepare(struct cc_rec *r, int *fd, cc_ptr *buf, size_t *count)
{
	r->has_len = true;
	r->len = *count;
	r->pos = cc_thin_write(r) ? -1 : cur_pos(r, *fd);
	*count = shorten(r, *fd, *count, NULL);
}

void rule_write_after(struct cc_rec *r, ssize_t ret, int fd, cc_ptr buf, size_t count)
{
	if (!r->thin)
		snap_write(r, fd, buf, 0, 0, write_off(r, fd, ret));
}

void rule_pwrite_describe(struct cc_rec *r, int fd, cc_ptr buf, size_t count, off_t off)
{
	use_fd(r, fd, true);
}

void rule_pwrite_prepare(struct cc_rec *r, int *fd, cc_ptr *buf, size_t *count,
			 off_t *off)
{
	r->has_len = true;
	r->len = *count;
	cc_thin_write(r);
	*count = shorten(r, *fd, *count, NULL);
}

void rule_pwrite_after(struct cc_rec *r, ssize_t ret, int fd, cc_ptr buf, size_t count,
		       off_t off)
{
	if (r->thin)
		return;
	r->has_off = true;
	r->off = off;
	snap_write(r, fd, buf, 0, 0, pos_exact(r));
}

/* the bytes a vector of CNT buffers at IOV holds, 0 when it cannot be read */
static size_t iov_total(struct cc_rec *r, cc_ptr iov, int cnt)
{
	struct iovec v[64];
	size_t total = 0;

	if (cnt <= 0 || cnt > IOV_MAX)
		return 0;
	for (int i = 0; i < cnt; i += 64) {
		int n = cnt - i < 64 ? cnt - i : 64;

		if (io->read(r, iov + i * sizeof(*v), v, n * sizeof(*v)) !=
		    (long)(n * sizeof(*v)))
			return 0;
		for (int k = 0; k < n; k++)
			total += v[k].iov_len;
	}
	return total;
}

/* a vector write: its length, and a short write of it */
static void prepare_vector(struct cc_rec *r, int fd, cc_ptr *iov, int *cnt)
{
	size_t pass;
	unsigned align;

	r->has_len = true;
	r->len = iov_total(r, *iov, *cnt);
	pass = shorten(r, fd, r->len, &align);
	if (pass < (size_t)r->len && !io->short_vector(r, fd, iov, cnt, pass, align))
		r->fired = false;
}

void rule_writev_describe(struct cc_rec *r, int fd, cc_ptr iov, int cnt)
{
	use_fd(r, fd, true);
}

void rule_writev_prepare(struct cc_rec *r, int *fd, cc_ptr *iov, int *cnt)
{
	cc_thin_write(r);
	r->pos = r->thin ? -1 : cur_pos(r, *fd);
	prepare_vector(r, *fd, iov, cnt);
}

/* IOV: the vector as passed down, a short write's the trimmed one */
void rule_writev_after(struct cc_rec *r, ssize_t ret, int fd, cc_ptr iov, int cnt)
{
	if (!r->thin)
		snap_write(r, fd, 0, iov, cnt, write_off(r, fd, ret));
}

void rule_pwritev_describe(struct cc_rec *r, int fd, cc_ptr iov, int cnt, off_t off)
{
	use_fd(r, fd, true);
}

void rule_pwritev_prepare(struct cc_rec *r, int *fd, cc_ptr *iov, int *cnt, off_t *off)
{
	cc_thin_write(r);
	prepare_vector(r, *fd, iov, cnt);
}

void rule_pwritev_after(struct cc_rec *r, ssize_t ret, int fd, cc_ptr iov, int cnt,
			off_t off)
{
	if (r->thin)
		return;
	r->has_off = true;
	r->off = off;
	snap_write(r, fd, 0, iov, cnt, pos_exact(r));
}

/*
 * pwritev2: pwritev with per-call flags. RWF_DSYNC and RWF_SYNC make this
 * one write durable as O_DSYNC would (the trace names them with the
 * descriptor's flags); RWF_APPEND appends like O_APPEND; an offset of -1
 * writes at the descriptor's position, as writev does.
 */
void rule_pwritev2_describe(struct cc_rec *r, int fd, cc_ptr iov, int cnt, off_t off,
			    int flags)
{
	use_fd(r, fd, true);
	r->rwflags = flags;
}

void rule_pwritev2_prepare(struct cc_rec *r, int *fd, cc_ptr *iov, int *cnt, off_t *off,
			   int *flags)
{
	cc_thin_write(r);
	if (*off == -1)
		r->pos = r->thin ? -1 : cur_pos(r, *fd);
	prepare_vector(r, *fd, iov, cnt);
}

void rule_pwritev2_after(struct cc_rec *r, ssize_t ret, int fd, cc_ptr iov, int cnt,
			 off_t off, int flags)
{
	bool exact;

	if (r->thin)
		return;
	if (off == -1) {
		exact = write_off(r, fd, ret);
	} else {
		r->has_off = true;
		r->off = off;
		exact = pos_exact(r) && !(flags & RWF_APPEND);
	}
	snap_write(r, fd, 0, iov, cnt, exact);
}

/*
 * copy_file_range, sendfile, splice: the file written to changes like a
 * write of the range copied there (crash-model.md), from data that never
 * passes through the program's buffers, so its snapshot is whole. The
 * line describes the output: its descriptor, path and offset (OFF_OUT
 * when given, else the descriptor's position before the call), the bytes
 * asked, those copied.
 */
static void copy_prepare(struct cc_rec *r, int fd_out, cc_ptr off_out, size_t *len)
{
	long long off;

	r->has_len = true;
	r->len = *len;
	if (off_out)
		r->pos = io->read(r, off_out, &off, sizeof(off)) == sizeof(off) ? off : -1;
	else if (tracing(r) && r->is_reg)
		r->pos = io->fd_pos(r, fd_out);
	*len = shorten(r, fd_out, *len, NULL);
}

static void copy_after(struct cc_rec *r, int fd_out)
{
	if (r->pos >= 0) {
		r->has_off = true;
		r->off = r->pos;
	}
	snap_fd(r, fd_out);
}

void rule_copy_file_range_describe(struct cc_rec *r, int fd_in, cc_ptr off_in,
				   int fd_out, cc_ptr off_out, size_t len,
				   unsigned int flags)
{
	use_fd(r, fd_out, true);
}

void rule_copy_file_range_prepare(struct cc_rec *r, int *fd_in, cc_ptr *off_in,
				  int *fd_out, cc_ptr *off_out, size_t *len,
				  unsigned int *flags)
{
	copy_prepare(r, *fd_out, *off_out, len);
}

void rule_copy_file_range_after(struct cc_rec *r, ssize_t ret, int fd_in, cc_ptr off_in,
				int fd_out, cc_ptr off_out, size_t len, unsigned int flags)
{
	copy_after(r, fd_out);
}

void rule_splice_describe(struct cc_rec *r, int fd_in, cc_ptr off_in, int fd_out,
			  cc_ptr off_out, size_t len, unsigned int flags)
{
	use_fd(r, fd_out, true);
}

void rule_splice_prepare(struct cc_rec *r, int *fd_in, cc_ptr *off_in, int *fd_out,
			 cc_ptr *off_out, size_t *len, unsigned int *flags)
{
	copy_prepare(r, *fd_out, *off_out, len);
}

void rule_splice_after(struct cc_rec *r, ssize_t ret, int fd_in, cc_ptr off_in,
		       int fd_out, cc_ptr off_out, size_t len, unsigned int flags)
{
	copy_after(r, fd_out);
}

/* sendfile's OFFSET is the input's: the output is written at its position */
void rule_sendfile_describe(struct cc_rec *r, int out_fd, int in_fd, cc_ptr offset,
			    size_t count)
{
	use_fd(r, out_fd, true);
}

void rule_sendfile_prepare(struct cc_rec *r, int *out_fd, int *in_fd, cc_ptr *offset,
			   size_t *count)
{
	copy_prepare(r, *out_fd, 0, count);
}

void rule_sendfile_after(struct cc_rec *r, ssize_t ret, int out_fd, int in_fd,
			 cc_ptr offset, size_t count)
{
	copy_after(r, out_fd);
}

/* ---- stdio: only the preload sees these (the supervisor sees the
 * system calls stdio makes) --------------------------------------------------- */

/*
 * A stream that can write may change its file with libc's internal write
 * (taint_rec); one opened only to read cannot: the sqlite shell's
 * fopen(.., "rb") probe of its database must not cost every later pwrite
 * a snapshot of the whole file.
 */
static void use_stream(struct cc_rec *r, FILE *f)
{
	use_fd(r, f ? fileno(f) : -1, true);
	if (f && __fwritable(f))
		taint_rec(r);
}

/* MODE opens a stream that can write */
static bool writable_mode(const char *mode)
{
	return mode && (mode[0] == 'w' || mode[0] == 'a' || strchr(mode, '+'));
}

void rule_fwrite_describe(struct cc_rec *r, const void *ptr, size_t size, size_t nmemb,
			  FILE *f)
{
	use_stream(r, f);
}

void rule_fwrite_after(struct cc_rec *r, size_t ret, const void *ptr, size_t size,
		       size_t nmemb, FILE *f)
{
	r->has_len = true;
	r->len = (long long)size * nmemb;
	snap_fd(r, r->fd);
}

void rule_fputs_describe(struct cc_rec *r, const char *s, FILE *f)
{
	use_stream(r, f);
}

void rule_fputs_after(struct cc_rec *r, int ret, const char *s, FILE *f)
{
	r->has_len = true;
	r->len = strlen(s);
	snap_fd(r, r->fd);
}

void rule_fputc_describe(struct cc_rec *r, int c, FILE *f)
{
	use_stream(r, f);
}

void rule_fputc_after(struct cc_rec *r, int ret, int c, FILE *f)
{
	r->has_len = true;
	r->len = 1;
	snap_fd(r, r->fd);
}

/* fprintf's wrapper is written by hand (preload.c): it sets the line's
 * length, the text it expanded, before this */
void rule_fprintf_describe(struct cc_rec *r, FILE *f, const char *fmt)
{
	use_stream(r, f);
}

void rule_fprintf_after(struct cc_rec *r, int ret, FILE *f, const char *fmt)
{
	snap_fd(r, r->fd);
}

void rule_fflush_describe(struct cc_rec *r, FILE *f)
{
	use_stream(r, f);
}

void rule_fflush_after(struct cc_rec *r, int ret, FILE *f)
{
	if (!f) {
		/* fflush(NULL) writes out every stream */
		if (cc.recorder)
			r->snap |= SNAP_ALL;
	} else {
		snap_fd(r, r->fd);
	}
}

void rule_fclose_describe(struct cc_rec *r, FILE *f)
{
	use_stream(r, f);
	/* the descriptor is gone after the call: keep a way to the file */
	snap_fd(r, r->fd);
}

void rule_fclose_after(struct cc_rec *r, int ret, FILE *f)
{
	/* libc closed the descriptor with its internal close */
	io->fd_forget(r, r->fd);
}

/* the open(2) flags fopen() uses for MODE */
static int fopen_flags(const char *mode)
{
	int fl = 0;

	if (!mode)
		return 0;
	switch (mode[0]) {
	case 'w': fl = O_CREAT | O_TRUNC; break;
	case 'a': fl = O_CREAT | O_APPEND; break;
	}
	for (const char *m = mode + 1; *m && *m != ','; m++)
		if (*m == 'x')
			fl |= O_EXCL;
	return fl;
}

void rule_fopen_describe(struct cc_rec *r, const char *path, const char *mode)
{
	use_path(r, AT_FDCWD, (cc_ptr)path, r->path, sizeof(r->path));
	r->oflags = fopen_flags(mode);
}

void rule_fopen_after(struct cc_rec *r, FILE *ret, const char *path, const char *mode)
{
	r->ret = ret ? fileno(ret) : -1;
	if (ret) {
		r->fd = fileno(ret);
		io->fd_forget(r, r->fd);
		if (tracing(r))
			stat_fd(r, r->fd);
		if (writable_mode(mode))
			taint_rec(r);
	}
	if (r->oflags & (O_CREAT | O_TRUNC)) {
		cc_snap_parent(r, 1);
		if (ret)
			snap_fd(r, r->fd);
	}
}

/* ---- sync ---------------------------------------------------------------------- */

void rule_fsync_describe(struct cc_rec *r, int fd)
{
	use_fd(r, fd, false);
	if (tracing(r) && !r->has_ino)
		stat_fd(r, fd);
}

void rule_fsync_after(struct cc_rec *r, int ret, int fd)
{
	/* even a failed fsync: the harness needs what the file held then */
	if (r->is_dir)
		cc_snap_self(r);
	else
		snap_fd(r, fd);
}

void rule_syncfs_describe(struct cc_rec *r, int fd)
{
	use_fd(r, fd, false);
}

void rule_syncfs_after(struct cc_rec *r, int ret, int fd)
{
	if (cc.recorder)
		r->snap |= SNAP_ALL;
}

void rule_sync_describe(struct cc_rec *r)
{
}

void rule_sync_after(struct cc_rec *r)
{
	if (cc.recorder)
		r->snap |= SNAP_ALL;
}

void rule_sync_file_range_describe(struct cc_rec *r, int fd, off64_t off,
				   off64_t nbytes, unsigned int flags)
{
	use_fd(r, fd, true);
}

void rule_sync_file_range_after(struct cc_rec *r, int ret, int fd, off64_t off,
				off64_t nbytes, unsigned int flags)
{
	r->has_off = r->has_len = true;
	r->off = off;
	r->len = nbytes;
	snap_fd(r, fd);
}

/* ---- mmap family ----------------------------------------------------------------- */

/*
 * The file mapping that holds ADDR in a maps file (/proc/PID/maps, open
 * at FD): the kernel's own account, right across fork() and for mappings
 * made before the library was loaded.
 */
void rule_map_find(int fd, uint64_t addr, struct cc_map *m)
{
	char buf[8192];
	size_t have = 0;

	m->len = 0;
	for (;;) {
		long n = syscall(SYS_read, fd, buf + have, sizeof(buf) - 1 - have);
		char *line, *nl;

		if (n <= 0)
			return;
		have += n;
		buf[have] = '\0';
		for (line = buf; (nl = strchr(line, '\n')); line = nl + 1) {
			unsigned long s, e;
			unsigned long long off, ino;
			char perms[8];
			int pos = 0;

			*nl = '\0';
			if (sscanf(line, "%lx-%lx %7s %llx %*s %llu %n",
				   &s, &e, perms, &off, &ino, &pos) < 5 ||
			    addr < s || addr >= e)
				continue;
			if (!ino || !pos || line[pos] != '/')
				return;	/* anonymous memory */
			snprintf(m->path, sizeof(m->path), "%s", line + pos);
			m->ino = ino;
			m->off = off + (addr - s);
			m->len = e - addr;
			m->shared = perms[3] == 's';
			return;
		}
		have -= line - buf;
		memmove(buf, line, have);
		if (have == sizeof(buf) - 1)
			have = 0;	/* a line longer than any path: skip it */
	}
}

void rule_mmap_describe(struct cc_rec *r, cc_ptr addr, size_t len, int prot, int flags,
			int fd, off_t off)
{
	if (!(flags & MAP_ANONYMOUS))
		use_fd(r, fd, false);
}

void rule_mmap_after(struct cc_rec *r, cc_ptr ret, cc_ptr addr, size_t len, int prot,
		     int flags, int fd, off_t off)
{
	r->has_off = r->has_len = true;
	r->off = off;
	r->len = len;
	r->mapflags = flags & (MAP_SHARED | MAP_PRIVATE);
	if (ret != (cc_ptr)MAP_FAILED && (flags & MAP_SHARED))
		taint_rec(r);
	if (r->fd >= 0)
		snap_fd(r, fd);
}

/* msync and munmap: the file range the call covers, one mapping's at most */
static void map_describe(struct cc_rec *r, cc_ptr addr)
{
	struct cc_map m;

	if (!want_path(r))
		return;
	io->map_at(r, addr, &m);
	if (!m.len)
		return;
	snprintf(r->path, sizeof(r->path), "%s", m.path);
	r->ino = m.ino;
	r->has_ino = true;
	r->is_reg = true;
	r->off = m.off;
	r->has_off = true;
	r->maplen = m.len;
}

static void map_after(struct cc_rec *r, size_t len)
{
	r->has_len = r->maplen != 0;
	r->len = len < r->maplen ? len : r->maplen;
	if (r->maplen)
		snap_path(r, r->path);
}

void rule_msync_describe(struct cc_rec *r, cc_ptr addr, size_t len, int flags)
{
	map_describe(r, addr);
}

void rule_msync_after(struct cc_rec *r, int ret, cc_ptr addr, size_t len, int flags)
{
	r->msflags = flags;
	map_after(r, len);
}

void rule_munmap_describe(struct cc_rec *r, cc_ptr addr, size_t len)
{
	map_describe(r, addr);
}

void rule_munmap_after(struct cc_rec *r, int ret, cc_ptr addr, size_t len)
{
	map_after(r, len);
}

/* ---- open and close -------------------------------------------------------------- */

static void open_done(struct cc_rec *r, int ret)
{
	if (ret >= 0) {
		r->fd = ret;
		/* the number may have been closed unseen (close_range, a raw
		 * system call): what was kept of it is of another file, or of
		 * this one by another name */
		io->fd_forget(r, ret);
		if (tracing(r))
			stat_fd(r, ret);
	}
	/* only a creating or truncating open changes what WATCH holds */
	if (r->oflags >= 0 && (r->oflags & (O_CREAT | O_TRUNC))) {
		cc_snap_parent(r, 1);
		if (ret >= 0)
			snap_fd(r, ret);
	}
}

void rule_open_describe(struct cc_rec *r, cc_ptr path, int flags, mode_t mode)
{
	use_path(r, AT_FDCWD, path, r->path, sizeof(r->path));
	r->oflags = flags;
}

void rule_open_after(struct cc_rec *r, int ret, cc_ptr path, int flags, mode_t mode)
{
	open_done(r, ret);
}

void rule_openat_describe(struct cc_rec *r, int dirfd, cc_ptr path, int flags,
			  mode_t mode)
{
	use_path(r, dirfd, path, r->path, sizeof(r->path));
	r->oflags = flags;
}

void rule_openat_after(struct cc_rec *r, int ret, int dirfd, cc_ptr path, int flags,
		       mode_t mode)
{
	open_done(r, ret);
}

void rule_creat_describe(struct cc_rec *r, cc_ptr path, mode_t mode)
{
	use_path(r, AT_FDCWD, path, r->path, sizeof(r->path));
	r->oflags = O_WRONLY | O_CREAT | O_TRUNC;
}

void rule_creat_after(struct cc_rec *r, int ret, cc_ptr path, mode_t mode)
{
	open_done(r, ret);
}

void rule_close_describe(struct cc_rec *r, int fd)
{
	use_fd(r, fd, false);
	/* the number is free once the call runs, even when it fails */
	io->fd_forget(r, fd);
}

void rule_close_after(struct cc_rec *r, int ret, int fd)
{
}

/* ---- names ------------------------------------------------------------------------ */

static void rename_describe(struct cc_rec *r, int olddir, cc_ptr old, int newdir,
			    cc_ptr new, unsigned flags)
{
	use_path(r, olddir, old, r->path, sizeof(r->path));
	use_path(r, newdir, new, r->path2, sizeof(r->path2));
	r->renflags = flags;
}

static void rename_done(struct cc_rec *r, int ret)
{
	cc_names_changed();
	if (tracing(r))
		stat_path(r, ret == 0 ? r->path2 : r->path);
	cc_snap_parent(r, 1);
	cc_snap_parent(r, 2);
	/* a directory moved in from outside: all under it is new to the trace */
	if (cc.recorder && ret == 0 && r->is_dir && !cc_under_watch(r->path) &&
	    cc_under_watch(r->path2))
		r->snap |= SNAP_TREE2;
	snap_path(r, r->path2);
}

void rule_rename_describe(struct cc_rec *r, cc_ptr old, cc_ptr new)
{
	rename_describe(r, AT_FDCWD, old, AT_FDCWD, new, 0);
}

void rule_rename_after(struct cc_rec *r, int ret, cc_ptr old, cc_ptr new)
{
	rename_done(r, ret);
}

void rule_renameat_describe(struct cc_rec *r, int olddir, cc_ptr old, int newdir,
			    cc_ptr new)
{
	rename_describe(r, olddir, old, newdir, new, 0);
}

void rule_renameat_after(struct cc_rec *r, int ret, int olddir, cc_ptr old, int newdir,
			 cc_ptr new)
{
	rename_done(r, ret);
}

void rule_renameat2_describe(struct cc_rec *r, int olddir, cc_ptr old, int newdir,
			     cc_ptr new, unsigned int flags)
{
	rename_describe(r, olddir, old, newdir, new, flags);
}

void rule_renameat2_after(struct cc_rec *r, int ret, int olddir, cc_ptr old, int newdir,
			  cc_ptr new, unsigned int flags)
{
	rename_done(r, ret);
}

static void unlink_describe(struct cc_rec *r, int dirfd, cc_ptr path)
{
	use_path(r, dirfd, path, r->path, sizeof(r->path));
	if (tracing(r))
		stat_path(r, r->path);
}

static void unlink_done(struct cc_rec *r)
{
	cc_names_changed();
	cc_snap_parent(r, 1);
}

void rule_unlink_describe(struct cc_rec *r, cc_ptr path)
{
	unlink_describe(r, AT_FDCWD, path);
}

void rule_unlink_after(struct cc_rec *r, int ret, cc_ptr path)
{
	unlink_done(r);
}

void rule_unlinkat_describe(struct cc_rec *r, int dirfd, cc_ptr path, int flags)
{
	unlink_describe(r, dirfd, path);
}

void rule_unlinkat_after(struct cc_rec *r, int ret, int dirfd, cc_ptr path, int flags)
{
	unlink_done(r);
}

void rule_rmdir_describe(struct cc_rec *r, cc_ptr path)
{
	unlink_describe(r, AT_FDCWD, path);
}

void rule_rmdir_after(struct cc_rec *r, int ret, cc_ptr path)
{
	unlink_done(r);
}

/*
 * mkdir, rmdir, link and symlink change names like a creation or an
 * unlink: the directory holding the name is snapshotted. link's path is
 * the file linked (an O_TMPFILE's, by AT_EMPTY_PATH or
 * /proc/self/fd/N, reads "/dir/#N (deleted)"), path2 the new name.
 */
static void mkdir_done(struct cc_rec *r)
{
	if (tracing(r))
		stat_path(r, r->path);
	cc_snap_parent(r, 1);
	/* the new directory is empty: its listing says it exists */
	cc_snap_self(r);
}

void rule_mkdir_describe(struct cc_rec *r, cc_ptr path, mode_t mode)
{
	use_path(r, AT_FDCWD, path, r->path, sizeof(r->path));
}

void rule_mkdir_after(struct cc_rec *r, int ret, cc_ptr path, mode_t mode)
{
	mkdir_done(r);
}

void rule_mkdirat_describe(struct cc_rec *r, int dirfd, cc_ptr path, mode_t mode)
{
	use_path(r, dirfd, path, r->path, sizeof(r->path));
}

void rule_mkdirat_after(struct cc_rec *r, int ret, int dirfd, cc_ptr path, mode_t mode)
{
	mkdir_done(r);
}

/* the file a link names: a descriptor's (AT_EMPTY_PATH, /proc/self/fd/N) or
 * a path */
static void link_source(struct cc_rec *r, int olddir, cc_ptr addr, int flags)
{
	char old[CC_PATH_MAX], *end;
	long fd;

	if (!want_path(r) || !addr || !io->read_str(r, addr, old, sizeof(old)))
		return;
	if ((flags & AT_EMPTY_PATH) && !old[0]) {
		io->fd_link(r, olddir, r->path, sizeof(r->path));
		return;
	}
	if (!strncmp(old, "/proc/self/fd/", 14)) {
		fd = strtol(old + 14, &end, 10);
		if (end != old + 14 && !*end && fd >= 0 && fd <= INT32_MAX) {
			io->fd_link(r, (int)fd, r->path, sizeof(r->path));
			if (r->path[0])
				return;
		}
	}
	join_path(r, olddir, old, r->path, sizeof(r->path));
}

static void link_describe(struct cc_rec *r, int olddir, cc_ptr old, int newdir,
			  cc_ptr new, int flags)
{
	link_source(r, olddir, old, flags);
	use_path(r, newdir, new, r->path2, sizeof(r->path2));
}

static void link_done(struct cc_rec *r, int ret)
{
	cc_names_changed();
	if (tracing(r))
		stat_path(r, ret == 0 ? r->path2 : r->path);
	cc_snap_parent(r, 2);
	snap_path(r, r->path2);
}

void rule_link_describe(struct cc_rec *r, cc_ptr old, cc_ptr new)
{
	link_describe(r, AT_FDCWD, old, AT_FDCWD, new, 0);
}

void rule_link_after(struct cc_rec *r, int ret, cc_ptr old, cc_ptr new)
{
	link_done(r, ret);
}

void rule_linkat_describe(struct cc_rec *r, int olddir, cc_ptr old, int newdir,
			  cc_ptr new, int flags)
{
	link_describe(r, olddir, old, newdir, new, flags);
}

void rule_linkat_after(struct cc_rec *r, int ret, int olddir, cc_ptr old, int newdir,
		       cc_ptr new, int flags)
{
	link_done(r, ret);
}

/* a symbolic link's path is its own name; what it points to is its content */
void rule_symlink_describe(struct cc_rec *r, cc_ptr target, cc_ptr path)
{
	use_path(r, AT_FDCWD, path, r->path, sizeof(r->path));
}

void rule_symlink_after(struct cc_rec *r, int ret, cc_ptr target, cc_ptr path)
{
	cc_snap_parent(r, 1);
}

void rule_symlinkat_describe(struct cc_rec *r, cc_ptr target, int dirfd, cc_ptr path)
{
	use_path(r, dirfd, path, r->path, sizeof(r->path));
}

void rule_symlinkat_after(struct cc_rec *r, int ret, cc_ptr target, int dirfd,
			  cc_ptr path)
{
	cc_snap_parent(r, 1);
}

/* ---- size and allocation ----------------------------------------------------------- */

void rule_ftruncate_describe(struct cc_rec *r, int fd, off_t len)
{
	use_fd(r, fd, false);
}

void rule_ftruncate_after(struct cc_rec *r, int ret, int fd, off_t len)
{
	r->has_len = true;
	r->len = len;
	snap_fd(r, fd);
}

void rule_truncate_describe(struct cc_rec *r, cc_ptr path, off_t len)
{
	use_path(r, AT_FDCWD, path, r->path, sizeof(r->path));
}

void rule_truncate_after(struct cc_rec *r, int ret, cc_ptr path, off_t len)
{
	r->has_len = true;
	r->len = len;
	if (tracing(r))
		stat_path(r, r->path);
	snap_path(r, r->path);
}

void rule_fallocate_describe(struct cc_rec *r, int fd, int mode, off_t off, off_t len)
{
	use_fd(r, fd, false);
}

void rule_fallocate_after(struct cc_rec *r, int ret, int fd, int mode, off_t off,
			  off_t len)
{
	r->has_off = r->has_len = true;
	r->off = off;
	r->len = len;
	snap_fd(r, fd);
}

/* posix_fallocate returns its error and leaves errno alone (fails: errno);
 * only the preload sees it: glibc makes it a fallocate(2) */
void rule_posix_fallocate_describe(struct cc_rec *r, int fd, off_t off, off_t len)
{
	use_fd(r, fd, false);
}

void rule_posix_fallocate_after(struct cc_rec *r, int ret, int fd, off_t off, off_t len)
{
	rule_fallocate_after(r, ret, fd, 0, off, len);
}

#pragma GCC diagnostic pop
