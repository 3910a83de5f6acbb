"""Output directories: where crashcheck writes, and what it may remove.

A command's output directory (--out of run, audit, replay and merge, or
its default under results/) is crashcheck's only when it carries the
marker file MARKER, a regular file crashcheck writes into every directory
it makes for its output, and into one it is given empty. Ownership is
the marker's alone, never a guess from names: a directory that is not
empty and has no marker is refused (one line, exit 2), whatever it holds,
since it holds something of the user's and crashcheck never writes over
or removes what it did not make. The parents crashcheck makes on the way
(results/ for the default results/audit-sed/) are marked too, so that a
later command may write into them.

In a marked directory crashcheck replaces its own files only: the reports
(each written whole to a temporary file and renamed), a case's directory
under cases/ (one that holds crashcheck's result.json), a replay's
README.txt and state/ (beside that README.txt), and .work and .audit;
anything else there stays as it is. It follows no symbolic link there:
one by any of those names (ENTRIES) is refused before anything is
written, as is an output directory that is itself a link inside a marked
directory (results/rerun pointing elsewhere).

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
import stat
from pathlib import Path

from .. import UsageError

MARKER = ".crashcheck"
MARKER_TEXT = ("This directory holds crashcheck's output; crashcheck replaces "
               "its own files here and nothing else. While a crashcheck "
               "command writes here, it holds a lock on this file.\n")

# What crashcheck writes or removes by name in its output directory (but
# .work, its own link into the scratch, which sweep.remove_work tells
# from anything else): a symbolic link by one of these names would lead
# its writes elsewhere, and is refused.
ENTRIES = ("results.json", "report.md", "report.html", "junit.xml",
           "results.sarif", "cases", ".audit", "README.txt", "state",
           ".work.kept")
# What a case's directory (cases/<id>/) holds, all of it crashcheck's.
CASE_FILE = "result.json"

_claims = {}    # real path -> _Claim, of this process


class _Claim:
    def __init__(self, path, fd, made):
        # made: the directories this claim created, outermost first
        self.path, self.fd, self.made = path, fd, made


def is_marked(path):
    """Whether the directory PATH carries crashcheck's marker: a regular
    file (a link by that name is no marker)."""
    try:
        return stat.S_ISREG(os.lstat(os.path.join(path, MARKER)).st_mode)
    except OSError:
        return False


def _make(path, option):
    """Create PATH and its missing parents one by one; the directories
    made, outermost first ([] when another process made PATH meanwhile).
    UsageError when one cannot be made (what was made goes again)."""
    missing = []
    p = path
    while not os.path.lexists(p):
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    if os.path.lexists(p) and not p.is_dir():
        raise UsageError(f"{option}: cannot create '{path}': '{p}' is not "
                         "a directory")
    made = []
    for d in reversed(missing):
        try:
            os.mkdir(d)
            made.append(d)
        except FileExistsError:
            if d.is_dir():
                continue
            _unmake(made)
            raise UsageError(f"{option}: cannot create '{path}': '{d}' is "
                             "not a directory") from None
        except OSError as e:
            _unmake(made)
            raise UsageError(f"{option}: cannot create '{path}': "
                             f"{e.strerror}") from None
    return made


def _unmake(made):
    """Remove the directories of MADE (outermost first) that hold nothing
    but crashcheck's marker, innermost first."""
    for d in reversed(made):
        try:
            if is_marked(d) and os.listdir(d) == [MARKER]:
                os.unlink(os.path.join(d, MARKER))
            os.rmdir(d)
        except OSError:
            return      # something else is in it now: it stays, and so
                        # do its parents


def _mark(path):
    """Write the marker into PATH, a directory crashcheck has just made."""
    fd = os.open(os.path.join(path, MARKER), os.O_WRONLY | os.O_CREAT
                 | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        os.write(fd, MARKER_TEXT.encode())
    finally:
        os.close(fd)


def check_links(path, option="--out"):
    """UsageError when an entry crashcheck writes in the output directory
    PATH (ENTRIES) is a symbolic link: crashcheck would write through it
    into a directory or file that is not its own."""
    for name in ENTRIES:
        entry = os.path.join(path, name)
        if os.path.islink(entry):
            raise UsageError(
                f"{option}: '{entry}' is a symbolic link, and crashcheck "
                "writes through no link in its output directory: remove "
                "the link, or give --out another directory")


def claim(path, option="--out"):
    """Make PATH this process's output directory: create it (with its
    parents), or take it when it is empty or carries the marker; mark
    it (and the parents it made) and lock it. The resolved path;
    UsageError (one line) when it is a file, holds something of the
    user's, has a link where crashcheck writes, cannot be made, or
    another crashcheck run holds it. Claiming it again in the same
    process is a no-op."""
    if str(path) == "":
        raise UsageError(f"{option}: empty path")
    path = Path(os.path.abspath(path))
    if os.path.islink(path) and is_marked(path.parent):
        raise UsageError(
            f"{option}: '{path}' is a symbolic link inside crashcheck's "
            f"directory '{path.parent}', and crashcheck follows no link "
            "there: remove the link, or give --out the directory itself")
    if path.exists() and not path.is_dir():
        raise UsageError(f"{option}: '{path}' is not a directory")
    if os.path.lexists(path) and not path.exists():
        raise UsageError(f"{option}: '{path}' is a link to nothing")
    key = os.path.realpath(path)
    if key in _claims:
        return Path(key)
    made = _make(path, option) if not path.exists() else []
    if not made:
        _check_theirs(path, option)
    try:
        check_links(path, option)
        for d in made[:-1]:
            _mark(d)
        fd = _lock(path, option)
    except (UsageError, OSError) as e:
        _unmake(made)
        if isinstance(e, OSError):
            raise UsageError(f"{option}: cannot write in '{e.filename or path}'"
                             f": {e.strerror}") from None
        raise
    _claims[key] = _Claim(Path(key), fd, made)
    return Path(key)


def _check_theirs(path, option):
    """UsageError when the existing directory PATH is not empty and has
    no marker: the user's, whatever its names."""
    try:
        names = sorted(os.listdir(path))
    except OSError as e:
        raise UsageError(f"{option}: cannot read '{path}': {e.strerror}") from None
    if names and not is_marked(path):
        shown = names[0] if names[0] != MARKER else names[-1]
        raise UsageError(
            f"{option}: '{path}' is not empty and not crashcheck's (it holds "
            f"'{shown}' and no {MARKER} marker): give --out a new or empty "
            f"directory, or move '{path}' aside")


def _lock(path, option):
    """The marker of PATH, created when missing, opened and locked: its
    descriptor. UsageError when another process holds the lock."""
    marker = path / MARKER
    try:
        fd = os.open(marker, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW
                     | os.O_CLOEXEC, 0o644)
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
    return fd


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
    (a usage error found late): the directories the claim made, holding
    nothing but the marker, go again, so that a refused command changes
    nothing."""
    key = os.path.realpath(path)
    c = _claims.pop(key, None)
    if c is None:
        return
    try:
        if refused:
            _unmake(c.made)
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
    try:
        return stat.S_ISREG(os.lstat(os.path.join(path, CASE_FILE)).st_mode) \
            and not os.path.islink(path)
    except OSError:
        return False


# what crashcheck writes in a case's directory (results.save_case_dir)
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
    if cases.is_symlink():
        return          # not crashcheck's: check_links refused it
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
