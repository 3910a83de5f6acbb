"""Output directories: where crashcheck writes, and what it may remove.

A command's output directory (--out of run, audit, replay and merge) is
crashcheck's only when crashcheck made it, or was given it empty; either
way it gets a marker file, MARKER, that says so. A directory that is not
empty and has no marker is refused (one line, exit 2): it holds something
of the user's, and crashcheck never writes over or removes what it did
not make. In a marked directory crashcheck replaces its own files only:
the reports (each written whole to a temporary file and renamed), a
case's directory under cases/ (one that holds crashcheck's result.json),
a replay's README.txt and state/ (beside that README.txt), and .work and
.audit; anything else there stays as it is.

One run at a time: the marker is locked (flock) for as long as the
command runs, and a second command given the same directory is refused
naming the process that holds it. The lock goes with the process (and
with every process forked from it), so a crashcheck killed outright
leaves no stale lock behind.
"""

import errno
import fcntl
import os
import shutil
from pathlib import Path

from .. import UsageError

MARKER = ".crashcheck"
MARKER_TEXT = ("This directory holds crashcheck's output; crashcheck replaces "
               "its own files here and nothing else. While a crashcheck "
               "command writes here, it holds a lock on this file.\n")

# What crashcheck writes in an output directory, by name: a directory of
# only these (an output of an earlier crashcheck, made before markers)
# is taken as one of ours.
OURS = {"results.json", "report.md", "report.html", "junit.xml",
        "results.sarif", "cases",
        ".work", ".audit", "README.txt", "state", "rerun", "replay",
        "merged", MARKER}
# What a case's directory (cases/<id>/) holds, all of it crashcheck's.
CASE_FILE = "result.json"

_claims = {}    # real path -> _Claim, of this process


class _Claim:
    def __init__(self, path, fd, created):
        self.path, self.fd, self.created = path, fd, created


def _ours(path):
    """Whether PATH (an existing directory) is crashcheck's to write in:
    marked, empty, or holding only what crashcheck writes (and marked
    subdirectories). The first name that is not, or None."""
    try:
        names = os.listdir(path)
    except OSError as e:
        raise UsageError(f"--out: cannot read '{path}': {e.strerror}") from None
    if MARKER in names:
        return None
    for name in sorted(names):
        if name in OURS or name.startswith("audit-") and \
                os.path.isfile(os.path.join(path, name, MARKER)):
            continue
        if os.path.isfile(os.path.join(path, name, MARKER)):
            continue
        return name
    return None


def claim(path, option="--out"):
    """Make PATH this process's output directory: create it (with its
    parents), or take it when it is empty or already crashcheck's; mark
    and lock it. The resolved path; UsageError (one line) when it is a
    file, holds something of the user's, cannot be made, or another
    crashcheck run holds it. Claiming it again in the same process is a
    no-op."""
    path = Path(path)
    if str(path) == "":
        raise UsageError(f"{option}: empty path")
    if path.exists() and not path.is_dir():
        raise UsageError(f"{option}: '{path}' is not a directory")
    key = os.path.realpath(path)
    if key in _claims:
        return Path(key)
    created = False
    if not path.exists():
        try:
            path.mkdir(parents=True)
            created = True
        except FileExistsError:
            pass
        except OSError as e:
            raise UsageError(f"{option}: cannot create '{path}': "
                             f"{e.strerror}") from None
    else:
        other = _ours(path)
        if other is not None:
            raise UsageError(
                f"{option}: '{path}' is not empty and not crashcheck's "
                f"(it holds '{other}' and no {MARKER}): give a new or "
                "empty directory")
    marker = path / MARKER
    try:
        fd = os.open(marker, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as e:
        raise UsageError(f"{option}: cannot write in '{path}': "
                         f"{e.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        holder = _holder(fd)
        os.close(fd)
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise UsageError(f"{option}: '{path}' is in use by another "
                             f"crashcheck run{holder}") from None
        raise UsageError(f"{option}: cannot lock '{marker}': "
                         f"{e.strerror}") from None
    try:
        # written once: a claimed directory's files are not touched again
        if os.fstat(fd).st_size == 0:
            os.write(fd, MARKER_TEXT.encode())
    except OSError as e:
        os.close(fd)
        raise UsageError(f"{option}: cannot write '{marker}': "
                         f"{e.strerror}") from None
    _claims[key] = _Claim(Path(key), fd, created)
    return Path(key)


def _holder(fd):
    """' (pid N)': the process that holds the lock on FD's file, from
    /proc/locks; '' when it cannot be told."""
    try:
        st = os.fstat(fd)
        dev = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
        with open("/proc/locks") as fh:
            for line in fh:
                f = line.split()
                # "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"
                if len(f) >= 6 and f[1] == "FLOCK" and f[5] == dev:
                    return f" (pid {f[4]})"
    except (OSError, ValueError, IndexError):
        pass
    return ""


def release(path, refused=False):
    """Unlock PATH. REFUSED: the command was refused after claiming it
    (a usage error found late): a directory it created, holding nothing
    but the marker, goes again, so that a refused command changes
    nothing."""
    key = os.path.realpath(path)
    c = _claims.pop(key, None)
    if c is None:
        return
    try:
        if refused and c.created and os.listdir(c.path) == [MARKER]:
            os.unlink(c.path / MARKER)
            os.rmdir(c.path)
    except OSError:
        pass
    finally:
        os.close(c.fd)


def release_all(refused=False):
    """release() every directory this process claimed (a command's end;
    REFUSED: it ended in a usage error)."""
    for key in list(_claims):
        release(key, refused)


def is_case_dir(path):
    """Whether PATH is a case's directory crashcheck wrote (it holds the
    case's result.json)."""
    return os.path.isfile(os.path.join(path, CASE_FILE)) and \
        not os.path.islink(path)


# what crashcheck writes in a case's directory (sweep.save_case_dir)
CASE_ENTRIES = (CASE_FILE, "trace.txt", "trace.jsonl", "stderr.txt",
                "diff.txt", "README.txt", "state", "left")


def remove_case_dir(path):
    """Remove what crashcheck wrote in one case's directory, and the
    directory once nothing else is left in it: a file the user put there
    stays. True when the directory was crashcheck's (it held the case's
    result.json); a directory of the user's is left alone."""
    if not is_case_dir(path):
        return False
    for name in CASE_ENTRIES:
        entry = os.path.join(path, name)
        if os.path.isdir(entry) and not os.path.islink(entry):
            shutil.rmtree(entry)
        elif os.path.lexists(entry):
            os.unlink(entry)
    try:
        os.rmdir(path)
    except OSError:
        pass        # the user's files are in it
    return True


def prune_cases(out, keep):
    """Remove the case directories under OUT/cases/ that crashcheck wrote
    and that are not named in KEEP (the directory names of this run's
    cases): what an earlier run found and this one did not. Anything
    else under cases/ stays; cases/ goes once it is empty."""
    cases = Path(out) / "cases"
    try:
        entries = list(os.scandir(cases))
    except OSError:
        return
    for e in entries:
        if e.name not in keep and e.is_dir(follow_symlinks=False):
            try:
                remove_case_dir(e.path)
            except OSError:
                pass
    try:
        cases.rmdir()
    except OSError:
        pass
