"""Lite runs: a fault case whose program stops at its fault records its
trace from the faulted call on (CRASHCHECK_TRACE_FROM,
faults/trace.c; judgemod.Judge.lite_from), and is judged as if it had
recorded every call, or runs again whole."""

import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # noqa: E402
from harness.judging import payload
from harness.engine import (cases as casesmod, judge as judgemod,  # noqa: E402
                            partruns, runner, sweep)
from harness.engine import spec as specmod  # noqa: E402
from harness.engine import trace as trace_mod  # noqa: E402
from test_hardening import write_spec  # noqa: E402
from test_recorder import cc, need_library, syscalls_of_100_writes  # noqa: E402

# Writes NEW in writes of PIECE bytes, one of three ways (usage: pieces
# HOW PIECE TARGET NEW):
#   retry    replaces TARGET the right way (temp file, fsync, rename, fsync
#            of the directory) but tries a write that fails again, up to
#            three failures: after one I/O error it claims success, rightly,
#            and only the whole trace tells what a crash after it leaves
#   inplace  overwrites TARGET in place and stops at the first error,
#            saying so: a torn target, a finding with exit status 1
#   hang     writes target.tmp and, at the first error, says so and waits
#            for ever
PIECES = r"""
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	static char data[1 << 20];
	ssize_t len, done = 0;
	int fd, tries = 0, piece = argc == 5 ? atoi(argv[2]) : 0;
	const char *how = argc == 5 ? argv[1] : "";
	const char *out = strcmp(how, "inplace") ? "target.tmp" : argv[3];

	fd = piece > 0 ? open(argv[4], O_RDONLY) : -1;
	if (fd < 0 || (len = read(fd, data, sizeof(data))) < 0 || close(fd) < 0)
		return 2;
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	while (fd >= 0 && done < len) {
		ssize_t n = write(fd, data + done, len - done < piece ? len - done : piece);

		if (n < 0 && (strcmp(how, "retry") || ++tries == 3))
			break;
		if (n > 0)
			done += n;
	}
	if (done < len || fsync(fd) < 0 || close(fd) < 0) {
		perror(out);
		while (!strcmp(how, "hang"))
			pause();
		return 1;
	}
	if (!strcmp(how, "retry")) {
		int dfd;

		if (rename(out, argv[3]) < 0 ||
		    (dfd = open(".", O_RDONLY | O_DIRECTORY)) < 0 || fsync(dfd) < 0) {
			perror(argv[3]);
			return 1;
		}
	}
	return 0;
}
"""


# Calls fdatasync on /dev/null COUNT times, then execs the rest of its
# command line: a program whose calls are not where its baseline made them
# (though they have the same names and numbers) in every lite run, and in
# no whole one, for it makes those calls only when the recorder takes
# snapshots. usage: jitter COUNT PROGRAM ARG...
JITTER = r"""
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	int fd = open("/dev/null", O_RDONLY);

	if (argc < 3 || fd < 0)
		return 2;
	for (int i = 0; getenv("CRASHCHECK_SNAPDIR") && i < atoi(argv[1]); i++)
		fdatasync(fd);
	close(fd);
	execv(argv[2], argv + 2);
	return 127;
}
"""


def build(tmp_path_factory, **sources):
    """{name: path} of scripts/bench-writer.c and of each of SOURCES (name
    = its C text), compiled into a directory of the test session's."""
    need_library()
    d = tmp_path_factory.mktemp("bin")
    built = {"bench-writer": cc(ROOT / "scripts" / "bench-writer.c",
                                d / "bench-writer")}
    for name, text in sources.items():
        (d / f"{name}.c").write_text(text)
        built[name] = cc(d / f"{name}.c", d / name)
    return built


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build(tmp_path_factory, pieces=PIECES, jitter=JITTER)


def traced(base, argv, plan="", start=None):
    """Run ARGV in BASE/work with a trace and no snapshots, lite from
    START; (run, records)."""
    work = base / "work"
    work.mkdir(parents=True)
    (work / "target").write_bytes(payload.make(4096, 1))
    (base / "new").write_bytes(payload.make(12000, 2))
    env = runner.build_env(plan, base / "trace.jsonl", work, None,
                           base / "shared", program=str(argv[0]), cwd=work,
                           trace_from=start)
    run = runner.run([str(a) for a in argv] + ["target", str(base / "new")],
                     cwd=work, preload=False, env=env, timeout=60)
    return run, trace_mod.load(base / "trace.jsonl")


# the fields of a line that do not change from run to run (not the pid,
# not the inode)
FIELDS = ("ev", "seq", "call", "n", "fd", "path", "off", "len", "flags",
          "ret", "errno", "fault", "when")


def test_a_lite_run_has_the_whole_run_s_lines_from_its_start(tmp_path, built):
    """From its start on, a lite trace holds the lines of a whole one,
    numbered alike; before it, only the process's start."""
    argv = [built["bench-writer"], "200"]
    whole_run, whole = traced(tmp_path / "whole", argv, "write#150=EIO")
    lite_run, lite = traced(tmp_path / "lite", argv, "write#150=EIO", start=120)
    assert whole_run.status == lite_run.status == 1
    assert lite_run.stderr == whole_run.stderr
    assert [r["ev"] for r in lite if r["seq"] < 120] == ["init"]

    def fields(records):
        return [{k: r.get(k) for k in FIELDS if k in r}
                for r in records if r["ev"] != "init" and r["seq"] >= 120]
    got, want = fields(lite), fields(whole)
    # the paths differ by the scratch directory alone
    for r in got:
        r["path"] = r.get("path", "").replace(str(tmp_path / "lite"), "")
    for r in want:
        r["path"] = r.get("path", "").replace(str(tmp_path / "whole"), "")
    assert got == want and len(got) > 30
    assert [r["seq"] for r in lite if r.get("fault")] == \
        [r["seq"] for r in whole if r.get("fault")]


@pytest.mark.parametrize("plan", ["write#50=EIO", "write#50=crash",
                                  "write#50=crash-after", "write#50+=ENOSPC"])
def test_a_fault_before_the_start_still_has_its_line(tmp_path, built, plan):
    """A call a fault fires on before the trace's start gets its line,
    with its seq, and the crash its own: the harness sees where it fired
    and that the run cannot stand for a whole one."""
    argv = [built["bench-writer"], "200"]
    _, whole = traced(tmp_path / "whole", argv, plan)
    _, lite = traced(tmp_path / "lite", argv, plan, start=120)
    want = [(r["seq"], r["ev"], r["call"], r["n"]) for r in
            trace_mod.faulted(whole)]
    assert want and want[0][0] < 120
    assert [(r["seq"], r["ev"], r["call"], r["n"]) for r in
            trace_mod.faulted(lite)] == want


def test_a_call_before_the_start_costs_no_system_call(tmp_path, built):
    """What a lite run saves: before its start, a write makes no system
    call besides its own (a whole trace's make five)."""
    def check(n, records):
        # the process starts (strace's own too), no call
        assert {r["ev"] for r in records} == {"init"}
    assert syscalls_of_100_writes(tmp_path, built["bench-writer"], check,
                                  snaps=False, trace_from=10 ** 9) == \
        {"write": 100}


@pytest.mark.parametrize("value, snapdir, trace, problem", [
    ("x", False, True, "CRASHCHECK_TRACE_FROM 'x' is not a sequence number"),
    ("-5", False, True, "CRASHCHECK_TRACE_FROM '-5' is not a sequence number"),
    (" 5", False, True, "CRASHCHECK_TRACE_FROM ' 5' is not a sequence number"),
    ("5k", False, True, "CRASHCHECK_TRACE_FROM '5k' is not a sequence number"),
    ("99999999999999999999", False, True,
     "CRASHCHECK_TRACE_FROM '99999999999999999999' is not a sequence number"),
    ("5", True, True, "CRASHCHECK_TRACE_FROM is set with CRASHCHECK_SNAPDIR: "
     "a trace that starts late cannot be replayed"),
    ("5", False, False, "CRASHCHECK_TRACE_FROM is set but CRASHCHECK_TRACE "
     "is not"),
])
def test_a_bad_start_is_one_line_and_exit_2(tmp_path, built, value, snapdir,
                                            trace, problem):
    (tmp_path / "snaps").mkdir()
    env = runner.build_env("", tmp_path / "trace.jsonl" if trace else None,
                           tmp_path if snapdir else None,
                           tmp_path / "snaps" if snapdir else None,
                           program=str(built["bench-writer"]), cwd=tmp_path)
    env["CRASHCHECK_TRACE_FROM"] = value
    (tmp_path / "new").write_bytes(b"x")
    r = runner.run([str(built["bench-writer"]), "1", "target", "new"],
                   cwd=tmp_path, preload=False, env=env, timeout=10)
    assert (r.status, r.stderr_text()) == (2, f"crashcheck: {problem}\n")
    assert not (tmp_path / "target").exists()


# --- the sweep ----------------------------------------------------------------

KEYS = ("verdict", "passed", "finding", "explanation", "state", "model",
        "states", "fired", "trace_excerpt", "exit", "stderr", "expected")


def spec_file(tmp_path, name, argv, sizes, timeout=None):
    """The spec of ARGV TARGET NEW, loaded."""
    return specmod.load(write_spec(
        tmp_path / f"{name}.toml", name,
        [*map(str, argv), "{target}", "{new}"], sizes=sizes, timeout=timeout))


def judged(tmp_path, specs, lite, keep=False, fork_server=True, only=None,
           kinds=casesmod.KINDS, note=lambda out: out.trace_from):
    """Every case of SPECS (of KINDS, whose id ONLY takes) judged in one
    process: ({id: (result, [NOTE(Outcome) of each run])}, judge)."""
    # every call's cases (no grouping): what lite and thin runs must
    # hold to is every case a long trace gives
    settings = casesmod.Settings(out=tmp_path / ("lite" if lite else "whole"),
                                 jobs=1, lite=lite, keep=keep,
                                 fork_server=fork_server, kinds=kinds,
                                 exhaustive=True)
    cases, _ = sweep.enumerate_cases(specs, settings, log=lambda m: None)
    cases = [c for c in cases if only is None or only(c.id)]
    judge = judgemod.Judge(specs, settings)
    judge.scratch_root = runner.make_scratch("crashcheck-test-")
    ran = []
    # the judge's runs (judge.py's execute_run), counted
    execute_run = judgemod.execute_run

    def counted(*args, **kw):
        out = execute_run(*args, **kw)
        ran.append(note(out))
        return out
    judgemod.execute_run = counted
    try:
        results = {}
        for c in cases:
            before = len(ran)
            res = judge.execute(c)
            results[c.id] = (res, ran[before:])
    finally:
        judgemod.execute_run = execute_run
        judge.close_server()
        sweep.remove_work(settings.work_link)
        shutil.rmtree(judge.scratch_root, ignore_errors=True)
    return results, judge


@pytest.fixture(scope="module")
def three(built, tmp_path_factory):
    """A correct writer, a retrier that claims success after an I/O
    error, one that ignores every error (findings, exit 0), one that
    tears its target (findings, exit 1), and a correct writer whose
    calls are not where its baseline made them (150 calls early), judged
    with and without lite runs."""
    tmp = tmp_path_factory.mktemp("three")
    # the careless one exits 0 whatever happened, as the corpus's buggy
    # variants ignore an error: a finding at every fault that fired
    careless = tmp / "careless.sh"
    careless.write_text(f'#!/bin/sh\n"{built["bench-writer"]}" "$@"\nexit 0\n')
    careless.chmod(0o755)
    specs = [spec_file(tmp, "writer", [built["bench-writer"], "150"], [9000]),
             spec_file(tmp, "retrier", [built["pieces"], "retry", "100"], [9000]),
             spec_file(tmp, "careless", [careless, "100"], [9000]),
             spec_file(tmp, "inplace", [built["pieces"], "inplace", "100"],
                       [9000]),
             spec_file(tmp, "jitter", [built["jitter"], "150",
                                       built["bench-writer"], "60"], [9000])]
    return judged(tmp, specs, True), judged(tmp, specs, False)


@pytest.mark.plain
def test_lite_runs_judge_every_case_as_whole_ones(three):
    """Every case of the five programs gets the same verdict, finding,
    states, excerpt, fired rules and exit with lite runs as without."""
    (lite, _), (whole, _) = three
    assert lite.keys() == whole.keys()
    differ = [i for i in lite if {k: lite[i][0][k] for k in KEYS}
              != {k: whole[i][0][k] for k in KEYS}]
    assert differ == []
    # the findings keep a directory, as whole runs do
    assert [i for i in lite if bool(lite[i][0]["dir"]) != bool(whole[i][0]["dir"])] == []
    assert all(x is None for res, runs in whole.values() for x in runs)


def test_lite_runs_stand_where_the_program_stops(three):
    """A lite run stands where the program stops at its fault, with an
    error or killed, and nothing is found: most of the correct writer's
    EIO, ENOSPC and crash cases."""
    (lite, _), _ = three
    stood = [i for i, (res, runs) in lite.items() if runs and runs[-1] is not None]
    assert sum(i.startswith("writer-") for i in stood) > 300
    for i in stood:
        res, runs = lite[i]
        assert res["kind"] in partruns.LITE_KINDS and len(runs) == 1
        assert res["verdict"] == "ok" and res["exit"]["status"] != 0 \
            and res["states"] == 0


def test_a_lite_run_starts_at_its_faulted_call_unless_it_persists_near_the_start(
        built, tmp_path):
    """A lite run traces from the seq its baseline made the faulted call at,
    with no snapshots: where it stands, its faulted call is there. A fault
    that keeps firing within PERSIST_WHOLE_WITHIN calls of the start runs
    whole, for a program may retry it until its timeout; farther in it
    runs lite."""
    specs = [spec_file(tmp_path, "writer", [built["bench-writer"], "150"],
                       [9000])]

    def note(out):
        # the call a fault fired on, or the crash record of one
        return out.trace_from, [r["seq"] for r in out.faulted()][:1]
    got, _ = judged(tmp_path, specs, True,
                    kinds=("baseline",) + partruns.LITE_KINDS, note=note)
    lite = [(res, runs) for res, runs in got.values()
            if res["kind"] in partruns.LITE_KINDS]
    stood = [runs[0] for res, runs in lite
             if len(runs) == 1 and runs[0][0] is not None]
    assert len(stood) > 300 and all([start] == seqs for start, seqs in stood)
    persist = [runs for res, runs in lite if "+=" in res["plan"]]
    near = [runs for runs in persist
            if runs[0][1] and runs[0][1][0] <= partruns.PERSIST_WHOLE_WITHIN]
    far = [runs for runs in persist
           if runs[0][1] and runs[0][1][0] > partruns.PERSIST_WHOLE_WITHIN]
    assert len(near) > 20 and all(runs == [(None, runs[0][1])] for runs in near)
    assert len(far) > 20 and all(runs[0][0] == runs[0][1][0] for runs in far)


def test_a_lite_run_that_claims_success_runs_again_whole(three):
    """The retrier survives one I/O error and claims success: its
    after-exit states come from a whole run. After two lite runs that did
    not stand, its EIO cases are whole from the start."""
    (lite, _), _ = three
    eio = [(i, lite[i]) for i in lite if i.startswith("retrier-")
           and lite[i][0]["kind"] == "eio" and "#" in i]
    once = [runs for i, (res, runs) in eio if res["exit"]["status"] == 0
            and res["verdict"] == "ok"]
    assert len(once) > 80
    assert all(res["states"] > 0 for i, (res, runs) in eio
               if res["exit"]["status"] == 0 and res["verdict"] == "ok")
    lite_first = [runs for runs in once if runs[0] is not None]
    assert len(lite_first) == 2 and all(r == [r[0], None] for r in lite_first)


def test_a_finding_of_a_lite_run_runs_again_whole(three):
    """A finding's directory shows the whole trace: a lite run that finds
    something runs again whole, whether the program said so or not."""
    (lite, _), _ = three
    for name, status in (("careless-", 0), ("inplace-", 1)):
        found = [runs for i, (res, runs) in lite.items()
                 if i.startswith(name) and res["verdict"] != "ok"
                 and res["exit"]["status"] == status]
        assert len(found) > 10 and all(runs[-1] is None for runs in found)
        assert any(runs[0] is not None for runs in found)


def test_a_fault_before_the_start_runs_again_whole(three):
    """Where a run made fewer calls before its fault than its baseline,
    the fault fires before the trace starts: the case runs again whole
    (and test_lite_runs_judge_every_case_as_whole_ones finds its result
    a whole run's). After two such runs of a kind of case, its cases are
    whole from the start."""
    (lite, _), _ = three
    assert_two_misses_per_kind(lite, "jitter-")


def assert_two_misses_per_kind(lite, prefix):
    """Every lite run of PREFIX's program ran again whole, and there were
    two of each kind of case (its kind, and whether its fault fires once
    or from its call on), the rest whole from the start."""
    def key(res):
        return res["kind"], "+=" in res["plan"]
    mine = [(key(res), runs) for i, (res, runs) in lite.items()
            if i.startswith(prefix) and res["kind"] in partruns.LITE_KINDS]
    tried = [k for k, runs in mine if runs[0] is not None]
    assert sorted(tried) == sorted([k for k in {k for k, runs in mine}] * 2)
    assert all(runs[1:] == [None] for k, runs in mine if runs[0] is not None)


def test_a_lite_run_that_timed_out_stands(built, tmp_path):
    """A program that hangs after its fault is judged from its lite run
    (a whole one would only time out again), and its directory says that
    its trace starts late."""
    specs = [spec_file(tmp_path, "hanger", [built["pieces"], "hang", "100"],
                       [9000], timeout=0.5)]
    want = ("hanger-9000B-write(target.tmp)#85=EIO",
            "hanger-9000B-write(target.tmp)#86++=ENOSPC")
    lite, _ = judged(tmp_path / "l", specs, True, only=want.__contains__)
    whole, _ = judged(tmp_path / "w", specs, False, only=want.__contains__)
    assert sorted(lite) == sorted(want)
    for i in want:
        res, runs = lite[i]
        assert res["verdict"] == whole[i][0]["verdict"] == "hang"
        # its excerpt: from the faulted call on, as the whole run's ends
        got, full = res["trace_excerpt"], whole[i][0]["trace_excerpt"]
        assert "[fault: " in got[0] and len(full) > len(got) + 30
        assert full[-len(got):] == got
        assert len(runs) == 1 and runs[0] is not None
        head = (tmp_path / "l" / "lite" / res["dir"].split("/", 1)[1] /
                "trace.txt").read_text().splitlines()[0]
        assert head.startswith(f"(a lite run that timed out: its trace starts "
                               f"at seq {runs[0]}, the faulted call's")


def test_keep_and_exec_each(built, tmp_path):
    """--keep records every case whole; exec'd cases run lite as forked
    ones do."""
    specs = [spec_file(tmp_path, "writer", [built["bench-writer"], "120"], [9000])]
    kept, _ = judged(tmp_path / "k", specs, True, keep=True)
    assert all(x is None for res, runs in kept.values() for x in runs)
    execd, _ = judged(tmp_path / "e", specs, True, fork_server=False)
    assert sum(bool(runs) and runs[-1] is not None
               for res, runs in execd.values()) > 200
