/*
 * racer: two threads write the blocks of one temp file in an order that
 * random numbers choose afresh on every run.
 *
 * Method: usage `racer TARGET`. Sixteen 100-byte blocks, block b filled
 * with the letter 'a' + b, are written with pwrite at b * 100 into
 * TARGET.tmp by two threads (even blocks by one, odd by the other), in an
 * order shuffled with getrandom(2) (a write interrupted is made again, a
 * short one finished); then the main thread fsyncs and closes
 * the file and renames it over TARGET (no fsync of the directory). Every
 * run leaves the same 1600 bytes; its calls come in another order each
 * time, which is what crashcheck must notice rather than aim a case at a
 * call that another run makes elsewhere.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#define BLOCKS 16
#define BLOCK 100

static int fd;
static int order[BLOCKS];	/* the blocks in the order they are written */
static int turn;		/* index into order of the next block */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void *writer(void *arg)
{
	long me = (long)arg;
	char buf[BLOCK];

	pthread_mutex_lock(&mu);
	for (;;) {
		while (turn < BLOCKS && order[turn] % 2 != me)
			pthread_cond_wait(&cv, &mu);
		if (turn >= BLOCKS)
			break;
		memset(buf, 'a' + order[turn], sizeof(buf));
		for (size_t done = 0; done < sizeof(buf);) {
			ssize_t n = pwrite(fd, buf + done, sizeof(buf) - done,
					   (off_t)order[turn] * BLOCK + done);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				perror("racer: pwrite");
				exit(1);
			}
			done += n;
		}
		turn++;
		pthread_cond_broadcast(&cv);
	}
	pthread_mutex_unlock(&mu);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[2];
	unsigned char r[BLOCKS];
	char tmp[4096];

	if (argc != 2) {
		fprintf(stderr, "usage: racer TARGET\n");
		return 2;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[1]);
	for (int i = 0; i < BLOCKS; i++)
		order[i] = i;
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
		perror("racer: getrandom");
		return 1;
	}
	for (int i = BLOCKS - 1; i > 0; i--) {
		int j = r[i] % (i + 1), x = order[i];

		order[i] = order[j];
		order[j] = x;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		perror("racer: open");
		return 1;
	}
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, writer, (void *)i);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	if (fsync(fd) < 0) {
		perror("racer: fsync");
		return 1;
	}
	if (close(fd) < 0) {
		perror("racer: close");
		return 1;
	}
	if (rename(tmp, argv[1]) < 0) {
		perror("racer: rename");
		return 1;
	}
	return 0;
}
