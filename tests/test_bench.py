"""scripts/bench runs and prints its table. No timing is asserted: the
figures depend on the machine; that every row is there does not."""

import re
import subprocess
import sys

import pytest

from harness import ROOT

BENCH = ROOT / "scripts" / "bench"


@pytest.mark.plain
def test_quick_prints_every_row():
    proc = subprocess.run([sys.executable, str(BENCH), "--quick"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    out = proc.stdout
    for row in ("(a) floor", "(b) sweep", "of which fixed", "(c) strace", "(d) fiu-run",
                "(h) sweep --backend syscall", "floor under the supervisor",
                "syscall / strace", "(e) sweep / floor", "sweep / strace",
                "sweep / fiu-run", "states/s", "(f) default make run",
                "(g) scaling", "(i) crash states judged per second",
                "no checker (", "a checker (minikv's", "dedup",
                "(j) scale: not run (--quick)"):
        assert row in out, f"expected a '{row}' row in:\n{out}"
    # the scaling table has one line per number of writes, each with a
    # number of cases that grows with it (writes, cases, sweep s, ms/case,
    # fixed s, ms/case after it, floor ms, ratio; on a small sample the
    # figure after the fixed part can come out below zero)
    rows = re.findall(r"^\s+(\d+)\s+(\d+)\s+[\d.]+\s+[\d.]+\s+[\d.]+"
                      r"\s+-?[\d.]+\s+[\d.]+\s+-?[\d.]+x$", out, re.M)
    assert [int(w) for w, _ in rows] == [1, 10, 100], out
    cases = [int(c) for _, c in rows]
    assert cases == sorted(cases) and cases[0] < cases[-1], out
    # and the slope between each two rows: sweep / program, microseconds
    slopes = re.findall(r"^\s+(\d+) -> (\d+)\s+-?[\d.]+ / -?[\d.]+$", out, re.M)
    assert slopes == [("1", "10"), ("10", "100")], out
    # and it says, first and last, that its figures mean nothing, and
    # holds none of them against a target
    warning = "--quick: these figures mean nothing"
    assert out.count(warning) == 2, out
    assert out.strip().splitlines()[-4].strip().startswith(warning), out
    assert "target" not in out, out


@pytest.mark.parametrize("args, problem", [
    (["--jobs", "0"], "--jobs"),
    (["--bogus"], "unrecognized arguments"),
])
def test_bad_option_is_one_line_and_exit_2(args, problem):
    proc = subprocess.run([sys.executable, str(BENCH), *args],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bench: ") and problem in lines[0], \
        proc.stderr
