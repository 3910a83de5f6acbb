"""The Python packages are layers, each importing only the ones below it
(docs/design.md, "Layers"): commands, then engine, then reports, then
judging, then the vocabulary at the top of harness/ (ROOT, the call table,
call coordinates). An import upwards is a cycle in the making; this reads
every import of the package, those inside functions too."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# highest first; a module may import its own package and those after it
LAYERS = ("commands", "engine", "reports", "judging", "")


def layer_of(module):
    """The layer of a dotted module name inside harness ("" for the
    modules at the top of harness/)."""
    parts = module.split(".")
    if parts[0] != "harness":
        return None
    if len(parts) > 2 and parts[1] in LAYERS:
        return parts[1]
    if len(parts) == 2 and parts[1] in LAYERS:
        return parts[1]          # "from harness import engine": a package
    return ""


def imports_of(path, root=ROOT):
    """(line, dotted module) of every import of harness's modules in the
    file at PATH (under ROOT), relative ones resolved."""
    package = list(path.relative_to(root).parts[:-1])
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
            else:
                base = []
            mod = ".".join(base + ([node.module] if node.module else []))
            if node.module:
                found.append((node.lineno, mod))
            # "from .. import calls": each name may be a module
            for a in node.names:
                found.append((node.lineno, f"{mod}.{a.name}"))
    return [(n, m) for n, m in found if m.startswith("harness")]


def upward_imports(root=ROOT):
    wrong = []
    for path in sorted((root / "harness").rglob("*.py")):
        rel = path.relative_to(root)
        mine = layer_of(".".join(rel.with_suffix("").parts))
        for line, module in imports_of(path, root):
            theirs = layer_of(module)
            if theirs is None or theirs == mine:
                continue
            if LAYERS.index(theirs) < LAYERS.index(mine):
                wrong.append(f"{rel}:{line}: "
                             f"{mine or 'harness'} imports {module}")
    return wrong


def test_no_package_imports_one_above_it():
    assert upward_imports() == []


def test_the_check_sees_an_upward_import(tmp_path):
    """The reader finds a function-local import from a lower layer up
    (the kind that made the cycles it guards against), and lets the
    same import pass downwards."""
    for package in ("judging", "commands"):
        (tmp_path / "harness" / package).mkdir(parents=True)
    body = "def f():\n    from ..engine import sweep\n    return sweep\n"
    (tmp_path / "harness" / "judging" / "probe.py").write_text(body)
    (tmp_path / "harness" / "commands" / "probe.py").write_text(body)
    assert upward_imports(tmp_path) == [
        "harness/judging/probe.py:2: judging imports harness.engine",
        "harness/judging/probe.py:2: judging imports harness.engine.sweep"]


# Inside the engine, the modules of the sweep (docs/design.md, "The
# engine") are layers too, highest first: each imports only those after
# it, so that no two of them need each other.
SWEEP_MODULES = ("sweep", "judge", "realcrash", "partruns", "caseresult",
                 "checker", "unjudgeable", "baseline", "results", "sampling",
                 "execute", "records", "cases")


def sweep_imports_upwards(root=ROOT, package="engine", modules=SWEEP_MODULES):
    wrong = []
    for i, name in enumerate(modules):
        path = root / "harness" / package / f"{name}.py"
        for line, module in imports_of(path, root):
            parts = module.split(".")
            if parts[:2] != ["harness", package] or len(parts) < 3:
                continue
            if parts[2] in modules[:i + 1] and parts[2] != name:
                wrong.append(f"{path.relative_to(root)}:{line}: "
                             f"{name} imports {module}")
    return wrong


def test_the_sweeps_modules_import_only_those_below():
    assert sweep_imports_upwards() == []


def test_the_check_sees_a_sweep_module_import_one_above_it(tmp_path):
    """A function-local import of the judge in the baseline is one
    upwards; the judge's import of the baseline is not."""
    engine = tmp_path / "harness" / "engine"
    engine.mkdir(parents=True)
    for name in SWEEP_MODULES:
        (engine / f"{name}.py").write_text("")
    (engine / "baseline.py").write_text(
        "def f():\n    from .judge import Judge\n    return Judge\n")
    (engine / "judge.py").write_text("from .baseline import found_of\n")
    assert sweep_imports_upwards(tmp_path) == [
        "harness/engine/baseline.py:2: baseline imports harness.engine.judge",
        "harness/engine/baseline.py:2: "
        "baseline imports harness.engine.judge.Judge"]


# The oracle's modules in judging/ (docs/design.md, "Layers"), highest
# first, in the same way: judge() and its steps, then its parts.
ORACLE_MODULES = ("oracle", "statecause", "explanations", "contracts",
                  "rules", "outcome", "messages")


def test_the_oracles_modules_import_only_those_below():
    assert sweep_imports_upwards(package="judging",
                                 modules=ORACLE_MODULES) == []


def test_the_check_sees_an_oracle_module_import_one_above_it(tmp_path):
    """The data types reaching up for the oracle's words is a cycle in
    the making; the oracle's import of them is not."""
    judging = tmp_path / "harness" / "judging"
    judging.mkdir(parents=True)
    for name in ORACLE_MODULES:
        (judging / f"{name}.py").write_text("")
    (judging / "outcome.py").write_text("from .explanations import fault\n")
    (judging / "oracle.py").write_text("from .outcome import Outcome\n")
    assert sweep_imports_upwards(tmp_path, "judging", ORACLE_MODULES) == [
        "harness/judging/outcome.py:1: outcome imports harness.judging.explanations",
        "harness/judging/outcome.py:1: "
        "outcome imports harness.judging.explanations.fault"]
