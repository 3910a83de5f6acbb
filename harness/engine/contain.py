"""Containment: a process a run starts is ours until it is gone, with
everything it started.

A program's process group is not enough: a daemon forks twice and calls
setsid(), and then nothing of the group reaches it; it runs on after its
case and its late writes land in the next case's files. So every run goes
in a box (Box), and when the program ends the box is emptied: whatever is
still in it *outlived* the program, is named in the run
(runner.Run.outlived, which the sweep judges a harness-error) and killed.
A process still in its exit when the program ends (rsync's, which sleep
100 ms after an error before they exit) is not a daemon: the box is given
up to OUTLIVE_GRACE seconds to empty on its own first, and only what is
still there then is named and killed. A program killed by SIGKILL (a
planned crash) has what it left killed at once.

Two ways to make the box, chosen once per crashcheck process (Session):

- cgroup: a cgroup v2 directory per process that starts programs
  (SESSION/p<pid>/run<N> for exec'd runs, SESSION/p<pid>/serve<N> for
  a fork server and its runs, SESSION/p<pid>/srv for checker servers),
  where the cgroup2 file system is mounted and writable. The runner
  moves itself into the run's cgroup around the spawn, so nothing of
  the program starts outside it; a fork server is started in a cgroup
  of its own, and its runs are born there (a move into a cgroup waits
  for an RCU grace period when no other move came just before it, as
  much as a short run costs: a served run makes none). cgroup.procs
  lists what is left (but for the server, the box's resident), and
  cgroup.kill kills all of it at once, however fast it forks, the
  server too where something was left.
- subreaper: PR_SET_CHILD_SUBREAPER (in crashcheck's own processes:
  own_process), so that an orphan comes back to us instead of init; what
  is left is found in /proc (the program's process group and session,
  and our children that we did not start ourselves), killed and reaped,
  until nothing is found.

CRASHCHECK_CONTAIN=cgroup|subreaper forces one (tests use it to try both);
auto, the default, takes the cgroup where it can.

If crashcheck itself is killed with SIGKILL, nothing runs on: a watchdog
(a small shell process outside the boxes, started with the session) waits
for the end of a pipe that only crashcheck's processes hold; when they are
all gone it kills the session's cgroup and every process whose environment
carries the session's token (CRASHCHECK_SESSION, set in every program's
environment), and removes the scratch directories the session registered
(Session.remove_later). A command that ends in order looks for those
itself first (Session.shutdown) and, finding none, tells the watchdog
so: it then only removes what is still there. The pool's processes die
with their parent (PR_SET_PDEATHSIG), and so does a fork server
(faults/serve.c).

The boxes are for anything that starts programs for crashcheck: runner.run,
forkserver.ForkServer, and any other supervisor (wrap the start in
Box.entered(), then Box.started(pid), and end with Box.finish()).
"""

import ctypes
import os
import secrets
import select
import signal
import threading
import time
from contextlib import contextmanager

from .. import UsageError

ENV_MODE = "CRASHCHECK_CONTAIN"
ENV_TOKEN = "CRASHCHECK_SESSION"
MODES = ("auto", "cgroup", "subreaper")

# Seconds a box has to empty after SIGKILL (a process in uninterruptible
# sleep can take a while) before we give up on it and say so.
KILL_WAIT = 10.0
# Seconds the processes a program leaves behind have to exit on their
# own (Box.finish) before they are named and killed: rsync's wait 100 ms
# after an error; this is ten times that, under load. It costs time only
# in a run that leaves something running.
OUTLIVE_GRACE = 1.0
# Characters of a straggler's command line kept in its description.
DESCRIBE_MAX = 80

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36

_libc = ctypes.CDLL(None, use_errno=True)


class ContainError(UsageError):
    """Containment asked for cannot be had here (CRASHCHECK_CONTAIN)."""


def prctl(option, arg):
    if _libc.prctl(option, ctypes.c_ulong(arg), 0, 0, 0) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def die_with_parent(sig, parent):
    """Get SIG when the parent (pid PARENT, which forked us) ends; exit
    now if it already has (the signal would never come)."""
    prctl(PR_SET_PDEATHSIG, sig)
    if os.getppid() != parent:
        os._exit(128 + sig)


# ------------------------------------------------------------------ cgroups

def _cgroup2_mount():
    """Where the cgroup2 file system is mounted, or None."""
    try:
        with open("/proc/self/mountinfo") as fh:
            for line in fh:
                left, _, right = line.partition(" - ")
                if right.split(" ", 1)[0] == "cgroup2":
                    return left.split(" ")[4].replace("\\040", " ")
    except OSError:
        pass
    return None


def _own_cgroup():
    """This process's cgroup v2 path ("0::/path"), or None."""
    try:
        with open("/proc/self/cgroup") as fh:
            for line in fh:
                if line.startswith("0::"):
                    return line[3:].rstrip("\n")
    except OSError:
        pass
    return None


def _join(cgroup):
    """Move this process (all its threads) into CGROUP."""
    fd = os.open(os.path.join(cgroup, "cgroup.procs"), os.O_WRONLY)
    try:
        os.write(fd, b"0")
    finally:
        os.close(fd)


def _procs(cgroup):
    """The pids in CGROUP (not its children), [] when it is gone."""
    try:
        with open(os.path.join(cgroup, "cgroup.procs"), "rb") as fh:
            return [int(x) for x in fh.read().split()]
    except FileNotFoundError:
        return []


def _below(cgroup):
    """The pids in the cgroups below CGROUP (a program may make one and
    move there); one read of cgroup.stat when there is none."""
    try:
        with open(os.path.join(cgroup, "cgroup.stat"), "rb") as fh:
            if b"nr_descendants 0" in fh.read():
                return []
    except FileNotFoundError:
        return []
    found = []
    for dirpath, _, _ in os.walk(cgroup):
        if dirpath != cgroup:
            found += _procs(dirpath)
    return found


def _populated(cgroup):
    try:
        with open(os.path.join(cgroup, "cgroup.events"), "rb") as fh:
            return b"populated 1" in fh.read()
    except FileNotFoundError:
        return False


def _cgroup_kill(cgroup, deadline):
    """Kill everything in CGROUP and below; True once it is empty, False
    when it did not empty by DEADLINE (monotonic seconds)."""
    try:
        fd = os.open(os.path.join(cgroup, "cgroup.kill"), os.O_WRONLY)
    except FileNotFoundError:
        return True
    try:
        os.write(fd, b"1")
    finally:
        os.close(fd)
    return _cgroup_empty(cgroup, deadline)


def _cgroup_empty(cgroup, deadline):
    """True once CGROUP and below hold no process, False when they still
    do at DEADLINE (monotonic seconds)."""
    # cgroup.events changes (POLLPRI) when "populated" does
    try:
        ev = os.open(os.path.join(cgroup, "cgroup.events"), os.O_RDONLY)
    except FileNotFoundError:
        return True
    try:
        poller = select.poll()
        poller.register(ev, select.POLLPRI | select.POLLERR)
        while True:
            os.lseek(ev, 0, os.SEEK_SET)
            if b"populated 1" not in os.read(ev, 256):
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            poller.poll(min(left, 0.1) * 1000)
    finally:
        os.close(ev)


def _remove_tree(cgroup):
    """rmdir CGROUP and its children, deepest first; what will not go
    (still populated) stays."""
    for dirpath, dirnames, _ in os.walk(cgroup, topdown=False):
        try:
            os.rmdir(dirpath)
        except OSError:
            pass


# --------------------------------------------------------------- /proc

def _stat(pid):
    """(ppid, pgid, sid, state, starttime) of PID, or None when it is
    gone; starttime in clock ticks since boot (ticks())."""
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
    except OSError:
        return None
    try:
        data = os.read(fd, 1024)
    except OSError:
        return None
    finally:
        os.close(fd)
    fields = data[data.rfind(b")") + 2:].split()
    try:
        return (int(fields[1]), int(fields[2]), int(fields[3]), fields[0],
                int(fields[19]))
    except (IndexError, ValueError):
        return None


_TICK = os.sysconf("SC_CLK_TCK")


def ticks():
    """Now, in the clock ticks since boot that /proc/PID/stat gives a
    process's start in, less one: a process started from now on has a
    starttime at least this."""
    with open("/proc/uptime", "rb") as fh:
        return int(float(fh.read().split()[0]) * _TICK) - 1


def _pids():
    for name in os.listdir("/proc"):
        if name.isdigit():
            yield int(name)


def describe(pid):
    """'pid 123 (sleep 300)': a process, as a report names it."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            cmd = fh.read().rstrip(b"\0").replace(b"\0", b" ")
    except OSError:
        cmd = b""
    if not cmd:
        try:
            with open(f"/proc/{pid}/comm", "rb") as fh:
                cmd = fh.read().strip()
        except OSError:
            cmd = b"?"
    text = cmd.decode("utf-8", "replace")
    if len(text) > DESCRIBE_MAX:
        text = text[:DESCRIBE_MAX - 3] + "..."
    return f"pid {pid} ({text})"


def with_token(token):
    """Pids of the live processes whose environment (as they were
    exec'd with it) holds CRASHCHECK_SESSION=TOKEN."""
    needle = f"{ENV_TOKEN}={token}".encode()
    me = os.getpid()
    found = []
    for pid in _pids():
        if pid == me:
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                env = fh.read()
        except OSError:
            continue
        if needle in env.split(b"\0"):
            st = _stat(pid)
            if st is not None and st[3] not in (b"Z", b"X"):
                found.append(pid)
    return found


def _kill(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def reap(pids=(), since=None):
    """Reap our zombies: PIDS, and, with SINCE (ticks()), any other child
    started since then that has ended (orphans that came back to us as a
    subreaper). The sweep stops at a child someone waits for
    (Session.owned) or that is older, so that its owner gets its
    status."""
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
    if since is None:
        return
    owned = _session.owned if _session is not None else set()
    while True:
        try:
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return
        if info is None or info.si_pid in owned:
            return
        st = _stat(info.si_pid)
        if st is None or st[4] < since:
            return
        try:
            os.waitpid(info.si_pid, os.WNOHANG)
        except ChildProcessError:
            return


# ------------------------------------------------------------------ session

WATCHDOG = r"""
# crashcheck's watchdog: $1 the session's token. stdin is a pipe only
# crashcheck's processes hold, on which they register what is theirs
# ("cgroup PATH", "dir PATH") before they make it; its end means they
# are all gone: kill what they started, remove what they registered.
# A last line "ended" says the session ended in order and found nothing
# of its own still running: then only what is still there is removed.
nl='
'
lines=$(cat)
ended=
[ "${lines##*$nl}" = ended ] && ended=1
printf '%s\n' "$lines" | while IFS= read -r line; do
	case "$line" in
	cgroup\ /*) cg=${line#cgroup }
		[ -d "$cg" ] || continue
		echo 1 > "$cg/cgroup.kill" 2>/dev/null
		n=0
		while grep -qs '^populated 1' "$cg/cgroup.events" && [ $n -lt 100 ]; do
			sleep 0.1; n=$((n + 1))
		done
		find "$cg" -depth -type d -exec rmdir {} \; 2>/dev/null ;;
	esac
done
n=0
while [ -z "$ended" ] && [ $n -lt 50 ]; do
	pids=$(grep -lsz "^CRASHCHECK_SESSION=$1\$" /proc/[0-9]*/environ |
		sed -n 's|^/proc/\([0-9]*\)/environ$|\1|p')
	[ -n "$pids" ] || break
	kill -KILL $pids 2>/dev/null
	sleep 0.1; n=$((n + 1))
done
printf '%s\n' "$lines" | while IFS= read -r line; do
	case "$line" in
	dir\ /*) d=${line#dir }
		[ -e "$d" ] || [ -L "$d" ] || continue
		rm -rf -- "$d" ;;
	esac
done
"""


class Session:
    """One crashcheck process's containment: its mode, its token, its
    cgroup and its watchdog. Made by the first process that starts a
    program (or a pool); a process forked from it (a pool's worker)
    makes its own part of it (Session.local) on first use."""

    def __init__(self):
        self.pid = os.getpid()
        self.since = ticks()
        self.token = secrets.token_hex(16)
        self.owned = set()          # pids of children someone waits for
        self.reason = ""            # why not cgroup, in auto mode
        self.cgroup = None          # the session's cgroup directory
        self._home = None           # our own cgroup, to come back to
        self._local = {}            # pid -> Local
        self._watchdog = None       # (pid, write end of its pipe)
        mode = os.environ.get(ENV_MODE, "auto") or "auto"
        if mode not in MODES:
            raise ContainError(f"{ENV_MODE}: '{mode}' is not one of "
                               f"{', '.join(MODES)}")
        # the watchdog first: crashcheck killed at any point after this
        # leaves nothing behind, the cgroup included
        self._start_watchdog()
        if mode != "subreaper":
            try:
                self._make_cgroup()
            except OSError as e:
                self.reason = (f"no writable cgroup v2: {e.strerror}"
                               + (f": {e.filename}" if e.filename else ""))
            except ValueError as e:
                self.reason = f"no writable cgroup v2: {e}"
            if self.cgroup is None and mode == "cgroup":
                raise ContainError(f"{ENV_MODE}=cgroup: {self.reason}")
        self.mode = "cgroup" if self.cgroup else "subreaper"
        if _own:
            _subreaper()

    def _make_cgroup(self):
        mount, own = _cgroup2_mount(), _own_cgroup()
        if mount is None or own is None:
            raise ValueError("cgroup2 is not mounted")
        home = os.path.normpath(os.path.join(mount, own.lstrip("/")))
        path = os.path.join(home, f"crashcheck-{self.pid}-{self.token[:8]}")
        self._register(b"cgroup", path)
        os.mkdir(path)
        try:
            probe = os.path.join(path, "probe")
            os.mkdir(probe)
            if not os.path.isfile(os.path.join(probe, "cgroup.kill")):
                raise ValueError("no cgroup.kill (Linux 5.14 or later)")
            # in and back out: both moves must be allowed
            _join(probe)
            _join(home)
            os.rmdir(probe)
        except BaseException:
            try:
                _join(home)
            except OSError:
                pass
            _remove_tree(path)
            raise
        self.cgroup, self._home = path, home

    def _start_watchdog(self):
        r, w = os.pipe2(os.O_CLOEXEC)
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C"}
        try:
            pid = os.posix_spawn(
                "/bin/sh", ["/bin/sh", "-c", WATCHDOG, "crashcheck-watchdog",
                            self.token], env,
                file_actions=[(os.POSIX_SPAWN_DUP2, r, 0),
                              (os.POSIX_SPAWN_OPEN, 1, os.devnull,
                               os.O_WRONLY, 0),
                              (os.POSIX_SPAWN_OPEN, 2, os.devnull,
                               os.O_WRONLY, 0)],
                setsid=True, setsigmask=(),
                setsigdef=(signal.SIGINT, signal.SIGTERM, signal.SIGPIPE))
        except OSError:
            os.close(r)
            os.close(w)
            return      # no watchdog: the PDEATHSIG chain still holds
        os.close(r)
        self._watchdog = (pid, w)
        self.owned.add(pid)

    def remove_later(self, path):
        """Have the watchdog remove PATH (a scratch directory of ours) if
        crashcheck is killed before it removes it itself."""
        self._register(b"dir", os.path.abspath(path))

    def _register(self, kind, path):
        if self._watchdog is not None:
            try:
                os.write(self._watchdog[1],
                         kind + b" " + os.fsencode(path) + b"\n")
            except OSError:
                pass

    def local(self):
        """This process's part: its cgroups (Local)."""
        pid = os.getpid()
        loc = self._local.get(pid)
        if loc is None:
            if pid != self.pid:
                # a forked worker: orphans of its runs come back to it
                if _own:
                    _subreaper()
                self._local.clear()
            loc = self._local[pid] = Local(self, pid)
        return loc

    def kill_local(self):
        """Kill every program this process started (a signal handler's
        first act): its live runs, and in a cgroup its servers too."""
        loc = self._local.get(os.getpid())
        for box in list(_live):
            box.kill()
        if loc is not None and loc.cgroup is not None:
            _cgroup_kill(loc.cgroup, time.monotonic() + KILL_WAIT)

    def after_worker(self, pid, since):
        """A worker of ours (a pool's process, started at SINCE, ticks())
        ended: what it started goes too (its cgroup, or the orphans that
        came back to us)."""
        if self.cgroup is not None:
            sub = os.path.join(self.cgroup, f"p{pid}")
            if os.path.isdir(sub):
                _cgroup_kill(sub, time.monotonic() + KILL_WAIT)
                _remove_tree(sub)
        else:
            _kill_orphans(since, exclude=self.owned)

    def shutdown(self):
        """The session ends (its process exits): nothing it started may
        remain. Only in the process that made it."""
        if os.getpid() != self.pid:
            return
        for box in list(_live):
            box.kill()
        if self.cgroup is not None:
            _cgroup_kill(self.cgroup, time.monotonic() + KILL_WAIT)
            _remove_tree(self.cgroup)
        deadline = time.monotonic() + KILL_WAIT
        left = True
        while left and time.monotonic() < deadline:
            left = with_token(self.token)
            for pid in left:
                _kill(pid)
            if left:
                time.sleep(0.01)
        _kill_orphans(self.since, exclude=self.owned)
        if self._watchdog is not None:
            pid, w = self._watchdog
            self._watchdog = None
            if not left and (self.cgroup is None
                             or not os.path.isdir(self.cgroup)):
                # nothing of ours runs: the watchdog need not look
                # through every process's environment for the token
                # (a tenth of a second at every command's end)
                try:
                    os.write(w, b"ended\n")
                except OSError:
                    pass
            os.close(w)         # it finds nothing left and exits
            self.owned.discard(pid)
            _wait_bounded(pid, KILL_WAIT)


def _wait_bounded(pid, seconds):
    deadline = time.monotonic() + seconds
    while True:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return
        if done:
            return
        if time.monotonic() >= deadline:
            _kill(pid)
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
            return
        time.sleep(0.01)


def _kill_orphans(since, exclude=()):
    """Kill our children started since SINCE (ticks()) that nobody waits
    for (orphans that came back to us as a subreaper) and, as they die,
    theirs, until none is left."""
    me = os.getpid()
    deadline = time.monotonic() + KILL_WAIT
    while True:
        kids = [pid for pid in _pids()
                if pid not in exclude and (st := _stat(pid)) is not None
                and st[0] == me and st[4] >= since]
        live = [pid for pid in kids if _stat(pid) is not None
                and _stat(pid)[3] not in (b"Z", b"X")]
        for pid in live:
            _kill(pid)
        reap(kids)
        if not live or time.monotonic() >= deadline:
            return
        time.sleep(0.001)


class Local:
    """One process's cgroups: SESSION/p<pid>/run<N> for its exec'd runs
    (one at a time), SESSION/p<pid>/serve<N> for each fork server and its
    runs (serving), SESSION/p<pid>/srv for its checker servers."""

    def __init__(self, session, pid):
        self.session = session
        self.cgroup = self.run = self.srv = None
        self._n = self._served = 0
        if session.cgroup is not None:
            self.cgroup = os.path.join(session.cgroup, f"p{pid}")
            os.makedirs(self.cgroup, exist_ok=True)
            self.srv = os.path.join(self.cgroup, "srv")
            os.makedirs(self.srv, exist_ok=True)
            self._next_run()

    def _next_run(self):
        self._n += 1
        self.run = os.path.join(self.cgroup, f"run{self._n}")
        os.makedirs(self.run, exist_ok=True)

    def abandon_run(self):
        """The run cgroup would not empty: the next runs use another."""
        self._next_run()

    def serving(self):
        """A new, empty cgroup for a fork server and its runs (None in
        subreaper mode); the caller removes it (remove) when the server
        is gone."""
        if self.cgroup is None:
            return None
        self._served += 1
        path = os.path.join(self.cgroup, f"serve{self._served}")
        os.makedirs(path, exist_ok=True)
        return path


def remove(cgroup):
    """Kill what is left in CGROUP (a fork server's, its server gone) and
    remove it; one that will not empty stays, for the session's end."""
    if cgroup is not None:
        _cgroup_kill(cgroup, time.monotonic() + KILL_WAIT)
        _remove_tree(cgroup)


_session = None
_own = False        # this process is crashcheck's own (own_process)
_atexit = False
_session_lock = threading.Lock()
_spawn_lock = threading.Lock()      # one process in a run cgroup at a time
_live = set()                       # boxes whose program may be running


def session():
    """The process's Session, made on first use."""
    global _session
    if _session is None:
        with _session_lock:
            if _session is None:
                _session = Session()
                global _atexit
                if not _atexit:
                    import atexit
                    atexit.register(shutdown)
                    _atexit = True
    return _session


def own_process():
    """This process is crashcheck's (the command line, a sweep's pytest):
    make it a subreaper, so that the orphans of what it starts come back
    to it, to be found and killed (subreaper mode) and reaped. Not for a
    process that only uses the runner (a test suite): orphans of all it
    ever started would come to it, and stay as zombies."""
    global _own
    _own = True
    if _session is not None:
        _subreaper()


def _subreaper():
    try:
        prctl(PR_SET_CHILD_SUBREAPER, 1)
    except OSError:
        pass        # then orphans go to init, which reaps them


def shutdown():
    """End the session, if one was made here (Session.shutdown); a later
    program starts a new one."""
    global _session
    s = _session
    if s is not None and s.pid == os.getpid():
        s.shutdown()
        _session = None


def kill_local():
    """Kill the programs this process started, if it started any: what a
    signal handler does first (Session.kill_local)."""
    if _session is not None:
        _session.kill_local()


def run_env():
    """Our variable in every program's environment: (name, value)."""
    return ENV_TOKEN, session().token


@contextmanager
def inside(cgroup):
    """This process in CGROUP for the time of the block (what it forks
    meanwhile is born there), then back where it was."""
    with _spawn_lock:
        _join(cgroup)
        try:
            yield
        finally:
            _join(_session._home)


# ---------------------------------------------------------------------- Box

class Box:
    """The processes of one run: everything its program starts.

        box = Box()
        with box.entered():         # what forks now lands in the box
            pid = start the program (in a session of its own)
        box.started(pid)
        ... wait for the program ...
        outlived = box.finish()     # what was left, now killed

    On an interrupt, box.kill() then box.finish(). A fork server's runs
    are boxed in the server's own cgroup, where they are born, with the
    server its RESIDENT: Box(cgroup, resident=server's pid), started()
    with the pid the server reports, no entered(). What is left there
    but the resident is the run's; where something was, finish() kills
    it with the resident (a cgroup is killed whole), and says so in
    resident_killed: the caller is done with its server."""

    def __init__(self, cgroup=None, resident=None):
        s = session()
        self.local = s.local()
        self.resident = resident
        self.resident_killed = False
        self.cgroup = self.local.run if resident is None else cgroup
        self.pid = None
        self._inside = False
        # in subreaper mode, what came back to us is told from what was
        # ours already by its age
        self.since = ticks() if self.cgroup is None else None

    @contextmanager
    def entered(self):
        """This process in the run's cgroup while the program is forked
        (nothing in subreaper mode)."""
        if self.cgroup is None:
            yield
            return
        with inside(self.cgroup):
            self._inside = True
            try:
                yield
            finally:
                self._inside = False

    def started(self, pid):
        self.pid = pid
        _live.add(self)

    def kill(self):
        """Kill everything in the box now (time limit, interrupt), but its
        resident: the run's process group, then the rest of the cgroup
        one by one (finish kills what comes after, the resident too)."""
        if self.pid is not None:
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if self.cgroup is not None and self.resident is not None:
            for pid in self._others():
                _kill(pid)
            return
        if self.cgroup is not None and not self._inside:
            try:
                fd = os.open(os.path.join(self.cgroup, "cgroup.kill"),
                             os.O_WRONLY)
                try:
                    os.write(fd, b"1")
                finally:
                    os.close(fd)
            except OSError:
                pass

    def finish(self, grace=0.0):
        """After the program (the box's first process) has ended and been
        reaped: give what is left up to GRACE seconds to exit on its own
        (OUTLIVE_GRACE after a program that ended by itself, 0 after a
        kill), then kill what is still there and reap what came back to
        us; the descriptions of the processes that were still there."""
        _live.discard(self)
        if self.pid is None:
            return []
        if self.cgroup is not None:
            return self._finish_cgroup(grace)
        return self._finish_scan(grace)

    def _others(self):
        """The pids in the box's cgroup and below it, but the resident."""
        return [p for p in _procs(self.cgroup) + _below(self.cgroup)
                if p != self.resident]

    def _finish_resident(self, grace):
        """finish() of a box with a resident: its cgroup holds it and,
        the common end of a run, nothing else (two small reads)."""
        left = self._others()
        deadline = time.monotonic() + grace
        while left and time.monotonic() < deadline:
            time.sleep(0.005)
            left = self._others()
        if not left:
            return []
        self.resident_killed = True
        return self._kill_named(left)

    def _finish_cgroup(self, grace):
        if self.resident is not None:
            return self._finish_resident(grace)
        if not _populated(self.cgroup):
            # nothing left in it or below (the common end of a run: one
            # read of cgroup.events, not three files)
            return []
        if grace > 0:
            _cgroup_empty(self.cgroup, time.monotonic() + grace)
        pids = _procs(self.cgroup) + _below(self.cgroup)
        if not pids and not _populated(self.cgroup):
            return []
        return self._kill_named(pids)

    def _kill_named(self, pids):
        """The descriptions of PIDS (what was left), taken before the
        box's cgroup is killed whole, and of what would not die; they
        are reaped. A run cgroup that would not empty is given up for
        the next runs."""
        found = [describe(p) for p in pids]
        if not _cgroup_kill(self.cgroup, time.monotonic() + KILL_WAIT):
            left = _procs(self.cgroup) + _below(self.cgroup)
            found.append(f"{len(left)} process(es) that would not die: "
                         + ", ".join(describe(p) for p in left[:3]))
            if self.resident is None:
                self.local.abandon_run()
                self.cgroup = self.local.run
        reap(pids)
        return found

    def _left(self):
        """Subreaper mode: the live processes of the program's group and
        session and our children nobody waits for (what came back to
        us), found in /proc; the ended ones are reaped."""
        me, lead, since = os.getpid(), self.pid, self.since
        owned = self.local.session.owned
        left, dead = [], []
        for pid in _pids():
            if pid == me or pid in owned:
                continue
            st = _stat(pid)
            if st is None or st[4] < since:
                continue
            ppid, pgid, sid, state, _ = st
            if pgid == lead or sid == lead or ppid == me:
                (dead if state in (b"Z", b"X") else left).append(pid)
        reap(dead)
        return left

    def _finish_scan(self, grace):
        """Subreaper mode: what _left() finds, given GRACE seconds to end,
        then killed, and looked for again until none is left."""
        lead = self.pid
        found, seen = [], set()
        settle = time.monotonic() + grace
        while self._left() and time.monotonic() < settle:
            time.sleep(0.005)
        deadline = time.monotonic() + KILL_WAIT
        while True:
            left = self._left()
            if not left:
                break
            if time.monotonic() >= deadline:
                found.append(f"{len(left)} process(es) that would not die: "
                             + ", ".join(describe(p) for p in left[:3]))
                break
            for pid in left:
                if pid not in seen:
                    seen.add(pid)
                    found.append(describe(pid))
            try:
                os.killpg(lead, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            for pid in left:
                _kill(pid)
            reap(left)
            time.sleep(0.001)
        return found
