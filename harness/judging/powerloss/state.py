"""What a crash state is, and the words and units the explorer's parts
share: the errors, a change that did or did not persist, a state, a
crash point, the block and its digests, the rules a state can show
broken."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

try:
    from ... import UsageError as _Base
except ImportError:         # the package without its CLI: still one line
    _Base = ValueError

BLOCK = 4096
DEFAULT_CAP = 64
SECTORS = (512, 1024, 2048, 4096)

RULE_FSYNC_BEFORE_RENAME = "fsync the file before renaming it over the target"
RULE_FSYNC_DIR = "fsync the directory after the rename"
RULE_FSYNC_DIR_CREATE = "fsync the directory after creating the file"
RULE_ONE_RENAME = ("rename the new file over the target in one step; "
                   "never remove the target first")
RULE_FSYNC_FAILED = ("after fsync fails, the data it covered is lost: "
                     "rewrite it from a copy (or report the error), never "
                     "retry fsync and claim success")
RULE_MSYNC = "msync(MS_SYNC) the mapping and check the result"
RULE_O_DIRECT = ("O_DIRECT bypasses the page cache, not the disk cache: "
                 "fsync after O_DIRECT writes")
RULE_IN_PLACE = "write a temp file and rename it instead of rewriting in place"
RULE_FFLUSH = ("fflush the stream before fsync: fsync cannot reach data "
               "still in the stdio buffer")
RULE_FSYNC_FILE = "fsync the file after writing it, before reporting success"




class ExplorerError(_Base):
    """A trace or snapshot the explorer cannot use; str() is one line."""


class ThinRecord(ExplorerError):
    """A thin write (faults/preload.c, CRASHCHECK_TRACE_FULL) the replay
    would need: its line says neither where it wrote nor what."""


@dataclass(frozen=True)
class Change:
    """One thing that did or did not reach the disk in a crash state."""
    kind: str           # create link replace rename unlink truncate flush
                        # data blocks size sync-failure write alloc
    name: str           # the file it is about (a rename: the new name)
    detail: str = ""    # rename: the old name; blocks: "0-2,5";
                        # size: "0 -> 4096"; data: "never fsynced" or "";
                        # write: "0-2" (journaled); alloc: "rename", "close";
                        # truncate: the new size; flush: "rename" or "close";
                        # sync-failure: "fsync#1 dropped blocks 0-1"


class CrashState:
    """One tree a power cut could leave behind.

    files and target are built from the state's recipe on every access
    and not kept: a sweep over a 4 MiB file holds thousands of states, and
    only the one being judged needs its bytes.  key is the state's
    identity, (path, content digest) pairs: equal keys, equal trees.
    Paths are relative to WATCH, '/'-separated ("target", "sub/f").
    """

    def __init__(self, label, recipes, target_name, why, rule, persisted,
                 lost, key, dirs=(), links=None):
        self.label = label              # "state 3", 1-based within its point
        self.why = why                  # what persisted and what did not
        self.rule = rule                # the rule it shows broken, or ""
        self.persisted = persisted      # [Change]
        self.lost = lost                # [Change]
        self.key = key                  # ((path, 16-byte digest), ...)
        self._recipes = recipes         # path -> _Recipe
        self._target = target_name
        self.dirs = tuple(dirs)         # the directories under WATCH, by path
        self.links = links or {}        # path -> what the symbolic link holds

    @property
    def files(self):
        """path -> bytes: the regular files of the tree."""
        return {n: r.build() for n, r in self._recipes.items()}

    @property
    def target(self):
        r = self._recipes.get(self._target)
        return None if r is None else r.build()

    def digest(self):
        """Content address of the whole state, as hex."""
        h = hashlib.blake2b(digest_size=16)
        for name, d in self.key:
            h.update(os.fsencode(name) + b"\0" + d)
        return h.hexdigest()

    def copy(self):
        return CrashState(self.label, self._recipes, self._target, self.why,
                          self.rule, self.persisted, self.lost, self.key,
                          self.dirs, self.links)

    def __repr__(self):
        return (f"CrashState({self.label!r}, files={sorted(self._recipes)}, "
                f"why={self.why!r}, rule={self.rule!r})")


@dataclass
class CrashPoint:
    label: str          # "before first call", "after write#3", "after exit"
    seq: int            # seq of the record after which the power fails
    claimed: bool       # the program had exited 0: the new content is due
    states: list        # [CrashState]
    record: dict | None = None   # the call record, None for the two ends


# ---------------------------------------------------------------- blocks

def nblocks(size):
    """How many blocks SIZE bytes take."""
    return (size + BLOCK - 1) // BLOCK


def cut_block(data, i, length):
    """Block I of DATA cut or zero-padded to LENGTH bytes."""
    b = data[i * BLOCK:i * BLOCK + length]
    return b if len(b) == length else b + bytes(length - len(b))


def ranges(blocks):
    """(0, 1, 2, 5) -> '0-2,5'."""
    out = []
    start = prev = None
    for b in sorted(blocks):
        if prev is not None and b == prev + 1:
            prev = b
            continue
        if start is not None:
            out.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = b
    if start is not None:
        out.append(str(start) if start == prev else f"{start}-{prev}")
    return ",".join(out)
