"""crashcheck's Python side, in four layers, each importing only those
below it: commands/ (the CLI), engine/ (running and sweeping), reports/,
judging/ (oracle, explorer, crash models); and here, what they all share:
the tree's paths, UsageError, the call table (calls.py) and call
coordinates (coords.py)."""

import os
import shutil
from pathlib import Path

# The tree crashcheck runs from: faults/, workloads/ and harness/ are found
# from here. A checkout, or what `make install` put in PREFIX/lib/crashcheck.
ROOT = Path(__file__).resolve().parent.parent

# `make install` leaves this file in the installed tree (scripts/install).
INSTALLED = (ROOT / "INSTALLED").is_file()


def _version():
    # The one place the version is kept: VERSION at the top of the tree,
    # which `make install` copies and the man page is generated with.
    try:
        return (ROOT / "VERSION").read_text().strip() or "unknown"
    except OSError:
        return "unknown"


VERSION = _version()


def results_root():
    """Where reports go by default: results/ of the tree in a checkout
    (as `make run` always did), results/ of the current directory once
    installed (an installed tree is not the user's to write in)."""
    return Path.cwd() / "results" if INSTALLED else ROOT / "results"


def command_name():
    """How a printed command (a reproduce line) calls crashcheck: from a
    checkout, scripts/crashcheck relative to the tree when that is the
    current directory, else its absolute path; once installed,
    `crashcheck` when that name on PATH is this installation, else
    PREFIX/bin/crashcheck."""
    if INSTALLED:
        exe = ROOT.parent.parent / "bin" / "crashcheck"
        found = shutil.which("crashcheck")
        try:
            if found and Path(found).resolve() == exe.resolve():
                return "crashcheck"
        except OSError:
            pass
        return str(exe)
    try:
        if Path(os.getcwd()).resolve() == ROOT:
            return "scripts/crashcheck"
    except OSError:
        pass
    return str(ROOT / "scripts" / "crashcheck")


def tree_path(path):
    """PATH relative to the tree when it lies inside it, else as given:
    what reports and messages show, the same from any checkout."""
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


class UsageError(Exception):
    """A bad input from the user (plan, option, spec): one line, exit 2."""


def size_text(n):
    """A size in words: '512 bytes', '3.0 MiB', '1.5 GiB'."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.1f} {unit}"
    return f"{n} bytes"


def dropped_text(limit, lines, nbytes):
    """What a trace cut at LIMIT bytes lost: '1203 lines (240.1 KiB) past
    its limit of 1.0 MiB' (LINES None: the count could not be read)."""
    if lines is None:
        dropped = "lines"
    else:
        dropped = f"{lines} line{'s' * (lines != 1)} ({size_text(nbytes)})"
    return f"{dropped} past its limit of {size_text(limit)}"
