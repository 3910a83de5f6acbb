"""The table of intercepted calls, as faults/calldef.py reads it from
faults/calls.def: the file the C wrappers, the rules' prototypes and the
docs are generated from, by the same reader, so the sweep can never
target a call the library does not know."""

import functools
import importlib.util

from . import ROOT

CALLS_DEF = ROOT / "faults" / "calls.def"
CALLDEF = ROOT / "faults" / "calldef.py"


class Call:
    __slots__ = ("name", "point", "faults", "cls")

    def __init__(self, name, point, faults, cls):
        self.name = name        # as plans name it: "write", "openat"
        self.point = point      # libfiu point: "posix/io/rw/write"
        self.faults = faults    # frozenset of fault classes that apply
        self.cls = cls          # C_DATA, C_SYNC, C_NAME, C_MAP, C_OTHER

    def __repr__(self):
        return f"Call({self.name!r}, {sorted(self.faults)})"


@functools.lru_cache(maxsize=None)
def reader():
    """faults/calldef.py, the one reader of calls.def."""
    spec = importlib.util.spec_from_file_location("crashcheck_calldef", CALLDEF)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@functools.lru_cache(maxsize=None)
def table():
    """{name: Call} of every CALL row (a 64-bit alias is its base's)."""
    return {c.name: Call(c.name, c.point, c.faults, c.cls)
            for c in reader().read(CALLS_DEF).calls.values()}


def faults_for(call):
    """The sweep's fault classes for a call name (empty if unknown)."""
    c = table().get(call)
    return c.faults if c else frozenset()
