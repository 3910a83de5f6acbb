"""End-to-end tests of the sweep (`crashcheck run`): the correct workloads
stay clean, a deliberately broken copy of replace is caught, and the
reproduce command of its finding reproduces it."""

import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from harness import ROOT

CRASHCHECK = ROOT / "scripts" / "crashcheck"
LIB = ROOT / "workloads" / "lib"


def spec(path, name, command, strategies, sizes, contract="atomic", extra=""):
    strat = f"strategies = {json.dumps(strategies)}\n" if strategies else ""
    path.write_text(
        f'name = "{name}"\n'
        f'description = "test workload {name}"\n'
        f"command = {json.dumps(command)}\n{strat}"
        f'contract = "{contract}"\n'
        f"sizes = {json.dumps(sizes)}\n{extra}")
    return path


def sweep(*args, cwd=ROOT):
    return subprocess.run([str(CRASHCHECK), "run", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, timeout=600)


def results(out):
    with open(out / "results.json") as fh:
        return json.load(fh)


@pytest.fixture(scope="module")
def clean_sweep(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("clean")
    specs = [spec(tmp / f"{w}.toml", w, [f"{{bin}}/{w}", "--strategy={strategy}",
                                         "{target}", "{new}"],
                  ["stdio", "direct", "sync", "mmap"], [0, 4097],
                  contract="atomic" if w == "replace" else "in-place")
             for w in ("replace", "overwrite")]
    out = tmp / "out"
    proc = sweep(*specs, "--out", out)
    return proc, out


def test_correct_workloads_are_clean(clean_sweep):
    proc, out = clean_sweep
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # pytest's progress, line by line (it is off when nothing is captured),
    # with the cases done out of the total (plugin.show_progress)
    total = len(results(out)["cases"])
    assert re.search(rf"^\.+ +\[100% {total}/{total}\]$", proc.stdout, re.M), \
        proc.stdout[-500:]
    data = results(out)
    verdicts = {c["verdict"] for c in data["cases"]}
    assert verdicts <= {"ok", "skipped"}, verdicts
    assert data["summary"]["failed"] == 0


def test_every_strategy_and_fault_class_appears(clean_sweep):
    _, out = clean_sweep
    cases = results(out)["cases"]
    assert {c["strategy"] for c in cases} == {"stdio", "direct", "sync", "mmap"}
    assert {c["kind"] for c in cases} == {"baseline", "eintr", "short", "enospc",
                                          "eio", "crash", "powerloss"}
    assert {c["model"] for c in cases if c["kind"] == "powerloss"} == \
        {"posix", "ext4-ordered"}


def test_every_case_confirms_its_fault_fired(clean_sweep):
    _, out = clean_sweep
    for c in results(out)["cases"]:
        if c["plan"]:
            assert c["fired"] and all(f["count"] > 0 for f in c["fired"]), c["id"]


def test_case_ids_are_coordinates(clean_sweep):
    _, out = clean_sweep
    ids = {c["id"] for c in results(out)["cases"]}
    # a call on a file is numbered among that file's calls
    # (harness/coords.py)
    assert "replace-mmap-4097B-msync(target.tmp)#1=EIO" in ids
    assert "replace-sync-4097B-write(target.tmp)#1=EINTR" in ids
    assert "replace-stdio-4097B-rename(target.tmp)#1=crash" in ids
    assert "replace-stdio-4097B-fsync(.)#1=EIO" in ids
    assert "replace-stdio-4097B-powerloss@rename(target.tmp)#1-posix" in ids
    # the input's open and close are outside the work directory: no case
    # and no crash point
    assert not [i for i in ids if "-open#" in i or "-close#" in i]


def test_reports_are_written(clean_sweep):
    _, out = clean_sweep
    for name in ("results.json", "report.md", "report.html", "junit.xml"):
        assert (out / name).stat().st_size > 0, name
    assert not (out / ".work").exists()


def broken_replace(tmp):
    """replace with the temp file's fsync result ignored, built from the
    tree's own sources."""
    src = (LIB / "put.c").read_text()
    broken, n = re.subn(r"if \(fsync\(fileno\(fp\)\) < 0\) \{",
                        "if (fsync(fileno(fp)) < 0 && 0) {", src)
    assert n == 1, "put.c no longer has the stdio fsync check this test breaks"
    (tmp / "put.c").write_text(broken)
    objs = [str(LIB / f"{m}.c") for m in ("error", "io", "update", "cli")]
    exe = tmp / "replace-broken"
    subprocess.run(["cc", "-D_GNU_SOURCE", "-I", str(ROOT / "workloads"),
                    "-I", str(LIB), "-o", str(exe), str(ROOT / "workloads" / "replace.c"),
                    str(tmp / "put.c"), *objs], check=True)
    return exe


def test_broken_copy_is_caught_and_reproduced(tmp_path):
    exe = broken_replace(tmp_path)
    s = spec(tmp_path / "broken.toml", "broken",
             [str(exe), "--strategy={strategy}", "{target}", "{new}"],
             ["stdio"], [4097])
    out = tmp_path / "out"
    proc = sweep(s, "--out", out, "--faults", "baseline,eio")
    assert proc.returncode == 1, proc.stdout[-2000:]
    cases = {c["id"]: c for c in results(out)["cases"]}
    c = cases["broken-stdio-4097B-fsync(target.tmp)#1=EIO"]
    assert c["verdict"] == "unreported-error"
    assert not c["passed"]
    assert "fsync#1" in c["finding"] and "EIO" in c["finding"]
    assert "FINDING broken-stdio-4097B-fsync(target.tmp)#1=EIO" in proc.stdout
    assert (out / "cases" / "broken-stdio-4097B-fsync(target.tmp)#1=EIO"
            / "trace.txt").is_file()
    # The reproduce command reruns that case alone, with the same verdict.
    argv = shlex.split(c["reproduce"])
    assert Path(argv[0]).name == "crashcheck" and argv[1] == "run"
    again = tmp_path / "again"
    rerun = subprocess.run([*argv, "--out", str(again)],
                           capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert rerun.returncode == 1
    rc = results(again)["cases"]
    assert [x["id"] for x in rc] == [c["id"]]
    assert rc[0]["verdict"] == "unreported-error"


def test_bad_spec_exits_2_naming_the_field(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\ndescription = "d"\ncommand = ["true"]\n'
                   'contract = "atomic"\nsizes = [1]\n')
    proc = sweep(bad)
    assert proc.returncode == 2
    assert "command" in proc.stderr and str(bad) in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_unknown_case_exits_2(tmp_path):
    s = spec(tmp_path / "r.toml", "r", ["{bin}/replace", "--strategy={strategy}",
                                        "{target}", "{new}"], ["sync"], [1])
    proc = sweep(s, "--out", tmp_path / "o", "--case", "r-sync-1B-nope#1=EIO")
    assert proc.returncode == 2
    assert "no such case" in proc.stdout + proc.stderr


@pytest.mark.parametrize("args, word", [
    (["--faults", "eio,bogus"], "--faults"),
    (["--model", "ext3"], "--model"),
    (["--jobs", "0"], "--jobs"),
    (["--shard", "3/2"], "--shard"),
    (["--seed", "x"], "--seed"),
    (["--timeout", "-1"], "--timeout"),
])
def test_bad_options_exit_2(tmp_path, args, word):
    s = spec(tmp_path / "r.toml", "r", ["{bin}/replace", "--strategy={strategy}",
                                        "{target}", "{new}"], ["sync"], [1])
    proc = sweep(s, "--out", tmp_path / "o", *args)
    assert proc.returncode == 2, proc.stderr
    assert word in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_replay_lays_out_the_crash_state(tmp_path):
    """A power-loss finding (no fsync of the directory after the rename)
    replayed into a directory: the target there is the old content, and
    the README says what did not persist and the rule."""
    exe = ROOT / "workloads" / "bin" / "no-dir-fsync"
    s = spec(tmp_path / "nd.toml", "nd",
             [str(exe), "--strategy={strategy}", "{target}", "{new}"],
             ["sync"], [4097], extra='teaches = "t"\n[[expect]]\n'
             'verdict = "not-durable"\n')
    out = tmp_path / "out"
    proc = sweep(s, "--out", out, "--faults", "powerloss", "--model", "posix")
    assert proc.returncode == 0, proc.stdout[-2000:]
    case = next(c for c in results(out)["cases"]
                if c["id"] == "nd-sync-4097B-powerloss@exit-posix")
    assert case["verdict"] == "not-durable" and case["passed"]
    assert "after exit" in case["explanation"]
    assert "fsync the directory" in case["explanation"]
    dest = tmp_path / "replay"
    rp = subprocess.run([str(CRASHCHECK), "replay", "--results",
                         str(out / "results.json"), "--out", str(dest), case["id"]],
                        capture_output=True, text=True, timeout=120)
    assert rp.returncode == 0, rp.stderr
    readme = (dest / "README.txt").read_text()
    assert "did not persist" in readme and "fsync the directory" in readme
    assert "target:      the old content" in readme
    old_new = subprocess.run(
        ["/usr/bin/python3", "-c",
         "import sys; from harness.judging import payload; from harness.engine import cases, spec;"
         "c = next(cases.combos([spec.load(sys.argv[1])]));"
         "o, n = cases.contents(c); sys.stdout.buffer.write(o)", str(s)],
        capture_output=True, cwd=ROOT, check=True).stdout
    assert (dest / "state" / "target").read_bytes() == old_new


def test_excerpt_is_centred_on_the_targeted_call():
    """A long trace is cut to EXCERPT_LINES records around the call the
    case targets (by its seq)."""
    from harness.engine import results as resultsmod, trace as tr
    recs = [{"ev": "call", "seq": i, "call": "write", "n": i}
            for i in range(1, 1001)]
    recs.insert(700, {"ev": "crash", "seq": 700, "call": "fsync", "n": 1,
                      "when": "before"})
    for i, r in enumerate(recs):
        r["seq"] = i + 1
    got = tr.window(recs, 701, resultsmod.EXCERPT_LINES)
    assert len(got) == resultsmod.EXCERPT_LINES
    assert got[resultsmod.EXCERPT_LINES // 2]["call"] == "fsync"
    assert tr.window(recs, 1, 40)[0]["n"] == 1
    assert tr.window(recs, 1001, 40)[-1]["n"] == 1000
    assert tr.window(recs[:10], 5, 40) == recs[:10]
    # none (a baseline), or past the end: the start
    assert tr.window(recs, None, 40)[0]["n"] == 1
    assert tr.window(recs, 5000, 40)[0]["n"] == 1


def _lazy_lines(n_calls, pids=(101,)):
    """A trace as the library writes it: an init record per process, call
    records of interleaved processes appended out of seq order, a fault
    and a crash."""
    lines = []
    seq = 0
    for pid in pids:
        lines.append({"ev": "init", "seq": seq, "pid": pid, "watch": "/w"})
        seq += 1
    for i in range(1, n_calls + 1):
        rec = {"ev": "call", "seq": seq, "pid": pids[i % len(pids)],
               "call": "write", "n": i, "fd": 3, "path": "/w/target.tmp",
               "ino": 7, "off": 0, "len": 1, "ret": 1, "errno": 0}
        if i == n_calls // 2:
            rec.update(ret=-1, errno=5, fault={"rule": 0, "action": "EIO"})
        lines.append(rec)
        seq += 1
    lines.append({"ev": "crash", "seq": seq, "pid": pids[0], "call": "fsync",
                  "n": 1, "when": "before", "rule": 1})
    # two processes append concurrently: file order is not seq order
    for i in range(len(pids), len(lines) - 1, 7):
        lines[i], lines[i + 1] = lines[i + 1], lines[i]
    import json as j
    return b"\n".join(j.dumps(r, separators=(",", ":")).encode()
                      for r in lines) + b"\n"


@pytest.mark.parametrize("n_calls,pids", [(5, (101,)), (300, (101,)),
                                          (300, (101, 102))])
def test_lazy_trace_answers_like_the_whole_parse(n_calls, pids):
    """trace.Lazy parses only the records a case needs; its answers must
    be those of the whole parse, on every call targeted."""
    from harness.engine import trace as tr
    data = _lazy_lines(n_calls, pids)
    full = tr.parse(data)
    lazy = tr.Lazy(data)
    assert lazy.lines is not None           # the library's shape: lazy
    assert lazy.faulted() == [r for r in full if r["ev"] == "crash" or r.get("fault")]
    calls = [r for r in full if r["ev"] in ("call", "crash")]
    for target in [0, 1, n_calls // 2, n_calls, n_calls + len(pids),
                   99999, None]:
        assert tr.Lazy(data).around(target, 40) == tr.window(calls, target, 40), target
    # the calls after any record, parsed as they are asked for
    for rec in full[::7] + full[-2:]:
        after = [r for r in full if r["ev"] == "call" and r["seq"] > rec["seq"]]
        assert list(lazy.calls_after(rec["seq"])) == after, rec["seq"]
        first = next(iter(tr.Lazy(data).calls_after(rec["seq"])), None)
        assert first == (after[0] if after else None)
        # with needles: no fewer of the records that hold them
        if rec["ev"] == "call" and "off" in rec:
            needles = (b'"off":%d' % rec["off"], b'"call":"write"')
            got = list(tr.Lazy(data).calls_after(rec["seq"], needles))
            assert [r["seq"] for r in got] == [
                r["seq"] for r in after if r["call"] == "write"
                and str(r["off"]).startswith(str(rec["off"]))]
    # a line with white space is given whatever it holds: it may spell a
    # field otherwise
    spaced = data.replace(b'"call":"write","n":2,', b'"call": "write","n":2,')
    got = list(tr.Lazy(spaced).calls_after(0, (b"nowhere",)))
    assert [r["n"] for r in got] == [2]
    # none of that parsed a long trace whole (a short one is, at once)
    assert (lazy._records is None) == (len(lazy.lines) > tr.Lazy.SMALL)
    assert lazy.records == full


def test_lazy_trace_falls_back_to_the_whole_parse():
    """A line not of the library's shape, or a damaged one: the whole
    trace is parsed, and its answer (or its error) is parse()'s."""
    from harness.engine import trace as tr
    data = _lazy_lines(50)
    spaced = data.replace(b'{"ev":"call","seq":3,', b'{"ev": "call", "seq": 3, ')
    lazy = tr.Lazy(spaced)
    assert lazy.lines is None
    assert lazy.faulted() == [r for r in tr.parse(spaced)
                              if r["ev"] == "crash" or r.get("fault")]
    broken = data.replace(b'"call":"write","n":25,', b'"call":"write","n":"x",')
    with pytest.raises(tr.TraceError) as e:
        tr.Lazy(broken).faulted()
    with pytest.raises(tr.TraceError) as whole:
        tr.parse(broken, "<trace>")
    assert str(e.value) == str(whole.value)
    # the calls after a record: the good lines before the damage, then
    # the whole parse's error
    lazy = tr.Lazy(broken)
    got = []
    with pytest.raises(tr.TraceError) as e:
        for rec in lazy.calls_after(0):
            got.append(rec["seq"])
    assert str(e.value) == str(whole.value)
    assert got and got == sorted(set(got)) and max(got) < 26


def test_reused_scratch_restores_an_input_the_program_changed(tmp_path):
    """A pool process reuses one scratch for a combo's cases: the input
    stays, unless the last program moved, removed or rewrote it."""
    from harness.engine import cases as casesmod, execute
    scratch = tmp_path / "s"
    scratch.mkdir()
    new, old = b"new content\n", b"old content, longer\n"
    execute.prepare(scratch, old, new)
    inp = scratch / casesmod.INPUT / casesmod.NEW
    work = scratch / casesmod.WORK
    spoilers = [
        lambda: inp.rename(work / "target"),                  # mv new target
        lambda: inp.unlink(),                                  # rm new
        lambda: inp.write_bytes(b"rewritten in place!\n"),    # same size or not
        lambda: os.link(inp, work / "linked"),                 # a link, then...
    ]
    for spoil in spoilers:
        spoil()
        if (work / "linked").exists():
            with open(work / "linked", "r+b") as fh:           # ...written through
                fh.write(b"X")
        (work / "leftover.tmp").write_bytes(b"junk")
        (scratch / "trace.jsonl").write_bytes(b"{}\n")
        execute.prepare(scratch, old, new, reuse_input=True)
        assert inp.read_bytes() == new
        # the target, and the run's own TMPDIR, empty
        assert sorted(p.name for p in work.iterdir()) == [casesmod.TMP, "target"]
        assert list((work / casesmod.TMP).iterdir()) == []
        assert (work / "target").read_bytes() == old
        assert not (scratch / "trace.jsonl").exists()


def test_a_name_that_differs_in_a_number_is_any_number():
    """Names that differ from run to run only in digits (a process id:
    Redis's temp-<pid>.rdb) take any number in the next run, of any
    length, the digits the recorded runs shared included; mkstemp's
    names keep one '?' per character."""
    from fnmatch import fnmatchcase
    from harness import coords
    g = coords.generalize(["temp-3812.rdb", "temp-3845.rdb", "temp-3871.rdb"])
    assert g == "temp-*.rdb"
    assert fnmatchcase("temp-4021.rdb", g) and fnmatchcase("temp-40211.rdb", g)
    assert coords.generalize(["sedmOTy6p", "sedAb12Cd", "sedx9z12q"]) == \
        "sed??????"
    assert coords.generalize(["a.38.tmp", "a.381.tmp"]) == "a.*.tmp"


# a writer through a temp file with a random name whose first random
# character is 'q' in its first three runs (its counter file, $1, counts
# them): random names sometimes share a character by chance
RANDOM_Q = r"""
set -e
n=$(cat "$1" 2>/dev/null || echo 0)
echo $((n + 1)) > "$1"
case $n in
0 | 1 | 2) c=q ;;
*) c=$(printf %s abcdefghijklmnoprstuvwxyz | cut -c$((n % 25 + 1))) ;;
esac
name=tmp$c$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
cat "$3" > "$name"
mv "$name" "$2"
"""


def test_a_character_random_names_share_by_chance_is_not_their_glob(tmp_path,
                                                                    monkeypatch):
    """A file named at random gets its glob from what its names share in
    the recorded runs: when the first three runs' names share a random
    character ('tmpq...'), the later runs show it is not part of the
    name, and every case aimed at the file fires (three runs gave
    Mercurial's temp file such a glob, and eleven harness-errors)."""
    prog = tmp_path / "random-q.sh"
    prog.write_text(RANDOM_Q)
    # unconfined: its names depend on a count it keeps outside its
    # scratch, which confinement would throw away after each run
    monkeypatch.setenv("CRASHCHECK_CONFINE", "off")
    sp = spec(tmp_path / "randomq.toml", "randomq",
              ["/bin/sh", str(prog), str(tmp_path / "runs"), "{target}",
               "{new}"], None, [5])
    r = sweep(sp, "--out", tmp_path / "out", "--model", "posix")
    doc = results(tmp_path / "out")
    errors = [c["id"] for c in doc["cases"] if c["verdict"] == "harness-error"]
    assert not errors, errors
    ids = [c["id"] for c in doc["cases"]]
    assert any("(tmp?????????????)" in i for i in ids), ids
    assert not any("tmpq" in i for i in ids), ids
    assert r.returncode in (0, 1), r.stdout + r.stderr
