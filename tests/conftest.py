"""Shared pytest fixtures: where the tree and its built programs are."""

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def repo_root():
    """The top of the crashcheck tree."""
    return ROOT


@pytest.fixture(scope="session")
def workloads_bin():
    """workloads/bin, where `make` puts the workload programs."""
    return ROOT / "workloads" / "bin"


def _tree_results():
    """What the tree's results/ holds: every path under it with its size
    and modification time (nothing when there is none)."""
    base = ROOT / "results"
    found = {}
    for dirpath, dirnames, filenames in os.walk(base):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            found[os.path.relpath(p, base)] = (st.st_size, st.st_mtime_ns)
    return found


@pytest.fixture(scope="session", autouse=True)
def tree_results_untouched():
    """No test writes into or removes from the tree's own results/: it
    holds the user's last `make run` (usage-error tests once removed its
    cases/). Every test gives --out, or changes nothing by design."""
    before = _tree_results()
    yield
    after = _tree_results()
    changed = sorted(set(before) ^ set(after)
                     | {p for p in before if p in after and before[p] != after[p]})
    assert not changed, ("the tests changed the tree's results/: "
                         + ", ".join(changed[:10]))
