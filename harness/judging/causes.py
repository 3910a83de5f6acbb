"""What decided a verdict, where in the program, and which cases are one
defect.

The oracle judges an outcome and names the cause of a finding
(outcome.Cause: the rule broken, and the call or crash-state change that
decided it). This module works on the trace around it:

- on_data_path(): whether a faulted call could lose or corrupt data
  (crash-model.md, "Where a run starts, and what is on the data
  path"): a write or close on a descriptor open for writing, a sync, a
  change of a name in the tree. A close of a read-only descriptor, an
  open, an mmap are not: a fault there is judged by the outcome alone.
- deciding_record(): the call record behind a cause: the faulted call, or
  for a crash state the call that made the change the state lost (the
  rename whose directory entry was not synced, the last write to a file
  that was never fsynced).
- describe(): the case's `cause` and `location` entries of results.json
  (docs/design.md): the rule, the deciding call and the file it hit, its
  source location from its `at` field (symbols.py), and the key reports
  group cases by: the same program, verdict, rule broken and call site
  are one defect, seen in as many cases as it decided.
"""

import hashlib
import os
import re

from .. import calls as calls_mod, coords
from . import symbols
from .outcome import Cause

OPEN_CALLS = frozenset(("open", "open64", "openat", "openat64", "creat",
                        "creat64", "fopen", "fopen64", "freopen"))
RENAME_CALLS = frozenset(("rename", "renameat", "renameat2"))
UNLINK_CALLS = frozenset(("unlink", "unlinkat", "rmdir"))
LINK_CALLS = frozenset(("link", "linkat", "symlink", "symlinkat", "mkdir",
                        "mkdirat"))
SYNC_CALLS = frozenset(("fsync", "fdatasync", "msync", "sync_file_range",
                        "sync", "syncfs"))
CLOSE_CALLS = frozenset(("close", "fclose"))
# stdio calls that end in a write of the stream's buffer
STREAM_CALLS = frozenset(("fflush",))
# open flags that say the descriptor is for writing (the access mode,
# when the trace carries it, and the flags a writer gives: a file is
# created to be written)
WRITE_FLAGS = frozenset(("O_WRONLY", "O_RDWR", "O_TRUNC", "O_APPEND", "O_CREAT"))


def _cls(name):
    c = calls_mod.table().get(name)
    return c.cls if c is not None else None


def changes_data(rec):
    """Whether a call record put data into a file (or could have, through
    a shared mapping)."""
    name = rec.get("call")
    if name == "mmap" or name == "mmap64":
        return "MAP_SHARED" in (rec.get("flags") or ())
    if name in CLOSE_CALLS or name in STREAM_CALLS:
        return False
    return _cls(name) == "C_DATA"


# Preallocation: a program whose posix_fallocate or fallocate fails can
# write the data all the same (tdb falls back to pwrite), and one that
# cannot fails at its write; the trace does not carry fallocate's mode,
# and the outcome (contract, crash states) catches a hole punched and lost
PREALLOC_CALLS = frozenset(("posix_fallocate", "fallocate"))


def on_data_path(rec, records):
    """Whether the faulted call REC could lose or corrupt data. RECORDS
    is the run's trace (the records before REC are read for a close)."""
    name = rec.get("call")
    if name in OPEN_CALLS or name in PREALLOC_CALLS:
        return False                # calls the program can fall back from
    if name in SYNC_CALLS:
        return True
    if name in CLOSE_CALLS or name in STREAM_CALLS:
        return open_for_writing(rec, records)
    cls = _cls(name)
    if cls == "C_NAME" or name in RENAME_CALLS or name in UNLINK_CALLS \
            or name in LINK_CALLS:
        return True
    return cls == "C_DATA"


def open_for_writing(rec, records):
    """Whether the descriptor REC (a close, fclose or fflush) closes or
    flushes was open for writing: its open asked to write, or data was
    written through it (or into its file, by this process) since. A
    descriptor whose open the trace does not show (inherited, dup'd)
    counts as one for writing when its file was opened for writing (or
    written) before, or did not exist when the run started."""
    fd, pid, ino, seq = rec.get("fd"), rec.get("pid"), rec.get("ino"), rec["seq"]
    if fd is None or fd < 0:
        # fflush(NULL) flushes every stream: on the path if any was written
        return any(changes_data(r) and r["seq"] < seq for r in _calls(records))
    # a descriptor whose open the trace does not show (inherited, dup2'd
    # like gawk's stdout onto its temp file): its file's opens say, and a
    # file the run made (mkstemp opens below the interposer) was made to
    # be written
    start = start_tree(records)
    file_for_writing = (start is not None and ino is not None
                        and not rec.get("dir") and ino not in start.values())
    for r in reversed([r for r in _calls(records) if r["seq"] < seq]):
        if changes_data(r):
            if (r.get("fd") == fd and r.get("pid") == pid) or \
                    (ino is not None and r.get("ino") == ino):
                return True
        if r.get("call") in OPEN_CALLS and r.get("ret", -1) >= 0:
            writing = bool(WRITE_FLAGS & set(r.get("flags") or ()))
            if r.get("ret") == fd and r.get("pid") == pid:
                return writing
            if ino is not None and r.get("ino") == ino and writing:
                file_for_writing = True
    return file_for_writing


def _calls(records):
    return [r for r in records if r.get("ev") == "call"]


def start_tree(records):
    """{relative path: inode} of the regular files under WATCH when the
    run started, from the (first) init record's snapshot: a tree
    ("root" and "dirs": each directory's listing by its inode, a
    subdirectory as {"d": inode}) or, in older traces, the flat "dir";
    None when the trace has no snapshot."""
    init = next((r for r in records if r.get("ev") == "init"), None)
    snap = (init or {}).get("snap")
    if not isinstance(snap, dict):
        return None
    if isinstance(snap.get("dir"), dict):
        return {n: i for n, i in snap["dir"].items() if isinstance(i, int)}
    dirs, root = snap.get("dirs"), snap.get("root")
    if not isinstance(dirs, dict):
        return None
    out, todo, seen = {}, [("", root)], set()
    while todo:
        prefix, ino = todo.pop()
        listing = dirs.get(str(ino))
        if not isinstance(listing, dict) or ino in seen:
            continue
        seen.add(ino)
        for name, entry in listing.items():
            path = prefix + name
            if isinstance(entry, int):
                out[path] = entry
            elif isinstance(entry, dict) and isinstance(entry.get("d"), int):
                todo.append((path + "/", entry["d"]))
    return out


# ------------------------------------------------------------------ deciding

def _rel(path, base):
    if not path:
        return None
    if base and (path == base or path.startswith(base.rstrip("/") + "/")):
        return os.path.relpath(path, base)
    return path


def named(path, name, base):
    """Whether PATH is the file NAME (a name in the work directory, as the
    explorer gives it). A tree (NAME None) has no target."""
    if not path or name is None:
        return False
    rel = _rel(path, base)
    return rel == name or ("/" not in name and os.path.basename(path) == name)


def deciding_record(cause, records, faulted=(), base=None, upto=None):
    """The call record behind CAUSE (an outcome.Cause), or None: the
    faulted call for a cause with a call; for a crash state's change the
    call that made it, among the records up to seq UPTO (the crash point;
    None: all). BASE is the work directory the names are relative to."""
    if cause is None:
        return None
    if cause.call:
        hit = [r for r in faulted if r.get("ev") == "call" and r.get("fault")]
        # a crash before the call leaves no call record, only its own
        hit += [r for r in faulted if r.get("ev") == "crash"]
        if hit:
            return hit[0]
        name, _, n = cause.call.partition("#")
        for r in _calls(records):
            if r.get("call") == name and str(r.get("n")) == n:
                return r
        return None
    if not cause.change:
        return None
    kind, name = cause.change
    recs = [r for r in _calls(records) if upto is None or r["seq"] <= upto]
    done = [r for r in recs if r.get("ret", 0) >= 0 or r.get("call") in ("mmap", "mmap64")]

    def last(pred):
        for r in reversed(done):
            if pred(r):
                return r
        return None

    def renamed_to(r):
        return r.get("call") in RENAME_CALLS and named(r.get("path2"), name, base)

    def linked_to(r):
        # git's objects: written under a temporary name, link()ed to theirs
        return r.get("call") in ("link", "linkat") and \
            named(r.get("path2"), name, base)

    if kind == "overwrite":
        return _overwrite(records, done, name, base)
    if kind in ("rename", "replace", "move-in"):
        return last(renamed_to) or last(
            lambda r: r.get("call") in OPEN_CALLS and named(r.get("path"), name, base))
    if kind in ("unlink", "move-out", "rmdir"):
        # removed, or renamed away
        return last(lambda r: (r.get("call") in UNLINK_CALLS
                               or r.get("call") in RENAME_CALLS)
                    and named(r.get("path"), name, base))
    if kind in ("create", "link", "mkdir", "symlink"):
        return last(lambda r: (r.get("call") in LINK_CALLS
                               and named(r.get("path2") or r.get("path"), name, base))
                    or (r.get("call") in OPEN_CALLS and "O_CREAT" in (r.get("flags") or ())
                        and named(r.get("path"), name, base)))
    # the file's data: its inode, by the last record that named it
    inode = None
    for r in reversed(done):
        if renamed_to(r) or linked_to(r) or (
                r.get("call") not in RENAME_CALLS | LINK_CALLS
                and named(r.get("path"), name, base)):
            inode = r.get("ino")
            break
    if kind == "sync-failure":
        return next((r for r in reversed(recs) if r.get("call") in SYNC_CALLS
                     and r.get("ret", 0) < 0 and r.get("ino") == inode), None)
    if "renaming" in cause.rule:
        hit = last(renamed_to)
        if hit is not None:
            return hit
    if inode is None:
        return None
    return last(lambda r: changes_data(r) and r.get("ino") == inode)


def _overwrite(records, done, name, base):
    """The first call that changed the file NAME had when the run
    started, in place: an open that truncated it, a truncate, a write
    (by its inode in the init record's snapshot; by its name without)."""
    first = (start_tree(records) or {}).get(name)
    for r in done:
        if first is not None and r.get("ino") not in (None, first):
            continue
        if not named(r.get("path"), name, base) and (first is None or r.get("ino") != first):
            continue
        if r.get("call") in OPEN_CALLS:
            if "O_TRUNC" in (r.get("flags") or ()):
                return r
        elif changes_data(r):
            return r
    return None


# ------------------------------------------------------------------- entries

def describe(workload, verdict, cause, rec, base=None, location=None,
             globs=None):
    """(cause entry, location) of a finding's results.json entry: the rule,
    the deciding call ("fsync#1") and the file it hit, the site cases
    group by, and a key naming the defect: the same for every case of
    WORKLOAD with this verdict, rule and site.

    The site is where the program made the call: LOCATION's frame when
    it has a source line (symbols.site), else every frame the trace
    gives (`at` and `up`: one frame alone may be libc's write, shared by
    every write of the program); with none, the call's name and file.
    A file whose name changes from run to run (mkstemp's) is named by
    its pattern across runs, GLOBS ({name: glob}, coords.align), so that
    one defect is one in every case."""
    call = file = None
    site = ""
    if rec is not None:
        call = f"{rec.get('call')}#{rec.get('n')}"
        # a rename's (or a link's) file is the name it made, unless it
        # stands for the removal of the name it took away
        away = cause.change is not None and cause.change[0] == "unlink"
        named_new = rec.get("call") in RENAME_CALLS | {"link", "linkat"}
        path = rec.get("path2") if named_new and not away else rec.get("path")
        file = _rel(path, base) if path else None
        if location is not None and location.get("line"):
            site = f"{location['object']}+{location['offset']}"
        else:
            site = "|".join(symbols.frames(rec)) or \
                f"{rec.get('call')} {coords.pattern(file, globs) or '?'}"
    elif cause.change:
        file = cause.change[1]
        # a file's data, however much of it a state lost, is one thing
        kind = "data" if cause.change[0] in ("data", "blocks", "size", "flush") \
            else cause.change[0]
        site = f"{kind} {family(coords.pattern(file, globs))}"
    # one cause, one defect: the rule broken and where, whichever verdict
    # each case showed it by (a power cut during the run tears what one
    # after its exit finds not durable)
    key = hashlib.sha256("\0".join((workload, cause.rule, site))
                         .encode("utf-8", "surrogateescape")).hexdigest()[:12]
    entry = {"key": key, "rule": cause.rule, "property": cause.prop or None,
             "call": call, "file": file, "site": site}
    return entry, location


_HEX_DIR = re.compile(r"[0-9a-f]{2}\Z")
_HASHY = re.compile(r"[0-9a-fA-F]*[0-9][0-9a-fA-F]*")


def family(name):
    """The pattern of files like NAME, for cases with no call site to
    group by: a directory of two hex digits is "??", a run of hex digits
    holding a digit and six or more long (an object's hash, a log's
    number) is "*": git's loose objects, '.git/objects/3e/3ea07c...' and
    '.git/objects/19/9744cf...', are both '.git/objects/??/*', LevelDB's
    '000009.log' is '*.log'."""
    if not name:
        return name
    parts = []
    names = name.split("/")
    for i, part in enumerate(names):
        if i < len(names) - 1 and _HEX_DIR.match(part):
            parts.append("??")
            continue
        parts.append(_HASHY.sub(lambda m: "*" if len(m.group(0)) >= 6
                                else m.group(0), part))
    return "/".join(parts)


def title(case):
    """A defect's one line, from one of its cases: "unreported-error:
    check what fsync returns (fsync#1 on 'target.tmp' at saver.c:117
    (save))"."""
    cause = case.get("cause") or {}
    where = []
    if cause.get("call"):
        # the call's name: the cases of one defect may be its n-th and m-th
        where.append(cause["call"].split("#")[0])
    if cause.get("file"):
        where.append(f"on '{cause['file']}'")
    loc = case.get("location") or {}
    if loc.get("text"):
        where.append(f"at {loc['text']}")
    text = f"{case['verdict']}: {cause.get('rule') or case.get('finding', '')}"
    return text + (f" ({' '.join(where)})" if where else "")


# ------------------------------------------------------------------ ordering

# changes that are a file's data, and those a state's account gives
# without a call of their own (ext4's forced write-out at a rename)
_DATA_KINDS = frozenset(("data", "blocks", "size", "torn", "truncate"))
_NO_CALL = frozenset(("flush",))


class History:
    """The calls behind a crash state's changes, in the order the program
    made them: whether a state kept a change made after one it lost (an
    ordering the program needed and did not enforce: a rename before the
    data it names, a ref before the objects it points to).

    RECORDS is the trace the states were built from, BASE the work
    directory, UPTO the seq of the crash point (None: every record)."""

    def __init__(self, records, base, upto=None):
        self._all, self.upto = records, upto
        self._records = None        # filtered on first use: most states
        self.base = base            # judged never ask
        self._seqs = {}

    @property
    def records(self):
        if self._records is None:
            self._records = [r for r in _calls(self._all)
                             if self.upto is None or r["seq"] <= self.upto]
        return self._records

    def seq_of(self, kind, name):
        """The seq of the call that made the change (KIND, NAME), or None
        when the trace does not show it."""
        key = (kind, name)
        if key not in self._seqs:
            want = "data" if kind in _DATA_KINDS else kind
            rec = deciding_record(Cause("", change=(want, name)), self.records,
                                  base=self.base)
            self._seqs[key] = rec["seq"] if rec is not None else None
        return self._seqs[key]

    def later(self, st):
        """((kind, name, detail) lost, (kind, name, detail) kept): a change
        the state lost, and a change made after it that the state kept
        (persisted, or durable already: a name the state did not lose),
        or None when every change made after each lost one was lost too."""
        lost = [_fields(c) for c in getattr(st, "lost", None) or ()]
        gone = {(c[0] in _DATA_KINDS, c[1]) for c in lost}
        for c in lost:
            if c[0] in _NO_CALL or c[0] == "sync-failure":
                continue
            seq = self.seq_of(c[0], c[1])
            if seq is None:
                continue
            kept = []
            for r in self.records:
                if r["seq"] <= seq or r.get("ret", -1) < 0:
                    continue
                k = self._change(r)
                if k is not None and (k[0] == "data", k[1]) not in gone:
                    kept.append(k)
            if kept:
                # the change that most plainly depends on the lost one:
                # a name given to the lost file (git's link of an
                # object, a rename over it), else a change of a name
                # (gzip's unlink of its input), else a change of a file
                # that was there before the run (logrotate's truncation
                # of the log it copied), else the first kept
                start = set(self.start or ())

                def rank(k):
                    if k[1] == c[1] and k[0] != "data":
                        return 0
                    if k[0] in ("rename", "unlink", "link", "symlink"):
                        return 1
                    if k[0] == "data" and k[1] in start:
                        return 2
                    return 3
                return c, min(kept, key=rank)
        return None

    @property
    def start(self):
        """The names of the files in the work directory when the run
        started."""
        if not hasattr(self, "_start"):
            self._start = start_tree(self._all) or {}
        return self._start

    def appended(self, name):
        """Whether the last call that wrote NAME's data appended to it (a
        write on a descriptor opened O_APPEND)."""
        rec = self._data_record(name)
        return rec is not None and "O_APPEND" in (rec.get("flags") or ())

    def _data_record(self, name):
        return deciding_record(Cause("", change=("data", name)), self.records,
                               base=self.base)

    def _change(self, r):
        """(kind, name, detail) of the change record R made in the work
        directory, or None (a read, a sync, a call elsewhere)."""
        call = r.get("call")

        def rel(path):
            if not path or not self.base or not (
                    path == self.base or path.startswith(self.base.rstrip("/") + "/")):
                return None
            return os.path.relpath(path, self.base)
        if call in RENAME_CALLS:
            new, old = rel(r.get("path2")), rel(r.get("path"))
            return ("rename", new, old or "") if new else None
        if call in UNLINK_CALLS:
            name = rel(r.get("path"))
            return ("unlink", name, "") if name else None
        if call in LINK_CALLS:
            name = rel(r.get("path2") or r.get("path"))
            return (call.rstrip("at"), name, "") if name else None
        if call in OPEN_CALLS and "O_CREAT" in (r.get("flags") or ()):
            name = rel(r.get("path"))
            return ("create", name, "") if name else None
        if changes_data(r):
            name = rel(r.get("path"))
            return ("data", name, "") if name else None
        return None


def _fields(change):
    return (getattr(change, "kind", None), getattr(change, "name", None),
            getattr(change, "detail", "") or "")
