/*
 * eintrprobe: which writes a caught signal interrupts with EINTR.
 *
 * Method: usage `eintrprobe file PATH|pipe restart|norestart`. SIGALRM is
 * caught by a handler that counts it, installed with SA_RESTART or
 * without, and an interval timer sends it every 50 microseconds while
 * the probe writes: 64 MiB in 1 MiB writes to the regular file PATH, or
 * 8 MiB in 1 MiB writes to a pipe whose reader, a child, waits 200 ms
 * before it drains it (so that writes block). A write that fails with
 * EINTR is counted and made again; any other failure ends the probe
 * with status 1. It prints `signals=N eintr=M` and exits 0.
 *
 * It checks what workloads/variants/eintr-fatal.c's header says of
 * signal(7): a write to a local regular file is not interrupted by a
 * signal the program survives; one that blocks on a pipe is, unless the
 * handler has SA_RESTART.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHUNK (1 << 20)

static volatile sig_atomic_t signals;   /* SIGALRMs caught */

static void on_alarm(int sig)
{
	(void)sig;
	signals++;
}

static int fail(const char *what)
{
	fprintf(stderr, "eintrprobe: %s: %s\n", what, strerror(errno));
	return 1;
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	struct itimerval every = { { 0, 50 }, { 0, 50 } };
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	static char buf[CHUNK];
	int pipe_mode, fds[2], fd, restart;
	long eintr = 0, chunks;
	pid_t reader = -1;

	if (argc != 4 && !(argc == 3 && !strcmp(argv[1], "pipe"))) {
		fprintf(stderr, "usage: eintrprobe file PATH|pipe restart|norestart\n");
		return 2;
	}
	pipe_mode = !strcmp(argv[1], "pipe");
	restart = !strcmp(argv[argc - 1], "restart");
	memset(buf, 'x', sizeof(buf));

	if (pipe_mode) {
		if (pipe(fds) < 0)
			return fail("pipe");
		reader = fork();
		if (reader < 0)
			return fail("fork");
		if (reader == 0) {
			close(fds[1]);
			usleep(200000);
			while (read(fds[0], buf, sizeof(buf)) > 0)
				;
			_exit(0);
		}
		close(fds[0]);
		fd = fds[1];
		chunks = 8;
	} else {
		fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			return fail(argv[2]);
		chunks = 64;
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = restart ? SA_RESTART : 0;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGALRM, &sa, NULL) < 0)
		return fail("sigaction");
	if (setitimer(ITIMER_REAL, &every, NULL) < 0)
		return fail("setitimer");

	while (chunks-- > 0) {
		size_t done = 0;

		while (done < sizeof(buf)) {
			ssize_t n = write(fd, buf + done, sizeof(buf) - done);

			if (n < 0 && errno == EINTR) {
				eintr++;
				continue;
			}
			if (n < 0)
				return fail("write");
			done += (size_t)n;
		}
	}
	setitimer(ITIMER_REAL, &off, NULL);
	if (close(fd) < 0)
		return fail("close");
	if (reader > 0 && waitpid(reader, NULL, 0) < 0)
		return fail("waitpid");
	printf("signals=%ld eintr=%ld\n", (long)signals, eintr);
	return 0;
}
