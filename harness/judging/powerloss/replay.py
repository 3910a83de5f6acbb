"""The replay: the visible and the durable state of the tree under
WATCH, advanced one trace record at a time, as a crash model says.

What a read sees comes from the records' snapshots and is the same
under every model. What the disk holds moves only at the model's sync
events; everything else waits in the world's log (journal.py) until a
sync commits it or a crash keeps part of it (space.py). The world asks
its model (models/base.py) each question whose answer differs between
filesystems, never the model's name."""

from __future__ import annotations

import os

from .. import models as _models
from ..models import base as policy
from .journal import DataOp, DirOp, Flush, SizeOp, name_changes
from .records import (CLOSE_CALLS, COPY_CALLS, DATA_CALLS, FSYNC_CALLS,
                      HARD_ERRNOS, LEGACY_ROOT, MMAP_CALLS, MOVE_CALLS,
                      OPEN_CALLS, SIZE_CALLS, STDIO_CALLS, SYNC_ALL_CALLS,
                      SYNC_FLAGS, WRITE_CALLS, Snapshots, _inside, _is_file,
                      _plain_args)
from .state import BLOCK, ExplorerError, ThinRecord, cut_block, nblocks
from .unseen import Audit


class Inode:
    """One file: what reads see, what the disk holds, and its history."""

    __slots__ = ("ino", "_vis", "_buf", "dimg", "lost", "born", "synced",
                 "odirect", "mapped", "truncated", "fsynced", "stdio_late",
                 "da_close", "cut", "rev", "_cache", "jmark", "jmark_meta",
                 "moot", "tails")

    def __init__(self, ino, content, born):
        self.ino = ino
        self._vis = content     # visible content, bytes; None: see _buf
        self._buf = None        # the same as a bytearray, for patch()
        self.dimg = content     # durable content (its length is the size)
        # block -> (visible bytes then, "fsync#1", rewritten): the blocks
        # a failed sync dropped; rewritten: the (start, end) byte ranges
        # of the block written again since, under failed_sync DISK (a
        # read had shown the disk's bytes, and only these are new)
        self.lost = {}
        self.born = born        # created during the run
        self.synced = not born  # some sync made its data durable
        self.odirect = False    # O_DIRECT writes since its last sync
        self.mapped = False     # mapped MAP_SHARED since its last sync
        self.truncated = False  # shrunk where it stood since its last sync
        self.fsynced = False    # an fsync or fdatasync of it succeeded
        self.stdio_late = False  # a stdio call changed it after that
                                 # fsync: the data sat in the FILE buffer
        self.da_close = False   # truncated to 0: replace_flush/alloc at close
        self.cut = None         # posix: the least size it was cut to
                                # below its durable size since its last sync
        # block -> the other bytes it may hold on disk since a cut ended
        # inside it (a shrinking truncate): what it held before the cut
        # (written back, or written O_DIRECT, before the cut committed)
        # and its bytes then zeros (the cut zeroes the page's tail, and
        # write-back can take that before the new size commits)
        self.tails = {}
        self.rev = 0            # bumped on every change, keys _cache
        self._cache = None
        # the world's log number of the first change made after its last
        # change (any: jmark; of size, allocation or name: jmark_meta):
        # a sync of it commits the log below that (LOG_TO_FILE)
        self.jmark = 0
        self.jmark_meta = 0
        self.moot = None        # the log's number where writes passed over
                                # unread (World.moot) were made

    @property
    def vis(self):
        """What a read sees, as bytes (made from _buf after patches)."""
        if self._vis is None:
            self._vis = bytes(self._buf)
        return self._vis

    @vis.setter
    def vis(self, data):
        self._vis = data
        self._buf = None

    def patch(self, off, data, size):
        """Lay DATA at OFF over the visible content and make it SIZE bytes
        long, no shorter than it is: a range snapshot, at the cost of its
        own length rather than the file's (a program writing a file in a
        thousand pieces is replayed in linear time). False when that left
        the content as it was."""
        buf = self._buf
        if buf is None:
            buf = self._buf = bytearray(self._vis)
        end = off + len(data)
        if len(buf) == size and buf[off:end] == data:
            return False
        if len(buf) < off:
            buf.extend(bytes(off - len(buf)))
        buf[off:end] = data
        if len(buf) < size:
            buf.extend(bytes(size - len(buf)))
        self._vis = None
        return True

    def pending(self):
        """(visible content minus lost blocks, dirty blocks) — cached."""
        if self._cache is not None and self._cache[0] == self.rev:
            return self._cache[1], self._cache[2]
        vis, dimg = self.vis, self.dimg
        if self.lost:
            arr = bytearray(vis)
            for b, (_, _, rewritten) in self.lost.items():
                s = b * BLOCK
                if s < len(vis):
                    e = min(s + BLOCK, len(vis))
                    arr[s:e] = cut_block(dimg, b, e - s)
                    for rs, re_ in rewritten:
                        arr[s + rs:min(s + re_, e)] = \
                            vis[s + rs:min(s + re_, e)]
            vis = bytes(arr)
        if vis == dimg:
            dirty = ()
        else:
            dirty = tuple(
                b for b in range(nblocks(len(vis)))
                if vis[b * BLOCK:(b + 1) * BLOCK] != cut_block(
                    dimg, b, min(BLOCK, len(vis) - b * BLOCK)))
        self._cache = (self.rev, vis, dirty)
        return vis, dirty




class World(Snapshots, Audit):
    """Visible and durable state of the tree under WATCH, advanced one
    record at a time under MODEL (a name or a models.Model)."""

    def __init__(self, model, blobs, init):
        self.model = _models.get(model)
        self.blobs = blobs
        self.watch = init.get("watch")
        self.inodes = {}
        self.names = {}         # inode -> last path it was seen under
        # the changes not yet durable, in order: journal.DirOp (per
        # directory under INDEPENDENT metadata), SizeOp, Flush, DataOp
        self.ops = []
        self.jseq = 0           # the next change's number in the log
        self.dmark = {}         # dino -> the number after its last change
        self.gen = 0            # bumped on every change; equal = same states
        # files the program has written or created so far: one that
        # first shows up otherwise (moved in from outside the tree) was
        # there before the run, and is durable as it stands
        self.touched = set()
        # unseen(): changes no intercepted call accounts for, else None
        self.audit = None
        self.stdio_inos = set()     # used through stdio: libc writes it
        self.mapped_inos = set()    # mapped MAP_SHARED: stores write it
        self._rec_target = None     # the file the call being replayed names
        seq = init["seq"]
        snap = init["snap"]
        files = self._files(snap, seq, ranges=False)
        self.root, self.vis = self._listings(snap, seq, init=True)
        self.legacy = self.root == LEGACY_ROOT
        for ino, data in files.items():
            self.inodes[ino] = Inode(ino, data, born=False)
        for path, ino in self.tree(self.vis)[0].items():
            if ino not in self.inodes:
                self.inodes[ino] = Inode(ino, b"", born=False)
            self.names.setdefault(ino, path)
        # the harness synced the setup
        self.dur = {d: dict(listing) for d, listing in self.vis.items()}
        self._dur_files = None      # file inodes with a durable name

    # -- the tree

    def tree(self, dirs):
        """({path: file inode}, [directory path], {path: link}) of the
        tree DIRS (dino -> listing) holds from the root; a directory
        reached twice (only a damaged trace does that) is walked once."""
        files, subdirs, links = {}, [], {}
        todo = [("", self.root)]
        seen = {self.root}
        while todo:
            base, dino = todo.pop()
            for name, e in sorted((dirs.get(dino) or {}).items()):
                path = base + name
                if _is_file(e):
                    files[path] = e
                elif e[0] == "d":
                    subdirs.append(path)
                    if e[1] not in seen and len(seen) < 1 << 20:
                        seen.add(e[1])
                        todo.append((path + "/", e[1]))
                else:
                    links[path] = e[1]
        return dict(sorted(files.items())), sorted(subdirs), links

    def dir_paths(self, dirs):
        """dino -> path of each directory DIRS reaches ("" = WATCH)."""
        out = {self.root: ""}
        todo = [self.root]
        while todo:
            dino = todo.pop()
            for name, e in (dirs.get(dino) or {}).items():
                if not _is_file(e) and e[0] == "d" and e[1] not in out:
                    out[e[1]] = out[dino] + name + "/"
                    todo.append(e[1])
        return out

    def lookup(self, dirs, path):
        """The entry PATH names in DIRS, or None."""
        dino, e = self.root, None
        for part in path.split("/"):
            if dino is None:
                return None
            e = (dirs.get(dino) or {}).get(part)
            if e is None:
                return None
            dino = e[1] if not _is_file(e) and e[0] == "d" else None
        return e

    def durably_named(self, ino):
        if self._dur_files is None:
            self._dur_files = {e for listing in self.dur.values()
                               for e in listing.values() if _is_file(e)}
        return ino in self._dur_files

    # -- snapshots

    def _node(self, ino):
        node = self.inodes.get(ino)
        if node is None:
            node = self.inodes[ino] = Inode(ino, b"", born=True)
        return node

    def _log(self, op):
        """Append OP to the log; the files and directories it concerns
        were last changed at it."""
        op.n = self.jseq
        self.jseq += 1
        self.ops.append(op)
        for ino in op.inos:
            node = self.inodes.get(ino)
            if node is not None:    # else made after it, at this mark
                node.jmark = node.jmark_meta = self.jseq
        if isinstance(op, DirOp):
            for dino in op.dirs():
                self.dmark[dino] = self.jseq

    def _set_visible(self, ino, data, size_call, written=False):
        """The file reads DATA after a record; SIZE_CALL: the record set
        its size (a truncation, an extension), WRITTEN: the record's
        call wrote it (a write, a copy, a stdio flush)."""
        node = self._node(ino)
        old = node.vis
        if data is old or data == old:
            return
        node.vis = data
        node.rev += 1
        self.gen += 1
        self._changed_at(node, len(data) != len(old))
        model = self.model
        if len(data) < len(old):
            if len(data) % BLOCK and not model.journaled_data:
                # (a journal of data logs the zeroed block with the cut)
                b = len(data) // BLOCK
                lo, hi = b * BLOCK, (b + 1) * BLOCK
                alts = node.tails.setdefault(b, set())
                alts.add(old[lo:hi])
                alts.add(data[lo:] + bytes(BLOCK - len(data) + lo))
            if self.durably_named(ino):
                node.truncated = True
            if len(data) < len(node.dimg) and (node.cut is None
                                               or len(data) < node.cut):
                node.cut = len(data)
            if model.journal:
                self._log(SizeOp(ino, len(data)))
                if not data and (model.flushes(policy.TRUNCATE)
                                 or model.allocates(policy.TRUNCATE)):
                    node.da_close = True
        elif len(data) > len(old) and size_call and model.journal:
            self._log(SizeOp(ino, len(data)))
        elif written and model.journaled_data:
            # the pages the call wrote (a hole it left reads zeros by the
            # size alone), or where the content changed
            start, end = written if written is not True \
                else self._changed(old, data)
            self._log(DataOp(ino, start, data[start:end], len(data)))
        # a block dropped by a failed sync counts again once rewritten
        for b, (then, label, done) in list(node.lost.items()):
            if b * BLOCK >= len(data):
                del node.lost[b]
                continue
            now = data[b * BLOCK:(b + 1) * BLOCK]
            if now != then:
                self._rewrote(node, b, [i for i in range(len(now))
                                        if i >= len(then) or now[i] != then[i]])

    def _changed_at(self, node, meta):
        """NODE changed now (META: its size too): a sync of it commits
        the log up to here."""
        mark = self.jseq if node.moot is None else node.moot
        node.moot = None
        node.jmark = mark
        if meta:
            node.jmark_meta = mark

    def _rewrote(self, node, b, offsets):
        """Bytes OFFSETS of lost block B were written again: under
        failed_sync PAGE the whole block counts again (the page held the
        new content, and is dirty again), under DISK only those bytes
        (a read had shown the disk's)."""
        if self.model.failed_sync == policy.PAGE:
            del node.lost[b]
            return
        offsets = list(offsets)
        if not offsets:
            return
        _, label, done = node.lost[b]
        spans = list(done)
        start = prev = None
        for i in sorted(offsets):
            if prev is not None and i == prev + 1:
                prev = i
                continue
            if start is not None:
                spans.append((start, prev + 1))
            start = prev = i
        spans.append((start, prev + 1))
        spans.sort()
        merged = []
        for s, e in spans:
            if merged and s <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], e))
            else:
                merged.append((s, e))
        now = node.vis[b * BLOCK:(b + 1) * BLOCK]
        if merged[0][0] == 0 and merged[0][1] >= len(now):
            del node.lost[b]
        else:
            node.lost[b] = (now, label, tuple(merged))
        node.rev += 1

    def _moved_in(self, rec):
        """Whether REC moved something into the tree from outside it (a
        rename or link whose source lies outside WATCH)."""
        if rec.get("call") not in MOVE_CALLS or not self.watch:
            return False
        src = rec.get("path")
        return isinstance(src, str) and not _inside(src, self.watch)

    def snapshot(self, rec, size_call=False):
        snap = rec.get("snap")
        if snap is None:
            return
        seq = rec["seq"]
        if not isinstance(snap, dict):
            raise ExplorerError(f"trace record seq={seq}: snap is not an "
                                f"object")
        _, listings = self._listings(snap, seq)
        files = self._files(snap, seq)
        # a file first seen here, moved in from outside, that the program
        # never wrote: it was there before the run (crash-model.md: "Where
        # a run starts"), durable as it stands
        outside = self._moved_in(rec)
        for ino, data in files.items():
            if ino not in self.inodes and outside and ino not in self.touched:
                self.inodes[ino] = Inode(ino, data, born=False)
                self.gen += 1
                continue
            if self.audit is not None and ino in self.inodes \
                    and data != self.inodes[ino].vis \
                    and not self._accounts_data(rec, ino):
                self._unseen(self.name_of(ino), "content", rec,
                             ("content", ino))
            self._set_visible(ino, data, size_call,
                              self._writes(rec, ino))
        if listings:
            self._names(rec, listings, outside)

    def _writes(self, rec, ino):
        """Whether REC's call wrote file INO's data (what a journal of
        data logs at the call): its byte range (start, end) when the
        record says where, else True; False when it did not."""
        name = rec.get("call")
        if self._rec_target != ino or not (
                name in WRITE_CALLS or name in STDIO_CALLS
                or name in COPY_CALLS):
            return False
        off, ret = rec.get("off"), rec.get("ret")
        if name in WRITE_CALLS and type(off) is int and type(ret) is int \
                and ret > 0 and off >= 0:
            return off, off + ret
        return True

    def _names(self, rec, listings, outside):
        changed = {}
        for dino, new in listings.items():
            old = self.vis.get(dino)
            if old is None:
                old = {}
                # a directory new to the trace: made by the program, its
                # entries durable only once it is synced; moved in from
                # outside, there before the run
                self.dur[dino] = dict(new) if outside else {}
            if old != new:
                changed[dino] = (old, new)
        if not changed:
            return
        before = self.dir_paths(self.vis)
        vis = dict(self.vis)
        vis.update(listings)
        after = self.dir_paths(vis)

        def path_before(dino, name):
            return before.get(dino, after.get(dino, "?/")) + name

        def path_after(dino, name):
            return after.get(dino, before.get(dino, "?/")) + name

        if self.audit is not None and not outside:
            acc = self._accounts_names(rec)
            for dino, (old, new) in changed.items():
                for n in sorted(set(old) | set(new)):
                    if old.get(n) != new.get(n) and (dino, n) not in acc:
                        self._unseen(path_after(dino, n) if n in new
                                     else path_before(dino, n), "name", rec,
                                     ("name", dino, n))
        named = {e for listing in self.vis.values() for e in listing.values()
                 if _is_file(e)}
        parts = name_changes(changed, path_before, path_after,
                             named.__contains__)
        model = self.model
        if model.journal:
            actions = [a for dino in changed for a in parts[dino][0]]
            # an exchange (ext4_cross_rename) forces nothing out
            exchange = rec.get("call") == "renameat2" and \
                "RENAME_EXCHANGE" in (rec.get("flags") or ())
            for _, _, e, old in actions:
                # renaming a file over another: its data forced out
                # first, or its blocks allocated (replace_flush/alloc)
                if _is_file(e) and _is_file(old) and e != old \
                        and not exchange:
                    if model.flushes(policy.RENAME):
                        vis_e, _ = self._node(e).pending()
                        self._log(Flush(e, vis_e, "rename"))
                    elif model.allocates(policy.RENAME):
                        vis_e, _ = self._node(e).pending()
                        self._log(SizeOp(e, len(vis_e), "rename"))
            self._log(DirOp(None, actions, [c for dino in changed
                                            for c in parts[dino][1]],
                            {dino: parts[dino] for dino in changed}))
        else:
            for dino in changed:
                self._log(DirOp(dino, *parts[dino]))
        self.gen += 1
        self.vis = vis
        for dino in changed:
            for e in listings[dino].values():
                if _is_file(e) and e not in self.inodes:
                    durable = outside and e not in self.touched
                    node = self.inodes[e] = Inode(e, b"", born=not durable)
                    node.jmark = node.jmark_meta = self.jseq
        for path, e in self.tree(vis)[0].items():
            self.names[e] = path

    # -- calls

    def _rel(self, path):
        """PATH relative to WATCH ("" for WATCH), or None outside it."""
        if not isinstance(path, str) or not self.watch:
            return None
        path, watch = os.path.normpath(path), os.path.normpath(self.watch)
        if path == watch:
            return ""
        if path.startswith(watch.rstrip("/") + "/"):
            return path[len(watch.rstrip("/")) + 1:]
        return None

    def _target_ino(self, rec):
        ino = rec.get("ino")
        if isinstance(ino, int) and not isinstance(ino, bool):
            return ino
        rel = self._rel(rec.get("path"))
        if rel:
            e = self.lookup(self.vis, rel)
            return e if _is_file(e) else None
        return None

    def _synced_dir(self, rec):
        """The directory (dino) an fsync of a directory synced, None when
        the call synced no directory of the tree, False when it was no
        directory at all."""
        rel = self._rel(rec.get("path"))
        if rec.get("dir") is not True and rel != "":
            return False
        if self.legacy:
            return self.root if rel is not None or rec.get("dir") else None
        ino = rec.get("ino")
        if type(ino) is int and (ino in self.vis or ino in self.dur):
            return ino
        if rel == "":
            return self.root
        if rel:
            e = self.lookup(self.vis, rel)
            if e is not None and not _is_file(e) and e[0] == "d":
                return e[1]
        return None

    def knows_clean(self, ino):
        """Whether the file INO is known and none of its blocks is lost:
        then a write to it that a later fsync snapshots whole (Moot)
        changes nothing that fsync leaves as it was."""
        node = self.inodes.get(ino)
        return node is not None and not node.lost

    def _apply_plain(self, args):
        """Replay a write _plain_args() read, if this world lets it take
        the short way: the file known, no lost block, not shrinking, no
        journal of data (which logs each write's pages the general way).
        True when done; False (nothing done) sends the record the general
        way, which gives the same result and words any error. What the
        general way would do comes down to the patch, the change counters
        and the file's last change in the log."""
        ino, off, ret, size, text, h, seq = args
        node = self.inodes.get(ino)
        if node is None or node.lost or self.model.journaled_data:
            return False
        was = len(node._vis) if node._buf is None else len(node._buf)
        if size < was:
            return False
        if text is not None:
            data = bytes.fromhex(text)
        else:
            data = self.blobs.get(h, ret, seq)
        if node.patch(off, data, size):
            node.rev += 1
            self.gen += 1
            self._changed_at(node, size != was)
        return True

    def call(self, rec, plain=None):
        """Replay one call record; PLAIN is what _plain_args() read of it
        when the caller already asked (False: not a plain write, or this
        world would not take it)."""
        name = rec["call"]
        if name in WRITE_CALLS:
            if plain is None:
                plain = _plain_args(rec)
            if plain and self._apply_plain(plain):
                return
            if rec.get("thin"):
                raise ThinRecord(f"trace record seq={rec['seq']}: a thin "
                                 f"{name}, which says neither where it "
                                 f"wrote nor what")
        ret = rec.get("ret")
        ok = ret is None or (isinstance(ret, int) and ret >= 0)
        flags = set(rec.get("flags") or ())
        label = f"{name}#{rec['n']}" if isinstance(rec.get("n"), int) else name
        ino = self._target_ino(rec)
        before = self.inodes[ino].vis if ino in self.inodes else None
        if ino is not None and (name in DATA_CALLS or (
                name in OPEN_CALLS and flags & {"O_CREAT", "O_TRUNC"})):
            self.touched.add(ino)
        if ino is not None:
            if name in STDIO_CALLS or name in ("fopen", "fopen64"):
                self.stdio_inos.add(ino)
            elif name in MMAP_CALLS and "MAP_SHARED" in flags:
                self.mapped_inos.add(ino)
        self._rec_target = ino

        if name in OPEN_CALLS and ok and "O_TRUNC" in flags:
            self.snapshot(rec, size_call=True)
            ino = self._target_ino(rec)
            snapped = (rec.get("snap") or {}).get("files") or {}
            if ino is not None and str(ino) not in snapped \
                    and ino not in snapped:
                self._set_visible(ino, b"", True)   # O_TRUNC empties it
            return
        self.snapshot(rec, size_call=name in SIZE_CALLS)
        if ino is None:
            ino = self._target_ino(rec)
        node = self.inodes.get(ino) if ino is not None else None

        if name in FSYNC_CALLS:
            dino = self._synced_dir(rec)
            if dino is not False:
                if ok and dino is not None:
                    self._sync_dir(dino)
            elif ok:
                self._sync_file(node, datasync=name == "fdatasync")
            elif node is not None and self._hard(rec):
                self._lose(node, 0, None, label)
        elif name == "msync":
            off, length = rec.get("off"), rec.get("len")
            if not isinstance(off, int) or not isinstance(length, int):
                off, length = 0, None
            end = None if length is None else off + length
            if ok and "MS_SYNC" in flags:
                # fdatasync of the range: with the size it needs
                self._sync_range(node, off, end, grow=True, datasync=True)
            elif not ok and node is not None and self._hard(rec):
                self._lose(node, off, end, label)
        elif name in SYNC_ALL_CALLS:
            if ok:
                self._sync_all()
        elif name in WRITE_CALLS or name in STDIO_CALLS or name in COPY_CALLS:
            self._wrote(rec, node, before, ok, flags)
        elif name in MMAP_CALLS:
            if ok and node is not None and "MAP_SHARED" in flags:
                node.mapped = True
                self.gen += 1
        if name in CLOSE_CALLS and node is not None and node.da_close:
            self._da_flush(node)

    def _hard(self, rec):
        return bool(rec.get("fault")) or rec.get("errno") in HARD_ERRNOS

    def _wrote(self, rec, node, before, ok, flags):
        if node is None or not ok:
            return
        ret, off = rec.get("ret"), rec.get("off")
        ranged = (rec["call"] in WRITE_CALLS and isinstance(off, int)
                  and isinstance(ret, int) and ret > 0)
        if ranged:
            start, end = off, off + ret
            for b in [b for b in node.lost
                      if b * BLOCK < end and (b + 1) * BLOCK > start]:
                self._rewrote(node, b, range(max(start - b * BLOCK, 0),
                                             min(end - b * BLOCK, BLOCK)))
                node.rev += 1
                self.gen += 1
        else:
            start, end = self._changed(before, node.vis)
        if rec["call"] in STDIO_CALLS and start is not None and node.fsynced:
            node.stdio_late = True
        if flags & SYNC_FLAGS:
            if start is not None:
                self._sync_range(node, start, end, grow=True, datasync=not (
                    flags & {"O_SYNC", "RWF_SYNC"}))
        elif "O_DIRECT" in flags and rec["call"] in WRITE_CALLS:
            node.odirect = True
            self.gen += 1

    @staticmethod
    def _changed(before, after):
        """Byte range in which AFTER differs from BEFORE, or (None, None)."""
        if before is None or before == after:
            return None, None
        blocks = [b for b in range(nblocks(max(len(before), len(after))))
                  if before[b * BLOCK:(b + 1) * BLOCK]
                  != after[b * BLOCK:(b + 1) * BLOCK]]
        return blocks[0] * BLOCK, min((blocks[-1] + 1) * BLOCK, len(after))

    # -- durability events

    def _commit(self, dino=None):
        """Every change of the log is durable (DINO None), or (posix
        directories) those of directory DINO."""
        if self.model.journal or dino is None:
            images = {}
            for e in self.ops:
                if not isinstance(e, DirOp):
                    images.setdefault(e.ino, self._node(e.ino).dimg)
                    e.apply(None, images)
            self._durable_images(images)
            if self.ops or self.dur != self.vis:
                self.gen += 1
            self.ops = []
            self.dur = {d: dict(listing) for d, listing in self.vis.items()}
        else:
            ops = [e for e in self.ops if e.dino != dino]
            listing = self.vis.get(dino, {})
            if len(ops) != len(self.ops) or self.dur.get(dino) != listing:
                self.gen += 1
            self.ops = ops
            self.dur[dino] = dict(listing)
        self._dur_files = None

    def _durable_images(self, images):
        """IMAGES (ino -> durable content) become the files' durable
        images."""
        for ino, img in images.items():
            node = self.inodes[ino]
            if img != node.dimg:
                node.dimg = img
                node.rev += 1

    def _commit_ops(self, chosen):
        """The changes CHOSEN (a subset of the log, in its order) are
        durable, the rest still pending."""
        if len(chosen) == len(self.ops):
            self._commit()
            return
        if not chosen:
            return
        images = {}
        dur = self.dur
        touched = set()
        for e in chosen:
            if isinstance(e, DirOp):
                for d in e.dirs() - touched:
                    dur[d] = dict(dur.get(d) or {})
                    touched.add(d)
                e.apply(dur, None)
            else:
                images.setdefault(e.ino, self._node(e.ino).dimg)
                e.apply(None, images)
        self._durable_images(images)
        gone = {id(e) for e in chosen}
        self.ops = [e for e in self.ops if id(e) not in gone]
        self.gen += 1
        self._dur_files = None

    def _commit_upto(self, mark):
        """The log below number MARK is durable (a prefix)."""
        self._commit_ops([e for e in self.ops if e.n < mark])

    def _naming(self, ino=None, dino=None):
        """The changes of the log that give file INO (or directory DINO)
        its names, with those that make the directories they name it in
        (a per-file log records its new ancestors too)."""
        want = []
        dirs = set()
        for e in self.ops:
            if isinstance(e, DirOp) and (
                    (ino is not None and e.names_file(ino))
                    or (dino is not None and (dino in e.dirs()
                                              or dino in e.makes_dirs()))):
                want.append(e)
                dirs |= e.dirs()
        while True:
            more = [e for e in self.ops if isinstance(e, DirOp)
                    and e not in want and e.makes_dirs() & dirs]
            if not more:
                break
            for e in more:
                want.append(e)
                dirs |= e.dirs()
        sizes = [e for e in self.ops if not isinstance(e, DirOp)
                 and ino is not None and e.ino == ino]
        chosen = {id(e) for e in want + sizes}
        return [e for e in self.ops if id(e) in chosen]

    def _commit_file(self, node, datasync):
        """What a sync of file NODE commits besides its data
        (file_sync)."""
        rule = self.model.file_sync
        if rule == policy.LOG:
            self._commit()      # one journal: any fsync commits it all
        elif rule == policy.LOG_TO_FILE:
            if node is not None:
                self._commit_upto(node.jmark_meta if datasync
                                  else node.jmark)
        elif rule == policy.FILE_NAMES:
            if node is not None:
                self._commit_ops(self._naming(ino=node.ino))

    def _sync_dir(self, dino):
        rule = self.model.dir_sync
        if rule == policy.LOG:
            self._commit()
        elif rule == policy.LOG_TO_DIR:
            self._commit_upto(self.dmark.get(dino, 0))
        elif self.model.journal:
            self._commit_dir(dino)
        else:
            self._commit(dino)

    def _commit_dir(self, dino):
        """DIRECTORY under a log: the entries of directory DINO are
        durable, with what makes it reachable, out of the log's order;
        of a change that also touched another directory (a rename out of
        another), only its half in DINO: the other half waits for its
        own sync or the log (Btrfs keeps a file moved between two
        directories under both names after an fsync of the one it went
        to, measured)."""
        makers = {id(e) for e in self._naming(dino=dino)
                  if dino not in e.dirs()}
        chosen, ops = [], []
        for e in self.ops:
            if isinstance(e, DirOp) and id(e) in makers:
                chosen.append(e)
            elif isinstance(e, DirOp) and dino in e.dirs():
                here, rest = e.split(dino)
                chosen.append(here)
                e = rest
            if e is not None:
                ops.append(e)
        if not chosen:
            return
        # in the log's order, the halves where their change was
        self.ops = sorted(ops + [e for e in chosen if e not in ops],
                          key=lambda e: e.n)
        self._commit_ops(chosen)

    def _durable(self, node, data):
        node.dimg = data
        node.synced = True
        node.cut = None
        node.tails = {}
        node.odirect = node.mapped = node.truncated = node.da_close = False
        node.stdio_late = False
        node.rev += 1
        self.gen += 1

    def _sync_file(self, node, datasync=False):
        self._commit_file(node, datasync)
        if node is not None:
            vis, _ = node.pending()
            self._durable(node, vis)
            node.fsynced = True

    def _sync_range(self, node, start, end, grow, datasync=True):
        self._commit_file(node, datasync)
        if node is None:
            return
        vis, _ = node.pending()
        if end is None or end > len(vis):
            end = len(vis)
        size = len(node.dimg)
        if grow and end > size:
            size = end
        img = bytearray(node.dimg[:size].ljust(size, b"\0"))
        stop = min(end, size)
        if start < stop:
            img[start:stop] = vis[start:stop]
        node.dimg = bytes(img)
        node.rev += 1
        self.gen += 1
        if node.dimg == vis:
            self._durable(node, vis)

    def _sync_all(self):
        self._commit(None)
        for node in self.inodes.values():
            vis, dirty = node.pending()
            if dirty or vis != node.dimg:
                self._durable(node, vis)

    def _lose(self, node, start, end, label):
        vis, dirty = node.pending()
        for b in dirty:
            if b * BLOCK + BLOCK > start and (end is None or b * BLOCK < end):
                node.lost[b] = (vis[b * BLOCK:(b + 1) * BLOCK], label, ())
        if self.model.journaled_data:
            # the data it covered was in the transaction that failed
            self.ops = [e for e in self.ops
                        if not (isinstance(e, DataOp) and e.ino == node.ino)]
        node.rev += 1
        self.gen += 1

    def _da_flush(self, node):
        """A file truncated to zero and rewritten is closed: its data is
        forced out here (replace_flush), or its blocks allocated
        (replace_alloc)."""
        vis, _ = node.pending()
        if self.model.flushes(policy.TRUNCATE):
            self._log(Flush(node.ino, vis, "close"))
        else:
            self._log(SizeOp(node.ino, len(vis), "close"))
        node.da_close = False
        self.gen += 1

    def moot(self, rec):
        """Writes to file REC["ino"] passed over unread (explorer.Moot):
        a later snapshot shows what they wrote, and they were made here
        in the log."""
        node = self.inodes.get(rec["ino"])
        if node is not None and node.moot is None:
            node.moot = self.jseq

    def exit(self):
        """The kernel closes what the program left open."""
        for ino in sorted(self.inodes):
            if self.inodes[ino].da_close:
                self._da_flush(self.inodes[ino])

    def name_of(self, ino):
        return self.names.get(ino, f"inode {ino}")
