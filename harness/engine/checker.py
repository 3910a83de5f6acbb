"""The spec's checker, as the Judge asks it (the Checking mixin): its
answer for a crash state or a run's directory, run once per distinct
content (CheckCache, on disk, shared by the pool's processes), through
the spec's check_server where it has one (checkserver.py holds the
server process) and audited against check; CheckerFailed when it
cannot answer."""

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import signal
import tempfile
from pathlib import Path

from . import checkserver, runner, statedir
from ..judging import explorer, oracle
from .cases import BIN, INPUT, NEW, target_name
from .execute import copy_start, tree_digest
from .baseline import timeout_of



class Checking:
    """The Judge's checker: its answers for crash states
    (run_checker) and run directories (check), cached (checks), asked
    of the spec's check_server where it has one (served_check)."""

    @property
    def checks(self):
        """The sweep's CheckCache, in its work directory (made on first
        use: after the enumeration made the directory)."""
        if self._checks is None:
            self._checks = CheckCache(self.work / CHECKS_DIR)
        return self._checks

    def run_checker(self, combo, state, claimed):
        """The checker's answer for a crash state, run once per distinct
        state (CheckCache): the same files give the same answer, at any
        crash point, in any case of the combo."""
        expect = "new" if claimed else "old-or-new"
        key = ("s", state.digest())
        hit = self.checks.get(combo, key, expect)
        if hit is not None:
            return hit
        with self.checks.claim(combo, key, expect):
            # judged by another process while this one waited
            hit = self.checks.get(combo, key, expect)
            if hit is not None:
                return hit
            server = self.check_server(combo)
            if server is None and self.scratch_root is not None:
                # one directory per process, changed state to state (a
                # server's states each get a new one: a server keeps
                # running, and must not meet a directory it has seen)
                res = self.check(combo, statedir.in_root(
                    self.scratch_root).lay(state), expect, cache=False)
            elif server is None:
                scratch = self.state_dir()
                try:
                    explorer.layout(state, scratch)
                    res = self.check(combo, scratch, expect, cache=False)
                finally:
                    shutil.rmtree(scratch, ignore_errors=True)
            else:
                res = self.served_check(
                    combo, server, state.digest(), expect,
                    lambda d: explorer.layout(state, d))
            self.checks.put(combo, key, expect, res)
        return res

    def state_dir(self, server=None):
        """A new directory to lay a crash state out in: in the server's
        own directory (the one its confinement lets it change)."""
        if server is not None:
            return Path(tempfile.mkdtemp(prefix="state-", dir=server.states))
        if self.scratch_root is not None:
            return Path(tempfile.mkdtemp(prefix="state-",
                                         dir=self.scratch_root))
        return runner.make_scratch("crashcheck-state-")

    def check_server(self, combo):
        """This process's checkserver.CheckServer of the combo's spec, or
        None (the spec has none)."""
        spec = combo.spec
        if spec.check_server is None:
            return None
        argv = spec.check_server_argv(bin=BIN, target=target_name(spec),
                                      new=f"../{INPUT}/{NEW}",
                                      strategy=combo.strategy)
        env = dict(os.environ)
        for name in (*runner.OUR_VARS, "CRASHCHECK_EXPECT"):
            env.pop(name, None)
        return checkserver.server(argv, env)

    def served_check(self, combo, server, digest, expect, lay):
        """The check_server's answer for the tree LAY(dir) lays out in an
        empty directory (a crash state, a copy of a run's directory),
        whose content DIGEST (hex) names. The first SERVER_AUDIT_FIRST
        trees a server answers about, and one in SERVER_AUDIT_EVERY
        after them (by content, so the same ones in every run), are
        asked of check too,
        laid out again in a directory of their own: a server whose answer
        differs (another status, another first line: it kept something
        from an earlier state) cannot be trusted with the case."""
        limit = timeout_of(combo, self.settings)
        directory = self.state_dir(server)
        try:
            lay(directory)
            status, output = server.ask(directory, expect, limit)
        except checkserver.ServerFailed as e:
            raise CheckerFailed(e.reason, server.argv, e.output) from None
        finally:
            shutil.rmtree(directory, ignore_errors=True)
        if server.audits < SERVER_AUDIT_FIRST or \
                int(digest[:8], 16) % SERVER_AUDIT_EVERY == 0:
            server.audits += 1
            again_dir = self.state_dir()
            try:
                lay(again_dir)
                again = self.check(combo, again_dir, expect, cache=False)
            finally:
                shutil.rmtree(again_dir, ignore_errors=True)
            if again.status != status or \
                    _first_line(again.output) != _first_line(output):
                raise CheckerFailed(
                    "check_server answered otherwise than check on the same "
                    f"state: the server {_answer_text(status, output)}, "
                    f"check {_answer_text(again.status, again.output)}",
                    server.argv, "")
        return oracle.CheckResult(status=status, output=output, expect=expect)

    def check(self, combo, directory, expect, cache=True):
        """The checker's answer for DIRECTORY (a run's work directory),
        with CRASHCHECK_EXPECT=EXPECT; once per distinct content of the
        directory (tree_digest), unless not cache (a crash state's own
        directory). One checker at a time in a run's directory: the
        power-loss cases of one combo, each under its model in its own
        worker, check the baseline's, and a checker that locks its
        database (LevelDB's LOCK) fails beside another. The lock file
        lies beside the directory, in the run's scratch."""
        if not cache:
            return self._check(combo, directory, expect, cache)
        with open(Path(directory).parent / (Path(directory).name
                                            + ".check-lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            return self._check(combo, directory, expect, cache)

    def _check(self, combo, directory, expect, cache):
        key = None
        if cache:
            key = ("d", tree_digest(directory))
            hit = self.checks.get(combo, key, expect)
            if hit is not None:
                return hit
            server = self.check_server(combo)
            if server is not None:
                # a copy of the run's directory, where the server may
                # change it (a tree shutil cannot copy, a fifo: check)
                try:
                    res = self.served_check(
                        combo, server, key[1], expect,
                        lambda d: copy_start(directory, d))
                except (shutil.Error, OSError):
                    res = None
                if res is not None:
                    self.checks.put(combo, key, expect, res)
                    return res
        argv = combo.spec.check_argv(bin=BIN,
                                     target=target_name(combo.spec),
                                     new=f"../{INPUT}/{NEW}",
                                     strategy=combo.strategy)
        env = dict(os.environ, CRASHCHECK_EXPECT=expect)
        limit = timeout_of(combo, self.settings)
        for name in runner.OUR_VARS:
            env.pop(name, None)
        # confined like the program: what it writes outside the state's
        # directory is thrown away
        run = runner.run(argv, cwd=directory, env=env, preload=False,
                         timeout=limit, confine=[directory])
        text = (run.stdout + run.stderr).decode("utf-8", "replace")
        # A checker that cannot answer says nothing about the state: the
        # case cannot be judged (never torn or lost-update for it), and
        # no answer is kept
        if run.timed_out:
            raise CheckerFailed(f"checker timed out after {limit:g} s",
                                argv, text)
        if run.signal is not None:
            raise CheckerFailed("checker was killed by "
                                + _signal_name(run.signal), argv, text)
        if run.outlived:
            raise CheckerFailed("a process the checker started outlived it: "
                                + ", ".join(run.outlived), argv, text)
        res = oracle.CheckResult(status=run.status, output=text, expect=expect)
        if key is not None:
            self.checks.put(combo, key, expect, res)
        return res


class CheckerFailed(Exception):
    """A spec's checker that timed out, died of a signal or left a
    process behind: the state it was asked about cannot be judged."""

    def __init__(self, reason, argv, output):
        super().__init__(reason)
        self.reason, self.argv, self.output = reason, argv, output

    def detail(self):
        return (f"checker {' '.join(map(str, self.argv))}"
                + (f"; its output: {self.output}" if self.output.strip()
                   else ""))


def _first_line(output):
    """The first line of a checker's output with something in it: what
    a finding quotes of it."""
    return next((li.strip() for li in output.splitlines() if li.strip()), "")


def _answer_text(status, output):
    """A checker's answer in a few words: "exited 1: tip is 'old'"."""
    first = _first_line(output)
    return f"exited {status}" + (f": {first[:120]}" if first else "")


def _signal_name(num):
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


CHECKS_DIR = "checks"


class CheckCache:
    """A checker's answers by content: (combo, state digest, expect) ->
    oracle.CheckResult. A checker judges files, so a state already judged
    (at another crash point, in another case, by another process of the
    pool) is not judged again. The answers live in memory and in DIR (the
    sweep's work directory, which every process of the pool shares), one
    small file each, written whole under a temporary name and renamed.
    hits and misses count this process's lookups."""

    def __init__(self, directory):
        self.dir = Path(directory)
        self.mem = {}
        self.hits = self.misses = 0

    def _name(self, combo, key, expect):
        # the kind first: a crash state ("s") or a run's directory ("d"),
        # which distinct() counts apart
        h = hashlib.blake2b(digest_size=12)
        h.update("\0".join((combo.prefix, key[1], expect)).encode())
        return f"{key[0]}-{h.hexdigest()}"

    def get(self, combo, key, expect):
        name = self._name(combo, key, expect)
        res = self.mem.get(name)
        if res is None:
            try:
                with open(self.dir / name) as fh:
                    d = json.load(fh)
                res = oracle.CheckResult(status=d["status"],
                                         output=d["output"], expect=expect)
                self.mem[name] = res
            except (OSError, ValueError, KeyError, TypeError):
                res = None
        if res is None:
            self.misses += 1
        else:
            self.hits += 1
        return res

    @staticmethod
    def distinct(directory):
        """{kind: how many distinct answers DIRECTORY holds}: "s" crash
        states, "d" run directories; what the sweep's summary reports."""
        counts = {"s": 0, "d": 0}
        try:
            with os.scandir(directory) as it:
                for e in it:
                    kind = e.name.split("-", 1)[0]
                    if kind in counts:
                        counts[kind] += 1
        except OSError:
            pass
        return counts

    @contextlib.contextmanager
    def claim(self, combo, key, expect):
        """Held while this process judges a state: another process of
        the pool that meets the same state waits, then finds the answer
        (get), so that each distinct state is judged once in the whole
        sweep, not once per process that meets it first at the same
        time. Without a lock to be had (no room), no wait."""
        name = self._name(combo, key, expect)
        try:
            self.dir.mkdir(exist_ok=True)
            fh = open(self.dir / f".lock-{name}", "a")
        except OSError:
            yield
            return
        with fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            yield

    def put(self, combo, key, expect, res):
        name = self._name(combo, key, expect)
        self.mem[name] = res
        try:
            self.dir.mkdir(exist_ok=True)
            tmp = self.dir / f".{name}.{os.getpid()}"
            with open(tmp, "w") as fh:
                json.dump({"status": res.status, "output": res.output}, fh)
            os.rename(tmp, self.dir / name)
        except OSError:
            pass        # the next process judges it again: slower, the same


# a check_server's answers are held to check's on the first trees it
# answers about in a process, and then on one in this many (served_check)
SERVER_AUDIT_FIRST = 8


SERVER_AUDIT_EVERY = 64
