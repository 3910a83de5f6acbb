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
from pathlib import Path

import pytest

from harness.engine import results, runner, trace

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
