/*
 * retrier: replace TARGET with NEWFILE's content through TARGET.tmp, a
 * byte at a time when asked, retrying a failed write a fixed number of
 * times: the program whose trace outgrows crashcheck's trace limit
 * (--trace-limit, issue 34) while its run still ends on its own.
 *
 * Method: read NEWFILE, create TARGET.tmp, write the content (in one
 * write, or with -b in one write per byte), fsync it, rename it over
 * TARGET, fsync the directory, exit 0. A write that fails is tried again,
 * up to RETRIES times (200000, or N with -n N): a lasting EIO makes 200000 failed calls,
 * each a line of the trace, and then the program says so and exits 1
 * before its time limit. Every error is reported.
 *
 * Its tests check what the harness says of a trace it cut, not a defect:
 * retrying EIO is no repair, but the program reports it in the end.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long retries = 200000;

static int write_retried(int fd, const char *buf, size_t len)
{
	for (long tries = 0;; tries++) {
		ssize_t n = write(fd, buf, len);

		if (n == (ssize_t)len)
			return 0;
		if (n >= 0)
			errno = EIO;	/* a short write: no partial state wanted */
		if (tries == retries)
			return -1;
	}
}

int main(int argc, char **argv)
{
	static char data[1 << 16];
	char tmp[4096], dir[4096], *slash;
	int bytewise = 0, in, fd, dfd;
	ssize_t size;

	if (argc > 2 && !strcmp(argv[1], "-n")) {
		retries = atol(argv[2]);
		argv += 2;
		argc -= 2;
	}
	if (argc > 1 && !strcmp(argv[1], "-b")) {
		bytewise = 1;
		argv++;
		argc--;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: retrier [-n RETRIES] [-b] NEWFILE TARGET\n");
		return 2;
	}
	in = open(argv[1], O_RDONLY);
	if (in < 0 || (size = read(in, data, sizeof(data))) < 0) {
		fprintf(stderr, "retrier: read '%s': %s\n", argv[1], strerror(errno));
		return 1;
	}
	close(in);
	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[2]);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		fprintf(stderr, "retrier: open '%s': %s\n", tmp, strerror(errno));
		return 1;
	}
	for (ssize_t off = 0; off < size; off += bytewise ? 1 : size) {
		if (write_retried(fd, data + off, bytewise ? 1 : (size_t)size) < 0) {
			fprintf(stderr, "retrier: write '%s': %s\n", tmp, strerror(errno));
			return 1;
		}
	}
	if (fsync(fd) < 0 || close(fd) < 0) {
		fprintf(stderr, "retrier: fsync '%s': %s\n", tmp, strerror(errno));
		return 1;
	}
	if (rename(tmp, argv[2]) < 0) {
		fprintf(stderr, "retrier: rename '%s': %s\n", tmp, strerror(errno));
		return 1;
	}
	snprintf(dir, sizeof(dir), "%s", argv[2]);
	slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	else
		strcpy(dir, ".");
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	if (dfd < 0 || fsync(dfd) < 0 || close(dfd) < 0) {
		fprintf(stderr, "retrier: fsync '%s': %s\n", dir, strerror(errno));
		return 1;
	}
	return 0;
}
