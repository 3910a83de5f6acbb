"""crashcheck(1), generated from the command line's own parser.

`python3 -m harness.commands.manpage` prints the page in roff (man(7)):
the synopsis and every option come from cli.build_parser(), each command's
description from its run function's docstring (what `crashcheck COMMAND
--help` prints), the VERDICTS and PLANS sections from the `help` topics.
The page is built by `make` (man/crashcheck.1) and installed by `make
install`; nothing in it is written twice, so it cannot drift from --help.
"""

import argparse
import inspect
import re
import sys

from .. import VERSION
from . import cli
from ..reports import topics

SUMMARY = ("crash-consistency and error-handling test harness for programs "
           "that write files")


def esc(text):
    """Text for roff: backslashes escaped; a line may not start with a
    control character."""
    text = text.replace("\\", "\\e")
    return "\n".join("\\&" + line if line[:1] in (".", "'") else line
                     for line in text.split("\n"))


def opt(text):
    """An option or command word: its hyphens are minus signs, so that
    searching and copying work."""
    return esc(text).replace("-", "\\-")


def paragraphs(doc):
    """A docstring's paragraphs: (indented?, text). An indented paragraph
    is an example, kept as it is written."""
    out = []
    for block in re.split(r"\n\s*\n", inspect.cleandoc(doc)):
        lines = block.split("\n")
        if all(line.startswith("    ") for line in lines):
            out.append((True, "\n".join(line[4:] for line in lines)))
        else:
            out.append((False, " ".join(line.strip() for line in lines)))
    return out


def render_doc(doc):
    lines = []
    for example, text in paragraphs(doc):
        if example:
            lines += [".PP", ".RS 4", ".nf", esc(text), ".fi", ".RE"]
        else:
            lines += [".PP", esc(text)]
    return lines


def render_preformatted(text):
    """A help topic: its paragraphs filled, its tables and grammar kept."""
    lines = []
    for block in re.split(r"\n\s*\n", text.strip()):
        if block.startswith(" ") or "\n " in block:
            lines += [".PP", ".nf", esc(block), ".fi"]
        else:
            lines += [".PP", esc(" ".join(block.split()))]
    return lines


def option_lines(parser):
    lines = []
    for group in parser._action_groups:
        actions = [a for a in group._group_actions
                   if a.help is not argparse.SUPPRESS
                   and not isinstance(a, argparse._SubParsersAction)]
        if not actions:
            continue
        if group.title not in ("options", "positional arguments"):
            lines += [".PP", f".I {esc(group.title)}"]
        for a in actions:
            if a.option_strings:
                metavar = ""
                if a.nargs != 0:
                    mv = a.metavar or (
                        "{" + ",".join(a.choices) + "}" if a.choices
                        else a.dest.upper())
                    metavar = f" \\fI{esc(mv)}\\fR"
                names = ", ".join(f"\\fB{opt(o)}\\fR" for o in a.option_strings)
                head = names + metavar
            else:
                head = f"\\fI{esc(a.metavar or a.dest)}\\fR"
            text = (a.help or "").replace("%(default)s", str(a.default))
            lines += [".TP", head, esc(" ".join(text.split()))]
    return lines


def usage(parser):
    text = parser.format_usage().strip()
    text = text.removeprefix("usage: ")
    return " ".join(text.split())


def synopsis(text):
    """A usage line, filled, its continuation lines indented: the command
    words bold."""
    words = text.split(" ")
    head = " ".join(words[:2])
    rest = " ".join(words[2:])
    return [".HP 4", f"\\fB{opt(head)}\\fR {esc(rest)}"]


def page():
    parser = cli.build_parser()
    subs = {}
    for action in parser._subparsers._group_actions:
        subs.update(action.choices)
    out = [
        f'.TH CRASHCHECK 1 "" "crashcheck {esc(VERSION)}" "User Commands"',
        ".SH NAME",
        f"crashcheck \\- {esc(SUMMARY)}",
        ".SH SYNOPSIS",
    ]
    for name in cli.SUBCOMMANDS:
        out += synopsis(usage(subs[name]))
    out += [".PP", "\\fBcrashcheck \\-\\-version\\fR", ".SH DESCRIPTION"]
    out += render_doc("""
        crashcheck runs an unmodified program under injected faults (a
        write interrupted or cut short, a full disk, an I/O error from
        fsync, the process killed at any call) and under simulated power
        loss, and judges after every run whether the old or the new data
        is intact and whether every error was reported. Faults are
        injected by an LD_PRELOAD library in front of libfiu's POSIX
        preload; power loss is simulated from the recorded calls under
        crash models of posix, ext4 (ordered, writeback, journal), XFS and
        Btrfs (crashcheck help models).

        A program is audited with crashcheck audit; workload specs (TOML)
        are swept with crashcheck run; one program is run by hand under a
        plan with crashcheck inject, and its calls listed with crashcheck
        trace. Every bad input is one line on stderr and exit status 2.
        """)
    out.append(".SH COMMANDS")
    for name, (_, run) in cli.SUBCOMMANDS.items():
        sub = subs[name]
        out += [f'.SS "{opt(name)}"'] + synopsis(usage(sub))
        out += render_doc(run.__doc__ or "")
        out += option_lines(sub)
    for name, (_, text) in topics.TOPICS.items():
        out.append(f".SH {name.upper()}")
        out += render_preformatted(text(width=72))
    out += [
        ".SH ENVIRONMENT",
        ".TP", "\\fBCRASHCHECK_EXPECT\\fR",
        esc("Set for a --check command: new when the program had exited 0, "
            "else old-or-new."),
        ".TP", "\\fBTMPDIR\\fR",
        esc("Where scratch directories go when /dev/shm is not writable."),
        ".SH FILES",
        ".TP", "\\fIresults/\\fR",
        esc("Reports: results.json, report.md, report.html, junit.xml and "
            "cases/ID/ for findings; results/audit-PROGRAM/ for an audit. "
            "In the tree of a checkout; in the current directory once "
            "installed."),
        ".SH SEE ALSO",
        esc("The guide, the reference, the crash model and the design, in "
            "docs/ of the source tree (installed in share/doc/crashcheck): "
            "guide.md, reference.md, crash-model.md, design.md."),
    ]
    return "\n".join(out) + "\n"


def main():
    sys.stdout.write(page())
    return 0


if __name__ == "__main__":
    sys.exit(main())
