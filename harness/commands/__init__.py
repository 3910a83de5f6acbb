"""The subcommands: cli (the argument parser and dispatch), audit, run,
replay, merge. Each turns a command line into work for the engine and
exits 0, 1 (findings) or 2 (a usage error, one line)."""
