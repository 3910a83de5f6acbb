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

from harness.engine import results, runner

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
