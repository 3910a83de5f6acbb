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
"""

import os
import re
import shutil
import subprocess

ADDR2LINE = "eu-addr2line"
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
            out.append((None if function in ("", "??") else function, file, line))
    return out


_CACHE = {}     # at -> location


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
        for k, (at, offset) in enumerate(items):
            function = file = line = None
            if answers is not None:
                function, file, line = answers[k]
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
