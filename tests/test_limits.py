"""The sweep's own resources and determinism: call coordinates that stay
put, programs whose calls move, crash points, scratch space, snapshots,
temporary files, and the bad inputs that must be one line and exit 2.

The programs audited here are tests/progs/*.c (each opens with what it
does), built once per session.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # noqa: E402
from harness import coords  # noqa: E402
from harness.engine import (cases as casesmod, confine,  # noqa: E402
                            judge as judgemod, runner, sweep, trace)
from harness.engine import spec as specmod  # noqa: E402
from test_hardening import write_spec  # noqa: E402

sys.path.insert(0, str(ROOT / "faults" / "test"))
from test_preload import content_hash  # noqa: E402

CRASHCHECK = ROOT / "scripts" / "crashcheck"
PROGS = Path(__file__).resolve().parent / "progs"


@pytest.fixture(scope="session")
def progs(tmp_path_factory):
    """tests/progs/NAME.c built as NAME in a directory of the session."""
    out = tmp_path_factory.mktemp("limits-progs")
    for name, flags in (("racer", ["-pthread"]), ("forker", []),
                        ("failer", []), ("sparse", []), ("tmpwriter", []),
                        ("ops", [])):
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
    is a harness-error naming the calls that moved (by thread: which
    block a thread writes kth is random too), and no case is judged on a
    call other than the one it was aimed at: a case whose fault hit its
    call is judged as any run, ok or with racer's own defect (it never
    fsyncs the directory after its rename), never a fault's."""
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
    # its two threads write one file: each thread's calls are named
    # apart, and still move, for the blocks are shuffled within a thread
    assert "pwrite(t.tmp)@2#" in base["finding"] or \
        "pwrite(t.tmp)@3#" in base["finding"], base["finding"]
    assert "nondeterministic" in proc.stdout.decode()
    for cid, c in got.items():
        if not cid.startswith("racer-pwrite("):
            continue
        if c["verdict"] == "harness-error":
            assert c["finding"].startswith("nondeterministic: "), c
        else:
            # the fault hit the call it was aimed at, once
            assert [f["count"] for f in c["fired"]] == [1], c
            assert c["verdict"] in ("ok", "not-durable"), c
            if c["verdict"] == "not-durable":
                assert c["cause"]["call"] == "rename#1", c
                assert c["cause"]["rule"] == \
                    "fsync the directory after the rename", c


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


# ------------------------------------------------------------ scratch

def one_line(proc):
    """The one error line of a refused command (exit 2), as text."""
    err = proc.stderr.decode(errors="replace")
    assert proc.returncode == 2, (proc.returncode, err[-2000:])
    lines = [line for line in err.splitlines()
             if not line.startswith("crashcheck: recording ")]
    assert len(lines) == 1 and "Traceback" not in err, err[-2000:]
    return lines[0]


def test_a_file_past_the_scratch_limit_ends_the_run(progs, tmp_path):
    """sparse makes a 1 GiB file in a few calls: under audit the library
    stops the run at the snapshot that would read it (the default limit
    is a share of free space and memory, less than 1 GiB here), and the
    baseline is a harness-error naming the limit, not a hang and not
    gigabytes of the harness's memory."""
    proc = crashcheck("audit", "--check", "/bin/true", "--target", "t",
                      "--out", tmp_path / "out", "--", progs / "sparse", "t",
                      str(1 << 30))
    got = cases(tmp_path / "out")
    # crashcheck's scratch, not the program: exit 2 (issue 31)
    assert proc.returncode == 2
    assert list(got) == ["sparse-baseline"]
    base = got["sparse-baseline"]
    assert base["verdict"] == "harness-error", base
    assert base["finding"].startswith(
        "crashcheck's scratch limit: 't.tmp' is 1.0 GiB, more than the "), base
    assert base["finding"].endswith(" a run may take (--scratch-limit)")
    # and as told: a file of 3 MiB is past a limit of 2M
    proc = crashcheck("audit", "--check", "/bin/true", "--target", "t",
                      "--scratch-limit", "2M", "--out", tmp_path / "out2",
                      "--", progs / "sparse", "t", str(3 << 20))
    base = cases(tmp_path / "out2")["sparse-baseline"]
    assert base["finding"] == ("crashcheck's scratch limit: 't.tmp' is 3.0 "
                               "MiB, more than the 2.0 MiB a run may take "
                               "(--scratch-limit)"), base


def test_the_snapshots_of_a_run_are_held_to_the_limit(progs, tmp_path):
    """Ten writes of 300 KB over the same bytes of a file, each of other
    bytes and so a range snapshot of its own: their blobs pass a limit of
    1 MiB, and the run is stopped there, the file never larger."""
    work = tmp_path / "w"
    work.mkdir()
    steps = ["open", "f", "w,creat"] + ["pwrite", "300000", "0"] * 10 + \
        ["fsync"]
    snaps = tmp_path / "snaps"
    snaps.mkdir()
    run = runner.run([str(progs / "ops"), *steps], cwd=work,
                     trace=tmp_path / "t", watch=work, snapdir=snaps,
                     shared=tmp_path / "s", limit=1 << 20,
                     note=tmp_path / "note", timeout=60)
    assert run.signal == 9, run
    assert (tmp_path / "note").read_text() == "limit-stored 1048576\n"
    assert sum(p.stat().st_size for p in snaps.iterdir()) <= (1 << 20) + 300000


def test_a_snapshot_skips_holes_and_streams(progs, tmp_path):
    """A 3 MB file with 100 bytes at each end is snapshotted whole at its
    fsync: the blob holds the same bytes under the hash of them, but
    takes a page or two of the scratch, not 3 MB; a 2 MB write is
    recorded as a range, streamed the same way."""
    work = tmp_path / "w"
    work.mkdir()
    snaps = tmp_path / "snaps"
    snaps.mkdir()
    steps = ["open", "f", "w,creat", "pwrite", "100", "0", "pwrite", "100",
             "3000000", "fsync", "write", "2000000", "fsync", "close"]
    run = runner.run([str(progs / "ops"), *steps], cwd=work,
                     trace=tmp_path / "t", watch=work, snapdir=snaps,
                     shared=tmp_path / "s", timeout=60)
    assert run.status == 0, run.stderr
    recs = trace.load(tmp_path / "t")
    fsyncs = [r for r in recs if r.get("call") == "fsync"]
    whole = next(iter(fsyncs[0]["snap"]["files"].values()))
    assert whole["size"] == 3000100 and "off" not in whole
    blob = snaps / whole["hash"]
    data = blob.read_bytes()
    assert data[:100] == b"a" * 100 and data[3000000:] == b"b" * 100
    assert data[100:3000000] == bytes(2999900)
    assert content_hash(data) == whole["hash"]
    assert blob.stat().st_blocks * 512 <= 64 << 10
    big = [r for r in recs if r.get("call") == "write"][0]
    entry = next(iter(big["snap"]["files"].values()))
    assert (entry["off"], entry["len"]) == (0, 2000000)
    data = (snaps / entry["hash"]).read_bytes()
    assert data == b"c" * 2000000 and content_hash(data) == entry["hash"]
    final = next(iter(fsyncs[1]["snap"]["files"].values()))
    assert content_hash((snaps / final["hash"]).read_bytes()) == final["hash"]


def test_the_snapshots_of_a_case_go_before_the_next(tmp_path):
    """A program whose content is random every run: each case stores new
    snapshots, and a process's reused scratch holds one case's at a
    time, not every case's (25,400 files, 12 GB, in one sqlite audit)."""
    s = specmod.load(write_spec(
        tmp_path / "rand.toml", "rand",
        ["/bin/sh", "-c", 'head -c 20000 /dev/urandom > "$1.tmp" && '
         'mv "$1.tmp" "$1"', "sh", "{target}"], check=["/bin/true"]))
    settings = casesmod.Settings(out=tmp_path / "out", jobs=1,
                                 kinds=("baseline", "eintr", "short", "eio"))
    cases_, _ = sweep.enumerate_cases([s], settings, log=lambda m: None)
    judge = judgemod.Judge([s], settings)
    judge.scratch_root = runner.make_scratch("crashcheck-test-")
    try:
        counts = []
        for c in cases_:
            if c.kind == "baseline":
                continue
            judge.execute(c)
            if judge._scratch is not None:
                counts.append(len(list((judge._scratch / casesmod.SNAPS)
                                       .iterdir())))
        assert len(counts) >= 8, counts
        assert max(counts) <= 8, counts
    finally:
        judge.close_server()
        sweep.remove_work(settings.work_link)
        shutil.rmtree(judge.scratch_root, ignore_errors=True)


@pytest.fixture
def small_tmpfs(tmp_path):
    """A mount point and a function that mounts a tmpfs of SIZE there
    (root only; skipped elsewhere, with the reason)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mnt = tmp_path / "small"
    mnt.mkdir()
    mounted = []

    def mount(size):
        proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}",
                               "tmpfs", str(mnt)], capture_output=True,
                              text=True)
        if proc.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs: {proc.stderr.strip()}")
        mounted.append(mnt)
        return mnt
    yield mount
    for m in mounted:
        subprocess.run(["umount", str(m)], capture_output=True)


def test_a_full_scratch_is_the_harness_error_not_the_programs(
        progs, tmp_path, small_tmpfs):
    """The scratch, a tmpfs of 3 MiB (--scratch), has room for the sweep
    as far as can be told before it runs, but not for a program that
    writes 2.5 MB and the snapshots of them: the baseline is a
    harness-error naming crashcheck's scratch, never the program's
    failure (gave-up-on-transient, unreported-error)."""
    mnt = small_tmpfs("3m")
    proc = crashcheck("audit", "--check", "/bin/true", "--target", "f",
                      "--scratch", mnt, "--out", tmp_path / "out", "--",
                      progs / "ops", "open", "f", "w,creat", "write",
                      "2500000", "fsync", "close")
    got = cases(tmp_path / "out")
    # the machine's to mend, as a scratch too small at the start: exit 2
    assert proc.returncode == 2, proc.stderr
    base = got["ops-baseline"]
    assert base["verdict"] == "harness-error", base
    assert base["finding"].startswith("crashcheck's scratch has no room: "), base
    assert f"'{mnt}'" in base["finding"] and "--scratch DIR" in base["finding"]
    # nothing of the sweep is left there
    assert not list(mnt.iterdir())


def test_a_scratch_too_small_is_one_line(progs, tmp_path, small_tmpfs):
    """A scratch with less room than the sweep needs is refused before
    anything runs, saying how much it has and how much is needed."""
    mnt = small_tmpfs("64k")
    (tmp_path / "new").write_bytes(b"x" * 200000)
    proc = crashcheck("audit", "--new", tmp_path / "new", "--scratch", mnt,
                      "--out", tmp_path / "out", "--", progs / "tmpwriter",
                      "{target}", "{new}")
    line = one_line(proc)
    assert line.startswith(f"crashcheck: scratch '{mnt}' has "), line
    assert "free; this sweep needs about " in line and "--scratch DIR" in line


@pytest.mark.parametrize("value, problem", [
    ("/nonexistent/dir", "--scratch: '/nonexistent/dir' is not a directory"),
    ("", "--scratch: empty path"),
])
def test_a_bad_scratch_is_one_line(progs, tmp_path, value, problem):
    proc = crashcheck("audit", "--scratch", value, "--", progs / "tmpwriter",
                      "{target}", "{new}")
    assert one_line(proc) == f"crashcheck: {problem}"


@pytest.mark.parametrize("value", ["12x", "-3M", "100", "0"])
def test_a_bad_scratch_limit_is_one_line(progs, value):
    proc = crashcheck("audit", f"--scratch-limit={value}", "--",
                      progs / "tmpwriter", "{target}", "{new}")
    assert one_line(proc).startswith(f"crashcheck: --scratch-limit: '{value}' ")


# ------------------------------------------------- TMPDIR, HOME, --keep

def test_each_run_has_its_own_tmpdir_and_home(progs, tmp_path):
    """tmpwriter writes its temporary file in $TMPDIR and a file in
    $HOME: after an audit, crash cases included, nothing of it is in the
    caller's temporary directory, and with --home nothing in the caller's
    HOME either. Its temporary file is on the target's file system and
    seen by the library, so the rename of its synced content is judged
    as it is: not durable only for want of the directory's fsync."""
    tmp, home = tmp_path / "tmp", tmp_path / "home"
    tmp.mkdir()
    home.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp), HOME=str(home))
    (tmp_path / "new").write_bytes(b"new content\n" * 100)
    proc = crashcheck("audit", "--new", tmp_path / "new", "--home", "--out",
                      tmp_path / "out", "--", progs / "tmpwriter", "{target}",
                      "{new}", env=env)
    assert proc.returncode == 1, proc.stderr
    assert list(tmp.iterdir()) == [] and list(home.iterdir()) == []
    got = cases(tmp_path / "out")
    assert {c["verdict"] for c in got.values()} == {"ok", "not-durable"}, \
        {i: c["verdict"] for i, c in got.items()}
    # its temporary file's calls are faulted too, by a name that holds
    # from run to run (mkstemp's)
    assert "tmpwriter-write(.crashcheck-tmp/tmpwriter.??????)#1=EIO" in got
    assert got["tmpwriter-write(.crashcheck-tmp/tmpwriter.??????)#1=EIO"][
        "verdict"] == "ok"
    # without --home the program's HOME is the caller's: it writes
    # there, into its confined view (guide.md, "Confinement") where runs
    # are confined, else for real
    proc = crashcheck("audit", "--new", tmp_path / "new", "--faults",
                      "baseline", "--out", tmp_path / "out2", "--",
                      progs / "tmpwriter", "{target}", "{new}", env=env)
    assert proc.returncode in (0, 1), proc.stderr
    assert [p.name for p in home.iterdir()] == \
        ([] if confine.available() else [".tmpwriter-ran"])
    assert list(tmp.iterdir()) == []


def test_keep_runs_where_every_run_does(progs, tmp_path):
    """--keep copies the work directory into the results at the end; the
    runs themselves are where they are without it, and give the same
    verdicts."""
    (tmp_path / "new").write_bytes(b"new content\n" * 100)
    verdicts = []
    for keep in ([], ["--keep"]):
        out = tmp_path / ("kept" if keep else "plain")
        proc = crashcheck("audit", "--new", tmp_path / "new", "--out", out,
                          *keep, "--", progs / "tmpwriter", "{target}",
                          "{new}")
        assert proc.returncode == 1, proc.stderr
        verdicts.append({i: (c["verdict"], c["finding"])
                         for i, c in cases(out).items()})
    assert verdicts[0] == verdicts[1]
    work = tmp_path / "kept" / ".work"
    assert work.is_dir() and not work.is_symlink()
    assert (work / "tmpwriter" / "trace.jsonl").is_file()
    assert not (tmp_path / "plain" / ".work").exists()


def test_a_work_directory_not_ours_is_left_alone(progs, tmp_path):
    """A marked --out (crashcheck's) holding a file named .work that
    crashcheck did not make: one line, exit 2, the file as it was."""
    out = tmp_path / "out"
    out.mkdir()
    (out / ".crashcheck").write_text("")
    (out / ".work").write_text("mine\n")
    proc = crashcheck("audit", "--new", PROGS / "tmpwriter.c", "--out", out,
                      "--", progs / "tmpwriter", "{target}", "{new}")
    line = one_line(proc)
    assert line == (f"crashcheck: --out: '{out / '.work'}' is not "
                    "crashcheck's work directory (a file or directory of "
                    "yours?): move it away"), line
    assert (out / ".work").read_text() == "mine\n"


@pytest.mark.parametrize("mode, ranged", [("r", True), ("rb", True),
                                          ("r+", False), ("a", False)])
def test_a_stream_that_only_reads_keeps_range_snapshots(progs, tmp_path,
                                                        mode, ranged):
    """The sqlite shell opens its database with fopen(.., "rb") to look at
    its header, then writes it with pwrite: a stream that cannot write
    cannot change the file behind the library's back, so the pwrite is
    still recorded as the range it wrote (the database was snapshotted
    whole at every pwrite: 125 MB for one baseline). A stream that can
    write may, and its file is recorded whole from then on."""
    work = tmp_path / "w"
    work.mkdir()
    (work / "db").write_bytes(bytes(8192))
    snaps = tmp_path / "snaps"
    snaps.mkdir()
    run = runner.run([str(progs / "ops"), "fopen", "db", mode, "fclose",
                      "open", "db", "rw", "pwrite", "100", "4096", "fsync",
                      "close"], cwd=work, trace=tmp_path / "t", watch=work,
                     snapdir=snaps, shared=tmp_path / "s", timeout=60)
    assert run.status == 0, run.stderr
    pw = [r for r in trace.load(tmp_path / "t") if r.get("call") == "pwrite"]
    entry = next(iter(pw[0]["snap"]["files"].values()))
    assert (entry.get("off"), entry.get("len")) == \
        ((4096, 100) if ranged else (None, None)), entry


# ------------------------------------------------ where docs and tool agree

def test_every_finding_has_its_directory_and_replay_works_on_an_audit(
        progs, tmp_path):
    """tmpwriter never fsyncs the directory after its rename: its baseline
    and its power-loss cases after exit are not-durable. Each finding has
    cases/<id>/, the power-loss one with the deciding crash state laid
    out and a README saying what persisted; and `crashcheck replay` lays
    the same state out from the audit's results.json."""
    (tmp_path / "new").write_bytes(b"new content\n" * 100)
    out = tmp_path / "out"
    proc = crashcheck("audit", "--new", tmp_path / "new", "--out", out,
                      "--faults", "baseline,eio,powerloss", "--",
                      progs / "tmpwriter", "{target}", "{new}")
    assert proc.returncode == 1, proc.stderr
    got = cases(out)
    findings = [c for c in got.values() if c["verdict"] != "ok"]
    assert {c["id"] for c in findings} >= {
        "tmpwriter-baseline", "tmpwriter-powerloss@exit-posix"}
    for c in findings:
        d = tmp_path / c["dir"]
        assert c["dir"] and d.is_dir(), c
        readme = (d / "README.txt").read_text()
        assert readme.startswith(f"case:        {c['id']}\nverdict:     "
                                 f"{c['verdict']}\n"), readme
        assert (d / "state").is_dir() and (d / "trace.jsonl").is_file()
    power = tmp_path / got["tmpwriter-powerloss@exit-posix"]["dir"]
    readme = (power / "README.txt").read_text()
    assert "state:       crash state after exit, state " in readme
    assert "because:     " in readme and "target:      the old content" in readme
    assert (power / "state" / "target").read_bytes() != (tmp_path / "new").read_bytes()
    # the baseline's: its deciding crash state, and the directory it left
    base = tmp_path / got["tmpwriter-baseline"]["dir"]
    assert (base / "left" / "target").read_bytes() == \
        (tmp_path / "new").read_bytes()
    # replay, from the audit's results alone
    dest = tmp_path / "replay"
    rp = crashcheck("replay", "--results", out / "results.json", "--out",
                    dest, "tmpwriter-powerloss@exit-posix")
    assert rp.returncode == 0, rp.stderr
    assert (dest / "README.txt").read_text().splitlines()[:2] == \
        readme.splitlines()[:2]
    assert (dest / "state" / "target").read_bytes() == \
        (power / "state" / "target").read_bytes()


def test_replay_tears_at_the_sector_the_audit_tore_at(tmp_path):
    """An audit with --sector 512 finds a state torn inside a block; its
    replay must build the states at 512 bytes too, or it finds the case
    ok and lays out a state that is not the one reported."""
    old = bytearray(b"a" * 8192)
    new = bytearray(old)
    new[100] = new[1000] = ord("b")     # two sectors of block 0
    (tmp_path / "old").write_bytes(old)
    (tmp_path / "new").write_bytes(new)
    out = tmp_path / "out"
    case = "dd-powerloss@write(target)#1-posix"
    proc = crashcheck("audit", "--old", tmp_path / "old", "--new",
                      tmp_path / "new", "--sector", "512", "--model", "posix",
                      "--faults", "powerloss", "--out", out, "--case", case,
                      "--", "dd", "if={new}", "of={target}", "bs=8192",
                      "status=none", "conv=notrunc,fsync")
    assert proc.returncode == 1, proc.stderr
    assert cases(out)[case]["verdict"] == "torn"
    dest = tmp_path / "replay"
    rp = crashcheck("replay", "--results", out / "results.json", "--out",
                    dest, case)
    assert rp.returncode == 0, rp.stdout + rp.stderr
    assert f"{case}: torn\n".encode() in rp.stdout
    got = (dest / "state" / "target").read_bytes()
    assert got not in (bytes(old), bytes(new)), got[:1024]


# ------------------------------------------------------------ bad input

CHMODDER = r"""
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
/* writes its target in place, syncs it, then makes its directory 000 */
int main(int argc, char **argv)
{
	int fd = open(argv[1], O_WRONLY | O_TRUNC);

	if (fd < 0 || write(fd, "new\n", 4) != 4 || fsync(fd) < 0 || close(fd) < 0) {
		perror(argv[1]);
		return 1;
	}
	if (chmod(".", 0) < 0) {
		perror(".");
		return 1;
	}
	return 0;
}
"""


def test_a_program_that_locks_its_directory_is_judged(tmp_path):
    """A program that makes its work directory mode 000, under a user who
    is not root (root reads it anyway): the harness takes its directory
    back, judges every case and leaves nothing behind."""
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("setpriv is needed to run as another user")
        as_user = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
    else:
        as_user = []
    import tempfile
    box = Path(tempfile.mkdtemp(prefix="crashcheck-test-"))
    try:
        box.chmod(0o777)
        src = box / "chmodder.c"
        src.write_text(CHMODDER)
        subprocess.run(["cc", "-o", str(box / "chmodder"), str(src)], check=True)
        (box / "new").write_bytes(b"new\n")
        for p in box.iterdir():
            p.chmod(0o755)
        scratch = box / "scratch"
        scratch.mkdir(mode=0o777)
        scratch.chmod(0o777)
        probe = subprocess.run(as_user + [str(CRASHCHECK), "--help"],
                               capture_output=True)
        if probe.returncode != 0:
            pytest.skip("crashcheck cannot run as another user here: "
                        + probe.stderr.decode(errors="replace")[:200])
        proc = subprocess.run(
            as_user + [str(CRASHCHECK), "audit", "--contract", "in-place",
                       "--new", str(box / "new"), "--out", str(box / "out"),
                       "--scratch", str(scratch), "--faults",
                       "baseline,eio,crash,powerloss", "--",
                       str(box / "chmodder"), "{target}"],
            capture_output=True, cwd=box, timeout=300)
        err = proc.stderr.decode(errors="replace")
        assert proc.returncode == 0 and "Traceback" not in err, err[-3000:]
        got = cases(box / "out")
        assert got["chmodder-baseline"]["verdict"] == "ok"
        assert len(got) > 10
        assert list(scratch.iterdir()) == []
    finally:
        subprocess.run(["chmod", "-R", "u+rwx", str(box)], capture_output=True)
        shutil.rmtree(box, ignore_errors=True)


def test_a_new_content_near_64_mib(progs, tmp_path):
    """--new of 64 MiB less 100 bytes: the old content generated for it
    is not longer than a payload may be (it was a traceback)."""
    new = tmp_path / "new"
    with open(new, "wb") as fh:
        fh.truncate((64 << 20) - 100)
    proc = crashcheck("audit", "--new", new, "--out", tmp_path / "out",
                      "--faults", "baseline", "--", "cp", "{new}", "{target}")
    err = proc.stderr.decode(errors="replace")
    assert proc.returncode in (0, 1) and "Traceback" not in err, err[-2000:]
    assert "cp-baseline" in cases(tmp_path / "out")


def test_file_names_that_are_not_utf8(tmp_path):
    """A --target and a program argument that are not UTF-8 (file names
    are bytes): the audit runs, its reports are written, and a finding's
    reproduce command, run by bash, gives the program the same bytes and
    the same verdict."""
    name = os.fsdecode(b"caf\xe9")
    new = tmp_path / "new"
    new.write_bytes(b"new\n")
    proc = crashcheck("audit", "--contract", "in-place", "--new", new,
                      "--target", name, "--out", tmp_path / "out", "--faults",
                      "baseline,eio,powerloss", "--", "cp", str(new), name)
    err = proc.stderr.decode(errors="replace")
    assert proc.returncode == 1 and "Traceback" not in err, err[-2000:]
    got = cases(tmp_path / "out")
    base = got.get("cp-baseline")
    assert base is not None, sorted(got)
    # cp never fsyncs: not durable, judged on the file of that name
    assert base["verdict"] == "not-durable", base
    assert base["reproduce"].endswith("-- cp " + str(new) + " $'caf\\xe9'")
    rerun = base["reproduce"].replace(
        " --case ", f" --out {tmp_path / 'again'} --case ", 1)
    again = subprocess.run(["bash", "-c", rerun], cwd=ROOT,
                           capture_output=True, timeout=300)
    assert again.returncode == 1, again.stderr
    assert cases(tmp_path / "again")["cp-baseline"]["verdict"] == "not-durable"


def test_bad_inputs_are_one_line(progs, tmp_path):
    """Each of these was a traceback, or worse."""
    (tmp_path / "a").write_text("a\n")
    # trace -o /dev/full: the listing cannot be written
    assert one_line(crashcheck("trace", "-o", "/dev/full", "--", "cp", "a",
                               "b", cwd=tmp_path)) == \
        "crashcheck: cannot write listing '/dev/full': No space left on device"
    # --out "" (it was the default results directory, or a traceback),
    # and the other paths
    for opt in ("--results", "--trace", "-o"):
        cmd = {"--results": ["replay", "--results", "", "x"],
               "--trace": ["inject", "--trace", "", "fsync#1=EIO", "--", "true"],
               "-o": ["trace", "-o", "", "--", "true"]}[opt]
        assert one_line(crashcheck(*cmd)).endswith(": empty path")
    assert one_line(crashcheck("audit", "--out", "", "--", progs / "tmpwriter",
                               "{target}", "{new}")) == \
        "crashcheck: --out: empty path"
    # a spec that is a directory, or /dev/zero (read for ever)
    assert one_line(crashcheck("run", tmp_path)) == \
        f"crashcheck: spec '{tmp_path}' is a directory"
    assert one_line(crashcheck("run", "/dev/zero")) == \
        "crashcheck: spec '/dev/zero' is not a regular file"
    assert one_line(crashcheck("replay", "--results", "/dev/zero", "x")) == \
        "crashcheck: --results: '/dev/zero' is not a regular file"
    # ulimit -n 12: it hung at 16
    import resource

    def few_files():
        resource.setrlimit(resource.RLIMIT_NOFILE, (12, 12))
    proc = subprocess.run([str(CRASHCHECK), "audit", "--new", str(tmp_path / "a"),
                           "--out", str(tmp_path / "o"), "--", "cp", "{new}",
                           "{target}"], capture_output=True, timeout=120,
                          preexec_fn=few_files)
    assert one_line(proc) == ("crashcheck: the descriptor limit is 12 "
                              "(ulimit -n): crashcheck needs at least 64")


def test_a_target_linked_out_of_the_scratch_is_refused(tmp_path):
    """A program that makes its target a symbolic link to a file outside
    its scratch: every case would write through it to that one file, and
    verdicts varied from run to run. The baseline is a harness-error
    saying so, and no case runs (the file outside is written once, by
    the recorded run, and never again; where runs are confined, not even
    then: into the run's view)."""
    outside = tmp_path / "outside"
    (tmp_path / "new").write_bytes(b"new\n")
    proc = crashcheck("audit", "--new", tmp_path / "new", "--out",
                      tmp_path / "out", "--", "/bin/sh", "-c",
                      'ln -sf "$2" "$1" && cat ../in/new > "$1"', "sh",
                      "{target}", str(outside))
    assert proc.returncode == 1, proc.stderr
    got = cases(tmp_path / "out")
    assert list(got) == ["sh-baseline"]
    assert got["sh-baseline"]["verdict"] == "harness-error"
    assert got["sh-baseline"]["finding"].startswith(
        f"escapes the scratch: 'target' is a symbolic link to '{outside}', "
        "outside crashcheck's scratch")
    if confine.available():
        assert not outside.exists()
    else:
        outside.unlink()


@pytest.mark.parametrize("plan, failed", [
    ("write(a.tmp)#2+=ENOSPC", ["a.tmp"]),
    ("write(a.tmp)#2++=ENOSPC", ["a.tmp", "b"]),
])
def test_a_fault_that_keeps_firing_fails_every_file(progs, tmp_path, plan,
                                                    failed):
    """`+` with a glob fires on that file's later calls only; `++` (the
    sweep's persistent faults) on every later call of its name, on any
    file, as a disk that filled up fails them all: the first write to
    a.tmp succeeds, its second fails, and with `++` so does b's after."""
    steps = ["open", "a.tmp", "w,creat", "write", "10", "write", "10",
             "open", "b", "w,creat", "write", "10"]
    run = runner.run([str(progs / "ops"), *steps], cwd=tmp_path,
                     trace=tmp_path / "t", watch=tmp_path, plan=plan,
                     shared=tmp_path / "s", timeout=30)
    assert run.status == 0, run.stderr
    hit = [Path(r["path"]).name for r in trace.load(tmp_path / "t")
           if r.get("fault")]
    assert hit == failed, run.stdout
