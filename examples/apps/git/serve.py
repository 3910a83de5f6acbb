#!/usr/bin/python3
# git/serve.py: the check_server of examples/apps/git.toml (git/check
# --serve runs it, in git/env's environment). git's checker is four git
# commands, not an interpreter's start-up, so what a server saves is the
# harness's work around each `check` (a confinement view, a cgroup, a
# process started through both) rather than the checker's own: here each
# state still gets a fresh git/check, the same script, in the state's
# directory, and answers what it printed and how it exited. Nothing is
# kept from one state to the next.
#
# One JSON object a line each way (harness/engine/checkserver.py):
#   in:  {"dir": "/abs/state", "expect": "new"}
#   out: {"status": 0, "output": "..."}
import json
import os
import subprocess
import sys

CHECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check")


def answer(ask):
    env = dict(os.environ, CRASHCHECK_EXPECT=ask["expect"])
    p = subprocess.run([CHECK], cwd=ask["dir"], env=env,
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    # as crashcheck reads a check: its stdout, then its stderr; killed by
    # a signal, the status a shell would give
    status = p.returncode if p.returncode >= 0 else 128 - p.returncode
    return {"status": status,
            "output": (p.stdout + p.stderr).decode("utf-8", "replace")}


def main():
    for line in sys.stdin:
        sys.stdout.write(json.dumps(answer(json.loads(line))) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
