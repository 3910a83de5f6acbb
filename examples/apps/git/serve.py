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
    output = (p.stdout + p.stderr).decode("utf-8", "replace")
    if p.returncode < 0:
        # a check killed by a signal cannot answer, and crashcheck says
        # so of the case: this server ends, which it reads the same way
        sys.stderr.write(f"git/check was killed by signal {-p.returncode}"
                         f"\n{output}")
        sys.exit(1)
    # as crashcheck reads a check: its stdout, then its stderr
    return {"status": p.returncode, "output": output}


def main():
    for line in sys.stdin:
        sys.stdout.write(json.dumps(answer(json.loads(line))) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
