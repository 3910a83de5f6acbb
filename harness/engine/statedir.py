"""One directory a process lays crash states out in, one after another.

A checker contract judges thousands of crash states, and the states of
one crash point, or of one case, differ in a few files of a tree of many
(git's: 70 files, of which a state changes the index and an object or
two). Writing each state whole into a new directory and removing it
after cost a sweep as much as the checker did. StateDir keeps one
directory per process and changes in it only what differs from the state
laid out before: the files whose content differs, the entries the new
state lacks or has in addition.

What the checker did in the directory is never trusted: every entry laid
out is remembered with its inode and its change time (lstat's st_ino,
st_ctime_ns, with its size and modification time), and before the next
state each one is looked at again. An entry whose numbers moved (the
checker wrote it, replaced it, renamed it away, changed its mode) is
written again; a directory whose numbers moved (an entry made, removed
or renamed in it) is listed, and what it holds that was not laid out is
removed. The change time is the kernel's, set by any change and never
by a program, so a directory that passes is the tree laid out, byte for
byte: the checker sees what explorer.layout would have written (the
times of unchanged files aside, which no layout fixes either). One
assumption: a change the checker makes is stamped with a time other
than the layout's own. Kernels since 6.13 give a file whose times were
just read (our lstat) a fine-grained stamp at its next change; older
ones stamp by a clock tick of a few milliseconds, and a checker is a
process started after the layout through a confinement view, which
alone takes longer than a tick.
"""

import os
import shutil
import stat
import tempfile

from ..judging.powerloss.state import ExplorerError


def _mark(st):
    """What tells an entry unchanged since lstat gave ST."""
    return (stat.S_IFMT(st.st_mode), st.st_ino, st.st_ctime_ns,
            st.st_mtime_ns, st.st_size)


def _remove(path):
    """Remove PATH, whatever it is; nothing if it is gone."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path)
    else:
        os.unlink(path)


class StateDir:
    """A directory for crash states, reused: lay(state) makes it hold
    STATE's tree (what explorer.layout writes into an empty directory)
    and returns its path. MAKE() gives a new empty directory, on first
    use and whenever the old one cannot be brought back (gone, or not a
    directory). close() removes it."""

    def __init__(self, make):
        self._make = make
        self.path = None
        self.pid = None
        # rel path ("" the directory itself) -> (what it is: "d", "f" or
        # "l", its digest or link text, _mark of its lstat)
        self._placed = {}
        self.rewritten = self.kept = 0      # files, over this dir's life

    def lay(self, state):
        if self.pid != os.getpid():
            # inherited from the process that forked this one: the
            # directory is that process's
            self.path, self._placed, self.pid = None, {}, os.getpid()
        want = self._wanted(state)
        if self.path is None or not self._mend():
            self.close()
            self.path = os.fspath(self._make())
            self._placed = {"": ("d", b"", _mark(os.lstat(self.path)))}
        self._sync(state, want)
        return self.path

    def close(self):
        if self.path is not None and self.pid == os.getpid():
            shutil.rmtree(self.path, ignore_errors=True)
        self.path, self._placed = None, {}

    # ---- what the state wants
    @staticmethod
    def _wanted(state):
        """rel -> ("d"|"f"|"l", digest or link text), with the checks
        explorer.layout makes of a path."""
        want = {}

        def check(rel):
            parts = rel.split("/")
            if not rel or any(p in ("", ".", "..") for p in parts):
                raise ExplorerError(f"layout: bad path {rel!r}")

        for rel in state.dirs:
            check(rel)
            want[rel] = ("d", b"")
        digests = dict(state.key)
        for rel in state._recipes:
            check(rel)
            want[rel] = ("f", digests[rel])
        for rel, target in state.links.items():
            check(rel)
            want[rel] = ("l", os.fsencode(target))
        return want

    def _full(self, rel):
        # REL is checked ('/'-separated, no "", "." or ".." part)
        return f"{self.path}/{rel}" if rel else self.path

    # ---- after the checker: what it changed goes
    def _mend(self):
        """Bring the directory back to what was laid out in it, as far as
        the record goes: an entry changed since is removed and forgotten
        (_sync lays it again), and a directory whose entries changed
        loses those not laid out. False when the directory itself is
        gone or replaced: then it is made anew."""
        try:
            top = _mark(os.lstat(self.path))
        except FileNotFoundError:
            return False
        mark = self._placed[""][2]
        if top[:2] != mark[:2]:
            return False
        moved = {""} if top != mark else set()
        gone = []
        for rel, (kind, _, mark) in self._placed.items():
            if not rel:
                continue
            try:
                now = _mark(os.lstat(self._full(rel)))
            except (FileNotFoundError, NotADirectoryError):
                gone.append(rel)
                continue
            if now == mark:
                continue
            if kind == "d" and now[:2] == mark[:2]:
                moved.add(rel)      # the same directory; its entries moved
            else:
                gone.append(rel)
        for rel in sorted(gone):
            if rel not in self._placed:
                continue            # went with a directory above it
            if self._placed[rel][0] == "d":
                below = rel + "/"
                for sub in [r for r in self._placed if r.startswith(below)]:
                    del self._placed[sub]
                moved = {m for m in moved if not m.startswith(below)}
            del self._placed[rel]
            moved.discard(rel)
            _remove(self._full(rel))
        # a directory whose entries moved: what it holds that was not laid
        # out (or was, and went above) is removed
        for rel in sorted(moved):
            prefix = rel + "/" if rel else ""
            for name in os.listdir(self._full(rel)):
                if prefix + name not in self._placed:
                    _remove(self._full(prefix + name))
        return True

    # ---- the new state
    def _sync(self, state, want):
        placed = self._placed
        # what the new state does not have, or has otherwise: deepest first,
        # so that a directory is empty when it goes
        for rel in sorted((r for r in placed if r), key=lambda r: -r.count("/")):
            if rel not in placed:
                continue        # went with a directory above it
            kind, what, _ = placed[rel]
            if want.get(rel) == (kind, what):
                continue
            path = self._full(rel)
            if kind == "d":
                shutil.rmtree(path)
                below = rel + "/"
                for sub in [r for r in placed if r.startswith(below)]:
                    del placed[sub]
            else:
                os.unlink(path)
            del placed[rel]
        # what is new: directories (parents first), files, links
        for rel in sorted(r for r, (k, _) in want.items() if k == "d"):
            if rel not in placed:
                os.makedirs(self._full(rel), exist_ok=True)
        new = [r for r, (k, _) in want.items() if k == "f" and r not in placed]
        recipes = state._recipes
        for rel in sorted(new):
            with open(self._full(rel), "wb") as f:
                f.write(recipes[rel].build())
        self.rewritten += len(new)
        self.kept += sum(1 for r, (k, _) in want.items()
                         if k == "f" and r in placed)
        for rel in sorted(r for r, (k, _) in want.items() if k == "l"):
            if rel not in placed:
                os.symlink(os.fsdecode(want[rel][1]), self._full(rel))
        # the record: the directories as they are now (their times moved
        # with what was made or removed in them) and what was written; a
        # file kept is as _mend found it
        placed[""] = ("d", b"", _mark(os.lstat(self.path)))
        for rel, (kind, what) in want.items():
            if kind == "d" or rel not in placed:
                placed[rel] = (kind, what, _mark(os.lstat(self._full(rel))))


_mine = {}      # (pid, scratch root) -> StateDir


def in_root(root):
    """This process's StateDir under the scratch directory ROOT (made on
    first use, named state-*; it goes when ROOT is removed)."""
    key = (os.getpid(), os.fspath(root))
    sd = _mine.get(key)
    if sd is None:
        sd = _mine[key] = StateDir(
            lambda: tempfile.mkdtemp(prefix="state-", dir=root))
    return sd
