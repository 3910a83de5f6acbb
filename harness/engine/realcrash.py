"""Power-loss cases on a real filesystem (--fs; the RealPowerLoss
mixin of the Judge): the program run again on a fresh image and killed
after the call of its crash point, and the state the kernel left judged
as a model's (realfs.py holds the filesystem itself)."""

import shutil
import tempfile
from pathlib import Path

from . import realfs, runner, trace, tracecut
from ..judging import explorer, oracle
from .cases import target_name
from .records import crash_seq, records_upto
from .execute import ScratchFull, execute_run
from .baseline import load_run, timeout_of
from .unjudgeable import (SCRATCH_WHY, aimed_astray, outlived,
                          outlived_verdict)



def point_label(case):
    """A power-loss case's crash point in words, with the coordinate its
    id gives: 'after write(target.tmp)#3', 'before first call'."""
    return {"start": "before first call", "exit": "after exit"}.get(
        case.call, f"after {case.call}")



class RealPowerLoss:
    """The Judge's power-loss cases on the real kernel (real_powerloss),
    their states (real_state) and the checker's answers for them
    (states_of)."""

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
                problem, why = real_run_problem(case, out, plan, fs)
                if problem:
                    return self.result(case, combo, oracle.Verdict(
                        "harness-error", problem, why), out,
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


def real_run_problem(case, out, plan, fs):
    """(why the run OUT of a power-loss CASE on the real FS gives no state
    to judge, the explanation), or ("", ""). PLAN: the run's (None:
    not run, "": left to exit, else crash-after its point). A run whose
    trace the limit cut (--trace-limit) cannot show that it got to its
    point, nor that it took its baseline's path: it is the cut's
    harness-error (tracecut.trouble), never a state."""
    run = out.run
    if run.timed_out:
        return (f"the run on {fs} timed out before its crash point",
                REAL_ASTRAY_WHY)
    cut = tracecut.trouble(out)
    if cut:
        return cut, tracecut.CUT_WHY
    if plan and crash_seq(out) is None:
        return (f"the run on {fs} never reached {case.call}: the program "
                "made its calls otherwise than in its baseline (exit status "
                f"{run.status}, signal {run.signal})", REAL_ASTRAY_WHY)
    if plan and aimed_astray(case, out.faulted()):
        return aimed_astray(case, out.faulted()), REAL_ASTRAY_WHY
    if plan == "" and run.status != 0:
        return (f"the run on {fs} exited {run.status} (signal {run.signal}) "
                "where its baseline exited 0", REAL_ASTRAY_WHY)
    return "", ""


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
