/*
 * The rules of stdio's calls: fwrite, fputs, fputc, fprintf, fflush,
 * fclose, fopen. Only the preload sees these: the supervisor sees the
 * system calls stdio makes, and no other program's FILE is ours to read,
 * so these hooks take the stream as it is.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <stdio_ext.h>
#include "rule.h"

/* a hook takes every argument of its call, and most use a few of them */
#pragma GCC diagnostic ignored "-Wunused-parameter"

/*
 * A stream that can write may change its file with libc's internal write
 * (taint_rec); one opened only to read cannot: the sqlite shell's
 * fopen(.., "rb") probe of its database must not cost every later pwrite
 * a snapshot of the whole file.
 */
static void use_stream(struct cc_rec *r, FILE *f)
{
	use_fd(r, f ? fileno(f) : -1, true);
	if (f && __fwritable(f))
		taint_rec(r);
}

/* MODE opens a stream that can write */
static bool writable_mode(const char *mode)
{
	return mode && (mode[0] == 'w' || mode[0] == 'a' || strchr(mode, '+'));
}

void rule_fwrite_describe(struct cc_rec *r, const void *ptr, size_t size, size_t nmemb,
			  FILE *f)
{
	use_stream(r, f);
}

void rule_fwrite_after(struct cc_rec *r, size_t ret, const void *ptr, size_t size,
		       size_t nmemb, FILE *f)
{
	r->has_len = true;
	r->len = (long long)size * nmemb;
	snap_fd(r, r->fd);
}

void rule_fputs_describe(struct cc_rec *r, const char *s, FILE *f)
{
	use_stream(r, f);
}

void rule_fputs_after(struct cc_rec *r, int ret, const char *s, FILE *f)
{
	r->has_len = true;
	r->len = strlen(s);
	snap_fd(r, r->fd);
}

void rule_fputc_describe(struct cc_rec *r, int c, FILE *f)
{
	use_stream(r, f);
}

void rule_fputc_after(struct cc_rec *r, int ret, int c, FILE *f)
{
	r->has_len = true;
	r->len = 1;
	snap_fd(r, r->fd);
}

/* fprintf's wrapper is written by hand (preload.c): it sets the line's
 * length, the text it expanded, before this */
void rule_fprintf_describe(struct cc_rec *r, FILE *f, const char *fmt)
{
	use_stream(r, f);
}

void rule_fprintf_after(struct cc_rec *r, int ret, FILE *f, const char *fmt)
{
	snap_fd(r, r->fd);
}

void rule_fflush_describe(struct cc_rec *r, FILE *f)
{
	use_stream(r, f);
}

void rule_fflush_after(struct cc_rec *r, int ret, FILE *f)
{
	if (!f) {
		/* fflush(NULL) writes out every stream */
		if (cc.recorder)
			r->snap |= SNAP_ALL;
	} else {
		snap_fd(r, r->fd);
	}
}

void rule_fclose_describe(struct cc_rec *r, FILE *f)
{
	use_stream(r, f);
	/* the descriptor is gone after the call: keep a way to the file */
	snap_fd(r, r->fd);
}

void rule_fclose_after(struct cc_rec *r, int ret, FILE *f)
{
	/* libc closed the descriptor with its internal close */
	io->fd_forget(r, r->fd);
}

/* the open(2) flags fopen() uses for MODE */
static int fopen_flags(const char *mode)
{
	int fl = 0;

	if (!mode)
		return 0;
	switch (mode[0]) {
	case 'w': fl = O_CREAT | O_TRUNC; break;
	case 'a': fl = O_CREAT | O_APPEND; break;
	}
	for (const char *m = mode + 1; *m && *m != ','; m++)
		if (*m == 'x')
			fl |= O_EXCL;
	return fl;
}

void rule_fopen_describe(struct cc_rec *r, const char *path, const char *mode)
{
	use_path(r, AT_FDCWD, (cc_ptr)path, r->path, sizeof(r->path));
	r->oflags = fopen_flags(mode);
}

void rule_fopen_after(struct cc_rec *r, FILE *ret, const char *path, const char *mode)
{
	r->ret = ret ? fileno(ret) : -1;
	if (ret) {
		r->fd = fileno(ret);
		io->fd_forget(r, r->fd);
		if (tracing(r))
			stat_fd(r, r->fd);
		if (writable_mode(mode))
			taint_rec(r);
	}
	if (r->oflags & (O_CREAT | O_TRUNC)) {
		cc_snap_parent(r, 1);
		if (ret)
			snap_fd(r, r->fd);
	}
}
