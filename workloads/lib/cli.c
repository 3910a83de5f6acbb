#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "error.h"
#include "io.h"

#define USAGE "--strategy=stdio|direct|sync|mmap TARGET NEWFILE"

/* One line: the problem, then the usage in brackets. Returns EXIT_USAGE. */
static int __attribute__((format(printf, 2, 3)))
usage_error(const char *prog, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: %s (usage: %s " USAGE ")\n", prog, msg, prog);
	return EXIT_USAGE;
}

int cli_main(int argc, char **argv, const char *prog, update_fn *update)
{
	const char *strategy = NULL, *target = NULL, *newfile = NULL;
	char *data = NULL;
	size_t size = 0;
	int s, i, npos = 0, options = 1, ret;

	error_prog = prog;
	for (i = 1; i < argc; i++) {
		const char *arg = argv[i];

		if (options && !strcmp(arg, "--")) {
			options = 0;
		} else if (options && (!strcmp(arg, "-h") || !strcmp(arg, "--help"))) {
			printf("usage: %s " USAGE "\n", prog);
			return EXIT_SUCCESS;
		} else if (options && !strncmp(arg, "--strategy=", 11)) {
			strategy = arg + 11;
		} else if (options && !strcmp(arg, "--strategy")) {
			if (++i == argc)
				return usage_error(prog, "--strategy needs a value");
			strategy = argv[i];
		} else if (options && arg[0] == '-' && arg[1]) {
			return usage_error(prog, "unknown option '%s'", arg);
		} else if (npos == 0) {
			target = arg;
			npos++;
		} else if (npos == 1) {
			newfile = arg;
			npos++;
		} else {
			return usage_error(prog, "unexpected argument '%s'", arg);
		}
	}
	if (!strategy)
		return usage_error(prog, "missing --strategy");
	s = put_strategy_parse(strategy);
	if (s < 0) {
		fprintf(stderr, "%s: unknown strategy '%s' (expected %s)\n",
			prog, strategy, put_strategy_list);
		return EXIT_USAGE;
	}
	if (!target)
		return usage_error(prog, "missing TARGET and NEWFILE");
	if (!newfile)
		return usage_error(prog, "missing NEWFILE");
	if (!*target || !*newfile)
		return usage_error(prog, "%s is an empty string",
				   *target ? "NEWFILE" : "TARGET");

	/*
	 * An unreadable NEWFILE is an operation failure (exit 1, naming the
	 * call and strerror), not a usage error: the command line was well
	 * formed. It is read before anything in TARGET's directory is
	 * touched, so the failure changes nothing.
	 */
	if (io_read_file(newfile, &data, &size) < 0)
		return EXIT_FAILURE;

	ret = update(target, data, size, (enum put_strategy)s);
	free(data);
	if (ret == IO_UNSUPPORTED)
		return EXIT_SKIP;
	return ret ? EXIT_FAILURE : EXIT_SUCCESS;
}
