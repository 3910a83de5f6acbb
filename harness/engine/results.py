"""What a case's result carries and leaves behind: the command that
reproduces it (reproduce, with_rerun), the trace excerpt around its
fault, its directory under RESULTS/cases (save_case_dir: the trace's
ends, the crash state with its README), and, over a sweep's results,
the expectations no case met (uncaught, not_run) and the variants whose
verdicts did not change (variant_verdicts).

judge.py makes each case's result; the pytest plugin (plugin.py) writes
the sweep's."""

import errno
import json
import shlex
import shutil
from pathlib import Path

from .. import INSTALLED, ROOT, command_name
from . import realfs, runner, trace
from ..judging import explorer, payload
from .cases import DEFAULT_MODELS, MODELS, contents, target_name


def name_models(results, outdir=None):
    """Name in each power-loss result the models under which its crash
    point gives its verdict: its own and those of the same point's cases
    under the sweep's other models ("models" of results.json), in its
    case directory's result.json too (under OUTDIR's parent)."""
    points = {}
    for r in results:
        if r.get("kind") == "powerloss" and r.get("model") and \
                r["id"].endswith("-" + r["model"]) and \
                not realfs.fs_of(r["model"]):
            # a real kernel's verdict is its own: no model speaks for it
            key = r["id"][:-len(r["model"]) - 1]
            points.setdefault(key, []).append(r)
    for group in points.values():
        for r in group:
            named = [m for m in MODELS if any(
                o["model"] == m and o["verdict"] == r["verdict"]
                for o in group)]
            if named == r.get("models"):
                continue
            r["models"] = named
            if r.get("dir") and outdir is not None:
                path = Path(outdir).parent / r["dir"] / "result.json"
                try:
                    with open(path) as fh:
                        saved = json.load(fh)
                    saved["models"] = named
                    with open(path, "w") as fh:
                        json.dump(saved, fh, indent=1, sort_keys=True)
                except (OSError, ValueError):
                    pass        # results.json says it; the directory is aside


EXCERPT_LINES = 40


def excerpt_around(out, case):
    """At most EXCERPT_LINES of a run's call and crash records, centred on
    the call CASE aims at: the first a fault fired on in a fault case
    (else where the baseline made it), the crash point's call in a
    power-loss case, the start for a baseline; enough to see what led to
    it and what followed. Chosen before parsing and formatting, where the
    trace allows (trace.Lazy.around): a program's trace may hold
    thousands of calls."""
    seq = case.at
    if case.plan:
        hit = next((r["seq"] for r in out.faulted() if r.get("fault")
                    or r["ev"] == "crash"), None)
        seq = hit if hit is not None else seq
    if out.trace is not None:
        return out.trace.around(seq, EXCERPT_LINES)
    return trace.window(trace.steps(out.records), seq, EXCERPT_LINES)


def expect_dict(e):
    return {k: v for k, v in e.__dict__.items() if v is not None}


def reproduce(spec, case, backend="auto", models=DEFAULT_MODELS,
              fail_on=None):
    """One command that reruns this case alone (with the --backend the
    sweep was given, unless auto: auto decides as it did; with the
    --model that makes the case again: its own model when it is not a
    default one, else the sweep's MODELS when they are not the default;
    and its --fail-on, which decides whether a warning fails)."""
    own = getattr(spec, "reproduce_command", None)
    if own is not None:
        return own(case.id)
    hit = _RERUN.get(id(spec))
    if hit is None or hit[0] is not spec:
        if INSTALLED:               # the tree is not the user's directory
            path, prog = spec.path.resolve(), command_name()
        else:
            try:
                path = spec.path.resolve().relative_to(ROOT)
                prog = "scripts/crashcheck"
            except ValueError:
                path = spec.path.resolve()
                prog = str(ROOT / "scripts" / "crashcheck")
        hit = _RERUN[id(spec)] = (spec, f"{prog} run {path}")
    command = f"{hit[1]} --case '{case.id}'"
    if case.model is not None:
        # a real kernel's case (--fs) is made again by on_fs's --fs
        want = () if case.model in DEFAULT_MODELS \
            or realfs.fs_of(case.model) else (case.model,)
    else:
        want = () if tuple(models) == DEFAULT_MODELS else tuple(models)
    if want:
        command += f" --model {','.join(want)}"
    if backend != "auto":
        command += f" --backend {backend}"
    if fail_on is not None:
        command += f" --fail-on {fail_on}"
    return command


_RERUN = {}     # id(spec) -> (spec, "scripts/crashcheck run SPEC"): resolved once


def on_fs(command, spec, fs):
    """A reproduce COMMAND of a sweep on the real filesystem FS (--fs),
    which runs on it again (an audit's own command carries --fs
    already)."""
    if fs is None or getattr(spec, "reproduce_command", None) is not None:
        return command
    return f"{command} --fs {fs}"


def with_rerun(command, spec, options):
    """A reproduce COMMAND of a spec's case with the OPTIONS that decide
    how its run goes (Settings.rerun: where its scratch is, the limit it
    is stopped at, its HOME): a case stopped by the scratch rerun
    without them would run elsewhere. An audit's own command carries
    them already."""
    if not options or getattr(spec, "reproduce_command", None) is not None:
        return command
    return command + " " + " ".join(shlex.quote(str(o)) for o in options)


def safe_name(case_id):
    """A case id as a directory name: '#', '+' and '=' are fine on every
    filesystem we run on; '/' is not."""
    return case_id.replace("/", "_")


# What a case directory keeps of a run's trace: the first TRACE_HEAD
# and the last TRACE_TAIL lines of trace.txt and of trace.jsonl, and a
# line between them saying how many were left out. A program that spins
# on a failed write makes a call per turn until its time limit: one
# such case's trace was 88,000 lines (143 MB of trace.jsonl, 38 MB of
# trace.txt); what led to the spin is at its start, how it ended at its
# end.
TRACE_HEAD = 2000
TRACE_TAIL = 1000


def kept_ends(items, head=TRACE_HEAD, tail=TRACE_TAIL):
    """ITEMS (a list), or its first HEAD and last TAIL when longer."""
    if len(items) <= head + tail:
        return items
    return items[:head] + items[-tail:]


def cut_line(total, head=TRACE_HEAD, tail=TRACE_TAIL, what="lines"):
    return (f"[... {total - head - tail} {what} left out: crashcheck keeps "
            f"the first {head} and the last {tail} of {total} ...]")


def _copy_trace_ends(src, dest):
    """trace.jsonl at SRC into DEST, cleaned (trace.clean), its first
    TRACE_HEAD and last TRACE_TAIL lines with a record between them
    saying how many were left out; how many lines it had."""
    import collections
    head, tail, total = [], collections.deque(maxlen=TRACE_TAIL), 0
    with open(src, "rb") as fh:
        for line in fh:
            total += 1
            if len(head) < TRACE_HEAD:
                head.append(line)
            else:
                tail.append(line)
    if total <= TRACE_HEAD + TRACE_TAIL:
        dest.write_bytes(trace.read(src))
        return total
    # the ends cleaned as the whole would be: zeros only ever end a
    # line, and a record of ours says what is missing between them
    gap = (json.dumps({"ev": "cut", "left_out": total - len(head) - len(tail),
                       "lines": total}) + "\n").encode()
    dest.write_bytes(trace.clean(b"".join(head)) + gap
                     + trace.clean(b"".join(tail)))
    return total


def save_case_dir(outdir, res, out, excerpt, combo, crash=None, steps=None):
    """results/cases/<id>/: the trace (its ends, when long: TRACE_HEAD),
    stderr, the state and its difference from old and new, for a person
    to read, with a README.txt that says what the state is. The state is
    the crash state CRASH that decided the verdict when there is one (a
    power-loss finding, a run judged after its exit), laid out (the
    directory the run left is then `left/`), else the directory the run
    left. EXCERPT: the formatted calls (kept_ends of STEPS calls in
    all); what was cut is said in it and in res["cut"]."""
    cases = outdir / "cases"
    if cases.is_symlink():
        # never written through (engine/outdir.py refuses it up front)
        raise OSError(errno.ELOOP, "a symbolic link, not crashcheck's", str(cases))
    d = cases / safe_name(res["id"])
    ours = False
    if d.exists():
        # an earlier run's files go, if crashcheck's (engine/outdir.py),
        # and the user's files stay; a directory of the user's by that
        # name stops us
        from .outdir import remove_case_dir
        ours = remove_case_dir(d)
    d.mkdir(parents=True, exist_ok=ours)
    head = []
    if out.trace_from is not None:
        head = [f"(a lite run that timed out: its trace starts at seq "
                f"{out.trace_from}, the faulted call's in the baseline; "
                "its reproduce command with --keep records every call)"]
    elif out.has_thin:
        head = ["(a thin run that timed out: a write marked [thin] was "
                "recorded with no offset and no snapshot; its reproduce "
                "command with --keep records every call in full)"]
    cut = []
    if steps is not None and steps > len(excerpt):
        excerpt = excerpt[:TRACE_HEAD] + [cut_line(steps, what="calls")] \
            + excerpt[TRACE_HEAD:]
        cut.append(f"trace.txt: the first {TRACE_HEAD} and the last "
                   f"{TRACE_TAIL} of {steps} calls")
    # a file name that is not UTF-8 as its bytes, as a terminal shows it
    (d / "trace.txt").write_text("\n".join(head + excerpt) + "\n",
                                 errors="surrogateescape")
    tr = out.scratch / "trace.jsonl"
    if tr.exists():
        # as the library meant it (trace.clean)
        lines = _copy_trace_ends(tr, d / "trace.jsonl")
        if lines > TRACE_HEAD + TRACE_TAIL:
            cut.append(f"trace.jsonl: the first {TRACE_HEAD} and the last "
                       f"{TRACE_TAIL} of {lines} lines")
    for name in ("stdout", "stderr"):
        total = (res.get("output") or {}).get(name)
        if total is not None and total > runner.OUTPUT_CAP:
            cut.append(f"{name}: the first {runner.OUTPUT_CAP} of {total} "
                       "bytes")
    if cut:
        res["cut"] = cut
    (d / "stderr.txt").write_text(res["stderr"], errors="surrogateescape")
    old, new = contents(combo)
    name = target_name(combo.spec)
    tree = combo.start is not None and (name is None or combo.spec.check)
    if crash is not None:
        explorer.layout(crash, d / "state")
        if res["kind"] != "powerloss" and out.workdir.is_dir():
            shutil.copytree(out.workdir, d / "left", symlinks=True)
        got = crash.target
    elif out.workdir.is_dir():
        shutil.copytree(out.workdir, d / "state", symlinks=True)
        target = out.workdir / name if name is not None else None
        got = target.read_bytes() if target is not None and target.is_file() \
            else None
    else:
        # a run stopped for the scratch: its files went, to make room
        (d / "state").mkdir()
        got = None
    if tree:
        (d / "diff.txt").write_text(
            "a tree, judged by its checker alone: see result.json's "
            "finding for what it said\n")
    else:
        (d / "diff.txt").write_text(
            f"target against new: {payload.describe(got, old, new)}\n")
    (d / "README.txt").write_text(
        state_readme(res, crash, got, old, new, tree=tree),
        errors="surrogateescape")
    with open(d / "result.json", "w") as fh:
        json.dump(res, fh, indent=1, sort_keys=True)    # ASCII: \udcXX
    try:
        return str(d.relative_to(outdir.parent)) + "/"
    except ValueError:
        return str(d) + "/"


def state_readme(res, crash, got, old, new, tree=False):
    """The README.txt of a case's directory (and of `crashcheck replay`'s):
    the case, its verdict, what its state/ is, and for a crash state what
    persisted and the rule it breaks."""
    lines = [f"case:        {res['id']}",
             f"verdict:     {res['verdict']}"]
    if res.get("finding"):
        lines.append(f"finding:     {res['finding']}")
    what = "a tree, judged by its checker alone" if tree else \
        payload.describe(got, old, new)
    # what the disk holds first, then why: the order a reader follows
    fs = realfs.fs_of(res.get("model"))
    if crash is not None and fs is not None:
        lines += [f"state:       crash state {crash.label}: a real kernel "
                  f"state, what the {fs} filesystem held after the program "
                  f"was killed there and the filesystem was cut off from "
                  f"its disk ({realfs.HOW[fs]}) and mounted again",
                  f"target:      {what}",
                  f"because:     {crash.why}",
                  f"rule:        {crash.rule or '-'}"]
    elif crash is not None:
        lines += [f"state:       crash state {crash.label} "
                  f"({res.get('model') or 'posix'} model): what the disk may "
                  "hold after a power cut there",
                  f"target:      {what}",
                  f"because:     {crash.why}",
                  f"rule:        {crash.rule or '-'}"]
        if res["kind"] != "powerloss":
            lines.append("left:        the directory the run left behind")
    else:
        lines += ["state:       the directory the run left behind",
                  f"target:      {what}"]
    if res.get("outside"):
        lines.append("outside:     wrote outside its scratch (confined: "
                     "your files untouched, the writes thrown away): "
                     + ", ".join(res["outside"]))
    if res.get("explanation"):
        lines += ["", res["explanation"]]
    lines += ["", f"reproduce:   {res['reproduce']}"]
    return "\n".join(lines) + "\n"


def _expectations(specs, results):
    """(spec, expect, the results it applies to) for every buggy-variant
    expectation."""
    by_workload = {}
    for r in results:
        by_workload.setdefault(r["workload"], []).append(r)
    for spec in specs:
        ran = {r.get("backend", "preload")
               for r in by_workload.get(spec.name, [])}
        for e in spec.expect:
            if e.backend is not None and e.backend not in ran:
                continue    # its backend ran none of this spec's cases
            mine = [r for r in by_workload.get(spec.name, [])
                    if e.applies(kind=r["kind"], model=r["model"],
                                 strategy=r["strategy"], size=r["size"],
                                 call=r["call"] or None,
                                 backend=r.get("backend", "preload"))]
            yield spec, e, mine


def uncaught(specs, results):
    """One line per expectation of a buggy variant that no case met, e.g.
    'no-fsync: expected not-durable (kind=powerloss), got only ok'. An
    expectation no case of the run applies to (an xfs one under the
    default models) was not run, and is not listed (not_run)."""
    lines = []
    for spec, e, mine in _expectations(specs, results):
        if not mine or any(r["verdict"] == e.verdict for r in mine):
            continue
        if all(r["verdict"] == "skipped" for r in mine):
            continue    # cannot run here; the report lists the reason
        seen = sorted({r["verdict"] for r in mine})
        lines.append(f"{spec.name}: expected {e.describe()}, "
                     f"got only {', '.join(seen)}")
    return lines


def not_run(specs, results):
    """The expectations no case of the run applies to: 'variant: verdict
    (where)' each. They neither pass nor fail: the run did not look."""
    return [f"{spec.name}: {e.describe()}"
            for spec, e, mine in _expectations(specs, results) if not mine]


def variant_verdicts(specs, results, names):
    """For each buggy variant of NAMES (those with an expectation not
    caught): one line saying whether it is fixed, which is only when
    every case of it is ok, or else which findings it still shows, so
    that a fix that moved the bug elsewhere does not read as one."""
    lines = []
    for spec in specs:
        if spec.name not in names:
            continue
        found = {}
        for r in results:
            if r["workload"] == spec.name and r["verdict"] not in (
                    "ok", "skipped"):
                found[r["verdict"]] = found.get(r["verdict"], 0) + 1
        if not found:
            lines.append(f"{spec.name}: every case is ok now: fixed")
        else:
            shown = ", ".join(f"{v} ({n} case{'' if n == 1 else 's'})"
                              for v, n in sorted(found.items()))
            lines.append(f"{spec.name}: not fixed: its cases still show "
                         f"{shown}")
    return lines
