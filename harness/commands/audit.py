"""`crashcheck audit ... -- PROGRAM [ARG...]`: the sweep, on a user's program.

An audit is a workload spec made on the spot: its command is the user's
program, its contract --contract (or --check), its one "size" the length of
the new content, and its old and new contents come from the user's files
(--old/--absent, --new) or, by default, from generated payloads. It then
runs through the same pytest plugin as `crashcheck run`, so the cases, the
oracle, the power-loss explorer and the reports are the same.

The plugin learns about the audit from <out>/.audit/ (its --cc-audit
option names the file): audit.json (what `load` reads back into an
AuditSpec) and a copy of the old and the new content, made once from the
user's files, which are only read; for a tree (--old-dir, --setup) also
start/, the starting tree: a copy of --old-dir in which --setup ran. The
directory goes when the audit ends, unless --keep.

Inside a run the program's working directory is the scratch work directory
holding the target; `{target}` in its arguments is the target's name there,
`{new}` a path to the copy of the new content outside it.
"""

import json
import os
import re
import shlex
import shutil
import stat
from pathlib import Path

from .. import UsageError, command_name, results_root
from ..judging import payload
from . import run as runcmd
from ..engine import outdir
from ..engine import cases as casesmod, execute
from ..engine.spec import MAX_SIZE
from ..engine.auditspec import (AUDIT_DIR, NEW_FILE, OLD_FILE, SPEC_FILE,
                                START_DIR, shell_join)

# The default new content when --new is not given: two whole blocks and a
# byte, so a torn write shows block by block; the default old content is a
# block longer (cases.old_size), so a program that forgets to truncate
# leaves a visible tail.
DEFAULT_SIZE = 8193
DEFAULT_TIMEOUT = 10.0

PLACEHOLDERS = ("{target}", "{new}")
_NAME_BAD = re.compile(r"[^a-z0-9_-]+")


# A reproduce command longer than this (bytes) is written once, into
# REPRODUCE_SCRIPT in the output directory, and each case's reproduce
# line runs that script with the case's id: an audit of a program with
# long arguments (19 of 100 KB) put them in every case's line of every
# report, 155 MB of them.
LONG_COMMAND = 4096
REPRODUCE_SCRIPT = "reproduce.sh"


def write_script(out, rerun, program):
    """The name (relative to the working directory where it lies below
    it) of OUT/REPRODUCE_SCRIPT, made to rerun one case of the audit,
    its id the script's argument; None when the command is short."""
    whole = shell_join(list(rerun) + ["--case", "ID", "--"] + list(program))
    if len(whole.encode("utf-8", "surrogateescape")) <= LONG_COMMAND:
        return None
    path = Path(out) / REPRODUCE_SCRIPT
    rerun = list(rerun)
    if "/" in rerun[0]:
        rerun[0] = os.path.abspath(rerun[0])    # run from anywhere
    text = ("#!/bin/sh\n"
            "# crashcheck: reruns one case of this audit alone: "
            "sh reproduce.sh CASE-ID\n"
            "[ $# -eq 1 ] || { echo \"usage: sh $0 CASE-ID\" >&2; exit 2; }\n"
            "exec " + shell_join(list(rerun)) + ' --case "$1" -- '
            + shell_join(list(program)) + "\n")
    path.write_text(text, errors="surrogateescape")
    path.chmod(0o755)
    shown = os.path.abspath(path)
    rel = os.path.relpath(shown)
    return rel if not rel.startswith("..") else shown


def inputs_again(desc, directory):
    """An audit's .audit directory made again in DIRECTORY from its
    description DESC (an audit.json's, which results.json keeps as
    summary.run.audit): the contents read again from the files the audit
    was given, or generated as it generated them. UsageError when a file
    is gone. Returns the audit.json's path, for load()."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    try:
        new_file, old_file = desc.get("new_file"), desc.get("old_file")
        new = read_input("--new", new_file) if new_file else \
            payload.make(DEFAULT_SIZE, payload.NEW, 0)
        if desc["old"] == "absent":
            old = None
        elif old_file:
            old = read_input("--old", old_file)
        else:
            old = payload.make(casesmod.old_size(len(new)), payload.OLD, 0)
        (directory / NEW_FILE).write_bytes(new)
        if old is not None:
            (directory / OLD_FILE).write_bytes(old)
        desc = dict(desc, size=len(new))
        with open(directory / SPEC_FILE, "w") as fh:
            json.dump(desc, fh, indent=1)
    except (KeyError, TypeError, ValueError) as e:
        raise UsageError(f"not an audit's description: {e}") from None
    return directory / SPEC_FILE


# ------------------------------------------------------------ command line

def setup_audit(p):
    g = p.add_argument_group("what the program is given and must leave")
    old = g.add_mutually_exclusive_group()
    old.add_argument("--old", metavar="FILE",
                     help="the target's content before the run (default: a "
                          "generated payload)")
    old.add_argument("--absent", action="store_true",
                     help="the target does not exist before the run (the "
                          "program creates it)")
    old.add_argument("--old-dir", metavar="DIR",
                     help="audit a tree: the program's working directory "
                          "starts as a copy of DIR (a repository, a database "
                          "directory), judged by --check alone")
    g.add_argument("--setup", metavar="CMD",
                   help="audit a tree: a shell command run once, without the "
                        "fault library, in the starting directory (a copy of "
                        "--old-dir, or empty) to build the starting state, "
                        "e.g. 'git init -q && git add . && git commit -qm "
                        "old'; judged by --check alone")
    g.add_argument("--new", metavar="FILE",
                   help="the content the program must leave in the target; "
                        "{new} in its arguments is a copy of it (default: a "
                        "generated payload, for programs given {new})")
    g.add_argument("--target", metavar="NAME",
                   help="the target's file name in the work directory "
                        "(default: target)")
    judged = g.add_mutually_exclusive_group()
    # a tree's contract comes with --old-dir or --setup, judged by --check
    judged.add_argument("--contract", choices=("atomic", "in-place"),
                        help="what the program promises (default: atomic)")
    judged.add_argument("--check", metavar="CMD",
                        help="judge each state with CMD instead (split like a "
                             "shell would, no shell; {target} substituted; run "
                             "in the state's directory with CRASHCHECK_EXPECT "
                             "= new or old-or-new; exit 0 = acceptable)")
    p.add_argument("--case", metavar="ID", action="append", default=[],
                   help="run only this case (exact id, as in a reproduce "
                        "command); repeatable")
    runcmd.add_sweep_options(p)
    # The shared options' help speaks of specs; an audit has its own defaults.
    for action in p._actions:
        if action.dest == "out":
            action.help = "results directory (default: results/audit-PROGRAM/)"
        elif action.dest == "timeout":
            action.help = "seconds per run (default: 10)"
    from .cli import add_program
    add_program(p)


def program_name(argv0):
    """A case-id-safe name from the program's file name: 'sqlite3',
    'my-tool', 'python3'."""
    name = _NAME_BAD.sub("-", os.path.basename(argv0).lower()).strip("-_")
    return name or "program"


def resolve_program(name, what):
    """The program as an absolute path when it has a '/' (it runs in a
    scratch directory, not here); checked so a typo is a usage error."""
    if not name:
        raise UsageError(f"{what}: empty program name")
    if "/" in name:
        path = Path(name)
        try:
            os.stat(path)
        except FileNotFoundError:
            raise UsageError(f"{what}: program not found: {name}") from None
        except OSError as e:
            # a directory on its way we may not search
            raise UsageError(f"{what}: cannot reach {name}: "
                             f"{e.strerror}") from None
        if path.is_dir():
            raise UsageError(f"{what}: program is a directory: {name}")
        if not os.access(path, os.X_OK):
            raise UsageError(f"{what}: program not executable: {name}")
        return str(path.absolute())
    if shutil.which(name) is None:
        raise UsageError(f"{what}: program not found in PATH: {name}")
    return name


def read_input(option, name):
    """A user's content file, read (never written), with its problem named.
    Opened without blocking, so that a FIFO nobody writes into is refused
    rather than waited on, and read by its size, so that a small file
    costs a small buffer (a limited address space has no 64 MiB to spare)."""
    path = Path(name)
    if path.is_dir():
        raise UsageError(f"{option}: '{name}' is a directory")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise UsageError(f"{option}: cannot read '{name}': {e.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UsageError(f"{option}: '{name}' is not a regular file"
                             f" ({_file_kind(st.st_mode)})")
        if st.st_size > MAX_SIZE:
            raise UsageError(f"{option}: '{name}' is larger than "
                             f"{MAX_SIZE >> 20} MiB")
        chunks, got = [], 0
        while got <= MAX_SIZE:
            chunk = os.read(fd, min(max(st.st_size - got, 0) + 1,
                                    MAX_SIZE + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        data = b"".join(chunks)
    except OSError as e:
        raise UsageError(f"{option}: cannot read '{name}': {e.strerror}") from None
    except MemoryError:
        raise UsageError(f"{option}: not enough memory to read '{name}' "
                         f"({st.st_size} bytes)") from None
    finally:
        os.close(fd)
    if len(data) > MAX_SIZE:
        raise UsageError(f"{option}: '{name}' is larger than {MAX_SIZE >> 20} MiB")
    return data


def _file_kind(mode):
    """"a FIFO", "a character device"...: what a file that is not a
    regular file is."""
    for test, kind in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "not a file"


def target_arg(text):
    if text is None:
        return casesmod.TARGET
    if (not text or "/" in text or text in (".", "..") or "\0" in text
            or text.startswith("-")):
        raise UsageError(f"--target: '{text}' is not a plain file name "
                         "(no '/', not '.' or '..', not starting with '-')")
    if len(os.fsencode(text)) > 200:
        raise UsageError(f"--target: '{text[:40]}...' is too long "
                         "(at most 200 bytes)")
    return text


def check_arg(text):
    if text is None:
        return None
    try:
        argv = shlex.split(text)
    except ValueError as e:
        raise UsageError(f"--check: cannot split '{text}': {e}") from None
    if not argv:
        raise UsageError("--check: empty command")
    argv[0] = resolve_program(argv[0], "--check")
    return argv


def rerun_argv(args):
    """`crashcheck audit` with the options that decide the cases, for the
    reproduce command: where the results go and how the work is spread
    (--out, --jobs, --shard, --keep) are left out, so the rerun of one
    case never overwrites the audit's reports."""
    argv = [command_name(), "audit"]
    for opt, value in (("--old", args.old), ("--old-dir", args.old_dir),
                       ("--setup", args.setup), ("--new", args.new),
                       ("--target", args.target), ("--contract", args.contract),
                       ("--check", args.check), ("--faults", args.faults),
                       ("--timeout", args.timeout)):
        if value is not None:
            argv += [opt, value]
    if args.absent:
        argv.append("--absent")
    if args.backend != "auto":
        argv += ["--backend", args.backend]
    if args.model is not None:
        argv += ["--model", args.model]
    if args.fs is not None:
        argv += ["--fs", args.fs]
    if args.seed != "0":
        argv += ["--seed", args.seed]
    if args.cap != "64":
        argv += ["--cap", args.cap]
    if args.sector is not None:
        argv += ["--sector", args.sector]
    if args.strict:
        argv.append("--strict")
    if getattr(args, "fail_on", None):
        argv += ["--fail-on", args.fail_on]
    # what decides how a run goes: its HOME, and where it is stopped
    if args.home:
        argv.append("--home")
    if args.scratch_limit is not None:
        argv += ["--scratch-limit", args.scratch_limit]
    if args.trace_limit is not None:
        argv += ["--trace-limit", args.trace_limit]
    # and where: a case the scratch had no room for reruns in the same
    if args.scratch is not None:
        argv += ["--scratch", args.scratch]
    if args.sample is not None:
        argv += ["--sample", args.sample]
    if args.exhaustive:
        argv.append("--exhaustive")
    return argv


def cmd_audit(args):
    """audit a program of yours: every call x fault, and power loss

    Runs PROGRAM in a private scratch directory holding the target (named
    'target', or --target NAME) with the old content (--old FILE; --absent
    for a program that creates it; default a generated payload). In its
    arguments {target} is the target's name (the program runs in that
    directory: give other files by absolute path) and {new} a path to a
    copy of --new, the content it must leave (default: a generated payload,
    for programs that copy {new}).

    The run is recorded, then swept like a workload spec: one case per
    traced call on the scratch directory and fault class, one power-loss
    case per crash point and model, each judged against --contract
    (default atomic) or by --check CMD. When the trace shows nothing the
    program did to the target (a static binary, raw system calls,
    io_uring), the audit says so and fails instead of passing.

    Reports go to --out (default results/audit-PROGRAM/): results.json,
    report.md, report.html, junit.xml, and cases/<id>/ for each finding.
    --out must be new, empty, or crashcheck's (it holds the marker file
    .crashcheck); only crashcheck's own files there are replaced.

    With --fs ext4, xfs or btrfs (root only) every run is on a fresh
    loop-mounted filesystem of that type, and each crash point also gets
    a case judged on the real kernel (FS-real): the program killed there,
    the filesystem cut off from its disk and mounted again.

    Exit status: 0 no finding; 1 findings (one line each, with the command
    that reruns it alone); 2 a usage or setup error (one line).
    """
    program = list(args.program)
    exe = resolve_program(program[0], "program")
    tree = args.old_dir is not None or args.setup is not None
    target, check, contract = audit_contract(args, program, tree)
    old, new = audit_contents(args, tree)

    name = program_name(program[0])
    default = results_root() / ("rerun" if args.case else f"audit-{name}")
    out = Path(args.out) if args.out else default
    rerun = rerun_argv(args)
    command = audit_command(args, program, rerun)
    # Every option is checked (pytest_args) before anything is written.
    out = runcmd.out_path(args, default)
    if tree and args.old_dir is not None:
        old_dir_arg(args.old_dir, out.resolve())
    inputs = out / AUDIT_DIR
    argv = runcmd.pytest_args(args, [], out, command) + \
        ["--cc-audit", str(inputs / SPEC_FILE)]
    outdir.claim(out)
    # .audit is ours in a directory that is ours (outdir)
    shutil.rmtree(inputs, ignore_errors=True)
    try:
        inputs.mkdir()
        desc = write_inputs(args, out, inputs, program, exe, dict(
            name=name, contract=contract, check=check, target=target,
            rerun=rerun), old, new)
    except OSError as e:
        shutil.rmtree(inputs, ignore_errors=True)
        outdir.release(out, refused=True)
        raise UsageError(f"--out: cannot write '{inputs}': {e.strerror}") from None
    try:
        if tree:
            # once, here: every run of the audit starts from a copy of it
            execute.build_start(
                inputs / START_DIR, args.old_dir,
                ["/bin/sh", "-c", args.setup] if args.setup else None,
                min(execute.SETUP_TIMEOUT, 10 * desc["timeout"]),
                "--old-dir", "--setup")
        return runcmd.sweep(argv, out)
    finally:
        if not args.keep:
            shutil.rmtree(inputs, ignore_errors=True)


def audit_contract(args, program, tree):
    """(target, check, contract) of an audit of PROGRAM (a TREE's when it
    gives --old-dir or --setup); UsageError where its arguments cannot
    say what it must leave, or in which file."""
    if tree:
        check_tree_args(args, program)
    target = target_arg(args.target) if not tree or args.target else None
    check = check_arg(args.check)
    contract = "tree" if tree else \
        "check" if check else (args.contract or "atomic")
    uses_new = any("{new}" in a for a in program[1:])
    if args.new is None and not uses_new and contract == "atomic" or \
            args.new is None and not uses_new and contract == "in-place":
        raise UsageError("--new FILE is required: the program's arguments "
                         "have no {new}, so crashcheck cannot know what it "
                         "must leave in the target")
    if not tree and not any("{target}" in a for a in program[1:]) \
            and args.target is None:
        # A program may have the file name built in (--target says which);
        # a default-named target that nobody passes to it is a mistake.
        raise UsageError("the program's arguments have no {target}: pass "
                         "{target}, or name the file it writes with --target")
    return target, check, contract


def audit_contents(args, tree):
    """(old, new): --old and --new read, or generated payloads; old is
    None for --absent and for a tree."""
    old = None if args.absent else (read_input("--old", args.old)
                                    if args.old is not None else None)
    new = read_input("--new", args.new) if args.new is not None else None
    if new is None:
        new = payload.make(DEFAULT_SIZE, payload.NEW, 0)
    if old is None and not args.absent and not tree:
        old = payload.make(casesmod.old_size(len(new)), payload.OLD, 0)
    return old, new


def audit_command(args, program, rerun):
    """The audit's command line as every report shows it at the top; a
    long one cut to its program and the number of its arguments, the
    whole in REPRODUCE_SCRIPT."""
    command = shell_join(rerun[:1] + ["audit"] + _shown_options(args)
                         + ["--"] + program)
    if len(command) > LONG_COMMAND:
        # shown once at the top of every report: its program and the
        # number of its arguments, the whole in REPRODUCE_SCRIPT
        command = shell_join(rerun[:1] + ["audit"] + _shown_options(args)
                             + ["--", program[0]]) + \
            f" ... ({len(program) - 1} arguments, {len(command)} bytes in " \
            f"all: see {REPRODUCE_SCRIPT})"
    return command


def write_inputs(args, out, inputs, program, exe, what, old, new):
    """Write the audit's inputs in INPUTS (made, empty): its new and old
    contents and its spec (SPEC_FILE: WHAT, the name, contract, check,
    target and rerun command, with the rest from ARGS); the spec's
    dict. OSError as writing raises it."""
    (inputs / NEW_FILE).write_bytes(new)
    if old is not None:
        (inputs / OLD_FILE).write_bytes(old)
    name = what["name"]
    desc = {
        "name": name,
        "description": f"audit of {shell_join(program)}"
        if len(shell_join(program)) <= LONG_COMMAND else
        f"audit of {shell_join(program[:1])} and {len(program) - 1} "
        "arguments",
        "command": [exe] + program[1:],
        "contract": what["contract"],
        "check": what["check"],
        "size": len(new),
        "old": "absent" if old is None else "payload",
        "timeout": runcmd._timeout(args.timeout) or DEFAULT_TIMEOUT,
        "target": what["target"],
        "rerun": what["rerun"],
        "program": program,
        # where the contents came from, for `crashcheck replay` of one
        # of its cases (None: generated, as above)
        "old_file": None if args.old is None
        else os.path.abspath(args.old),
        "new_file": None if args.new is None
        else os.path.abspath(args.new),
        "home": bool(args.home),
        "script": write_script(out, what["rerun"], program),
    }
    with open(inputs / SPEC_FILE, "w") as fh:
        json.dump(desc, fh, indent=1)
    return desc


def check_tree_args(args, program):
    """The options of a tree's audit (--old-dir, --setup) that cannot go
    with it, or that it needs: one line each, exit 2."""
    if args.absent or args.old is not None:
        raise UsageError("--setup: not with --old or --absent: a tree starts "
                         "from --old-dir and --setup")
    if args.contract is not None:
        raise UsageError("--contract: a tree (--old-dir, --setup) is judged "
                         "by --check alone")
    if args.check is None:
        raise UsageError("--check CMD is required: a tree (--old-dir, --setup) "
                         "is judged by a checker alone, run in each state's "
                         "directory")
    if args.setup is not None and not args.setup.strip():
        raise UsageError("--setup: empty command")
    if args.target is None:
        uses = [a for a in program[1:] + [args.check] if "{target}" in a]
        if uses:
            raise UsageError("{target} in a tree's audit needs --target NAME: "
                             "the file of the tree it stands for")


def old_dir_arg(text, out):
    """--old-dir: a directory we can read, not the results directory or
    one holding it (the copy would hold itself)."""
    path = Path(text)
    if not path.is_dir():
        raise UsageError(f"--old-dir: '{text}' is not a directory")
    if not os.access(path, os.R_OK | os.X_OK):
        raise UsageError(f"--old-dir: cannot read '{text}'")
    here = path.resolve()
    if out == here or here in out.parents:
        raise UsageError(f"--old-dir: '{text}' holds the results directory "
                         f"'{out}'")


def _shown_options(args):
    """The options as typed, for the reports' command line."""
    shown = rerun_argv(args)[2:]
    for opt, value in (("--shard", args.shard), ("--jobs", args.jobs),
                       ("--out", args.out), ("--scratch", args.scratch)):
        if value is not None:
            shown += [opt, value]
    if args.keep:
        shown.append("--keep")
    if args.exec_each:
        shown.append("--exec-each")
    if args.whole_traces:
        shown.append("--whole-traces")
    for case in args.case:
        shown += ["--case", case]
    return shown
