# crashcheck: top-level build. Each directory has its own Makefile; this one
# only delegates and runs things. See README.md.
#
#   make              build everything (workloads, faults, unit tests)
#   make check        build, then run the Check unit tests and pytest
#   make run          build, then sweep the built-in corpus (results/)
#   make fuzz         fuzz the plan parser (FUZZ_TIME seconds, default 60)
#   make clean        remove what the build made
#
#   V=1 full commands; DEVELOPER=1 warnings are errors;
#   SANITIZE=address,undefined build with sanitizers (make clean first).

include mk/common.mk

# faults/ joins the build as soon as it has a Makefile.
HAVE_FAULTS = $(wildcard faults/Makefile)
PYTEST_FLAGS ?= -rs
SUBMAKE = $(MAKE) --no-print-directory

all: deps
	$(Q)$(SUBMAKE) -C workloads
ifneq ($(HAVE_FAULTS),)
	$(Q)$(SUBMAKE) -C faults
endif
	$(Q)$(SUBMAKE) -C tests/unit

check: all
	$(Q)$(SUBMAKE) -C tests/unit check
	$(Q)$(SUBMAKE) -C faults check
	$(Q)$(PYTHON) -m pytest $(PYTEST_FLAGS) tests/

# The sweep over every spec of the built-in corpus; reports in results/.
# RUN_FLAGS adds crashcheck run options, e.g. RUN_FLAGS='--model posix'.
run: all
	$(Q)scripts/crashcheck run $(RUN_FLAGS) workloads/specs/*.toml

fuzz: deps
	$(Q)$(SUBMAKE) -C faults fuzz

# Quiet when everything is there; otherwise say what is missing and try to
# install it (which fails, printing the apt-get line, when not root).
deps:
	$(Q)scripts/install-deps --check >/dev/null || scripts/install-deps

clean:
	$(Q)$(SUBMAKE) -C workloads clean
ifneq ($(HAVE_FAULTS),)
	$(Q)$(SUBMAKE) -C faults clean
endif
	$(Q)$(SUBMAKE) -C tests/unit clean

.PHONY: all check run fuzz deps clean
