#ifndef CRASHCHECK_RULE_H
#define CRASHCHECK_RULE_H

/*
 * What the rules of faults/rules/ share: the helpers every call's rule is
 * written with (common.c). Each file holds the rules of one family of
 * calls, as strace keeps a decoder per family; rules.h is what the
 * backends see of them.
 */

#include "../rules.h"

#pragma GCC visibility push(hidden)

/* the backend's facts of the program */
#define io (cc.io)

/* the call is recorded: a trace, and the call not before its start */
static inline bool tracing(const struct cc_rec *r)
{
	return cc.trace && !r->lite;
}

/* what the call works on is wanted: for its line, or a glob rule */
static inline bool want_path(const struct cc_rec *r)
{
	return tracing(r) || cc.has_glob[r->call];
}

/* R's file is the one ST describes */
void set_stat(struct cc_rec *r, const struct stat *st);
/* R's file is the one open at FD */
void stat_fd(struct cc_rec *r, int fd);
/* R's file is the one at PATH, as it is now */
void stat_path(struct cc_rec *r, const char *path);
/* R works on the descriptor FD: its file, its path, with FLAGS its open
 * flags (a traced call only) */
void use_fd(struct cc_rec *r, int fd, bool flags);
/* PATH made absolute against DIRFD (AT_FDCWD: the working directory) and
 * folded, into BUF */
void join_path(struct cc_rec *r, int dirfd, const char *path, char *buf, size_t size);
/* the path at ADDR in the program, made absolute against DIRFD, into OUT
 * ("" when it cannot be read), when it is wanted */
void use_path(struct cc_rec *r, int dirfd, cc_ptr addr, char *out, size_t size);
/* after the call: a snapshot of the file open at FD (a range of it when
 * SNAP_RANGE is asked), when it lies under WATCH */
void snap_fd(struct cc_rec *r, int fd);
/* after the call: a snapshot of the file now at PATH, under WATCH */
void snap_path(struct cc_rec *r, const char *path);
/* after a write: a range snapshot of what it wrote (BUF, or the vector
 * IOV of CNT) when it can be proved, else the whole file; EXACT: r->off
 * is where the bytes went */
void snap_write(struct cc_rec *r, int fd, cc_ptr buf, cc_ptr iov, int cnt, bool exact);
/* R's file may change with no call (a shared mapping, stdio's buffer) */
void taint_rec(const struct cc_rec *r);
/* bytes to pass down for a short write of COUNT, or COUNT when none; the
 * O_DIRECT alignment it kept to into *ALIGN (1 without O_DIRECT) */
size_t shorten(struct cc_rec *r, int fd, size_t count, unsigned *align);

#pragma GCC visibility pop

#endif
