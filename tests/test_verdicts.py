"""The verdicts on programs that survive a fault, end to end (issue 20):
crash-model.md's "Errors a program recovers from", the data path, exit
non-zero as a report, findings grouped by root cause, and findings that
say which file a fault hit and where in the program the deciding call
was made.

The audited program is tests/progs/saver.c (see its header), one mode per
habit, built with -g: a writer that recovers from a failed fsync by
writing the data again into a fresh temp file (ok, "recovered"); one
that retries fsync on the same file (not-durable); one that ignores a
failing close after a successful fsync (ignored-error); one whose only
ignored failure is the close of a read-only descriptor (ok); one that
exits 1 silently (ok for an audited program); one that ignores every
write's result (one defect, many findings). Each audit runs only the
cases the test is about (--case, --faults), so the file stays short.
"""

import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CRASHCHECK = ROOT / "scripts" / "crashcheck"
PROGS = Path(__file__).resolve().parent / "progs"


@pytest.fixture(scope="module")
def saver(tmp_path_factory):
    out = tmp_path_factory.mktemp("verdicts") / "saver"
    proc = subprocess.run(["cc", "-g", "-O0", "-Wall", "-Wextra", "-o", str(out),
                           str(PROGS / "saver.c")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return out


def audit(saver, mode, out, *options):
    proc = subprocess.run(
        [str(CRASHCHECK), "audit", "--model", "posix", "--out", str(out),
         "--timeout", "5", *options, "--", str(saver), mode, "{target}", "{new}"],
        capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode in (0, 1), proc.stdout[-3000:] + proc.stderr[-3000:]
    with open(out / "results.json") as fh:
        doc = json.load(fh)
    return proc, doc, {c["id"]: c for c in doc["cases"]}


def test_a_writer_that_rewrites_into_a_fresh_file_recovered(saver, tmp_path):
    proc, doc, cases = audit(saver, "recover", tmp_path, "--faults", "eio")
    assert proc.returncode == 0, proc.stdout[-3000:]
    # a case names its call by the file it is on (harness/coords.py)
    c = cases["saver-fsync(target.tmp)#1=EIO"]
    assert c["verdict"] == "ok" and c["exit"]["status"] == 0
    assert c["note"] == ("recovered from fsync(target.tmp)#1=EIO (said: saver: "
                         "fsync 'target.tmp': Input/output error)")
    assert doc["summary"]["recovered"] == 1
    assert doc["summary"]["findings"] == 0 and doc["summary"]["passed"]
    md = (tmp_path / "report.md").read_text()
    assert "## Recovered" in md and "recovered from fsync(target.tmp)\\#1=EIO" in md
    assert "recovered from fsync(target.tmp)#1=EIO" in \
        (tmp_path / "report.html").read_text()


def test_a_writer_that_retries_fsync_silently_is_unreported_error(saver, tmp_path):
    proc, doc, cases = audit(saver, "retry", tmp_path,
                             "--case", "saver-fsync(target.tmp)#1=EIO")
    c = cases["saver-fsync(target.tmp)#1=EIO"]
    assert proc.returncode == 1
    assert c["verdict"] == "unreported-error", c
    assert "it called fsync again" in c["finding"]
    assert "never retry fsync" in c["cause"]["rule"]
    assert c["cause"]["call"] == "fsync#1" and c["cause"]["file"] == "target.tmp"


def test_close_ignored_after_a_successful_fsync_is_ignored_error(saver, tmp_path):
    proc, doc, cases = audit(saver, "close-ignored", tmp_path, "--faults", "eio")
    c = cases["saver-close(target.tmp)#1=EIO"]
    assert c["verdict"] == "ignored-error", c
    assert "close(target.tmp)#1 failed with EIO" in c["finding"]
    assert "the crash state after its exit holds the new content" in c["finding"]
    assert c["cause"]["rule"] == "check what close returns"
    # the only finding: every other fault is reported and exits 1
    assert [x["id"] for x in doc["cases"] if x["verdict"] != "ok"] == \
        ["saver-close(target.tmp)#1=EIO"]
    # nothing lost: a warning, reported and passing (crash-model.md,
    # "Severity"), which says when it would matter
    assert c["severity"] == "warning" and c["property"] == "error/ignored"
    assert c["passed"] and "It would matter the day" in c["explanation"]
    s = doc["summary"]
    assert s["verdicts"]["ignored-error"] == 1 and s["passed"]
    assert s["warnings"] == 1
    assert "Of the findings, 1 is a warning: it lost nothing here" \
        in (tmp_path / "report.md").read_text()
    assert proc.returncode == 0
    assert "  WARNING ignored-error: check what close returns [error handling: " \
           "an error ignored] (close on 'target.tmp'" in proc.stdout
    # --fail-on warning keeps the strict reading
    proc, doc, cases = audit(saver, "close-ignored", tmp_path / "strict",
                             "--faults", "eio", "--fail-on", "warning")
    assert proc.returncode == 1 and not doc["summary"]["passed"]
    assert "DEFECT 1 of 1: ignored-error: check what close returns [error " \
           "handling: an error ignored] (close on 'target.tmp'" in proc.stdout
    assert "FINDING saver-close(target.tmp)#1=EIO: ignored-error:" in proc.stdout


def test_a_failed_close_of_a_read_only_descriptor_is_ok(saver, tmp_path):
    proc, doc, cases = audit(saver, "read-close", tmp_path, "--faults", "eio")
    # the read-only close of the target, whose failure the program ignores
    # (the close of {new} is outside the work directory: no case)
    c = cases["saver-close(target)#1=EIO"]
    assert c["exit"]["status"] == 0 and c["stderr"] == ""
    assert c["verdict"] == "ok" and c["note"] == ""
    assert proc.returncode == 0, proc.stdout[-3000:]


def test_an_audited_program_that_exits_1_silently_has_reported(saver, tmp_path):
    proc, doc, cases = audit(saver, "quiet-exit", tmp_path, "--faults", "eio")
    silent = [c for c in doc["cases"] if c["exit"]["status"] == 1]
    assert silent and all(c["stderr"] == "" for c in silent)
    assert {c["verdict"] for c in doc["cases"]} == {"ok"}
    assert proc.returncode == 0


def test_one_defect_many_findings(saver, tmp_path):
    # 8193 bytes: nine writes of at most 1024, every one's EIO ignored;
    # every one a case (by default the sweep groups one site's calls)
    proc, doc, cases = audit(saver, "chunks-ignored", tmp_path, "--faults", "eio",
                             "--exhaustive")
    bad = [c for c in doc["cases"] if c["verdict"] != "ok"]
    writes = [c for c in bad if "-write(" in c["id"]]
    assert len(writes) == 9 * 2, [c["id"] for c in bad]     # once, and from on
    assert {c["verdict"] for c in writes} == {"unreported-error"}
    assert len({c["cause"]["key"] for c in writes}) == 1
    c = cases["saver-write(target.tmp)#3=EIO"]
    assert "write(target.tmp)#3 failed with EIO" in c["finding"]
    assert "the target is not the new content: found" in c["finding"]
    defects = doc["summary"]["defects"]
    first = defects[0]
    assert first["verdict"] == "unreported-error" and first["cases"] == 18
    # the ignored write's line: the trace says where each call was made
    bug = next(n for n, line in enumerate(
        (PROGS / "saver.c").read_text().splitlines(), 1) if "/* BUG */" in line)
    title = ("unreported-error: check what write returns [error handling: an "
             "error unreported] (write on "
             f"'target.tmp' at saver.c:{bug} (write_all))")
    assert first["title"] == title
    assert sorted(first["ids"]) == sorted(c["id"] for c in writes)
    out = proc.stdout
    assert f"DEFECT 1 of 1: {title}: seen in 18 cases" in out
    assert out.count("  FINDING saver-write(target.tmp)#") == 10
    assert "  and 8 more cases of this defect" in out
    md = (tmp_path / "report.md").read_text()
    assert "1 defect, seen in 18 cases" in md
    escaped = title.replace("_", "\\_").replace("[", "\\[").replace("]", "\\]")
    assert f"### 1. {escaped} — 18 cases" in md
    assert "defect: unreported-error: check what write returns" in \
        (tmp_path / "junit.xml").read_text()
