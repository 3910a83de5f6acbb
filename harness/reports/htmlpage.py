"""report.html: one self-contained page (its CSS and script inline),
from a run's summary (html_of) or from its cases and metadata
(html_text)."""

import html
import os
import re
from collections import Counter, defaultdict

from ..judging import properties
from . import console
from .summary import (COVERAGE_BAD, COVERAGE_OK, HTML_CELL_CAP,
                      HTML_DEFECT_CASES, HTML_DEFECT_IDS, HTML_FINDINGS_CAP,
                      HTML_TEXT_CAP, MD_SKIP_IDS, RECOVERED_HELP, check_cases,
                      check_lessons, clean, coverage_lines, defect_cases,
                      expect_text, is_finding, matrix, one_line, recovered,
                      skip_reason, sorted_cases, status, summarize)
from .words import (exit_text, fired_text, listed_cases, model_text,
                    outcome_word, plural, run_facts, summary_sentences)


# ---------------------------------------------------------------------------
# HTML

def esc(text):
    return html.escape(clean(text), quote=True)


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
        h.append(f' <span class="finding">{esc(one_line(case["finding"]))}'
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
             # what a long trace or a loud program left out (results.TRACE_HEAD)
             ("kept in part", "; ".join(case.get("cut") or []) or None),
             # what the library did not write (--trace-limit)
             ("trace cut", console.trace_cut_text(case["trace_cut"])
              if case.get("trace_cut") else None)]
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
    if case.get("outside"):
        h.append("<h4>Written outside its scratch</h4><p>confined: your "
                 "files untouched, the writes thrown away</p><pre>"
                 + esc("\n".join(map(str, case["outside"]))) + "</pre>")
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
    others = [c for c in listed_cases(cases) if not is_finding(c)]
    order = [(d, defect_cases(d, by_id)[:HTML_DEFECT_CASES]) for d in failing]
    order += [(None, others)]
    order += [(d, defect_cases(d, by_id)[:HTML_DEFECT_CASES])
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
    others = [c for c in listed_cases(cases) if not is_finding(c)]
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
        members = defect_cases(d, by_id)
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
    for line in clean(diff).rstrip("\n").split("\n"):
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
    cases = sorted_cases(check_cases(cases))
    lessons = check_lessons(lessons)
    return html_of(cases, summarize(cases, meta), lessons)


def html_of(cases, summary, lessons):
    """html_text() of checked CASES, sorted, their SUMMARY and checked
    LESSONS."""
    s = summary
    blocks = _html_blocks(cases, s)
    h = _html_header(s)
    h += _html_coverage(s)
    h += _html_matrix(cases, s)
    h += _html_variants(s, blocks)
    h.append('<section id="findings"><h2>Findings</h2>')
    h += _html_findings(cases, s, blocks)
    h.append("</section>")
    h += _html_recovered(cases)
    h += _html_skipped(cases)
    h += _html_lessons(lessons)
    h.append("</main><footer>Every case, with all its fields, is in "
             "results.json next to this file.</footer>")
    h.append(f"<script>{_JS}</script></body></html>\n")
    return "\n".join(x for x in h if x)


def _html_header(s):
    """The page's head and header: the outcome's badge, the first
    sentences, the counts and the facts of the run."""
    ok = s["passed"] and not s.get("unseen")
    word = outcome_word(s)
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
    return h


def _html_coverage(s):
    """The Coverage section: changes made by calls crashcheck cannot see."""
    h = []
    lines = coverage_lines(s)
    h.append('<section id="coverage"><h2>Coverage</h2>')
    if lines:
        h.append(f'<p class="help">{esc(COVERAGE_BAD)}</p><ul>')
        h += [f"<li>{esc(x)}</li>" for x in lines]
        h.append("</ul>")
    else:
        h.append(f'<p class="help">{esc(COVERAGE_OK)}</p>')
    h.append("</section>")
    return h


def _html_matrix(cases, s):
    """The Matrix section: one row per workload and strategy, one
    column per fault class."""
    kinds, rows = matrix(cases, s["variants"], s["variants_judged"])
    uncaught_wls = {v["workload"] for v in s["variants"]
                    if not v["met"] and s["variants_judged"]}
    h = []
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
    return h


def _html_variants(s, blocks):
    """The Buggy variants section: each variant's expectation and
    whether a case met it (linked to its block where one is listed)."""
    h = []
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
    return h


def _html_recovered(cases):
    """The Recovered section: faults on the data path the program
    came through."""
    h = []
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
    return h


def _html_skipped(cases):
    """The Skipped section: the cases that cannot run here, by reason."""
    h = []
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
    return h


def _html_lessons(lessons):
    """The Lessons section of the teaching corpus: rule, catching
    case, the fix as a diff."""
    h = []
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
    return h
