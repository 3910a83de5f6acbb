"""`crashcheck merge [--out DIR] DIR...`: one set of reports from shards.

A CI fleet runs `crashcheck run|audit --shard K/N` in N jobs; each writes
its own results directory. merge reads their results.json files
(reports/summary.py, merge: a case met twice must carry the same
result), checks that they are the N shards of one run, and writes
results.json, report.md, report.html and junit.xml as one unsharded run
would have.

The shard check uses what the plugin records in each shard's metadata:
`shard` ("K/N") and `enumerated` (the number of cases the run enumerated
and a digest of their ids). Shards of one run enumerate the same cases;
if they do not (a program whose calls vary from run to run), or one shard
is missing, the merged report would silently lack cases, so merge refuses.
"""

import sys
from pathlib import Path

from .. import UsageError, results_root
from ..reports import console, regress, report, sarif, words
from ..reports.summary import load as load_results, merge as merge_results
from ..engine import outdir



def setup_merge(p):
    p.add_argument("dirs", metavar="DIR", nargs="+",
                   help="a shard's results directory (or its results.json)")
    p.add_argument("--out", metavar="DIR",
                   help="where the merged reports go (default: results/merged/)")
    p.add_argument("--baseline", metavar="FILE",
                   help="an earlier run's results.json: as for run and audit "
                        "(give it here too, for the list of fixed findings)")
    p.add_argument("--ignore", metavar="FILE",
                   help="an ignore file, as for run and audit (default: "
                        ".crashcheck.toml in the current directory, when "
                        "there is one)")


def _results_path(item):
    path = Path(item)
    if path.is_dir():
        path = path / "results.json"
    if not path.is_file():
        raise UsageError(f"no results.json in '{item}'")
    return path


def check_whole(path, cases, meta):
    """Refuse the results of a run that did not judge every case it was
    to: merged, they would read as a whole run."""
    i = meta.get("interrupted")
    if i:
        if isinstance(i, dict):
            raise UsageError(f"'{path}' is of an interrupted run ({i.get('by')}: "
                             f"{i.get('ran')} of {i.get('of')} cases ran): "
                             "rerun it")
        raise UsageError(f"'{path}' is of an interrupted run: rerun it")
    expected = meta.get("expected")
    if isinstance(expected, int) and expected > len(cases):
        raise UsageError(f"'{path}' lacks {expected - len(cases)} of its "
                         f"{expected} cases: rerun it")


def check_shards(paths):
    """Refuse a set of results that is not whole: shards of different
    runs, a shard missing or given twice, enumerations that differ."""
    shards = []
    for path in paths:
        cases, meta = load_results(path)
        check_whole(path, cases, meta)
        shards.append((path, meta.get("shard"), meta.get("enumerated")))
    sharded = [s for s in shards if s[1]]
    if not sharded:
        return None
    if len(sharded) != len(shards):
        whole = next(p for p, k, _ in shards if not k)
        raise UsageError(f"'{whole}' is not a shard, but '{sharded[0][0]}' is: "
                         "merge the shards of one run")
    seen = {}
    total = None
    for path, shard, enum in shards:
        k, n = (int(x) for x in shard.split("/"))
        if total is None:
            total = n
        elif n != total:
            raise UsageError(f"'{path}' is shard {shard}, but '{shards[0][0]}' "
                             f"is one of {total}")
        if k in seen:
            raise UsageError(f"shard {shard} given twice: '{seen[k]}' and "
                             f"'{path}'")
        seen[k] = path
    missing = [k for k in range(1, total + 1) if k not in seen]
    if missing:
        raise UsageError(f"shard {missing[0]}/{total} missing "
                         f"({len(seen)} of {total} given)")
    digests = {(e or {}).get("digest") for _, _, e in shards}
    if len(digests) != 1 or None in digests:
        raise UsageError("the shards enumerated different cases (is the "
                         "program's sequence of calls the same on every run?): "
                         "rerun all shards")
    return shards[0][2]


def cmd_merge(args):
    """merge the results of shards (--shard K/N) into one set of reports

    Reads each DIR's results.json (from `crashcheck run` or `audit` with
    --shard K/N), checks they are all N shards of one run, and writes
    results.json, report.md, report.html, junit.xml and results.sarif to
    --out (default results/merged/), as the unsharded run would have.
    Results that are not shards (e.g. runs of different specs) are merged
    as they are. --baseline and --ignore apply to the merged cases as they
    do to a run's.

    Exit status: 0 when the merged run has no failed case and every buggy
    variant is caught; 1 otherwise (the failures are listed); 2 for bad
    input (a missing or unreadable results.json, shards of different runs,
    a shard missing or given twice, results of an interrupted run).
    """
    paths = [_results_path(d) for d in args.dirs]
    if args.out is not None and str(args.out) == "":
        raise UsageError("--out: empty path")
    out = Path(args.out) if args.out else results_root() / "merged"
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out: '{out}' is not a directory")
    for p in paths:
        if p.parent.resolve() == out.resolve():
            raise UsageError(f"--out: '{out}' is one of the inputs")
    policy = regress.policy_from(args.baseline, args.ignore)
    enumerated = check_shards(paths)
    cases, meta = merge_results(paths)
    meta.pop("shard", None)
    if enumerated is not None:
        if len(cases) != enumerated["cases"]:
            raise UsageError(f"the shards hold {len(cases)} cases, the run "
                             f"enumerated {enumerated['cases']}")
        meta["enumerated"] = enumerated
    # a shard's baseline and ignore facts are its own part's: the merged
    # run's are computed here, when --baseline or an ignore file is given
    meta.pop("baseline", None)
    meta.pop("ignore", None)
    if policy:
        for c in cases:
            policy.apply(c)
        meta.update(policy.summary(cases))
    # checked whole before anything is written; new, empty or ours
    out = outdir.claim(out)
    summary = report.write_all(out, cases, meta, junit=out / "junit.xml")
    sarif.write(out / "results.sarif", cases, summary)
    for line in console.caught_lines(cases, summary) + \
            console.console_lines(cases, summary):
        print(line)
    for line in summary["not_caught"]:
        print(f"NOT CAUGHT {line}")
    for line in regress.console_lines(summary.get("run") or {}):
        print(line)
    print("crashcheck: " + " ".join(words.summary_sentences(summary)))
    print("crashcheck: reports: " + ", ".join(
        str(out / f) for f in ("report.md", "report.html", "results.json",
                               "junit.xml", "results.sarif")))
    sys.stdout.flush()
    return 0 if summary["passed"] else 1
