/*
 * renamer: replace TARGET with NEWFILE's content through a temporary file,
 * with or without the one step most programs forget.
 *
 * Method: renamer [--no-dir-fsync] TARGET NEWFILE reads NEWFILE, writes
 * it to "TARGET.tmp" (created, truncated), fsyncs and closes it, renames
 * it over TARGET, then opens the directory and fsyncs it. With
 * --no-dir-fsync it stops after the rename: the new name is in the page
 * cache alone, and a power cut after the program said "done" can bring
 * back the old file (the rename is durable only once its directory is
 * synced). The tests audit both ways on a real ext4 (crashcheck audit
 * --fs ext4), where the journal shows it.
 *
 * Exit status: 0 replaced, 1 a call failed (named on stderr), 2 usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fail(const char *call, const char *path)
{
	fprintf(stderr, "renamer: %s '%s': %s\n", call, path, strerror(errno));
	return 1;
}

int main(int argc, char **argv)
{
	int dir_fsync = 1, in, out, dir;
	char buf[65536], tmp[4096];
	ssize_t n;

	if (argc > 1 && !strcmp(argv[1], "--no-dir-fsync")) {
		dir_fsync = 0;
		argv++;
		argc--;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: renamer [--no-dir-fsync] TARGET NEWFILE\n");
		return 2;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[1]);
	if ((in = open(argv[2], O_RDONLY)) < 0)
		return fail("open", argv[2]);
	if ((out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0)
		return fail("open", tmp);
	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return fail("read", argv[2]);
		}
		for (ssize_t done = 0; done < n;) {
			ssize_t w = write(out, buf + done, n - done);
			if (w < 0) {
				if (errno == EINTR)
					continue;
				return fail("write", tmp);
			}
			done += w;
		}
	}
	close(in);
	/* the data first: a rename that reaches the disk before it names an
	 * empty file */
	if (fsync(out) < 0)
		return fail("fsync", tmp);
	if (close(out) < 0)
		return fail("close", tmp);
	if (rename(tmp, argv[1]) < 0)
		return fail("rename", tmp);
	if (!dir_fsync)
		return 0;
	if ((dir = open(".", O_RDONLY | O_DIRECTORY)) < 0)
		return fail("open", ".");
	if (fsync(dir) < 0)
		return fail("fsync", ".");
	if (close(dir) < 0)
		return fail("close", ".");
	return 0;
}
