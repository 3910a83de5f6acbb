"""Shared pytest fixtures: where the tree and its built programs are."""

import os
import signal
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# A suite started in the background by a non-interactive shell (`make
# check &` in a script) has SIGINT ignored, and every crashcheck the tests
# start would inherit that and shrug off the ^C the tests send it. Python's
# own handler is reset to the default across exec, as a terminal's is.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(config, items):
    """Under `make check SANITIZE=...` (which exports SANITIZED_CHECK),
    the tests marked `plain` are skipped: they compare the harness's ways
    of judging over a whole corpus, at minutes each, and a sanitized build
    of the programs they run adds nothing the other tests do not already
    run sanitized. CI's plain pass runs them."""
    sanitized = os.environ.get("SANITIZED_CHECK")
    if not sanitized:
        return
    skip = pytest.mark.skip(reason=f"a plain test, and this build is sanitized "
                                   f"({sanitized}): make check without SANITIZE "
                                   "runs it")
    for item in items:
        if item.get_closest_marker("plain"):
            item.add_marker(skip)


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
