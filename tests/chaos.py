#!/usr/bin/python3
"""Chaos: small audits while crashcheck's own processes are killed,
stopped and starved of scratch space at random points.

    tests/chaos.py [--rounds N] [--seed S] [--actions A,B...] [--quick]

Each round starts `crashcheck audit --jobs 2` on a small program (a
writer that waits for a child it starts, so that nothing legitimately
outlives it), then, after a random delay, does one random thing to it:
SIGKILL, SIGTERM, SIGSTOP then SIGCONT, to the parent, to a pool process
or to a fork server; ^C to the whole group; or fills the scratch file
system until it is full, for a while. Then it waits (bounded) for the
audit to end and checks:

- no process it started is left (every process seen in its tree during
  the round, and every process of the program, found by a marker in its
  command line);
- nothing of its runs is left in its scratch base (the round's /dev/shm
  is a file system of its own: a private mount namespace);
- its cgroup is gone;
- its reports, if any, are complete (every case judged, missing 0) or
  say INTERRUPTED (summary.interrupted, and report.md's first line);
- no file changed outside --out and the scratch (/tmp, /var/tmp and the
  program's directory are compared before and after; the tree is read
  only).

Root only (mount namespaces); prints one line per round and a summary,
and exits 1 if any round broke a promise, 77 when it cannot run here.
tests/test_safety.py runs a few rounds in `make check`; `make chaos` runs
CHAOS_ROUNDS (default 100).
"""

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CRASHCHECK = ROOT / "scripts" / "crashcheck"

# The round's /dev/shm is the audits' scratch (--scratch): large enough
# that crashcheck would choose it anyway (runner.SHM_MIN_FREE), so that
# what a killed audit leaves there is what the checks wait for and see
NAMESPACE = r"""
SHM_SIZE=320m
. "$ROOT/tests/private-mounts.sh"
exec /usr/bin/python3 "$ROOT/tests/chaos.py" --inside "$@"
"""

ACTIONS = ("kill-parent", "term-parent", "stop-parent", "int-group",
           "kill-worker", "term-worker", "stop-worker",
           "kill-server", "stop-server", "fill-scratch", "nothing")

PROGRAM = r"""#!/bin/sh
# chaos writer MARKER: a temp file, written, synced, renamed; a child that
# it waits for
: MARKER
sleep 0.0MARKERN &
cp "$2" "$1.tmp" || exit 1
sync "$1.tmp" 2>/dev/null
mv "$1.tmp" "$1" || exit 1
wait
"""


def procs():
    """pid -> (ppid, state, cmdline bytes, environ bytes or b'')."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                stat = fh.read()
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmd = fh.read()
        except OSError:
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                env = fh.read()
        except OSError:
            env = b""
        fields = stat[stat.rfind(b")") + 2:].split()
        found[pid] = (int(fields[1]), fields[0].decode(), cmd, env)
    return found


def tree_of(pid, table):
    out, frontier = set(), [pid]
    while frontier:
        p = frontier.pop()
        kids = [c for c, v in table.items() if v[0] == p]
        out.update(kids)
        frontier += kids
    return out


def snapshot(paths, skip):
    seen = {}
    for base in paths:
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = [d for d in dirnames
                           if not any(os.path.join(dirpath, d).startswith(s)
                                      for s in skip)]
            for name in filenames + dirnames:
                p = os.path.join(dirpath, name)
                if any(p.startswith(s) for s in skip):
                    continue
                try:
                    st = os.lstat(p)
                except OSError:
                    continue
                # a directory by its name alone: making --out in one
                # changes its time
                seen[p] = None if os.path.isdir(p) and not os.path.islink(p) \
                    else (st.st_size, st.st_mtime_ns)
    return seen


def fill(path, seconds):
    """Fill the file system of PATH to the last byte, hold it for
    SECONDS, then give the space back."""
    filler = Path(path) / "chaos-filler"
    try:
        with open(filler, "wb") as fh:
            block = b"\0" * (1 << 20)
            while True:
                try:
                    fh.write(block)
                    fh.flush()
                except OSError:
                    break
        time.sleep(seconds)
    finally:
        try:
            filler.unlink()
        except FileNotFoundError:
            pass


def one_round(i, rng, base, action, quick=False):
    marker = f"chaos{os.getpid()}r{i}"
    work = base / f"r{i}"
    work.mkdir()
    prog = work / "writer.sh"
    prog.write_text(PROGRAM.replace("MARKERN", str(i % 10))
                    .replace("MARKER", marker))
    prog.chmod(0o755)
    out = work / "out"
    delay = rng.uniform(0.0, 2.5)
    before = snapshot(["/tmp", "/var/tmp"], skip=[str(out), "/tmp/home"])
    faults = ["--faults", "baseline,eio,crash,powerloss", "--model", "posix"] \
        if quick else []
    proc = subprocess.Popen(
        [str(CRASHCHECK), "audit", "--jobs", "2", "--timeout", "5", *faults,
         "--scratch", "/dev/shm", "--out", str(out), "--", str(prog),
         "{target}", "{new}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True)
    seen = set()
    broke = []
    deadline = time.monotonic() + delay
    while time.monotonic() < deadline and proc.poll() is None:
        seen |= tree_of(proc.pid, procs())
        time.sleep(0.02)
    table = procs()
    mine = tree_of(proc.pid, table)
    seen |= mine
    workers = [p for p in mine if table[p][0] == proc.pid
               and b"harness.commands.cli" in table[p][2]]
    servers = [p for p in mine if b"CRASHCHECK_SERVE=" in table[p][3]]
    victim = None
    if proc.poll() is None:
        if action == "kill-parent":
            victim = proc.pid
            os.kill(proc.pid, signal.SIGKILL)
        elif action == "term-parent":
            victim = proc.pid
            os.kill(proc.pid, signal.SIGTERM)
        elif action == "stop-parent":
            victim = proc.pid
            os.kill(proc.pid, signal.SIGSTOP)
            time.sleep(rng.uniform(0.1, 1.5))
            os.kill(proc.pid, signal.SIGCONT)
        elif action == "int-group":
            victim = proc.pid
            os.killpg(proc.pid, signal.SIGINT)
        elif action.endswith("worker") and workers:
            victim = rng.choice(workers)
        elif action.endswith("server") and servers:
            victim = rng.choice(servers)
        elif action == "fill-scratch":
            fill("/dev/shm", rng.uniform(0.2, 1.5))
        if victim is not None and victim != proc.pid:
            try:
                if action.startswith("kill"):
                    os.kill(victim, signal.SIGKILL)
                elif action.startswith("term"):
                    os.kill(victim, signal.SIGTERM)
                else:
                    os.kill(victim, signal.SIGSTOP)
                    time.sleep(rng.uniform(0.1, 1.5))
                    os.kill(victim, signal.SIGCONT)
            except ProcessLookupError:
                pass
    # the audit ends by itself (bounded: a hang is a broken promise)
    try:
        _, err = proc.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        broke.append("the audit did not end within 600 s")
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
    status = proc.returncode
    # what is left: asynchronous killing (the watchdog) gets a bound
    left = []
    end = time.monotonic() + 30
    while time.monotonic() < end:
        table = procs()
        left = sorted(p for p in seen if p in table and table[p][1] not in "ZX")
        left += sorted(p for p, v in table.items() if marker.encode() in v[2]
                       and v[1] not in "ZX" and p not in left)
        shm = sorted(os.listdir("/dev/shm"))
        # the watchdog removes the cgroup before the scratch, but a run
        # killed before it made any scratch leaves none to wait for
        cg = [d for d in _cgroups() if d.startswith(f"crashcheck-{proc.pid}-")]
        if not left and not shm and not cg:
            break
        time.sleep(0.05)
    if left:
        broke.append("processes left: " + ", ".join(
            f"{p} {table[p][2][:60]!r}" for p in left if p in table))
    shm = sorted(os.listdir("/dev/shm"))
    if shm:
        broke.append(f"left in the scratch base: {shm}")
    cg = [d for d in _cgroups() if d.startswith(f"crashcheck-{proc.pid}-")]
    if cg:
        broke.append(f"cgroups left: {cg}")
    report = "none"
    if (out / "results.json").exists():
        try:
            doc = json.loads((out / "results.json").read_text())
        except ValueError as e:
            broke.append(f"results.json unreadable: {e}")
        else:
            s = doc["summary"]
            first = (out / "report.md").read_text().splitlines()[0]
            if s.get("interrupted"):
                report = "interrupted"
                if s["passed"] or first != "# crashcheck report: INTERRUPTED":
                    broke.append(f"an interrupted report does not say so: "
                                 f"{first!r} passed={s['passed']}")
            else:
                report = "complete"
                if s.get("missing") or s.get("expected") != len(doc["cases"]):
                    broke.append(f"a report lacks cases: expected "
                                 f"{s.get('expected')}, {len(doc['cases'])} "
                                 f"judged, missing {s.get('missing')}")
                if first != "# crashcheck report":
                    broke.append(f"a complete report's first line: {first!r}")
    after = snapshot(["/tmp", "/var/tmp"], skip=[str(out), "/tmp/home"])
    changed = sorted(set(before) ^ set(after) |
                     {p for p in before if p in after and before[p] != after[p]})
    if changed:
        broke.append(f"files changed outside --out and the scratch: "
                     f"{changed[:5]}")
    tail = err.decode("utf-8", "replace").strip().splitlines()[-1:] \
        if err else []
    line = {"round": i, "action": action, "delay": round(delay, 2),
            "victim": "parent" if victim == proc.pid else
            ("yes" if victim else "none"), "status": status,
            "report": report, "broke": broke,
            "last_line": tail[0][:120] if tail else ""}
    shutil.rmtree(work, ignore_errors=True)
    return line


def _cgroups():
    try:
        return os.listdir("/sys/fs/cgroup/unified")
    except OSError:
        try:
            return os.listdir("/sys/fs/cgroup")
        except OSError:
            return []


def inside(args):
    rng = random.Random(args.seed)
    base = Path("/tmp/chaos")
    base.mkdir()
    counts = {}
    failed = 0
    for i in range(args.rounds):
        action = (args.actions[i % len(args.actions)] if args.actions
                  else rng.choice(ACTIONS))
        line = one_round(i, rng, base, action, args.quick)
        print(json.dumps(line), flush=True)
        counts[line["action"]] = counts.get(line["action"], 0) + 1
        failed += bool(line["broke"])
    print(json.dumps({"rounds": args.rounds, "seed": args.seed,
                      "failed": failed, "actions": counts}), flush=True)
    return 1 if failed else 0


def main():
    p = argparse.ArgumentParser(prog="chaos.py", description=__doc__.split(
        "\n\n")[0])
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--actions", default="",
                   help="the actions to take, in turn (default: one at "
                        "random each round): " + ",".join(ACTIONS))
    p.add_argument("--quick", action="store_true",
                   help="smaller audits (fewer fault classes, one model)")
    p.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    args.actions = [a for a in args.actions.split(",") if a]
    for a in args.actions:
        if a not in ACTIONS:
            p.error(f"--actions: unknown action '{a}'")
    if args.seed is None:
        args.seed = random.randrange(1 << 30)
    if args.inside:
        return inside(args)
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        print("chaos.py: needs root and unshare(1) (a private mount "
              "namespace)", file=sys.stderr)
        return 77
    env = dict(os.environ, ROOT=str(ROOT))
    return subprocess.run(["unshare", "-m", "/bin/sh", "-c", NAMESPACE, "sh",
                           "--rounds", str(args.rounds), "--seed",
                           str(args.seed), "--actions", ",".join(args.actions)]
                          + (["--quick"] if args.quick else []),
                          env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
