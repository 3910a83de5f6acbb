"""Runs that cannot be judged, and why: the harness-error verdicts of a
run that left processes running (outlived), of a fault that hit another
call than the one aimed at (aimed_astray), and the explanations of a
recorded run that escaped its scratch, failed alone, or ran out of
scratch."""

from .. import coords
from . import realfs
from ..judging import oracle


ESCAPE_WHY = (
    "Each case runs in a scratch directory of its own, so that what one run "
    "leaves cannot decide another's verdict. The recorded run left a "
    "symbolic link there to a file outside it: every case would write "
    "through it to that one file, the state a case is judged on would "
    "hold what other cases wrote, and crash states could not hold it at "
    "all. Nothing is judged, and this is never a pass: point the program "
    "at a file inside its directory (its target, {target}), or give the "
    "file outside as its content (--old).")


FAILED_ALONE_WHY = (
    "The program failed with no fault injected and wrote nothing in its "
    "work directory: what its stderr says above is most likely the reason "
    "(a wrong path or option on its command line, a file it needs that "
    "is not in its directory). Nothing of it can be tested until that run "
    "succeeds: this says nothing about the program and is never a pass.")


SCRATCH_WHY = (
    "crashcheck could not record this run within its scratch: the space "
    "it had left, or the limit it sets itself (--scratch-limit, by default "
    "a share of the free space), was too small for the program's files and "
    "the snapshots of them. The run was stopped and says nothing about the "
    "program: this is the harness's failure, never a pass. Give it more "
    "room (--scratch-limit SIZE, --scratch DIR on a larger file system).")


def outlived(run, faulted=()):
    """Whether RUN left processes running when it ended (runner.Run.outlived)
    that were not part of a planned crash (the library's SIGKILL of the
    program, whose children a real crash takes too) or of a hang."""
    if not run.outlived or run.timed_out:
        return False
    planned = run.signal == 9 and any(r.get("ev") == "crash" for r in faulted)
    return not planned


def outlived_verdict(run):
    """harness-error for a run that left processes running."""
    names = ", ".join(run.outlived[:5]) + (
        f" and {len(run.outlived) - 5} more" if len(run.outlived) > 5 else "")
    return oracle.Verdict(
        "harness-error",
        f"processes it started outlived it (killed then): {names}",
        "When the program ended, processes it had started were still "
        "running (a daemon that forked away and called setsid, a child "
        "nobody waited for). crashcheck killed them, but what they would "
        "have written later is missing from this case, and their writes "
        "could have landed in another case's files: the case cannot be "
        "judged. Make the program wait for its children before it exits "
        "(or run the part that writes in the foreground).")


def aimed_astray(case, faulted):
    """Why the fault of CASE hit another call than the one it was aimed
    at (the baseline's, Case.where: its offset and length), or "": a
    program that makes its calls on one file otherwise from run to run
    must not be judged on the wrong one. A real power-loss case's
    crash-after is such a fault."""
    if not case.where or not (case.plan or realfs.fs_of(case.model)):
        return ""
    # a thread's call: the first faulted call of that thread (a fault that
    # keeps firing may have hit another thread's call that ended first)
    thread = coords.thread_in(case.call)
    hit = next((r for r in faulted if r["ev"] == "call" and r.get("fault")
                and (thread is None or coords.thread_of(r) == thread)),
               None)
    if hit is None:
        return ""       # never fired: the oracle says so
    want = tuple(case.where)
    got = (hit.get("off"), hit.get("len"))
    if all(w is None or g is None or w == g for w, g in zip(want, got)):
        return ""
    return (f"nondeterministic: {case.call} hit a call at "
            f"{coords.describe(got + (False, 0))} where the recorded run "
            f"made it at {coords.describe(want + (False, 0))}")


ASTRAY_WHY = (
    "The fault was aimed at a call by the file it is on and its number "
    "among that file's calls, as the recorded run made them; in this run "
    "that call was made otherwise, so the fault hit another, and the "
    "outcome says nothing about the one planned. The program does not "
    "make its calls the same way from run to run (threads or processes "
    "that race, the clock, random numbers): this is never a pass.")

