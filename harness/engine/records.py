"""Questions about a run's trace records: which calls touch the work
directory (touches, targeted_calls), which are crash points, where a
fault fired and whether the program retried it, which names a program
synced, the calls a full disk failed (FULL_DISK), the records up to a
crash. Pure functions of records (and a work directory's path): the
baseline (baseline.py) and the judge (judge.py) ask them."""

import os

from .. import calls
from . import trace
from ..judging import causes, symbols

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
