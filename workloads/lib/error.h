/*
 * Diagnostics in git's idiom: print one line and return the value the
 * caller propagates, so a failing call reads
 *
 *	if (fsync(fd) < 0) {
 *		err = error_errno("fsync '%s'", path);
 *		goto out;
 *	}
 *
 * Every line is "<prog>: <what failed>[: <strerror>]", lowercase, no full
 * stop, written with a single stdio call so lines from several processes
 * do not interleave mid-line.
 */
#ifndef WORKLOADS_ERROR_H
#define WORKLOADS_ERROR_H

/* Return values shared by the workload library. */
#define IO_FAILED	(-1)	/* the operation failed and said why: exit 1 */
#define IO_UNSUPPORTED	(-2)	/* cannot be done on this filesystem: exit 77 */

/* The program name that starts every line; main() sets it. */
extern const char *error_prog;

/* Print "<prog>: <msg>: strerror(errno)"; return IO_FAILED. errno is kept. */
int error_errno(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Print "<prog>: <msg>"; return IO_FAILED. */
int error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Print "<prog>: <msg>"; return IO_UNSUPPORTED. */
int error_unsupported(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
