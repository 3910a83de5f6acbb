"""What the oracle reads and what it gives back: an executed case
(Outcome, with its checker's answers, CheckResult) and its verdict
(Verdict, with the defect behind a finding, Cause), and the names of
verdicts, fault kinds, crash models and contracts they use.

Crash states: judge() accepts any objects with the attributes `label` (str:
crash point and state, e.g. "after rename#1: durable only"), `target`
(bytes, or None when the target is absent in that state), `claimed` (bool:
the program had already exited 0 at that point), `why` (str: what
persisted and what did not) and `rule` (str: the rule broken and its fix);
for check contracts also `check` (a CheckResult: the checker's verdict on
that state, run with CRASHCHECK_EXPECT=new when claimed, else old-or-new).
"""

import re
from dataclasses import dataclass, field

from . import models as _models
from .messages import first_line


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
        line = first_line(self.output)
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
