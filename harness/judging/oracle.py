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
for a crash state, _state_cause derives them from the state and the
calls, so that the advice never contradicts the state shown) and the
finding names the file the faulted call hit. judge() gives every
finding its severity (properties.severity): a warning for ignored-error
and for what an EINTR that cannot happen where the program ran caused.

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
from dataclasses import dataclass, field, replace

from . import payload, properties
from . import models as _models
from .explorer import RULE_FSYNC_FAILED, RULE_IN_PLACE, RULE_ONE_RENAME

# the explorer's words where a crash state shows the same defect: the
# cases of one defect share its rule
RULE_KEEP_TARGET = RULE_ONE_RENAME
RULE_WHOLE_BEFORE_RENAME = ("write the whole temporary file (flush its stream), "
                            "fsync it, and only then rename it over the target")

# In the order reports rank them: the verdicts that lose data first, then
# those of a program that failed or died, then ignored-error (discipline
# broken, no data lost this time), then the cases that judged nothing.
VERDICTS = ("ok", "lost-update", "missing", "torn", "not-durable",
            "unreported-error", "crashed", "hang", "gave-up-on-transient",
            "ignored-error", "skipped", "harness-error")
# The verdicts that mean the user's data was lost or put at risk.
LOSES_DATA = ("lost-update", "missing", "torn", "not-durable", "unreported-error")
# The verdicts a buggy variant can be caught by (spec `expect`).
FINDINGS = tuple(v for v in VERDICTS if v not in ("ok", "skipped", "harness-error"))
KINDS = ("baseline", "eintr", "short", "enospc", "eio", "crash", "powerloss")
HARD = ("enospc", "eio")
TRANSIENT = ("eintr", "short")
MODELS = _models.MODELS
# "tree": a directory the program works in, judged by its checker alone
CONTRACTS = ("atomic", "in-place", "check", "tree")
CHECKED = ("check", "tree")

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
    fault_path: str | None = None       # the file the faulted call hit, as the
                                        # program named it ("target.tmp")
    fault_call: str | None = None       # the faulted call on the data path that
                                        # decides, when not the plan's first
                                        # ("close#5" of "close#2+=EIO")
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
    target_name: str = "target"         # the target's file name in the states
    target_renamed: bool = False        # a file was renamed over the target
                                        # before the visible state was taken
                                        # (a power-loss case: before its point)
    known_at_risk: bool = False         # the same program with no fault already
                                        # left an after-exit state without the
                                        # new content: a fault case whose
                                        # states fail shows that defect (not
                                        # a sync its fault made it skip)
    target_removed: bool = False        # the target's own entry was renamed
                                        # away or unlinked during the run
                                        # (a power-loss case: before its point)
    calls: frozenset | None = None      # names of the calls the program made,
                                        # and O_SYNC/O_DSYNC if it used them
                                        # (None: not known), so that advice
                                        # names only those
    require_message: bool = False       # the built-in corpus: a failure must
                                        # name the call and the error in stderr
    eintr_possible: bool = True         # an injected EINTR could happen where
                                        # the program ran: False when every
                                        # faulted call wrote a local regular
                                        # file and no signal handler lacked
                                        # SA_RESTART (the trace's "intr")
    limit_state: str = ""               # a run past its time limit: what it
                                        # was doing ("spinning: ...",
                                        # "blocked: ...", "sleeping: ...")
    skipped_syncs: frozenset = frozenset()  # names (relative; "." the work
                                        # directory) the fault-free run syncs
                                        # and this one, after its fault, did
                                        # not: the syncs the fault made the
                                        # program skip
    synced_after: frozenset = frozenset()   # names this run syncs (successfully)
                                        # after the crash point of its states
    order: object = None                # history (causes.History) that says
                                        # whether a state kept a change made
                                        # after one it lost; None: not known

    def __post_init__(self):
        if self.contract not in CONTRACTS:
            raise ValueError(f"outcome: contract {self.contract!r} is not one of "
                             f"{', '.join(CONTRACTS)}")
        if self.kind not in KINDS:
            raise ValueError(f"outcome: kind {self.kind!r} is not one of {', '.join(KINDS)}")

    @property
    def call(self):
        """The coordinate of the first planned rule: "fsync#1" (without
        '+'); "" for a plan that names no call (a real full disk)."""
        rule = re.sub(r"\([^)]*\)", "", self.plan.split(";")[0])
        if "#" not in rule:
            return ""
        return rule.split("=")[0].rstrip("+")

    @property
    def errno_name(self):
        if self.fault_errno:
            return self.fault_errno
        m = re.search(r"=(E[A-Z0-9]+)\b", self.plan)
        return m.group(1) if m else _KIND_ERRNO.get(self.kind)


@dataclass(frozen=True)
class Cause:
    """The defect behind a finding, as reports group cases by it: the
    rule broken and what decided the verdict. Cases with the same verdict,
    rule and deciding call site (sweep.cause_key) are one defect."""
    rule: str                   # the rule broken, short: "check what fsync returns"
    call: str | None = None     # the deciding call's coordinate: "fsync#1"
    prop: str = ""              # the property broken (properties.PROPERTIES):
                                # "ordering", "error/unreported", ...
    change: tuple | None = None  # a crash state's deciding lost change:
                                # (kind, name) of explorer.Change, e.g.
                                # ("unlink", "kv.db-journal"); or
                                # ("overwrite", target): where the program
                                # started writing over the target itself


@dataclass(frozen=True)
class Verdict:
    verdict: str
    finding: str = ""           # one line with the values
    explanation: str = ""       # for a learner: what, why it matters, what to do
    state: str = ""             # label of the crash state that decided, if one did
    cause: Cause | None = None  # the defect behind a finding (None for ok,
                                # skipped, harness-error)
    note: str = ""              # for an ok: "recovered from fsync#1=EIO ..."
    severity: str = ""          # error | warning ("" for ok and skipped):
                                # properties.severity

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


# A call's name as a program may write it in its own message: "fclose"
# fails inside "close", "fdatasync" is a "sync" to vim ("E667: Fsync
# failed").
_CALL_ALIASES = {
    "fclose": ("close",), "fflush": ("flush", "write"), "fwrite": ("write",),
    "fputs": ("write",), "fputc": ("write",), "fprintf": ("write",),
    "pwrite": ("write",), "writev": ("write",), "pwritev": ("write",),
    "pwritev2": ("write",), "fdatasync": ("fsync", "sync"),
    "fsync": ("sync",), "msync": ("sync",), "syncfs": ("sync",),
    "renameat": ("rename",), "renameat2": ("rename",),
    "unlinkat": ("unlink", "remove", "delete"), "unlink": ("remove", "delete"),
    "ftruncate": ("truncate",), "posix_fallocate": ("fallocate",),
    "openat": ("open",), "creat": ("open", "create"), "fopen": ("open",),
}
_FAILURE_WORDS = re.compile(r"\b(fail\w*|error\w*|cannot|can't|unable|could "
                            r"not|couldn't|not written|lost)\b")


def noticed(stderr, errno_name, call, strict=False):
    """Whether a program that went on after a fault said so on stderr.

    The built-in corpus (strict) must name the call and the error
    (stderr_names_failure). Any other program has noticed when its stderr
    names the error (strerror's text or the symbol), or names the call
    (or a word for it, _CALL_ALIASES) on a line that says something
    failed: "E667: Fsync failed", "close failed in file object
    destructor".
    """
    if not stderr or not errno_name:
        return False
    if strict:
        return stderr_names_failure(stderr, errno_name, call)
    if stderr_names_failure(stderr, errno_name):
        return True
    if not call:
        return False
    base = call.split("#")[0]
    words = (base,) + _CALL_ALIASES.get(base, ())
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, words)) + r")", re.I)
    return any(pattern.search(line) and _FAILURE_WORDS.search(line.lower())
               for line in stderr.splitlines())


def _naming_line(stderr, errno_name, call):
    """The first stderr line that says what failed (for a note)."""
    for line in (stderr or "").splitlines():
        if line.strip() and noticed(line, errno_name, call):
            return line.strip()
    return _first_line(stderr)


def _said(o):
    """The first line the program printed on stderr, "" when none: a
    program that printed something, though not the error, did not go on
    "without a word"."""
    return _first_line(o.stderr)


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


def _on(o, call=None):
    """" on 'target.tmp'" when the faulted call's file is known and CALL
    (the case's own by default) does not name it already, as
    "write(target.tmp)#3" does."""
    call = o.call if call is None else call
    return f" on '{o.fault_path}'" if o.fault_path and "(" not in call \
        else ""


def _fault(o):
    """'fsync#1=EIO' as words: "fsync#1 on 'target.tmp' failing with EIO
    (Input/output error)"."""
    action = o.plan.split(";")[0].partition("=")[2]
    if not o.call:
        # no rule: the sweep's run on a real full disk (records.FULL_DISK)
        return "a full disk (ENOSPC: No space left on device)"
    if o.kind == "short" or action.startswith("short"):
        return f"a short {o.call}{_on(o)}"
    name = o.errno_name
    if name:
        return f"{o.call}{_on(o)} failing with {name} ({strerror(name)})"
    return o.plan


def _failed(o):
    """"fsync#1 on 'target.tmp' failed with EIO (Input/output error)": the
    call that decided (Outcome.fault_call: a fault that keeps firing may
    decide at a later call than its first)."""
    name = o.errno_name
    call = o.fault_call or o.call
    return f"{call}{_on(o, call)} failed with {name} ({strerror(name)})"


def _sync_call(call):
    return call.split("#")[0] in ("fsync", "fdatasync", "msync", "sync_file_range",
                                  "syncfs", "sync")


# ------------------------------------------------------------ the checks

def _visible_failure(o, claimed):
    """Judge a content against the contract; None when acceptable, else
    (verdict, found) where found describes the content."""
    return _state_failure(o, o.target, o.check, claimed, visible=True)


def _state_failure(o, target, check, claimed, visible=False):
    if o.contract in CHECKED:
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
        # a tree has no target to be missing: a state its checker refuses
        # is neither its old nor its new self
        if o.contract == "check" and target is None:
            return "missing", check.summary()
        return "torn", check.summary()
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
    if o.contract in CHECKED:
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


# Words that name a call: they start a sentence in lower case. Calls named
# by an English verb (write, close, open, rename, sync) are not among
# them: a rule that starts with one ("write a temp file ...") is a sentence.
_CALL_WORDS = frozenset((
    "pwrite", "writev", "fwrite", "fflush", "fclose", "fsync",
    "fdatasync", "msync", "munmap", "mmap", "openat",
    "renameat", "unlink", "ftruncate", "fallocate",
    "posix_fallocate", "syncfs", "sync_file_range"))


# the advice for a tree its checker refused, when the state names no rule
TREE_FIX = ("Make each step durable before the step that depends on it: "
            "fsync a file before a name or a log entry points to it, and "
            "fsync the directory after creating, renaming or removing a "
            "name in it.")


def _torn_text(o, verdict, st=None, rule="", why=""):
    if o.contract == "tree":
        if st is None:
            return (f"{_when(o)}, the checker refuses the tree the program "
                    f"left: it is neither the old state nor the new. "
                    f"{TREE_FIX}")
        fix = _sentence(rule) or TREE_FIX
        return (f"A power cut at this point ({st.label}) leaves a tree that "
                f"its checker refuses, neither the old state nor the "
                f"new{_because(why)} {fix}")
    if st is not None:
        left = "absent" if verdict == "missing" else "neither old nor new"
        fix = _sentence(rule) or ("Write a temporary file, fsync it, rename it over the "
                                  "target, then fsync the directory.")
        return (f"A power cut at this point ({st.label}) leaves the target "
                f"{left}{_because(why)} {fix}")
    if verdict == "missing":
        return (f"{_when(o)} the target is gone, so both the old and the new version "
                "are lost. Never remove or truncate the target first: write a temporary "
                "file in the same directory, fsync it, then rename() it over the target, "
                "which replaces it atomically.")
    return (f"{_when(o)} the target holds neither the old nor the new version: the "
            "program wrote over it in place. Write the new content to a temporary "
            "file in the same directory, fsync it, rename it over the target, then "
            "fsync the directory.")


def _lost_update_text(o):
    hint = {
        "short": (f"{o.call} wrote fewer bytes than asked and the rest were never "
                  "written: loop until every byte is written, advancing by what each "
                  "call returned."),
        "eintr": (f"{o.call} was interrupted (EINTR) and the data was dropped instead "
                  "of written again: retry interrupted calls."),
    }.get(o.kind)
    if hint is None and o.kind == "crash":
        hint = (f"A process of the run was killed at {o.call} and the run exited 0 "
                "all the same: in a pipeline, the exit status is the last command's "
                "(use set -o pipefail, or check every process).")
    if hint is None and o.kind in HARD and o.plan:
        said = ("and the program said so, yet it exited 0" if noticed(
            o.stderr, o.errno_name, o.call, o.require_message) else "and the program "
            "exited 0 all the same")
        hint = (f"{_failed(o)} {said}: a failure that leaves the file without its "
                "new content must end in a non-zero exit.")
    if hint is None:
        hint = ("Check the write loop (every byte, at the right offset), the length "
                "given to truncate or the temporary file, and what gets renamed.")
    return ("The program reported success but the file does not hold what it was "
            "asked to write, so the user's data is silently lost. " + hint)


def _unreported_text(o, lost=""):
    """What a silent data-path fault means; LOST says what it cost, as the
    start of a sentence, when the data was lost or put at risk."""
    said = _said(o)
    how = ("without a word" if not said else
           f"printing only {said!r}, which does not name the error")
    text = (f"{_failed(o)}, yet the program exited 0 {how}, so whoever ran "
            "it believes the data is safe.")
    if lost:
        text += f" {lost}"
    text += (" Check the result of every write, fflush, fsync and close, and exit "
             "non-zero with a message naming the call and strerror(errno).")
    if _sync_call(o.call):
        call = o.call.split("#")[0]
        if o.fault_retried:
            text += (f" Do not retry a failed {call}: Linux drops the dirty pages "
                     "it covered, so a retry succeeds without writing them; write "
                     "the data again from the program's own copy into a fresh file "
                     "instead.")
        else:
            text += (f" After a failed {call} the data it covered is not on the "
                     "disk and never will be (Linux drops those dirty pages): stop "
                     "there, or write the data again from the program's own copy "
                     "into a fresh file.")
    return text


def _check_rule(o):
    """The rule a silent fault breaks, for grouping: "check what fsync returns"."""
    return f"check what {o.call.split('#')[0]} returns"


# Kinds of explorer.Change: a name in a directory, or a file's data. A
# name moved between directories is two changes, one in each (move-in,
# move-out); a directory's own are mkdir and rmdir.
_DIR_CHANGES = ("create", "link", "replace", "rename", "move-in", "unlink",
                "move-out", "mkdir", "rmdir", "symlink")
_DATA_CHANGES = ("data", "blocks", "size", "flush")
# explorer's rules (explorer.RULE_*) whose deciding change is a name
_DIR_RULE_WORDS = ("fsync the directory", "rename the new file over the target in one step")


def _change_fields(c):
    return getattr(c, "kind", None), getattr(c, "name", None), getattr(c, "detail", "")


def _lost_changes(st):
    """The changes a failing state lost, as (kind, name, detail), those
    whose name its checker's message mentions first: RocksDB's checker
    says "./MANIFEST-000010: No such file or directory", and of the six
    entries that state lost, that is the one that mattered."""
    lost = [_change_fields(c) for c in getattr(st, "lost", None) or ()]
    check = getattr(st, "check", None)
    if check is None or check.ok or not check.output:
        return lost
    said = check.output

    def named(name):
        return bool(name) and re.search(
            r"(?<![\w.-])" + re.escape(os.path.basename(name)) + r"(?![\w.-])",
            said) is not None
    return sorted(lost, key=lambda c: not named(c[1]))


def _deciding_change(st, rule, target):
    """(kind, name) of the change a failing state lost that its rule is
    about: the target's name for a directory rule, the target's data for
    a data rule (its sync failure for a failed sync), else the first
    lost change of that sort; None when the state does not say."""
    if rule == RULE_ONE_RENAME:
        return ("unlink", target)
    quoted = set(re.findall(r"'([^']+)'", rule or ""))
    rule = (rule or "").lower()
    if "in place" in rule:
        return ("overwrite", target)
    lost = _lost_changes(st)
    if not lost:
        return None
    kinds = _DERIVED_KINDS.get(rule)
    if kinds is not None:
        # a rule _derived_rule gave: its change, the first lost of its kind
        for k, name, _ in lost:
            if k in kinds:
                return (k, name)
    for k, name, _ in lost:
        # the change the rule names ("after creating 'MANIFEST-000010'")
        if name in quoted and k in _DIR_CHANGES and any(
                w in rule for w in _DIR_RULE_WORDS):
            return (k, name)
    if any(w in rule for w in _DIR_RULE_WORDS):
        kinds = _DIR_CHANGES
    elif "fsync fails" in rule or "msync" in rule:
        kinds = ("sync-failure",) + _DATA_CHANGES
    else:
        kinds = _DATA_CHANGES + ("sync-failure",) + _DIR_CHANGES
    for want_target in (True, False):
        for kind in kinds:
            for k, name, _ in lost:
                if k == kind and (name == target or not want_target):
                    return (k, name)
    return (lost[0][0], lost[0][1])


def _derived_rule(o, st, calls, fallback=True):
    """A rule for a failing state the explorer gave none (a checker
    contract: the state the checker refused is not about the target file
    alone), from what the state lost and the calls the program made:
    SQLite commits by unlinking its journal, so the fix is a directory
    fsync after the unlink, not one "before renaming"."""
    # the rule names no file: the cases of one defect share it whichever
    # file each lost (the state's account names them)
    for k, name, detail in _lost_changes(st):
        if k == "unlink":
            return "fsync the directory after removing a file"
        if k in ("rename", "replace"):
            # a new entry over an existing name is a rename's
            return "fsync the directory after a rename"
        if k in ("create", "link"):
            return "fsync the directory after creating a file"
    for k, name, _ in _lost_changes(st):
        if k in _DATA_CHANGES:
            return "fsync a file after writing it, before exiting 0"
        if k == "sync-failure":
            return RULE_SYNC_FAILED
    if not fallback:
        return ""
    if o.contract == "in-place":
        return "call fsync (or fdatasync) on the file and check it before exiting 0"
    if calls is not None and not calls & _RENAME_CALLS:
        if calls & _UNLINK_CALLS:
            return "fsync the file, and the directory after the unlink, before exiting 0"
        return "call fsync on the file (and on the directory of a new one) before exiting 0"
    return ("call fsync on the file before renaming it, and on the directory after "
            "the rename, before exiting 0")


RULE_NO_SYNC_RETRY = ("after fsync fails, the data it covered is lost: rewrite it "
                      "from a copy (or report the error), never retry fsync and "
                      "claim success")
_RENAME_CALLS = frozenset(("rename", "renameat", "renameat2"))
_UNLINK_CALLS = frozenset(("unlink", "unlinkat"))
# a program that makes none of these, nor opens a file O_SYNC or O_DSYNC,
# syncs nothing
_FILE_SYNCS = frozenset(("fsync", "fdatasync", "msync", "sync", "syncfs",
                         "sync_file_range", "O_SYNC", "O_DSYNC"))
_DIR_AFTER_RENAME = "fsync the directory after the rename"
_BOTH_AROUND_RENAME = ("fsync the file before renaming it over the target, and the "
                       "directory after the rename: the program syncs nothing")
_DIR_AFTER_CREATE = "fsync the directory after creating the file"
_BOTH_AROUND_CREATE = ("fsync the new file, and its directory after creating it: "
                       "the program syncs nothing")
# explorer.RULE_FSYNC_BEFORE_RENAME and RULE_FSYNC_FILE, as it words them
_BEFORE_RENAME = "fsync the file before renaming it over the target"
_AFTER_WRITING = "fsync the file after writing it, before reporting success"
_AFTER_WRITING_IN_PLACE = ("fsync (or fdatasync) the file after writing it, "
                           "before exiting 0")


def _fitted_rule(o, st, calls, fallback=True):
    """The state's rule, fitted to the calls the program made (Outcome.calls):
    a file the program created under its final name and never renamed
    gets no advice about renaming it. Without one from the explorer, one
    derived from the state (with FALLBACK, a general one at worst)."""
    rule = (getattr(st, "rule", "") or "").strip().rstrip(".")
    if not rule:
        return _derived_rule(o, st, calls, fallback)
    if rule == _BEFORE_RENAME and calls is not None and not calls & _RENAME_CALLS:
        return _AFTER_WRITING
    if rule == RULE_IN_PLACE and o.contract == "in-place":
        # rewriting in place is what the program promised
        return _AFTER_WRITING_IN_PLACE
    if rule == _DIR_AFTER_RENAME and calls is not None:
        # the lost entry is the one step the state shows; a program that
        # syncs nothing misses the file's fsync too, and one that never
        # renamed made a new file under the target's name
        renamed = bool(calls & _RENAME_CALLS)
        if calls & _FILE_SYNCS:
            return rule if renamed else _DIR_AFTER_CREATE
        return _BOTH_AROUND_RENAME if renamed else _BOTH_AROUND_CREATE
    return rule


def _why(st):
    """The state's account of what persisted and what did not, without a
    lost forced write-out (ext4's auto_da_alloc at a rename or close) of
    a file none of whose data the state lost: an fsync had made it
    durable, so that loss changed nothing, and saying it did not happen
    reads as if the data were gone."""
    why = getattr(st, "why", "") or ""
    for k, name, _ in _change_fields_all(st, lost=True):
        if k == "sync-failure":
            # the data that persisted is what the failed sync left in
            # the write-back queue: "reached the disk" alone, beside the
            # blocks it dropped, contradicts them
            why = why.replace(f"'{name}' data reached the disk",
                              f"'{name}' data reached the disk but for what "
                              "the failed sync dropped")
    if "forced write-out" not in why:
        return why
    lost_data = {_change_fields(c)[1] for c in getattr(st, "lost", None) or ()
                 if _change_fields(c)[0] in ("data", "blocks", "size")}
    flushes = {_change_fields(c)[1] for c in getattr(st, "lost", None) or ()
               if _change_fields(c)[0] == "flush"}
    moot = flushes - lost_data
    keep = [part for part in why.split("; ")
            if not any(part.startswith(f"the forced write-out of '{name}'")
                       for name in moot)]
    return "; ".join(keep)


def _change_fields_all(st, lost=False):
    """The (kind, name, detail) of a state's lost changes (LOST) or of its
    persisted ones."""
    return [_change_fields(c) for c in getattr(st, "lost" if lost else
                                               "persisted", None) or ()]


def _crash_state_verdict(o, succeeded, quiet):
    failing = []
    for st in o.crash_states:
        claimed = bool(st.claimed) and succeeded
        bad = _state_failure(o, st.target, getattr(st, "check", None), claimed)
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
    finding = f"crash state '{st.label}': expected {_expected(o, claimed)}, found {found}{also}"
    prop, rule, change, why = _state_cause(o, st, verdict, claimed)
    advice = _advice(rule, change)
    if verdict == "not-durable":
        explanation = (f"The program exited 0, so it claimed the new content was safe, "
                       f"but a power cut at this point ({st.label}) loses it"
                       f"{_because(why)} {_sentence(advice)}")
        if quiet and not o.known_at_risk:
            # the fault nobody noticed is what put the data at risk (a
            # retried sync: the retry, that wrote nothing)
            cause = Cause(rule=RULE_NO_SYNC_RETRY if o.fault_retried and
                          _sync_call(o.call) else _check_rule(o), call=o.call,
                          prop="error/unreported")
            retried = (f", it called {o.call.split('#')[0]} again"
                       if o.fault_retried else "")
            return Verdict(
                "unreported-error",
                f"exited 0 after {o.plan}: {_failed(o)}{retried}, and {finding}",
                " ".join(_unreported_text(
                    o, f"A power cut after it exited ({st.label}) loses the new "
                       f"content{_because(why)}").split()),
                state=st.label, cause=cause)
    else:
        explanation = _torn_text(o, verdict, st, advice, why)
    cause = Cause(rule=rule, change=change, prop=prop)
    if rule == _skipped_rule((o.call or "#").split("#")[0]):
        # the defect is where the program took the failure for success
        cause = Cause(rule=rule, call=o.call, prop=prop)
    return Verdict(verdict, finding, " ".join(explanation.split()), state=st.label,
                   cause=cause)


# The rules _derived_rule gives name no file, so that the cases of one
# defect share one whichever file each lost; the explanation names it.
_NAMED_ADVICE = {
    "fsync the directory after removing a file":
        "fsync the directory after removing '{name}'",
    "fsync the directory after a rename":
        "fsync the directory after the rename to '{name}'",
    "fsync the directory after creating a file":
        "fsync the directory after creating '{name}'",
    "fsync a file after writing it, before exiting 0":
        "fsync '{name}' after writing it, before exiting 0",
}


# the lost changes each rule of _derived_rule is about
_DERIVED_KINDS = {
    "fsync the directory after removing a file": ("unlink",),
    "fsync the directory after a rename": ("rename", "replace"),
    "fsync the directory after creating a file": ("create", "link"),
    "fsync a file after writing it, before exiting 0": _DATA_CHANGES,
}


def _advice(rule, change):
    """RULE as the explanation says it: naming the file of the deciding
    CHANGE where the rule is one of those that name none."""
    if change and rule in _NAMED_ADVICE:
        return _NAMED_ADVICE[rule].format(name=change[1])
    if rule == RULE_IN_PLACE:
        return ("write a temporary file in the same directory, fsync it, "
                "rename it over the target and fsync the directory, instead "
                "of rewriting the target in place")
    return rule


# A crash state's cause, by the property it breaks (properties.py).
RULE_SYNC_FAILED = ("after fsync fails, the data it covered is not on the "
                    "disk and never will be: stop there (or write the data "
                    "again from a copy into a fresh file) instead of going on "
                    "as if it were")
RULE_APPEND = ("make the reader drop a torn last record (a length and a "
               "checksum per record): no fsync placement keeps a power cut "
               "between an append and its sync from cutting it short or "
               "leaving garbage at the end")
RULE_ORDER = ("make a file durable (fsync it, and its directory when its "
              "name is new) before the change that depends on it")

_SKIPPED_SYNC = ": when it fails, the sync it leads to never happens"


def _skipped_rule(call):
    """The rule a fault breaks that made the program skip a sync it
    makes otherwise (SQLite's open of the directory for its fsync)."""
    return f"check what {call} returns{_SKIPPED_SYNC}"


def blames_a_skipped_sync(v):
    """Whether verdict V names as its cause a sync that its fault made
    the program skip: the sweep asks whether the program without the
    fault loses the data anyway (Outcome.known_at_risk), when that
    defect, not the skip, is the cause."""
    return v.cause is not None and (v.cause.rule or "").endswith(
        _SKIPPED_SYNC)


def _state_cause(o, st, verdict, claimed):
    """(property, rule, deciding change, why) of a failing crash state:
    the property it breaks (properties.py), the advice that follows from
    it and from the calls the program made, the change that decided it,
    and the state's account of what persisted, never contradicting the
    state shown."""
    lost = _lost_changes(st)
    target = o.target_name
    why = _why(st)
    rule = _fitted_rule(o, st, o.calls, fallback=verdict == "not-durable")
    change = _deciding_change(st, rule, target)
    kinds = {k for k, _, _ in lost}
    # a failed sync dropped what the state lost: what the program did
    # after the failure decides, not where a sync is missing
    failed = next(((k, n) for k, n, _ in lost if k == "sync-failure"), None)
    if failed is not None or rule in (RULE_NO_SYNC_RETRY, RULE_FSYNC_FAILED):
        change = failed or change
        if o.fault_retried and _sync_call(o.call or ""):
            return "error/unreported", RULE_NO_SYNC_RETRY, change, why
        if o.status not in (0, None) and target is not None and \
                not o.target_renamed and not o.target_removed:
            # it stopped at the failure and said so: what the failed sync
            # dropped was the target itself, being rewritten in place
            return ("atomicity/calls", RULE_IN_PLACE, ("overwrite", target),
                    why)
        return "error/ignored", RULE_SYNC_FAILED, change, why
    # the fault made the program skip a sync it makes otherwise (unless
    # the program loses this data without the fault too: that defect)
    skipped = None if o.known_at_risk else _skipped(o, lost)
    if skipped is not None:
        call = o.call.split("#")[0]
        name = skipped[1]
        why = (f"{why}; the failed {call} made the program skip the sync of "
               f"'{_home(skipped, name)}' it makes in a run without the fault")
        return "error/ignored", _skipped_rule(call), skipped, why
    if not lost and getattr(st, "lost", None) is not None:
        # everything the program had done by then reached the disk, and
        # that is itself neither old nor new: it was midway
        why = ("every change the trace shows the program making by this "
               "point reached the disk, and that is itself neither the old "
               "content nor the new: the program was in the middle of its "
               "update")
        if o.contract == "tree":
            return "atomicity/calls", rule or TREE_FIX.rstrip("."), change, why
        prop = "atomicity/calls"
        if change is None and target is not None:
            if o.target_renamed:
                rule, change = RULE_WHOLE_BEFORE_RENAME, ("rename", target)
                if o.fault_fired and o.kind in HARD:
                    # it went on past its failed call to the rename
                    prop = "error/ignored"
            elif o.target_removed:
                rule, change = RULE_KEEP_TARGET, ("unlink", target)
            else:
                rule, change = RULE_IN_PLACE, ("overwrite", target)
        # an update made in place is half done at a power cut, whatever
        # reaches the disk: the explorer's rule for it
        return prop, rule or RULE_IN_PLACE, change, why
    appended = _torn_append(o, st, lost)
    if appended is not None:
        why = (f"{why}; the program syncs '{appended}' after this point, so "
               "the append was cut between its write and its sync")
        return "atomicity/append", RULE_APPEND, ("data", appended), why
    later = o.order.later(st) if o.order is not None else None
    if later is not None:
        first, then = later
        why = (f"{why}; yet {_change_words(then)}, made after "
               f"{_change_words(first, lost=True)}, persisted")
    elif rule in (_BEFORE_RENAME, RULE_WHOLE_BEFORE_RENAME) and any(
            k in _DATA_CHANGES for k, _, _ in lost):
        # the explorer's own account says it: the new name of a file
        # whose data did not persist reached the disk (pending or synced)
        later = (None, None)
    if later is not None:
        first, then = later
        if rule in _TARGET_ORDER_RULES or then is None:
            return "ordering", rule, change or ("rename", target), why
        # the defect is where the program made the change that depends
        # on what it had not made durable: one place, whichever file
        # each state lost (git's ref update, gzip's removal of its input)
        return "ordering", RULE_ORDER, (then[0], then[1]), why
    if change is None and verdict == "torn" and target is not None:
        # a state as torn as what a read saw then: the program had
        # renamed an incomplete file over the target, removed the target
        # and not yet finished its replacement, or was writing over the
        # target itself
        if o.target_renamed:
            rule, change = RULE_WHOLE_BEFORE_RENAME, ("rename", target)
        elif o.target_removed:
            rule, change = RULE_KEEP_TARGET, ("unlink", target)
        else:
            change = ("overwrite", target)
    elif change is None and verdict == "missing":
        change = ("unlink", target)
    rule = rule or (RULE_KEEP_TARGET if verdict == "missing" else
                    RULE_IN_PLACE if change == ("overwrite", target)
                    else "write a temporary file, fsync it, rename it")
    if claimed:
        return "durability", rule, change, why
    # before the program claimed anything: the update was half on the
    # disk, in one write's blocks (existing blocks of one file overwritten
    # in place, torn, nothing else of that file pending: no truncation,
    # no new size) or across several calls
    files = {n for _, n, _ in lost}
    one = kinds <= {"blocks", "torn"} and len(files) == 1 and not any(
        n in files for _, n, _ in _change_fields_all(st))
    return ("atomicity/call" if one else "atomicity/calls"), rule, change, why


# the explorer's rules about the target that are already an ordering's
_TARGET_ORDER_RULES = (RULE_WHOLE_BEFORE_RENAME, "fsync the file before renaming "
                       "it over the target", "fsync the file after writing it, "
                       "before reporting success")


def _home(change, name):
    """The name a sync covers a change by: its directory for a change of a
    name, the file itself for its data."""
    if change[0] in _DATA_CHANGES or change[0] == "sync-failure":
        return name
    return os.path.dirname(name) or "."


def _skipped(o, lost):
    """The lost change a sync that the fault made the program skip
    would have made durable (Outcome.skipped_syncs), or None."""
    if not o.skipped_syncs or not o.fault_fired or o.kind not in HARD:
        return None
    for k, name, _ in lost:
        if _synced(_home((k, name), name), o.skipped_syncs):
            return (k, name)
    return None


def _synced(name, names):
    """Whether NAMES (records.synced_names) cover NAME: it, or "*", a sync
    of everything."""
    return name in names or "*" in names


def _torn_append(o, st, lost):
    """The file whose appended end the state lost, when the program
    syncs it after this crash point (Outcome.synced_after): every lost
    change of it is its data, and it grew (a size change, or the write
    was an O_APPEND one). None otherwise."""
    if not o.synced_after:
        return None
    names = {n for _, n, _ in lost}
    for name in sorted(names):
        mine = [(k, d) for k, n, d in lost if n == name]
        if not _synced(name, o.synced_after) or any(k not in ("blocks", "size", "data",
                                                       "torn") for k, _ in mine):
            continue
        sizes = [d for k, n, d in _change_fields_all(st) + _change_fields_all(
            st, lost=True) if n == name and k == "size"]
        if any(_grew(d) for d in sizes) or (
                o.order is not None and o.order.appended(name)):
            return name
    return None


def _grew(detail):
    """Whether a size change's detail ("52 -> 104") grows the file."""
    m = re.match(r"\s*(\d+)\s*->\s*(\d+)", detail or "")
    return bool(m) and int(m.group(2)) > int(m.group(1))


def _change_words(change, lost=False):
    """A change in words: "the rename 'a' -> 'b'", "the data of 'x'"
    (LOST: the change a state lost, "the write of 'x'")."""
    kind, name, detail = (tuple(change) + ("", ""))[:3]
    if kind in ("rename", "move-in") and detail:
        return f"the rename '{detail}' -> '{name}'"
    if kind in _DATA_CHANGES or kind == "data":
        return f"the {'write' if lost else 'data'} of '{name}'"
    if kind == "create":
        return f"the creation of '{name}'"
    return f"the {kind} of '{name}'"


def _hang(o):
    """A run past its time limit, by what it was doing when the limit
    struck (Outcome.limit_state, engine/timelimit.py): spinning on a
    failing call, blocked, or still going (sleeping, or making calls)
    at the furthest the limit may be pushed. The words name the limit's
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
        f"{where}. {hint}",
        cause=Cause(f"do not die of {name}", call=o.call or None,
                    prop="error/died"))


def _failed_unplanned(o, r):
    """5. a run with nothing planned must succeed."""
    if r.planned or r.succeeded:
        return None
    line = _first_line(o.stderr) or "no message"
    return Verdict(
        "harness-error", f"exited {o.status} with no fault planned: {line}",
        "The program failed without any injected fault, so no faulted case of "
        "it means anything. Fix the workload or the environment until the "
        "baseline run exits 0.")


def _claimed_wrongly(o, r):
    """6./7. success claimed, the new content not there."""
    if not r.succeeded:
        return None
    bad = _visible_failure(o, claimed=True)
    if bad is None:
        return None
    if r.quiet:
        return Verdict(
            "unreported-error",
            f"exited 0 after {o.plan}: {_failed(o)}, and the target is not the "
            f"new content: found {bad[1]}",
            " ".join(_unreported_text(
                o, "The target does not hold what the program was asked to "
                   "write: the data is lost.").split()),
            cause=Cause(_check_rule(o), call=o.call, prop="error/unreported"))
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
                   f"exited 0{under} but expected {_expected(o, True)}, "
                   f"found {bad[1]}", _lost_update_text(o),
                   cause=Cause(rule, call=call, prop=prop))


def _gave_up(o, r):
    """8. gave up on a transient fault."""
    if r.succeeded or r.crashed_by_plan or not (r.fired and o.kind in TRANSIENT):
        return None
    line = _first_line(o.stderr) or "no message"
    bad = _visible_failure(o, claimed=False)
    also = f"; the target was left {bad[0]}: {bad[1]}" if bad else ""
    if o.kind == "short":
        what = (f"{o.call}{_on(o)} wrote fewer bytes than asked (a short write), "
                "which any write may do and which is not an error, and the "
                "program gave up. Loop until every byte is written, advancing "
                "by what each call returned.")
        rule = "continue after a short write"
    else:
        what = (f"{o.call}{_on(o)} was interrupted by a signal (EINTR) before "
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
    bad = _visible_failure(o, claimed=False)
    if bad is None:
        return None
    verdict, found = bad
    how = "was killed at" if r.crashed_by_plan else f"exited {o.status} after"
    what = o.call if r.crashed_by_plan else o.plan
    rule = RULE_KEEP_TARGET if verdict == "missing" else RULE_IN_PLACE
    # whichever call failed, the defect is where the program started on
    # the target itself
    change = ("unlink" if verdict == "missing" else "overwrite", o.target_name)
    text = _torn_text(o, verdict)
    # an update of several calls, seen half done
    prop = "atomicity/calls"
    if verdict == "torn" and o.target_renamed:
        # a temp file and a rename, but the file was not whole
        rule, change = RULE_WHOLE_BEFORE_RENAME, ("rename", o.target_name)
        text = (f"{_when(o)} the target holds neither the old nor the new "
                "version: the program renamed a file over it before that "
                f"file held all of the new content. {_sentence(rule)}")
        if not r.crashed_by_plan and o.kind in HARD:
            # it went on past its failed call to the rename
            prop = "error/ignored"
    elif verdict == "torn" and o.target_removed:
        # the old version moved aside, the new one never finished
        rule, change = RULE_KEEP_TARGET, ("unlink", o.target_name)
        text = (f"{_when(o)} the target holds neither the old nor the new "
                "version: the program moved the old one away (or removed "
                "it) and left an incomplete file in its place. Keep the "
                "target where it is until a complete, fsynced temporary "
                "file is renamed over it.")
    return Verdict(verdict,
                   f"{how} {what}: expected {_expected(o, False)}, found {found}",
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
            f"The program failed after {_fault(o)} but printed nothing, so its user "
            "cannot tell which call failed or why. Before exiting non-zero, print one "
            "line naming the call, its subject and strerror(errno).",
            cause=Cause(rule, call=o.call, prop="error/unreported"))
    if name and not stderr_names_failure(o.stderr, name):
        return Verdict(
            "unreported-error",
            f"exited {o.status} after {o.plan} but stderr does not name the error "
            f"(no '{strerror(name)}' in: {_first_line(o.stderr)})",
            f"The program failed after {_fault(o)} but its message does not say so, "
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
    said = _said(o)
    return Verdict(
        "ignored-error",
        f"exited 0 after {o.plan}: {_failed(o)} and the program "
        f"{'said nothing' if not said else 'went on'}; {states}",
        f"{_failed(o)} and the program went on "
        f"{'without a word' if not said else 'as if it had worked (it printed ' + repr(said) + ', which names no error)'}. "
        "This time no data was lost: the new content is in place and "
        "durable. " + properties.WHEN_IGNORED,
        cause=Cause(_check_rule(o), call=o.call, prop="error/ignored"))


def _ok(o, r):
    """13. ok, with a note when a fault on the data path was recovered
    from."""
    if r.on_path:
        how = (f"retried {o.call.split('#')[0]}" if o.fault_retried
               and not noticed(o.stderr, o.errno_name, o.call, o.require_message)
               else f"said: {_naming_line(o.stderr, o.errno_name, o.call)}")
        return Verdict("ok", note=f"recovered from {o.plan} ({how})")
    return Verdict("ok")
