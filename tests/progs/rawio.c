/*
 * rawio: replace a file correctly, through calls the preload cannot see
 * (tests/test_findings.py: which backend `--backend auto` picks, and what
 * the preload says of what it could not see).
 *
 * Method: rawio MODE TARGET NEW writes NEW to TARGET.tmp, fsyncs it,
 * renames it over TARGET and fsyncs the directory, each failure said on
 * stderr and exit 1; by MODE:
 *
 *   raw    the writes and the syncs as syscall(SYS_write) and
 *          syscall(SYS_fsync): raw system calls, which a library
 *          interposed on the C library's functions never sees
 *   uring  (built with -DRAWIO_URING -luring) the writes and the syncs
 *          submitted through an io_uring (liburing): no system call of
 *          their own at all
 *
 * Correct in both modes: after exit 0 the new content is durable.
 *
 * Exit status: 0 replaced, 1 failed (and said why), 2 usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#ifdef RAWIO_URING
#include <liburing.h>
#endif

static int fail(const char *call, const char *path)
{
	fprintf(stderr, "rawio: %s '%s': %s\n", call, path, strerror(errno));
	return 1;
}

static int raw_write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		long w = syscall(SYS_write, fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

#ifdef RAWIO_URING
/* one operation through the ring, waited for: its result, or -errno */
static int ring_one(struct io_uring *ring, int op, int fd, const char *buf,
		    size_t len, off_t off)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	struct io_uring_cqe *cqe;
	int res;

	if (op == 0)
		io_uring_prep_write(sqe, fd, buf, (unsigned)len, (__u64)off);
	else
		io_uring_prep_fsync(sqe, fd, 0);
	if ((res = io_uring_submit(ring)) < 0 ||
	    (res = io_uring_wait_cqe(ring, &cqe)) < 0)
		return res;
	res = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return res;
}
#endif

static int put(const char *mode, int fd, const char *buf, size_t len)
{
	if (!strcmp(mode, "raw")) {
		if (raw_write_all(fd, buf, len) < 0)
			return -1;
		return (int)syscall(SYS_fsync, fd);
	}
#ifdef RAWIO_URING
	{
		struct io_uring ring;
		size_t done = 0;
		int res = io_uring_queue_init(4, &ring, 0);

		if (res < 0) {
			errno = -res;
			return -1;
		}
		while (done < len) {
			res = ring_one(&ring, 0, fd, buf + done, len - done, (off_t)done);
			if (res < 0) {
				errno = -res;
				return -1;
			}
			done += (size_t)res;
		}
		res = ring_one(&ring, 1, fd, NULL, 0, 0);
		io_uring_queue_exit(&ring);
		if (res < 0) {
			errno = -res;
			return -1;
		}
		return 0;
	}
#else
	errno = ENOSYS;
	return -1;
#endif
}

int main(int argc, char **argv)
{
	char tmp[4096], buf[1 << 16];
	ssize_t n, len = 0;
	int in, fd;

	if (argc != 4 || (strcmp(argv[1], "raw") && strcmp(argv[1], "uring"))) {
		fprintf(stderr, "usage: rawio raw|uring TARGET NEW\n");
		return 2;
	}
	in = open(argv[3], O_RDONLY);
	if (in < 0)
		return fail("open", argv[3]);
	while (len < (ssize_t)sizeof(buf) &&
	       (n = read(in, buf + len, sizeof(buf) - (size_t)len)) > 0)
		len += n;
	close(in);
	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[2]);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0)
		return fail("open", tmp);
	if (put(argv[1], fd, buf, (size_t)len) < 0)
		return fail("write", tmp);
	if (close(fd) < 0)
		return fail("close", tmp);
	if (rename(tmp, argv[2]) < 0)
		return fail("rename", tmp);
	fd = open(".", O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return fail("open", ".");
	if (syscall(SYS_fsync, fd) < 0)
		return fail("fsync", ".");
	close(fd);
	return 0;
}
