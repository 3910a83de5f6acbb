/*
 * write-enospc-spin: a write loop that retries ENOSPC forever.
 *
 * Method: replace (../replace.c, lib/update.c) with io_write_all_with() of
 * lib/io.c swapped for the copy below, which retries a write that failed
 * with ENOSPC as it retries EINTR, hoping space will come back.
 *
 * Defect: a full disk stays full until someone frees space, and nothing in
 * the loop does. The program spins at full speed and never reports the
 * error: whoever runs it waits forever, and the old content stays in
 * place only because the rename is never reached.
 *
 * Rule broken ("Checking For Errors"; ENOSPC is among the failures the
 * article says must be planned for): retry only what is transient (EINTR,
 * a short write); report a hard error and stop.
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
			 * A signal arrived before anything was written. BUG:
			 * and the disk is taken to be full only for a while.
			 */
			if (errno == EINTR || errno == ENOSPC)
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
		/* A short write really wrote n bytes: go on after them. */
		p += n;
		len -= (size_t)n;
	}
	return 0;
}
