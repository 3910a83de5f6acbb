"""Every case when it fits the budget, a sample past it (issues 22 and
34): the sweep estimates from the baselines what every case would take;
when that fits --budget (5 minutes by default) every case runs, else
it groups a trace's calls by call site, file and fault, and runs the
first, the last and as large a seeded sample of each group as fits, and
says SAMPLED on the console, in the reports' badges, junit and SARIF,
with `clean` false; `--sample N` samples whatever the budget,
`--exhaustive` runs every one; `--case` finds any case whatever the
grouping kept; the progress line counts cases and says how long is left.

The program is GNU dd with bs=1, which copies a file one write(2) per
byte: hundreds of calls from one call site on one file, like GNU ed's
fputc per byte.
"""

import json
import re
import subprocess
from pathlib import Path

import pytest

from harness.engine import baseline, cases as casesmod, sampling, sweep

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
    return casesmod.Settings(out=Path("/nonexistent"), **kw)


def test_select_keeps_first_last_and_a_seeded_sample():
    found = [(("a",), i) for i in range(100)] + [(("b",), 100 + i)
                                                  for i in range(4)]
    stats = {}
    kept = sampling.select(found, settings(), stats)
    a = [i for i in kept if i < 100]
    assert a[0] == 0 and a[-1] == 99 and len(a) == 2 + sampling.SAMPLE
    assert [i for i in kept if i >= 100] == [100, 101, 102, 103]
    assert kept == sorted(kept)
    assert stats == {"groups": 2, "cases": 104, "kept": len(kept)}
    # the same seed, the same sample; another seed, another (100 choose 3)
    assert sampling.select(found, settings()) == kept
    assert sampling.select(found, settings(seed=1)) != kept
    assert len(sampling.select(found, settings(sample=10))) == 12 + 4
    assert sampling.select(found, settings(exhaustive=True)) == list(range(104))
    # no sample: the ends of every group larger than two
    assert sampling.select(found, settings(sample=0)) == [0, 99, 100, 103]


# ------------------------------------------------------------- a real program

def test_dd_bs1_runs_a_handful_of_its_writes(tmp_path):
    doc, r = audit_dd(tmp_path, 300, "--sample", sampling.SAMPLE)
    forms = by_form(doc)
    assert set(forms) == {"=EINTR", "++=ENOSPC", "=EIO", "++=EIO", "=crash",
                          "=crash-after"}
    for form, ns in forms.items():
        # dd's 300 writes of one byte to its target are one group per
        # fault: each keeps its first and last
        assert ns[0] == 1 and ns[-1] == 300, (form, ns)
        assert len(ns) == 2 + sampling.SAMPLE, (form, ns)
    g = doc["summary"]["run"]["grouping"]
    assert g["exhaustive"] is False and g["sample"] == sampling.SAMPLE
    assert g["seed"] == 0 and g["calls"] >= 300
    assert g["kept"] == len(doc["cases"]) < g["cases"] / 20
    assert f"SAMPLED {g['kept']} of {g['cases']} cases: as --sample asks" \
        in r.stderr
    md = (tmp_path / "out" / "report.md").read_text()
    assert f"cases {g['kept']} of {g['cases']}: of each group" in md
    assert doc["summary"]["clean"] is False
    # the crash points are grouped alike: after the first and the last
    # write, and a few between
    points = [c["call"] for c in doc["cases"] if c["kind"] == "powerloss"
              and c["model"] == "posix" and c["call"].startswith("write(")]
    assert "write(target)#1" in points
    assert "write(target)#300" in points and len(points) == 2 + sampling.SAMPLE


def test_exhaustive_keeps_every_write_and_the_same_verdicts(tmp_path):
    grouped, _ = audit_dd(tmp_path, 24, "--faults", "eio,powerloss",
                          "--sample", sampling.SAMPLE)
    every, _ = audit_dd(tmp_path, 24, "--faults", "eio,powerloss",
                        "--exhaustive", out="all")
    assert by_form(every) == {"=EIO": list(range(1, 25)),
                              "++=EIO": list(range(1, 25))}
    assert len(by_form(grouped)["=EIO"]) == 2 + sampling.SAMPLE
    all_cases = {c["id"]: (c["verdict"], c["states"]) for c in every["cases"]}
    for c in grouped["cases"]:
        # a crash point kept alone has the states it has among all
        assert all_cases[c["id"]] == (c["verdict"], c["states"]), c["id"]
    assert every["summary"]["run"]["grouping"]["exhaustive"] is True


def test_a_case_the_grouping_left_out_still_reruns(tmp_path):
    doc, _ = audit_dd(tmp_path, 40, "--faults", "eio", "--sample",
                      sampling.SAMPLE)
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


@pytest.mark.parametrize("value", ["-1", "soon", "5x"])
def test_bad_budget_is_one_line(tmp_path, value):
    r = cc("audit", "--out", tmp_path / "out", "--budget", value,
           "--contract", "in-place", "--new", "/etc/hostname", "--", *DD)
    assert r.returncode == 2
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("crashcheck: --budget: ")


# ------------------------------------------------------ the time budget

def found(n_faults, n_points, seconds, models=2):
    """A Found of one group of N_FAULTS fault cases and one of N_POINTS
    crash points, each case estimated at SECONDS."""
    def case(i, kind):
        return casesmod.Case(id=f"c-{kind}{i}", combo="c", kind=kind)
    return baseline.Found(
        [case(0, "baseline")],
        [(("site", "write"), case(i, "fault")) for i in range(n_faults)],
        [(("site", "write"), [case(i, f"m{m}") for m in range(models)])
         for i in range(n_points)],
        models=models, seconds=seconds)


def test_the_estimate_counts_what_choose_keeps():
    f = found(40, 30, 0.01)
    for sample in (None, 0, 1, 3, 17, 38, 100):
        assert sampling.seconds_kept(f, sample) == \
            pytest.approx(0.01 * len(sampling.choose(f, sample, 0))), sample
    assert sampling.seconds_kept(f, None) == \
        pytest.approx(0.01 * (1 + 40 + 30 * 2))
    # a model's cases, then the next model's
    kinds = [c.kind for c in sampling.choose(f, 3, 0)]
    assert kinds == ["baseline"] + ["fault"] * 5 + ["m0"] * 5 + ["m1"] * 5


def test_every_case_when_the_estimate_fits_the_budget():
    f = [found(40, 30, 0.01), found(400, 10, 0.02)]
    # every case: 101 * 0.01 + 421 * 0.02 seconds, on 2 jobs
    whole = (101 * 0.01 + 421 * 0.02) / 2
    s = settings(jobs=2, budget=whole + 0.01)
    sample, estimate = sampling.choose_sample(f, s)
    assert sample is None and estimate == pytest.approx(whole)
    # past it: the largest sample that fits, and it fits
    s = settings(jobs=2, budget=whole / 4)
    sample, _ = sampling.choose_sample(f, s)
    assert sample is not None
    assert sampling.estimate_of(f, sample, 0, 2) <= whole / 4 \
        < sampling.estimate_of(f, sample + 1, 0, 2)
    # not even the ends of each group fit: those, and no fewer
    assert sampling.choose_sample(f, settings(jobs=2, budget=0.001))[0] == 0
    # asked for: --sample whatever the budget, --exhaustive every case;
    # a shard runs every case (its estimate is its machine's)
    assert sampling.choose_sample(f, settings(budget=1e9, sample=2))[0] == 2
    assert sampling.choose_sample(f, settings(budget=0.001,
                                              exhaustive=True))[0] is None
    assert sampling.choose_sample(f, settings(budget=0.001,
                                              sharded=True))[0] is None
    assert sampling.choose_sample(f, settings(budget=None))[0] is None


def test_pilots_stand_for_the_fault_cases_of_their_class():
    f = found(40, 30, 0.01)
    f.pilots = {"error": 1.0}
    # the baseline and 30 crash points x 2 models at case_cost's, the
    # 40 fault cases ("fault": an error class) at their pilots'
    assert sampling.estimate_of([f], None, 0, 1) == \
        pytest.approx(61 * 0.01 + 40 * 1.0)
    assert sampling.estimate_of([f], 3, 0, 2) == \
        pytest.approx((11 * 0.01 + 5 * 1.0) / 2)
    # a class no pilot timed is case_cost's
    f.pilots = {"crash": 1.0}
    assert sampling.estimate_of([f], None, 0, 1) == pytest.approx(101 * 0.01)
    # pilots are timed without their checker: a case is charged its share
    # of the checker's answers beside them (Found.judged)
    f.pilots, f.judged = {"error": 1.0, "powerloss": 0.5}, 0.25
    assert sampling.estimate_of([f], None, 0, 1) == \
        pytest.approx(0.01 + 40 * 1.25 + 30 * (0.5 + 2 * 0.25))
    f.judged = 0.0
    # a crash point (both models) at its pilot's, and the trace explored
    # once by each process that judges one
    f.pilots = {"powerloss": 0.5, "explore": 2.0}
    assert sampling.estimate_of([f], None, 0, 2) == \
        pytest.approx((41 * 0.01 + 30 * 0.5 + 2 * 2.0) / 2)
    assert sampling.estimate_of([f], 3, 0, 1) == \
        pytest.approx(6 * 0.01 + 5 * 0.5 + 1 * 2.0)


def test_pilots_are_spread_over_each_class_in_trace_order():
    def case(i, kind):
        return casesmod.Case(id=f"c{i}", combo="c", kind=kind)
    kinds = ["crash", "eio", "crash", "enospc", "crash"] * 4
    f = baseline.Found([], [((k,), case(i, k)) for i, k in enumerate(kinds)])
    pilots = sweep.pilots_of(f)
    crash = [i for i, k in enumerate(kinds) if k == "crash"]     # 12
    error = [i for i, k in enumerate(kinds) if k != "crash"]     # 8
    assert [c.id for c in pilots["crash"]] == [f"c{crash[3]}", f"c{crash[9]}"]
    assert [c.id for c in pilots["error"]] == [f"c{error[2]}", f"c{error[6]}"]
    one = baseline.Found([], [(("a",), case(0, "eio"))])
    assert [c.id for c in sweep.pilots_of(one)["error"]] == ["c0"]


def test_pilots_only_where_the_budget_may_sample():
    f = found(40, 30, 0.01)         # 101 cases of 0.01 s: 0.5 s on 2 jobs
    assert not sampling.pilot_wanted(f, settings(jobs=2, budget=300))
    assert sampling.pilot_wanted(f, settings(jobs=2, budget=1))
    for kw in (dict(exhaustive=True), dict(sample=3), dict(sharded=True),
               dict(budget=None)):
        assert not sampling.pilot_wanted(
            f, settings(**{"jobs": 2, "budget": 1, **kw})), kw
    # crash points alone are timed too; a baseline alone is not
    assert sampling.pilot_wanted(found(0, 30, 0.01),
                                 settings(jobs=2, budget=0.01))
    assert not sampling.pilot_wanted(found(0, 0, 0.01),
                                     settings(jobs=2, budget=0.001))


def test_pilots_count_every_verdict_and_stop_at_their_share(monkeypatch,
                                                            tmp_path):
    """A pilot that hung or whose checker failed (a harness-error) costs
    what its case will; pilots stop once they took PILOT_SHARE of the
    budget. A judge whose every case takes 10 s on a clock of our own."""
    clock, ran = [0.0], []

    class Judge:
        def __init__(self, specs, settings):
            self.scratch_root = None

        def execute(self, case):
            ran.append(case.id)
            clock[0] += 10.0
            return {"verdict": "harness-error"}

        def want_points(self, cases):
            pass

        def close_server(self):
            pass

        def run_checker(self, *args):
            pass

        check = run_checker

    monkeypatch.setattr(sweep, "Judge", Judge)
    monkeypatch.setattr(sweep, "time", type("T", (), {
        "monotonic": staticmethod(lambda: clock[0])}))
    monkeypatch.setattr(sweep.runner, "make_scratch",
                        lambda prefix: tmp_path / "pilots")
    combo = type("C", (), {"spec": None})
    f = found(40, 30, 0.01)
    # 400 s: 100 s for pilots, enough for all six
    assert sweep.pilot_seconds(combo, f, settings(jobs=2, budget=400)) == \
        {"error": 10.0, "powerloss": 20.0, "explore": 0.0}
    assert len(ran) == 2 + 2 * 2
    # 36 s: 9 s for pilots, past after the first
    ran.clear()
    assert sweep.pilot_seconds(combo, f, settings(jobs=2, budget=36)) == \
        {"error": 10.0}
    assert len(ran) == 1


def test_pilots_time_real_cases_and_leave_nothing(tmp_path):
    """dd's 300 writes, estimated at more than a quarter of a budget of
    20 s (their pilots take a fraction of the 5 s they may): two pilots
    of each kind run as the sweep's cases do, in crashcheck's scratch,
    which they leave as they found it; the cases are the same as
    without."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    doc, _ = audit_dd(tmp_path, 300, "--budget", "20", "--scratch", scratch)
    pilots = doc["summary"]["timing"]["estimate"]["pilots"]
    assert set(pilots) == {"dd"}
    assert set(pilots["dd"]) == {"crash", "error", "powerloss", "explore"}
    assert all(t > 0 for k, t in pilots["dd"].items() if k != "explore")
    assert pilots["dd"]["explore"] >= 0
    assert list(scratch.iterdir()) == []
    # timed, every case may fit the budget, or a sample
    sample = doc["summary"]["run"]["grouping"]["sample"]
    again, _ = audit_dd(tmp_path, 300, *(["--exhaustive"] if sample is None
                                          else ["--sample", sample]),
                        out="again")
    assert [(c["id"], c["verdict"]) for c in doc["cases"]] == \
        [(c["id"], c["verdict"]) for c in again["cases"]]
    assert "pilots" not in again["summary"]["timing"]["estimate"]


def test_past_the_budget_every_report_says_sampled(tmp_path):
    # every case of dd's 300 writes is estimated at no less than
    # CASE_OVERHEAD seconds: far past a budget of 0.1 s
    doc, r = audit_dd(tmp_path, 300, "--budget", "0.1")
    g = doc["summary"]["run"]["grouping"]
    assert g["kept"] == len(doc["cases"]) < g["cases"]
    assert g["budget"] == 0.1 and "estimate" not in g
    assert doc["summary"]["timing"]["estimate"]["estimate"] > 0.1
    words = f"SAMPLED {g['kept']} of {g['cases']} cases"
    # the first line after the baselines' says so, before any case runs,
    # and the counts at the end
    err = r.stderr.splitlines()
    assert err[0].startswith("crashcheck: recording ")
    # its cases timed first (pilots), said as they hold up the baselines
    assert err[1] == (f"crashcheck: dd: timing 8 of its {g['cases']} cases "
                      "first, for the budget's estimate (--budget)"), err
    assert err[2].startswith(f"crashcheck: {words}: every case would take "
                             "about "), err
    assert "past the 0.1 s budget (--budget)" in err[2]
    assert f"crashcheck: {words}, 0 findings" in r.stdout
    s = doc["summary"]
    assert s["clean"] is False and s["passed"] is True
    assert s["sampled"] == {"kept": g["kept"], "of": g["cases"]}
    out = tmp_path / "out"
    md = (out / "report.md").read_text()
    assert md.startswith(f"# crashcheck report: {words}\n")
    assert f"**PASS, {words}**" in md
    html = (out / "report.html").read_text()
    assert f'<span class="badge pass">PASS, {words}</span>' in html
    junit = (out / "junit.xml").read_text()
    assert f'<testsuites name="crashcheck ({words})"' in junit
    assert '<property name="clean" value="false" />' in junit
    sarif = json.loads((out / "results.sarif").read_text())
    run = sarif["runs"][0]
    assert run["properties"]["sampled"] == words
    note, = run["invocations"][0]["toolExecutionNotifications"]
    assert note["descriptor"]["id"] == "sampled"
    assert note["message"]["text"].startswith(f"{words}: not a clean pass")


def test_default_audit_runs_every_case_and_is_clean(tmp_path):
    doc, r = audit_dd(tmp_path, 40, "--faults", "eio")
    g = doc["summary"]["run"]["grouping"]
    assert g["exhaustive"] is True and g["kept"] == g["cases"]
    assert by_form(doc)["=EIO"] == list(range(1, 41))
    assert doc["summary"]["clean"] is True and doc["summary"]["sampled"] is None
    assert "SAMPLED" not in r.stdout + r.stderr
    # far inside the budget: no fault case is timed beforehand
    assert "pilots" not in doc["summary"]["timing"]["estimate"]


# ------------------------------------------ a defect on one call of many

@pytest.fixture(scope="module")
def checkpointer(tmp_path_factory):
    """tests/progs/checkpointer.c: ignores EIO on its 18th write only."""
    out = tmp_path_factory.mktemp("checkpointer") / "checkpointer"
    proc = subprocess.run(["cc", "-g", "-O0", "-Wall", "-Wextra", "-o",
                           str(out), str(ROOT / "tests" / "progs" /
                                         "checkpointer.c")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return out


def test_default_audit_finds_the_eighteenth_write(tmp_path, checkpointer):
    new = tmp_path / "new"
    new.write_bytes(bytes(range(256)) * 7 + b"end\n" * 32)    # 30 records
    argv = ["audit", "--new", new, "--faults", "eio", "--model", "posix",
            "--", checkpointer, "{new}", "{target}"]
    r = cc(argv[0], "--out", tmp_path / "default", *argv[1:])
    assert r.returncode == 1, r.stdout + r.stderr
    doc = json.loads((tmp_path / "default" / "results.json").read_text())
    failed = [c["id"] for c in doc["cases"] if not c["passed"]]
    assert failed == ["checkpointer-write(target.tmp)#18=EIO"], failed
    assert "SAMPLED" not in r.stdout + r.stderr
    # a sample passes it, and says it sampled: the first and the last of
    # the site's 30 writes alone (--sample 0; which writes a seeded sample
    # of 3 takes depends on the groups the run makes, and may be #18)
    r = cc(argv[0], "--out", tmp_path / "sampled", "--sample", "0",
           *argv[1:])
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((tmp_path / "sampled" / "results.json").read_text())
    assert "checkpointer-write(target.tmp)#18=EIO" not in \
        {c["id"] for c in doc["cases"]}
    assert doc["summary"]["clean"] is False
    assert "crashcheck: SAMPLED " in r.stdout
