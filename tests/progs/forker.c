/*
 * forker: a child process makes a random number of writes of its own
 * before its parent writes the target, as rsync's processes do.
 *
 * Method: usage `forker TARGET NEWFILE`. The parent forks a child that
 * writes one byte to /dev/null between 1 and 8 times (getrandom(2)
 * chooses) and exits; the parent waits for it, then replaces TARGET
 * correctly: NEWFILE's content written to TARGET.tmp in chunks of 1000
 * bytes, fsync, close, rename, fsync of the directory. Every error is
 * reported and ends the run with status 1. The parent's calls on its
 * files are the same in every run; their numbers among all the writes
 * of the process tree (write#N) are not.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int fail(const char *call, const char *path)
{
	fprintf(stderr, "forker: %s '%s': %s\n", call, path, strerror(errno));
	return 1;
}

int main(int argc, char **argv)
{
	static char data[1 << 20];
	char tmp[4096];
	unsigned char r;
	ssize_t len = 0, n;
	int fd, status;
	pid_t pid;

	if (argc != 3) {
		fprintf(stderr, "usage: forker TARGET NEWFILE\n");
		return 2;
	}
	if (getrandom(&r, 1, 0) != 1)
		return fail("getrandom", "");
	pid = fork();
	if (pid < 0)
		return fail("fork", "");
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		for (int i = 0; i <= r % 8; i++)
			if (write(null, "x", 1) != 1)
				_exit(1);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
		return fail("waitpid", "");
	fd = open(argv[2], O_RDONLY);
	if (fd < 0)
		return fail("open", argv[2]);
	while ((n = read(fd, data + len, sizeof(data) - len)) > 0)
		len += n;
	if (n < 0)
		return fail("read", argv[2]);
	close(fd);
	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[1]);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0)
		return fail("open", tmp);
	for (ssize_t off = 0; off < len; off += n) {
		size_t want = len - off < 1000 ? len - off : 1000;

		n = write(fd, data + off, want);
		if (n < 0 && errno == EINTR) {
			n = 0;
			continue;
		}
		if (n <= 0) {
			if (n == 0)
				errno = ENOSPC;
			unlink(tmp);
			return fail("write", tmp);
		}
	}
	if (fsync(fd) < 0) {
		unlink(tmp);
		return fail("fsync", tmp);
	}
	if (close(fd) < 0) {
		unlink(tmp);
		return fail("close", tmp);
	}
	if (rename(tmp, argv[1]) < 0) {
		unlink(tmp);
		return fail("rename", tmp);
	}
	fd = open(".", O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return fail("open", ".");
	if (fsync(fd) < 0)
		return fail("fsync", ".");
	if (close(fd) < 0)
		return fail("close", ".");
	return 0;
}
