/*
 * fsync-retry: fsync retried after it failed, then success claimed
 * (PostgreSQL's "fsyncgate", 2018).
 *
 * Method: replace (../replace.c, lib/update.c) with put_stdio() of
 * lib/put.c swapped for the copy below. When fsync fails, the copy calls
 * it again and reports an error only if the second call fails too.
 *
 * Defect: on Linux a failed fsync does not leave the data waiting for a
 * second try: the pages whose write-back failed are marked clean (or
 * dropped), so the retry has nothing left to write and succeeds. The
 * program then renames a file whose content may never reach the disk over
 * the target and exits 0. (Rebello et al., USENIX ATC 2020, measured this
 * on ext4, XFS and Btrfs; crash-model.md, "When fsync fails".)
 *
 * Rule broken ("Checking For Errors"): an fsync error is the report that
 * data was lost; the only honest answers are to rewrite the data from a
 * copy and sync again, or to fail.
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
	 * The check that matters most: an fflush error (ENOSPC, EIO) is often
	 * the first and only report that buffered data never reached the
	 * kernel.
	 */
	if (fflush(fp) == EOF) {
		if (io_stdio_restart(fp))
			goto again;
		err = error_errno("fflush '%s'", path);
		goto out;
	}
	if (mode == PUT_INPLACE && ftruncate(fileno(fp), (off_t)size) < 0) {
		err = error_errno("ftruncate '%s'", path);
		goto out;
	}
	/*
	 * BUG: a failed fsync has dropped what it could not write;
	 * the second one succeeds without writing it.
	 */
	if (fsync(fileno(fp)) < 0 && fsync(fileno(fp)) < 0) {
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
