/*
 * writer: replace TARGET with NEWFILE's content, atomically, by system
 * calls alone; the tests link it statically, where the preload never
 * loads and only the syscall backend sees it.
 *
 * Method: read NEWFILE, create TARGET.tmp (O_EXCL), write it in chunks
 * of --chunk bytes (default 4096) with a loop that retries EINTR and goes
 * on after a short write, fsync it, close it, rename it over TARGET, and
 * fsync the directory. Every failure is one line on stderr naming the
 * call, the path and the error, and exit 1 (the temp file removed); a
 * usage error exits 2.
 *
 * Each defect option breaks one rule, for the tests to catch:
 *   --no-dir-fsync    no fsync of the directory after the rename
 *   --no-fsync        no fsync of the temp file before the rename
 *   --eintr-fatal     an EINTR from write is treated as a failure
 *   --short-ignored   a short write is taken as complete
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int no_dir_fsync, no_fsync, eintr_fatal, short_ignored;
static size_t chunk = 4096;

static int fail(const char *call, const char *path)
{
	fprintf(stderr, "writer: %s '%s': %s\n", call, path, strerror(errno));
	return 1;
}

/* the temp file is ours: a failed update leaves none behind */
static int fail_removing(const char *call, const char *tmp)
{
	int e = errno;

	unlink(tmp);
	errno = e;
	return fail(call, tmp);
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		size_t want = len < chunk ? len : chunk;
		ssize_t n = write(fd, buf, want);

		if (n < 0 && errno == EINTR && !eintr_fatal)
			continue;
		if (n < 0)
			return -1;
		if (n == 0) {
			errno = ENOSPC;
			return -1;
		}
		if (short_ignored)
			n = want;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static char data[1 << 20];
	char tmp[4096];
	size_t len = 0;
	ssize_t n;
	int i, fd, dir, in;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--no-dir-fsync"))
			no_dir_fsync = 1;
		else if (!strcmp(argv[i], "--no-fsync"))
			no_fsync = 1;
		else if (!strcmp(argv[i], "--eintr-fatal"))
			eintr_fatal = 1;
		else if (!strcmp(argv[i], "--short-ignored"))
			short_ignored = 1;
		else if (!strcmp(argv[i], "--chunk") && i + 1 < argc)
			chunk = strtoul(argv[++i], NULL, 10);
		else
			break;
	}
	if (argc - i != 2 || !chunk) {
		fprintf(stderr, "usage: writer [--no-dir-fsync] [--no-fsync] "
			"[--eintr-fatal] [--short-ignored] [--chunk N] TARGET NEWFILE\n");
		return 2;
	}
	in = open(argv[i + 1], O_RDONLY);
	if (in < 0)
		return fail("open", argv[i + 1]);
	while ((n = read(in, data + len, sizeof(data) - len)) > 0)
		len += n;
	if (n < 0)
		return fail("read", argv[i + 1]);
	close(in);

	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[i]);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
	if (fd < 0)
		return fail("open", tmp);
	if (write_all(fd, data, len) < 0)
		return fail_removing("write", tmp);
	if (!no_fsync && fsync(fd) < 0)
		return fail_removing("fsync", tmp);
	if (close(fd) < 0)
		return fail_removing("close", tmp);
	if (rename(tmp, argv[i]) < 0)
		return fail_removing("rename", tmp);
	if (no_dir_fsync)
		return 0;
	dir = open(".", O_RDONLY | O_DIRECTORY);
	if (dir < 0)
		return fail("open", ".");
	if (fsync(dir) < 0)
		return fail("fsync", ".");
	if (close(dir) < 0)
		return fail("close", ".");
	return 0;
}
