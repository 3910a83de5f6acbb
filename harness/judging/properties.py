"""What a finding says besides its verdict: the property it breaks, and
how grave it is (crash-model.md, "Severity, and what a finding says").

The property is one of ALICE's classes (Pillai et al., OSDI 2014, Table
3(a)), as the oracle derives it from the verdict, the calls the case
made and the crash state that decided it:

    atomicity/call     atomicity of one call: a single write (or a
                       block of it) half on the disk
    atomicity/calls    atomicity across calls: an update made of
                       several calls seen half done (truncate then
                       write, remove then rename)
    atomicity/append   atomicity of an append's content: the end of a
                       file the program appends to, cut or garbage,
                       though its sync follows the append
    ordering           what had to persist before what: a change that
                       persisted while an earlier one it depends on did
                       not (a rename before the data it names, a ref
                       before the objects it points to)
    durability         the program exited 0, and nothing it made
                       afterwards depends on what a power cut then loses
    error/unreported   an error the program did not report
    error/ignored      an error the program saw and went on from as if
                       the call had worked
    error/transient    a transient fault (EINTR, a short write) given up
                       on, or its data dropped
    error/died         the program died of a signal
    error/stuck        the program did not finish: it spins on a failing
                       call, or is blocked

Severity: `error` where data is lost or at risk, and for a program that
died or never finished; `warning` for ignored-error (nothing lost this
time) and for a finding whose fault cannot happen where the program ran
(EINTR on a local regular file with no signal handler installed without
SA_RESTART). Each warning says when it would matter (WHEN_IGNORED,
WHEN_EINTR).
"""

PROPERTIES = {
    "atomicity/call": "atomicity of one call",
    "atomicity/calls": "atomicity across calls",
    "atomicity/append": "atomicity of an append's content",
    "ordering": "ordering",
    "durability": "durability",
    "error/unreported": "error handling: an error unreported",
    "error/ignored": "error handling: an error ignored",
    "error/transient": "error handling: a transient fault given up on",
    "error/died": "error handling: died of a signal",
    "error/stuck": "error handling: never finished",
}

SEVERITIES = ("error", "warning")
FAIL_ON = SEVERITIES

# when a warning would matter, said in its explanation
WHEN_IGNORED = ("It would matter the day the call that failed is one the "
                "data depends on: check it, and fail with a message when it "
                "fails.")
WHEN_EINTR = ("Linux does not interrupt a write to a local regular file, and "
              "the program has no signal handler installed without "
              "SA_RESTART, so this fault cannot happen where it ran; it "
              "would matter on NFS mounted with 'intr', on FUSE, or once "
              "the program installs a handler without SA_RESTART.")


def words(prop):
    """The property's words, for a report: "atomicity of one call"."""
    return PROPERTIES.get(prop or "", prop or "")


def severity(verdict, impossible=False):
    """The severity of a case's VERDICT ("" for ok and skipped).
    IMPOSSIBLE: the finding comes from a fault that cannot happen where
    the program ran."""
    if verdict in ("ok", "skipped"):
        return ""
    if verdict == "harness-error":
        return "error"
    if verdict == "ignored-error" or impossible:
        return "warning"
    return "error"


def fails(sev, fail_on="error"):
    """Whether a finding of severity SEV fails the run under --fail-on."""
    return sev == "error" or (sev == "warning" and fail_on == "warning")
