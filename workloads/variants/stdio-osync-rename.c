/*
 * stdio-osync-rename: stdio on an O_SYNC descriptor, renamed before the
 * stream is flushed.
 *
 * Method: replace_file() of lib/update.c swapped for the copy below, which
 * (for --strategy=stdio, the only one it accepts) opens the temp file with
 * O_SYNC, wraps the descriptor in a stream with fdopen, fwrites the
 * payload, renames the temp file over the target and fsyncs the directory,
 * and closes the stream last.
 *
 * Defect: O_SYNC makes each write(2) synchronous, but fwrite makes no
 * write(2) until its buffer fills: the tail of the payload (all of it, when
 * it is smaller than the buffer) is still in the program's memory when the
 * rename makes the target name point at the file. Until fclose flushes it,
 * anyone reading the target, and any crash or power cut, sees a torn file.
 *
 * Rule broken ("I/O APIs", on streams over O_SYNC descriptors): O_SYNC
 * saves the fsync after fflush, not the fflush; flush the stream before
 * the file is used, here before the rename.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../lib/error.h"
#include "../lib/io.h"
#include "../lib/replaceable.h"

int replace_file(const char *target, const void *data, size_t size,
		 enum put_strategy s)
{
	char *tmp = NULL, *dir = NULL;
	FILE *fp = NULL;
	int fd, created = 0, err = 0;

	if (s != PUT_STDIO)
		return error_unsupported("this variant writes with stdio only, not %s",
					 put_strategy_name(s));
	if (asprintf(&tmp, "%s%s", target, REPLACE_TMP_SUFFIX) < 0) {
		tmp = NULL;
		err = error_errno("asprintf temp name for '%s'", target);
		goto out;
	}
	dir = update_dir_of(target);
	if (!dir) {
		err = error_errno("strdup directory of '%s'", target);
		goto out;
	}

	/* O_SYNC: each write(2) returns once its data is on stable storage. */
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_SYNC, 0666);
	if (fd < 0) {
		err = error_errno("open '%s'", tmp);
		goto out;
	}
	created = 1;
	fp = fdopen(fd, "w");
	if (!fp) {
		err = error_errno("fdopen '%s'", tmp);
		close(fd);
		goto out;
	}
	/* EINTR: start again from offset 0, as put_stdio does */
again:
	errno = 0;
	if (size > 0 && fwrite(data, 1, size, fp) != size) {
		if (io_stdio_restart(fp))
			goto again;
		if (errno)
			err = error_errno("fwrite '%s'", tmp);
		else
			err = error("fwrite '%s': short write", tmp);
		goto out;
	}
	/* BUG: the stream's buffer has not been written yet, O_SYNC or not. */
	if (rename(tmp, target) < 0) {
		err = error_errno("rename '%s' to '%s'", tmp, target);
		goto out;
	}
	/* The temp file is target now: nothing of ours left to remove. */
	created = 0;
	err = update_fsync_dir(dir);
out:
	/* Only here does the tail reach the file: after the rename. */
	if (fp && fclose(fp) == EOF && !err)
		err = error_errno("fclose '%s'", target);
	/*
	 * A failed cleanup gets its own line: with O_EXCL a leftover temp
	 * file blocks the next run, so the user has to hear about it.
	 * ENOENT is expected where a refused O_DIRECT open created nothing.
	 */
	if (created && unlink(tmp) < 0 && errno != ENOENT)
		error_errno("unlink '%s'", tmp);
	free(tmp);
	free(dir);
	return err;
}
