"""The oracle: one verdict per case, with a finding and an explanation.

judge(Outcome) -> Verdict implements the verdict table of
docs/crash-model.md plus `harness-error`. The finding is one line with
the values (what was expected, what was found); the explanation is one or
two sentences for a learner: what happened, why it loses data or hides an
error, what to do instead.

Priority. The first rule that matches decides; `ok` is only reached when
every rule has passed (the verdict is a failure until the case proves
otherwise):

 1. skipped            the harness skipped the case (Outcome.skip), or the
                       program exited 77 with no planned fault fired. A
                       program that answers an injected fault with 77 ("not
                       supported") is judged like any other failing exit.
 2. harness-error      a fault was planned but never fired: the case tested
                       nothing, which must never pass.
 3. hang               the run went past its time limit.
 4. crashed            killed by a signal the harness did not send.
 5. harness-error      a baseline or power-loss run (no fault planned) that
                       did not exit 0: nothing after it can be judged, and
                       the sweep's trace came from a failing run.
    Then, for a program that exited 0 (it claims success):
 6. unreported-error   a hard fault (ENOSPC, EIO) fired on a data-path call
                       and the program did not repeat that call until it
                       succeeded (a retry is judged by its results: the
                       crash states show a retried fsync as not-durable,
                       the fsyncgate rule).
 7. lost-update        the visible target is not the new content (check
                       contract: the checker, told CRASHCHECK_EXPECT=new,
                       rejects the visible state).
    For a program that exited non-zero (it reported failure):
 8. gave-up-on-transient  the planned fault was transient (EINTR, short).
    For a failed run or a planned crash (SIGKILL by the harness):
 9. torn / missing     atomic: the visible target is neither old nor new
                       (missing when it is absent); check contract: the
                       checker rejects the visible state. In-place: any
                       content is acceptable after a failure or a crash.
    For every run that got this far:
10. not-durable / torn / missing  the power-loss crash states, in the
                       order given (crash points are chronological): a
                       state after the program claimed success must hold
                       the new content (not-durable otherwise); a state
                       before it must satisfy the contract as in 9.
11. unreported-error   a failed run that did not say why: empty stderr, or
                       (Outcome.require_message, set by the sweep for the
                       built-in workloads) a message that does not name the
                       error (stderr_names_failure). crash-model.md has no
                       verdict of its own for this; the error is hidden from
                       the user just as when the program exits 0, so it is
                       the same verdict, with a finding that says which.
                       It comes after the data checks: lost data is the
                       graver finding when both apply.
12. ok

Crash states: judge() accepts any objects with the attributes `label` (str:
crash point and state, e.g. "after rename#1: durable only"), `target`
(bytes, or None when the target is absent in that state), `claimed` (bool:
the program had already exited 0 at that point), `why` (str: what
persisted and what did not) and `rule` (str: the rule broken and its fix);
for check contracts also `check` (a CheckResult: the checker's verdict on
that state, run with CRASHCHECK_EXPECT=new when claimed, else old-or-new).
"""

import errno as errno_mod
import os
import re
import signal as signal_mod
from dataclasses import dataclass, field

from . import payload

VERDICTS = ("ok", "unreported-error", "lost-update", "torn", "missing",
            "not-durable", "gave-up-on-transient", "crashed", "hang", "skipped",
            "harness-error")
# The verdicts a buggy variant can be caught by (spec `expect`).
FINDINGS = tuple(v for v in VERDICTS if v not in ("ok", "skipped", "harness-error"))
KINDS = ("baseline", "eintr", "short", "enospc", "eio", "crash", "powerloss")
HARD = ("enospc", "eio")
TRANSIENT = ("eintr", "short")
MODELS = ("posix", "ext4-ordered")
CONTRACTS = ("atomic", "in-place", "check")

SKIP_STATUS = 77
_KIND_ERRNO = {"enospc": "ENOSPC", "eio": "EIO", "eintr": "EINTR"}


@dataclass(frozen=True)
class CheckResult:
    """A checker command's answer for one state."""
    status: int                 # its exit status; 0 = the state is acceptable
    output: str = ""            # its stdout+stderr, for the finding
    expect: str = "old-or-new"  # CRASHCHECK_EXPECT it was run with: new | old-or-new

    @property
    def ok(self):
        return self.status == 0

    def summary(self):
        line = _first_line(self.output)
        return f"checker exited {self.status}" + (f": {line}" if line else "")


@dataclass
class Outcome:
    """Everything the oracle needs to know about one executed case."""
    contract: str                       # atomic | in-place | check
    old: bytes | None                   # the old content, None = absent
    new: bytes                          # the content the program was asked to write
    kind: str = "baseline"              # one of KINDS
    plan: str = ""                      # "fsync#1=EIO"; "" for baseline/powerloss
    fault_fired: bool = False           # the trace shows the planned fault firing
    fault_on_data_path: bool = False    # a fired hard fault hit a data-path call
    fault_retried: bool = False         # the failed call was later repeated
                                        # on the same file and succeeded (read
                                        # only for a run that exited 0, so the
                                        # sweep works it out only then)
    fault_errno: str | None = None      # errno name planned ("EIO"); default from kind/plan
    status: int | None = None           # exit status, None when killed by a signal
    signal: int | None = None           # terminating signal number
    timed_out: bool = False             # ran past `timeout`; process group killed
    harness_killed: bool = False        # the signal was the planned crash
    timeout: float | None = None        # the limit that applied, seconds
    skip: str | None = None             # reason the harness skipped the case
    stderr: str = ""                    # the program's stderr (capped by the runner)
    target: bytes | None = None         # visible target content after the run
    check: CheckResult | None = None    # checker on the visible state (check contract)
    crash_states: list = field(default_factory=list)  # see the module docstring
    require_message: bool = False       # a failure must name the error in stderr

    def __post_init__(self):
        if self.contract not in CONTRACTS:
            raise ValueError(f"outcome: contract {self.contract!r} is not one of "
                             f"{', '.join(CONTRACTS)}")
        if self.kind not in KINDS:
            raise ValueError(f"outcome: kind {self.kind!r} is not one of {', '.join(KINDS)}")

    @property
    def call(self):
        """The coordinate of the first planned rule: "fsync#1" (without '+')."""
        rule = re.sub(r"\([^)]*\)", "", self.plan.split(";")[0])
        return rule.split("=")[0].rstrip("+")

    @property
    def errno_name(self):
        if self.fault_errno:
            return self.fault_errno
        m = re.search(r"=(E[A-Z0-9]+)\b", self.plan)
        return m.group(1) if m else _KIND_ERRNO.get(self.kind)


@dataclass(frozen=True)
class Verdict:
    verdict: str
    finding: str = ""           # one line with the values
    explanation: str = ""       # for a learner: what, why it matters, what to do
    state: str = ""             # label of the crash state that decided, if one did

    @property
    def ok(self):
        return self.verdict == "ok"


def strerror(name):
    """glibc's text for an errno name ("EIO" -> "Input/output error")."""
    number = getattr(errno_mod, name, None) if name else None
    return os.strerror(number) if isinstance(number, int) else (name or "")


def stderr_names_failure(stderr, errno_name, call=None):
    """Whether a failure message says what failed.

    True when `stderr` holds strerror's text for `errno_name` (case
    insensitive; the symbolic name, e.g. "ENOSPC", is accepted too) and,
    when `call` is given ("fsync" or "fsync#1"), that call's name as a word.
    Built-in workloads print "fsync 'target.tmp': Input/output error".
    """
    text = stderr.lower()
    names = strerror(errno_name).lower() in text or \
        re.search(rf"\b{re.escape(errno_name.lower())}\b", text) is not None
    if not names:
        return False
    if call:
        base = call.split("#")[0]
        return re.search(rf"\b{re.escape(base.lower())}\b", text) is not None
    return True


def _first_line(text):
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()
    return ""


def _signame(sig):
    try:
        return signal_mod.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


def _fault(o):
    """'fsync#1=EIO' as words: "fsync#1 failing with EIO (Input/output error)"."""
    action = o.plan.split(";")[0].partition("=")[2]
    if o.kind == "short" or action.startswith("short"):
        return f"a short {o.call}"
    name = o.errno_name
    if name:
        return f"{o.call} failing with {name} ({strerror(name)})"
    return o.plan


def _sync_call(call):
    return call.split("#")[0] in ("fsync", "fdatasync", "msync", "sync_file_range",
                                  "syncfs", "sync")


# ------------------------------------------------------------ the checks

def _visible_failure(o, claimed):
    """Judge a content against the contract; None when acceptable, else
    (verdict, found) where found describes the content."""
    return _state_failure(o, o.target, o.check, claimed, visible=True)


def _state_failure(o, target, check, claimed, visible=False):
    if o.contract == "check":
        if check is None:
            raise ValueError("outcome: check contract without a checker result")
        want = "new" if claimed else "old-or-new"
        if check.expect != want:
            raise ValueError(f"outcome: checker ran with CRASHCHECK_EXPECT={check.expect}, "
                             f"the state needs {want}")
        if check.ok:
            return None
        if claimed:
            return ("lost-update" if visible else "not-durable"), check.summary()
        return ("missing" if target is None else "torn"), check.summary()
    state = payload.classify(target, o.old, o.new)
    if claimed:
        if state == "new":
            return None
        verdict = "lost-update" if visible else "not-durable"
    elif o.contract == "in-place" or state in ("old", "new"):
        return None
    else:
        verdict = "missing" if state == "missing" else "torn"
    # Described only on failure: a sweep judges thousands of good states.
    return verdict, payload.describe(target, o.old, o.new)


def _expected(o, claimed):
    if o.contract == "check":
        return "the checker to accept " + ("the new state" if claimed else "old or new")
    if claimed:
        return "the new content"
    return "the old content (absent) or the new" if o.old is None else "old or new content"


def _when(o):
    """What led to the state, as the start of a sentence."""
    if o.kind == "crash":
        return f"After a simulated crash at {o.call}"
    return f"After the program gave up on {_fault(o)}"


def _because(why):
    """": <why>." or "." for an explorer state without an account."""
    why = (why or "").strip().rstrip(".")
    return f": {why}." if why else "."


def _sentence(rule):
    """An explorer rule ("fsync the directory after the rename") as the
    closing sentence of an explanation: a full stop, and a capital unless
    it starts with a function's name, which keeps its case."""
    rule = (rule or "").strip()
    if not rule:
        return ""
    first = re.match(r"[A-Za-z_]\w*", rule)
    if first and first.group(0) not in _CALL_WORDS:
        rule = rule[0].upper() + rule[1:]
    return rule if rule.endswith(".") else rule + "."


# Words that name a call: they start a sentence in lower case.
_CALL_WORDS = frozenset((
    "write", "pwrite", "writev", "fwrite", "fflush", "fclose", "fsync",
    "fdatasync", "msync", "munmap", "mmap", "close", "open", "openat",
    "rename", "renameat", "unlink", "ftruncate", "fallocate",
    "posix_fallocate", "sync", "syncfs", "sync_file_range"))


def _torn_text(o, verdict, st=None):
    if st is not None:
        left = "absent" if verdict == "missing" else "neither old nor new"
        fix = _sentence(st.rule) or ("Write a temporary file, fsync it, rename it over the "
                          "target, then fsync the directory.")
        return (f"A power cut at this point ({st.label}) leaves the target "
                f"{left}{_because(st.why)} {fix}")
    if verdict == "missing":
        return (f"{_when(o)} the target is gone, so both the old and the new version "
                "are lost. Never remove or truncate the target first: write a temporary "
                "file in the same directory, fsync it, then rename() it over the target, "
                "which replaces it atomically.")
    return (f"{_when(o)} the target holds neither the old nor the new version: the "
            "program wrote over it in place (or renamed an incomplete file over it). "
            "Write the new content to a temporary file in the same directory, fsync "
            "it, rename it over the target, then fsync the directory.")


def _lost_update_text(o):
    hint = {
        "short": (f"{o.call} wrote fewer bytes than asked and the rest were never "
                  "written: loop until every byte is written, advancing by what each "
                  "call returned."),
        "eintr": (f"{o.call} was interrupted (EINTR) and the data was dropped instead "
                  "of written again: retry interrupted calls."),
    }.get(o.kind, "Check the write loop (every byte, at the right offset), the length "
                  "given to truncate or the temporary file, and what gets renamed.")
    return ("The program reported success but the file does not hold what it was "
            "asked to write, so the user's data is silently lost. " + hint)


def _unreported_text(o):
    name = o.errno_name
    text = (f"{o.call} failed with {name} ({strerror(name)}), yet the program exited 0, "
            "so whoever ran it believes the data is safe. Check the result of every write, "
            "fflush, fsync and close, and exit non-zero with a message naming the call and "
            "strerror(errno).")
    if _sync_call(o.call):
        call = o.call.split("#")[0]
        text += (f" Do not retry a failed {call}: Linux drops the dirty pages it "
                 "covered, so a retry succeeds without writing them.")
    return text


def _crash_state_verdict(o, succeeded):
    failing = []
    for st in o.crash_states:
        claimed = bool(st.claimed) and succeeded
        bad = _state_failure(o, st.target, getattr(st, "check", None), claimed)
        if bad is not None:
            failing.append((st, claimed, bad))
    if not failing:
        return None
    st, claimed, (verdict, found) = failing[0]
    also = f" ({len(failing)} of {len(o.crash_states)} crash states fail)" \
        if len(failing) > 1 else ""
    finding = f"crash state '{st.label}': expected {_expected(o, claimed)}, found {found}{also}"
    if verdict == "not-durable":
        if st.rule:
            rule = _sentence(st.rule)
        elif o.contract == "in-place":
            rule = "Call fsync (or fdatasync) on the file and check it before exiting 0."
        else:
            rule = ("Call fsync on the file before renaming it, and on the directory "
                    "after the rename, before exiting 0.")
        explanation = (f"The program exited 0, so it claimed the new content was safe, "
                       f"but a power cut at this point ({st.label}) loses it"
                       f"{_because(st.why)} {rule}")
    else:
        explanation = _torn_text(o, verdict, st)
    return Verdict(verdict, finding, " ".join(explanation.split()), state=st.label)


def judge(o):
    """The verdict for one Outcome (see the module docstring for the order)."""
    planned = bool(o.plan) and o.kind not in ("baseline", "powerloss")
    fired = planned and o.fault_fired

    # 1. skipped
    if o.skip:
        return Verdict("skipped", o.skip,
                       f"This case cannot run here: {o.skip}. It counts as neither a "
                       "pass nor a failure; run it where that is supported.")
    if o.status == SKIP_STATUS and not fired and not o.timed_out:
        lines = o.stderr.strip().splitlines()
        reason = lines[-1].strip() if lines else "the program exited 77 (not supported here)"
        return Verdict("skipped", reason,
                       f"The program says this case cannot run here: {reason}. It "
                       "counts as neither a pass nor a failure.")

    # 2. the planned fault never fired
    if planned and not o.fault_fired:
        return Verdict(
            "harness-error", f"planned fault {o.plan} never fired",
            f"The plan {o.plan} never fired: under it the program made fewer matching "
            "calls than the recorded run showed, so this case tested nothing. That is "
            "an error of the harness (stale trace or a wrong case), never a pass.")

    # 3. hang
    if o.timed_out:
        limit = f"{o.timeout:g}s" if o.timeout is not None else "its time limit"
        under = f" under {o.plan}" if o.plan else ""
        return Verdict(
            "hang", f"still running after {limit}{under}; its process group was killed",
            f"The program did not finish within {limit}. A loop that retries a "
            "persistent error never ends (a full disk stays full, EIO does not heal): "
            "retry only EINTR and short writes, and fail with a message on anything else.")

    # 4. crashed
    if o.signal is not None and not o.harness_killed:
        name = _signame(o.signal)
        under = f" under {o.plan}" if o.plan else " with no fault planned"
        where = (f", most likely in the code that handles {_fault(o)}" if o.plan
                 else " in the program itself")
        hint = ("Rerun the reproduce command under a debugger, or build with "
                "SANITIZE=address,undefined.")
        if o.signal == signal_mod.SIGBUS:
            # A store into a file mapping gets no error return (issue 6's
            # mmap-ftruncate variant, on a real full disk).
            hint = ("SIGBUS usually means a store into a file mapping found no "
                    "block behind it: past the end of the file, or a hole the "
                    "filesystem could not fill because the disk is full. Reserve "
                    "the blocks with posix_fallocate before mapping, so that a full "
                    "disk is an error the program can check and report.")
        return Verdict(
            "crashed", f"killed by {name} (signal {o.signal}){under}",
            f"The program died of {name}, a signal the harness did not send: a bug"
            f"{where}. {hint}")
    if o.signal is None and o.status is None:
        raise ValueError("outcome: neither an exit status nor a signal")

    crashed_by_plan = o.signal is not None and o.harness_killed
    succeeded = not crashed_by_plan and o.status == 0

    # 5. a run with nothing planned must succeed
    if not planned and not succeeded:
        line = _first_line(o.stderr) or "no message"
        return Verdict(
            "harness-error", f"exited {o.status} with no fault planned: {line}",
            "The program failed without any injected fault, so no faulted case of "
            "it means anything. Fix the workload or the environment until the "
            "baseline run exits 0.")

    if succeeded:
        # 6. a hard fault swallowed
        # A program that repeated the failed call until it succeeded did
        # not ignore the error: whether the retry really recovered the
        # data is for the crash states to say (a retried write that
        # rewrote the data did; a retried fsync did not, on Linux).
        if fired and o.kind in HARD and o.fault_on_data_path \
                and not o.fault_retried:
            return Verdict("unreported-error",
                           f"exited 0 after {o.plan}: {o.call} failed with "
                           f"{o.errno_name} ({strerror(o.errno_name)})",
                           _unreported_text(o))
        # 7. success claimed, new content not there
        bad = _visible_failure(o, claimed=True)
        if bad is not None:
            under = f" after {o.plan}" if o.plan else ""
            return Verdict("lost-update",
                           f"exited 0{under} but expected {_expected(o, True)}, "
                           f"found {bad[1]}", _lost_update_text(o))
    elif not crashed_by_plan:
        # 8. gave up on a transient fault
        if fired and o.kind in TRANSIENT:
            line = _first_line(o.stderr) or "no message"
            bad = _visible_failure(o, claimed=False)
            also = f"; the target was left {bad[0]}: {bad[1]}" if bad else ""
            if o.kind == "short":
                what = (f"{o.call} wrote fewer bytes than asked (a short write), which "
                        "any write may do and which is not an error, and the program "
                        "gave up. Loop until every byte is written, advancing by what "
                        "each call returned.")
            else:
                what = (f"{o.call} was interrupted by a signal (EINTR) before writing "
                        "anything, which is not an error, and the program gave up. "
                        "Retry the call (or install signal handlers with SA_RESTART).")
            return Verdict("gave-up-on-transient",
                           f"exited {o.status} after {o.plan}: {line}{also}", what)

    # 9. the visible state after a failure or a planned crash
    if not succeeded:
        bad = _visible_failure(o, claimed=False)
        if bad is not None:
            verdict, found = bad
            how = "was killed at" if crashed_by_plan else f"exited {o.status} after"
            what = o.call if crashed_by_plan else o.plan
            return Verdict(verdict,
                           f"{how} {what}: expected {_expected(o, False)}, found {found}",
                           _torn_text(o, verdict))

    # 10. the power-loss crash states
    v = _crash_state_verdict(o, succeeded)
    if v is not None:
        return v

    # 11. a failure that does not say what failed
    if not succeeded and not crashed_by_plan:
        if not o.stderr.strip():
            return Verdict(
                "unreported-error",
                f"exited {o.status} after {o.plan} without saying why (stderr is empty)",
                f"The program failed after {_fault(o)} but printed nothing, so its user "
                "cannot tell which call failed or why. Before exiting non-zero, print one "
                "line naming the call, its subject and strerror(errno).")
        name = o.errno_name
        if o.require_message and name and not stderr_names_failure(o.stderr, name):
            return Verdict(
                "unreported-error",
                f"exited {o.status} after {o.plan} but stderr does not name the error "
                f"(no '{strerror(name)}' in: {_first_line(o.stderr)})",
                f"The program failed after {_fault(o)} but its message does not say so, "
                f"so its user cannot tell what went wrong. Print the call, its subject "
                f"and strerror(errno), e.g. \"{o.call.split('#')[0]} 'target': "
                f"{strerror(name)}\".")

    return Verdict("ok")
