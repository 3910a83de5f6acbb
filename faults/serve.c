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
 * The harness starts the server in a cgroup of its own, where every run
 * is born: the run's box (harness/engine/contain.py), joined with no
 * move. A variable CRASHCHECK_VIEW=STEPS in a request is not the
 * program's: the child makes that view of the machine (confine.c)
 * before it takes the request's directory, so that the program starts
 * confined, as the confine helper would start it.
 *
 * End of file on the socket (the harness is done with this program, or
 * gone) ends the server; during a run it first kills the run's process
 * group, which must not outlive a harness that was interrupted before it
 * learnt the run's pid. The server dies with the process that started it
 * (PR_SET_PDEATHSIG), even stopped. A program the server cannot stand for is refused:
 * one with a second thread already (a fork keeps only the calling thread).
 *
 * The system-call supervisor serves with the same protocol and these
 * pieces (cc_serve_*), but runs each request in its own process instead
 * of a fork (faults/syscall/supervise.c). Its "exit PID STATUS" may end
 * in " last": the server ends after it, and the harness starts another.
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
#include "confine.h"

static int serve_fd = -1;

/*
 * The environment main is given. A program's main may take its variables
 * from its third argument (bash builds its own from it, and its children's
 * from that), which is the array the kernel laid out, not `environ` once
 * setenv has had to grow it; and a program may define setenv and unsetenv
 * of its own (bash's keep its shell's variables, and before its main do
 * nothing). So a run's process builds its environment itself
 * (take_environment) and writes it into that array; the harness leaves
 * room in it with CRASHCHECK_SLOT* variables, which no run keeps.
 */
extern char **environ;
static char **main_env;
static size_t main_env_room;
#define SLOT_PREFIX "CRASHCHECK_SLOT"
#define RUN_ENV_MAX 4096

void cc_serve_say(const char *fmt, ...)
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

#define VIEW_VAR CF_VAR "="

bool cc_serve_stdio(int fds[3])
{
	bool ok = true;

	/* above 2 first, so that no dup2 below overwrites another's source
	 * (only possible if a constructor closed the server's stdio) */
	for (int i = 0; i < 3; i++) {
		int hi = fds[i] <= 2 ? fcntl(fds[i], F_DUPFD_CLOEXEC, 3) : fds[i];

		if (hi != fds[i])
			close(fds[i]);
		fds[i] = hi;
		ok = ok && hi >= 0;
	}
	for (int i = 0; i < 3; i++)
		ok = ok && dup2(fds[i], i) >= 0;
	for (int i = 0; i < 3; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return ok;
}

/* the value of the request's variable NAME= ("CRASHCHECK_VIEW="), or NULL */
static const char *request_var(char *req, size_t len, const char *name)
{
	char *end = req + len;

	for (char *p = req + strlen(req) + 1; p < end; p += strlen(p) + 1)
		if (!strncmp(p, name, strlen(name)))
			return p + strlen(name);
	return NULL;
}

const char *cc_serve_view(char *req, size_t len)
{
	return request_var(req, len, VIEW_VAR);
}

bool cc_serve_settings(char *req, size_t len, char *err, size_t size)
{
	char *p = req, *end = req + len;

	if (chdir(req) < 0) {
		snprintf(err, size, "chdir '%s': %s", req, strerror(errno));
		return false;
	}
	unsetenv("CRASHCHECK_SERVE");
	for (p += strlen(p) + 1; p < end; p += strlen(p) + 1) {
		char *eq = strchr(p, '=');
		int rc;

		if (!*p || !strncmp(p, VIEW_VAR, strlen(VIEW_VAR)))
			continue;
		if (eq) {
			*eq = '\0';
			rc = setenv(p, eq + 1, 1);
			*eq = '=';
		} else {
			rc = unsetenv(p);
		}
		if (rc < 0) {
			snprintf(err, size, "%s %s: %s", eq ? "setenv" : "unsetenv",
				 p, strerror(errno));
			return false;
		}
	}
	return true;
}

/* whether ENTRY ("NAME=VALUE", or "NAME" in a request) is of variable NAME
 * (its first N characters) */
static bool of_name(const char *entry, const char *name, size_t n)
{
	return !strncmp(entry, name, n) && (entry[n] == '=' || entry[n] == '\0');
}

/*
 * In a run's process: its environment, the server's without the server's
 * own variables and with the request's set (NAME=VALUE) or unset (NAME),
 * in the array main will be given (above). The entries are the request's
 * own strings, which stay: REQ is cc_serve's, and this process runs once.
 */
static bool take_environment(char *req, size_t len, char *err, size_t size)
{
	static char *run_env[RUN_ENV_MAX + 1];
	char *p, *end = req + len;
	size_t n = 0;

	for (char **e = environ; e && *e; e++) {
		if (of_name(*e, "CRASHCHECK_SERVE", strlen("CRASHCHECK_SERVE")) ||
		    !strncmp(*e, SLOT_PREFIX, strlen(SLOT_PREFIX)))
			continue;
		if (n == RUN_ENV_MAX)
			goto full;
		run_env[n++] = *e;
	}
	for (p = req + strlen(req) + 1; p < end; p += strlen(p) + 1) {
		size_t k = strcspn(p, "="), i, j;

		if (!*p || !strncmp(p, VIEW_VAR, strlen(VIEW_VAR)))
			continue;
		for (i = j = 0; i < n; i++)
			if (!of_name(run_env[i], p, k))
				run_env[j++] = run_env[i];
		n = j;
		if (p[k] == '=') {
			if (n == RUN_ENV_MAX)
				goto full;
			run_env[n++] = p;
		}
	}
	run_env[n] = NULL;
	if (!main_env) {
		environ = run_env;
		return true;
	}
	if (n > main_env_room) {
		snprintf(err, size, "the run's %zu variables do not fit in the "
			 "%zu the program started with", n, main_env_room);
		return false;
	}
	memcpy(main_env, run_env, (n + 1) * sizeof(*run_env));
	environ = main_env;
	return true;
full:
	snprintf(err, size, "a run of more than %d variables", RUN_ENV_MAX);
	return false;
}

/*
 * In the child: take the request's descriptors and settings. A request the
 * child cannot follow ends it with status 2 and a line on its stderr,
 * which the harness reports as the run's (127, silently, when not even
 * the descriptors can be put in place).
 */
static void become_run(char *req, size_t len, int fds[3])
{
	const char *view;
	char err[256];

	if (!cc_serve_stdio(fds))
		_exit(127);
	close(serve_fd);
	serve_fd = -1;
	if (setsid() < 0)
		cc_die("fork server: setsid: %s", strerror(errno));
	view = cc_serve_view(req, len);
	if (view) {
		static struct cf_op ops[CF_MAX_OPS];
		const struct cf_op *failed = NULL;
		char *steps = strdup(view);
		int n = steps ? cf_parse(steps, ops, CF_MAX_OPS) : -1;
		long rc = n < 0 ? -EINVAL : cf_apply(ops, n, &failed);

		if (rc < 0)
			cc_die("%s", cf_message(err, sizeof(err), failed, (int)-rc));
		free(steps);
	}
	if (chdir(req) < 0)
		cc_die("fork server: chdir '%s': %s", req, strerror(errno));
	if (!take_environment(req, len, err, sizeof(err)))
		cc_die("fork server: %s", err);
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

ssize_t cc_serve_receive(char *req, size_t size, int fds[3])
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

int cc_serve_open(void)
{
	const char *v = getenv("CRASHCHECK_SERVE");
	char *end;
	long fd;

	if (!v)
		return -1;
	fd = strtol(v, &end, 10);
	if (!*v || *end || fd < 0 || fd > 1 << 20 || fcntl((int)fd, F_GETFD) < 0)
		cc_die("CRASHCHECK_SERVE '%s' is not an open descriptor", v);
	serve_fd = (int)fd;
	/* a harness killed outright takes its server along, even a stopped
	 * one (end of file on the socket would need it running) */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	return serve_fd;
}

void cc_serve(void)
{
	static char req[CC_SERVE_REQUEST_MAX];
	int threads;

	if (cc_serve_open() < 0)
		return;
	/* before anything of a run's changes it: the array main will get */
	main_env = environ;
	while (main_env && main_env[main_env_room])
		main_env_room++;
	threads = thread_count();
	if (threads < 0) {
		cc_serve_say("refuse cannot count the program's threads (no /proc?)");
		_exit(0);
	}
	if (threads != 1) {
		cc_serve_say("refuse the program has %d threads before main; a fork keeps one",
		    threads);
		_exit(0);
	}
	cc_serve_say("ready %ld", (long)syscall(SYS_getpid));
	for (;;) {
		int fds[3];
		ssize_t n = cc_serve_receive(req, sizeof(req), fds);
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
			cc_serve_say("fail fork: %s", strerror(errno));
			continue;
		}
		cc_serve_say("pid %ld", (long)pid);
		cc_serve_say("exit %ld %d", (long)pid, wait_run(pid));
	}
}
