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
    from harness import coords
    from harness.engine import cases as casesmod
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
                ids = [f"mytool-{plan}" for _, plan in casesmod.fault_plans(
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
    return re.sub(r"\(\d+ jobs?\)", "(N jobs)", line.rstrip())


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


def _cited_sections():
    """(file, section) of every `crash-model.md, "SECTION"` (or `:`)
    citation in the tree's sources and docs, the comment markers of
    continued lines taken out."""
    found = []
    for path in sorted(ROOT.rglob("*")):
        rel = path.relative_to(ROOT)
        if not path.is_file() or rel.parts[0] in (".git", "results") or \
                path.suffix not in (".c", ".h", ".py", ".toml", ".md", "") or \
                rel in (Path("docs/crash-model.md"),
                        Path("tests/test_docs.py")):
            continue
        try:
            text = path.read_text()
        except (UnicodeDecodeError, OSError):
            continue
        if "crash-model.md" not in text:
            continue
        flat = " ".join(re.sub(r"^\s*(?:\*|#|//)?\s*", "", line)
                        for line in text.splitlines())
        for m in re.finditer(r'crash-model\.md[,:]? "([^"]+)"', flat):
            found.append((str(rel), " ".join(m.group(1).split())))
    return found


def test_crash_model_sections_cited_exist():
    """A source or doc that sends its reader to a section of the
    contract names one that is there: a heading of docs/crash-model.md,
    or its start (fsync-retry.c cited "Linux fsync-failure semantics",
    a section renamed long ago; issue 30)."""
    headings = [" ".join(m.group(1).replace("`", "").split()) for m in
                re.finditer(r"^#+ (.*)$", (ROOT / "docs" / "crash-model.md")
                            .read_text(), re.M)]
    cited = _cited_sections()
    assert len(cited) >= 5, cited
    wrong = [(f, s) for f, s in cited
             if not any(h.startswith(s.replace("`", "")) for h in headings)]
    assert not wrong, (wrong, headings)


# ------------------------------------------------ a fresh clone's first run
#
# What a newcomer runs first, where a newcomer runs it: a `git clone` of
# the committed tree, which has no results/, no build and none of the
# developer's files (issue 30: `make run` on a fresh clone exited 2, and
# every checkout of the developers had what made it pass).

# the README's commands whose documented status is not 0
README_STATUS = {"scripts/crashcheck audit": 1}    # "It exits 1: sed never..."


def readme_blocks():
    """[(line, [command], expected text or None)] of README.md's command
    blocks: fenced with no info string or `sh` (the yaml, toml and text
    ones are shown, not run), each command one line (continuations
    joined, comments dropped)."""
    found = blocks(ROOT / "README.md")
    out = []
    for i, (info, body, line) in enumerate(found):
        if info not in ("", "sh"):
            continue
        commands = [c.split(" #")[0].strip() if c.lstrip()[:1] != "#" else ""
                    for c in body.replace("\\\n", " ").splitlines()]
        commands = [" ".join(c.split()) for c in commands if c.strip()]
        expected = found[i + 1][1] if i + 1 < len(found) and \
            found[i + 1][0] == "text" and info == "sh" else None
        out.append((line, commands, expected))
    return out


def test_readme_blocks_are_found():
    commands = [c for _, cs, _ in readme_blocks() for c in cs]
    assert "make run" in commands and "man crashcheck" in commands
    assert any(c.startswith("scripts/crashcheck audit") for c in commands)


@pytest.fixture(scope="module")
def fresh_clone(tmp_path_factory):
    """`git clone` of the committed tree (HEAD): what a newcomer gets."""
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout: there is no committed tree to clone")
    dest = tmp_path_factory.mktemp("clone") / "crashcheck"
    r = subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT),
                        str(dest)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return dest


@pytest.mark.plain
def test_readme_commands_run_in_a_fresh_clone(fresh_clone, tmp_path):
    """Every command block of README.md, run as written in a fresh clone
    of the committed tree (not a copy of the developer's tree, which has
    a results/ of its own and whatever else is not committed): each
    command exits with its documented status, 0 but for the audit the
    README says exits 1, and an `sh` block's output has its `text`
    block's lines. `make run` must then have written a clean PASS into
    the results/ it made, and its output must hold the guide's sample of
    it, figures included ("The built-in corpus"), so none can drift.

    Two commands are not run as written. `make check` would run this very
    suite inside itself: it is what runs this test, and `.ci/run` runs it
    on a clean clone. `make install PREFIX=/usr/local` (and its
    uninstall) installs into a prefix under the test's temporary
    directory instead of the machine's, whose `bin` is put on PATH as the
    README says `man` needs; `man crashcheck` then reads the page from
    there, paged by `cat`."""
    prefix = tmp_path / "usr" / "local"
    env = {k: v for k, v in os.environ.items() if k != "MANPATH"}
    env.update(PATH=f"{prefix / 'bin'}:{os.environ['PATH']}",
               MANPAGER="cat", PAGER="cat", PYTHONUNBUFFERED="1")
    outputs = {}
    for line, commands, expected in readme_blocks():
        said = []
        for command in commands:
            if command == "make check":
                continue
            run = command.replace("PREFIX=/usr/local", f"PREFIX={prefix}")
            r = subprocess.run(["bash", "-c", run], cwd=fresh_clone, env=env,
                               stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True,
                               timeout=1800)
            want = next((s for c, s in README_STATUS.items()
                         if command.startswith(c)), 0)
            assert r.returncode == want, \
                f"README.md:{line}: {command}: exit {r.returncode}\n{r.stdout[-3000:]}"
            assert "Traceback" not in r.stdout, r.stdout
            said.append(r.stdout)
            outputs[command] = r.stdout
        if expected is not None:
            problem = match_output(expected, "".join(said))
            assert problem is None, f"README.md:{line}: {problem}"
    assert "crashcheck" in outputs["man crashcheck"].lower()
    assert not prefix.exists() or not any(prefix.rglob("crashcheck*")), \
        "make uninstall left files behind"

    results = fresh_clone / "results"
    assert (results / ".crashcheck").is_file()
    summary = json.loads((results / "results.json").read_text())["summary"]
    assert summary["passed"] and summary["clean"], summary["unseen"]
    assert summary["failed"] == 0 and not summary["not_caught"]
    assert (results / "report.md").read_text().splitlines()[2].startswith(
        "**PASS**:")
    guide = (ROOT / "docs" / "guide.md").read_text()
    corpus = guide[guide.index("## The built-in corpus"):]
    sample = next(body for info, body, _ in blocks_of(corpus)
                  if info == "text")
    problem = match_output(sample, outputs["make run"])
    assert problem is None, f"guide.md, The built-in corpus: {problem}"


def blocks_of(text):
    """[(info, body, line)] of TEXT's fenced blocks."""
    return [(m.group(1).strip(), m.group(2), text.count("\n", 0, m.start()) + 1)
            for m in _FENCE.finditer(text)]


def test_the_exit_status_table_is_one_table_of_distinct_rows():
    """reference.md's "Exit statuses" is one table, not cut in two by
    another section, and no status is listed twice for a command (issue
    30: "Output directories" sat in its middle, and 130/143 came twice)."""
    text = (ROOT / "docs" / "reference.md").read_text()
    section = text[text.index("## Exit statuses\n"):]
    section = section[:section.index("\n## ", 1)]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    body = section[section.index(rows[0]):section.index(rows[-1])]
    assert "\n\n" not in body and "#" not in body, "the table is cut"
    keys = []
    for row in rows[2:]:
        status, commands = [c.strip() for c in row.strip("|").split("|")][:2]
        for st in status.split(", "):
            for cmd in commands.replace("`", "").split(", "):
                keys.append((st, cmd.split()[0]))
    dup = {k for k in keys if keys.count(k) > 1}
    assert not dup, dup
    assert ("2", "all") in keys and ("130", "run") in keys
    # no row of exit statuses anywhere else in the page
    status_row = re.compile(r"^\| (?:\d+|\d+\+N|other)(?:, \S+)* \| ", re.M)
    assert len(status_row.findall(text)) == len(rows) - 2, \
        [m for m in status_row.findall(text)]
