/*
 * overwrite: overwrite an existing file where it stands.
 *
 *	overwrite --strategy=stdio|direct|sync|mmap TARGET NEWFILE
 *
 * Method: read NEWFILE into memory, then (lib/update.c, overwrite_file)
 * open the existing TARGET without O_CREAT or O_TRUNC, write the payload
 * from offset 0 with the strategy's calls (lib/put.c), truncate TARGET to
 * the payload's size, and make content and size durable.
 *
 * Claim (crash-model.md's "in-place" contract): after exit 0 TARGET holds
 * the new content, durably. After a failure or a crash it may hold
 * anything -- a prefix of new over the rest of old, zeros, a wrong size --
 * which is exactly why atomic replacement exists. TARGET must exist; a
 * missing TARGET is exit 1 ("open 'x': No such file or directory"). Exit
 * 77 when the strategy cannot work on this filesystem, 2 for usage errors.
 */
#include "lib/cli.h"

int main(int argc, char **argv)
{
	return cli_main(argc, argv, "overwrite", overwrite_file);
}
