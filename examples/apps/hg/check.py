#!/usr/bin/python3
# hg/check.py: the work of hg/check (the checker of examples/apps/hg.toml),
# which runs it in hg/env's environment, in a crash state's directory.
# Exit 0 when `hg verify` finds the repository sound and the tip is the
# commit "old" or "new" with the files it should hold (only "new" once
# the run had exited 0: CRASHCHECK_EXPECT=new); else one line saying what
# it found. A lock or a journal a crash left behind is Mercurial's to
# deal with: hg recover first rolls back an interrupted transaction, as
# its own message tells a user to.
#
# The hg commands run in this one Python process, through Mercurial's own
# command dispatcher, as `hg` would run them: one interpreter start-up per
# crash state instead of five. With --serve it is the recipe's
# check_server: one start-up for all the states of a sweep process, which
# it reads a line at a time (harness/engine/checkserver.py): Mercurial's
# import is 0.3 s of a 0.31 s check.
import io
import json
import os
import sys
import traceback

from mercurial import dispatch

WANT = {
    "old": "README docs/notes.txt src/main.c src/util.c",
    "new": "README src/main.c src/util.c src/util.h tests/cases.txt",
}


def hg(*args):
    """(status, stdout, stderr) of one hg command, run in this process."""
    out, err = io.BytesIO(), io.BytesIO()
    req = dispatch.request([a.encode() for a in args], fin=io.BytesIO(),
                           fout=out, ferr=err, fmsg=err)
    status = dispatch.dispatch(req)
    return (status or 0, out.getvalue().decode("utf-8", "replace"),
            err.getvalue().decode("utf-8", "replace"))


def first(text):
    lines = [x for x in text.splitlines() if x.strip()]
    return lines[0][:200] if lines else ""


class Rejected(Exception):
    """The state is not acceptable: str() says why, in one line."""


def judge(expect):
    """Judge the repository in the working directory; Rejected if it is
    not acceptable with CRASHCHECK_EXPECT=EXPECT."""
    for lock in (".hg/wlock", ".hg/store/lock"):
        if os.path.lexists(lock):
            os.unlink(lock)
    if os.path.lexists(".hg/store/journal"):
        status, out, err = hg("recover")
        if status:
            raise Rejected(f"hg recover failed: {first(out + err)}")
    status, out, err = hg("verify", "-q")
    if status:
        raise Rejected(f"hg verify failed: {first(out + err)}")
    status, tip, warned = hg("log", "-r", "tip", "-T", "{desc}")
    if status:
        raise Rejected(f"hg log failed: {first(warned)}")
    # hg reading the repository with a warning (the working directory's
    # parent names a commit the store does not hold: "ignoring unknown
    # working parent") is a state hg itself finds inconsistent
    if warned.strip():
        raise Rejected(f"hg log warns: {first(warned)}")
    if tip not in WANT:
        raise Rejected(f"tip is '{tip}', not old or new")
    status, out, err = hg("files", "-r", "tip")
    files = " ".join(out.split())
    if files != WANT[tip]:
        raise Rejected(f"tip '{tip}' holds {files}")
    if (expect, tip) not in (("new", "new"), ("old-or-new", "old"),
                             ("old-or-new", "new")):
        raise Rejected(f"tip is '{tip}' (CRASHCHECK_EXPECT={expect})")


def once():
    """check: the state in the working directory, the answer as the exit
    status and one line."""
    try:
        judge(os.environ.get("CRASHCHECK_EXPECT", "new"))
    except Rejected as e:
        print(e)
        sys.exit(1)


def serve():
    """check_server: a state a line on stdin, {"dir": ..., "expect": ...};
    an answer a line on stdout, {"status": ..., "output": ...}. Each
    state is judged in its own directory by fresh dispatches: nothing of
    one state's repository is kept for the next."""
    for line in sys.stdin:
        ask = json.loads(line)
        os.chdir(ask["dir"])
        try:
            judge(ask["expect"])
            answer = {"status": 0, "output": ""}
        except Rejected as e:
            answer = {"status": 1, "output": f"{e}\n"}
        except Exception:
            # what check says of it: Python's traceback, exit 1
            answer = {"status": 1, "output": traceback.format_exc()}
        os.chdir("/")
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if sys.argv[1:] == ["--serve"]:
    serve()
else:
    once()
