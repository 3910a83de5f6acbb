"""StateDir (harness/engine/statedir.py): crash states laid out one after
another in one directory hold, each time, exactly the tree
explorer.layout writes into an empty one, whatever the checker did in
the directory between two states."""

import hashlib
import os
import random

import pytest

from harness.engine.statedir import StateDir
from harness.judging.explorer import ExplorerError, layout
from harness.judging.powerloss.state import CrashState


class Recipe:
    def __init__(self, data):
        self.data = data

    def build(self):
        return self.data


def state(files, dirs=(), links=None):
    """A CrashState of FILES {path: bytes}, DIRS and LINKS, keyed as the
    explorer keys one (path, content digest)."""
    key = tuple((p, hashlib.blake2b(d, digest_size=16).digest())
                for p, d in sorted(files.items()))
    return CrashState("state 1", {p: Recipe(d) for p, d in files.items()},
                      "target", "", "", [], [], key, dirs, links or {})


def tree(top):
    """{path: ("d",) | ("f", bytes, mode) | ("l", target)} of TOP."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(top):
        rel = os.path.relpath(dirpath, top)
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            key = os.path.normpath(os.path.join(rel, name))
            if os.path.islink(path):
                out[key] = ("l", os.readlink(path))
            elif os.path.isdir(path):
                out[key] = ("d",)
            else:
                with open(path, "rb") as fh:
                    out[key] = ("f", fh.read(), os.stat(path).st_mode)
    return out


def fresh(tmp_path, st):
    d = tmp_path / f"fresh{random.random()}"
    layout(st, d)
    return tree(d)


def sd_in(tmp_path):
    made = []

    def make():
        made.append(tmp_path / f"sd{len(made)}")
        made[-1].mkdir()
        return made[-1]
    return StateDir(make), made


GIT_LIKE = {
    "README": b"old\n",
    "src/main.c": b"int main;\n",
    ".git/HEAD": b"ref: refs/heads/main\n",
    ".git/index": b"index one",
    ".git/refs/heads/main": b"1111\n",
    ".git/objects/aa/bbbb": b"object",
}
GIT_DIRS = (".git", ".git/objects", ".git/objects/aa", ".git/refs",
            ".git/refs/heads", "src")


def test_states_in_turn_are_each_laid_whole(tmp_path):
    sd, made = sd_in(tmp_path)
    a = state(GIT_LIKE, GIT_DIRS)
    b = state(dict(GIT_LIKE, **{".git/index": b"index two",
                                ".git/objects/cc/dddd": b"new object"}),
              GIT_DIRS + (".git/objects/cc",))
    c = state({k: v for k, v in GIT_LIKE.items() if "objects" not in k},
              tuple(d for d in GIT_DIRS if "objects" not in d),
              {"link": "README"})
    for st in (a, b, c, a, b, a):
        path = sd.lay(st)
        assert tree(path) == fresh(tmp_path, st)
    assert len(made) == 1           # one directory, changed in place
    assert sd.kept > sd.rewritten   # most files stayed as they were
    sd.close()
    assert not made[0].exists()


def checker_acts(path, rng):
    """One of the things a checker may do to a state's directory."""
    entries = []
    for dirpath, dirnames, filenames in os.walk(path):
        for name in dirnames + filenames:
            entries.append(os.path.join(dirpath, name))
    victim = rng.choice(entries) if entries else None
    act = rng.randrange(9)
    if act == 0 and victim and os.path.isfile(victim) \
            and not os.path.islink(victim):
        with open(victim, "r+b") as fh:     # rewritten in place, same size
            data = fh.read()
            fh.seek(0)
            fh.write(bytes(b ^ 1 for b in data))
    elif act == 1 and victim and os.path.isfile(victim):
        tmp = victim + ".lock"              # written aside, renamed over
        with open(tmp, "wb") as fh:
            fh.write(b"rewritten")
        os.rename(tmp, victim)
    elif act == 2:
        with open(os.path.join(path, ".git", "index.lock")
                  if os.path.isdir(os.path.join(path, ".git"))
                  else os.path.join(path, "left"), "wb") as fh:
            fh.write(b"left behind")
    elif act == 3 and victim:
        if os.path.isdir(victim) and not os.path.islink(victim):
            os.makedirs(os.path.join(victim, "new", "deeper"))
        else:
            os.unlink(victim)
    elif act == 4 and victim and os.path.isdir(victim) \
            and not os.path.islink(victim):
        import shutil
        shutil.rmtree(victim)
        with open(victim, "wb") as fh:      # a directory became a file
            fh.write(b"was a directory")
    elif act == 5 and victim and not os.path.islink(victim):
        os.chmod(victim, 0o500 if os.path.isdir(victim) else 0o400)
    elif act == 6 and victim and os.path.isfile(victim):
        os.unlink(victim)
        os.symlink("/etc/passwd", victim)   # a file became a link
    elif act == 7 and victim and os.path.isfile(victim):
        os.link(victim, os.path.join(path, "hardlink"))
    elif act == 8 and victim and os.path.isfile(victim):
        os.truncate(victim, 0)


@pytest.mark.parametrize("seed", range(6))
def test_whatever_the_checker_did_the_next_state_is_exact(tmp_path, seed):
    rng = random.Random(seed)
    sd, made = sd_in(tmp_path)
    names = ["a", "b", "d/x", "d/y", "d/e/z", ".git/index", ".git/HEAD",
             ".git/objects/aa/1", ".git/objects/bb/2"]
    for _ in range(40):
        files = {n: rng.choice([b"", b"one", b"two", b"three" * 100])
                 for n in names if rng.random() < 0.7}
        dirs = sorted({"/".join(n.split("/")[:i]) for n in files
                       for i in range(1, n.count("/") + 1)})
        links = {"ln": "a"} if rng.random() < 0.3 and "ln" not in files \
            else {}
        st = state(files, dirs, links)
        path = sd.lay(st)
        assert tree(path) == fresh(tmp_path, st)
        for _ in range(rng.randrange(3)):
            checker_acts(path, rng)
    sd.close()


def test_the_directory_removed_or_replaced_is_made_anew(tmp_path):
    import shutil
    sd, made = sd_in(tmp_path)
    st = state(GIT_LIKE, GIT_DIRS)
    path = sd.lay(st)
    shutil.rmtree(path)
    assert tree(sd.lay(st)) == fresh(tmp_path, st)
    assert len(made) == 2


def test_bad_path_is_refused(tmp_path):
    sd, _ = sd_in(tmp_path)
    with pytest.raises(ExplorerError, match="bad path"):
        sd.lay(state({"../escape": b"x"}))


def test_a_forked_process_makes_its_own(tmp_path):
    sd, made = sd_in(tmp_path)
    st = state(GIT_LIKE, GIT_DIRS)
    sd.lay(st)
    pid = os.fork()
    if pid == 0:
        try:
            sd.lay(st)
            sd.close()
            os._exit(0 if len(made) == 2 else 1)
        except BaseException:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert made[0].exists()         # the parent's is still there
    assert tree(sd.lay(st)) == fresh(tmp_path, st)
