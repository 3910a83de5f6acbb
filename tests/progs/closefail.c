/* closefail: opens 'victim' in the current directory and closes it; when
 * that close fails (an injected EIO) checks what Linux promises: the
 * descriptor is free all the same. Exit 0 when it is; 1 when the
 * descriptor still holds 'victim' open for writing; 3 when close did
 * not fail. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
	char link[64], path[PATH_MAX];
	ssize_t n;
	int flags;
	int fd = open("victim", O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0) {
		perror("open");
		return 2;
	}
	if (close(fd) == 0) {
		puts("close succeeded");
		return 3;
	}
	printf("close failed: %s\n", strerror(errno));
	/* the number may have been taken since (crashcheck's library keeps
	 * a reader of a file it snapshots): free means it no longer holds
	 * the file open for writing */
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n > 0) {
		path[n] = '\0';
		flags = fcntl(fd, F_GETFL);
		if (strstr(path, "/victim") && flags >= 0 &&
		    (flags & O_ACCMODE) == O_WRONLY) {
			puts("the descriptor is still open");
			return 1;
		}
	}
	puts("closed");
	return 0;
}
