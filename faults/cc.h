#ifndef CRASHCHECK_CC_H
#define CRASHCHECK_CC_H

/*
 * Internals of libcrashcheck.so shared by its source files: the state read
 * from the environment, the record of one intercepted call, the recorder.
 */

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "plan.h"

struct cc_io;	/* rules.h */

#define CC_PATH_MAX 4096
#define CC_TAINT_MAX 64
/* a range snapshot of at most this many bytes goes in the trace line ("data") */
#define CC_INLINE_MAX 512

/*
 * The counters, in the CRASHCHECK_SHARED mapping when it is set so that a
 * process tree counts calls in one sequence, else in process memory.
 */
struct cc_shared {
	uint64_t magic;		/* CC_SHARED_MAGIC once set up */
	uint64_t plan_hash;	/* hash of the plan the counters belong to */
	uint64_t seq;		/* trace sequence numbers handed out */
	uint64_t inits;		/* processes that started under this plan */
	uint64_t calls[CALL__COUNT];		/* per call: calls made */
	uint64_t rules[PLAN_MAX_RULES];		/* per glob rule: matching calls */
	uint64_t names_gen;	/* name-changing calls made: a path cached before the last one may be stale */
	uint64_t taint_nr;	/* slots of taint[] claimed; past CC_TAINT_MAX every inode is tainted */
	struct {
		uint64_t dev, ino;
		uint64_t ready;	/* set last: dev and ino are written */
	} taint[CC_TAINT_MAX];	/* inodes some process may change unseen: mapped MAP_SHARED or used through stdio */
	uint64_t trace_end;	/* bytes of the trace handed out: where the next line goes */
	struct {
		uint64_t dev, ino;
		uint64_t ok;	/* 1: the descriptor was open at the start */
	} std[2];		/* the tree's stdout and stderr at its start: never faulted */
	uint64_t std_ready;	/* 0, 1 while the first process fills std, 2 once filled */
	uint64_t stored;	/* bytes of snapshots stored by the tree, against CRASHCHECK_LIMIT */
	/* past CRASHCHECK_TRACE_LIMIT (trace.c, trace_drop): */
	uint64_t cut_claimed;	/* 1 once a process took the cut line on */
	uint64_t cut_at;	/* the cut line's place in the trace + 1, 0 = none yet */
	uint64_t dropped;	/* lines not written */
	uint64_t dropped_bytes;	/* their bytes */
	int cut_busy;		/* try-lock of the cut line's counts */
};

#define CC_SHARED_MAGIC 0x35766b6368637263ULL	/* "crchckv5" */

struct cc_state {
	struct plan plan;
	const char *plan_text;	/* CRASHCHECK_PLAN, NULL = none */
	const char *trace;	/* CRASHCHECK_TRACE, NULL = no trace */
	uint64_t trace_from;	/* CRASHCHECK_TRACE_FROM: calls before this seq are
				 * not recorded (a lite call, cc_rec.lite); 0 = all */
	bool thin_on;		/* CRASHCHECK_TRACE_FULL set: outside its seqs, */
	uint64_t full_lo, full_hi;	/* writes may be thin (cc_rec.thin) */
	const char *watch;	/* CRASHCHECK_WATCH, NULL = none */
	size_t watch_len;
	const char *snapdir;	/* CRASHCHECK_SNAPDIR, NULL = recorder off */
	struct cc_shared *sh;	/* counters */
	bool sh_file;		/* sh is CRASHCHECK_SHARED's, shared by the process tree */
	bool recorder;		/* trace and snapdir and watch all set */
	bool snap_full;		/* CRASHCHECK_SNAP=full: no range snapshots */
	uint64_t limit;		/* CRASHCHECK_LIMIT: bytes the snapshots of a run may
				 * store, and the largest file they may take; 0 = none */
	uint64_t trace_limit;	/* CRASHCHECK_TRACE_LIMIT: bytes the trace's lines
				 * may take, past which they are counted, not
				 * written; 0 = none */
	const char *note;	/* CRASHCHECK_NOTE: where to say why the run was stopped */
	bool has_rules[CALL__COUNT];	/* per call: some rule names it */
	bool has_glob[CALL__COUNT];	/* per call: some rule names it with a glob */
	bool any_glob;		/* some rule has a glob */
	const struct cc_io *io;	/* the backend's facts of the program (rules.h) */
	const char *backend;	/* the init record's "backend": "syscall" in the
				 * supervisor's trace, NULL (none) in the preload's */
	void (*stop_program)(void);	/* the supervisor's: SIGKILL every process
				 * of the program (cc_stop_run); NULL in the preload */
};

extern struct cc_state cc;

/*
 * Read the CRASHCHECK_* settings into cc (env.c); a bad one is one line
 * and exit 2. SHARED: map CRASHCHECK_SHARED for the counters, so that a
 * process tree counts in one sequence (the preload); else they stay in
 * this process's memory (the supervisor, which sees every process).
 */
void cc_env_read(bool shared);
/* Forget every setting, counter and recorder state of a run, as a new
 * process starts (cc_env_read to read the next run's): the supervisor's
 * server, which runs one program after another in one process. The
 * recorder's descriptors and mappings are closed. */
void cc_env_reset(void);
void cc_record_reset(void);

/* CRASHCHECK_SERVE set: serve runs (serve.c); returns only in a run's process */
void cc_serve(void);
/* The pieces of a server, for the supervisor's, which serves its runs in
 * its own process (faults/syscall/supervise.c). cc_serve_open: the
 * socket of CRASHCHECK_SERVE (checked; the server then dies with its
 * parent), -1 when it is not set. cc_serve_receive: one request into REQ
 * (SIZE bytes), its length, 0 at end of file, -1 on error; FDS get its
 * three descriptors. cc_serve_stdio: FDS made this process's 0, 1 and 2,
 * and closed; false when one could not be. cc_serve_view: the view the
 * request's run is confined to (confine.h), or NULL. cc_serve_settings: the request's
 * working directory and variables made this process's; false with ERR
 * when one could not be. cc_serve_say: a message to the harness. */
int cc_serve_open(void);
ssize_t cc_serve_receive(char *req, size_t size, int fds[3]);
bool cc_serve_stdio(int fds[3]);
const char *cc_serve_view(char *req, size_t len);
bool cc_serve_settings(char *req, size_t len, char *err, size_t size);
void cc_serve_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define CC_SERVE_REQUEST_MAX (64 * 1024)

/* what the recorder snapshots after a call */
#define SNAP_FILE 1	/* the file the call touched (fd or path) */
#define SNAP_DIR 2	/* the listing of the directory holding path */
#define SNAP_ALL 4	/* the whole tree under WATCH: every listing and file */
#define SNAP_RANGE 8	/* only the bytes a write call wrote, when provably enough */
#define SNAP_DIR2 16	/* the listing of the directory holding path2 */
#define SNAP_SELF 32	/* the listing of path, a directory */
#define SNAP_TREE2 64	/* path2, a directory moved in: every listing and file under it */

/* a code address as an object and its offset from the object's load base */
struct cc_frame {
	const char *obj;	/* the object's path; NULL = the frame before's */
	uint64_t off;
};

/* One intercepted call, filled before and after it runs. */
struct cc_rec {
	int call;		/* enum call_id */
	unsigned long n;	/* ordinal of this call among calls to it, 1-based */
	unsigned thread;	/* the thread that makes it: 1 its process's first,
				 * then in the order its threads were made */
	int rule;		/* index of the rule that matched, -1 = none */
	bool fired;		/* the rule's fault really happened */
	int fd;			/* -1 = none */
	char path[CC_PATH_MAX];	/* "" = unknown */
	char path2[CC_PATH_MAX];	/* rename-like: the new name */
	bool has_ino;
	uint64_t ino;
	uint64_t dev;		/* with ino, when has_ino */
	struct stat st;		/* fstat of fd (before a write-family call), when has_st */
	bool has_st;
	bool is_dir;		/* fd or path is a directory */
	bool is_reg;		/* fd or path is a regular file */
	bool has_off, has_len;
	long long off, len;	/* file offset and bytes, where they apply */
	int oflags;		/* open(2) flags, -1 = none */
	long fdflags;		/* F_GETFL of fd before the call, -1 = not asked */
	int msflags;		/* msync flags, -1 = none */
	int mapflags;		/* mmap flags, -1 = none */
	unsigned renflags;	/* renameat2 flags */
	int rwflags;		/* pwritev2 flags (RWF_*) */
	long long ret;
	int err;		/* errno after a failed call, else 0 */
	int snap;		/* SNAP_* */
	int snap_fd;		/* readable fd of the touched file, -1 = by path */
	bool snap_fd_borrowed;	/* snap_fd is the program's or a kept one: not closed after */
	bool snap_fd_kept;	/* snap_fd is a kept reader, not yet checked (cc_fd_reader) */
	/* SNAP_RANGE: what the write call was handed, to check the bytes read back */
	const void *buf;	/* the buffer, or NULL with iov */
	const struct iovec *iov;	/* the vector as passed down */
	int iovcnt;
	bool off_exact;		/* off is where the bytes went (pwrite on O_APPEND: not) */
	bool lite;		/* before CRASHCHECK_TRACE_FROM: counted, given its seq,
				 * and done as if untraced; a line only if a rule fired */
	bool thin;		/* a thin write: no offset, no snapshot (thin_write) */
	/* the rules' own (rules/) */
	long long pos;		/* write, writev: the descriptor's position before, -1 = none */
	void *tofree;		/* freed after the line: a short writev's trimmed vector */
	unsigned long maplen;	/* msync, munmap: bytes of the mapping from addr on */
	void *ctx;		/* the backend's own state of the call (cc.io's) */
	const void *at;		/* the wrapper's return address: where the program made the call */
	/* the supervisor's instead of at: "at" and "up" (syscall/unwind.c) */
	const struct cc_frame *frames;
	int nframes;
};

/* R describes a call to CALL (enum call_id), nothing known of it yet */
void cc_rec_init(struct cc_rec *r, int call);
/* after the plan decided: whether the write R describes is recorded thin
 * (CRASHCHECK_TRACE_FULL), which sets r->thin */
bool cc_thin_write(struct cc_rec *r);

/* raw system calls: the library's own I/O is never intercepted or counted */
long cc_sys_open(const char *path, int flags, int mode);
/* open to read for the recorder, leaving the file's access time alone */
long cc_open_read(int dirfd, const char *path, int flags);
long cc_sys_close(int fd);
long cc_sys_write_all(int fd, const void *buf, size_t len);
long cc_sys_fstat(int fd, struct stat *st);
long cc_sys_fstat_ino(int fd, uint64_t *ino, int *mode, long long *size);
long cc_sys_stat_ino(const char *path, uint64_t *ino, int *mode, long long *size);
void cc_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void cc_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cc_vwarn(const char *fmt, va_list ap);

/* path of fd via /proc/self/fd; "" when it has none */
void cc_fd_path(int fd, char *buf, size_t size);
/* the same, from the per-process cache when ST (fd's fstat) proves it current */
void cc_fd_path_st(int fd, const struct stat *st, char *buf, size_t size);
/* fd was closed, or now names another open file: drop what is cached about it */
void cc_fd_forget(int fd);
/* a kept read-only descriptor of the file open at FD (fstat ST), -1 = none;
 * unchecked: fstat it before use, and if it is not on ST's inode ask again
 * with it as STALE (-1 the first time) */
int cc_fd_reader(int fd, const struct stat *st, int stale);
/* a name changed somewhere in the process tree (rename, unlink): every
 * cached path may be stale */
void cc_names_changed(void);
/* INO on DEV may change without an intercepted write (a MAP_SHARED mapping,
 * a stdio buffer flushed inside libc): no range snapshots of it, ever */
void cc_taint(uint64_t dev, uint64_t ino);
/* the child of fork(): the locks another thread held are free again, in
 * the preload's descriptor cache (fdcache.c) and the trace (trace.c) */
void cc_fd_cache_after_fork(void);
void cc_trace_after_fork(void);
void cc_snap_after_fork(void);
/* PATH made absolute against DIRFD (AT_FDCWD = the cwd) of this process */
void cc_abs_path(int dirfd, const char *path, char *buf, size_t size);
/* PATH made absolute against the directory BUF holds (a relative PATH;
 * "" for none), in BUF, and folded: ".", ".." and repeated slashes out */
void cc_path_join(char *buf, size_t size, const char *path);
/* the O_DIRECT alignment of fd */
unsigned cc_dio_align(int fd);

/* "<object path>+0x<offset>" of the code address AT into BUF (callsite.c);
 * false when AT lies in no loaded object or BUF is too small */
bool cc_callsite(const void *at, char *buf, size_t size);
/* an object may have been unloaded (dlclose): the kept segments are stale */
void cc_callsite_forget(void);
/* the child of fork(): the table's lock another thread held is free */
void cc_callsite_after_fork(void);

/* the 64-bit content hash that names snapshot files (hash.c) */
uint64_t cc_hash(const void *buf, size_t len);

/* The same hash over bytes given in pieces: init, feed (any lengths), end */
struct cc_hasher {
	uint64_t a, b, c, d;	/* the four lanes of the 32-byte stripes */
	uint64_t total;		/* bytes fed */
	uint8_t tail[32];	/* bytes not yet a whole stripe */
	size_t tail_len;
};
void cc_hash_init(struct cc_hasher *h);
void cc_hash_feed(struct cc_hasher *h, const void *buf, size_t len);
uint64_t cc_hash_end(const struct cc_hasher *h);

/* Stop the run (every process of its group; under the supervisor, every
 * process of the program and the supervisor): the harness's scratch cannot
 * hold it. The reason goes to CRASHCHECK_NOTE, the first stop's alone. */
void cc_stop_run(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
/* a call the program made failed with ERR: a full scratch is noted */
void cc_note_failure(const struct cc_rec *r, int err);

/* PATH lies in the WATCH directory (or below it) */
bool cc_under_watch(const char *path);
/* after a call that changed names: the listing of the directory holding
 * R's path (WHICH 1) or path2 (WHICH 2), when that lies in the tree */
void cc_snap_parent(struct cc_rec *r, int which);
/* the listing of R's path, a directory of the tree (WATCH itself included) */
void cc_snap_self(struct cc_rec *r);

/* the trace */
/* the init record of this process (the preload, at its start) */
void cc_trace_init(void);
/* the init record of the program PID, child of PPID, running EXE */
void cc_trace_start(pid_t pid, pid_t ppid, const char *exe);
/* the process the next lines are of: the preload's is its own, the
 * supervisor's the tracee whose call it records */
void cc_trace_pid(pid_t pid);
void cc_trace_call(struct cc_rec *r);
void cc_trace_crash(const struct cc_rec *r, const char *when);

#endif
