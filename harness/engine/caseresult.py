"""A case's result (the CaseResult mixin of the Judge): its entry of
results.json, with its cause (the deciding call, symbolized) and, for a
finding or with --keep, its case directory (results.py writes it)."""

import shutil

from . import runner, trace, tracecut
from ..judging import causes, explorer, properties, symbols
from .cases import target_name
from .records import plan_rules
from .results import (excerpt_around, expect_dict, kept_ends, on_fs, reproduce,
                      save_case_dir, with_rerun)
from .baseline import load_globs, load_run



class CaseResult:
    """The Judge's results: a case's results.json entry (result) and
    its cause (cause, target_history)."""

    def result(self, case, combo, verdict, out, states, model=None, keep=False,
               upto=None, under=None):
        """The case's entry of results.json (docs/design.md), and for a
        finding (or with --keep) its directory under results/cases/.
        UPTO is the seq of a power-loss case's crash point: the deciding
        call of its state was made at or before it. UNDER: the models of
        the sweep the verdict holds under, when it came from crash states
        (a power-loss case's own model, until write_reports names the
        others); by default every model of the sweep, the verdict owing
        nothing to one."""
        expected = [e for e in combo.spec.expect if e.applies(
            kind=case.kind, model=case.model or model, strategy=combo.strategy,
            size=combo.size, call=case.call or None, backend=case.backend)]
        finding = verdict.verdict not in ("ok", "skipped")
        excerpt, fired = self.calls_shown(case, out, finding)
        cause, location, text = self.cause(case, combo, verdict, out, upto) \
            if finding else (None, None, verdict.finding)
        res = self.entry(case, combo, verdict, out, model, under, expected)
        res.update(states=states, finding=text, cause=cause,
                   location=location, fired=fired, trace_excerpt=excerpt)
        run = out.run if out is not None else None
        if run is not None and max(run.stdout_size, run.stderr_size) > \
                runner.OUTPUT_CAP:
            # what the program wrote, of which OUTPUT_CAP bytes are kept
            res["output"] = {"stdout": run.stdout_size,
                             "stderr": run.stderr_size}
        tracecut.note(res, out)
        if out is not None and (finding or self.settings.keep):
            self.keep_case_dir(res, combo, verdict, out)
        return res

    def passed(self, combo, verdict, expected):
        """(severity, passed) of VERDICT: a finding fails unless a buggy
        variant expects it (EXPECTED: the spec's expectations that apply
        to the case), or it is a warning and the run fails on errors
        only."""
        # the sweep's own harness errors are not the oracle's: no severity
        sev = verdict.severity or properties.severity(verdict.verdict)
        if verdict.verdict == "harness-error":
            return sev, False
        if verdict.verdict in ("ok", "skipped"):
            return sev, True
        return sev, any(e.verdict == verdict.verdict for e in expected) or \
            not properties.fails(sev, self.settings.fail_on
                                 or combo.spec.fail_on)

    def calls_shown(self, case, out, finding):
        """(trace excerpt, fired rules) of a case's run OUT: the calls
        around the target, for a FINDING, and each rule of its plan with
        how often it fired."""
        if out is None:
            return [], []
        excerpt = []
        # The calls around the target, for a finding: what the reports
        # show next to it. A case that held its contract has none (its
        # reproduce command with --keep writes every call to its
        # trace.txt): parsing and formatting them for every case was
        # an eighth of a case at 100 writes.
        if finding:
            fmt = call_text(out)
            excerpt = [fmt(r) for r in excerpt_around(out, case)]
        fired = [{"rule": f.rule, "count": f.count}
                 for f in trace.fired(out.faulted(), plan_rules(case.plan))]
        return excerpt, fired

    def entry(self, case, combo, verdict, out, model, under, expected):
        """The results.json entry of CASE with VERDICT, in its order,
        with its states, finding, cause, location, fired rules and trace
        excerpt still to fill in."""
        spec = combo.spec
        sev, passed = self.passed(combo, verdict, expected)
        run = out.run if out is not None else None
        return {
            "id": case.id,
            "workload": spec.name,
            "strategy": combo.strategy,
            "size": combo.size,
            "kind": case.kind,
            "plan": case.plan,
            "call": case.call,
            "model": case.model or model,
            "models": list(under if under is not None else
                           (case.model,) if case.model else
                           self.settings.models),
            "states": None,
            "seed": self.settings.seed,
            "verdict": verdict.verdict,
            "severity": sev or None,
            "property": verdict.cause.prop or None
            if verdict.cause is not None else None,
            "passed": passed,
            "expected": [expect_dict(e) for e in expected],
            "finding": None,
            "explanation": verdict.explanation,
            "state": verdict.state,
            "note": verdict.note,
            "cause": None,
            "location": None,
            "reproduce": with_rerun(on_fs(reproduce(spec, case,
                                                    self.settings.backend,
                                                    self.settings.models,
                                                    self.settings.fail_on),
                                          spec, self.settings.fs),
                                    spec, self.settings.rerun),
            "backend": case.backend,
            "exit": {"status": run.status if run else None,
                     "signal": run.signal if run else None,
                     "timed_out": run.timed_out if run else False},
            "stderr": run.stderr_text() if run else "",
            "fired": None,
            "outside": list(run.outside) if run else [],
            "trace_excerpt": None,
            "dir": "",
            "duration": round(run.duration, 6) if run else 0.0,
        }

    def keep_case_dir(self, res, combo, verdict, out):
        """Save the case directory of RES (res["dir"]), or say in
        res["dir_error"] why it could not be."""
        # a power-loss or baseline finding too: the crash state that
        # decided it, laid out, is what a person wants to look at
        crash = next((st for st in self.last_states
                      if verdict.state and st.label == verdict.state), None)
        fmt = call_text(out)
        try:
            steps = trace.steps(out.records)
            res["dir"] = save_case_dir(
                self.settings.out, res, out,
                [fmt(r) for r in kept_ends(steps)], combo, crash=crash,
                steps=len(steps))
        except (OSError, shutil.Error, trace.TraceError,
                explorer.ExplorerError) as e:
            # the verdict stands; where to look is gone
            res["dir_error"] = f"its directory could not be saved: {e}"

    def target_history(self, case, combo, out):
        """(renamed over, removed): whether the program renamed a file
        over the target, and whether it renamed the target's own entry
        away or unlinked it, before it stopped: in OUT's trace, and for a
        lite run (whose trace starts at its fault) in its baseline's
        before the faulted call."""
        over, away = target_moves(out.records, str(out.workdir),
                                  target_name(combo.spec))
        if out.trace_from is not None:
            b_over, b_away = self.first_rename(combo)
            over = over is not None or before(b_over, case.at)
            away = away is not None or before(b_away, case.at)
            return over, away
        return over is not None, away is not None

    def first_rename(self, combo, out=None):
        """(seq of the first rename over the target, seq of the first
        rename or unlink of the target's own entry) in a combo's baseline
        (OUT, when it is loaded already), each None when there is none;
        once per process."""
        name = target_name(combo.spec)
        return self.from_baseline(
            "rename", combo,
            lambda b: target_moves(b.records, str(b.workdir), name), out)

    def from_baseline(self, what, combo, compute, out=None):
        """COMPUTE(the combo's baseline, an Outcome: OUT when it is loaded
        already), once per process and combo. A lite run's questions
        about the calls before its fault are its baseline's, the same
        for each of its cases: asked again for each, the baseline's
        trace parsed twice a case made a case of a 1000-write program
        cost 16 ms instead of 2."""
        key = (what, combo.prefix)
        if key not in self._calls:
            self._calls[key] = compute(
                out if out is not None else load_run(self.work / combo.prefix))
        return self._calls[key]

    def cause(self, case, combo, verdict, out, upto):
        """(cause entry, location, finding) of a finding (causes.describe):
        the deciding call found in OUT's trace, symbolized where the trace
        says where it was made, and the finding naming that place."""
        if verdict.cause is None:
            return None, None, verdict.finding
        rec, base = None, None
        if out is not None:
            # a call cause needs only the faulted records; a change, the
            # calls before it: a lite run's trace starts at its fault, and
            # its program made the calls before as its baseline did
            records, base = (), str(out.workdir)
            if not verdict.cause.call:
                records = out.records
                if out.trace_from is not None:
                    baseline = load_run(self.work / combo.prefix)
                    records, base, upto = baseline.records, \
                        str(baseline.workdir), case.at
            faulted = out.faulted()
            if out.deciding is not None:
                faulted = [out.deciding] + list(faulted)
            rec = causes.deciding_record(verdict.cause, records,
                                         faulted=faulted, base=base, upto=upto)
        location = symbols.site(rec) if rec is not None else None
        if combo.prefix not in self._globs:
            self._globs[combo.prefix] = load_globs(self.work / combo.prefix)
        entry, location = causes.describe(
            combo.spec.name, verdict.verdict, verdict.cause, rec, base=base,
            location=location, globs=self._globs[combo.prefix])
        text = verdict.finding
        if location is not None:
            text += f" ({entry['call']} at {location['text']})"
        return entry, location, text


def call_text(out):
    """A function giving a record of OUT's trace as a line of text, its
    paths relative to the run's directory and scratch."""
    base, root = str(out.workdir), str(out.scratch)

    def fmt(rec):
        return trace.format_call(rec, base, root=root)
    return fmt


def before(seq, at):
    """Whether a call at SEQ (None: no such call) came before the call a
    case faults, AT (None: every call counts)."""
    return seq is not None and (at is None or seq < at)


def target_moves(records, base, name):
    """(first seq, first seq) in RECORDS, whose names are relative to
    BASE, of a successful rename over the target NAME and of one that
    took the target's own entry away (a rename from it, an unlink);
    None where there is none."""
    over = away = None
    for r in trace.calls(records):
        if r.get("ret", -1) < 0:
            continue
        call, seq = r.get("call"), r["seq"]
        if call in causes.RENAME_CALLS:
            if causes.named(r.get("path2"), name, base):
                over = seq if over is None else min(over, seq)
            if causes.named(r.get("path"), name, base):
                away = seq if away is None else min(away, seq)
        elif call in causes.UNLINK_CALLS and causes.named(r.get("path"), name, base):
            away = seq if away is None else min(away, seq)
    return over, away


def target_writes(records, base, name):
    """The first seq in RECORDS (names relative to BASE) of a successful
    call that wrote into the target NAME's own inode, or truncated it;
    None where there is none."""
    start = (causes.start_tree(records) or {}).get(name)
    first = None
    for r in trace.calls(records):
        if r.get("ret", -1) < 0:
            continue
        mine = (start is not None and r.get("ino") == start) or \
            causes.named(r.get("path"), name, base)
        if mine and (causes.changes_data(r) or "O_TRUNC" in (r.get("flags") or ())):
            first = r["seq"] if first is None else min(first, r["seq"])
    return first
