"""Threads, and where a run works: a call's identity in a plan and a case id
is not which thread won a race, nor how long the scratch path was.

Each thread is numbered in its process (1 the one it started with, the
others in the order they were made), under both backends; the trace
says the number (`"thread"`, of those past the first), a plan names a
thread's call (`pwrite(data)@2#3`), and where several threads make the
calls of one name on one file, the sweep's coordinates name the thread
(harness/coords.py), so a correct program whose two threads each
pwrite one half of one file (tests/progs/halves.c) is clean in every
audit. Every run of a combo works in a directory as long as its
baseline's, so a program that writes its working directory into a file,
as logrotate does (tests/progs/cwdstate.c), writes as many bytes in
every run.
"""

import errno
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # noqa: E402
from harness import coords  # noqa: E402
from harness.engine import runner, trace  # noqa: E402

CRASHCHECK = ROOT / "scripts" / "crashcheck"
PROGS = Path(__file__).resolve().parent / "progs"
BACKENDS = ["preload", "syscall"]
SIZE = 10000        # the new content: each thread writes half, 1 KiB at a time


@pytest.fixture(scope="module")
def progs(tmp_path_factory):
    d = tmp_path_factory.mktemp("threads")
    out = {}
    for name, flags in (("halves", ["-pthread"]), ("cwdstate", [])):
        proc = subprocess.run(["cc", "-O2", "-Wall", "-Wextra", *flags, "-o",
                               str(d / name), str(PROGS / f"{name}.c")],
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        out[name] = d / name
    (d / "old").write_bytes(b"old\n")
    (d / "new").write_bytes(bytes(range(256)) * (SIZE // 256) + b"x" * (SIZE % 256))
    out["dir"] = d
    return out


def halves_run(d, progs, backend, plan=""):
    work = d / "work"
    work.mkdir(parents=True)
    (work / "target").write_bytes(b"old\n")
    run = runner.run([str(progs["halves"]), "target", str(progs["dir"] / "new")],
                     cwd=work, plan=plan, trace=d / "t.jsonl",
                     shared=d / "shared", timeout=60, backend=backend)
    pwrites = [r for r in trace.calls(trace.load(d / "t.jsonl"))
               if r["call"] == "pwrite" and r["path"].endswith("/halves.tmp")]
    return run, pwrites


@pytest.mark.parametrize("backend", BACKENDS)
def test_threads_are_numbered_in_the_order_made(tmp_path, progs, backend):
    """The first worker made (the lower half) is thread 2, the second 3;
    the main thread's lines say none."""
    run, pwrites = halves_run(tmp_path, progs, backend)
    assert run.status == 0, run.stderr_text()
    low = [r for r in pwrites if r["off"] < SIZE // 2]
    high = [r for r in pwrites if r["off"] >= SIZE // 2]
    assert {r["thread"] for r in low} == {2} and len(low) == 5
    assert {r["thread"] for r in high} == {3} and len(high) == 5
    calls = trace.calls(trace.load(tmp_path / "t.jsonl"))
    fsync = [r for r in calls if r["call"] == "fsync"]
    assert fsync and all("thread" not in r for r in fsync)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_plan_names_a_threads_call(tmp_path, progs, backend):
    """pwrite(halves.tmp)@3#2 is the second pwrite of the second worker,
    whichever thread wrote first, run after run: its number among all
    the file's pwrites changes, its place does not."""
    numbers = set()
    for k in range(5):
        run, pwrites = halves_run(tmp_path / str(k), progs, backend,
                                  plan="pwrite(halves.tmp)@3#2=EIO")
        assert run.status == 1
        assert run.stderr_text() == \
            "halves: pwrite 'halves.tmp': Input/output error\n"
        hit = [r for r in pwrites if r.get("fault")]
        assert len(hit) == 1, pwrites
        assert (hit[0]["thread"], hit[0]["off"], hit[0]["errno"]) == \
            (3, SIZE // 2 + 1024, errno.EIO)
        numbers.add(hit[0]["n"])
    # (the numbers among all pwrites are whatever the race made them)
    assert numbers <= set(range(2, 11))


def audit(out, progs, backend, program):
    d = progs["dir"]
    return subprocess.run(
        [str(CRASHCHECK), "audit", "--backend", backend, "--out", str(out),
         "--old", str(d / "old"), "--new", str(d / "new"), "--",
         str(progs[program]), "{target}", "{new}"],
        cwd=out.parent, capture_output=True, text=True, timeout=600)


def cases(out):
    with open(out / "results.json") as f:
        return json.load(f)["cases"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_threads_writing_one_file_are_clean_every_time(tmp_path, progs,
                                                            backend):
    """The correct two-thread writer, audited ten times: every case ok
    every time, the threads' pwrites named by thread (they were
    `harness-error: nondeterministic` in 8 audits of 8)."""
    for k in range(10):
        out = tmp_path / f"out{k}"
        r = audit(out, progs, backend, "halves")
        bad = [(c["id"], c["verdict"], c["finding"]) for c in cases(out)
               if c["verdict"] != "ok"]
        assert r.returncode == 0 and not bad, (k, bad, r.stderr[-2000:])
        ids = {c["id"] for c in cases(out)}
        assert any("pwrite(halves.tmp)@2#" in i for i in ids), sorted(ids)
        assert any("pwrite(halves.tmp)@3#" in i for i in ids), sorted(ids)
        # the main thread's calls keep their plain names
        assert "halves-rename(halves.tmp)#1=EIO" in ids


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_program_writing_its_directory_is_clean(tmp_path, progs, backend):
    """cwdstate writes its working directory into a state file: its
    recorded runs, and the fault cases aimed at that write, work in
    directories as long as one another, and agree."""
    out = tmp_path / "out"
    r = audit(out, progs, backend, "cwdstate")
    bad = [(c["id"], c["verdict"], c["finding"]) for c in cases(out)
           if c["verdict"] != "ok"]
    assert r.returncode == 0 and not bad, (bad, r.stderr[-2000:])
    ids = {c["id"] for c in cases(out)}
    assert {"cwdstate-write(state)#1=EIO", "cwdstate-write(state)#1=short",
            "cwdstate-baseline"} <= ids


def call(seq, name, path, thread=1, n=None, off=0):
    rec = {"ev": "call", "seq": seq, "pid": 1, "call": name, "n": n or seq,
           "path": path, "off": off, "len": 1, "ret": 1, "errno": 0}
    if thread > 1:
        rec["thread"] = thread
    return rec


def test_coordinates_name_the_thread_where_threads_share_a_file():
    """Two interleavings of the same calls get the same coordinates: the
    file both threads write is counted per thread; the one only the main
    thread writes, and a call with no file, as before."""
    w = "/w"
    one = [call(1, "pwrite", "/w/f", 2, off=0), call(2, "pwrite", "/w/f", 3, off=9),
           call(3, "pwrite", "/w/f", 2, off=1), call(4, "write", "/w/g"),
           call(5, "fsync", "/w/f"), call(6, "sync", "/other")]
    two = [call(1, "pwrite", "/w/f", 3, off=9), call(2, "pwrite", "/w/f", 2, off=0),
           call(3, "pwrite", "/w/f", 2, off=1), call(4, "write", "/w/g"),
           call(5, "fsync", "/w/f"), call(6, "sync", "/other")]

    def named(records):
        c = coords.Coords(records, w)
        return {(r["off"], r["call"]): c[r] for r in records}
    assert named(one) == named(two) == {
        (0, "pwrite"): "pwrite(f)@2#1", (9, "pwrite"): "pwrite(f)@3#1",
        (1, "pwrite"): "pwrite(f)@2#2", (0, "write"): "write(g)#1",
        (0, "fsync"): "fsync(f)#1", (0, "sync"): "sync#6"}
    assert not coords.moved((one, w), [(two, w)], lambda r, _: True)
    # one thread alone: the coordinates of before
    solo = [call(1, "pwrite", "/w/f", 2), call(2, "pwrite", "/w/f", 2)]
    c = coords.Coords(solo, w)
    assert [c[r] for r in solo] == ["pwrite(f)#1", "pwrite(f)#2"]
