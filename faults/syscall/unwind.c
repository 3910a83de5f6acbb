/*
 * Where the program made a trapped system call: the return addresses on
 * the stopped thread's stack, found with elfutils' libdwfl from the CFI
 * of the objects mapped in the process (.eh_frame, or .debug_frame: a Go
 * binary has only the latter), as the trace's "at" and "up" fields
 * (docs/design.md): "at" the instruction after the system call, "up" the
 * return addresses of up to SV_FRAMES - 1 callers, innermost first.
 *
 * A system call is made by a wrapper (libc's write, Go's Syscall6), often
 * a few frames below the program's own code (stdio's fwrite, Go's
 * os.(*File).Write): the supervisor cannot tell which frame is the
 * program's without reading its debug information, so it records
 * several and the harness picks (harness/judging/symbols.py).
 *
 * Go's code is walked by its frame pointers instead (is_go).
 *
 * Cost. Each process has its Dwfl: its modules are reported from
 * /proc/PID/maps once, and libdwfl keeps each module's ELF and CFI
 * between calls. The stack is read a page at a time with
 * process_vm_readv (a call reads one or two). The thread's registers
 * come from PTRACE_GETREGS: it is stopped at its seccomp stop. An
 * address that lies in no reported module (a dlopen() since the modules
 * were reported) has the modules reported again, once per call and only
 * when /proc/PID/maps changed. An object unmapped and another mapped at
 * the same addresses between two calls is not noticed (its addresses
 * would be named in the first object).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <unistd.h>

#include <elfutils/libdwfl.h>
#include <gelf.h>

#include "sv.h"

#define PAGE 4096
#define PAGES 4		/* stack pages kept during one unwinding */

struct sv_unwind {
	Dwfl *dwfl;
	pid_t tgid;
	pid_t tid;		/* the thread being unwound */
	uint64_t maps_hash;	/* of /proc/PID/maps when the modules were reported */
	struct user_regs_struct regs;	/* the thread's, at its stop */
	struct page {
		bool ok;
		uint64_t addr;	/* page-aligned */
		unsigned char b[PAGE];
	} page[PAGES];
	unsigned next_page;
};

/* no separate debug information is looked for: the unwinder needs only
 * the CFI, which an object holds itself */
static int no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
			Dwarf_Addr base, const char *file_name,
			const char *debuglink_file, GElf_Word debuglink_crc,
			char **debuginfo_file_name)
{
	(void)mod; (void)userdata; (void)modname; (void)base; (void)file_name;
	(void)debuglink_file; (void)debuglink_crc; (void)debuginfo_file_name;
	return -1;
}

static const Dwfl_Callbacks proc_callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = no_debuginfo,
};

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	(void)dwfl; (void)arg; (void)thread_argp;
	return 0;	/* threads are asked for by their id only */
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	(void)dwfl; (void)tid;
	*thread_argp = arg;
	return true;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct sv_unwind *u = arg;
	uint64_t base = addr & ~(uint64_t)(PAGE - 1);
	struct page *pg = NULL;

	(void)dwfl;
	if (addr - base > PAGE - sizeof(*result))
		return false;	/* straddles two pages: CFI reads aligned words */
	for (int i = 0; i < PAGES; i++)
		if (u->page[i].ok && u->page[i].addr == base)
			pg = &u->page[i];
	if (!pg) {
		struct iovec local, remote;

		pg = &u->page[u->next_page++ % PAGES];
		local.iov_base = pg->b;
		local.iov_len = PAGE;
		remote.iov_base = (void *)(uintptr_t)base;
		remote.iov_len = PAGE;
		pg->ok = process_vm_readv(u->tid, &local, 1, &remote, 1, 0) == PAGE;
		pg->addr = base;
		if (!pg->ok)
			return false;
	}
	memcpy(result, pg->b + (addr - base), sizeof(*result));
	return true;
}

/* x86-64's DWARF register numbers 0-16: rax rdx rcx rbx rsi rdi rbp rsp
 * r8-r15, and the return address column, the pc */
static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
#if defined(__x86_64__)
	struct sv_unwind *u = arg;
	const struct user_regs_struct r = u->regs;
	Dwarf_Word dw[17];

	dw[0] = r.rax; dw[1] = r.rdx; dw[2] = r.rcx; dw[3] = r.rbx;
	dw[4] = r.rsi; dw[5] = r.rdi; dw[6] = r.rbp; dw[7] = r.rsp;
	dw[8] = r.r8; dw[9] = r.r9; dw[10] = r.r10; dw[11] = r.r11;
	dw[12] = r.r12; dw[13] = r.r13; dw[14] = r.r14; dw[15] = r.r15;
	dw[16] = r.rip;
	return dwfl_thread_state_registers(thread, 0, 17, dw);
#else
	(void)thread; (void)arg;
	return false;	/* not written for this architecture: no site */
#endif
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

/* FNV-1a of /proc/PID/maps; 0 when it cannot be read */
static uint64_t maps_hash(pid_t pid)
{
	char path[64], buf[8192];
	uint64_t h = 14695981039346656037ULL;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n; i++)
			h = (h ^ (unsigned char)buf[i]) * 1099511628211ULL;
	close(fd);
	return h;
}

void sv_unwind_forget(struct proc *p)
{
	if (!p->unwind)
		return;
	if (p->unwind->dwfl)
		dwfl_end(p->unwind->dwfl);
	free(p->unwind);
	p->unwind = NULL;
}

/* P's Dwfl with its modules reported from its maps now, or NULL */
static struct sv_unwind *report(struct proc *p)
{
	struct sv_unwind *u;

	sv_unwind_forget(p);
	u = calloc(1, sizeof(*u));
	if (!u)
		cc_die("supervise: out of memory");
	p->unwind = u;
	u->tgid = p->tgid;
	u->maps_hash = maps_hash(p->tgid);
	u->dwfl = dwfl_begin(&proc_callbacks);
	if (!u->dwfl)
		return u;
	if (dwfl_linux_proc_report(u->dwfl, p->tgid) != 0 ||
	    dwfl_report_end(u->dwfl, NULL, NULL) != 0 ||
	    !dwfl_attach_state(u->dwfl, NULL, p->tgid, &thread_callbacks, u)) {
		dwfl_end(u->dwfl);
		u->dwfl = NULL;
	}
	return u;
}

struct walk {
	struct sv_unwind *u;
	uint64_t pc[SV_FRAMES];
	int n;
};

static int frame_cb(Dwfl_Frame *frame, void *arg)
{
	struct walk *w = arg;
	Dwarf_Addr pc;

	if (!dwfl_frame_pc(frame, &pc, NULL) || pc == 0)
		return DWARF_CB_ABORT;
	w->pc[w->n++] = pc;
	return w->n < SV_FRAMES ? DWARF_CB_OK : DWARF_CB_ABORT;
}

/*
 * Whether MOD is Go's (it has Go's build id note), kept in the module's
 * userdata. Go keeps frame pointers on x86-64 in all its code, and its
 * CFI is in .debug_frame alone, compressed with the rest of its DWARF,
 * which libdw inflates whole on the first use: 30 ms of a run's CPU for
 * a small program, where following the frame pointers costs nothing.
 */
static bool is_go(Dwfl_Module *mod)
{
	void **mark;
	Dwarf_Addr bias;
	Elf *elf;
	size_t shstrndx;
	bool go = false;

	dwfl_module_info(mod, &mark, NULL, NULL, NULL, NULL, NULL, NULL);
	if (mark && *mark)
		return *mark == (void *)2;
	elf = dwfl_module_getelf(mod, &bias);
	if (elf && elf_getshdrstrndx(elf, &shstrndx) == 0) {
		for (Elf_Scn *scn = NULL; !go && (scn = elf_nextscn(elf, scn));) {
			GElf_Shdr shdr;
			const char *name;

			if (!gelf_getshdr(scn, &shdr))
				continue;
			name = elf_strptr(elf, shstrndx, shdr.sh_name);
			go = name && strcmp(name, ".note.go.buildid") == 0;
		}
	}
	if (mark)
		*mark = go ? (void *)2 : (void *)1;
	return go;
}

/* the frame pointer chain from the thread's registers: the pc, then the
 * return address above each saved frame pointer (a leaf that made no
 * frame of its own, as Go's Syscall6, hides its caller: a frame of the
 * runtime) */
static void walk_frame_pointers(struct sv_unwind *u, struct walk *w)
{
#if defined(__x86_64__)
	uint64_t fp = u->regs.rbp;

	w->pc[w->n++] = u->regs.rip;
	while (w->n < SV_FRAMES && fp) {
		Dwarf_Word ra, next;

		if (!memory_read(u->dwfl, fp + 8, &ra, u) || ra == 0 ||
		    !memory_read(u->dwfl, fp, &next, u))
			break;
		w->pc[w->n++] = ra;
		/* the stack grows down: a caller's frame lies above */
		if (next <= fp)
			break;
		fp = next;
	}
#else
	(void)u; (void)w;
#endif
}

static void walk(struct sv_unwind *u, pid_t tid, struct walk *w)
{
	Dwfl_Module *mod;

	w->u = u;
	w->n = 0;
	if (!u->dwfl)
		return;
	u->tid = tid;
	for (int i = 0; i < PAGES; i++)
		u->page[i].ok = false;
#if defined(__x86_64__)
	if (ptrace(PTRACE_GETREGS, tid, 0, &u->regs) != 0)
		return;
	mod = dwfl_addrmodule(u->dwfl, u->regs.rip);
	if (mod && is_go(mod)) {
		walk_frame_pointers(u, w);
		return;
	}
#else
	(void)mod;
#endif
	/* the result is whatever frames were found: an error only ends the
	 * walk (the outermost frame often has no CFI) */
	dwfl_getthread_frames(u->dwfl, tid, frame_cb, w);
}

/* the module holding code address PC (a return address: one byte back is
 * the call), or NULL */
static Dwfl_Module *module_of(Dwfl *dwfl, uint64_t pc, bool ret)
{
	return dwfl_addrmodule(dwfl, ret && pc > 0 ? pc - 1 : pc);
}

int sv_unwind(struct proc *p, pid_t tid, struct cc_frame *out, char **paths,
	      int max)
{
	struct sv_unwind *u = p->unwind;
	struct walk w;
	const char *prev = NULL;
	int n = 0;

	if (!u)
		u = report(p);
	walk(u, tid, &w);
	for (int i = 0; i < w.n; i++) {
		if (u->dwfl && module_of(u->dwfl, w.pc[i], i > 0))
			continue;
		/* an address in no module: new mappings since they were read? */
		if (maps_hash(p->tgid) != u->maps_hash) {
			u = report(p);
			walk(u, tid, &w);
		}
		break;
	}
	for (int i = 0; i < w.n && n < max; i++) {
		Dwfl_Module *mod = u->dwfl ? module_of(u->dwfl, w.pc[i], i > 0) : NULL;
		const char *name;
		Dwarf_Addr bias = 0;

		if (!mod)
			break;
		name = dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
		/* [vdso], [stack], an object read from memory: no path to name */
		if (!name || name[0] != '/')
			break;
		if (!dwfl_module_getelf(mod, &bias))
			break;
		out[n].off = w.pc[i] - bias;
		if (prev && strcmp(prev, name) == 0) {
			out[n].obj = NULL;	/* as the frame before */
		} else {
			paths[n] = strdup(name);
			if (!paths[n])
				cc_die("supervise: out of memory");
			out[n].obj = paths[n];
			prev = name;
		}
		n++;
	}
	return n;
}
