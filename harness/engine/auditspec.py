"""An audit's spec: the Spec a `crashcheck audit` makes on the spot for
a user's program, as the pytest plugin reads it back from the audit's
directory (<out>/.audit/audit.json and its copies of the old and new
contents). Here, below the commands, so that the engine's plugin can load
it; commands/audit.py writes it."""

import json
import os
import shlex
from dataclasses import dataclass
from pathlib import Path

from .. import UsageError
from .spec import Spec
from .cases import TARGET

AUDIT_DIR = ".audit"
SPEC_FILE = "audit.json"
OLD_FILE = "old"
NEW_FILE = "new"
START_DIR = "start"


@dataclass(frozen=True)
class AuditSpec(Spec):
    """A Spec whose command is a user's program. The sweep asks it for
    the target's file name, the contents and the reproduce command; its
    placeholders are only {target} and {new}: any other brace in a user's
    argument (an awk script, a SQL literal) is the program's business."""
    target: str | None = TARGET         # the target's file name in the work
                                        # dir; None: a tree with none named
    inputs: Path | None = None          # the .audit directory: old, new copies
    rerun: tuple = ()                   # reproduce argv, up to before --case
    program: tuple = ()                 # the program and arguments as typed
    size_in_id: bool = False            # one size only: case ids omit it
    start_dir: Path | None = None       # a tree's start (inputs/start)
    script: str | None = None           # a long command's reproduce script
                                        # (commands/audit.py, write_script)

    def _subst(self, argv, target, new):
        return [a.replace("{target}", str(target)).replace("{new}", str(new))
                for a in argv]

    def argv(self, bin, target, new, strategy=None):
        return self._subst(self.command, target, new)

    def check_argv(self, bin, target, new, strategy=None):
        if self.check is None:
            raise ValueError(f"{self.name}: contract is {self.contract}, "
                             "not a checker")
        return self._subst(self.check, target, new)

    def contents(self):
        """(old, new) bytes; old is None when the target starts absent."""
        return _read_inputs(self.inputs, self.old == "absent")

    def reproduce_command(self, case_id):
        if self.script is not None:
            # the long command once, in the script: not in every case's
            # line of every report
            return shell_join(["sh", self.script, case_id])
        return shell_join(list(self.rerun) + ["--case", case_id, "--"]
                          + list(self.program))


def shell_word(word):
    """WORD quoted for a shell, as shlex.quote does; a word that is not
    UTF-8 (a file name's bytes, as os.fsdecode gives them) as bash's
    $'...' with those bytes as backslash-x escapes, so that a reproduce command gives the
    program the very bytes it was given."""
    try:
        word.encode("utf-8")
        return shlex.quote(word)
    except UnicodeEncodeError:
        pass
    out = []
    for b in os.fsencode(word):
        c = chr(b)
        if c in "\\'":
            out.append("\\" + c)
        elif 0x20 <= b < 0x7f:
            out.append(c)
        else:
            out.append(f"\\x{b:02x}")
    return "$'" + "".join(out) + "'"


def shell_join(words):
    return " ".join(shell_word(str(w)) for w in words)


_INPUTS = {}


def _read_inputs(inputs, absent):
    """The copies in .audit/, read once per process: every case of a
    worker needs them, some several times."""
    key = (str(inputs), absent)
    if key not in _INPUTS:
        new = (inputs / NEW_FILE).read_bytes()
        old = None if absent else (inputs / OLD_FILE).read_bytes()
        _INPUTS[key] = (old, new)
    return _INPUTS[key]


def load(path):
    """The AuditSpec described by an audit.json (written by cmd_audit)."""
    path = Path(path)
    try:
        with open(path) as fh:
            d = json.load(fh)
        return AuditSpec(
            path=path, name=d["name"], description=d["description"],
            command=tuple(d["command"]), strategies=(),
            contract=d["contract"],
            check=tuple(d["check"]) if d["check"] else None,
            sizes=(d["size"],), old=d["old"], timeout=float(d["timeout"]),
            target=d["target"], inputs=path.parent, rerun=tuple(d["rerun"]),
            program=tuple(d["program"]), script=d.get("script"),
            start_dir=path.parent / START_DIR if d["contract"] == "tree"
            else None)
    except OSError as e:
        raise UsageError(f"audit: cannot read '{path}': {e.strerror}") from None
    except (ValueError, KeyError, TypeError) as e:
        raise UsageError(f"audit: '{path}' is not an audit description: "
                         f"{e}") from None
