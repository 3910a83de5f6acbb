/*
 * The two file updates the workloads perform, as library functions so the
 * unit tests can call them with failing system calls underneath.
 */
#ifndef WORKLOADS_UPDATE_H
#define WORKLOADS_UPDATE_H

#include <stddef.h>

#include "put.h"

/* Suffix of replace's temporary file: "<target>.tmp", beside target. */
#define REPLACE_TMP_SUFFIX ".tmp"

typedef int update_fn(const char *target, const void *data, size_t size,
		      enum put_strategy s);

/*
 * Atomically replace target's content with data: temp file in target's
 * directory, write, make durable, rename over target, fsync the directory.
 * Returns 0, IO_FAILED or IO_UNSUPPORTED (after one diagnostic line). On
 * failure the temp file is gone, and target is untouched unless the
 * failure came after the rename (the directory fsync), when target already
 * holds the new content but its name change may not be durable.
 */
int replace_file(const char *target, const void *data, size_t size,
		 enum put_strategy s);

/*
 * Overwrite the existing file target where it stands: write from offset 0,
 * truncate to size, make durable. Same return values. A failure leaves
 * target in any state between old and new: in-place updates are not atomic.
 */
int overwrite_file(const char *target, const void *data, size_t size,
		   enum put_strategy s);

#endif
