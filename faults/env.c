/*
 * The settings every backend reads: the CRASHCHECK_* variables of
 * docs/design.md, checked and put into cc. The preload library reads
 * them in the program (its constructor, or each run of a fork server);
 * the system-call supervisor (faults/syscall/) reads them in its own
 * process, before it starts the program. Either way a bad value is one
 * line on stderr and exit 2 before the program runs.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cc.h"

struct cc_state cc;
static struct cc_shared local_shared;	/* the counters without CRASHCHECK_SHARED */
static char watch_buf[CC_PATH_MAX];

static const char *abs_dir_env(const char *var, char *buf, size_t size, bool create)
{
	const char *v = getenv(var);
	int mode;
	size_t len;

	if (!v)
		return NULL;
	if (v[0] != '/')
		cc_die("%s '%s' is not an absolute path", var, v);
	len = strlen(v);
	if (len >= size)
		cc_die("%s '%.64s...' is too long", var, v);
	memcpy(buf, v, len + 1);
	while (len > 1 && buf[len - 1] == '/')
		buf[--len] = '\0';
	if (create && syscall(SYS_mkdirat, AT_FDCWD, buf, 0755) < 0 && errno != EEXIST)
		cc_die("mkdir %s '%s': %s", var, buf, strerror(errno));
	if (cc_sys_stat_ino(buf, NULL, &mode, NULL) < 0)
		cc_die("stat %s '%s': %s", var, buf, strerror(errno));
	if (!S_ISDIR(mode))
		cc_die("%s '%s' is not a directory", var, buf);
	return buf;
}

static void setup_shared(const char *path)
{
	struct cc_shared *sh;
	uint64_t want, seen;
	long long size;
	int fd;

	if (path[0] != '/')
		cc_die("CRASHCHECK_SHARED '%s' is not an absolute path", path);
	fd = cc_sys_open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		cc_die("open CRASHCHECK_SHARED '%s': %s", path, strerror(errno));
	if (cc_sys_fstat_ino(fd, NULL, NULL, &size) < 0)
		cc_die("fstat CRASHCHECK_SHARED '%s': %s", path, strerror(errno));
	/* growing to the same size is harmless when two processes race here */
	if (size < (long long)sizeof(*sh) &&
	    syscall(SYS_ftruncate, fd, (long)sizeof(*sh)) < 0)
		cc_die("ftruncate CRASHCHECK_SHARED '%s': %s", path, strerror(errno));
	sh = (void *)syscall(SYS_mmap, NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
			     MAP_SHARED, fd, 0);
	if (sh == MAP_FAILED)
		cc_die("mmap CRASHCHECK_SHARED '%s': %s", path, strerror(errno));
	cc_sys_close(fd);

	seen = 0;
	if (!__atomic_compare_exchange_n(&sh->magic, &seen, CC_SHARED_MAGIC, false,
					 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST) &&
	    seen != CC_SHARED_MAGIC)
		cc_die("CRASHCHECK_SHARED '%s' is not a crashcheck counter file", path);
	/* counters of another plan would fire rules on the wrong calls */
	want = cc_hash(cc.plan_text ? cc.plan_text : "", cc.plan_text ? strlen(cc.plan_text) : 0) | 1;
	seen = 0;
	if (!__atomic_compare_exchange_n(&sh->plan_hash, &seen, want, false,
					 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST) &&
	    seen != want)
		cc_die("CRASHCHECK_SHARED '%s' holds the counters of another plan", path);
	cc.sh = sh;
	cc.sh_file = true;
}

/* a sequence number at S, in decimal digits alone, up to END */
static bool parse_seq(const char *s, const char **end, uint64_t *out)
{
	char *e;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	*out = strtoull(s, &e, 10);
	*end = e;
	return !errno;
}

/*
 * CRASHCHECK_TRACE_FULL=LO-HI: the seqs whose lines are recorded in full.
 * A write outside them may be recorded thin (thin_write). Only for a
 * recorded run (snapshots; so never with CRASHCHECK_TRACE_FROM).
 */
static void parse_trace_full(void)
{
	const char *v = getenv("CRASHCHECK_TRACE_FULL"), *p;

	cc.thin_on = false;
	if (!v || !*v)
		return;
	if (!parse_seq(v, &p, &cc.full_lo) || *p != '-' ||
	    !parse_seq(p + 1, &p, &cc.full_hi) || *p || cc.full_lo > cc.full_hi)
		cc_die("CRASHCHECK_TRACE_FULL '%s' is not a range of sequence "
		       "numbers (LO-HI)", v);
	if (!cc.recorder)
		cc_die("CRASHCHECK_TRACE_FULL is set but the recorder is off "
		       "(CRASHCHECK_TRACE, CRASHCHECK_WATCH, CRASHCHECK_SNAPDIR)");
	cc.thin_on = true;
}

void cc_env_reset(void)
{
	const char *backend = cc.backend;
	void (*stop_program)(void) = cc.stop_program;
	const struct cc_io *io = cc.io;

	if (cc.sh_file)
		munmap(cc.sh, sizeof(*cc.sh));
	memset(&cc, 0, sizeof(cc));
	memset(&local_shared, 0, sizeof(local_shared));
	cc.backend = backend;
	cc.stop_program = stop_program;
	cc.io = io;
	cc_record_reset();
}

void cc_env_read(bool shared)
{
	static char err[256];
	const char *v;

	v = getenv("CRASHCHECK_PLAN");
	if (v && plan_parse(v, &cc.plan, err, sizeof(err)) < 0)
		cc_die("bad CRASHCHECK_PLAN: %s", err);
	cc.plan_text = v && cc.plan.nr ? v : NULL;

	v = getenv("CRASHCHECK_TRACE");
	if (v) {
		int fd;

		if (v[0] != '/')
			cc_die("CRASHCHECK_TRACE '%s' is not an absolute path", v);
		fd = cc_sys_open(v, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0)
			cc_die("open CRASHCHECK_TRACE '%s': %s", v, strerror(errno));
		cc_sys_close(fd);
		cc.trace = v;
	}
	cc.trace_from = 0;
	v = getenv("CRASHCHECK_TRACE_FROM");
	if (v && *v) {
		const char *end;

		if (!parse_seq(v, &end, &cc.trace_from) || *end)
			cc_die("CRASHCHECK_TRACE_FROM '%s' is not a sequence number", v);
		if (!cc.trace)
			cc_die("CRASHCHECK_TRACE_FROM is set but CRASHCHECK_TRACE is not");
		/* the explorer replays a trace from its start: one that starts
		 * late has nothing to replay, and its snapshots would be lost */
		if (getenv("CRASHCHECK_SNAPDIR"))
			cc_die("CRASHCHECK_TRACE_FROM is set with CRASHCHECK_SNAPDIR: "
			       "a trace that starts late cannot be replayed");
	}

	cc.watch = abs_dir_env("CRASHCHECK_WATCH", watch_buf, sizeof(watch_buf), false);
	cc.watch_len = cc.watch ? strlen(cc.watch) : 0;
	if (getenv("CRASHCHECK_SNAPDIR")) {
		static char snap_buf[CC_PATH_MAX];

		if (!cc.watch)
			cc_die("CRASHCHECK_SNAPDIR is set but CRASHCHECK_WATCH is not");
		/* the snapshots are named only in the trace: without one they
		 * would be taken and lost, and the run would look recorded */
		if (!cc.trace)
			cc_die("CRASHCHECK_SNAPDIR is set but CRASHCHECK_TRACE is not");
		cc.snapdir = abs_dir_env("CRASHCHECK_SNAPDIR", snap_buf,
					 sizeof(snap_buf), true);
	}
	cc.recorder = cc.trace && cc.watch && cc.snapdir;
	/* full: every write recorded as a whole-file snapshot, the reference
	 * the range snapshots are tested against */
	v = getenv("CRASHCHECK_SNAP");
	if (v && *v && strcmp(v, "full") && strcmp(v, "range"))
		cc_die("CRASHCHECK_SNAP '%s' is not 'full' or 'range'", v);
	cc.snap_full = v && !strcmp(v, "full");
	parse_trace_full();
	v = getenv("CRASHCHECK_LIMIT");
	cc.limit = 0;
	if (v && *v) {
		const char *end;

		if (!parse_seq(v, &end, &cc.limit) || *end)
			cc_die("CRASHCHECK_LIMIT '%s' is not a number of bytes", v);
	}
	v = getenv("CRASHCHECK_TRACE_LIMIT");
	cc.trace_limit = 0;
	if (v && *v) {
		const char *end;

		if (!parse_seq(v, &end, &cc.trace_limit) || *end)
			cc_die("CRASHCHECK_TRACE_LIMIT '%s' is not a number of bytes", v);
		if (!cc.trace)
			cc_die("CRASHCHECK_TRACE_LIMIT is set but CRASHCHECK_TRACE is not");
	}
	v = getenv("CRASHCHECK_NOTE");
	cc.note = NULL;
	if (v && *v) {
		if (v[0] != '/')
			cc_die("CRASHCHECK_NOTE '%s' is not an absolute path", v);
		cc.note = v;
	}

	v = getenv("CRASHCHECK_SHARED");
	if (v && shared)
		setup_shared(v);
	else
		cc.sh = &local_shared;

	for (size_t i = 0; i < cc.plan.nr; i++) {
		cc.has_rules[cc.plan.rules[i].call] = true;
		if (cc.plan.rules[i].glob)
			cc.has_glob[cc.plan.rules[i].call] = cc.any_glob = true;
	}
}
