#ifndef CRASHCHECK_RULES_H
#define CRASHCHECK_RULES_H

/*
 * Each call's rule, written once for both backends (rules/): what the
 * call works on, what the plan needs to decide on it, what its trace line
 * says and which snapshots follow it. A backend only hands the rules the
 * facts it alone can get, through the table of methods below (struct
 * cc_io: SQLite's test VFS hands its calls on the same way): the
 * preload asks the kernel about its own process, the supervisor about a
 * stopped thread of another one.
 *
 * A call's rule is three hooks, whose prototypes calldef.py generates
 * from calls.def's WRAP rows (gen/hooks.h):
 *
 *   rule_H_describe(r, args)   before the plan decides: what the call
 *                              works on (a glob rule needs the path), and
 *                              what a backend must forget before it runs
 *   rule_H_prepare(r, &args)   calls with F_SHORT, once the plan decided:
 *                              the line's length, a thin write, a short
 *                              write (which may change what is passed down)
 *   rule_H_after(r, ret, args) after the call: the line's fields, the
 *                              snapshots
 *
 * The preload's wrappers (gen/wrappers.c) call them with the arguments
 * the program passed, the supervisor (gen/dispatch.c) with the system
 * call's. A hook of a call the supervisor sees takes a pointer as a
 * cc_ptr: an address in the program's memory, read only through the
 * backend (read, read_str).
 */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "cc.h"

/* an address in the program's memory */
typedef uintptr_t cc_ptr;

/* the part of a file mapped at an address */
struct cc_map {
	unsigned long len;	/* bytes of the mapping from the address on; 0 = no file */
	bool shared;		/* MAP_SHARED */
	uint64_t ino;
	long long off;		/* the file offset of the address */
	char path[CC_PATH_MAX];
};

/* what fd_facts got */
#define CC_GOT_STAT 1
#define CC_GOT_FLAGS 2

/*
 * What only a backend can know of the program. Every method takes the
 * call's record R: r->ctx is the backend's own state of the call (the
 * supervisor's stopped thread).
 */
struct cc_io {
	/* FD's fstat into ST, and its open flags (F_GETFL) into FLAGS when
	 * not NULL: what it got, CC_GOT_STAT | CC_GOT_FLAGS */
	int (*fd_facts)(struct cc_rec *r, int fd, struct stat *st, long *flags);
	/* FD's file position now, -1 = none */
	long long (*fd_pos)(struct cc_rec *r, int fd);
	/* FD's path into BUF ("" = none), from a cache when ST (FD's fstat,
	 * or NULL) proves it current */
	void (*fd_path)(struct cc_rec *r, int fd, const struct stat *st, char *buf,
			size_t size);
	/* FD's path as the kernel says it now, uncached */
	void (*fd_link)(struct cc_rec *r, int fd, char *buf, size_t size);
	/* the program's working directory, "" = unknown */
	void (*cwd)(struct cc_rec *r, char *buf, size_t size);
	/* FD is closed, or is to name another open file: drop what is kept of it */
	void (*fd_forget)(struct cc_rec *r, int fd);
	/* a read-only descriptor of the regular file open at FD (fstat
	 * r->st), for the snapshot after the call: into r->snap_fd (-1 =
	 * none), with snap_fd_borrowed (not closed after the line) and
	 * snap_fd_kept. RANGE: for a range snapshot, whose read-back
	 * after every write wants one kept between calls */
	void (*fd_snap)(struct cc_rec *r, int fd, bool range);
	/* the borrowed r->snap_fd is no longer on r->st's inode (the program
	 * closed it or took its number): another into r->snap_fd, or -1 */
	void (*fd_resnap)(struct cc_rec *r);
	/* the O_DIRECT alignment of FD's file */
	unsigned (*dio_align)(struct cc_rec *r, int fd);
	/* LEN bytes at ADDR into BUF: the bytes read, -1 */
	long (*read)(struct cc_rec *r, cc_ptr addr, void *buf, size_t len);
	/* the string at ADDR into BUF: false when it cannot be read whole */
	bool (*read_str)(struct cc_rec *r, cc_ptr addr, char *buf, size_t size);
	/* the mapping of a file that holds ADDR into M (m->len 0: none) */
	void (*map_at)(struct cc_rec *r, cc_ptr addr, struct cc_map *m);
	/* the bytes a write call handed down (BUF, or the vector IOV of CNT),
	 * r->ret of them, into r->buf or r->iov and r->iovcnt for the range
	 * snapshot's proof: false when they cannot be had */
	bool (*handed)(struct cc_rec *r, cc_ptr buf, cc_ptr iov, int cnt);
	/* a vector write of only the first WANT bytes of IOV, CNT (ALIGN:
	 * O_DIRECT's, else 1): *IOV and *CNT changed to what is passed down,
	 * or the write made in the program's place; false when it cannot */
	bool (*short_vector)(struct cc_rec *r, int fd, cc_ptr *iov, int *cnt,
			     size_t want, unsigned align);
};

#pragma GCC visibility push(hidden)

#include "gen/hooks.h"

/* count R's call and decide the plan's rule that fires on it, if any
 * (r->n, r->rule); a call on the tree's stdout or stderr is counted and
 * never faulted */
void rule_decide(struct cc_rec *r);
/* the rule that fired on R if its action is A, else NULL */
const struct plan_rule *rule_of(const struct cc_rec *r, enum plan_action a);
/* R was described while the run has no trace to write it to: its
 * after hook must still run (the supervisor, which could let the call
 * go without a stop after it, stops there): what it does keeps later
 * calls' paths right */
bool rule_after_always(const struct cc_rec *r);
/* the mapping holding ADDR, read from the maps file open at FD */
void rule_map_find(int fd, uint64_t addr, struct cc_map *m);
/* DEV:INO is the tree's stdout or stderr at its start: record it (I: 0
 * for stdout, 1 for stderr) */
void rule_std_set(int i, uint64_t dev, uint64_t ino);

/* the supervisor's: the hooks of R's call, the system call's arguments A
 * in the order of the call's WRAP row (gen/dispatch.c) */
void rule_describe(struct cc_rec *r, const uint64_t a[6]);
/* what the hooks changed goes back into A: the bits of those changed */
unsigned rule_prepare(struct cc_rec *r, uint64_t a[6]);
void rule_after(struct cc_rec *r, const uint64_t a[6]);

#pragma GCC visibility pop

#endif
