"""pytest plugin: every sweep case is a test item.

Load with `-p harness.plugin` and give specs with `--cc-spec`; the test
module harness/sweep_cases.py holds the one test function the cases
parametrize. pytest brings its own progress output, `-k`, xdist's `-n`
and `--junitxml`; this plugin adds the enumeration before collection, the
results directory and the reports after the session.

With xdist the controller enumerates (it is the only process that runs
pytest_configure with no `workerinput`) and the workers read the case list
from the work directory, so every worker collects the same items.
"""

import json
import os
import shutil
import sys
import time
import zlib
from pathlib import Path

import pytest

from . import ROOT, UsageError, report, spec as specmod, sweep

CASES_FILE = "cases.json"


def pytest_addoption(parser):
    g = parser.getgroup("crashcheck", "crashcheck sweep")
    g.addoption("--cc-spec", action="append", default=[], metavar="SPEC",
                help="workload spec (TOML) to sweep; repeatable")
    g.addoption("--cc-out", default=str(ROOT / "results"), metavar="DIR",
                help="results directory (default: results/)")
    g.addoption("--cc-model", default="all",
                choices=("posix", "ext4-ordered", "all"),
                help="crash model(s) for power-loss cases")
    g.addoption("--cc-faults", default="all", metavar="KINDS",
                help="comma-separated fault classes: " + ",".join(sweep.KINDS))
    g.addoption("--cc-case", action="append", default=[], metavar="ID",
                help="run only this case id (exact); repeatable")
    g.addoption("--cc-shard", default=None, metavar="K/N",
                help="run the K-th of N deterministic shards of the cases")
    g.addoption("--cc-seed", type=int, default=0,
                help="seed of the crash-state sample (default 0)")
    g.addoption("--cc-cap", type=int, default=64,
                help="crash states per crash point (default 64)")
    g.addoption("--cc-timeout", type=float, default=None,
                help="seconds per run, overriding the specs")
    g.addoption("--cc-keep", action="store_true",
                help="keep every case's scratch directory")
    g.addoption("--cc-command", default="",
                help="the command line to show in reports and reproduce lines")


def _is_worker(config):
    return hasattr(config, "workerinput")


def settings_from(config):
    faults = config.getoption("--cc-faults")
    kinds = sweep.KINDS if faults == "all" else tuple(
        k.strip() for k in faults.split(",") if k.strip())
    for k in kinds:
        if k not in sweep.KINDS:
            raise pytest.UsageError(f"--cc-faults: unknown fault class {k!r}")
    model = config.getoption("--cc-model")
    return sweep.Settings(
        out=Path(config.getoption("--cc-out")).resolve(),
        models=sweep.MODELS if model == "all" else (model,),
        kinds=kinds,
        jobs=_jobs(config),
        cap=config.getoption("--cc-cap"),
        seed=config.getoption("--cc-seed"),
        keep=config.getoption("--cc-keep"),
        timeout=config.getoption("--cc-timeout"))


def _jobs(config):
    n = getattr(config.option, "numprocesses", None)
    return n if isinstance(n, int) and n > 0 else (os.cpu_count() or 1)


def parse_shard(text):
    try:
        k, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise pytest.UsageError(f"--cc-shard: expected K/N, got {text!r}") from None
    if not (n >= 1 and 1 <= k <= n):
        raise pytest.UsageError(f"--cc-shard: need 1 <= K <= N, got {text!r}")
    return k, n


def in_shard(case_id, k, n):
    """Deterministic, stable across machines and Python versions."""
    return zlib.crc32(case_id.encode()) % n == k - 1


class Sweep:
    """The state of one sweep session, shared by the plugin's hooks."""

    def __init__(self, config):
        self.config = config
        self.settings = settings_from(config)
        self.spec_paths = [Path(p) for p in config.getoption("--cc-spec")]
        try:
            self.specs = [specmod.load(p) for p in self.spec_paths]
        except specmod.SpecError as e:
            raise pytest.UsageError(str(e)) from None
        self.specs_by_name = {s.name: s for s in self.specs}
        self.cases = []
        self._judge = None
        self.started = time.time()

    @property
    def work(self):
        return self.settings.work

    def enumerate(self):
        def log(msg):
            print(msg, file=sys.stderr, flush=True)
        cases, _ = sweep.enumerate_cases(self.specs, self.settings, log=log)
        (self.work / "results").mkdir()
        with open(self.work / CASES_FILE, "w") as fh:
            json.dump([c.to_json() for c in cases], fh)

    def judge(self):
        if self._judge is None:
            self._judge = sweep.Judge(self.specs, self.settings)
        return self._judge

    def load_cases(self):
        with open(self.work / CASES_FILE) as fh:
            self.cases = [sweep.Case(**c) for c in json.load(fh)]
        return self.cases


def pytest_configure(config):
    if not config.getoption("--cc-spec"):
        return
    state = Sweep(config)
    config._crashcheck = state
    if not _is_worker(config):
        state.enumerate()
        wanted = set(config.getoption("--cc-case"))
        unknown = wanted - {c.id for c in state.load_cases()}
        if unknown:
            shutil.rmtree(state.work, ignore_errors=True)
            raise pytest.UsageError(f"--case: no such case: {sorted(unknown)[0]}")
    # Findings are reported by us in one line each; pytest's tracebacks of
    # a verdict assertion would only repeat them.
    if config.getoption("tbstyle", "auto") == "auto":
        config.option.tbstyle = "no"


def pytest_generate_tests(metafunc):
    if "cc_case" not in metafunc.fixturenames:
        return
    state = getattr(metafunc.config, "_crashcheck", None)
    if state is None:
        raise pytest.UsageError("harness/sweep_cases.py needs --cc-spec")
    cases = state.load_cases()
    wanted = set(metafunc.config.getoption("--cc-case"))
    if wanted:
        cases = [c for c in cases if c.id in wanted]
    shard = metafunc.config.getoption("--cc-shard")
    if shard:
        k, n = parse_shard(shard)
        cases = [c for c in cases if in_shard(c.id, k, n)]
    metafunc.parametrize("cc_case", cases, ids=[c.id for c in cases])


@pytest.fixture
def cc_sweep(request):
    return request.config._crashcheck


def pytest_sessionfinish(session, exitstatus):
    """Gather every case's result, write the reports, and fail the session
    when a buggy variant went uncaught (no single case fails for that)."""
    config = session.config
    state = getattr(config, "_crashcheck", None)
    if state is None or _is_worker(config):
        return
    results = []
    rdir = state.work / "results"
    if rdir.is_dir():
        for p in sorted(rdir.iterdir()):
            with open(p) as fh:
                results.append(json.load(fh))
    meta = {
        "command": config.getoption("--cc-command") or " ".join(sys.argv),
        "specs": [str(p) for p in state.spec_paths],
        "models": list(state.settings.models),
        "kinds": list(state.settings.kinds),
        "seed": state.settings.seed,
        "cap": state.settings.cap,
        "timing": {"started": round(state.started, 3),
                   "duration": round(time.time() - state.started, 3)},
    }
    # With a selection (one case, a shard, -k) a variant's other cases did
    # not run here: whether it was caught is decided when shards merge.
    selected = bool(config.getoption("--cc-case") or config.getoption("--cc-shard")
                    or config.getoption("keyword"))
    not_caught = [] if selected else sweep.uncaught(state.specs, results)
    meta["not_caught"] = not_caught
    out = state.settings.out
    report.write_all(out, results, meta)
    state.results, state.not_caught, state.meta = results, not_caught, meta
    if not_caught and session.exitstatus == 0:
        session.exitstatus = 1


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """The short story: one line per finding with its reproduce command,
    then where the reports are."""
    state = getattr(config, "_crashcheck", None)
    if state is None or _is_worker(config) or not hasattr(state, "results"):
        return
    tw = terminalreporter
    failed = [r for r in state.results if not r["passed"]]
    for r in failed:
        tw.line(f"FINDING {r['id']}: {r['verdict']}: {r['finding']}")
        tw.line(f"  reproduce: {r['reproduce']}")
    for line in state.not_caught:
        tw.line(f"NOT CAUGHT {line}")
    s = report.summarize(state.results, state.meta)
    out = state.settings.out
    files = [out / "report.md", out / "report.html", out / "results.json"]
    xml = getattr(config.option, "xmlpath", None)
    if xml:
        files.append(Path(xml))
    tw.line(f"crashcheck: {len(state.results)} cases, {s.get('findings', 0)} "
            f"findings, {len(failed)} failed, {len(state.not_caught)} variants "
            f"not caught")
    tw.line("crashcheck: reports: " + ", ".join(str(f) for f in files))


def pytest_unconfigure(config):
    state = getattr(config, "_crashcheck", None)
    if state is None or _is_worker(config):
        return
    if not state.settings.keep and state.work.exists():
        shutil.rmtree(state.work, ignore_errors=True)
