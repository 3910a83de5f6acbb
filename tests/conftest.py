"""Shared pytest fixtures: where the tree and its built programs are."""

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
