"""Running programs and sweeping cases: the runner and its fork server,
the trace reader, the sweep (sweep.py enumerates; cases.py, execute.py,
records.py, baseline.py, sampling.py, judge.py (with checker.py,
realcrash.py, partruns.py, caseresult.py, unjudgeable.py) and results.py
hold its parts: docs/design.md says which holds what), the worker pool
and the pytest plugin that drives it, specs, and the table of
intercepted calls."""
