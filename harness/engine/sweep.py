"""The sweep: from workload specs to the cases that run.

For each spec x strategy x payload size (a *combo*) the sweep first makes
one recorded run with no fault: it is the baseline case, the trace every
other case is enumerated from, and the source of the power-loss cases.
Then, for every call the trace shows touching the scratch directory, one
case per fault class that applies to that call (faults/calls.def), and one
power-loss case per crash point and model. Call numbers come from the
trace, so nothing here knows how many writes a program makes.

Enumeration (`enumerate_cases`) runs once, before pytest collects; each
case is then executed and judged by judge.Judge.execute in whichever
pytest worker gets it. Both sides share only the work directory on disk.

Where the rest lives: cases.py (Settings, Combo, Case), execute.py (one
program run), records.py (what its trace says), baseline.py (a combo's
baseline and its cases), sampling.py (which cases run), judge.py (a
case's verdict), results.py (what a result leaves).
"""

import errno
import itertools
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path

from .. import size_text
from . import checkserver, pool, runner
from ..judging import explorer
from .cases import Case, combos, contents, old_size, target_name
from .execute import (ScratchFull, full_text, scratch_trouble,
                      start_tree)
from .sampling import (PILOT_SHARE, PILOTS, case_cost, checker_cost, choose,
                       choose_sample, estimate_of, fault_class, pilot_wanted,
                       sampled_line)
from .baseline import (Found, RUNS_PREFIX, WORK_PREFIX, backend_of, found_of,
                       load_unseen, record_again, record_baseline, save_globs,
                       save_run, save_unseen, timeout_of, unseen_text)
from .checker import SERVER_AUDIT_EVERY, CheckerFailed
from .judge import Judge


def enumerate_cases(specs, settings, log=print):
    """Run every combo's baseline (in parallel), then list the cases.
    Returns (cases, combos by prefix). The baselines stay in the work
    directory: their traces feed the power-loss cases. Unless --keep, the
    work directory is a link into scratch: remove it with remove_work()
    (removing the results directory would leave the scratch behind).
    runner.SetupError, naming the spec, where a baseline's program cannot
    start."""
    all_combos = list(combos(specs))
    work = make_work(specs, settings, all_combos)
    runs = len(all_combos)
    log(f"crashcheck: recording {runs} baseline run{'' if runs == 1 else 's'} "
        f"({settings.jobs} job{'' if settings.jobs == 1 else 's'})")
    everything = record_baselines(all_combos, work, settings, log)
    cases = chosen_cases(everything, work, settings, log)
    # What the baselines took says what the cases will: each pool process
    # lays out one case at a time, as large as the largest baseline's
    used = max((disk_usage(work / c.prefix) for c in all_combos), default=0)
    check_room(settings.jobs * 2 * used + (1 << 20),
               f"{settings.jobs} cases at a time, as large as its largest "
               f"baseline ({size_text(used)})")
    return cases, {c.prefix: c for c in all_combos}


def make_work(specs, settings, all_combos):
    """The sweep's work directory, made anew (settings.work): a link
    RESULTS/.work into scratch, with the trees' starts built in it."""
    link = settings.work_link
    remove_work(link, refuse=True)
    check_room(room_needed(specs, settings.jobs),
               f"its {len(all_combos)} baselines and {settings.jobs} cases "
               "at a time")
    # The baselines run and stay in scratch (tmpfs), with --keep too (its
    # runs must be the others', on the same file system: a program's
    # rename from its TMPDIR must not turn EXDEV): in the results
    # directory, on a disk, they cost real fsyncs and a slow removal (a
    # 143-combo sweep's fixed part: 1.8 s -> 0.75 s). .work is a link to
    # it, so every process finds it where it always was; with --keep it is
    # copied there at the end (keep_work).
    link.parent.mkdir(parents=True, exist_ok=True)
    # removed by the watchdog should this process be killed outright
    scratch = runner.make_scratch(WORK_PREFIX)
    os.symlink(scratch, link)
    work = settings.work
    # the trees' starts, once each, before any run copies them
    for combo in all_combos:
        start_tree(combo, work)
    return work


def combo_baseline(combo, work, settings, log=None):
    """The Found of one combo, its baseline recorded in WORK/<combo> (and
    saved there with what the judge reads back); runner.SetupError as a
    value, naming the spec, where its program cannot start or the
    scratch is full (a value crosses the pool as it is). LOG says
    when its cases are timed first (pilot_seconds)."""
    scratch = work / combo.prefix
    scratch.mkdir()
    try:
        began = time.monotonic()
        out, how, why = record_baseline(combo, scratch, settings)
        took = time.monotonic() - began
        if scratch_trouble(out, combo):
            # stopped for the scratch: its files and snapshots say
            # nothing, and may fill what the harness still writes
            for d in (out.workdir, out.snapdir):
                shutil.rmtree(d, ignore_errors=True)
        save_run(out, how, why)
        runs = []
        again = record_again(combo, out, settings, how, took=runs)
        if runs:
            # a run traced without snapshots, as a case's is
            took = min(runs)
        save_globs(scratch, again[1])
        found = found_of(combo, out, settings, how, again=again,
                         blind=why if why.startswith("not seen whole")
                         else "")
        checker = checker_seconds(combo, out, settings)
        if checker:
            found.states = new_states(combo, out, settings, found)
        found.seconds = case_cost(took, checker, found.states or 1.0)
        found.judged = checker_cost(checker, found.states or 1.0)
        if not any(c.error or c.skip for c in found.fixed):
            save_unseen(out)
            if pilot_wanted(found, settings):
                found.pilots = pilot_seconds(combo, found, settings, log)
        return found
    except runner.SetupError as e:
        # a program that cannot start (not found, not executable): the
        # user's to mend, said in one line; a value, so that it
        # crosses the pool as it is
        return runner.SetupError(f"{combo.spec.name}: {e}")
    except ScratchFull as e:
        return runner.SetupError(f"{combo.spec.name}: {e}")
    except OSError as e:
        if e.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        return runner.SetupError(f"{combo.spec.name}: "
                                 f"{full_text(scratch, e)}")


def record_baselines(all_combos, work, settings, log):
    """Every combo's Found (combo_baseline), in the order of ALL_COMBOS,
    with what each baseline says logged; raises a combo's
    runner.SetupError."""
    def baseline(i):
        return combo_baseline(all_combos[i], work, settings, log)

    # In processes of their own (harness/engine/pool.py), like the cases: a
    # baseline is a run plus its trace and crash points to read, which in
    # threads of this process would queue on one interpreter. One alone
    # too: what it reads (sqlite-scale's 38,000 calls) and its pilots'
    # judging would stay in this process's heap, which every case's
    # process is forked from (the scale recipe's peak, all processes:
    # 2,397 MiB with its baseline and pilots here, against a goal of 2 GiB).
    if not all_combos:
        return []
    jobs = max(1, min(settings.jobs, len(all_combos)))
    # a few at a time, as the cases go (plugin.Sweep.start_pool)
    workers, results = pool.start(baseline, range(len(all_combos)), jobs,
                                  pool.chunk_size(len(all_combos), jobs, 8))
    everything = []
    finished = False
    try:
        for combo, (found, error) in zip(all_combos, results):
            everything.append(baseline_said(combo, found, error, work, log))
        finished = True
    finally:
        pool.stop(workers, finished)
    return everything


def baseline_said(combo, found, error, work, log):
    """FOUND, the combo's baseline's (or a Found of one baseline case
    saying ERROR, the pool's failure), with what it says logged: the
    backend it chose, its errors, the changes it could not see. Raises
    FOUND when it is a runner.SetupError."""
    if error is not None:
        # the combo's baseline case says so; its other cases
        # cannot be enumerated without it
        found = Found([Case(id=f"{combo.prefix}-baseline",
                            combo=combo.prefix, kind="baseline",
                            error="the baseline could not be "
                                  "recorded: " + failure_line(error))])
    if isinstance(found, runner.SetupError):
        raise found
    how, why = backend_of(work / combo.prefix)
    if how == "syscall" and why:
        log(f"crashcheck: {combo.prefix}: system-call backend: {why}")
    for c in found.fixed:
        if c.error:
            log(f"crashcheck: {combo.prefix}: {c.error}")
    for u in load_unseen(work / combo.prefix):
        log(f"crashcheck: warning: {combo.prefix}: {unseen_text(u)}")
    return found


def chosen_cases(everything, work, settings, log):
    """The cases of EVERYTHING (each combo's Found) that run, as the
    sample and the budget choose them (sampling.py), with the choice
    written to WORK/GROUPING_FILE and said when it leaves cases out."""
    sample, estimate = choose_sample(everything, settings)
    totals = {}
    cases = []
    for found in everything:
        cases += choose(found, sample, settings.seed, totals)
    totals.setdefault("cases", 0)
    totals.setdefault("kept", 0)
    totals.setdefault("groups", 0)
    grouping = dict(exhaustive=sample is None, sample=sample,
                    seed=settings.seed, budget=settings.budget,
                    estimate=round(estimate, 1),
                    jobs=settings.spread or settings.jobs,
                    **totals)
    grouping["estimate_kept"] = round(estimate_of(
        everything, sample, settings.seed, grouping["jobs"]), 1)
    states = {combo_of(f): round(f.states, 1)
              for f in everything if f.states}
    if states:
        grouping["checker_states"] = states
    pilots = {combo_of(f): {cls: round(t, 6) for cls, t in
                            sorted(f.pilots.items())}
              for f in everything if f.pilots}
    if pilots:
        grouping["pilots"] = pilots
    with open(work / GROUPING_FILE, "w") as fh:
        json.dump(grouping, fh)
    if totals["cases"] > totals["kept"]:
        log("crashcheck: " + sampled_line(grouping))
    return cases


GROUPING_FILE = "grouping.json"


def combo_of(found):
    """The prefix of the combo whose cases FOUND lists."""
    for c in itertools.chain(found.fixed, (c for _, c in found.faults),
                             (c for _, per in found.points for c in per)):
        return c.combo
    return ""


def spread(items, n):
    """N of ITEMS spread evenly over them (the middle one for one), the
    same on every run; all of them when there are no more than N."""
    return [items[(2 * i + 1) * len(items) // (2 * n)]
            for i in range(min(n, len(items)))]


def pilots_of(found):
    """{fault_class: [Case]}: PILOTS fault cases of each class of FOUND,
    spread over the class's cases in trace order."""
    by = {}
    for _, case in found.faults:
        by.setdefault(fault_class(case), []).append(case)
    return {cls: spread(cases, PILOTS) for cls, cases in by.items()}


def pilot_seconds(combo, found, settings, log=None):
    """What the pilots of FOUND took, each run and judged as the sweep's
    own process would (a fork server, a scratch as long as the cases'),
    its result dropped (the sweep runs the case again if it keeps it):
    {fault_class: the mean seconds of its pilots (pilots_of)} and, for
    PILOTS crash points spread over the trace, "powerloss", what the
    second point's cases (every model) took, and "explore", what the
    first's took more (the trace explored, once a process), each less
    what its checker took (sampling.PILOT_SHARE says why). Whatever a
    pilot's verdict (one that hung, a checker that failed), its time is
    what its case will cost. Pilots stop once they have taken
    PILOT_SHARE of the budget: a class not reached by then is
    case_cost's (a pilot that hangs runs to its case's time limit).
    LOG, where given, says so first: they hold up the baselines."""
    faults = pilots_of(found)
    points = spread([per for _, per in found.points], PILOTS)
    if len(points) < PILOTS:
        points = []
    if log is not None:
        n = sum(map(len, faults.values())) + sum(map(len, points))
        log(f"crashcheck: {combo.prefix}: timing {n} of its {found.count()} "
            "cases first, for the budget's estimate (--budget)")
    judge = Judge([combo.spec], settings)
    judge.scratch_root = runner.make_scratch(RUNS_PREFIX)
    allowance = PILOT_SHARE * settings.budget
    began = time.monotonic()

    checking = [0, 0.0]     # calls of the checker under way, seconds in it

    def timed(method):
        def call(*args, **kwargs):
            checking[0] += 1
            start = time.monotonic()
            try:
                return method(*args, **kwargs)
            finally:
                checking[0] -= 1
                if not checking[0]:
                    checking[1] += time.monotonic() - start
        return call

    # the checker's time, apart: a case is charged its share of it
    judge.run_checker = timed(judge.run_checker)
    judge.check = timed(judge.check)

    def took(case):
        start, checked = time.monotonic(), checking[1]
        judge.execute(case)
        return time.monotonic() - start - (checking[1] - checked)

    seconds = {}
    try:
        for cls, cases in faults.items():
            times = []
            for case in cases:
                if time.monotonic() - began > allowance:
                    break
                times.append(took(case))
            if times:
                seconds[cls] = sum(times) / len(times)
        if points and time.monotonic() - began <= allowance:
            judge.want_points([c for per in points for c in per])
            first, second = ([took(c) for c in per] for per in points)
            seconds["powerloss"] = sum(second)
            seconds["explore"] = max(0.0, sum(first) - sum(second))
    finally:
        judge.close_server()
        shutil.rmtree(judge.scratch_root, ignore_errors=True)
    return seconds


def checker_seconds(combo, out, settings):
    """Seconds the combo's checker takes on its baseline's directory, or
    0.0: no checker (the built-in contracts), a baseline that did not
    exit 0, a checker that cannot answer (the baseline case says so).
    The answer is kept (CheckCache) as the baseline case's own: that
    case asks the same of the same directory, and the checker runs no
    more often for being timed here. A check_server is timed on the
    middle of three answers about a copy of the directory, after a first
    that includes its start-up (a sweep process pays that once), with
    its share of the plain checks that audit it."""
    if combo.spec.contract not in ("check", "tree") or out.run.status != 0 \
            or not out.workdir.is_dir():
        return 0.0
    judge = Judge([combo.spec], settings)
    began = time.monotonic()
    try:
        judge.check(combo, out.workdir, "new")
    except (CheckerFailed, OSError):
        return 0.0
    took = time.monotonic() - began
    if combo.spec.check_server is None:
        return took
    # a server's answer, and its share of the checks that audit it
    # (one state in SERVER_AUDIT_EVERY is asked of check too)
    served = served_seconds(judge, combo, out, settings)
    return served + took / SERVER_AUDIT_EVERY if served else 0.0


# new_states builds the crash states of at most WINDOWS runs of WINDOW
# consecutive crash points: a point's states are mostly its neighbours'
# (one call apart), so points taken one by one across the trace would
# share few and count many states no case adds.
WINDOWS = 8
WINDOW = 8
# The share of a fault case's after-exit states that no other case
# judged: its run went otherwise from its fault on. Measured 2026-12-07
# on every case of git (0.63) and Mercurial (0.87): the distinct states
# of the sweep less those of its power-loss cases, over the fault
# cases' states.
FAULT_NEW = 0.75
# The kinds of fault case whose run goes on to exit and is judged at its
# after-exit crash point; a crash (kill) case judges the one tree left.
RUN_ON = ("eintr", "short", "enospc", "eio")


def new_states(combo, out, settings, found):
    """About how many crash states a case of FOUND gives its combo's
    checker that the sweep has not judged before (the checker answers
    once per distinct state), at least 1.0. Counted on the baseline's
    crash points under the sweep's models, on at most WINDOWS x WINDOW
    of them: a power-loss case adds the distinct states of those points
    over their cases; a fault case that runs on to exit, FAULT_NEW of
    the states of the baseline's after-exit point; the baseline as
    many; any other case one tree."""
    models = [m for m in settings.models if m in explorer.MODELS]
    if not models:
        return 1.0
    cases = sorted({c.point for _, per in found.points for c in per})
    points = cases
    if len(points) > WINDOWS * WINDOW:
        step = len(points) / WINDOWS
        points = [points[int(i * step) + j]
                  for i in range(WINDOWS) for j in range(WINDOW)]
    keys, at_exit = set(), 0
    last = len(explorer.crash_points(out.records)) - 1     # after exit
    try:
        for model in models:
            explored = explorer.explore(
                out.records, out.snapdir, model, target_name(combo.spec),
                cap=settings.cap, seed=settings.seed, exit_ok=True,
                blob_cache=out.blobs,
                sector=settings.sector or combo.spec.sector,
                points=set(points) | {last})
            at_exit += len(explored[-1].states)
            for i in points:
                keys.update(s.key for s in explored[i].states)
    except (explorer.ExplorerError, OSError):
        return 1.0
    at_exit /= len(models)
    total = len(found.fixed) * at_exit
    if points:
        # of each point's states, the share not another point's
        total += len(keys) * len(cases) / len(points)
    for _, c in found.faults:
        total += FAULT_NEW * at_exit if c.kind in RUN_ON else 1.0
    return max(1.0, total / max(1, found.count()))


def served_seconds(judge, combo, out, settings):
    """checker_seconds of a spec with a check_server (0.0: it cannot
    answer; its cases will say so)."""
    server = judge.check_server(combo)
    limit = timeout_of(combo, settings)
    copy = judge.state_dir(server)
    try:
        shutil.copytree(out.workdir, copy, symlinks=True, dirs_exist_ok=True)
        server.ask(copy, "new", limit)
        took = []
        for _ in range(3):
            began = time.monotonic()
            server.ask(copy, "new", limit)
            took.append(time.monotonic() - began)
        # the middle one: an answer of a few hundredths of a second is
        # one the machine's other work may double
        return sorted(took)[1]
    except (checkserver.ServerFailed, OSError, shutil.Error):
        return 0.0
    finally:
        shutil.rmtree(copy, ignore_errors=True)


def disk_usage(path):
    """Bytes the files under PATH take on their file system."""
    total = 0
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                pass
    return total


def room_needed(specs, jobs):
    """Bytes of scratch a sweep of SPECS with JOBS processes needs, as
    far as can be told before it runs: each combo's baseline keeps its
    old and new contents and snapshots of them (four times both), and
    each process lays out a case as large."""
    sizes = []
    for c in combos(specs):
        own = getattr(c.spec, "contents", None)
        if own is not None:
            old, new = contents(c)
            n = len(new) + (len(old) if old is not None else 0)
        else:
            n = c.size + (old_size(c.size) if c.spec.old != "absent" else 0)
        sizes.append(4 * n + (64 << 10))
    return sum(sizes) + jobs * max(sizes, default=0)


def check_room(need, what):
    """runner.SetupError, one line, where the scratch has less than NEED
    bytes free for WHAT."""
    base = runner.scratch_base()
    try:
        free = runner.free_bytes(base)
    except OSError as e:
        raise runner.SetupError(f"scratch '{base}': {e.strerror}") from None
    if free < need:
        raise runner.SetupError(
            f"scratch '{base}' has {size_text(free)} free; this sweep needs "
            f"about {size_text(need)} ({what}): free some, or give --scratch "
            "DIR on a larger file system")


def default_limit(jobs):
    """The scratch limit of a run when --scratch-limit is not given: a
    share of what the scratch has free, between the JOBS processes and
    the baselines, and a smaller one of the memory the harness reads a
    run's files into (a file is replayed whole, several crash states of
    it at a time: a 1 GiB file took 6 GiB); at least 16 MiB."""
    try:
        free = runner.free_bytes(runner.scratch_base())
    except OSError:
        free = 1 << 30
    try:
        with open("/proc/meminfo") as fh:
            mem = next(int(line.split()[1]) << 10 for line in fh
                       if line.startswith("MemAvailable:"))
    except (OSError, StopIteration, ValueError, IndexError):
        mem = free
    return max(16 << 20, min(free // (4 * (jobs + 1)),
                             mem // (16 * (jobs + 1))))


def parse_size(text):
    """'512M', '2G', '1048576', '64KiB' -> bytes; ValueError naming the
    problem."""
    m = re.fullmatch(r"\s*(\d+)\s*([kmgt]?)(i?b)?\s*", text or "", re.I)
    if not m:
        raise ValueError(f"'{text}' is not a size (a number of bytes, or "
                         "with K, M, G or T)")
    n = int(m[1]) << {"": 0, "k": 10, "m": 20, "g": 30, "t": 40}[m[2].lower()]
    if n < 1 << 20:
        raise ValueError(f"'{text}' is less than 1 MiB")
    return n


def stops_sweep(e):
    """Whether exception E is pytest.exit's, which the plugin raises on
    SIGTERM and SIGHUP (plugin._terminated) to end the sweep: it derives
    from Exception, and taken for the failure of the case or baseline
    it interrupted it would let the sweep go on."""
    outcomes = sys.modules.get("_pytest.outcomes")
    return outcomes is not None and isinstance(e, outcomes.Exit)


def failure_line(error):
    """The one line of a failure's text (a traceback, or how a pool
    process died) that says what went wrong: its last."""
    lines = [line.strip() for line in str(error).strip().splitlines()
             if line.strip()]
    if not lines:
        return "unknown error"
    # a traceback's last line names the class: not crashcheck's own
    last = re.sub(r"^harness(\.\w+)+\.(SetupError|UsageError|"
                  r"ConfineError|ContainError): ", "", lines[-1])
    return last


def remove_work(work, refuse=False):
    """Remove a sweep's work directory: the link and the scratch directory
    it points to (one of ours, by its name), or a directory a --keep run
    left (ours: it holds CASES_FILE). Anything else there stays:
    crashcheck never removes what it did not make; with REFUSE it is a
    runner.SetupError."""
    work = Path(work)
    if work.is_symlink():
        target = Path(os.readlink(work))
        if target.name.startswith(WORK_PREFIX) and \
                target.parent == runner.scratch_base():
            shutil.rmtree(target, ignore_errors=True)
            work.unlink()
        elif refuse:
            # a link of the user's: neither followed nor removed
            raise runner.SetupError(
                f"--out: '{work}' is a symbolic link crashcheck did not "
                "make: move it away")
    elif work.is_dir() and (work / CASES_FILE).is_file():
        shutil.rmtree(work, ignore_errors=True)
    elif os.path.lexists(work) and refuse:
        raise runner.SetupError(
            f"--out: '{work}' is not crashcheck's work directory (a file or "
            "directory of yours?): move it away")


# the case list a sweep writes into its work directory (plugin.py)
CASES_FILE = "cases.json"


def keep_work(work):
    """--keep: the work directory, which ran in scratch like every run's,
    copied into the results as a plain directory, and the scratch removed."""
    work = Path(work)
    if not work.is_symlink():
        return
    target = Path(os.readlink(work))
    aside = work.with_name(work.name + ".kept")
    shutil.rmtree(aside, ignore_errors=True)
    shutil.copytree(target, aside, symlinks=True)
    work.unlink()
    aside.rename(work)
    if target.name.startswith(WORK_PREFIX) and \
            target.parent == runner.scratch_base():
        shutil.rmtree(target, ignore_errors=True)
