"""report.md: the run's story in Markdown, from its summary (markdown_of)
or from its cases and metadata (markdown_text)."""

import re
from collections import defaultdict

from ..judging import properties
from .console import models_note
from .summary import (COVERAGE_BAD, COVERAGE_OK, MD_DEFECT_CASES,
                      MD_DEFECT_IDS, MD_FINDINGS_CAP, MD_SKIP_IDS,
                      OUTSIDE_HELP, RECOVERED_HELP, check_cases, check_lessons,
                      clean, coverage_lines, defect_cases, expect_text,
                      is_finding, matrix, one_line, outside, recovered,
                      skip_reason, sorted_cases, status, summarize)
from .words import (listed_cases, outcome_word, plural, run_facts,
                    sampled_words, summary_sentences)


# ---------------------------------------------------------------------------
# Markdown

_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&#$])")


def md_text(text):
    """Plain text in Markdown: one line, every character Markdown (or the
    HTML it allows) could act on backslash-escaped."""
    return _MD_SPECIAL.sub(r"\\\1", one_line(text))


def md_code(text):
    """A code span that holds any text: the fence is longer than any run
    of backticks inside it."""
    text = one_line(text)
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
    text = clean(text).strip("\n")
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
    cases = sorted_cases(check_cases(cases))
    lessons = check_lessons(lessons)
    return markdown_of(cases, summarize(cases, meta), lessons)


def markdown_of(cases, summary, lessons):
    """markdown_text() of checked CASES, sorted, their SUMMARY and checked
    LESSONS."""
    out = _md_head(summary)
    out += _md_coverage(summary)
    out += _md_matrix(cases, summary)
    out += _md_variants(summary)
    out += ["## Findings", ""]
    out += _md_findings(cases, summary)
    out += _md_recovered(cases)
    out += _md_outside(cases)
    out += _md_skipped(cases)
    out += _md_lessons(lessons)
    return "\n".join(out).rstrip("\n") + "\n"


def _md_head(summary):
    """The report's title and its first paragraph: the outcome and the
    run's facts (its command in a block of its own)."""
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
    return out


def _md_coverage(summary):
    """The Coverage section: what the run could not see, or that it saw
    everything."""
    out = ["## Coverage", ""]
    lines = coverage_lines(summary)
    if lines:
        out += [md_text(COVERAGE_BAD), ""] + [f"- {md_text(x)}"
                                              for x in lines]
    else:
        out.append(md_text(COVERAGE_OK))
    out.append("")
    return out


def _md_matrix(cases, summary):
    """The Matrix section: each workload and strategy, a cell per kind
    of case."""
    kinds, rows = matrix(cases, summary["variants"],
                         summary["variants_judged"])
    out = ["## Matrix", ""]
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
    return out


def _md_variants(summary):
    """The Buggy variants section: each variant and whether it was
    caught, and the expectations not caught."""
    out = []
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
    return out


def _md_recovered(cases):
    """The Recovered section: the cases whose program recovered."""
    out = []
    notes = recovered(cases)
    if notes:
        out += ["## Recovered", "", RECOVERED_HELP, ""]
        for case in notes[:MD_FINDINGS_CAP]:
            out.append(f"- {md_code(case['id'])}: {md_text(case['note'])}")
        if len(notes) > MD_FINDINGS_CAP:
            out.append(f"- and {len(notes) - MD_FINDINGS_CAP} more — see "
                       "results.json")
        out.append("")
    return out


def _md_outside(cases):
    """The section of the cases that wrote outside their scratch."""
    out = []
    wrote = outside(cases)
    if wrote:
        out += ["## Written outside the scratch", "", OUTSIDE_HELP, ""]
        for case in wrote[:MD_FINDINGS_CAP]:
            paths = case["outside"]
            more = f" and {len(paths) - 20} more" if len(paths) > 20 else ""
            out.append(f"- {md_code(case['id'])}: wrote outside its scratch: "
                       + ", ".join(md_code(p) for p in paths[:20]) + more)
        if len(wrote) > MD_FINDINGS_CAP:
            out.append(f"- and {len(wrote) - MD_FINDINGS_CAP} more — see "
                       "results.json")
        out.append("")
    return out


def _md_skipped(cases):
    """The Skipped section: skipped cases by reason."""
    out = []
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
    return out


def _md_lessons(lessons):
    """The Lessons section: each lesson's rule, the case that caught
    it, and its fix as a diff."""
    out = []
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
            diff = clean(lesson["diff"]).rstrip("\n")
            fence = _md_fence(diff)
            out += [f"{fence}diff", diff, fence, ""]
    return out


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
    note = models_note(case)
    if note:
        # md_text keeps one line, and trims the note's leading space
        line += " " + md_text(note)
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
        members = defect_cases(d, by_id)
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
    others = [c for c in listed_cases(cases) if not is_finding(c)]
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
