"""The rules a finding's cause names that more than one step of the
oracle gives: the run's own verdict (oracle.py) and the cause of a
failing crash state (statecause.py)."""

from .explorer import RULE_ONE_RENAME

# the explorer's words where a crash state shows the same defect: the
# cases of one defect share its rule
RULE_KEEP_TARGET = RULE_ONE_RENAME
RULE_WHOLE_BEFORE_RENAME = ("write the whole temporary file (flush its stream), "
                            "fsync it, and only then rename it over the target")

RULE_NO_SYNC_RETRY = ("after fsync fails, the data it covered is lost: rewrite it "
                      "from a copy (or report the error), never retry fsync and "
                      "claim success")

# A crash state's cause, by the property it breaks (properties.py).
RULE_SYNC_FAILED = ("after fsync fails, the data it covered is not on the "
                    "disk and never will be: stop there (or write the data "
                    "again from a copy into a fresh file) instead of going on "
                    "as if it were")
RULE_APPEND = ("make the reader drop a torn last record (a length and a "
               "checksum per record): no fsync placement keeps a power cut "
               "between an append and its sync from cutting it short or "
               "leaving garbage at the end")
RULE_ORDER = ("make a file durable (fsync it, and its directory when its "
              "name is new) before the change that depends on it")

_SKIPPED_SYNC = ": when it fails, the sync it leads to never happens"


def skipped_rule(call):
    """The rule a fault breaks that made the program skip a sync it
    makes otherwise (SQLite's open of the directory for its fsync)."""
    return f"check what {call} returns{_SKIPPED_SYNC}"


def blames_a_skipped_sync(v):
    """Whether verdict V names as its cause a sync that its fault made
    the program skip: the sweep asks whether the program without the
    fault loses the data anyway (Outcome.known_at_risk), when that
    defect, not the skip, is the cause."""
    return v.cause is not None and (v.cause.rule or "").endswith(
        _SKIPPED_SYNC)


# the advice for a tree its checker refused, when the state names no rule
TREE_FIX = ("Make each step durable before the step that depends on it: "
            "fsync a file before a name or a log entry points to it, and "
            "fsync the directory after creating, renaming or removing a "
            "name in it.")


def check_rule(o):
    """The rule a silent fault breaks, for grouping: "check what fsync returns"."""
    return f"check what {o.call.split('#')[0]} returns"


def sync_call(call):
    return call.split("#")[0] in ("fsync", "fdatasync", "msync", "sync_file_range",
                                  "syncfs", "sync")
