/*
 * The rules of the calls that make data durable (fsync, fdatasync,
 * syncfs, sync, sync_file_range), of the mmap family (mmap, msync,
 * munmap: the file range a mapping covers) and of those that change a
 * file's size or allocation (ftruncate, truncate, fallocate,
 * posix_fallocate).
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
