"""Faults never hit the program's stdout or stderr (crash-model.md, "Where
a run starts"): a rule aimed at the program's files does not fire on a
call to the descriptors that were the process tree's stdout and stderr at
its start, so a program can always say what went wrong. A child whose own
descriptor 1 is a file (a shell's `cat > out`) writes a file like any
other, and is faulted."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # noqa: E402
from harness.engine import runner  # noqa: E402
from harness.engine import trace as trace_mod  # noqa: E402

PROGS = Path(__file__).resolve().parent / "progs"


@pytest.fixture(scope="module")
def errmsg(tmp_path_factory):
    exe = tmp_path_factory.mktemp("std") / "errmsg"
    proc = subprocess.run(["cc", "-O1", "-Wall", "-Wextra", "-o", str(exe),
                           str(PROGS / "errmsg.c")], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    return exe


def run(tmp_path, argv, plan):
    """ARGV under PLAN, as the harness runs it: one counter file for the
    process tree, which also keeps the tree's stdout and stderr."""
    trace = tmp_path / "trace.jsonl"
    return runner.run([str(a) for a in argv], cwd=tmp_path, plan=plan,
                      trace=trace, shared=tmp_path / "shared",
                      timeout=60), trace_mod.load(trace)


@pytest.mark.parametrize("plan", ["write#1+=EIO", "write#1+=ENOSPC",
                                  "fprintf#1+=EIO;fflush#1+=EIO;write#1+=EIO",
                                  "fflush#1+=EIO"])
def test_a_persistent_fault_leaves_the_error_message_alone(tmp_path, errmsg,
                                                           plan):
    r, records = run(tmp_path, [errmsg, "out"], plan)
    err = r.stderr_text()
    if plan == "fflush#1+=EIO":
        # nothing of the file's fails: the program succeeds
        assert r.status == 0, err
        return
    assert r.status == 1, err
    for line in ("errmsg: write 'out':", "dprintf to stderr",
                 "write(2) to stderr"):
        assert line in err, (plan, err)
    assert b"errmsg: stdout" in r.stdout
    faulted = [c for c in trace_mod.calls(records) if c.get("fault")]
    assert faulted and {c["path"].rsplit("/", 1)[-1] for c in faulted} == \
        {"out"}, faulted


@pytest.mark.parametrize("plan", ["write#1+=EIO", "copy_file_range#1+=EIO"])
def test_a_childs_stdout_that_is_a_file_is_faulted(tmp_path, plan):
    """cat copies with copy_file_range where it can, else with write; the
    rule of the other call never fires."""
    (tmp_path / "in").write_bytes(b"x" * 100)
    r, records = run(tmp_path, ["sh", "-c", "cat in > out"], plan)
    if not any(c.get("fault") for c in trace_mod.calls(records)):
        pytest.skip(f"this cat makes no {plan.split('#')[0]} to out")
    assert r.status != 0
    assert "Input/output error" in r.stderr_text()
