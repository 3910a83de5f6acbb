/*
 * close-unchecked: close's result ignored.
 *
 * Method: replace (../replace.c, lib/update.c) with put_sync() of
 * lib/put.c swapped for the copy below, which closes the temp file without
 * looking at what close returned.
 *
 * Defect: close can be the first call to report a failed write. On NFS
 * (and other network filesystems, and FUSE ones that implement flush)
 * close writes back what is still cached and returns its error: EIO, or
 * ENOSPC and EDQUOT, which NFS reports against a later write, fsync or
 * close rather than the write that ran out of room (close(2)). On a local
 * filesystem (ext4, XFS) close writes nothing back and reports no such
 * error: there it surfaces at fsync. The copy drops what close reports,
 * renames the file over the target and exits 0; the same binary may run
 * on NFS.
 *
 * Rule broken ("Checking For Errors"): errors from writes are often
 * reported only by fsync, msync or close; check what each returns.
 */
#include <fcntl.h>
#include <unistd.h>

#include "../lib/error.h"
#include "../lib/replaceable.h"

int put_sync(const char *path, enum put_mode mode, const void *data,
	     size_t size, int *created)
{
	int fd, err = 0;

	fd = open(path, put_open_flags(mode) | O_WRONLY | O_DSYNC, 0666);
	if (fd < 0)
		return error_errno("open '%s'", path);
	if (mode == PUT_CREATE)
		*created = 1;

	if (io_write_all(fd, data, size) < 0) {
		err = error_errno("write '%s'", path);
		goto out;
	}
	if (mode == PUT_INPLACE) {
		if (ftruncate(fd, (off_t)size) < 0) {
			err = error_errno("ftruncate '%s'", path);
			goto out;
		}
		if (fdatasync(fd) < 0) {
			err = error_errno("fdatasync '%s'", path);
			goto out;
		}
	}
out:
	/* BUG: a write error reported only at close goes unheard. */
	close(fd);
	return err;
}
