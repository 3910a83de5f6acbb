"""The six crash models (harness/judging/models/) where they disagree,
and explorer.admits(), the exact membership question, against the
states explore() enumerates.

Each scenario is a small trace in the recorder's tree format (test_tree's
Tree) of a pattern the filesystems treat differently: write then rename
over an existing file without fsync, an append never synced, a rename
between two directories, an O_TMPFILE linked then synced, an exchange of
two names, a truncation to zero and a rewrite, a failed fsync followed by
a rewrite. For each, trees a power cut could leave after the program
exits, and the models that allow each one, with the reason a model gives
for one it does not. Where a real kernel decided a model's claim, the
scenario says what was measured (ext4 and XFS on a loop device, the
shutdown ioctl with NOLOGFLUSH; Btrfs by copying its image while mounted;
kernel 6.18): docs/crash-model.md, "Filesystem models".
"""

import itertools
import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_tree import Tree  # noqa: E402

from harness.judging import explorer, models  # noqa: E402
from harness.judging.explorer import BLOCK, admits  # noqa: E402
from harness.judging.models import base as policy  # noqa: E402

MODELS = explorer.MODELS
OLD = b"o" * (2 * BLOCK)
NEW = b"n" * (2 * BLOCK)
ZEROS = bytes(2 * BLOCK)
ALL = set(MODELS)


class Trace(Tree):
    """test_tree's Tree, with the calls of data this file needs."""

    def write(self, path, data, off=0, **fields):
        ino = self.ino(path)
        old = self.data[ino]
        old = old + bytes(max(0, off - len(old)))
        self.data[ino] = old[:off] + data + old[off + len(data):]
        self.call("write", path, files=[ino], ino=ino, off=off,
                  len=len(data), ret=len(data), flags=[], **fields)

    def ftruncate(self, path, size):
        ino = self.ino(path)
        old = self.data[ino]
        self.data[ino] = old[:size] + bytes(max(0, size - len(old)))
        self.call("ftruncate", path, files=[ino], ino=ino, len=size, ret=0)

    def truncate_open(self, path):
        ino = self.ino(path)
        self.data[ino] = b""
        self.call("openat", path, files=[ino], ino=ino, ret=3,
                  flags=["O_WRONLY", "O_TRUNC"])

    def close(self, path):
        self.call("close", path, ino=self.ino(path))

    def failed_fsync(self, path):
        self.call("fsync", path, ino=self.ino(path), ret=-1, errno=5,
                  fault={"rule": 0, "action": "EIO"})

    def fsync_ino(self, ino):
        self.call("fsync", f"#{ino} (deleted)", ino=ino)

    def admitted(self, files, dirs=(), point="exit", sector=BLOCK):
        """{model: Verdict} of the tree FILES, DIRS at POINT."""
        return {m: admits(self.records, None, point, m, files, dirs=dirs,
                          content=self.store.__getitem__, sector=sector)
                for m in MODELS}


def under(verdicts):
    return {m for m, v in verdicts.items() if v}


def check(t, files, want, dirs=(), because=None, among=MODELS):
    """Of the models AMONG, those that admit FILES (and DIRS) are WANT;
    every other one says why: BECAUSE, {model: a piece of text}, is in
    the reasons those models give."""
    got = {m: v for m, v in t.admitted(files, dirs).items() if m in among}
    assert under(got) == set(want), {m: v.reason for m, v in got.items()}
    for m, v in got.items():
        if not v:
            assert v.reason and "\n" not in v.reason, m
    for m, text in (because or {}).items():
        assert text in got[m].reason, (m, got[m].reason)


# ------------------------------------------------------------ the models

def test_every_model_states_its_policies_and_sources():
    assert MODELS == ("posix", "ext4-ordered", "ext4-writeback",
                      "ext4-journal", "xfs", "btrfs")
    for name in MODELS:
        m = models.get(name)
        assert m.name == name and m.summary and m.sources
        pol = m.policies()
        assert pol["metadata"] in (policy.INDEPENDENT, policy.JOURNAL)
        assert pol["append"] in (policy.INDEPENDENT, policy.PREFIX,
                                 policy.ZERO_FILL, policy.JOURNALED)
        assert pol["failed_sync"] in (policy.PAGE, policy.DISK)
    # no two models the same: each answers some question otherwise
    assert len({tuple(sorted(map(str, models.get(n).policies().items())))
                for n in MODELS}) == len(MODELS)


@pytest.mark.parametrize("text, want", [
    ("all", MODELS),
    ("xfs", ("xfs",)),
    ("btrfs,posix", ("posix", "btrfs")),
    (" ext4-journal , xfs ", ("ext4-journal", "xfs")),
])
def test_model_lists_parse(text, want):
    assert models.parse(text) == want


@pytest.mark.parametrize("text, error", [
    ("ext3", "unknown model 'ext3'"),
    ("posix,", "unknown model ''"),
    ("all,xfs", "'all' cannot be part of a list"),
    ("", "expected a model name"),
])
def test_bad_model_lists_are_named(text, error):
    with pytest.raises(ValueError, match=error):
        models.parse(text)


def test_the_replay_and_the_space_never_ask_a_models_name():
    """The explorer's parts consult the model's policies: no model's
    name is a string of their code (docstrings and comments aside)."""
    import ast
    root = Path(explorer.__file__).parent / "powerloss"
    for path in sorted(root.glob("*.py")):
        tree = ast.parse(path.read_text())
        docs = {id(n.body[0].value) for n in ast.walk(tree)
                if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef))
                and n.body and isinstance(n.body[0], ast.Expr)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and id(node) not in docs \
                    and isinstance(node.value, str):
                assert node.value not in MODELS, \
                    f"{path.name}:{node.lineno}: {node.value!r}"


# ------------------------------------------------------------ scenarios

def rename_without_fsync():
    t = Trace({"target": OLD})
    t.create("target.tmp", NEW)
    t.rename("target.tmp", "target")
    return t


def test_write_then_rename_over_an_existing_file_without_fsync():
    """GNU sed -i. The rename can commit before the data: empty under
    posix, XFS (measured: empty after a commit, 4 runs of 4) and Btrfs
    (measured: a 64 MiB file empty in 2 runs of 3: its rename starts
    write-back and does not wait); ext4 allocates the data first
    (auto_da_alloc) but, with dioread_nolock, as unwritten extents the
    rename's commit does not wait for: zeros of the new size, in
    data=ordered as in data=writeback (measured: make validate-models,
    no-fsync-before-rename); a journal of data has it before the
    rename. posix's size can stop at a block boundary."""
    t = rename_without_fsync()
    check(t, {"target": b""}, {"posix", "xfs", "btrfs"},
          because={"ext4-ordered": "its size can only be 8192",
                   "ext4-writeback": "its size can only be 8192"})
    check(t, {"target": ZEROS}, {"posix", "ext4-ordered", "ext4-writeback",
                                 "xfs"})
    check(t, {"target": NEW[:BLOCK]}, {"posix", "xfs", "btrfs"})
    check(t, {"target": OLD}, ALL)
    check(t, {"target": NEW}, ALL)
    check(t, {"target": OLD, "target.tmp": NEW}, ALL)
    # one rename within one directory: never both names
    check(t, {"target": NEW, "target.tmp": NEW}, set(),
          because={"posix": "'target.tmp': a file in the tree, absent",
                   "xfs": "the file there before the run"})


def test_an_append_never_synced():
    """The size can outrun the data (zeros) where data is not ordered
    with it (ext4 too: dioread_nolock's unwritten extents); Btrfs grows
    a file only over data written, in file order; data=journal keeps a
    prefix of the write's pages. Write-back moves the size to the end
    of the blocks it wrote: a block boundary, under every model."""
    t = Trace({"f": OLD})
    t.write("f", NEW, off=len(OLD))
    loose = {"posix", "ext4-ordered", "ext4-writeback", "xfs"}
    check(t, {"f": OLD + ZEROS}, loose)
    check(t, {"f": OLD + NEW[:BLOCK]}, ALL)
    check(t, {"f": OLD + NEW[:BLOCK] + bytes(BLOCK)}, loose)
    check(t, {"f": OLD + ZEROS[:BLOCK] + NEW[BLOCK:]}, loose)
    check(t, {"f": OLD + NEW}, ALL)


def test_a_rename_between_two_directories():
    """posix: each directory's half on its own, so both names or
    neither. The journals commit the move whole (measured on ext4 and
    XFS after an fsync of another file: b/f alone). Btrfs too, in its
    transaction; but an fsync of the directory it went to logs that
    directory alone, and the file is then under both names (measured)."""
    t = Trace({"a/f": OLD}, dirs=("a", "b"))
    t.rename("a/f", "b/f")
    both = {"a/f": OLD, "b/f": OLD}
    check(t, both, {"posix"}, dirs=("a", "b"))
    check(t, {}, {"posix"}, dirs=("a", "b"))
    check(t, {"b/f": OLD}, ALL, dirs=("a", "b"))
    t.fsync_dir("b")
    check(t, both, {"posix", "btrfs"}, dirs=("a", "b"))
    check(t, {"a/f": OLD}, set(), dirs=("a", "b"))
    t.fsync_dir("a")
    check(t, both, set(), dirs=("a", "b"))


def test_an_o_tmpfile_linked_then_synced():
    """The file has no name until linkat. An fsync of it afterwards
    commits the link on every journaled filesystem (and logs it in
    Btrfs's log tree: measured, all four show it), not under posix,
    where only the directory's fsync makes a name durable."""
    t = Trace({"target": OLD})
    ino = t.tmpfile(NEW)
    t.fsync_ino(ino)
    t.linkat(ino, "f")
    check(t, {"target": OLD}, ALL)
    t.fsync("f")
    check(t, {"target": OLD}, {"posix"},
          because={"xfs": "nothing is pending) has 'f'",
                   "btrfs": "nothing is pending) has 'f'"})
    check(t, {"target": OLD, "f": NEW}, ALL)


def test_an_exchange_forces_nothing_out():
    """renameat2(RENAME_EXCHANGE) is no rename over a file: ext4 forces
    no data out for it (measured: the new file empty, ext4 ordered and
    writeback, and XFS; Btrfs empty with 64 MiB), unlike a plain rename
    (test_write_then_rename_over_an_existing_file_without_fsync)."""
    t = Trace({"target": OLD})
    t.create("target.new", NEW)
    t.rename("target.new", "target", exchange=True)
    check(t, {"target": b"", "target.new": OLD}, ALL - {"ext4-journal"})
    check(t, {"target": NEW, "target.new": OLD}, ALL)
    check(t, {"target": OLD, "target.new": NEW}, ALL)
    check(t, {"target": OLD, "target.new": OLD}, set())


def test_truncate_to_zero_and_rewrite():
    """A truncation commits in the log, before the data: empty under
    every model. ext4 allocates the data at the close (auto_da_alloc),
    unwritten (zeros, in data=ordered too: dioread_nolock); XFS's flush
    at close orders nothing (zeros: its size moves as write-back
    completes). posix lets the truncation and the size move each
    without the blocks. data=writeback alone reuses the freed blocks
    before the truncation commits: the old size over new blocks
    (measured: fsops truncate)."""
    t = Trace({"target": OLD})
    t.truncate_open("target")
    t.write("target", NEW)
    t.close("target")
    check(t, {"target": b""}, ALL)
    check(t, {"target": ZEROS}, {"posix", "ext4-ordered", "ext4-writeback",
                                 "xfs"})
    check(t, {"target": NEW[:BLOCK]}, ALL)
    check(t, {"target": OLD[:BLOCK] + NEW[BLOCK:]},
          {"posix", "ext4-writeback"},
          because={"ext4-ordered": "block 0", "xfs": "block 0"})


def test_a_failed_fsync_then_a_rewrite_and_a_sync():
    """A failed fsync drops the data it covered in every model; a later
    fsync does not write it. Where a read still sees the new page
    (ext4, XFS: Rebello et al.), writing a few bytes of it again makes
    the whole block durable with the next fsync; where it sees the disk
    (Btrfs), only those bytes."""
    t = Trace({"target": OLD})
    t.write("target", NEW)
    t.failed_fsync("target")
    t.fsync("target")
    check(t, {"target": OLD}, ALL)
    check(t, {"target": NEW}, set(),
          because={m: "block 0" for m in MODELS})
    t.write("target", b"c" * 5, off=10)
    t.fsync("target")
    page = NEW[:10] + b"c" * 5 + NEW[15:BLOCK] + OLD[BLOCK:]
    disk = OLD[:10] + b"c" * 5 + OLD[15:]
    pages = {m for m in MODELS if models.get(m).failed_sync == policy.PAGE}
    check(t, {"target": page}, pages)
    check(t, {"target": disk}, ALL - pages)
    check(t, {"target": OLD}, set())


def test_a_partial_last_block_reads_zeros_past_the_data():
    """overwrite's ftruncate: a file overwritten in place with less than
    it held, then cut to the new length. Its last block is written back
    as its page, zeros past the new end, while the cut itself may not
    have committed (measured on ext4 ordered and writeback and on XFS:
    the old size, that block the new byte and zeros; make
    validate-models, overwrite @ftruncate)."""
    t = Trace({"target": OLD})
    t.write("target", NEW[:BLOCK + 1])
    t.ftruncate("target", BLOCK + 1)
    tail = NEW[:BLOCK + 1] + bytes(BLOCK - 1)
    check(t, {"target": tail}, {"posix", "ext4-ordered", "ext4-writeback",
                                "xfs", "btrfs"},
          because={"ext4-journal": "block 1"})
    # not zeros anywhere else in it
    check(t, {"target": bytes(BLOCK) + tail[BLOCK:]}, set())


def test_a_cut_leaves_its_block_as_written_or_zeroed():
    """overwrite's ftruncate again, its write made durable first
    (O_SYNC, or O_DIRECT padded to 512 bytes): the cut zeroes the tail
    of the block it ends in, and write-back can take that block before
    the cut commits; an O_DIRECT write past the cut is on disk already.
    Measured on ext4 (ordered and writeback) and XFS: the old size with
    that block the new byte then zeros, or the new byte, the write's
    zero padding and the old bytes after it."""
    t = Trace({"target": OLD})
    t.write("target", NEW[:BLOCK + 1] + bytes(511))
    t.fsync("target")
    t.ftruncate("target", BLOCK + 1)
    durable = NEW[:BLOCK + 1] + bytes(511) + OLD[BLOCK + 512:]
    zeroed = NEW[:BLOCK + 1] + bytes(BLOCK - 1)
    check(t, {"target": durable}, ALL)
    # a journal of data logs the zeroed block with the cut
    check(t, {"target": zeroed}, ALL - {"ext4-journal"})
    check(t, {"target": NEW[:BLOCK + 1]}, ALL)
    # the block before the cut's is not touched by it
    check(t, {"target": bytes(BLOCK) + durable[BLOCK:]}, set())


def test_the_size_on_disk_can_stop_at_a_block_boundary():
    """fsops append: a synced log appended to, then an unrelated fsync.
    Write-back moved the size on disk to the end of the blocks it
    submitted, a block boundary short of the visible end, and the data
    under it did not all land (measured on ext4: 24576 of 43690 bytes,
    the block that held the synced end zeros past it)."""
    t = Trace({"log": NEW[:1365], "other": b"x"})
    t.write("log", b"a" * (2 * BLOCK), off=1365)
    t.fsync("other")
    head = NEW[:1365]
    check(t, {"other": b"x", "log": head + bytes(BLOCK - 1365)},
          {"posix", "ext4-ordered", "ext4-writeback", "xfs"})
    check(t, {"other": b"x", "log": head + b"a" * (BLOCK - 1365)}, ALL)
    check(t, {"other": b"x", "log": head + b"a" * (2 * BLOCK - 1365)}, ALL)
    # never between blocks but at the visible end
    check(t, {"other": b"x", "log": head + b"a" * (BLOCK - 1364)}, set())


# ------------------------------------------------------------ exactness

SCENARIOS = {
    "rename": rename_without_fsync,
    "append": lambda: _append(),
    "crossdir": lambda: _crossdir(),
    "truncate": lambda: _truncate(),
    "exchange": lambda: _exchange(),
    "sync-failure": lambda: _sync_failure(),
}


def _append():
    t = Trace({"f": OLD, "g": b"x"})
    t.write("f", NEW[:BLOCK + 7], off=len(OLD))
    t.write("g", NEW[:BLOCK])
    t.fsync("g")
    t.write("f", b"m" * 9, off=BLOCK - 3)
    return t


def _crossdir():
    t = Trace({"a/f": OLD, "a/g": b"g"}, dirs=("a", "b"))
    t.rename("a/f", "b/f")
    t.mkdir("b/c")
    t.create("b/c/h", NEW[:100])
    t.fsync_dir("b")
    t.rename("a/g", "a/f")
    return t


def _truncate():
    t = Trace({"target": OLD})
    t.truncate_open("target")
    t.write("target", NEW[:BLOCK + 1])
    t.close("target")
    t.create("other", b"z")
    return t


def _exchange():
    t = Trace({"target": OLD})
    t.create("target.new", NEW)
    t.rename("target.new", "target", exchange=True)
    t.create("x", b"x" * 10)
    t.rename("x", "target.new")
    return t


def _sync_failure():
    t = Trace({"target": OLD})
    t.write("target", NEW)
    t.failed_fsync("target")
    t.write("target", b"c" * 5, off=BLOCK + 10)
    t.fsync("target")
    t.write("target", b"d" * 3, off=2 * BLOCK)
    return t


def tree_of(state):
    return (tuple(sorted(state.files.items())), tuple(sorted(state.dirs)))


def mutations(states, rng):
    """Trees near the enumerated ones: each file's bytes replaced by
    another file's or state's, cut, grown, a byte flipped; a file
    dropped, or copied under another name."""
    contents = sorted({d for s in states for d in s.files.values()})
    for s in states:
        files, dirs = dict(s.files), s.dirs
        for path in sorted(files):
            for other in contents:
                yield {**files, path: other}, dirs
            data = files[path]
            yield {**files, path: data[:-1]}, dirs
            yield {**files, path: data + bytes(BLOCK)}, dirs
            if data:
                i = rng.randrange(len(data))
                yield {**files, path: data[:i] + bytes([data[i] ^ 1])
                       + data[i + 1:]}, dirs
            yield {p: d for p, d in files.items() if p != path}, dirs
            yield {**files, path + ".copy": data}, dirs
        for d in dirs:
            yield files, [x for x in dirs if x != d]


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_admits_is_exactly_what_explore_enumerates(name, model):
    """With a cap above every point's whole space, explore() builds each
    state the model allows (sector = block: no tears); admits() must
    admit each of them and nothing else: every mutation of them that is
    not itself one of them is refused, with a reason."""
    t = SCENARIOS[name]()
    rng = random.Random(1)
    points = explorer.explore(t.records, None, model, "target",
                              cap=4096, exit_ok=True,
                              content=t.store.__getitem__)
    for i, p in enumerate(points):
        at = "exit" if i == len(points) - 1 else \
            "start" if i == 0 else p.seq
        enumerated = {tree_of(s) for s in p.states}
        assert len(p.states) < 4096, "the cap cut the space"
        for s in p.states:
            v = admits(t.records, None, at, model, s.files, dirs=s.dirs,
                       content=t.store.__getitem__)
            assert v, f"{p.label} {s.label}: {v.reason} ({s.why})"
            assert v.states >= len(p.states)
        seen = set()
        for files, dirs in itertools.islice(mutations(p.states, rng), 400):
            key = (tuple(sorted(files.items())), tuple(sorted(dirs)))
            if key in seen:
                continue
            seen.add(key)
            v = admits(t.records, None, at, model, files, dirs=dirs,
                       content=t.store.__getitem__)
            assert bool(v) == (key in enumerated), \
                f"{p.label}: {sorted(files)} {sorted(dirs)}: {v.reason!r}"
            if not v:
                assert v.reason and "\n" not in v.reason


@pytest.mark.parametrize("model", MODELS)
def test_admits_takes_every_torn_state_explore_builds(model):
    """With 512-byte sectors, the torn states explore() builds are among
    those admits() allows (each sector of a pending block old or new,
    where the model tears blocks at all)."""
    t = _append()
    points = explorer.explore(t.records, None, model, "target", cap=4096,
                              exit_ok=True, sector=512,
                              content=t.store.__getitem__)
    torn = 0
    for i, p in enumerate(points):
        at = "exit" if i == len(points) - 1 else \
            "start" if i == 0 else p.seq
        for s in p.states:
            torn += any(c.kind == "torn" for c in s.persisted)
            v = admits(t.records, None, at, model, s.files, dirs=s.dirs,
                       content=t.store.__getitem__, sector=512)
            assert v, f"{p.label} {s.label}: {v.reason}"
    assert (torn > 0) == models.get(model).torn_sectors


def test_admits_refuses_bad_arguments():
    t = rename_without_fsync()
    for kw, text in (({"point": 999}, "no call record has seq 999"),
                     ({"point": "middle"}, "point must be"),
                     ({"model": "zfs"}, "unknown model 'zfs'"),
                     ({"files": {"../x": b""}}, "bad file path"),
                     ({"files": {"x": "text"}}, "is not bytes")):
        args = {"point": "exit", "model": "posix", "files": {}} | kw
        with pytest.raises(explorer.ExplorerError, match=text):
            admits(t.records, None, args["point"], args["model"],
                   args["files"], content=t.store.__getitem__)


# ------------------------------------------------------------ a sweep

def test_a_sweep_under_every_model_names_the_models_of_each_finding(tmp_path):
    """workloads/variants/no-fsync-before-rename (write, rename over the
    target, fsync of the directory; no fsync of the file) swept with
    --model all: after its exit the new content is durable where the
    rename cannot commit before the data (ext4-journal logs it first),
    not elsewhere (ext4-ordered: zeros, measured); each finding names the
    models it holds under, and a case under a model outside the default
    reproduces with --model."""
    import json
    import subprocess
    from harness import ROOT
    s = tmp_path / "nf.toml"
    s.write_text('name = "nf"\ndescription = "d"\ncommand = '
                 '["{bin}/no-fsync-before-rename", "--strategy={strategy}", '
                 '"{target}", "{new}"]\nstrategies = ["stdio"]\n'
                 'contract = "atomic"\nsizes = [4097]\n')
    out = tmp_path / "out"
    proc = subprocess.run([str(ROOT / "scripts" / "crashcheck"), "run", str(s),
                           "--out", str(out), "--faults", "powerloss",
                           "--model", "all"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    doc = json.loads((out / "results.json").read_text())
    cases = {c["id"]: c for c in doc["cases"]}
    assert doc["summary"]["models"] == sorted(MODELS)
    at_exit = {m: cases[f"nf-stdio-4097B-powerloss@exit-{m}"] for m in MODELS}
    lose = ["posix", "ext4-ordered", "ext4-writeback", "xfs", "btrfs"]
    assert {m for m, c in at_exit.items() if c["verdict"] == "not-durable"} \
        == set(lose)
    assert {m for m, c in at_exit.items() if c["verdict"] == "ok"} == \
        {"ext4-journal"}
    for m, c in at_exit.items():
        assert c["models"] == (lose if m in lose else
                               ["ext4-journal"]), (m, c)
        assert ("--model" in c["reproduce"]) == (m not in models.DEFAULT)
        assert c["reproduce"].endswith(f"--model {m}") or \
            m in models.DEFAULT
    # the console's FINDING line says them
    line = next(ln for ln in proc.stdout.splitlines()
                if "FINDING nf-stdio-4097B-powerloss@exit-xfs:" in ln)
    assert line.endswith("(under posix, ext4-ordered, ext4-writeback, xfs, "
                         "btrfs)"), line
    # the reproduce command of the xfs case makes it again
    rerun = subprocess.run(at_exit["xfs"]["reproduce"] + f" --out {tmp_path}/r",
                           shell=True, capture_output=True, text=True,
                           cwd=ROOT, timeout=600)
    again = json.loads((tmp_path / "r" / "results.json").read_text())
    assert [(c["id"], c["verdict"]) for c in again["cases"]] == \
        [("nf-stdio-4097B-powerloss@exit-xfs", "not-durable")], rerun.stdout


def test_make_apps_counts_each_models_root_causes():
    """scripts/apps's table: per recipe, how many root causes (defects)
    each model of its sweep exposes, from the models each case names."""
    import importlib.util
    from importlib.machinery import SourceFileLoader
    from harness import ROOT
    loader = SourceFileLoader("apps", str(ROOT / "scripts" / "apps"))
    apps = importlib.util.module_from_spec(
        importlib.util.spec_from_loader("apps", loader))
    loader.exec_module(apps)
    doc = {"cases": [
        {"id": "a-powerloss@exit-posix", "model": "posix", "verdict": "torn",
         "models": ["posix", "xfs"]},
        {"id": "a-powerloss@exit-xfs", "model": "xfs", "verdict": "torn",
         "models": ["posix", "xfs"]},
        {"id": "a-fsync#1=EIO", "model": None, "verdict": "lost-update",
         "models": ["posix", "ext4-ordered", "xfs"]}],
        "summary": {"run": {"models": ["posix", "ext4-ordered", "xfs"]},
                    "defects": [{"ids": ["a-powerloss@exit-posix",
                                         "a-powerloss@exit-xfs"]},
                                {"ids": ["a-fsync#1=EIO"]}]}}
    assert apps.per_model(doc) == {"posix": 2, "ext4-ordered": 1, "xfs": 2}
    row = {"application": "A", "version": "1", "status": 1, "cases": 3,
           "verdicts": {"torn": 2}, "causes": [], "faults": [],
           "per_model": apps.per_model(doc)}
    table = apps.markdown([row])
    assert "| root causes per crash model |" in table
    assert "| posix 2, ext4-ordered 1, xfs 2 |" in table
    one = dict(row, per_model={"posix": 2})
    assert "per crash model" not in apps.markdown([one])


def test_checkers_of_one_directory_take_turns(tmp_path):
    """The power-loss cases of one combo, one per model, each check the
    baseline's directory, in several workers at once; a checker that
    locks the application's data (LevelDB's LOCK) failed beside another
    (found sweeping the LevelDB recipe under every model: four spurious
    lost-updates). Two checkers started together on one directory: the
    second waits for the first."""
    import threading
    from harness.engine import (cases as casesmod, judge as judgemod,
                                spec as specmod)
    # the checker holds a lock of its own making for a while: a second
    # one meeting it fails
    checker = tmp_path / "checker"
    checker.write_text("#!/bin/sh\nmkdir held || exit 1\n"
                       "sleep 0.5\nrmdir held\nexit 0\n")
    checker.chmod(0o755)
    s = tmp_path / "c.toml"
    s.write_text('name = "c"\ndescription = "d"\ncommand = ["true", '
                 f'"{{target}}"]\ncheck = ["{checker}"]\nsizes = [1]\n')
    settings = casesmod.Settings(out=tmp_path / "out", jobs=1)
    settings.work.mkdir(parents=True)
    judge = judgemod.Judge([specmod.load(s)], settings)
    combo = next(iter(judge.combos.values()))
    work = tmp_path / "scratch" / "work"
    work.mkdir(parents=True)
    answers = []
    start = threading.Barrier(2)

    def check():
        start.wait()
        answers.append(judge.check(combo, work, "new", cache=True).status)
    threads = [threading.Thread(target=check) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert answers == [0, 0]
    # the lock lies beside the directory, in the run's scratch
    assert sorted(p.name for p in work.parent.iterdir()) == \
        ["work", "work.check-lock"]
