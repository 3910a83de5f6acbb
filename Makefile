# crashcheck: top-level build. Each directory has its own Makefile; this one
# only delegates and runs things. See README.md.
#
#   make              build everything (workloads, faults, unit tests)
#   make check        build, then run the Check unit tests, the fault
#                     library's own tests and pytest
#   make check-docs   run every example of README.md and docs/, slow ones too
#                     (installs the programs the guide audits first)
#   make check-html   test report.html in headless chromium (installs it)
#   make run          build, then sweep the built-in corpus (results/)
#   make fuzz         fuzz the plan parser, the spec reader and the trace
#                     reader (FUZZ_TIME seconds each, default 60)
#   make bench        measure the sweep against exec, strace, fiu-run
#   make stress-check the process tests STRESS_ROUNDS times (default 50)
#                     under CPU load (scripts/stress-check)
#   make chaos        CHAOS_ROUNDS audits (default 100) while crashcheck's
#                     own processes are killed and stopped (tests/chaos.py)
#   make install      install in PREFIX (default /usr/local), under DESTDIR
#   make uninstall    remove what make install installed there
#   make apps         sweep the applications of examples/apps/ (their
#                     Debian packages installed first); results/apps/
#   make validate-models  the crash models against real ext4, XFS and
#                     Btrfs kernels (root); results/validate-models/
#   make clean        remove what the build made
#
#   V=1 full commands; DEVELOPER=1 warnings are errors;
#   SANITIZE=address,undefined build with sanitizers (make clean first).

include mk/common.mk

# The harness's bytecode is compiled here too: where
# PYTHONDONTWRITEBYTECODE is set (as in many containers) Python never
# writes it, and every crashcheck command compiled the harness again on
# start (about 60 ms of ~130).
PYTEST_FLAGS ?= -rs
SUBMAKE = $(MAKE) --no-print-directory

all: deps
	$(Q)$(SUBMAKE) -C workloads
	$(Q)$(SUBMAKE) -C faults
	$(Q)$(SUBMAKE) -C harness
	$(Q)$(SUBMAKE) -C tests/unit
	$(Q)$(PYTHON) -m compileall -q harness
	$(Q)$(SUBMAKE) man/crashcheck.1

# crashcheck(1), generated from the CLI's own parser and help topics
# (harness/commands/manpage.py), so the page cannot drift from --help.
MAN_SOURCES = VERSION faults/calls.def faults/calldef.py $(wildcard harness/commands/*.py) \
	harness/reports/topics.py harness/calls.py harness/judging/oracle.py \
	$(wildcard harness/judging/models/*.py)
man/crashcheck.1: $(MAN_SOURCES)
	@mkdir -p man
	$(QUIET_GEN)$(PYTHON) -P -c 'import sys; sys.path.insert(0, "."); \
		from harness.commands import manpage; sys.exit(manpage.main())' >$@+
	$(Q)mv $@+ $@

# Everything a run needs goes to PREFIX/lib/crashcheck, PREFIX/bin/crashcheck
# links to its command, the man page and docs go under PREFIX/share
# (scripts/install says what and why). DESTDIR stages it for a package.
PREFIX ?= /usr/local
DESTDIR ?=
install: all
	$(Q)$(PYTHON) scripts/install '$(PREFIX)' '$(DESTDIR)'

uninstall:
	$(Q)$(PYTHON) scripts/install --uninstall '$(PREFIX)' '$(DESTDIR)'

# Sanitized programs the tests run directly, not through the runner, get
# the runner's sanitizer policy (harness/engine/sanitizers.py): a report aborts
# (SIGABRT, never an exit 1 that reads as a reported failure), and SIGBUS
# stays the program's own signal.
# The tests marked `plain` (pytest.ini) are skipped in a sanitized build.
ifdef SANITIZE
check: export ASAN_OPTIONS ?= abort_on_error=1:handle_sigbus=0
check: export UBSAN_OPTIONS ?= abort_on_error=1:handle_sigbus=0
check: export SANITIZED_CHECK = $(SANITIZE)
endif

check: all
	$(Q)$(SUBMAKE) -C tests/unit check
	$(Q)$(SUBMAKE) -C faults check
	$(Q)$(PYTHON) -m pytest $(PYTEST_FLAGS) tests/

# Every example of the docs, the slow ones too (make check runs the quick
# ones): tests/test_docs.py; the programs the guide audits are installed
# first (scripts/install-deps --docs).
check-docs: all
	$(Q)scripts/install-deps --check --docs >/dev/null || scripts/install-deps --docs
	$(Q)CRASHCHECK_DOCS=all $(PYTHON) -m pytest $(PYTEST_FLAGS) tests/test_docs.py

# report.html in headless chromium (tests/test_html.py): make check runs it
# where chromium is installed, this target installs it first.
check-html: all
	$(Q)scripts/install-deps --check --browser >/dev/null || scripts/install-deps --browser
	$(Q)CRASHCHECK_BROWSER=1 $(PYTHON) -m pytest $(PYTEST_FLAGS) tests/test_html.py

# The sweep over every spec of the built-in corpus; reports in results/.
# RUN_FLAGS adds crashcheck run options, e.g. RUN_FLAGS='--model posix'.
run: all
	$(Q)scripts/crashcheck run $(RUN_FLAGS) workloads/specs/*.toml

# libFuzzer on plan_parse (C), then fuzz/fuzz_py.py on harness/engine/spec.py,
# harness/engine/trace.py and harness/judging/explorer.py; a crash fails the target and
# leaves its input in fuzz/crash-*.
FUZZ_TIME ?= 60
fuzz: deps
	$(Q)$(SUBMAKE) -C faults fuzz FUZZ_TIME=$(FUZZ_TIME)
	$(Q)$(PYTHON) fuzz/fuzz_py.py --time $(FUZZ_TIME) spec trace explorer

# What a sweep case costs next to exec, strace and fiu-run (scripts/bench);
# BENCH_FLAGS=--quick for small samples.
bench: all
	$(Q)scripts/bench $(BENCH_FLAGS)

# The tests that start, stop, contain and interrupt processes, in a loop
# under stress(1)'s CPU load: a test that fails once in fifty fails this.
STRESS_ROUNDS ?= 50
stress-check: all
	$(Q)scripts/stress-check --rounds $(STRESS_ROUNDS)

# Audits while their own processes are killed, stopped and starved of
# scratch, in a private mount namespace (root only); make check runs a few
# rounds (tests/test_safety.py).
CHAOS_ROUNDS ?= 100
chaos: all
	$(Q)$(PYTHON) tests/chaos.py --rounds $(CHAOS_ROUNDS)

# Every recipe of examples/apps/ into results/apps/, with one summary
# table (scripts/apps). APPS_FLAGS adds crashcheck run options, e.g.
# APPS_FLAGS='--model posix'; APPS='sqlite lmdb' picks recipes.
apps: all
	$(Q)scripts/install-deps --apps --check >/dev/null || scripts/install-deps --apps
	$(Q)scripts/apps $(APPS) $(if $(APPS_FLAGS),-- $(APPS_FLAGS))

# Every crash point of the corpus (workloads/specs/, workloads/validate/)
# on real loop-mounted filesystems, each state held to the models
# (scripts/validate-models, harness/engine/validate.py); root only.
# VALIDATE_FLAGS adds its options, e.g. VALIDATE_FLAGS='--fs ext4,xfs'.
validate-models: all
	$(Q)scripts/validate-models $(VALIDATE_FLAGS)

# Quiet when everything is there; otherwise say what is missing and try to
# install it (which fails, printing the apt-get line, when not root).
deps:
	$(Q)scripts/install-deps --check >/dev/null || scripts/install-deps

clean:
	$(Q)$(SUBMAKE) -C workloads clean
	$(Q)$(SUBMAKE) -C faults clean
	$(Q)$(SUBMAKE) -C harness clean
	$(Q)$(SUBMAKE) -C tests/unit clean
	$(Q)find harness -name __pycache__ -prune -exec rm -rf {} +
	$(Q)$(RM) -r man

.PHONY: all check check-docs check-html run fuzz bench stress-check chaos apps validate-models deps clean install uninstall
