/*
 * tracescan.so's functions (harness/engine/tracescan.c), as harness/engine/trace.py
 * calls them through ctypes.
 */
#ifndef CRASHCHECK_TRACESCAN_H
#define CRASHCHECK_TRACESCAN_H

#include <stddef.h>

/* harness/engine/trace.py loads the library only when it gives this number:
 * raise it whenever a function's arguments or answers change */
#define TRACESCAN_ABI 3

/* more fsync'd inodes at once than this: the scan gives up (-1) */
#define TRACESCAN_MAX_SYNCED 64

int tracescan_abi(void);

/* tracescan_index's EV: the line holds "fault": (after its ev's number) */
#define TRACESCAN_FAULT 4

/*
 * The heads of the NLINES lines of BUF (LEN bytes, '\n' between lines,
 * empty lines not counted), as trace.Lazy reads them: each starts
 * {"ev":"EV","seq":SEQ, and ends in '}'. SEQ[I] is its seq, and EV[I] 1
 * for init, 2 for call, 3 for crash, plus TRACESCAN_FAULT when the line
 * holds "fault": anywhere. Returns 0, or -1 when a line is not of that
 * shape, a seq is 2^64 or more, or there are not NLINES lines.
 */
long tracescan_index(const char *buf, size_t len, size_t nlines,
		     unsigned long long *seq, unsigned char *ev);

/* tracescan_moot's KIND: the first line of a run of moot writes to one
 * inode (the line before is not moot, or of another inode) */
#define TRACESCAN_RUN 0x80

/*
 * The moot writes of NLINES trace lines in BUF (LEN bytes, the lines in
 * seq order with one '\n' between each two, none empty): for line I,
 * KIND[I] is 0, or 1 + the index of its call in write, pwrite, pwrite64,
 * writev, pwritev, pwritev2 when the after-exit replay may pass over it,
 * and INO[I] is then its inode; TRACESCAN_RUN is added to the KIND of
 * the first of each run to one inode. Returns how many are moot, or -1 when
 * more than TRACESCAN_MAX_SYNCED inodes were fsync'd at once (nothing is
 * known then: scan in Python).
 */
long tracescan_moot(const char *buf, size_t len, size_t nlines,
		    unsigned char *kind, unsigned long long *ino);

#endif
