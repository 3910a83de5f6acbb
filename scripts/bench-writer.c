/*
 * bench-writer: the program of scripts/bench's scaling table.
 *
 * Method: replaces TARGET with the content of NEW the correct way (temp
 * file, write, fsync, rename, fsync the directory), but hands the data to
 * the kernel in exactly N write(2) calls of nearly equal length, so that a
 * sweep of it has about seven cases per write (N = 1, 10, 100, 1000) and
 * the bench can show what one more traced call costs. Short writes and
 * EINTR are retried within the same chunk, so the number of write calls
 * of a run without faults is N, whatever the size.
 *
 * usage: bench-writer N TARGET NEW
 * Exit: 0 done, 1 an I/O call failed (said why on stderr), 2 usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int error_errno(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	fputs("bench-writer: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, ": %s\n", strerror(saved));
	return -1;
}

static int read_all(const char *path, char **buf, size_t *len)
{
	struct stat st;
	int fd, err = 0;
	size_t got = 0;

	*buf = NULL;
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return error_errno("open '%s'", path);
	if (fstat(fd, &st) < 0) {
		err = error_errno("fstat '%s'", path);
		goto out;
	}
	*buf = malloc(st.st_size ? st.st_size : 1);
	if (!*buf) {
		err = error_errno("malloc %lld bytes", (long long) st.st_size);
		goto out;
	}
	while (got < (size_t) st.st_size) {
		ssize_t n = read(fd, *buf + got, st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = error_errno("read '%s'", path);
			goto out;
		}
		if (n == 0)
			break;
		got += n;
	}
	*len = got;
out:
	close(fd);
	return err;
}

/* One chunk, in as many calls as the kernel needs: a short write or an
 * EINTR is not an error, only a reason to carry on. */
static int write_chunk(int fd, const char *p, size_t len, const char *path)
{
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return error_errno("write '%s'", path);
		p += n;
		len -= n;
	}
	return 0;
}

int main(int argc, char **argv)
{
	char tmp[4096], *data = NULL, *end;
	size_t len = 0, off = 0;
	long n, i;
	int fd = -1, dfd = -1, err = 0;

	if (argc != 4) {
		fprintf(stderr, "usage: bench-writer N TARGET NEW\n");
		return 2;
	}
	errno = 0;
	n = strtol(argv[1], &end, 10);
	if (errno || *end || n < 1 || n > 1000000) {
		fprintf(stderr, "bench-writer: bad number of writes '%s'\n", argv[1]);
		return 2;
	}
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", argv[2]) >= (int) sizeof(tmp)) {
		fprintf(stderr, "bench-writer: target name too long\n");
		return 2;
	}
	if (read_all(argv[3], &data, &len) < 0)
		return 1;

	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
	if (fd < 0) {
		err = error_errno("open '%s'", tmp);
		goto out;
	}
	for (i = 0; i < n; i++) {
		/* chunk i covers [len*i/n, len*(i+1)/n): N calls even when
		 * some chunks are empty, so every size has N write calls */
		size_t stop = len * (i + 1) / n;
		size_t chunk = stop - off;

		if (!chunk) {
			if (write(fd, data, 0) < 0) {
				err = error_errno("write '%s'", tmp);
				goto out;
			}
			continue;
		}
		if (write_chunk(fd, data + off, chunk, tmp) < 0) {
			err = -1;
			goto out;
		}
		off = stop;
	}
	/* the data must be on disk before the name points at it */
	if (fsync(fd) < 0) {
		err = error_errno("fsync '%s'", tmp);
		goto out;
	}
	/* close reports deferred write-back errors on some file systems */
	if (close(fd) < 0) {
		fd = -1;
		err = error_errno("close '%s'", tmp);
		goto out;
	}
	fd = -1;
	if (rename(tmp, argv[2]) < 0) {
		err = error_errno("rename '%s'", tmp);
		goto out;
	}
	/* the rename is durable only once the directory is */
	dfd = open(".", O_RDONLY | O_DIRECTORY);
	if (dfd < 0) {
		err = error_errno("open '.'");
		goto out;
	}
	if (fsync(dfd) < 0) {
		err = error_errno("fsync '.'");
		goto out;
	}
out:
	if (fd >= 0)
		close(fd);
	if (dfd >= 0 && close(dfd) < 0 && !err)
		err = error_errno("close '.'");
	free(data);
	return err ? 1 : 0;
}
