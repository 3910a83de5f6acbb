/*
 * mmap-no-msync: the mapping unmapped without msync.
 *
 * Method: replace (../replace.c, lib/update.c) with put_mmap() of
 * lib/put.c swapped for the copy below, which copies the payload into a
 * shared mapping and unmaps it, taking munmap as the write-back: it never
 * calls msync, nor the fsync that would also cover the mapped pages.
 *
 * Defect: munmap only drops the mapping; the pages stay dirty in the page
 * cache, as after a write(2), until something syncs them. The program
 * renames the never-synced file over the target and exits 0, so a power
 * cut can leave the target empty or half written.
 *
 * Rule broken (the memory-mapped rows of "I/O APIs"): data written
 * through a mapping is synced with msync (MS_SYNC), before the unmap.
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
		/* Returns the error number; errno is left alone. */
		ret = posix_fallocate(fd, 0, (off_t)size);
		if (ret) {
			errno = ret;
			err = error_errno("posix_fallocate '%s'", path);
			goto out;
		}
		map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (map == MAP_FAILED) {
			err = error_errno("mmap '%s'", path);
			goto out;
		}
		memcpy(map, data, size);
		/* BUG: munmap below is not a sync: nothing writes the pages out. */
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
out:
	/* Failure path only: the success path has unmapped already. */
	if (map != MAP_FAILED)
		munmap(map, size);
	if (close(fd) < 0 && !err)
		err = error_errno("close '%s'", path);
	return err;
}
