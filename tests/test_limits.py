"""The sweep's own resources and determinism: call coordinates that stay
put, programs whose calls move, crash points, scratch space, snapshots,
temporary files, and the bad inputs that must be one line and exit 2.

The programs audited here are tests/progs/*.c (each opens with what it
does), built once per session.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # noqa: E402
from harness.engine import coords, runner, trace  # noqa: E402

CRASHCHECK = ROOT / "scripts" / "crashcheck"
PROGS = Path(__file__).resolve().parent / "progs"


@pytest.fixture(scope="session")
def progs(tmp_path_factory):
    """tests/progs/NAME.c built as NAME in a directory of the session."""
    out = tmp_path_factory.mktemp("limits-progs")
    for name, flags in (("racer", ["-pthread"]), ("forker", []),
                        ("failer", [])):
        proc = subprocess.run(["cc", "-O1", "-Wall", "-Wextra", *flags, "-o",
                               str(out / name), str(PROGS / f"{name}.c")],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            pytest.fail(f"cc {name}.c failed:\n{proc.stderr}")
    return out


def crashcheck(*args, cwd=None, env=None, timeout=300):
    return subprocess.run([str(CRASHCHECK), *map(str, args)], cwd=cwd or ROOT,
                          env=env, capture_output=True, timeout=timeout)


def cases(out):
    with open(Path(out) / "results.json") as fh:
        return {c["id"]: c for c in json.load(fh)["cases"]}


@pytest.fixture(scope="session")
def new35(tmp_path_factory):
    path = tmp_path_factory.mktemp("limits-data") / "new"
    path.write_bytes(bytes(range(256)) * 13 + b"tail")     # 3332 bytes
    return path


# ------------------------------------------------------------ coordinates

def test_a_call_is_numbered_among_the_calls_on_its_file(progs, new35,
                                                        tmp_path):
    """forker's child makes 1 to 8 writes of its own before the parent
    writes the target: its temp file's writes have other numbers among
    all writes from run to run, and the same ones among its own. Two
    audits enumerate the same cases; a case aimed at the third write of
    the temp file hits it, in a rerun too."""
    numbers = set()
    for i in range(4):
        (tmp_path / "t").write_bytes(b"old")
        listing = tmp_path / f"listing{i}"
        proc = crashcheck("trace", "-o", listing, "--", progs / "forker",
                          "t", new35, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        numbers.add(tuple(line.split()[0] for line in
                          listing.read_text().splitlines()
                          if line.startswith("write#") and "'t.tmp'" in line))
        (tmp_path / "t").unlink()
    # the numbers among all writes move (else this test tests nothing)
    assert len(numbers) > 1, numbers
    ids = []
    for i in range(2):
        proc = crashcheck("audit", "--new", new35, "--out", tmp_path / f"a{i}",
                          "--faults", "eio,powerloss", "--model", "posix",
                          "--", progs / "forker", "{target}", "{new}")
        assert proc.returncode == 0, proc.stdout.decode()[-3000:]
        ids.append(sorted(cases(tmp_path / f"a{i}")))
    assert ids[0] == ids[1]
    assert "forker-write(target.tmp)#3=EIO" in ids[0]
    assert "forker-powerloss@write(target.tmp)#4-posix" in ids[0]
    # nothing is aimed by a number among every write
    assert not [i for i in ids[0] if "-write#" in i]
    proc = crashcheck("audit", "--new", new35, "--out", tmp_path / "one",
                      "--keep", "--case", "forker-write(target.tmp)#3=EIO",
                      "--", progs / "forker", "{target}", "{new}")
    assert proc.returncode == 0, proc.stdout.decode()[-3000:]
    got = cases(tmp_path / "one")["forker-write(target.tmp)#3=EIO"]
    assert got["verdict"] == "ok" and got["fired"][0]["count"] == 1
    recs = trace.load(tmp_path / got["dir"] / "trace.jsonl")
    hit = [r for r in recs if r.get("fault")]
    assert [(Path(r["path"]).name, r["off"], r["len"]) for r in hit] == \
        [("target.tmp", 2000, 1000)]


@pytest.mark.parametrize("name", ["a(b)#c=d;e.tmp", "caf\u00e9 [x]*?.tmp",
                                  "sp ace\\.tmp"])
def test_the_library_counts_a_glob_as_the_sweep_does(name, tmp_path):
    """A file whose name holds what a plan or fnmatch reads otherwise is
    named by coords.glob_of, and the library's count of that glob's
    matches is the sweep's (coords.Coords): the rule fires on the file's
    second write, in a work directory beside another file whose name the
    glob also matches where it can."""
    ops = ROOT / "tests" / "progs" / "ops.c"
    exe = tmp_path / "ops"
    subprocess.run(["cc", "-O0", "-o", str(exe), str(ops)], check=True)
    work = tmp_path / "work"
    work.mkdir()
    other = "x" + name     # a glob with a '*' matches it too
    steps = ["open", other, "w,creat", "write", "10", "close",
             "open", name, "w,creat", "write", "10", "write", "10", "close",
             "open", other, "w", "write", "10", "write", "10", "close"]
    # the sweep's view: a recorded run, no plan
    base = runner.run([str(exe), *steps], cwd=work, trace=tmp_path / "t0",
                      watch=work, shared=tmp_path / "s0", timeout=30)
    assert base.status == 0, base.stderr
    recs = trace.load(tmp_path / "t0")
    names = coords.Coords(recs, str(work))
    mine = [names[r] for r in recs if r.get("call") == "write"
            and Path(r["path"]).name == name]
    glob = coords.glob_of(name)
    assert mine == [f"write({glob})#{k}" for k in (1, 2)] or \
        ("*" in glob and mine[0].startswith(f"write({glob})#"))
    target = mine[1]
    run = runner.run([str(exe), *steps], cwd=work, trace=tmp_path / "t1",
                     watch=work, shared=tmp_path / "s1", timeout=30,
                     plan=f"{target}=EIO")
    hit = [r for r in trace.load(tmp_path / "t1") if r.get("fault")]
    assert len(hit) == 1 and Path(hit[0]["path"]).name == name, \
        (target, run.stdout)
    # the same count in the recorded run names that very call
    again = coords.Coords(trace.load(tmp_path / "t1"), str(work))
    assert again[hit[0]] == target


def test_a_racing_program_is_reported_nondeterministic(progs, tmp_path):
    """racer's threads write its blocks in a random order: the baseline
    is a harness-error naming the calls that moved, and no case is judged
    on a call other than the one it was aimed at."""
    new = b"".join(bytes([97 + b]) * 100 for b in range(16))
    (tmp_path / "new").write_bytes(new)
    proc = crashcheck("audit", "--new", tmp_path / "new", "--target", "t",
                      "--out", tmp_path / "out", "--", progs / "racer", "t")
    assert proc.returncode == 1
    got = cases(tmp_path / "out")
    base = got["racer-baseline"]
    assert base["verdict"] == "harness-error"
    assert base["finding"].startswith("nondeterministic: two recorded runs "
                                      "made "), base["finding"]
    assert "pwrite(t.tmp)#" in base["finding"]
    assert "nondeterministic" in proc.stdout.decode()
    for cid, c in got.items():
        if not cid.startswith("racer-pwrite("):
            continue
        if c["verdict"] == "harness-error":
            assert c["finding"].startswith("nondeterministic: "), c
        else:
            # the fault hit the call it was aimed at
            assert c["verdict"] == "ok", c


# ------------------------------------------------------------ crash points

def test_a_failed_call_that_changed_nothing_is_not_a_crash_point(progs,
                                                                 tmp_path):
    """failer makes 500 renames of a name that does not exist and 500
    closes of a closed descriptor around a correct replacement: none of
    them is a crash point or the target of a fault case."""
    (tmp_path / "new").write_bytes(b"new content\n")
    proc = crashcheck("audit", "--new", tmp_path / "new", "--out",
                      tmp_path / "out", "--", progs / "failer", "{target}",
                      "{new}")
    got = cases(tmp_path / "out")
    assert proc.returncode == 0, [c["id"] for c in got.values()
                                  if not c["passed"]]
    power = [c for c in got if "-powerloss@" in c]
    # start, exit and the replacement's calls, under two models
    assert len(power) < 40, power
    renames = [c for c in got if c.startswith("failer-rename(missing)")]
    # one crash before the first of the run of failed renames
    assert renames == ["failer-rename(missing)#1=crash"], renames
    # and none at the failed closes (which name no file)
    assert not [c for c in got if c.startswith("failer-close#")]
