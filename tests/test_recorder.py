"""The recorder's shortcuts change its cost, never what the harness learns.

A write is recorded as the range it wrote (docs/design.md, "Trace: JSON
lines"), the explorer lays that range over the content it last knew, and
the result must be byte for byte what a whole-file snapshot shows. Each
program here runs twice, with CRASHCHECK_SNAP=full (every snapshot whole,
the reference) and with ranges, and the two traces must give the same
visible content after every record and the same crash states (labels,
files, explanations) under both models. Each run also checks that ranges
were really taken where they should be, so a recorder that silently fell
back to whole snapshots would fail here rather than pass.

The rest: the trace format's range form (trace.py and the explorer refuse
a bad one with one line), the trace descriptor that a program may close or
take over, and the cached descriptor paths, which must read exactly as
readlink(/proc/self/fd/N) would.
"""

import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # noqa: E402
from harness.judging import explorer, models, payload
from harness.judging.models import base as policy
from harness.judging.powerloss import replay
from harness.engine import runner  # noqa: E402
from harness.engine import trace as trace_mod  # noqa: E402
from harness.engine import traceparse  # noqa: E402

BIN = ROOT / "workloads" / "bin"
PROGS = Path(__file__).resolve().parent / "progs"
SIZES = [0, 1, 4095, 4096, 4097, 65537]
STRATEGIES = ["stdio", "direct", "sync", "mmap"]
WRITES = frozenset(("write", "pwrite", "writev", "pwritev"))


def cc(src, exe):
    proc = subprocess.run(["cc", "-O1", "-Wall", "-Wextra", "-o", str(exe),
                           str(src)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.fail(f"cc {src} failed:\n{proc.stderr}")
    return exe


def need_library():
    for path in (runner.FAULT_LIB, runner.FIU_PRELOAD):
        if not path.is_file():
            pytest.fail(f"{path} missing: run 'make'")


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    need_library()
    d = tmp_path_factory.mktemp("bin")
    progs = {"ops": cc(PROGS / "ops.c", d / "ops"),
             "bench-writer": cc(ROOT / "scripts" / "bench-writer.c",
                                d / "bench-writer")}
    for name, src in PROGRAMS.items():
        (d / f"{name}.c").write_text(src)
        progs[name] = cc(d / f"{name}.c", d / name)
    return progs


class Run:
    """One run in a scratch laid out as the sweep's: work/ (cwd and
    WATCH), in/new, trace.jsonl, snaps/, shared."""

    def __init__(self, base, argv, mode, plan="", old=None, new=b""):
        self.dir = base / "work"
        self.dir.mkdir(parents=True)
        (base / "in").mkdir()
        (base / "in" / "new").write_bytes(new)
        if old is not None:
            (self.dir / "target").write_bytes(old)
        self.snapdir = base / "snaps"
        trace = base / "trace.jsonl"
        env = runner.build_env(plan, trace, self.dir, self.snapdir,
                               base / "shared", program=str(argv[0]),
                               cwd=self.dir)
        # set after build_env, which owns the list of our variables
        env["CRASHCHECK_SNAP"] = mode
        self.run = runner.run([str(a) for a in argv], cwd=self.dir,
                              preload=False, env=env, timeout=60)
        assert not self.run.timed_out, argv
        self.records = trace_mod.load(trace)

    def entries(self):
        """(record, snap.files entry) of every file snapshot."""
        for r in self.records:
            for f in ((r.get("snap") or {}).get("files") or {}).values():
                yield r, f

    def ranges(self):
        return [(r, f) for r, f in self.entries() if "off" in f]


def states(run, model):
    points = explorer.explore(run.records, run.snapdir, model, "target",
                              exit_ok=run.run.status == 0)
    return [(p.label, [(s.label, s.files, s.why, s.rule) for s in p.states])
            for p in points]


def same_story(tmp_path, argv, plan="", old=None, new=b""):
    """Run ARGV whole and ranged; assert the harness cannot tell them
    apart. Returns the ranged run."""
    full = Run(tmp_path / "full", argv, "full", plan, old, new)
    ranged = Run(tmp_path / "range", argv, "range", plan, old, new)
    assert full.ranges() == [], "CRASHCHECK_SNAP=full took a range snapshot"
    what = f"{' '.join(map(str, argv))} plan={plan!r}"
    assert (ranged.run.status, ranged.run.signal) == \
        (full.run.status, full.run.signal), \
        f"{what}: exit {ranged.run.status} with ranges, {full.run.status} " \
        f"without\n{ranged.run.stderr_text()}"
    want = explorer.visible(full.records, full.snapdir)
    got = explorer.visible(ranged.records, ranged.snapdir)
    assert [label for label, _ in got] == [label for label, _ in want], what
    for (label, g), (_, w) in zip(got, want):
        assert g == w, (f"{what}: {label}: expected "
                        f"{ {n: len(c) for n, c in w.items()} } (whole), "
                        f"found { {n: len(c) for n, c in g.items()} }"
                        f"{'' if g.keys() != w.keys() else ' with other bytes'}")
    for model in explorer.MODELS:
        g, w = states(ranged, model), states(full, model)
        assert [p for p, _ in g] == [p for p, _ in w], (what, model)
        for (point, gs), (_, ws) in zip(g, w):
            assert gs == ws, f"{what}: {model}: {point}: crash states differ"
    return ranged


def write_records(run, ok=True):
    return [r for r in trace_mod.calls(run.records)
            if r["call"] in WRITES and (not ok or r["ret"] > 0)
            and r.get("snap")]


# --- the workloads ---------------------------------------------------------

@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("workload", ["replace", "overwrite"])
def test_workload_ranges_rebuild_whole_snapshots(tmp_path, built, workload,
                                                 strategy, size):
    old = payload.make(size // 2 + 3, 1)
    new = payload.make(size, 2)
    ranged = same_story(tmp_path, [BIN / workload, f"--strategy={strategy}",
                                   "target", "../in/new"], old=old, new=new)
    assert ranged.run.status == 0, ranged.run.stderr_text()
    assert (ranged.dir / "target").read_bytes() == new
    writes = write_records(ranged)
    if strategy in ("stdio", "mmap"):
        # stdio writes inside libc, a mapping by stores: no write calls
        assert not writes
    else:
        assert len(ranged.ranges()) == len(writes), \
            f"{len(writes)} writes, {len(ranged.ranges())} range snapshots"


@pytest.mark.parametrize("n", [1, 10, 100, 200])
def test_bench_writer_ranges_rebuild_whole_snapshots(tmp_path, built, n):
    new = payload.make(65537, 2)
    ranged = same_story(tmp_path, [built["bench-writer"], n, "target",
                                   "../in/new"], old=payload.make(4096, 1),
                        new=new)
    writes = write_records(ranged)
    assert len(writes) == n
    # every write, the first included: the file was created (and
    # snapshotted empty) by this process
    assert [f["len"] for _, f in ranged.ranges()] == \
        [r["ret"] for r in writes]
    # a range costs its own bytes, not the file's: up to CC_INLINE_MAX
    # (512) they are in the line, as hex; above, in a file of their own
    for _, f in ranged.ranges():
        if f["len"] <= 512:
            assert "hash" not in f and len(f["data"]) == 2 * f["len"], f
        else:
            assert "data" not in f, f
            assert (ranged.snapdir / f["hash"]).stat().st_size == f["len"]
    assert any("data" in f for _, f in ranged.ranges()) == (65537 / n <= 512)


# --- the corners of the write family, through tests/progs/ops ------------

CORNERS = {
    # O_APPEND: the offset is where the file ended, not where the fd was
    "append": ([("open", "target", "w,append"), ("write", 10),
                ("pwrite", 5, 0), ("write", 7)], ""),
    "append-rw": ([("open", "target", "rw,append"), ("write", 10),
                   ("write", 3)], ""),
    "pwrite-middle": ([("open", "target", "rw"), ("pwrite", 100, 2000),
                       ("pwrite", 1, 0), ("pwrite", 4096, 4095)], ""),
    "hole": ([("open", "target", "w"), ("pwrite", 10, 20000),
              ("write", 5), ("pwrite", 3, 100000)], ""),
    "short": ([("open", "target", "w"), ("write", 1000), ("write", 1000),
               ("writev", "3,700,5")], "write#1=short;writev#1=short:400"),
    "eio": ([("open", "target", "w"), ("write", 100), ("write", 100)],
            "write#2=EIO"),
    "trunc-then-write": ([("open", "target", "w,trunc"), ("write", 50),
                          ("ftruncate", 10), ("write", 5)], ""),
    "new-file": ([("open", "fresh", "w,creat,excl"), ("write", 9),
                  ("writev", "1,2,3"), ("rename", "fresh", "target")], ""),
    # stores through a mapping are not calls: whole snapshots from then on
    "mmap": ([("open", "target", "rw"), ("mmap", 4096), ("write", 7),
              ("munmap",), ("write", 9)], ""),
    # stdio writes out inside libc: whole snapshots for that inode
    "stdio": ([("open", "target", "rw"), ("fopen", "target", "r+"),
               ("fwrite", 3), ("write", 5), ("fflush",), ("write", 2)], ""),
    # the child inherits the descriptor and writes after the parent
    "fork": ([("open", "target", "w"), ("write", 10), ("fork",),
              ("write", 10), ("pwrite", 4, 3)], ""),
    "two-files": ([("open", "target", "w"), ("open", "other", "w,creat"),
                   ("use", 0), ("write", 10), ("use", 1), ("write", 20),
                   ("use", 0), ("write", 30)], ""),
}


@pytest.mark.parametrize("name", sorted(CORNERS))
def test_write_corners_rebuild_whole_snapshots(tmp_path, built, name):
    steps, plan = CORNERS[name]
    argv = [built["ops"]] + [str(w) for step in steps for w in step]
    ranged = same_story(tmp_path, argv, plan, old=payload.make(6000, 1))
    assert ranged.run.status == 0, ranged.run.stderr_text()
    writes = write_records(ranged)
    assert writes, "no write was recorded"
    ranges = {r["seq"] for r, _ in ranged.ranges()}
    if name in ("mmap", "stdio"):
        # the first write may be a range (before the map / the stream);
        # none after the inode could change unseen
        tainted_from = min(r["seq"] for r in trace_mod.calls(ranged.records)
                           if r["call"] in ("mmap", "fopen"))
        assert not [s for s in ranges if s > tainted_from]
    elif name == "append":
        # pwrite on O_APPEND appends on Linux: its OFF is not where the
        # bytes went, so it is recorded whole
        assert [r["call"] for r in writes if r["seq"] in ranges] == \
            ["write", "write"]
    else:
        assert ranges == {r["seq"] for r in writes}, \
            f"writes {[r['seq'] for r in writes]}, ranges {sorted(ranges)}"


def test_execd_process_snapshots_whole_first(tmp_path, built):
    # Each ops is a new image (sh wrote the init record): its first write
    # to target cannot rely on what another process recorded, its second
    # one can.
    o = built["ops"]
    script = (f"{o} open target w write 10 write 10; "
              f"{o} open target w write 3 write 4")
    ranged = same_story(tmp_path, ["/bin/sh", "-c", script],
                        old=payload.make(100, 1))
    writes = write_records(ranged)
    ranges = {r["seq"] for r, _ in ranged.ranges()}
    assert [r["seq"] in ranges for r in writes] == [False, True, False, True]


# --- the replay's plain-write path -----------------------------------------

def explored(records, snapdir, model, only_exit=False, exit_ok=True, cap=64):
    points = explorer.explore(records, snapdir, model, "target", cap=cap,
                              exit_ok=exit_ok, only_exit=only_exit)
    return [(p.label, p.claimed, [(s.label, s.key, s.why, s.rule)
                                  for s in p.states]) for p in points]


def replay_both_ways(monkeypatch, records, snapdir, exit_ok=True):
    """Explore RECORDS (every point, and the after-exit point alone, one
    model at a time and all at once) with the explorer's plain-write path
    and without it: the results must be equal. Returns how many times a
    world took the plain path."""
    apply = replay.World._apply_plain
    plain_args = explorer._plain_args
    hits = []

    def counted(world, args):
        done = apply(world, args)
        hits.append(done)
        return done

    runs = {}
    for way in ("plain", "general"):
        if way == "plain":
            monkeypatch.setattr(replay.World, "_apply_plain", counted)
        else:
            monkeypatch.setattr(explorer, "_plain_args", lambda rec: False)
            monkeypatch.setattr(replay, "_plain_args", lambda rec: False)
        # a cap of 3 samples the states, drawn with the index of the
        # first point since the last change: a change must count as one
        # both ways
        runs[way] = [explored(records, snapdir, m, only, exit_ok, cap)
                     for m in explorer.MODELS for only in (False, True)
                     for cap in (64, 3)]
        for cap in (64, 3):
            together = explorer.explore_exit(records, snapdir, cap=cap,
                                             exit_ok=exit_ok)
            runs[way] += [[(p.label, p.claimed,
                            [(s.label, s.key, s.why, s.rule) for s in p.states])
                           for p in [together[m]]] for m in explorer.MODELS]
    monkeypatch.setattr(replay.World, "_apply_plain", apply)
    monkeypatch.setattr(explorer, "_plain_args", plain_args)
    monkeypatch.setattr(replay, "_plain_args", plain_args)
    for got, want in zip(runs["plain"], runs["general"]):
        assert [p[:2] for p in got] == [p[:2] for p in want]
        for g, w in zip(got, want):
            assert g == w, f"{g[0]}: crash states differ"
    # all models at once is each alone: runs[way] is, per model, the
    # full list and the after-exit point (caps 64 and 3), then the
    # together points by cap, then model
    k = len(explorer.MODELS)
    alone = {(m, cap): runs["plain"][4 * i + 2 + j]
             for i, m in enumerate(explorer.MODELS)
             for j, cap in enumerate((64, 3))}
    assert runs["plain"][4 * k:] == [alone[m, cap] for cap in (64, 3)
                                     for m in explorer.MODELS]
    return sum(hits)


@pytest.mark.parametrize("name", sorted(CORNERS))
def test_plain_writes_replay_as_the_general_way(tmp_path, built, name,
                                                monkeypatch):
    """The explorer replays the common write (a range, no sync flag, no
    lost block) by a shorter path; on every corner of the write family
    it must build the same crash states, point by point."""
    steps, plan = CORNERS[name]
    argv = [built["ops"]] + [str(w) for step in steps for w in step]
    run = Run(tmp_path, argv, "range", plan, old=payload.make(6000, 1))
    hits = replay_both_ways(monkeypatch, run.records, run.snapdir,
                            exit_ok=run.run.status == 0)
    # a corner recorded with ranges has writes the plain path takes
    assert (hits > 0) == bool(run.ranges()), hits


def test_plain_writes_of_a_file_in_300_pieces(tmp_path, built, monkeypatch):
    """Every write of bench-writer takes the plain path, in each of the
    six replays per model (every point and the after-exit one, caps 64
    and 3; then every model at once, two caps), with the same states as
    the general way; except under a model that journals data, whose
    log takes each write's data (the general way)."""
    run = Run(tmp_path, [built["bench-writer"], 300, "target", "../in/new"],
              "range", old=payload.make(4096, 1), new=payload.make(20000, 2))
    assert run.run.status == 0, run.run.stderr_text()
    plain = [m for m in explorer.MODELS if not models.get(m).journaled_data]
    assert 0 < len(plain) < len(explorer.MODELS)
    assert replay_both_ways(monkeypatch, run.records, run.snapdir) == \
        6 * len(plain) * 300


def range_line(seq, n, off, data, size, call="write", ret=None, extra=b""):
    ret = len(data) if ret is None else ret
    return (b'{"ev":"call","seq":%d,"call":"%s","n":%d,"fd":3,'
            b'"path":"/w/target","ino":7,"off":%d,"len":%d,"ret":%d,'
            b'"errno":0%s,"snap":{"files":{"7":{"size":%d,"off":%d,'
            b'"len":%d,"data":"%s"}}}}\n'
            % (seq, call.encode(), n, off, len(data), ret, extra, size, off,
               len(data), data.hex().encode()))


def test_plain_writes_around_lost_blocks_and_shrinking(monkeypatch):
    """The cases the plain path must leave to the general one: a block
    lost by a failed fsync, a range that shrinks the file, sync flags;
    and the ones it takes: a rewrite of the same bytes (no change, so
    the sampling index stays), a range past the end (a hole)."""
    B = explorer.BLOCK
    init = (b'{"ev":"init","seq":0,"watch":"/w","snap":{"dir":{"target":7},'
            b'"files":{"7":{"size":5,"hash":"0000000000000001"}}}}\n')
    lines = [init,
             range_line(1, 1, 0, b"a" * B, B),
             b'{"ev":"call","seq":2,"call":"fsync","n":1,"fd":3,"ino":7,'
             b'"path":"/w/target","ret":-1,"errno":5,'
             b'"fault":{"rule":0,"action":"EIO"}}\n',     # block 0 lost
             range_line(3, 2, B, b"b" * B, 2 * B),
             range_line(4, 3, 10, b"c" * 5, 2 * B),         # rewrites it
             range_line(5, 4, 10, b"c" * 5, 2 * B),         # same bytes
             range_line(6, 5, 3 * B, b"d" * 7, 3 * B + 7),  # a hole
             range_line(7, 6, 0, b"e" * 3, 3 * B + 7,
                        extra=b',"flags":["O_DSYNC"]'),
             range_line(8, 7, 0, b"f" * 2, 2, call="pwrite"),  # shrinks
             range_line(9, 8, 1, b"g" * 9, 10, extra=b',"flags":["O_APPEND"]'),
             b'{"ev":"call","seq":10,"call":"fsync","n":2,"fd":3,"ino":7,'
             b'"path":"/w/target","ret":0,"errno":0}\n',
             range_line(11, 9, 10, b"h" * 30, 40),
             # another process made the file longer still
             range_line(12, 10, 0, b"i" * 4, 50)]
    records = trace_mod.parse(b"".join(lines))
    hits = replay_both_ways(monkeypatch, records, blobs)
    # per round: seq 1, 5, 6, 9, 11 and 12 (3 and 4 meet a lost block,
    # 7 syncs, 8 shrinks); where a read after the failure sees the disk
    # (failed_sync DISK), seq 4 brings back bytes 10-14 of block 0 alone,
    # and the block stays lost until seq 8 cuts the file inside what was
    # written again: seq 1, 9, 11 and 12. A model that journals data
    # takes none. 4 rounds one model at a time, 2 of all at once.
    want = {policy.PAGE: 6, policy.DISK: 4}
    assert hits == sum(6 * want[models.get(m).failed_sync]
                       for m in explorer.MODELS
                       if not models.get(m).journaled_data)


def test_plain_path_refuses_what_the_general_way_refuses():
    """explore() takes records from anywhere, not only trace.parse: a
    range whose off is True (== 1 to Python) must be refused with the
    general way's words, not taken for 1."""
    recs = trace_mod.parse(INIT + call_line(
        b'{"size":5,"off":1,"len":1,"data":"58"}').replace(
            b'"off":2,"len":3,"ret":3', b'"off":1,"len":1,"ret":1'))
    recs[1]["snap"]["files"]["7"]["off"] = True
    with pytest.raises(explorer.ExplorerError) as e:
        explorer.explore_exit(recs, blobs)
    assert str(e.value) == ("trace record seq=1: snap.files.7: bad off True "
                            "in a range snapshot")


# --- writes a later fsync makes moot (trace.Lazy.for_exit) ----------------

# name: (steps, plan, moot writes). Each step of `ops` is one call.
MOOT = {
    "write-then-fsync": ([("open", "target", "w"), ("write", 100),
                          ("write", 5000), ("pwrite", 10, 3), ("fsync",),
                          ("close",)], "", 3),
    "fdatasync": ([("open", "target", "w,append"), ("write", 10),
                   ("writev", "3,700,5"), ("fdatasync",)], "", 2),
    # the faulted write is a line of its own shape, and moot too
    "eintr-retried": ([("open", "target", "w"), ("write", 100),
                       ("write", 100), ("write", 100), ("fsync",)],
                      "write#2=EINTR", 3),
    "short": ([("open", "target", "w"), ("write", 1000), ("write", 1000),
               ("fsync",)], "write#1=short", 2),
    # a failed fsync loses blocks: the writes after it are moot by their
    # shape, but the worlds need them (Moot.full): the last one rewrites
    # the lost blocks with the same bytes ('a' again, after 25 letters
    # elsewhere), which only the write call itself says
    "eio-then-rewrite": ([("open", "target", "rw"), ("pwrite", 5000, 0),
                          ("fsync",)] + [("pwrite", 1, 9000)] * 25
                         + [("pwrite", 5000, 0), ("fsync",)],
                         "fsync#1=EIO", 26),
    # the rename names the file: the writes before it stay
    "rename-between": ([("open", "fresh", "w,creat,excl"), ("write", 9),
                        ("rename", "fresh", "target"), ("write", 5),
                        ("fsync",)], "", 1),
    "two-files": ([("open", "target", "w"), ("open", "other", "w,creat"),
                   ("use", 0), ("write", 10), ("use", 1), ("write", 20),
                   ("use", 0), ("write", 30), ("fsync",), ("use", 1),
                   ("write", 5), ("fsync",)], "", 4),
    # sync flags and O_DIRECT are not moot's shape; nor is a write after
    # the last fsync
    "o-sync": ([("open", "target", "w,sync"), ("write", 10), ("fsync",)],
               "", 0),
    "after-last-fsync": ([("open", "target", "w"), ("write", 10),
                          ("fsync",), ("write", 20)], "", 1),
    # five blocks dirty at exit: more states than a cap of 3, sampled
    # with the index of the last change, which the moot writes still count
    "sampled-after": ([("open", "target", "w"), ("write", 10), ("write", 10),
                       ("fsync",), ("pwrite", 20000, 0)], "", 2),
    "fork": ([("open", "target", "w"), ("write", 10), ("fork",),
              ("write", 10), ("fsync",)], "", None),
    "truncate-between": ([("open", "target", "rw"), ("write", 5000),
                          ("ftruncate", 10), ("write", 5), ("fsync",)], "", 1),
}


def exit_points(records, snapdir, exit_ok):
    return [[(m, p.label, p.claimed,
              [(s.label, s.key, s.why, s.rule) for s in p.states])
             for m, p in explorer.explore_exit(records, snapdir, cap=cap,
                                               exit_ok=exit_ok).items()]
            for cap in (64, 3)]


@pytest.mark.parametrize("name", sorted(MOOT))
def test_moot_writes_leave_the_after_exit_point_as_it_was(tmp_path, built,
                                                          name, monkeypatch):
    """The after-exit replay passes over the writes a later fsync
    snapshots whole (trace.Lazy.for_exit): each model's states, sampled
    (cap 3) and not, are those of the whole trace's replay; and it passes
    over the ones the table says."""
    steps, plan, want = MOOT[name]
    argv = [built["ops"]] + [str(w) for step in steps for w in step]
    run = Run(tmp_path, argv, "range", plan, old=payload.make(6000, 1))
    assert run.run.status == 0, run.run.stderr_text()
    lazy = trace_mod.Lazy.load(tmp_path / "trace.jsonl")
    moot = lazy.moot_writes()
    if want is not None:
        assert len(moot) == want, sorted(moot)
    got = lazy.for_exit()
    assert sum(len(r.lines) if isinstance(r, explorer.Moot) else 1
               for r in got) == len(run.records)
    full = []
    monkeypatch.setattr(explorer.Moot, "full",
                        lambda self: full.append(self) or self._parse(self.lines))
    assert exit_points(got, run.snapdir, True) == \
        exit_points(run.records, run.snapdir, True)
    # only where a failed sync lost blocks do the worlds ask for them
    assert bool(full) == (name == "eio-then-rewrite")


def test_moot_writes_of_a_file_in_300_pieces(tmp_path, built):
    run = Run(tmp_path, [built["bench-writer"], 300, "target", "../in/new"],
              "range", old=payload.make(4096, 1), new=payload.make(20000, 2))
    assert run.run.status == 0, run.run.stderr_text()
    lazy = trace_mod.Lazy.load(tmp_path / "trace.jsonl")
    got = lazy.for_exit()
    # the 300 writes are one run, read as one
    assert [len(r.lines) for r in got if isinstance(r, explorer.Moot)] == [300]
    assert len(got) == len(run.records) - 299
    assert exit_points(got, run.snapdir, True) == \
        exit_points(run.records, run.snapdir, True)


def test_moot_lines_are_the_library_s_shapes_only(tmp_path, built):
    """A write line changed so that its record would do more than lay
    bytes on its file (a directory snapshot, a second file, a sync flag,
    an escaped path) is no longer moot, and a sync line of another file
    or without its whole snapshot makes none; a garbled moot line is
    still parse()'s error once a world asks for it."""
    argv = [built["ops"], "open", "target", "w", "write", 10, "write", 20,
            "fsync"]
    run = Run(tmp_path, [str(a) for a in argv], "range",
              old=payload.make(6000, 1))
    data = trace_mod.read(tmp_path / "trace.jsonl")
    lines = data.split(b"\n")
    w = next(i for i, line in enumerate(lines) if b'"call":"write","n":2' in line)
    f = next(i for i, line in enumerate(lines) if b'"call":"fsync"' in line)
    assert sorted(trace_mod.Lazy(data).moot_writes()) == [w - 1, w]
    ino = re.search(rb'"ino":(\d+)', lines[w])[1]

    def moot_with(i, old, new):
        changed = list(lines)
        assert old in changed[i]
        changed[i] = changed[i].replace(old, new)
        return sorted(trace_mod.Lazy(b"\n".join(changed)).moot_writes())

    # the first write changed: the second is still moot
    first = w - 1
    assert moot_with(first, b'}}}}',
                     b'},"9":{"size":1,"hash":"0000000000000001"}}}}') == [w]
    assert moot_with(first, b'"snap":{', b'"snap":{"dir":{"x":1},') == [w]
    assert moot_with(first, b'"flags":[]', b'"flags":["O_DSYNC"]') == [w]
    assert moot_with(first, b'/target"', b'/tar\\"get"') == [w]
    assert moot_with(first, b'"errno":0', b'"errno":0,"dir":true') == [w]
    assert moot_with(f, b'"ret":0,"errno":0', b'"ret":-1,"errno":5') == []
    assert moot_with(f, b'"files":{"' + ino, b'"files":{"1' + ino) == []
    # a line between that names the inode ends the run
    between = list(lines)
    between.insert(f, b'{"ev":"call","seq":%d,"call":"close","ino":%s,'
                   b'"ret":0,"errno":0}' % (int(re.search(
                       rb'"seq":(\d+)', lines[w])[1]) + 1, ino))
    assert sorted(trace_mod.Lazy(b"\n".join(between)).moot_writes()) == []
    # garbled inside the range's bytes: moot by its shape, and parse()'s
    # error when a world asks for it
    bad = list(lines)
    bad[w] = re.sub(rb'"data":"[0-9a-f]{2}', b'"data":"zz', bad[w])
    got = trace_mod.Lazy(b"\n".join(bad)).for_exit()
    moot = next(r for r in got if isinstance(r, explorer.Moot))
    with pytest.raises(trace_mod.TraceError) as e:
        moot.full()
    assert f":{w + 1}:" in str(e.value)


def test_moot_writes_leave_a_sweep_as_it_was(tmp_path, built, monkeypatch):
    """Every fault case of a program writing its file in 20 pieces, judged
    with the after-exit replay passing over moot writes and without: the
    same results; and the runs that claim success did pass over them."""
    from harness.engine import (cases as casesmod, judge as judgemod,
                                spec as specmod, sweep)
    toml = tmp_path / "pieces.toml"
    toml.write_text(
        'name = "pieces"\ndescription = "20 writes, then fsync and rename"\n'
        f'command = ["{built["bench-writer"]}", "20", "{{target}}", "{{new}}"]\n'
        'contract = "atomic"\nsizes = [9000]\nold = "payload"\n')
    specs = [specmod.load(toml)]
    settings = casesmod.Settings(out=tmp_path / "out", jobs=1)
    cases, _ = sweep.enumerate_cases(specs, settings, log=lambda m: None)
    judge = judgemod.Judge(specs, settings)
    judge.scratch_root = runner.make_scratch("crashcheck-test-")
    passed = []
    explore_exit = explorer.explore_exit

    def counted(records, *args, **kw):
        passed.append(sum(len(r.lines) for r in records
                          if isinstance(r, explorer.Moot)))
        return explore_exit(records, *args, **kw)

    keys = ("verdict", "passed", "finding", "explanation", "state", "model",
            "states", "fired", "trace_excerpt", "exit")
    # a trace this short is parsed whole at once, unless told otherwise
    monkeypatch.setattr(trace_mod.Lazy, "SMALL", 0)
    try:
        monkeypatch.setattr(explorer, "explore_exit", counted)
        moot = [{k: judge.execute(c)[k] for k in keys} for c in cases]
        monkeypatch.setattr(trace_mod.Lazy, "for_exit",
                            lambda self: self.records)
        whole = [{k: judge.execute(c)[k] for k in keys} for c in cases]
    finally:
        judge.close_server()
        sweep.remove_work(settings.work_link)
        shutil.rmtree(judge.scratch_root, ignore_errors=True)
    assert [c.id for c, a, b in zip(cases, moot, whole) if a != b] == []
    # most runs that claim success wrote all 20 pieces, then fsync'd
    n = len(passed) // 2
    assert n > 20 and not any(passed[n:])
    assert sum(p >= 19 for p in passed[:n]) > n // 2, passed[:n]


def test_the_recorder_leaves_access_times_alone(tmp_path, built):
    """The recorder reads back what each write put in the file, and
    snapshots whole files, with O_NOATIME: the program's files do not show
    that it read them. (Under relatime a read updates an access time
    older than the last change, as the first check shows.)"""
    probe = tmp_path / "probe"
    probe.write_bytes(b"x")
    os.utime(probe, (1000, 2000))
    probe.read_bytes()
    if os.stat(probe).st_atime == 1000:
        pytest.skip("reads do not update access times on this file system")
    argv = [str(a) for a in (built["ops"], "open", "target", "rw", "write", 100,
                             "pwrite", 100, 5000, "fsync", "close")]
    (tmp_path / "work").mkdir()
    target = tmp_path / "work" / "target"
    target.write_bytes(payload.make(6000, 1))
    os.utime(target, (1000, 2000))
    env = runner.build_env("", tmp_path / "trace.jsonl", tmp_path / "work",
                           tmp_path / "snaps", tmp_path / "shared",
                           program=argv[0], cwd=tmp_path / "work")
    run = runner.run(argv, cwd=tmp_path / "work", preload=False, env=env,
                     timeout=60)
    assert run.status == 0, run.stderr_text()
    records = trace_mod.load(tmp_path / "trace.jsonl")
    # the writes were read back (ranges), the fsync snapshotted the file
    assert [r["call"] for r in records if r["ev"] == "call" and r.get("snap")] == \
        ["write", "pwrite", "fsync"]
    st = os.stat(target)
    assert st.st_mtime > 2000 and st.st_atime == 1000


# --- the trace through a shared mapping (trace.c, trace_put) ---------------

def test_a_mapped_trace_reads_as_its_lines(tmp_path, built):
    """With CRASHCHECK_SHARED the trace is written through a shared
    mapping that grows by doubling: the file ends in zeros past the last
    line and holds nothing else; the reader gives the lines; a second
    process tree with the same trace file and a fresh counter file adds
    its lines after them, as O_APPEND did."""
    argv = [str(a) for a in (built["bench-writer"], 1000, "target",
                             "../in/new")]
    run = Run(tmp_path, argv, "range", old=payload.make(4096, 1),
              new=payload.make(65536, 2))
    assert run.run.status == 0, run.run.stderr_text()
    raw = (tmp_path / "trace.jsonl").read_bytes()
    text = raw.rstrip(b"\0")
    # grown from its first 4 KiB by doubling
    assert len(raw) > len(text) and len(raw) >= 128 << 10
    assert len(raw) & (len(raw) - 1) == 0
    assert b"\0" not in text and trace_mod.read(tmp_path / "trace.jsonl") == text
    assert trace_mod.parse(text) == run.records
    n = len(run.records)
    assert n > 1000
    # the same trace again, with a fresh counter file
    env = runner.build_env("", tmp_path / "trace.jsonl", run.dir, run.snapdir,
                           tmp_path / "shared2", program=argv[0], cwd=run.dir)
    again = runner.run(argv, cwd=run.dir, preload=False, env=env, timeout=60)
    assert again.status == 0, again.stderr_text()
    both = trace_mod.read(tmp_path / "trace.jsonl")
    assert both.startswith(text)
    assert len(trace_mod.parse(both)) == 2 * n


LINE = b'{"ev":"call","seq":%d,"pid":1,"call":"fsync","n":%d,"fd":3,"ret":0,"errno":0}'


@pytest.mark.parametrize("dead,why", [
    (b"\0" * 40, "took its place and died"),
    (b"\0" + LINE[1:] % (7, 7) + b"\n", "copied all but its first byte"),
    (b"\0" + (LINE[1:] % (7, 7))[:30], "died half-way through the copy"),
    (b"\0" * 20 + b'{"files":{"1":{"size":0}}}}' + b"\n",
     "copied its end only, which opens a brace"),
    (b'{"ev":"call","seq":7,"pid":1,"call":"wri' + b"\0" * 30,
     "pwrite stopped half-way"),
])
def test_a_line_a_process_died_writing_is_left_out(dead, why):
    """A process killed at any instruction of trace_put leaves its line's
    place zero, or zero and part of the line; the line's first byte comes
    last. The reader leaves that line out and keeps every other one,
    with its line number."""
    lines = [LINE % (i, i) for i in range(1, 7)]
    data = b"\n".join(lines[:3]) + b"\n" + dead + b"\n".join(lines[3:]) \
        + b"\n" + b"\0" * 100
    got = trace_mod.clean(data)
    assert b"\0" not in got, why
    assert [r["seq"] for r in trace_mod.parse(got)] == list(range(1, 7)), why
    assert [r["seq"] for r in trace_mod.Lazy(got).for_exit()] == list(range(1, 7))
    # a record's line keeps its number
    assert got.split(b"\n").index(lines[4]) == data.split(b"\n").index(lines[4])


def test_the_zeros_past_the_last_line_go_as_rstrip_takes_them():
    """clean() begins with _strip_zeros, which takes the zeros after the
    last newline without rstrip's byte-at-a-time look: it must leave what
    rstrip leaves, whatever follows the last newline (zeros, part of a
    line, nothing)."""
    rng = random.Random(8)
    pieces = [b"\0", b"\0" * 9, b"\n", b"}", LINE % (3, 3), b'{"ev":"', b"x"]
    for _ in range(3000):
        data = b"".join(rng.choice(pieces) for _ in range(rng.randrange(9)))
        assert trace_mod._strip_zeros(data) == data.rstrip(b"\0"), data


def test_processes_killed_while_tracing_leave_a_trace_that_reads(tmp_path, built):
    """Four processes at a time tracing into one file through the
    mapping, three of them killed (SIGKILL) at moments spread over their
    runs (some before they start): the trace still reads, every record
    whole, and the one left alone is all there."""
    import random
    import signal
    import time
    w = tmp_path / "work"
    w.mkdir()
    (w / "new").write_bytes(payload.make(65536, 2))
    env = runner.build_env("", tmp_path / "trace.jsonl", w, tmp_path / "snaps",
                           tmp_path / "shared", program=str(built["bench-writer"]),
                           cwd=w)
    rng = random.Random(1)
    for round_ in range(5):
        procs = [subprocess.Popen([str(built["bench-writer"]), "1000",
                                   f"t{round_}-{i}", "new"], cwd=w, env=env)
                 for i in range(4)]
        for p in procs[1:]:
            time.sleep(rng.uniform(0, 0.004))
            p.send_signal(signal.SIGKILL)
        # (one may have finished before its signal came)
        assert procs[0].wait() == 0
        assert {p.wait() for p in procs[1:]} <= {0, -signal.SIGKILL}
    data = trace_mod.read(tmp_path / "trace.jsonl")
    records = trace_mod.parse(data)
    assert all(r["ev"] in ("init", "call") for r in records)
    # seq numbers are handed out once each
    seqs = [r["seq"] for r in records]
    assert len(seqs) == len(set(seqs))
    # the survivors' writes, every one of them
    for round_ in range(5):
        writes = [r for r in records if r["ev"] == "call" and r["call"] == "write"
                  and r["path"].endswith(f"/t{round_}-0.tmp")]
        assert len(writes) == 1000, round_


# --- the range form of the trace -------------------------------------------

INIT = (b'{"ev":"init","seq":0,"watch":"/w","snap":{"dir":{"target":7},'
        b'"files":{"7":{"size":5,"hash":"0000000000000001"}}}}\n')


def call_line(entry):
    return (b'{"ev":"call","seq":1,"call":"write","n":1,"fd":3,'
            b'"path":"/w/target","ino":7,"off":2,"len":3,"ret":3,'
            b'"errno":0,"snap":{"files":{"7":' + entry + b'}}}\n')


@pytest.mark.parametrize("entry,problem", [
    (b'{"size":5,"off":-1,"len":3,"hash":"0000000000000002"}',
     "off is not a non-negative integer"),
    (b'{"size":5,"off":2,"hash":"0000000000000002"}',
     "len is not a non-negative integer"),
    (b'{"size":5,"off":2,"len":true,"hash":"0000000000000002"}',
     "len is not a non-negative integer"),
    (b'{"size":4,"off":2,"len":3,"hash":"0000000000000002"}',
     "range 2+3 runs past the size 4"),
    # a small range's bytes in the line: exactly len bytes of lowercase hex
    (b'{"size":5,"off":2,"len":3,"data":"58595"}',
     "data is not 3 bytes in lowercase hex"),
    (b'{"size":5,"off":2,"len":3,"data":"58595A"}',
     "data is not 3 bytes in lowercase hex"),
    (b'{"size":5,"off":2,"len":3,"data":585950}',
     "data is not 3 bytes in lowercase hex"),
    (b'{"size":5,"off":2,"len":3,"data":"58595a","hash":"0000000000000002"}',
     "has both hash and data"),
    (b'{"size":5,"data":"58595a"}',
     "data without off and len (only a range carries its bytes)"),
    (b'{"size":4,"off":2,"len":3,"data":"58595a"}',
     "range 2+3 runs past the size 4"),
])
def test_trace_refuses_a_bad_range(entry, problem):
    with pytest.raises(trace_mod.TraceError) as e:
        trace_mod.parse(INIT + call_line(entry), "t.jsonl")
    assert str(e.value) == f"t.jsonl:2: snap.files['7']: {problem}"


def blobs(h):
    return {"0000000000000001": b"hello", "0000000000000002": b"XYZ",
            "0000000000000003": b"!"}[h]


def test_explorer_lays_a_range_over_the_last_content():
    recs = trace_mod.parse(
        INIT
        + call_line(b'{"size":5,"off":2,"len":3,"hash":"0000000000000002"}')
        + b'{"ev":"call","seq":2,"call":"pwrite","n":1,"fd":3,"ino":7,'
          b'"path":"/w/target","off":9,"len":1,"ret":1,"errno":0,"snap":'
          b'{"files":{"7":{"size":10,"off":9,"len":1,'
          b'"hash":"0000000000000003"}}}}\n'
        + b'{"ev":"call","seq":3,"call":"write","n":2,"fd":3,"ino":7,'
          b'"path":"/w/target","off":0,"len":3,"ret":3,"errno":0,"snap":'
          b'{"files":{"7":{"size":3,"off":0,"len":3,'
          b'"hash":"0000000000000002"}}}}\n')
    seen = [files["target"] for _, files in explorer.visible(recs, blobs)]
    assert seen == [b"hello", b"heXYZ", b"heXYZ\0\0\0\0!", b"XYZ"]


def test_explorer_lays_inline_range_bytes_like_a_blob():
    """A small range carries its bytes in the line ("data", hex): the
    replay must come out as with the same bytes in a snapshot file."""
    as_blob = trace_mod.parse(INIT + call_line(
        b'{"size":5,"off":2,"len":3,"hash":"0000000000000002"}'))
    inline = trace_mod.parse(INIT + call_line(
        b'{"size":5,"off":2,"len":3,"data":"58595a"}'))
    assert explorer.visible(inline, blobs) == explorer.visible(as_blob, blobs)
    assert explorer.visible(inline, blobs)[-1][1]["target"] == b"heXYZ"


@pytest.mark.parametrize("lines,problem", [
    # a range of an inode the replay has no content for
    (INIT + call_line(b'{"size":5,"off":2,"len":3,"hash":"0000000000000002"}'
                      ).replace(b'"7":{"size":5,"off"', b'"8":{"size":5,'
                                                        b'"off"'),
     "trace record seq=1: snap.files.8: a range snapshot of inode 8, whose "
     "content no earlier record gave"),
    # the init record is the durable start: whole files only
    (INIT.replace(b'{"size":5,"hash"', b'{"size":5,"off":0,"len":5,"hash"'),
     "trace record seq=0: snap.files.7: a range snapshot in the init "
     "record (it must hold whole files)"),
    # the blob must hold len bytes
    (INIT + call_line(b'{"size":5,"off":1,"len":4,"hash":"0000000000000002"}'),
     "trace record seq=1: snapshot 0000000000000002 holds 3 bytes, the "
     "trace says 4"),
])
def test_explorer_refuses_a_range_it_cannot_apply(lines, problem):
    recs = trace_mod.parse(lines)
    with pytest.raises(explorer.ExplorerError) as e:
        explorer.explore(recs, blobs)
    assert str(e.value) == problem


@pytest.mark.parametrize("size", [5000, 50000])
def test_fast_and_checked_readers_agree(tmp_path, built, size):
    # The fast path must accept exactly what the checked one accepts: a
    # real trace (its writes' bytes in the lines, or in blobs), and the
    # same trace made wrong in ways only the checked one words.
    run = Run(tmp_path / "r", [built["bench-writer"], 10, "target",
                               "../in/new"], "range",
              new=payload.make(size, 2))
    data = trace_mod.read(tmp_path / "r" / "trace.jsonl")
    assert traceparse._parse_fast(data) is not None
    want = traceparse._parse_checked(data, "t")
    want.sort(key=lambda r: r["seq"])
    assert trace_mod.parse(data) == want
    writes = [line for line in data.split(b"\n")
              if traceparse._WRITE_LINE.fullmatch(line.decode())]
    assert len(writes) == 10, "the write lines are not of the fast shape"
    line = writes[3]
    entry = line[line.index(b'"snap":'):]
    for bad in (data.replace(b'"ret":', b'"ret":true,"x":', 1),
                data.replace(b'"len":', b'"len":-', 1) + b"{}\n",
                data.replace(b'"pid":', b'"pid": ', 1),
                data.replace(b"\n", b"\n\n  ", 1),
                # write lines of the fast shape, wrong where only
                # numbers or lengths tell
                data.replace(line, line.replace(b'"seq":', b'"seq":0', 1)),
                data.replace(line, line.replace(entry, re.sub(
                    rb'"size":\d+', b'"size":1', entry))),     # < off+len
                data.replace(line, line.replace(entry, re.sub(
                    rb'"size":(\d+)', rb'"size":1\1', entry))),  # larger
                data.replace(line, line.replace(b'"}}}}', b'0"}}}}')),
                data.replace(line, line.replace(b'","ino"', b'/./x","ino"')),
                data.replace(line, line.replace(b'"flags":[]',
                                                b'"flags":["O_APPEND"]'))):
        try:
            want = traceparse._parse_checked(bad, "t")
        except trace_mod.TraceError as e:
            with pytest.raises(trace_mod.TraceError) as got:
                trace_mod.parse(bad, "t")
            assert str(got.value) == str(e)
        else:
            want.sort(key=lambda r: r["seq"])
            assert trace_mod.parse(bad, "t") == want


# --- the trace descriptor and the path cache --------------------------------

PROGRAMS = {
    # Takes over every descriptor near the top of the table (where the
    # library keeps its own), then closes them: the program's file must
    # never receive a trace line, and the trace must miss no call.
    "fdstorm": r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(void)
{
	struct rlimit rl;
	int v = open("victim", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int f = open("target", O_WRONLY);
	long top;

	if (v < 0 || f < 0 || getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 1;
	top = rl.rlim_cur > 1024 ? 1024 : (long)rl.rlim_cur;
	if (write(f, "a", 1) != 1)
		return 1;
	for (long i = top - 100; i < top; i++)
		if (dup2(v, i) < 0)
			return 1;
	if (write(f, "b", 1) != 1)
		return 1;
	if (syscall(SYS_close_range, top - 100, top - 1, 0) < 0)
		return 1;
	if (write(f, "c", 1) != 1)
		return 1;
	return write(v, "V", 1) != 1;
}
""",
    # Paths of a descriptor after the names around it changed: renamed by
    # another process, unlinked, renamed back, a directory renamed.
    "pathprog": r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
static int child(void (*fn)(void))
{
	int st;
	pid_t p = fork();
	if (p == 0) {
		fn();
		_exit(0);
	}
	return waitpid(p, &st, 0) == p && WIFEXITED(st) ? 0 : -1;
}
static void ren(void) { rename("a", "b"); }
static void ren_dir(void) { rename("d", "e"); }
int main(void)
{
	int fd = open("a", O_WRONLY | O_CREAT, 0644), fd2;

	if (fd < 0 || mkdir("d", 0755) < 0)
		return 1;
	write(fd, "1", 1);
	write(fd, "2", 1);
	if (child(ren) < 0)
		return 1;
	write(fd, "3", 1);
	unlink("b");
	write(fd, "4", 1);
	fd2 = open("d/x", O_WRONLY | O_CREAT, 0644);
	write(fd2, "5", 1);
	if (child(ren_dir) < 0)
		return 1;
	write(fd2, "6", 1);
	dup2(fd2, fd);
	write(fd, "7", 1);
	return 0;
}
""",
}


def test_trace_survives_its_descriptor_taken_over(tmp_path, built):
    ranged = same_story(tmp_path, [built["fdstorm"]], old=b"")
    assert ranged.run.status == 0, ranged.run.stderr_text()
    assert (ranged.dir / "victim").read_bytes() == b"V"
    writes = [r for r in trace_mod.calls(ranged.records)
              if r["call"] == "write"]
    assert [r["n"] for r in writes] == [1, 2, 3, 4]
    assert (ranged.dir / "target").read_bytes() == b"abc"


def test_cached_paths_read_as_readlink_would(tmp_path, built):
    ranged = same_story(tmp_path, [built["pathprog"]])
    assert ranged.run.status == 0, ranged.run.stderr_text()
    d = str(ranged.dir)
    paths = [r["path"] for r in trace_mod.calls(ranged.records)
             if r["call"] == "write"]
    assert paths == [f"{d}/a", f"{d}/a", f"{d}/b", f"{d}/b (deleted)",
                     f"{d}/d/x", f"{d}/e/x", f"{d}/e/x"], paths


def test_bad_snap_mode_is_one_line_and_exit_2(tmp_path, built):
    env = runner.build_env(program=str(built["ops"]), cwd=tmp_path)
    env["CRASHCHECK_SNAP"] = "partial"
    r = runner.run([str(built["ops"])], cwd=tmp_path, preload=False,
                   env=env, timeout=10)
    assert r.status == 2
    assert r.stderr_text() == \
        "crashcheck: CRASHCHECK_SNAP 'partial' is not 'full' or 'range'\n"


# --- what a traced write costs, and the shortcuts that keep it low ----------

COST_PROGRAMS = {
    # The read-back descriptor the library keeps for a write-only target
    # sits near the top of the table, where the program dup2()s its own
    # file over it. argv[1] "room": numbers above the band stay free, so a
    # new reader can be kept; "none": RLIMIT_NOFILE ends at the band, so
    # the library reads through a fresh descriptor per write, closed after
    # (exit 3 if one is left open). The program's file there must never be
    # read as the target nor written, and no write may go without its
    # snapshot.
    "readerstorm": r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	struct rlimit rl;
	int v = open("victim", O_RDWR | O_CREAT | O_TRUNC, 0644);
	int f = open("target", O_WRONLY | O_TRUNC);
	long top;

	if (argc != 2 || v < 0 || f < 0 || getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 1;
	top = rl.rlim_cur > 1024 ? 1024 : (long)rl.rlim_cur;
	rl.rlim_cur = strcmp(argv[1], "none") ? 2 * top : top;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 77;
	if (write(v, "victim bytes", 12) != 12 || write(f, "a", 1) != 1)
		return 1;
	for (long i = top - 100; i < top; i++)
		if (dup2(v, i) < 0)
			return 1;
	if (write(f, "b", 1) != 1 || write(f, "c", 1) != 1)
		return 1;
	/* the lowest free number is the next after the program's own */
	if (open("/dev/null", O_RDONLY) != f + 1)
		return 3;
	if (syscall(SYS_close_range, top - 100, top - 1, 0) < 0)
		return 1;
	return write(f, "d", 1) != 1;
}
""",
    # The pid of a line is cached per process: a forked child's lines
    # must carry the child's own. Prints the pids getpid() gives.
    "forkpid": r"""
#include <fcntl.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
int main(void)
{
	int st, fd = open("target", O_WRONLY | O_TRUNC);
	pid_t p;

	if (fd < 0 || write(fd, "p", 1) != 1)
		return 1;
	p = fork();
	if (p == 0) {
		printf("child %d\n", (int)getpid());
		fflush(stdout);
		_exit(write(fd, "c", 1) != 1);
	}
	if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st))
		return 1;
	printf("parent %d\n", (int)getpid());
	return write(fd, "P", 1) != 1;
}
""",
}


@pytest.fixture(scope="module")
def cost_built(tmp_path_factory):
    d = tmp_path_factory.mktemp("cost")
    progs = {}
    for name, src in COST_PROGRAMS.items():
        (d / f"{name}.c").write_text(src)
        progs[name] = cc(d / f"{name}.c", d / name)
    return progs


def target_entries(run):
    """Per write call to target: the snap.files entries it gave."""
    return [list(((r.get("snap") or {}).get("files") or {}).values())
            for r in trace_mod.calls(run.records)
            if r["call"] == "write" and r["path"] == f"{run.dir}/target"]


@pytest.mark.parametrize("room", ["room", "none"])
def test_reader_taken_over_is_never_read(tmp_path, cost_built, room):
    ranged = same_story(tmp_path, [cost_built["readerstorm"], room],
                        old=payload.make(3000, 1))
    if ranged.run.status == 77:
        pytest.skip("RLIMIT_NOFILE cannot be raised to 2048 here")
    assert ranged.run.status == 0, ranged.run.stderr_text()
    assert (ranged.dir / "target").read_bytes() == b"abcd"
    assert (ranged.dir / "victim").read_bytes() == b"victim bytes"
    got = []
    for entries in target_entries(ranged):
        assert len(entries) == 1, f"expected one snapshot, found {entries}"
        got.append("range" if "off" in entries[0] else "whole")
    # whichever descriptor reads it back, each write is provably its range
    assert got == ["range"] * 4


def test_forked_child_lines_carry_its_pid(tmp_path, cost_built):
    ranged = same_story(tmp_path, [cost_built["forkpid"]], old=b"")
    assert ranged.run.status == 0, ranged.run.stderr_text()
    pids = dict(line.split() for line in
                ranged.run.stdout.decode().splitlines())
    writes = [r for r in trace_mod.calls(ranged.records)
              if r["call"] == "write"]
    assert [r["pid"] for r in writes] == \
        [int(pids["parent"]), int(pids["child"]), int(pids["parent"])]


def strace_counts(argv, env, cwd, out):
    proc = subprocess.run(["strace", "-f", "-c", "-o", str(out)] + argv,
                          env=env, cwd=cwd, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    counts = {}
    for line in out.read_text().splitlines():
        words = line.split()
        # % time, seconds, usecs/call, calls, [errors], syscall
        if len(words) >= 5 and words[3].isdigit() and words[-1] != "total":
            counts[words[-1]] = int(words[3])
    return counts


def syscalls_of_100_writes(tmp_path, exe, check, snaps=True, trace_from=None,
                           trace_full=None):
    """{system call: how many more} bench-writer EXE makes for 200 writes
    than for 100 (strace -c), traced, so that what a run costs once
    cancels out; CHECK(n, records) looks at each run's trace."""
    if shutil.which("strace") is None:
        pytest.skip("strace not installed")
    runs = {}
    for n in (100, 200):
        base = tmp_path / str(n)
        (base / "work").mkdir(parents=True)
        (base / "work" / "target").write_bytes(payload.make(4096, 1))
        # at most CC_INLINE_MAX bytes per write: no blob files
        (base / "new").write_bytes(payload.make(12000, 2))
        env = runner.build_env("", base / "trace.jsonl", base / "work",
                               base / "snaps" if snaps else None,
                               base / "shared", program=str(exe),
                               cwd=base / "work", trace_from=trace_from,
                               trace_full=trace_full)
        runs[n] = strace_counts([str(exe), str(n), "target",
                                 str(base / "new")], env, base / "work",
                                base / "strace.txt")
        check(n, trace_mod.load(base / "trace.jsonl"))
    per_100 = {name: runs[200].get(name, 0) - runs[100].get(name, 0)
               for name in set(runs[100]) | set(runs[200])}
    return {name: k for name, k in per_100.items() if k}


def test_a_traced_write_costs_five_system_calls(tmp_path, built):
    """The recorder's system calls per traced, range-recorded write of
    bench-writer (write-only target, no O_APPEND): fstat, F_GETFL and
    lseek before the call; after it, fstat and pread of the kept reader
    (the range's size and its proof). The line is copied into the
    trace's shared mapping, which grows by doubling (fallocate, mremap)."""
    def check(n, records):
        ranges = [f for r in records if r.get("call") == "write"
                  for f in r["snap"]["files"].values() if "off" in f]
        assert len(ranges) == n, f"expected {n} range snapshots, found {len(ranges)}"
    per_100 = syscalls_of_100_writes(tmp_path, built["bench-writer"], check)
    stat = "fstat" if "fstat" in per_100 else "newfstatat"
    # the longer trace may have doubled its mapping once more (and
    # checked its descriptor before)
    grown = per_100.pop("fallocate", 0)
    assert grown <= 1 and per_100.pop("mremap", 0) == grown
    # the write is the program's own
    assert per_100 == {"write": 100, stat: 200 + grown, "fcntl": 100,
                       "lseek": 100, "pread64": 100}, per_100


def test_line_builder_writes_what_printf_and_json_quote_write(tmp_path):
    """faults/test/format.c: the recorder's hand-made decimal and quoting
    against snprintf and plan_json_quote, byte for byte."""
    exe = tmp_path / "format"
    proc = subprocess.run(["cc", "-std=gnu11", "-O2", "-Wall", "-Wextra",
                           "-D_GNU_SOURCE", "-o", str(exe),
                           str(ROOT / "faults" / "test" / "format.c")],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and not proc.stderr, proc.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
