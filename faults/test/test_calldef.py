"""calldef.py, the one reader of calls.def: what it makes is what the tree
holds, and a table it cannot read stops it with one line naming the row."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
FAULTS = os.path.dirname(HERE)
DEF = os.path.join(FAULTS, "calls.def")
sys.path.insert(0, FAULTS)
import calldef  # noqa: E402


def test_calls_md_is_made_from_the_table():
    with open(os.path.join(FAULTS, "CALLS.md")) as f:
        assert f.read() == calldef.markdown(calldef.read(DEF))


def test_the_generated_c_is_current():
    """What the build compiled is what the table says now."""
    table = calldef.read(DEF)
    for name, make in (("hooks.h", calldef.hooks), ("wrappers.c", calldef.wrappers),
                       ("dispatch.c", calldef.dispatch)):
        with open(os.path.join(FAULTS, "gen", name)) as f:
            assert f.read() == make(table), name


def test_the_harness_reads_the_same_table():
    sys.path.insert(0, os.path.dirname(FAULTS))
    from harness import calls
    table = calldef.read(DEF)
    assert list(calls.table()) == list(table.calls)
    for name, c in table.calls.items():
        h = calls.table()[name]
        assert (h.point, h.faults, h.cls) == (c.point, c.faults, c.cls)
    assert calls.faults_for("write") == {"eintr", "short", "enospc", "eio",
                                         "crash", "errno"}
    assert calls.faults_for("sync") == {"crash"}


def test_the_table_holds_what_the_backends_need():
    t = calldef.read(DEF)
    assert t.aliases["pwrite64"].name == "pwrite"
    assert t.calls["openat"].syscalls == ["openat", "openat2"]
    # stdio is the preload's alone, io_uring_setup the supervisor's
    assert not t.calls["fwrite"].syscalls
    assert t.wrap_of(t.calls["io_uring_setup"]).hooks == "none"
    # one set of hooks for fsync and fdatasync
    assert t.wrap_of(t.calls["fdatasync"]).hooks == "fsync"
    # a call the supervisor sees takes pointers as addresses
    assert t.supervised("write") and not t.supervised("fwrite")
    assert "void rule_write_describe(struct cc_rec *r, int fd, cc_ptr buf, " \
           "size_t count);" in calldef.hooks(t)
    assert "void rule_fputs_after(struct cc_rec *r, int ret, const char *s, " \
           "FILE *f);" in calldef.hooks(t)


HEAD = """/* a comment
   over two lines */
#ifndef SYSCALL
#define SYSCALL(sysname, call)
#endif
CALL( write, "posix/io/rw/write", F_EINTR|F_SHORT|F_CRASH, C_DATA )
CALL( fsync, "posix/io/sync/fsync", F_EIO, C_SYNC )
ALIAS( write64, write )
WRAP( write, ssize_t, (int fd, const void *buf, size_t count), neg, write )
WRAP( write64, ssize_t, (int fd, const void *buf, size_t count), neg, write )
WRAP( fsync, int, (int fd), neg, fsync )
SYSCALL( write, write )
"""


def test_a_small_table_is_read():
    t = calldef.parse(HEAD)
    assert list(t.calls) == ["write", "fsync"]
    assert t.calls["write"].faults == {"eintr", "short", "crash"}
    assert t.calls["write"].aliases == ["write64"]
    assert t.calls["write"].syscalls == ["write"]
    w = t.wrap_of(t.calls["fsync"])
    assert (w.returns, [p.name for p in w.params], w.fails) == ("int", ["fd"], "neg")


@pytest.mark.parametrize("change, message", [
    ("CALL( sync, \"x/y\", F_NOPE, C_SYNC )\n", "line 13: CALL sync: unknown fault F_NOPE"),
    ("CALL( sync, \"x/y\", F_EIO, C_BOGUS )\n", "line 13: CALL sync: unknown class C_BOGUS"),
    ("CALL( sync, x/y, F_EIO, C_SYNC )\n", "line 13: CALL sync: the point must be"),
    ("CALL( write, \"x/y\", F_EIO, C_SYNC )\n", "line 13: bad or repeated call name"),
    ("CALL( sync, \"x/y\", F_EIO )\n", "line 13: a CALL row has 4 fields"),
    ("WRAP( sync, int, (void), neg, sync )\n", "line 13: WRAP sync: no CALL or ALIAS"),
    ("WRAP( fsync, int, (int fd), neg, fsync )\n", "line 13: WRAP fsync twice"),
    ("CALL( sync, \"x/y\", F_EIO, C_SYNC )\nWRAP( sync, int, (void), bogus, sync )\n",
     "line 14: WRAP sync: fails 'bogus' is none of"),
    ("SYSCALL( sync, nothing )\n", "line 13: bad SYSCALL row"),
    ("ALIAS( fsync64, nothing )\n", "line 13: bad ALIAS row"),
    ("CALL(write2, \"x/y\", F_EIO, C_DATA)\n", "no WRAP row for write2"),
    ("CALL sync\n", "line 13: not a row: 'CALL sync'"),
    ("/* never closed\n", "line 13: a comment that never ends"),
    ("CALL( sync, \"x/y\", F_EIO, C_SYNC )\nWRAP( sync, int, (int *), neg, sync )\n",
     "line 14: WRAP sync: cannot read parameter 'int *'"),
    ("CALL( sync, \"x/y\", F_EIO, C_SYNC )\n"
     "WRAP( sync, int, (int fd, ...), neg, sync )\n",
     "line 14: WRAP sync: a variadic parameter list must end in '... mode_t mode'"),
    ("CALL( sync, \"x/y\", F_EIO, C_SYNC )\nWRAP( sync, int, (int x), neg, write )\n",
     "line 14: WRAP sync: hooks 'write' are also write's"),
])
def test_a_bad_row_stops_the_reader_with_one_line(change, message):
    with pytest.raises(calldef.CallsDefError) as e:
        calldef.parse(HEAD + change)
    assert message in str(e.value)
    assert "\n" not in str(e.value)


def test_the_command_line(tmp_path):
    bad = tmp_path / "calls.def"
    bad.write_text(HEAD + "CALL sync\n")
    for argv, status, out in (
            (["md", DEF], 0, "| `write` |"),
            (["md", str(bad)], 2, f"calldef: {bad}: line 13: not a row"),
            (["md", str(tmp_path / "none")], 2, "No such file"),
            (["nothing", DEF], 2, "usage: calldef.py")):
        p = subprocess.run([sys.executable, os.path.join(FAULTS, "calldef.py"), *argv],
                           capture_output=True, text=True)
        assert p.returncode == status, p.stderr
        assert out in (p.stdout if status == 0 else p.stderr)
        if status:
            assert len(p.stderr.splitlines()) == 1 and not p.stdout
