"""What a sweep is made of: its settings (Settings), the combos of a spec
(spec x strategy x payload size: Combo, combos) and the cases run for a
combo (Case), with the names a run's scratch directory uses (WORK,
TARGET, ...), the contents a combo writes, the fault plans one traced
call gets, and --shard's split.

Nothing here runs a program: execute.py runs one, baseline.py records a
combo's baseline and lists its cases, judge.py judges a case, and
sweep.py enumerates every combo's cases."""

import hashlib
import os
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from .. import ROOT
from . import tracecut
from ..judging import models, outcome, payload

# The fault classes and the crash models, as the oracle defines them; a
# sweep not told which models judges under DEFAULT_MODELS.
KINDS = outcome.KINDS
MODELS = outcome.MODELS
DEFAULT_MODELS = models.DEFAULT

# Names inside a run's scratch directory. The program runs in WORK with
# the target named TARGET there, so its messages and our reports show
# 'target.tmp' rather than a random scratch path: results stay
# byte-identical from one run to the next.
# The built-in corpus: its programs must also name the failing call and
# strerror in their message (the oracle's require_message).
SPEC_DIR = ROOT / "workloads" / "specs"

WORK = "work"
INPUT = "in"
TARGET = "target"
NEW = "new"
SNAPS = "snaps"
# The run's TMPDIR: a directory of its own in WORK, where the library
# sees the temporary files (a sponge writes, fsyncs and renames into
# place: the explorer must know their content and that it was synced)
# and faults their calls, on the file system of the target (a rename
# from it never fails with EXDEV here and not there), and which goes
# with the case. Its name is ours, so that no program's own meets it.
TMP = ".crashcheck-tmp"
# (--home) the run's HOME: in its scratch, outside WORK (the files a
# program keeps there are not the state judged)
HOME = "home"
# where the library says why it stopped a run (CRASHCHECK_NOTE)
NOTE = "note"
BIN = str(ROOT / "workloads" / "bin")

# The default time budget of a sweep's cases, in seconds of wall time on
# the sweep's jobs (--budget): every case runs when the estimate fits it,
# and only then (choose_sample). Five minutes: a user waits that long for
# an audit, and `make run` (4,755 cases) took under a minute of it
# on two loaded cores (docs/benchmarks.md).
BUDGET = 300.0


@dataclass
class Settings:
    """What one sweep is asked to do (command-line options)."""
    out: Path                                   # results directory
    models: tuple = DEFAULT_MODELS
    kinds: tuple = KINDS
    jobs: int = os.cpu_count() or 1
    cap: int = 64                               # crash states per crash point
    seed: int = 0                               # explorer's sample seed
    keep: bool = False                          # keep every case's scratch
    scratch_limit: int | None = None            # bytes a run's snapshots may take
    trace_limit: int = tracecut.LIMIT           # bytes a run's trace may take; 0: no limit
    home: bool = False                          # each run its own HOME
    rerun: tuple = ()                           # options a reproduce command carries
                                                # (--scratch, --scratch-limit, --home as given)
    timeout: float | None = None                # overrides the specs' timeouts
    all_calls: bool = False                     # fault calls outside the scratch too
    fork_server: bool = True                    # fault cases forked, not exec'd
    lite: bool = True                           # traces that start near the fault
    sector: int | None = None                   # --sector; None: each spec's
    backend: str = "auto"                       # auto, preload or syscall (backend.py)
    exhaustive: bool = False                    # every call and crash point, no sampling
    sample: int | None = None                   # cases sampled inside a group (select); None: by the budget
    budget: float | None = BUDGET               # seconds the cases may take (choose_sample); None: no limit
    sharded: bool = False                       # --shard: every case unless --sample (the shards must agree)
    spread: int = 0                             # processes of other machines' (--tx) that run the cases; 0: the jobs
    work_dir: Path | None = None                # a worker's (--tx): the controller's work directory
    fs: str | None = None                       # --fs: runs on this real filesystem
    fs_options: str = ""                        # its mount options (validate-models)
    fail_on: str | None = None                  # --fail-on; None: each spec's

    @property
    def work_link(self):
        """RESULTS/.work: a directory, or a link to one in scratch."""
        return self.out / ".work"

    @property
    def work(self):
        """The work directory, the link resolved: the library records
        real paths, and "inside the work directory" is a prefix test."""
        if self.work_dir is not None:
            return self.work_dir
        link = self.work_link
        return link.resolve() if link.is_symlink() else link


@dataclass
class Combo:
    spec: object            # harness.engine.spec.Spec
    strategy: str | None
    size: int
    # the tree contract's starting directory (start_tree), once known
    start: Path | None = field(default=None, repr=False, compare=False)
    # (old, new), made once: every case of the combo needs them, and a
    # payload of megabytes costs more to make than a short run
    _contents: tuple | None = field(default=None, repr=False, compare=False)

    @property
    def prefix(self):
        parts = [self.spec.name]
        if self.strategy:
            parts.append(self.strategy)
        # An audit has one size, the length of its new content: it tells
        # its cases apart from nothing, so its ids leave it out.
        if getattr(self.spec, "size_in_id", True):
            parts.append(f"{self.size}B")
        return "-".join(parts)


@dataclass
class Case:
    id: str
    combo: str              # Combo.prefix
    kind: str
    plan: str = ""
    call: str = ""          # "fsync#1", or the crash point for power loss
    model: str | None = None
    point: int | None = None  # index of the crash point (power loss)
    skip: str = ""          # reason, when the combo cannot run here
    error: str = ""         # harness-error found at enumeration (nothing intercepted)
    at: int | None = None   # the seq of the faulted call (crash point) in the baseline's trace
    # the faulted call's offset and length in the baseline (coords.signature):
    # a run whose fault hit a call made otherwise was not aimed where planned
    where: list | None = None
    unstable: str = ""      # baseline: the calls two recorded runs made otherwise
    backend: str = "preload"  # what runs it: the baseline's (record_baseline)
    disk: str = "normal"    # "full": run on a real, nearly full tmpfs (FULL_DISK)

    def to_json(self):
        return {k: v for k, v in self.__dict__.items()}


def parse_shard(text):
    """'K/N' -> (K, N) with 1 <= K <= N; ValueError naming the problem."""
    try:
        k, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise ValueError(f"expected K/N, got '{text}'") from None
    if not (n >= 1 and 1 <= k <= n):
        raise ValueError(f"need 1 <= K <= N, got '{text}'")
    return k, n


def in_shard(case_id, k, n):
    """Whether a case is in shard K of N: by a CRC-32 of its id, so the
    split is the same on every machine and Python version."""
    return zlib.crc32(case_id.encode()) % n == k - 1


def old_size(size):
    """The old content is longer than the new one and unaligned, so that a
    program which forgets to truncate leaves a visible tail; never longer
    than a payload may be (a new content near 64 MiB)."""
    return min(size + 4097, payload.MAX_SIZE)


def target_name(spec):
    """The target's file name in the work directory: TARGET, unless the
    spec names its own (an audit's --target); None for a tree, which has
    none (an audit of a tree may name a file in it)."""
    own = getattr(spec, "target", None)
    if own is not None:
        return own
    return None if getattr(spec, "tree", False) else TARGET


def contents(combo):
    """(old, new): old is None when the spec's target starts absent. A
    spec with contents of its own (an audit's --old/--new) gives them."""
    if combo._contents is not None:
        return combo._contents
    own = getattr(combo.spec, "contents", None)
    if own is not None:
        combo._contents = own()
        return combo._contents
    seed = int.from_bytes(hashlib.sha256(combo.prefix.encode()).digest()[:4],
                          "big")
    new = payload.make(combo.size, 2, seed)
    old = None if combo.spec.old == "absent" else \
        payload.make(old_size(combo.size), 1, seed)
    combo._contents = (old, new)
    return combo._contents


# Calls that open a file; creat always creates.
OPEN_CALLS = ("open", "openat", "fopen")


def fault_plans(c, faults):
    """The cases one traced call gets, C its coordinate (coords.Coords:
    "write(target.tmp)#3"): (kind, plan) in a fixed order. A fault that
    keeps firing starts at the call on its file (or of its thread) and
    then fails every later call of its name, on any file, in any thread
    (`++`): a full disk, a failing device fails them all, and a program
    that turns to another file after the first failure must meet the
    same."""
    last = "++=" if "(" in c or "@" in c else "+="
    plans = []
    if "eintr" in faults:
        plans.append(("eintr", f"{c}=EINTR"))
    if "short" in faults:
        plans.append(("short", f"{c}=short"))
    if "enospc" in faults:
        plans.append(("enospc", f"{c}{last}ENOSPC"))
    if "eio" in faults:
        plans.append(("eio", f"{c}=EIO"))
        plans.append(("eio", f"{c}{last}EIO"))
    if "crash" in faults:
        plans.append(("crash", f"{c}=crash"))
        plans.append(("crash", f"{c}=crash-after"))
    return plans



def combos(specs):
    for spec in specs:
        for strategy in (spec.strategies or [None]):
            for size in spec.sizes:
                yield Combo(spec, strategy, size)
