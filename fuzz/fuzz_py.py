#!/usr/bin/python3
"""Mutation fuzzer for crashcheck's Python readers of untrusted input.

    fuzz/fuzz_py.py [--time S] [--seed N] [--max-len B] [TARGET...]

Targets (all three by default):

  spec      harness.engine.spec.load() on a TOML file: only SpecError may escape.
  trace     harness.engine.trace.parse() on JSON lines: only TraceError may escape;
            and a trace it accepts must not break the code that reads
            accepted records (trace.calls/fired/format_call, the sweep's
            targeted_calls, explorer.crash_points); and on any lines, the
            moot-write scan in C (harness/engine/tracescan.c) must give what its
            Python reference gives.
  explorer  harness.judging.explorer.explore() on what trace.parse() accepts, under
            every model: only ExplorerError may escape; the after-exit
            points explore_exit() builds from one replay (the sweep's way,
            plain writes taken short, and with trace.Lazy.for_exit's moot
            writes passed over) must be explore()'s last ones; and each
            after-exit state must be one explorer.admits() admits.

The property is the one the CLI depends on: a bad input is one line and
exit 2, never a traceback. Any other exception is a crash: the input is
saved as fuzz/crash-<target>-<sha1> (see --artifacts), the first lines of
its traceback are printed once per distinct (type, place), and the run
exits 1.

There is no coverage feedback (no atheris here, and sys.settrace would
cost more than it finds). What stands in for it, honestly less: an input
whose outcome is new -- a first-seen error message with the numbers and
quoted values blanked, or an accepted input of a new shape -- joins the
corpus, so mutations build on inputs that reach further into the checks.

Mutations: byte-level (bit flips, interesting bytes, insertions and
deletions of runs, chunk duplication, splicing two inputs, dictionary
tokens, truncation) and structure-aware (parse the seed as TOML or JSON
lines, change one value to another of a hostile set -- wrong types, huge
and negative integers, NaN, infinities, empty and multi-line strings,
braces, deep nesting -- delete or add a key, reorder, duplicate or drop
records, then write it back out).

Seeds: workloads/specs/*.toml and fuzz/corpus/spec/ for specs,
fuzz/corpus/trace/*.jsonl for traces (recorded runs of the workloads,
including children of a fork). Deterministic for a given --seed, apart
from where the time bound stops it.
"""

import argparse
import datetime
import hashlib
import json
import math
import random
import re
import sys
import tempfile
import time
import tomllib
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.judging import causes, explorer, oracle
from harness.engine import (records as recordsmod,  # noqa: E402
                            spec as specmod, trace as tracemod)

CORPUS = ROOT / "fuzz" / "corpus"
MAX_LEN = 64 * 1024
MAX_CORPUS = 4096          # inputs kept to mutate further

# ------------------------------------------------------------- the targets


class Target:
    name = ""
    allowed = ()                # the documented error types
    structured_share = 0.5      # of mutations that parse and re-serialize

    def seeds(self):
        raise NotImplementedError

    def run(self, data):
        """Feed one input; return a short string describing an accepted
        input's shape (the feedback feature)."""
        raise NotImplementedError

    def structured(self, data, rng):
        """A structure-aware mutant of data, or None."""
        return None


class SpecTarget(Target):
    name = "spec"
    allowed = (specmod.SpecError,)

    def __init__(self):
        self.dir = tempfile.TemporaryDirectory(prefix="crashcheck-fuzz-")
        self.path = Path(self.dir.name) / "fuzz.toml"

    def seeds(self):
        paths = sorted((ROOT / "workloads" / "specs").glob("*.toml"))
        paths += sorted((CORPUS / "spec").glob("*"))
        return [p.read_bytes() for p in paths if p.is_file()]

    def run(self, data):
        self.path.write_bytes(data)
        s = specmod.load(self.path)
        # what the sweep does with an accepted spec
        for strategy in (s.strategies or (None,)):
            s.argv("/b", "target", "../in/new", strategy)
            if s.check is not None:
                s.check_argv("/b", "target", "../in/new", strategy)
        for e in s.expect:
            e.describe()
            e.applies(kind="eio", model="posix", strategy=None, size=0,
                      call="fsync#1")
        return f"ok:{s.contract}:{len(s.strategies)}:{len(s.expect)}"

    def structured(self, data, rng):
        try:
            doc = tomllib.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
            return None
        mutate_tree(doc, rng, SPEC_KEYS)
        try:
            return toml_dump(doc).encode("utf-8", "surrogatepass")
        except ValueError:
            return None


class TraceTarget(Target):
    name = "trace"
    allowed = (tracemod.TraceError,)
    # a byte mutation mostly breaks the JSON and stops at json.loads
    structured_share = 0.7

    def seeds(self):
        return [p.read_bytes() for p in sorted((CORPUS / "trace").glob("*"))
                if p.is_file()]

    def run(self, data):
        # the moot scan reads lines parse() may refuse: its C and Python
        # ways must agree on any (but for inode numbers past 64 bits,
        # which C leaves to be replayed)
        lazy = tracemod.Lazy(data, "fuzz.jsonl")
        if lazy.lines is not None and lazy._native_moot() is not None:
            want = {i: w for i, w in lazy.moot_writes_py().items()
                    if w[1] < 2 ** 64}
            if lazy.moot_writes() != want:
                raise AssertionError("tracescan.so's moot writes differ "
                                     "from moot_writes_py()")
        records = tracemod.parse(data, "fuzz.jsonl")
        # Everything below is what the harness does with a trace it has
        # accepted: none of it may fail on an accepted record.
        calls = tracemod.calls(records)
        plan = next((r.get("plan") for r in records if r["ev"] == "init"), "")
        rules = recordsmod.plan_rules(plan if isinstance(plan, str) else "")
        tracemod.fired(records, rules)
        for r in records:
            if r["ev"] in ("call", "crash"):
                tracemod.format_call(r, base="/w", show_pid=True, root="/")
        recordsmod.targeted_calls(records, Path("/w"))
        for r in calls:
            if r.get("fault"):
                causes.on_data_path(r, records)
        # what a finding's cause looks up in a trace
        for change in (("rename", "target"), ("unlink", "target"),
                       ("create", "target"), ("data", "target"),
                       ("sync-failure", "target"), ("overwrite", "target")):
            causes.deciding_record(
                oracle.Cause("fsync the file before renaming it", change=change),
                records, base="/w")
        explorer.crash_points(records)
        return f"ok:{len(calls) > 0}:{len(records) > 3}"

    def structured(self, data, rng):
        return mutate_jsonl(data, rng)


def blob(h, n):
    """Stand-in snapshot content: n bytes, different per hash."""
    seed = hashlib.sha256(str(h).encode("utf-8", "surrogatepass")).digest()
    return (seed * (n // len(seed) + 1))[:n]


class ExplorerTarget(TraceTarget):
    name = "explorer"
    allowed = (tracemod.TraceError, explorer.ExplorerError)

    def __init__(self):
        # Every other input reads its snapshots from a real directory
        # holding the seeds' hashes, as the sweep does: a mutated hash
        # then meets open(2), not a dict.
        self.dir = tempfile.TemporaryDirectory(prefix="crashcheck-fuzz-")
        self.snapdir = Path(self.dir.name)
        self.execs = 0
        for seed in self.seeds():
            try:
                sizes = snapshot_sizes(tracemod.parse(seed))
            except tracemod.TraceError:
                continue
            for h, n in sizes.items():
                (self.snapdir / h).write_bytes(blob(h, n))

    def run(self, data):
        records = tracemod.parse(data, "fuzz.jsonl")
        sizes = snapshot_sizes(records)

        def content(h):
            # Content of the size the trace claims; a hash the trace never
            # sized is missing, as on disk.
            if h not in sizes:
                raise KeyError(h)
            return blob(h, sizes[h])

        self.execs += 1
        source = dict(content=content) if self.execs % 2 else \
            dict(snapdir=self.snapdir)
        shape = []
        ends = {}
        for model in explorer.MODELS:
            points = explorer.explore(records, model=model, cap=8, seed=1,
                                      exit_ok=True, **source)
            for p in points:
                for st in p.states:
                    st.files, st.target, st.digest(), st.dirs, st.links
            shape.append(len(points))
            ends[model] = points[-1]
            # every state explore builds is one the model admits
            for st in points[-1].states:
                v = explorer.admits(records, point="exit", model=model,
                                    files=st.files, dirs=st.dirs,
                                    links=st.links, **source)
                if not v:
                    raise AssertionError(f"{model}: {st.label} not "
                                         f"admitted: {v.reason}")
        # what no call accounts for: the same replay, the same errors
        explorer.unseen(records, **source)
        # the sweep's way to the after-exit points (every model from one
        # replay, plain writes the short way, moot writes passed over)
        # must end where explore does
        lazy = tracemod.Lazy(data, "fuzz.jsonl").for_exit()
        moot = sum(len(r.lines) for r in lazy if isinstance(r, explorer.Moot))
        for way in (records, lazy):
            exits = explorer.explore_exit(way, cap=8, seed=1, exit_ok=True,
                                          **source)
            for model, p in exits.items():
                want = ends[model]
                if (p.label, p.claimed,
                        [(s.label, s.key, s.why) for s in p.states]) \
                        != (want.label, want.claimed,
                            [(s.label, s.key, s.why) for s in want.states]):
                    raise AssertionError(
                        f"explore_exit differs from explore under {model}"
                        f"{' (moot writes passed over)' if way is lazy else ''}")
        return f"ok:{min(shape) > 2}:{moot > 0}"


def snapshot_sizes(records):
    sizes = {}
    for r in records:
        snap = r.get("snap")
        files = snap.get("files") if isinstance(snap, dict) else None
        if not isinstance(files, dict):
            continue
        for f in files.values():
            if isinstance(f, dict):
                # a range snapshot's blob holds its len bytes, not the file
                h = f.get("hash")
                size = f.get("len") if "off" in f else f.get("size")
                if isinstance(h, str) and isinstance(size, int) \
                        and 0 <= size <= (1 << 20):
                    sizes.setdefault(h, size)
    return sizes


TARGETS = {t.name: t for t in (SpecTarget, TraceTarget, ExplorerTarget)}

# ------------------------------------------------------------ mutations

SPEC_KEYS = list(specmod.FIELDS) + list(specmod.EXPECT_FIELDS) + ["disk", "bogus"]
TRACE_KEYS = ["ev", "seq", "pid", "ppid", "call", "n", "fd", "path", "path2",
              "ino", "off", "len", "flags", "ret", "errno", "fault", "rule",
              "action", "dir", "snap", "files", "size", "hash", "data", "when",
              "plan", "watch", "exe"]

TOKENS = [b"{", b"}", b"{bin}", b"{target}", b"{new}", b"{strategy}", b"{x}",
          b"[[expect]]", b"[", b"]", b"=", b"\"", b"'", b"'''", b'"""', b"\\",
          b"\\u0000", b"\\uD800", b"#", b"\n", b"\r\n", b"\x00", b"\xff",
          b"\xc3", b"\xe2\x80\xa8", b"nan", b"inf", b"-inf", b"-0",
          b"1e309", b"99999999999999999999999", b"0x7fffffffffffffff",
          b"1979-05-27", b"07:32:00", b"true", b"null", b"NaN", b"Infinity",
          b"-Infinity", b":", b",", b"{}", b"[]", b"\"ev\":\"call\"",
          b"\"ev\":\"init\"", b"\"ev\":\"crash\"", b"\"seq\":", b"\"snap\":",
          b"\"files\":", b"\"dir\":", b"\"fault\":", b"atomic", b"in-place",
          b"check", b"payload", b"absent", b"fsync#1", b"write#2+"]

INTERESTING_BYTES = [0, 1, 0x7f, 0x80, 0xff, ord("{"), ord("}"), ord("\n"),
                     ord('"'), ord("["), ord("]"), ord("#"), ord(",")]


def hostile_value(rng, depth=0):
    """One value of the kind a careless reader trips on."""
    k = rng.randrange(20 if depth < 3 else 14)
    if k == 0:
        return rng.choice([0, -1, 1, 2**31, 2**63 - 1, -2**63, 2**64, 10**30,
                           4096, 4097, 64 << 20, (64 << 20) + 1])
    if k == 1:
        return rng.choice([math.nan, math.inf, -math.inf, -0.0, 0.5, 1e308,
                           1e-308, 3.0, 600.0, 600.5])
    if k == 2:
        return rng.choice([True, False])
    if k == 3:
        return rng.choice(["", " ", "\n", "a\nb", "{", "}", "{}", "{bin}",
                           "{x}", "{target}", "{{target}}", "/", "..", ".",
                           "\u2028", "\x00", "\ud800", "é", "x" * 5000,
                           "atomic", "in-place", "posix", "ext4-ordered",
                           "stdio", "fsync#1", "write#2+", "fsync#0",
                           "torn", "ok", "eio", "target", "target.tmp"])
    if k == 4:
        return rng.randrange(-5, 70000)
    if k == 5:
        return "".join(chr(rng.randrange(0x20, 0x7f))
                       for _ in range(rng.randrange(0, 12)))
    if k == 6:
        return datetime.date(1979, 5, 27) if rng.random() < 0.5 \
            else datetime.time(7, 32)
    if k == 7:
        return []
    if k == 8:
        return {}
    if k in (9, 10, 11, 12, 13):
        return rng.choice([1, "x", 2.5, True])
    if k in (14, 15, 16):
        return [hostile_value(rng, depth + 1) for _ in range(rng.randrange(1, 4))]
    return {rng.choice(SPEC_KEYS + TRACE_KEYS): hostile_value(rng, depth + 1)
            for _ in range(rng.randrange(1, 4))}


def _containers(node, limit=5000):
    """(container, key) for every slot of a parsed document (iterative:
    the documents get deep on purpose)."""
    out, todo = [], [node]
    while todo and len(out) < limit:
        n = todo.pop()
        keys = list(n) if isinstance(n, dict) else \
            range(len(n)) if isinstance(n, list) else ()
        for k in keys:
            out.append((n, k))
            todo.append(n[k])
    return out


def mutate_tree(doc, rng, keys, rounds=None):
    """Change doc (a dict from TOML or JSON) in place, a few times."""
    for _ in range(rounds or rng.randrange(1, 4)):
        slots = _containers(doc)
        op = rng.randrange(6)
        if op == 0 or not slots:
            target = rng.choice([c for c, _ in slots] or [doc])
            if isinstance(target, dict):
                target[rng.choice(keys)] = hostile_value(rng)
            else:
                target.insert(rng.randrange(len(target) + 1), hostile_value(rng))
            continue
        container, key = rng.choice(slots)
        if op == 1:
            container[key] = hostile_value(rng)
        elif op == 2:
            del container[key]
        elif op == 3 and isinstance(container, list):
            container.append(container[key])            # duplicate
        elif op == 4:
            v = container[key]
            if isinstance(v, int) and not isinstance(v, bool):
                container[key] = rng.choice([v + 1, v - 1, -v, v * 4096, str(v)])
            elif isinstance(v, str):
                container[key] = rng.choice([v + v, v[: len(v) // 2], v.upper(),
                                             v + "\n", "{" + v + "}", v * 100])
            elif isinstance(v, list):
                rng.shuffle(v)
        elif op == 5:
            # deep nesting: a recursive reader's worst case
            v = container[key]
            for _ in range(rng.choice([2, 50, 2000])):
                v = [v]
            container[key] = v


# TOML output for what mutate_tree makes (tomllib has no writer).

_BARE = re.compile(r"[A-Za-z0-9_-]+\Z")


def _toml_key(k):
    return k if _BARE.match(k) else _toml_str(k)


def _toml_str(s):
    out = []
    for ch in s:
        o = ord(ch)
        if ch in "\"\\":
            out.append("\\" + ch)
        elif o < 0x20 or o == 0x7f:
            out.append(f"\\u{o:04x}")
        elif 0xd800 <= o <= 0xdfff:
            raise ValueError("surrogate")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _toml_value(v, depth=0):
    if depth > 900:
        raise ValueError("too deep for the writer")
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return _toml_str(v)
    if isinstance(v, (datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x, depth + 1) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(x, depth + 1)}"
                               for k, x in v.items()) + "}"
    raise ValueError(type(v).__name__)


def toml_dump(doc):
    lines, tables = [], []
    for k, v in doc.items():
        if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            tables.append((k, v))
        else:
            lines.append(f"{_toml_key(k)} = {_toml_value(v)}")
    for k, entries in tables:
        for e in entries:
            lines.append(f"\n[[{_toml_key(k)}]]")
            lines.extend(f"{_toml_key(a)} = {_toml_value(b)}" for a, b in e.items())
    return "\n".join(lines) + "\n"


def mutate_jsonl(data, rng):
    try:
        records = [json.loads(line) for line in data.split(b"\n") if line.strip()]
    except (ValueError, RecursionError):
        return None
    if not records:
        return None
    op = rng.randrange(7)
    i = rng.randrange(len(records))
    if op >= 5 and isinstance(records[i], dict):
        gentle(records, records[i], rng)
    elif op == 0:
        records.insert(rng.randrange(len(records) + 1), dict_copy(records[i]))
    elif op == 1 and len(records) > 1:
        del records[i]
    elif op == 2:
        rng.shuffle(records)
    elif isinstance(records[i], dict):
        mutate_tree(records[i], rng, TRACE_KEYS)
    else:
        records[i] = hostile_value(rng)
    out = []
    for r in records:
        try:
            out.append(json.dumps(r, ensure_ascii=rng.random() < 0.5))
        except (TypeError, ValueError, RecursionError):
            return None         # a TOML-only value (a date), or too deep
    return "\n".join(out).encode("utf-8", "surrogatepass") + b"\n"


CALL_NAMES = ["open", "openat", "fopen", "write", "pwrite", "fwrite",
              "fflush", "fclose", "close", "fsync", "fdatasync", "msync",
              "mmap", "munmap", "ftruncate", "posix_fallocate", "rename",
              "renameat", "unlink", "sync", "syncfs", "link"]
FLAG_NAMES = ["O_CREAT", "O_EXCL", "O_TRUNC", "O_SYNC", "O_DSYNC", "O_DIRECT",
              "O_APPEND", "MS_SYNC", "MS_ASYNC", "MAP_SHARED", "MAP_PRIVATE"]


def gentle(records, rec, rng):
    """A plausible change, the kind the recorder could have written for
    another program: what gets past validation into the explorer."""
    key = rng.choice(["call", "ret", "errno", "flags", "path", "path2", "ino",
                      "off", "len", "seq", "snap", "dir", "fault", "n",
                      "range"])
    paths = [r.get("path") for r in records if isinstance(r, dict)
             and isinstance(r.get("path"), str)] or ["/w/target"]
    inos = [r.get("ino") for r in records if isinstance(r, dict)
            and isinstance(r.get("ino"), int)] or [1]
    if key == "call":
        rec["call"] = rng.choice(CALL_NAMES)
    elif key == "ret":
        rec["ret"] = rng.choice([-1, 0, 1, 4096, rec.get("len") or 0])
    elif key == "errno":
        rec["errno"] = rng.choice([0, 4, 5, 28, 122])
    elif key == "flags":
        rec["flags"] = rng.sample(FLAG_NAMES, rng.randrange(4))
    elif key in ("path", "path2"):
        rec[key] = rng.choice(paths + ["/w", "/w/other", "/elsewhere/x"])
    elif key == "ino":
        rec["ino"] = rng.choice(inos)
    elif key in ("off", "len"):
        rec[key] = rng.choice([0, 1, 4095, 4096, 4097, 65536, 1 << 20])
    elif key == "seq":
        if isinstance(rec.get("seq"), int):
            rec["seq"] = max(0, rec["seq"] + rng.choice([-2, -1, 1, 2, 100]))
    elif key == "snap":
        if rec.get("ev") == "init":
            return
        if "snap" in rec and rng.random() < 0.5:
            del rec["snap"]
        else:
            other = rng.choice(records)
            if isinstance(other, dict) and "snap" in other:
                rec["snap"] = dict_copy(other["snap"])
    elif key == "dir":
        rec["dir"] = rng.random() < 0.5
    elif key == "fault":
        rec["fault"] = {"rule": rng.randrange(3),
                        "action": rng.choice(["EIO", "ENOSPC", "short"])}
    elif key == "n" and isinstance(rec.get("n"), int):
        rec["n"] = max(1, rec["n"] + rng.choice([-1, 1]))
    elif key == "range":
        # move a range snapshot, or make a whole one a range: of an inode
        # the replay may not know, past its size, over a hole
        files = (rec.get("snap") or {}).get("files") if isinstance(
            rec.get("snap"), dict) else None
        if isinstance(files, dict) and files:
            f = files[rng.choice(sorted(files))]
            if isinstance(f, dict):
                f["off"] = rng.choice([0, 1, 4095, 4096, 1 << 20])
                f.setdefault("len", rng.choice([0, 1, 4096]))
                # an earlier mutation may have left len of another type
                if rng.random() < 0.3 and type(f["len"]) is int:
                    f["size"] = f["off"] + f["len"]


def dict_copy(v):
    return json.loads(json.dumps(v))


def mutate_bytes(data, rng, corpus, max_len):
    b = bytearray(data)
    for _ in range(rng.choice([1, 1, 1, 2, 3, 8])):
        op = rng.randrange(9)
        pos = rng.randrange(len(b) + 1)
        if op == 0 and b:
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
        elif op == 1 and b:
            b[rng.randrange(len(b))] = rng.choice(INTERESTING_BYTES)
        elif op == 2:
            b[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9)))
        elif op == 3 and b:
            n = rng.randrange(1, min(len(b), 64) + 1)
            del b[pos:pos + n]
        elif op == 4 and b:
            start = rng.randrange(len(b))
            chunk = b[start:start + rng.randrange(1, 256)]
            b[pos:pos] = chunk * rng.choice([1, 2, 16])
        elif op == 5:
            b[pos:pos] = rng.choice(TOKENS)
        elif op == 6 and len(corpus) > 1:
            other = rng.choice(corpus)
            cut = rng.randrange(len(other) + 1)
            b = b[:pos] + bytearray(other[cut:])
        elif op == 7 and b:
            del b[rng.randrange(len(b)):]
        elif op == 8:
            # the same line again: duplicate keys, repeated records
            lines = bytes(b).split(b"\n")
            line = rng.choice(lines)
            lines.insert(rng.randrange(len(lines) + 1), line)
            b = bytearray(b"\n".join(lines))
    return bytes(b[:max_len])


# -------------------------------------------------------------- the loop

_NUMS = re.compile(r"-?\b\w*\d\w*\b")     # 3, 0xe9, 2c1b008d42e40beb
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"|\[[^\]]*\]|\{[^}]*\}")


def feature(outcome):
    """Blank the values in an outcome (numbers, quoted strings, lists) so
    that 'seq 3' and 'seq 4' are one feature, and drop the file name."""
    outcome = outcome.replace("fuzz.toml", "").replace("fuzz.jsonl", "")
    return _NUMS.sub("N", _QUOTED.sub("Q", outcome))[:120]


class Crash:
    def __init__(self, exc, data):
        self.type = type(exc).__name__
        tb = traceback.extract_tb(exc.__traceback__)
        inner = next((f for f in reversed(tb) if "/harness/" in f.filename), tb[-1])
        self.where = f"{Path(inner.filename).name}:{inner.lineno} in {inner.name}"
        self.message = str(exc).splitlines()[0][:200] if str(exc) else ""
        self.text = "".join(traceback.format_exception(exc))
        self.data = data

    @property
    def key(self):
        return (self.type, self.where)


def fuzz(target, seconds, rng, max_len, artifacts, log=print, enough=None):
    """Mutate target's seeds for `seconds` (or until enough(crashes) says
    so); returns (executions, crashes)."""
    corpus = [s[:max_len] for s in target.seeds()]
    if not corpus:
        raise SystemExit(f"fuzz_py: {target.name}: no seeds")
    # Inputs the target accepted: most mutants of a rejected input are
    # rejected at the same check, so parents come mostly from here.
    good = []
    seen = set()
    crashes = {}
    execs = accepted = 0
    slowest = (0.0, b"")
    start = time.monotonic()

    def one(data):
        nonlocal execs, accepted, slowest
        execs += 1
        t0 = time.perf_counter()
        try:
            outcome = target.run(data)
            accepted += 1
        except target.allowed as e:
            outcome = "error:" + str(e)
            if "\n" in str(e):
                # the documented error must be one line, as the CLI prints it
                raise AssertionError(f"{type(e).__name__} is not one line: {e!r}")
        finally:
            took = time.perf_counter() - t0
            if took > slowest[0]:
                slowest = (took, data)
        return outcome

    def attempt(data):
        try:
            outcome = one(data)
        except Exception as e:              # noqa: BLE001 -- the point
            c = Crash(e, data)
            if c.key not in crashes:
                crashes[c.key] = c
                name = save(artifacts, target.name, data)
                log(f"fuzz_py: {target.name}: CRASH {c.type} at {c.where}: "
                    f"{c.message} (input: {name})")
            return
        f = feature(outcome)
        if f not in seen:
            seen.add(f)
            if len(corpus) < MAX_CORPUS and data not in corpus:
                corpus.append(data)
        if outcome.startswith("ok") and (f not in seen_good or rng.random() < 0.05):
            seen_good.add(f)
            if len(good) < MAX_CORPUS:
                good.append(data)
            else:
                good[rng.randrange(len(good))] = data

    seen_good = set()
    for s in list(corpus):
        attempt(s)
    while time.monotonic() - start < seconds:
        if enough is not None and enough(list(crashes.values())):
            break
        parent = rng.choice(good if good and rng.random() < 0.7 else corpus)
        child = None
        if rng.random() < target.structured_share:
            try:
                child = target.structured(parent, rng)
            except RecursionError:
                child = None        # too deep for our writer, not a finding
        if child is None:
            child = mutate_bytes(parent, rng, corpus, max_len)
        attempt(child[:max_len])
    took = time.monotonic() - start
    log(f"fuzz_py: {target.name}: {execs} executions in {took:.1f} s "
        f"({execs / took:.0f}/s), {accepted} accepted, corpus {len(corpus)} "
        f"({len(seen)} distinct outcomes), slowest input {slowest[0] * 1000:.1f} ms, "
        f"{len(crashes)} crash{'es' if len(crashes) != 1 else ''}")
    return execs, list(crashes.values())


def save(artifacts, name, data):
    if artifacts is None:
        return "not saved"
    artifacts.mkdir(parents=True, exist_ok=True)
    path = artifacts / f"crash-{name}-{hashlib.sha1(data).hexdigest()[:12]}"
    path.write_bytes(data)
    return str(path)


def main(argv=None):
    p = argparse.ArgumentParser(prog="fuzz_py.py", description=__doc__.split("\n\n")[0])
    p.add_argument("targets", nargs="*", metavar="TARGET",
                   help=f"of {', '.join(TARGETS)} (default: all)")
    p.add_argument("--time", type=float, default=60.0, metavar="S",
                   help="seconds per target (default 60)")
    p.add_argument("--seed", type=int, default=None, metavar="N",
                   help="random seed (default: from the clock; printed)")
    p.add_argument("--max-len", type=int, default=MAX_LEN, metavar="B")
    p.add_argument("--artifacts", default=str(ROOT / "fuzz"), metavar="DIR",
                   help="where crashing inputs go (default fuzz/); '' for nowhere")
    p.add_argument("--replay", nargs="+", metavar="FILE",
                   help="run these inputs once through the first TARGET and stop")
    args = p.parse_args(argv)
    names = args.targets or list(TARGETS)
    for n in names:
        if n not in TARGETS:
            p.error(f"unknown target '{n}' (one of {', '.join(TARGETS)})")
    if not (args.time > 0 and math.isfinite(args.time)):
        p.error(f"--time: '{args.time}' is not a positive number of seconds")
    seed = args.seed if args.seed is not None else time.time_ns() % (1 << 32)
    artifacts = Path(args.artifacts) if args.artifacts else None
    sys.setrecursionlimit(1000)     # the interpreter default, whatever ran before

    if args.replay:
        target = TARGETS[names[0]]()
        bad = 0
        for f in args.replay:
            try:
                target.run(Path(f).read_bytes())
                print(f"{f}: accepted")
            except target.allowed as e:
                print(f"{f}: {type(e).__name__}: {e}")
            except Exception:       # noqa: BLE001
                bad += 1
                print(f"{f}: CRASH\n{traceback.format_exc()}")
        return 1 if bad else 0

    print(f"fuzz_py: seed {seed}, {args.time:g} s per target")
    total = []
    for n in names:
        _, crashes = fuzz(TARGETS[n](), args.time, random.Random(f"{seed}:{n}"),
                          args.max_len, artifacts)
        total += crashes
    for c in total:
        print(f"\n--- {c.type} at {c.where}\n{c.text}", end="")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
