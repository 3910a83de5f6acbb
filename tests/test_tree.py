"""Names live in directories: the trace and the explorer over a whole tree.

crash-model.md, "What makes data durable": under posix each directory is
its own unit (a rename between two directories needs both directories'
fsync, a new directory's name its parent's, its entries its own), an
O_TMPFILE file has no name until linkat, link and symlink add a name like
a creation; ext4-ordered keeps one journal. And "Where a run starts":
everything in the scratch before the program starts is durable.

The first half replays hand-built traces in the recorder's tree format
(docs/design.md, Trace) whose crash states are known; the second runs
tests/progs/writers.c, which replaces a target in each of the ways the
scope names, under the fault library, and judges every crash state with
the oracle as a power-loss case would.
"""

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # noqa: E402
from harness.engine import runner  # noqa: E402
from harness.engine import trace as trace_mod  # noqa: E402
from harness.judging import explorer, oracle, payload  # noqa: E402
from harness.judging.explorer import BLOCK, layout  # noqa: E402

WATCH = "/scratch/tree"
PROGS = Path(__file__).resolve().parent / "progs"
MODELS = explorer.MODELS


class Tree:
    """A trace of a tree as the recorder writes it: listings keyed by the
    directory's inode, the init record holding them all."""

    ROOT = 500

    def __init__(self, files=None, dirs=()):
        self.store, self.data = {}, {}
        self.listing = {self.ROOT: {}}
        self.paths = {"": self.ROOT}
        self.next_ino, self.seq, self.counts = 1000, 0, {}
        for d in dirs:
            ino = self._ino()
            self.listing[self.paths[os.path.dirname(d)]][
                os.path.basename(d)] = {"d": ino}
            self.listing[ino] = {}
            self.paths[d] = ino
        snap_files = {}
        for path, content in (files or {}).items():
            ino = self._ino()
            self._dir_of(path)[os.path.basename(path)] = ino
            self.data[ino] = content
            snap_files[str(ino)] = self._put(content)
        self.records = [{"ev": "init", "seq": 0, "pid": 1, "ppid": 0,
                         "exe": "/bin/w", "plan": "", "watch": WATCH,
                         "snap": {"root": self.ROOT, "dirs": self._dirs(),
                                  "files": snap_files}}]

    def _ino(self):
        self.next_ino += 1
        return self.next_ino

    def _put(self, content):
        h = hashlib.sha256(content).hexdigest()[:16]
        self.store[h] = content
        return {"size": len(content), "hash": h}

    def _dir_of(self, path):
        return self.listing[self.paths[os.path.dirname(path)]]

    def _dirs(self, only=None):
        return {str(d): dict(v) for d, v in self.listing.items()
                if only is None or d in only}

    def ino(self, path):
        return self._dir_of(path)[os.path.basename(path)]

    def call(self, call, path=None, dirs=(), files=(), **fields):
        self.seq += 1
        self.counts[call] = self.counts.get(call, 0) + 1
        rec = {"ev": "call", "seq": self.seq, "pid": 1, "call": call,
               "n": self.counts[call], "ret": fields.pop("ret", 0),
               "errno": 0}
        if path is not None:
            rec["path"] = f"{WATCH}/{path}" if path else WATCH
        rec.update(fields)
        snap = {}
        if dirs:
            snap["dirs"] = self._dirs({self.paths[d] for d in dirs})
        if files:
            snap["files"] = {str(i): self._put(self.data[i]) for i in files}
        if snap:
            rec["snap"] = snap
        self.records.append(rec)
        return rec

    # -- what a program does

    def create(self, path, content):
        ino = self._ino()
        self._dir_of(path)[os.path.basename(path)] = ino
        self.data[ino] = b""
        self.call("openat", path, dirs=[os.path.dirname(path)], files=[ino],
                  ino=ino, ret=3, flags=["O_CREAT", "O_EXCL"])
        self.data[ino] = content
        self.call("write", path, files=[ino], ino=ino, off=0,
                  len=len(content), ret=len(content), flags=[])
        return ino

    def tmpfile(self, content):
        """An O_TMPFILE in WATCH, written: no name."""
        ino = self._ino()
        self.data[ino] = content
        self.call("write", f"#{ino} (deleted)", files=[ino], ino=ino, off=0,
                  len=len(content), ret=len(content), flags=[])
        return ino

    def linkat(self, ino, path):
        self._dir_of(path)[os.path.basename(path)] = ino
        self.call("linkat", f"#{ino} (deleted)", dirs=[os.path.dirname(path)],
                  path2=f"{WATCH}/{path}", ino=ino)

    def fsync(self, path):
        self.call("fsync", path, ino=self.ino(path))

    def fsync_dir(self, d):
        self.call("fsync", d, ino=self.paths[d], dir=True)

    def mkdir(self, d):
        ino = self._ino()
        self._dir_of(d)[os.path.basename(d)] = {"d": ino}
        self.listing[ino] = {}
        self.paths[d] = ino
        self.call("mkdir", d, dirs=[os.path.dirname(d), d], ino=ino, dir=True)

    def rename(self, src, dst, exchange=False):
        a, b = self._dir_of(src), self._dir_of(dst)
        sa, sb = os.path.basename(src), os.path.basename(dst)
        if exchange:
            a[sa], b[sb] = b[sb], a[sa]
        else:
            b[sb] = a.pop(sa)
        self.call("renameat2" if exchange else "rename", src,
                  dirs={os.path.dirname(src), os.path.dirname(dst)},
                  path2=f"{WATCH}/{dst}",
                  **({"flags": ["RENAME_EXCHANGE"]} if exchange else {}))

    def symlink(self, what, path):
        self._dir_of(path)[os.path.basename(path)] = {"l": what}
        self.call("symlink", path, dirs=[os.path.dirname(path)])

    def explore(self, model, **kw):
        kw.setdefault("exit_ok", True)
        return explorer.explore(self.records, None, model, "target",
                                content=self.store.__getitem__, **kw)


def at_exit(points):
    return points[-1].states


def shapes(states, *paths):
    """{(content of each PATH, None when absent)} over STATES."""
    return {tuple(s.files.get(p) for p in paths) for s in states}


OLD, NEW = b"o" * 100, b"n" * 100


def test_a_rename_between_directories_is_two_changes_under_posix():
    t = Tree({"target": OLD}, dirs=["stage"])
    t.create("stage/t.tmp", NEW)
    t.fsync("stage/t.tmp")
    t.rename("stage/t.tmp", "target")
    t.fsync_dir("stage")
    got = shapes(at_exit(t.explore("posix")), "target", "stage/t.tmp")
    # the new name alone (under both names), neither: old target; the
    # removal alone (under neither name but the old target's)
    assert (OLD, None) in got, got
    assert (NEW, NEW) in got or (NEW, None) in got, got
    bad = [s for s in at_exit(t.explore("posix")) if s.target != NEW]
    assert bad and bad[0].rule == explorer.RULE_FSYNC_DIR, bad[0].why
    assert "moved to 'target': the new name did not persist" in bad[0].why
    # one journal: the fsync of stage/ committed the rename whole
    assert shapes(at_exit(t.explore("ext4-ordered")),
                  "target", "stage/t.tmp") == {(NEW, None)}


def test_both_directories_synced_leave_the_new_name_alone():
    t = Tree({"target": OLD}, dirs=["stage"])
    t.create("stage/t.tmp", NEW)
    t.fsync("stage/t.tmp")
    t.rename("stage/t.tmp", "target")
    t.fsync_dir("stage")
    t.fsync_dir("")
    for model in MODELS:
        assert shapes(at_exit(t.explore(model)), "target",
                      "stage/t.tmp") == {(NEW, None)}, model


def test_a_new_directory_needs_its_parents_fsync_and_its_own():
    t = Tree()
    t.mkdir("sub")
    t.create("sub/f", NEW)
    t.fsync("sub/f")
    t.fsync_dir("sub")
    states = at_exit(t.explore("posix"))
    assert None in {s.files.get("sub/f") for s in states}
    assert any("sub" not in s.dirs for s in states)
    assert {"the creation of directory 'sub' did not persist" in s.why
            for s in states if "sub" not in s.dirs} == {True}
    # ext4: the file's fsync committed the journal, the mkdir with it
    assert shapes(at_exit(t.explore("ext4-ordered")), "sub/f") == {(NEW,)}
    t.fsync_dir("")
    assert shapes(at_exit(t.explore("posix")), "sub/f") == {(NEW,)}


def test_an_unlinked_tmpfile_has_no_name_until_linkat():
    t = Tree({"target": OLD})
    ino = t.tmpfile(NEW)
    t.call("fsync", f"#{ino} (deleted)", ino=ino)
    before = [s for p in t.explore("posix") for s in p.states]
    assert {tuple(sorted(s.files)) for s in before} == {("target",)}
    t.linkat(ino, "t.tmp")
    t.rename("t.tmp", "target")
    t.fsync_dir("")
    for model in MODELS:
        assert shapes(at_exit(t.explore(model)), "target") == {(NEW,)}


def test_an_exchange_is_one_change_never_a_missing_name():
    t = Tree({"target": OLD})
    t.create("t.tmp", NEW)
    t.fsync("t.tmp")
    t.rename("t.tmp", "target", exchange=True)
    for model in MODELS:
        for p in t.explore(model):
            for s in p.states:
                assert s.target in (OLD, NEW), (model, p.label, s.why)


def test_an_exchange_forces_no_data_out_under_ext4_ordered():
    """ext4 allocates a file's blocks when it is renamed over another
    (auto_da_alloc, in ext4_rename): never empty under the target's
    name, though its blocks may read zeros (dioread_nolock's unwritten
    extents); an exchange (renameat2 RENAME_EXCHANGE,
    ext4_cross_rename) allocates nothing: the new file never fsynced
    may be empty under the target's name after a power cut, as under
    posix."""
    def run(exchange):
        t = Tree({"target": OLD})
        t.create("t.tmp", NEW)
        t.rename("t.tmp", "target", exchange=exchange)
        t.fsync_dir("")
        return {s.target for s in at_exit(t.explore("ext4-ordered"))}
    assert run(False) == {NEW, bytes(len(NEW))}
    got = run(True)
    assert b"" in got
    assert NEW in got and got - {OLD, NEW}, got


def test_a_crash_state_is_laid_out_as_a_tree(tmp_path):
    t = Tree({"target": OLD, "a/b/f": b"deep"}, dirs=["a", "a/b", "empty"])
    t.symlink("target", "ln")
    t.fsync_dir("")
    st = at_exit(t.explore("posix"))[0]
    assert set(st.dirs) == {"a", "a/b", "empty"}
    layout(st, tmp_path / "s")
    assert (tmp_path / "s" / "a" / "b" / "f").read_bytes() == b"deep"
    assert (tmp_path / "s" / "empty").is_dir()
    assert os.readlink(tmp_path / "s" / "ln") == "target"
    assert (tmp_path / "s" / "ln").read_bytes() == OLD


def test_data_written_through_one_name_is_synced_through_another():
    """An fsync covers the file, whichever name or descriptor it is
    called on: the trace names the inode."""
    t = Tree({"target": OLD})
    ino = t.create("t.tmp", NEW)
    t.listing[Tree.ROOT]["alias"] = ino
    t.call("link", "t.tmp", dirs=[""], path2=f"{WATCH}/alias", ino=ino)
    t.fsync("alias")
    t.rename("t.tmp", "target")
    t.fsync_dir("")
    assert shapes(at_exit(t.explore("posix")), "target", "alias") == \
        {(NEW, NEW)}


def test_sector_tears_a_block_into_a_prefix_of_new_sectors():
    old, new = b"a" * (2 * BLOCK), b"b" * (2 * BLOCK)
    t = Tree({"target": old})
    ino = t.ino("target")
    t.data[ino] = new
    t.call("write", "target", files=[ino], ino=ino, off=0, len=len(new),
           ret=len(new), flags=[])
    whole = {s.target for s in at_exit(t.explore("posix"))}
    torn = {s.target for s in at_exit(t.explore("posix", sector=512))}
    inside = {b"b" * k + b"a" * (BLOCK - k) for k in range(512, BLOCK, 512)}
    assert not {x[:BLOCK] for x in whole} & inside
    assert {x[:BLOCK] for x in torn} >= inside
    assert whole <= torn
    with pytest.raises(explorer.ExplorerError, match="sector"):
        t.explore("posix", sector=100)


# ---------------------------------------------------------------- programs

@pytest.fixture(scope="module")
def writers(tmp_path_factory):
    exe = tmp_path_factory.mktemp("tree-progs") / "writers"
    proc = subprocess.run(["cc", "-O1", "-Wall", "-Wextra", "-o", str(exe),
                           str(PROGS / "writers.c")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return exe


class Recorded:
    """ARGV run under the recorder in a scratch laid out as the sweep's:
    work/ (cwd, WATCH) holding target = OLD, in/new = NEW."""

    def __init__(self, base, argv, old, new):
        self.work = base / "work"
        self.work.mkdir(parents=True)
        (base / "in").mkdir()
        (base / "in" / "new").write_bytes(new)
        (self.work / "target").write_bytes(old)
        self.snapdir = base / "snaps"
        trace = base / "trace.jsonl"
        env = runner.build_env("", trace, self.work, self.snapdir,
                               base / "shared", program=str(argv[0]),
                               cwd=self.work)
        self.run = runner.run([str(a) for a in argv], cwd=self.work,
                              preload=False, env=env, timeout=60)
        self.records = trace_mod.load(trace)
        self.old, self.new = old, new

    def verdicts(self, model, sector=BLOCK):
        """{crash point label: verdict} of the points that are not ok,
        judged as the sweep judges a power-loss case (atomic)."""
        if self.run.status == 77:
            pytest.skip(self.run.stderr_text().strip())
        assert self.run.status == 0, self.run.stderr_text()
        target = self.work / "target"
        out = {}
        for p in explorer.explore(self.records, self.snapdir, model,
                                  "target", exit_ok=True, sector=sector):
            states = []
            for st in p.states:
                st = st.copy()
                st.label = f"{p.label}, {st.label}"
                st.claimed = p.claimed
                states.append(st)
            v = oracle.judge(oracle.Outcome(
                contract="atomic", old=self.old, new=self.new,
                kind="powerloss", status=0, crash_states=states,
                target=target.read_bytes() if target.is_file() else None))
            if v.verdict != "ok":
                out[p.label] = v.verdict
        return out


OLD_P, NEW_P = payload.make(9000, 1), payload.make(6000, 2)


def recorded(tmp_path, writers, mode, old=OLD_P, new=NEW_P):
    return Recorded(tmp_path, [writers, mode, "target", "../in/new"],
                    old, new)


# mode -> {model: the verdicts the after-exit point may show}, and no
# point before the exit may be anything but ok (atomic replacement)
CORRECT = ["tmp-rename", "staging-both", "tmpfile", "tmpfile-proc",
           "exchange", "noreplace", "dsync", "copy", "sendfile", "splice",
           "hardlink"]


@pytest.mark.parametrize("mode", CORRECT)
def test_a_correct_writer_is_ok_under_both_models(tmp_path, writers, mode):
    r = recorded(tmp_path, writers, mode)
    for model in MODELS:
        assert r.verdicts(model) == {}, (mode, model)


def test_a_staging_directory_synced_alone_is_not_durable_under_posix(
        tmp_path, writers):
    r = recorded(tmp_path, writers, "staging")
    assert r.verdicts("posix") == {"after exit": "not-durable"}
    assert r.verdicts("ext4-ordered") == {}


def test_a_staging_directorys_finding_is_the_rename_into_the_target_dir(
        tmp_path, writers):
    """The program did fsync stage/ after its rename: what the failing
    state lost that matters is the target's new name in '.', not the
    creation of stage/ (the first lost change), so the defect is the
    rename, where the program made it."""
    from harness.judging import causes
    r = recorded(tmp_path, writers, "staging")
    last = explorer.explore(r.records, r.snapdir, "posix", "target",
                            exit_ok=True)[-1]
    found = []
    for st in last.states:
        st = st.copy()
        st.claimed = last.claimed
        v = oracle.judge(oracle.Outcome(
            contract="atomic", old=r.old, new=r.new, kind="powerloss",
            status=0, crash_states=[st],
            target=(r.work / "target").read_bytes()))
        if v.verdict != "ok":
            found.append(v)
    assert found, "staging is not durable under posix"
    for v in found:
        assert v.cause.change == ("move-in", "target"), v.cause
        rec = causes.deciding_record(v.cause, r.records, base=str(r.work))
        assert rec is not None and rec["call"] in causes.RENAME_CALLS, rec
        assert rec["path2"].endswith("/target"), rec


@pytest.mark.parametrize("mode", ["copy-nofsync", "sendfile-nofsync"])
def test_a_copy_never_fsynced_is_not_durable_under_posix(tmp_path, writers,
                                                          mode):
    r = recorded(tmp_path, writers, mode)
    got = r.verdicts("posix")
    assert got.get("after exit") == "not-durable", got
    assert set(got.values()) <= {"not-durable", "torn"}, got
    # a rename over the target allocates its blocks (auto_da_alloc),
    # unwritten until their I/O completes: zeros, not durable either;
    # a journal of data has them before the rename
    assert r.verdicts("ext4-ordered").get("after exit") == "not-durable"
    assert r.verdicts("ext4-journal") == {}


def test_a_new_directory_without_its_parents_fsync(tmp_path, writers):
    r = recorded(tmp_path, writers, "mkdir")
    assert r.run.status == 0, r.run.stderr_text()
    want = r.new
    for model, lost in (("posix", True), ("ext4-ordered", False)):
        last = explorer.explore(r.records, r.snapdir, model, "target",
                                exit_ok=True)[-1]
        got = {s.files.get("sub/target") for s in last.states}
        assert (got != {want}) == lost, (model, got)
    r2 = Recorded(tmp_path / "both", [writers, "mkdir-both", "target",
                                      "../in/new"], OLD_P, NEW_P)
    for model in MODELS:
        last = explorer.explore(r2.records, r2.snapdir, model, "target",
                                exit_ok=True)[-1]
        assert {s.files.get("sub/target") for s in last.states} == {want}


def test_the_new_calls_are_numbered_in_the_trace(tmp_path, writers):
    seen = set()
    for mode in ("tmpfile", "copy", "sendfile", "splice", "dsync", "mkdir",
                 "symlink", "hardlink", "exchange"):
        r = Recorded(tmp_path / mode, [writers, mode, "target", "../in/new"],
                     OLD_P, NEW_P)
        if r.run.status == 77:
            continue
        seen |= {f"{c['call']}#{c['n']}" for c in trace_mod.calls(r.records)}
    for call in ("linkat#1", "copy_file_range#1", "sendfile#1", "splice#1",
                 "pwritev2#1", "mkdir#1", "symlink#1", "link#1",
                 "renameat2#1"):
        assert call in seen, call


def test_moving_an_input_in_finds_it_durable(tmp_path):
    """mv {new} {target}: the input was in the scratch before the run,
    durable; without the directory's fsync only the rename may be lost."""
    r = Recorded(tmp_path, ["mv", "../in/new", "target"], OLD_P, NEW_P)
    for model in MODELS:
        assert r.verdicts(model) == {"after exit": "not-durable"}, model


def same_size_pair():
    """Old and new content of one size sharing all blocks but one."""
    old = payload.make(4 * BLOCK, 1)
    new = old[:BLOCK] + payload.make(4 * BLOCK, 2)[BLOCK:2 * BLOCK] \
        + old[2 * BLOCK:]
    assert len(old) == len(new) and old != new
    return old, new


def test_posix_is_never_kinder_than_ext4_ordered(tmp_path, writers):
    """Every crash point where ext4-ordered finds a state against the
    contract, posix finds one too: dd truncates the target and writes it
    again with blocks it held before, which posix lost once."""
    old, new = same_size_pair()
    runs = [Recorded(tmp_path / "dd", ["dd", "if=../in/new", "of=target",
                                       "bs=4096", "status=none"], old, new)]
    for mode in ("copy-nofsync", "staging", "tmp-rename"):
        runs.append(Recorded(tmp_path / mode, [writers, mode, "target",
                                               "../in/new"], old, new))
    for r in runs:
        weak, strong = r.verdicts("posix"), r.verdicts("ext4-ordered")
        assert set(strong) <= set(weak), (r.run.argv, strong, weak)
    assert runs[0].verdicts("posix"), "dd without fsync is not durable"


# ---------------------------------------------------------------- unseen

def unseen_of(r):
    return [(u["path"], u["what"], u["at"])
            for u in explorer.unseen(r.records, r.snapdir, r.work)]


def hand_unseen(t):
    return [(u["path"], u["what"], u["at"])
            for u in explorer.unseen(t.records,
                                     content=t.store.__getitem__)]


def in_flight(creator, other=None):
    """Process 2 creates c0 while process CREATOR's open(O_CREAT) of c1
    is done but not yet numbered: 2's listing, taken after its seq, shows
    c1 (the recorder takes a call's seq after the call, its snapshot
    after the seq). OTHER: a name that appears with no call at all."""
    t = Tree({"target": b"old"})
    c0, c1 = t._ino(), t._ino()
    t.listing[Tree.ROOT].update(c0=c0, c1=c1)
    t.data[c0] = t.data[c1] = b""
    if other:
        t.listing[Tree.ROOT][other] = t._ino()
    t.call("openat", "c0", dirs=[""], files=[c0], ino=c0, ret=3,
           flags=["O_CREAT"], pid=2)
    t.call("openat", "c1", dirs=[""], files=[c1], ino=c1, ret=3,
           flags=["O_CREAT"], pid=creator)
    return t


def test_a_name_another_process_made_in_flight_is_seen():
    """crash-model.md is unchanged: the name is accounted for by the
    other process's call, recorded after the listing that showed it."""
    assert hand_unseen(in_flight(3)) == []


def test_a_name_no_call_made_is_unseen_with_several_processes():
    assert hand_unseen(in_flight(3, other="raw")) == [
        ("raw", "name", "openat#1")]


def test_a_later_call_of_the_same_process_accounts_for_nothing():
    """One process's calls are never in flight together: a name its own
    later call names was made by something unseen before it."""
    assert hand_unseen(in_flight(2)) == [("c1", "name", "openat#1")]


def test_content_another_process_wrote_in_flight_is_seen():
    """Process 2's fsync snapshots a file that process 3's write, done
    but numbered after the fsync, has changed; the same write numbered
    after by process 2 itself is unseen."""
    for writer, want in ((3, []), (2, [("log", "content", "fsync#1")])):
        t = Tree({"target": b"old", "log": b""})
        log = t.ino("log")
        t.data[log] = b"line\n"
        t.call("fsync", "log", files=[log], ino=log, pid=2)
        t.call("write", "log", files=[log], ino=log, off=0, len=5, ret=5,
               flags=[], pid=writer)
        assert hand_unseen(t) == want, writer


@pytest.mark.parametrize("mode", CORRECT + ["staging", "mkdir", "symlink"])
def test_what_a_program_does_through_libc_is_all_seen(tmp_path, writers,
                                                      mode):
    r = recorded(tmp_path, writers, mode)
    if r.run.status == 77:
        pytest.skip(r.run.stderr_text().strip())
    assert unseen_of(r) == []


@pytest.mark.parametrize("mode, want", [
    ("raw", [("target.tmp", "content", "fsync#1")]),
    ("raw-rename", [("target", "name", "fsync#2"),
                    ("target.tmp", "name", "fsync#2")]),
    ("remove", [("junk", "name", "exit")]),
])
def test_a_change_no_call_accounts_for_is_unseen(tmp_path, writers, mode,
                                                 want):
    """A raw write shows at the next snapshot of the file, a raw rename
    at the next listing of its directory, remove(3)'s unlink (made
    inside libc) only in the tree the run left."""
    assert unseen_of(recorded(tmp_path, writers, mode)) == want


def test_names_made_by_several_processes_at_once_are_seen(tmp_path,
                                                          writers):
    """Sixteen children make a file each at once: another child's
    listing shows a name whose open is numbered after it, and still no
    name is unseen; a name made by a raw system call still is."""
    for i in range(3):
        assert unseen_of(recorded(tmp_path / str(i), writers, "fork")) \
            == [], i
    assert [u[:2] for u in unseen_of(recorded(tmp_path / "raw", writers,
                                              "fork-raw"))] == \
        [("r0", "name")]


def crashcheck(*args):
    return subprocess.run([str(ROOT / "scripts" / "crashcheck")]
                          + [str(a) for a in args], capture_output=True,
                          text=True, timeout=600)


def test_an_audit_says_what_it_did_not_see(tmp_path, writers):
    # under the preload, which cannot see the raw write (auto would take
    # the system-call backend for it: test_syscall.py)
    new = tmp_path / "new"
    new.write_bytes(NEW_P)
    argv = ["audit", "--backend", "preload", "--faults", "powerloss",
            "--model", "posix", "--new", new, "--", writers, "raw",
            "{target}", "{new}"]
    p = crashcheck(*argv[:-5], "--out", tmp_path / "a", *argv[-5:])
    assert p.returncode == 0, p.stderr
    assert "'target.tmp' changed by a call crashcheck cannot see " \
        "(seen at fsync#1)" in p.stderr
    assert "not a clean pass: 1 change" in p.stdout
    import json
    summary = json.loads((tmp_path / "a" / "results.json").read_text())[
        "summary"]
    assert summary["passed"] and not summary["clean"]
    assert [(u["path"], u["at"]) for u in summary["unseen"]] == \
        [("target.tmp", "fsync#1")]
    md = (tmp_path / "a" / "report.md").read_text()
    assert md.startswith("# crashcheck report\n\n**PASS, NOT CLEAN**:")
    assert "## Coverage" in md and "'target.tmp': content changed" in md
    html = (tmp_path / "a" / "report.html").read_text()
    assert "NOT CLEAN</span>" in html and 'id="coverage"' in html
    # junit.xml and results.sarif say it too, a failure under --strict
    import xml.etree.ElementTree as ET
    junit = ET.parse(tmp_path / "a" / "junit.xml").getroot()
    assert junit.get("name") == "crashcheck (NOT CLEAN)"
    assert junit.get("failures") == "0"
    assert "content changed by a call crashcheck cannot see" in \
        junit.find(".//testcase[@name='unseen changes']/system-err").text
    note, = json.loads((tmp_path / "a" / "results.sarif").read_text())[
        "runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert note["level"] == "warning" and "'target.tmp'" in \
        note["message"]["text"]
    p = crashcheck(*argv[:-5], "--strict", "--out", tmp_path / "b",
                   *argv[-5:])
    assert p.returncode == 1, (p.stdout, p.stderr)
    junit = ET.parse(tmp_path / "b" / "junit.xml").getroot()
    assert junit.get("failures") == "1"
    assert junit.find(".//testcase[@name='unseen changes']/failure") \
        is not None
    note, = json.loads((tmp_path / "b" / "results.sarif").read_text())[
        "runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert note["level"] == "error"
    # a program that shows everything: a clean pass, with or without
    p = crashcheck("audit", "--faults", "powerloss", "--model", "posix",
                   "--strict", "--new", new, "--out", tmp_path / "c", "--",
                   writers, "tmp-rename", "{target}", "{new}")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Every change to the files" in (tmp_path / "c" /
                                            "report.md").read_text()


def test_sector_on_the_command_line_and_in_the_summary(tmp_path, writers):
    new = tmp_path / "new"
    new.write_bytes(NEW_P)
    states = {}
    for sector in (None, "512"):
        out = tmp_path / f"s{sector}"
        extra = ["--sector", sector] if sector else []
        p = crashcheck("audit", "--faults", "powerloss", "--model", "posix",
                       *extra, "--new", new, "--out", out, "--", writers,
                       "copy-nofsync", "{target}", "{new}")
        assert p.returncode == 1, p.stdout + p.stderr
        import json
        doc = json.loads((out / "results.json").read_text())
        assert doc["summary"]["run"]["sector"] == int(sector or 4096)
        states[sector] = sum(c["states"] for c in doc["cases"])
        if sector:
            assert "--sector 512" in doc["cases"][0]["reproduce"]
    assert states["512"] > states[None], states
    p = crashcheck("audit", "--sector", "100", "--new", new, "--", "cp",
                   "{new}", "{target}")
    assert p.returncode == 2 and p.stderr.strip().splitlines() == [
        "crashcheck: --sector: '100' is not one of 512, 1024, 2048, 4096 "
        "bytes"], p.stderr


def test_an_audit_of_a_forking_writer_is_clean(tmp_path, writers):
    new = tmp_path / "new"
    new.write_bytes(NEW_P)
    for mode, clean in (("fork", True), ("fork-raw", False)):
        out = tmp_path / mode
        p = crashcheck("audit", "--backend", "preload", "--faults",
                       "powerloss", "--model", "posix", "--new", new,
                       "--out", out, "--", writers, mode, "{target}",
                       "{new}")
        assert p.returncode == 0, p.stderr
        assert ("cannot see" in p.stderr) != clean, p.stderr
        assert ("not a clean pass" in p.stdout) != clean, p.stdout
        import json
        summary = json.loads((out / "results.json").read_text())["summary"]
        assert summary["clean"] == clean
        assert [u["path"] for u in summary["unseen"]] == \
            ([] if clean else ["r0"])
