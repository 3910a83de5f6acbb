"""The sweep's worker processes: a job (a function of one item) computed
for many items in forked processes, results in item order.

Forked, so a job sees everything the parent had (specs, the judge) and
only the items and the results cross the pipes. Stopping is the
delicate part: ^C reaches the workers too, but the parent decides what
happens then and stops the pool with SIGTERM, which inside a job must
unwind through runner.run (the program's process group is killed, its
scratch removed) and elsewhere must leave at once (the process may hold
one of the pool's locks, and exiting through Python could wait on it for
ever).
"""

import multiprocessing
import multiprocessing.util
import os
import signal
import traceback

_JOB = None
_IN_JOB = False     # this worker is inside a job


def chunk_size(items, jobs, most):
    """How many of ITEMS travel to a process, and back, in one message:
    at most MOST (one message per item costs the processes more than a
    short item does), but at least 8 chunks per process, so that the
    last ones balance."""
    return max(1, min(most, items // (jobs * 8)))


def start(job, items, jobs, chunksize=1, at_exit=None):
    """(pool, results): JOB(item) for each of ITEMS in JOBS processes;
    results yields (value, None), or (None, the traceback) where the job
    raised, in the order of ITEMS. The caller closes the pool once every
    result is in, or terminates it to stop early (stop() does either).
    AT_EXIT() runs in each process when it leaves after its last item
    (not when the pool is terminated)."""
    global _JOB
    _JOB = job
    pool = multiprocessing.get_context("fork").Pool(
        jobs, initializer=_init, initargs=(at_exit,))
    return pool, pool.imap(_run, items, chunksize=chunksize)


def stop(pool, finished):
    """Let idle workers exit (FINISHED), or kill the ones still working:
    their programs and scratch directories go with them."""
    if finished:
        pool.close()
    else:
        pool.terminate()
    pool.join()


def _init(at_exit):
    # A handler, not SIG_IGN: programs must not inherit an ignored SIGINT
    # across exec.
    signal.signal(signal.SIGINT, lambda signum, frame: None)
    signal.signal(signal.SIGTERM, _exit)
    if at_exit is not None:
        multiprocessing.util.Finalize(None, at_exit, exitpriority=0)


def _exit(signum, frame):
    if _IN_JOB:
        raise SystemExit(128 + signum)
    os._exit(128 + signum)


def _run(item):
    global _IN_JOB
    _IN_JOB = True
    try:
        return _JOB(item), None
    except Exception:
        return None, traceback.format_exc()
    except BaseException:
        os._exit(1)                 # stopped by the pool; cleaned up above
    finally:
        _IN_JOB = False
