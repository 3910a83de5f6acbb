"""Executing and judging one case (Judge, one per pytest process): the
case's run in a scratch of its process (forked from a fork server where
it can be), the faults it met and whether it was aimed where planned,
its crash states explored under each model and checked (the spec's
checker, with its verdicts cached on disk: CheckCache), and its result
(Judge.result) with its cause and case directory.

A case comes from baseline.py's found_of; execute.py runs its program,
results.py writes what it leaves."""

import contextlib
import fcntl
import hashlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from .. import coords, size_text
from . import (checkserver, realfs, runner, statedir, timelimit, trace,
               tracecut)
from ..judging import causes, explorer, oracle, payload, properties, symbols
from .cases import (BIN, INPUT, NEW, SPEC_DIR, TARGET, WORK, combos, contents,
                    target_name)
from .records import (FULL_DISK, call_names, crash_seq, data_path_hit,
                      eintr_possible, fault_fired, fault_path, fault_retried,
                      full_disk_hits, plan_rules, records_upto, shared_maps,
                      synced_names, touches)
from .execute import (ScratchFull, argv_of, clear_dir, copy_start,
                      empty_scratch, execute_run, fresh_dir, scratch_trouble,
                      start_tree, tree_digest)
from .results import (excerpt_around, expect_dict, kept_ends, on_fs, reproduce,
                      save_case_dir, with_rerun)
from .baseline import FAILED_ALONE, HELD, load_globs, load_run, timeout_of

ESCAPE_WHY = (
    "Each case runs in a scratch directory of its own, so that what one run "
    "leaves cannot decide another's verdict. The recorded run left a "
    "symbolic link there to a file outside it: every case would write "
    "through it to that one file, the state a case is judged on would "
    "hold what other cases wrote, and crash states could not hold it at "
    "all. Nothing is judged, and this is never a pass: point the program "
    "at a file inside its directory (its target, {target}), or give the "
    "file outside as its content (--old).")

FAILED_ALONE_WHY = (
    "The program failed with no fault injected and wrote nothing in its "
    "work directory: what its stderr says above is most likely the reason "
    "(a wrong path or option on its command line, a file it needs that "
    "is not in its directory). Nothing of it can be tested until that run "
    "succeeds: this says nothing about the program and is never a pass.")

SCRATCH_WHY = (
    "crashcheck could not record this run within its scratch: the space "
    "it had left, or the limit it sets itself (--scratch-limit, by default "
    "a share of the free space), was too small for the program's files and "
    "the snapshots of them. The run was stopped and says nothing about the "
    "program: this is the harness's failure, never a pass. Give it more "
    "room (--scratch-limit SIZE, --scratch DIR on a larger file system).")


def point_label(case):
    """A power-loss case's crash point in words, with the coordinate its
    id gives: 'after write(target.tmp)#3', 'before first call'."""
    return {"start": "before first call", "exit": "after exit"}.get(
        case.call, f"after {case.call}")


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


class Judge:
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

    @property
    def checks(self):
        """The sweep's CheckCache, in its work directory (made on first
        use: after the enumeration made the directory)."""
        if self._checks is None:
            self._checks = CheckCache(self.work / CHECKS_DIR)
        return self._checks

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
        """call_names() of a combo's baseline, once per process."""
        calls = self._calls.get(combo.prefix)
        if calls is None:
            calls = self._calls[combo.prefix] = call_names(out.records)
        return calls

    def baseline_at_risk(self, combo):
        """Whether the combo's baseline (no fault) exited 0 and yet left an
        after-exit crash state without the new content, under a model of
        the sweep; once per process."""
        key = ("at-risk", combo.prefix)
        if key not in self._calls:
            out = load_run(self.work / combo.prefix)
            risk = False
            if out.run.status == 0:
                exits = explorer.explore_exit(
                    out.records, out.snapdir, self.settings.models,
                    target_name(combo.spec), cap=self.settings.cap,
                    seed=self.settings.seed, exit_ok=True, blob_cache=out.blobs)
                old, new = contents(combo)
                held = self.last_states
                for m in self.settings.models:
                    states = self.states(combo, [exits[m]], only_after_exit=True)
                    v = oracle.judge(oracle.Outcome(
                        contract=combo.spec.contract, old=old, new=new,
                        status=0, crash_states=states, target_name=target_name(combo.spec),
                        **self.visible(combo, out)))
                    if v.verdict != "ok":
                        risk = True
                        break
                self.last_states = held
            self._calls[key] = risk
        return self._calls[key]

    def first_rename(self, combo, out):
        """(seq of the first rename over the target, seq of the first
        rename or unlink of the target's own entry) in a combo's baseline
        OUT, each None when there is none; once per process."""
        key = ("rename", combo.prefix)
        if key not in self._calls:
            name, base = target_name(combo.spec), str(out.workdir)
            over = away = None
            for r in trace.calls(out.records):
                call = r.get("call")
                if r.get("ret", -1) < 0:
                    continue
                if call in causes.RENAME_CALLS and over is None and \
                        causes.named(r.get("path2"), name, base):
                    over = r["seq"]
                if (call in causes.RENAME_CALLS or call in causes.UNLINK_CALLS) \
                        and away is None and causes.named(r.get("path"), name, base):
                    away = r["seq"]
            self._calls[key] = (over, away)
        return self._calls[key]

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

    def run_checker(self, combo, state, claimed):
        """The checker's answer for a crash state, run once per distinct
        state (CheckCache): the same files give the same answer, at any
        crash point, in any case of the combo."""
        expect = "new" if claimed else "old-or-new"
        key = ("s", state.digest())
        hit = self.checks.get(combo, key, expect)
        if hit is not None:
            return hit
        with self.checks.claim(combo, key, expect):
            # judged by another process while this one waited
            hit = self.checks.get(combo, key, expect)
            if hit is not None:
                return hit
            server = self.check_server(combo)
            if server is None and self.scratch_root is not None:
                # one directory per process, changed state to state (a
                # server's states each get a new one: a server keeps
                # running, and must not meet a directory it has seen)
                res = self.check(combo, statedir.in_root(
                    self.scratch_root).lay(state), expect, cache=False)
            elif server is None:
                scratch = self.state_dir()
                try:
                    explorer.layout(state, scratch)
                    res = self.check(combo, scratch, expect, cache=False)
                finally:
                    shutil.rmtree(scratch, ignore_errors=True)
            else:
                res = self.served_check(
                    combo, server, state.digest(), expect,
                    lambda d: explorer.layout(state, d))
            self.checks.put(combo, key, expect, res)
        return res

    def state_dir(self, server=None):
        """A new directory to lay a crash state out in: in the server's
        own directory (the one its confinement lets it change)."""
        if server is not None:
            return Path(tempfile.mkdtemp(prefix="state-", dir=server.states))
        if self.scratch_root is not None:
            return Path(tempfile.mkdtemp(prefix="state-",
                                         dir=self.scratch_root))
        return runner.make_scratch("crashcheck-state-")

    def check_server(self, combo):
        """This process's checkserver.CheckServer of the combo's spec, or
        None (the spec has none)."""
        spec = combo.spec
        if spec.check_server is None:
            return None
        argv = spec.check_server_argv(bin=BIN, target=target_name(spec),
                                      new=f"../{INPUT}/{NEW}",
                                      strategy=combo.strategy)
        env = dict(os.environ)
        for name in (*runner.OUR_VARS, "CRASHCHECK_EXPECT"):
            env.pop(name, None)
        return checkserver.server(argv, env)

    def served_check(self, combo, server, digest, expect, lay):
        """The check_server's answer for the tree LAY(dir) lays out in an
        empty directory (a crash state, a copy of a run's directory),
        whose content DIGEST (hex) names. The first SERVER_AUDIT_FIRST
        trees a server answers about, and one in SERVER_AUDIT_EVERY
        after them (by content, so the same ones in every run), are
        asked of check too,
        laid out again in a directory of their own: a server whose answer
        differs (another status, another first line: it kept something
        from an earlier state) cannot be trusted with the case."""
        limit = timeout_of(combo, self.settings)
        directory = self.state_dir(server)
        try:
            lay(directory)
            status, output = server.ask(directory, expect, limit)
        except checkserver.ServerFailed as e:
            raise CheckerFailed(e.reason, server.argv, e.output) from None
        finally:
            shutil.rmtree(directory, ignore_errors=True)
        if server.audits < SERVER_AUDIT_FIRST or \
                int(digest[:8], 16) % SERVER_AUDIT_EVERY == 0:
            server.audits += 1
            again_dir = self.state_dir()
            try:
                lay(again_dir)
                again = self.check(combo, again_dir, expect, cache=False)
            finally:
                shutil.rmtree(again_dir, ignore_errors=True)
            if again.status != status or \
                    _first_line(again.output) != _first_line(output):
                raise CheckerFailed(
                    "check_server answered otherwise than check on the same "
                    f"state: the server {_answer_text(status, output)}, "
                    f"check {_answer_text(again.status, again.output)}",
                    server.argv, "")
        return oracle.CheckResult(status=status, output=output, expect=expect)

    def check(self, combo, directory, expect, cache=True):
        """The checker's answer for DIRECTORY (a run's work directory),
        with CRASHCHECK_EXPECT=EXPECT; once per distinct content of the
        directory (tree_digest), unless not cache (a crash state's own
        directory). One checker at a time in a run's directory: the
        power-loss cases of one combo, each under its model in its own
        worker, check the baseline's, and a checker that locks its
        database (LevelDB's LOCK) fails beside another. The lock file
        lies beside the directory, in the run's scratch."""
        if not cache:
            return self._check(combo, directory, expect, cache)
        with open(Path(directory).parent / (Path(directory).name
                                            + ".check-lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            return self._check(combo, directory, expect, cache)

    def _check(self, combo, directory, expect, cache):
        key = None
        if cache:
            key = ("d", tree_digest(directory))
            hit = self.checks.get(combo, key, expect)
            if hit is not None:
                return hit
            server = self.check_server(combo)
            if server is not None:
                # a copy of the run's directory, where the server may
                # change it (a tree shutil cannot copy, a fifo: check)
                try:
                    res = self.served_check(
                        combo, server, key[1], expect,
                        lambda d: copy_start(directory, d))
                except (shutil.Error, OSError):
                    res = None
                if res is not None:
                    self.checks.put(combo, key, expect, res)
                    return res
        argv = combo.spec.check_argv(bin=BIN,
                                     target=target_name(combo.spec),
                                     new=f"../{INPUT}/{NEW}",
                                     strategy=combo.strategy)
        env = dict(os.environ, CRASHCHECK_EXPECT=expect)
        limit = timeout_of(combo, self.settings)
        for name in runner.OUR_VARS:
            env.pop(name, None)
        # confined like the program: what it writes outside the state's
        # directory is thrown away
        run = runner.run(argv, cwd=directory, env=env, preload=False,
                         timeout=limit, confine=[directory])
        text = (run.stdout + run.stderr).decode("utf-8", "replace")
        # A checker that cannot answer says nothing about the state: the
        # case cannot be judged (never torn or lost-update for it), and
        # no answer is kept
        if run.timed_out:
            raise CheckerFailed(f"checker timed out after {limit:g} s",
                                argv, text)
        if run.signal is not None:
            raise CheckerFailed("checker was killed by "
                                + _signal_name(run.signal), argv, text)
        if run.outlived:
            raise CheckerFailed("a process the checker started outlived it: "
                                + ", ".join(run.outlived), argv, text)
        res = oracle.CheckResult(status=run.status, output=text, expect=expect)
        if key is not None:
            self.checks.put(combo, key, expect, res)
        return res

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
        if case.unstable:
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
        if case.kind == "powerloss" and realfs.fs_of(case.model):
            return self.real_powerloss(case, combo, base)
        if case.kind == "powerloss":
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
        if case.kind == "baseline":
            out = load_run(self.work / combo.prefix)
            self.last_out = out
            return self.judge_run(case, combo, out, base, keep=False)
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

    def real_powerloss(self, case, combo, base):
        """A power-loss case judged on the real kernel (--fs): the program
        runs on a fresh copy of the combo's image, killed right after the
        call of its crash point (the plan language's crash-after, as a
        crash case is), or not run at all for the point before its first
        call, or left to exit for the one after; the filesystem is then
        cut off from its disk, and mounted again (realfs.Disk.crash). The
        tree it holds is judged as a model's crash state is. Twice: as
        the kernel left it, and after another file of the filesystem was
        fsynced (REAL_PUSHES): ext4's and XFS's one journal commits then,
        which is how another process's fsync shows what reached the disk
        in which order."""
        fs = realfs.fs_of(case.model)
        baseline = load_run(self.work / combo.prefix)
        self.last_out = baseline
        if outlived(baseline.run):
            return self.result(case, combo, outlived_verdict(baseline.run),
                               baseline, states=0, keep=False)
        if self.settings.fs != fs:
            return self.failed(case, f"a case of the real {fs} kernel, in a "
                               f"sweep on {self.settings.fs or 'no real filesystem'}"
                               f" (--fs {fs})")
        plan = None if case.call == "start" else "" if case.call == "exit" \
            else f"{case.call}=crash-after"
        # before the first call nothing is pending: one state
        pushes = REAL_PUSHES[:1] if plan is None else REAL_PUSHES
        states, out = [], None
        for words, push in pushes:
            scratch = (Path(tempfile.mkdtemp(prefix="real-", dir=self.scratch_root))
                       if self.scratch_root is not None and not self.hold
                       else runner.make_scratch())
            try:
                try:
                    # traced, without snapshots: the recorder reads no
                    # file of the program's (a read-back's close is an
                    # ext4 release, which takes auto_da_alloc's flush
                    # from the program's own close)
                    out = execute_run(combo, plan, scratch,
                                      timeout_of(combo, self.settings),
                                      record=False, settings=self.settings,
                                      backend=case.backend, crash=True,
                                      before_crash=push)
                except ScratchFull as e:
                    return self.result(case, combo, oracle.Verdict(
                        "harness-error", str(e), SCRATCH_WHY), None, states=0)
                self.last_out = out
                run = out.run
                problem = ""
                if run.timed_out:
                    problem = (f"the run on {fs} timed out before its crash "
                               "point")
                elif plan and crash_seq(out) is None:
                    problem = (f"the run on {fs} never reached {case.call}: "
                               f"the program made its calls otherwise than "
                               f"in its baseline (exit status {run.status}, "
                               f"signal {run.signal})")
                elif plan and aimed_astray(case, out.faulted()):
                    problem = aimed_astray(case, out.faulted())
                elif plan == "" and run.status != 0:
                    problem = (f"the run on {fs} exited {run.status} (signal "
                               f"{run.signal}) where its baseline exited 0")
                if problem:
                    return self.result(case, combo, oracle.Verdict(
                        "harness-error", problem, REAL_ASTRAY_WHY), out,
                        states=0, keep=True)
                states.append(self.real_state(case, combo, out, baseline,
                                              fs, words))
            finally:
                if self.hold and push is pushes[-1][1]:
                    self.last_scratch = scratch
                else:
                    shutil.rmtree(scratch, ignore_errors=True)
        states = self.states_of(combo, states, claimed=plan == "")
        renamed, removed = self.first_rename(combo, baseline)
        upto = case.at if case.at is not None else (
            -1 if plan is None else float("inf"))
        verdict = oracle.judge(oracle.Outcome(
            status=baseline.run.status, crash_states=states,
            **self.visible(combo, baseline),
            target_name=target_name(combo.spec),
            target_renamed=renamed is not None and renamed <= upto,
            target_removed=removed is not None and removed <= upto,
            calls=self.baseline_calls(combo, baseline), **base))
        return self.result(case, combo, verdict, out, states=len(states),
                           keep=True, upto=case.at)

    def states_of(self, combo, states, claimed):
        """STATES, real crash states, as states() gives a model's:
        claimed, and with the checker's answer for a checker contract."""
        for st in states:
            st.claimed = claimed
            if combo.spec.contract in ("check", "tree"):
                st.check = self.run_checker(combo, st, claimed)
        self.last_states = list(states)
        return self.last_states

    def real_state(self, case, combo, out, baseline, fs, words=""):
        """The realfs.RealState of a crashed run OUT (WORDS: how the
        kernel was pushed before the crash, for its label). What
        persisted and what did not, and the rule broken, are those of
        the state of the filesystem's model that is the same tree, at
        the same point of the BASELINE's trace (the program exited
        there, or was killed: either way the kernel closed what it left
        open; and the fsync of another file, when one was made), when
        the explorer gives one (realfs.COMPANION names the model); else
        what differs from what a read saw."""
        seen, (files, dirs, links) = out.real
        label = f"{point_label(case)}, the real {fs} state{words}"
        name = target_name(combo.spec)
        key = realfs.tree_key(files, dirs, links)
        model = realfs.companion(fs, explorer.MODELS)
        match = None
        if case.call != "start":
            records = records_upto(baseline.records, case.at)
            if out.before_crash is not None:
                records = realfs.with_sync_record(records, out.before_crash)
            try:
                point = explorer.explore_exit(
                    records, baseline.snapdir, (model,), name,
                    cap=self.settings.cap, seed=self.settings.seed,
                    exit_ok=False, blob_cache=baseline.blobs)[model]
                match = next((m for m in point.states if realfs.tree_key(
                    m.files, m.dirs, m.links) == key), None)
            except (explorer.ExplorerError, trace.TraceError):
                match = None
        if match is not None:
            return realfs.RealState(label, files, dirs, links, name,
                                    match.why, match.rule, match.persisted,
                                    match.lost)
        return realfs.RealState(label, files, dirs, links, name,
                                realfs.differences(seen, (files, dirs, links)))

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
            return execute_run(combo, case.plan, scratch,
                               self.case_seconds(combo),
                               reuse_input=reuse, server=server,
                               trace_from=trace_from, trace_full=trace_full,
                               settings=self.settings, backend=case.backend,
                               full_disk=case.disk == "full")
        except runner.ServerUnavailable:
            # gone under this run: it runs again, exec'd, and so do the
            # next ones of its command line
            self.close_server(refuse=True)
            return execute_run(combo, case.plan, scratch,
                               self.case_seconds(combo),
                               reuse_input=True, trace_from=trace_from,
                               trace_full=trace_full, settings=self.settings,
                               backend=case.backend)

    def lite_from(self, case, combo):
        """The seq a lite run of CASE starts its trace at, or None for a
        run that records every call.

        A case whose program stops at its fault, with an error or killed,
        is judged from its exit, its files and the calls the fault fired
        on: the calls before the fault, which the program makes as its
        baseline did, are recorded for nothing, and recording them cost
        most of a long run, and the snapshots, which only the crash
        states of a run that exits 0 are built from, an eighth to a fifth
        of a short run's case.
        Such a run records from where the baseline made the faulted call,
        and takes no snapshots; the library still gives every call its
        seq, and writes the line of any call a fault fired on
        (faults/trace.c, CRASHCHECK_TRACE_FROM). judge_run accepts it
        only when that is all it needs; else the case runs again,
        recorded whole. Kinds in LITE_KINDS are those whose programs
        mostly stop; where the lite runs of one group of cases
        (_lite_key) keep being run again, its cases are whole from then
        on."""
        if not self.may_run_part(case, LITE_KINDS):
            return None
        if case.at <= PERSIST_WHOLE_WITHIN and _persists(case):
            # A fault that keeps firing can keep a program retrying until
            # its timeout, its trace growing all the while: without the
            # recorder's snapshots each retry is cheaper, and the trace
            # that much longer to read (write-enospc-spin: 1274256
            # lines in 2 s against 281879, 37.5 s of sweep against 10.6).
            # Far into a run the trace's start saves more than that
            # costs; near its start it does not.
            return None
        if self.rerun_often(case, combo):
            return None
        return case.at

    def may_run_part(self, case, kinds):
        """Whether CASE, of one of KINDS, may run lite or thin first: not
        with --whole-traces, --keep or for replay (which show every call
        in full), and only where its baseline made the faulted call
        (Case.at)."""
        return (self.settings.lite and not self.hold and not self.settings.keep
                and case.kind in kinds and case.at is not None)

    def thin_window(self, case, combo):
        """The seqs (lo, hi) a thin run of CASE records in full, or None
        for a run that records every write in full.

        A case whose program is expected to get past its fault (THIN_KINDS:
        an EINTR, a short write) and claim success is judged from its
        whole trace: its after-exit crash states are replayed from every
        call. The writes that a later fsync snapshots whole are moot there
        (trace.Lazy.for_exit) and go unread, yet recording each (its
        offset, and a range snapshot: the fstat after it and the bytes
        read back) cost three of the five system calls the recorder
        makes for a write.
        Such a run records every write thin that it may (faults/trace.c,
        CRASHCHECK_TRACE_FULL): the file, its flags and what the call
        returned. The faulted call, which a rule chooses, never is.
        judge_run accepts it only where no thin line is read; else the
        case runs again, recorded whole, and where the thin runs of one
        group of cases (_lite_key) keep being run again, its cases are
        whole from then on."""
        if not self.may_run_part(case, THIN_KINDS) or \
                self.rerun_often(case, combo):
            return None
        # the faulted call's seq in the baseline: full, as it is anyway
        return case.at, case.at

    def rerun_often(self, case, combo):
        """Whether the lite or thin runs of CASE's group (_lite_key) ran
        again more often than they stood, twice at least."""
        stood, missed = self._lite.get(_lite_key(case, combo), (0, 0))
        return missed >= 2 and missed > stood

    def lite_count(self, case, combo, stood):
        """Count a lite or thin run of CASE that STOOD, or that ran
        again."""
        counts = self._lite.setdefault(_lite_key(case, combo), [0, 0])
        counts[0 if stood else 1] += 1

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
        # the pool's processes share the root: a directory each, its pid
        # (at most 7 digits: Linux's pid_max)
        mine = Path(self.scratch_root) / f"{os.getpid():07d}"
        mine.mkdir(exist_ok=True)
        mine = mine / combo.prefix
        if case is not None and case.disk == "full":
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
        process (runner.ForkServer), started on its first case here and
        kept for the next combos of the same command line (a spec's
        sizes), started again if it ended after a run; None where the
        case is exec'd: --exec-each, a held case (replay runs the real
        thing), a FULL_DISK case, a fresh scratch per case, or a program
        that cannot be served."""
        # scratch_for gives the others (held, full disk) a fresh scratch
        if not self.settings.fork_server or scratch != self._scratch:
            return None
        key = (backend, *argv_of(combo))
        if self._server_key == key and (self._server is None or
                                        not self._server.closed):
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
            self._server = runner.ForkServer(
                key[1:], home=work, timeout=timeout_of(combo, self.settings),
                backend=backend)
        except (runner.ServerUnavailable, runner.SetupError,
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
        parts = [(out.records, str(out.workdir), None)]
        if out.trace_from is not None:
            baseline = load_run(self.work / combo.prefix)
            parts.append((baseline.records, str(baseline.workdir), case.at))
        for records, base, before in parts:
            start = (causes.start_tree(records) or {}).get(name)
            for r in trace.calls(records):
                if (before is not None and r["seq"] >= before) or r.get("ret", -1) < 0:
                    continue
                mine = (start is not None and r.get("ino") == start) or \
                    causes.named(r.get("path"), name, base)
                if mine and (causes.changes_data(r) or "O_TRUNC" in
                             (r.get("flags") or ())):
                    return True
        return False

    def baseline_sync_seqs(self, combo, out):
        """(seq, name) of every successful sync in the combo's baseline
        OUT (synced_names, call by call), once per process."""
        key = ("sync-seqs", combo.prefix)
        if key not in self._calls:
            self._calls[key] = [
                (r["seq"], name) for r in trace.calls(out.records)
                for name in synced_names([r], out.workdir)]
        return self._calls[key]

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
        base = load_run(self.work / combo.prefix)
        want = {name for seq, name in self.baseline_sync_seqs(combo, base)
                if seq > case.at}
        return frozenset(want - synced_names(out.records, out.workdir,
                                             after=fired))

    def result(self, case, combo, verdict, out, states, model=None, keep=False,
               upto=None, under=None):
        """The case's entry of results.json (docs/design.md), and for a
        finding (or with --keep) its directory under results/cases/.
        UPTO is the seq of a power-loss case's crash point: the deciding
        call of its state was made at or before it. UNDER: the models of
        the sweep the verdict holds under, when it came from crash states
        (a power-loss case's own model, until write_reports names the
        others); by default every model of the sweep, the verdict owing
        nothing to one."""
        spec = combo.spec
        expected = [e for e in spec.expect if e.applies(
            kind=case.kind, model=case.model or model, strategy=combo.strategy,
            size=combo.size, call=case.call or None, backend=case.backend)]
        finding = verdict.verdict not in ("ok", "skipped")
        # the sweep's own harness errors are not the oracle's: no severity
        sev = verdict.severity or properties.severity(verdict.verdict)
        if verdict.verdict == "harness-error":
            passed = False
        elif not finding:
            passed = True
        else:
            # a finding fails unless a buggy variant expects it, or it is
            # a warning and the run fails on errors only
            passed = any(e.verdict == verdict.verdict for e in expected) or \
                not properties.fails(sev, self.settings.fail_on or spec.fail_on)
        run = out.run if out is not None else None
        base = str(out.workdir) if out is not None else None
        excerpt = []
        fired = []
        if out is not None:
            root = str(out.scratch)

            def fmt(rec):
                return trace.format_call(rec, base, root=root)
            # The calls around the target, for a finding: what the reports
            # show next to it. A case that held its contract has none (its
            # reproduce command with --keep writes every call to its
            # trace.txt): parsing and formatting them for every case was
            # an eighth of a case at 100 writes.
            if finding:
                excerpt = [fmt(r) for r in excerpt_around(out, case)]
            fired = [{"rule": f.rule, "count": f.count}
                     for f in trace.fired(out.faulted(), plan_rules(case.plan))]
        cause, location, text = self.cause(case, combo, verdict, out, upto) \
            if finding else (None, None, verdict.finding)
        res = {
            "id": case.id,
            "workload": spec.name,
            "strategy": combo.strategy,
            "size": combo.size,
            "kind": case.kind,
            "plan": case.plan,
            "call": case.call,
            "model": case.model or model,
            "models": list(under if under is not None else
                           (case.model,) if case.model else
                           self.settings.models),
            "states": states,
            "seed": self.settings.seed,
            "verdict": verdict.verdict,
            "severity": sev or None,
            "property": verdict.cause.prop or None
            if verdict.cause is not None else None,
            "passed": passed,
            "expected": [expect_dict(e) for e in expected],
            "finding": text,
            "explanation": verdict.explanation,
            "state": verdict.state,
            "note": verdict.note,
            "cause": cause,
            "location": location,
            "reproduce": with_rerun(on_fs(reproduce(spec, case,
                                                    self.settings.backend,
                                                    self.settings.models,
                                                    self.settings.fail_on),
                                          spec, self.settings.fs),
                                    spec, self.settings.rerun),
            "backend": case.backend,
            "exit": {"status": run.status if run else None,
                     "signal": run.signal if run else None,
                     "timed_out": run.timed_out if run else False},
            "stderr": run.stderr_text() if run else "",
            "fired": fired,
            "outside": list(run.outside) if run else [],
            "trace_excerpt": excerpt,
            "dir": "",
            "duration": round(run.duration, 6) if run else 0.0,
        }
        if run is not None and max(run.stdout_size, run.stderr_size) > \
                runner.OUTPUT_CAP:
            # what the program wrote, of which OUTPUT_CAP bytes are kept
            res["output"] = {"stdout": run.stdout_size,
                             "stderr": run.stderr_size}
        tracecut.note(res, out)
        if out is not None and (finding or self.settings.keep):
            # a power-loss or baseline finding too: the crash state that
            # decided it, laid out, is what a person wants to look at
            crash = next((st for st in self.last_states
                          if verdict.state and st.label == verdict.state), None)
            try:
                steps = trace.steps(out.records)
                res["dir"] = save_case_dir(
                    self.settings.out, res, out,
                    [fmt(r) for r in kept_ends(steps)], combo, crash=crash,
                    steps=len(steps))
            except (OSError, shutil.Error, trace.TraceError,
                    explorer.ExplorerError) as e:
                # the verdict stands; where to look is gone
                res["dir_error"] = f"its directory could not be saved: {e}"
        return res


    def target_history(self, case, combo, out):
        """(renamed over, removed): whether the program renamed a file
        over the target, and whether it renamed the target's own entry
        away or unlinked it, before it stopped: in OUT's trace, and for a
        lite run (whose trace starts at its fault) in its baseline's
        before the faulted call."""
        name = target_name(combo.spec)
        parts = [(trace.calls(out.records), str(out.workdir), None)]
        if out.trace_from is not None:
            baseline = load_run(self.work / combo.prefix)
            parts.append((trace.calls(baseline.records), str(baseline.workdir),
                          case.at))
        over = away = False
        for records, base, before in parts:
            for r in records:
                if (before is not None and r["seq"] >= before) or r.get("ret", -1) < 0:
                    continue
                call = r.get("call")
                if call in causes.RENAME_CALLS:
                    over = over or causes.named(r.get("path2"), name, base)
                    away = away or causes.named(r.get("path"), name, base)
                elif call in causes.UNLINK_CALLS:
                    away = away or causes.named(r.get("path"), name, base)
        return over, away

    def cause(self, case, combo, verdict, out, upto):
        """(cause entry, location, finding) of a finding (causes.describe):
        the deciding call found in OUT's trace, symbolized where the trace
        says where it was made, and the finding naming that place."""
        if verdict.cause is None:
            return None, None, verdict.finding
        rec, base = None, None
        if out is not None:
            # a call cause needs only the faulted records; a change, the
            # calls before it: a lite run's trace starts at its fault, and
            # its program made the calls before as its baseline did
            records, base = (), str(out.workdir)
            if not verdict.cause.call:
                records = out.records
                if out.trace_from is not None:
                    baseline = load_run(self.work / combo.prefix)
                    records, base, upto = baseline.records, \
                        str(baseline.workdir), case.at
            faulted = out.faulted()
            if out.deciding is not None:
                faulted = [out.deciding] + list(faulted)
            rec = causes.deciding_record(verdict.cause, records,
                                         faulted=faulted, base=base, upto=upto)
        location = symbols.site(rec) if rec is not None else None
        if combo.prefix not in self._globs:
            self._globs[combo.prefix] = load_globs(self.work / combo.prefix)
        entry, location = causes.describe(
            combo.spec.name, verdict.verdict, verdict.cause, rec, base=base,
            location=location, globs=self._globs[combo.prefix])
        text = verdict.finding
        if location is not None:
            text += f" ({entry['call']} at {location['text']})"
        return entry, location, text


class CheckerFailed(Exception):
    """A spec's checker that timed out, died of a signal or left a
    process behind: the state it was asked about cannot be judged."""

    def __init__(self, reason, argv, output):
        super().__init__(reason)
        self.reason, self.argv, self.output = reason, argv, output

    def detail(self):
        return (f"checker {' '.join(map(str, self.argv))}"
                + (f"; its output: {self.output}" if self.output.strip()
                   else ""))


def _first_line(output):
    """The first line of a checker's output with something in it: what
    a finding quotes of it."""
    return next((li.strip() for li in output.splitlines() if li.strip()), "")


def _answer_text(status, output):
    """A checker's answer in a few words: "exited 1: tip is 'old'"."""
    first = _first_line(output)
    return f"exited {status}" + (f": {first[:120]}" if first else "")


def _signal_name(num):
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def outlived(run, faulted=()):
    """Whether RUN left processes running when it ended (runner.Run.outlived)
    that were not part of a planned crash (the library's SIGKILL of the
    program, whose children a real crash takes too) or of a hang."""
    if not run.outlived or run.timed_out:
        return False
    planned = run.signal == 9 and any(r.get("ev") == "crash" for r in faulted)
    return not planned


def outlived_verdict(run):
    """harness-error for a run that left processes running."""
    names = ", ".join(run.outlived[:5]) + (
        f" and {len(run.outlived) - 5} more" if len(run.outlived) > 5 else "")
    return oracle.Verdict(
        "harness-error",
        f"processes it started outlived it (killed then): {names}",
        "When the program ended, processes it had started were still "
        "running (a daemon that forked away and called setsid, a child "
        "nobody waited for). crashcheck killed them, but what they would "
        "have written later is missing from this case, and their writes "
        "could have landed in another case's files: the case cannot be "
        "judged. Make the program wait for its children before it exits "
        "(or run the part that writes in the foreground).")


CHECKS_DIR = "checks"


class CheckCache:
    """A checker's answers by content: (combo, state digest, expect) ->
    oracle.CheckResult. A checker judges files, so a state already judged
    (at another crash point, in another case, by another process of the
    pool) is not judged again. The answers live in memory and in DIR (the
    sweep's work directory, which every process of the pool shares), one
    small file each, written whole under a temporary name and renamed.
    hits and misses count this process's lookups."""

    def __init__(self, directory):
        self.dir = Path(directory)
        self.mem = {}
        self.hits = self.misses = 0

    def _name(self, combo, key, expect):
        # the kind first: a crash state ("s") or a run's directory ("d"),
        # which distinct() counts apart
        h = hashlib.blake2b(digest_size=12)
        h.update("\0".join((combo.prefix, key[1], expect)).encode())
        return f"{key[0]}-{h.hexdigest()}"

    def get(self, combo, key, expect):
        name = self._name(combo, key, expect)
        res = self.mem.get(name)
        if res is None:
            try:
                with open(self.dir / name) as fh:
                    d = json.load(fh)
                res = oracle.CheckResult(status=d["status"],
                                         output=d["output"], expect=expect)
                self.mem[name] = res
            except (OSError, ValueError, KeyError, TypeError):
                res = None
        if res is None:
            self.misses += 1
        else:
            self.hits += 1
        return res

    @staticmethod
    def distinct(directory):
        """{kind: how many distinct answers DIRECTORY holds}: "s" crash
        states, "d" run directories; what the sweep's summary reports."""
        counts = {"s": 0, "d": 0}
        try:
            with os.scandir(directory) as it:
                for e in it:
                    kind = e.name.split("-", 1)[0]
                    if kind in counts:
                        counts[kind] += 1
        except OSError:
            pass
        return counts

    @contextlib.contextmanager
    def claim(self, combo, key, expect):
        """Held while this process judges a state: another process of
        the pool that meets the same state waits, then finds the answer
        (get), so that each distinct state is judged once in the whole
        sweep, not once per process that meets it first at the same
        time. Without a lock to be had (no room), no wait."""
        name = self._name(combo, key, expect)
        try:
            self.dir.mkdir(exist_ok=True)
            fh = open(self.dir / f".lock-{name}", "a")
        except OSError:
            yield
            return
        with fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            yield

    def put(self, combo, key, expect, res):
        name = self._name(combo, key, expect)
        self.mem[name] = res
        try:
            self.dir.mkdir(exist_ok=True)
            tmp = self.dir / f".{name}.{os.getpid()}"
            with open(tmp, "w") as fh:
                json.dump({"status": res.status, "output": res.output}, fh)
            os.rename(tmp, self.dir / name)
        except OSError:
            pass        # the next process judges it again: slower, the same


# a check_server's answers are held to check's on the first trees it
# answers about in a process, and then on one in this many (served_check)
SERVER_AUDIT_FIRST = 8
SERVER_AUDIT_EVERY = 64
# A fault that keeps firing within this many calls of a run's start runs
# whole, not lite (Judge.lite_from)
PERSIST_WHOLE_WITHIN = 80
# the kinds of fault case that run lite first (Judge.lite_from)
LITE_KINDS = ("eio", "enospc", "crash")
# the kinds of fault case that run thin first (Judge.thin_window)
THIN_KINDS = oracle.TRANSIENT


def _lite_key(case, combo):
    """What Judge counts lite runs by: the program (spec and strategy;
    its sizes share a command line), the kind of fault, and whether it
    fires once or from its call on ("write#3+=EIO"): a program that
    retries gets past a fault that fires once and claims success, and
    stops at one that keeps firing, so the two kinds of case of one
    program stand apart."""
    return combo.spec.name, combo.strategy, case.kind, _persists(case)


def _persists(case):
    """CASE's fault fires from its call on ("write#3+=EIO"), not once."""
    return "+=" in (case.plan or "")


def aimed_astray(case, faulted):
    """Why the fault of CASE hit another call than the one it was aimed
    at (the baseline's, Case.where: its offset and length), or "": a
    program that makes its calls on one file otherwise from run to run
    must not be judged on the wrong one. A real power-loss case's
    crash-after is such a fault."""
    if not case.where or not (case.plan or realfs.fs_of(case.model)):
        return ""
    # a thread's call: the first faulted call of that thread (a fault that
    # keeps firing may have hit another thread's call that ended first)
    thread = coords.thread_in(case.call)
    hit = next((r for r in faulted if r["ev"] == "call" and r.get("fault")
                and (thread is None or coords.thread_of(r) == thread)),
               None)
    if hit is None:
        return ""       # never fired: the oracle says so
    want = tuple(case.where)
    got = (hit.get("off"), hit.get("len"))
    if all(w is None or g is None or w == g for w, g in zip(want, got)):
        return ""
    return (f"nondeterministic: {case.call} hit a call at "
            f"{coords.describe(got + (False, 0))} where the recorded run "
            f"made it at {coords.describe(want + (False, 0))}")


# How a real power-loss case's runs push the kernel between the kill and
# the crash: (the label's words, realfs.Disk's hook)
REAL_PUSHES = (("", None),
               (" after an fsync of another file", lambda d: d.sync_other()))
REAL_ASTRAY_WHY = (
    "A power-loss case on a real filesystem runs the program again, on a "
    "fresh filesystem, and kills it right after the call of its crash "
    "point, named as in its baseline (write(target.tmp)#3). This run did "
    "not get there, or not in time: the program takes another path on "
    "this filesystem than in its baseline, or its calls vary from run to "
    "run. No state was judged, and this is never a pass.")
ASTRAY_WHY = (
    "The fault was aimed at a call by the file it is on and its number "
    "among that file's calls, as the recorded run made them; in this run "
    "that call was made otherwise, so the fault hit another, and the "
    "outcome says nothing about the one planned. The program does not "
    "make its calls the same way from run to run (threads or processes "
    "that race, the clock, random numbers): this is never a pass.")


def thin_unread(records):
    """Whether a thin run's after-exit replay of RECORDS (Outcome.for_exit)
    is its whole run's: no thin write outside a moot run (explorer.Moot),
    and no write that put bytes into a file of a moot run outside one. A
    write is recorded the same thin or whole, but for its snapshot: after
    thin writes to a file, the first write in full snapshots the file
    whole where a whole run took a range, and each gives the same
    content; outside a moot run the sweep does not lean on that. A moot
    run whose writes a world needs raises explorer.ThinRecord
    (explore_exit's moot_full)."""
    write, moot = explorer.WRITE_CALLS, explorer.Moot
    inos = {rec["ino"] for rec in records if rec.__class__ is moot}
    for rec in records:
        if rec.__class__ is not moot and rec.get("call") in write and (
                rec.get("thin") or (rec.get("ret", 0) > 0
                                    and rec.get("ino") in inos)):
            return False
    return True
