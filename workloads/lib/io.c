#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "io.h"
#include "replaceable.h"

/* Weak, so that a buggy variant can replace it: see replaceable.h. */
#pragma weak io_write_all_with

int io_write_all_with(io_write_fn *wr, int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		/*
		 * Linux caps one write at 0x7ffff000 bytes anyway; asking
		 * for no more than SSIZE_MAX keeps the return value honest.
		 */
		size_t chunk = len > SSIZE_MAX ? SSIZE_MAX : len;
		ssize_t n = wr(fd, p, chunk);

		if (n < 0) {
			/* A signal arrived before anything was written. */
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0) {
			/*
			 * No progress and no error: retrying could spin
			 * forever, and the only plausible cause on a regular
			 * file is a full device.
			 */
			errno = ENOSPC;
			return -1;
		}
		/* A short write really wrote n bytes: go on after them. */
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int io_write_all(int fd, const void *buf, size_t len)
{
	return io_write_all_with(write, fd, buf, len);
}

int io_stdio_restart(FILE *fp)
{
	int err = errno;

	if (err != EINTR)
		return 0;
	/* fseek also clears the stream's error indicator */
	if (fseek(fp, 0, SEEK_SET) == 0)
		return 1;
	errno = err;
	return 0;
}

int io_align_up(size_t n, size_t unit, size_t *out)
{
	size_t rem;

	if (unit == 0) {
		errno = EINVAL;
		return -1;
	}
	rem = n % unit;
	if (rem == 0) {
		*out = n;
		return 0;
	}
	if (n > SIZE_MAX - (unit - rem)) {
		errno = EOVERFLOW;
		return -1;
	}
	*out = n + (unit - rem);
	return 0;
}

static int is_pow2(uint32_t x)
{
	return x != 0 && (x & (x - 1)) == 0;
}

size_t io_dio_unit_choose(int reported, uint32_t mem_align, uint32_t offset_align)
{
	size_t unit;

	if (!reported)
		return IO_DIO_FALLBACK;
	/* statx(2): both fields are 0 when the file cannot do direct I/O. */
	if (!is_pow2(mem_align) || !is_pow2(offset_align))
		return 0;
	/*
	 * Both are powers of two, so the larger is a multiple of the smaller
	 * and one unit satisfies address, offset and length at once.
	 */
	unit = mem_align > offset_align ? mem_align : offset_align;
	/* posix_memalign() wants at least pointer alignment. */
	if (unit < sizeof(void *))
		unit = sizeof(void *);
	return unit;
}

size_t io_dio_unit(int fd)
{
#ifdef STATX_DIOALIGN
	struct statx sx;

	/*
	 * A failing statx (ENOSYS on old kernels, or a filesystem that does
	 * not answer) is not fatal: the fallback alignment is what every
	 * Linux filesystem accepted before STATX_DIOALIGN existed.
	 */
	if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0)
		return io_dio_unit_choose(!!(sx.stx_mask & STATX_DIOALIGN),
					  sx.stx_dio_mem_align,
					  sx.stx_dio_offset_align);
#else
	(void)fd;
#endif
	return io_dio_unit_choose(0, 0, 0);
}

int io_read_file(const char *path, char **data, size_t *size)
{
	char *buf = NULL;
	size_t len = 0, cap;
	struct stat st;
	int fd, err = 0;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		return error_errno("open '%s'", path);
	if (fstat(fd, &st) < 0) {
		err = error_errno("fstat '%s'", path);
		goto out;
	}
	/*
	 * The size from fstat is a hint (the file may change under us, and
	 * pipes report 0): read to end of file, growing as needed. The +1
	 * lets a file of exactly st_size bytes reach EOF without a resize.
	 */
	cap = S_ISREG(st.st_mode) ? (size_t)st.st_size + 1 : 65536;
	buf = malloc(cap);
	if (!buf) {
		err = error_errno("malloc %zu bytes for '%s'", cap, path);
		goto out;
	}
	for (;;) {
		ssize_t n;

		if (len == cap) {
			char *bigger;

			if (cap > SIZE_MAX / 2) {
				errno = EFBIG;
				err = error_errno("read '%s'", path);
				goto out;
			}
			bigger = realloc(buf, cap * 2);
			if (!bigger) {
				err = error_errno("realloc %zu bytes for '%s'",
						  cap * 2, path);
				goto out;
			}
			buf = bigger;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = error_errno("read '%s'", path);
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
out:
	/* Read-only, but a close error still means something went wrong. */
	if (close(fd) < 0 && !err)
		err = error_errno("close '%s'", path);
	if (err) {
		free(buf);
		return err;
	}
	*data = buf;
	*size = len;
	return 0;
}
