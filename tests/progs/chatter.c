/*
 * chatter: replace TARGET with NEWFILE's content through TARGET.tmp, and
 * spin when a write fails: the program whose case must not blow up
 * crashcheck's output directory (issue 34).
 *
 * Method: read NEWFILE, create TARGET.tmp, write its content in one
 * write(), and on any failure of that write print a line to stdout
 * (and every 256th to stderr) and try again, without end: a program
 * that spins on ENOSPC or EIO, as write-enospc-spin does, but loudly.
 * Its run ends at crashcheck's time limit (a hang), having written
 * megabytes to stdout and made tens of thousands of failed writes for
 * the trace to record. When the write succeeds it fsyncs, renames and
 * exits 0.
 *
 * The defect: "retry only EINTR and short writes; fail on anything
 * else". Its tests check that the case's output is bounded, not the
 * verdict.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	static char data[1 << 16];
	char tmp[4096], line[256];
	ssize_t size, n;
	unsigned long tries = 0;
	int in, fd;

	if (argc != 3) {
		fprintf(stderr, "usage: chatter NEWFILE TARGET\n");
		return 2;
	}
	in = open(argv[1], O_RDONLY);
	if (in < 0 || (size = read(in, data, sizeof(data))) < 0) {
		fprintf(stderr, "chatter: read '%s': %s\n", argv[1], strerror(errno));
		return 1;
	}
	close(in);
	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[2]);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		fprintf(stderr, "chatter: open '%s': %s\n", tmp, strerror(errno));
		return 1;
	}
	/* the defect: every failure retried, forever */
	while ((n = write(fd, data, (size_t)size)) != size) {
		int len = snprintf(line, sizeof(line),
				   "chatter: write '%s' failed (%s), try %lu: "
				   "trying again, and again, and again\n",
				   tmp, n < 0 ? strerror(errno) : "short",
				   ++tries);

		/* raw writes: stdio's buffer would hide how much is written */
		if (write(1, line, (size_t)len) < 0)
			return 1;
		if (tries % 256 == 0 && write(2, line, (size_t)len) < 0)
			return 1;
		if (lseek(fd, 0, SEEK_SET) < 0)
			return 1;
	}
	if (fsync(fd) < 0 || close(fd) < 0 || rename(tmp, argv[2]) < 0) {
		fprintf(stderr, "chatter: '%s': %s\n", tmp, strerror(errno));
		return 1;
	}
	return 0;
}
