"""Thin runs: a fault case whose program is expected to get past its fault
(an EINTR, a short write) records its writes but the faulted one thin
(CRASHCHECK_TRACE_FULL, faults/trace.c; judge.Judge.thin_window):
the file, its flags and what the call returned, no offset and no snapshot.
It is judged as if it had recorded every write in full, or runs again
whole."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # noqa: E402
from harness.judging import explorer, payload
from harness.engine import partruns, runner  # noqa: E402
from harness.engine import trace as trace_mod  # noqa: E402
from test_lite import KEYS, FIELDS, build, judged, spec_file  # noqa: E402
from test_recorder import syscalls_of_100_writes  # noqa: E402

# Writes NEW to target.tmp in N writes of nearly equal length, retrying
# an EINTR or a short write within its piece, then renames it over
# TARGET (usage: scribble HOW N TARGET NEW):
#   nosync  and never calls fsync: no write is moot, every thin one is
#           needed by the after-exit replay
#   osync   with target.tmp opened O_SYNC: no write may be thin
#   tee     fsyncs target.tmp and the directory as it should, and also
#           writes each piece to its standard output (a file the recorder
#           does not watch: never thin)
#   nodir   fsyncs target.tmp but not the directory: its writes are moot,
#           and a crash after it exits may lose the rename (a finding)
#   giveup  takes an EINTR or a short write for an error, and says so
#           (a finding, exit 1)
#   hang    takes an EINTR or a short write for an error, says so and
#           waits for ever (a finding when the spec's timeout ends it)
#   late    as hang, after 30 one-byte writes to side.tmp (writes 1 to
#           30, thin in a thin run) and 50 fsyncs of it
SCRIBBLE = r"""
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static const char *how = "";
static int put(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (!strcmp(how, "hang") && (n < 0 || (size_t)n < len)) {
			perror("write");
			for (;;)
				pause();
		}
		if (n < 0 && errno == EINTR && strcmp(how, "giveup"))
			continue;
		if (n >= 0 && (size_t)n < len && !strcmp(how, "giveup"))
			return -1;
		if (n <= 0)
			return -1;
		p += n;
		len -= n;
	}
	return 0;
}
int main(int argc, char **argv)
{
	static char data[1 << 20];
	ssize_t len;
	int fd, n, dfd, flags = O_WRONLY | O_CREAT | O_TRUNC;
	how = argc == 5 ? argv[1] : "";
	n = argc == 5 ? atoi(argv[2]) : 0;
	fd = n > 0 ? open(argv[4], O_RDONLY) : -1;
	if (fd < 0 || (len = read(fd, data, sizeof(data))) < 0 || close(fd) < 0)
		return 2;
	if (!strcmp(how, "osync"))
		flags |= O_SYNC;
	if (!strcmp(how, "late")) {
		int side = open("side.tmp", O_WRONLY | O_CREAT | O_TRUNC, 0644);

		for (int i = 0; side >= 0 && i < 80; i++)
			if ((i < 30 ? write(side, "x", 1) : fsync(side)) < 0)
				return 1;
		if (side < 0 || close(side) < 0 || unlink("side.tmp") < 0)
			return 1;
		how = "hang";
	}
	fd = open("target.tmp", flags, 0644);
	if (fd < 0)
		return 1;
	for (int i = 0; i < n; i++) {
		const char *p = data + len * i / n;
		size_t k = len * (i + 1) / n - len * i / n;

		if (put(fd, p, k) < 0 ||
		    (!strcmp(how, "tee") && put(1, p, k) < 0)) {
			perror("target.tmp");
			return 1;
		}
	}
	if ((strcmp(how, "nosync") && fsync(fd) < 0) || close(fd) < 0 ||
	    rename("target.tmp", argv[3]) < 0) {
		perror(argv[3]);
		return 1;
	}
	if (strcmp(how, "nodir") && ((dfd = open(".", O_RDONLY)) < 0 || fsync(dfd) < 0))
		return 1;
	return 0;
}
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build(tmp_path_factory, scribble=SCRIBBLE)


def recorded(base, argv, plan="", full=None):
    """Run ARGV TARGET NEW in BASE/work recorded (snapshots), thin outside
    FULL (lo, hi); (run, records)."""
    work = base / "work"
    work.mkdir(parents=True)
    (work / "target").write_bytes(payload.make(4096, 1))
    (base / "new").write_bytes(payload.make(12000, 2))
    env = runner.build_env(plan, base / "trace.jsonl", work, base / "snaps",
                           base / "shared", program=str(argv[0]), cwd=work,
                           trace_full=full)
    run = runner.run([str(a) for a in argv] + ["target", str(base / "new")],
                     cwd=work, preload=False, env=env, timeout=60)
    return run, trace_mod.load(base / "trace.jsonl")


def fields(records, base):
    """What a run's lines say that does not change from run to run."""
    out = []
    for r in records:
        if r["ev"] == "init":
            continue
        f = {k: r.get(k) for k in FIELDS if k in r}
        f["path"] = f.get("path", "").replace(str(base), "")
        out.append(f)
    return out


# --- the library --------------------------------------------------------------

def test_a_thin_write_costs_two_system_calls(tmp_path, built):
    """What a thin write saves: the fstat and F_GETFL before it stay (the
    file and its flags), the lseek, the fstat after and the read-back of
    a range snapshot go."""
    def check(n, records):
        thin = [r for r in records if r.get("call") == "write"]
        assert len(thin) == n and all(r.get("thin") is True for r in thin)
    per_100 = syscalls_of_100_writes(tmp_path, built["bench-writer"], check,
                                     trace_full=(10 ** 9, 10 ** 9))
    stat = "fstat" if "fstat" in per_100 else "newfstatat"
    grown = per_100.pop("fallocate", 0)
    assert grown <= 1 and per_100.pop("mremap", 0) == grown
    assert per_100 == {"write": 100, stat: 100 + grown, "fcntl": 100}, per_100


def test_a_thin_line_is_the_whole_line_less_where_and_what(tmp_path, built):
    """Outside its full seqs a write's line says thin and has no offset and
    no snapshot; else, and for every other call, and for the write a rule
    chose (even outside them), the line is the whole run's."""
    argv = [built["bench-writer"], "200"]
    plan = "write#20=EINTR"
    whole_run, whole = recorded(tmp_path / "whole", argv, plan)
    thin_run, thin = recorded(tmp_path / "thin", argv, plan, full=(100, 140))
    assert whole_run.status == thin_run.status == 0
    assert [r["seq"] for r in thin] == [r["seq"] for r in whole]
    got, want = fields(thin, tmp_path / "thin"), fields(whole, tmp_path / "whole")
    marked = [r["seq"] for r in thin if r.get("thin")]
    writes = [r["seq"] for r in whole if r.get("call") == "write"
              and r.get("path", "").endswith("target.tmp")]
    faulted = [r["seq"] for r in whole if r.get("fault")]
    assert len(faulted) == 1 and faulted[0] < 100
    assert marked == [s for s in writes if not 100 <= s <= 140
                      and s not in faulted]
    for g, w, r in zip(got, want, [r for r in thin if r["ev"] != "init"]):
        if r.get("thin"):
            assert "off" not in r and "snap" not in r
            w = {k: v for k, v in w.items() if k != "off"}
        else:
            assert ("snap" in r) == ("snap" in next(
                x for x in whole if x["seq"] == r["seq"]))
        assert g == w
    # the fsync that makes them moot snapshots the file whole, as ever
    fsync = [r for r in thin if r.get("call") == "fsync"
             and r["path"].endswith("target.tmp")]
    assert [sorted(f) for r in fsync for f in r["snap"]["files"].values()] == \
        [["hash", "size"]]


@pytest.mark.parametrize("how", ["osync", "tee"])
def test_a_write_that_matters_is_never_thin(tmp_path, built, how):
    """A write on an O_SYNC descriptor (durable when it returns), and one
    to a file outside WATCH (standard output here), are recorded in full
    outside the full seqs too."""
    run, records = recorded(tmp_path, [built["scribble"], how, "100"],
                            full=(10 ** 9, 10 ** 9))
    assert run.status == 0
    writes = [r for r in records if r.get("call") == "write"]
    thin = [r for r in writes if r.get("thin")]
    if how == "osync":
        assert len(writes) == 100 and thin == []
        assert all("O_SYNC" in r["flags"] and "off" in r for r in writes)
    else:
        assert len(writes) == 200 and len(thin) == 100
        assert all(r["path"].endswith("target.tmp") for r in thin)


@pytest.mark.parametrize("value, recorder, problem", [
    *[(v, True, f"CRASHCHECK_TRACE_FULL '{v}' is not a range of sequence "
       "numbers (LO-HI)")
      for v in ("5", "9-5", "1-2x", "-1-2", " 1-2", "1--2",
                "1-99999999999999999999")],
    ("1-2", False, "CRASHCHECK_TRACE_FULL is set but the recorder is off "
     "(CRASHCHECK_TRACE, CRASHCHECK_WATCH, CRASHCHECK_SNAPDIR)"),
])
def test_a_bad_range_is_one_line_and_exit_2(tmp_path, built, value, recorder,
                                            problem):
    (tmp_path / "snaps").mkdir()
    env = runner.build_env("", tmp_path / "trace.jsonl", tmp_path,
                           tmp_path / "snaps" if recorder else None,
                           program=str(built["bench-writer"]), cwd=tmp_path)
    env["CRASHCHECK_TRACE_FULL"] = value
    (tmp_path / "new").write_bytes(b"x")
    r = runner.run([str(built["bench-writer"]), "1", "target", "new"],
                   cwd=tmp_path, preload=False, env=env, timeout=10)
    assert (r.status, r.stderr_text()) == (2, f"crashcheck: {problem}\n")
    assert not (tmp_path / "target").exists()


# --- the replay ---------------------------------------------------------------

def test_the_replay_refuses_a_thin_write(tmp_path, built):
    """A thin write the after-exit replay would have to read is refused
    (explorer.ThinRecord), whether it stands alone or in a moot run whose
    writes a world needs; thin_unread says so before the replay."""
    run, records = recorded(tmp_path, [built["scribble"], "nosync", "100"],
                            full=(10 ** 9, 10 ** 9))
    assert run.status == 0
    with pytest.raises(explorer.ThinRecord, match="a thin write"):
        explorer.explore_exit(records, tmp_path / "snaps", exit_ok=True)
    assert not partruns.thin_unread(records)
    lazy = trace_mod.Lazy.load(tmp_path / "trace.jsonl")
    assert lazy.thin() and not partruns.thin_unread(lazy.for_exit())

    run, records = recorded(tmp_path / "w", [built["bench-writer"], "100"],
                            full=(10 ** 9, 10 ** 9))
    lazy = trace_mod.Lazy.load(tmp_path / "w" / "trace.jsonl")
    moot = lazy.for_exit()
    assert run.status == 0 and partruns.thin_unread(moot)
    assert any(r.__class__ is explorer.Moot for r in moot)
    got = explorer.explore_exit(moot, tmp_path / "w" / "snaps", exit_ok=True,
                                moot_full=False)
    assert set(got) == set(explorer.MODELS)
    # a world that does not know the file needs the moot run's writes
    unknown = [r for r in moot if not (r.get("call") == "open"
                                       and "target.tmp" in r.get("path", ""))]
    with pytest.raises(explorer.ThinRecord, match="moot run are needed"):
        explorer.explore_exit(unknown, tmp_path / "w" / "snaps", exit_ok=True,
                              moot_full=False)
    # with moot_full (a whole run's), it reads them, and meets thin lines
    with pytest.raises(explorer.ThinRecord, match="a thin write"):
        explorer.explore_exit(unknown, tmp_path / "w" / "snaps", exit_ok=True)


def test_thin_unread_takes_no_write_of_a_moot_file_outside_its_run():
    moot = explorer.Moot(5, "write", 7, lambda lines: [], [3, 4])
    write = {"ev": "call", "seq": 9, "call": "write", "ino": 7, "ret": 2}
    other = dict(write, ino=8)
    failed = dict(write, ret=-1)
    assert partruns.thin_unread([moot, other, failed])
    assert not partruns.thin_unread([moot, write])
    assert not partruns.thin_unread([dict(other, thin=True)])


# --- the sweep ----------------------------------------------------------------

def note(out):
    """What test_lite's judged notes of a run: its full seqs, and whether
    a line came thin."""
    return out.trace_full, out.trace is not None and out.trace.thin()


@pytest.fixture(scope="module")
def four(built, tmp_path_factory):
    """The EINTR and short-write cases of a correct writer, one that never
    fsyncs, one that does not fsync the directory and one that gives up
    (findings), one that opens O_SYNC and one that also writes its
    standard output, judged with and without thin runs."""
    tmp = tmp_path_factory.mktemp("four")
    specs = [spec_file(tmp, "writer", [built["bench-writer"], "150"], [9000]),
             spec_file(tmp, "nosync", [built["scribble"], "nosync", "150"],
                       [9000]),
             spec_file(tmp, "osync", [built["scribble"], "osync", "150"],
                       [9000]),
             spec_file(tmp, "tee", [built["scribble"], "tee", "150"], [9000]),
             spec_file(tmp, "nodir", [built["scribble"], "nodir", "150"],
                       [9000]),
             spec_file(tmp, "giveup", [built["scribble"], "giveup", "150"],
                       [9000])]
    kinds = ("baseline",) + partruns.THIN_KINDS
    return (judged(tmp, specs, True, kinds=kinds, note=note),
            judged(tmp, specs, False, kinds=kinds, note=note))


@pytest.mark.plain
def test_thin_runs_judge_every_case_as_whole_ones(four):
    """Every case of the four programs gets the same verdict, finding,
    states, excerpt, fired rules and exit with thin runs as without."""
    (thin, _), (whole, _) = four
    assert thin.keys() == whole.keys() and len(thin) > 1000
    differ = [i for i in thin if {k: thin[i][0][k] for k in KEYS}
              != {k: whole[i][0][k] for k in KEYS}]
    assert differ == []
    assert [i for i in thin if bool(thin[i][0]["dir"]) != bool(whole[i][0]["dir"])] == []
    assert all(x == (None, False) for res, runs in whole.values() for x in runs)


def test_thin_runs_stand_where_the_program_fsyncs(four):
    """The correct writer's and the tee's cases stand on one run, thin,
    with their after-exit states judged."""
    (thin, _), _ = four
    for name in ("writer-", "tee-"):
        mine = {i: v for i, v in thin.items() if i.startswith(name)
                and v[0]["kind"] in partruns.THIN_KINDS}
        assert len(mine) > 250
        assert all(len(runs) == 1 and runs[0][0] is not None
                   for res, runs in mine.values())
        stood = [res for res, runs in mine.values() if runs[0][1]]
        assert len(stood) > 100
        assert all(res["verdict"] == "ok" and res["states"] > 0
                   and res["exit"]["status"] == 0 for res in stood)


def test_thin_runs_whose_writes_are_needed_run_again_whole(four):
    """The program that never fsyncs: its thin writes are not moot, so each
    thin run runs again whole; after two of each kind of case, that
    kind's cases are whole from the start."""
    (thin, _), _ = four
    mine = [(res["kind"], runs) for i, (res, runs) in thin.items()
            if i.startswith("nosync-") and res["kind"] in partruns.THIN_KINDS]
    tried = [k for k, runs in mine if runs[0][0] is not None]
    assert sorted(tried) == sorted(list(partruns.THIN_KINDS) * 2)
    assert all(runs[0][1] and runs[1:] == [(None, False)]
               for k, runs in mine if runs[0][0] is not None)


@pytest.mark.parametrize("name, status", [("nodir-", 0), ("giveup-", 1)])
def test_a_finding_of_a_thin_run_runs_again_whole(four, name, status):
    """A finding's directory shows the whole trace: where a thin run finds
    something, in its after-exit states (the rename the directory's fsync
    would have kept) or before them (a program that gave up on EINTR),
    the case runs again whole. (A thin run with no thin line, the
    giveup's before its first thin write, is a whole one, and stands.)"""
    (thin, _), (whole, _) = four
    mine = [(res, runs) for i, (res, runs) in thin.items()
            if i.startswith(name) and res["kind"] in partruns.THIN_KINDS]
    found = [runs for res, runs in mine if res["verdict"] != "ok"
             and res["exit"]["status"] == status]
    assert len(found) > 250
    tried = [runs for runs in found if runs[0][1]]
    assert len(tried) >= 2
    assert all(runs[1:] == [(None, False)] for runs in tried)
    assert all(not runs[-1][1] for runs in found)


def test_a_thin_run_with_no_thin_line_stands(four):
    """The O_SYNC writer's writes are never thin: its thin runs are whole
    ones, and stand, findings too."""
    (thin, _), _ = four
    mine = [(res, runs) for i, (res, runs) in thin.items()
            if i.startswith("osync-") and res["kind"] in partruns.THIN_KINDS]
    assert len(mine) > 250
    assert all(runs == [(runs[0][0], False)] and runs[0][0] is not None
               for res, runs in mine)


def test_a_thin_run_that_timed_out_stands_but_for_a_thin_line_in_its_excerpt(
        built, tmp_path):
    """A program that hangs after its fault is judged from its thin run, as
    from a lite one (a whole run would only time out again), where the
    excerpt its finding shows holds no thin line: at its first write, or
    where the thin writes came 50 fsyncs before it (its directory shows
    them marked, and says why). Farther into its writes, those before the
    fault are thin there, and the case runs again whole."""
    specs = [spec_file(tmp_path, "hang", [built["scribble"], "hang", "150"],
                       [9000], timeout=0.5),
             spec_file(tmp_path, "late", [built["scribble"], "late", "150"],
                       [9000], timeout=0.5)]
    want = ("hang-9000B-write(target.tmp)#1=EINTR",
            "hang-9000B-write(target.tmp)#100=EINTR",
            "hang-9000B-write(target.tmp)#100=short",
            "late-9000B-write(target.tmp)#1=EINTR")
    kinds = ("baseline",) + partruns.THIN_KINDS
    thin, _ = judged(tmp_path / "t", specs, True, only=want.__contains__,
                     kinds=kinds, note=note)
    whole, _ = judged(tmp_path / "w", specs, False, only=want.__contains__,
                      kinds=kinds, note=note)
    assert sorted(thin) == sorted(want)
    for i in want:
        res, runs = thin[i]
        assert res["verdict"] == "hang" and res["exit"]["timed_out"]
        assert {k: res[k] for k in KEYS} == {k: whole[i][0][k] for k in KEYS}
        assert len(res["trace_excerpt"]) > (1 if i.startswith("hang-") and
                                            i.endswith("#1=EINTR") else 30)
        assert not any("[thin]" in line for line in res["trace_excerpt"])
        if i.startswith("hang-") and i.endswith("#1=EINTR"):
            # nothing was written thin before it, nor after
            assert runs == [(runs[0][0], False)] and runs[0][0] is not None
        elif i.startswith("late-"):
            assert runs == [(runs[0][0], True)] and runs[0][0] is not None
            shown = (tmp_path / "t" / "lite" / res["dir"].split("/", 1)[1] /
                     "trace.txt").read_text().splitlines()
            assert shown[0].startswith("(a thin run that timed out: a write "
                                       "marked [thin] was recorded with no "
                                       "offset")
            assert sum(line.endswith(" [thin]") for line in shown) == 30
        else:
            assert runs[0][1] and runs[1:] == [(None, False)]


def test_a_case_that_holds_has_no_excerpt(four):
    """Only a finding shows the calls around its target: a case that held
    its contract, thin or whole, has none."""
    (thin, _), (whole, _) = four
    for got in (thin, whole):
        assert all(bool(res["trace_excerpt"]) == (res["verdict"] != "ok")
                   for res, runs in got.values())
        assert sum(res["verdict"] != "ok" for res, runs in got.values()) > 250


def test_a_thin_line_reads_as_one():
    """Where a thin line is shown (the directory of a thin run that timed
    out), it says so: it has no offset to show."""
    rec = {"ev": "call", "seq": 5, "call": "write", "n": 3, "fd": 3,
           "path": "/x/work/target.tmp", "ino": 7, "len": 10, "flags": [],
           "ret": 10, "errno": 0, "thin": True}
    assert trace_mod.format_call(rec, "/x/work") == \
        "write#3 fd=3 'target.tmp' len=10 = 10 [thin]"
    assert trace_mod.format_call(dict(rec, thin=False, off=0), "/x/work") == \
        "write#3 fd=3 'target.tmp' off=0 len=10 = 10"
