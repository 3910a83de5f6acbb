"""Tests of harness/judging/oracle.py: every verdict from crafted outcomes, the
priority between them, and explanations that name the fault and the fix."""

import pathlib
import signal
import sys
from dataclasses import dataclass

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # noqa: E402
from harness.judging import oracle as O  # noqa: E402
from harness.judging import messages, rules  # noqa: E402
from harness.judging import outcome as outcome_mod  # noqa: E402
from harness.judging import payload as P  # noqa: E402

B = P.BLOCK
SIZE = 4 * B
OLD = P.make(SIZE + 4097, P.OLD)     # as the sweep builds them: old is longer
NEW = P.make(SIZE, P.NEW)
TORN = NEW[:2 * B] + bytes(B) + NEW[3 * B:]            # block 2 zeros
MIXED = NEW[:2 * B] + OLD[2 * B:]                      # new head, old tail


@dataclass
class State:
    """What the power-loss explorer hands the oracle (duck-typed)."""
    label: str
    target: bytes | None
    claimed: bool = False
    why: str = ""
    rule: str = ""


def outcome(**kw):
    base = dict(contract="atomic", old=OLD, new=NEW, kind="baseline", status=0,
                target=NEW, stderr="")
    base.update(kw)
    return O.Outcome(**base)


def eio(**kw):
    """fsync#1=EIO fired on the data path."""
    base = dict(kind="eio", plan="fsync#1=EIO", fault_fired=True, fault_on_data_path=True,
                status=1, target=OLD,
                stderr="replace: fsync 'target.tmp': Input/output error\n")
    base.update(kw)
    return outcome(**base)


def short(**kw):
    base = dict(kind="short", plan="write#2=short", fault_fired=True, status=0)
    base.update(kw)
    return outcome(**base)


def crash_state(target, claimed, label="after rename#1: durable only"):
    return State(label=label, target=target, claimed=claimed,
                 why="the rename persisted but the file's data did not",
                 rule="fsync the temporary file before renaming it.")


# (id, outcome, verdict, words the finding must hold, words the explanation must hold)
CASES = [
    ("ok-baseline", outcome(), "ok", [], []),
    ("ok-eio-reported", eio(), "ok", [], []),
    ("ok-enospc-absent-old-stays-absent",
     eio(kind="enospc", plan="write#1+=ENOSPC", old=None, target=None,
         stderr="replace: write 'target.tmp': No space left on device"), "ok", [], []),
    ("ok-in-place-anything-after-failure",
     eio(contract="in-place", target=TORN), "ok", [], []),
    ("ok-planned-crash-old",
     outcome(kind="crash", plan="rename#1=crash", fault_fired=True, status=None,
             signal=9, harness_killed=True, target=OLD), "ok", [], []),
    ("ok-short-write-handled", short(), "ok", [], []),
    ("ok-hard-fault-off-data-path",
     eio(status=0, target=NEW, fault_on_data_path=False), "ok", [], []),
    ("ok-durable-states",
     outcome(kind="powerloss", crash_states=[crash_state(OLD, False),
                                             crash_state(NEW, True, "after exit")]),
     "ok", [], []),

    ("skipped-by-harness", outcome(skip="O_DIRECT unsupported on tmpfs", status=None),
     "skipped", ["O_DIRECT unsupported on tmpfs"], ["cannot run here"]),
    ("skipped-exit-77",
     outcome(status=77, stderr="replace: open 'target': Invalid argument\n"
                               "replace: O_DIRECT unsupported on this filesystem\n"),
     "skipped", ["O_DIRECT unsupported on this filesystem"], ["cannot run here"]),

    ("harness-error-never-fired",
     eio(fault_fired=False, status=0, target=NEW), "harness-error",
     ["planned fault fsync#1=EIO never fired"], ["fsync#1=EIO", "never a pass"]),
    ("harness-error-baseline-fails",
     outcome(status=1, target=OLD, stderr="replace: open 'target': Permission denied\n"),
     "harness-error", ["exited 1 with no fault planned", "Permission denied"],
     ["without any injected fault", "baseline"]),

    ("hang", eio(kind="enospc", plan="write#1+=ENOSPC", timed_out=True, timeout=10,
                 status=None, signal=9),
     "hang", ["at its time limit (at least 10s) under write#1+=ENOSPC", "killed"],
     ["10s", "full disk stays full", "retry only EINTR"]),

    ("crashed", eio(status=None, signal=signal.SIGSEGV),
     "crashed", ["SIGSEGV (signal 11) under fsync#1=EIO"],
     ["SIGSEGV", "fsync#1 failing with EIO", "SANITIZE=address,undefined"]),
    ("crashed-no-fault", outcome(status=None, signal=signal.SIGABRT),
     "crashed", ["SIGABRT", "no fault planned"], ["in the program itself"]),

    ("unreported-error-fsync",
     eio(status=0, target=NEW, stderr="", fault_path="target.tmp",
         crash_states=[crash_state(OLD, True, "after exit, state 1")]),
     "unreported-error",
     ["exited 0 after fsync#1=EIO", "fsync#1 on 'target.tmp' failed with EIO "
      "(Input/output error)", "crash state 'after exit, state 1'", "found the old content"],
     ["fsync#1 on 'target.tmp' failed with EIO (Input/output error)", "exited 0",
      "exit non-zero", "not on the disk and never will be", "power cut"]),
    ("ignored-error-close",
     eio(plan="close#2=EIO", status=0, target=NEW, stderr="", fault_path="target.tmp",
         crash_states=[crash_state(NEW, True, "after exit, state 1")]),
     "ignored-error",
     ["exited 0 after close#2=EIO", "close#2 on 'target.tmp' failed with EIO",
      "said nothing", "the crash state after its exit holds the new content"],
     ["went on without a word", "no data was lost"]),
    ("unreported-error-enospc-write",
     eio(kind="enospc", plan="write#3+=ENOSPC", status=0, target=TORN), "unreported-error",
     ["write#3 failed with ENOSPC (No space left on device)"],
     ["write#3 failed with ENOSPC", "Check the result of every write"]),
    ("unreported-error-silent-failure", eio(stderr="", require_message=True),
     "unreported-error",
     ["exited 1 after fsync#1=EIO without saying why (stderr is empty)"],
     ["printed nothing", "strerror(errno)"]),
    ("unreported-error-message-misses-errno",
     eio(kind="enospc", plan="write#1+=ENOSPC", stderr="replace: write failed\n",
         require_message=True),
     "unreported-error", ["does not name the error", "No space left on device",
                          "replace: write failed"],
     ["write#1 failing with ENOSPC", "strerror(errno)"]),

    ("lost-update-short-write",
     short(target=NEW[:B + B // 2] + NEW[2 * B:]),
     "lost-update",
     ["exited 0 after write#2=short but expected the new content, found "
      "block 0 new, block 1 new for 2048 bytes, then new 2048 bytes early, "
      "blocks 2-3 new 2048 bytes early; 2048 bytes shorter than new"],
     ["reported success", "write#2 wrote fewer bytes", "loop until every byte"]),
    ("lost-update-old-kept", outcome(target=OLD), "lost-update",
     ["exited 0 but expected the new content, found the old content"],
     ["reported success", "silently lost"]),
    ("lost-update-eintr-dropped",
     outcome(kind="eintr", plan="write#1=EINTR", fault_fired=True, target=NEW[B:]),
     "lost-update", ["after write#1=EINTR"], ["EINTR", "retry"]),

    ("gave-up-on-eintr",
     outcome(kind="eintr", plan="write#1=EINTR", fault_fired=True, status=1, target=OLD,
             stderr="replace: write 'target.tmp': Interrupted system call\n"),
     "gave-up-on-transient",
     ["exited 1 after write#1=EINTR: replace: write 'target.tmp': Interrupted system call"],
     ["write#1", "EINTR", "not an error", "Retry the call"]),
    ("gave-up-on-short",
     short(status=1, target=TORN, stderr="replace: short write to 'target'\n"),
     "gave-up-on-transient",
     ["exited 1 after write#2=short", "left torn: blocks 0-1 new, block 2 zeros"],
     ["short write", "Loop until every byte is written"]),

    ("torn-after-eio", eio(target=TORN), "torn",
     ["exited 1 after fsync#1=EIO: expected old or new content, found blocks 0-1 new, "
      "block 2 zeros, block 3 new"],
     ["fsync#1 failing with EIO", "neither the old nor the new",
      "temporary file", "rename", "fsync the directory"]),
    ("torn-after-planned-crash",
     outcome(kind="crash", plan="write#2=crash-after", fault_fired=True, status=None,
             signal=9, harness_killed=True, target=MIXED),
     "torn", ["was killed at write#2: expected old or new content, found blocks 0-1 new, "
              "blocks 2-5 old; 4097 bytes longer than new"],
     ["simulated crash at write#2", "temporary file"]),
    ("torn-empty-target", eio(target=b""), "torn", ["found empty"], ["rename"]),
    ("missing-after-eio", eio(target=None), "missing",
     ["expected old or new content, found absent"],
     ["target is gone", "fsync#1 failing with EIO", "rename() it over the target"]),

    ("not-durable",
     outcome(kind="powerloss", crash_states=[
         crash_state(OLD, False, "after write#1: visible"),
         crash_state(b"", True, "after exit: durable only"),
         crash_state(NEW, True, "after exit: visible")]),
     "not-durable",
     ["crash state 'after exit: durable only': expected the new content, found empty"],
     ["exited 0", "power cut", "the rename persisted but the file's data did not",
      "fsync the temporary file before renaming it"]),
    ("torn-crash-state-before-claim",
     outcome(kind="powerloss", crash_states=[
         crash_state(TORN, False, "after write#3: first 2 blocks"),
         crash_state(None, False, "after unlink#1: durable only")]),
     "torn",
     ["crash state 'after write#3: first 2 blocks': expected old or new content, "
      "found blocks 0-1 new, block 2 zeros, block 3 new", "(2 of 2 crash states fail)"],
     ["power cut", "neither old nor new", "fsync the temporary file"]),
    ("missing-crash-state",
     outcome(kind="powerloss", crash_states=[
         crash_state(None, False, "after unlink#1: durable only")]),
     "missing", ["'after unlink#1: durable only'", "found absent"],
     ["leaves the target absent", "fsync the temporary file"]),
]


@pytest.mark.parametrize("o, verdict, finding, explanation", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_verdict(o, verdict, finding, explanation):
    v = O.judge(o)
    assert v.verdict == verdict, v
    for words in finding:
        assert words in v.finding, (words, v.finding)
    for words in explanation:
        assert words in v.explanation, (words, v.explanation)
    assert "\n" not in v.finding and "\n" not in v.explanation
    if verdict == "ok":
        assert v.ok and v.finding == "" and v.explanation == ""
    else:
        assert not v.ok and v.finding and v.explanation


def test_every_verdict_is_reachable():
    assert {c[2] for c in CASES} == set(O.VERDICTS)


def test_findings_are_the_verdicts_that_catch_something():
    assert set(outcome_mod.FINDINGS) == set(O.VERDICTS) - {"ok", "skipped", "harness-error"}


# --------------------------------------------------------------- priority

def test_skip_beats_everything():
    assert O.judge(eio(skip="needs root", timed_out=True)).verdict == "skipped"


def test_exit_77_after_a_fired_fault_is_judged_not_skipped():
    o = outcome(kind="eintr", plan="write#1=EINTR", fault_fired=True, status=77,
                target=OLD, stderr="replace: O_DIRECT unsupported\n")
    assert O.judge(o).verdict == "gave-up-on-transient"


def test_unfired_fault_beats_hang_and_crash():
    assert O.judge(eio(fault_fired=False, timed_out=True, status=None,
                       signal=9)).verdict == "harness-error"
    assert O.judge(eio(fault_fired=False, status=None, signal=11)).verdict == \
        "harness-error"


def test_hang_beats_crashed():
    assert O.judge(eio(timed_out=True, status=None, signal=9)).verdict == "hang"


def test_planned_crash_is_not_crashed():
    o = outcome(kind="crash", plan="fsync#1=crash", fault_fired=True, status=None,
                signal=9, harness_killed=True, target=OLD)
    assert O.judge(o).verdict == "ok"
    o.harness_killed = False
    assert O.judge(o).verdict == "crashed"


def test_unreported_error_beats_lost_update():
    # silent: the fault hid the loss
    v = O.judge(eio(status=0, target=OLD, stderr=""))
    assert v.verdict == "unreported-error"
    assert "the target is not the new content: found the old content" in v.finding
    # said something, and claimed success all the same
    assert O.judge(eio(status=0, target=OLD)).verdict == "lost-update"


def test_lost_update_beats_not_durable():
    o = outcome(target=OLD, crash_states=[crash_state(OLD, True)])
    assert O.judge(o).verdict == "lost-update"


def test_torn_beats_silent_failure():
    assert O.judge(eio(stderr="", target=TORN)).verdict == "torn"


def test_crash_states_come_before_silent_failure():
    o = eio(stderr="", crash_states=[crash_state(TORN, False)])
    assert O.judge(o).verdict == "torn"


def test_claims_only_count_after_success():
    # The explorer may mark after-exit states as claimed; a program that
    # exited 1 claimed nothing, so old content there is fine.
    o = eio(crash_states=[crash_state(OLD, True, "after exit: durable only")])
    assert O.judge(o).verdict == "ok"


def test_in_place_crash_states():
    states = [crash_state(TORN, False), crash_state(TORN, True, "after exit")]
    v = O.judge(outcome(contract="in-place", kind="powerloss", crash_states=states))
    assert (v.verdict, v.state) == ("not-durable", "after exit")
    v = O.judge(outcome(contract="in-place", kind="powerloss", crash_states=states[:1]))
    assert v.verdict == "ok"


def test_not_durable_without_rule_text_still_says_what_to_do():
    o = outcome(kind="powerloss", crash_states=[
        State("after exit: durable only", OLD, True, "the rename was not synced", "")])
    v = O.judge(o)
    assert v.verdict == "not-durable"
    assert "Call fsync on the file before renaming it, and on the directory" in v.explanation


def test_state_without_an_account_still_reads_well():
    o = outcome(contract="in-place", kind="powerloss", crash_states=[
        State("after exit: durable only", OLD, True, "", "")])
    v = O.judge(o)
    assert v.verdict == "not-durable"
    assert "loses it. Call fsync (or fdatasync) on the file" in v.explanation
    o = outcome(kind="powerloss", crash_states=[State("after write#1", TORN, False, "", "")])
    v = O.judge(o)
    assert v.verdict == "torn"
    assert "leaves the target neither old nor new. Write a temporary file" in v.explanation


def test_require_message_accepts_a_proper_message():
    assert O.judge(eio(require_message=True)).verdict == "ok"


# -------------------------------------------------------- checker contract

def checked(check, **kw):
    return outcome(contract="check", check=check, **kw)


def test_checker_contract():
    good_new = O.CheckResult(0, "", "new")
    bad_new = O.CheckResult(1, "row count 0, expected 1\n", "new")
    good_any = O.CheckResult(0, "", "old-or-new")
    bad_any = O.CheckResult(3, "database disk image is malformed\n", "old-or-new")
    assert O.judge(checked(good_new)).verdict == "ok"
    v = O.judge(checked(bad_new))
    assert v.verdict == "lost-update"
    assert "checker exited 1: row count 0, expected 1" in v.finding
    assert "the checker to accept the new state" in v.finding
    assert O.judge(checked(good_any, kind="eio", plan="fsync#1=EIO", fault_fired=True,
                           status=1, stderr="db: fsync: Input/output error")).verdict == "ok"
    v = O.judge(checked(bad_any, kind="eio", plan="fsync#1=EIO", fault_fired=True,
                        status=1, stderr="db: fsync: Input/output error"))
    assert v.verdict == "torn" and "database disk image is malformed" in v.finding


def test_checker_crash_states():
    @dataclass
    class CState(State):
        check: O.CheckResult | None = None

    states = [CState("after write#1", None, False, "w", "r", O.CheckResult(0, "", "old-or-new")),
              CState("after exit", None, True, "w", "r", O.CheckResult(1, "empty", "new"))]
    v = O.judge(checked(O.CheckResult(0, "", "new"), kind="powerloss", crash_states=states))
    assert v.verdict == "not-durable" and "checker exited 1: empty" in v.finding


def test_checker_contract_needs_consistent_results():
    with pytest.raises(ValueError, match="without a checker"):
        O.judge(checked(None))
    with pytest.raises(ValueError, match="CRASHCHECK_EXPECT=old-or-new"):
        O.judge(checked(O.CheckResult(0, "", "old-or-new")))


# ------------------------------------------------------------------ misc

def test_outcome_rejects_unknown_contract_and_kind():
    with pytest.raises(ValueError, match="contract"):
        outcome(contract="atomik")
    with pytest.raises(ValueError, match="kind"):
        outcome(kind="EIO")


def test_outcome_needs_status_or_signal():
    with pytest.raises(ValueError, match="exit status"):
        O.judge(outcome(status=None))


@pytest.mark.parametrize("plan, call, errno_name", [
    ("fsync#1=EIO", "fsync#1", "EIO"),
    ("write#2+=ENOSPC", "write#2", "ENOSPC"),
    ("write(*.tmp)#3=EINTR", "write#3", "EINTR"),
    ("rename#1=crash", "rename#1", None),
    ("write#1=short:10;fsync#1=EIO", "write#1", "EIO"),
])
def test_plan_coordinates(plan, call, errno_name):
    o = outcome(kind="crash", plan=plan)
    assert o.call == call
    assert o.errno_name == errno_name


def test_strerror():
    assert messages.strerror("EIO") == "Input/output error"
    assert messages.strerror("ENOSPC") == "No space left on device"
    assert messages.strerror("EBOGUS") == "EBOGUS"


@pytest.mark.parametrize("stderr, name, call, named", [
    ("replace: fsync 'target.tmp': Input/output error", "EIO", None, True),
    ("replace: fsync 'target.tmp': Input/output error", "EIO", "fsync#1", True),
    ("replace: fsync 'target.tmp': Input/output error", "EIO", "rename", False),
    ("replace: write 'target.tmp': input/output error", "EIO", "write", True),
    ("replace: write failed (ENOSPC)", "ENOSPC", "write#2", True),
    ("replace: write failed", "ENOSPC", None, False),
    ("replace: write 'x': Input/output error", "ENOSPC", None, False),
    ("", "EIO", None, False),
    ("replace: fsyncing failed: Input/output error", "EIO", "fsync", False),
])
def test_stderr_names_failure(stderr, name, call, named):
    assert messages.stderr_names_failure(stderr, name, call) is named


# ------------------------------------------- errors a program recovers from

def recovered(**kw):
    """fsync#1=EIO on the data path of a run that went on to exit 0."""
    base = dict(status=0, target=NEW, fault_path="target.tmp",
                stderr="writer: fsync 'target.tmp': Input/output error; "
                       "writing it again\n",
                crash_states=[crash_state(NEW, True, "after exit, state 1"),
                              crash_state(NEW, True, "after exit, state 2")])
    base.update(kw)
    return eio(**base)


def test_surfaced_and_recovered_is_ok_with_a_note():
    v = O.judge(recovered())
    assert v.verdict == "ok" and v.finding == "" and v.cause is None
    assert v.note == ("recovered from fsync#1=EIO (said: writer: fsync 'target.tmp': "
                      "Input/output error; writing it again)")


def test_surfaced_but_not_durable_is_not_durable():
    v = O.judge(recovered(crash_states=[crash_state(OLD, True, "after exit, state 1")]))
    assert v.verdict == "not-durable"
    assert v.cause.rule == "fsync the temporary file before renaming it"


def test_silent_and_safe_is_ignored_error_ranked_below_data_loss():
    v = O.judge(recovered(stderr=""))
    assert v.verdict == "ignored-error"
    assert v.cause == O.Cause("check what fsync returns", call="fsync#1",
                              prop="error/ignored")
    assert v.severity == "warning"
    assert O.VERDICTS.index("ignored-error") > max(
        O.VERDICTS.index(x) for x in outcome_mod.LOSES_DATA)
    assert O.VERDICTS.index("ignored-error") > O.VERDICTS.index("gave-up-on-transient")
    assert "ignored-error" in outcome_mod.FINDINGS


def test_silent_and_at_risk_is_unreported_error():
    v = O.judge(recovered(stderr="", crash_states=[
        crash_state(NEW, True, "after exit, state 1"),
        crash_state(b"", True, "after exit, state 2")]))
    assert v.verdict == "unreported-error"
    assert "crash state 'after exit, state 2'" in v.finding
    assert v.state == "after exit, state 2"


def test_a_retried_fsync_is_judged_by_its_crash_states():
    # fsync-retry: it repeated the call until it succeeded and said
    # nothing; the crash states show the data that fsync dropped is gone
    v = O.judge(recovered(stderr="", fault_retried=True, crash_states=[
        crash_state(OLD, True, "after exit, state 1")]))
    assert v.verdict == "unreported-error"
    assert "failed with EIO (Input/output error), it called fsync again, and " \
        "crash state 'after exit, state 1'" in v.finding
    assert "Do not retry a failed fsync" in v.explanation
    assert v.cause == O.Cause(rules.RULE_NO_SYNC_RETRY, call="fsync#1",
                              prop="error/unreported")
    # the same retry with a message naming the error: said, still lost
    v = O.judge(recovered(fault_retried=True, crash_states=[
        crash_state(OLD, True, "after exit, state 1")]))
    assert v.verdict == "not-durable"
    v = O.judge(recovered(stderr="", fault_retried=True, plan="write#2=EIO"))
    assert v.verdict == "ok" and v.note == "recovered from write#2=EIO (retried write)"


def test_a_retry_that_left_the_target_wrong_recovered_nothing():
    # the next chunk written at the offset of the one that failed looks
    # like a retry in the trace (same call, file and range)
    v = O.judge(recovered(stderr="", fault_retried=True, plan="write#2=EIO",
                          target=NEW[:B]))
    assert v.verdict == "unreported-error"
    assert "write#2 on 'target.tmp' failed with EIO" in v.finding
    assert "the target is not the new content" in v.finding


def test_a_fault_off_the_data_path_is_judged_by_the_outcome_alone():
    off = dict(stderr="", fault_on_data_path=False, plan="close#1=EIO")
    v = O.judge(recovered(**off))
    assert (v.verdict, v.note) == ("ok", "")
    v = O.judge(recovered(crash_states=[crash_state(OLD, True, "after exit, state 1")],
                          **off))
    assert v.verdict == "not-durable"
    v = O.judge(recovered(target=OLD, **off))
    assert v.verdict == "lost-update"


def test_exit_non_zero_is_a_report_for_an_audited_program():
    # vim -es exits 1 with an empty stderr
    assert O.judge(eio(stderr="")).verdict == "ok"
    assert O.judge(eio(stderr="", require_message=True)).verdict == "unreported-error"
    # the teaching rule asks the built-in corpus for the call too
    v = O.judge(eio(stderr="replace: write 'x': Input/output error", require_message=True))
    assert v.verdict == "ok"        # names the error: the existing rule


@pytest.mark.parametrize("stderr, errno_name, call, strict, seen", [
    ("E667: Fsync failed", "EIO", "fsync#1", False, True),
    ("E667: Fsync failed", "EIO", "fsync#1", True, False),
    ("close failed in file object destructor", "EIO", "close#3", False, True),
    ("close failed in file object destructor", "EIO", "fclose#1", False, True),
    ("cannot write swap file", "EIO", "write#8", False, True),
    ("warning: fsync is slow here", "EIO", "fsync#1", False, False),
    ("done", "EIO", "fsync#1", False, False),
    ("save: Input/output error", "EIO", "close#2", False, True),
    ("", "EIO", "fsync#1", False, False),
])
def test_noticed(stderr, errno_name, call, strict, seen):
    assert messages.noticed(stderr, errno_name, call, strict) is seen


# ------------------------------------------------- advice that fits the program

@dataclass
class Change:
    kind: str
    name: str
    detail: str = ""


@dataclass
class FullState(State):
    persisted: list = None
    lost: list = None


def test_advice_names_the_calls_the_program_made():
    # a file created under its own name and never renamed
    st = FullState("after exit, state 1", b"", True, "'target' data was never fsynced",
                   "fsync the file before renaming it over the target",
                   [], [Change("data", "target", "never fsynced")])
    v = O.judge(outcome(kind="powerloss", old=None, crash_states=[st],
                        calls=frozenset(("openat", "write", "close"))))
    assert v.verdict == "not-durable"
    assert "renam" not in v.explanation
    assert "fsync the file after writing it" in v.explanation
    assert v.cause.change == ("data", "target")
    # the same state of a program that renamed keeps the explorer's rule
    v = O.judge(outcome(kind="powerloss", old=None, crash_states=[st],
                        calls=frozenset(("openat", "write", "rename"))))
    assert "fsync the file before renaming it over the target" in v.explanation


def test_a_journal_unlinked_without_a_directory_fsync():
    # SQLite's rollback journal: the checker refuses the state; the
    # explorer has no rule about the target, the lost unlink is the cause
    st = FullState("after exit, state 3", NEW, True,
                   "the unlink of 'kv.db-journal' did not persist", "",
                   [], [Change("unlink", "kv.db-journal")])

    @dataclass
    class CState(FullState):
        check: O.CheckResult | None = None
    st = CState(**st.__dict__, check=O.CheckResult(1, "balance 100", "new"))
    v = O.judge(outcome(contract="check", kind="powerloss", check=O.CheckResult(0, "", "new"),
                        crash_states=[st], target_name="kv.db",
                        calls=frozenset(("open", "pwrite", "fdatasync", "unlink"))))
    assert v.verdict == "not-durable"
    assert "renam" not in v.explanation
    assert "fsync the directory after removing 'kv.db-journal'" in v.explanation
    assert v.cause == O.Cause("fsync the directory after removing a file",
                              change=("unlink", "kv.db-journal"), prop="durability")


def test_the_lost_change_the_checker_names_is_the_cause():
    # RocksDB: a power cut after CURRENT was renamed to name a new
    # manifest loses six entries; the checker names the one that mattered
    lost = [Change("rename", "LOG.old.1796419071725799", "LOG"),
            Change("create", "LOG"), Change("create", "000009.log"),
            Change("create", "MANIFEST-000010")]

    @dataclass
    class CState(FullState):
        check: O.CheckResult | None = None
    said = ("ldb scan failed: Failed: IO error: No such file or directory: While "
            "opening a file for sequentially reading: ./MANIFEST-000010: No such "
            "file or directory\n")
    st = CState("after rename(000010.dbtmp)#1, state 9", None, False,
                "the creation of 'MANIFEST-000010' did not persist", "", [], lost,
                check=O.CheckResult(1, said, "old-or-new"))
    v = O.judge(outcome(contract="tree", kind="powerloss",
                        check=O.CheckResult(0, "", "new"), crash_states=[st],
                        target_name=None,
                        calls=frozenset(("open", "write", "rename", "unlink"))))
    assert v.verdict == "torn"
    assert v.cause == O.Cause("fsync the directory after creating a file",
                              change=("create", "MANIFEST-000010"),
                              prop="atomicity/calls")
    # a checker that names none of them: the first lost entry, as before
    st.check = O.CheckResult(1, "the keys are all old\n", "old-or-new")
    v = O.judge(outcome(contract="tree", kind="powerloss",
                        check=O.CheckResult(0, "", "new"), crash_states=[st],
                        target_name=None,
                        calls=frozenset(("open", "write", "rename", "unlink"))))
    assert v.cause.change == ("rename", "LOG.old.1796419071725799")


def test_a_forced_write_out_of_a_file_that_reached_the_disk_is_not_news():
    why = ("'target' data reached the disk; the forced write-out of 'target' at the "
           "rename did not happen; the rename 'target.tmp' -> 'target' did not persist")
    st = FullState("after exit, state 2", OLD, True, why,
                   "fsync the directory after the rename",
                   [Change("data", "target")],
                   [Change("flush", "target", "rename"),
                    Change("rename", "target", "target.tmp")])
    v = O.judge(outcome(kind="powerloss", crash_states=[st]))
    assert v.verdict == "not-durable"
    assert "forced write-out" not in v.explanation
    assert "the rename 'target.tmp' -> 'target' did not persist" in v.explanation
    assert v.cause.change == ("rename", "target")


def test_a_forced_write_out_that_would_have_saved_data_is_said():
    why = ("the forced write-out of 'target' at the rename did not happen; "
           "'target' data was never fsynced")
    st = FullState("after exit, state 2", b"", True, why,
                   "fsync the file before renaming it over the target", [],
                   [Change("flush", "target", "rename"),
                    Change("data", "target", "never fsynced")])
    v = O.judge(outcome(kind="powerloss", crash_states=[st]))
    assert "the forced write-out of 'target' at the rename did not happen" in \
        v.explanation


def test_a_program_that_syncs_nothing_is_told_both_fsyncs():
    # sed -i: the durable state lost the new entry; its data was never
    # synced either
    st = FullState("after exit, state 1", OLD, True, "the new entry 'target' did not persist",
                   "fsync the directory after the rename", [], [Change("replace", "target")])
    v = O.judge(outcome(kind="powerloss", crash_states=[st],
                        calls=frozenset(("openat", "write", "fclose", "rename"))))
    assert "fsync the file before renaming it over the target, and the directory " \
           "after the rename" in v.explanation
    v = O.judge(outcome(kind="powerloss", crash_states=[st],
                        calls=frozenset(("openat", "write", "fsync", "rename"))))
    assert v.explanation.endswith("fsync the directory after the rename.")


def test_a_target_moved_away_and_left_incomplete():
    # vim: its write open fails, it renames the target to target~ and
    # leaves an empty target in its place, and exits 1
    o = eio(plan="open#8=EIO", target=b"", stderr="", target_removed=True)
    v = O.judge(o)
    assert v.verdict == "torn"
    assert v.cause == O.Cause(rules.RULE_KEEP_TARGET, change=("unlink", "target"),
                              prop="atomicity/calls")
    assert "moved the old one away" in v.explanation
    assert "rewrit" not in v.explanation and "in place:" not in v.explanation
    # renamed over beats moved away: the rename is the step that was early
    v = O.judge(eio(target=b"", target_removed=True, target_renamed=True))
    assert v.cause.rule == rules.RULE_WHOLE_BEFORE_RENAME


def test_a_program_that_made_a_new_file_under_the_name_is_not_told_to_rename():
    # install, tar: unlink the target, create it anew, never sync
    st = FullState("after exit, state 1", OLD, True, "the creation of 'target' did not persist",
                   "fsync the directory after the rename", [], [Change("create", "target")])
    v = O.judge(outcome(kind="powerloss", crash_states=[st],
                        calls=frozenset(("unlinkat", "openat", "close"))))
    assert "renam" not in v.explanation
    assert v.explanation.endswith("fsync the new file, and its directory after creating "
                                  "it: the program syncs nothing.")
    v = O.judge(outcome(kind="powerloss", crash_states=[st],
                        calls=frozenset(("unlinkat", "openat", "fsync", "close"))))
    assert v.explanation.endswith("fsync the directory after creating the file.")


def test_a_fault_in_a_program_that_loses_data_anyway_shows_that_defect():
    # sqlite's rollback journal: its baseline is not durable (no directory
    # fsync after the unlink); a close error it ignores changes nothing
    st = FullState("after exit, state 2", OLD, True,
                   "the unlink of 'kv.db-journal' did not persist", "",
                   [], [Change("unlink", "kv.db-journal")])
    o = recovered(stderr="", plan="close#3=EIO", crash_states=[st])
    assert O.judge(o).verdict == "unreported-error"
    o = recovered(stderr="", plan="close#3=EIO", crash_states=[st], known_at_risk=True)
    v = O.judge(o)
    assert v.verdict == "not-durable"
    assert v.cause == O.Cause("fsync the directory after removing a file",
                              change=("unlink", "kv.db-journal"), prop="durability")
