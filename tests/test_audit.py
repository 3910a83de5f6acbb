"""Tests of `crashcheck audit` and `crashcheck merge`, end to end, as a user
runs them (issue 7): every bad option is one line and exit 2; the user's
files are only read; nothing is left behind without --keep; a program the
fault library cannot see is flagged, never passed; shards cover every case
once and merge back to the unsharded run; and README's claim about
`sed -i` is what the tool finds.

The audited programs are kept small (docs/examples/pywriter.py, sed, true)
and the fault classes limited where the test is about the machinery, so
the whole file runs in well under a minute on two cores.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CRASHCHECK = ROOT / "scripts" / "crashcheck"
EXAMPLES = ROOT / "docs" / "examples"
PYWRITER = ["/usr/bin/python3", str(EXAMPLES / "pywriter.py"),
            "{target}", "{new}"]
SED_OLD = EXAMPLES / "settings.conf"
SED_NEW = EXAMPLES / "settings.conf.new"
SED = ["sed", "-i", "s/^port = 8080$/port = 9090/", "{target}"]


def cc(*args, cwd=None, timeout=120):
    return subprocess.run([str(CRASHCHECK), *map(str, args)],
                          cwd=cwd or ROOT, capture_output=True, text=True,
                          timeout=timeout)


def results(out):
    with open(Path(out) / "results.json") as fh:
        return json.load(fh)


def verdicts(doc):
    """What a run found, without what differs from run to run (timings,
    directories, mmap addresses in trace excerpts)."""
    return [(c["id"], c["kind"], c["model"], c["verdict"], c["passed"],
             c["plan"], c["call"]) for c in doc["cases"]]


@pytest.fixture
def files(tmp_path):
    old = tmp_path / "old.bin"
    new = tmp_path / "new.bin"
    old.write_bytes(b"old content\n" * 500)
    new.write_bytes(b"new content\n" * 400)
    (tmp_path / "adir").mkdir()
    (tmp_path / "afile").write_text("x")
    return tmp_path


# ------------------------------------------------------------- bad input

BAD = [
    # (options before --, program, the problem the one line must name)
    (["--old", "{tmp}/missing"], PYWRITER, "--old: cannot read"),
    (["--old", "{tmp}/adir"], PYWRITER, "--old: '{tmp}/adir' is a directory"),
    (["--new", "{tmp}/missing"], PYWRITER, "--new: cannot read"),
    (["--old", "{tmp}/old.bin", "--absent"], PYWRITER,
     "argument --absent: not allowed with argument --old"),
    (["--contract", "atomic", "--check", "true"], PYWRITER,
     "argument --check: not allowed with argument --contract"),
    (["--contract", "durable"], PYWRITER, "invalid choice: 'durable'"),
    (["--check", ""], PYWRITER, "--check: empty command"),
    (["--check", "cmp 'unclosed"], PYWRITER, "--check: cannot split"),
    (["--check", "no-such-checker-xyz {target}"], PYWRITER,
     "--check: program not found in PATH: no-such-checker-xyz"),
    (["--check", "./no/such/checker"], PYWRITER,
     "--check: program not found: ./no/such/checker"),
    (["--target", "a/b"], PYWRITER, "--target: 'a/b' is not a plain file name"),
    (["--target", ".."], PYWRITER, "--target: '..' is not a plain file name"),
    (["--target", ""], PYWRITER, "--target: '' is not a plain file name"),
    (["--faults", "eio,flood"], PYWRITER, "--faults: unknown fault class 'flood'"),
    (["--model", "zfs"], PYWRITER, "--model: unknown model 'zfs'"),
    (["--timeout", "0"], PYWRITER, "--timeout: '0' is not a number of seconds"),
    (["--timeout", "soon"], PYWRITER, "--timeout: 'soon'"),
    (["--jobs", "0"], PYWRITER, "--jobs: '0' is not a positive number"),
    (["--jobs", "many"], PYWRITER, "--jobs: 'many'"),
    (["--shard", "3/2"], PYWRITER, "--shard: need 1 <= K <= N"),
    (["--shard", "half"], PYWRITER, "--shard: expected K/N"),
    (["--seed", "-1"], PYWRITER, "--seed: -1 is below 0"),
    (["--cap", "0"], PYWRITER, "--cap: 0 is below 1"),
    (["--out", "{tmp}/afile"], PYWRITER, "--out: '{tmp}/afile' is not a directory"),
    (["--bogus"], PYWRITER, "unrecognized arguments: --bogus"),
    ([], ["/no/such/program", "{target}"], "program not found: /no/such/program"),
    ([], ["no-such-program-xyz", "{target}"],
     "program not found in PATH: no-such-program-xyz"),
    ([], ["{tmp}/adir", "{target}"], "program is a directory"),
    ([], ["{tmp}/afile", "{target}"], "program not executable"),
    ([], ["cp", "{new}", "somewhere"], "the program's arguments have no {target}"),
    ([], ["sed", "-i", "s/a/b/", "{target}"], "--new FILE is required"),
    (None, PYWRITER, "missing '--' before the program"),
]


@pytest.mark.parametrize("opts,program,problem", BAD,
                         ids=[b[2].split(":")[0] + f"-{i}"
                              for i, b in enumerate(BAD)])
def test_bad_option_is_one_line_and_exit_2(files, opts, program, problem):
    def fill(a):
        return a.replace("{tmp}", str(files))
    out = files / "out"
    if opts is None:
        argv = ["audit", "--out", out] + [fill(a) for a in program]
    else:
        argv = (["audit", "--out", out] if "--out" not in opts else ["audit"]) \
            + [fill(a) for a in opts] + ["--"] + [fill(a) for a in program]
    r = cc(*argv)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("crashcheck: "), lines
    assert fill(problem) in lines[0]
    assert not out.exists(), "a usage error must not create the results"


def test_unknown_case_is_exit_2(files):
    r = cc("audit", "--out", files / "out", "--faults", "baseline",
           "--case", "python3-nosuch", "--", *PYWRITER)
    assert r.returncode == 2
    assert "no such case: python3-nosuch" in r.stderr


def _results_dir(tmp, text):
    d = tmp / "r"
    d.mkdir()
    (d / "results.json").write_text(text)
    return d


@pytest.mark.parametrize("make,problem", [
    (lambda tmp: tmp / "none", "no results.json in"),
    (lambda tmp: _results_dir(tmp, "{}"), "not a crashcheck results.json"),
    (lambda tmp: _results_dir(tmp, "["), "invalid JSON"),
], ids=["missing", "not-results", "not-json"])
def test_merge_bad_input_is_exit_2(tmp_path, make, problem):
    r = cc("merge", "--out", tmp_path / "m", make(tmp_path))
    assert r.returncode == 2
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("crashcheck: ")
    assert problem in lines[0]


# ------------------------------------------------- the user's files, scratch

def test_user_files_are_only_read(files):
    checker = files / "accept.sh"
    checker.write_text(
        "#!/bin/sh\n"
        "# accept old or new, and only new once the program claimed success\n"
        f"cmp -s \"$1\" '{files}/new.bin' && exit 0\n"
        "test \"$CRASHCHECK_EXPECT\" = old-or-new || exit 1\n"
        f"cmp -s \"$1\" '{files}/old.bin'\n")
    checker.chmod(0o755)
    mine = [files / "old.bin", files / "new.bin", checker]
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in mine}
    r = cc("audit", "--out", files / "out", "--old", files / "old.bin",
           "--new", files / "new.bin", "--check", f"{checker} {{target}}",
           "--faults", "baseline,eio,crash,powerloss", "--model", "posix",
           "--", *PYWRITER)
    assert r.returncode == 0, r.stdout + r.stderr
    after = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in mine}
    assert after == before
    assert sorted(os.listdir(files)) == sorted(
        ["old.bin", "new.bin", "accept.sh", "adir", "afile", "out"])
    doc = results(files / "out")
    assert doc["summary"]["cases"] > 20
    assert {c["verdict"] for c in doc["cases"]} == {"ok"}


def test_nothing_left_in_scratch_without_keep(tmp_path):
    """In a mount namespace of its own with an empty tmpfs on /dev/shm (the
    scratch base), so that other runs on the machine cannot interfere."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare(1) not installed")
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("cannot make a mount namespace here (not root?)")
    out = tmp_path / "out"
    script = ("mount -t tmpfs crashcheck-test /dev/shm || exit 99\n"
              '"$@"; status=$?\n'
              "echo \"status=$status\"; ls -A /dev/shm\n")
    r = subprocess.run(
        ["unshare", "-m", "sh", "-c", script, "sh", str(CRASHCHECK), "audit",
         "--out", str(out), "--faults", "baseline,eio,crash,powerloss",
         "--", *PYWRITER], capture_output=True, text=True, timeout=120)
    assert "status=0" in r.stdout, r.stdout + r.stderr
    assert r.stdout.strip().splitlines()[-1] == "status=0", \
        "left in the scratch base: " + r.stdout
    # the reports, and the marker that makes the directory crashcheck's
    assert sorted(os.listdir(out)) == [".crashcheck", "junit.xml",
                                       "report.html", "report.md",
                                       "results.json", "results.sarif"]


def test_a_program_that_failed_on_its_own_says_what_it_said(files):
    """Issue 30: cp given a path that does not exist exits 1 before it
    writes anything. The console says so, with its exit status and the
    last line of its stderr, not only "nothing intercepted ... writes
    nothing there"; so does the case's finding and explanation."""
    r = cc("audit", "--out", files / "out", "--new", files / "new.bin",
           "--", "cp", str(files / "no-such-file"), "{target}")
    assert r.returncode == 1, r.stderr
    said = (f"cp failed on its own (exit status 1, no fault planned), its "
            f"stderr ending: cp: cannot stat '{files / 'no-such-file'}': "
            "No such file or directory")
    assert f"crashcheck: cp: nothing intercepted: {said}" in r.stderr
    assert f"FINDING cp-baseline: harness-error: nothing intercepted: {said}" \
        in r.stdout
    assert "writes nothing there" not in r.stdout + r.stderr
    case, = results(files / "out")["cases"]
    assert "failed with no fault injected" in case["explanation"]


# ----------------------------------------------------- what cannot be seen

def test_program_that_writes_nothing_is_flagged(files):
    r = cc("audit", "--out", files / "out", "--new", files / "new.bin",
           "--", "true", "{target}")
    assert r.returncode == 1
    assert "nothing intercepted: no write, sync, rename or unlink" in r.stderr
    assert "FINDING true-baseline: harness-error: nothing intercepted" in r.stdout
    doc = results(files / "out")
    assert [(c["id"], c["verdict"]) for c in doc["cases"]] == \
        [("true-baseline", "harness-error")]


def test_static_binary_is_flagged(files):
    """A statically linked writer: the library never loads, yet the target
    changes behind its back."""
    src = files / "st.c"
    src.write_text(
        "#include <fcntl.h>\n#include <unistd.h>\n"
        "int main(int argc, char **argv)\n{\n"
        "\tint fd = open(argv[1], O_WRONLY | O_TRUNC);\n"
        "\tif (argc < 2 || fd < 0 || write(fd, \"x\", 1) != 1 || fsync(fd))\n"
        "\t\treturn 1;\n\treturn close(fd) ? 1 : 0;\n}\n")
    exe = files / "st"
    built = subprocess.run(["cc", "-static", "-o", str(exe), str(src)],
                           capture_output=True, text=True)
    if built.returncode != 0:
        pytest.skip("no static C library to link with: " + built.stderr[-200:])
    ldd = subprocess.run(["ldd", str(exe)], capture_output=True, text=True)
    assert "not a dynamic executable" in ldd.stdout + ldd.stderr
    (files / "x").write_bytes(b"x")
    r = cc("audit", "--backend", "preload", "--out", files / "out", "--new",
           files / "x", "--", exe, "{target}")
    assert r.returncode == 1
    assert ("nothing intercepted: the fault library did not load in st "
            "(statically linked, or setuid?) and yet the target changed") \
        in r.stderr
    doc = results(files / "out")
    assert [c["verdict"] for c in doc["cases"]] == ["harness-error"]
    # auto audits it under the system-call supervisor: it overwrites the
    # target in place, which an atomic contract does not allow
    r = cc("audit", "--out", files / "auto", "--new", files / "x",
           "--", exe, "{target}")
    assert r.returncode == 1, r.stdout + r.stderr
    doc = results(files / "auto")
    assert {c["backend"] for c in doc["cases"]} == {"syscall"}
    found = {c["id"]: c["verdict"] for c in doc["cases"]}
    assert found["st-baseline"] == "ok"
    assert found["st-write(target)#1=crash"] == "torn"


# ------------------------------------------------------------- sharding

def test_shards_cover_every_case_once_and_merge_back(tmp_path):
    opts = ["--faults", "baseline,eio,crash,powerloss"]
    whole = cc("audit", "--out", tmp_path / "all", *opts, "--", *PYWRITER)
    assert whole.returncode == 0, whole.stdout + whole.stderr
    full = results(tmp_path / "all")
    n = 3
    shard_ids = []
    for k in range(1, n + 1):
        r = cc("audit", "--out", tmp_path / f"s{k}", "--shard", f"{k}/{n}",
               *opts, "--", *PYWRITER)
        assert r.returncode == 0, r.stdout + r.stderr
        shard_ids.append({c["id"] for c in results(tmp_path / f"s{k}")["cases"]})
    everything = {c["id"] for c in full["cases"]}
    assert all(ids for ids in shard_ids), "a shard ran nothing"
    assert sum(len(ids) for ids in shard_ids) == len(everything)
    assert set().union(*shard_ids) == everything

    m = cc("merge", "--out", tmp_path / "m",
           *[tmp_path / f"s{k}" for k in range(1, n + 1)])
    assert m.returncode == 0, m.stdout + m.stderr
    merged = results(tmp_path / "m")
    assert verdicts(merged) == verdicts(full)
    for name in ("report.md", "report.html", "junit.xml"):
        assert (tmp_path / "m" / name).is_file()

    missing = cc("merge", "--out", tmp_path / "m2", tmp_path / "s1",
                 tmp_path / "s3")
    assert missing.returncode == 2
    assert "shard 2/3 missing" in missing.stderr
    twice = cc("merge", "--out", tmp_path / "m3", tmp_path / "s1",
               tmp_path / "s1", tmp_path / "s2", tmp_path / "s3")
    assert twice.returncode == 2
    assert "shard 1/3 given twice" in twice.stderr
    mixed = cc("merge", "--out", tmp_path / "m4", tmp_path / "all",
               tmp_path / "s1")
    assert mixed.returncode == 2


def test_merge_exit_1_on_findings(tmp_path):
    opts = ["--old", SED_OLD, "--new", SED_NEW, "--faults", "baseline",
            "--model", "posix"]
    for k in (1, 2):
        cc("audit", "--out", tmp_path / f"s{k}", "--shard", f"{k}/2", *opts,
           "--", *SED)
    m = cc("merge", "--out", tmp_path / "m", tmp_path / "s1", tmp_path / "s2")
    assert m.returncode == 1, m.stdout + m.stderr
    assert "FINDING sed-baseline: not-durable" in m.stdout


# --------------------------------------- a real program: the guide's claim

def test_replay_of_a_call_on_a_file_with_a_random_name(tmp_path):
    """sed's temp file is named at random (mkstemp): the case names its
    calls by what five recorded runs' names share, and replay records
    them again the same way to find the case."""
    r = cc("audit", "--out", tmp_path / "out", "--old", SED_OLD,
           "--new", SED_NEW, "--model", "posix", "--", *SED)
    assert r.returncode == 1, r.stdout + r.stderr
    case = "sed-powerloss@rename(sed??????)#1-posix"
    r = cc("replay", "--results", tmp_path / "out" / "results.json",
           "--out", tmp_path / "replay", case)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"crashcheck: {case}: torn" in r.stdout
    readme = (tmp_path / "replay" / "README.txt").read_text()
    assert "target:      empty" in readme, readme


def test_sed_audit_matches_readme(tmp_path):
    """docs/guide.md "Real programs": GNU sed -i writes a temp file and
    renames it with no fsync. Under posix a power cut after the rename can
    leave the target empty (torn) and, after sed exits, old (not-durable);
    under ext4-ordered the rename waits for the blocks' allocation
    (auto_da_alloc), not their write (dioread_nolock): zeros, torn too.
    Every fault case passes."""
    r = cc("audit", "--out", tmp_path / "out", "--old", SED_OLD,
           "--new", SED_NEW, "--", *SED)
    assert r.returncode == 1, r.stdout + r.stderr
    doc = results(tmp_path / "out")
    s = doc["summary"]
    failed = {(c["id"], c["verdict"]) for c in doc["cases"] if not c["passed"]}
    # sed's temp file has a random name (mkstemp): its calls are named by
    # what the names of five recorded runs share
    assert failed == {
        ("sed-baseline", "not-durable"),
        ("sed-powerloss@exit-posix", "not-durable"),
        ("sed-powerloss@exit-ext4-ordered", "not-durable"),
        ("sed-powerloss@rename(sed??????)#1-posix", "torn"),
        ("sed-powerloss@rename(sed??????)#1-ext4-ordered", "torn"),
    }, failed
    assert (s["cases"], s["findings"]) == (32, 5)
    readme = (ROOT / "docs" / "guide.md").read_text()
    assert "| `sed -i` | GNU sed 4.9 | atomic | 32 | 5 (2) |" in readme
    for c in doc["cases"]:
        if c["passed"]:
            continue
        assert f"FINDING {c['id']}: {c['verdict']}" in r.stdout
        assert "--case" in c["reproduce"] and c["reproduce"].endswith(
            "-- sed -i 's/^port = 8080$/port = 9090/' '{target}'")
