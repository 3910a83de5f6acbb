/*
 * callsite: calls made from known lines, for the trace's "at" field.
 *
 * Method. main() makes one intercepted call per line marked "SITE:<name>"
 * below (the test reads the marks from this file), then, when given
 * libraries, dlopen()s each in turn, calls its save() (which makes its
 * own fsync from inside the library), and dlclose()s it: the next one is
 * usually loaded at the same address, so an "at" that still named the
 * first would show the library's kept segments outlived the dlclose.
 *
 * usage: callsite DIR [LIB...]   exit 0, or 1 and a line on stderr
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char path[4096];
	FILE *f;
	int fd;

	if (argc < 2) {
		fprintf(stderr, "usage: callsite DIR [LIB...]\n");
		return 2;
	}
	snprintf(path, sizeof(path), "%s/out", argv[1]);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644); /* SITE:open */
	if (fd < 0)
		return perror("open"), 1;
	if (write(fd, "abc\n", 4) != 4) /* SITE:write */
		return perror("write"), 1;
	if (fsync(fd) < 0) /* SITE:fsync */
		return perror("fsync"), 1;
	if (close(fd) < 0) /* SITE:close */
		return perror("close"), 1;
	f = fopen(path, "a"); /* SITE:fopen */
	if (!f)
		return perror("fopen"), 1;
	fputs("def\n", f); /* SITE:fputs */
	if (fclose(f) == EOF) /* SITE:fclose */
		return perror("fclose"), 1;
	for (int i = 2; i < argc; i++) {
		void *h = dlopen(argv[i], RTLD_NOW | RTLD_LOCAL);
		int (*save)(const char *);

		if (!h)
			return fprintf(stderr, "callsite: dlopen: %s\n", dlerror()), 1;
		save = (int (*)(const char *))dlsym(h, "save");
		if (!save || save(path) < 0)
			return fprintf(stderr, "callsite: save in %s failed\n", argv[i]), 1;
		if (dlclose(h))
			return fprintf(stderr, "callsite: dlclose: %s\n", dlerror()), 1;
	}
	return 0;
}
