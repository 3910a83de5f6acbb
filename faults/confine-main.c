/*
 * Method: bin/confine, the helper a run is exec'd through when it is
 * confined (harness/engine/runner.py): `confine FILE ARGV0 [ARG...]` makes
 * the view CRASHCHECK_VIEW describes (confine.c), takes that variable out
 * of the environment and execs FILE with the rest as its argv. Static, so
 * that the preloads in the environment, which are the program's, never
 * load into it. A view that cannot be made ends it with status 127 and
 * one line on stderr, before the program ran.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "confine.h"

extern char **environ;

int main(int argc, char **argv)
{
	static struct cf_op ops[CF_MAX_OPS];
	const struct cf_op *failed = NULL;
	char *view;
	long rc;
	int n;

	if (argc < 3) {
		fprintf(stderr, "usage: confine FILE ARGV0 [ARG...]\n");
		return 2;
	}
	view = getenv(CF_VAR);
	if (!view) {
		fprintf(stderr, "confine: %s is not set\n", CF_VAR);
		return 2;
	}
	view = strdup(view);
	if (!view) {
		fprintf(stderr, "confine: out of memory\n");
		return 127;
	}
	unsetenv(CF_VAR);
	n = cf_parse(view, ops, CF_MAX_OPS);
	if (n < 0) {
		fprintf(stderr, "confine: %s is not a view\n", CF_VAR);
		return 2;
	}
	rc = cf_apply(ops, n, &failed);
	if (rc < 0) {
		char msg[512];

		fprintf(stderr, "crashcheck: %s\n",
			cf_message(msg, sizeof(msg), failed, (int)-rc));
		return 127;
	}
	execve(argv[1], argv + 2, environ);
	fprintf(stderr, "crashcheck: cannot run %s: %s\n", argv[2], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
