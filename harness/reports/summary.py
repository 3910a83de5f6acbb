"""What a run's reports say, before any format: the case results checked
(docs/design.md, "A case result"), each case's status, the summary of a
run (summarize), its defects, the matrix of verdicts by workload and
fault, and results.json read back and merged (load, merge).

Everything here is a pure function of the case results and the run's
metadata, so the same run renders the same files: cases are sorted by
id, JSON keys are sorted, and everything that measures time sits under
keys a comparison can drop (each case's `duration`, the summary's
`timing`).

How a case reads in a report (its "status"):

- ok:            the contract held;
- failed:        `passed` is false (a finding in a correct workload, or a
                 buggy variant's case that missed what its spec expects);
- caught:        a buggy variant showed the verdict its spec expects;
- harness-error: the planned fault never fired (never a pass);
- skipped:       the case cannot run here, with its reason.

A buggy variant must be caught: each `expect` entry of its spec has to be
met by at least one case. One that no case meets is reported as "not
caught" and fails the run, even when every single case says passed.
"""

import hashlib
import json
import re
from collections import Counter, defaultdict
from pathlib import Path

from .. import UsageError
from ..judging import causes, properties
# The fault classes, in the order the matrix shows them, and the verdicts,
# in the order reports list them: the oracle's (crash-model.md's).
from ..judging.oracle import KINDS, VERDICTS


# Case statuses, worst first: the order cases are listed in and the
# precedence that colours a matrix cell.
STATUSES = ("failed", "harness-error", "caught", "known", "ignored",
            "warning", "skipped", "ok")


# Metadata keys that measure time; they go under summary["timing"] so two
# runs over the same inputs compare equal once it is dropped. The metadata
# may hold them at its top level or in a "timing" object (the plugin's).
TIMING_KEYS = ("started", "finished", "duration")


# Metadata keys that describe the run and sit at the summary's top level
# (design.md); every other non-timing key goes under summary["run"].
# expected: how many cases the run was to judge; interrupted: what
# stopped it early ("SIGTERM"), or null; unseen: the changes made by calls
# crashcheck cannot see (baseline.save_unseen).
RUN_TOP_KEYS = ("seed", "command", "expected", "interrupted", "unseen")


# Fields every case must carry for a report to be made of it.
REQUIRED = {"id": str, "workload": str, "kind": str, "verdict": str,
            "passed": bool}


LESSON_KEYS = ("rule", "variant", "case_id", "verdict", "reproduce", "diff")


# How much of a long run a human-facing report shows; results.json always
# holds everything.
MD_FINDINGS_CAP = 50        # finding lines in report.md


MD_DEFECT_CASES = 10        # finding lines per defect in report.md


MD_DEFECT_IDS = 100         # ids of a defect's other cases in report.md


MD_SKIP_IDS = 5             # example ids per skip reason in report.md


HTML_FINDINGS_CAP = 200     # case blocks in report.html's Findings section


HTML_DEFECT_CASES = 5       # case blocks per defect in report.html


HTML_DEFECT_IDS = 200       # ids of a defect's other cases in report.html


HTML_CELL_CAP = 40          # case blocks inside one matrix cell


HTML_TEXT_CAP = 8000        # characters of stderr shown per case


CAUGHT_BY_CAP = 10          # example ids per variant expectation in JSON


class ReportError(UsageError):
    """Input a report cannot be made of: one line, exit status 2."""


# ---------------------------------------------------------------------------
# Reading and checking cases

def check_cases(cases, origin="cases"):
    """Refuse malformed input with a message naming the case and field:
    a report that silently skips a case would hide a finding."""
    if not isinstance(cases, list):
        raise ReportError(f"{origin}: expected a list of cases, "
                          f"found {type(cases).__name__}")
    seen = set()
    for i, case in enumerate(cases):
        if not isinstance(case, dict):
            raise ReportError(f"{origin}: case {i}: expected an object, "
                              f"found {type(case).__name__}")
        for key, typ in REQUIRED.items():
            if key not in case:
                raise ReportError(f"{origin}: case {i}: missing '{key}'")
            if not isinstance(case[key], typ):
                raise ReportError(
                    f"{origin}: case {i}: '{key}' must be a "
                    f"{typ.__name__}, found {type(case[key]).__name__}")
        cid = case["id"]
        if not cid:
            raise ReportError(f"{origin}: case {i}: empty 'id'")
        if case["verdict"] not in VERDICTS:
            raise ReportError(f"{origin}: case '{cid}': unknown verdict "
                              f"'{case['verdict']}'")
        expected = case.get("expected") or []
        if not isinstance(expected, list) or not all(
                isinstance(e, dict) and isinstance(e.get("verdict"), str)
                for e in expected):
            raise ReportError(f"{origin}: case '{cid}': 'expected' must be "
                              "a list of objects with a 'verdict'")
        strategy = case.get("strategy")
        if strategy is not None and not isinstance(strategy, str):
            raise ReportError(f"{origin}: case '{cid}': 'strategy' must be "
                              "a string or null")
        if cid in seen:
            raise ReportError(f"{origin}: duplicate case id '{cid}'")
        seen.add(cid)
    return cases


def check_lessons(lessons):
    if lessons is None:
        return []
    if not isinstance(lessons, list):
        raise ReportError("lessons: expected a list, "
                          f"found {type(lessons).__name__}")
    for i, lesson in enumerate(lessons):
        if not isinstance(lesson, dict):
            raise ReportError(f"lessons: lesson {i}: expected an object")
        for key in LESSON_KEYS:
            if not isinstance(lesson.get(key), str):
                raise ReportError(f"lessons: lesson {i}: '{key}' missing "
                                  "or not a string")
    return lessons


def sorted_cases(cases):
    return sorted(cases, key=lambda c: c["id"])


def status(case):
    """How a case reads in a report (see the module comment)."""
    verdict = case["verdict"]
    if verdict == "skipped":
        return "skipped"
    if verdict == "harness-error":
        return "harness-error"
    if not case["passed"]:
        return "failed"
    if verdict == "ok":
        return "ok"
    # a finding that passes: accepted by the ignore file with a reason,
    # known from the baseline (harness/reports/regress.py), or a buggy
    # variant caught as its spec expects
    if case.get("ignored"):
        return "ignored"
    if case.get("baseline") == "known":
        return "known"
    if case.get("expected") and any(e.get("verdict") == verdict
                                    for e in case["expected"]):
        return "caught"
    if case.get("severity") == "warning":
        # reported, and passing: the run fails on errors only
        # (crash-model.md, "Severity"; --fail-on warning fails it)
        return "warning"
    if case.get("expected"):
        return "caught"
    # A finding that nothing expected yet marked passed contradicts the
    # case schema; a report never shows a finding as a pass.
    return "failed"


def skip_reason(case):
    """A skipped case says why in its finding (or explanation)."""
    return (case.get("finding") or case.get("explanation")
            or "no reason given").strip().splitlines()[0]


def _expect_key(entry):
    return json.dumps(entry, sort_keys=True)


def expect_text(entry):
    """`not-durable (kind powerloss, model posix)`."""
    keys = [k for k in ("kind", "model", "strategy") if k in entry]
    keys += sorted(k for k in entry if k not in keys and k != "verdict")
    where = [f"{k} {entry[k]}" for k in keys if entry[k] not in (None, "")]
    text = entry.get("verdict", "?")
    return f"{text} ({', '.join(where)})" if where else text


def variants(cases):
    """Each buggy variant's expectations and whether some case met them.

    An entry applies to the cases whose `expected` lists it; it is met when
    one of those cases has its verdict (the plugin already filtered by
    kind, model and strategy when it filled `expected`)."""
    table = defaultdict(dict)
    for case in cases:
        for entry in case.get("expected") or []:
            slot = table[case["workload"]].setdefault(
                _expect_key(entry),
                {"expect": entry, "cases": 0, "caught_by": []})
            slot["cases"] += 1
            if case["verdict"] == entry["verdict"]:
                slot["caught_by"].append(case["id"])
    out = []
    for workload in sorted(table):
        for key in sorted(table[workload]):
            slot = table[workload][key]
            caught = sorted(slot["caught_by"])
            out.append({
                "workload": workload,
                "expect": slot["expect"],
                "cases": slot["cases"],
                "caught": len(caught),
                "caught_by": caught[:CAUGHT_BY_CAP],
                "met": bool(caught),
            })
    return out


def _unmet(variant_list):
    """(workload, expect key) of every expectation no case met."""
    return {(v["workload"], _expect_key(v["expect"]))
            for v in variant_list if not v["met"]}


def _counts(cases):
    c = Counter(status(x) for x in cases)
    return {
        "cases": len(cases),
        "findings": sum(x["verdict"] not in ("ok", "skipped") for x in cases),
        "failed": sum(not x["passed"] for x in cases),
        "harness_errors": c["harness-error"],
        "caught": c["caught"],
        "known": c["known"],
        "ignored": c["ignored"],
        "warnings": c["warning"],
        "skipped": c["skipped"],
    }


def _split_meta(meta):
    """(top-level facts, the rest of the run's metadata, timing, the
    caller's not-caught list or None)."""
    meta = dict(meta or {})
    timing = meta.pop("timing", None) or {}
    if not isinstance(timing, dict):
        raise ReportError("meta: 'timing' must be an object")
    timing = dict(timing)
    timing.update({k: meta.pop(k) for k in TIMING_KEYS if k in meta})
    top = {k: meta.pop(k, None) for k in RUN_TOP_KEYS}
    not_caught = meta.pop("not_caught", None)
    if not_caught is not None and not (
            isinstance(not_caught, list)
            and all(isinstance(x, str) for x in not_caught)):
        raise ReportError("meta: 'not_caught' must be a list of strings")
    return top, meta, timing, not_caught


def _check_unseen(unseen):
    if unseen is None:
        return []
    if not isinstance(unseen, list) or not all(
            isinstance(u, dict) and isinstance(u.get("path"), str)
            and isinstance(u.get("at"), str) for u in unseen):
        raise ReportError("meta: 'unseen' must be a list of objects with a "
                          "path and where it was seen (at)")
    return unseen


def coverage_lines(summary):
    """What the trace did not see, one line per change, for the Coverage
    section of every report (empty when nothing was unseen)."""
    out = []
    for u in summary.get("unseen") or []:
        what = "content changed" if u.get("what") == "content" else \
            "name appeared, went or changed"
        where = ("after the program exited" if u["at"] == "exit"
                 else f"first seen at {u['at']}")
        wl = f"{u['workload']}: " if u.get("workload") else ""
        out.append(f"{wl}'{u['path']}': {what} by a call crashcheck "
                   f"cannot see ({where})")
    return out


COVERAGE_OK = ("Every change to the files and names under the work "
               "directory was made by a call crashcheck intercepted, "
               "faulted and recorded.")


COVERAGE_BAD = ("These changes were made by calls crashcheck cannot see "
                "(raw system calls, io_uring, remove(3) and other calls "
                "libc makes inside itself, a statically linked helper): "
                "no fault reached them and no power cut was simulated "
                "where they happened, so this run is not a clean pass.")


def _not_caught(variant_list, given):
    """The buggy-variant expectations that count as not caught, and
    whether those computed from the cases may be shown as such.

    The caller (the plugin, from the specs) may say which expectations
    went uncaught; that list is authoritative. An empty list from it
    means "none, or not decided here": a shard or a selection of cases
    holds only part of a variant's cases, so expectations that look unmet
    in them are not failures. Without the caller's word, the report
    decides from the cases alone (as after `merge`)."""
    computed = [f"{v['workload']}: expected {expect_text(v['expect'])}, "
                f"no case of {v['cases']} showed it"
                for v in variant_list if not v["met"]]
    if given is None:
        return computed, True
    return list(given), bool(given)


def summarize(cases, meta):
    """The summary of results.json (design.md): counts, what the run
    covered, the buggy variants' expectations, the run's metadata."""
    cases = check_cases(cases)
    if meta is not None and not isinstance(meta, dict):
        raise ReportError("meta: expected an object")
    top, run, timing, given = _split_meta(meta)
    counts = _counts(cases)

    verdicts = {v: 0 for v in VERDICTS}
    verdicts.update(Counter(c["verdict"] for c in cases))
    skip_reasons = Counter(skip_reason(c) for c in cases
                           if c["verdict"] == "skipped")

    per_kind = defaultdict(list)
    per_model = defaultdict(list)
    for c in cases:
        per_kind[c["kind"]].append(c)
        per_model[c.get("model") or "none"].append(c)

    var = variants(cases)
    not_caught, judged = _not_caught(var, given)
    grouped = defects(cases)
    timing["case_seconds"] = round(sum(
        float(c.get("duration") or 0) for c in cases), 6)
    expected, interrupted = _completeness(top, len(cases))
    sampled = sampled_of(run)

    return {
        "cases": counts["cases"],
        # the run's cases against those judged: a run that did not judge
        # every case it was to (interrupted, or cases missing) never passes
        "expected": expected,
        "missing": max(0, expected - len(cases)),
        "interrupted": interrupted,
        "verdicts": verdicts,
        "findings": counts["findings"],
        "failed": counts["failed"],
        "harness_errors": counts["harness_errors"],
        "caught": counts["caught"],
        "known": counts["known"],
        "ignored": counts["ignored"],
        "warnings": counts["warnings"],
        "skipped": counts["skipped"],
        "skip_reasons": dict(skip_reasons),
        "kinds": _kind_order({c["kind"] for c in cases}),
        "per_kind": {k: _counts(v) for k, v in per_kind.items()},
        "per_model": {m: _counts(v) for m, v in per_model.items()},
        "models": sorted({c["model"] for c in cases if c.get("model")}),
        "workloads": sorted({c["workload"] for c in cases}),
        "strategies": sorted({c["strategy"] for c in cases
                              if c.get("strategy")}),
        "variants": var,
        # the findings grouped by root cause, worst first (defects())
        "defects": grouped,
        "recovered": len(recovered(cases)),
        "not_caught": not_caught,
        # whether a variant entry with met false is a failure (false in a
        # shard: its catching case may be in another shard)
        "variants_judged": judged,
        "passed": (counts["failed"] == 0 and counts["harness_errors"] == 0
                   and not not_caught and interrupted is None
                   and expected <= len(cases)),
        # changes no intercepted call made (baseline.save_unseen): a run with
        # any is never a clean pass, whatever its cases say
        "unseen": _check_unseen(top["unseen"]),
        # a run that left cases out (sampled past its budget, or asked
        # to) did not look at everything: never a clean pass either
        "sampled": sampled,
        "clean": (counts["failed"] == 0 and counts["harness_errors"] == 0
                  and not not_caught and interrupted is None
                  and expected <= len(cases) and not top["unseen"]
                  and sampled is None),
        "seed": top["seed"],
        "command": top["command"],
        "run": run,
        "timing": timing,
    }


def sampled_of(run):
    """{"kept": K, "of": N} of a run whose enumeration left cases out
    (run.grouping: sampled past its budget, or --sample), else None."""
    g = run.get("grouping") if isinstance(run, dict) else None
    if not isinstance(g, dict):
        return None
    kept, of = g.get("kept"), g.get("cases")
    if not (_is_count(kept) and _is_count(of)) or of <= kept:
        return None
    return {"kept": kept, "of": of}


def _is_count(value):
    return isinstance(value, int) and not isinstance(value, bool) \
        and value >= 0


def _completeness(top, judged):
    """(expected, interrupted) of the summary from the metadata's
    "expected" (cases the run was to judge; JUDGED when not given) and
    "interrupted" (what stopped it: a string, or an object as a summary
    holds it)."""
    expected = top.get("expected")
    if expected is None:
        expected = judged
    if not isinstance(expected, int) or isinstance(expected, bool) \
            or expected < 0:
        raise ReportError("meta: 'expected' must be a number of cases")
    by = top.get("interrupted")
    if isinstance(by, dict):
        by = by.get("by")
    if by is None:
        return expected, None
    if not isinstance(by, str) or not by:
        raise ReportError("meta: 'interrupted' must say what stopped the run")
    return expected, {"by": by, "ran": judged, "of": expected}


def _kind_order(kinds):
    """The seven classes in matrix order, any other kind after them."""
    return [k for k in KINDS if k in kinds] + sorted(set(kinds) - set(KINDS))


# ---------------------------------------------------------------------------
# Reading results.json back and merging shards

def load(path):
    """(cases, meta) of one results.json; meta is what summarize() was
    given, rebuilt from the summary."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ReportError(f"read '{path}': {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise ReportError(f"read '{path}': not UTF-8 "
                          f"(byte {e.start})") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise ReportError(f"parse '{path}': invalid JSON at line {e.lineno} "
                          f"column {e.colno}: {e.msg}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("cases"), list):
        raise ReportError(f"parse '{path}': not a crashcheck results.json "
                          "(no 'cases' list)")
    summary = doc.get("summary")
    if not isinstance(summary, dict):
        raise ReportError(f"parse '{path}': not a crashcheck results.json "
                          "(no 'summary' object)")
    for key in ("run", "timing"):
        if summary.get(key) is not None and not isinstance(summary[key], dict):
            raise ReportError(f"parse '{path}': not a crashcheck results.json "
                              f"('summary.{key}' is not an object)")
    cases = check_cases(doc["cases"], f"'{path}'")
    meta = dict(summary.get("run") or {})
    for key in RUN_TOP_KEYS:
        if summary.get(key) is not None:
            meta[key] = summary[key]
    timing = {k: v for k, v in (summary.get("timing") or {}).items()
              if k != "case_seconds"}
    if timing:
        meta["timing"] = timing
    return cases, meta


def _without_timing(case):
    return {k: v for k, v in case.items() if k != "duration"}


def merge(dirs):
    """Merge the results.json of several shards of one run.

    Each item is a results directory or a results.json file. A case id met
    twice must carry the same result (timing aside): otherwise the shards
    disagree and nothing can be reported. Shards must share the seed, or
    their power-loss states are not the same run's."""
    if not dirs:
        raise ReportError("merge: no results directories given")
    found = {}          # id -> (case, path it came from)
    metas = []
    for item in dirs:
        path = Path(item)
        if path.is_dir():
            path = path / "results.json"
        cases, meta = load(path)
        metas.append((path, meta, len(cases)))
        for case in cases:
            prev = found.get(case["id"])
            if prev is None:
                found[case["id"]] = (case, path)
            elif _without_timing(prev[0]) != _without_timing(case):
                raise ReportError(
                    f"'{path}': case '{case['id']}' differs from the case "
                    f"of the same id in '{prev[1]}'")
    return sorted_cases(c for c, _ in found.values()), _merge_meta(metas)


def _merge_meta(metas):
    first_path, first, _ = metas[0]
    for path, meta, _ in metas[1:]:
        if meta.get("seed") != first.get("seed"):
            raise ReportError(
                f"'{path}': seed {meta.get('seed')!r} differs from seed "
                f"{first.get('seed')!r} of '{first_path}' "
                "(shards of one run share a seed)")
    # A shard's "not caught" is not the run's: the merged cases decide;
    # so do they how many cases there are (merge refuses an incomplete
    # input: harness/commands/merge.py)
    merged = {k: v for k, v in first.items()
              if k not in TIMING_KEYS and k not in (
                  "timing", "not_caught", "expected", "interrupted")}
    models = []
    for _, meta, _ in metas:
        for m in meta.get("models") or []:
            if m not in models:
                models.append(m)
    if models:
        merged["models"] = models
    merged["shards"] = [{"results": str(p), "cases": n,
                         "command": m.get("command")} for p, m, n in metas]
    timings = [_split_meta(m)[2] for _, m, _ in metas]
    timing = {}
    starts = [t["started"] for t in timings if t.get("started")]
    if starts and len({type(x) for x in starts}) == 1:
        timing["started"] = min(starts)
    durations = [t["duration"] for t in timings if is_number(t.get("duration"))]
    if durations:
        # Shards run side by side: the run took as long as its longest.
        timing["duration"] = max(durations)
    if timing:
        merged["timing"] = timing
    return merged


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# ---------------------------------------------------------------------------
# The matrix: workload x strategy rows, fault-class columns

class Cell:
    """The cases of one workload, strategy and fault class, and how the
    matrix shows them."""

    def __init__(self, cases, unmet):
        self.cases = sorted(cases, key=lambda c: (STATUSES.index(status(c)),
                                                  c["id"]))
        by = defaultdict(list)
        for c in self.cases:
            by[status(c)].append(c)
        self.by = by
        # Expectations no case of the whole variant met, that applied here.
        keys = {(c["workload"], _expect_key(e)) for c in cases
                for e in c.get("expected") or []}
        self.not_caught = sorted({json.loads(k)["verdict"]
                                  for _, k in keys & unmet})
        self.run = len(self.cases) - len(by["skipped"])
        self.status = self._status()
        self.text = self._text()

    def _status(self):
        if not self.cases:
            return "empty"
        if self.by["failed"] or self.not_caught:
            return "failed"
        for s in ("harness-error", "caught", "known", "ignored", "warning",
                  "ok"):
            if self.by[s]:
                return s
        return "skipped"

    def _text(self):
        if not self.cases:
            return "·"
        by, parts = self.by, []
        if by["failed"]:
            parts.append(f"✗ {len(by['failed'])}/{self.run} "
                         + _verdict_list(by["failed"], uncaught=True))
        if self.not_caught:
            parts.append("✗ not caught: expected "
                         + ", ".join(self.not_caught))
        if by["harness-error"]:
            parts.append(f"⚠ {len(by['harness-error'])}/{self.run} "
                         "harness-error")
        for st in ("caught", "known", "ignored", "warning"):
            if by[st]:
                parts.append(f"{st}: {_verdict_list(by[st])} "
                             f"({len(by[st])}/{self.run})")
        if not parts and by["ok"]:
            parts.append(f"✓ {len(by['ok'])}")
        if by["skipped"]:
            parts.append(f"skipped {len(by['skipped'])}" if not parts
                         else f"{len(by['skipped'])} skipped")
        return "; ".join(parts)

    @property
    def notable(self):
        """The cases a reader opens the cell for."""
        return [c for c in self.cases if status(c) != "ok"]


def _verdict_list(cases, uncaught=False):
    """`torn` or `torn 2, not-durable 1`; an ok verdict on a failed case is
    a buggy variant's case that did not catch what it should have."""
    def label(c):
        return "uncaught" if uncaught and c["verdict"] == "ok" else c["verdict"]
    counts = Counter(label(c) for c in cases)
    order = list(VERDICTS) + ["uncaught"]
    names = sorted(counts, key=order.index)
    if len(names) == 1:
        return names[0]
    return ", ".join(f"{n} {counts[n]}" for n in names)


def matrix(cases, variant_list=None, judged=True):
    """(kinds, rows): rows are (workload, strategy, is_variant, {kind:
    Cell}), the correct workloads first, then the buggy variants, each
    sorted by workload then strategy: a correct workload's finding is the
    one that matters, and among the variants' it was easy to miss. With
    judged false (a shard), expectations unmet in these cases mark no
    cell."""
    if variant_list is None:
        variant_list = variants(cases)
    unmet = _unmet(variant_list) if judged else set()
    kinds = list(KINDS) + _kind_order({c["kind"] for c in cases
                                       if c["kind"] not in KINDS})
    groups = defaultdict(lambda: defaultdict(list))
    variant_wls = {v["workload"] for v in variant_list}
    for c in cases:
        groups[(c["workload"], c.get("strategy") or "")][c["kind"]].append(c)
    rows = []
    for (workload, strategy) in sorted(
            groups, key=lambda k: (k[0] in variant_wls, k)):
        by_kind = groups[(workload, strategy)]
        rows.append((workload, strategy or None, workload in variant_wls,
                     {k: Cell(by_kind.get(k, []), unmet) for k in kinds}))
    return kinds, rows


# ---------------------------------------------------------------------------
# Shared text

_BAD_CHARS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff"
                        "\ufffe\uffff]")


def clean(text):
    """Text safe for XML 1.0 and HTML: control bytes a program printed
    become visible escapes instead of breaking the file."""
    if text is None:
        return ""
    text = str(text)
    return _BAD_CHARS.sub(lambda m: "\\x%02x" % (ord(m.group()) & 0xff)
                          if ord(m.group()) < 0x100
                          else "\\u%04x" % ord(m.group()), text)


def one_line(text):
    return " ".join(clean(text).split())


# ---------------------------------------------------------------------------
# Defects: findings grouped by root cause

def is_finding(case):
    """A case whose verdict found something in the program (harness
    errors and skips found nothing in it)."""
    return case["verdict"] not in ("ok", "skipped", "harness-error")


def defect_key(case):
    """The root cause a finding shares with others (the sweep's
    cause.key: program, verdict, rule broken, deciding call site); a case
    without one (results of an older crashcheck) is its own, up to an
    identical finding."""
    cause = case.get("cause")
    if isinstance(cause, dict) and isinstance(cause.get("key"), str):
        return cause["key"]
    text = "\0".join((case["workload"], case["verdict"],
                      str(case.get("finding") or "")))
    data = text.encode("utf-8", "surrogateescape")    # a file name's bytes
    return "f" + hashlib.sha256(data).hexdigest()[:11]


def defect_title(case, verdict=None, counts=None):
    """A defect's line, from one of its cases: "unreported-error: check
    what fsync returns (fsync on 'target.tmp' at saver.c:117 (save))".
    VERDICT: the defect's (its worst case's); COUNTS: "3 files, 12
    cases" when it covers more than one."""
    verdict = verdict or case["verdict"]
    cause = case.get("cause") if isinstance(case.get("cause"), dict) else {}
    if not cause.get("rule"):
        return f"{verdict}: {one_line(case.get('finding') or '')}".rstrip(": ")
    where = []
    if cause.get("call"):
        # its name: the cases of one defect may be its n-th and m-th call
        where.append(str(cause["call"]).split("#")[0])
    if cause.get("file"):
        where.append(f"on '{cause['file']}'" if not counts or
                     counts[0] < 2 else f"on '{_family(cause)}'")
    loc = case.get("location") if isinstance(case.get("location"), dict) else {}
    if loc.get("text"):
        where.append(f"at {loc['text']}")
    text = f"{verdict}: {cause['rule']}"
    prop = case.get("property") or cause.get("property")
    if prop:
        text += f" [{properties.words(prop)}]"
    return text + (f" ({' '.join(where)})" if where else "")


def _family(cause):
    """The files a defect's cases name, as one pattern: its site's when
    it was grouped by one (".git/objects/??/*"), else the first file."""
    site = str(cause.get("site") or "")
    kind, _, pattern = site.partition(" ")
    if pattern and kind.isalpha():
        return pattern
    return causes.family(str(cause.get("file")))


def defects(cases):
    """The findings grouped by root cause, worst first: failing before
    caught (a buggy variant's expected finding), then by verdict in the
    oracle's order (data lost first, ignored-error last), then the most
    cases first. A defect is a rule broken at one call site (or, without
    one, on one pattern of files), whichever verdict each of its cases
    showed it by: its verdict is the worst of theirs. Each: key,
    workload, verdict, verdicts (a count of each), property, severity
    (the worst), title, rule, location, status (failed, caught, known,
    ignored or warning), cases (how many), files (how many distinct files
    its cases name) and ids (all of them, sorted; the first is the one
    shown)."""
    groups = {}
    for c in sorted(cases, key=lambda c: c["id"]):
        if not is_finding(c):
            continue
        groups.setdefault((c["workload"], defect_key(c)), []).append(c)
    out = []
    for (workload, key), members in groups.items():
        worst = min(members, key=lambda c: (VERDICTS.index(c["verdict"]), c["id"]))
        cause = worst.get("cause") if isinstance(worst.get("cause"), dict) else {}
        statuses = {status(c) for c in members}
        # failed when any case of it fails; else how its cases passed
        # (caught, known, ignored or warning), caught when they differ
        st = ("failed" if "failed" in statuses else
              statuses.pop() if len(statuses) == 1 else "caught")
        files = {str((c.get("cause") or {}).get("file")) for c in members
                 if (c.get("cause") or {}).get("file")}
        sevs = {c.get("severity") for c in members}
        verdicts = Counter(c["verdict"] for c in members)
        out.append({
            "key": key, "workload": workload, "verdict": worst["verdict"],
            "verdicts": {v: verdicts[v] for v in VERDICTS if verdicts[v]},
            "property": worst.get("property") or cause.get("property"),
            "severity": "error" if "error" in sevs else
            "warning" if "warning" in sevs else None,
            "title": defect_title(worst, counts=(len(files), len(members))),
            "rule": cause.get("rule"),
            "location": worst.get("location"),
            "status": st,
            "cases": len(members), "files": len(files),
            "ids": [c["id"] for c in members]})
    out.sort(key=lambda d: (d["status"] != "failed", VERDICTS.index(d["verdict"]),
                            -d["cases"], d["title"], d["key"]))
    return out


RECOVERED_HELP = ("Cases where a fault hit the data path and the program came "
                  "through: it said so and the new content was in place and "
                  "durable all the same.")


def recovered(cases):
    """The ok cases that came through a fault on their data path, with
    the oracle's note ("recovered from fsync#1=EIO (said: ...)")."""
    return [c for c in cases if c["verdict"] == "ok" and c.get("note")]


OUTSIDE_HELP = ("Cases whose program wrote, made or removed files outside "
                "its scratch directory. It ran confined (Confinement in "
                "docs/guide.md): your files were not changed, and what it "
                "wrote was thrown away after the case.")


def outside(cases):
    """The cases whose program wrote outside its scratch ("outside" of
    results.json: what it wrote, kept from the real tree)."""
    return [c for c in cases if c.get("outside")]


def outside_text(case, cap=5):
    """"wrote outside its scratch: ~/.augeas/history, ..." of a case."""
    paths = case.get("outside") or []
    more = f" and {len(paths) - cap} more" if len(paths) > cap else ""
    return "wrote outside its scratch: " + ", ".join(paths[:cap]) + more


def defect_cases(defect, by_id):
    """A defect's cases, the ones that fail first."""
    members = [by_id[i] for i in defect["ids"]]
    return sorted(members, key=lambda c: (STATUSES.index(status(c)), c["id"]))
