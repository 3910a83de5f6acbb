"""The CI regression mode and SARIF: --baseline (known findings pass, new
ones fail, fixed ones are listed), the ignore file (.crashcheck.toml,
[[ignore]] case glob, verdict, mandatory reason), and results.sarif,
checked against what the SARIF 2.1.0 schema requires."""

import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # noqa: E402
from harness import UsageError  # noqa: E402
from harness.reports import regress, sarif  # noqa: E402

CRASHCHECK = ROOT / "scripts" / "crashcheck"
SED_OLD = ROOT / "docs" / "examples" / "settings.conf"
SED_NEW = ROOT / "docs" / "examples" / "settings.conf.new"
SED = ["sed", "-i", "s/^port = 8080$/port = 9090/", "{target}"]


def cc(*args, cwd):
    return subprocess.run([str(CRASHCHECK), *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def case(cid, verdict, passed=None, **extra):
    c = {"id": cid, "verdict": verdict, "workload": "w", "kind": "eio",
         "passed": verdict == "ok" if passed is None else passed,
         "finding": "" if verdict == "ok" else f"found {verdict}",
         "explanation": "", "reproduce": f"crashcheck x --case {cid}"}
    c.update(extra)
    return c


# ---------------------------------------------------------------- SARIF
# What the SARIF 2.1.0 schema (sarif-schema-2.1.0.json, OASIS) requires
# of the objects crashcheck writes: the "required" arrays, the enums and
# the bounds it places on their fields.

LEVELS = {"none", "note", "warning", "error"}
BASELINE_STATES = {"new", "unchanged", "updated", "absent"}
SUPPRESSION_KINDS = {"inSource", "external"}
SUPPRESSION_STATUS = {"accepted", "underReview", "rejected"}


def check_message(m, where):
    assert isinstance(m, dict), where
    # message: anyOf required ["text"] or ["id"]
    assert isinstance(m.get("text"), str) or isinstance(m.get("id"), str), where


def check_sarif(doc):
    # sarifLog: required ["version", "runs"]; version enum ["2.1.0"]
    assert doc["version"] == "2.1.0"
    assert isinstance(doc["runs"], list)
    for run in doc["runs"]:
        # run: required ["tool"]; tool: required ["driver"];
        # toolComponent: required ["name"]
        driver = run["tool"]["driver"]
        assert isinstance(driver["name"], str) and driver["name"]
        rules = driver.get("rules", [])
        for rule in rules:
            # reportingDescriptor: required ["id"]
            assert isinstance(rule["id"], str) and rule["id"]
            for key in ("shortDescription", "fullDescription"):
                if key in rule:
                    # multiformatMessageString: required ["text"]
                    assert isinstance(rule[key]["text"], str)
            if "defaultConfiguration" in rule:
                assert rule["defaultConfiguration"].get(
                    "level", "warning") in LEVELS
        for inv in run.get("invocations", []):
            # invocation: required ["executionSuccessful"]
            assert isinstance(inv["executionSuccessful"], bool)
            for n in inv.get("toolExecutionNotifications", []):
                # notification: required ["message"]; level enum;
                # reportingDescriptorReference: anyOf id, index, guid
                check_message(n["message"], n)
                assert n.get("level", "warning") in LEVELS
                if "descriptor" in n:
                    assert isinstance(n["descriptor"]["id"], str)
        for name, base in run.get("originalUriBaseIds", {}).items():
            if "description" in base:
                check_message(base["description"], name)
        for r in run.get("results", []):
            # result: required ["message"]
            check_message(r["message"], r)
            assert r.get("level", "warning") in LEVELS
            if "ruleIndex" in r:
                # ruleIndex: integer, minimum -1; it points at the rule
                assert isinstance(r["ruleIndex"], int) and r["ruleIndex"] >= -1
                assert rules[r["ruleIndex"]]["id"] == r["ruleId"]
            if "baselineState" in r:
                assert r["baselineState"] in BASELINE_STATES
            for s in r.get("suppressions", []):
                # suppression: required ["kind"]
                assert s["kind"] in SUPPRESSION_KINDS
                assert s.get("status", "accepted") in SUPPRESSION_STATUS
            for fp in r.get("partialFingerprints", {}).values():
                assert isinstance(fp, str)
            for loc in r.get("locations", []):
                phys = loc.get("physicalLocation")
                if phys is not None:
                    # physicalLocation: anyOf required ["address"] or
                    # ["artifactLocation"]
                    art = phys["artifactLocation"]
                    assert isinstance(art["uri"], str) and art["uri"]
                    if "region" in phys:
                        # region.startLine: integer, minimum 1
                        line = phys["region"]["startLine"]
                        assert isinstance(line, int) and line >= 1
                for ll in loc.get("logicalLocations", []):
                    assert isinstance(ll.get("name", ""), str)
                if "message" in loc:
                    check_message(loc["message"], loc)
            # GitHub's upload refuses a log with one result without a
            # physical location (github/codeql-action#2459)
            assert any("physicalLocation" in loc
                       for loc in r.get("locations", [])), r


def test_sarif_of_crafted_results_carries_locations():
    """The verdicts' location object (file, line, function) becomes the
    result's physical and logical location; a finding known from the
    baseline is unchanged, an ignored one suppressed with its reason, a
    buggy variant's expected finding is no result."""
    cases = [
        case("save-fsync#1=EIO", "unreported-error", baseline="new",
             location={"object": "/x/save", "offset": "0x11c3",
                       "file": "src/save.c", "line": 42,
                       "function": "save_config",
                       "text": "save.c:42 (save_config)"}),
        case("save-close#1=EIO", "ignored-error", passed=True,
             ignored="close after a successful fsync",
             location={"object": "/x/save", "offset": "0x1200",
                       "file": None, "line": None, "function": "main",
                       "text": "save+0x1200 (main)"}),
        case("save-powerloss@exit-posix", "not-durable", passed=True,
             baseline="known",
             location={"object": "/abs path/save", "offset": "0x10",
                       "file": "/usr/src/save.c", "line": 7,
                       "function": None, "text": "save.c:7"}),
        case("save-baseline", "harness-error"),
        case("var-fsync#1=EIO", "unreported-error", passed=True,
             expected=[{"verdict": "unreported-error"}]),
        case("save-write#1=EINTR", "ok"),
    ]
    doc = json.loads(json.dumps(sarif.sarif(cases, {"command": "crashcheck "
                                                    "audit -- save"})))
    check_sarif(doc)
    run = doc["runs"][0]
    results = {r["properties"]["case"]: r for r in run["results"]}
    assert sorted(results) == ["save-baseline", "save-close#1=EIO",
                               "save-fsync#1=EIO",
                               "save-powerloss@exit-posix"]
    r = results["save-fsync#1=EIO"]
    assert r["ruleId"] == "unreported-error" and r["level"] == "error"
    assert r["baselineState"] == "new"
    phys = r["locations"][0]["physicalLocation"]
    assert phys == {"artifactLocation": {"uri": "src/save.c",
                                         "uriBaseId": "%SRCROOT%"},
                    "region": {"startLine": 42}}
    assert r["locations"][0]["logicalLocations"] == [
        {"name": "save_config", "kind": "function"}]
    r = results["save-close#1=EIO"]
    assert r["level"] == "warning"
    assert r["suppressions"] == [{"kind": "external", "status": "accepted",
                                  "justification":
                                  "close after a successful fsync"}]
    # no source file: the object, and the function as a logical location
    assert r["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "file:///x/save"}}
    r = results["save-powerloss@exit-posix"]
    assert r["baselineState"] == "unchanged"
    assert r["locations"][0]["physicalLocation"]["artifactLocation"] == {
        "uri": "file:///usr/src/save.c"}
    # no call site, no spec, no audit: the workload's name
    assert results["save-baseline"]["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "w", "uriBaseId": "%SRCROOT%"}}
    assert run["tool"]["driver"]["name"] == "crashcheck"
    assert run["invocations"][0]["commandLine"] == "crashcheck audit -- save"
    assert run["invocations"][0]["executionSuccessful"] is True


def test_sarif_places_a_finding_without_a_call_site_at_its_spec():
    cases = [case("save-baseline", "harness-error", workload="save")]
    summary = {"run": {"specs": ["workloads/specs/other.toml",
                                 "workloads/specs/save.toml"]},
               "interrupted": {"ran": 1, "of": 3}}
    doc = sarif.sarif(cases, summary)
    check_sarif(doc)
    loc = doc["runs"][0]["results"][0]["locations"][0]
    assert loc["physicalLocation"]["artifactLocation"] == {
        "uri": "workloads/specs/save.toml", "uriBaseId": "%SRCROOT%"}
    # an interrupted run did not succeed
    assert doc["runs"][0]["invocations"][0]["executionSuccessful"] is False
    # an audit's: its program
    doc = sarif.sarif(cases, {"run": {"audit": {"program": ["/bin/sed", "-i"]}}})
    loc = doc["runs"][0]["results"][0]["locations"][0]
    assert loc["physicalLocation"]["artifactLocation"] == {"uri": "file:///bin/sed"}


UNSEEN = [{"workload": "w", "path": "target.tmp", "what": "content",
           "at": "fsync#1", "seq": 7},
          {"workload": "w", "path": "junk", "what": "name", "at": "exit",
           "seq": 12}]


def test_sarif_warns_of_each_change_it_did_not_see():
    """A run with changes made by calls crashcheck cannot see is no clean
    pass in SARIF either: one warning of the invocation per change,
    naming the file (an error when --strict fails the run)."""
    cases = [case("w-fsync#1=EIO", "ok")]
    doc = sarif.sarif(cases, {"unseen": UNSEEN})
    check_sarif(doc)
    inv, = doc["runs"][0]["invocations"]
    notes = inv["toolExecutionNotifications"]
    assert [(n["level"], n["descriptor"]["id"], n["properties"]["path"])
            for n in notes] == [("warning", "unseen-change", "target.tmp"),
                                ("warning", "unseen-change", "junk")]
    assert "'target.tmp': content changed by a call crashcheck cannot " \
        "see (first seen at fsync#1)" in notes[0]["message"]["text"]
    assert "not a clean pass" in notes[1]["message"]["text"]
    strict = sarif.sarif(cases, {"unseen": UNSEEN, "run": {"strict": True}})
    check_sarif(strict)
    assert {n["level"] for n in strict["runs"][0]["invocations"][0][
        "toolExecutionNotifications"]} == {"error"}
    clean = sarif.sarif(cases, {"unseen": []})
    assert "toolExecutionNotifications" not in clean["runs"][0][
        "invocations"][0]


def test_the_checker_refuses_what_the_schema_forbids():
    good = sarif.sarif([case("a-fsync#1=EIO", "torn")], {})
    check_sarif(good)
    for breaking in (lambda d: d.pop("version"),
                     lambda d: d["runs"][0]["tool"]["driver"].pop("name"),
                     lambda d: d["runs"][0]["results"][0].pop("message"),
                     lambda d: d["runs"][0]["results"][0].update(level="bad"),
                     lambda d: d["runs"][0]["results"][0].update(ruleIndex=5),
                     lambda d: d["runs"][0]["invocations"][0].update(
                         toolExecutionNotifications=[{"level": "warning"}])):
        doc = copy.deepcopy(good)
        breaking(doc)
        with pytest.raises((AssertionError, KeyError, IndexError)):
            check_sarif(doc)


# ----------------------------------------------------- the files, alone

def write(path, text):
    path.write_text(text)
    return path


@pytest.mark.parametrize("text, problem", [
    ('[[ignore]]\ncase = "x-*"\nverdict = "torn"\n',
     "ignore[1].reason: required"),
    ('[[ignore]]\ncase = "x-*"\nverdict = "torn"\nreason = "  "\n',
     "ignore[1].reason: required"),
    ('[[ignore]]\nverdict = "torn"\nreason = "r"\n',
     "ignore[1].case: required"),
    ('[[ignore]]\ncase = "x"\nreason = "r"\n', "ignore[1].verdict: required"),
    ('[[ignore]]\ncase = "x"\nverdict = "harness-error"\nreason = "r"\n',
     "harness-error cannot be ignored"),
    ('[[ignore]]\ncase = "x"\nverdict = "ok"\nreason = "r"\n',
     "'ok' is not a finding's verdict"),
    ('[[ignore]]\ncase = "x"\nverdict = ["torn", "tron"]\nreason = "r"\n',
     "'tron' is not a finding's verdict"),
    ('[[ignore]]\ncase = "x"\nverdict = "torn"\nreason = "r"\nwhy = 1\n',
     "ignore[1].why: unknown field"),
    ('[ignore]\ncase = "x"\n', "ignore: expected [[ignore]] tables"),
    ('ignores = []\n', "ignores: unknown key"),
    ('[[ignore]\n', "not TOML"),
])
def test_bad_ignore_file_is_one_line(tmp_path, text, problem):
    f = write(tmp_path / ".crashcheck.toml", text)
    with pytest.raises(UsageError) as e:
        regress.load_ignore(f)
    assert problem in str(e.value) and str(f) in str(e.value)
    assert "\n" not in str(e.value)


def test_ignore_file_default_is_optional(tmp_path):
    assert regress.load_ignore(tmp_path / "none.toml", default=True) is None
    with pytest.raises(UsageError, match="--ignore: no such file"):
        regress.load_ignore(tmp_path / "none.toml")


@pytest.mark.parametrize("content, problem", [
    (None, "--baseline: no such file"),
    ("{", "is not JSON"),
    ('{"summary": {}}', "no 'cases' list"),
    ('{"cases": [{"id": "a"}]}', "cases[0] has no id and verdict"),
])
def test_bad_baseline_is_one_line(tmp_path, content, problem):
    f = tmp_path / "results.json"
    if content is not None:
        f.write_text(content)
    with pytest.raises(UsageError, match=problem.replace("[", r"\[")
                       .replace("(", r"\(")):
        regress.load_baseline(f)


def test_policy_marks_known_new_ignored(tmp_path):
    base = write(tmp_path / "results.json", json.dumps({"cases": [
        case("a", "torn"), case("b", "not-durable"),
        case("c", "unreported-error"), case("d", "torn"),
        case("e", "ok"), case("f", "torn", passed=True, baseline="known"),
        case("v", "torn", passed=True, expected=[{"verdict": "torn"}])]}))
    ign = write(tmp_path / "i.toml", '[[ignore]]\ncase = "c*"\n'
                'verdict = "unreported-error"\nreason = "by design"\n'
                '[[ignore]]\ncase = "zz"\nverdict = "torn"\nreason = "r"\n')
    p = regress.policy_from(base, ign)
    now = [p.apply(c) for c in (
        case("a", "torn"),                      # known
        case("b", "torn"),                      # same id, other verdict: new
        case("c", "unreported-error"),          # ignored
        case("d", "ok"),                        # fixed
        case("f", "torn"),                      # known (known before too)
        case("g", "missing"),                   # new
        case("v", "torn", passed=True, expected=[{"verdict": "torn"}]),
        case("h", "harness-error"))]            # never ignored, new
    got = {c["id"]: (c["passed"], c.get("baseline"), c.get("ignored"))
           for c in now}
    assert got == {"a": (True, "known", None), "b": (False, "new", None),
                   "c": (True, None, "by design"), "d": (True, None, None),
                   "f": (True, "known", None), "g": (False, "new", None),
                   "v": (True, None, None), "h": (False, "new", None)}
    facts = p.summary(now)
    assert facts["baseline"] == {"file": str(base), "known": 2, "new": 3,
                                 "fixed": ["b: not-durable", "d: torn"],
                                 "gone": []}
    assert [e["matched"] for e in facts["ignore"]["entries"]] == [1, 0]
    lines = regress.console_lines(facts)
    assert "FIXED d: torn (a finding of the baseline, not found now)" in lines
    assert f"crashcheck: {ign}: ignore[2] (zz: torn) matched no finding of " \
        "this run" in lines
    # a baseline case this run does not have: gone, unless a selection
    few = [c for c in now if c["id"] != "a"]
    assert p.summary(few)["baseline"]["gone"] == ["a: torn"]
    assert p.summary(few, complete=False)["baseline"]["gone"] == []


# ------------------------------------------------------- end to end

def sed_audit(out, *extra, cwd):
    return cc("audit", "--out", out, "--old", SED_OLD, "--new", SED_NEW,
              *extra, "--", *SED, cwd=cwd)


def test_baseline_and_ignore_file_end_to_end(tmp_path):
    """sed's findings under posix are the baseline; the run under both
    models has two more (ext4-ordered after exit, and after the rename):
    new, and the run fails; known ones pass. An ignore file in the
    current directory accepts them with their reasons, and the run
    passes."""
    r = sed_audit(tmp_path / "base", "--model", "posix", cwd=tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    base = tmp_path / "base" / "results.json"

    r = sed_audit(tmp_path / "b", "--baseline", base, cwd=tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    findings = [line.strip() for line in r.stdout.splitlines()
                if line.lstrip().startswith("FINDING ")]
    # two findings, whose lines end with where sed made the call
    assert len(findings) == 2 and findings[0].startswith(
        "FINDING sed-powerloss@exit-ext4-ordered: not-durable: crash state "
        "'after exit, state 3': expected the new content, found first "
        "difference at byte 0") and findings[1].startswith(
        "FINDING sed-powerloss@rename(sed??????)#1-ext4-ordered: torn: "), \
        findings
    assert f"crashcheck: baseline {base}: 2 new, 3 known (reported, not " \
        "failing), 0 fixed" in r.stdout
    doc = json.loads((tmp_path / "b" / "results.json").read_text())
    marks = {c["id"]: c.get("baseline") for c in doc["cases"]
             if c["verdict"] != "ok"}
    assert marks == {"sed-baseline": "known",
                     "sed-powerloss@exit-posix": "known",
                     "sed-powerloss@rename(sed??????)#1-posix": "known",
                     "sed-powerloss@exit-ext4-ordered": "new",
                     "sed-powerloss@rename(sed??????)#1-ext4-ordered": "new"}
    assert doc["summary"]["run"]["baseline"]["new"] == 2
    log = json.loads((tmp_path / "b" / "results.sarif").read_text())
    check_sarif(log)
    states = {r["properties"]["case"]: r["baselineState"]
              for r in log["runs"][0]["results"]}
    assert states["sed-powerloss@exit-ext4-ordered"] == "new"
    assert list(states.values()).count("unchanged") == 3
    # the reports say which findings are known, and fail on the new one
    md = (tmp_path / "b" / "report.md").read_text()
    assert md.count("(known: in the baseline)") == 3, md
    assert "Of the findings, 3 are known from the baseline" in md
    junit = (tmp_path / "b" / "junit.xml").read_text()
    assert junit.count("a known finding (in the baseline)") == 3
    assert junit.count("<failure ") == 2
    html = (tmp_path / "b" / "report.html").read_text()
    assert html.count('class="case c-known"') >= 3

    write(tmp_path / ".crashcheck.toml",
          '# findings we accept\n[[ignore]]\ncase = "sed-powerloss@exit-*"\n'
          'verdict = "not-durable"\n'
          'reason = "sed does not sync; the deploy script runs sync(1)"\n'
          '[[ignore]]\ncase = "sed-powerloss@rename(*)#1-ext4-ordered"\n'
          'verdict = "torn"\nreason = "our ext4 is mounted '
          'nodioread_nolock"\n')
    r = sed_audit(tmp_path / "c", "--baseline", base, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "FINDING" not in r.stdout
    assert "crashcheck: .crashcheck.toml: ignore[1] (sed-powerloss@exit-*: " \
        "not-durable): 2 findings ignored: sed does not sync; the deploy " \
        "script runs sync(1)" in r.stdout
    doc = json.loads((tmp_path / "c" / "results.json").read_text())
    ignored = sorted(c["id"] for c in doc["cases"] if c.get("ignored"))
    assert ignored == ["sed-powerloss@exit-ext4-ordered",
                       "sed-powerloss@exit-posix",
                       "sed-powerloss@rename(sed??????)#1-ext4-ordered"]
    log = json.loads((tmp_path / "c" / "results.sarif").read_text())
    check_sarif(log)
    assert sum("suppressions" in r for r in log["runs"][0]["results"]) == 3
    md = (tmp_path / "c" / "report.md").read_text()
    assert "**PASS**: 32 cases, 5 findings" in md, md[:300]
    assert "are accepted by the ignore file, each with its reason" in md
    assert md.count("(ignored: sed does not sync") == 2, md

    # a bad ignore file stops the run before it starts
    write(tmp_path / ".crashcheck.toml", '[[ignore]]\ncase = "x"\n'
          'verdict = "torn"\n')
    r = sed_audit(tmp_path / "d", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip() == "crashcheck: .crashcheck.toml: ignore[1]." \
        "reason: required: say why this finding is accepted"
    assert not (tmp_path / "d" / "results.json").exists()


def test_fixed_findings_are_listed(tmp_path):
    """A baseline that had a finding on a case that is ok now (crafted:
    the fix is simulated by the baseline's claim)."""
    r = sed_audit(tmp_path / "now", "--model", "posix", cwd=tmp_path)
    doc = json.loads((tmp_path / "now" / "results.json").read_text())
    for c in doc["cases"]:
        if c["id"] == "sed-rename(sed??????)#1=crash":
            c.update(verdict="torn", passed=False)
    (tmp_path / "then.json").write_text(json.dumps(doc))
    r = sed_audit(tmp_path / "o", "--model", "posix", "--baseline",
                  tmp_path / "then.json", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "FIXED sed-rename(sed??????)#1=crash: torn (a finding of the " \
        "baseline, not found now)" in r.stdout
    assert ", 1 fixed" in r.stdout


def test_merge_applies_the_baseline_to_the_whole_run(tmp_path):
    r = sed_audit(tmp_path / "base", "--model", "posix", cwd=tmp_path)
    base = tmp_path / "base" / "results.json"
    for k in (1, 2):
        r = sed_audit(tmp_path / f"s{k}", "--shard", f"{k}/2", "--baseline",
                      base, cwd=tmp_path)
        assert r.returncode in (0, 1), r.stderr
    r = cc("merge", "--out", tmp_path / "m", "--baseline", base,
           tmp_path / "s1", tmp_path / "s2", cwd=tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"crashcheck: baseline {base}: 2 new, 3 known" in r.stdout
    check_sarif(json.loads((tmp_path / "m" / "results.sarif").read_text()))
    shutil.rmtree(tmp_path / "m")


def test_sarif_of_a_real_audit_points_at_the_source_line(tmp_path):
    """saver (tests/progs/saver.c) built with -g, its close ignored: the
    SARIF result of the finding names saver.c and the line of the close,
    relative to the directory the audit ran in, as code scanning wants."""
    src = tmp_path / "saver.c"
    shutil.copy(ROOT / "tests" / "progs" / "saver.c", src)
    built = subprocess.run(["cc", "-g", "-O0", "-o", "saver", "saver.c"],
                           cwd=tmp_path, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    r = cc("audit", "--out", "out", "--faults", "eio", "--model", "posix",
           "--", "./saver", "close-ignored", "{target}", "{new}", cwd=tmp_path)
    # an ignored close after a successful fsync is a warning: reported,
    # passing; --fail-on warning keeps the strict reading
    assert r.returncode == 0, r.stdout + r.stderr
    assert "WARNING ignored-error: check what close returns" in r.stdout
    log = json.loads((tmp_path / "out" / "results.sarif").read_text())
    check_sarif(log)
    results = log["runs"][0]["results"]
    assert results
    assert {x["level"] for x in results} == {"warning"}
    assert {x["properties"]["property"] for x in results} == {"error/ignored"}
    r = cc("audit", "--out", "out2", "--faults", "eio", "--model", "posix",
           "--fail-on", "warning", "--", "./saver", "close-ignored",
           "{target}", "{new}", cwd=tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    if not any(c.get("location") for c in doc["cases"]):
        pytest.skip("this fault library records no call site (`at`) for "
                    "the location of a finding")
    located = [r for r in results if r.get("locations") and "physicalLocation"
               in r["locations"][0] and "region" in
               r["locations"][0]["physicalLocation"]]
    assert located, results
    src_lines = src.read_text().splitlines()
    for r in located:
        phys = r["locations"][0]["physicalLocation"]
        assert phys["artifactLocation"] == {"uri": "saver.c",
                                            "uriBaseId": "%SRCROOT%"}
        line = phys["region"]["startLine"]
        assert "close" in src_lines[line - 1], (line, src_lines[line - 1])
