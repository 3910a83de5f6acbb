"""Tests of harness/engine/spec.py: good specs load, every bad field is named."""

import dataclasses
import json
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # noqa: E402
from harness.engine import spec as S  # noqa: E402

GOOD = {
    "name": "replace-nofsync",
    "description": "replace without fsync before rename",
    "command": ["{bin}/replace-nofsync", "--strategy={strategy}", "{target}", "{new}"],
    "strategies": ["stdio", "direct", "sync", "mmap"],
    "contract": "atomic",
    "sizes": [0, 1, 4096, 65537],
    "old": "payload",
    "timeout": 5,
    "teaches": "rename without fsync of the file first: the name can outlive the data",
    "expect": [
        {"verdict": "not-durable", "kind": "powerloss", "model": "posix",
         "strategy": "stdio", "size": 4096},
        {"verdict": "torn", "call": "rename#1"},
    ],
}


def toml(d):
    """A small TOML writer for the test specs: JSON's scalars and arrays of
    them are valid TOML; `expect` becomes [[expect]] tables."""
    tables = d.get("expect")
    if not (tables and all(isinstance(e, dict) for e in tables)):
        tables = []
    lines = [f"{k} = {json.dumps(v)}" for k, v in d.items() if k != "expect" or not tables]
    for entry in tables:
        lines.append("[[expect]]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in entry.items()]
    return "\n".join(lines) + "\n"


def write(tmp_path, d, name="w.toml"):
    p = tmp_path / name
    p.write_text(toml(d) if isinstance(d, dict) else d)
    return p


def changed(**kw):
    d = json.loads(json.dumps(GOOD))
    for k, v in kw.items():
        if v is DROP:
            d.pop(k, None)
        else:
            d[k] = v
    return d


DROP = object()


# ------------------------------------------------------------------ good

def test_good_spec_loads(tmp_path):
    p = write(tmp_path, GOOD)
    s = S.load(p)
    assert s.path == p
    assert s.name == "replace-nofsync"
    assert s.command == tuple(GOOD["command"])
    assert s.strategies == ("stdio", "direct", "sync", "mmap")
    assert (s.contract, s.check, s.old, s.timeout) == ("atomic", None, "payload", 5.0)
    assert s.sizes == (0, 1, 4096, 65537)
    assert s.buggy and s.teaches.startswith("rename without fsync")
    assert s.expect[0] == S.Expect(verdict="not-durable", kind="powerloss", model="posix",
                                   strategy="stdio", size=4096)
    assert s.expect[1] == S.Expect(verdict="torn", call="rename#1")
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.name = "other"
    assert s.sector == 4096


def test_a_spec_may_name_its_sector(tmp_path):
    assert S.load(write(tmp_path, changed(sector=512))).sector == 512


def test_defaults_and_a_correct_workload(tmp_path):
    s = S.load(write(tmp_path, {
        "name": "overwrite", "description": "in place", "contract": "in-place",
        "command": ["{bin}/overwrite", "{target}", "{new}"], "sizes": [4096]}))
    assert (s.old, s.timeout, s.strategies, s.expect, s.buggy) == \
        ("payload", 10.0, (), (), False)
    assert s.teaches is None and s.fixed_by is None


def test_checker_contract_and_absent_old(tmp_path):
    s = S.load(write(tmp_path, {
        "name": "db", "description": "sqlite insert", "old": "absent", "timeout": 2.5,
        "command": ["sqlite3", "{target}", "insert into t values (1)"],
        "check": ["{bin}/check-db", "{target}"], "sizes": [0]}))
    assert (s.contract, s.check, s.old, s.timeout) == \
        ("check", ("{bin}/check-db", "{target}"), "absent", 2.5)
    assert s.check_argv("/b", "t", "n") == ["/b/check-db", "t"]


def test_argv_substitutes_placeholders(tmp_path):
    s = S.load(write(tmp_path, GOOD))
    assert s.argv(bin="/r/workloads/bin", target="target", new="../in/new",
                  strategy="mmap") == \
        ["/r/workloads/bin/replace-nofsync", "--strategy=mmap", "target", "../in/new"]
    with pytest.raises(ValueError, match="strategy 'bogus'"):
        s.argv("/b", "t", "n", "bogus")
    with pytest.raises(ValueError):
        s.argv("/b", "t", "n")                 # strategies need one
    with pytest.raises(ValueError):
        s.check_argv("/b", "t", "n", "mmap")   # atomic, no checker


def test_argv_without_strategies(tmp_path):
    s = S.load(write(tmp_path, changed(strategies=DROP, expect=DROP, teaches=DROP,
                                       command=["{bin}/x", "{target}", "{new}"])))
    assert s.argv("/b", "t", "n") == ["/b/x", "t", "n"]
    with pytest.raises(ValueError):
        s.argv("/b", "t", "n", "stdio")


def test_expect_applies():
    e = S.Expect(verdict="not-durable", kind="powerloss", strategy="stdio")
    assert e.applies(kind="powerloss", strategy="stdio", size=4096, model="posix",
                     call="rename#1")
    assert not e.applies(kind="powerloss", strategy="mmap", size=4096)
    assert not e.applies(kind="eio", strategy="stdio")
    assert S.Expect(verdict="torn").applies(kind="crash")
    assert e.describe() == "not-durable (kind=powerloss, strategy=stdio)"


def test_expect_model_list(tmp_path):
    """An expectation's model names one model, a comma list (a case of
    any of them) or all (every case, as if none were given)."""
    def loaded(model):
        return S.load(write(tmp_path, changed(expect=[
            {"verdict": "not-durable", "kind": "powerloss",
             "model": model}]))).expect[0]
    one = loaded("xfs")
    assert one.model == "xfs" and one.applies(kind="powerloss", model="xfs")
    assert not one.applies(kind="powerloss", model="posix")
    pair = loaded("btrfs, posix")
    assert pair.model == "posix,btrfs"
    assert pair.applies(kind="powerloss", model="btrfs")
    assert pair.applies(kind="powerloss", model="posix")
    assert not pair.applies(kind="powerloss", model="ext4-ordered")
    assert pair.describe() == "not-durable (kind=powerloss, model=posix,btrfs)"
    every = loaded("all")
    assert every.model is None
    assert every.applies(kind="powerloss", model="ext4-journal")


def test_expect_call_by_name_and_backend():
    """A call given by name alone applies to any call of that name (the
    syscall backend numbers a program's closes with the loader's), and a
    backend restricts an entry to the cases run under it."""
    e = S.Expect(verdict="unreported-error", kind="eio", call="close",
                 backend="syscall")
    assert e.applies(kind="eio", call="close#4", backend="syscall")
    assert e.applies(kind="eio", call="close#4+", backend="syscall")
    assert not e.applies(kind="eio", call="close#4", backend="preload")
    assert not e.applies(kind="eio", call="closefrom#1", backend="syscall")
    assert not e.applies(kind="eio", call=None, backend="syscall")
    exact = S.Expect(verdict="torn", call="fsync#1")
    assert exact.applies(call="fsync#1", backend="syscall")
    assert not exact.applies(call="fsync#11")
    assert e.describe() == ("unreported-error (kind=eio, call=close, "
                            "backend=syscall)")


# ------------------------------------------------------------------- bad

BAD = [
    # (id, spec or raw text, field, words of the problem)
    ("unknown-field", changed(contrat="atomic"), "contrat", "unknown field"),
    ("sector-odd", changed(sector=100), "sector", "not one of 512"),
    ("sector-bool", changed(sector=True), "sector", "not one of 512"),
    ("sector-string", changed(sector="512"), "sector", "not one of 512"),
    ("name-missing", changed(name=DROP), "name", "missing"),
    ("name-upper", changed(name="Replace"), "name", "not a name"),
    ("name-dash-first", changed(name="-x"), "name", "not a name"),
    ("name-int", changed(name=3), "name", "expected a string"),
    ("name-empty", changed(name=""), "name", "empty"),
    ("description-missing", changed(description=DROP), "description", "missing"),
    ("description-empty", changed(description="  "), "description", "empty"),
    ("description-two-lines", changed(description="a\nb"), "description", "one line"),
    ("description-list", changed(description=["a"]), "description", "expected a string"),
    ("command-missing", changed(command=DROP), "command", "missing"),
    ("command-empty", changed(command=[]), "command", "empty"),
    ("command-string", changed(command="x {target}"), "command", "list of strings"),
    ("command-int", changed(command=["x", 1]), "command", "element 2"),
    ("command-no-target", changed(command=["x", "{new}", "{strategy}"]), "command",
     "{target}"),
    ("command-unknown-placeholder",
     changed(command=["x", "{target}", "{tmp}", "{strategy}"]), "command",
     "unknown placeholder {tmp}"),
    ("command-unbalanced", changed(command=["x", "{target", "{strategy}"]), "command",
     "unbalanced"),
    ("command-no-strategy", changed(command=["x", "{target}"]), "command",
     "never passes {strategy}"),
    ("command-strategy-without-strategies", changed(strategies=DROP, expect=[
        {"verdict": "torn"}]), "command", "no strategies"),
    ("command-empty-program", changed(command=["", "{target}", "{strategy}"]),
     "command", "first element"),
    ("strategies-empty", changed(strategies=[]), "strategies", "empty"),
    ("strategies-dup", changed(strategies=["stdio", "stdio"]), "strategies", "twice"),
    ("strategies-bad-name", changed(strategies=["Std IO"]), "strategies", "not a name"),
    ("strategies-string", changed(strategies="stdio"), "strategies", "list of strings"),
    ("contract-typo", changed(contract="atomik"), "contract", "not one of atomic, in-place"),
    ("contract-and-check", changed(check=["c", "{target}"]), "contract", "exactly one"),
    ("no-contract", changed(contract=DROP), "contract", "exactly one"),
    ("check-empty", changed(contract=DROP, check=[]), "check", "empty"),
    ("check-placeholder", changed(contract=DROP, check=["c", "{old}"]), "check",
     "unknown placeholder {old}"),
    ("sizes-missing", changed(sizes=DROP), "sizes", "missing"),
    ("sizes-empty", changed(sizes=[]), "sizes", "empty"),
    ("sizes-not-list", changed(sizes=4096), "sizes", "list of integers"),
    ("sizes-dup", changed(sizes=[1, 4096, 1]), "sizes", "1 is given twice"),
    ("sizes-negative", changed(sizes=[-1]), "sizes", "out of range"),
    ("sizes-too-big", changed(sizes=[64 * 1024 * 1024 + 1]), "sizes", "out of range"),
    ("sizes-string", changed(sizes=["4096"]), "sizes", "expected an integer"),
    ("sizes-bool", changed(sizes=[True]), "sizes", "expected an integer"),
    ("sizes-float", changed(sizes=[1.5]), "sizes", "expected an integer"),
    ("old-bad", changed(old="present"), "old", "not one of payload, absent"),
    ("timeout-zero", changed(timeout=0), "timeout", "not in (0, 600]"),
    ("timeout-negative", changed(timeout=-1), "timeout", "not in"),
    ("timeout-too-long", changed(timeout=601), "timeout", "not in"),
    ("timeout-string", changed(timeout="10"), "timeout", "number of seconds"),
    ("timeout-bool", changed(timeout=True), "timeout", "number of seconds"),
    ("timeout-nan", "timeout = nan\n" + toml(changed(timeout=DROP)), "timeout", "not in"),
    ("teaches-missing", changed(teaches=DROP), "teaches", "buggy variant"),
    ("teaches-empty", changed(teaches=""), "teaches", "empty"),
    ("teaches-without-expect", changed(expect=DROP), "teaches", "only for buggy"),
    ("fixed-by-self", changed(fixed_by="replace-nofsync"), "fixed_by", "itself"),
    ("fixed-by-bad-name", changed(fixed_by="Replace.c"), "fixed_by", "not a name"),
    ("expect-not-tables", changed(expect=["torn"]), "expect", "[[expect]] tables"),
    ("expect-empty", changed(expect=[]), "expect", "must not be empty"),
    ("expect-verdict-missing", changed(expect=[{"kind": "eio"}]), "expect[1].verdict",
     "missing"),
    ("expect-verdict-bad", changed(expect=[{"verdict": "torn"}, {"verdict": "broken"}]),
     "expect[2].verdict", "not one of"),
    ("expect-verdict-ok", changed(expect=[{"verdict": "ok"}]), "expect[1].verdict",
     "not one of"),
    ("expect-verdict-harness-error", changed(expect=[{"verdict": "harness-error"}]),
     "expect[1].verdict", "not one of"),
    ("expect-kind", changed(expect=[{"verdict": "torn", "kind": "eperm"}]),
     "expect[1].kind", "'eperm' is not one of"),
    ("expect-model", changed(expect=[{"verdict": "torn", "model": "zfs"}]),
     "expect[1].model", "unknown model 'zfs' (models: posix, ext4-ordered"),
    ("expect-model-list", changed(expect=[{"verdict": "torn",
                                           "model": "xfs,ext3"}]),
     "expect[1].model", "unknown model 'ext3'"),
    ("expect-model-type", changed(expect=[{"verdict": "torn", "model": 4}]),
     "expect[1].model", "expected a string"),
    ("expect-strategy", changed(expect=[{"verdict": "torn", "strategy": "aio"}]),
     "expect[1].strategy", "not one of stdio"),
    ("expect-strategy-none", changed(
        strategies=DROP, command=["x", "{target}"],
        expect=[{"verdict": "torn", "strategy": "stdio"}]),
     "expect[1].strategy", "no strategies"),
    ("expect-size", changed(expect=[{"verdict": "torn", "size": 4095}]),
     "expect[1].size", "not one of the spec's sizes (0, 1, 4096, 65537)"),
    ("expect-call", changed(expect=[{"verdict": "torn", "call": "fsync#"}]),
     "expect[1].call", "call coordinate"),
    ("expect-call-upper", changed(expect=[{"verdict": "torn", "call": "Fsync"}]),
     "expect[1].call", "or a call's name"),
    ("expect-backend", changed(expect=[{"verdict": "torn", "backend": "ptrace"}]),
     "expect[1].backend", "preload, syscall"),
    ("expect-call-zero", changed(expect=[{"verdict": "torn", "call": "fsync#0"}]),
     "expect[1].call", "call coordinate"),
    ("expect-unknown", changed(expect=[{"verdict": "torn", "verdit": "x"}]),
     "expect[1].verdit", "unknown field"),
]


@pytest.mark.parametrize("bad, field, problem", [b[1:] for b in BAD],
                         ids=[b[0] for b in BAD])
def test_bad_field_is_named(tmp_path, bad, field, problem):
    p = write(tmp_path, bad)
    with pytest.raises(S.SpecError) as e:
        S.load(p)
    err = e.value
    assert err.path == p
    assert err.field == field
    assert problem in err.problem
    assert str(err) == f"{p}: {field}: {err.problem}"
    assert "\n" not in str(err)


def test_toml_syntax_error_names_file_and_line(tmp_path):
    p = write(tmp_path, 'name = "x"\ndescription = \ncommand = []\n')
    with pytest.raises(S.SpecError) as e:
        S.load(p)
    assert e.value.field == "line 2"
    assert str(e.value).startswith(f"{p}: line 2: bad TOML: ")
    assert "(column " in str(e.value) and "\n" not in str(e.value)


def test_toml_error_at_end_of_file(tmp_path):
    p = write(tmp_path, 'name = "x')
    with pytest.raises(S.SpecError) as e:
        S.load(p)
    assert str(e.value).startswith(f"{p}: ")
    assert "bad TOML" in str(e.value) and "\n" not in str(e.value)


def test_unreadable_and_binary_files(tmp_path):
    with pytest.raises(S.SpecError, match="cannot read: No such file or directory"):
        S.load(tmp_path / "none.toml")
    p = tmp_path / "bin.toml"
    p.write_bytes(b'name = "\xff"\n')
    with pytest.raises(S.SpecError) as e:
        S.load(p)
    assert e.value.path == p and "UTF-8" in e.value.problem


# -------------------------------------------------------------- load_all

def fixed(name="replace"):
    return {"name": name, "description": "d", "contract": "atomic", "sizes": [1],
            "command": ["{bin}/x", "{target}", "{new}"]}


def test_load_all_sorted_with_fixed_by(tmp_path):
    write(tmp_path, changed(fixed_by="replace"), "b-variant.toml")
    write(tmp_path, fixed(), "a-replace.toml")
    (tmp_path / "notes.txt").write_text("not a spec")
    specs = S.load_all(tmp_path)
    assert [s.name for s in specs] == ["replace", "replace-nofsync"]
    assert specs[1].fixed_by == "replace"


def test_load_all_rejects_duplicate_names(tmp_path):
    write(tmp_path, fixed(), "a.toml")
    write(tmp_path, fixed(), "b.toml")
    with pytest.raises(S.SpecError) as e:
        S.load_all(tmp_path)
    assert (e.value.path, e.value.field) == (tmp_path / "b.toml", "name")
    assert "already the name of a.toml" in e.value.problem


def test_load_all_checks_fixed_by(tmp_path):
    write(tmp_path, changed(fixed_by="replace"), "v.toml")
    with pytest.raises(S.SpecError) as e:
        S.load_all(tmp_path)
    assert (e.value.field, e.value.problem) == \
        ("fixed_by", f"no spec named 'replace' in {tmp_path}")
    other = changed(name="replace", fixed_by="replace-nofsync")
    write(tmp_path, other, "w.toml")
    with pytest.raises(S.SpecError, match="itself a buggy variant"):
        S.load_all(tmp_path)


def test_load_all_reports_the_bad_file(tmp_path):
    write(tmp_path, fixed(), "a.toml")
    write(tmp_path, changed(sizes=[]), "b.toml")
    with pytest.raises(S.SpecError) as e:
        S.load_all(tmp_path)
    assert (e.value.path, e.value.field) == (tmp_path / "b.toml", "sizes")


def test_load_all_empty_or_missing_directory(tmp_path):
    with pytest.raises(S.SpecError, match="holds no \\*.toml specs"):
        S.load_all(tmp_path)
    with pytest.raises(S.SpecError, match="not a directory"):
        S.load_all(tmp_path / "nope")


def test_repository_specs_load():
    specs_dir = pathlib.Path(__file__).resolve().parents[1] / "workloads" / "specs"
    if not any(specs_dir.glob("*.toml")):
        pytest.skip("no workload specs in this tree yet")
    specs = S.load_all(specs_dir)
    assert all(s.contract in ("atomic", "in-place", "check") for s in specs)
