/*
 * The command line shared by replace and overwrite:
 *
 *	PROG --strategy=stdio|direct|sync|mmap TARGET NEWFILE
 *
 * Exit status: 0 done; 1 the update (or reading NEWFILE) failed, with one
 * line on stderr; 2 usage error, one line; 77 the strategy is not
 * supported on this filesystem.
 */
#ifndef WORKLOADS_CLI_H
#define WORKLOADS_CLI_H

#include "update.h"

#define EXIT_USAGE	2
#define EXIT_SKIP	77

int cli_main(int argc, char **argv, const char *prog, update_fn *update);

#endif
