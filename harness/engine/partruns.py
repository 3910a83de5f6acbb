"""Running part of a case first (the PartRuns mixin of the Judge): lite
runs, which record from the faulted call on, and thin runs, which
record writes without their bytes; which cases may, and the counts of
those that stood, by which a group of cases stops trying."""

from ..judging import explorer, oracle



class PartRuns:
    """The Judge's choice of lite and thin runs (lite_from,
    thin_window) and its count of those that stood (lite_count,
    rerun_often)."""

    def lite_from(self, case, combo):
        """The seq a lite run of CASE starts its trace at, or None for a
        run that records every call.

        A case whose program stops at its fault, with an error or killed,
        is judged from its exit, its files and the calls the fault fired
        on: the calls before the fault, which the program makes as its
        baseline did, are recorded for nothing, and recording them cost
        most of a long run, and the snapshots, which only the crash
        states of a run that exits 0 are built from, an eighth to a fifth
        of a short run's case.
        Such a run records from where the baseline made the faulted call,
        and takes no snapshots; the library still gives every call its
        seq, and writes the line of any call a fault fired on
        (faults/trace.c, CRASHCHECK_TRACE_FROM). judge_run accepts it
        only when that is all it needs; else the case runs again,
        recorded whole. Kinds in LITE_KINDS are those whose programs
        mostly stop; where the lite runs of one group of cases
        (_lite_key) keep being run again, its cases are whole from then
        on."""
        if not self.may_run_part(case, LITE_KINDS):
            return None
        if case.at <= PERSIST_WHOLE_WITHIN and _persists(case):
            # A fault that keeps firing can keep a program retrying until
            # its timeout, its trace growing all the while: without the
            # recorder's snapshots each retry is cheaper, and the trace
            # that much longer to read (write-enospc-spin: 1274256
            # lines in 2 s against 281879, 37.5 s of sweep against 10.6).
            # Far into a run the trace's start saves more than that
            # costs; near its start it does not.
            return None
        if self.rerun_often(case, combo):
            return None
        return case.at

    def may_run_part(self, case, kinds):
        """Whether CASE, of one of KINDS, may run lite or thin first: not
        with --whole-traces, --keep or for replay (which show every call
        in full), and only where its baseline made the faulted call
        (Case.at)."""
        return (self.settings.lite and not self.hold and not self.settings.keep
                and case.kind in kinds and case.at is not None)

    def thin_window(self, case, combo):
        """The seqs (lo, hi) a thin run of CASE records in full, or None
        for a run that records every write in full.

        A case whose program is expected to get past its fault (THIN_KINDS:
        an EINTR, a short write) and claim success is judged from its
        whole trace: its after-exit crash states are replayed from every
        call. The writes that a later fsync snapshots whole are moot there
        (trace.Lazy.for_exit) and go unread, yet recording each (its
        offset, and a range snapshot: the fstat after it and the bytes
        read back) cost three of the five system calls the recorder
        makes for a write.
        Such a run records every write thin that it may (faults/trace.c,
        CRASHCHECK_TRACE_FULL): the file, its flags and what the call
        returned. The faulted call, which a rule chooses, never is.
        judge_run accepts it only where no thin line is read; else the
        case runs again, recorded whole, and where the thin runs of one
        group of cases (_lite_key) keep being run again, its cases are
        whole from then on."""
        if not self.may_run_part(case, THIN_KINDS) or \
                self.rerun_often(case, combo):
            return None
        # the faulted call's seq in the baseline: full, as it is anyway
        return case.at, case.at

    def rerun_often(self, case, combo):
        """Whether the lite or thin runs of CASE's group (_lite_key) ran
        again more often than they stood, twice at least."""
        stood, missed = self._lite.get(_lite_key(case, combo), (0, 0))
        return missed >= 2 and missed > stood

    def lite_count(self, case, combo, stood):
        """Count a lite or thin run of CASE that STOOD, or that ran
        again."""
        counts = self._lite.setdefault(_lite_key(case, combo), [0, 0])
        counts[0 if stood else 1] += 1


# A fault that keeps firing within this many calls of a run's start runs
# whole, not lite (Judge.lite_from)
PERSIST_WHOLE_WITHIN = 80


# the kinds of fault case that run lite first (Judge.lite_from)
LITE_KINDS = ("eio", "enospc", "crash")


# the kinds of fault case that run thin first (Judge.thin_window)
THIN_KINDS = oracle.TRANSIENT


def _lite_key(case, combo):
    """What Judge counts lite runs by: the program (spec and strategy;
    its sizes share a command line), the kind of fault, and whether it
    fires once or from its call on ("write#3+=EIO"): a program that
    retries gets past a fault that fires once and claims success, and
    stops at one that keeps firing, so the two kinds of case of one
    program stand apart."""
    return combo.spec.name, combo.strategy, case.kind, _persists(case)


def _persists(case):
    """CASE's fault fires from its call on ("write#3+=EIO"), not once."""
    return "+=" in (case.plan or "")


def thin_unread(records):
    """Whether a thin run's after-exit replay of RECORDS (Outcome.for_exit)
    is its whole run's: no thin write outside a moot run (explorer.Moot),
    and no write that put bytes into a file of a moot run outside one. A
    write is recorded the same thin or whole, but for its snapshot: after
    thin writes to a file, the first write in full snapshots the file
    whole where a whole run took a range, and each gives the same
    content; outside a moot run the sweep does not lean on that. A moot
    run whose writes a world needs raises explorer.ThinRecord
    (explore_exit's moot_full)."""
    write, moot = explorer.WRITE_CALLS, explorer.Moot
    inos = {rec["ino"] for rec in records if rec.__class__ is moot}
    for rec in records:
        if rec.__class__ is not moot and rec.get("call") in write and (
                rec.get("thin") or (rec.get("ret", 0) > 0
                                    and rec.get("ino") in inos)):
            return False
    return True
