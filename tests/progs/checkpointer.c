/*
 * checkpointer: replace TARGET with NEWFILE's content, atomically, one
 * 64-byte record per write(2), all from one call site; the program
 * crashcheck's default audit must find a defect in though a sampled
 * sweep passes it (issue 34).
 *
 * Method: read NEWFILE, create TARGET.tmp (O_EXCL), write its records in
 * order with one write() each (retrying EINTR, going on after a short
 * write), fsync it, close it, rename it over TARGET, fsync the
 * directory. Every failure is one line on stderr naming the call, the
 * path and the error, and exit 1 (the temp file removed); a usage error
 * exits 2.
 *
 * The defect: every CHECKPOINT-th record is a checkpoint, which the
 * program thinks advisory, and an EIO from its write is ignored, the
 * record left out. The file is not advisory: the target ends without
 * that record, and the program says nothing and exits 0. It breaks the
 * rule "check what write returns". With CHECKPOINT 18 and a NEWFILE of
 * fewer than 36 records, only the 18th write of the call site has it: a
 * sweep that samples a handful of that site's writes (the first, the
 * last and three between) is unlikely to hit it, and one that runs
 * every case does.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RECORD 64		/* bytes per write */
#define CHECKPOINT 18		/* every CHECKPOINT-th record is a checkpoint */

static int fail(const char *call, const char *path)
{
	fprintf(stderr, "checkpointer: %s '%s': %s\n", call, path,
		strerror(errno));
	return 1;
}

static int fail_removing(const char *call, const char *tmp)
{
	int e = errno;

	unlink(tmp);
	errno = e;
	return fail(call, tmp);
}

/* one record, whole: EINTR retried, a short write continued */
static int put_record(int fd, const char *buf, size_t len, int checkpoint)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EIO && checkpoint)
			return 0;	/* the defect: "advisory", left out */
		if (n < 0)
			return -1;
		if (n == 0) {
			errno = ENOSPC;
			return -1;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

int main(int argc, char **argv)
{
	char tmp[4096], *data = NULL, *dir, *slash;
	size_t size = 0, cap = 0, off;
	ssize_t n;
	int in, fd, dfd, rec;

	if (argc != 3) {
		fprintf(stderr, "usage: checkpointer NEWFILE TARGET\n");
		return 2;
	}
	in = open(argv[1], O_RDONLY);
	if (in < 0)
		return fail("open", argv[1]);
	for (;;) {
		if (size == cap) {
			cap = cap ? 2 * cap : 65536;
			data = realloc(data, cap);
			if (!data)
				return fail("realloc", argv[1]);
		}
		n = read(in, data + size, cap - size);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return fail("read", argv[1]);
		if (n == 0)
			break;
		size += (size_t)n;
	}
	close(in);

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", argv[2]) >= (int)sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return fail("snprintf", argv[2]);
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0)
		return fail("open", tmp);
	for (off = 0, rec = 1; off < size; off += RECORD, rec++) {
		size_t len = size - off < RECORD ? size - off : RECORD;

		if (put_record(fd, data + off, len, rec % CHECKPOINT == 0) < 0) {
			close(fd);
			return fail_removing("write", tmp);
		}
	}
	/* a failed fsync leaves the data nowhere durable: stop here */
	if (fsync(fd) < 0) {
		close(fd);
		return fail_removing("fsync", tmp);
	}
	/* close can report a write-back error the fsync did not */
	if (close(fd) < 0)
		return fail_removing("close", tmp);
	if (rename(tmp, argv[2]) < 0)
		return fail_removing("rename", tmp);

	dir = strdup(argv[2]);
	if (!dir)
		return fail("strdup", argv[2]);
	slash = strrchr(dir, '/');
	if (slash)
		*(slash == dir ? slash + 1 : slash) = '\0';
	dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY);
	if (dfd < 0)
		return fail("open", slash ? dir : ".");
	/* the rename is durable only once its directory is synced */
	if (fsync(dfd) < 0)
		return fail("fsync", slash ? dir : ".");
	close(dfd);
	free(dir);
	free(data);
	return 0;
}
