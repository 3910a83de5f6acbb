"""A trace's text made records (parse): the library's lines read on a
fast path (a pattern for its most common line, json's own scanner for
the others, a look at each key present), and where that has a doubt the
checked reference, which decides and words the error (TraceError naming
the file, the line and the problem). Both accept exactly the same
traces; what a valid record is (_validate) is docs/design.md's "Trace".
trace.py answers the questions asked of the records."""

import json
import json.scanner
import os
import re

from .. import UsageError

EVENTS = ("init", "call", "crash")
_HASH = re.compile(r"[0-9a-f]{16}\Z")


class TraceError(UsageError):
    """A trace that cannot be read: names the file, the line and why."""


# json's own scanner (C): what JSONDecoder.decode calls, minus two Python
# frames and two regex matches per line, a third of the time of a trace
_scan = json.scanner.make_scanner(json.JSONDecoder())


def parse(data, name="<trace>"):
    """The records of trace text DATA (bytes), sorted by seq; TraceError
    naming NAME, the line and the problem for anything else."""
    records = _parse_fast(data)
    if records is None:
        records = _parse_checked(data, name)
    records.sort(key=lambda r: r["seq"])
    return records


def _parse_fast(data):
    """The common case, a trace the library wrote: one decode of the whole
    text, a bound decoder per line, and checks that cost a look at each key
    present. None at the first doubt; then _parse_checked, the reference,
    decides and words the error, so both accept exactly the same traces."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if _SURROGATE.search(data):
        return None
    records = []
    write_line = _WRITE_LINE.fullmatch
    for line in text.split("\n"):
        if not line:
            continue
        m = write_line(line)
        if m is not None:
            rec = _write_record(m)
            if rec is None:
                return None
            records.append(rec)
            continue
        # the library's lines: one object, no space around it
        if line[0] != "{" or line[-1] != "}":
            return None
        try:
            rec, end = _scan(line, 0)
        except (StopIteration, ValueError, RecursionError):
            return None
        if end != len(line) or not _valid_fast(rec):
            return None
        for key in ("path", "path2"):
            p = rec.get(key)
            if p is not None:
                rec[key] = _fold(p)
        records.append(rec)
    return records


def _fold(path):
    """An absolute path with its dots folded, as _parse_checked folds it
    (normpath), looked at first: most need nothing."""
    if path.startswith("/") and ("/." in path or "//" in path
                                 or path.endswith("/")):
        return os.path.normpath(path)
    return path


# The line of a write the library recorded as a range, the most common
# line of a long trace: matched whole, it is valid JSON of the shape and
# types _valid_fast accepts (no escapes in the path, integers without
# leading zeros, lowercase hex), so it is built without the JSON scanner
# and checked for the two things a pattern cannot say (the data's length,
# the range within the size). Anything else goes the general way.
_UINT = r"(0|[1-9][0-9]*)"
_INT = r"(-?(?:0|[1-9][0-9]*))"
_WRITE_LINE = re.compile(
    r'\{"ev":"call","seq":' + _UINT + r',"pid":' + _INT
    + r',"call":"(write|pwrite|pwrite64|writev|pwritev)","n":([1-9][0-9]*)'
    r'(?:,"at":"([^"\\\x00-\x1f]*)")?'
    r'(?:,"up":\[((?:"[^"\\\x00-\x1f]*"(?:,"[^"\\\x00-\x1f]*")*)?)\])?'
    r',"fd":' + _UINT + r',"path":"([^"\\\x00-\x1f]*)","ino":' + _UINT
    + r',"off":' + _INT + r',"len":' + _INT
    + r',"flags":\[((?:"[A-Z_]+"(?:,"[A-Z_]+")*)?)\],"ret":' + _INT
    + r',"errno":' + _INT + r',"snap":\{"files":\{"([0-9]+)":\{"size":'
    + _UINT + r',"off":' + _UINT + r',"len":' + _UINT
    + r',(?:"data":"([0-9a-f]*)"|"hash":"([0-9a-f]{16})")\}\}\}\}')


def _write_record(m):
    """The record of a _WRITE_LINE match, as json and _valid_fast would
    make it, or None when it would not pass."""
    (seq, pid, call, n, at, up, fd, path, ino, off, length, flags, ret, err,
     key, size, roff, rlen, data, h) = m.groups()
    size, roff, rlen = int(size), int(roff), int(rlen)
    if roff + rlen > size or (data is not None and len(data) != 2 * rlen):
        return None
    path = _fold(path)
    entry = {"size": size, "off": roff, "len": rlen}
    if data is not None:
        entry["data"] = data
    else:
        entry["hash"] = h
    rec = {"ev": "call", "seq": int(seq), "pid": int(pid), "call": call,
           "n": int(n)}
    if at is not None:
        rec["at"] = at      # in the line's order, as json.loads makes it
    if up is not None:
        rec["up"] = up[1:-1].split('","') if up else []
    rec.update(fd=int(fd), path=path, ino=int(ino), off=int(off),
               len=int(length),
               flags=flags[1:-1].split('","') if flags else [],
               ret=int(ret), errno=int(err), snap={"files": {key: entry}})
    return rec


def _parse_checked(data, name):
    records = []
    for lineno, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except (ValueError, UnicodeDecodeError) as e:
            raise TraceError(f"{name}:{lineno}: not JSON: {e}") from None
        except RecursionError:
            # json's decoder recurses once per nesting level
            raise TraceError(f"{name}:{lineno}: not JSON: nested too "
                             "deeply") from None
        if _SURROGATE.search(line) and not _encodable(rec):
            # The library writes a byte that is not UTF-8 as \udcXX, as
            # os.fsdecode does (surrogateescape); any other lone surrogate
            # cannot be a file name.
            raise TraceError(f"{name}:{lineno}: a string holds a lone "
                             "UTF-16 surrogate")
        _validate(rec, name, lineno)
        # The library records paths as the program spelled them after its
        # cwd ('/x/work/../in/new'): fold the dots, so that "is this path
        # inside the work directory" is a prefix test.
        for key in ("path", "path2"):
            p = rec.get(key)
            if isinstance(p, str) and p.startswith("/"):
                rec[key] = os.path.normpath(p)
        records.append(rec)
    return records


_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")


def _encodable(rec):
    """Every string of REC is text, or a file name's bytes as
    os.fsdecode gives them (a byte that is not UTF-8 as a low surrogate)."""
    try:
        json.dumps(rec, ensure_ascii=False).encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return False
    return True


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


# (field, test, what it must be) for the optional fields of docs/design.md
_OPTIONAL = (
    ("pid", _is_int, "an integer"),
    ("ppid", _is_int, "an integer"),
    ("exe", lambda v: isinstance(v, str), "a string"),
    ("plan", lambda v: isinstance(v, str), "a string"),
    ("watch", lambda v: isinstance(v, str), "a string"),
    ("fd", _is_int, "an integer"),
    ("path", lambda v: isinstance(v, str), "a string"),
    ("path2", lambda v: isinstance(v, str), "a string"),
    ("at", lambda v: isinstance(v, str), "a string"),
    ("up", lambda v: isinstance(v, list)
     and all(isinstance(f, str) for f in v), "a list of strings"),
    ("ino", lambda v: _is_int(v) and v >= 0, "a non-negative integer"),
    ("off", _is_int, "an integer"),
    ("len", _is_int, "an integer"),
    ("flags", lambda v: isinstance(v, list)
     and all(isinstance(f, str) for f in v), "a list of strings"),
    ("fault", lambda v: isinstance(v, dict), "an object"),
    ("dir", lambda v: isinstance(v, bool), "a boolean"),
    ("thin", lambda v: v is True, "true"),
    ("thread", lambda v: _is_int(v) and v >= 1, "a positive integer"),
    ("when", lambda v: v in ("before", "after"), "'before' or 'after'"),
    ("rule", _is_int, "an integer"),
)


# _OPTIONAL's keys by the type _valid_fast checks them as
_INT_KEYS = frozenset(("pid", "ppid", "fd", "off", "len", "rule"))
_STR_KEYS = frozenset(("exe", "plan", "watch", "path", "path2", "at"))
_OTHER_KEYS = {key: want for key, want, _ in _OPTIONAL
               if key not in _INT_KEYS and key not in _STR_KEYS}
_INT_ONLY = {int}
_OTHER_ITEMS = tuple((k, w) for k, w in _OTHER_KEYS.items() if k != "flags")
_STR_ONLY = {str}


def _valid_fast(rec):
    """True when _validate would accept REC: the same rules, without the
    words, grouped so that a record costs a few set operations (type(v) is
    int is _is_int for what json makes; a False here only means "ask
    _validate")."""
    if type(rec) is not dict:
        return False
    ev = rec.get("ev")
    seq = rec.get("seq")
    if ev not in EVENTS or type(seq) is not int or seq < 0:
        return False
    if ev != "init":
        n = rec.get("n")
        if type(rec.get("call")) is not str or type(n) is not int or n < 1:
            return False
        if ev == "call" and (type(rec.get("ret")) is not int
                             or type(rec.get("errno")) is not int):
            return False
    # a few lookups of known keys cost less than intersecting key sets
    for key in _INT_KEYS:
        value = rec.get(key)
        if value is not None and type(value) is not int:
            return False
    for key in _STR_KEYS:
        value = rec.get(key)
        if value is not None and type(value) is not str:
            return False
    if "flags" in rec:
        value = rec["flags"]
        if type(value) is not list or not set(map(type, value)) <= _STR_ONLY:
            return False
    for key, want in _OTHER_ITEMS:
        value = rec.get(key)
        if value is not None and not want(value):
            return False
    fault = rec.get("fault")
    if fault is not None and not (type(fault.get("rule")) is int
                                  and type(fault.get("action")) is str):
        return False
    snap = rec.get("snap")
    if snap is None:
        return True
    if type(snap) is not dict:
        return False
    d = snap.get("dir")
    # json's keys are str
    if d is not None and not (type(d) is dict
                              and set(map(type, d.values())) <= _INT_ONLY):
        return False
    if ("dirs" in snap or "root" in snap) and _dirs_problem(snap):
        return False
    files = snap.get("files")
    if files is None:
        return True
    if type(files) is not dict:
        return False
    for f in files.values():
        if type(f) is not dict or not isinstance(f.get("size"), int):
            return False
        if "data" in f:
            if _data_problem(f):
                return False
            continue
        h = f.get("hash")
        if type(h) is not str or not _HASH.match(h):
            return False
        if ("off" in f or "len" in f) and _range_problem(f):
            return False
    return True


_HEX = re.compile(r"[0-9a-f]*\Z")
_DIGITS = re.compile(r"[0-9]+\Z")


def _is_entry(v):
    """A listing's entry: a file's inode, {"d": inode}, {"l": text}."""
    if type(v) is int:
        return v >= 0
    if type(v) is not dict or len(v) != 1:
        return False
    (k, x), = v.items()
    return (k == "d" and type(x) is int and x >= 0) or (
        k == "l" and type(x) is str)


def _dirs_problem(snap):
    """What is wrong with a snapshot's "root" and "dirs" (the listings of
    directories by inode, docs/design.md), or None."""
    root = snap.get("root")
    if root is not None and not (type(root) is int and root >= 0):
        return "snap.root is not an inode number"
    dirs = snap.get("dirs")
    if dirs is None:
        return None
    if type(dirs) is not dict:
        return "snap.dirs is not an object"
    for key, listing in dirs.items():
        if not _DIGITS.match(key):
            return f"snap.dirs: {key!r} is not an inode number"
        if type(listing) is not dict or not all(map(_is_entry,
                                                    listing.values())):
            return (f"snap.dirs[{key!r}] is not a map of names to inodes, "
                    "directories and links")
    return None


def _data_problem(f):
    """What is wrong with a range whose bytes are in the line ("data",
    lowercase hex, instead of "hash"), or None."""
    if "hash" in f:
        return "has both hash and data"
    if "off" not in f or "len" not in f:
        return "data without off and len (only a range carries its bytes)"
    problem = _range_problem(f)
    if problem:
        return problem
    data = f["data"]
    if type(data) is not str or len(data) != 2 * f["len"] or not _HEX.match(data):
        return f"data is not {f['len']} bytes in lowercase hex"
    return None


def _range_problem(f):
    """What is wrong with the range form of a snap.files entry, or None.

    {"size": S, "off": O, "len": L, "hash": H}: after the call the file is
    S bytes, [O, O+L) holds the snapshot H, and every other byte is what
    the inode held before, cut or zero-extended to S."""
    for key in ("off", "len", "size"):
        v = f.get(key)
        if not _is_int(v) or v < 0:
            return f"{key} is not a non-negative integer"
    if f["off"] + f["len"] > f["size"]:
        return (f"range {f['off']}+{f['len']} runs past the size "
                f"{f['size']}")
    return None


def _validate(rec, name, lineno):
    def bad(problem):
        raise TraceError(f"{name}:{lineno}: {problem}")
    if not isinstance(rec, dict):
        bad("record is not an object")
    ev = rec.get("ev")
    if ev not in EVENTS:
        bad(f"unknown event {ev!r}")
    seq = rec.get("seq")
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
        bad("seq is not a non-negative integer")
    if ev in ("call", "crash"):
        if not isinstance(rec.get("call"), str):
            bad("call name missing")
        n = rec.get("n")
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            bad("call ordinal n is not a positive integer")
    if ev == "call":
        for key in ("ret", "errno"):
            if not isinstance(rec.get(key), int) or isinstance(rec.get(key), bool):
                bad(f"{key} is not an integer")
    # The optional fields, when present, have the types the readers of an
    # accepted record (format_call, fired, the sweep, the explorer) use
    # them as: checked here, so that a damaged trace is one TraceError
    # rather than a traceback wherever the bad field is first used.
    for key, want, what in _OPTIONAL:
        value = rec.get(key)
        if value is not None and not want(value):
            bad(f"{key} is not {what}")
    fault = rec.get("fault")
    if fault is not None and not (
            _is_int(fault.get("rule")) and isinstance(fault.get("action"), str)):
        bad("fault lacks an integer rule or an action")
    snap = rec.get("snap")
    if snap is not None:
        if not isinstance(snap, dict):
            bad("snap is not an object")
        d = snap.get("dir")
        if d is not None and not (isinstance(d, dict) and all(
                isinstance(k, str) and isinstance(v, int) for k, v in d.items())):
            bad("snap.dir is not a map of names to inodes")
        problem = _dirs_problem(snap)
        if problem:
            bad(problem)
        files = snap.get("files")
        if files is not None:
            if not isinstance(files, dict):
                bad("snap.files is not an object")
            for ino, f in files.items():
                if isinstance(f, dict) and isinstance(f.get("size"), int) \
                        and "data" in f:
                    problem = _data_problem(f)
                    if problem:
                        bad(f"snap.files[{ino!r}]: {problem}")
                    continue
                if not (isinstance(f, dict) and isinstance(f.get("size"), int)
                        and isinstance(f.get("hash"), str)):
                    bad(f"snap.files[{ino!r}] lacks size or hash")
                # the hash names a file in the snapshot directory
                if not _HASH.match(f["hash"]):
                    bad(f"snap.files[{ino!r}].hash {f['hash']!r} is not "
                        "16 hex digits")
                if "off" in f or "len" in f:
                    problem = _range_problem(f)
                    if problem:
                        bad(f"snap.files[{ino!r}]: {problem}")
