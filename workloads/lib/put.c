/*
 * Method: one function per strategy, each the shortest correct sequence of
 * plain libc calls for its API, with every return value checked. The calls
 * made depend only on the mode, the strategy and the payload size, so a
 * fault-injection run can count them ("the 2nd write") and get the same
 * call every time.
 *
 * In PUT_INPLACE mode each strategy writes from offset 0, truncates to the
 * new size (the old content may have been longer), and then makes content
 * and size durable. In PUT_CREATE mode the file starts empty, so only the
 * direct strategy, whose last block carries padding, needs the truncate.
 *
 * Files are created with mode 0666 minus the umask, like any new file;
 * copying an old file's owner and mode is outside what the harness models.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "error.h"
#include "io.h"
#include "put.h"
#include "replaceable.h"

/*
 * Weak, so that a buggy variant (workloads/variants/) can link its own
 * copy of one strategy in place of ours: see replaceable.h.
 */
#pragma weak put_stdio
#pragma weak put_direct
#pragma weak put_sync
#pragma weak put_mmap

static const char *const strategy_names[] = {
	[PUT_STDIO] = "stdio",
	[PUT_DIRECT] = "direct",
	[PUT_SYNC] = "sync",
	[PUT_MMAP] = "mmap",
};

const char put_strategy_list[] = "stdio, direct, sync or mmap";

int put_strategy_parse(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(strategy_names) / sizeof(strategy_names[0]); i++)
		if (!strcmp(name, strategy_names[i]))
			return (int)i;
	return -1;
}

const char *put_strategy_name(enum put_strategy s)
{
	return strategy_names[s];
}

int put_open_flags(enum put_mode mode)
{
	/*
	 * O_EXCL: a leftover file of that name belongs to someone else (or
	 * to a crashed run someone should look at); never write through it.
	 */
	return mode == PUT_CREATE ? O_CREAT | O_EXCL : 0;
}

/*
 * stdio: the data sits in the FILE's buffer until fflush hands it to the
 * kernel, and in the page cache until fsync. fsync(fileno(fp)) without the
 * fflush would make durable whatever reached the kernel so far, which may
 * be nothing.
 */
int put_stdio(const char *path, enum put_mode mode, const void *data,
	      size_t size, int *created)
{
	FILE *fp;
	int err = 0;

	/* "wx" is O_WRONLY|O_CREAT|O_EXCL|O_TRUNC; "r+" neither creates nor truncates. */
	fp = fopen(path, mode == PUT_CREATE ? "wx" : "r+");
	if (!fp)
		return error_errno("fopen '%s'", path);
	if (mode == PUT_CREATE)
		*created = 1;

	/*
	 * fwrite of 0 bytes returns 0 whether or not anything went wrong, so
	 * it could not report a failure: an empty payload skips it.
	 */
	/*
	 * EINTR from the write(2) inside fwrite or fflush is transient, but
	 * stdio has dropped what it held: start again from offset 0 with
	 * the whole payload, which is still ours (io_stdio_restart).
	 */
again:
	errno = 0;
	if (size > 0 && fwrite(data, 1, size, fp) != size) {
		if (io_stdio_restart(fp))
			goto again;
		if (errno)
			err = error_errno("fwrite '%s'", path);
		else
			err = error("fwrite '%s': short write", path);
		goto out;
	}
	/*
	 * The check that matters most: an fflush error (ENOSPC, EIO) is often
	 * the first and only report that buffered data never reached the
	 * kernel.
	 */
	if (fflush(fp) == EOF) {
		if (io_stdio_restart(fp))
			goto again;
		err = error_errno("fflush '%s'", path);
		goto out;
	}
	if (mode == PUT_INPLACE && ftruncate(fileno(fp), (off_t)size) < 0) {
		err = error_errno("ftruncate '%s'", path);
		goto out;
	}
	if (fsync(fileno(fp)) < 0) {
		err = error_errno("fsync '%s'", path);
		goto out;
	}
out:
	/*
	 * fclose flushes again and closes; on the success path its error is
	 * a real failure (the buffer is empty after fflush, but close(2) can
	 * still report a deferred write error, e.g. on NFS).
	 */
	if (fclose(fp) == EOF && !err)
		err = error_errno("fclose '%s'", path);
	return err;
}

/*
 * direct: O_DIRECT requires the buffer address, the file offset and the
 * length to be multiples of the filesystem's alignment (statx's
 * STATX_DIOALIGN, or 4096 when the kernel does not say). The payload is
 * copied into an aligned buffer and its last block padded with zeros, the
 * whole buffer is written on the O_DIRECT descriptor, and ftruncate cuts
 * the padding off. Finishing the tail with a second, buffered descriptor
 * would also work, but would mix cached and uncached writes to one file
 * and add an open and a close; truncating is one call, and in-place
 * overwrites need it anyway.
 *
 * O_DIRECT skips the page cache, not the drive's volatile write cache, and
 * says nothing about the file's size or block map: fsync is still needed.
 */
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
	if (fsync(fd) < 0) {
		err = error_errno("fsync '%s'", path);
		goto out;
	}
out:
	free(buf);
	if (close(fd) < 0 && !err)
		err = error_errno("close '%s'", path);
	return err;
}

/*
 * sync: O_DSYNC rather than O_SYNC. Each write returns only once its data,
 * and the metadata needed to read it back (size, block map), are on stable
 * storage; O_SYNC would also wait for timestamps, which no reader of the
 * payload needs. O_DSYNC covers write(2) only: an in-place overwrite's
 * ftruncate changes the size outside any write, so fdatasync follows it.
 */
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
	if (close(fd) < 0 && !err)
		err = error_errno("close '%s'", path);
	return err;
}

/*
 * mmap: a store into a shared mapping past the end of the file, or into a
 * hole the filesystem cannot fill because the disk is full, raises SIGBUS
 * instead of returning an error. posix_fallocate first extends the file
 * and reserves its blocks, so a full disk shows up as an error here.
 *
 * msync(MS_SYNC) writes the mapped range back and reports its errors;
 * POSIX promises nothing about the file size that posix_fallocate or
 * ftruncate set, so an fsync follows. A 0-byte payload cannot be mapped
 * (mmap rejects length 0): then there is nothing to copy, and the fsync
 * alone makes the (empty) file durable.
 */
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

int put_file(const char *path, enum put_mode mode, const void *data,
	     size_t size, enum put_strategy s, int *created)
{
	switch (s) {
	case PUT_STDIO:
		return put_stdio(path, mode, data, size, created);
	case PUT_DIRECT:
		return put_direct(path, mode, data, size, created);
	case PUT_SYNC:
		return put_sync(path, mode, data, size, created);
	case PUT_MMAP:
		return put_mmap(path, mode, data, size, created);
	}
	errno = EINVAL;
	return error_errno("unknown strategy %d", (int)s);
}
