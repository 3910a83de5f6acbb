"""`crashcheck replay CASE-ID`: lay out the state a finding is about.

A power-loss finding names a crash state that only ever existed inside
the explorer; a fault finding names the directory a failed run left. To
let a person look at it, replay reruns the case exactly as the sweep did
(same spec, seed, cap and sector, read from the results it was found
in), and writes the deciding state's files into a directory, with a
README.txt that says what persisted, what did not, and which rule that
breaks.
"""

import json
import os
import shutil
from pathlib import Path

from .. import ROOT, UsageError, results_root
from ..judging import explorer
from ..engine import (auditspec, baseline as baselinemod, cases as casesmod,
                      contain, execute, judge as judgemod, outdir, realfs,
                      results as resultsmod, runner, spec as specmod, sweep)

def setup_replay(p):
    p.add_argument("case_id", metavar="CASE-ID",
                   help="the id of a case, as results.json and the console "
                        "print it")
    p.add_argument("--results", metavar="FILE",
                   help="the results.json the case is in (default: "
                        "results/results.json, then results/rerun/results.json)")
    p.add_argument("--out", metavar="DIR",
                   help="where to lay the state out (default: "
                        "results/replay/<case-id>/)")


def find_case(case_id, results_path):
    candidates = [Path(results_path)] if results_path else [
        results_root() / "results.json",
        results_root() / "rerun" / "results.json"]
    for path in candidates:
        if path.exists() and not path.is_file():
            # a directory, a device (/dev/zero would be read for ever)
            raise UsageError(f"--results: '{path}' is "
                             + ("a directory" if path.is_dir()
                                else "not a regular file"))
        try:
            with open(path) as fh:
                data = json.load(fh)
        except FileNotFoundError:
            if results_path:
                raise UsageError(f"no results file: {path}") from None
            continue
        except OSError as e:
            raise UsageError(f"cannot read {path}: {e.strerror}") from None
        except ValueError as e:
            raise UsageError(f"cannot read {path}: {e}") from None
        _check_results(data, path)
        for case in data["cases"]:
            if case.get("id") == case_id:
                return case, data.get("summary") or {}, path
    where = " or ".join(str(p) for p in candidates)
    raise UsageError(f"no case '{case_id}' in {where}")


def _check_results(data, path):
    """UsageError unless DATA has the shape of a results.json: an object
    whose cases are a list of objects and whose summary (and its run) are
    objects."""
    def bad(what):
        raise UsageError(f"--results: '{path}' is not a crashcheck "
                         f"results.json ({what})")
    if not isinstance(data, dict):
        bad(f"a JSON {type(data).__name__.replace('dict', 'object')}, "
            "not an object")
    if not isinstance(data.get("cases"), list):
        bad("no 'cases' list")
    if not all(isinstance(c, dict) for c in data["cases"]):
        bad("a case that is not an object")
    summary = data.get("summary")
    if summary is not None and not isinstance(summary, dict):
        bad("'summary' is not an object")
    run = (summary or {}).get("run")
    if run is not None and not isinstance(run, dict):
        bad("'summary.run' is not an object")
    if run and not isinstance(run.get("specs", []), list):
        bad("'summary.run.specs' is not a list")


def spec_for(case, summary, results_path):
    for s in (summary.get("run") or {}).get("specs", []):
        p = Path(s)
        if not p.is_absolute():
            p = ROOT / p
        try:
            spec = specmod.load(p)
        except specmod.SpecError:
            continue
        if spec.name == case["workload"]:
            return spec
    if not (summary.get("run") or {}).get("specs") and \
            " audit " in f" {summary.get('command', '')} ":
        raise UsageError(f"{results_path} holds an audit's results, and "
                         "replay reruns cases of crashcheck run only: rerun "
                         "the case with its reproduce command, with --keep "
                         "to keep its directory")
    raise UsageError(f"the spec of workload '{case['workload']}' named in "
                     f"{results_path} is gone or changed")


def cmd_replay(args):
    """lay out the crash state (or final state) of a case in a directory

    Reruns CASE-ID as the sweep ran it (its spec, seed, cap and sector
    come from the results.json it is in) and writes the state its verdict was
    decided on -- the crash state of a power-loss finding, or what the
    program left behind -- into results/replay/<case-id>/state/, with a
    README.txt saying what persisted, what did not, and the rule it
    breaks. --out must be new, empty, or crashcheck's (it holds the
    marker file .crashcheck); an earlier replay's README.txt and state/
    there are replaced, nothing else. Exit 0 when the rerun reaches the recorded verdict, 1 when it
    does not (the directory is still written), 2 for a bad case id or
    results file.
    """
    case_id = args.case_id
    recorded, summary, path = find_case(case_id, args.results)
    run = summary.get("run") or {}
    if not run.get("audit"):
        spec = spec_for(recorded, summary, path)
    model = recorded.get("model")
    if args.out is not None and str(args.out) == "":
        raise UsageError("--out: empty path")
    dest = Path(args.out) if args.out else \
        results_root() / "replay" / resultsmod.safe_name(case_id)
    # new, empty or crashcheck's, and one replay at a time (outdir)
    dest = outdir.claim(dest)

    work = runner.make_scratch("crashcheck-replay-")
    try:
        if run.get("audit"):
            spec = audit_spec_again(run, recorded, path, work)
        settings = replay_settings(work, case_id, model, run, summary)
        combo, case = case_again(case_id, spec, settings, recorded)
        judge = judgemod.Judge([spec], settings)
        judge.hold = True
        res = judge.execute(case)
        try:
            state_dir = lay_out(judge, res, dest, combo)
        finally:
            if judge.last_scratch is not None:
                shutil.rmtree(judge.last_scratch, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    same = res["verdict"] == recorded["verdict"]
    print(f"crashcheck: {case_id}: {res['verdict']}"
          + ("" if same else f" (recorded: {recorded['verdict']})"))
    if res.get("finding"):
        print(f"crashcheck: {res['finding']}")
    print(f"crashcheck: state laid out in {state_dir} (see {dest / 'README.txt'})")
    return 0 if same else 1


def audit_spec_again(run, recorded, path, work):
    """An audit's spec, made again from its description (RUN's "audit")
    in WORK: the contents read again from its --old and --new files."""
    from . import audit
    spec = auditspec.load(audit.inputs_again(run["audit"],
                                             work / "audit"))
    if spec.name != recorded["workload"]:
        raise UsageError(f"{path} describes an audit of "
                         f"'{spec.name}', not of "
                         f"'{recorded['workload']}'")
    return spec


def replay_settings(work, case_id, model, run, summary):
    """The Settings the case ran under (RUN and SUMMARY of its
    results.json), its work directory made in WORK. A case of the real
    kernel's runs on it again; so does any case of a sweep on a real
    filesystem (its runs were all there): UsageError where that cannot
    be here."""
    fs = realfs.fs_of(model) or run.get("fs")
    if fs is not None:
        try:
            realfs.check(fs)
            contain.session()
            realfs.private_namespace()
        except realfs.Unavailable as e:
            raise UsageError(f"{case_id} ran on a real {fs}: {e.reason}") \
                from None
    settings = casesmod.Settings(
        out=work, fs=fs,
        models=(model,) if model and not realfs.fs_of(model) else tuple(
            m for m in run.get("models") or casesmod.DEFAULT_MODELS
            if m in casesmod.MODELS) or casesmod.DEFAULT_MODELS,
        seed=int(summary.get("seed") or 0), cap=int(run.get("cap") or 64),
        jobs=1, home=bool((run.get("audit") or {}).get("home")),
        exhaustive=True, sector=_sector(run),
        trace_limit=_trace_limit(run))
    settings.scratch_limit = sweep.default_limit(1)
    settings.work.mkdir(parents=True)
    return settings


def case_again(case_id, spec, settings, recorded):
    """(combo, case) of CASE_ID, enumerated again as the sweep did: the
    combo's baseline recorded (under the backend the case ran under),
    and again (the names of files whose names change from run to run
    come from that: baseline.record_again); UsageError where the spec
    or the program's calls no longer give it."""
    combo = next((c for c in casesmod.combos([spec])
                  if case_id.startswith(c.prefix + "-")), None)
    if combo is None:
        raise UsageError(f"case '{case_id}' matches no strategy and size "
                         f"of {spec.path}")
    scratch = settings.work / combo.prefix
    scratch.mkdir()
    execute.start_tree(combo, settings.work)
    how = recorded.get("backend") or "preload"
    base = execute.execute_run(combo, "", scratch,
                               baselinemod.timeout_of(combo, settings),
                               settings=settings, backend=how)
    baselinemod.save_run(base, how)
    again = baselinemod.record_again(combo, base, settings, how)
    case = next((c for c in baselinemod.cases_of(combo, base, settings, how,
                                                 again=again)
                 if c.id == case_id), None)
    if case is None:
        raise UsageError(f"case '{case_id}' no longer exists: the program's "
                         "calls changed since the recorded run")
    return combo, case


def _trace_limit(run):
    """The --trace-limit the run kept its traces to (results of an
    older crashcheck say none: the default)."""
    limit = run.get("trace_limit")
    return limit if isinstance(limit, int) and not isinstance(limit, bool) \
        and limit >= 0 else casesmod.Settings.trace_limit


def _sector(run):
    """The --sector the run tore at: one number (its --sector, or the one
    its specs share), else None, each spec's own."""
    sector = run.get("sector")
    return sector if isinstance(sector, int) and not isinstance(sector, bool) \
        else None


def lay_out(judge, res, dest, combo):
    """Write the deciding state into dest/state and the story into
    dest/README.txt (as a finding's cases/<id>/ says it); returns the
    state directory. DEST is crashcheck's (outdir.claim): an earlier
    replay's state/ there goes (beside its README.txt, it is ours);
    nothing else is touched."""
    state_dir = dest / "state"
    if (dest / "README.txt").is_file() and state_dir.is_dir() \
            and not state_dir.is_symlink():
        shutil.rmtree(state_dir)
    elif os.path.lexists(state_dir):
        raise UsageError(f"--out: '{state_dir}' exists and is not a replay's "
                         "state: give a new or empty directory")
    old, new = casesmod.contents(combo)
    target = casesmod.target_name(combo.spec)
    st = next((s for s in judge.last_states if s.label == res.get("state")), None)
    if st is not None:
        explorer.layout(st, state_dir)
        got = st.target
    else:
        shutil.copytree(judge.last_out.workdir, state_dir, symlinks=True)
        p = state_dir / target if target is not None else None
        got = p.read_bytes() if p is not None and p.is_file() else None
    (dest / "README.txt").write_text(
        resultsmod.state_readme(res, st, got, old, new, tree=target is None),
        errors="surrogateescape")
    return state_dir
