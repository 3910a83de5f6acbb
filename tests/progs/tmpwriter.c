/*
 * tmpwriter: writes its new content to a temporary file in $TMPDIR (as
 * sponge does), then moves it over its target.
 *
 * Method: usage `tmpwriter TARGET NEWFILE`. mkstemp(3) makes
 * $TMPDIR/tmpwriter.XXXXXX (/tmp without TMPDIR); NEWFILE's content is
 * written there and fsynced, then renamed over TARGET. Where the rename
 * fails with EXDEV (the temporary directory is on another file system),
 * the content is written over TARGET in place instead, fsynced, and the
 * temporary file removed. Every error is reported and ends the run with
 * status 1 (the temporary file is removed first). It also writes
 * $HOME/.tmpwriter-ran, when HOME is set, as programs keep state there.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char data[1 << 20];
static ssize_t len;

static int fail(const char *call, const char *path)
{
	fprintf(stderr, "tmpwriter: %s '%s': %s\n", call, path, strerror(errno));
	return 1;
}

static int put(int fd, const char *path)
{
	for (ssize_t off = 0, n; off < len; off += n) {
		n = write(fd, data + off, len - off);
		if (n < 0 && errno == EINTR) {
			n = 0;
			continue;
		}
		if (n <= 0) {
			if (n == 0)
				errno = ENOSPC;
			return fail("write", path);
		}
	}
	if (fsync(fd) < 0)
		return fail("fsync", path);
	return 0;
}

int main(int argc, char **argv)
{
	const char *dir = getenv("TMPDIR"), *home = getenv("HOME");
	char tmp[4096];
	int fd, rc;

	if (argc != 3) {
		fprintf(stderr, "usage: tmpwriter TARGET NEWFILE\n");
		return 2;
	}
	if (home && *home) {
		snprintf(tmp, sizeof(tmp), "%s/.tmpwriter-ran", home);
		fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0)
			close(fd);
	}
	fd = open(argv[2], O_RDONLY);
	if (fd < 0 || (len = read(fd, data, sizeof(data))) < 0)
		return fail("read", argv[2]);
	close(fd);
	snprintf(tmp, sizeof(tmp), "%s/tmpwriter.XXXXXX", dir && *dir ? dir : "/tmp");
	fd = mkstemp(tmp);
	if (fd < 0)
		return fail("mkstemp", tmp);
	rc = put(fd, tmp);
	if (!rc && close(fd) < 0)
		rc = fail("close", tmp);
	if (rc) {
		unlink(tmp);
		return rc;
	}
	if (rename(tmp, argv[1]) == 0)
		return 0;
	if (errno != EXDEV) {
		rc = fail("rename", tmp);
		unlink(tmp);
		return rc;
	}
	fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		rc = fail("open", argv[1]);
	} else {
		rc = put(fd, argv[1]);
		if (close(fd) < 0 && !rc)
			rc = fail("close", argv[1]);
	}
	unlink(tmp);
	return rc;
}
