"""The fork server: one program exec'd once and forked for each run of
a sweep's command line (faults/serve.c; under the system-call backend,
faults/syscall/supervise.c serving the same protocol). A run forked here
is what runner.run gives for the same settings: the same Run, time
limit, output capture and view, in a box (the server's own cgroup, where
the run is born); what is saved is the exec and the dynamic loader, most
of what a short run costs.

It uses runner.py's helpers (spawning, output capture, waiting, the
Run's end): it is a second way to start the runner's runs, kept apart
for its protocol with the server and the server's life.
"""

import os
import resource
import select
import socket
import subprocess
import time
from contextlib import contextmanager

from . import backend as backend_mod, confine as confine_mod, contain, \
    timelimit
from .runner import (ENV_SLOT, ENV_SLOTS, RUN_VARS, TRIM_EVERY,
                     _Spawned, _capture_file, _check_program, _ended, _grace,
                     _kill_group, _limited, _may_chdir, _spawn, _trim, _wait,
                     build_env, check_preloads, full_range, program_file)

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
    short run costs. The run is otherwise what runner.run() gives: a
    session of its own, its group killed at the time limit and when it
    ends, output capped; a box (contain.Box): the server's own cgroup, where the
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
    then runs the case with runner.run().
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
            # the runs exec it: one that is not there is said as
            # runner.run() says it, by the exec'd run the caller falls
            # back to
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
        # every run's stdin, as runner.run() gives it
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
        """One run, as runner.run() would make it with these settings.
        EXTRA variables are set in the run; the server's own environment
        is the caller's. confine: as runner.run()'s (the child makes the
        view: faults/serve.c)."""
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
