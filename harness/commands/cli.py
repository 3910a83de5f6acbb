"""crashcheck's command line.

Subcommands live in SUBCOMMANDS: name -> (setup, run). `setup(parser)` adds
the subcommand's arguments to its own argparse parser (and calls
add_program() last if it runs a program given after `--`); `run(args)`
does the work and returns the exit status. The run function's docstring
is the subcommand's help: its first line is the one-line summary shown by
`crashcheck --help`, the rest the description shown by `crashcheck NAME
--help`. A new subcommand (run, audit, replay, merge) is one more entry.

Every error is one line, `crashcheck: <problem>`, on stderr, and exit
status 2: raise harness.UsageError (or a subclass) with the problem.
"""

import argparse
import atexit
import math
import os
import resource
import shutil
import signal
import sys
import tempfile
import threading
from fnmatch import fnmatchcase
from pathlib import Path

from .. import VERSION, UsageError
from ..engine import backend as backend_mod
from .. import calls as calls_mod
from ..engine import plan as plan_mod
from . import audit, merge as mergecmd, replay, run as runcmd
from ..engine import outdir
from ..reports import topics
from ..engine import contain, runner, tracecut
from ..engine import trace as trace_mod

PROG = "crashcheck"

EXIT_USAGE = 2          # bad input; nothing was run
EXIT_NEVER_FIRED = 3    # inject --strict: a rule of the plan never fired
EXIT_TIMEOUT = 124      # the time limit struck (as timeout(1) reports it)
EXIT_INTERRUPTED = 130  # ^C


class ArgumentParser(argparse.ArgumentParser):
    """argparse, but an error is one line through UsageError instead of a
    usage dump and exit from deep inside the parser."""

    def error(self, message):
        raise UsageError(f"{message} (see '{self.prog} --help')")


def add_program(parser):
    """Declare that the subcommand runs `-- PROGRAM [ARG...]`: the words
    after the first `--` belong to the program and are never parsed by us
    (so `crashcheck inject P -- prog --help` asks prog for help)."""
    parser.set_defaults(takes_program=True)
    usage = parser.format_usage().strip()
    usage = usage.removeprefix("usage: ")
    parser.usage = f"{usage} -- PROGRAM [ARG...]"


def positive_seconds(text):
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(
            f"'{text}' is not a positive number of seconds")
    return value


def program_argv(args):
    """The program and its arguments, checked: it must exist and be
    executable, so that a typo is a usage error and not a run that
    'failed' with status 127."""
    argv = args.program
    name = argv[0]
    if not name:
        raise UsageError("empty program name after '--'")
    if "/" in name:
        path = Path(name)
        if not path.exists():
            raise UsageError(f"program not found: {name}")
        if path.is_dir():
            raise UsageError(f"program is a directory: {name}")
        if not os.access(path, os.X_OK):
            raise UsageError(f"program not executable: {name}")
    elif shutil.which(name) is None:
        raise UsageError(f"program not found in PATH: {name}")
    return argv


def signal_name(num):
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


class Workdir:
    """The private files of one run (trace, shared counters), in a fresh
    directory under the scratch base, removed afterwards. The trace can be
    redirected to a file the user keeps."""

    def __init__(self, keep_trace=None):
        self.keep_trace = keep_trace

    def __enter__(self):
        self._tmp = tempfile.TemporaryDirectory(
            prefix="crashcheck-", dir=runner.scratch_base())
        base = Path(self._tmp.name)
        # Absolute paths: the program and its children may chdir.
        self.trace = (Path(self.keep_trace).absolute() if self.keep_trace
                      else base / "trace.jsonl")
        self.shared = base / "shared"
        # The library appends; start from an empty file so a kept trace
        # never mixes with an earlier run's.
        try:
            with open(self.trace, "wb"):
                pass
        except OSError as e:
            self._tmp.cleanup()
            raise UsageError(f"cannot create trace file '{self.trace}': "
                             f"{e.strerror}") from None
        return self

    def __exit__(self, *exc):
        self._tmp.cleanup()


def add_backend(p):
    """--backend, for the commands that run a program."""
    p.add_argument("--backend", choices=backend_mod.BACKENDS, default="auto",
                   help="how calls are intercepted: the preload library, "
                        "the system-call supervisor, or auto (the preload, "
                        "but the supervisor for static, Go and setuid "
                        "programs; default)")


def add_trace_limit(p):
    """--trace-limit, for the commands that run a program."""
    p.add_argument("--trace-limit", metavar="SIZE",
                   help="bytes of trace the run may write (e.g. 64M; 0: no "
                        "limit; default: 32M); past it the calls are "
                        "counted, not written down, and crashcheck says how "
                        "many")


def trace_limit_of(args):
    """The bytes of --trace-limit (0: none), checked before anything
    runs or is written."""
    if args.trace_limit is None:
        return tracecut.LIMIT
    return runcmd.trace_limit(args.trace_limit)


def run_program(args, plan=""):
    """Run the program of args with inherited stdio, its trace held to
    --trace-limit; returns (Run, the trace as a trace.Lazy, whose each()
    walks its records, and its Cut or None: the records are those before
    it)."""
    argv = program_argv(args)
    limit = trace_limit_of(args)
    backend, why = backend_mod.resolve(args.backend, argv[0], os.getcwd())
    if why:
        say_line(f"{why}: using the system-call backend (--backend=syscall)")
    with Workdir(getattr(args, "trace", None)) as wd:
        run = runner.run(argv, cwd=os.getcwd(), plan=plan, trace=wd.trace,
                         watch=os.getcwd(),
                         shared=wd.shared, timeout=args.timeout,
                         passthrough=True, backend=backend,
                         trace_limit=limit or None)
        whole = trace_mod.read_whole(wd.trace)
        if wd.keep_trace:
            # the user's copy as the library meant it: no zeros past the
            # end of the shared mapping it was written through, and the
            # line that says it was cut, if it was
            try:
                with open(wd.trace, "wb") as fh:
                    fh.write(whole)
            except OSError as e:
                raise UsageError(f"cannot write trace file '{wd.trace}': "
                                 f"{e.strerror}") from None
        data, cut = trace_mod.split_cut(whole)
        del whole
        lazy = trace_mod.Lazy(data, wd.trace)
    return run, lazy, cut


def cut_text(cut):
    """The one line that says what a cut trace left out."""
    return f"the trace was cut: {cut.text()} (--trace-limit)"


def unseen_text(r):
    """What the record R shows the backend could not see, or "": an
    io_uring the program set up (its I/O is neither faulted nor traced)."""
    if r["ev"] == "call" and r["call"] == "io_uring_setup" and \
            r.get("ret", -1) >= 0:
        return (f"the program set up an io_uring (io_uring_setup#{r['n']}): "
                "I/O it submits there is neither faulted nor traced")
    return ""


def report_unseen(records, say):
    """Say the first unseen_text of RECORDS (any iterable of them)."""
    for r in records:
        text = unseen_text(r)
        if text:
            say(text)
            return


def report_exit(run, lazy, say):
    """The lines every run ends with when something unusual happened, and
    the status crashcheck exits with (the program's, as a shell reports
    it). LAZY: its trace (a trace.Lazy)."""
    if run.timed_out:
        say(f"timed out after {run.duration:.1f} s: killed the program's "
            "process group")
        return EXIT_TIMEOUT
    for what in run.outlived:
        say(f"still running when the program ended, killed: {what}")
    if run.signal is not None:
        planned = run.signal == signal.SIGKILL and lazy.has("crash")
        if not planned:
            say(f"the program was killed by {signal_name(run.signal)}")
    return run.shell_status


def _matches(glob, path):
    return bool(path) and (fnmatchcase(path, glob)
                           or fnmatchcase(os.path.basename(path), glob))


def never_fired_reason(rule, records):
    """What the program did instead: how many calls the rule could have
    counted, so the user sees why N was never reached. RECORDS: any
    iterable of them, walked once, none kept."""
    name, glob, thread = rule["call"], rule.get("glob"), rule.get("thread")
    made, on = set(), set()
    for r in records:
        if r["ev"] == "call" and r["call"] == name \
                and (thread is None or r.get("thread", 1) == thread):
            made.add(r["n"])
            # As the library matches (faults/plan.c): the call's first
            # path (a rename's old name), whole or its last component,
            # fnmatch flags 0.
            if glob is not None and _matches(glob, r.get("path")):
                on.add(r["n"])
    where = f" in thread {thread}" if thread else ""
    if not made:
        return f"the program made no {name} calls{where}"
    total = f"the program made {len(made)} {name} " \
            f"call{'s' if len(made) != 1 else ''}{where}"
    if glob is None:
        return total
    return f"{total}, {len(on)} on a path matching '{glob}'"


def say_line(text):
    print(f"{PROG}: {text}", file=sys.stderr, flush=True)


# --- inject ---------------------------------------------------------------

def setup_inject(p):
    p.add_argument("plan", metavar="PLAN",
                   help="the faults to inject, e.g. 'fsync#1=EIO' or "
                        "'write(*.tmp)#2+=ENOSPC;rename#1=crash'")
    p.add_argument("--trace", metavar="FILE",
                   help="keep the trace (JSON lines) in FILE, overwriting "
                        "it (default: a temporary file, removed)")
    p.add_argument("--timeout", metavar="S", type=positive_seconds,
                   help="kill the program's process group after S seconds "
                        "and exit 124 (default: no limit)")
    p.add_argument("--strict", action="store_true",
                   help="exit 3 when a rule never fired (or was not seen "
                        "to before a cut of the trace), whatever the "
                        "program's status")
    add_trace_limit(p)
    add_backend(p)
    add_program(p)


def cmd_inject(args):
    """run a program with planned faults and say which ones fired

    Runs PROGRAM in the current directory with the fault library preloaded
    (or under the system-call supervisor: --backend) and PLAN set; its
    stdin, stdout and stderr are yours. Then prints, on
    stderr, one line per rule: `crashcheck: fired RULE (N calls)` or
    `crashcheck: never fired: RULE (...)` -- a rule that never fired did
    nothing to the program, and its outcome says nothing about that fault.

    PLAN := RULE (';' RULE)*, RULE := CALL ['(' GLOB ')'] ['@' THREAD] '#' N
    ['+' ['+']] '=' ACTION, ACTION := ERRNO-NAME | short[:BYTES] | crash |
    crash-after (docs/reference.md, "Plans"). N counts calls across the
    whole process tree; with @THREAD, the calls of that thread of its
    process alone (1 its first, then in the order they were made).

    The trace is held to --trace-limit (32 MiB by default): past it the
    calls are counted, not written down, and a line says how many,
    `crashcheck: the trace was cut: N lines (S) past its limit of 32.0
    MiB (--trace-limit)`; the rules' counts are then those of the calls
    before the cut (`fired RULE (N calls before the cut)`, `not seen to
    fire before the cut: RULE (...)`).

    Exit status: the program's (128+N when it died of signal N, so a
    planned crash gives 137); 2 for a bad plan or command line (the
    program never ran); 3 with --strict when a rule never fired, or was
    not seen to before the cut; 124 when --timeout struck.
    """
    rules = plan_mod.parse(args.plan)["rules"]
    if not rules:
        raise UsageError("empty plan: nothing to inject (to run without "
                         "faults use 'crashcheck trace')")
    trace_limit_of(args)    # a bad limit runs nothing
    run, lazy, cut = run_program(args, plan=args.plan)
    status = report_exit(run, lazy, say_line)
    if cut is not None:
        say_line(cut_text(cut))
    if not lazy.has("init"):
        say_line(f"the fault library did not load in {args.program[0]} "
                 "(statically linked or setuid?): no rule could fire "
                 "(--backend=syscall reaches such programs)")
    report_unseen(lazy.each(), say_line)
    never = 0
    texts = [rule["text"] for rule in rules]
    before = " before the cut" if cut is not None else ""
    for rule, fired in zip(rules, trace_mod.fired(lazy.each(), texts)):
        count = fired.count
        if count:
            say_line(f"fired {rule['text']} "
                     f"({count} call{'s' if count != 1 else ''}{before})")
        elif cut is not None:
            # it may have fired past the cut: not seen is all we know
            never += 1
            say_line(f"not seen to fire before the cut: {rule['text']} "
                     f"({never_fired_reason(rule, lazy.each())} before it)")
        else:
            never += 1
            say_line(f"never fired: {rule['text']} "
                     f"({never_fired_reason(rule, lazy.each())})")
    if status == EXIT_TIMEOUT:
        return status
    if never and args.strict:
        return EXIT_NEVER_FIRED
    return status


# --- trace ----------------------------------------------------------------

def setup_trace(p):
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write the listing to FILE instead of stderr")
    p.add_argument("--all", action="store_true",
                   help="also list process starts, and prefix every line "
                        "with its pid")
    p.add_argument("--timeout", metavar="S", type=positive_seconds,
                   help="kill the program's process group after S seconds "
                        "and exit 124 (default: no limit)")
    add_trace_limit(p)
    add_backend(p)
    add_program(p)


def cmd_trace(args):
    """run a program without faults and list the calls a plan can name

    Runs PROGRAM in the current directory with the fault library preloaded
    (or under the system-call supervisor: --backend) and no plan, then
    lists every intercepted call, numbered as plans count it (across the
    whole process tree), one per line:

        fsync#1 fd=3 'target.tmp' = 0

    A call of a thread past its process's first says which ([thread 2]:
    the plan's @2). Paths under the current directory are shown relative
    to it. The
    listing goes to stderr (like strace), after the program's own output,
    or to FILE with --output. The trace is held to --trace-limit (32 MiB
    by default): past it the calls are counted, not written down, and the
    listing ends in a line that says how many, `[... the trace was cut: N
    lines (S) past its limit of 32.0 MiB (--trace-limit) ...]`. Exit
    status: the program's (128+N for signal N); 2 for a bad command line;
    124 when --timeout struck.
    """
    program_argv(args)      # a bad program must not leave an empty listing
    trace_limit_of(args)    # nor a bad limit
    if args.output:
        out_path = Path(args.output)
        try:
            out = open(out_path, "w")
        except OSError as e:
            raise UsageError(f"cannot write listing '{out_path}': "
                             f"{e.strerror}") from None
    else:
        out = None
    try:
        run, lazy, cut = run_program(args)
        nameable = set(calls_mod.table())
        base = os.getcwd()
        lines = []
        unseen = ""
        # a walk of the records, never all of them parsed at once
        for r in lazy.each():
            unseen = unseen or unseen_text(r)
            if r["ev"] == "init":
                if args.all:
                    lines.append(f"[pid {r.get('pid')}] start "
                                 f"{r.get('exe', '?')} "
                                 f"(parent {r.get('ppid', '?')})")
            elif args.all or r["call"] in nameable:
                lines.append(trace_mod.format_call(r, base=base,
                                                   show_pid=args.all))
        if cut is not None:
            # where the listing stops short of what the program did
            lines.append(f"[... {cut_text(cut)} ...]")
        text = "".join(line + "\n" for line in lines)
        if out is not None:
            try:
                out.write(text)
                out.flush()
            except OSError as e:
                raise UsageError(f"cannot write listing '{out_path}': "
                                 f"{e.strerror}") from None
        else:
            sys.stderr.write(text)
            sys.stderr.flush()
    finally:
        if out is not None:
            try:
                out.close()
            except OSError:
                pass    # said above, or nothing was left to write
    if unseen:
        say_line(unseen)
    if cut is not None and out is not None:
        say_line(cut_text(cut))
    return report_exit(run, lazy, say_line)


# --- help -----------------------------------------------------------------

def setup_help(p):
    p.add_argument("topic", metavar="TOPIC", nargs="?",
                   help="a topic (" + ", ".join(topics.TOPICS) +
                        ") or a command")


def cmd_help(args):
    """explain a topic (verdicts, plans) or a command

    `crashcheck help verdicts` says what each verdict means, and what
    caught, NOT CAUGHT and not run mean for a buggy variant; `crashcheck
    help plans` gives the plan language and the calls a plan can name.
    `crashcheck help COMMAND` is `crashcheck COMMAND --help`. Without a
    topic, lists the topics and the commands.
    """
    parser = build_parser()
    topic = args.topic
    if topic is None:
        lines = ["topics:"]
        lines += [f"  {name:10s}{summary}"
                  for name, (summary, _) in topics.TOPICS.items()]
        lines += ["commands:"]
        lines += [f"  {name:10s}{(run.__doc__ or '').strip().partition(chr(10))[0]}"
                  for name, (_, run) in SUBCOMMANDS.items()]
        lines += [f"Run '{PROG} help TOPIC' or '{PROG} COMMAND --help'."]
        print("\n".join(lines))
        return 0
    if topic in topics.TOPICS:
        print(topics.TOPICS[topic][1]())
        return 0
    if topic in SUBCOMMANDS:
        sub = subparser(parser, topic)
        print(sub.format_help(), end="")
        return 0
    raise UsageError(f"help: no topic or command '{topic}' (topics: "
                     f"{', '.join(topics.TOPICS)}; commands: "
                     f"{', '.join(SUBCOMMANDS)})")


def subparser(parser, name):
    """The argparse parser of subcommand NAME."""
    for action in parser._subparsers._group_actions:
        if name in action.choices:
            return action.choices[name]
    raise KeyError(name)


SUBCOMMANDS = {
    "inject": (setup_inject, cmd_inject),
    "trace": (setup_trace, cmd_trace),
    "run": (runcmd.setup_run, runcmd.cmd_run),
    "replay": (replay.setup_replay, replay.cmd_replay),
    "audit": (audit.setup_audit, audit.cmd_audit),
    "merge": (mergecmd.setup_merge, mergecmd.cmd_merge),
    "help": (setup_help, cmd_help),
}


def build_parser():
    parser = ArgumentParser(
        prog=PROG, allow_abbrev=False,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="crash-consistency and error-handling test harness: "
                    "runs programs under planned I/O faults and crashes",
        epilog="Run 'crashcheck COMMAND --help' for a command's options,\n"
               "'crashcheck help verdicts' and 'crashcheck help plans' for "
               "those topics.\n"
               "Errors are one line on stderr and exit status 2.")
    parser.add_argument("--version", action="version",
                        version=f"{PROG} {VERSION}",
                        help="print crashcheck's version and exit")
    sub = parser.add_subparsers(dest="subcommand", metavar="COMMAND",
                                parser_class=ArgumentParser)
    for name, (setup, run) in SUBCOMMANDS.items():
        doc = (run.__doc__ or "").strip()
        summary, _, rest = doc.partition("\n")
        sp = sub.add_parser(
            name, help=summary, description=summary + "\n" + rest
            if rest else summary, allow_abbrev=False,
            formatter_class=argparse.RawDescriptionHelpFormatter)
        sp.set_defaults(run=run, takes_program=False)
        setup(sp)
    return parser


def dispatch(argv):
    parser = build_parser()
    if "--" in argv:
        i = argv.index("--")
        ours, program = argv[:i], argv[i + 1:]
    else:
        ours, program = argv, None
    args, extra = parser.parse_known_args(ours)
    if args.subcommand is None:
        raise UsageError("missing command (one of: "
                         f"{', '.join(SUBCOMMANDS)}; see '{PROG} --help')")
    name = args.subcommand
    if args.takes_program:
        if program is None:
            raise UsageError(f"{name}: missing '--' before the program "
                             f"(usage: {PROG} {name} ... -- PROGRAM [ARG...])")
        if not program:
            raise UsageError(f"{name}: missing program after '--'")
    elif program is not None:
        raise UsageError(f"{name}: takes no program after '--'")
    if extra:
        raise UsageError(f"{name}: unrecognized arguments: {' '.join(extra)} "
                         f"(see '{PROG} {name} --help')")
    args.program = program
    for dest, opt in (("results", "--results"), ("trace", "--trace"),
                      ("output", "--output")):
        if getattr(args, dest, None) == "":
            raise UsageError(f"{opt}: empty path")
    return args.run(args)


def _terminate(signum, frame):
    # Unwinds through runner.run, which kills the program's box.
    contain.kill_local()
    raise SystemExit(128 + signum)


# Descriptors crashcheck needs open at once (pytest, its pool, a run's
# output files, a fork server's socket): below this it could not work,
# and at 16 it hung.
MIN_FILES = 64


def check_files():
    """UsageError when the descriptor limit (ulimit -n) is too low for
    crashcheck. It is not raised for the user: the programs run inherit
    it, and a program may be meant to run under it."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < MIN_FILES:
        raise UsageError(f"the descriptor limit is {soft} (ulimit -n): "
                         f"crashcheck needs at least {MIN_FILES}")


class KeptStdout:
    """sys.stdout for the length of a command, but a write or flush that
    fails (`crashcheck run > /dev/full`: no room, a device error) is kept
    instead of raised: the command does its work (a sweep still judges
    every case and writes its reports), what it would still print there
    is dropped, and main() says once on stderr what went wrong. A closed
    pipe is not kept: BrokenPipeError goes up, as before."""

    def __init__(self, stream):
        self.stream = stream
        self.error = None

    def _guard(self, action, *args):
        if self.error is None:
            try:
                return action(*args)
            except BrokenPipeError:
                raise
            except OSError as e:
                self.error = e
        return None

    def write(self, text):
        self._guard(self.stream.write, text)
        return len(text)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        self._guard(self.stream.flush)

    def __getattr__(self, name):
        return getattr(self.stream, name)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGHUP, _terminate)
    contain.own_process()
    status = None
    kept = sys.stdout = KeptStdout(sys.stdout)
    try:
        check_files()
        try:
            status = dispatch(argv)
        except SystemExit as e:     # argparse, after --help or --version
            status = e.code
        kept.flush()
        if kept.error is not None:
            print(f"{PROG}: cannot write to standard output: "
                  f"{kept.error.strerror or kept.error}", file=sys.stderr)
            return EXIT_USAGE
        return status
    except UsageError as e:
        status = EXIT_USAGE
        problem = " ".join(str(e).split("\n"))
        print(f"{PROG}: {problem}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        status = EXIT_INTERRUPTED
        print(f"{PROG}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader went away (`crashcheck help plans | head -1`): what
        # is left unwritten goes nowhere, as a program killed by SIGPIPE
        # would end, and Python's flush at exit must not complain
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    finally:
        # nothing a command started runs on after it; a refused command
        # leaves no directory it made
        contain.shutdown()
        outdir.release_all(refused=status == EXIT_USAGE)
        sys.stdout = kept.stream


def leave(status):
    """Exit with STATUS once everything crashcheck writes is out, without
    the interpreter's teardown: freeing a sweep's objects one by one took
    0.4 s after its last word (a 5,000-case sweep), time the user waits
    for nothing. What the teardown would do that matters is done here:
    the threads are joined, the exit handlers run (the fork servers', the
    session's), stdout and stderr flushed; a flush that fails exits 120,
    as Python's own would (main() has flushed stdout and said why it
    failed; a closed pipe's rest it sends to /dev/null)."""
    for t in threading.enumerate():
        if t is not threading.main_thread() and not t.daemon:
            t.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OSError:
            status = status or 120
    os._exit(0 if status is None else status if isinstance(status, int)
             else 1)


if __name__ == "__main__":
    leave(main())
