/*
 * The four ways a workload writes a payload into a file and makes it
 * durable. See put.c for what each strategy does and why.
 */
#ifndef WORKLOADS_PUT_H
#define WORKLOADS_PUT_H

#include <stddef.h>

enum put_strategy {
	PUT_STDIO,	/* fopen, fwrite, fflush, fsync(fileno), fclose */
	PUT_DIRECT,	/* O_DIRECT aligned writes, ftruncate, fsync */
	PUT_SYNC,	/* O_DSYNC writes */
	PUT_MMAP,	/* posix_fallocate, mmap, memcpy, msync, munmap, fsync */
};

enum put_mode {
	PUT_CREATE,	/* create path with O_EXCL: it must not exist */
	PUT_INPLACE,	/* path must exist: overwrite it and truncate to size */
};

/* "stdio" -> PUT_STDIO ...; -1 for an unknown name. */
int put_strategy_parse(const char *name);
const char *put_strategy_name(enum put_strategy s);
/* "stdio, direct, sync or mmap", for usage messages. */
extern const char put_strategy_list[];

/*
 * Write size bytes of data into path with strategy s and make them
 * durable (the file's name is the caller's business). Returns 0, or
 * IO_FAILED / IO_UNSUPPORTED after one diagnostic line. *created is set
 * to 1 as soon as a PUT_CREATE call may have created path, so the caller
 * knows it has a file to remove on failure; it is never set for a file
 * that existed before (O_EXCL refuses those).
 */
int put_file(const char *path, enum put_mode mode, const void *data,
	     size_t size, enum put_strategy s, int *created);

#endif
