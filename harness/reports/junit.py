"""junit.xml: one testcase a case, grouped by workload, for CI systems
that read JUnit XML (junit_of from a summary, junit_bytes from cases
and metadata)."""

import xml.etree.ElementTree as ET
from collections import Counter

from ..judging import properties
from .summary import (COVERAGE_BAD, check_cases, clean, coverage_lines,
                      is_number, one_line, outside_text, skip_reason,
                      sorted_cases, status, summarize)
from .words import (exit_text, plural, run_facts, sampled_words,
                    summary_sentences, when_text)


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
    if case.get("outside"):
        parts.append(outside_text(case, cap=20) + " (confined: kept from "
                     "your files)")
    return clean("\n\n".join(parts))


def _run_seconds(timing):
    value = timing.get("duration")
    if is_number(value):
        return float(value)
    return float(timing["case_seconds"])


def junit_bytes(cases, meta):
    """A JUnit XML document: one testcase per case, plus one failing
    testcase per buggy-variant expectation no case met (the suite must
    fail when a variant stops being caught)."""
    cases = sorted_cases(check_cases(cases))
    return junit_of(cases, summarize(cases, meta))


def junit_of(cases, s):
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
        suite_attrs["timestamp"] = clean(when_text(s["timing"]["started"]))
    suite = ET.SubElement(root, "testsuite", suite_attrs)
    _properties(suite, s, unseen)
    defect_of = {i: d for d in s["defects"] for i in d["ids"]}
    for case in cases:
        _case_testcase(suite, case, defect_of)
    _variant_testcases(suite, unmet)
    _unseen_testcases(suite, s, unseen, strict)
    _incomplete_testcases(suite, incomplete)
    ET.indent(root)
    text = ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"
    if incomplete:
        # said before anything else the suite holds
        note = clean(incomplete[0][1]).replace("--", "- -")
        text = text.replace(b"?>\n", b"?>\n<!-- crashcheck: "
                            + note.encode("utf-8") + b" -->\n", 1)
    return text


def _properties(suite, s, unseen):
    """The suite's properties: the run's facts, and whether it is clean,
    its unseen changes and its sample."""
    props = ET.SubElement(suite, "properties")
    for name, value in run_facts(s):
        if name not in ("started", "duration"):
            ET.SubElement(props, "property", name=name, value=clean(value))
    if unseen or s.get("sampled"):
        ET.SubElement(props, "property", name="clean", value="false")
    if unseen:
        ET.SubElement(props, "property", name="unseen",
                      value=str(len(s["unseen"])))
    if s.get("sampled"):
        ET.SubElement(props, "property", name="sampled",
                      value=sampled_words(s))


def _case_testcase(suite, case, defect_of):
    """CASE's testcase: a failure, an error, skipped, or passed with why
    in its system-out when it is not plain ok (DEFECT_OF: case id -> the
    defect it belongs to)."""
    attrs = {
        # crashcheck.replace.stdio; an audit's, which has no
        # strategy, crashcheck.mytool
        "classname": clean(".".join(
            ["crashcheck", case["workload"]]
            + ([case["strategy"]] if case.get("strategy") else []))),
        "name": clean(case["id"]),
        "time": f"{float(case.get('duration') or 0):.3f}"}
    loc = case.get("location")
    if isinstance(loc, dict) and loc.get("file") and loc.get("line"):
        # where CI tools put an annotation (pytest writes these too)
        attrs["file"] = clean(loc["file"])
        attrs["line"] = str(loc["line"])
    tc = ET.SubElement(suite, "testcase", attrs)
    cs = status(case)
    if cs == "failed":
        label = case["verdict"]
        if label == "ok":
            label = "not caught (expected " + ", ".join(
                e["verdict"] for e in case.get("expected") or []) + ")"
        el = ET.SubElement(tc, "failure", {
            "type": clean(f"{case['verdict']} ({case['severity']})"
                           if case.get("severity") else case["verdict"]),
            "message": one_line(f"{label}: {case.get('finding') or ''}"
                                 .rstrip(": "))})
        el.text = _failure_text(case, defect_of.get(case["id"]))
    elif cs == "harness-error":
        el = ET.SubElement(tc, "error", {
            "type": "harness-error",
            "message": one_line(case.get("finding")
                                 or "planned fault never fired")})
        el.text = _failure_text(case)
    elif cs == "skipped":
        ET.SubElement(tc, "skipped", message=one_line(skip_reason(case)))
    elif cs in ("caught", "known", "ignored", "warning"):
        why = {"caught": "caught as expected",
               "known": "a known finding (in the baseline)",
               "ignored": f"ignored ({case.get('ignored')})",
               "warning": "a warning, not failing the run (--fail-on "
                          "warning fails it)"}[cs]
        out = ET.SubElement(tc, "system-out")
        out.text = clean(f"{why}: "
                          + _failure_text(case, defect_of.get(case["id"])))


def _variant_testcases(suite, unmet):
    """A failing testcase per buggy variant's expectation not caught
    (UNMET)."""
    for line in unmet:
        tc = ET.SubElement(suite, "testcase", {
            "classname": "crashcheck.variants",
            "name": one_line(line), "time": "0.000"})
        el = ET.SubElement(tc, "failure", {
            "type": "not-caught",
            "message": one_line(f"buggy variant not caught: {line}")})
        el.text = clean(el.get("message"))


def _unseen_testcases(suite, s, unseen, strict):
    """A testcase per workload with changes no call crashcheck saw made
    (UNSEEN: workload -> changes): a failure under STRICT, else passed
    with the changes in its system-err."""
    lines = coverage_lines(s)
    for workload, changes in unseen.items():
        tc = ET.SubElement(suite, "testcase", {
            "classname": clean(f"crashcheck.{workload}.coverage"),
            "name": "unseen changes", "time": "0.000"})
        n = len(changes)
        message = one_line(
            f"not a clean pass: {n} change{'s' * (n != 1)} made by calls "
            f"crashcheck cannot see" + (" (--strict)" if strict else ""))
        text = clean("\n".join(
            [message, ""] + [line for line in lines
                             if line.startswith(f"{workload}: ")
                             or workload == "-"] + ["", COVERAGE_BAD]))
        if strict:
            el = ET.SubElement(tc, "failure", {"type": "unseen",
                                               "message": message})
        else:
            el = ET.SubElement(tc, "system-err")
        el.text = text


def _incomplete_testcases(suite, incomplete):
    """An error testcase per reason the run did not judge every case
    (INCOMPLETE: (kind, sentence))."""
    for kind, line in incomplete:
        tc = ET.SubElement(suite, "testcase", {
            "classname": "crashcheck.run", "name": kind, "time": "0.000"})
        el = ET.SubElement(tc, "error", {"type": kind,
                                         "message": one_line(line)})
        el.text = clean(line)
