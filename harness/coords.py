"""Call coordinates that name their file: `write(target.tmp)#3`.

A call's number across the whole process tree (`write#13`) moves when
anything else the program does moves: another process's writes, a
thread's, a socket's. The sweep names the file a call is on instead, as
the program sees it from its work directory (`target.tmp`, `.` for the
directory itself, `sub/x`), and counts only the calls of that name on
that file: the plan language's glob (`write(target.tmp)#3`), which the
fault library also matches against the path relative to
CRASHCHECK_WATCH (faults/plan.c, glob_match). Case ids, plans,
reproduce commands and crash points are written with these
coordinates.

`Coords` counts them over a recorded trace exactly as the library
counts a glob rule's matches: a record matches a glob when its full
path, its last component or its path relative to the work directory
does, so a file of the same name elsewhere counts too, in both.
A glob here holds no wildcard but `?` (a character the plan language or
fnmatch would read otherwise: `*?[]\\()#;=`, blanks and control characters)
and `*` (a run of characters outside ASCII, which fnmatch in a UTF-8
locale reads as characters and in the C locale as bytes), so Python's
fnmatch and the C library's agree on it.

A file with no name (O_TMPFILE, or unlinked while open) is named as
/proc shows its descriptor, `#INODE (deleted)`: its inode number changes
from run to run, so its glob is `?*??deleted?` whatever the number, in
every run alike. A file whose name changes from run to run (mkstemp's
`sedmOTy6p`) is named by what its names share (`sed??????`, `align`), from recorded runs
of the program. `moved` compares those runs: the calls on the work
directory whose coordinates differ between them (a program whose threads
or processes race) are named, and the sweep never aims a case at them.

Threads. Where the calls of one name on one file come from several
threads of a process, which thread makes the nth of them is a race; a
thread's own calls are not. Those coordinates name the thread, as the
plan language does (`pwrite(data)@2#3`: the third pwrite on data of the
process's second thread; 1 is the thread it started with, the others
are numbered in the order they were made, the trace's `thread`), and
count its calls alone, as the library counts a rule with a thread.
Processes keep one count across the tree, as the library's.
"""

import re
from fnmatch import fnmatchcase

# characters a glob gives as '?': the plan language's own, and fnmatch's
_SPECIAL = frozenset("*?[]\\()#;=")


def relative(path, watch):
    """PATH relative to the work directory WATCH ('.' for WATCH itself),
    or None when it is outside (or no path)."""
    if not path:
        return None
    if path == watch:
        return "."
    if path.startswith(watch + "/"):
        return path[len(watch) + 1:]
    return None


# how /proc names the file of a descriptor that has no name
_UNNAMED = re.compile(r"(.*/)?#[0-9]+ \(deleted\)")
_UNNAMED_GLOB = "?*??deleted?"


def glob_of(rel):
    """The glob that names the file REL (a path relative to the work
    directory) in a plan: the name itself, but for the characters that
    cannot stand as they are (the module's docstring); a file with no
    name, by what does not change with its inode number."""
    m = _UNNAMED.fullmatch(rel)
    if m:
        return glob_of(m.group(1) or "") + _UNNAMED_GLOB
    out = []
    for ch in rel:
        if ord(ch) > 0x7e:
            if not out or out[-1] != "*":
                out.append("*")
        elif ord(ch) <= 0x20 or ch in _SPECIAL:
            out.append("?")
        else:
            out.append(ch)
    return "".join(out)


def _wild(glob):
    return "?" in glob or "*" in glob


def names(records, watch):
    """The files of the work directory WATCH that RECORDS' calls are on,
    relative to it, in the order the calls first name them."""
    seen = {}
    for r in sorted((r for r in records if r.get("ev") == "call"),
                    key=lambda r: r["seq"]):
        for key in ("path", "path2"):
            rel = relative(r.get(key), watch)
            if rel is not None:
                seen.setdefault(rel, None)
    return list(seen)


def generalize(group):
    """One glob for the names GROUP that one file had in several runs
    (mkstemp's 'sedmOTy6p', 'sedAb12Cd'): what they share at the start
    and at the end, and between them a '?' a character where the names
    are as long as one another, else a '*'; a '*' for the whole number
    where they differ only in digits ('temp-3812.rdb', 'temp-3845.rdb':
    'temp-*.rdb')."""
    first = group[0]
    if all(_UNNAMED.fullmatch(n) for n in group):
        globs = {glob_of(n) for n in group}
        if len(globs) == 1:
            return globs.pop()
    p = 0
    while all(len(n) > p and n[p] == first[p] for n in group):
        p += 1
    s = 0
    while all(len(n) - p > s and n[len(n) - 1 - s] == first[len(first) - 1 - s]
              for n in group):
        s += 1
    if all(n[p:len(n) - s].isdigit() or p + s == len(n) for n in group):
        # a number (a process id: Redis's temp-<pid>.rdb): the next run's
        # may differ in any digit and be longer or shorter, so the digits
        # the runs happened to share at its edges are not kept either
        while p and first[p - 1].isdigit():
            p -= 1
        while s and first[len(first) - s].isdigit():
            s -= 1
        return glob_of(first[:p]) + "*" + glob_of(first[len(first) - s:])
    middles = {len(n) - p - s for n in group}
    mid = "?" * middles.pop() if len(middles) == 1 else "*"
    return glob_of(first[:p]) + mid + glob_of(first[len(first) - s:])


def align(runs):
    """{name: glob} for the files whose names differ from run to run:
    RUNS are (records, work directory) of recorded runs of one program.
    The names every run made stand as they are; the others are paired
    in the order the runs first name them and given one glob
    (generalize), when every run has as many of them; else none is (and
    the calls on them differ between the runs: moved says which)."""
    lists = [names(*run) for run in runs]
    common = set(lists[0]).intersection(*map(set, lists[1:]))
    rest = [[n for n in names_ if n not in common] for names_ in lists]
    if len({len(r) for r in rest}) != 1:
        return {}
    out = {}
    for group in zip(*rest):
        g = generalize(group)
        for n in group:
            out[n] = g
    return out


def pattern(rel, globs):
    """The name file REL goes by across runs: its glob of GLOBS ({name:
    glob}, align's) when it has one or matches one with a wildcard (the
    same file named otherwise in this run), else REL itself."""
    if not rel or not globs:
        return rel
    g = globs.get(rel)
    if g is not None:
        return g
    for g in sorted(set(globs.values())):
        if _wild(g) and fnmatchcase(rel, g):
            return g
    return rel


def thread_of(rec):
    """The thread of its process that made REC's call: 1 its first."""
    return rec.get("thread", 1)


_THREAD = re.compile(r"(?:^\w+|\))@([1-9][0-9]*)#[0-9]+$")


def thread_in(coord):
    """The thread a coordinate names (`pwrite(data)@2#3`: 2), or None."""
    m = _THREAD.search(coord or "")
    return int(m.group(1)) if m else None


class Coords:
    """The coordinate of every call record of one trace, by seq:
    `write(target.tmp)#3` for a call on a file in the work directory
    WATCH, `sync#1` (the library's own count) for any other; with the
    thread, `write(target.tmp)@2#1`, `sync@2#1`, where several threads
    make such calls (the module's docstring). GLOBS: a glob of its own
    for a file whose name changes from run to run (align)."""

    def __init__(self, records, watch, globs=None):
        self.watch = str(watch)
        globs_of = globs or {}
        calls = sorted((r for r in records if r.get("ev") == "call"),
                       key=lambda r: r["seq"])
        self.by_seq = {}
        globs = {}          # seq -> glob of its file, for calls in WATCH
        literal = {}        # call -> {glob: key}, for globs with no wildcard
        wild = {}           # call -> [glob], the others
        for r in calls:
            rel = relative(r.get("path"), self.watch)
            if rel is None:
                continue
            g = globs[r["seq"]] = globs_of.get(rel) or glob_of(rel)
            name = r["call"]
            if _wild(g):
                if g not in wild.setdefault(name, []):
                    wild[name].append(g)
            else:
                literal.setdefault(name, {})[g] = g
        # what each call's rule would count: the calls its glob matches,
        # by the thread that made them; a call's name alone, all its calls
        matched = []            # [(record, [glob it matches])]
        threads = {}            # (call, glob or None) -> {thread}
        for r in calls:
            name, path = r["call"], r.get("path")
            got = self._matches(name, path, literal, wild) \
                if path and (name in literal or name in wild) else ()
            matched.append((r, got))
            for g in (*got, None):
                threads.setdefault((name, g), set()).add(thread_of(r))
        counts = {}
        for r, got in matched:
            name, t = r["call"], thread_of(r)
            for g in (*got, None):
                many = len(threads[name, g]) > 1
                key = (name, g, t if many else None)
                counts[key] = counts.get(key, 0) + 1
            g = globs.get(r["seq"])
            many = len(threads[name, g]) > 1
            at = f"@{t}" if many else ""
            if g is None:
                n = counts[name, None, t] if many else r["n"]
                self.by_seq[r["seq"]] = f"{name}{at}#{n}"
            else:
                n = counts[name, g, t if many else None]
                self.by_seq[r["seq"]] = f"{name}({g}){at}#{n}"

    def _matches(self, name, path, literal, wild):
        """The globs of calls NAME that PATH matches, as glob_match in
        faults/plan.c matches them."""
        rel = relative(path, self.watch)
        if rel == ".":
            # the work directory itself: by its full path or as '.'
            names = (path, ".")
        else:
            names = (path, path.rpartition("/")[2]) + \
                ((rel,) if rel is not None else ())
        got = set()
        lit = literal.get(name)
        if lit:
            got.update(lit[n] for n in names if n in lit)
        for g in wild.get(name, ()):
            if any(fnmatchcase(n, g) for n in names):
                got.add(g)
        return got

    def __getitem__(self, rec):
        return self.by_seq[rec["seq"]]


def signature(rec):
    """What two runs of a deterministic program agree on about one call:
    where it wrote (off, len), whether it failed and how. Not what it
    returned otherwise: a descriptor's number, for one, is another
    thread's business."""
    ret = rec.get("ret")
    return (rec.get("off"), rec.get("len"),
            isinstance(ret, int) and ret < 0, rec.get("errno"))


def describe(sig):
    """A signature as words: 'off 4096 len 100', 'failed with errno 9'."""
    off, length, failed, err = sig
    parts = []
    if off is not None:
        parts.append(f"off {off}")
    if length is not None:
        parts.append(f"len {length}")
    if failed:
        parts.append(f"failed (errno {err})")
    return " ".join(parts) or "made"


def moved(first, others, touches, globs=None):
    """The calls on the work directory that recorded runs of one program
    make otherwise: FIRST and each of OTHERS are (records, work
    directory) of a run, TOUCHES(rec, watch) says whether a record is on
    the work directory, GLOBS are align's. [(coordinate, what the first
    run did, what another did)], in the first run's order, then the
    others'."""
    def sigs(records, watch):
        coords = Coords(records, watch, globs)
        out = {}
        for r in sorted((r for r in records if r.get("ev") == "call"),
                        key=lambda r: r["seq"]):
            if touches(r, watch):
                out.setdefault(coords[r], signature(r))
        return out
    a = sigs(*first)
    diff = {}
    for other in others:
        b = sigs(*other)
        for c, s in a.items():
            if b.get(c) != s and c not in diff:
                diff[c] = (describe(s), describe(b[c]) if c in b
                           else "not made")
        for c, s in b.items():
            if c not in a and c not in diff:
                diff[c] = ("not made", describe(s))
    return [(c, x, y) for c, (x, y) in diff.items()]
