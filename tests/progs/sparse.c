/*
 * sparse: replaces its target with a sparse file of SIZE bytes.
 *
 * Method: usage `sparse TARGET SIZE`. TARGET.tmp is made SIZE bytes long
 * with ftruncate (a hole), its last four bytes written "end\n", then it is
 * fsynced, closed and renamed over TARGET, and the directory fsynced.
 * Every error is reported and ends the run with status 1. A file of a
 * gigabyte costs it a few system calls; what records it must cost no more
 * than what it wrote.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fail(const char *call, const char *path)
{
	fprintf(stderr, "sparse: %s '%s': %s\n", call, path, strerror(errno));
	return 1;
}

int main(int argc, char **argv)
{
	char tmp[4096];
	long long size;
	int fd;

	if (argc != 3 || (size = atoll(argv[2])) < 4) {
		fprintf(stderr, "usage: sparse TARGET SIZE (at least 4)\n");
		return 2;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[1]);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return fail("open", tmp);
	if (ftruncate(fd, size) < 0)
		return fail("ftruncate", tmp);
	if (pwrite(fd, "end\n", 4, size - 4) != 4)
		return fail("pwrite", tmp);
	if (fsync(fd) < 0)
		return fail("fsync", tmp);
	if (close(fd) < 0)
		return fail("close", tmp);
	if (rename(tmp, argv[1]) < 0)
		return fail("rename", tmp);
	fd = open(".", O_RDONLY | O_DIRECTORY);
	if (fd < 0 || fsync(fd) < 0)
		return fail("fsync", ".");
	return 0;
}
