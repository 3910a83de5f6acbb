"""The words every format shares: a command, an exit, the faults fired,
durations, plurals, the outcome of a run and its first sentences, the
facts of how it ran (run_facts), and the cases a Findings section
lists."""

import datetime
import shlex
import signal

from .summary import STATUSES, is_number, status


def command_text(command):
    if command is None:
        return ""
    if isinstance(command, (list, tuple)):
        return shlex.join(str(a) for a in command)
    return str(command)


def exit_text(exit_info):
    if not isinstance(exit_info, dict):
        return ""
    if exit_info.get("timed_out"):
        return "timed out (process group killed)"
    sig = exit_info.get("signal")
    if sig is not None:
        try:
            name = signal.Signals(sig).name
        except (ValueError, TypeError):
            name = f"signal {sig}"
        return f"killed by {name} ({sig})"
    if exit_info.get("status") is not None:
        return f"exit status {exit_info['status']}"
    return ""


def fired_text(fired):
    if not isinstance(fired, list):
        return ""
    out = []
    for f in fired:
        if isinstance(f, dict):
            out.append(f"{f.get('rule', '?')} ×{f.get('count', '?')}")
    return ", ".join(out)


def _seconds(value):
    if not isinstance(value, (int, float)):
        return ""
    if value < 60:
        return f"{value:.1f} s"
    minutes, secs = divmod(int(round(value)), 60)
    return f"{minutes} min {secs} s"


def when_text(value):
    """A start time as ISO 8601: epoch seconds (the plugin's) or a string
    already formatted."""
    if is_number(value):
        return datetime.datetime.fromtimestamp(
            value, datetime.timezone.utc).isoformat(timespec="seconds")
    return str(value)


def plural(n, word, many=None):
    """'1 case', '2 cases' ('1 defect', '3 more cases': MANY when not
    WORD + 's')."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


def outcome_word(summary):
    """PASS, PASS, NOT CLEAN (changes crashcheck could not see), FAIL, or
    INTERRUPTED: what a report says first."""
    if summary.get("interrupted"):
        return "INTERRUPTED"
    word = "PASS" if summary["passed"] else "FAIL"
    if summary["passed"] and summary.get("unseen"):
        word += ", NOT CLEAN"
    if summary.get("sampled"):
        word += ", " + sampled_words(summary)
    return word


def sampled_words(summary):
    """'SAMPLED 90 of 405 cases', or "" for a run of every case."""
    sampled = summary.get("sampled")
    if not sampled:
        return ""
    return f"SAMPLED {sampled['kept']} of {sampled['of']} cases"


def summary_sentences(summary):
    """The one-paragraph story of the run, as plain-text sentences."""
    s = summary
    verdict = outcome_word(s)
    found = plural(s["findings"], "finding")
    if s["findings"]:
        found += f" ({plural(len(s['defects']), 'defect')})"
    counts = [found,
              plural(s["failed"], "failure"),
              plural(s["harness_errors"], "harness error"),
              f"{s['skipped']} skipped"]
    if s.get("interrupted") and not s["interrupted"]["of"]:
        first = (f"{verdict} ({s['interrupted']['by']}) before its cases "
                 "were enumerated: no case ran.")
    elif s.get("interrupted"):
        i = s["interrupted"]
        first = (f"{verdict} ({i['by']}): {i['ran']} of "
                 f"{plural(i['of'], 'case')} ran, " + ", ".join(counts)
                 + "; the rest were never judged.")
    else:
        first = (f"{verdict}: {plural(s['cases'], 'case')}, "
                 + ", ".join(counts) + ".")
    out = [first]
    if s.get("sampled") and not s.get("interrupted"):
        left = s["sampled"]["of"] - s["sampled"]["kept"]
        out.append(f"Only {s['sampled']['kept']} of the "
                   f"{s['sampled']['of']} cases ran, a sample "
                   f"({left} left out, never run): not a clean pass; "
                   "--exhaustive, or a larger --budget, runs every one.")
    if s.get("missing") and not s.get("interrupted"):
        out.append(f"{plural(s['missing'], 'case')} of the "
                   f"{s['expected']} the run was to judge have no result: "
                   "the run is not a pass.")
    # (how many, as one, as several): the findings that did not fail
    for n, one, many in (
            (s["caught"], "is a buggy variant caught as its spec expects.",
             "are buggy variants caught as their specs expect."),
            (s.get("known"), "is known from the baseline: reported, not "
             "failing.", "are known from the baseline: reported, not "
             "failing."),
            (s.get("ignored"), "is accepted by the ignore file, with its "
             "reason.", "are accepted by the ignore file, each with its "
             "reason."),
            (s.get("warnings"), "is a warning: it lost nothing here (an "
             "ignored error, or a fault that cannot happen where the program "
             "ran), and the run fails on errors only.", "are warnings: they "
             "lost nothing here (ignored errors, or faults that cannot happen "
             "where the program ran), and the run fails on errors only.")):
        if n:
            out.append(f"Of the findings, {n} " + (one if n == 1 else many))
    if s.get("recovered"):
        out.append(f"{plural(s['recovered'], 'case')} recovered from a "
                   "fault on the data path.")
    var = s["variants"]
    if var or s["not_caught"]:
        met = sum(v["met"] for v in var)
        line = (f"Buggy variants: {met} of {plural(len(var), 'expectation')}"
                " met")
        if s["not_caught"]:
            line += (f", {len(s['not_caught'])} not caught (a failure of the "
                     "suite)")
        elif met < len(var) and not s["variants_judged"]:
            line += ("; the others are judged when the shards are merged "
                     "(their catching cases may be in another shard)")
        out.append(line + ".")
    if s["harness_errors"]:
        out.append("A harness error is a planned fault that never fired: "
                   "the case proved nothing and counts as a failure.")
    if s.get("unseen"):
        n = len(s["unseen"])
        out.append(f"{plural(n, 'change')} to the files "
                   f"{'was' if n == 1 else 'were'} made by calls crashcheck "
                   "cannot see (Coverage).")
    return out


def model_text(model):
    """A case's model as the reports name it: a real kernel's is said
    to be one (harness/engine/realfs.py)."""
    if isinstance(model, str) and model.endswith("-real"):
        return f"{model} (a real kernel state, not a model's)"
    return model


def run_facts(summary):
    """(label, value) pairs describing the run, in display order."""
    run, timing = summary["run"], summary["timing"]
    facts = []
    if summary.get("command") is not None:
        facts.append(("command", command_text(summary["command"])))
    if summary.get("seed") is not None:
        facts.append(("seed", str(summary["seed"])))
    models = run.get("models") or summary["models"]
    if models:
        facts.append(("models", ", ".join(map(str, models))))
    if run.get("fs"):
        facts.append(("real kernel", f"{run['fs']}: every run on a fresh "
                      f"loop-mounted {run['fs']}, and the {run['fs']}-real "
                      "power-loss cases judged on the states the kernel "
                      "left after a shutdown and a new mount, not a "
                      "model's"))
    sector = run.get("sector")
    if isinstance(sector, int) and sector != 4096:
        facts.append(("sector", f"{sector} bytes"))
    elif isinstance(sector, dict):
        facts.append(("sector", ", ".join(f"{k} {v}"
                                          for k, v in sector.items())))
    if timing.get("started"):
        facts.append(("started", when_text(timing["started"])))
    if "duration" in timing:
        facts.append(("duration", _seconds(timing["duration"])))
    if run.get("shards"):
        facts.append(("shards", str(len(run["shards"]))))
    grouping = run.get("grouping") or {}
    if summary.get("sampled"):
        facts.append(("cases", _sampled_fact(grouping,
                                             timing.get("estimate"))))
    backends = run.get("backends") or {}
    if isinstance(backends, dict) and backends:
        said = []
        for workload in sorted(backends):
            for e in backends[workload] or ():
                if not isinstance(e, dict):
                    continue
                why = e.get("why") or ("the default: it is dynamically "
                                       "linked, and the preload saw every "
                                       "change it made"
                                       if e.get("backend") == "preload" else "")
                said.append(f"{workload}: {e.get('backend')}"
                            + (f" ({why})" if why else ""))
        if said:
            facts.append(("backend", "; ".join(said)))
    checker = run.get("checker") or {}
    if checker.get("states"):
        facts.append(("checker", (
            f"{checker['states']} crash states judged, "
            f"{checker['distinct_states']} distinct, each checked once")))
    return facts


def _sampled_fact(g, estimated=None):
    """How a sampled run chose its cases (run.grouping, and the estimate
    of timing.estimate), in words."""
    text = (f"{g['kept']} of {g['cases']}: of each group of calls (by call "
            f"site, file and fault; {g.get('groups')} groups) the first, the "
            f"last and {g.get('sample')} sampled between them with seed "
            f"{g.get('seed')}")
    estimated = estimated if isinstance(estimated, dict) else {}
    budget, estimate = g.get("budget"), estimated.get("estimate")
    if is_number(budget) and is_number(estimate) and estimate > budget:
        text += (f", as every case would take about {_seconds(estimate)} on "
                 f"{estimated.get('jobs')} jobs, past the {_seconds(budget)} "
                 "budget")
    return text + "; --exhaustive for every one"


def listed_cases(cases):
    """Cases the Findings sections list: failures first, then harness
    errors, then buggy variants' expected findings."""
    return [c for c in sorted(cases, key=lambda c: (STATUSES.index(status(c)),
                                                    c["id"]))
            if status(c) in ("failed", "harness-error", "caught", "known",
                             "ignored", "warning")]
