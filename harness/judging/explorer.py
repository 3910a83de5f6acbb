"""Power-loss crash states from a recorded trace.

The recorder (faults/libcrashcheck.so) writes, after every intercepted call,
what a read would see: the listings of the directories under WATCH the call
changed, by inode, and the content of every file the call touched -- whole,
or for a write only the range it wrote, which the replay lays over the
content it last knew (docs/design.md, "Trace: JSON lines").  It cannot see the disk.  This module replays the trace
against a model of what the storage stack is allowed to have kept, and at
every crash point builds the directories a power cut could leave behind, as
docs/crash-model.md defines them.  The oracle judges each one.

Two models, chosen per run:

posix (the weakest, the default)
    Only the events of crash-model.md's table make anything durable.  Every
    other change is independent of every other: each dirty 4096-byte block of
    a file old or new, its size old or new, a pending truncation persisted
    or not, each directory's changes since its last fsync persisted or not
    (one call's change to one directory persists whole; a rename between
    two directories is a change to each).  A persisted name of a file
    whose data is not durable shows the file's durable content: empty for a
    file that was never synced.  Names live in directories: a state holds
    what the persisted names reach from WATCH (docs/design.md, "The
    explorer's tree").

ext4-ordered (data=ordered, delalloc, auto_da_alloc)
    Metadata (create, rename, unlink, link, mkdir, truncate: what one call
    changes, in every directory) goes through one journal and a crash keeps
    a prefix of it; a successful fsync, fdatasync, msync,
    O_SYNC write or directory fsync commits the whole journal.  Overwrites of
    blocks that stay allocated are not ordered with the journal: each is
    independently old or new.  Data past the allocated size is delayed
    allocation: it reaches the disk only by write-back in file order, and the
    on-disk size moves forward only over data already written (ext4 updates
    i_disksize when write-back of those blocks completes), so under this
    model a file never shows a zero-filled tail: a never-synced new file
    reads as empty, a half-written-back append as a shorter file.  Renaming a
    file over an existing name puts a forced write-out of the renamed file's
    data into the journal just before the rename, and closing a file that was
    truncated to zero and rewritten does the same at the close (or at exit,
    when the kernel closes what is left open): that is auto_da_alloc, which
    is why a write-then-rename without fsync is old-or-new on ext4 but not
    under posix.  A truncate to zero that commits before that close leaves
    the file empty: ext4 has that window too.

In both models a failed fsync, fdatasync or msync drops the dirty blocks it
covered from the write-back queue: they keep their durable value in every
crash state, even after a later successful sync, until the program writes
them again (a write call whose range covers them, or a later snapshot in
which their content changed; a rewrite of identical bytes through a mapping
cannot be seen and stays lost).

Crash points are: before the first call, after each call record (in seq
order, any process), and after the program exits.  A crash point whose
pending set is empty has exactly one state.  Otherwise the states are, in
this order: the durable state; everything persisted; each pending directory
change alone (ext4-ordered: each journal prefix); all names with no data;
each pending file's data alone (with no names and with all of them); torn
states (a file's first k dirty blocks, with the new and the old size); then,
when the whole space is no larger than the cap, every other combination,
else a sample drawn with random.Random from the seed.  States with the same
name -> content map are kept once.  When the deterministic list alone
exceeds the cap, the first two are kept and the rest is sampled from it.

A state holds recipes, not bytes: its files are built when asked for, and
its identity is a digest made from per-block digests, so a 4 MiB file torn
sixty-four ways costs sixty-four small recipes.  Each state also says what
persisted and what did not (why, persisted, lost) and which rule its target
shows broken (rule), from the history of the inode behind the target.

    points = explore(records, snapdir, "posix", "target", exit_ok=True)
    for label, files in visible(records, snapdir):  # what reads saw
        ...
    for p in points:                    # CrashPoint: label seq claimed states
        for st in p.states:             # CrashState: files target why rule
            layout(st, scratch)         # the directory, for a checker
"""

from __future__ import annotations

import hashlib
import itertools
import os
import random
import re
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Iterable

try:
    from .. import UsageError as _Base
except ImportError:         # the package without its CLI: still one line
    _Base = ValueError

BLOCK = 4096
MODELS = ("posix", "ext4-ordered")
DEFAULT_CAP = 64

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

WRITE_CALLS = frozenset(("write", "pwrite", "pwrite64", "writev", "pwritev",
                         "pwritev2"))
# stdio hands its buffer to the kernel inside these, below the interposer
STDIO_CALLS = frozenset(("fwrite", "fputs", "fputc", "fprintf", "fflush",
                         "fclose"))
FSYNC_CALLS = frozenset(("fsync", "fdatasync"))
SYNC_ALL_CALLS = frozenset(("sync", "syncfs"))
OPEN_CALLS = frozenset(("open", "open64", "openat", "openat64", "creat",
                        "creat64", "fopen", "fopen64", "freopen"))
CLOSE_CALLS = frozenset(("close", "fclose"))
MMAP_CALLS = frozenset(("mmap", "mmap64"))
# calls whose size change is metadata (a journal entry) rather than data
SIZE_CALLS = frozenset(("ftruncate", "ftruncate64", "truncate", "truncate64",
                        "fallocate", "posix_fallocate"))
# calls that change a file's data from data the program never held: the
# output's whole snapshot says what they did
COPY_CALLS = frozenset(("copy_file_range", "sendfile", "splice"))
# every call that changes a file's data, by its descriptor or path
DATA_CALLS = WRITE_CALLS | STDIO_CALLS | COPY_CALLS | SIZE_CALLS | {"mmap"}
# calls that change names, besides the creating opens
NAME_CALLS = frozenset(("rename", "renameat", "renameat2", "link", "linkat",
                        "unlink", "unlinkat", "rmdir", "mkdir", "mkdirat",
                        "symlink", "symlinkat"))
# calls that give an existing file (or directory) a name in the tree
MOVE_CALLS = frozenset(("rename", "renameat", "renameat2", "link", "linkat"))
# flags of a write that make it durable when it returns
SYNC_FLAGS = frozenset(("O_SYNC", "O_DSYNC", "RWF_SYNC", "RWF_DSYNC"))
# the flags of a write that _plain_args lets take the short way (a copy
# or an unseen change never reaches it: only WRITE_CALLS are asked)
_PLAIN = frozenset(("O_APPEND",))
# errors that mean the device refused the data, not a bad argument
HARD_ERRNOS = frozenset((5, 28, 122))   # EIO, ENOSPC, EDQUOT


class ExplorerError(_Base):
    """A trace or snapshot the explorer cannot use; str() is one line."""


class ThinRecord(ExplorerError):
    """A thin write (faults/trace.c, CRASHCHECK_TRACE_FULL) the replay
    would need: its line says neither where it wrote nor what."""


@dataclass(frozen=True)
class Change:
    """One thing that did or did not reach the disk in a crash state."""
    kind: str           # create link replace rename unlink truncate flush
                        # data blocks size sync-failure
    name: str           # the file it is about (a rename: the new name)
    detail: str = ""    # rename: the old name; blocks: "0-2,5";
                        # size: "0 -> 4096"; data: "never fsynced" or "";
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


def explore(records: Iterable[dict], snapdir=None, model: str = "posix",
            target_name: str = "target", cap: int = DEFAULT_CAP,
            seed: int = 0, *, content: Callable[[str], bytes] | None = None,
            exit_ok: bool = False, only_exit: bool = False,
            blob_cache: dict | None = None, sector: int = BLOCK,
            points=None) -> list:
    """Crash points of a parsed trace under MODEL, each with its states.

    snapdir is the snapshot directory (content at SNAPDIR/<hash>), or a
    callable hash -> bytes; content= is the same callable, for tests.
    exit_ok says the program exited 0, which makes the after-exit point
    claimed. only_exit returns the after-exit point alone, with the same
    states as in the full list (explore_exit()). blob_cache, a dict, keeps
    the snapshot contents read for another call on the same snapshots.
    sector, a power of two from 512 to BLOCK: the device's unit of atomic
    writes; below BLOCK, writes also tear inside a block.
    points, a set of indices into the list, says which points are wanted:
    the others come with no states, and those wanted have the states they
    would have in the full list.
    """
    _check_model(model)
    if only_exit:
        return [explore_exit(records, snapdir, (model,), target_name, cap,
                             seed, content=content, exit_ok=exit_ok,
                             blob_cache=blob_cache, sector=sector)[model]]
    blobs, recs = _setup(records, snapdir, content, cap, seed, blob_cache,
                         sector)
    init = recs[0]
    world = _World(model, blobs, init)
    builder = _Builder(world, target_name, cap, seed, sector)
    wanted = points

    def states(index):
        if wanted is None or index in wanted:
            return builder.states(index)
        builder.skip(index)
        return []
    points = [CrashPoint("before first call", init["seq"], False,
                         states(0), None)]
    counts = {}
    for rec in recs[1:]:
        if rec["ev"] == "init":
            world.snapshot(rec)      # a child's view: nothing became durable
            continue
        if rec["ev"] == "crash":
            continue                 # the process died; its call did not run
        world.call(rec)
        name = rec["call"]
        counts[name] = counts.get(name, 0) + 1
        n = rec.get("n") if isinstance(rec.get("n"), int) else counts[name]
        points.append(CrashPoint(f"after {name}#{n}", rec["seq"], False,
                                 states(len(points)), rec))
    world.exit()
    points.append(CrashPoint("after exit", recs[-1]["seq"] + 1, bool(exit_ok),
                             states(len(points)), None))
    return points


def explore_exit(records: Iterable[dict], snapdir=None, models=MODELS,
                 target_name: str = "target", cap: int = DEFAULT_CAP,
                 seed: int = 0, *, content: Callable[[str], bytes] | None = None,
                 exit_ok: bool = False, blob_cache: dict | None = None,
                 moot_full: bool = True, sector: int = BLOCK) -> dict:
    """The after-exit crash point of a parsed trace under each of MODELS:
    {model: CrashPoint}, each what explore() would give as the last of
    its list. The sweep judges a fault case there alone, under each model
    in turn; building every other point made a case's cost grow with the
    length of its trace, so the trace is replayed with no point built,
    once for all the models: a record is read once (a plain write's
    range, _plain_args) and laid on each model's world. RECORDS may hold
    Moot writes (trace.Lazy.for_exit), passed over where every world
    allows it; with moot_full False, a world that needs a Moot's writes
    raises ThinRecord (a thin run's: sweep.Judge.thin_window)."""
    for model in models:
        _check_model(model)
    blobs, recs = _setup(records, snapdir, content, cap, seed, blob_cache,
                         sector)
    worlds = [_World(model, blobs, recs[0]) for model in models]
    builders = [_Builder(w, target_name, cap, seed, sector) for w in worlds]
    # each point is only noted: its index seeds the sampling of the
    # after-exit point when the world did not change since
    for b in builders:
        b.skip(0)
    pairs = list(zip(worlds, builders))
    index = 1
    for rec in recs[1:]:
        ev = rec["ev"]
        if ev == "init":
            for w in worlds:
                w.snapshot(rec)
        elif ev != "crash":
            if rec.__class__ is not Moot:
                todo = (rec,)
            elif all(w.knows_clean(rec["ino"]) for w in worlds):
                # the worlds do not change, so no builder notes them
                index += len(rec.lines)
                continue
            elif not moot_full:
                raise ThinRecord(f"trace record seq={rec['seq']}: the writes "
                                 f"of a moot run are needed, and this trace "
                                 f"may hold them thin")
            else:
                todo = rec.full()
            for one in todo:
                plain = _plain_args(one) if one["call"] in WRITE_CALLS \
                    else False
                for w, b in pairs:
                    w.call(one, plain)
                    b.skip(index)
                index += 1
    out = {}
    for model, w, b in zip(models, worlds, builders):
        w.exit()
        out[model] = CrashPoint("after exit", recs[-1]["seq"] + 1,
                                bool(exit_ok), b.states(index), None)
    return out


class Moot(dict):
    """Writes the after-exit replay may pass over unread
    (trace.Lazy.for_exit): a run of writes to one file that a later
    successful fsync snapshots whole, with no record between naming the
    file. It holds the ev, seq, call and ino of the first; len(lines) is
    how many; full() gives their records, for a world that needs them
    after all: one where a failed sync left blocks of the file lost (a
    rewrite brings them back), or that does not know the file."""

    __slots__ = ("lines", "_parse")

    def __init__(self, seq, call, ino, parse, lines):
        super().__init__(ev="call", seq=seq, call=call, ino=ino)
        self._parse = parse
        self.lines = lines

    def full(self):
        return self._parse(self.lines)


def _check_model(model):
    if model not in MODELS:
        raise ExplorerError(f"unknown model '{model}' "
                            f"(expected {' or '.join(MODELS)})")


SECTORS = (512, 1024, 2048, 4096)


def _setup(records, snapdir, content, cap, seed, blob_cache, sector=BLOCK):
    """(blobs, records in seq order) for an exploration; checks the
    arguments they come from."""
    if not isinstance(cap, int) or isinstance(cap, bool) or cap < 1:
        raise ExplorerError(f"cap must be a positive integer, not {cap!r}")
    if sector not in SECTORS or isinstance(sector, bool):
        raise ExplorerError(f"sector must be one of "
                            f"{', '.join(map(str, SECTORS))}, not {sector!r}")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise ExplorerError(f"seed must be an integer, not {seed!r}")
    if callable(snapdir) and content is None:
        content, snapdir = snapdir, None
    return _Blobs(snapdir, content, blob_cache), _check_records(records)


def crash_points(records: Iterable[dict]) -> list:
    """The labels explore() gives its crash points, without exploring."""
    labels = ["before first call"]
    counts = {}
    for rec in sorted((r for r in records if r.get("ev") == "call"),
                      key=lambda r: r["seq"]):
        name = rec["call"]
        counts[name] = counts.get(name, 0) + 1
        n = rec.get("n") if isinstance(rec.get("n"), int) else counts[name]
        labels.append(f"after {name}#{n}")
    labels.append("after exit")
    return labels


def visible(records: Iterable[dict], snapdir=None, *,
            content: Callable[[str], bytes] | None = None) -> list:
    """What a read saw after each record: [(label, {name: bytes})], with
    the labels explore() gives its crash points (the before-first-call one
    and one per call record), the WATCH directory's names and the content
    the replay holds for each. Whole and range snapshots of one run must
    give the same list; tests compare them."""
    if callable(snapdir) and content is None:
        content, snapdir = snapdir, None
    recs = _check_records(records)
    world = _World("posix", _Blobs(snapdir, content), recs[0])

    def seen():
        return {path: world.inodes[ino].vis
                for path, ino in world.tree(world.vis)[0].items()}

    out = [("before first call", seen())]
    counts = {}
    for rec in recs[1:]:
        if rec["ev"] == "init":
            world.snapshot(rec)
            continue
        if rec["ev"] == "crash":
            continue
        world.call(rec)
        name = rec["call"]
        counts[name] = counts.get(name, 0) + 1
        n = rec.get("n") if isinstance(rec.get("n"), int) else counts[name]
        out.append((f"after {name}#{n}", seen()))
    return out


def unseen(records: Iterable[dict], snapdir=None, workdir=None, *,
           content: Callable[[str], bytes] | None = None) -> list:
    """The changes to the tree that no intercepted call accounts for: a
    file whose content changed between two of its snapshots with no call
    on it that writes, a name that appeared, went or changed in a
    directory no call named, and, given the WORKDIR the trace's run left,
    what that tree holds that the last snapshots did not show. Each is
    {"path", "what": "content" or "name", "at": the call whose snapshot
    showed it ("fsync#1") or "exit", "seq"}, once per path and kind, in
    trace order: changed by a call crashcheck cannot see (a raw system
    call, io_uring, a static helper). Files written through stdio or a
    shared mapping change between calls by design and are left out.

    With several processes a snapshot can show what another process's
    call did before that call's record took its seq (the seq is taken
    after the call, the snapshot after the seq): such a change is
    accounted for by any later record of another process whose call may
    have made it, and reported only if none comes before the end of the
    trace. A change that a later call of the same process would account
    for is still reported: one process's calls are never in flight
    together (threads of one process share its pid, and are not told
    apart)."""
    if callable(snapdir) and content is None:
        content, snapdir = snapdir, None
    recs = _check_records(records)
    world = _World("posix", _Blobs(snapdir, content), recs[0])
    world.audit = []
    for rec in recs[1:]:
        if rec["ev"] == "call":
            world.excuse(rec)
            world.call(rec)
    out = world.audit = world.settled()
    if workdir is not None:
        out += world.on_disk(workdir, recs[-1]["seq"] + 1)
    return out


def layout(state: CrashState, directory) -> list:
    """Write STATE's tree into DIRECTORY (absent or empty): its
    directories, regular files and symbolic links; return the files'
    paths."""
    directory = os.fspath(directory)
    os.makedirs(directory, exist_ok=True)
    if os.listdir(directory):
        raise ExplorerError(f"layout: '{directory}' is not empty")

    def place(rel):
        parts = rel.split("/")
        if not rel or any(p in ("", ".", "..") for p in parts):
            raise ExplorerError(f"layout: bad path {rel!r}")
        return os.path.join(directory, *parts)

    for rel in sorted(state.dirs):
        os.makedirs(place(rel), exist_ok=True)
    paths = []
    for rel, data in sorted(state.files.items()):
        path = place(rel)
        with open(path, "wb") as f:
            f.write(data)
        paths.append(path)
    for rel, target in sorted(state.links.items()):
        os.symlink(target, place(rel))
    return paths


# ---------------------------------------------------------------- input

def _check_records(records):
    recs = []
    for i, rec in enumerate(records):
        if not isinstance(rec, dict):
            raise ExplorerError(f"trace record {i + 1}: not a JSON object")
        ev = rec.get("ev")
        if ev not in ("init", "call", "crash"):
            raise ExplorerError(f"trace record {i + 1}: bad ev {ev!r}")
        seq = rec.get("seq")
        if not isinstance(seq, int) or isinstance(seq, bool):
            raise ExplorerError(f"trace record {i + 1}: bad seq {seq!r}")
        if ev == "call" and not isinstance(rec.get("call"), str):
            raise ExplorerError(f"trace record seq={seq}: call without a "
                                f"'call' name")
        recs.append(rec)
    recs.sort(key=lambda r: r["seq"])   # processes append out of seq order
    if not recs or recs[0]["ev"] != "init":
        first = [r for r in recs if r["ev"] == "init"]
        if not first:
            raise ExplorerError("trace has no init record")
        raise ExplorerError(f"trace record seq={recs[0]['seq']} comes before "
                            f"the init record (seq={first[0]['seq']})")
    if not isinstance(recs[0].get("snap"), dict):
        raise ExplorerError(f"trace record seq={recs[0]['seq']}: init record "
                            f"without a snapshot (was the recorder on?)")
    return recs


class _Blobs:
    """Snapshot contents by hash, loaded once."""

    def __init__(self, snapdir, loader, cache=None):
        if loader is None and snapdir is None:
            raise ExplorerError("explore: need a snapshot dir or a loader")
        self.snapdir = None if snapdir is None else os.fspath(snapdir)
        self.loader = loader
        self.cache = {} if cache is None else cache

    def get(self, h, size, seq):
        data = self.cache.get(h)
        if data is None:
            if not isinstance(h, str) or not h or "/" in h or h in (".", ".."):
                raise ExplorerError(f"trace record seq={seq}: bad snapshot "
                                    f"hash {h!r}")
            if self.loader is not None:
                try:
                    data = self.loader(h)
                except KeyError:
                    raise ExplorerError(f"trace record seq={seq}: snapshot "
                                        f"{h} is missing") from None
            else:
                path = os.path.join(self.snapdir, h)
                try:
                    with open(path, "rb") as f:
                        data = f.read()
                except OSError as e:
                    raise ExplorerError(f"trace record seq={seq}: snapshot "
                                        f"'{path}': {e.strerror}") from None
                except ValueError:      # a NUL or a lone surrogate in h
                    raise ExplorerError(f"trace record seq={seq}: bad snapshot "
                                        f"hash {h!r}") from None
            data = bytes(data)
            self.cache[h] = data
        if size is not None and len(data) != size:
            raise ExplorerError(f"trace record seq={seq}: snapshot {h} holds "
                                f"{len(data)} bytes, the trace says {size}")
        return data


def _encodable(name):
    try:
        os.fsencode(name)
    except UnicodeEncodeError:      # a lone surrogate outside \udc80-\udcff
        return False
    return True


def _ino(value, seq, what):
    try:
        if isinstance(value, bool):
            raise ValueError
        return int(value)
    except (TypeError, ValueError):
        raise ExplorerError(f"trace record seq={seq}: {what}: bad inode "
                            f"number {value!r}") from None


# ---------------------------------------------------------------- blocks

def _nblocks(size):
    return (size + BLOCK - 1) // BLOCK


def _block(data, i, length):
    """Block I of DATA cut or zero-padded to LENGTH bytes."""
    b = data[i * BLOCK:i * BLOCK + length]
    return b if len(b) == length else b + bytes(length - len(b))


def _h(data):
    return hashlib.blake2b(data, digest_size=16).digest()


_ZERO_BLOCK = _h(bytes(BLOCK))


class _Digests:
    """Digests of the full blocks of the few bytes objects in use, so that
    a state's identity costs a pass over digests, not over its bytes."""

    def __init__(self, keep=64):
        self.keep = keep
        self.lru = OrderedDict()    # id -> (object, digests); the object
                                    # is held so its id stays its own

    def blocks(self, data):
        hit = self.lru.get(id(data))
        if hit is not None and hit[0] is data:
            self.lru.move_to_end(id(data))
            return hit[1]
        d = [_h(data[i:i + BLOCK])
             for i in range(0, len(data) - BLOCK + 1, BLOCK)]
        self.lru[id(data)] = (data, d)
        if len(self.lru) > self.keep:
            self.lru.popitem(last=False)
        return d


class _Recipe:
    """A file's content in a crash state: BASE with the blocks BLOCKS taken
    from VIS (each as far as VIS reaches), cut or zero-extended to SIZE.
    TEAR, (block, n), takes only the first n bytes of that block from VIS:
    a write torn inside a block, on a device that writes sectors."""

    __slots__ = ("base", "vis", "blocks", "size", "tear")

    def __init__(self, base, vis, blocks, size, tear=None):
        self.base = base
        self.vis = vis
        self.blocks = blocks        # frozenset of block indices
        self.size = size
        self.tear = tear if tear is not None and tear[0] in blocks else None

    def _span(self, b):
        """The bytes of block B that come from VIS: [s, e)."""
        s = b * BLOCK
        e = min(s + BLOCK, len(self.vis))
        if self.tear is not None and self.tear[0] == b:
            e = min(e, s + self.tear[1])
        return s, e

    def build(self):
        base, size = self.base, self.size
        if not self.blocks:
            if size == len(base):
                return base
            return base[:size].ljust(size, b"\0")
        img = bytearray(base)
        for b in sorted(self.blocks):
            s, e = self._span(b)
            if s >= e:
                continue
            if len(img) < e:
                img.extend(bytes(e - len(img)))
            img[s:e] = self.vis[s:e]
        if len(img) < size:
            img.extend(bytes(size - len(img)))
        return bytes(img[:size])

    def _block(self, j, lo, hi):
        arr = bytearray(self.base[lo:hi].ljust(hi - lo, b"\0"))
        if j in self.blocks:
            s, e = self._span(j)
            seg = self.vis[lo:min(e, hi)]
            arr[:len(seg)] = seg
        return bytes(arr)

    def digest(self, dg):
        base, blocks, size = self.base, self.blocks, self.size
        bd = dg.blocks(base)
        vd = dg.blocks(self.vis) if blocks else ()
        full = size // BLOCK
        out = bd[:full]
        for j in range(len(out), full):     # past the base's full blocks
            out.append(_ZERO_BLOCK if len(base) <= j * BLOCK
                       else _h(self._block(j, j * BLOCK, j * BLOCK + BLOCK)))
        tear = self.tear[0] if self.tear is not None else None
        for j in blocks:
            if j < full:
                out[j] = vd[j] if j < len(vd) and j != tear else _h(
                    self._block(j, j * BLOCK, j * BLOCK + BLOCK))
        if size % BLOCK:
            out.append(_h(self._block(full, full * BLOCK, size)))
        out.append(size.to_bytes(8, "little"))
        return _h(b"".join(out))


def _ranges(blocks):
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


class _Inode:
    """One file: what reads see, what the disk holds, and its history."""

    __slots__ = ("ino", "_vis", "_buf", "dimg", "lost", "born", "synced",
                 "odirect", "mapped", "truncated", "fsynced", "stdio_late",
                 "da_close", "cut", "rev", "_cache")

    def __init__(self, ino, content, born):
        self.ino = ino
        self._vis = content     # visible content, bytes; None: see _buf
        self._buf = None        # the same as a bytearray, for patch()
        self.dimg = content     # durable content (its length is the size)
        self.lost = {}          # block -> (visible bytes then, "fsync#1")
        self.born = born        # created during the run
        self.synced = not born  # some sync made its data durable
        self.odirect = False    # O_DIRECT writes since its last sync
        self.mapped = False     # mapped MAP_SHARED since its last sync
        self.truncated = False  # shrunk where it stood since its last sync
        self.fsynced = False    # an fsync or fdatasync of it succeeded
        self.stdio_late = False  # a stdio call changed it after that
                                 # fsync: the data sat in the FILE buffer
        self.da_close = False   # ext4: truncated to 0, flush at close
        self.cut = None         # posix: the least size it was cut to
                                # below its durable size since its last sync
        self.rev = 0            # bumped on every change, keys _cache
        self._cache = None

    @property
    def vis(self):
        """What a read sees, as bytes (made from _buf after patches)."""
        if self._vis is None:
            self._vis = bytes(self._buf)
        return self._vis

    @vis.setter
    def vis(self, data):
        self._vis = data
        self._buf = None

    def patch(self, off, data, size):
        """Lay DATA at OFF over the visible content and make it SIZE bytes
        long, no shorter than it is: a range snapshot, at the cost of its
        own length rather than the file's (a program writing a file in a
        thousand pieces is replayed in linear time). False when that left
        the content as it was."""
        buf = self._buf
        if buf is None:
            buf = self._buf = bytearray(self._vis)
        end = off + len(data)
        if len(buf) == size and buf[off:end] == data:
            return False
        if len(buf) < off:
            buf.extend(bytes(off - len(buf)))
        buf[off:end] = data
        if len(buf) < size:
            buf.extend(bytes(size - len(buf)))
        self._vis = None
        return True

    def pending(self):
        """(visible content minus lost blocks, dirty blocks) — cached."""
        if self._cache is not None and self._cache[0] == self.rev:
            return self._cache[1], self._cache[2]
        vis, dimg = self.vis, self.dimg
        if self.lost:
            arr = bytearray(vis)
            for b in self.lost:
                s = b * BLOCK
                if s < len(vis):
                    e = min(s + BLOCK, len(vis))
                    arr[s:e] = _block(dimg, b, e - s)
            vis = bytes(arr)
        if vis == dimg:
            dirty = ()
        else:
            dirty = tuple(
                b for b in range(_nblocks(len(vis)))
                if vis[b * BLOCK:(b + 1) * BLOCK] != _block(
                    dimg, b, min(BLOCK, len(vis) - b * BLOCK)))
        self._cache = (self.rev, vis, dirty)
        return vis, dirty


# ---------------------------------------------------------------- journal

# A directory entry as the replay holds it: a regular file's inode (int),
# ("d", inode) for a directory, ("l", what it holds) for a symbolic link.
# The root of a trace whose records list WATCH alone ("dir", the format
# before trees) is this key.
LEGACY_ROOT = "."


def _is_file(entry):
    return type(entry) is int


class _DirOp:
    """Names that change together, persisting whole or not at all: under
    posix what one call changed in one directory (a rename within it, an
    exchange, a creation); under ext4-ordered all that one call changed,
    in every directory (one journal transaction). A rename between two
    directories is two of these under posix, one per directory, as
    crash-model.md's "Names live in directories" says."""

    __slots__ = ("dino", "actions", "changes", "inos")

    def __init__(self, dino, actions, changes):
        self.dino = dino            # the directory (posix); None: journal
        self.actions = actions      # [(dino, name, entry or None, before)]
        self.changes = changes      # [Change]: what it is called
        self.inos = {e for a in actions for e in (a[2], a[3])
                     if _is_file(e)}

    def apply(self, dirs, images):
        """Lay the change over DIRS (dino -> listing; the listings it
        touches are the caller's copies). A name is removed only where it
        still holds what the change removed: its creation may not have
        persisted."""
        for dino, name, entry, before in self.actions:
            d = dirs.get(dino)
            if d is None:
                d = dirs[dino] = {}
            if entry is None:
                if d.get(name) == before:
                    del d[name]
            else:
                d[name] = entry

    def describe(self, names):
        return self.changes


class _SizeOp:
    """ext4: a size change through the journal (truncate, fallocate)."""

    __slots__ = ("ino", "size")
    dino = None

    def __init__(self, ino, size):
        self.ino = ino
        self.size = size

    def apply(self, dirs, images):
        img = images[self.ino]
        images[self.ino] = (img[:self.size] if len(img) >= self.size
                            else img + bytes(self.size - len(img)))

    def describe(self, names):
        return [Change("truncate", names(self.ino), str(self.size))]


class _Flush:
    """ext4 auto_da_alloc: the file's data forced out at this point."""

    __slots__ = ("ino", "content", "why")
    dino = None

    def __init__(self, ino, content, why):
        self.ino = ino
        self.content = content
        self.why = why            # "rename" or "close"

    def apply(self, dirs, images):
        images[self.ino] = self.content

    def describe(self, names):
        return [Change("flush", names(self.ino), self.why)]


def _kind_of(entry, linked):
    """What adding ENTRY is called; LINKED: a file that has another name."""
    if not _is_file(entry):
        return {"d": "mkdir", "l": "symlink"}[entry[0]]
    return "link" if linked else "create"


def _name_changes(changed, path_before, path_after, named):
    """The actions and the words of one record's changes to names.

    CHANGED: {dino: (old listing, new listing)}; PATH_BEFORE/AFTER(dino,
    name): the path of a name before and after the record; NAMED(entry):
    whether a file already had a name before the record. Returns {dino:
    ([action], [Change])}. An entry that left one name and took another
    in the same record was renamed (paired within its directory first);
    between two directories each half is told in its own."""
    gone, came = {}, {}
    for dino, (old, new) in changed.items():
        for n, e in old.items():
            if new.get(n) != e:
                gone.setdefault(e, []).append((dino, n))
        for n, e in new.items():
            if old.get(n) != e:
                came.setdefault(e, []).append((dino, n))
    out = {dino: ([], []) for dino in changed}
    for dino, (old, new) in changed.items():
        acts = out[dino][0]
        for n in sorted(set(old) | set(new)):
            if old.get(n) != new.get(n):
                acts.append((dino, n, new.get(n), old.get(n)))
    moved_from = {}         # (dino, name) it came to -> (dino, name) it left
    for e, dests in came.items():
        srcs = gone.get(e, [])
        for dest in sorted(dests, key=str):
            same = [s for s in srcs if s[0] == dest[0]]
            pick = same[0] if same else srcs[0] if srcs else None
            if pick is not None:
                srcs.remove(pick)
                moved_from[dest] = pick
    moved_to = {v: k for k, v in moved_from.items()}
    for dino, (old, new) in sorted(changed.items(), key=lambda kv: str(kv[0])):
        words = out[dino][1]
        for n in sorted(new):
            e = new[n]
            if old.get(n) == e:
                continue
            here = path_after(dino, n)
            src = moved_from.get((dino, n))
            if src is not None:
                kind = "rename" if src[0] == dino else "move-in"
                words.append(Change(kind, here, path_before(*src)))
            elif n in old:
                words.append(Change("replace", here))
            else:
                words.append(Change(_kind_of(e, _is_file(e) and named(e)),
                                    here))
        for n in sorted(old):
            if n in new:
                continue
            e = old[n]
            here = path_before(dino, n)
            dest = moved_to.get((dino, n))
            if dest is not None:
                if dest[0] != dino:
                    words.append(Change("move-out", here,
                                        path_after(*dest)))
                continue        # a rename within the directory: told once
            words.append(Change("unlink" if _is_file(e) or e[0] == "l"
                                else "rmdir", here))
    return out


# ---------------------------------------------------------------- replay

def _plain_args(rec):
    """What the common write record holds, read once for every world that
    replays it: a write call that put ret > 0 bytes at off, recorded as
    that range alone, with no sync flag and no O_DIRECT. (ino, off, ret,
    size, hex text or None, hash or None, seq), or False for any other
    record or any doubt (the general way then decides and words the
    error). A world still has to agree (_World._apply_plain)."""
    ret, off, ino = rec.get("ret"), rec.get("off"), rec.get("ino")
    snap, flags = rec.get("snap"), rec.get("flags")
    if type(ret) is not int or ret <= 0 or type(off) is not int \
            or type(ino) is not int or type(snap) is not dict \
            or len(snap) != 1 or (flags and (
                type(flags) is not list or not _PLAIN.issuperset(flags))):
        return False
    files = snap.get("files")
    if type(files) is not dict or len(files) != 1:
        return False
    (key, meta), = files.items()
    if type(meta) is not dict or key != str(ino):
        return False
    moff, mlen, size = meta.get("off"), meta.get("len"), meta.get("size")
    # type() first: True == 1, and the general way refuses a bool
    if type(moff) is not int or moff != off or type(mlen) is not int \
            or mlen != ret or type(size) is not int or size < off + ret:
        return False
    text, h = meta.get("data"), meta.get("hash")
    if text is not None:
        # the same bytes fromhex() gives the general way, or no doubt
        if h is not None or type(text) is not str or len(text) != 2 * ret \
                or not _HEX.fullmatch(text):
            return False
        return ino, off, ret, size, text, None, rec["seq"]
    if type(h) is not str:
        return False
    return ino, off, ret, size, None, h, rec["seq"]


_HEX = re.compile(r"[0-9a-fA-F]*")


def _inside(path, watch):
    path, watch = os.path.normpath(path), os.path.normpath(watch)
    return path == watch or path.startswith(watch.rstrip("/") + "/")


class _World:
    """Visible and durable state of the tree under WATCH, advanced one
    record at a time."""

    def __init__(self, model, blobs, init):
        self.ext4 = model == "ext4-ordered"
        self.blobs = blobs
        self.watch = init.get("watch")
        self.inodes = {}
        self.names = {}         # inode -> last path it was seen under
        self.ops = []           # posix: name changes; ext4: the journal
        self.gen = 0            # bumped on every change; equal = same states
        # files the program has written or created so far: one that
        # first shows up otherwise (moved in from outside the tree) was
        # there before the run, and is durable as it stands
        self.touched = set()
        # unseen(): changes no intercepted call accounts for, else None
        self.audit = None
        self.stdio_inos = set()     # used through stdio: libc writes it
        self.mapped_inos = set()    # mapped MAP_SHARED: stores write it
        self._rec_target = None     # the file the call being replayed names
        seq = init["seq"]
        snap = init["snap"]
        files = self._files(snap, seq, ranges=False)
        self.root, self.vis = self._listings(snap, seq, init=True)
        self.legacy = self.root == LEGACY_ROOT
        for ino, data in files.items():
            self.inodes[ino] = _Inode(ino, data, born=False)
        for path, ino in self.tree(self.vis)[0].items():
            if ino not in self.inodes:
                self.inodes[ino] = _Inode(ino, b"", born=False)
            self.names.setdefault(ino, path)
        # the harness synced the setup
        self.dur = {d: dict(listing) for d, listing in self.vis.items()}
        self._dur_files = None      # file inodes with a durable name

    # -- the tree

    def tree(self, dirs):
        """({path: file inode}, [directory path], {path: link}) of the
        tree DIRS (dino -> listing) holds from the root; a directory
        reached twice (only a damaged trace does that) is walked once."""
        files, subdirs, links = {}, [], {}
        todo = [("", self.root)]
        seen = {self.root}
        while todo:
            base, dino = todo.pop()
            for name, e in sorted((dirs.get(dino) or {}).items()):
                path = base + name
                if _is_file(e):
                    files[path] = e
                elif e[0] == "d":
                    subdirs.append(path)
                    if e[1] not in seen and len(seen) < 1 << 20:
                        seen.add(e[1])
                        todo.append((path + "/", e[1]))
                else:
                    links[path] = e[1]
        return dict(sorted(files.items())), sorted(subdirs), links

    def dir_paths(self, dirs):
        """dino -> path of each directory DIRS reaches ("" = WATCH)."""
        out = {self.root: ""}
        todo = [self.root]
        while todo:
            dino = todo.pop()
            for name, e in (dirs.get(dino) or {}).items():
                if not _is_file(e) and e[0] == "d" and e[1] not in out:
                    out[e[1]] = out[dino] + name + "/"
                    todo.append(e[1])
        return out

    def lookup(self, dirs, path):
        """The entry PATH names in DIRS, or None."""
        dino, e = self.root, None
        for part in path.split("/"):
            if dino is None:
                return None
            e = (dirs.get(dino) or {}).get(part)
            if e is None:
                return None
            dino = e[1] if not _is_file(e) and e[0] == "d" else None
        return e

    def durably_named(self, ino):
        if self._dur_files is None:
            self._dur_files = {e for listing in self.dur.values()
                               for e in listing.values() if _is_file(e)}
        return ino in self._dur_files

    # -- snapshots

    def _files(self, snap, seq, ranges=True):
        """inode -> visible content after the record. An entry is a whole
        snapshot, or (with off and len) a range: the inode's last known
        content cut or zero-extended to size, with [off, off+len) from the
        snapshot -- which rebuilds what a whole snapshot would have held."""
        files = snap.get("files") or {}
        if not isinstance(files, dict):
            raise ExplorerError(f"trace record seq={seq}: snap.files is not "
                                f"an object")
        out = {}
        for key, meta in files.items():
            ino = _ino(key, seq, "snap.files")
            if not isinstance(meta, dict) or not (
                    "hash" in meta or ("data" in meta and "off" in meta)):
                raise ExplorerError(f"trace record seq={seq}: snap.files."
                                    f"{key} needs size and hash")
            size = meta.get("size")
            if size is not None and (not isinstance(size, int)
                                     or isinstance(size, bool) or size < 0):
                raise ExplorerError(f"trace record seq={seq}: snap.files."
                                    f"{key}: bad size {size!r}")
            if "off" in meta or "len" in meta:
                out[ino] = self._range(ino, key, meta, size, seq, ranges)
            else:
                out[ino] = self.blobs.get(meta["hash"], size, seq)
        return out

    def _range(self, ino, key, meta, size, seq, allowed):
        where = f"trace record seq={seq}: snap.files.{key}"
        if not allowed:
            raise ExplorerError(f"{where}: a range snapshot in the init "
                                f"record (it must hold whole files)")
        off, length = meta.get("off"), meta.get("len")
        for what, v in (("off", off), ("len", length), ("size", size)):
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ExplorerError(f"{where}: bad {what} {v!r} in a range "
                                    f"snapshot")
        if off + length > size:
            raise ExplorerError(f"{where}: range {off}+{length} runs past "
                                f"the size {size}")
        node = self.inodes.get(ino)
        if node is None:
            raise ExplorerError(f"{where}: a range snapshot of inode {ino}, "
                                f"whose content no earlier record gave")
        if "data" in meta:
            # a small range carries its bytes in the line, as hex
            text = meta["data"]
            try:
                if not isinstance(text, str) or len(text) != 2 * length:
                    raise ValueError
                data = bytes.fromhex(text)
            except ValueError:
                raise ExplorerError(f"{where}: data is not {length} bytes "
                                    f"in hex") from None
        else:
            data = self.blobs.get(meta["hash"], length, seq)
        base = node.vis
        if len(base) < off:
            base += bytes(off - len(base))
        tail = base[off + length:size]
        return b"".join((base[:off], data, tail,
                         bytes(size - off - length - len(tail))))

    def _entry(self, value, seq, where):
        if isinstance(value, dict) and len(value) == 1:
            (kind, v), = value.items()
            if kind == "d":
                return ("d", _ino(v, seq, where))
            if kind == "l" and isinstance(v, str) and "\0" not in v \
                    and _encodable(v):
                return ("l", v)
            raise ExplorerError(f"trace record seq={seq}: {where}: bad "
                                f"entry {value!r}")
        return _ino(value, seq, where)

    def _listing(self, d, seq, where):
        if not isinstance(d, dict):
            raise ExplorerError(f"trace record seq={seq}: {where} is not an "
                                f"object")
        for n in d:
            # each name becomes a file of a laid-out crash state
            if not isinstance(n, str) or not n or "/" in n or "\0" in n \
                    or n in (".", "..") or not _encodable(n):
                raise ExplorerError(f"trace record seq={seq}: {where}: bad "
                                    f"file name {n!r}")
        return {n: self._entry(v, seq, f"{where}.{n}") for n, v in d.items()}

    def _listings(self, snap, seq, init=False):
        """(root, {dino: listing}) of a snapshot: "dirs" (keyed by the
        directories' inodes, "root" naming WATCH's in the init record), or
        "dir", WATCH's regular files alone (the format before trees)."""
        if "dirs" in snap:
            if "dir" in snap:
                raise ExplorerError(f"trace record seq={seq}: snap has both "
                                    f"dir and dirs")
            dirs = snap["dirs"]
            if not isinstance(dirs, dict):
                raise ExplorerError(f"trace record seq={seq}: snap.dirs is "
                                    f"not an object")
            out = {_ino(k, seq, "snap.dirs"): self._listing(
                v, seq, f"snap.dirs.{k}") for k, v in dirs.items()}
            if init:
                root = _ino(snap.get("root"), seq, "snap.root")
                out.setdefault(root, {})
                return root, out
            if self.legacy:
                raise ExplorerError(f"trace record seq={seq}: snap.dirs in a "
                                    f"trace whose init record has snap.dir")
            return self.root, out
        if "dir" not in snap:
            return (LEGACY_ROOT, {LEGACY_ROOT: {}}) if init else (None, {})
        if not init and not self.legacy:
            raise ExplorerError(f"trace record seq={seq}: snap.dir in a "
                                f"trace whose init record has snap.dirs")
        listing = self._listing(snap["dir"], seq, "snap.dir")
        for n, e in listing.items():
            if not _is_file(e):
                raise ExplorerError(f"trace record seq={seq}: snap.dir.{n}: "
                                    f"bad inode number {e!r}")
        return LEGACY_ROOT, {LEGACY_ROOT: listing}

    def _node(self, ino):
        node = self.inodes.get(ino)
        if node is None:
            node = self.inodes[ino] = _Inode(ino, b"", born=True)
        return node

    def _set_visible(self, ino, data, size_call):
        node = self._node(ino)
        old = node.vis
        if data is old or data == old:
            return
        node.vis = data
        node.rev += 1
        self.gen += 1
        if len(data) < len(old):
            if self.durably_named(ino):
                node.truncated = True
            if len(data) < len(node.dimg) and (node.cut is None
                                               or len(data) < node.cut):
                node.cut = len(data)
            if self.ext4:
                self.ops.append(_SizeOp(ino, len(data)))
                if not data:
                    node.da_close = True
        elif len(data) > len(old) and size_call and self.ext4:
            self.ops.append(_SizeOp(ino, len(data)))
        # a block dropped by a failed sync counts again once rewritten
        for b, (then, _) in list(node.lost.items()):
            if b * BLOCK >= len(data) \
                    or data[b * BLOCK:(b + 1) * BLOCK] != then:
                del node.lost[b]

    def _moved_in(self, rec):
        """Whether REC moved something into the tree from outside it (a
        rename or link whose source lies outside WATCH)."""
        if rec.get("call") not in MOVE_CALLS or not self.watch:
            return False
        src = rec.get("path")
        return isinstance(src, str) and not _inside(src, self.watch)

    def snapshot(self, rec, size_call=False):
        snap = rec.get("snap")
        if snap is None:
            return
        seq = rec["seq"]
        if not isinstance(snap, dict):
            raise ExplorerError(f"trace record seq={seq}: snap is not an "
                                f"object")
        _, listings = self._listings(snap, seq)
        files = self._files(snap, seq)
        # a file first seen here, moved in from outside, that the program
        # never wrote: it was there before the run (crash-model.md: "Where
        # a run starts"), durable as it stands
        outside = self._moved_in(rec)
        for ino, data in files.items():
            if ino not in self.inodes and outside and ino not in self.touched:
                self.inodes[ino] = _Inode(ino, data, born=False)
                self.gen += 1
                continue
            if self.audit is not None and ino in self.inodes \
                    and data != self.inodes[ino].vis \
                    and not self._accounts_data(rec, ino):
                self._unseen(self.name_of(ino), "content", rec,
                             ("content", ino))
            self._set_visible(ino, data, size_call)
        if listings:
            self._names(rec, listings, outside)

    def _names(self, rec, listings, outside):
        changed = {}
        for dino, new in listings.items():
            old = self.vis.get(dino)
            if old is None:
                old = {}
                # a directory new to the trace: made by the program, its
                # entries durable only once it is synced; moved in from
                # outside, there before the run
                self.dur[dino] = dict(new) if outside else {}
            if old != new:
                changed[dino] = (old, new)
        if not changed:
            return
        before = self.dir_paths(self.vis)
        vis = dict(self.vis)
        vis.update(listings)
        after = self.dir_paths(vis)

        def path_before(dino, name):
            return before.get(dino, after.get(dino, "?/")) + name

        def path_after(dino, name):
            return after.get(dino, before.get(dino, "?/")) + name

        if self.audit is not None and not outside:
            acc = self._accounts_names(rec)
            for dino, (old, new) in changed.items():
                for n in sorted(set(old) | set(new)):
                    if old.get(n) != new.get(n) and (dino, n) not in acc:
                        self._unseen(path_after(dino, n) if n in new
                                     else path_before(dino, n), "name", rec,
                                     ("name", dino, n))
        named = {e for listing in self.vis.values() for e in listing.values()
                 if _is_file(e)}
        parts = _name_changes(changed, path_before, path_after,
                              named.__contains__)
        if self.ext4:
            actions = [a for dino in changed for a in parts[dino][0]]
            # an exchange (ext4_cross_rename) forces nothing out
            exchange = rec.get("call") == "renameat2" and \
                "RENAME_EXCHANGE" in (rec.get("flags") or ())
            for _, _, e, old in actions:
                # renaming a file over another forces its data out first
                if _is_file(e) and _is_file(old) and e != old \
                        and not exchange:
                    vis_e, _ = self._node(e).pending()
                    self.ops.append(_Flush(e, vis_e, "rename"))
            self.ops.append(_DirOp(None, actions,
                                   [c for dino in changed
                                    for c in parts[dino][1]]))
        else:
            for dino in changed:
                self.ops.append(_DirOp(dino, *parts[dino]))
        self.gen += 1
        self.vis = vis
        for dino in changed:
            for e in listings[dino].values():
                if _is_file(e) and e not in self.inodes:
                    durable = outside and e not in self.touched
                    self.inodes[e] = _Inode(e, b"", born=not durable)
        for path, e in self.tree(vis)[0].items():
            self.names[e] = path

    # -- what no call accounts for (unseen())

    def _unseen(self, path, what, rec, key):
        """Note a change no call of REC accounts for: KEY is
        ("name", dino, name) or ("content", ino), for excuse()."""
        n = rec.get("n")
        self.audit.append({"path": path, "what": what, "seq": rec["seq"],
                           "at": f"{rec['call']}#{n}" if "call" in rec
                           else "start", "key": key, "pid": rec.get("pid")})

    def excuse(self, rec):
        """Drop the unseen changes noted at earlier records of other
        processes that REC's call may have made: that call was in flight
        when their snapshot was taken, its record numbered after it."""
        pid = rec.get("pid")
        if not self.audit or not isinstance(pid, int):
            return
        names = None
        ino = self._target_ino(rec)
        keep = []
        for u in self.audit:
            if isinstance(u["pid"], int) and u["pid"] != pid:
                if u["key"][0] == "content":
                    if u["key"][1] == ino and (
                            rec.get("call") in DATA_CALLS
                            or rec.get("call") in OPEN_CALLS):
                        continue
                else:
                    if names is None:
                        names = self._accounts_names(rec)
                    if u["key"][1:] in names:
                        continue
            keep.append(u)
        self.audit = keep

    def settled(self):
        """The unseen changes noted, once per path and kind, in trace
        order, without excuse()'s keys."""
        out = []
        for u in self.audit:
            if not any(o["path"] == u["path"] and o["what"] == u["what"]
                       for o in out):
                out.append({k: u[k] for k in ("path", "what", "seq", "at")})
        return out

    def _accounts_data(self, rec, ino):
        """Whether REC's call may have changed the content of file INO:
        a call on it that changes data (a write, a copy into it, a
        truncating open), a file written through stdio (libc writes its
        buffer out when it likes) or through a shared mapping."""
        if ino in self.stdio_inos or ino in self.mapped_inos:
            return True
        name = rec.get("call")
        return self._rec_target == ino and (name in DATA_CALLS
                                            or name in OPEN_CALLS)

    def _accounts_names(self, rec):
        """{(dino, name)}: the names REC's call may have changed."""
        name, flags = rec.get("call"), rec.get("flags") or ()
        if name in OPEN_CALLS:
            paths = [rec.get("path")] if {"O_CREAT", "O_TRUNC"} & set(
                flags) else []
        elif name in ("rename", "renameat", "renameat2"):
            paths = [rec.get("path"), rec.get("path2")]
        elif name in ("link", "linkat"):
            paths = [rec.get("path2")]
        elif name in NAME_CALLS:
            paths = [rec.get("path")]
        else:
            paths = []
        out = set()
        for p in paths:
            rel = self._rel(p)
            if not rel:
                continue
            parent, base = os.path.split(rel)
            if not parent:
                out.add((self.root, base))
                continue
            e = self.lookup(self.vis, parent)
            if e is not None and not _is_file(e) and e[0] == "d":
                out.add((e[1], base))
        return out

    def on_disk(self, workdir, seq):
        """What the tree under WORKDIR holds that the replay's last view
        of it does not (or the other way round): the changes made after
        the last snapshot that showed them by calls no one saw."""
        out = []
        end = {"call": "exit", "seq": seq}
        files, dirs, links = self.tree(self.vis)
        seen_files, seen_dirs, seen_links = {}, set(), {}
        root = os.fspath(workdir)
        for base, subdirs, names in os.walk(root):
            rel = os.path.relpath(base, root)
            rel = "" if rel == "." else rel + "/"
            for d in list(subdirs):
                path = os.path.join(base, d)
                if os.path.islink(path):
                    subdirs.remove(d)
                    seen_links[rel + d] = os.readlink(path)
                else:
                    seen_dirs.add(rel + d)
            for n in names:
                path = os.path.join(base, n)
                if os.path.islink(path):
                    seen_links[rel + n] = os.readlink(path)
                elif os.path.isfile(path):
                    seen_files[rel + n] = path
        for p in sorted(set(files) ^ set(seen_files)) + sorted(
                set(dirs) ^ seen_dirs) + sorted(
                k for k in set(links) | set(seen_links)
                if links.get(k) != seen_links.get(k)):
            self._unseen_at_exit(out, p, "name", end)
        for p in sorted(set(files) & set(seen_files)):
            ino = files[p]
            if ino in self.stdio_inos or ino in self.mapped_inos:
                continue        # libc's flush at exit, stores to a map
            try:
                st = os.stat(seen_files[p])
                if st.st_ino != ino:
                    self._unseen_at_exit(out, p, "name", end)
                    continue
                with open(seen_files[p], "rb") as f:
                    data = f.read()
            except OSError:
                continue
            if data != self.inodes[ino].vis:
                self._unseen_at_exit(out, p, "content", end)
        return out

    def _unseen_at_exit(self, out, path, what, rec):
        if not any(u["path"] == path and u["what"] == what
                   for u in (self.audit or []) + out):
            out.append({"path": path, "what": what, "seq": rec["seq"],
                        "at": "exit"})

    # -- calls

    def _rel(self, path):
        """PATH relative to WATCH ("" for WATCH), or None outside it."""
        if not isinstance(path, str) or not self.watch:
            return None
        path, watch = os.path.normpath(path), os.path.normpath(self.watch)
        if path == watch:
            return ""
        if path.startswith(watch.rstrip("/") + "/"):
            return path[len(watch.rstrip("/")) + 1:]
        return None

    def _target_ino(self, rec):
        ino = rec.get("ino")
        if isinstance(ino, int) and not isinstance(ino, bool):
            return ino
        rel = self._rel(rec.get("path"))
        if rel:
            e = self.lookup(self.vis, rel)
            return e if _is_file(e) else None
        return None

    def _synced_dir(self, rec):
        """The directory (dino) an fsync of a directory synced, None when
        the call synced no directory of the tree, False when it was no
        directory at all."""
        rel = self._rel(rec.get("path"))
        if rec.get("dir") is not True and rel != "":
            return False
        if self.legacy:
            return self.root if rel is not None or rec.get("dir") else None
        ino = rec.get("ino")
        if type(ino) is int and (ino in self.vis or ino in self.dur):
            return ino
        if rel == "":
            return self.root
        if rel:
            e = self.lookup(self.vis, rel)
            if e is not None and not _is_file(e) and e[0] == "d":
                return e[1]
        return None

    def knows_clean(self, ino):
        """Whether the file INO is known and none of its blocks is lost:
        then a write to it that a later fsync snapshots whole (Moot)
        changes nothing that fsync leaves as it was."""
        node = self.inodes.get(ino)
        return node is not None and not node.lost

    def _apply_plain(self, args):
        """Replay a write _plain_args() read, if this world lets it take
        the short way: the file known, no lost block, not shrinking. True
        when done; False (nothing done) sends the record the general way,
        which gives the same result and words any error. What the general
        way would do comes down to the patch and the change counters."""
        ino, off, ret, size, text, h, seq = args
        node = self.inodes.get(ino)
        if node is None or node.lost or size < (
                len(node._vis) if node._buf is None else len(node._buf)):
            return False
        if text is not None:
            data = bytes.fromhex(text)
        else:
            data = self.blobs.get(h, ret, seq)
        if node.patch(off, data, size):
            node.rev += 1
            self.gen += 1
        return True

    def call(self, rec, plain=None):
        """Replay one call record; PLAIN is what _plain_args() read of it
        when the caller already asked (False: not a plain write, or this
        world would not take it)."""
        name = rec["call"]
        if name in WRITE_CALLS:
            if plain is None:
                plain = _plain_args(rec)
            if plain and self._apply_plain(plain):
                return
            if rec.get("thin"):
                raise ThinRecord(f"trace record seq={rec['seq']}: a thin "
                                 f"{name}, which says neither where it "
                                 f"wrote nor what")
        ret = rec.get("ret")
        ok = ret is None or (isinstance(ret, int) and ret >= 0)
        flags = set(rec.get("flags") or ())
        label = f"{name}#{rec['n']}" if isinstance(rec.get("n"), int) else name
        ino = self._target_ino(rec)
        before = self.inodes[ino].vis if ino in self.inodes else None
        if ino is not None and (name in DATA_CALLS or (
                name in OPEN_CALLS and flags & {"O_CREAT", "O_TRUNC"})):
            self.touched.add(ino)
        if ino is not None:
            if name in STDIO_CALLS or name in ("fopen", "fopen64"):
                self.stdio_inos.add(ino)
            elif name in MMAP_CALLS and "MAP_SHARED" in flags:
                self.mapped_inos.add(ino)
        self._rec_target = ino

        if name in OPEN_CALLS and ok and "O_TRUNC" in flags:
            self.snapshot(rec, size_call=True)
            ino = self._target_ino(rec)
            snapped = (rec.get("snap") or {}).get("files") or {}
            if ino is not None and str(ino) not in snapped \
                    and ino not in snapped:
                self._set_visible(ino, b"", True)   # O_TRUNC empties it
            return
        self.snapshot(rec, size_call=name in SIZE_CALLS)
        if ino is None:
            ino = self._target_ino(rec)
        node = self.inodes.get(ino) if ino is not None else None

        if name in FSYNC_CALLS:
            dino = self._synced_dir(rec)
            if dino is not False:
                if ok and dino is not None:
                    self._sync_dir(dino)
            elif ok:
                self._sync_file(node)
            elif node is not None and self._hard(rec):
                self._lose(node, 0, None, label)
        elif name == "msync":
            off, length = rec.get("off"), rec.get("len")
            if not isinstance(off, int) or not isinstance(length, int):
                off, length = 0, None
            end = None if length is None else off + length
            if ok and "MS_SYNC" in flags:
                # fdatasync of the range: with the size it needs
                self._sync_range(node, off, end, grow=True)
            elif not ok and node is not None and self._hard(rec):
                self._lose(node, off, end, label)
        elif name in SYNC_ALL_CALLS:
            if ok:
                self._sync_all()
        elif name in WRITE_CALLS or name in STDIO_CALLS or name in COPY_CALLS:
            self._wrote(rec, node, before, ok, flags)
        elif name in MMAP_CALLS:
            if ok and node is not None and "MAP_SHARED" in flags:
                node.mapped = True
                self.gen += 1
        if name in CLOSE_CALLS and node is not None and node.da_close \
                and self.ext4:
            self._da_flush(node)

    def _hard(self, rec):
        return bool(rec.get("fault")) or rec.get("errno") in HARD_ERRNOS

    def _wrote(self, rec, node, before, ok, flags):
        if node is None or not ok:
            return
        ret, off = rec.get("ret"), rec.get("off")
        ranged = (rec["call"] in WRITE_CALLS and isinstance(off, int)
                  and isinstance(ret, int) and ret > 0)
        if ranged:
            start, end = off, off + ret
            for b in [b for b in node.lost
                      if b * BLOCK < end and (b + 1) * BLOCK > start]:
                del node.lost[b]
                node.rev += 1
                self.gen += 1
        else:
            start, end = self._changed(before, node.vis)
        if rec["call"] in STDIO_CALLS and start is not None and node.fsynced:
            node.stdio_late = True
        if flags & SYNC_FLAGS:
            if start is not None:
                self._sync_range(node, start, end, grow=True)
        elif "O_DIRECT" in flags and rec["call"] in WRITE_CALLS:
            node.odirect = True
            self.gen += 1

    @staticmethod
    def _changed(before, after):
        """Byte range in which AFTER differs from BEFORE, or (None, None)."""
        if before is None or before == after:
            return None, None
        blocks = [b for b in range(_nblocks(max(len(before), len(after))))
                  if before[b * BLOCK:(b + 1) * BLOCK]
                  != after[b * BLOCK:(b + 1) * BLOCK]]
        return blocks[0] * BLOCK, min((blocks[-1] + 1) * BLOCK, len(after))

    # -- durability events

    def _commit(self, dino=None):
        """ext4: the journal commits; posix: directory DINO is synced
        (None: every directory)."""
        if self.ext4 or dino is None:
            images = {}
            for e in self.ops:
                if not isinstance(e, _DirOp):
                    images.setdefault(e.ino, self._node(e.ino).dimg)
                    e.apply(None, images)
            for ino, img in images.items():
                node = self.inodes[ino]
                if img != node.dimg:
                    node.dimg = img
                    node.rev += 1
            if self.ops or self.dur != self.vis:
                self.gen += 1
            self.ops = []
            self.dur = {d: dict(listing) for d, listing in self.vis.items()}
        else:
            ops = [e for e in self.ops if e.dino != dino]
            listing = self.vis.get(dino, {})
            if len(ops) != len(self.ops) or self.dur.get(dino) != listing:
                self.gen += 1
            self.ops = ops
            self.dur[dino] = dict(listing)
        self._dur_files = None

    def _sync_dir(self, dino):
        self._commit(dino)

    def _durable(self, node, data):
        node.dimg = data
        node.synced = True
        node.cut = None
        node.odirect = node.mapped = node.truncated = node.da_close = False
        node.stdio_late = False
        node.rev += 1
        self.gen += 1

    def _sync_file(self, node):
        if self.ext4:
            self._commit()      # one journal: any fsync commits it all
        if node is not None:
            vis, _ = node.pending()
            self._durable(node, vis)
            node.fsynced = True

    def _sync_range(self, node, start, end, grow):
        if self.ext4:
            self._commit()
        if node is None:
            return
        vis, _ = node.pending()
        if end is None or end > len(vis):
            end = len(vis)
        size = len(node.dimg)
        if grow and end > size:
            size = end
        img = bytearray(node.dimg[:size].ljust(size, b"\0"))
        stop = min(end, size)
        if start < stop:
            img[start:stop] = vis[start:stop]
        node.dimg = bytes(img)
        node.rev += 1
        self.gen += 1
        if node.dimg == vis:
            self._durable(node, vis)

    def _sync_all(self):
        self._commit(None)
        for node in self.inodes.values():
            vis, dirty = node.pending()
            if dirty or vis != node.dimg:
                self._durable(node, vis)

    def _lose(self, node, start, end, label):
        vis, dirty = node.pending()
        for b in dirty:
            if b * BLOCK + BLOCK > start and (end is None or b * BLOCK < end):
                node.lost[b] = (vis[b * BLOCK:(b + 1) * BLOCK], label)
        node.rev += 1
        self.gen += 1

    def _da_flush(self, node):
        vis, _ = node.pending()
        self.ops.append(_Flush(node.ino, vis, "close"))
        node.da_close = False
        self.gen += 1

    def exit(self):
        """The kernel closes what the program left open."""
        if self.ext4:
            for ino in sorted(self.inodes):
                if self.inodes[ino].da_close:
                    self._da_flush(self.inodes[ino])

    def name_of(self, ino):
        return self.names.get(ino, f"inode {ino}")


# ---------------------------------------------------------------- states

class _Space:
    """The crash states possible at one crash point (both models)."""

    def __init__(self, world, digests, sector=BLOCK):
        self.w = world
        self.dg = digests
        self.sector = sector
        self.ops = list(world.ops)
        self.m = len(self.ops)
        self.ext4 = world.ext4
        reach = set(world.tree(world.dur)[0].values())
        reach |= set(world.tree(world.vis)[0].values())
        for e in self.ops:
            reach |= e.inos if isinstance(e, _DirOp) else {e.ino}
        self.reach = sorted(reach)
        self.dirmaps = {}
        self.contents = {}
        # ext4: per inode, the images its journal entries produce, in order
        self.bases = {}
        self.trunc_last = {}
        minsize = {}
        if self.ext4:
            images = {}
            for idx, e in enumerate(self.ops):
                if isinstance(e, _DirOp):
                    continue
                node = world.inodes[e.ino]
                images.setdefault(e.ino, node.dimg)
                e.apply(None, images)
                self.bases.setdefault(e.ino, [(-1, node.dimg)]).append(
                    (idx, images[e.ino]))
                if isinstance(e, _SizeOp):
                    self.trunc_last[e.ino] = idx
                    minsize[e.ino] = min(minsize.get(e.ino, len(node.dimg)),
                                         e.size)
        # pending data: posix (ino, dirty, size_changed, cut: the size a
        # pending truncation leaves, or None);
        # ext4 (ino, overwrites, first appended block, appended blocks)
        self.files = []
        self.cut = {}           # posix: ino -> its durable bytes, truncated
        self.first = {}
        self.vis = {}           # ino -> visible bytes minus lost blocks
        self.dimg = {}          # ino -> durable bytes
        self.digs = {}          # (ids, blocks, size) -> digest
        for ino in self.reach:
            node = world.inodes[ino]
            vis, dirty = node.pending()
            self.vis[ino] = vis
            self.dimg[ino] = node.dimg
            if not self.ext4:
                sc = len(vis) != len(node.dimg)
                cut = node.cut if node.cut is not None \
                    and node.cut < len(node.dimg) else None
                if cut is not None:
                    # once the truncation persists, what it freed reads as
                    # zeros: a block written again after it is pending even
                    # where it holds what it held before (dd over a file
                    # with the same bytes)
                    dirty = tuple(sorted(set(dirty) | set(
                        range(cut // BLOCK, _nblocks(len(vis))))))
                if cut is not None:
                    self.cut[ino] = node.dimg[:cut]
                if dirty or sc or cut is not None:
                    self.files.append((ino, dirty, sc, cut))
                continue
            alloc = min(len(node.dimg), minsize.get(ino, len(node.dimg)))
            if len(vis) > alloc:
                first = alloc // BLOCK
                n_ext = _nblocks(len(vis)) - first
                ow = tuple(b for b in dirty if b < first)
            else:
                first, n_ext, ow = 0, 0, dirty
            if ow or n_ext:
                self.files.append((ino, ow, first, n_ext))
                self.first[ino] = first

    def trivial(self):
        return not self.m and not self.files

    # -- choices: (dir, data); dir is a tuple of op indices (posix) or a
    # prefix length (ext4); data a tuple of per-inode selections

    def _full(self, f):
        if self.ext4:
            return (f[0], f[1], f[3], None)
        return (f[0], f[1], f[2], f[3] is not None, None)

    def _none_dir(self):
        return 0 if self.ext4 else ()

    def _all_dir(self):
        return self.m if self.ext4 else tuple(range(self.m))

    def named(self):
        none, every = self._none_dir(), self._all_dir()
        full = tuple(self._full(f) for f in self.files)
        out = [(none, ()), (every, full)]
        if self.ext4:
            out += [(p, ()) for p in range(1, self.m + 1)]
        else:
            out += [((i,), ()) for i in range(self.m)]
            out.append((every, ()))
        for f in self.files:
            out += [(none, (self._full(f),)), (every, (self._full(f),))]
        for f in self.files:
            if self.ext4:
                ino, ow, _, n_ext = f
                for k in range(1, len(ow) + n_ext):
                    if k <= len(ow):
                        out.append((every, ((ino, ow[:k], 0, None),)))
                    else:
                        out.append((every, ((ino, ow, k - len(ow), None),)))
                continue
            ino, dirty, sc, cut = f
            t = cut is not None
            if t:
                # the truncation alone, and with the new size alone
                out.append((every, ((ino, (), False, True, None),)))
                if sc:
                    out.append((every, ((ino, (), True, True, None),)))
            if sc:
                out.append((every, ((ino, (), True, False, None),)))
            for k in range(1, len(dirty)):
                if sc or t:
                    out.append((every, ((ino, dirty[:k], True, t, None),)))
                out.append((every, ((ino, dirty[:k], False, t, None),)))
            if (sc or t) and dirty:
                out.append((every, ((ino, dirty, False, t, None),)))
        out += self._tears(every)
        return out

    def _tears(self, every):
        """With sectors smaller than a block: each pending file written in
        order and torn inside a block, its first k blocks new and block
        k+1 new for only its first j sectors (j < sectors per block)."""
        per = BLOCK // self.sector
        if per < 2:
            return []
        out = []
        for f in self.files:
            if self.ext4:
                ino, ow, first, n_ext = f
                order = list(ow) + list(range(first, first + n_ext))
                for i, b in enumerate(order):
                    k = max(0, i + 1 - len(ow))
                    for j in range(1, per):
                        out.append((every, ((ino, tuple(order[:i + 1])[:len(ow)],
                                             k, (b, j * self.sector)),)))
                continue
            ino, dirty, sc, cut = f
            for i, b in enumerate(dirty):
                for j in range(1, per):
                    out.append((every, ((ino, dirty[:i + 1], True,
                                         cut is not None,
                                         (b, j * self.sector)),)))
        return out

    def size(self):
        """How many choices there are (capped at 2**40)."""
        if self.ext4:
            n = self.m + 1
            for _, ow, _, n_ext in self.files:
                n *= (2 ** min(len(ow), 40)) * (n_ext + 1)
                if n > 2 ** 40:
                    return 2 ** 40
            return n
        bits = self.m + sum(len(d) + sc + (cut is not None)
                            for _, d, sc, cut in self.files)
        return 2 ** min(bits, 40)

    def every(self):
        """All choices, in a fixed order (only called when size() is small)."""
        if self.ext4:
            per = []
            for ino, ow, _, n_ext in self.files:
                per.append([(ino, tuple(b for j, b in enumerate(ow)
                                        if mask >> j & 1), k, None)
                            for mask in range(2 ** len(ow))
                            for k in range(n_ext + 1)])
            for p in range(self.m + 1):
                for combo in itertools.product(*per):
                    yield (p, tuple(s for s in combo if s[1] or s[2]))
            return
        bits = [("op", i) for i in range(self.m)]
        for ino, dirty, sc, cut in self.files:
            bits += [("blk", ino, b) for b in dirty]
            if sc:
                bits.append(("size", ino))
            if cut is not None:
                bits.append(("cut", ino))
        for mask in range(2 ** len(bits)):
            on = [bits[j] for j in range(len(bits)) if mask >> j & 1]
            yield self._from_bits(on)

    def _from_bits(self, on):
        ops = tuple(b[1] for b in on if b[0] == "op")
        data = []
        for ino, _, _, _ in self.files:
            blocks = tuple(b[2] for b in on if b[0] == "blk" and b[1] == ino)
            size = ("size", ino) in on
            cut = ("cut", ino) in on
            if blocks or size or cut:
                data.append((ino, blocks, size, cut, None))
        return (ops, tuple(data))

    def random(self, rng):
        if self.ext4:
            p = rng.randint(0, self.m)
            data = []
            for ino, ow, _, n_ext in self.files:
                sel = tuple(b for b in ow if rng.random() < 0.5)
                k = rng.randint(0, n_ext)
                if sel or k:
                    data.append((ino, sel, k, None))
            return (p, tuple(data))
        ops = tuple(i for i in range(self.m) if rng.random() < 0.5)
        data = []
        for ino, dirty, sc, cut in self.files:
            sel = tuple(b for b in dirty if rng.random() < 0.5)
            size = sc and rng.random() < 0.5
            trunc = cut is not None and rng.random() < 0.5
            if sel or size or trunc:
                data.append((ino, sel, size, trunc, None))
        return (ops, tuple(data))

    # -- building a state

    def _dirmap(self, sel):
        """The tree the name changes SEL leave: (listings, {path: file
        inode}, [directory path], {path: link})."""
        d = self.dirmaps.get(sel)
        if d is None:
            chosen = [self.ops[i] for i in (range(sel) if self.ext4 else sel)
                      if isinstance(self.ops[i], _DirOp)]
            dirs = dict(self.w.dur)
            for dino in {a[0] for e in chosen for a in e.actions}:
                dirs[dino] = dict(dirs.get(dino) or {})
            for e in chosen:
                e.apply(dirs, None)
            d = self.dirmaps[sel] = (dirs,) + self.w.tree(dirs)
        return d

    def _base(self, ino, p):
        """ext4: (index, image) of INO after journal prefix P."""
        chain = self.bases.get(ino)
        if not chain:
            return -1, self.dimg[ino]
        best = chain[0]
        for idx, img in chain:
            if idx < p:
                best = (idx, img)
        return best

    def _effective(self, ino, dsel, sel):
        """ext4: appended data cannot outlive a truncate that did not
        commit (its blocks were allocated after it)."""
        if self.ext4 and sel is not None and sel[2] \
                and dsel <= self.trunc_last.get(ino, -1):
            return (sel[0], sel[1], 0, sel[3]) if sel[1] else None
        return sel

    def _content(self, ino, dsel, sel):
        """(recipe, digest) of INO's content under choice (DSEL, SEL)."""
        sel = self._effective(ino, dsel, sel)
        if self.ext4:
            bidx, base = self._base(ino, dsel)
            key = (ino, bidx, sel)
        else:
            base = self.dimg[ino]
            key = (ino, sel)
        hit = self.contents.get(key)
        if hit is not None:
            return hit
        vis = self.vis[ino]
        if sel is None:
            recipe = _Recipe(base, vis, frozenset(), len(base))
        elif self.ext4:
            blocks = set(sel[1])
            size = len(base)
            if sel[2]:
                first = self.first[ino]
                blocks.update(range(first, first + sel[2]))
                size = max(size, min(len(vis), (first + sel[2]) * BLOCK))
            recipe = _Recipe(base, vis, frozenset(blocks), size, sel[3])
        else:
            if sel[3]:
                # the pending truncation persisted
                base = self.cut[ino]
            recipe = _Recipe(base, vis, frozenset(sel[1]),
                             len(vis) if sel[2] else len(base), sel[4])
        hit = self.contents[key] = (recipe, self.digest(recipe))
        return hit

    def digest(self, recipe):
        key = (id(recipe.base), id(recipe.vis), recipe.blocks, recipe.size,
               recipe.tear)
        d = self.digs.get(key)
        if d is None:
            d = self.digs[key] = recipe.digest(self.dg)
        return d

    def build(self, choice):
        """(tree, path -> (recipe, digest)) of a choice; tree as _dirmap
        gives it."""
        dsel, data = choice
        tree = self._dirmap(dsel)
        sels = {s[0]: s for s in data}
        files = {path: self._content(ino, dsel, sels.get(ino))
                 for path, ino in tree[1].items()}
        return tree, files

    # -- explaining a state

    def changes(self, choice, tree, files):
        dsel, data = choice
        w = self.w
        here = {}
        for path, ino in tree[1].items():
            here.setdefault(ino, path)

        def name_of(ino):
            return here.get(ino) or w.name_of(ino)

        persisted, lost = [], []
        chosen = set(range(dsel)) if self.ext4 else set(dsel)
        for i, e in enumerate(self.ops):
            (persisted if i in chosen else lost).extend(e.describe(name_of))
        sels = {s[0]: s for s in data}
        for f in self.files:
            ino = f[0]
            if ino not in here:
                continue        # no name reaches it: its data is moot
            node = w.inodes[ino]
            name = name_of(ino)
            vis = self.vis[ino]
            if files[name][1] == self.digest(
                    _Recipe(vis, vis, frozenset(), len(vis))):
                persisted.append(Change("data", name))
                continue
            sel = self._effective(ino, dsel, sels.get(ino))
            if self.ext4:
                _, ow, first, n_ext = f
                pending = list(ow) + list(range(first, first + n_ext))
                done = [] if sel is None else (
                    list(sel[1]) + list(range(first, first + sel[2])))
                size_pending = size_done = False
            else:
                _, dirty, sc, cut = f
                pending = list(dirty)
                done = [] if sel is None else list(sel[1])
                size_pending, size_done = sc, bool(sel and sel[2])
                if cut is not None:
                    (persisted if sel and sel[3] else lost).append(
                        Change("truncate", name, str(cut)))
            sizes = f"{len(self.dimg[ino])} -> {len(self.vis[ino])}"
            if sel is None:
                lost.append(Change("data", name, "" if node.synced
                                   else "never fsynced"))
                continue
            tear = sel[3] if self.ext4 else sel[4]
            done_set = set(done)
            rest = [b for b in pending if b not in done_set]
            if tear is not None and tear[0] in done_set:
                done = [b for b in done if b != tear[0]]
                persisted.append(Change("torn", name,
                                        f"{tear[0]} {tear[1]}"))
            elif not rest and size_done == size_pending:
                persisted.append(Change("data", name))
                continue
            if done:
                persisted.append(Change("blocks", name, _ranges(done)))
            if rest:
                lost.append(Change("blocks", name, _ranges(rest)))
            if size_pending:
                (persisted if size_done else lost).append(
                    Change("size", name, sizes))
        for ino in self.reach:
            node = w.inodes[ino]
            if node.lost and ino in here:
                by = {}
                for b, (_, label) in sorted(node.lost.items()):
                    by.setdefault(label, []).append(b)
                for label, blocks in by.items():
                    what = "block" if len(blocks) == 1 else "blocks"
                    lost.append(Change("sync-failure", name_of(ino),
                                       f"{label} dropped {what} "
                                       f"{_ranges(blocks)}"))
        return persisted, lost


_PERSISTED = {
    "create": "the creation of '{n}' persisted",
    "link": "the link '{n}' persisted",
    "replace": "the new entry '{n}' persisted",
    "rename": "the rename '{d}' -> '{n}' persisted",
    "unlink": "the unlink of '{n}' persisted",
    "mkdir": "the creation of directory '{n}' persisted",
    "rmdir": "the removal of directory '{n}' persisted",
    "symlink": "the symbolic link '{n}' persisted",
    "move-in": "'{d}' moved to '{n}': the new name persisted",
    "move-out": "'{n}' moved to '{d}': the old name's removal persisted",
    "truncate": "the truncation of '{n}' to {d} bytes committed",
    "flush": "'{n}' data was forced out at the {d} (auto_da_alloc)",
    "data": "'{n}' data reached the disk",
    "blocks": "blocks {d} of '{n}' reached the disk",
    "size": "the size of '{n}' changed ({d} bytes)",
    "torn": "block {b} of '{n}' reached the disk torn: its first {k} bytes "
            "new, the rest not",
}
_LOST = {
    "create": "the creation of '{n}' did not persist",
    "link": "the link '{n}' did not persist",
    "replace": "the new entry '{n}' did not persist",
    "rename": "the rename '{d}' -> '{n}' did not persist",
    "unlink": "the unlink of '{n}' did not persist",
    "mkdir": "the creation of directory '{n}' did not persist",
    "rmdir": "the removal of directory '{n}' did not persist",
    "symlink": "the symbolic link '{n}' did not persist",
    "move-in": "'{d}' moved to '{n}': the new name did not persist",
    "move-out": "'{n}' moved to '{d}': the old name's removal did not "
                "persist",
    "truncate": "the truncation of '{n}' to {d} bytes did not commit",
    "flush": "the forced write-out of '{n}' at the {d} did not happen",
    "blocks": "blocks {d} of '{n}' did not reach the disk",
    "size": "the size change of '{n}' ({d} bytes) did not persist",
    "sync-failure": "'{n}': the failed {d}, which no later sync can "
                    "make durable",
}


def _phrase(c, persisted):
    if c.kind == "data" and not persisted:
        return (f"'{c.name}' data was never fsynced" if c.detail
                else f"'{c.name}' data written since its last sync did not "
                     f"reach the disk")
    text = (_PERSISTED if persisted else _LOST)[c.kind]
    if c.kind == "blocks" and c.detail.isdigit():
        text = text.replace("blocks", "block", 1)
    if c.kind == "torn":
        b, k = c.detail.split()
        return text.format(n=c.name, b=b, k=k)
    return text.format(n=c.name, d=c.detail)


def _why(persisted, lost, limit=8):
    if not persisted and not lost:
        return "nothing was pending: the durable state"
    # A name's creation that did not persist, when a rename that did
    # persist took that name away, changed nothing the disk holds: the
    # file is there under its new name. Said, it reads as a contradiction
    # ("the rename persisted; the creation did not").
    moved = {c.detail for c in persisted if c.kind == "rename"}
    lost = [c for c in lost if not (c.kind == "create" and c.name in moved)]
    parts = [_phrase(c, True) for c in persisted]
    parts += [_phrase(c, False) for c in lost]
    if not lost:
        # (a state torn by the program itself, mid-rewrite, lost nothing)
        parts.append("every change made until then persisted")
    if len(parts) > limit:
        parts = parts[:limit] + [f"and {len(parts) - limit} more"]
    return "; ".join(parts)


def _rule(w, space, tree, files, target):
    """The rule a state shows broken, from the history of its target
    ("" for a tree, which has none: its checker judges it)."""
    if target is None:
        return ""
    vino = w.lookup(w.vis, target)
    sino = tree[1].get(target)
    if sino is None:
        if vino is None or tree[3].get(target) is not None \
                or target in tree[2]:
            return ""
        # the target's removal persisted without its replacement
        if w.lookup(w.dur, target) is not None:
            return RULE_ONE_RENAME
        return RULE_FSYNC_DIR_CREATE
    node = w.inodes[sino]
    shown = files[target][1]
    if shown != space.digest(_Recipe(node.vis, node.vis, frozenset(),
                                     len(node.vis))):
        if node.lost:
            labels = {label for _, label in node.lost.values()}
            if all(label.startswith("msync") for label in labels):
                return RULE_MSYNC
            return RULE_FSYNC_FAILED
        if node.odirect:
            return RULE_O_DIRECT
        if node.mapped:
            return RULE_MSYNC
        if node.stdio_late:
            return RULE_FFLUSH
        if node.truncated:
            return RULE_IN_PLACE
        if node.born:
            return RULE_FSYNC_BEFORE_RENAME
        return RULE_FSYNC_FILE
    if sino != vino:
        return RULE_FSYNC_DIR
    return ""


class _Builder:
    """Crash states per crash point, reused while nothing changes."""

    def __init__(self, world, target, cap, seed, sector=BLOCK):
        self.w = world
        self.sector = sector
        self.dg = _Digests()
        self.target = target
        self.cap = cap
        self.seed = seed
        self.last = None        # (world.gen, states)
        self.first = None       # (world.gen, index of its first point)

    def states(self, index):
        if self.last is not None and self.last[0] == self.w.gen:
            # same states; fresh objects, as callers annotate them
            return [s.copy() for s in self.last[1]]
        self.skip(index)
        states = self._build(random.Random(self.seed * 1000003 + self.first[1]))
        self.last = (self.w.gen, states)
        return states

    def skip(self, index):
        """Note a point whose states are not wanted. Its states, had they
        been built, would have been drawn with its index, and reused by the
        points after it until the world changes: a later point built at
        the same world.gen must draw with that same index."""
        if self.first is None or self.first[0] != self.w.gen:
            self.first = (self.w.gen, index)

    def _build(self, rng):
        space = _Space(self.w, self.dg, self.sector)
        if space.trivial():
            return [self._state(space, (space._none_dir(), ()), 1, set())]
        cap = self.cap
        named = space.named()
        if len(named) > cap:
            # keep the durable and the everything state, sample the rest
            pick = sorted(rng.sample(range(2, len(named)), max(cap - 2, 0)))
            named = named[:min(cap, 2)] + [named[i] for i in pick]
        out, keys, tried = [], set(), set()

        def add(choice):
            if choice in tried:
                return
            tried.add(choice)
            st = self._state(space, choice, len(out) + 1, keys)
            if st is not None:
                out.append(st)

        for c in named:
            add(c)
            if len(out) >= cap:
                return out
        if space.size() <= 4 * cap:
            for c in space.every():
                add(c)
                if len(out) >= cap:
                    break
        else:
            for _ in range(8 * cap):
                add(space.random(rng))
                if len(out) >= cap:
                    break
        return out

    def _state(self, space, choice, n, keys):
        """The state CHOICE gives, or None when KEYS already has it."""
        tree, files = space.build(choice)
        _, _, dirs, links = tree
        key = tuple((path, d) for path, (_, d) in files.items())
        if dirs or links:
            # a directory as its path with a slash, a link as what it holds
            key += tuple((path + "/", b"") for path in dirs)
            key += tuple((path, b"->" + os.fsencode(t))
                         for path, t in sorted(links.items()))
        if key in keys:
            return None
        keys.add(key)
        persisted, lost = space.changes(choice, tree, files)
        return CrashState(f"state {n}",
                          {path: r for path, (r, _) in files.items()},
                          self.target, _why(persisted, lost),
                          _rule(self.w, space, tree, files, self.target),
                          persisted, lost, key, dirs, links)
