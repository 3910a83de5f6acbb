"""harness/reports/lessons.py: the C function extractor, the lessons list, and the
teaching corpus it reads (workloads/variants + their specs)."""

import os
import re
from pathlib import Path

import pytest

from harness.reports import lessons as L
from harness.reports import markdown
from harness.engine import spec as specmod

ROOT = Path(__file__).resolve().parent.parent
VARIANTS = sorted((ROOT / "workloads" / "variants").glob("*.c"))


# ------------------------------------------------------------- extractor

TRICKY = r'''
#include <stdio.h>
#define OPEN_BRACE {            /* a directive with a brace in it */
#define CALL(x) f(x)
#define LONG_MACRO(a) \
	do { a; } while (0)

/* helper(void) { not code } */
static int helper(int x);       // a prototype, not a definition

// int helper(int x) { commented out }
static const char *text = "helper(1) { \" } {";
static char brace = '{', quote = '\'';

struct point { int x, y; };     /* a struct body is not a function */

static int __attribute__((unused))
helper(int x)
{
	const char *s = "}}}";  /* a string full of closing braces */
	char c = '}';

	if (x) {
		/* } in a comment */
		return s[0] + c;
	}
	return 0;
}

int
other(void (*cb)(int), int n) __attribute__((noinline));

int
other(void (*cb)(int), int n)
{
	struct { int a; } v = { n };
	cb(v.a);
	return helper(n);
}

int last(void) __attribute__((cold)) { return 1; }
'''


def test_strip_keeps_offsets_and_lines():
    s = L.strip(TRICKY)
    assert len(s) == len(TRICKY)
    assert s.count("\n") == TRICKY.count("\n")
    # nothing of a comment, a literal or a directive survives
    assert "not code" not in s and "commented out" not in s
    assert "}}}" not in s and "'{'" not in s
    assert "OPEN_BRACE" not in s and "LONG_MACRO" not in s


def test_definitions_skip_prototypes_comments_strings_and_macros():
    defs = L.definitions(TRICKY)
    assert [d.name for d in defs] == ["helper", "other", "last"]


def test_extract_cuts_from_declaration_line_to_balanced_brace():
    text = L.extract(TRICKY, "helper")
    assert text.startswith("static int __attribute__((unused))\nhelper(int x)\n{")
    assert text.endswith("\treturn 0;\n}")
    assert '"}}}"' in text and "'}'" in text


def test_extract_return_type_on_its_own_line():
    text = L.extract(TRICKY, "other")
    assert text.startswith("int\nother(void (*cb)(int), int n)\n{")
    assert text.endswith("return helper(n);\n}")
    # the prototype (with its attribute) stayed out
    assert "noinline" not in text


def test_extract_attribute_between_parameters_and_body():
    assert L.extract(TRICKY, "last") == \
        "int last(void) __attribute__((cold)) { return 1; }"


def test_extract_errors_name_the_problem():
    with pytest.raises(L.ExtractError, match=r"x\.c: no definition of function 'nope'"):
        L.extract(TRICKY, "nope", "x.c")
    twice = "int f(void)\n{\n}\n#if 0\n#endif\nint f(void)\n{\n}\n"
    with pytest.raises(L.ExtractError, match=r"'f' is defined 2 times \(lines 1, 6\)"):
        L.extract(twice, "f")
    with pytest.raises(L.ExtractError, match="no closing brace"):
        L.definitions("int f(void)\n{\n\tif (x) {\n")


def test_extract_survives_unterminated_literal_and_comment():
    # an unterminated literal ends at its line; a comment at end of file
    text = "int f(void)\n{\n\treturn 'x;\n}\n/* trailing"
    assert L.extract(text, "f") == "int f(void)\n{\n\treturn 'x;\n}"


def test_extract_on_the_real_library():
    put = (ROOT / "workloads" / "lib" / "put.c").read_text()
    names = [d.name for d in L.definitions(put)]
    assert {"put_stdio", "put_direct", "put_sync", "put_mmap", "put_file"} <= set(names)
    body = L.extract(put, "put_file")
    assert body.startswith("int put_file(") and body.rstrip().endswith("}")
    assert body.count("{") == body.count("}")


# --------------------------------------------------------------- lessons

LIB_C = '''/* lib */
int keep(int fd)
{
	if (fsync(fd) < 0)
		return -1;
	return 0;
}
'''

VARIANT_C = '''/*
 * keep-unchecked: fsync's result ignored.
 */
#include "lib.h"

int keep(int fd)
{
	/* BUG: ignored */
	fsync(fd);
	return 0;
}
'''


def _spec(tmp_path, name, expect, prog=None, buggy=True):
    lines = [f'name = "{name}"', 'description = "d"',
             f'command = ["{{bin}}/{prog or name}", "--strategy={{strategy}}", '
             '"{target}", "{new}"]',
             'strategies = ["stdio", "sync"]', 'contract = "atomic"',
             "sizes = [1, 4097]"]
    if buggy:
        lines += ['teaches = "fsync\'s result ignored: check it"',
                  'fixed_by = "replace"']
        for e in expect:
            lines += ["[[expect]]"] + [f'{k} = {v!r}'.replace("'", '"') if
                                       isinstance(v, str) else f"{k} = {v}"
                                       for k, v in e.items()]
    p = tmp_path / f"{name}.toml"
    p.write_text("\n".join(lines) + "\n")
    return specmod.load(p)


def _case(id, workload, verdict, kind="eio", model=None, strategy="stdio",
          size=1, call="fsync#1"):
    return {"id": id, "workload": workload, "verdict": verdict, "kind": kind,
            "model": model, "strategy": strategy, "size": size, "call": call,
            "expected": [], "reproduce": f"scripts/crashcheck run x --case '{id}'"}


@pytest.fixture
def corpus(tmp_path):
    lib = tmp_path / "lib"
    var = tmp_path / "variants"
    lib.mkdir()
    var.mkdir()
    (lib / "keep.c").write_text(LIB_C)
    (var / "keep-unchecked.c").write_text(VARIANT_C)
    return tmp_path, var, lib


def test_lessons_for_a_fake_spec_and_results(corpus):
    tmp, var, lib = corpus
    bad = _spec(tmp, "keep-unchecked", [
        {"verdict": "unreported-error", "kind": "eio"},
        {"verdict": "not-durable", "kind": "powerloss", "model": "posix"}])
    good = _spec(tmp, "replace", [], prog="replace", buggy=False)
    results = [
        _case("keep-unchecked-stdio-1B-baseline", "keep-unchecked", "ok", kind="baseline"),
        # a finding no entry of ours names comes first: not a catch
        _case("keep-unchecked-stdio-1B-fsync#1=crash", "keep-unchecked", "torn",
              kind="crash"),
        _case("keep-unchecked-stdio-1B-powerloss@exit-posix", "keep-unchecked",
              "not-durable", kind="powerloss", model="posix", call="exit"),
        _case("keep-unchecked-stdio-1B-fsync#1=EIO", "keep-unchecked",
              "unreported-error"),
        _case("replace-stdio-1B-fsync#1=EIO", "replace", "unreported-error"),
    ]
    out = L.lessons([good, bad], results, variant_dir=var, lib_dir=lib)
    assert len(out) == 1
    lesson = out[0]
    assert set(lesson) == {"rule", "variant", "case_id", "verdict", "reproduce",
                           "diff", "why"}
    assert all(isinstance(v, str) for v in lesson.values())
    assert lesson["rule"] == "fsync's result ignored: check it"
    assert lesson["variant"] == "keep-unchecked"
    # the first expect entry decides, though a power-loss case came earlier
    assert lesson["case_id"] == "keep-unchecked-stdio-1B-fsync#1=EIO"
    assert lesson["verdict"] == "unreported-error"
    assert lesson["reproduce"].endswith("--case 'keep-unchecked-stdio-1B-fsync#1=EIO'")
    diff = lesson["diff"].splitlines()
    assert diff[0].startswith("--- ") and "keep-unchecked.c (keep, with the defect)" in diff[0]
    assert diff[1].startswith("+++ ") and "keep.c (keep, correct)" in diff[1]
    assert "-\t/* BUG: ignored */" in diff and "-\tfsync(fd);" in diff
    assert "+\tif (fsync(fd) < 0)" in diff and "+\t\treturn -1;" in diff
    # the report takes it as it is
    md = markdown.markdown_text([], {"command": "t"}, out)
    assert "## Lessons" in md and "keep-unchecked-stdio-1B-fsync#1=EIO" in md


def test_lessons_fall_back_to_later_entries_and_respect_coordinates(corpus):
    tmp, var, lib = corpus
    bad = _spec(tmp, "keep-unchecked", [
        {"verdict": "unreported-error", "kind": "eio", "strategy": "sync"},
        {"verdict": "not-durable", "kind": "powerloss", "model": "posix"}])
    results = [
        # right verdict, wrong strategy for entry 1; wrong model for entry 2
        _case("a", "keep-unchecked", "unreported-error", strategy="stdio"),
        _case("b", "keep-unchecked", "not-durable", kind="powerloss",
              model="ext4-ordered", call="exit"),
        _case("c", "keep-unchecked", "not-durable", kind="powerloss",
              model="posix", call="exit"),
    ]
    out = L.lessons([bad], results, variant_dir=var, lib_dir=lib)
    assert [(x["case_id"], x["verdict"]) for x in out] == [("c", "not-durable")]


def test_uncaught_variant_has_no_lesson(corpus):
    tmp, var, lib = corpus
    bad = _spec(tmp, "keep-unchecked", [{"verdict": "unreported-error"}])
    results = [_case("a", "keep-unchecked", "ok"),
               _case("b", "keep-unchecked", "harness-error")]
    assert L.lessons([bad], results, variant_dir=var, lib_dir=lib) == []


def test_missing_variant_source_or_function_gives_the_reason_not_a_diff(corpus):
    """A buggy spec of the user's own (no variant source) or a source the
    extractor cannot cut: the lesson says why there is no diff, and the
    report is still written."""
    tmp, var, lib = corpus
    bad = _spec(tmp, "gone", [{"verdict": "unreported-error"}])
    results = [_case("a", "gone", "unreported-error")]

    def diff():
        out = L.lessons([bad], results, variant_dir=var, lib_dir=lib)
        assert [x["case_id"] for x in out] == ["a"]
        return out[0]["diff"]

    assert re.fullmatch(r"\(no fix to show: .*gone\.c does not exist, so gone's "
                        r"program is not a variant of the corpus\)\n", diff())
    (var / "gone.c").write_text("int nowhere(void)\n{\n\treturn 0;\n}\n")
    assert "no library file defines 'nowhere'" in diff()
    (var / "gone.c").write_text("int a(void) { return 0; }\nint b(void) { return 1; }\n")
    assert re.search(r"defines 2 \(a, b\)", diff())
    # the functions lessons() is built on still raise
    with pytest.raises(L.ExtractError, match=r"defines 2 \(a, b\)"):
        L.fix_diff(var / "gone.c", lib)


# ------------------------------------------------------ the real corpus

@pytest.fixture(scope="module")
def specs():
    return {s.name: s for s in specmod.load_all(ROOT / "workloads" / "specs")}


def test_corpus_has_at_least_sixteen_variants_each_with_a_buggy_spec(specs):
    assert len(VARIANTS) >= 16
    for path in VARIANTS:
        s = specs.get(path.stem)
        assert s is not None, f"{path.name}: no workloads/specs/{path.stem}.toml"
        assert s.buggy and s.teaches and s.fixed_by == "replace", path.stem
        assert L.variant_path(s) == path
    for s in specs.values():
        if s.buggy:
            assert L.variant_path(s).is_file(), f"{s.name}: no variant source"


@pytest.mark.parametrize("path", VARIANTS, ids=[p.stem for p in VARIANTS])
def test_variant_is_one_marked_defect_in_one_library_function(path):
    text = path.read_text()
    # the Method header names the variant, its defect and the rule
    head = text.split("*/", 1)[0]
    assert head.startswith(f"/*\n * {path.stem}: "), path.name
    for word in ("Method:", "Defect:", "Rule broken"):
        assert word in head, f"{path.name}: header lacks '{word}'"
    # but not what catches it: exercise 1 asks a student to predict that
    # from the header; the answer is the lesson's (its spec's `lesson`)
    assert "Caught" not in head and "specs/" not in head, \
        f"{path.name}: the header gives away what catches the variant"
    assert specmod.load(ROOT / "workloads" / "specs" / f"{path.stem}.toml").lesson, \
        f"{path.stem}.toml: no lesson saying what catches it"
    name, bad = L.variant_function(path)
    lib_path, good = L.correct_function(name)
    assert bad != good
    assert "BUG:" in bad, f"{path.name}: mark the defect with a BUG: comment"
    diff = L.fix_diff(path)
    hunks = [line for line in diff.splitlines() if line.startswith("@@")]
    # A copy that drifted from the library shows as extra hunks: the fix
    # would no longer be the defect alone. Regenerate the copy then.
    assert 1 <= len(hunks) <= 3, f"{path.name}: {len(hunks)} hunks against {lib_path.name}"
    assert re.search(r"^-.*BUG:", diff, re.M), diff


# ------------------------------------------- the link-time replacement

def _bin(name):
    p = ROOT / "workloads" / "bin" / name
    if not p.is_file():
        pytest.fail(f"{p} is not built: run make")
    return str(p)


def test_variant_binaries_exist_for_every_variant():
    for path in VARIANTS:
        _bin(path.stem)


def test_variant_function_replaces_the_librarys_at_link_time(tmp_path):
    """replace gives the target a new inode (the renamed temp file);
    in-place-rewrite, whose replace_file wins over lib's weak one, keeps
    the inode it truncated and rewrote."""
    import os
    import subprocess
    (tmp_path / "new").write_bytes(b"n" * 5000)
    inodes = {}
    for prog in ("replace", "in-place-rewrite"):
        target = tmp_path / "target"
        target.write_bytes(b"o" * 9000)
        before = target.stat().st_ino
        proc = subprocess.run([_bin(prog), "--strategy=sync", "target", "new"],
                              cwd=tmp_path, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        assert target.read_bytes() == b"n" * 5000
        inodes[prog] = target.stat().st_ino == before
        assert sorted(os.listdir(tmp_path)) == ["new", "target"]
    assert inodes == {"replace": False, "in-place-rewrite": True}


def test_replaced_function_is_called_from_inside_the_library(tmp_path):
    """put_file (lib) calls put_stdio; stdio-osync-rename's replace_file
    refuses other strategies with exit 77 and its own message."""
    import subprocess
    (tmp_path / "new").write_bytes(b"n")
    proc = subprocess.run([_bin("stdio-osync-rename"), "--strategy=sync",
                           "target", "new"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.returncode == 77
    assert proc.stderr == "replace: this variant writes with stdio only, not sync\n"


# ------------------------------------------------- what the texts claim
#
# The variants' headers and lessons teach facts about Linux; these check
# the ones this machine can show (issue 30: eintr-fatal.c said any signal,
# SIGCHLD or a resized terminal, failed the update; fsync-unchecked's
# lesson said ENOSPC caught it).

@pytest.fixture(scope="module")
def eintrprobe(tmp_path_factory):
    """tests/progs/eintrprobe.c, built."""
    import shutil
    import subprocess
    exe = tmp_path_factory.mktemp("probe") / "eintrprobe"
    cc = shutil.which("cc")
    if cc is None:
        pytest.fail("no C compiler 'cc' on PATH")
    r = subprocess.run([cc, "-O0", "-Wall", "-Wextra", "-o", str(exe),
                        str(ROOT / "tests" / "progs" / "eintrprobe.c")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return exe


def _probe(exe, *args):
    import subprocess
    r = subprocess.run([str(exe), *map(str, args)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    got = dict(kv.split("=") for kv in r.stdout.split())
    assert int(got["signals"]) > 0, r.stdout      # the timer did fire
    return int(got["eintr"])


@pytest.mark.parametrize("where", ["tmp", "shm"])
@pytest.mark.parametrize("flags", ["restart", "norestart"])
def test_a_caught_signal_does_not_interrupt_a_local_file_write(
        eintrprobe, tmp_path, where, flags):
    """eintr-fatal.c: a write to a regular file on a local filesystem is
    interrupted by no signal the program survives, handler or not."""
    base = tmp_path if where == "tmp" else Path("/dev/shm")
    target = base / f"eintrprobe-{os.getpid()}-{flags}"
    try:
        assert _probe(eintrprobe, "file", target, flags) == 0
    finally:
        target.unlink(missing_ok=True)


def test_a_caught_signal_interrupts_a_blocked_pipe_write_without_sa_restart(
        eintrprobe):
    """eintr-fatal.c: a write blocked on a pipe fails with EINTR when a
    handler without SA_RESTART runs; with SA_RESTART the kernel restarts
    it and the program never sees EINTR."""
    assert _probe(eintrprobe, "pipe", "norestart") > 0
    assert _probe(eintrprobe, "pipe", "restart") == 0


def test_fsync_uncheckeds_lesson_names_what_catches_it(tmp_path):
    """The lesson says which faults catch fsync-unchecked and as what: the
    one-shot EIO of its temp file's fsync, which the program ignores and
    exits 0 (unreported-error); a persistent fault (ENOSPC, or EIO on
    every later fsync), which fails the directory's fsync too, which the
    variant checks: it exits 1, but the file whose fsync failed is
    already renamed over the target (torn). Swept, exactly those cases
    are findings, as those verdicts."""
    import json
    import subprocess
    spec = ROOT / "workloads" / "specs" / "fsync-unchecked.toml"
    lesson = specmod.load(spec).lesson
    assert "once with EIO" in lesson and "unreported-error" in lesson \
        and "torn when the failure persists" in lesson, lesson
    r = subprocess.run([str(ROOT / "scripts" / "crashcheck"), "run", "--out",
                        str(tmp_path / "o"), "--faults", "eio,enospc",
                        str(spec)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    cases = json.loads((tmp_path / "o" / "results.json").read_text())["cases"]
    caught = sorted((c["id"].split("B-", 1)[1], c["verdict"]) for c in cases
                    if c["verdict"] != "ok")
    assert caught == sorted(
        [("fsync(target.tmp)#1=EIO", "unreported-error")] * 2
        + [("fsync(target.tmp)#1++=EIO", "torn")] * 2
        + [("fsync(target.tmp)#1++=ENOSPC", "torn")] * 2), caught
    persistent = [c for c in cases if c["id"].endswith(
        ("fsync(target.tmp)#1++=ENOSPC", "fsync(target.tmp)#1++=EIO"))]
    assert len(persistent) == 4 and all(
        c["exit"]["status"] == 1 and "fsync '.'" in c["stderr"]
        for c in persistent), persistent
