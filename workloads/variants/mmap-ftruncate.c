/*
 * mmap-ftruncate: the file sized with ftruncate instead of
 * posix_fallocate before it is written through a mapping.
 *
 * Method: replace (../replace.c, lib/update.c) with put_mmap() of
 * lib/put.c swapped for the copy below, which gives the empty temp file
 * its size with ftruncate, maps it and copies the payload in.
 *
 * Defect: ftruncate makes a sparse file: the size is set, no block is
 * reserved. Each store into the mapping then allocates a block when it
 * touches a new page, and a store that finds the disk full cannot return
 * ENOSPC: the kernel kills the program with SIGBUS. The user gets a dead
 * process and a leftover temp file instead of "No space left on device".
 * posix_fallocate reserves every block first, so a full disk is an error
 * the program can check and report.
 *
 * Rule broken ("Checking For Errors", for mapped I/O): arrange for every
 * failure to come back from a call whose result you check; a store into
 * memory has none.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../lib/error.h"
#include "../lib/replaceable.h"

int put_mmap(const char *path, enum put_mode mode, const void *data,
	     size_t size, int *created)
{
	void *map = MAP_FAILED;
	int fd, ret, err = 0;

	/* A writable MAP_SHARED mapping needs the descriptor open for reading too. */
	fd = open(path, put_open_flags(mode) | O_RDWR, 0666);
	if (fd < 0)
		return error_errno("open '%s'", path);
	if (mode == PUT_CREATE)
		*created = 1;

	if (size > 0) {
		/* BUG: sets the size but reserves no block for the stores below. */
		if (ftruncate(fd, (off_t)size) < 0) {
			err = error_errno("ftruncate '%s'", path);
			goto out;
		}
		map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (map == MAP_FAILED) {
			err = error_errno("mmap '%s'", path);
			goto out;
		}
		memcpy(map, data, size);
		if (msync(map, size, MS_SYNC) < 0) {
			err = error_errno("msync '%s'", path);
			goto out;
		}
		ret = munmap(map, size);
		map = MAP_FAILED;
		if (ret < 0) {
			err = error_errno("munmap '%s'", path);
			goto out;
		}
	}
	/* posix_fallocate only grows: cut an older, longer content. */
	if (mode == PUT_INPLACE && ftruncate(fd, (off_t)size) < 0) {
		err = error_errno("ftruncate '%s'", path);
		goto out;
	}
	if (fsync(fd) < 0) {
		err = error_errno("fsync '%s'", path);
		goto out;
	}
out:
	/* Failure path only: the success path has unmapped already. */
	if (map != MAP_FAILED)
		munmap(map, size);
	if (close(fd) < 0 && !err)
		err = error_errno("close '%s'", path);
	return err;
}
