/*
 * lingerer: a correct writer that leaves a child behind, which ends on
 * its own a little later (as rsync's processes do after an error) or
 * never.
 *
 * Method: usage `lingerer MS MARKER TARGET NEWFILE`. Replaces TARGET
 * atomically (NEWFILE's content written to TARGET.tmp, fsync, close,
 * rename, fsync of the directory), then forks a child and exits 0
 * without waiting for it. The child sleeps MS milliseconds and exits 0;
 * with MS < 0 it sleeps until it is killed. MARKER is not used: it is in
 * both processes' command lines, for a test to find them by. Every error
 * is reported and ends the run with status 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int fail(const char *call, const char *path)
{
	fprintf(stderr, "lingerer: %s '%s': %s\n", call, path, strerror(errno));
	return 1;
}

int main(int argc, char **argv)
{
	static char data[1 << 16];
	char tmp[4096];
	ssize_t len, n, done = 0;
	long ms;
	int fd;

	if (argc != 5) {
		fprintf(stderr, "usage: lingerer MS MARKER TARGET NEWFILE\n");
		return 2;
	}
	ms = strtol(argv[1], NULL, 10);
	fd = open(argv[4], O_RDONLY);
	if (fd < 0)
		return fail("open", argv[4]);
	len = read(fd, data, sizeof(data));
	if (len < 0)
		return fail("read", argv[4]);
	close(fd);
	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[3]);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return fail("open", tmp);
	while (done < len) {
		n = write(fd, data + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return fail("write", tmp);
		done += n;
	}
	if (fsync(fd) < 0)
		return fail("fsync", tmp);
	if (close(fd) < 0)
		return fail("close", tmp);
	if (rename(tmp, argv[3]) < 0)
		return fail("rename", tmp);
	fd = open(".", O_RDONLY | O_DIRECTORY);
	if (fd < 0 || fsync(fd) < 0)
		return fail("fsync", ".");
	close(fd);

	switch (fork()) {
	case -1:
		return fail("fork", argv[0]);
	case 0:
		if (ms < 0) {
			for (;;)
				pause();
		} else {
			struct timespec ts = { ms / 1000, ms % 1000 * 1000000L };

			while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
				;
		}
		_exit(0);
	}
	return 0;
}
