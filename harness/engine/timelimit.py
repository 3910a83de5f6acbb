"""A run's time limit, and what a run that reaches it is doing.

The limit follows the program: a fault case's is MULTIPLE times its
baseline's duration, never less than the spec's timeout (or --timeout),
the floor (Judge.case_limit). When it strikes, the harness looks at the
run before killing it (Limit.again):

- spinning: since the last look, the trace's calls are one call on one
  file failing the same way, over and over (a loop that retries a full
  disk): killed, a hang;
- sleeping: a process of the run is in nanosleep or clock_nanosleep, or
  in select or poll with no descriptor (a back-off: db5.3_load sleeps in
  select after ENOSPC): given another period;
- making progress: it is on a processor (or waits for the disk), or,
  since the last look, it made other calls or used the processor: given
  another period;
- blocked: none of these: no call, no processor time, no sleep (waiting
  for input that never comes, a lock): killed, a hang.

A run given more periods is killed at CAP_FACTOR times its limit, with
what it was doing then. Limit.state says it, in words that do not change
from run to run ("spinning: write on 'target.tmp' failing (No space left
on device) over and over", "blocked: in pause", "sleeping: in select",
"running"), for the oracle's hang (Outcome.limit_state); the hang names
the limit, never the seconds the run took.

A run whose trace the library cut (--trace-limit, tracecut.py) gets no
more periods: a look reads the trace's lines, and past the cut there are
none, so a run that spins on the processor was seen "running" at every
look and went on to the cap, six times its limit, making calls no one
would read (zip's loud case, docs/benchmarks.md). Nothing it does after
its limit can be judged either (ended on its own, a cut run is a
harness-error: tracecut.trouble), so at its limit it is killed, "past the
trace limit: running" (or what else it was doing); one that was given
more time and is cut during it is killed at once (Limit.cut_over, which
the runner asks every TRIM_EVERY seconds). A spin seen in the lines
before the cut, or a run blocked, is said as such. A run whose trace is
whole is looked at as above, however slow.
"""

import json
import os

from .trace import CUT_START

MULTIPLE = 10           # a case's limit: its baseline's duration times this
CAP_FACTOR = 6          # a run that sleeps or progresses is killed at this
                        # many times its limit
SPIN_MIN = 20           # failing calls since the last look that make a spin
_SLEEPS = {35, 230}     # x86-64 nanosleep, clock_nanosleep
# select and pselect6 with no descriptors, poll and ppoll with none: a
# timed sleep too (Berkeley DB's __os_yield sleeps in select): the
# system call's number and which argument holds the count of descriptors
_EMPTY_WAITS = {23: 1, 270: 1, 7: 2, 271: 2}
_SYSCALL_NAMES = {0: "read", 7: "poll", 23: "select", 34: "pause",
                  61: "wait4", 72: "fcntl (a lock)", 73: "flock",
                  202: "futex", 232: "epoll_wait", 270: "pselect6",
                  271: "ppoll", 247: "waitid"}
_TAIL = 64 * 1024       # bytes of new trace read at a look
_CUT_TAIL = 4096        # bytes at the trace's end a cut line is looked for in
CUT_STATE = "past the trace limit"  # a cut run's state: CUT_STATE: <doing>


class Limit:
    """The time limit of one run: SECONDS, then more periods while the run
    sleeps or makes progress, up to CAP seconds in all. TRACE: the run's
    trace file (None: the processes alone say)."""

    def __init__(self, seconds, trace=None, cap=None):
        self.seconds = float(seconds)
        self.cap = float(cap) if cap is not None else self.seconds * CAP_FACTOR
        self.trace = trace
        self.state = ""             # what the run was doing at the last look
        self.cut = False            # its trace was seen cut (it stays so)
        self._ticks = None
        self._offset = 0

    def __float__(self):
        return self.seconds

    def again(self, lead, elapsed):
        """At the limit (ELAPSED seconds into the run whose first process,
        leading its session, is LEAD): the seconds to let it run on, or
        None to kill it now. Sets state."""
        spin, calls = self._trace_news()
        doing, ticks = _processes(lead)
        if self._ticks is None:
            # the first look: the calls and the processor time since the
            # start say nothing of now; what the processes do does
            calls, used = 0, False
        else:
            used = ticks > self._ticks
        self._ticks = ticks
        if spin:
            self.state = f"spinning: {spin}"
            return None
        if doing.startswith("sleeping"):
            self.state = doing
        elif calls or used or doing == "running":
            self.state = "running"
        else:
            self.state = doing if doing.startswith("blocked") else \
                "blocked: no call and no processor time"
            return None
        if self.trace_cut():
            # its calls since the cut are counted, not written: more time
            # shows nothing, and nothing after the limit can be judged
            self.state = f"{CUT_STATE}: {self.state}"
            return None
        left = self.cap - elapsed
        if left <= 0:
            return None
        return min(self.seconds, left)

    def cut_over(self, elapsed):
        """Between looks, ELAPSED seconds into the run: whether it is past
        its limit (given more time at a look) and its trace was cut since,
        which ends it now. Sets state, with what the last look saw."""
        if elapsed < self.seconds or not self.trace_cut():
            return False
        self.state = f"{CUT_STATE}: {self.state or 'running'}"
        return True

    def trace_cut(self):
        """Whether the library cut the run's trace (--trace-limit): its
        cut line ends the lines (trace.CUT_START)."""
        if self.cut or not self.trace:
            return self.cut
        try:
            with open(self.trace, "rb") as fh:
                end = _data_end(fh)
                start = max(0, end - _CUT_TAIL)
                fh.seek(start)
                tail = fh.read(end - start)
        except OSError:
            return False
        self.cut = CUT_START in tail
        return self.cut

    def _trace_news(self):
        """(what a spin repeats, or "", the calls made) since the last
        look, from the trace's new lines."""
        if not self.trace:
            return "", 0
        try:
            with open(self.trace, "rb") as fh:
                end = _data_end(fh)
                start = max(self._offset, end - _TAIL)
                fh.seek(start)
                data = fh.read(end - start)
        except OSError:
            return "", 0
        data = data.split(b"\0", 1)[0]      # a line half copied
        cut = data.rfind(b"\n")
        if cut < 0:
            return "", 0
        self._offset = max(self._offset, start) + cut + 1
        calls, failing = 0, {}
        for line in data[:cut].split(b"\n"):
            if b'"ev":"call"' not in line:
                continue
            calls += 1
            if b'"ret":-' not in line:
                continue
            try:
                rec = json.loads(line[line.find(b"{"):])
            except ValueError:
                continue
            key = (rec.get("call"), rec.get("path"), rec.get("errno"))
            failing[key] = failing.get(key, 0) + 1
        if not failing or calls < SPIN_MIN:
            return "", calls
        (call, path, err), n = max(failing.items(), key=lambda kv: kv[1])
        if n < 0.9 * calls:
            return "", calls
        name = os.strerror(err) if isinstance(err, int) else "an error"
        where = f" on '{os.path.basename(path)}'" if path else ""
        return f"{call}{where} failing ({name}) over and over", calls


def _data_end(fh):
    """Where the lines of the trace open at FH end: the library grows the
    file ahead of its lines (fallocate, faults/trace.c) and leaves the
    rest zeros, which a bisection over 64-byte windows finds."""
    fh.seek(0, os.SEEK_END)
    lo, hi = 0, fh.tell()
    while hi - lo > 64:
        mid = (lo + hi) // 2
        fh.seek(mid)
        if fh.read(64).strip(b"\0"):
            lo = mid
        else:
            hi = mid
    fh.seek(lo)
    return lo + len(fh.read(hi - lo + 64).rstrip(b"\0"))


def _processes(lead):
    """(what the run's processes are doing, their processor time in clock
    ticks): "sleeping: ..." when one is in a timed sleep, "running" when
    one is on a processor, else "blocked: in <call>"."""
    ticks, states = 0, []
    for pid in _session(lead):
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                stat = fh.read()
            with open(f"/proc/{pid}/syscall", "rb") as fh:
                sysc = fh.read().split()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        try:
            ticks += int(fields[11]) + int(fields[12])
        except (IndexError, ValueError):
            pass
        state = fields[0] if fields else b"?"
        nr = int(sysc[0]) if sysc and sysc[0].lstrip(b"-").isdigit() else None
        if nr in _EMPTY_WAITS:
            try:
                if int(sysc[_EMPTY_WAITS[nr]], 16) == 0:
                    nr = -nr            # waits on nothing: a sleep
            except (IndexError, ValueError):
                pass
        states.append((pid, state, nr))
    for pid, state, nr in states:
        if nr in _SLEEPS or (nr is not None and -nr in _EMPTY_WAITS):
            how = "nanosleep" if nr in _SLEEPS else _SYSCALL_NAMES[-nr]
            return f"sleeping: in {how}", ticks
    if not states or any(state in (b"R", b"D") for _, state, _ in states):
        # on a processor or in the disk's hands, or ending (a zombie has
        # no system call to show)
        return "running", ticks
    waits = [_SYSCALL_NAMES.get(nr, f"system call {nr}") for _, _, nr in states
             if nr is not None and nr not in (61, 247)]
    if waits:
        return f"blocked: in {waits[0]}", ticks
    return "blocked", ticks


def _session(lead):
    """The pids of LEAD's session: the run and everything it started
    that stayed in it."""
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        try:
            if int(fields[3]) == lead or int(name) == lead:
                pids.append(int(name))
        except (IndexError, ValueError):
            continue
    return pids
