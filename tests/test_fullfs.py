"""harness/engine/fullfs.py and the spec field `disk`: a real full disk for the
failures no injection can make (SIGBUS from a store into a mapping).

The mounting tests need root and a kernel that lets us mount tmpfs; they
skip with the reason elsewhere. The rest runs everywhere."""

import os
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.engine import (baseline as baselinemod, cases as casesmod,
                            execute, fullfs, spec as specmod)

ROOT = Path(__file__).resolve().parent.parent
PAGE = fullfs.PAGE


def mounted(directory):
    target = os.path.realpath(directory)
    with open("/proc/self/mounts") as fh:
        return any(line.split()[1] == target for line in fh)


@pytest.fixture
def can_mount(tmp_path):
    probe = tmp_path / "probe"
    probe.mkdir()
    try:
        fullfs.mount(probe, PAGE)
    except fullfs.Unavailable as e:
        pytest.skip(f"cannot mount a tmpfs here: {e.reason}")
    fullfs.unmount(probe)


def test_capacity_is_old_plus_one_page_short_of_new():
    assert fullfs.capacity(8194, 4097) == (3 + 1) * PAGE
    assert fullfs.capacity(69634, 65537) == (18 + 16) * PAGE
    # a one-page payload gets no room at all; an absent target none either
    assert fullfs.capacity(4097, 1) == 2 * PAGE
    assert fullfs.capacity(0, 4097) == 1 * PAGE
    assert fullfs.capacity(None, 0) == 0


def test_not_root_is_unavailable_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(fullfs.Unavailable, match=r"needs root \(running as uid 1000\)"):
        with fullfs.full_disk(tmp_path / "w", 10, 10):
            pytest.fail("the body ran without a mount")


def test_mount_failure_is_unavailable_with_mounts_message(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(fullfs, "_run", lambda argv: SimpleNamespace(
        returncode=32, stdout="", stderr="mount: permission denied\n"))
    with pytest.raises(fullfs.Unavailable,
                       match=r"mount -t tmpfs on '.*w' failed: mount: permission denied"):
        with fullfs.full_disk(tmp_path / "w", 10, 10):
            pytest.fail("the body ran without a mount")


def test_full_disk_refuses_a_non_empty_directory(tmp_path):
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "x").write_text("x")
    with pytest.raises(ValueError, match="is not empty"):
        with fullfs.full_disk(tmp_path / "w", 10, 10):
            pass


def test_spec_disk_field(tmp_path):
    base = ('name = "w"\ndescription = "d"\ncommand = ["{bin}/replace", '
            '"--strategy=mmap", "{target}", "{new}"]\ncontract = "atomic"\n'
            'sizes = [1]\n')
    p = tmp_path / "w.toml"
    p.write_text(base)
    assert specmod.load(p).disk == "normal"
    p.write_text(base + 'disk = "full"\n')
    assert specmod.load(p).disk == "full"
    p.write_text(base + 'disk = "empty"\n')
    with pytest.raises(specmod.SpecError, match=r"w\.toml: disk: 'empty' is not one of normal, full"):
        specmod.load(p)


def test_full_disk_is_full_and_keeps_what_was_left(tmp_path, can_mount):
    work = tmp_path / "work"
    old, new = 8194, 4097
    with fullfs.full_disk(work, old, new) as d:
        assert mounted(work)
        (d / "target").write_bytes(b"o" * old)
        fd = os.open(d / "target.tmp", os.O_RDWR | os.O_CREAT, 0o666)
        try:
            with pytest.raises(OSError) as e:
                os.posix_fallocate(fd, 0, new)
            assert e.value.errno == 28      # ENOSPC: one page short
            os.posix_fallocate(fd, 0, new - PAGE + 1 if new > PAGE else 1)
        finally:
            os.close(fd)
    assert not mounted(work)
    assert (work / "target").read_bytes() == b"o" * old
    assert (work / "target.tmp").is_file()
    assert not (tmp_path / "work.full-disk").exists()


def _run_on_full_disk(tmp_path, prog):
    binary = ROOT / "workloads" / "bin" / prog
    if not os.access(binary, os.X_OK):
        pytest.fail(f"{binary} is not built: run make")
    (tmp_path / "in").mkdir()
    newdata = os.urandom(65537)
    (tmp_path / "in" / "new").write_bytes(newdata)
    work = tmp_path / "work"
    olddata = os.urandom(len(newdata) + 4097)
    with fullfs.full_disk(work, len(olddata), len(newdata)):
        (work / "target").write_bytes(olddata)
        proc = subprocess.run([str(binary), "--strategy=mmap", "target", "../in/new"],
                              cwd=work, capture_output=True, text=True, timeout=30)
    return proc, olddata, (work / "target").read_bytes()


def test_correct_mmap_workload_reports_enospc_on_a_full_disk(tmp_path, can_mount):
    proc, old, got = _run_on_full_disk(tmp_path, "replace")
    assert proc.returncode == 1, proc.stderr
    assert "posix_fallocate 'target.tmp': No space left on device" in proc.stderr
    assert got == old


def test_ftruncate_variant_dies_of_sigbus_on_a_full_disk(tmp_path, can_mount):
    proc, old, got = _run_on_full_disk(tmp_path, "mmap-ftruncate")
    assert proc.returncode == -7, (proc.returncode, proc.stderr)     # SIGBUS
    assert got == old


def test_sweep_skips_a_full_disk_case_it_cannot_mount(tmp_path, monkeypatch):
    """A spec with disk = "full" has its baseline on the ordinary scratch
    and one more case per combo, <combo>-disk=full (kind enospc). Where
    no tmpfs can be mounted, that case's run is recorded as exit 77 with
    the reason, which the judge reads as a skip."""
    def refuse(directory, size):
        raise fullfs.Unavailable("a full disk needs a tmpfs mount, which needs root")
    monkeypatch.setattr(fullfs, "mount", refuse)
    s = specmod.load(ROOT / "workloads" / "specs" / "mmap-ftruncate.toml")
    combo = casesmod.Combo(s, "mmap", s.sizes[0])
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    base = execute.execute_run(combo, "", scratch, 10)
    assert base.run.status == 0, base.run.stderr_text()
    cases = baselinemod.cases_of(combo, base, casesmod.Settings(out=tmp_path / "out"))
    full = [c for c in cases if c.disk == "full"]
    assert [(c.id, c.kind, c.plan) for c in full] == [
        (f"{combo.prefix}-disk=full", "enospc", "")]
    assert all(c.disk == "normal" for c in cases if c not in full)
    other = tmp_path / "other"
    other.mkdir()
    out = execute.execute_run(combo, "", other, 10, full_disk=True)
    assert out.run.skipped
    assert 'disk = "full" unavailable: a full disk needs a tmpfs mount' in out.run.stderr_text()


def test_oracle_explains_sigbus_as_a_store_into_a_mapping():
    from harness.judging import oracle
    v = oracle.judge(oracle.Outcome(contract="atomic", old=b"o", new=b"n",
                                    signal=7))
    assert v.verdict == "crashed"
    assert v.finding == "killed by SIGBUS (signal 7) with no fault planned"
    assert "posix_fallocate" in v.explanation and "full" in v.explanation
    other = oracle.judge(oracle.Outcome(contract="atomic", old=b"o", new=b"n",
                                        signal=11))
    assert "posix_fallocate" not in other.explanation
