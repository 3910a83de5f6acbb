"""`crashcheck run SPEC...`: the sweep over workload specs, driven by pytest.

pytest runs in this process with harness.engine.plugin loaded and
harness/engine/sweep_cases.py as its one test file: every case is a test item,
so pytest's progress, `-k` and `-x` apply (the cases run in the plugin's
own pool of processes, and junit.xml is written from the results). This
module only turns our options into pytest's, and pytest's exit status
into ours.
"""

import os
import re
import signal
import sys
from contextlib import contextmanager
from pathlib import Path

from .. import INSTALLED, ROOT, UsageError, command_name, results_root, tree_path
from ..engine import gateways, realfs, spec as specmod
from ..engine.cases import BUDGET, KINDS, parse_shard
from ..engine.sweep import parse_size
from ..judging import models
from ..engine import outdir
from ..reports import regress

# pytest's exit statuses (pytest.ExitCode), by name, so this module does
# not import pytest before it has to.
PYTEST_OK, PYTEST_FAILED, PYTEST_INTERRUPTED, PYTEST_INTERNAL, \
    PYTEST_USAGE, PYTEST_NO_TESTS = range(6)


def jobs_arg(text):
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise UsageError(f"--jobs: '{text}' is not a positive number of jobs")
    return n


def add_sweep_options(p):
    """Options shared by `run` and `audit`, in the order --help lists
    them."""
    add_scope_options(p)
    add_outcome_options(p)
    add_scratch_options(p)
    add_known_options(p)
    add_execution_options(p)
    add_budget_options(p)


def add_scope_options(p):
    """Where the results go, which models and fault classes, jobs, time
    limits, the crash-state sample and the shard."""
    p.add_argument("--out", metavar="DIR",
                   help="results directory (default: results/)")
    p.add_argument("--model", metavar="MODELS",
                   help="crash model(s) for power-loss judging: "
                        f"{', '.join(models.MODELS)}, a comma list, or all "
                        f"(default: {','.join(models.DEFAULT)})")
    p.add_argument("--fs", choices=realfs.FILESYSTEMS,
                   help="also judge power loss on the real kernel: every "
                        "run on a fresh loop-mounted filesystem of this "
                        "type, and at each crash point the program killed, "
                        "the filesystem shut down without flushing its log "
                        "and mounted again (cases named FS-real; root only)")
    p.add_argument("--faults", metavar="KINDS",
                   help="comma-separated fault classes to sweep, of "
                        f"{','.join(KINDS)} (default: all)")
    p.add_argument("--jobs", metavar="N",
                   help="parallel jobs (default: one per core)")
    p.add_argument("--timeout", metavar="S",
                   help="seconds per run, overriding the specs' timeouts")
    p.add_argument("--seed", metavar="N", default="0",
                   help="seed of the crash-state sample (default 0)")
    p.add_argument("--cap", metavar="N", default="64",
                   help="crash states judged per crash point (default 64)")
    p.add_argument("--sector", metavar="BYTES",
                   help="bytes the storage writes atomically: 512, 1024 or "
                        "2048 also tear writes inside a 4096-byte block "
                        "(default: the spec's, else 4096)")
    p.add_argument("--shard", metavar="K/N",
                   help="run only the K-th of N deterministic shards "
                        "(merge them with 'crashcheck merge')")


def add_outcome_options(p):
    """What is kept, and what fails the run."""
    p.add_argument("--keep", action="store_true",
                   help="keep every case's directory, not only findings'")
    p.add_argument("--strict", action="store_true",
                   help="fail when a file or name changed by a call "
                        "crashcheck cannot see (a raw system call, "
                        "io_uring): such a run is never a clean pass")
    p.add_argument("--fail-on", choices=("error", "warning"), default=None,
                   help="the least severity of a finding that fails the run: "
                        "error (data lost or at risk, a program that died or "
                        "never finished), or warning too (an ignored error, a "
                        "fault that cannot happen where the program ran); "
                        "default: each spec's fail_on, else error")


def add_scratch_options(p):
    """Where runs' scratch goes, and how much each may take."""
    p.add_argument("--scratch", metavar="DIR",
                   help="where the runs' scratch directories go (default: "
                        "/dev/shm while it has room, else the temporary "
                        "directory)")
    p.add_argument("--scratch-limit", metavar="SIZE",
                   help="bytes of snapshots one run may take, and the "
                        "largest file it may leave (e.g. 512M, 2G; default: "
                        "a share of the scratch's free space and of memory); "
                        "a run past it is a harness-error naming it")
    p.add_argument("--trace-limit", metavar="SIZE",
                   help="bytes of trace one run may write (e.g. 64M; 0: no "
                        "limit; default: 32M); past it the calls are counted, "
                        "not written down, and a case whose run did not end "
                        "at its time limit is a harness-error naming it")
    p.add_argument("--home", action="store_true",
                   help="give each run an empty HOME of its own in its "
                        "scratch (every run has its own TMPDIR there)")


def add_known_options(p):
    """Findings already known, and those accepted."""
    p.add_argument("--baseline", metavar="FILE",
                   help="an earlier run's results.json: its findings are "
                        "known (reported, not failing), new ones fail, "
                        "fixed ones are listed")
    p.add_argument("--ignore", metavar="FILE",
                   help="findings to accept, each with its reason "
                        "([[ignore]] case, verdict, reason; default: "
                        ".crashcheck.toml in the current directory, when "
                        "there is one)")


def add_execution_options(p):
    """How the program runs and is intercepted, and where."""
    p.add_argument("--exec-each", action="store_true",
                   help="exec the program for every case instead of forking "
                        "it from one exec per command line (slower; the "
                        "same verdicts)")
    p.add_argument("--whole-traces", action="store_true",
                   help="record every call of every case in full, with "
                        "no lite or thin first run (slower; the same "
                        "verdicts)")
    p.add_argument("--backend", choices=("auto", "preload", "syscall"),
                   default="auto",
                   help="how the program's calls are intercepted: the "
                        "preload library, the system-call supervisor, or "
                        "auto (the preload, but the supervisor for static, "
                        "Go and setuid programs and where the preload's "
                        "baseline misses changes; default)")
    p.add_argument("--tx", metavar="SPEC", action="append", default=[],
                   help="run the cases in pytest-xdist workers of this "
                        "execnet gateway instead of this machine's pool; "
                        "repeatable: '2*popen' (two processes here), "
                        "'4*ssh=HOST//python=/usr/bin/python3' (four on "
                        "HOST, which needs the same tree built at the same "
                        "path); the reports are those of a local run")


def add_budget_options(p):
    """How many cases run: the budget, every one, or a sample."""
    p.add_argument("--budget", metavar="TIME",
                   help="how long the cases may take, as estimated from "
                        "the baselines (e.g. 90s, 10m, 2h, or 0 for no "
                        "limit; default 5m): every case runs when the "
                        "estimate fits; past it the calls are grouped by "
                        "call site, file and fault, and of each group the "
                        "first, the last and as many between them as fit "
                        "run, and the run says SAMPLED (never a clean pass)")
    p.add_argument("--exhaustive", action="store_true",
                   help="a case for every traced call and crash point, "
                        "whatever the budget")
    p.add_argument("--sample", metavar="N",
                   help="sample N cases between the first and the last of "
                        "each group, whatever the budget")


def setup_run(p):
    p.add_argument("specs", metavar="SPEC", nargs="+",
                   help="workload spec (TOML), as in workloads/specs/")
    p.add_argument("--case", metavar="ID", action="append", default=[],
                   help="run only this case (exact id); repeatable")
    p.add_argument("-k", metavar="EXPR", dest="keyword",
                   help="pytest -k expression over case ids")
    add_sweep_options(p)


def _int(name, text, lo):
    try:
        n = int(text)
    except (TypeError, ValueError):
        raise UsageError(f"--{name}: '{text}' is not an integer") from None
    if n < lo:
        raise UsageError(f"--{name}: {n} is below {lo}")
    return n


def budget_arg(text):
    """--budget TIME in seconds (0: no limit); the default's when not
    given; UsageError naming the problem."""
    if text is None:
        return BUDGET
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(s|m|min|h)?\s*", text)
    if not m:
        raise UsageError(f"--budget: '{text}' is not a time (seconds, or "
                         "with s, m or h: 90s, 10m, 2h; 0 for no limit)")
    return float(m[1]) * {None: 1, "s": 1, "m": 60, "min": 60,
                          "h": 3600}[m[2]]


def _faults(text):
    if text is None:
        return "all"
    kinds = [k.strip() for k in text.split(",")]
    for k in kinds:
        if k not in KINDS:
            raise UsageError(f"--faults: unknown fault class '{k}' "
                             f"(one of {','.join(KINDS)})")
    return ",".join(kinds)


def model_arg(text):
    """--model's models as a comma list (the default's when not given);
    UsageError naming the problem."""
    if text is None:
        return ",".join(models.DEFAULT)
    try:
        return ",".join(models.parse(text))
    except ValueError as e:
        raise UsageError(f"--model: {e}") from None


SECTORS = ("512", "1024", "2048", "4096")


def _sector(text):
    """--sector's pytest option, or none for the specs' own."""
    if text is None:
        return []
    if text not in SECTORS:
        raise UsageError(f"--sector: '{text}' is not one of "
                         f"{', '.join(SECTORS)} bytes")
    return ["--cc-sector", text]


def _timeout(text):
    if text is None:
        return None
    try:
        t = float(text)
    except ValueError:
        t = -1.0
    if not 0 < t <= 3600:
        raise UsageError(f"--timeout: '{text}' is not a number of seconds "
                         "in (0, 3600]")
    return t


def _shard(text):
    if text is None:
        return None
    try:
        return "%d/%d" % parse_shard(text)
    except ValueError as e:
        raise UsageError(f"--shard: {e}") from None


def scratch_dir(text):
    """--scratch DIR: an existing directory we may write in, resolved."""
    if not text:
        raise UsageError("--scratch: empty path")
    path = Path(text)
    if not path.is_dir():
        raise UsageError(f"--scratch: '{text}' is not a directory")
    if not os.access(path, os.W_OK | os.X_OK):
        raise UsageError(f"--scratch: '{text}' is not writable")
    return path.resolve()


def trace_limit(text):
    """--trace-limit's bytes: 0 (no limit), or a size of 1 MiB or more."""
    if text.strip() == "0":
        return 0
    try:
        return parse_size(text)
    except ValueError as e:
        raise UsageError(f"--trace-limit: {e}") from None


def scratch_limit(text):
    try:
        return parse_size(text)
    except ValueError as e:
        raise UsageError(f"--scratch-limit: {e}") from None
def regress_args(args):
    """--baseline and --ignore, checked now (a bad file is one line and
    exit 2 before anything runs), as the plugin's options."""
    policy = regress.policy_from(getattr(args, "baseline", None),
                                 getattr(args, "ignore", None))
    argv = []
    # as the user gave them (the sweep runs in this directory): the
    # console names them so
    if policy.baseline is not None:
        argv += ["--cc-baseline", str(args.baseline)]
    if policy.ignore is not None:
        argv += ["--cc-ignore", policy.ignore.path]
    return argv


def pytest_args(args, spec_paths, out, command):
    """Our options as pytest's."""
    jobs = jobs_arg(args.jobs) if args.jobs else (os.cpu_count() or 1)
    if getattr(args, "case", None):
        jobs = 1        # a handful of cases: starting workers costs more
    argv = ["-p", "harness.engine.plugin", "-p", "no:cacheprovider",
            "--rootdir", str(ROOT), "-c", str(ROOT / "pytest.ini"),
            "-q", str(CASE_FILE),
            "--cc-out", str(out), "--cc-model", model_arg(args.model),
            "--cc-faults", _faults(args.faults),
            "--cc-seed", str(_int("seed", args.seed, 0)),
            "--cc-cap", str(_int("cap", args.cap, 1)),
            *_sector(args.sector),
            *(["--cc-sample", str(_int("sample", args.sample, 0))]
              if args.sample is not None else []),
            "--cc-budget", str(budget_arg(args.budget)),
            "--cc-command", command,
            # Per-item work in the pytest process competes with the
            # cases for the cores: capture of sys.stdout only, not of the
            # descriptors (the cases run in other processes, or print into
            # the runner's own capture; no capture at all would also turn
            # off the [ 10%] progress), no log capture, and junit.xml comes
            # from the results (report.write_junit), not from pytest's
            # per-item reports.
            "--capture=sys", "-p", "no:logging",
            # Our plugin has no assert statements to rewrite, and with
            # PYTHONDONTWRITEBYTECODE pytest rewrote it (and the case file)
            # again on every start: 40-50 ms of a one-case run's 0.39 s.
            "--assert=plain",
            # No "short test summary": its FAILED lines repeat the FINDING
            # lines with less in them.
            "-rN"]
    for p in spec_paths:
        argv += ["--cc-spec", str(p)]
    argv += regress_args(args)
    argv += fs_args(args)
    t = _timeout(args.timeout)
    if t is not None:
        argv += ["--cc-timeout", str(t)]
    shard = _shard(args.shard)
    if shard:
        argv += ["--cc-shard", shard]
    if args.keep:
        argv.append("--cc-keep")
    if getattr(args, "strict", False):
        argv.append("--cc-strict")
    if getattr(args, "fail_on", None):
        argv += ["--cc-fail-on", args.fail_on]
    if args.scratch is not None:
        argv += ["--cc-scratch", str(scratch_dir(args.scratch))]
    if args.scratch_limit is not None:
        argv += ["--cc-scratch-limit", str(scratch_limit(args.scratch_limit))]
    if args.trace_limit is not None:
        argv += ["--cc-trace-limit", str(trace_limit(args.trace_limit))]
    if args.home:
        argv.append("--cc-home")
    if args.exec_each:
        argv.append("--cc-exec-each")
    if args.whole_traces:
        argv.append("--cc-whole-traces")
    argv += ["--cc-backend", args.backend]
    if args.exhaustive:
        argv.append("--cc-exhaustive")
    for case in getattr(args, "case", []) or []:
        argv += ["--cc-case", case]
    if getattr(args, "keyword", None):
        argv += ["-k", args.keyword]
    # The plugin's own pool, not xdist's -n: see Sweep.start_pool; but
    # xdist's gateways where asked for, to spread the cases over machines
    argv += ["--cc-jobs", str(jobs)]
    argv += tx_args(getattr(args, "tx", None))
    return argv


CASE_FILE = ROOT / "harness" / "engine" / "sweep_cases.py"


def beyond_roots(argv):
    """ARGV in a form pytest-xdist passes on unchanged to a worker of
    another machine's gateway. xdist rewrites each argument that names
    an existing path relative to the directories it would rsync there,
    and stops at one outside them; crashcheck rsyncs none (its tree is
    at the same path there, and the work directory goes by
    plugin.copy_to). An option's value joined to its name
    ('--cc-out=DIR', '-cFILE') names no path, and the case file goes by
    its module's name (--pyargs: the worker runs in the tree). Every
    argument of ARGV but the case file is an option or an option's
    value."""
    out = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == str(CASE_FILE):
            out += ["--pyargs", "harness.engine.sweep_cases"]
        elif a.startswith("-") and i + 1 < len(argv) and \
                not argv[i + 1].startswith("-") and \
                argv[i + 1] != str(CASE_FILE):
            # a value (the only other argument is the case file): paths
            # among them, some made only later (--cc-out's)
            out.append(f"{a}={argv[i + 1]}" if a.startswith("--")
                       else a + argv[i + 1])
            i += 1
        else:
            out.append(a)
        i += 1
    return out


def tx_args(specs):
    """--tx SPEC... as pytest-xdist's options; UsageError when xdist is
    not installed or a spec is empty."""
    if not specs:
        return []
    try:
        import xdist  # noqa: F401  (python3-pytest-xdist)
        import execnet
    except ImportError:
        raise UsageError("--tx: pytest-xdist is not installed (Debian: "
                         "apt-get install python3-pytest-xdist)") from None
    argv = ["--dist", "load"]
    for spec in specs:
        if not spec.strip():
            raise UsageError("--tx: empty gateway spec")
        try:
            execnet.XSpec(spec.split("*", 1)[-1])
        except Exception as e:  # execnet's own error for a bad spec
            raise UsageError(f"--tx: '{spec}': {e}") from None
        # another machine's, tried now: one line rather than a worker
        # that never starts
        why = gateways.check_gateway(spec.split("*", 1)[-1], ROOT)
        if why:
            raise UsageError(f"--tx: '{spec}': {why}")
        argv += ["--tx", spec]
    return argv


def fs_args(args):
    """--fs, checked now: the mode needs root, loop devices, the mkfs
    tool and the kernel's filesystem; without them one line and exit 2."""
    fs = getattr(args, "fs", None)
    if fs is None:
        return []
    try:
        realfs.check(fs)
    except realfs.Unavailable as e:
        raise UsageError(f"--fs {fs}: {e.reason}") from None
    return ["--cc-fs", fs]


class _NoExitLine:
    """sys.stderr, less the line pytest writes itself when the session
    is ended by pytest.exit before its first case (plugin._terminated on
    SIGTERM during the baselines): "Exit: terminated by signal 15". The
    console has said INTERRUPTED already, in our words."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        if text.startswith("Exit: terminated by signal ") or \
                text.startswith("Exit: interrupted"):
            return len(text)
        return self._stream.write(text)

    def __getattr__(self, name):
        return getattr(self._stream, name)


@contextmanager
def _no_exit_line():
    saved = sys.stderr
    sys.stderr = _NoExitLine(saved)
    try:
        yield
    finally:
        sys.stderr = saved


def sweep(argv, out):
    """Run pytest, its reports into OUT (claimed: outdir.claim); map its
    status to ours: 0 clean, 1 findings, 2 usage (or a case that
    crashcheck's scratch had no room for), 130 interrupted (^C),
    128+N ended by signal N (plugin._terminated), 3 anything else
    (pytest's internal error)."""
    import pytest
    if "--tx" in argv:
        argv = beyond_roots(argv)
    try:
        with _no_exit_line():
            status = pytest.main(argv)
    finally:
        outdir.release(out, refused=False)
    if status == PYTEST_USAGE:
        # refused after the enumeration (--case naming no call): a
        # directory made for it goes again
        outdir.release(out, refused=True)
    if status in (PYTEST_OK, PYTEST_NO_TESTS):
        return 0
    if status == PYTEST_FAILED:
        from ..engine import sessionend
        # a case stopped by crashcheck's own scratch: a setup error
        return 2 if sessionend.SCRATCH_SHORT else 1
    if status == PYTEST_USAGE:
        return 2
    if status == PYTEST_INTERRUPTED:
        return 128 + signal.SIGINT
    if 128 < int(status) < 128 + 65:
        return int(status)
    return 3


def out_path(args, default=None):
    """--out (or DEFAULT), absolute, checked but not yet made or claimed:
    a command refused for another option must change nothing."""
    if args.out is not None and str(args.out) == "":
        raise UsageError("--out: empty path")
    out = Path(args.out) if args.out else (default or results_root())
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out: '{out}' is not a directory")
    return Path(os.path.abspath(out))


def cmd_run(args):
    """sweep workload specs: every call x fault x strategy, and power loss

    Each SPEC (the format of workloads/specs/*.toml, docs/reference.md "Specs") is
    swept: a recorded baseline run, one case per traced call and fault
    class, one power-loss case per crash point and model. Reports go to
    --out (default results/): results.json, report.md, report.html,
    junit.xml, and cases/<id>/ for each finding.

    With --case (the reproduce command of a finding) only that case runs,
    and its reports go to results/rerun/ unless --out says otherwise.

    --out must be new, empty, or crashcheck's (it holds the marker file
    .crashcheck): crashcheck replaces only its own files there, and
    refuses a directory another run is writing to.

    With --fs ext4, xfs or btrfs (root only) every run is on a fresh
    loop-mounted filesystem of that type, and each crash point also gets
    a case judged on the real kernel (FS-real): the program killed there,
    the filesystem cut off from its disk and mounted again.

    Exit status: 0 when every correct workload is clean and every buggy
    variant is caught as its spec expects; 1 otherwise (the findings are
    listed); 2 for a bad spec or option.
    """
    paths = []
    for s in args.specs:
        p = Path(s)
        if not p.is_file():
            raise UsageError(f"spec '{s}' is a directory" if p.is_dir() else
                             f"spec '{s}' is not a regular file" if p.exists()
                             else f"spec not found: {s}")
        try:
            specmod.load(p)
        except specmod.SpecError as e:
            raise UsageError(str(e)) from None
        paths.append(p.resolve())
    specs = [specmod.load(p) for p in paths]
    names = [s.name for s in specs]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise UsageError(f"two specs are named '{sorted(dup)[0]}'")
    check_selection(args, specs)
    default = results_root() / "rerun" if args.case else results_root()
    out = out_path(args, default)
    if INSTALLED:
        command = f"{command_name()} run " + " ".join(str(p) for p in paths)
    else:
        command = "scripts/crashcheck run " + " ".join(
            tree_path(p) for p in paths)
    if args.backend != "auto":
        command += f" --backend {args.backend}"
    # every option checked before anything is written; a full run's
    # reports then replace the last one's, cases/ included, at its end
    # (plugin.pytest_sessionfinish)
    argv = pytest_args(args, paths, out, command)
    out = outdir.claim(out)
    return sweep(argv, out)


def check_selection(args, specs):
    """Refuse a --case or -k that cannot select anything before the
    baseline runs, which can take minutes: a case id starts with one of
    the specs' combos (workload, strategy, size), and -k must parse. A
    well-formed id naming a call the program does not make is found
    after the enumeration (harness/engine/plugin.py)."""
    from ..engine.cases import combos
    prefixes = {c.prefix + "-" for c in combos(specs)}
    for case in getattr(args, "case", None) or []:
        if not any(case.startswith(p) for p in prefixes):
            raise UsageError(f"--case: no such case: {case}")
    keyword = getattr(args, "keyword", None)
    if keyword:
        try:
            from _pytest.mark.expression import Expression, ParseError
        except ImportError:         # another pytest: it will say so itself
            return
        try:
            Expression.compile(keyword)
        except ParseError as e:
            raise UsageError(f"-k: bad expression '{keyword}': "
                             f"{e.message} at column {e.column}") from None


