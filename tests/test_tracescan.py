"""harness/engine/tracescan.c, Lazy's index of a trace and its moot-write scan in
C, against its reference, trace.py's Python: the same moot writes on
random traces built from the library's line shapes and near misses of
them, and on recorded traces; the same after-exit replay; and Lazy's
same index and answers, with the library and without, on the fuzz
corpus's traces and variants of them."""

import random
import re
from pathlib import Path

import pytest

from harness.judging import explorer, payload
from harness.engine import trace as trace_mod

from test_recorder import Run, built, exit_points  # noqa: F401 (a fixture)


@pytest.fixture(scope="module")
def lib():
    lib = trace_mod.native()
    # `make` builds it, and every sweep uses it: a test run without it
    # would hold nothing to its reference
    assert lib is not None, f"{trace_mod._TRACESCAN} not built or not loadable"
    return lib


def of_lines(lines):
    """A Lazy of LINES as they are, shape or not."""
    lazy = trace_mod.Lazy(b"")
    lazy.lines = lines
    return lazy


def scans(lib, lines):
    """(C's answer, Python's answer less what C cannot give)."""
    assert of_lines(lines)._native_moot() is not None
    want = {i: w for i, w in of_lines(lines).moot_writes_py().items()
            if w[1] < 2 ** 64}
    return of_lines(lines).moot_writes(), want


# inode numbers that are digits of each other's, or of the lines' other
# numbers, zero-led, or 2^64 and more
INODES = ["36594256", "365942561", "36594257", "77", "0123",
          "18446744073709551615", "18446744073709551616",
          "123456789012345678901234"]
PATHS = (["/w/target", "/w/123", "/w/a{b", "/w/7.tmp"], ["/w/tar\\\"get"])
FLAGS = (["", '"O_APPEND"'], ['"O_SYNC"', '"O_APPEND","O_DSYNC"', '"O_DIRECT"'])
CALLS = (list(trace_mod._MOOT_CALLS), ["read", "pwrite7", "fsync", "Write"])


def pick(rng, choices):
    """One of the good CHOICES, or now and then one of the near misses."""
    good, bad = choices
    return rng.choice(bad if rng.random() < 0.04 else good)


# where the call was made (faults/callsite.c), absent from some lines; the
# supervisor's with its callers (faults/syscall/unwind.c)
SITES = (["", ',"at":"/w/prog+0x11a9"', ',"at":"/usr/lib/libc.so.6+0x1f00"',
          ',"at":"/w/prog+0x4387d1","up":["+0x4015cb","/w/a]b+0x2"]',
          ',"at":"/w/prog+0x1","up":[]'],
         [',"at":"/w/p\\"q+0x1"', ',"at":1', ',"at":"/w/prog+0x1"}',
          ',"at":"/w/prog+0x1","up":["+0x1"', ',"at":"/w/prog+0x1","up":[1]',
          ',"at":"/w/prog+0x1","up":["\\"+0x1"]'])


def write_line(rng, seq, ino):
    parts = [f'{{"ev":"call","seq":{seq},"pid":{rng.choice(["41", "-1"])},'
             f'"call":"{pick(rng, CALLS)}","n":{rng.randint(1, 99)}'
             f'{pick(rng, SITES)},'
             f'"fd":3,"path":"{pick(rng, PATHS)}","ino":{ino},']
    if rng.random() < 0.8:
        parts.append(f'"off":{rng.choice(["0", "4500", "-1"])},')
    if rng.random() < 0.8:
        parts.append(f'"len":{rng.randint(0, 9000)},')
    parts.append(f'"flags":[{pick(rng, FLAGS)}],'
                 f'"ret":{rng.choice(["10", "-1"])},'
                 f'"errno":{rng.choice(["0", "4", "28"])}')
    if rng.random() < 0.3:
        # a thin write's mark (faults/trace.c), or near misses of it
        parts.append(pick(rng, ([',"thin":true'],
                                [',"thin":false', ',"thin":1', ',"thin":tru',
                                 ',"thin" :true'])))
    if rng.random() < 0.2:
        parts.append(',"fault":{"rule":1,"action":"%s"}'
                     % pick(rng, (["EINTR", "short"], ['x\\"y'])))
        if rng.random() < 0.5:
            # an EINTR's signals that could interrupt the call
            # (faults/trace.c), or near misses of them
            parts.append(pick(rng, ([',"intr":[]', ',"intr":[14]',
                                     ',"intr":[1,2,15]'],
                                    [',"intr":[a]', ',"intr":[1', ',"intr":1'])))
    snap = ',"snap":{"files":{"' + pick(rng, ([ino], INODES)) + '":'
    parts.append(pick(rng, ([
        "}",
        snap + '{"size":9,"off":0,"len":2,"data":"ab"}' + "}}}",
        snap + '{"size":9,"off":0,"len":2,"hash":"0123456789abcdef"}' + "}}}",
    ], [
        # a brace short, another object, a directory
        snap + '{"size":9,"off":0,"len":2,"data":"ab"}' + "}}",
        snap + '{"size":9},"9":{"size":1}' + "}}}",
        ',"snap":{"dir":{"x":' + ino + '},"files":{}}}',
    ])))
    return "".join(parts)


def sync_line(rng, seq, ino):
    ok = pick(rng, ([True], [False]))
    return (f'{{"ev":"call","seq":{seq},"pid":41,'
            f'"call":"{pick(rng, (["fsync", "fdatasync"], ["msync", "sync"]))}",'
            f'"n":1{pick(rng, SITES)},"fd":3,"path":"{pick(rng, PATHS)}",'
            f'"ino":{ino},"ret":{0 if ok else -1},"errno":{0 if ok else 5},'
            '"snap":{"files":{"' + pick(rng, ([ino], INODES))
            + '":{"size":10,"hash":"'
            + pick(rng, (["0123456789abcdef"], ["0123456789abcde",
                                                "0123456789abcdef0",
                                                "0123456789ABCDEF"])) + '"'
            + pick(rng, (["}}}}"], ["}}}", "}}}}}", '}},"x":1}}'])))


def other_line(rng, seq, ino):
    return (f'{{"ev":"call","seq":{seq},"pid":41,'
            f'"call":"{rng.choice(["close", "rename", "ftruncate"])}",'
            f'"n":1,"path":"{pick(rng, PATHS)}","ino":{ino},'
            f'"ret":0,"errno":0}}')


def mutate(rng, line):
    """One byte changed, dropped or added, or the line cut short."""
    b = bytearray(line)
    i = rng.randrange(len(b))
    how = rng.randrange(4)
    if how == 0:
        b[i] = rng.choice(b'{}":,0123456789ax\\[]-')
    elif how == 1 and len(b) > 1:
        del b[i]
    elif how == 2:
        b.insert(i, rng.choice(b'{}":,07\\'))
    elif i:
        del b[i:]
    return bytes(b)


def random_trace(rng):
    """Runs of writes to one inode, most followed by a sync of it, with
    other lines between now and then; now and then a line garbled."""
    inodes = rng.sample(INODES[:3], rng.randint(1, 3))
    if rng.random() < 0.3:
        inodes.append(rng.choice(INODES[3:]))
    lines = []
    while len(lines) < 30:
        ino = rng.choice(inodes)
        for _ in range(rng.randint(1, 6)):
            lines.append(write_line(rng, len(lines), ino))
            if rng.random() < 0.05:
                lines.append(other_line(rng, len(lines), rng.choice(inodes)))
        if rng.random() < 0.8:
            lines.append(sync_line(rng, len(lines), ino))
    lines = [line.encode() for line in lines]
    return [mutate(rng, line) if rng.random() < 0.03 else line
            for line in lines]


def test_random_traces_get_python_s_answers(lib):
    """5000 random traces of write, sync and other lines over inodes whose
    digits are in each other's, many of them near misses of the moot
    shapes: the C scan and the Python one name the same moot writes."""
    rng = random.Random(8)
    moot = candidates = 0
    for n in range(5000):
        lines = random_trace(rng)
        got, want = scans(lib, lines)
        assert got == want, (n, lines)
        moot += len(want)
        candidates += sum(b'"call":"' in line for line in lines)
    # neither all nor none: the answers were worth comparing
    assert 0.1 < moot / candidates < 0.5, (moot, candidates)


def test_the_edges_of_a_line(lib):
    """Every line cut short, at every byte, of a moot write and of a whole
    sync: C reads no byte past the end (tests/unit/check_tracescan runs
    this under the sanitizers) and agrees with Python on each."""
    w = (b'{"ev":"call","seq":1,"pid":4,"call":"pwrite64","n":1,"fd":3,'
         b'"path":"/w/t","ino":77,"off":0,"len":2,"flags":[],"ret":2,'
         b'"errno":0,"snap":{"files":{"77":{"size":2,"off":0,"len":2,'
         b'"data":"abcd"}}}}')
    s = (b'{"ev":"call","seq":2,"pid":4,"call":"fsync","n":1,"fd":3,'
         b'"path":"/w/t","ino":77,"ret":0,"errno":0,"snap":{"files":{"77":'
         b'{"size":2,"hash":"0123456789abcdef"}}}}')
    assert scans(lib, [w, s]) == ({0: ("pwrite64", 77)},) * 2
    moot = []
    for cut in range(1, len(w)):
        got, want = scans(lib, [w[:cut], s])
        assert got == want, cut
        moot += [w[:cut][-12:]] if got else []
    # Python's pattern ends where the range's object opens: cut there, the
    # line is still moot (the rest would only be read if a world asked)
    assert moot == [b'{"files":{"77":{'[-12:]]
    for cut in range(1, len(s)):
        got, want = scans(lib, [w, s[:cut]])
        assert got == want == {}, cut


def test_more_fsyncd_files_than_it_holds_is_python_s_to_scan(lib):
    """Past 64 files fsync'd at once the C scan gives up, and
    moot_writes() gives Python's answer."""
    lines = []
    for ino in range(1000, 1065):
        lines.append(b'{"ev":"call","seq":%d,"pid":4,"call":"write","n":1,'
                     b'"fd":3,"path":"/w/f","ino":%d,"flags":[],"ret":1,'
                     b'"errno":0}' % (len(lines), ino))
    for ino in range(1000, 1065):
        lines.append(b'{"ev":"call","seq":%d,"pid":4,"call":"fsync","n":1,'
                     b'"fd":3,"path":"/w/f","ino":%d,"ret":0,"errno":0,'
                     b'"snap":{"files":{"%d":{"size":1,'
                     b'"hash":"0123456789abcdef"}}}}' % (len(lines), ino, ino))
    assert of_lines(lines)._native_moot() is None
    lazy = trace_mod.Lazy(b"\n".join(lines))
    assert len(lazy.moot_writes_py()) == 65
    assert lazy.moot_writes() == lazy.moot_writes_py()
    assert of_lines(lines[:64] + lines[65:129])._native_moot() is not None


def test_a_recorded_run_replays_alike_both_ways(tmp_path, built, lib,
                                                monkeypatch):
    """bench-writer's 300 pieces: the same moot writes both ways, and the
    after-exit points of for_exit() are those of the whole trace's."""
    run = Run(tmp_path, [built["bench-writer"], 300, "target", "../in/new"],
              "range", old=payload.make(4096, 1), new=payload.make(20000, 2))
    assert run.run.status == 0, run.run.stderr_text()
    lazy = trace_mod.Lazy.load(tmp_path / "trace.jsonl")
    assert len(lazy.moot_writes()) == 300
    assert lazy.moot_writes() == lazy.moot_writes_py()
    got = lazy.for_exit()
    assert [len(r.lines) for r in got if isinstance(r, explorer.Moot)] == [300]
    assert exit_points(got, run.snapdir, True) == \
        exit_points(run.records, run.snapdir, True)
    # and without the library, the same records
    monkeypatch.setattr(trace_mod, "_native", None)
    again = trace_mod.Lazy.load(tmp_path / "trace.jsonl").for_exit()
    assert [(type(r), dict(r)) for r in again] == [(type(r), dict(r)) for r in got]


# --- Lazy's index of a trace (tracescan_index) ------------------------------

CORPUS = sorted((Path(__file__).parent.parent / "fuzz" / "corpus" / "trace")
                .glob("*.jsonl"))


def line_mutations(rng, data):
    """DATA with its lines shuffled between processes, blank lines, white
    space, a huge seq, a garbled or cut line, an init or crash line, a
    call's count changed, a fault: up to three of these."""
    lines = data.split(b"\n")
    for _ in range(rng.randint(0, 3)):
        i = rng.randrange(len(lines))
        how = rng.randrange(9)
        if how == 0 and len(lines) > 2:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif how == 1:
            lines.insert(i, b"")
        elif how == 2:
            lines[i] = lines[i].replace(rng.choice([b'","', b'"off":']),
                                        rng.choice([b'", "', b'"off": ']), 1)
        elif how == 3:
            lines[i] = re.sub(rb'"seq":\d+', b'"seq":%d' % rng.choice(
                [2 ** 64 - 1, 2 ** 64, 10 ** 30]), lines[i], count=1)
        elif how == 4 and lines[i]:
            lines[i] = mutate(rng, lines[i])
        elif how == 5:
            lines.insert(i, b'{"ev":"crash","seq":%d,"pid":9,"call":"write",'
                         b'"n":1}' % rng.randrange(40))
        elif how == 6:
            lines.insert(i, b'{"ev":"init","seq":0,"pid":9,"ppid":1,'
                         b'"exe":"/x","plan":"write#1=EIO","watch":null}')
        elif how == 7:
            # a write#30, maybe before write#3, for around("write#3")
            writes = [k for k, line in enumerate(lines)
                      if b'"call":"write","n":' in line]
            if writes:
                k = rng.choice(writes)
                lines[k] = re.sub(rb'"n":\d+', b'"n":30', lines[k], count=1)
        else:
            lines[i] = lines[i].replace(b'"errno":0', b'"errno":5,'
                                        b'"fault":{"rule":0,"action":"EIO"}', 1)
    return b"\n".join(lines)


def answers(data):
    """What Lazy says of DATA: its index, and every question the sweep
    asks of it, each checked against the whole parse where it reads the
    trace."""
    def read(f):
        try:
            return f()
        except trace_mod.TraceError as e:
            return str(e)

    def asked(f, want):
        got = read(f)
        # a trace the whole parse refuses may still answer what is
        # asked of lines it can read
        if not isinstance(records, str):
            assert got == want(), f
        return got

    lazy = trace_mod.Lazy(data, "t.jsonl")
    if lazy.lines is None:
        return None
    try:
        records = trace_mod.parse(data, "t.jsonl")
    except trace_mod.TraceError as e:
        records = str(e)

    def whole(f):
        return lambda: f(records)

    def fresh():
        return trace_mod.Lazy(data, "t.jsonl")

    seqs = lazy.seqs
    after = seqs[len(seqs) // 3]
    reordered = lazy.lines != [line for line in data.split(b"\n") if line]

    def full(recs):
        # the records for_exit() stands for, its Moots read
        return [x for r in recs for x in (
            r.full() if isinstance(r, explorer.Moot) else [r])]
    return [lazy.lines, seqs, lazy.codes, reordered,
            asked(fresh().faulted, whole(trace_mod.faulted)),
            asked(lambda: fresh().around(3, 3), whole(
                lambda r: trace_mod.window(trace_mod.steps(r), 3, 3))),
            # calls_after may give lines the caller passes over
            asked(lambda: [r for r in fresh().calls_after(after, (b'"off":0',))
                           if r.get("off") == 0], whole(
                lambda rs: [r for r in trace_mod.calls(rs)
                            if r["seq"] > after and r.get("off") == 0])),
            asked(lambda: list(fresh().calls_after(seqs[0])), whole(
                lambda rs: [r for r in trace_mod.calls(rs)
                            if r["seq"] > seqs[0]])),
            read(lambda: [(type(r), dict(r), getattr(r, "lines", None))
                          for r in fresh().for_exit()]),
            asked(lambda: full(fresh().for_exit()), whole(lambda r: r))]


def test_lazy_answers_alike_with_the_library_and_without(lib, monkeypatch):
    """The recorded traces of the fuzzer's corpus, and 1500 variants of
    them (lines of other processes, blank lines, white space, huge seqs,
    garbled lines, crash, init and fault lines): Lazy's index (lines in
    seq order, seqs, codes) and its answers to the sweep are the
    same with tracescan.so and with Python alone."""
    # these traces are short: read in parts all the same
    monkeypatch.setattr(trace_mod.Lazy, "SMALL", 0)
    rng = random.Random(8)
    inputs = [p.read_bytes() for p in CORPUS]
    inputs += [line_mutations(rng, rng.choice(inputs[:len(CORPUS)]))
               for _ in range(1500)]
    with_lib = [answers(d) for d in inputs]
    monkeypatch.setattr(trace_mod, "_native", None)
    without = [answers(d) for d in inputs]
    assert [i for i, (a, b) in enumerate(zip(with_lib, without)) if a != b] == []
    # the variants reached each way: read, refused, out of seq order,
    # with faults, errors from the parse
    assert len(CORPUS) > 10
    read = [a for a in with_lib if a is not None]
    assert 0.3 < len(read) / len(inputs) < 0.98
    stats = (sum(a[3] for a in read),
             sum(any(c & 4 for c in a[2]) for a in read),
             sum(isinstance(a[8], str) for a in read),
             sum(any(t is explorer.Moot for t, _, _ in a[8])
                 for a in read if not isinstance(a[8], str)))
    assert min(stats) > 50, stats
