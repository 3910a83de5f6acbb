/*
 * stdio-no-fflush: fsync without fflush first.
 *
 * Method: replace (../replace.c, lib/update.c) with put_stdio() of
 * lib/put.c swapped for the copy below, which calls fsync(fileno(fp))
 * straight after fwrite, with no fflush between them.
 *
 * Defect: fwrite copies into the FILE's buffer in the program's memory;
 * only fflush (or fclose) hands it to the kernel. The fsync therefore makes
 * durable only what stdio happened to write already (whole buffers, none
 * of the tail), and the rest reaches the kernel at fclose, after the only
 * fsync. The rename then points the target at a file whose end, or all of
 * it, may be lost in a power cut.
 *
 * Rule broken ("I/O buffering" and the stream row of "I/O APIs"): with
 * stdio, syncing is fflush followed by fsync, in that order.
 */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "../lib/error.h"
#include "../lib/io.h"
#include "../lib/replaceable.h"

int put_stdio(const char *path, enum put_mode mode, const void *data,
	      size_t size, int *created)
{
	FILE *fp;
	int err = 0;

	/* "wx" is O_WRONLY|O_CREAT|O_EXCL|O_TRUNC; "r+" neither creates nor truncates. */
	fp = fopen(path, mode == PUT_CREATE ? "wx" : "r+");
	if (!fp)
		return error_errno("fopen '%s'", path);
	if (mode == PUT_CREATE)
		*created = 1;

	/*
	 * fwrite of 0 bytes returns 0 whether or not anything went wrong, so
	 * it could not report a failure: an empty payload skips it.
	 */
	/*
	 * EINTR from the write(2) inside fwrite or fflush is transient, but
	 * stdio has dropped what it held: start again from offset 0 with
	 * the whole payload, which is still ours (io_stdio_restart).
	 */
again:
	errno = 0;
	if (size > 0 && fwrite(data, 1, size, fp) != size) {
		if (io_stdio_restart(fp))
			goto again;
		if (errno)
			err = error_errno("fwrite '%s'", path);
		else
			err = error("fwrite '%s': short write", path);
		goto out;
	}
	/*
	 * BUG: no fflush, so the fsync below cannot sync what is still
	 * in fp's buffer: fclose writes it later, and nothing syncs it.
	 */
	if (mode == PUT_INPLACE && ftruncate(fileno(fp), (off_t)size) < 0) {
		err = error_errno("ftruncate '%s'", path);
		goto out;
	}
	if (fsync(fileno(fp)) < 0) {
		err = error_errno("fsync '%s'", path);
		goto out;
	}
out:
	/*
	 * fclose flushes again and closes; on the success path its error is
	 * a real failure (the buffer is empty after fflush, but close(2) can
	 * still report a deferred write error, e.g. on NFS).
	 */
	if (fclose(fp) == EOF && !err)
		err = error_errno("fclose '%s'", path);
	return err;
}
