"""Validate a plan with the C parser itself (faults/bin/planck), so that the
CLI refuses exactly what the library would refuse: one grammar, one
implementation."""

import json
import subprocess

from .. import ROOT, UsageError

PLANCK = ROOT / "faults" / "bin" / "planck"


class PlanError(UsageError):
    pass


def parse(plan):
    """The parsed plan ({"rules": [...]}), or PlanError naming the bad
    token. An empty plan has no rules."""
    if not PLANCK.is_file():
        raise UsageError(f"plan checker not built: {PLANCK} (run 'make')")
    proc = subprocess.run([str(PLANCK), plan], capture_output=True, text=True)
    if proc.returncode == 2:
        msg = proc.stderr.strip().splitlines()
        # The CLI prefixes its own name; planck's would read twice.
        raise PlanError(msg[0].removeprefix("planck: ") if msg
                        else f"bad plan: {plan!r}")
    if proc.returncode != 0:
        raise UsageError(f"planck failed with status {proc.returncode}: "
                         f"{proc.stderr.strip()}")
    return json.loads(proc.stdout)
