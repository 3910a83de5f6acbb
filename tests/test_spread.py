"""One sweep over several processes or machines (issue 34): `--tx`
hands the cases to pytest-xdist's execnet gateways; the controller
enumerates, the workers read the cases and the baselines from its work
directory (copied to the same path on another machine's gateway), and
each result comes back with its report. Tested with local gateways
(`--tx 2*popen`): the same cases and verdicts, and the same reports, as
a local run; and the copy a remote gateway gets, made through a local
one into another directory.
"""

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CRASHCHECK = ROOT / "scripts" / "crashcheck"

pytest.importorskip("xdist")


def cc(*args, timeout=600, env=None):
    return subprocess.run([str(CRASHCHECK), *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout,
                          env=env)


def comparable(out):
    """results.json without what differs from run to run (durations,
    the time and the command line)."""
    doc = json.loads((Path(out) / "results.json").read_text())
    for c in doc["cases"]:
        c.pop("duration")
    s = doc["summary"]
    for k in ("timing", "command"):
        s.pop(k)
    return doc


@pytest.fixture(scope="module")
def checkpointer(tmp_path_factory):
    out = tmp_path_factory.mktemp("spread") / "checkpointer"
    proc = subprocess.run(["cc", "-g", "-O0", "-Wall", "-o", str(out),
                           str(ROOT / "tests" / "progs" / "checkpointer.c")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.mark.parametrize("remote", [False, True],
                         ids=["popen", "as-if-remote"])
def test_popen_gateways_give_a_local_runs_verdicts(tmp_path, checkpointer,
                                                   remote):
    new = tmp_path / "new"
    new.write_bytes(bytes(range(256)) * 7 + b"end\n" * 32)
    argv = ["--new", new, "--", checkpointer, "{new}", "{target}"]
    # the same directory's name: a case's "dir" is under it
    local = cc("audit", "--out", tmp_path / "local" / "out", *argv)
    # as-if-remote: each worker keeps its case directories in a scratch
    # of its own and sends them back packed, as a worker of an ssh
    # gateway does (gateways.pack_case_dir)
    env = dict(os.environ, CRASHCHECK_TX_REMOTE="1") if remote else None
    spread = cc("audit", "--out", tmp_path / "spread" / "out", "--tx",
                "2*popen", *argv, env=env)
    assert local.returncode == spread.returncode == 1, \
        local.stdout + local.stderr + spread.stdout + spread.stderr
    a = comparable(tmp_path / "local" / "out")
    b = comparable(tmp_path / "spread" / "out")
    assert len(a["cases"]) > 300
    verdicts = {c["id"]: (c["verdict"], c["passed"]) for c in a["cases"]}
    assert {c["id"]: (c["verdict"], c["passed"]) for c in b["cases"]} == \
        verdicts
    # every field of every case, and the summary: one report
    assert a["cases"] == b["cases"]
    assert a["summary"] == b["summary"]
    # xdist's workers ran them (pytest -q says only this of them)
    assert "bringing up nodes..." in spread.stdout
    assert "bringing up nodes..." not in local.stdout
    # the findings' directories came back too: they are in --out
    case = next(c for c in b["cases"] if not c["passed"])
    here = tmp_path / "spread" / "out" / "cases" / Path(case["dir"]).name
    there = tmp_path / "local" / "out" / "cases" / Path(case["dir"]).name
    assert sorted(p.relative_to(here) for p in here.rglob("*")) == \
        sorted(p.relative_to(there) for p in there.rglob("*"))
    # (a trace holds process ids: it differs from run to run)
    for name in ("README.txt", "diff.txt", "state/target"):
        assert (here / name).read_bytes() == (there / name).read_bytes()


def test_a_packed_case_directory_stays_inside_cases(tmp_path):
    import base64
    import io
    import tarfile
    from harness.engine import gateways
    d = tmp_path / "case"
    (d / "state").mkdir(parents=True)
    (d / "result.json").write_text("{}")
    os.symlink("/etc", d / "state" / "etc")
    text = gateways.pack_case_dir(d)
    assert not d.exists()
    cases = tmp_path / "out" / "cases"
    assert gateways.unpack_case_dir(text, cases) == "case"
    assert os.readlink(cases / "case" / "state" / "etc") == "/etc"
    # one crafted to write through its own link, or outside: refused
    for names in (["case/state/etc", "case/state/etc/passwd"],
                  ["case/../escape"], ["/abs"], ["a/x", "b/y"]):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            for n in names:
                info = tarfile.TarInfo(n)
                if n == "case/state/etc":
                    info.type, info.linkname = tarfile.SYMTYPE, "/tmp"
                tar.addfile(info, io.BytesIO(b""))
        bad = base64.b64encode(buf.getvalue()).decode()
        assert gateways.unpack_case_dir(bad, tmp_path / "other") is None, names
    assert not (tmp_path / "escape").exists()


def test_bad_tx_is_one_line(tmp_path):
    r = cc("audit", "--out", tmp_path / "out", "--tx", "",
           "--new", "/etc/hostname", "--", "cp", "{new}", "{target}")
    assert r.returncode == 2
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("crashcheck: --tx: ")


def test_a_remote_gateway_gets_the_work_directory(tmp_path):
    import execnet
    from harness.engine import gateways
    src = tmp_path / "work"
    (src / "combo" / "snaps").mkdir(parents=True)
    (src / "combo" / "trace.jsonl").write_text('{"ev":"init"}\n')
    (src / "combo" / "snaps" / "1").write_bytes(b"\0" * 5000)
    dest = tmp_path / "there" / "work"
    gw = execnet.makegateway("popen//python=/usr/bin/python3")
    try:
        gateways.copy_to(gw, src, dest)
    finally:
        gw.exit()
    assert (dest / "combo" / "trace.jsonl").read_text() == '{"ev":"init"}\n'
    assert (dest / "combo" / "snaps" / "1").read_bytes() == b"\0" * 5000


@pytest.mark.skipif(os.geteuid() != 0, reason="a mount namespace needs root")
def test_a_gateway_that_sees_the_work_directory_gets_no_copy(tmp_path):
    # ssh to this machine, or to one that mounts the same file system,
    # sees the work directory at its path: copied onto itself and
    # removed at the end, it would take every result with it
    # (pytest_xdist_newgateway asks sees_ours first). A machine of its
    # own is made here by a private mount namespace with an empty tmpfs
    # over the directory.
    import execnet
    from harness.engine import gateways
    work = tmp_path / "work"
    work.mkdir()
    other = tmp_path / "other-machine"
    other.write_text(
        "#!/bin/sh\nexec unshare -m sh -c "
        "'mount -t tmpfs none \"$0\" && exec /usr/bin/python3 \"$@\"' "
        f"{tmp_path} \"$@\"\n")
    other.chmod(0o755)
    for spec, sees in (("popen//python=/usr/bin/python3", True),
                       (f"popen//python={other}", False)):
        gw = execnet.makegateway(spec)
        try:
            assert gateways.sees_ours(gw, work) is sees, spec
            if not sees:
                # the copy, there: then it sees ours too
                gateways.copy_to(gw, work)
                assert gateways.sees_ours(gw, work) is True
        finally:
            gw.exit()
    # one word for the sweep, kept in its work directory
    assert len((work / gateways.TOKEN).read_text()) == 32


# An ssh for the tests: execnet runs `ssh [-C] [-F CONFIG] HOST COMMAND`;
# this one runs COMMAND here, as a login would (in a directory of its
# own, / rather than a home, with a clean environment: a real ssh
# passes on no PYTHONPATH), and with CC_HIDE set in a mount
# namespace of its own where that directory is an empty tmpfs: a machine
# that does not see this one's results, scratch or work directory.
FAKE_SSH = r'''#!/bin/sh
for last; do :; done
cd /        # not the caller's directory: a login's own
if [ -n "$CC_HIDE" ]; then
    exec unshare -m sh -c 'mount -t tmpfs none "$0" && exec env -i \
        PATH=/usr/bin:/bin HOME=/root sh -c "$1"' "$CC_HIDE" "$last"
fi
exec env -i PATH=/usr/bin:/bin HOME=/root sh -c "$last"
'''


@pytest.mark.skipif(os.geteuid() != 0, reason="a mount namespace needs root")
@pytest.mark.parametrize("machine", ["other", "this"])
def test_an_ssh_gateway_gives_a_local_runs_verdicts(tmp_path, machine):
    # through xdist's ssh path (its arguments rewritten for another
    # machine, the work directory copied there, the case directories sent
    # back packed); "this": ssh to this very machine, which sees the work
    # directory already and must neither copy it onto itself nor remove
    # it at the end (every result with it)
    spec = ROOT / "workloads" / "specs" / "fsync-unchecked.toml"
    hide = tmp_path / "here"
    (hide / "scratch").mkdir(parents=True)
    # the same --scratch (each case's reproduce line names it)
    local = cc("run", "--out", tmp_path / "local" / "out", "--scratch",
               hide / "scratch", spec)
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "ssh").write_text(FAKE_SSH)
    (bin_ / "ssh").chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_}:{os.environ['PATH']}",
               CC_HIDE=str(hide) if machine == "other" else "")
    spread = cc("run", "--out", hide / "out", "--scratch", hide / "scratch",
                "--tx", f"2*ssh=cc-{machine}//python=/usr/bin/python3"
                f"//chdir={ROOT}", spec, env=env)
    assert local.returncode == spread.returncode == 0, \
        local.stdout + local.stderr + spread.stdout + spread.stderr
    assert "bringing up nodes..." in spread.stdout
    a = comparable(tmp_path / "local" / "out")
    b = comparable(hide / "out")
    assert len(a["cases"]) > 100
    assert a["cases"] == b["cases"]
    assert a["summary"] == b["summary"]
    case = next(c for c in b["cases"] if c["dir"])
    assert (hide / "out" / "cases" / Path(case["dir"]).name /
            "README.txt").is_file()
    assert_tree_untouched()


# what xdist copies into a gateway's directory on its own, which is
# the crashcheck tree there: here, this very tree
XDIST_COPIES = ("pytest", "_pytest", "pyexecnetcache")


def assert_tree_untouched():
    made = [n for n in XDIST_COPIES if (ROOT / n).exists()]
    assert made == [], f"a gateway's run left {made} in {ROOT}"


@pytest.mark.skipif(os.geteuid() != 0, reason="a mount namespace needs root")
def test_an_audit_over_ssh_sends_its_inputs(tmp_path):
    # an audit's --new (and the spec it makes) live in --out's .audit/,
    # which the other machine does not see: copied there with the work
    # directory, and the argument naming them passed on as it is
    hide = tmp_path / "here"
    (hide / "scratch").mkdir(parents=True)
    new = tmp_path / "new"
    new.write_bytes(b"the new content\n" * 300)
    argv = ["--scratch", hide / "scratch", "--new", new, "--",
            "cp", "{new}", "{target}"]
    local = cc("audit", "--out", tmp_path / "local" / "out", *argv)
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "ssh").write_text(FAKE_SSH)
    (bin_ / "ssh").chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_}:{os.environ['PATH']}",
               CC_HIDE=str(hide))
    spread = cc("audit", "--out", hide / "out", "--tx",
                f"2*ssh=cc-other//python=/usr/bin/python3//chdir={ROOT}",
                *argv, env=env)
    assert local.returncode == spread.returncode == 1, \
        local.stdout + local.stderr + spread.stdout + spread.stderr
    a = comparable(tmp_path / "local" / "out")
    b = comparable(hide / "out")
    assert len(a["cases"]) > 20
    assert a["cases"] == b["cases"] and a["summary"] == b["summary"]
    assert_tree_untouched()


@pytest.mark.parametrize("tail,words", [
    ("", "which is no crashcheck tree: give //chdir= the tree there, at "),
    ("//chdir=/", "its worker runs in /, which is no crashcheck tree"),
    ("//python=/nonexistent/python3//chdir=/",
     "cannot start a worker there: "),
    # a Python without its site packages: no pytest there (xdist would
    # have copied its own into the tree; crashcheck copies nothing)
    (f"//python=/usr/bin/python3 -S//chdir={ROOT}",
     "its Python cannot import pytest: the worker runs the pytest and "
     "pytest-xdist installed there"),
])
def test_a_gateway_that_cannot_run_the_cases_is_one_line(tmp_path, tail,
                                                         words):
    # tried before the baselines: a worker that cannot import crashcheck
    # would leave xdist waiting for it
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "ssh").write_text(FAKE_SSH)
    (bin_ / "ssh").chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_}:{os.environ['PATH']}", CC_HIDE="")
    spec = "2*ssh=cc-other" + (tail if "python=" in tail
                               else "//python=/usr/bin/python3" + tail)
    r = cc("run", "--out", tmp_path / "out", "--tx", spec,
           ROOT / "workloads" / "specs" / "fsync-unchecked.toml", env=env)
    assert r.returncode == 2, r.stdout + r.stderr
    lines = [l for l in r.stderr.splitlines() if l.startswith("crashcheck")]
    assert len(lines) == 1 and lines[0].startswith(
        f"crashcheck: --tx: '{spec}': "), r.stderr
    assert words in lines[0]
    assert not (tmp_path / "out").exists()
