"""Power-loss crash states from a recorded trace.

The recorder (faults/libcrashcheck.so) writes, after every intercepted call,
what a read would see: the WATCH directory's names and the content of every
file the call touched -- whole, or for a write only the range it wrote,
which the replay lays over the content it last knew (docs/design.md,
"Trace: JSON lines").  It cannot see the disk.  This module replays the trace
against a model of what the storage stack is allowed to have kept, and at
every crash point builds the directories a power cut could leave behind, as
docs/crash-model.md defines them.  The oracle judges each one.

Two models, chosen per run:

posix (the weakest, the default)
    Only the events of crash-model.md's table make anything durable.  Every
    other change is independent of every other: each dirty 4096-byte block of
    a file old or new, its size old or new, each directory change since the
    last fsync of the directory persisted or not.  A persisted name of a file
    whose data is not durable shows the file's durable content: empty for a
    file that was never synced.

ext4-ordered (data=ordered, delalloc, auto_da_alloc)
    Metadata (create, rename, unlink, link, truncate) goes through one journal
    and a crash keeps a prefix of it; a successful fsync, fdatasync, msync,
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
# the flags of a write that _plain_args lets take the short way
_PLAIN = frozenset(("O_APPEND",))
# errors that mean the device refused the data, not a bad argument
HARD_ERRNOS = frozenset((5, 28, 122))   # EIO, ENOSPC, EDQUOT


class ExplorerError(_Base):
    """A trace or snapshot the explorer cannot use; str() is one line."""


class ThinRecord(ExplorerError):
    """A thin write (faults/preload.c, CRASHCHECK_TRACE_FULL) the replay
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
    """One directory a power cut could leave behind.

    files and target are built from the state's recipe on every access
    and not kept: a sweep over a 4 MiB file holds thousands of states, and
    only the one being judged needs its bytes.  key is the state's
    identity, (name, content digest) pairs: equal keys, equal files.
    """

    def __init__(self, label, recipes, target_name, why, rule, persisted,
                 lost, key):
        self.label = label              # "state 3", 1-based within its point
        self.why = why                  # what persisted and what did not
        self.rule = rule                # the rule it shows broken, or ""
        self.persisted = persisted      # [Change]
        self.lost = lost                # [Change]
        self.key = key                  # ((name, 16-byte digest), ...)
        self._recipes = recipes         # name -> _Recipe
        self._target = target_name

    @property
    def files(self):
        """name -> bytes: the WATCH directory's regular files."""
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
                          self.rule, self.persisted, self.lost, self.key)

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
            blob_cache: dict | None = None) -> list:
    """Crash points of a parsed trace under MODEL, each with its states.

    snapdir is the snapshot directory (content at SNAPDIR/<hash>), or a
    callable hash -> bytes; content= is the same callable, for tests.
    exit_ok says the program exited 0, which makes the after-exit point
    claimed. only_exit returns the after-exit point alone, with the same
    states as in the full list (explore_exit()). blob_cache, a dict, keeps
    the snapshot contents read for another call on the same snapshots.
    """
    _check_model(model)
    if only_exit:
        return [explore_exit(records, snapdir, (model,), target_name, cap,
                             seed, content=content, exit_ok=exit_ok,
                             blob_cache=blob_cache)[model]]
    blobs, recs = _setup(records, snapdir, content, cap, seed, blob_cache)
    init = recs[0]
    world = _World(model, blobs, init)
    builder = _Builder(world, target_name, cap, seed)
    points = [CrashPoint("before first call", init["seq"], False,
                         builder.states(0), None)]
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
                                 builder.states(len(points)), rec))
    world.exit()
    points.append(CrashPoint("after exit", recs[-1]["seq"] + 1, bool(exit_ok),
                             builder.states(len(points)), None))
    return points


def explore_exit(records: Iterable[dict], snapdir=None, models=MODELS,
                 target_name: str = "target", cap: int = DEFAULT_CAP,
                 seed: int = 0, *, content: Callable[[str], bytes] | None = None,
                 exit_ok: bool = False, blob_cache: dict | None = None,
                 moot_full: bool = True) -> dict:
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
    blobs, recs = _setup(records, snapdir, content, cap, seed, blob_cache)
    worlds = [_World(model, blobs, recs[0]) for model in models]
    builders = [_Builder(w, target_name, cap, seed) for w in worlds]
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


def _setup(records, snapdir, content, cap, seed, blob_cache):
    """(blobs, records in seq order) for an exploration; checks the
    arguments they come from."""
    if not isinstance(cap, int) or isinstance(cap, bool) or cap < 1:
        raise ExplorerError(f"cap must be a positive integer, not {cap!r}")
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
        return {name: world.inodes[ino].vis
                for name, ino in sorted(world.vis_dir.items())}

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


def layout(state: CrashState, directory) -> list:
    """Write STATE's files into DIRECTORY (absent or empty); return paths."""
    directory = os.fspath(directory)
    os.makedirs(directory, exist_ok=True)
    if os.listdir(directory):
        raise ExplorerError(f"layout: '{directory}' is not empty")
    paths = []
    for name, data in sorted(state.files.items()):
        if not name or "/" in name or name in (".", ".."):
            raise ExplorerError(f"layout: bad file name {name!r}")
        path = os.path.join(directory, name)
        with open(path, "wb") as f:
            f.write(data)
        paths.append(path)
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
    from VIS (each as far as VIS reaches), cut or zero-extended to SIZE."""

    __slots__ = ("base", "vis", "blocks", "size")

    def __init__(self, base, vis, blocks, size):
        self.base = base
        self.vis = vis
        self.blocks = blocks        # frozenset of block indices
        self.size = size

    def build(self):
        base, size = self.base, self.size
        if not self.blocks:
            if size == len(base):
                return base
            return base[:size].ljust(size, b"\0")
        img = bytearray(base)
        for b in sorted(self.blocks):
            s, e = b * BLOCK, min(b * BLOCK + BLOCK, len(self.vis))
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
            seg = self.vis[lo:min(lo + BLOCK, len(self.vis), hi)]
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
        for j in blocks:
            if j < full:
                out[j] = vd[j] if j < len(vd) else _h(
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
                 "da_close", "rev", "_cache")

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

class _DirOp:
    """One directory change; a rename over a name is one atomic change."""

    __slots__ = ("kind", "name", "ino", "src", "replaced")

    def __init__(self, kind, name, ino, src=None, replaced=None):
        self.kind = kind          # create link replace rename unlink
        self.name = name
        self.ino = ino
        self.src = src            # rename: the old name
        self.replaced = replaced  # inode the name held before, if any

    def apply(self, dirmap, images):
        if self.kind == "unlink":
            if dirmap.get(self.name) == self.ino:
                del dirmap[self.name]
            return
        if self.kind == "rename" and dirmap.get(self.src) == self.ino:
            del dirmap[self.src]
        dirmap[self.name] = self.ino

    def change(self, names):
        return Change(self.kind, self.name, self.src or "")


class _SizeOp:
    """ext4: a size change through the journal (truncate, fallocate)."""

    __slots__ = ("ino", "size")

    def __init__(self, ino, size):
        self.ino = ino
        self.size = size

    def apply(self, dirmap, images):
        img = images[self.ino]
        images[self.ino] = (img[:self.size] if len(img) >= self.size
                            else img + bytes(self.size - len(img)))

    def change(self, names):
        return Change("truncate", names(self.ino), str(self.size))


class _Flush:
    """ext4 auto_da_alloc: the file's data forced out at this point."""

    __slots__ = ("ino", "content", "why")

    def __init__(self, ino, content, why):
        self.ino = ino
        self.content = content
        self.why = why            # "rename" or "close"

    def apply(self, dirmap, images):
        images[self.ino] = self.content

    def change(self, names):
        return Change("flush", names(self.ino), self.why)


def _dir_ops(old, new):
    """The changes that turn directory OLD into NEW, renames paired."""
    gone = {n: i for n, i in old.items() if new.get(n) != i}
    added = sorted((n, i) for n, i in new.items() if old.get(n) != i)
    sources = {}
    for n, i in sorted(gone.items()):
        sources.setdefault(i, []).append(n)
    old_inodes = set(old.values())
    ops = []
    for n, i in added:
        if sources.get(i):
            src = sources[i].pop(0)
            del gone[src]
            ops.append(_DirOp("rename", n, i, src, old.get(n)))
        elif n in old:
            ops.append(_DirOp("replace", n, i, None, old[n]))
        else:
            ops.append(_DirOp("link" if i in old_inodes else "create", n, i))
    for n, i in sorted(gone.items()):
        if n not in new:
            ops.append(_DirOp("unlink", n, i))
    return ops


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


class _World:
    """Visible and durable state of WATCH, advanced one record at a time."""

    def __init__(self, model, blobs, init):
        self.ext4 = model == "ext4-ordered"
        self.blobs = blobs
        self.watch = init.get("watch")
        self.inodes = {}
        self.names = {}         # inode -> last name it was seen under
        self.ops = []           # posix: dir changes; ext4: the journal
        self.gen = 0            # bumped on every change; equal = same states
        seq = init["seq"]
        snap = init["snap"]
        files = self._files(snap, seq, ranges=False)
        self.vis_dir = self._dir(snap, seq) if "dir" in snap else {}
        for ino, data in files.items():
            self.inodes[ino] = _Inode(ino, data, born=False)
        for name, ino in sorted(self.vis_dir.items()):
            if ino not in self.inodes:
                self.inodes[ino] = _Inode(ino, b"", born=False)
            self.names.setdefault(ino, name)
        self.dur_dir = dict(self.vis_dir)   # the harness synced the setup

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

    def _dir(self, snap, seq):
        d = snap["dir"]
        if not isinstance(d, dict):
            raise ExplorerError(f"trace record seq={seq}: snap.dir is not an "
                                f"object")
        for n in d:
            # each name becomes a file of a laid-out crash state
            if not isinstance(n, str) or not n or "/" in n or "\0" in n \
                    or n in (".", "..") or not _encodable(n):
                raise ExplorerError(f"trace record seq={seq}: snap.dir: bad "
                                    f"file name {n!r}")
        return {n: _ino(i, seq, f"snap.dir.{n}") for n, i in d.items()}

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
            if ino in self.dur_dir.values():
                node.truncated = True
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

    def snapshot(self, rec, size_call=False):
        snap = rec.get("snap")
        if snap is None:
            return
        seq = rec["seq"]
        if not isinstance(snap, dict):
            raise ExplorerError(f"trace record seq={seq}: snap is not an "
                                f"object")
        for ino, data in self._files(snap, seq).items():
            self._set_visible(ino, data, size_call)
        if "dir" not in snap:
            return
        new = self._dir(snap, seq)
        for op in _dir_ops(self.vis_dir, new):
            if self.ext4 and op.replaced is not None and op.kind in (
                    "rename", "replace"):
                vis, _ = self._node(op.ino).pending()
                self.ops.append(_Flush(op.ino, vis, "rename"))
            self.ops.append(op)
            self.gen += 1
        for name, ino in sorted(new.items()):
            self._node(ino)
            self.names[ino] = name
        self.vis_dir = new

    # -- calls

    def _target_ino(self, rec):
        ino = rec.get("ino")
        if isinstance(ino, int) and not isinstance(ino, bool):
            return ino
        path = rec.get("path")
        if isinstance(path, str) and self.watch:
            d, base = os.path.split(path)
            if os.path.normpath(d) == os.path.normpath(self.watch):
                return self.vis_dir.get(base)
        return None

    def _is_dir(self, rec):
        if rec.get("dir") is True:
            return True
        path = rec.get("path")
        return (isinstance(path, str) and bool(self.watch)
                and os.path.normpath(path) == os.path.normpath(self.watch))

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
            if self._is_dir(rec):
                if ok:
                    self._sync_dir()
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
        elif name in WRITE_CALLS or name in STDIO_CALLS:
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
        if flags & {"O_SYNC", "O_DSYNC"}:
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

    def _commit(self):
        """ext4: the journal commits; posix: the directory is synced."""
        if self.ext4:
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
        if self.ops or self.dur_dir != self.vis_dir:
            self.gen += 1
        self.ops = []
        self.dur_dir = dict(self.vis_dir)

    def _sync_dir(self):
        self._commit()

    def _durable(self, node, data):
        node.dimg = data
        node.synced = True
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
        self._commit()
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

    def __init__(self, world, digests):
        self.w = world
        self.dg = digests
        self.ops = list(world.ops)
        self.m = len(self.ops)
        self.ext4 = world.ext4
        reach = set(world.dur_dir.values()) | set(world.vis_dir.values())
        reach |= {e.ino for e in self.ops}
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
        # pending data: posix (ino, dirty, size_changed);
        # ext4 (ino, overwrites, first appended block, appended blocks)
        self.files = []
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
                if dirty or sc:
                    self.files.append((ino, dirty, sc))
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
            return (f[0], f[1], f[3])
        return (f[0], f[1], f[2])

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
                        out.append((every, ((ino, ow[:k], 0),)))
                    else:
                        out.append((every, ((ino, ow, k - len(ow)),)))
                continue
            ino, dirty, sc = f
            if sc:
                out.append((every, ((ino, (), True),)))
            for k in range(1, len(dirty)):
                if sc:
                    out.append((every, ((ino, dirty[:k], True),)))
                out.append((every, ((ino, dirty[:k], False),)))
            if sc and dirty:
                out.append((every, ((ino, dirty, False),)))
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
        bits = self.m + sum(len(d) + sc for _, d, sc in self.files)
        return 2 ** min(bits, 40)

    def every(self):
        """All choices, in a fixed order (only called when size() is small)."""
        if self.ext4:
            per = []
            for ino, ow, _, n_ext in self.files:
                per.append([(ino, tuple(b for j, b in enumerate(ow)
                                        if mask >> j & 1), k)
                            for mask in range(2 ** len(ow))
                            for k in range(n_ext + 1)])
            for p in range(self.m + 1):
                for combo in itertools.product(*per):
                    yield (p, tuple(s for s in combo if s[1] or s[2]))
            return
        bits = [("op", i) for i in range(self.m)]
        for ino, dirty, sc in self.files:
            bits += [("blk", ino, b) for b in dirty]
            if sc:
                bits.append(("size", ino))
        for mask in range(2 ** len(bits)):
            on = [bits[j] for j in range(len(bits)) if mask >> j & 1]
            yield self._from_bits(on)

    def _from_bits(self, on):
        ops = tuple(b[1] for b in on if b[0] == "op")
        data = []
        for ino, _, _ in self.files:
            blocks = tuple(b[2] for b in on if b[0] == "blk" and b[1] == ino)
            size = ("size", ino) in on
            if blocks or size:
                data.append((ino, blocks, size))
        return (ops, tuple(data))

    def random(self, rng):
        if self.ext4:
            p = rng.randint(0, self.m)
            data = []
            for ino, ow, _, n_ext in self.files:
                sel = tuple(b for b in ow if rng.random() < 0.5)
                k = rng.randint(0, n_ext)
                if sel or k:
                    data.append((ino, sel, k))
            return (p, tuple(data))
        ops = tuple(i for i in range(self.m) if rng.random() < 0.5)
        data = []
        for ino, dirty, sc in self.files:
            sel = tuple(b for b in dirty if rng.random() < 0.5)
            size = sc and rng.random() < 0.5
            if sel or size:
                data.append((ino, sel, size))
        return (ops, tuple(data))

    # -- building a state

    def _dirmap(self, sel):
        d = self.dirmaps.get(sel)
        if d is None:
            d = dict(self.w.dur_dir)
            for i in (range(sel) if self.ext4 else sel):
                e = self.ops[i]
                if isinstance(e, _DirOp):
                    e.apply(d, None)
            self.dirmaps[sel] = d
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
            return (sel[0], sel[1], 0) if sel[1] else None
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
            recipe = _Recipe(base, vis, frozenset(blocks), size)
        else:
            recipe = _Recipe(base, vis, frozenset(sel[1]),
                             len(vis) if sel[2] else len(base))
        hit = self.contents[key] = (recipe, self.digest(recipe))
        return hit

    def digest(self, recipe):
        key = (id(recipe.base), id(recipe.vis), recipe.blocks, recipe.size)
        d = self.digs.get(key)
        if d is None:
            d = self.digs[key] = recipe.digest(self.dg)
        return d

    def build(self, choice):
        """(dirmap, name -> (recipe, digest)) of a choice."""
        dsel, data = choice
        dirmap = self._dirmap(dsel)
        sels = {s[0]: s for s in data}
        files = {name: self._content(ino, dsel, sels.get(ino))
                 for name, ino in sorted(dirmap.items())}
        return dirmap, files

    # -- explaining a state

    def changes(self, choice, dirmap, files):
        dsel, data = choice
        w = self.w
        here = {}
        for name, ino in sorted(dirmap.items()):
            here.setdefault(ino, name)

        def name_of(ino):
            return here.get(ino) or w.name_of(ino)

        persisted, lost = [], []
        chosen = set(range(dsel)) if self.ext4 else set(dsel)
        for i, e in enumerate(self.ops):
            (persisted if i in chosen else lost).append(e.change(name_of))
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
                _, dirty, sc = f
                pending = list(dirty)
                done = [] if sel is None else list(sel[1])
                size_pending, size_done = sc, bool(sel and sel[2])
            sizes = f"{len(self.dimg[ino])} -> {len(self.vis[ino])}"
            if sel is None:
                lost.append(Change("data", name, "" if node.synced
                                   else "never fsynced"))
                continue
            done_set = set(done)
            rest = [b for b in pending if b not in done_set]
            if not rest and size_done == size_pending:
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
    "truncate": "the truncation of '{n}' to {d} bytes committed",
    "flush": "'{n}' data was forced out at the {d} (auto_da_alloc)",
    "data": "'{n}' data reached the disk",
    "blocks": "blocks {d} of '{n}' reached the disk",
    "size": "the size of '{n}' changed ({d} bytes)",
}
_LOST = {
    "create": "the creation of '{n}' did not persist",
    "link": "the link '{n}' did not persist",
    "replace": "the new entry '{n}' did not persist",
    "rename": "the rename '{d}' -> '{n}' did not persist",
    "unlink": "the unlink of '{n}' did not persist",
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
    return text.format(n=c.name, d=c.detail)


def _why(persisted, lost, limit=8):
    if not persisted and not lost:
        return "nothing was pending: the durable state"
    parts = [_phrase(c, True) for c in persisted]
    parts += [_phrase(c, False) for c in lost]
    if not lost:
        parts.append("nothing was lost")
    if len(parts) > limit:
        parts = parts[:limit] + [f"and {len(parts) - limit} more"]
    return "; ".join(parts)


def _rule(w, space, dirmap, files, target):
    """The rule a state shows broken, from the history of its target."""
    vino = w.vis_dir.get(target)
    sino = dirmap.get(target)
    if sino is None:
        if vino is None:
            return ""
        # the target's removal persisted without its replacement
        if target in w.dur_dir:
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

    def __init__(self, world, target, cap, seed):
        self.w = world
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
        space = _Space(self.w, self.dg)
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
        dirmap, files = space.build(choice)
        key = tuple((name, d) for name, (_, d) in files.items())
        if key in keys:
            return None
        keys.add(key)
        persisted, lost = space.changes(choice, dirmap, files)
        return CrashState(f"state {n}",
                          {name: r for name, (r, _) in files.items()},
                          self.target, _why(persisted, lost),
                          _rule(self.w, space, dirmap, files, self.target),
                          persisted, lost, key)
