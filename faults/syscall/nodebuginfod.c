/*
 * libdwfl's debuginfod client, for the static supervisor: there is none.
 *
 * libdw's own (debuginfod-client.o in libdw.a) dlopen()s
 * libdebuginfod.so the first time a Dwfl is made, and a static program
 * that references dlopen gets glibc's warning at link time that it
 * would need glibc's shared libraries at run time. The supervisor looks
 * for no separate debug information (unwind.c: its find_debuginfo
 * finds nothing), so it needs no client. These four functions are what
 * the rest of libdw calls of that object, each answering as libdw's own
 * does when no client could be loaded (no descriptor, no client);
 * defined here, the linker never takes libdw's. Linked only into the
 * static build (faults/Makefile): the dynamic one, which the
 * sanitizers need, uses libdw.so as it is. The signatures are
 * elfutils' (libdwfl/libdwflP.h, libdwfl/libdwfl.h), the client an
 * opaque pointer.
 */
#include <stddef.h>

#include <elfutils/libdwfl.h>

int __libdwfl_debuginfod_find_executable(Dwfl *dwfl,
					 const unsigned char *build_id,
					 size_t build_id_len);
int __libdwfl_debuginfod_find_debuginfo(Dwfl *dwfl,
					const unsigned char *build_id,
					size_t build_id_len);
void __libdwfl_debuginfod_end(void *client);

int __libdwfl_debuginfod_find_executable(Dwfl *dwfl,
					 const unsigned char *build_id,
					 size_t build_id_len)
{
	(void)dwfl; (void)build_id; (void)build_id_len;
	return -1;
}

int __libdwfl_debuginfod_find_debuginfo(Dwfl *dwfl,
					const unsigned char *build_id,
					size_t build_id_len)
{
	(void)dwfl; (void)build_id; (void)build_id_len;
	return -1;
}

void __libdwfl_debuginfod_end(void *client)
{
	(void)client;
}

debuginfod_client *dwfl_get_debuginfod_client(Dwfl *dwfl)
{
	(void)dwfl;
	return NULL;
}
