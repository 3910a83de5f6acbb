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
    # gateway does (plugin.pack_case_dir)
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
    from harness.engine import plugin
    d = tmp_path / "case"
    (d / "state").mkdir(parents=True)
    (d / "result.json").write_text("{}")
    os.symlink("/etc", d / "state" / "etc")
    text = plugin.pack_case_dir(d)
    assert not d.exists()
    cases = tmp_path / "out" / "cases"
    assert plugin.unpack_case_dir(text, cases) == "case"
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
        assert plugin.unpack_case_dir(bad, tmp_path / "other") is None, names
    assert not (tmp_path / "escape").exists()


def test_bad_tx_is_one_line(tmp_path):
    r = cc("audit", "--out", tmp_path / "out", "--tx", "",
           "--new", "/etc/hostname", "--", "cp", "{new}", "{target}")
    assert r.returncode == 2
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("crashcheck: --tx: ")


def test_a_remote_gateway_gets_the_work_directory(tmp_path):
    import execnet
    from harness.engine import plugin
    src = tmp_path / "work"
    (src / "combo" / "snaps").mkdir(parents=True)
    (src / "combo" / "trace.jsonl").write_text('{"ev":"init"}\n')
    (src / "combo" / "snaps" / "1").write_bytes(b"\0" * 5000)
    dest = tmp_path / "there" / "work"
    gw = execnet.makegateway("popen//python=/usr/bin/python3")
    try:
        plugin.copy_to(gw, src, dest)
    finally:
        gw.exit()
    assert (dest / "combo" / "trace.jsonl").read_text() == '{"ev":"init"}\n'
    assert (dest / "combo" / "snaps" / "1").read_bytes() == b"\0" * 5000
