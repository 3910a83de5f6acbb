/*
 * The library's own system calls (raw syscall(2): never the interposed
 * functions, never counted), its messages, and paths: a descriptor's, one
 * made absolute and folded as the harness folds it.
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

void cc_vwarn(const char *fmt, va_list ap)
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
	cc_vwarn(fmt, ap);
	va_end(ap);
	syscall(SYS_exit_group, 2);
	_exit(2);
}

void cc_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cc_vwarn(fmt, ap);
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

void cc_path_join(char *buf, size_t size, const char *path)
{
	size_t n;

	if (path[0] == '/') {
		snprintf(buf, size, "%s", path);
		fold_path(buf);
		return;
	}
	while (path[0] == '.' && path[1] == '/')
		path += 2;
	n = strnlen(buf, size);
	if (n == size)
		n = size - 1;
	/* the base "/" joins as "" */
	if (n == 1 && buf[0] == '/')
		n = 0;
	snprintf(buf + n, size - n, "/%s", path);
	fold_path(buf);
}

void cc_abs_path(int dirfd, const char *path, char *buf, size_t size)
{
	buf[0] = '\0';
	if (!path)
		return;
	if (path[0] != '/') {
		if (dirfd == AT_FDCWD) {
			if (syscall(SYS_getcwd, buf, size) <= 0)
				buf[0] = '\0';
		} else {
			cc_fd_path(dirfd, buf, size);
		}
	}
	cc_path_join(buf, size, path);
}

/* a name changed somewhere in the process tree: every path kept of a
 * descriptor may be stale (names_gen, in the CRASHCHECK_SHARED mapping) */
void cc_names_changed(void)
{
	if (cc.sh)
		__atomic_add_fetch(&cc.sh->names_gen, 1, __ATOMIC_RELEASE);
}
