"""Whether a tree is one of the crash states a model allows at a crash
point, decided from the model's constraints rather than by listing
states (explorer.admits()).

explore() builds at most cap states per point, some of them sampled.
A validator holding a state the real kernel left needs the other
question answered exactly: could the model have given this tree? The
answer is read from the same space explore() draws from (space.Space),
one constraint at a time:

- names: under a journal, the log's changes persist as a prefix, so
  the tree's names must be those of one of its cuts (tried in turn);
  under independent directories, each directory's changes persist on
  their own, so each directory is decided alone, walking its changes
  in order while keeping only the names a later change still touches;
- data: given the names, each file's bytes are checked block by block
  (sector by sector where the model tears blocks) against the durable
  and the visible content, with the size the model lets move.

The set decided is the model's whole set at the point: every state
explore() builds is in it, whatever the cap and the seed. It also
holds two kinds of block explore() does not build, each a page as the
kernel writes it back (measured by make validate-models): the block the
visible content ends inside, zeros past that end; and the block a
shrinking cut ended inside, as written before the cut or zeroed past
it, until the cut commits (replay.Inode.tails).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from ..models import base as policy
from .records import _is_file
from .state import BLOCK, nblocks


@dataclass(frozen=True)
class Verdict:
    """admits()'s answer. admitted: whether some state of the model at
    the point is the tree; reason: when not, what no state can hold,
    one line naming the file, block or name; states: an upper bound on
    the number of distinct states the model allows at the point (every
    choice counted once, those giving the same tree counted apart;
    exact when no two choices give the same tree)."""
    admitted: bool
    reason: str
    states: int

    def __bool__(self):
        return self.admitted


class Tree:
    """An observed tree: FILES {path: bytes}, DIRS (paths), LINKS {path:
    what the link holds}; paths relative to WATCH, '/'-separated."""

    def __init__(self, files, dirs=(), links=None):
        self.files = dict(files)
        self.dirs = set(dirs)
        self.links = dict(links or {})
        # path -> digest of its bytes: the key a file's verdict is kept by
        self.sums = {p: hashlib.blake2b(d, digest_size=16).digest()
                     for p, d in self.files.items()}

    def stray(self):
        """Why no tree can be this one (a path inside something that is
        not one of its directories), or ""."""
        for path in sorted(set(self.files) | self.dirs | set(self.links)):
            parent = path.rpartition("/")[0]
            if parent and parent not in self.dirs:
                return (f"'{path}' lies in '{parent}', which is no "
                        f"directory of the tree")
        return ""

    def names(self, prefix):
        """{name: ("f", bytes) | ("d",) | ("l", target)} directly under
        PREFIX ("" or "a/b/")."""
        out = {}
        for table, kind in ((self.files, "f"), (self.links, "l")):
            for path, v in table.items():
                if path.startswith(prefix) and "/" not in path[len(prefix):]:
                    out[path[len(prefix):]] = (kind, v)
        for path in self.dirs:
            if path.startswith(prefix) and "/" not in path[len(prefix):]:
                out[path[len(prefix):]] = ("d",)
        return out


def decide(space, tree):
    """Verdict for TREE (a Tree) in SPACE (space.Space)."""
    data = _Data(space)
    bound = data.bound() * (len(space.cuts) if space.journal
                            else 2 ** space.m)
    stray = tree.stray()
    if stray:
        return Verdict(False, stray, bound)
    if space.journal:
        ok, reason = _journal(space, tree, data)
    else:
        ok, reason = _Dirs(space, tree, data).solve()
    return Verdict(ok, "" if ok else reason, bound)


# ---------------------------------------------------------------- names

def _describe(kind):
    return {"f": "a file", "d": "a directory", "l": "a symbolic link",
            None: "absent"}[kind]


def _journal(space, tree, data):
    """Try each cut of the log: its names, then each file's bytes."""
    want_files, want_dirs = set(tree.files), tree.dirs
    nearest = None          # (differences, cut, missing, extra)
    data_reason = None
    for c in range(len(space.cuts)):
        _, files, dirs, links = space._dirmap(c)
        have = set(files) | {d + "/" for d in dirs} | {
            f"{p} -> {t}" for p, t in links.items()}
        want = want_files | {d + "/" for d in want_dirs} | {
            f"{p} -> {t}" for p, t in tree.links.items()}
        if have != want:
            diff = len(have ^ want)
            if nearest is None or diff < nearest[0]:
                nearest = (diff, c, sorted(have - want), sorted(want - have))
            continue
        reason = _files_ok(space, data, c, files, tree)
        for chain in space.chains.values():
            chain.trim()        # cuts are walked in order: one image each
        if reason is None:
            return True, ""
        if data_reason is None:
            data_reason = reason
        elif reason not in data_reason:
            data_reason += "; or, with more of the log, " + reason
    if data_reason is not None:
        return False, data_reason
    _, c, missing, extra = nearest
    p, j = space.cuts[c]
    if space.m == 0:
        where = "every state (nothing is pending)"
    else:
        where = (f"the nearest state, the first {p} of the {space.m} "
                 f"pending changes persisted in order"
                 + (f" and {j} block(s) of the next" if j else "") + ",")
    parts = []
    if missing:
        parts.append("has " + ", ".join(f"'{x}'" for x in missing[:4])
                     + ", which the tree lacks")
    if extra:
        parts.append("lacks " + ", ".join(f"'{x}'" for x in extra[:4])
                     + ", which the tree has")
    return False, f"no state has these names: {where} " + "; ".join(parts)


def _files_ok(space, data, c, files, tree):
    """None when every file of the tree can hold its bytes after cut C
    (FILES: path -> inode), else why not."""
    seen = {}
    for path, ino in files.items():
        got = tree.files[path]
        if ino in seen and seen[ino][1] != got:
            return (f"'{path}' and '{seen[ino][0]}' are one file (hard "
                    f"links) but hold different bytes")
        seen[ino] = (path, got)
        reason = data.check(ino, c, got, tree.sums[path])
        if reason is not None:
            return f"'{path}' ({data.what(ino)}): {reason}"
    return None


class _Dirs:
    """Independent directories: each directory's pending changes persist
    on their own, one call's change to one directory whole."""

    def __init__(self, space, tree, data):
        self.space = space
        self.tree = tree
        self.data = data
        self.w = space.w
        self.memo = {}
        self.fails = {}         # path -> [why it cannot hold what it shows]
        self.held = set()       # paths that held it in some branch

    def fail(self, path, reason):
        why = self.fails.setdefault(path, [])
        if reason not in why:
            why.append(reason)
        return False

    def solve(self):
        if self.dir_ok(self.w.root, ""):
            return True, ""
        for path in sorted(self.fails):
            if path not in self.held:
                return False, f"'{path}': " + "; or ".join(self.fails[path])
        return False, ("no state has these names together: each directory's "
                       "pending changes can give each of them, not all at "
                       "once")

    def dir_ok(self, dino, prefix):
        key = (dino, prefix)
        if key not in self.memo:
            self.memo[key] = None       # a directory inside itself: no
            self.memo[key] = self._dir_ok(dino, prefix)
        return bool(self.memo[key])

    def _dir_ok(self, dino, prefix):
        want = self.tree.names(prefix)
        ops = [e for e in self.space.ops if e.dino == dino]
        start = dict(self.w.dur.get(dino) or {})
        last = {}
        for i, e in enumerate(ops):
            for _, name, _, _ in e.actions:
                last[name] = i
        names = set(start) | set(last) | set(want)
        # names no change touches are what they were
        for name in sorted(names - set(last)):
            if not self.value_ok(prefix, name, start.get(name), want):
                return False
        # the others: walk the changes, each persisted or not, keeping
        # only the names a later change still touches
        states = {tuple(sorted((n, start.get(n)) for n in last
                               if last[n] >= 0))}
        for i, e in enumerate(ops):
            closing = sorted(n for n, j in last.items() if j == i)
            nxt = set()
            for st in states:
                cur = dict(st)
                for applied in (False, True):
                    now = dict(cur)
                    if applied:
                        for _, name, entry, before in e.actions:
                            if entry is None:
                                if now.get(name) == before:
                                    now[name] = None
                            else:
                                now[name] = entry
                    if all(self.value_ok(prefix, n, now.get(n), want)
                           for n in closing):
                        nxt.add(tuple(sorted((n, v) for n, v in now.items()
                                             if n not in closing)))
            states = nxt
            if not states:
                return False
        return True

    def value_ok(self, prefix, name, value, want):
        """Whether NAME under PREFIX holding entry VALUE (None: absent)
        gives what the tree shows there."""
        got = want.get(name)
        path = prefix + name
        kind = None if value is None else "f" if _is_file(value) \
            else value[0]
        if (got[0] if got else None) != kind:
            return self.fail(path, f"{_describe(got and got[0])} in the "
                                   f"tree, {_describe(kind)} in a state")
        ok = True
        if kind == "l":
            ok = value[1] == got[1] or self.fail(
                path, f"a symbolic link to '{got[1]}', where a state has "
                      f"one to '{value[1]}'")
        elif kind == "d":
            ok = self.dir_ok(value[1], path + "/")
        elif kind == "f":
            reason = self.data.check(value, 0, got[1], self.tree.sums[path])
            ok = reason is None or self.fail(
                path, f"{self.data.what(value)}: {reason}")
        if ok:
            self.held.add(path)
        return ok


# ---------------------------------------------------------------- data

class _Data:
    """Which bytes a file can hold in a state, by the model's data
    policy (space.Space's selections, all of them)."""

    def __init__(self, space):
        self.s = space
        self.files = {f[0]: f for f in space.files}
        per = BLOCK // space.sector
        self.unit = space.sector if per > 1 else BLOCK
        self.memo = {}

    def what(self, ino):
        """What file INO is, in a reason."""
        node = self.s.w.inodes[ino]
        return "the file made during the run" if node.born \
            else "the file there before the run"

    def check(self, ino, c, got, digest):
        """None when file INO can hold GOT (whose DIGEST that is) after
        dir choice C (a cut, or anything for independent directories),
        else why not."""
        s = self.s
        # what the cut changes of the file: its image, and whether a
        # truncation of it is behind
        at = ((s.chains[ino].key_at(c) if ino in s.chains else -1),
              s.cuts[c][0] <= s.trunc_last.get(ino, -1)) \
            if s.journal else None
        key = (ino, at, digest)
        if key not in self.memo:
            self.memo[key] = self._check(ino, c, got)
        return self.memo[key]

    def _check(self, ino, c, got):
        s = self.s
        f = self.files.get(ino)
        if s.journal:
            _, base = s._base(ino, c)
        else:
            base = s.dimg[ino]
        if f is None:
            if got == base or len(got) == len(base) and _tails_ok(
                    got, base, s.w.inodes[ino].tails):
                return None
            return _mismatch(got, base, "its content on disk (nothing of it "
                                        "is pending)")
        vis = s.vis[ino]
        tails = s.w.inodes[ino].tails
        why = []
        for base_, size, new_blocks, fixed, last in self._shapes(f, c, base):
            if len(got) != size:
                why.append(size)
                continue
            reason = self._blocks(got, base_, vis, size, new_blocks, fixed,
                                  last, tails)
            if reason is None:
                return None
            why.append(reason)
        sizes = sorted({w for w in why if isinstance(w, int)})
        reasons = [w for w in why if isinstance(w, str)]
        if reasons:
            return reasons[0]
        shown = [str(n) for n in sizes[:6]]
        return (f"{len(got)} bytes, but its size can only be "
                + (", ".join(shown[:-1]) + " or " if len(shown) > 1 else "")
                + shown[-1] + (" and more" if len(sizes) > 6 else ""))

    def _shapes(self, f, c, base):
        """(base, size, blocks that may be new, blocks that must be new,
        the one of those that may be torn) of each way the size can fall
        (space.Space._content over every selection)."""
        s = self.s
        ino = f[0]
        vis = s.vis[ino]
        if s.data == policy.INDEPENDENT:
            _, dirty, sc, cut = f
            for trunc in ((False, True) if cut is not None else (False,)):
                b = s.cut[ino] if trunc else base
                for size in s.sizes(ino, trunc) if sc else (len(b),):
                    yield b, size, set(dirty), (), None
            return
        _, ow, first, n_ext = f
        # appended data cannot outlive a truncation that did not commit
        # (but in blocks the truncation freed, where the model reuses
        # them at once: space.Space.reused)
        blocked = s.journal and s.cuts[c][0] <= s.trunc_last.get(ino, -1)
        for k in ([0] if blocked else range(n_ext + 1)):
            size = max(len(base), min(len(vis), (first + k) * BLOCK)) \
                if k else len(base)
            if s.data == policy.ZERO_FILL:
                free = set(ow) | s.reused(ino, len(base)) if blocked else \
                    set(ow) | set(range(first, first + n_ext))
                yield base, size, free, (), None
            else:
                yield base, size, set(ow), set(range(first, first + k)), \
                    (first + k - 1 if k else None)

    def _blocks(self, got, base, vis, size, free, fixed, last, tails=None):
        """None when each block of GOT is its durable bytes, or its new
        ones where the model lets it be (FREE: either; FIXED: new, but
        LAST, which may be torn), sector by sector where blocks tear;
        else why not."""
        torn = self.unit < BLOCK
        for b in range(nblocks(size)):
            lo, hi = b * BLOCK, min((b + 1) * BLOCK, size)
            old = _span(base, lo, hi)
            new = _new(base, vis, b, lo, hi)
            # the block holding the visible end: written back as its
            # page, which reads zeros past that end (the new size may
            # not have reached the disk with it)
            tail = _new(b"", vis, b, lo, hi) if lo < len(vis) < hi else new
            have = got[lo:hi]
            if tails and b in tails and any(
                    have == _span(t, 0, hi - lo) for t in tails[b]):
                continue        # what a cut ending in it left there
            if b in fixed and not (torn and b == last):
                if have not in (new, tail):
                    return (f"block {b} (bytes {lo}-{hi - 1}) must hold the "
                            f"data written before the size reached it, and "
                            f"does not")
                continue
            if b in fixed or b in free:
                if have in (old, new, tail) or torn and any(all(
                        have[u:u + self.unit] in (old[u:u + self.unit],
                                                  n[u:u + self.unit])
                        for u in range(0, hi - lo, self.unit))
                        for n in (new, tail)):
                    continue
                return (f"block {b} (bytes {lo}-{hi - 1}) is neither its "
                        f"durable nor its new content"
                        + (", sector by sector" if torn else ""))
            if have != old:
                return (f"block {b} (bytes {lo}-{hi - 1}) differs from its "
                        f"durable content, and no pending write covers it")
        return None

    def bound(self):
        """An upper bound on the ways the pending data can fall."""
        n = 1
        for f in self.s.files:
            n *= self._ways(f)
        return n

    def _ways(self, f):
        s = self.s
        per = BLOCK // self.unit
        block = 2 ** per if per > 1 else 2      # each unit old or new
        # the block of the visible end: new with or without its tail
        tail = 2 if len(s.vis[f[0]]) % BLOCK else 1
        if s.data == policy.INDEPENDENT:
            _, dirty, sc, cut = f
            truncs = (False, True) if cut is not None else (False,)
            return block ** len(dirty) * tail * sum(
                len(s.sizes(f[0], t)) if sc else 1 for t in truncs)
        _, ow, first, n_ext = f
        if s.data == policy.ZERO_FILL:
            return block ** (len(ow) + n_ext) * (n_ext + 1) * tail
        return block ** len(ow) * (1 + n_ext * (block if per > 1 else 1)) \
            * tail


def _tails_ok(got, base, tails):
    """Whether GOT differs from BASE (as long) only in blocks a cut
    ended inside (TAILS, Inode.tails), each holding one of their
    other contents."""
    for b in range(nblocks(len(got))):
        lo, hi = b * BLOCK, min((b + 1) * BLOCK, len(got))
        have = got[lo:hi]
        if have != base[lo:hi] and not any(
                have == _span(t, 0, hi - lo) for t in tails.get(b, ())):
            return False
    return True


def _span(data, lo, hi):
    """DATA's bytes [LO, HI), zero-extended."""
    b = data[lo:hi]
    return b if len(b) == hi - lo else b + bytes(hi - lo - len(b))


def _new(base, vis, b, lo, hi):
    """Block B of a recipe that takes it from VIS: VIS's bytes as far as
    VIS reaches, BASE's (zero-extended) beyond."""
    e = min((b + 1) * BLOCK, len(vis), hi)
    out = bytearray(_span(base, lo, hi))
    if e > lo:
        out[:e - lo] = vis[lo:e]
    return bytes(out)


def _mismatch(got, want, what):
    if len(got) != len(want):
        return f"{len(got)} bytes, not the {len(want)} of {what}"
    for b in range(nblocks(len(got))):
        lo, hi = b * BLOCK, (b + 1) * BLOCK
        if got[lo:hi] != want[lo:hi]:
            return (f"block {b} (bytes {lo}-{min(hi, len(got)) - 1}) "
                    f"differs from {what}")
    return f"differs from {what}"
