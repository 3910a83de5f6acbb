"""Tests of harness/judging/payload.py: layout, determinism, and tears located to the block."""

import hashlib
import pathlib
import random
import struct
import sys
import time
import zlib

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # noqa: E402
from harness.judging import payload as P  # noqa: E402

B = P.BLOCK
SIZES = [1, 2, 3, 19, 20, 21, 4095, 4096, 4097, 8191, 8192, 8193, 65537]


def fresh(size, version, seed=0):
    """make() without its cache, so determinism is really tested."""
    return P.make.__wrapped__(size, version, seed)


def blocks(data):
    return [data[i:i + B] for i in range(0, len(data), B)]


# ---------------------------------------------------------------- layout

@pytest.mark.parametrize("size", [0] + SIZES)
def test_make_has_the_asked_size(size):
    assert len(P.make(size, P.OLD)) == size
    assert len(P.make(size, P.NEW)) == size


@pytest.mark.parametrize("size", [20, 4096, 10000])
def test_every_block_carries_the_documented_tag(size):
    data = P.make(size, P.NEW, seed=3)
    for i, blk in enumerate(blocks(data)):
        version, magic, index, total, crc = struct.unpack_from("<B3sIQI", blk)
        assert (version, magic, index, total) == (2, b"ccP", i, size)
        assert crc == zlib.crc32(blk[20:])
        filler = hashlib.shake_128(b"crashcheck payload seed=3 version=2 block=%d" % i)
        assert blk[20:] == filler.digest(len(blk) - 20)


def test_blocks_shorter_than_the_tag_carry_its_first_bytes():
    assert P.make(1, P.OLD) == b"\x01"
    assert P.make(1, P.NEW) == b"\x02"
    assert P.make(4, P.NEW) == b"\x02ccP"
    tail = P.make(4096 + 6, P.OLD)[4096:]
    assert tail == b"\x01ccP\x01\x00"          # block index 1, little-endian


def test_make_is_deterministic_and_pinned():
    assert fresh(10000, P.NEW) == fresh(10000, P.NEW)
    assert fresh(10000, P.OLD, 7) == P.make(10000, P.OLD, 7)
    # Pinned: results and reproduce commands from another machine or an
    # older checkout must see the same bytes.
    assert hashlib.sha256(fresh(10000, P.NEW, 0)).hexdigest()[:16] == "8c9c6f4027fd576d"
    assert hashlib.sha256(fresh(10000, P.OLD, 7)).hexdigest()[:16] == "d77d15e5c4974d58"


def test_seeds_give_different_contents():
    assert fresh(4096, P.NEW, 0) != fresh(4096, P.NEW, 1)
    # the tag names no seed; only its CRC of the filler changes
    assert fresh(4096, P.NEW, 0)[:16] == fresh(4096, P.NEW, 1)[:16]


@pytest.mark.parametrize("size", SIZES)
def test_old_and_new_differ_in_every_block(size):
    old, new = P.make(size, P.OLD), P.make(size, P.NEW)
    for i, (a, b) in enumerate(zip(blocks(old), blocks(new), strict=True)):
        assert a != b, f"block {i}"
        assert a[0] != b[0], f"block {i} starts alike"


def test_no_two_blocks_of_a_payload_are_alike():
    bl = blocks(P.make(64 * B, P.NEW)) + blocks(P.make(64 * B, P.OLD))
    assert len(set(bl)) == len(bl)


@pytest.mark.parametrize("args", [(-1, 1), (P.MAX_SIZE + 1, 1), (1.5, 1), (True, 1),
                                  (10, 0), (10, 256), (10, 1, -1), (10, 1, "x")])
def test_make_rejects_bad_arguments(args):
    with pytest.raises(ValueError):
        P.make(*args)


def test_is_payload():
    for size in [0] + SIZES:
        assert P.is_payload(P.make(size, P.OLD)), size
    assert not P.is_payload(b"hello")
    assert not P.is_payload(None)
    assert not P.is_payload(P.make(8192, P.NEW)[:4096])   # tag says 8192 bytes
    assert not P.is_payload(bytes(4096))


def test_parse_tag():
    blk = P.make(3 * B, P.NEW)[2 * B:]
    tag = P.parse_tag(blk)
    assert (tag.version, tag.index, tag.size, tag.crc_ok) == (2, 2, 3 * B, True)
    assert P.parse_tag(blk[:-1] + b"\0").crc_ok is False
    assert P.parse_tag(bytes(B)) is None
    assert P.parse_tag(blk[:19]) is None


def test_common_prefix_matches_a_naive_count():
    rng = random.Random(1)
    for _ in range(300):
        a = bytes(rng.randrange(2) for _ in range(rng.randrange(0, 40)))
        b = bytes(rng.randrange(2) for _ in range(rng.randrange(0, 40)))
        k = 0
        while k < min(len(a), len(b)) and a[k] == b[k]:
            k += 1
        assert P.common_prefix(a, b) == k


# --------------------------------------------------------------- describe

OLD6 = P.make(6 * B, P.OLD)
NEW6 = P.make(6 * B, P.NEW)


def mix(*parts):
    """Content from (source, first block, last block) runs; source is
    'new', 'old' or 'zeros'."""
    out = b""
    for src, first, last in parts:
        for i in range(first, last + 1):
            out += {"new": NEW6, "old": OLD6, "zeros": bytes(6 * B)}[src][i * B:(i + 1) * B]
    return out


@pytest.mark.parametrize("content, text", [
    (mix(("new", 0, 3), ("old", 4, 4), ("zeros", 5, 5)),
     "blocks 0-3 new, block 4 old, block 5 zeros"),
    (mix(("old", 0, 0), ("new", 1, 5)), "block 0 old, blocks 1-5 new"),
    (mix(("zeros", 0, 5)), "blocks 0-5 zeros"),
    (mix(("new", 0, 1), ("new", 5, 5), ("new", 3, 5)),
     "blocks 0-1 new, block 2 holds new block 5, blocks 3-5 new"),
    (mix(("new", 0, 1), ("old", 4, 5), ("new", 4, 5)),
     "blocks 0-1 new, blocks 2-3 hold old blocks 4-5, blocks 4-5 new"),
    (mix(("new", 0, 2)) + mix(("new", 3, 3))[:512] + bytes(B - 512) + mix(("new", 4, 5)),
     "blocks 0-2 new, block 3 new for 512 bytes, then zeros, blocks 4-5 new"),
    (mix(("new", 0, 2)) + mix(("new", 3, 3))[:512] + mix(("old", 3, 3))[512:]
     + mix(("old", 4, 5)),
     "blocks 0-2 new, block 3 new for 512 bytes, then old, blocks 4-5 old"),
    (mix(("new", 0, 0)) + b"\xff" * B + mix(("new", 2, 5)),
     "block 0 new, block 1 garbage (no tag), blocks 2-5 new"),
    (NEW6[:-1], "1 byte shorter than new (24575 of 24576 bytes)"),
    (OLD6[:100], "24476 bytes shorter than old (100 of 24576 bytes)"),
    (mix(("new", 0, 3), ("old", 4, 4))[:4 * B + 10],
     "blocks 0-3 new, block 4 old, cut at 10 of 4096 bytes; 8182 bytes shorter than new"),
    (NEW6 + OLD6[6 * B - B:], "blocks 0-5 new, block 6 holds old block 5; "
                              "4096 bytes longer than new"),
])
def test_describe_locates_the_tear_to_the_block(content, text):
    assert P.describe(content, OLD6, NEW6) == text
    assert P.classify(content, OLD6, NEW6) == "torn"


def test_describe_whole_states():
    assert P.describe(NEW6, OLD6, NEW6) == "the new content"
    assert P.describe(OLD6, OLD6, NEW6) == "the old content"
    assert P.describe(None, OLD6, NEW6) == "absent"
    assert P.describe(b"", OLD6, NEW6) == "empty"
    assert P.describe(b"", None, b"") == "the new content (empty)"
    assert P.describe(b"", b"", b"x") == "the old content (empty)"


def test_describe_block_of_another_version_and_size():
    other = P.make(2 * B, 3)
    content = NEW6[:B] + other[B:2 * B] + NEW6[2 * B:]
    assert P.describe(content, OLD6, NEW6) == \
        "block 0 new, block 1 holds block 1 of a 8192-byte version-3 payload, blocks 2-5 new"
    # a new block of a payload of another size: same version, other size
    longer = P.make(10 * B, P.NEW)
    content = NEW6[:5 * B] + longer[5 * B:6 * B]
    assert P.describe(content, OLD6, NEW6) == \
        "blocks 0-4 new, block 5 holds block 5 of a 40960-byte version-2 payload"


def test_describe_checksum_mismatch_and_damaged_block():
    moved = NEW6[5 * B:6 * B - 1] + b"\0"          # new block 5, last byte lost
    content = NEW6[:2 * B] + moved + NEW6[3 * B:]
    assert P.describe(content, OLD6, NEW6) == \
        "blocks 0-1 new, block 2 garbage (checksum mismatch), blocks 3-5 new"
    damaged = NEW6[2 * B:3 * B - 1] + b"\0"         # right block, last byte lost
    content = NEW6[:2 * B] + damaged + NEW6[3 * B:]
    assert P.describe(content, OLD6, NEW6) == \
        "blocks 0-1 new, block 2 new for 4095 bytes, then zeros, blocks 3-5 new"


def test_describe_data_at_the_wrong_offset():
    # An ignored short write: 2048 bytes of block 1 written, then the
    # program went on with block 2's data at the short offset.
    skipped = NEW6[:B + 2048] + NEW6[2 * B:]
    assert P.describe(skipped, OLD6, NEW6) == \
        ("block 0 new, block 1 new for 2048 bytes, then new 2048 bytes early, "
         "blocks 2-5 new 2048 bytes early; 2048 bytes shorter than new")
    twice = NEW6[:B + 2048] + NEW6[B:6 * B - 2048]
    assert P.describe(twice, OLD6, NEW6) == \
        "block 0 new, block 1 new for 2048 bytes, then new 2048 bytes late, " \
        "blocks 2-5 new 2048 bytes late"
    assert P.describe(OLD6[:B] + NEW6[B + 100:], OLD6, NEW6) == \
        "block 0 old, blocks 1-5 new 100 bytes early; 100 bytes shorter than new"


def test_describe_different_old_and_new_sizes():
    # The sweep's old content is longer than the new and unaligned: a
    # program that forgets to truncate leaves the old tail.
    old, new = P.make(2 * B + 4097, P.OLD), P.make(2 * B, P.NEW)
    assert P.describe(new + old[2 * B:], old, new) == \
        "blocks 0-1 new, blocks 2-3 old; 4097 bytes longer than new"
    odd_new = P.make(B + 100, P.NEW)
    content = odd_new + old[B + 100:2 * B]
    assert P.describe(content, old, odd_new) == \
        "block 0 new, block 1 new for 100 bytes, then old; 3996 bytes longer than new"


@pytest.mark.parametrize("size", [1, 2, 19, 20, 4095, 4097])
def test_tiny_payloads_are_told_apart(size):
    old, new = P.make(size, P.OLD), P.make(size, P.NEW)
    assert P.describe(old, old, new) == "the old content"
    assert P.describe(new, old, new) == "the new content"
    assert P.classify(old, old, new) == "old"
    assert P.classify(new, old, new) == "new"


def test_describe_merges_runs_and_caps_the_line():
    n, o = P.make(40 * B, P.NEW), P.make(40 * B, P.OLD)
    content = b"".join((n if i % 2 == 0 else o)[i * B:(i + 1) * B] for i in range(40))
    text = P.describe(content, o, n)
    assert text == ("block 0 new, block 1 old, block 2 new, block 3 old, block 4 new, "
                    "block 5 old, ... 34 more runs (of 40 blocks: 20 new, 20 old)")


def test_describe_falls_back_to_bytes_for_foreign_contents():
    assert P.describe(b"hellp", None, b"hello") == \
        "first difference at byte 4: expected 0x6f, found 0x70"
    assert P.describe(b"hel", None, b"hello") == "2 bytes shorter than new (3 of 5 bytes)"
    assert P.describe(b"hello!!", None, b"hello") == "the new content then 2 extra bytes"
    assert P.describe(b"bye", b"bye", b"hello") == "the old content"


def test_describe_is_fast_on_4_mib():
    size = 4 * 1024 * 1024 + 1
    old, new = P.make(size, P.OLD), P.make(size, P.NEW)
    content = bytearray(new)
    for i in range(0, len(content) // B, 3):
        content[i * B:(i + 1) * B] = old[i * B:(i + 1) * B]
    content = bytes(content)
    start = time.perf_counter()
    text = P.describe(content, old, new)
    assert time.perf_counter() - start < 1.0
    assert text.startswith("block 0 old, blocks 1-2 new, block 3 old, blocks 4-5 new")
    assert text.endswith("(of 1025 blocks: 683 new, 342 old)")


# --------------------------------------------------------------- classify

@pytest.mark.parametrize("content, old, new, state", [
    (b"N", b"O", b"N", "new"),
    (b"O", b"O", b"N", "old"),
    (None, b"O", b"N", "missing"),
    (None, None, b"N", "old"),          # the target started absent
    (b"", b"O", b"N", "empty"),
    (b"", b"", b"", "new"),
    (b"", None, b"", "new"),
    (b"X", b"O", b"N", "torn"),
    (b"X", None, b"N", "torn"),
])
def test_classify(content, old, new, state):
    assert P.classify(content, old, new) == state
