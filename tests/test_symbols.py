"""Tests of harness/judging/symbols.py: a call's `at` field (object path and
offset, docs/design.md "Trace") turned into a source file, line and
function with eu-addr2line; object and offset where there is no debug
information; never an error for a binary that is gone.

The addresses are computed here the way the fault library records them:
the return address of a call (the instruction after it, found with
objdump), as an offset from the object's load base: the ELF address, for a
PIE and for a fixed-address executable alike.
"""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.judging import symbols

PROGS = Path(__file__).resolve().parent / "progs"

pytestmark = pytest.mark.skipif(shutil.which("objdump") is None,
                                reason="objdump (binutils) not installed")


def build(tmp, name, *flags):
    out = tmp / name
    proc = subprocess.run(["cc", *flags, "-Wall", "-o", str(out),
                           str(PROGS / "saver.c")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return out


def return_addresses(binary, callee):
    """The link-time addresses just past each call to CALLEE@plt."""
    text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(binary)],
                          capture_output=True, text=True, check=True).stdout
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines):
        if re.search(rf"call\s+[0-9a-f]+ <{callee}@plt>", line):
            nxt = re.match(r"\s*([0-9a-f]+):", lines[i + 1])
            out.append(int(nxt.group(1), 16))
    assert out, f"no call to {callee} in {binary}"
    return out


def source_line(pattern):
    for n, line in enumerate((PROGS / "saver.c").read_text().splitlines(), 1):
        if pattern in line:
            return n
    raise AssertionError(pattern)


@pytest.fixture(scope="module")
def bins(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("symbols")
    return {"pie": build(tmp, "saver", "-g", "-O0"),
            "nopie": build(tmp, "saver-nopie", "-g", "-O0", "-no-pie"),
            "nodebug": build(tmp, "saver-nodebug", "-O0", "-s")}


def at_of(binary, vaddr):
    return f"{binary}+0x{vaddr:x}"


def site(binary, callee, pattern):
    """(at, location) of the call to CALLEE on the source line holding
    PATTERN."""
    line = source_line(pattern)
    got = symbols.locate([at_of(binary, a) for a in return_addresses(binary, callee)])
    hits = [(at, loc) for at, loc in got.items() if loc["line"] == line]
    assert len(hits) == 1, (line, got)
    return hits[0]


def test_a_debug_build_gives_file_line_and_function(bins):
    at, loc = site(bins["pie"], "fsync", "if (fsync(fd) < 0) {")
    line = source_line("if (fsync(fd) < 0) {")
    assert loc["file"].endswith("saver.c") and loc["line"] == line
    assert loc["function"] == "save"
    assert loc["text"] == f"saver.c:{line} (save)"
    assert loc["object"] == str(bins["pie"])
    assert loc["offset"] == at.rsplit("+", 1)[1]


def test_a_fixed_address_executable(bins):
    at, loc = site(bins["nopie"], "rename", "if (rename(tmp, target) < 0)")
    assert int(at.rsplit("+0x", 1)[1], 16) > 0x400000
    _, loc = site(bins["nopie"], "rename", "if (rename(tmp, target) < 0)")
    assert loc["function"] == "save"


def test_every_call_site_has_its_own_line(bins):
    calls = return_addresses(bins["pie"], "close")
    got = symbols.locate([at_of(bins["pie"], a) for a in calls])
    lines = sorted(loc["line"] for loc in got.values())
    assert len(set(lines)) == len(calls) >= 4
    assert source_line("close(rfd);\t/* read-only") in lines


def test_no_debug_information_gives_object_and_offset(bins):
    vaddr = return_addresses(bins["nodebug"], "fsync")[0]
    at = at_of(bins["nodebug"], vaddr)
    loc = symbols.location(at)
    assert (loc["file"], loc["line"], loc["function"]) == (None, None, None)
    assert loc["text"] == f"saver-nodebug+{at.rsplit('+', 1)[1]}"


def test_a_binary_that_is_gone_or_not_elf_is_not_an_error(tmp_path):
    loc = symbols.location(f"{tmp_path}/gone+0x10")
    assert loc == {"object": f"{tmp_path}/gone", "offset": "0x10", "file": None,
                   "line": None, "function": None, "text": "gone+0x10"}
    (tmp_path / "text").write_text("not elf\n")
    assert symbols.location(f"{tmp_path}/text+0x1")["line"] is None


@pytest.mark.parametrize("bad", ["", "save+0x10", "/bin/ls", "/bin/ls+10",
                                 "/bin/ls+0xzz", None, 17])
def test_not_an_address(bad):
    assert symbols.location(bad) is None
    assert symbols.locate([bad]) == {}
    if isinstance(bad, str):
        with pytest.raises(ValueError):
            symbols.parse_at(bad)


def test_a_path_with_a_plus_in_it(tmp_path, bins):
    d = tmp_path / "g++ build"
    d.mkdir()
    shutil.copy(bins["pie"], d / "saver")
    at, loc = site(d / "saver", "fsync", "while (fsync(fd) < 0)")
    assert loc["object"] == str(d / "saver") and loc["function"] == "save"


@pytest.mark.skipif(shutil.which("c++") is None, reason="no C++ compiler")
def test_a_cpp_function_is_named_demangled(tmp_path):
    # RocksDB's calls were named _ZN7rocksdb17PosixWritableFile5Close...
    src = tmp_path / "ns.cc"
    src.write_text("#include <unistd.h>\n"
                   "namespace store { struct File { int sync(int fd, int n); }; }\n"
                   "int store::File::sync(int fd, int n) {\n"
                   "  return fsync(fd) + n;\n"
                   "}\n"
                   "int main() { store::File f; return f.sync(1, 0) < 0; }\n")
    out = tmp_path / "ns"
    proc = subprocess.run(["c++", "-g", "-O0", "-o", str(out), str(src)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    vaddr = return_addresses(out, "fsync")[0]
    loc = symbols.location(at_of(out, vaddr))
    assert loc["function"] == "store::File::sync", loc
    assert loc["text"] == "ns.cc:4 (store::File::sync)"


def test_the_system_call_backends_frames():
    # "+0x..." is in the object of the frame before
    rec = {"at": "/gone/libc.so.6+0x1000", "up": ["+0x2000", "/gone/prog+0x10",
                                                  "+0x20"]}
    assert symbols.frames(rec) == ["/gone/libc.so.6+0x1000",
                                   "/gone/libc.so.6+0x2000",
                                   "/gone/prog+0x10", "/gone/prog+0x20"]
    assert symbols.frames({"at": "/gone/prog+0x10"}) == ["/gone/prog+0x10"]
    assert symbols.frames({}) == []
    # no line anywhere: the first frame outside the C library
    loc = symbols.site(rec)
    assert (loc["object"], loc["offset"]) == ("/gone/prog", "0x10")
    only_libc = {"at": "/gone/libc.so.6+0x1000", "up": ["+0x2000"]}
    assert symbols.site(only_libc)["offset"] == "0x1000"
    assert symbols.site({"call": "write"}) is None
