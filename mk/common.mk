# Shared build settings, included by every sub-Makefile.
#
# The project's own flags live in BASIC_CFLAGS; a user's CFLAGS/LDFLAGS are
# appended to them, so `make CFLAGS=-O0` adds to ours instead of dropping
# -Wall. SANITIZE=address,undefined builds everything with those sanitizers;
# DEVELOPER=1 (CI) turns warnings into errors.

CC ?= cc
PYTHON ?= /usr/bin/python3

BASIC_CFLAGS = -std=gnu11 -O2 -g -Wall -Wextra -D_GNU_SOURCE -fPIC
BASIC_LDFLAGS =

ifdef SANITIZE
BASIC_CFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
BASIC_LDFLAGS += -fsanitize=$(SANITIZE)
endif

ifdef DEVELOPER
BASIC_CFLAGS += -Werror
endif

ALL_CFLAGS = $(BASIC_CFLAGS) $(CFLAGS)
ALL_LDFLAGS = $(BASIC_LDFLAGS) $(LDFLAGS)

# Quiet by default: "  CC  faults/plan.o"; V=1 shows the full commands.
ifneq ($(V),1)
QUIET_CC = @printf '  CC  %s\n' '$(DIRPREFIX)$@';
QUIET_LD = @printf '  LD  %s\n' '$(DIRPREFIX)$@';
QUIET_GEN = @printf '  GEN %s\n' '$(DIRPREFIX)$@';
Q = @
endif
