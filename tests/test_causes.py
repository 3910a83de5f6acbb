"""Tests of harness/judging/causes.py on crafted traces: which faulted
calls are on the data path (crash-model.md), which call record decided a
finding, and the key that makes cases one defect."""

import pytest

from harness.judging import causes
from harness.judging.oracle import Cause

W = "/w"


def rec(seq, call, path=None, fd=None, ino=None, ret=0, flags=None, pid=1, **kw):
    r = {"ev": "call", "seq": seq, "pid": pid, "call": call, "n": kw.pop("n", 1),
         "ret": ret, "errno": 0 if ret >= 0 else 5}
    if path is not None:
        r["path"] = f"{W}/{path}"
    if fd is not None:
        r["fd"] = fd
    if ino is not None:
        r["ino"] = ino
    if flags is not None:
        r["flags"] = flags
    r.update(kw)
    return r


INIT = {"ev": "init", "seq": 0, "pid": 1, "snap": {"dir": {"target": 10}, "files": {}}}


def trace(*calls):
    return [INIT, *calls]


# ------------------------------------------------------------- the data path

@pytest.mark.parametrize("call, on", [
    ("fsync", True), ("fdatasync", True), ("msync", True), ("sync", True),
    ("rename", True), ("renameat2", True), ("unlink", True),
    ("write", True), ("pwrite", True), ("fwrite", True), ("ftruncate", True),
    ("open", False), ("openat", False), ("fopen", False), ("mmap", False),
])
def test_a_call_is_on_the_data_path_by_its_kind(call, on):
    r = rec(5, call, "target.tmp", fd=3, ino=11, ret=-1, fault={"rule": 0})
    assert causes.on_data_path(r, trace(r)) is on


def test_a_close_is_on_it_when_its_descriptor_was_for_writing():
    opened = rec(1, "open", "target.tmp", fd=3, ino=11, ret=3, flags=["O_CREAT", "O_TRUNC"])
    close = rec(3, "close", "target.tmp", fd=3, ino=11, ret=-1)
    assert causes.on_data_path(close, trace(opened, close))
    # opened to read, nothing written through it: a failed close loses nothing
    opened = rec(1, "open", "target", fd=3, ino=10, ret=3, flags=[])
    close = rec(3, "close", "target", fd=3, ino=10, ret=-1)
    assert not causes.on_data_path(close, trace(opened, close))
    # opened without a telling flag, but written through
    written = rec(2, "pwrite", "target", fd=3, ino=10, ret=4, off=0, len=4)
    close = rec(3, "close", "target", fd=3, ino=10, ret=-1)
    assert causes.on_data_path(close, trace(opened, written, close))
    # the access mode, when a trace carries it
    opened = rec(1, "open", "target", fd=3, ino=10, ret=3, flags=["O_RDWR"])
    assert causes.on_data_path(close, trace(opened, close))


def test_a_close_reads_the_latest_open_of_its_descriptor_in_its_process():
    first = rec(1, "open", "target.tmp", fd=3, ino=11, ret=3, flags=["O_CREAT", "O_TRUNC"])
    w = rec(2, "write", "target.tmp", fd=3, ino=11, ret=4, off=0, len=4)
    c1 = rec(3, "close", "target.tmp", fd=3, ino=11, ret=0, n=1)
    # the same number, reused for a read-only open of another file
    second = rec(4, "open", "target", fd=3, ino=10, ret=3, flags=[])
    c2 = rec(5, "close", "target", fd=3, ino=10, ret=-1, n=2)
    assert not causes.on_data_path(c2, trace(first, w, c1, second, c2))
    # another process's open of the same number says nothing about it
    other = rec(4, "open", "target", fd=3, ino=10, ret=3, flags=[], pid=2)
    c2 = rec(5, "close", "target.tmp", fd=3, ino=11, ret=-1, n=2)
    assert causes.on_data_path(c2, trace(first, w, other, c2))


def test_a_descriptor_whose_open_is_not_in_the_trace():
    # inherited or dup'd: for writing when its file was written before
    close = rec(3, "close", "target", fd=4, ino=10, ret=-1)
    assert not causes.on_data_path(close, trace(close))
    w = rec(2, "write", "target", fd=5, ino=10, ret=4, off=0, len=4)
    assert causes.on_data_path(close, trace(w, close))


def test_fclose_and_fflush_of_a_stream():
    fopen_w = rec(1, "fopen", "target.tmp", fd=3, ino=11, ret=3, flags=["O_CREAT", "O_TRUNC"])
    fclose = rec(2, "fclose", "target.tmp", fd=3, ino=11, ret=-1)
    assert causes.on_data_path(fclose, trace(fopen_w, fclose))
    fopen_r = rec(1, "fopen", "/proc/filesystems", fd=3, ino=4, ret=3, flags=[])
    fclose = rec(2, "fclose", "/proc/filesystems", fd=3, ino=4, ret=-1)
    assert not causes.on_data_path(fclose, trace(fopen_r, fclose))
    fflush = rec(2, "fflush", "target.tmp", fd=3, ino=11, ret=-1)
    assert causes.on_data_path(fflush, trace(fopen_w, fflush))


def test_a_shared_mapping_writes():
    opened = rec(1, "open", "target", fd=3, ino=10, ret=3, flags=[])
    mm = rec(2, "mmap", "target", fd=3, ino=10, ret=0, flags=["MAP_SHARED"])
    close = rec(3, "close", "target", fd=3, ino=10, ret=-1)
    assert causes.on_data_path(close, trace(opened, mm, close))
    mm["flags"] = []
    assert not causes.on_data_path(close, trace(opened, mm, close))


# ---------------------------------------------------------- deciding records

REPLACE = trace(
    rec(1, "open", "target.tmp", fd=3, ino=11, ret=3, flags=["O_CREAT", "O_EXCL"]),
    rec(2, "write", "target.tmp", fd=3, ino=11, ret=4096, off=0, len=4096, n=1),
    rec(3, "write", "target.tmp", fd=3, ino=11, ret=1, off=4096, len=1, n=2),
    rec(4, "close", "target.tmp", fd=3, ino=11),
    rec(5, "rename", "target.tmp", path2=f"{W}/target", ino=11),
    rec(6, "unlink", "target.bak", ino=12),
)


@pytest.mark.parametrize("change, rule, seq", [
    (("replace", "target"), "fsync the directory after the rename", 5),
    (("rename", "target"), "fsync the directory after the rename", 5),
    (("unlink", "target.bak"), "fsync the directory after removing 'target.bak'", 6),
    (("create", "target.tmp"), "fsync the directory after creating the file", 1),
    # the data of the file now named target: its last write, under its old name
    (("data", "target"), "fsync the file after writing it", 3),
    (("blocks", "target"), "fsync the file after writing it", 3),
    # the rule says where the fix goes: before the rename
    (("data", "target"), "fsync the file before renaming it over the target", 5),
])
def test_the_call_behind_a_lost_change(change, rule, seq):
    r = causes.deciding_record(Cause(rule, change=change), REPLACE, base=W)
    assert r is not None and r["seq"] == seq, r


def test_a_crash_point_bounds_the_search():
    cause = Cause("fsync the file after writing it", change=("data", "target.tmp"))
    assert causes.deciding_record(cause, REPLACE, base=W, upto=2)["seq"] == 2
    assert causes.deciding_record(Cause("r", change=("rename", "target")),
                                  REPLACE, base=W, upto=4) is None


def test_the_first_write_over_the_target_itself():
    t = trace(rec(1, "open", "target", fd=3, ino=10, ret=3, flags=["O_TRUNC"]),
              rec(2, "write", "target", fd=3, ino=10, ret=10, off=0, len=10))
    r = causes.deciding_record(Cause("r", change=("overwrite", "target")), t, base=W)
    assert (r["seq"], r["call"]) == (1, "open")
    # without O_TRUNC: the first write to the inode the target had at start
    t = trace(rec(1, "open", "target", fd=3, ino=10, ret=3, flags=[]),
              rec(2, "pwrite", "target", fd=3, ino=10, ret=10, off=0, len=10))
    r = causes.deciding_record(Cause("r", change=("overwrite", "target")), t, base=W)
    assert (r["seq"], r["call"]) == (2, "pwrite")
    # a file renamed over the target was never the target's own inode
    r = causes.deciding_record(Cause("r", change=("overwrite", "target")), REPLACE, base=W)
    assert r is None


def test_a_failed_sync_behind_lost_blocks():
    t = trace(rec(1, "open", "target.tmp", fd=3, ino=11, ret=3, flags=["O_CREAT"]),
              rec(2, "write", "target.tmp", fd=3, ino=11, ret=4, off=0, len=4),
              rec(3, "fsync", "target.tmp", fd=3, ino=11, ret=-1, fault={"rule": 0}),
              rec(4, "fsync", "target.tmp", fd=3, ino=11, ret=0, n=2))
    r = causes.deciding_record(Cause("r", change=("sync-failure", "target.tmp")), t, base=W)
    assert r["seq"] == 3


def test_a_call_cause_is_the_faulted_record():
    faulted = [rec(3, "fsync", "target.tmp", fd=3, ino=11, ret=-1, fault={"rule": 0})]
    r = causes.deciding_record(Cause("check what fsync returns", call="fsync#1"), (),
                               faulted=faulted, base=W)
    assert r is faulted[0]


# -------------------------------------------------------------------- keys

def test_one_site_one_key_whatever_the_call_number():
    w3 = rec(3, "write", "target.tmp", fd=3, ino=11, ret=-1, n=3)
    w7 = rec(7, "write", "target.tmp", fd=3, ino=11, ret=-1, n=7)
    cause = Cause("check what write returns", call="write#3")
    a, _ = causes.describe("saver", "unreported-error", cause, w3, base=W)
    b, _ = causes.describe("saver", "unreported-error", cause, w7, base=W)
    assert a["key"] == b["key"]
    assert (a["call"], a["file"], a["site"]) == ("write#3", "target.tmp",
                                                 "write target.tmp")
    # another rule or program is another defect; another verdict is the
    # same cause seen otherwise (one cause, one finding: issue 35)
    c, _ = causes.describe("saver", "ignored-error", cause, w3, base=W)
    d, _ = causes.describe("other", "unreported-error", cause, w3, base=W)
    e, _ = causes.describe("saver", "unreported-error",
                           Cause("check what close returns", call="write#3"), w3, base=W)
    assert c["key"] == a["key"]
    assert len({a["key"], d["key"], e["key"]}) == 3


def test_the_call_site_decides_when_the_trace_has_it():
    here = rec(3, "write", "target.tmp", ret=-1, at="/bin/saver+0x1234")
    there = rec(4, "write", "target.tmp", ret=-1, at="/bin/saver+0x1300")
    also_here = rec(9, "write", "other.tmp", ret=-1, at="/bin/saver+0x1234")
    cause = Cause("check what write returns", call="write#1")
    keys = [causes.describe("saver", "unreported-error", cause, r, base=W)[0]
            for r in (here, there, also_here)]
    assert keys[0]["site"] == "/bin/saver+0x1234"
    assert keys[0]["key"] != keys[1]["key"]
    assert keys[0]["key"] == keys[2]["key"]


def test_a_random_name_is_its_pattern_where_there_is_no_site():
    # mkstemp names the temp file anew in every run (coords.align's globs)
    globs = {"target.Ab12Cd": "target.??????", "target.xY9zQ0": "target.??????"}
    cause = Cause("check what write returns", call="write#1")
    keys = [causes.describe("saver", "unreported-error", cause,
                            rec(3, "write", name, ret=-1), base=W, globs=globs)[0]
            for name in ("target.Ab12Cd", "target.Qw34Er", "target.Zx56Cv")]
    assert {k["site"] for k in keys} == {"write target.??????"}
    assert len({k["key"] for k in keys}) == 1
    # the file named is this case's own
    assert [k["file"] for k in keys] == ["target.Ab12Cd", "target.Qw34Er",
                                         "target.Zx56Cv"]
    # a name the globs do not cover stands as it is, and so does a lost
    # change without a call
    other = causes.describe("saver", "unreported-error", cause,
                            rec(3, "write", "target.tmp", ret=-1), base=W,
                            globs=globs)[0]
    assert other["site"] == "write target.tmp"
    lost = causes.describe("saver", "torn", Cause(
        "fsync the file", change=("data", "target.Qw34Er")), None, base=W,
        globs=globs)[0]
    assert lost["site"] == "data target.??????"


def test_the_frames_decide_where_no_frame_has_a_line():
    # the system-call backend's frames of a binary without debug
    # information: `at` is libc's wrapper, the same for every write
    one = rec(3, "write", "a", ret=-1, at="/bin/s+0x4000",
              up=["+0x1234", "+0x2000"])
    two = rec(4, "write", "a", ret=-1, at="/bin/s+0x4000",
              up=["+0x1300", "+0x2000"])
    cause = Cause("check what write returns", call="write#1")
    a, b = (causes.describe("s", "unreported-error", cause, r, base=W)[0]
            for r in (one, two))
    assert a["site"] == "/bin/s+0x4000|/bin/s+0x1234|/bin/s+0x2000"
    assert a["key"] != b["key"]


def test_a_file_the_run_made_was_made_to_be_written():
    # gawk -i inplace: mkstemp opens the temp file below the interposer,
    # dup2 makes it stdout; only its fflush and close are in the trace
    fflush = rec(5, "fflush", "target.gawk.x1", fd=1, ino=11, ret=-1)
    assert causes.on_data_path(fflush, trace(fflush))
    # a file that was there at the start, and a directory, were not
    fflush = rec(5, "fflush", "target", fd=1, ino=10, ret=-1)
    assert not causes.on_data_path(fflush, trace(fflush))
    close = rec(5, "close", ".", fd=4, ino=2, ret=-1, dir=True)
    assert not causes.on_data_path(close, trace(close))


def test_a_planned_crash_before_the_call_stands_for_it():
    crash = {"ev": "crash", "seq": 4, "pid": 2, "call": "fclose", "n": 2,
             "when": "before", "rule": 0}
    r = causes.deciding_record(Cause("write the new content in full", call="fclose#2"),
                               (), faulted=[crash], base=W)
    assert r is crash


def test_the_start_tree_in_both_snapshot_shapes():
    flat = [{"ev": "init", "seq": 0, "snap": {"dir": {"target": 10, "x": 11}}}]
    assert causes.start_tree(flat) == {"target": 10, "x": 11}
    tree = [{"ev": "init", "seq": 0, "snap": {
        "root": 1, "dirs": {"1": {"target": 10, "sub": {"d": 2}, "ln": {"l": "target"}},
                            "2": {"x": 11, "deeper": {"d": 3}}, "3": {"y": 12}}}}]
    assert causes.start_tree(tree) == {"target": 10, "sub/x": 11, "sub/deeper/y": 12}
    assert causes.start_tree([{"ev": "init", "seq": 0}]) is None
    # a file made under a subdirectory during the run was made to be written
    fflush = rec(5, "fflush", "sub/new.tmp", fd=3, ino=13, ret=-1)
    assert causes.on_data_path(fflush, tree + [fflush])
    fflush = rec(5, "fflush", "sub/x", fd=3, ino=11, ret=-1)
    assert not causes.on_data_path(fflush, tree + [fflush])
