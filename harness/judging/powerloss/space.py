"""The crash states one crash point allows, under the world's model:
which changes of its log persist (a prefix of a journal, or any subset
of independent directory changes), and for each file with data not yet
durable which of its blocks reached the disk and how far its size
moved (space.Space); each state as a recipe over the durable and the
visible bytes (Recipe), identified by digests of its blocks; the words
that say what persisted (why) and the rule the target shows broken
(rule); and Builder, which picks at most cap states per point: the
named ones first, then every other or a seeded sample."""

from __future__ import annotations

import bisect
import hashlib
import itertools
import os
import random
from collections import OrderedDict

from ..models import base as policy
from .journal import DataOp, DirOp, SizeOp
from .records import Held
from .state import (BLOCK, RULE_FFLUSH, RULE_FSYNC_BEFORE_RENAME,
                    RULE_FSYNC_DIR, RULE_FSYNC_DIR_CREATE, RULE_FSYNC_FAILED,
                    RULE_FSYNC_FILE, RULE_IN_PLACE, RULE_MSYNC, RULE_O_DIRECT,
                    RULE_ONE_RENAME, Change, CrashState, nblocks, ranges)


def _h(data):
    return hashlib.blake2b(data, digest_size=16).digest()


_ZERO_BLOCK = _h(bytes(BLOCK))


class Digests:
    """Digests of the full blocks of the few bytes objects in use, so that
    a state's identity costs a pass over digests, not over its bytes.
    SHARED, a records.Held by id (the object held with its digests, so
    its id stays its own), is asked on a miss and given what was
    computed."""

    def __init__(self, keep=64, shared=None):
        self.keep = keep
        self.shared = shared
        self.lru = OrderedDict()    # id -> (object, digests); the object
                                    # is held so its id stays its own

    def blocks(self, data):
        hit = self.lru.get(id(data))
        if hit is not None and hit[0] is data:
            self.lru.move_to_end(id(data))
            return hit[1]
        hit = self.shared.get(id(data)) if self.shared is not None else None
        if hit is not None and hit[0] is data:
            d = hit[1]
        else:
            d = [_h(data[i:i + BLOCK])
                 for i in range(0, len(data) - BLOCK + 1, BLOCK)]
            if self.shared is not None:
                self.shared.put(id(data), (data, d), len(data))
        self.lru[id(data)] = (data, d)
        if len(self.lru) > self.keep:
            self.lru.popitem(last=False)
        return d


# One for the process, behind each Builder's own: the blobs a snapshot
# directory holds are read once for the cases after (records._Blobs), the
# same bytes objects, so the digests of a combo's content are computed
# once for its cases.
SHARED_DIGESTS = Held(16 << 20, 1 << 20)


class Recipe:
    """A file's content in a crash state: BASE with the blocks BLOCKS taken
    from VIS (each as far as VIS reaches), cut or zero-extended to SIZE.
    TEAR, (block, n), takes only the first n bytes of that block from VIS:
    a write torn inside a block, on a device that writes sectors."""

    __slots__ = ("base", "vis", "blocks", "size", "tear")

    def __init__(self, base, vis, blocks, size, tear=None):
        self.base = base
        self.vis = vis
        self.blocks = blocks        # frozenset of block indices
        self.size = size
        self.tear = tear if tear is not None and tear[0] in blocks else None

    def _span(self, b):
        """The bytes of block B that come from VIS: [s, e)."""
        s = b * BLOCK
        e = min(s + BLOCK, len(self.vis))
        if self.tear is not None and self.tear[0] == b:
            e = min(e, s + self.tear[1])
        return s, e

    def build(self):
        base, size = self.base, self.size
        if not self.blocks:
            if size == len(base):
                return base
            return base[:size].ljust(size, b"\0")
        img = bytearray(base)
        for b in sorted(self.blocks):
            s, e = self._span(b)
            if s >= e:
                continue
            if len(img) < e:
                img.extend(bytes(e - len(img)))
            img[s:e] = self.vis[s:e]
        if len(img) < size:
            img.extend(bytes(size - len(img)))
        return bytes(img[:size])

    def _block(self, j, lo, hi):
        arr = bytearray(self.base[lo:hi].ljust(hi - lo, b"\0"))
        if j in self.blocks:
            s, e = self._span(j)
            seg = self.vis[lo:min(e, hi)]
            arr[:len(seg)] = seg
        return bytes(arr)

    def digest(self, dg):
        base, blocks, size = self.base, self.blocks, self.size
        bd = dg.blocks(base)
        vd = dg.blocks(self.vis) if blocks else ()
        full = size // BLOCK
        out = bd[:full]
        for j in range(len(out), full):     # past the base's full blocks
            out.append(_ZERO_BLOCK if len(base) <= j * BLOCK
                       else _h(self._block(j, j * BLOCK, j * BLOCK + BLOCK)))
        tear = self.tear[0] if self.tear is not None else None
        for j in blocks:
            if j < full:
                out[j] = vd[j] if j < len(vd) and j != tear else _h(
                    self._block(j, j * BLOCK, j * BLOCK + BLOCK))
        if size % BLOCK:
            out.append(_h(self._block(full, full * BLOCK, size)))
        out.append(size.to_bytes(8, "little"))
        return _h(b"".join(out))


class Chain:
    """The images of one file that its log entries produce, in the
    log's order, each built when first asked for and then kept (a
    state's recipe holds its base, and digests are cached by the base's
    identity). Entry i is (key, op, part): from cut KEY on the file is
    OP laid over the image before OP, whole (PART None) or its first
    PART blocks."""

    def __init__(self, base):
        self.keys = [-1]
        self.steps = [(None, None)]
        self.images = {0: base}

    def add(self, key, op, part=None):
        self.keys.append(key)
        self.steps.append((op, part))

    def image(self, i):
        """The image entry I holds."""
        img = self.images.get(i)
        if img is not None:
            return img
        # the last whole entry before I: partial entries build on it
        j = i - 1
        while self.steps[j][1] is not None:
            j -= 1
        before = self.image(j)
        op, part = self.steps[i]
        images = {op.ino: before}
        if part is None:
            op.apply(None, images)
        else:
            op.apply(None, images, part=part)
        img = self.images[i] = images[op.ino]
        return img

    def at(self, cut):
        """(key, image) of the file after cut CUT."""
        i = bisect.bisect_right(self.keys, cut) - 1
        return self.keys[i], self.image(i)

    def key_at(self, cut):
        """The key of the file's image after cut CUT, not building it."""
        return self.keys[bisect.bisect_right(self.keys, cut) - 1]

    def last(self):
        return self.image(len(self.keys) - 1)

    def trim(self):
        """Keep only the last whole image built (a caller walking the
        cuts in order, holding no recipe: membership)."""
        keep = max(i for i in self.images if self.steps[i][1] is None)
        self.images = {0: self.images[0], keep: self.images[keep]}


class Space:
    """The crash states possible at one crash point, under the world's
    model.

    A choice is (dir, data). dir says which changes of the log persist:
    under INDEPENDENT metadata a tuple of their indices, under a journal
    a cut, an index into self.cuts, each (p, j): the first p changes,
    and of change p (journaled data) its first j blocks. data holds one
    selection per file whose data is pending, by the model's append
    policy:
      INDEPENDENT (ino, blocks, size moved, truncation persisted, tear)
      PREFIX      (ino, overwritten blocks, appended blocks k, tear):
                  the first k appended blocks, the size following them
      ZERO_FILL   (ino, blocks, k, tear): any blocks, appended or not,
                  the size moved over the first k appended blocks
    tear, (block, bytes), takes only the first bytes of that block new."""

    def __init__(self, world, digests, sector=BLOCK):
        self.w = world
        self.model = model = world.model
        self.dg = digests
        self.sector = sector if model.torn_sectors else BLOCK
        self.ops = list(world.ops)
        self.m = len(self.ops)
        self.journal = model.journal
        self.data = policy.PREFIX if model.journaled_data else model.append
        # cut -> (p, j); a journal of data may be cut inside a write
        self.cuts = []
        for p in range(self.m + 1):
            self.cuts.append((p, 0))
            if p < self.m and isinstance(self.ops[p], DataOp):
                self.cuts += [(p, j) for j in range(
                    1, len(self.ops[p].blocks))]
        at = {c: i for i, c in enumerate(self.cuts)}
        reach = set(world.tree(world.dur)[0].values())
        reach |= set(world.tree(world.vis)[0].values())
        for e in self.ops:
            reach |= set(e.inos)
        self.reach = sorted(reach)
        self.dirmaps = {}
        self.contents = {}
        # journal: per file, the images its log entries produce
        self.chains = {}
        self.trunc_last = {}
        minsize = {}
        if self.journal:
            for idx, e in enumerate(self.ops):
                if isinstance(e, DirOp):
                    continue
                node = world.inodes[e.ino]
                chain = self.chains.get(e.ino)
                if chain is None:
                    chain = self.chains[e.ino] = Chain(node.dimg)
                if isinstance(e, DataOp):
                    for j in range(1, len(e.blocks)):
                        chain.add(at[(idx, j)], e, j)
                chain.add(at[(idx + 1, 0)], e)
                if isinstance(e, SizeOp) and not e.alloc:
                    self.trunc_last[e.ino] = idx
                    minsize[e.ino] = min(minsize.get(e.ino, len(node.dimg)),
                                         e.size)
        # pending data: INDEPENDENT (ino, dirty, size_changed, cut: the
        # size a pending truncation leaves, or None); PREFIX, ZERO_FILL
        # (ino, overwrites, first appended block, appended blocks)
        self.files = []
        self.cut = {}           # posix: ino -> its durable bytes, truncated
        self.first = {}
        self.vis = {}           # ino -> visible bytes minus lost blocks
        self.dimg = {}          # ino -> durable bytes
        self.digs = {}          # (ids, blocks, size) -> digest
        for ino in self.reach:
            node = world.inodes[ino]
            vis, dirty = node.pending()
            self.vis[ino] = vis
            self.dimg[ino] = node.dimg
            if self.data == policy.INDEPENDENT:
                cut = node.cut if node.cut is not None \
                    and node.cut < len(node.dimg) else None
                # the size moves on its own: back past a truncation too
                sc = len(vis) != len(node.dimg) or (
                    cut is not None and len(vis) > cut)
                if cut is not None:
                    # once the truncation persists, what it freed reads as
                    # zeros: a block written again after it is pending even
                    # where it holds what it held before (dd over a file
                    # with the same bytes)
                    dirty = tuple(sorted(set(dirty) | set(
                        range(cut // BLOCK, nblocks(len(vis))))))
                if cut is not None:
                    self.cut[ino] = node.dimg[:cut]
                if dirty or sc or cut is not None:
                    self.files.append((ino, dirty, sc, cut))
                continue
            if model.journaled_data:
                # what the log holds is not pending: only what reached
                # the page cache without a call (a shared mapping's
                # stores), against the log's last image
                last = self.chains[ino].last() if ino in self.chains \
                    else node.dimg
                dirty = _dirty(vis, last)
                alloc = len(last)
            else:
                alloc = min(len(node.dimg), minsize.get(ino, len(node.dimg)))
            if len(vis) > alloc:
                first = alloc // BLOCK
                n_ext = nblocks(len(vis)) - first
                ow = tuple(b for b in dirty if b < first)
            else:
                first, n_ext, ow = 0, 0, dirty
            if ow or n_ext:
                self.files.append((ino, ow, first, n_ext))
                self.first[ino] = first

    def trivial(self):
        return not self.m and not self.files

    def sizes(self, ino, trunc=False):
        """INDEPENDENT: the sizes file INO can have on disk once its
        size moves (TRUNC: its pending truncation persisted): the
        durable one, the visible one, and when it grows, each block
        boundary between: write-back moves the size on disk to the end
        of the blocks it wrote (measured on ext4 and XFS: an append cut
        at 24576 of 43690 bytes after an unrelated fsync)."""
        lo = len(self.cut[ino] if trunc else self.dimg[ino])
        hi = len(self.vis[ino])
        mids = range((lo // BLOCK + 1) * BLOCK, hi, BLOCK) if hi > lo else ()
        return tuple(sorted({lo, hi, *mids}))

    def reused(self, ino, size):
        """Journal, ZERO_FILL: the blocks of file INO's image of SIZE
        bytes that may hold its new data although the truncation that
        freed them did not commit: where the model reuses a freed data
        block at once (freed_reuse: ext4 data=writeback), the blocks the
        new data was written to at the same offsets."""
        if not self.model.freed_reuse or ino not in self.first:
            return set()
        f = next(f for f in self.files if f[0] == ino)
        _, _, first, n_ext = f
        return set(range(first, min(first + n_ext, nblocks(size))))

    # -- choices

    def _full(self, f):
        if self.data == policy.INDEPENDENT:
            return (f[0], f[1], f[2], f[3] is not None, None)
        if self.data == policy.ZERO_FILL:
            return (f[0], f[1] + tuple(range(f[2], f[2] + f[3])), f[3], None)
        return (f[0], f[1], f[3], None)

    def _none_dir(self):
        return 0 if self.journal else ()

    def _all_dir(self):
        return len(self.cuts) - 1 if self.journal else tuple(range(self.m))

    def named(self):
        none, every = self._none_dir(), self._all_dir()
        full = tuple(self._full(f) for f in self.files)
        out = [(none, ()), (every, full)]
        if self.journal:
            out += [(p, ()) for p in range(1, len(self.cuts))]
        else:
            out += [((i,), ()) for i in range(self.m)]
            out.append((every, ()))
        for f in self.files:
            out += [(none, (self._full(f),)), (every, (self._full(f),))]
        for f in self.files:
            if self.data != policy.INDEPENDENT:
                ino, ow, first, n_ext = f
                zero = self.data == policy.ZERO_FILL
                app = tuple(range(first, first + n_ext)) if zero else ()
                for k in range(1, len(ow) + n_ext):
                    if k <= len(ow):
                        out.append((every, ((ino, ow[:k], 0, None),)))
                    else:
                        out.append((every, ((ino, ow + app[:k - len(ow)],
                                             k - len(ow), None),)))
                if zero and n_ext:
                    # the size without the data: zeros where it is not
                    out.append((every, ((ino, ow, n_ext, None),)))
                continue
            ino, dirty, sc, cut = f
            t = cut is not None
            if t:
                # the truncation alone, and with the new size alone
                out.append((every, ((ino, (), False, True, None),)))
                if sc:
                    out.append((every, ((ino, (), True, True, None),)))
            if sc:
                out.append((every, ((ino, (), True, False, None),)))
            for k in range(1, len(dirty)):
                if sc or t:
                    out.append((every, ((ino, dirty[:k], True, t, None),)))
                out.append((every, ((ino, dirty[:k], False, t, None),)))
            if (sc or t) and dirty:
                out.append((every, ((ino, dirty, False, t, None),)))
        out += self._tears(every)
        return out

    def _tears(self, every):
        """With sectors smaller than a block: each pending file written in
        order and torn inside a block, its first k blocks new and block
        k+1 new for only its first j sectors (j < sectors per block)."""
        per = BLOCK // self.sector
        if per < 2:
            return []
        out = []
        for f in self.files:
            if self.data != policy.INDEPENDENT:
                ino, ow, first, n_ext = f
                order = list(ow) + list(range(first, first + n_ext))
                keep = len(order) if self.data == policy.ZERO_FILL \
                    else len(ow)
                for i, b in enumerate(order):
                    k = max(0, i + 1 - len(ow))
                    for j in range(1, per):
                        out.append((every, ((ino, tuple(order[:i + 1])[:keep],
                                             k, (b, j * self.sector)),)))
                continue
            ino, dirty, sc, cut = f
            for i, b in enumerate(dirty):
                for j in range(1, per):
                    out.append((every, ((ino, dirty[:i + 1], True,
                                         cut is not None,
                                         (b, j * self.sector)),)))
        return out

    def _blocks_of(self, f):
        """The blocks a journal model's selection may take from VIS for
        pending file F, beside the k appended ones."""
        ino, ow, first, n_ext = f
        if self.data == policy.ZERO_FILL:
            return tuple(ow) + tuple(range(first, first + n_ext))
        return tuple(ow)

    def size(self):
        """How many choices there are (capped at 2**40)."""
        if self.journal:
            n = len(self.cuts)
            for f in self.files:
                n *= (2 ** min(len(self._blocks_of(f)), 40)) * (f[3] + 1)
                if n > 2 ** 40:
                    return 2 ** 40
            return n
        bits = self.m + sum(len(d) + sc + (cut is not None)
                            for _, d, sc, cut in self.files)
        n = 2 ** min(bits, 40)
        for ino, _, sc, cut in self.files:
            if sc:
                n *= 1 + len(self._mids(ino, cut is not None))
        return min(n, 2 ** 40)

    def _mids(self, ino, cut):
        """INDEPENDENT: the block boundaries file INO's size can stop at
        between its durable and visible sizes, with or without its
        pending truncation (CUT: it has one)."""
        out = set(self.sizes(ino))
        if cut:
            out |= set(self.sizes(ino, True))
        return sorted(out - {len(self.vis[ino])}
                      - {len(self.dimg[ino]), len(self.cut.get(ino, b""))})

    def _sized(self, choice):
        """INDEPENDENT: CHOICE, and the same with each moved size
        stopped at each block boundary its file can stop at."""
        dsel, data = choice
        alts = []
        for sel in data:
            ino, blocks, moved, trunc, tear = sel
            sizes = [moved]
            if moved is True:
                lo = len(self.cut[ino] if trunc else self.dimg[ino])
                sizes += [z for z in self.sizes(ino, trunc)
                          if z != lo and z != len(self.vis[ino])]
            alts.append([(ino, blocks, z, trunc, tear) for z in sizes])
        for combo in itertools.product(*alts):
            yield (dsel, tuple(combo))

    def every(self):
        """All choices, in a fixed order (only called when size() is small)."""
        if self.journal:
            per = []
            for f in self.files:
                ino, n_ext = f[0], f[3]
                blocks = self._blocks_of(f)
                per.append([(ino, tuple(b for j, b in enumerate(blocks)
                                        if mask >> j & 1), k, None)
                            for mask in range(2 ** len(blocks))
                            for k in range(n_ext + 1)])
            for p in range(len(self.cuts)):
                for combo in itertools.product(*per):
                    yield (p, tuple(s for s in combo if s[1] or s[2]))
            return
        bits = [("op", i) for i in range(self.m)]
        for ino, dirty, sc, cut in self.files:
            bits += [("blk", ino, b) for b in dirty]
            if sc:
                bits.append(("size", ino))
            if cut is not None:
                bits.append(("cut", ino))
        for mask in range(2 ** len(bits)):
            on = [bits[j] for j in range(len(bits)) if mask >> j & 1]
            yield from self._sized(self._from_bits(on))

    def _from_bits(self, on):
        ops = tuple(b[1] for b in on if b[0] == "op")
        data = []
        for ino, _, _, _ in self.files:
            blocks = tuple(b[2] for b in on if b[0] == "blk" and b[1] == ino)
            size = ("size", ino) in on
            cut = ("cut", ino) in on
            if blocks or size or cut:
                data.append((ino, blocks, size, cut, None))
        return (ops, tuple(data))

    def random(self, rng):
        if self.journal:
            p = rng.randint(0, len(self.cuts) - 1)
            data = []
            for f in self.files:
                sel = tuple(b for b in self._blocks_of(f)
                            if rng.random() < 0.5)
                k = rng.randint(0, f[3])
                if sel or k:
                    data.append((f[0], sel, k, None))
            return (p, tuple(data))
        ops = tuple(i for i in range(self.m) if rng.random() < 0.5)
        data = []
        for ino, dirty, sc, cut in self.files:
            sel = tuple(b for b in dirty if rng.random() < 0.5)
            size = sc and rng.random() < 0.5
            trunc = cut is not None and rng.random() < 0.5
            if size:
                lo = len(self.cut[ino] if trunc else self.dimg[ino])
                mids = [z for z in self.sizes(ino, trunc)
                        if z != lo and z != len(self.vis[ino])]
                if mids and rng.random() < 0.5:
                    size = mids[rng.randrange(len(mids))]
            if sel or size or trunc:
                data.append((ino, sel, size, trunc, None))
        return (ops, tuple(data))

    # -- building a state

    def chosen(self, sel):
        """The indices of the log's changes that persisted under dir
        choice SEL, and (index, j) of a write cut after j blocks."""
        if not self.journal:
            return set(sel), None
        p, j = self.cuts[sel]
        return set(range(p)), ((p, j) if j else None)

    def _dirmap(self, sel):
        """The tree the name changes SEL leave: (listings, {path: file
        inode}, [directory path], {path: link})."""
        d = self.dirmaps.get(sel)
        if d is None:
            chosen = [self.ops[i] for i in sorted(self.chosen(sel)[0])
                      if isinstance(self.ops[i], DirOp)]
            dirs = dict(self.w.dur)
            for dino in {a[0] for e in chosen for a in e.actions}:
                dirs[dino] = dict(dirs.get(dino) or {})
            for e in chosen:
                e.apply(dirs, None)
            d = self.dirmaps[sel] = (dirs,) + self.w.tree(dirs)
        return d

    def _base(self, ino, p):
        """journal: (key, image) of INO after cut P."""
        chain = self.chains.get(ino)
        if chain is None:
            return -1, self.dimg[ino]
        return chain.at(p)

    def _effective(self, ino, dsel, sel):
        """journal: appended data cannot outlive a truncate that did not
        commit (its blocks were allocated after it)."""
        if not self.journal or sel is None \
                or self.cuts[dsel][0] > self.trunc_last.get(ino, -1):
            return sel
        if self.data == policy.ZERO_FILL:
            # the appended blocks, wherever they are, and the size
            first = self.first[ino]
            reused = self.reused(ino, len(self._base(ino, dsel)[1]))
            kept = tuple(b for b in sel[1] if b < first or b in reused)
            tear = sel[3] if sel[3] is not None \
                and sel[3][0] < first else None
            return (sel[0], kept, 0, tear) if kept else None
        if sel[2]:
            return (sel[0], sel[1], 0, sel[3]) if sel[1] else None
        return sel

    def _content(self, ino, dsel, sel):
        """(recipe, digest) of INO's content under choice (DSEL, SEL)."""
        sel = self._effective(ino, dsel, sel)
        if self.journal:
            bidx, base = self._base(ino, dsel)
            key = (ino, bidx, sel)
        else:
            base = self.dimg[ino]
            key = (ino, sel)
        hit = self.contents.get(key)
        if hit is not None:
            return hit
        vis = self.vis[ino]
        if sel is None:
            recipe = Recipe(base, vis, frozenset(), len(base))
        elif self.data != policy.INDEPENDENT:
            blocks = set(sel[1])
            size = len(base)
            if sel[2]:
                first = self.first[ino]
                if self.data == policy.PREFIX:
                    blocks.update(range(first, first + sel[2]))
                size = max(size, min(len(vis), (first + sel[2]) * BLOCK))
            recipe = Recipe(base, vis, frozenset(blocks), size, sel[3])
        else:
            if sel[3]:
                # the pending truncation persisted
                base = self.cut[ino]
            # the size: durable (False), visible (True), or a block
            # boundary between them (Space.sizes)
            size = sel[2] if sel[2].__class__ is int else \
                len(vis) if sel[2] else len(base)
            recipe = Recipe(base, vis, frozenset(sel[1]), size, sel[4])
        hit = self.contents[key] = (recipe, self.digest(recipe))
        return hit

    def digest(self, recipe):
        key = (id(recipe.base), id(recipe.vis), recipe.blocks, recipe.size,
               recipe.tear)
        d = self.digs.get(key)
        if d is None:
            d = self.digs[key] = recipe.digest(self.dg)
        return d

    def build(self, choice):
        """(tree, path -> (recipe, digest)) of a choice; tree as _dirmap
        gives it."""
        dsel, data = choice
        tree = self._dirmap(dsel)
        sels = {s[0]: s for s in data}
        files = {path: self._content(ino, dsel, sels.get(ino))
                 for path, ino in tree[1].items()}
        return tree, files

    # -- explaining a state

    def changes(self, choice, tree, files):
        dsel, data = choice
        w = self.w
        here = {}
        for path, ino in tree[1].items():
            here.setdefault(ino, path)

        def name_of(ino):
            return here.get(ino) or w.name_of(ino)

        persisted, lost = [], []
        chosen, cut = self.chosen(dsel)
        for i, e in enumerate(self.ops):
            if cut is not None and i == cut[0]:
                done, rest = e.describe_part(name_of, cut[1])
                persisted += done
                lost += rest
                continue
            (persisted if i in chosen else lost).extend(e.describe(name_of))
        sels = {s[0]: s for s in data}
        for f in self.files:
            ino = f[0]
            if ino not in here:
                continue        # no name reaches it: its data is moot
            node = w.inodes[ino]
            name = name_of(ino)
            vis = self.vis[ino]
            if files[name][1] == self.digest(
                    Recipe(vis, vis, frozenset(), len(vis))):
                persisted.append(Change("data", name))
                continue
            sel = self._effective(ino, dsel, sels.get(ino))
            sizes = f"{len(self.dimg[ino])} -> {len(self.vis[ino])}"
            rest_cut = False
            if self.data != policy.INDEPENDENT:
                _, ow, first, n_ext = f
                pending = list(ow) + list(range(first, first + n_ext))
                if sel is None:
                    done = []
                elif self.data == policy.PREFIX:
                    done = list(sel[1]) + list(range(first, first + sel[2]))
                else:
                    size = files[name][0].size
                    done = [b for b in sel[1] if b * BLOCK < size]
                    sizes = f"{len(self.dimg[ino])} -> {size}"
                # a prefix's size follows its data; zero-fill's may not
                size_pending = self.data == policy.ZERO_FILL and n_ext > 0
                size_done = size_pending and bool(sel and sel[2])
            else:
                _, dirty, sc, cut = f
                pending = list(dirty)
                done = [] if sel is None else list(sel[1])
                size_pending, size_done = sc, bool(sel and sel[2])
                if sel is not None and sel[2].__class__ is int:
                    # stopped at a block boundary: not the whole data
                    sizes = f"{len(self.dimg[ino])} -> {sel[2]}"
                    rest_cut = True
                if cut is not None:
                    (persisted if sel and sel[3] else lost).append(
                        Change("truncate", name, str(cut)))
            if sel is None:
                lost.append(Change("data", name, "" if node.synced
                                   else "never fsynced"))
                continue
            tear = sel[4] if self.data == policy.INDEPENDENT else sel[3]
            done_set = set(done)
            rest = [b for b in pending if b not in done_set]
            if tear is not None and tear[0] in done_set:
                done = [b for b in done if b != tear[0]]
                persisted.append(Change("torn", name,
                                        f"{tear[0]} {tear[1]}"))
            elif not rest and size_done == size_pending and not rest_cut:
                persisted.append(Change("data", name))
                continue
            if done:
                persisted.append(Change("blocks", name, ranges(done)))
            if rest:
                lost.append(Change("blocks", name, ranges(rest)))
            if size_pending:
                (persisted if size_done else lost).append(
                    Change("size", name, sizes))
        for ino in self.reach:
            node = w.inodes[ino]
            if node.lost and ino in here:
                by = {}
                for b, (_, label, _) in sorted(node.lost.items()):
                    by.setdefault(label, []).append(b)
                for label, blocks in by.items():
                    what = "block" if len(blocks) == 1 else "blocks"
                    lost.append(Change("sync-failure", name_of(ino),
                                       f"{label} dropped {what} "
                                       f"{ranges(blocks)}"))
        return persisted, lost


def _dirty(vis, img):
    """The blocks in which VIS differs from IMG, over VIS's length."""
    if vis == img:
        return ()
    return tuple(b for b in range(nblocks(len(vis)))
                 if vis[b * BLOCK:(b + 1) * BLOCK] != img[b * BLOCK:(b + 1)
                                                           * BLOCK])


# ---------------------------------------------------------------- words

_PERSISTED = {
    "create": "the creation of '{n}' persisted",
    "link": "the link '{n}' persisted",
    "replace": "the new entry '{n}' persisted",
    "rename": "the rename '{d}' -> '{n}' persisted",
    "unlink": "the unlink of '{n}' persisted",
    "mkdir": "the creation of directory '{n}' persisted",
    "rmdir": "the removal of directory '{n}' persisted",
    "symlink": "the symbolic link '{n}' persisted",
    "move-in": "'{d}' moved to '{n}': the new name persisted",
    "move-out": "'{n}' moved to '{d}': the old name's removal persisted",
    "truncate": "the truncation of '{n}' to {d} bytes committed",
    "flush": "'{n}' data was forced out at the {d} (auto_da_alloc)",
    "data": "'{n}' data reached the disk",
    "blocks": "blocks {d} of '{n}' reached the disk",
    "size": "the size of '{n}' changed ({d} bytes)",
    "torn": "block {b} of '{n}' reached the disk torn: its first {k} bytes "
            "new, the rest not",
    "write": "the write of block(s) {d} of '{n}' committed with the journal",
    "alloc": "'{n}' got its blocks at the {d}, its size committed, its data "
             "not ordered with it",
}
_LOST = {
    "create": "the creation of '{n}' did not persist",
    "link": "the link '{n}' did not persist",
    "replace": "the new entry '{n}' did not persist",
    "rename": "the rename '{d}' -> '{n}' did not persist",
    "unlink": "the unlink of '{n}' did not persist",
    "mkdir": "the creation of directory '{n}' did not persist",
    "rmdir": "the removal of directory '{n}' did not persist",
    "symlink": "the symbolic link '{n}' did not persist",
    "move-in": "'{d}' moved to '{n}': the new name did not persist",
    "move-out": "'{n}' moved to '{d}': the old name's removal did not "
                "persist",
    "truncate": "the truncation of '{n}' to {d} bytes did not commit",
    "flush": "the forced write-out of '{n}' at the {d} did not happen",
    "blocks": "blocks {d} of '{n}' did not reach the disk",
    "size": "the size change of '{n}' ({d} bytes) did not persist",
    "sync-failure": "'{n}': the failed {d}, which no later sync can "
                    "make durable",
    "write": "the write of block(s) {d} of '{n}' did not commit",
    "alloc": "the allocation of '{n}' at the {d} did not commit",
}


def _phrase(c, persisted):
    if c.kind == "data" and not persisted:
        return (f"'{c.name}' data was never fsynced" if c.detail
                else f"'{c.name}' data written since its last sync did not "
                     f"reach the disk")
    text = (_PERSISTED if persisted else _LOST)[c.kind]
    if c.kind == "blocks" and c.detail.isdigit():
        text = text.replace("blocks", "block", 1)
    if c.kind == "torn":
        b, k = c.detail.split()
        return text.format(n=c.name, b=b, k=k)
    return text.format(n=c.name, d=c.detail)


def why(persisted, lost, limit=8):
    if not persisted and not lost:
        return "nothing was pending: the durable state"
    # A name's creation that did not persist, when a rename that did
    # persist took that name away, changed nothing the disk holds: the
    # file is there under its new name. Said, it reads as a contradiction
    # ("the rename persisted; the creation did not").
    moved = {c.detail for c in persisted if c.kind == "rename"}
    lost = [c for c in lost if not (c.kind == "create" and c.name in moved)]
    parts = [_phrase(c, True) for c in persisted]
    parts += [_phrase(c, False) for c in lost]
    if not lost:
        # (a state torn by the program itself, mid-rewrite, lost nothing)
        parts.append("every change made until then persisted")
    if len(parts) > limit:
        parts = parts[:limit] + [f"and {len(parts) - limit} more"]
    return "; ".join(parts)


def rule(w, space, tree, files, target):
    """The rule a state shows broken, from the history of its target
    ("" for a tree, which has none: its checker judges it)."""
    if target is None:
        return ""
    vino = w.lookup(w.vis, target)
    sino = tree[1].get(target)
    if sino is None:
        if vino is None or tree[3].get(target) is not None \
                or target in tree[2]:
            return ""
        # the target's removal persisted without its replacement
        if w.lookup(w.dur, target) is not None:
            return RULE_ONE_RENAME
        return RULE_FSYNC_DIR_CREATE
    node = w.inodes[sino]
    shown = files[target][1]
    if shown != space.digest(Recipe(node.vis, node.vis, frozenset(),
                                     len(node.vis))):
        if node.lost:
            labels = {label for _, label, _ in node.lost.values()}
            if all(label.startswith("msync") for label in labels):
                return RULE_MSYNC
            return RULE_FSYNC_FAILED
        if node.odirect:
            return RULE_O_DIRECT
        if node.mapped:
            return RULE_MSYNC
        if node.stdio_late:
            return RULE_FFLUSH
        if node.truncated:
            return RULE_IN_PLACE
        if node.born:
            return RULE_FSYNC_BEFORE_RENAME
        return RULE_FSYNC_FILE
    if sino != vino:
        return RULE_FSYNC_DIR
    return ""



class Builder:
    """Crash states per crash point, reused while nothing changes."""

    def __init__(self, world, target, cap, seed, sector=BLOCK):
        self.w = world
        self.sector = sector
        self.dg = Digests(shared=SHARED_DIGESTS)
        self.target = target
        self.cap = cap
        self.seed = seed
        self.last = None        # (world.gen, states)
        self.first = None       # (world.gen, index of its first point)

    def states(self, index):
        if self.last is not None and self.last[0] == self.w.gen:
            # same states; fresh objects, as callers annotate them
            return [s.copy() for s in self.last[1]]
        self.skip(index)
        states = self._build(random.Random(self.seed * 1000003 + self.first[1]))
        self.last = (self.w.gen, states)
        return states

    def skip(self, index):
        """Note a point whose states are not wanted. Its states, had they
        been built, would have been drawn with its index, and reused by the
        points after it until the world changes: a later point built at
        the same world.gen must draw with that same index."""
        if self.first is None or self.first[0] != self.w.gen:
            self.first = (self.w.gen, index)

    def _build(self, rng):
        space = Space(self.w, self.dg, self.sector)
        if space.trivial():
            return [self._state(space, (space._none_dir(), ()), 1, set())]
        cap = self.cap
        named = space.named()
        if len(named) > cap:
            # keep the durable and the everything state, sample the rest
            pick = sorted(rng.sample(range(2, len(named)), max(cap - 2, 0)))
            named = named[:min(cap, 2)] + [named[i] for i in pick]
        out, keys, tried = [], set(), set()

        def add(choice):
            if choice in tried:
                return
            tried.add(choice)
            st = self._state(space, choice, len(out) + 1, keys)
            if st is not None:
                out.append(st)

        for c in named:
            add(c)
            if len(out) >= cap:
                return out
        if space.size() <= 4 * cap:
            for c in space.every():
                add(c)
                if len(out) >= cap:
                    break
        else:
            for _ in range(8 * cap):
                add(space.random(rng))
                if len(out) >= cap:
                    break
        return out

    def _state(self, space, choice, n, keys):
        """The state CHOICE gives, or None when KEYS already has it."""
        tree, files = space.build(choice)
        _, _, dirs, links = tree
        key = tuple((path, d) for path, (_, d) in files.items())
        if dirs or links:
            # a directory as its path with a slash, a link as what it holds
            key += tuple((path + "/", b"") for path in dirs)
            key += tuple((path, b"->" + os.fsencode(t))
                         for path, t in sorted(links.items()))
        if key in keys:
            return None
        keys.add(key)
        persisted, lost = space.changes(choice, tree, files)
        return CrashState(f"state {n}",
                          {path: r for path, (r, _) in files.items()},
                          self.target, why(persisted, lost),
                          rule(self.w, space, tree, files, self.target),
                          persisted, lost, key, dirs, links)
