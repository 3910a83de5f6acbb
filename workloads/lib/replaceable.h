/*
 * The library functions a buggy variant may replace, and the helpers their
 * copies need. Internal to workloads/: nothing else should call these.
 *
 * A buggy variant (workloads/variants/<name>.c, see variants/README) is
 * replace's main() linked with this library, except that one function
 * comes from the variant's own file, a copy of ours with one defect. The
 * library defines each replaceable function weak (#pragma weak in its .c
 * file, so the definition's text stays identical to the variant's copy and
 * the report's fix diff shows only the defect); the variant's ordinary
 * definition wins at link time. The variant includes this header so that
 * the compiler checks its copy has exactly our signature: a mismatch would
 * otherwise link, and be called with the wrong arguments.
 *
 * Replaceable: io_write_all_with (io.c, declared in io.h), replace_file
 * (update.c, declared in update.h) and the four strategies below.
 */
#ifndef WORKLOADS_REPLACEABLE_H
#define WORKLOADS_REPLACEABLE_H

#include <stddef.h>

#include "io.h"
#include "put.h"
#include "update.h"

/* put_file()'s strategies, one per enum put_strategy (put.c). */
int put_stdio(const char *path, enum put_mode mode, const void *data,
	      size_t size, int *created);
int put_direct(const char *path, enum put_mode mode, const void *data,
	       size_t size, int *created);
int put_sync(const char *path, enum put_mode mode, const void *data,
	     size_t size, int *created);
int put_mmap(const char *path, enum put_mode mode, const void *data,
	     size_t size, int *created);

/* The open(2) flags of a mode: O_CREAT|O_EXCL for PUT_CREATE, else 0. */
int put_open_flags(enum put_mode mode);

/* The directory holding path ("." for a bare name), malloc()ed; NULL on ENOMEM. */
char *update_dir_of(const char *path);

/* Open dir, fsync it, close it; 0 or IO_FAILED after one diagnostic line. */
int update_fsync_dir(const char *dir);

#endif
