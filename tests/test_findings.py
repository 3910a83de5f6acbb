"""What a finding says (issue 35; crash-model.md, "Severity, and what a
finding says"): the property it breaks, advice that follows from that
property and from the calls in the failing state and never contradicts
the state shown, and its severity.

Each test audits a small program of tests/progs/ that reproduces one case
found in a real program (protocols.c's modes: Redis's append-only file,
SQLite's directory fsync after a failed open, logrotate's copytruncate,
tdb's cancelled transaction and its posix_fallocate fallback, gzip; the
Python writer of docs/examples; sigwriter.c for EINTR) and checks the
verdict, the property, the severity and the words. Each audit runs only
the cases its test is about (--faults, --case, --model), so the file
stays short.
"""

import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CRASHCHECK = ROOT / "scripts" / "crashcheck"
PROGS = Path(__file__).resolve().parent / "progs"


def build(tmp_path_factory, name, *libs):
    out = tmp_path_factory.mktemp("findings") / name
    proc = subprocess.run(["cc", "-g", "-O0", "-Wall", "-Wextra", "-o", str(out),
                           str(PROGS / f"{name}.c"), *libs],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module")
def protocols(tmp_path_factory):
    return build(tmp_path_factory, "protocols")


@pytest.fixture(scope="module")
def sigwriter(tmp_path_factory):
    return build(tmp_path_factory, "sigwriter")


@pytest.fixture(scope="module")
def backoff(tmp_path_factory):
    return build(tmp_path_factory, "backoff")


def audit(out, program, *options, check=None, expect=(0, 1)):
    """Audit PROGRAM (argv, {target} and {new} in it) into OUT; (the
    completed process, results.json, its cases by id)."""
    argv = [str(CRASHCHECK), "audit", "--out", str(out), "--timeout", "10",
            *map(str, options)]
    if check:
        argv += ["--check", check]
    proc = subprocess.run(argv + ["--", *map(str, program)], capture_output=True,
                          text=True, cwd=ROOT, timeout=600)
    assert proc.returncode in expect, proc.stdout[-3000:] + proc.stderr[-3000:]
    with open(Path(out) / "results.json") as fh:
        doc = json.load(fh)
    return proc, doc, {c["id"]: c for c in doc["cases"]}


def findings(cases):
    return [c for c in cases.values() if c["verdict"] not in ("ok", "skipped")]


def said(case):
    return case["finding"] + " " + case["explanation"]


@pytest.fixture
def files(tmp_path):
    """An old and a new content of 3 blocks and a bit, and a log holding
    one record."""
    old = tmp_path / "old"
    new = tmp_path / "new"
    old.write_bytes(b"old content of the file\n" * 700)
    new.write_bytes(b"NEW content of the file\n" * 700)
    return tmp_path


# ------------------------------------------------------ atomicity of appends

def test_a_torn_append_followed_by_its_sync_is_append_atomicity(protocols, files):
    # Redis's AOF: write#1 then fdatasync#1; a power cut between them can
    # cut the record, and no fsync placement helps: the reader must cope
    log, rec = files / "log", files / "rec"
    (files / "first").write_bytes(b"a first record\n" * 400)
    subprocess.run([protocols, "append", log, files / "first"], check=True)
    rec.write_bytes(b"the appended record\n" * 450)
    proc, doc, cases = audit(
        files / "out", [protocols, "append", "{target}", "{new}"],
        "--old", log, "--new", rec, "--faults", "baseline,powerloss",
        check=f"{protocols} append-check {{target}} {rec}")
    torn = findings(cases)
    assert torn and {c["verdict"] for c in torn} == {"torn"}
    for c in torn:
        assert c["property"] == "atomicity/append", c
        assert c["severity"] == "error"
        assert "make the reader drop a torn last record" in c["cause"]["rule"]
        # never the advice the state contradicts: the sync follows
        assert "fsync" not in c["cause"]["rule"].split(":")[0]
        assert "after writing it" not in said(c)
        assert "syncs 'target' after this point" in c["explanation"]
    # one cause, one defect
    assert len(doc["summary"]["defects"]) == 1


# ------------------------------------------- errors taken for success, ignored

def test_a_failed_directory_open_taken_as_success(protocols, files):
    # SQLite (synchronous=EXTRA) with EIO on open("."): it does fsync
    # the directory after removing the journal, but skips that fsync when
    # the open fails, and exits 0
    db = files / "db"
    db.write_bytes((files / "old").read_bytes())
    proc, doc, cases = audit(
        files / "out", [protocols, "journal", "{target}", "{new}"],
        "--old", db, "--new", files / "new", "--faults", "baseline,eio",
        "--model", "posix", "--target", "db",
        check=f"{protocols} journal-check {{target}} {files / 'old'} "
              f"{files / 'new'}")
    c = cases["protocols-open(.)#2=EIO"]
    assert c["verdict"] == "not-durable", c
    assert c["property"] == "error/ignored"
    assert c["cause"]["rule"] == ("check what open returns: when it fails, the "
                                  "sync it leads to never happens")
    assert "the failed open made the program skip the sync of '.'" in said(c)
    # the defect is where it took the failure for success: the open
    assert c["cause"]["call"].split("#")[0] == "open"
    assert "protocols.c" in c["location"]["text"]
    # not the advice of a program that never fsyncs its directory
    assert "fsync the directory after removing" not in said(c)
    # its baseline is clean: the directory's fsync is there
    assert cases["protocols-baseline"]["verdict"] == "ok"


def test_a_skipped_sync_is_not_blamed_when_the_data_is_lost_anyway(
        protocols, files):
    # SQLite's default (synchronous=FULL): the journal's unlink, the
    # commit, is never synced. With EIO on the open of the directory it
    # skips an earlier directory sync too, but the update is lost the
    # same way without the fault: the one defect is the unlink's
    db = files / "db"
    db.write_bytes((files / "old").read_bytes())
    _, doc, cases = audit(
        files / "out", [protocols, "journal-full", "{target}", "{new}"],
        "--old", db, "--new", files / "new", "--faults", "baseline,eio,"
        "powerloss", "--model", "posix", "--target", "db",
        check=f"{protocols} journal-check {{target}} {files / 'old'} "
              f"{files / 'new'}")
    c = cases["protocols-open(.)#1=EIO"]
    assert c["verdict"] == "not-durable", c
    assert c["cause"]["rule"] == \
        "fsync the directory after removing a file", c["cause"]
    assert c["property"] == "durability"
    assert "skip the sync" not in said(c)
    # one defect with the power cut after exit of the run with no fault
    mine = [d for d in doc["summary"]["defects"] if c["id"] in d["ids"]]
    assert len(mine) == 1 and \
        "protocols-powerloss@exit-posix" in mine[0]["ids"], mine


@pytest.mark.parametrize("mode, verdict", [("copytrunc", "unreported-error"),
                                           ("copytrunc-said", "not-durable")])
def test_an_ignored_fsync_error_is_no_retry(protocols, files, mode, verdict):
    # logrotate's copytruncate: the copy's fsync fails (EIO), the program
    # truncates the original all the same; it never retries the fsync
    log = files / "log"
    log.write_bytes((files / "old").read_bytes())
    proc, doc, cases = audit(
        files / "out", [protocols, mode, "{target}"],
        "--old", log, "--faults", "eio", "--model", "posix",
        "--case", "protocols-fsync(target.1)#1=EIO",
        check=f"{protocols} copytrunc-check {{target}} {files / 'old'}")
    c = cases["protocols-fsync(target.1)#1=EIO"]
    assert c["verdict"] == verdict, c
    assert c["property"] == ("error/unreported" if verdict == "unreported-error"
                             else "error/ignored")
    assert "retr" not in said(c).lower()
    assert "retry" not in c["cause"]["rule"]
    assert "not on the disk and never will be" in c["explanation"]


@pytest.mark.parametrize("mode", ["cancel", "cancel-mapped"])
def test_a_cancelled_transaction_is_no_retry(protocols, files, mode):
    # tdb: fdatasync fails, the old content is written back (by a call,
    # or by stores into its shared mapping, which make none) and synced
    # again (the transaction cancelled), and the program exits 0
    db = files / "db"
    db.write_bytes((files / "old").read_bytes())
    proc, doc, cases = audit(
        files / "out", [protocols, mode, "{target}", "{new}"],
        "--old", db, "--new", files / "new", "--faults", "eio",
        "--model", "posix", "--case", "protocols-fdatasync(target)#1=EIO")
    c = cases["protocols-fdatasync(target)#1=EIO"]
    assert c["verdict"] == "unreported-error", c
    assert c["property"] == "error/unreported"
    assert "again" not in c["finding"] and "retr" not in said(c).lower()
    assert c["note"] == ""


def test_a_preallocation_the_program_falls_back_from_is_judged_by_outcome(
        protocols, files):
    # tdb falls back to pwrite when posix_fallocate fails: the data is
    # durable, nothing was ignored that mattered
    proc, doc, cases = audit(
        files / "out", [protocols, "prealloc", "{target}", "{new}"],
        "--old", files / "old", "--new", files / "new", "--faults", "eio,enospc",
        expect=(0,))
    falloc = [c for i, c in cases.items() if "posix_fallocate" in i]
    assert falloc and {c["verdict"] for c in falloc} == {"ok"}, falloc
    assert not findings(cases)


def test_a_message_that_names_no_error_is_not_silence(protocols, files):
    # tdb printed a line of its own after ENOSPC: not "without a word"
    proc, doc, cases = audit(
        files / "out", [protocols, "tidy", "{target}", "{new}"],
        "--old", files / "old", "--new", files / "new", "--faults", "eio",
        "--case", "protocols-close(target.tmp)#1=EIO")
    c = cases["protocols-close(target.tmp)#1=EIO"]
    assert c["verdict"] == "ignored-error", c
    assert "without a word" not in said(c) and "said nothing" not in said(c)
    assert "it printed 'note: could not tidy up', which names no error" in \
        c["explanation"]
    assert c["severity"] == "warning" and c["passed"]
    assert "It would matter the day" in c["explanation"]
    # every report says it is a warning, and why it passes
    md = (files / "out" / "report.md").read_text()
    assert "(warning, error handling: an error ignored)" in md
    assert "### 1. (warning) ignored-error: check what close returns" in md
    html = (files / "out" / "report.html").read_text()
    assert 'class="case c-warning"' in html
    junit = (files / "out" / "junit.xml").read_text()
    assert "a warning, not failing the run" in junit
    sarif = json.loads((files / "out" / "results.sarif").read_text())
    result, = sarif["runs"][0]["results"]
    assert result["level"] == "warning"
    assert result["properties"]["property"] == "error/ignored"


# ------------------------------------------------------------- ordering

def test_a_file_never_written_is_not_rewritten_in_place(protocols, files):
    # gzip: it writes TARGET.z and removes TARGET; it never writes TARGET
    proc, doc, cases = audit(
        files / "out", [protocols, "zip", "{target}"],
        "--old", files / "old", "--faults", "baseline,powerloss,eio",
        "--model", "posix",
        check=f"{protocols} zip-check {{target}} {files / 'old'}")
    bad = findings(cases)
    assert bad
    for c in bad:
        assert "in place" not in said(c), c
        assert "rewrit" not in said(c)
        assert c["property"] == "ordering", c
        assert c["cause"]["rule"].startswith("make a file durable")
    # the change that went too early decides: the removal of the input
    assert {c["cause"]["call"].split("#")[0] for c in bad} == {"unlink"}
    assert len(doc["summary"]["defects"]) == 1


# --------------------------------------------- explanations that agree

def test_a_state_that_lost_nothing_does_not_say_the_data_reached_the_disk(
        files):
    # a Python writer truncates the target and writes it later: a power
    # cut right after the truncation finds it empty with nothing lost
    (files / "old.json").write_text(json.dumps({"port": 8080, "pad": "x" * 9000}))
    (files / "new.json").write_text(json.dumps({"port": 9090, "pad": "y" * 9000}))
    py = ["/usr/bin/python3", PROGS / "jsonsave.py", "{target}", "{new}"]
    proc, doc, cases = audit(files / "out", py, "--old", files / "old.json",
                             "--new", files / "new.json", "--faults",
                             "powerloss", "--model", "posix")
    empty = [c for c in findings(cases) if "found empty" in c["finding"]]
    assert empty
    for c in empty:
        assert "data reached the disk" not in c["explanation"]
        assert "in the middle of its update" in c["explanation"]
        assert c["property"] == "atomicity/calls"


def test_a_failed_fsync_in_place_is_the_rewrite_not_an_ignored_error(
        protocols, files):
    """A program that rewrites its target in place and stops, saying so,
    at a failed fsync did not ignore the error: what the failed sync
    dropped was the target itself, and the defect is the rewrite in
    place, one defect with its crashes and power cuts."""
    _, doc, cases = audit(files / "o", [protocols, "inplace", "{target}",
                                        "{new}"],
                          "--old", files / "old", "--new", files / "new",
                          "--faults", "eio,crash,powerloss")
    failed = [c for c in findings(cases) if "fsync(target)" in c["id"]]
    assert failed, sorted(cases)
    for c in failed:
        assert c["exit"]["status"] == 1 and "fsync" in c["stderr"], c
        assert c["property"] == "atomicity/calls", (c["id"], c["property"])
        assert c["cause"]["rule"].startswith(
            "write a temp file and rename it instead of rewriting in place"), c
    assert len(doc["summary"]["defects"]) == 1, doc["summary"]["defects"]


def test_a_failed_fsync_is_not_data_that_reached_the_disk(protocols, files):
    # the rename goes ahead after a failed fsync, then the program fails
    # at the directory's fsync and exits 1: a power cut after its exit
    # finds the blocks the failed fsync dropped (crash-model.md: old or
    # new after a reported failure too)
    proc, doc, cases = audit(
        files / "out", [protocols, "replace-unchecked", "{target}", "{new}"],
        "--old", files / "old", "--new", files / "new", "--faults", "eio,enospc",
        "--model", "posix")
    for cid in ("protocols-fsync(target.tmp)#1++=EIO",
                "protocols-fsync(target.tmp)#1++=ENOSPC"):
        c = cases[cid]
        assert c["exit"]["status"] == 1
        assert c["verdict"] == "torn", c
        assert c["property"] == "error/ignored"
        assert c["state"].startswith("after exit")
        text = c["explanation"]
        assert "dropped blocks" in text
        assert "'target' data reached the disk;" not in text
        assert "but for what the failed sync dropped" in text


# ------------------------------------------------------------ severity

@pytest.mark.parametrize("mode, severity", [
    ("none", "warning"),        # no handler: Linux never interrupts it
    ("restart", "warning"),     # a handler with SA_RESTART: the same
    ("interrupt", "error"),     # a handler without SA_RESTART: it can
])
def test_eintr_on_a_local_file_is_a_warning_without_a_handler(sigwriter, files,
                                                             mode, severity):
    proc, doc, cases = audit(
        files / "out", [sigwriter, mode, "{target}", "{new}"],
        "--old", files / "old", "--new", files / "new", "--faults", "eintr",
        "--case", "sigwriter-write(target.tmp)#1=EINTR")
    c = cases["sigwriter-write(target.tmp)#1=EINTR"]
    assert c["verdict"] == "gave-up-on-transient", c
    assert c["property"] == "error/transient"
    assert c["severity"] == severity
    assert c["passed"] == (severity == "warning")
    assert ("would matter on NFS" in c["explanation"]) == (severity == "warning")
    assert proc.returncode == (0 if severity == "warning" else 1)
    if severity == "warning":
        # --fail-on warning keeps the strict reading
        proc, doc, cases = audit(
            files / "strict", [sigwriter, mode, "{target}", "{new}"],
            "--old", files / "old", "--new", files / "new", "--faults", "eintr",
            "--fail-on", "warning", "--case",
            "sigwriter-write(target.tmp)#1=EINTR")
        assert proc.returncode == 1
        assert not cases["sigwriter-write(target.tmp)#1=EINTR"]["passed"]


# ------------------------------------------------------------ time limits

SPIN_CASE = "backoff-write(target.tmp)#1++=ENOSPC"


def test_a_program_that_backs_off_is_not_a_hang(backoff, files):
    # db5.3_load backs off 2, 4 and 6 s on ENOSPC, then exits 2 saying
    # so: past its limit, but asleep, it is let run to its end
    proc, doc, cases = audit(
        files / "out", [backoff, "backoff", "{target}", "{new}", 1, 2, 3],
        "--old", files / "old", "--new", files / "new", "--timeout", "2",
        "--faults", "enospc", "--case", SPIN_CASE, expect=(0,))
    c = cases[SPIN_CASE]
    assert c["verdict"] == "ok", c
    assert c["exit"] == {"status": 2, "signal": None, "timed_out": False}
    assert c["duration"] > 2


@pytest.mark.parametrize("mode, state, rule", [
    ("spin", "spinning: write on 'target.tmp' failing (No space left on "
             "device) over and over", "retry only EINTR and short writes"),
    ("block", "blocked: in pause", "do not wait for ever"),
])
def test_a_hang_says_what_the_program_was_doing(backoff, files, mode, state,
                                                rule):
    proc, doc, cases = audit(
        files / "out", [backoff, mode, "{target}", "{new}"],
        "--old", files / "old", "--new", files / "new", "--timeout", "2",
        "--faults", "enospc", "--case", SPIN_CASE, expect=(1,))
    c = cases[SPIN_CASE]
    assert c["verdict"] == "hang", c
    assert state in c["finding"]
    assert c["cause"]["rule"].startswith(rule)
    assert c["property"] == "error/stuck" and c["severity"] == "error"


def test_the_time_limit_follows_the_program(tmp_path):
    # a case's limit is ten times its baseline's run, never below the
    # spec's timeout (the floor)
    from harness.engine import (cases as casesmod, judge as judgemod,
                                spec as spec_mod, timelimit)
    path = tmp_path / "slow.toml"
    path.write_text('name = "slow"\ndescription = "d"\ncontract = "atomic"\n'
                    'command = ["true", "{target}"]\nsizes = [1]\n'
                    'timeout = 1.5\n')
    spec = spec_mod.load(path)
    combo, = casesmod.combos([spec])
    work = tmp_path / "out" / ".work"
    (work / combo.prefix).mkdir(parents=True)
    judge = judgemod.Judge([spec], casesmod.Settings(out=tmp_path / "out"))
    for took, limit in ((0.01, 1.5), (2.0, 2.0 * timelimit.MULTIPLE)):
        (work / combo.prefix / "run.json").write_text(json.dumps(
            {"duration": took}))
        judge._calls.clear()
        assert judge.case_seconds(combo) == limit


# ------------------------------------------------------------- backends

URING = Path("/usr/include/liburing.h").is_file()


@pytest.fixture(scope="module")
def rawio(tmp_path_factory):
    return build(tmp_path_factory, "rawio")


@pytest.fixture(scope="module")
def rawio_uring(tmp_path_factory):
    if not URING:
        pytest.skip("liburing-dev is not installed (/usr/include/liburing.h)")
    out = tmp_path_factory.mktemp("findings") / "rawio-uring"
    proc = subprocess.run(["cc", "-g", "-O0", "-DRAWIO_URING", "-o", str(out),
                           str(PROGS / "rawio.c"), "-luring"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return out


def test_auto_picks_the_supervisor_for_raw_system_calls(rawio, files):
    # its writes and syncs are syscall(SYS_write) and syscall(SYS_fsync):
    # the preload saw none of them; the supervisor sees all, and the
    # correct program is clean
    proc, doc, cases = audit(
        files / "out", [rawio, "raw", "{target}", "{new}"], "--old",
        files / "old", "--new", files / "new", "--faults",
        "baseline,powerloss,eio", expect=(0,))
    assert {c["backend"] for c in cases.values()} == {"syscall"}
    assert not findings(cases)
    assert "rawio: system-call backend: its preload baseline shows the " \
           "content of 'target.tmp' change with no call the preload saw" \
           in proc.stderr
    assert "backend rawio: syscall (its preload baseline shows" in \
        (files / "out" / "report.md").read_text()


def test_the_preload_never_calls_what_it_missed_never_fsynced(rawio, files):
    # asked for by name, the preload cannot see the raw fsyncs: the
    # baseline says so, and no case claims the data was never fsynced
    proc, doc, cases = audit(
        files / "out", [rawio, "raw", "{target}", "{new}"], "--backend",
        "preload", "--old", files / "old", "--new", files / "new",
        "--faults", "baseline,powerloss", expect=(1,))
    assert list(cases) == ["rawio-baseline"]
    c = cases["rawio-baseline"]
    assert c["verdict"] == "harness-error"
    assert "not seen whole: the program makes 2 fsync calls on its files " \
           "that the preload does not see" in c["finding"]
    assert "rerun with --backend syscall" in c["finding"]
    assert not any("never fsynced" in said(x) for x in cases.values())


@pytest.mark.parametrize("backend", ["auto", "preload"])
def test_an_io_uring_writer_is_not_seen_whole_under_either(rawio_uring, files,
                                                          backend):
    proc, doc, cases = audit(
        files / "out", [rawio_uring, "uring", "{target}", "{new}"],
        "--backend", backend, "--old", files / "old", "--new", files / "new",
        "--faults", "baseline,powerloss", expect=(1,))
    assert list(cases) == ["rawio-uring-baseline"]
    c = cases["rawio-uring-baseline"]
    assert c["verdict"] == "harness-error"
    assert "not seen whole" in c["finding"]
    if backend == "auto":
        assert c["backend"] == "syscall"
        assert "rawio-uring links liburing" in proc.stderr
    assert not any("never fsynced" in said(x) for x in cases.values())


# ------------------------------------------------- one cause, one finding

@pytest.fixture(scope="module")
def objstore(tmp_path_factory):
    return build(tmp_path_factory, "objstore")


def test_objects_lost_by_one_cause_are_one_finding(objstore, files):
    # git's loose objects: each written under a temporary name, linked
    # to its own and never fsynced before the ref that names them; the
    # power cuts lose one object or another, during the run (torn) or
    # after it (not-durable): one defect, at the link, naming how many
    # files and cases it covers
    new = files / "objects.new"
    new.write_bytes(b"".join(bytes([65 + i]) * 1024 for i in range(6)))
    proc, doc, cases = audit(
        files / "out", [objstore, "store", "ref", "{new}"], "--setup", "true",
        "--new", new, "--faults", "baseline,powerloss,eio",
        check=f"{objstore} check ref {new}", expect=(1,))
    defects = doc["summary"]["defects"]
    assert len(defects) == 1, [d["title"] for d in defects]
    d = defects[0]
    assert d["property"] == "ordering"
    assert d["cases"] == len(findings(cases)) > 2
    assert d["files"] > 1
    assert set(d["verdicts"]) == {"torn", "not-durable"}
    assert "(link on 'objects/??/*' at objstore.c:" in d["title"]
    md = (files / "out" / "report.md").read_text()
    assert f"— {d['files']} files, {d['cases']} cases (" in md
