"""The words of a finding and its explanation: the fault as a phrase
(fault, failed), the state that was expected, and the explanations of a
torn or missing target, a lost update and an unreported error, for a
learner: what happened, why it loses data or hides an error, what to do
instead."""

import re

from .messages import first_line, noticed, strerror
from .outcome import CHECKED, HARD
from .rules import TREE_FIX, sync_call


def program_said(o):
    """The first line the program printed on stderr, "" when none: a
    program that printed something, though not the error, did not go on
    "without a word"."""
    return first_line(o.stderr)


def on(o, call=None):
    """" on 'target.tmp'" when the faulted call's file is known and CALL
    (the case's own by default) does not name it already, as
    "write(target.tmp)#3" does."""
    call = o.call if call is None else call
    return f" on '{o.fault_path}'" if o.fault_path and "(" not in call \
        else ""


def fault(o):
    """'fsync#1=EIO' as words: "fsync#1 on 'target.tmp' failing with EIO
    (Input/output error)"."""
    action = o.plan.split(";")[0].partition("=")[2]
    if not o.call:
        # no rule: the sweep's run on a real full disk (records.FULL_DISK)
        return "a full disk (ENOSPC: No space left on device)"
    if o.kind == "short" or action.startswith("short"):
        return f"a short {o.call}{on(o)}"
    name = o.errno_name
    if name:
        return f"{o.call}{on(o)} failing with {name} ({strerror(name)})"
    return o.plan


def failed(o):
    """"fsync#1 on 'target.tmp' failed with EIO (Input/output error)": the
    call that decided (Outcome.fault_call: a fault that keeps firing may
    decide at a later call than its first)."""
    name = o.errno_name
    call = o.fault_call or o.call
    return f"{call}{on(o, call)} failed with {name} ({strerror(name)})"


def expected(o, claimed):
    if o.contract in CHECKED:
        return "the checker to accept " + ("the new state" if claimed else "old or new")
    if claimed:
        return "the new content"
    return "the old content (absent) or the new" if o.old is None else "old or new content"


def when(o):
    """What led to the state, as the start of a sentence."""
    if o.kind == "crash":
        return f"After a simulated crash at {o.call}"
    return f"After the program gave up on {fault(o)}"


def because(why):
    """": <why>." or "." for an explorer state without an account."""
    why = (why or "").strip().rstrip(".")
    return f": {why}." if why else "."


def sentence(rule):
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


def torn_text(o, verdict, st=None, rule="", why=""):
    if o.contract == "tree":
        if st is None:
            return (f"{when(o)}, the checker refuses the tree the program "
                    f"left: it is neither the old state nor the new. "
                    f"{TREE_FIX}")
        fix = sentence(rule) or TREE_FIX
        return (f"A power cut at this point ({st.label}) leaves a tree that "
                f"its checker refuses, neither the old state nor the "
                f"new{because(why)} {fix}")
    if st is not None:
        left = "absent" if verdict == "missing" else "neither old nor new"
        fix = sentence(rule) or ("Write a temporary file, fsync it, rename it over the "
                                  "target, then fsync the directory.")
        return (f"A power cut at this point ({st.label}) leaves the target "
                f"{left}{because(why)} {fix}")
    if verdict == "missing":
        return (f"{when(o)} the target is gone, so both the old and the new version "
                "are lost. Never remove or truncate the target first: write a temporary "
                "file in the same directory, fsync it, then rename() it over the target, "
                "which replaces it atomically.")
    return (f"{when(o)} the target holds neither the old nor the new version: the "
            "program wrote over it in place. Write the new content to a temporary "
            "file in the same directory, fsync it, rename it over the target, then "
            "fsync the directory.")


def lost_update_text(o):
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
        hint = (f"{failed(o)} {said}: a failure that leaves the file without its "
                "new content must end in a non-zero exit.")
    if hint is None:
        hint = ("Check the write loop (every byte, at the right offset), the length "
                "given to truncate or the temporary file, and what gets renamed.")
    return ("The program reported success but the file does not hold what it was "
            "asked to write, so the user's data is silently lost. " + hint)


def unreported_text(o, lost=""):
    """What a silent data-path fault means; LOST says what it cost, as the
    start of a sentence, when the data was lost or put at risk."""
    said = program_said(o)
    how = ("without a word" if not said else
           f"printing only {said!r}, which does not name the error")
    text = (f"{failed(o)}, yet the program exited 0 {how}, so whoever ran "
            "it believes the data is safe.")
    if lost:
        text += f" {lost}"
    text += (" Check the result of every write, fflush, fsync and close, and exit "
             "non-zero with a message naming the call and strerror(errno).")
    if sync_call(o.call):
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
