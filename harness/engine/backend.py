"""Which backend runs a program: the preload or the system-call supervisor.

Two ways into a program's calls give the same plans and the same trace
(docs/design.md):

preload
    faults/libcrashcheck.so, loaded by the dynamic linker into the
    program (LD_PRELOAD, with libfiu's posix preload below it). It sees
    the C library's functions the program calls, stdio included, and can
    hold a program before main to fork its cases (the fork server). It
    never loads into a statically linked program, and sees nothing of a
    raw system call (Go's runtime, syscall(2), a static helper).

syscall
    faults/bin/supervise: a seccomp filter traps the program's
    file-related system calls and a ptrace supervisor counts, faults and
    records them. It sees every process and thread of any program, static
    or dynamic, and stdio's own writes (as the write calls they are), but
    not the C library's functions (fwrite, fflush are not system calls),
    and it costs two stops per traced call and an exec of the program
    per case (the supervisor itself serves a sweep's cases: ForkServer).

auto picks the preload for a dynamically linked program and the syscall
backend for one the preload cannot enter or see: a static ELF file (no
program interpreter), a Go program (its runtime makes its own system
calls, cgo or not), a setuid or setgid program run by another user (the
loader ignores LD_PRELOAD there), a program linking liburing (what it
submits through the ring is no call; the supervisor at least sees the
ring set up, and says so). The sweep also switches a combo to the syscall
backend when its preload baseline shows file changes the preload did not
see (baseline.missed: zip's temporary file, made by mkstemp inside the C
library), or when the program imports syscall(2) and the supervisor's
baseline shows syncs or name changes the preload's does not
(baseline.blind_to), and says why (run.json's backend_why, the console, the
report).
"""

import os
import stat
import struct

from .. import ROOT
from . import sanitizers

BACKENDS = ("auto", "preload", "syscall")
SUPERVISOR = ROOT / "faults" / "bin" / "supervise"

PT_INTERP, PT_NOTE = 3, 4
NT_GO_BUILDID = 4


def check_supervisor():
    """The SetupError runner raises where the supervisor is not built."""
    from .runner import SetupError
    if not SUPERVISOR.is_file():
        raise SetupError(f"system-call supervisor not built: {SUPERVISOR} "
                         "(run 'make')")


def elf_facts(path):
    """{"static": no program interpreter, "go": a Go build id note} of
    the ELF executable at PATH, or None for anything else (a script, a
    file that cannot be read)."""
    try:
        with open(path, "rb") as fh:
            elf = sanitizers.program_headers(fh)
            if elf is None:
                return None
            order, wide, headers = elf
            interp = any(p[0] == PT_INTERP for p in headers)
            go = any(p[0] == PT_NOTE and _go_note(fh, order, p[1], p[3])
                     for p in headers)
    except (OSError, ValueError, struct.error):
        return None
    return {"static": not interp, "go": go}


def _go_note(fh, order, offset, size):
    """Whether the notes at OFFSET (SIZE bytes) hold Go's build id."""
    fh.seek(offset)
    data = fh.read(min(size, 1 << 16))
    pos = 0
    while pos + 12 <= len(data):
        namesz, descsz, ntype = struct.unpack_from(order + "III", data, pos)
        name = data[pos + 12:pos + 12 + namesz]
        if ntype == NT_GO_BUILDID and name.rstrip(b"\0") == b"Go":
            return True
        pos += 12 + ((namesz + 3) & ~3) + ((descsz + 3) & ~3)
    return False


def choose(argv0, cwd=None, env=None):
    """(backend, reason) for `auto`: "preload", or "syscall" with why
    the preload cannot enter the program."""
    path = sanitizers.program_path(argv0, cwd, env)
    facts = elf_facts(path) if path else None
    name = os.path.basename(argv0)
    if facts is None:
        return "preload", ""
    if facts["go"]:
        return "syscall", f"{name} is a Go program"
    if facts["static"]:
        return "syscall", f"{name} is statically linked"
    try:
        st = os.stat(path)
    except OSError:
        return "preload", ""
    if (st.st_mode & (stat.S_ISUID | stat.S_ISGID)) and os.getuid() != 0:
        return "syscall", f"{name} is setuid or setgid"
    if any(n.startswith("liburing.") for n in sanitizers.needed(path)):
        return "syscall", (f"{name} links liburing: what it submits through "
                           "an io_uring makes no call the preload could see")
    return "preload", ""


def may_bypass(argv0, cwd=None, env=None):
    """Whether the program ARGV0 names may make calls the preload never
    sees: it imports syscall(2) (raw system calls, writes and syncs
    included) or links liburing (baseline.record_baseline then records it
    under the supervisor too, and compares)."""
    path = sanitizers.program_path(argv0, cwd, env)
    if not path:
        return False
    return b"\0syscall\0" in sanitizers.dynamic_strings(path) or any(
        n.startswith("liburing.") for n in sanitizers.needed(path))


def resolve(backend, argv0, cwd=None, env=None):
    """The backend to use for BACKEND (one of BACKENDS), and the reason
    when auto chose the syscall backend ("" otherwise)."""
    if backend == "auto":
        return choose(argv0, cwd, env)
    return backend, ""
