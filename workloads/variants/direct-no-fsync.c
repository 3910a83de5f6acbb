/*
 * direct-no-fsync: O_DIRECT writes trusted without fsync.
 *
 * Method: replace (../replace.c, lib/update.c) with put_direct() of
 * lib/put.c swapped for the copy below, which writes the payload on an
 * O_DIRECT descriptor, cuts the padding off, and closes without fsync.
 *
 * Defect: O_DIRECT skips the page cache, not the drive's volatile write
 * cache, and it makes nothing of the file's metadata durable (its size,
 * its block map, the ftruncate). Without fsync the rename can point the
 * target at a file whose data a power cut loses.
 *
 * Rule broken ("I/O APIs", on O_DIRECT): fsync is still required for
 * files written with O_DIRECT to reach stable storage.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lib/error.h"
#include "../lib/replaceable.h"

int put_direct(const char *path, enum put_mode mode, const void *data,
	       size_t size, int *created)
{
	char *buf = NULL;
	size_t unit, padded;
	int fd, ret, err = 0;

	fd = open(path, put_open_flags(mode) | O_WRONLY | O_DIRECT, 0666);
	if (fd < 0) {
		/*
		 * EINVAL at open is how a filesystem refuses O_DIRECT. Some
		 * (tmpfs before Linux 6.6) create the file first and refuse
		 * afterwards, so the caller must look for one to remove;
		 * O_EXCL guarantees it cannot be someone else's.
		 */
		if (errno != EINVAL)
			return error_errno("open '%s'", path);
		if (mode == PUT_CREATE)
			*created = 1;
		return error_unsupported("O_DIRECT unsupported on this filesystem: '%s'",
					 path);
	}
	if (mode == PUT_CREATE)
		*created = 1;

	unit = io_dio_unit(fd);
	if (!unit) {
		err = error_unsupported("O_DIRECT unsupported on this filesystem: '%s'",
					path);
		goto out;
	}
	if (io_align_up(size, unit, &padded) < 0) {
		err = error_errno("O_DIRECT buffer for %zu bytes of '%s'", size, path);
		goto out;
	}
	/* posix_memalign returns the error number; it does not set errno. */
	ret = posix_memalign((void **)&buf, unit, padded ? padded : unit);
	if (ret) {
		errno = ret;
		err = error_errno("posix_memalign %zu bytes for '%s'", padded, path);
		goto out;
	}
	memcpy(buf, data, size);
	memset(buf + size, 0, padded - size);

	if (io_write_all(fd, buf, padded) < 0) {
		err = error_errno("write '%s'", path);
		goto out;
	}
	if (ftruncate(fd, (off_t)size) < 0) {
		err = error_errno("ftruncate '%s'", path);
		goto out;
	}
	/* BUG: O_DIRECT bypassed the page cache, not the disk's cache. */
out:
	free(buf);
	if (close(fd) < 0 && !err)
		err = error_errno("close '%s'", path);
	return err;
}
