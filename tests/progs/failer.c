/*
 * failer: calls that fail and change nothing, many of them, around a
 * correct replacement of its target.
 *
 * Method: usage `failer TARGET NEWFILE`. Renames the name "missing",
 * which does not exist, 500 times (each fails with ENOENT), then
 * replaces TARGET atomically: NEWFILE's content written to TARGET.tmp,
 * fsync, close, then close of the same descriptor 500 times more (each
 * fails with EBADF), rename over TARGET, fsync of the directory. The
 * failed calls are expected and ignored; every other error is reported
 * and ends the run with status 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int fail(const char *call, const char *path)
{
	fprintf(stderr, "failer: %s '%s': %s\n", call, path, strerror(errno));
	return 1;
}

int main(int argc, char **argv)
{
	static char data[1 << 16];
	char tmp[4096];
	ssize_t len, n = 0;
	int fd;

	if (argc != 3) {
		fprintf(stderr, "usage: failer TARGET NEWFILE\n");
		return 2;
	}
	for (int i = 0; i < 500; i++)
		if (rename("missing", "elsewhere") == 0)
			return fail("rename", "missing");
	fd = open(argv[2], O_RDONLY);
	if (fd < 0)
		return fail("open", argv[2]);
	len = read(fd, data, sizeof(data));
	if (len < 0)
		return fail("read", argv[2]);
	close(fd);
	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[1]);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0)
		return fail("open", tmp);
	for (ssize_t off = 0; off < len; off += n) {
		n = write(fd, data + off, len - off);
		if (n < 0 && errno == EINTR) {
			n = 0;
			continue;
		}
		if (n <= 0) {
			if (n == 0)
				errno = ENOSPC;
			unlink(tmp);
			return fail("write", tmp);
		}
	}
	if (fsync(fd) < 0) {
		unlink(tmp);
		return fail("fsync", tmp);
	}
	if (close(fd) < 0) {
		unlink(tmp);
		return fail("close", tmp);
	}
	for (int i = 0; i < 500; i++)
		if (close(fd) == 0)
			return fail("close", tmp);
	if (rename(tmp, argv[1]) < 0) {
		unlink(tmp);
		return fail("rename", tmp);
	}
	fd = open(".", O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return fail("open", ".");
	if (fsync(fd) < 0)
		return fail("fsync", ".");
	if (close(fd) < 0)
		return fail("close", ".");
	return 0;
}
