"""Running one case's program: laying out its scratch directory (the
work directory with its target and starting tree, the input, TMPDIR,
HOME; prepare, start_tree), running it under a plan (execute_run) on
the scratch filesystem or a real one (pristine_image), and what it left
(Outcome). Also emptying a scratch for the next run, and what a full
scratch says (scratch_trouble).

A recorded run is an Outcome; baseline.py makes the combo's first,
judge.py every case's."""

import errno
import functools
import hashlib
import os
import shutil
import stat
from pathlib import Path

from .. import coords, size_text
from . import fullfs, realfs, runner, timelimit, trace, tracecut
from ..judging import explorer
from .cases import (BIN, HOME, INPUT, NEW, NOTE, SNAPS, TARGET, TMP, WORK,
                    contents, target_name)

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
    its input stays, and the rest is emptied but for the snapshots, up to
    a bound (kept_snaps). Without LAY, WORK is left empty: a real
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
        for d in (work, os.path.join(scratch, HOME)):
            _emptied(d)
        if not kept_snaps(snaps):
            _emptied(snaps)
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

# What the last runs' snapshots in a reused scratch may hold and be kept
# for the next run: bytes, and blobs (kept_snaps). Few blobs: each is
# looked at before every run, and a program that stores hundreds a run
# (a write's range each) made that look cost more than the blobs saved.
SNAPS_KEEP_BYTES = 64 << 20
SNAPS_KEEP_BLOBS = 64


def kept_snaps(snaps):
    """Whether the snapshot directory SNAPS of a reused scratch may stay
    as the last runs left it: a directory of ours holding blobs only, no
    more than SNAPS_KEEP_BLOBS of them and SNAPS_KEEP_BYTES in all. The
    store is by content and a run stores only the blobs it does not find
    there (faults/store.c), so the runs of one combo, which mostly write
    the same content, store it once instead of once a run (as costly as
    the rest of the run for a file of 100 KiB); a run whose content
    changes every time (a database's random pages) would pile them up,
    and past the bound they go. A blob's name is the hash of its content:
    one kept is one the next run would have written the same. Anything
    else there (a blob a killed run left half written, under its
    dot-name; what the program put there) empties it."""
    try:
        st = os.lstat(snaps)
        if not stat.S_ISDIR(st.st_mode):
            return False
        blobs = []
        with os.scandir(snaps) as it:
            for e in it:
                # counted before any is looked at: one stat each
                if len(blobs) >= SNAPS_KEEP_BLOBS or e.name.startswith(".") \
                        or not e.is_file(follow_symlinks=False):
                    return False
                blobs.append(e)
        total = 0
        for e in blobs:
            total += e.stat(follow_symlinks=False).st_size
            if total > SNAPS_KEEP_BYTES:
                return False
    except OSError:
        return False
    return True


def _write_input(path, data):
    try:
        os.unlink(path)         # a new inode: an old one may be a hard link
    except FileNotFoundError:
        pass
    with open(path, "wb") as fh:
        fh.write(data)
    st = os.stat(path)
    _INPUT_STAMP[path] = (st.st_ino, st.st_size, st.st_mtime_ns)


def fresh_dir(path):
    """PATH made an empty directory: one of ours (under a root of ours)
    left there before is removed first."""
    shutil.rmtree(path, ignore_errors=True)
    os.mkdir(path)
    return path


def empty_scratch(scratch):
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
    try:
        # one lstat: a link is never followed
        st = os.lstat(path)
    except FileNotFoundError:
        os.mkdir(path)
        return
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(path)
        os.mkdir(path)
        return
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
    server: a forkserver.ForkServer of the combo's command line to fork the
    run from (forkserver.ServerUnavailable when it cannot). trace_from: a
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
    run_it = functools.partial(
        run_program, argv, plan, sdir, timeout, record=record, server=server,
        trace_from=trace_from, trace_full=trace_full, settings=settings,
        backend=backend)
    lay_out = functools.partial(lay_out_scratch, combo, sdir, old, new,
                                reuse_input, start)
    real_state = early = hooked = None
    if on_real_fs(combo, settings) and not full_disk:
        run, real_state, hooked, early = run_on_real_fs(
            combo, settings, scratch, run_it, lay_out, crash=crash,
            before_crash=before_crash,
            baseline=plan == "" and record and trace_from is None)
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


def run_program(argv, plan, sdir, timeout, record=True, server=None,
                trace_from=None, trace_full=None, settings=None,
                backend="preload"):
    """The runner.Run of ARGV under PLAN in the scratch SDIR laid out
    (execute_run has the arguments); a plan of None is the crash point
    before the first call, and runs nothing."""
    work = os.path.join(sdir, WORK)
    tr = os.path.join(sdir, "trace.jsonl")
    extra = {"TMPDIR": os.path.join(work, TMP)}
    if settings is not None and settings.home:
        extra["HOME"] = os.path.join(sdir, HOME)
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


def lay_out_scratch(combo, sdir, old, new, reuse_input, start, lay=True):
    """prepare the scratch SDIR for a run of COMBO; ScratchFull when it has
    no room. A reused scratch the last run left something in that would
    not go is made anew."""
    try:
        prepare(sdir, old, new, target_name(combo.spec), reuse_input,
                start, lay=lay)
    except OSError as e:
        if e.errno in (errno.ENOSPC, errno.EDQUOT):
            raise ScratchFull(full_text(sdir, e)) from None
        if not reuse_input:
            raise
        # the last run left something that would not go: start over
        shutil.rmtree(sdir, ignore_errors=True)
        os.makedirs(sdir, exist_ok=True)
        prepare(sdir, old, new, target_name(combo.spec), start=start,
                lay=lay)


def run_on_real_fs(combo, settings, scratch, run_it, lay_out, crash=False,
                   before_crash=None, baseline=False):
    """(run, real, hooked, early) of a run on settings.fs (execute_run):
    RUN_IT's run in a fresh copy of the combo's pristine image, its work
    directory laid out by LAY_OUT; with CRASH the filesystem crashed after
    it (REAL: what a read saw before, what the disk held after; HOOKED:
    what BEFORE_CRASH returned), else what it left copied out. A
    BASELINE's Outcome (EARLY) is made before the copy, as the changes no
    call accounts for are looked for on the filesystem."""
    work = os.path.join(os.fspath(scratch), WORK)
    real_state = early = hooked = None
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
            if baseline:
                # a baseline's: the changes no call accounts for are
                # looked for now, on the filesystem, whose inode
                # numbers the trace gives (unseen_of keeps them)
                early = Outcome(run=run, scratch=scratch,
                                trace=trace.Lazy.load(
                                    os.path.join(os.fspath(scratch),
                                                 "trace.jsonl")))
                unseen_of(early)
            disk.copy_out()
    finally:
        disk.close()
    return run, real_state, hooked, early


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


def full_text(path, e):
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
        return full_text(out.scratch, OSError(errno.ENOSPC, "no room for "
                                               "the library's note"))
    for line in lines:
        kind, _, rest = line.partition(" ")
        if kind == "limit-file":
            limit, size, path = (rest.split(" ", 2) + ["", ""])[:3]
            name = shown_path(path, out)
            return (f"crashcheck's scratch limit: '{name}' is "
                    f"{size_text(int(size or 0))}, more than the "
                    f"{size_text(int(limit or 0))} a run may take "
                    "(--scratch-limit)")
        if kind == "limit-stored":
            return (f"crashcheck's scratch limit: the run's snapshots passed "
                    f"{size_text(int(rest or 0))} (--scratch-limit)")
        if kind == "full":
            err, what, path = (rest.split(" ", 2) + ["", ""])[:3]
            return full_text(out.scratch, OSError(
                errno.ENOSPC, f"{err} on {what} of a snapshot"))
        if kind == "program-full" and not full_disk:
            err, call, path = (rest.split(" ", 2) + ["", ""])[:3]
            return (f"crashcheck's scratch is full: the program's {call} of "
                    f"'{shown_path(path, out)}' failed with {err}, which no "
                    f"fault planned (free space on '{base}', or give "
                    "--scratch DIR on a larger file system)")
    return ""


def shown_path(path, out):
    """PATH as the program names it from its work directory, where it is
    in it."""
    rel = coords.relative(path, str(out.workdir))
    return rel if rel is not None else path


def load_run_of(combo, scratch, out):
    """OUT, a run recorded in a scratch since moved to SCRATCH, as an
    Outcome reading its files there."""
    return Outcome(run=out.run, scratch=Path(scratch),
                   trace=trace.Lazy.load(os.path.join(scratch, "trace.jsonl")),
                   trace_from=out.trace_from, trace_full=out.trace_full)


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
