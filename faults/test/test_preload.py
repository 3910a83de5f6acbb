#!/usr/bin/python3
"""Smoke test of libcrashcheck.so: run test/smoke under plans, read the trace.

Each test runs one program under LD_PRELOAD with a fresh scratch directory
(under /dev/shm when present) and checks the exit status, the trace records
and the snapshots. Run by `make -C faults check` (pytest; test/smoke built
first).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
FAULTS = os.path.dirname(HERE)
LIB = os.path.join(FAULTS, "libcrashcheck.so")
FIU = "/usr/lib/fiu/fiu_posix_preload.so"
SMOKE = os.path.join(HERE, "smoke")
sys.path.insert(0, FAULTS)
import calldef  # noqa: E402  the one reader of calls.def
SIZE = 4096
CONTENT = bytes(ord("a") + (i * 7 + i // 26) % 26 for i in range(SIZE))


def trace_records(path):
    """The records of a trace no process died writing: with
    CRASHCHECK_SHARED it was written through a shared mapping and ends in
    zero bytes past its last line, which hold nothing else."""
    with open(path, "rb") as f:
        data = f.read().rstrip(b"\0")
    expect(b"\0" not in data, "no zero byte before the last line", data[-200:])
    return [json.loads(line) for line in data.decode("utf-8").splitlines()]


class Run:
    def __init__(self, mode, plan, preload=None, env=None, old=b"old\n", shared=True,
                 argv=None):
        base = "/dev/shm" if os.path.isdir("/dev/shm") else None
        self.tmp = tempfile.mkdtemp(prefix="cc-smoke.", dir=base)
        self.watch = os.path.join(self.tmp, "w")
        os.mkdir(self.watch)
        if old is not None:
            with open(os.path.join(self.watch, "target"), "wb") as f:
                f.write(old)
        self.trace = os.path.join(self.tmp, "trace")
        self.snap = os.path.join(self.tmp, "snap")
        e = dict(os.environ)
        for k in list(e):
            if k.startswith("CRASHCHECK_"):
                del e[k]
        e.update(CRASHCHECK_TRACE=self.trace, CRASHCHECK_WATCH=self.watch,
                 CRASHCHECK_SNAPDIR=self.snap,
                 LD_PRELOAD=preload if preload is not None else LIB + " " + FIU)
        if plan is not None:
            e["CRASHCHECK_PLAN"] = plan
        if shared:
            e["CRASHCHECK_SHARED"] = os.path.join(self.tmp, "shared")
        e.update(env or {})
        p = subprocess.run(argv or [SMOKE, mode, self.watch], env=e,
                           capture_output=True, timeout=30)
        self.status = p.returncode
        self.stdout = p.stdout.decode(errors="replace")
        self.stderr = p.stderr.decode(errors="replace")
        self.recs = []
        if os.path.exists(self.trace):
            self.recs = trace_records(self.trace)
            self.recs.sort(key=lambda r: r["seq"])

    def calls(self, name):
        return [r for r in self.recs if r["ev"] == "call" and r["call"] == name]

    def target(self):
        try:
            with open(os.path.join(self.watch, "target"), "rb") as f:
                return f.read()
        except FileNotFoundError:
            return None

    def cleanup(self):
        shutil.rmtree(self.tmp, ignore_errors=True)


def expect(cond, what, found):
    if not cond:
        raise AssertionError(f"expected {what}, found {found}")


def common(run):
    """Invariants every traced run must hold."""
    seqs = [r["seq"] for r in run.recs]
    expect(len(seqs) == len(set(seqs)), "unique seq numbers", seqs)
    expect(run.recs and run.recs[0]["ev"] == "init", "an init record first",
           run.recs[:1])
    seen = set()    # inodes with an earlier snapshot
    for r in run.recs:
        snap = r.get("snap", {})
        for ino, f in snap.get("files", {}).items():
            if "data" in f:
                # a small range: its bytes in the line, as hex
                expect("hash" not in f and "off" in f and len(f["data"]) <= 2 * 512,
                       "inline data only in a range of at most 512 bytes", f)
                data = bytes.fromhex(f["data"])
                expect(len(data) == f["len"], f"{f['len']} bytes of data", len(data))
                expect(f["off"] + f["len"] <= f["size"] and ino in seen,
                       f"a range within the size, after a snapshot of {ino}",
                       (f, sorted(seen)))
                continue
            path = os.path.join(run.snap, f["hash"])
            with open(path, "rb") as fh:
                data = fh.read()
            # a range snapshot holds the bytes [off, off+len) of a file of
            # size bytes, laid over the inode's previous snapshot
            want = f["len"] if "off" in f else f["size"]
            expect(len(data) == want, f"snapshot {f['hash']} of {want} bytes",
                   len(data))
            if "off" in f:
                expect(f["off"] + f["len"] <= f["size"] and ino in seen,
                       f"a range within the size, after a snapshot of {ino}",
                       (f, sorted(seen)))
            seen.add(ino)
            expect(content_hash(data) == f["hash"],
                   "snapshot named by its content hash", f["hash"])


M64 = (1 << 64) - 1
P1, P2, P3 = 0x9e3779b185ebca87, 0xc2b2ae3d27d4eb4f, 0x165667b19e3779f9
P4, P5 = 0x85ebca77c2b2ae63, 0x27d4eb2f165667c5


def _rotl(x, n):
    return ((x << n) | (x >> (64 - n))) & M64


def _round(acc, w):
    return (_rotl((acc + w * P2) & M64, 31) * P1) & M64


def content_hash(data):
    """faults/hash.c's cc_hash, written again from its description: the
    16 hex digits that name a snapshot file."""
    n, i = len(data), 0
    word = lambda at, size: int.from_bytes(data[at:at + size], "little")
    if n >= 32:
        lanes = [(P1 + P2) & M64, P2, 0, (-P1) & M64]
        while n - i >= 32:
            lanes = [_round(lanes[k], word(i + 8 * k, 8)) for k in range(4)]
            i += 32
        a, b, c, d = lanes
        h = (_rotl(a, 1) + _rotl(b, 7) + _rotl(c, 12) + _rotl(d, 18)) & M64
        for lane in lanes:
            h = ((h ^ _round(0, lane)) * P1 + P4) & M64
    else:
        h = P5
    h = (h + n) & M64
    while n - i >= 8:
        h = (_rotl(h ^ _round(0, word(i, 8)), 27) * P1 + P4) & M64
        i += 8
    if n - i >= 4:
        h = (_rotl(h ^ ((word(i, 4) * P1) & M64), 23) * P2 + P3) & M64
        i += 4
    while i < n:
        h = (_rotl(h ^ ((data[i] * P5) & M64), 11) * P1) & M64
        i += 1
    h ^= h >> 33
    h = (h * P2) & M64
    h ^= h >> 29
    h = (h * P3) & M64
    h ^= h >> 32
    return h.to_bytes(8, "little").hex()    # as hash.c's cc_hash_hex spells it


def one_fault(run, call, n, action, errno=None):
    fired = [r for r in run.recs if "fault" in r]
    expect(len(fired) == 1, "one fired fault", fired)
    r = fired[0]
    expect((r["call"], r["n"], r["fault"]["action"]) == (call, n, action),
           f"{call}#{n} {action}", (r["call"], r["n"], r["fault"]))
    if errno is not None:
        expect(r["ret"] == -1 and r["errno"] == errno,
               f"ret -1 errno {errno}", (r["ret"], r["errno"]))
    return r


def test_baseline_write():
    run = Run("write", None)
    try:
        expect(run.status == 0, "exit 0", (run.status, run.stderr))
        common(run)
        expect(run.target() == CONTENT, "new content", run.target()[:16])
        names = [r["call"] for r in run.recs if r["ev"] == "call"]
        expect(names == ["openat", "write", "write", "write", "fsync", "close",
                         "rename", "open", "fsync", "close"],
               "the program's calls in order", names)
        ren = run.calls("rename")[0]
        expect(ren["path"].endswith("/target.tmp") and ren["path2"].endswith("/target"),
               "rename path and path2", ren)
        root = os.stat(run.watch).st_ino
        expect(list(ren["snap"]["dirs"]) == [str(root)] and
               set(ren["snap"]["dirs"][str(root)]) == {"target"},
               "WATCH's listing, target alone, after rename", ren["snap"])
        dsync = run.calls("fsync")[1]
        expect(dsync.get("dir") is True and dsync["ino"] == root and
               list(dsync["snap"]["dirs"]) == [str(root)],
               "fsync of the directory with its listing", dsync)
        w3 = run.calls("write")[2]
        expect((w3["off"], w3["len"], w3["ret"]) == (3000, 1096, 1096),
               "write#3 at 3000 of 1096", w3)
        init = run.recs[0]
        listing = init["snap"]["dirs"].get(str(root), {})
        expect(init["snap"]["root"] == root and list(init["snap"]["dirs"]) ==
               [str(root)] and list(listing) == ["target"] and
               list(init["snap"]["files"]) == [str(listing["target"])],
               "init listing: WATCH holding the old target", init)
    finally:
        run.cleanup()


def test_write_eio():
    run = Run("write", "write#2=EIO")
    try:
        expect(run.status == 1, "exit 1", (run.status, run.stderr))
        expect("Input/output error" in run.stderr, "EIO reported", run.stderr)
        common(run)
        r = one_fault(run, "write", 2, "EIO", errno=5)
        expect(r["snap"]["files"], "a file snapshot on the failed write", r)
        expect(run.target() == b"old\n", "old content", run.target())
    finally:
        run.cleanup()


def test_write_short():
    run = Run("write", "write#1=short:100")
    try:
        expect(run.status == 0, "exit 0", (run.status, run.stderr))
        common(run)
        r = one_fault(run, "write", 1, "short:100")
        expect((r["len"], r["ret"]) == (1500, 100), "len 1500 ret 100", r)
        w2 = run.calls("write")[1]
        expect((w2["off"], w2["len"]) == (100, 1400), "the retry of the rest", w2)
        expect(run.target() == CONTENT, "new content", run.target()[:16])
    finally:
        run.cleanup()


def test_write_short_default_half():
    run = Run("write", "write#3=short")
    try:
        expect(run.status == 0, "exit 0", (run.status, run.stderr))
        r = one_fault(run, "write", 3, "short")
        expect(r["ret"] == 548, "half of 1096", r["ret"])
        expect(run.target() == CONTENT, "new content", run.target()[:16])
    finally:
        run.cleanup()


def test_write_eintr():
    run = Run("write", "write#1=EINTR")
    try:
        expect(run.status == 0, "exit 0", (run.status, run.stderr))
        common(run)
        one_fault(run, "write", 1, "EINTR", errno=4)
        expect(len(run.calls("write")) == 4, "four writes (one retried)",
               len(run.calls("write")))
        expect(run.target() == CONTENT, "new content", run.target()[:16])
    finally:
        run.cleanup()


def test_fsync_eio():
    run = Run("write", "fsync#1=EIO")
    try:
        expect(run.status == 1, "exit 1", (run.status, run.stderr))
        common(run)
        r = one_fault(run, "fsync", 1, "EIO", errno=5)
        files = r["snap"]["files"]
        expect(list(files.values())[0]["size"] == SIZE, "the file snapshot at fsync", files)
    finally:
        run.cleanup()


def test_openat_glob_enospc():
    run = Run("write", "openat(*.tmp)#1=ENOSPC")
    try:
        expect(run.status == 1, "exit 1", (run.status, run.stderr))
        expect("No space left" in run.stderr, "ENOSPC reported", run.stderr)
        common(run)
        one_fault(run, "openat", 1, "ENOSPC", errno=28)
    finally:
        run.cleanup()


def test_glob_no_match_never_fires():
    run = Run("write", "openat(*.nothing)#1=ENOSPC")
    try:
        expect(run.status == 0, "exit 0", (run.status, run.stderr))
        expect(not [r for r in run.recs if "fault" in r], "no fault", run.recs)
    finally:
        run.cleanup()


def test_rename_crash():
    run = Run("write", "rename#1=crash")
    try:
        expect(run.status == -9, "SIGKILL", (run.status, run.stderr))
        common(run)
        last = run.recs[-1]
        expect(last["ev"] == "crash" and last["call"] == "rename" and
               last["when"] == "before" and last["rule"] == 0, "a crash record", last)
        expect(run.target() == b"old\n", "old content (rename never ran)", run.target())
    finally:
        run.cleanup()


def test_rename_crash_after():
    run = Run("write", "rename#1=crash-after")
    try:
        expect(run.status == -9, "SIGKILL", (run.status, run.stderr))
        common(run)
        expect(run.recs[-2]["call"] == "rename" and
               run.recs[-2]["fault"]["action"] == "crash-after", "rename traced", run.recs[-2])
        expect(run.recs[-1]["when"] == "after", "a crash record after", run.recs[-1])
        expect(run.target() == CONTENT, "new content (rename ran)", run.target()[:16])
    finally:
        run.cleanup()


def test_persist_enospc():
    run = Run("write", "write#2+=ENOSPC")
    try:
        expect(run.status == 1, "exit 1", (run.status, run.stderr))
        one_fault(run, "write", 2, "ENOSPC", errno=28)
    finally:
        run.cleanup()


def test_stdio_faults():
    for plan, call in (("fwrite#1=ENOSPC", "fwrite"), ("fputs#1=EIO", "fputs"),
                       ("fputc#1=EIO", "fputc"), ("fprintf#1=EIO", "fprintf"),
                       ("fflush#1=EIO", "fflush"), ("fclose#1=EIO", "fclose"),
                       ("fopen#1=ENOSPC", "fopen")):
        run = Run("stdio", plan)
        try:
            expect(run.status == 1, f"exit 1 under {plan}", (run.status, run.stderr))
            r = one_fault(run, call, 1, plan.split("=")[1])
            expect(r["errno"] in (5, 28), f"errno of {plan}", r)
        finally:
            run.cleanup()
    run = Run("stdio", None)
    try:
        expect(run.status == 0, "exit 0", (run.status, run.stderr))
        common(run)
        expect(run.target() == CONTENT, "new content via stdio", run.target()[:16])
        fc = run.calls("fclose")[0]
        expect(list(fc["snap"]["files"].values())[0]["size"] == SIZE,
               "the file snapshot at fclose", fc)
        fp = run.calls("fprintf")
        expect(fp and fp[0]["len"] == 3, "fprintf of 3 bytes", fp)
    finally:
        run.cleanup()


def test_mmap_msync():
    run = Run("mmap", None)
    try:
        expect(run.status == 0, "exit 0", (run.status, run.stderr))
        common(run)
        expect(run.target() == CONTENT, "new content via mmap", run.target()[:16])
        ms = run.calls("msync")[0]
        expect((ms["off"], ms["len"], ms["flags"]) == (0, SIZE, ["MS_SYNC"]) and
               ms["path"].endswith("/target.tmp"), "msync's file range", ms)
        mm = run.calls("mmap")
        expect(any(m.get("flags") == ["MAP_SHARED"] for m in mm), "a MAP_SHARED mmap", mm)
    finally:
        run.cleanup()
    for plan in ("msync#1=EIO", "posix_fallocate#1=ENOSPC", "ftruncate#1=EIO"):
        run = Run("mmap", plan)
        try:
            expect(run.status == 1, f"exit 1 under {plan}", (run.status, run.stderr))
            call = plan.split("#")[0]
            r = one_fault(run, call, 1, plan.split("=")[1])
            if call == "posix_fallocate":
                expect(r["ret"] == 28 and r["errno"] == 28, "error as return value", r)
        finally:
            run.cleanup()


def test_vec_family():
    run = Run("vec", None)
    try:
        expect(run.status == 0, "exit 0", (run.status, run.stderr))
        common(run)
        expect(run.target() == CONTENT, "new content via writev", run.target()[:16])
        for c in ("creat", "writev", "pwritev", "fdatasync", "sync_file_range",
                  "fallocate", "truncate", "unlinkat", "renameat2", "syncfs", "sync"):
            expect(run.calls(c), f"a {c} record", [r.get("call") for r in run.recs])
        s = run.calls("sync")[0]
        expect("files" in s["snap"] and "dirs" in s["snap"], "a full snapshot at sync", s)
    finally:
        run.cleanup()
    run = Run("vec", "writev#1=short:1010")
    try:
        expect(run.status == 0, "exit 0", (run.status, run.stderr))
        r = one_fault(run, "writev", 1, "short:1010")
        expect((r["len"], r["ret"]) == (2048, 1010), "writev cut by bytes", r)
        expect(run.target() == CONTENT, "new content", run.target()[:16])
    finally:
        run.cleanup()
    for plan in ("creat#1=EIO", "renameat2#1=EXDEV", "unlinkat#1=EBUSY", "syncfs#1=EIO",
                 "fallocate#1=ENOSPC", "pwritev#1=EDQUOT", "sync_file_range#1=EIO"):
        run = Run("vec", plan)
        try:
            expect(run.status == 1, f"exit 1 under {plan}", (run.status, run.stderr))
            one_fault(run, plan.split("#")[0], 1, plan.split("=")[1])
        finally:
            run.cleanup()


def test_direct_short_aligned():
    run = Run("direct", "write#1=short:5000")
    try:
        if run.status == 77:
            pytest.skip("O_DIRECT unsupported here")
        expect(run.status == 0, "exit 0", (run.status, run.stderr))
        r = one_fault(run, "write", 1, "short:5000")
        expect(r["ret"] > 0 and r["ret"] % 512 == 0 and r["ret"] <= 5000,
               "a short write in whole blocks", r["ret"])
    finally:
        run.cleanup()


def test_shared_counters_across_processes():
    sh = f"{SMOKE} append {{0}}/f; {SMOKE} append {{0}}/f"
    tmp = tempfile.mkdtemp(prefix="cc-smoke.")
    try:
        env = dict(os.environ, CRASHCHECK_PLAN="write(*/f)#2=EIO",
                   CRASHCHECK_TRACE=tmp + "/trace", CRASHCHECK_SHARED=tmp + "/shared",
                   LD_PRELOAD=LIB + " " + FIU)
        p = subprocess.run(["/bin/sh", "-c", sh.format(tmp)], env=env,
                           capture_output=True, timeout=30)
        expect(p.returncode == 1, "the second process fails", (p.returncode, p.stderr))
        recs = trace_records(tmp + "/trace")
        ws = [r for r in recs if r["ev"] == "call" and r["call"] == "write"
              and r.get("path", "").endswith("/f")]
        expect([w["n"] for w in ws] == [1, 2] and ws[0]["pid"] != ws[1]["pid"],
               "one write per process, counted 1 and 2", ws)
        expect("fault" in ws[1], "the fault in the second process", ws[1])
        inits = [r for r in recs if r["ev"] == "init"]
        expect(len(inits) == 3, "an init per process (sh and two smokes)", len(inits))
        expect(len({r["seq"] for r in recs}) == len(recs), "one seq across processes", recs)
        with open(tmp + "/f") as f:
            expect(f.read() == "x\n", "one line written", None)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_refuses_bad_env():
    for env, want in ((dict(CRASHCHECK_PLAN="write#0=EIO"), "bad CRASHCHECK_PLAN"),
                      (dict(CRASHCHECK_TRACE="relative"), "not an absolute path"),
                      (dict(CRASHCHECK_WATCH="/nonexistent/x"), "stat CRASHCHECK_WATCH")):
        run = Run("write", None, env=env)
        try:
            expect(run.status == 2, f"exit 2 for {env}", (run.status, run.stderr))
            lines = run.stderr.splitlines()
            expect(len(lines) == 1 and want in lines[0], f"one line naming '{want}'", lines)
            expect(run.target() == b"old\n", "main never ran", run.target())
        finally:
            run.cleanup()


def test_refuses_without_libfiu():
    run = Run("write", "write#1=EIO", preload=LIB)
    try:
        expect(run.status == 2, "exit 2", (run.status, run.stderr))
        expect(len(run.stderr.splitlines()) == 1 and "fiu_posix_preload" in run.stderr,
               "one line naming libfiu's preload", run.stderr)
    finally:
        run.cleanup()
    run = Run("write", None, preload=LIB)
    try:
        expect(run.status == 0, "no plan: runs without libfiu", (run.status, run.stderr))
    finally:
        run.cleanup()


def test_shared_file_of_another_plan():
    tmp = tempfile.mkdtemp(prefix="cc-smoke.")
    try:
        shared = tmp + "/shared"
        for plan, status in (("write#1=EIO", 1), ("write#2=EIO", 2)):
            env = dict(os.environ, CRASHCHECK_PLAN=plan, CRASHCHECK_SHARED=shared,
                       LD_PRELOAD=LIB + " " + FIU)
            p = subprocess.run([SMOKE, "append", tmp + "/f"], env=env,
                               capture_output=True, timeout=30)
            expect(p.returncode == status, f"exit {status} under {plan}",
                   (p.returncode, p.stderr))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_every_table_call_is_wrapped():
    """Each CALL and ALIAS of calls.def is a symbol the library exports,
    but a call with no C library function (its WRAP row's hooks "none":
    a system call only the syscall backend sees)."""
    table = calldef.read(os.path.join(FAULTS, "calls.def"))
    names = [w.symbol for w in table.wraps if w.hooks != "none"]
    out = subprocess.run(["nm", "-D", "--defined-only", LIB], capture_output=True,
                         text=True, check=True).stdout
    exported = {line.split()[-1] for line in out.splitlines() if " T " in line}
    missing = [n for n in names if n not in exported]
    expect(len(names) >= 40 and not missing, "a wrapper for every table entry", missing)
    # the rules are the library's own: no program's symbol can stand in
    # for one, nor one of them for a program's
    rules = sorted(n for n in exported if n.startswith("rule_"))
    expect(not rules, "no rule exported", rules)
