"""The docs as a user reads them: README.md is a page, every link leads
somewhere, and every example runs as written from the top of a fresh
tree (STYLE.md: "every example in the docs runs as written").

An example is a fenced block whose info string is `sh`: it runs with bash
in a copy of the built tree (no .git, no results/), each command's exit
status checked (0, or 1 for findings and failed updates, or 137 for a
planned crash; a usage error, 2, or a missing command fails the example).
A `text` block right after it is its output: each line must appear, in
order, in what the block printed; `...` stands for any text within a
line, and a line that is only `...` for any lines. `sh slow` blocks run
only with CRASHCHECK_DOCS=all (make check-docs): they take minutes.
`sh root` blocks (--fs, which mounts filesystems) run only as root, and
are skipped with the reason elsewhere. Blocks without an info string, `toml` and `yaml` are shown, not run.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
SLOW = os.environ.get("CRASHCHECK_DOCS") == "all"

_FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```$", re.M | re.S)


def blocks(path):
    """[(info, body, line number)] of PATH's fenced blocks."""
    text = path.read_text()
    return [(m.group(1).strip(), m.group(2),
             text.count("\n", 0, m.start()) + 1)
            for m in _FENCE.finditer(text)]


def examples():
    """(doc, line, script, expected output or None, words of its info
    string after `sh`) of every example."""
    out = []
    for path in DOCS:
        found = blocks(path)
        for i, (info, body, line) in enumerate(found):
            if info.split()[:1] != ["sh"]:
                continue
            expected = None
            if i + 1 < len(found) and found[i + 1][0] == "text":
                expected = found[i + 1][1]
            out.append((path.relative_to(ROOT), line, body, expected,
                        tuple(info.split()[1:])))
    return out


EXAMPLES = examples()


def test_readme_is_a_page():
    lines = (ROOT / "README.md").read_text().count("\n")
    assert lines <= 300, f"README.md has {lines} lines: move detail to docs/"


def slug(heading):
    """GitHub's anchor for a heading."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(path):
    return {slug(m.group(1)) for m in re.finditer(
        r"^#+ (.*)$", path.read_text(), re.M)}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_links_lead_somewhere(doc):
    text = _FENCE.sub("", doc.read_text())
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue                    # https:, mailto:
        file, _, anchor = target.partition("#")
        dest = (doc.parent / file).resolve() if file else doc
        assert dest.exists(), f"{doc.name}: link to missing {target}"
        if anchor and dest.suffix == ".md":
            assert anchor in anchors(dest), \
                f"{doc.name}: no heading '#{anchor}' in {dest.name}"


def test_toml_examples_load():
    """An ignore file or a spec shown in the docs is one crashcheck
    accepts."""
    sys.path.insert(0, str(ROOT))
    from harness.engine import spec
    from harness.reports import regress
    seen = 0
    for path in DOCS:
        for info, body, line in blocks(path):
            if info != "toml":
                continue
            f = Path(tempfile.mkdtemp()) / "x.toml"
            f.write_text(body)
            if "[[ignore]]" in body:
                regress.load_ignore(f)
            elif "command =" in body:
                spec.load(f)
            seen += 1
            shutil.rmtree(f.parent)
    assert seen >= 2


def test_ignore_examples_match_the_case_ids_of_their_call():
    """An [[ignore]] example aimed at a call ("mytool-close...") matches
    the ids an audit of mytool gives that call's faults, as the sweep
    names them: a call on a file in the work directory is
    close(t.tmp)#1, so "mytool-close#*" would match nothing."""
    import fnmatch
    sys.path.insert(0, str(ROOT))
    from harness.engine import coords, sweep
    seen = 0
    for path in DOCS:
        for info, body, line in blocks(path):
            if info != "toml" or "[[ignore]]" not in body:
                continue
            for entry in tomllib.loads(body)["ignore"]:
                m = re.fullmatch(r"mytool-([a-z_0-9]+)\W.*", entry["case"])
                if not m:
                    continue
                call = m.group(1)
                rec = {"ev": "call", "seq": 1, "call": call, "n": 1,
                       "path": "/w/t.tmp"}
                c = coords.Coords([rec], "/w")[rec]
                ids = [f"mytool-{plan}" for _, plan in sweep.fault_plans(
                    c, {"eintr", "short", "enospc", "eio", "crash"})]
                assert any(fnmatch.fnmatchcase(i, entry["case"])
                           for i in ids), (path.name, line, entry["case"], ids)
                seen += 1
    assert seen >= 2


def test_shown_audits_say_what_the_program_must_leave():
    """Every `crashcheck audit ... -- PROGRAM` the docs show, runnable or
    not (the CI snippets are yaml), gives what audit requires before it
    runs anything: the new content, by {new} in the program's arguments
    or --new FILE, unless it audits a tree (--old-dir, --setup), which a
    checker judges. One without is refused, exit 2, as written."""
    seen = 0
    for path in DOCS:
        for info, body, line in blocks(path):
            for cmd in body.replace("\\\n", " ").splitlines():
                if "crashcheck audit" not in cmd or " -- " not in cmd \
                        or "[options]" in cmd:      # a synopsis
                    continue
                seen += 1
                opts, prog = cmd.split(" -- ", 1)
                assert "{new}" in prog or "--new" in opts or \
                    "--old-dir" in opts or "--setup" in opts, \
                    (path.name, line, cmd)
    assert seen >= 5


def test_there_are_examples():
    docs = {str(doc) for doc, *_ in EXAMPLES}
    assert {"README.md", "docs/guide.md"} <= docs, docs


@pytest.fixture(scope="module")
def fresh_tree(tmp_path_factory):
    """The built tree as a fresh clone would have it after make: no .git,
    no results, nothing an earlier example left."""
    dest = tmp_path_factory.mktemp("docs") / "crashcheck"

    def ignore(d, names):
        if Path(d) == ROOT:
            return [n for n in names if n in (".git", "results", "demo")]
        return [n for n in names if n == "__pycache__"]
    shutil.copytree(ROOT, dest, symlinks=True, ignore=ignore)
    return dest


# each command's status is checked: allowed are 0, 1 (findings, a
# program's reported failure) and 137 (a planned crash)
PRELUDE = """\
trap 's=$?; case $s in 1|137) ;; *) echo "status $s: $BASH_COMMAND" >>"$DOCS_ERRORS" ;; esac' ERR
"""


def normal(line):
    """What may differ from machine to machine: the number of jobs."""
    return re.sub(r"\(\d+ jobs\)", "(N jobs)", line.rstrip())


def match_output(expected, got):
    """Every line of EXPECTED in GOT, in order (other lines may come
    between); `...` matches any text within a line."""
    lines = [normal(line) for line in got.splitlines()]
    pos = 0
    for want in expected.splitlines():
        if want.strip() == "...":
            continue
        pattern = re.compile(".*".join(re.escape(p) for p in
                                       normal(want).split("...")) + r"\Z")
        while pos < len(lines) and not pattern.match(lines[pos]):
            pos += 1
        if pos == len(lines):
            return f"expected the line\n  {want}\nin this order in:\n{got}"
        pos += 1
    return None


@pytest.mark.parametrize(
    "doc, line, script, expected, words", EXAMPLES,
    ids=[f"{d}:{n}" for d, n, *_ in EXAMPLES])
def test_example_runs_as_written(fresh_tree, tmp_path, doc, line, script,
                                 expected, words):
    if "slow" in words and not SLOW:
        pytest.skip("a slow example: make check-docs runs it")
    if "root" in words and os.geteuid() != 0:
        pytest.skip("an example that mounts a filesystem (--fs): root only")
    errors = tmp_path / "errors"
    errors.touch()
    r = subprocess.run(["bash", "-c", PRELUDE + script], cwd=fresh_tree,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=900,
                       env=dict(os.environ, DOCS_ERRORS=str(errors),
                                PYTHONUNBUFFERED="1"))
    failed = errors.read_text()
    assert not failed, f"{doc}:{line}: {failed}\n{r.stdout}"
    assert "Traceback" not in r.stdout, r.stdout
    if expected is not None:
        problem = match_output(expected, r.stdout)
        assert problem is None, f"{doc}:{line}: {problem}"


def test_output_matching():
    got = "a\nb: 12 cases (2 jobs)\nc\nd"
    assert match_output("a\nb: ... cases (8 jobs)\nd", got) is None
    assert match_output("...\nc", got) is None
    assert match_output("c\nb: ... cases (2 jobs)", got) is not None
    assert match_output("e", got) is not None


# The "Real programs" table of the guide, row by row: the directory its
# audit writes to (--out results/real/NAME, in the `sh slow` blocks above
# the table) and a word its program cell holds, so that a row moved or
# added without its audit fails here rather than being compared with
# another row's figures.
REAL = [
    ("vim", "vim"), ("ed", "ed"), ("perl", "perl"), ("gawk", "gawk"),
    ("sponge", "sponge"), ("dd", "dd"), ("install", "install"),
    ("mv", "mv"), ("rsync", "rsync"), ("tar", "tar"), ("sed", "sed -i"),
    ("cp", "cp"), ("git", "git"), ("json", "json"),
    ("sqlite3", "rollback"), ("sqlite3-extra", "EXTRA"),
    ("sqlite3-wal", "WAL"), ("lmdb", "mdb_load"), ("pywriter", "pywriter"),
    ("true", "true"), ("static", "static"),
    ("static-preload", "--backend preload"), ("go", "writer.go"),
    ("go-no-dir-fsync", "-no-dir-fsync"),
    ("sponge-syscall", "sponge"), ("ed-syscall", "ed"),
    ("gawk-syscall", "gawk"),
]


def real_rows(text):
    """[(program cell, cases cell, findings cell, what was found)] of the
    guide's "Real programs" table."""
    start = text.index("| program | version | contract | cases |")
    rows = []
    for line in text[start:].split("\n")[2:]:
        if not line.startswith("|"):
            break
        # a cell may hold an escaped bar (`sed ... \| sponge`)
        cells = [c.strip() for c in
                 re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        rows.append((cells[0], cells[3], cells[4], cells[5]))
    return rows


def test_real_programs_table_reads():
    """Quick, in make check: the table has a row for each audit, in
    order, and its figures are numbers."""
    rows = real_rows((ROOT / "docs" / "guide.md").read_text())
    assert len(rows) == len(REAL), [r[0] for r in rows]
    for (name, word), (program, cases, findings, _) in zip(REAL, rows):
        assert word in program, (name, program)
        assert re.fullmatch(r"\d+", cases), (name, cases)
        assert re.fullmatch(r"\d+ \(\d+\)", findings), (name, findings)
    audits = set(re.findall(r"--out results/real/([\w-]+)",
                            (ROOT / "docs" / "guide.md").read_text()))
    assert audits == {name for name, _ in REAL}, audits


def test_real_programs_table_matches_its_audits(fresh_tree):
    """The cases, findings and defects the guide's table states are
    those of the audits its blocks ran (test_example_runs_as_written,
    just before, in the same fresh tree). Findings are the program's,
    grouped in defects: a harness-error is not counted (rsync's vary
    with the load), but a row whose audit had one must name it."""
    if not SLOW:
        pytest.skip("the audits are slow examples: make check-docs runs them")
    rows = real_rows((ROOT / "docs" / "guide.md").read_text())
    wrong = []
    for (name, _), (program, cases, findings, found) in zip(REAL, rows):
        path = fresh_tree / "results" / "real" / name / "results.json"
        assert path.is_file(), f"{name}: its audit did not run"
        s = json.loads(path.read_text())["summary"]
        grouped = sum(d["cases"] for d in s["defects"])
        assert grouped == s["findings"] - s["harness_errors"], (name, s)
        got = (str(s["cases"]), f"{grouped} ({len(s['defects'])})")
        if got != (cases, findings):
            wrong.append(f"{program}: the table says {cases} cases, "
                         f"{findings} findings; results/real/{name}: "
                         f"{got[0]}, {got[1]}")
        if bool(s["harness_errors"]) != ("harness-error" in found):
            wrong.append(f"{program}: {s['harness_errors']} harness "
                         f"errors in results/real/{name}, and the table "
                         f"{'does not name' if s['harness_errors'] else 'names'}"
                         f" one")
    assert not wrong, "\n".join(wrong)
