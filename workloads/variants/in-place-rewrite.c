/*
 * in-place-rewrite: the target truncated and rewritten in place, under a
 * claim of atomic replacement.
 *
 * Method: replace_file() of lib/update.c swapped for the copy below, which
 * truncates the target to zero and writes the new content into it with
 * the chosen strategy (put_file's in-place mode, which syncs it), instead
 * of writing a temp file and renaming it.
 *
 * Defect: between the truncate and the last write the target holds
 * neither version, so a crash, a power cut or a full disk in that window
 * loses both the old content and the new. The program still claims what
 * replace claims: old or new content at every instant.
 *
 * Rule broken ("When Should You Fsync?", on overwriting existing files):
 * write a temp file in the same directory, fsync it, rename it over the
 * target, fsync the directory.
 */
#include <unistd.h>

#include "../lib/error.h"
#include "../lib/replaceable.h"

int replace_file(const char *target, const void *data, size_t size,
		 enum put_strategy s)
{
	int created = 0;

	/*
	 * BUG: from here until put_file returns, target holds neither
	 * its old content nor the new one.
	 */
	if (truncate(target, 0) < 0)
		return error_errno("truncate '%s'", target);
	return put_file(target, PUT_INPLACE, data, size, s, &created);
}
