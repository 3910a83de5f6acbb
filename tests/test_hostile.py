"""Hostile programs (issue 31, item 4): a program under test that tries to
change what is not its own. Each is audited as a user would audit it, and
each test asserts two things from the outside: the user's files are as
they were (byte for byte, still there, no new file beside them), and the
report names what the program wrote outside its scratch.

Confinement (harness/engine/confine.py) is what keeps them out. As root the
run's view is an overlay, so the writes land in it and are named; as
another user the view is read-only, the writes fail, and only the first
assertion holds (the naming ones are skipped then, with the reason).
"""

import json
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from harness import ROOT
from harness.engine import confine, runner

CRASHCHECK = ROOT / "scripts" / "crashcheck"
ROOT_USER = os.geteuid() == 0


@pytest.fixture(scope="module", autouse=True)
def confined():
    """Skip where the machine allows no confinement, with its reason."""
    env = os.environ.get(confine.ENV_MODE)
    if env == "off":
        pytest.skip(f"{confine.ENV_MODE}=off")
    if not confine.available():
        pytest.skip(f"no confinement here: {confine.reason()}")


@pytest.fixture
def users(tmp_path):
    """A directory of the user's outside every temporary directory (where
    a program's writes would be private and not named): in the home,
    removed after. Holds a file the programs go for."""
    home = os.path.expanduser("~")
    if not os.access(home, os.W_OK):
        pytest.skip(f"the home '{home}' is not writable")
    d = Path(tempfile.mkdtemp(prefix=".cc-hostile-", dir=home))
    (d / "thesis.tex").write_bytes(b"the user's work\n")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def snapshot(d):
    """{relative path: (kind, bytes or link)} of everything under D."""
    out = {}
    for p in sorted(Path(d).rglob("*")):
        rel = str(p.relative_to(d))
        if p.is_symlink():
            out[rel] = ("link", os.readlink(p))
        elif p.is_file():
            out[rel] = ("file", p.read_bytes())
        else:
            out[rel] = ("dir", None)
    return out


def audit(tmp_path, script, *extra, faults="baseline"):
    """`crashcheck audit` of `sh -c SCRIPT` (its $0 the target, $1 the new
    content), with --faults FAULTS; (process, results.json's cases)."""
    out = tmp_path / "out"
    proc = subprocess.run(
        [str(CRASHCHECK), "audit", "--faults", faults, "--timeout", "5",
         "--out", str(out), *extra, "--", "sh", "-c", script, "{target}",
         "{new}"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr[-3000:]
    assert proc.returncode in (0, 1), proc.stdout[-3000:] + proc.stderr[-3000:]
    cases = json.loads((out / "results.json").read_text())["cases"]
    return proc, cases


def shown(path):
    """PATH as the report names it: the home as ~."""
    home = os.path.expanduser("~").rstrip("/")
    path = str(path)
    return "~" + path[len(home):] if path.startswith(home + "/") else path


def baseline(cases):
    return next(c for c in cases if c["id"].endswith("-baseline"))


def no_views_left():
    base = runner.scratch_base()
    return [n for n in os.listdir(base) if n.startswith("crashcheck-view-")]


COPY = 'cp "$1" "$0"; '


@pytest.mark.parametrize("how", [(), ("--exec-each",), ("--backend", "syscall"),
                                 ("--backend", "syscall", "--exec-each")],
                         ids=["preload-served", "preload-exec",
                              "syscall-served", "syscall-exec"])
def test_a_write_to_an_absolute_path_outside_lands_nowhere(tmp_path, users,
                                                           how):
    """Under both backends, each run exec'd or forked by its server."""
    before = snapshot(users)
    victim = users / "thesis.tex"
    made = users / "new-file"
    proc, cases = audit(tmp_path, COPY + f"echo gone > '{victim}'; "
                        f"echo x > '{made}'", *how, faults="baseline,eio")
    assert snapshot(users) == before
    if ROOT_USER:
        base = baseline(cases)
        assert shown(victim) in base["outside"], base["outside"]
        assert shown(made) in base["outside"]
        md = (tmp_path / "out" / "report.md").read_text()
        assert "## Written outside the scratch" in md
        assert f"`{shown(victim)}`" in md
        assert "OUTSIDE" in proc.stdout
        # the fault cases too, not the baseline alone: each names the
        # write, or its stderr says the write failed (a persistent
        # fault also hit the shell's open of it)
        faulted = [c for c in cases if c["kind"] == "eio"]
        assert faulted
        for c in faulted:
            assert shown(victim) in c["outside"] or str(victim) in \
                c["stderr"], (c["id"], c["outside"], c["stderr"])


def test_a_bad_confinement_setting_is_one_line(tmp_path):
    proc = subprocess.run(
        [str(CRASHCHECK), "audit", "--faults", "baseline", "--out",
         str(tmp_path / "out"), "--", "cp", "{new}", "{target}"], cwd=ROOT,
        capture_output=True, text=True, timeout=120,
        env=dict(os.environ, CRASHCHECK_CONFINE="maybe"))
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "crashcheck: CRASHCHECK_CONFINE: 'maybe' is not one of auto, on, off"]


def test_confinement_turned_off_lets_the_write_through(tmp_path, users,
                                                       monkeypatch):
    """CRASHCHECK_CONFINE=off, for debugging: the program sees and changes
    the machine as it is (here a directory of this test's), and nothing
    is named."""
    monkeypatch.setenv(confine.ENV_MODE, "off")
    proc, cases = audit(tmp_path, COPY + f"echo x > '{users}/through'")
    assert (users / "through").read_bytes() == b"x\n"
    assert all(c["outside"] == [] for c in cases)


def test_a_removal_outside_removes_nothing(tmp_path, users):
    before = snapshot(users)
    proc, cases = audit(tmp_path, COPY + f"rm -rf '{users}'")
    assert snapshot(users) == before
    if ROOT_USER:
        assert f"{shown(users)}/ (removed)" in baseline(cases)["outside"] or \
            f"{shown(users)} (removed)" in baseline(cases)["outside"], \
            baseline(cases)["outside"]


def test_a_write_to_home_and_to_the_password_databases_home(tmp_path):
    """$HOME (the caller's, without --home) and the home the password
    database gives, which a program like augtool takes whatever $HOME
    says: with --home, HOME is in the scratch, the other is not."""
    pw_home = pwd.getpwuid(os.geteuid()).pw_dir
    name = f".cc-hostile-{os.getpid()}"
    for where in (os.path.expanduser("~"), pw_home):
        assert not os.path.lexists(os.path.join(where, name))
    script = (COPY + f'echo h > "$HOME/{name}"; '
              f'h=$(getent passwd $(id -u) | cut -d: -f6); '
              f'mkdir -p "$h/{name}.d" && echo h > "$h/{name}.d/history"')
    for extra in ((), ("--home",)):
        proc, cases = audit(tmp_path / ("home" if extra else "plain"),
                            script, *extra)
        for where in (os.path.expanduser("~"), pw_home):
            assert not os.path.lexists(os.path.join(where, name))
            assert not os.path.lexists(os.path.join(where, name + ".d"))
        if ROOT_USER:
            named = baseline(cases)["outside"]
            assert shown(os.path.join(pw_home, name + ".d")) + "/" in named, \
                named
            # without --home $HOME is the user's: named; with it, the
            # scratch's: not outside
            assert (shown(os.path.join(os.path.expanduser("~"), name))
                    in named) == (not extra), named


def test_a_symlink_out_of_the_scratch_is_written_through_to_nothing(
        tmp_path, users):
    victim = users / "thesis.tex"
    before = snapshot(users)
    proc, cases = audit(tmp_path, COPY + f"ln -s '{victim}' link && "
                        "echo overwritten > link; ln -s .. up && "
                        "echo x > up/up/up/escaped; "
                        f"ln -s '{users}' d && echo y > d/planted")
    assert snapshot(users) == before
    if ROOT_USER:
        named = baseline(cases)["outside"]
        assert shown(victim) in named, named
        assert shown(users / "planted") in named, named


def test_a_fifo_nobody_writes_ends_at_the_time_limit(tmp_path, users):
    """A program that waits on a FIFO (its own, in its scratch) is killed
    at its time limit; one it makes outside is not made."""
    before = snapshot(users)
    proc, cases = audit(tmp_path, COPY + f"mkfifo '{users}/fifo'; "
                        "mkfifo f && cat f")
    assert snapshot(users) == before
    base = baseline(cases)
    assert base["verdict"] == "hang" or base["exit"]["timed_out"] or \
        base["verdict"] == "harness-error", base
    if ROOT_USER:
        assert shown(users / "fifo") in base["outside"], base["outside"]


def test_a_program_that_forks_without_end_is_stopped_and_cleaned_up(
        tmp_path, users):
    """Resource exhaustion: processes without end, and a big file
    outside the scratch. The processes are killed with the case; the
    file lands in the run's view, is named, and goes with it."""
    before = snapshot(users)
    # a duration of this test's own: another run's sleeps are not ours
    nap = f"30.{os.getpid()}"
    proc, cases = audit(tmp_path, COPY + "i=0; while [ $i -lt 200 ]; do "
                        f"sleep {nap} & i=$((i+1)); done; "
                        f"head -c 20000000 /dev/zero > '{users}/big'")
    assert snapshot(users) == before
    base = baseline(cases)
    assert base["verdict"] == "harness-error"     # what outlived it
    assert "outlived" in base["finding"], base["finding"]
    if ROOT_USER:
        assert shown(users / "big") in base["outside"], base["outside"]
    left = subprocess.run(["pgrep", "-f", f"sleep {nap}"],
                          capture_output=True, text=True).stdout.split()
    mine = [p for p in left if os.path.exists(f"/proc/{p}/environ") and
            b"CRASHCHECK_SESSION" in open(f"/proc/{p}/environ", "rb").read()]
    assert not mine


def test_no_view_directory_outlives_its_sweep(tmp_path, users):
    # a scratch of its own: the views of sweeps running beside it (tests
    # in another worker) are not its
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    audit(tmp_path, COPY + f"echo x > '{users}/x'", "--scratch", scratch,
          faults="baseline,eio")
    assert not [n for n in os.listdir(scratch)
                if n.startswith("crashcheck-view-")]


def test_the_runner_names_each_kind_of_change(tmp_path, users):
    """The runner's own account (Run.outside): a file written, a
    directory made, a file removed; a file opened for writing and left
    as it was is not named."""
    if not ROOT_USER:
        pytest.skip("not root: the view is read-only, nothing is named")
    scratch = runner.make_scratch()
    try:
        work = scratch / "work"
        work.mkdir()
        (users / "same").write_bytes(b"same\n")
        run = runner.run(
            ["sh", "-c", f"echo x > '{users}/w'; mkdir '{users}/d'; "
             f"rm '{users}/thesis.tex'; : >> '{users}/same'; echo ok > f"],
            cwd=str(work), preload=False, confine=[str(scratch)])
        assert run.status == 0, run.stderr
        assert sorted(run.outside) == sorted([
            shown(users / "w"), shown(users / "d") + "/",
            shown(users / "thesis.tex") + " (removed)"])
        assert (work / "f").read_bytes() == b"ok\n"     # the scratch is real
        assert (users / "thesis.tex").read_bytes() == b"the user's work\n"
        assert not (users / "w").exists() and not (users / "d").exists()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def test_without_confinement_it_says_so_once_and_goes_on(tmp_path, monkeypatch,
                                                         capsys):
    """Where no view can be made (here: the helper is not built), one
    line says why, once, and the program runs as it would have."""
    monkeypatch.setattr(confine, "HELPER", tmp_path / "no-such-helper")
    monkeypatch.setattr(confine, "_checked", None)
    monkeypatch.setattr(confine, "_said", False)
    monkeypatch.setattr(confine, "_view", {})
    scratch = runner.make_scratch()
    try:
        for _ in range(2):
            run = runner.run(["sh", "-c", "echo ok"], cwd=str(scratch),
                             preload=False, confine=[str(scratch)])
            assert run.status == 0 and run.stdout == b"ok\n"
            assert run.outside == []
        err = capsys.readouterr().err.splitlines()
        assert err == [f"crashcheck: programs run unconfined: the confine "
                       f"helper is not built: {tmp_path / 'no-such-helper'} "
                       "(run 'make') (see 'Confinement' in docs/guide.md)"]
        monkeypatch.setenv(confine.ENV_MODE, "on")
        with pytest.raises(confine.ConfineError):
            runner.run(["true"], cwd=str(scratch), preload=False,
                       confine=[str(scratch)])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def test_mounts_parsed_again_only_when_they_change(monkeypatch):
    """confine.mounts() is asked before every run: it keeps its parse of
    /proc/self/mountinfo while the text is the same, and a caller's
    changes to the list it got do not reach the next caller."""
    first = confine.mounts()
    assert first and all(len(m) == 3 for m in first)
    first.append(("/nowhere", "none", False))
    assert confine.mounts() == first[:-1]
    monkeypatch.setattr(confine, "_MOUNTS",
                        ["other text", [("/stale", "ext4", False)]])
    assert confine.mounts() == first[:-1]
