"""A real full disk for one run: a small tmpfs mounted on the run's work
directory.

Most faults are injected (faults/libcrashcheck.so), but one failure cannot
be: a store into a shared mapping that needs a block on a full filesystem
gets no error return, the kernel sends SIGBUS. Only a filesystem that is
really full shows it. A spec with `disk = "full"` (harness/engine/spec.py)
has one more case per combo (records.FULL_DISK), whose run is done here:
the work directory (where the target and the program's temp files live)
is a tmpfs sized by `capacity` to hold the old target plus one page less
than the new payload needs, so the replacement almost fits and does not.
Everything else of the run (the new content the program reads, the trace,
the snapshots) stays on the ordinary scratch filesystem: the harness's own
writes must not be the ones that fail.

Mounting needs root (CAP_SYS_ADMIN); anywhere else `full_disk` raises
Unavailable with the reason, and the sweep turns that into a skipped case.

When the run is over, the files are moved off the tmpfs into the plain
directory underneath before it is unmounted, so that the judge, the report
and `--cc-keep` see the work directory exactly as the program left it.
Moved, a file is another inode: such a run is never the baseline, whose
files explorer.unseen compares with its trace inode by inode (the
mmap-ftruncate variant's `target` once read as changed by a call
crashcheck cannot see, when its baseline ran here).
"""

import os
import shutil
import subprocess
from contextlib import contextmanager
from pathlib import Path

PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


class Unavailable(Exception):
    """A full disk cannot be made here; str() is the one-line reason."""

    def __init__(self, reason):
        self.reason = " ".join(str(reason).split())
        super().__init__(self.reason)


def pages(nbytes):
    return (nbytes + PAGE - 1) // PAGE


def capacity(old_size, new_size):
    """Bytes of the tmpfs: the old target's pages plus one page less than
    the new payload needs (nothing less than the old target). tmpfs
    charges whole pages for file data and nothing for directories."""
    old = pages(old_size or 0)
    return (old + max(pages(new_size) - 1, 0)) * PAGE


def _run(argv):
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        raise Unavailable(f"{argv[0]} not found: cannot mount a tmpfs") from None
    except subprocess.TimeoutExpired:
        raise Unavailable(f"{' '.join(argv)}: no answer after 30s") from None


def _why(proc):
    text = (proc.stderr or proc.stdout or "").strip().splitlines()
    return text[-1] if text else f"exit status {proc.returncode}"


def mount(directory, size):
    """Mount a tmpfs of SIZE bytes on DIRECTORY (which must exist and be
    empty); Unavailable when that cannot be done here."""
    if os.geteuid() != 0:
        raise Unavailable(f"a full disk needs a tmpfs mount, which needs root "
                          f"(running as uid {os.geteuid()})")
    if shutil.which("mount") is None:
        raise Unavailable("mount(8) not found: cannot mount a tmpfs")
    size = max(int(size), PAGE)
    proc = _run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755",
                 "crashcheck-full", str(directory)])
    if proc.returncode != 0:
        raise Unavailable(f"mount -t tmpfs on '{directory}' failed: {_why(proc)}")


def unmount(directory):
    """Unmount DIRECTORY; lazily when a straggler keeps it busy (the
    runner has killed the process group, but a dying process may still
    hold its cwd there for a moment)."""
    proc = _run(["umount", str(directory)])
    if proc.returncode == 0:
        return
    lazy = _run(["umount", "-l", str(directory)])
    if lazy.returncode != 0:
        raise OSError(f"umount '{directory}' failed: {_why(proc)}; "
                      f"umount -l: {_why(lazy)}")


def _move_out(directory):
    """Copy the mount's contents aside, unmount, and put them back on the
    plain directory underneath."""
    directory = Path(directory)
    aside = directory.with_name(directory.name + ".full-disk")
    if aside.exists():
        shutil.rmtree(aside)
    try:
        shutil.copytree(directory, aside, symlinks=True)
    finally:
        unmount(directory)
    for entry in sorted(aside.iterdir()):
        os.rename(entry, directory / entry.name)
    aside.rmdir()


@contextmanager
def full_disk(directory, old_size, new_size):
    """Run the body with DIRECTORY on a tmpfs of capacity(old_size,
    new_size) bytes, created empty (DIRECTORY is made if missing and must
    be empty). Afterwards DIRECTORY is a plain directory again, holding
    what the body left on the tmpfs. Raises Unavailable before the body
    runs when the tmpfs cannot be mounted."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    if any(directory.iterdir()):
        raise ValueError(f"full_disk: '{directory}' is not empty")
    mount(directory, capacity(old_size, new_size))
    try:
        yield directory
    finally:
        _move_out(directory)


@contextmanager
def disk_for(full, directory, old, new):
    """The sweep's hook: when FULL (a spec's full-disk case), full_disk
    sized from the old and new contents (bytes; old None when absent);
    else nothing at all."""
    if not full:
        yield Path(directory)
        return
    with full_disk(directory, len(old or b""), len(new)) as d:
        yield d


def skipped_run(argv, reason):
    """What the sweep records for a run that could not be made: exit 77
    with the reason on stderr, which the oracle and the enumeration
    already read as "skipped here, and why"."""
    from . import runner
    return runner.Run(argv=list(argv), status=runner.EXIT_SKIP, signal=None,
                      timed_out=False, duration=0.0, stdout=b"",
                      stderr=f"{reason}\n".encode())
