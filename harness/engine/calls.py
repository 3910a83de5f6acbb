"""The table of intercepted calls, read from faults/calls.def — the same
file the C wrappers and the plan parser are generated from, so the sweep
can never target a call the library does not know."""

import functools
import re

from .. import ROOT

CALLS_DEF = ROOT / "faults" / "calls.def"

# F_* flags of calls.def -> the sweep's fault classes (crash-model.md).
FAULT_FLAGS = {
    "F_EINTR": "eintr",
    "F_SHORT": "short",
    "F_ENOSPC": "enospc",
    "F_EIO": "eio",
    "F_CRASH": "crash",
    "F_ERRNO": "errno",
}

_LINE = re.compile(
    r'^\s*CALL\(\s*(\w+)\s*,\s*"([^"]+)"\s*,\s*([\w|\s]+?)\s*,\s*(\w+)\s*\)')


class Call:
    __slots__ = ("name", "point", "faults", "cls")

    def __init__(self, name, point, faults, cls):
        self.name = name        # as plans name it: "write", "openat"
        self.point = point      # libfiu point: "posix/io/rw/write"
        self.faults = faults    # frozenset of fault classes that apply
        self.cls = cls          # C_DATA, C_SYNC, C_NAME, C_MAP, C_OTHER

    def __repr__(self):
        return f"Call({self.name!r}, {sorted(self.faults)})"


def parse(text):
    table = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        name, point, flags, cls = m.groups()
        faults = frozenset(FAULT_FLAGS[f.strip()] for f in flags.split("|")
                           if f.strip() in FAULT_FLAGS)
        # 64-bit aliases share their base's name and appear once.
        table.setdefault(name, Call(name, point, faults, cls))
    return table


@functools.lru_cache(maxsize=None)
def table():
    return parse(CALLS_DEF.read_text())


def faults_for(call):
    """The sweep's fault classes for a call name (empty if unknown)."""
    c = table().get(call)
    return c.faults if c else frozenset()
