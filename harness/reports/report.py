"""Reports of a run: results.json, report.md, report.html and JUnit XML.

Everything here is a pure function of the case results (docs/design.md,
"A case result") and the run's metadata, so the same run renders the same
files: cases are sorted by id, JSON keys are sorted, and everything that
measures time sits under keys a comparison can drop (each case's
`duration`, the summary's `timing`).

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

import datetime
import hashlib
import html
import json
import os
import re
import shlex
import signal
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from pathlib import Path

from .. import UsageError
from ..judging import causes, properties
from .console import first_sentence
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
# crashcheck cannot see (sweep.save_unseen).
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

def _check_cases(cases, origin="cases"):
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


def _check_lessons(lessons):
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


def _sorted(cases):
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
    cases = _check_cases(cases)
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
        # changes no intercepted call made (sweep.save_unseen): a run with
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


def sampled_words(summary):
    """'SAMPLED 90 of 405 cases', or "" for a run of every case."""
    sampled = summary.get("sampled")
    if not sampled:
        return ""
    return f"SAMPLED {sampled['kept']} of {sampled['of']} cases"


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
# Writing files

def _write_atomic(path, data):
    """Write via a temporary file, fsync and rename, so a report is either
    the old one or the complete new one (we preach it, we do it)."""
    path = Path(path)
    if isinstance(data, str):
        # a file name that is not UTF-8 (os.fsdecode's \udcXX) is shown
        # as that escape: in JSON it reads back as the same name
        data = data.encode("utf-8", "backslashreplace")
    directory = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=directory)
    except OSError as e:
        raise ReportError(f"create temporary file in '{directory}': "
                          f"{e.strerror}") from None
    try:
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        except OSError as e:
            raise ReportError(f"write '{path}': {e.strerror}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    try:
        dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass  # some filesystems refuse fsync on a directory; the file is out


def json_text(cases, meta):
    """results.json's text: sorted keys, cases sorted by id, one case per
    line (json's C encoder: the indenting one is Python, and took longer
    than the rest of the reports together), the summary indented."""
    cases = _sorted(_check_cases(cases))
    return _json_text(cases, summarize(cases, meta))


def _json_text(cases, summary):
    """json_text() of checked CASES, sorted, and their SUMMARY."""
    summary = json.dumps(summary, sort_keys=True, indent=1,
                         ensure_ascii=False).replace("\n", "\n ")
    lines = [json.dumps(c, sort_keys=True, ensure_ascii=False)
             for c in cases]
    body = ",\n  ".join(lines)
    return (f'{{\n "cases": [\n  {body}\n ],\n "summary": {summary}\n}}\n'
            if lines else f'{{\n "cases": [],\n "summary": {summary}\n}}\n')


def write_json(path, cases, meta):
    _write_atomic(path, json_text(cases, meta))


def write_markdown(path, cases, meta, lessons=None):
    _write_atomic(path, markdown_text(cases, meta, lessons))


def write_html(path, cases, meta, lessons=None):
    _write_atomic(path, html_text(cases, meta, lessons))


def write_junit(path, cases, meta):
    _write_atomic(path, junit_bytes(cases, meta))


def write_all(outdir, cases, meta, lessons=None, junit=None):
    """results.json, report.md and report.html in outdir (and JUnit XML at
    the path junit, if given); the summary. The cases are checked and
    summed up once for all of them: at the end of a sweep the pytest
    process makes the reports alone, while the cores the cases used
    wait, and each report checking and summing up 5000 cases on its own
    was half of that time."""
    outdir = Path(outdir)
    try:
        outdir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ReportError(f"mkdir '{outdir}': {e.strerror}") from None
    # checked in the order the reports were written in, one by one
    cases = _sorted(_check_cases(cases))
    summary = summarize(cases, meta)
    lessons = _check_lessons(lessons)
    _write_atomic(outdir / "report.md", _markdown_text(cases, summary, lessons))
    _write_atomic(outdir / "report.html", _html_text(cases, summary, lessons))
    if junit is not None:
        _write_atomic(junit, _junit_bytes(cases, summary))
    # last: a results.json is there only with the reports of its run, should
    # crashcheck be killed while it writes them (tests/chaos.py)
    _write_atomic(outdir / "results.json", _json_text(cases, summary))
    return summary


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
    cases = _check_cases(doc["cases"], f"'{path}'")
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
    return _sorted(c for c, _ in found.values()), _merge_meta(metas)


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
    durations = [t["duration"] for t in timings if _is_number(t.get("duration"))]
    if durations:
        # Shards run side by side: the run took as long as its longest.
        timing["duration"] = max(durations)
    if timing:
        merged["timing"] = timing
    return merged


def _is_number(value):
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


def _clean(text):
    """Text safe for XML 1.0 and HTML: control bytes a program printed
    become visible escapes instead of breaking the file."""
    if text is None:
        return ""
    text = str(text)
    return _BAD_CHARS.sub(lambda m: "\\x%02x" % (ord(m.group()) & 0xff)
                          if ord(m.group()) < 0x100
                          else "\\u%04x" % ord(m.group()), text)


def _one_line(text):
    return " ".join(_clean(text).split())


def command_text(command):
    if command is None:
        return ""
    if isinstance(command, (list, tuple)):
        return shlex.join(str(a) for a in command)
    return str(command)


def exit_text(exit_info):
    if not isinstance(exit_info, dict):
        return ""
    if exit_info.get("timed_out"):
        return "timed out (process group killed)"
    sig = exit_info.get("signal")
    if sig is not None:
        try:
            name = signal.Signals(sig).name
        except (ValueError, TypeError):
            name = f"signal {sig}"
        return f"killed by {name} ({sig})"
    if exit_info.get("status") is not None:
        return f"exit status {exit_info['status']}"
    return ""


def fired_text(fired):
    if not isinstance(fired, list):
        return ""
    out = []
    for f in fired:
        if isinstance(f, dict):
            out.append(f"{f.get('rule', '?')} ×{f.get('count', '?')}")
    return ", ".join(out)


def _seconds(value):
    if not isinstance(value, (int, float)):
        return ""
    if value < 60:
        return f"{value:.1f} s"
    minutes, secs = divmod(int(round(value)), 60)
    return f"{minutes} min {secs} s"


def _when(value):
    """A start time as ISO 8601: epoch seconds (the plugin's) or a string
    already formatted."""
    if _is_number(value):
        return datetime.datetime.fromtimestamp(
            value, datetime.timezone.utc).isoformat(timespec="seconds")
    return str(value)


def plural(n, word, many=None):
    """'1 case', '2 cases' ('1 defect', '3 more cases': MANY when not
    WORD + 's')."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


def outcome_word(summary):
    """PASS, PASS, NOT CLEAN (changes crashcheck could not see), FAIL, or
    INTERRUPTED: what a report says first."""
    if summary.get("interrupted"):
        return "INTERRUPTED"
    word = "PASS" if summary["passed"] else "FAIL"
    if summary["passed"] and summary.get("unseen"):
        word += ", NOT CLEAN"
    if summary.get("sampled"):
        word += ", " + sampled_words(summary)
    return word


def summary_sentences(summary):
    """The one-paragraph story of the run, as plain-text sentences."""
    s = summary
    verdict = outcome_word(s)
    found = plural(s["findings"], "finding")
    if s["findings"]:
        found += f" ({plural(len(s['defects']), 'defect')})"
    counts = [found,
              plural(s["failed"], "failure"),
              plural(s["harness_errors"], "harness error"),
              f"{s['skipped']} skipped"]
    if s.get("interrupted") and not s["interrupted"]["of"]:
        first = (f"{verdict} ({s['interrupted']['by']}) before its cases "
                 "were enumerated: no case ran.")
    elif s.get("interrupted"):
        i = s["interrupted"]
        first = (f"{verdict} ({i['by']}): {i['ran']} of "
                 f"{plural(i['of'], 'case')} ran, " + ", ".join(counts)
                 + "; the rest were never judged.")
    else:
        first = (f"{verdict}: {plural(s['cases'], 'case')}, "
                 + ", ".join(counts) + ".")
    out = [first]
    if s.get("sampled") and not s.get("interrupted"):
        left = s["sampled"]["of"] - s["sampled"]["kept"]
        out.append(f"Only {s['sampled']['kept']} of the "
                   f"{s['sampled']['of']} cases ran, a sample "
                   f"({left} left out, never run): not a clean pass; "
                   "--exhaustive, or a larger --budget, runs every one.")
    if s.get("missing") and not s.get("interrupted"):
        out.append(f"{plural(s['missing'], 'case')} of the "
                   f"{s['expected']} the run was to judge have no result: "
                   "the run is not a pass.")
    # (how many, as one, as several): the findings that did not fail
    for n, one, many in (
            (s["caught"], "is a buggy variant caught as its spec expects.",
             "are buggy variants caught as their specs expect."),
            (s.get("known"), "is known from the baseline: reported, not "
             "failing.", "are known from the baseline: reported, not "
             "failing."),
            (s.get("ignored"), "is accepted by the ignore file, with its "
             "reason.", "are accepted by the ignore file, each with its "
             "reason."),
            (s.get("warnings"), "is a warning: it lost nothing here (an "
             "ignored error, or a fault that cannot happen where the program "
             "ran), and the run fails on errors only.", "are warnings: they "
             "lost nothing here (ignored errors, or faults that cannot happen "
             "where the program ran), and the run fails on errors only.")):
        if n:
            out.append(f"Of the findings, {n} " + (one if n == 1 else many))
    if s.get("recovered"):
        out.append(f"{plural(s['recovered'], 'case')} recovered from a "
                   "fault on the data path.")
    var = s["variants"]
    if var or s["not_caught"]:
        met = sum(v["met"] for v in var)
        line = (f"Buggy variants: {met} of {plural(len(var), 'expectation')}"
                " met")
        if s["not_caught"]:
            line += (f", {len(s['not_caught'])} not caught (a failure of the "
                     "suite)")
        elif met < len(var) and not s["variants_judged"]:
            line += ("; the others are judged when the shards are merged "
                     "(their catching cases may be in another shard)")
        out.append(line + ".")
    if s["harness_errors"]:
        out.append("A harness error is a planned fault that never fired: "
                   "the case proved nothing and counts as a failure.")
    if s.get("unseen"):
        n = len(s["unseen"])
        out.append(f"{plural(n, 'change')} to the files "
                   f"{'was' if n == 1 else 'were'} made by calls crashcheck "
                   "cannot see (Coverage).")
    return out


def model_text(model):
    """A case's model as the reports name it: a real kernel's is said
    to be one (harness/engine/realfs.py)."""
    if isinstance(model, str) and model.endswith("-real"):
        return f"{model} (a real kernel state, not a model's)"
    return model


def run_facts(summary):
    """(label, value) pairs describing the run, in display order."""
    run, timing = summary["run"], summary["timing"]
    facts = []
    if summary.get("command") is not None:
        facts.append(("command", command_text(summary["command"])))
    if summary.get("seed") is not None:
        facts.append(("seed", str(summary["seed"])))
    models = run.get("models") or summary["models"]
    if models:
        facts.append(("models", ", ".join(map(str, models))))
    if run.get("fs"):
        facts.append(("real kernel", f"{run['fs']}: every run on a fresh "
                      f"loop-mounted {run['fs']}, and the {run['fs']}-real "
                      "power-loss cases judged on the states the kernel "
                      "left after a shutdown and a new mount, not a "
                      "model's"))
    sector = run.get("sector")
    if isinstance(sector, int) and sector != 4096:
        facts.append(("sector", f"{sector} bytes"))
    elif isinstance(sector, dict):
        facts.append(("sector", ", ".join(f"{k} {v}"
                                          for k, v in sector.items())))
    if timing.get("started"):
        facts.append(("started", _when(timing["started"])))
    if "duration" in timing:
        facts.append(("duration", _seconds(timing["duration"])))
    if run.get("shards"):
        facts.append(("shards", str(len(run["shards"]))))
    grouping = run.get("grouping") or {}
    if summary.get("sampled"):
        facts.append(("cases", _sampled_fact(grouping,
                                             timing.get("estimate"))))
    backends = run.get("backends") or {}
    if isinstance(backends, dict) and backends:
        said = []
        for workload in sorted(backends):
            for e in backends[workload] or ():
                if not isinstance(e, dict):
                    continue
                why = e.get("why") or ("the default: it is dynamically "
                                       "linked, and the preload saw every "
                                       "change it made"
                                       if e.get("backend") == "preload" else "")
                said.append(f"{workload}: {e.get('backend')}"
                            + (f" ({why})" if why else ""))
        if said:
            facts.append(("backend", "; ".join(said)))
    checker = run.get("checker") or {}
    if checker.get("states"):
        facts.append(("checker", (
            f"{checker['states']} crash states judged, "
            f"{checker['distinct_states']} distinct, each checked once")))
    return facts


def _sampled_fact(g, estimated=None):
    """How a sampled run chose its cases (run.grouping, and the estimate
    of timing.estimate), in words."""
    text = (f"{g['kept']} of {g['cases']}: of each group of calls (by call "
            f"site, file and fault; {g.get('groups')} groups) the first, the "
            f"last and {g.get('sample')} sampled between them with seed "
            f"{g.get('seed')}")
    estimated = estimated if isinstance(estimated, dict) else {}
    budget, estimate = g.get("budget"), estimated.get("estimate")
    if _is_number(budget) and _is_number(estimate) and estimate > budget:
        text += (f", as every case would take about {_seconds(estimate)} on "
                 f"{estimated.get('jobs')} jobs, past the {_seconds(budget)} "
                 "budget")
    return text + "; --exhaustive for every one"


def _listed(cases):
    """Cases the Findings sections list: failures first, then harness
    errors, then buggy variants' expected findings."""
    return [c for c in sorted(cases, key=lambda c: (STATUSES.index(status(c)),
                                                    c["id"]))
            if status(c) in ("failed", "harness-error", "caught", "known",
                             "ignored", "warning")]


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
        return f"{verdict}: {_one_line(case.get('finding') or '')}".rstrip(": ")
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


def _defect_cases(defect, by_id):
    """A defect's cases, the ones that fail first."""
    members = [by_id[i] for i in defect["ids"]]
    return sorted(members, key=lambda c: (STATUSES.index(status(c)), c["id"]))


def models_note(case):
    """" (under posix, xfs)": the crash models a finding judged by crash
    states holds under ("models" of results.json); " (on the real xfs
    kernel)" for a state a real kernel left; or ""."""
    model = case.get("model") or ""
    if model.endswith("-real"):
        return f" (on the real {model[:-len('-real')]} kernel)"
    if model and case.get("models"):
        return f" (under {', '.join(case['models'])})"
    return ""


def console_lines(cases, summary, per_defect=10):
    """The short story of a run's findings for a terminal: each failing
    defect on one line with how many cases it was seen in, then up to
    PER_DEFECT of its failing cases (FINDING line, the first sentence of
    its explanation, reproduce command),
    then how many more; then the other failing cases (harness errors, a
    buggy variant's case that caught nothing), one by one."""
    by_id = {c["id"]: c for c in cases}
    lines = []
    shown = set()
    failing = [d for d in summary["defects"] if d["status"] == "failed"]
    for n, d in enumerate(failing, 1):
        lines.append(f"DEFECT {n} of {len(failing)}: {d['title']}: seen in "
                     f"{plural(d['cases'], 'case')}")
        members = [c for c in _defect_cases(d, by_id) if not c["passed"]]
        for c in members[:per_defect]:
            lines.append(f"  FINDING {c['id']}: {c['verdict']}: "
                         f"{c.get('finding') or ''}{models_note(c)}")
            why = first_sentence(c.get("explanation"))
            if why:
                lines.append(f"    why: {why}")
            if c.get("reproduce"):
                lines.append(f"    reproduce: {c['reproduce']}")
        if len(members) > per_defect:
            lines.append(f"  and {len(members) - per_defect} more cases of this "
                         "defect (every one in report.md and results.json)")
        shown.update(d["ids"])
    for c in sorted(cases, key=lambda c: c["id"]):
        if not c["passed"] and c["id"] not in shown:
            lines.append(f"FINDING {c['id']}: {c['verdict']}: "
                         f"{c.get('finding') or ''}{models_note(c)}")
            why = first_sentence(c.get("explanation"))
            if why:
                lines.append(f"  why: {why}")
            if c.get("reproduce"):
                lines.append(f"  reproduce: {c['reproduce']}")
    return lines


# a run that caught at most this many defects of buggy variants shows
# each one's first case in full (a student sweeping one variant); more
# (make run) show each defect on one line and its first case's command
CAUGHT_IN_FULL = 5


def caught_lines(cases, summary):
    """The findings of buggy variants caught as their specs expect, for a
    terminal: they pass, yet they are what a sweep of a variant is run
    to see. Each caught defect on one line (CAUGHT n of N: ...) with the
    reproduce command of its first case; with at most CAUGHT_IN_FULL of
    them, that case's finding and the first sentence of its
    explanation too."""
    by_id = {c["id"]: c for c in cases}
    caught = [d for d in summary["defects"] if d["status"] == "caught"]
    full = len(caught) <= CAUGHT_IN_FULL
    lines = []
    for n, d in enumerate(caught, 1):
        members = [c for c in _defect_cases(d, by_id)
                   if status(c) == "caught"]
        if not members:
            continue
        lines.append(f"CAUGHT {n} of {len(caught)}: {d['title']}: seen in "
                     f"{plural(len(members), 'case')}, as the spec of "
                     f"{d.get('workload') or members[0]['workload']} expects")
        first = members[0]
        if full:
            lines.append(f"  CAUGHT {first['id']}: {first['verdict']}: "
                         f"{first.get('finding') or ''}")
            why = first_sentence(first.get("explanation"))
            if why:
                lines.append(f"    why: {why}")
        if first.get("reproduce"):
            lines.append(f"    reproduce: {first['reproduce']}")
        if full and len(members) > 1:
            lines.append(f"  and {plural(len(members) - 1, 'more case')} "
                         "(report.md, report.html)")
    return lines


STATUS_LABEL = {"failed": "FAIL", "harness-error": "HARNESS ERROR",
                "caught": "caught", "known": "known", "ignored": "ignored",
                "skipped": "skipped", "ok": "ok"}


# ---------------------------------------------------------------------------
# Markdown

_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&#$])")


def md_text(text):
    """Plain text in Markdown: one line, every character Markdown (or the
    HTML it allows) could act on backslash-escaped."""
    return _MD_SPECIAL.sub(r"\\\1", _one_line(text))


def md_code(text):
    """A code span that holds any text: the fence is longer than any run
    of backticks inside it."""
    text = _one_line(text)
    if not text:
        return "` `"
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def md_command(text):
    """A shell command in Markdown as (inline, block): a one-line command
    is an inline code span and no block; a command of several lines (an
    argument that holds newlines, `python3 -c '...'`) cannot be one, since
    a code span joins its lines into one, and pasted that way it is
    another command. Its inline part then says it follows, and its block
    is a fenced `sh` block at the left margin, the command verbatim (a
    block indented into a list item would indent its lines as well)."""
    text = _clean(text).strip("\n")
    if "\n" not in text:
        return md_code(text), []
    fence = _md_fence(text)
    return "(below)", ["", f"{fence}sh", text, fence, ""]


def md_cell(text, code=False):
    """A table cell: GFM splits cells on '|' even inside code spans, so it
    is escaped in both."""
    out = md_code(text) if code else md_text(text)
    if code:
        out = out.replace("|", "\\|")
    return out


def _md_fence(text):
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def markdown_text(cases, meta, lessons=None):
    cases = _sorted(_check_cases(cases))
    lessons = _check_lessons(lessons)
    return _markdown_text(cases, summarize(cases, meta), lessons)


def _markdown_text(cases, summary, lessons):
    """markdown_text() of checked CASES, sorted, their SUMMARY and checked
    LESSONS."""
    kinds, rows = matrix(cases, summary["variants"],
                         summary["variants_judged"])
    word = outcome_word(summary)
    # an interrupted run says so on the first line
    out = ["# crashcheck report" + (": INTERRUPTED" if word == "INTERRUPTED"
                                    else ": " + sampled_words(summary)
                                    if summary.get("sampled") else ""), ""]

    para = " ".join(md_text(s) for s in summary_sentences(summary))
    para = para.replace(f"{word}", f"**{word}**", 1)
    facts = run_facts(summary)
    command_block = []

    def fact(label, value):
        nonlocal command_block
        if label != "command":
            return f"{label} {md_text(value)}"
        inline, command_block = md_command(value)
        return f"{label} {inline}"
    fact_text = "; ".join(fact(label, value) for label, value in facts)
    if fact_text:
        para += f" Run: {fact_text}."
    out += [para, ""]
    if command_block:
        out += command_block[1:]

    out += ["## Coverage", ""]
    lines = coverage_lines(summary)
    if lines:
        out += [md_text(COVERAGE_BAD), ""] + [f"- {md_text(x)}"
                                              for x in lines]
    else:
        out.append(md_text(COVERAGE_OK))
    out.append("")

    out += ["## Matrix", ""]
    if rows:
        out.append("| workload | strategy | " + " | ".join(kinds) + " |")
        out.append("| --- | --- |" + " --- |" * len(kinds))
        for workload, strategy, is_variant, cells in rows:
            name = md_cell(workload)
            if is_variant:
                name += " *(buggy variant)*"
            line = f"| {name} | {md_cell(strategy or '—')} |"
            for k in kinds:
                line += f" {md_cell(cells[k].text)} |"
            out.append(line)
        out += ["", "✓ all ok · ✗ failing/run with the failing verdicts · "
                "caught: a buggy variant showed the verdict its spec expects "
                "· warning: a finding that lost nothing here, not failing "
                "the run · ⚠ harness error: the planned fault never fired · "
                "`·` no cases", ""]
    else:
        out += ["No cases.", ""]

    if summary["variants"] or summary["not_caught"]:
        out += ["## Buggy variants", ""]
    if summary["variants"]:
        out += ["| variant | must be caught as | result |",
                "| --- | --- | --- |"]
        for v in summary["variants"]:
            if v["met"]:
                result = (f"caught by {plural(v['caught'], 'case')}, e.g. "
                          + md_cell(v["caught_by"][0], code=True))
            elif summary["variants_judged"]:
                result = (f"**NOT CAUGHT** in {plural(v['cases'], 'case')}"
                          " it applied to")
            else:
                result = (f"not seen in {plural(v['cases'], 'case')} here "
                          "(judged when the shards are merged)")
            out.append(f"| {md_cell(v['workload'])} | "
                       f"{md_cell(expect_text(v['expect']))} | {result} |")
        out.append("")
    for line in summary["not_caught"]:
        out.append(f"- ✗ **NOT CAUGHT**: {md_text(line)}")
    if summary["not_caught"]:
        out.append("")

    out += ["## Findings", ""]
    out += _md_findings(cases, summary)

    notes = recovered(cases)
    if notes:
        out += ["## Recovered", "", RECOVERED_HELP, ""]
        for case in notes[:MD_FINDINGS_CAP]:
            out.append(f"- {md_code(case['id'])}: {md_text(case['note'])}")
        if len(notes) > MD_FINDINGS_CAP:
            out.append(f"- and {len(notes) - MD_FINDINGS_CAP} more — see "
                       "results.json")
        out.append("")

    skipped = [c for c in cases if c["verdict"] == "skipped"]
    if skipped:
        out += ["## Skipped", ""]
        by_reason = defaultdict(list)
        for c in skipped:
            by_reason[skip_reason(c)].append(c["id"])
        for reason in sorted(by_reason):
            ids = by_reason[reason]
            shown = ", ".join(md_code(i) for i in ids[:MD_SKIP_IDS])
            more = (f" and {len(ids) - MD_SKIP_IDS} more"
                    if len(ids) > MD_SKIP_IDS else "")
            out.append(f"- {md_text(reason)} — {plural(len(ids), 'case')}: "
                       f"{shown}{more}")
        out.append("")

    if lessons:
        out += ["## Lessons", ""]
        for i, lesson in enumerate(lessons, 1):
            out += [f"### {i}. {md_text(lesson['rule'])}", "",
                    f"Broken by {md_code(lesson['variant'])}; caught by "
                    f"{md_code(lesson['case_id'])} "
                    f"(**{md_text(lesson['verdict'])}**). Reproduce: "
                    f"{md_command(lesson['reproduce'])[0]}", ""]
            out += md_command(lesson["reproduce"])[1][1:]
            if lesson.get("why"):
                out += [f"Why it is caught: {md_text(lesson['why'])}", ""]
            diff = _clean(lesson["diff"]).rstrip("\n")
            fence = _md_fence(diff)
            out += [f"{fence}diff", diff, fence, ""]
    return "\n".join(out).rstrip("\n") + "\n"


def _md_case_line(case):
    st = status(case)
    mark = {"failed": "✗", "harness-error": "⚠", "caught": "✓",
            "known": "○", "ignored": "○", "warning": "△"}[st]
    line = (f"- {mark} {md_code(case['id'])} — **{md_text(case['verdict'])}**")
    if case.get("property") or case.get("severity"):
        bits = [b for b in (case.get("severity"),
                            properties.words(case.get("property"))) if b]
        line += f" ({md_text(', '.join(bits))})"
    if st == "caught":
        line += " (expected: buggy variant caught)"
    elif st == "known":
        line += " (known: in the baseline)"
    elif st == "ignored":
        line += f" (ignored: {md_text(case['ignored'])})"
    elif st == "warning":
        line += " (a warning: reported, not failing the run)"
    elif st == "failed" and case["verdict"] == "ok":
        line += (" (buggy variant not caught: expected "
                 + md_text(", ".join(e["verdict"]
                                     for e in case.get("expected") or []))
                 + ")")
    if case.get("finding"):
        line += ": " + md_text(case["finding"])
    line += md_text(models_note(case))
    if case.get("reproduce"):
        inline, block = md_command(case["reproduce"])
        line += " — reproduce " + inline if block else " — " + inline
        # a block ends the list item: the next case starts a list anew
        return "\n".join([line] + block)
    return line


def _md_findings(cases, summary):
    """The Findings section: one heading per defect (summary["defects"])
    with the explanation of its first case and its cases under it (the
    first MD_DEFECT_CASES with their findings, the others by id); the
    failing cases that found nothing in the program (harness errors, a
    buggy variant's case that caught nothing) after the failing defects,
    and before the defects buggy variants were expected to show."""
    out = []
    by_id = {c["id"]: c for c in cases}
    listed = 0
    groups = summary["defects"]
    if groups:
        n = sum(d["cases"] for d in groups)
        out += [f"{plural(len(groups), 'defect')}, seen in "
                f"{plural(n, 'case')}: the cases of one defect share "
                "the rule it breaks and the call that decided it (or, "
                "without one, the pattern of the files it lost); its verdict "
                "is the worst of theirs, in brackets the property it "
                "breaks.", ""]

    def defect(i, d):
        nonlocal listed
        mark = {"caught": "✓ ", "known": "(known) ",
                "ignored": "(ignored) ", "warning": "(warning) "}.get(
                    d["status"], "")
        covers = plural(d["cases"], "case")
        if d.get("files", 0) > 1:
            covers = f"{plural(d['files'], 'file')}, {covers}"
        if len(d.get("verdicts") or {}) > 1:
            covers += " (" + ", ".join(f"{v} {n}" for v, n in
                                       d["verdicts"].items()) + ")"
        out.extend([f"### {i}. {mark}{md_text(d['title'])} — "
                    f"{md_text(covers)}", ""])
        members = _defect_cases(d, by_id)
        if members[0].get("explanation"):
            out.extend([md_text(members[0]["explanation"]), ""])
        room = max(0, min(MD_DEFECT_CASES, MD_FINDINGS_CAP - listed))
        for case in members[:room]:
            out.append(_md_case_line(case))
        listed += min(room, len(members))
        rest = members[room:]
        if rest:
            ids = ", ".join(md_code(c["id"]) for c in rest[:MD_DEFECT_IDS])
            more = (f" and {len(rest) - MD_DEFECT_IDS} more — see results.json"
                    if len(rest) > MD_DEFECT_IDS else "")
            out.append(f"- and {len(rest)} more: {ids}{more}")
        out.append("")

    failing = [d for d in groups if d["status"] == "failed"]
    for i, d in enumerate(failing, 1):
        defect(i, d)
    others = [c for c in _listed(cases) if not is_finding(c)]
    if others:
        if groups:
            out += ["### Failing cases that found nothing in the program", ""]
        for case in others[:MD_FINDINGS_CAP]:
            out.append(_md_case_line(case))
        if len(others) > MD_FINDINGS_CAP:
            out.append(f"- and {len(others) - MD_FINDINGS_CAP} more — see "
                       "results.json")
        out.append("")
    for i, d in enumerate(groups[len(failing):], len(failing) + 1):
        defect(i, d)
    if not groups and not others:
        out += ["None.", ""]
    return out


# ---------------------------------------------------------------------------
# HTML

def esc(text):
    return html.escape(_clean(text), quote=True)


def _anchor(case_id):
    """An HTML id for a case id ('#', '=', '[' and friends made safe);
    injective, so two cases never share an anchor."""
    return "case-" + re.sub(
        r"[^A-Za-z0-9.-]",
        lambda m: "_%02x" % ord(m.group()) if ord(m.group()) < 0x100
        else "_u%04x" % ord(m.group()), case_id)


_CSS = """
:root { --ok:#1a7f37; --ok-bg:#dafbe1; --bad:#cf222e; --bad-bg:#ffebe9;
  --amber:#9a6700; --amber-bg:#fff8c5; --grey:#57606a; --grey-bg:#f0f2f4;
  --purple:#8250df; --purple-bg:#fbefff; --line:#d0d7de; --ink:#1f2328;
  --muted:#59636e; --code-bg:#f6f8fa; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); background: #fff; line-height: 1.5;
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
header, main, footer { max-width: 1280px; margin: 0 auto; padding: 0 24px; }
header { padding-top: 20px; }
h1 { font-size: 26px; margin: 0 0 8px; display: flex; align-items: center;
  gap: 12px; }
h2 { font-size: 20px; margin: 32px 0 8px; padding-bottom: 4px;
  border-bottom: 1px solid var(--line); }
h3 { font-size: 16px; margin: 0 0 8px; }
h4 { font-size: 13px; margin: 12px 0 4px; color: var(--muted);
  text-transform: uppercase; letter-spacing: .04em; }
code, pre { font: 13px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas,
  "DejaVu Sans Mono", monospace; }
pre { background: var(--code-bg); border: 1px solid var(--line);
  border-radius: 6px; padding: 8px 10px; margin: 0; overflow-x: auto;
  white-space: pre-wrap; word-break: break-all; max-height: 24em; }
p code, li code, td code, dd code, summary code { background: var(--code-bg);
  padding: 1px 4px; border-radius: 4px; }
.badge { font-size: 14px; font-weight: 700; padding: 2px 10px;
  border-radius: 999px; color: #fff; }
.badge.pass { background: var(--ok); } .badge.fail { background: var(--bad); }
.lead { font-size: 16px; margin: 4px 0 12px; max-width: 60em; }
.stats { display: flex; flex-wrap: wrap; gap: 10px; margin: 12px 0; }
.stat { border: 1px solid var(--line); border-radius: 8px; padding: 6px 14px;
  min-width: 110px; }
.stat b { display: block; font-size: 22px; }
.stat span { color: var(--muted); font-size: 13px; }
.stat.bad { border-color: var(--bad); } .stat.bad b { color: var(--bad); }
.stat.amber b { color: var(--amber); } .stat.purple b { color: var(--purple); }
dl.run { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px;
  margin: 8px 0 0; }
dl.run dt { color: var(--muted); } dl.run dd { margin: 0; }
.help { color: var(--muted); max-width: 60em; }
.legend { display: flex; flex-wrap: wrap; gap: 8px 16px; margin: 8px 0 12px;
  font-size: 13px; }
.legend span::before { content: ""; display: inline-block; width: 12px;
  height: 12px; border-radius: 3px; margin-right: 5px; vertical-align: -1px;
  background: var(--c); border: 1px solid var(--b); }
#matrix { position: relative; }
.matrix-wrap { overflow-x: auto; }
table { border-collapse: collapse; }
table.matrix { width: 100%; }
table.matrix th, table.matrix td { border: 1px solid var(--line);
  padding: 6px 8px; text-align: left; vertical-align: top; font-size: 13px; }
table.matrix thead th { background: var(--code-bg); white-space: nowrap; }
table.matrix th.wl { min-width: 9em; }
.tag { display: inline-block; font-size: 11px; font-weight: 600;
  padding: 0 6px; border-radius: 999px; margin-top: 2px; }
.tag.variant { background: var(--amber-bg); color: var(--amber);
  border: 1px solid #d4a72c; }
.tag.uncaught { background: var(--bad); color: #fff; }
td.cell { min-width: 7.5em; }
.s-ok { background: var(--ok-bg); color: var(--ok); }
.s-failed { background: var(--bad-bg); color: var(--bad); font-weight: 600; }
.s-caught { background: var(--amber-bg); color: var(--amber); }
.s-known, .s-ignored { background: var(--grey-bg); color: var(--ink); }
.s-warning { background: var(--amber-bg); color: var(--ink); }
.s-skipped { background: var(--grey-bg); color: var(--grey); }
.s-harness-error { background: var(--purple-bg); color: var(--purple); }
.s-empty { color: #afb8c1; text-align: center; }
td.cell > details > summary { cursor: pointer; }
td.cell > details[open] > summary { text-decoration: underline; }
/* A cell's cases: in the flow of the page, never over the rows below it.
   The script moves them into a row of their own under the cell's row;
   without it they open inside the cell. */
.pop { margin-top: 6px; background: #fff; color: var(--ink);
  font-weight: 400; font-size: 14px; border: 1px solid var(--line);
  border-radius: 8px; padding: 12px 14px;
  box-shadow: 0 4px 12px rgba(31,35,40,.15); }
tr.pop-row > td { padding: 0 8px 10px; background: var(--code-bg); }
tr.group th { background: #fff; font-size: 14px; padding: 12px 8px 4px;
  border-left: none; border-right: none; }
details.case { border: 1px solid var(--line); border-left: 5px solid var(--b);
  border-radius: 6px; margin: 6px 0; background: #fff; }
details.case > summary { cursor: pointer; padding: 6px 10px; }
details.case[open] > summary { border-bottom: 1px solid var(--line); }
.case-body { padding: 4px 12px 12px; }
.case-body .explanation { white-space: pre-wrap; margin: 8px 0; }
.v { font-weight: 700; padding: 0 6px; border-radius: 4px; font-size: 13px; }
.finding { color: var(--ink); }
.c-failed { --b: var(--bad); }
.c-failed .v { color: #fff; background: var(--bad); }
.c-caught { --b: #d4a72c; }
.c-caught .v { color: var(--amber); background: var(--amber-bg); }
.c-known, .c-ignored { --b: var(--grey); }
.c-known .v, .c-ignored .v { color: var(--grey); background: var(--grey-bg); }
.c-warning { --b: var(--amber); }
.c-warning .v { color: var(--amber); background: var(--amber-bg); }
.c-harness-error { --b: var(--purple); }
.c-harness-error .v { color: #fff; background: var(--purple); }
.c-skipped { --b: var(--grey); }
.c-skipped .v { color: var(--grey); background: var(--grey-bg); }
.c-ok { --b: var(--ok); }
.c-ok .v { color: var(--ok); background: var(--ok-bg); }
dl.facts { display: grid; grid-template-columns: max-content 1fr;
  gap: 1px 12px; margin: 6px 0; font-size: 13px; }
dl.facts dt { color: var(--muted); } dl.facts dd { margin: 0; }
.repro { position: relative; }
.repro pre { user-select: all; background: #0d1117; color: #e6edf3;
  border-color: #0d1117; padding-right: 64px; }
/* a code chip's light background must not reach the dark reproduce box
   (td code would: the cases of a cell sit in its td) */
.repro pre code, .repro code { background: none; color: inherit;
  padding: 0; border-radius: 0; }
button.copy { position: absolute; right: 6px; top: 6px; font-size: 12px;
  border: 1px solid #8c959f; border-radius: 4px; background: #f6f8fa;
  cursor: pointer; padding: 1px 8px; }
table.plain th, table.plain td { border: 1px solid var(--line);
  padding: 5px 10px; text-align: left; vertical-align: top; }
table.plain th { background: var(--code-bg); }
.more { color: var(--muted); font-style: italic; }
article.defect { border: 1px solid var(--line); border-left: 5px solid var(--b);
  border-radius: 8px; padding: 8px 14px; margin: 14px 0; }
article.defect h3 .count { color: var(--muted); font-weight: 400;
  font-size: 14px; }
article.defect .explanation { max-width: 60em; }
.lesson { border: 1px solid var(--line); border-radius: 8px;
  padding: 12px 16px; margin: 12px 0; }
pre.diff { max-height: none; }
pre.diff span { display: block; }
pre.diff .add { background: #dafbe1; color: #116329; }
pre.diff .del { background: #ffebe9; color: #82071e; }
pre.diff .hunk { color: #0550ae; background: #ddf4ff; }
pre.diff .file { font-weight: 700; }
footer { color: var(--muted); font-size: 13px; margin-top: 32px;
  padding-bottom: 32px; }
"""

_JS = """
(function () {
  document.querySelectorAll('.repro').forEach(function (box) {
    if (!navigator.clipboard) return;
    var b = document.createElement('button');
    b.type = 'button'; b.className = 'copy'; b.textContent = 'copy';
    b.addEventListener('click', function () {
      navigator.clipboard.writeText(box.querySelector('pre').textContent)
        .then(function () {
          b.textContent = 'copied';
          setTimeout(function () { b.textContent = 'copy'; }, 1500);
        });
    });
    box.appendChild(b);
  });
  /* A cell opens its cases in a row of their own under the cell's row,
     so that they push the rows below down instead of covering them; the
     workload's heading, which spans its rows, spans that one too. One
     open cell at a time. */
  var cells = document.querySelectorAll('td.cell > details');
  function heading(row) {
    for (var r = row; r; r = r.previousElementSibling) {
      var th = r.querySelector('th.wl');
      if (th) return th;
    }
    return null;
  }
  cells.forEach(function (d) {
    var pop = d.querySelector('.pop');
    d.addEventListener('toggle', function () {
      var row = d.closest('tr');
      if (d.open) {
        cells.forEach(function (o) { if (o !== d) o.open = false; });
        if (!pop || d._row) return;
        var th = heading(row);
        var tr = document.createElement('tr');
        tr.className = 'pop-row';
        var td = document.createElement('td');
        td.colSpan = row.closest('table').tHead.rows[0].cells.length
          - (th ? 1 : 0);
        td.appendChild(pop);
        tr.appendChild(td);
        row.parentNode.insertBefore(tr, row.nextSibling);
        if (th) th.rowSpan += 1;
        d._row = tr;
        d._th = th;
      } else if (d._row) {
        d.appendChild(pop);
        d._row.remove();
        if (d._th) d._th.rowSpan -= 1;
        d._row = null;
      }
    });
  });
})();
"""

_LEGEND = (("ok", "all cases ok", "var(--ok-bg)", "var(--ok)"),
           ("failed", "finding or failure", "var(--bad-bg)", "var(--bad)"),
           ("caught", "buggy variant caught as expected", "var(--amber-bg)",
            "#d4a72c"),
           ("known", "known or ignored finding: reported, not failing",
            "var(--grey-bg)", "var(--grey)"),
           ("warning", "warning: nothing lost here, reported, not failing "
            "(--fail-on warning fails it)", "var(--amber-bg)", "var(--amber)"),
           ("skipped", "skipped here", "var(--grey-bg)", "var(--grey)"),
           ("harness-error", "harness error: fault never fired",
            "var(--purple-bg)", "var(--purple)"))


def _case_html(case, anchor=False):
    st = status(case)
    ident = f' id="{_anchor(case["id"])}"' if anchor else ""
    verdict = case["verdict"]
    label = verdict
    if st == "caught":
        label += " (expected)"
    elif st in ("known", "ignored", "warning"):
        label += f" ({st})"
    elif st == "failed" and verdict == "ok":
        label = "not caught"
    h = [f'<details class="case c-{st}"{ident}><summary>'
         f'<code>{esc(case["id"])}</code> <span class="v">{esc(label)}</span>']
    if case.get("finding"):
        h.append(f' <span class="finding">{esc(_one_line(case["finding"]))}'
                 '</span>')
    h.append('</summary><div class="case-body">')
    if case.get("explanation"):
        h.append(f'<p class="explanation">{esc(case["explanation"])}</p>')

    facts = [("workload", case["workload"]),
             ("strategy", case.get("strategy")),
             ("size", f"{case['size']} B" if isinstance(case.get("size"), int)
              else None),
             ("fault class", case["kind"]),
             ("property broken", properties.words(case.get("property"))
              or None),
             ("severity", case.get("severity")),
             ("backend", case.get("backend")),
             ("plan", case.get("plan")),
             ("target call", case.get("call")),
             ("model", model_text(case.get("model"))),
             ("the verdict holds under", ", ".join(case.get("models") or [])
              if case.get("model") else None),
             ("crash states", case.get("states") or None),
             # the sweep also records which crash state decided the verdict
             ("deciding state", case.get("state") or None),
             ("seed", case.get("seed")),
             ("must be caught as", ", ".join(expect_text(e) for e in
                                             case.get("expected") or [])),
             ("location", _location_text(case.get("location"))),
             ("baseline", {"known": "known: a finding of the baseline",
                           "new": "new: not in the baseline"}.get(
                               case.get("baseline"))),
             ("ignored because", case.get("ignored")),
             ("outcome", exit_text(case.get("exit"))),
             ("faults fired", fired_text(case.get("fired"))),
             ("kept files", case.get("dir")),
             # what a long trace or a loud program left out (sweep.TRACE_HEAD)
             ("kept in part", "; ".join(case.get("cut") or []) or None)]
    h.append('<dl class="facts">')
    for name, value in facts:
        if value is None or value == "":
            continue
        tag = "code" if name in ("plan", "target call", "kept files") else None
        value = esc(value)
        h.append(f"<dt>{name}</dt><dd>"
                 + (f"<code>{value}</code>" if tag else value) + "</dd>")
    h.append("</dl>")

    if case.get("reproduce"):
        h.append('<h4>Reproduce</h4><div class="repro"><pre><code>'
                 f'{esc(case["reproduce"])}</code></pre></div>')
    excerpt = case.get("trace_excerpt")
    if isinstance(excerpt, list) and excerpt:
        h.append("<h4>Trace excerpt</h4><pre class=\"trace\">"
                 + esc("\n".join(map(str, excerpt))) + "</pre>")
    err = case.get("stderr")
    if err:
        err = str(err)
        if len(err) > HTML_TEXT_CAP:
            err = (err[:HTML_TEXT_CAP] + f"\n[… {len(err) - HTML_TEXT_CAP} "
                   "more characters in results.json]")
        h.append(f'<h4>stderr</h4><pre class="stderr">{esc(err)}</pre>')
    h.append("</div></details>")
    return "".join(h)


def _html_blocks(cases, summary):
    """The ids of the cases the Findings section shows in full (with an
    anchor), in the order it shows them: (defect or None, case) pairs by
    id. A defect shows its first HTML_DEFECT_CASES, the whole section
    HTML_FINDINGS_CAP at most."""
    by_id = {c["id"]: c for c in cases}
    out = {}
    groups = summary["defects"]
    failing = [d for d in groups if d["status"] == "failed"]
    others = [c for c in _listed(cases) if not is_finding(c)]
    order = [(d, _defect_cases(d, by_id)[:HTML_DEFECT_CASES]) for d in failing]
    order += [(None, others)]
    order += [(d, _defect_cases(d, by_id)[:HTML_DEFECT_CASES])
              for d in groups[len(failing):]]
    for d, members in order:
        for c in members:
            if len(out) >= HTML_FINDINGS_CAP:
                return out
            out[c["id"]] = d
    return out


def _html_findings(cases, summary, blocks):
    by_id = {c["id"]: c for c in cases}
    groups = summary["defects"]
    failing = [d for d in groups if d["status"] == "failed"]
    others = [c for c in _listed(cases) if not is_finding(c)]
    if not groups and not others:
        return ["<p>None: every case held its contract.</p>"]
    h = ['<p class="help">The findings grouped by defect: the cases of one '
         "defect share the rule it breaks and the call that decided it (and "
         "where in the program it was made, when the trace says; without a "
         "call, the pattern of the files it lost), whatever verdict each "
         "showed: the defect's is the worst of theirs, in brackets the "
         "property it breaks. Data lost first, ignored errors last; then the failing "
         "cases that found nothing in the program, then the defects buggy "
         "variants were expected to show. Each case opens to what happened, "
         "the trace around it, the program's stderr and the command that "
         "reproduces it.</p>"]
    if groups:
        n = sum(d["cases"] for d in groups)
        h.append(f"<p><b>{esc(plural(len(groups), 'defect'))}</b>, seen in "
                 f"{esc(plural(n, 'case'))}.</p>")

    def defect(i, d):
        members = _defect_cases(d, by_id)
        st = d["status"]
        covers = plural(d["cases"], "case")
        if d.get("files", 0) > 1:
            covers = f"{plural(d['files'], 'file')}, {covers}"
        if len(d.get("verdicts") or {}) > 1:
            covers += " (" + ", ".join(f"{v} {n}" for v, n in
                                       d["verdicts"].items()) + ")"
        h.append(f'<article class="defect c-{st}"><h3>{i}. '
                 f'<span class="v">{esc(d["verdict"])}</span> '
                 f"{esc(d['title'].partition(': ')[2] or d['title'])} "
                 f'<span class="count">seen in {esc(covers)}'
                 "</span></h3>")
        if members[0].get("explanation"):
            h.append(f'<p class="explanation">{esc(members[0]["explanation"])}</p>')
        shown = [c for c in members if blocks.get(c["id"]) is d]
        for case in shown:
            h.append(_case_html(case, anchor=True))
        rest = [c for c in members if blocks.get(c["id"]) is not d]
        if rest:
            ids = ", ".join(f"<code>{esc(c['id'])}</code>"
                            for c in rest[:HTML_DEFECT_IDS])
            more = (f" and {len(rest) - HTML_DEFECT_IDS} more — see results.json"
                    if len(rest) > HTML_DEFECT_IDS else "")
            h.append(f'<p class="more">and {len(rest)} more cases: {ids}{more}</p>')
        h.append("</article>")

    for i, d in enumerate(failing, 1):
        defect(i, d)
    if others:
        if groups:
            h.append("<h3>Failing cases that found nothing in the program</h3>")
        shown = [c for c in others if c["id"] in blocks]
        for case in shown:
            h.append(_case_html(case, anchor=True))
        if len(others) > len(shown):
            h.append(f'<p class="more">and {len(others) - len(shown)} more — '
                     "see results.json</p>")
    for i, d in enumerate(groups[len(failing):], len(failing) + 1):
        defect(i, d)
    return h


def _location_text(loc):
    """"saver.c:117 (save), /tmp/saver+0x15e0" for a case's location."""
    if not isinstance(loc, dict):
        return None
    raw = f"{loc.get('object')}+{loc.get('offset')}"
    text = loc.get("text") or raw
    return text if text.startswith(os.path.basename(str(loc.get("object")))) \
        else f"{text}, {raw}"


def _cell_html(cell, title):
    cls = f"cell s-{cell.status}"
    if cell.status in ("ok", "empty"):
        return f'<td class="{cls}">{esc(cell.text)}</td>'
    body = [f'<div class="pop"><h3>{esc(title)}</h3>']
    if cell.not_caught:
        body.append('<p><b>Not caught.</b> This buggy variant must be caught '
                    'as ' + esc(", ".join(cell.not_caught)) + ", and no case "
                    "of it was. The test that should catch its defect has "
                    "gone blind.</p>")
    shown = [c for c in cell.notable if status(c) != "skipped"]
    for case in shown[:HTML_CELL_CAP]:
        body.append(_case_html(case))
    if len(shown) > HTML_CELL_CAP:
        body.append(f'<p class="more">and {len(shown) - HTML_CELL_CAP} more '
                    "— see results.json</p>")
    skipped = cell.by["skipped"]
    if skipped:
        body.append("<h4>Skipped</h4><ul>")
        for c in skipped[:HTML_CELL_CAP]:
            body.append(f"<li><code>{esc(c['id'])}</code>: "
                        f"{esc(skip_reason(c))}</li>")
        if len(skipped) > HTML_CELL_CAP:
            body.append(f'<li class="more">and {len(skipped) - HTML_CELL_CAP}'
                        " more</li>")
        body.append("</ul>")
    body.append("</div>")
    return (f'<td class="{cls}"><details><summary>{esc(cell.text)}</summary>'
            + "".join(body) + "</details></td>")


def _diff_html(diff):
    lines = []
    for line in _clean(diff).rstrip("\n").split("\n"):
        if line.startswith(("+++", "---")):
            cls = "file"
        elif line.startswith("@@"):
            cls = "hunk"
        elif line.startswith("+"):
            cls = "add"
        elif line.startswith("-"):
            cls = "del"
        else:
            cls = "ctx"
        lines.append(f'<span class="{cls}">{esc(line) or " "}</span>')
    return '<pre class="diff">' + "".join(lines) + "</pre>"


def html_text(cases, meta, lessons=None):
    cases = _sorted(_check_cases(cases))
    lessons = _check_lessons(lessons)
    return _html_text(cases, summarize(cases, meta), lessons)


def _html_text(cases, summary, lessons):
    """html_text() of checked CASES, sorted, their SUMMARY and checked
    LESSONS."""
    kinds, rows = matrix(cases, summary["variants"],
                         summary["variants_judged"])
    s = summary
    ok = s["passed"] and not s.get("unseen")
    blocks = _html_blocks(cases, s)
    word = outcome_word(s)
    uncaught_wls = {v["workload"] for v in s["variants"]
                    if not v["met"] and s["variants_judged"]}

    h = ['<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
         '<meta name="viewport" content="width=device-width, initial-scale=1">',
         f'<title>crashcheck report: {word}</title>',
         f"<style>{_CSS}</style></head><body>", "<header>",
         f'<h1>crashcheck report <span class="badge {"pass" if ok else "fail"}">'
         f'{word}</span></h1>']
    if s.get("interrupted"):
        h.append('<p class="lead">' + esc(summary_sentences(s)[0]) + "</p>")
    h.append('<p class="lead">' + esc(" ".join(summary_sentences(s)[1:]))
             + "</p>" if len(summary_sentences(s)) > 1 else "")

    stats = [("cases", s["cases"], ""),
             ("findings", s["findings"], ""),
             ("failures", s["failed"], "bad" if s["failed"] else ""),
             ("harness errors", s["harness_errors"],
              "purple" if s["harness_errors"] else ""),
             ("caught as expected", s["caught"], "amber" if s["caught"] else "")]
    stats += [(label, s[key], "") for key, label in
              (("known", "known (baseline)"), ("ignored", "ignored"))
              if s.get(key)]
    stats.append(("skipped", s["skipped"], ""))
    if s["variants"] or s["not_caught"]:
        met = sum(v["met"] for v in s["variants"])
        stats.append(("variant expectations met",
                      f"{met}/{len(s['variants'])}",
                      "bad" if s["not_caught"] else ""))
    h.append('<div class="stats">')
    for label, value, cls in stats:
        h.append(f'<div class="stat {cls}"><b>{esc(value)}</b>'
                 f"<span>{esc(label)}</span></div>")
    h.append("</div>")
    facts = run_facts(s)
    if facts:
        h.append('<dl class="run">')
        for label, value in facts:
            value = esc(value)
            if label == "command":
                value = f"<code>{value}</code>"
            h.append(f"<dt>{esc(label)}</dt><dd>{value}</dd>")
        h.append("</dl>")
    h.append("</header><main>")

    lines = coverage_lines(s)
    h.append('<section id="coverage"><h2>Coverage</h2>')
    if lines:
        h.append(f'<p class="help">{esc(COVERAGE_BAD)}</p><ul>')
        h += [f"<li>{esc(x)}</li>" for x in lines]
        h.append("</ul>")
    else:
        h.append(f'<p class="help">{esc(COVERAGE_OK)}</p>')
    h.append("</section>")

    # The matrix.
    h.append('<section id="matrix"><h2>Matrix</h2>')
    h.append('<p class="help">One row per workload and strategy, one column '
             "per fault class. A cell counts its cases: <b>✓ 42</b> means 42 "
             "cases and the contract held in all of them; <b>✗ 3/42 torn</b> "
             "means 3 of the 42 ended in that verdict. Buggy variants are "
             "programs with a planted defect: for them a finding is the "
             "point, shown in amber when it is the one their spec expects. "
             "Click a coloured cell to see its cases.</p>")
    h.append('<div class="legend">')
    for _, text, bg, border in _LEGEND:
        h.append(f'<span style="--c:{bg};--b:{border}">{esc(text)}</span>')
    h.append("</div>")
    if rows:
        h.append('<div class="matrix-wrap"><table class="matrix"><thead><tr>'
                 '<th>workload</th><th>strategy</th>'
                 + "".join(f"<th>{esc(k)}</th>" for k in kinds)
                 + "</tr></thead><tbody>")
        spans = Counter(r[0] for r in rows)
        previous = None
        group = None
        both = len({r[2] for r in rows}) == 2
        for workload, strategy, is_variant, cells in rows:
            if both and is_variant != group:
                # the correct workloads, then the buggy variants: each
                # under a heading of its own
                group = is_variant
                h.append(f'<tr class="group"><th colspan="{len(kinds) + 2}">'
                         + ("buggy variants: a finding is expected"
                            if is_variant else "correct workloads: every "
                            "case must hold") + "</th></tr>")
            h.append("<tr>")
            if workload != previous:
                tags = ""
                if is_variant:
                    tags += '<br><span class="tag variant">buggy variant</span>'
                if workload in uncaught_wls:
                    tags += ' <span class="tag uncaught">not caught</span>'
                h.append(f'<th class="wl" scope="rowgroup" '
                         f'rowspan="{spans[workload]}">{esc(workload)}'
                         f"{tags}</th>")
                previous = workload
            h.append(f'<th scope="row">{esc(strategy or "—")}</th>')
            for k in kinds:
                title = " · ".join(x for x in (workload, strategy, k) if x)
                h.append(_cell_html(cells[k], title))
            h.append("</tr>")
        h.append("</tbody></table></div>")
    else:
        h.append("<p>No cases.</p>")
    h.append("</section>")

    if s["variants"] or s["not_caught"]:
        h.append('<section id="variants"><h2>Buggy variants</h2>'
                 '<p class="help">Each buggy variant breaks one rule on '
                 "purpose; its spec says which verdict must catch it. One "
                 "that is no longer caught is a failure of the suite.</p>"
                 '<table class="plain"><thead><tr><th>variant</th>'
                 "<th>must be caught as</th><th>result</th></tr></thead>"
                 "<tbody>")
        listed_ids = set(blocks)
        for v in s["variants"]:
            if v["met"]:
                first = v["caught_by"][0]
                ref = f"<code>{esc(first)}</code>"
                if first in listed_ids:
                    ref = f'<a href="#{_anchor(first)}">{ref}</a>'
                result = (f'<span class="s-caught">caught</span> by '
                          f"{esc(plural(v['caught'], 'case'))}, e.g. {ref}")
            elif s["variants_judged"]:
                result = ('<span class="tag uncaught">NOT CAUGHT</span> in '
                          f"{esc(plural(v['cases'], 'case'))} it applied to")
            else:
                result = (f"not seen in {esc(plural(v['cases'], 'case'))} "
                          "here (judged when the shards are merged)")
            h.append(f"<tr><td>{esc(v['workload'])}</td>"
                     f"<td>{esc(expect_text(v['expect']))}</td>"
                     f"<td>{result}</td></tr>")
        h.append("</tbody></table>")
        if s["not_caught"]:
            h.append('<ul class="uncaught">' + "".join(
                f'<li><span class="tag uncaught">NOT CAUGHT</span> '
                f"{esc(line)}</li>" for line in s["not_caught"]) + "</ul>")
        h.append("</section>")

    h.append('<section id="findings"><h2>Findings</h2>')
    h += _html_findings(cases, s, blocks)
    h.append("</section>")

    notes = recovered(cases)
    if notes:
        h.append('<section id="recovered"><h2>Recovered</h2><p class="help">'
                 f"{esc(RECOVERED_HELP)}</p><ul>")
        for case in notes[:HTML_FINDINGS_CAP]:
            h.append(f"<li><code>{esc(case['id'])}</code>: {esc(case['note'])}</li>")
        if len(notes) > HTML_FINDINGS_CAP:
            h.append(f'<li class="more">and {len(notes) - HTML_FINDINGS_CAP} more'
                     " — see results.json</li>")
        h.append("</ul></section>")

    skipped = [c for c in cases if c["verdict"] == "skipped"]
    if skipped:
        by_reason = defaultdict(list)
        for c in skipped:
            by_reason[skip_reason(c)].append(c["id"])
        h.append('<section id="skipped"><h2>Skipped</h2><table class="plain">'
                 "<thead><tr><th>reason</th><th>cases</th></tr></thead><tbody>")
        for reason in sorted(by_reason):
            ids = by_reason[reason]
            shown = ", ".join(f"<code>{esc(i)}</code>"
                              for i in ids[:MD_SKIP_IDS])
            if len(ids) > MD_SKIP_IDS:
                shown += f" and {len(ids) - MD_SKIP_IDS} more"
            h.append(f"<tr><td>{esc(reason)}</td><td>{len(ids)}: {shown}"
                     "</td></tr>")
        h.append("</tbody></table></section>")

    if lessons:
        h.append('<section id="lessons"><h2>Lessons</h2>'
                 '<p class="help">Each rule below is broken on purpose by a '
                 "buggy variant; the case named catches it, and the diff is "
                 "the fix that turns the variant back into the correct "
                 "program.</p>")
        for i, lesson in enumerate(lessons, 1):
            h.append(f'<article class="lesson"><h3>{i}. {esc(lesson["rule"])}'
                     "</h3>"
                     f"<p>Broken by <code>{esc(lesson['variant'])}</code>; "
                     f"caught by <code>{esc(lesson['case_id'])}</code> as "
                     f"<b>{esc(lesson['verdict'])}</b>.</p>"
                     + (f"<p><b>Why it is caught.</b> {esc(lesson['why'])}</p>"
                        if lesson.get("why") else "") +
                     '<h4>Reproduce</h4><div class="repro"><pre><code>'
                     f"{esc(lesson['reproduce'])}</code></pre></div>"
                     "<h4>The fix</h4>" + _diff_html(lesson["diff"])
                     + "</article>")
        h.append("</section>")

    h.append("</main><footer>Every case, with all its fields, is in "
             "results.json next to this file.</footer>")
    h.append(f"<script>{_JS}</script></body></html>\n")
    return "\n".join(x for x in h if x)


# ---------------------------------------------------------------------------
# JUnit XML

def _failure_text(case, defect=None):
    parts = [f"{case['verdict']}: {case.get('finding') or ''}".rstrip(": ")]
    if case.get("property") or case.get("severity"):
        parts.append(f"severity: {case.get('severity') or '-'}; property "
                     f"broken: {properties.words(case.get('property')) or '-'}")
    if defect is not None:
        parts.append(f"defect: {defect['title']} (seen in "
                     f"{plural(defect['cases'], 'case')}, key {defect['key']})")
    if isinstance(case.get("location"), dict) and case["location"].get("text"):
        loc = case["location"]
        parts.append(f"location: {loc['text']} ({loc.get('object')}+"
                     f"{loc.get('offset')})")
    if case.get("explanation"):
        parts.append(case["explanation"])
    if case.get("reproduce"):
        parts.append(f"reproduce: {case['reproduce']}")
    outcome = exit_text(case.get("exit"))
    if outcome:
        parts.append(f"outcome: {outcome}")
    excerpt = case.get("trace_excerpt")
    if isinstance(excerpt, list) and excerpt:
        parts.append("trace:\n" + "\n".join(map(str, excerpt)))
    if case.get("stderr"):
        parts.append("stderr:\n" + str(case["stderr"]))
    return _clean("\n\n".join(parts))


def _run_seconds(timing):
    value = timing.get("duration")
    if _is_number(value):
        return float(value)
    return float(timing["case_seconds"])


def junit_bytes(cases, meta):
    """A JUnit XML document: one testcase per case, plus one failing
    testcase per buggy-variant expectation no case met (the suite must
    fail when a variant stops being caught)."""
    cases = _sorted(_check_cases(cases))
    return _junit_bytes(cases, summarize(cases, meta))


def _junit_bytes(cases, s):
    """junit_bytes() of checked CASES, sorted, and their summary S."""
    unmet = s["not_caught"]
    st = Counter(status(c) for c in cases)
    # a run that did not judge every case is an error of the suite
    incomplete = []
    if s.get("interrupted"):
        incomplete.append(("interrupted", summary_sentences(s)[0]))
    elif s.get("missing"):
        incomplete.append(("missing", summary_sentences(s)[1]))
    # changes no call crashcheck saw made (Coverage): one testcase per
    # workload that had any, a failure when --strict fails the run for
    # them, else passed with the changes in its system-err
    unseen = {}
    for u in s.get("unseen") or []:
        unseen.setdefault(u.get("workload") or "-", []).append(u)
    strict = bool((s.get("run") or {}).get("strict"))
    name = "crashcheck" + (" (INTERRUPTED)" if s.get("interrupted") else
                           " (NOT CLEAN)" if unseen else "") \
        + (f" ({sampled_words(s)})" if s.get("sampled")
           and not s.get("interrupted") else "")
    attrs = {"name": name,
             "tests": str(len(cases) + len(unmet) + len(incomplete)
                          + len(unseen)),
             "failures": str(st["failed"] + len(unmet)
                             + (len(unseen) if strict else 0)),
             "errors": str(st["harness-error"] + len(incomplete)),
             "skipped": str(st["skipped"]),
             "time": f"{_run_seconds(s['timing']):.3f}"}
    root = ET.Element("testsuites", attrs)
    suite_attrs = dict(attrs)
    if s["timing"].get("started"):
        suite_attrs["timestamp"] = _clean(_when(s["timing"]["started"]))
    suite = ET.SubElement(root, "testsuite", suite_attrs)
    props = ET.SubElement(suite, "properties")
    for name, value in run_facts(s):
        if name not in ("started", "duration"):
            ET.SubElement(props, "property", name=name, value=_clean(value))
    if unseen or s.get("sampled"):
        ET.SubElement(props, "property", name="clean", value="false")
    if unseen:
        ET.SubElement(props, "property", name="unseen",
                      value=str(len(s["unseen"])))
    if s.get("sampled"):
        ET.SubElement(props, "property", name="sampled",
                      value=sampled_words(s))

    defect_of = {i: d for d in s["defects"] for i in d["ids"]}
    for case in cases:
        attrs = {
            # crashcheck.replace.stdio; an audit's, which has no
            # strategy, crashcheck.mytool
            "classname": _clean(".".join(
                ["crashcheck", case["workload"]]
                + ([case["strategy"]] if case.get("strategy") else []))),
            "name": _clean(case["id"]),
            "time": f"{float(case.get('duration') or 0):.3f}"}
        loc = case.get("location")
        if isinstance(loc, dict) and loc.get("file") and loc.get("line"):
            # where CI tools put an annotation (pytest writes these too)
            attrs["file"] = _clean(loc["file"])
            attrs["line"] = str(loc["line"])
        tc = ET.SubElement(suite, "testcase", attrs)
        cs = status(case)
        if cs == "failed":
            label = case["verdict"]
            if label == "ok":
                label = "not caught (expected " + ", ".join(
                    e["verdict"] for e in case.get("expected") or []) + ")"
            el = ET.SubElement(tc, "failure", {
                "type": _clean(f"{case['verdict']} ({case['severity']})"
                               if case.get("severity") else case["verdict"]),
                "message": _one_line(f"{label}: {case.get('finding') or ''}"
                                     .rstrip(": "))})
            el.text = _failure_text(case, defect_of.get(case["id"]))
        elif cs == "harness-error":
            el = ET.SubElement(tc, "error", {
                "type": "harness-error",
                "message": _one_line(case.get("finding")
                                     or "planned fault never fired")})
            el.text = _failure_text(case)
        elif cs == "skipped":
            ET.SubElement(tc, "skipped", message=_one_line(skip_reason(case)))
        elif cs in ("caught", "known", "ignored", "warning"):
            why = {"caught": "caught as expected",
                   "known": "a known finding (in the baseline)",
                   "ignored": f"ignored ({case.get('ignored')})",
                   "warning": "a warning, not failing the run (--fail-on "
                              "warning fails it)"}[cs]
            out = ET.SubElement(tc, "system-out")
            out.text = _clean(f"{why}: "
                              + _failure_text(case, defect_of.get(case["id"])))
    for line in unmet:
        tc = ET.SubElement(suite, "testcase", {
            "classname": "crashcheck.variants",
            "name": _one_line(line), "time": "0.000"})
        el = ET.SubElement(tc, "failure", {
            "type": "not-caught",
            "message": _one_line(f"buggy variant not caught: {line}")})
        el.text = _clean(el.get("message"))
    lines = coverage_lines(s)
    for workload, changes in unseen.items():
        tc = ET.SubElement(suite, "testcase", {
            "classname": _clean(f"crashcheck.{workload}.coverage"),
            "name": "unseen changes", "time": "0.000"})
        n = len(changes)
        message = _one_line(
            f"not a clean pass: {n} change{'s' * (n != 1)} made by calls "
            f"crashcheck cannot see" + (" (--strict)" if strict else ""))
        text = _clean("\n".join(
            [message, ""] + [line for line in lines
                             if line.startswith(f"{workload}: ")
                             or workload == "-"] + ["", COVERAGE_BAD]))
        if strict:
            el = ET.SubElement(tc, "failure", {"type": "unseen",
                                               "message": message})
        else:
            el = ET.SubElement(tc, "system-err")
        el.text = text
    for kind, line in incomplete:
        tc = ET.SubElement(suite, "testcase", {
            "classname": "crashcheck.run", "name": kind, "time": "0.000"})
        el = ET.SubElement(tc, "error", {"type": kind,
                                         "message": _one_line(line)})
        el.text = _clean(line)
    ET.indent(root)
    text = ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"
    if incomplete:
        # said before anything else the suite holds
        note = _clean(incomplete[0][1]).replace("--", "- -")
        text = text.replace(b"?>\n", b"?>\n<!-- crashcheck: "
                            + note.encode("utf-8") + b" -->\n", 1)
    return text


# ---------------------------------------------------------------------------
# Command line: render (and merge) existing results without the CLI

USAGE = ("usage: python3 -m harness.reports.report [--junit FILE] [--lessons FILE] "
         "OUTDIR RESULTS...")


def main(argv=None):
    """Merge RESULTS (results directories or results.json files) and write
    results.json, report.md and report.html into OUTDIR."""
    args = list(sys.argv[1:] if argv is None else argv)
    junit = lessons_path = None
    try:
        while args and args[0].startswith("--"):
            opt = args.pop(0)
            if opt in ("--junit", "--lessons") and args:
                value = args.pop(0)
                if opt == "--junit":
                    junit = value
                else:
                    lessons_path = value
            elif opt == "--help":
                print(USAGE)
                return 0
            else:
                raise ReportError(f"unknown option or missing value: {opt} "
                                  f"({USAGE})")
        if len(args) < 2:
            raise ReportError("need an output directory and at least one "
                              f"results directory ({USAGE})")
        outdir, inputs = args[0], args[1:]
        cases, meta = merge(inputs)
        lessons = None
        if lessons_path:
            try:
                lessons = json.loads(Path(lessons_path).read_text("utf-8"))
            except OSError as e:
                raise ReportError(f"read '{lessons_path}': {e.strerror}") \
                    from None
            except (json.JSONDecodeError, UnicodeDecodeError) as e:
                raise ReportError(f"parse '{lessons_path}': invalid JSON: {e}")\
                    from None
        summary = write_all(outdir, cases, meta, lessons)
        if junit:
            write_junit(junit, cases, meta)
    except ReportError as e:
        print(f"report: {e}", file=sys.stderr)
        return 2
    print(" ".join(summary_sentences(summary)))
    return 0 if summary["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
