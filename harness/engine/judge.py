"""Executing and judging one case (Judge, one per pytest process): the
case's run in a scratch of its process (forked from a fork server where
it can be), the faults it met and whether it was aimed where planned,
and its crash states explored under each model. The Judge's other parts
are mixins of their own modules: the spec's checker (checker.py), the
real kernel's power-loss cases (realcrash.py), lite and thin runs
(partruns.py) and the case's result (caseresult.py); unjudgeable.py says
why a run cannot be judged.

A case comes from baseline.py's found_of; execute.py runs its program,
results.py writes what it leaves."""

import itertools
import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

from .. import coords, size_text
from . import (checkserver, forkserver, realfs, runner, timelimit, trace,
               tracecut)
from ..judging import causes, explorer, oracle, payload
from .cases import SPEC_DIR, TARGET, WORK, combos, contents, target_name
from .records import (FULL_DISK, call_names, data_path_hit, eintr_possible,
                      fault_fired, fault_path, fault_retried, full_disk_hits,
                      shared_maps, synced_names, touches)
from .execute import (ScratchFull, argv_of, clear_dir, empty_scratch,
                      execute_run, fresh_dir, scratch_trouble, start_tree)
from .results import excerpt_around
from .baseline import FAILED_ALONE, HELD, load_run, timeout_of
from .checker import Checking, CheckerFailed
from .caseresult import CaseResult, before, target_writes
from .partruns import PartRuns, thin_unread
from .realcrash import RealPowerLoss, point_label
from .unjudgeable import (ASTRAY_WHY, ESCAPE_WHY, FAILED_ALONE_WHY,
                          SCRATCH_WHY, aimed_astray, outlived,
                          outlived_verdict)


# The verdicts of a run that claims success before its after-exit crash
# states are judged: those states decide between them and data at risk.
QUIET = ("ok", "ignored-error")


def committed_before(judge, combo, out, faulted):
    """Whether the new content was durable before the first faulted call
    of OUT: the durable state of the crash point just before it (the
    first state the explorer builds, crash-model.md's "the durable state
    alone") holds it under every model of the sweep, so the call's failure
    could not lose it (SQLite's checkpoint writes after its commit is in
    the WAL). Judged as the contract asks of a state after success."""
    seq = next((r["seq"] for r in trace.calls(faulted) if r.get("fault")), None)
    if seq is None:
        return False
    # the records before it in the trace's order (a child's init record
    # has seq 0, and its place in the file says when it started)
    prefix = list(itertools.takewhile(
        lambda r: not (r["ev"] == "call" and r["seq"] == seq), out.records))
    if not prefix or prefix[0].get("ev") != "init" or len(prefix) == len(out.records):
        return False
    try:
        points = explorer.explore_exit(
            prefix, out.snapdir, judge.settings.models, target_name(combo.spec),
            cap=judge.settings.cap, seed=judge.settings.seed, exit_ok=True,
            blob_cache=out.blobs)
    except explorer.ExplorerError:
        return False
    old, new = contents(combo)
    for point in points.values():
        durable = point.states[0]
        if combo.spec.contract in ("check", "tree"):
            if not judge.run_checker(combo, durable, True).ok:
                return False
        elif payload.classify(durable.target, old, new) != "new":
            return False
    return True


class Judge(Checking, RealPowerLoss, PartRuns, CaseResult):
    """Executes and judges cases for one sweep; one per pytest process.
    Explored crash states of a baseline are cached: the power-loss cases
    of one combo and model share one exploration."""

    def __init__(self, specs, settings):
        self.settings = settings
        self.combos = {c.prefix: c for c in combos(specs)}
        self._explored = {}
        # combo prefix -> its baseline's call names; ("rename", prefix) ->
        # the seq of its first rename over the target
        self._calls = {}
        self._globs = {}            # combo prefix -> its baseline's globs
        self.hold = False           # keep the last case's scratch (replay)
        self._work = None
        # Where fault cases run, one scratch reused case after case (the
        # caller removes the root at the end); None: a fresh one per case.
        self.scratch_root = None
        self._scratch = self._scratch_combo = None
        self._server = self._server_key = None    # key: its backend, command line
        self._unservable = set()    # keys that cannot be served
        # _lite_key -> [lite or thin runs that stood, that did not]
        self._lite = {}
        self.last_states, self.last_out, self.last_scratch = [], None, None
        self._checks = None
        # combo prefix -> the indices of its crash points that power-loss
        # cases judge (the others need no states); a combo not here: all
        self.points = {}

    def want_points(self, cases):
        """Build crash states only at the points of CASES' power-loss
        cases (select may have left most out)."""
        self.points = {}
        for c in cases:
            if c.kind == "powerloss":
                self.points.setdefault(c.combo, set()).add(c.point)

    # ---- helpers
    @property
    def work(self):
        """settings.work, resolved once (it is a link into scratch), on
        first use: after the enumeration made it."""
        if self._work is None:
            self._work = self.settings.work
        return self._work

    def contract(self, combo):
        return combo.spec.contract

    def sector(self, combo):
        """Bytes the storage writes atomically for COMBO's power cuts:
        --sector, else the spec's own."""
        return self.settings.sector or combo.spec.sector

    def explore(self, out, model, exit_ok, target=TARGET, sector=4096,
                points=None):
        return explorer.explore(out.records, out.snapdir, model, target,
                                cap=self.settings.cap, seed=self.settings.seed,
                                exit_ok=exit_ok, blob_cache=out.blobs,
                                sector=sector, points=points)

    def baseline_points(self, combo, model):
        key = (combo.prefix, model)
        if key not in self._explored:
            out = load_run(self.work / combo.prefix)
            self._explored[key] = (out, self.explore(
                out, model, out.run.status == 0, target_name(combo.spec),
                self.sector(combo), self.points.get(combo.prefix)))
        return self._explored[key]

    def baseline_calls(self, combo, out):
        """call_names() of a combo's baseline OUT, once per process."""
        return self.from_baseline("calls", combo,
                                  lambda b: call_names(b.records), out)

    def baseline_at_risk(self, combo):
        """Whether the combo's baseline (no fault) exited 0 and yet left an
        after-exit crash state without the new content, under a model of
        the sweep; once per process."""
        return self.from_baseline("at-risk", combo,
                                  lambda b: self._at_risk(combo, b))

    def _at_risk(self, combo, out):
        if out.run.status != 0:
            return False
        exits = explorer.explore_exit(
            out.records, out.snapdir, self.settings.models,
            target_name(combo.spec), cap=self.settings.cap,
            seed=self.settings.seed, exit_ok=True, blob_cache=out.blobs)
        old, new = contents(combo)
        held = self.last_states
        try:
            for m in self.settings.models:
                states = self.states(combo, [exits[m]], only_after_exit=True)
                v = oracle.judge(oracle.Outcome(
                    contract=combo.spec.contract, old=old, new=new,
                    status=0, crash_states=states, target_name=target_name(combo.spec),
                    **self.visible(combo, out)))
                if v.verdict != "ok":
                    return True
            return False
        finally:
            self.last_states = held

    def states(self, combo, points, only_after_exit=False, label=None):
        """Crash states as the oracle wants them, with a checker verdict
        per state for checker contracts. LABEL: the crash point's words,
        instead of the explorer's."""
        out = []
        for p in points:
            if only_after_exit and p.label != "after exit":
                continue
            for st in p.states:
                # A copy: explorations are cached, and the label we give
                # names the crash point too ("after rename#1, state 3").
                st = st.copy()
                st.label = f"{label or p.label}, {st.label}"
                st.claimed = p.claimed
                if combo.spec.contract in ("check", "tree"):
                    st.check = self.run_checker(combo, st, p.claimed)
                out.append(st)
        self.last_states = out
        return out

    # ---- the case
    def execute(self, case):
        """Run and judge one case; its results.json entry. With `hold`
        set, the case's scratch directory is kept in last_scratch (and
        the crash states judged in last_states) for `crashcheck replay`.
        A checker that cannot answer makes the case a harness-error."""
        try:
            return self._execute(case)
        except CheckerFailed as e:
            return self.failed(case, e.reason, e.detail())
        except realfs.RealFsError as e:
            return self.failed(case, f"the real {self.settings.fs} "
                               f"filesystem: {e}")
        except ScratchFull as e:
            return self.result(case, self.combos[case.combo], oracle.Verdict(
                "harness-error", str(e), SCRATCH_WHY), None, states=0)

    def failed(self, case, reason, detail=""):
        """The result of a case that could not be judged: harness-error,
        with REASON (one line) and DETAIL (a traceback, a checker's
        output)."""
        combo = self.combos[case.combo]
        explanation = (
            "crashcheck could not judge this case: " + reason + ". This "
            "says nothing about the program and is never a pass.")
        if detail:
            explanation += " Details: " + " ".join(detail.split())[-1500:]
        return self.result(case, combo, oracle.Verdict(
            "harness-error", reason, explanation), None, states=0)

    def _execute(self, case):
        self.last_states, self.last_out, self.last_scratch = [], None, None
        combo = self.combos[case.combo]
        if combo.start is None:
            start_tree(combo, self.work)
        old, new = contents(combo)
        base = dict(contract=combo.spec.contract, old=old, new=new,
                    kind=case.kind,
                    plan=FULL_DISK if case.disk == "full" else case.plan,
                    require_message=combo.spec.path.parent == SPEC_DIR)
        if case.skip:
            verdict = oracle.judge(oracle.Outcome(skip=case.skip, **base))
            return self.result(case, combo, verdict, None, states=0)
        if case.error and case.error.startswith("the baseline could not"):
            return self.failed(case, case.error)
        if case.error:
            return self.baseline_failed(case, combo)
        if case.unstable:
            return self.baseline_unstable(case, combo)
        if case.kind == "powerloss" and realfs.fs_of(case.model):
            return self.real_powerloss(case, combo, base)
        if case.kind == "powerloss":
            return self.model_powerloss(case, combo, base)
        if case.kind == "baseline":
            out = load_run(self.work / combo.prefix)
            self.last_out = out
            return self.judge_run(case, combo, out, base, keep=False)
        return self.fault_case(case, combo, base)

    def baseline_failed(self, case, combo):
        """The harness-error of a case whose baseline left it CASE.error
        (its scratch, its trace cut, an escape, a failure alone, a trace
        that shows nothing), with the explanation of its kind."""
        out = load_run(self.work / combo.prefix)
        verdict = oracle.Verdict("harness-error", case.error, (
            SCRATCH_WHY if case.error.startswith("crashcheck's scratch")
            else tracecut.CUT_WHY if case.error.startswith(tracecut.PREFIX)
            else ESCAPE_WHY if case.error.startswith("escapes the scratch")
            else FAILED_ALONE_WHY if FAILED_ALONE in case.error
            else
            "The baseline run's trace does not show what the program "
            "did to its files, so no fault could reach it and no power "
            "cut could be simulated: this says nothing about the "
            "program and is never a pass. The preload sees calls made "
            "through the dynamic C library, the system-call backend "
            "(--backend=syscall) the system calls of any program, "
            "neither I/O through io_uring (faults/CALLS.md; README, "
            "What crashcheck sees)."))
        return self.result(case, combo, verdict, out, states=0)

    def baseline_unstable(self, case, combo):
        """The harness-error of a case at calls its baseline made
        otherwise when run again (CASE.unstable)."""
        out = load_run(self.work / combo.prefix)
        self.last_out = out
        verdict = oracle.Verdict("harness-error", case.unstable, (
            "The program was run twice with the same inputs and made "
            "its calls on the work directory otherwise the second "
            "time: its threads or processes race, or it reads the "
            "clock or random numbers. A fault case is aimed at a call "
            "by the file it is on and its number among that file's "
            "calls (write(target.tmp)#3); at these calls it could hit "
            "another than the one planned, so none is aimed there, "
            "and this is never a pass. The other cases stand: each "
            "checks that its fault hit the call it was aimed at."))
        return self.result(case, combo, verdict, out, states=0)

    def model_powerloss(self, case, combo, base):
        """A power-loss case under a crash model: its crash point's
        states of the combo's baseline, explored once per process."""
        out, points = self.baseline_points(combo, case.model)
        self.last_out = out
        if outlived(out.run):
            # the trace may lack the late writes of what outlived it
            return self.result(case, combo, outlived_verdict(out.run),
                               out, states=0, keep=False)
        point = points[case.point]
        st = self.states(combo, [point], label=point_label(case))
        renamed, removed = self.first_rename(combo, out)
        verdict = oracle.judge(oracle.Outcome(
            status=out.run.status, crash_states=st, **self.visible(combo, out),
            target_name=target_name(combo.spec),
            target_renamed=renamed is not None and renamed <= point.seq,
            target_removed=removed is not None and removed <= point.seq,
            calls=self.baseline_calls(combo, out),
            order=causes.History(out.records, str(out.workdir), point.seq),
            synced_after=frozenset(
                name for seq, name in self.baseline_sync_seqs(combo, out)
                if seq > point.seq), **base))
        return self.result(case, combo, verdict, out, states=len(st),
                           keep=False, upto=point.seq)

    def fault_case(self, case, combo, base):
        """A fault case: its run in a scratch of this process, lite or
        thin first where it may, whole again where that cannot stand."""
        scratch, reuse = self.scratch_for(combo, case)
        ok = False
        try:
            start = self.lite_from(case, combo)
            full = self.thin_window(case, combo) if start is None else None
            try:
                out = self.run_case(case, combo, scratch, reuse, start, full)
                self.last_out = out
                res = self.judge_recorded(case, combo, out, base)
                if start is not None or full is not None:
                    self.lite_count(case, combo, res is not None)
                if res is None:
                    # the lite or thin run cannot stand for a whole one:
                    # once more, every call recorded
                    out = self.run_case(case, combo, scratch, True, None, None)
                    self.last_out = out
                    res = self.judge_recorded(case, combo, out, base)
            except ScratchFull as e:
                # its scratch goes (ok stays False): room for the next
                return self.result(case, combo, oracle.Verdict(
                    "harness-error", str(e), SCRATCH_WHY), None, states=0)
            ok = True
            return res
        finally:
            if self.hold:
                self.last_scratch = scratch
            elif not ok or scratch != self._scratch:
                shutil.rmtree(scratch, ignore_errors=True)
                if scratch == self._scratch:
                    self._scratch = self._scratch_combo = None
                    self.close_server()     # it started in what is gone

    def judge_recorded(self, case, combo, out, base):
        """judge_run, but a run the library stopped for crashcheck's own
        scratch (scratch_trouble) is the harness's harness-error, and a
        file past the scratch limit is never read (ScratchFull)."""
        trouble = scratch_trouble(out, combo)
        if trouble:
            return self.result(case, combo, oracle.Verdict(
                "harness-error", trouble, SCRATCH_WHY), out, states=0,
                keep=True)
        trouble = tracecut.trouble(out)
        if trouble:
            return self.result(case, combo, oracle.Verdict(
                "harness-error", trouble, tracecut.CUT_WHY), out, states=0,
                keep=True)
        return self.judge_run(case, combo, out, base, keep=True)

    def case_seconds(self, combo):
        """A fault case's time limit: timelimit.MULTIPLE times its
        baseline's duration, never below timeout_of (the floor); once
        per process."""
        key = ("limit", combo.prefix)
        if key not in self._calls:
            floor = timeout_of(combo, self.settings)
            try:
                with open(self.work / combo.prefix / "run.json") as fh:
                    took = float(json.load(fh)["duration"])
            except (OSError, ValueError, KeyError, TypeError):
                took = 0.0
            self._calls[key] = max(floor, timelimit.MULTIPLE * took)
        return self._calls[key]

    def run_case(self, case, combo, scratch, reuse, trace_from, trace_full):
        """Execute a fault case's run in SCRATCH, forked from the combo's
        server where it has one (execute_run)."""
        server = self.server_for(combo, scratch, case.backend)
        try:
            try:
                return execute_run(combo, case.plan, scratch,
                                   self.case_seconds(combo),
                                   reuse_input=reuse, server=server,
                                   trace_from=trace_from,
                                   trace_full=trace_full,
                                   settings=self.settings,
                                   backend=case.backend,
                                   full_disk=case.disk == "full")
            except forkserver.ServerStale:
                # its view is not this run's (a combo's scratch renamed
                # for the next, the view dropped): nothing ran, and a
                # new server in the run's view serves it
                self.close_server()
                return execute_run(combo, case.plan, scratch,
                                   self.case_seconds(combo),
                                   reuse_input=True,
                                   server=self.server_for(combo, scratch,
                                                          case.backend),
                                   trace_from=trace_from,
                                   trace_full=trace_full,
                                   settings=self.settings,
                                   backend=case.backend,
                                   full_disk=case.disk == "full")
        except forkserver.ServerUnavailable:
            # gone under this run: it runs again, exec'd, and so do the
            # next ones of its command line
            self.close_server(refuse=True)
            return execute_run(combo, case.plan, scratch,
                               self.case_seconds(combo),
                               reuse_input=True, trace_from=trace_from,
                               trace_full=trace_full, settings=self.settings,
                               backend=case.backend)

    def scratch_for(self, combo, case=None):
        """(scratch directory, reuse_input) for a fault case: ROOT/<the
        combo's prefix>, under a root whose path is as long as the work
        directory's (scratch_root and this process's directory in it; a
        held case's HELD beside the work directory), so the program
        works in a directory as long as its baseline's: one that writes
        its working directory into a file (logrotate) writes as many
        bytes as it did there. One scratch is
        used case after case under scratch_root: a run of the combo
        before left the input, and the rest is emptied (runs are short;
        making and removing the tree cost as much as a run). For another
        combo it is emptied whole and renamed, but stays the same
        directory, WORK included: a fork server of the same command line
        started there. A held case (replay), a spec's disk=full case: a
        fresh directory, removed after; with no scratch_root, one of its
        own."""
        if self.hold:
            root = self.work.parent / HELD
            root.mkdir(exist_ok=True)
            return fresh_dir(root / combo.prefix), False
        if self.scratch_root is None:
            return runner.make_scratch(), False
        full = case is not None and case.disk == "full"
        if not full and self._scratch_combo == combo.prefix and \
                self._scratch is not None and self._scratch.is_dir():
            # the next case of the combo (most cases): as below, without
            # making the path and its directory again
            return self._scratch, True
        # the pool's processes share the root: a directory each, its pid
        # (at most 7 digits: Linux's pid_max)
        mine = Path(self.scratch_root) / f"{os.getpid():07d}"
        mine.mkdir(exist_ok=True)
        mine = mine / combo.prefix
        if full:
            if self._scratch == mine:
                # the combo's reused scratch is where this case goes: it
                # starts afresh, and so does the next case of the combo
                self.close_server()
                self._scratch = self._scratch_combo = None
            # under the root too: removed with it should this process die
            return fresh_dir(mine), False
        if self._scratch is not None and self._scratch.is_dir():
            if self._scratch_combo == combo.prefix:
                return self._scratch, True
            try:
                empty_scratch(self._scratch)
                if self._scratch != mine:
                    os.rename(self._scratch, mine)
                    self._scratch = mine
                self._scratch_combo = combo.prefix
                return self._scratch, False
            except OSError:
                shutil.rmtree(self._scratch, ignore_errors=True)
                self.close_server()     # it started in what is gone
        self._scratch = fresh_dir(mine)
        self._scratch_combo = combo.prefix
        return self._scratch, False

    def server_for(self, combo, scratch, backend="preload"):
        """The fork server of the combo's command line and backend in this
        process (forkserver.ForkServer), started on its first case here and
        kept for the next combos of the same command line (a spec's
        sizes), started again if it ended after a run; None where the
        case is exec'd: --exec-each, a held case (replay runs the real
        thing), a FULL_DISK case, a fresh scratch per case, or a program
        that cannot be served."""
        # scratch_for gives the others (held, full disk) a fresh scratch
        if not self.settings.fork_server or scratch != self._scratch:
            return None
        key = (backend, *argv_of(combo))
        if self._server_key == key and (
                self._server is None or (not self._server.closed and
                                         self._server.confined_to([scratch]))):
            return self._server
        self.close_server()
        self._server_key = key
        if key in self._unservable:
            return None
        # It starts where its runs work, as an exec'd run does: a library
        # may note the directory it was loaded in.
        work = Path(scratch) / WORK
        work.mkdir(exist_ok=True)
        try:
            # Confined to this process's directory of the scratch root,
            # which holds its one scratch (scratch_for), renamed from
            # combo to combo: the runs of the next combos of the same
            # command line are served in the same view (a server's start
            # costs as much as a dozen runs). Not in a view of its own
            # under --fs: each run's filesystem is mounted on its work
            # directory after the server started, where a view made then
            # would not hold it.
            self._server = forkserver.ForkServer(
                key[1:], home=work, timeout=timeout_of(combo, self.settings),
                backend=backend,
                confine=[Path(scratch).parent] if self.settings.fs is None
                else None)
        except (forkserver.ServerUnavailable, runner.SetupError,
                subprocess.TimeoutExpired):
            # exec'd instead, where a SetupError is the case's to report.
            # A program our library never reached ran once, as itself,
            # in the case's directory: the case lays it out afresh.
            self._unservable.add(key)
            self._server = None
            clear_dir(scratch)
        return self._server

    def close_servers(self):
        """End this process's fork server and checker servers (the end
        of a sweep, or of a pool's worker)."""
        self.close_server()
        checkserver.close_all()

    def close_server(self, refuse=False):
        """Stop this process's fork server; refuse: the next cases of its
        command line are exec'd."""
        if refuse and self._server_key is not None:
            self._unservable.add(self._server_key)
        if self._server is not None:
            self._server.close()
        self._server = self._server_key = None

    def visible(self, combo, out):
        name = target_name(combo.spec)
        path = out.workdir / name if name is not None else None
        target = None
        if path is not None and path.is_file():
            # a run without snapshots (lite) is not held to the limit by
            # the library: the harness reads no file past it either
            size = path.stat().st_size
            limit = self.settings.scratch_limit
            if limit is not None and size > limit:
                raise ScratchFull(
                    f"crashcheck's scratch limit: '{path.name}' is "
                    f"{size_text(size)}, more than the {size_text(limit)} a "
                    "run may take (--scratch-limit)")
            target = path.read_bytes()
        vis = {"target": target}
        if combo.spec.contract in ("check", "tree"):
            vis["check"] = self.check(combo, out.workdir, "new"
                                      if out.run.status == 0 else "old-or-new")
        return vis

    def judge_run(self, case, combo, out, base, keep):
        """The case's result from its run OUT; None for a lite run that
        cannot stand for a whole one (Judge.lite_from): a finding (its
        directory and excerpt show the whole trace), a run that claims
        success (its retries and after-exit states are read from the
        whole trace), or one whose fault did not fire where the baseline
        made the faulted call (its calls before it were not the
        baseline's; a fault before the trace's start is such a one). A
        lite run that timed out stands: it would only time out again.
        Likewise a thin run (Judge.thin_window) that cannot stand for a
        whole one: a finding (but for one that timed out with no thin
        line in its excerpt), an after-exit replay that would read a thin
        line, or a write that its whole run may have recorded otherwise
        (thin_unread)."""
        run = out.run
        # The faulted calls and the crashes say whether the fault fired,
        # where, and whether we killed the program; the rest of a trace is
        # read only for a run that claims success (a retried call, its
        # after-exit crash states).
        faulted = out.faulted()
        full = case.disk == "full"
        if full:
            # no rule fires on a real full disk: the calls it failed are
            # the faulted ones, and a store it killed the program for
            faulted = full_disk_hits(out)
        lite = out.trace_from is not None and not run.timed_out
        has_thin = out.has_thin
        thin = has_thin and not run.timed_out
        if not self.part_stands(case, out, faulted, lite, has_thin):
            return None
        if outlived(run, faulted):
            return self.result(case, combo, outlived_verdict(run), out,
                               states=0, keep=keep)
        facts = self.run_facts(case, combo, out, faulted, base)
        verdict = oracle.judge(oracle.Outcome(**facts))
        if (lite or thin) and verdict.verdict not in ("ok", "skipped"):
            return None
        if verdict.cause is not None and verdict.cause.change == (
                "overwrite", target_name(combo.spec)):
            # in place, a temp file renamed over it too early, or the
            # old one moved away first?
            facts["target_renamed"], facts["target_removed"] = \
                self.target_history(case, combo, out)
            verdict = oracle.judge(oracle.Outcome(**facts))
        astray = aimed_astray(case, faulted)
        if astray:
            return self.result(case, combo, oracle.Verdict(
                "harness-error", astray, ASTRAY_WHY), out, states=0,
                keep=keep)
        judged, model, under = 0, None, None
        if verdict.verdict in QUIET and run.status == 0:
            got = self.judge_after_exit(case, combo, out, faulted, facts,
                                        verdict, thin)
            if got is None:
                return None
            verdict, judged, model, under = got
        elif verdict.ok and run.status not in (0, None) and \
                self.failure_left_pending(case, combo, out, faulted):
            # A program that reported its failure must still leave old or
            # new in every state a power cut after its exit can leave
            # (crash-model.md): a file whose fsync failed renamed over the
            # target, then exit 1, is torn.
            if lite or thin:
                return None
            verdict, judged, model = self.judge_reported_failure(
                case, combo, out, facts, verdict)
        return self.result(case, combo, verdict, out, states=judged,
                           model=model, keep=keep, under=under)

    def part_stands(self, case, out, faulted, lite, has_thin):
        """Whether a lite or thin run (LITE, HAS_THIN) may stand for a
        whole one before it is judged (judge_run): a lite one only where
        the program made its calls as its baseline did, a thin one that
        timed out but for a thin line in its excerpt."""
        run = out.run
        # A lite run stands only where the program made its calls as its
        # baseline did, the faulted one at the baseline's seq for it
        # (Case.at), where its trace starts
        if lite and (run.status == 0 or not faulted
                     or faulted[0]["seq"] != case.at):
            # it runs again whole whatever its verdict: not judged (a
            # checker contract would run its checker for nothing)
            return False
        # A thin run that timed out stands with its finding, as a lite one
        # does, but for a thin line in its excerpt (a whole run shows
        # that write's offset)
        if has_thin and run.timed_out and any(
                r.get("thin") for r in excerpt_around(out, case)):
            return False
        return True

    def run_facts(self, case, combo, out, faulted, base):
        """The oracle's facts (oracle.Outcome's fields) of the case's run
        OUT, FAULTED its faulted calls and BASE what its baseline says;
        sets out.deciding, the faulted call on the data path."""
        run = out.run
        full = case.disk == "full"
        # a hard fault in a run that claims success: the oracle asks
        # whether it hit the data path, and whether the program retried
        hard_ok = run.status == 0 and case.kind in oracle.HARD
        # the call that decides: the first one on the data path
        out.deciding = data_path_hit(faulted, out) if hard_ok else None
        return dict(
            fault_fired=(bool(faulted) or run.signal == signal.SIGBUS) if full
            else fault_fired(faulted, case.plan) if case.plan else False,
            fault_on_data_path=out.deciding is not None,
            fault_path=fault_path(faulted, out, out.deciding),
            # named as the case ids name calls: by file, "close(target.tmp)#1"
            fault_call=coords.Coords(out.records, str(out.workdir))[out.deciding]
            if out.deciding is not None else None,
            fault_retried=fault_retried(faulted, out.calls_after,
                                        shared_maps(out.records))
            if hard_ok else False,
            status=run.status, signal=run.signal, timed_out=run.timed_out,
            # SIGKILL after the library's crash record is the planned crash;
            # any other death by signal is the program's own.
            harness_killed=run.signal == 9 and any(
                r["ev"] == "crash" for r in faulted),
            # the floor of its limit: the case's own is a multiple of a
            # measured duration, which would make its words differ from
            # run to run
            timeout=timeout_of(combo, self.settings),
            limit_state=run.extra.get("limit_state", ""),
            eintr_possible=eintr_possible(faulted, out.workdir),
            target_name=target_name(combo.spec),
            stderr=run.stderr_text(), **self.visible(combo, out), **base)

    def judge_after_exit(self, case, combo, out, faulted, facts, verdict,
                         thin):
        """(verdict, states judged, model, models it holds under) of a run
        that claims success (VERDICT so far), judged also at its
        after-exit crash point under each model: that is where a retried
        fsync or a missing directory fsync shows, and whether an error the
        program did not check cost data (unreported-error) or not
        (ignored-error). None where a THIN run cannot stand for a whole
        one."""
        records = out.for_exit()
        if thin and not thin_unread(records):
            return None
        # one replay of the trace gives every model's after-exit point
        try:
            exits = explorer.explore_exit(
                records, out.snapdir, self.settings.models,
                target_name(combo.spec), cap=self.settings.cap,
                seed=self.settings.seed, exit_ok=True,
                blob_cache=out.blobs, moot_full=not thin,
                sector=self.sector(combo))
        except explorer.ThinRecord:
            if not thin:
                raise
            return None
        facts["calls"] = call_names(records)
        facts["order"] = causes.History(records, str(out.workdir))
        if case.kind in oracle.HARD:
            facts["skipped_syncs"] = self.skipped_syncs(case, combo, out,
                                                        faulted)
        verdict, states, judged, model, found = self.exit_verdicts(
            combo, exits, facts, verdict)
        under = [m for m in self.settings.models
                 if found.get(m) == verdict.verdict]
        if thin and not verdict.ok:
            return None
        verdict = self.rejudge_quiet(case, combo, out, faulted, facts,
                                     verdict, states)
        return verdict, judged, model, under

    def exit_verdicts(self, combo, exits, facts, verdict):
        """(verdict, states, judged, model, found) at the after-exit crash
        points EXITS (model -> point): the first model that finds more than
        VERDICT decides (MODEL; else the first model's verdict stands); the
        others are judged too, to name every model the verdict holds under
        (FOUND: model -> its verdict). JUDGED counts the states judged."""
        states, judged, model = [], 0, None
        first = None
        found = {}
        for m in self.settings.models:
            states = self.states(combo, [exits[m]], only_after_exit=True)
            judged += len(states)
            verdict = oracle.judge(oracle.Outcome(crash_states=states, **facts))
            found[m] = verdict.verdict
            if first is None:
                first = (verdict, states)
            if verdict.verdict not in QUIET:
                model = m
                break
        else:
            if first is not None:
                verdict, states = first
        if model is not None:
            held = self.last_states
            for m in self.settings.models:
                if m not in found:
                    found[m] = oracle.judge(oracle.Outcome(
                        crash_states=self.states(
                            combo, [exits[m]], only_after_exit=True),
                        **facts)).verdict
            self.last_states = held
        return verdict, states, judged, model, found

    def rejudge_quiet(self, case, combo, out, faulted, facts, verdict,
                      states):
        """VERDICT of a run that claims success judged again for what its
        fault did not cause: a loss its baseline shares, new content
        durable before the faulted call, an overwrite's history."""
        if verdict.state and (verdict.verdict == "unreported-error" or
                              case.kind == "eintr" or
                              oracle.blames_a_skipped_sync(verdict)) and \
                self.baseline_at_risk(combo):
            # the baseline loses the data the same way: that defect,
            # not the fault's (nor a sync the fault made it skip)
            facts["known_at_risk"] = True
            verdict = oracle.judge(oracle.Outcome(crash_states=states, **facts))
        if verdict.verdict == "ignored-error" and committed_before(
                self, combo, out, faulted):
            # the new content was durable before the faulted call:
            # its failure could not lose it, off the data path
            facts["fault_on_data_path"] = False
            verdict = oracle.judge(oracle.Outcome(crash_states=states, **facts))
        return self.rejudge_overwrite(case, combo, out, facts, verdict,
                                      states)

    def judge_reported_failure(self, case, combo, out, facts, verdict):
        """(verdict, states judged, model) of a run that reported its
        failure (VERDICT so far), at its after-exit crash point under each
        model: the first model whose states are not old or new decides."""
        records = out.records
        exits = explorer.explore_exit(
            records, out.snapdir, self.settings.models,
            target_name(combo.spec), cap=self.settings.cap,
            seed=self.settings.seed, exit_ok=False, blob_cache=out.blobs,
            sector=self.sector(combo))
        facts["calls"] = call_names(records)
        facts["order"] = causes.History(records, str(out.workdir))
        judged, model, states = 0, None, []
        for m in self.settings.models:
            states = self.states(combo, [exits[m]], only_after_exit=True)
            judged += len(states)
            verdict = oracle.judge(oracle.Outcome(crash_states=states, **facts))
            if not verdict.ok:
                model = m
                break
        verdict = self.rejudge_overwrite(case, combo, out, facts, verdict,
                                         states)
        return verdict, judged, model

    def rejudge_overwrite(self, case, combo, out, facts, verdict, states):
        """VERDICT again, when its cause is the target written in place
        (a crash state with nothing lost, a torn state without an
        account): with whether the program renamed a file over the
        target or removed it first, which decide the advice."""
        if verdict.cause is None or verdict.cause.change != (
                "overwrite", target_name(combo.spec)):
            return verdict
        facts["target_renamed"], facts["target_removed"] = \
            self.target_history(case, combo, out)
        return oracle.judge(oracle.Outcome(crash_states=states, **facts))

    def failure_left_pending(self, case, combo, out, faulted):
        """Whether a run that exited non-zero may have left a state after
        its exit that no crash state before its fault shows: under an
        atomic contract, it changed the target (renamed a file over it,
        removed it, wrote it); under a checker, it changed a name or a
        file after its fault fired. Under in-place any content is
        acceptable after a reported failure. The explored states are
        built from the whole trace: a lite run is run again."""
        contract = combo.spec.contract
        if contract == "in-place" or case.kind not in oracle.HARD:
            return False
        if contract in ("check", "tree"):
            first = next((r["seq"] for r in trace.calls(faulted)
                          if r.get("fault")), None)
            return first is not None and any(
                r["seq"] > first and r.get("ret", -1) >= 0
                and (causes.changes_data(r) or r["call"] in causes.RENAME_CALLS
                     or r["call"] in causes.UNLINK_CALLS
                     or r["call"] in causes.LINK_CALLS)
                and touches(r, out.workdir)
                for r in trace.calls(out.records))
        renamed, removed = self.target_history(case, combo, out)
        return renamed or removed or self.target_written(case, combo, out)

    def target_written(self, case, combo, out):
        """Whether the run wrote into the target's own inode (or truncated
        it): in OUT's trace, and for a lite run in its baseline's before
        the faulted call."""
        name = target_name(combo.spec)
        if name is None:
            return False
        if target_writes(out.records, str(out.workdir), name) is not None:
            return True
        return out.trace_from is not None and before(self.from_baseline(
            "target-writes", combo,
            lambda b: target_writes(b.records, str(b.workdir), name)), case.at)

    def baseline_sync_seqs(self, combo, out=None):
        """(seq, name) of every successful sync in the combo's baseline
        (OUT, when it is loaded already; synced_names, call by call),
        once per process."""
        return self.from_baseline(
            "sync-seqs", combo, lambda b: [
                (r["seq"], name) for r in trace.calls(b.records)
                for name in synced_names([r], b.workdir)], out)

    def skipped_syncs(self, case, combo, out, faulted):
        """The names the combo's baseline synced after the call CASE
        faults (Case.at; a failed sync is not one it skipped) that OUT
        did not sync after its fault fired:
        the syncs the fault made the program skip (SQLite's directory
        fsync, skipped when the directory's open fails)."""
        fired = next((r["seq"] for r in trace.calls(faulted)
                      if r.get("fault")), None)
        if fired is None or case.at is None:
            return frozenset()
        want = {name for seq, name in self.baseline_sync_seqs(combo)
                if seq > case.at}
        return frozenset(want - synced_names(out.records, out.workdir,
                                             after=fired))


