/*
 * replace: atomically replace a file's content.
 *
 *	replace --strategy=stdio|direct|sync|mmap TARGET NEWFILE
 *
 * Method: read NEWFILE into memory, then the five steps of atomic
 * replacement (lib/update.c, replace_file): write "<TARGET>.tmp" in
 * TARGET's directory with the strategy's calls (lib/put.c), make it
 * durable, rename it over TARGET, fsync the directory.
 *
 * Claim (crash-model.md's "atomic" contract): at every instant TARGET
 * holds its complete old content or the complete new content; after exit
 * 0 the new content is durable. On any failure it exits 1 with one line
 * on stderr naming the call, the path and the error, removes its temp
 * file, and leaves TARGET as it was -- except when only the final
 * directory fsync failed, when TARGET already shows the new content.
 * Exit 77 when the strategy cannot work on this filesystem (O_DIRECT
 * refused), 2 for usage errors.
 */
#include "lib/cli.h"

int main(int argc, char **argv)
{
	return cli_main(argc, argv, "replace", replace_file);
}
