"""The end of a sweep's session, in the process that ran it (or xdist's
controller): every case's result gathered, a harness-error for each
selected case that has none, results.json and the reports written
(report.write_all, sarif), the case directories of earlier runs pruned,
and the console's story (story). plugin.py's pytest_sessionfinish and
pytest_terminal_summary call it.
"""

import hashlib
import json
import signal
import sys
import time
from pathlib import Path

import pytest

from .. import tree_path
from ..reports import console, lessons, regress, report, sarif, words
from . import (baseline as baselinemod, cases as casesmod, checker, outdir,
               results as resultsmod, sweep, unjudgeable)


# a case of the session could not be recorded within crashcheck's own
# scratch (its room or --scratch-limit): the machine's to mend, not the
# program's, and the command exits 2 as for a scratch too small at the
# start (commands/run.py's sweep)
SCRATCH_SHORT = False


def finish(session, exitstatus, state):
    """The controller's end of the session: every case's result gathered
    (this process's, and xdist workers' from the work directory), the
    reports written, the story told where pytest will not (a signal), and
    the session failed for what no single case fails for: a buggy variant
    not caught, or under --strict a change crashcheck could not see."""
    config = session.config
    results = list(state.collected.values())
    rdir = state.work / "results"
    if rdir.is_dir():               # xdist's workers leave theirs here
        for p in rdir.iterdir():
            with open(p) as fh:
                results.append(json.load(fh))
    stopped = stopped_by(session, exitstatus, state)
    results = every_case(state, results, stopped)
    not_caught = write_reports(config, state, results, stopped)
    if stopped:
        # pytest prints no summary after a signal: the story is told here
        say_interrupted(config, state)
    if not_caught and session.exitstatus == 0:
        session.exitstatus = 1
    if state.meta.get("unseen") and config.getoption("--cc-strict") \
            and session.exitstatus == 0:
        session.exitstatus = 1


def say_interrupted(config, state):
    """The summary's first sentence and where the reports are, after a
    signal (pytest prints no summary then)."""
    tw = config.pluginmanager.get_plugin("terminalreporter")
    line = words.summary_sentences(state.summary)[0]
    out = state.settings.out
    for text in (f"crashcheck: {line}",
                 f"crashcheck: reports: {out / 'report.md'}, "
                 f"{out / 'report.html'}, {out / 'results.json'}, "
                 f"{out / 'junit.xml'}"):
        if tw is not None:
            tw.write_line(text)
        else:
            print(text, flush=True)


def write_reports(config, state, results, interrupted):
    """The reports of RESULTS into --cc-out; the buggy-variant
    expectations not caught."""
    results.sort(key=lambda r: resultsmod.safe_name(r["id"]) + ".json")
    resultsmod.name_models(results, config.getoption("--cc-out"))
    meta = run_meta(config, state, results, interrupted)
    # With a selection (one case, a shard, -k) a variant's other cases did
    # not run here: whether it was caught is decided when shards merge. An
    # interrupted run cannot tell either (and is no pass anyway).
    selected = bool(config.getoption("--cc-case") or config.getoption("--cc-shard")
                    or config.getoption("keyword"))
    not_caught = [] if selected or interrupted else \
        resultsmod.uncaught(state.specs, results)
    meta["not_caught"] = not_caught
    not_run = [] if selected or interrupted else \
        resultsmod.not_run(state.specs, results)
    if not_run:
        meta["not_run"] = not_run
    state.not_fixed = resultsmod.variant_verdicts(
        state.specs, results, {line.split(":", 1)[0] for line in not_caught})
    state.not_run = not_run
    sweep_facts(config, state, meta, results,
                complete=not (selected or interrupted))
    out = state.settings.out
    # The teaching corpus: for each buggy variant caught, the rule, the
    # case that caught it and the fix as a diff (harness/reports/lessons.py).
    state.summary = report.write_all(
        out, results, meta, lessons=lessons.lessons(state.specs, results) or None,
        junit=out / "junit.xml")
    sarif.write(out / "results.sarif", results, state.summary)
    if not selected:
        # the reports are this run's: so are the case directories (an
        # earlier run's go, and only crashcheck's: outdir)
        outdir.prune_cases(out, {Path(r["dir"]).name for r in results
                                 if r.get("dir")})
    state.results, state.not_caught, state.meta = results, not_caught, meta
    global SCRATCH_SHORT
    SCRATCH_SHORT = any(r["verdict"] == "harness-error" and
                        r.get("explanation") == unjudgeable.SCRATCH_WHY
                        for r in results)
    return not_caught


def run_meta(config, state, results, interrupted):
    """The run's own part of results.json's meta: its command, what it
    swept and how, when, and an audit's description."""
    meta = {
        "command": config.getoption("--cc-command") or " ".join(sys.argv),
        "expected": len(state.selected) if state.selected is not None
        else len(results),
        "interrupted": interrupted,
        "specs": [tree_path(p) for p in state.spec_paths],
        "models": list(state.settings.models),
        "fs": state.settings.fs,
        "kinds": list(state.settings.kinds),
        "seed": state.settings.seed,
        "cap": state.settings.cap,
        "sector": state.settings.sector or spec_sectors(state.specs),
        # bytes a run's trace could take (0: no limit): replay's too
        "trace_limit": state.settings.trace_limit,
        "unseen": unseen(state.work),
        # whether unseen changes fail the run (junit.xml says it as they do)
        "strict": bool(config.getoption("--cc-strict")),
        "timing": {"started": round(state.started, 3),
                   "duration": round(time.time() - state.started, 3)},
    }
    # an audit's description (harness/commands/audit.py), for `crashcheck
    # replay` to rebuild its spec from: the .audit directory goes
    for path in config.getoption("--cc-audit"):
        try:
            with open(path) as fh:
                meta["audit"] = json.load(fh)
        except (OSError, ValueError):
            pass
    return meta


def sweep_facts(config, state, meta, results, complete):
    """Add to META what the sweep's work directory says: the shard, the
    enumeration, what is known, new or fixed (COMPLETE: not a selection
    nor interrupted), the grouping and its estimate, the backends, and
    the checker's distinct answers."""
    # What `crashcheck merge` checks a set of shards against: every shard
    # of one run saw the same enumeration, and all N of them are there.
    shard = config.getoption("--cc-shard")
    if shard:
        meta["shard"] = "%d/%d" % casesmod.parse_shard(shard)
    if not (config.getoption("--cc-case") or config.getoption("keyword")) \
            and (state.work / sweep.CASES_FILE).is_file():
        ids = sorted(c.id for c in state.load_cases())
        meta["enumerated"] = {
            "cases": len(ids),
            "digest": hashlib.sha256("\n".join(ids).encode()).hexdigest()[:16]}
    # --baseline and the ignore file: what is known, new, fixed, ignored
    # (a selection cannot say that a baseline's case is gone)
    meta.update(state.policy.summary(
        results, complete=complete))
    try:
        with open(state.work / sweep.GROUPING_FILE) as fh:
            meta["grouping"] = json.load(fh)
        # what the cases were estimated to take is a measurement: under
        # timing, with the durations (results.json is otherwise the same
        # from one identical run to the next)
        meta["timing"]["estimate"] = {
            k: meta["grouping"].pop(k) for k in ("estimate", "estimate_kept",
                                                 "jobs", "checker_states",
                                                 "pilots")
            if k in meta["grouping"]}
    except (OSError, ValueError):
        pass
    # which backend ran each program, and why (baseline.record_baseline)
    meta["backends"] = baselinemod.backends(state.work, casesmod.combos(state.specs))
    checked = {s.name for s in state.specs if s.contract in ("check", "tree")}
    if checked:
        # a checker's answers by content (checker.CheckCache): how many
        # crash states it judged, how many of them were distinct, and how
        # many distinct directories runs left; the checker ran about once
        # per distinct one
        distinct = checker.CheckCache.distinct(state.work / checker.CHECKS_DIR)
        meta["checker"] = {
            "states": sum(r["states"] for r in results
                          if r["workload"] in checked),
            "distinct_states": distinct["s"],
            "distinct_dirs": distinct["d"]}


def stopped_by(session, exitstatus, state):
    """What stopped the session before every case ran, or None: a signal
    (^C, SIGTERM, SIGHUP), or pytest's -x/--maxfail."""
    if state.interrupted is not None:
        return state.interrupted
    if exitstatus == pytest.ExitCode.INTERRUPTED:
        return "SIGINT"
    if 128 < int(exitstatus) < 128 + 65:
        return signal_name(int(exitstatus) - 128)
    if session.shouldfail or session.shouldstop:
        return "stopped early (" + str(session.shouldfail
                                       or session.shouldstop) + ")"
    return None


def every_case(state, results, interrupted):
    """RESULTS, with a harness-error for every selected case that has
    none (nothing vanishes from a report), unless the session was
    interrupted: then the cases that never ran are counted as such
    (summary.interrupted), not judged."""
    if state.selected is None or interrupted:
        return results
    have = {r["id"] for r in results}
    missing = [cid for cid in state.selected if cid not in have]
    if not missing:
        return results
    by_id = {c.id: c for c in state.load_cases()}
    judge = state.judge()
    return results + [judge.failed(by_id[cid], "no result: the case did not "
                                   "run to its end in this session")
                      for cid in missing if cid in by_id]


def unseen(work):
    """Every baseline's changes crashcheck could not see, by workload."""
    out = []
    if not Path(work).is_dir():
        return out      # the run stopped before its baselines
    for d in sorted(p for p in Path(work).iterdir() if p.is_dir()):
        out += [dict(u, workload=d.name) for u in baselinemod.load_unseen(d)]
    return out


def spec_sectors(specs):
    """The sector the specs' power cuts tear at: one number when they
    agree, else {spec name: sector}."""
    got = {s.name: s.sector for s in specs}
    if len(set(got.values())) <= 1:
        return next(iter(got.values()), 4096)
    return dict(sorted(got.items()))


def signal_name(signum):
    """SIGTERM, SIGHUP...: how the results name the signal that stopped a
    session."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def story(tw, config, state):
    """The console's short story after the session: one line per finding
    with its reproduce command, then the counts, and where the reports
    are."""
    if state.summary.get("interrupted"):
        return          # told already (say_interrupted)
    rerun = bool(config.getoption("--cc-case"))
    failed = [r for r in state.results if not r["passed"]]
    # what the buggy variants were caught at (a rerun of one case says
    # CAUGHT below), then one line per failing defect (findings grouped
    # by root cause), its cases under it, each with the first sentence
    # of its explanation
    if not rerun:
        for line in console.caught_lines(state.results, state.summary):
            tw.line(line)
    for line in console.console_lines(state.results, state.summary):
        tw.line(line)
    if rerun:
        # a rerun of a caught variant's case passes, but the user asked to
        # see that finding
        for r in state.results:
            if r["passed"] and r["verdict"] not in ("ok", "skipped"):
                tw.line(f"CAUGHT {r['id']}: {r['verdict']}: {r['finding']}")
                why = console.first_sentence(r.get("explanation"))
                if why:
                    tw.line(f"  why: {why}")
                tw.line("  (a finding its spec expects of this buggy "
                        "variant: the case passes)")
    for line in state.not_caught:
        tw.line(f"NOT CAUGHT {line}")
    for line in state.not_fixed:
        tw.line(f"  {line}")
    s = state.summary
    out = state.settings.out
    files = [out / "report.md", out / "report.html", out / "results.json",
             out / "junit.xml", out / "results.sarif"]
    selected = bool(rerun or config.getoption("--cc-shard")
                    or config.getoption("keyword"))
    for line in regress.console_lines(s.get("run") or {},
                                      complete=not selected):
        tw.line(line)
    defects = s.get("defects") or []
    plural = words.plural
    sampled = words.sampled_words(s)
    counts = (f"crashcheck: {sampled or plural(len(state.results), 'case')}, "
              f"{plural(s.get('findings', 0), 'finding')} "
              f"({plural(len(defects), 'defect')}), {len(failed)} failed")
    if s.get("variants") or state.not_caught:
        counts += (f", {plural(len(state.not_caught), 'variant')} not "
                   "caught")
    tw.line(counts)
    if SCRATCH_SHORT:
        n = sum(1 for r in state.results if r["verdict"] == "harness-error"
                and r.get("explanation") == unjudgeable.SCRATCH_WHY)
        tw.line(f"crashcheck: {plural(n, 'case')} could not be recorded "
                "within crashcheck's scratch (exit 2): give it more room, "
                "--scratch-limit SIZE or --scratch DIR on a larger file system")
    caught = s.get("caught", 0)
    if caught and not failed and not rerun:
        tw.line(f"crashcheck: {'all ' if caught > 1 else ''}{caught} "
                f"finding{'s' if caught != 1 else ''} "
                f"{'are' if caught != 1 else 'is'} of buggy variants caught "
                "as their specs expect (CAUGHT above): a pass")
    warned = [d for d in defects if d["status"] == "warning"]
    if warned and not rerun:
        n = sum(d["cases"] for d in warned)
        tw.line(f"crashcheck: {n} warning{'s' if n != 1 else ''} "
                f"({len(warned)} defect{'s' if len(warned) != 1 else ''}): "
                "nothing lost here (an error ignored, or a fault that cannot "
                "happen where the program ran), so the run does not fail "
                "for them; --fail-on warning fails it")
        for d in warned:
            tw.line(f"  WARNING {d['title']}: seen in {d['cases']} "
                    f"case{'s' if d['cases'] != 1 else ''}")
    if state.not_run:
        n = len(state.not_run)
        tw.line(f"crashcheck: {n} expectation{'s' if n != 1 else ''} of "
                f"buggy variants not run (no case of this run applies to "
                f"{'them' if n != 1 else 'it'}): " + "; ".join(state.not_run))
    unseen = s.get("unseen") or []
    if unseen:
        strict = config.getoption("--cc-strict")
        tw.line(f"crashcheck: not a clean pass: {len(unseen)} "
                f"change{'s' if len(unseen) != 1 else ''} made by calls "
                f"crashcheck cannot see (Coverage in the report)"
                + ("; --strict fails the run" if strict else
                   "; --strict would fail the run"))
    tw.line("crashcheck: reports: " + ", ".join(str(f) for f in files))
