/*
 * halves: replace TARGET with the content of NEW, the way a program with
 * worker threads writes one file: two threads each pwrite one half of a
 * temporary file, a kilobyte at a time, starting together (a barrier),
 * so which thread writes first changes from run to run; then the main
 * thread fsyncs it, renames it over TARGET and fsyncs the directory.
 *
 * Method: a correct atomic replace, whatever the threads' order: every
 * crash state holds the old content or the new, every error is reported
 * with the call and the file and ends the program with status 1. What it
 * tests is the harness: a call's identity (the nth pwrite of the file)
 * must not be which thread came first.
 *
 *   halves TARGET NEW
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHUNK 1024

static const char *tmp = "halves.tmp";
static int fd = -1;
static char *data;
static size_t size;
static pthread_barrier_t start;

struct half {
	size_t from, to;	/* the bytes [from, to) of data */
	int err;		/* errno of the pwrite that failed, 0 = none */
};

/* one half, a chunk at a time, past EINTR and short writes */
static void *write_half(void *arg)
{
	struct half *h = arg;
	size_t at = h->from;

	pthread_barrier_wait(&start);
	while (at < h->to) {
		size_t n = h->to - at < CHUNK ? h->to - at : CHUNK;
		ssize_t w = pwrite(fd, data + at, n, at);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			h->err = errno;
			break;
		}
		if (w == 0) {
			h->err = ENOSPC;	/* no progress: as a full disk */
			break;
		}
		at += w;
	}
	return NULL;
}

static int fail(const char *call, const char *what)
{
	fprintf(stderr, "halves: %s '%s': %s\n", call, what, strerror(errno));
	return 1;
}

static int read_new(const char *path)
{
	struct stat st;
	size_t got = 0;
	int in = open(path, O_RDONLY);

	if (in < 0)
		return fail("open", path);
	if (fstat(in, &st) < 0)
		return fail("fstat", path);
	size = st.st_size;
	data = malloc(size ? size : 1);
	if (!data) {
		errno = ENOMEM;
		return fail("malloc", path);
	}
	while (got < size) {
		ssize_t n = read(in, data + got, size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return fail("read", path);
		got += n;
	}
	close(in);
	return 0;
}

int main(int argc, char **argv)
{
	struct half h[2];
	pthread_t th[2];
	int dir;

	if (argc != 3) {
		fprintf(stderr, "usage: halves TARGET NEW\n");
		return 2;
	}
	if (read_new(argv[2]))
		return 1;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return fail("open", tmp);
	h[0] = (struct half){ 0, size / 2, 0 };
	h[1] = (struct half){ size / 2, size, 0 };
	pthread_barrier_init(&start, NULL, 2);
	for (int i = 0; i < 2; i++) {
		errno = pthread_create(&th[i], NULL, write_half, &h[i]);
		if (errno)
			return fail("pthread_create", tmp);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 2; i++) {
		if (h[i].err) {
			errno = h[i].err;
			return fail("pwrite", tmp);
		}
	}
	/* the data before the name: a crash after the rename must find it */
	if (fsync(fd) < 0)
		return fail("fsync", tmp);
	if (close(fd) < 0)
		return fail("close", tmp);
	if (rename(tmp, argv[1]) < 0)
		return fail("rename", argv[1]);
	/* the rename is durable once the directory is */
	dir = open(".", O_RDONLY | O_DIRECTORY);
	if (dir < 0)
		return fail("open", ".");
	if (fsync(dir) < 0)
		return fail("fsync", ".");
	if (close(dir) < 0)
		return fail("close", ".");
	return 0;
}
