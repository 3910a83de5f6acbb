"""Reports of a run, written: results.json, report.md, report.html and
JUnit XML, each written whole or not at all (write_atomic), results.json
last (write_all); and a command line that renders (and merges) existing
results without the CLI.

The formats live apart: summary.py (what every report says), words.py,
markdown.py, htmlpage.py, junit.py, sarif.py, console.py.
"""

import json
import os
import sys
import tempfile
from pathlib import Path

from .htmlpage import html_of, html_text
from .junit import junit_bytes, junit_of
from .markdown import markdown_of, markdown_text
from .summary import (ReportError, check_cases, check_lessons, merge,
                      sorted_cases, summarize)
from .words import summary_sentences


# ---------------------------------------------------------------------------
# Writing files

def write_atomic(path, data):
    """Write via a temporary file, fsync and rename, so a report is either
    the old one or the complete new one (we preach it, we do it)."""
    path = Path(path)
    if isinstance(data, str):
        # a file name that is not UTF-8 (os.fsdecode's \udcXX) is shown
        # as that escape: in JSON it reads back as the same name
        data = data.encode("utf-8", "backslashreplace")
    directory = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=directory)
    except OSError as e:
        raise ReportError(f"create temporary file in '{directory}': "
                          f"{e.strerror}") from None
    try:
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        except OSError as e:
            raise ReportError(f"write '{path}': {e.strerror}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    try:
        dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass  # some filesystems refuse fsync on a directory; the file is out


def json_text(cases, meta):
    """results.json's text: sorted keys, cases sorted by id, one case per
    line (json's C encoder: the indenting one is Python, and took longer
    than the rest of the reports together), the summary indented."""
    cases = sorted_cases(check_cases(cases))
    return _json_text(cases, summarize(cases, meta))


def _json_text(cases, summary):
    """json_text() of checked CASES, sorted, and their SUMMARY."""
    summary = json.dumps(summary, sort_keys=True, indent=1,
                         ensure_ascii=False).replace("\n", "\n ")
    lines = [json.dumps(c, sort_keys=True, ensure_ascii=False)
             for c in cases]
    body = ",\n  ".join(lines)
    return (f'{{\n "cases": [\n  {body}\n ],\n "summary": {summary}\n}}\n'
            if lines else f'{{\n "cases": [],\n "summary": {summary}\n}}\n')


def write_json(path, cases, meta):
    write_atomic(path, json_text(cases, meta))


def write_markdown(path, cases, meta, lessons=None):
    write_atomic(path, markdown_text(cases, meta, lessons))


def write_html(path, cases, meta, lessons=None):
    write_atomic(path, html_text(cases, meta, lessons))


def write_junit(path, cases, meta):
    write_atomic(path, junit_bytes(cases, meta))


def write_all(outdir, cases, meta, lessons=None, junit=None):
    """results.json, report.md and report.html in outdir (and JUnit XML at
    the path junit, if given); the summary. The cases are checked and
    summed up once for all of them: at the end of a sweep the pytest
    process makes the reports alone, while the cores the cases used
    wait, and each report checking and summing up 5000 cases on its own
    was half of that time."""
    outdir = Path(outdir)
    try:
        outdir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ReportError(f"mkdir '{outdir}': {e.strerror}") from None
    # checked in the order the reports were written in, one by one
    cases = sorted_cases(check_cases(cases))
    summary = summarize(cases, meta)
    lessons = check_lessons(lessons)
    write_atomic(outdir / "report.md", markdown_of(cases, summary, lessons))
    write_atomic(outdir / "report.html", html_of(cases, summary, lessons))
    if junit is not None:
        write_atomic(junit, junit_of(cases, summary))
    # last: a results.json is there only with the reports of its run, should
    # crashcheck be killed while it writes them (tests/chaos.py)
    write_atomic(outdir / "results.json", _json_text(cases, summary))
    return summary


# ---------------------------------------------------------------------------
# Command line: render (and merge) existing results without the CLI

USAGE = ("usage: python3 -m harness.reports.report [--junit FILE] [--lessons FILE] "
         "OUTDIR RESULTS...")


def main(argv=None):
    """Merge RESULTS (results directories or results.json files) and write
    results.json, report.md and report.html into OUTDIR."""
    args = list(sys.argv[1:] if argv is None else argv)
    junit = lessons_path = None
    try:
        while args and args[0].startswith("--"):
            opt = args.pop(0)
            if opt in ("--junit", "--lessons") and args:
                value = args.pop(0)
                if opt == "--junit":
                    junit = value
                else:
                    lessons_path = value
            elif opt == "--help":
                print(USAGE)
                return 0
            else:
                raise ReportError(f"unknown option or missing value: {opt} "
                                  f"({USAGE})")
        if len(args) < 2:
            raise ReportError("need an output directory and at least one "
                              f"results directory ({USAGE})")
        outdir, inputs = args[0], args[1:]
        cases, meta = merge(inputs)
        lessons = None
        if lessons_path:
            try:
                lessons = json.loads(Path(lessons_path).read_text("utf-8"))
            except OSError as e:
                raise ReportError(f"read '{lessons_path}': {e.strerror}") \
                    from None
            except (json.JSONDecodeError, UnicodeDecodeError) as e:
                raise ReportError(f"parse '{lessons_path}': invalid JSON: {e}")\
                    from None
        summary = write_all(outdir, cases, meta, lessons)
        if junit:
            write_junit(junit, cases, meta)
    except ReportError as e:
        print(f"report: {e}", file=sys.stderr)
        return 2
    print(" ".join(summary_sentences(summary)))
    return 0 if summary["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
