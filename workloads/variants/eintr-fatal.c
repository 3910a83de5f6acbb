/*
 * eintr-fatal: EINTR treated as a fatal error.
 *
 * Method: replace (../replace.c, lib/update.c) with io_write_all_with() of
 * lib/io.c swapped for the copy below, which fails on the first write(2)
 * that returns -1, whatever errno says.
 *
 * Defect: a write interrupted by a signal before it wrote anything fails
 * with EINTR. Nothing went wrong with the data or the disk: the call just
 * has to be made again. The copy gives up instead, and the update fails
 * for no reason.
 *
 * When that happens (signal(7)): a signal must be caught, by a handler
 * the program installed without SA_RESTART (with it the kernel restarts
 * the write), while the write is blocked. A signal left at a default of
 * ignoring it (SIGCHLD, SIGWINCH) interrupts nothing, and one whose
 * default is to terminate leaves no program to see EINTR. And the write
 * must be one that can block indefinitely: to a pipe, a socket or a
 * terminal, or on a filesystem that lets a signal cut a request short
 * (FUSE, whose server may answer an interrupted request with EINTR). A
 * write to a regular file on a local filesystem (ext4, XFS, Btrfs,
 * tmpfs) is interrupted by no signal the program survives; nor is one
 * on NFS, where only SIGKILL interrupts a request since Linux 2.6.25
 * (its `intr` mount option is ignored). The loop serves every kind of
 * file, so it must retry: a target that is a FIFO, or lives on FUSE,
 * makes the latent bug real.
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
