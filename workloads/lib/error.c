#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "error.h"

const char *error_prog = "crashcheck";

/*
 * Format the whole line first and hand it to stdio in one call: stderr is
 * unbuffered, so piecewise fprintf()s would become several write(2)s and
 * could interleave with another process writing to the same pipe.
 */
static void report(const char *fmt, va_list ap, const char *reason)
{
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (reason)
		fprintf(stderr, "%s: %s: %s\n", error_prog, msg, reason);
	else
		fprintf(stderr, "%s: %s\n", error_prog, msg);
}

int error_errno(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	report(fmt, ap, strerror(saved));
	va_end(ap);
	errno = saved;
	return IO_FAILED;
}

int error(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	report(fmt, ap, NULL);
	va_end(ap);
	errno = saved;
	return IO_FAILED;
}

int error_unsupported(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	report(fmt, ap, NULL);
	va_end(ap);
	errno = saved;
	return IO_UNSUPPORTED;
}
