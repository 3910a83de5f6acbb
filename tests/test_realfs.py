"""harness/engine/realfs.py: power loss judged on a real kernel (--fs),
and make validate-models (harness/engine/validate.py) on a small corpus.

The tests that mount need root, loop devices, the filesystem in the
kernel and its mkfs: each skips with the reason where one is missing
(realfs.check, then a real mount in a private namespace). The rest runs
everywhere."""

import json
import os
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from harness.engine import realfs

ROOT = Path(__file__).resolve().parent.parent
CRASHCHECK = ROOT / "scripts" / "crashcheck"
VALIDATE = ROOT / "scripts" / "validate-models"
PROGS = ROOT / "tests" / "progs"
PY = "/usr/bin/python3"

_reasons = {}


def mount_reason(fs):
    """Why FS cannot be loop-mounted here ("" when it can): checked once,
    by mounting a blank image in a process of its own (its own mount
    namespace, which goes with it)."""
    if fs not in _reasons:
        try:
            realfs.check(fs)
        except realfs.Unavailable as e:
            _reasons[fs] = e.reason
            return _reasons[fs]
        probe = (
            "import os, sys, tempfile\n"
            f"sys.path.insert(0, {str(ROOT)!r})\n"
            "from harness.engine import realfs\n"
            "realfs.private_namespace()\n"
            "d = tempfile.mkdtemp(dir='/dev/shm' if os.path.isdir('/dev/shm') else None)\n"
            "try:\n"
            f"    imgs = realfs.Images(d + '/i', {fs!r})\n"
            "    p = imgs.pristine('probe', lambda w: None)\n"
            "    os.mkdir(d + '/s')\n"
            f"    with realfs.Disk({fs!r}, p, d + '/s', d + '/s/work') as disk:\n"
            "        disk.crash()\n"
            "finally:\n"
            "    import shutil; shutil.rmtree(d, ignore_errors=True)\n")
        proc = subprocess.run([PY, "-c", probe], capture_output=True,
                              text=True, timeout=120)
        _reasons[fs] = "" if proc.returncode == 0 else (
            f"cannot loop-mount {fs} here: "
            + (proc.stderr.strip().splitlines() or ["?"])[-1])
    return _reasons[fs]


def need(fs):
    reason = mount_reason(fs)
    if reason:
        pytest.skip(reason)


def cli(*args, cwd=None, timeout=600):
    return subprocess.run([str(CRASHCHECK), *map(str, args)],
                          capture_output=True, text=True, cwd=cwd,
                          timeout=timeout)


@pytest.fixture(scope="module")
def renamer(tmp_path_factory):
    """tests/progs/renamer.c (see its header), built with -g."""
    out = tmp_path_factory.mktemp("realfs-progs") / "renamer"
    proc = subprocess.run(["cc", "-O0", "-g", "-Wall", "-o", str(out),
                           str(PROGS / "renamer.c")],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.fail(f"cc renamer.c failed:\n{proc.stderr}")
    return out


@pytest.fixture
def contents(tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    old.write_bytes(b"the old settings\n" * 300)
    new.write_bytes(b"the new settings\n" * 300)
    return old, new


def results(out):
    """results.json's cases, by id."""
    with open(out / "results.json") as fh:
        return {c["id"]: c for c in json.load(fh)["cases"]}


# ------------------------------------------------------------ everywhere

def test_model_names_name_their_filesystem():
    assert realfs.model_of("ext4") == "ext4-real"
    assert realfs.fs_of("xfs-real") == "xfs"
    assert realfs.fs_of("ext4-ordered") is None
    assert realfs.fs_of("zfs-real") is None
    assert realfs.MODELS == ("ext4-real", "xfs-real", "btrfs-real")


def test_copy_image_keeps_the_data_and_the_holes(tmp_path):
    src = tmp_path / "src"
    with open(src, "wb") as fh:
        fh.truncate(64 << 20)
        fh.seek(1 << 20)
        fh.write(b"x" * 8192)
        fh.seek(40 << 20)
        fh.write(b"y" * 100)
    dst = tmp_path / "dst"
    realfs.copy_image(src, dst)
    assert dst.read_bytes() == src.read_bytes()
    # a copy of what the file holds, not of its 64 MiB
    assert os.stat(dst).st_blocks * 512 < 1 << 20


def test_dig_holes_leaves_the_same_bytes_in_fewer_blocks(tmp_path):
    f = tmp_path / "img"
    data = bytes(1 << 20) + b"z" * 5000 + bytes(1 << 20)
    f.write_bytes(data)
    before = os.stat(f).st_blocks
    realfs.dig_holes(f)
    assert f.read_bytes() == data
    assert os.stat(f).st_blocks < before / 4


def test_read_tree_and_its_key(tmp_path):
    top = tmp_path / "t"
    (top / "d" / "e").mkdir(parents=True)
    (top / "a").write_bytes(b"1")
    (top / "d" / "b").write_bytes(b"22")
    os.symlink("a", top / "l")
    os.mkfifo(top / "fifo")
    files, dirs, links = realfs.read_tree(top)
    assert files == {"a": b"1", "d/b": b"22"}
    assert dirs == ["d", "d/e"]
    assert links == {"l": "a"}
    other = dict(files, a=b"2")
    assert realfs.tree_key(files, dirs, links) != \
        realfs.tree_key(other, dirs, links)
    assert realfs.tree_digest(files, dirs, links) == \
        realfs.tree_digest(dict(files), list(dirs), dict(links))


def test_differences_say_what_did_not_persist():
    seen = ({"target": b"new!", "t.tmp": b"x"}, ["d"], {})
    held = ({"target": b"old!"}, [], {"l": "a"})
    why = realfs.differences(seen, held)
    assert "'t.tmp' did not persist" in why
    assert "the directory 'd' did not persist" in why
    assert "'target' holds 4 bytes, 1 of them as written, of the 4 a " \
           "read saw" in why
    assert "'l', gone before the crash, is still there" in why
    assert realfs.differences(seen, seen) == \
        "everything a read saw before the crash persisted"


def test_a_btrfs_copy_is_taken_again_while_the_disk_moves(tmp_path,
                                                         monkeypatch):
    """The Btrfs crash copies the disk while no write is in flight and
    none completes during the copy: a copy during which the device's
    counts moved, or taken with a write in flight, is no crash state,
    and is taken again."""
    image = tmp_path / "disk.img"
    image.write_bytes(b"disk" * 1024)
    readings = iter([((1, 8, 0, 0, 3), 1),    # a write in flight: wait
                     ((1, 8, 0, 0, 3), 0),    # copy ...
                     ((2, 16, 0, 0, 3), 0),   # ... a write completed: again
                     ((2, 16, 0, 0, 3), 0),   # copy ...
                     ((2, 16, 0, 0, 3), 0)])  # ... still: the crash state
    monkeypatch.setattr(realfs, "_loop_stat", lambda dev: next(readings))
    copies = []
    real_copy = realfs.copy_image
    monkeypatch.setattr(realfs, "copy_image",
                        lambda a, b: copies.append(b) or real_copy(a, b))
    mounted = []

    class Quiet(realfs.Disk):
        def _unmount_all(self):
            pass

        def _attach_mount(self, image):
            mounted.append(image)
    disk = Quiet("btrfs", image, tmp_path, tmp_path / "work")
    disk.image, disk.dev = str(image), "/dev/loop-test"
    disk._crash_copy()
    assert len(copies) == 2
    assert mounted == [str(tmp_path / realfs.CRASH_IMAGE)]
    assert (tmp_path / realfs.CRASH_IMAGE).read_bytes() == image.read_bytes()
    with pytest.raises(StopIteration):
        next(readings)

    # a disk that never stands still is the case's harness-error
    monkeypatch.setattr(realfs, "_loop_stat", lambda dev: ((0,) * 5, 1))
    with pytest.raises(realfs.RealFsError, match="never stood still"):
        disk._crash_copy(tries=5)


def test_companion_model_falls_back_to_posix():
    assert realfs.companion("ext4", ("posix", "ext4-ordered")) == "ext4-ordered"
    assert realfs.companion("xfs", ("posix", "ext4-ordered")) == "posix"


def test_unknown_filesystem_is_one_line(tmp_path, renamer, contents):
    old, new = contents
    proc = cli("audit", "--fs", "zfs", "--old", old, "--new", new,
               "--out", tmp_path / "out", "--", renamer, "{target}", "{new}")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--fs: invalid choice: 'zfs'" in lines[0]
    assert not (tmp_path / "out").exists()


def test_not_root_is_refused_in_one_line(renamer, contents):
    """Mounting needs root: --fs as any other user is one line, exit 2,
    and nothing is written."""
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("setpriv is needed to run as another user")
        as_user = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
    else:
        as_user = []
    import tempfile
    # somewhere the other user reaches (pytest's tmp_path is root's alone)
    box = Path(tempfile.mkdtemp(prefix="crashcheck-test-"))
    try:
        box.chmod(0o777)
        for f in (*contents, renamer):
            shutil.copy(f, box / f.name)
            (box / f.name).chmod(0o755)
        out = box / "out"
        proc = subprocess.run(
            as_user + [str(CRASHCHECK), "audit", "--fs", "ext4", "--old",
                       str(box / "old"), "--new", str(box / "new"), "--out",
                       str(out), "--", str(box / "renamer"), "{target}",
                       "{new}"],
            capture_output=True, text=True, timeout=120,
            env=dict(os.environ, HOME=str(box)))
        assert proc.returncode == 2, proc.stderr
        uid = 65534 if os.geteuid() == 0 else os.geteuid()
        assert proc.stderr == (f"crashcheck: --fs ext4: needs root to mount "
                               f"a loop device (running as uid {uid})\n")
        assert not out.exists()
    finally:
        shutil.rmtree(box, ignore_errors=True)


def test_validate_models_refuses_bad_arguments(tmp_path):
    for args, said in ((["--fs", "zfs"], "--fs: unknown configuration 'zfs'"),
                       (["--variations", "twice"], "--variations: unknown 'twice'"),
                       (["--jobs", "0"], "--jobs: '0' is not a positive number"),
                       (["--bogus"], "unknown argument '--bogus'")):
        proc = subprocess.run([str(VALIDATE), *args, "--out", str(tmp_path / "o")],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2, args
        assert proc.stderr.count("\n") == 1 and said in proc.stderr, proc.stderr
        assert not (tmp_path / "o").exists()


# ------------------------------------------------------------ real kernels

@pytest.mark.parametrize("fs", realfs.FILESYSTEMS)
def test_audit_finds_the_missing_directory_fsync(fs, tmp_path, renamer,
                                                 contents):
    """A writer that fsyncs its temp file, renames it over the target
    and exits without syncing the directory: the real kernel, cut off
    after the exit, brings back the old file. The same writer with the
    directory fsync passes at every crash point."""
    need(fs)
    old, new = contents
    out = tmp_path / "bad"
    proc = cli("audit", "--fs", fs, "--faults", "powerloss", "--old", old,
               "--new", new, "--out", out, "--", renamer, "--no-dir-fsync",
               "{target}", "{new}")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    cases = results(out)
    exit_case = cases[f"renamer-powerloss@exit-{fs}-real"]
    assert exit_case["verdict"] == "not-durable"
    assert exit_case["model"] == f"{fs}-real"
    assert "found the old content" in exit_case["finding"]
    assert f"--fs {fs}" in exit_case["reproduce"]
    assert f"the real {fs} state" in exit_case["finding"]
    readme = (out.parent / exit_case["dir"] / "README.txt").read_text()
    assert "a real kernel state" in readme
    # before the rename the old file is there, and after it old or new
    real = [c for c in cases.values() if c["model"] == f"{fs}-real"]
    assert len(real) >= 5
    assert all(c["verdict"] == "ok" for c in real if c is not exit_case)

    out = tmp_path / "good"
    proc = cli("audit", "--fs", fs, "--faults", "powerloss", "--old", old,
               "--new", new, "--out", out, "--", renamer, "{target}", "{new}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    real = [c for c in results(out).values() if c["model"] == f"{fs}-real"]
    assert len(real) >= 7 and all(c["verdict"] == "ok" for c in real)


def test_a_real_case_is_aimed_by_its_call_not_its_seq(tmp_path, contents):
    """A shell whose number of calls before the write varies from run to
    run (opens of /dev/null, by its pid): the real case's run stops at the
    same call on the target at another seq, and is judged, not a
    harness-error."""
    need("ext4")
    old, new = contents
    out = tmp_path / "out"
    proc = cli("audit", "--fs", "ext4", "--faults", "powerloss", "--old", old,
               "--new", new, "--out", out, "--", "/bin/sh", "-c",
               'n=$(($$ % 4)); while [ "$n" -gt 0 ]; do : >/dev/null; '
               'n=$((n - 1)); done; cat {new} >{target}.tmp && '
               'mv {target}.tmp {target}')
    assert proc.returncode == 1, proc.stdout + proc.stderr
    real = [c for c in results(out).values() if c["model"] == "ext4-real"]
    assert len(real) >= 4
    assert not [c["id"] for c in real if c["verdict"] == "harness-error"], \
        [c["finding"] for c in real]
    # nothing synced: the program's claim does not survive a power cut
    assert any(c["verdict"] == "not-durable" for c in real)


def test_every_fault_case_runs_on_the_filesystem(tmp_path, renamer, contents):
    """With --fs every run is on the filesystem: the fault cases of the
    careful writer pass there as they do in the scratch, and a run's
    left files are judged (the copy out of the image)."""
    need("ext4")
    old, new = contents
    out = tmp_path / "out"
    proc = cli("audit", "--fs", "ext4", "--faults", "baseline,eio,crash",
               "--old", old, "--new", new, "--out", out, "--", renamer,
               "{target}", "{new}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cases = results(out)
    assert any(c["kind"] == "eio" for c in cases.values())
    assert all(c["verdict"] == "ok" for c in cases.values())
    assert "real kernel" in (out / "report.md").read_text()


def test_replay_runs_a_real_case_on_the_kernel_again(tmp_path):
    need("ext4")
    out = tmp_path / "run"
    spec = ROOT / "workloads" / "specs" / "no-dir-fsync.toml"
    proc = cli("run", spec, "--fs", "ext4", "--faults", "powerloss",
               "--out", out)
    case = "no-dir-fsync-sync-4097B-powerloss@exit-ext4-real"
    assert case in proc.stdout, proc.stdout + proc.stderr
    # its reproduce command runs it on ext4 again
    again = results(out)[case]["reproduce"]
    assert again.endswith(" --fs ext4"), again
    proc = subprocess.run(shlex.split(again) + ["--out", str(tmp_path / "again")],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1 and f"FINDING {case}: not-durable" in proc.stdout, \
        proc.stdout + proc.stderr
    dest = tmp_path / "replay"
    proc = cli("replay", case, "--results", out / "results.json",
               "--out", dest)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{case}: not-durable" in proc.stdout
    readme = (dest / "README.txt").read_text()
    assert "a real kernel state, what the ext4 filesystem held" in readme
    assert (dest / "state" / "target").is_file()


def _our_loops(under):
    """Loop devices whose backing file lies under UNDER."""
    found = []
    for d in Path("/sys/block").glob("loop*"):
        try:
            backing = (d / "loop" / "backing_file").read_text().strip()
        except OSError:
            continue
        if backing.startswith(str(under) + "/"):
            found.append(d.name)
    return found


def test_a_killed_sweep_leaks_no_loop_device_and_no_mount(tmp_path, contents):
    """crashcheck killed with SIGKILL while a run sits on its loop-mounted
    filesystem: its mounts were never seen outside its processes, and
    once they are gone (the pool and the program die with it, the
    watchdog kills the rest) no loop device and no scratch is left."""
    need("ext4")
    old, new = contents
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    proc = subprocess.Popen(
        [str(CRASHCHECK), "audit", "--fs", "ext4", "--faults", "powerloss",
         "--scratch", str(scratch), "--timeout", "60", "--old", str(old),
         "--new", str(new), "--out", str(tmp_path / "out"), "--",
         "/bin/sh", "-c", "cat {new} > {target} && sleep 30"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)
    try:
        # the baseline's run sleeps on its filesystem, mounted in
        # crashcheck's namespace and not in ours
        deadline = time.monotonic() + 60
        while str(scratch) not in open(f"/proc/{proc.pid}/mountinfo").read():
            assert proc.poll() is None, "crashcheck ended before it mounted"
            assert time.monotonic() < deadline, "no mount in 60 s"
            time.sleep(0.05)
        assert _our_loops(scratch)
        assert str(scratch) not in open("/proc/self/mountinfo").read()
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    deadline = time.monotonic() + 60
    while _our_loops(scratch) or any(scratch.iterdir()):
        assert time.monotonic() < deadline, (
            f"left behind: loop devices {_our_loops(scratch)}, scratch "
            f"{sorted(p.name for p in scratch.iterdir())}")
        time.sleep(0.2)


SMALL = """
name = "fsops-small"
description = "three roads of fsops, for the validation's own test"
command = ["{bin}/fsops", "{strategy}", "{target}", "{new}"]
strategies = ["rename-over", "tmpfile", "exchange"]
contract = "in-place"
sizes = [4097]
old = "payload"
timeout = 10
"""


def test_validation_is_sound_on_a_small_corpus(tmp_path):
    """The models hold every state real ext4 and XFS leave for a handful
    of programs, plain and pushed forward; the report counts them."""
    need("ext4")
    need("xfs")
    spec = tmp_path / "small.toml"
    spec.write_text(SMALL)
    out = tmp_path / "v"
    proc = subprocess.run(
        [str(VALIDATE), "--fs", "ext4,xfs", "--spec", str(spec),
         "--spec", str(ROOT / "workloads" / "specs" / "no-dir-fsync.toml"),
         "--out", str(out)], capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((out / "validate.json").read_text())
    rows = {(r["config"], r["model"]): r for r in summary["rows"]}
    ordered = rows[("ext4", "ext4-ordered")]
    assert ordered["points"] > 20
    assert ordered["states"] == 3 * ordered["points"]
    assert ordered["admitted"] + ordered["undecided"] == ordered["states"]
    assert not ordered["unsound"]
    assert not summary["missed"] and not summary["errors"]
    assert rows[("xfs", "posix")]["states"] > 0
    assert "UNSOUND" not in proc.stdout


def patched_validation(script, out):
    """scripts/validate-models as SCRIPT patches it, on ext4 alone, plain,
    over no-dir-fsync.toml into OUT: the small run the tests of how the
    validator fails use."""
    return subprocess.run(
        [PY, "-c", script.format(root=str(ROOT)), "--fs", "ext4",
         "--variations", "plain",
         "--spec", str(ROOT / "workloads" / "specs" / "no-dir-fsync.toml"),
         "--out", str(out)], capture_output=True, text=True, timeout=900)


BOLD = """
import sys
sys.path.insert(0, {root!r})
from harness.judging import explorer
# a model that claims too much: whatever a read saw is durable at exit
explorer._World.exit = lambda self: self._sync_all()
from harness.engine import validate
sys.exit(validate.main(sys.argv[1:]))
"""


def test_validation_catches_a_model_that_claims_too_much(tmp_path):
    """A posix that makes everything durable at exit is refuted by the
    real ext4: after a rename nothing synced, the kernel keeps the old
    name, and the validator says which file the model got wrong."""
    need("ext4")
    out = tmp_path / "v"
    proc = patched_validation(BOLD, out)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    # the explorer's reason (explorer.admits) names the file it got wrong
    assert "UNSOUND posix on ext4: no-dir-fsync-sync-4097B @exit (plain): " \
           "'target': the file made during the run" in proc.stdout, proc.stdout
    kept = out / "unsound" / "ext4-no-dir-fsync-sync-4097B@exit-plain"
    assert (kept / "trace.jsonl").is_file()
    assert (kept / "state" / "target").is_file()
    assert "model:       posix" in (kept / "README.txt").read_text()


CUT = """
import dataclasses, sys
sys.path.insert(0, {root!r})
from harness.engine import execute, validate
real = execute.execute_run
def cut_units(combo, plan, scratch, timeout, **kw):
    # a unit's run (crashed, unsnapshotted), not a baseline: a trace
    # limit it goes past
    if kw.get("crash") and not kw.get("record", True):
        kw["settings"] = dataclasses.replace(kw["settings"], trace_limit=300)
    return real(combo, plan, scratch, timeout, **kw)
execute.execute_run = cut_units
sys.exit(validate.main(sys.argv[1:]))
"""


def test_a_unit_whose_trace_was_cut_is_missed_not_judged(tmp_path):
    """A real crash whose run went past the trace limit is not compared
    with the models (where it stopped is not seen): each such unit is
    listed as missed, with the cut's reason, and none is judged."""
    need("ext4")
    out = tmp_path / "v"
    proc = patched_validation(CUT, out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((out / "validate.json").read_text())
    assert summary["missed"] and not summary["errors"]
    for m in summary["missed"]:
        assert "the run's trace was cut" in m["missed"], m
        assert "(--trace-limit)" in m["missed"], m
    assert all(r["states"] == 0 for r in summary["rows"]), summary["rows"]
    assert "missed: ext4 no-dir-fsync-sync-4097B @" in proc.stdout


BROKEN = """
import sys
sys.path.insert(0, {root!r})
from harness.engine import baseline, validate
def broken(*args):
    raise ValueError("a broken baseline")
baseline.record_baseline = broken
sys.exit(validate.main(sys.argv[1:]))
"""


def test_validation_fails_when_a_baseline_raises(tmp_path):
    """A program whose baseline could not be recorded is an error of the
    validation, never a quiet skip: a validator that checked nothing
    must not exit 0."""
    need("ext4")
    proc = patched_validation(BROKEN, tmp_path / "v")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "error: ext4 no-dir-fsync-sync-4097B @baseline: " \
           "ValueError: a broken baseline" in proc.stdout, proc.stdout
