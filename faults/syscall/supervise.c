/*
 * supervise: the system-call backend. Runs a program under a seccomp
 * filter that traps its file-related system calls, and a ptrace
 * supervisor that counts, faults and records them with the plan, the
 * settings and the trace format of libcrashcheck.so.
 *
 *   CRASHCHECK_PLAN=... CRASHCHECK_TRACE=... supervise PROGRAM [ARG...]
 *
 * Method. The supervisor forks the program's process, attaches to it
 * (PTRACE_SEIZE, following every fork, vfork, clone and exec), and the
 * child loads a filter built with libseccomp before it execs the program:
 * each system call of calls.def's SYSCALL rows returns SECCOMP_RET_TRACE,
 * every other one is allowed without a stop. A trapped call stops its
 * thread (PTRACE_EVENT_SECCOMP) before the kernel runs it; the supervisor
 * counts it, decides the plan's rule, and either lets it run, resuming
 * with PTRACE_SYSCALL to stop again when it returns (the trace line and
 * the snapshots are made there), or with PTRACE_CONT when nothing is
 * wanted of it after. Faults:
 *
 *   errno        the call is skipped (its number set to -1) and returns
 *                -errno: the kernel never runs it
 *   short        write and pwrite64, copy_file_range, sendfile and splice:
 *                the count register is lowered, and the kernel writes
 *                the first N bytes; writev, pwritev and
 *                pwritev2: the supervisor writes the first N bytes of the
 *                vector itself, through a duplicate of the thread's
 *                descriptor (pidfd_getfd: same open file, same offset), and
 *                the call is skipped with N as its result
 *   crash        SIGKILL at the seccomp stop, before the call
 *   crash-after  SIGKILL at the exit stop, after the call
 *
 * Why ptrace and not SECCOMP_RET_USER_NOTIF: a notification supervisor can
 * fail a call or let it run, but it never sees the call return (so no
 * trace line with its result, no kill after it), and it cannot change
 * what the kernel is handed (so no short write but by emulating the whole
 * call). Under ptrace the exit stop gives both, and the registers can be
 * changed at the entry. The cost is two stops per recorded call; calls
 * that are not trapped cost nothing.
 *
 * What it cannot see: stores through a shared mapping (not system calls;
 * they reach the trace through the snapshots msync, munmap, fsync and
 * the others take), and I/O submitted through io_uring (io_uring_setup is
 * trapped and traced, so the harness can say so), and calls of another
 * architecture's ABI (x32, int 0x80), which end the run.
 *
 * Every process of the program is traced. When the program's first
 * process exits, the supervisor goes on following the others for up to
 * GRACE_MS (contain.py's OUTLIVE_GRACE: rsync's processes sleep 100 ms
 * after an error before they exit), and exits as soon as none is left,
 * with the first process's status, or killed by its signal; at once when
 * that signal was SIGKILL (a planned crash). What is still running then
 * is detached, not killed: the runner's box (harness/engine/contain.py)
 * names it and kills it, as for a run of the preload; a process detached
 * with the filter on finds its file system calls refused (ENOSYS, no
 * tracer). The supervisor dies
 * with its parent, and the program's first process with the supervisor
 * (PR_SET_PDEATHSIG).
 *
 * With CRASHCHECK_SERVE set it is a server of the same command line's
 * runs (faults/serve.c's protocol, serve() below): exec'd once, it runs
 * them one after another in its own process, each program exec'd afresh.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sv.h"
#include "../confine.h"

#ifndef __x86_64__
#error "the syscall backend follows x86_64 system calls only"
#endif

#define OPTIONS (PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACEFORK |		\
		 PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE |		\
		 PTRACE_O_TRACEEXEC | PTRACE_O_TRACESECCOMP)

static const char *prog_name;	/* argv[0] of the program, for messages */
static pid_t main_pid;		/* the program's first process */
static int serve_fd = -1;	/* CRASHCHECK_SERVE's socket, -1 = not a server */

/* how long the program's other processes are followed after its first
 * one exits (contain.py's OUTLIVE_GRACE) */
#define GRACE_MS 1000
static volatile sig_atomic_t grace_over;

static void on_alarm(int sig)
{
	(void)sig;
	grace_over = 1;
}

/* SIGALRM after GRACE_MS, and every 10 ms after that: a signal that
 * lands just before waitpid() blocks does not make it wait for ever */
static void start_grace(void)
{
	struct itimerval it = { { 0, 10000 },
				{ GRACE_MS / 1000, GRACE_MS % 1000 * 1000 } };
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;	/* no SA_RESTART: waitpid says EINTR */
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGALRM, &sa, NULL) < 0 ||
	    setitimer(ITIMER_REAL, &it, NULL) < 0)
		grace_over = 1;
}

/* the handler stays: a served run's program must not inherit SIGALRM
 * ignored, and an alarm still on its way only sets grace_over, which the
 * next run starts without */
static void end_grace(void)
{
	struct itimerval none = { { 0, 0 }, { 0, 0 } };

	setitimer(ITIMER_REAL, &none, NULL);
}

/* ---- threads and processes ---------------------------------------------- */

#define TASK_HASH 256
static struct task *task_hash[TASK_HASH];

static struct task *task_find(pid_t tid)
{
	for (struct task *t = task_hash[tid % TASK_HASH]; t; t = t->next)
		if (t->tid == tid)
			return t;
	return NULL;
}

static struct proc *proc_new(pid_t tgid, const struct proc *parent)
{
	struct proc *p = calloc(1, sizeof(*p));

	if (!p)
		cc_die("supervise: out of memory");
	p->tgid = tgid;
	p->pidfd = 0;		/* opened on first use */
	p->threads = 1;
	if (parent) {
		/* a forked child holds its parent's mappings, and runs its
		 * program until it execs its own */
		p->shared_maps = parent->shared_maps;
		p->execd = parent->execd;
	}
	return p;
}

static struct task *task_add(pid_t tid, struct proc *p)
{
	struct task *t = calloc(1, sizeof(*t));

	if (!t)
		cc_die("supervise: out of memory");
	t->tid = tid;
	t->proc = p;
	t->thread = 1;
	p->tasks++;
	t->next = task_hash[tid % TASK_HASH];
	task_hash[tid % TASK_HASH] = t;
	return t;
}

void sv_pending_free(struct pending *c)
{
	if (!c)
		return;
	if (c->r.snap_fd >= 0 && !c->r.snap_fd_borrowed)
		close(c->r.snap_fd);
	free(c->iov);
	free(c->data);
	free(c->map);
	for (int i = 0; i < SV_FRAMES; i++)
		free(c->paths[i]);
	free(c);
}

static void proc_free(struct proc *p)
{
	if (p->pidfd > 0)
		close(p->pidfd);
	sv_fd_forget_all(p);
	sv_unwind_forget(p);
	free(p->fds);
	free(p);
}

static void task_drop(struct task *t)
{
	struct task **pp = &task_hash[t->tid % TASK_HASH];

	while (*pp != t)
		pp = &(*pp)->next;
	*pp = t->next;
	sv_pending_free(t->call);
	if (--t->proc->tasks == 0)
		proc_free(t->proc);
	free(t);
}

/* the start of /proc/PID/NAME in BUF (SIZE bytes), as a string; false
 * when it cannot be read */
static bool read_proc(pid_t pid, const char *name, char *buf, size_t size)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/%s", pid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return true;
}

/* the thread group of TID, from /proc (a thread whose clone event has
 * not come yet), or 0 */
static pid_t tgid_of(pid_t tid)
{
	char buf[512], *p;

	if (!read_proc(tid, "status", buf, sizeof(buf)))
		return 0;
	p = strstr(buf, "\nTgid:");
	return p ? (pid_t)strtol(p + 6, NULL, 10) : 0;
}

static struct proc *proc_of_tgid(pid_t tgid)
{
	for (int i = 0; i < TASK_HASH; i++)
		for (struct task *t = task_hash[i]; t; t = t->next)
			if (t->proc->tgid == tgid)
				return t->proc;
	return NULL;
}

/* a thread we have not met: a new one whose clone event is still to come */
static struct task *task_meet(pid_t tid)
{
	pid_t tgid = tgid_of(tid);
	struct proc *p = tgid && tgid != tid ? proc_of_tgid(tgid) : NULL;
	struct task *t = task_add(tid, p ? p : proc_new(tgid ? tgid : tid, NULL));

	t->fresh = true;
	/* a thread of a process: numbered at its clone event, still to come */
	t->thread = tgid && tgid != tid ? 0 : 1;
	return t;
}

void sv_kill(pid_t tgid)
{
	kill(tgid, SIGKILL);
}

/*
 * Every process of the program, wherever its process group is, killed,
 * and waited for until none is left (a tracee's end comes to its
 * tracer): the run ends with all of it gone, as the runner's box expects
 * of a run it did not have to clean up after. One we have not met yet (a
 * fork whose event is still to come) is a tracee too: killed at its
 * first stop.
 */
static void kill_program(void)
{
	int status;
	pid_t pid;

	for (int i = 0; i < TASK_HASH; i++)
		for (struct task *t = task_hash[i]; t; t = t->next)
			kill(t->proc->tgid, SIGKILL);
	for (;;) {
		pid = waitpid(-1, &status, __WALL);
		if (pid < 0 && errno == EINTR)
			continue;
		if (pid < 0)
			break;		/* ECHILD: none is left */
		if (WIFSTOPPED(status))
			kill(pid, SIGKILL);
	}
}

/*
 * cc_stop_run's (the run's scratch is full, or past its limit): the
 * program killed, and then cc_stop_run kills the supervisor, which the
 * harness sees as the run killed by SIGKILL. A server answers that for
 * the run itself, as its last (the run's state is left where it stopped,
 * mid-call), and ends: the harness starts another for the next run.
 */
static void stop_program(void)
{
	kill_program();
	if (serve_fd >= 0) {
		/* SIGKILL: the wait status of a process it killed */
		cc_serve_say("exit %ld %d last", (long)main_pid, SIGKILL);
		_exit(0);
	}
}

/* ---- a thread's registers and memory -------------------------------------- */

static bool get_regs(pid_t tid, struct user_regs_struct *regs)
{
	return ptrace(PTRACE_GETREGS, tid, 0, regs) == 0;
}

bool sv_set_arg(pid_t tid, int i, uint64_t value)
{
	struct user_regs_struct regs;

	if (!get_regs(tid, &regs))
		return false;
	switch (i) {
	case 0: regs.rdi = value; break;
	case 1: regs.rsi = value; break;
	case 2: regs.rdx = value; break;
	case 3: regs.r10 = value; break;
	case 4: regs.r8 = value; break;
	case 5: regs.r9 = value; break;
	default: return false;
	}
	return ptrace(PTRACE_SETREGS, tid, 0, &regs) == 0;
}

/* at a seccomp stop: number -1 skips the call, and the thread gets what
 * the return register holds (seccomp(2), SECCOMP_RET_TRACE) */
bool sv_skip(pid_t tid, long long ret)
{
	struct user_regs_struct regs;

	if (!get_regs(tid, &regs))
		return false;
	regs.orig_rax = -1;
	regs.rax = ret;
	return ptrace(PTRACE_SETREGS, tid, 0, &regs) == 0;
}

bool sv_set_return(pid_t tid, long long ret)
{
	struct user_regs_struct regs;

	if (!get_regs(tid, &regs))
		return false;
	regs.rax = ret;
	return ptrace(PTRACE_SETREGS, tid, 0, &regs) == 0;
}

long sv_read(pid_t tid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len };
	struct iovec remote = { (void *)(uintptr_t)addr, len };

	if (!len)
		return 0;
	return process_vm_readv(tid, &local, 1, &remote, 1, 0);
}

/* a NUL-terminated string at ADDR, read a page at most at a time so that
 * the end of its mapping does not fail the read; false when it cannot be
 * read whole */
bool sv_read_str(pid_t tid, uint64_t addr, char *buf, size_t size)
{
	size_t have = 0;

	while (have < size - 1) {
		size_t chunk = 4096 - ((addr + have) & 4095);
		long n;

		if (chunk > size - 1 - have)
			chunk = size - 1 - have;
		n = sv_read(tid, addr + have, buf + have, chunk);
		if (n <= 0)
			break;
		if (memchr(buf + have, '\0', n))
			return true;
		have += n;
	}
	buf[have] = '\0';
	return false;
}

/* ---- a thread's /proc ------------------------------------------------------ */

void sv_fd_path(pid_t tid, int fd, char *buf, size_t size)
{
	char proc[64];
	ssize_t n;

	snprintf(proc, sizeof(proc), "/proc/%d/fd/%d", tid, fd);
	n = readlink(proc, buf, size - 1);
	buf[n > 0 ? n : 0] = '\0';
}

int sv_fd_stat(pid_t tid, int fd, struct stat *st)
{
	char proc[64];

	snprintf(proc, sizeof(proc), "/proc/%d/fd/%d", tid, fd);
	return stat(proc, st);
}

static struct fd_ent *fd_ent(struct proc *p, int fd, bool make)
{
	if (fd < 0 || fd >= SV_FD_CACHE)
		return NULL;
	if (!p->fds) {
		if (!make || !(p->fds = malloc(sizeof(*p->fds))))
			return NULL;
		for (int i = 0; i < SV_FD_CACHE; i++) {
			p->fds->ent[i].ok = false;
			p->fds->ent[i].path = NULL;
			p->fds->ent[i].reader = -1;
		}
	}
	return &p->fds->ent[fd];
}

void sv_fd_path_cached(struct proc *p, pid_t tid, int fd, const struct stat *st,
		       char *buf, size_t size)
{
	uint64_t gen = cc.sh->names_gen;
	struct fd_ent *e = st && st->st_nlink ? fd_ent(p, fd, true) : NULL;
	size_t n;

	if (e && e->ok && e->dev == st->st_dev && e->ino == st->st_ino &&
	    e->gen == gen && (n = strlen(e->path)) < size) {
		memcpy(buf, e->path, n + 1);
		return;
	}
	sv_fd_path(tid, fd, buf, size);
	if (!e)
		return;
	free(e->path);
	e->path = strdup(buf);
	e->ok = e->path != NULL;
	e->dev = st->st_dev;
	e->ino = st->st_ino;
	e->gen = gen;
}

int sv_fd_reader(struct proc *p, pid_t tid, int fd, const struct stat *st)
{
	struct fd_ent *e = S_ISREG(st->st_mode) ? fd_ent(p, fd, true) : NULL;

	if (!e)
		return -1;
	if (e->reader >= 0 && e->rdev == st->st_dev && e->rino == st->st_ino)
		return e->reader;
	if (e->reader >= 0)
		close(e->reader);
	e->reader = sv_fd_open(tid, fd, 0);
	e->rdev = st->st_dev;
	e->rino = st->st_ino;
	if (e->reader >= 0) {
		struct stat mine;

		/* an open file never changes inode: checked once */
		if (fstat(e->reader, &mine) < 0 || mine.st_dev != st->st_dev ||
		    mine.st_ino != st->st_ino) {
			close(e->reader);
			e->reader = -1;
		}
	}
	return e->reader;
}

void sv_fd_forget(struct proc *p, int fd)
{
	struct fd_ent *e = fd_ent(p, fd, false);

	if (!e)
		return;
	e->ok = false;
	if (e->reader >= 0)
		close(e->reader);
	e->reader = -1;
}

void sv_fd_forget_all(struct proc *p)
{
	if (!p->fds)
		return;
	for (int i = 0; i < SV_FD_CACHE; i++) {
		sv_fd_forget(p, i);
		free(p->fds->ent[i].path);
		p->fds->ent[i].path = NULL;
	}
}

/* a descriptor of our own on the file the thread's FD is open on (a new
 * open file: its offset is ours), -1 when there is none */
int sv_fd_open(pid_t tid, int fd, int flags)
{
	char proc[64];

	snprintf(proc, sizeof(proc), "/proc/%d/fd/%d", tid, fd);
	return cc_open_read(AT_FDCWD, proc, flags | O_CLOEXEC);
}

/*
 * What a call's descriptor is: the stat of its file and, with FLAGS,
 * its open flags and position. From a duplicate of the descriptor
 * (pidfd_getfd: the same open file, so the same flags and offset),
 * fstat, fcntl, lseek and close, about two thirds of what a stat of
 * /proc/TID/fd/N and a read of its fdinfo cost; from /proc where no
 * duplicate can be had. What it got: SV_GOT_STAT, SV_GOT_FLAGS.
 */
int sv_fd_facts(struct proc *p, pid_t tid, int fd, struct stat *st,
		int *flags, long long *pos)
{
	int got = 0, dup = -1;

	if (p->pidfd == 0)
		p->pidfd = syscall(SYS_pidfd_open, p->tgid, 0);
	if (p->pidfd > 0)
		dup = syscall(SYS_pidfd_getfd, p->pidfd, fd, 0);
	if (dup < 0) {
		if (st && sv_fd_stat(tid, fd, st) == 0)
			got |= SV_GOT_STAT;
		if (flags && sv_fd_info(tid, fd, pos, flags))
			got |= SV_GOT_FLAGS;
		return got;
	}
	if (st && fstat(dup, st) == 0)
		got |= SV_GOT_STAT;
	if (flags && (*flags = fcntl(dup, F_GETFL)) >= 0) {
		/* a pipe or a terminal has none: -1, as lseek says */
		*pos = lseek(dup, 0, SEEK_CUR);
		got |= SV_GOT_FLAGS;
	}
	close(dup);
	return got;
}

/* the position and the open flags of the thread's FD, from fdinfo: one
 * read for both */
bool sv_fd_info(pid_t tid, int fd, long long *pos, int *flags)
{
	char path[64], buf[256], *p;
	ssize_t n;
	int f;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", tid, fd);
	f = open(path, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return false;
	n = read(f, buf, sizeof(buf) - 1);
	close(f);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	if (strncmp(buf, "pos:", 4) || !(p = strstr(buf, "\nflags:")))
		return false;
	*pos = strtoll(buf + 4, NULL, 10);
	*flags = (int)strtol(p + 7, NULL, 8);
	return true;
}

/* ---- the filter ------------------------------------------------------------ */

/*
 * Trap the SYSCALL rows of calls.def, each with its index in the trace
 * data (PTRACE_GET_SYSCALL_INFO's ret_data) so that a stop needs no
 * lookup; allow everything else. mmap is trapped only for a shared
 * mapping of a file: the loader and malloc map private and anonymous
 * memory all the time, and only a shared file mapping can change a
 * file. A call of another architecture (x32, i386 through int 0x80)
 * traps too, to end the run: its numbers are not these.
 */
static scmp_filter_ctx build_filter(void)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int rc;

	if (!ctx)
		cc_die("supervise: seccomp_init failed");
	rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_TRACE(SC_BADARCH));
	if (rc < 0)
		cc_die("supervise: seccomp_attr_set: %s", strerror(-rc));
	for (int sc = 0; sc < SC__COUNT; sc++) {
		int nr = seccomp_syscall_resolve_name(sc_table[sc].name);

		if (nr == __NR_SCMP_ERROR || nr < 0)
			continue;	/* not a system call here (open on arm64) */
		if (sc == SC_mmap)
			rc = seccomp_rule_add(ctx, SCMP_ACT_TRACE(sc + 1), nr, 1,
					      SCMP_A3(SCMP_CMP_MASKED_EQ,
						      MAP_SHARED | MAP_ANONYMOUS,
						      MAP_SHARED));
		else
			rc = seccomp_rule_add(ctx, SCMP_ACT_TRACE(sc + 1), nr, 0);
		if (rc < 0)
			cc_die("supervise: seccomp rule for %s: %s",
			       sc_table[sc].name, strerror(-rc));
	}
	return ctx;
}

/* ---- the stops ------------------------------------------------------------- */

static void resume(struct task *t, int how, int sig)
{
	/* ESRCH: it died meanwhile (a kill from another thread's crash) */
	if (ptrace(how, t->tid, 0, sig) < 0 && errno != ESRCH)
		cc_die("supervise: ptrace resume %d: %s", t->tid, strerror(errno));
}

static void badarch(struct task *t, uint64_t nr)
{
	cc_warn("%s made a system call of another architecture's ABI (number %llu, "
		"x32 or int 0x80): the syscall backend follows x86_64 calls only",
		prog_name, (unsigned long long)nr);
	sv_kill(main_pid);
	sv_kill(t->proc->tgid);
	cc_die("supervise: stopped the program");
}

static void on_seccomp(struct task *t)
{
	struct __ptrace_syscall_info info;
	enum sv_resume how;
	unsigned data;

	if (ptrace(PTRACE_GET_SYSCALL_INFO, t->tid, sizeof(info), &info) <= 0 ||
	    info.op != PTRACE_SYSCALL_INFO_SECCOMP) {
		if (errno == ESRCH)
			return;
		cc_die("supervise: PTRACE_GET_SYSCALL_INFO: %s (Linux 5.3 or later "
		       "is needed)", strerror(errno));
	}
	data = info.seccomp.ret_data;
	if (data == SC_BADARCH)
		badarch(t, info.seccomp.nr);
	if (!data || data > SC__COUNT || !t->proc->execd) {
		/* the supervisor's own child between the filter and exec */
		resume(t, PTRACE_CONT, 0);
		return;
	}
	how = sv_entry(t, data - 1, info.seccomp.args);
	if (how == SV_CONT)
		resume(t, PTRACE_CONT, 0);
	else if (how == SV_EXIT)
		resume(t, PTRACE_SYSCALL, 0);
}

static void on_syscall_exit(struct task *t)
{
	struct __ptrace_syscall_info info;

	if (!t->call) {
		resume(t, PTRACE_CONT, 0);
		return;
	}
	if (ptrace(PTRACE_GET_SYSCALL_INFO, t->tid, sizeof(info), &info) <= 0) {
		if (errno == ESRCH)
			return;
		cc_die("supervise: PTRACE_GET_SYSCALL_INFO: %s", strerror(errno));
	}
	if (info.op != PTRACE_SYSCALL_INFO_EXIT) {
		/* not the stop we asked for: wait for it */
		resume(t, PTRACE_SYSCALL, 0);
		return;
	}
	if (sv_exit(t, info.exit.rval) == SV_CONT)
		resume(t, PTRACE_CONT, 0);
}

/* a fork, vfork or clone of T: the new thread or process */
static void on_new(struct task *t, int ev)
{
	unsigned long msg;
	struct task *n;
	pid_t tid, tgid;

	if (ptrace(PTRACE_GETEVENTMSG, t->tid, 0, &msg) < 0)
		return;
	tid = (pid_t)msg;
	tgid = ev == PTRACE_EVENT_CLONE ? tgid_of(tid) : tid;
	if (ev == PTRACE_EVENT_CLONE && !tgid)
		tgid = tid;	/* gone already, or not yet readable */
	n = task_find(tid);
	if (n) {
		/* its first stop came first: put it where it belongs */
		if (tgid == t->proc->tgid && n->proc != t->proc) {
			if (--n->proc->tasks == 0)
				proc_free(n->proc);
			n->proc = t->proc;
			t->proc->tasks++;
		} else if (tgid != t->proc->tgid && n->proc->tasks == 1) {
			n->proc->shared_maps = t->proc->shared_maps;
			n->proc->execd = t->proc->execd;
		}
	} else {
		n = task_add(tid, tgid == t->proc->tgid ? t->proc :
				  proc_new(tid, t->proc));
		n->fresh = true;
	}
	/* a thread is numbered in the order its process made them, a new
	 * process's is its first: held until then, it runs now */
	n->thread = tgid == t->proc->tgid ? ++t->proc->threads : 1;
	if (n->held) {
		n->held = false;
		resume(n, PTRACE_CONT, 0);
	}
}

static pid_t ppid_of(pid_t pid)
{
	char buf[512], *p;

	if (!read_proc(pid, "stat", buf, sizeof(buf)))
		return 0;
	/* "pid (comm) state ppid": comm may hold anything but ends at the last ')' */
	p = strrchr(buf, ')');
	return p ? (pid_t)strtol(p + 3, NULL, 10) : 0;
}

static void on_exec(struct task *t)
{
	unsigned long former;

	/* a thread other than the leader that execs takes the leader's id;
	 * the other threads are gone */
	if (ptrace(PTRACE_GETEVENTMSG, t->tid, 0, &former) == 0 &&
	    (pid_t)former != t->tid) {
		struct task *old = task_find((pid_t)former);

		if (old && old != t)
			task_drop(old);
	}
	if (t->tid == main_pid && !t->proc->execd)
		sv_std_outputs(t->tid);
	t->proc->execd = true;
	t->proc->shared_maps = 0;
	/* the only thread left is the program's first */
	t->thread = 1;
	t->proc->threads = 1;
	sv_unwind_forget(t->proc);
	/* its close-on-exec descriptors are gone: which, we cannot tell */
	sv_fd_forget_all(t->proc);
	sv_exec(t->proc, t->tid == main_pid ? getpid() : ppid_of(t->tid));
}

/* ---- starting the program ------------------------------------------------- */

extern char **environ;

/* the program's environment: ours less the settings meant for us */
static char **program_env(void)
{
	size_t n = 0, k = 0;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + 1, sizeof(*env));
	if (!env)
		cc_die("supervise: out of memory");
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "CRASHCHECK_", 11))
			env[k++] = environ[i];
	return env;
}

/*
 * The file execvp(3) would run for NAME: itself when it holds a '/',
 * else the first executable file of that name in PATH. Found here, in
 * the supervisor, because its child may make no library call (below).
 * NULL, with errno, when there is none.
 */
static char *find_program(const char *name)
{
	const char *path = getenv("PATH"), *p, *end;
	int err = ENOENT;

	if (strchr(name, '/'))
		return strdup(name);
	for (p = path && *path ? path : "/usr/local/bin:/usr/bin:/bin"; ; p = end + 1) {
		char *full;
		size_t dir;

		end = strchrnul(p, ':');
		dir = end - p;
		if (asprintf(&full, "%.*s%s%s", (int)dir, p, dir ? "/" : "", name) < 0)
			cc_die("supervise: out of memory");
		if (access(full, X_OK) == 0) {
			struct stat st;

			if (stat(full, &st) == 0 && S_ISREG(st.st_mode))
				return full;
		} else if (errno == EACCES) {
			err = EACCES;
		}
		free(full);
		if (!*end)
			break;
	}
	errno = err;
	return NULL;
}

/* the filter as the kernel takes it, made before the child exists */
static struct sock_fprog export_filter(scmp_filter_ctx ctx)
{
	struct sock_fprog prog;
	struct stat st;
	int fd = memfd_create("crashcheck-filter", MFD_CLOEXEC), rc;

	if (fd < 0)
		cc_die("supervise: memfd_create: %s", strerror(errno));
	rc = seccomp_export_bpf(ctx, fd);
	if (rc < 0)
		cc_die("supervise: seccomp_export_bpf: %s", strerror(-rc));
	if (fstat(fd, &st) < 0 || !st.st_size || st.st_size % sizeof(struct sock_filter))
		cc_die("supervise: the exported filter is unusable");
	prog.len = st.st_size / sizeof(struct sock_filter);
	prog.filter = malloc(st.st_size);
	if (!prog.filter || pread(fd, prog.filter, st.st_size, 0) != st.st_size)
		cc_die("supervise: reading the exported filter failed");
	close(fd);
	return prog;
}

/*
 * The child shares the supervisor's memory (clone with CLONE_VM: a fork
 * would copy its page tables, a third of a short run's start-up on a
 * virtual machine) until it execs, so it makes no library call that
 * could touch shared state, errno included: raw system calls alone.
 */
static long raw(long nr, long a, long b, long c)
{
	/* the fourth and fifth arguments are 0: prctl insists */
	register long r10 __asm__("r10") = 0, r8 __asm__("r8") = 0;
	long ret;

	__asm__ volatile ("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c),
			  "r"(r10), "r"(r8) : "rcx", "r11", "memory");
	return ret;
}

static struct start {
	const char *path;	/* the program's file */
	char **argv, **envp;
	struct sock_fprog filter;
	struct cf_op *view;	/* a served run's view (confine.h), parsed */
	int view_ops;		/* its steps, 0 = not confined */
	const struct cf_op *failed;	/* the step of the view that failed */
	int go, report;		/* the child's ends of the two pipes */
	int go_ours, report_ours;	/* the supervisor's ends: closed in the child */
} start;

/* what the child reports when it could not start the program */
struct start_error {
	int stage;		/* START_EXEC or START_VIEW */
	int err;		/* an errno */
};
#define START_EXEC 0		/* the filter, or the exec */
#define START_VIEW 2		/* making the run's view (confine.c) */

static int child(void *arg)
{
	struct start *s = arg;
	struct start_error e = { START_EXEC, 0 };
	long err = 0;
	char c;

	raw(SYS_close, s->go_ours, 0, 0);
	raw(SYS_close, s->report_ours, 0, 0);
	raw(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0);
	/* a session of its own, as the preload's runs have: a kill(0) of
	 * the program's is not the supervisor's */
	raw(SYS_setsid, 0, 0, 0);
	/* wait until the supervisor has attached: it closes its end */
	while (raw(SYS_read, s->go, (long)&c, 1) == -EINTR)
		;
	if (s->view_ops) {
		/* confined before anything of the program's runs */
		err = cf_apply(s->view, s->view_ops, &s->failed);
		if (err)
			e.stage = START_VIEW;
	}
	if (!err)
		err = raw(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0);
	if (!err)
		err = raw(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, (long)&s->filter);
	if (!err)
		err = raw(SYS_execve, (long)s->path, (long)s->argv, (long)s->envp);
	/* through the pipe: a write to stderr would be a traced call */
	e.err = (int)-err;
	raw(SYS_write, s->report, (long)&e, sizeof(e));
	raw(SYS_exit_group, 127, 0, 0);
	return 127;
}

/* exit as the program did: with its status, or killed by its signal */
static void __attribute__((noreturn)) exit_like(int status)
{
	struct rlimit none = { 0, 0 };
	sigset_t set;
	int sig;

	if (WIFEXITED(status))
		exit(WEXITSTATUS(status));
	sig = WTERMSIG(status);
	/* the program's core, if any, is dumped; ours is not wanted */
	setrlimit(RLIMIT_CORE, &none);
	signal(sig, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	kill(getpid(), sig);
	exit(128 + sig);
}

static void usage(void)
{
	fprintf(stderr, "usage: supervise [--] PROGRAM [ARG...]\n");
	exit(2);
}

/* the child's stack, until it execs: the raw calls above need little */
#define CHILD_STACK (64 * 1024)

/* a served run's harness is gone (end of file on the socket, SIGIO) */
static volatile sig_atomic_t serve_hangup;

static void on_io(int sig)
{
	(void)sig;
	serve_hangup = 1;
}

/* the harness went away during a served run: nothing of it may go on */
static void __attribute__((noreturn)) abandon(void)
{
	kill_program();
	_exit(0);
}

/* whether a process of a run is still followed */
static bool tasks_left(void)
{
	for (int i = 0; i < TASK_HASH; i++)
		if (task_hash[i])
			return true;
	return false;
}

/*
 * One run of the program ARGV under the filter, to its end: its wait
 * status, or an exit status of 127 or 126 when it could not be started
 * (said on stderr, as a shell would). It leads a session of its own.
 * SERVED: the harness is told its pid ("pid PID") and its end of
 * the socket is watched; a program that is not there is said to the
 * harness instead ("fail ..."), and the answer is -1.
 */
static int run_program(char **argv, const char *view, bool served)
{
	int go[2], report[2], status = 0, main_status = 0;
	struct start_error e;
	bool main_ended = false;
	struct task *t;
	char *stack;
	ssize_t n;
	pid_t pid;

	grace_over = 0;
	main_pid = 0;
	start.path = find_program(prog_name);
	if (start.path && served && access(start.path, X_OK) < 0) {
		free((char *)start.path);
		start.path = NULL;
	}
	if (!start.path) {
		int err = errno;

		if (served) {
			/* the harness's exec'd run says it its own way */
			cc_serve_say("fail cannot run %s: %s", prog_name, strerror(err));
			return -1;
		}
		cc_warn("cannot run %s: %s", prog_name, strerror(err));
		return W_EXITCODE(err == ENOENT ? 127 : 126, 0);
	}
	start.argv = argv;
	start.envp = program_env();
	start.view_ops = 0;
	start.failed = NULL;
	if (view) {
		/* parsed here: the child makes no library call */
		static struct cf_op ops[CF_MAX_OPS];
		static char *steps;

		free(steps);
		steps = strdup(view);
		if (!steps)
			cc_die("supervise: out of memory");
		start.view_ops = cf_parse(steps, ops, CF_MAX_OPS);
		if (start.view_ops < 0) {
			cc_serve_say("fail %s is not a view", CF_VAR);
			return -1;
		}
		start.view = ops;
	}

	if (pipe2(go, O_CLOEXEC) < 0 || pipe2(report, O_CLOEXEC) < 0)
		cc_die("supervise: pipe: %s", strerror(errno));
	start.go = go[0];
	start.go_ours = go[1];
	start.report = report[1];
	start.report_ours = report[0];
	stack = malloc(CHILD_STACK);
	if (!stack)
		cc_die("supervise: out of memory");
	pid = clone(child, stack + CHILD_STACK, CLONE_VM | SIGCHLD, &start);
	if (pid < 0)
		cc_die("supervise: clone: %s", strerror(errno));
	close(go[0]);
	close(report[1]);
	main_pid = pid;
	if (ptrace(PTRACE_SEIZE, pid, 0, OPTIONS) < 0) {
		int err = errno;

		kill(pid, SIGKILL);
		cc_die("supervise: cannot trace %s: %s", prog_name, strerror(err));
	}
	task_add(pid, proc_new(pid, NULL));
	close(go[1]);
	if (served)
		cc_serve_say("pid %ld", (long)pid);

	for (;;) {
		int sig, ev;

		if (grace_over)
			break;
		if (served && serve_hangup) {
			struct pollfd p = { serve_fd, POLLIN, 0 };

			/* the harness sends nothing during a run: readable is
			 * its end of file */
			serve_hangup = 0;
			if (poll(&p, 1, 0) > 0)
				abandon();
		}
		pid = waitpid(-1, &status, __WALL);
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ECHILD)
				break;
			cc_die("supervise: waitpid: %s", strerror(errno));
		}
		t = task_find(pid);
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			if (t)
				task_drop(t);
			if (pid == main_pid) {
				main_status = status;
				main_ended = true;
				if (WIFSIGNALED(status) &&
				    WTERMSIG(status) == SIGKILL)
					break;
				start_grace();
			}
			continue;
		}
		if (!WIFSTOPPED(status))
			continue;
		if (!t)
			t = task_meet(pid);
		sig = WSTOPSIG(status);
		ev = (unsigned)status >> 16;
		switch (ev) {
		case PTRACE_EVENT_SECCOMP:
			on_seccomp(t);
			break;
		case PTRACE_EVENT_FORK:
		case PTRACE_EVENT_VFORK:
		case PTRACE_EVENT_CLONE:
			on_new(t, ev);
			resume(t, PTRACE_CONT, 0);
			break;
		case PTRACE_EVENT_EXEC:
			on_exec(t);
			resume(t, PTRACE_CONT, 0);
			break;
		case PTRACE_EVENT_STOP:
			if (t->fresh && !t->thread) {
				/* a new thread before its clone event: it
				 * runs once its number is known (on_new) */
				t->fresh = false;
				t->held = true;
			} else if (t->fresh || sig == SIGTRAP) {
				/* a new thread's first stop, or an interrupt */
				t->fresh = false;
				resume(t, PTRACE_CONT, 0);
			} else {
				/* a group stop (SIGSTOP and the like): stay
				 * stopped, as the program would */
				resume(t, PTRACE_LISTEN, 0);
			}
			break;
		case 0:
			if (sig == (SIGTRAP | 0x80))
				on_syscall_exit(t);
			else
				resume(t, PTRACE_CONT, sig);	/* its own signal */
			break;
		default:
			resume(t, PTRACE_CONT, 0);
		}
	}

	end_grace();
	if (main_ended)
		status = main_status;

	/* the child that shared our memory has exec'd or died: its stack
	 * is ours again */
	free(stack);
	free(start.envp);
	free((char *)start.path);

	/* the program never ran: say why, as a shell would */
	n = read(report[0], &e, sizeof(e));
	close(report[0]);
	if (n == sizeof(e) && e.stage == START_VIEW) {
		char msg[512];

		cc_warn("%s", cf_message(msg, sizeof(msg), start.failed, e.err));
		return W_EXITCODE(127, 0);
	}
	if (n == sizeof(e)) {
		cc_warn("cannot run %s: %s", prog_name, strerror(e.err));
		return W_EXITCODE(e.err == ENOENT ? 127 : 126, 0);
	}
	return status;
}

/*
 * The server (CRASHCHECK_SERVE, the protocol of faults/serve.c): the
 * runs of one command line, one after another, each supervised by this
 * process itself. A fork per run, as the preload's server makes, would
 * cost what it saves here: on a virtual machine a new address space,
 * forked or exec'd, is most of a short run's start. So each request's
 * descriptors become this process's stdio, its directory our working
 * directory and its variables our environment; the settings, counters
 * and recorder start afresh (cc_env_reset), and the program is started
 * as `supervise -- PROGRAM` starts it, in a session of its own (and in
 * the server's cgroup, which the harness started it in: the run's box,
 * harness/engine/contain.py). A run that ends with processes of the program
 * still followed (they outlived its grace, or its first process was
 * killed) ends the server after its answer ("exit PID STATUS last"):
 * they are detached as they would be by an exec'd supervisor's exit,
 * and the harness starts another server for the next run.
 */
static void __attribute__((noreturn)) serve(char **argv)
{
	static char req[CC_SERVE_REQUEST_MAX];
	struct sigaction sa;
	char **own_env;
	size_t n = 0;

	/* our environment as we were started: each run's starts from it, and
	 * not from the last run's (a variable a request set is not the next
	 * one's) */
	while (environ[n])
		n++;
	own_env = calloc(n + 1, sizeof(*own_env));
	if (!own_env)
		cc_die("supervise: out of memory");
	memcpy(own_env, environ, n * sizeof(*own_env));

	/* the program must not inherit the socket (Python's dup2 cleared
	 * close-on-exec) */
	if (fcntl(serve_fd, F_SETFD, FD_CLOEXEC) < 0 ||
	    fcntl(serve_fd, F_SETOWN, getpid()) < 0)
		cc_die("supervise: CRASHCHECK_SERVE: %s", strerror(errno));
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_io;		/* no SA_RESTART: waitpid says EINTR */
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGIO, &sa, NULL) < 0)
		cc_die("supervise: sigaction: %s", strerror(errno));
	cc_serve_say("ready %ld", (long)getpid());
	for (;;) {
		int fds[3], status, flags;
		ssize_t len = cc_serve_receive(req, sizeof(req), fds);
		char err[256];

		if (len <= 0)
			_exit(len < 0 ? 2 : 0);
		if (!cc_serve_stdio(fds)) {
			cc_serve_say("fail stdio: %s", strerror(errno));
			continue;
		}
		clearenv();
		for (size_t i = 0; i < n; i++)
			putenv(own_env[i]);
		if (!cc_serve_settings(req, (size_t)len, err, sizeof(err))) {
			cc_serve_say("fail %s", err);
			continue;
		}
		cc_env_reset();
		cc_env_read(false);
		/* a hang-up from now on interrupts the run's waitpid; one
		 * before (the harness interrupted as it sent the request) is
		 * end of file already */
		serve_hangup = 0;
		flags = fcntl(serve_fd, F_GETFL);
		fcntl(serve_fd, F_SETFL, flags | O_ASYNC);
		if (poll(&(struct pollfd){ serve_fd, POLLIN, 0 }, 1, 0) > 0)
			_exit(0);
		status = run_program(argv, cc_serve_view(req, (size_t)len), true);
		fcntl(serve_fd, F_SETFL, flags);
		if (status < 0)
			continue;	/* said: "fail" */
		if (tasks_left()) {
			cc_serve_say("exit %ld %d last", (long)main_pid, status);
			_exit(0);
		}
		cc_serve_say("exit %ld %d", (long)main_pid, status);
	}
}

int main(int argc, char **argv)
{
	scmp_filter_ctx ctx;

	if (argc > 1 && !strcmp(argv[1], "--")) {
		argv++;
		argc--;
	}
	if (argc < 2 || !argv[1][0])
		usage();
	argv++;
	prog_name = argv[0];

	/* we die with whoever started us, and the program with us (its
	 * descendants are the runner's box's) */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	cc.backend = "syscall";
	cc.stop_program = stop_program;
	sv_calls_init();
	ctx = build_filter();
	start.filter = export_filter(ctx);
	seccomp_release(ctx);
	serve_fd = cc_serve_open();
	if (serve_fd >= 0)
		serve(argv);
	cc_env_read(false);
	exit_like(run_program(argv, NULL, false));
}
