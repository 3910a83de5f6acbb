"""What crashcheck promises about your files, your processes and its
reports, checked from the outside (docs: "Promises").

- Processes: every process a run starts is contained (harness/engine/
  contain.py): a daemon that double-forks and calls setsid() is named in
  its case's verdict and killed, in a cgroup and in the subreaper
  fallback (CRASHCHECK_CONTAIN forces each); a crashcheck killed outright
  leaves nothing running; the pool's processes never run the parent's
  signal handlers, a pool process that dies costs only its case, and a
  stopped one cannot hang the end of a run.
- Files: a refused command changes nothing; an output directory is
  crashcheck's by its marker alone, never by the names in it; nothing
  is written through a link in it; only crashcheck's own files are
  replaced; two runs into one --out are refused.
- Reports: no case vanishes; an interrupted run says INTERRUPTED first,
  never PASS, and merge refuses it; a checker that hangs or crashes is a
  harness-error.

Processes are found by a marker in their command line, unique to each
test, never by name: other runs share the machine.
"""

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

from harness import ROOT
from harness.engine import pool
from procs import alive, marked, sleep_in_a_cgroup_below

CRASHCHECK = ROOT / "scripts" / "crashcheck"
PYTHON = "/usr/bin/python3"
BIN = ROOT / "workloads" / "bin"


def cli(*args, env=None, timeout=300, cwd=None):
    return subprocess.run([str(CRASHCHECK), *map(str, args)], cwd=cwd or ROOT,
                          env=env, capture_output=True, text=True,
                          timeout=timeout)


def one_error_line(proc):
    lines = proc.stderr.splitlines()
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("crashcheck: "), lines
    return lines[0]


def results(out):
    with open(Path(out) / "results.json") as fh:
        return json.load(fh)


def write_spec(path, name, command, sizes=(10,), extra=""):
    path.write_text(f'name = "{name}"\ndescription = "safety probe"\n'
                    f"command = {json.dumps(list(command))}\n"
                    f'contract = "in-place"\nsizes = {json.dumps(list(sizes))}\n'
                    + extra)
    return path


def sleeping(marker):
    """Pids of the live `sleep MARKER` processes (a program's script,
    which holds the marker too, is not one)."""
    return marked(b"sleep\0" + marker.encode() + b"\0")


def gone_within(check, seconds=30):
    """Wait (bounded, polling) until CHECK() is falsy; its last value.
    A bound for a test that would otherwise hang, not a measure: the
    killing is asynchronous."""
    deadline = time.monotonic() + seconds
    value = check()
    while value and time.monotonic() < deadline:
        time.sleep(0.05)
        value = check()
    return value


def cgroup_available():
    probe = subprocess.run(
        [PYTHON, "-c", "from harness.engine import contain; "
         "s = contain.session(); print(s.mode, s.reason)"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
        env=dict(os.environ, CRASHCHECK_CONTAIN="auto"))
    return probe.stdout.split()[:1] == ["cgroup"], probe.stdout.strip()


MODES = ["cgroup", "subreaper"]


@pytest.fixture(params=MODES)
def mode(request):
    """CRASHCHECK_CONTAIN for the crashcheck processes a test starts:
    each test runs in both (the cgroup one skips where the machine has
    no writable cgroup v2, saying why)."""
    if request.param == "cgroup":
        ok, why = cgroup_available()
        if not ok:
            pytest.skip(f"no writable cgroup v2 here: {why}")
    return dict(os.environ, CRASHCHECK_CONTAIN=request.param)


# ----------------------------------------------------------- containment

def daemon_script(marker):
    """A program that does its job (copies new over target), then leaves
    a daemon behind: double fork, setsid, and a sleep whose argument is
    MARKER; the program exits once the daemon is that sleep (its pid in
    ../daemon.PID, in the scratch, outside the work directory)."""
    return (f'cp "$1" "$0" || exit 1\n'
            f'f=../daemon.$$\n'
            f'( setsid sh -c \'echo $$ > "$0"; exec sleep {marker}\' "$f" & )\n'
            f'until [ -s "$f" ] && [ "$(head -c 5 /proc/$(cat "$f")/cmdline)" '
            f'= sleep ]; do :; done\n'
            f'exit 0\n')


@pytest.mark.parametrize("backend", ["preload", "syscall"])
@pytest.mark.parametrize("extra", [[], ["--exec-each"]], ids=["forked", "exec"])
def test_a_daemon_is_named_and_killed_and_its_case_cannot_pass(tmp_path, mode,
                                                               extra, backend):
    """A program that leaves a daemon (double fork + setsid, out of its
    process group) whenever it gets past its copy: each such case is a
    harness-error that names it (the baseline, the power-loss cases built
    on it, every fault case it survived), and none of the daemons is left
    running, in a cgroup or in the fallback, served (forked from the fork
    server, or run by the supervisor's) or exec'd, under either backend."""
    extra = [*extra, "--backend", backend]
    marker = f"1000.{os.getpid()}{len(extra)}{len(mode['CRASHCHECK_CONTAIN'])}" \
        f"{len(backend)}"
    spec = write_spec(tmp_path / "d.toml", "daemon",
                      ["/bin/sh", "-c", daemon_script(marker), "{target}",
                       "{new}"])
    out = tmp_path / "out"
    proc = cli("run", spec, "--out", out, "--faults", "baseline,eio,powerloss",
               "--jobs", "2", *extra, env=mode)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert gone_within(lambda: marked(marker)) == []
    cases = results(out)["cases"]
    left = [c for c in cases if c["exit"]["status"] == 0
            or c["kind"] == "powerloss"]
    assert len(left) > 3 and any(c["kind"] == "powerloss" for c in left)
    for c in left:
        assert c["verdict"] == "harness-error", c
        assert "outlived" in c["finding"] and f"sleep {marker}" in c["finding"], c


BOX_PROBE = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[1])
    from harness.engine import contain, runner
    contain.own_process()       # a supervisor of crashcheck's
    # the program ends once its daemon is sleep (named so)
    run = runner.run(["/bin/sh", "-c", "setsid sleep %s & p=$!; "
                      "until [ \\"$(head -c 5 /proc/$p/cmdline)\\" = sleep ]; "
                      "do :; done; echo $p > pid" % sys.argv[2]],
                     cwd=sys.argv[3], timeout=60, preload=False)
    print(run.status, run.outlived)
    clean = runner.run(["/bin/sh", "-c", "sleep 0 & wait"], cwd=sys.argv[3],
                       timeout=60, preload=False)
    print(clean.status, clean.outlived)
""")


def test_a_box_names_what_outlived_its_program(tmp_path, mode):
    """contain.Box on its own, as another supervisor would use it
    (through runner.run): the program ends, its setsid'd grandchild is
    named and killed; a program that leaves nothing leaves an empty
    list."""
    marker = f"1001.{os.getpid()}{len(mode['CRASHCHECK_CONTAIN'])}"
    proc = subprocess.run([PYTHON, "-c", BOX_PROBE, str(ROOT), marker,
                           str(tmp_path)], env=mode, capture_output=True,
                          text=True, timeout=120)
    pid = (tmp_path / "pid").read_text().strip()
    lines = proc.stdout.splitlines()
    assert lines[0] == f"0 ['pid {pid} (sleep {marker})']", \
        proc.stdout + proc.stderr
    assert lines[1:] == ["0 []"], proc.stdout + proc.stderr
    assert not alive(int(pid))


BELOW_PROBE = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[1])
    from harness.engine import contain, runner
    contain.own_process()
    # the program moves a process of its into a cgroup it makes below
    # the run's, and ends once it is there (procs.sleep_in_a_cgroup_below)
    run = runner.run(["/bin/sh", "-c", sys.argv[2]],
                     cwd=sys.argv[3], timeout=60, preload=False)
    print(run.status, run.outlived)
""")


def test_a_box_names_what_outlived_it_in_a_cgroup_below(tmp_path):
    """A process the program moved into a cgroup of its own making,
    below the run's, is named as anything else that outlived the
    program, and killed (it used to be killed without a word, and its
    case could pass)."""
    ok, why = cgroup_available()
    if not ok:
        pytest.skip(f"no writable cgroup v2 here: {why}")
    marker = f"1002.{os.getpid()}"
    proc = subprocess.run([PYTHON, "-c", BELOW_PROBE, str(ROOT),
                           sleep_in_a_cgroup_below(marker), str(tmp_path)], capture_output=True, text=True,
                          timeout=120,
                          env=dict(os.environ, CRASHCHECK_CONTAIN="cgroup"))
    line, = proc.stdout.splitlines() or [proc.stderr]
    assert re.fullmatch(rf"0 \['pid \d+ \(sleep {re.escape(marker)}\)'\]",
                        line), proc.stdout + proc.stderr
    assert gone_within(lambda: marked(marker)) == []


@pytest.fixture(scope="module")
def lingerer(tmp_path_factory):
    exe = tmp_path_factory.mktemp("lingerer") / "lingerer"
    proc = subprocess.run(["cc", "-O1", "-Wall", "-Wextra", "-o", str(exe),
                           str(ROOT / "tests" / "progs" / "lingerer.c")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return exe


def test_a_child_that_ends_soon_after_its_program_is_not_reported(
        tmp_path, mode, lingerer):
    """A child still in its exit when the program ends (rsync's sleep
    100 ms after an error) is given contain.OUTLIVE_GRACE to end on its
    own: this one sleeps 150 ms and is not named; one that never ends
    still is, its case a harness-error, and it is killed. Under the
    system-call backend in a cgroup (the supervisor follows the child
    for that grace itself), under the preload in the fallback (the
    cgroup-less machine tests the preload)."""
    backend = "syscall" if mode["CRASHCHECK_CONTAIN"] == "cgroup" \
        else "preload"
    marker = f"1003.{os.getpid()}{len(mode['CRASHCHECK_CONTAIN'])}"
    for ms, ok in (("150", True), ("-1", False)):
        out = tmp_path / f"out{ms}"
        proc = cli("audit", "--backend", backend, "--faults", "baseline",
                   "--out", out, "--", lingerer, ms, marker, "{target}",
                   "{new}", env=mode)
        assert proc.returncode == (0 if ok else 1), proc.stdout + proc.stderr
        case, = results(out)["cases"]
        if ok:
            assert case["verdict"] == "ok", case
        else:
            assert case["verdict"] == "harness-error", case
            # the command line is cut at a length: the marker comes
            # early enough to be kept whatever the temporary path's length
            assert "outlived" in case["finding"] \
                and f"lingerer -1 {marker}" in case["finding"], case
        assert gone_within(lambda: marked(marker)) == []


KILLED_PROBE = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[1])
    from harness.engine import contain, runner
    contain.own_process()
    for end in ("kill -KILL $$", "exit 0"):
        run = runner.run(["/bin/sh", "-c", "setsid sleep 0.15 & echo $! > "
                          "pid; " + end], cwd=sys.argv[2], timeout=60,
                         preload=False)
        print(run.signal or run.status, run.outlived,
              open(sys.argv[2] + "/pid").read().strip())
""")


def test_a_program_killed_outright_has_what_it_left_killed_at_once(
        tmp_path, mode):
    """A program that ends by SIGKILL (the library's planned crash)
    gives what it leaves no grace: the child that would have ended 150
    ms later is named; after an exit it is not."""
    proc = subprocess.run([PYTHON, "-c", KILLED_PROBE, str(ROOT),
                           str(tmp_path)], env=mode, capture_output=True,
                          text=True, timeout=120)
    killed, exited = proc.stdout.splitlines()
    pid = killed.split()[-1]
    # named by its pid: it may not have exec'd sleep yet when it was found
    assert killed.startswith(f"9 ['pid {pid} (") and killed.count("pid ") \
        == 1, proc.stdout + proc.stderr
    assert exited.startswith("0 [] "), proc.stdout + proc.stderr


def test_inject_says_what_outlived_the_program(tmp_path, mode):
    marker = f"1002.{os.getpid()}{len(mode['CRASHCHECK_CONTAIN'])}"
    proc = cli("inject", "write#9=EIO", "--", "/bin/sh", "-c",
               f"setsid sleep {marker} & p=$!; until [ \"$(head -c 5 "
               f"/proc/$p/cmdline)\" = sleep ]; do :; done; echo $p > pid",
               env=mode,
               cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    pid = (tmp_path / "pid").read_text().strip()
    assert f"still running when the program ended, killed: pid {pid} " \
           f"(sleep {marker})" in proc.stderr, proc.stderr
    assert gone_within(lambda: marked(marker)) == []


def test_killing_crashcheck_outright_leaves_no_program(tmp_path, mode):
    """SIGKILL to crashcheck itself while its cases run, each of which
    started a daemon and still runs: neither the programs nor the daemons
    nor the pool's processes or fork servers run on, and its scratch
    directories go (the watchdog; the pool's processes and servers die
    with their parent)."""
    marker = f"1003.{os.getpid()}{len(mode['CRASHCHECK_CONTAIN'])}"
    # the baseline ends; the fault cases each start a daemon and sleep
    script = (f'cp "$1" "$0"; [ -n "$CRASHCHECK_PLAN" ] || exit 0\n'
              f'( setsid sh -c "exec sleep {marker}" & )\n'
              f'exec sleep {marker}\n')
    spec = write_spec(tmp_path / "k.toml", "slow",
                      ["/bin/sh", "-c", script, "{target}", "{new}"],
                      extra="timeout = 600\n")
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [str(CRASHCHECK), "run", str(spec), "--out", str(out), "--jobs", "2",
         "--faults", "baseline,eio"], env=mode, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        # the baseline, then two fault cases at once: four sleeps
        assert gone_within(lambda: len(sleeping(marker)) < 4, 120) is False, \
            "the cases never started"
        scratch = os.readlink(out / ".work")
        ours = [p for p in _descendants(proc.pid)]
        proc.kill()
        proc.wait(timeout=60)
        assert gone_within(lambda: marked(marker)) == []
        assert gone_within(lambda: [p for p in ours if alive(p)]) == []
        assert gone_within(lambda: os.path.exists(scratch)) is False
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("said", ["ended", "ended, then more", "nothing"])
def test_the_watchdog_kills_what_is_left_unless_the_session_ended_clean(
        tmp_path, said):
    """The watchdog at the end of its pipe: it removes every directory
    registered that is still there; it kills the processes carrying the
    session's token unless the last line says the session ended in order
    (Session.shutdown writes it only once it found none of them)."""
    from harness.engine import contain
    token = f"watchdogtest{os.getpid()}{len(said)}"
    marker = f"1004.{os.getpid()}{len(said)}"
    straggler = subprocess.Popen(
        ["sleep", marker], env=dict(os.environ, CRASHCHECK_SESSION=token),
        start_new_session=True)
    left = tmp_path / "left"
    (left / "sub").mkdir(parents=True)
    lines = f"dir {left}\ndir {tmp_path / 'gone'}\n"
    if said.startswith("ended"):
        lines += "ended\n"
    if said == "ended, then more":
        lines += f"dir {tmp_path / 'later'}\n"
    try:
        done = subprocess.run(
            ["/bin/sh", "-c", contain.WATCHDOG, "crashcheck-watchdog", token],
            input=lines, text=True, capture_output=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert not left.exists()
        if said == "ended":
            assert straggler.poll() is None
        else:
            assert straggler.wait(timeout=30) == -signal.SIGKILL
    finally:
        straggler.kill()
        straggler.wait()


def _descendants(pid):
    """Pids of PID's descendants now (by parent links in /proc)."""
    parent = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    parent[int(entry)] = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                pass
    found, frontier = [], [pid]
    while frontier:
        p = frontier.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        found += kids
        frontier += kids
    return found


KILLED_IN_SETUP = textwrap.dedent("""
    import os, signal, sys
    sys.path.insert(0, sys.argv[1])
    from harness.engine import contain
    real = os.mkdir
    def mkdir(path, *a, **k):
        real(path, *a, **k)
        if os.path.basename(path).startswith("crashcheck-"):
            print(path, flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
    os.mkdir = mkdir
    contain.Session()
""")


def test_killed_as_its_cgroup_is_made_leaves_no_cgroup(tmp_path):
    """SIGKILL to crashcheck the moment its session's cgroup exists (the
    watchdog is started before it, and told of it before it is made: a
    kill in between left the cgroup behind for good)."""
    proc = subprocess.run(
        [PYTHON, "-c", KILLED_IN_SETUP, str(ROOT)], capture_output=True,
        text=True, timeout=60,
        env=dict(os.environ, CRASHCHECK_CONTAIN="cgroup"))
    if "no writable cgroup" in proc.stderr:
        pytest.skip("no writable cgroup v2 here")
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    made = proc.stdout.strip()
    assert made, "the session made no cgroup"
    assert gone_within(lambda: os.path.isdir(made)) is False


def test_a_bad_containment_mode_is_one_line(tmp_path):
    proc = cli("inject", "fsync#1=EIO", "--", "/bin/true", cwd=tmp_path,
               env=dict(os.environ, CRASHCHECK_CONTAIN="jail"))
    line = one_error_line(proc)
    assert "CRASHCHECK_CONTAIN: 'jail' is not one of auto, cgroup, subreaper" \
        in line


# -------------------------------------------------------------- the pool

POOL_PROBE = textwrap.dedent("""
    import os, signal, sys, time
    sys.path.insert(0, sys.argv[1])
    from harness.engine import pool

    def parent_handler(signum, frame):
        os.write(2, b"PARENT HANDLER RAN in pid %d\\n" % os.getpid())

    signal.signal(signal.SIGTERM, parent_handler)
    for round in range(int(sys.argv[2])):
        p, results = pool.start(lambda i: time.sleep(0.01) or i, range(6), 2)
        # stopped at once: the workers are still starting
        pool.stop(p, finished=False)
    print("stopped", flush=True)
""")


def test_pool_workers_never_run_the_parents_handlers(tmp_path):
    """A pool stopped while its workers start: SIGTERM used to land in a
    worker before its handlers were set and run the parent's (pytest's
    exit, then a traceback and a hang on a lock). Now they start with it
    blocked; nothing of the parent's runs, nothing is printed, and every
    stop returns."""
    proc = subprocess.run([PYTHON, "-c", POOL_PROBE, str(ROOT), "10"],
                          capture_output=True, text=True, timeout=300)
    assert proc.stdout == "stopped\n", proc.stdout + proc.stderr
    assert proc.stderr == "", proc.stderr


def test_a_stopped_worker_cannot_hang_the_pools_end(monkeypatch):
    """A worker that is stopped (SIGSTOP) when the pool stops is killed
    after STOP_WAIT (made short here, for speed), not waited for."""
    monkeypatch.setattr(pool, "STOP_WAIT", 0.2)
    p, results = pool.start(lambda i: time.sleep(600), range(2), 2)
    try:
        pids = list(p.workers)
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
    finally:
        pool.stop(p, finished=False)
    assert [pid for pid in pids if alive(pid)] == []


def test_a_worker_that_dies_costs_only_its_case(tmp_path, mode):
    """A pool process killed while it runs a case (its program kills it):
    that case is a harness-error saying so, every other case has its
    result, and the run ends."""
    marker = f"kill-parent-{os.getpid()}"
    script = (f': {marker}\n'
              'case "$CRASHCHECK_PLAN" in close\\(target\\)\\#1=EIO) '
              'kill -KILL $PPID;; esac\n'
              'cp "$1" "$0" || exit 1\n')
    spec = write_spec(tmp_path / "w.toml", "killer",
                      ["/bin/sh", "-c", script, "{target}", "{new}"])
    out = tmp_path / "out"
    # exec'd: the program's parent is the pool process itself
    proc = cli("run", spec, "--out", out, "--jobs", "2", "--exec-each",
               "--faults", "baseline,eio,enospc", env=mode)
    assert proc.returncode == 1, proc.stderr[-2000:]
    doc = results(out)
    by_id = {c["id"]: c for c in doc["cases"]}
    dead = by_id["killer-10B-close(target)#1=EIO"]
    assert dead["verdict"] == "harness-error"
    assert "pool process running this case" in dead["finding"]
    assert "killed by SIGKILL" in dead["finding"]
    others = [c for c in doc["cases"] if c is not dead]
    assert others and all(c["verdict"] != "harness-error" for c in others), \
        [c["finding"] for c in others if c["verdict"] == "harness-error"]
    assert doc["summary"]["expected"] == len(doc["cases"])
    assert doc["summary"]["missing"] == 0
    assert gone_within(lambda: marked(marker)) == []


# ---------------------------------------------------------- your files

def tree(path):
    """Every path under PATH with its content (files) or None (dirs)."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(path):
        for d in dirnames:
            found[os.path.relpath(os.path.join(dirpath, d), path)] = None
        for f in filenames:
            p = os.path.join(dirpath, f)
            found[os.path.relpath(p, path)] = Path(p).read_bytes()
    return found


REPLACE_SPEC = ROOT / "workloads" / "specs" / "replace.toml"


def small_spec(tmp_path):
    return write_spec(tmp_path / "r.toml", "r",
                      [str(BIN / "replace"), "--strategy=sync", "{target}",
                       "{new}"], sizes=[1])


@pytest.fixture(scope="module")
def previous_run(tmp_path_factory):
    """A results directory of an earlier full run, with a finding's case
    directory (a buggy variant's), made once."""
    tmp = tmp_path_factory.mktemp("previous")
    spec = write_spec(tmp / "u.toml", "u",
                      [str(BIN / "fsync-unchecked"), "--strategy=stdio",
                       "{target}", "{new}"], sizes=[4097])
    out = tmp / "prev"
    proc = cli("run", spec, "--out", out, "--faults", "baseline,eio")
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    assert any(c["dir"] for c in results(out)["cases"]), "no case directory"
    return spec, out


@pytest.fixture
def previous(previous_run, tmp_path):
    """A copy of previous_run's results, plus a file and a directory of
    the user's inside it."""
    spec, made = previous_run
    out = tmp_path / "prev"
    shutil.copytree(made, out, symlinks=True)
    (out / "notes.txt").write_text("mine\n")
    (out / "cases" / "my-own").mkdir()
    (out / "cases" / "my-own" / "x").write_text("mine too\n")
    return spec, out


@pytest.mark.parametrize("args", [
    ["--seed", "x"], ["--jobs", "0"], ["--faults", "bogus"],
    ["--case", "nonsense"], ["-k", "a and ("], ["--timeout", "0"],
])
def test_a_refused_command_changes_nothing(previous, args):
    """A usage error, however late it is found, leaves the results
    directory as it was: reports, case directories and the user's files
    (it used to remove cases/ first)."""
    spec, out = previous
    before = tree(out)
    proc = cli("run", spec, "--out", out, *args)
    one_error_line(proc)
    assert tree(out) == before


def test_a_case_id_refused_after_the_enumeration_changes_nothing(previous):
    spec, out = previous
    before = tree(out)
    proc = cli("run", spec, "--out", out, "--case", "u-stdio-4097B-fsync#99=EIO")
    assert proc.returncode == 2, proc.stderr
    assert tree(out) == before


def test_a_refused_command_makes_no_directory(tmp_path):
    spec = small_spec(tmp_path)
    for args in (["--seed", "x"], ["--case", "r-sync-1B-fsync#99=EIO"]):
        proc = cli("run", spec, "--out", tmp_path / "new" / "out", *args)
        assert proc.returncode == 2, proc.stderr
        assert not (tmp_path / "new" / "out").exists(), args


def test_a_new_run_replaces_only_crashchecks_files(previous):
    """The next full run into the same --out: the earlier run's case
    directories that this run did not write go, the user's file and
    directory stay, and so does a file the user put in a case directory
    of an earlier run, with the directory: only crashcheck's own files
    in it go."""
    spec, out = previous
    stale = out / "cases" / "u-stdio-4097B-made-up-earlier"
    stale.mkdir()
    (stale / "result.json").write_text("{}")
    (stale / "README.txt").write_text("crashcheck's\n")
    kept = out / "cases" / "u-stdio-4097B-made-up-too"
    kept.mkdir()
    (kept / "result.json").write_text("{}")
    (kept / "my-notes.txt").write_text("why this case matters\n")
    proc = cli("run", spec, "--out", out, "--faults", "baseline")
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    assert not stale.exists()
    assert sorted(os.listdir(kept)) == ["my-notes.txt"]
    assert (out / "notes.txt").read_text() == "mine\n"
    assert (out / "cases" / "my-own" / "x").read_text() == "mine too\n"


def test_a_failed_run_leaves_the_last_ones_files(previous, tmp_path):
    """A run whose program cannot start ends in one line; the earlier
    run's reports and case directories stay (they used to be removed
    before the run began)."""
    spec, out = previous
    before = tree(out)
    bad = write_spec(tmp_path / "u2.toml", "u",
                     ["/nonexistent/prog", "{target}", "{new}"], sizes=[1])
    proc = cli("run", bad, "--out", out, "--jobs", "2")
    assert proc.returncode == 2, proc.stderr
    assert tree(out) == before


@pytest.mark.parametrize("command", ["run", "audit", "replay", "merge"])
def test_a_directory_that_is_not_crashchecks_is_refused(tmp_path, command,
                                                         previous):
    """--out naming a directory that holds the user's files and no
    marker: one line, exit 2, the directory untouched (replay used to
    remove it whole)."""
    spec, prev = previous
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work\n")
    args = {
        "run": ["run", spec, "--out", mine],
        "audit": ["audit", "--out", mine, "--", str(BIN / "replace"),
                  "--strategy=sync", "{target}", "{new}"],
        "replay": ["replay", "--results", prev / "results.json", "--out", mine,
                   results(prev)["cases"][0]["id"]],
        "merge": ["merge", "--out", mine, prev],
    }[command]
    line = one_error_line(cli(*args))
    assert f"--out: '{mine}' is not empty and not crashcheck's" in line
    assert tree(mine) == {"thesis.tex": b"years of work\n"}


def test_replay_replaces_its_own_state_only(tmp_path, previous):
    spec, prev = previous
    dest = tmp_path / "replayed"
    case = next(c for c in results(prev)["cases"] if c["dir"])["id"]
    for _ in range(2):
        proc = cli("replay", "--results", prev / "results.json", "--out",
                   dest, case)
        assert proc.returncode in (0, 1), proc.stderr
        (dest / "my-notes.txt").write_text("mine\n")
    assert (dest / "README.txt").is_file() and (dest / "state").is_dir()
    assert (dest / "my-notes.txt").read_text() == "mine\n"


# ------------------------------------------ ownership: the marker alone

def test_a_directory_shaped_like_a_replay_is_not_taken_for_one(tmp_path,
                                                              previous):
    """Issue 31: `replay --out d`, d holding state/thesis.tex and
    README.txt and no marker, deleted the thesis and replaced the
    README: its names looked like a replay's. Names prove nothing: it
    is refused, and nothing in it changes."""
    spec, prev = previous
    d = tmp_path / "d"
    (d / "state").mkdir(parents=True)
    (d / "state" / "thesis.tex").write_text("x\n")
    (d / "README.txt").write_text("r\n")
    before = tree(d)
    line = one_error_line(cli("replay", "--results", prev / "results.json",
                              "--out", d, results(prev)["cases"][0]["id"]))
    assert f"--out: '{d}' is not empty and not crashcheck's" in line
    assert tree(d) == before


@pytest.mark.parametrize("command", ["run", "audit", "merge"])
def test_a_directory_of_reports_without_the_marker_is_refused(tmp_path,
                                                               previous,
                                                               command):
    """The user's own report.md and results.json (no marker), or what a
    crashcheck from before the marker left: neither is crashcheck's to
    overwrite (audit --out used to take it)."""
    spec, prev = previous
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "report.md").write_text("# my report\n")
    (mine / "results.json").write_text("{}\n")
    (mine / "cases").mkdir()
    before = tree(mine)
    args = {"run": ["run", spec, "--out", mine, "--faults", "baseline"],
            "audit": ["audit", "--out", mine, "--", str(BIN / "replace"),
                      "--strategy=sync", "{target}", "{new}"],
            "merge": ["merge", "--out", mine, prev]}[command]
    line = one_error_line(cli(*args))
    assert "no .crashcheck marker" in line and "move" in line, line
    assert tree(mine) == before


@pytest.mark.parametrize("entry", ["cases", "README.txt", "state",
                                   "report.md", "results.sarif", ".audit",
                                   ".work.kept"])
def test_no_write_goes_through_a_link_in_a_marked_directory(tmp_path,
                                                            previous, entry):
    """A marked output directory whose cases/ (or any entry crashcheck
    writes: a replay's README.txt and state/, a report, .audit) is a
    symbolic link to the user's: refused before anything is written;
    case folders used to be written through the link."""
    spec, prev = previous
    users = tmp_path / "users"
    users.mkdir()
    (users / "keep.txt").write_text("mine\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / ".crashcheck").write_text("")
    target = users / "keep.txt" if entry in ("README.txt", "report.md",
                                             "results.sarif") else users
    os.symlink(target, out / entry)
    command = (["replay", "--results", prev / "results.json", "--out", out,
                results(prev)["cases"][0]["id"]]
               if entry in ("README.txt", "state") else
               ["audit", "--out", out, "--", str(BIN / "fsync-unchecked"),
                "--strategy=stdio", "{target}", "{new}"])
    line = one_error_line(cli(*command))
    assert f"'{out / entry}' is a symbolic link" in line, line
    assert tree(users) == {"keep.txt": b"mine\n"}


def test_a_work_link_crashcheck_did_not_make_is_left_alone(tmp_path):
    """.work is crashcheck's link into its scratch; one of the user's by
    that name (to a directory of theirs) is neither followed nor
    removed: one line, exit 2 (it used to be unlinked)."""
    spec = small_spec(tmp_path)
    users = tmp_path / "users"
    users.mkdir()
    (users / "keep.txt").write_text("mine\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / ".crashcheck").write_text("")
    os.symlink(users, out / ".work")
    line = one_error_line(cli("run", spec, "--out", out))
    assert f"'{out / '.work'}' is a symbolic link crashcheck did not make" \
        in line, line
    assert os.readlink(out / ".work") == str(users)
    assert tree(users) == {"keep.txt": b"mine\n"}


def test_an_output_directory_that_is_a_link_in_a_marked_one_is_refused(
        tmp_path, previous):
    """results/rerun (or any --out inside a marked directory) that is a
    link to the user's directory, empty or not: not followed."""
    spec, prev = previous
    users = tmp_path / "users"
    users.mkdir()
    os.symlink(users, prev / "rerun")
    line = one_error_line(cli("run", spec, "--out", prev / "rerun",
                              "--faults", "baseline"))
    assert "is a symbolic link inside crashcheck's directory" in line, line
    assert os.listdir(users) == []


def test_a_link_named_like_the_marker_is_no_marker(tmp_path):
    """.crashcheck as a link to a file of the user's marks nothing, and
    the file is not written (the marker used to be opened through it)."""
    spec = small_spec(tmp_path)
    mine = tmp_path / "mine"
    mine.mkdir()
    (tmp_path / "empty-file").write_text("")
    os.symlink(tmp_path / "empty-file", mine / ".crashcheck")
    (mine / "thesis.tex").write_text("years of work\n")
    line = one_error_line(cli("run", spec, "--out", mine))
    assert "not crashcheck's" in line, line
    assert (tmp_path / "empty-file").read_text() == ""
    assert (mine / "thesis.tex").read_text() == "years of work\n"


def test_the_parents_crashcheck_makes_are_its_own(tmp_path):
    """results/audit-NAME made from nothing marks results/ too, so that
    a later run into results/ (make run after a first audit) is
    crashcheck's to write, the audit's directory staying as it was; a
    parent that was there before is not marked."""
    spec = small_spec(tmp_path)
    top = tmp_path / "results"
    audit = top / "audit-replace"
    proc = cli("audit", "--out", audit, "--faults", "baseline", "--",
               str(BIN / "replace"), "--strategy=sync", "{target}", "{new}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (top / ".crashcheck").is_file() and (audit / ".crashcheck").is_file()
    assert not (tmp_path / ".crashcheck").exists()
    before = tree(audit)
    proc = cli("run", spec, "--out", top, "--faults", "baseline")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (top / "results.json").is_file()
    assert tree(audit) == before


def test_a_refused_command_removes_the_parents_it_made(tmp_path):
    spec = small_spec(tmp_path)
    proc = cli("run", spec, "--out", tmp_path / "a" / "b" / "out",
               "--case", "r-sync-1B-fsync#99=EIO")
    assert proc.returncode == 2, proc.stderr
    assert not (tmp_path / "a").exists()


def test_two_runs_into_one_out_are_refused(tmp_path):
    """While one run holds --out (its marker locked), a second is
    refused with one line naming the holder, and changes nothing."""
    spec = small_spec(tmp_path)
    out = tmp_path / "out"
    proc = cli("run", spec, "--out", out, "--faults", "baseline")
    assert proc.returncode == 0, proc.stderr[-2000:]
    before = tree(out)
    # another run, as the lock sees it: a process holding the marker
    holder = subprocess.Popen(
        [PYTHON, "-c", "import fcntl, os, sys, time\n"
         "fd = os.open(sys.argv[1], os.O_RDWR)\n"
         "fcntl.flock(fd, fcntl.LOCK_EX)\n"
         "print('held', flush=True)\n"
         "sys.stdin.read()", str(out / ".crashcheck")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        for args in (["run", spec, "--out", out],
                     ["audit", "--out", out, "--", str(BIN / "replace"),
                      "--strategy=sync", "{target}", "{new}"]):
            line = one_error_line(cli(*args))
            assert f"--out: '{out}' is in use by another crashcheck run " \
                   f"(pid {holder.pid})" in line
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
    assert tree(out) == before


def test_a_second_run_while_the_first_runs_is_refused(tmp_path):
    """The real thing: a run that is still running holds --out."""
    marker = f"1004.{os.getpid()}"
    spec = write_spec(tmp_path / "s.toml", "s",
                      ["/bin/sh", "-c",
                       f'cp "$1" "$0"; [ -z "$CRASHCHECK_PLAN" ] || '
                       f'exec sleep {marker}', "{target}", "{new}"],
                      extra="timeout = 600\n")
    out = tmp_path / "out"
    first = subprocess.Popen([str(CRASHCHECK), "run", str(spec), "--out",
                              str(out), "--faults", "baseline,eio"],
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        assert gone_within(lambda: not sleeping(marker), 120) is False
        line = one_error_line(cli("run", spec, "--out", out))
        assert f"(pid {first.pid})" in line
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(timeout=120)
    assert gone_within(lambda: marked(marker)) == []


# ------------------------------------------------------- honest reports

def test_no_case_vanishes_when_its_directory_cannot_be_saved(tmp_path):
    """Programs that leave a FIFO in their work directory, or remove the
    work directory itself: their findings' directories cannot be saved,
    yet every case is in results.json, junit.xml and the counts, with
    its verdict, and the run is not a pass."""
    script = ('case "$CRASHCHECK_PLAN" in\n'
              '*EIO*) mkfifo fifo; exit 1;;\n'
              '*ENOSPC*) cd .. && rm -rf work; exit 1;;\n'
              'esac\ncp "$1" "$0"\n')
    spec = write_spec(tmp_path / "f.toml", "f",
                      ["/bin/sh", "-c", script, "{target}", "{new}"])
    out = tmp_path / "out"
    proc = cli("run", spec, "--out", out, "--jobs", "2",
               "--faults", "baseline,eio,enospc")
    assert proc.returncode == 1, proc.stderr[-2000:]
    doc = results(out)
    s = doc["summary"]
    assert s["expected"] == s["cases"] == len(doc["cases"]) > 2
    assert s["missing"] == 0 and not s["passed"]
    unsaved = [c for c in doc["cases"] if c.get("dir_error")]
    assert unsaved, [c["id"] for c in doc["cases"]]
    junit = (out / "junit.xml").read_text()
    for c in doc["cases"]:
        assert f'name="{c["id"]}"' in junit


@pytest.mark.parametrize("sig,word", [(signal.SIGTERM, "SIGTERM"),
                                      (signal.SIGINT, "SIGINT")])
def test_an_interrupted_run_says_so_first(tmp_path, sig, word):
    """SIGTERM or ^C while cases run: every report says INTERRUPTED first,
    with how many cases ran of how many; never PASS; merge refuses it."""
    marker = f"1005.{os.getpid()}{sig}"
    spec = write_spec(tmp_path / "i.toml", "i",
                      ["/bin/sh", "-c",
                       f'cp "$1" "$0"; case "$CRASHCHECK_PLAN" in '
                       f'*EIO*) exec sleep {marker};; esac',
                       "{target}", "{new}"], extra="timeout = 600\n")
    out = tmp_path / "out"
    proc = subprocess.Popen([str(CRASHCHECK), "run", str(spec), "--out",
                             str(out), "--jobs", "2", "--faults",
                             "baseline,eio,enospc,powerloss"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        assert gone_within(lambda: not sleeping(marker), 120) is False
        if sig == signal.SIGINT:
            os.killpg(proc.pid, sig)    # ^C reaches the whole group
        else:
            proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + sig, stderr[-2000:]
    doc = results(out)
    s = doc["summary"]
    assert s["interrupted"]["by"] == word
    assert s["interrupted"]["ran"] == len(doc["cases"]) < s["interrupted"]["of"]
    assert s["passed"] is False
    first_md = (out / "report.md").read_text().splitlines()[0]
    assert first_md == "# crashcheck report: INTERRUPTED"
    assert "<title>crashcheck report: INTERRUPTED</title>" in \
        (out / "report.html").read_text()
    junit = (out / "junit.xml").read_text().splitlines()
    assert junit[1].startswith(f"<!-- crashcheck: INTERRUPTED ({word}):")
    assert 'type="interrupted"' in "\n".join(junit)
    assert "PASS" not in (out / "report.md").read_text()
    assert f"crashcheck: INTERRUPTED ({word})" in stdout
    assert gone_within(lambda: marked(marker)) == []
    merged = cli("merge", "--out", tmp_path / "m", out)
    assert "is of an interrupted run" in one_error_line(merged)


@pytest.mark.parametrize("checker,problem", [
    ("exec sleep {marker}", "checker timed out after 2 s"),
    ("kill -SEGV $$", "checker was killed by SIGSEGV"),
])
def test_a_checker_that_cannot_answer_is_a_harness_error(tmp_path, checker,
                                                         problem):
    """A spec's checker that hangs or crashes says nothing about the
    state it was asked about: harness-error naming it, never torn or
    lost-update."""
    marker = f"1006.{os.getpid()}"
    check = tmp_path / "check.sh"
    check.write_text(checker.format(marker=marker) + "\n")
    spec = tmp_path / "c.toml"
    spec.write_text('name = "c"\ndescription = "d"\n'
                    f'command = {json.dumps([str(BIN / "replace"), "--strategy=sync", "{target}", "{new}"])}\n'
                    f'check = {json.dumps(["/bin/sh", str(check), "{target}"])}\n'
                    'sizes = [1]\ntimeout = 2\n')
    out = tmp_path / "out"
    proc = cli("run", spec, "--out", out, "--faults", "baseline", "--jobs", "1")
    assert proc.returncode == 1, proc.stderr[-2000:]
    cases = results(out)["cases"]
    assert cases and all(c["verdict"] == "harness-error" for c in cases), cases
    assert all(c["finding"] == problem for c in cases), \
        [c["finding"] for c in cases]
    assert gone_within(lambda: marked(marker)) == []


# ----------------------------------------------------------------- chaos

def test_chaos_quick():
    """The quick form of `make chaos` (tests/chaos.py): three audits, each
    hit once -- the parent killed outright, a pool process killed, the
    scratch filled -- and after each no process left, nothing in the
    scratch, its reports whole or marked INTERRUPTED, nothing else
    changed."""
    proc = subprocess.run(
        [PYTHON, str(ROOT / "tests" / "chaos.py"), "--rounds", "3", "--seed",
         "1", "--quick", "--actions", "kill-parent,kill-worker,fill-scratch"],
        capture_output=True, text=True, timeout=1200)
    if proc.returncode == 77:
        pytest.skip(proc.stderr.strip())
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
