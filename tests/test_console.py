"""What the console says at the end of a sweep, as a user reads it: a
"why" under every FINDING, the finding of a `--case` rerun even when its
case passes, the caught variants' defects (CAUGHT), expectations
no case applies to reported as not run (never NOT CAUGHT), and "fixed"
said only of a variant whose every case is ok."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # noqa: E402
from harness.reports import console  # noqa: E402

CRASHCHECK = ROOT / "scripts" / "crashcheck"
SPECS = ROOT / "workloads" / "specs"


def cc(*args, cwd=ROOT):
    return subprocess.run([str(CRASHCHECK), *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_first_sentence():
    f = console.first_sentence
    assert f("Lost: 'target.tmp' did not persist. fsync the directory.") \
        == "Lost: 'target.tmp' did not persist."
    assert f("Say e.g. EIO here. More.") == "Say e.g. EIO here."
    assert f("no full stop") == "no full stop"
    assert f("  spread\nover  lines. Second.") == "spread over lines."
    assert f("") == "" and f(None) == ""


def test_every_finding_says_why(tmp_path):
    r = cc("audit", "--out", tmp_path, "--model", "posix",
           "--old", ROOT / "docs/examples/settings.conf",
           "--new", ROOT / "docs/examples/settings.conf.new",
           "--", "sed", "-i", "s/^port = 8080$/port = 9090/", "{target}")
    assert r.returncode == 1, r.stdout + r.stderr
    cases = {c["id"]: c for c in json.loads(
        (tmp_path / "results.json").read_text())["cases"]}
    lines = r.stdout.splitlines()
    # a finding is printed under its defect, indented, or alone
    findings = [i for i, line in enumerate(lines)
                if line.lstrip().startswith("FINDING ")]
    assert len(findings) == sum(not c["passed"] for c in cases.values()) > 0
    for i in findings:
        indent = lines[i][:len(lines[i]) - len(lines[i].lstrip())] + "  "
        case = cases[lines[i].split()[1].rstrip(":")]
        assert lines[i + 1] == indent + "why: " + console.first_sentence(
            case["explanation"])
        assert lines[i + 2].startswith(indent + "reproduce: ")
    # an audit has no buggy variants to count, and pytest's FAILED
    # lines no longer repeat the findings
    assert "variants not caught" not in r.stdout
    assert "FAILED " not in r.stdout


def test_caught_variants_and_a_rerun_of_one(tmp_path):
    """Issue 30: a sweep of one buggy variant, the guide's first exercise
    ("read its findings"), printed none: a caught finding passes. Its
    defect is now printed (CAUGHT n of N), with its first case's finding,
    why and reproduce command; FINDING stays the word of failures."""
    r = cc("run", "--out", tmp_path / "all", SPECS / "fsync-retry.toml")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "crashcheck: all 2 findings are of buggy variants caught as " \
        "their specs expect (CAUGHT above): a pass" in r.stdout
    assert "FINDING" not in r.stdout
    caught = [c for c in json.loads(
        (tmp_path / "all" / "results.json").read_text())["cases"]
        if c["verdict"] == "unreported-error"]
    one = min(caught, key=lambda c: c["id"])
    lines = r.stdout.splitlines()
    head = next(i for i, line in enumerate(lines)
                if line.startswith("CAUGHT 1 of 1: unreported-error: "))
    assert lines[head].endswith(
        "seen in 2 cases, as the spec of fsync-retry expects"), lines[head]
    assert lines[head + 1] == (f"  CAUGHT {one['id']}: unreported-error: "
                               f"{one['finding']}")
    assert lines[head + 2] == "    why: " + console.first_sentence(
        one["explanation"])
    assert lines[head + 3] == f"    reproduce: {one['reproduce']}"
    assert lines[head + 4] == "  and 1 more case (report.md, report.html)"
    r = cc("run", "--out", tmp_path / "one", SPECS / "fsync-retry.toml",
           "--case", one["id"])
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"CAUGHT {one['id']}: unreported-error: {one['finding']}" in r.stdout
    assert "  why: fsync(target.tmp)#1 failed with EIO" in r.stdout


def test_expectation_no_case_applies_to_is_not_run(tmp_path):
    """in-place-rewrite expects torn states from crashes, ENOSPC, EIO and
    power loss under both models; a run of posix power loss alone has no
    case those others apply to: not run, and the run passes."""
    r = cc("run", "--out", tmp_path, "--model", "posix", "--faults",
           "powerloss", SPECS / "in-place-rewrite.toml")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "NOT CAUGHT" not in r.stdout
    not_run = ["in-place-rewrite: torn (kind=crash)",
               "in-place-rewrite: torn (kind=enospc)",
               "in-place-rewrite: torn (kind=eio)",
               "in-place-rewrite: torn (kind=powerloss, model=ext4-ordered)"]
    assert "crashcheck: 4 expectations of buggy variants not run (no case " \
        "of this run applies to them): " + "; ".join(not_run) in r.stdout
    doc = json.loads((tmp_path / "results.json").read_text())
    assert doc["summary"]["run"]["not_run"] == not_run


def write_specs(tmp_path, name, binary, verdict):
    d = tmp_path / "specs"
    d.mkdir()
    (d / "replace.toml").write_text((SPECS / "replace.toml").read_text())
    (d / f"{name}.toml").write_text(f'''
name = "{name}"
description = "a variant whose bug is not the one its spec expects"
command = ["{{bin}}/{binary}", "--strategy={{strategy}}", "{{target}}", "{{new}}"]
strategies = ["stdio"]
contract = "atomic"
sizes = [4097]
teaches = "for the test"
fixed_by = "replace"
[[expect]]
verdict = "{verdict}"
kind = "eio"
call = "fsync(target.tmp)#1"
''')
    return d / f"{name}.toml"


def test_not_caught_says_fixed_only_when_clean(tmp_path):
    # the correct program under a variant's spec: every case ok
    spec = write_specs(tmp_path, "fixed", "replace", "unreported-error")
    r = cc("run", "--out", tmp_path / "a", "--faults", "eio", spec)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "NOT CAUGHT fixed: expected unreported-error (kind=eio, " \
        "call=fsync(target.tmp)#1), got only ok" in r.stdout
    assert "  fixed: every case is ok now: fixed" in r.stdout


def test_not_caught_names_what_a_naive_fix_still_shows(tmp_path):
    # a spec that expects fsync-retry's data loss to be reported as
    # not-durable: its cases still show the loss, as unreported-error
    # (the program says nothing of the first failure)
    spec = write_specs(tmp_path, "naive", "fsync-retry", "not-durable")
    r = cc("run", "--out", tmp_path / "o", "--faults", "eio", spec)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "NOT CAUGHT naive: expected not-durable (kind=eio, " \
        "call=fsync(target.tmp)#1), got only ok, unreported-error" in r.stdout
    assert "  naive: not fixed: its cases still show unreported-error" in r.stdout
    assert "every case is ok" not in r.stdout


def test_many_caught_defects_are_one_line_each_with_a_command(tmp_path):
    """More than console.CAUGHT_IN_FULL caught defects (make run): each
    on its CAUGHT line and the reproduce command of its first case, no
    more, so that the corpus's pass stays short."""
    specs = [SPECS / f"{n}.toml" for n in (
        "fsync-unchecked", "fsync-retry", "close-unchecked",
        "fclose-unchecked", "mmap-msync-unchecked", "short-write-ignored")]
    r = cc("run", "--out", tmp_path / "o", "--faults", "eio,short", *specs)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    caught = [d for d in doc["summary"]["defects"] if d["status"] == "caught"]
    assert len(caught) > console.CAUGHT_IN_FULL
    heads = [line for line in r.stdout.splitlines()
             if line.startswith("CAUGHT ")]
    assert len(heads) == len(caught)
    assert r.stdout.count("    reproduce: ") == len(caught)
    assert "    why: " not in r.stdout


def test_counts_are_singular_for_one(tmp_path):
    """"1 case, 1 finding", "1 baseline run (1 job)": issue 30."""
    r = cc("audit", "--out", tmp_path / "o", "--jobs", "1", "--faults",
           "baseline", "--", "true", "{target}", "{new}")
    assert r.returncode == 1, r.stderr
    assert "crashcheck: recording 1 baseline run (1 job)" in r.stderr
    assert "crashcheck: 1 case, 1 finding (0 defects), 1 failed" in r.stdout
