#!/usr/bin/python3
"""pywriter: replace a file atomically and durably, in Python.

Usage: pywriter.py TARGET NEWFILE

Method. The new content is read whole from NEWFILE, then written to
TARGET.tmp in TARGET's directory, created with O_EXCL so that a stale temp
file from an earlier crash is an error rather than silently reused. The
write loop continues after short writes (os.write returns what the kernel
took); CPython already retries EINTR (PEP 475). os.fsync makes the temp
file's data durable before os.replace renames it over TARGET, so the name
never points at data that could vanish in a power cut; then the directory
is fsynced, so the rename itself survives one. Any failure removes the
temp file, leaves TARGET as it was (or, when only the directory fsync
failed, already replaced but not known durable) and exits 1 with one line
naming the call, the path and strerror.

Claim: at every moment TARGET holds the old or the new content; after exit
0 the new content is durable (crash-model.md's atomic contract).
"""

import os
import sys

PROG = "pywriter"


class Failure(Exception):
    pass


def call(what, path, fn, *args):
    """Run one os call; an OSError becomes one message naming it."""
    try:
        return fn(*args)
    except OSError as e:
        raise Failure(f"{what} '{path}': {e.strerror}") from None


def write_all(fd, data, path):
    view = memoryview(data)
    while view:
        n = call("write", path, os.write, fd, view)
        if n == 0:
            # A zero-byte write of a non-empty buffer would loop forever;
            # the kernel only does that when there is no room.
            raise Failure(f"write '{path}': {os.strerror(28)}")
        view = view[n:]


def replace(target, data):
    directory = os.path.dirname(target) or "."
    tmp = target + ".tmp"
    fd = call("open", tmp, os.open, tmp,
              os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        write_all(fd, data, tmp)
        # Durable data before the rename: otherwise a power cut can leave
        # the new name pointing at an empty or partial file.
        call("fsync", tmp, os.fsync, fd)
    except BaseException:
        # Already failing: the first error is the one to report.
        for undo in (lambda: os.close(fd), lambda: os.unlink(tmp)):
            try:
                undo()
            except OSError:
                pass
        raise
    try:
        # close can report a deferred write error (NFS, quotas): check it.
        call("close", tmp, os.close, fd)
        call("rename", tmp, os.replace, tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    # The rename is only durable once the directory entry is.
    dfd = call("open", directory, os.open, directory,
               os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        call("fsync", directory, os.fsync, dfd)
    finally:
        os.close(dfd)


def main(argv):
    if len(argv) != 3:
        print(f"usage: {PROG} TARGET NEWFILE", file=sys.stderr)
        return 2
    target, newfile = argv[1], argv[2]
    try:
        with open(newfile, "rb") as fh:
            data = fh.read()
    except OSError as e:
        print(f"{PROG}: read '{newfile}': {e.strerror}", file=sys.stderr)
        return 1
    try:
        replace(target, data)
    except Failure as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
