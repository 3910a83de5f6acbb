"""Tests of the command line: scripts/crashcheck inject and trace, end to
end, as a user runs them (a subprocess, from a directory of its own).

Every error must be one line `crashcheck: <problem>` on stderr and exit 2;
a run must pass the program's stdio and exit status through, and say for
every rule whether it fired. The last tests are issue 3's done-when
checks against workloads/bin/replace.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # noqa: E402
from harness.engine import plan as plan_mod  # noqa: E402
from harness.engine import runner  # noqa: E402

CRASHCHECK = ROOT / "scripts" / "crashcheck"
REPLACE = ROOT / "workloads" / "bin" / "replace"
PROGS = Path(__file__).resolve().parent / "progs"


@pytest.fixture(scope="session")
def ops_bin(tmp_path_factory):
    """tests/progs/ops.c (see its header), built with `cc -O0 -Wall`."""
    out = tmp_path_factory.mktemp("cli-progs") / "ops"
    proc = subprocess.run(["cc", "-O0", "-Wall", "-Wextra", "-o", str(out),
                           str(PROGS / "ops.c")], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        pytest.fail(f"cc ops.c failed:\n{proc.stderr}")
    return str(out)


@pytest.fixture(scope="session")
def library():
    for path in (runner.FAULT_LIB, plan_mod.PLANCK, runner.FIU_PRELOAD):
        if not path.is_file():
            pytest.fail(f"{path} missing: run 'make'")


def cli(*args, cwd, env=None, input=None, timeout=30):
    return subprocess.run([str(CRASHCHECK), *map(str, args)], cwd=cwd,
                          env=env, input=input, capture_output=True,
                          text=True, timeout=timeout)


def our_lines(stderr):
    return [line for line in stderr.splitlines()
            if line.startswith("crashcheck: ")]


def assert_usage_error(proc, *words):
    """Exit 2, nothing on stdout, exactly one line on stderr, naming the
    problem."""
    lines = proc.stderr.splitlines()
    assert proc.returncode == 2, \
        f"status {proc.returncode}, stderr:\n{proc.stderr}"
    assert len(lines) == 1 and lines[0].startswith("crashcheck: "), \
        f"expected one 'crashcheck: ' line, got:\n{proc.stderr}"
    assert proc.stdout == ""
    for w in words:
        assert w in lines[0], f"{w!r} not in {lines[0]!r}"
    return lines[0]


# --- the command line itself ------------------------------------------------

@pytest.mark.parametrize("args,words", [
    ([], ["missing command", "inject", "trace"]),
    (["frobnicate"], ["invalid choice", "frobnicate"]),
    (["inject"], ["PLAN"]),
    (["inject", "write#1=EIO"], ["missing '--'"]),
    (["inject", "write#1=EIO", "./prog", "arg"], ["missing '--'"]),
    (["inject", "write#1=EIO", "--"], ["missing program after '--'"]),
    (["inject", "--timeout", "abc", "write#1=EIO", "--", "true"],
     ["--timeout", "'abc'"]),
    (["inject", "--timeout", "0", "write#1=EIO", "--", "true"],
     ["--timeout", "'0'"]),
    (["inject", "--timeout", "-1", "write#1=EIO", "--", "true"],
     ["--timeout", "'-1'"]),
    (["inject", "--timeout", "nan", "write#1=EIO", "--", "true"],
     ["--timeout", "'nan'"]),
    (["inject", "--timeout"], ["--timeout"]),
    (["inject", "--bogus", "write#1=EIO", "--", "true"], ["--bogus"]),
    (["inject", "--tim", "3", "write#1=EIO", "--", "true"], ["--tim"]),
    (["trace"], ["missing '--'"]),
    (["trace", "--", ""], ["empty program name"]),
    (["trace", "extra", "--", "true"], ["unrecognized", "extra"]),
])
def test_bad_command_lines_are_one_line_and_exit_2(tmp_path, args, words):
    assert_usage_error(cli(*args, cwd=tmp_path), *words)


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["inject", "--help"],
                                  ["trace", "--help"]])
def test_help(tmp_path, args):
    proc = cli(*args, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout.startswith("usage: crashcheck")
    if args[0] == "inject":
        assert "PLAN -- PROGRAM [ARG...]" in proc.stdout
        for opt in ("--trace FILE", "--timeout S", "--strict"):
            assert opt in proc.stdout
    elif args[0] == "trace":
        assert "-- PROGRAM [ARG...]" in proc.stdout
        for opt in ("--output FILE", "--all", "--timeout S"):
            assert opt in proc.stdout
    else:
        assert "inject" in proc.stdout and "trace" in proc.stdout


def test_words_after_the_separator_belong_to_the_program(tmp_path, library):
    # `--help` after `--` is the program's: sh prints its argument.
    proc = cli("trace", "--", "sh", "-c", 'echo "$1"', "sh", "--help",
               cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "--help\n"


def test_bad_plan_is_planck_line_and_program_never_runs(tmp_path, ops_bin):
    proc = cli("inject", "fsnyc#1=EIO", "--", ops_bin, "open", "ran",
               "w,creat", cwd=tmp_path)
    line = assert_usage_error(proc, "bad plan", "fsnyc")
    assert not line.startswith("crashcheck: planck:"), line
    assert not (tmp_path / "ran").exists()


def test_empty_plan_is_refused(tmp_path, ops_bin):
    proc = cli("inject", " ", "--", ops_bin, "open", "ran", "w,creat",
               cwd=tmp_path)
    assert_usage_error(proc, "empty plan")
    assert not (tmp_path / "ran").exists()


def test_program_that_cannot_run(tmp_path, library):
    plain = tmp_path / "plain"
    plain.write_text("#!/bin/sh\n")
    plain.chmod(0o644)
    for program, words in ((tmp_path / "nosuch", ["not found", "nosuch"]),
                           ("nosuch-crashcheck-prog", ["not found in PATH"]),
                           (plain, ["not executable", "plain"]),
                           (tmp_path, ["is a directory"])):
        for sub in (["inject", "write#1=EIO"], ["trace"]):
            assert_usage_error(cli(*sub, "--", program, cwd=tmp_path), *words)


def test_trace_file_that_cannot_be_written(tmp_path, ops_bin, library):
    proc = cli("inject", "--trace", tmp_path / "no" / "dir" / "t.jsonl",
               "write#1=EIO", "--", ops_bin, "open", "ran", "w,creat",
               cwd=tmp_path)
    assert_usage_error(proc, "cannot create trace file",
                       "No such file or directory")
    assert not (tmp_path / "ran").exists()


def test_runs_from_any_directory_through_a_symlink(tmp_path, library):
    link = tmp_path / "bin" / "cc-link"
    link.parent.mkdir()
    link.symlink_to(CRASHCHECK)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # A `harness` package in the working directory must not shadow ours.
    (elsewhere / "harness").mkdir()
    (elsewhere / "harness" / "__init__.py").write_text("raise SystemExit(99)\n")
    proc = subprocess.run([str(link), "trace", "--", "true"], cwd=elsewhere,
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr


def test_ignores_the_python3_first_on_path(tmp_path, library):
    fake = tmp_path / "fakebin"
    fake.mkdir()
    for name in ("python3", "python"):
        (fake / name).write_text("#!/bin/sh\necho fake python >&2\nexit 99\n")
        (fake / name).chmod(0o755)
    env = dict(os.environ, PATH=f"{fake}:{os.environ['PATH']}",
               PYTHONPATH=str(tmp_path / "nowhere"))
    proc = cli("trace", "--", "true", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "fake python" not in proc.stderr


def test_missing_system_python_is_one_line(tmp_path):
    # The shim with its interpreter path pointing nowhere: what a machine
    # without /usr/bin/python3 sees.
    copy = tmp_path / "scripts" / "crashcheck"
    copy.parent.mkdir()
    text = CRASHCHECK.read_text()
    assert "PYTHON=/usr/bin/python3\n" in text
    copy.write_text(text.replace("PYTHON=/usr/bin/python3\n",
                                 "PYTHON=/nonexistent/python3\n"))
    copy.chmod(0o755)
    proc = subprocess.run([str(copy), "--help"], capture_output=True,
                          text=True, cwd=tmp_path)
    assert_usage_error(proc, "/nonexistent/python3 not found")


# --- inject -----------------------------------------------------------------

def test_inject_passes_output_through_and_reports_fired(tmp_path, ops_bin,
                                                        library):
    proc = cli("inject", "fsync#1=EIO", "--", ops_bin, "open", "f",
               "w,creat", "write", 10, "fsync", "fsync", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    # The program's stdout is the user's, untouched.
    assert proc.stdout.splitlines() == ["open f w,creat = 3", "write 10 = 10",
                                        "fsync = -1 EIO", "fsync = 0"]
    assert proc.stderr.splitlines() == [
        "crashcheck: fired fsync#1=EIO (1 call)"]
    assert (tmp_path / "f").stat().st_size == 10     # ran in the cwd


@pytest.mark.parametrize("backend", ["preload", "syscall"])
def test_inject_aims_at_a_case_ids_file_names(tmp_path, library, backend):
    """A case id's call names its file from the program's work directory,
    '.' for the directory itself (`fsync(.)#1`): pasted into inject, it
    names the same call, from the directory inject runs the program in."""
    (tmp_path / "target").write_text("old\n")
    (tmp_path / "new").write_text("new\n")
    # the system call under glibc's open() is openat
    opener = "open" if backend == "preload" else "openat"
    for plan, call, target in (
            (f"{opener}(target.tmp)#1=EIO", "open 'target.tmp'", "old\n"),
            ("fsync(.)#1=EIO", "fsync '.'", "new\n")):  # after the rename
        proc = cli("inject", "--backend", backend, plan, "--", REPLACE,
                   "--strategy=sync", "target", "new", cwd=tmp_path)
        assert proc.returncode == 1, proc.stderr
        assert f"replace: {call}: Input/output error" in proc.stderr
        assert our_lines(proc.stderr) == [f"crashcheck: fired {plan} (1 call)"]
        assert (tmp_path / "target").read_text() == target


def test_inject_counts_calls_of_a_persistent_rule(tmp_path, ops_bin, library):
    proc = cli("inject", "write#2+=ENOSPC;fsync#1=EIO", "--", ops_bin,
               "open", "f", "w,creat", "write", 1, "write", 1, "write", 1,
               "write", 1, cwd=tmp_path)
    assert proc.returncode == 0
    assert our_lines(proc.stderr) == [
        "crashcheck: fired write#2+=ENOSPC (3 calls)",
        "crashcheck: never fired: fsync#1=EIO (the program made no fsync "
        "calls)"]


@pytest.mark.parametrize("plan,reason", [
    ("write#9=EIO", "the program made 3 write calls"),
    ("write(*.tmp)#1=EIO", "the program made 3 write calls, 0 on a path "
                           "matching '*.tmp'"),
    ("rename#1=crash", "the program made no rename calls"),
])
def test_inject_says_plainly_a_rule_never_fired(tmp_path, ops_bin, library,
                                                plan, reason):
    args = [ops_bin, "open", "f", "w,creat", "write", 1, "write", 1,
            "write", 1, "exit", 4]
    proc = cli("inject", plan, "--", *args, cwd=tmp_path)
    # Still the program's status...
    assert proc.returncode == 4, proc.stderr
    assert our_lines(proc.stderr) == \
        [f"crashcheck: never fired: {plan} ({reason})"]
    # ...unless --strict, which makes a rule that did nothing an error.
    proc = cli("inject", "--strict", plan, "--", *args, cwd=tmp_path)
    assert proc.returncode == 3
    assert our_lines(proc.stderr) == \
        [f"crashcheck: never fired: {plan} ({reason})"]


def test_strict_passes_the_status_through_when_every_rule_fired(
        tmp_path, ops_bin, library):
    proc = cli("inject", "--strict", "write#1=EIO", "--", ops_bin, "open",
               "f", "w,creat", "write", 1, "exit", 5, cwd=tmp_path)
    assert proc.returncode == 5, proc.stderr


def test_inject_planned_crash_exits_137(tmp_path, ops_bin, library):
    (tmp_path / "old").write_text("x")
    proc = cli("inject", "rename#1=crash", "--", ops_bin, "rename", "old",
               "new", cwd=tmp_path)
    assert proc.returncode == 137
    assert proc.stdout == ""
    assert our_lines(proc.stderr) == ["crashcheck: fired rename#1=crash (1 call)"]
    assert (tmp_path / "old").exists() and not (tmp_path / "new").exists()
    # crash-after: one firing, not one per trace record.
    proc = cli("inject", "rename#1=crash-after", "--", ops_bin, "rename",
               "old", "new", cwd=tmp_path)
    assert proc.returncode == 137
    assert our_lines(proc.stderr) == \
        ["crashcheck: fired rename#1=crash-after (1 call)"]
    assert (tmp_path / "new").exists() and not (tmp_path / "old").exists()


def test_inject_exit_status_of_a_signal(tmp_path, ops_bin, library):
    proc = cli("inject", "write#1=EIO", "--", ops_bin, "open", "f",
               "w,creat", "write", 1, "kill", int(signal.SIGSEGV),
               cwd=tmp_path)
    assert proc.returncode == 128 + signal.SIGSEGV
    assert our_lines(proc.stderr) == [
        "crashcheck: the program was killed by SIGSEGV",
        "crashcheck: fired write#1=EIO (1 call)"]


def test_inject_says_when_the_library_cannot_load(tmp_path, library):
    # A static program has no dynamic loader to honour LD_PRELOAD: no rule
    # can reach it, and crashcheck must say so rather than "never fired"
    # alone.
    static = tmp_path / "ops-static"
    proc = subprocess.run(["cc", "-static", "-O0", "-o", str(static),
                           str(PROGS / "ops.c")], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot link statically here: {proc.stderr.strip()}")
    proc = cli("inject", "--backend=preload", "write#1=EIO", "--", static,
               "open", "f", "w,creat", "write", 1, cwd=tmp_path)
    assert proc.returncode == 0
    assert "write 1 = 1" in proc.stdout.splitlines()
    assert our_lines(proc.stderr) == [
        f"crashcheck: the fault library did not load in {static} "
        "(statically linked or setuid?): no rule could fire "
        "(--backend=syscall reaches such programs)",
        "crashcheck: never fired: write#1=EIO (the program made no write "
        "calls)"]
    # auto (the default) sees that the preload cannot enter it, and runs
    # it under the system-call supervisor, where the rule fires (on the
    # file: there stdio's writes to stdout are write calls too)
    (tmp_path / "f").unlink()
    proc = cli("inject", "write(f)#1=EIO", "--", static, "open", "f",
               "w,creat", "write", 1, cwd=tmp_path)
    assert "write 1 = -1 EIO" in proc.stdout.splitlines(), proc.stdout
    assert our_lines(proc.stderr) == [
        "crashcheck: ops-static is statically linked: using the system-call "
        "backend (--backend=syscall)",
        "crashcheck: fired write(f)#1=EIO (1 call)"]


def test_inject_keeps_the_trace_with_trace_option(tmp_path, ops_bin, library):
    kept = tmp_path / "kept.jsonl"
    kept.write_text("stale line from another run\n")
    proc = cli("inject", "--trace", "kept.jsonl", "write#2=EIO", "--",
               ops_bin, "open", "f", "w,creat", "write", 1, "write", 1,
               cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in kept.read_text().splitlines()]
    assert records[0]["ev"] == "init" and records[0]["plan"] == "write#2=EIO"
    calls = [(r["call"], r["n"], bool(r.get("fault"))) for r in records
             if r["ev"] == "call"]
    assert calls == [("open", 1, False), ("write", 1, False),
                     ("write", 2, True)]


def test_inject_passes_stdin_through(tmp_path, library):
    # (sh's echo is a write(2): the plan must leave it alone.)
    proc = cli("inject", "fsync#1=EIO", "--", "sh", "-c",
               'read x; echo "got $x"', cwd=tmp_path, input="hello\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "got hello\n"


def test_inject_ignores_a_stale_plan_in_the_environment(tmp_path, ops_bin,
                                                        library):
    env = dict(os.environ, CRASHCHECK_PLAN="write#1=EIO",
               CRASHCHECK_TRACE=str(tmp_path / "stale"))
    proc = cli("trace", "--", ops_bin, "open", "f", "w,creat", "write", 1,
               cwd=tmp_path, env=env)
    assert "write 1 = 1" in proc.stdout.splitlines()
    assert not (tmp_path / "stale").exists()


def _wait_for(path, limit=10.0):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return int(path.read_text())
        time.sleep(0.02)
    raise AssertionError(f"{path} never written")


def _gone(pid, limit=5.0):
    """The process has exited (a zombie waiting for init counts as gone)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.02)
    return False


def test_timeout_kills_the_whole_group(tmp_path, library):
    start = time.monotonic()
    proc = cli("inject", "--timeout", "0.5", "fsync#1=EIO", "--", "sh", "-c",
               "sleep 30 & echo $! > bg; wait", cwd=tmp_path)
    assert time.monotonic() - start < 10
    assert proc.returncode == 124, proc.stderr
    lines = our_lines(proc.stderr)
    assert lines[0].startswith("crashcheck: timed out after 0.")
    assert lines[1].startswith("crashcheck: never fired: fsync#1=EIO")
    assert _gone(int((tmp_path / "bg").read_text())), "background child survived"


@pytest.mark.parametrize("sig,status", [(signal.SIGINT, 130),
                                        (signal.SIGTERM, 128 + 15)])
def test_interrupt_kills_the_program(tmp_path, library, sig, status):
    proc = subprocess.Popen(
        [str(CRASHCHECK), "trace", "--", "sh", "-c",
         "sleep 30 & echo $! > bg; wait"], cwd=tmp_path,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        bg = _wait_for(tmp_path / "bg")
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=10)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == status, err
    assert _gone(bg), "the program outlived crashcheck"


# --- trace ------------------------------------------------------------------

def test_trace_lists_numbered_calls(tmp_path, ops_bin, library):
    proc = cli("trace", "--", ops_bin, "open", "f", "w,creat", "write", 10,
               "write", 5, "fsync", "close", "rename", "f", "g", "exit", 3,
               cwd=tmp_path)
    assert proc.returncode == 3
    assert proc.stdout.splitlines()[-1] == "rename f g = 0"
    lines = proc.stderr.splitlines()
    assert [line.split()[0] for line in lines] == [
        "open#1", "write#1", "write#2", "fsync#1", "close#1", "rename#1"]
    assert lines[3] == "fsync#1 fd=3 'f' = 0"
    assert lines[1].startswith("write#1 fd=3 'f' off=0 len=10")
    assert lines[1].endswith(" = 10")
    assert lines[2].startswith("write#2 fd=3 'f' off=10 len=5")
    assert lines[5] == "rename#1 'f' -> 'g' = 0"


def test_trace_shows_failures_with_errno(tmp_path, ops_bin, library):
    proc = cli("trace", "--", ops_bin, "rename", "nosuch", "x", cwd=tmp_path)
    assert proc.stderr.splitlines() == ["rename#1 'nosuch' -> 'x' = -1 ENOENT"]


def test_trace_all_adds_pids_and_process_starts(tmp_path, ops_bin, library):
    proc = cli("trace", "--all", "--", ops_bin, "open", "f", "w,creat",
               "write", 1, "fork", "write", 1, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    pids = [re.match(r"\[pid (\d+)\] ", line) for line in lines]
    assert all(pids), lines
    assert f"] start {ops_bin} (parent " in lines[0], lines[0]
    writes = [(m.group(1), line.split()[2]) for m, line in zip(pids, lines)
              if " write#" in line]
    assert [w[1] for w in writes] == ["write#1", "write#2"]
    assert writes[0][0] != writes[1][0], "child's write under the parent's pid"


def test_trace_output_file(tmp_path, ops_bin, library):
    proc = cli("trace", "-o", "listing", "--", ops_bin, "open", "f",
               "w,creat", "fsync", cwd=tmp_path)
    assert proc.returncode == 0
    assert proc.stderr == ""
    assert (tmp_path / "listing").read_text().splitlines()[1] == \
        "fsync#1 fd=3 'f' = 0"


def test_trace_timeout(tmp_path, library):
    proc = cli("trace", "--timeout", "0.3", "--", "sleep", "30",
               cwd=tmp_path)
    assert proc.returncode == 124
    assert our_lines(proc.stderr)[0].startswith("crashcheck: timed out")


# --- issue 3's done-when checks, with the real workload -------------------

needs_replace = pytest.mark.skipif(
    not os.access(REPLACE, os.X_OK),
    reason=f"{REPLACE.relative_to(ROOT)} not built yet (make -C workloads)")

OLD = b"old content\n" * 100
NEW = bytes(range(256)) * 40          # 10240 bytes, more than one write


@pytest.fixture
def files(tmp_path):
    (tmp_path / "T").write_bytes(OLD)
    (tmp_path / "N").write_bytes(NEW)
    return tmp_path


def replace(files, plan, strategy="sync", sub="inject"):
    args = [sub, plan] if sub == "inject" else [sub]
    return cli(*args, "--", REPLACE, f"--strategy={strategy}", "T", "N",
               cwd=files)


@needs_replace
@pytest.mark.parametrize("strategy", ["sync", "stdio"])
def test_done_fsync_eio_fails_replace(files, library, strategy):
    proc = replace(files, "fsync#1=EIO", strategy)
    assert proc.returncode == 1, proc.stderr
    assert "Input/output error" in proc.stderr
    assert "crashcheck: fired fsync#1=EIO (1 call)" in our_lines(proc.stderr)
    target = (files / "T").read_bytes()
    if strategy == "stdio":
        # fsync#1 is the temp file's: the rename never happened.
        assert target == OLD, "T changed although replace failed before rename"
    else:
        # --strategy=sync writes O_DSYNC and never fsyncs the file: fsync#1
        # is the directory's, after the rename (replace.c's stated
        # exception). T is intact: wholly the new content.
        assert target == NEW, f"T is neither intact old nor new: {target[:32]!r}"
    assert not (files / "T.tmp").exists()


@needs_replace
@pytest.mark.parametrize("plan", ["write#1=short:100", "write#1=EINTR"])
def test_done_transient_faults_are_survived(files, library, plan):
    proc = replace(files, plan)
    assert proc.returncode == 0, proc.stderr
    assert f"crashcheck: fired {plan} (1 call)" in our_lines(proc.stderr)
    assert (files / "T").read_bytes() == NEW


@needs_replace
def test_done_misspelled_call_exits_2(files, library):
    proc = replace(files, "fsnyc#1=EIO")
    assert_usage_error(proc, "fsnyc")
    assert (files / "T").read_bytes() == OLD
    assert not (files / "T.tmp").exists()


@needs_replace
def test_done_rule_that_cannot_fire_is_reported(files, library):
    proc = replace(files, "write#999=EIO")
    assert proc.returncode == 0
    lines = our_lines(proc.stderr)
    assert len(lines) == 1 and \
        lines[0].startswith("crashcheck: never fired: write#999=EIO (the "
                            "program made "), lines
    assert (files / "T").read_bytes() == NEW


@needs_replace
def test_done_trace_numbers_every_call(files, library):
    proc = replace(files, None, sub="trace")
    assert proc.returncode == 0, proc.stderr
    seen = {}
    for line in proc.stderr.splitlines():
        m = re.match(r"(\w+)#(\d+) ", line)
        assert m, f"unnumbered line {line!r}"
        name, n = m.group(1), int(m.group(2))
        seen[name] = seen.get(name, 0) + 1
        assert n == seen[name], f"{line!r}: expected {name}#{seen[name]}"
    for name in ("openat", "write", "rename", "fsync", "close"):
        assert name in seen or name == "openat" and "open" in seen, \
            f"no {name} in the listing:\n{proc.stderr}"
    assert "rename#1 'T.tmp' -> 'T' = 0" in proc.stderr.splitlines()
