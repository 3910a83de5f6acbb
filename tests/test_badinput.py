"""Bad input from a hostile or careless user (issue 31, item 3): each one
gets one line naming the problem and exit 2, never a hang, a traceback or
a crash of ours; and a long command line costs its size once, not once per
case.

Each test runs the command line as a user would and looks at what the
user sees: the exit status and every line of stderr.
"""

import json
import os
import resource
import signal
import subprocess

import pytest

from harness import ROOT

CRASHCHECK = ROOT / "scripts" / "crashcheck"
CP = ["cp", "{new}", "{target}"]


def cli(*args, cwd=None, env=None, timeout=120, preexec_fn=None):
    return subprocess.run([str(CRASHCHECK), *map(str, args)], cwd=cwd or ROOT,
                          env=env, capture_output=True, text=True,
                          timeout=timeout, preexec_fn=preexec_fn)


def one_error_line(proc):
    """The single `crashcheck: ...` line of a usage error (exit 2), and
    nothing else on stderr."""
    lines = proc.stderr.splitlines()
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("crashcheck: "), lines
    assert "Traceback" not in proc.stderr + (proc.stdout or "")
    return lines[0]


@pytest.mark.parametrize("option", ["--old", "--new"])
def test_a_fifo_with_no_writer_is_refused_not_waited_on(tmp_path, option):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    proc = cli("audit", option, fifo, "--faults", "baseline", "--out",
               tmp_path / "out", "--", *CP, timeout=60)
    line = one_error_line(proc)
    assert f"{option}: '{fifo}' is not a regular file (a FIFO)" in line


def _limit_address_space():
    resource.setrlimit(resource.RLIMIT_AS, (60000 * 1024, 60000 * 1024))


def test_a_small_input_needs_no_big_buffer(tmp_path):
    """Under `ulimit -v 60000` a 5-byte --old is read with a buffer of its
    size (it was read with a 64 MiB one: MemoryError, a traceback)."""
    old = tmp_path / "old"
    old.write_bytes(b"hello")
    proc = cli("audit", "--old", old, "--faults", "baseline", "--out",
               tmp_path / "out", "--", *CP, preexec_fn=_limit_address_space)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "MemoryError" not in proc.stderr
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    assert (tmp_path / "out" / "results.json").is_file()


@pytest.mark.parametrize("doc,problem", [
    ([], "a JSON list, not an object"),
    ({"cases": 5}, "no 'cases' list"),
    ({"cases": [5]}, "a case that is not an object"),
    ({"cases": [], "summary": "x"}, "'summary' is not an object"),
    ({"cases": [], "summary": {"run": "x"}}, "'summary.run' is not an object"),
])
def test_replay_of_a_results_file_of_another_shape_is_one_line(tmp_path, doc,
                                                               problem):
    results = tmp_path / "results.json"
    results.write_text(json.dumps(doc))
    proc = cli("replay", "cp-powerloss@exit-posix", "--results", results,
               "--out", tmp_path / "out")
    line = one_error_line(proc)
    assert line == (f"crashcheck: --results: '{results}' is not a crashcheck "
                    f"results.json ({problem})")


@pytest.mark.parametrize("key", ["run", "timing"])
def test_merge_of_a_results_file_whose_summary_part_is_a_string(tmp_path, key):
    shard = tmp_path / "shard"
    shard.mkdir()
    (shard / "results.json").write_text(json.dumps(
        {"cases": [], "summary": {key: "a string"}}))
    proc = cli("merge", shard, "--out", tmp_path / "out")
    line = one_error_line(proc)
    assert f"('summary.{key}' is not an object)" in line


def test_a_case_stopped_by_the_scratch_limit_is_exit_2_and_reruns_there(tmp_path):
    """A case whose run passes crashcheck's own scratch limit is the
    machine's to mend: exit 2, as for a scratch too small at the start;
    its reproduce command keeps --scratch and --scratch-limit, so that
    it reruns where it ran."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    out = tmp_path / "out"
    proc = cli("audit", "--faults", "eio", "--scratch", scratch,
               "--scratch-limit", "1M", "--out", out, "--", "sh", "-c",
               'cp "$1" "$0" || head -c 3000000 /dev/zero > big',
               "{target}", "{new}")
    assert proc.returncode == 2, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "Traceback" not in proc.stdout + proc.stderr
    assert "could not be recorded within crashcheck's scratch (exit 2)" \
        in proc.stdout
    cases = json.loads((out / "results.json").read_text())["cases"]
    stopped = [c for c in cases if c["verdict"] == "harness-error"]
    assert stopped
    for c in stopped:
        assert "scratch limit" in c["finding"], c["finding"]
        assert f"--scratch {scratch}" in c["reproduce"], c["reproduce"]
        assert "--scratch-limit 1M" in c["reproduce"], c["reproduce"]


def test_no_room_says_what_is_left_as_too_little(tmp_path):
    """ENOSPC with space left (a write larger than what is left) is
    not called a full scratch with 40 MiB left."""
    from harness.engine import execute
    text = execute.full_text(str(tmp_path), OSError(28, os.strerror(28)))
    assert "is full" not in text
    assert "left there, too little for this run's files" in text


def test_a_start_that_finds_no_process_left_waits_for_one(tmp_path,
                                                          monkeypatch):
    """A program under test that takes every process the user may have
    (a fork bomb) starves the cases beside it: their starts fail with
    EAGAIN. Such a start is tried again until the processes come back
    (the bomb is killed at its time limit)."""
    from harness.engine import runner
    real = os.posix_spawn
    fails = [2]

    def spawn(*args, **kw):
        if fails[0]:
            fails[0] -= 1
            raise BlockingIOError(11, os.strerror(11))
        return real(*args, **kw)
    monkeypatch.setattr(os, "posix_spawn", spawn)
    run = runner.run(["true"], cwd=str(tmp_path), preload=False)
    assert run.status == 0 and fails[0] == 0


def test_no_process_left_for_good_is_one_line_naming_the_limit(tmp_path,
                                                               monkeypatch):
    from harness.engine import runner

    def spawn(*args, **kw):
        raise BlockingIOError(11, os.strerror(11))
    monkeypatch.setattr(os, "posix_spawn", spawn)
    monkeypatch.setattr(subprocess, "Popen", spawn)
    monkeypatch.setattr(runner, "START_RETRY", 0.05)
    with pytest.raises(runner.SetupError) as e:
        runner.run(["true"], cwd=str(tmp_path), preload=False)
    assert "no process left to start it" in str(e.value)
    assert "ulimit -u" in str(e.value)


def test_a_setup_error_of_a_case_is_its_message_not_its_class():
    """The harness-error line of a case whose start failed: the message,
    never `harness.engine.runner.SetupError: ...`."""
    from harness.engine import runner, sweep
    try:
        raise runner.SetupError("cannot run x: no process left")
    except runner.SetupError:
        import traceback
        text = traceback.format_exc()
    assert sweep.failure_line(text) == "cannot run x: no process left"


def test_a_long_command_line_is_stored_once(tmp_path):
    """19 arguments of 100 KB were copied into every case's reproduce
    line of every report (155 MB for a small audit): a command longer
    than audit.LONG_COMMAND is written once, into reproduce.sh in the
    output directory, which each case's line runs with its id."""
    from harness.commands import audit
    from harness.engine.auditspec import shell_word
    arg = "x" * 20000
    out = tmp_path / "out"
    proc = cli("audit", "--faults", "eio", "--out", out, "--", "sh", "-c",
               'cp "$1" "$0"', "{target}", "{new}", *[arg] * 19)
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    argv_bytes = 19 * len(arg)
    total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    cases = json.loads((out / "results.json").read_text())["cases"]
    assert len(cases) > 4
    # the argv at most a few times per report, not once per case
    assert total < 12 * argv_bytes, (total, argv_bytes)
    script = out / audit.REPRODUCE_SCRIPT
    text = script.read_text()
    assert text.count(arg) == 19 and '--case "$1"' in text
    for c in cases:
        assert arg not in c["reproduce"]
        assert c["reproduce"].startswith("sh ") and \
            c["reproduce"].endswith(shell_word(c["id"]))
    assert arg not in proc.stdout


@pytest.mark.parametrize("sig,status", [(signal.SIGINT, 130),
                                        (signal.SIGTERM, 143)])
@pytest.mark.parametrize("stage", ["baselines", "cases"])
def test_an_interrupt_is_one_line_of_ours_not_pytests(tmp_path, sig, status,
                                                      stage):
    """^C or SIGTERM, during the baselines or the cases: the console says
    INTERRUPTED in crashcheck's words and the exit status is the
    reference's (130, 128+N); nothing of pytest's internals ("pool.py:199:
    KeyboardInterrupt (to show a full traceback ...", "!!!! _pytest.
    outcomes.Exit ...", "Exit: terminated by signal 15")."""
    specs = [ROOT / "workloads" / "specs" / f"{n}.toml"
             for n in ("replace", "fsync-unchecked", "overwrite")]
    proc = subprocess.Popen([str(CRASHCHECK), "run", *map(str, specs),
                             "--out", str(tmp_path / "out")], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, restore_signals=True)
    seen = ""
    try:
        while True:
            ch = proc.stdout.read(1)
            if not ch:
                break
            seen += ch
            if stage == "baselines" and "recording" in seen:
                break
            if stage == "cases" and "\n." in seen:
                break
        proc.send_signal(sig)
        rest, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out = seen + rest
    assert proc.returncode == status, out[-3000:]
    for noise in ("KeyboardInterrupt", "_pytest", "!!!!", "Traceback",
                  "Exit: ", "full traceback"):
        assert noise not in out, out[-3000:]
    assert "INTERRUPTED" in out or "crashcheck: interrupted" in out, \
        out[-3000:]


def _stdout_to_dev_full(args, tmp_path):
    with open("/dev/full", "w") as full:
        return subprocess.run([str(CRASHCHECK), *map(str, args)], cwd=tmp_path,
                              stdout=full, stderr=subprocess.PIPE, text=True,
                              timeout=120)


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["help", "plans"],
                                  ["audit", "--help"]])
def test_a_full_standard_output_is_one_line(tmp_path, args):
    """`crashcheck --version > /dev/full` ended in argparse's OSError
    traceback."""
    line = one_error_line(_stdout_to_dev_full(args, tmp_path))
    assert line == ("crashcheck: cannot write to standard output: "
                    "No space left on device")


def test_a_sweep_whose_standard_output_is_full_still_writes_its_reports(
        tmp_path):
    """The console's lines are lost, not the sweep: every case is judged
    and the reports are there; the status says the output was lost."""
    (tmp_path / "new").write_text("new\n")
    out = tmp_path / "out"
    proc = _stdout_to_dev_full(
        ["audit", "--new", tmp_path / "new", "--faults", "eio", "--out", out,
         "--", *CP], tmp_path)
    lines = proc.stderr.splitlines()
    assert lines[-1] == ("crashcheck: cannot write to standard output: "
                         "No space left on device"), proc.stderr[-3000:]
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    results = json.loads((out / "results.json").read_text())
    assert results["summary"]["cases"] == len(results["cases"]) > 0
    assert all(c["verdict"] for c in results["cases"])
    assert not results["summary"]["interrupted"]
