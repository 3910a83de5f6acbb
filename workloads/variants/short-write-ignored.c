/*
 * short-write-ignored: a short write taken as complete.
 *
 * Method: replace (../replace.c, lib/update.c) with io_write_all_with() of
 * lib/io.c swapped for the copy below. The copy returns success after the
 * first write(2) that wrote anything, whatever byte count it returned.
 *
 * Defect: write(2) may write fewer bytes than it was asked to (a signal
 * after part of the transfer, a quota or device limit) and returns how many
 * it wrote. Taking that as the whole payload silently drops the rest: the
 * program renames a truncated file over the target and exits 0.
 *
 * Rule broken ("Checking For Errors", and the sock_read example of "I/O
 * buffering", which counts what each call wrote): look at what every call
 * returns; a write loop ends when every byte is written, advancing by the
 * count each write returned.
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
			/* A signal arrived before anything was written. */
			if (errno == EINTR)
				continue;
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
		/*
		 * BUG: n may be less than chunk; the bytes after the first n
		 * are never written, and the caller hears they were.
		 */
		return 0;
	}
	return 0;
}
