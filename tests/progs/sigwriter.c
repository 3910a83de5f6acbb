/*
 * sigwriter: replace a file, giving up on an interrupted write, under one
 * of three signal dispositions (tests/test_findings.py: whether an
 * injected EINTR could happen where the program ran).
 *
 * Method: sigwriter MODE TARGET NEW writes NEW to TARGET.tmp, fsyncs it,
 * renames it over TARGET and fsyncs the directory, each failure said on
 * stderr and exit 1. First, by MODE:
 *
 *   none       no signal handler: Linux interrupts no write to a local
 *              regular file, so an EINTR there cannot happen
 *   restart    a SIGALRM handler installed with SA_RESTART: a signal
 *              restarts the write, and no EINTR can happen either
 *   interrupt  a SIGALRM handler installed without SA_RESTART: on a file
 *              that can block (NFS with intr, FUSE) a signal makes the
 *              write fail with EINTR
 *
 * Defect: a write that fails with EINTR is given up on (exit 1) instead
 * of retried.
 *
 * Exit status: 0 replaced, 1 failed (and said why), 2 usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void on_alarm(int sig)
{
	(void)sig;
}

static int fail(const char *call, const char *path)
{
	fprintf(stderr, "sigwriter: %s '%s': %s\n", call, path, strerror(errno));
	return 1;
}

int main(int argc, char **argv)
{
	char tmp[4096], buf[65536];
	struct sigaction sa;
	ssize_t n;
	int in, fd;

	if (argc != 4 || (strcmp(argv[1], "none") && strcmp(argv[1], "restart") &&
			  strcmp(argv[1], "interrupt"))) {
		fprintf(stderr, "usage: sigwriter none|restart|interrupt TARGET NEW\n");
		return 2;
	}
	if (strcmp(argv[1], "none")) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_alarm;
		sa.sa_flags = strcmp(argv[1], "restart") ? 0 : SA_RESTART;
		if (sigaction(SIGALRM, &sa, NULL) < 0)
			return fail("sigaction", "SIGALRM");
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[2]);
	in = open(argv[3], O_RDONLY);
	if (in < 0)
		return fail("open", argv[3]);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0)
		return fail("open", tmp);
	while ((n = read(in, buf, sizeof(buf))) > 0) {
		char *p = buf;

		while (n > 0) {
			ssize_t w = write(fd, p, (size_t)n);

			if (w < 0)	/* BUG: EINTR given up on */
				return fail("write", tmp);
			p += w;
			n -= w;
		}
	}
	if (n < 0)
		return fail("read", argv[3]);
	if (fsync(fd) < 0)
		return fail("fsync", tmp);
	if (close(fd) < 0)
		return fail("close", tmp);
	if (rename(tmp, argv[2]) < 0)
		return fail("rename", tmp);
	fd = open(".", O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return fail("open", ".");
	if (fsync(fd) < 0)
		return fail("fsync", ".");
	close(fd);
	return 0;
}
