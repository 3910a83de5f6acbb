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
    Then, for a program that exited 0 (it claims success) after a hard
    fault (ENOSPC, EIO) fired on a data-path call (crash-model.md, "Where
    a run starts, and what is on the data path"): the program
    *noticed* it when its stderr names the error (noticed()) or it
    repeated the failed call until it succeeded (a retry: the program saw
    the error; whether the retry saved the data is for the crash states to
    say, which is where a retried fsync shows, the fsyncgate rule). A
    fault off the data path is judged by the outcome alone (7, 10, 12).
 6. unreported-error   a fault the program said nothing about, and the
                       visible target is not the new content: the data is
                       lost and the user was told it is safe (a retry
                       that left the target wrong recovered nothing: the
                       next chunk written where a failed one was to go
                       looks like a retry in the trace).
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
                       before it must satisfy the contract as in 9. A
                       fault nobody noticed that left such a state is
                       unreported-error instead of not-durable.
11. unreported-error   for the built-in corpus only (Outcome.require_message,
                       the teaching rule): a failed run whose stderr does
                       not name the error (stderr_names_failure). Any other
                       program that exits non-zero has reported its failure,
                       message or not. It comes after the data checks: lost
                       data is the graver finding when both apply.
12. ignored-error      a data-path fault nobody noticed, with every crash
                       state judged holding the new content: a breach of
                       error-checking discipline, no data lost this time.
                       The sweep judges these with the after-exit crash
                       states, and with none it could not say: it asks
                       again with them (and asks whether the new content
                       was durable before the faulted call, which takes
                       the call off the data path).
13. ok                 with a note ("recovered from fsync#1=EIO") when a
                       data-path fault was noticed and the data came
                       through all the same.

Every verdict but ok, skipped and harness-error carries a `cause` (the
defect behind it, what reports group cases by: the rule broken, the
call or change that decided it and the property it breaks, see Cause;
for a crash state, state_cause derives them from the state and the
calls, so that the advice never contradicts the state shown) and the
finding names the file the faulted call hit. judge() gives every
finding its severity (properties.severity): a warning for ignored-error
and for what an EINTR that cannot happen where the program ran caused.

The parts: the data it reads and gives (outcome.py), what a program's
stderr says (messages.py), a state against the contract (contracts.py),
the cause of a failing crash state (statecause.py), the rules more than
one step names (rules.py), and the words of findings and explanations
(explanations.py). This module holds the order: judge() and its steps.
"""

import signal as signal_mod
from dataclasses import replace

from . import properties
from .contracts import state_failure, visible_failure
from .explanations import (because, expected, failed, fault, lost_update_text,
                           on, program_said, sentence, torn_text,
                           unreported_text, when)
from .explorer import RULE_IN_PLACE
from .messages import (first_line, naming_line, noticed,
                       stderr_names_failure, strerror)
from .outcome import HARD, SKIP_STATUS, TRANSIENT, Cause, Verdict
from .rules import (RULE_KEEP_TARGET, RULE_NO_SYNC_RETRY,
                    RULE_WHOLE_BEFORE_RENAME, blames_a_skipped_sync,
                    check_rule, skipped_rule, sync_call)
from .statecause import advice_for, state_cause
# Not used here: the engine's judge and the reports import these from
# the oracle (Outcome and CheckResult have some forty users)
from .outcome import KINDS, VERDICTS, CheckResult, Outcome

__all__ = ["judge", "Outcome", "CheckResult", "Verdict", "Cause", "KINDS",
           "VERDICTS", "HARD", "TRANSIENT", "blames_a_skipped_sync"]


def _signame(sig):
    try:
        return signal_mod.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


def _crash_state_verdict(o, succeeded, quiet):
    """The verdict of the failing crash state that says most, or None
    when every state keeps the contract."""
    failing = []
    for st in o.crash_states:
        claimed = bool(st.claimed) and succeeded
        bad = state_failure(o, st.target, getattr(st, "check", None), claimed)
        if bad is not None:
            failing.append((st, claimed, bad))
    if not failing:
        return None
    # the failing state that lost the fewest changes says best what
    # mattered: of two that keep the old keys, the one that lost only the
    # log's data names it, the one that also lost two unlinks does not
    st, claimed, (verdict, found) = min(
        failing, key=lambda f: len(getattr(f[0], "lost", None) or ()))
    also = f" ({len(failing)} of {len(o.crash_states)} crash states fail)" \
        if len(failing) > 1 else ""
    finding = f"crash state '{st.label}': expected {expected(o, claimed)}, found {found}{also}"
    prop, rule, change, why = state_cause(o, st, verdict, claimed)
    advice = advice_for(rule, change)
    if verdict == "not-durable":
        explanation = (f"The program exited 0, so it claimed the new content was safe, "
                       f"but a power cut at this point ({st.label}) loses it"
                       f"{because(why)} {sentence(advice)}")
        if quiet and not o.known_at_risk:
            # the fault nobody noticed is what put the data at risk (a
            # retried sync: the retry, that wrote nothing)
            cause = Cause(rule=RULE_NO_SYNC_RETRY if o.fault_retried and
                          sync_call(o.call) else check_rule(o), call=o.call,
                          prop="error/unreported")
            retried = (f", it called {o.call.split('#')[0]} again"
                       if o.fault_retried else "")
            return Verdict(
                "unreported-error",
                f"exited 0 after {o.plan}: {failed(o)}{retried}, and {finding}",
                " ".join(unreported_text(
                    o, f"A power cut after it exited ({st.label}) loses the new "
                       f"content{because(why)}").split()),
                state=st.label, cause=cause)
    else:
        explanation = torn_text(o, verdict, st, advice, why)
    cause = Cause(rule=rule, change=change, prop=prop)
    if rule == skipped_rule((o.call or "#").split("#")[0]):
        # the defect is where the program took the failure for success
        cause = Cause(rule=rule, call=o.call, prop=prop)
    return Verdict(verdict, finding, " ".join(explanation.split()), state=st.label,
                   cause=cause)


def _hang(o):
    """A run past its time limit, by what it was doing when the limit
    struck (Outcome.limit_state, engine/timelimit.py): spinning on a
    failing call, blocked, still going past the trace limit, or still
    going (sleeping, or making calls) at the furthest the limit may be
    pushed. The words name the limit's
    floor (Outcome.timeout: the spec's timeout), never the seconds a run
    took, which differ from run to run."""
    limit = (f"its time limit ({o.timeout:g}s, or ten times its run without "
             "a fault when that is longer)" if o.timeout is not None
             else "its time limit")
    under = f" under {o.plan}" if o.plan else ""
    how, _, what = (o.limit_state or "").partition(": ")
    doing = f" ({o.limit_state})" if o.limit_state else ""
    at = f" (at least {o.timeout:g}s)" if o.timeout is not None else ""
    finding = (f"still running at its time limit{at}{under}{doing}; its "
               "process group was killed")
    if how in ("spinning", ""):
        text = (f"The program did not finish within {limit}{doing}. A loop "
                "that retries a persistent error never ends (a full disk "
                "stays full, EIO does not heal): retry only EINTR and short "
                "writes, and fail with a message on anything else.")
        rule = "retry only EINTR and short writes; fail on anything else"
    elif how == "past the trace limit":
        # engine/timelimit.py's CUT_STATE: killed at its limit, as its
        # calls since the cut were counted, not written down
        text = (f"The program was still at work ({what}) when {limit} ran "
                "out, past crashcheck's trace limit (--trace-limit): its "
                "calls since the cut were counted, not written down, so "
                "more time could have shown nothing, and it was given none. "
                "A loop that retries a persistent error never ends (a full "
                "disk stays full, EIO does not heal): give up on it in "
                "bounded time. A program that merely makes that many calls "
                "needs a larger --trace-limit.")
        rule = "give up on a persistent error in bounded time"
    elif how == "blocked":
        what = f" ({what})" if what else ""
        text = (f"The program was blocked{what}, making no call and using "
                f"no processor time, when it reached {limit}: it waits for "
                "something that will not come. A program must end, with an "
                "error when it cannot go on.")
        rule = "do not wait for ever: fail when the operation cannot complete"
    else:
        text = (f"The program was still at work{doing} when {limit} ran "
                "out, pushed back, up to six times, while it slept or made "
                "progress. A program that backs off after a persistent error "
                "must still give up in the end; one that is merely slow needs "
                "a longer --timeout.")
        rule = "give up on a persistent error in bounded time"
    return Verdict("hang", finding, text,
                   cause=Cause(rule, call=o.call or None, prop="error/stuck"))


def judge(o):
    """The verdict for one Outcome (see the module docstring for the
    order), with its severity (properties.severity): a warning for an
    ignored-error, and for a finding that an EINTR which cannot happen
    where the program ran caused (Outcome.eintr_possible), saying when it
    would matter."""
    v = _judge(o)
    if v.verdict in ("ok", "skipped"):
        return v
    crash_state = bool(v.state)
    impossible = (o.kind == "eintr" and not o.eintr_possible and o.fault_fired
                  and v.verdict not in ("harness-error", "crashed", "hang")
                  and not (crash_state and o.known_at_risk))
    sev = properties.severity(v.verdict, impossible)
    explanation = v.explanation
    if impossible:
        explanation += " " + properties.WHEN_EINTR
    return replace(v, severity=sev, explanation=explanation)


class _Run:
    """What the steps of _judge share about an outcome O: whether a fault
    was planned and fired, whether the run claimed success, and, for a
    hard fault on the data path of a run that claims success, whether
    the program noticed it (said so, or repeated the call until it
    worked)."""

    def __init__(self, o):
        self.planned = bool(o.plan) and o.kind not in ("baseline", "powerloss")
        self.fired = self.planned and o.fault_fired
        self.crashed_by_plan = o.signal is not None and o.harness_killed
        self.succeeded = not self.crashed_by_plan and o.status == 0
        self.on_path = (self.succeeded and self.fired and o.kind in HARD
                        and o.fault_on_data_path)
        self.quiet = self.on_path and not noticed(
            o.stderr, o.errno_name, o.call, strict=o.require_message)
        # a retry is noticing the error too, but one that left the visible
        # target wrong recovered nothing: a write that "retried" may well
        # have been the next chunk at the same offset. A retry the crash
        # states show lost data anyway (fsync again on pages a failed
        # fsync dropped) is judged as if said nothing: crash-model.md's
        # "Errors a program recovers from" names it unreported-error
        self.silent = self.quiet and not o.fault_retried


def _judge(o):
    """The first verdict the numbered checks of the module docstring
    give, in their order."""
    for step in (_not_run, _never_fired, _timed_out, _crashed):
        v = step(o)
        if v is not None:
            return v
    if o.signal is None and o.status is None:
        raise ValueError("outcome: neither an exit status nor a signal")
    r = _Run(o)
    for step in (_failed_unplanned, _claimed_wrongly, _gave_up,
                 _left_visible, _crash_states, _failure_unnamed, _ignored):
        v = step(o, r)
        if v is not None:
            return v
    return _ok(o, r)


def _not_run(o):
    """1. skipped: by the harness, or by the program (exit 77)."""
    planned = bool(o.plan) and o.kind not in ("baseline", "powerloss")
    if o.skip:
        return Verdict("skipped", o.skip,
                       f"This case cannot run here: {o.skip}. It counts as neither a "
                       "pass nor a failure; run it where that is supported.")
    if o.status == SKIP_STATUS and not (planned and o.fault_fired) \
            and not o.timed_out:
        lines = o.stderr.strip().splitlines()
        reason = lines[-1].strip() if lines else "the program exited 77 (not supported here)"
        return Verdict("skipped", reason,
                       f"The program says this case cannot run here: {reason}. It "
                       "counts as neither a pass nor a failure.")
    return None


def _never_fired(o):
    """2. the planned fault never fired."""
    planned = bool(o.plan) and o.kind not in ("baseline", "powerloss")
    if planned and not o.fault_fired:
        return Verdict(
            "harness-error", f"planned fault {o.plan} never fired",
            f"The plan {o.plan} never fired: under it the program made fewer matching "
            "calls than the recorded run showed, so this case tested nothing. That is "
            "an error of the harness (stale trace or a wrong case), never a pass.")
    return None


def _timed_out(o):
    """3. hang."""
    return _hang(o) if o.timed_out else None


def _crashed(o):
    """4. crashed: a signal the harness did not send."""
    if o.signal is None or o.harness_killed:
        return None
    name = _signame(o.signal)
    under = f" under {o.plan}" if o.plan else " with no fault planned"
    where = (f", most likely in the code that handles {fault(o)}" if o.plan
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
        f"{where}. {hint}",
        cause=Cause(f"do not die of {name}", call=o.call or None,
                    prop="error/died"))


def _failed_unplanned(o, r):
    """5. a run with nothing planned must succeed."""
    if r.planned or r.succeeded:
        return None
    line = first_line(o.stderr) or "no message"
    return Verdict(
        "harness-error", f"exited {o.status} with no fault planned: {line}",
        "The program failed without any injected fault, so no faulted case of "
        "it means anything. Fix the workload or the environment until the "
        "baseline run exits 0.")


def _claimed_wrongly(o, r):
    """6./7. success claimed, the new content not there."""
    if not r.succeeded:
        return None
    bad = visible_failure(o, claimed=True)
    if bad is None:
        return None
    if r.quiet:
        return Verdict(
            "unreported-error",
            f"exited 0 after {o.plan}: {failed(o)}, and the target is not the "
            f"new content: found {bad[1]}",
            " ".join(unreported_text(
                o, "The target does not hold what the program was asked to "
                   "write: the data is lost.").split()),
            cause=Cause(check_rule(o), call=o.call, prop="error/unreported"))
    under = f" after {o.plan}" if o.plan else ""
    rule = {"short": "loop until every byte is written",
            "eintr": "retry a call interrupted by EINTR"}.get(
        o.kind, f"exit non-zero when {o.call.split('#')[0]} fails"
        if r.fired and o.kind in HARD else "write the new content in full")
    call = o.call or None
    prop = "error/transient" if o.kind in TRANSIENT else "error/unreported"
    if o.kind == "crash":
        # a process of the run was killed and the run still claimed
        # success (a pipeline's last command): whichever call it died
        # at, one defect
        rule, call = "exit non-zero when a process of the run is killed", None
    return Verdict("lost-update",
                   f"exited 0{under} but expected {expected(o, True)}, "
                   f"found {bad[1]}", lost_update_text(o),
                   cause=Cause(rule, call=call, prop=prop))


def _gave_up(o, r):
    """8. gave up on a transient fault."""
    if r.succeeded or r.crashed_by_plan or not (r.fired and o.kind in TRANSIENT):
        return None
    line = first_line(o.stderr) or "no message"
    bad = visible_failure(o, claimed=False)
    also = f"; the target was left {bad[0]}: {bad[1]}" if bad else ""
    if o.kind == "short":
        what = (f"{o.call}{on(o)} wrote fewer bytes than asked (a short write), "
                "which any write may do and which is not an error, and the "
                "program gave up. Loop until every byte is written, advancing "
                "by what each call returned.")
        rule = "continue after a short write"
    else:
        what = (f"{o.call}{on(o)} was interrupted by a signal (EINTR) before "
                "writing anything, which is not an error, and the program gave "
                "up. Retry the call (or install signal handlers with SA_RESTART).")
        rule = "retry a call interrupted by EINTR"
    return Verdict("gave-up-on-transient",
                   f"exited {o.status} after {o.plan}: {line}{also}", what,
                   cause=Cause(rule, call=o.call, prop="error/transient"))


def _left_visible(o, r):
    """9. the visible state after a failure or a planned crash."""
    if r.succeeded:
        return None
    bad = visible_failure(o, claimed=False)
    if bad is None:
        return None
    verdict, found = bad
    how = "was killed at" if r.crashed_by_plan else f"exited {o.status} after"
    what = o.call if r.crashed_by_plan else o.plan
    rule = RULE_KEEP_TARGET if verdict == "missing" else RULE_IN_PLACE
    # whichever call failed, the defect is where the program started on
    # the target itself
    change = ("unlink" if verdict == "missing" else "overwrite", o.target_name)
    text = torn_text(o, verdict)
    # an update of several calls, seen half done
    prop = "atomicity/calls"
    if verdict == "torn" and o.target_renamed:
        # a temp file and a rename, but the file was not whole
        rule, change = RULE_WHOLE_BEFORE_RENAME, ("rename", o.target_name)
        text = (f"{when(o)} the target holds neither the old nor the new "
                "version: the program renamed a file over it before that "
                f"file held all of the new content. {sentence(rule)}")
        if not r.crashed_by_plan and o.kind in HARD:
            # it went on past its failed call to the rename
            prop = "error/ignored"
    elif verdict == "torn" and o.target_removed:
        # the old version moved aside, the new one never finished
        rule, change = RULE_KEEP_TARGET, ("unlink", o.target_name)
        text = (f"{when(o)} the target holds neither the old nor the new "
                "version: the program moved the old one away (or removed "
                "it) and left an incomplete file in its place. Keep the "
                "target where it is until a complete, fsynced temporary "
                "file is renamed over it.")
    return Verdict(verdict,
                   f"{how} {what}: expected {expected(o, False)}, found {found}",
                   text, cause=Cause(rule, change=change, prop=prop))


def _crash_states(o, r):
    """10. the power-loss crash states."""
    return _crash_state_verdict(o, r.succeeded, r.quiet)


def _failure_unnamed(o, r):
    """11. the built-in corpus: a failure that does not say what failed."""
    if r.succeeded or r.crashed_by_plan or not o.require_message:
        return None
    name = o.errno_name
    rule = "name the call and the error when failing"
    if not o.stderr.strip():
        return Verdict(
            "unreported-error",
            f"exited {o.status} after {o.plan} without saying why (stderr is empty)",
            f"The program failed after {fault(o)} but printed nothing, so its user "
            "cannot tell which call failed or why. Before exiting non-zero, print one "
            "line naming the call, its subject and strerror(errno).",
            cause=Cause(rule, call=o.call, prop="error/unreported"))
    if name and not stderr_names_failure(o.stderr, name):
        return Verdict(
            "unreported-error",
            f"exited {o.status} after {o.plan} but stderr does not name the error "
            f"(no '{strerror(name)}' in: {first_line(o.stderr)})",
            f"The program failed after {fault(o)} but its message does not say so, "
            f"so its user cannot tell what went wrong. Print the call, its subject "
            f"and strerror(errno), e.g. \"{o.call.split('#')[0]} 'target': "
            f"{strerror(name)}\".",
            cause=Cause(rule, call=o.call, prop="error/unreported"))
    return None


def _ignored(o, r):
    """12. ignored, and no data lost this time."""
    if not r.silent:
        return None
    n = len(o.crash_states)
    states = ("the target holds the new content" if not n else
              "the crash state after its exit holds the new content" if n == 1
              else f"all {n} crash states after its exit hold the new content")
    said = program_said(o)
    return Verdict(
        "ignored-error",
        f"exited 0 after {o.plan}: {failed(o)} and the program "
        f"{'said nothing' if not said else 'went on'}; {states}",
        f"{failed(o)} and the program went on "
        f"{'without a word' if not said else 'as if it had worked (it printed ' + repr(said) + ', which names no error)'}. "
        "This time no data was lost: the new content is in place and "
        "durable. " + properties.WHEN_IGNORED,
        cause=Cause(check_rule(o), call=o.call, prop="error/ignored"))


def _ok(o, r):
    """13. ok, with a note when a fault on the data path was recovered
    from."""
    if r.on_path:
        how = (f"retried {o.call.split('#')[0]}" if o.fault_retried
               and not noticed(o.stderr, o.errno_name, o.call, o.require_message)
               else f"said: {naming_line(o.stderr, o.errno_name, o.call)}")
        return Verdict("ok", note=f"recovered from {o.plan} ({how})")
    return Verdict("ok")
