"""Tests of auditing applications (issue 22): a directory tree as the
starting state (`audit --old-dir`, `--setup`; spec fields old_dir and
setup), the tree contract (only a checker judges, in the state's
directory, told CRASHCHECK_EXPECT), the checker run once per distinct
state, and driver scripts whose every process is traced.

The program under test is tests/progs/minikv.c, a key-value store kept
in a directory, with its two defects (--no-fsync, --no-dir-fsync) and its
own checker, so each verdict here is the one crash-model.md gives.
"""

import json
import os
import re
import subprocess
import textwrap
from pathlib import Path

import pytest

from harness.engine import cases as casesmod, spec as specmod
from harness.judging import rules

ROOT = Path(__file__).resolve().parents[1]
CRASHCHECK = ROOT / "scripts" / "crashcheck"
PROGS = ROOT / "tests" / "progs"


@pytest.fixture(scope="session")
def minikv(tmp_path_factory):
    """tests/progs/minikv.c, built with `cc -O0 -Wall`."""
    out = tmp_path_factory.mktemp("apps-progs") / "minikv"
    proc = subprocess.run(["cc", "-O0", "-Wall", "-o", str(out),
                           str(PROGS / "minikv.c")], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        pytest.fail(f"cc minikv.c failed:\n{proc.stderr}")
    return out


def cc(*args, cwd=None, timeout=300):
    return subprocess.run([str(CRASHCHECK), *map(str, args)],
                          cwd=cwd or ROOT, capture_output=True, text=True,
                          timeout=timeout)


def results(out):
    with open(Path(out) / "results.json") as fh:
        return json.load(fh)


def findings(doc):
    return {(c["kind"], c["model"], c["verdict"]) for c in doc["cases"]
            if c["verdict"] not in ("ok", "skipped")}


def kv_audit(minikv, tmp, *program_opts, extra=()):
    """An audit of `minikv set k new` over a store that setup made
    holding k = old, judged by minikv's checker (which logs its runs to
    TMP/checks.log)."""
    log = tmp / "checks.log"
    return cc("audit", "--out", tmp / "out", *extra,
              "--setup", f"{minikv} set k old",
              "--check", f"{minikv} check {log} k old new",
              "--", minikv, "set", "k", "new", *program_opts)


# ------------------------------------------------------------- verdicts

def test_a_correct_store_is_clean_and_its_checker_runs_once_per_state(
        minikv, tmp_path, monkeypatch):
    # unconfined: the checker's runs are counted by its log, outside the
    # state's directory, which confinement would throw away
    monkeypatch.setenv("CRASHCHECK_CONFINE", "off")
    # one job (two: test_two_jobs_judge_each_state_once)
    r = kv_audit(minikv, tmp_path, extra=("--jobs", "1"))
    assert r.returncode == 0, r.stdout + r.stderr
    doc = results(tmp_path / "out")
    assert {c["verdict"] for c in doc["cases"]} == {"ok"}
    kinds = {c["kind"] for c in doc["cases"]}
    assert kinds >= {"baseline", "eio", "crash", "powerloss", "enospc"}
    # ids leave the size out: an audit of a tree has none
    assert "minikv-baseline" in {c["id"] for c in doc["cases"]}
    judged = sum(c["states"] for c in doc["cases"])
    runs = len((tmp_path / "checks.log").read_text().splitlines())
    checker = doc["summary"]["run"]["checker"]
    # every crash state and every run's directory went through the
    # checker's answers, yet the checker ran once per distinct one
    assert checker["states"] == judged > 0
    assert runs == checker["distinct_states"] + checker["distinct_dirs"]
    assert checker["distinct_states"] < judged / 4


def test_two_jobs_judge_each_state_once(minikv, tmp_path, monkeypatch):
    # the pool's two processes meet the same crash states at the same
    # time (each model's power-loss cases explore one baseline): the one
    # that claims a state first judges it, the other waits for the answer
    # (unconfined: the checker's log is outside the state's directory)
    monkeypatch.setenv("CRASHCHECK_CONFINE", "off")
    for rnd in range(3):
        out = tmp_path / f"r{rnd}"
        out.mkdir()
        r = kv_audit(minikv, out, extra=("--jobs", "2", "--faults",
                                         "baseline,powerloss"))
        assert r.returncode == 0, r.stdout + r.stderr
        doc = results(out / "out")
        checker = doc["summary"]["run"]["checker"]
        runs = len((out / "checks.log").read_text().splitlines())
        assert runs == checker["distinct_states"] + checker["distinct_dirs"]


def test_no_fsync_before_rename_is_torn_under_both_models(minikv, tmp_path):
    r = kv_audit(minikv, tmp_path, "--no-fsync")
    assert r.returncode == 1, r.stdout + r.stderr
    found = findings(results(tmp_path / "out"))
    assert ("powerloss", "posix", "torn") in found
    assert ("powerloss", "posix", "not-durable") in found
    # auto_da_alloc allocates the renamed file's blocks before the
    # rename, unwritten (dioread_nolock): zeros under ext4-ordered too
    assert ("powerloss", "ext4-ordered", "torn") in found, found
    line = next(li for li in r.stdout.splitlines()
                if li.strip().startswith("FINDING") and "torn" in li
                and "-posix:" in li)
    assert "checker exited 1: db is cut short (0 bytes, no end line)" in line


def test_no_dir_fsync_is_not_durable_under_both_models(minikv, tmp_path):
    r = kv_audit(minikv, tmp_path, "--no-dir-fsync",
                 extra=("--faults", "baseline,powerloss"))
    assert r.returncode == 1, r.stdout + r.stderr
    found = findings(results(tmp_path / "out"))
    assert found == {("powerloss", "posix", "not-durable"),
                     ("powerloss", "ext4-ordered", "not-durable"),
                     ("baseline", "posix", "not-durable")}, found


def test_old_dir_is_copied_and_only_read(minikv, tmp_path):
    mine = tmp_path / "store"
    mine.mkdir()
    (mine / "db").write_text("k=old\nother=kept\nend\n")
    (mine / "notes").write_text("not the store's\n")
    os.symlink("notes", mine / "link")
    before = {p.name: (p.read_bytes(), p.lstat().st_mtime_ns)
              for p in mine.iterdir()}
    log = tmp_path / "checks.log"
    r = cc("audit", "--out", tmp_path / "out", "--old-dir", mine,
           "--check", f"{minikv} check {log} k old new",
           "--faults", "baseline,eio,powerloss", "--keep",
           "--", minikv, "set", "k", "new")
    assert r.returncode == 0, r.stdout + r.stderr
    after = {p.name: (p.read_bytes(), p.lstat().st_mtime_ns)
             for p in mine.iterdir()}
    assert after == before
    # the run started from the copy: the other key stayed, the link is one
    state = tmp_path / "out" / ".work" / "minikv" / "work"
    assert (state / "db").read_text() == "other=kept\nk=new\nend\n"
    assert os.readlink(state / "link") == "notes"


@pytest.mark.parametrize("made_by", ["old-dir", "setup"])
def test_a_start_tree_linking_out_of_itself_is_refused_before_any_run(
        tmp_path, made_by):
    """A link in the starting tree to a file outside it (here, one of
    the user's) would let every run of the program write through it to
    that file: refused before anything runs, one line, exit 2, the file
    untouched."""
    theirs = tmp_path / "theirs"
    theirs.write_text("the user's\n")
    mine = tmp_path / "store"
    mine.mkdir()
    (mine / "db").write_text("k=old\n")
    os.symlink("db", mine / "inside")
    opts = ["--old-dir", mine]
    if made_by == "old-dir":
        os.symlink(theirs, mine / "link")
    else:
        opts += ["--setup", f"ln -s {theirs} link"]
    r = cc("audit", "--out", tmp_path / "out", *opts, "--check", "true",
           "--", "sh", "-c", "echo clobbered > link")
    assert r.returncode == 2, r.stdout + r.stderr
    assert len(r.stderr.splitlines()) == 1, r.stderr
    assert f"'link' is a symbolic link to '{theirs}'" in r.stderr, r.stderr
    assert r.stderr.startswith(f"crashcheck: --{made_by}"), r.stderr
    assert theirs.read_text() == "the user's\n"


def test_a_driver_scripts_children_are_traced_and_faulted(minikv, tmp_path):
    """A driver that starts the store in a child process and waits for
    it: the child's writes make the crash states, and a fault reaches
    the child."""
    driver = tmp_path / "driver.sh"
    driver.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        # the store's update in a child of its own, as a server would be
        {minikv} set k new "$@" &
        wait $!
        """))
    driver.chmod(0o755)
    log = tmp_path / "checks.log"
    r = cc("audit", "--out", tmp_path / "out",
           "--setup", f"{minikv} set k old",
           "--check", f"{minikv} check {log} k old new",
           "--faults", "baseline,eio,powerloss", "--model", "posix",
           "--", driver, "--no-fsync")
    assert r.returncode == 1, r.stdout + r.stderr
    doc = results(tmp_path / "out")
    assert ("powerloss", "posix", "torn") in findings(doc)
    fsync = [c for c in doc["cases"] if c["plan"] == "fsync(.)#1=EIO"]
    assert fsync and fsync[0]["verdict"] == "ok"
    assert fsync[0]["exit"]["status"] == 1
    assert "minikv: fsync '.': Input/output error" in fsync[0]["stderr"]


# ------------------------------------------------------------- bad input

BAD_TREE = [
    (["--old-dir", "{tmp}/none", "--check", "true"],
     "--old-dir: '{tmp}/none' is not a directory"),
    (["--old-dir", "{tmp}/afile", "--check", "true"],
     "--old-dir: '{tmp}/afile' is not a directory"),
    (["--old-dir", "{tmp}", "--check", "true"],
     "--old-dir: '{tmp}' holds the results directory"),
    (["--old-dir", "{tmp}/adir"], "--check CMD is required"),
    (["--setup", "true"], "--check CMD is required"),
    (["--setup", " ", "--check", "true"], "--setup: empty command"),
    (["--setup", "true", "--absent", "--check", "true"],
     "--setup: not with --old or --absent"),
    (["--old-dir", "{tmp}/adir", "--absent", "--check", "true"],
     "argument --absent: not allowed with argument --old-dir"),
    (["--setup", "true", "--contract", "atomic"], "--contract: a tree"),
    (["--setup", "true", "--check", "true {target}"],
     "{target} in a tree's audit needs --target NAME"),
    (["--setup", "exit 3", "--check", "true"], "--setup exited 3"),
    (["--setup", "echo no such thing >&2; false", "--check", "true"],
     "--setup exited 1: no such thing"),
]


@pytest.mark.parametrize("opts,problem", BAD_TREE,
                         ids=[f"{i}-" + b[1].split(":")[0].split(" ")[0]
                              for i, b in enumerate(BAD_TREE)])
def test_bad_tree_option_is_one_line_and_exit_2(minikv, tmp_path, opts,
                                                problem):
    (tmp_path / "adir").mkdir()
    (tmp_path / "afile").write_text("x")

    def fill(a):
        return a.replace("{tmp}", str(tmp_path))
    r = cc("audit", "--out", tmp_path / "out", *[fill(a) for a in opts],
           "--", minikv, "set", "k", "new")
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("crashcheck: "), lines
    assert fill(problem) in lines[0]


# ------------------------------------------------------------- specs

TREE_SPEC = """\
name = "kv"
description = "minikv's update of a store made by setup"
contract = "tree"
strategies = ["safe", "no-fsync"]
command = ["{here}/kv-driver", "{strategy}"]
check = ["%(minikv)s", "check", "{here}/checks.log", "k", "old", "new"]
setup = ["%(minikv)s", "set", "k", "old"]
timeout = 20
"""


def write_tree_spec(minikv, tmp, text=TREE_SPEC, **more):
    spec = tmp / "kv.toml"
    spec.write_text(text % {"minikv": minikv} + "".join(
        f"{k} = {v}\n" for k, v in more.items()))
    driver = tmp / "kv-driver"
    driver.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        case $1 in
        safe) exec {minikv} set k new ;;
        no-fsync) exec {minikv} set k new --no-fsync ;;
        esac
        exit 2
        """))
    driver.chmod(0o755)
    return spec


def test_tree_spec_fields(minikv, tmp_path):
    spec = specmod.load(write_tree_spec(minikv, tmp_path))
    assert spec.contract == "tree" and spec.tree
    assert spec.sizes == (0,) and spec.size_in_id is False
    assert spec.old == "absent" and spec.old_dir is None
    assert spec.argv(bin="B", target=None, new="N", strategy="safe") == \
        [str(tmp_path / "kv-driver"), "safe"]
    assert spec.setup_argv("B", "safe") == [str(minikv), "set", "k", "old"]
    ids = [c.prefix for c in casesmod.combos([spec])]
    assert ids == ["kv-safe", "kv-no-fsync"]
    (tmp_path / "start").mkdir()
    spec = specmod.load(write_tree_spec(minikv, tmp_path, old_dir='"start"',
                                        sizes="[1, 2]"))
    assert spec.old_dir == tmp_path / "start"
    assert [c.prefix for c in casesmod.combos([spec])][:2] == \
        ["kv-safe-1B", "kv-safe-2B"]


BAD_SPECS = [
    ('contract = "tree"\ncommand = ["x"]\n', "check",
     'missing: contract = "tree" is judged by a checker'),
    ('contract = "tree"\ncommand = ["x", "{target}"]\ncheck = ["c"]\n',
     "command", "{target} with contract"),
    ('contract = "tree"\ncommand = ["x"]\ncheck = ["c", "{target}"]\n',
     "check", "{target} with contract"),
    ('contract = "tree"\ncommand = ["x"]\ncheck = ["c"]\nold = "absent"\n',
     "old", 'not for contract = "tree"'),
    ('contract = "tree"\ncommand = ["x"]\ncheck = ["c"]\nold_dir = "nope"\n',
     "old_dir", "'nope' is not a directory"),
    ('contract = "tree"\ncommand = ["x"]\ncheck = ["c"]\nsetup = ["s", "{new}"]\n',
     "setup", "{new} cannot be used here"),
    ('contract = "tree"\ncommand = ["x"]\ncheck = ["c"]\ndisk = "full"\n',
     "disk", '"full" is not for contract = "tree"'),
    ('contract = "atomic"\ncommand = ["x", "{target}"]\nsizes = [1]\n'
     'setup = ["s"]\n', "setup", 'only for contract = "tree"'),
    ('check = ["c"]\ncommand = ["x", "{target}"]\nsizes = [1]\n'
     'old_dir = "."\n', "old_dir", 'only for contract = "tree"'),
    ('contract = "atomic"\ncommand = ["x"]\nsizes = [1]\n', "command",
     "must pass {target}"),
]


@pytest.mark.parametrize("body,field,problem", BAD_SPECS,
                         ids=[f"{i}-{b[1]}" for i, b in enumerate(BAD_SPECS)])
def test_bad_tree_spec_names_the_field(tmp_path, body, field, problem):
    path = tmp_path / "bad.toml"
    path.write_text('name = "bad"\ndescription = "d"\n' + body)
    with pytest.raises(specmod.SpecError) as e:
        specmod.load(path)
    assert e.value.field == field, str(e.value)
    assert problem in str(e.value)


def test_a_tree_spec_runs_with_its_setup_per_strategy(minikv, tmp_path):
    spec = write_tree_spec(minikv, tmp_path)
    r = cc("run", spec, "--out", tmp_path / "out",
           "--faults", "baseline,eio,powerloss", "--model", "posix")
    assert r.returncode == 1, r.stdout + r.stderr
    doc = results(tmp_path / "out")
    bad = {c["id"].split("-powerloss")[0] for c in doc["cases"]
           if c["verdict"] == "torn"}
    assert bad == {"kv-no-fsync"}
    assert all(c["verdict"] == "ok" for c in doc["cases"]
               if c["strategy"] == "safe")


def test_a_failing_spec_setup_is_one_line_and_exit_2(minikv, tmp_path):
    spec = write_tree_spec(minikv, tmp_path, TREE_SPEC.replace(
        '"set", "k", "old"]', '"nonsense"]'))
    r = cc("run", spec, "--out", tmp_path / "out")
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.splitlines() == [
        "crashcheck: kv: setup exited 2: usage: minikv set KEY VALUE "
        "[--no-fsync] [--no-dir-fsync] | check LOG KEY OLD NEW"]


# ------------------------------------------------------------- own malloc

OWN_MALLOC = r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
/* a malloc of its own, like redis-server's jemalloc: one lock, held
 * while it maps its arena on first use */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *top;
void *malloc(size_t n)
{
	void *p;
	pthread_mutex_lock(&lock);
	if (!top)
		top = mmap(NULL, 64 << 20, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	p = top;
	top += (n + 15) & ~(size_t)15;
	pthread_mutex_unlock(&lock);
	return p;
}
void free(void *p) { (void)p; }
void *calloc(size_t a, size_t b) { void *p = malloc(a * b); memset(p, 0, a * b); return p; }
void *realloc(void *o, size_t n) { void *p = malloc(n); if (o) memcpy(p, o, n); return p; }
int main(int argc, char **argv)
{
	int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, "x", 1) != 1 || fsync(fd) < 0) {
		perror("own-malloc: fsync");
		return 1;
	}
	return close(fd) < 0;
}
"""
CTOR = r"""
#include <stdlib.h>
/* allocates before the fault library's constructor runs, as one of
 * redis-server's libraries does (bindtextdomain) */
__attribute__((constructor)) static void ctor(void) { free(malloc(16)); }
"""


def test_a_program_with_its_own_malloc_runs_under_a_plan(tmp_path):
    """redis-server's jemalloc maps memory from inside malloc, and a
    library's constructor allocates before the fault library's: the fault
    library's first wrapped call is then that mmap, inside malloc. With a
    plan it used to set libfiu up right there, and libfiu's allocations
    waited for malloc's lock for ever: every fault case of Redis hung."""
    (tmp_path / "ctor.c").write_text(CTOR)
    (tmp_path / "own.c").write_text(OWN_MALLOC)
    for argv in (["cc", "-shared", "-fPIC", "-o", "libctor.so", "ctor.c"],
                 ["cc", "-o", "own-malloc", "own.c", "-L.", "-lctor",
                  f"-Wl,-rpath,{tmp_path}"]):
        proc = subprocess.run(argv, cwd=tmp_path, capture_output=True,
                              text=True)
        assert proc.returncode == 0, proc.stderr
    r = subprocess.run([str(CRASHCHECK), "inject", "fsync#1=EIO", "--",
                        str(tmp_path / "own-malloc"), "f"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1, r.stderr
    assert "own-malloc: fsync: Input/output error" in r.stderr
    assert "crashcheck: fired fsync#1=EIO (1 call)" in r.stderr


# ------------------------------------------------------------- recipes

RECIPES = ROOT / "examples" / "apps"


def need(*programs):
    """Skip, naming what is missing, where a recipe's programs are not
    installed (scripts/install-deps --apps installs them)."""
    import shutil
    missing = [p for p in programs if shutil.which(p) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed "
                    "(scripts/install-deps --apps)")


def run_recipe(tmp, name, *opts):
    r = cc("run", RECIPES / f"{name}.toml", "--out", tmp / name, *opts)
    assert r.returncode in (0, 1), r.stdout[-2000:] + r.stderr
    doc = results(tmp / name)
    assert not [c for c in doc["cases"] if c["verdict"] == "harness-error"]
    return doc


def test_sqlite_recipe_rollback_journal(tmp_path):
    """SQLite's rollback journal commits by deleting the journal: under
    synchronous=FULL nothing syncs the directory after, so a power cut
    after sqlite3 exits 0 can bring the journal back and roll the commit
    back (both models); EXTRA syncs it. No state ever breaks the database
    or shows balances other than the old or the new ones."""
    need("sqlite3")
    doc = run_recipe(tmp_path, "sqlite", "-k", "rollback",
                     "--faults", "baseline,powerloss")
    found = {(c["strategy"], c["call"], c["model"], c["verdict"])
             for c in doc["cases"] if c["verdict"] != "ok"}
    assert found == {("rollback-full", "exit", "posix", "not-durable"),
                     ("rollback-full", "exit", "ext4-ordered", "not-durable"),
                     ("rollback-full", "", "posix", "not-durable")}, found
    lost = next(c for c in doc["cases"] if c["verdict"] == "not-durable"
                and c["kind"] == "powerloss")
    assert "bank.db-journal" in lost["explanation"]
    assert "balances are '100 100' (CRASHCHECK_EXPECT=new)" in lost["finding"]
    assert {c["strategy"] for c in doc["cases"]} == {"rollback-full",
                                                     "rollback-extra"}


def test_gdbm_recipe_judges_gdbm_not_gdbmtool(tmp_path):
    """The GDBM recipe's driver stops at the first error GDBM reports
    (gdbmtool's `set errorexit`): an EIO on a write makes it exit 1 with
    the old keys, not a lost-update of gdbmtool's batch mode, which goes
    on and exits 0. What is left is GDBM's own: libgdbm drops the error
    of the sync GDBM_SYNC asks for, and the finding's call site is in
    libgdbm."""
    need("gdbmtool")
    doc = run_recipe(tmp_path, "gdbm", "-k", "no-mmap", "--faults", "eio")
    verdicts = {c["verdict"] for c in doc["cases"]}
    assert "lost-update" not in verdicts, verdicts
    writes = [c for c in doc["cases"] if "-write(kv.gdbm)#1=EIO" in c["id"]]
    assert writes and all(c["verdict"] == "ok" and c["exit"]["status"] == 1
                          for c in writes), writes
    syncs = [c for c in doc["cases"] if c["verdict"] == "unreported-error"]
    assert syncs and all(c["call"].startswith("fsync(kv.gdbm)")
                         and "libgdbm.so" in c["location"]["object"]
                         for c in syncs), syncs


def test_lmdb_recipe_power_loss(tmp_path):
    """LMDB's commit (new pages, fdatasync, then the meta page written
    O_DSYNC) leaves the old or the new keys at every crash point."""
    need("mdb_load", "mdb_dump")
    doc = run_recipe(tmp_path, "lmdb", "--faults", "baseline,powerloss,crash",
                     "--exhaustive")
    assert {c["verdict"] for c in doc["cases"]} == {"ok"}
    # a crash state after every step of the commit, the sync included
    cuts = [c for c in doc["cases"] if c["kind"] == "powerloss"]
    assert cuts and all(c["states"] >= 1 for c in cuts)
    assert any("@fdatasync(data.mdb)#1-" in c["id"] for c in cuts)


def test_git_recipe_commit_is_not_durable_and_a_failed_reflog_append_is_judged(
        tmp_path):
    """git's default core.fsync (committed,-loose-object) fsyncs nothing
    in a commit of loose objects: a power cut after git commit exits 0
    can leave an empty object (the state that lost the fewest changes,
    which the finding reports) or the branch at the old commit. A failed
    append to the
    reflog (O_APPEND) is the call the recorded run made at the file's
    end, not another one: judged (git stops, exit 128, old state kept),
    never a harness-error: git exits 128 with its objects and ref in
    place, and a power cut after that exit finds the same ordering."""
    need("git")
    # four crash states of the power cut after exit: its cost is the
    # checker's (git fsck) per state
    doc = run_recipe(tmp_path, "git", "--cap", "4",
                     "--case", "git-powerloss@exit-posix",
                     "--case", "git-write(.git/logs/HEAD)#1=EIO")
    got = {c["id"]: c for c in doc["cases"]}
    assert set(got) == {"git-powerloss@exit-posix",
                        "git-write(.git/logs/HEAD)#1=EIO"}, sorted(got)
    lost = got["git-powerloss@exit-posix"]
    assert lost["verdict"] == "not-durable", lost
    assert re.search(r"git fsck --full failed: error: object file "
                     r"\.git/objects/../[0-9a-f]+ is empty", lost["finding"]), lost
    # the objects' data lost while a change made after them persisted
    # (their link, the ref naming them): ordering, not a missing fsync
    # before exit
    assert lost["property"] == "ordering", lost
    assert lost["cause"]["rule"] == rules.RULE_ORDER, lost
    # git stops (exit 128) after its objects and ref are in place; a
    # power cut after its exit finds the same ordering (crash-model.md:
    # old or new after a reported failure too)
    failed = got["git-write(.git/logs/HEAD)#1=EIO"]
    assert failed["exit"]["status"] == 128, failed
    assert failed["verdict"] == "torn" and failed["property"] == "ordering", \
        failed
    assert failed["state"].startswith("after exit")


def test_git_check_server_answers_as_git_check_does(tmp_path):
    """git/check --serve (git.toml's check_server) answers each state as
    git/check run there would: the same status and output, for sound,
    old, damaged and branchless repositories, under both expectations,
    state after state in one server."""
    need("git")
    here = RECIPES / "git"
    states = {}
    for name in ("new", "old", "empty-object", "no-branch", "bad-index"):
        d = tmp_path / name
        d.mkdir()
        subprocess.run([here / "setup"], cwd=d, check=True,
                       capture_output=True)
        if name != "old":
            subprocess.run([here / "driver"], cwd=d, check=True,
                           capture_output=True)
        states[name] = d
    obj = next(p for p in (states["empty-object"] / ".git" / "objects")
               .rglob("*") if p.is_file())
    obj.chmod(0o644)
    obj.write_bytes(b"")
    (states["no-branch"] / ".git" / "refs" / "heads" / "main").unlink()
    (states["bad-index"] / ".git" / "index").write_bytes(b"garbage")
    asks, want = [], []
    for d in states.values():
        for expect in ("new", "old-or-new"):
            asks.append({"dir": str(d), "expect": expect})
            r = subprocess.run([here / "check"], cwd=d, capture_output=True,
                               env=dict(os.environ, CRASHCHECK_EXPECT=expect))
            want.append({"status": r.returncode,
                         "output": (r.stdout + r.stderr).decode()})
    r = subprocess.run([here / "check", "--serve"], cwd=tmp_path,
                       input="".join(json.dumps(a) + "\n" for a in asks),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    got = [json.loads(line) for line in r.stdout.splitlines()]
    assert got == want
    assert [g["status"] for g in got] == [0, 0, 1, 0, 1, 1, 1, 1, 1, 1]


def test_hg_checker_judges_a_repository_as_hg_does(tmp_path):
    """The Mercurial recipe's checker runs hg's commands in one Python
    process (hg's own dispatcher): a sound repository at "old" passes
    only while the run had not finished, at "new" always; a corrupt
    changelog and a working directory whose parent the store does not
    hold fail, each with what hg said."""
    need("hg")
    hgdir = RECIPES / "hg"

    def check(repo, expect):
        env = {**os.environ, "CRASHCHECK_EXPECT": expect}
        r = subprocess.run([str(hgdir / "check")], cwd=repo, env=env,
                           capture_output=True, text=True, timeout=60)
        return r.returncode, r.stdout.strip()

    old = tmp_path / "old"
    old.mkdir()
    subprocess.run([str(hgdir / "setup")], cwd=old, check=True,
                   capture_output=True)
    new = tmp_path / "new"
    subprocess.run(["cp", "-a", str(old), str(new)], check=True)
    subprocess.run([str(hgdir / "driver")], cwd=new, check=True)
    assert check(old, "old-or-new") == (0, "")
    assert check(old, "new") == (1, "tip is 'old' (CRASHCHECK_EXPECT=new)")
    assert check(new, "new") == (0, "")

    torn = tmp_path / "torn"
    subprocess.run(["cp", "-a", str(new), str(torn)], check=True)
    os.truncate(torn / ".hg/store/00changelog.i", 100)
    assert check(torn, "old-or-new") == (
        1, "hg verify failed: abort: index 00changelog is corrupted")

    # the dirstate of "new" over the store of "old"
    mixed = tmp_path / "mixed"
    subprocess.run(["cp", "-a", str(old), str(mixed)], check=True)
    (mixed / ".hg/dirstate").write_bytes((new / ".hg/dirstate").read_bytes())
    status, said = check(mixed, "old-or-new")
    assert status == 1 and re.fullmatch(
        r"hg log warns: warning: ignoring unknown working parent "
        r"[0-9a-f]{12}!", said), said

    # check_server: the same answers from one process, asked in an order
    # that shows anything it kept (a sound repository after a corrupt
    # one, the same directory twice)
    asks = [(torn, "old-or-new"), (old, "old-or-new"), (new, "new"),
            (mixed, "old-or-new"), (old, "new"), (new, "new"),
            (torn, "old-or-new")]
    want = [check(d, e) for d, e in asks]
    server = subprocess.run(
        [str(hgdir / "check"), "--serve"], capture_output=True, text=True,
        timeout=120, input="".join(json.dumps({"dir": str(d), "expect": e})
                                   + "\n" for d, e in asks))
    assert server.returncode == 0, server.stderr
    answers = [json.loads(li) for li in server.stdout.splitlines()]
    assert [(a["status"], a["output"].strip()) for a in answers] == want


def test_scripts_apps_help_and_a_directory_not_its_own(tmp_path):
    """`scripts/apps --help` prints its usage (it was "unknown option",
    issue 30); --out is an output directory like crashcheck's, refused
    when it holds the user's files and no marker (it wrote summary.md
    into any directory), one line, exit 2."""
    apps = ROOT / "scripts" / "apps"
    r = subprocess.run([str(apps), "--help"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert "scripts/apps [--out DIR] [--list] [--summary]" in r.stdout
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.md").write_text("mine\n")
    r = subprocess.run([str(apps), "--out", str(mine), "--summary"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.startswith(f"apps: --out: '{mine}' is not empty and not "
                               "crashcheck's") and r.stderr.count("\n") == 1
    assert sorted(os.listdir(mine)) == ["notes.md"]
