/*
 * The supervisor's side of each trapped system call: the stops, and the
 * facts the rules (faults/rules/, the preload's too) ask of the program.
 * What a call works on, what its line says and what is snapshotted after
 * it are the rules'; here is where the facts come from: the stopped
 * thread's descriptors (a duplicate by pidfd_getfd, /proc/TID/fd/N), its
 * working directory, its maps and its memory (process_vm_readv), instead
 * of the preload's own fstat, lseek and fcntl.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "sv.h"

const struct sc_info sc_table[SC__COUNT] = {
#define CALL(name, point, faults, cls)
#define ALIAS(name, base)
#define WRAP(...)
#define SYSCALL(sys, call) [SC_##sys] = { #sys, CALL_##call },
#include "../calls.def"
#undef CALL
#undef ALIAS
#undef WRAP
#undef SYSCALL
};

/* the kernel's restart codes: the call was interrupted by a signal */
#define ERESTARTSYS 512
#define ERESTART_RESTARTBLOCK 516

/* at most this many buffers in a vector (UIO_MAXIOV) */
#define SV_IOV_MAX 1024

static struct pending *pending_of(struct cc_rec *r)
{
	return r->ctx;
}

/* ---- the facts of the program, for the rules (struct cc_io) --------------- */

static int io_fd_facts(struct cc_rec *r, int fd, struct stat *st, long *flags)
{
	struct pending *c = pending_of(r);
	long long pos = -1;
	int fl = -1, got;

	got = sv_fd_facts(c->proc, c->tid, fd, st, flags ? &fl : NULL, &pos);
	if (got & SV_GOT_FLAGS) {
		*flags = fl;
		/* the position comes with the flags, from the same duplicate:
		 * kept for the rule that asks it before the call (fd_pos) */
		if (!c->exited) {
			c->pos_fd = fd;
			c->pos = pos;
		}
	}
	return (got & SV_GOT_STAT ? CC_GOT_STAT : 0) |
	       (got & SV_GOT_FLAGS ? CC_GOT_FLAGS : 0);
}

static long long io_fd_pos(struct cc_rec *r, int fd)
{
	struct pending *c = pending_of(r);
	long long pos = -1;
	int fl;

	if (!c->exited && c->pos_fd == fd)
		return c->pos;
	if (!(sv_fd_facts(c->proc, c->tid, fd, NULL, &fl, &pos) & SV_GOT_FLAGS))
		return -1;
	return pos;
}

static void io_fd_path(struct cc_rec *r, int fd, const struct stat *st, char *buf,
		       size_t size)
{
	struct pending *c = pending_of(r);

	sv_fd_path_cached(c->proc, c->tid, fd, st, buf, size);
}

static void io_fd_link(struct cc_rec *r, int fd, char *buf, size_t size)
{
	sv_fd_path(pending_of(r)->tid, fd, buf, size);
}

static void io_cwd(struct cc_rec *r, char *buf, size_t size)
{
	char proc[64];
	ssize_t n;

	snprintf(proc, sizeof(proc), "/proc/%d/cwd", pending_of(r)->tid);
	n = readlink(proc, buf, size - 1);
	buf[n > 0 ? n : 0] = '\0';
}

static void io_fd_forget(struct cc_rec *r, int fd)
{
	sv_fd_forget(pending_of(r)->proc, fd);
}

/* a kept reader of the inode the call saw, else a fresh one (closed after) */
static void io_fd_snap(struct cc_rec *r, int fd, bool range)
{
	struct pending *c = pending_of(r);

	(void)range;	/* every snapshot may have a kept one here */
	if (r->has_st) {
		r->snap_fd = sv_fd_reader(c->proc, c->tid, fd, &r->st);
		r->snap_fd_borrowed = r->snap_fd >= 0;
	}
	if (r->snap_fd < 0)
		r->snap_fd = sv_fd_open(c->tid, fd, 0);
}

static void io_fd_resnap(struct cc_rec *r)
{
	r->snap_fd = sv_fd_open(pending_of(r)->tid, r->fd, 0);
	r->snap_fd_borrowed = r->snap_fd_kept = false;
}

static unsigned io_dio_align(struct cc_rec *r, int fd)
{
	int mine = sv_fd_open(pending_of(r)->tid, fd, 0);
	unsigned a;

	if (mine < 0)
		return 512;
	a = cc_dio_align(mine);
	close(mine);
	return a;
}

static long io_read(struct cc_rec *r, cc_ptr addr, void *buf, size_t len)
{
	return sv_read(pending_of(r)->tid, addr, buf, len);
}

static bool io_read_str(struct cc_rec *r, cc_ptr addr, char *buf, size_t size)
{
	return sv_read_str(pending_of(r)->tid, addr, buf, size);
}

/* the file mapping that holds ADDR in the thread's maps */
static struct cc_map *map_lookup(pid_t tid, uint64_t addr)
{
	struct cc_map *m = calloc(1, sizeof(*m));
	char path[64];
	int fd;

	if (!m)
		return NULL;
	snprintf(path, sizeof(path), "/proc/%d/maps", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return m;
	rule_map_find(fd, addr, m);
	close(fd);
	return m;
}

static void io_map_at(struct cc_rec *r, cc_ptr addr, struct cc_map *m)
{
	struct pending *c = pending_of(r);

	/* msync and munmap looked it up before they were counted (map_counts) */
	if (!c->map)
		c->map = map_lookup(c->tid, addr);
	if (c->map)
		*m = *c->map;
	else
		m->len = 0;
}

/* the vector of a writev-family call, read once; false when it cannot be */
static bool read_vector(struct pending *c, cc_ptr iov, int cnt)
{
	if (c->iov)
		return true;
	if (cnt <= 0 || cnt > SV_IOV_MAX)
		return false;
	c->iov = malloc(sizeof(*c->iov) * cnt);
	if (!c->iov)
		return false;
	if (sv_read(c->tid, iov, c->iov, sizeof(*c->iov) * cnt) !=
	    (long)(sizeof(*c->iov) * cnt)) {
		free(c->iov);
		c->iov = NULL;
		return false;
	}
	c->iovcnt = cnt;
	return true;
}

/* the first LEN bytes the call handed down (BUF, or the vector read
 * into c->iov), copied from the thread; NULL when they cannot be read */
static char *handed(struct pending *c, cc_ptr buf, size_t len)
{
	struct iovec local, remote[SV_IOV_MAX];
	char *out = malloc(len ? len : 1);
	int n = 0;

	if (!out)
		return NULL;
	if (!c->iov) {
		if (sv_read(c->tid, buf, out, len) == (long)len)
			return out;
		free(out);
		return NULL;
	}
	for (size_t left = len; n < c->iovcnt && left; n++) {
		remote[n] = c->iov[n];
		if (remote[n].iov_len > left)
			remote[n].iov_len = left;
		left -= remote[n].iov_len;
	}
	local.iov_base = out;
	local.iov_len = len;
	if (process_vm_readv(c->tid, &local, 1, remote, n, 0) == (ssize_t)len)
		return out;
	free(out);
	return NULL;
}

static bool io_handed(struct cc_rec *r, cc_ptr buf, cc_ptr iov, int cnt)
{
	struct pending *c = pending_of(r);

	/* a short vector write holds what the supervisor wrote */
	if (!c->data && (!iov || read_vector(c, iov, cnt)))
		c->data = handed(c, buf, r->ret);
	r->buf = c->data;
	return c->data != NULL;
}

/*
 * A short vector write: the supervisor writes the first WANT bytes of the
 * vector itself, through a duplicate of the thread's descriptor (the same
 * open file, so the same offset moves and O_APPEND holds), and the call
 * is skipped with what that write returned. False when it cannot be
 * made: the rule stays unfired and the call runs whole.
 */
static bool io_short_vector(struct cc_rec *r, int fd_, cc_ptr *iov, int *cnt,
			    size_t want, unsigned align)
{
	struct pending *c = pending_of(r);
	const uint64_t *a = c->a;
	struct iovec one;
	char *buf = NULL, *got = NULL;
	int pidfd = -1, fd = -1;
	ssize_t n;

	if (align < 64)
		align = 64;
	if (!read_vector(c, *iov, *cnt) || posix_memalign((void **)&buf, align, want))
		return false;
	/* O_DIRECT wants the buffer aligned: copied into ours */
	got = handed(c, 0, want);
	if (!got)
		goto out;
	memcpy(buf, got, want);
	pidfd = syscall(SYS_pidfd_open, c->proc->tgid, 0);
	if (pidfd < 0)
		goto out;
	fd = syscall(SYS_pidfd_getfd, pidfd, fd_, 0);
	if (fd < 0)
		goto out;
	one.iov_base = buf;
	one.iov_len = want;
	/* the call's own offset, -1 for writev and pwritev2's -1; pwritev2's
	 * flags kept */
	n = syscall(SYS_pwritev2, fd, &one, 1,
		    c->sc == SC_writev ? -1L : (long)a[3], 0L,
		    c->sc == SC_pwritev2 ? (int)a[4] : 0);
	c->skip_ret = n >= 0 ? n : -errno;
	c->skip = sv_skip(c->tid, c->skip_ret);
	if (c->skip) {
		/* what was handed down, for the range snapshot's proof */
		c->data = buf;
		buf = NULL;
	}
out:
	if (fd >= 0)
		close(fd);
	if (pidfd >= 0)
		close(pidfd);
	free(got);
	free(buf);
	return c->skip;
}

static const struct cc_io sv_io = {
	.fd_facts = io_fd_facts,
	.fd_pos = io_fd_pos,
	.fd_path = io_fd_path,
	.fd_link = io_fd_link,
	.cwd = io_cwd,
	.fd_forget = io_fd_forget,
	.fd_snap = io_fd_snap,
	.fd_resnap = io_fd_resnap,
	.dio_align = io_dio_align,
	.read = io_read,
	.read_str = io_read_str,
	.map_at = io_map_at,
	.handed = io_handed,
	.short_vector = io_short_vector,
};

void sv_calls_init(void)
{
	cc.io = &sv_io;
}

/* ---- the call's arguments ------------------------------------------------------ */

/*
 * The system call's arguments in the order of its call's WRAP row (what
 * the rules take): the kernel's order, but for pwritev2, whose flags
 * follow the offset's high half (which x86_64 ignores), and openat2,
 * whose flags and mode are in a struct open_how (flags -1 when it cannot
 * be read: the line then names none). ARG[I] is the argument register
 * of the call's parameter I, -1 for one read from memory.
 */
static void call_args(struct pending *c, int arg[6])
{
	const uint64_t *s = c->args;

	for (int i = 0; i < 6; i++) {
		c->a[i] = s[i];
		arg[i] = i;
	}
	if (c->sc == SC_pwritev2) {
		c->a[4] = s[5];
		arg[4] = 5;
	} else if (c->sc == SC_openat2) {
		uint64_t how[2] = { 0, 0 };

		if (s[3] >= sizeof(how) && sv_read(c->tid, s[2], how, sizeof(how)) ==
		    sizeof(how)) {
			c->a[2] = how[0];
			c->a[3] = how[1];
		} else {
			c->a[2] = (uint64_t)-1;
			c->a[3] = 0;
		}
		arg[2] = arg[3] = -1;
	}
}

/* ---- the seccomp stop ------------------------------------------------------- */

/*
 * munmap is trapped for all memory, and counted only where it unmaps a
 * shared mapping of a file (malloc unmaps anonymous memory all the time,
 * and the preload counts the program's own munmaps, not libc's): C gets
 * the mapping, or false for one that does not count.
 */
static bool map_counts(struct pending *c, struct task *t)
{
	if (!t->proc->shared_maps && c->sc == SC_munmap)
		return false;
	c->map = map_lookup(t->tid, c->args[0]);
	return c->sc != SC_munmap || (c->map && c->map->len && c->map->shared);
}

/*
 * The program's stdout and stderr when it started (device and inode),
 * which faults never hit: a program must be able to say what went wrong,
 * and under this backend its messages are write calls like any other.
 * The call is still counted, so call numbers stay those of its trace.
 */
void sv_std_outputs(pid_t pid)
{
	for (int i = 0; i < 2; i++) {
		struct stat st;

		if (sv_fd_stat(pid, i + 1, &st) == 0)
			rule_std_set(i, st.st_dev, st.st_ino);
	}
	__atomic_store_n(&cc.sh->std_ready, 2, __ATOMIC_RELEASE);
}

enum sv_resume sv_entry(struct task *t, int sc, const uint64_t args[6])
{
	pid_t tid = t->tid, tgid = t->proc->tgid;
	const struct plan_rule *p;
	struct pending *c;
	struct cc_rec *r;
	unsigned changed;
	int arg[6];

	c = calloc(1, sizeof(*c));
	if (!c)
		cc_die("supervise: out of memory");
	c->sc = sc;
	c->proc = t->proc;
	c->tid = tid;
	c->pos_fd = -1;
	memcpy(c->args, args, sizeof(c->args));
	r = &c->r;
	cc_rec_init(r, sc_table[sc].call);
	r->ctx = c;
	/* a thread whose clone event never came: numbered as it is met */
	if (!t->thread)
		t->thread = ++t->proc->threads;
	r->thread = t->thread;
	if ((sc == SC_munmap || sc == SC_msync) && !map_counts(c, t)) {
		sv_pending_free(c);
		return SV_CONT;
	}
	/* a munmap may concern a file from now on: whether the mapping
	 * came about is not waited for (no stop after an untraced call) */
	if (sc == SC_mmap)
		t->proc->shared_maps++;
	call_args(c, arg);
	rule_describe(r, c->a);
	rule_decide(r);
	p = r->rule >= 0 ? &cc.plan.rules[r->rule] : NULL;
	/* where the program made it, for a line that will be written */
	if (cc.trace && (!r->lite || p)) {
		r->nframes = sv_unwind(t->proc, tid, c->frames, c->paths, SV_FRAMES);
		r->frames = c->frames;
	}
	if (p && p->action == PLAN_CRASH) {
		r->fired = true;
		cc_trace_pid(tgid);
		cc_trace_crash(r, "before");
		sv_kill(tgid);
		sv_pending_free(c);
		return SV_KILLED;
	}
	/* a short write lowers the count the kernel is handed */
	changed = rule_prepare(r, c->a);
	for (int i = 0; i < 6; i++)
		if ((changed & (1u << i)) && (arg[i] < 0 || !sv_set_arg(tid, arg[i], c->a[i])))
			r->fired = false;
	if (p && p->action == PLAN_ERRNO) {
		c->skip_ret = -p->err;
		if (rule_fails_after(r->call))
			/* the call runs; its return is replaced at the exit */
			c->fail_after = r->fired = true;
		else
			c->skip = r->fired = sv_skip(tid, c->skip_ret);
	}
	if ((!cc.trace || r->lite) && !(p && p->action == PLAN_CRASH_AFTER) &&
	    !rule_after_always(r) && !c->fail_after) {
		/* nothing wanted after the call: it takes its seq now (a lite
		 * call's line, if any, is written as the preload writes it) */
		cc_trace_pid(tgid);
		cc_trace_call(r);
		sv_pending_free(c);
		return SV_CONT;
	}
	t->call = c;
	return SV_EXIT;
}

/* ---- the exit stop ---------------------------------------------------------- */

enum sv_resume sv_exit(struct task *t, long long rval)
{
	struct pending *c = t->call;
	struct cc_rec *r = &c->r;
	const struct plan_rule *p = r->rule >= 0 ? &cc.plan.rules[r->rule] : NULL;
	long long ret = c->skip || c->fail_after ? c->skip_ret : rval;
	bool crash_after = p && p->action == PLAN_CRASH_AFTER;
	pid_t tgid = t->proc->tgid;

	t->call = NULL;
	if (c->skip || c->fail_after)
		sv_set_return(t->tid, ret);
	r->err = ret < 0 && ret >= -4095 ? (int)-ret : 0;
	/* interrupted, to be restarted or to fail with EINTR: the program
	 * asks again if it restarts, and is counted again */
	if (r->err >= ERESTARTSYS && r->err <= ERESTART_RESTARTBLOCK)
		r->err = EINTR;
	r->ret = r->err ? -1 : ret;
	c->exited = true;
	rule_after(r, c->a);
	if (crash_after)
		r->fired = true;
	cc_trace_pid(tgid);
	cc_trace_call(r);
	if (crash_after) {
		cc_trace_crash(r, "after");
		sv_kill(tgid);
		sv_pending_free(c);
		return SV_KILLED;
	}
	sv_pending_free(c);
	return SV_CONT;
}

/* ---- exec ------------------------------------------------------------------- */

void sv_exec(struct proc *p, pid_t ppid)
{
	char proc[64], exe[CC_PATH_MAX];
	ssize_t n;

	snprintf(proc, sizeof(proc), "/proc/%d/exe", p->tgid);
	n = readlink(proc, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	cc_trace_start(p->tgid, ppid, exe);
}
