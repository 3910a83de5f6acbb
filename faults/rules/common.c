/*
 * The helpers every call's rule is written with, and what both backends
 * ask of the rules besides a call's hooks: the plan's decision on a call,
 * the program's stdout and stderr, the maps file.
 *
 * A rule runs in the backend's context: in the program, inside a wrapper
 * (nothing here may call an intercepted function: raw system calls
 * only), or in the supervisor, while the thread is stopped. Either way
 * the hooks of one call run in one thread, in order: describe, the plan's
 * decision (rule_decide), prepare, the call, after. The facts come from
 * the backend (cc.io, rules.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "rule.h"

/* ---- what a call works on, what is snapshotted after it ------------------ */

void set_stat(struct cc_rec *r, const struct stat *st)
{
	r->st = *st;
	r->has_st = true;
	r->has_ino = true;
	r->ino = st->st_ino;
	r->dev = st->st_dev;
	r->is_reg = S_ISREG(st->st_mode);
	r->is_dir = S_ISDIR(st->st_mode);
}

void stat_fd(struct cc_rec *r, int fd)
{
	struct stat st;

	if (io->fd_facts(r, fd, &st, NULL) & CC_GOT_STAT)
		set_stat(r, &st);
}

/* PATH as the program sees it now: both backends share its file system */
void stat_path(struct cc_rec *r, const char *path)
{
	struct stat st;

	if (path[0] && syscall(SYS_newfstatat, AT_FDCWD, path, &st, 0) == 0) {
		r->has_ino = true;
		r->ino = st.st_ino;
		r->dev = st.st_dev;
		r->is_reg = S_ISREG(st.st_mode);
		r->is_dir = S_ISDIR(st.st_mode);
	}
}

/*
 * Describe the descriptor a call works on. The fstat comes first: it is
 * what proves the cached path of the descriptor current, and for the write
 * family it is the "before" that a range snapshot is checked against.
 * FLAGS: the open flags the line names (a traced call only).
 */
void use_fd(struct cc_rec *r, int fd, bool flags)
{
	struct stat st;
	long fl = -1;
	int got;

	r->fd = fd;
	if (fd < 0 || !want_path(r))
		return;
	flags = flags && tracing(r);
	got = io->fd_facts(r, fd, &st, flags ? &fl : NULL);
	if (got & CC_GOT_STAT)
		set_stat(r, &st);
	io->fd_path(r, fd, r->has_st ? &r->st : NULL, r->path, sizeof(r->path));
	if (got & CC_GOT_FLAGS) {
		r->fdflags = fl;
		r->oflags = fl & (O_APPEND | O_DIRECT | O_SYNC | O_DSYNC);
	}
}

/* PATH made absolute against DIRFD (AT_FDCWD: the working directory) and
 * folded, into BUF */
void join_path(struct cc_rec *r, int dirfd, const char *path, char *buf,
		      size_t size)
{
	buf[0] = '\0';
	if (path[0] != '/') {
		if (dirfd == AT_FDCWD)
			io->cwd(r, buf, size);
		else
			io->fd_link(r, dirfd, buf, size);
	}
	cc_path_join(buf, size, path);
}

/* the path at ADDR, made absolute against DIRFD, into OUT ("" when it
 * cannot be read), when it is wanted */
void use_path(struct cc_rec *r, int dirfd, cc_ptr addr, char *out, size_t size)
{
	char path[CC_PATH_MAX];

	out[0] = '\0';
	if (!want_path(r) || !addr || !io->read_str(r, addr, path, sizeof(path)))
		return;
	join_path(r, dirfd, path, out, size);
}

/* after the call: snapshot the file open at FD, when it lies under WATCH
 * (for a range snapshot when asked: SNAP_RANGE) */
void snap_fd(struct cc_rec *r, int fd)
{
	if (!cc.recorder || fd < 0 || r->snap_fd >= 0 || !cc_under_watch(r->path))
		return;
	if (!r->has_ino)
		stat_fd(r, fd);
	if (!r->is_reg)
		return;
	io->fd_snap(r, fd, r->snap & SNAP_RANGE);
	if (r->snap_fd >= 0)
		r->snap |= SNAP_FILE;
}

/* after the call: snapshot the file now at PATH, when it lies under WATCH */
void snap_path(struct cc_rec *r, const char *path)
{
	int mode;

	if (!cc.recorder || r->snap_fd >= 0 || !cc_under_watch(path))
		return;
	r->snap_fd = cc_open_read(AT_FDCWD, path, O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (r->snap_fd < 0)
		return;
	if (cc_sys_fstat_ino(r->snap_fd, NULL, &mode, NULL) < 0 || !S_ISREG(mode)) {
		cc_sys_close(r->snap_fd);
		r->snap_fd = -1;
		return;
	}
	r->snap |= SNAP_FILE;
}

/*
 * After a write-family call: ask for a range snapshot of the bytes it wrote
 * (the recorder takes one only when it can prove it enough: the bytes
 * read back are those handed down), with the whole file as the fallback.
 * EXACT says OFF is where the bytes went.
 */
void snap_write(struct cc_rec *r, int fd, cc_ptr buf, cc_ptr iov, int cnt,
		       bool exact)
{
	if (!cc.recorder || fd < 0 || !cc_under_watch(r->path))
		return;
	if (r->ret > 0 && r->has_st && r->is_reg && !cc.snap_full &&
	    io->handed(r, buf, iov, cnt)) {
		r->snap |= SNAP_RANGE;
		r->off_exact = exact;
	}
	snap_fd(r, fd);
}

/*
 * The file behind R may change with no intercepted write: stores through a
 * MAP_SHARED mapping, or a stdio buffer that libc writes out with its
 * internal write (at exit, on fseek, from putc). Its writes are then
 * recorded whole, in every process of the tree, for the rest of the run.
 */
void taint_rec(const struct cc_rec *r)
{
	if (cc.recorder && !cc.snap_full && r->has_ino && r->is_reg &&
	    cc_under_watch(r->path))
		cc_taint(r->dev, r->ino);
}

/* ---- counting and deciding ------------------------------------------------ */

const struct plan_rule *rule_of(const struct cc_rec *r, enum plan_action a)
{
	if (r->rule < 0 || cc.plan.rules[r->rule].action != a)
		return NULL;
	return &cc.plan.rules[r->rule];
}

/* the count of glob rule I, the next one with ADD: a process tree counts
 * in one sequence (the preload's counters are in the CRASHCHECK_SHARED
 * mapping) */
static unsigned long count_rule(void *ctx, size_t i, bool add)
{
	(void)ctx;
	if (!add)
		return __atomic_load_n(&cc.sh->rules[i], __ATOMIC_SEQ_CST);
	return __atomic_add_fetch(&cc.sh->rules[i], 1, __ATOMIC_SEQ_CST);
}

void rule_std_set(int i, uint64_t dev, uint64_t ino)
{
	cc.sh->std[i].dev = dev;
	cc.sh->std[i].ino = ino;
	cc.sh->std[i].ok = 1;
}

/*
 * DEV:INO was the tree's stdout or stderr at its start: a fault aimed at
 * the program's files never fires on a call to these (crash-model.md: a
 * program must be able to say what went wrong), even in a child whose own
 * descriptors 1 and 2 are elsewhere (a shell's `cat > file` writes its
 * file through descriptor 1).
 */
static bool is_std(uint64_t dev, uint64_t ino)
{
	if (__atomic_load_n(&cc.sh->std_ready, __ATOMIC_ACQUIRE) != 2)
		return false;
	for (int i = 0; i < 2; i++)
		if (cc.sh->std[i].ok && cc.sh->std[i].dev == dev &&
		    cc.sh->std[i].ino == ino)
			return true;
	return false;
}

void rule_decide(struct cc_rec *r)
{
	bool std;

	r->n = __atomic_add_fetch(&cc.sh->calls[r->call], 1, __ATOMIC_SEQ_CST);
	if (!cc.has_rules[r->call])
		return;
	/* the tree's stdout and stderr: counted as ever (glob rules too:
	 * the numbers are the trace's), never faulted */
	if (r->fd >= 0 && !r->has_ino)
		stat_fd(r, r->fd);
	std = r->fd >= 0 && r->has_ino && is_std(r->dev, r->ino);
	r->rule = plan_fire(&cc.plan, &(struct plan_call){
		r->call, r->n, r->thread, r->path, cc.watch, std }, count_rule, NULL);
}

/*
 * The calls whose after hook keeps the paths of later calls right: an
 * open, whose descriptor number may have been closed unseen (close_range,
 * a raw system call) and what was known of it is stale, and the calls
 * that change names, after which any cached path may be. Needed whenever
 * paths are: a trace, or a glob rule of any call.
 */
bool rule_after_always(const struct cc_rec *r)
{
	if (!cc.trace && !cc.any_glob)
		return false;
	switch (r->call) {
	case CALL_open:
	case CALL_openat:
	case CALL_creat:
	case CALL_rename:
	case CALL_renameat:
	case CALL_renameat2:
	case CALL_unlink:
	case CALL_unlinkat:
	case CALL_rmdir:
	case CALL_link:
	case CALL_linkat:
		return true;
	default:
		return false;
	}
}

/* bytes to pass down for a short write of COUNT, or COUNT when none; the
 * O_DIRECT alignment it kept to into *ALIGN (1 without O_DIRECT) */
size_t shorten(struct cc_rec *r, int fd, size_t count, unsigned *align)
{
	const struct plan_rule *p = rule_of(r, PLAN_SHORT);
	size_t want;
	long fl;

	if (align)
		*align = 1;
	if (!p)
		return count;
	want = p->bytes ? p->bytes : count / 2;
	if (!want)
		want = 1;
	if ((io->fd_facts(r, fd, NULL, &fl) & CC_GOT_FLAGS) && (fl & O_DIRECT)) {
		/* fewer bytes, but still whole blocks, or the kernel says EINVAL */
		unsigned a = io->dio_align(r, fd);

		want -= want % a;
		if (want < a)
			want = a;
		if (align)
			*align = a;
	}
	/* a write that cannot be made shorter leaves the rule unfired */
	if (want >= count)
		return count;
	r->fired = true;
	return want;
}

/* ---- the maps file ---------------------------------------------------------- */

/*
 * The file mapping that holds ADDR in a maps file (/proc/PID/maps, open
 * at FD): the kernel's own account, right across fork() and for mappings
 * made before the library was loaded.
 */
void rule_map_find(int fd, uint64_t addr, struct cc_map *m)
{
	char buf[8192];
	size_t have = 0;

	m->len = 0;
	for (;;) {
		long n = syscall(SYS_read, fd, buf + have, sizeof(buf) - 1 - have);
		char *line, *nl;

		if (n <= 0)
			return;
		have += n;
		buf[have] = '\0';
		for (line = buf; (nl = strchr(line, '\n')); line = nl + 1) {
			unsigned long s, e;
			unsigned long long off, ino;
			char perms[8];
			int pos = 0;

			*nl = '\0';
			if (sscanf(line, "%lx-%lx %7s %llx %*s %llu %n",
				   &s, &e, perms, &off, &ino, &pos) < 5 ||
			    addr < s || addr >= e)
				continue;
			if (!ino || !pos || line[pos] != '/')
				return;	/* anonymous memory */
			snprintf(m->path, sizeof(m->path), "%s", line + pos);
			m->ino = ino;
			m->off = off + (addr - s);
			m->len = e - addr;
			m->shared = perms[3] == 's';
			return;
		}
		have -= line - buf;
		memmove(buf, line, have);
		if (have == sizeof(buf) - 1)
			have = 0;	/* a line longer than any path: skip it */
	}
}
