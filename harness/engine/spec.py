"""Workload specs: what to run, with which contents, under which contract.

One TOML file per workload (workloads/specs/*.toml). Every field is checked
when the spec is loaded; an unknown field is an error, so a typo such as
`contrat = "atomic"` cannot silently leave a workload unjudged. A problem is
raised as SpecError, whose str() is one line, "<file>: <field>: <problem>",
which the CLI prints before exiting 2.

Fields:

name         required. The workload's name: [a-z0-9][a-z0-9_-]*. It starts
             every case id, so it must be unique among the specs of a
             directory.
description  required. Non-empty one-line string: what the workload does.
command      required. Non-empty list of strings, the argv to run. The
             placeholders {bin} (workloads/bin of this tree), {here} (the
             directory of the spec file, absolute: where a recipe keeps its
             driver and checker scripts), {target} (the file to replace),
             {new} (a file holding the new content) and {strategy} are
             replaced inside any element; any other brace is an error.
             {target} must appear, but for the tree contract, which has no
             target; {strategy} must appear exactly when `strategies` is
             given.
strategies   optional. Non-empty list of distinct names ([a-z0-9][a-z0-9_-]*),
             e.g. ["stdio", "direct", "sync", "mmap"]; one case family each.
contract     "atomic", "in-place" or "tree" (crash-model.md,
             "Contracts").
check        a checker argv (non-empty list of strings, same placeholders
             as command) run in each state's directory, with
             CRASHCHECK_EXPECT set to "new" (the program had exited 0) or
             "old-or-new"; exit 0 means acceptable. Instead of an atomic or
             in-place contract (give exactly one of them; Spec.contract is
             then "check"), or required by contract = "tree".
             The tree contract is for applications that keep several files
             and directories (a repository, a database): the work directory
             starts as the tree old_dir and setup make, there is no target
             file ({target} is refused), and only the checker judges a
             state: the whole directory the program worked in.
check_server optional, with check: the same checker kept running between
             states (an argv, the same placeholders), for a checker whose
             start-up is most of what it costs. Each sweep process starts
             it once and writes it a state at a time on its stdin, one JSON
             object a line, {"dir": DIR, "expect": "new" or "old-or-new"};
             it answers each with one line, {"status": N, "output": TEXT}:
             what check would exit with and print, run in DIR with that
             CRASHCHECK_EXPECT. It keeps nothing from one state to the next;
             crashcheck asks check itself about a share of the states and
             fails the case where the two answers differ
             (harness/engine/checkserver.py).
old_dir      tree contract only: a directory (relative to the spec file,
             or absolute) copied as the starting work directory, symbolic
             links as links. Default: an empty directory.
setup        tree contract only: an argv (placeholders {bin}, {here},
             {strategy}) run once per strategy and size, without the fault
             library, in a copy of old_dir (or an empty directory), before
             the recorded run; what it leaves is every run's starting tree,
             durable (crash-model.md: whatever is in the scratch before the
             program starts). A setup that fails is a setup error (exit 2).
sizes        Non-empty list of distinct integers in 0..64 MiB: the sizes of
             the new content, one case family each. Required, but for the
             tree contract, where it defaults to [0] and case ids then leave
             the size out.
old          "payload" (default): the target starts with an old payload;
             "absent": the target does not exist before the run. Not for
             the tree contract (old_dir and setup make its start).
timeout      seconds per run, a number in (0, 600], default 10.
sector       bytes the storage writes atomically, 512, 1024, 2048 or 4096
             (default): below 4096 the power-loss cases also tear a write
             inside a 4096-byte block, a prefix of its sectors new
             (crash-model.md); `--sector` on the command line overrides it.
fail_on      "error" (default) or "warning": the least severity of a
             finding that fails the run (crash-model.md, "Severity"). A
             warning (an ignored-error, a fault that cannot happen where
             the program ran) is reported and passes under "error";
             "warning" is the strict reading the built-in corpus uses.
             `--fail-on` on the command line overrides it.
disk         "normal" (default): runs use the scratch filesystem, with every
             disk error injected. "full": the same, and one more case per
             strategy and size, <combo>-disk=full (kind enospc), whose run
             has its work directory (the target and the program's temp
             files) on a real tmpfs with room for the old target plus one
             page less than the new content needs
             (harness/engine/fullfs.py), for failures no injection can
             produce, such as SIGBUS from a store into a mapping that finds
             no free block. Needs root to mount; elsewhere that case is
             skipped with the reason.
teaches      buggy variants: one line naming the variant's defect and the
             rule it breaks; required when `expect` is given, shown in the
             report next to the verdict that caught it.
lesson       buggy variants, optional: what catches the variant and why,
             shown in its lesson in the report. It is kept here, not in
             the variant's Method header, which a student reads to
             predict what will catch it (docs/guide.md, "Teaching").
fixed_by     buggy variants: the name of the correct workload's spec that
             does the same job right (the report diffs the two programs).
             load_all() checks it names a spec of the same directory that
             has no `expect` itself.
expect       buggy variants only: list of tables, each one finding the sweep
             must produce (all must be met; a variant no longer caught is a
             failure of the suite). Fields of a table:
               verdict   required: one of FINDINGS (every verdict but ok,
                         skipped and harness-error, which catch nothing)
               kind      optional: baseline eintr short enospc eio crash
                         powerloss
               model     optional: a crash model (posix, ext4-ordered,
                         ext4-writeback, ext4-journal, xfs, btrfs), a
                         comma list of them ("xfs,btrfs": a case of
                         either), or all; or a real kernel's
                         (--fs): ext4-real, xfs-real, btrfs-real
               strategy  optional: one of the spec's strategies
               size      optional: one of the spec's sizes
               call      optional: a traced call coordinate as in case
                         ids: "fsync(target.tmp)#1" (the call on that file
                         of the work directory, numbered among that
                         file's), "sync#1"; or a call's name alone,
                         "close": any call of that name; or "disk=full",
                         the full-disk case (disk above)
               backend   optional: preload or syscall, the backend the
                         case ran under (harness/engine/backend.py): the
                         two see different calls (stdio's fclose is a
                         close and maybe a write under syscall), so a
                         variant can be caught on different calls
             An entry applies to a case when every field it gives equals the
             case's (Expect.applies). An entry for a backend no case of the
             run used is not counted.

In error messages, expect[1] is the first [[expect]] table.
"""

import math
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from ..judging import models as modelsmod
from ..judging.outcome import FINDINGS, KINDS, MODELS
from .realfs import MODELS as REAL_MODELS

MAX_SIZE = 64 << 20
MAX_TIMEOUT = 600

PLACEHOLDERS = ("bin", "here", "target", "new", "strategy")
# what setup may use: it runs before a run's scratch exists
SETUP_PLACEHOLDERS = ("bin", "here", "strategy")
CONTRACTS = ("atomic", "in-place", "tree")
OLD_STATES = ("payload", "absent")
DISKS = ("normal", "full")

_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*\Z")
# a case's call coordinate: "sync#1", or on a file "fsync(target.tmp)#1"
# (harness/coords.py); or a call's name alone, "close"; or the
# full-disk case's "disk=full" (records.FULL_DISK)
_CALL = re.compile(r"[a-z_][a-z0-9_]*((\([^()\x00-\x1f]+\))?#[1-9][0-9]*\+?)?\Z"
                   r"|disk=full\Z")
BACKENDS = ("preload", "syscall")
_BRACE = re.compile(r"\{([^{}]*)\}")
_TOML_POS = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")
_TOML_EOF = re.compile(r"\s*\(at end of document\)\s*$")

FIELDS = ("name", "description", "command", "strategies", "contract", "check",
          "check_server",
          "sizes", "old", "old_dir", "setup", "timeout", "sector", "disk",
          "fail_on", "teaches", "lesson", "fixed_by", "expect")
FAIL_ON = ("error", "warning")
SECTORS = (512, 1024, 2048, 4096)
EXPECT_FIELDS = ("verdict", "kind", "model", "strategy", "size", "call",
                 "backend")


class SpecError(Exception):
    """A bad spec: path (the file, or the directory for load_all), field
    (dotted, e.g. "expect[2].kind"; None when the whole file is at fault)
    and problem, all on one line."""

    def __init__(self, path, field, problem):
        self.path = Path(path)
        self.field = field
        self.problem = " ".join(str(problem).split())
        super().__init__(str(self))

    def __str__(self):
        if self.field:
            return f"{self.path}: {self.field}: {self.problem}"
        return f"{self.path}: {self.problem}"


@dataclass(frozen=True)
class Expect:
    """One finding a buggy variant must produce."""
    verdict: str
    kind: str | None = None
    model: str | None = None    # "posix", or a comma list: a case of any
    strategy: str | None = None
    size: int | None = None
    call: str | None = None     # "fsync(target.tmp)#1": the case's call coordinate; "close": any
    backend: str | None = None  # "preload" or "syscall": the case's backend

    def applies(self, *, kind=None, model=None, strategy=None, size=None,
                call=None, backend=None):
        """True when every coordinate this entry restricts equals the
        case's (a call given by name alone: any call of that name)."""
        if self.model is not None and model not in self.model.split(","):
            return False
        case = {"kind": kind, "strategy": strategy, "size": size,
                "backend": backend}
        if self.call is not None and self.call != call and (
                "#" in self.call or not call
                or call.partition("#")[0].partition("(")[0] != self.call):
            return False
        return all(getattr(self, k) is None or getattr(self, k) == v
                   for k, v in case.items())

    def describe(self):
        """"not-durable (kind=powerloss, strategy=stdio)" for reports."""
        where = ", ".join(f"{k}={getattr(self, k)}" for k in EXPECT_FIELDS[1:]
                          if getattr(self, k) is not None)
        return f"{self.verdict} ({where})" if where else self.verdict


@dataclass(frozen=True)
class Spec:
    path: Path
    name: str
    description: str
    command: tuple              # argv with placeholders
    strategies: tuple           # () when the workload has none
    contract: str               # "atomic", "in-place" or "check"
    check: tuple | None         # checker argv when contract == "check"
    sizes: tuple
    old: str                    # "payload" or "absent"
    timeout: float              # seconds per run
    expect: tuple = ()          # Expect entries; () for correct workloads
    disk: str = "normal"        # "normal" or "full" (a real full tmpfs)
    sector: int = 4096          # bytes written atomically (power-loss tears)
    teaches: str | None = None
    fixed_by: str | None = None
    lesson: str | None = None   # what catches the variant and why
    old_dir: Path | None = None     # tree: the starting directory, absolute
    setup: tuple | None = None      # tree: argv that builds the start
    size_in_id: bool = True         # False: one size, case ids omit it
    fail_on: str = "error"          # the least severity that fails the run
                                    # (properties.py): "warning" is strict
    check_server: tuple | None = None   # check, kept running (protocol:
                                        # harness/engine/checkserver.py)

    @property
    def buggy(self):
        return bool(self.expect)

    @property
    def tree(self):
        """The tree contract: a directory as the start, a checker judges."""
        return self.contract == "tree"

    @property
    def here(self):
        """{here}: the spec file's directory, absolute."""
        return Path(self.path).resolve().parent

    def _substitute(self, argv, bin, target, new, strategy):
        if self.strategies:
            if strategy not in self.strategies:
                raise ValueError(f"{self.name}: strategy {strategy!r} is not one of "
                                 f"{', '.join(self.strategies)}")
        elif strategy is not None:
            raise ValueError(f"{self.name}: has no strategies, got {strategy!r}")
        values = {"bin": str(bin), "target": str(target), "new": str(new),
                  "strategy": strategy}
        if any("{here}" in arg for arg in argv):
            # resolved only where it is used: it looks at every directory
            # of the spec's path, and a sweep asks for the command line
            # twice a case (a quarter of a millisecond each)
            values["here"] = str(self.here)
        return [_BRACE.sub(lambda m: values[m.group(1)], arg) for arg in argv]

    def argv(self, bin, target, new, strategy=None):
        """The command with its placeholders replaced."""
        return self._substitute(self.command, bin, target, new, strategy)

    def check_argv(self, bin, target, new, strategy=None):
        """The checker command with its placeholders replaced."""
        if self.check is None:
            raise ValueError(f"{self.name}: contract is {self.contract}, not a checker")
        return self._substitute(self.check, bin, target, new, strategy)

    def check_server_argv(self, bin, target, new, strategy=None):
        """The check_server command with its placeholders replaced."""
        if self.check_server is None:
            raise ValueError(f"{self.name}: has no check_server")
        return self._substitute(self.check_server, bin, target, new, strategy)

    def setup_argv(self, bin, strategy=None):
        """The setup command with its placeholders replaced."""
        if self.setup is None:
            raise ValueError(f"{self.name}: has no setup")
        return self._substitute(self.setup, bin, None, None, strategy)


def _type_name(value):
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "a list", dict: "a table"}.get(type(value), type(value).__name__)


class _Checker:
    """Field checks for one file; every failure names the file and field."""

    def __init__(self, path):
        self.path = path

    def fail(self, field, problem):
        raise SpecError(self.path, field, problem)

    def string(self, field, value):
        if not isinstance(value, str):
            self.fail(field, f"expected a string, got {_type_name(value)}")
        if not value.strip():
            self.fail(field, "must not be empty")
        if "\n" in value:
            self.fail(field, "must be one line")
        return value

    def identifier(self, field, value):
        self.string(field, value)
        if not _NAME.match(value):
            self.fail(field, f"{value!r} is not a name: use lowercase letters, digits, "
                             "'-' and '_', starting with a letter or digit")
        return value

    def choice(self, field, value, choices):
        if not isinstance(value, str) or value not in choices:
            self.fail(field, f"{value!r} is not one of {', '.join(choices)}")
        return value

    def string_list(self, field, value):
        if not isinstance(value, list):
            self.fail(field, f"expected a list of strings, got {_type_name(value)}")
        if not value:
            self.fail(field, "must not be empty")
        for i, item in enumerate(value):
            if not isinstance(item, str):
                self.fail(field, f"element {i + 1} is {_type_name(item)}, expected a string")
        return tuple(value)

    def argv(self, field, value, strategies, allowed=PLACEHOLDERS):
        argv = self.string_list(field, value)
        if not argv[0]:
            self.fail(field, "the program (first element) must not be empty")
        used = set()
        for arg in argv:
            used.update(_BRACE.findall(arg))
            leftover = _BRACE.sub("", arg)
            if "{" in leftover or "}" in leftover:
                self.fail(field, f"unbalanced brace in {arg!r}")
        unknown = sorted(used - set(allowed))
        if unknown:
            known = " ".join(f"{{{p}}}" for p in allowed)
            if unknown[0] in PLACEHOLDERS:
                self.fail(field, f"{{{unknown[0]}}} cannot be used here; "
                                 f"it may use: {known}")
            self.fail(field, f"unknown placeholder {{{unknown[0]}}}; known: "
                             + known)
        if "strategy" in used and not strategies:
            self.fail(field, "uses {strategy} but the spec gives no strategies")
        return argv, used

    def integer(self, field, value, lo, hi):
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(field, f"expected an integer, got {_type_name(value)}")
        if not lo <= value <= hi:
            self.fail(field, f"{value} is out of range {lo}..{hi}")
        return value


def _parse(path, data):
    """The Spec of DATA, a spec file's table read from PATH; SpecError
    naming the first field that is wrong, checked in the file's order
    of importance (every step below fails on its own fields)."""
    c = _Checker(path)
    unknown = [k for k in data if k not in FIELDS]
    if unknown:
        c.fail(unknown[0], f"unknown field (known: {', '.join(FIELDS)})")
    tree = data.get("contract") == "tree"
    for req in ("name", "description", "command") + (() if tree else ("sizes",)):
        if req not in data:
            c.fail(req, "missing (required)")

    name = c.identifier("name", data["name"])
    description = c.string("description", data["description"])
    strategies = _parse_strategies(c, data)
    command, contract, check = _parse_commands(c, data, tree, strategies)
    check_server = _parse_check_server(c, data, tree, strategies)
    old_dir, setup = _parse_start(c, path, data, tree, strategies)
    sizes, size_in_id = _parse_sizes(c, data, tree)
    old = c.choice("old", data.get("old", "payload"), OLD_STATES)
    timeout, disk, fail_on, sector = _parse_run(c, data, tree)
    expect = _parse_expects(c, data, strategies, sizes)
    teaches, lesson, fixed_by = _parse_lesson(c, data, name, expect)

    return Spec(path=Path(path), name=name, description=description, command=command,
                strategies=strategies, contract=contract, check=check, sizes=sizes,
                old="absent" if tree else old, timeout=float(timeout), disk=disk,
                expect=tuple(expect), teaches=teaches, fixed_by=fixed_by,
                sector=sector, lesson=lesson, old_dir=old_dir, setup=setup,
                size_in_id=size_in_id, fail_on=fail_on,
                check_server=check_server)


def _parse_strategies(c, data):
    """The spec's strategies: identifiers, none twice; () for none."""
    strategies = ()
    if "strategies" in data:
        strategies = c.string_list("strategies", data["strategies"])
        for s in strategies:
            c.identifier("strategies", s)
        dup = [s for i, s in enumerate(strategies) if s in strategies[:i]]
        if dup:
            c.fail("strategies", f"{dup[0]!r} is given twice")
    return strategies


def _parse_commands(c, data, tree, strategies):
    """(command, contract, check): the program's command line, what
    judges it, and the checker's command line (None for none)."""
    command, used = c.argv("command", data["command"], strategies)
    if tree and "target" in used:
        c.fail("command", "{target} with contract = \"tree\": a tree has no "
                          "target file (the program runs in the tree)")
    if not tree and "target" not in used:
        c.fail("command", "must pass {target} to the program")
    if strategies and "strategy" not in used:
        c.fail("command", "gives strategies but never passes {strategy} to the program")

    check = None
    if tree:
        if "check" not in data:
            c.fail("check", "missing: contract = \"tree\" is judged by a checker "
                            "command alone")
        contract = "tree"
    elif ("contract" in data) == ("check" in data):
        c.fail("contract", "give exactly one of contract (atomic, in-place) and check "
                           "(a checker command), or contract = \"tree\" with check")
    else:
        contract = "check" if "check" in data else \
            c.choice("contract", data["contract"], CONTRACTS)
    if "check" in data:
        check, checked = c.argv("check", data["check"], strategies)
        if tree and "target" in checked:
            c.fail("check", "{target} with contract = \"tree\": a tree has no "
                            "target file (the checker runs in the tree)")
    return command, contract, check


def _parse_check_server(c, data, tree, strategies):
    """The check_server's command line, check kept running (None for
    none)."""
    check_server = None
    if "check_server" in data:
        if "check" not in data:
            c.fail("check_server", "without check: it is check kept running, "
                                   "and check is what its answers are held to")
        check_server, served = c.argv("check_server", data["check_server"],
                                      strategies)
        if tree and "target" in served:
            c.fail("check_server", "{target} with contract = \"tree\": a tree "
                                   "has no target file")
    return check_server


def _parse_start(c, path, data, tree, strategies):
    """(old_dir, setup) of a tree contract's starting tree (None where not
    given); these and old are each for one kind of contract."""
    old_dir = setup = None
    for fld in ("old_dir", "setup", "old"):
        if fld in data and tree == (fld == "old"):
            c.fail(fld, "only for contract = \"tree\"" if fld != "old" else
                   "not for contract = \"tree\": old_dir and setup make its "
                   "starting tree")
    if "old_dir" in data:
        raw = c.string("old_dir", data["old_dir"])
        old_dir = (Path(path).resolve().parent / raw)
        if not old_dir.is_dir():
            c.fail("old_dir", f"'{raw}' is not a directory")
    if "setup" in data:
        setup, _ = c.argv("setup", data["setup"], strategies, SETUP_PLACEHOLDERS)
    return old_dir, setup


def _parse_sizes(c, data, tree):
    """(sizes, size_in_id): the payload sizes, and whether case ids name
    them (not for a tree given none)."""
    size_in_id = True
    if tree and "sizes" not in data:
        raw_sizes, size_in_id = [0], False
    else:
        raw_sizes = data["sizes"]
    if not isinstance(raw_sizes, list):
        c.fail("sizes", f"expected a list of integers, got {_type_name(raw_sizes)}")
    if not raw_sizes:
        c.fail("sizes", "must not be empty")
    for v in raw_sizes:
        c.integer("sizes", v, 0, MAX_SIZE)
    dup = [v for i, v in enumerate(raw_sizes) if v in raw_sizes[:i]]
    if dup:
        c.fail("sizes", f"{dup[0]} is given twice")
    return tuple(raw_sizes), size_in_id


def _parse_run(c, data, tree):
    """(timeout, disk, fail_on, sector): how each run goes and what fails
    the sweep."""
    timeout = data.get("timeout", 10)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        c.fail("timeout", f"expected a number of seconds, got {_type_name(timeout)}")
    if not (math.isfinite(timeout) and 0 < timeout <= MAX_TIMEOUT):
        c.fail("timeout", f"{timeout} is not in (0, {MAX_TIMEOUT}] seconds")

    disk = c.choice("disk", data.get("disk", "normal"), DISKS)
    if tree and disk == "full":
        c.fail("disk", "\"full\" is not for contract = \"tree\" (the full disk "
                       "is sized from the target's contents)")

    fail_on = c.choice("fail_on", data.get("fail_on", "error"), FAIL_ON)

    sector = data.get("sector", 4096)
    if isinstance(sector, bool) or sector not in SECTORS:
        c.fail("sector", f"{sector!r} is not one of "
                         f"{', '.join(map(str, SECTORS))} bytes")
    return timeout, disk, fail_on, sector


def _parse_expects(c, data, strategies, sizes):
    """The spec's [[expect]] tables (_parse_expect each); [] for none."""
    expect = []
    raw_expect = data.get("expect", [])
    if not isinstance(raw_expect, list) or not all(isinstance(e, dict) for e in raw_expect):
        c.fail("expect", "expected [[expect]] tables")
    if "expect" in data and not raw_expect:
        c.fail("expect", "must not be empty (omit it for a correct workload)")
    for i, entry in enumerate(raw_expect, 1):
        expect.append(_parse_expect(c, f"expect[{i}]", entry, strategies, sizes))
    return expect


def _parse_lesson(c, data, name, expect):
    """(teaches, lesson, fixed_by) of a buggy variant (a spec with
    EXPECT); only it may give them, and it must say what it teaches."""
    teaches = fixed_by = lesson = None
    if "teaches" in data:
        teaches = c.string("teaches", data["teaches"])
    if "lesson" in data:
        lesson = c.string("lesson", data["lesson"])
    if "fixed_by" in data:
        fixed_by = c.identifier("fixed_by", data["fixed_by"])
        if fixed_by == name:
            c.fail("fixed_by", "names the spec itself")
    if expect and teaches is None:
        c.fail("teaches", "missing: a buggy variant (one with expect) must say "
                          "what defect it teaches")
    for fld in ("teaches", "lesson", "fixed_by"):
        if fld in data and not expect:
            c.fail(fld, "only for buggy variants (specs with [[expect]])")
    return teaches, lesson, fixed_by


def _parse_expect(c, where, entry, strategies, sizes):
    unknown = [k for k in entry if k not in EXPECT_FIELDS]
    if unknown:
        c.fail(f"{where}.{unknown[0]}",
               f"unknown field (known: {', '.join(EXPECT_FIELDS)})")
    if "verdict" not in entry:
        c.fail(f"{where}.verdict", "missing (required)")
    verdict = c.choice(f"{where}.verdict", entry["verdict"], FINDINGS)
    kind = model = strategy = size = call = backend = None
    if "kind" in entry:
        kind = c.choice(f"{where}.kind", entry["kind"], KINDS)
    if "model" in entry:
        text = c.string(f"{where}.model", entry["model"])
        if text in REAL_MODELS:
            model = text
        else:
            try:
                names = modelsmod.parse(text)
            except ValueError as e:
                c.fail(f"{where}.model", f"{e}; or a real kernel's: "
                                         f"{', '.join(REAL_MODELS)}")
            model = None if names == MODELS else ",".join(names)
    if "strategy" in entry:
        if not strategies:
            c.fail(f"{where}.strategy", "the spec has no strategies")
        strategy = c.choice(f"{where}.strategy", entry["strategy"], strategies)
    if "size" in entry:
        size = entry["size"]
        if isinstance(size, bool) or not isinstance(size, int) or size not in sizes:
            c.fail(f"{where}.size", f"{size!r} is not one of the spec's sizes "
                                    f"({', '.join(map(str, sizes))})")
    if "call" in entry:
        call = c.string(f"{where}.call", entry["call"])
        if not _CALL.match(call):
            c.fail(f"{where}.call", f"{call!r} is not a call coordinate like "
                          "'fsync(target.tmp)#1', or a call's name")
    if "backend" in entry:
        backend = c.choice(f"{where}.backend", entry["backend"], BACKENDS)
    return Expect(verdict=verdict, kind=kind, model=model, strategy=strategy,
                  size=size, call=call, backend=backend)


def load(path):
    """Read and validate one spec file; SpecError on any problem."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as e:
        raise SpecError(path, None, f"cannot read: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise SpecError(path, None, f"not UTF-8 text (byte {e.start})") from None
    except tomllib.TOMLDecodeError as e:
        msg = str(e)
        m = _TOML_POS.search(msg)
        if m:
            msg = _TOML_POS.sub("", msg)
            raise SpecError(path, f"line {m.group(1)}",
                            f"bad TOML: {msg} (column {m.group(2)})") from None
        if _TOML_EOF.search(msg):
            raise SpecError(path, "end of file",
                            f"bad TOML: {_TOML_EOF.sub('', msg)}") from None
        raise SpecError(path, None, f"bad TOML: {msg}") from None
    except RecursionError:
        # tomllib recurses once per nesting level of arrays and tables
        raise SpecError(path, None, "bad TOML: nested too deeply") from None
    return _parse(path, data)


def load_all(directory):
    """Every *.toml spec of a directory, sorted by file name.

    Besides each file's own checks: names are unique, and every fixed_by
    names a correct workload of the same directory.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise SpecError(directory, None, "not a directory")
    paths = sorted(directory.glob("*.toml"))
    if not paths:
        raise SpecError(directory, None, "holds no *.toml specs")
    specs = [load(p) for p in paths]
    by_name = {}
    for s in specs:
        if s.name in by_name:
            raise SpecError(s.path, "name", f"{s.name!r} is already the name of "
                                            f"{by_name[s.name].path.name}")
        by_name[s.name] = s
    for s in specs:
        if s.fixed_by is None:
            continue
        fixed = by_name.get(s.fixed_by)
        if fixed is None:
            raise SpecError(s.path, "fixed_by", f"no spec named {s.fixed_by!r} in {directory}")
        if fixed.expect:
            raise SpecError(s.path, "fixed_by", f"{s.fixed_by!r} is itself a buggy variant")
    return specs
