"""crashcheck's Python side, in four parts: commands/ (the CLI), engine/
(running and sweeping), judging/ (explorer and oracle), reports/."""

from pathlib import Path

# The repository root: faults/, workloads/ and results/ are found from here.
ROOT = Path(__file__).resolve().parent.parent


def tree_path(path):
    """PATH relative to the tree when it lies inside it, else as given:
    what reports and messages show, the same from any checkout."""
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


class UsageError(Exception):
    """A bad input from the user (plan, option, spec): one line, exit 2."""
