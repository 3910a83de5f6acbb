"""pytest plugin: every sweep case is a test item.

Load with `-p harness.engine.plugin` and give specs with `--cc-spec`; the file
harness/engine/sweep_cases.py is collected as the cases (CaseFile, one CaseItem
per case, run by a one-phase protocol). pytest brings its progress
output, `-k`, `-x` and the exit status; this plugin adds the enumeration
before collection, the pool of worker processes (harness/engine/pool.py), the
results directory and the reports, junit.xml included, after the session.

With pytest-xdist (`crashcheck run --tx 2*popen`, `--tx
ssh=HOST//python=/usr/bin/python3`) the controller enumerates (it is the
only process that runs pytest_configure with no `workerinput`), and the
workers, on this machine or others, read the case list from the
controller's work directory (its path in their workerinput; copied to
the same path on a machine of another gateway, pytest_xdist_newgateway),
so every worker collects the same items; each result comes back to the
controller with its test report (user_properties), and the controller
writes the reports as a local run would.
"""

import json
import os
import shutil
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from .. import ROOT, UsageError
from . import auditspec, gateways, outdir
from ..judging import models
from ..reports import regress
from . import (baseline as baselinemod, cases as casesmod, confine, contain,
               judge as judgemod, pool, realfs, runner, sessionend,
               spec as specmod, sweep, tracecut)

CASES_FILE = sweep.CASES_FILE


def pytest_addoption(parser):
    g = parser.getgroup("crashcheck", "crashcheck sweep")
    g.addoption("--cc-spec", action="append", default=[], metavar="SPEC",
                help="workload spec (TOML) to sweep; repeatable")
    g.addoption("--cc-audit", action="append", default=[], metavar="JSON",
                help="an audit's description (harness/commands/audit.py) to sweep "
                     "like a spec; repeatable")
    g.addoption("--cc-out", default=str(ROOT / "results"), metavar="DIR",
                help="results directory (default: results/)")
    g.addoption("--cc-model", default=",".join(casesmod.DEFAULT_MODELS),
                metavar="MODELS",
                help="crash model(s) for power-loss cases: one of "
                     + ", ".join(casesmod.MODELS) + ", a comma list, or all")
    g.addoption("--cc-fs", default=None, choices=realfs.FILESYSTEMS,
                help="also judge power loss on this real filesystem "
                     "(harness/engine/realfs.py; root only)")
    g.addoption("--cc-faults", default="all", metavar="KINDS",
                help="comma-separated fault classes: " + ",".join(casesmod.KINDS))
    g.addoption("--cc-case", action="append", default=[], metavar="ID",
                help="run only this case id (exact); repeatable")
    g.addoption("--cc-shard", default=None, metavar="K/N",
                help="run the K-th of N deterministic shards of the cases")
    g.addoption("--cc-seed", type=int, default=0,
                help="seed of the crash-state sample (default 0)")
    g.addoption("--cc-cap", type=int, default=64,
                help="crash states per crash point (default 64)")
    g.addoption("--cc-sector", type=int, default=None,
                help="bytes written atomically, overriding the specs' "
                     "(512, 1024, 2048, 4096)")
    g.addoption("--cc-timeout", type=float, default=None,
                help="seconds per run, overriding the specs")
    g.addoption("--cc-keep", action="store_true",
                help="keep every case's scratch directory")
    g.addoption("--cc-scratch", default=None, metavar="DIR",
                help="where scratch directories go (default: /dev/shm "
                     "when it has room, else the temporary directory)")
    g.addoption("--cc-scratch-limit", type=int, default=None, metavar="BYTES",
                help="bytes of snapshots one run may take (default: a "
                     "share of the scratch's free space)")
    g.addoption("--cc-trace-limit", type=int, default=None, metavar="BYTES",
                help="bytes of trace one run may write, the rest counted "
                     "(default: 32 MiB; 0: no limit)")
    g.addoption("--cc-home", action="store_true",
                help="give each run an empty HOME of its own")
    g.addoption("--cc-exec-each", action="store_true",
                help="exec the program for every case, no fork server")
    g.addoption("--cc-strict", action="store_true",
                help="fail the run when a change was made by a call "
                     "crashcheck cannot see")
    g.addoption("--cc-fail-on", default=None, choices=("error", "warning"),
                help="the least severity that fails the run (default: each "
                     "spec's fail_on)")
    g.addoption("--cc-whole-traces", action="store_true",
                help="record every call of every case in full (no lite "
                     "or thin runs)")
    g.addoption("--cc-backend", default="auto",
                choices=("auto", "preload", "syscall"),
                help="how the programs' calls are intercepted "
                     "(harness/engine/backend.py)")
    g.addoption("--cc-baseline", default=None, metavar="FILE",
                help="an earlier results.json: its findings are known "
                     "(reported, not failing)")
    g.addoption("--cc-ignore", default=None, metavar="FILE",
                help="an ignore file ([[ignore]] case, verdict, reason)")
    g.addoption("--cc-exhaustive", action="store_true",
                help="a case for every traced call and crash point (no "
                     "grouping and sampling)")
    g.addoption("--cc-sample", type=int, default=None,
                help="cases sampled inside a group of calls, whatever the "
                     "budget (default: every case when the budget allows)")
    g.addoption("--cc-budget", type=float, default=casesmod.BUDGET,
                help="seconds the cases may take, as estimated from the "
                     "baselines: every case when they fit, else sampled "
                     f"(default {casesmod.BUDGET:g}; 0: no limit)")
    g.addoption("--cc-command", default="",
                help="the command line to show in reports and reproduce lines")
    g.addoption("--cc-jobs", type=int, default=None, metavar="N",
                help="cases executed at once by a pool of N processes "
                     "(default: one per core; 1: in the pytest process)")


def _is_worker(config):
    return hasattr(config, "workerinput")


def _spread(config):
    """How many xdist workers run the cases (--tx N*SPEC, summed), or 0
    when the sweep runs on this machine's pool."""
    specs = getattr(config.option, "tx", None) or []
    if getattr(config.option, "dist", "no") == "no" or not specs:
        return 0
    n = 0
    for spec in specs:
        count, star, _ = spec.partition("*")
        n += int(count) if star and count.isdigit() else 1
    return n


RESULT_PROPERTY = "crashcheck-result"
CASE_DIR_PROPERTY = "crashcheck-case-dir"
# (tests) treat this machine's gateways as another machine's: each case
# directory comes back packed, as from an ssh gateway
FORCE_REMOTE = "CRASHCHECK_TX_REMOTE"


def _remote(config):
    """Whether this process is an xdist worker on another machine than
    the controller's (its case directories go back with its reports)."""
    return _is_worker(config) and bool(config.workerinput.get("cc_remote"))


def settings_from(config):
    faults = config.getoption("--cc-faults")
    kinds = casesmod.KINDS if faults == "all" else tuple(
        k.strip() for k in faults.split(",") if k.strip())
    for k in kinds:
        if k not in casesmod.KINDS:
            raise pytest.UsageError(f"--cc-faults: unknown fault class {k!r}")
    try:
        model = models.parse(config.getoption("--cc-model"))
    except ValueError as e:
        raise pytest.UsageError(f"--cc-model: {e}") from None
    scratch = config.getoption("--cc-scratch")
    if scratch:
        runner.set_scratch_base(scratch)
    jobs = _jobs(config)
    rerun = []
    if scratch:
        rerun += ["--scratch", scratch]
    if config.getoption("--cc-scratch-limit") is not None:
        rerun += ["--scratch-limit", str(config.getoption("--cc-scratch-limit"))]
    trace_limit = config.getoption("--cc-trace-limit")
    if trace_limit is not None:
        rerun += ["--trace-limit", str(trace_limit)]
    else:
        trace_limit = tracecut.LIMIT
    if config.getoption("--cc-home"):
        rerun.append("--home")
    return casesmod.Settings(
        rerun=tuple(rerun),
        scratch_limit=config.getoption("--cc-scratch-limit"),
        trace_limit=trace_limit,
        home=config.getoption("--cc-home"),
        out=Path(config.getoption("--cc-out")).resolve(),
        models=model,
        kinds=kinds,
        jobs=jobs,
        cap=config.getoption("--cc-cap"),
        sector=config.getoption("--cc-sector"),
        seed=config.getoption("--cc-seed"),
        keep=config.getoption("--cc-keep"),
        fork_server=not config.getoption("--cc-exec-each"),
        lite=not config.getoption("--cc-whole-traces"),
        backend=config.getoption("--cc-backend"),
        # a rerun of chosen cases finds each, whatever grouping chose it
        exhaustive=config.getoption("--cc-exhaustive")
        or bool(config.getoption("--cc-case")),
        sample=config.getoption("--cc-sample"),
        budget=config.getoption("--cc-budget") or None,
        sharded=bool(config.getoption("--cc-shard")),
        spread=_spread(config),
        work_dir=Path(config.workerinput["cc_work"])
        if _is_worker(config) and "cc_work" in config.workerinput else None,
        fs=config.getoption("--cc-fs"),
        fail_on=config.getoption("--cc-fail-on"),
        timeout=config.getoption("--cc-timeout"))


def _jobs(config):
    n = config.getoption("--cc-jobs")
    if isinstance(n, int) and n > 0:
        return n
    n = getattr(config.option, "numprocesses", None)
    return n if isinstance(n, int) and n > 0 else (os.cpu_count() or 1)


def parse_shard(text):
    try:
        return casesmod.parse_shard(text)
    except ValueError as e:
        raise pytest.UsageError(f"--cc-shard: {e}") from None


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
        try:
            self.specs += [auditspec.load(p) for p in config.getoption("--cc-audit")]
        except UsageError as e:
            raise pytest.UsageError(str(e)) from None
        self.specs_by_name = {s.name: s for s in self.specs}
        # where the scratch goes, and how much a run may take of it: once,
        # before any directory is made there (the pool's processes are
        # forked after, and keep both)
        if not config.getoption("--cc-scratch"):
            runner.choose_scratch(sweep.room_needed(self.specs,
                                                    self.settings.jobs))
        if self.settings.scratch_limit is None:
            self.settings.scratch_limit = sweep.default_limit(
                self.settings.jobs)
        try:
            self.policy = regress.Policy(
                regress.load_baseline(config.getoption("--cc-baseline"))
                if config.getoption("--cc-baseline") else None,
                regress.load_ignore(config.getoption("--cc-ignore"))
                if config.getoption("--cc-ignore") else None)
        except UsageError as e:
            raise pytest.UsageError(str(e)) from None
        self.cases = []
        self.collected = {}         # case id -> result, of this process
        self._judge = None
        self.scratch_root = None
        self.started = time.time()
        self.interrupted = None     # what stopped the session early
        self.selected = None        # ids of the cases this session judges
        self.copies = []            # (gateway, [directories]) copied to other machines
        self.own_out = None         # a remote worker's: where its case directories go
        if _remote(config):
            # the controller's --out is not here: a scratch directory of
            # this worker's holds each case's directory until it is sent
            self.own_out = runner.make_scratch("crashcheck-cases-") / "out"
            self.settings.out = self.own_out

    @property
    def work(self):
        return self.settings.work

    def enumerate(self):
        def log(msg):
            print(msg, file=sys.stderr, flush=True)
        cases, _ = sweep.enumerate_cases(self.specs, self.settings, log=log)
        (self.work / "results").mkdir()
        with open(self.work / CASES_FILE, "w") as fh:
            fh.write(json.dumps([c.to_json() for c in cases]))   # C encoder

    def judge(self):
        if self._judge is None:
            self._judge = judgemod.Judge(self.specs, self.settings)
            self._judge.want_points(self.cases)
            # the fault cases' scratch directories, one per process of
            # the pool, under one root that pytest_unconfigure removes
            # (the watchdog removes it should this process be killed);
            # its name as long as the baselines' (Judge.scratch_for)
            self.scratch_root = runner.make_scratch(baselinemod.RUNS_PREFIX)
            self._judge.scratch_root = self.scratch_root
        return self._judge

    def run_case(self, case):
        """Execute and judge one case. Under xdist its result goes back
        to the controller with the item's report (CaseItem.runtest,
        pytest_runtest_logreport); otherwise outcome() keeps it."""
        return self.judge().execute(case)

    # ---- the pool
    # pytest runs the items one after the other; the cases behind them run
    # ahead in a pool of processes, in item order, and each item waits for
    # its own case's result. Each case is still one test item (-k, JUnit,
    # the exit status), but the pytest process does only the bookkeeping:
    # with xdist every item also costs a round trip between the controller
    # and a worker, which on two cores took as long as the run itself.

    def start_pool(self, cases, jobs):
        self.judge()                # made here, the pool's processes share its scratch root
        # Cases go out and results come back a few dozen at a time: the
        # pytest process's pool threads wake once per chunk (8 -> 32: a
        # quarter less CPU in the pytest process, 1.84 -> 1.38 s on the
        # 4997-case bench sweep).
        chunk = pool.chunk_size(len(cases), jobs, 32)
        # each process ends its fork server (faults/serve.c) as it leaves
        self._pool, results = pool.start(self.run_case, cases, jobs, chunk,
                                         at_exit=self.judge().close_servers)
        self._ahead = zip(cases, results)
        self._done = {}
        self._left = len(cases)

    def outcome(self, case):
        """The case's result: from the pool when one runs, else executed
        here. A case that could not be judged (the harness failed on it,
        the process running it died) is a harness-error with the reason:
        no case goes missing from the reports."""
        res = self.policy.apply(self._outcome(case))
        self.collected[case.id] = res
        return res

    def _outcome(self, case):
        if getattr(self, "_pool", None) is None:
            try:
                return self.run_case(case)
            except Exception as e:
                if sweep.stops_sweep(e):
                    raise
                import traceback
                return self.failed(case, traceback.format_exc())
        while case.id not in self._done:
            try:
                done, (res, error) = next(self._ahead)
            except StopIteration:
                raise RuntimeError(f"{case.id}: not in the pool's cases") from None
            self._done[done.id] = (res, error)
            self._left -= 1
        res, error = self._done.pop(case.id)
        if error is not None:
            return self.failed(case, error)
        return res

    def failed(self, case, error):
        """The harness-error result of CASE, which failed with ERROR (a
        traceback, or how its pool process died)."""
        line = sweep.failure_line(error)
        detail = error if "Traceback" in error else ""
        return self.judge().failed(case, line, detail)

    def stop_pool(self):
        """Every item has its result (or the session stops early: then
        the cases still running are killed, their programs with them)."""
        running = getattr(self, "_pool", None)
        if running is None:
            return
        self._pool = None
        pool.stop(running, finished=self._left == 0)

    def load_cases(self):
        with open(self.work / CASES_FILE) as fh:
            self.cases = [casesmod.Case(**c) for c in json.load(fh)]
        return self.cases


def _enabled(config):
    return bool(config.getoption("--cc-spec") or config.getoption("--cc-audit"))


@pytest.hookimpl(trylast=True)
def pytest_keyboard_interrupt(excinfo):
    """^C or SIGTERM: the reports and the console say INTERRUPTED in one
    line of ours; pytest's own account of where the interrupt struck
    ("pool.py:199: KeyboardInterrupt (to show a full traceback ...",
    "!!!! _pytest.outcomes.Exit ...") is pytest's internals, not the
    user's, and goes. Its terminal reporter keeps it to print at the
    end: this session's reporter prints nothing of it."""
    config = _STATE.get("config")
    if config is None or not _enabled(config):
        return
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and hasattr(reporter, "_report_keyboardinterrupt"):
        reporter._report_keyboardinterrupt = lambda: None


def _terminated(signum, frame):
    """SIGTERM (a CI job cancelled) or SIGHUP stops a sweep as ^C does. A
    SystemExit raised inside a case would be that case's failure, and
    pytest would go on with the next one; pytest.exit ends the session,
    stopping the pool and its programs (and fork servers) on the way out,
    and the reports say INTERRUPTED. The programs this process runs
    itself go first."""
    contain.kill_local()
    state = _STATE.get("sweep")
    if state is not None and state.interrupted is None:
        state.interrupted = sessionend.signal_name(signum)
    pytest.exit(f"terminated by signal {signum}", returncode=128 + signum)


_STATE = {}     # "sweep": the Sweep of this process, for the signal handler


def pytest_configure(config):
    if not _enabled(config):
        return
    state = Sweep(config)
    config._crashcheck = state
    _STATE["sweep"] = state
    _STATE["config"] = config
    contain.own_process()
    if state.settings.fs is not None:
        real_mode(state.settings.fs)
    if threading.current_thread() is threading.main_thread():
        state.sigterm = signal.signal(signal.SIGTERM, _terminated)
        state.sighup = signal.signal(signal.SIGHUP, _terminated)
    if not _is_worker(config):
        try:
            # new, empty or crashcheck's, and one run at a time (a
            # command claimed it already: then a no-op)
            outdir.claim(state.settings.out, "--cc-out")
        except UsageError as e:
            print(f"crashcheck: {e}", file=sys.stderr, flush=True)
            raise pytest.UsageError() from None
        try:
            # whether the programs run confined, decided here, before the
            # pool forks: said once where they cannot be (confine.py)
            confine.available()
            state.enumerate()
        except (pytest.exit.Exception, KeyboardInterrupt) as e:
            # stopped while recording the baselines: the reports say so
            # (none of the cases was enumerated, let alone judged)
            by = state.interrupted or (
                "SIGINT" if isinstance(e, KeyboardInterrupt) else
                sessionend.signal_name(
                    int(getattr(e, "returncode", 0) or 0) - 128))
            state.selected = []
            sweep.remove_work(state.settings.work_link)
            sessionend.write_reports(config, state, [], by)
            sessionend.say_interrupted(config, state)
            raise
        except (UsageError, OSError) as e:
            # a spec's program that cannot start (runner.SetupError), no
            # containment to be had (contain.ContainError), a scratch that
            # is full: one line, exit 2
            sweep.remove_work(state.settings.work_link)
            outdir.release(state.settings.out, refused=True)
            if isinstance(e, OSError):
                e = (f"cannot record the baselines in the scratch: "
                     f"{e.strerror}" + (f": {e.filename}" if e.filename else ""))
            print(f"crashcheck: {e}", file=sys.stderr, flush=True)
            raise pytest.UsageError() from None
        wanted = set(config.getoption("--cc-case"))
        unknown = wanted - {c.id for c in state.load_cases()}
        if state.settings.spread and not config.getoption("keyword"):
            # under xdist the workers collect; this process judges none,
            # and every case it was to have a result for must come back
            shard = config.getoption("--cc-shard")
            k, n = parse_shard(shard) if shard else (1, 1)
            state.selected = [c.id for c in state.cases
                              if (not wanted or c.id in wanted)
                              and (not shard or casesmod.in_shard(c.id, k, n))]
        if unknown:
            sweep.remove_work(state.settings.work_link)
            outdir.release(state.settings.out, refused=True)
            # Our one-line form, and a UsageError with no message, which
            # pytest prints nothing for (it would add "ERROR: ...").
            print(f"crashcheck: --case: no such case: {sorted(unknown)[0]}",
                  file=sys.stderr, flush=True)
            raise pytest.UsageError()
    # Findings are reported by us in one line each; pytest's tracebacks of
    # a verdict assertion would only repeat them.
    if config.getoption("tbstyle", "auto") == "auto":
        config.option.tbstyle = "no"


def real_mode(fs):
    """--cc-fs: this process, and the pool's processes it forks, in a
    mount namespace of their own (realfs.private_namespace). The
    session's watchdog starts first, outside it: what it removes should
    crashcheck be killed is then seen as plain directories, whatever was
    mounted on them in here (the namespace, its mounts and their loop
    devices go with crashcheck's last process)."""
    try:
        realfs.check(fs)
        contain.session()
        realfs.private_namespace()
    except realfs.Unavailable as e:
        print(f"crashcheck: --fs {fs}: {e.reason}", file=sys.stderr, flush=True)
        raise pytest.UsageError() from None


SWEEP_CASES = ROOT / "harness" / "engine" / "sweep_cases.py"


class CaseFailed(Exception):
    """A case whose verdict is a finding no expectation covers."""


class CaseItem(pytest.Item):
    """One sweep case as a test item. Not a parametrized function: the
    fixtures, the call machinery and the per-item output capture of a
    Python test cost the pytest process more than a case costs a worker."""

    def __init__(self, *, case, **kwargs):
        super().__init__(**kwargs)
        self.case = case

    def runtest(self):
        res = self.config._crashcheck.outcome(self.case)
        if _is_worker(self.config):
            # to the controller, which may be on another machine
            self.user_properties.append((RESULT_PROPERTY, res))
            if _remote(self.config) and res.get("dir"):
                self.user_properties.append(
                    (CASE_DIR_PROPERTY, gateways.pack_case_dir(
                        self.config._crashcheck.own_out / "cases"
                        / Path(res["dir"]).name)))
        if not res["passed"]:
            raise CaseFailed(f"{res['id']}: {res['verdict']}: {res['finding']}\n"
                             f"{res['explanation']}\nreproduce: {res['reproduce']}")

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, CaseFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        return self.path, None, self.name


class CaseFile(pytest.File):
    """harness/engine/sweep_cases.py, collected as the sweep's cases: the ones
    --cc-case and --cc-shard select, in enumeration order."""

    def collect(self):
        state = getattr(self.config, "_crashcheck", None)
        if state is None:
            raise pytest.UsageError("harness/engine/sweep_cases.py needs --cc-spec "
                                    "or --cc-audit")
        cases = state.load_cases()
        wanted = set(self.config.getoption("--cc-case"))
        if wanted:
            cases = [c for c in cases if c.id in wanted]
        shard = self.config.getoption("--cc-shard")
        if shard:
            k, n = parse_shard(shard)
            cases = [c for c in cases if casesmod.in_shard(c.id, k, n)]
        for c in cases:
            # the name a parametrized test_case had: -k and the progress
            # lines read as before
            yield CaseItem.from_parent(self, name=f"test_case[{c.id}]", case=c)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    """A case's protocol: its call phase only. A case has no fixtures to
    set up or tear down, and pytest's default protocol (three phases,
    three reports, each with its hooks) costs the pytest process, which
    shares the cores with the cases, about half a millisecond a case.
    The hooks that report (logstart, logreport, logfinish) still run, so
    progress, -x, the summary and the exit status are pytest's own."""
    if not isinstance(item, CaseItem):
        return None
    ihook = item.ihook
    ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    call = pytest.CallInfo.from_call(item.runtest, when="call",
                                     reraise=(pytest.exit.Exception,
                                              KeyboardInterrupt))
    report = ihook.pytest_runtest_makereport(item=item, call=call)
    ihook.pytest_runtest_logreport(report=report)
    ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makemodule(module_path, parent):
    if module_path == SWEEP_CASES:
        return CaseFile.from_parent(parent, path=module_path)


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    """Start the pool on the cases of the items selected (after -k and
    deselection), unless only collecting or running one job."""
    config = session.config
    state = getattr(config, "_crashcheck", None)
    if state is None or _is_worker(config) or config.option.collectonly:
        return
    cases = [item.case for item in session.items
             if isinstance(item, CaseItem)]
    state.selected = [c.id for c in cases]
    show_progress(config, len(cases))
    jobs = min(state.settings.jobs, len(cases))
    if jobs > 1:
        state.start_pool(cases, jobs)


def show_progress(config, total):
    """pytest's progress at the end of each line of dots (" [ 42%]") as
    cases done out of the total and the time left at the pace so far:
    " [ 42% 2100/5000, 1m05s left]". pytest's terminal reporter has no
    hook for this: its message is replaced on the reporter object, and
    its lines made that much shorter so the longer message still fits;
    a pytest without those attributes keeps its own."""
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if tr is None or getattr(tr, "_show_progress_info", None) != "progress" \
            or not hasattr(tr, "_progress_nodeids_reported") \
            or not isinstance(getattr(tr, "_screen_width", None), int):
        return
    start = time.monotonic()
    wide = len(f" [100% {total}/{total}, 99h59m left]")

    def message():
        done = len(tr._progress_nodeids_reported)
        text = f" [{done * 100 // max(total, 1):3d}% {done}/{total}"
        if 0 < done < total:
            left = (time.monotonic() - start) * (total - done) / done
            text += ", " + _duration(left) + " left"
        return text + "]"
    tr._get_progress_information_message = message
    tr._screen_width -= wide - len(" [100%]")


def _duration(seconds):
    """'45s', '3m05s', '2h10m'."""
    s = int(seconds + 0.5)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """(xdist, in the controller) where a worker finds the cases and the
    baselines: the controller's work directory."""
    state = getattr(node.config, "_crashcheck", None)
    if state is not None:
        node.workerinput["cc_work"] = str(state.work)
        node.workerinput["cc_remote"] = bool(
            not getattr(node.gateway.spec, "popen", False)
            or os.environ.get(FORCE_REMOTE))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_setupnodes(config, specs):
    """(xdist, in the controller, before its gateways start) xdist would
    copy pytest's own packages into each gateway's directory, which is
    the user's crashcheck tree there (gateways.check_gateway): files
    crashcheck did not make, left behind, and a `pytest` package that
    shadows the installed one. The worker runs the pytest installed
    there, as a local run does; nothing is copied into the tree."""
    dsession = config.pluginmanager.getplugin("dsession")
    manager = getattr(dsession, "nodemanager", None)
    if manager is not None:
        manager.roots = []


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_newgateway(gateway):
    """(xdist, in the controller) a gateway to another machine gets the
    work directory, the baselines' traces and snapshots, at the same
    path there (a case's runs are aimed by the paths its baseline
    recorded), and an audit's inputs (.audit); a gateway on this machine
    (popen) shares them already."""
    state = _STATE.get("sweep")
    if state is None or getattr(gateway.spec, "popen", False):
        return
    if gateways.sees_ours(gateway, state.work):
        # this machine (ssh to localhost), a file system both mount, or
        # a machine an earlier gateway copied them to: they are there,
        # and are not removed through this gateway
        return
    dirs = [state.work] + sorted({Path(p).parent for p in
                                  state.config.getoption("--cc-audit")})
    for d in dirs:
        gateways.copy_to(gateway, d)
    # removed there at the end (pytest_sessionfinish): ours, made there
    state.copies.append((gateway, [str(d) for d in dirs]))


@pytest.hookimpl(optionalhook=True)
def pytest_runtest_logreport(report):
    """(the controller under xdist) a case's result, from its report,
    and its directory from a worker on another machine."""
    state = _STATE.get("sweep")
    if state is None or _is_worker(state.config):
        return
    props = dict((k, v) for k, v in
                 getattr(report, "user_properties", ()) or ())
    res = props.get(RESULT_PROPERTY)
    if not isinstance(res, dict):
        return
    if CASE_DIR_PROPERTY in props:
        out = state.settings.out
        top = gateways.unpack_case_dir(props[CASE_DIR_PROPERTY], out / "cases")
        if top is not None:
            d = out / "cases" / top
            try:
                res["dir"] = str(d.relative_to(out.parent)) + "/"
            except ValueError:
                res["dir"] = str(d) + "/"
        else:
            res["dir"] = ""
            res["dir_error"] = ("its directory could not be saved: the "
                                "worker's copy was refused")
    state.collected[res["id"]] = res


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session, exitstatus):
    """Gather every case's result, write the reports, and fail the session
    when a buggy variant went uncaught (no single case fails for that)."""
    config = session.config
    state = getattr(config, "_crashcheck", None)
    if state is None:
        return
    state.stop_pool()
    if _is_worker(config):
        return
    gateways.remove_copies(state.copies)
    state.copies = []
    sessionend.finish(session, exitstatus, state)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """The short story: one line per finding with its reproduce command,
    then where the reports are (sessionend.story)."""
    state = getattr(config, "_crashcheck", None)
    if state is None or _is_worker(config) or not hasattr(state, "results"):
        return
    sessionend.story(terminalreporter, config, state)


def pytest_unconfigure(config):
    state = getattr(config, "_crashcheck", None)
    if state is None:
        return
    if getattr(state, "sigterm", None) is not None:
        signal.signal(signal.SIGTERM, state.sigterm)
    if getattr(state, "sighup", None) is not None:
        signal.signal(signal.SIGHUP, state.sighup)
    _STATE.pop("sweep", None)
    if state._judge is not None:
        state._judge.close_servers()    # one of this process's (jobs 1)
    if state.scratch_root is not None:
        shutil.rmtree(state.scratch_root, ignore_errors=True)
    if state.own_out is not None:
        shutil.rmtree(state.own_out.parent, ignore_errors=True)
    if not _is_worker(config):
        if not state.settings.keep:
            sweep.remove_work(state.settings.work_link)
        else:
            sweep.keep_work(state.settings.work_link)
        outdir.release(state.settings.out)
    # nothing this session started runs on
    contain.shutdown()
