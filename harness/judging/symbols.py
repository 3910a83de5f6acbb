"""Source locations of findings: a call's `at` field, symbolized.

The fault library records where in the program each call was made, as
`"at":"<object path>+0x<hex offset>"` (docs/design.md, "Trace"): the
return address of the call into the program's code, as an offset from
the object's load base (dl_iterate_phdr's dlpi_addr): for a PIE or a
shared library the address in its ELF file, for a fixed-address
executable the address itself, which is what eu-addr2line -e OBJECT
takes. Only the findings' deciding calls are symbolized, here, with
elfutils' eu-addr2line (Debian: elfutils): one process per object and
batch of addresses, every answer kept for the life of the process.

    location("/work/x/save+0x11c3")
    -> {"object": "/work/x/save", "offset": "0x11c3", "file": "save.c",
        "line": 11, "function": "save_config",
        "text": "save.c:11 (save_config)"}

An object without debug information gives its function when its symbol
table names one, else only object and offset: text "save+0x11c3". An
object that is gone or not ELF gives the same, never an error: a report
must not fail because a binary was rebuilt. The file is the path DWARF
names, relative to the current directory when it lies under it.

The system-call backend records where the system call was made (`at`,
inside libc's or Go's wrapper) and the return addresses of its callers
(`up`, innermost first). site() picks the frame that is the program's:
the first with a source line that is neither in the C library's objects
(libc.so.6, the loader, musl's) nor in Go's standard library; else the
first outside the C library (a program without debug information), else
the innermost. A static program's libc has no debug information: its
frames have no line. elfutils 0.188 reads no line of Go's DWARF (version 2 line
tables, no .debug_aranges): an address eu-addr2line gives no line for is
asked of binutils' addr2line, whose inline chain (-i) names the
program's line inside a standard function inlined into it.
"""

import os
import re
import shutil
import subprocess

ADDR2LINE = "eu-addr2line"
# binutils': it reads Go's line tables, which eu-addr2line 0.188 does not
BINUTILS_ADDR2LINE = "addr2line"
# an object path, then +0x and the offset
_AT = re.compile(r"(?P<object>/.+)\+0x(?P<offset>[0-9a-fA-F]+)\Z")
# eu-addr2line's "file:line:column", or "file:line" without a column
_LINE_COL = re.compile(r"(?P<file>.+):(?P<line>\d+):\d+\Z")
_LINE = re.compile(r"(?P<file>.+):(?P<line>\d+)\Z")
# eu-addr2line is given this many addresses at a time
BATCH = 256


def parse_at(at):
    """(object, offset) of an `at` field; ValueError when it is not one."""
    m = _AT.match(at) if isinstance(at, str) else None
    if not m:
        raise ValueError(f"not an object+offset address: {at!r}")
    return m.group("object"), int(m.group("offset"), 16)


def frames(rec):
    """The code addresses of a call record, innermost first: its `at`,
    then its `up` (an item "+0x..." is in the object of the one before)."""
    at = rec.get("at")
    if not isinstance(at, str):
        return []
    out = [at]
    up = rec.get("up")
    for item in up if isinstance(up, list) else ():
        if not isinstance(item, str):
            break
        if item.startswith("+0x"):
            try:
                obj, _ = parse_at(out[-1])
            except ValueError:
                break
            item = obj + item
        out.append(item)
    return out


def _plain(obj, offset, function=None):
    """A location with no source line."""
    text = f"{os.path.basename(obj)}+0x{offset:x}"
    if function:
        text += f" ({function})"
    return {"object": obj, "offset": f"0x{offset:x}", "file": None,
            "line": None, "function": function, "text": text}


def _relative(path):
    """PATH relative to the current directory when it lies under it."""
    try:
        cwd = os.getcwd()
    except OSError:
        return path
    if path.startswith(cwd + os.sep):
        return path[len(cwd) + 1:]
    return path


def _addr2line(obj, addresses):
    """[(function or None, file or None, line or None)] per address, from
    eu-addr2line; None when it could not be run."""
    tool = shutil.which(ADDR2LINE)
    if tool is None:
        return None
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEBUGINFOD")}
    out = []
    for i in range(0, len(addresses), BATCH):
        chunk = addresses[i:i + BATCH]
        try:
            proc = subprocess.run(
                [tool, "-e", obj, "-f", "-C", *(f"0x{a:x}" for a in chunk)],
                capture_output=True, text=True, errors="replace", env=env,
                timeout=60, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            return None
        lines = proc.stdout.splitlines()
        if proc.returncode != 0 or len(lines) != 2 * len(chunk):
            return None
        for k in range(len(chunk)):
            function, where = lines[2 * k].strip(), lines[2 * k + 1].strip()
            # a demangled C++ name without its parameter list:
            # rocksdb::PosixWritableFile::Close
            if "(" in function and not function.startswith("operator"):
                function = function[:function.index("(")]
            m = _LINE_COL.match(where) or _LINE.match(where)
            file = line = None
            if m and m.group("file") != "??" and int(m.group("line")) > 0:
                file, line = m.group("file"), int(m.group("line"))
            if function and " inlined at " in function:
                # "write_all inlined at save.c:107:6 in main": the line
                # is write_all's
                function = function.split(" inlined at ")[0]
            out.append((None if function in ("", "??") else function, file, line))
    return out


def _chains(obj, addresses):
    """[[(function, file, line)], innermost inlined first] per address,
    from binutils' addr2line -i; None when it could not be run."""
    tool = shutil.which(BINUTILS_ADDR2LINE)
    if tool is None:
        return None
    out = []
    for i in range(0, len(addresses), BATCH):
        chunk = addresses[i:i + BATCH]
        try:
            proc = subprocess.run(
                [tool, "-a", "-i", "-f", "-e", obj,
                 *(f"0x{a:x}" for a in chunk)],
                capture_output=True, text=True, errors="replace",
                timeout=60, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if proc.returncode != 0:
            return None
        # each address's block: the address as -a prints it, then
        # function and file:line pairs
        lines = proc.stdout.splitlines()
        k, chains = 0, []
        for a in chunk:
            if k >= len(lines) or not _same_address(lines[k], a):
                return None
            k += 1
            chain = []
            while k + 1 < len(lines) and not _same_address(lines[k], None):
                function, where = lines[k].strip(), lines[k + 1].strip()
                k += 2
                where = _DISCRIMINATOR.sub("", where)
                m = _LINE.match(where)
                file = line = None
                if m and m.group("file") != "??" and int(m.group("line")) > 0:
                    file, line = m.group("file"), int(m.group("line"))
                chain.append((None if function in ("", "??") else function,
                              file, line))
            chains.append(chain)
        out.extend(chains)
    return out


_ADDRESS = re.compile(r"0x[0-9a-f]+\Z")
_DISCRIMINATOR = re.compile(r" \(discriminator \d+\)\Z")


def _same_address(text, address):
    """Whether TEXT is addr2line -a's line for ADDRESS (for None: any)."""
    if not _ADDRESS.match(text):
        return False
    return address is None or int(text, 16) == address


_CACHE = {}     # at -> location
_CHAIN = {}     # at -> binutils' inline chain, where eu-addr2line had no line


def locate(ats):
    """{at: location} for every well-formed `at` of ATS (others left
    out), one eu-addr2line per object for those not seen before."""
    todo = {}
    for at in ats:
        if at in _CACHE or at in todo:
            continue
        try:
            todo[at] = parse_at(at)
        except ValueError:
            continue
    by_object = {}
    for at, (obj, offset) in todo.items():
        by_object.setdefault(obj, []).append((at, offset))
    for obj, items in by_object.items():
        # the return address is just past the call: its line is the
        # call's when asked one byte earlier (as backtraces do)
        answers = _addr2line(obj, [max(off, 1) - 1 for _, off in items])
        lineless = [k for k in range(len(items))
                    if answers is None or answers[k][1] is None]
        chains = _chains(obj, [max(items[k][1], 1) - 1 for k in lineless]) \
            if lineless else None
        for k, chain in zip(lineless, chains or ()):
            if any(file for _, file, _ in chain):
                _CHAIN[items[k][0]] = chain
        for k, (at, offset) in enumerate(items):
            function = file = line = None
            if answers is not None:
                function, file, line = answers[k]
            chain = _CHAIN.get(at)
            if file is None and chain:
                function = function or chain[0][0]
                _, file, line = chain[0]
            if file is None:
                _CACHE[at] = _plain(obj, offset, function)
                continue
            name = os.path.basename(file)
            text = f"{name}:{line}" + (f" ({function})" if function else "")
            _CACHE[at] = {"object": obj, "offset": f"0x{offset:x}",
                          "file": _relative(file), "line": line,
                          "function": function, "text": text}
    return {at: _CACHE[at] for at in ats if at in _CACHE}


def location(at):
    """The location of one `at` field; None when it is not one."""
    return locate([at]).get(at) if at else None


# the C library's objects: their lines (with Debian's libc6-dbg) are the
# system call wrappers', or stdio's, never the program's
_SYSTEM_C = re.compile(r"(?:libc|libpthread|librt|libdl|ld-linux[-\w]*|"
                       r"ld-musl[-\w]*|libc\.musl[-\w]*)\.so(?:\.[\d.]+)?\Z")
# a Go function of the runtime, whose file names the Go root's src/
_GO_RUNTIME = re.compile(r"(?:internal/)?runtime[./]")


def _go_src(locs):
    """The src/ directory of the Go toolchain that built the program,
    from a frame in its runtime (every system call of Go passes through
    one), else None."""
    for loc in locs:
        if loc and loc["file"] and loc["function"] and \
                _GO_RUNTIME.match(loc["function"]):
            path = loc["file"]
            for part in ("/src/internal/runtime/", "/src/runtime/"):
                if part in path:
                    return path[:path.index(part) + len("/src/")]
    return None


def site(rec):
    """The location of the call record REC that is the program's: of
    its frames (frames()), the first with a source line outside the C
    library's objects and Go's standard library (in a Go standard
    function inlined into the program, the program's line of the inline
    chain); else the first frame outside the C library (a program
    without debug information: its object and offset), else the
    innermost; None when it has no `at`. Its object and offset are the
    chosen frame's."""
    ats = frames(rec)
    if not ats:
        return None
    got = locate(ats)
    locs = [got.get(at) for at in ats]
    go_src = _go_src(locs)

    def ours(file, obj=None):
        if not file or (obj and _SYSTEM_C.match(os.path.basename(obj))):
            return False
        if go_src:
            path = file if os.path.isabs(file) else os.path.abspath(file)
            return not path.startswith(go_src)
        return True
    for at, loc in zip(ats, locs):
        if loc is None:
            continue
        chain = _CHAIN.get(at)
        if go_src and chain:
            # the first entry of the chain in the program: the line
            # inside it that called the standard function inlined there
            for function, file, line in chain:
                if ours(file):
                    return dict(loc, file=_relative(file), line=line,
                                function=function,
                                text=_text(file, line, function))
            continue
        if ours(loc["file"], loc["object"]):
            return loc
    # no line of the program's: its first frame outside the C library
    # (a program without debug information), else the innermost
    for loc in locs:
        if loc is not None and not _SYSTEM_C.match(os.path.basename(loc["object"])):
            return loc
    return locs[0]


def _text(file, line, function):
    return f"{os.path.basename(file)}:{line}" + (f" ({function})" if function else "")
