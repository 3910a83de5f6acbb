/*
 * Low-level I/O helpers shared by the workloads: a write loop that survives
 * EINTR and short writes, whole-file reads, and the O_DIRECT alignment
 * arithmetic. Each piece is a plain function so tests/unit/check_io.c can
 * drive it directly (the write loop through a test double of write(2)).
 */
#ifndef WORKLOADS_IO_H
#define WORKLOADS_IO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* Alignment used for O_DIRECT when the kernel does not report one. */
#define IO_DIO_FALLBACK 4096

/* Anything shaped like write(2); the production loop passes write itself. */
typedef ssize_t io_write_fn(int fd, const void *buf, size_t len);

/*
 * Write all len bytes of buf to fd, retrying EINTR and continuing after a
 * short write. Returns 0, or -1 with errno set (a write that returns 0 for
 * a non-empty request is reported as ENOSPC, as git's write_in_full does,
 * rather than retried forever). Prints nothing: the caller names the path.
 */
int io_write_all(int fd, const void *buf, size_t len);
int io_write_all_with(io_write_fn *wr, int fd, const void *buf, size_t len);

/*
 * After fwrite or fflush on fp failed: whether the caller should write its
 * whole payload again from the start. Yes (1) for EINTR, with fp rewound:
 * a transient failure, but stdio cannot be retried where it stopped, since
 * glibc drops what its buffer held when a write(2) fails and fwrite does
 * not say how much of its call reached the file. No (0) for any other
 * error, or when the rewind fails: errno is the stdio call's, to report.
 */
int io_stdio_restart(FILE *fp);

/*
 * Round n up to a multiple of unit (unit > 0) into *out. Returns 0, or -1
 * with errno = EOVERFLOW when the result does not fit in a size_t.
 */
int io_align_up(size_t n, size_t unit, size_t *out);

/*
 * Pick the O_DIRECT unit (buffer address, file offset and length are all
 * kept multiples of it) from what statx(STATX_DIOALIGN) said. reported is
 * whether the kernel filled the fields. Returns IO_DIO_FALLBACK when it did
 * not, 0 when it said direct I/O is impossible for this file (fields 0) or
 * gave alignments that are not powers of two, else the larger of the two.
 */
size_t io_dio_unit_choose(int reported, uint32_t mem_align, uint32_t offset_align);

/* io_dio_unit_choose() applied to what the kernel says about fd. */
size_t io_dio_unit(int fd);

/*
 * Read the whole of path into a malloc()ed buffer (never NULL, even for an
 * empty file) and its length into *size. Returns 0, or IO_FAILED after one
 * diagnostic line naming the call and path.
 */
int io_read_file(const char *path, char **data, size_t *size);

#endif
