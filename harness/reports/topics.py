"""`crashcheck help TOPIC`: the topics that are not one command's options.

Each topic is a function returning its text, built where it can be from
the tables the harness itself runs on (the verdicts of the oracle, the
calls of faults/calls.def, the crash models), so that the help cannot
name a verdict, a call or a model the harness does not know. The man page (harness/commands/manpage.py)
prints the same topics as sections of its own.
"""

import textwrap

from .. import calls as calls_mod
from ..judging import models as models_mod, oracle, properties

# What each verdict means (docs/crash-model.md, "Verdicts"). Only those the
# oracle gives are shown; a verdict the oracle gives and this table lacks
# fails tests/test_cli.py.
MEANINGS = {
    "ok": "the contract held",
    "unreported-error":
        "a hard fault (ENOSPC, EIO) hit a call on the data path, the "
        "program exited 0 without naming the error, and the data is at risk",
    "ignored-error":
        "a hard fault hit a call on the data path and the program exited 0 "
        "without naming the error, but every crash state after exit still "
        "holds the new content: error checking is broken, though nothing "
        "was lost this time",
    "lost-update":
        "the program exited 0, but the target it left is not the new content",
    "torn":
        "the target exists but is neither the old nor the new content, "
        "where the contract forbids that",
    "missing": "the target is gone where the contract requires old or new",
    "not-durable":
        "the program exited 0, but a crash state after its exit lacks the "
        "new content: a power cut then would lose what it claimed to save",
    "gave-up-on-transient":
        "a transient fault (EINTR, a short write) made the program exit "
        "non-zero; it should have retried or written the rest",
    "crashed": "the program died of a signal crashcheck did not send",
    "hang": "it ran past its time limit (ten times its run without a "
            "fault, at least the spec's timeout), spinning on a failing "
            "call or blocked, or still at work when the limit, pushed back "
            "while it slept or made progress (never past a cut of its "
            "trace), ran out; its process group was killed",
    "skipped":
        "the case cannot run here, with the reason (e.g. O_DIRECT "
        "unsupported on this filesystem)",
    "harness-error":
        "the case tested nothing: its planned fault never fired, the "
        "baseline failed with no fault, or nothing of the program was "
        "intercepted. A failure, never a pass",
}


def _table(rows, width=78, indent=2, gap=2):
    """Two columns: a name, then its text wrapped beside it."""
    left = max(len(name) for name, _ in rows) + gap
    lines = []
    for name, text in rows:
        wrapped = textwrap.wrap(text, width - indent - left) or [""]
        lines.append(" " * indent + name.ljust(left) + wrapped[0])
        lines += [" " * (indent + left) + w for w in wrapped[1:]]
    return lines


def _para(text, width=78):
    return textwrap.fill(" ".join(text.split()), width)


def verdicts(width=78):
    rows = [(v, MEANINGS[v]) for v in oracle.VERDICTS]
    return "\n".join([
        _para("""Every case ends in exactly one verdict. A finding is a case
              whose verdict is neither ok nor skipped; the console prints it
              as FINDING ID: VERDICT: what was expected and what was found,
              then the command that reruns it.""", width),
        "",
        *_table(rows, width),
        "",
        _para("""A hard fault does not oblige a program to fail: one that
              names the error on stderr, writes its data again to a fresh
              file and syncs that, and leaves the new content in every
              crash state after exit, is ok ("recovered"). Calling fsync
              again on the same data is not a recovery: after a failed
              fsync Linux drops the dirty data it covered, so the retry
              succeeds and the data is still not on disk: unreported-error
              when the program said nothing of the failure, not-durable when
              it printed the error and exited 0 all the same.""", width),
        "",
        _para("""Every finding names the property it breaks, in ALICE's
              classes (its advice follows from it), and has a severity:
              error where data is lost or at risk, or the program died or
              never finished; warning for ignored-error and for a finding
              whose fault cannot happen where the program ran (EINTR on a
              local regular file with no signal handler installed without
              SA_RESTART), each saying when it would matter. Warnings are
              reported and do not fail the run unless --fail-on warning
              (or the spec's fail_on) asks for the strict reading, as the
              built-in corpus does. The properties:""", width),
        "",
        *_table(list(properties.PROPERTIES.items()), width),
        "",
        _para("""Buggy variants (specs with [[expect]]): a case passes when
              its verdict is one the spec expects of it (the variant is
              caught). A variant is NOT CAUGHT when some expectation is met
              by no case of the run, and fixed only when its sweep is clean;
              an expectation no case of the run applies to (say, an
              xfs one under the default --model) is not run, and fails
              nothing.""", width),
        "",
        "The contract they are judged by: docs/crash-model.md.",
    ])


def plans(width=78):
    table = calls_mod.table()
    order = ("eintr", "short", "enospc", "eio", "crash")
    rows = []
    for name, call in table.items():
        faults = [k for k in order if k in call.faults]
        if "errno" in call.faults:
            faults.append("any errno by hand")
        rows.append((name, ", ".join(faults) or "none"))
    return "\n".join([
        "A plan names the calls to fail and how:",
        "",
        "  PLAN   := RULE (';' RULE)*",
        "  RULE   := CALL [ '(' GLOB ')' ] [ '@' THREAD ] '#' N [ '+' [ '+' ] ]",
        "            '=' ACTION",
        "  ACTION := ERRNO-NAME | 'short' [ ':' BYTES ] | 'crash' | 'crash-after'",
        "",
        *_table([
            ("N", "counts calls to CALL from 1, across the whole process "
                  "tree; with (GLOB), only calls on a path matching it "
                  "(fnmatch, against the full path, its last component and "
                  "its path relative to the work directory)"),
            ("@THREAD", "count only the calls of that thread of its process: "
                        "1 the one it started with, then 2, 3, ... in the "
                        "order its threads were made (a trace line of a "
                        "thread past the first says its \"thread\")"),
            ("+", "fire on that call and every later one it counts (a "
                  "full disk stays full; with a glob, every later call on "
                  "a matching path)"),
            ("++", "with a glob or a thread: fire on that call, then on "
                   "every later call of CALL on any path, in any thread "
                   "(the sweep's persistent faults: a disk that filled up "
                   "there fails every file's writes)"),
            ("ERRNO-NAME", "fail the call with that errno: EIO, ENOSPC, "
                           "EINTR, EDQUOT, EFBIG, EROFS, ..."),
            ("short[:B]", "really write B bytes (default half, at least 1; "
                          "on an O_DIRECT descriptor rounded down to its "
                          "alignment) and return that count"),
            ("crash", "SIGKILL just before the call"),
            ("crash-after", "SIGKILL just after it returns"),
        ], width),
        "",
        "Examples: fsync#1=EIO  write#3+=ENOSPC  write(*.tmp)#2=short:100",
        "          write(target.tmp)#3++=ENOSPC  pwrite(data)@2#1=EIO",
        "          rename#1=crash  'fsync#1=EIO;rename#1=crash'",
        "",
        _para("""Try one with `crashcheck trace -- PROGRAM ARGS` (the calls
              numbered as plans count them), then `crashcheck inject PLAN --
              PROGRAM ARGS`. The calls a plan can name, and the fault
              classes a sweep plans for each (from faults/calls.def):""", width),
        "",
        *_table(rows, width),
    ])


def models(width=78):
    rows = [(m, models_mod.get(m).summary) for m in models_mod.MODELS]
    policies = []
    for m in models_mod.MODELS:
        pol = models_mod.get(m).policies()
        text = "; ".join(f"{k}={','.join(v) if isinstance(v, list) else v}"
                         for k, v in pol.items() if v != [])
        policies.append(f"  {m}:")
        policies += textwrap.wrap(text, width, initial_indent=" " * 4,
                                  subsequent_indent=" " * 4,
                                  break_on_hyphens=False)
    return "\n".join([
        _para(f"""A crash model says what a power cut may leave of a
              program's changes: which are durable after each sync, and
              in which order the rest may reach the disk. Power-loss cases
              are judged under each model --model names (one, a comma
              list, or all; default {','.join(models_mod.DEFAULT)}), and a
              finding names every model it holds under.""", width),
        "",
        *_table(rows, width),
        "",
        _para("""Their policies (harness/judging/models/base.py says what
              each means):""", width),
        "",
        *policies,
        "",
        _para("""What each persists, in which order, and its sources:
              docs/crash-model.md, "Filesystem models".""", width),
    ])


TOPICS = {
    "verdicts": ("what each verdict means, caught and not caught", verdicts),
    "plans": ("the plan language, and the calls a plan can name", plans),
    "models": ("the crash models power loss is judged under", models),
}
