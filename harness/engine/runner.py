"""Run one program under one plan, in its own process group, with the
fault library preloaded, and collect what happened.

Everything the harness learns about a run comes from here: the exit
status or the signal, whether the time limit struck, the program's output
(capped), and the trace the fault library wrote. Whether a planned fault
fired is read from the trace, never assumed.
"""

import os
import secrets
import select
import shutil
import signal
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
    getattr(signal, name) for name in ("SIGPIPE", "SIGXFSZ")
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
