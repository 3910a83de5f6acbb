"""End-to-end tests of the correct workloads, workloads/bin/replace and
workloads/bin/overwrite, with no fault injected.

Every strategy and size runs in a fresh directory (pytest's tmp_path, on a
filesystem where O_DIRECT normally works; exit 77 is a skip with the
program's reason) and must leave exactly the new bytes in the target and no
other file behind. Under strace, each strategy must make the calls
docs/design.md and the article prescribe, in that order. Bad input must
give the documented exit code (1 failure, 2 usage) and one clear line.
"""

import os
import random
import re
import shutil
import subprocess
import tempfile
from functools import lru_cache

import pytest

STRATEGIES = ["stdio", "direct", "sync", "mmap"]
SIZES = [0, 1, 4095, 4096, 4097, 65537, 4 * 1024 * 1024 + 1]
EXIT_SKIP = 77


@lru_cache(maxsize=None)
def content(size, version):
    """Deterministic bytes; versions differ everywhere, so mixes show."""
    return random.Random(size * 4 + version).randbytes(size)


@pytest.fixture(scope="module")
def prog(workloads_bin):
    def path(name):
        p = workloads_bin / name
        if not os.access(p, os.X_OK):
            pytest.fail(f"{p} is not built: run make")
        return str(p)
    return path


def run(argv, cwd=None, env=None):
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, timeout=60)


def one_line(p):
    """The single stderr line of a failed run (asserting there is one)."""
    lines = p.stderr.decode().splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got {len(lines)}: {lines!r}"
    return lines[0]


def skip_if_unsupported(p):
    if p.returncode == EXIT_SKIP:
        pytest.skip(one_line(p))


# --- every strategy, every size ---------------------------------------------

OLD_STATES = {
    "replace": ["longer", "shorter", "absent"],
    "overwrite": ["longer", "shorter"],     # overwrite needs an existing target
}


def old_content(state, size):
    if state == "longer":
        return content(size + 4097, 1)
    if state == "shorter":
        return content(size // 2, 1)
    return None


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("workload,old", [(w, o) for w in OLD_STATES for o in OLD_STATES[w]])
def test_new_content_exactly(prog, tmp_path, workload, old, strategy, size):
    target, new = tmp_path / "target", tmp_path / "new"
    want = content(size, 2)
    new.write_bytes(want)
    before = old_content(old, size)
    if before is not None:
        target.write_bytes(before)

    p = run([prog(workload), f"--strategy={strategy}", str(target), str(new)])
    skip_if_unsupported(p)
    assert p.returncode == 0, f"exit {p.returncode}: {p.stderr.decode()!r}"
    assert p.stderr == b""
    got = target.read_bytes()
    assert len(got) == size, f"expected {size} bytes, found {len(got)}"
    if got != want:
        at = next(i for i in range(size) if got[i] != want[i])
        pytest.fail(f"expected the new content, first difference at byte {at}: "
                    f"{got[at]:#04x} where {want[at]:#04x} expected")
    assert sorted(x.name for x in tmp_path.iterdir()) == ["new", "target"]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_relative_paths_in_cwd(prog, tmp_path, strategy):
    """A bare TARGET name: the temp file and the directory fsync use '.'."""
    (tmp_path / "new").write_bytes(content(5000, 2))
    (tmp_path / "t").write_bytes(content(10, 1))
    p = run([prog("replace"), "--strategy", strategy, "t", "new"], cwd=tmp_path)
    skip_if_unsupported(p)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "t").read_bytes() == content(5000, 2)
    assert sorted(x.name for x in tmp_path.iterdir()) == ["new", "t"]


@pytest.mark.parametrize("workload", ["replace", "overwrite"])
def test_direct_on_dev_shm(prog, workload):
    """tmpfs either takes O_DIRECT (Linux 6.6+) or refuses it at open: then
    exit 77 with the documented line and nothing left behind."""
    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm here")
    d = tempfile.mkdtemp(dir="/dev/shm", prefix="crashcheck-test.")
    try:
        target, new = os.path.join(d, "target"), os.path.join(d, "new")
        with open(new, "wb") as f:
            f.write(content(4097, 2))
        with open(target, "wb") as f:
            f.write(content(9000, 1))
        p = run([prog(workload), "--strategy=direct", target, new])
        if p.returncode == EXIT_SKIP:
            want_path = target + ".tmp" if workload == "replace" else target
            assert one_line(p) == \
                f"{workload}: O_DIRECT unsupported on this filesystem: '{want_path}'"
            with open(target, "rb") as f:
                assert f.read() == content(9000, 1)
        else:
            assert p.returncode == 0, p.stderr
            with open(target, "rb") as f:
                assert f.read() == content(4097, 2)
        assert sorted(os.listdir(d)) == ["new", "target"]
    finally:
        shutil.rmtree(d)


# --- the calls each strategy makes, in order (strace) ------------------------

# What the article and lib/put.c promise, per strategy, for a non-empty
# payload. "tmp" is TARGET.tmp, "dir" TARGET's directory; consecutive
# writes are merged (a write may be split by the kernel or by stdio).
REPLACE_CALLS = {
    "stdio": ["open tmp O_EXCL", "write tmp", "fsync tmp", "close tmp"],
    "direct": ["open tmp O_EXCL|O_DIRECT", "write tmp", "ftruncate tmp",
               "fsync tmp", "close tmp"],
    "sync": ["open tmp O_EXCL|O_DSYNC", "write tmp", "close tmp"],
    "mmap": ["open tmp O_EXCL", "fallocate tmp", "mmap tmp", "msync", "munmap",
             "fsync tmp", "close tmp"],
}
DIR_SYNC = ["rename tmp target", "open dir O_DIRECTORY", "fsync dir", "close dir"]
OVERWRITE_CALLS = {
    "stdio": ["open target", "write target", "ftruncate target", "fsync target",
              "close target"],
    "direct": ["open target O_DIRECT", "write target", "ftruncate target",
               "fsync target", "close target"],
    "sync": ["open target O_DSYNC", "write target", "ftruncate target",
             "fdatasync target", "close target"],
    "mmap": ["open target", "fallocate target", "mmap target", "msync", "munmap",
             "ftruncate target", "fsync target", "close target"],
}
TRACED = "openat,open,write,pwrite64,fsync,fdatasync,rename,renameat,renameat2," \
         "ftruncate,fallocate,mmap,msync,munmap,close"
LINE = re.compile(r"^(\w+)\((.*)\)\s+= (\S+)")


def calls_seen(log, d):
    """The calls on files in d, as "call who [flags]" strings."""
    names = {f"{d}/target.tmp": "tmp", f"{d}/target": "target", d: "dir"}
    out, maps = [], set()
    for raw in log.splitlines():
        m = LINE.match(raw)
        if not m:
            continue
        call, args, ret = m.groups()
        call = {"openat": "open", "renameat": "rename", "renameat2": "rename",
                "pwrite64": "write"}.get(call, call)
        paths = [p for p in re.findall(r'<([^<>]*)>|"([^"]*)"', args) for p in p if p]
        who = [names[p] for p in paths if p in names]
        if call in ("msync", "munmap"):
            if args.split(",")[0] in maps:
                out.append(call)
            continue
        if not who or call == "open" and paths and paths[-1] not in names:
            continue
        if call == "mmap":
            maps.add(ret)
        if call == "open":
            want = ("O_EXCL", "O_DIRECT", "O_DSYNC", "O_DIRECTORY")
            flags = "|".join(f for f in want if re.search(rf"\b{f}\b", args))
            entry = f"open {who[-1]}" + (f" {flags}" if flags else "")
        elif call == "rename":
            entry = "rename " + " ".join(who)
        else:
            entry = f"{call} {who[0]}"
        if not (out and entry == out[-1] and call == "write"):
            out.append(entry)
    return out


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("workload", ["replace", "overwrite"])
def test_call_sequence(prog, tmp_path, workload, strategy):
    strace = shutil.which("strace")
    if not strace:
        pytest.skip("strace not installed")
    d = str(tmp_path)
    target, new, log = f"{d}/target", f"{d}/new", str(tmp_path.parent / f"{tmp_path.name}.strace")
    with open(new, "wb") as f:
        f.write(content(65537, 2))
    with open(target, "wb") as f:
        f.write(content(100000, 1))
    # LeakSanitizer cannot run under ptrace: a SANITIZE= build would abort.
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0")
    p = run([strace, "-qq", "-y", "-o", log, f"-etrace={TRACED}",
             prog(workload), f"--strategy={strategy}", target, new], cwd="/", env=env)
    if p.returncode != 0 and b"ptrace" in p.stderr:
        pytest.skip(f"strace cannot trace here: {one_line(p)}")
    skip_if_unsupported(p)
    assert p.returncode == 0, p.stderr
    with open(log) as f:
        seen = calls_seen(f.read(), d)
    if workload == "replace":
        want = REPLACE_CALLS[strategy] + DIR_SYNC
    else:
        want = OVERWRITE_CALLS[strategy]
    assert seen == want


# --- bad input -------------------------------------------------------------

@pytest.mark.parametrize("workload", ["replace", "overwrite"])
def test_missing_newfile_is_exit_1(prog, tmp_path, workload):
    target = tmp_path / "target"
    target.write_bytes(b"old")
    missing = tmp_path / "no-such-file"
    p = run([prog(workload), "--strategy=stdio", str(target), str(missing)])
    assert p.returncode == 1
    assert one_line(p) == f"{workload}: open '{missing}': No such file or directory"
    assert target.read_bytes() == b"old"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["target"]


@pytest.mark.parametrize("workload", ["replace", "overwrite"])
@pytest.mark.parametrize("argv,problem", [
    (["--strategy=bogus", "T", "N"],
     "unknown strategy 'bogus' (expected stdio, direct, sync or mmap)"),
    (["--strategy=", "T", "N"], "unknown strategy '' (expected stdio, direct, sync or mmap)"),
    (["T", "N"], "missing --strategy"),
    (["--strategy=sync"], "missing TARGET and NEWFILE"),
    (["--strategy=sync", "T"], "missing NEWFILE"),
    (["--strategy=sync", "T", "N", "X"], "unexpected argument 'X'"),
    (["--strategy"], "--strategy needs a value"),
    (["--force", "--strategy=sync", "T", "N"], "unknown option '--force'"),
    (["--strategy=sync", "", "N"], "TARGET is an empty string"),
])
def test_usage_errors_are_exit_2(prog, tmp_path, workload, argv, problem):
    p = run([prog(workload)] + argv, cwd=tmp_path)
    assert p.returncode == 2
    assert one_line(p).startswith(f"{workload}: {problem}")
    assert list(tmp_path.iterdir()) == []


def test_help_is_exit_0(prog):
    p = run([prog("replace"), "--help"])
    assert p.returncode == 0
    assert p.stdout.decode() == \
        "usage: replace --strategy=stdio|direct|sync|mmap TARGET NEWFILE\n"


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("workload", ["replace", "overwrite"])
def test_target_in_missing_directory_is_exit_1(prog, tmp_path, workload, strategy):
    new = tmp_path / "new"
    new.write_bytes(content(4096, 2))
    target = tmp_path / "no-such-dir" / "target"
    p = run([prog(workload), f"--strategy={strategy}", str(target), str(new)])
    assert p.returncode == 1
    opened = f"{target}.tmp" if workload == "replace" else str(target)
    call = "fopen" if strategy == "stdio" else "open"
    assert one_line(p) == f"{workload}: {call} '{opened}': No such file or directory"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["new"]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_stale_temp_file_blocks_replace(prog, tmp_path, strategy):
    """O_EXCL: a temp file that is not ours is reported, not reused, not removed."""
    target, new, tmp = tmp_path / "target", tmp_path / "new", tmp_path / "target.tmp"
    target.write_bytes(b"old")
    new.write_bytes(b"new")
    tmp.write_bytes(b"not ours")
    p = run([prog("replace"), f"--strategy={strategy}", str(target), str(new)])
    assert p.returncode == 1
    call = "fopen" if strategy == "stdio" else "open"
    assert one_line(p) == f"replace: {call} '{tmp}': File exists"
    assert target.read_bytes() == b"old"
    assert tmp.read_bytes() == b"not ours"


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_target_is_a_directory(prog, tmp_path, strategy):
    """rename over a directory fails after the temp file is complete: it must go."""
    target, new = tmp_path / "target", tmp_path / "new"
    target.mkdir()
    new.write_bytes(b"new")
    p = run([prog("replace"), f"--strategy={strategy}", str(target), str(new)])
    skip_if_unsupported(p)
    assert p.returncode == 1
    assert one_line(p) == \
        f"replace: rename '{target}.tmp' to '{target}': Is a directory"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["new", "target"]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_unwritable_directory(prog, strategy):
    """The temp file cannot be created: exit 1, target untouched. Root
    ignores directory permissions, so as root the program runs as nobody
    (setpriv), in a directory nobody can traverse."""
    argv0 = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if not setpriv:
            pytest.skip("running as root and setpriv is not installed")
        argv0 = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
    top = tempfile.mkdtemp(prefix="crashcheck-test.")
    try:
        os.chmod(top, 0o755)
        d = os.path.join(top, "ro")
        os.mkdir(d)
        target, new = os.path.join(d, "target"), os.path.join(top, "new")
        for path, data in ((target, b"old"), (new, b"new")):
            with open(path, "wb") as f:
                f.write(data)
            os.chmod(path, 0o644)
        os.chmod(d, 0o555)
        p = run(argv0 + [prog("replace"), f"--strategy={strategy}", target, new])
        assert p.returncode == 1, p.stderr
        call = "fopen" if strategy == "stdio" else "open"
        assert one_line(p) == f"replace: {call} '{target}.tmp': Permission denied"
        with open(target, "rb") as f:
            assert f.read() == b"old"
        assert os.listdir(d) == ["target"]
    finally:
        os.chmod(os.path.join(top, "ro"), 0o755)
        shutil.rmtree(top)


@pytest.mark.parametrize("workload", ["replace", "overwrite"])
def test_directory_component_is_a_file(prog, tmp_path, workload):
    new = tmp_path / "new"
    new.write_bytes(b"new")
    target = tmp_path / "new" / "target"
    p = run([prog(workload), "--strategy=mmap", str(target), str(new)])
    assert p.returncode == 1
    opened = f"{target}.tmp" if workload == "replace" else str(target)
    assert one_line(p) == f"{workload}: open '{opened}': Not a directory"
    assert new.read_bytes() == b"new"


def test_overwrite_needs_existing_target(prog, tmp_path):
    new = tmp_path / "new"
    new.write_bytes(b"new")
    p = run([prog("overwrite"), "--strategy=sync", str(tmp_path / "target"), str(new)])
    assert p.returncode == 1
    assert one_line(p) == \
        f"overwrite: open '{tmp_path / 'target'}': No such file or directory"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["new"]
