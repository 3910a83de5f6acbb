"""Tagged payloads: old and new contents that can be told apart block by block.

Every workload replaces an old content of the target with a new one. Both are
payloads built by make(): when a fault or a crash leaves a mix of the two, the
oracle must say where the mix is ("blocks 0-3 new, block 4 zeros"), not only
that the bytes differ.

Layout. A payload is cut into 4096-byte blocks, the unit in which the page
cache writes back and in which the power-loss explorer tears files. Block i
starts with a 20-byte tag:

    offset  size  field
         0     1  version: 1 for the old content, 2 for the new one
         1     3  magic b"ccP"
         4     4  block index i (little-endian)
         8     8  total size of the payload in bytes (little-endian)
        16     4  CRC-32 of the block's remaining bytes (offset 20 to its end)

and continues with filler from SHAKE-128 keyed by (seed, version, block
index), so no two blocks of any payloads are alike. The version comes first
so that a payload shorter than the tag still differs between old and new: a
block shorter than the tag (a tiny payload or a short last block) holds the
tag's first bytes, computed with an empty remainder.

describe() names what each block of a content holds: new, old, zeros, a new
or old block from the wrong offset, a block of another payload, a block that
is new (or old) for some bytes and then something else, or garbage; runs of
blocks in the same state are merged. A content that is not built from
payloads gets the first differing byte instead. Data at the wrong offset is
found by the tag inside it: "blocks 2-3 new 2048 bytes early" means the new
bytes there belong 2048 bytes further on, so 2048 bytes before them were
skipped (an ignored short write); "late" means bytes were written twice.
"""

import functools
import hashlib
import struct
import zlib

BLOCK = 4096
MAGIC = b"ccP"
OLD = 1
NEW = 2
MAX_SIZE = 64 << 20

_TAG = struct.Struct("<B3sIQI")
TAG_SIZE = _TAG.size  # 20
_ZEROS = bytes(BLOCK)

# describe() merges runs; past this many the rest is summed up so that the
# description stays one readable line even for a 1024-block sampled tear.
MAX_RUNS = 8


@functools.lru_cache(maxsize=4096)
def _filler(seed, version, index):
    """(filler of a whole block, its CRC-32). Block i's filler is the same
    in every payload of a seed and version (only the tag holds the size),
    so a sweep over many sizes makes each once: 16 MiB of them at most."""
    key = b"crashcheck payload seed=%d version=%d block=%d" % (seed, version, index)
    rest = hashlib.shake_128(key).digest(BLOCK - TAG_SIZE)
    return rest, zlib.crc32(rest)


def _block(size, version, seed, index):
    length = min(BLOCK, size - index * BLOCK)
    rest, crc = _filler(seed, version, index)
    if length < BLOCK:
        # SHAKE is an extendable-output function: a shorter digest is the
        # start of the longer one
        rest = rest[:max(0, length - TAG_SIZE)]
        crc = zlib.crc32(rest)
    tag = _TAG.pack(version, MAGIC, index, size, crc)
    return (tag + rest)[:length]


@functools.lru_cache(maxsize=8)
def make(size, version, seed=0):
    """The payload of `size` bytes for `version` (OLD=1, NEW=2) and `seed`.

    Deterministic: the same arguments give the same bytes on any machine.
    """
    if isinstance(size, bool) or not isinstance(size, int) or not 0 <= size <= MAX_SIZE:
        raise ValueError(f"payload size {size!r} is not an integer in 0..{MAX_SIZE}")
    if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= 255:
        raise ValueError(f"payload version {version!r} is not an integer in 1..255")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"payload seed {seed!r} is not a non-negative integer")
    nblocks = (size + BLOCK - 1) // BLOCK
    return b"".join(_block(size, version, seed, i) for i in range(nblocks))


def is_payload(data):
    """True when `data` looks like a whole payload built by make().

    Checks the first block's tag (or, for a payload shorter than the tag,
    the tag prefix it must be), not every block: enough to choose between
    the block-wise and the byte-wise description.
    """
    if data is None:
        return False
    if len(data) == 0:
        return True
    if len(data) < TAG_SIZE:
        return data == _TAG.pack(data[0], MAGIC, 0, len(data), zlib.crc32(b""))[:len(data)]
    tag = parse_tag(data[:BLOCK])
    return tag is not None and tag.index == 0 and tag.size == len(data)


class Tag:
    """A decoded block tag; crc_ok tells whether the block's bytes match it."""

    __slots__ = ("version", "index", "size", "crc_ok")

    def __init__(self, version, index, size, crc_ok):
        self.version = version  # 1 old, 2 new, anything else: another payload
        self.index = index      # the block's index in the payload it came from
        self.size = size        # that payload's total size in bytes
        self.crc_ok = crc_ok    # the remainder matches the tag's CRC-32


def parse_tag(block):
    """Decode the tag at the start of `block`, or None if there is none."""
    if len(block) < TAG_SIZE:
        return None
    version, magic, index, size, crc = _TAG.unpack_from(block)
    if magic != MAGIC or version == 0:
        return None
    return Tag(version, index, size, zlib.crc32(block[TAG_SIZE:]) == crc)


def common_prefix(a, b):
    """Length of the longest common prefix of a and b (slice compares only)."""
    lo, hi = 0, min(len(a), len(b))
    if a[:hi] == b[:hi]:
        return hi
    # invariant: a[:lo] == b[:lo] and a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def classify(content, old, new):
    """'new', 'old', 'missing', 'empty' or 'torn'.

    `content` and `old` are bytes or None (absent). A content equal to new
    is 'new' even when old is equal too (an empty payload); an absent
    content is 'old' when the old state was absent, else 'missing'; a
    zero-length content that is neither is 'empty'.
    """
    if content is not None and content == new:
        return "new"
    if content == old:
        return "old"
    if content is None:
        return "missing"
    if not content:
        return "empty"
    return "torn"


def _plural(n, word):
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _is_zeros(chunk):
    return chunk == _ZEROS[:len(chunk)]


def _shift(chunk, pos, sources):
    """(name, d) when `chunk`, found at file offset `pos`, is a slice of a
    source taken from offset pos + d (d != 0), recognised by a block tag
    inside it: data written at the wrong offset. d > 0 means the data sits
    d bytes early, i.e. d bytes before it were skipped (the mark of an
    ignored short write); d < 0, late (bytes written twice)."""
    start = chunk.find(MAGIC, 1)
    while start > 0:
        s = start - 1
        if len(chunk) - s >= 8:
            version, _, index = struct.unpack_from("<B3sI", chunk, s)
            src_off = index * BLOCK
            for name, src in sources:
                if src is None or not src or src[0] != version:
                    continue
                d = src_off - s - pos
                if d != 0 and src_off >= s and \
                        src[src_off - s:src_off - s + len(chunk)] == chunk:
                    return name, d
        start = chunk.find(MAGIC, start + 1)
    return None


def _shift_words(name, d):
    return f"{name} {_plural(abs(d), 'byte')} {'early' if d > 0 else 'late'}"


def _rest_state(rest, pos, other_name, other, sources):
    """What the bytes after a matching prefix hold; rest starts at file
    offset pos."""
    k = pos % BLOCK
    if _is_zeros(rest):
        return "zeros"
    if other is not None and other[k:k + len(rest)] == rest:
        return other_name
    shifted = _shift(rest, pos, sources)
    if shifted is not None:
        return _shift_words(*shifted)
    return "garbage"


def _block_state(i, chunk, new, old, new_payload, old_payload, prev=None):
    """A hashable key naming what block i of a content holds.

    Keys of consecutive blocks are compared to merge runs, so a block from
    the wrong offset is keyed by its displacement, not by its source index.
    `prev` is the previous block's key: a shift seen there is tried here
    too, for a tail too short to hold a tag.
    """
    off = i * BLOCK
    nb = new[off:off + BLOCK]
    ob = old[off:off + BLOCK] if old is not None else None
    if chunk == nb:
        return ("new",)
    if ob is not None and chunk == ob:
        return ("old",)
    if _is_zeros(chunk):
        return ("zeros",)
    tag = parse_tag(chunk)
    if tag is not None and tag.crc_ok:
        for name, src, is_pl in (("new", new, new_payload), ("old", old, old_payload)):
            if src is None or not is_pl:
                continue
            if chunk == src[tag.index * BLOCK:tag.index * BLOCK + BLOCK] and tag.index != i:
                return ("moved", name, tag.index - i)
        return ("foreign", tag.version, tag.size, tag.index - i)
    sources = [(n, src) for n, src, is_pl in (("new", new, new_payload),
                                              ("old", old, old_payload)) if is_pl]
    # A prefix of the expected block, then something else: a write cut short
    # inside the block, or a sector-sized tear.
    best = None
    for name, blk, other_name, other in (("new", nb, "old", ob), ("old", ob, "new", nb)):
        if blk is None:
            continue
        k = common_prefix(chunk, blk)
        rest = chunk[k:]
        # A few matching bytes of garbage prove nothing; a matching tag does.
        if k < (1 if not rest else min(TAG_SIZE, len(blk))):
            continue
        if best is None or k > best[2]:
            if not rest:
                state = ("cut", name, k, len(blk))
            else:
                state = ("part", name, k,
                         _rest_state(rest, off + k, other_name, other, sources))
            best = (state, name, k)
    if best is not None:
        return best[0]
    shifted = _shift(chunk, off, sources)
    if shifted is not None:
        return ("shift",) + shifted
    if prev is not None and prev[0] == "shift":
        _, name, d = prev
        src = dict(sources).get(name)
        if src is not None and off + d >= 0 and src[off + d:off + d + len(chunk)] == chunk:
            return prev
    if tag is not None:
        return ("garbage", "checksum mismatch")
    return ("garbage", "no tag")


def _render(first, last, key):
    label = f"block {first}" if first == last else f"blocks {first}-{last}"
    kind = key[0]
    if kind in ("new", "old", "zeros"):
        return f"{label} {kind}"
    if kind == "moved":
        _, src, delta = key
        if first == last:
            return f"block {first} holds {src} block {first + delta}"
        return f"blocks {first}-{last} hold {src} blocks {first + delta}-{last + delta}"
    if kind == "foreign":
        _, version, size, delta = key
        verb = "holds" if first == last else "hold"
        what = f"block {first + delta}" if first == last else \
            f"blocks {first + delta}-{last + delta}"
        return f"{label} {verb} {what} of a {size}-byte version-{version} payload"
    if kind == "shift":
        return f"{label} {_shift_words(key[1], key[2])}"
    if kind == "cut":
        _, src, k, full = key
        return f"{label} {src}, cut at {k} of {full} bytes"
    if kind == "part":
        _, src, k, rest = key
        return f"{label} {src} for {_plural(k, 'byte')}, then {rest}"
    _, why = key
    return f"{label} garbage ({why})"


def _length_note(n, m, name):
    if n < m:
        return f"{_plural(m - n, 'byte')} shorter than {name}"
    return f"{_plural(n - m, 'byte')} longer than {name}"


def _prefix_note(content, ref, name):
    return f"{_length_note(len(content), len(ref), name)} ({len(content)} of {len(ref)} bytes)"


def _bytewise(content, new):
    k = common_prefix(content, new)
    if k == len(new):
        return f"the new content then {_plural(len(content) - k, 'extra byte')}"
    if k == len(content):
        return _prefix_note(content, new, "new")
    return f"first difference at byte {k}: expected 0x{new[k]:02x}, found 0x{content[k]:02x}"


def describe(content, old, new):
    """One line saying what `content` holds relative to the old and new payloads.

    `content` and `old` may be None (absent). Examples: "the new content",
    "absent", "empty", "blocks 0-3 new, block 4 old, block 5 zeros",
    "1 byte shorter than new (4095 of 4096 bytes)", "block 2 holds new
    block 5"; for contents not built by make(), "first difference at byte
    N: expected 0x.., found 0x..".
    """
    if content is None:
        return "absent"
    if content == new:
        return "the new content (empty)" if not new else "the new content"
    if old is not None and content == old:
        return "the old content (empty)" if not old else "the old content"
    if not content:
        return "empty"
    new_payload = is_payload(new)
    old_payload = old is not None and is_payload(old)
    if not new_payload:
        return _bytewise(content, new)
    for name, ref in (("new", new), ("old", old if old_payload else None)):
        if ref is not None and len(content) < len(ref) and ref.startswith(content):
            return _prefix_note(content, ref, name)

    runs = []  # [first, last, key]
    nblocks = (len(content) + BLOCK - 1) // BLOCK
    for i in range(nblocks):
        key = _block_state(i, content[i * BLOCK:(i + 1) * BLOCK], new, old,
                           new_payload, old_payload, runs[-1][2] if runs else None)
        if runs and runs[-1][2] == key and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i, key])
    parts = [_render(*run) for run in runs]
    if len(parts) > MAX_RUNS:
        shown = MAX_RUNS - 2
        counts = {}
        for first, last, key in runs:
            name = key[0] if key[0] in ("new", "old", "zeros") else "other"
            counts[name] = counts.get(name, 0) + last - first + 1
        total = ", ".join(f"{counts[k]} {k}" for k in ("new", "old", "zeros", "other")
                          if k in counts)
        parts = parts[:shown] + [f"... {len(runs) - shown} more runs "
                                 f"(of {nblocks} blocks: {total})"]
    text = ", ".join(parts)
    if len(content) != len(new):
        text += "; " + _length_note(len(content), len(new), "new")
    return text
