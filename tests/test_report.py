"""Tests of harness/reports/report.py: results.json, report.md, report.html, JUnit
XML and the merge of shards, on synthetic case lists that cover every
verdict, buggy variants caught and not caught, skips and harness errors.

`python3 tests/test_report.py OUT.html` renders a sample report of about
200 synthetic cases, to look at.
"""

import json
import random
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness import UsageError  # noqa: E402
from harness.reports import (console, htmlpage, junit, markdown,  # noqa: E402
                              report, summary)
from harness.reports.summary import ReportError  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

HOSTILE = '<script>alert("x")</script> & | `tick`'

META = {"command": ["scripts/crashcheck", "run", "--seed=7", "replace"],
        "seed": 7, "models": ["posix", "ext4-ordered"],
        "started": "2024-05-01T10:00:00Z", "duration": 12.5}


def mk(cid, workload="replace", strategy="stdio", kind="eio",
       verdict="ok", passed=None, expected=(), finding="", model=None,
       size=4096, reproduce=None, stderr="", explanation="", duration=0.01,
       plan=None, call=None):
    """One case result in the schema of docs/design.md."""
    if passed is None:
        passed = verdict == "ok" or any(e["verdict"] == verdict
                                        for e in expected)
    if plan is None:
        plan = "" if kind in ("baseline", "powerloss") else "fsync#1=EIO"
    return {
        "id": cid, "workload": workload, "strategy": strategy, "size": size,
        "kind": kind, "plan": plan, "call": call or "fsync#1",
        "model": model, "states": 4 if kind == "powerloss" else 0, "seed": 7,
        "verdict": verdict, "passed": passed, "expected": list(expected),
        "finding": finding, "explanation": explanation,
        "reproduce": reproduce if reproduce is not None else
        f"scripts/crashcheck inject '{plan}' -- workloads/bin/{workload} "
        f"--strategy={strategy} target new # {cid}",
        "exit": {"status": 0 if verdict == "ok" else 1, "signal": None,
                 "timed_out": verdict == "hang"},
        "stderr": stderr,
        "fired": [{"rule": plan, "count": 1}] if plan else [],
        "trace_excerpt": [f"{call or 'fsync#1'} fd=3 'target.tmp' = -1 EIO "
                          "[fault]"] if plan else [],
        "dir": f"results/cases/{cid}/" if verdict != "ok" else "",
        "duration": duration,
    }


NOT_DURABLE = {"verdict": "not-durable", "kind": "powerloss"}
LOST = {"verdict": "lost-update", "model": "posix"}


def every_case():
    """Every verdict, a caught and an uncaught buggy variant, skips with
    two reasons, a harness error, hostile text."""
    cases = [
        mk("replace-stdio-4096B-baseline", kind="baseline"),
        mk("replace-stdio-4096B-write#1=EINTR", kind="eintr"),
        mk("replace-stdio-4096B-write#1=short", kind="short",
           verdict="gave-up-on-transient",
           finding="write#1 short 2048 of 4096, program exited 1"),
        mk("replace-stdio-4096B-write#1+=ENOSPC", kind="enospc",
           verdict="unreported-error",
           finding="write#1 = ENOSPC, program exited 0"),
        mk("replace-stdio-4096B-fsync#1=EIO", kind="eio", verdict="torn",
           finding=f"expected old or new, found {HOSTILE}",
           explanation="the target\nis | torn", stderr=HOSTILE + "\x01\n",
           reproduce="scripts/crashcheck inject 'fsync#1=EIO' -- "
                     "workloads/bin/replace '<a&b>' | cat"),
        mk("replace-stdio-4096B-rename#1=crash", kind="crash",
           verdict="missing", finding="target missing"),
        mk("replace-stdio-4096B-powerloss@exit[posix]", kind="powerloss",
           model="posix", verdict="not-durable",
           finding="state 2 holds the old content"),
        mk("replace-stdio-4096B-powerloss@exit[ext4-ordered]",
           kind="powerloss", model="ext4-ordered", verdict="lost-update",
           finding="visible target is old"),
        mk("replace-sync-4096B-write#1=crash", strategy="sync", kind="crash",
           verdict="crashed", finding="killed by SIGSEGV"),
        mk("replace-sync-4096B-baseline", strategy="sync", kind="baseline",
           verdict="hang", finding="ran past 10 s"),
        mk("replace-sync-4096B-close#1=EIO", strategy="sync", kind="eio",
           verdict="harness-error", passed=False,
           finding="rule close#1=EIO never fired"),
        mk("replace-direct-4096B-baseline", strategy="direct",
           kind="baseline", verdict="skipped", passed=True,
           finding="O_DIRECT unsupported on this filesystem"),
        mk("replace-direct-4096B-write#1=EIO", strategy="direct", kind="eio",
           verdict="skipped", passed=True,
           finding="O_DIRECT unsupported on this filesystem"),
        mk("replace-mmap-0B-baseline", strategy="mmap", kind="baseline",
           size=0, verdict="skipped", passed=True,
           finding="mmap of an empty file | not possible"),
        # A buggy variant caught as its spec expects ...
        mk("nofsync-stdio-4096B-powerloss@exit[posix]", workload="nofsync",
           kind="powerloss", model="posix", verdict="not-durable",
           expected=[NOT_DURABLE], finding="state 1 holds 0 bytes"),
        mk("nofsync-stdio-4096B-powerloss@rename#1[posix]",
           workload="nofsync", kind="powerloss", model="posix",
           expected=[NOT_DURABLE]),
        mk("nofsync-stdio-4096B-baseline", workload="nofsync",
           kind="baseline"),
        # ... and one that no case catches any more.
        mk("noretry-stdio-4096B-write#1=EINTR", workload="noretry",
           kind="eintr", model="posix", expected=[LOST]),
        mk("noretry-stdio-4096B-baseline", workload="noretry",
           kind="baseline", model="posix", expected=[LOST]),
    ]
    return cases


def cell_texts(cases):
    kinds, rows = summary.matrix(cases)
    return {(w, s, k): cells[k].text for w, s, _, cells in rows
            for k in kinds}, {(w, s, k): cells[k].status
                              for w, s, _, cells in rows for k in kinds}


def failing(cases):
    return [c for c in cases if summary.status(c) in ("failed",
                                                     "harness-error")]


# ---------------------------------------------------------------------------
# summary


def test_summary_counts_every_verdict():
    cases = every_case()
    s = summary.summarize(cases, META)
    assert s["cases"] == len(cases) == 19
    v = s["verdicts"]
    assert set(v) == set(summary.VERDICTS)
    assert v["ok"] == 6
    assert v["not-durable"] == 2 and v["skipped"] == 3
    assert v["harness-error"] == 1 and v["hang"] == 1
    for verdict in summary.VERDICTS:
        # ignored-error has tests of its own (test_defects_*)
        assert v[verdict] >= 1 or verdict == "ignored-error", verdict
    # findings: verdict neither ok nor skipped (harness errors included)
    assert s["findings"] == 19 - 6 - 3 == 10
    assert s["failed"] == sum(not c["passed"] for c in cases) == 9
    assert s["harness_errors"] == 1
    assert s["caught"] == 1
    assert s["skipped"] == 3
    assert s["skip_reasons"] == {
        "O_DIRECT unsupported on this filesystem": 2,
        "mmap of an empty file | not possible": 1}
    assert s["kinds"] == list(summary.KINDS)
    assert s["workloads"] == ["nofsync", "noretry", "replace"]
    assert s["strategies"] == ["direct", "mmap", "stdio", "sync"]
    assert s["models"] == ["ext4-ordered", "posix"]
    assert s["per_kind"]["powerloss"] == {
        "cases": 4, "findings": 3, "failed": 2, "harness_errors": 0,
        "caught": 1, "known": 0, "ignored": 0, "warnings": 0, "skipped": 0}
    assert s["per_model"]["posix"]["cases"] == 5
    assert s["per_model"]["none"]["cases"] == 13
    assert s["seed"] == 7 and s["command"] == META["command"]
    assert s["run"] == {"models": ["posix", "ext4-ordered"]}
    assert s["timing"]["duration"] == 12.5
    assert s["timing"]["started"] == "2024-05-01T10:00:00Z"
    assert s["passed"] is False


def test_variants_caught_and_not_caught():
    s = summary.summarize(every_case(), META)
    by = {v["workload"]: v for v in s["variants"]}
    assert by["nofsync"] == {
        "workload": "nofsync", "expect": NOT_DURABLE, "cases": 2,
        "caught": 1, "met": True,
        "caught_by": ["nofsync-stdio-4096B-powerloss@exit[posix]"]}
    assert by["noretry"]["met"] is False and by["noretry"]["cases"] == 2
    assert s["not_caught"] == ["noretry: expected lost-update (model posix), "
                               "no case of 2 showed it"]
    assert s["variants_judged"] is True


def test_clean_run_passes_and_uncaught_variant_fails_it():
    clean = [mk("replace-stdio-1B-baseline", kind="baseline"),
             mk("bad-stdio-1B-powerloss@exit[posix]", workload="bad",
                kind="powerloss", verdict="not-durable",
                expected=[NOT_DURABLE])]
    assert summary.summarize(clean, {})["passed"] is True
    # The same variant, no longer caught: every case says passed (ok
    # verdict), yet the run fails.
    blind = [clean[0], mk("bad-stdio-1B-powerloss@exit[posix]",
                          workload="bad", kind="powerloss",
                          expected=[NOT_DURABLE], passed=True)]
    s = summary.summarize(blind, {})
    assert s["failed"] == 0 and len(s["not_caught"]) == 1
    assert s["passed"] is False


def test_status_never_shows_an_unexpected_finding_as_pass():
    # passed=true on a finding nothing expected contradicts the schema
    odd = mk("x-stdio-1B-baseline", kind="baseline", verdict="torn",
             passed=True)
    assert summary.status(odd) == "failed"
    herr = mk("x-stdio-1B-a", verdict="harness-error", passed=True)
    assert summary.status(herr) == "harness-error"


def test_plugin_meta_shape():
    """The plugin passes timing nested, the start as epoch seconds, and
    its own (spec-based) not_caught list."""
    meta = {"command": "pytest-3 -p harness.engine.plugin", "seed": 0,
            "models": ["posix"], "specs": ["workloads/specs/replace.toml"],
            "cap": 64, "timing": {"started": 1714557600.25, "duration": 3.5},
            "not_caught": ["blind: expected torn"]}
    cases = [mk("replace-stdio-1B-baseline", kind="baseline")]
    s = summary.summarize(cases, meta)
    assert s["timing"] == {"started": 1714557600.25, "duration": 3.5,
                           "case_seconds": 0.01}
    assert s["run"] == {"models": ["posix"], "cap": 64,
                        "specs": ["workloads/specs/replace.toml"]}
    assert s["not_caught"] == ["blind: expected torn"]
    assert s["passed"] is False
    md = markdown.markdown_text(cases, meta)
    assert "started 2024-05-01T10:00:00+00:00" in md
    assert "- ✗ **NOT CAUGHT**: blind: expected torn" in md
    root = ET.fromstring(junit.junit_bytes(cases, meta))
    suite = root.find("testsuite")
    assert suite.get("timestamp") == "2024-05-01T10:00:00+00:00"
    assert (suite.get("tests"), suite.get("failures")) == ("2", "1")
    with pytest.raises(ReportError, match="'not_caught' must be a list"):
        summary.summarize(cases, dict(meta, not_caught="x"))
    with pytest.raises(ReportError, match="'timing' must be an object"):
        summary.summarize(cases, dict(meta, timing=3))


def test_shard_defers_variant_judgement():
    """In a shard (the plugin's not_caught == []), a variant whose catching
    case ran in another shard is not a failure here; merged, the cases
    decide."""
    cases = every_case()
    noretry = [c for c in cases if c["workload"] != "noretry"]
    shard = [c for c in noretry
             if c["id"] != "nofsync-stdio-4096B-powerloss@exit[posix]"]
    s = summary.summarize(shard, {"not_caught": []})
    assert s["variants_judged"] is False and s["not_caught"] == []
    assert [v["met"] for v in s["variants"]] == [False]
    text, st = cell_texts(shard)          # judged by default
    assert st[("nofsync", "stdio", "powerloss")] == "failed"
    kinds, rows = summary.matrix(shard, judged=False)
    cell = next(r for r in rows if r[0] == "nofsync")[3]["powerloss"]
    assert (cell.status, cell.text) == ("ok", "✓ 1")
    md = markdown.markdown_text(shard, {"not_caught": []})
    assert "NOT CAUGHT" not in md
    assert "judged when the shards are merged" in md
    html = htmlpage.html_text(shard, {"not_caught": []})
    assert "NOT CAUGHT" not in html and "not caught</span>" not in html
    # the whole run, without the plugin's word: computed from the cases
    assert summary.summarize(noretry, {})["not_caught"] == []


# ---------------------------------------------------------------------------
# the matrix


def test_matrix_cell_texts():
    text, st = cell_texts(every_case())
    assert text[("replace", "stdio", "baseline")] == "✓ 1"
    assert st[("replace", "stdio", "baseline")] == "ok"
    assert text[("replace", "stdio", "eio")] == "✗ 1/1 torn"
    assert text[("replace", "stdio", "powerloss")] == \
        "✗ 2/2 lost-update 1, not-durable 1"
    assert st[("replace", "stdio", "powerloss")] == "failed"
    assert text[("replace", "sync", "eio")] == "⚠ 1/1 harness-error"
    assert st[("replace", "sync", "eio")] == "harness-error"
    assert text[("replace", "direct", "baseline")] == "skipped 1"
    assert st[("replace", "direct", "baseline")] == "skipped"
    assert text[("replace", "direct", "short")] == "·"
    assert st[("replace", "direct", "short")] == "empty"
    assert text[("nofsync", "stdio", "powerloss")] == \
        "caught: not-durable (1/2)"
    assert st[("nofsync", "stdio", "powerloss")] == "caught"
    # the uncaught variant's cells say so, though each case passed
    assert text[("noretry", "stdio", "eintr")] == \
        "✗ not caught: expected lost-update"
    assert st[("noretry", "stdio", "baseline")] == "failed"


def test_matrix_cell_mixed_counts():
    cases = [mk(f"w-s-{i}B-powerloss", kind="powerloss", verdict=v)
             for i, v in enumerate(["ok"] * 39 + ["torn", "torn",
                                                  "not-durable"])]
    cases += [mk("w-s-99B-powerloss", kind="powerloss", verdict="skipped",
                 passed=True, finding="no room")]
    text, _ = cell_texts(cases)
    assert text[("replace", "stdio", "powerloss")] == \
        "✗ 3/42 torn 2, not-durable 1; 1 skipped"
    ok = [mk(f"w-s-{i}B-eio", verdict="ok") for i in range(42)]
    ok.append(mk("w-s-x-eio", verdict="skipped", passed=True, finding="r"))
    text, _ = cell_texts(ok)
    assert text[("replace", "stdio", "eio")] == "✓ 42; 1 skipped"


def test_matrix_variant_case_marked_failed_by_plugin():
    # A plugin may mark a variant's ok case as failed itself.
    cases = [mk("v-stdio-1B-a", workload="v", kind="powerloss",
                expected=[NOT_DURABLE], passed=False)]
    text, st = cell_texts(cases)
    assert text[("v", "stdio", "powerloss")] == \
        "✗ 1/1 uncaught; ✗ not caught: expected not-durable"
    assert st[("v", "stdio", "powerloss")] == "failed"


def test_matrix_rows_without_strategy_and_unknown_kind():
    cases = [mk("overwrite-1B-baseline", workload="overwrite", strategy=None,
                kind="baseline"),
             mk("overwrite-1B-odd", workload="overwrite", strategy=None,
                kind="zzz")]
    kinds, rows = summary.matrix(cases)
    assert kinds == list(summary.KINDS) + ["zzz"]
    assert [(w, s) for w, s, _, _ in rows] == [("overwrite", None)]


# ---------------------------------------------------------------------------
# markdown


def unescaped_pipes(line):
    return len(re.findall(r"(?<!\\)\|", line))


def test_markdown(tmp_path):
    cases = every_case()
    path = tmp_path / "report.md"
    report.write_markdown(path, cases, META)
    md = path.read_text()
    assert md.startswith("# crashcheck report\n\n**FAIL**: 19 cases, "
                         "10 findings (9 defects), 9 failures, 1 harness error, "
                         "3 skipped. Of the findings, 1 is a buggy variant "
                         "caught as its spec expects. Buggy variants: 1 of "
                         "2 expectations met, 1 not caught")
    assert "seed 7" in md and "`scripts/crashcheck run --seed=7 replace`" in md
    # the matrix: header, separator, one row per workload x strategy
    table = [ln for ln in md.splitlines() if ln.startswith("| ")]
    assert table[0] == ("| workload | strategy | baseline | eintr | short | "
                        "enospc | eio | crash | powerloss |")
    matrix_rows = [ln for ln in table
                   if unescaped_pipes(ln) == len(summary.KINDS) + 3]
    assert len(matrix_rows) == 2 + 6
    row = next(ln for ln in table if ln.startswith("| replace | stdio |"))
    assert row == ("| replace | stdio | ✓ 1 | ✓ 1 | ✗ 1/1 "
                   "gave-up-on-transient | ✗ 1/1 unreported-error | "
                   "✗ 1/1 torn | ✗ 1/1 missing | ✗ 2/2 lost-update 1, "
                   "not-durable 1 |")
    assert "| nofsync *(buggy variant)* | stdio |" in md
    assert "| noretry | lost-update (model posix) | **NOT CAUGHT** in " \
           "2 cases it applied to |" in md
    # every failing case: one line with id, verdict, finding, reproduce
    for case in failing(cases):
        line = next(ln for ln in md.splitlines()
                    if ln.startswith("- ") and f"`{case['id']}`" in ln)
        assert f"**{markdown.md_text(case['verdict'])}**" in line
        assert markdown.md_code(case["reproduce"]) in line
    # hostile text is escaped outside code spans
    torn = next(ln for ln in md.splitlines() if "**torn**" in ln)
    assert "\\<script\\>" in torn and "\\&" in torn and "\\|" in torn
    outside = re.sub(r"(`+).*?\1", "", md)
    assert "<script>" not in outside
    assert "- O\\_DIRECT unsupported on this filesystem — 2 cases:" in md
    assert "- mmap of an empty file \\| not possible — 1 case:" in md
    # caught findings are listed as expected, after failures
    finding_lines = [ln for ln in md.splitlines()
                     if re.match(r"- [✗⚠✓] `", ln)]
    assert len(finding_lines) == len(failing(cases)) + 1
    assert "(expected: buggy variant caught)" in finding_lines[
        len(failing(cases))]


def test_markdown_hostile_table_cells(tmp_path):
    cases = [mk("a|b-x-1B-eio", workload="a|b", strategy="s|t\nu",
                verdict="torn", finding="f")]
    md = markdown.markdown_text(cases, {})
    row = next(ln for ln in md.splitlines() if ln.startswith("| a"))
    assert unescaped_pipes(row) == len(summary.KINDS) + 3
    assert row.startswith("| a\\|b | s\\|t u |")
    # GFM splits table cells on '|' even inside code spans
    variant = [mk("v|w-stdio-1B-powerloss", workload="v|w",
                  kind="powerloss", verdict="not-durable",
                  expected=[NOT_DURABLE])]
    md = markdown.markdown_text(variant, {})
    row = next(ln for ln in md.splitlines() if "caught by 1 case" in ln)
    assert unescaped_pipes(row) == 4
    assert "`v\\|w-stdio-1B-powerloss`" in row


def test_markdown_findings_capped():
    # one defect: its first cases in full, the others by id
    cases = [mk(f"w-stdio-{i:03}B-eio", verdict="torn", finding="f")
             for i in range(summary.MD_DEFECT_IDS + summary.MD_DEFECT_CASES + 7)]
    md = markdown.markdown_text(cases, {})
    lines = md.splitlines()
    assert "### 1. torn: f — 117 cases" in lines
    full = [ln for ln in lines if ln.startswith("- ✗ `w-stdio-")]
    assert len(full) == summary.MD_DEFECT_CASES
    more = next(ln for ln in lines if ln.startswith("- and 107 more: "))
    assert more.endswith("and 7 more — see results.json")
    assert "`w-stdio-109B-eio`" in more and "`w-stdio-110B-eio`" not in md
    # many defects: at most MD_FINDINGS_CAP finding lines in all
    cases = [mk(f"w-stdio-{i:03}B-eio", verdict="torn", finding=f"f{i}")
             for i in range(summary.MD_FINDINGS_CAP + 7)]
    md = markdown.markdown_text(cases, {})
    assert md.count("\n- ✗ `") == summary.MD_FINDINGS_CAP
    assert md.count("\n### ") == summary.MD_FINDINGS_CAP + 7
    assert "- and 1 more: `w-stdio-056B-eio`" in md


def test_md_code_holds_backticks():
    assert markdown.md_code("a`b") == "``a`b``"
    assert markdown.md_code("`x`") == "`` `x` ``"
    assert markdown.md_code("l1\nl2") == "`l1 l2`"


# ---------------------------------------------------------------------------
# HTML


def assert_self_contained(text):
    low = text.lower()
    for bad in ("http:", "https:", "src=", "<link", "@import", "url(",
                "//cdn", "@font-face"):
        assert bad not in low, bad


def test_html(tmp_path):
    cases = every_case()
    path = tmp_path / "report.html"
    report.write_html(path, cases, META)
    text = path.read_text()
    assert text.startswith("<!DOCTYPE html>")
    assert_self_contained(text)
    # hostile text never reaches the page raw
    assert "<script>alert" not in text
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; |" in text
    assert "\x01" not in text and "\\x01" in text
    assert text.count("<script>") == 1      # our own copy-button code
    # the matrix cells carry their status colours
    for cls in ("s-ok", "s-failed", "s-caught", "s-skipped",
                "s-harness-error", "s-empty"):
        assert f'class="cell {cls}"' in text, cls
    assert '<span class="tag uncaught">not caught</span>' in text
    # each failing case: a details block with its reproduce command
    for case in failing(cases):
        assert htmlpage.esc(case["reproduce"]) in text
        assert f'id="{htmlpage._anchor(case["id"])}"' in text
    assert "<dt>seed</dt><dd>7</dd>" in text
    assert "<dt>models</dt><dd>posix, ext4-ordered</dd>" in text
    assert "<code>scripts/crashcheck run --seed=7 replace</code>" in text
    # details open without JS; the page's tags balance
    assert text.count("<details") == text.count("</details>")
    for tag in ("table", "section", "pre", "dl", "summary"):
        assert text.count(f"<{tag}") == text.count(f"</{tag}>"), tag


def test_html_cell_opens_to_its_cases():
    cases = every_case()
    html = htmlpage.html_text(cases, META)
    cell = re.search(r'<td class="cell s-failed"><details><summary>'
                     r"✗ 2/2 lost-update 1, not-durable 1</summary>(.*?)"
                     r"</details></td>", html, re.S)
    assert cell
    body = cell.group(1)
    assert "replace-stdio-4096B-powerloss@exit[posix]" in body
    assert "state 2 holds the old content" in body
    assert '<div class="repro"><pre><code>' in body
    assert body.count('<details class="case c-failed">') == 2


def test_html_anchor_is_injective():
    ids = ["a#1=EIO", "a_231=EIO", "a#1_3dEIO", "a[posix]", "a é"]
    anchors = {htmlpage._anchor(i) for i in ids}
    assert len(anchors) == len(ids)
    assert all(re.fullmatch(r"case-[A-Za-z0-9._-]+", a) for a in anchors)


# ---------------------------------------------------------------------------
# lessons

LESSON = {"rule": "fsync the directory after a rename <dir> & |",
          "variant": "nodirsync", "case_id": "nodirsync-stdio-1B-powerloss",
          "verdict": "not-durable",
          "reproduce": "scripts/crashcheck audit nodirsync",
          "diff": "--- a/replace.c\n+++ b/replace.c\n@@ -1,2 +1,3 @@\n"
                  " rename(tmp, target);\n+fsync(dirfd); /* <why> */\n"
                  "-return 0;\n```\n"}


def test_lessons_rendered():
    cases = every_case()
    md = markdown.markdown_text(cases, META, lessons=[LESSON])
    assert "## Lessons" in md
    assert "### 1. fsync the directory after a rename \\<dir\\> \\& \\|" in md
    assert "`scripts/crashcheck audit nodirsync`" in md
    # the diff sits in a fence longer than the backticks it holds
    assert "````diff\n--- a/replace.c" in md and "\n```\n````\n" in md
    html = htmlpage.html_text(cases, META, lessons=[LESSON])
    assert '<span class="add">+fsync(dirfd); /* &lt;why&gt; */</span>' in html
    assert '<span class="del">-return 0;</span>' in html
    assert '<span class="hunk">@@ -1,2 +1,3 @@</span>' in html
    assert '<span class="file">+++ b/replace.c</span>' in html
    assert "<code>nodirsync-stdio-1B-powerloss</code>" in html
    assert_self_contained(html)
    assert "Lessons" not in markdown.markdown_text(cases, META)


def test_expect_text():
    assert summary.expect_text({"verdict": "torn"}) == "torn"
    assert summary.expect_text({"verdict": "torn", "size": 4097,
                               "model": "posix", "call": "rename#1"}) == \
        "torn (model posix, call rename#1, size 4097)"


def test_bad_lessons_refused():
    with pytest.raises(ReportError, match=r"lesson 0: 'diff' missing"):
        markdown.markdown_text([], {}, lessons=[{k: "x" for k in
                                               summary.LESSON_KEYS
                                               if k != "diff"}])
    with pytest.raises(ReportError, match="expected a list"):
        htmlpage.html_text([], {}, lessons={"rule": "x"})


# ---------------------------------------------------------------------------
# JUnit


def test_junit(tmp_path):
    cases = every_case()
    path = tmp_path / "junit.xml"
    report.write_junit(path, cases, META)
    root = ET.parse(path).getroot()
    suite = root.find("testsuite")
    testcases = suite.findall("testcase")
    # one testcase per case, plus one per unmet variant expectation
    assert len(testcases) == len(cases) + 1
    assert suite.get("tests") == str(len(cases) + 1)
    assert suite.get("failures") == str(8 + 1)
    assert suite.get("errors") == "1"
    assert suite.get("skipped") == "3"
    assert suite.get("time") == "12.500"
    by = {tc.get("name"): tc for tc in testcases}
    for case in cases:
        tc = by[case["id"]]
        st = summary.status(case)
        if st in ("failed", "harness-error"):
            el = tc.find("failure" if st == "failed" else "error")
            assert el is not None, case["id"]
            assert case["reproduce"] in el.text
            assert case["finding"] in el.text
            if case["explanation"]:
                assert case["explanation"] in el.text
        elif st == "skipped":
            assert tc.find("skipped").get("message") == case["finding"]
        else:
            assert tc.find("failure") is None and tc.find("error") is None
    torn = by["replace-stdio-4096B-fsync#1=EIO"].find("failure")
    assert torn.get("message").startswith("torn: expected old or new")
    blind = by["noretry: expected lost-update (model posix), no case of 2 "
               "showed it"].find("failure")
    assert blind.get("message").startswith("buggy variant not caught: ")
    assert blind.get("type") == "not-caught"
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["seed"] == "7"


def test_junit_classnames_name_the_workload_and_strategy(tmp_path):
    """crashcheck.replace.stdio for a spec's case; an audit's cases have
    no strategy, and their class is crashcheck.mytool (it was
    crashcheck.mytool.-, issue 30)."""
    cases = [mk("replace-stdio-4096B-baseline", kind="baseline"),
             mk("mytool-baseline", workload="mytool", strategy=None,
                kind="baseline", size=None)]
    root = ET.fromstring(junit.junit_bytes(cases, META))
    classes = {tc.get("name"): tc.get("classname") for tc in root.iter("testcase")}
    assert classes["replace-stdio-4096B-baseline"] == "crashcheck.replace.stdio"
    assert classes["mytool-baseline"] == "crashcheck.mytool"


def test_junit_counts_match_a_clean_run(tmp_path):
    cases = [mk(f"w-stdio-{i}B-eio") for i in range(5)]
    root = ET.fromstring(junit.junit_bytes(cases, {}))
    suite = root.find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"),
            suite.get("skipped")) == ("5", "0", "0", "0")


def test_junit_says_a_pass_is_not_clean():
    """Changes made by calls crashcheck cannot see: the suite is NOT
    CLEAN, its properties say so, and each workload that had any gets a
    testcase naming them, passed with the changes in its system-err, or
    failed under --strict, which fails the run."""
    cases = [mk(f"w-stdio-{i}B-eio") for i in range(3)]
    unseen = [{"workload": "w", "path": "target.tmp", "what": "content",
               "at": "fsync#1", "seq": 7},
              {"workload": "w", "path": "junk", "what": "name",
               "at": "exit", "seq": 12}]
    for strict in (False, True):
        root = ET.fromstring(junit.junit_bytes(
            cases, {"unseen": unseen, "strict": strict}))
        suite = root.find("testsuite")
        assert root.get("name") == suite.get("name") == \
            "crashcheck (NOT CLEAN)"
        assert (suite.get("tests"), suite.get("failures")) == \
            ("4", "1" if strict else "0")
        props = {p.get("name"): p.get("value") for p in suite.iter("property")}
        assert (props["clean"], props["unseen"]) == ("false", "2")
        tc, = [tc for tc in suite.findall("testcase")
               if tc.get("classname") == "crashcheck.w.coverage"]
        el = tc.find("failure" if strict else "system-err")
        assert el is not None and tc.find(
            "system-err" if strict else "failure") is None
        assert "not a clean pass: 2 changes" in el.text
        assert "w: 'target.tmp': content changed by a call crashcheck " \
            "cannot see (first seen at fsync#1)" in el.text
        assert "w: 'junk': name appeared" in el.text
    clean = ET.fromstring(junit.junit_bytes(cases, {"unseen": []}))
    assert clean.get("name") == "crashcheck"
    assert "clean" not in {p.get("name") for p in clean.iter("property")}


# ---------------------------------------------------------------------------
# results.json


def drop_timing(doc):
    doc = json.loads(json.dumps(doc))
    doc["summary"].pop("timing")
    for case in doc["cases"]:
        case.pop("duration", None)
    return doc


def test_write_json_deterministic(tmp_path):
    cases = every_case()
    a, b, c = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    report.write_json(a, cases, META)
    report.write_json(c, list(reversed(cases)), META)
    assert a.read_bytes() == c.read_bytes()
    rng = random.Random(1)
    shuffled = [dict(x, duration=rng.random()) for x in cases]
    rng.shuffle(shuffled)
    later = dict(META, started="2024-05-02T00:00:00Z", duration=99.0,
                 finished="2024-05-02T00:01:39Z")
    report.write_json(b, shuffled, later)
    assert a.read_bytes() != b.read_bytes()
    da, db = json.loads(a.read_text()), json.loads(b.read_text())
    assert drop_timing(da) == drop_timing(db)
    text = a.read_text()
    # one case per line, in id order; the summary indented after them
    assert text.startswith('{\n "cases": [\n  {"call"')
    lines = text.split("\n")
    assert [json.loads(line.strip().rstrip(","))["id"]
            for line in lines[2:2 + len(cases)]] == sorted(x["id"] for x in cases)
    assert lines[2 + len(cases)] == " ],"
    assert lines[3 + len(cases)] == ' "summary": {'
    assert [x["id"] for x in da["cases"]] == sorted(x["id"] for x in cases)
    assert da["summary"]["timing"]["case_seconds"] == pytest.approx(0.19)


def test_bad_cases_refused():
    good = mk("a-stdio-1B-eio")
    with pytest.raises(ReportError, match=r"case 0: missing 'verdict'"):
        summary.summarize([{k: v for k, v in good.items()
                           if k != "verdict"}], {})
    with pytest.raises(ReportError, match="unknown verdict 'fine'"):
        summary.summarize([dict(good, verdict="fine")], {})
    with pytest.raises(ReportError, match="duplicate case id 'a-stdio-1B-eio'"):
        report.json_text([good, good], {})
    with pytest.raises(ReportError, match="'passed' must be a bool"):
        summary.summarize([dict(good, passed="yes")], {})
    with pytest.raises(ReportError, match="expected a list of cases"):
        summary.summarize({"cases": []}, {})
    assert issubclass(ReportError, UsageError)


# ---------------------------------------------------------------------------
# merge


def write_shard(directory, cases, meta):
    directory.mkdir()
    report.write_json(directory / "results.json", cases, meta)
    return directory


def test_merge_equals_unsharded(tmp_path):
    cases = every_case()
    whole = write_shard(tmp_path / "whole", cases, META)
    one = write_shard(tmp_path / "one", cases[::2],
                      dict(META, duration=5.0, started="2024-05-01T10:00:02Z"))
    # shard two repeats one case of shard one: same content, other duration
    two = write_shard(tmp_path / "two",
                      cases[1::2] + [dict(cases[0], duration=3.0)],
                      dict(META, duration=7.0))
    merged, meta = summary.merge([one, two / "results.json"])
    unsharded, _ = summary.load(whole / "results.json")
    assert merged == unsharded
    assert meta["seed"] == 7
    assert meta["timing"] == {"started": "2024-05-01T10:00:00Z",
                              "duration": 7.0}
    assert meta["models"] == ["posix", "ext4-ordered"]
    assert [s["cases"] for s in meta["shards"]] == [10, 10]
    # the merged report is the unsharded one, apart from the shard list
    report.write_json(tmp_path / "merged.json", merged, meta)
    dm = drop_timing(json.loads((tmp_path / "merged.json").read_text()))
    dw = drop_timing(json.loads((whole / "results.json").read_text()))
    dm["summary"]["run"].pop("shards")
    assert dm == dw


def test_merge_conflicting_duplicate(tmp_path):
    case = mk("replace-stdio-4096B-fsync#1=EIO", verdict="torn")
    one = write_shard(tmp_path / "one", [case], META)
    two = write_shard(tmp_path / "two", [dict(case, verdict="ok",
                                              passed=True)], META)
    with pytest.raises(ReportError) as e:
        summary.merge([one, two])
    msg = str(e.value)
    assert str(two / "results.json") in msg and str(one / "results.json") in msg
    assert "'replace-stdio-4096B-fsync#1=EIO' differs" in msg
    assert "\n" not in msg


def test_merge_errors_name_the_file(tmp_path):
    good = write_shard(tmp_path / "good", [mk("a-stdio-1B-eio")], META)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "results.json").write_text('{"summary": {}, "cases": [')
    with pytest.raises(ReportError, match=r"parse '.*bad/results.json': "
                                          r"invalid JSON at line 1"):
        summary.merge([good, bad])
    with pytest.raises(ReportError, match=r"read '.*nowhere': No such file"):
        summary.merge([good, tmp_path / "nowhere"])
    (bad / "results.json").write_text('[1, 2]')
    with pytest.raises(ReportError, match="not a crashcheck results.json"):
        summary.merge([bad])
    (bad / "results.json").write_text(
        '{"summary": {}, "cases": [{"id": "x"}]}')
    with pytest.raises(ReportError, match=r"bad/results.json': case 0: "
                                          "missing 'workload'"):
        summary.merge([bad])
    (bad / "results.json").write_bytes(b'\xff\xfe')
    with pytest.raises(ReportError, match="not UTF-8"):
        summary.merge([bad])
    other = write_shard(tmp_path / "other", [mk("b-stdio-1B-eio")],
                        dict(META, seed=8))
    with pytest.raises(ReportError, match="seed 8 differs from seed 7"):
        summary.merge([good, other])
    with pytest.raises(ReportError, match="no results directories"):
        summary.merge([])


# ---------------------------------------------------------------------------
# write_all and the module's command line


def test_write_all_and_main(tmp_path, capsys):
    cases = every_case()
    summary = report.write_all(tmp_path / "out", cases, META, [LESSON])
    assert summary["cases"] == 19
    for name in ("results.json", "report.md", "report.html"):
        assert (tmp_path / "out" / name).is_file()
    assert not list((tmp_path / "out").glob(".*"))   # no temporary left

    lessons = tmp_path / "lessons.json"
    lessons.write_text(json.dumps([LESSON]))
    rc = report.main(["--junit", str(tmp_path / "j.xml"), "--lessons",
                      str(lessons), str(tmp_path / "again"),
                      str(tmp_path / "out")])
    assert rc == 1                       # the run has failures
    assert capsys.readouterr().out.startswith("FAIL: 19 cases")
    assert ET.parse(tmp_path / "j.xml").getroot().tag == "testsuites"
    assert "## Lessons" in (tmp_path / "again" / "report.md").read_text()
    again = json.loads((tmp_path / "again" / "results.json").read_text())
    assert again["cases"] == json.loads(
        (tmp_path / "out" / "results.json").read_text())["cases"]

    assert report.main([str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("report: need an output directory")
    assert err.count("\n") == 1
    assert report.main(["--bogus", "a", "b"]) == 2
    assert report.main([str(tmp_path / "y"), str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1].startswith("report: read '") and "/none'" in err[-1]


def test_write_reports_error_on_unwritable_dir(tmp_path):
    target = tmp_path / "missing" / "results.json"
    with pytest.raises(ReportError, match="create temporary file in"):
        report.write_json(target, [], {})


# ---------------------------------------------------------------------------
# a sample of about 200 cases, for looking at and for scale


def synthetic_run(seed=3):
    rng = random.Random(seed)
    cases = []
    plans = {"baseline": [("", "")],
             "eintr": [("write#1=EINTR", "write#1"),
                       ("write#2=EINTR", "write#2")],
             "short": [("write#1=short", "write#1")],
             "enospc": [("write#1+=ENOSPC", "write#1"),
                        ("fsync#1=ENOSPC", "fsync#1")],
             "eio": [("fsync#1=EIO", "fsync#1"), ("close#1=EIO", "close#1"),
                     ("rename#1=EIO", "rename#1")],
             "crash": [("rename#1=crash", "rename#1"),
                       ("fsync#1=crash-after", "fsync#1")],
             "powerloss": [("", "rename#1"), ("", "exit")]}
    bad = {"enospc": "unreported-error", "eio": "unreported-error",
           "eintr": "gave-up-on-transient", "short": "gave-up-on-transient",
           "crash": "torn", "powerloss": "not-durable", "baseline": "hang"}
    workloads = [("replace", ["stdio", "direct", "sync", "mmap"], []),
                 ("overwrite", [None], []),
                 ("replace-nofsync", ["stdio"], [NOT_DURABLE]),
                 ("replace-noretry", ["stdio"],
                  [{"verdict": "gave-up-on-transient", "kind": "eintr"}])]
    for workload, strategies, expect in workloads:
        for strategy in strategies:
            for size in (1, 4096):
                for kind, options in plans.items():
                    for plan, call in options:
                        models = ["posix", "ext4-ordered"] \
                            if kind == "powerloss" else [None]
                        for model in models:
                            parts = [workload, strategy, f"{size}B"]
                            if kind == "baseline":
                                parts.append("baseline")
                            elif kind == "powerloss":
                                parts.append(f"powerloss@{call}")
                            else:
                                parts.append(plan)
                            cid = "-".join(p for p in parts if p)
                            if model:
                                cid += f"[{model}]"
                            applies = [e for e in expect
                                       if e.get("kind") in (None, kind)]
                            verdict = "ok"
                            roll = rng.random()
                            if strategy == "direct" and size == 1:
                                verdict = "skipped"
                            elif applies and roll < 0.6:
                                verdict = applies[0]["verdict"]
                            elif not applies and roll < 0.05:
                                verdict = bad[kind]
                            elif roll > 0.99:
                                verdict = "harness-error"
                            case = mk(cid, workload=workload,
                                      strategy=strategy, kind=kind,
                                      size=size, model=model, plan=plan,
                                      call=call, verdict=verdict,
                                      passed=(True if verdict == "skipped"
                                              else None),
                                      expected=applies,
                                      duration=rng.random() / 10)
                            if verdict == "skipped":
                                case["finding"] = ("O_DIRECT needs aligned "
                                                   "sizes; 1 byte is not")
                            elif verdict != "ok":
                                case["finding"] = (
                                    f"{call or 'run'}: expected the new "
                                    f"content ({size} bytes), found "
                                    f"{size // 2} bytes new then old")
                                case["explanation"] = (
                                    "The program reported success, but "
                                    "after a crash at this point the file "
                                    "does not hold what it promised. Check "
                                    "every return value and fsync the file "
                                    "and its directory.")
                                case["stderr"] = (
                                    f"{workload}: fsync '/dev/shm/cc/"
                                    "target.tmp': Input/output error\n")
                            cases.append(case)
    return cases


def test_synthetic_run_renders():
    cases = synthetic_run()
    assert 150 <= len(cases) <= 400
    html = htmlpage.html_text(cases, META, lessons=[LESSON])
    assert_self_contained(html)
    md = markdown.markdown_text(cases, META)
    assert len(md.encode()) < 1024 * 1024   # GitHub's step summary limit
    s = summary.summarize(cases, META)
    assert s["caught"] > 0 and s["skipped"] > 0


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/report-sample.html"
    cases = synthetic_run()
    report.write_html(out, cases, META, lessons=[LESSON])
    print(f"{out}: {len(cases)} cases")


# ---------------------------------------------------------------------------
# defects: findings grouped by root cause

def with_cause(case, key, rule, call=None, file="target.tmp", location=None):
    case["cause"] = {"key": key, "rule": rule, "call": call, "file": file,
                     "site": f"{(call or 'x').split('#')[0]} {file}"}
    case["location"] = location
    return case


def grouped_cases():
    loc = {"object": "/bin/saver", "offset": "0x11c3", "file": "saver.c",
           "line": 42, "function": "save", "text": "saver.c:42 (save)"}
    cases = [with_cause(mk(f"w-stdio-4096B-write#{i}=EIO", verdict="unreported-error",
                           finding=f"write#{i} failed"), "k-write",
                        "check what write returns", f"write#{i}", location=loc)
             for i in range(1, 6)]
    cases += [with_cause(mk("w-stdio-4096B-close#2=EIO", verdict="ignored-error",
                            finding="close#2 failed, data safe"), "k-close",
                         "check what close returns", "close#2"),
              with_cause(mk("w-stdio-4096B-powerloss@exit-posix", kind="powerloss",
                            model="posix", verdict="not-durable", finding="state 1"),
                         "k-dir", "fsync the directory after the rename",
                         "rename#1", "target"),
              with_cause(mk("v-stdio-4096B-powerloss@exit-posix", workload="v",
                            kind="powerloss", model="posix", verdict="torn",
                            expected=[{"verdict": "torn", "kind": "powerloss"}],
                            finding="caught"), "k-v", "fsync the file"),
              mk("w-stdio-4096B-baseline", kind="baseline"),
              mk("w-stdio-4096B-fsync#9=EIO", verdict="harness-error", passed=False,
                 finding="never fired")]
    return cases


def test_defects_group_rank_and_count():
    s = summary.summarize(grouped_cases(), {})
    d = s["defects"]
    # failing first; then data lost before an ignored error; caught last
    assert [x["key"] for x in d] == ["k-dir", "k-write", "k-close", "k-v"]
    assert [x["status"] for x in d] == ["failed", "failed", "failed", "caught"]
    write = d[1]
    assert write["cases"] == 5 and write["ids"] == sorted(write["ids"])
    assert write["title"] == ("unreported-error: check what write returns "
                              "(write on 'target.tmp' at saver.c:42 (save))")
    assert write["location"]["line"] == 42
    # a harness error is no defect of the program
    assert all("fsync#9" not in i for x in d for i in x["ids"])
    assert s["verdicts"]["ignored-error"] == 1


def test_a_case_without_a_cause_is_its_own_defect_up_to_its_finding():
    cases = [mk(f"w-stdio-{i}B-eio", verdict="torn", finding="same") for i in (1, 2)]
    cases.append(mk("w-stdio-3B-eio", verdict="torn", finding="other"))
    d = summary.defects(cases)
    assert sorted(x["cases"] for x in d) == [1, 2]


def test_defects_on_the_console_and_in_every_report(tmp_path):
    cases = grouped_cases()
    s = report.write_all(tmp_path, cases, {}, junit=tmp_path / "junit.xml")
    lines = console.console_lines(cases, s, per_defect=2)
    assert lines[0] == ("DEFECT 1 of 3: not-durable: fsync the directory after the "
                        "rename (rename on 'target'): seen in 1 case")
    i = lines.index("DEFECT 2 of 3: unreported-error: check what write returns (write "
                    "on 'target.tmp' at saver.c:42 (save)): seen in 5 cases")
    assert lines[i + 1].startswith("  FINDING w-stdio-4096B-write#1=EIO: unreported-error")
    assert lines[i + 2].startswith("    reproduce: ")
    assert lines[i + 5] == ("  and 3 more cases of this defect (every one in report.md "
                            "and results.json)")
    assert lines[-2].startswith("FINDING w-stdio-4096B-fsync#9=EIO: harness-error")
    md = (tmp_path / "report.md").read_text()
    assert "4 defects, seen in 8 cases" in md
    assert md.index("### 1. not-durable") < md.index("### 2. unreported-error") \
        < md.index("### 3. ignored-error") < md.index("### 4. ✓ torn")
    html = (tmp_path / "report.html").read_text()
    assert html.count('<article class="defect') == 4
    assert "seen in 5 cases" in html and "saver.c:42 (save)" in html
    junit = (tmp_path / "junit.xml").read_text()
    assert 'file="saver.c" line="42"' in junit
    assert "defect: unreported-error: check what write returns" in junit
    assert "seen in 5 cases, key k-write" in junit
    doc = json.loads((tmp_path / "results.json").read_text())
    assert [x["cases"] for x in doc["summary"]["defects"]] == [1, 5, 1, 1]


# A program whose argument holds newlines, as the guide's JSON writer
# (`python3 -c '...'`): its reproduce command spans lines.
PYWRITER = ("import sys\n"
            "data = open(sys.argv[2], 'rb').read()\n"
            "open(sys.argv[1], 'wb').write(data)\n")


def _pasted_argv(block, tmp_path):
    """What bash makes of BLOCK pasted as it stands: the words its command
    gets (its first word, crashcheck, stood in for by a function that
    prints them), each as bytes."""
    import subprocess
    first = block.split()[0]
    script = (f"{first}() {{ printf '%s\\0' \"$@\"; }}\n{block}\n")
    r = subprocess.run(["bash", "-c", script], capture_output=True,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    return r.stdout.split(b"\0")[:-1]


def test_report_md_keeps_a_multi_line_reproduce_command_pasteable(tmp_path):
    """Issue 30: report.md flattened a reproduce command whose program
    argument spans lines (`python3 -c '...'`) into one line, and pasted
    into bash that was another program, a syntax error to Python. Every
    such command is now a fenced block, verbatim: pasted into bash, it
    gives crashcheck the same words, and the program's code compiles."""
    import subprocess
    out = tmp_path / "out"
    r = subprocess.run(
        [str(ROOT / "scripts" / "crashcheck"), "audit", "--out", str(out),
         "--faults", "baseline,powerloss", "--", "/usr/bin/python3", "-c",
         PYWRITER, "{target}", "{new}"], capture_output=True, text=True,
        timeout=600)
    assert r.returncode == 1, r.stderr[-2000:]
    md = (out / "report.md").read_text()
    blocks = re.findall(r"^(`{3,})sh\n(.*?)\n\1$", md, re.M | re.S)
    doc = json.loads((out / "results.json").read_text())
    reproduce = {c["reproduce"] for c in doc["cases"] if c["reproduce"]
                 and not c["passed"]}
    assert reproduce and all("\n" in c for c in reproduce)
    shown = {body for _, body in blocks}
    assert reproduce <= shown, (reproduce - shown, md[:3000])
    for body in reproduce:
        argv = _pasted_argv(body, tmp_path)
        code = argv[argv.index(b"-c") + 1].decode()
        assert code == PYWRITER
        compile(code, "<pasted>", "exec")
        assert argv[argv.index(b"--case") + 1].decode() in \
            {c["id"] for c in doc["cases"]}
    # the run's own command, at the top, is whole too
    top = blocks[0][1]
    assert "--case" not in top and md.index(top) < md.index("## Coverage")
    argv = _pasted_argv(top, tmp_path)
    assert argv[argv.index(b"-c") + 1].decode() == PYWRITER


def test_md_command_is_inline_for_one_line_and_a_block_otherwise():
    assert markdown.md_command("a b") == ("`a b`", [])
    inline, block = markdown.md_command("a 'x\ny'")
    assert inline == "(below)" and block[1:4] == ["```sh", "a 'x\ny'", "```"]
    # a command holding a fence gets a longer one
    inline, block = markdown.md_command("echo '```\n'")
    assert block[1] == "````sh" and block[3] == "````"


def test_a_findings_models_are_a_words_apart_in_markdown():
    """report.md's line of a finding ends its text, then " (under posix,
    ext4-ordered)": the models' note was glued to the finding's closing
    parenthesis (md_text trims the note's leading space)."""
    case = {"id": "w-powerloss@exit-posix", "verdict": "torn",
            "severity": "error", "passed": False,
            "finding": "found zeros (write#1 at w.c:3)",
            "model": "posix", "models": ["posix", "ext4-ordered"]}
    line = markdown._md_case_line(case)
    assert "(write\\#1 at w.c:3) (under posix, ext4-ordered)" in line, line
