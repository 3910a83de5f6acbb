#ifndef CRASHCHECK_SV_H
#define CRASHCHECK_SV_H

/*
 * The system-call supervisor (faults/bin/supervise): shared by its two
 * files, supervise.c (starting the program, following its processes,
 * the ptrace stops) and calls.c (what each trapped system call means:
 * its file, its fault, its trace line).
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "../rules.h"

/* the trapped system calls: one per SYSCALL row of calls.def */
enum sc_id {
#define CALL(name, point, faults, cls)
#define ALIAS(name, base)
#define WRAP(...)
#define SYSCALL(sys, call) SC_##sys,
#include "../calls.def"
#undef CALL
#undef ALIAS
#undef WRAP
#undef SYSCALL
	SC__COUNT
};

struct sc_info {
	const char *name;	/* the system call, as libseccomp names it */
	int call;		/* the call of calls.def it counts as */
};

extern const struct sc_info sc_table[SC__COUNT];

/* SECCOMP_RET_DATA of a call of another architecture (x32, i386) */
#define SC_BADARCH 0xffff

/*
 * What the supervisor keeps of a process's descriptors between calls: a
 * descriptor's path (readlink of /proc/TID/fd/N costs a /proc lookup a
 * call) and a read-only descriptor of our own on its file, for the
 * snapshots (an open and a close a call). An entry is used only for the
 * inode the call's stat shows, and a path only while no name changed
 * since it was read (cc.sh->names_gen) and the file is still linked;
 * close, exec and the process's end drop it.
 */
#define SV_FD_CACHE 1024	/* descriptors 0..SV_FD_CACHE-1 are cached */

struct fd_cache {
	struct fd_ent {
		bool ok;		/* path holds fd's link, read for dev/ino */
		dev_t dev;
		ino_t ino;
		uint64_t gen;		/* names_gen before the readlink */
		char *path;		/* malloc'ed, or NULL */
		int reader;		/* ours, read-only, on rdev/rino; -1 = none */
		dev_t rdev;
		ino_t rino;
	} ent[SV_FD_CACHE];
};

/* A process (thread group) of the program. */
struct proc {
	pid_t tgid;
	int tasks;		/* its threads we know */
	unsigned threads;	/* threads it has made, its first included: the
				 * number of the next one is threads + 1 */
	struct fd_cache *fds;	/* its descriptors, NULL until one is cached */
	int pidfd;		/* pidfd_open of tgid, 0 = not yet, -1 = none */
	int shared_maps;	/* MAP_SHARED file mappings made (or inherited); 0 = a
				 * munmap or msync of it cannot concern a file */
	struct sv_unwind *unwind;	/* its modules for unwind.c, NULL = none yet */
	bool execd;		/* has run the program (or a program of its own): its
				 * calls before its first exec are the supervisor's child's */
};

/* the return addresses recorded of a call: its "at" and "up" */
#define SV_FRAMES 12

/* A call a thread is in, between its seccomp stop and its exit stop: the
 * context (r.ctx) of the facts calls.c gives the rules. */
struct pending {
	int sc;			/* enum sc_id */
	struct proc *proc;	/* the thread's process */
	pid_t tid;		/* the thread */
	struct cc_rec r;
	uint64_t args[6];	/* as the thread passed them */
	uint64_t a[6];		/* in the order of the call's WRAP row (call_args) */
	bool exited;		/* at the exit stop: the call has run */
	bool skip;		/* the kernel skipped it: an injected errno, or
				 * the supervisor made the call itself */
	long long skip_ret;	/* then what it returns: >= 0, or -errno */
	bool fail_after;	/* it runs, and returns skip_ret all the same
				 * (an injected errno of rule_fails_after) */
	int pos_fd;		/* the descriptor whose position before the call */
	long long pos;		/* is this (read with its flags), -1 = unknown */
	struct iovec *iov;	/* a vector write's vector, as read at the entry */
	int iovcnt;
	char *data;		/* the bytes a write handed down (r.buf), malloc'ed */
	struct cc_map *map;	/* msync, munmap: the file mapping at the address */
	struct cc_frame frames[SV_FRAMES];	/* r.frames */
	char *paths[SV_FRAMES];	/* their objects' paths, malloc'ed */
};

/* A thread of the program. */
struct task {
	pid_t tid;
	struct proc *proc;
	bool fresh;		/* attached by a clone event; its first stop not seen */
	unsigned thread;	/* its number in its process (cc_rec.thread): 1 its
				 * first, then in the order made; 0 = its clone
				 * event has not come yet */
	bool held;		/* a new thread stopped until its number is known */
	struct pending *call;	/* in a trapped call, waiting for its exit stop */
	struct task *next;	/* hash chain */
};

/* ---- calls.c ---- */

/* what to do with a thread at its seccomp stop (sv_entry's answer) */
enum sv_resume {
	SV_CONT,		/* let it run: nothing to do after the call */
	SV_EXIT,		/* stop it again when the call returns (sv_exit) */
	SV_KILLED,		/* it was killed (a planned crash): leave it */
};

/* the facts of the program for the rules are the supervisor's (cc.io) */
void sv_calls_init(void);
/* a thread at the seccomp stop of system call SC with ARGS */
enum sv_resume sv_entry(struct task *t, int sc, const uint64_t args[6]);
/* the same thread at its exit stop, the call having returned RVAL: SV_CONT,
 * or SV_KILLED after a planned crash */
enum sv_resume sv_exit(struct task *t, long long rval);
/* a process started a program: its init record */
void sv_exec(struct proc *p, pid_t ppid);
/* the program PID starts: its stdout and stderr are never faulted */
void sv_std_outputs(pid_t pid);

/* ---- unwind.c ---- */

/* the return addresses on the stack of thread TID of P, stopped, into
 * OUT, at most MAX, innermost first (an object path NULL: the frame
 * before's; the others malloc'ed into PATHS); how many */
int sv_unwind(struct proc *p, pid_t tid, struct cc_frame *out, char **paths,
	      int max);
/* P's modules are gone (exec) or P is */
void sv_unwind_forget(struct proc *p);

/* ---- supervise.c ---- */

void sv_kill(pid_t tgid);
void sv_pending_free(struct pending *c);

/* the path of P's descriptor FD (whose stat is ST) into BUF, from the cache
 * or /proc; a kept reader of its file (not to be closed), or -1 */
void sv_fd_path_cached(struct proc *p, pid_t tid, int fd, const struct stat *st,
		       char *buf, size_t size);
int sv_fd_reader(struct proc *p, pid_t tid, int fd, const struct stat *st);
/* FD is closed, or every descriptor is (exec, exit) */
void sv_fd_forget(struct proc *p, int fd);
void sv_fd_forget_all(struct proc *p);

/* a thread's registers at its seccomp stop: only what faults change */
bool sv_set_arg(pid_t tid, int i, uint64_t value);	/* argument I (from 0) */
bool sv_skip(pid_t tid, long long ret);		/* no call; it returns RET */
bool sv_set_return(pid_t tid, long long ret);	/* at the exit stop */

/* reading the thread's memory and its /proc entries */
long sv_read(pid_t tid, uint64_t addr, void *buf, size_t len);
bool sv_read_str(pid_t tid, uint64_t addr, char *buf, size_t size);
void sv_fd_path(pid_t tid, int fd, char *buf, size_t size);
int sv_fd_stat(pid_t tid, int fd, struct stat *st);
bool sv_fd_info(pid_t tid, int fd, long long *pos, int *flags);
#define SV_GOT_STAT 1
#define SV_GOT_FLAGS 2
int sv_fd_facts(struct proc *p, pid_t tid, int fd, struct stat *st,
		int *flags, long long *pos);
int sv_fd_open(pid_t tid, int fd, int flags);

#endif
