"""results.sarif: the findings in SARIF 2.1.0, for code scanning.

SARIF (OASIS, Static Analysis Results Interchange Format, version 2.1.0)
is what GitHub code scanning and other CI annotators read. One run, whose
tool is crashcheck with one rule per verdict; one result per finding that
the run counts against the program: a failure, a known finding of the
baseline (baselineState "unchanged"; a new one is "new") or an ignored one
(an external suppression carrying its reason), a warning that passed
(crash-model.md, "Severity"), and a harness error. A buggy variant's
expected finding is the corpus doing its job, not a result. A result's
level is its case's severity (error or warning); its property bag names
the property the finding breaks (`property`, "atomicity/append", and
`propertyText`, its words) and carries it, with the severity, as tags. A change made by a call crashcheck cannot see (summary.unseen,
docs/reference.md "Coverage") is a notification of the invocation
(toolExecutionNotifications, id "unseen-change"), one per change naming
its file: a warning, an error when --strict fails the run for it. A run
that left cases out (summary.sampled) says so in a warning of the
invocation (id "sampled") and in the run's properties ("sampled":
"SAMPLED 90 of 405 cases").

A result's location is its case's `location` (the call that decided it,
symbolized: file, line, function; docs/reference.md): the file and line
when known (a path relative to the directory crashcheck ran in is given
relative, against %SRCROOT%; an absolute one as a file: URI), else the
object (the program) with the function as a logical location, else none.
"""

import json
from pathlib import PurePosixPath
from urllib.parse import quote

from .. import VERSION
from ..judging import properties
from . import regress
from .report import write_atomic
from .words import sampled_words

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"

# the verdict's one-line meaning (crashcheck help verdicts)
_LEVEL = {"ignored-error": "warning", "harness-error": "error"}


def _meanings():
    from . import topics
    return topics.MEANINGS


def _uri(path):
    """(uri, uriBaseId or None) of a path."""
    p = PurePosixPath(path)
    if p.is_absolute():
        return "file://" + quote(str(p)), None
    return quote(str(p)), "%SRCROOT%"


def _location(case):
    loc = case.get("location")
    if not isinstance(loc, dict):
        return []
    out = {}
    logical = []
    if loc.get("function"):
        logical.append({"name": str(loc["function"]), "kind": "function"})
    if loc.get("file"):
        uri, base = _uri(str(loc["file"]))
        art = {"uri": uri}
        if base:
            art["uriBaseId"] = base
        phys = {"artifactLocation": art}
        line = loc.get("line")
        if isinstance(line, int) and line >= 1:
            phys["region"] = {"startLine": line}
        out["physicalLocation"] = phys
    elif loc.get("object"):
        uri, base = _uri(str(loc["object"]))
        art = {"uri": uri}
        if base:
            art["uriBaseId"] = base
        out["physicalLocation"] = {"artifactLocation": art}
    if logical:
        out["logicalLocations"] = logical
    if loc.get("text"):
        out["message"] = {"text": str(loc["text"])}
    return [out] if out else []


def _fallback(case, summary):
    """Where a finding with no call site of its own is placed (a
    harness-error, a finding under the system-call backend, a crash state
    after exit): its spec file, or the audited program. GitHub's code
    scanning refuses a whole log with one result without a location."""
    run = summary.get("run") or {}
    specs = [str(p) for p in run.get("specs") or ()]
    path = next((p for p in specs if PurePosixPath(p).stem == case["workload"]),
                specs[0] if specs else None)
    what = "the spec of this workload"
    if path is None:
        program = (run.get("audit") or {}).get("program") or ()
        path = str(program[0]) if program else case["workload"]
        what = "the audited program"
    uri, base = _uri(path)
    art = {"uri": uri}
    if base:
        art["uriBaseId"] = base
    return [{"physicalLocation": {"artifactLocation": art},
             "message": {"text": f"{what}: no call site is known for this "
                                 "finding"}}]


def _message(case):
    from .console import first_sentence
    text = f"{case['id']}: {case['verdict']}"
    prop = case.get("property")
    if prop:
        text += f" ({properties.words(prop)})"
    if case.get("finding"):
        text += f": {case['finding']}"
    why = first_sentence(case.get("explanation"))
    if why:
        text += f". {why}" if not text.endswith(".") else f" {why}"
    if case.get("reproduce"):
        text += f" Reproduce: {case['reproduce']}"
    return text


def results_of(cases):
    """The cases that become SARIF results, in id order."""
    return sorted((c for c in cases
                   if regress.counts_against(c)
                   or c.get("verdict") == "harness-error"),
                  key=lambda c: c["id"])


def sarif(cases, summary):
    """The SARIF log (a dict) of a run's CASES and SUMMARY."""
    listed = results_of(cases)
    verdicts = sorted({c["verdict"] for c in listed})
    meanings = _meanings()
    rules = [{"id": v, "name": v,
              "shortDescription": {"text": meanings.get(v, v)},
              "defaultConfiguration": {"level": _LEVEL.get(v, "error")}}
             for v in verdicts]
    index = {v: i for i, v in enumerate(verdicts)}
    results = []
    for c in listed:
        prop = c.get("property") or (c.get("cause") or {}).get("property")
        r = {"ruleId": c["verdict"], "ruleIndex": index[c["verdict"]],
             # the case's severity (crash-model.md, "Severity"): an
             # EINTR that cannot happen where it ran is a warning whatever
             # its verdict
             "level": c.get("severity") or _LEVEL.get(c["verdict"], "error"),
             "message": {"text": _message(c)},
             "locations": _location(c) or _fallback(c, summary),
             "partialFingerprints": {
                 "crashcheckCase/v1": f"{c['id']}:{c['verdict']}"},
             "properties": {"case": c["id"], "kind": c.get("kind"),
                            "model": c.get("model"),
                            "models": c.get("models") or [],
                            "property": prop,
                            "propertyText": properties.words(prop) or None,
                            "tags": [t for t in (
                                prop and prop.split("/")[0],
                                c.get("severity")) if t],
                            "reproduce": c.get("reproduce", "")}}
        if c.get("baseline") == "known":
            r["baselineState"] = "unchanged"
        elif c.get("baseline") == "new":
            r["baselineState"] = "new"
        if c.get("ignored"):
            r["suppressions"] = [{"kind": "external", "status": "accepted",
                                  "justification": c["ignored"]}]
        results.append(r)
    notes = [_unseen_note(u, summary) for u in summary.get("unseen") or []]
    sampled = summary.get("sampled")
    if sampled:
        notes.insert(0, {
            "level": "warning",
            "descriptor": {"id": "sampled"},
            "message": {"text": f"{sampled_words(summary)}: not a clean "
                        "pass; the cases left out were never run "
                        "(--exhaustive, or a larger --budget, runs every "
                        "one)"},
            "properties": dict(sampled)})
    run = {
        "tool": {"driver": {"name": "crashcheck", "version": VERSION,
                            "rules": rules}},
        **({"properties": {"sampled": sampled_words(summary)}}
           if summary.get("sampled") else {}),
        "invocations": [{
            # an interrupted run, or one with cases it could not judge,
            # did not do what it was asked
            "executionSuccessful": not summary.get("interrupted")
            and not summary.get("missing"),
            **({"toolExecutionNotifications": notes} if notes else {}),
            **({"commandLine": summary["command"]}
               if summary.get("command") else {})}],
        "originalUriBaseIds": {"%SRCROOT%": {
            "description": {"text": "the directory crashcheck ran in"}}},
        "results": results,
    }
    return {"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}


def _unseen_note(change, summary):
    """A warning of the invocation for a change no call crashcheck saw
    made (summary.unseen): the run is not a clean pass."""
    from .summary import coverage_lines
    line, = coverage_lines({"unseen": [change]})
    strict = bool((summary.get("run") or {}).get("strict"))
    return {"level": "error" if strict else "warning",
            "descriptor": {"id": "unseen-change"},
            "message": {"text": f"{line}: not a clean pass"
                        + (", and --strict fails the run" if strict else
                           ". No fault reached that call and no power cut "
                           "was simulated where it happened.")},
            "properties": {k: change.get(k) for k in
                           ("workload", "path", "what", "at", "seq")}}


def write(path, cases, summary):
    """results.sarif at PATH, written whole to a temporary file and
    renamed, as every report is (never through a link by that name)."""
    write_atomic(path, json.dumps(sarif(cases, summary), indent=1,
                                   sort_keys=True) + "\n")
