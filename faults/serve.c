/*
 * The fork server: one exec of a program, many runs of it.
 *
 * A sweep runs the same command line thousands of times, and most of a
 * short run's cost is exec and the dynamic loader: mapping the program and
 * its libraries, relocating libfiu's hundreds of wrappers and ours. With
 * CRASHCHECK_SERVE=FD set, the library stops the program where it would
 * first read its settings (our initialization, which comes before main and
 * before the program's own constructors, or at the first call we wrap if an
 * earlier constructor makes one) and serves runs over the socket FD. For
 * each request it forks; the child takes the request's descriptors as its
 * stdin, stdout and stderr, its working directory and its CRASHCHECK_*
 * variables, starts a session of its own, and goes on exactly as a freshly
 * exec'd program would go on from that point: it reads the settings, and
 * main runs. Nothing before the fork is counted or recorded, so the plan
 * sees the same calls in the same order.
 *
 * The protocol (SOCK_SEQPACKET, one message per datagram):
 *
 *   server -> harness   "ready PID"            once, at the start
 *                       "refuse REASON"        instead, and the server exits
 *   harness -> server   "CWD\0VAR=VALUE\0VAR\0..."   a run: the directory,
 *                       then variables to set (NAME=VALUE) or unset (NAME),
 *                       with three descriptors (stdin, stdout, stderr)
 *   server -> harness   "pid PID"              the run's process
 *                       "exit PID STATUS"      it ended (a wait status)
 *                       "fail REASON"          instead of both: no fork
 *
 * A variable CRASHCHECK_CGROUP=DIR in a request is not the program's: the
 * child moves itself into the cgroup DIR first, before the program can
 * start anything, so that all it starts is in the harness's box for the
 * run (harness/engine/contain.py).
 *
 * End of file on the socket (the harness is done with this program, or
 * gone) ends the server; during a run it first kills the run's process
 * group, which must not outlive a harness that was interrupted before it
 * learnt the run's pid. The server dies with the process that started it
 * (PR_SET_PDEATHSIG), even stopped. A program the server cannot stand for is refused:
 * one with a second thread already (a fork keeps only the calling thread).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cc.h"

#define REQUEST_MAX (64 * 1024)

static int serve_fd = -1;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void say(const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(msg))
		n = sizeof(msg) - 1;
	/* the harness is gone when this fails: the next receive ends us */
	while (send(serve_fd, msg, n, MSG_NOSIGNAL) < 0 && errno == EINTR)
		;
}

/* threads of this process, from /proc/self/status; -1 = unknown */
static int thread_count(void)
{
	char buf[4096], *p;
	ssize_t n;
	int fd = cc_sys_open("/proc/self/status", O_RDONLY | O_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	cc_sys_close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strstr(buf, "\nThreads:");
	return p ? atoi(p + strlen("\nThreads:")) : -1;
}

/* move this process into the cgroup directory DIR */
static void join_cgroup(const char *dir)
{
	char path[4096];
	int fd, n = snprintf(path, sizeof(path), "%s/cgroup.procs", dir);

	if (n < 0 || (size_t)n >= sizeof(path))
		cc_die("fork server: cgroup path too long: %s", dir);
	fd = cc_sys_open(path, O_WRONLY | O_CLOEXEC, 0);
	if (fd < 0)
		cc_die("fork server: open '%s': %s", path, strerror(errno));
	if (syscall(SYS_write, fd, "0", 1) != 1)
		cc_die("fork server: join cgroup '%s': %s", dir, strerror(errno));
	cc_sys_close(fd);
}

/*
 * In the child: take the request's descriptors and settings. A request the
 * child cannot follow ends it with status 2 and a line on its stderr,
 * which the harness reports as the run's (127, silently, when not even
 * the descriptors can be put in place).
 */
static void become_run(char *req, size_t len, int fds[3])
{
	char *p = req, *end = req + len;
	const char *cwd = req;

	/* above 2 first, so that no dup2 below overwrites another's source
	 * (only possible if a constructor closed the server's stdio) */
	for (int i = 0; i < 3; i++) {
		if (fds[i] <= 2 && (fds[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 3)) < 0)
			_exit(127);
	}
	for (int i = 0; i < 3; i++) {
		if (dup2(fds[i], i) < 0)
			_exit(127);
	}
	for (int i = 0; i < 3; i++)
		close(fds[i]);
	close(serve_fd);
	serve_fd = -1;
	/* first: nothing of the run may start outside its box */
	for (p += strlen(p) + 1; p < end; p += strlen(p) + 1) {
		if (!strncmp(p, "CRASHCHECK_CGROUP=", strlen("CRASHCHECK_CGROUP=")))
			join_cgroup(p + strlen("CRASHCHECK_CGROUP="));
	}
	p = req;
	if (setsid() < 0)
		cc_die("fork server: setsid: %s", strerror(errno));
	if (chdir(cwd) < 0)
		cc_die("fork server: chdir '%s': %s", cwd, strerror(errno));
	unsetenv("CRASHCHECK_SERVE");
	for (p += strlen(p) + 1; p < end; p += strlen(p) + 1) {
		char *eq = strchr(p, '=');

		if (!*p || !strncmp(p, "CRASHCHECK_CGROUP=", strlen("CRASHCHECK_CGROUP=")))
			continue;
		if (eq) {
			*eq = '\0';
			if (setenv(p, eq + 1, 1) < 0)
				cc_die("fork server: setenv %s: %s", p, strerror(errno));
		} else if (unsetenv(p) < 0) {
			cc_die("fork server: unsetenv %s: %s", p, strerror(errno));
		}
	}
}

/*
 * Wait for the run PID to end; its wait status. The harness sends nothing
 * during a run: the socket turning readable means it is gone (end of
 * file), and then the run's group is killed and the server ends. Without
 * pidfd_open (Linux before 5.3) the wait is a plain waitpid.
 */
static int wait_run(pid_t pid)
{
	int status, pfd = syscall(SYS_pidfd_open, pid, 0);
	pid_t w;

	if (pfd >= 0) {
		struct pollfd p[2] = { { pfd, POLLIN, 0 }, { serve_fd, POLLIN, 0 } };

		for (;;) {
			int n = poll(p, 2, -1);

			if (n < 0 && errno != EINTR)
				break;
			if (n > 0 && p[0].revents)
				break;
			if (n > 0 && p[1].revents) {
				kill(-pid, SIGKILL);
				kill(pid, SIGKILL);
				while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
					;
				_exit(0);
			}
		}
		close(pfd);
	}
	do
		w = waitpid(pid, &status, 0);
	while (w < 0 && errno == EINTR);
	return w < 0 ? 127 << 8 : status;
}

/* receive one request: its length, 0 at end of file; fds[] get 3 descriptors */
static ssize_t receive(char *req, size_t size, int fds[3])
{
	union {
		char buf[CMSG_SPACE(3 * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { req, size - 1 };
	struct msghdr mh = { 0 };
	struct cmsghdr *cm;
	ssize_t n;
	int got = 0;

	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = ctl.buf;
	mh.msg_controllen = sizeof(ctl.buf);
	do
		n = recvmsg(serve_fd, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return n < 0 ? -1 : 0;
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
			int k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);

			for (int i = 0; i < k; i++) {
				int fd;

				memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
				if (got < 3)
					fds[got++] = fd;
				else
					close(fd);
			}
		}
	}
	if (got != 3 || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		for (int i = 0; i < got; i++)
			close(fds[i]);
		errno = EPROTO;
		return -1;
	}
	req[n] = '\0';
	return n;
}

void cc_serve(void)
{
	static char req[REQUEST_MAX];
	const char *v = getenv("CRASHCHECK_SERVE");
	char *end;
	long fd;
	int threads;

	if (!v)
		return;
	fd = strtol(v, &end, 10);
	if (!*v || *end || fd < 0 || fd > 1 << 20 || fcntl((int)fd, F_GETFD) < 0)
		cc_die("CRASHCHECK_SERVE '%s' is not an open descriptor", v);
	serve_fd = (int)fd;
	/* a harness killed outright takes its server along, even a stopped
	 * one (end of file on the socket would need it running) */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	threads = thread_count();
	if (threads < 0) {
		say("refuse cannot count the program's threads (no /proc?)");
		_exit(0);
	}
	if (threads != 1) {
		say("refuse the program has %d threads before main; a fork keeps one",
		    threads);
		_exit(0);
	}
	say("ready %ld", (long)syscall(SYS_getpid));
	for (;;) {
		int fds[3];
		ssize_t n = receive(req, sizeof(req), fds);
		pid_t pid;

		if (n <= 0)
			_exit(n < 0 ? 2 : 0);
		pid = fork();
		if (pid == 0) {
			become_run(req, (size_t)n, fds);
			return;
		}
		for (int i = 0; i < 3; i++)
			close(fds[i]);
		if (pid < 0) {
			/* the run did not start; the harness runs it another way */
			say("fail fork: %s", strerror(errno));
			continue;
		}
		say("pid %ld", (long)pid);
		say("exit %ld %d", (long)pid, wait_run(pid));
	}
}
