"""crashcheck --version, `crashcheck help TOPIC`, and the man page made
from the same parser: one source for each, so that none can drift."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # noqa: E402
from harness import calls  # noqa: E402
from harness.commands import cli, manpage  # noqa: E402
from harness.reports import topics  # noqa: E402
from harness.judging import oracle  # noqa: E402

CRASHCHECK = ROOT / "scripts" / "crashcheck"


def cc(*args):
    return subprocess.run([str(CRASHCHECK), *args], cwd="/",
                          capture_output=True, text=True, timeout=60)


def test_version_comes_from_the_version_file():
    r = cc("--version")
    version = (ROOT / "VERSION").read_text().strip()
    assert re.fullmatch(r"\d+\.\d+\.\d+", version), version
    assert (r.returncode, r.stdout, r.stderr) == \
        (0, f"crashcheck {version}\n", "")


def test_help_verdicts_names_every_verdict_the_oracle_gives():
    r = cc("help", "verdicts")
    assert r.returncode == 0, r.stderr
    for verdict in oracle.VERDICTS:
        assert re.search(rf"^  {re.escape(verdict)} +\S", r.stdout, re.M), \
            verdict
    assert "NOT CAUGHT" in r.stdout and "not run" in r.stdout
    # the table has a meaning for each (a new verdict needs one)
    assert set(oracle.VERDICTS) <= set(topics.MEANINGS)


def test_each_verdicts_meaning_stands_alone():
    """The help lists the verdicts in the oracle's order, not the
    contract's table's: a meaning that leans on the row above it ("the
    same, but") would describe another verdict there."""
    for verdict, text in topics.MEANINGS.items():
        assert not re.match(r"(the )?same\b", text, re.I), (verdict, text)


def test_help_plans_lists_the_call_table():
    r = cc("help", "plans")
    assert r.returncode == 0, r.stderr
    grammar = ("RULE   := CALL [ '(' GLOB ')' ] [ '@' THREAD ] '#' N "
               "[ '+' [ '+' ] ] '=' ACTION")
    # help wraps the rule at its width: compare with the spaces folded
    assert " ".join(grammar.split()) in " ".join(r.stdout.split())
    # the reference's grammar is the same (issue 30: help lacked ++)
    reference = (ROOT / "docs" / "reference.md").read_text()
    assert grammar in reference
    # and so is the man page's PLANS section
    page = manpage.page().replace("\\-", "-").replace("\\e", "\\")
    plans = page[page.index(".SH PLANS"):]
    plans = plans[:plans.index("\n.SH ", 1)]
    assert "++" in plans and " ".join(grammar.split(":= ")[1].split()) \
        in " ".join(plans.split()), plans[:800]
    assert re.search(r"^  \+\+ +with a glob or a thread: fire on that "
                     r"call, then on every later", r.stdout, re.M), r.stdout
    for name in calls.table():
        assert re.search(rf"^  {re.escape(name)} +\S", r.stdout, re.M), name
    # every example it gives is a plan planck accepts
    from harness.engine import plan
    m = re.search(r"^Examples: (.*)((?:\n {10}.*)*)$", r.stdout, re.M)
    words = (m.group(1) + m.group(2)).replace("'", "").split()
    assert len(words) >= 6 and "write(target.tmp)#3++=ENOSPC" in words
    for w in words:
        assert plan.parse(w)["rules"], w


def test_help_verdicts_says_what_a_retried_fsync_is_as_the_contract_does():
    """A program that retries a failed fsync and exits 0 is
    unreported-error when it said nothing, not-durable when it printed
    the error (docs/crash-model.md); help once called both not-durable."""
    text = " ".join(cc("help", "verdicts").stdout.split())
    assert ("unreported-error when the program said nothing of the failure, "
            "not-durable when it printed the error and exited 0 all the "
            "same") in text
    contract = " ".join((ROOT / "docs" / "crash-model.md").read_text().split())
    assert ("`unreported-error` when it said nothing of the failure, "
            "`not-durable` when it printed the error") in contract


def test_help_into_a_closed_pipe_is_quiet():
    """`crashcheck help plans | head -1`: no BrokenPipeError traceback."""
    r = subprocess.run(f"'{CRASHCHECK}' help plans | head -1", shell=True,
                       capture_output=True, text=True, timeout=60)
    assert r.stdout == "A plan names the calls to fail and how:\n"
    assert r.stderr == "", r.stderr


def test_help_models_lists_every_model_and_its_policies():
    from harness.judging import models
    r = cc("help", "models")
    assert r.returncode == 0, r.stderr
    for name in models.MODELS:
        assert re.search(rf"^  {re.escape(name)} +\S", r.stdout, re.M), name
        assert re.search(rf"^  {re.escape(name)}:\n    metadata=", r.stdout,
                         re.M), name
    assert f"default {','.join(models.DEFAULT)}" in " ".join(r.stdout.split())
    assert max(len(line) for line in r.stdout.splitlines()) <= 78


def test_help_without_topic_and_bad_topic():
    r = cc("help")
    assert r.returncode == 0
    for name in list(topics.TOPICS) + list(cli.SUBCOMMANDS):
        assert re.search(rf"^  {name} ", r.stdout, re.M), name
    r = cc("help", "audit")
    assert r.returncode == 0 and r.stdout.startswith("usage: crashcheck audit")
    r = cc("help", "verdict")
    assert r.returncode == 2
    assert r.stderr.startswith("crashcheck: help: no topic or command "
                               "'verdict'")
    assert r.stderr.count("\n") == 1


def test_man_page_has_every_option_of_every_command():
    page = manpage.page()
    text = page.replace("\\-", "-").replace("\\e", "\\")
    parser = cli.build_parser()
    for name in cli.SUBCOMMANDS:
        sub = cli.subparser(parser, name)
        assert f'.SS "{name}"' in text, name
        for action in sub._actions:
            for option in action.option_strings:
                assert option in text, (name, option)
    for topic in topics.TOPICS:
        assert f".SH {topic.upper()}" in page
    # the built page is the one make keeps in man/
    built = ROOT / "man" / "crashcheck.1"
    assert built.read_text() == page, "man/crashcheck.1 is stale: run make"
