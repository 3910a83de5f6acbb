/*
 * The rules of the calls that write a file's data from the program's
 * buffers: write, pwrite, writev, pwritev, pwritev2; and of those that
 * copy into a file from another: copy_file_range, sendfile, splice.
 * What they wrote is recorded as the range it went to, when it can be
 * proved (snap_write); the bytes a short write passes are shorten()'s.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "rule.h"

/* a hook takes every argument of its call, and most use a few of them */
#pragma GCC diagnostic ignored "-Wunused-parameter"

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
