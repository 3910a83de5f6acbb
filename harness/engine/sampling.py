"""Which cases run: --sample's choice of a few cases per group
(select, choose) and the time budget that decides whether a sweep runs
every case or a sample (case_cost, estimate_of, choose_sample; --budget).
Pure functions of what baseline.found_of lists (Found)."""

import random
from pathlib import Path

from .cases import Settings

# How many cases of a group (select) are sampled between its first and
# its last by --sample when it is given without a number of its own
SAMPLE = 3

# What a case costs, against its combo's baseline: a case is a run of
# the program (forked from a server, traced lightly up to its fault),
# judged, its crash states explored, its result written. The run is
# timed as record_again makes it (traced, no snapshots; the baseline's
# own run, which snapshots every change, where there is none): a case
# costs CASE_FACTOR times that plus CASE_OVERHEAD seconds of judging.
# Measured 2026-12-06 on two loaded cores (estimate / wall time of the
# sweep's cases): dd bs=1 of 300 bytes 1.6 (2431 cases, 10.4 s), of
# 3000 bytes about 3 (every case of a group costs little more than its
# first), `make run` 0.65 (4755 cases, 54.7 s, a load of 7): it errs
# long for programs of many calls, where a sample is cheap to take.
CASE_FACTOR = 1.0
CASE_OVERHEAD = 0.005
# What a crash state costs beside its checker's answer: laid out in a
# directory, the answer read and kept. Measured 2026-12-07 on every case
# of git and Mercurial, quiet: the sweep's wall time on its two jobs
# less its runs, over the distinct states, is the answer (0.016 and
# 0.0095 s) and its audits' share, and 0.005 to 0.014 s more.
STATE_OVERHEAD = 0.005


def case_cost(baseline_seconds, checker=0.0, states=1.0):
    """The estimated seconds of one case of a combo whose program ran in
    BASELINE_SECONDS (wall time, one process; see CASE_FACTOR), and whose
    checker (a check or tree contract) took CHECKER seconds on the
    baseline's directory and answers for STATES crash states a case adds
    to those the sweep has judged (the checker runs once per distinct
    state; sweep.new_states): a checker of half a second outweighs
    everything else a case costs."""
    return CASE_OVERHEAD + CASE_FACTOR * baseline_seconds + \
        checker_cost(checker, states)


def checker_cost(checker, states):
    """A case's share of its checker's answers (case_cost): CHECKER
    seconds an answer for each of the STATES crash states it adds."""
    return (checker + STATE_OVERHEAD) * states if checker else 0.0


# A fault case may cost far more than its combo's run: one whose program
# goes on after its fault to exit has the crash states of its whole
# trace explored and judged; one killed at its fault, or that stops
# there, costs the run up to it. A power-loss case runs nothing: each
# process explores the baseline's trace once (per model), and then a
# case judges its point's states. case_cost cannot tell these apart, so
# where a combo's cases alone would take more than PILOT_SHARE of the
# budget, PILOTS cases of each class of fault (fault_class) and PILOTS
# crash points are run and timed as the sweep runs them, spread over the
# trace (sweep.pilot_seconds): a fault case of a class is estimated at
# its pilots' mean, a crash point at its second pilot's time (all models
# together), and each process's exploration at what the first took more
# than the second, each less the time its checker took, for which a
# case is charged its share of the checker's answers as case_cost does
# (Found.judged): the pilots are the first cases judged, and pay for
# every state, which the sweep's later cases mostly find answered (git:
# pilots with their checker's time estimated every case at 7 min 16 s,
# for 3 min 48 s). Measured 2026-12-07 on examples/apps/sqlite-scale.toml
# (every case timed under a load of 3): its cases that ran on after an
# EIO took 5 to 10 s where case_cost said 0.77 s, those killed at their
# call 0.02 to 1 s, a power-loss case 0.3 s.
PILOT_SHARE = 0.25
PILOTS = 2


def fault_class(case):
    """The class of a fault case whose cost its pilots measure: 'crash'
    (killed at its call, its run ends there) or 'error' (the call fails
    and the program decides what follows)."""
    return "crash" if case.kind == "crash" else "error"


def pilot_wanted(found, settings):
    """Whether FOUND's cases are worth timing (sweep.pilot_seconds): the
    sweep may be sampled (a budget, no --exhaustive, --sample or
    --shard), the combo has fault cases or crash points, and the estimate
    (case_cost's, none timed yet) puts its cases past PILOT_SHARE of the
    budget on the sweep's jobs."""
    if settings.exhaustive or settings.sample is not None or \
            settings.sharded or not settings.budget or \
            not (found.faults or found.points):
        return False
    return estimate_of([found], None, settings.seed,
                       settings.spread or settings.jobs) > \
        PILOT_SHARE * settings.budget


def estimate_of(everything, sample, seed, jobs):
    """Seconds of wall time the cases of EVERYTHING (Found) chosen with
    SAMPLE take on JOBS processes, as case_cost estimates them or, for a
    combo whose cases were timed beforehand, as its pilots say
    (seconds_kept)."""
    total = 0.0
    for found in everything:
        total += seconds_kept(found, sample, jobs)
    return total / max(1, jobs)


def seconds_kept(found, sample, jobs=1):
    """The estimated seconds of the cases of FOUND that choose(FOUND,
    SAMPLE) keeps, JOBS processes sharing them."""
    point = found.pilots.get("powerloss")
    fault = kept_seconds(
        found.faults, sample,
        lambda case: found.pilots[fault_class(case)] + found.judged
        if fault_class(case) in found.pilots else found.seconds)
    if point is None:
        points = kept_seconds(found.points, sample,
                              lambda cases: found.seconds * len(cases))
    else:
        points = kept_seconds(
            found.points, sample,
            lambda cases: point + found.judged * len(cases))
        kept = kept_seconds(found.points, sample, lambda cases: 1.0)
        # each process that judges a crash point explores the trace once
        points += found.pilots.get("explore", 0.0) * min(max(1, jobs), kept)
    return found.seconds * len(found.fixed) + fault + points


def kept_seconds(items, sample, cost):
    """The sum of COST(item) over the (group, item) pairs of ITEMS that
    select keeps with SAMPLE (a group is one kind of case: its first
    item's cost stands for all)."""
    sizes, costs = {}, {}
    for key, item in items:
        sizes[key] = sizes.get(key, 0) + 1
        costs.setdefault(key, cost(item))
    return sum(costs[key] * (size if sample is None
                             else min(size, sample + 2))
               for key, size in sizes.items())


def choose_sample(everything, settings):
    """(sample, estimate): how many cases of each group run between its
    first and last (None: every case) and the seconds every case would
    take. Every case with --exhaustive, and where the estimate fits
    settings.budget; --sample N samples N whatever the budget; a shard
    of a run (--shard) runs every case unless told --sample, as its
    estimate is this machine's and the shards must agree on the cases.
    Past the budget, the largest sample that fits it, down to the first
    and the last of each group."""
    jobs = settings.spread or settings.jobs
    whole = estimate_of(everything, None, settings.seed, jobs)
    if settings.exhaustive:
        return None, whole
    if settings.sample is not None:
        return settings.sample, whole
    if settings.sharded or settings.budget is None or \
            whole <= settings.budget:
        return None, whole
    lo, hi = 0, max((found.count() for found in everything), default=0)
    if estimate_of(everything, hi, settings.seed, jobs) \
            <= settings.budget:
        return None, whole
    # the estimate grows with the sample: the largest that fits
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if estimate_of(everything, mid, settings.seed, jobs) \
                <= settings.budget:
            lo = mid
        else:
            hi = mid - 1
    return lo, whole


def sampled_line(grouping):
    """The console's line, and the reports' fact, of a sweep that left
    cases out: 'SAMPLED 90 of 405 cases (...)'."""
    g = grouping
    if g.get("budget") is not None and g.get("estimate") is not None and \
            g["estimate"] > g["budget"]:
        why = (f"every case would take about {duration_text(g['estimate'])} "
               f"on {g.get('jobs', 1)} "
               f"job{'s' if g.get('jobs', 1) != 1 else ''}, past the "
               f"{duration_text(g['budget'])} budget (--budget)")
    else:
        why = "as --sample asks"
    return (f"SAMPLED {g['kept']} of {g['cases']} cases: {why}; of each of "
            f"{g['groups']} groups of a call site, file and fault the first, "
            f"the last and {g['sample']} sampled with seed {g['seed']}; "
            "--exhaustive for every one")


def duration_text(seconds):
    """'0.6 s', '45 s', '3 min 5 s', '2 h 10 min'."""
    if seconds < 9.95:
        return f"{seconds:.1f} s"
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min" + (f" {s % 60} s" if s % 60 else "")
    return f"{s // 3600} h" + (f" {s % 3600 // 60} min" if s % 3600 // 60
                               else "")


def choose(found, sample, seed, stats=None):
    """The cases of FOUND that run, in the order the sweep runs them:
    every one with SAMPLE None, else of each group the first, the last
    and SAMPLE between them (select, seeded by SEED). STATS, a dict,
    gets what select counted."""
    pick = Settings(out=Path("."), exhaustive=sample is None,
                    sample=sample or 0, seed=seed)
    cases = list(found.fixed)
    if stats is not None and cases:
        stats["cases"] = stats.get("cases", 0) + len(cases)
        stats["kept"] = stats.get("kept", 0) + len(cases)
    if stats is not None:
        stats["calls"] = stats.get("calls", 0) + found.calls
    cases += select(found.faults, pick, stats)
    if found.points:
        kept = select(found.points, pick, stats, models=found.models)
        # a model's cases, then the next model's (and the real kernel's
        # last: Judge.real_powerloss)
        for m in range(found.models):
            cases += [per_model[m] for per_model in kept]
    return cases


def select(found, settings, stats=None, models=1):
    """The items of FOUND, a list of (group, item) in trace order, that
    the sweep runs: cases in proportion to what a program does, not to
    how many calls it makes. A program that writes a file one byte at a
    time makes thousands of calls from one call site on one file, and
    every one faulted alike tells little more than a few: of each group
    the first, the last and settings.sample (SAMPLE when None) drawn
    between them with a random.Random seeded by the sweep's seed and the
    group, so the same sweep keeps the same cases. settings.exhaustive
    keeps every item.
    STATS (a dict) counts groups, cases found and kept (MODELS cases per
    item: a crash point is one case per model)."""
    groups = {}
    for i, (key, _) in enumerate(found):
        groups.setdefault(key, []).append(i)
    if settings.exhaustive:
        keep = range(len(found))
    else:
        sample = SAMPLE if settings.sample is None else settings.sample
        keep = set()
        for key, idx in groups.items():
            if len(idx) <= sample + 2:
                keep.update(idx)
                continue
            rng = random.Random(f"{settings.seed}\0" + "\0".join(key))
            keep.update((idx[0], idx[-1]))
            keep.update(rng.sample(idx[1:-1], sample))
        keep = sorted(keep)
    if stats is not None:
        stats["groups"] = stats.get("groups", 0) + len(groups) * models
        stats["cases"] = stats.get("cases", 0) + len(found) * models
        stats["kept"] = stats.get("kept", 0) + len(keep) * models
    return [found[i][1] for i in keep]
