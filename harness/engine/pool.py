"""The sweep's worker processes: a job (a function of one item) computed
for many items in forked processes, results in item order.

Forked, so a job sees everything the parent had (specs, the judge) and
only the items and the results cross the pipes: each worker has a pipe
of its own for its items (chunks of them, a message each) and one for
its results (one message per item, so a worker that dies loses only the
item it was working on). No threads and no shared locks: the parent
feeds, reads and watches its workers from the iterator its caller pulls
results from, and nothing a worker holds can stop the parent.

Stopping is the delicate part, and every wait in it is bounded:

- a worker starts with SIGINT and SIGTERM blocked, and only unblocks them
  once its own handlers are set (a signal landing between the fork and
  the handlers ran the parent's, pytest's exit, in the worker);
- ^C reaches the workers too, but the parent decides what happens then:
  a worker ignores SIGINT;
- SIGTERM (stop(finished=False), or the parent's death: PR_SET_PDEATHSIG)
  makes a worker kill the programs it started at once
  (contain.Session.kill_local), then unwind a running job (its scratch
  directories go) or leave;
- a worker that is asked to end and does not within STOP_WAIT (stopped,
  wedged) is killed with SIGKILL, after SIGCONT;
- a worker that dies (killed, crashed) is noticed by the end of its
  result pipe: the item it was on gets an error result naming how it
  died (the caller makes it a harness-error), its other items go to
  the others, and a new worker takes its place.
"""

import os
import pickle
import select
import signal
import struct
import time
import traceback
import warnings

from . import confine, contain

# Seconds a worker told to stop (SIGTERM) has before SIGKILL.
STOP_WAIT = 10.0
# Seconds a worker with no more items has to leave: its at_exit closes a
# fork server, which has forkserver.CLOSE_WAIT.
CLOSE_WAIT = 30.0
# Items sent ahead to a worker, in chunks: a worker never waits for the
# parent, which may be busy with pytest's bookkeeping.
AHEAD_CHUNKS = 2

_HEAD = struct.Struct("<I")
_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

_IN_JOB = False     # this worker is inside a job


def chunk_size(items, jobs, most):
    """How many of ITEMS travel to a process, and back, in one message:
    at most MOST (one message per item costs the processes more than a
    short item does), but at least 8 chunks per process, so that the
    last ones balance."""
    return max(1, min(most, items // (jobs * 8)))


def start(job, items, jobs, chunksize=1, at_exit=None):
    """(pool, results): JOB(item) for each of ITEMS in JOBS processes;
    results yields (value, None), or (None, the traceback or how the
    worker died) where the job raised, in the order of ITEMS. The caller
    stops the pool once every result is in (stop(finished=True)), or to
    stop early (finished=False). AT_EXIT() runs in each process when it
    leaves after its last item (not when the pool is stopped early)."""
    pool = Pool(job, list(items), jobs, chunksize, at_exit)
    return pool, pool.results()


def stop(pool, finished):
    """Let idle workers exit (FINISHED), or stop the ones still working:
    their programs and scratch directories go with them. Bounded: a
    worker that does not go is killed."""
    pool.stop(finished)


class _Worker:
    def __init__(self, pid, tasks, results, since):
        self.pid = pid
        self.tasks = tasks          # write end of its item pipe
        self.results = results      # read end of its result pipe
        self.since = since          # its start, contain.ticks()
        self.sent = []              # indexes sent, not yet answered, in order
        self.out = b""              # bytes of messages not yet written
        self.inbuf = b""
        self.closed = False         # no more items for it (tasks closed)


class Pool:
    def __init__(self, job, items, jobs, chunksize, at_exit):
        self.job, self.items, self.at_exit = job, items, at_exit
        self.chunksize = max(1, chunksize)
        # chunks still to hand out, as lists of indexes
        self.pending = [list(range(i, min(i + self.chunksize, len(items))))
                        for i in range(0, len(items), self.chunksize)]
        self.done = {}              # index -> (value, error)
        self.workers = {}           # pid -> _Worker
        self.jobs = min(max(1, jobs), len(self.pending))
        self.session = contain.session()
        self.parent = os.getpid()
        self.stopped = False
        for _ in range(self.jobs):
            self._spawn()

    # ---- the parent
    def _spawn(self):
        task_r, task_w = os.pipe2(os.O_CLOEXEC)
        res_r, res_w = os.pipe2(os.O_CLOEXEC)
        # the other workers' pipes: a worker holding one would keep its
        # end from being seen
        theirs = [fd for w in self.workers.values()
                  for fd in (w.results,) + (() if w.closed else (w.tasks,))]
        since = contain.ticks()
        # blocked until the worker's own handlers are set
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
        try:
            pid = os.fork()
            if pid == 0:
                code = 70
                try:
                    os.close(task_w)
                    os.close(res_r)
                    for fd in theirs:
                        try:
                            os.close(fd)
                        except OSError:
                            pass
                    code = self._worker(task_r, res_w, mask)
                except BaseException:
                    try:
                        traceback.print_exc()
                    except BaseException:
                        pass
                finally:
                    os._exit(code)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        os.close(task_r)
        os.close(res_w)
        os.set_blocking(task_w, False)
        self.workers[pid] = _Worker(pid, task_w, res_r, since)
        self.session.owned.add(pid)

    def _feed(self, w):
        """Hand W chunks until it holds AHEAD_CHUNKS of them; close its
        item pipe once no chunk is left (it then leaves)."""
        while (not w.closed and self.pending
               and len(w.sent) < AHEAD_CHUNKS * self.chunksize):
            chunk = self.pending.pop(0)
            msg = pickle.dumps([(i, self.items[i]) for i in chunk])
            w.out += _HEAD.pack(len(msg)) + msg
            w.sent.extend(chunk)
        self._flush(w)
        if not self.pending and not w.out and not w.closed:
            os.close(w.tasks)
            w.closed = True

    def _flush(self, w):
        while w.out and not w.closed:
            try:
                n = os.write(w.tasks, w.out)
            except BlockingIOError:
                return
            except BrokenPipeError:
                w.out = b""         # it died; its result pipe will say so
                return
            w.out = w.out[n:]

    def results(self):
        """(value, error) per item, in item order."""
        for index in range(len(self.items)):
            while index not in self.done:
                if self.stopped:
                    self.done[index] = (None, "the pool was stopped")
                    break
                self._step()
            yield self.done.pop(index)

    def _step(self):
        """Feed the workers, then wait for something to happen: a result,
        room in an item pipe, a worker's end."""
        for w in list(self.workers.values()):
            self._feed(w)
        poller = select.poll()
        for w in self.workers.values():
            poller.register(w.results, select.POLLIN)
            if w.out and not w.closed:
                poller.register(w.tasks, select.POLLOUT)
        if not self.workers:
            self._replace_lost()
            return
        by_fd = {w.results: w for w in self.workers.values()}
        for fd, ev in poller.poll(1000):
            w = by_fd.get(fd)
            if w is not None:
                self._read(w)

    def _read(self, w):
        try:
            data = os.read(w.results, 1 << 20)
        except OSError:
            data = b""
        if not data:
            self._lost(w)
            return
        w.inbuf += data
        while len(w.inbuf) >= _HEAD.size:
            (size,) = _HEAD.unpack_from(w.inbuf)
            if len(w.inbuf) < _HEAD.size + size:
                break
            msg = w.inbuf[_HEAD.size:_HEAD.size + size]
            w.inbuf = w.inbuf[_HEAD.size + size:]
            index, value, error = pickle.loads(msg)
            self.done[index] = (value, error)
            if index in w.sent:
                w.sent.remove(index)

    def _lost(self, w):
        """W's result pipe ended: it exited or died. Its current item
        (the first it did not answer) gets an error; the rest go back."""
        status = _reap(w.pid, STOP_WAIT)
        self._forget(w)
        how = _how(status)
        if w.sent:
            first, rest = w.sent[0], w.sent[1:]
            self.done[first] = (None, f"the pool process running this case "
                                      f"(pid {w.pid}) {how}")
            if rest:
                self.pending.insert(0, rest)
        if self.pending and not self.stopped:
            self._spawn()

    def _replace_lost(self):
        if self.pending and not self.stopped:
            self._spawn()

    def _forget(self, w):
        self.workers.pop(w.pid, None)
        self.session.owned.discard(w.pid)
        for fd in (w.results,) + (() if w.closed else (w.tasks,)):
            try:
                os.close(fd)
            except OSError:
                pass
        w.closed = True
        # what it started goes with it
        self.session.after_worker(w.pid, w.since)

    def stop(self, finished):
        if self.stopped:
            return
        self.stopped = True
        self.pending = []
        workers = list(self.workers.values())
        if finished:
            for w in workers:
                if not w.closed:
                    os.close(w.tasks)
                    w.closed = True
            wait = CLOSE_WAIT
        else:
            for w in workers:
                _signal(w.pid, signal.SIGTERM)
                _signal(w.pid, signal.SIGCONT)
            wait = STOP_WAIT
        deadline = time.monotonic() + wait
        for w in workers:
            _reap(w.pid, max(0.0, deadline - time.monotonic()))
            self._forget(w)

    # ---- a worker
    def _worker(self, task_r, res_w, mask):
        global _IN_JOB
        contain.die_with_parent(signal.SIGTERM, self.parent)
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, _terminated)
        # A handler, not SIG_IGN: programs must not inherit an ignored
        # SIGINT across exec.
        signal.signal(signal.SIGINT, _ignore)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        buf = b""
        while True:
            while True:
                if len(buf) >= _HEAD.size:
                    (size,) = _HEAD.unpack_from(buf)
                    if len(buf) >= _HEAD.size + size:
                        break
                data = os.read(task_r, 1 << 20)
                if not data:
                    if self.at_exit is not None:
                        self.at_exit()
                    # its confined runs' view directory (made in this
                    # process; the exit below runs no atexit handler)
                    confine.shutdown()
                    return 0
                buf += data
            chunk = pickle.loads(buf[_HEAD.size:_HEAD.size + size])
            buf = buf[_HEAD.size + size:]
            for index, item in chunk:
                _IN_JOB = True
                try:
                    value, error = self.job(item), None
                except Exception:
                    value, error = None, traceback.format_exc()
                except BaseException:
                    return 1        # stopped by the pool; cleaned up above
                finally:
                    _IN_JOB = False
                try:
                    msg = pickle.dumps((index, value, error))
                except Exception:
                    msg = pickle.dumps((index, None, traceback.format_exc()))
                _write_all(res_w, _HEAD.pack(len(msg)) + msg)


def _ignore(signum, frame):
    pass


def _terminated(signum, frame):
    """A worker's SIGTERM (or SIGHUP): nothing it started may run on.
    Inside a job, unwind it (its scratch goes, and a full disk is
    unmounted); elsewhere leave at once."""
    try:
        contain.kill_local()
    finally:
        if _IN_JOB:
            # what the unwinding leaves unclosed is not worth a warning
            warnings.simplefilter("ignore", ResourceWarning)
            raise SystemExit(128 + signum)
        os._exit(128 + signum)


def _write_all(fd, data):
    while data:
        try:
            n = os.write(fd, data)
        except BrokenPipeError:
            os._exit(1)             # the parent is gone
        data = data[n:]


def _signal(pid, sig):
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _reap(pid, wait):
    """The wait status of our child PID, waiting at most WAIT seconds,
    then SIGKILL (and SIGCONT, were it stopped) and the status after."""
    deadline = time.monotonic() + wait
    delay = 0.0005
    while True:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return None
        if done:
            return status
        if time.monotonic() >= deadline:
            break
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
    _signal(pid, signal.SIGKILL)
    _signal(pid, signal.SIGCONT)
    try:
        return os.waitpid(pid, 0)[1]
    except ChildProcessError:
        return None


def _how(status):
    """How a worker ended, from its wait status."""
    if status is None:
        return "ended"
    if os.WIFSIGNALED(status):
        try:
            name = signal.Signals(os.WTERMSIG(status)).name
        except ValueError:
            name = f"signal {os.WTERMSIG(status)}"
        return f"was killed by {name}"
    return f"exited with status {os.WEXITSTATUS(status)}"
