/*
 * no-fsync-before-rename: the temp file renamed over the target without
 * being fsynced (what GNU sed -i does).
 *
 * Method: replace (../replace.c, lib/update.c) with put_stdio() of
 * lib/put.c swapped for the copy below, which writes and flushes the temp
 * file but never fsyncs it; replace_file then renames it and fsyncs the
 * directory as usual.
 *
 * Defect: the rename (made durable by the directory fsync) can reach the
 * disk before the file's data, which sits in the page cache. A power cut
 * then leaves the target name on an empty or partly written file: both
 * the old and the new content are lost.
 *
 * Rule broken ("When Should You Fsync?", step 3 of replacing a file):
 * fsync the temp file before renaming it.
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
	/* BUG: the data is in the page cache, and the rename comes next. */
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
