"""A combo's baseline and the cases it gives. The baseline is one
recorded run with no fault (record_baseline): its trace is what every
other case of the combo is enumerated from, and its snapshots are the
source of the power-loss cases. More recorded runs (record_again) show
the calls that move from one run to the next. found_of lists the
combo's cases from them (Found: the fault cases per traced call, the
crash points per model), and says why a baseline gives none (the
program escaped its scratch, nothing was intercepted, it failed on its
own). The baseline's files in its scratch (run.json, globs.json,
unseen.json) are written here and read back by the judge.

sweep.py records every combo's baseline; sampling.py chooses which of
its cases run."""

import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import calls, coords
from . import backend as backend_mod, realfs, runner, trace, tracecut
from ..judging import explorer
from .cases import Case, OPEN_CALLS, WORK, contents, fault_plans, target_name
from .records import (FULL_DISK, call_site, crash_point_records,
                      is_crash_point, no_change, targeted_calls, touches,
                      uring_set_up)
from .execute import (Outcome, ScratchFull, argv_of, execute_run, load_run_of,
                      on_real_fs, scratch_trouble, shown_path, tree_digest,
                      unseen_of)
from .sampling import choose

# Every run of a combo works in a directory as long as its baseline's
# (Judge.scratch_for): the baselines' root (WORK_PREFIX and 16 hex digits)
# is as long as the fault cases' root (RUNS_PREFIX, made by plugin.py,
# shared by the pool) and a directory of 7 digits in it, each process's.
WORK_PREFIX = "crashcheck-recorded-run-"
RUNS_PREFIX = "crashcheck-runs-"
ASIDE = ".aside"     # a combo's baseline, while another recorded run is made
HELD = ".held"       # a held case's root (replay), beside ".work", as long
RANDOM_RUNS = 5      # recorded runs in all of a combo whose names change


def record_again(combo, out, settings, how="preload", took=None):
    """More recorded runs of the combo whose baseline is OUT, traced
    without snapshots, for cases_of to hold against it: ([(records, work
    directory)], align's globs for the files whose names change from run
    to run); ([], {}) where there is nothing to compare (a skipped
    baseline, one that shows nothing). A program whose threads or
    processes race makes its calls otherwise from run to run, and a case
    aimed at a call by its number would hit another. One more run, and
    RANDOM_RUNS in all where names change (mkstemp's): random names
    that share a character at their start or end by chance would keep
    it in their glob, and the cases aimed at the file would never fire.
    With Python's tempfile names (37 characters) that is one chance in
    37**(k-1) per end for k runs: three runs gave Mercurial's temp file
    the glob '.hg/tmpq???????' in a `make apps`, five make it about one
    in two million. TOOK, a list, gets each run's seconds (wall time)."""
    if out.run.skipped or scratch_trouble(out, combo) or escapes(out) or \
            nothing_intercepted(combo, out, how):
        return [], {}

    def one_more(k):
        # where the baseline ran, its files set aside meanwhile: a program
        # that writes its working directory into a file (logrotate, its
        # state) writes the same bytes in every recorded run
        scratch = out.scratch
        aside = Path(f"{os.fspath(scratch)}{ASIDE}")
        os.rename(scratch, aside)
        try:
            scratch.mkdir()
            try:
                began = time.monotonic()
                again = execute_run(combo, "", scratch,
                                    timeout_of(combo, settings), record=False,
                                    settings=settings, backend=how)
                if took is not None:
                    took.append(time.monotonic() - began)
                trouble = scratch_trouble(again, combo)
                if trouble:
                    raise ScratchFull(trouble)
                return again.records, str(again.workdir)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
        finally:
            os.rename(aside, scratch)
    first = (out.records, str(out.workdir))
    try:
        others = [one_more(1)]
        globs = coords.align([first] + others)
        if globs:
            others += [one_more(k) for k in range(2, RANDOM_RUNS)]
            globs = coords.align([first] + others)
    except ScratchFull:
        # the scratch, not the program: the baseline is judged as it is
        return [], {}
    return others, globs


def record_baseline(combo, scratch, settings):
    """(Outcome, backend, why) of the combo's baseline, recorded in
    SCRATCH with the backend settings.backend asks for, and why that one
    (a sentence, "" when nothing needed saying).

    auto runs a program the preload can enter under it (backend.choose:
    not static, not Go, not setuid, linking no liburing), and runs it
    again under the system-call supervisor when that baseline shows
    changes to its files that its trace does not account for (missed: a
    static helper, raw system calls, a file mkstemp made inside the C
    library), or when the program imports syscall(2) and the supervisor
    sees syncs or name changes the preload did not (blind_to): the
    supervisor's baseline is kept unless it accounts for the changes no
    better and sees nothing more. Under a preload asked for by name, a
    program that imports syscall(2) or links liburing is recorded under
    the supervisor too, and when that shows syncs the preload did not see
    (or an io_uring set up), the baseline is
    kept with the reason, which makes it a harness-error and runs no
    other case of the combo (cases_of): the preload must not call data
    "never fsynced" that was synced where it could not see."""
    timeout = timeout_of(combo, settings)
    argv = argv_of(combo)
    how, why = backend_mod.resolve(settings.backend, argv[0],
                                   cwd=os.path.join(scratch, WORK))
    out = execute_run(combo, "", scratch, timeout, settings=settings,
                      backend=how)
    if how != "preload" or settings.backend == "syscall":
        return out, how, why
    lost = settings.backend == "auto" and missed(combo, out)
    raw = backend_mod.may_bypass(argv[0], cwd=os.path.join(scratch, WORK))
    if not lost and not raw:
        return out, "preload", why
    lost_words = lost_text(combo, out) if lost else ""
    preload_out = out
    kept = scratch.parent / (scratch.name + ".preload")
    shutil.rmtree(kept, ignore_errors=True)
    os.rename(scratch, kept)
    scratch.mkdir()
    sup = execute_run(combo, "", scratch, timeout, settings=settings,
                      backend="syscall")
    blind = blind_to(preload_out, sup) if not sup.run.skipped else ""
    syncs = (blind_to(preload_out, sup, names=False) if blind else "") or \
        uring_set_up(sup)
    if settings.backend == "preload":
        # asked for by name: the preload's run; where it cannot see the
        # syncs, nothing it says of durability stands
        shutil.rmtree(scratch, ignore_errors=True)
        os.rename(kept, scratch)
        out = load_run_of(combo, scratch, preload_out)
        return out, "preload", (f"not seen whole: {syncs}; rerun with "
                                "--backend syscall (or auto)") if syncs else ""
    sup_lost = missed(combo, sup)
    if lost and (not sup_lost or blind or uring_set_up(sup)):
        shutil.rmtree(kept, ignore_errors=True)
        return sup, "syscall", (f"its preload baseline shows {lost_words}: "
                                "the system-call backend sees those calls")
    if blind and not sup_lost:
        shutil.rmtree(kept, ignore_errors=True)
        return sup, "syscall", (f"it imports syscall(2), and {blind}: the "
                                "system-call backend sees those calls")
    shutil.rmtree(scratch, ignore_errors=True)
    os.rename(kept, scratch)
    out = load_run_of(combo, scratch, preload_out)
    return out, "preload", ""


# calls the preload may miss (a raw system call, one libc makes inside
# another): the syncs, and the changes of a name
_BLIND_SYNCS = frozenset(("fsync", "fdatasync", "sync", "syncfs", "msync"))
_BLIND_NAMES = frozenset(("rename", "renameat", "renameat2", "unlink",
                          "unlinkat", "link", "linkat", "mkdir", "mkdirat",
                          "rmdir", "symlink", "symlinkat"))


def blind_to(pre, sup, names=True):
    """What the supervisor's run SUP saw that the preload's PRE did not,
    in words ("" when nothing): more syncs, or (NAMES) more changes of
    names, on the work directory's files (a raw syscall(SYS_fsync), a
    remove(3) whose unlink the C library makes inside itself)."""
    def counts(out, calls_):
        n = {}
        for r in trace.calls(out.records):
            if r["call"] in calls_ and r.get("ret", -1) >= 0 and (
                    r["call"] in ("sync", "syncfs") or touches(r, out.workdir)):
                n[r["call"]] = n.get(r["call"], 0) + 1
        return n
    said = []
    for calls_, what in ((_BLIND_SYNCS, "sync"), (_BLIND_NAMES, "name")):
        if what == "name" and not names:
            continue
        a, b = counts(pre, calls_), counts(sup, calls_)
        more = {k: b[k] - a.get(k, 0) for k in b if b[k] > a.get(k, 0)}
        if more:
            said.append(", ".join(f"{n} {k} call{'s' if n != 1 else ''}"
                                  for k, n in sorted(more.items())))
    if not said:
        return ""
    return ("the program makes " + " and ".join(said) + " on its files that "
            "the preload does not see (raw system calls, or calls the C "
            "library makes inside others)")


def lost_text(combo, out):
    """The changes OUT's trace misses (missed), in words."""
    names = unseen_changes(combo, out)
    if names:
        return ("changes to " + ", ".join(f"'{n}'" for n in names[:3])
                + " that its trace does not account for")
    found = unseen_of(out)
    if found:
        u = found[0]
        what = (f"the name '{u['path']}' come or go" if u.get("what") == "name"
                else f"the content of '{u['path']}' change")
        return (f"{what} with no call the preload saw (first seen at "
                f"{u['at']}: a file mkstemp or tmpfile made, a raw system "
                "call, or another call the C library makes inside its own)")
    return "changes its trace does not account for"


def missed(combo, out):
    """Whether the trace of OUT misses changes to its files: at its end
    (unseen_changes), or between two of its snapshots (explorer.unseen: a
    raw write(2) that an fsync's snapshot then shows)."""
    if unseen_changes(combo, out):
        return True
    if out.run.timed_out or out.run.signal is not None or out.run.skipped:
        return False
    return bool(unseen_of(out))


def unseen_changes(combo, out):
    """The files of the work directory whose content when the run ended
    is not what its trace's last snapshots show (sorted names, [] when
    the trace accounts for every one): something the backend could not
    see changed them. A run that timed out or died of a signal is not
    looked at (nothing_intercepted says why)."""
    if out.run.timed_out or out.run.signal is not None or out.run.skipped:
        return []
    if not any(r["ev"] == "init" for r in out.records):
        return [target_name(combo.spec)]
    try:
        seen = explorer.visible(out.records, out.snapdir)[-1][1]
    except explorer.ExplorerError:
        return []
    actual = {}
    with os.scandir(out.workdir) as it:
        for e in it:
            if e.is_file(follow_symlinks=False):
                with open(e.path, "rb") as fh:
                    actual[e.name] = fh.read()
    return sorted(n for n in set(seen) | set(actual)
                  if seen.get(n) != actual.get(n))


def timeout_of(combo, settings):
    """The time limit of the combo's baseline, and the floor of its
    cases' (Judge.case_seconds): --timeout, else the spec's."""
    return settings.timeout if settings.timeout is not None else combo.spec.timeout


@dataclass
class Found:
    """Every case of one combo, before any is left out (choose): those
    always run, and the fault cases and crash points with the group each
    belongs to (select)."""
    fixed: list                                 # Cases that always run (the baseline, the full disk)
    faults: list = field(default_factory=list)  # (group, Case) in trace order
    points: list = field(default_factory=list)  # (group, [Case per model]) in trace order
    models: int = 1                             # cases per crash point
    calls: int = 0                              # calls of the trace the faults are aimed at
    seconds: float = 0.0                        # what one case is estimated to cost (case_cost)
    states: float = 0.0                         # crash states a case gives the checker (sweep.new_states); 0: no checker
    judged: float = 0.0                         # a case's share of its checker's answers (sampling.checker_cost)
    pilots: dict = field(default_factory=dict)  # seconds timed on pilot cases (sweep.pilot_seconds): a fault case per fault_class, "powerloss" a crash point, "explore" once per process

    def count(self):
        return len(self.fixed) + len(self.faults) + len(self.points) * self.models


def cases_of(combo, out, settings, how="preload", again=None, stats=None,
             blind=""):
    """The cases of a combo from its baseline OUT (found_of), every one
    with settings.exhaustive or without settings.sample, else grouped and
    sampled with it (choose)."""
    found = found_of(combo, out, settings, how, again=again, blind=blind)
    sample = None if settings.exhaustive else settings.sample
    return choose(found, sample, settings.seed, stats)


def found_of(combo, out, settings, how="preload", again=None, blind=""):
    """Every case of a combo from its baseline OUT, recorded with the
    backend HOW, which runs them all (a Found): the baseline, the fault
    cases of the calls it made in its directory, the power-loss cases of
    its crash points, each of the last two with its group (select).
    AGAIN: other recorded runs of it and the globs of the files whose
    names change (record_again). Their calls on the work directory must
    be the baseline's: those made otherwise are named in the baseline's
    harness-error, and no case is aimed at them. BLIND: why the preload,
    asked for by name, does not see the program whole (record_baseline):
    the baseline is then a harness-error, and no case runs."""
    pre = combo.prefix
    run = out.run
    cases = []
    if run.skipped:
        reason = skip_reason(run)
        return Found([Case(id=f"{pre}-baseline", combo=pre, kind="baseline",
                           skip=reason, backend=how)])
    blind = scratch_trouble(out, combo) or \
        tracecut.trouble(out, baseline=True) or escapes(out) or \
        nothing_intercepted(combo, out, how) or uring_set_up(out) or blind
    if blind:
        # Every other case would judge a program the trace cannot see:
        # faults that never reach it, crash states without its writes.
        return Found([Case(id=f"{pre}-baseline", combo=pre, kind="baseline",
                           error=blind, backend=how)])
    workdir = str(out.workdir)
    others, globs = again or ([], {})
    moving = coords.moved((out.records, workdir), others, touches, globs) \
        if others else []
    if moving:
        cases.append(Case(id=f"{pre}-baseline", combo=pre, kind="baseline",
                          unstable=unstable_text(moving),
                          backend=how))
    elif "baseline" in settings.kinds:
        cases.append(Case(id=f"{pre}-baseline", combo=pre, kind="baseline",
                          backend=how))
    if getattr(combo.spec, "disk", "normal") == "full" and \
            "enospc" in settings.kinds:
        cases.append(Case(id=f"{pre}-{FULL_DISK}", combo=pre, kind="enospc",
                          call=FULL_DISK, disk="full", backend=how))
    skip = {c for c, _, _ in moving}
    names = coords.Coords(out.records, workdir, globs)
    table = calls.table()
    targeted = targeted_calls(out.records, out.workdir, settings.all_calls)
    faults_found = fault_cases(pre, targeted, names, skip, table, workdir,
                               settings, how)
    found = Found(cases, faults_found, calls=len(targeted))
    if "powerloss" in settings.kinds and run.status == 0:
        powerloss_cases(found, combo, out, settings, how, names, table)
    return found


def call_faults(rec, before, table):
    """The fault classes a traced call REC is faulted with (BEFORE: the
    targeted call before it, or None)."""
    call = rec["call"]
    faults = set(table[call].faults) if call in table else set()
    if (rec.get("len") or 0) < 2:
        faults.discard("short")     # nothing shorter than 1 byte to write
    if call in OPEN_CALLS and "O_CREAT" not in (rec.get("flags") or ()):
        # open(2) fails with ENOSPC only when it creates the file: an
        # open of an existing file (or a directory, for fsync) on a
        # full disk succeeds, so faulting it tests nothing real.
        faults.discard("enospc")
    if no_change(rec):
        # The call already fails in the recorded run (cp probing
        # whether its target is a directory): the program's success
        # does not rest on it, so an I/O error in its place says
        # nothing about the data. A crash before it is the crash
        # after the call before it, and after it the same again:
        # one crash case for a run of such calls (a loop of close()
        # failing with EBADF), before its first.
        faults &= {"crash"}
        if before is not None and no_change(before):
            faults = set()
    return faults


def fault_cases(pre, targeted, names, skip, table, workdir, settings, how):
    """[(group, Case)] of the fault cases of the TARGETED calls of combo
    PRE's baseline, in trace order; none at the coordinates in SKIP."""
    faults_found = []
    for i, rec in enumerate(targeted):
        coord = names[rec]
        if coord in skip:
            continue
        faults = call_faults(rec, targeted[i - 1] if i else None, table)
        sig = coords.signature(rec)
        site = call_site(rec, workdir)
        for kind, plan in fault_plans(coord, faults):
            if kind not in settings.kinds:
                continue
            if no_change(rec) and plan.endswith("=crash-after"):
                continue
            faults_found.append((
                site + (plan.rsplit("#", 1)[1].lstrip("0123456789"),),
                Case(id=f"{pre}-{plan}", combo=pre, kind=kind, plan=plan,
                     call=coord, at=rec["seq"], where=[sig[0], sig[1]],
                     backend=how)))
    return faults_found


def powerloss_cases(found, combo, out, settings, how, names, table):
    """Add to FOUND the power-loss cases of the crash points of a
    baseline OUT that exited 0, one per model of the sweep (and the real
    filesystem's, on one), grouped by crash point."""
    pre, workdir = combo.prefix, str(out.workdir)
    points = crash_point_records(out.records)
    real = [realfs.model_of(settings.fs)] if on_real_fs(combo, settings) \
        else []
    every = list(settings.models) + real
    found.models = len(every)
    # a crash point is the state after a call: grouped as the calls
    # are, by site and file; the two ends are points of their own
    for i, rec in enumerate(points):
        if not (rec is None or is_crash_point(rec, workdir, table)):
            continue
        key = ("start",) if rec is None and i == 0 else \
            ("exit",) if rec is None else call_site(rec, workdir)
        tag = "start" if i == 0 else "exit" if rec is None else names[rec]
        per_model = []
        for model in every:
            # a real case's run is aimed at the call as a fault is
            where = list(coords.signature(rec)[:2]) \
                if model in real and rec is not None else None
            per_model.append(Case(id=f"{pre}-powerloss@{tag}-{model}",
                                  combo=pre, kind="powerloss", call=tag,
                                  model=model, point=i,
                                  at=rec["seq"] if rec is not None
                                  else None,
                                  where=where, backend=how))
        found.points.append((key, per_model))


def unstable_text(moving, most=4):
    """The finding of a program whose calls two recorded runs made
    otherwise."""
    shown = "; ".join(f"{c}: {a} in one run, {b} in the other"
                      for c, a, b in moving[:most])
    more = f"; and {len(moving) - most} more" if len(moving) > most else ""
    return (f"nondeterministic: two recorded runs made {len(moving)} "
            f"call{'s' if len(moving) != 1 else ''} on the work directory "
            f"otherwise ({shown}{more}); no case is aimed at "
            f"{'them' if len(moving) != 1 else 'it'}")


def escapes(out):
    """Why the baseline OUT left a way out of its scratch: a symbolic
    link in its work directory (the target, most likely) to a file or
    directory outside, which every run would then write through, each
    case's runs on the same file out there, so that one case's writes
    land in another's state and the verdicts vary from run to run; ""
    when none. Such a sweep is refused, not judged."""
    scratch = os.path.realpath(out.scratch)
    todo = [os.fspath(out.workdir)]
    while todo:
        d = todo.pop()
        try:
            with os.scandir(d) as it:
                entries = list(it)
        except OSError:
            continue
        for e in entries:
            if e.is_symlink():
                real = os.path.realpath(e.path)
                if real != scratch and not real.startswith(scratch + "/"):
                    name = shown_path(e.path, out)
                    return (f"escapes the scratch: '{name}' is a symbolic "
                            f"link to '{os.readlink(e.path)}', outside "
                            "crashcheck's scratch: every run would write "
                            "through it to the same file there, and no "
                            "case could be judged on its own")
            elif e.is_dir(follow_symlinks=False):
                todo.append(e.path)
    return ""


# What a trace must show on the work directory for the sweep to see the
# program at work: a call that writes, maps or syncs, renames or unlinks a
# name, or creates or truncates a file.
SEEN_CLASSES = ("C_DATA", "C_SYNC", "C_MAP")
SEEN_NAME_CALLS = ("rename", "renameat", "renameat2", "unlink", "unlinkat",
                   "rmdir", "mkdir", "mkdirat", "link", "linkat", "symlink",
                   "symlinkat")
SEEN_OPEN_FLAGS = ("O_CREAT", "O_TRUNC")


def nothing_intercepted(combo, out, how="preload"):
    """Why the baseline's trace cannot stand for what the program did
    ("nothing intercepted: ..."), or "" when it can. A static binary
    under the preload (no init record: the library never loaded), raw
    system calls under the preload, io_uring or stores through a mapping
    never synced under either change files behind the backend's back: a
    sweep of such a trace has nothing to fault and no writes to lose, and
    would pass for nothing. HOW: the backend that recorded it."""
    if out.run.timed_out or out.run.signal is not None:
        # A program that hangs or dies of a signal before it writes has
        # its own verdict (hang, crashed), which says more than this.
        return ""
    prog = os.path.basename(out.run.argv[0]) if out.run.argv else "the program"
    changed = _changed(combo, out)
    if not any(r["ev"] == "init" for r in out.records):
        if how == "syscall":
            return (f"nothing intercepted: {prog} did not start under the "
                    f"system-call supervisor and {changed}")
        return (f"nothing intercepted: the fault library did not load in "
                f"{prog} (statically linked, or setuid?) and {changed}; "
                "the preload can neither fault nor record it (the "
                "system-call backend can: --backend=syscall or auto)")
    table = calls.table()
    for rec in targeted_calls(out.records, out.workdir):
        c = table.get(rec["call"])
        if (c is not None and c.cls in SEEN_CLASSES
                or rec["call"] in SEEN_NAME_CALLS
                or set(rec.get("flags") or ()) & set(SEEN_OPEN_FLAGS)):
            return ""
    if out.run.status:
        # most likely its own command line: say what it said (issue 30)
        return (f"nothing intercepted: {prog} {FAILED_ALONE} (exit status "
                f"{out.run.status}, no fault planned), its stderr ending: "
                f"{last_line(out.run.stderr_text())}; no write, sync, rename "
                f"or unlink in the work directory was traced "
                f"({len(trace.calls(out.records))} calls in all) and {changed}")
    unseen = ("io_uring or stores through a shared mapping it never syncs, "
              "which the system-call backend cannot see" if how == "syscall"
              else "raw system calls, io_uring or a statically linked "
              "helper, which the preload cannot see (--backend=syscall "
              "sees system calls)")
    return (f"nothing intercepted: no write, sync, rename or unlink in the "
            f"work directory was traced ({len(trace.calls(out.records))} "
            f"calls traced in all) and {changed}: the program writes "
            f"nothing there, or writes with {unseen}")


FAILED_ALONE = "failed on its own"


def last_line(text, width=200):
    """The last line of TEXT that is not blank, cut to WIDTH characters;
    "(nothing)" when there is none."""
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    if not lines:
        return "(nothing)"
    return lines[-1] if len(lines[-1]) <= width else lines[-1][:width] + "..."


def _changed(combo, out):
    """Whether the run changed its target (or its tree), as words."""
    if combo.start is not None:
        same = tree_digest(combo.start) == tree_digest(out.workdir)
        return ("the tree was left as it was" if same
                else "yet the tree changed")
    old, _ = contents(combo)
    path = out.workdir / target_name(combo.spec)
    now = path.read_bytes() if path.is_file() else None
    return ("the target was left as it was" if now == old
            else "yet the target changed")


def skip_reason(run):
    lines = run.stderr_text().strip().splitlines()
    return lines[-1] if lines else "the program exited 77 (not supported here)"


def backend_of(scratch):
    """(backend, why) of the baseline saved in SCRATCH (save_run);
    ("", "") when none was."""
    try:
        with open(Path(scratch) / "run.json") as fh:
            info = json.load(fh)
    except (OSError, ValueError):
        return "", ""
    return info.get("backend", "preload"), info.get("backend_why", "")


def backends(work, combos_):
    """{workload: {"backend": ..., "why": ...}} of a sweep's baselines
    (one entry per workload and backend: a workload's combos may differ),
    for the reports: which backend ran each program, and why."""
    out = {}
    for combo in combos_:
        how, why = backend_of(Path(work) / combo.prefix)
        if not how:
            continue
        entry = out.setdefault(combo.spec.name, [])
        if not any(e["backend"] == how and e["why"] == why for e in entry):
            entry.append({"backend": how, "why": why})
    return out


def load_run(scratch):
    """A baseline saved by enumerate_cases, as an Outcome."""
    with open(scratch / "run.json") as fh:
        info = json.load(fh)
    run = runner.Run(argv=info["argv"], status=info["status"],
                     signal=info["signal"], timed_out=info["timed_out"],
                     duration=info["duration"],
                     stdout=b"", stderr=info["stderr"].encode(),
                     stdout_size=info.get("stdout_size", 0),
                     stderr_size=info.get("stderr_size", 0),
                     trace_path=scratch / "trace.jsonl",
                     outlived=info.get("outlived", []),
                     outside=info.get("outside", []))
    return Outcome(run=run, scratch=scratch,
                   records=trace.load(scratch / "trace.jsonl"))


GLOBS = "globs.json"


def save_globs(scratch, globs):
    """The globs of the baseline's files whose names change from run to
    run (record_again), beside its run.json: a finding's defect is named
    by them (causes.describe)."""
    with open(Path(scratch) / GLOBS, "w") as fh:
        json.dump(globs, fh)


def load_globs(scratch):
    try:
        with open(Path(scratch) / GLOBS) as fh:
            globs = json.load(fh)
    except (OSError, ValueError):
        return {}
    return globs if isinstance(globs, dict) else {}


UNSEEN = "unseen.json"


def save_unseen(out):
    """What in the baseline run's tree changed by calls the trace does not
    show (explorer.unseen), beside its run.json: the power-loss cases and
    the fault cases judge what the trace shows, so the report must say
    what it did not."""
    with open(out.scratch / UNSEEN, "w") as fh:
        json.dump(unseen_of(out), fh)


def load_unseen(scratch):
    try:
        with open(Path(scratch) / UNSEEN) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return []


def unseen_text(u):
    """One line for an unseen change."""
    what = "changed" if u["what"] == "content" else "appeared, went or " \
        "changed as a name"
    where = "after the program exited" if u["at"] == "exit" else \
        f"seen at {u['at']}"
    return (f"'{u['path']}' {what} by a call crashcheck cannot see "
            f"({where}): no fault reached it, and no power cut was "
            f"simulated where it happened")


def save_run(out, how="preload", why=""):
    r = out.run
    info = {"argv": r.argv, "status": r.status, "signal": r.signal,
            "timed_out": r.timed_out, "duration": r.duration,
            "stderr": r.stderr_text(), "outlived": r.outlived,
            "outside": r.outside,
            # what it wrote in all (the text above keeps OUTPUT_CAP bytes)
            "stdout_size": r.stdout_size, "stderr_size": r.stderr_size,
            "backend": how, "backend_why": why}
    with open(out.scratch / "run.json", "w") as fh:
        json.dump(info, fh)
