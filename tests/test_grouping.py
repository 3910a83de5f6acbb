"""Cases in proportion to what a program does (issue 22, Scale): the
sweep groups a trace's calls by call site, file and fault, and runs the
first, the last and a seeded sample of each group; `--exhaustive` runs
every one; `--case` finds any case whatever the grouping kept; the
progress line counts cases and says how long is left.

The program is GNU dd with bs=1, which copies a file one write(2) per
byte: hundreds of calls from one call site on one file, like GNU ed's
fputc per byte.
"""

import json
import re
import subprocess
from pathlib import Path

import pytest

from harness.engine import sweep

ROOT = Path(__file__).resolve().parents[1]
CRASHCHECK = ROOT / "scripts" / "crashcheck"
DD = ["dd", "if={new}", "of={target}", "bs=1", "conv=fsync", "status=none"]


def cc(*args, timeout=300):
    return subprocess.run([str(CRASHCHECK), *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


def audit_dd(tmp, size, *opts, out="out"):
    new = tmp / "new.bin"
    new.write_bytes(bytes(range(256)) * (size // 256) + b"x" * (size % 256))
    r = cc("audit", "--out", tmp / out, "--contract", "in-place",
           "--new", new, *opts, "--", *DD)
    assert r.returncode == 0, r.stdout + r.stderr
    with open(tmp / out / "results.json") as fh:
        return json.load(fh), r


def by_form(doc):
    """write cases (on the target) by their plan without the call's number."""
    forms = {}
    for c in doc["cases"]:
        m = re.fullmatch(r"write\(target\)#(\d+)(.*)", c["plan"])
        if m:
            forms.setdefault(m.group(2), []).append(int(m.group(1)))
    return {k: sorted(v) for k, v in forms.items()}


# ------------------------------------------------------------- select()

def settings(**kw):
    return sweep.Settings(out=Path("/nonexistent"), **kw)


def test_select_keeps_first_last_and_a_seeded_sample():
    found = [(("a",), i) for i in range(100)] + [(("b",), 100 + i)
                                                  for i in range(4)]
    stats = {}
    kept = sweep.select(found, settings(), stats)
    a = [i for i in kept if i < 100]
    assert a[0] == 0 and a[-1] == 99 and len(a) == 2 + sweep.SAMPLE
    assert [i for i in kept if i >= 100] == [100, 101, 102, 103]
    assert kept == sorted(kept)
    assert stats == {"groups": 2, "cases": 104, "kept": len(kept)}
    # the same seed, the same sample; another seed, another (100 choose 3)
    assert sweep.select(found, settings()) == kept
    assert sweep.select(found, settings(seed=1)) != kept
    assert len(sweep.select(found, settings(sample=10))) == 12 + 4
    assert sweep.select(found, settings(exhaustive=True)) == list(range(104))
    # no sample: the ends of every group larger than two
    assert sweep.select(found, settings(sample=0)) == [0, 99, 100, 103]


# ------------------------------------------------------------- a real program

def test_dd_bs1_runs_a_handful_of_its_writes(tmp_path):
    doc, r = audit_dd(tmp_path, 300)
    forms = by_form(doc)
    assert set(forms) == {"=EINTR", "++=ENOSPC", "=EIO", "++=EIO", "=crash",
                          "=crash-after"}
    for form, ns in forms.items():
        # dd's 300 writes of one byte to its target are one group per
        # fault: each keeps its first and last
        assert ns[0] == 1 and ns[-1] == 300, (form, ns)
        assert len(ns) == 2 + sweep.SAMPLE, (form, ns)
    g = doc["summary"]["run"]["grouping"]
    assert g["exhaustive"] is False and g["sample"] == sweep.SAMPLE
    assert g["seed"] == 0 and g["calls"] >= 300
    assert g["kept"] == len(doc["cases"]) < g["cases"] / 20
    assert f"{g['kept']} of {g['cases']} cases" in r.stderr
    md = (tmp_path / "out" / "report.md").read_text()
    assert f"cases {g['kept']} of {g['cases']}: of each group" in md
    # the crash points are grouped alike: after the first and the last
    # write, and a few between
    points = [c["call"] for c in doc["cases"] if c["kind"] == "powerloss"
              and c["model"] == "posix" and c["call"].startswith("write(")]
    assert "write(target)#1" in points
    assert "write(target)#300" in points and len(points) == 2 + sweep.SAMPLE


def test_exhaustive_keeps_every_write_and_the_same_verdicts(tmp_path):
    grouped, _ = audit_dd(tmp_path, 24, "--faults", "eio,powerloss")
    every, _ = audit_dd(tmp_path, 24, "--faults", "eio,powerloss",
                        "--exhaustive", out="all")
    assert by_form(every) == {"=EIO": list(range(1, 25)),
                              "++=EIO": list(range(1, 25))}
    assert len(by_form(grouped)["=EIO"]) == 2 + sweep.SAMPLE
    all_cases = {c["id"]: (c["verdict"], c["states"]) for c in every["cases"]}
    for c in grouped["cases"]:
        # a crash point kept alone has the states it has among all
        assert all_cases[c["id"]] == (c["verdict"], c["states"]), c["id"]
    assert every["summary"]["run"]["grouping"]["exhaustive"] is True


def test_a_case_the_grouping_left_out_still_reruns(tmp_path):
    doc, _ = audit_dd(tmp_path, 40, "--faults", "eio")
    kept = set(by_form(doc)["=EIO"])
    left_out = min(set(range(1, 41)) - kept)
    case = f"dd-write(target)#{left_out}=EIO"
    new = tmp_path / "new.bin"
    r = cc("audit", "--out", tmp_path / "one", "--contract", "in-place",
           "--new", new, "--faults", "eio", "--case", case, "--", *DD)
    assert r.returncode == 0, r.stdout + r.stderr
    with open(tmp_path / "one" / "results.json") as fh:
        assert [c["id"] for c in json.load(fh)["cases"]] == [case]


def test_progress_counts_cases_and_says_what_is_left(tmp_path):
    doc, r = audit_dd(tmp_path, 300, "--sample", "30")
    total = len(doc["cases"])
    lines = [li for li in r.stdout.splitlines() if li.startswith(".")]
    assert len(lines) >= 2, r.stdout
    first = re.search(r"\[ *(\d+)% (\d+)/(\d+), (\d+(?:s|m\d\ds))"
                      r" left\]$", lines[0])
    assert first, lines[0]
    assert int(first.group(3)) == total
    assert int(first.group(2)) == lines[0].count(".")
    assert lines[-1].endswith(f"[100% {total}/{total}]"), lines[-1]


@pytest.mark.parametrize("value", ["-1", "many"])
def test_bad_sample_is_one_line(tmp_path, value):
    r = cc("audit", "--out", tmp_path / "out", "--sample", value,
           "--contract", "in-place", "--new", "/etc/hostname", "--", *DD)
    assert r.returncode == 2
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("crashcheck: --sample: ")
