"""crashcheck's Python side: runner, trace reader, oracle, explorer, sweep, reports, CLI."""

from pathlib import Path

# The repository root: faults/, workloads/ and results/ are found from here.
ROOT = Path(__file__).resolve().parent.parent


class UsageError(Exception):
    """A bad input from the user (plan, option, spec): one line, exit 2."""
