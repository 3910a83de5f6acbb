#ifndef CRASHCHECK_RECORD_H
#define CRASHCHECK_RECORD_H

/*
 * The recorder's parts, shared among them alone: trace.c (the lines and
 * how they reach the trace), snap.c (what a line's snapshot holds: a file
 * whole or the range a write wrote, the listings of directories), store.c
 * (the content-addressed blobs under CRASHCHECK_SNAPDIR, the scratch's
 * budget), hash.c (the content hash that names a blob). cc.h is what
 * the rest of the library sees of them.
 *
 * Everything here talks to the kernel through syscall(2) so that none of it
 * passes through the interposed functions (ours or libfiu's): the trace must
 * not count itself, and a planned fault must never hit the recorder.
 *
 * Cost. A program may make thousands of small writes to a large file, so
 * nothing here may cost in proportion to the file per call: a successful
 * write is recorded as the range it wrote (snap_range), the trace stays
 * open (trace_fd), and a descriptor's path comes from a cache that the
 * fstat the rule makes anyway proves current (the backend's: fdcache.c
 * for the preload). Each shortcut falls back to the old, whole way
 * whenever it cannot prove itself.
 *
 * What is left per call is system calls, each as dear as a small write.
 * A write recorded as a range makes five besides its own: fstat, F_GETFL
 * and lseek before it (rules/write.c: the "before" state, the flags the
 * line names, the offset), then the fstat and pread of the read-back
 * descriptor (the size after the call, and the proof). The line is built
 * without stdio or malloc (struct sb) and copied into a shared mapping of
 * the trace (trace_put), which cost a fifth of a traced write as a
 * write(2) and the fstat that guarded it. tests/test_recorder.py counts
 * them.
 */

#include <stdlib.h>
#include <string.h>

#include "cc.h"
#include "sb.h"

#pragma GCC visibility push(hidden)

/* a try-lock between the threads of a process: taken = another holds it */
static inline bool cc_try_lock(int *l)
{
	return !__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE);
}

static inline void cc_unlock(int *l)
{
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

/* ---- store.c ---- */

/*
 * Files larger than STREAM_MIN, and writes of more than that, are
 * snapshotted a chunk at a time: the recorder's memory does not grow with
 * the file, and of a sparse file only the data is read and stored (its
 * holes are hashed as the zeros they read as, and stay holes in the blob).
 */
#define STREAM_MIN (1 << 20)
#define CHUNK (1 << 20)

/* LEN bytes of DATA stored once under SNAPDIR/<hash>, the hash in HEX:
 * 0, or -1 (the reason said) */
int cc_store_blob(const void *data, size_t len, char hex[17]);
/* SIZE bytes of the regular file FD stored a chunk at a time, its holes
 * kept; the bytes it holds in *GOT (fewer when it shrank meanwhile) */
int cc_store_stream(int fd, long long size, char hex[17], long long *got);
/* a blob written aside as TMP, whose content hashes to H, put in its place */
int cc_place_blob(const char *tmp, uint64_t h, char hex[17]);
/* a snapshot's write to PATH (written aside, removed here) failed with ERR */
void cc_store_failed(const char *what, const char *path, int err);
/* N more bytes of snapshots to store: past CRASHCHECK_LIMIT the run stops */
void cc_charge(uint64_t n);
/* the file NAME, of SIZE bytes, is to be snapshotted: past the limit the
 * run stops */
void cc_check_size(const char *name, long long size);
long cc_pwrite_all(int fd, const char *buf, size_t len, long long off);
long cc_pread_some(int fd, char *buf, size_t len, long long off);
/* a new run: no blob known stored, no note made */
void cc_store_reset(void);

/* ---- snap.c ---- */

/* "dirs" and "files" of the whole tree under WATCH */
void cc_snap_all(struct sb *sb);
/* "dirs" and "files" of what R's call changed (R's snap) */
void cc_snap_some(struct sb *sb, struct cc_rec *r);
/* a new run */
void cc_snap_reset(void);

/* ---- hash.c ---- */

/* the digest's bytes in order, as hexdigest() prints them */
void cc_hash_hex(uint64_t h, char out[17]);

/* ---- trace.c ---- */

/* the lowest number the recorder's own descriptors may take, 0 = keep
 * none (near RLIMIT_NOFILE, away from the program's numbering) */
int cc_fd_floor(void);

#pragma GCC visibility pop

#endif
