/*
 * Method of replace_file: the five steps of atomic replacement from Jeff
 * Moyer's "Ensuring data reaches disk" (LWN, 2011):
 *
 *   1. create "<target>.tmp" in target's own directory (rename only works,
 *      and is only atomic, within one filesystem), with O_EXCL;
 *   2. write the payload into it with the chosen strategy;
 *   3. make it durable (fsync, O_DSYNC or msync, per strategy);
 *   4. rename it over target: readers see the old file or the new one,
 *      never a mixture, at every instant;
 *   5. fsync target's directory, opened O_RDONLY|O_DIRECTORY, so the
 *      rename itself survives a power cut.
 *
 * Step 3 must precede step 4: without it a crash can leave the new name
 * pointing at a file whose data never reached the disk (empty, or zeros).
 *
 * The temp name is fixed, not random, so the calls and paths a fault
 * injector sees are the same on every run. The cost is git's lock-file
 * rule: a "<target>.tmp" left by a crashed run makes the next one fail
 * with EEXIST until someone looks at it and removes it. replace never
 * removes a temp file it did not create.
 *
 * target is replaced as a directory entry: if it is a symbolic link, the
 * link is replaced, not the file it points to.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "update.h"
#include "replaceable.h"

/* Weak, so that a buggy variant can replace it: see replaceable.h. */
#pragma weak replace_file

/* The directory holding path ("." for a bare name), malloc()ed. */
char *update_dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

int update_fsync_dir(const char *dir)
{
	int fd, err = 0;

	fd = open(dir, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return error_errno("open '%s'", dir);
	if (fsync(fd) < 0) {
		err = error_errno("fsync '%s'", dir);
		goto out;
	}
out:
	if (close(fd) < 0 && !err)
		err = error_errno("close '%s'", dir);
	return err;
}

int replace_file(const char *target, const void *data, size_t size,
		 enum put_strategy s)
{
	char *tmp = NULL, *dir = NULL;
	int created = 0, err = 0;

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

	err = put_file(tmp, PUT_CREATE, data, size, s, &created);
	if (err)
		goto out;
	if (rename(tmp, target) < 0) {
		err = error_errno("rename '%s' to '%s'", tmp, target);
		goto out;
	}
	/* The temp file is target now: nothing of ours left to remove. */
	created = 0;
	err = update_fsync_dir(dir);
out:
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

int overwrite_file(const char *target, const void *data, size_t size,
		   enum put_strategy s)
{
	int created = 0;

	return put_file(target, PUT_INPLACE, data, size, s, &created);
}
