"""The trace as the replay reads it: the call names it tells apart, the
checks every record passes, snapshot contents by hash, and the parsing
of a record's snapshot (files whole or as a range, directory listings)
into what the replay holds (docs/design.md, "Trace: JSON lines")."""

from __future__ import annotations

import os
import re
from collections import OrderedDict

from .state import ExplorerError

WRITE_CALLS = frozenset(("write", "pwrite", "pwrite64", "writev", "pwritev",
                         "pwritev2"))
# stdio hands its buffer to the kernel inside these, below the interposer
STDIO_CALLS = frozenset(("fwrite", "fputs", "fputc", "fprintf", "fflush",
                         "fclose"))
FSYNC_CALLS = frozenset(("fsync", "fdatasync"))
SYNC_ALL_CALLS = frozenset(("sync", "syncfs"))
OPEN_CALLS = frozenset(("open", "open64", "openat", "openat64", "creat",
                        "creat64", "fopen", "fopen64", "freopen"))
CLOSE_CALLS = frozenset(("close", "fclose"))
MMAP_CALLS = frozenset(("mmap", "mmap64"))
# calls whose size change is metadata (a journal entry) rather than data
SIZE_CALLS = frozenset(("ftruncate", "ftruncate64", "truncate", "truncate64",
                        "fallocate", "posix_fallocate"))
# calls that change a file's data from data the program never held: the
# output's whole snapshot says what they did
COPY_CALLS = frozenset(("copy_file_range", "sendfile", "splice"))
# every call that changes a file's data, by its descriptor or path
DATA_CALLS = WRITE_CALLS | STDIO_CALLS | COPY_CALLS | SIZE_CALLS | {"mmap"}
# calls that change names, besides the creating opens
NAME_CALLS = frozenset(("rename", "renameat", "renameat2", "link", "linkat",
                        "unlink", "unlinkat", "rmdir", "mkdir", "mkdirat",
                        "symlink", "symlinkat"))
# calls that give an existing file (or directory) a name in the tree
MOVE_CALLS = frozenset(("rename", "renameat", "renameat2", "link", "linkat"))
# flags of a write that make it durable when it returns
SYNC_FLAGS = frozenset(("O_SYNC", "O_DSYNC", "RWF_SYNC", "RWF_DSYNC"))
# the flags of a write that _plain_args lets take the short way (a copy
# or an unseen change never reaches it: only WRITE_CALLS are asked)
_PLAIN = frozenset(("O_APPEND",))
# errors that mean the device refused the data, not a bad argument
HARD_ERRNOS = frozenset((5, 28, 122))   # EIO, ENOSPC, EDQUOT


# ---------------------------------------------------------------- input

def _check_records(records):
    recs = []
    for i, rec in enumerate(records):
        if not isinstance(rec, dict):
            raise ExplorerError(f"trace record {i + 1}: not a JSON object")
        ev = rec.get("ev")
        if ev not in ("init", "call", "crash"):
            raise ExplorerError(f"trace record {i + 1}: bad ev {ev!r}")
        seq = rec.get("seq")
        if not isinstance(seq, int) or isinstance(seq, bool):
            raise ExplorerError(f"trace record {i + 1}: bad seq {seq!r}")
        if ev == "call" and not isinstance(rec.get("call"), str):
            raise ExplorerError(f"trace record seq={seq}: call without a "
                                f"'call' name")
        recs.append(rec)
    recs.sort(key=lambda r: r["seq"])   # processes append out of seq order
    if not recs or recs[0]["ev"] != "init":
        first = [r for r in recs if r["ev"] == "init"]
        if not first:
            raise ExplorerError("trace has no init record")
        raise ExplorerError(f"trace record seq={recs[0]['seq']} comes before "
                            f"the init record (seq={first[0]['seq']})")
    if not isinstance(recs[0].get("snap"), dict):
        raise ExplorerError(f"trace record seq={recs[0]['seq']}: init record "
                            f"without a snapshot (was the recorder on?)")
    return recs


class Held:
    """What the process keeps from case to case: values by key, each
    weighing some bytes, at most HOLD bytes and MOST values in all, the
    least recently used dropped first; a value over LARGEST bytes is
    not kept."""

    def __init__(self, hold, largest, most=4096):
        self.hold, self.largest, self.most = hold, largest, most
        self.held = 0
        self.lru = OrderedDict()    # key -> (value, bytes)

    def get(self, key):
        hit = self.lru.get(key)
        if hit is None:
            return None
        self.lru.move_to_end(key)
        return hit[0]

    def put(self, key, value, size):
        if size > self.largest or key in self.lru:
            return
        self.lru[key] = (value, size)
        self.held += size
        while self.held > self.hold or len(self.lru) > self.most:
            self.held -= self.lru.popitem(last=False)[1][1]


# Blobs read from snapshot directories: a case's read of a blob is the
# next case's (a reused scratch keeps its blobs: execute.kept_snaps).
# Keyed by the file's identity as well as its name (device, inode, size,
# modification time): a file put there under a blob's name by another
# hand is another key.
SHARED_BLOBS = Held(16 << 20, 4 << 20)


class _Blobs:
    """Snapshot contents by hash, loaded once."""

    def __init__(self, snapdir, loader, cache=None):
        if loader is None and snapdir is None:
            raise ExplorerError("explore: need a snapshot dir or a loader")
        self.snapdir = None if snapdir is None else os.fspath(snapdir)
        self.loader = loader
        self.cache = {} if cache is None else cache

    def get(self, h, size, seq):
        data = self.cache.get(h)
        if data is None:
            if not isinstance(h, str) or not h or "/" in h or h in (".", ".."):
                raise ExplorerError(f"trace record seq={seq}: bad snapshot "
                                    f"hash {h!r}")
            if self.loader is not None:
                try:
                    data = self.loader(h)
                except KeyError:
                    raise ExplorerError(f"trace record seq={seq}: snapshot "
                                        f"{h} is missing") from None
            else:
                path = os.path.join(self.snapdir, h)
                try:
                    with open(path, "rb") as f:
                        st = os.fstat(f.fileno())
                        key = (st.st_dev, st.st_ino, st.st_size,
                               st.st_mtime_ns, h)
                        data = SHARED_BLOBS.get(key)
                        if data is None:
                            data = f.read()
                            SHARED_BLOBS.put(key, data, len(data))
                except OSError as e:
                    raise ExplorerError(f"trace record seq={seq}: snapshot "
                                        f"'{path}': {e.strerror}") from None
                except ValueError:      # a NUL or a lone surrogate in h
                    raise ExplorerError(f"trace record seq={seq}: bad snapshot "
                                        f"hash {h!r}") from None
            data = bytes(data)
            self.cache[h] = data
        if size is not None and len(data) != size:
            raise ExplorerError(f"trace record seq={seq}: snapshot {h} holds "
                                f"{len(data)} bytes, the trace says {size}")
        return data


def _encodable(name):
    try:
        os.fsencode(name)
    except UnicodeEncodeError:      # a lone surrogate outside \udc80-\udcff
        return False
    return True


def _ino(value, seq, what):
    try:
        if isinstance(value, bool):
            raise ValueError
        return int(value)
    except (TypeError, ValueError):
        raise ExplorerError(f"trace record seq={seq}: {what}: bad inode "
                            f"number {value!r}") from None


# ---------------------------------------------------------------- journal

# A directory entry as the replay holds it: a regular file's inode (int),
# ("d", inode) for a directory, ("l", what it holds) for a symbolic link.
# The root of a trace whose records list WATCH alone ("dir", the format
# before trees) is this key.
LEGACY_ROOT = "."


def _is_file(entry):
    return type(entry) is int



# ---------------------------------------------------------------- replay

def _plain_args(rec):
    """What the common write record holds, read once for every world that
    replays it: a write call that put ret > 0 bytes at off, recorded as
    that range alone, with no sync flag and no O_DIRECT. (ino, off, ret,
    size, hex text or None, hash or None, seq), or False for any other
    record or any doubt (the general way then decides and words the
    error). A world still has to agree (_World._apply_plain)."""
    ret, off, ino = rec.get("ret"), rec.get("off"), rec.get("ino")
    snap, flags = rec.get("snap"), rec.get("flags")
    if type(ret) is not int or ret <= 0 or type(off) is not int \
            or type(ino) is not int or type(snap) is not dict \
            or len(snap) != 1 or (flags and (
                type(flags) is not list or not _PLAIN.issuperset(flags))):
        return False
    files = snap.get("files")
    if type(files) is not dict or len(files) != 1:
        return False
    (key, meta), = files.items()
    if type(meta) is not dict or key != str(ino):
        return False
    moff, mlen, size = meta.get("off"), meta.get("len"), meta.get("size")
    # type() first: True == 1, and the general way refuses a bool
    if type(moff) is not int or moff != off or type(mlen) is not int \
            or mlen != ret or type(size) is not int or size < off + ret:
        return False
    text, h = meta.get("data"), meta.get("hash")
    if text is not None:
        # the same bytes fromhex() gives the general way, or no doubt
        if h is not None or type(text) is not str or len(text) != 2 * ret \
                or not _HEX.fullmatch(text):
            return False
        return ino, off, ret, size, text, None, rec["seq"]
    if type(h) is not str:
        return False
    return ino, off, ret, size, None, h, rec["seq"]


_HEX = re.compile(r"[0-9a-fA-F]*")


def _inside(path, watch):
    path, watch = os.path.normpath(path), os.path.normpath(watch)
    return path == watch or path.startswith(watch.rstrip("/") + "/")




class Snapshots:
    """A record's snapshot read into what the replay holds: a mixin of
    the replay's world, which keeps blobs (_Blobs), inodes (ino ->
    replay.Inode, for range snapshots), root and legacy."""

    def _files(self, snap, seq, ranges=True):
        """inode -> visible content after the record. An entry is a whole
        snapshot, or (with off and len) a range: the inode's last known
        content cut or zero-extended to size, with [off, off+len) from the
        snapshot -- which rebuilds what a whole snapshot would have held."""
        files = snap.get("files") or {}
        if not isinstance(files, dict):
            raise ExplorerError(f"trace record seq={seq}: snap.files is not "
                                f"an object")
        out = {}
        for key, meta in files.items():
            ino = _ino(key, seq, "snap.files")
            if not isinstance(meta, dict) or not (
                    "hash" in meta or ("data" in meta and "off" in meta)):
                raise ExplorerError(f"trace record seq={seq}: snap.files."
                                    f"{key} needs size and hash")
            size = meta.get("size")
            if size is not None and (not isinstance(size, int)
                                     or isinstance(size, bool) or size < 0):
                raise ExplorerError(f"trace record seq={seq}: snap.files."
                                    f"{key}: bad size {size!r}")
            if "off" in meta or "len" in meta:
                out[ino] = self._range(ino, key, meta, size, seq, ranges)
            else:
                out[ino] = self.blobs.get(meta["hash"], size, seq)
        return out

    def _range(self, ino, key, meta, size, seq, allowed):
        where = f"trace record seq={seq}: snap.files.{key}"
        if not allowed:
            raise ExplorerError(f"{where}: a range snapshot in the init "
                                f"record (it must hold whole files)")
        off, length = meta.get("off"), meta.get("len")
        for what, v in (("off", off), ("len", length), ("size", size)):
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ExplorerError(f"{where}: bad {what} {v!r} in a range "
                                    f"snapshot")
        if off + length > size:
            raise ExplorerError(f"{where}: range {off}+{length} runs past "
                                f"the size {size}")
        node = self.inodes.get(ino)
        if node is None:
            raise ExplorerError(f"{where}: a range snapshot of inode {ino}, "
                                f"whose content no earlier record gave")
        if "data" in meta:
            # a small range carries its bytes in the line, as hex
            text = meta["data"]
            try:
                if not isinstance(text, str) or len(text) != 2 * length:
                    raise ValueError
                data = bytes.fromhex(text)
            except ValueError:
                raise ExplorerError(f"{where}: data is not {length} bytes "
                                    f"in hex") from None
        else:
            data = self.blobs.get(meta["hash"], length, seq)
        base = node.vis
        if len(base) < off:
            base += bytes(off - len(base))
        tail = base[off + length:size]
        return b"".join((base[:off], data, tail,
                         bytes(size - off - length - len(tail))))

    def _entry(self, value, seq, where):
        if isinstance(value, dict) and len(value) == 1:
            (kind, v), = value.items()
            if kind == "d":
                return ("d", _ino(v, seq, where))
            if kind == "l" and isinstance(v, str) and "\0" not in v \
                    and _encodable(v):
                return ("l", v)
            raise ExplorerError(f"trace record seq={seq}: {where}: bad "
                                f"entry {value!r}")
        return _ino(value, seq, where)

    def _listing(self, d, seq, where):
        if not isinstance(d, dict):
            raise ExplorerError(f"trace record seq={seq}: {where} is not an "
                                f"object")
        for n in d:
            # each name becomes a file of a laid-out crash state
            if not isinstance(n, str) or not n or "/" in n or "\0" in n \
                    or n in (".", "..") or not _encodable(n):
                raise ExplorerError(f"trace record seq={seq}: {where}: bad "
                                    f"file name {n!r}")
        return {n: self._entry(v, seq, f"{where}.{n}") for n, v in d.items()}

    def _listings(self, snap, seq, init=False):
        """(root, {dino: listing}) of a snapshot: "dirs" (keyed by the
        directories' inodes, "root" naming WATCH's in the init record), or
        "dir", WATCH's regular files alone (the format before trees)."""
        if "dirs" in snap:
            if "dir" in snap:
                raise ExplorerError(f"trace record seq={seq}: snap has both "
                                    f"dir and dirs")
            dirs = snap["dirs"]
            if not isinstance(dirs, dict):
                raise ExplorerError(f"trace record seq={seq}: snap.dirs is "
                                    f"not an object")
            out = {_ino(k, seq, "snap.dirs"): self._listing(
                v, seq, f"snap.dirs.{k}") for k, v in dirs.items()}
            if init:
                root = _ino(snap.get("root"), seq, "snap.root")
                out.setdefault(root, {})
                return root, out
            if self.legacy:
                raise ExplorerError(f"trace record seq={seq}: snap.dirs in a "
                                    f"trace whose init record has snap.dir")
            return self.root, out
        if "dir" not in snap:
            return (LEGACY_ROOT, {LEGACY_ROOT: {}}) if init else (None, {})
        if not init and not self.legacy:
            raise ExplorerError(f"trace record seq={seq}: snap.dir in a "
                                f"trace whose init record has snap.dirs")
        listing = self._listing(snap["dir"], seq, "snap.dir")
        for n, e in listing.items():
            if not _is_file(e):
                raise ExplorerError(f"trace record seq={seq}: snap.dir.{n}: "
                                    f"bad inode number {e!r}")
        return LEGACY_ROOT, {LEGACY_ROOT: listing}

