/*
 * The rules of the calls that open and close descriptors and change
 * names: open, openat, creat, close; rename, renameat, renameat2; unlink,
 * unlinkat, rmdir; mkdir, mkdirat; link, linkat; symlink, symlinkat. An
 * open forgets what was kept of the number it returns, a name change
 * makes every kept path stale (cc_names_changed), and the listings of
 * the directories a call changed follow it.
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
