/*
 * no-dir-fsync: the directory not fsynced after the rename.
 *
 * Method: replace_file() of lib/update.c swapped for the copy below, which
 * writes and syncs the temp file and renames it over the target, then
 * returns success without fsyncing the directory.
 *
 * Defect: the rename is a change to the directory, and only an fsync of
 * the directory makes it durable. Exiting 0 right after it claims a new
 * content that a power cut takes back: the target comes back with its old
 * content, the update silently undone.
 *
 * Rule broken ("When Should You Fsync?", step 5 of replacing a file, and
 * the paragraph on newly created files): fsync the containing directory.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../lib/error.h"
#include "../lib/replaceable.h"

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
	/* BUG: the rename is not durable until the directory is synced. */
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
