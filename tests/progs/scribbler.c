/*
 * scribbler: append N one-byte writes to FILE from each of four writers,
 * two threads in each of two processes (a fork): the program whose trace
 * outgrows crashcheck's trace limit from several threads and processes
 * at once (faults/trace.c, trace_drop; tests/test_bounds.py).
 *
 * Method: create FILE empty, fork, start a second thread in each process,
 * and let every thread open FILE with O_APPEND and make N writes of one
 * byte; the parent waits for its child. It claims nothing of FILE's
 * durability: its tests check that the trace stays within its limit and
 * that every line not written is counted. Every error is reported.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *path;
static long n;

static void *writer(void *arg)
{
	int fd = open(path, O_WRONLY | O_APPEND);

	if (fd < 0) {
		fprintf(stderr, "scribbler: open '%s': %s\n", path, strerror(errno));
		exit(1);
	}
	for (long i = 0; i < n; i++) {
		if (write(fd, "x", 1) != 1) {
			fprintf(stderr, "scribbler: write '%s': %s\n", path,
				strerror(errno));
			exit(1);
		}
	}
	if (close(fd) < 0) {
		fprintf(stderr, "scribbler: close '%s': %s\n", path, strerror(errno));
		exit(1);
	}
	return arg;
}

int main(int argc, char **argv)
{
	pthread_t t;
	int fd, status, err;
	pid_t child;

	if (argc != 3) {
		fprintf(stderr, "usage: scribbler FILE N\n");
		return 2;
	}
	path = argv[1];
	n = atol(argv[2]);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || close(fd) < 0) {
		fprintf(stderr, "scribbler: create '%s': %s\n", path, strerror(errno));
		return 1;
	}
	child = fork();
	if (child < 0) {
		fprintf(stderr, "scribbler: fork: %s\n", strerror(errno));
		return 1;
	}
	err = pthread_create(&t, NULL, writer, NULL);
	if (err) {
		fprintf(stderr, "scribbler: pthread_create: %s\n", strerror(err));
		return 1;
	}
	writer(NULL);
	pthread_join(t, NULL);
	if (child == 0)
		return 0;
	if (waitpid(child, &status, 0) < 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		fprintf(stderr, "scribbler: its child failed\n");
		return 1;
	}
	return 0;
}
