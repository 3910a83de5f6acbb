"""The cause of a failing crash state: the property it breaks
(properties.py), the rule that follows from it and from the calls the
program made, the change that decided it, and the state's account of
what persisted, never contradicting the state shown (state_cause)."""

import os
import re

from .explorer import RULE_FSYNC_FAILED, RULE_IN_PLACE, RULE_ONE_RENAME
from .outcome import HARD
from .rules import (RULE_APPEND, RULE_KEEP_TARGET, RULE_NO_SYNC_RETRY,
                    RULE_ORDER, RULE_SYNC_FAILED, RULE_WHOLE_BEFORE_RENAME,
                    TREE_FIX, skipped_rule, sync_call)


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


def advice_for(rule, change):
    """RULE as the explanation says it: naming the file of the deciding
    CHANGE where the rule is one of those that name none."""
    if change and rule in _NAMED_ADVICE:
        return _NAMED_ADVICE[rule].format(name=change[1])
    if rule == RULE_IN_PLACE:
        return ("write a temporary file in the same directory, fsync it, "
                "rename it over the target and fsync the directory, instead "
                "of rewriting the target in place")
    return rule


def state_cause(o, st, verdict, claimed):
    """(property, rule, deciding change, why) of a failing crash state:
    the property it breaks (properties.py), the advice that follows from
    it and from the calls the program made, the change that decided it,
    and the state's account of what persisted, never contradicting the
    state shown. The first of the steps below that names one decides."""
    lost = _lost_changes(st)
    why = _why(st)
    rule = _fitted_rule(o, st, o.calls, fallback=verdict == "not-durable")
    change = _deciding_change(st, rule, o.target_name)
    return (_failed_sync_cause(o, lost, rule, change, why)
            or _skipped_sync_cause(o, lost, why)
            or _midway_cause(o, st, lost, rule, change, why)
            or _torn_append_cause(o, st, lost, why)
            or _ordering_cause(o, st, lost, rule, change, why)
            or _target_cause(o, st, verdict, claimed, lost, rule, change,
                             why))


def _failed_sync_cause(o, lost, rule, change, why):
    """A failed sync dropped what the state lost: what the program did
    after the failure decides, not where a sync is missing."""
    target = o.target_name
    failed = next(((k, n) for k, n, _ in lost if k == "sync-failure"), None)
    if failed is None and rule not in (RULE_NO_SYNC_RETRY, RULE_FSYNC_FAILED):
        return None
    change = failed or change
    if o.fault_retried and sync_call(o.call or ""):
        return "error/unreported", RULE_NO_SYNC_RETRY, change, why
    if o.status not in (0, None) and target is not None and \
            not o.target_renamed and not o.target_removed:
        # it stopped at the failure and said so: what the failed sync
        # dropped was the target itself, being rewritten in place
        return ("atomicity/calls", RULE_IN_PLACE, ("overwrite", target),
                why)
    return "error/ignored", RULE_SYNC_FAILED, change, why


def _skipped_sync_cause(o, lost, why):
    """The fault made the program skip a sync it makes otherwise (unless
    the program loses this data without the fault too: that defect)."""
    skipped = None if o.known_at_risk else _skipped(o, lost)
    if skipped is None:
        return None
    call = o.call.split("#")[0]
    name = skipped[1]
    why = (f"{why}; the failed {call} made the program skip the sync of "
           f"'{_home(skipped, name)}' it makes in a run without the fault")
    return "error/ignored", skipped_rule(call), skipped, why


def _midway_cause(o, st, lost, rule, change, why):
    """The state lost nothing: everything the program had done by then
    reached the disk, and that is itself neither old nor new: it was
    midway."""
    if lost or getattr(st, "lost", None) is None:
        return None
    target = o.target_name
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


def _torn_append_cause(o, st, lost, why):
    """An append cut between its write and the sync the program makes
    after this point (_torn_append)."""
    appended = _torn_append(o, st, lost)
    if appended is None:
        return None
    why = (f"{why}; the program syncs '{appended}' after this point, so "
           "the append was cut between its write and its sync")
    return "atomicity/append", RULE_APPEND, ("data", appended), why


def _ordering_cause(o, st, lost, rule, change, why):
    """A change the state kept, made after one it lost (Outcome.order),
    or the new name of a file whose data did not persist."""
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
    if later is None:
        return None
    _, then = later
    if rule in _TARGET_ORDER_RULES or then is None:
        return "ordering", rule, change or ("rename", o.target_name), why
    # the defect is where the program made the change that depends
    # on what it had not made durable: one place, whichever file
    # each state lost (git's ref update, gzip's removal of its input)
    return "ordering", RULE_ORDER, (then[0], then[1]), why


def _target_cause(o, st, verdict, claimed, lost, rule, change, why):
    """What happened to the target itself: not durable after the claim,
    or, before it, an update half on the disk."""
    target = o.target_name
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
    kinds = {k for k, _, _ in lost}
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
