"""Programs built with AddressSanitizer under the fault library.

ASan's shared runtime insists on being the first object in the process's
search order (it aborts with "ASan runtime does not come first in initial
library list" otherwise), because its interceptors of malloc, write,
fsync... must be found before anyone else's. The fault library must also
come before libfiu's preload and libc. Both hold when the runtime is
preloaded ahead of us:

    LD_PRELOAD="libasan.so.8 libcrashcheck.so fiu_posix_preload.so"

The program's fsync() then lands in ASan's interceptor, whose REAL(fsync),
found with dlsym(RTLD_NEXT) from libasan, is our wrapper; ours calls down
into libfiu's and libfiu's into libc. So faults still reach the program,
through one more layer (tests/test_hardening.py checks that they fire).

Which programs need it is read from the ELF file itself: a DT_NEEDED entry
naming libasan (gcc's -fsanitize=address links the runtime dynamically).
clang's default is a static runtime inside the executable, which comes
first by construction and needs nothing. A program that is a script, or
that only execs an ASan program, is not inspected: that child aborts with
ASan's own message, which is at least loud.

A sanitizer's report must not read as a program that failed and said why
(exit 1 is what both the workloads and ASan use by default), so the run's
ASAN_OPTIONS and UBSAN_OPTIONS start with abort_on_error=1: a memory error
becomes death by SIGABRT, judged `crashed`. And handle_sigbus=0: a store
into a mapping on a full disk is the program's SIGBUS, not a memory error,
and must end the program by that signal as it would unsanitized. Options
the caller set come after ours and win.
"""

import os
import shutil
import struct

PT_LOAD, PT_DYNAMIC = 1, 2
DT_NULL, DT_NEEDED, DT_STRTAB, DT_STRSZ = 0, 1, 5, 10

# What a sanitized run's *_OPTIONS start with (see above).
SANITIZER_OPTIONS = "abort_on_error=1:handle_sigbus=0"

_cache = {}     # (path, st_mtime_ns, st_size) -> tuple of DT_NEEDED names


def needed(path):
    """The DT_NEEDED names of an ELF executable or library, in order; ()
    for anything that is not a dynamically linked ELF file (a script, a
    static binary, a file that cannot be read)."""
    try:
        st = os.stat(path)
    except OSError:
        return ()
    key = (os.fspath(path), st.st_mtime_ns, st.st_size)
    if key not in _cache:
        try:
            with open(path, "rb") as fh:
                _cache[key] = _parse_needed(fh)
        except (OSError, ValueError, struct.error):
            _cache[key] = ()
    return _cache[key]


def program_headers(fh):
    """(byte order, 64-bit?, [(p_type, p_offset, p_vaddr, p_filesz)]) of
    the ELF file open at FH, or None for anything that is not one."""
    ident = fh.read(16)
    if len(ident) < 16 or ident[:4] != b"\x7fELF":
        return None
    wide = {1: False, 2: True}.get(ident[4])
    order = {1: "<", 2: ">"}.get(ident[5])
    if wide is None or order is None:
        return None
    if wide:
        hdr = struct.unpack(order + "HHIQQQIHHHHHH", fh.read(48))
        phoff, phentsize, phnum = hdr[4], hdr[8], hdr[9]
        ph_fmt = order + "IIQQQQQQ"
    else:
        hdr = struct.unpack(order + "HHIIIIIHHHHHH", fh.read(36))
        phoff, phentsize, phnum = hdr[4], hdr[8], hdr[9]
        ph_fmt = order + "IIIIIIII"
    if phnum > 4096 or phentsize < struct.calcsize(ph_fmt):
        return None
    headers = []
    for i in range(phnum):
        fh.seek(phoff + i * phentsize)
        ph = struct.unpack(ph_fmt, fh.read(struct.calcsize(ph_fmt)))
        if wide:
            headers.append((ph[0], ph[2], ph[3], ph[5]))
        else:
            headers.append((ph[0], ph[1], ph[2], ph[4]))
    return order, wide, headers


def _parse_needed(fh):
    names, table = _dynamic(fh)
    out = []
    for n in names:
        end = table.find(b"\0", n)
        if n >= len(table) or end < 0:
            raise ValueError("DT_NEEDED outside the string table")
        out.append(table[n:end].decode("utf-8", "replace"))
    return tuple(out)


def dynamic_strings(path):
    """The dynamic string table of the ELF file at PATH (the names of the
    symbols it imports and the libraries it needs, NUL-separated), b""
    for anything else."""
    try:
        with open(path, "rb") as fh:
            return _dynamic(fh)[1]
    except (OSError, ValueError, struct.error):
        return b""


def _dynamic(fh):
    """(DT_NEEDED offsets, the dynamic string table) of the ELF file open
    at FH; ((), b"") when it has none."""
    elf = program_headers(fh)
    if elf is None:
        return (), b""
    order, wide, headers = elf
    dyn_fmt = order + ("qQ" if wide else "iI")
    loads, dynamic = [], None
    for p_type, p_offset, p_vaddr, p_filesz in headers:
        if p_type == PT_LOAD:
            loads.append((p_vaddr, p_offset, p_filesz))
        elif p_type == PT_DYNAMIC:
            dynamic = (p_offset, p_filesz)
    if dynamic is None:
        return (), b""
    size = struct.calcsize(dyn_fmt)
    fh.seek(dynamic[0])
    raw = fh.read(min(dynamic[1], 1 << 20))
    names, strtab, strsz = [], None, None
    for off in range(0, len(raw) - size + 1, size):
        tag, val = struct.unpack_from(dyn_fmt, raw, off)
        if tag == DT_NULL:
            break
        if tag == DT_NEEDED:
            names.append(val)
        elif tag == DT_STRTAB:
            strtab = val
        elif tag == DT_STRSZ:
            strsz = val
    if strtab is None:
        return (), b""
    # DT_STRTAB is an address: find the file offset of the segment that
    # holds it.
    base = next((off + strtab - va for va, off, sz in loads
                 if va <= strtab < va + sz), None)
    if base is None:
        return (), b""
    fh.seek(base)
    return names, fh.read(min(strsz or (1 << 20), 1 << 20))


def program_path(argv0, cwd=None, env=None):
    """The file argv0 names as execvp(3) would find it, or None."""
    if not argv0:
        return None
    if "/" in argv0:
        return os.path.join(cwd or ".", argv0)
    return shutil.which(argv0, path=(env or os.environ).get("PATH"))


def runtimes(argv0, cwd=None, env=None):
    """(asan, ubsan): the DT_NEEDED names of the sanitizer runtimes the
    program links, or None for each it does not."""
    path = program_path(argv0, cwd, env)
    names = needed(path) if path else ()
    asan = next((n for n in names if n.startswith("libasan.so")), None)
    ubsan = next((n for n in names if n.startswith("libubsan.so")), None)
    return asan, ubsan


def apply(env, argv0, cwd=None, preload=(), ptraced=False):
    """Adjust ENV (a dict) and PRELOAD (our preloads, in order) for the
    program argv0 names; returns the preload list to use. The ASan
    runtime is named by its soname, as the program's DT_NEEDED does, so
    the dynamic loader finds the very file the program would load.
    ptraced: the program runs under the system-call supervisor, nothing
    preloaded, where LeakSanitizer cannot work (it stops the program's
    threads with ptrace, and they are traced already): leaks go
    unchecked."""
    asan, ubsan = runtimes(argv0, cwd, env)
    preload = list(preload)
    if asan:
        if preload:
            preload.insert(0, asan)
        env["ASAN_OPTIONS"] = _options(env.get("ASAN_OPTIONS"),
                                       ":detect_leaks=0" if ptraced else "")
    if asan or ubsan:
        env["UBSAN_OPTIONS"] = _options(env.get("UBSAN_OPTIONS"))
    return preload


def _options(theirs, ours=""):
    return SANITIZER_OPTIONS + ours + (":" + theirs if theirs else "")
