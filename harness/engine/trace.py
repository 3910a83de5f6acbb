"""Read the fault library's trace (JSON lines, docs/design.md "Trace") and
answer the questions the harness asks of it: which calls were made, in
what order, and which planned rules fired how often."""

import array
import bisect
import errno as _errno
import itertools
import operator
import os
import re
from dataclasses import dataclass

from .. import dropped_text
from .traceparse import TraceError, parse

# calls that return an address on success (MAP_FAILED, -1, on failure)
ADDRESS_CALLS = ("mmap", "mmap64")


@dataclass
class Fired:
    rule: str       # the rule's text, as the user wrote it
    count: int      # how many calls it fired on


def read(path):
    """The text of a trace file (missing: empty), as clean() gives it,
    less the line that says the trace was cut (read_cut)."""
    return read_cut(path)[0]


def read_cut(path):
    """(the text of a trace file as read() gives it, its Cut or None)."""
    return split_cut(read_whole(path))


def read_whole(path):
    """The text of a trace file (missing: empty), as clean() gives it,
    the line that says it was cut kept."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        return b""
    except OSError as e:
        raise TraceError(f"{path}: cannot read trace: {e.strerror}") from None
    return clean(data)


@dataclass
class Cut:
    """The library stopped writing a run's trace at CRASHCHECK_TRACE_LIMIT
    (faults/trace.c, trace_drop): the lines past it were counted, not
    written, and a line of its own says how many."""
    limit: int          # bytes the trace's lines could take
    lines: int | None   # lines dropped (None: the count could not be read)
    bytes: int | None   # their bytes

    def text(self):
        """'1203 lines (240.1 KiB) past its limit of 1.0 MiB'."""
        return dropped_text(self.limit, self.lines, self.bytes)


# The cut line: its counts are fixed-width strings the library rewrites in
# place as it drops lines (a rewrite cut short by a SIGKILL leaves digits).
# With shared counters (every run of a sweep) it is the last line of a cut
# trace: no line is written after it (timelimit.Limit looks for it there)
CUT_START = b'{"ev":"dropped",'
_CUT = re.compile(rb'\{"ev":"dropped","lines":"(\d+)","bytes":"(\d+)",'
                  rb'"limit": *(\d+)\}\Z')


def split_cut(data):
    """(DATA less the library's cut lines, a Cut or None). A cut line
    starts a line, as every line of the library does (a quote inside a
    path is escaped). Without shared counters each process of a tree
    says its own: the largest counts stand for them all."""
    if CUT_START not in data:
        return data, None
    kept, cuts = [], []
    for line in data.split(b"\n"):
        if not line.startswith(CUT_START):
            kept.append(line)
            continue
        m = _CUT.match(line)
        if m:
            cuts.append(Cut(int(m[3]), int(m[1]), int(m[2])))
    cut = max(cuts, key=lambda c: c.lines) if cuts else Cut(0, None, None)
    return b"\n".join(kept), cut


def clean(data):
    """Trace text as the library meant it. A process tree sharing a
    counter file writes its trace through a shared mapping (faults/
    trace.c, trace_put): the file ends in zero bytes past the last line,
    and a process that died while writing a line leaves zeros, or zeros
    and part of that line, where the line was to go. The line's first
    byte is written last, so of a text line holding a zero byte only what
    follows the last zero can be a whole line: a part of a line written
    without its newline, then a whole one. A line holds '{"ev":"' only
    where it starts, so the whole line, if any, starts at the first one
    after the last zero; the rest is left out, and the lines keep their
    numbers."""
    data = _strip_zeros(data)
    if b"\0" not in data:
        return data
    lines = data.split(b"\n")
    for i, line in enumerate(lines):
        if b"\0" in line:
            line = line[line.rindex(b"\0") + 1:]
            start = line.find(b'{"ev":"')
            lines[i] = line[start:] if start >= 0 else b""
    return b"\n".join(lines)


def _strip_zeros(data):
    """data.rstrip(b"\\0"). The zeros past the last line are most of a long
    trace's file, and rstrip looks at them a byte at a time: when only
    zeros follow the last newline, the text ends there."""
    end = data.rfind(b"\n") + 1
    if data.count(b"\0", end) == len(data) - end:
        return data[:end]
    return data.rstrip(b"\0")


def load(path):
    """All records of a trace file, in file order (which is seq order for
    one process; several processes append concurrently, so sort by seq
    where order across processes matters)."""
    data = read(path)
    return parse(data, path) if data else []


class Lazy:
    """A trace file read once and parsed where asked.

    A fault case that ends in an error is judged from a few records of its
    trace (the faulted call, a crash, the 40 around the targeted call),
    and parsing all of a long trace cost more than running the program.
    The library's lines start '{"ev":"EV","seq":N,' and put "call" and
    "n" side by side: read that way (by regular expression, in C), the
    lines are put in seq order as parse() orders records, and only the
    asked ones are parsed, with parse()'s checks. Any line not of that
    shape, or any doubt, and the whole trace is parsed: the answer (or
    the TraceError) is then parse()'s own."""

    _HEAD = re.compile(rb'\{"ev":"(init|call|crash)","seq":(\d+),')

    cut = None          # the trace's Cut (load), None: whole

    def __init__(self, data, name="<trace>"):
        self.data, self.name = data, name
        self._records = self._faulted = self._moot = None
        self.lines = self.seqs = self.codes = None
        lines = [line for line in data.split(b"\n") if line]
        lib = native()
        got = _native_index(lib, data, len(lines)) if lib else None
        if got is not None:
            seqs, codes = got
        else:
            heads = list(map(self._HEAD.match, lines))
            if not (all(heads) and all(line.endswith(b"}") for line in lines)):
                return
            seqs = list(map(int, map(_SEQ, heads)))
            codes = bytes(_EV_CODE[h[1]] | (_FAULT if b'"fault":' in line else 0)
                          for h, line in zip(heads, lines))
        if seqs != sorted(seqs):
            # several processes: put the lines in seq order
            order = sorted(range(len(lines)), key=seqs.__getitem__)
            lines = [lines[i] for i in order]
            seqs = [seqs[i] for i in order]
            codes = bytes(codes[i] for i in order)
        self.lines = lines
        # of each line: 1 init, 2 call, 3 crash, plus _FAULT when it
        # holds '"fault":' (tracescan.h, tracescan_index)
        self.codes = codes
        self.seqs = seqs

    @classmethod
    def load(cls, path):
        """A trace file (missing: empty), as load() reads it; its Cut, if
        the library cut it, in cut."""
        data, cut = read_cut(path)
        lazy = cls(data, path)
        lazy.cut = cut
        return lazy

    @property
    def records(self):
        """Every record, as parse() gives them."""
        if self._records is None:
            self._records = parse(self.data, self.name)
        return self._records

    def each(self, part=4096):
        """Every record, in seq order, as records gives them, parsed PART
        lines at a time: a command that reads a trace once through
        (inject, trace) never holds a long trace parsed whole (a trace of
        32 MiB is some 160,000 records, half a gigabyte of dicts)."""
        if self.lines is None or self._records is not None:
            yield from self.records
            return
        for start in range(0, len(self.lines), part):
            got = self._lines(range(start, min(start + part, len(self.lines))))
            if got is None:
                # parse() refuses a line, or reads it otherwise: the
                # whole trace's answer (or its TraceError) decides
                first = self.seqs[start]
                yield from (r for r in self.records if r["seq"] >= first)
                return
            yield from got

    def has(self, ev):
        """Whether the trace holds a record of EV (init, call, crash),
        told by the lines' heads where they were read."""
        if self.codes is not None and self._records is None:
            code = _EV_CODE[ev.encode()]
            return any(c & 3 == code for c in self.codes)
        return any(r["ev"] == ev for r in self.records)

    # A trace this short is parsed whole at once: its excerpt is all of
    # it anyway, and one parse costs less than two of parts
    SMALL = 64

    def _lines(self, indexes):
        """The records of the lines at INDEXES alone, as parse() gives
        them; None when parse() refuses them or gives other records than
        those lines (the whole trace then says where, and what)."""
        try:
            got = parse(b"\n".join(self.lines[i] for i in indexes), self.name)
        except TraceError:
            return None
        seqs = self.seqs
        if len(got) != len(indexes) or any(
                r["seq"] != seqs[i] for r, i in zip(got, indexes)):
            return None
        return got

    def _parse(self, indexes):
        if self._records is not None or self.lines is None \
                or len(self.lines) <= self.SMALL \
                or len(indexes) * 2 > len(self.lines):
            # no records asked for, or half of them or more: parse it
            # all once (a program that retries a failing write for ever
            # leaves a trace of nothing but faulted calls). Not at a
            # quarter: a lite run's trace is about twice its excerpt,
            # and parsing it whole cost a lite case at 100 writes a
            # tenth of its time
            return None
        return self._lines(indexes)

    def faulted(self):
        """The records of the calls a fault fired on, and crash records,
        in seq order."""
        if self._faulted is None:
            want = [i for i, c in enumerate(self.codes or ())
                    if c & _FAULT or c == 3]
            got = self._parse(want)
            if got is None:
                got = faulted(self.records)
            self._faulted = got
        return self._faulted

    def calls_after(self, seq, needles=()):
        """The call records after the one of SEQ, in seq order, parsed a
        few lines at a time as they are asked for: whether a failed call
        was made again is usually answered by the next call or two
        (records.fault_retried), and the rest of a long trace is never
        parsed. With NEEDLES (bytes), only the lines holding all of them
        are parsed and given, and the lines with white space (JSON the
        library does not write, which may spell a field otherwise): the
        caller passes over the others anyway."""
        done = seq
        if self.lines is not None and self._records is None:
            lines, codes = self.lines, self.codes
            idx = range(bisect.bisect_right(self.seqs, seq), len(lines))
            if needles:
                first, rest = needles[0], needles[1:]
                if self._blank():
                    idx = [i for i in idx if (
                        first in lines[i] and all(n in lines[i] for n in rest))
                        or b" " in lines[i] or b"\t" in lines[i]
                        or b"\r" in lines[i]]
                else:
                    idx = [i for i in idx if first in lines[i]
                           and all(n in lines[i] for n in rest)]
            idx = [i for i in idx if codes[i] & 3 == 2]
            pos, n = 0, 4
            while pos < len(idx):
                got = self._lines(idx[pos:pos + n])
                if got is None:
                    break       # the whole trace says where, and what
                for rec in got:
                    done = rec["seq"]
                    yield rec
                pos, n = pos + n, min(4 * n, 1024)
            else:
                return
        yield from (r for r in calls(self.records) if r["seq"] > done)

    def _blank(self):
        """The trace holds white space somewhere (JSON the library does
        not write: a line with some may spell a field otherwise)."""
        data = self.data
        return b" " in data or b"\t" in data or b"\r" in data

    # The after-exit replay (explorer.explore_exit) needs no write that a
    # later successful fsync of the same file snapshots whole, when no line
    # between names the file: the snapshot gives what reads see and the
    # fsync makes it durable, whatever the writes put there. Such a write
    # is a line the library writes in one of these shapes (no sync flag;
    # thin or not; with or without a fault, an EINTR's with the signals
    # that could interrupt it; a snapshot of that file alone,
    # a range or whole, or none), read to where its snapshot's object
    # opens: the rest is told by its braces, for the range's bytes are
    # most of the line and a pattern costs a step per byte. The fsync is
    # a line of the last shape, its one snapshot that file whole.
    _MOOT_WRITE = re.compile(
        rb'\{"ev":"call","seq":\d+,"pid":-?\d+,"call":"(write|pwrite|pwrite64'
        rb'|writev|pwritev|pwritev2)","n":\d+(?:,"at":"[^"\\]*")?'
        rb'(?:,"up":\[[^\]"\\]*(?:"[^"\\]*"[^\]"\\]*)*\])?,"fd":\d+,'
        rb'"path":"[^"\\]*",'
        rb'"ino":(\d+),(?:"off":-?\d+,)?(?:"len":-?\d+,)?'
        rb'"flags":\[(?:"O_APPEND")?\],"ret":-?\d+,"errno":\d+(?:,"thin":true)?'
        rb'(?:,"fault":\{"rule":\d+,"action":"[^"\\]*"\}(?:,"intr":\[[\d,]*\])?)?'
        rb'(?:\}\Z|,"snap":\{"files":\{"\2":\{)')
    _WHOLE_SYNC = re.compile(
        rb'\{"ev":"call","seq":\d+,"pid":-?\d+,"call":"(?:fsync|fdatasync)",'
        rb'"n":\d+(?:,"at":"[^"\\]*")?'
        rb'(?:,"up":\[[^\]"\\]*(?:"[^"\\]*"[^\]"\\]*)*\])?'
        rb',"fd":\d+,"path":"[^"\\]*","ino":(\d+),'
        rb'"ret":0,"errno":0,'
        rb'"snap":\{"files":\{"\1":\{"size":\d+,"hash":"[0-9a-f]{16}"'
        rb'\}\}\}\}')

    def moot_writes(self):
        """{line index: (call, inode)} of the writes a later fsync makes
        moot for the after-exit replay (above). A line that mentions the
        file's inode number anywhere, as a number or in a name, ends the
        run: a rename of the file, a snapshot of the directory or of the
        file, a failed sync, a process start; some of these matter and
        telling them apart is not worth a doubt. The scan is tracescan.so's
        where it was built (native()), else moot_writes_py()."""
        got = self._native_moot()
        if got is None:
            return self.moot_writes_py()
        kind, ino, calls = got[0], got[1], _MOOT_CALLS
        return {i: (calls[(k & ~_RUN) - 1], ino[i])
                for i, k in enumerate(kind) if k}

    def _native_moot(self):
        """tracescan_moot's (kind, inode) of each line, once; None without
        the library, or where it gave up."""
        if self._moot is None:
            lib = native()
            self._moot = (lib and _native_moot(lib, self.lines)) or False
        return self._moot or None

    def moot_writes_py(self):
        """moot_writes() in Python: the reference harness/engine/tracescan.c
        follows step by step."""
        moot, synced = {}, set()
        sync, write = self._WHOLE_SYNC.fullmatch, self._MOOT_WRITE.match
        lines = self.lines
        for i in range(len(lines) - 1, -1, -1):
            line = lines[i]
            if synced:
                m = write(line)
                if m is not None and m[2] in synced and (
                        m.end() == len(line) or (
                            line.find(b"{", m.end()) < 0
                            and line.endswith(b"}}}}"))) \
                        and (len(synced) == 1 or not any(
                            n in line for n in synced if n != m[2])):
                    moot[i] = (m[1].decode(), int(m[2]))
                    continue
            m = sync(line)
            if m is not None:
                synced.add(m[1])
                continue
            for n in [n for n in synced if n in line]:
                synced.discard(n)
        return moot

    def for_exit(self):
        """The records as explorer.explore_exit needs them: every record
        parse() gives, in seq order, but each run of writes to one file
        that moot_writes() names is one explorer.Moot, unparsed (the ev,
        seq, call and inode of its first, how many, and a way to parse
        them for a world that wants them after all). A trace with none is
        parsed whole."""
        from ..judging.explorer import Moot
        if self._records is not None or self.lines is None:
            return self.records
        got = self._native_moot()
        if got is not None:
            return self._for_exit(*got)
        moot = self.moot_writes_py()
        if not moot:
            return self.records
        got = self._lines([i for i in range(len(self.lines)) if i not in moot])
        if got is None:
            return self.records     # the whole trace says where, and what
        out, it, run = [], iter(got), None
        for i, seq in enumerate(self.seqs):
            w = moot.get(i)
            if w is None:
                run = None
                out.append(next(it))
            elif run is not None and run["ino"] == w[1]:
                run.lines.append(i)
            else:
                run = Moot(seq, w[0], w[1], self._records_at, [i])
                out.append(run)
        return out

    def thin(self):
        """Whether a line may be thin (faults/trace.c, CRASHCHECK_TRACE_FULL)."""
        return b'"thin":' in self.data

    def _for_exit(self, kind, ino):
        """for_exit() from tracescan_moot's answer: each run of moot
        writes to one file starts at a line marked _RUN."""
        from ..judging.explorer import Moot
        runs = [m.span() for m in _RUNS.finditer(kind)]
        if not runs:
            return self.records
        got = self._lines([i for i, k in enumerate(kind) if not k])
        if got is None:
            return self.records     # the whole trace says where, and what
        out, it, done, seqs = [], iter(got), 0, self.seqs
        for a, b in runs:
            # the lines between two runs are not moot
            out.extend(itertools.islice(it, a - done))
            out.append(Moot(seqs[a], _MOOT_CALLS[(kind[a] & ~_RUN) - 1],
                            ino[a], self._records_at, list(range(a, b))))
            done = b
        out.extend(it)
        return out

    def _records_at(self, indexes):
        """The records of the lines at INDEXES, as parse() gives them (or
        the whole trace's error, which words it with its line number)."""
        got = self._lines(indexes)
        if got is None:
            want = {self.seqs[i] for i in indexes}
            got = [r for r in self.records if r["seq"] in want]
        return got

    def around(self, seq, count):
        """At most COUNT call and crash records in seq order, centred on
        the first at or after SEQ (from the start when SEQ is None or
        past the end): what the sweep shows of a trace next to a
        finding."""
        if self.lines is not None and self._records is None:
            idx = [i for i, c in enumerate(self.codes) if c & 3 != 1]
            at = 0
            if seq is not None:
                seqs = self.seqs
                at = next((k for k, i in enumerate(idx) if seqs[i] >= seq), 0)
            start = _window_start(at, len(idx), count)
            got = self._parse(idx[start:start + count])
            if got is not None:
                return got
        return window(steps(self.records), seq, count)


_SEQ = operator.itemgetter(2)
# Lazy.codes: a line's ev, and whether it holds '"fault":'
_EV_CODE = {b"init": 1, b"call": 2, b"crash": 3}
_FAULT = 4
# tracescan_moot's mark of the first write of a run to one file, and a
# run: its first, then the rest (kinds 1 to 6)
_RUN = 0x80
_RUNS = re.compile(rb"[\x81-\x86][\x01-\x06]*")

# harness/engine/tracescan.c: Lazy's index and moot scan in C (its header says
# why). Loaded once, on first use; None where it was not built or is of
# another build (its ABI number), and Lazy reads in Python alone.
_TRACESCAN = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                          "tracescan.so")
_TRACESCAN_ABI = 3
_native = False     # not looked for yet
# the calls of a moot write, in tracescan.c's order (its KIND - 1)
_MOOT_CALLS = ("write", "pwrite", "pwrite64", "writev", "pwritev", "pwritev2")


def native():
    """tracescan.so through ctypes, or None."""
    global _native
    if _native is False:
        _native = _load_native(_TRACESCAN)
    return _native


_ctypes = None     # imported with the library: start-up does without it


def _load_native(path):
    global _ctypes
    import ctypes
    _ctypes = ctypes
    try:
        lib = ctypes.CDLL(path)
    except OSError:
        return None
    lib.tracescan_abi.restype = ctypes.c_int
    lib.tracescan_abi.argtypes = []
    if lib.tracescan_abi() != _TRACESCAN_ABI:
        return None
    for f in (lib.tracescan_index, lib.tracescan_moot):
        f.restype = ctypes.c_long
        f.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_size_t,
                      ctypes.c_void_p, ctypes.c_void_p]
    return lib


def _out(n):
    """Room for N answers of each kind: (bytes, 64-bit numbers), with the
    addresses to hand C."""
    small, big = bytearray(n), array.array("Q", bytes(8 * n))
    return small, big, _address(small), big.buffer_info()[0]


def _address(buf):
    if not buf:
        return None
    return _ctypes.addressof((_ctypes.c_char * len(buf)).from_buffer(buf))


def _native_index(lib, data, n):
    """Lazy's (seqs, codes) of the N lines of DATA by LIB, or None where
    a line is not of the shape (Lazy._HEAD) or a seq does not fit."""
    codes, seqs, at_codes, at_seqs = _out(n)
    if lib.tracescan_index(data, len(data), n, at_seqs, at_codes) < 0:
        return None
    return seqs.tolist(), bytes(codes)


def _native_moot(lib, lines):
    """tracescan_moot's (kind, inode) of each of LINES by LIB, or None
    where it gave up."""
    n = len(lines)
    buf = b"\n".join(lines)
    kind, ino, at_kind, at_ino = _out(n)
    if lib.tracescan_moot(buf, len(buf), n, at_kind, at_ino) < 0:
        return None
    return bytes(kind), ino


def faulted(records):
    """The records of the calls a fault fired on, and crash records."""
    return [r for r in records if r["ev"] == "crash" or r.get("fault")]


def steps(records):
    """The call and crash records: what the program did, as shown."""
    return [r for r in records if r["ev"] in ("call", "crash")]


def window(records, seq, count):
    """At most COUNT of RECORDS, centred on the first at or after SEQ
    (from the start when SEQ is None or past the end)."""
    if len(records) <= count:
        return records
    at = 0
    if seq is not None:
        at = next((i for i, r in enumerate(records) if r["seq"] >= seq), 0)
    start = _window_start(at, len(records), count)
    return records[start:start + count]


def _window_start(at, total, count):
    """Where COUNT of TOTAL items centred on item AT start."""
    return max(0, min(at - count // 2, total - count))


def calls(records):
    """The call records, in seq order."""
    return [r for r in records if r["ev"] == "call"]


def fired(records, rules):
    """For each rule text of the plan (in plan order), how many calls it
    fired on. A crash counts as firing (the trace line is written before
    the kill). A crash-after leaves two records of one firing, the call's
    (with its fault) and the crash: calls are counted once each, by their
    (call, n), which is unique across the process tree."""
    hits = [set() for _ in rules]
    for r in records:
        if r["ev"] == "call" and r.get("fault"):
            i = r["fault"].get("rule")
        elif r["ev"] == "crash":
            i = r.get("rule")
        else:
            continue
        if isinstance(i, int) and 0 <= i < len(hits):
            hits[i].add((r["call"], r["n"]))
    return [Fired(rule, len(h)) for rule, h in zip(rules, hits)]


_short = {}     # (path, base, root) -> short_path's answer


def short_path(path, base=None, root=None):
    """A path as the user reads it: relative to `base` (the directory the
    program ran in) when it lies inside `root` (default: base itself).
    The answers for absolute paths are kept (a relative one would depend
    on the working directory): a sweep formats the same few paths of one
    scratch directory in case after case."""
    key = (path, base, root)
    got = _short.get(key)
    if got is None:
        got = _short_path(path, base, root)
        if path and path[0] == "/" and (not base or base[0] == "/"):
            if len(_short) >= 4096:
                _short.clear()
            _short[key] = got
    return got


def _short_path(path, base, root):
    if not path:
        return "?"
    root = root or base
    if base and (path == root or path.startswith(root.rstrip("/") + "/")):
        return os.path.relpath(path, base)
    return path


def format_call(rec, base=None, show_pid=False, root=None):
    """One line per call, strace-like: `fsync#1 fd=3 'target.tmp' = 0`."""
    if rec["ev"] == "crash":
        when = "before" if rec.get("when") == "before" else "after"
        return f"{rec['call']}#{rec['n']} -- killed {when} the call (planned crash)"
    parts = [f"{rec['call']}#{rec['n']}"]
    if rec.get("fd") is not None and rec.get("fd") >= 0:
        parts.append(f"fd={rec['fd']}")
    if rec.get("path"):
        parts.append(f"'{short_path(rec['path'], base, root)}'")
    if rec.get("path2"):
        parts.append(f"-> '{short_path(rec['path2'], base, root)}'")
    if rec.get("off") is not None:
        parts.append(f"off={rec['off']}")
    if rec.get("len") is not None:
        parts.append(f"len={rec['len']}")
    if rec.get("flags"):
        parts.append("|".join(rec["flags"]))
    ret = rec["ret"]
    if rec["call"] in ADDRESS_CALLS and ret != -1:
        # An address differs from run to run (ASLR): shown, it would make
        # two runs of the same case read differently in every report.
        ret = "<addr>"
    line = " ".join(parts) + f" = {ret}"
    if rec.get("ret", 0) < 0 and rec.get("errno"):
        line += f" {errno_name(rec['errno'])}"
    if rec.get("fault"):
        line += f" [fault: {rec['fault'].get('action', '?')}]"
    if rec.get("thin"):
        line += " [thin]"
    if rec.get("thread", 1) > 1:
        # which of its process's threads: as a plan's @THREAD names it
        line += f" [thread {rec['thread']}]"
    if show_pid and rec.get("pid") is not None:
        line = f"[pid {rec['pid']}] " + line
    return line


def errno_name(num):
    return _errno.errorcode.get(num, str(num))
