"""Run one program under one plan, in its own process group, with the
fault library preloaded, and collect what happened.

Everything the harness learns about a run comes from here: the exit
status or the signal, whether the time limit struck, the program's output
(capped), and the trace the fault library wrote. Whether a planned fault
fired is read from the trace, never assumed.
"""

import os
import resource
import secrets
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .. import ROOT, UsageError
from . import backend as backend_mod, confine as confine_mod, contain, \
    sanitizers, timelimit

FAULT_LIB = ROOT / "faults" / "libcrashcheck.so"
FIU_PRELOAD = Path("/usr/lib/fiu/fiu_posix_preload.so")

# What we keep of a program's stdout and stderr: enough to read its
# diagnostics, bounded so a program that prints without end cannot fill
# memory or the results directory.
OUTPUT_CAP = 64 * 1024

# How often a run's captured output past OUTPUT_CAP is given back
# (_trim), once the run has lasted that long: a program that prints
# without end (chatter.c: 17.8 MB in a few seconds) holds in memory what
# it writes in TRIM_EVERY seconds, not all it wrote until its time limit.
TRIM_EVERY = 0.25
# fallocate(2)'s FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE: the pages
# go, the size stays (what _read_capped counts the output by)
_PUNCH = 0x01 | 0x02

# Exit status of a program that says "not supported here" (automake's skip).
EXIT_SKIP = 77

# Variables of ours that must never leak from the caller's environment
# into a run: a stale plan or trace path would make the run lie.
RUN_VARS = ("CRASHCHECK_PLAN", "CRASHCHECK_TRACE", "CRASHCHECK_WATCH",
            "CRASHCHECK_SNAPDIR", "CRASHCHECK_SHARED", "CRASHCHECK_SNAP",
            "CRASHCHECK_TRACE_FROM", "CRASHCHECK_TRACE_FULL",
            "CRASHCHECK_LIMIT", "CRASHCHECK_TRACE_LIMIT", "CRASHCHECK_NOTE")
OUR_VARS = RUN_VARS + ("CRASHCHECK_SERVE", contain.ENV_TOKEN,
                       confine_mod.VIEW_VAR)
# A fork server's room for a run's variables (faults/serve.c): more than
# RUN_VARS and what a run adds to them
ENV_SLOT = "CRASHCHECK_SLOT"
ENV_SLOTS = 32


class SetupError(UsageError):
    """The harness cannot run anything here (missing build, missing libfiu)."""


def check_preloads():
    """Refuse to run when a preload is missing: a run without them would
    get no faults, and a case could pass for the wrong reason."""
    if not FAULT_LIB.is_file():
        raise SetupError(f"fault library not built: {FAULT_LIB} (run 'make')")
    if not FIU_PRELOAD.is_file():
        raise SetupError(f"libfiu preload missing: {FIU_PRELOAD} "
                         "(install fiu-utils: scripts/install-deps)")


# Where scratch directories go: None until chosen (choose_scratch), then
# the same for every process of a sweep (the pool's are forked after).
_base = None

# tmpfs is chosen while it has this much free, else a disk's temporary
# directory: a sweep's runs on a small /dev/shm (RAM) would fill it
SHM_MIN_FREE = 256 << 20


def scratch_base():
    """Where scratch directories go: the one choose_scratch (or --scratch)
    set, else tmpfs when there is one with room, because durability is
    simulated from the trace and tmpfs makes runs cheap."""
    if _base is None:
        return choose_scratch()
    return _base


def set_scratch_base(path):
    """Put every scratch directory under PATH from now on (--scratch);
    None: choose again."""
    global _base
    _base = None if path is None else Path(os.path.realpath(path))


def free_bytes(path):
    """Bytes an unprivileged writer can still put on PATH's file system."""
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def choose_scratch(need=SHM_MIN_FREE):
    """/dev/shm while it has NEED bytes free (at least SHM_MIN_FREE), else
    the temporary directory of a disk ($TMPDIR, /tmp) where it has more
    room: a sweep on a small /dev/shm would fill the machine's memory."""
    global _base
    candidates = []
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK):
        candidates.append(shm)
    disk = Path(os.path.realpath(tempfile.gettempdir()))
    if not candidates or candidates[0] != disk:
        candidates.append(disk)
    best = candidates[0]
    try:
        if len(candidates) > 1 and \
                free_bytes(best) < max(need, SHM_MIN_FREE) and \
                free_bytes(candidates[1]) > free_bytes(best):
            best = candidates[1]
    except OSError:
        pass
    _base = best
    return best


def make_scratch(prefix="crashcheck-"):
    """A new directory of ours in the scratch base, named for the
    session's watchdog to remove before it is made: crashcheck killed at
    any moment, even between the two, leaves none behind (tests/chaos.py).
    Its random part is 64 bits: a name someone else made is never named."""
    base = scratch_base()
    for _ in range(100):
        path = Path(base) / f"{prefix}{secrets.token_hex(8)}"
        contain.session().remove_later(path)
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue
        return path
    raise FileExistsError(f"no free name for a scratch directory in '{base}'")


@dataclass
class Run:
    argv: list
    status: int | None          # exit status, None when killed by a signal
    signal: int | None          # the signal that killed it, if any
    timed_out: bool             # the time limit struck; we killed the group
    duration: float             # seconds, wall clock
    stdout: bytes
    stderr: bytes
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    # bytes the program wrote to each in all, of which the first
    # OUTPUT_CAP are kept (0: not counted)
    stdout_size: int = 0
    stderr_size: int = 0
    trace_path: Path | None = None
    extra: dict = field(default_factory=dict)
    # processes the program started that were still running when it
    # ended, each "pid N (command line)", killed then (contain.Box)
    outlived: list = field(default_factory=list)
    # what a confined run wrote, made or removed outside its scratch,
    # each "~/.augeas/history" or "/etc/x (removed)": kept from the real
    # tree, and thrown away (confine.View.outside)
    outside: list = field(default_factory=list)

    @property
    def skipped(self):
        return self.status == EXIT_SKIP

    @property
    def shell_status(self):
        """The status a shell would report: 128+N for death by signal N."""
        if self.signal is not None:
            return 128 + self.signal
        return self.status

    def stderr_text(self):
        text = self.stderr.decode("utf-8", "replace")
        if self.stderr_truncated:
            text += (f"\n[stderr truncated: the first {OUTPUT_CAP} of "
                     f"{self.stderr_size or 'more'} bytes kept]")
        return text


def build_env(plan="", trace=None, watch=None, snapdir=None, shared=None,
              base=None, program=None, cwd=None, trace_from=None,
              trace_full=None, limit=None, note=None, extra=None,
              backend="preload", trace_limit=None):
    """The environment of a run: the caller's, less any of our variables,
    plus the preloads (ours first, so our wrappers call down into libfiu's;
    an ASan-linked program's runtime before ours: harness/engine/sanitizers.py)
    and this run's settings. program is argv[0], run in cwd. trace_from:
    the seq the trace starts at (CRASHCHECK_TRACE_FROM; no snapdir).
    trace_full: (lo, hi), the seqs recorded in full, writes outside them
    maybe thin (CRASHCHECK_TRACE_FULL; a recorded run). limit: bytes
    the run's snapshots may take (CRASHCHECK_LIMIT), note: the file the
    library says why it stopped a run in (CRASHCHECK_NOTE; a run in a
    session of its own). trace_limit: bytes the trace's lines may take,
    the rest counted (CRASHCHECK_TRACE_LIMIT). extra: more variables of the run's (TMPDIR,
    HOME). backend "syscall": the settings are the supervisor's, and
    nothing is preloaded."""
    if base is None:
        env = dict(_environ())
    else:
        env = dict(base)
        for name in OUR_VARS:
            env.pop(name, None)
    if backend == "syscall":
        sanitizers.apply(env, program, cwd, (), ptraced=True)
    else:
        preload = " ".join(sanitizers.apply(env, program, cwd,
                                            [str(FAULT_LIB), str(FIU_PRELOAD)]))
        if env.get("LD_PRELOAD"):
            # A user's own preloads stay, after ours.
            preload += " " + env["LD_PRELOAD"]
        env["LD_PRELOAD"] = preload
    if plan:
        env["CRASHCHECK_PLAN"] = plan
    if trace is not None:
        env["CRASHCHECK_TRACE"] = str(trace)
    if watch is not None:
        env["CRASHCHECK_WATCH"] = str(watch)
    if snapdir is not None:
        env["CRASHCHECK_SNAPDIR"] = str(snapdir)
    if shared is not None:
        env["CRASHCHECK_SHARED"] = str(shared)
    if trace_from is not None:
        env["CRASHCHECK_TRACE_FROM"] = str(trace_from)
    if trace_full is not None:
        env["CRASHCHECK_TRACE_FULL"] = full_range(trace_full)
    if limit is not None:
        env["CRASHCHECK_LIMIT"] = str(limit)
    if trace_limit is not None:
        env["CRASHCHECK_TRACE_LIMIT"] = str(trace_limit)
    if note is not None:
        env["CRASHCHECK_NOTE"] = str(note)
    if extra:
        env.update(extra)
    name, token = contain.run_env()
    env[name] = token
    return env


def full_range(trace_full):
    """CRASHCHECK_TRACE_FULL's value for the seqs (lo, hi)."""
    lo, hi = trace_full
    return f"{lo}-{hi}"


_env_cache = [None, None]   # [os.environ as a dict less OUR_VARS, its key]


def _environ():
    """os.environ as a dict, less our variables: copied once, again only
    when os.environ changed (a sweep starts thousands of runs, and the
    copy decodes every variable)."""
    key = tuple(os.environ._data.items()) if hasattr(os.environ, "_data") \
        else tuple(os.environ.items())
    if _env_cache[1] != key:
        env = dict(os.environ)
        for name in OUR_VARS:
            env.pop(name, None)
        _env_cache[0], _env_cache[1] = env, key
    return _env_cache[0]


def _fallocate():
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    f = libc.fallocate
    f.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_longlong,
                  ctypes.c_longlong]
    return f


_FALLOCATE = []


def _trim(*files):
    """Give back the memory (or disk) each capture file holds past
    OUTPUT_CAP, keeping its size; where the file system cannot punch
    holes, nothing."""
    for fh in files:
        try:
            size = os.fstat(fh.fileno()).st_size
        except OSError:
            continue
        if size <= OUTPUT_CAP:
            continue
        if not _FALLOCATE:
            try:
                _FALLOCATE.append(_fallocate())
            except (OSError, AttributeError):
                _FALLOCATE.append(None)
        if _FALLOCATE[0] is not None:
            _FALLOCATE[0](fh.fileno(), _PUNCH, OUTPUT_CAP, size - OUTPUT_CAP)


def _read_capped(fh, cap):
    """(the first CAP bytes of FH, whether there were more, how many
    there were)."""
    fh.seek(0, os.SEEK_END)
    size = fh.tell()
    fh.seek(0)
    return fh.read(cap), size > cap, size


def run(argv, *, cwd, plan="", trace=None, watch=None, snapdir=None,
        shared=None, timeout=10.0, env=None, stdin=None, preload=True,
        passthrough=False, trace_from=None, trace_full=None, limit=None,
        note=None, extra=None, backend="preload", confine=None,
        trace_limit=None):
    """Run argv to completion or to its time limit (None: no limit).

    The program gets a new session (so a process group of its own) and a
    box (contain.Box) that holds everything it starts: at the time limit
    all of it is killed and the run is marked timed_out; when the program
    ends, whatever it started that is still running is named in
    Run.outlived and killed. Output goes to unlinked temporary files
    rather than pipes, so a program that writes a lot never blocks on us
    and we keep only the first OUTPUT_CAP bytes. With passthrough the
    program uses the caller's stdin, stdout and stderr instead (the CLI's
    inject and trace), and the Run's stdout and stderr are empty. backend
    "syscall" runs it under the system-call supervisor instead of the
    preloads (harness/engine/backend.py), in the same box; preload False
    runs it bare. confine: the directories the program may change (its
    scratch); it runs confined to them where the machine allows
    (harness/engine/confine.py), and Run.outside names what it wrote
    elsewhere. None: unconfined (the CLI's inject and trace, which run a
    program on the user's own files).
    """
    run_argv = argv
    if preload:
        if backend == "syscall":
            backend_mod.check_supervisor()
            # the supervisor execs it: a program that is not there must
            # be said as the preload's runs say it, not as exit 127
            _check_program(argv[0], cwd, env)
            run_argv = [str(backend_mod.SUPERVISOR), "--", *argv]
        else:
            check_preloads()
        env = build_env(plan, trace, watch, snapdir, shared, base=env,
                        program=argv[0], cwd=cwd, trace_from=trace_from,
                        trace_full=trace_full, limit=limit, note=note,
                        extra=extra, backend=backend, trace_limit=trace_limit)
    else:
        env = dict(os.environ if env is None else env)
        name, token = contain.run_env()
        env[name] = token
    view = None
    if confine is not None:
        steps, view = confine_mod.prepare(confine, cwd)
        if steps is not None:
            env[confine_mod.VIEW_VAR] = steps
            run_argv = [str(confine_mod.HELPER),
                        program_file(run_argv[0], cwd, env), *run_argv]
    try:
        run = _run(argv, run_argv, cwd, env, stdin, passthrough, timeout,
                   trace, preload, backend)
    finally:
        # read and thrown away, whatever became of the run
        outside = confine_mod.finish(view)
    run.outside = outside
    return run


def _run(argv, run_argv, cwd, env, stdin, passthrough, timeout, trace,
         preload, backend):
    box = contain.Box()
    with _capture_file("stdout") as out, _capture_file("stderr") as err:
        start = time.monotonic()
        mask = None
        if not passthrough and stdin is None and _may_chdir():
            # ^C and SIGTERM wait (blocked) until the process is ours to
            # kill; the program starts with an empty mask
            held = ()
            mask = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD_SIGNALS)
            try:
                with box.entered():
                    proc = _spawn(run_argv, cwd, env, out.fileno(), err.fileno())
            except BaseException:
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
                raise
        else:
            with _signals_held() as held:
                with box.entered():
                    if passthrough:
                        proc = _popen(run_argv, cwd, env, stdin=stdin,
                                      stdout=None, stderr=None)
                    else:
                        proc = _popen(run_argv, cwd, env, stdin=subprocess.DEVNULL
                                      if stdin is None else stdin,
                                      stdout=out, stderr=err)
        box.started(proc.pid)
        timed_out = False
        try:
            if mask is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            for signum in held:
                signal.raise_signal(signum)     # now the group can be killed
            _wait(proc, timeout,
                  trim=None if passthrough else lambda: _trim(out, err))
        except subprocess.TimeoutExpired:
            timed_out = True
            box.kill()
            proc.wait()
        except BaseException:
            # Interrupted (^C, SIGTERM turned into SystemExit): the group
            # is in its own session, so the terminal's SIGINT never
            # reached it; it must not outlive us.
            box.kill()
            proc.wait()
            box.finish()
            raise
        # The leader is gone; what it started must not outlive the case
        # (it could still write into the scratch)
        outlived = box.finish(_grace(proc.returncode, timed_out,
                                     preload and backend == "syscall"))
        return _limited(_ended(argv, proc.returncode, timed_out, start, out,
                               err, trace, [] if timed_out else outlived),
                        timeout)


def program_file(argv0, cwd, env):
    """The file the confine helper execs for ARGV0, as exec would find
    it: a name with a slash as it is (the helper is in CWD by then), else
    looked up in the PATH of ENV."""
    if "/" in argv0:
        return argv0
    path = shutil.which(argv0, path=env.get("PATH", os.defpath))
    if path is None:
        raise SetupError(f"program not found: {argv0}")
    return path


def _limited(run, timeout):
    """RUN with what its timelimit.Limit saw when it struck (Run.extra
    "limit_state": what the run was doing), when it had one."""
    if isinstance(timeout, timelimit.Limit) and timeout.state:
        run.extra["limit_state"] = timeout.state
    return run


def _grace(rc, timed_out, supervised=False):
    """Seconds what a program left running has to exit on its own
    (contain.OUTLIVE_GRACE), by Popen's returncode RC: none after a
    SIGKILL (a planned crash takes every process at once) or a kill at
    the time limit, nor under the system-call supervisor, which gave the
    processes it follows their grace itself (supervise.c)."""
    if timed_out or rc == -signal.SIGKILL or supervised:
        return 0.0
    return contain.OUTLIVE_GRACE


def _ended(argv, rc, timed_out, start, out, err, trace, outlived=()):
    """The Run of argv, started at monotonic time START, ended now with
    Popen's returncode RC (-N: signal N); its output read from OUT and
    ERR; OUTLIVED: what it left running (Run.outlived)."""
    duration = time.monotonic() - start
    stdout, out_cut, out_size = _read_capped(out, OUTPUT_CAP)
    stderr, err_cut, err_size = _read_capped(err, OUTPUT_CAP)
    return Run(argv=list(argv),
               status=rc if rc >= 0 else None,
               signal=-rc if rc < 0 else None,
               timed_out=timed_out, duration=duration,
               stdout=stdout, stderr=stderr,
               stdout_truncated=out_cut, stderr_truncated=err_cut,
               stdout_size=out_size, stderr_size=err_size,
               trace_path=Path(trace) if trace is not None else None,
               outlived=list(outlived))


def _check_program(argv0, cwd, env):
    """SetupError, as starting it would raise, when ARGV0 names no
    program that can run from CWD with ENV's PATH."""
    path = sanitizers.program_path(argv0, cwd, env)
    if path is None or not os.path.exists(path):
        raise SetupError(f"program not found: {argv0}")
    if os.path.isdir(path) or not os.access(path, os.X_OK):
        raise SetupError(f"program not executable: {argv0}")


# Seconds a start that finds no process left (EAGAIN: the user's process
# or thread limit, all taken by another case's program, say a fork bomb)
# is tried again for: that program is killed at its time limit or its
# end, and the processes come back.
START_RETRY = 15.0


def _starting(start):
    """START() (a spawn), tried again with growing pauses for up to
    START_RETRY seconds while it fails with EAGAIN."""
    deadline = time.monotonic() + START_RETRY
    pause = 0.01
    while True:
        try:
            return start()
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.5)


def _cannot_start(argv, e):
    """The one-line SetupError for the OSError starting argv gave."""
    if isinstance(e, BlockingIOError):
        return SetupError(f"cannot run {argv[0]}: no process left to start "
                          f"it in for {START_RETRY:g} s (the user's process "
                          "limit, ulimit -u, taken by other programs: a "
                          "program under test that forks without end?)")
    if isinstance(e, FileNotFoundError):
        return SetupError(f"program not found: {argv[0]}")
    if isinstance(e, PermissionError):
        return SetupError(f"program not executable: {argv[0]}")
    # ENOEXEC (not a program the kernel can run), ELOOP, E2BIG...
    return SetupError(f"cannot run {argv[0]}: {e.strerror}")


def _popen(argv, cwd, env, **streams):
    try:
        return _starting(lambda: subprocess.Popen(
            argv, cwd=cwd, env=env, start_new_session=True, **streams))
    except OSError as e:
        raise _cannot_start(argv, e) from None


# posix_spawn(3) starts a program for a third of what Popen costs (no
# Python code between fork and exec, glibc's vfork-style clone), which
# in a sweep of short runs is a quarter of a case. It has no working
# directory argument in Python 3.11, so the caller changes directory
# around it: safe only where no other thread can look at the working
# directory meanwhile, as in the sweep's pool processes.
# Python ignores SIGPIPE and SIGXFSZ; a program must start with them at
# their defaults, as Popen starts it. (glibc's posix_spawn also leaves
# its two internal signals, 32 and 33, ignored in the program, which
# Python cannot reset; glibc installs its handlers for them when it
# needs them, so a program never notices.)
_SPAWN_DEFAULT_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGPIPE", "SIGXFZ", "SIGXFSZ")
    if hasattr(signal, name))
_home = {}      # pid -> descriptor of the directory to come back to
_HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _may_chdir():
    return (hasattr(os, "posix_spawn")
            and threading.current_thread() is threading.main_thread()
            and threading.active_count() == 1)


def _spawn(argv, cwd, env, out_fd, err_fd, extra=()):
    """Start argv in cwd, in a new session, stdin from /dev/null and
    stdout and stderr into out_fd and err_fd, with the signal dispositions
    Popen would give it (Python ignores SIGPIPE; a program must not
    inherit that); a _Spawned. extra: more posix_spawn file actions."""
    home = _home.get(os.getpid())
    if home is None:
        home = _home[os.getpid()] = os.open(".", os.O_RDONLY | os.O_DIRECTORY
                                            | os.O_CLOEXEC)
    actions = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
               (os.POSIX_SPAWN_DUP2, out_fd, 1),
               (os.POSIX_SPAWN_DUP2, err_fd, 2), *extra]
    try:
        os.chdir(cwd)
    except OSError as e:
        raise SetupError(f"cannot run {argv[0]}: chdir '{cwd}': "
                         f"{e.strerror}") from None
    try:
        path = argv[0]
        if "/" not in path:
            # what Popen does: the program is looked up in the PATH of
            # the environment it will run with
            path = shutil.which(path, path=env.get("PATH", os.defpath))
            if path is None:
                raise SetupError(f"program not found: {argv[0]}")
        pid = _starting(lambda: os.posix_spawn(
            path, argv, env, file_actions=actions, setsid=True,
            setsigmask=(), setsigdef=_SPAWN_DEFAULT_SIGNALS))
    except OSError as e:
        raise _cannot_start(argv, e) from None
    finally:
        os.fchdir(home)
    return _Spawned(pid, argv)


class _Spawned:
    """What run() needs of a Popen, for a posix_spawn'ed process."""

    def __init__(self, pid, args):
        self.pid = pid
        self.args = args
        self.returncode = None

    def wait(self, timeout=None):
        if self.returncode is not None:
            return self.returncode
        if timeout is None:
            _, status = os.waitpid(self.pid, 0)
        else:
            deadline = time.monotonic() + timeout
            while True:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
                if pid:
                    break
                if time.monotonic() >= deadline:
                    raise subprocess.TimeoutExpired(self.args, timeout)
                time.sleep(0.0005)
        self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode


@contextmanager
def _signals_held():
    """Hold ^C and SIGTERM while Popen starts the program.

    Popen returns only after the child has exec'd; a KeyboardInterrupt
    (or the CLI's SIGTERM exit) raised inside it leaves a running program
    we have no handle on, whose group nobody kills. Held, the signal is
    raised again by run() once the Popen object exists, where the group
    is killed on the way out. Only the main thread can set handlers; in
    another thread signals do not arrive anyway."""
    held = []
    if threading.current_thread() is not threading.main_thread():
        yield held
        return
    saved = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        saved[signum] = signal.signal(
            signum, lambda n, frame: held.append(n))
    try:
        yield held
    finally:
        for signum, handler in saved.items():
            # None: a handler set outside Python; the default is the best
            # we can put back
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)


def _capture_file(name):
    """Where a run's output goes: an anonymous in-memory file (memfd), or
    an unlinked temporary file where there is none. A sweep makes two per
    case, and creating them on a disk file system costs more than the
    short runs themselves."""
    try:
        fd = os.memfd_create(f"crashcheck-{name}", os.MFD_CLOEXEC)
    except (AttributeError, OSError):
        return tempfile.TemporaryFile()
    return os.fdopen(fd, "w+b")


def _wait(proc, timeout, trim=None):
    """proc.wait(timeout), but woken by the kernel when the process exits.
    TIMEOUT may be a timelimit.Limit: at it the run is looked at, and one
    that sleeps or makes progress is given more time (Limit.again), which
    ends once its trace is cut (Limit.cut_over, asked at each TRIM).

    Popen.wait with a timeout polls, sleeping 0.5 ms, then 1, 2, 4 ... up
    to 50 ms between looks: a run of 3 ms is seen ending at 3.5 or 7 ms,
    which doubles the cost of a sweep of short runs. A pidfd becomes
    readable when the process exits, so poll(2) on it returns at once;
    without pidfd_open (Linux before 5.3) fall back to Popen's polling.
    TRIM, when given, is called every TRIM_EVERY seconds the run lasts.
    """
    if timeout is None and trim is None:
        return proc.wait()
    limit = timeout if isinstance(timeout, timelimit.Limit) else None
    start = time.monotonic()
    deadline = start + float(timeout) if timeout is not None \
        else float("inf")
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        pidfd = None
    try:
        while True:
            now = time.monotonic()
            wake = deadline if trim is None else min(deadline,
                                                     now + TRIM_EVERY)
            if pidfd is None:
                try:
                    return proc.wait(timeout=max(0, wake - now))
                except subprocess.TimeoutExpired:
                    pass
            else:
                poller = select.poll()
                poller.register(pidfd, select.POLLIN)
                if poller.poll(max(0, wake - now) * 1000):
                    break
            if trim is not None:
                trim()
            if time.monotonic() < deadline:
                if limit is not None and \
                        limit.cut_over(time.monotonic() - start):
                    raise subprocess.TimeoutExpired(proc.args, float(timeout))
                continue
            more = limit.again(proc.pid, time.monotonic() - start) \
                if limit is not None else None
            if more is None:
                raise subprocess.TimeoutExpired(proc.args, float(timeout))
            deadline = time.monotonic() + more
    finally:
        if pidfd is not None:
            os.close(pidfd)
    return proc.wait()


def _kill_group(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


# ---------------------------------------------------------------- fork server

CLOSE_WAIT = 5.0    # seconds a fork server has to go after end of file


@contextmanager
def _nothing():
    yield


def _view_of(steps):
    """A view's steps but for the working directory (its last, C line):
    what a confined server's runs share."""
    head, _, last = steps.rpartition("\n")
    return head if last.startswith("C\t") else steps


def _dir_ids(paths):
    """(device, inode) of each of PATHS: a directory removed and made
    again is another one, which a view made before does not hold."""
    return [(st.st_dev, st.st_ino) for st in map(os.stat, paths)]


class ServerUnavailable(Exception):
    """The program cannot be served (faults/serve.c), or its server is
    gone: run it the ordinary way."""


class ServerStale(ServerUnavailable):
    """A confined server's view is not the run's any more (its scratch
    was renamed or made again, the view was dropped, a run changed the
    mounts): nothing was run; a new server of the same command line
    serves it (ForkServer.confine)."""


def _answer(msg, word, count):
    """The COUNT integers of the server's message "WORD N...", or
    ServerUnavailable."""
    parts = msg.split()
    try:
        if parts[0] == word and len(parts) == count + 1:
            return [int(p) for p in parts[1:]]
    except (IndexError, ValueError):
        pass
    raise ServerUnavailable(f"unexpected answer {msg!r}")


class ForkServer:
    """One program, exec'd once and forked for each run.

    faults/serve.c holds the program in our library's initialization,
    before main; each run() is a fork of it that takes its own working
    directory, output files and CRASHCHECK_* settings, and then goes on as
    a freshly exec'd program would. A sweep runs the same command line
    case after case, and exec with the dynamic loader is most of what a
    short run costs. The run is otherwise what run() gives: a session of
    its own, its group killed at the time limit and when it ends, output
    capped; a box (contain.Box): the server's own cgroup, where the
    run is born, the server its resident (what is left there besides
    it is the run's; where something is, the cgroup is killed whole and
    the server is closed).

    backend "syscall": the server is the system-call supervisor
    (faults/syscall/supervise.c, the protocol of faults/serve.c), which
    runs the requests one after another in its own process, each an exec
    of the program under its filter as `supervise -- argv` would make
    it. What is saved is the supervisor's own exec and start-up, not the
    program's. A run that leaves processes it still follows ends the
    server (its answer says "last"): closed then, and the caller starts
    another.

    Only for sweep cases of one command line; ServerUnavailable when the
    program cannot be served (the library did not load, a thread before
    main, a low descriptor limit) or its server went away: the caller
    then runs the case with run().
    """

    def __init__(self, argv, *, home, timeout, backend="preload",
                 confine=None):
        """Start argv as a server in the directory `home` (best where its
        runs will work: libraries load there). A program that never
        reaches our library (static) runs there once, as itself, and is
        refused: the caller lays the directory out again. timeout: how
        long it may take to get ready. confine: the directories its runs
        may change (their scratch), where the preload's server itself
        is started in the view of them (harness/engine/confine.py), and
        every run is forked in it: a view made per run (its namespace,
        a dozen mounts, pivot_root, and all of it torn down at the run's
        exit) cost a served run more than its program. A run whose
        directories are in those is served in that view, which may hold
        more than the run's own (the caller's to choose: crashcheck's
        directories alone); another is refused with ServerStale (run)."""
        self.backend = backend
        self._view = self._view_steps = self._view_ids = None
        self._view_dirs = self._view_inner = None
        self._mounts = None     # the server's mountinfo, polled (run)
        if backend == "syscall":
            backend_mod.check_supervisor()
            # the runs exec it: one that is not there is said as run()
            # says it, by the exec'd run the caller falls back to
            _check_program(argv[0], home, None)
        else:
            check_preloads()
        if not _may_chdir():
            raise ServerUnavailable("not in a single-threaded process")
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if soft != resource.RLIM_INFINITY and soft < 128:
            raise ServerUnavailable(f"descriptor limit {soft} is below 128")
        # high, where the program's own descriptors do not go; the run's
        # process closes it before the program's first call
        slot = min(soft if soft != resource.RLIM_INFINITY else 1024, 1024) - 65
        self._session = contain.session()
        self.argv = list(argv)
        server_argv = self.argv if backend != "syscall" else \
            [str(backend_mod.SUPERVISOR), "--", *self.argv]
        self.pid = self._cgroup = None
        self._sock, theirs = socket.socketpair(socket.AF_UNIX,
                                               socket.SOCK_SEQPACKET)
        # every run's stdin, as run() gives it
        self._null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        sink = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
        try:
            env = build_env(program=argv[0], cwd=home, backend=backend)
            env["CRASHCHECK_SERVE"] = str(slot)
            if confine is not None and backend != "syscall":
                steps, view = confine_mod.prepare(confine, home)
                if steps is not None:
                    # exec'd through the confine helper, which makes the
                    # view and unsets the variable
                    env[confine_mod.VIEW_VAR] = steps
                    server_argv = [str(confine_mod.HELPER),
                                   program_file(server_argv[0], home, env),
                                   *server_argv]
                    self._view_dirs = [os.path.abspath(os.fspath(p))
                                       for p in confine]
                    self._view_ids = _dir_ids(confine)
                    # bound with the scratch as they are now: one mounted
                    # there later is not in the view (_serves)
                    self._view_inner = confine_mod.mounted_under(confine)
                    self._view_steps = _view_of(steps)
                    self._view = view
            if backend != "syscall":
                # room in the environment main is given, for each run's
                # variables: faults/serve.c writes them there
                # (take_environment), leaving these out
                env.update((f"{ENV_SLOT}{i}", "") for i in range(ENV_SLOTS))
            # in a cgroup of its own (of the session's, so that it goes
            # with them), where its runs are born: none moves (contain.py)
            self._cgroup = self._session.local().serving()
            with contain.inside(self._cgroup) if self._cgroup \
                    else _nothing():
                proc = _spawn(server_argv, home, env, sink, sink,
                              extra=[(os.POSIX_SPAWN_DUP2, theirs.fileno(),
                                      slot)])
            self.pid = proc.pid
            self._session.owned.add(self.pid)
            os.close(sink)
            sink = None
            theirs.close()
            hello = self._receive(timeout)
            if not hello.startswith("ready "):
                raise ServerUnavailable(hello[len("refuse "):] if
                                        hello.startswith("refuse ") else
                                        f"unexpected answer {hello!r}")
            if self._view is not None:
                # polls POLLPRI once a mount in the server's namespace
                # (the view its runs share) comes or goes (proc(5))
                self._mounts = os.open(f"/proc/{self.pid}/mountinfo",
                                       os.O_RDONLY | os.O_CLOEXEC)
                # what it wrote outside as it started is no run's
                confine_mod.finish(view)
                if not confine_mod.current(view):
                    raise ServerUnavailable("the program wrote outside its "
                                            "scratch before main")
        except BaseException:
            theirs.close()
            if sink is not None:
                os.close(sink)
            if self.pid is not None:
                _kill_group(self.pid)   # it runs nothing of ours to wait for
            self.close()
            if self._view is not None:
                # a program refused (a static one ran as itself) may have
                # written in the view: no run's to name, and thrown away
                confine_mod.finish(self._view)
            raise

    def _receive(self, timeout):
        """The server's next message, waiting at most timeout seconds
        (None: for ever); ServerUnavailable when it is gone."""
        if timeout is not None and not select.select(
                [self._sock], [], [], max(0.0, timeout))[0]:
            raise subprocess.TimeoutExpired(self.argv, timeout)
        try:
            msg = self._sock.recv(512)
        except OSError as e:
            raise ServerUnavailable(f"fork server: {e.strerror}") from None
        if not msg:
            raise ServerUnavailable("the fork server exited")
        return msg.decode("utf-8", "replace")

    def run(self, *, cwd, plan="", trace=None, watch=None, snapdir=None,
            shared=None, timeout=10.0, trace_from=None, trace_full=None,
            limit=None, note=None, extra=None, confine=None,
            trace_limit=None):
        """One run, as run() would make it with these settings. EXTRA
        variables are set in the run; the server's own environment is
        the caller's. confine: as run()'s (the child makes the view:
        faults/serve.c)."""
        if self._sock is None:
            raise ServerUnavailable("the fork server is closed")
        settings = {"CRASHCHECK_PLAN": plan or None, "CRASHCHECK_TRACE": trace,
                    "CRASHCHECK_WATCH": watch, "CRASHCHECK_SNAPDIR": snapdir,
                    "CRASHCHECK_SHARED": shared, "CRASHCHECK_SNAP": None,
                    "CRASHCHECK_TRACE_FROM": None if trace_from is None
                    else str(trace_from),
                    "CRASHCHECK_TRACE_FULL": None if trace_full is None
                    else full_range(trace_full),
                    "CRASHCHECK_LIMIT": None if limit is None else str(limit),
                    "CRASHCHECK_TRACE_LIMIT": None if trace_limit is None
                    else str(trace_limit),
                    "CRASHCHECK_NOTE": note}
        assert set(settings) == set(RUN_VARS)
        settings.update(extra or {})
        view = None
        if confine is not None and self._view is not None and \
                self.confined_to(confine):
            # in the server's view, which may hold more than the run's
            # directories: directories of crashcheck's own, as the
            # caller made it (judge.server_for: the worker's scratch
            # directory, whose one scratch is renamed from combo to combo)
            confine = self._view_dirs
        if confine is not None:
            steps, view = confine_mod.prepare(confine, cwd)
            if self._view is not None:
                # forked in the server's view, which must be the run's
                if not self._serves(confine, steps, view):
                    raise ServerStale("the run's view is not the server's")
            elif steps is not None:
                # not a variable of the program's either: the child
                # makes the view before the program goes on
                settings[confine_mod.VIEW_VAR] = steps
        elif self._view is not None:
            raise ServerStale("an unconfined run of a confined server")
        try:
            run = self._run(settings, cwd, trace, timeout)
        finally:
            outside = confine_mod.finish(view)
            if self._view is not None and \
                    not confine_mod.current(self._view):
                # the run wrote outside its scratch: that view is
                # dropped, and the server, which is in it, goes too
                self.close()
        run.outside = outside
        return run

    def confined_to(self, confine):
        """Whether this server can serve runs that may change CONFINE:
        an unconfined one any, a confined one those in its view's
        directories (a run is served in the server's view: run)."""
        return self._view is None or all(
            any(confine_mod.under(os.path.abspath(os.fspath(p)), d)
                for d in self._view_dirs) for p in confine)

    def _serves(self, confine, steps, view):
        """Whether a run that may change CONFINE, in the view STEPS of
        View VIEW, is one this confined server's view holds: the same
        view (not dropped since), the same directories (not renamed or
        made again), the same mounts (a run of it may have mounted
        something, as root or in its user namespace), the same mounts
        in the directories (their view bound those there at its start)."""
        if steps is None or view is not self._view or \
                _view_of(steps) != self._view_steps or \
                confine_mod.mounted_under(confine) != self._view_inner:
            return False
        try:
            if _dir_ids(confine) != self._view_ids:
                return False
        except OSError:
            return False
        poller = select.poll()
        poller.register(self._mounts, select.POLLPRI)
        return not poller.poll(0)

    def _run(self, settings, cwd, trace, timeout):
        # the run is born in the server's cgroup: its box, the server
        # the box's resident
        box = contain.Box(self._cgroup, resident=self.pid)
        request = b"\0".join(
            [os.fsencode(cwd)] +
            [os.fsencode(f"{k}={v}" if v is not None else k)
             for k, v in settings.items()])
        with _capture_file("stdout") as out, _capture_file("stderr") as err:
            start = time.monotonic()
            try:
                status, timed_out, last = self._one_run(
                    request, out, err, timeout, box)
            except BaseException:
                # Interrupted, or the server went wrong: it is done with.
                # End of file makes it kill a run whose pid we missed.
                box.kill()
                self.close()
                box.finish()
                raise
            rc = os.waitstatus_to_exitcode(status)
            outlived = box.finish(_grace(rc, timed_out,
                                         self.backend == "syscall"))
            if last or box.resident_killed:
                # the server ended after the run, or what the run left
                # was killed with its cgroup, the server too: the next
                # run starts another
                self.close()
            return _limited(_ended(self.argv, rc, timed_out, start, out, err,
                                   trace, [] if timed_out else outlived),
                            timeout)

    def _one_run(self, request, out, err, timeout, box):
        """(wait status, timed out, last) of the run of request, in BOX;
        LAST: the server ends after it (processes of it were still
        followed: faults/syscall/supervise.c)."""
        try:
            socket.send_fds(self._sock, [request],
                            [self._null, out.fileno(), err.fileno()])
        except OSError as e:
            raise ServerUnavailable(f"fork server: {e.strerror}") from None
        try:
            # it answers as soon as it has forked
            started = self._receive(None if timeout is None else float(timeout))
        except subprocess.TimeoutExpired:
            raise ServerUnavailable("the fork server does not answer") from None
        if started.startswith("fail "):
            raise ServerUnavailable(started[len("fail "):])
        pid, = _answer(started, "pid", 1)
        box.started(pid)
        timed_out = False
        limit = timeout if isinstance(timeout, timelimit.Limit) else None
        began = time.monotonic()
        deadline = float("inf") if timeout is None else began + float(timeout)
        try:
            while True:
                try:
                    # woken every TRIM_EVERY seconds to give back the
                    # output past OUTPUT_CAP (_trim)
                    done = self._receive(min(TRIM_EVERY, max(
                        0.0, deadline - time.monotonic())))
                    break
                except subprocess.TimeoutExpired:
                    _trim(out, err)
                    if time.monotonic() < deadline:
                        if limit is not None and \
                                limit.cut_over(time.monotonic() - began):
                            raise
                        continue
                    # a run that sleeps or makes progress goes on
                    period = limit.again(pid, time.monotonic() - began) \
                        if limit is not None else None
                    if period is None:
                        raise
                    deadline = time.monotonic() + period
        except subprocess.TimeoutExpired:
            timed_out = True
            box.kill()
            try:
                # killed, the run ends at once; a server that does not say
                # so (stopped, wedged) is done with, and the case runs
                # again exec'd
                done = self._receive(contain.KILL_WAIT)
            except subprocess.TimeoutExpired:
                raise ServerUnavailable("the fork server does not answer") \
                    from None
        last = done.endswith(" last")
        done_pid, status = _answer(done[:-len(" last")] if last else done,
                                   "exit", 2)
        if done_pid != pid:
            raise ServerUnavailable(f"unexpected answer {done!r}")
        return status, timed_out, last

    @property
    def closed(self):
        """The server is gone: closed, or it ended after its last run."""
        return self._sock is None

    def close(self):
        """End the server and reap it. End of file on its socket ends
        it, and a run it is waiting for (we were interrupted before we
        knew its pid) is killed first; one that does not go (a program
        that never became a server) is killed."""
        if self._mounts is not None:
            os.close(self._mounts)
            self._mounts = None
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if self._null is not None:
            os.close(self._null)
            self._null = None
        if self.pid is not None:
            proc, self.pid = _Spawned(self.pid, self.argv), None
            try:
                try:
                    _wait(proc, CLOSE_WAIT)
                except subprocess.TimeoutExpired:
                    _kill_group(proc.pid)
                    proc.wait()
            except ChildProcessError:
                pass
            self._session.owned.discard(proc.pid)
        # what the server's runs left there goes with it
        contain.remove(self._cgroup)
        self._cgroup = None
