/*
 * The preload's cache of what it knows of the program's descriptors: each
 * one's path, and a read-only descriptor of its own on the file for the
 * snapshots (the supervisor keeps the same per traced process:
 * syscall/supervise.c).
 */
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

#include "record.h"

/*
 * The paths of descriptors, per process. readlink() of /proc/self/fd/N costs
 * a /proc lookup and a d_path() per call, several times the write it
 * describes; the answer only changes when the descriptor is closed or
 * replaced (close, dup2, an open that reuses the number: forgotten there)
 * or a name changes (rename, unlink: names_gen in the shared mapping, so a
 * rename by another process of the tree counts too). An entry is used only
 * when the fstat the rule made anyway (use_fd) shows the same inode, still
 * linked (an unlinked file reads "path (deleted)"), and names_gen has not
 * moved since the readlink; anything else reads the link again.
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
	if (!cc_try_lock(&e->busy)) {
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
	cc_unlock(&e->busy);
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
	if (cc_try_lock(&e->busy)) {
		e->ok = false;
		drop_rdfd(e);
		cc_unlock(&e->busy);
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
int cc_fd_reader(int fd, const struct stat *st, int stale)
{
	struct fd_cache_ent *e;
	char proc[64];
	int rd = -1, lo, floor;

	if (fd < 0 || fd >= FD_CACHE_NR)
		return -1;
	e = &fd_cache[fd];
	if (!cc_try_lock(&e->busy))
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
	floor = cc_fd_floor();
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
	cc_unlock(&e->busy);
	return rd;
}

/* the child of fork(): a lock another thread held is free */
void cc_fd_cache_after_fork(void)
{
	for (int i = 0; i < FD_CACHE_NR; i++)
		fd_cache[i].busy = 0;
}
