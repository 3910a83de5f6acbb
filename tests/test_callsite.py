"""Where a call was made: the trace's "at" field (docs/design.md, Trace).

tests/progs/callsite.c makes its calls from lines marked SITE:<name>, and
tests/progs/lib/callsite_lib.c makes an fsync from inside a shared library;
each call's "at" must name the object it came from, and its offset less
one (a return address points past the call) must be the marked line
when addr2line reads the object's debug information. Built as a PIE and
as a fixed-address executable, whose offsets are addresses.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # noqa: E402
from harness.engine import runner  # noqa: E402
from harness.engine import trace as trace_mod  # noqa: E402

PROGS = Path(__file__).resolve().parent / "progs"


def build(args):
    proc = subprocess.run(["cc", "-g", "-O0", "-fno-builtin", "-Wall", "-Wextra"] + args,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def sites(src):
    """{name: line} of the SITE:<name> marks of SRC."""
    return {m[1]: n for n, line in enumerate(src.read_text().splitlines(), 1)
            for m in [re.search(r"SITE:([\w-]+)", line)] if m}


def line_of(at):
    """The source line addr2line gives for an "at" value, and its object."""
    obj, _, off = at.rpartition("+0x")
    out = subprocess.run(["addr2line", "-e", obj, hex(int(off, 16) - 1)],
                         capture_output=True, text=True, check=True).stdout
    m = re.search(r":(\d+)", out)
    return obj, int(m[1]) if m else None


@pytest.fixture(scope="module")
def progs(tmp_path_factory):
    d = tmp_path_factory.mktemp("callsite")
    build(["-o", str(d / "callsite"), str(PROGS / "callsite.c")])
    build(["-no-pie", "-o", str(d / "callsite-fixed"),
           str(PROGS / "callsite.c")])
    for name in ("liba.so", "libb.so"):
        build(["-shared", "-fPIC", "-o", str(d / name),
               str(PROGS / "lib" / "callsite_lib.c")])
    return d


def traced(tmp_path, argv):
    work = tmp_path / "work"
    work.mkdir()
    trace = tmp_path / "trace.jsonl"
    env = runner.build_env("", trace, work, tmp_path / "snaps",
                           tmp_path / "shared", program=str(argv[0]), cwd=work)
    run = runner.run([str(a) for a in argv], cwd=work, preload=False,
                     env=env, timeout=60)
    assert run.status == 0, run.stderr_text()
    return trace_mod.calls(trace_mod.load(trace))


@pytest.mark.parametrize("exe", ["callsite", "callsite-fixed"])
def test_each_call_names_the_line_it_was_made_from(tmp_path, progs, exe):
    want = sites(PROGS / "callsite.c")
    lib_line = sites(PROGS / "lib" / "callsite_lib.c")["lib-fsync"]
    calls = traced(tmp_path, [progs / exe, tmp_path / "work",
                              progs / "liba.so", progs / "libb.so"])
    seen = {}
    for rec in calls:
        assert "at" in rec, f"{rec['call']}#{rec['n']} has no 'at'"
        seen.setdefault(rec["call"], []).append(line_of(rec["at"]))
    for name in ("open", "write", "close", "fopen", "fputs", "fclose"):
        assert seen[name][0] == (str(progs / exe), want[name]), name
    # the program's fsync, then one from each library, each named as
    # the library it came from: libb.so loads where liba.so was
    assert seen["fsync"] == [(str(progs / exe), want["fsync"]),
                             (str(progs / "liba.so"), lib_line),
                             (str(progs / "libb.so"), lib_line)]


def test_a_crash_line_names_where_the_call_was_made(tmp_path, progs):
    work = tmp_path / "work"
    work.mkdir()
    trace = tmp_path / "trace.jsonl"
    env = runner.build_env("fsync#1=crash", trace, work, tmp_path / "snaps",
                           tmp_path / "shared",
                           program=str(progs / "callsite"), cwd=work)
    runner.run([str(progs / "callsite"), str(work)], cwd=work,
               preload=False, env=env, timeout=60)
    crash, = [r for r in trace_mod.load(trace) if r["ev"] == "crash"]
    assert line_of(crash["at"]) == (str(progs / "callsite"),
                                    sites(PROGS / "callsite.c")["fsync"])
