"""report.html in a real browser: Debian's chromium, headless, loads a
report of a small sweep (a correct workload, a program with findings, a
buggy variant), clicks a failing cell as a reader would, and reports what
it laid out; a screenshot of the opened cell is kept for a person to look
at (its path is printed).

What is asserted: the correct workloads come before the buggy variants;
an opened cell's cases sit in a row of their own under the cell's row
(the rows below move down instead of being covered, and stay aligned
under their workload's heading), and closing the cell puts everything
back; the reproduce command is readable: its text against the box it is
drawn on has a contrast of at least 4.5:1 (WCAG AA).

chromium is not one of the packages `make check` needs; without it this
test is skipped with the reason, and `make check-html` installs it
(scripts/install-deps --browser) and runs this test.
"""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CRASHCHECK = ROOT / "scripts" / "crashcheck"
SPECS = ROOT / "workloads" / "specs"
CHROMIUM = shutil.which("chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]

pytestmark = pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("CRASHCHECK_BROWSER"),
    reason="chromium not installed (make check-html installs it and runs "
           "this test)")

# Run in the page after it loads: open the first failing cell, then the
# first case in it, and report the layout as JSON in <pre id="cc-result">.
PROBE = r"""
<script>
(function () {
  var out = {};
  function heading(r) {
    for (; r; r = r.previousElementSibling) {
      var t = r.querySelector('th.wl'); if (t) return t;
    }
    return null;
  }
  function left(el) { return Math.round(el.getBoundingClientRect().left); }
  out.workloads = Array.prototype.map.call(
    document.querySelectorAll('table.matrix th.wl'), function (th) {
      return [th.firstChild.textContent.trim(),
              !!th.querySelector('.tag.variant')];
    });
  var d = document.querySelector('td.cell.s-failed > details');
  var row = d.closest('tr');
  var th = heading(row);
  var below = row.nextElementSibling;
  out.rows_before = row.parentNode.rows.length;
  out.span_before = th.rowSpan;
  var close = !/open/.test(location.hash);
  out.below_left_before = left(below.cells[0]);
  d.querySelector('summary').click();
  setTimeout(function () {
    var pr = row.nextElementSibling;
    out.pop_row = pr.className;
    out.pop_in_row = !!pr.querySelector('.pop');
    out.span_open = th.rowSpan;
    out.pop_bottom = Math.round(pr.getBoundingClientRect().bottom);
    out.below_top = Math.round(below.getBoundingClientRect().top);
    out.below_left_open = left(below.cells[0]);
    out.pop_width = Math.round(pr.getBoundingClientRect().width);
    out.row_width = Math.round(row.getBoundingClientRect().width);
    var c = pr.querySelector('details.case');
    c.open = true;
    var code = pr.querySelector('.repro code');
    out.code_color = getComputedStyle(code).color;
    out.code_bg = getComputedStyle(code).backgroundColor;
    out.pre_bg = getComputedStyle(code.parentNode).backgroundColor;
    out.code_text = code.textContent;
    if (!close) { finish(); return; }
    d.querySelector('summary').click();
    setTimeout(function () {
      out.rows_closed = row.parentNode.rows.length;
      out.span_closed = th.rowSpan;
      out.pop_back = !!d.querySelector('.pop');
      finish();
    }, 50);
  }, 50);
  function finish() {
    var o = document.createElement('pre');
    o.id = 'cc-result';
    o.textContent = JSON.stringify(out);
    document.body.appendChild(o);
  }
})();
</script>
"""


def chromium(tmp_path, url, *extra):
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    r = subprocess.run([CHROMIUM or "chromium", *FLAGS,
                        f"--user-data-dir={profile}",
                        "--virtual-time-budget=5000", *extra, url],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """report.html of a sweep of three specs: replace (correct, one
    size), mysaver (a correct workload's spec running no-dir-fsync: real
    findings) and fsync-unchecked (a buggy variant)."""
    d = tmp_path_factory.mktemp("html")
    for name in ("replace", "fsync-unchecked"):
        text = (SPECS / f"{name}.toml").read_text()
        (d / f"{name}.toml").write_text(
            re.sub(r"^sizes = .*$", "sizes = [4097]", text, flags=re.M))
    (d / "mysaver.toml").write_text(
        'name = "mysaver"\ndescription = "forgets to fsync the directory"\n'
        'command = ["{bin}/no-dir-fsync", "--strategy={strategy}", '
        '"{target}", "{new}"]\nstrategies = ["stdio", "sync"]\n'
        'contract = "atomic"\nsizes = [4097]\n')
    r = subprocess.run([str(CRASHCHECK), "run", "--out", str(d / "out"),
                        "--faults", "baseline,eio,powerloss",
                        *(str(d / f"{n}.toml") for n in
                          ("replace", "mysaver", "fsync-unchecked"))],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 1, r.stdout + r.stderr
    return d / "out" / "report.html"


def probe(report, tmp_path):
    page = tmp_path / "probe.html"
    page.write_text(report.read_text() + PROBE)
    dom = chromium(tmp_path, page.as_uri(), "--dump-dom")
    m = re.search(r'<pre id="cc-result">(.*?)</pre>', dom, re.S)
    assert m, dom[-2000:]
    return json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&")
                      .replace("&lt;", "<").replace("&gt;", ">"))


def luminance(css):
    r, g, b = (int(x) / 255 for x in re.findall(r"\d+", css)[:3])

    def lin(c):
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b)


def contrast(fg, bg):
    a, b = sorted((luminance(fg), luminance(bg)), reverse=True)
    return (a + 0.05) / (b + 0.05)


def transparent(css):
    return css == "transparent" or css.replace(" ", "").endswith(",0)")


@pytest.fixture(scope="module")
def probed(report):
    """What the page reported after a click on a failing cell, one on
    the first case in it, and one more to close the cell."""
    return probe(report, report.parent)


def test_correct_workloads_come_first(probed):
    out = probed
    kinds = [variant for _, variant in out["workloads"]]
    assert kinds == sorted(kinds), out["workloads"]
    assert [w for w, _ in out["workloads"]] == \
        ["mysaver", "replace", "fsync-unchecked"]


def test_an_opened_cell_pushes_the_rows_down_and_reads_well(probed):
    out = probed
    # the cases open in a row of their own right under the cell's row
    assert out["pop_row"] == "pop-row" and out["pop_in_row"], out
    # the rows below are pushed down, not covered...
    assert out["below_top"] >= out["pop_bottom"], out
    # ...and stay in their columns: the heading spans the new row too
    assert out["span_open"] == out["span_before"] + 1, out
    assert out["below_left_open"] == out["below_left_before"], out
    assert out["pop_width"] > out["row_width"] / 2, out
    # the reproduce command: drawn on the box's own background, readable
    assert "--case" in out["code_text"], out
    bg = out["pre_bg"] if transparent(out["code_bg"]) else out["code_bg"]
    ratio = contrast(out["code_color"], bg)
    assert ratio >= 4.5, f"reproduce text {out['code_color']} on {bg}: " \
        f"contrast {ratio:.2f}:1"
    # closing the cell puts everything back
    assert out["rows_closed"] == out["rows_before"], out
    assert out["span_closed"] == out["span_before"], out
    assert out["pop_back"], out


def test_screenshot_of_an_opened_cell(report, tmp_path):
    """The page as a reader sees it after the click, kept for a person to
    look at: the screenshot's path is printed (pytest -s)."""
    page = report.parent / "opened.html"
    page.write_text(report.read_text() + PROBE)
    shot = report.parent / "opened.png"
    chromium(tmp_path, page.as_uri() + "#open", "--window-size=1400,1600",
             f"--screenshot={shot}")
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10000
    print(f"screenshot: {shot}")
