/*
 * The trace: a JSON line per call, crash and process start, numbered in
 * one sequence across the process tree (seq), and how each line reaches
 * the file (a shared mapping of it, or a write). What a line's snapshot
 * holds is snap.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "rules.h"
#include "record.h"

static uint64_t next_seq(void)
{
	return __atomic_fetch_add(&cc.sh->seq, 1, __ATOMIC_SEQ_CST);
}

/*
 * The trace stays open, one descriptor per process, instead of an open and
 * a close per line. The program owns the descriptor table, though: it may
 * close every descriptor it did not open (closefrom, close_range), or dup2()
 * its own file onto our number. So the descriptor sits high, above where
 * open() hands out numbers, and before each line an fstat checks that it
 * is still the trace (same st_dev and st_ino); if not, we open it again and
 * never touch that number, which is the program's now. A forked child
 * keeps writing to the inherited one: O_APPEND keeps the lines of a tree
 * whole. When no high number can be had (a low RLIMIT_NOFILE), or another
 * thread holds the descriptor, the line goes the old way, open and close.
 */
static int trace_busy;		/* try-lock of the three below */
static int trace_fd = -1;	/* our descriptor of the trace, -1 = none */
static uint64_t trace_dev, trace_ino;

/* A descriptor of the trace: for the shared mapping (CRASHCHECK_SHARED)
 * read and write, and no O_APPEND, on which pwrite would append; else
 * for appending lines. */
static int trace_open(void)
{
	return cc_sys_open(cc.trace, (cc.sh_file ? O_RDWR : O_WRONLY | O_APPEND) |
			   O_CREAT | O_CLOEXEC, 0644);
}

/*
 * The lowest number our descriptors (the trace, the read-back ones) may
 * take, 0 = keep none: near the limit, where open() gets only when the
 * program holds almost every descriptor it may, but never so high that the
 * kernel grows a huge descriptor table. Read once per process.
 */
static int fd_floor = -1;	/* trace_fd_floor's, once read */

int cc_fd_floor(void)
{
	struct { uint64_t cur, max; } lim;
	int f = __atomic_load_n(&fd_floor, __ATOMIC_RELAXED);

	if (f >= 0)
		return f;
	if (syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, NULL, &lim) < 0 || lim.cur < 128)
		f = 0;
	else
		f = (lim.cur > 1024 ? 1024 : (int)lim.cur) - 64;
	__atomic_store_n(&fd_floor, f, __ATOMIC_RELAXED);
	return f;
}

static bool trace_fd_current(void)
{
	struct stat st;

	return trace_fd >= 0 && cc_sys_fstat(trace_fd, &st) == 0 &&
	       st.st_dev == trace_dev && st.st_ino == trace_ino;
}

static void trace_fd_reopen(void)
{
	struct stat st;
	int fd, floor = cc_fd_floor(), hi;

	trace_fd = -1;	/* gone or the program's: never closed by us */
	if (!floor)
		return;
	fd = trace_open();
	if (fd < 0)
		return;
	hi = syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, floor);
	cc_sys_close(fd);
	if (hi < 0)
		return;
	if (cc_sys_fstat(hi, &st) < 0) {
		cc_sys_close(hi);
		return;
	}
	trace_fd = hi;
	trace_dev = st.st_dev;
	trace_ino = st.st_ino;
}

/*
 * With CRASHCHECK_SHARED, the process tree shares a mapping of counters
 * (cc.sh), and the trace is written the way a shared mapping allows: a
 * line's place is handed out by one atomic add on cc.sh->trace_end, and
 * the line is copied there through a MAP_SHARED mapping of the trace,
 * with no system call (the page cache keeps it when the process dies).
 * The file grows by fallocate(2), which never shrinks it, in steps that
 * double, so it ends in zeros past the last line. fallocate also
 * allocates the pages: a full file system shows as a refused fallocate
 * here, not as a SIGBUS in the program when a page of a sparse file
 * cannot be had. A line that cannot go through the mapping (another
 * thread holds it, fallocate refused, no high descriptor) is pwrite(2)n
 * at its place instead.
 *
 * A process can die between taking a place and filling it, or half-way
 * through filling it (SIGKILL from anyone, at any instruction): the
 * place then holds zeros, or zeros and part of the line. The copy puts
 * the line's first byte last, so a line whose '{' is there is whole, and
 * the reader (harness/engine/trace.py, clean) keeps of a text line holding a
 * zero byte only the record that starts after its last zero.
 * Without CRASHCHECK_SHARED each process's counters are its own, so
 * lines are appended (O_APPEND), as before.
 */
#define TRACE_MAP_MIN 4096
/*
 * The cut line, where CRASHCHECK_TRACE_LIMIT stopped the trace (trace_drop):
 * {"ev":"dropped","lines":"<20 digits>","bytes":"<20 digits>","limit":N}.
 * The counts are strings of a fixed width at fixed places, rewritten in
 * place as lines are dropped: a rewrite that a SIGKILL cuts short leaves
 * digits still, never a line the reader refuses.
 */
#define CUT_HEAD "{\"ev\":\"dropped\",\"lines\":\""
#define CUT_MID "\",\"bytes\":\""
#define CUT_DIGITS 20
#define CUT_COUNTS (sizeof(CUT_HEAD) - 1)	/* where the counts start */
#define CUT_COUNTS_LEN (2 * CUT_DIGITS + sizeof(CUT_MID) - 1)
#define CUT_TAIL "\",\"limit\":"
#define CUT_LEN (CUT_COUNTS + CUT_COUNTS_LEN + sizeof(CUT_TAIL) - 1 + CUT_DIGITS + 2)
static char *tmap;		/* our mapping of the trace, NULL = none */
static uint64_t tmap_len;	/* its length; the file is at least as long */
static bool tmap_off;		/* mapping refused once: pwrite from then on */

/* Map the trace to at least END bytes; trace_busy held. */
static bool trace_map(uint64_t end)
{
	uint64_t want = TRACE_MAP_MIN;
	void *p;

	if (tmap_off || trace_fd < 0)
		return false;
	while (want < end || want < 2 * tmap_len)
		want *= 2;
	/* never past what a cut trace can hold: the limit and the cut line,
	 * so that the doubling does not allocate what no line will use */
	if (cc.trace_limit) {
		uint64_t most = (cc.trace_limit + CUT_LEN + 4095) & ~4095ULL;

		if (want > most)
			want = most > end ? most : end;
	}
	if (syscall(SYS_fallocate, trace_fd, 0, 0L, (long)want) < 0) {
		tmap_off = true;
		return false;
	}
	if (tmap)
		p = (void *)syscall(SYS_mremap, tmap, tmap_len, want, MREMAP_MAYMOVE);
	else
		p = (void *)syscall(SYS_mmap, NULL, want, PROT_READ | PROT_WRITE,
				    MAP_SHARED, trace_fd, 0L);
	if (p == MAP_FAILED) {
		tmap_off = true;
		return false;
	}
	tmap = p;
	tmap_len = want;
	return true;
}

static bool trace_pwrite(int fd, uint64_t off, const char *buf, size_t len)
{
	while (len) {
		long n = syscall(SYS_pwrite64, fd, buf, len, (long)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		buf += n;
		off += n;
		len -= n;
	}
	return true;
}

/* LEN bytes of BUF at OFF of the trace, through the mapping where it
 * can be had; trace_busy held */
static bool trace_put(uint64_t off, const char *buf, size_t len)
{
	if (off + len > tmap_len) {
		if (!trace_fd_current())
			trace_fd_reopen();
		if (!trace_map(off + len))
			return trace_fd >= 0 && trace_pwrite(trace_fd, off, buf, len);
	}
	memcpy(tmap + off + 1, buf + 1, len - 1);
	__atomic_store_n(tmap + off, buf[0], __ATOMIC_RELEASE);
	return true;
}

/* LEN bytes of BUF through FD: at their place OFF with CRASHCHECK_SHARED,
 * else appended */
static bool trace_write(int fd, uint64_t off, const char *buf, size_t len)
{
	return cc.sh_file ? trace_pwrite(fd, off, buf, len) :
			    cc_sys_write_all(fd, buf, len) == 0;
}

static int emit_warned;	/* emit() said once that a line was lost */

/* LEN bytes of BUF to the trace: at OFF with CRASHCHECK_SHARED, else
 * appended */
static void emit_at(uint64_t off, const char *buf, size_t len)
{
	bool done = false;
	int fd;

	if (cc_try_lock(&trace_busy)) {
		if (cc.sh_file) {
			done = trace_put(off, buf, len);
		} else {
			if (!trace_fd_current())
				trace_fd_reopen();
			done = trace_fd >= 0 && trace_write(trace_fd, off, buf, len);
		}
		cc_unlock(&trace_busy);
	}
	if (!done) {
		fd = trace_open();
		if (fd < 0 || !trace_write(fd, off, buf, len)) {
			if (!__atomic_exchange_n(&emit_warned, 1, __ATOMIC_SEQ_CST))
				cc_warn("write trace '%s': %s", cc.trace, strerror(errno));
		}
		if (fd >= 0)
			cc_sys_close(fd);
	}
}

/*
 * CRASHCHECK_TRACE_LIMIT: the lines of a run take at most that many bytes
 * of its trace. A program that loops on a failing call (a full disk
 * retried for ever) writes lines until its time limit, 143 MB of them
 * once; past the limit a line is counted instead (cc.sh->dropped, and its
 * bytes), and one more line, the cut line (CUT_HEAD), says how many were
 * dropped. The counts live in the shared counters, so the process tree
 * (threads, forked children) counts in one place, and whoever drops a line
 * rewrites the cut line's counts (trace_cut_update). The cut line goes
 * after the limit, so a cut trace ends at most CUT_LEN bytes past it.
 *
 * A line's place is taken only while it fits (trace_reserve), so a cut
 * trace holds the lines up to the limit and none after, whichever process
 * wrote them. Without CRASHCHECK_SHARED the place is the bytes this
 * process's counters saw appended: exact in the supervisor, which writes
 * every line of the program itself; a preloaded tree without shared
 * counters counts per process, and its cut line's counts are those of
 * the moment of the cut (nothing tells where in the file it landed).
 */
static bool trace_reserve(size_t len, uint64_t *off)
{
	uint64_t end = __atomic_load_n(&cc.sh->trace_end, __ATOMIC_SEQ_CST);

	do {
		if (__atomic_load_n(&cc.sh->cut_claimed, __ATOMIC_SEQ_CST) ||
		    end + len > cc.trace_limit)
			return false;
	} while (!__atomic_compare_exchange_n(&cc.sh->trace_end, &end, end + len,
					      false, __ATOMIC_SEQ_CST,
					      __ATOMIC_SEQ_CST));
	*off = end;
	return true;
}

/* whether the cut line's place is known, and so its counts can be
 * rewritten in place */
static bool cut_in_place(void)
{
	return cc.sh_file || cc.backend;
}

static void cut_counts(char *out, uint64_t lines, uint64_t bytes)
{
	char tmp[CUT_COUNTS_LEN + 1];

	snprintf(tmp, sizeof(tmp), "%0*llu" CUT_MID "%0*llu", CUT_DIGITS,
		 (unsigned long long)lines, CUT_DIGITS, (unsigned long long)bytes);
	memcpy(out, tmp, CUT_COUNTS_LEN);
}

/* the counts of the cut line at AT rewritten with LINES and BYTES */
static void cut_rewrite(uint64_t at, uint64_t lines, uint64_t bytes)
{
	char counts[CUT_COUNTS_LEN];
	uint64_t off = at + CUT_COUNTS;
	int fd;

	cut_counts(counts, lines, bytes);
	if (cc.sh_file && cc_try_lock(&trace_busy)) {
		bool mapped = tmap && off + CUT_COUNTS_LEN <= tmap_len;

		if (mapped)
			memcpy(tmap + off, counts, CUT_COUNTS_LEN);
		cc_unlock(&trace_busy);
		if (mapped)
			return;
	}
	/* not through the appending descriptor, on which pwrite appends */
	fd = cc_sys_open(cc.trace, O_WRONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return;
	trace_pwrite(fd, off, counts, CUT_COUNTS_LEN);
	cc_sys_close(fd);
}

/*
 * The cut line's counts made the shared ones. Under cut_busy, a try-lock
 * (one process at a time rewrites; another one that finds it taken leaves
 * it to the holder, which looks at the counts again once it let go and
 * rewrites them while they moved). A holder killed meanwhile leaves the
 * counts where it wrote them: the reader says "at least".
 */
static void trace_cut_update(void)
{
	for (;;) {
		uint64_t at = __atomic_load_n(&cc.sh->cut_at, __ATOMIC_SEQ_CST);
		uint64_t lines, bytes;

		if (!at || !cut_in_place() || !cc_try_lock(&cc.sh->cut_busy))
			return;
		lines = __atomic_load_n(&cc.sh->dropped, __ATOMIC_SEQ_CST);
		bytes = __atomic_load_n(&cc.sh->dropped_bytes, __ATOMIC_SEQ_CST);
		cut_rewrite(at - 1, lines, bytes);
		cc_unlock(&cc.sh->cut_busy);
		if (__atomic_load_n(&cc.sh->dropped, __ATOMIC_SEQ_CST) == lines)
			return;
	}
}

/* a line of LEN bytes past the limit: counted, and said in the cut line,
 * which the first one to drop a line writes */
static void trace_drop(size_t len)
{
	char line[CUT_LEN + 1];
	uint64_t zero = 0, off, lines, bytes;

	lines = __atomic_add_fetch(&cc.sh->dropped, 1, __ATOMIC_SEQ_CST);
	bytes = __atomic_add_fetch(&cc.sh->dropped_bytes, len, __ATOMIC_SEQ_CST);
	if (__atomic_compare_exchange_n(&cc.sh->cut_claimed, &zero, 1, false,
					__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
		memcpy(line, CUT_HEAD, CUT_COUNTS);
		cut_counts(line + CUT_COUNTS, lines, bytes);
		snprintf(line + CUT_COUNTS + CUT_COUNTS_LEN,
			 sizeof(line) - CUT_COUNTS - CUT_COUNTS_LEN,
			 CUT_TAIL "%*llu}\n", CUT_DIGITS,
			 (unsigned long long)cc.trace_limit);
		off = __atomic_fetch_add(&cc.sh->trace_end, CUT_LEN, __ATOMIC_SEQ_CST);
		emit_at(off, line, CUT_LEN);
		__atomic_store_n(&cc.sh->cut_at, off + 1, __ATOMIC_SEQ_CST);
	}
	trace_cut_update();
}

static void emit(struct sb *sb)
{
	uint64_t off = 0;

	sb_lit(sb, "\n");
	if (sb->oom) {
		if (!__atomic_exchange_n(&emit_warned, 1, __ATOMIC_SEQ_CST))
			cc_warn("trace line dropped: out of memory");
		goto out;
	}
	if (cc.trace_limit) {
		if (!trace_reserve(sb->len, &off)) {
			trace_drop(sb->len);
			goto out;
		}
	} else if (cc.sh_file) {
		off = __atomic_fetch_add(&cc.sh->trace_end, sb->len, __ATOMIC_SEQ_CST);
	}
	emit_at(off, sb->buf, sb->len);
out:
	sb_release(sb);
}

/*
 * The process id every line carries. getpid(2) is a system call since glibc
 * 2.25 stopped caching it, one per line; the id only changes in the child
 * of fork, whose handler below asks again. A child made without fork's
 * handlers (vfork, _Fork, a raw clone) writes its lines under its parent's
 * id until it execs: the id only labels lines, nothing is matched on it.
 * kill_self() asks the kernel, never this.
 */
static pid_t trace_pid;

void cc_trace_after_fork(void)
{
	trace_pid = syscall(SYS_getpid);
	/* the child has one thread: a lock held by another one is free
	 * (and so is cut_busy where the counters are this process's own) */
	trace_busy = 0;
	if (!cc.sh_file)
		cc.sh->cut_busy = 0;
}

void cc_record_reset(void)
{
	if (trace_fd >= 0)
		cc_sys_close(trace_fd);
	trace_fd = -1;
	trace_dev = trace_ino = 0;
	if (tmap)
		syscall(SYS_munmap, tmap, (long)tmap_len);
	tmap = NULL;
	tmap_len = 0;
	tmap_off = false;
	trace_busy = 0;
	cc_snap_reset();
	cc_store_reset();
	emit_warned = 0;
	trace_pid = 0;
}

void cc_trace_pid(pid_t pid)
{
	trace_pid = pid;
}

void cc_trace_init(void)
{
	char exe[CC_PATH_MAX];
	long n;

	trace_pid = syscall(SYS_getpid);
	if (!cc.trace)
		return;
	n = syscall(SYS_readlinkat, AT_FDCWD, "/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	cc_trace_start(trace_pid, syscall(SYS_getppid), exe);
}

void cc_trace_start(pid_t pid, pid_t ppid, const char *exe)
{
	struct sb sb;
	uint64_t seq;
	bool first;

	if (!cc.trace)
		return;
	sb_init(&sb);
	first = __atomic_fetch_add(&cc.sh->inits, 1, __ATOMIC_SEQ_CST) == 0;
	if (first && (cc.sh_file || cc.trace_limit)) {
		/* a trace that holds lines already is added to, as O_APPEND did */
		long long size;
		uint64_t zero = 0;

		if (cc_sys_stat_ino(cc.trace, NULL, NULL, &size) == 0 && size > 0)
			__atomic_compare_exchange_n(&cc.sh->trace_end, &zero,
						    (uint64_t)size, false,
						    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	}
	seq = next_seq();
	sb_lit(&sb, "{\"ev\":\"init\",\"seq\":");
	sb_u64(&sb, seq);
	sb_lit(&sb, ",\"pid\":");
	sb_i64(&sb, pid);
	sb_lit(&sb, ",\"ppid\":");
	sb_i64(&sb, ppid);
	sb_lit(&sb, ",\"exe\":");
	sb_quote(&sb, exe);
	sb_lit(&sb, ",\"plan\":");
	sb_quote(&sb, cc.plan_text ? cc.plan_text : "");
	sb_lit(&sb, ",\"watch\":");
	if (cc.watch)
		sb_quote(&sb, cc.watch);
	else
		sb_lit(&sb, "null");
	if (cc.backend) {
		sb_lit(&sb, ",\"backend\":");
		sb_quote(&sb, cc.backend);
	}
	/*
	 * Only the first process's listing is the durable starting state the
	 * harness set up; an exec'd child starts somewhere in the middle.
	 */
	if (cc.recorder && first) {
		uint64_t root;

		sb_lit(&sb, ",\"snap\":{");
		if (cc_sys_stat_ino(cc.watch, &root, NULL, NULL) == 0) {
			sb_lit(&sb, "\"root\":");
			sb_u64(&sb, root);
			sb_lit(&sb, ",");
		}
		cc_snap_all(&sb);
		sb_lit(&sb, "}");
	}
	sb_lit(&sb, "}");
	emit(&sb);
}

/* ---- the record of a call, shared by both backends -------------------- */

void cc_rec_init(struct cc_rec *r, int call)
{
	r->call = call;
	r->n = 0;
	r->thread = 1;
	r->rule = -1;
	r->fired = false;
	r->fd = -1;
	r->path[0] = r->path2[0] = '\0';
	r->has_ino = r->is_dir = r->is_reg = false;
	r->has_off = r->has_len = false;
	r->off = r->len = 0;
	r->oflags = r->msflags = r->mapflags = -1;
	r->renflags = 0;
	r->rwflags = 0;
	r->ret = 0;
	r->err = 0;
	r->snap = 0;
	r->snap_fd = -1;
	r->snap_fd_borrowed = r->snap_fd_kept = false;
	r->dev = 0;
	r->has_st = false;
	r->fdflags = -1;
	r->buf = NULL;
	r->iov = NULL;
	r->iovcnt = 0;
	r->off_exact = false;
	r->pos = -1;
	r->tofree = NULL;
	r->ctx = NULL;
	r->at = NULL;
	r->frames = NULL;
	r->nframes = 0;
	r->maplen = 0;
	/* the seq its line would get is at least this one: a call seen
	 * before CRASHCHECK_TRACE_FROM is one the caller does not want */
	r->lite = cc.trace_from &&
		  __atomic_load_n(&cc.sh->seq, __ATOMIC_RELAXED) < cc.trace_from;
	r->thin = false;
}

/*
 * Whether the write R describes (after pre(): its rule decided) is recorded
 * thin under CRASHCHECK_TRACE_FULL: outside the full seqs, chosen by no
 * rule, to a regular file under WATCH whose descriptor has none of O_SYNC,
 * O_DSYNC and O_DIRECT (such a write is durable or on the device when it
 * returns, so what it wrote matters to any crash after it). Its line keeps
 * the file (fstat), the flags (F_GETFL) and what the call returned, and
 * says "thin": no offset and no snapshot, the three system calls of a
 * write's range snapshot (lseek, fstat after, the read-back) left out. The
 * sweep runs a case that way where it expects the program to go on to an
 * fsync that snapshots the file whole, which makes those writes moot; a
 * thin line it would need to read sends the case to a full run.
 */
bool cc_thin_write(struct cc_rec *r)
{
	uint64_t s;

	if (!cc.thin_on)
		return false;
	/* the seq its line gets is at least this one (as for a lite call):
	 * one above HI surely is outside; one below LO may not be where
	 * other processes make calls, and its line says thin */
	s = __atomic_load_n(&cc.sh->seq, __ATOMIC_RELAXED);
	r->thin = (s < cc.full_lo || s > cc.full_hi) && r->rule < 0 &&
		  cc.trace && !r->lite && !cc.snap_full && r->has_st && r->is_reg &&
		  r->fdflags >= 0 &&
		  !(r->fdflags & (O_SYNC | O_DSYNC | O_DIRECT)) &&
		  !(r->rwflags & (RWF_SYNC | RWF_DSYNC)) &&
		  cc_under_watch(r->path);
	return r->thin;
}

/* "NAME" in a list of flags (a comma before all but the first) */
static void sb_flag(struct sb *sb, const char *name, bool *first)
{
	if (!*first)
		sb_lit(sb, ",");
	*first = false;
	sb_lit(sb, "\"");
	sb_str(sb, name);
	sb_lit(sb, "\"");
}

static void add_oflags(struct sb *sb, int fl, int rwf)
{
	static const struct { int bit; const char *name; } names[] = {
		{ O_CREAT, "O_CREAT" }, { O_EXCL, "O_EXCL" },
		{ O_TRUNC, "O_TRUNC" }, { O_APPEND, "O_APPEND" },
		{ O_DIRECT, "O_DIRECT" },
	};
	bool first = true;

	sb_lit(sb, ",\"flags\":[");
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (fl & names[i].bit)
			sb_flag(sb, names[i].name, &first);
	}
	/* O_TMPFILE is O_DIRECTORY plus a bit of its own: a file with no
	 * name until linkat gives it one */
	if ((fl & O_TMPFILE) == O_TMPFILE)
		sb_flag(sb, "O_TMPFILE", &first);
	/* O_SYNC is O_DSYNC plus a bit of its own */
	if ((fl & O_SYNC) == O_SYNC)
		sb_flag(sb, "O_SYNC", &first);
	else if (fl & O_DSYNC)
		sb_flag(sb, "O_DSYNC", &first);
	/* pwritev2's own, for this one write */
	if (rwf & RWF_DSYNC)
		sb_flag(sb, "RWF_DSYNC", &first);
	if (rwf & RWF_SYNC)
		sb_flag(sb, "RWF_SYNC", &first);
	if (rwf & RWF_APPEND)
		sb_flag(sb, "RWF_APPEND", &first);
	sb_lit(sb, "]");
}

static void add_flag_list(struct sb *sb, const char *const *names, const int *bits,
			  size_t nr, int fl)
{
	bool first = true;

	sb_lit(sb, ",\"flags\":[");
	for (size_t i = 0; i < nr; i++) {
		if ((fl & bits[i]) == bits[i])
			sb_flag(sb, names[i], &first);
	}
	sb_lit(sb, "]");
}

/*
 * How a call or crash line starts: {"ev":"EV","seq":N,"pid":P,"call":"C","n":N
 * (the harness reads these first fields by their place, trace.Lazy). The
 * seq is taken here, before any snapshot the line carries.
 */
static void sb_head_seq(struct sb *sb, const char *ev, const struct cc_rec *r,
			uint64_t seq)
{
	sb_lit(sb, "{\"ev\":\"");
	sb_str(sb, ev);
	sb_lit(sb, "\",\"seq\":");
	sb_u64(sb, seq);
	sb_lit(sb, ",\"pid\":");
	sb_i64(sb, trace_pid);
	sb_lit(sb, ",\"call\":\"");
	sb_str(sb, call_table[r->call].name);
	sb_lit(sb, "\",\"n\":");
	sb_u64(sb, r->n);
	/* a process's first thread is the only one most have: said of the
	 * others alone */
	if (r->thread > 1) {
		sb_lit(sb, ",\"thread\":");
		sb_u64(sb, r->thread);
	}
	if (r->at) {
		char site[CC_PATH_MAX + 32];

		if (cc_callsite(r->at, site, sizeof(site))) {
			sb_lit(sb, ",\"at\":");
			sb_quote(sb, site);
		}
	}
	for (int i = 0; i < r->nframes; i++) {
		const struct cc_frame *f = &r->frames[i];
		char site[CC_PATH_MAX + 32];

		snprintf(site, sizeof(site), "%s+0x%llx", f->obj ? f->obj : "",
			 (unsigned long long)f->off);
		if (i == 0)
			sb_lit(sb, ",\"at\":");
		else if (i == 1)
			sb_lit(sb, ",\"up\":[");
		else
			sb_lit(sb, ",");
		sb_quote(sb, site);
	}
	if (r->nframes > 1)
		sb_lit(sb, "]");
}

static void sb_head(struct sb *sb, const char *ev, const struct cc_rec *r)
{
	sb_head_seq(sb, ev, r, next_seq());
}

/*
 * An EINTR the plan injects stands for a signal that interrupted the call,
 * and a signal interrupts a call with EINTR only when its handler was
 * installed without SA_RESTART (Linux interrupts no write to a local
 * regular file in any case). The line of such a fault lists the signals
 * that could have done it, "intr":[14] ([] when none), so that the harness
 * can tell a fault that cannot happen where the program ran
 * (crash-model.md, "Severity"). The preload reads the dispositions in the
 * program; the supervisor cannot read another process's handler flags,
 * and lists every signal it catches (/proc/PID/status, SigCgt), as if none
 * had SA_RESTART. Signals 32 and 33 are glibc's own (thread cancellation,
 * setuid across threads), sent only by the calls that need them.
 */
static bool intr_signal(int sig)
{
	return sig != SIGKILL && sig != SIGSTOP && sig != 32 && sig != 33;
}

static void add_intr(struct sb *sb)
{
	uint64_t caught = 0;
	bool first = true;
	int sig;

	if (cc.backend) {
		char path[64], buf[4096];
		const char *at;
		long fd, n;

		snprintf(path, sizeof(path), "/proc/%d/status", (int)trace_pid);
		fd = cc_sys_open(path, O_RDONLY | O_CLOEXEC, 0);
		n = fd < 0 ? -1 : syscall(SYS_read, fd, buf, sizeof(buf) - 1);
		if (fd >= 0)
			cc_sys_close(fd);
		if (n <= 0)
			return;		/* not known: no field, as before */
		buf[n] = '\0';
		at = strstr(buf, "\nSigCgt:");
		if (!at)
			return;
		caught = strtoull(at + 9, NULL, 16);
	} else {
		/* the kernel's struct sigaction on x86-64 and aarch64 */
		struct { unsigned long handler, flags, restorer, mask; } ksa;

		for (sig = 1; sig <= 64; sig++)
			if (syscall(SYS_rt_sigaction, sig, NULL, &ksa, 8) == 0 &&
			    ksa.handler != (unsigned long)SIG_DFL &&
			    ksa.handler != (unsigned long)SIG_IGN &&
			    !(ksa.flags & SA_RESTART))
				caught |= 1ULL << (sig - 1);
	}
	sb_lit(sb, ",\"intr\":[");
	for (sig = 1; sig <= 64; sig++) {
		if (!(caught & (1ULL << (sig - 1))) || !intr_signal(sig))
			continue;
		if (!first)
			sb_lit(sb, ",");
		sb_i64(sb, sig);
		first = false;
	}
	sb_lit(sb, "]");
}

/*
 * The call's line. A lite call (before CRASHCHECK_TRACE_FROM) takes its
 * seq, so that the lines after it are numbered as in a whole trace, and
 * has a line only when a rule fired on it or another process took the
 * seqs up to the start meanwhile: with the fields it has (no path, no
 * offset), for the faulted calls are all in the trace and a line once
 * the trace has started is never missing.
 */
void cc_trace_call(struct cc_rec *r)
{
	struct sb sb;
	uint64_t seq;

	if (r->err)
		cc_note_failure(r, r->err);
	if (!cc.trace)
		goto out;
	seq = next_seq();
	if (r->lite && !r->fired && seq < cc.trace_from)
		goto out;
	sb_init(&sb);
	sb_head_seq(&sb, "call", r, seq);
	if (r->fd >= 0) {
		sb_lit(&sb, ",\"fd\":");
		sb_i64(&sb, r->fd);
	}
	if (r->path[0]) {
		sb_lit(&sb, ",\"path\":");
		sb_quote(&sb, r->path);
	}
	if (r->path2[0]) {
		sb_lit(&sb, ",\"path2\":");
		sb_quote(&sb, r->path2);
	}
	if (r->has_ino) {
		sb_lit(&sb, ",\"ino\":");
		sb_u64(&sb, r->ino);
	}
	if (r->is_dir)
		sb_lit(&sb, ",\"dir\":true");
	if (r->has_off) {
		sb_lit(&sb, ",\"off\":");
		sb_i64(&sb, r->off);
	}
	if (r->has_len) {
		sb_lit(&sb, ",\"len\":");
		sb_i64(&sb, r->len);
	}
	if (r->oflags >= 0)
		add_oflags(&sb, r->oflags, r->rwflags);
	if (r->msflags >= 0) {
		static const char *const n[] = { "MS_SYNC", "MS_ASYNC", "MS_INVALIDATE" };
		static const int b[] = { MS_SYNC, MS_ASYNC, MS_INVALIDATE };
		add_flag_list(&sb, n, b, 3, r->msflags);
	}
	if (r->mapflags >= 0) {
		static const char *const n[] = { "MAP_SHARED", "MAP_PRIVATE" };
		static const int b[] = { MAP_SHARED, MAP_PRIVATE };
		add_flag_list(&sb, n, b, 2, r->mapflags);
	}
	if (r->renflags) {
		static const char *const n[] = { "RENAME_NOREPLACE", "RENAME_EXCHANGE",
						 "RENAME_WHITEOUT" };
		static const int b[] = { 1, 2, 4 };
		add_flag_list(&sb, n, b, 3, r->renflags);
	}
	sb_lit(&sb, ",\"ret\":");
	sb_i64(&sb, r->ret);
	sb_lit(&sb, ",\"errno\":");
	sb_i64(&sb, r->err);
	if (r->thin)
		sb_lit(&sb, ",\"thin\":true");
	if (r->rule >= 0 && r->fired) {
		char act[32];

		plan_action_str(&cc.plan.rules[r->rule], act, sizeof(act));
		sb_lit(&sb, ",\"fault\":{\"rule\":");
		sb_i64(&sb, r->rule);
		sb_lit(&sb, ",\"action\":\"");
		sb_str(&sb, act);
		sb_lit(&sb, "\"}");
		if (cc.plan.rules[r->rule].action == PLAN_ERRNO &&
		    cc.plan.rules[r->rule].err == EINTR)
			add_intr(&sb);
	}

	if (cc.recorder && r->snap) {
		sb_lit(&sb, ",\"snap\":{");
		if (r->snap & SNAP_ALL)
			cc_snap_all(&sb);
		else
			cc_snap_some(&sb, r);
		sb_lit(&sb, "}");
	}
	sb_lit(&sb, "}");
	emit(&sb);
out:
	if (r->snap_fd >= 0 && !r->snap_fd_borrowed)
		cc_sys_close(r->snap_fd);
	r->snap_fd = -1;
}

void cc_trace_crash(const struct cc_rec *r, const char *when)
{
	struct sb sb;

	if (!cc.trace)
		return;
	sb_init(&sb);
	sb_head(&sb, "crash", r);
	sb_lit(&sb, ",\"when\":\"");
	sb_str(&sb, when);
	sb_lit(&sb, "\",\"rule\":");
	sb_i64(&sb, r->rule);
	sb_lit(&sb, "}");
	emit(&sb);
}
