"""Lessons: for each buggy variant, the rule it breaks, the case that
caught it, and the fix as a diff generated from the sources.

A buggy variant (workloads/variants/<name>.c, see workloads/variants/README)
is a copy of exactly one function of workloads/lib with one defect; the
build links it in place of the library's. So the fix is the unified diff
from the variant's function to the library function of the same name, both
cut out of their files by `extract`. Nothing here is written by hand per
variant: a variant whose defect is fixed in its file, or a library function
that changes, changes the lesson on the next run.

The C function extractor is deliberately small but does not guess: it
blanks comments, string and character literals and preprocessor lines
(which may hold braces and parentheses) before it looks at the code, finds
`name(` at file scope whose balanced parameter list is followed by `{`
(after optional `__attribute__((...))`) rather than `;` (a prototype), and
takes the text from the start of the declaration's first line to the
balanced closing brace.

The report renders the list (harness/reports/report.py, `write_all(..., lessons=)`);
`lessons(specs, results)` is the one entry point the plugin needs.
"""

import difflib
import re
from dataclasses import dataclass
from pathlib import Path

from .. import ROOT, tree_path

VARIANT_DIR = ROOT / "workloads" / "variants"
LIB_DIR = ROOT / "workloads" / "lib"

# Verdicts that are not findings: a case with one of them caught nothing.
NOT_FINDINGS = ("ok", "skipped", "harness-error")

_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[(){};]")
_KEYWORDS = frozenset(("if", "for", "while", "switch", "return", "sizeof",
                       "do", "else", "case", "_Alignof", "_Generic",
                       "__attribute__", "__attribute", "__declspec",
                       "__asm__", "asm", "__typeof__", "typeof"))
_ATTRIBUTE = frozenset(("__attribute__", "__attribute"))


class ExtractError(Exception):
    """A function that cannot be cut out of a C file; str() is one line."""


@dataclass(frozen=True)
class Definition:
    name: str
    start: int      # offset of the first character of the declaration's line
    end: int        # offset just past the closing brace
    line: int       # 1-based line number of start


def strip(text):
    """TEXT with comments, string and character literals and preprocessor
    directives blanked to spaces (newlines kept, so offsets and line
    numbers still match). A directive becomes ';' at its '#', so it still
    ends whatever came before it."""
    out = list(text)
    n = len(text)
    i = 0
    line_start = True       # only whitespace so far on this line

    def blank(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if c == "\n":
            line_start = True
            i += 1
            continue
        if line_start and c == "#":
            j = i
            while j < n and text[j] != "\n":
                if text.startswith("/*", j):
                    # a comment inside a directive may span lines
                    k = text.find("*/", j + 2)
                    j = n if k < 0 else k + 2
                    continue
                if text[j] == "\\" and j + 1 < n and text[j + 1] == "\n":
                    j += 2
                    continue
                j += 1
            blank(i, j)
            out[i] = ";"
            i = j
            continue
        if not c.isspace():
            line_start = False
        if text.startswith("/*", i):
            k = text.find("*/", i + 2)
            j = n if k < 0 else k + 2
            blank(i, j)
            i = j
        elif text.startswith("//", i):
            j = i
            while j < n and text[j] != "\n":
                if text[j] == "\\" and j + 1 < n and text[j + 1] == "\n":
                    j += 2
                    continue
                j += 1
            blank(i, j)
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j, n)
            blank(i + 1, j)         # the contents; the quotes stay
            # an unterminated literal ends at the newline, which stays
            i = j + 1 if j < n and text[j] == c else j
        else:
            i += 1
    return "".join(out)


def _match(code, i, open_, close):
    """Offset just past the bracket that closes the one at code[i]."""
    depth = 0
    for m in re.compile(re.escape(open_) + "|" + re.escape(close)).finditer(code, i):
        depth += 1 if m.group() == open_ else -1
        if depth == 0:
            return m.end()
    return None


def _skip_space(code, i):
    while i < len(code) and code[i].isspace():
        i += 1
    return i


def definitions(text):
    """Every function definition at file scope, in file order."""
    code = strip(text)
    found = []
    depth = 0           # brace depth
    paren = 0           # parenthesis depth at brace depth 0
    pos = 0
    while True:
        m = _TOKEN.search(code, pos)
        if m is None:
            break
        tok, pos = m.group(), m.end()
        if tok == "{":
            depth += 1
        elif tok == "}":
            depth = max(0, depth - 1)
        elif tok == "(":
            paren += depth == 0
        elif tok == ")":
            paren = max(0, paren - (depth == 0))
        elif tok == ";":
            paren = 0 if depth == 0 else paren
        elif depth == 0 and paren == 0 and tok not in _KEYWORDS:
            lp = _skip_space(code, pos)
            if lp >= len(code) or code[lp] != "(":
                continue
            rp = _match(code, lp, "(", ")")
            if rp is None:
                break
            body = _skip_space(code, rp)
            while True:     # __attribute__((...)) between ) and {
                a = _TOKEN.match(code, body)
                if a is None or a.group() not in _ATTRIBUTE:
                    break
                ap = _skip_space(code, a.end())
                if ap >= len(code) or code[ap] != "(":
                    break
                end = _match(code, ap, "(", ")")
                if end is None:
                    break
                body = _skip_space(code, end)
            if body < len(code) and code[body] == "{":
                end = _match(code, body, "{", "}")
                if end is None:
                    raise ExtractError(f"function '{tok}' at line "
                                       f"{code.count(chr(10), 0, m.start()) + 1}: "
                                       "no closing brace")
                start = _decl_start(code, m.start())
                found.append(Definition(tok, start, end,
                                        code.count("\n", 0, start) + 1))
                pos = end
            else:
                pos = rp    # a prototype, a call or a declarator: go on after it
    return found


def _decl_start(code, name_at):
    """Start of the line where the declaration holding the name at
    NAME_AT begins: after the previous ';', '{' or '}' at file scope (or a
    blanked directive or comment), skipping blank space."""
    i = name_at
    while i > 0 and code[i - 1] not in ";{}":
        i -= 1
    i = _skip_space(code, i)
    return code.rfind("\n", 0, i) + 1


def extract(text, name, where="source"):
    """The definition of function NAME in TEXT, from the start of its first
    line to its closing brace. ExtractError when it is not defined there,
    or defined more than once."""
    defs = [d for d in definitions(text) if d.name == name]
    if not defs:
        raise ExtractError(f"{where}: no definition of function '{name}'")
    if len(defs) > 1:
        lines = ", ".join(str(d.line) for d in defs)
        raise ExtractError(f"{where}: function '{name}' is defined "
                           f"{len(defs)} times (lines {lines})")
    d = defs[0]
    return text[d.start:d.end]


def variant_function(path):
    """(name, text) of the one function a variant file defines."""
    text = Path(path).read_text()
    defs = definitions(text)
    if len(defs) != 1:
        names = ", ".join(d.name for d in defs) or "none"
        raise ExtractError(f"{tree_path(path)}: a variant defines exactly one "
                           f"function, this one defines {len(defs)} ({names})")
    d = defs[0]
    return d.name, text[d.start:d.end]


def correct_function(name, lib_dir=LIB_DIR):
    """(path, text) of function NAME among the library sources."""
    hits = []
    for path in sorted(Path(lib_dir).glob("*.c")):
        text = path.read_text()
        if any(d.name == name for d in definitions(text)):
            hits.append((path, extract(text, name, tree_path(path))))
    if not hits:
        raise ExtractError(f"{tree_path(lib_dir)}: no library file defines "
                           f"'{name}', which a variant replaces")
    if len(hits) > 1:
        raise ExtractError(f"{tree_path(lib_dir)}: '{name}' is defined in "
                           + " and ".join(tree_path(p) for p, _ in hits))
    return hits[0]


def fix_diff(variant_path, lib_dir=LIB_DIR):
    """The unified diff that turns the variant's function into the
    library's: the fix, as a learner reads it."""
    name, bad = variant_function(variant_path)
    path, good = correct_function(name, lib_dir)
    lines = difflib.unified_diff(
        bad.splitlines(), good.splitlines(),
        fromfile=f"{tree_path(variant_path)} ({name}, with the defect)",
        tofile=f"{tree_path(path)} ({name}, correct)", lineterm="")
    return "\n".join(lines) + "\n"


def variant_path(spec, variant_dir=VARIANT_DIR):
    """The variant's source: variants/<program>.c, the program being the
    basename of the spec's command[0] ("{bin}/fsync-unchecked")."""
    prog = Path(spec.command[0].replace("{bin}", "bin")).name
    return Path(variant_dir) / f"{prog}.c"


def _caught_by(spec, results):
    """The first case that caught the variant: for the spec's expect
    entries in order, the first result (in the given order) the entry
    applies to whose verdict it names."""
    mine = [r for r in results if r.get("workload") == spec.name
            and r.get("verdict") not in NOT_FINDINGS]
    for e in spec.expect:
        for r in mine:
            if r["verdict"] == e.verdict and e.applies(
                    kind=r.get("kind"), model=r.get("model"),
                    strategy=r.get("strategy"), size=r.get("size"),
                    call=r.get("call") or None,
                    backend=r.get("backend", "preload")):
                return r
    return None


def lessons(specs, results, variant_dir=VARIANT_DIR, lib_dir=LIB_DIR):
    """One lesson per buggy spec that some case caught, in spec order:
    {rule, variant, case_id, verdict, reproduce, diff, why}, all strings.

    A variant no case caught has no lesson: the sweep names it NOT CAUGHT
    and fails. A buggy spec whose program is not a variant of the corpus
    (a user's own, or a source the extractor cannot cut) still gets its
    lesson, with the reason in place of the diff: the report must not
    fail for it. tests/test_lessons.py holds the corpus to having a diff.
    """
    out = []
    for spec in specs:
        if not spec.buggy:
            continue
        r = _caught_by(spec, results)
        if r is None:
            continue
        out.append({
            "rule": spec.teaches,
            "variant": spec.name,
            "case_id": r["id"],
            "verdict": r["verdict"],
            "reproduce": r.get("reproduce") or "",
            "diff": _diff_or_reason(spec, variant_dir, lib_dir),
            # what catches it and why (the spec's lesson; "" without one)
            "why": getattr(spec, "lesson", None) or "",
        })
    return out


def _diff_or_reason(spec, variant_dir, lib_dir):
    path = variant_path(spec, variant_dir)
    if not path.is_file():
        return (f"(no fix to show: {tree_path(path)} does not exist, so "
                f"{spec.name}'s program is not a variant of the corpus)\n")
    try:
        return fix_diff(path, lib_dir)
    except (ExtractError, OSError, UnicodeDecodeError) as e:
        return f"(no fix to show: {e})\n"
