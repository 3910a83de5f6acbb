"""Integration tests of the fault library (faults/libcrashcheck.so): every
action does exactly what the plan language says, on every call the issue
names, and the trace tells the truth about it.

The programs under test are tests/progs/*.c, compiled once per session.
tests/progs/ops.c makes exactly the calls its arguments list and prints
what each returned, so every test checks what the program observed (the
errno, the byte count), what is on disk afterwards, and what the trace
says -- never only one of them.

Runs go through harness.engine.runner (the harness's own way to run a program
under a plan), each in a fresh directory under tmp_path.
"""

import errno
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # noqa: E402
from harness import calls as calls_mod  # noqa: E402
from harness.engine import plan as plan_mod  # noqa: E402
from harness.engine import runner  # noqa: E402
from harness.engine import trace as trace_mod  # noqa: E402

PROGS = Path(__file__).resolve().parent / "progs"

# The calls issue 3 requires the actions to be proven on.
CALLS = ["write", "pwrite", "writev", "fwrite", "fflush", "fclose", "fsync",
         "fdatasync", "msync", "close", "rename", "openat", "renameat"]
ERRNOS = ["EIO", "ENOSPC", "EINTR"]


# --- building and running the test programs -------------------------------

def compile_progs(outdir):
    """Every tests/progs/*.c, built with `cc -O0 -Wall`; a build failure
    fails the session with the compiler's words."""
    cc = shutil.which("cc")
    if cc is None:
        pytest.fail("no C compiler 'cc' on PATH")
    built = {}
    for src in sorted(PROGS.glob("*.c")):
        exe = outdir / src.stem
        proc = subprocess.run([cc, "-O0", "-Wall", "-Wextra", "-o", str(exe),
                               str(src)], capture_output=True, text=True)
        if proc.returncode != 0:
            pytest.fail(f"cc {src.name} failed:\n{proc.stderr}")
        built[src.stem] = exe
    return built


@pytest.fixture(scope="session")
def progs(tmp_path_factory):
    return compile_progs(tmp_path_factory.mktemp("progs"))


@pytest.fixture(scope="session")
def library():
    """The fault library and planck must be built: a missing library is a
    failure of these tests, never a skip (a fault that cannot reach the
    program must never look like a pass)."""
    for path in (runner.FAULT_LIB, plan_mod.PLANCK, runner.FIU_PRELOAD):
        if not path.is_file():
            pytest.fail(f"{path} missing: run 'make' (libfiu: "
                        "scripts/install-deps)")


@dataclass
class Step:
    label: str          # the step as ops printed it: "write 10"
    ret: int | None     # what the call returned
    err: str | None     # the errno's name when the call reported failure

    @property
    def name(self):
        return self.label.split()[0]

    @property
    def ok(self):
        return self.err is None


def parse_steps(out):
    steps = []
    for line in out.decode().splitlines():
        label, sep, rest = line.rpartition(" = ")
        if not sep:
            steps.append(Step(line, None, None))    # "child exited 0"
            continue
        words = rest.split()
        steps.append(Step(label, int(words[0]),
                          words[1] if len(words) > 1 else None))
    return steps


@dataclass
class Result:
    run: runner.Run
    steps: list
    records: list
    dir: Path

    def of(self, name):
        """The steps that made call NAME, in order."""
        return [s for s in self.steps if s.name == name]

    def traced(self, name=None):
        return [r for r in trace_mod.calls(self.records)
                if name is None or r["call"] == name]

    def describe(self):
        return (f"status={self.run.status} signal={self.run.signal}\n"
                f"stdout:\n{self.run.stdout.decode()}"
                f"stderr:\n{self.run.stderr_text()}")


def flatten(steps):
    return [str(w) for step in steps for w in step]


class Runner:
    """Runs ops in a fresh directory per run: tmp_path/runN/d is the
    program's working directory, the trace and the shared counters sit
    next to it (outside, so no glob or listing ever sees them)."""

    def __init__(self, tmp_path, progs):
        self.tmp_path = tmp_path
        self.progs = progs
        self.count = 0

    def fresh(self):
        self.count += 1
        base = self.tmp_path / f"run{self.count}"
        (base / "d").mkdir(parents=True)
        return base

    def __call__(self, steps, plan="", prog="ops", argv=None, shared=True,
                 trace=True):
        base = self.fresh()
        argv = argv if argv is not None else [str(self.progs[prog]),
                                              *flatten(steps)]
        tpath = base / "trace.jsonl" if trace else None
        run = runner.run(argv, cwd=base / "d", plan=plan, trace=tpath,
                         shared=base / "shared" if shared else None,
                         timeout=10)
        assert not run.timed_out, f"{argv} timed out"
        records = trace_mod.load(tpath) if trace else []
        return Result(run, parse_steps(run.stdout), records, base / "d")

    def reference(self, steps):
        """The same steps without the library (no faults, no trace)."""
        base = self.fresh()
        run = runner.run([str(self.progs["ops"]), *flatten(steps)],
                         cwd=base / "d", preload=False, timeout=10)
        return Result(run, parse_steps(run.stdout), [], base / "d")


@pytest.fixture
def ops(tmp_path, progs, library):
    return Runner(tmp_path, progs)


def snapshot(d):
    """Every regular file under d: relative path -> content."""
    return {str(p.relative_to(d)): p.read_bytes()
            for p in sorted(d.rglob("*")) if p.is_file()}


def letters(start, sizes):
    """The bytes ops writes: buffer k (from 0) is filled with letter k."""
    return b"".join(bytes([ord("a") + (start + i) % 26]) * n
                    for i, n in enumerate(sizes))


def plannable(call, action):
    """What calls.def says a plan may ask of CALL (plan.h's rules)."""
    faults = calls_mod.faults_for(call)
    if action == "EINTR":
        return "eintr" in faults
    if action in ("EIO", "ENOSPC"):
        return action.lower() in faults or "errno" in faults
    if action.startswith("short"):
        return "short" in faults
    if action.startswith("crash"):
        return "crash" in faults
    return "errno" in faults


# --- one recipe per call: three calls of it, in a realistic setting ------
#
# Each recipe makes its call exactly three times (so #2 has a neighbour on
# each side); check(d, failed) says what a failed call must not have done,
# where one failing call leaves a visible trace of itself.

def _content_check(sizes_per_call, name="f"):
    """Checker for the write family: call k wrote letters of its buffers,
    a failed call wrote nothing."""
    def check(d, failed):
        expect, letter = b"", 0
        for k, sizes in enumerate(sizes_per_call, 1):
            if k not in failed:
                expect += letters(letter, sizes)
            letter += len(sizes)
        got = (d / name).read_bytes()
        assert got == expect, \
            f"{name}: expected {expect!r}, found {got!r} (failed: {failed})"
    return check


def _pwrite_check(d, failed):
    expect = bytearray()
    for k in (1, 2, 3):
        if k in failed:
            continue
        off = (k - 1) * 10
        if len(expect) < off + 10:
            expect.extend(b"\0" * (off + 10 - len(expect)))
        expect[off:off + 10] = letters(k - 1, [10])
    got = (d / "f").read_bytes()
    assert got == bytes(expect), f"f: expected {bytes(expect)!r}, found {got!r}"


def _names_check(pairs):
    """rename family: a failed rename leaves the old name, else the new."""
    def check(d, failed):
        for k, (old, new) in enumerate(pairs, 1):
            present, absent = (old, new) if k in failed else (new, old)
            assert (d / present).exists(), \
                f"{present} missing after {'failed' if k in failed else 'successful'} call #{k}"
            assert not (d / absent).exists(), f"{absent} should not exist"
    return check


def _created_check(names):
    def check(d, failed):
        for k, name in enumerate(names, 1):
            assert (d / name).exists() == (k not in failed), \
                f"{name}: exists={(d / name).exists()}, call #{k} failed={k in failed}"
    return check


def _no_check(d, failed):
    pass


RECIPES = {
    "write": ([("open", "f", "w,creat"), ("write", 10), ("write", 10),
               ("write", 10), ("close",)],
              _content_check([[10], [10], [10]])),
    "pwrite": ([("open", "f", "w,creat"), ("pwrite", 10, 0),
                ("pwrite", 10, 10), ("pwrite", 10, 20), ("close",)],
               _pwrite_check),
    "writev": ([("open", "f", "w,creat"), ("writev", "4,6"),
                ("writev", "4,6"), ("writev", "4,6"), ("close",)],
               _content_check([[4, 6], [4, 6], [4, 6]])),
    "fwrite": ([("fopen", "f", "w"), ("fwrite", 10), ("fwrite", 10),
                ("fwrite", 10), ("fclose",)],
               _content_check([[10], [10], [10]])),
    "fflush": ([("fopen", "f", "w"), ("fwrite", 10), ("fflush",),
                ("fwrite", 10), ("fflush",), ("fwrite", 10), ("fflush",),
                ("fclose",)], _no_check),
    "fclose": ([("fopen", "a", "w"), ("fwrite", 1), ("fclose",),
                ("fopen", "b", "w"), ("fwrite", 1), ("fclose",),
                ("fopen", "c", "w"), ("fwrite", 1), ("fclose",)], _no_check),
    "fsync": ([("open", "f", "w,creat"), ("write", 10), ("fsync",),
               ("fsync",), ("fsync",), ("close",)], _no_check),
    "fdatasync": ([("open", "f", "w,creat"), ("write", 10), ("fdatasync",),
                   ("fdatasync",), ("fdatasync",), ("close",)], _no_check),
    "msync": ([("open", "f", "rw,creat"), ("ftruncate", 4096),
               ("mmap", 4096), ("msync", "sync"), ("msync", "sync"),
               ("msync", "sync"), ("munmap",), ("close",)], _no_check),
    "close": ([("open", "a", "w,creat"), ("close",), ("open", "b", "w,creat"),
               ("close",), ("open", "c", "w,creat"), ("close",)], _no_check),
    "rename": ([("open", "a", "w,creat"), ("open", "b", "w,creat"),
                ("open", "c", "w,creat"), ("rename", "a", "A"),
                ("rename", "b", "B"), ("rename", "c", "C")],
               _names_check([("a", "A"), ("b", "B"), ("c", "C")])),
    "renameat": ([("open", "a", "w,creat"), ("open", "b", "w,creat"),
                  ("open", "c", "w,creat"), ("renameat", "a", "A"),
                  ("renameat", "b", "B"), ("renameat", "c", "C")],
                 _names_check([("a", "A"), ("b", "B"), ("c", "C")])),
    "openat": ([("openat", "a", "w,creat"), ("openat", "b", "w,creat"),
                ("openat", "c", "w,creat")],
               _created_check(["a", "b", "c"])),
}


def check_calls(res, call, failed, err):
    """The three calls of CALL: exactly those in FAILED reported ERR (as
    the program saw it and as the trace recorded it), the others
    succeeded, and the rule's index is on the faulted records only."""
    seen = res.of(call)
    assert len(seen) == 3, f"expected 3 {call} steps\n{res.describe()}"
    for k, step in enumerate(seen, 1):
        if k in failed:
            assert step.err == err, \
                f"{call} #{k}: expected failure {err}, program saw " \
                f"'{step.label} = {step.ret} {step.err or ''}'\n{res.describe()}"
        else:
            assert step.ok, \
                f"{call} #{k}: expected success, program saw " \
                f"'{step.label} = {step.ret} {step.err}'\n{res.describe()}"
    recs = res.traced(call)
    assert [r["n"] for r in recs] == [1, 2, 3], \
        f"trace numbers {call} calls {[r['n'] for r in recs]}"
    for r in recs:
        if r["n"] in failed:
            assert r.get("fault", {}).get("rule") == 0, f"no fault on {r}"
            assert r["errno"] == getattr(errno, err), f"trace errno of {r}"
        else:
            assert not r.get("fault"), f"fault on unplanned call {r}"


# --- errno actions ----------------------------------------------------------

@pytest.mark.parametrize("err", ERRNOS)
@pytest.mark.parametrize("call", CALLS)
def test_errno_fails_exactly_the_nth_call(ops, call, err):
    plan = f"{call}#2={err}"
    if not plannable(call, err):
        # calls.def does not offer this fault for this call: the plan
        # checker must refuse it rather than let it silently not fire.
        with pytest.raises(plan_mod.PlanError, match="bad plan"):
            plan_mod.parse(plan)
        return
    steps, check = RECIPES[call]
    res = ops(steps, plan=plan)
    assert res.run.status == 0, res.describe()
    check_calls(res, call, {2}, err)
    check(res.dir, {2})
    # Nothing before the faulted call was disturbed.
    target = res.of(call)[1]
    first = next(i for i, s in enumerate(res.steps) if s is target)
    bad = [s for s in res.steps[:first] if not s.ok]
    assert not bad, f"unplanned failures {bad}\n{res.describe()}"


@pytest.mark.parametrize("call", CALLS)
def test_persistent_rule_fails_every_later_call(ops, call):
    err = "EINTR" if call in ("write", "pwrite", "writev") else "EIO"
    res = ops(RECIPES[call][0], plan=f"{call}#2+={err}")
    assert res.run.status == 0, res.describe()
    check_calls(res, call, {2, 3}, err)
    RECIPES[call][1](res.dir, {2, 3})


def test_rule_past_the_last_call_never_fires(ops):
    steps, check = RECIPES["write"]
    res = ops(steps, plan="write#4=EIO")
    assert [s.ok for s in res.of("write")] == [True] * 3, res.describe()
    check(res.dir, set())
    assert not any(r.get("fault") for r in res.records)
    assert trace_mod.fired(res.records, ["write#4=EIO"])[0].count == 0


def test_several_rules_each_fire_on_their_own_call(ops):
    res = ops([("open", "f", "w,creat"), ("write", 10), ("fsync",),
               ("write", 10), ("fsync",), ("close",)],
              plan="write#2=ENOSPC;fsync#1=EIO")
    assert [(s.label, s.err) for s in res.steps] == [
        ("open f w,creat", None), ("write 10", None), ("fsync", "EIO"),
        ("write 10", "ENOSPC"), ("fsync", None), ("close", None)], \
        res.describe()
    faults = {(r["call"], r["n"]): r["fault"]["rule"]
              for r in res.traced() if r.get("fault")}
    assert faults == {("fsync", 1): 1, ("write", 2): 0}


def test_action_a_call_does_not_take_is_refused():
    # fwrite has no short-write fault (stdio hides partial writes) and
    # fsync is never EINTR'd: planck must say no, not run a no-op.
    assert not plannable("fwrite", "short")
    assert not plannable("fsync", "EINTR")
    for plan in ("fwrite#1=short", "fsync#1=EINTR", "fsnyc#1=EIO"):
        with pytest.raises(plan_mod.PlanError, match="bad plan"):
            plan_mod.parse(plan)


# --- GLOB -------------------------------------------------------------------

def test_glob_counts_only_matching_paths(ops):
    # Writes alternate between a.tmp and b.dat; the rule counts a.tmp's
    # writes only, so its #2 is the program's third write.
    steps = [("open", "a.tmp", "w,creat"), ("open", "b.dat", "w,creat")]
    for _ in range(3):
        steps += [("use", 0), ("write", 5), ("use", 1), ("write", 5)]
    res = ops(steps, plan="write(*.tmp)#2=EIO")
    assert [s.err for s in res.of("write")] == \
        [None, None, "EIO", None, None, None], res.describe()
    assert (res.dir / "a.tmp").read_bytes() == letters(0, [5]) + letters(4, [5])
    assert (res.dir / "b.dat").read_bytes() == letters(1, [5]) + \
        letters(3, [5]) + letters(5, [5])
    faulted = [r for r in res.traced("write") if r.get("fault")]
    assert [(r["n"], Path(r["path"]).name) for r in faulted] == [(3, "a.tmp")]


def test_glob_on_the_full_path(ops, tmp_path):
    # A pattern with a '/' is matched against the absolute path.
    steps = [("open", "x", "w,creat"), ("open", "y", "w,creat"),
             ("rename", "x", "x2"), ("rename", "y", "y2")]
    res = ops(steps, plan="rename(*/d/y)#1=ENOSPC")
    assert [s.err for s in res.of("rename")] == [None, "ENOSPC"], res.describe()
    assert sorted(snapshot(res.dir)) == ["x2", "y"]


def test_persistent_glob_rule(ops):
    steps = [("openat", "keep", "w,creat"), ("openat", "t1.tmp", "w,creat"),
             ("openat", "also", "w,creat"), ("openat", "t2.tmp", "w,creat")]
    res = ops(steps, plan="openat(*.tmp)#1+=ENOSPC")
    assert [s.err for s in res.of("openat")] == \
        [None, "ENOSPC", None, "ENOSPC"], res.describe()
    assert sorted(snapshot(res.dir)) == ["also", "keep"]


# --- short writes -----------------------------------------------------------

@pytest.mark.parametrize("call,step", [
    ("write", ("write", 1000)),
    ("pwrite", ("pwrite", 1000, 0)),
])
@pytest.mark.parametrize("action,expect", [("short:100", 100), ("short", 500),
                                           ("short:1", 1)])
def test_short_write_really_writes_exactly_bytes(ops, call, step, action,
                                                 expect):
    res = ops([("open", "f", "w,creat"), step, step, ("close",)],
              plan=f"{call}#1={action}")
    got = res.of(call)
    assert [(s.ret, s.err) for s in got] == [(expect, None), (1000, None)], \
        res.describe()
    data = (res.dir / "f").read_bytes()
    if call == "write":
        # The second write starts where the short one stopped.
        assert data == letters(0, [expect]) + letters(1, [1000])
    else:
        # pwrite at offset 0 twice: the second overwrites the first.
        assert data == letters(1, [1000])
    rec = res.traced(call)[0]
    assert rec["ret"] == expect and rec.get("fault"), rec


def test_short_write_of_one_byte_stays_one_byte(ops):
    # Half of 1 is 0, and a write(2) of 0 bytes looks like "no progress";
    # the library passes at least one byte down.
    res = ops([("open", "f", "w,creat"), ("write", 1), ("close",)],
              plan="write#1=short")
    assert [(s.ret, s.err) for s in res.of("write")] == [(1, None)]
    assert (res.dir / "f").read_bytes() == b"a"


def test_writev_short_trims_bytes_not_iovecs(ops):
    # 150 of 100+100+100 bytes: all of the first iovec, half the second.
    res = ops([("open", "f", "w,creat"), ("writev", "100,100,100"),
               ("close",)], plan="writev#1=short:150")
    assert [(s.ret, s.err) for s in res.of("writev")] == [(150, None)], \
        res.describe()
    assert (res.dir / "f").read_bytes() == letters(0, [100, 50])


def test_writev_short_default_is_half_the_bytes(ops):
    res = ops([("open", "f", "w,creat"), ("writev", "10,20,31"),
               ("close",)], plan="writev#1=short")
    assert [(s.ret, s.err) for s in res.of("writev")] == [(30, None)], \
        res.describe()
    assert (res.dir / "f").read_bytes() == letters(0, [10, 20])


@pytest.fixture
def direct_io(ops):
    """An O_DIRECT-capable directory (tmp_path's filesystem) and its
    alignment, measured without the library; skip with the reason when
    the filesystem refuses O_DIRECT."""
    res = ops.reference([("open", "probe", "w,creat,direct"), ("dioalign",),
                         ("write", 4096)])
    opened = res.of("open")
    if not opened or not opened[0].ok or not res.of("write")[0].ok:
        pytest.skip(f"O_DIRECT unsupported on the filesystem of {ops.tmp_path}: "
                    f"{res.run.stdout.decode().strip()}")
    align = res.of("dioalign")[0].ret or 512
    return align


@pytest.mark.parametrize("action", ["short:5000", "short", "short:100"])
def test_short_write_on_o_direct_is_rounded_to_the_alignment(ops, direct_io,
                                                             action):
    align = direct_io
    size = 3 * 4096
    want = int(action.partition(":")[2] or size // 2)
    expect = max(align, want // align * align)
    res = ops([("open", "f", "w,creat,direct"), ("write", size), ("close",)],
              plan=f"write#1={action}")
    got = res.of("write")
    assert [(s.ret, s.err) for s in got] == [(expect, None)], \
        f"alignment {align}\n{res.describe()}"
    assert (res.dir / "f").read_bytes() == letters(0, [expect])
    rec = res.traced("write")[0]
    assert "O_DIRECT" in rec.get("flags", []), rec


# --- crash and crash-after --------------------------------------------------

def cut(steps, call, nth, after):
    """The steps up to the NTH step making CALL: before it, or through it."""
    seen = 0
    for i, step in enumerate(steps):
        if step[0] == call:
            seen += 1
            if seen == nth:
                return steps[:i + 1] if after else steps[:i]
    raise AssertionError(f"no {call} #{nth} in {steps}")


@pytest.mark.parametrize("when", ["crash", "crash-after"])
@pytest.mark.parametrize("call", CALLS)
def test_crash_leaves_the_state_of_that_instant(ops, call, when):
    """A planned crash is SIGKILL at exactly the planned instant: the files
    are byte for byte those of the same program killing itself just before
    (crash) or just after (crash-after) that call, stdio buffers lost."""
    steps, _ = RECIPES[call]
    res = ops(steps, plan=f"{call}#2={when}")
    assert res.run.signal == signal.SIGKILL, res.describe()
    after = when == "crash-after"
    ref = ops.reference(cut(steps, call, 2, after) + [("kill", 9)])
    assert ref.run.signal == signal.SIGKILL
    assert snapshot(res.dir) == snapshot(ref.dir), \
        f"files after {call}#2={when} differ from a kill {when[6:] or 'before'} " \
        f"the call"
    # The program printed every line before the call, and not the call's
    # own (even after it, the kill comes before the program sees the
    # return value).
    done = len(cut(steps, call, 2, False))
    assert [s.label for s in res.steps] == \
        [s.label for s in ref.steps[:done]], res.describe()
    crashes = [r for r in res.records if r["ev"] == "crash"]
    assert [(r["call"], r["n"], r.get("when"), r.get("rule"))
            for r in crashes] == \
        [(call, 2, "after" if after else "before", 0)], crashes
    traced = [r["n"] for r in res.traced(call)]
    assert traced == ([1, 2] if after else [1]), \
        f"{call} records in the trace: {traced}"
    # One firing, although crash-after leaves a call and a crash record.
    assert trace_mod.fired(res.records, [f"{call}#2={when}"])[0].count == 1


def test_crash_before_rename_keeps_the_old_name(ops):
    steps = [("open", "old", "w,creat"), ("write", 10), ("close",),
             ("rename", "old", "new")]
    res = ops(steps, plan="rename#1=crash")
    assert res.run.shell_status == 137
    assert snapshot(res.dir) == {"old": letters(0, [10])}
    res = ops(steps, plan="rename#1=crash-after")
    assert res.run.shell_status == 137
    assert snapshot(res.dir) == {"new": letters(0, [10])}


def test_crash_before_second_write_keeps_only_the_first(ops):
    steps = [("open", "f", "w,creat"), ("write", 100), ("write", 100)]
    res = ops(steps, plan="write#2=crash")
    assert res.run.signal == signal.SIGKILL
    assert snapshot(res.dir) == {"f": letters(0, [100])}
    res = ops(steps, plan="write#2=crash-after")
    assert snapshot(res.dir) == {"f": letters(0, [100, 100])}


# --- the trace --------------------------------------------------------------

def test_trace_records_every_call_with_its_details(ops):
    steps = [("open", "s", "w,creat,sync"), ("write", 100),
             ("pwrite", 50, 1000), ("writev", "10,20"), ("fsync",),
             ("fdatasync",), ("close",),
             ("open", "m", "rw,creat"), ("ftruncate", 8192), ("mmap", 8192),
             ("msync", "sync"), ("msync", "async"), ("munmap",), ("close",),
             ("open", ".", "r,directory"), ("fsync",), ("close",),
             ("rename", "s", "s2"), ("renameat", "m", "m2"),
             ("fopen", "st", "w"), ("fwrite", 7), ("fflush",), ("fclose",)]
    res = ops(steps)
    assert res.run.status == 0 and all(s.ok for s in res.steps), res.describe()
    d = str(res.dir)
    recs = res.traced()
    # Exactly the program's calls, in order, numbered per call name.
    names = ["open", "write", "pwrite", "writev", "fsync", "fdatasync",
             "close", "open", "ftruncate", "mmap", "msync", "msync",
             "munmap", "close", "open", "fsync", "close", "rename",
             "renameat", "fopen", "fwrite", "fflush", "fclose"]
    got = [(r["call"], r["n"]) for r in recs]
    want, count = [], {}
    for name in names:
        count[name] = count.get(name, 0) + 1
        want.append((name, count[name]))
    assert got == want, f"trace calls {got}"
    seqs = [r["seq"] for r in res.records]
    assert seqs == sorted(set(seqs)), "seq not strictly increasing"
    assert len({r["pid"] for r in res.records}) == 1

    def rec(name, n):
        return next(r for r in recs if r["call"] == name and r["n"] == n)

    o = rec("open", 1)
    assert o["path"] == f"{d}/s" and o["ret"] >= 0
    assert {"O_CREAT", "O_SYNC"} <= set(o["flags"]), o
    fd = o["ret"]
    w = rec("write", 1)
    assert (w["fd"], w["path"], w["off"], w["len"], w["ret"]) == \
        (fd, f"{d}/s", 0, 100, 100), w
    assert "O_SYNC" in w["flags"], w
    p = rec("pwrite", 1)
    assert (p["path"], p["off"], p["len"], p["ret"]) == (f"{d}/s", 1000, 50, 50)
    v = rec("writev", 1)
    assert (v["path"], v["off"], v["len"], v["ret"]) == (f"{d}/s", 100, 30, 30)
    assert rec("fsync", 1)["path"] == f"{d}/s"
    assert rec("fdatasync", 1)["path"] == f"{d}/s"
    assert rec("close", 1)["path"] == f"{d}/s"
    for n, flag in ((1, "MS_SYNC"), (2, "MS_ASYNC")):
        m = rec("msync", n)
        assert (m["path"], m["off"], m["len"], m["ret"]) == \
            (f"{d}/m", 0, 8192, 0), m
        assert flag in m["flags"], m
    assert "MAP_SHARED" in rec("mmap", 1).get("flags", []), rec("mmap", 1)
    dirsync = rec("fsync", 2)
    assert dirsync["path"] == d and dirsync.get("dir") is True, dirsync
    r = rec("rename", 1)
    assert (r["path"], r["path2"], r["ret"]) == (f"{d}/s", f"{d}/s2", 0)
    r = rec("renameat", 1)
    assert (r["path"], r["path2"], r["ret"]) == (f"{d}/m", f"{d}/m2", 0)
    assert rec("fwrite", 1)["path"] == f"{d}/st"
    assert all(not r.get("fault") for r in recs)


def test_trace_flags_o_direct(ops, direct_io):
    res = ops([("open", "f", "w,creat,direct"), ("write", 4096),
               ("close",)])
    o, w = res.traced("open")[0], res.traced("write")[0]
    assert "O_DIRECT" in o["flags"] and "O_DIRECT" in w["flags"], (o, w)
    assert (w["off"], w["len"], w["ret"]) == (0, 4096, 4096)


def test_trace_of_an_unplanned_failure_records_errno(ops):
    # A real failure (not ours) is traced as it happened, with no fault.
    res = ops([("rename", "nosuch", "x")])
    assert res.of("rename")[0].err == "ENOENT"
    r = res.traced("rename")[0]
    assert (r["ret"], r["errno"], r.get("fault")) == (-1, errno.ENOENT, None)


def test_trace_io_is_not_counted(ops):
    # The library writes the trace (init line, one line per call) with raw
    # syscalls: the program's first write is still write#1.
    steps = [("open", "f", "w,creat"), ("write", 3), ("write", 3)]
    res = ops(steps, plan="write#1=EIO")
    assert [s.err for s in res.of("write")] == ["EIO", None], res.describe()
    assert [r["n"] for r in res.traced("write")] == [1, 2]
    assert len(res.records) == 1 + 3   # init + open + two writes
    # Without a trace the numbering is the same.
    res = ops(steps, plan="write#1=EIO", trace=False)
    assert [s.err for s in res.of("write")] == ["EIO", None], res.describe()


# --- process trees ----------------------------------------------------------

def test_forked_child_counts_in_the_parents_sequence(ops):
    steps = [("open", "f", "w,creat"), ("write", 10), ("fork",),
             ("write", 10), ("write", 10)]
    res = ops(steps, plan="write#2=EIO")
    assert res.run.status == 0, res.describe()
    assert [s.err for s in res.of("write")] == [None, "EIO", None], \
        res.describe()
    assert res.steps[-1].label == "child exited 0"
    writes = res.traced("write")
    assert [r["n"] for r in writes] == [1, 2, 3]
    parent = writes[0]["pid"]
    assert writes[1]["pid"] == writes[2]["pid"] != parent
    assert writes[1]["fault"]["rule"] == 0
    inits = [r for r in res.records if r["ev"] == "init"]
    assert {r["pid"] for r in inits} == {parent}, \
        "a forked child is not a new start"
    # The child wrote through the inherited descriptor after the parent.
    assert (res.dir / "f").read_bytes() == letters(0, [10]) + letters(2, [10])


def test_crash_planned_in_a_child_kills_the_child(ops):
    steps = [("open", "f", "w,creat"), ("write", 10), ("fork",),
             ("write", 10), ("write", 10)]
    res = ops(steps, plan="write#3=crash")
    assert res.run.status == 128 + signal.SIGKILL, res.describe()
    assert res.steps[-1].label == "child killed by KILL"
    crash = [r for r in res.records if r["ev"] == "crash"]
    assert len(crash) == 1 and crash[0]["pid"] != res.traced("write")[0]["pid"]
    assert (res.dir / "f").read_bytes() == letters(0, [10, 10])


def test_execd_processes_count_in_one_sequence(ops, progs):
    # sh runs two ops one after the other: the second one's write is
    # write#2 of the tree.
    o = progs["ops"]
    script = f"{o} open a w,creat write 5; {o} open b w,creat write 5"
    res = ops(None, plan="write#2=ENOSPC", argv=["/bin/sh", "-c", script])
    assert [s.label + " " + str(s.err) for s in res.of("write")] == \
        ["write 5 None", "write 5 ENOSPC"], res.describe()
    writes = res.traced("write")
    assert [r["n"] for r in writes] == [1, 2]
    assert writes[0]["pid"] != writes[1]["pid"]
    exes = [r.get("exe") for r in res.records if r["ev"] == "init"]
    assert exes.count(str(o)) == 2, exes
    assert (res.dir / "a").stat().st_size == 5
    assert (res.dir / "b").stat().st_size == 0


def test_short_path_is_relpath_inside_the_root():
    """trace.short_path says what os.path.relpath says inside the root
    and gives the path itself outside it, for every spelling of a path,
    asked once or again (its answers for absolute paths are kept)."""
    import itertools
    import os
    from harness.engine.trace import short_path
    root, base = "/s/x", "/s/x/work"
    names = ["target", "a/b", "", ".", "..", ".hidden", "a.b", "...", "a/./b",
             "a/..", "/t", "t/", "../in/new", "x//y"]
    for _ in range(2):
        for name, (b, r) in itertools.product(names, [(base, root), (base, None),
                                                      (base + "/", root)]):
            path = f"{base}/{name}" if name else base
            limit = (r or b).rstrip("/")
            want = os.path.relpath(path, b) if (path == limit or path.startswith(limit + "/")) else path
            assert short_path(path, b, r) == want, (path, b, r)
    assert short_path("/etc/passwd", base, root) == "/etc/passwd"
    assert short_path("/s/x/workx/t", base, root) == "../workx/t"


def test_short_path_of_a_relative_base_follows_the_directory(tmp_path,
                                                             monkeypatch):
    """An answer relative to a relative base depends on the working
    directory: it must not be kept and given again elsewhere."""
    from harness.engine.trace import short_path
    (tmp_path / "w").mkdir()
    path = str(tmp_path / "w" / "x")
    monkeypatch.chdir(tmp_path)
    assert short_path(path, "w", str(tmp_path)) == "x"
    monkeypatch.chdir(tmp_path / "w")
    assert short_path(path, "w", str(tmp_path)) == "../x"   # from w/w
