"""What one case may leave behind (issue 34): a program that spins on a
failed write, printing a line to stdout at every turn until its time
limit, writes megabytes there and makes hundreds of thousands of calls
for the trace. Its case directory keeps the ends of its trace
(results.TRACE_HEAD, TRACE_TAIL) and OUTPUT_CAP bytes of each output, says
what it left out, and the whole output directory stays small (it was
178 MB before the bound, for one such case).
"""

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from harness.engine import results, runner, timelimit, trace

ROOT = Path(__file__).resolve().parents[1]
CRASHCHECK = ROOT / "scripts" / "crashcheck"


def tree_bytes(top):
    return sum(os.path.getsize(os.path.join(d, f))
               for d, _, files in os.walk(top) for f in files)


def test_a_spinning_loud_case_leaves_a_small_directory(tmp_path):
    prog = tmp_path / "chatter"
    built = subprocess.run(["cc", "-O0", "-Wall", "-Wextra", "-o", str(prog),
                            str(ROOT / "tests" / "progs" / "chatter.c")],
                           capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    new = tmp_path / "new"
    new.write_bytes(b"new content\n" * 80)
    out = tmp_path / "out"
    r = subprocess.run([str(CRASHCHECK), "audit", "--out", str(out),
                        "--new", str(new), "--faults", "eio", "--timeout", "1",
                        "--case", "chatter-write(target.tmp)#1++=EIO", "--",
                        str(prog), "{new}", "{target}"],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 1, r.stdout + r.stderr
    case, = json.loads((out / "results.json").read_text())["cases"]
    assert case["verdict"] == "hang", case["finding"]
    # it wrote far more than is kept, and the result says how much
    assert case["output"]["stdout"] > 1 << 20, case["output"]
    cut = case["cut"]
    assert f"stdout: the first {runner.OUTPUT_CAP} of " \
        f"{case['output']['stdout']} bytes" in cut
    calls = next(c for c in cut if c.startswith("trace.txt: "))
    assert calls.startswith(f"trace.txt: the first {results.TRACE_HEAD} and "
                            f"the last {results.TRACE_TAIL} of ")
    assert int(calls.split(" of ")[1].split()[0]) > 2 * (results.TRACE_HEAD
                                                         + results.TRACE_TAIL)
    d = out / "cases" / Path(case["dir"]).name
    lines = (d / "trace.jsonl").read_bytes().splitlines()
    # (the file may end in zeros past its last line: trace.clean)
    assert results.TRACE_HEAD + results.TRACE_TAIL - 1 <= len(lines) \
        <= results.TRACE_HEAD + results.TRACE_TAIL + 1
    gap = json.loads(lines[results.TRACE_HEAD])
    assert gap["ev"] == "cut" and gap["left_out"] > 0
    # every other line is the library's, whole
    assert all(json.loads(li)["ev"] for li in lines)
    text = (d / "trace.txt").read_text().splitlines()
    assert any(li.startswith("[... ") and "calls left out" in li
               for li in text)
    assert len((d / "stderr.txt").read_bytes()) < runner.OUTPUT_CAP + 200
    html = (out / "report.html").read_text()
    assert "kept in part" in html
    # the whole directory: the ends of the trace, the outputs' first
    # 64 KiB, the reports
    assert tree_bytes(out) < 4 << 20, tree_bytes(out)


def test_output_past_the_cap_gives_its_memory_back():
    # what a capture file holds past OUTPUT_CAP is punched out, its size
    # kept: the run's output is counted, not held
    fd = os.memfd_create("bounds-test")
    with os.fdopen(fd, "w+b") as fh:
        fh.write(b"a" * runner.OUTPUT_CAP + b"b" * (8 << 20))
        fh.flush()
        held = os.fstat(fh.fileno()).st_blocks * 512
        assert held >= 8 << 20
        runner._trim(fh)
        st = os.fstat(fh.fileno())
        assert st.st_size == runner.OUTPUT_CAP + (8 << 20)
        assert st.st_blocks * 512 <= runner.OUTPUT_CAP + (64 << 10)
        data, cut, size = runner._read_capped(fh, runner.OUTPUT_CAP)
        assert data == b"a" * runner.OUTPUT_CAP and cut and size == st.st_size


def test_a_long_loud_run_is_counted_whole(tmp_path):
    # 40 MB over about a second: trimmed while it runs (TRIM_EVERY), the
    # first OUTPUT_CAP bytes kept, every byte counted
    script = ("for i in 1 2 3 4 5 6 7 8; do head -c 5000000 /dev/zero; "
              "sleep 0.15; done")
    r = runner.run(["/bin/sh", "-c", script], cwd=tmp_path, timeout=60,
                   preload=False)
    assert r.status == 0
    assert r.stdout == b"\0" * runner.OUTPUT_CAP and r.stdout_truncated
    assert r.stdout_size == 40_000_000


# ---- the trace kept to --trace-limit (faults/trace.c, engine/tracecut.py)

TRACE_LIMIT = 1 << 20


def build(tmp_path, name, *flags):
    prog = tmp_path / name
    built = subprocess.run(["cc", "-O0", "-Wall", "-Wextra", *flags, "-o",
                            str(prog), str(ROOT / "tests" / "progs" /
                                           f"{name}.c")],
                           capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    return prog


def scribble(prog, d, n, limit, backend):
    for name in ("trace", "shared"):
        try:
            os.unlink(d / name)
        except FileNotFoundError:
            pass
    r = runner.run([str(prog), str(d / "file"), str(n)], cwd=d,
                   trace=d / "trace", shared=d / "shared", trace_limit=limit,
                   timeout=300, backend=backend)
    assert r.status == 0, r.stderr
    data, cut = trace.read_cut(d / "trace")
    return len(trace.parse(data)), cut


@pytest.mark.parametrize("backend,n", [("preload", 50000), ("syscall", 12500)])
def test_the_library_keeps_a_trace_to_its_limit(tmp_path, backend, n):
    # four writers (two threads in each of two processes) make 4 * N
    # one-byte writes: past the limit each line is counted, not written,
    # and the kept lines and the counted ones are every line a whole
    # trace has
    prog = build(tmp_path, "scribbler", "-pthread")
    whole, none = scribble(prog, tmp_path, n, None, backend)
    assert none is None and whole > 4 * n
    kept, cut = scribble(prog, tmp_path, n, TRACE_LIMIT, backend)
    st = os.stat(tmp_path / "trace")
    # the lines and the cut line within the limit; the file (a shared
    # mapping's, grown in pages) at most a page past it
    assert len(trace.read(tmp_path / "trace")) <= TRACE_LIMIT
    assert st.st_size <= TRACE_LIMIT + 4096
    assert st.st_blocks * 512 <= TRACE_LIMIT + 8192
    assert cut.limit == TRACE_LIMIT
    assert kept + cut.lines == whole, (kept, cut, whole)
    assert cut.bytes > cut.lines * 50


def audit(tmp_path, out, prog, *args, case=None, new_size=4000, extra=()):
    new = tmp_path / "new"
    new.write_bytes(b"new content\n" * (new_size // 12))
    argv = [str(CRASHCHECK), "audit", "--out", str(tmp_path / out),
            "--new", str(new), "--faults", "eio", *extra]
    if case:
        argv += ["--case", case]
    r = subprocess.run(argv + ["--", str(prog), *args],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    cases = json.loads((tmp_path / out / "results.json").read_text())["cases"]
    return r, cases


def test_a_run_past_the_trace_limit_is_never_a_pass(tmp_path):
    # retrier tries a failed write 200000 times, then says so and exits
    # 1 on its own: what it did after the cut was not seen
    prog = build(tmp_path, "retrier")
    r, cases = audit(tmp_path, "out", prog, "{new}", "{target}",
                     case="retrier-write(target.tmp)#1++=EIO",
                     extra=("--trace-limit", "1M"))
    assert r.returncode == 1, r.stdout + r.stderr
    case, = cases
    assert case["verdict"] == "harness-error" and not case["passed"]
    assert case["exit"]["status"] == 1 and not case["exit"]["timed_out"]
    assert case["finding"].startswith(
        "crashcheck's trace limit: the run's trace was cut, "), case["finding"]
    assert "past its limit of 1.0 MiB (--trace-limit)" in case["finding"]
    cut = case["trace_cut"]
    assert cut["limit"] == TRACE_LIMIT and cut["lines"] > 100000
    assert "--trace-limit" in case["explanation"]
    assert f"FINDING {case['id']}: harness-error: crashcheck's trace limit" \
        in r.stdout
    # its reproduce command carries the limit
    assert "--trace-limit 1M" in case["reproduce"]


def test_replay_keeps_to_the_trace_limit_the_case_ran_with(tmp_path):
    # 20000 failed writes: past 1 MiB of trace, well within the default
    # 32 MiB; replayed with the default, the case would be judged whole
    prog = build(tmp_path, "retrier")
    r, cases = audit(tmp_path, "out", prog, "-n", "20000", "{new}",
                     "{target}", case="retrier-write(target.tmp)#1++=EIO",
                     extra=("--trace-limit", "1M"))
    case, = cases
    assert case["verdict"] == "harness-error" and case["trace_cut"], case
    rp = subprocess.run([str(CRASHCHECK), "replay", "--results",
                         str(tmp_path / "out" / "results.json"), "--out",
                         str(tmp_path / "replay"), case["id"]], cwd=ROOT,
                        capture_output=True, text=True, timeout=600)
    assert f"{case['id']}: harness-error\n" in rp.stdout, \
        rp.stdout + rp.stderr
    assert rp.returncode == 0


def test_a_spin_the_time_limit_ended_is_judged_and_its_cut_said(tmp_path):
    prog = build(tmp_path, "chatter")
    r, cases = audit(tmp_path, "out", prog, "{new}", "{target}",
                     case="chatter-write(target.tmp)#1++=EIO",
                     new_size=960, extra=("--timeout", "1",
                                          "--trace-limit", "1M"))
    case, = cases
    assert case["verdict"] == "hang", case["finding"]
    assert case["trace_cut"]["lines"] > 0
    assert "trace: cut at --trace-limit, judged on what it showed before: " \
        in r.stdout
    assert "trace cut" in (tmp_path / "out" / "report.html").read_text()


def test_a_baseline_past_the_trace_limit_runs_no_case(tmp_path):
    # a write per byte: about 4000 lines, past 1 MiB
    prog = build(tmp_path, "retrier")
    r, cases = audit(tmp_path, "out", prog, "-b", "{new}", "{target}",
                     extra=("--trace-limit", "1M"))
    case, = cases
    assert case["kind"] == "baseline" and case["verdict"] == "harness-error"
    assert case["finding"].startswith(
        "crashcheck's trace limit: the baseline's trace was cut"), \
        case["finding"]
    assert "trace limit: the baseline's trace was cut" in r.stderr


def test_a_run_within_the_trace_limit_is_judged_as_without_one(tmp_path):
    prog = build(tmp_path, "retrier")
    got = []
    for out, extra in (("limited", ()), ("unlimited", ("--trace-limit", "0"))):
        r, cases = audit(tmp_path, out, prog, "{new}", "{target}",
                         case="retrier-write(target.tmp)#1=EIO", extra=extra)
        case, = cases
        assert "trace_cut" not in case
        got.append({k: case[k] for k in ("verdict", "finding", "exit",
                                          "fired", "passed")})
    assert got[0] == got[1]
    assert got[0]["verdict"] == "ok"


def test_a_bad_trace_limit_is_one_line(tmp_path):
    (tmp_path / "new").write_text("new\n")
    r = subprocess.run([str(CRASHCHECK), "audit", "--trace-limit", "lots",
                        "--new", "new", "--", "true", "{target}"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "crashcheck: --trace-limit: 'lots' is not a size (a number of "
        "bytes, or with K, M, G or T)"], r.stderr
    env = dict(os.environ, CRASHCHECK_TRACE=str(tmp_path / "t"),
               CRASHCHECK_TRACE_LIMIT="10x",
               LD_PRELOAD=f"{runner.FAULT_LIB} {runner.FIU_PRELOAD}")
    r = subprocess.run(["true"], env=env, capture_output=True, text=True)
    assert r.returncode == 2
    assert "CRASHCHECK_TRACE_LIMIT '10x' is not a number of bytes" in r.stderr


# ---- inject and trace: the same limit, said in one line (issue 34)

def endless_writer(tmp_path):
    """chatter, ready to spin: a new content to write and where."""
    prog = build(tmp_path, "chatter")
    (tmp_path / "new").write_bytes(b"new content\n" * 80)
    return prog


def test_inject_holds_an_endless_writer_to_the_trace_limit(tmp_path):
    # every write of target.tmp fails: chatter tries again for ever,
    # until --timeout; its trace is cut at 1 MiB, and stderr says so
    prog = endless_writer(tmp_path)
    kept = tmp_path / "kept.jsonl"
    r = subprocess.run([str(CRASHCHECK), "inject", "--trace", str(kept),
                        "--timeout", "3", "--trace-limit", "1M",
                        "write(*.tmp)#1++=EIO;fsync#1=EIO", "--",
                        str(prog), "new", "target"],
                       cwd=tmp_path, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, timeout=300)
    assert r.returncode == 124, r.stderr
    said = r.stderr.splitlines()
    cut = [li for li in said if li.startswith("crashcheck: the trace was cut: ")]
    assert len(cut) == 1, r.stderr
    assert cut[0].endswith(" past its limit of 1.0 MiB (--trace-limit)"), cut
    assert any(li.startswith("crashcheck: fired write(*.tmp)#1++=EIO (")
               and li.endswith(" calls before the cut)") for li in said), said
    # fsync comes after the loop: not seen, and not said never to fire
    assert "crashcheck: not seen to fire before the cut: fsync#1=EIO (the " \
        "program made no fsync calls before it)" in said, said
    assert not any("never fired" in li for li in said), said
    # the kept trace: within the limit, and its last line says the rest
    data = kept.read_bytes()
    assert len(data) <= TRACE_LIMIT + 200
    assert data.rstrip(b"\n").rsplit(b"\n", 1)[-1].startswith(
        trace.CUT_START)
    text, got = trace.read_cut(kept)
    assert got.limit == TRACE_LIMIT and got.lines > 0
    assert f"{got.lines} lines" in cut[0]
    assert len(text) <= TRACE_LIMIT


def test_inject_within_the_limit_says_nothing_of_it(tmp_path):
    prog = endless_writer(tmp_path)
    r = subprocess.run([str(CRASHCHECK), "inject", "--trace-limit", "1M",
                        "write(*.tmp)#1=EIO", "--", str(prog), "new",
                        "target"],
                       cwd=tmp_path, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert "crashcheck: fired write(*.tmp)#1=EIO (1 call)" in r.stderr
    assert "cut" not in r.stderr


def test_trace_holds_an_endless_writer_to_the_trace_limit(tmp_path):
    # a shell that appends a line to a file for ever: the listing stops
    # at the cut and its last line says what was left out
    listing = tmp_path / "listing"
    r = subprocess.run([str(CRASHCHECK), "trace", "-o", str(listing),
                        "--timeout", "3", "--trace-limit", "1M", "--",
                        "/bin/sh", "-c", "while :; do echo x >> f; done"],
                       cwd=tmp_path, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 124, r.stderr
    lines = listing.read_text().splitlines()
    assert lines[-1].startswith("[... the trace was cut: "), lines[-1]
    assert lines[-1].endswith(
        " past its limit of 1.0 MiB (--trace-limit) ...]"), lines[-1]
    assert len(lines) > 1000 and listing.stat().st_size < TRACE_LIMIT
    assert f"crashcheck: {lines[-1][5:-5]}" in r.stderr.splitlines()


def test_a_bad_trace_limit_runs_nothing_under_inject_and_trace(tmp_path):
    for argv in (["inject", "write#1=EIO"], ["trace", "-o", "listing"]):
        r = subprocess.run([str(CRASHCHECK), *argv, "--trace-limit", "1K",
                            "--", "/bin/sh", "-c", "echo ran > ran"],
                           cwd=tmp_path, capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 2
        assert r.stderr.strip().splitlines() == [
            "crashcheck: --trace-limit: '1K' is less than 1 MiB"], r.stderr
        assert not (tmp_path / "ran").exists()
        assert not (tmp_path / "listing").exists()


# ---- a run whose trace was cut ends at its time limit (timelimit.py)

@pytest.fixture
def churn(tmp_path):
    """backoff in its churn mode: a failed write tried again after an
    open and a close of ".", for ever; no single failing call, so a look
    at the time limit sees it at work."""
    prog = build(tmp_path, "backoff")
    (tmp_path / "new").write_bytes(b"new content\n" * 80)
    return prog


def churn_run(prog, d, *seconds):
    tr = d / "trace"
    limit = timelimit.Limit(2, trace=tr)
    r = runner.run([str(prog), "churn", "target", "new", *map(str, seconds)],
                   cwd=d, plan="write(*.tmp)#1++=EIO", trace=tr,
                   shared=d / "shared", trace_limit=TRACE_LIMIT,
                   timeout=limit)
    return r, limit


def test_a_cut_run_that_churns_ends_at_its_limit(tmp_path, churn):
    # cut long before its limit and at work at it: once given periods up
    # to the cap (six limits, 12 s), killed at the limit now
    r, limit = churn_run(churn, tmp_path)
    assert r.timed_out
    assert r.extra["limit_state"] == "past the trace limit: running", r.extra
    assert trace.read_cut(tmp_path / "trace")[1].lines > 0
    # generous: the cap was 12 s, the limit is 2 s
    assert r.duration < 2 + 0.5 * (timelimit.CAP_FACTOR - 1) * 2


def test_a_run_given_more_time_ends_when_its_trace_is_cut(tmp_path, churn):
    # asleep at its limit (2 s), it is given more time; at 3 s it churns
    # and its trace is cut within it: killed then (Limit.cut_over, asked
    # between looks), with what the look saw, not at the next look,
    # which would have seen it "running"
    r, limit = churn_run(churn, tmp_path, 3)
    assert r.timed_out
    assert r.extra["limit_state"] == \
        "past the trace limit: sleeping: in nanosleep", r.extra


def test_a_slow_run_whose_trace_is_whole_is_given_its_time(tmp_path, churn):
    # the same sleep, no churn after it: asleep at its limit, given more
    # time, and it ends on its own (no write fails past the first)
    tr = tmp_path / "trace"
    r = runner.run([str(churn), "churn", "target", "new", "3"], cwd=tmp_path,
                   plan="write(*.tmp)#1=EIO", trace=tr,
                   shared=tmp_path / "shared", trace_limit=TRACE_LIMIT,
                   timeout=timelimit.Limit(2, trace=tr))
    assert not r.timed_out and r.status == 0, (r.extra, r.stderr)
    assert trace.read_cut(tr)[1] is None


def test_the_limit_sees_a_cut_trace(tmp_path):
    # a sleeping run is given more time, unless its trace was cut
    tr = tmp_path / "trace"
    call = (b'{"ev":"call","seq":%d,"pid":1,"call":"close","fd":3,'
            b'"ret":0}\n')
    tr.write_bytes(b"".join(call % i for i in range(10)))
    sleeper = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        for _ in range(100):
            with open(f"/proc/{sleeper.pid}/syscall") as fh:
                if fh.read().split()[0] in ("35", "230"):
                    break
            time.sleep(0.05)
        whole = timelimit.Limit(1, trace=tr)
        assert whole.again(sleeper.pid, 1.0) == 1.0
        assert whole.state == "sleeping: in nanosleep"
        assert not whole.cut_over(1.5)
        with open(tr, "ab") as fh:
            fh.write(b'{"ev":"dropped","lines":"00000000000000000012",'
                     b'"bytes":"00000000000000001200","limit":'
                     b'             1048576}\n' + b"\0" * 4096)
        assert not whole.cut_over(0.5)      # not past its limit yet
        assert whole.cut_over(1.5)
        assert whole.state == "past the trace limit: sleeping: in nanosleep"
        cut = timelimit.Limit(1, trace=tr)
        assert cut.again(sleeper.pid, 1.0) is None
        assert cut.state == "past the trace limit: sleeping: in nanosleep"
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_cut_churning_case_is_a_hang_at_its_limit(tmp_path, churn):
    r, cases = audit(tmp_path, "out", churn, "churn", "{target}", "{new}",
                     case="backoff-write(target.tmp)#1++=EIO",
                     extra=("--timeout", "2", "--trace-limit", "1M"))
    case, = cases
    assert case["verdict"] == "hang", case["finding"]
    assert "(past the trace limit: running)" in case["finding"]
    assert case["cause"]["rule"] == \
        "give up on a persistent error in bounded time"
    assert "--trace-limit" in case["explanation"]
    assert case["trace_cut"]["lines"] > 0
    assert case["exit"]["timed_out"]


# ---- a real power-loss case whose run was cut is never a state

def test_a_cut_real_run_is_the_cuts_harness_error():
    from types import SimpleNamespace
    from harness.engine import realcrash, tracecut
    ran = SimpleNamespace(timed_out=False, status=0, signal=None)
    # the point after exit: the run exited 0, as its baseline did
    whole = SimpleNamespace(run=ran, trace=SimpleNamespace(cut=None))
    assert realcrash.real_run_problem(None, whole, "", "ext4") == ("", "")
    cut = SimpleNamespace(run=ran, trace=SimpleNamespace(
        cut=trace.Cut(TRACE_LIMIT, 12, 1200)))
    problem, why = realcrash.real_run_problem(None, cut, "", "ext4")
    assert problem == ("crashcheck's trace limit: the run's trace was cut, "
                       "12 lines (1.2 KiB) past its limit of 1.0 MiB "
                       "(--trace-limit)")
    assert why == tracecut.CUT_WHY


def test_a_fs_sweeps_endless_writer_is_held_to_the_limits(tmp_path):
    from test_realfs import need
    need("ext4")
    prog = endless_writer(tmp_path)
    r, cases = audit(tmp_path, "out", prog, "{new}", "{target}",
                     case="chatter-write(target.tmp)#1++=EIO", new_size=960,
                     extra=("--fs", "ext4", "--timeout", "1",
                            "--trace-limit", "1M"))
    case, = cases
    assert case["verdict"] == "hang", case["finding"]
    assert case["trace_cut"]["limit"] == TRACE_LIMIT
    assert case["trace_cut"]["lines"] > 0
    assert "trace: cut at --trace-limit, judged on what it showed before: " \
        in r.stdout
    # its output: counted, the first OUTPUT_CAP bytes kept
    assert case["output"]["stdout"] > runner.OUTPUT_CAP
    assert f"stdout: the first {runner.OUTPUT_CAP} of " \
        f"{case['output']['stdout']} bytes" in case["cut"]
    d = tmp_path / "out" / "cases" / Path(case["dir"]).name
    assert len((d / "stderr.txt").read_bytes()) < runner.OUTPUT_CAP + 200
    assert tree_bytes(tmp_path / "out") < 4 << 20
    summary = json.loads((tmp_path / "out" / "results.json").read_text())
    assert summary["summary"]["run"]["fs"] == "ext4"


def test_a_walk_of_the_trace_gives_parses_records(tmp_path):
    # inject and trace walk the records a part at a time (Lazy.each):
    # the same records, in the same order, as parsing it whole, for a
    # tree of processes whose lines interleave; a line parse() refuses
    # is its error all the same
    prog = build(tmp_path, "scribbler", "-pthread")
    scribble(prog, tmp_path, 200, None, "preload")
    data = trace.read(tmp_path / "trace")
    whole = trace.parse(data)
    assert len({r["pid"] for r in whole}) == 2
    for part in (1, 7, 4096):
        assert list(trace.Lazy(data).each(part)) == whole
    lazy = trace.Lazy(data)
    assert lazy.has("init") and lazy.has("call") and not lazy.has("crash")
    bad = data.replace(b'"ev":"call"', b'"ev":"cal"', 1)
    with pytest.raises(trace.TraceError) as parsed:
        trace.parse(bad, "t")
    with pytest.raises(trace.TraceError) as walked:
        list(trace.Lazy(bad, "t").each(7))
    assert str(walked.value) == str(parsed.value)
