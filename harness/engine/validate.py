"""Crash models checked against real kernels (make validate-models).

A crash model (harness/judging/explorer.py) says which trees a power cut
may leave at a point of a program's run. A real kernel shows one of them
each time: the program runs on a fresh loop-mounted filesystem, is
killed right after one of its calls (or left to exit), and the
filesystem is cut off from its disk and mounted again (realfs.Disk.crash).
Every such tree must be among the model's states at that point of the
very run that made it (its own trace: the same temp names, the same
calls); one that is not is an unsound point, a bug of the model, and is
reported with the program, the point and the files the model did not
allow.

The kernel shows one state per run, mostly the durable one. Between the
kill and the crash each point is also tried with the kernel pushed
forward by means the models leave open or name (VARIATIONS):

- plain: nothing;
- writeback: sync_file_range(WAIT_BEFORE|WRITE|WAIT_AFTER) on every file
  of the work directory: data written back, the metadata that names it
  not committed, which no model may rule out;
- sync-other: a byte written to a file of the harness's own beside the
  work directory, and fsynced: ext4 and XFS commit their one journal
  (every metadata change before it), Btrfs its log; the call is added to
  the trace, so the model is held to what it claims such an fsync does.

Per filesystem configuration (CONFIGS: ext4 in its three data modes,
XFS, Btrfs) and model, the report gives the crash points tried, the real
states the model's set holds, those it does not (each listed), and at
most how many states the model allows at those points that the kernel
never showed (its looseness, not a bug): an upper bound, since the
model's count is one (explorer.admits counts its choices, two of which
can give the same tree). `admits` is the one place the models
are asked.
"""

import ctypes
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import ROOT, UsageError
from ..judging import explorer
from .. import calls, coords
from . import (baseline as baselinemod, cases as casesmod, contain, execute,
               pool, realfs, records as recordsmod, results as resultsmod,
               runner, spec as specmod, sweep, tracecut)


@dataclass(frozen=True)
class Config:
    name: str               # as the report and --fs name it
    fs: str                 # realfs.FILESYSTEMS
    options: str            # mount options
    models: tuple           # the models held to its states: its own, posix


CONFIGS = (
    Config("ext4", "ext4", "", ("ext4-ordered", "posix")),
    Config("ext4-writeback", "ext4", "data=writeback",
           ("ext4-writeback", "posix")),
    Config("ext4-journal", "ext4", "data=journal", ("ext4-journal", "posix")),
    Config("xfs", "xfs", "", ("xfs", "posix")),
    Config("btrfs", "btrfs", "", ("btrfs", "posix")),
)
BY_NAME = {c.name: c for c in CONFIGS}

VARIATIONS = ("plain", "writeback", "sync-other")

# the corpus: the built-in workloads and their variants, and the
# programs made for this (workloads/validate/)
CORPUS = sorted((ROOT / "workloads" / "specs").glob("*.toml")) + \
    sorted((ROOT / "workloads" / "validate").glob("*.toml"))
# payloads up to this many bytes (a spec's larger ones add time, not cases)
MAX_SIZE = 65537

# ------------------------------------------------------------ the models

@dataclass
class Answer:
    admitted: bool | None   # None: undecided (the explorer refused the trace)
    count: int | None       # at most this many states the model allows there
    detail: str = ""        # what it did not allow, when it did not


def available_models():
    return explorer.MODELS


def admits(records, snapdir, model, tree):
    """Whether MODEL allows the tree TREE (realfs.read_tree's) after the
    last record of RECORDS (with SNAPDIR's snapshots), after the
    program's exit: the kernel closed what it left open, killed or not.
    Decided exactly by the model's own constraints (explorer.admits,
    4096-byte atomic writes); the count is the explorer's upper bound on
    the states the model allows there."""
    files, dirs, links = tree
    v = explorer.admits(records, snapdir, "exit", model, files, dirs=dirs,
                        links=links)
    return Answer(bool(v.admitted), v.states, v.reason or "")


# ------------------------------------------------------------ variations

_libc = ctypes.CDLL(None, use_errno=True)
_libc.sync_file_range.argtypes = [ctypes.c_int, ctypes.c_longlong,
                                  ctypes.c_longlong, ctypes.c_uint]
SYNC_FILE_RANGE_ALL = 1 | 2 | 4     # WAIT_BEFORE | WRITE | WAIT_AFTER


def write_back(disk):
    """Write every file of the work directory's data back to the disk,
    with no fsync: sync_file_range commits no metadata."""
    n = 0
    for root, _, names in os.walk(disk.top):
        for name in names:
            path = os.path.join(root, name)
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError:
                continue        # a link, a fifo
            try:
                if _libc.sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_ALL) == 0:
                    n += 1
            finally:
                os.close(fd)
    return n


def sync_other(disk):
    """The harness's own file written and fsynced (realfs.Disk.sync_other):
    (its path, its inode)."""
    return disk.sync_other()


HOOKS = {"plain": None, "writeback": write_back, "sync-other": sync_other}


# ------------------------------------------------------------ the run

@dataclass
class Plan:
    """What the validator is asked to do."""
    configs: tuple
    specs: list
    variations: tuple = VARIATIONS
    jobs: int = os.cpu_count() or 1
    max_size: int = MAX_SIZE
    out: Path = ROOT / "results" / "validate-models"
    timeout: float = 10.0
    # filled in by run():
    root: Path | None = None
    settings: dict = field(default_factory=dict)    # config name -> Settings
    combos: dict = field(default_factory=dict)      # prefix -> Combo


_PLAN = None        # the Plan of this process (the pool's inherit it)


def combos_of(specs, max_size):
    """The combos of SPECS at two of each spec's sizes: the largest up to
    MAX_SIZE bytes, and 4097 (a block and a byte) or else its smallest
    above zero; the smallest of all when none is that small."""
    out = []
    for spec in specs:
        small = [s for s in spec.sizes if s <= max_size]
        if not small:
            keep = {min(spec.sizes)}
        else:
            some = [s for s in small if s > 0] or small
            keep = {max(small), 4097 if 4097 in small else min(some)}
        for c in casesmod.combos([spec]):
            if c.size in keep:
                out.append(c)
    return out


def _baseline(item):
    """(config name, combo prefix) -> the combo's crash points on that
    filesystem: {"points": [(coordinate, seq)], "how", "skip"}."""
    name, prefix = item
    plan = _PLAN
    settings = plan.settings[name]
    combo = plan.combos[prefix]
    if not execute.on_real_fs(combo, settings):
        return {"skip": "disk = \"full\": its runs need their nearly full "
                        "tmpfs, not a real filesystem"}
    scratch = settings.work / prefix
    scratch.mkdir()
    out, how, _ = baselinemod.record_baseline(combo, scratch, settings)
    if out.run.status != 0:
        return {"skip": f"its baseline run exited {out.run.status} "
                        f"(signal {out.run.signal}): "
                        + out.run.stderr_text().strip()[-200:]}
    blind = baselinemod.nothing_intercepted(combo, out, how)
    if blind:
        return {"skip": blind}
    baselinemod.save_run(out, how)    # the units read its trace (load_run)
    _, globs = baselinemod.record_again(combo, out, settings, how)
    workdir = str(out.workdir)
    names = coords.Coords(out.records, workdir, globs)
    table = calls.table()
    points = []
    for rec in recordsmod.crash_point_records(out.records)[1:]:
        if rec is None:
            points.append(("exit", None))
        elif recordsmod.is_crash_point(rec, workdir, table):
            points.append((names[rec], rec["seq"]))
    return {"points": points, "how": how}


def _unit(item):
    """One real state, and every model's answer about it. The run is
    traced without snapshots: the recorder then opens no file of the
    program's, whose close would be an ext4 release of its own (it took
    auto_da_alloc's flush from the program's close, and ext4 looked like
    a model's bug). The models are asked about the baseline's trace up
    to the same call, which the run is checked to have stopped after."""
    name, prefix, coord, seq, variation, how = item
    plan = _PLAN
    config = BY_NAME[name]
    settings = plan.settings[name]
    combo = plan.combos[prefix]
    scratch = Path(tempfile.mkdtemp(prefix="unit-", dir=plan.root))
    res = {"config": name, "combo": prefix, "point": coord,
           "variation": variation}
    try:
        t0 = time.perf_counter()
        out = execute.execute_run(
            combo, "" if coord == "exit" else f"{coord}=crash-after",
            scratch, plan.timeout, record=False, settings=settings,
            backend=how, crash=True, before_crash=HOOKS[variation])
        res["real_seconds"] = time.perf_counter() - t0
        cut = tracecut.trouble(out)
        if cut:
            # past the trace limit: where it stopped is not seen
            res["missed"] = cut
            return res
        if out.run.timed_out or (coord != "exit" and recordsmod.crash_seq(out) != seq) \
                or (coord == "exit" and out.run.status != 0):
            res["missed"] = (f"the run did not stop at {coord}, seq {seq} "
                             f"(exit status {out.run.status}, signal "
                             f"{out.run.signal}, stopped at seq "
                             f"{recordsmod.crash_seq(out)})")
            return res
        base = baselinemod.load_run(settings.work / prefix)
        records = recordsmod.records_upto(base.records, seq)
        if variation == "sync-other":
            records = realfs.with_sync_record(records, out.before_crash)
        _, tree = out.real
        res["key"] = realfs.tree_digest(*tree)
        res["models"] = {}
        t1 = time.perf_counter()
        for model in config.models:
            if model not in available_models():
                continue
            try:
                a = admits(records, base.snapdir, model, tree)
            except explorer.ExplorerError as e:
                a = Answer(None, None, f"the explorer refused the trace: {e}")
            res["models"][model] = a.__dict__
            if a.admitted is False:
                res.setdefault("unsound_dir", str(_keep_unsound(
                    plan, res, model, base, tree, records, a)))
        res["model_seconds"] = time.perf_counter() - t1
        return res
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _keep_unsound(plan, res, model, out, tree, records, answer):
    """DIR/unsound/<config>-<combo>-<point>-<variation>/: the run's trace
    (with the harness's fsync, when it made one), the tree the kernel
    left (state/), and README.txt: for whoever mends the model."""
    d = plan.out / "unsound" / resultsmod.safe_name(
        f"{res['config']}-{res['combo']}@{res['point']}-{res['variation']}")
    if d.exists():
        shutil.rmtree(d)
    (d / "snaps").mkdir(parents=True)
    with open(d / "trace.jsonl", "w") as fh:
        for r in records:
            fh.write(json.dumps(r) + "\n")
    for blob in Path(out.snapdir).iterdir():
        shutil.copy(blob, d / "snaps" / blob.name)
    files, dirs, links = tree
    state = d / "state"
    state.mkdir()
    for p in dirs:
        (state / p).mkdir(parents=True, exist_ok=True)
    for p, data in files.items():
        (state / p).parent.mkdir(parents=True, exist_ok=True)
        (state / p).write_bytes(data)
    for p, t in links.items():
        os.symlink(t, state / p)
    (d / "README.txt").write_text(
        f"filesystem:  {res['config']} ({BY_NAME[res['config']].options or 'defaults'})\n"
        f"program:     {res['combo']}\n"
        f"crash point: {res['point']} (killed right after it; exit: "
        f"after it exited)\n"
        f"variation:   {res['variation']}\n"
        f"model:       {model}, which does not allow state/\n"
        f"why:         {answer.detail}\n\n"
        f"trace.jsonl and snaps/ are the run's own (explorer.explore_exit "
        f"reads them); state/ is the tree the kernel left.\n")
    return d


def run(plan, log=print):
    """Run the validation PLAN; its results (a dict, as validate.json
    holds them)."""
    global _PLAN
    _PLAN = plan
    plan.root = runner.make_scratch("crashcheck-validate-")
    try:
        for config in plan.configs:
            settings = casesmod.Settings(out=plan.root / config.name,
                                         fs=config.fs, fs_options=config.options,
                                         jobs=plan.jobs, models=("posix",))
            settings.scratch_limit = sweep.default_limit(plan.jobs)
            settings.work.mkdir(parents=True)
            plan.settings[config.name] = settings
        combos = combos_of(plan.specs, plan.max_size)
        plan.combos = {c.prefix: c for c in combos}
        for config in plan.configs:
            for c in combos:
                execute.start_tree(c, plan.settings[config.name].work)
        items = [(cfg.name, c.prefix) for cfg in plan.configs for c in combos]
        log(f"validate-models: {len(combos)} programs on "
            f"{', '.join(c.name for c in plan.configs)}: recording baselines")
        bases = dict(zip(items, _pooled(_baseline, items, plan.jobs)))
        units = []
        skipped = []
        failed = []         # a baseline that raised is an error, not a skip
        for (name, prefix), b in bases.items():
            if "error" in b:
                failed.append({"config": name, "combo": prefix,
                               "point": "baseline", "error": b["error"]})
                continue
            if "skip" in b:
                skipped.append({"config": name, "combo": prefix,
                                "why": b["skip"]})
                continue
            for coord, seq in b["points"]:
                for v in plan.variations:
                    units.append((name, prefix, coord, seq, v, b["how"]))
        log(f"validate-models: {len(units)} real states "
            f"({', '.join(plan.variations)} at every crash point)")
        t0 = time.perf_counter()
        results = failed + list(_pooled(_unit, units, plan.jobs,
                                        progress=log))
        wall = time.perf_counter() - t0
    finally:
        shutil.rmtree(plan.root, ignore_errors=True)
    return summarize(plan, results, skipped, wall)


def _pooled(job, items, jobs, progress=None):
    """JOB over ITEMS in a pool of JOBS processes (in order); an item
    whose job raised gives {"error": its last line}."""
    out = []
    if not items:
        return out
    jobs = max(1, min(jobs, len(items)))
    workers, results = pool.start(job, items, jobs,
                                  pool.chunk_size(len(items), jobs, 4))
    done = False
    try:
        for i, (value, error) in enumerate(results):
            if error is not None:
                value = {"error": sweep.failure_line(error)}
                if isinstance(items[i], tuple) and len(items[i]) == 6:
                    value.update(config=items[i][0], combo=items[i][1],
                                 point=items[i][2], variation=items[i][4])
            out.append(value)
            if progress is not None and (i + 1) % 500 == 0:
                progress(f"validate-models: {i + 1}/{len(items)}")
        done = True
    finally:
        pool.stop(workers, done)
    return out


def summarize(plan, results, skipped, wall):
    """Per configuration and model: crash points tried, real states
    inside the model's set and outside it (each listed), undecided,
    and at most how many states the model allows at those points that
    the kernel never showed (never_shown_at_most: the model's count of
    its states is an upper bound, so this is one too)."""
    per = {}
    for cfg in plan.configs:
        for m in cfg.models:
            per[(cfg.name, m)] = {
                "config": cfg.name, "fs": cfg.fs, "options": cfg.options,
                "model": m, "available": m in available_models(),
                "points": 0, "states": 0, "admitted": 0, "unsound": [],
                "undecided": 0, "allowed_at_most": 0, "shown": 0}
    missed, errors = [], []
    # (config, model, combo, point, trace kind) -> (count, {keys shown})
    groups = {}
    points = set()
    real_seconds = []
    for r in results:
        if "error" in r:
            errors.append(r)
            continue
        if "missed" in r:
            missed.append(r)
            continue
        real_seconds.append(r["real_seconds"])
        points.add((r["config"], r["combo"], r["point"]))
        for m, a in r["models"].items():
            row = per[(r["config"], m)]
            row["states"] += 1
            if a["admitted"] is None:
                row["undecided"] += 1
                continue
            own = "sync" if r["variation"] == "sync-other" else "own"
            g = groups.setdefault((r["config"], m, r["combo"], r["point"], own),
                                  [a["count"], set()])
            if a["admitted"]:
                row["admitted"] += 1
                g[1].add(r["key"])
            else:
                row["unsound"].append({
                    "program": r["combo"], "point": r["point"],
                    "variation": r["variation"], "why": a["detail"],
                    "dir": r.get("unsound_dir", "")})
    for (cfg, m, _, _, _), (count, shown) in groups.items():
        row = per[(cfg, m)]
        row["allowed_at_most"] += count
        row["shown"] += len(shown)
    for (cfg, m), row in per.items():
        row["points"] = sum(1 for p in points if p[0] == cfg)
        row["never_shown_at_most"] = row["allowed_at_most"] - row["shown"]
    real_seconds.sort()
    return {
        "configs": [c.name for c in plan.configs],
        "variations": list(plan.variations),
        "programs": len(plan.combos),
        "rows": list(per.values()),
        "missed": missed,
        "errors": errors,
        "skipped": skipped,
        "timing": {"wall": round(wall, 1), "states": len(real_seconds),
                   "median_state": round(real_seconds[len(real_seconds) // 2], 4)
                   if real_seconds else None,
                   "mean_state": round(sum(real_seconds) / len(real_seconds), 4)
                   if real_seconds else None},
    }


def table(summary):
    """The report as text: one line per filesystem and model, then every
    unsound point."""
    lines = [f"{'filesystem':<15} {'model':<15} {'points':>6} {'states':>6} "
             f"{'in set':>6} {'unsound':>7} {'undecided':>9} "
             f"{'never shown':>19}"]
    for row in summary["rows"]:
        if not row["available"]:
            lines.append(f"{row['config']:<15} {row['model']:<15} "
                         f"(not a model of this tree)")
            continue
        lines.append(
            f"{row['config']:<15} {row['model']:<15} {row['points']:>6} "
            f"{row['states']:>6} {row['admitted']:>6} "
            f"{len(row['unsound']):>7} {row['undecided']:>9} "
            f"{'at most ' + str(row['never_shown_at_most']):>19}")
    for row in summary["rows"]:
        for u in row["unsound"]:
            lines.append(f"UNSOUND {row['model']} on {row['config']}: "
                         f"{u['program']} @{u['point']} ({u['variation']}): "
                         f"{u['why']}")
    for m in summary["missed"]:
        lines.append(f"missed: {m['config']} {m['combo']} @{m['point']} "
                     f"({m['variation']}): {m['missed']}")
    for e in summary["errors"]:
        lines.append(f"error: {e.get('config', '')} {e.get('combo', '')} "
                     f"@{e.get('point', '')}: {e['error']}")
    for s in summary["skipped"]:
        lines.append(f"skipped: {s['config']} {s['combo']}: {s['why']}")
    t = summary["timing"]
    if t["states"]:
        lines.append(f"{t['states']} real states in {t['wall']} s; a state "
                     f"(run, crash, mount) took {t['median_state'] * 1000:.0f} "
                     f"ms (median), {t['mean_state'] * 1000:.0f} ms (mean)")
    return "\n".join(lines)


USAGE = ("usage: scripts/validate-models [--fs NAME,...] [--spec FILE]... "
         "[--variations NAME,...] [--max-size BYTES] [--jobs N] [--out DIR]")


def parse_args(argv):
    """A Plan from the command line; UsageError naming the problem."""
    configs = CONFIGS
    specs = []
    variations = VARIATIONS
    jobs = os.cpu_count() or 1
    max_size = MAX_SIZE
    out = ROOT / "results" / "validate-models"
    it = iter(argv)
    for arg in it:
        if arg in ("-h", "--help"):
            print(__doc__.strip() + "\n\n" + USAGE)
            raise SystemExit(0)
        if arg not in ("--fs", "--spec", "--variations", "--max-size",
                       "--jobs", "--out"):
            raise UsageError(f"unknown argument '{arg}' ({USAGE})")
        value = next(it, None)
        if value is None:
            raise UsageError(f"{arg} needs a value")
        if arg == "--fs":
            names = [n.strip() for n in value.split(",") if n.strip()]
            for n in names:
                if n not in BY_NAME:
                    raise UsageError(f"--fs: unknown configuration '{n}' "
                                     f"(one of {', '.join(BY_NAME)})")
            configs = tuple(BY_NAME[n] for n in names)
        elif arg == "--spec":
            try:
                specs.append(specmod.load(Path(value)))
            except specmod.SpecError as e:
                raise UsageError(str(e)) from None
        elif arg == "--variations":
            names = tuple(n.strip() for n in value.split(",") if n.strip())
            for n in names:
                if n not in VARIATIONS:
                    raise UsageError(f"--variations: unknown '{n}' (one of "
                                     f"{', '.join(VARIATIONS)})")
            variations = names
        elif arg in ("--max-size", "--jobs"):
            try:
                n = int(value)
            except ValueError:
                n = 0
            if n < 1:
                raise UsageError(f"{arg}: '{value}' is not a positive number")
            if arg == "--jobs":
                jobs = n
            else:
                max_size = n
        else:
            out = Path(value)
    if not configs or not variations:
        raise UsageError("nothing to validate")
    if not specs:
        specs = [specmod.load(p) for p in CORPUS]
    return Plan(configs=configs, specs=specs, variations=variations,
                jobs=jobs, max_size=max_size, out=Path(os.path.abspath(out)))


def main(argv):
    try:
        plan = parse_args(argv)
        for fs in sorted({c.fs for c in plan.configs}):
            try:
                realfs.check(fs)
            except realfs.Unavailable as e:
                raise UsageError(f"{fs}: {e.reason}") from None
        runner.check_preloads()
    except UsageError as e:
        print(f"validate-models: {e}", file=sys.stderr)
        return 2
    contain.own_process()
    contain.session()
    try:
        realfs.private_namespace()
    except realfs.Unavailable as e:
        print(f"validate-models: {e.reason}", file=sys.stderr)
        return 2
    from . import outdir
    try:
        # new, empty or crashcheck's: only our own unsound/ is replaced
        outdir.claim(plan.out)
    except UsageError as e:
        print(f"validate-models: {e}", file=sys.stderr)
        return 2
    if (plan.out / "unsound").is_dir():
        shutil.rmtree(plan.out / "unsound")

    def log(msg):
        print(msg, file=sys.stderr, flush=True)
    summary = run(plan, log)
    with open(plan.out / "validate.json", "w") as fh:
        json.dump(summary, fh, indent=1)
    text = table(summary)
    (plan.out / "validate.txt").write_text(text + "\n")
    print(text)
    unsound = sum(len(r["unsound"]) for r in summary["rows"])
    return 1 if unsound or summary["errors"] else 0
