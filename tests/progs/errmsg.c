/*
 * errmsg: writes a file, and when that fails says so on stderr three
 * ways (stdio, dprintf, write(2)) and once on stdout, then exits 1.
 *
 * Method. A fault aimed at the program's files must not reach the
 * descriptors that were its stdout and stderr at start (crash-model.md):
 * under `write#1+=EIO` every one of these lines must come out, and the
 * exit status must be 1, not the 3 of a failed message.
 *
 * usage: errmsg FILE    exit 0 written, 1 failed and said so, 3 a message
 *                       could not be written
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	static const char line[] = "errmsg: write(2) to stderr\n";
	int fd;

	if (argc != 2)
		return 2;
	fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return 1;
	if (write(fd, "abc\n", 4) == 4 && close(fd) == 0)
		return 0;
	if (fprintf(stderr, "errmsg: write '%s': %s\n", argv[1], strerror(errno)) < 0 ||
	    fflush(stderr) == EOF)
		return 3;
	if (dprintf(2, "errmsg: dprintf to stderr\n") < 0)
		return 3;
	if (write(2, line, sizeof(line) - 1) != sizeof(line) - 1)
		return 3;
	if (printf("errmsg: stdout\n") < 0 || fflush(stdout) == EOF)
		return 3;
	return 1;
}
