"""A recipe's checker kept running between states (check_server).

harness/engine/checkserver.py: a spec may give, besides check, the same
checker as a server that answers state after state on a pipe. What a
user must be able to count on: the verdicts are the ones check gives; a
server that answers otherwise than check, dies or hangs makes the case a
harness-error that says so (never a verdict on a state nobody judged);
and a bad spec is a one-line error.

The recipe here: a tree of two files, a and b, both "old"; the program
writes "new" into a, then into b, in place, with no sync: a power cut
between the two leaves a tree its checker refuses (a and b differ).
"""

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CRASHCHECK = ROOT / "scripts" / "crashcheck"

CHECK = r'''#!/usr/bin/python3
# The checker: a and b hold the same word, old or new (new only with
# CRASHCHECK_EXPECT=new). With --serve, the check_server of it; the
# other flags make a faulty server for the tests.
import json, os, sys


def judge(expect):
    try:
        a, b = open("a").read(), open("b").read()
    except OSError as e:
        return 1, f"cannot read: {e.strerror}\n"
    if a != b:
        return 1, f"a is {a!r} and b is {b!r}\n"
    if a not in ("old", "new") or (expect == "new" and a != "new"):
        return 1, f"both are {a!r} (CRASHCHECK_EXPECT={expect})\n"
    return 0, ""


flags = sys.argv[1:]
if "--serve" not in flags:
    status, output = judge(os.environ.get("CRASHCHECK_EXPECT", "new"))
    sys.stdout.write(output)
    sys.exit(status)
answered = 0
for line in sys.stdin:
    ask = json.loads(line)
    os.chdir(ask["dir"])
    if "--hang" in flags:
        import time
        time.sleep(3600)
    if "--die" in flags and answered == 2:
        sys.exit(3)
    status, output = judge(ask["expect"])
    if "--lie" in flags:
        status, output = 0, ""
    if "--garble" in flags:
        sys.stdout.write("status zero\n")
    else:
        sys.stdout.write(json.dumps({"status": status, "output": output})
                         + "\n")
    sys.stdout.flush()
    answered += 1
    os.chdir("/")
'''


def recipe(where, name, server=None, timeout=10):
    """A tree recipe in WHERE/name: its spec path."""
    d = where / name
    d.mkdir(parents=True)
    (d / "setup").write_text("#!/bin/sh\nprintf old > a\nprintf old > b\n")
    (d / "driver").write_text("#!/bin/sh\nprintf new > a\nprintf new > b\n")
    (d / "check").write_text(CHECK)
    for f in ("setup", "driver", "check"):
        os.chmod(d / f, 0o755)
    lines = [f'name = "{name}"', 'description = "a and b, in place"',
             'contract = "tree"', 'setup = ["{here}/setup"]',
             'command = ["{here}/driver"]', 'check = ["{here}/check"]',
             f"timeout = {timeout}"]
    if server is not None:
        lines.append("check_server = " + json.dumps(
            ["{here}/check", "--serve", *server]))
    spec = d / f"{name}.toml"
    spec.write_text("\n".join(lines) + "\n")
    return spec


def run(spec, out, *opts):
    return subprocess.run([str(CRASHCHECK), "run", str(spec), "--out",
                           str(out), *opts], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=900)


def verdicts(out):
    with open(out / "results.json") as fh:
        doc = json.load(fh)
    return {c["id"]: c for c in doc["cases"]}


def test_a_served_checker_judges_as_check_does(tmp_path):
    """The same recipe with and without check_server: the same cases,
    verdicts and findings, torn ones among them."""
    plain = run(recipe(tmp_path / "p", "ab"), tmp_path / "plain")
    served = run(recipe(tmp_path / "s", "ab", server=[]),
                 tmp_path / "served")
    assert plain.returncode == 1, plain.stdout[-2000:]
    assert served.returncode == 1, served.stdout[-2000:]
    a, b = verdicts(tmp_path / "plain"), verdicts(tmp_path / "served")
    assert set(a) == set(b)
    assert {k: (c["verdict"], c.get("finding")) for k, c in a.items()} == \
        {k: (c["verdict"], c.get("finding")) for k, c in b.items()}
    torn = [c for c in b.values() if c["verdict"] == "torn"
            and c["id"].startswith("ab-powerloss@")]
    assert torn and all("found checker exited 1: a is " in c["finding"]
                        for c in torn), torn[:1]
    assert not [c for c in b.values() if c["verdict"] == "harness-error"]


def test_a_server_that_answers_otherwise_than_check_is_caught(tmp_path):
    """A server that accepts every state: the first state it answers is
    asked of check too, and the case it was asked for is a
    harness-error naming both answers; the run is not clean."""
    proc = run(recipe(tmp_path, "ab", server=["--lie"]), tmp_path / "out",
               "--faults", "baseline,powerloss")
    assert proc.returncode == 1, proc.stdout[-2000:]
    errors = [c for c in verdicts(tmp_path / "out").values()
              if c["verdict"] == "harness-error"]
    assert errors, proc.stdout[-2000:]
    assert any(c["finding"].startswith(
        "check_server answered otherwise than check on the same state: "
        "the server exited 0, check exited 1: ")
        for c in errors), [c["finding"] for c in errors]


@pytest.mark.parametrize("flag, said", [
    ("--die", "check_server exited (status 3)"),
    ("--garble", "check_server answered what is not JSON: status zero"),
])
def test_a_server_that_cannot_answer_fails_its_case_only(tmp_path, flag,
                                                          said):
    """A server that exits after two answers, or answers what is not the
    protocol: the case whose state it was asked about is a harness-error
    saying so, never a verdict; a new server answers the next states
    (--die: the cases after it are judged)."""
    proc = run(recipe(tmp_path, "ab", server=[flag]), tmp_path / "out",
               "--faults", "baseline,powerloss")
    got = verdicts(tmp_path / "out")
    errors = [c for c in got.values() if c["verdict"] == "harness-error"]
    assert errors and all(c["finding"] == said for c in errors), \
        ([c["finding"] for c in errors], proc.stdout[-2000:])
    assert proc.returncode == 1
    if flag == "--die":
        judged = [c for c in got.values() if c["verdict"] == "torn"]
        assert judged, proc.stdout[-2000:]


def test_a_server_that_hangs_is_given_the_case_time_limit(tmp_path):
    """A server that never answers: ended at the spec's timeout, the case
    a harness-error that says how long it waited."""
    spec = recipe(tmp_path, "ab", server=["--hang"], timeout=2)
    proc = run(spec, tmp_path / "out", "--case", "ab-powerloss@exit-posix")
    got = verdicts(tmp_path / "out")
    assert got["ab-powerloss@exit-posix"]["verdict"] == "harness-error", \
        proc.stdout[-2000:]
    assert got["ab-powerloss@exit-posix"]["finding"] == \
        "check_server did not answer within 2 s"


@pytest.mark.parametrize("field, said", [
    ('check_server = "{here}/check --serve"', "check_server: "),
    ('check_server = ["{here}/check", "{target}"]',
     'check_server: {target} with contract = "tree"'),
    ('check_server = ["{here}/check", "{nonsense}"]', "check_server: "),
])
def test_a_bad_check_server_is_a_one_line_error(tmp_path, field, said):
    spec = recipe(tmp_path, "ab")
    spec.write_text(spec.read_text() + field + "\n")
    proc = run(spec, tmp_path / "out")
    assert proc.returncode == 2
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1 and said in lines[0], proc.stdout


def test_check_server_without_check_is_refused(tmp_path):
    spec = recipe(tmp_path, "ab", server=[])
    spec.write_text(spec.read_text().replace(
        'check = ["{here}/check"]\n', ""))
    proc = run(spec, tmp_path / "out")
    assert proc.returncode == 2
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1 and "check: missing" in lines[0], proc.stdout


def test_the_budget_counts_the_states_a_checker_answers(tmp_path):
    # The budget's estimate charges a checker once for each crash state
    # a case adds to those judged (sweep.new_states), as counted on the
    # baseline's crash points. A program of six unsynced writes leaves
    # many distinct states a point, most of them its neighbour's too:
    # the estimate must be the states the sweep judged per case, not one.
    d = tmp_path / "six"
    d.mkdir()
    files = "a b c d e f".split()
    (d / "setup").write_text("#!/bin/sh\n" + "".join(
        f"printf old > {f}\n" for f in files))
    (d / "driver").write_text("#!/bin/sh\n" + "".join(
        f"printf new > {f}\n" for f in files))
    (d / "check").write_text("#!/bin/sh\nexit 0\n")
    for f in ("setup", "driver", "check"):
        os.chmod(d / f, 0o755)
    spec = d / "six.toml"
    spec.write_text('name = "six"\ndescription = "six files in place"\n'
                    'contract = "tree"\nsetup = ["{here}/setup"]\n'
                    'command = ["{here}/driver"]\n'
                    'check = ["{here}/check"]\n')
    r = run(spec, tmp_path / "out", "--faults", "powerloss", "--exhaustive")
    assert r.returncode in (0, 1), r.stdout
    with open(tmp_path / "out" / "results.json") as fh:
        doc = json.load(fh)
    s = doc["summary"]
    points = [c for c in doc["cases"] if c["kind"] == "powerloss"]
    judged = s["run"]["checker"]["distinct_states"] / len(points)
    estimated = s["timing"]["estimate"]["checker_states"]["six"]
    assert judged > 2
    assert judged / 1.5 <= estimated <= judged * 1.5, (estimated, judged)
