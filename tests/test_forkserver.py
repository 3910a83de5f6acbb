"""The fork server (faults/serve.c, forkserver.ForkServer): a run forked from
one exec of the program must be the run an exec would have made: the
same calls counted and faulted, the same trace but for process ids, the
same files, output, exit status, environment and descriptors. Programs
it cannot stand for are refused, never served wrong, and a sweep whose
server goes away goes on exec'ing.

The system-call supervisor serves runs too, one after another in its own
process (faults/syscall/supervise.c): what the preload's fork gives for
free, a fresh process, it must give by forgetting each run's settings,
counters and recorder state, and the tests marked with both backends
hold it to the same bar."""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time

import pytest

from procs import marked as _marked, sleep_in_a_cgroup_below

from harness import ROOT
from harness import calls  # noqa: E402
from harness.engine import (cases as casesmod, execute, forkserver,
                            judge as judgemod, runner, sweep, trace)

REPLACE = [str(ROOT / "workloads" / "bin" / "replace"), "--strategy=sync",
           casesmod.TARGET, f"../{casesmod.INPUT}/{casesmod.NEW}"]


@pytest.fixture
def home(tmp_path):
    d = tmp_path / "home" / "x"
    d.mkdir(parents=True)
    return d


BACKENDS = ["preload", "syscall"]


def serve(argv, home, timeout=10, backend="preload"):
    return forkserver.ForkServer(argv, home=home, timeout=timeout, backend=backend)


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def settings(scratch):
    s = os.fspath(scratch)
    return dict(cwd=os.path.join(s, casesmod.WORK),
                trace=os.path.join(s, "trace.jsonl"),
                watch=os.path.join(s, casesmod.WORK),
                snapdir=os.path.join(s, "snaps"),
                shared=os.path.join(s, "shared"))


PROC_PID = re.compile(r"/proc/\d+/")


def trace_without_pids(path):
    """A trace with its process ids left out and its inode numbers
    renumbered in order of appearance: both are the kernel's choice,
    different from one run to the next however the run is started."""
    inos = {}

    def ino(n):
        return inos.setdefault(int(n), len(inos))
    lines = []
    for line in trace.read(path).decode().splitlines():
        rec = json.loads(line)
        rec.pop("pid", None)
        rec.pop("ppid", None)
        if "path" in rec:
            # a sanitizer's runtime reads /proc/PID/cmdline, which the
            # system-call backend sees
            rec["path"] = PROC_PID.sub("/proc/PID/", rec["path"])
        if "ino" in rec:
            rec["ino"] = ino(rec["ino"])
        snap = rec.get("snap")
        if isinstance(snap, dict):
            if "dir" in snap:
                snap["dir"] = {k: ino(v) for k, v in snap["dir"].items()}
            if "root" in snap:
                snap["root"] = ino(snap["root"])
            if "dirs" in snap:
                snap["dirs"] = {
                    ino(d): {k: ino(v) if isinstance(v, int) else
                             {"d": ino(v["d"])} if "d" in v else v
                             for k, v in listing.items()}
                    for d, listing in snap["dirs"].items()}
            if "files" in snap:
                snap["files"] = {ino(k): v for k, v in snap["files"].items()}
        lines.append(rec)
    return lines


def outcome(scratch, run):
    """What a test compares of a run: all it told and all it left."""
    work = scratch / casesmod.WORK
    return dict(status=run.status, signal=run.signal,
                timed_out=run.timed_out, stdout=run.stdout,
                stderr=run.stderr,
                trace=trace_without_pids(scratch / "trace.jsonl"),
                files={p.name: p.read_bytes() for p in work.iterdir()
                       if p.is_file()})     # not the run's TMPDIR


def plans(backend):
    """No plan, then every fault class on each call of a replace, the
    plan of one run after the other's: under the syscall backend its
    open is an openat, and the loader's opens count before it."""
    opens = "open#1" if backend == "preload" else "openat(target.tmp)#1"
    return [""] + [p for call in (opens, "write#1", "fsync#1", "rename#1")
                   for _, p in casesmod.fault_plans(
                       call, calls.table()[call.split("(")[0].split("#")[0]].faults)] \
        + [""]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_served_run_is_the_exec_run(tmp_path, home, backend):
    """Every fault class on the calls of a replace, served one after the
    other by one server (a crash kills only its run), against exec; the
    last run, with no plan, faults nothing (no rule of the runs before
    is left), and the server holds no more descriptors than after its
    first run."""
    old, new = b"old" * 3000, b"new" * 5000
    scratch = tmp_path / "s"
    server = serve(REPLACE, home, backend=backend)
    fds = []
    try:
        for plan in plans(backend):
            got = {}
            for how in ("exec", "served"):
                if scratch.exists():
                    execute.clear_dir(scratch)
                else:
                    scratch.mkdir()
                execute.prepare(scratch, old, new)
                kw = settings(scratch)
                if how == "exec":
                    run = runner.run(REPLACE, plan=plan, timeout=10,
                                     backend=backend, **kw)
                else:
                    run = server.run(plan=plan, timeout=10, **kw)
                    fds.append(fd_count(server.pid))
                got[how] = outcome(scratch, run)
            assert got["served"] == got["exec"], plan
            # the plans did something: the comparison is not of two no-ops
            if plan.endswith("=crash"):
                assert got["served"]["signal"] == signal.SIGKILL
            elif plan.endswith("=EIO"):
                assert got["served"]["status"] != 0
                assert b'"fault":' in (scratch / "trace.jsonl").read_bytes()
            elif not plan:
                assert got["served"]["status"] == 0
                assert b'"fault":' not in (scratch / "trace.jsonl").read_bytes()
        assert fds[-1] == fds[0], fds
    finally:
        server.close()


def py(code):
    return ["/usr/bin/python3", "-I", "-c", code]


@pytest.mark.parametrize("backend", BACKENDS)
def test_environment_and_descriptors_are_an_execs(tmp_path, home, backend):
    """The run's variables are its own (the server's gone), and it sees
    the descriptors, signal dispositions and mask an exec'd program sees:
    the server's socket closed, nothing the server set up for itself
    inherited (the supervisor's own handlers, in its second run too).
    Both carry the session's token (contain.py), and nothing else of
    ours without a plan."""
    argv = py("import os, sys\n"
              "print(sorted((k, v) for k, v in os.environ.items()"
              " if k.startswith('CRASHCHECK') and k != 'CRASHCHECK_SESSION'))\n"
              "print(len(os.environ.get('CRASHCHECK_SESSION', '')))\n"
              "print(sorted(os.listdir('/proc/self/fd')))\n"
              "print(os.getpgid(0) == os.getpid(), os.getsid(0) == os.getpid())\n"
              "print([l for l in open('/proc/self/status')"
              " if l.startswith(('SigIgn', 'SigBlk'))])\n"
              "print(os.getcwd(), os.environ.get('TMPDIR'))")
    (tmp_path / "s" / casesmod.WORK).mkdir(parents=True)
    (tmp_path / "s" / "snaps").mkdir()
    kw = settings(tmp_path / "s")
    exec_run = runner.run(argv, plan="fsync#9=EIO", timeout=30,
                          backend=backend, **kw)
    exec_bare = runner.run(argv, cwd=kw["cwd"], timeout=30, backend=backend,
                           extra={"TMPDIR": str(tmp_path)})
    exec_plain = runner.run(argv, cwd=kw["cwd"], timeout=30, backend=backend)
    server = serve(argv, home, timeout=30, backend=backend)
    try:
        served = server.run(plan="fsync#9=EIO", timeout=30, **kw)
        # and the next run's settings replace the last one's, the
        # variables it set included
        served_bare = server.run(cwd=kw["cwd"], timeout=30,
                                 extra={"TMPDIR": str(tmp_path)})
        served_plain = server.run(cwd=kw["cwd"], timeout=30)
    finally:
        server.close()
    assert exec_run.status == 0, exec_run.stderr
    assert served.stdout == exec_run.stdout
    assert served_bare.stdout == exec_bare.stdout
    assert served_plain.stdout == exec_plain.stdout
    assert exec_plain.stdout != exec_bare.stdout
    assert b"CRASHCHECK_SERVE" not in served.stdout
    # the preload reads its plan in the program, the supervisor in itself
    assert (b"fsync#9=EIO" in served.stdout) == (backend == "preload")
    assert b"True True" in served.stdout
    assert served_bare.stdout.splitlines()[0] == b"[]"
    # the supervisor passes the program none of our variables
    assert served_bare.stdout.splitlines()[1] == \
        (b"32" if backend == "preload" else b"0")


@pytest.mark.parametrize("backend", BACKENDS)
def test_time_limit_kills_the_runs_group(tmp_path, home, backend):
    pidfile = tmp_path / "bg"
    argv = ["/bin/sh", "-c", f"sleep 60 & echo $! > {pidfile}; sleep 60"]
    server = serve(argv, home, backend=backend)
    try:
        run = server.run(cwd=tmp_path, timeout=0.5)
        # the server is free again
        quick = serve(["/bin/true"], home, backend=backend)
        quick.close()
    finally:
        server.close()
    assert run.timed_out and run.signal == signal.SIGKILL
    bg = int(pidfile.read_text())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{bg}/stat") as fh:
                if fh.read().split(") ")[1].startswith("Z"):
                    break
        except FileNotFoundError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the run's background child outlived the time limit")


def gone(pid, within=10):
    """Whether pid is gone (or a zombie) within that many seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().rsplit(") ", 1)[1].startswith("Z"):
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("backend", BACKENDS)
def test_served_runs_are_born_in_their_servers_cgroup(tmp_path, home,
                                                      backend):
    """In a cgroup, a server's runs are boxed in the cgroup the server
    was started in, where they are born: no run moves (a move waits for
    an RCU grace period). A run that leaves a process has it named and
    killed, with the server (a cgroup is killed whole), whose cgroup
    then goes; the next run needs another server."""
    from harness.engine import contain
    if contain.session().mode != "cgroup":
        pytest.skip(f"no writable cgroup v2 here: {contain.session().reason}")
    show = ["/bin/sh", "-c", "cat /proc/self/cgroup"]
    server = serve(show, home, backend=backend)
    try:
        with open(f"/proc/{server.pid}/cgroup") as fh:
            own = fh.read()
        cgroup = server._cgroup
        assert own.strip().endswith(os.path.basename(cgroup)), own
        for _ in range(2):
            run = server.run(cwd=tmp_path, timeout=30)
            assert (run.status, run.stdout.decode(), run.outlived) == \
                (0, own, [])
    finally:
        server.close()
    assert not os.path.exists(cgroup)
    pidfile = tmp_path / "left"
    left = ["/bin/sh", "-c", f"setsid sleep 30 & echo $! > {pidfile}"]
    # a process the run moved into a cgroup of its own making, below
    # the server's: named and killed as well
    below = ["/bin/sh", "-c", sleep_in_a_cgroup_below(31)]
    for argv, name in ((left, "(sleep 30)"), (below, "(sleep 31)")):
        server = serve(argv, home, backend=backend)
        try:
            cgroup = server._cgroup
            run = server.run(cwd=tmp_path, timeout=30)
            assert run.status == 0
            assert [o.split(" ", 2)[2] for o in run.outlived] == [name]
            assert server.closed and not os.path.exists(cgroup)
            with pytest.raises(forkserver.ServerUnavailable):
                server.run(cwd=tmp_path, timeout=30)
        finally:
            server.close()
    assert gone(int(pidfile.read_text()))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_harness_gone_mid_run_takes_the_run_with_it(tmp_path, home, backend):
    """Interrupted after asking for a run and before learning its pid,
    the harness can only close the socket: the server then kills the
    run's group and ends."""
    pidfile = tmp_path / "pid"
    argv = ["/bin/sh", "-c", f"echo $$ > {pidfile}; sleep 300 & wait"]
    server = serve(argv, home, backend=backend)
    server_pid = server.pid
    with runner._capture_file("o") as out:
        socket.send_fds(server._sock, [os.fsencode(str(tmp_path))],
                        [server._null, out.fileno(), out.fileno()])
        deadline = time.monotonic() + 10
        while not pidfile.exists() or not pidfile.read_text().strip():
            assert time.monotonic() < deadline, "the run never started"
            time.sleep(0.01)
        start = time.monotonic()
        server.close()
        assert time.monotonic() - start < forkserver.CLOSE_WAIT
    assert gone(int(pidfile.read_text()))
    assert gone(server_pid)


def test_a_supervised_run_that_leaves_a_process_ends_its_server(tmp_path, home):
    """A process of the run still followed when the run ends (it outlived
    its grace) is left as an exec'd supervisor leaves it, for the box to
    name and kill; the server, whose tracee it still is, ends with the
    run's answer, and the next run needs another server."""
    argv = ["/bin/sh", "-c", "sleep 30 & echo started"]
    exec_run = runner.run(argv, cwd=tmp_path, timeout=30, backend="syscall")
    server = serve(argv, home, backend="syscall")
    try:
        served = server.run(cwd=tmp_path, timeout=30)
        assert server.closed and server.pid is None
        with pytest.raises(forkserver.ServerUnavailable):
            server.run(cwd=tmp_path, timeout=30)
    finally:
        server.close()
    for run in (exec_run, served):
        assert (run.status, run.stdout) == (0, b"started\n")
        assert [o.split(" ", 2)[2] for o in run.outlived] == ["(sleep 30)"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_harness_interrupted_as_it_asks_leaves_no_run(tmp_path, home,
                                                        backend):
    """^C between the request and the server's "pid": the harness only
    closes the socket (ForkServer.run's clean-up), which the server may
    see before it starts the run, or after: either way nothing of the
    run goes on."""
    ticks = tmp_path / "ticks"
    argv = ["/bin/sh", "-c", "while :; do echo x >> ticks; sleep 0.05; done"]
    server = serve(argv, home, backend=backend)
    server_pid = server.pid

    def interrupted(timeout):
        raise KeyboardInterrupt
    server._receive = interrupted
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        server.run(cwd=tmp_path, timeout=30)
    assert time.monotonic() - start < forkserver.CLOSE_WAIT
    assert gone(server_pid)
    # whatever it wrote, it writes no more
    seen = ticks.read_bytes() if ticks.exists() else b""
    time.sleep(0.3)
    assert (ticks.read_bytes() if ticks.exists() else b"") == seen


def test_a_supervised_run_past_its_limit_ends_as_an_execd_one(tmp_path, home):
    """A run the recorder stops (its snapshots past CRASHCHECK_LIMIT) is
    killed with a note, exec'd or served; the server, whose state of the
    run stopped mid-call, ends with the run's answer."""
    got = {}
    server = serve(REPLACE, home, backend="syscall")
    try:
        for how in ("exec", "served"):
            scratch = tmp_path / how
            scratch.mkdir()
            execute.prepare(scratch, b"old" * 3000, b"new" * 5000)
            kw = settings(scratch)
            note = scratch / "note"
            if how == "exec":
                run = runner.run(REPLACE, timeout=10, backend="syscall",
                                 limit=100, note=str(note), **kw)
            else:
                run = server.run(timeout=10, limit=100, note=str(note), **kw)
            got[how] = (run.status, run.signal, note.read_text())
        assert server.closed
    finally:
        server.close()
    assert got["served"] == got["exec"]
    assert got["exec"][1] == signal.SIGKILL and got["exec"][2].startswith("limit-")


def test_a_supervised_program_gone_is_said_to_the_harness(tmp_path, home):
    """The supervisor's server execs the program for each run: one that
    has gone is a "fail" (ServerUnavailable), which the sweep runs again
    exec'd, where it is said as every run says it."""
    exe = tmp_path / "prog"
    shutil.copy("/bin/true", exe)
    server = serve([str(exe)], home, backend="syscall")
    try:
        assert server.run(cwd=tmp_path, timeout=30).status == 0
        exe.unlink()
        with pytest.raises(forkserver.ServerUnavailable,
                           match=f"cannot run {exe}: No such file"):
            server.run(cwd=tmp_path, timeout=30)
    finally:
        server.close()
    with pytest.raises(runner.SetupError, match="program not found"):
        runner.run([str(exe)], cwd=tmp_path, timeout=30, backend="syscall")


def build(tmp_path, name, source, *flags):
    src = tmp_path / f"{name}.c"
    src.write_text(source)
    out = tmp_path / name
    proc = subprocess.run(["cc", "-O1", "-o", str(out), str(src), *flags],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot build {name}: {proc.stderr.strip()}")
    return out


def test_a_static_program_is_refused_having_run_where_we_put_it(tmp_path, home):
    exe = build(tmp_path, "mark", "#include <stdio.h>\n"
                "int main(void) { FILE *f = fopen(\"mark\", \"w\");"
                " return f ? fclose(f) : 1; }\n", "-static")
    with pytest.raises(forkserver.ServerUnavailable, match="exited"):
        serve([str(exe)], home)
    assert (home / "mark").exists()


def test_a_thread_before_main_is_refused(tmp_path, home, monkeypatch):
    """A preload of the user's, initialized before ours, that starts a
    thread: a fork would lose it."""
    lib = build(tmp_path, "thread.so", "#include <pthread.h>\n#include <unistd.h>\n"
                "static void *idle(void *a) { (void)a; pause(); return 0; }\n"
                "__attribute__((constructor)) static void start(void)"
                " { pthread_t t; pthread_create(&t, 0, idle, 0); }\n",
                "-shared", "-fPIC", "-pthread")
    monkeypatch.setenv("LD_PRELOAD", str(lib))
    with pytest.raises(forkserver.ServerUnavailable, match="2 threads"):
        serve(["/bin/true"], home)


def test_bad_serve_variable_is_one_line_and_status_2(tmp_path):
    env = runner.build_env(program="/bin/true", cwd=tmp_path)
    env["CRASHCHECK_SERVE"] = "3x"
    proc = subprocess.run(["/bin/true"], env=env, capture_output=True,
                          text=True, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "crashcheck: CRASHCHECK_SERVE '3x' is not an open descriptor"]


def test_a_callers_serve_variable_never_reaches_a_run(tmp_path, monkeypatch):
    """Left in the caller's environment it would turn every run into a
    server waiting on a descriptor of someone else's."""
    monkeypatch.setenv("CRASHCHECK_SERVE", "0")
    run = runner.run(["/bin/sh", "-c", "echo ${CRASHCHECK_SERVE-unset}"],
                     cwd=tmp_path, timeout=30)
    assert (run.status, run.stdout) == (0, b"unset\n")


# ---- in the sweep

COMPARED = ("verdict", "passed", "finding", "explanation", "state", "model",
            "states", "stderr", "fired", "trace_excerpt", "exit", "expected")


def sweep_results(out, *extra):
    proc = subprocess.run(
        [str(ROOT / "scripts" / "crashcheck"), "run", "--out", str(out),
         *extra, *(str(casesmod.SPEC_DIR / f"{w}.toml") for w in
                   ("fsync-unchecked", "no-dir-fsync", "short-write-ignored"))],
        capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    with open(out / "results.json") as fh:
        cases = json.load(fh)["cases"]
    for c in cases:
        # a sanitizer's runtime reads /proc/PID/maps, which the
        # system-call backend sees
        c["trace_excerpt"] = [PROC_PID.sub("/proc/PID/", line)
                              for line in c["trace_excerpt"] or []]
    return {c["id"]: {k: c[k] for k in COMPARED} for c in cases}


@pytest.mark.parametrize("backend", BACKENDS)
def test_forked_and_execd_sweeps_agree(tmp_path, backend):
    """Three buggy workloads, every strategy and fault class: each case's
    verdict, finding, output and trace excerpt the same both ways."""
    forked = sweep_results(tmp_path / "forked", "--backend", backend)
    execd = sweep_results(tmp_path / "execd", "--exec-each", "--backend", backend)
    assert forked.keys() == execd.keys()
    assert [i for i in forked if forked[i] != execd[i]] == []
    # findings among them: the comparison is of verdicts that say something
    assert sum(c["verdict"] not in ("ok", "skipped") for c in forked.values()) > 10


def judge_for(tmp_path, fork_server):
    from harness.engine import spec as specmod
    specs = [specmod.load(casesmod.SPEC_DIR / "replace.toml")]
    settings = casesmod.Settings(out=tmp_path / f"out-{fork_server}", jobs=1,
                                 fork_server=fork_server)
    cases, _ = sweep.enumerate_cases(specs, settings, log=lambda m: None)
    judge = judgemod.Judge(specs, settings)
    judge.scratch_root = runner.make_scratch("crashcheck-test-")
    return judge, cases


def test_a_server_lost_mid_sweep_is_replaced_by_exec(tmp_path):
    """Its case runs again, exec'd, with the same result; so do the
    combo's next cases."""
    judge, cases = judge_for(tmp_path, True)
    ref, _ = judge_for(tmp_path, False)
    try:
        combo = next(c.combo for c in cases if c.kind == "eio")
        mine = [c for c in cases if c.combo == combo and c.plan][:3]
        first = judge.execute(mine[0])
        server = judge._server
        key = judge._server_key
        assert server is not None and key == ("preload", *execute.argv_of(judge.combos[combo]))
        # started where its runs work, as an exec'd run starts
        assert os.readlink(f"/proc/{server.pid}/cwd") == \
            str(judge._scratch / casesmod.WORK)
        os.kill(server.pid, signal.SIGKILL)
        rest = [judge.execute(c) for c in mine[1:]]
        assert key in judge._unservable and judge._server is None
        strip = lambda r: {k: r[k] for k in COMPARED}       # noqa: E731
        assert [strip(r) for r in [first, *rest]] == \
            [strip(ref.execute(c)) for c in mine]
    finally:
        for j in (judge, ref):
            j.close_server()
            sweep.remove_work(j.settings.work_link)
            shutil.rmtree(j.scratch_root, ignore_errors=True)


def test_a_supervisor_server_that_ended_after_a_run_is_started_again(tmp_path):
    """Under the system-call backend a case that leaves a process ends its
    server (it still followed it); the next case of the command line gets
    a new server, not the exec'd way that a lost server earns."""
    from harness.engine import spec as specmod
    spec_path = tmp_path / "left.toml"
    spec_path.write_text(
        'name = "left"\ndescription = "leaves a sleep"\n'
        'command = ["/bin/sh", "-c", "cp \\"$1\\" \\"$0\\"; '
        '(sleep 30 &)", "{target}", "{new}"]\n'
        'contract = "in-place"\nsizes = [10]\n')
    specs = [specmod.load(spec_path)]
    settings = casesmod.Settings(out=tmp_path / "out", jobs=1,
                                 backend="syscall")
    cases, _ = sweep.enumerate_cases(specs, settings, log=lambda m: None)
    judge = judgemod.Judge(specs, settings)
    judge.scratch_root = runner.make_scratch("crashcheck-test-")
    try:
        mine = [c for c in cases if c.plan and c.backend == "syscall"][:2]
        assert len(mine) == 2
        servers = []
        for case in mine:
            result = judge.execute(case)
            assert result["verdict"] == "harness-error" and \
                "outlived" in result["finding"], result
            servers.append(judge._server)
            assert servers[-1] is not None and servers[-1].closed
            assert judge._server_key not in judge._unservable
        assert servers[0] is not servers[1]
        assert judge._server_key[0] == "syscall"
    finally:
        judge.close_server()
        sweep.remove_work(judge.settings.work_link)
        shutil.rmtree(judge.scratch_root, ignore_errors=True)


def audit_results(out, env, *extra):
    """An audit of a shell that has cat write the target (two processes:
    the shell opens the target, cat writes it)."""
    proc = subprocess.run(
        [str(ROOT / "scripts" / "crashcheck"), "audit", "--out", str(out),
         "--contract", "in-place", "--faults",
         "baseline,eintr,short,enospc,eio,crash", *extra, "--",
         "/bin/sh", "-c", 'cat "$0" > "$1"', "{new}", "{target}"],
        capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode in (0, 1), proc.stdout[-2000:] + proc.stderr[-2000:]
    with open(out / "results.json") as fh:
        cases = json.load(fh)["cases"]
    for c in cases:
        # a sanitizer's runtime reads /proc/PID/maps, which the
        # system-call backend sees
        c["trace_excerpt"] = [PROC_PID.sub("/proc/PID/", line)
                              for line in c["trace_excerpt"] or []]
    return {c["id"]: {k: c[k] for k in COMPARED} for c in cases}


# A preload of the user's: a line in $LOADS each time a program named
# $LOADS_NAME loads it (once per exec, not per fork), and with $THREAD a
# thread. Its I/O is raw system calls: through libc's, our library would
# initialize there, and fork there, before the line. (The dynamic loader
# runs its constructor before ours for some programs, /bin/sh among them,
# and after ours for others: either way it is the same under exec.)
LOADER = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
static void *idle(void *a) { (void)a; pause(); return 0; }
__attribute__((constructor)) static void loaded(void)
{
	const char *log = getenv("LOADS"), *name = getenv("LOADS_NAME");
	if (!log || !name || strcmp(program_invocation_short_name, name))
		return;
	long fd = syscall(SYS_openat, AT_FDCWD, log,
			  O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (fd >= 0) { syscall(SYS_write, fd, "x\n", 2); syscall(SYS_close, fd); }
	if (getenv("THREAD")) { pthread_t t; pthread_create(&t, 0, idle, 0); }
}
"""


@pytest.mark.parametrize("thread", [False, True])
def test_the_audit_forks_its_cases_unless_refused(tmp_path, thread):
    """An audit counting the shell's execs: its cases are forked (a
    handful of execs for dozens of cases) and give the --exec-each
    audit's results; with a thread before our library's initialization
    the server refuses the shell and every case is exec'd, with the
    same results."""
    lib = build(tmp_path, "loads.so", LOADER, "-shared", "-fPIC", "-pthread")
    loads = tmp_path / "loads"
    # unconfined: the count is the programs' writes to LOADS, outside
    # their scratch, which confinement would keep from it
    env = dict(os.environ, LD_PRELOAD=str(lib), LOADS=str(loads),
               LOADS_NAME="sh", CRASHCHECK_CONFINE="off")
    if thread:
        env["THREAD"] = "1"
    served = audit_results(tmp_path / "a", env)
    execs = len(loads.read_text().splitlines())
    loads.unlink()
    execd = audit_results(tmp_path / "b", env, "--exec-each")
    assert served == execd
    cases = len(served)
    # scripts/crashcheck (a shell script), the baseline and its second
    # recording (baseline.record_again), then a server per pool process, or
    # an exec per case
    assert len(loads.read_text().splitlines()) >= cases > 3 + os.cpu_count()
    if thread:
        assert execs >= cases
    else:
        assert execs <= 3 + os.cpu_count()


def test_one_server_serves_a_command_line_across_sizes(tmp_path):
    """The combos of one spec and strategy differ in size only: one
    server in a pool process serves them all, in one scratch emptied
    between them, WORK kept (the server started there). Where runs are
    confined, the server's view holds the process's directory of the
    scratch root, where the scratch is renamed from combo to combo: the
    same server, and the runs' verdicts those of exec'd runs."""
    judge, cases = judge_for(tmp_path, True)
    try:
        sync = [c for c in cases if c.plan and "-sync-" in c.combo]
        combos = sorted({c.combo for c in sync})
        assert len(combos) > 2
        firsts = [next(c for c in sync if c.combo == k) for k in combos]
        results, servers, works = [], set(), set()
        for c in firsts:
            results.append(judge.execute(c))
            servers.add(judge._server.pid)
            works.add(os.stat(judge._scratch / casesmod.WORK).st_ino)
        assert len(works) == 1
        assert len(servers) == 1
        ref, _ = judge_for(tmp_path / "ref", False)
        try:
            strip = lambda r: {k: r[k] for k in COMPARED}       # noqa: E731
            assert [strip(r) for r in results] == \
                [strip(ref.execute(c)) for c in firsts]
        finally:
            sweep.remove_work(ref.settings.work_link)
            shutil.rmtree(ref.scratch_root, ignore_errors=True)
    finally:
        judge.close_server()
        sweep.remove_work(judge.settings.work_link)
        shutil.rmtree(judge.scratch_root, ignore_errors=True)


def test_a_reused_scratch_keeps_its_snapshots_within_a_bound(tmp_path,
                                                             monkeypatch):
    """The next run of a combo finds the last runs' blobs (the store is
    by content: it writes only what is not there) while they are blobs
    alone and within SNAPS_KEEP_BLOBS and SNAPS_KEEP_BYTES; a blob a
    killed run left half written (a dot-name), anything else, or too
    much, and the directory is emptied; a link in its place is removed,
    never followed."""
    scratch = tmp_path / "s"
    scratch.mkdir()
    snaps = scratch / casesmod.SNAPS
    execute.prepare(scratch, b"old", b"new")
    (snaps / "0123456789abcdef").write_bytes(b"x" * 100)
    (snaps / "fedcba9876543210").write_bytes(b"y" * 100)
    execute.prepare(scratch, b"old", b"new", reuse_input=True)
    assert sorted(p.name for p in snaps.iterdir()) == \
        ["0123456789abcdef", "fedcba9876543210"]
    monkeypatch.setattr(execute, "SNAPS_KEEP_BYTES", 150)
    execute.prepare(scratch, b"old", b"new", reuse_input=True)
    assert list(snaps.iterdir()) == []
    monkeypatch.setattr(execute, "SNAPS_KEEP_BYTES", 1 << 20)
    monkeypatch.setattr(execute, "SNAPS_KEEP_BLOBS", 2)
    for name in ("a", "b", "c"):
        (snaps / name).write_bytes(b"z")
    execute.prepare(scratch, b"old", b"new", reuse_input=True)
    assert list(snaps.iterdir()) == []
    for odd in (".0123456789abcdef.42", "dir/"):
        if odd.endswith("/"):
            (snaps / odd).mkdir()
        else:
            (snaps / odd).write_bytes(b"half")
        execute.prepare(scratch, b"old", b"new", reuse_input=True)
        assert list(snaps.iterdir()) == [], odd
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_bytes(b"theirs")
    snaps.rmdir()
    snaps.symlink_to(outside)
    execute.prepare(scratch, b"old", b"new", reuse_input=True)
    assert snaps.is_dir() and not snaps.is_symlink()
    assert list(snaps.iterdir()) == []
    assert (outside / "keep").read_bytes() == b"theirs"


def test_the_runs_of_a_combo_store_a_blob_once(tmp_path):
    """Two fault cases of one combo, one after the other in one scratch:
    the new content's blob the first stored is the one the second finds
    (the same file, not written again), and the second's verdict is the
    one it has run alone."""
    judge, cases = judge_for(tmp_path, True)
    ref, _ = judge_for(tmp_path / "ref", True)
    try:
        combo = next(c.combo for c in cases if c.kind == "eio"
                     and "-sync-" in c.combo and "4096B" in c.combo)
        late = [c for c in cases if c.combo == combo and c.plan
                and c.kind == "eio" and c.plan.startswith("fsync(")][:2]
        assert len(late) == 2, [c.id for c in cases if c.combo == combo]
        first = judge.execute(late[0])
        snaps = judge._scratch / casesmod.SNAPS
        before = {p.name: p.stat().st_ino for p in snaps.iterdir()}
        second = judge.execute(late[1])
        after = {p.name: p.stat().st_ino for p in snaps.iterdir()}
        assert before and all(after.get(k) == v for k, v in before.items())
        strip = lambda r: {k: r[k] for k in COMPARED}       # noqa: E731
        assert strip(second) == strip(ref.execute(late[1]))
        assert first["verdict"] == second["verdict"]
    finally:
        for j in (judge, ref):
            j.close_server()
            sweep.remove_work(j.settings.work_link)
            shutil.rmtree(j.scratch_root, ignore_errors=True)


def test_a_scratch_whose_work_a_program_replaced_is_laid_out_again(tmp_path):
    scratch = tmp_path / "s"
    scratch.mkdir()
    execute.prepare(scratch, b"old", b"new")
    shutil.rmtree(scratch / casesmod.WORK)
    (scratch / casesmod.WORK).write_bytes(b"not a directory")
    execute.empty_scratch(scratch)
    assert list(scratch.iterdir()) == []
    execute.prepare(scratch, b"old", b"new")
    assert (scratch / casesmod.WORK / casesmod.TARGET).read_bytes() == b"old"


def hanging_sweep(tmp_path, script, *extra):
    """`crashcheck run` (baselines and EIO cases) of a spec whose program
    is `sh -c SCRIPT {target} {new}`, in a session of its own, started."""
    spec = tmp_path / "hang.toml"
    spec.write_text('name = "hang"\ndescription = "hangs"\n'
                    f'command = {json.dumps(["/bin/sh", "-c", script, "{target}", "{new}"])}\n'
                    'contract = "in-place"\nsizes = [10]\ntimeout = 60\n')
    return subprocess.Popen(
        [str(ROOT / "scripts" / "crashcheck"), "run", str(spec), "--out",
         str(tmp_path / "out"), "--faults", "baseline,eio", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)


def end_sweep(proc):
    """A sweep the test left running (it failed): stopped as a user would,
    then killed."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def until_none(find, seconds):
    """FIND() again until it finds nothing (a bound against a hang, not a
    measure); what it found last."""
    deadline = time.monotonic() + seconds
    while find() and time.monotonic() < deadline:
        time.sleep(0.05)
    return find()


@pytest.mark.parametrize("extra", [[], ["--exec-each"], ["--jobs", "1"]])
@pytest.mark.parametrize("sig,status", [(signal.SIGINT, 130),
                                        (signal.SIGTERM, 128 + 15)])
def test_a_sweep_interrupted_mid_run_leaves_no_server_or_run(tmp_path, sig,
                                                             status, extra):
    """^C (to the whole terminal group) or SIGTERM (a CI job cancelled)
    while fault cases hang, forked or exec'd, in a pool or in the sweep's
    own process (--jobs 1): the sweep ends at once with 128+N, and
    neither a server nor a run nor a run's child is left. (SIGTERM used
    to be taken for the waiting case's failure, and the sweep went on:
    in a pool's worker, then, until 2026-12-05, in a sweep of one job.)"""
    # both name this test's processes alone, whatever else runs
    marker = f"{os.getpid()}.{sig}"
    nap = f"{300 + sig}.{os.getpid()}"
    sleeper = f"sleep\0{nap}\0".encode()
    # it hangs under a plan: in its fault cases
    proc = hanging_sweep(tmp_path, f': {marker}; cat "$1" > "$0" || exit 1; '
                         f'if [ -n "$CRASHCHECK_PLAN" ]; then sleep {nap}; fi',
                         *extra)
    try:
        assert not until_none(lambda: not _marked(sleeper), 30), \
            "no fault case started"
        # the sweep's scratch: where its runs work, and its .work link
        scratch = {os.readlink(tmp_path / "out" / ".work")}
        for p in _marked(sleeper):
            try:            # the sleeper's: SCRATCH_ROOT/<pid>/<combo>/work
                cwd = os.readlink(f"/proc/{p}/cwd")
            except OSError:
                continue    # ended meanwhile
            scratch.add(os.path.dirname(os.path.dirname(os.path.dirname(cwd))))
        assert len(scratch) == 2, scratch
        if sig == signal.SIGINT:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    finally:
        end_sweep(proc)
    assert proc.returncode == status, err[-2000:]
    assert until_none(lambda: _marked(marker) + _marked(sleeper), 10) == []
    # and its scratch directories are gone
    assert [d for d in scratch if os.path.exists(d)] == []
    assert not os.path.lexists(tmp_path / "out" / ".work")


def test_sigterm_while_the_baselines_record_ends_a_sweep_of_one_job(tmp_path):
    """SIGTERM while a baseline runs, in a sweep of one job (the baselines
    recorded in its own process): 143, said as an interruption, not a
    baseline that could not be recorded; nothing of it left."""
    nap = f"{400 + signal.SIGTERM}.{os.getpid()}"
    sleeper = f"sleep\0{nap}\0".encode()
    proc = hanging_sweep(tmp_path, f"sleep {nap}", "--jobs", "1")
    try:
        assert not until_none(lambda: not _marked(sleeper), 30), \
            "the baseline never started"
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        end_sweep(proc)
    assert proc.returncode == 128 + signal.SIGTERM, err[-2000:]
    assert "could not be recorded" not in err
    assert until_none(lambda: _marked(sleeper), 10) == []


def test_a_served_bash_gets_the_runs_environment(tmp_path, home):
    """bash defines setenv and unsetenv of its own (its shell's
    variables, nothing before its main) and builds its children's
    environment from main's third argument: a served run of it still
    has the run's variables and not the server's, and so do its
    children (before, they had the server's descriptor variable and no
    plan, and every planned fault of a bash script never fired)."""
    srv = serve(["/bin/bash", "-c", 'echo "$FOO"; env | grep -c -e '
                 "'^CRASHCHECK_SERVE=' -e '^CRASHCHECK_SLOT' || true; "
                 "sh -c 'echo \"$FOO\"'"], home)
    try:
        for value in ("one", "two"):
            run = srv.run(cwd=str(home), timeout=20, extra={"FOO": value})
            assert run.status == 0 and not run.timed_out, run.stderr
            assert run.stdout.decode().split() == [value, "0", value], \
                run.stdout
    finally:
        srv.close()


def test_a_bash_script_served_is_judged_as_execd(tmp_path):
    """An audit of a bash script whose commands do the work: its forked
    cases fire their faults in the script's children and give the
    verdicts of an audit that execs every case."""
    script = tmp_path / "save.sh"
    script.write_text('#!/bin/bash\ncp "$2" "$1.tmp" || exit 1\n'
                      'sync "$1.tmp" || exit 1\nmv "$1.tmp" "$1" || exit 1\n')
    script.chmod(0o755)
    got = {}
    for mode, extra in (("served", ()), ("execd", ("--exec-each",))):
        out = tmp_path / mode
        proc = subprocess.run(
            [str(ROOT / "scripts" / "crashcheck"), "audit", "--out", str(out),
             *extra, "--", str(script), "{target}", "{new}"],
            capture_output=True, text=True, timeout=600)
        assert proc.returncode in (0, 1), proc.stdout[-2000:] + proc.stderr
        with open(out / "results.json") as fh:
            cases = json.load(fh)["cases"]
        assert not [c["id"] for c in cases
                    if c["verdict"] == "harness-error"], proc.stdout[-3000:]
        got[mode] = {c["id"]: c["verdict"] for c in cases}
    assert got["served"] == got["execd"]
    assert "not-durable" in got["served"].values()


def confined_server(tmp_path, scratch=None):
    """(server, scratch) of a sh script's server whose view holds its
    scratch (ForkServer's confine; a new one by default), where runs
    are confined here."""
    from harness.engine import confine
    if not confine.available():
        pytest.skip(f"no confinement here: {confine.reason() or 'off'}")
    if scratch is None:
        scratch = runner.make_scratch("crashcheck-test-")
        (scratch / casesmod.WORK).mkdir()
    work = scratch / casesmod.WORK
    script = ('if [ -n "$MOUNT" ]; then mkdir -p m && mount -t tmpfs none m; '
              'fi; if [ -n "$OUTSIDE" ]; then echo x > "$OUTSIDE"; fi; '
              'pwd; cat /proc/self/mountinfo | wc -l')
    server = forkserver.ForkServer(["/bin/sh", "-c", script], home=work,
                               timeout=30, confine=[scratch])
    return server, scratch


def served(server, scratch, **extra):
    return server.run(cwd=scratch / casesmod.WORK, timeout=30,
                      confine=[scratch], extra=extra)


def test_a_confined_servers_runs_share_its_view(tmp_path):
    """A confined server is started in its runs' view, and each run is
    forked in it: the same mounts, the scratch its own, nothing named
    outside; a run whose scratch is another directory is refused as
    stale (its caller starts a server there)."""
    server, scratch = confined_server(tmp_path)
    try:
        first, second = served(server, scratch), served(server, scratch)
        assert first.status == second.status == 0, first.stderr
        assert first.stdout == second.stdout
        assert first.stdout.split(b"\n")[0] == \
            os.fsencode(scratch / casesmod.WORK)
        assert first.outside == second.outside == []
        assert server.confined_to([scratch])
        other = runner.make_scratch("crashcheck-test-")
        try:
            (other / casesmod.WORK).mkdir()
            assert not server.confined_to([other])
            with pytest.raises(forkserver.ServerStale):
                served(server, other)
        finally:
            shutil.rmtree(other, ignore_errors=True)
    finally:
        server.close()
        shutil.rmtree(scratch, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="mounts a tmpfs: root only")
def test_a_run_that_mounts_leaves_its_server_stale(tmp_path):
    """The runs of a confined server share its mount namespace: a run
    that mounts something would hand it to the next, which is refused
    instead (ServerStale), and a new server serves it."""
    server, scratch = confined_server(tmp_path)
    try:
        run = served(server, scratch, MOUNT="1")
        assert run.status == 0, run.stderr
        with pytest.raises(forkserver.ServerStale):
            served(server, scratch)
    finally:
        server.close()
    server, _ = confined_server(tmp_path, scratch)
    try:
        assert served(server, scratch).status == 0
    finally:
        server.close()
        shutil.rmtree(scratch, ignore_errors=True)


def test_a_run_that_writes_outside_ends_its_server(tmp_path):
    """What a served run writes outside its scratch is named, as an
    exec'd run's is; the view it went to is thrown away, and the server
    that is in it is closed: the next run starts another."""
    server, scratch = confined_server(tmp_path)
    target = os.path.join(os.path.expanduser("~"),
                          f".cc-served-{os.getpid()}")
    try:
        run = served(server, scratch, OUTSIDE=target)
        assert not os.path.exists(target)
        if os.geteuid() == 0:
            assert run.outside == ["~/" + os.path.basename(target)]
            assert server.closed
    finally:
        server.close()
        shutil.rmtree(scratch, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="mounts a tmpfs: root only")
def test_a_mount_on_the_scratch_after_the_server_started_is_not_served(
        tmp_path):
    """A filesystem the harness mounts in a run's scratch after the
    server started (--fs mounts each run's on its work directory) is
    not in the server's view: the run is refused as stale, where it
    would have written to the directory under the mount."""
    server, scratch = confined_server(tmp_path)
    work = scratch / casesmod.WORK
    try:
        subprocess.run(["mount", "-t", "tmpfs", "none", str(work)],
                       check=True)
        try:
            with pytest.raises(forkserver.ServerStale):
                served(server, scratch)
        finally:
            subprocess.run(["umount", str(work)], check=True)
        assert served(server, scratch).status == 0
    finally:
        server.close()
        shutil.rmtree(scratch, ignore_errors=True)
