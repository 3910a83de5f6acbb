/*
 * Where the program made a call: the "at" field of a trace line,
 * "<object path>+0x<offset>", the wrapper's return address as the object
 * it lies in and its offset from that object's load base (for a PIE or a
 * shared library the address in its ELF file, for a fixed-address
 * executable the address itself: what eu-addr2line -e OBJECT takes).
 *
 * Cost. dladdr() per call walks the loaded objects and their symbol
 * tables; a program makes most of its calls from a few places in a few
 * objects, so the loadable segment an address was found in is kept
 * (SITE_NR of them, per process) and an address in a kept segment costs
 * a few comparisons. The segments' bounds are kept apart from their
 * paths, all in half a kilobyte: a process forked from the fork server
 * starts with cold caches and TLB, and a scan over sixteen entries of a
 * page each (bounds and path together) cost more than the rest of the
 * call. A miss asks dl_iterate_phdr(), which reads the loader's list in
 * memory: no system call, but the main program's path, which the loader
 * does not name, is /proc/self/exe's, read once.
 *
 * A dlclose() may unmap an object and a later dlopen() put another one
 * at the same addresses: preload.c's dlclose wrapper calls
 * cc_callsite_forget(), which empties the segments kept.
 */
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cc.h"

#define SITE_NR 16

static int site_busy;		/* try-lock of the table; taken: look up uncached */
static unsigned site_next;	/* the slot a miss fills next, round robin */
static uint64_t site_gen;	/* bumped by cc_callsite_forget */
static struct site_ent {
	uint64_t gen;		/* site_gen when filled; another = empty */
	uintptr_t lo, hi;	/* the loadable segment: [lo, hi) */
	uintptr_t base;		/* the object's load base (dlpi_addr) */
} site[SITE_NR];
static char site_path[SITE_NR][CC_PATH_MAX];	/* each object's absolute path */

static bool site_lock(void)
{
	return !__atomic_exchange_n(&site_busy, 1, __ATOMIC_ACQUIRE);
}

static void site_unlock(void)
{
	__atomic_store_n(&site_busy, 0, __ATOMIC_RELEASE);
}

void cc_callsite_forget(void)
{
	__atomic_add_fetch(&site_gen, 1, __ATOMIC_RELEASE);
}

void cc_callsite_after_fork(void)
{
	site_busy = 0;
}

struct lookup {
	uintptr_t addr;		/* in */
	bool found;		/* out: the rest is set */
	uintptr_t lo, hi, base;
	char path[CC_PATH_MAX];
};

static int find_object(struct dl_phdr_info *info, size_t size, void *data)
{
	struct lookup *l = data;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD || l->addr < lo || l->addr >= lo + ph->p_memsz)
			continue;
		l->found = true;
		l->lo = lo;
		l->hi = lo + ph->p_memsz;
		l->base = info->dlpi_addr;
		if (!info->dlpi_name || !info->dlpi_name[0]) {
			/* the main program: the loader does not name it */
			long n = syscall(SYS_readlinkat, AT_FDCWD, "/proc/self/exe",
					 l->path, sizeof(l->path) - 1);
			l->path[n > 0 ? n : 0] = '\0';
		} else {
			/* dlopen("./x.so") keeps the name as given */
			cc_abs_path(AT_FDCWD, info->dlpi_name, l->path, sizeof(l->path));
		}
		if (!l->path[0])
			l->found = false;
		return 1;
	}
	return 0;
}

static int site_format(char *buf, size_t size, const char *path, uintptr_t off)
{
	int n = snprintf(buf, size, "%s+0x%lx", path, (unsigned long)off);

	return n > 0 && (size_t)n < size;
}

bool cc_callsite(const void *at, char *buf, size_t size)
{
	uintptr_t a = (uintptr_t)at;
	uint64_t gen = __atomic_load_n(&site_gen, __ATOMIC_ACQUIRE);
	struct lookup l;
	bool locked;

	if (!at)
		return false;
	locked = site_lock();
	if (locked) {
		for (int i = 0; i < SITE_NR; i++) {
			struct site_ent *e = &site[i];

			if (e->gen == gen + 1 && a >= e->lo && a < e->hi) {
				bool ok = site_format(buf, size, site_path[i],
						      a - e->base);

				site_unlock();
				return ok;
			}
		}
	}
	l.addr = a;
	l.found = false;
	dl_iterate_phdr(find_object, &l);
	if (locked) {
		if (l.found) {
			unsigned i = site_next++ % SITE_NR;
			struct site_ent *e = &site[i];

			/* gen + 1: a slot never filled (gen 0) is empty */
			e->gen = gen + 1;
			e->lo = l.lo;
			e->hi = l.hi;
			e->base = l.base;
			memcpy(site_path[i], l.path, sizeof(site_path[i]));
		}
		site_unlock();
	}
	return l.found && site_format(buf, size, l.path, a - l.base);
}
