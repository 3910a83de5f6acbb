/*
 * cwdstate: replace TARGET with the content of NEW, after writing a state
 * file that names the working directory, as logrotate writes its absolute
 * working directory into the state and configuration it keeps: the state
 * file's length is the directory's.
 *
 * Method: a correct program. The state ("state" in the working directory,
 * "dir = <absolute path>\n") is written, fsynced and closed; TARGET is
 * replaced atomically (a temporary file written, fsynced, renamed over
 * it, the directory fsynced). Every error is reported with the call and
 * the file, status 1. What it tests is the harness: runs of it in
 * directories of different lengths write states of different lengths,
 * which is no sign that the program makes its calls otherwise.
 *
 *   cwdstate TARGET NEW
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fail(const char *call, const char *what)
{
	fprintf(stderr, "cwdstate: %s '%s': %s\n", call, what, strerror(errno));
	return 1;
}

/* LEN bytes of BUF to FD, past EINTR and short writes */
static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0) {
			errno = ENOSPC;
			return -1;
		}
		buf += n;
		len -= n;
	}
	return 0;
}

/* PATH holds LEN bytes of BUF, durably (its directory is another matter) */
static int put(const char *path, const char *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0)
		return fail("open", path);
	if (write_all(fd, buf, len) < 0)
		return fail("write", path);
	if (fsync(fd) < 0)
		return fail("fsync", path);
	if (close(fd) < 0)
		return fail("close", path);
	return 0;
}

int main(int argc, char **argv)
{
	char cwd[PATH_MAX], state[PATH_MAX + 16], buf[65536];
	size_t len = 0;
	ssize_t n;
	int in, dir;

	if (argc != 3) {
		fprintf(stderr, "usage: cwdstate TARGET NEW\n");
		return 2;
	}
	if (!getcwd(cwd, sizeof(cwd)))
		return fail("getcwd", ".");
	n = snprintf(state, sizeof(state), "dir = %s\n", cwd);
	if (put("state", state, n))
		return 1;
	in = open(argv[2], O_RDONLY);
	if (in < 0)
		return fail("open", argv[2]);
	while ((n = read(in, buf + len, sizeof(buf) - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return fail("read", argv[2]);
		len += n;
		if (len == sizeof(buf)) {
			errno = EFBIG;
			return fail("read", argv[2]);
		}
	}
	close(in);
	if (put("cwdstate.tmp", buf, len))
		return 1;
	if (rename("cwdstate.tmp", argv[1]) < 0)
		return fail("rename", argv[1]);
	dir = open(".", O_RDONLY | O_DIRECTORY);
	if (dir < 0)
		return fail("open", ".");
	if (fsync(dir) < 0)
		return fail("fsync", ".");
	if (close(dir) < 0)
		return fail("close", ".");
	return 0;
}
