"""The harness against itself: sanitized programs, hangs and signals, huge
output, forking programs, determinism, isolation, bad input everywhere, and
a real full disk.

A harness that is itself flaky, leaky or fooled is worse than none, so
each property here is checked from the outside: processes are looked for
in /proc, files in a private mount namespace, results compared byte for
byte. Tests that need root (mounts) or a compiler feature skip with the
reason when they cannot run.
"""

import errno
import json
import os
import re
import shutil
import signal
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from procs import alive as _alive, group_members as _group_members

from harness import ROOT
from harness.judging import explorer, payload
from harness.engine import forkserver, fullfs, runner
from harness.engine import sanitizers, spec as specmod, trace as tracemod

CRASHCHECK = ROOT / "scripts" / "crashcheck"
BIN = ROOT / "workloads" / "bin"
PROGS = Path(__file__).resolve().parent / "progs"
FUZZ = ROOT / "fuzz" / "fuzz_py.py"
PYTHON = "/usr/bin/python3"


def cli(*args, cwd=None, env=None, timeout=120):
    return subprocess.run([str(CRASHCHECK), *map(str, args)], cwd=cwd or ROOT,
                          env=env, capture_output=True, text=True,
                          timeout=timeout)


def one_error_line(proc):
    """The single `crashcheck: ...` line of a usage error (exit 2), and
    nothing else on stderr."""
    lines = proc.stderr.splitlines()
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("crashcheck: "), lines
    return lines[0]


def write_spec(path, name, command, *, strategies=None, sizes=(4097,),
               contract="atomic", check=None, timeout=None, extra=""):
    text = [f'name = "{name}"', f'description = "hardening probe {name}"',
            f"command = {json.dumps(list(command))}"]
    if strategies:
        text.append(f"strategies = {json.dumps(list(strategies))}")
    if check:
        text.append(f"check = {json.dumps(list(check))}")
    else:
        text.append(f'contract = "{contract}"')
    text.append(f"sizes = {json.dumps(list(sizes))}")
    if timeout is not None:
        text.append(f"timeout = {timeout}")
    path.write_text("\n".join(text) + "\n" + extra)
    return path


def results(out):
    with open(out / "results.json") as fh:
        return json.load(fh)


def by_id(data):
    return {c["id"]: c for c in data["cases"]}


@pytest.fixture(scope="session")
def built():
    for path in (runner.FAULT_LIB, runner.FIU_PRELOAD, BIN / "replace"):
        if not path.is_file():
            pytest.fail(f"{path} missing: run 'make'")


def compile_c(out, source, *flags):
    proc = subprocess.run(["cc", "-O1", "-g", "-Wall", "-Wextra", *flags,
                           "-o", str(out), str(source)],
                          capture_output=True, text=True)
    return proc


@pytest.fixture(scope="session")
def ops(tmp_path_factory):
    """tests/progs/ops.c, plain."""
    out = tmp_path_factory.mktemp("hard-progs") / "ops"
    proc = compile_c(out, PROGS / "ops.c")
    if proc.returncode != 0:
        pytest.fail(f"cc ops.c failed:\n{proc.stderr}")
    return out


# ------------------------------------------------------------ sanitizers

# A program with a heap overflow when given an argument, and a clean run
# of open/write/fsync/close otherwise.
OVERFLOW_C = r"""
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	if (argc > 2) {
		volatile char *p = malloc(8);
		int i = atoi(argv[2]);
		p[i] = 1;		/* i = 8: one past the end */
		printf("%d\n", p[0]);
		free((void *)p);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "ubsan")) {
		volatile int big = 2147483647;
		printf("%d\n", big + 1);	/* signed overflow */
		return 0;
	}
	return 0;
}
"""


@pytest.fixture(scope="session")
def asan_progs(tmp_path_factory):
    """ops.c and OVERFLOW_C built with gcc's ASan and UBSan (the runtime
    linked dynamically, as `make SANITIZE=address,undefined` does), and
    OVERFLOW_C with UBSan alone."""
    d = tmp_path_factory.mktemp("asan")
    flags = ("-fsanitize=address,undefined", "-fno-sanitize-recover=all",
             "-fno-omit-frame-pointer")
    proc = compile_c(d / "ops", PROGS / "ops.c", *flags)
    if proc.returncode != 0:
        pytest.skip(f"cannot build with AddressSanitizer here: "
                    f"{proc.stderr.strip().splitlines()[-1:]}")
    (d / "overflow.c").write_text(OVERFLOW_C)
    for name, fl in (("overflow", flags),
                     ("ubsan", ("-fsanitize=undefined",
                                "-fno-sanitize-recover=all"))):
        proc = compile_c(d / name, d / "overflow.c", *fl)
        assert proc.returncode == 0, proc.stderr
    return d


def test_elf_needed_lists_the_dynamic_dependencies(tmp_path, asan_progs):
    assert "libc.so.6" in sanitizers.needed("/bin/sh")
    asan = sanitizers.needed(asan_progs / "ops")
    assert any(n.startswith("libasan.so") for n in asan), asan
    ub = sanitizers.needed(asan_progs / "ubsan")
    assert any(n.startswith("libubsan.so") for n in ub), ub
    assert not any(n.startswith("libasan.so") for n in ub)
    # not dynamically linked ELF: nothing, and never an exception
    script = tmp_path / "s.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    junk = tmp_path / "junk"
    junk.write_bytes(b"\x7fELF\x02\x01\x01" + os.urandom(200))
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    for p in (script, junk, empty, tmp_path / "absent", tmp_path):
        assert sanitizers.needed(p) == ()


def test_static_binary_needs_nothing(tmp_path):
    out = tmp_path / "static"
    proc = compile_c(out, PROGS / "ops.c", "-static")
    if proc.returncode != 0:
        pytest.skip("no static libc here")
    assert sanitizers.needed(out) == ()


def test_asan_runtime_goes_first_and_options_abort(asan_progs):
    env = runner.build_env(base={"ASAN_OPTIONS": "detect_leaks=0",
                                 "PATH": "/usr/bin:/bin"},
                           program=str(asan_progs / "ops"), cwd="/")
    first = env["LD_PRELOAD"].split()[0]
    assert first.startswith("libasan.so"), env["LD_PRELOAD"]
    assert env["LD_PRELOAD"].split()[1] == str(runner.FAULT_LIB)
    # ours first, the caller's after: theirs wins where they disagree
    assert env["ASAN_OPTIONS"] == (f"{sanitizers.SANITIZER_OPTIONS}:"
                                   "detect_leaks=0")
    assert env["UBSAN_OPTIONS"] == sanitizers.SANITIZER_OPTIONS
    plain = runner.build_env(base={}, program="/bin/sh", cwd="/")
    assert plain["LD_PRELOAD"].split()[0] == str(runner.FAULT_LIB)
    assert "ASAN_OPTIONS" not in plain


def test_asan_program_without_the_runtime_first_aborts(asan_progs, tmp_path,
                                                       built):
    """Why the runner detects ASan: with only our preloads the runtime
    refuses to start. If this ever passes, the detection can go."""
    env = dict(os.environ, LD_PRELOAD=f"{runner.FAULT_LIB} {runner.FIU_PRELOAD}")
    proc = subprocess.run([str(asan_progs / "ops")], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode != 0
    assert "ASan runtime does not come first" in proc.stderr


def start(how, argv, tmp_path, **kw):
    """A run of argv exec'd, or forked from a fork server of it (the
    sweep's way): ASan must not tell them apart."""
    if how == "exec":
        return runner.run(argv, cwd=tmp_path, timeout=30, **kw)
    home = tmp_path / "home"
    home.mkdir()
    server = forkserver.ForkServer(argv, home=home, timeout=30)
    try:
        return server.run(cwd=tmp_path, timeout=30, **kw)
    finally:
        server.close()


@pytest.mark.parametrize("how", ["exec", "served"])
@pytest.mark.parametrize("plan,step,want", [
    ("fsync#1=EIO", "fsync = -1 EIO", 0),
    ("write#1=short:100", "write 4096 = 100", 0),
    ("write#2+=ENOSPC", "write 4096 = -1 ENOSPC", 0),
    ("rename#1=crash", None, -signal.SIGKILL),
])
def test_faults_fire_in_an_asan_program(asan_progs, tmp_path, built, plan,
                                        step, want, how):
    """The regression test of the two defects behind 'ASan and the fault
    library': the runtime must come first (runner), and our library must
    not initialize from ASan's preinit, before libc has set environ, or
    it runs the whole program with no plan (faults/preload.c)."""
    argv = [str(asan_progs / "ops"), "open", "f.tmp", "w,creat", "write",
            "4096", "write", "4096", "fsync", "close", "rename", "f.tmp", "f"]
    tr = tmp_path / "trace.jsonl"
    run = start(how, argv, tmp_path, plan=plan, trace=tr,
                shared=tmp_path / "shared")
    records = tracemod.load(tr)
    fired = tracemod.fired(records, [plan])
    assert fired[0].count == 1, (run.stderr_text(), records)
    if want < 0:
        assert run.signal == -want
    else:
        assert run.status == want, run.stderr_text()
        assert step in run.stdout.decode(), run.stdout.decode()
    assert "AddressSanitizer" not in run.stderr_text()


def test_inject_reaches_an_asan_program(asan_progs, tmp_path, built):
    proc = cli("inject", "fsync#1=EIO", "--", asan_progs / "ops", "open",
               "f", "w,creat", "write", "10", "fsync", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "fsync = -1 EIO" in proc.stdout
    assert "crashcheck: fired fsync#1=EIO (1 call)" in proc.stderr


@pytest.mark.parametrize("how", ["exec", "served"])
@pytest.mark.parametrize("prog,args", [("overflow", ["x", "8"]),
                                       ("ubsan", ["ubsan"])])
def test_sanitizer_report_is_a_crash_not_a_failure(asan_progs, tmp_path,
                                                   built, prog, args, how):
    """A sanitizer's report must not pass for `exit 1, said why`: under
    the runner it ends in SIGABRT, which the oracle judges `crashed`."""
    run = start(how, [str(asan_progs / prog), *args], tmp_path)
    assert run.signal == signal.SIGABRT, (run.status, run.stderr_text())
    assert re.search(r"(AddressSanitizer|runtime error)", run.stderr_text())
    from harness.judging import oracle
    v = oracle.judge(oracle.Outcome(contract="atomic", old=b"o", new=b"n",
                                    signal=run.signal, kind="baseline"))
    assert v.verdict == "crashed"


# ---------------------------------------------------- hangs and signals

def test_timeout_kills_the_whole_process_group(tmp_path):
    """A program that forks a sleeper and sleeps itself: at the time limit
    both are gone, not only the leader."""
    script = ('echo $$ > leader; sleep 300 & echo $! > child; '
              '(sleep 300; :) & echo $! > grandparent; wait')
    start = time.monotonic()
    run = runner.run(["/bin/sh", "-c", script], cwd=tmp_path, timeout=0.5,
                     preload=False)
    assert run.timed_out and run.signal == signal.SIGKILL
    assert time.monotonic() - start < 10
    leader = int((tmp_path / "leader").read_text())
    children = [int((tmp_path / n).read_text()) for n in ("child", "grandparent")]
    deadline = time.monotonic() + 5
    while (_group_members(leader) or any(map(_alive, children))) \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _group_members(leader) == []
    assert not any(map(_alive, children))


def test_children_left_by_a_finished_leader_are_killed(tmp_path):
    """The leader exits at once, its child would keep writing into the
    scratch: the group dies with the leader."""
    run = runner.run(["/bin/sh", "-c", "sleep 300 & echo $! > child"],
                     cwd=tmp_path, timeout=30, preload=False)
    assert run.status == 0 and not run.timed_out
    child = int((tmp_path / "child").read_text())
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


@pytest.mark.parametrize("start", ["posix_spawn", "Popen"])
@pytest.mark.parametrize("signame,exc", [("SIGINT", "KeyboardInterrupt"),
                                         ("SIGTERM", "SystemExit")])
def test_interrupt_while_the_program_starts_still_kills_it(tmp_path, signame,
                                                           exc, start):
    """^C (or SIGTERM, which the CLI turns into SystemExit) that lands
    while the program is being started, after the child exists: the
    program must not be left running with nobody to kill its group. The
    signal is sent from inside the starting call, where it used to escape:
    posix_spawn, which run() uses where it may change directory (the
    pool's processes), and Popen, which it uses in a thread."""
    probe = textwrap.dedent(f"""
        import os, signal, subprocess, sys, threading
        sys.path.insert(0, {str(ROOT)!r})
        from harness.commands import cli
        from harness.engine import runner
        signal.signal(signal.SIGTERM, cli._terminate)
        if {start!r} == "Popen":
            real = subprocess.Popen
            def popen(*a, **k):
                p = real(*a, **k)
                print(p.pid, flush=True)
                os.kill(os.getpid(), signal.{signame})
                return p
            runner.subprocess.Popen = popen
            # a second thread: run() may not change directory, so Popen
            ev = threading.Event()
            threading.Thread(target=ev.wait, daemon=True).start()
        else:
            real = os.posix_spawn
            def spawn(*a, **k):
                pid = real(*a, **k)
                print(pid, flush=True)
                os.kill(os.getpid(), signal.{signame})
                return pid
            os.posix_spawn = spawn
        try:
            runner.run(["/bin/sleep", "300"], cwd={str(tmp_path)!r},
                       timeout=60, preload=False)
        except BaseException as e:
            print(type(e).__name__)
    """)
    proc = subprocess.run([PYTHON, "-c", probe], capture_output=True,
                          text=True, timeout=60)
    pid, what = proc.stdout.split()
    assert what == exc, proc.stdout + proc.stderr
    leader = int(pid)
    deadline = time.monotonic() + 5
    while _group_members(leader) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _group_members(leader) == []


@pytest.fixture(scope="module")
def signal_sweep(tmp_path_factory, built):
    """One sweep over programs that hang, die of signals they raise
    themselves, or print without end, each a baseline case."""
    tmp = tmp_path_factory.mktemp("signals")
    # sleep's argument doubles as a marker to look for in /proc
    marker = f"300.{os.getpid()}"
    specs = [
        write_spec(tmp / "hang.toml", "hang",
                   ["/bin/sh", "-c", f"sleep {marker} & sleep {marker}",
                    "sh", "{target}"], timeout=1),
        write_spec(tmp / "segv.toml", "segv",
                   ["/bin/sh", "-c", "kill -SEGV $$", "sh", "{target}"]),
        write_spec(tmp / "abrt.toml", "abrt",
                   ["/bin/sh", "-c", "kill -ABRT $$", "sh", "{target}"]),
        write_spec(tmp / "kill.toml", "selfkill",
                   ["/bin/sh", "-c", "kill -KILL $$", "sh", "{target}"]),
        write_spec(tmp / "loud.toml", "loud",
                   ["/bin/sh", "-c", 'head -c 3000000 /dev/zero | tr "\\0" x >&2;'
                    ' cp "$2" "$1"', "sh", "{target}", "{new}"]),
    ]
    out = tmp / "out"
    proc = cli("run", *specs, "--faults", "baseline", "--out", out, "--jobs", "2",
               timeout=300)
    return proc, out, marker


def test_hang_is_judged_hang_and_its_group_is_gone(signal_sweep):
    proc, out, marker = signal_sweep
    case = by_id(results(out))["hang-4097B-baseline"]
    assert case["verdict"] == "hang", case
    assert case["exit"]["timed_out"] is True
    assert case["exit"]["signal"] == signal.SIGKILL
    left = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                if fh.read().split(b"\0")[1:2] == [marker.encode()] \
                        and _alive(int(entry)):
                    left.append(entry)
        except (OSError, ValueError):
            continue
    assert left == []


@pytest.mark.parametrize("name,sig", [("segv", "SIGSEGV"), ("abrt", "SIGABRT"),
                                      ("selfkill", "SIGKILL")])
def test_death_by_a_signal_we_did_not_send_is_crashed(signal_sweep, name, sig):
    proc, out, _ = signal_sweep
    case = by_id(results(out))[f"{name}-4097B-baseline"]
    assert case["verdict"] == "crashed", case
    assert case["exit"]["signal"] == signal.Signals[sig].value
    assert sig in case["finding"]
    assert case["passed"] is False          # a correct workload may not crash
    assert proc.returncode == 1


def test_stored_output_is_capped(signal_sweep):
    _, out, _ = signal_sweep
    case = by_id(results(out))["loud-4097B-baseline"]
    assert case["exit"]["status"] == 0
    assert len(case["stderr"]) < runner.OUTPUT_CAP + 200
    assert case["stderr"].endswith(f"[stderr truncated: the first "
                                   f"{runner.OUTPUT_CAP} of "
                                   f"{case['output']['stderr']} bytes kept]")
    assert case["output"]["stderr"] > runner.OUTPUT_CAP


def test_huge_output_is_capped_without_blowing_memory(tmp_path):
    """100 MB on stdout and on stderr: what is kept is OUTPUT_CAP bytes of
    each, and the harness's memory does not grow with what was printed
    (measured in a child process, whose peak RSS is its own)."""
    probe = textwrap.dedent(f"""
        import resource, sys
        sys.path.insert(0, {str(ROOT)!r})
        from harness.engine import runner
        script = "head -c 100000000 /dev/zero; head -c 100000000 /dev/zero >&2"
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        r = runner.run(["/bin/sh", "-c", script], cwd={str(tmp_path)!r},
                       timeout=120, preload=False)
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(len(r.stdout), len(r.stderr), r.stdout_truncated,
              r.stderr_truncated, r.status, after - before)
    """)
    proc = subprocess.run([PYTHON, "-c", probe], capture_output=True, text=True,
                          timeout=180)
    assert proc.returncode == 0, proc.stderr
    n_out, n_err, cut_out, cut_err, status, grew_kb = proc.stdout.split()
    assert (int(n_out), int(n_err)) == (runner.OUTPUT_CAP, runner.OUTPUT_CAP)
    assert (cut_out, cut_err, status) == ("True", "True", "0")
    assert int(grew_kb) < 20 * 1024, f"peak RSS grew by {grew_kb} KiB"


# ------------------------------------------------ programs that fork

@pytest.fixture(scope="module")
def fork_sweep(tmp_path_factory, ops, built):
    """ops opens the temp file and writes once, forks; the child writes
    again, fsyncs and renames. One counter sequence across both."""
    tmp = tmp_path_factory.mktemp("fork")
    s = write_spec(tmp / "fork.toml", "forker",
                   [str(ops), "open", "{target}.tmp", "w,creat,trunc", "write",
                    "100", "fork", "write", "4000", "fsync", "close", "rename",
                    "{target}.tmp", "{target}"],
                   check=["/bin/true", "{target}"])
    out = tmp / "out"
    proc = cli("run", s, "--faults", "baseline,eio,crash", "--model", "posix",
               "--out", out, "--keep", timeout=300)
    return proc, out


def test_forked_child_is_traced_in_one_sequence(fork_sweep):
    proc, out = fork_sweep
    records = tracemod.load(out / ".work" / "forker-4097B" / "trace.jsonl")
    writes = [r for r in tracemod.calls(records) if r["call"] == "write"]
    assert [w["n"] for w in writes] == [1, 2]
    parent = next(r["pid"] for r in records if r["ev"] == "init")
    assert writes[0]["pid"] == parent
    assert writes[1]["pid"] != parent           # the child's
    assert {r["pid"] for r in tracemod.calls(records)
            if r["call"] in ("fsync", "rename")} == {writes[1]["pid"]}


def test_faults_are_injected_in_the_child(fork_sweep):
    proc, out = fork_sweep
    cases = by_id(results(out))
    for cid in ("forker-4097B-write(target.tmp)#2=EIO",
                "forker-4097B-fsync(target.tmp)#1=EIO",
                "forker-4097B-rename(target.tmp)#1=crash"):
        assert cases[cid]["fired"] == [{"rule": cid.split("-", 2)[2],
                                        "count": 1}], cases[cid]
        assert cases[cid]["verdict"] != "harness-error", cases[cid]
    # ops prints what the fsync returned on stdout, not stderr, and carries
    # on: a swallowed error; but its checker (/bin/true) takes every state
    # for the new content, so the new content was durable before the
    # child's fsync and its failure could lose nothing: off the data path
    fsync = cases["forker-4097B-fsync(target.tmp)#1=EIO"]
    assert (fsync["verdict"], fsync["note"], fsync["exit"]["status"]) == \
        ("ok", "", 0), fsync
    # the child's SIGKILL reaches the parent, which exits 128+9
    assert cases["forker-4097B-rename(target.tmp)#1=crash"]["exit"]["status"] \
        == 137


# ------------------------------------------------------- determinism

def _without_timing(path):
    data = json.loads(Path(path).read_text())
    data["summary"].pop("timing", None)
    for c in data["cases"]:
        c.pop("duration", None)
    return json.dumps(data, indent=1, sort_keys=True)


def test_same_sweep_twice_gives_identical_results(tmp_path, built):
    """Two sweeps of the same specs (a correct workload and a buggy
    variant, every fault kind, both models), with different job counts,
    into the same --out: results.json is byte-identical apart from the
    timing fields (report.py's summary.timing, each case's duration)."""
    s1 = write_spec(tmp_path / "replace.toml", "replace",
                    ["{bin}/replace", "--strategy={strategy}", "{target}", "{new}"],
                    strategies=["stdio", "mmap"], sizes=[4097])
    variant = specmod.load(ROOT / "workloads" / "specs" / "no-dir-fsync.toml")
    s2 = write_spec(tmp_path / "variant.toml", variant.name,
                    list(variant.command),
                    strategies=variant.strategies[:1], sizes=variant.sizes[:1])
    out = tmp_path / "out"
    texts = []
    for jobs in ("1", "2"):
        proc = cli("run", s1, s2, "--out", out, "--jobs", jobs, timeout=300)
        assert proc.returncode in (0, 1), proc.stderr[-2000:]
        texts.append(_without_timing(out / "results.json"))
    assert len(json.loads(texts[0])["cases"]) > 50
    if texts[0] != texts[1]:
        import difflib
        diff = "\n".join(list(difflib.unified_diff(
            texts[0].splitlines(), texts[1].splitlines(), lineterm="", n=1))[:60])
        pytest.fail(f"results.json differs between two identical sweeps:\n{diff}")


def test_mmap_address_is_not_in_the_excerpt():
    rec = {"ev": "call", "seq": 3, "call": "mmap", "n": 1, "fd": 3,
           "ret": 140339893362688, "errno": 0, "off": 0, "len": 4097}
    assert tracemod.format_call(rec).endswith("= <addr>")
    failed = dict(rec, ret=-1, errno=errno.ENOMEM)
    assert tracemod.format_call(failed).endswith("= -1 ENOMEM")


# ---------------------------------------------------------- isolation

NAMESPACE = r"""
# A private view (tests/private-mounts.sh): anything written outside the
# output directory either fails or shows up below.
. "$ROOT/tests/private-mounts.sh"
mkdir -p /tmp/in /tmp/work
printf '%s' "$SPEC" > /tmp/in/spec.toml
printf '%s' "$CHECKER" > /tmp/in/check.sh
printf '%s' "$NEW" > /tmp/work/new
printf 'old' > /tmp/work/target
cp "$ROOT/workloads/bin/replace" /tmp/in/replace
snapshot() {
	find /dev/shm /tmp /var/tmp -mindepth 1 -path "$ROOT" -prune \
		-o -printf '%p %s %T@\n' | sort
}
INPUTS="/tmp/in/spec.toml /tmp/in/check.sh /tmp/in/replace /tmp/work/new"
inputs() { sha256sum $INPUTS; stat -c '%n %Y %s' $INPUTS; }
cc() { "$ROOT/scripts/crashcheck" "$@"; }
inputs > /tmp/inputs.before
echo "== run"
cc run /tmp/in/spec.toml --out /tmp/out --jobs 2 >/dev/null 2>&1 || echo "status $?"
snapshot
echo "== keep"
cc run /tmp/in/spec.toml --out /tmp/kept --keep --faults baseline,eio \
	>/dev/null 2>&1 || echo "status $?"
ls -a /tmp/kept
find /dev/shm -mindepth 1
echo "== inject"
rm -rf /tmp/out /tmp/kept
cd /tmp/work
cc inject 'fsync#1=EIO' -- /tmp/in/replace --strategy=stdio target new \
	2>/dev/null || echo "status $?"
snapshot
echo "== inject-trace"
cc inject 'rename#1=crash' --trace /tmp/kept.jsonl -- \
	/tmp/in/replace --strategy=sync target new 2>/dev/null || echo "status $?"
snapshot
echo "== trace"
rm -f /tmp/kept.jsonl /tmp/work/target.tmp
cc trace -- /tmp/in/replace --strategy=mmap target new 2>/dev/null \
	|| echo "status $?"
snapshot
echo "== inputs"
inputs > /tmp/inputs.after
cmp /tmp/inputs.before /tmp/inputs.after && echo "inputs unchanged"
"""


@pytest.fixture(scope="module")
def isolated(built):
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("the isolation test needs root and unshare(1) for a "
                    "private mount namespace")
    probe = subprocess.run(["unshare", "-m", "sh", "-c",
                            "mount --make-rprivate / && mount -t tmpfs x /mnt"],
                           capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount in a private namespace here: "
                    f"{probe.stderr.strip()}")
    spec = textwrap.dedent("""\
        name = "replace"
        description = "isolation probe"
        command = ["{bin}/replace", "--strategy={strategy}", "{target}", "{new}"]
        strategies = ["stdio", "mmap"]
        check = ["/bin/sh", "/tmp/in/check.sh", "{target}"]
        sizes = [4097]
        """)
    checker = ('test -f "$1" || test "$CRASHCHECK_EXPECT" = old-or-new\n')
    env = dict(os.environ, ROOT=str(ROOT), SPEC=spec, CHECKER=checker,
               NEW="new content\n")
    proc = subprocess.run(["unshare", "-m", "/bin/sh", "-c", NAMESPACE],
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    sections = {}
    for block in proc.stdout.split("== ")[1:]:
        name, _, body = block.partition("\n")
        sections[name] = [line.split()[0] for line in body.splitlines() if line]
    return sections, proc.stdout


def _entries(lines):
    """The paths listed, less the directories leading to the tree (when
    it lives under /tmp, the namespace recreates them)."""
    return {line for line in lines if not line.startswith("status")
            and not str(ROOT).startswith(line + "/")}


BASE_ENTRIES = {"/tmp/home", "/tmp/in", "/tmp/in/spec.toml", "/tmp/in/check.sh",
                "/tmp/in/replace", "/tmp/work", "/tmp/work/new",
                "/tmp/work/target", "/tmp/inputs.before"}


def test_sweep_writes_only_its_output_directory(isolated):
    sections, raw = isolated
    lines = sections["run"]
    assert "status" not in lines, raw
    extra = _entries(lines) - BASE_ENTRIES
    outside = sorted(p for p in extra if not p.startswith("/tmp/out"))
    assert outside == [], outside
    assert {"/tmp/out/results.json", "/tmp/out/report.md",
            "/tmp/out/report.html", "/tmp/out/junit.xml"} <= extra
    # no scratch left, not even the sweep's own work directory
    assert not any(p.startswith("/tmp/out/.work") for p in extra)


def test_keep_keeps_the_work_directory_and_scratch_is_still_removed(isolated):
    sections, raw = isolated
    lines = sections["keep"]
    assert "status" not in lines, raw
    assert ".work" in lines and "cases" in lines, lines
    assert not any(line.startswith("/dev/shm/") for line in lines), lines


@pytest.mark.parametrize("section,allowed", [
    ("inject", set()),
    ("inject-trace", {"/tmp/kept.jsonl", "/tmp/work/target.tmp"}),
    ("trace", set()),
])
def test_inject_and_trace_leave_nothing_behind(isolated, section, allowed):
    sections, raw = isolated
    lines = sections[section]
    extra = _entries(lines) - BASE_ENTRIES
    # inject-trace: the kept trace, and the temp file of a planned crash
    # (the program's own, as a real crash leaves it)
    assert extra == allowed, (section, extra, raw)


def test_the_users_files_are_never_modified(isolated):
    sections, raw = isolated
    assert sections["inputs"] == ["inputs"], raw


# ---------------------------------------------------------- bad input

SPEC = ROOT / "workloads" / "specs" / "replace.toml"


@pytest.mark.parametrize("args,problem", [
    ([], r"missing command"),
    (["bogus"], r"invalid choice: 'bogus'"),
    (["inject"], r"required: PLAN"),
    (["inject", "fsync#1=EIO"], r"inject: missing '--' before the program"),
    (["inject", "fsync#1=EIO", "--"], r"inject: missing program after '--'"),
    (["inject", "", "--", "/bin/true"], r"empty plan"),
    (["inject", ";", "--", "/bin/true"], r"bad plan: empty rule at ';'"),
    (["inject", "bogus#1=EIO", "--", "/bin/true"], r"bad plan: unknown call at 'bogus"),
    (["inject", "fsync#0=EIO", "--", "/bin/true"], r"bad plan: .* at '#0'"),
    (["inject", "fsync#1=EBOGUS", "--", "/bin/true"], r"bad plan: .* at 'EBOGUS'"),
    (["inject", "fsync#1=short", "--", "/bin/true"], r"bad plan: .*short.*at"),
    (["inject", "fsync(#1=EIO", "--", "/bin/true"], r"bad plan: .* at '"),
    (["inject", "fsync#1=EIO", "--timeout", "0", "--", "/bin/true"],
     r"--timeout: '0' is not a positive number of seconds"),
    (["inject", "fsync#1=EIO", "--timeout", "nan", "--", "/bin/true"],
     r"--timeout: 'nan' is not a positive"),
    (["inject", "fsync#1=EIO", "--timeout", "inf", "--", "/bin/true"],
     r"--timeout: 'inf' is not a positive"),
    (["inject", "fsync#1=EIO", "--timeout", "-1", "--", "/bin/true"],
     r"--timeout: expected one argument|--timeout: '-1'"),
    (["inject", "fsync#1=EIO", "--trace", "/nonexistent/t", "--", "/bin/true"],
     r"cannot create trace file '/nonexistent/t': No such file or directory"),
    (["inject", "fsync#1=EIO", "--trace", "/", "--", "/bin/true"],
     r"cannot create trace file '/': Is a directory"),
    (["inject", "fsync#1=EIO", "--strict=1", "--", "/bin/true"],
     r"--strict: ignored explicit argument '1'"),
    (["inject", "--bogus", "fsync#1=EIO", "--", "/bin/true"],
     r"unrecognized arguments: --bogus"),
    (["inject", "fsync#1=EIO", "--", "/nonexistent"], r"program not found: /nonexistent"),
    (["inject", "fsync#1=EIO", "--", "@/data.txt"], r"program not executable: .*data.txt"),
    (["inject", "fsync#1=EIO", "--", "@/junk.bin"],
     r"cannot run .*junk.bin: Exec format error"),
    (["trace", "--", "@/junk.bin"], r"cannot run .*junk.bin: Exec format error"),
    (["inject", "fsync#1=EIO", "--", "/"], r"program is a directory: /"),
    (["inject", "fsync#1=EIO", "--", "no-such-program-x"], r"not found in PATH"),
    (["inject", "fsync#1=EIO", "--", ""], r"empty program name"),
    (["trace"], r"trace: missing '--' before the program"),
    (["trace", "--"], r"trace: missing program after '--'"),
    (["trace", "-o", "/nonexistent/l", "--", "/bin/true"],
     r"cannot write listing '/nonexistent/l': No such file or directory"),
    (["trace", "-o", "/", "--", "/bin/true"], r"cannot write listing '/': Is a directory"),
    (["trace", "--timeout", "x", "--", "/bin/true"], r"--timeout: 'x' is not a positive"),
    (["trace", "--all=1", "--", "/bin/true"], r"--all: ignored explicit argument"),
    (["trace", "--", "/nonexistent"], r"program not found: /nonexistent"),
    (["run"], r"required: SPEC"),
    (["run", "/nonexistent.toml"], r"spec not found: /nonexistent.toml"),
    (["run", SPEC, SPEC], r"two specs are named 'replace'"),
    (["run", SPEC, "--jobs", "0"], r"--jobs: '0' is not a positive number of jobs"),
    (["run", SPEC, "--jobs", "x"], r"--jobs: 'x' is not a positive number"),
    (["run", SPEC, "--timeout", "0"], r"--timeout: '0' is not a number of seconds"),
    (["run", SPEC, "--timeout", "4000"], r"--timeout: '4000' is not a number"),
    (["run", SPEC, "--timeout", "nan"], r"--timeout: 'nan' is not a number"),
    (["run", SPEC, "--seed", "x"], r"--seed: 'x' is not an integer"),
    (["run", SPEC, "--seed", "-1"], r"--seed: -1 is below 0"),
    (["run", SPEC, "--cap", "0"], r"--cap: 0 is below 1"),
    (["run", SPEC, "--cap", "many"], r"--cap: 'many' is not an integer"),
    (["run", SPEC, "--shard", "x"], r"--shard: expected K/N, got 'x'"),
    (["run", SPEC, "--shard", "0/2"], r"--shard: need 1 <= K <= N, got '0/2'"),
    (["run", SPEC, "--shard", "3/2"], r"--shard: need 1 <= K <= N"),
    (["run", SPEC, "--shard", "1/0"], r"--shard: need 1 <= K <= N"),
    (["run", SPEC, "--faults", "bogus"], r"--faults: unknown fault class 'bogus'"),
    (["run", SPEC, "--faults", ""], r"--faults: unknown fault class ''"),
    (["run", SPEC, "--model", "ext3"], r"--model: unknown model 'ext3' "
     r"\(models: posix, ext4-ordered, ext4-writeback, ext4-journal, xfs, "
     r"btrfs, or all\)"),
    (["run", SPEC, "--model", "posix,"], r"--model: unknown model ''"),
    (["run", SPEC, "--model", "xfs,all"], r"--model: 'all' cannot be part "
     r"of a list"),
    (["run", SPEC, "--out", "/etc/hostname"], r"--out: '/etc/hostname' is not a directory"),
    (["run", SPEC, "--out", "/proc/nonexistent/x"], r"--out: cannot create"),
    (["run", SPEC, "--keep=1"], r"--keep: ignored explicit argument"),
    (["run", SPEC, "-k", "a and ("], r"-k: .*'a and \('"),
    (["run", SPEC, "--case", "replace-stdio-9B-baseline"],
     r"--case: no such case: replace-stdio-9B-baseline"),
    (["run", SPEC, "--case", "nonsense"], r"--case: no such case: nonsense"),
])
def test_every_bad_option_is_one_line_and_exit_2(tmp_path, args, problem, built):
    (tmp_path / "data.txt").write_text("not a program\n")
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\0\1\2 not an executable format\n")
    junk.chmod(0o755)
    args = [str(a).replace("@", str(tmp_path)) if str(a).startswith("@/") else a
            for a in args]
    proc = cli(*args, cwd=tmp_path)
    line = one_error_line(proc)
    assert re.search(problem, line), line


def test_a_good_case_id_with_no_such_call_is_one_line(tmp_path, built):
    """The call numbers come from the baseline trace: this id is well
    formed, and only the enumeration can say it does not exist."""
    s = write_spec(tmp_path / "r.toml", "replace",
                   ["{bin}/replace", "--strategy={strategy}", "{target}", "{new}"],
                   strategies=["stdio"], sizes=[1])
    proc = cli("run", s, "--case", "replace-stdio-1B-fsync#9=EIO",
               "--out", tmp_path / "o")
    lines = [line for line in proc.stderr.splitlines()
             if not line.startswith("crashcheck: recording ")]
    assert proc.returncode == 2, proc.stderr
    assert lines == ["crashcheck: --case: no such case: "
                     "replace-stdio-1B-fsync#9=EIO"], proc.stderr


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("program, problem", [
    ("/nonexistent/prog", "program not found: /nonexistent/prog"),
    ("@/data.txt", "program not executable: @/data.txt"),
])
def test_a_spec_whose_program_cannot_start_is_one_line(tmp_path, built, jobs,
                                                       program, problem):
    """Its baselines cannot run: one line naming the spec and the problem,
    exit 2, in one process as across the pool, and no work directory
    left in the results."""
    (tmp_path / "data.txt").write_text("not a program\n")
    program = program.replace("@", str(tmp_path))
    s = write_spec(tmp_path / "p.toml", "p", [program, "{target}", "{new}"],
                   sizes=[1, 2])
    proc = cli("run", s, "--jobs", jobs, "--out", tmp_path / "o")
    lines = [line for line in proc.stderr.splitlines()
             if not line.startswith("crashcheck: recording ")]
    assert proc.returncode == 2, proc.stderr
    assert lines == ["crashcheck: p: " + problem.replace("@", str(tmp_path))]
    assert not os.path.lexists(tmp_path / "o" / ".work")


SPEC_BASE = {
    "name": '"w"', "description": '"d"',
    "command": '["{bin}/replace", "--strategy={strategy}", "{target}", "{new}"]',
    "strategies": '["stdio"]', "contract": '"atomic"', "sizes": "[1]",
}


def spec_text(**change):
    fields = dict(SPEC_BASE)
    tables = change.pop("tables", "")
    for k, v in change.items():
        if v is None:
            fields.pop(k, None)
        else:
            fields[k] = v
    return "".join(f"{k} = {v}\n" for k, v in fields.items()) + tables


@pytest.mark.parametrize("change,problem", [
    ({"name": None}, r"name: missing \(required\)"),
    ({"name": '"Bad Name"'}, r"name: 'Bad Name' is not a name"),
    ({"name": "3"}, r"name: expected a string, got an integer"),
    ({"description": '""'}, r"description: must not be empty"),
    ({"description": '"a\\nb"'}, r"description: must be one line"),
    ({"command": "[]"}, r"command: must not be empty"),
    ({"command": '"x"'}, r"command: expected a list of strings"),
    ({"command": '["", "{target}"]'}, r"command: the program .* must not be empty"),
    ({"command": '["x", 1]'}, r"command: element 2 is an integer"),
    ({"command": '["x", "{tagret}", "{strategy}"]'}, r"command: unknown placeholder \{tagret\}"),
    ({"command": '["x", "{target", "{strategy}"]'}, r"command: unbalanced brace"),
    ({"command": '["x", "{strategy}"]'}, r"command: must pass \{target\}"),
    ({"command": '["x", "{target}"]'}, r"command: gives strategies but never passes"),
    ({"strategies": None}, r"command: uses \{strategy\} but the spec gives no strategies"),
    ({"strategies": "[]"}, r"strategies: must not be empty"),
    ({"strategies": '["a", "a"]'}, r"strategies: 'a' is given twice"),
    ({"strategies": '["A"]'}, r"strategies: 'A' is not a name"),
    ({"contract": None}, r"contract: give exactly one of contract"),
    ({"check": '["/bin/true"]'}, r"contract: give exactly one of contract"),
    ({"contract": '"eventual"'}, r"contract: 'eventual' is not one of atomic, in-place"),
    ({"contract": None, "check": "[]"}, r"check: must not be empty"),
    ({"contract": None, "check": '["x", "{nope}"]'}, r"check: unknown placeholder"),
    ({"sizes": None}, r"sizes: missing \(required\)"),
    ({"sizes": "[]"}, r"sizes: must not be empty"),
    ({"sizes": "1"}, r"sizes: expected a list of integers"),
    ({"sizes": "[-1]"}, r"sizes: -1 is out of range"),
    ({"sizes": "[67108865]"}, r"sizes: 67108865 is out of range"),
    ({"sizes": "[1.5]"}, r"sizes: expected an integer, got a number"),
    ({"sizes": "[true]"}, r"sizes: expected an integer, got a boolean"),
    ({"sizes": "[1, 1]"}, r"sizes: 1 is given twice"),
    ({"old": '"stale"'}, r"old: 'stale' is not one of payload, absent"),
    ({"timeout": "0"}, r"timeout: 0 is not in \(0, 600\] seconds"),
    ({"timeout": "601"}, r"timeout: 601 is not in"),
    ({"timeout": "nan"}, r"timeout: nan is not in"),
    ({"timeout": "inf"}, r"timeout: inf is not in"),
    ({"timeout": '"10"'}, r"timeout: expected a number of seconds, got a string"),
    ({"timeout": "true"}, r"timeout: expected a number of seconds, got a boolean"),
    ({"disk": '"empty"'}, r"disk: 'empty' is not one of normal, full"),
    ({"contrat": '"atomic"'}, r"contrat: unknown field"),
    ({"teaches": '"x"'}, r"teaches: only for buggy variants"),
    ({"fixed_by": '"replace"'}, r"fixed_by: only for buggy variants"),
    ({"expect": "[]"}, r"expect: must not be empty"),
    ({"expect": '"x"'}, r"expect: expected \[\[expect\]\] tables"),
    ({"tables": '[[expect]]\nverdict = "torn"\n'}, r"teaches: missing"),
    ({"teaches": '"t"', "tables": '[[expect]]\nkind = "eio"\n'},
     r"expect\[1\]\.verdict: missing"),
    ({"teaches": '"t"', "tables": '[[expect]]\nverdict = "ok"\n'},
     r"expect\[1\]\.verdict: 'ok' is not one of"),
    ({"teaches": '"t"', "tables": '[[expect]]\nverdict = "torn"\nkind = "fire"\n'},
     r"expect\[1\]\.kind: 'fire' is not one of"),
    ({"teaches": '"t"', "tables": '[[expect]]\nverdict = "torn"\nmodel = "ntfs"\n'},
     r"expect\[1\]\.model: unknown model 'ntfs'"),
    ({"teaches": '"t"', "tables": '[[expect]]\nverdict = "torn"\nstrategy = "mmap"\n'},
     r"expect\[1\]\.strategy: 'mmap' is not one of stdio"),
    ({"teaches": '"t"', "tables": '[[expect]]\nverdict = "torn"\nsize = 2\n'},
     r"expect\[1\]\.size: 2 is not one of the spec's sizes"),
    ({"teaches": '"t"', "tables": '[[expect]]\nverdict = "torn"\ncall = "fsync#"\n'},
     r"expect\[1\]\.call: 'fsync#' is not a call coordinate"),
    ({"teaches": '"t"', "tables": '[[expect]]\nverdict = "torn"\nbackend = "ptrace"\n'},
     r"expect\[1\]\.backend: 'ptrace' is not one of preload, syscall"),
    ({"teaches": '"t"', "tables": '[[expect]]\nverdict = "torn"\nwhy = "x"\n'},
     r"expect\[1\]\.why: unknown field"),
    ({"teaches": '"t"', "fixed_by": '"w"', "tables": '[[expect]]\nverdict = "torn"\n'},
     r"fixed_by: names the spec itself"),
    ({"name": '"w"\nname = "v"'}, r"line 2: bad TOML"),
    ({"sizes": "[" * 2000 + "]" * 2000}, r"bad TOML: nested too deeply"),
])
def test_every_bad_spec_field_is_one_line_and_exit_2(tmp_path, change, problem):
    path = tmp_path / "w.toml"
    path.write_text(spec_text(**change))
    with pytest.raises(specmod.SpecError) as e:
        specmod.load(path)
    assert "\n" not in str(e.value)
    assert re.search(problem, str(e.value)), str(e.value)
    line = one_error_line(cli("run", path, cwd=tmp_path))
    assert line == f"crashcheck: {e.value}"


def test_a_spec_that_is_not_text_is_one_line(tmp_path):
    bad = tmp_path / "bin.toml"
    bad.write_bytes(b"name = \"\xff\xfe\"\n")
    line = one_error_line(cli("run", bad, cwd=tmp_path))
    assert "not UTF-8" in line or "bad TOML" in line
    unreadable = tmp_path / "dir.toml"
    unreadable.mkdir()
    line = one_error_line(cli("run", unreadable, cwd=tmp_path))
    assert "spec not found" in line or "cannot read" in line or \
        "is a directory" in line


# The fault library's variables: each bad value is one line and exit 2
# before the program's main runs (it would print MAIN).

def _lib_env(tmp_path, **env):
    e = {k: v for k, v in os.environ.items() if not k.startswith("CRASHCHECK_")}
    e["LD_PRELOAD"] = f"{runner.FAULT_LIB} {runner.FIU_PRELOAD}"
    e.update({k: str(v).replace("@", str(tmp_path)) for k, v in env.items()})
    return e


@pytest.fixture
def counter_file(tmp_path, built):
    """A counter file already claimed by the plan fsync#1=EIO."""
    path = tmp_path / "counters"
    subprocess.run(["/bin/true"], env=_lib_env(tmp_path, CRASHCHECK_SHARED=path,
                                               CRASHCHECK_PLAN="fsync#1=EIO"),
                   check=True, timeout=30)
    return path


@pytest.mark.parametrize("env,problem", [
    ({"CRASHCHECK_PLAN": "bogus"}, r"bad CRASHCHECK_PLAN: unknown call at 'bogus'"),
    ({"CRASHCHECK_PLAN": "fsync#1=EIO;"}, r"bad CRASHCHECK_PLAN: trailing ';'"),
    ({"CRASHCHECK_PLAN": ";"}, r"bad CRASHCHECK_PLAN: empty rule at ';'"),
    ({"CRASHCHECK_PLAN": "write#1=short:0"}, r"bad CRASHCHECK_PLAN: .* at '"),
    ({"CRASHCHECK_TRACE": "relative"}, r"CRASHCHECK_TRACE 'relative' is not an absolute path"),
    ({"CRASHCHECK_TRACE": ""}, r"CRASHCHECK_TRACE '' is not an absolute path"),
    ({"CRASHCHECK_TRACE": "/nonexistent/t"},
     r"open CRASHCHECK_TRACE '/nonexistent/t': No such file or directory"),
    ({"CRASHCHECK_TRACE": "@"}, r"open CRASHCHECK_TRACE '.*': Is a directory"),
    ({"CRASHCHECK_WATCH": "relative"}, r"CRASHCHECK_WATCH 'relative' is not an absolute path"),
    ({"CRASHCHECK_WATCH": "/nonexistent"},
     r"stat CRASHCHECK_WATCH '/nonexistent': No such file or directory"),
    ({"CRASHCHECK_WATCH": "/etc/hostname"}, r"CRASHCHECK_WATCH '/etc/hostname' is not a directory"),
    ({"CRASHCHECK_WATCH": "/" + "a" * 5000}, r"CRASHCHECK_WATCH '/a+\.\.\.' is too long"),
    ({"CRASHCHECK_SNAPDIR": "@/s"}, r"CRASHCHECK_SNAPDIR is set but CRASHCHECK_WATCH is not"),
    ({"CRASHCHECK_WATCH": "@", "CRASHCHECK_SNAPDIR": "@/s"},
     r"CRASHCHECK_SNAPDIR is set but CRASHCHECK_TRACE is not"),
    ({"CRASHCHECK_WATCH": "@", "CRASHCHECK_TRACE": "@/t", "CRASHCHECK_SNAPDIR": "rel"},
     r"CRASHCHECK_SNAPDIR 'rel' is not an absolute path"),
    ({"CRASHCHECK_WATCH": "@", "CRASHCHECK_TRACE": "@/t",
      "CRASHCHECK_SNAPDIR": "/nonexistent/a/b"},
     r"mkdir CRASHCHECK_SNAPDIR '/nonexistent/a/b': No such file or directory"),
    ({"CRASHCHECK_WATCH": "@", "CRASHCHECK_TRACE": "@/t",
      "CRASHCHECK_SNAPDIR": "/etc/hostname"},
     r"CRASHCHECK_SNAPDIR '/etc/hostname' is not a directory"),
    ({"CRASHCHECK_SHARED": "relative"}, r"CRASHCHECK_SHARED 'relative' is not an absolute path"),
    ({"CRASHCHECK_SHARED": ""}, r"CRASHCHECK_SHARED '' is not an absolute path"),
    ({"CRASHCHECK_SHARED": "/nonexistent/c"},
     r"open CRASHCHECK_SHARED '/nonexistent/c': No such file or directory"),
    ({"CRASHCHECK_SHARED": "@"}, r"open CRASHCHECK_SHARED '.*': Is a directory"),
    ({"CRASHCHECK_SHARED": "@/garbage"}, r"'.*/garbage' is not a crashcheck counter file"),
    ({"CRASHCHECK_SHARED": "/dev/null"}, r"CRASHCHECK_SHARED '/dev/null': "),
    ({"CRASHCHECK_SHARED": "@/counters", "CRASHCHECK_PLAN": "fsync#2=EIO"},
     r"CRASHCHECK_SHARED '.*/counters' holds the counters of another plan"),
    ({"CRASHCHECK_PLAN": "fsync#1=EIO", "LD_PRELOAD": str(runner.FAULT_LIB)},
     r"plan set, but write\(\) below libcrashcheck.so is .*libc.*, not libfiu's"),
])
def test_every_bad_library_variable_is_one_line_and_exit_2(tmp_path, counter_file,
                                                           env, problem):
    (tmp_path / "garbage").write_bytes(b"not a counter file " * 16)
    proc = subprocess.run(["/bin/echo", "MAIN"], env=_lib_env(tmp_path, **env),
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stdout == ""                # main never ran
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("crashcheck: "), proc.stderr
    assert re.search(problem, lines[0]), lines[0]


def test_a_stale_variable_in_the_callers_environment_never_reaches_a_run(
        tmp_path, built):
    env = dict(os.environ, CRASHCHECK_PLAN="bogus", CRASHCHECK_TRACE="relative",
               CRASHCHECK_WATCH="relative", CRASHCHECK_SNAPDIR="relative",
               CRASHCHECK_SHARED="relative")
    proc = cli("trace", "--", "/bin/true", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr


# ---------------------------------------------------- fuzz regressions

FUZZ_REGRESSIONS = {
    # json and tomllib recurse once per nesting level: RecursionError
    "trace-deep-nesting": (b'{"ev":"init","seq":0,"x":' + b"[" * 100000
                           + b"]" * 100000 + b"}\n"),
    # fields the readers use as ints, strings and lists, with other types
    "trace-fd-list": (b'{"ev":"init","seq":0,"pid":1}\n{"ev":"call","seq":1,'
                      b'"call":"fsync","n":1,"fd":[3],"ret":0,"errno":0}\n'),
    "trace-path-list": (b'{"ev":"init","seq":0}\n{"ev":"call","seq":1,"call":'
                        b'"open","n":1,"path":["a"],"ret":3,"errno":0}\n'),
    "trace-flags-nested": (b'{"ev":"init","seq":0}\n{"ev":"call","seq":1,"call":'
                           b'"open","n":1,"flags":[["O_CREAT"]],"ret":3,'
                           b'"errno":0}\n'),
    "trace-fault-string": (b'{"ev":"init","seq":0}\n{"ev":"call","seq":1,"call":'
                           b'"fsync","n":1,"ret":-1,"errno":5,"fault":"EIO"}\n'),
    "trace-flags-dict": (b'{"ev":"init","seq":0,"snap":{}}\n{"ev":"call","seq":1,'
                         b'"call":"open","n":1,"flags":[{"a":1}],"ret":3,'
                         b'"errno":0}\n'),
    # a snapshot hash is a file name in the snapshot directory
    "trace-hash-surrogate": (b'{"ev":"init","seq":0,"snap":{"files":{"1":'
                             b'{"size":1,"hash":"\\ud800abc"}}}}\n'),
    "trace-hash-nul": (b'{"ev":"init","seq":0,"snap":{"files":{"1":'
                       b'{"size":1,"hash":"ab\\u0000c"}}}}\n'),
    "trace-hash-dotdot": (b'{"ev":"init","seq":0,"snap":{"files":{"1":'
                          b'{"size":1,"hash":"../../etc/passwd"}}}}\n'),
    "trace-key-newline": (b'{"ev":"init","seq":0,"snap":{"files":{"a\\nb":'
                          b'{"size":1}}}}\n'),
    # a lone surrogate can be neither a file name nor printed
    "trace-name-surrogate": (b'{"ev":"init","seq":0,"snap":{"dir":'
                             b'{"ta\\uD800rget":1}}}\n'),
    "trace-path-surrogate": (b'{"ev":"init","seq":0}\n{"ev":"call","seq":1,'
                             b'"call":"open","n":1,"path":"/w/\\udfff",'
                             b'"ret":3,"errno":0}\n'),
}


@pytest.mark.parametrize("name", sorted(FUZZ_REGRESSIONS))
def test_fuzz_finding_is_a_trace_error(name, tmp_path):
    data = FUZZ_REGRESSIONS[name]
    with pytest.raises(tracemod.TraceError) as e:
        tracemod.parse(data, "t.jsonl")
    assert "\n" not in str(e.value)


def test_fuzz_finding_spec_deep_nesting(tmp_path):
    path = tmp_path / "deep.toml"
    path.write_text("sizes = " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(specmod.SpecError, match="nested too deeply"):
        specmod.load(path)


def test_fuzz_finding_explorer_hash_is_an_explorer_error(tmp_path):
    """explore() is also called on records that never went through
    trace.parse (tests, tools): a hash open(2) cannot take is its error."""
    for h in ("ab\0c", "\ud800abc"):
        records = [{"ev": "init", "seq": 0,
                    "snap": {"files": {"1": {"size": 1, "hash": h}}}}]
        with pytest.raises(explorer.ExplorerError, match="bad snapshot hash"):
            explorer.explore(records, tmp_path)


@pytest.mark.parametrize("name", ["ta\ud800rget", "a/b", "..", "", "x\0y"])
def test_fuzz_finding_explorer_file_name_is_an_explorer_error(name):
    records = [{"ev": "init", "seq": 0, "snap": {"dir": {name: 1}}}]
    with pytest.raises(explorer.ExplorerError, match="bad file name"):
        explorer.explore(records, content=lambda h: b"")


def test_a_name_that_is_not_utf8_survives_the_explorer():
    """The library writes a byte that is not UTF-8 as \\u00XX: such a name
    is a file name like any other, through to the state's digest."""
    data = (b'{"ev":"init","seq":0,"snap":{"dir":{"t\\u00ffx":7},'
            b'"files":{"7":{"size":1,"hash":"0123456789abcdef"}}}}\n')
    records = tracemod.parse(data)
    points = explorer.explore(records, content=lambda h: b"x",
                              target_name="t\u00ffx")
    assert points[0].states[0].target == b"x"
    assert points[0].states[0].digest()


def test_the_fuzzer_finds_a_planted_defect(tmp_path):
    """fuzz_py is only worth its figures if it can find something: a
    reader that crashes on a non-string path must be caught in seconds,
    with the input saved for a regression test."""
    probe = textwrap.dedent(f"""
        import random, sys
        sys.path.insert(0, {str(FUZZ.parent)!r})
        import fuzz_py
        from pathlib import Path
        class Planted(fuzz_py.TraceTarget):
            name = "planted"
            def run(self, data):
                records = fuzz_py.tracemod.parse(data)
                for r in records:
                    if "path" in r:
                        r["path"].upper()      # the planted defect
                    if r.get("fd") == 4:
                        {{}}["x"]               # and another one
                return "ok"
        from harness.engine import traceparse
        traceparse._OPTIONAL = tuple(
            o for o in traceparse._OPTIONAL if o[0] not in ("path", "fd"))
        n, crashes = fuzz_py.fuzz(Planted(), 60, random.Random(1), 65536,
                                  Path({str(tmp_path)!r}), log=lambda m: None,
                                  enough=lambda c: len(c) >= 2)
        print(n, sorted(c.type for c in crashes))
    """)
    proc = subprocess.run([PYTHON, "-c", probe], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    n, found = proc.stdout.split(" ", 1)
    assert int(n) > 10
    assert "AttributeError" in found and "KeyError" in found, proc.stdout
    saved = list(tmp_path.glob("crash-planted-*"))
    assert len(saved) >= 2


def test_the_fuzzer_runs_clean_on_every_target_briefly(tmp_path):
    proc = subprocess.run([PYTHON, str(FUZZ), "--time", "1", "--seed", "7",
                           "--artifacts", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for target in ("spec", "trace", "explorer"):
        m = re.search(rf"fuzz_py: {target}: (\d+) executions .* (\d+) accepted",
                      proc.stdout)
        # it ran and accepted inputs: how many it gets through in its one
        # second of wall time depends on what else the machine runs
        assert m and int(m.group(1)) > 0 and int(m.group(2)) > 0, proc.stdout
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------ a real full disk

def _layout(scratch, old, new, full):
    (scratch / "in").mkdir(parents=True)
    (scratch / "in" / "new").write_bytes(new)
    if not full:
        (scratch / "work").mkdir()
        (scratch / "work" / "target").write_bytes(old)


def _failing_plan(records):
    """The plan that replays, by injection, what the full disk did: the
    short writes before the first call that failed with ENOSPC, then that
    call failing from then on. None when no call failed."""
    rules = []
    for r in tracemod.calls(records):
        name, n, ret, length = r["call"], r["n"], r["ret"], r.get("len")
        if name == "posix_fallocate":           # returns the error number
            failed = ret == errno.ENOSPC
        else:
            failed = ret < 0 and r["errno"] == errno.ENOSPC
        if failed:
            rules.append(f"{name}#{n}+=ENOSPC")
            return ";".join(rules)
        if name in ("write", "pwrite", "pwrite64") and length and 0 <= ret < length:
            rules.append(f"{name}#{n}=short:{ret}")
    return None


def _run_workload(argv, scratch, plan="", timeout=30):
    tr = scratch / "trace.jsonl"
    run = runner.run(argv, cwd=scratch / "work", plan=plan, trace=tr,
                     shared=scratch / "shared", timeout=timeout)
    return run, tracemod.load(tr)


@pytest.fixture(scope="module")
def can_mount(tmp_path_factory):
    probe = tmp_path_factory.mktemp("mount-probe") / "p"
    probe.mkdir()
    try:
        fullfs.mount(probe, fullfs.PAGE)
    except fullfs.Unavailable as e:
        pytest.skip(f"no real full disk here: {e.reason}")
    fullfs.unmount(probe)


@pytest.mark.parametrize("workload", ["replace", "overwrite"])
@pytest.mark.parametrize("strategy", ["stdio", "direct", "sync", "mmap"])
def test_real_enospc_matches_the_injected_case(tmp_path, can_mount, built,
                                               workload, strategy):
    """On a tmpfs one page short of the new content, each correct
    workload fails the way its injected ENOSPC case does: same exit
    status, same message, and (atomic) the target still old with no temp
    file left. The injected plan is the full disk's own story, read from
    the real run's trace: its short writes, then the call that failed."""
    size = 65537
    new = payload.make(size, 2, 11)
    # overwrite writes in place: it only needs new blocks when the new
    # content is longer than the old
    old = payload.make(size + 4097 if workload == "replace" else 4097, 1, 11)
    argv = [str(BIN / workload), f"--strategy={strategy}", "target", "../in/new"]

    real = tmp_path / "real"
    _layout(real, old, new, full=True)
    room_for_old = len(old) if workload == "replace" else 0
    with fullfs.full_disk(real / "work", room_for_old, size) as work:
        (work / "target").write_bytes(old)
        run, records = _run_workload(argv, real)
    real_files = sorted(os.listdir(real / "work"))
    if run.status == runner.EXIT_SKIP:
        pytest.skip(f"{workload} --strategy={strategy}: {run.stderr_text().strip()}")
    plan = _failing_plan(records)
    assert plan is not None, [tracemod.format_call(r) for r in records
                              if r["ev"] == "call"]
    assert run.status == 1, run.stderr_text()
    assert "No space left on device" in run.stderr_text()

    injected = tmp_path / "injected"
    _layout(injected, old, new, full=False)
    irun, irecords = _run_workload(argv, injected, plan=plan)
    assert all(f.count for f in tracemod.fired(irecords, plan.split(";"))), plan
    assert (irun.status, irun.stderr_text()) == (run.status, run.stderr_text()), plan
    if workload == "replace":
        assert (real / "work" / "target").read_bytes() == old
        assert (injected / "work" / "target").read_bytes() == old
        assert real_files == sorted(os.listdir(injected / "work")) == ["target"]


def test_mmap_writer_extending_with_ftruncate_is_crashed_on_a_full_disk(
        tmp_path, can_mount, built):
    """The one failure no injection can make: a store into a mapping that
    needs a block on a full disk. Through the sweep, with the variant's
    own spec (disk = "full"): its baseline, on an ordinary disk, exits 0;
    its disk=full case dies of SIGBUS, judged `crashed`, and the variant
    counts as caught. The run is clean: moving the files off the tmpfs
    changed their inode numbers, which once read as a change to
    `target` by a call crashcheck cannot see."""
    out = tmp_path / "out"
    proc = cli("run", ROOT / "workloads" / "specs" / "mmap-ftruncate.toml",
               "--faults", "baseline,enospc", "--out", out, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    doc = results(out)
    cases = doc["cases"]
    full = [c for c in cases if c["id"].endswith("-disk=full")]
    assert len(full) == 2, [c["id"] for c in cases]
    assert all(c["verdict"] == "crashed" and c["kind"] == "enospc"
               for c in full), full
    assert all(c["exit"]["signal"] == signal.SIGBUS for c in full)
    assert all(c["passed"] for c in cases)
    base = [c for c in cases if c["kind"] == "baseline"]
    assert base and all(c["verdict"] == "ok" and c["exit"]["status"] == 0
                        for c in base), base
    assert doc["summary"]["unseen"] == [], doc["summary"]["unseen"]
    assert "not a clean pass" not in proc.stdout


def test_a_fixed_mmap_writer_is_ok_on_a_full_disk(tmp_path, can_mount, built):
    """The same spec's fix (the correct workload, which reserves its
    blocks with posix_fallocate) on the full disk: it exits 1 naming
    ENOSPC, the target old, so its disk=full case is ok and a variant
    fixed that way reads fixed (its full disk used to be its baseline,
    and an exit 1 there a harness-error)."""
    spec = tmp_path / "fixed.toml"
    spec.write_text(
        'name = "fixed"\ndescription = "replace, mmap, on a full disk"\n'
        f'command = ["{BIN / "replace"}", "--strategy=mmap", "{{target}}", '
        '"{new}"]\ncontract = "atomic"\nsizes = [4097, 65537]\n'
        'old = "payload"\ndisk = "full"\n')
    out = tmp_path / "out"
    proc = cli("run", spec, "--faults", "baseline,enospc", "--out", out,
               timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    full = [c for c in results(out)["cases"] if c["id"].endswith("-disk=full")]
    assert len(full) == 2
    for c in full:
        assert c["verdict"] == "ok" and c["exit"]["status"] == 1, c
        assert "posix_fallocate" in c["stderr"] and \
            "No space left on device" in c["stderr"], c["stderr"]
