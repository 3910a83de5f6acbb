"""`make install` and `make uninstall`, the version and the man page, as a
user meets them: make run from `/`, the installed command run from `/` and
from a directory of the user's, `man crashcheck` rendered.

Every test installs into a prefix of its own under tmp_path (the prefix
does not exist before: the install must create it, and the uninstall
remove what it created and nothing else).
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
VERSION = (ROOT / "VERSION").read_text().strip()
SED_OLD = ROOT / "docs" / "examples" / "settings.conf"
SED_NEW = ROOT / "docs" / "examples" / "settings.conf.new"
SED = ["sed", "-i", "s/^port = 8080$/port = 9090/", "{target}"]


def make(*args, check=True):
    """make in the tree, from `/`."""
    r = subprocess.run(["make", "-s", "--no-print-directory", "-C", str(ROOT),
                        *map(str, args)], cwd="/", capture_output=True,
                       text=True, timeout=300)
    if check:
        assert r.returncode == 0, r.stdout + r.stderr
    return r


def tree(top):
    """Every path under TOP, relative, as a set."""
    return {str(p.relative_to(top)) for p in Path(top).rglob("*")}


def run(argv, cwd, env=None, timeout=120):
    return subprocess.run([str(a) for a in argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """One install for the tests that only use it."""
    prefix = tmp_path_factory.mktemp("install") / "prefix" / "usr"
    make("install", f"PREFIX={prefix}")
    yield prefix
    if (prefix / "lib" / "crashcheck" / "MANIFEST").exists():
        make("uninstall", f"PREFIX={prefix}")


def test_installed_command_runs_from_root(installed, tmp_path):
    exe = installed / "bin" / "crashcheck"
    assert os.readlink(exe) == "../lib/crashcheck/scripts/crashcheck"
    r = run([exe, "--version"], cwd="/")
    assert (r.returncode, r.stdout) == (0, f"crashcheck {VERSION}\n"), r.stderr
    before = tree(installed)
    out = tmp_path / "out"
    r = run([exe, "audit", "--out", out, "--old", SED_OLD, "--new", SED_NEW,
             "--", *SED], cwd="/")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "FINDING sed-powerloss@rename(sed??????)#1-posix: torn" in r.stdout
    # not on PATH: the reproduce command names the installed command whole
    assert f"reproduce: {exe} audit --old {SED_OLD}" in r.stdout
    assert (out / "results.json").is_file()
    # a run writes nothing into the installed tree (no bytecode, no results)
    assert tree(installed) == before


def test_installed_defaults_to_the_current_directory(installed, tmp_path):
    """Once installed, reports go to results/ of the current directory and
    reproduce commands say `crashcheck`, the name on PATH."""
    work = tmp_path / "mine"
    work.mkdir()
    shutil.copy(SED_OLD, work / "old.conf")
    shutil.copy(SED_NEW, work / "new.conf")
    env = dict(os.environ, PATH=f"{installed / 'bin'}:{os.environ['PATH']}")
    r = run(["crashcheck", "audit", "--old", "old.conf", "--new", "new.conf",
             "--", *SED], cwd=work, env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    assert (work / "results" / "audit-sed" / "results.json").is_file()
    assert "reproduce: crashcheck audit --old old.conf --new new.conf " \
        "--case sed-baseline" in r.stdout
    # a built-in spec, by its installed path; the rerun is one case
    spec = installed / "lib" / "crashcheck" / "workloads" / "specs" / \
        "fsync-unchecked.toml"
    r = run(["crashcheck", "run", "--out", "o", "--faults", "eio", spec],
            cwd=work, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (work / "o" / "report.html").is_file()


def test_man_page_renders(installed):
    page = installed / "share" / "man" / "man1" / "crashcheck.1"
    assert page.is_file()
    if shutil.which("man") is None:
        pytest.fail("man is not installed (scripts/install-deps installs "
                    "man-db)")
    env = dict(os.environ, MANPATH=str(installed / "share" / "man"),
               MANWIDTH="80", MAN_KEEP_FORMATTING="0")
    r = run(["man", "-P", "cat", "crashcheck"], cwd="/", env=env)
    assert r.returncode == 0, r.stderr
    text = re.sub(".\b", "", r.stdout)      # man's overstrike bold
    for heading in ("NAME", "SYNOPSIS", "COMMANDS", "VERDICTS", "PLANS",
                    "ENVIRONMENT", "FILES"):
        assert f"\n{heading}\n" in text, heading
    assert f"crashcheck {VERSION}" in text
    # groff finds nothing to warn about in the source
    g = run(["groff", "-man", "-Tutf8", "-ww", "-z", page], cwd="/")
    assert (g.returncode, g.stderr) == (0, ""), g.stderr


def test_man_finds_the_page_once_the_prefix_is_on_path(tmp_path):
    """Issue 30: `make install PREFIX=...` then `man crashcheck` said "No
    manual entry" for a prefix man does not search. man looks beside
    every directory of PATH: the install says to put PREFIX/bin there
    when it is not, and then man finds the page, with no MANPATH."""
    if shutil.which("man") is None:
        pytest.fail("man is not installed (scripts/install-deps installs "
                    "man-db)")
    prefix = tmp_path / "home" / ".local"
    r = make("install", f"PREFIX={prefix}")
    try:
        bin_dir = prefix / "bin"
        assert (f"scripts/install: {bin_dir} is not on PATH: add it (export "
                f'PATH="{bin_dir}:$PATH") to run crashcheck by its name and '
                "to read man crashcheck") in r.stdout, r.stdout
        env = {k: v for k, v in os.environ.items() if k != "MANPATH"}
        lost = run(["man", "-w", "crashcheck"], cwd="/", env=env)
        assert str(prefix) not in lost.stdout, lost.stdout
        env["PATH"] = f"{bin_dir}:{env['PATH']}"
        found = run(["man", "-w", "crashcheck"], cwd="/", env=env)
        assert found.stdout.strip() == str(
            prefix / "share" / "man" / "man1" / "crashcheck.1"), found
        # on PATH already: nothing to say
        again = subprocess.run(
            ["make", "-s", "--no-print-directory", "-C", str(ROOT), "install",
             f"PREFIX={prefix}"], cwd="/", capture_output=True, text=True,
            timeout=300, env=env)
        assert again.returncode == 0, again.stderr
        assert "is not on PATH" not in again.stdout
    finally:
        make("uninstall", f"PREFIX={prefix}")


def test_uninstall_removes_what_it_installed_only(tmp_path):
    prefix = tmp_path / "p" / "usr"
    (prefix / "bin").mkdir(parents=True)
    mine = prefix / "bin" / "mine"
    mine.write_text("not crashcheck's\n")
    make("install", f"PREFIX={prefix}")
    assert (prefix / "lib" / "crashcheck" / "MANIFEST").is_file()
    # installing again replaces the earlier install
    make("install", f"PREFIX={prefix}")
    make("uninstall", f"PREFIX={prefix}")
    assert tree(tmp_path / "p") == {"usr", "usr/bin", "usr/bin/mine"}
    # twice: nothing left to remove is an error naming the prefix
    r = make("uninstall", f"PREFIX={prefix}", check=False)
    assert r.returncode != 0
    assert f"no crashcheck installed by make install in {prefix}" in r.stderr


def test_install_refuses_what_it_did_not_install(tmp_path):
    prefix = tmp_path / "usr"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "bin" / "crashcheck").write_text("someone else's\n")
    r = make("install", f"PREFIX={prefix}", check=False)
    assert r.returncode != 0
    assert "exists and was not installed by make install" in r.stderr
    assert (prefix / "bin" / "crashcheck").read_text() == "someone else's\n"
    assert not (prefix / "lib").exists()
    r = make("install", "PREFIX=relative/path", check=False)
    assert r.returncode != 0
    assert "PREFIX must be an absolute path" in r.stderr


def test_destdir_stages_without_leaving_its_mark(tmp_path):
    stage = tmp_path / "stage"
    make("install", "PREFIX=/usr/local", f"DESTDIR={stage}")
    lib = stage / "usr" / "local" / "lib" / "crashcheck"
    # what is installed names the final paths, never the staging root
    manifest = (lib / "MANIFEST").read_text()
    assert "/usr/local/bin/crashcheck" in manifest
    assert str(stage) not in manifest
    for pyc in lib.rglob("*.pyc"):
        assert str(stage).encode() not in pyc.read_bytes(), pyc
    exe = stage / "usr" / "local" / "bin" / "crashcheck"
    r = run([exe, "help", "verdicts"], cwd="/")
    assert r.returncode == 0 and "not-durable" in r.stdout, r.stderr
    make("uninstall", "PREFIX=/usr/local", f"DESTDIR={stage}")
    assert tree(stage) == set()
