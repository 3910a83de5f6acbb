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
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CRASHCHECK = ROOT / "scripts" / "crashcheck"

pytest.importorskip("xdist")


def cc(*args, timeout=600):
    return subprocess.run([str(CRASHCHECK), *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


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


def test_popen_gateways_give_a_local_runs_verdicts(tmp_path, checkpointer):
    new = tmp_path / "new"
    new.write_bytes(bytes(range(256)) * 7 + b"end\n" * 32)
    argv = ["--new", new, "--", checkpointer, "{new}", "{target}"]
    # the same directory's name: a case's "dir" is under it
    local = cc("audit", "--out", tmp_path / "local" / "out", *argv)
    spread = cc("audit", "--out", tmp_path / "spread" / "out", "--tx",
                "2*popen", *argv)
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
    assert (tmp_path / "spread" / "out" / "cases" / Path(case["dir"]).name /
            "trace.jsonl").is_file()


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
