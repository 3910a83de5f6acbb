/*
 * tracescan.so's functions (harness/tracescan.c), as harness/trace.py
 * calls them through ctypes.
 */
#ifndef CRASHCHECK_TRACESCAN_H
#define CRASHCHECK_TRACESCAN_H

#include <stddef.h>

/* harness/trace.py loads the library only when it gives this number:
 * raise it whenever a function's arguments or answers change */
#define TRACESCAN_ABI 1

/* more fsync'd inodes at once than this: the scan gives up (-1) */
#define TRACESCAN_MAX_SYNCED 64

int tracescan_abi(void);

/*
 * The moot writes of NLINES trace lines in BUF (LEN bytes, the lines in
 * seq order with one '\n' between each two, none empty): for line I,
 * KIND[I] is 0, or 1 + the index of its call in write, pwrite, pwrite64,
 * writev, pwritev, pwritev2 when the after-exit replay may pass over it,
 * and INO[I] is then its inode. Returns how many are moot, or -1 when
 * more than TRACESCAN_MAX_SYNCED inodes were fsync'd at once (nothing is
 * known then: scan in Python).
 */
long tracescan_moot(const char *buf, size_t len, size_t nlines,
		    unsigned char *kind, unsigned long long *ino);

#endif
