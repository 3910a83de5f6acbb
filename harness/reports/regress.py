"""The CI regression mode: a baseline of known findings, an ignore file.

A team that adopts crashcheck on a program with findings it cannot fix at
once wants its CI to fail on what is new, not on what it already knows.

--baseline PREVIOUS/results.json: a finding of this run whose case id and
verdict a finding of the baseline has is *known*: it is still reported,
but its case passes. Any other finding is *new* and fails the run. A
finding of the baseline whose case this run judged and found otherwise is
*fixed*, and listed.

.crashcheck.toml (or --ignore FILE), kept in the user's repository:

    [[ignore]]
    case = "sqlite3-close#*"        # a glob (fnmatch) over case ids
    verdict = "unreported-error"    # a finding verdict, or a list of them
    reason = "SQLite ignores close errors after a successful fdatasync"

A finding an entry matches is *ignored*: reported with the entry's reason,
its case passes. A reason is mandatory. harness-error cannot be ignored
(a case that tested nothing is never a pass), nor can a buggy variant
going uncaught. In a case-id glob, `*`, `?` and `[` are special: a plan's
own `*` is matched by `[*]`.

In results.json a known case carries "baseline": "known" and a new one
"baseline": "new" (with a baseline only); an ignored one "ignored": its
reason. Both have "passed": true, as a buggy variant's caught finding
does. The run's summary.run holds "baseline" (file, known, new, fixed,
gone) and "ignore" (file, and how many findings each entry matched).

Everything here is a pure function of parsed files and case results;
every bad input is a UsageError naming the file and the field.
"""

import json
import tomllib
from fnmatch import fnmatchcase
from pathlib import Path

from .. import UsageError
from ..judging.oracle import VERDICTS

IGNORE_FILE = ".crashcheck.toml"
# a case whose verdict is one of these is not a finding
NOT_FINDINGS = ("ok", "skipped")
# never ignored: a case that tested nothing
UNIGNORABLE = ("harness-error",)


def is_finding(case):
    return case.get("verdict") not in NOT_FINDINGS


def counts_against(case):
    """Whether CASE is a finding of the program that a later run may meet
    again: one that failed, or was known or ignored (not a buggy variant's
    expected finding, which is the corpus doing its job)."""
    if not is_finding(case):
        return False
    # a warning passes, but it is the program's: reported like the rest
    warned = case.get("severity") == "warning" and not any(
        e.get("verdict") == case["verdict"] for e in case.get("expected") or ())
    return (not case.get("passed") or case.get("baseline") == "known"
            or bool(case.get("ignored")) or warned)


# ------------------------------------------------------------- baseline

class Baseline:
    """The findings of an earlier run: (case id, verdict) pairs."""

    def __init__(self, path, findings, ids):
        self.path = path            # as the user gave it
        self.findings = findings    # {case id: verdict} of its findings
        self.ids = ids              # every case id of that run

    def known(self, case):
        return self.findings.get(case["id"]) == case["verdict"]


def load_baseline(text):
    """The Baseline in results.json at TEXT (or in the directory TEXT)."""
    path = Path(text)
    if path.is_dir():
        path = path / "results.json"
    try:
        with open(path) as fh:
            doc = json.load(fh)
    except FileNotFoundError:
        raise UsageError(f"--baseline: no such file: {path}") from None
    except IsADirectoryError:
        raise UsageError(f"--baseline: '{path}' is a directory") from None
    except OSError as e:
        raise UsageError(f"--baseline: cannot read {path}: {e.strerror}") \
            from None
    except (ValueError, UnicodeDecodeError) as e:
        raise UsageError(f"--baseline: {path} is not JSON: {e}") from None
    cases = doc.get("cases") if isinstance(doc, dict) else None
    if not isinstance(cases, list):
        raise UsageError(f"--baseline: {path} is not a crashcheck "
                         "results.json (no 'cases' list)")
    findings, ids = {}, set()
    for i, c in enumerate(cases):
        if not (isinstance(c, dict) and isinstance(c.get("id"), str)
                and c.get("verdict") in VERDICTS):
            raise UsageError(f"--baseline: {path}: cases[{i}] has no id and "
                             "verdict of crashcheck's")
        ids.add(c["id"])
        if counts_against(c):
            findings[c["id"]] = c["verdict"]
    return Baseline(str(text), findings, ids)


# --------------------------------------------------------------- ignore

class Entry:
    def __init__(self, index, case, verdicts, reason):
        self.index = index          # 1-based, as in "ignore[2]"
        self.case = case            # glob over case ids
        self.verdicts = verdicts    # tuple of verdicts
        self.reason = reason

    def matches(self, case):
        return (case["verdict"] in self.verdicts
                and fnmatchcase(case["id"], self.case))

    def describe(self):
        return f"ignore[{self.index}] ({self.case}: {', '.join(self.verdicts)})"


class Ignore:
    def __init__(self, path, entries):
        self.path = path
        self.entries = entries

    def match(self, case):
        """The first entry that matches CASE, or None."""
        for e in self.entries:
            if e.matches(case):
                return e
        return None


def load_ignore(text, default=False):
    """The Ignore of the TOML file TEXT; None when DEFAULT and the file
    does not exist (the default .crashcheck.toml is optional)."""
    path = Path(text)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        if default:
            return None
        raise UsageError(f"--ignore: no such file: {path}") from None
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory") from None
    except OSError as e:
        raise UsageError(f"{path}: cannot read: {e.strerror}") from None
    try:
        doc = tomllib.loads(raw.decode())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise UsageError(f"{path}: not TOML: {e}") from None
    unknown = sorted(set(doc) - {"ignore"})
    if unknown:
        raise UsageError(f"{path}: {unknown[0]}: unknown key (the file holds "
                         "[[ignore]] tables only)")
    tables = doc.get("ignore", [])
    if not isinstance(tables, list) or not all(isinstance(t, dict)
                                               for t in tables):
        raise UsageError(f"{path}: ignore: expected [[ignore]] tables")
    entries = []
    for i, t in enumerate(tables, 1):
        where = f"{path}: ignore[{i}]"
        extra = sorted(set(t) - {"case", "verdict", "reason"})
        if extra:
            raise UsageError(f"{where}.{extra[0]}: unknown field (fields: "
                             "case, verdict, reason)")
        case = t.get("case")
        if not isinstance(case, str) or not case:
            raise UsageError(f"{where}.case: required: a glob over case ids")
        verdicts = t.get("verdict")
        if isinstance(verdicts, str):
            verdicts = [verdicts]
        if not (isinstance(verdicts, list) and verdicts
                and all(isinstance(v, str) for v in verdicts)):
            raise UsageError(f"{where}.verdict: required: a verdict or a "
                             "list of verdicts")
        for v in verdicts:
            if v in UNIGNORABLE:
                raise UsageError(f"{where}.verdict: {v} cannot be ignored: "
                                 "such a case tested nothing")
            if v not in VERDICTS or v in NOT_FINDINGS:
                raise UsageError(f"{where}.verdict: '{v}' is not a finding's "
                                 "verdict (see 'crashcheck help verdicts')")
        reason = t.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise UsageError(f"{where}.reason: required: say why this "
                             "finding is accepted")
        entries.append(Entry(i, case, tuple(verdicts),
                             " ".join(reason.split())))
    return Ignore(str(path), entries)


# --------------------------------------------------------------- policy

class Policy:
    """What --baseline and the ignore file make of each case result."""

    def __init__(self, baseline=None, ignore=None):
        self.baseline = baseline
        self.ignore = ignore

    def __bool__(self):
        return self.baseline is not None or self.ignore is not None

    def apply(self, case):
        """Mark CASE (a result, changed in place): ignored, known or new.
        A finding the run would fail on passes when it is ignored or
        known. Returns CASE."""
        if not is_finding(case) or (case.get("passed")
                                    and not case.get("baseline")
                                    and not case.get("ignored")):
            return case         # ok, skipped, or a caught buggy variant
        entry = self.ignore.match(case) if self.ignore else None
        if entry is not None and case["verdict"] not in UNIGNORABLE:
            case["ignored"] = entry.reason
            case["passed"] = True
            return case
        if self.baseline is not None:
            if self.baseline.known(case):
                case["baseline"] = "known"
                case["passed"] = True
            else:
                case["baseline"] = "new"
        return case

    def summary(self, cases, complete=True):
        """summary.run's "baseline" and "ignore" facts of the run's CASES
        (all of them when COMPLETE, else a shard or a selection: then a
        baseline case the run does not hold is not said to be gone)."""
        out = {}
        if self.baseline is not None:
            now = {c["id"]: c for c in cases}
            fixed, gone = [], []
            for cid, verdict in sorted(self.baseline.findings.items()):
                c = now.get(cid)
                if c is None:
                    if complete:
                        gone.append(f"{cid}: {verdict}")
                elif not (c["verdict"] == verdict and counts_against(c)):
                    fixed.append(f"{cid}: {verdict}")
            out["baseline"] = {
                "file": self.baseline.path,
                "known": sum(c.get("baseline") == "known" for c in cases),
                "new": sum(c.get("baseline") == "new" for c in cases),
                "fixed": fixed,
                "gone": gone,
            }
        if self.ignore is not None:
            matched = {e.index: 0 for e in self.ignore.entries}
            for c in cases:
                if c.get("ignored"):
                    e = self.ignore.match(c)
                    if e is not None:
                        matched[e.index] += 1
            out["ignore"] = {
                "file": self.ignore.path,
                "entries": [{"case": e.case, "verdict": list(e.verdicts),
                             "reason": e.reason, "matched": matched[e.index]}
                            for e in self.ignore.entries],
            }
        return out


def console_lines(facts, complete=True):
    """What the console says of the regression facts (summary.run's
    "baseline" and "ignore")."""
    lines = []
    b = facts.get("baseline")
    if b:
        for f in b["fixed"]:
            lines.append(f"FIXED {f} (a finding of the baseline, not found now)")
        for g in b["gone"]:
            lines.append(f"GONE {g} (a finding of the baseline whose case "
                         "this run no longer has: the program's calls "
                         "changed)")
        lines.append(f"crashcheck: baseline {b['file']}: {b['new']} new, "
                     f"{b['known']} known (reported, not failing), "
                     f"{len(b['fixed'])} fixed")
    ig = facts.get("ignore")
    if ig:
        for i, e in enumerate(ig["entries"], 1):
            where = f"{ig['file']}: ignore[{i}] ({e['case']}: " \
                    f"{', '.join(e['verdict'])})"
            if e["matched"]:
                lines.append(f"crashcheck: {where}: {e['matched']} finding"
                             f"{'s' if e['matched'] != 1 else ''} ignored: "
                             f"{e['reason']}")
            elif complete:
                lines.append(f"crashcheck: {where} matched no finding of "
                             "this run")
    return lines


def policy_from(baseline=None, ignore=None):
    """The Policy of a command's options: --baseline FILE, --ignore FILE
    (default .crashcheck.toml in the current directory, when it exists)."""
    b = load_baseline(baseline) if baseline else None
    if ignore:
        i = load_ignore(ignore)
    else:
        i = load_ignore(IGNORE_FILE, default=True)
    return Policy(b, i)
