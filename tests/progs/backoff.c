/*
 * backoff: replace a file, and answer a failed write in one of three ways
 * (tests/test_findings.py: a run past its time limit, told apart by what
 * it is doing).
 *
 * Method: backoff MODE TARGET NEW [SECONDS...] writes NEW to TARGET.tmp,
 * fsyncs it, renames it over TARGET and fsyncs the directory. When a
 * write fails, by MODE:
 *
 *   backoff  sleep each of SECONDS in turn, writing again after each
 *            (Berkeley DB's db_load backs off 2, 4 and 6 seconds on
 *            ENOSPC), the odd ones with nanosleep, the even ones with
 *            select on no descriptor (Berkeley DB's way); then say so and
 *            exit 2. Correct, if slow
 *   spin     write again at once, for ever. Defect: a full disk stays
 *            full
 *   block    wait for a signal that never comes (pause). Defect: it
 *            never ends
 *   churn    after sleeping SECONDS once (if given), write again after
 *            an open and a close of ".", for ever: no single failing
 *            call, as zip's loop (docs/benchmarks.md), so a look at
 *            the time limit sees a run at work, not a spin. Defect: a
 *            full disk stays full
 *
 * Any other failure is said on stderr, exit 1. Exit status: 0 replaced,
 * 1 failed, 2 gave up after backing off (or usage).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <unistd.h>

static int fail(const char *call, const char *path, int status)
{
	fprintf(stderr, "backoff: %s '%s': %s\n", call, path, strerror(errno));
	return status;
}

int main(int argc, char **argv)
{
	char tmp[4096], buf[65536];
	ssize_t n, len = 0;
	int in, fd, next = 4;

	if (argc < 4 || (strcmp(argv[1], "backoff") && strcmp(argv[1], "spin") &&
			 strcmp(argv[1], "block") && strcmp(argv[1], "churn"))) {
		fprintf(stderr, "usage: backoff backoff|spin|block|churn TARGET "
			"NEW [SECONDS...]\n");
		return 2;
	}
	in = open(argv[3], O_RDONLY);
	if (in < 0)
		return fail("open", argv[3], 1);
	while ((n = read(in, buf + len, sizeof(buf) - (size_t)len)) > 0)
		len += n;
	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[2]);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0)
		return fail("open", tmp, 1);
	while (write(fd, buf, (size_t)len) != len) {
		if (!strcmp(argv[1], "spin"))
			continue;		/* BUG: retries for ever */
		if (!strcmp(argv[1], "block")) {
			pause();		/* BUG: waits for ever */
			continue;
		}
		if (!strcmp(argv[1], "churn")) {
			int dir;

			if (next < argc)
				sleep((unsigned)atoi(argv[next++]));
			dir = open(".", O_RDONLY | O_DIRECTORY);
			if (dir >= 0)
				close(dir);
			continue;		/* BUG: retries for ever */
		}
		if (next >= argc)
			return fail("write", tmp, 2);
		if ((next - 4) % 2 == 0) {
			sleep((unsigned)atoi(argv[next++]));
		} else {
			struct timeval tv = { atoi(argv[next++]), 0 };

			select(0, NULL, NULL, NULL, &tv);
		}
		if (lseek(fd, 0, SEEK_SET) < 0)
			return fail("lseek", tmp, 1);
	}
	if (fsync(fd) < 0)
		return fail("fsync", tmp, 1);
	if (close(fd) < 0)
		return fail("close", tmp, 1);
	if (rename(tmp, argv[2]) < 0)
		return fail("rename", tmp, 1);
	fd = open(".", O_RDONLY | O_DIRECTORY);
	if (fd < 0 || fsync(fd) < 0)
		return fail("fsync", ".", 1);
	close(fd);
	return 0;
}
