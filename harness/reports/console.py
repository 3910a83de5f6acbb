"""What the console shows of a run: each failing defect with its cases
(console_lines), the buggy variants caught (caught_lines), and of a case
the first sentence of its explanation under its FINDING line."""

import re
from collections import defaultdict

from .. import dropped_text
from .summary import defect_cases, outside, outside_text, status
from .words import plural

# up to the first full stop followed by a space or the end: not the dot of
# a file name ('target.tmp') nor of "e.g." or "i.e."
_SENTENCE = re.compile(r"(.*?(?<!e\.g)(?<!i\.e)[.!?])(?=\s|$)")


def first_sentence(text):
    """The first sentence of a finding's explanation: the console's "why"
    under its FINDING line; the rest is in the reports."""
    text = " ".join((text or "").split())
    m = _SENTENCE.match(text)
    return m.group(1) if m else text



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


def finding_lines(c, indent="", word="FINDING"):
    """A case's lines on the console, INDENT before each: its WORD line,
    the first sentence of its explanation, its reproduce command."""
    lines = [f"{indent}{word} {c['id']}: {c['verdict']}: "
             f"{c.get('finding') or ''}{models_note(c)}"]
    why = first_sentence(c.get("explanation"))
    if why:
        lines.append(f"{indent}  why: {why}")
    if c.get("trace_cut") and not (c.get("finding") or "").startswith(
            "crashcheck's trace limit"):
        # judged on what it saw: the time limit ended it (engine/tracecut.py)
        lines.append(f"{indent}  trace: {trace_cut_text(c['trace_cut'])}")
    if c.get("reproduce"):
        lines.append(f"{indent}  reproduce: {c['reproduce']}")
    return lines


def trace_cut_text(cut):
    """What results.json's trace_cut says, in words."""
    return ("cut at --trace-limit, judged on what it showed before: " +
            dropped_text(cut["limit"], cut["lines"], cut["bytes"]))


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
        members = [c for c in defect_cases(d, by_id) if not c["passed"]]
        for c in members[:per_defect]:
            lines += finding_lines(c, "  ")
        if len(members) > per_defect:
            lines.append(f"  and {len(members) - per_defect} more cases of this "
                         "defect (every one in report.md and results.json)")
        shown.update(d["ids"])
    for c in sorted(cases, key=lambda c: c["id"]):
        if not c["passed"] and c["id"] not in shown:
            lines += finding_lines(c)
    # grouped by what was written: a program that writes its history
    # file in every case is one line
    groups = defaultdict(list)
    for c in outside(cases):
        groups[tuple(c["outside"])].append(c["id"])
    for paths, ids in sorted(groups.items(), key=lambda g: min(g[1])):
        lines.append(f"OUTSIDE {plural(len(ids), 'case')} (e.g. "
                     f"{min(ids)}): "
                     + outside_text({"outside": list(paths)})
                     + " (confined: your files untouched)")
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
        members = [c for c in defect_cases(d, by_id)
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
