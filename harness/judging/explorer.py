"""Power-loss crash states from a recorded trace.

The recorder (faults/libcrashcheck.so) writes, after every intercepted call,
what a read would see: the listings of the directories under WATCH the call
changed, by inode, and the content of every file the call touched -- whole,
or for a write only the range it wrote, which the replay lays over the
content it last knew (docs/design.md, "Trace: JSON lines").  It cannot see
the disk.  This module replays the trace against a crash model -- what one
storage stack is allowed to have kept -- and at every crash point builds
the directories a power cut could leave behind, as docs/crash-model.md
defines them.  The oracle judges each one.

The models are harness/judging/models/, one module each: posix (the
weakest, the default with ext4-ordered), ext4-ordered, ext4-writeback,
ext4-journal, xfs and btrfs.  Each states its policies (models/base.py):
how metadata reaches the disk (each directory on its own, or one ordered
log of which a crash keeps a prefix), what a sync commits, how data is
ordered with the metadata that exposes it (never, appended in file order
behind it, or in the log with it), which replacement patterns force data
out first, whether a block tears by sectors, and what a read sees after
a failed fsync.  The replay and the state space consult those policies,
never a model's name.  In every model a failed fsync, fdatasync or msync
drops the dirty blocks it covered from the write-back queue: they keep
their durable value in every crash state, even after a later successful
sync, until the program writes them again.

The parts are harness/judging/powerloss/: records (the trace as read),
replay (the world, one record at a time), journal (the changes pending),
space (the states of one point, their words), membership (whether a
tree is one of them), unseen (changes no call accounts for).

Crash points are: before the first call, after each call record (in seq
order, any process), and after the program exits.  A crash point whose
pending set is empty has exactly one state.  Otherwise the states are, in
this order: the durable state; everything persisted; each pending directory
change alone (under a journal: each prefix of it); all names with no data;
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

admits() answers the other question, exactly and without a cap: is this
tree one of the states a model allows at a crash point, and if not, what
no state of it can hold.

    points = explore(records, snapdir, "posix", "target", exit_ok=True)
    for label, files in visible(records, snapdir):  # what reads saw
        ...
    for p in points:                    # CrashPoint: label seq claimed states
        for st in p.states:             # CrashState: files target why rule
            layout(st, scratch)         # the directory, for a checker
    verdict = admits(records, snapdir, "exit", "xfs", {"target": b"..."})
"""

from __future__ import annotations

import os
from typing import Callable, Iterable

from . import models as _models
from .powerloss.membership import Tree as _Tree, Verdict, decide as _decide
from .powerloss.records import WRITE_CALLS, _check_records, _plain_args, _Blobs
from .powerloss.replay import World as _World
from .powerloss.space import Builder as _Builder, Digests as _Digests
from .powerloss.space import Space as _Space
from .powerloss.state import (BLOCK, DEFAULT_CAP, RULE_FFLUSH,
                              RULE_FSYNC_BEFORE_RENAME, RULE_FSYNC_DIR,
                              RULE_FSYNC_DIR_CREATE, RULE_FSYNC_FAILED,
                              RULE_FSYNC_FILE, RULE_IN_PLACE, RULE_MSYNC,
                              RULE_O_DIRECT, RULE_ONE_RENAME, SECTORS,
                              Change, CrashPoint, CrashState, ExplorerError,
                              ThinRecord)

# every model a caller may name, in the order reports list them; a
# sweep not told otherwise judges under models.DEFAULT
MODELS = _models.MODELS
DEFAULT_MODELS = _models.DEFAULT

__all__ = ["BLOCK", "DEFAULT_CAP", "DEFAULT_MODELS", "MODELS", "SECTORS",
           "WRITE_CALLS", "Change", "CrashPoint", "CrashState",
           "ExplorerError", "Moot", "ThinRecord", "Verdict", "admits",
           "crash_points", "explore", "explore_exit", "layout", "unseen",
           "visible", "RULE_FFLUSH", "RULE_FSYNC_BEFORE_RENAME",
           "RULE_FSYNC_DIR", "RULE_FSYNC_DIR_CREATE", "RULE_FSYNC_FAILED",
           "RULE_FSYNC_FILE", "RULE_IN_PLACE", "RULE_MSYNC", "RULE_O_DIRECT",
           "RULE_ONE_RENAME"]


def explore(records: Iterable[dict], snapdir=None, model: str = "posix",
            target_name: str = "target", cap: int = DEFAULT_CAP,
            seed: int = 0, *, content: Callable[[str], bytes] | None = None,
            exit_ok: bool = False, only_exit: bool = False,
            blob_cache: dict | None = None, sector: int = BLOCK,
            points=None) -> list:
    """Crash points of a parsed trace under MODEL (a name of MODELS),
    each with its states.

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
    raises ThinRecord (a thin run's: judge.Judge.thin_window)."""
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
                # the worlds do not change, so no builder notes them;
                # where the log keeps time, they were made here
                for w in worlds:
                    w.moot(rec)
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


def admits(records: Iterable[dict], snapdir=None, point="exit",
           model: str = "posix", files: dict | None = None, *, dirs=(),
           links: dict | None = None,
           content: Callable[[str], bytes] | None = None,
           sector: int = BLOCK, blob_cache: dict | None = None) -> Verdict:
    """Whether MODEL allows the tree FILES, DIRS, LINKS at crash POINT of
    a parsed trace: decided exactly from the model's constraints, with
    no cap and no sampling (powerloss/membership.py says how).

    point: "exit" (after the program exits), "start" (before the first
    call), or the seq of the call record after which the power fails
    (a CrashPoint's seq). files: {path: bytes} of the tree's regular
    files; dirs: its directories; links: {path: what the symbolic link
    holds}; every path relative to WATCH, '/'-separated ("sub/f"): the
    whole tree under WATCH, as layout() writes a state. snapdir,
    content, blob_cache and sector as for explore().

    Returns a Verdict: admitted (the Verdict is true when it is); when
    not, reason, one line naming what no state of the model can hold (a
    file's size or block, a name); states, an upper bound on the distinct
    states the model allows at the point. Every state explore() builds
    at the point is admitted, whatever its cap and seed. ExplorerError
    for a bad trace, model, point or tree."""
    _check_model(model)
    blobs, recs = _setup(records, snapdir, content, DEFAULT_CAP, 0,
                         blob_cache, sector)
    tree = _tree(files, dirs, links)
    world = _World(model, blobs, recs[0])
    if point == "exit":
        for rec in recs[1:]:
            if rec["ev"] == "init":
                world.snapshot(rec)
            elif rec["ev"] != "crash":
                world.call(rec)
        world.exit()
    elif point != "start" and point != recs[0]["seq"]:
        if not isinstance(point, int) or isinstance(point, bool):
            raise ExplorerError(f"admits: point must be 'exit', 'start' or "
                                f"a call record's seq, not {point!r}")
        for rec in recs[1:]:
            if rec["ev"] == "init":
                world.snapshot(rec)
            elif rec["ev"] != "crash":
                world.call(rec)
                if rec["seq"] == point:
                    break
        else:
            raise ExplorerError(f"admits: no call record has seq {point}")
    return _decide(_Space(world, _Digests(), sector), tree)


def _tree(files, dirs, links):
    """The observed tree, its paths checked as layout() checks them."""
    if not isinstance(files, dict):
        raise ExplorerError("admits: files must be a dict of path -> bytes")

    def path(rel, what):
        if not isinstance(rel, str) or not rel or any(
                p in ("", ".", "..") for p in rel.split("/")):
            raise ExplorerError(f"admits: bad {what} path {rel!r}")
        return rel

    for rel, data in files.items():
        path(rel, "file")
        if not isinstance(data, (bytes, bytearray)):
            raise ExplorerError(f"admits: '{rel}' is not bytes")
    dirs = [path(d, "directory") for d in dirs]
    links = dict(links or {})
    for rel in links:
        path(rel, "link")
    return _Tree({k: bytes(v) for k, v in files.items()}, dirs, links)


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
                            f"(expected one of {', '.join(MODELS)})")


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

