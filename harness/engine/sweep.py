"""The sweep: from workload specs to cases, and from a case to a verdict.

For each spec x strategy x payload size (a *combo*) the sweep first makes
one recorded run with no fault: it is the baseline case, the trace every
other case is enumerated from, and the source of the power-loss cases.
Then, for every call the trace shows touching the scratch directory, one
case per fault class that applies to that call (faults/calls.def), and one
power-loss case per crash point and model. Call numbers come from the
trace, so nothing here knows how many writes a program makes.

Enumeration (`enumerate_cases`) runs once, before pytest collects; each
case is then executed and judged by `execute` in whichever pytest worker
gets it. Both sides share only the work directory on disk.
"""

import contextlib
import errno
import fcntl
import functools
import hashlib
import itertools
import json
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from .. import INSTALLED, ROOT, UsageError, calls, coords, command_name
from . import (backend as backend_mod, checkserver, fullfs, pool, realfs,
               runner, statedir, timelimit, trace, tracecut)
from ..judging import (causes, explorer, models, oracle, payload, properties,
                       symbols)

# The fault classes and the crash models, as the oracle defines them; a
# sweep not told which models judges under DEFAULT_MODELS.
KINDS = oracle.KINDS
MODELS = oracle.MODELS
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


# How many cases of a group (select) are sampled between its first and
# its last by --sample when it is given without a number of its own
SAMPLE = 3

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


START_SUFFIX = ".start"
# a setup runs once per combo, and may make a whole repository
SETUP_TIMEOUT = 600.0


def start_tree(combo, work):
    """The starting directory of a tree contract's combo (None for other
    contracts), built on first use: a copy of the spec's old_dir (or an
    empty directory) in which its setup ran, without the fault library.
    It lives in the sweep's work directory, WORK/<combo>.start, beside
    the baselines (an audit's is made by the audit command, in its
    inputs: the spec's start_dir). Every run of the combo starts from a
    copy of it (prepare). runner.SetupError, naming the spec, when the
    old_dir cannot be copied or the setup fails."""
    spec = combo.spec
    if not getattr(spec, "tree", False):
        return None
    if combo.start is not None:
        return combo.start
    own = getattr(spec, "start_dir", None)
    if own is not None:
        combo.start = Path(own)
        return combo.start
    dest = Path(work) / (combo.prefix + START_SUFFIX)
    if not dest.is_dir():
        build_start(dest, spec.old_dir,
                    spec.setup_argv(BIN, combo.strategy) if spec.setup else None,
                    min(SETUP_TIMEOUT, 10 * spec.timeout),
                    f"{spec.name}: old_dir", f"{spec.name}: setup")
    combo.start = dest
    return dest


def build_start(dest, old_dir, setup, timeout, copy_label="old_dir",
                setup_label="setup"):
    """Make DEST a copy of OLD_DIR (or an empty directory) and run SETUP
    (an argv, or None) in it without the fault library. The copy keeps
    symbolic links as links, modes and times (git reads the index's
    times). runner.SetupError, one line starting with the label of what
    failed, on any failure; DEST is then not made."""
    dest = Path(dest)
    partial = dest.with_name(dest.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    try:
        if old_dir is not None:
            try:
                shutil.copytree(old_dir, partial, symlinks=True)
            except (OSError, shutil.Error) as e:
                raise runner.SetupError(
                    f"{copy_label}: cannot copy '{old_dir}': "
                    f"{_copy_problem(e)}") from None
        else:
            partial.mkdir(parents=True)
        if setup:
            # confined like the program: it may change only what it sets up
            run = runner.run(setup, cwd=partial, preload=False,
                             timeout=timeout, confine=[partial])
            if run.timed_out or run.status != 0:
                how = (f"ran past {timeout:g} s" if run.timed_out else
                       f"killed by signal {run.signal}" if run.signal else
                       f"exited {run.status}")
                lines = (run.stderr + run.stdout).decode(
                    "utf-8", "replace").strip().splitlines()
                raise runner.SetupError(
                    f"{setup_label} {how}" + (f": {lines[-1].strip()}"
                                              if lines else ""))
        out = link_out(partial)
        if out is not None:
            rel, to = out
            made = copy_label if old_dir is not None and \
                os.path.islink(os.path.join(old_dir, rel)) else setup_label
            raise runner.SetupError(
                f"{made}: '{rel}' is a symbolic link to '{to}', outside the "
                "tree: every run of the program would write through it to "
                "that file (make it point inside the tree, or copy the file "
                "in)")
        os.rename(partial, dest)
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def link_out(top):
    """(path relative to TOP, link text) of the first symbolic link under
    TOP that leads outside it, or None. Each run of a tree starts from a
    copy of TOP: a link out of it would let every run write to the one
    file it leads to, the user's own (escapes, after a baseline, says
    the same of a work directory)."""
    real_top = os.path.realpath(top)
    for d, dirs, names in os.walk(top):
        for name in sorted(dirs + names):
            path = os.path.join(d, name)
            if not os.path.islink(path):
                continue
            real = os.path.realpath(path)
            if real != real_top and not real.startswith(real_top + "/"):
                return os.path.relpath(path, top), os.readlink(path)
    return None


def _copy_problem(e):
    """One line for copytree's failure (shutil.Error holds a list)."""
    if isinstance(e, shutil.Error) and e.args and isinstance(e.args[0], list):
        src, _, why = e.args[0][0]
        return f"{src}: {why}"
    if isinstance(e, OSError) and e.strerror:
        return f"{e.filename}: {e.strerror}" if e.filename else e.strerror
    return str(e)


def copy_start(start, work):
    """Lay the starting tree START out in the (empty) directory WORK."""
    shutil.copytree(start, work, symlinks=True, dirs_exist_ok=True)


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


# ---------------------------------------------------------------- running

class Outcome:
    """One executed run, with where its files are. Its trace is parsed
    when first asked for in full (records); `trace` answers the questions
    that need only a few of its records (trace.Lazy)."""

    def __init__(self, run, scratch, records=None, trace=None,
                 trace_from=None, trace_full=None, full_disk=False):
        self.run = run
        self.scratch = scratch
        self._records = records
        self.trace = trace
        # a lite run's: the seq its trace starts at (execute_run)
        self.trace_from = trace_from
        # a thin run's: the seqs (lo, hi) its writes are whole in
        self.trace_full = trace_full
        # snapshot contents read for this run's explorations: hash -> bytes
        self.blobs = {}
        # the faulted call on the data path that decides (Judge.judge_run)
        self.deciding = None
        # run with its work directory on a real full disk (FULL_DISK)
        self.full_disk = full_disk
        # a crashed run on a real filesystem (execute_run's crash): what a
        # read saw, what the disk held, each realfs.read_tree's
        self.real = None

    @property
    def has_thin(self):
        """A thin run's trace that holds a thin line (one with none is a
        whole run's)."""
        return self.trace_full is not None and self.trace is not None \
            and self.trace.thin()

    @property
    def records(self):
        if self._records is None:
            self._records = self.trace.records if self.trace is not None else []
        return self._records

    def faulted(self):
        """The records of the faulted calls and the crashes."""
        if self.trace is not None:
            return self.trace.faulted()
        return trace.faulted(self.records)

    def calls_after(self, rec, needles=()):
        """The call records after REC, in seq order (an iterable); maybe
        only those whose line holds NEEDLES (trace.Lazy.calls_after)."""
        if self.trace is not None:
            return self.trace.calls_after(rec["seq"], needles)
        return (r for r in trace.calls(self.records) if r["seq"] > rec["seq"])

    def for_exit(self):
        """The records for explorer.explore_exit (trace.Lazy.for_exit)."""
        if self.trace is not None:
            return self.trace.for_exit()
        return self.records

    # made once: a case asks for them a few times, and a Path costs
    @functools.cached_property
    def workdir(self):
        return self.scratch / WORK

    @functools.cached_property
    def snapdir(self):
        return self.scratch / "snaps"


def prepare(scratch, old, new, target=TARGET, reuse_input=False, start=None,
            lay=True):
    """Lay out a run's scratch directory: WORK holds the target (the old
    content, or nothing) or a copy of the starting tree START, INPUT the
    new content the program reads, HOME is the run's own, empty. With
    reuse_input the scratch is one a run of the same combo used before:
    its input stays, and the rest is emptied, the last run's snapshots
    too (a run whose content changes every time, a database's random
    pages, piled them up). Without LAY, WORK is left empty: a real
    filesystem's image (realfs) brings its content."""
    scratch = os.fspath(scratch)
    work = os.path.join(scratch, WORK)
    snaps = os.path.join(scratch, SNAPS)
    inp = os.path.join(scratch, INPUT, NEW)
    if reuse_input:
        for name in ("trace.jsonl", "shared", NOTE):
            try:
                os.unlink(os.path.join(scratch, name))
            except FileNotFoundError:
                pass
        for d in (work, snaps, os.path.join(scratch, HOME)):
            _emptied(d)
        if lay:
            os.mkdir(os.path.join(work, TMP))
        # a program may have changed or moved its input (mv new target)
        try:
            st = os.stat(inp)
            same = (st.st_ino, st.st_size, st.st_mtime_ns) == _INPUT_STAMP.get(inp)
        except FileNotFoundError:
            same = False
        if not same:
            os.makedirs(os.path.dirname(inp), exist_ok=True)
            _write_input(inp, new)
    else:
        os.makedirs(work, exist_ok=True)    # fullfs may have mounted it
        for d in (INPUT, SNAPS, HOME):
            os.mkdir(os.path.join(scratch, d))
        if lay:
            os.mkdir(os.path.join(work, TMP))
        _write_input(inp, new)
    if lay:
        lay_work(work, old, target, start)


def lay_work(work, old, target=TARGET, start=None):
    """The content of a run's WORK directory before it starts: a copy of
    the starting tree START, the target with the OLD content (None: no
    target). Its TMP directory is made by the caller."""
    if start is not None:
        copy_start(start, work)
    if old is not None:
        with open(os.path.join(work, target), "wb") as fh:
            fh.write(old)


_INPUT_STAMP = {}    # path of a reused input -> (ino, size, mtime) we left it with


def _write_input(path, data):
    try:
        os.unlink(path)         # a new inode: an old one may be a hard link
    except FileNotFoundError:
        pass
    with open(path, "wb") as fh:
        fh.write(data)
    st = os.stat(path)
    _INPUT_STAMP[path] = (st.st_ino, st.st_size, st.st_mtime_ns)


def _fresh_dir(path):
    """PATH made an empty directory: one of ours (under a root of ours)
    left there before is removed first."""
    shutil.rmtree(path, ignore_errors=True)
    os.mkdir(path)
    return path


def _empty_scratch(scratch):
    """Empty a scratch for another combo, all but the WORK directory
    itself, which is emptied in turn. OSError when something cannot go."""
    clear_dir(scratch, keep=WORK)
    work = os.path.join(scratch, WORK)
    if os.path.islink(work) or not os.path.isdir(work):
        try:
            os.unlink(work)     # a program's doing: prepare makes it again
        except FileNotFoundError:
            pass
    else:
        clear_dir(work)


def _emptied(path):
    """PATH as an empty directory of ours: emptied, or made again where a
    run removed it or left something else in its place (a link is
    removed, never followed)."""
    if os.path.islink(path) or (os.path.exists(path)
                                and not os.path.isdir(path)):
        os.unlink(path)
    try:
        clear_dir(path)
    except FileNotFoundError:
        os.mkdir(path)


def clear_dir(path, keep=None):
    """Empty a directory (but for the entry named KEEP): a run leaves a
    few files there, which costs less to remove one by one than the tree
    and make it again. OSError when something cannot go (the caller then
    takes a fresh scratch)."""
    with os.scandir(path) as it:
        entries = [e for e in it if e.name != keep]
    for e in entries:
        if e.is_dir(follow_symlinks=False):
            shutil.rmtree(e.path)
        else:
            os.unlink(e.path)


def argv_of(combo):
    """The combo's command line, as run in its scratch's WORK."""
    return combo.spec.argv(bin=BIN, target=target_name(combo.spec),
                           new=f"../{INPUT}/{NEW}", strategy=combo.strategy)


class ScratchFull(Exception):
    """crashcheck's own scratch ran out of room (ENOSPC, EDQUOT) for what
    the harness writes there: the case cannot run, and that is the
    harness's failure, never the program's."""


def execute_run(combo, plan, scratch, timeout, record=True, reuse_input=False,
                server=None, trace_from=None, trace_full=None, settings=None,
                backend="preload", full_disk=False, crash=False,
                before_crash=None):
    """Run the combo's program once under `plan` in a scratch directory:
    a fresh one, or with reuse_input one a run of the same combo used.
    server: a runner.ForkServer of the combo's command line to fork the
    run from (runner.ServerUnavailable when it cannot). trace_from: a
    lite run, whose trace starts at that seq and takes no snapshots
    (Judge.lite_from). trace_full: a thin run, whose writes outside those
    seqs (lo, hi) may be recorded thin (Judge.thin_window). settings:
    the sweep's, for the scratch limit, HOME and --fs. ScratchFull when the
    scratch has no room for the run's files. backend: "preload" or
    "syscall" (harness/engine/backend.py; a server is the preload's).
    full_disk: the work directory on a real, nearly full tmpfs (a spec's
    FULL_DISK case, harness/engine/fullfs.py).

    With settings.fs the work directory is a fresh copy of the combo's
    pristine image of that filesystem (realfs), and afterwards a plain
    directory holding what the run left; with CRASH the filesystem is
    crashed instead after the run (realfs.Disk.crash), and the Outcome's
    `real` is (what a read saw before the crash, what the disk held
    after), each realfs.read_tree's (files, dirs, links); BEFORE_CRASH,
    when given, is called with the realfs.Disk between the run and the
    crash, and what it returns kept in the Outcome's `before_crash`. A
    CRASH run with plan None does not run the program at all: the crash
    point before its first call."""
    old, new = contents(combo)
    argv = argv_of(combo)
    start = combo.start
    if getattr(combo.spec, "tree", False) and start is None:
        raise ValueError(f"{combo.prefix}: a tree's run before its start "
                         "tree was made (start_tree)")
    scratch = Path(scratch)
    sdir = os.fspath(scratch)
    work = os.path.join(sdir, WORK)
    tr = os.path.join(sdir, "trace.jsonl")
    extra = {"TMPDIR": os.path.join(work, TMP)}
    if settings is not None and settings.home:
        extra["HOME"] = os.path.join(sdir, HOME)
    real = on_real_fs(combo, settings) and not full_disk
    real_state = early = hooked = None

    def run_it():
        if plan is None:
            return fullfs.skipped_run(argv, "not run: the crash point "
                                      "before the first call")
        if server is None:
            how = functools.partial(runner.run, argv, backend=backend)
        else:
            how = server.run
        # the limit looks at the run when it strikes: one that sleeps or
        # makes progress goes on (timelimit.py)
        limit = timelimit.Limit(timeout, trace=tr) \
            if timeout is not None else None
        return how(cwd=work, plan=plan, trace=tr, watch=work,
                   snapdir=os.path.join(sdir, SNAPS)
                   if record and trace_from is None else None,
                   shared=os.path.join(sdir, "shared"), timeout=limit,
                   trace_from=trace_from, trace_full=trace_full,
                   limit=settings.scratch_limit if settings else None,
                   note=os.path.join(sdir, NOTE), extra=extra,
                   confine=[sdir], trace_limit=(
                       settings.trace_limit if settings else tracecut.LIMIT)
                   or None)

    def lay_out(lay=True):
        try:
            prepare(sdir, old, new, target_name(combo.spec), reuse_input,
                    start, lay=lay)
        except OSError as e:
            if e.errno in (errno.ENOSPC, errno.EDQUOT):
                raise ScratchFull(_full_text(sdir, e)) from None
            if not reuse_input:
                raise
            # the last run left something that would not go: start over
            shutil.rmtree(sdir, ignore_errors=True)
            os.makedirs(sdir, exist_ok=True)
            prepare(sdir, old, new, target_name(combo.spec), start=start,
                    lay=lay)

    if real:
        lay_out(lay=False)
        disk = realfs.Disk(settings.fs, pristine_image(combo, settings),
                           scratch, work, settings.fs_options)
        try:
            disk.open()
            run = run_it()
            if crash:
                seen = realfs.read_tree(work)
                if before_crash is not None:
                    hooked = before_crash(disk)
                real_state = (seen, realfs.read_tree(disk.crash()))
                disk.close()
            else:
                if plan == "" and record and trace_from is None:
                    # a baseline's: the changes no call accounts for are
                    # looked for now, on the filesystem, whose inode
                    # numbers the trace gives (unseen_of keeps them)
                    early = Outcome(run=run, scratch=scratch,
                                    trace=trace.Lazy.load(tr))
                    unseen_of(early)
                disk.copy_out()
        finally:
            disk.close()
    else:
        # a spec's full-disk case runs with WORK on a real, nearly full
        # tmpfs (harness/engine/fullfs.py); where none can be mounted (not
        # root), the run is recorded as exit 77 with the reason: a skip.
        try:
            with fullfs.disk_for(full_disk, scratch / WORK, old, new):
                lay_out()
                run = run_it()
        except fullfs.Unavailable as e:
            run = fullfs.skipped_run(argv, f"disk = \"full\" unavailable: {e.reason}")
    reclaim(work)
    if early is not None:
        return early
    out = Outcome(run=run, scratch=scratch, trace=trace.Lazy.load(tr),
                  trace_from=trace_from, trace_full=trace_full,
                  full_disk=full_disk)
    out.real = real_state
    out.before_crash = hooked
    return out


# the pristine images of a --fs sweep, in its work directory (realfs.Images)
REALFS_DIR = "realfs"


def on_real_fs(combo, settings):
    """Whether the combo's runs go on a real filesystem (--fs): every
    run but a spec's full-disk case, which needs its nearly full tmpfs
    (execute_run's full_disk)."""
    return settings is not None and settings.fs is not None


def pristine_image(combo, settings):
    """The image of settings.fs with the combo's work directory as every
    run starts it (made on first use, by whichever process asks)."""
    old, _ = contents(combo)
    name = target_name(combo.spec)

    def lay(work):
        os.mkdir(work / TMP)
        lay_work(os.fspath(work), old, name, combo.start)
    return realfs.Images(settings.work / REALFS_DIR, settings.fs,
                         settings.fs_options).pristine(combo.prefix, lay)


def reclaim(path):
    """Give the harness back what a run took from it under PATH: a
    program may make its directory or its files unreadable (chmod 000),
    and a user who is not root could then neither judge nor remove them.
    Every directory regains its owner's rwx, every file its owner's read
    (modes are not what a case judges). Root reads them anyway."""
    if os.geteuid() == 0:
        return
    todo = [path]
    while todo:
        d = todo.pop()
        try:
            mode = os.lstat(d).st_mode
            if mode & 0o700 != 0o700:
                os.chmod(d, mode | 0o700)
            with os.scandir(d) as it:
                entries = list(it)
        except OSError:
            continue
        for e in entries:
            try:
                if e.is_dir(follow_symlinks=False):
                    todo.append(e.path)
                elif e.is_file(follow_symlinks=False):
                    mode = e.stat(follow_symlinks=False).st_mode
                    if not mode & 0o400:
                        os.chmod(e.path, mode | 0o400)
            except OSError:
                pass


def _full_text(path, e):
    """The finding of a scratch with no room for a run at PATH: what is
    left there is said as what it is, less than the run needed (a
    write of more than is left fails with space to spare)."""
    try:
        left = (f"; {size_text(runner.free_bytes(path))} left there, too "
                "little for this run's files")
    except OSError:
        left = ""
    return (f"crashcheck's scratch has no room: {e.strerror} under "
            f"'{runner.scratch_base()}'{left} (free space there, or give "
            f"--scratch DIR on a larger file system)")


def size_text(n):
    """A size in words: '512 bytes', '3.0 MiB', '1.5 GiB'."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.1f} {unit}"
    return f"{n} bytes"


def scratch_trouble(out, combo):
    """Why the run OUT says nothing of its program because of
    crashcheck's own scratch (the library's note, CRASHCHECK_NOTE): its
    snapshots passed the scratch limit, the scratch was full under them,
    or a call of the program got ENOSPC from the full scratch (but in a
    FULL_DISK case's run, whose disk is full on purpose); "" when none."""
    try:
        with open(out.scratch / NOTE, "rb") as fh:
            lines = fh.read().decode("utf-8", "replace").splitlines()
    except FileNotFoundError:
        return ""
    full_disk = getattr(out, "full_disk", False)
    base = runner.scratch_base()
    if not lines:
        # the library began a note and could not write it: no room
        return _full_text(out.scratch, OSError(errno.ENOSPC, "no room for "
                                               "the library's note"))
    for line in lines:
        kind, _, rest = line.partition(" ")
        if kind == "limit-file":
            limit, size, path = (rest.split(" ", 2) + ["", ""])[:3]
            name = _shown(path, out)
            return (f"crashcheck's scratch limit: '{name}' is "
                    f"{size_text(int(size or 0))}, more than the "
                    f"{size_text(int(limit or 0))} a run may take "
                    "(--scratch-limit)")
        if kind == "limit-stored":
            return (f"crashcheck's scratch limit: the run's snapshots passed "
                    f"{size_text(int(rest or 0))} (--scratch-limit)")
        if kind == "full":
            err, what, path = (rest.split(" ", 2) + ["", ""])[:3]
            return _full_text(out.scratch, OSError(
                errno.ENOSPC, f"{err} on {what} of a snapshot"))
        if kind == "program-full" and not full_disk:
            err, call, path = (rest.split(" ", 2) + ["", ""])[:3]
            return (f"crashcheck's scratch is full: the program's {call} of "
                    f"'{_shown(path, out)}' failed with {err}, which no "
                    f"fault planned (free space on '{base}', or give "
                    "--scratch DIR on a larger file system)")
    return ""


def _shown(path, out):
    """PATH as the program names it from its work directory, where it is
    in it."""
    rel = coords.relative(path, str(out.workdir))
    return rel if rel is not None else path


# A spec with disk = "full" (harness/engine/spec.py) has, per combo, one
# more case of this name, of kind enospc: its program runs with no plan,
# its work directory on a real tmpfs one page short of the new content
# (fullfs.py), the fault being the full disk itself, not an injected
# error. Every other run of the spec, its baseline included, is on the
# scratch filesystem as any other's. The oracle sees FULL_DISK as the
# case's plan.
FULL_DISK = "disk=full"
# what a call on a full disk fails with
FULL_ERRNOS = ("ENOSPC", "EDQUOT")


def full_disk_hits(out):
    """The calls of OUT's run (a FULL_DISK case) that failed with ENOSPC
    or EDQUOT on a file of its work directory, marked as a fired fault's
    records are ("fault": an object as the trace's, with no rule of a
    plan: {"action": "ENOSPC", "disk": "full"}), so that the judge reads
    them as it reads a planned fault's."""
    def failed(r):
        ret, err = r.get("ret"), r.get("errno")
        # posix_fallocate returns its error rather than -1
        return isinstance(ret, int) and err and (
            ret < 0 or r["call"] == "posix_fallocate" and ret == err)
    return [dict(r, fault={"action": trace.errno_name(r["errno"]),
                           "disk": "full"})
            for r in trace.calls(out.records)
            if failed(r) and trace.errno_name(r["errno"]) in FULL_ERRNOS
            and touches(r, out.workdir)]


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


def targeted_calls(records, watch, all_calls=False):
    """The call records the sweep faults, in trace order: calls on a path
    inside the scratch work directory (the target, its temp files, the
    directory itself) and whole-system syncs."""
    return [r for r in trace.calls(records)
            if all_calls or touches(r, watch)]


def touches(rec, watch):
    """Whether a call record concerns the scratch work directory (or all
    of the file system, for sync and syncfs)."""
    if rec["call"] in ("sync", "syncfs"):
        return True
    base = str(watch)
    return any(p == base or p.startswith(base + "/")
               for p in (rec.get("path"), rec.get("path2")) if p)


# -------------------------------------------------------------- enumerate

def combos(specs):
    for spec in specs:
        for strategy in (spec.strategies or [None]):
            for size in spec.sizes:
                yield Combo(spec, strategy, size)


def enumerate_cases(specs, settings, log=print):
    """Run every combo's baseline (in parallel), then list the cases.
    Returns (cases, combos by prefix). The baselines stay in the work
    directory: their traces feed the power-loss cases. Unless --keep, the
    work directory is a link into scratch: remove it with remove_work()
    (removing the results directory would leave the scratch behind).
    runner.SetupError, naming the spec, where a baseline's program cannot
    start."""
    link = settings.work_link
    remove_work(link, refuse=True)
    all_combos = list(combos(specs))
    check_room(room_needed(specs, settings.jobs),
               f"its {len(all_combos)} baselines and {settings.jobs} cases "
               "at a time")
    # The baselines run and stay in scratch (tmpfs), with --keep too (its
    # runs must be the others', on the same file system: a program's
    # rename from its TMPDIR must not turn EXDEV): in the results
    # directory, on a disk, they cost real fsyncs and a slow removal (a
    # 143-combo sweep's fixed part: 1.8 s -> 0.75 s). .work is a link to
    # it, so every process finds it where it always was; with --keep it is
    # copied there at the end (keep_work).
    link.parent.mkdir(parents=True, exist_ok=True)
    # removed by the watchdog should this process be killed outright
    scratch = runner.make_scratch(WORK_PREFIX)
    os.symlink(scratch, link)
    work = settings.work
    # the trees' starts, once each, before any run copies them
    for combo in all_combos:
        start_tree(combo, work)
    runs = len(all_combos)
    log(f"crashcheck: recording {runs} baseline run{'' if runs == 1 else 's'} "
        f"({settings.jobs} job{'' if settings.jobs == 1 else 's'})")

    def baseline(i):
        combo = all_combos[i]
        scratch = work / combo.prefix
        scratch.mkdir()
        try:
            began = time.monotonic()
            out, how, why = record_baseline(combo, scratch, settings)
            took = time.monotonic() - began
            if scratch_trouble(out, combo):
                # stopped for the scratch: its files and snapshots say
                # nothing, and may fill what the harness still writes
                for d in (out.workdir, out.snapdir):
                    shutil.rmtree(d, ignore_errors=True)
            save_run(out, how, why)
            runs = []
            again = record_again(combo, out, settings, how, took=runs)
            if runs:
                # a run traced without snapshots, as a case's is
                took = min(runs)
            save_globs(scratch, again[1])
            found = found_of(combo, out, settings, how, again=again,
                             blind=why if why.startswith("not seen whole")
                             else "")
            found.seconds = case_cost(took, checker_seconds(combo, out,
                                                            settings))
            if not any(c.error or c.skip for c in found.fixed):
                save_unseen(out)
            return found
        except runner.SetupError as e:
            # a program that cannot start (not found, not executable): the
            # user's to mend, said in one line; a value, so that it
            # crosses the pool as it is
            return runner.SetupError(f"{combo.spec.name}: {e}")
        except ScratchFull as e:
            return runner.SetupError(f"{combo.spec.name}: {e}")
        except OSError as e:
            if e.errno not in (errno.ENOSPC, errno.EDQUOT):
                raise
            return runner.SetupError(f"{combo.spec.name}: "
                                     f"{_full_text(scratch, e)}")

    # In processes of their own (harness/engine/pool.py), like the cases: a
    # baseline is a run plus its trace and crash points to read, which in
    # threads of this process would queue on one interpreter.
    jobs = min(settings.jobs, len(all_combos))
    if jobs > 1:
        # a few at a time, as the cases go (plugin.Sweep.start_pool)
        workers, results = pool.start(baseline, range(len(all_combos)), jobs,
                                      pool.chunk_size(len(all_combos), jobs, 8))
    else:
        workers, results = None, (_guarded(baseline, i)
                                  for i in range(len(all_combos)))
    everything = []
    finished = False
    try:
        for combo, (found, error) in zip(all_combos, results):
            if error is not None:
                # the combo's baseline case says so; its other cases
                # cannot be enumerated without it
                found = Found([Case(id=f"{combo.prefix}-baseline",
                                    combo=combo.prefix, kind="baseline",
                                    error="the baseline could not be "
                                          "recorded: " + failure_line(error))])
            if isinstance(found, runner.SetupError):
                raise found
            how, why = backend_of(work / combo.prefix)
            if how == "syscall" and why:
                log(f"crashcheck: {combo.prefix}: system-call backend: {why}")
            for c in found.fixed:
                if c.error:
                    log(f"crashcheck: {combo.prefix}: {c.error}")
            for u in load_unseen(work / combo.prefix):
                log(f"crashcheck: warning: {combo.prefix}: {unseen_text(u)}")
            everything.append(found)
        finished = True
    finally:
        if workers is not None:
            pool.stop(workers, finished)
    sample, estimate = choose_sample(everything, settings)
    totals = {}
    cases = []
    for found in everything:
        cases += choose(found, sample, settings.seed, totals)
    totals.setdefault("cases", 0)
    totals.setdefault("kept", 0)
    totals.setdefault("groups", 0)
    grouping = dict(exhaustive=sample is None, sample=sample,
                    seed=settings.seed, budget=settings.budget,
                    estimate=round(estimate, 1),
                    jobs=settings.spread or settings.jobs,
                    **totals)
    grouping["estimate_kept"] = round(estimate_of(
        everything, sample, settings.seed, grouping["jobs"]), 1)
    with open(work / GROUPING_FILE, "w") as fh:
        json.dump(grouping, fh)
    if totals["cases"] > totals["kept"]:
        log("crashcheck: " + sampled_line(grouping))
    # What the baselines took says what the cases will: each pool process
    # lays out one case at a time, as large as the largest baseline's
    used = max((disk_usage(work / c.prefix) for c in all_combos), default=0)
    check_room(settings.jobs * 2 * used + (1 << 20),
               f"{settings.jobs} cases at a time, as large as its largest "
               f"baseline ({size_text(used)})")
    return cases, {c.prefix: c for c in all_combos}


GROUPING_FILE = "grouping.json"

# What a case costs, against its combo's baseline: a case is a run of
# the program (forked from a server, traced lightly up to its fault),
# judged, its crash states explored, its result written. The run is
# timed as record_again makes it (traced, no snapshots; the baseline's
# own run, which snapshots every change, where there is none): a case
# costs CASE_FACTOR times that plus CASE_OVERHEAD seconds of judging.
# Measured 2026-12-06 on two loaded cores (estimate / wall time of the
# sweep's cases): dd bs=1 of 300 bytes 1.6 (2431 cases, 10.4 s), of
# 3000 bytes about 3 (every case of a group costs little more than its
# first), `make run` 0.65 (4755 cases, 54.7 s, a load of 7): it errs
# long for programs of many calls, where a sample is cheap to take.
CASE_FACTOR = 1.0
CASE_OVERHEAD = 0.005


def case_cost(baseline_seconds, checker=0.0):
    """The estimated seconds of one case of a combo whose program ran in
    BASELINE_SECONDS (wall time, one process; see CASE_FACTOR), and whose
    checker (a check or tree contract) took CHECKER seconds on the
    baseline's directory: a case judges at least one state the sweep has
    not judged yet (the checker runs once per distinct state), and a
    checker of half a second outweighs everything else a case costs."""
    return CASE_OVERHEAD + CASE_FACTOR * baseline_seconds + checker


def checker_seconds(combo, out, settings):
    """Seconds the combo's checker takes on its baseline's directory, or
    0.0: no checker (the built-in contracts), a baseline that did not
    exit 0, a checker that cannot answer (the baseline case says so).
    The answer is kept (CheckCache) as the baseline case's own: that
    case asks the same of the same directory, and the checker runs no
    more often for being timed here. A check_server is timed on its
    second answer about a copy of the directory: its first includes its
    start-up, which a sweep process pays once."""
    if combo.spec.contract not in ("check", "tree") or out.run.status != 0 \
            or not out.workdir.is_dir():
        return 0.0
    judge = Judge([combo.spec], settings)
    if combo.spec.check_server is not None:
        return served_seconds(judge, combo, out, settings)
    began = time.monotonic()
    try:
        judge.check(combo, out.workdir, "new")
    except (CheckerFailed, OSError):
        return 0.0
    return time.monotonic() - began


def served_seconds(judge, combo, out, settings):
    """checker_seconds of a spec with a check_server (0.0: it cannot
    answer; its cases will say so)."""
    server = judge.check_server(combo)
    limit = timeout_of(combo, settings)
    copy = judge.state_dir(server)
    try:
        shutil.copytree(out.workdir, copy, symlinks=True, dirs_exist_ok=True)
        server.ask(copy, "new", limit)
        began = time.monotonic()
        server.ask(copy, "new", limit)
        return time.monotonic() - began
    except (checkserver.ServerFailed, OSError, shutil.Error):
        return 0.0
    finally:
        shutil.rmtree(copy, ignore_errors=True)


def estimate_of(everything, sample, seed, jobs):
    """Seconds of wall time the cases of EVERYTHING (Found) chosen with
    SAMPLE take on JOBS processes, as case_cost estimates them."""
    total = 0.0
    for found in everything:
        total += found.seconds * count_kept(found, sample, seed)
    return total / max(1, jobs)


def count_kept(found, sample, seed):
    """How many cases choose(FOUND, SAMPLE, SEED) keeps, without making
    them."""
    if sample is None:
        return found.count()
    n = len(found.fixed)
    for items, per in ((found.faults, 1), (found.points, found.models)):
        sizes = {}
        for key, _ in items:
            sizes[key] = sizes.get(key, 0) + 1
        n += per * sum(min(size, sample + 2) for size in sizes.values())
    return n


def choose_sample(everything, settings):
    """(sample, estimate): how many cases of each group run between its
    first and last (None: every case) and the seconds every case would
    take. Every case with --exhaustive, and where the estimate fits
    settings.budget; --sample N samples N whatever the budget; a shard
    of a run (--shard) runs every case unless told --sample, as its
    estimate is this machine's and the shards must agree on the cases.
    Past the budget, the largest sample that fits it, down to the first
    and the last of each group."""
    jobs = settings.spread or settings.jobs
    whole = estimate_of(everything, None, settings.seed, jobs)
    if settings.exhaustive:
        return None, whole
    if settings.sample is not None:
        return settings.sample, whole
    if settings.sharded or settings.budget is None or \
            whole <= settings.budget:
        return None, whole
    lo, hi = 0, max((found.count() for found in everything), default=0)
    if estimate_of(everything, hi, settings.seed, jobs) \
            <= settings.budget:
        return None, whole
    # the estimate grows with the sample: the largest that fits
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if estimate_of(everything, mid, settings.seed, jobs) \
                <= settings.budget:
            lo = mid
        else:
            hi = mid - 1
    return lo, whole


def sampled_line(grouping):
    """The console's line, and the reports' fact, of a sweep that left
    cases out: 'SAMPLED 90 of 405 cases (...)'."""
    g = grouping
    if g.get("budget") is not None and g.get("estimate") is not None and \
            g["estimate"] > g["budget"]:
        why = (f"every case would take about {duration_text(g['estimate'])} "
               f"on {g.get('jobs', 1)} "
               f"job{'s' if g.get('jobs', 1) != 1 else ''}, past the "
               f"{duration_text(g['budget'])} budget (--budget)")
    else:
        why = "as --sample asks"
    return (f"SAMPLED {g['kept']} of {g['cases']} cases: {why}; of each of "
            f"{g['groups']} groups of a call site, file and fault the first, "
            f"the last and {g['sample']} sampled with seed {g['seed']}; "
            "--exhaustive for every one")


def duration_text(seconds):
    """'0.6 s', '45 s', '3 min 5 s', '2 h 10 min'."""
    if seconds < 9.95:
        return f"{seconds:.1f} s"
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min" + (f" {s % 60} s" if s % 60 else "")
    return f"{s // 3600} h" + (f" {s % 3600 // 60} min" if s % 3600 // 60
                               else "")


def disk_usage(path):
    """Bytes the files under PATH take on their file system."""
    total = 0
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                pass
    return total


def room_needed(specs, jobs):
    """Bytes of scratch a sweep of SPECS with JOBS processes needs, as
    far as can be told before it runs: each combo's baseline keeps its
    old and new contents and snapshots of them (four times both), and
    each process lays out a case as large."""
    sizes = []
    for c in combos(specs):
        own = getattr(c.spec, "contents", None)
        if own is not None:
            old, new = contents(c)
            n = len(new) + (len(old) if old is not None else 0)
        else:
            n = c.size + (old_size(c.size) if c.spec.old != "absent" else 0)
        sizes.append(4 * n + (64 << 10))
    return sum(sizes) + jobs * max(sizes, default=0)


def check_room(need, what):
    """runner.SetupError, one line, where the scratch has less than NEED
    bytes free for WHAT."""
    base = runner.scratch_base()
    try:
        free = runner.free_bytes(base)
    except OSError as e:
        raise runner.SetupError(f"scratch '{base}': {e.strerror}") from None
    if free < need:
        raise runner.SetupError(
            f"scratch '{base}' has {size_text(free)} free; this sweep needs "
            f"about {size_text(need)} ({what}): free some, or give --scratch "
            "DIR on a larger file system")


def default_limit(jobs):
    """The scratch limit of a run when --scratch-limit is not given: a
    share of what the scratch has free, between the JOBS processes and
    the baselines, and a smaller one of the memory the harness reads a
    run's files into (a file is replayed whole, several crash states of
    it at a time: a 1 GiB file took 6 GiB); at least 16 MiB."""
    try:
        free = runner.free_bytes(runner.scratch_base())
    except OSError:
        free = 1 << 30
    try:
        with open("/proc/meminfo") as fh:
            mem = next(int(line.split()[1]) << 10 for line in fh
                       if line.startswith("MemAvailable:"))
    except (OSError, StopIteration, ValueError, IndexError):
        mem = free
    return max(16 << 20, min(free // (4 * (jobs + 1)),
                             mem // (16 * (jobs + 1))))


def parse_size(text):
    """'512M', '2G', '1048576', '64KiB' -> bytes; ValueError naming the
    problem."""
    m = re.fullmatch(r"\s*(\d+)\s*([kmgt]?)(i?b)?\s*", text or "", re.I)
    if not m:
        raise ValueError(f"'{text}' is not a size (a number of bytes, or "
                         "with K, M, G or T)")
    n = int(m[1]) << {"": 0, "k": 10, "m": 20, "g": 30, "t": 40}[m[2].lower()]
    if n < 1 << 20:
        raise ValueError(f"'{text}' is less than 1 MiB")
    return n


# Every run of a combo works in a directory as long as its baseline's
# (Judge.scratch_for): the baselines' root (WORK_PREFIX and 16 hex digits)
# is as long as the fault cases' root (RUNS_PREFIX, made by plugin.py,
# shared by the pool) and a directory of 7 digits in it, each process's.
WORK_PREFIX = "crashcheck-recorded-run-"
RUNS_PREFIX = "crashcheck-runs-"
ASIDE = ".aside"     # a combo's baseline, while another recorded run is made
HELD = ".held"       # a held case's root (replay), beside ".work", as long
RANDOM_RUNS = 5      # recorded runs in all of a combo whose names change


def record_again(combo, out, settings, how="preload", took=None):
    """More recorded runs of the combo whose baseline is OUT, traced
    without snapshots, for cases_of to hold against it: ([(records, work
    directory)], align's globs for the files whose names change from run
    to run); ([], {}) where there is nothing to compare (a skipped
    baseline, one that shows nothing). A program whose threads or
    processes race makes its calls otherwise from run to run, and a case
    aimed at a call by its number would hit another. One more run, and
    RANDOM_RUNS in all where names change (mkstemp's): random names
    that share a character at their start or end by chance would keep
    it in their glob, and the cases aimed at the file would never fire.
    With Python's tempfile names (37 characters) that is one chance in
    37**(k-1) per end for k runs: three runs gave Mercurial's temp file
    the glob '.hg/tmpq???????' in a `make apps`, five make it about one
    in two million. TOOK, a list, gets each run's seconds (wall time)."""
    if out.run.skipped or scratch_trouble(out, combo) or escapes(out) or \
            nothing_intercepted(combo, out, how):
        return [], {}

    def one_more(k):
        # where the baseline ran, its files set aside meanwhile: a program
        # that writes its working directory into a file (logrotate, its
        # state) writes the same bytes in every recorded run
        scratch = out.scratch
        aside = Path(f"{os.fspath(scratch)}{ASIDE}")
        os.rename(scratch, aside)
        try:
            scratch.mkdir()
            try:
                began = time.monotonic()
                again = execute_run(combo, "", scratch,
                                    timeout_of(combo, settings), record=False,
                                    settings=settings, backend=how)
                if took is not None:
                    took.append(time.monotonic() - began)
                trouble = scratch_trouble(again, combo)
                if trouble:
                    raise ScratchFull(trouble)
                return again.records, str(again.workdir)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
        finally:
            os.rename(aside, scratch)
    first = (out.records, str(out.workdir))
    try:
        others = [one_more(1)]
        globs = coords.align([first] + others)
        if globs:
            others += [one_more(k) for k in range(2, RANDOM_RUNS)]
            globs = coords.align([first] + others)
    except ScratchFull:
        # the scratch, not the program: the baseline is judged as it is
        return [], {}
    return others, globs


def _guarded(job, item):
    """(JOB(item), None), or (None, the traceback) where it raised: what
    a pool gives (harness/engine/pool.py), in this process."""
    try:
        return job(item), None
    except UsageError as e:
        # a setup error (runner.SetupError) is its one line, not a
        # traceback whose last line names the class
        return None, str(e)
    except Exception as e:
        if stops_sweep(e):
            raise
        import traceback
        return None, traceback.format_exc()


def stops_sweep(e):
    """Whether exception E is pytest.exit's, which the plugin raises on
    SIGTERM and SIGHUP (plugin._terminated) to end the sweep: it derives
    from Exception, and taken for the failure of the case or baseline
    it interrupted it would let the sweep go on."""
    outcomes = sys.modules.get("_pytest.outcomes")
    return outcomes is not None and isinstance(e, outcomes.Exit)


def failure_line(error):
    """The one line of a failure's text (a traceback, or how a pool
    process died) that says what went wrong: its last."""
    lines = [line.strip() for line in str(error).strip().splitlines()
             if line.strip()]
    if not lines:
        return "unknown error"
    # a traceback's last line names the class: not crashcheck's own
    last = re.sub(r"^harness(\.\w+)+\.(SetupError|UsageError|"
                  r"ConfineError|ContainError): ", "", lines[-1])
    return last


def remove_work(work, refuse=False):
    """Remove a sweep's work directory: the link and the scratch directory
    it points to (one of ours, by its name), or a directory a --keep run
    left (ours: it holds CASES_FILE). Anything else there stays:
    crashcheck never removes what it did not make; with REFUSE it is a
    runner.SetupError."""
    work = Path(work)
    if work.is_symlink():
        target = Path(os.readlink(work))
        if target.name.startswith(WORK_PREFIX) and \
                target.parent == runner.scratch_base():
            shutil.rmtree(target, ignore_errors=True)
            work.unlink()
        elif refuse:
            # a link of the user's: neither followed nor removed
            raise runner.SetupError(
                f"--out: '{work}' is a symbolic link crashcheck did not "
                "make: move it away")
    elif work.is_dir() and (work / CASES_FILE).is_file():
        shutil.rmtree(work, ignore_errors=True)
    elif os.path.lexists(work) and refuse:
        raise runner.SetupError(
            f"--out: '{work}' is not crashcheck's work directory (a file or "
            "directory of yours?): move it away")


# the case list a sweep writes into its work directory (plugin.py)
CASES_FILE = "cases.json"


def keep_work(work):
    """--keep: the work directory, which ran in scratch like every run's,
    copied into the results as a plain directory, and the scratch removed."""
    work = Path(work)
    if not work.is_symlink():
        return
    target = Path(os.readlink(work))
    aside = work.with_name(work.name + ".kept")
    shutil.rmtree(aside, ignore_errors=True)
    shutil.copytree(target, aside, symlinks=True)
    work.unlink()
    aside.rename(work)
    if target.name.startswith(WORK_PREFIX) and \
            target.parent == runner.scratch_base():
        shutil.rmtree(target, ignore_errors=True)


def record_baseline(combo, scratch, settings):
    """(Outcome, backend, why) of the combo's baseline, recorded in
    SCRATCH with the backend settings.backend asks for, and why that one
    (a sentence, "" when nothing needed saying).

    auto runs a program the preload can enter under it (backend.choose:
    not static, not Go, not setuid, linking no liburing), and runs it
    again under the system-call supervisor when that baseline shows
    changes to its files that its trace does not account for (missed: a
    static helper, raw system calls, a file mkstemp made inside the C
    library), or when the program imports syscall(2) and the supervisor
    sees syncs or name changes the preload did not (blind_to): the
    supervisor's baseline is kept unless it accounts for the changes no
    better and sees nothing more. Under a preload asked for by name, a
    program that imports syscall(2) or links liburing is recorded under
    the supervisor too, and when that shows syncs the preload did not see
    (or an io_uring set up), the baseline is
    kept with the reason, which makes it a harness-error and runs no
    other case of the combo (cases_of): the preload must not call data
    "never fsynced" that was synced where it could not see."""
    timeout = timeout_of(combo, settings)
    argv = argv_of(combo)
    how, why = backend_mod.resolve(settings.backend, argv[0],
                                   cwd=os.path.join(scratch, WORK))
    out = execute_run(combo, "", scratch, timeout, settings=settings,
                      backend=how)
    if how != "preload" or settings.backend == "syscall":
        return out, how, why
    lost = settings.backend == "auto" and missed(combo, out)
    raw = backend_mod.may_bypass(argv[0], cwd=os.path.join(scratch, WORK))
    if not lost and not raw:
        return out, "preload", why
    lost_words = lost_text(combo, out) if lost else ""
    preload_out = out
    kept = scratch.parent / (scratch.name + ".preload")
    shutil.rmtree(kept, ignore_errors=True)
    os.rename(scratch, kept)
    scratch.mkdir()
    sup = execute_run(combo, "", scratch, timeout, settings=settings,
                      backend="syscall")
    blind = blind_to(preload_out, sup) if not sup.run.skipped else ""
    syncs = (blind_to(preload_out, sup, names=False) if blind else "") or \
        uring_set_up(sup)
    if settings.backend == "preload":
        # asked for by name: the preload's run; where it cannot see the
        # syncs, nothing it says of durability stands
        shutil.rmtree(scratch, ignore_errors=True)
        os.rename(kept, scratch)
        out = load_run_of(combo, scratch, preload_out)
        return out, "preload", (f"not seen whole: {syncs}; rerun with "
                                "--backend syscall (or auto)") if syncs else ""
    sup_lost = missed(combo, sup)
    if lost and (not sup_lost or blind or uring_set_up(sup)):
        shutil.rmtree(kept, ignore_errors=True)
        return sup, "syscall", (f"its preload baseline shows {lost_words}: "
                                "the system-call backend sees those calls")
    if blind and not sup_lost:
        shutil.rmtree(kept, ignore_errors=True)
        return sup, "syscall", (f"it imports syscall(2), and {blind}: the "
                                "system-call backend sees those calls")
    shutil.rmtree(scratch, ignore_errors=True)
    os.rename(kept, scratch)
    out = load_run_of(combo, scratch, preload_out)
    return out, "preload", ""


def load_run_of(combo, scratch, out):
    """OUT, a run recorded in a scratch since moved to SCRATCH, as an
    Outcome reading its files there."""
    return Outcome(run=out.run, scratch=Path(scratch),
                   trace=trace.Lazy.load(os.path.join(scratch, "trace.jsonl")),
                   trace_from=out.trace_from, trace_full=out.trace_full)


# calls the preload may miss (a raw system call, one libc makes inside
# another): the syncs, and the changes of a name
_BLIND_SYNCS = frozenset(("fsync", "fdatasync", "sync", "syncfs", "msync"))
_BLIND_NAMES = frozenset(("rename", "renameat", "renameat2", "unlink",
                          "unlinkat", "link", "linkat", "mkdir", "mkdirat",
                          "rmdir", "symlink", "symlinkat"))


def blind_to(pre, sup, names=True):
    """What the supervisor's run SUP saw that the preload's PRE did not,
    in words ("" when nothing): more syncs, or (NAMES) more changes of
    names, on the work directory's files (a raw syscall(SYS_fsync), a
    remove(3) whose unlink the C library makes inside itself)."""
    def counts(out, calls_):
        n = {}
        for r in trace.calls(out.records):
            if r["call"] in calls_ and r.get("ret", -1) >= 0 and (
                    r["call"] in ("sync", "syncfs") or touches(r, out.workdir)):
                n[r["call"]] = n.get(r["call"], 0) + 1
        return n
    said = []
    for calls_, what in ((_BLIND_SYNCS, "sync"), (_BLIND_NAMES, "name")):
        if what == "name" and not names:
            continue
        a, b = counts(pre, calls_), counts(sup, calls_)
        more = {k: b[k] - a.get(k, 0) for k in b if b[k] > a.get(k, 0)}
        if more:
            said.append(", ".join(f"{n} {k} call{'s' if n != 1 else ''}"
                                  for k, n in sorted(more.items())))
    if not said:
        return ""
    return ("the program makes " + " and ".join(said) + " on its files that "
            "the preload does not see (raw system calls, or calls the C "
            "library makes inside others)")


def lost_text(combo, out):
    """The changes OUT's trace misses (missed), in words."""
    names = unseen_changes(combo, out)
    if names:
        return ("changes to " + ", ".join(f"'{n}'" for n in names[:3])
                + " that its trace does not account for")
    found = unseen_of(out)
    if found:
        u = found[0]
        what = (f"the name '{u['path']}' come or go" if u.get("what") == "name"
                else f"the content of '{u['path']}' change")
        return (f"{what} with no call the preload saw (first seen at "
                f"{u['at']}: a file mkstemp or tmpfile made, a raw system "
                "call, or another call the C library makes inside its own)")
    return "changes its trace does not account for"


def missed(combo, out):
    """Whether the trace of OUT misses changes to its files: at its end
    (unseen_changes), or between two of its snapshots (explorer.unseen: a
    raw write(2) that an fsync's snapshot then shows)."""
    if unseen_changes(combo, out):
        return True
    if out.run.timed_out or out.run.signal is not None or out.run.skipped:
        return False
    return bool(unseen_of(out))


def unseen_of(out):
    """explorer.unseen of OUT, found once (record_baseline asks before
    save_unseen does); [] for a trace the explorer refuses (the cases will
    say what is wrong with it)."""
    found = getattr(out, "_unseen", None)
    if found is None:
        try:
            found = explorer.unseen(out.records, out.snapdir, out.workdir)
        except explorer.ExplorerError:
            found = []
        out._unseen = found
    return found


def unseen_changes(combo, out):
    """The files of the work directory whose content when the run ended
    is not what its trace's last snapshots show (sorted names, [] when
    the trace accounts for every one): something the backend could not
    see changed them. A run that timed out or died of a signal is not
    looked at (nothing_intercepted says why)."""
    if out.run.timed_out or out.run.signal is not None or out.run.skipped:
        return []
    if not any(r["ev"] == "init" for r in out.records):
        return [target_name(combo.spec)]
    try:
        seen = explorer.visible(out.records, out.snapdir)[-1][1]
    except explorer.ExplorerError:
        return []
    actual = {}
    with os.scandir(out.workdir) as it:
        for e in it:
            if e.is_file(follow_symlinks=False):
                with open(e.path, "rb") as fh:
                    actual[e.name] = fh.read()
    return sorted(n for n in set(seen) | set(actual)
                  if seen.get(n) != actual.get(n))


def timeout_of(combo, settings):
    """The time limit of the combo's baseline, and the floor of its
    cases' (Judge.case_seconds): --timeout, else the spec's."""
    return settings.timeout if settings.timeout is not None else combo.spec.timeout


@dataclass
class Found:
    """Every case of one combo, before any is left out (choose): those
    always run, and the fault cases and crash points with the group each
    belongs to (select)."""
    fixed: list                                 # Cases that always run (the baseline, the full disk)
    faults: list = field(default_factory=list)  # (group, Case) in trace order
    points: list = field(default_factory=list)  # (group, [Case per model]) in trace order
    models: int = 1                             # cases per crash point
    calls: int = 0                              # calls of the trace the faults are aimed at
    seconds: float = 0.0                        # what one case is estimated to cost (case_cost)

    def count(self):
        return len(self.fixed) + len(self.faults) + len(self.points) * self.models


def cases_of(combo, out, settings, how="preload", again=None, stats=None,
             blind=""):
    """The cases of a combo from its baseline OUT (found_of), every one
    with settings.exhaustive or without settings.sample, else grouped and
    sampled with it (choose)."""
    found = found_of(combo, out, settings, how, again=again, blind=blind)
    sample = None if settings.exhaustive else settings.sample
    return choose(found, sample, settings.seed, stats)


def choose(found, sample, seed, stats=None):
    """The cases of FOUND that run, in the order the sweep runs them:
    every one with SAMPLE None, else of each group the first, the last
    and SAMPLE between them (select, seeded by SEED). STATS, a dict,
    gets what select counted."""
    pick = Settings(out=Path("."), exhaustive=sample is None,
                    sample=sample or 0, seed=seed)
    cases = list(found.fixed)
    if stats is not None and cases:
        stats["cases"] = stats.get("cases", 0) + len(cases)
        stats["kept"] = stats.get("kept", 0) + len(cases)
    if stats is not None:
        stats["calls"] = stats.get("calls", 0) + found.calls
    cases += select(found.faults, pick, stats)
    if found.points:
        kept = select(found.points, pick, stats, models=found.models)
        # a model's cases, then the next model's (and the real kernel's
        # last: Judge.real_powerloss)
        for m in range(found.models):
            cases += [per_model[m] for per_model in kept]
    return cases


def found_of(combo, out, settings, how="preload", again=None, blind=""):
    """Every case of a combo from its baseline OUT, recorded with the
    backend HOW, which runs them all (a Found): the baseline, the fault
    cases of the calls it made in its directory, the power-loss cases of
    its crash points, each of the last two with its group (select).
    AGAIN: other recorded runs of it and the globs of the files whose
    names change (record_again). Their calls on the work directory must
    be the baseline's: those made otherwise are named in the baseline's
    harness-error, and no case is aimed at them. BLIND: why the preload,
    asked for by name, does not see the program whole (record_baseline):
    the baseline is then a harness-error, and no case runs."""
    pre = combo.prefix
    run = out.run
    cases = []
    if run.skipped:
        reason = skip_reason(run)
        return Found([Case(id=f"{pre}-baseline", combo=pre, kind="baseline",
                           skip=reason, backend=how)])
    blind = scratch_trouble(out, combo) or \
        tracecut.trouble(out, baseline=True) or escapes(out) or \
        nothing_intercepted(combo, out, how) or uring_set_up(out) or blind
    if blind:
        # Every other case would judge a program the trace cannot see:
        # faults that never reach it, crash states without its writes.
        return Found([Case(id=f"{pre}-baseline", combo=pre, kind="baseline",
                           error=blind, backend=how)])
    workdir = str(out.workdir)
    others, globs = again or ([], {})
    moving = coords.moved((out.records, workdir), others, touches, globs) \
        if others else []
    if moving:
        cases.append(Case(id=f"{pre}-baseline", combo=pre, kind="baseline",
                          unstable=unstable_text(moving),
                          backend=how))
    elif "baseline" in settings.kinds:
        cases.append(Case(id=f"{pre}-baseline", combo=pre, kind="baseline",
                          backend=how))
    if getattr(combo.spec, "disk", "normal") == "full" and \
            "enospc" in settings.kinds:
        cases.append(Case(id=f"{pre}-{FULL_DISK}", combo=pre, kind="enospc",
                          call=FULL_DISK, disk="full", backend=how))
    skip = {c for c, _, _ in moving}
    names = coords.Coords(out.records, workdir, globs)
    table = calls.table()
    targeted = targeted_calls(out.records, out.workdir, settings.all_calls)
    faults_found = []       # (group, Case), in trace order
    for i, rec in enumerate(targeted):
        call, coord = rec["call"], names[rec]
        if coord in skip:
            continue
        faults = set(table[call].faults) if call in table else set()
        if (rec.get("len") or 0) < 2:
            faults.discard("short")     # nothing shorter than 1 byte to write
        if call in OPEN_CALLS and "O_CREAT" not in (rec.get("flags") or ()):
            # open(2) fails with ENOSPC only when it creates the file: an
            # open of an existing file (or a directory, for fsync) on a
            # full disk succeeds, so faulting it tests nothing real.
            faults.discard("enospc")
        if no_change(rec):
            # The call already fails in the recorded run (cp probing
            # whether its target is a directory): the program's success
            # does not rest on it, so an I/O error in its place says
            # nothing about the data. A crash before it is the crash
            # after the call before it, and after it the same again:
            # one crash case for a run of such calls (a loop of close()
            # failing with EBADF), before its first.
            faults &= {"crash"}
            if i and no_change(targeted[i - 1]):
                faults = set()
        sig = coords.signature(rec)
        site = call_site(rec, workdir)
        for kind, plan in fault_plans(coord, faults):
            if kind not in settings.kinds:
                continue
            if no_change(rec) and plan.endswith("=crash-after"):
                continue
            faults_found.append((
                site + (plan.rsplit("#", 1)[1].lstrip("0123456789"),),
                Case(id=f"{pre}-{plan}", combo=pre, kind=kind, plan=plan,
                     call=coord, at=rec["seq"], where=[sig[0], sig[1]],
                     backend=how)))
    found = Found(cases, faults_found, calls=len(targeted))
    if "powerloss" in settings.kinds and run.status == 0:
        points = crash_point_records(out.records)
        real = [realfs.model_of(settings.fs)] if on_real_fs(combo, settings) \
            else []
        every = list(settings.models) + real
        found.models = len(every)
        # a crash point is the state after a call: grouped as the calls
        # are, by site and file; the two ends are points of their own
        for i, rec in enumerate(points):
            if not (rec is None or is_crash_point(rec, workdir, table)):
                continue
            key = ("start",) if rec is None and i == 0 else \
                ("exit",) if rec is None else call_site(rec, workdir)
            tag = "start" if i == 0 else "exit" if rec is None else names[rec]
            per_model = []
            for model in every:
                # a real case's run is aimed at the call as a fault is
                where = list(coords.signature(rec)[:2]) \
                    if model in real and rec is not None else None
                per_model.append(Case(id=f"{pre}-powerloss@{tag}-{model}",
                                      combo=pre, kind="powerloss", call=tag,
                                      model=model, point=i,
                                      at=rec["seq"] if rec is not None
                                      else None,
                                      where=where, backend=how))
            found.points.append((key, per_model))
    return found


def name_models(results, outdir=None):
    """Name in each power-loss result the models under which its crash
    point gives its verdict: its own and those of the same point's cases
    under the sweep's other models ("models" of results.json), in its
    case directory's result.json too (under OUTDIR's parent)."""
    points = {}
    for r in results:
        if r.get("kind") == "powerloss" and r.get("model") and \
                r["id"].endswith("-" + r["model"]) and \
                not realfs.fs_of(r["model"]):
            # a real kernel's verdict is its own: no model speaks for it
            key = r["id"][:-len(r["model"]) - 1]
            points.setdefault(key, []).append(r)
    for group in points.values():
        for r in group:
            named = [m for m in MODELS if any(
                o["model"] == m and o["verdict"] == r["verdict"]
                for o in group)]
            if named == r.get("models"):
                continue
            r["models"] = named
            if r.get("dir") and outdir is not None:
                path = Path(outdir).parent / r["dir"] / "result.json"
                try:
                    with open(path) as fh:
                        saved = json.load(fh)
                    saved["models"] = named
                    with open(path, "w") as fh:
                        json.dump(saved, fh, indent=1, sort_keys=True)
                except (OSError, ValueError):
                    pass        # results.json says it; the directory is aside


def no_change(rec):
    """A call that failed and so changed nothing: no data, no name, and
    no error a later sync would report (a sync that failed with EIO or
    ENOSPC has dropped what it covered, crash-model.md)."""
    ret = rec.get("ret")
    if not (isinstance(ret, int) and ret < 0 and rec.get("errno")):
        return False
    c = calls.table().get(rec["call"])
    return not (c is not None and c.cls == "C_SYNC"
                and trace.errno_name(rec["errno"]) in ("EIO", "ENOSPC",
                                                      "EDQUOT"))


def crash_point_records(records):
    """The record of each of explorer.explore's crash points, in its
    order: None for the one before the first call, each call's record,
    None for the one after exit."""
    recs = sorted((r for r in records if r.get("ev") == "call"),
                  key=lambda r: r["seq"])
    return [None] + recs + [None]


def is_crash_point(rec, workdir, table):
    """Whether the sweep judges a power cut after REC: a call that may
    have changed the work directory (one on a path in it, or a sync),
    not one that failed and so changed nothing, and not one elsewhere,
    after which the states are those of the call before (but a sync of
    any file: under a journal it commits what was logged before it)."""
    if no_change(rec):
        return False
    c = table.get(rec["call"])
    return touches(rec, workdir) or (c is not None and c.cls == "C_SYNC")


def unstable_text(moving, most=4):
    """The finding of a program whose calls two recorded runs made
    otherwise."""
    shown = "; ".join(f"{c}: {a} in one run, {b} in the other"
                      for c, a, b in moving[:most])
    more = f"; and {len(moving) - most} more" if len(moving) > most else ""
    return (f"nondeterministic: two recorded runs made {len(moving)} "
            f"call{'s' if len(moving) != 1 else ''} on the work directory "
            f"otherwise ({shown}{more}); no case is aimed at "
            f"{'them' if len(moving) != 1 else 'it'}")


def escapes(out):
    """Why the baseline OUT left a way out of its scratch: a symbolic
    link in its work directory (the target, most likely) to a file or
    directory outside, which every run would then write through, each
    case's runs on the same file out there, so that one case's writes
    land in another's state and the verdicts vary from run to run; ""
    when none. Such a sweep is refused, not judged."""
    scratch = os.path.realpath(out.scratch)
    todo = [os.fspath(out.workdir)]
    while todo:
        d = todo.pop()
        try:
            with os.scandir(d) as it:
                entries = list(it)
        except OSError:
            continue
        for e in entries:
            if e.is_symlink():
                real = os.path.realpath(e.path)
                if real != scratch and not real.startswith(scratch + "/"):
                    name = _shown(e.path, out)
                    return (f"escapes the scratch: '{name}' is a symbolic "
                            f"link to '{os.readlink(e.path)}', outside "
                            "crashcheck's scratch: every run would write "
                            "through it to the same file there, and no "
                            "case could be judged on its own")
            elif e.is_dir(follow_symlinks=False):
                todo.append(e.path)
    return ""


def call_site(rec, workdir):
    """What groups a call with others (select): where the program made it
    (the trace's "at", the object and offset of the caller, and "up",
    its callers' where the system-call backend recorded them; the call's
    name where the trace has none), the call, and the files it named, as
    paths inside the work directory."""
    def rel(path):
        if path and (path == workdir or path.startswith(workdir + "/")):
            return path[len(workdir) + 1:] or "."
        return path or ""
    return ("|".join(symbols.frames(rec)), rec["call"], rel(rec.get("path")),
            rel(rec.get("path2")))


def select(found, settings, stats=None, models=1):
    """The items of FOUND, a list of (group, item) in trace order, that
    the sweep runs: cases in proportion to what a program does, not to
    how many calls it makes. A program that writes a file one byte at a
    time makes thousands of calls from one call site on one file, and
    every one faulted alike tells little more than a few: of each group
    the first, the last and settings.sample (SAMPLE when None) drawn
    between them with a random.Random seeded by the sweep's seed and the
    group, so the same sweep keeps the same cases. settings.exhaustive
    keeps every item.
    STATS (a dict) counts groups, cases found and kept (MODELS cases per
    item: a crash point is one case per model)."""
    groups = {}
    for i, (key, _) in enumerate(found):
        groups.setdefault(key, []).append(i)
    if settings.exhaustive:
        keep = range(len(found))
    else:
        sample = SAMPLE if settings.sample is None else settings.sample
        keep = set()
        for key, idx in groups.items():
            if len(idx) <= sample + 2:
                keep.update(idx)
                continue
            rng = random.Random(f"{settings.seed}\0" + "\0".join(key))
            keep.update((idx[0], idx[-1]))
            keep.update(rng.sample(idx[1:-1], sample))
        keep = sorted(keep)
    if stats is not None:
        stats["groups"] = stats.get("groups", 0) + len(groups) * models
        stats["cases"] = stats.get("cases", 0) + len(found) * models
        stats["kept"] = stats.get("kept", 0) + len(keep) * models
    return [found[i][1] for i in keep]


# What a trace must show on the work directory for the sweep to see the
# program at work: a call that writes, maps or syncs, renames or unlinks a
# name, or creates or truncates a file.
SEEN_CLASSES = ("C_DATA", "C_SYNC", "C_MAP")
SEEN_NAME_CALLS = ("rename", "renameat", "renameat2", "unlink", "unlinkat",
                   "rmdir", "mkdir", "mkdirat", "link", "linkat", "symlink",
                   "symlinkat")
SEEN_OPEN_FLAGS = ("O_CREAT", "O_TRUNC")


def nothing_intercepted(combo, out, how="preload"):
    """Why the baseline's trace cannot stand for what the program did
    ("nothing intercepted: ..."), or "" when it can. A static binary
    under the preload (no init record: the library never loaded), raw
    system calls under the preload, io_uring or stores through a mapping
    never synced under either change files behind the backend's back: a
    sweep of such a trace has nothing to fault and no writes to lose, and
    would pass for nothing. HOW: the backend that recorded it."""
    if out.run.timed_out or out.run.signal is not None:
        # A program that hangs or dies of a signal before it writes has
        # its own verdict (hang, crashed), which says more than this.
        return ""
    prog = os.path.basename(out.run.argv[0]) if out.run.argv else "the program"
    changed = _changed(combo, out)
    if not any(r["ev"] == "init" for r in out.records):
        if how == "syscall":
            return (f"nothing intercepted: {prog} did not start under the "
                    f"system-call supervisor and {changed}")
        return (f"nothing intercepted: the fault library did not load in "
                f"{prog} (statically linked, or setuid?) and {changed}; "
                "the preload can neither fault nor record it (the "
                "system-call backend can: --backend=syscall or auto)")
    table = calls.table()
    for rec in targeted_calls(out.records, out.workdir):
        c = table.get(rec["call"])
        if (c is not None and c.cls in SEEN_CLASSES
                or rec["call"] in SEEN_NAME_CALLS
                or set(rec.get("flags") or ()) & set(SEEN_OPEN_FLAGS)):
            return ""
    if out.run.status:
        # most likely its own command line: say what it said (issue 30)
        return (f"nothing intercepted: {prog} {FAILED_ALONE} (exit status "
                f"{out.run.status}, no fault planned), its stderr ending: "
                f"{last_line(out.run.stderr_text())}; no write, sync, rename "
                f"or unlink in the work directory was traced "
                f"({len(trace.calls(out.records))} calls in all) and {changed}")
    unseen = ("io_uring or stores through a shared mapping it never syncs, "
              "which the system-call backend cannot see" if how == "syscall"
              else "raw system calls, io_uring or a statically linked "
              "helper, which the preload cannot see (--backend=syscall "
              "sees system calls)")
    return (f"nothing intercepted: no write, sync, rename or unlink in the "
            f"work directory was traced ({len(trace.calls(out.records))} "
            f"calls traced in all) and {changed}: the program writes "
            f"nothing there, or writes with {unseen}")


FAILED_ALONE = "failed on its own"


def last_line(text, width=200):
    """The last line of TEXT that is not blank, cut to WIDTH characters;
    "(nothing)" when there is none."""
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    if not lines:
        return "(nothing)"
    return lines[-1] if len(lines[-1]) <= width else lines[-1][:width] + "..."


def _changed(combo, out):
    """Whether the run changed its target (or its tree), as words."""
    if combo.start is not None:
        same = tree_digest(combo.start) == tree_digest(out.workdir)
        return ("the tree was left as it was" if same
                else "yet the tree changed")
    old, _ = contents(combo)
    path = out.workdir / target_name(combo.spec)
    now = path.read_bytes() if path.is_file() else None
    return ("the target was left as it was" if now == old
            else "yet the target changed")


def tree_digest(top):
    """A content address of the directory TOP: every name under it, its
    kind, and a file's bytes or a link's target (not times or owners:
    what a checker reads). Hex."""
    h = hashlib.blake2b(digest_size=16)
    top = os.fspath(top)
    for root, dirs, files in os.walk(top):
        dirs.sort()
        rel = os.path.relpath(root, top)
        h.update(b"d\0" + os.fsencode(rel) + b"\0")
        for name in sorted(files + [d for d in dirs
                                    if os.path.islink(os.path.join(root, d))]):
            path = os.path.join(root, name)
            h.update(os.fsencode(name) + b"\0")
            if os.path.islink(path):
                h.update(b"l" + os.fsencode(os.readlink(path)) + b"\0")
            elif os.path.isfile(path):
                with open(path, "rb") as fh:
                    fd = hashlib.blake2b(digest_size=16)
                    for chunk in iter(lambda: fh.read(1 << 20), b""):
                        fd.update(chunk)
                h.update(b"f" + fd.digest())
            else:
                h.update(b"o")      # a fifo, a socket: its name alone
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))]
    return h.hexdigest()


def uring_set_up(out):
    """Why a trace in which the program set up an io_uring cannot stand
    for what it did, or "": the I/O it submits through the ring is no
    system call of its own, so it is neither faulted nor traced."""
    for rec in trace.calls(out.records):
        if rec["call"] == "io_uring_setup" and rec.get("ret", -1) >= 0:
            return (f"not seen whole: the program set up an io_uring "
                    f"(io_uring_setup#{rec['n']}); I/O it submits there is "
                    "neither faulted nor traced, so its files may change "
                    "with no call to show it")
    return ""


def point_label(case):
    """A power-loss case's crash point in words, with the coordinate its
    id gives: 'after write(target.tmp)#3', 'before first call'."""
    return {"start": "before first call", "exit": "after exit"}.get(
        case.call, f"after {case.call}")


def skip_reason(run):
    lines = run.stderr_text().strip().splitlines()
    return lines[-1] if lines else "the program exited 77 (not supported here)"


# ---------------------------------------------------------------- execute

def fault_fired(records, plan):
    return any(f.count for f in trace.fired(records, plan_rules(plan)))


def plan_rules(plan):
    return [r for r in plan.split(";") if r] if plan else []


def fault_retried(faulted, calls_after, mapped=frozenset()):
    """Whether every call a fault fired on (of FAULTED, the records
    Outcome.faulted gives) was later made again, on the same file (or the
    same directory), and succeeded: the program saw the error and retried.
    CALLS_AFTER(rec) gives the call records after rec, in seq order. A
    sync is no retry when the file was written again before it, by a call
    or, for a file in MAPPED (inodes mapped shared), possibly by stores
    into the mapping, which make no call: tdb cancelling its transaction
    writes its old pages back through its mapping, then syncs."""
    faulted = [r for r in faulted if r["ev"] == "call" and r.get("fault")]
    if not faulted:
        return False
    family = {"fdatasync": "fsync", "pwrite": "write", "writev": "write",
              "pwritev": "write"}

    def same(a, b):
        # A retry repeats the call on the same file, and a data call the
        # same range: a program that ignores a failed write and goes on
        # to the next chunk is not retrying.
        return (family.get(a["call"], a["call"]) == family.get(b["call"], b["call"])
                and (a.get("ino"), a.get("path")) == (b.get("ino"), b.get("path"))
                and (a.get("off"), a.get("len")) == (b.get("off"), b.get("len")))
    def needles(r):
        # what the line of a retry of R holds, whatever else it does: a
        # program that writes a file in pieces makes many calls after a
        # short write, and none of them is its retry
        return tuple(b'"%s":%d' % (k.encode(), r[k]) for k in
                     ("off", "len", "ino") if type(r.get(k)) is int)
    def retried(r):
        if r["call"] in SYNC_CALLS and r.get("ino") in mapped:
            return False
        for later in calls_after(r, needles(r)):
            if r["call"] in SYNC_CALLS and causes.changes_data(later) and \
                    later.get("ino") == r.get("ino") and later.get("ret", -1) >= 0:
                # written again before it was synced again: a sync of
                # rewritten data (tdb cancelling its transaction puts the
                # old pages back), not a retry of the dropped ones
                return False
            if same(r, later) and later.get("ret", -1) >= 0 and not later.get("fault"):
                return True
        return False
    return all(retried(r) for r in faulted)


def shared_maps(records):
    """The inodes RECORDS show mapped MAP_SHARED: stores into them change
    the file with no call (fault_retried)."""
    return frozenset(r.get("ino") for r in trace.calls(records)
                     if r["call"] in ("mmap", "mmap64") and r.get("ret", -1) != -1
                     and "MAP_SHARED" in (r.get("flags") or ()))


def data_path_hit(faulted, out):
    """The first call a fired fault hit on the data path (causes.
    on_data_path) that touches the scratch directory (the target, its temp
    files, the directory) or is a whole-system sync, or None: a program
    that swallows such an error put its data at risk, or broke the
    discipline of checking errors. A fault that keeps firing ("close#2+=")
    may hit a read-only close first and a written file's close after it:
    the latter decides. The run's whole trace is read for a close (what
    its descriptor was opened for)."""
    for r in trace.calls(faulted):
        if r.get("fault") and touches(r, out.workdir) and causes.on_data_path(
                r, out.records if r["call"] in causes.CLOSE_CALLS
                | causes.STREAM_CALLS else ()):
            return r
    return None


def fault_path(faulted, out, hit=None):
    """The file the faulted call HIT (else the first faulted call) named,
    as the program named it ("target.tmp"), for the finding; None when it
    has none."""
    for r in [hit] if hit is not None else trace.calls(faulted):
        if r.get("fault"):
            path = r.get("path")
            if not path:
                return None
            return trace.short_path(path, str(out.workdir), str(out.scratch))
    return None


def call_names(records):
    """The names of the calls a trace shows the program making, and
    O_SYNC or O_DSYNC when a call carried that flag (its writes are
    durable as they return): what the oracle's advice may speak of."""
    names = set()
    for r in records:
        if r.get("ev") == "call" and "call" in r:
            names.add(r["call"])
            flags = r.get("flags")
            if flags and ("O_SYNC" in flags or "O_DSYNC" in flags):
                names.update(f for f in flags if f in ("O_SYNC", "O_DSYNC"))
    return frozenset(names)


SYNC_CALLS = frozenset(("fsync", "fdatasync", "msync"))
SYNC_ALL = frozenset(("sync", "syncfs"))


def synced_names(records, workdir, after=None):
    """The names (relative to WORKDIR, "." for it) that a call of RECORDS
    after seq AFTER synced successfully: a file's fsync, fdatasync or
    msync, a directory's fsync; "*" for a sync of everything (sync,
    syncfs)."""
    base = str(workdir)
    names = set()
    for r in trace.calls(records):
        if (after is not None and r["seq"] <= after) or r.get("ret", -1) < 0:
            continue
        if r["call"] in SYNC_ALL:
            names.add("*")
        elif r["call"] in SYNC_CALLS and r.get("path") and (
                r["call"] != "msync" or "MS_SYNC" in (r.get("flags") or ())):
            path = r["path"]
            if path == base or path.startswith(base.rstrip("/") + "/"):
                names.add(os.path.relpath(path, base))
    return frozenset(names)


def eintr_possible(faulted, workdir):
    """Whether the EINTR a case injected could have happened where the
    program ran: False when every call it fired on wrote a regular file
    of the work directory (local) while no signal handler lacked
    SA_RESTART (the trace's "intr", faults/trace.c); True when one of
    them says otherwise or the trace does not say."""
    base = str(workdir).rstrip("/") + "/"
    # a full disk's real ENOSPC is marked fault=True (full_disk_hits),
    # a planned fault's record carries its rule
    hits = [r for r in trace.calls(faulted)
            if isinstance(r.get("fault"), dict)
            and r["fault"].get("action") == "EINTR"]
    if not hits:
        return True
    for r in hits:
        if r.get("intr") != [] or r.get("dir") or \
                not str(r.get("path") or "").startswith(base):
            return True
    return False


# The verdicts of a run that claims success before its after-exit crash
# states are judged: those states decide between them and data at risk.
QUIET = ("ok", "ignored-error")


def crash_seq(out):
    """The seq of the call a crash-after fault of OUT's plan stopped the
    program after, or None."""
    return next((r["seq"] for r in out.faulted()
                 if r["ev"] == "call" and r.get("fault")), None)


def records_upto(records, seq):
    """RECORDS (in the trace's order) up to and including the call
    record numbered SEQ; all of them for None."""
    if seq is None:
        return list(records)
    out = []
    for r in records:
        out.append(r)
        if r["ev"] == "call" and r["seq"] == seq:
            break
    return out


def committed_before(judge, combo, out, faulted):
    """Whether the new content was durable before the first faulted call
    of OUT: the durable state of the crash point just before it (the
    first state the explorer builds, crash-model.md's "the durable state
    alone") holds it under every model of the sweep, so the call's failure
    could not lose it (SQLite's checkpoint writes after its commit is in
    the WAL). Judged as the contract asks of a state after success."""
    seq = next((r["seq"] for r in trace.calls(faulted) if r.get("fault")), None)
    if seq is None:
        return False
    # the records before it in the trace's order (a child's init record
    # has seq 0, and its place in the file says when it started)
    prefix = list(itertools.takewhile(
        lambda r: not (r["ev"] == "call" and r["seq"] == seq), out.records))
    if not prefix or prefix[0].get("ev") != "init" or len(prefix) == len(out.records):
        return False
    try:
        points = explorer.explore_exit(
            prefix, out.snapdir, judge.settings.models, target_name(combo.spec),
            cap=judge.settings.cap, seed=judge.settings.seed, exit_ok=True,
            blob_cache=out.blobs)
    except explorer.ExplorerError:
        return False
    old, new = contents(combo)
    for point in points.values():
        durable = point.states[0]
        if combo.spec.contract in ("check", "tree"):
            if not judge.run_checker(combo, durable, True).ok:
                return False
        elif payload.classify(durable.target, old, new) != "new":
            return False
    return True


def backend_of(scratch):
    """(backend, why) of the baseline saved in SCRATCH (save_run);
    ("", "") when none was."""
    try:
        with open(Path(scratch) / "run.json") as fh:
            info = json.load(fh)
    except (OSError, ValueError):
        return "", ""
    return info.get("backend", "preload"), info.get("backend_why", "")


def backends(work, combos_):
    """{workload: {"backend": ..., "why": ...}} of a sweep's baselines
    (one entry per workload and backend: a workload's combos may differ),
    for the reports: which backend ran each program, and why."""
    out = {}
    for combo in combos_:
        how, why = backend_of(Path(work) / combo.prefix)
        if not how:
            continue
        entry = out.setdefault(combo.spec.name, [])
        if not any(e["backend"] == how and e["why"] == why for e in entry):
            entry.append({"backend": how, "why": why})
    return out


def load_run(scratch):
    """A baseline saved by enumerate_cases, as an Outcome."""
    with open(scratch / "run.json") as fh:
        info = json.load(fh)
    run = runner.Run(argv=info["argv"], status=info["status"],
                     signal=info["signal"], timed_out=info["timed_out"],
                     duration=info["duration"],
                     stdout=b"", stderr=info["stderr"].encode(),
                     stdout_size=info.get("stdout_size", 0),
                     stderr_size=info.get("stderr_size", 0),
                     trace_path=scratch / "trace.jsonl",
                     outlived=info.get("outlived", []),
                     outside=info.get("outside", []))
    return Outcome(run=run, scratch=scratch,
                   records=trace.load(scratch / "trace.jsonl"))


GLOBS = "globs.json"


def save_globs(scratch, globs):
    """The globs of the baseline's files whose names change from run to
    run (record_again), beside its run.json: a finding's defect is named
    by them (causes.describe)."""
    with open(Path(scratch) / GLOBS, "w") as fh:
        json.dump(globs, fh)


def load_globs(scratch):
    try:
        with open(Path(scratch) / GLOBS) as fh:
            globs = json.load(fh)
    except (OSError, ValueError):
        return {}
    return globs if isinstance(globs, dict) else {}


UNSEEN = "unseen.json"


def save_unseen(out):
    """What in the baseline run's tree changed by calls the trace does not
    show (explorer.unseen), beside its run.json: the power-loss cases and
    the fault cases judge what the trace shows, so the report must say
    what it did not."""
    with open(out.scratch / UNSEEN, "w") as fh:
        json.dump(unseen_of(out), fh)


def load_unseen(scratch):
    try:
        with open(Path(scratch) / UNSEEN) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return []


def unseen_text(u):
    """One line for an unseen change."""
    what = "changed" if u["what"] == "content" else "appeared, went or " \
        "changed as a name"
    where = "after the program exited" if u["at"] == "exit" else \
        f"seen at {u['at']}"
    return (f"'{u['path']}' {what} by a call crashcheck cannot see "
            f"({where}): no fault reached it, and no power cut was "
            f"simulated where it happened")


def save_run(out, how="preload", why=""):
    r = out.run
    info = {"argv": r.argv, "status": r.status, "signal": r.signal,
            "timed_out": r.timed_out, "duration": r.duration,
            "stderr": r.stderr_text(), "outlived": r.outlived,
            "outside": r.outside,
            # what it wrote in all (the text above keeps OUTPUT_CAP bytes)
            "stdout_size": r.stdout_size, "stderr_size": r.stderr_size,
            "backend": how, "backend_why": why}
    with open(out.scratch / "run.json", "w") as fh:
        json.dump(info, fh)


class Judge:
    """Executes and judges cases for one sweep; one per pytest process.
    Explored crash states of a baseline are cached: the power-loss cases
    of one combo and model share one exploration."""

    def __init__(self, specs, settings):
        self.settings = settings
        self.combos = {c.prefix: c for c in combos(specs)}
        self._explored = {}
        # combo prefix -> its baseline's call names; ("rename", prefix) ->
        # the seq of its first rename over the target
        self._calls = {}
        self._globs = {}            # combo prefix -> its baseline's globs
        self.hold = False           # keep the last case's scratch (replay)
        self._work = None
        # Where fault cases run, one scratch reused case after case (the
        # caller removes the root at the end); None: a fresh one per case.
        self.scratch_root = None
        self._scratch = self._scratch_combo = None
        self._server = self._server_key = None    # key: its backend, command line
        self._unservable = set()    # keys that cannot be served
        # _lite_key -> [lite or thin runs that stood, that did not]
        self._lite = {}
        self.last_states, self.last_out, self.last_scratch = [], None, None
        self._checks = None
        # combo prefix -> the indices of its crash points that power-loss
        # cases judge (the others need no states); a combo not here: all
        self.points = {}

    def want_points(self, cases):
        """Build crash states only at the points of CASES' power-loss
        cases (select may have left most out)."""
        self.points = {}
        for c in cases:
            if c.kind == "powerloss":
                self.points.setdefault(c.combo, set()).add(c.point)

    # ---- helpers
    @property
    def work(self):
        """settings.work, resolved once (it is a link into scratch), on
        first use: after the enumeration made it."""
        if self._work is None:
            self._work = self.settings.work
        return self._work

    def contract(self, combo):
        return combo.spec.contract

    def sector(self, combo):
        """Bytes the storage writes atomically for COMBO's power cuts:
        --sector, else the spec's own."""
        return self.settings.sector or combo.spec.sector

    @property
    def checks(self):
        """The sweep's CheckCache, in its work directory (made on first
        use: after the enumeration made the directory)."""
        if self._checks is None:
            self._checks = CheckCache(self.work / CHECKS_DIR)
        return self._checks

    def explore(self, out, model, exit_ok, target=TARGET, sector=4096,
                points=None):
        return explorer.explore(out.records, out.snapdir, model, target,
                                cap=self.settings.cap, seed=self.settings.seed,
                                exit_ok=exit_ok, blob_cache=out.blobs,
                                sector=sector, points=points)

    def baseline_points(self, combo, model):
        key = (combo.prefix, model)
        if key not in self._explored:
            out = load_run(self.work / combo.prefix)
            self._explored[key] = (out, self.explore(
                out, model, out.run.status == 0, target_name(combo.spec),
                self.sector(combo), self.points.get(combo.prefix)))
        return self._explored[key]

    def baseline_calls(self, combo, out):
        """call_names() of a combo's baseline, once per process."""
        calls = self._calls.get(combo.prefix)
        if calls is None:
            calls = self._calls[combo.prefix] = call_names(out.records)
        return calls

    def baseline_at_risk(self, combo):
        """Whether the combo's baseline (no fault) exited 0 and yet left an
        after-exit crash state without the new content, under a model of
        the sweep; once per process."""
        key = ("at-risk", combo.prefix)
        if key not in self._calls:
            out = load_run(self.work / combo.prefix)
            risk = False
            if out.run.status == 0:
                exits = explorer.explore_exit(
                    out.records, out.snapdir, self.settings.models,
                    target_name(combo.spec), cap=self.settings.cap,
                    seed=self.settings.seed, exit_ok=True, blob_cache=out.blobs)
                old, new = contents(combo)
                held = self.last_states
                for m in self.settings.models:
                    states = self.states(combo, [exits[m]], only_after_exit=True)
                    v = oracle.judge(oracle.Outcome(
                        contract=combo.spec.contract, old=old, new=new,
                        status=0, crash_states=states, target_name=target_name(combo.spec),
                        **self.visible(combo, out)))
                    if v.verdict != "ok":
                        risk = True
                        break
                self.last_states = held
            self._calls[key] = risk
        return self._calls[key]

    def first_rename(self, combo, out):
        """(seq of the first rename over the target, seq of the first
        rename or unlink of the target's own entry) in a combo's baseline
        OUT, each None when there is none; once per process."""
        key = ("rename", combo.prefix)
        if key not in self._calls:
            name, base = target_name(combo.spec), str(out.workdir)
            over = away = None
            for r in trace.calls(out.records):
                call = r.get("call")
                if r.get("ret", -1) < 0:
                    continue
                if call in causes.RENAME_CALLS and over is None and \
                        causes.named(r.get("path2"), name, base):
                    over = r["seq"]
                if (call in causes.RENAME_CALLS or call in causes.UNLINK_CALLS) \
                        and away is None and causes.named(r.get("path"), name, base):
                    away = r["seq"]
            self._calls[key] = (over, away)
        return self._calls[key]

    def states(self, combo, points, only_after_exit=False, label=None):
        """Crash states as the oracle wants them, with a checker verdict
        per state for checker contracts. LABEL: the crash point's words,
        instead of the explorer's."""
        out = []
        for p in points:
            if only_after_exit and p.label != "after exit":
                continue
            for st in p.states:
                # A copy: explorations are cached, and the label we give
                # names the crash point too ("after rename#1, state 3").
                st = st.copy()
                st.label = f"{label or p.label}, {st.label}"
                st.claimed = p.claimed
                if combo.spec.contract in ("check", "tree"):
                    st.check = self.run_checker(combo, st, p.claimed)
                out.append(st)
        self.last_states = out
        return out

    def run_checker(self, combo, state, claimed):
        """The checker's answer for a crash state, run once per distinct
        state (CheckCache): the same files give the same answer, at any
        crash point, in any case of the combo."""
        expect = "new" if claimed else "old-or-new"
        key = ("s", state.digest())
        hit = self.checks.get(combo, key, expect)
        if hit is not None:
            return hit
        with self.checks.claim(combo, key, expect):
            # judged by another process while this one waited
            hit = self.checks.get(combo, key, expect)
            if hit is not None:
                return hit
            server = self.check_server(combo)
            if server is None and self.scratch_root is not None:
                # one directory per process, changed state to state (a
                # server's states each get a new one: a server keeps
                # running, and must not meet a directory it has seen)
                res = self.check(combo, statedir.in_root(
                    self.scratch_root).lay(state), expect, cache=False)
            else:
                scratch = self.state_dir(server)
                try:
                    explorer.layout(state, scratch)
                    if server is None:
                        res = self.check(combo, scratch, expect, cache=False)
                    else:
                        res = self.served_check(combo, server, state,
                                                scratch, expect)
                finally:
                    shutil.rmtree(scratch, ignore_errors=True)
            self.checks.put(combo, key, expect, res)
        return res

    def state_dir(self, server=None):
        """A new directory to lay a crash state out in: in the server's
        own directory (the one its confinement lets it change)."""
        if server is not None:
            return Path(tempfile.mkdtemp(prefix="state-", dir=server.states))
        if self.scratch_root is not None:
            return Path(tempfile.mkdtemp(prefix="state-",
                                         dir=self.scratch_root))
        return runner.make_scratch("crashcheck-state-")

    def check_server(self, combo):
        """This process's checkserver.CheckServer of the combo's spec, or
        None (the spec has none)."""
        spec = combo.spec
        if spec.check_server is None:
            return None
        argv = spec.check_server_argv(bin=BIN, target=target_name(spec),
                                      new=f"../{INPUT}/{NEW}",
                                      strategy=combo.strategy)
        env = dict(os.environ)
        for name in (*runner.OUR_VARS, "CRASHCHECK_EXPECT"):
            env.pop(name, None)
        return checkserver.server(argv, env)

    def served_check(self, combo, server, state, directory, expect):
        """The check_server's answer for a crash state laid out in
        DIRECTORY. The first state a server answers, and one in
        SERVER_AUDIT_EVERY after it (by content, so the same ones in
        every run), are asked of check too, in a copy of the state of
        their own: a server whose answer differs (accepts where check
        refuses, or says another first line: it kept something from an
        earlier state) cannot be trusted with the case."""
        limit = timeout_of(combo, self.settings)
        try:
            status, output = server.ask(directory, expect, limit)
        except checkserver.ServerFailed as e:
            raise CheckerFailed(e.reason, server.argv, e.output) from None
        res = oracle.CheckResult(status=status, output=output, expect=expect)
        digest = state.digest()
        if not server.audited or \
                int(digest[:8], 16) % SERVER_AUDIT_EVERY == 0:
            server.audited = True
            again_dir = self.state_dir()
            try:
                explorer.layout(state, again_dir)
                again = self.check(combo, again_dir, expect, cache=False)
            finally:
                shutil.rmtree(again_dir, ignore_errors=True)
            if again.status != status or \
                    _first_line(again.output) != _first_line(output):
                raise CheckerFailed(
                    "check_server answered otherwise than check on the same "
                    f"state: the server {_answer_text(status, output)}, "
                    f"check {_answer_text(again.status, again.output)}",
                    server.argv, "")
        return res

    def check(self, combo, directory, expect, cache=True):
        """The checker's answer for DIRECTORY (a run's work directory),
        with CRASHCHECK_EXPECT=EXPECT; once per distinct content of the
        directory (tree_digest), unless not cache (a crash state's own
        directory). One checker at a time in a run's directory: the
        power-loss cases of one combo, each under its model in its own
        worker, check the baseline's, and a checker that locks its
        database (LevelDB's LOCK) fails beside another. The lock file
        lies beside the directory, in the run's scratch."""
        if not cache:
            return self._check(combo, directory, expect, cache)
        with open(Path(directory).parent / (Path(directory).name
                                            + ".check-lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            return self._check(combo, directory, expect, cache)

    def _check(self, combo, directory, expect, cache):
        key = None
        if cache:
            key = ("d", tree_digest(directory))
            hit = self.checks.get(combo, key, expect)
            if hit is not None:
                return hit
        argv = combo.spec.check_argv(bin=BIN,
                                     target=target_name(combo.spec),
                                     new=f"../{INPUT}/{NEW}",
                                     strategy=combo.strategy)
        env = dict(os.environ, CRASHCHECK_EXPECT=expect)
        limit = timeout_of(combo, self.settings)
        for name in runner.OUR_VARS:
            env.pop(name, None)
        # confined like the program: what it writes outside the state's
        # directory is thrown away
        run = runner.run(argv, cwd=directory, env=env, preload=False,
                         timeout=limit, confine=[directory])
        text = (run.stdout + run.stderr).decode("utf-8", "replace")
        # A checker that cannot answer says nothing about the state: the
        # case cannot be judged (never torn or lost-update for it), and
        # no answer is kept
        if run.timed_out:
            raise CheckerFailed(f"checker timed out after {limit:g} s",
                                argv, text)
        if run.signal is not None:
            raise CheckerFailed("checker was killed by "
                                + _signal_name(run.signal), argv, text)
        if run.outlived:
            raise CheckerFailed("a process the checker started outlived it: "
                                + ", ".join(run.outlived), argv, text)
        res = oracle.CheckResult(status=run.status, output=text, expect=expect)
        if key is not None:
            self.checks.put(combo, key, expect, res)
        return res

    # ---- the case
    def execute(self, case):
        """Run and judge one case; its results.json entry. With `hold`
        set, the case's scratch directory is kept in last_scratch (and
        the crash states judged in last_states) for `crashcheck replay`.
        A checker that cannot answer makes the case a harness-error."""
        try:
            return self._execute(case)
        except CheckerFailed as e:
            return self.failed(case, e.reason, e.detail())
        except realfs.RealFsError as e:
            return self.failed(case, f"the real {self.settings.fs} "
                               f"filesystem: {e}")
        except ScratchFull as e:
            return self.result(case, self.combos[case.combo], oracle.Verdict(
                "harness-error", str(e), SCRATCH_WHY), None, states=0)

    def failed(self, case, reason, detail=""):
        """The result of a case that could not be judged: harness-error,
        with REASON (one line) and DETAIL (a traceback, a checker's
        output)."""
        combo = self.combos[case.combo]
        explanation = (
            "crashcheck could not judge this case: " + reason + ". This "
            "says nothing about the program and is never a pass.")
        if detail:
            explanation += " Details: " + " ".join(detail.split())[-1500:]
        return self.result(case, combo, oracle.Verdict(
            "harness-error", reason, explanation), None, states=0)

    def _execute(self, case):
        self.last_states, self.last_out, self.last_scratch = [], None, None
        combo = self.combos[case.combo]
        if combo.start is None:
            start_tree(combo, self.work)
        old, new = contents(combo)
        base = dict(contract=combo.spec.contract, old=old, new=new,
                    kind=case.kind,
                    plan=FULL_DISK if case.disk == "full" else case.plan,
                    require_message=combo.spec.path.parent == SPEC_DIR)
        if case.skip:
            verdict = oracle.judge(oracle.Outcome(skip=case.skip, **base))
            return self.result(case, combo, verdict, None, states=0)
        if case.error and case.error.startswith("the baseline could not"):
            return self.failed(case, case.error)
        if case.error:
            out = load_run(self.work / combo.prefix)
            verdict = oracle.Verdict("harness-error", case.error, (
                SCRATCH_WHY if case.error.startswith("crashcheck's scratch")
                else tracecut.CUT_WHY if case.error.startswith(tracecut.PREFIX)
                else ESCAPE_WHY if case.error.startswith("escapes the scratch")
                else FAILED_ALONE_WHY if FAILED_ALONE in case.error
                else
                "The baseline run's trace does not show what the program "
                "did to its files, so no fault could reach it and no power "
                "cut could be simulated: this says nothing about the "
                "program and is never a pass. The preload sees calls made "
                "through the dynamic C library, the system-call backend "
                "(--backend=syscall) the system calls of any program, "
                "neither I/O through io_uring (faults/CALLS.md; README, "
                "What crashcheck sees)."))
            return self.result(case, combo, verdict, out, states=0)
        if case.unstable:
            out = load_run(self.work / combo.prefix)
            self.last_out = out
            verdict = oracle.Verdict("harness-error", case.unstable, (
                "The program was run twice with the same inputs and made "
                "its calls on the work directory otherwise the second "
                "time: its threads or processes race, or it reads the "
                "clock or random numbers. A fault case is aimed at a call "
                "by the file it is on and its number among that file's "
                "calls (write(target.tmp)#3); at these calls it could hit "
                "another than the one planned, so none is aimed there, "
                "and this is never a pass. The other cases stand: each "
                "checks that its fault hit the call it was aimed at."))
            return self.result(case, combo, verdict, out, states=0)
        if case.kind == "powerloss" and realfs.fs_of(case.model):
            return self.real_powerloss(case, combo, base)
        if case.kind == "powerloss":
            out, points = self.baseline_points(combo, case.model)
            self.last_out = out
            if outlived(out.run):
                # the trace may lack the late writes of what outlived it
                return self.result(case, combo, outlived_verdict(out.run),
                                   out, states=0, keep=False)
            point = points[case.point]
            st = self.states(combo, [point], label=point_label(case))
            renamed, removed = self.first_rename(combo, out)
            verdict = oracle.judge(oracle.Outcome(
                status=out.run.status, crash_states=st, **self.visible(combo, out),
                target_name=target_name(combo.spec),
                target_renamed=renamed is not None and renamed <= point.seq,
                target_removed=removed is not None and removed <= point.seq,
                calls=self.baseline_calls(combo, out),
                order=causes.History(out.records, str(out.workdir), point.seq),
                synced_after=frozenset(
                    name for seq, name in self.baseline_sync_seqs(combo, out)
                    if seq > point.seq), **base))
            return self.result(case, combo, verdict, out, states=len(st),
                                keep=False, upto=point.seq)
        if case.kind == "baseline":
            out = load_run(self.work / combo.prefix)
            self.last_out = out
            return self.judge_run(case, combo, out, base, keep=False)
        scratch, reuse = self.scratch_for(combo, case)
        ok = False
        try:
            start = self.lite_from(case, combo)
            full = self.thin_window(case, combo) if start is None else None
            try:
                out = self.run_case(case, combo, scratch, reuse, start, full)
                self.last_out = out
                res = self.judge_recorded(case, combo, out, base)
                if start is not None or full is not None:
                    self.lite_count(case, combo, res is not None)
                if res is None:
                    # the lite or thin run cannot stand for a whole one:
                    # once more, every call recorded
                    out = self.run_case(case, combo, scratch, True, None, None)
                    self.last_out = out
                    res = self.judge_recorded(case, combo, out, base)
            except ScratchFull as e:
                # its scratch goes (ok stays False): room for the next
                return self.result(case, combo, oracle.Verdict(
                    "harness-error", str(e), SCRATCH_WHY), None, states=0)
            ok = True
            return res
        finally:
            if self.hold:
                self.last_scratch = scratch
            elif not ok or scratch != self._scratch:
                shutil.rmtree(scratch, ignore_errors=True)
                if scratch == self._scratch:
                    self._scratch = self._scratch_combo = None
                    self.close_server()     # it started in what is gone

    def real_powerloss(self, case, combo, base):
        """A power-loss case judged on the real kernel (--fs): the program
        runs on a fresh copy of the combo's image, killed right after the
        call of its crash point (the plan language's crash-after, as a
        crash case is), or not run at all for the point before its first
        call, or left to exit for the one after; the filesystem is then
        cut off from its disk, and mounted again (realfs.Disk.crash). The
        tree it holds is judged as a model's crash state is. Twice: as
        the kernel left it, and after another file of the filesystem was
        fsynced (REAL_PUSHES): ext4's and XFS's one journal commits then,
        which is how another process's fsync shows what reached the disk
        in which order."""
        fs = realfs.fs_of(case.model)
        baseline = load_run(self.work / combo.prefix)
        self.last_out = baseline
        if outlived(baseline.run):
            return self.result(case, combo, outlived_verdict(baseline.run),
                               baseline, states=0, keep=False)
        if self.settings.fs != fs:
            return self.failed(case, f"a case of the real {fs} kernel, in a "
                               f"sweep on {self.settings.fs or 'no real filesystem'}"
                               f" (--fs {fs})")
        plan = None if case.call == "start" else "" if case.call == "exit" \
            else f"{case.call}=crash-after"
        # before the first call nothing is pending: one state
        pushes = REAL_PUSHES[:1] if plan is None else REAL_PUSHES
        states, out = [], None
        for words, push in pushes:
            scratch = (Path(tempfile.mkdtemp(prefix="real-", dir=self.scratch_root))
                       if self.scratch_root is not None and not self.hold
                       else runner.make_scratch())
            try:
                try:
                    # traced, without snapshots: the recorder reads no
                    # file of the program's (a read-back's close is an
                    # ext4 release, which takes auto_da_alloc's flush
                    # from the program's own close)
                    out = execute_run(combo, plan, scratch,
                                      timeout_of(combo, self.settings),
                                      record=False, settings=self.settings,
                                      backend=case.backend, crash=True,
                                      before_crash=push)
                except ScratchFull as e:
                    return self.result(case, combo, oracle.Verdict(
                        "harness-error", str(e), SCRATCH_WHY), None, states=0)
                self.last_out = out
                run = out.run
                problem = ""
                if run.timed_out:
                    problem = (f"the run on {fs} timed out before its crash "
                               "point")
                elif plan and crash_seq(out) is None:
                    problem = (f"the run on {fs} never reached {case.call}: "
                               f"the program made its calls otherwise than "
                               f"in its baseline (exit status {run.status}, "
                               f"signal {run.signal})")
                elif plan and aimed_astray(case, out.faulted()):
                    problem = aimed_astray(case, out.faulted())
                elif plan == "" and run.status != 0:
                    problem = (f"the run on {fs} exited {run.status} (signal "
                               f"{run.signal}) where its baseline exited 0")
                if problem:
                    return self.result(case, combo, oracle.Verdict(
                        "harness-error", problem, REAL_ASTRAY_WHY), out,
                        states=0, keep=True)
                states.append(self.real_state(case, combo, out, baseline,
                                              fs, words))
            finally:
                if self.hold and push is pushes[-1][1]:
                    self.last_scratch = scratch
                else:
                    shutil.rmtree(scratch, ignore_errors=True)
        states = self.states_of(combo, states, claimed=plan == "")
        renamed, removed = self.first_rename(combo, baseline)
        upto = case.at if case.at is not None else (
            -1 if plan is None else float("inf"))
        verdict = oracle.judge(oracle.Outcome(
            status=baseline.run.status, crash_states=states,
            **self.visible(combo, baseline),
            target_name=target_name(combo.spec),
            target_renamed=renamed is not None and renamed <= upto,
            target_removed=removed is not None and removed <= upto,
            calls=self.baseline_calls(combo, baseline), **base))
        return self.result(case, combo, verdict, out, states=len(states),
                           keep=True, upto=case.at)

    def states_of(self, combo, states, claimed):
        """STATES, real crash states, as states() gives a model's:
        claimed, and with the checker's answer for a checker contract."""
        for st in states:
            st.claimed = claimed
            if combo.spec.contract in ("check", "tree"):
                st.check = self.run_checker(combo, st, claimed)
        self.last_states = list(states)
        return self.last_states

    def real_state(self, case, combo, out, baseline, fs, words=""):
        """The realfs.RealState of a crashed run OUT (WORDS: how the
        kernel was pushed before the crash, for its label). What
        persisted and what did not, and the rule broken, are those of
        the state of the filesystem's model that is the same tree, at
        the same point of the BASELINE's trace (the program exited
        there, or was killed: either way the kernel closed what it left
        open; and the fsync of another file, when one was made), when
        the explorer gives one (realfs.COMPANION names the model); else
        what differs from what a read saw."""
        seen, (files, dirs, links) = out.real
        label = f"{point_label(case)}, the real {fs} state{words}"
        name = target_name(combo.spec)
        key = realfs.tree_key(files, dirs, links)
        model = realfs.companion(fs, explorer.MODELS)
        match = None
        if case.call != "start":
            records = records_upto(baseline.records, case.at)
            if out.before_crash is not None:
                records = realfs.with_sync_record(records, out.before_crash)
            try:
                point = explorer.explore_exit(
                    records, baseline.snapdir, (model,), name,
                    cap=self.settings.cap, seed=self.settings.seed,
                    exit_ok=False, blob_cache=baseline.blobs)[model]
                match = next((m for m in point.states if realfs.tree_key(
                    m.files, m.dirs, m.links) == key), None)
            except (explorer.ExplorerError, trace.TraceError):
                match = None
        if match is not None:
            return realfs.RealState(label, files, dirs, links, name,
                                    match.why, match.rule, match.persisted,
                                    match.lost)
        return realfs.RealState(label, files, dirs, links, name,
                                realfs.differences(seen, (files, dirs, links)))

    def judge_recorded(self, case, combo, out, base):
        """judge_run, but a run the library stopped for crashcheck's own
        scratch (scratch_trouble) is the harness's harness-error, and a
        file past the scratch limit is never read (ScratchFull)."""
        trouble = scratch_trouble(out, combo)
        if trouble:
            return self.result(case, combo, oracle.Verdict(
                "harness-error", trouble, SCRATCH_WHY), out, states=0,
                keep=True)
        trouble = tracecut.trouble(out)
        if trouble:
            return self.result(case, combo, oracle.Verdict(
                "harness-error", trouble, tracecut.CUT_WHY), out, states=0,
                keep=True)
        return self.judge_run(case, combo, out, base, keep=True)

    def case_seconds(self, combo):
        """A fault case's time limit: timelimit.MULTIPLE times its
        baseline's duration, never below timeout_of (the floor); once
        per process."""
        key = ("limit", combo.prefix)
        if key not in self._calls:
            floor = timeout_of(combo, self.settings)
            try:
                with open(self.work / combo.prefix / "run.json") as fh:
                    took = float(json.load(fh)["duration"])
            except (OSError, ValueError, KeyError, TypeError):
                took = 0.0
            self._calls[key] = max(floor, timelimit.MULTIPLE * took)
        return self._calls[key]

    def run_case(self, case, combo, scratch, reuse, trace_from, trace_full):
        """Execute a fault case's run in SCRATCH, forked from the combo's
        server where it has one (execute_run)."""
        server = self.server_for(combo, scratch, case.backend)
        try:
            return execute_run(combo, case.plan, scratch,
                               self.case_seconds(combo),
                               reuse_input=reuse, server=server,
                               trace_from=trace_from, trace_full=trace_full,
                               settings=self.settings, backend=case.backend,
                               full_disk=case.disk == "full")
        except runner.ServerUnavailable:
            # gone under this run: it runs again, exec'd, and so do the
            # next ones of its command line
            self.close_server(refuse=True)
            return execute_run(combo, case.plan, scratch,
                               self.case_seconds(combo),
                               reuse_input=True, trace_from=trace_from,
                               trace_full=trace_full, settings=self.settings,
                               backend=case.backend)

    def lite_from(self, case, combo):
        """The seq a lite run of CASE starts its trace at, or None for a
        run that records every call.

        A case whose program stops at its fault, with an error or killed,
        is judged from its exit, its files and the calls the fault fired
        on: the calls before the fault, which the program makes as its
        baseline did, are recorded for nothing, and recording them cost
        most of a long run, and the snapshots, which only the crash
        states of a run that exits 0 are built from, an eighth to a fifth
        of a short run's case.
        Such a run records from where the baseline made the faulted call,
        and takes no snapshots; the library still gives every call its
        seq, and writes the line of any call a fault fired on
        (faults/trace.c, CRASHCHECK_TRACE_FROM). judge_run accepts it
        only when that is all it needs; else the case runs again,
        recorded whole. Kinds in LITE_KINDS are those whose programs
        mostly stop; where the lite runs of one group of cases
        (_lite_key) keep being run again, its cases are whole from then
        on."""
        if not self.may_run_part(case, LITE_KINDS):
            return None
        if case.at <= PERSIST_WHOLE_WITHIN and _persists(case):
            # A fault that keeps firing can keep a program retrying until
            # its timeout, its trace growing all the while: without the
            # recorder's snapshots each retry is cheaper, and the trace
            # that much longer to read (write-enospc-spin: 1274256
            # lines in 2 s against 281879, 37.5 s of sweep against 10.6).
            # Far into a run the trace's start saves more than that
            # costs; near its start it does not.
            return None
        if self.rerun_often(case, combo):
            return None
        return case.at

    def may_run_part(self, case, kinds):
        """Whether CASE, of one of KINDS, may run lite or thin first: not
        with --whole-traces, --keep or for replay (which show every call
        in full), and only where its baseline made the faulted call
        (Case.at)."""
        return (self.settings.lite and not self.hold and not self.settings.keep
                and case.kind in kinds and case.at is not None)

    def thin_window(self, case, combo):
        """The seqs (lo, hi) a thin run of CASE records in full, or None
        for a run that records every write in full.

        A case whose program is expected to get past its fault (THIN_KINDS:
        an EINTR, a short write) and claim success is judged from its
        whole trace: its after-exit crash states are replayed from every
        call. The writes that a later fsync snapshots whole are moot there
        (trace.Lazy.for_exit) and go unread, yet recording each (its
        offset, and a range snapshot: the fstat after it and the bytes
        read back) cost three of the five system calls the recorder
        makes for a write.
        Such a run records every write thin that it may (faults/trace.c,
        CRASHCHECK_TRACE_FULL): the file, its flags and what the call
        returned. The faulted call, which a rule chooses, never is.
        judge_run accepts it only where no thin line is read; else the
        case runs again, recorded whole, and where the thin runs of one
        group of cases (_lite_key) keep being run again, its cases are
        whole from then on."""
        if not self.may_run_part(case, THIN_KINDS) or \
                self.rerun_often(case, combo):
            return None
        # the faulted call's seq in the baseline: full, as it is anyway
        return case.at, case.at

    def rerun_often(self, case, combo):
        """Whether the lite or thin runs of CASE's group (_lite_key) ran
        again more often than they stood, twice at least."""
        stood, missed = self._lite.get(_lite_key(case, combo), (0, 0))
        return missed >= 2 and missed > stood

    def lite_count(self, case, combo, stood):
        """Count a lite or thin run of CASE that STOOD, or that ran
        again."""
        counts = self._lite.setdefault(_lite_key(case, combo), [0, 0])
        counts[0 if stood else 1] += 1

    def scratch_for(self, combo, case=None):
        """(scratch directory, reuse_input) for a fault case: ROOT/<the
        combo's prefix>, under a root whose path is as long as the work
        directory's (scratch_root and this process's directory in it; a
        held case's HELD beside the work directory), so the program
        works in a directory as long as its baseline's: one that writes
        its working directory into a file (logrotate) writes as many
        bytes as it did there. One scratch is
        used case after case under scratch_root: a run of the combo
        before left the input, and the rest is emptied (runs are short;
        making and removing the tree cost as much as a run). For another
        combo it is emptied whole and renamed, but stays the same
        directory, WORK included: a fork server of the same command line
        started there. A held case (replay), a spec's disk=full case: a
        fresh directory, removed after; with no scratch_root, one of its
        own."""
        if self.hold:
            root = self.work.parent / HELD
            root.mkdir(exist_ok=True)
            return _fresh_dir(root / combo.prefix), False
        if self.scratch_root is None:
            return runner.make_scratch(), False
        # the pool's processes share the root: a directory each, its pid
        # (at most 7 digits: Linux's pid_max)
        mine = Path(self.scratch_root) / f"{os.getpid():07d}"
        mine.mkdir(exist_ok=True)
        mine = mine / combo.prefix
        if case is not None and case.disk == "full":
            if self._scratch == mine:
                # the combo's reused scratch is where this case goes: it
                # starts afresh, and so does the next case of the combo
                self.close_server()
                self._scratch = self._scratch_combo = None
            # under the root too: removed with it should this process die
            return _fresh_dir(mine), False
        if self._scratch is not None and self._scratch.is_dir():
            if self._scratch_combo == combo.prefix:
                return self._scratch, True
            try:
                _empty_scratch(self._scratch)
                if self._scratch != mine:
                    os.rename(self._scratch, mine)
                    self._scratch = mine
                self._scratch_combo = combo.prefix
                return self._scratch, False
            except OSError:
                shutil.rmtree(self._scratch, ignore_errors=True)
                self.close_server()     # it started in what is gone
        self._scratch = _fresh_dir(mine)
        self._scratch_combo = combo.prefix
        return self._scratch, False

    def server_for(self, combo, scratch, backend="preload"):
        """The fork server of the combo's command line and backend in this
        process (runner.ForkServer), started on its first case here and
        kept for the next combos of the same command line (a spec's
        sizes), started again if it ended after a run; None where the
        case is exec'd: --exec-each, a held case (replay runs the real
        thing), a FULL_DISK case, a fresh scratch per case, or a program
        that cannot be served."""
        # scratch_for gives the others (held, full disk) a fresh scratch
        if not self.settings.fork_server or scratch != self._scratch:
            return None
        key = (backend, *argv_of(combo))
        if self._server_key == key and (self._server is None or
                                        not self._server.closed):
            return self._server
        self.close_server()
        self._server_key = key
        if key in self._unservable:
            return None
        # It starts where its runs work, as an exec'd run does: a library
        # may note the directory it was loaded in.
        work = Path(scratch) / WORK
        work.mkdir(exist_ok=True)
        try:
            self._server = runner.ForkServer(
                key[1:], home=work, timeout=timeout_of(combo, self.settings),
                backend=backend)
        except (runner.ServerUnavailable, runner.SetupError,
                subprocess.TimeoutExpired):
            # exec'd instead, where a SetupError is the case's to report.
            # A program our library never reached ran once, as itself,
            # in the case's directory: the case lays it out afresh.
            self._unservable.add(key)
            self._server = None
            clear_dir(scratch)
        return self._server

    def close_servers(self):
        """End this process's fork server and checker servers (the end
        of a sweep, or of a pool's worker)."""
        self.close_server()
        checkserver.close_all()

    def close_server(self, refuse=False):
        """Stop this process's fork server; refuse: the next cases of its
        command line are exec'd."""
        if refuse and self._server_key is not None:
            self._unservable.add(self._server_key)
        if self._server is not None:
            self._server.close()
        self._server = self._server_key = None

    def visible(self, combo, out):
        name = target_name(combo.spec)
        path = out.workdir / name if name is not None else None
        target = None
        if path is not None and path.is_file():
            # a run without snapshots (lite) is not held to the limit by
            # the library: the harness reads no file past it either
            size = path.stat().st_size
            limit = self.settings.scratch_limit
            if limit is not None and size > limit:
                raise ScratchFull(
                    f"crashcheck's scratch limit: '{path.name}' is "
                    f"{size_text(size)}, more than the {size_text(limit)} a "
                    "run may take (--scratch-limit)")
            target = path.read_bytes()
        vis = {"target": target}
        if combo.spec.contract in ("check", "tree"):
            vis["check"] = self.check(combo, out.workdir, "new"
                                      if out.run.status == 0 else "old-or-new")
        return vis

    def judge_run(self, case, combo, out, base, keep):
        """The case's result from its run OUT; None for a lite run that
        cannot stand for a whole one (Judge.lite_from): a finding (its
        directory and excerpt show the whole trace), a run that claims
        success (its retries and after-exit states are read from the
        whole trace), or one whose fault did not fire where the baseline
        made the faulted call (its calls before it were not the
        baseline's; a fault before the trace's start is such a one). A
        lite run that timed out stands: it would only time out again.
        Likewise a thin run (Judge.thin_window) that cannot stand for a
        whole one: a finding (but for one that timed out with no thin
        line in its excerpt), an after-exit replay that would read a thin
        line, or a write that its whole run may have recorded otherwise
        (thin_unread)."""
        run = out.run
        # The faulted calls and the crashes say whether the fault fired,
        # where, and whether we killed the program; the rest of a trace is
        # read only for a run that claims success (a retried call, its
        # after-exit crash states).
        faulted = out.faulted()
        full = case.disk == "full"
        if full:
            # no rule fires on a real full disk: the calls it failed are
            # the faulted ones, and a store it killed the program for
            faulted = full_disk_hits(out)
        lite = out.trace_from is not None and not run.timed_out
        has_thin = out.has_thin
        thin = has_thin and not run.timed_out
        # A lite run stands only where the program made its calls as its
        # baseline did, the faulted one at the baseline's seq for it
        # (Case.at), where its trace starts
        if lite and (run.status == 0 or not faulted
                     or faulted[0]["seq"] != case.at):
            # it runs again whole whatever its verdict: not judged (a
            # checker contract would run its checker for nothing)
            return None
        # A thin run that timed out stands with its finding, as a lite one
        # does, but for a thin line in its excerpt (a whole run shows
        # that write's offset)
        if has_thin and run.timed_out and any(
                r.get("thin") for r in excerpt_around(out, case)):
            return None
        if outlived(run, faulted):
            return self.result(case, combo, outlived_verdict(run), out,
                               states=0, keep=keep)
        # a hard fault in a run that claims success: the oracle asks
        # whether it hit the data path, and whether the program retried
        hard_ok = run.status == 0 and case.kind in oracle.HARD
        # the call that decides: the first one on the data path
        out.deciding = data_path_hit(faulted, out) if hard_ok else None
        facts = dict(
            fault_fired=(bool(faulted) or run.signal == signal.SIGBUS) if full
            else fault_fired(faulted, case.plan) if case.plan else False,
            fault_on_data_path=out.deciding is not None,
            fault_path=fault_path(faulted, out, out.deciding),
            # named as the case ids name calls: by file, "close(target.tmp)#1"
            fault_call=coords.Coords(out.records, str(out.workdir))[out.deciding]
            if out.deciding is not None else None,
            fault_retried=fault_retried(faulted, out.calls_after,
                                        shared_maps(out.records))
            if hard_ok else False,
            status=run.status, signal=run.signal, timed_out=run.timed_out,
            # SIGKILL after the library's crash record is the planned crash;
            # any other death by signal is the program's own.
            harness_killed=run.signal == 9 and any(
                r["ev"] == "crash" for r in faulted),
            # the floor of its limit: the case's own is a multiple of a
            # measured duration, which would make its words differ from
            # run to run
            timeout=timeout_of(combo, self.settings),
            limit_state=run.extra.get("limit_state", ""),
            eintr_possible=eintr_possible(faulted, out.workdir),
            target_name=target_name(combo.spec),
            stderr=run.stderr_text(), **self.visible(combo, out), **base)
        verdict = oracle.judge(oracle.Outcome(**facts))
        if (lite or thin) and verdict.verdict not in ("ok", "skipped"):
            return None
        if verdict.cause is not None and verdict.cause.change == (
                "overwrite", target_name(combo.spec)):
            # in place, a temp file renamed over it too early, or the
            # old one moved away first?
            facts["target_renamed"], facts["target_removed"] = \
                self.target_history(case, combo, out)
            verdict = oracle.judge(oracle.Outcome(**facts))
        astray = aimed_astray(case, faulted)
        if astray:
            return self.result(case, combo, oracle.Verdict(
                "harness-error", astray, ASTRAY_WHY), out, states=0,
                keep=keep)
        judged, model, states, under = 0, None, [], None
        # A program that claims success is also judged at its after-exit
        # crash point, under each model: that is where a retried fsync or
        # a missing directory fsync shows, and whether an error the
        # program did not check cost data (unreported-error) or not
        # (ignored-error). The first model that finds more decides; the
        # others are judged too, to name every model the verdict holds
        # under (UNDER).
        if verdict.verdict in QUIET and run.status == 0:
            records = out.for_exit()
            if thin and not thin_unread(records):
                return None
            # one replay of the trace gives every model's after-exit point
            try:
                exits = explorer.explore_exit(
                    records, out.snapdir, self.settings.models,
                    target_name(combo.spec), cap=self.settings.cap,
                    seed=self.settings.seed, exit_ok=True,
                    blob_cache=out.blobs, moot_full=not thin,
                    sector=self.sector(combo))
            except explorer.ThinRecord:
                if not thin:
                    raise
                return None
            facts["calls"] = call_names(records)
            facts["order"] = causes.History(records, str(out.workdir))
            if case.kind in oracle.HARD:
                facts["skipped_syncs"] = self.skipped_syncs(case, combo, out,
                                                            faulted)
            first = None
            found = {}
            for m in self.settings.models:
                states = self.states(combo, [exits[m]], only_after_exit=True)
                judged += len(states)
                verdict = oracle.judge(oracle.Outcome(crash_states=states, **facts))
                found[m] = verdict.verdict
                if first is None:
                    first = (verdict, states)
                if verdict.verdict not in QUIET:
                    model = m
                    break
            else:
                if first is not None:
                    verdict, states = first
            if model is not None:
                held = self.last_states
                for m in self.settings.models:
                    if m not in found:
                        found[m] = oracle.judge(oracle.Outcome(
                            crash_states=self.states(
                                combo, [exits[m]], only_after_exit=True),
                            **facts)).verdict
                self.last_states = held
            under = [m for m in self.settings.models
                     if found.get(m) == verdict.verdict]
            if thin and not verdict.ok:
                return None
            if verdict.state and (verdict.verdict == "unreported-error" or
                                  case.kind == "eintr" or
                                  oracle.blames_a_skipped_sync(verdict)) and \
                    self.baseline_at_risk(combo):
                # the baseline loses the data the same way: that defect,
                # not the fault's (nor a sync the fault made it skip)
                facts["known_at_risk"] = True
                verdict = oracle.judge(oracle.Outcome(crash_states=states, **facts))
            if verdict.verdict == "ignored-error" and committed_before(
                    self, combo, out, faulted):
                # the new content was durable before the faulted call:
                # its failure could not lose it, off the data path
                facts["fault_on_data_path"] = False
                verdict = oracle.judge(oracle.Outcome(crash_states=states, **facts))
            verdict = self.rejudge_overwrite(case, combo, out, facts, verdict,
                                             states)
        elif verdict.ok and run.status not in (0, None) and \
                self.failure_left_pending(case, combo, out, faulted):
            # A program that reported its failure must still leave old or
            # new in every state a power cut after its exit can leave
            # (crash-model.md): a file whose fsync failed renamed over the
            # target, then exit 1, is torn.
            if lite or thin:
                return None
            records = out.records
            exits = explorer.explore_exit(
                records, out.snapdir, self.settings.models,
                target_name(combo.spec), cap=self.settings.cap,
                seed=self.settings.seed, exit_ok=False, blob_cache=out.blobs,
                sector=self.sector(combo))
            facts["calls"] = call_names(records)
            facts["order"] = causes.History(records, str(out.workdir))
            for m in self.settings.models:
                states = self.states(combo, [exits[m]], only_after_exit=True)
                judged += len(states)
                verdict = oracle.judge(oracle.Outcome(crash_states=states, **facts))
                if not verdict.ok:
                    model = m
                    break
            verdict = self.rejudge_overwrite(case, combo, out, facts, verdict,
                                             states)
        return self.result(case, combo, verdict, out, states=judged,
                           model=model, keep=keep, under=under)

    def rejudge_overwrite(self, case, combo, out, facts, verdict, states):
        """VERDICT again, when its cause is the target written in place
        (a crash state with nothing lost, a torn state without an
        account): with whether the program renamed a file over the
        target or removed it first, which decide the advice."""
        if verdict.cause is None or verdict.cause.change != (
                "overwrite", target_name(combo.spec)):
            return verdict
        facts["target_renamed"], facts["target_removed"] = \
            self.target_history(case, combo, out)
        return oracle.judge(oracle.Outcome(crash_states=states, **facts))

    def failure_left_pending(self, case, combo, out, faulted):
        """Whether a run that exited non-zero may have left a state after
        its exit that no crash state before its fault shows: under an
        atomic contract, it changed the target (renamed a file over it,
        removed it, wrote it); under a checker, it changed a name or a
        file after its fault fired. Under in-place any content is
        acceptable after a reported failure. The explored states are
        built from the whole trace: a lite run is run again."""
        contract = combo.spec.contract
        if contract == "in-place" or case.kind not in oracle.HARD:
            return False
        if contract in ("check", "tree"):
            first = next((r["seq"] for r in trace.calls(faulted)
                          if r.get("fault")), None)
            return first is not None and any(
                r["seq"] > first and r.get("ret", -1) >= 0
                and (causes.changes_data(r) or r["call"] in causes.RENAME_CALLS
                     or r["call"] in causes.UNLINK_CALLS
                     or r["call"] in causes.LINK_CALLS)
                and touches(r, out.workdir)
                for r in trace.calls(out.records))
        renamed, removed = self.target_history(case, combo, out)
        return renamed or removed or self.target_written(case, combo, out)

    def target_written(self, case, combo, out):
        """Whether the run wrote into the target's own inode (or truncated
        it): in OUT's trace, and for a lite run in its baseline's before
        the faulted call."""
        name = target_name(combo.spec)
        if name is None:
            return False
        parts = [(out.records, str(out.workdir), None)]
        if out.trace_from is not None:
            baseline = load_run(self.work / combo.prefix)
            parts.append((baseline.records, str(baseline.workdir), case.at))
        for records, base, before in parts:
            start = (causes.start_tree(records) or {}).get(name)
            for r in trace.calls(records):
                if (before is not None and r["seq"] >= before) or r.get("ret", -1) < 0:
                    continue
                mine = (start is not None and r.get("ino") == start) or \
                    causes.named(r.get("path"), name, base)
                if mine and (causes.changes_data(r) or "O_TRUNC" in
                             (r.get("flags") or ())):
                    return True
        return False

    def baseline_sync_seqs(self, combo, out):
        """(seq, name) of every successful sync in the combo's baseline
        OUT (synced_names, call by call), once per process."""
        key = ("sync-seqs", combo.prefix)
        if key not in self._calls:
            self._calls[key] = [
                (r["seq"], name) for r in trace.calls(out.records)
                for name in synced_names([r], out.workdir)]
        return self._calls[key]

    def skipped_syncs(self, case, combo, out, faulted):
        """The names the combo's baseline synced after the call CASE
        faults (Case.at; a failed sync is not one it skipped) that OUT
        did not sync after its fault fired:
        the syncs the fault made the program skip (SQLite's directory
        fsync, skipped when the directory's open fails)."""
        fired = next((r["seq"] for r in trace.calls(faulted)
                      if r.get("fault")), None)
        if fired is None or case.at is None:
            return frozenset()
        base = load_run(self.work / combo.prefix)
        want = {name for seq, name in self.baseline_sync_seqs(combo, base)
                if seq > case.at}
        return frozenset(want - synced_names(out.records, out.workdir,
                                             after=fired))

    def result(self, case, combo, verdict, out, states, model=None, keep=False,
               upto=None, under=None):
        """The case's entry of results.json (docs/design.md), and for a
        finding (or with --keep) its directory under results/cases/.
        UPTO is the seq of a power-loss case's crash point: the deciding
        call of its state was made at or before it. UNDER: the models of
        the sweep the verdict holds under, when it came from crash states
        (a power-loss case's own model, until write_reports names the
        others); by default every model of the sweep, the verdict owing
        nothing to one."""
        spec = combo.spec
        expected = [e for e in spec.expect if e.applies(
            kind=case.kind, model=case.model or model, strategy=combo.strategy,
            size=combo.size, call=case.call or None, backend=case.backend)]
        finding = verdict.verdict not in ("ok", "skipped")
        # the sweep's own harness errors are not the oracle's: no severity
        sev = verdict.severity or properties.severity(verdict.verdict)
        if verdict.verdict == "harness-error":
            passed = False
        elif not finding:
            passed = True
        else:
            # a finding fails unless a buggy variant expects it, or it is
            # a warning and the run fails on errors only
            passed = any(e.verdict == verdict.verdict for e in expected) or \
                not properties.fails(sev, self.settings.fail_on or spec.fail_on)
        run = out.run if out is not None else None
        base = str(out.workdir) if out is not None else None
        excerpt = []
        fired = []
        if out is not None:
            root = str(out.scratch)

            def fmt(rec):
                return trace.format_call(rec, base, root=root)
            # The calls around the target, for a finding: what the reports
            # show next to it. A case that held its contract has none (its
            # reproduce command with --keep writes every call to its
            # trace.txt): parsing and formatting them for every case was
            # an eighth of a case at 100 writes.
            if finding:
                excerpt = [fmt(r) for r in excerpt_around(out, case)]
            fired = [{"rule": f.rule, "count": f.count}
                     for f in trace.fired(out.faulted(), plan_rules(case.plan))]
        cause, location, text = self.cause(case, combo, verdict, out, upto) \
            if finding else (None, None, verdict.finding)
        res = {
            "id": case.id,
            "workload": spec.name,
            "strategy": combo.strategy,
            "size": combo.size,
            "kind": case.kind,
            "plan": case.plan,
            "call": case.call,
            "model": case.model or model,
            "models": list(under if under is not None else
                           (case.model,) if case.model else
                           self.settings.models),
            "states": states,
            "seed": self.settings.seed,
            "verdict": verdict.verdict,
            "severity": sev or None,
            "property": verdict.cause.prop or None
            if verdict.cause is not None else None,
            "passed": passed,
            "expected": [expect_dict(e) for e in expected],
            "finding": text,
            "explanation": verdict.explanation,
            "state": verdict.state,
            "note": verdict.note,
            "cause": cause,
            "location": location,
            "reproduce": with_rerun(on_fs(reproduce(spec, case,
                                                    self.settings.backend,
                                                    self.settings.models,
                                                    self.settings.fail_on),
                                          spec, self.settings.fs),
                                    spec, self.settings.rerun),
            "backend": case.backend,
            "exit": {"status": run.status if run else None,
                     "signal": run.signal if run else None,
                     "timed_out": run.timed_out if run else False},
            "stderr": run.stderr_text() if run else "",
            "fired": fired,
            "outside": list(run.outside) if run else [],
            "trace_excerpt": excerpt,
            "dir": "",
            "duration": round(run.duration, 6) if run else 0.0,
        }
        if run is not None and max(run.stdout_size, run.stderr_size) > \
                runner.OUTPUT_CAP:
            # what the program wrote, of which OUTPUT_CAP bytes are kept
            res["output"] = {"stdout": run.stdout_size,
                             "stderr": run.stderr_size}
        tracecut.note(res, out)
        if out is not None and (finding or self.settings.keep):
            # a power-loss or baseline finding too: the crash state that
            # decided it, laid out, is what a person wants to look at
            crash = next((st for st in self.last_states
                          if verdict.state and st.label == verdict.state), None)
            try:
                steps = trace.steps(out.records)
                res["dir"] = save_case_dir(
                    self.settings.out, res, out,
                    [fmt(r) for r in kept_ends(steps)], combo, crash=crash,
                    steps=len(steps))
            except (OSError, shutil.Error, trace.TraceError,
                    explorer.ExplorerError) as e:
                # the verdict stands; where to look is gone
                res["dir_error"] = f"its directory could not be saved: {e}"
        return res


    def target_history(self, case, combo, out):
        """(renamed over, removed): whether the program renamed a file
        over the target, and whether it renamed the target's own entry
        away or unlinked it, before it stopped: in OUT's trace, and for a
        lite run (whose trace starts at its fault) in its baseline's
        before the faulted call."""
        name = target_name(combo.spec)
        parts = [(trace.calls(out.records), str(out.workdir), None)]
        if out.trace_from is not None:
            baseline = load_run(self.work / combo.prefix)
            parts.append((trace.calls(baseline.records), str(baseline.workdir),
                          case.at))
        over = away = False
        for records, base, before in parts:
            for r in records:
                if (before is not None and r["seq"] >= before) or r.get("ret", -1) < 0:
                    continue
                call = r.get("call")
                if call in causes.RENAME_CALLS:
                    over = over or causes.named(r.get("path2"), name, base)
                    away = away or causes.named(r.get("path"), name, base)
                elif call in causes.UNLINK_CALLS:
                    away = away or causes.named(r.get("path"), name, base)
        return over, away

    def cause(self, case, combo, verdict, out, upto):
        """(cause entry, location, finding) of a finding (causes.describe):
        the deciding call found in OUT's trace, symbolized where the trace
        says where it was made, and the finding naming that place."""
        if verdict.cause is None:
            return None, None, verdict.finding
        rec, base = None, None
        if out is not None:
            # a call cause needs only the faulted records; a change, the
            # calls before it: a lite run's trace starts at its fault, and
            # its program made the calls before as its baseline did
            records, base = (), str(out.workdir)
            if not verdict.cause.call:
                records = out.records
                if out.trace_from is not None:
                    baseline = load_run(self.work / combo.prefix)
                    records, base, upto = baseline.records, \
                        str(baseline.workdir), case.at
            faulted = out.faulted()
            if out.deciding is not None:
                faulted = [out.deciding] + list(faulted)
            rec = causes.deciding_record(verdict.cause, records,
                                         faulted=faulted, base=base, upto=upto)
        location = symbols.site(rec) if rec is not None else None
        if combo.prefix not in self._globs:
            self._globs[combo.prefix] = load_globs(self.work / combo.prefix)
        entry, location = causes.describe(
            combo.spec.name, verdict.verdict, verdict.cause, rec, base=base,
            location=location, globs=self._globs[combo.prefix])
        text = verdict.finding
        if location is not None:
            text += f" ({entry['call']} at {location['text']})"
        return entry, location, text


class CheckerFailed(Exception):
    """A spec's checker that timed out, died of a signal or left a
    process behind: the state it was asked about cannot be judged."""

    def __init__(self, reason, argv, output):
        super().__init__(reason)
        self.reason, self.argv, self.output = reason, argv, output

    def detail(self):
        return (f"checker {' '.join(map(str, self.argv))}"
                + (f"; its output: {self.output}" if self.output.strip()
                   else ""))


def _first_line(output):
    """The first line of a checker's output with something in it: what
    a finding quotes of it."""
    return next((li.strip() for li in output.splitlines() if li.strip()), "")


def _answer_text(status, output):
    """A checker's answer in a few words: "exited 1: tip is 'old'"."""
    first = _first_line(output)
    return f"exited {status}" + (f": {first[:120]}" if first else "")


def _signal_name(num):
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


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


CHECKS_DIR = "checks"


class CheckCache:
    """A checker's answers by content: (combo, state digest, expect) ->
    oracle.CheckResult. A checker judges files, so a state already judged
    (at another crash point, in another case, by another process of the
    pool) is not judged again. The answers live in memory and in DIR (the
    sweep's work directory, which every process of the pool shares), one
    small file each, written whole under a temporary name and renamed.
    hits and misses count this process's lookups."""

    def __init__(self, directory):
        self.dir = Path(directory)
        self.mem = {}
        self.hits = self.misses = 0

    def _name(self, combo, key, expect):
        # the kind first: a crash state ("s") or a run's directory ("d"),
        # which distinct() counts apart
        h = hashlib.blake2b(digest_size=12)
        h.update("\0".join((combo.prefix, key[1], expect)).encode())
        return f"{key[0]}-{h.hexdigest()}"

    def get(self, combo, key, expect):
        name = self._name(combo, key, expect)
        res = self.mem.get(name)
        if res is None:
            try:
                with open(self.dir / name) as fh:
                    d = json.load(fh)
                res = oracle.CheckResult(status=d["status"],
                                         output=d["output"], expect=expect)
                self.mem[name] = res
            except (OSError, ValueError, KeyError, TypeError):
                res = None
        if res is None:
            self.misses += 1
        else:
            self.hits += 1
        return res

    @staticmethod
    def distinct(directory):
        """{kind: how many distinct answers DIRECTORY holds}: "s" crash
        states, "d" run directories; what the sweep's summary reports."""
        counts = {"s": 0, "d": 0}
        try:
            with os.scandir(directory) as it:
                for e in it:
                    kind = e.name.split("-", 1)[0]
                    if kind in counts:
                        counts[kind] += 1
        except OSError:
            pass
        return counts

    @contextlib.contextmanager
    def claim(self, combo, key, expect):
        """Held while this process judges a state: another process of
        the pool that meets the same state waits, then finds the answer
        (get), so that each distinct state is judged once in the whole
        sweep, not once per process that meets it first at the same
        time. Without a lock to be had (no room), no wait."""
        name = self._name(combo, key, expect)
        try:
            self.dir.mkdir(exist_ok=True)
            fh = open(self.dir / f".lock-{name}", "a")
        except OSError:
            yield
            return
        with fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            yield

    def put(self, combo, key, expect, res):
        name = self._name(combo, key, expect)
        self.mem[name] = res
        try:
            self.dir.mkdir(exist_ok=True)
            tmp = self.dir / f".{name}.{os.getpid()}"
            with open(tmp, "w") as fh:
                json.dump({"status": res.status, "output": res.output}, fh)
            os.rename(tmp, self.dir / name)
        except OSError:
            pass        # the next process judges it again: slower, the same


# a check_server's answer is held to check's on one state in this many
# (served_check)
SERVER_AUDIT_EVERY = 16
EXCERPT_LINES = 40
# A fault that keeps firing within this many calls of a run's start runs
# whole, not lite (Judge.lite_from)
PERSIST_WHOLE_WITHIN = 80
# the kinds of fault case that run lite first (Judge.lite_from)
LITE_KINDS = ("eio", "enospc", "crash")
# the kinds of fault case that run thin first (Judge.thin_window)
THIN_KINDS = oracle.TRANSIENT


def _lite_key(case, combo):
    """What Judge counts lite runs by: the program (spec and strategy;
    its sizes share a command line), the kind of fault, and whether it
    fires once or from its call on ("write#3+=EIO"): a program that
    retries gets past a fault that fires once and claims success, and
    stops at one that keeps firing, so the two kinds of case of one
    program stand apart."""
    return combo.spec.name, combo.strategy, case.kind, _persists(case)


def _persists(case):
    """CASE's fault fires from its call on ("write#3+=EIO"), not once."""
    return "+=" in (case.plan or "")


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


# How a real power-loss case's runs push the kernel between the kill and
# the crash: (the label's words, realfs.Disk's hook)
REAL_PUSHES = (("", None),
               (" after an fsync of another file", lambda d: d.sync_other()))
REAL_ASTRAY_WHY = (
    "A power-loss case on a real filesystem runs the program again, on a "
    "fresh filesystem, and kills it right after the call of its crash "
    "point, named as in its baseline (write(target.tmp)#3). This run did "
    "not get there, or not in time: the program takes another path on "
    "this filesystem than in its baseline, or its calls vary from run to "
    "run. No state was judged, and this is never a pass.")
ASTRAY_WHY = (
    "The fault was aimed at a call by the file it is on and its number "
    "among that file's calls, as the recorded run made them; in this run "
    "that call was made otherwise, so the fault hit another, and the "
    "outcome says nothing about the one planned. The program does not "
    "make its calls the same way from run to run (threads or processes "
    "that race, the clock, random numbers): this is never a pass.")


def thin_unread(records):
    """Whether a thin run's after-exit replay of RECORDS (Outcome.for_exit)
    is its whole run's: no thin write outside a moot run (explorer.Moot),
    and no write that put bytes into a file of a moot run outside one. A
    write is recorded the same thin or whole, but for its snapshot: after
    thin writes to a file, the first write in full snapshots the file
    whole where a whole run took a range, and each gives the same
    content; outside a moot run the sweep does not lean on that. A moot
    run whose writes a world needs raises explorer.ThinRecord
    (explore_exit's moot_full)."""
    write, moot = explorer.WRITE_CALLS, explorer.Moot
    inos = {rec["ino"] for rec in records if rec.__class__ is moot}
    for rec in records:
        if rec.__class__ is not moot and rec.get("call") in write and (
                rec.get("thin") or (rec.get("ret", 0) > 0
                                    and rec.get("ino") in inos)):
            return False
    return True


def excerpt_around(out, case):
    """At most EXCERPT_LINES of a run's call and crash records, centred on
    the call CASE aims at: the first a fault fired on in a fault case
    (else where the baseline made it), the crash point's call in a
    power-loss case, the start for a baseline; enough to see what led to
    it and what followed. Chosen before parsing and formatting, where the
    trace allows (trace.Lazy.around): a program's trace may hold
    thousands of calls."""
    seq = case.at
    if case.plan:
        hit = next((r["seq"] for r in out.faulted() if r.get("fault")
                    or r["ev"] == "crash"), None)
        seq = hit if hit is not None else seq
    if out.trace is not None:
        return out.trace.around(seq, EXCERPT_LINES)
    return trace.window(trace.steps(out.records), seq, EXCERPT_LINES)


def expect_dict(e):
    return {k: v for k, v in e.__dict__.items() if v is not None}


def reproduce(spec, case, backend="auto", models=DEFAULT_MODELS,
              fail_on=None):
    """One command that reruns this case alone (with the --backend the
    sweep was given, unless auto: auto decides as it did; with the
    --model that makes the case again: its own model when it is not a
    default one, else the sweep's MODELS when they are not the default;
    and its --fail-on, which decides whether a warning fails)."""
    own = getattr(spec, "reproduce_command", None)
    if own is not None:
        return own(case.id)
    hit = _RERUN.get(id(spec))
    if hit is None or hit[0] is not spec:
        if INSTALLED:               # the tree is not the user's directory
            path, prog = spec.path.resolve(), command_name()
        else:
            try:
                path = spec.path.resolve().relative_to(ROOT)
                prog = "scripts/crashcheck"
            except ValueError:
                path = spec.path.resolve()
                prog = str(ROOT / "scripts" / "crashcheck")
        hit = _RERUN[id(spec)] = (spec, f"{prog} run {path}")
    command = f"{hit[1]} --case '{case.id}'"
    if case.model is not None:
        # a real kernel's case (--fs) is made again by on_fs's --fs
        want = () if case.model in DEFAULT_MODELS \
            or realfs.fs_of(case.model) else (case.model,)
    else:
        want = () if tuple(models) == DEFAULT_MODELS else tuple(models)
    if want:
        command += f" --model {','.join(want)}"
    if backend != "auto":
        command += f" --backend {backend}"
    if fail_on is not None:
        command += f" --fail-on {fail_on}"
    return command


_RERUN = {}     # id(spec) -> (spec, "scripts/crashcheck run SPEC"): resolved once


def on_fs(command, spec, fs):
    """A reproduce COMMAND of a sweep on the real filesystem FS (--fs),
    which runs on it again (an audit's own command carries --fs
    already)."""
    if fs is None or getattr(spec, "reproduce_command", None) is not None:
        return command
    return f"{command} --fs {fs}"


def with_rerun(command, spec, options):
    """A reproduce COMMAND of a spec's case with the OPTIONS that decide
    how its run goes (Settings.rerun: where its scratch is, the limit it
    is stopped at, its HOME): a case stopped by the scratch rerun
    without them would run elsewhere. An audit's own command carries
    them already."""
    if not options or getattr(spec, "reproduce_command", None) is not None:
        return command
    return command + " " + " ".join(shlex.quote(str(o)) for o in options)


def safe_name(case_id):
    """A case id as a directory name: '#', '+' and '=' are fine on every
    filesystem we run on; '/' is not."""
    return case_id.replace("/", "_")


# What a case directory keeps of a run's trace: the first TRACE_HEAD
# and the last TRACE_TAIL lines of trace.txt and of trace.jsonl, and a
# line between them saying how many were left out. A program that spins
# on a failed write makes a call per turn until its time limit: one
# such case's trace was 88,000 lines (143 MB of trace.jsonl, 38 MB of
# trace.txt); what led to the spin is at its start, how it ended at its
# end.
TRACE_HEAD = 2000
TRACE_TAIL = 1000


def kept_ends(items, head=TRACE_HEAD, tail=TRACE_TAIL):
    """ITEMS (a list), or its first HEAD and last TAIL when longer."""
    if len(items) <= head + tail:
        return items
    return items[:head] + items[-tail:]


def cut_line(total, head=TRACE_HEAD, tail=TRACE_TAIL, what="lines"):
    return (f"[... {total - head - tail} {what} left out: crashcheck keeps "
            f"the first {head} and the last {tail} of {total} ...]")


def _copy_trace_ends(src, dest):
    """trace.jsonl at SRC into DEST, cleaned (trace.clean), its first
    TRACE_HEAD and last TRACE_TAIL lines with a record between them
    saying how many were left out; how many lines it had."""
    import collections
    head, tail, total = [], collections.deque(maxlen=TRACE_TAIL), 0
    with open(src, "rb") as fh:
        for line in fh:
            total += 1
            if len(head) < TRACE_HEAD:
                head.append(line)
            else:
                tail.append(line)
    if total <= TRACE_HEAD + TRACE_TAIL:
        dest.write_bytes(trace.read(src))
        return total
    # the ends cleaned as the whole would be: zeros only ever end a
    # line, and a record of ours says what is missing between them
    gap = (json.dumps({"ev": "cut", "left_out": total - len(head) - len(tail),
                       "lines": total}) + "\n").encode()
    dest.write_bytes(trace.clean(b"".join(head)) + gap
                     + trace.clean(b"".join(tail)))
    return total


def save_case_dir(outdir, res, out, excerpt, combo, crash=None, steps=None):
    """results/cases/<id>/: the trace (its ends, when long: TRACE_HEAD),
    stderr, the state and its difference from old and new, for a person
    to read, with a README.txt that says what the state is. The state is
    the crash state CRASH that decided the verdict when there is one (a
    power-loss finding, a run judged after its exit), laid out (the
    directory the run left is then `left/`), else the directory the run
    left. EXCERPT: the formatted calls (kept_ends of STEPS calls in
    all); what was cut is said in it and in res["cut"]."""
    cases = outdir / "cases"
    if cases.is_symlink():
        # never written through (engine/outdir.py refuses it up front)
        raise OSError(errno.ELOOP, "a symbolic link, not crashcheck's", str(cases))
    d = cases / safe_name(res["id"])
    ours = False
    if d.exists():
        # an earlier run's files go, if crashcheck's (engine/outdir.py),
        # and the user's files stay; a directory of the user's by that
        # name stops us
        from .outdir import remove_case_dir
        ours = remove_case_dir(d)
    d.mkdir(parents=True, exist_ok=ours)
    head = []
    if out.trace_from is not None:
        head = [f"(a lite run that timed out: its trace starts at seq "
                f"{out.trace_from}, the faulted call's in the baseline; "
                "its reproduce command with --keep records every call)"]
    elif out.has_thin:
        head = ["(a thin run that timed out: a write marked [thin] was "
                "recorded with no offset and no snapshot; its reproduce "
                "command with --keep records every call in full)"]
    cut = []
    if steps is not None and steps > len(excerpt):
        excerpt = excerpt[:TRACE_HEAD] + [cut_line(steps, what="calls")] \
            + excerpt[TRACE_HEAD:]
        cut.append(f"trace.txt: the first {TRACE_HEAD} and the last "
                   f"{TRACE_TAIL} of {steps} calls")
    # a file name that is not UTF-8 as its bytes, as a terminal shows it
    (d / "trace.txt").write_text("\n".join(head + excerpt) + "\n",
                                 errors="surrogateescape")
    tr = out.scratch / "trace.jsonl"
    if tr.exists():
        # as the library meant it (trace.clean)
        lines = _copy_trace_ends(tr, d / "trace.jsonl")
        if lines > TRACE_HEAD + TRACE_TAIL:
            cut.append(f"trace.jsonl: the first {TRACE_HEAD} and the last "
                       f"{TRACE_TAIL} of {lines} lines")
    for name in ("stdout", "stderr"):
        total = (res.get("output") or {}).get(name)
        if total is not None and total > runner.OUTPUT_CAP:
            cut.append(f"{name}: the first {runner.OUTPUT_CAP} of {total} "
                       "bytes")
    if cut:
        res["cut"] = cut
    (d / "stderr.txt").write_text(res["stderr"], errors="surrogateescape")
    old, new = contents(combo)
    name = target_name(combo.spec)
    tree = combo.start is not None and (name is None or combo.spec.check)
    if crash is not None:
        explorer.layout(crash, d / "state")
        if res["kind"] != "powerloss" and out.workdir.is_dir():
            shutil.copytree(out.workdir, d / "left", symlinks=True)
        got = crash.target
    elif out.workdir.is_dir():
        shutil.copytree(out.workdir, d / "state", symlinks=True)
        target = out.workdir / name if name is not None else None
        got = target.read_bytes() if target is not None and target.is_file() \
            else None
    else:
        # a run stopped for the scratch: its files went, to make room
        (d / "state").mkdir()
        got = None
    if tree:
        (d / "diff.txt").write_text(
            "a tree, judged by its checker alone: see result.json's "
            "finding for what it said\n")
    else:
        (d / "diff.txt").write_text(
            f"target against new: {payload.describe(got, old, new)}\n")
    (d / "README.txt").write_text(
        state_readme(res, crash, got, old, new, tree=tree),
        errors="surrogateescape")
    with open(d / "result.json", "w") as fh:
        json.dump(res, fh, indent=1, sort_keys=True)    # ASCII: \udcXX
    try:
        return str(d.relative_to(outdir.parent)) + "/"
    except ValueError:
        return str(d) + "/"


def state_readme(res, crash, got, old, new, tree=False):
    """The README.txt of a case's directory (and of `crashcheck replay`'s):
    the case, its verdict, what its state/ is, and for a crash state what
    persisted and the rule it breaks."""
    lines = [f"case:        {res['id']}",
             f"verdict:     {res['verdict']}"]
    if res.get("finding"):
        lines.append(f"finding:     {res['finding']}")
    what = "a tree, judged by its checker alone" if tree else \
        payload.describe(got, old, new)
    # what the disk holds first, then why: the order a reader follows
    fs = realfs.fs_of(res.get("model"))
    if crash is not None and fs is not None:
        lines += [f"state:       crash state {crash.label}: a real kernel "
                  f"state, what the {fs} filesystem held after the program "
                  f"was killed there and the filesystem was cut off from "
                  f"its disk ({realfs.HOW[fs]}) and mounted again",
                  f"target:      {what}",
                  f"because:     {crash.why}",
                  f"rule:        {crash.rule or '-'}"]
    elif crash is not None:
        lines += [f"state:       crash state {crash.label} "
                  f"({res.get('model') or 'posix'} model): what the disk may "
                  "hold after a power cut there",
                  f"target:      {what}",
                  f"because:     {crash.why}",
                  f"rule:        {crash.rule or '-'}"]
        if res["kind"] != "powerloss":
            lines.append("left:        the directory the run left behind")
    else:
        lines += ["state:       the directory the run left behind",
                  f"target:      {what}"]
    if res.get("outside"):
        lines.append("outside:     wrote outside its scratch (confined: "
                     "your files untouched, the writes thrown away): "
                     + ", ".join(res["outside"]))
    if res.get("explanation"):
        lines += ["", res["explanation"]]
    lines += ["", f"reproduce:   {res['reproduce']}"]
    return "\n".join(lines) + "\n"


def _expectations(specs, results):
    """(spec, expect, the results it applies to) for every buggy-variant
    expectation."""
    by_workload = {}
    for r in results:
        by_workload.setdefault(r["workload"], []).append(r)
    for spec in specs:
        ran = {r.get("backend", "preload")
               for r in by_workload.get(spec.name, [])}
        for e in spec.expect:
            if e.backend is not None and e.backend not in ran:
                continue    # its backend ran none of this spec's cases
            mine = [r for r in by_workload.get(spec.name, [])
                    if e.applies(kind=r["kind"], model=r["model"],
                                 strategy=r["strategy"], size=r["size"],
                                 call=r["call"] or None,
                                 backend=r.get("backend", "preload"))]
            yield spec, e, mine


def uncaught(specs, results):
    """One line per expectation of a buggy variant that no case met, e.g.
    'no-fsync: expected not-durable (kind=powerloss), got only ok'. An
    expectation no case of the run applies to (an xfs one under the
    default models) was not run, and is not listed (not_run)."""
    lines = []
    for spec, e, mine in _expectations(specs, results):
        if not mine or any(r["verdict"] == e.verdict for r in mine):
            continue
        if all(r["verdict"] == "skipped" for r in mine):
            continue    # cannot run here; the report lists the reason
        seen = sorted({r["verdict"] for r in mine})
        lines.append(f"{spec.name}: expected {e.describe()}, "
                     f"got only {', '.join(seen)}")
    return lines


def not_run(specs, results):
    """The expectations no case of the run applies to: 'variant: verdict
    (where)' each. They neither pass nor fail: the run did not look."""
    return [f"{spec.name}: {e.describe()}"
            for spec, e, mine in _expectations(specs, results) if not mine]


def variant_verdicts(specs, results, names):
    """For each buggy variant of NAMES (those with an expectation not
    caught): one line saying whether it is fixed, which is only when
    every case of it is ok, or else which findings it still shows, so
    that a fix that moved the bug elsewhere does not read as one."""
    lines = []
    for spec in specs:
        if spec.name not in names:
            continue
        found = {}
        for r in results:
            if r["workload"] == spec.name and r["verdict"] not in (
                    "ok", "skipped"):
                found[r["verdict"]] = found.get(r["verdict"], 0) + 1
        if not found:
            lines.append(f"{spec.name}: every case is ok now: fixed")
        else:
            shown = ", ".join(f"{v} ({n} case{'' if n == 1 else 's'})"
                              for v, n in sorted(found.items()))
            lines.append(f"{spec.name}: not fixed: its cases still show "
                         f"{shown}")
    return lines
