"""The system-call backend (faults/bin/supervise, harness/engine/backend.py).

A seccomp filter traps the program's file system calls and a ptrace
supervisor counts, faults and records them in the preload's trace format,
so that programs the preload never enters are audited alike: a statically
linked C writer and a Go writer (tests/progs/writer.c, writer.go), each
correct and with one defect at a time, are judged as the crash model
says; exact nth-call faults, short writes that really write their bytes,
and kills before and after a call work on both; every process and thread
is followed, and none is left behind; a line of the preload's trace and
the supervisor's for the same call say the same; the built-in corpus gets
the same verdicts under both backends; `auto` picks the supervisor where
the preload cannot see the program, and says so.

The Go tests build the writer with Debian's golang-go, and are skipped
with the reason where it is missing.
"""

import errno
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # noqa: E402
from harness.engine import backend, runner, trace  # noqa: E402

CRASHCHECK = ROOT / "scripts" / "crashcheck"
PROGS = Path(__file__).resolve().parent / "progs"
SPECS = ROOT / "workloads" / "specs"


def cc(*args, cwd=None, timeout=300):
    return subprocess.run([str(CRASHCHECK), *map(str, args)],
                          cwd=cwd or ROOT, capture_output=True, text=True,
                          timeout=timeout)


def results(out):
    with open(Path(out) / "results.json") as fh:
        return json.load(fh)["cases"]


def our_lines(stderr):
    return [line for line in stderr.splitlines()
            if line.startswith("crashcheck: ")]


def compile_c(out, source, *flags):
    proc = subprocess.run(["cc", "-O2", "-Wall", "-Wextra", *flags, "-o",
                           str(out), str(source)], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        if "-static" in flags and "cannot find" in proc.stderr:
            pytest.skip(f"no static C library here: {proc.stderr.strip()[-200:]}")
        pytest.fail(f"cc {source} failed:\n{proc.stderr}")
    return out


@pytest.fixture(scope="session")
def progs(tmp_path_factory):
    d = tmp_path_factory.mktemp("syscall-progs")
    if not backend.SUPERVISOR.is_file():
        pytest.fail(f"{backend.SUPERVISOR} missing: run 'make'")
    return {
        "writer": compile_c(d / "writer", PROGS / "writer.c", "-static"),
        "ops": compile_c(d / "ops", PROGS / "ops.c"),
        "ops-static": compile_c(d / "ops-static", PROGS / "ops.c", "-static"),
    }


@pytest.fixture(scope="session")
def gowriter(tmp_path_factory):
    """tests/progs/writer.go, built with Debian's golang-go (statically
    linked, as Go builds a program that needs no C)."""
    go = shutil.which("go")
    if go is None:
        pytest.skip("go not installed (Debian's golang-go): the Go writer "
                    "cannot be built")
    d = tmp_path_factory.mktemp("go")
    shutil.copy(PROGS / "writer.go", d / "writer.go")
    env = dict(os.environ, GOCACHE=str(d / "cache"), GOPATH=str(d / "path"),
               GO111MODULE="off", CGO_ENABLED="0", GOFLAGS="")
    proc = subprocess.run([go, "build", "-o", "gowriter", "writer.go"], cwd=d,
                          env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        pytest.fail(f"go build writer.go failed:\n{proc.stderr}")
    return d / "gowriter"


def writer_of(lang, progs, request):
    """(the writer program, how its defect options are spelled)."""
    if lang == "go":
        return request.getfixturevalue("gowriter"), "-"
    return progs["writer"], "--"


# ------------------------------------------------- the writers, judged

# Each defect of the writers and what must catch it (crash-model.md): a
# spec per variant, run together; `crashcheck run` passes only when the
# correct writer is clean and each variant shows exactly these verdicts.
DEFECTS = {
    "no-dir-fsync": [{"verdict": "not-durable"}],
    # and, failing at the directory's fsync after the rename (EIO, ENOSPC),
    # it exits 1 leaving a state after exit that is torn (crash-model.md)
    # ext4-ordered too: the blocks auto_da_alloc allocates at the rename
    # stay unwritten (dioread_nolock) until their write completes: zeros
    "no-fsync": [{"verdict": "torn", "kind": "powerloss", "model": "posix"},
                 {"verdict": "not-durable", "model": "posix"},
                 {"verdict": "torn", "kind": "powerloss",
                  "model": "ext4-ordered"},
                 {"verdict": "not-durable", "kind": "powerloss",
                  "model": "ext4-ordered"},
                 {"verdict": "torn", "kind": "eio", "model": "posix"},
                 {"verdict": "torn", "kind": "enospc", "model": "posix"}],
    "eintr-fatal": [{"verdict": "gave-up-on-transient", "kind": "eintr"}],
    "short-ignored": [{"verdict": "lost-update", "kind": "short"}],
}


def write_spec(path, name, command, expect=()):
    text = (f'name = "{name}"\ndescription = "{name}"\n'
            f"command = {json.dumps([str(a) for a in command])}\n"
            'contract = "atomic"\nsizes = [10000]\nold = "payload"\n'
            "timeout = 20\n")
    if expect:
        text += f'teaches = "{name}"\n'
        for e in expect:
            text += "\n[[expect]]\n" + "".join(
                f"{k} = {json.dumps(v)}\n" for k, v in e.items())
    path.write_text(text)
    return path


@pytest.mark.parametrize("lang", ["c", "go"])
def test_writers_are_judged_as_the_model_says(tmp_path, progs, request, lang):
    exe, dash = writer_of(lang, progs, request)
    specs = [write_spec(tmp_path / "writer.toml", "writer",
                        [exe, "{target}", "{new}"])]
    for defect, expect in DEFECTS.items():
        specs.append(write_spec(tmp_path / f"{defect}.toml", defect,
                                [exe, dash + defect, "{target}", "{new}"],
                                expect))
    proc = cc("run", *specs, "--out", tmp_path / "out")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    cases = results(tmp_path / "out")
    # auto ran every one under the supervisor: the preload never loads
    assert {c["backend"] for c in cases} == {"syscall"}
    verdicts = {c["id"]: c["verdict"] for c in cases}
    # the done-when of issue 23: a writer that skips the directory fsync
    # is not durable after it exits, under both models
    assert verdicts["no-dir-fsync-10000B-powerloss@exit-posix"] == "not-durable"
    assert verdicts["no-dir-fsync-10000B-powerloss@exit-ext4-ordered"] == "not-durable"
    # the correct one got EINTR and short writes on every write it made to
    # the temp file, and took them all
    mine = [c for c in cases if c["workload"] == "writer"]
    assert all(c["verdict"] == "ok" for c in mine)
    assert {c["call"] for c in mine if c["kind"] == "short"} == \
        {"write(target.tmp)#1", "write(target.tmp)#2", "write(target.tmp)#3"}
    assert {c["call"] for c in mine if c["kind"] == "eintr"} == \
        {"write(target.tmp)#1", "write(target.tmp)#2", "write(target.tmp)#3"}


# ------------------------------------------------ exact faults, by hand

def inject(tmp_path, plan, exe, *args):
    """`crashcheck inject PLAN` of exe in tmp_path/run (a target and a new
    content of 10000 bytes: three writes of the temp file); (process,
    trace records, the directory)."""
    d = tmp_path / "run"
    if d.exists():
        shutil.rmtree(d)
    d.mkdir()
    (d / "target").write_bytes(b"o" * 5000)
    new = bytes(range(256)) * 39 + b"x" * 16
    (d / "new").write_bytes(new)
    proc = cc("inject", "--trace", d / "trace.jsonl", plan, "--", exe, *args,
              "target", "new", cwd=d)
    return proc, trace.load(d / "trace.jsonl"), d


def tmp_writes(records):
    return [r for r in trace.calls(records)
            if r["call"] == "write" and r.get("path", "").endswith("/target.tmp")]


@pytest.mark.parametrize("lang", ["c", "go"])
def test_exact_faults(tmp_path, progs, request, lang):
    exe, _ = writer_of(lang, progs, request)
    rename = "rename" if lang == "c" else "renameat"
    eio = "Input/output error" if lang == "c" else "input/output error"

    # the second write to the temp file, exactly: the first went through
    proc, recs, d = inject(tmp_path, "write(*.tmp)#2=EIO", exe)
    assert proc.returncode == 1
    assert f"writer: write 'target.tmp': {eio}" in proc.stderr
    writes = tmp_writes(recs)
    assert [(w["ret"], w["errno"], bool(w.get("fault"))) for w in writes] == \
        [(4096, 0, False), (-1, 5, True)]
    assert (d / "target").read_bytes() == b"o" * 5000
    assert not (d / "target.tmp").exists()

    # a short write really writes its first 100 bytes: the program goes on
    # from there, and the next write starts right after them
    proc, recs, d = inject(tmp_path, "write(*.tmp)#2=short:100", exe)
    assert proc.returncode == 0, proc.stderr
    writes = tmp_writes(recs)
    assert [(w["off"], w["len"], w["ret"]) for w in writes] == \
        [(0, 4096, 4096), (4096, 4096, 100), (4196, 4096, 4096),
         (8292, 1708, 1708)]
    assert (d / "target").read_bytes() == (d / "new").read_bytes()

    # killed before the rename: the target is old, the temp file whole
    proc, recs, d = inject(tmp_path, f"{rename}#1=crash", exe)
    assert proc.returncode == 128 + signal.SIGKILL
    assert (d / "target").read_bytes() == b"o" * 5000
    assert (d / "target.tmp").read_bytes() == (d / "new").read_bytes()
    assert [r["when"] for r in recs if r["ev"] == "crash"] == ["before"]

    # killed after it: the rename happened
    proc, recs, d = inject(tmp_path, f"{rename}#1=crash-after", exe)
    assert proc.returncode == 128 + signal.SIGKILL
    assert (d / "target").read_bytes() == (d / "new").read_bytes()
    assert not (d / "target.tmp").exists()
    assert [r["when"] for r in recs if r["ev"] == "crash"] == ["after"]

    # an fsync that fails
    proc, recs, d = inject(tmp_path, "fsync(*.tmp)#1=EIO", exe)
    assert proc.returncode == 1
    line = next(x for x in proc.stderr.splitlines() if x.startswith("writer:"))
    assert line.startswith("writer: fsync 'target.tmp': ") and line.endswith(eio)
    assert our_lines(proc.stderr)[-1] == \
        "crashcheck: fired fsync(*.tmp)#1=EIO (1 call)"


def test_stdout_and_stderr_are_never_faulted(tmp_path, progs):
    """A fault that keeps firing on every write still lets the program say
    what went wrong: its stdout and stderr when it started are left
    alone (counted, as the trace numbers them, but never faulted)."""
    proc, recs, d = inject(tmp_path, "write#1+=EIO", progs["writer"])
    assert proc.returncode == 1
    assert "writer: write 'target.tmp': Input/output error" in proc.stderr
    faulted = [r for r in trace.calls(recs) if r.get("fault")]
    assert [r["path"].rsplit("/", 1)[-1] for r in faulted] == ["target.tmp"]


# --------------------------------------- one trace format for both backends

# A program of calls the preload and the supervisor both see (no stdio:
# its writes are calls of their own only under the preload).
OPS = ["open", "f", "rw,creat", "write", 100, "pwrite", 50, 4000,
       "writev", "10,20,30", "fsync", "ftruncate", 8192, "fdatasync",
       "mmap", 8192, "msync", "sync", "munmap", "close",
       "renameat", "f", "g", "open", "g", "r", "close"]
# what both backends must say the same of (seq, n and pid differ: the
# supervisor also sees the dynamic loader's calls, and mmap's address)
SAME = ("call", "path", "path2", "ino", "dir", "off", "len", "flags",
        "ret", "errno", "snap")


def watched_calls(d, backend_name, ops):
    """The trace lines of calls on the run's directory, by a run of ops
    (tests/progs/ops.c) under BACKEND in D (the recorder on)."""
    work = d / "work"
    work.mkdir(parents=True)
    run = runner.run([str(ops), *map(str, OPS)], cwd=work, trace=d / "t.jsonl",
                     watch=work, snapdir=d / "snaps", shared=d / "shared",
                     timeout=60, backend=backend_name)
    assert run.status == 0, run.stderr_text()
    out = []
    for r in trace.calls(trace.load(d / "t.jsonl")):
        if str(r.get("path", "")).startswith(str(work)):
            line = {k: r[k] for k in SAME if k in r}
            if r["call"] == "mmap":
                line["ret"] = "addr"
            # the paths of the two runs' directories differ only there
            out.append(json.loads(json.dumps(line).replace(str(d), "D")))
    return out


def test_the_supervisor_writes_the_preloads_lines(tmp_path, progs):
    pre = watched_calls(tmp_path / "pre", "preload", progs["ops"])
    sys_ = watched_calls(tmp_path / "sys", "syscall", progs["ops"])
    assert [r["call"] for r in pre] == [
        "open", "write", "pwrite", "writev", "fsync", "ftruncate",
        "fdatasync", "mmap", "msync", "munmap", "close", "renameat",
        "open", "close"]
    # the inode numbers differ between the two runs: each its own file
    for a, b in zip(pre, sys_):
        a.pop("ino", None), b.pop("ino", None)
        for f in a.get("snap", {}).get("files", {}), \
                b.get("snap", {}).get("files", {}):
            for key in list(f):
                f["file"] = f.pop(key)
        # a listing is {directory's inode: {name: inode}}
        for dirs in a.get("snap", {}).get("dirs", {}), \
                b.get("snap", {}).get("dirs", {}):
            listings = [dirs.pop(key) for key in sorted(dirs)]
            for i, dd in enumerate(listings):
                dirs[f"dir{i}"] = {name: "ino" for name in dd}
    # open(2) is openat(2) in the kernel: the call the plan counts it as
    assert [r["call"] for r in sys_] == [
        "openat", "write", "pwrite", "writev", "fsync", "ftruncate",
        "fdatasync", "mmap", "msync", "munmap", "close", "renameat",
        "openat", "close"]
    for a, b in zip(pre, sys_):
        a.pop("call"), b.pop("call")
    assert sys_ == pre


# The calls that change names or data without write(2), made each way a
# program makes them: tests/progs/writers.c (a staging subdirectory, an
# O_TMPFILE linked through /proc, pwritev2 RWF_DSYNC, copy_file_range,
# sendfile, splice, mkdir, symlink, link) and NAMER below (the *at forms,
# rmdir, pwritev2 at the descriptor's position and appending).
NAMER = r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
static void ok(long r, const char *what)
{
	if (r < 0) {
		perror(what);
		exit(1);
	}
}
/* names made and removed with the *at calls, and pwritev2's flags */
int main(void)
{
	char a[3000], b[5000];
	struct iovec v[2] = { { a, sizeof(a) }, { b, sizeof(b) } };
	int fd;

	memset(a, 'a', sizeof(a));
	memset(b, 'b', sizeof(b));
	ok(mkdirat(AT_FDCWD, "d", 0755), "mkdirat");
	ok(fd = open("d/f", O_WRONLY | O_CREAT | O_TRUNC, 0644), "open");
	ok(pwritev2(fd, v, 2, -1, RWF_DSYNC), "pwritev2 dsync");
	ok(pwritev2(fd, v, 1, 100, RWF_SYNC), "pwritev2 sync");
	ok(pwritev2(fd, v + 1, 1, 0, RWF_APPEND), "pwritev2 append");
	ok(close(fd), "close");
	ok(symlinkat("f", AT_FDCWD, "d/s"), "symlinkat");
	ok(linkat(AT_FDCWD, "d/f", AT_FDCWD, "g", 0), "linkat");
	ok(unlinkat(AT_FDCWD, "d/s", 0), "unlinkat");
	ok(unlink("d/f"), "unlink");
	ok(rmdir("d"), "rmdir");
	return 0;
}
"""


@pytest.fixture(scope="module")
def writers(tmp_path_factory):
    d = tmp_path_factory.mktemp("syscall-writers")
    (d / "namer.c").write_text(NAMER)
    return {"writers": compile_c(d / "writers", PROGS / "writers.c"),
            "namer": compile_c(d / "namer", d / "namer.c")}


def new_call_lines(d, backend_name, argv):
    """The trace lines of a run of ARGV under BACKEND in D/work (the
    recorder on; work holds target, ../in/new the new content) that name
    a file of work, with what differs between two runs made alike: the
    run's directory, inode numbers (an O_TMPFILE's path holds its own),
    and open, which the kernel makes as openat."""
    work = d / "work"
    work.mkdir(parents=True)
    (d / "in").mkdir()
    (d / "in" / "new").write_bytes(bytes(range(256)) * 23)
    (work / "target").write_bytes(b"old\n" * 2000)
    run = runner.run([str(a) for a in argv], cwd=work, trace=d / "t.jsonl",
                     watch=work, snapdir=d / "snaps", shared=d / "shared",
                     timeout=60, backend=backend_name)
    assert run.status == 0, run.stderr_text()
    out = []
    for r in trace.calls(trace.load(d / "t.jsonl")):
        if not any(str(r.get(k, "")).startswith(str(work))
                   for k in ("path", "path2")):
            continue
        line = {k: r[k] for k in SAME if k in r and k != "ino"}
        if line["call"] == "open":
            line["call"] = "openat"
        snap = line.get("snap", {})
        files = snap.get("files", {})
        for i, key in enumerate(sorted(files)):
            files[f"file{i}"] = files.pop(key)
        dirs = snap.get("dirs", {})
        # keyed by what differs from run to run (inode numbers): in the
        # order of their listings
        listings = sorted(sorted(dirs.pop(key)) for key in list(dirs))
        for i, dd in enumerate(listings):
            dirs[f"dir{i}"] = dd
        text = json.dumps(line).replace(str(d), "D")
        out.append(json.loads(re.sub(r"#[0-9]+ \(deleted\)", "#N (deleted)",
                                     text)))
    return out


NEW_CALLS = {
    "staging": ["mkdir", "rename"],
    "tmpfile-proc": ["linkat"],
    "dsync": ["pwritev2"],
    "copy": ["copy_file_range"],
    "sendfile": ["sendfile"],
    "splice": ["splice"],
    "mkdir-both": ["mkdir"],
    "symlink": ["symlink"],
    "hardlink": ["link"],
    "namer": ["mkdirat", "pwritev2", "pwritev2", "pwritev2", "symlinkat",
              "linkat", "unlinkat", "unlink", "rmdir"],
}


@pytest.mark.parametrize("mode", sorted(NEW_CALLS))
def test_the_supervisor_writes_the_preloads_lines_of_the_new_calls(
        tmp_path, writers, mode):
    """Each call that changes a name or data without write(2) has the
    same line under both backends: its file, its flags (pwritev2's
    RWF_DSYNC, RWF_SYNC, RWF_APPEND), its offset and length, and the
    listings and files the recorder took after it."""
    argv = [writers["namer"]] if mode == "namer" else \
        [writers["writers"], mode, "target", "../in/new"]
    pre = new_call_lines(tmp_path / "pre", "preload", argv)
    sys_ = new_call_lines(tmp_path / "sys", "syscall", argv)
    calls = [r["call"] for r in pre]
    assert [c for c in calls if c in NEW_CALLS[mode]] == NEW_CALLS[mode]
    assert sys_ == pre
    if mode == "namer":
        flags = [r["flags"] for r in sys_ if r["call"] == "pwritev2"]
        assert flags == [["RWF_DSYNC"], ["RWF_SYNC"], ["RWF_APPEND"]]
        # at the descriptor's position (-1), then at 100 (an appending
        # write's line keeps the offset it was given; its file is
        # snapshotted whole)
        offs = [r.get("off") for r in sys_ if r["call"] == "pwritev2"]
        assert offs[:2] == [0, 100], offs
    if mode == "staging":
        # the rename out of stage/ shows both directories' listings
        rename = next(r for r in sys_ if r["call"] == "rename")
        assert len(rename["snap"]["dirs"]) == 2, rename


def cases_of(out):
    """{case id: verdict} of an audit, a call on a file named by what
    it is in the kernel (open is openat there)."""
    return {re.sub(r"\bopen\(", "openat(", c["id"]): c["verdict"]
            for c in results(out)}


# mode -> the verdicts its audit gives (crash-model.md)
PARITY = {
    "staging": {"ok", "not-durable"},       # stage/ synced, "." not
    "tmpfile-proc": {"ok"},
    "dsync": {"ok"},                        # RWF_DSYNC: durable at return
    "copy-nofsync": {"ok", "not-durable", "torn"},
}


@pytest.mark.parametrize("mode", sorted(PARITY))
def test_an_audit_of_the_new_calls_is_the_same_under_both_backends(
        tmp_path, writers, mode):
    """The whole sweep (faults and power cuts) of a program that stages
    its file in a new subdirectory, links an O_TMPFILE into place,
    writes with pwritev2(RWF_DSYNC) or copies with copy_file_range gives
    the same cases, with the same ids, and the same verdicts under
    either backend."""
    new = tmp_path / "new"
    new.write_bytes(bytes(range(256)) * 23)
    got = {}
    for name in ("preload", "syscall"):
        proc = cc("audit", "--backend", name, "--new", new, "--out",
                  tmp_path / name, "--", writers["writers"], mode,
                  "{target}", "{new}")
        assert proc.returncode in (0, 1), proc.stderr
        assert {c["backend"] for c in results(tmp_path / name)} == {name}
        got[name] = cases_of(tmp_path / name)
    assert got["syscall"] == got["preload"]
    assert set(got["syscall"].values()) == PARITY[mode], got["syscall"]
    calls = {"staging": "mkdir(stage)#1", "tmpfile-proc": "linkat(",
             "dsync": "pwritev2(target.tmp)#1",
             "copy-nofsync": "copy_file_range(target.tmp)#1"}[mode]
    assert any(calls in case for case in got["syscall"]), sorted(got["syscall"])


@pytest.mark.parametrize("backend_name", ["preload", "syscall"])
def test_a_failed_append_is_placed_at_the_end(tmp_path, progs, backend_name):
    # A fault on an append is aimed at the call the recorded run made at
    # the file's end: the failed call must be recorded there too, not at
    # the descriptor's position (0 on a file just opened O_APPEND), or
    # every faulted append looks like another call (git's reflogs did).
    work = tmp_path / "work"
    work.mkdir()
    (work / "target").write_bytes(b"o" * 157)
    run = runner.run([str(progs["ops"]), "open", "target", "w,append",
                      "write", "147", "write", "10"], cwd=work,
                     plan="write(target)#1=EIO", trace=tmp_path / "t.jsonl",
                     watch=work, snapdir=tmp_path / "snaps",
                     shared=tmp_path / "shared", timeout=60,
                     backend=backend_name)
    writes = [(r.get("off"), r.get("len"), r.get("errno"))
              for r in trace.calls(trace.load(tmp_path / "t.jsonl"))
              if r["call"] == "write"
              and str(r.get("path", "")).endswith("/target")]
    assert writes == [(157, 147, errno.EIO), (157, 10, 0)], run.stderr_text()


# ---------------- one rule per call: what a call keeps right for the calls after it

def traced_writes(tmp_path, ops, backend_name, steps, plan="", traced=True,
                  prepare=None):
    """A run of ops STEPS in tmp_path/work under BACKEND (traced with the
    recorder on, or not traced at all): its Run, and (path relative to
    work, errno) of each write to a file of work its trace has."""
    work = tmp_path / "work"
    work.mkdir(parents=True)
    if prepare:
        prepare(work)
    t = tmp_path / "t.jsonl"
    run = runner.run([str(ops), *map(str, steps)], cwd=work, plan=plan,
                     trace=t if traced else None,
                     watch=work, snapdir=tmp_path / "snaps" if traced else None,
                     shared=tmp_path / "shared", timeout=60, backend=backend_name)
    # (the supervisor sees the program's messages as writes too)
    writes = [(os.path.relpath(r["path"], work), r["errno"])
              for r in trace.calls(trace.load(t)) if r["call"] == "write"
              and r["path"].startswith(f"{work}/")] if traced else []
    return run, writes


def two_names(work):
    (work / "a").write_bytes(b"old\n")
    os.link(work / "a", work / "b")


@pytest.mark.parametrize("backend_name", ["preload", "syscall"])
def test_a_reopened_number_has_the_name_it_was_opened_by(tmp_path, progs,
                                                         backend_name):
    """A descriptor number closed where no backend sees it (close_range)
    and opened again on the same file by another of its names: every open
    forgets what was kept of the number it returns (faults/rules/, open_done),
    so the write names the file as it was opened this time, under either
    backend (the supervisor used to keep the old name)."""
    run, writes = traced_writes(
        tmp_path, progs["ops"], backend_name,
        ["open", "a", "rw", "write", 3, "closerange", "open", "b", "rw",
         "write", 3], prepare=two_names)
    assert run.status == 0, run.stderr_text()
    assert writes == [("a", 0), ("b", 0)]
    # a plan naming the second name fires there, and only there
    run, writes = traced_writes(
        tmp_path / "plan", progs["ops"], backend_name,
        ["open", "a", "rw", "write", 3, "closerange", "open", "b", "rw",
         "write", 3], plan="write(b)#1=EIO", prepare=two_names)
    assert writes == [("a", 0), ("b", errno.EIO)], run.stdout.decode()


@pytest.mark.parametrize("backend_name", ["preload", "syscall"])
def test_a_rename_no_trace_sees_moves_the_glob(tmp_path, progs, backend_name):
    """Without a trace, a glob rule still needs each call's path: a write
    to a descriptor whose file was renamed is on the new name. The rename
    must make every kept path stale even when nothing is recorded (the
    supervisor let an untraced rename go by without its exit stop, and
    the write kept the old name: the fault never fired)."""
    run, _ = traced_writes(
        tmp_path, progs["ops"], backend_name,
        ["open", "tmp", "w,creat", "write", 3, "rename", "tmp", "target",
         "write", 3], plan="write(target)#1=EIO", traced=False)
    assert run.stdout.decode().splitlines()[-1] == "write 3 = -1 EIO", \
        run.stdout.decode()


@pytest.mark.parametrize("backend_name", ["preload", "syscall"])
def test_paths_are_folded_alike(tmp_path, progs, backend_name):
    """A path the program spells with "..", "." and doubled slashes is
    folded before it is written or matched, under either backend (the
    supervisor matched an open's path as given: a glob relative to the
    work directory missed it)."""
    def prepare(work):
        (work / "sub").mkdir()
    run, writes = traced_writes(
        tmp_path, progs["ops"], backend_name,
        ["openat", "sub/../f", "w,creat", "write", 3, "openat", "./sub//.//g",
         "w,creat"], plan="openat(sub/g)#1=EIO", prepare=prepare)
    assert run.stdout.decode().splitlines()[-1] == \
        "openat ./sub//.//g w,creat = -1 EIO", run.stdout.decode()
    work = tmp_path / "work"
    with open(tmp_path / "t.jsonl", "rb") as f:
        lines = [json.loads(line) for line in f.read().rstrip(b"\0").splitlines()]
    opens = [r["path"] for r in lines if r.get("call") == "openat"
             and r["path"].startswith(str(work))]
    assert opens == [f"{work}/f", f"{work}/sub/g"]


def test_an_untraced_mapping_counts_its_munmap(tmp_path, progs):
    """munmap counts where it unmaps a shared mapping of a file. The
    supervisor learns of such mappings at their mmap: one made before a
    lite run's trace starts counts too, so munmap#1 is the same call
    traced or not."""
    for name in ("traced", "lite"):
        d = tmp_path / name
        work = d / "work"
        work.mkdir(parents=True)
        argv = [str(progs["ops"]), "open", "f", "rw,creat", "ftruncate",
                "4096", "mmap", "4096", "munmap"]
        run = runner.run(argv, cwd=work, plan="munmap#1=EINVAL",
                         trace=d / "t.jsonl", shared=d / "shared", timeout=60,
                         backend="syscall",
                         trace_from=None if name == "traced" else 10 ** 9)
        assert run.stdout.decode().splitlines()[-1] == "munmap = -1 EINVAL", \
            (name, run.stdout.decode())


# ------------------------------------------------ processes and threads

def test_forked_children_count_in_one_sequence(tmp_path, progs):
    """The second write to f is the child's: it is the one faulted."""
    d = tmp_path / "fork"
    d.mkdir()
    proc = cc("inject", "--backend", "syscall", "write(f)#2=EIO", "--",
              progs["ops-static"], "open", "f", "w,creat", "write", 1, "fork",
              "write", 1, cwd=d)
    lines = proc.stdout.splitlines()
    assert lines[-2:] == ["write 1 = -1 EIO", "child exited 0"], proc.stdout
    assert "crashcheck: fired write(f)#2=EIO (1 call)" in proc.stderr


def test_auto_switches_where_the_preload_misses_changes(tmp_path, progs):
    """A shell (dynamic: the preload loads) that runs a static writer:
    the preload's baseline shows a target that changed with no call to
    account for it, so auto records it again under the supervisor, which
    sees the writer; --backend preload is blind, and says so."""
    sh = ["/bin/sh", "-c", 'exec "$0" "$@"', str(progs["writer"]),
          "{target}", "{new}"]
    proc = cc("audit", "--faults", "baseline,eio,powerloss", "--out",
              tmp_path / "auto", "--", *sh)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    cases = results(tmp_path / "auto")
    assert {c["backend"] for c in cases} == {"syscall"}
    assert any(c["plan"] == "fsync(target.tmp)#1=EIO" for c in cases), \
        sorted(c["plan"] for c in cases)
    proc = cc("audit", "--backend", "preload", "--faults", "baseline",
              "--out", tmp_path / "pre", "--", *sh)
    assert proc.returncode == 1
    assert "nothing intercepted: no write, sync, rename or unlink" in proc.stderr


RAW_WRITER = r"""
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
/* dynamic, but its data goes through syscall(SYS_write), which no
 * preload sees: the temp file, fsynced (through libc), renamed, the
 * directory fsynced */
int main(int argc, char **argv)
{
	char tmp[4096];
	const char *data = "the new content\n";
	int fd, dir;

	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[1]);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || syscall(SYS_write, fd, data, strlen(data)) != (long)strlen(data)
	    || fsync(fd) || close(fd) || rename(tmp, argv[1]))
		return perror("raw"), 1;
	dir = open(".", O_RDONLY);
	if (dir < 0 || fsync(dir) || close(dir))
		return perror("raw"), 1;
	return 0;
}
"""


def test_auto_switches_for_a_raw_write_an_fsync_shows(tmp_path):
    """A dynamic program whose data goes through syscall(SYS_write): the
    preload sees its open, fsync and rename, and the fsync's snapshot
    shows data no call wrote; auto records it again under the supervisor,
    which sees the write, and faults it."""
    src = tmp_path / "raw.c"
    src.write_text(RAW_WRITER)
    exe = compile_c(tmp_path / "raw", src)
    new = tmp_path / "new"
    new.write_bytes(b"the new content\n")
    proc = cc("audit", "--faults", "baseline,eio", "--new", new,
              "--out", tmp_path / "auto", "--", exe, "{target}")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    cases = results(tmp_path / "auto")
    assert {c["backend"] for c in cases} == {"syscall"}
    assert any(c["plan"] == "write(target.tmp)#1=EIO" for c in cases), \
        sorted(c["plan"] for c in cases)


DAEMON = r"""
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
/* a daemon: forks twice, leaves the session, writes its pid, sleeps */
int main(int argc, char **argv)
{
	if (fork() == 0) {
		setsid();
		if (fork() == 0) {
			char buf[32];
			int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
			int n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
			if (fd < 0 || write(fd, buf, n) != n || close(fd) < 0)
				return 1;
			sleep(600);
			return 0;
		}
		return 0;
	}
	sleep(1);
	return 0;
}
"""


def gone(pid):
    """Whether PID has left (or is a zombie waiting for init)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


def wait_gone(pid, limit=30.0):
    """Wait until PID is gone; False if it is still there after LIMIT
    seconds (a bound for a failing test, not a measure)."""
    end = time.monotonic() + limit
    while not gone(pid):
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


def test_no_tracee_is_left_behind(tmp_path, progs):
    """A daemon the program starts (double fork, setsid) is a tracee until
    the program's first process exits and for the grace after; then, as
    under the preload, the runner's box names it and kills it."""
    src = tmp_path / "daemon.c"
    src.write_text(DAEMON)
    exe = compile_c(tmp_path / "daemon", src, "-static")
    proc = cc("trace", "--", exe, tmp_path / "pid", cwd=tmp_path)
    pid = int((tmp_path / "pid").read_text())
    try:
        assert wait_gone(pid), f"the daemon {pid} outlived its run"
        assert f"crashcheck: still running when the program ended, killed: " \
            f"pid {pid}" in proc.stderr, proc.stderr
    finally:
        if not gone(pid):
            os.kill(pid, signal.SIGKILL)


SLEEPER = r"""
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
/* writes its pid, then sleeps */
int main(int argc, char **argv)
{
	char buf[32];
	int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	if (fd < 0 || write(fd, buf, n) != n || close(fd) < 0)
		return 1;
	sleep(600);
	return 0;
}
"""


def test_a_killed_supervisor_takes_the_program(tmp_path, progs):
    src = tmp_path / "sleeper.c"
    src.write_text(SLEEPER)
    exe = compile_c(tmp_path / "sleeper", src, "-static")
    sup = subprocess.Popen([str(backend.SUPERVISOR), "--", str(exe),
                            str(tmp_path / "pid")], start_new_session=True)
    try:
        end = time.monotonic() + 30
        while not (tmp_path / "pid").exists() or \
                not (tmp_path / "pid").read_text().endswith("\n"):
            assert time.monotonic() < end, "the program never started"
            time.sleep(0.05)
        pid = int((tmp_path / "pid").read_text())
        sup.kill()
        sup.wait()
        try:
            assert wait_gone(pid), f"the program {pid} outlived its supervisor"
        finally:
            if not gone(pid):
                os.kill(pid, signal.SIGKILL)
    finally:
        if sup.poll() is None:
            sup.kill()
            sup.wait()


# -------------------------------------------------------------- io_uring

URING = r"""
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
/* sets up an io_uring (and writes its target the plain way) */
int main(int argc, char **argv)
{
	char params[120];
	long ring;
	int fd;

	memset(params, 0, sizeof(params));
	ring = syscall(SYS_io_uring_setup, 4, params);
	if (ring < 0) {
		perror("io_uring_setup");
		return 77;
	}
	fd = open(argv[1], O_WRONLY | O_TRUNC);
	if (fd < 0 || write(fd, "new\n", 4) != 4 || fsync(fd) || close(fd))
		return 1;
	return 0;
}
"""


def test_io_uring_is_said_not_seen(tmp_path, progs):
    src = tmp_path / "uring.c"
    src.write_text(URING)
    exe = compile_c(tmp_path / "uring", src, "-static")
    (tmp_path / "target").write_text("old\n")
    proc = cc("trace", "--", exe, "target", cwd=tmp_path)
    if proc.returncode == 77:
        pytest.skip(f"io_uring unavailable here: {proc.stderr.strip()}")
    assert proc.returncode == 0, proc.stderr
    assert ("crashcheck: the program set up an io_uring (io_uring_setup#1): "
            "I/O it submits there is neither faulted nor traced") in proc.stderr
    (tmp_path / "new").write_text("new\n")
    proc = cc("audit", "--contract", "in-place", "--new", tmp_path / "new",
              "--out", tmp_path / "out", "--", exe, "{target}")
    assert proc.returncode == 1
    cases = results(tmp_path / "out")
    assert [c["verdict"] for c in cases] == ["harness-error"]
    assert "io_uring_setup#1" in cases[0]["finding"]


# ------------------------------------------------------ scratch limit

SETSID_WRITER = r"""
#include <fcntl.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
/* a child in a session of its own writes over the same bytes of f ten
 * times, other bytes each time, then sleeps; the parent waits for it */
int main(void)
{
	static char buf[300000];
	pid_t pid = fork();

	if (pid == 0) {
		int fd;

		setsid();
		fd = open("f", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		for (int i = 0; i < 10; i++) {
			memset(buf, 'a' + i, sizeof(buf));
			if (pwrite(fd, buf, sizeof(buf), 0) != sizeof(buf))
				return 1;
		}
		sleep(600);
		return 0;
	}
	waitpid(pid, NULL, 0);
	return 0;
}
"""


def test_the_scratch_limit_stops_the_program_not_a_group(tmp_path, progs):
    """Past the scratch limit the supervisor (which takes the snapshots)
    says why in the note and kills every process of the program, one
    that left the process group included, then itself alone: nothing of
    the program outlives the run, and a shell that started the
    supervisor in its own group goes on."""
    src = tmp_path / "setsid.c"
    src.write_text(SETSID_WRITER)
    exe = compile_c(tmp_path / "setsid", src)
    work = tmp_path / "w"
    work.mkdir()
    snaps = tmp_path / "snaps"
    snaps.mkdir()
    run = runner.run([str(exe)], cwd=work, trace=tmp_path / "t", watch=work,
                     snapdir=snaps, shared=tmp_path / "s", limit=1 << 20,
                     note=tmp_path / "note", timeout=120, backend="syscall")
    assert run.signal == 9 and not run.timed_out, run
    assert run.outlived == [], run.outlived
    assert (tmp_path / "note").read_text() == "limit-stored 1048576\n"
    assert sum(p.stat().st_size for p in snaps.iterdir()) <= (1 << 20) + 300000
    # the supervisor in the group of a shell that waits for it
    w2 = tmp_path / "w2"
    w2.mkdir()
    env = runner.build_env("", tmp_path / "t2", w2, tmp_path / "snaps2",
                           tmp_path / "s2", limit=1 << 20,
                           note=tmp_path / "note2", backend="syscall")
    (tmp_path / "snaps2").mkdir()
    proc = subprocess.run(
        ["/bin/sh", "-c", '"$0" -- "$1"; echo "supervisor ended $?"',
         str(backend.SUPERVISOR), str(exe)], cwd=w2, env=env,
        capture_output=True, text=True, timeout=120, start_new_session=True)
    assert proc.stdout == "supervisor ended 137\n", (proc.stdout, proc.stderr)
    assert (tmp_path / "note2").read_text() == "limit-stored 1048576\n"


def test_the_scratch_limit_is_reported_as_for_the_preload(tmp_path, progs):
    """A file past --scratch-limit: the baseline of either backend is the
    same harness-error, naming the limit."""
    sparse = compile_c(tmp_path / "sparse", PROGS / "sparse.c")
    found = {}
    for name in ("preload", "syscall"):
        proc = cc("audit", "--backend", name, "--check", "/bin/true",
                  "--target", "t", "--scratch-limit", "2M", "--out",
                  tmp_path / name, "--", sparse, "t", str(3 << 20))
        # crashcheck's own scratch stopped it: exit 2 (issue 31)
        assert proc.returncode == 2, proc.stderr
        cases = results(tmp_path / name)
        assert [(c["id"], c["verdict"], c["backend"]) for c in cases] == \
            [("sparse-baseline", "harness-error", name)]
        found[name] = cases[0]["finding"]
    assert found["syscall"] == found["preload"] == (
        "crashcheck's scratch limit: 't.tmp' is 3.0 MiB, more than the "
        "2.0 MiB a run may take (--scratch-limit)")


# ---------------------------------------------- lite and thin runs alike

def test_lite_and_thin_runs_stand_as_whole_ones(tmp_path, progs):
    """The supervisor honours CRASHCHECK_TRACE_FROM and _FULL as the
    preload does: the sweep's first runs give the whole runs' verdicts."""
    docs = []
    for extra in ((), ("--whole-traces",)):
        out = tmp_path / ("whole" if extra else "part")
        proc = cc("audit", *extra, "--out", out, "--", progs["writer"],
                  "--no-dir-fsync", "{target}", "{new}")
        assert proc.returncode == 1, proc.stderr
        docs.append([(c["id"], c["verdict"], c["finding"]) for c in results(out)])
    assert docs[0] == docs[1]


# --------------------------------------------- the corpus, both backends

def test_the_corpus_gets_the_same_verdicts(tmp_path):
    """Every spec of the built-in corpus, at one size, under each backend:
    both runs pass (the correct workloads are clean, every variant is
    caught), and the verdicts of the cases that do not depend on which
    calls a backend can fault (the baselines and the power cuts) are the
    same."""
    specs = tmp_path / "specs"
    specs.mkdir()
    for p in SPECS.glob("*.toml"):
        text = p.read_text()
        start = text.index("\nsizes = [")
        end = text.index("]", start)
        (specs / p.name).write_text(text[:start] + "\nsizes = [4097" + text[end:])
    got = {}
    for name in ("preload", "syscall"):
        proc = cc("run", *sorted(specs.glob("*.toml")), "--backend", name,
                  "--out", tmp_path / name, timeout=900)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
        cases = results(tmp_path / name)
        assert {c["backend"] for c in cases} == {name}
        got[name] = {}
        for c in cases:
            if c["kind"] in ("baseline", "powerloss"):
                key = (c["workload"], c["strategy"], c["kind"], c["model"])
                got[name].setdefault(key, set()).add(c["verdict"])
    assert got["syscall"] == got["preload"]


# ------------------------------------------------------ choosing, errors

def test_auto_chooses_by_the_program(tmp_path, progs, request):
    assert backend.choose(str(progs["writer"]))[0] == "syscall"
    assert backend.choose(str(progs["ops"])) == ("preload", "")
    assert backend.choose("/bin/sh") == ("preload", "")
    script = tmp_path / "s.sh"
    script.write_text("#!/bin/sh\n")
    assert backend.choose(str(script)) == ("preload", "")
    assert backend.choose(str(tmp_path / "missing")) == ("preload", "")


def test_auto_chooses_go(request):
    gw = request.getfixturevalue("gowriter")
    assert backend.choose(str(gw)) == ("syscall", "gowriter is a Go program")


@pytest.mark.parametrize("cmd", [
    ["inject", "--backend", "ptrace", "fsync#1=EIO", "--", "true"],
    ["trace", "--backend", "", "--", "true"],
    ["audit", "--backend", "preloads", "--", "true", "{target}"],
    ["run", "--backend", "x", str(SPECS / "replace.toml")],
])
def test_a_bad_backend_is_one_line_and_exit_2(cmd):
    proc = cc(*cmd)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--backend" in lines[0], proc.stderr


def test_the_supervisor_refuses_what_the_preload_refuses(tmp_path, progs):
    env = dict(os.environ, CRASHCHECK_PLAN="fsync#0=EIO")
    proc = subprocess.run([str(backend.SUPERVISOR), str(progs["writer"])],
                          env=env, capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr == ("crashcheck: bad CRASHCHECK_PLAN: calls count "
                           "from 1 at '#0'\n")
    proc = subprocess.run([str(backend.SUPERVISOR), str(tmp_path / "nope")],
                          capture_output=True, text=True)
    assert proc.returncode == 127
    assert proc.stderr == (f"crashcheck: cannot run {tmp_path / 'nope'}: "
                           "No such file or directory\n")
    with pytest.raises(runner.SetupError, match="program not found"):
        runner.run([str(tmp_path / "nope")], cwd=tmp_path, backend="syscall")


# ------------------------------------------------ where a call was made

# The supervisor records the return addresses on the thread's stack
# (faults/syscall/unwind.c) and a finding names the program's own line,
# not libc's or Go's write wrapper (harness/judging/symbols.site).

def line_of(source, text):
    """The line number of SOURCE holding TEXT, once."""
    lines = [i for i, line in enumerate(source.read_text().splitlines(), 1)
             if text in line]
    assert len(lines) == 1, (source, text, lines)
    return lines[0]


@pytest.mark.parametrize("lang", ["c", "c-dynamic", "go"])
def test_a_finding_names_its_source_line(tmp_path, request, lang):
    if lang == "go":
        exe, dash = request.getfixturevalue("gowriter"), "-"
        source, call = PROGS / "writer.go", "os.Rename(tmp, target)"
    else:
        # -g: the program has lines; a static libc has none, and a
        # dynamic one's (with libc6-dbg) are passed over
        exe = compile_c(tmp_path / "writer", PROGS / "writer.c", "-g",
                        *(["-static"] if lang == "c" else []))
        dash, source, call = "--", PROGS / "writer.c", "rename(tmp, argv[i])"
    proc = cc("audit", "--backend", "syscall", "--out", tmp_path / "out",
              "--", exe, dash + "no-dir-fsync", "{target}", "{new}",
              cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    found = [c for c in results(tmp_path / "out") if c["verdict"] != "ok"]
    assert found and {c["verdict"] for c in found} == {"not-durable"}
    line = line_of(source, call)
    for c in found:
        loc = c["location"]
        assert (os.path.basename(loc["file"]), loc["line"]) == \
            (source.name, line), c["id"]
        assert loc["function"] == ("main.main" if lang == "go" else "main")
        assert loc["object"] == str(exe)
    assert f"at {source.name}:{line} (" in proc.stdout
    assert len({c["cause"]["key"] for c in found}) == 1


# A writer whose temporary file has a random name (mkstemp in the target's
# directory), and that never looks at what write returns: each faulted
# write is one case, each case's temp file has another name, and all are
# one defect of one call site.
TMPNAME = r"""
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	static char data[1 << 16];
	char tmp[4096];
	ssize_t len;
	int in = open(argv[2], O_RDONLY), fd, dir;

	if (argc != 3 || in < 0 || (len = read(in, data, sizeof(data))) < 0)
		return 2;
	close(in);
	snprintf(tmp, sizeof(tmp), "%s.XXXXXX", argv[1]);
	if ((fd = mkstemp(tmp)) < 0)
		return 1;
	for (ssize_t off = 0; off < len; off += 4096)
		(void)!write(fd, data + off, len - off < 4096 ? len - off : 4096);
	if (fsync(fd) || close(fd) || rename(tmp, argv[1]))
		return 1;
	if ((dir = open(".", O_RDONLY)) < 0 || fsync(dir) || close(dir))
		return 1;
	return 0;
}
"""


def test_a_random_temp_name_does_not_split_a_defect(tmp_path):
    src = tmp_path / "tmpname.c"
    src.write_text(TMPNAME)
    exe = compile_c(tmp_path / "tmpname", src, "-static")
    new = tmp_path / "new"
    new.write_bytes(bytes(range(256)) * 40)     # three writes
    proc = cc("audit", "--backend", "syscall", "--new", new,
              "--out", tmp_path / "out", "--", exe, "{target}", "{new}",
              cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    found = [c for c in results(tmp_path / "out")
             if c["verdict"] != "ok" and c["kind"] in ("eio", "enospc")]
    # the names differ from case to case: mkstemp's
    names = {c["cause"]["file"] for c in found}
    assert len(found) >= 3 and len(names) >= 3, found
    assert all(n.startswith("target.") for n in names)
    # one call site, one rule: one defect
    by_rule = {}
    for c in found:
        by_rule.setdefault((c["verdict"], c["cause"]["rule"]), set()).add(
            c["cause"]["key"])
    assert all(len(keys) == 1 for keys in by_rule.values()), by_rule
    # no debug information: the site is the object and offset of a frame
    assert all(c["location"]["object"] == str(exe) for c in found)


@pytest.mark.parametrize("backend", ["preload", "syscall"])
def test_a_close_that_fails_frees_the_descriptor(tmp_path, backend):
    """Linux frees the descriptor of a close that fails: an injected EIO
    on close did not (libfiu's wrapper, and the supervisor, skipped the
    call), and a shell pipeline whose writer's close failed left its
    reader waiting for an end that never came: a false hang."""
    exe = tmp_path / "closefail"
    compile_c(exe, PROGS / "closefail.c")
    proc = cc("inject", "--backend", backend, "close(victim)#1=EIO", "--",
              exe, cwd=tmp_path, timeout=60)
    assert proc.stdout == "close failed: Input/output error\nclosed\n", \
        proc.stdout + proc.stderr
    assert proc.returncode == 0
    assert "crashcheck: fired close(victim)#1=EIO (1 call)" in proc.stderr, \
        proc.stderr
