"""Processes as the tests look for them, in /proc: by a marker in their
command line (unique to a test: other runs share the machine), by process
group, or one by one. A zombie is not alive: it runs nothing."""

import os


def _state(stat):
    return stat.rsplit(")", 1)[1].split()[0]


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return _state(fh.read()) not in ("Z", "X")
    except OSError:
        return False


def marked(marker):
    """Pids of the live processes whose command line holds MARKER (a
    str), or is exactly MARKER (bytes, NUL-separated as in /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmd = fh.read()
            with open(f"/proc/{entry}/stat") as fh:
                state = _state(fh.read())
        except OSError:
            continue
        if (cmd == marker if isinstance(marker, bytes)
                else marker.encode() in cmd) and state not in ("Z", "X"):
            found.append(int(entry))
    return found


def group_members(pgid):
    """Live processes whose process group is PGID."""
    live = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            live.append(int(entry))
    return live


def sleep_in_a_cgroup_below(what):
    """A shell command that starts `sleep WHAT` in a session of its own,
    moved into a cgroup the command makes below its own (as a program
    may), and ends once it is there."""
    return ('cg=$(sed -n "s|^0::||p" /proc/self/cgroup); '
            'cg=$(grep -m1 " cgroup2 " /proc/self/mounts | cut -d" " -f2)$cg; '
            'mkdir "$cg/below" && (setsid sh -c \'echo $$ > "$0/below/'
            f'cgroup.procs"; exec sleep {what}\' "$cg" &); '
            'until grep -q . "$cg/below/cgroup.procs"; do :; done')
