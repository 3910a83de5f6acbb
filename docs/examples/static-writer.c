/*
 * static-writer TARGET NEWFILE: copy NEWFILE over TARGET in place and
 * fsync it, for the guide's example of a program the preload cannot see.
 * Built with `cc -static`, it never loads the fault library (a preload
 * needs the dynamic loader): an audit with --backend preload intercepts
 * nothing and must say so instead of passing, and the default audits it
 * under the system-call backend.
 */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char buf[65536];
	ssize_t n;
	int in, out;

	if (argc != 3) {
		fprintf(stderr, "usage: static-writer TARGET NEWFILE\n");
		return 2;
	}
	in = open(argv[2], O_RDONLY);
	out = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0666);
	if (in < 0 || out < 0) {
		perror("static-writer: open");
		return 1;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n) {
			perror("static-writer: write");
			return 1;
		}
	/* the data is not safe until fsync says so, and close can report a
	 * deferred write error */
	if (n < 0 || fsync(out) < 0 || close(out) < 0) {
		perror("static-writer: read, fsync or close");
		return 1;
	}
	return 0;
}
