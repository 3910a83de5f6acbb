"""A run's trace kept to a limit (--trace-limit), and what a case whose
trace the limit cut may be judged on.

The fault library writes a line per call. A program that loops on a
failing call (a full disk retried for ever) writes lines until its time
limit: one case of a zip audit wrote 88,000 lines, and a trace of 143 MB
was seen. With CRASHCHECK_TRACE_LIMIT the library writes lines up to the
limit, counts the rest, and says how many in one line of its own
(faults/trace.c, trace_drop; trace.Cut). The harness reads that line
(trace.Lazy.cut) and never judges a case on what it did not see:

- a run that the time limit ended (a hang, a spin) is already decided by
  that, whatever its later calls were: judged on what it saw, and its
  result says that the trace was cut (results.json's trace_cut);
- any other run (it exited, crashed, was killed by its planned crash)
  may have made past the cut the calls its verdict depends on (a retried
  fsync, the writes of its after-exit crash states, the crash record
  itself): harness-error, naming the cut, the limit and how to raise it;
- a baseline whose trace was cut: harness-error, and no case runs (its
  crash points and the calls cases aim at are past the cut).
"""


# The default of --trace-limit: bytes the lines of one run's trace may
# take. Far above what a program that does its work makes (the largest
# trace of the corpus's and the real programs' baselines and cases is a
# few MiB, docs/benchmarks.md), so that only a run that spins or loops
# meets it, and small enough that two jobs' scratch and a kept case stay
# within the 200 MB an audit may take.
LIMIT = 32 << 20

# Where a harness-error's reason starts (sweep's Judge picks CUT_WHY by it)
PREFIX = "crashcheck's trace limit"

CUT_WHY = (
    "crashcheck keeps a run's trace to a limit (--trace-limit, by default "
    "32 MiB): past it the fault library counts the program's calls instead "
    "of writing them down, so that a program that loops on a failing call "
    "cannot fill the disk. This run went past the limit and did not end at "
    "its time limit: the calls it made after the cut (a retry, the writes "
    "its crash states are built from, the crash itself) were not seen, and "
    "the case cannot be judged on them. This says nothing about the "
    "program and is never a pass: give a larger --trace-limit (or 0 for "
    "none) to judge it.")


def cut_of(out):
    """The trace.Cut of the run OUT (a sweep Outcome), or None."""
    return getattr(out.trace, "cut", None)


def reason(cut, what="the run"):
    """The one-line reason of a harness-error for CUT."""
    return (f"{PREFIX}: {what}'s trace was cut, {cut.text()} "
            "(--trace-limit)")


def trouble(out, baseline=False):
    """Why the run OUT cannot be judged because its trace was cut, or "":
    "" for a whole trace, and for a case's run the time limit ended (a
    hang is decided by that). A baseline's cut trace is always trouble."""
    cut = cut_of(out)
    if cut is None or (out.run.timed_out and not baseline):
        return ""
    return reason(cut, "the baseline" if baseline else "the run")


def note(res, out):
    """RES (a results.json entry) with what the limit cut of OUT's trace
    (trace_cut: the limit, the lines and bytes dropped)."""
    cut = cut_of(out) if out is not None else None
    if cut is not None:
        res["trace_cut"] = {"limit": cut.limit, "lines": cut.lines,
                            "bytes": cut.bytes}
