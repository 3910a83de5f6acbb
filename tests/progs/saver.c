/*
 * saver: save a file the way many small programs do, with one careless
 * habit picked on the command line; built with -g by the tests, so that a
 * finding can name the line of the call that decided it.
 *
 * Method: saver MODE TARGET NEW copies the file NEW over TARGET. Every mode
 * writes a temporary file "TARGET.tmp" in one loop, fsyncs it, renames it
 * over TARGET and fsyncs the directory, reporting each failure on stderr
 * and exiting 1, except where the mode says otherwise:
 *
 *   careful         nothing else: the correct program
 *   recover         when fsync fails, say so, unlink the temp file and write
 *                   the data again, from its own buffer, into a fresh temp
 *                   file ("TARGET.tmp2"), and go on: after a failed fsync the
 *                   page cache copy cannot be trusted, the buffer can
 *   retry           when fsync fails, fsync again until it succeeds (the
 *                   fsyncgate mistake: the dirty pages are gone)
 *   close-ignored   close's result is ignored (after a successful fsync)
 *   read-close      also reads TARGET first, and ignores a failure to
 *                   close that read-only descriptor (which loses nothing)
 *   quiet-exit      exits 1 with nothing on stderr on any failure
 *   chunks-ignored  writes the temp file 1024 bytes at a time and ignores
 *                   what each write returns (one defect, as many findings
 *                   as writes)
 *
 * Exit status: 0 saved, 1 failed (and said why, but quiet-exit), 2 usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int quiet;

static int fail(const char *call, const char *path)
{
	if (!quiet)
		fprintf(stderr, "saver: %s '%s': %s\n", call, path, strerror(errno));
	return -1;
}

static int chunks;

static int write_all(int fd, const char *buf, size_t len)
{
	if (chunks) {
		for (; len > 0; buf += 1024, len -= len < 1024 ? len : 1024)
			write(fd, buf, len < 1024 ? len : 1024);	/* BUG */
		return 0;
	}
	while (len > 0) {
		ssize_t n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* write BUF into a fresh PATH and fsync it; *FD stays open on success */
static int write_temp(const char *path, const char *buf, size_t len, int *fd)
{
	*fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (*fd < 0)
		return fail("open", path);
	if (write_all(*fd, buf, len) < 0)
		return fail("write", path);
	return 0;
}

static int sync_dir(void)
{
	int dfd = open(".", O_RDONLY | O_DIRECTORY);
	if (dfd < 0)
		return fail("open", ".");
	if (fsync(dfd) < 0) {
		fail("fsync", ".");
		close(dfd);
		return -1;
	}
	return close(dfd);
}

static char *slurp(const char *path, size_t *len)
{
	static char buf[1 << 20];
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return NULL;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < 0)
		return NULL;
	*len = (size_t)n;
	return buf;
}

static int save(const char *mode, const char *target, const char *data, size_t len)
{
	char tmp[4096], tmp2[4096];
	int fd;

	snprintf(tmp, sizeof(tmp), "%s.tmp", target);
	snprintf(tmp2, sizeof(tmp2), "%s.tmp2", target);
	if (!strcmp(mode, "read-close")) {
		char old[256];
		int rfd = open(target, O_RDONLY);
		if (rfd >= 0) {
			if (read(rfd, old, sizeof(old)) < 0)
				return fail("read", target);
			close(rfd);	/* read-only: nothing to lose */
		}
	}
	if (write_temp(tmp, data, len, &fd) < 0)
		return -1;
	if (fsync(fd) < 0) {
		if (!strcmp(mode, "retry")) {
			while (fsync(fd) < 0)
				;
		} else if (!strcmp(mode, "recover")) {
			fail("fsync", tmp);
			fprintf(stderr, "saver: writing '%s' again into '%s'\n", target, tmp2);
			close(fd);
			unlink(tmp);
			if (write_temp(tmp2, data, len, &fd) < 0 || fsync(fd) < 0)
				return fail("fsync", tmp2);
			strcpy(tmp, tmp2);
		} else {
			return fail("fsync", tmp);
		}
	}
	if (!strcmp(mode, "close-ignored"))
		close(fd);
	else if (close(fd) < 0)
		return fail("close", tmp);
	if (rename(tmp, target) < 0)
		return fail("rename", tmp);
	return sync_dir();
}

int main(int argc, char **argv)
{
	static const char *modes[] = { "careful", "recover", "retry",
		"close-ignored", "read-close", "quiet-exit", "chunks-ignored" };
	const char *data;
	size_t len, i;

	if (argc != 4) {
		fprintf(stderr, "usage: saver MODE TARGET NEW\n");
		return 2;
	}
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (!strcmp(argv[1], modes[i]))
			break;
	if (i == sizeof(modes) / sizeof(modes[0])) {
		fprintf(stderr, "saver: unknown mode '%s'\n", argv[1]);
		return 2;
	}
	quiet = !strcmp(argv[1], "quiet-exit");
	chunks = !strcmp(argv[1], "chunks-ignored");
	data = slurp(argv[3], &len);
	if (data == NULL)
		return fail("read", argv[3]), 1;
	return save(argv[1], argv[2], data, len) < 0;
}
