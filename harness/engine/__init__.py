"""Running programs and sweeping cases: the runner and its fork server,
the trace reader, the sweep (cases from a baseline's trace, one case
executed), the worker pool and the pytest plugin that drives it, specs,
and the table of intercepted calls."""
