"""The changes the replay holds as not yet durable, one object each, in
the order they were made: what one call changed in names (a DirOp),
a size changed through the log (SizeOp), a file's data forced out or
written into the log (Flush, DataOp). Which of them a model keeps, and
whether a crash keeps a prefix of them or any subset, is the model's
(replay.World, space.Space); each knows how to lay itself over a
tree's listings and file images, and what it is called."""

from __future__ import annotations

from .records import _is_file
from .state import BLOCK, Change, nblocks, ranges


class DirOp:
    """Names that change together, persisting whole or not at all: under
    a model with independent directories what one call changed in one
    directory (a rename within it, an exchange, a creation); under a
    journal all that one call changed, in every directory (one
    transaction). A rename between two directories is two of these
    under posix, one per directory, as crash-model.md's "Names live in
    directories" says."""

    __slots__ = ("dino", "actions", "changes", "inos", "n", "parts")

    def __init__(self, dino, actions, changes, parts=None):
        self.dino = dino            # the directory (posix); None: journal
        self.actions = actions      # [(dino, name, entry or None, before)]
        self.changes = changes      # [Change]: what it is called
        self.inos = {e for a in actions for e in (a[2], a[3])
                     if _is_file(e)}
        self.n = None               # its number in the world's log
        # {dino: ([action], [Change])}: what it did in each directory
        self.parts = parts

    def split(self, dino):
        """(what it did in directory DINO, what it did elsewhere), each a
        DirOp with its number, or None where it did nothing."""
        parts = self.parts or {dino: (self.actions, self.changes)}
        here = parts.get(dino)
        rest = {d: p for d, p in parts.items() if d != dino}
        out = []
        for part in ({dino: here} if here else None, rest or None):
            if part is None:
                out.append(None)
                continue
            op = DirOp(None, [a for d in part for a in part[d][0]],
                       [c for d in part for c in part[d][1]], part)
            op.n = self.n
            out.append(op)
        return tuple(out)

    def dirs(self):
        """The directories it changes."""
        return {a[0] for a in self.actions}

    def makes_dirs(self):
        """The directories it gives a name."""
        return {a[2][1] for a in self.actions
                if a[2] is not None and not _is_file(a[2])
                and a[2][0] == "d"}

    def names_file(self, ino):
        """Whether it gives file INO a name."""
        return any(a[2] == ino for a in self.actions)

    def apply(self, dirs, images):
        """Lay the change over DIRS (dino -> listing; the listings it
        touches are the caller's copies). A name is removed only where it
        still holds what the change removed: its creation may not have
        persisted."""
        for dino, name, entry, before in self.actions:
            d = dirs.get(dino)
            if d is None:
                d = dirs[dino] = {}
            if entry is None:
                if d.get(name) == before:
                    del d[name]
            else:
                d[name] = entry

    def describe(self, names):
        return self.changes


class SizeOp:
    """A size change through the log (truncate, fallocate), or under
    replace_alloc the allocation a rename or a close commits (ALLOC: at
    "rename" or "close"; its data not ordered with it)."""

    __slots__ = ("ino", "size", "inos", "n", "alloc")
    dino = None

    def __init__(self, ino, size, alloc=None):
        self.ino = ino
        self.size = size
        self.inos = (ino,)
        self.n = None
        self.alloc = alloc

    def apply(self, dirs, images):
        img = images[self.ino]
        images[self.ino] = (img[:self.size] if len(img) >= self.size
                            else img + bytes(self.size - len(img)))

    def describe(self, names):
        if self.alloc:
            return [Change("alloc", names(self.ino), self.alloc)]
        return [Change("truncate", names(self.ino), str(self.size))]


class Flush:
    """replace_flush (ext4's auto_da_alloc): the file's data forced out
    at this point of the log."""

    __slots__ = ("ino", "content", "why", "inos", "n")
    dino = None

    def __init__(self, ino, content, why):
        self.ino = ino
        self.content = content
        self.why = why            # "rename" or "close"
        self.inos = (ino,)
        self.n = None

    def apply(self, dirs, images):
        images[self.ino] = self.content

    def describe(self, names):
        return [Change("flush", names(self.ino), self.why)]


class DataOp:
    """Journaled data: one call's write, DATA at OFF, the file then SIZE
    bytes long. Each page is its own journal handle, so a crash can keep
    the first j of its blocks (in file order) without the rest:
    apply(..., part=j)."""

    __slots__ = ("ino", "off", "data", "size", "blocks", "inos", "n")
    dino = None

    def __init__(self, ino, off, data, size):
        self.ino = ino
        self.off = off
        self.data = data
        self.size = size
        end = off + len(data)
        first = off // BLOCK
        self.blocks = tuple(range(first, max(nblocks(end), first + 1)))
        self.inos = (ino,)
        self.n = None

    def apply(self, dirs, images, part=None):
        img = images[self.ino]
        off, data = self.off, self.data
        size = self.size
        if part is not None:
            stop = (self.blocks[0] + part) * BLOCK
            data = data[:max(0, stop - off)]
            size = max(len(img), min(size, stop))
        buf = bytearray(img)
        if len(buf) < off:
            buf.extend(bytes(off - len(buf)))
        buf[off:off + len(data)] = data
        if len(buf) < size:
            buf.extend(bytes(size - len(buf)))
        images[self.ino] = bytes(buf)

    def describe(self, names):
        return [Change("write", names(self.ino), ranges(self.blocks))]

    def describe_part(self, names, part):
        """(persisted, lost) when the first PART blocks committed."""
        name = names(self.ino)
        return ([Change("write", name, ranges(self.blocks[:part]))],
                [Change("write", name, ranges(self.blocks[part:]))])


def kind_of(entry, linked):
    """What adding ENTRY is called; LINKED: a file that has another name."""
    if not _is_file(entry):
        return {"d": "mkdir", "l": "symlink"}[entry[0]]
    return "link" if linked else "create"


def name_changes(changed, path_before, path_after, named):
    """The actions and the words of one record's changes to names.

    CHANGED: {dino: (old listing, new listing)}; PATH_BEFORE/AFTER(dino,
    name): the path of a name before and after the record; NAMED(entry):
    whether a file already had a name before the record. Returns {dino:
    ([action], [Change])}. An entry that left one name and took another
    in the same record was renamed (paired within its directory first);
    between two directories each half is told in its own."""
    gone, came = {}, {}
    for dino, (old, new) in changed.items():
        for n, e in old.items():
            if new.get(n) != e:
                gone.setdefault(e, []).append((dino, n))
        for n, e in new.items():
            if old.get(n) != e:
                came.setdefault(e, []).append((dino, n))
    out = {dino: ([], []) for dino in changed}
    for dino, (old, new) in changed.items():
        acts = out[dino][0]
        for n in sorted(set(old) | set(new)):
            if old.get(n) != new.get(n):
                acts.append((dino, n, new.get(n), old.get(n)))
    moved_from = {}         # (dino, name) it came to -> (dino, name) it left
    for e, dests in came.items():
        srcs = gone.get(e, [])
        for dest in sorted(dests, key=str):
            same = [s for s in srcs if s[0] == dest[0]]
            pick = same[0] if same else srcs[0] if srcs else None
            if pick is not None:
                srcs.remove(pick)
                moved_from[dest] = pick
    moved_to = {v: k for k, v in moved_from.items()}
    for dino, (old, new) in sorted(changed.items(), key=lambda kv: str(kv[0])):
        words = out[dino][1]
        for n in sorted(new):
            e = new[n]
            if old.get(n) == e:
                continue
            here = path_after(dino, n)
            src = moved_from.get((dino, n))
            if src is not None:
                kind = "rename" if src[0] == dino else "move-in"
                words.append(Change(kind, here, path_before(*src)))
            elif n in old:
                words.append(Change("replace", here))
            else:
                words.append(Change(kind_of(e, _is_file(e) and named(e)),
                                    here))
        for n in sorted(old):
            if n in new:
                continue
            e = old[n]
            here = path_before(dino, n)
            dest = moved_to.get((dino, n))
            if dest is not None:
                if dest[0] != dino:
                    words.append(Change("move-out", here,
                                        path_after(*dest)))
                continue        # a rename within the directory: told once
            words.append(Change("unlink" if _is_file(e) or e[0] == "l"
                                else "rmdir", here))
    return out


