"""A recipe's checker kept running between crash states (check_server).

A checker that starts an interpreter and loads an application's code
(Mercurial: 0.3 s of a 0.31 s check) spends most of each state starting
up, and a sweep judges thousands of states. A spec may then name, besides
`check`, a `check_server`: the same checker as a process that answers
state after state. The protocol, one JSON object a line each way:

    crashcheck -> server   {"dir": "/abs/state", "expect": "new"}
    server -> crashcheck   {"status": 0, "output": "..."}

An answer is what `check` would exit with and print (stdout and stderr
together) had it run in "dir" with CRASHCHECK_EXPECT set to "expect".
The server keeps nothing from one state to the next: the harness checks
that by asking `check` itself about a share of the states (Judge).

Each sweep process starts its own server, the first time it meets a
state of the spec, in a session of its own in the cgroup of the
process's servers (as a fork server is), and confined where runs are
(harness/engine/confine.py): the real directory it may change is the
one the states are laid out in (CheckServer.states), everything else is
a view whose changes are thrown away when the server ends. A server
that does not answer in the case's time limit, answers what is not one
JSON line of that shape, or exits, is ended; the state it was asked
about cannot be judged (ServerFailed), and the next state starts a new
server.
"""

import atexit
import contextlib
import json
import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import time

from . import confine as confine_mod, contain, runner

# how long a server is given to end after its stdin closes
CLOSE_WAIT = 2.0
# the most a line of answer may hold
ANSWER_CAP = 1 << 20

_live = {}      # (pid of ours, argv) -> CheckServer
_atexit = False


class ServerFailed(Exception):
    """The server could not answer about a state: REASON one line, OUTPUT
    what it wrote on stderr (its tail)."""

    def __init__(self, reason, output=""):
        super().__init__(reason)
        self.reason, self.output = reason, output


class CheckServer:
    """One running check_server: ask() a state directory, get (status,
    output). states: the directory the caller lays states out in (the
    one real directory the confined server may change)."""

    def __init__(self, argv, env):
        self.argv = [str(a) for a in argv]
        self.env = dict(env)
        self.states = runner.make_scratch("crashcheck-checks-")
        self.proc = None
        self.view = None
        self._err = None
        self._buf = b""
        self.audits = 0         # answers of it held to check's

    def _start(self):
        session = contain.session()
        argv, env = self.argv, dict(self.env)
        name, token = contain.run_env()
        env[name] = token
        if confine_mod.available():
            view = confine_mod.View(runner.scratch_base())
            try:
                steps = view.steps([str(self.states)], str(self.states))
            except confine_mod.Unconfinable:
                view.drop()
                view = None
            if view is not None:
                self.view = view
                env[confine_mod.VIEW_VAR] = steps
                argv = [str(confine_mod.HELPER),
                        runner.program_file(argv[0], self.states, env), *argv]
        self._err = tempfile.TemporaryFile(dir=self.states)
        srv = session.local().srv
        try:
            with contain.inside(srv) if srv else contextlib.nullcontext():
                self.proc = subprocess.Popen(
                    argv, cwd=self.states, env=env, stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE, stderr=self._err,
                    start_new_session=True)
        except OSError as e:
            self._end()
            raise ServerFailed(f"check_server could not start: "
                               f"{e.strerror or e}") from None
        session.owned.add(self.proc.pid)
        os.set_blocking(self.proc.stdout.fileno(), False)
        self._buf = b""

    def ask(self, directory, expect, timeout):
        """(status, output) of the server for DIRECTORY with EXPECT; a
        server that cannot answer is ended (ServerFailed)."""
        if self.proc is None:
            self._start()
        request = json.dumps({"dir": os.fspath(directory),
                              "expect": expect}) + "\n"
        try:
            self.proc.stdin.write(request.encode())
            self.proc.stdin.flush()
        except OSError:
            self._fail("check_server exited before it was asked")
        line = self._line(timeout)
        try:
            answer = json.loads(line)
        except ValueError:
            self._fail("check_server answered what is not JSON: "
                       + line[:120].decode("utf-8", "replace"))
        if not isinstance(answer, dict) or \
                not isinstance(answer.get("status"), int) or \
                isinstance(answer.get("status"), bool) or \
                not isinstance(answer.get("output", ""), str):
            self._fail("check_server's answer is not "
                       '{"status": <integer>, "output": <string>}: '
                       + line[:120].decode("utf-8", "replace"))
        return answer["status"], answer.get("output", "")

    def _line(self, timeout):
        """The server's next line of answer, within TIMEOUT seconds."""
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buf:
                left = deadline - time.monotonic()
                if left <= 0:
                    self._fail(f"check_server did not answer within "
                               f"{timeout:g} s")
                if not sel.select(left):
                    continue
                try:
                    chunk = os.read(fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    self._fail("check_server exited"
                               + self._status_text())
                self._buf += chunk
                if len(self._buf) > ANSWER_CAP:
                    self._fail(f"check_server's answer is longer than "
                               f"{ANSWER_CAP} bytes")
        line, _, self._buf = self._buf.partition(b"\n")
        return line

    def _status_text(self):
        try:
            code = self.proc.wait(timeout=CLOSE_WAIT)
        except subprocess.TimeoutExpired:
            return ""
        if code < 0:
            try:
                return f" (killed by {signal.Signals(-code).name})"
            except ValueError:
                return f" (killed by signal {-code})"
        return f" (status {code})"

    def _fail(self, reason):
        output = self._stderr_tail()
        self._end(kill=True)
        raise ServerFailed(reason, output)

    def _stderr_tail(self):
        if self._err is None:
            return ""
        try:
            self._err.seek(0, os.SEEK_END)
            size = self._err.tell()
            self._err.seek(max(0, size - 2000))
            return self._err.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def _end(self, kill=False):
        """Stop the server (end of its stdin, then a kill), reap it and
        throw away its view."""
        proc, self.proc = self.proc, None
        if proc is not None:
            try:
                proc.stdin.close()
            except OSError:
                pass
            if kill:
                _kill_group(proc.pid)
            try:
                proc.wait(timeout=0 if kill else CLOSE_WAIT)
            except subprocess.TimeoutExpired:
                _kill_group(proc.pid)
            try:
                proc.wait()
            except ChildProcessError:
                pass
            proc.stdout.close()
            contain.session().owned.discard(proc.pid)
        if self._err is not None:
            self._err.close()
            self._err = None
        if self.view is not None:
            self.view.drop()
            self.view = None

    def close(self):
        """End the server and remove its directory."""
        self._end()
        shutil.rmtree(self.states, ignore_errors=True)


def server(argv, env):
    """This process's CheckServer for ARGV (made on first use; ENV is the
    environment it starts in)."""
    key = (os.getpid(), tuple(map(str, argv)))
    srv = _live.get(key)
    if srv is None:
        global _atexit
        if not _atexit:
            atexit.register(close_all)
            _atexit = True
        srv = _live[key] = CheckServer(argv, env)
    return srv


def close_all():
    """End this process's servers (at exit, and at the end of a sweep)."""
    me = os.getpid()
    for key in [k for k in _live if k[0] == me]:
        _live.pop(key).close()


def _kill_group(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass

