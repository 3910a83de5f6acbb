/*
 * callsite_lib: a shared library (in lib/: tests/test_inject.py builds
 * every tests/progs/*.c as a program) whose save() makes its own calls, so
 * that their "at" names this library, not the program that called save().
 * Built twice by the test, as liba.so and libb.so.
 */
#include <fcntl.h>
#include <unistd.h>

int save(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND);
	int ret;

	if (fd < 0)
		return -1;
	ret = fsync(fd); /* SITE:lib-fsync */
	if (close(fd) < 0)
		return -1;
	return ret;
}
