/*
 * eintr-fatal: EINTR treated as a fatal error.
 *
 * Method: replace (../replace.c, lib/update.c) with io_write_all_with() of
 * lib/io.c swapped for the copy below, which fails on the first write(2)
 * that returns -1, whatever errno says.
 *
 * Defect: a write interrupted by a signal before it wrote anything fails
 * with EINTR. Nothing went wrong with the data or the disk: the call just
 * has to be made again. The copy gives up instead, so any signal (a timer,
 * SIGCHLD, a resized terminal) makes the update fail for no reason.
 *
 * Rule broken ("Checking For Errors", and the sock_read example of "I/O
 * buffering", which retries on EINTR): tell transient errors from real
 * ones; retry EINTR, fail on anything else.
 */
#include <errno.h>
#include <limits.h>
#include <unistd.h>

#include "../lib/replaceable.h"

int io_write_all_with(io_write_fn *wr, int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		/*
		 * Linux caps one write at 0x7ffff000 bytes anyway; asking
		 * for no more than SSIZE_MAX keeps the return value honest.
		 */
		size_t chunk = len > SSIZE_MAX ? SSIZE_MAX : len;
		ssize_t n = wr(fd, p, chunk);

		if (n < 0) {
			/*
			 * BUG: EINTR only says a signal arrived before anything
			 * was written; it is failed like a real error.
			 */
			return -1;
		}
		if (n == 0) {
			/*
			 * No progress and no error: retrying could spin
			 * forever, and the only plausible cause on a regular
			 * file is a full device.
			 */
			errno = ENOSPC;
			return -1;
		}
		/* A short write really wrote n bytes: go on after them. */
		p += n;
		len -= (size_t)n;
	}
	return 0;
}
