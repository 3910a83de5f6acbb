#!/usr/bin/python3
"""calldef.py: the one reader of calls.def, and what is made from it.

    calldef.py wrappers calls.def > gen/wrappers.c   the preload's wrappers
    calldef.py hooks calls.def > gen/hooks.h         the rules' prototypes
    calldef.py dispatch calls.def > gen/dispatch.c   the supervisor's calls
                                                     of the rules
    calldef.py md calls.def > CALLS.md               the table for the docs

The C code includes calls.def as X-macros (plan.h, syscall/sv.h); every
other reader goes through read() here: the generators above, the
harness's table (harness/calls.py imports this file) and the
library's tests. read() is strict: a line that is no row, no comment and
no preprocessor line, a row it cannot read, a WRAP row with no CALL or
ALIAS, a call with no WRAP row, a SYSCALL row naming no call, stop it
with one line naming the line (CallsDefError), and the build with it.

A call's rule (faults/rules/) is three hooks named after its WRAP row's
hooks field H: rule_H_describe (what the call works on, before the plan
decides), rule_H_prepare (only calls with F_SHORT: once the plan has
decided, may change what is passed down) and rule_H_after (what the call
did: the line's fields, the snapshots). Both backends call them: the
preload from its wrappers, with the arguments it was called with; the
supervisor from the dispatch, with the system call's arguments in the
order of the WRAP row's parameters. So a call the supervisor sees (one a
SYSCALL row names) has its hooks take every pointer as a cc_ptr, an
address in the program's memory that only the backend may read; a call
only the preload sees (stdio) keeps its C types.
"""

import re
import sys

FAULT_FLAGS = {
    "F_EINTR": "eintr",
    "F_SHORT": "short",
    "F_ENOSPC": "enospc",
    "F_EIO": "eio",
    "F_CRASH": "crash",
    "F_ERRNO": "errno",
}
CLASSES = ("C_DATA", "C_SYNC", "C_NAME", "C_MAP", "C_OTHER")

# fails: how a call says it failed (the test on ret, None: it cannot),
# and what an injected errno makes it return
FAILS = {
    "neg": ("ret < 0", "(errno = inj, -1)"),
    "eof": ("ret == EOF", "(errno = inj, EOF)"),
    "null": ("!ret", "(errno = inj, NULL)"),
    "mapfailed": ("ret == MAP_FAILED", "(errno = inj, MAP_FAILED)"),
    "items": ("size && ret < nmemb", "(errno = inj, 0)"),
    "errno": (None, "inj"),
    "void": (None, None),
}

# Calls the kernel carries out whatever they return: Linux frees the
# descriptor of a close that fails (EIO, EINTR: close(2)), so a close
# given an injected errno is made all the same and the errno returned
# after it (a descriptor left open would keep a pipe's reader waiting
# for an end that never comes). Both backends take it from here: the
# preload's wrapper (_wrapper: arm_after, which leaves libfiu's point,
# that would fail the call without making it, alone) and the supervisor
# (rule_fails_after in gen/hooks.h).
FAILS_AFTER = ("close",)


class CallsDefError(Exception):
    """calls.def cannot be read: one line saying where and why."""


class Call:
    """A CALL row: a call as plans and traces name it."""
    __slots__ = ("name", "point", "flags", "cls", "aliases", "syscalls",
                 "line")

    def __init__(self, name, point, flags, cls, line):
        self.name = name            # "write", "openat"
        self.point = point          # libfiu point: "posix/io/rw/write"
        self.flags = flags          # ["F_EINTR", ...] as written
        self.cls = cls              # "C_DATA", ...
        self.aliases = []           # glibc's 64-bit twins: ["pwrite64"]
        self.syscalls = []          # system calls counted as it: ["pwrite64"]
        self.line = line

    @property
    def faults(self):
        """The sweep's fault classes: frozenset of "eintr", "short", ..."""
        return frozenset(FAULT_FLAGS[f] for f in self.flags)

    def __repr__(self):
        return f"Call({self.name!r})"


class Param:
    __slots__ = ("type", "name")

    def __init__(self, type_, name):
        self.type = type_           # "const void *", "int"
        self.name = name

    @property
    def pointer(self):
        return self.type.endswith("*")


class Wrap:
    """A WRAP row: one exported symbol of the preload, and the hooks of
    the call it counts as."""
    __slots__ = ("symbol", "call", "returns", "params", "variadic", "fails",
                 "hooks", "line")

    def __init__(self, symbol, call, returns, params, variadic, fails, hooks,
                 line):
        self.symbol = symbol        # "pwrite64"
        self.call = call            # the Call it counts as
        self.returns = returns      # "ssize_t", "void *", "void"
        self.params = params        # [Param]
        self.variadic = variadic    # open's "... mode_t mode": a Param, or None
        self.fails = fails          # key of FAILS
        self.hooks = hooks          # prefix of the rule's hooks, "manual", "none"
        self.line = line

    @property
    def all_params(self):
        return self.params + ([self.variadic] if self.variadic else [])


class Table:
    def __init__(self):
        self.calls = {}             # name -> Call, in the table's order
        self.aliases = {}           # 64-bit symbol -> Call
        self.wraps = []             # [Wrap], in the table's order
        self.syscalls = []          # [(system call, Call)]

    def wrap_of(self, call):
        """The WRAP row of the call's own symbol."""
        return next(w for w in self.wraps if w.symbol == call.name)

    def supervised(self, hooks):
        """A system call reaches the hooks H: their pointers are cc_ptr."""
        return any(c.syscalls for c in self.calls.values()
                   if self.wrap_of(c).hooks == hooks)


def _strip_comments(text):
    """TEXT with its /* */ comments blanked, newlines kept (line numbers
    stay); an unterminated comment is an error."""
    out, i = [], 0
    while True:
        j = text.find("/*", i)
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        k = text.find("*/", j + 2)
        if k < 0:
            raise CallsDefError(
                f"line {text.count(chr(10), 0, j) + 1}: a comment that never ends")
        out.append(text[i:j])
        out.append("\n" * text.count("\n", j, k))
        i = k + 2


def _fields(body, lineno):
    """The comma-separated fields of a row's body, a parenthesized field
    (a WRAP row's parameters) kept whole."""
    fields, depth, cur = [], 0, []
    for ch in body:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise CallsDefError(f"line {lineno}: unbalanced ')'")
        if ch == "," and depth == 0:
            fields.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if depth:
        raise CallsDefError(f"line {lineno}: unbalanced '('")
    fields.append("".join(cur).strip())
    return fields


_ROW = re.compile(r"^(CALL|ALIAS|WRAP|SYSCALL)\((.*)\)$")
_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")
_PARAM = re.compile(r"^(.*?[\s*])(\w+)$")
_TYPE = re.compile(r"^(const )?(struct )?\w+( \w+)?( ?\*)?$")


def _params(text, sym, lineno, manual):
    """[Param] of a WRAP row's "(...)" field, and open's variadic mode. A
    wrapper written by hand (fprintf) may end in a bare "...", which its
    hooks do not take."""
    if not (text.startswith("(") and text.endswith(")")):
        raise CallsDefError(f"line {lineno}: WRAP {sym}: parameters must be "
                            f"in parentheses, not '{text}'")
    inner = text[1:-1].strip()
    if inner == "void":
        return [], None
    out, va = [], None
    for p in (s.strip() for s in inner.split(",")):
        if va:
            raise CallsDefError(f"line {lineno}: WRAP {sym}: '... mode_t "
                                "mode' must come last")
        if p == "..." and manual:
            break
        if p.startswith("..."):
            if p[3:].strip() != "mode_t mode":
                raise CallsDefError(
                    f"line {lineno}: WRAP {sym}: a variadic parameter list "
                    f"must end in '... mode_t mode', not '{p}'")
            va = Param("mode_t", "mode")
            continue
        m = _PARAM.match(p)
        if not m or not _TYPE.match(m.group(1).strip()):
            raise CallsDefError(f"line {lineno}: WRAP {sym}: cannot read "
                                f"parameter '{p}'")
        out.append(Param(m.group(1).strip(), m.group(2)))
    return out, va


def parse(text):
    """The Table of calls.def's TEXT; CallsDefError when it is not one."""
    t = Table()
    wraps = []
    for lineno, line in enumerate(_strip_comments(text).splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = _ROW.match(re.sub(r"^(\w+)\s+\(", r"\1(", line))
        if not m:
            raise CallsDefError(f"line {lineno}: not a row: '{line}'")
        kind, f = m.group(1), _fields(m.group(2), lineno)
        if kind == "CALL":
            if len(f) != 4:
                raise CallsDefError(f"line {lineno}: a CALL row has 4 fields "
                                    "(name, \"point\", faults, class)")
            name, point, flags, cls = f
            if not _NAME.match(name) or name in t.calls:
                raise CallsDefError(f"line {lineno}: bad or repeated call name '{name}'")
            if not re.match(r'^"[a-z0-9_/]+"$', point):
                raise CallsDefError(f"line {lineno}: CALL {name}: the point must "
                                    f"be a quoted libfiu name, not {point}")
            flags = flags.split("|")
            bad = [x for x in flags if x not in FAULT_FLAGS]
            if bad:
                raise CallsDefError(f"line {lineno}: CALL {name}: unknown fault "
                                    f"{bad[0]} (one of {', '.join(FAULT_FLAGS)})")
            if cls not in CLASSES:
                raise CallsDefError(f"line {lineno}: CALL {name}: unknown class "
                                    f"{cls} (one of {', '.join(CLASSES)})")
            t.calls[name] = Call(name, point[1:-1], flags, cls, lineno)
        elif kind == "ALIAS":
            if len(f) != 2 or f[1] not in t.calls or not _NAME.match(f[0]) \
                    or f[0] in t.calls or f[0] in t.aliases:
                raise CallsDefError(f"line {lineno}: bad ALIAS row (a new 64-bit "
                                    "name, then a call of a CALL row above)")
            t.aliases[f[0]] = t.calls[f[1]]
            t.calls[f[1]].aliases.append(f[0])
        elif kind == "SYSCALL":
            if len(f) != 2 or f[1] not in t.calls or not _NAME.match(f[0]):
                raise CallsDefError(f"line {lineno}: bad SYSCALL row (a system "
                                    "call, then a call of a CALL row)")
            t.syscalls.append((f[0], t.calls[f[1]]))
            t.calls[f[1]].syscalls.append(f[0])
        else:
            if len(f) != 5:
                raise CallsDefError(f"line {lineno}: a WRAP row has 5 fields "
                                    "(symbol, returns, (parameters), fails, hooks)")
            wraps.append((lineno, f))
    for lineno, (sym, returns, ptext, fails, hooks) in wraps:
        call = t.calls.get(sym) or t.aliases.get(sym)
        if call is None:
            raise CallsDefError(f"line {lineno}: WRAP {sym}: no CALL or ALIAS "
                                "row names it")
        if any(w.symbol == sym for w in t.wraps):
            raise CallsDefError(f"line {lineno}: WRAP {sym} twice")
        if fails not in FAILS:
            raise CallsDefError(f"line {lineno}: WRAP {sym}: fails '{fails}' is "
                                f"none of {', '.join(FAILS)}")
        if not _NAME.match(hooks):
            raise CallsDefError(f"line {lineno}: WRAP {sym}: bad hooks '{hooks}'")
        if not _TYPE.match(returns):
            raise CallsDefError(f"line {lineno}: WRAP {sym}: cannot read the "
                                f"type '{returns}'")
        params, va = _params(ptext, sym, lineno, hooks == "manual")
        t.wraps.append(Wrap(sym, call, returns, params, va, fails, hooks, lineno))
    missing = [s for s in list(t.calls) + list(t.aliases)
               if not any(w.symbol == s for w in t.wraps)]
    if missing:
        raise CallsDefError(f"no WRAP row for {', '.join(missing)}")
    # the hooks a prefix names are one set of functions: every row naming
    # it has the same parameters and F_SHORT alike
    first = {}
    for w in t.wraps:
        if w.hooks in ("manual", "none"):
            continue
        f = first.setdefault(w.hooks, w)
        if [p.name for p in f.all_params] != [p.name for p in w.all_params] or \
                ("F_SHORT" in f.call.flags) != ("F_SHORT" in w.call.flags) or \
                f.returns != w.returns:
            raise CallsDefError(f"line {w.line}: WRAP {w.symbol}: hooks "
                                f"'{w.hooks}' are also {f.symbol}'s, whose "
                                "parameters, return or F_SHORT differ")
    for c in t.calls.values():
        if c.syscalls and t.wrap_of(c).hooks == "manual":
            raise CallsDefError(f"line {c.line}: {c.name}: a call a system call "
                                "counts as needs hooks, not 'manual'")
    return t


def read(path):
    with open(path) as f:
        return parse(f.read())


# ---- C: the hooks' prototypes, the preload's wrappers, the dispatch ----------

def _hook_type(p_type, supervised):
    """The type a hook takes for a parameter of P_TYPE."""
    return "cc_ptr" if supervised and p_type.endswith("*") else p_type


def _decl(type_, name):
    return f"{type_}{'' if type_.endswith('*') else ' '}{name}"


def _hook_sets(t):
    """(hooks, the first Wrap naming them, supervised) of every hook set."""
    seen = {}
    for w in t.wraps:
        if w.hooks not in ("manual", "none") and w.hooks not in seen:
            seen[w.hooks] = w
    return [(h, w, t.supervised(h)) for h, w in seen.items()]


def _hooks_of_manual(t):
    """Manual wrappers call hooks too: fprintf's."""
    return [(w.symbol, w, False) for w in t.wraps if w.hooks == "manual"]


def hooks(t):
    """gen/hooks.h: the prototype of every hook, which faults/rules/ defines and
    the wrappers and the dispatch call: the compiler checks all three."""
    o = ["/* Generated from calls.def by calldef.py; do not edit. */",
         "#ifndef CRASHCHECK_GEN_HOOKS_H", "#define CRASHCHECK_GEN_HOOKS_H", "",
         "#pragma GCC visibility push(hidden)", ""]
    for h, w, sup in _hook_sets(t) + _hooks_of_manual(t):
        ps = [_decl(_hook_type(p.type, sup), p.name) for p in w.all_params]
        args = "".join(", " + p for p in ps)
        o.append(f"void rule_{h}_describe(struct cc_rec *r{args});")
        if "F_SHORT" in w.call.flags:
            pp = "".join(", " + _decl(_hook_type(p.type, sup) + " *", p.name)
                         .replace("* *", "**") for p in w.all_params)
            o.append(f"void rule_{h}_prepare(struct cc_rec *r{pp});")
        ret = "" if w.returns == "void" else \
            ", " + _decl(_hook_type(w.returns, sup), "ret")
        o.append(f"void rule_{h}_after(struct cc_rec *r{ret}{args});")
    o += ["", "/* whether an injected errno of CALL is returned after the call ran",
          " * (calldef.py, FAILS_AFTER) */",
          "static inline bool rule_fails_after(int call)", "{",
          "\treturn " + (" || ".join(f"call == CALL_{n}" for n in FAILS_AFTER)
                         or "false") + ";", "}"]
    o += ["", "#pragma GCC visibility pop", "", "#endif", ""]
    return "\n".join(o)


def _wrapper(w, sup):
    call = w.call
    short = "F_SHORT" in call.flags
    decls = ", ".join(_decl(p.type, p.name) for p in w.params) + \
        (", ..." if w.variadic else "")
    names = [p.name for p in w.all_params]
    args = ", ".join(names)
    ptrs = [p for p in w.all_params if sup and p.pointer]
    # the hooks get a pointer as its address (cc_ptr), the call below gets
    # it back as the pointer it was
    hname = {p.name: (f"p_{p.name}" if p in ptrs else p.name) for p in w.all_params}
    hargs = "".join(", " + hname[n] for n in names)
    down = ", ".join(f"({p.type}){hname[p.name]}" if p in ptrs else p.name
                     for p in w.all_params)
    void = w.fails == "void"
    failed, injected = FAILS[w.fails]
    last = w.params[-1].name if w.params else None
    o = []
    a = o.append
    a(f"DECLARE_NEXT({w.symbol});\n")
    a(f"{_decl(w.returns, w.symbol)}({decls or 'void'})")
    a("{")
    a("\tstruct cc_rec r;")
    if not void:
        a(f"\t{_decl(w.returns, 'ret')};")
    a("\tint inj, e;")
    if w.variadic:
        a(f"\tmode_t {w.variadic.name};")
    for p in ptrs:
        a(f"\tcc_ptr p_{p.name};")
    a("")
    if w.variadic:
        a(f"\tOPEN_MODE({last}, {last}, {w.variadic.name});")
    if void:
        a("\tif (!enter()) {")
        a(f"\t\tREAL({w.symbol})({args});")
        a("\t\treturn;")
        a("\t}")
    else:
        a("\tif (!enter())")
        a(f"\t\treturn REAL({w.symbol})({args});")
    a("\te = errno;")
    a(f"\trec_init(&r, CALL_{call.name});")
    a("\tr.at = __builtin_return_address(0);")
    for p in ptrs:
        a(f"\tp_{p.name} = (cc_ptr){p.name};")
    a(f"\trule_{w.hooks}_describe(&r{hargs});")
    a("\tpre(&r);")
    if short:
        a(f"\trule_{w.hooks}_prepare(&r" + "".join(", &" + hname[n] for n in names)
          + ");")
    a("\tinj = arm_after(&r);" if call.name in FAILS_AFTER else "\tinj = arm(&r);")
    a("\terrno = e;")
    if void:
        a("\t(void)inj;\t/* a call that returns nothing takes no errno */")
        a(f"\tREAL({w.symbol})({down});")
    elif call.name in FAILS_AFTER:
        a(f"\tret = REAL({w.symbol})({down});")
        a(f"\tif (inj)\n\t\tret = {injected};")
    else:
        a(f"\tret = inj ? {injected} : REAL({w.symbol})({down});")
    a("\te = errno;")
    a("\tdisarm(&r);")
    if w.fails == "mapfailed":
        a("\tr.ret = ret == MAP_FAILED ? -1 : (long long)(uintptr_t)ret;")
    elif w.fails not in ("null", "void"):
        a("\tr.ret = ret;")
    if void:
        rarg = ""
    elif sup and w.returns.endswith("*"):
        rarg = ", (cc_ptr)ret"
    else:
        rarg = ", ret"
    a(f"\trule_{w.hooks}_after(&r{rarg}{hargs});")
    if void:
        err = "0"
    elif w.fails == "errno":
        err = "ret"
    else:
        err = f"{failed} ? e : 0"
    a(f"\tfinish(&r, {err}, e);")
    if short:
        a("\tif (r.tofree)\n\t\tfree(r.tofree);")
    if not void:
        a("\treturn ret;")
    a("}\n")
    return "\n".join(o)


def wrappers(t):
    """gen/wrappers.c: one wrapper per WRAP row (but manual and none),
    included at the end of preload.c."""
    out = ["/* Generated from calls.def by calldef.py; do not edit. */\n"]
    for w in t.wraps:
        if w.hooks in ("manual", "none"):
            continue
        out.append(_wrapper(w, t.supervised(w.hooks)))
    return "\n".join(out)


def dispatch(t):
    """gen/dispatch.c: the supervisor's calls of the hooks, by call, with
    the system call's arguments A (in the order of the call's WRAP row:
    syscall/calls.c puts them so) cast to the hooks' types."""
    o = ["/* Generated from calls.def by calldef.py; do not edit. */",
         "#include \"../rules.h\"", "",
         "/* A[I] as the hook's parameter of type T */",
         "#define ARG(T, i) ((T)a[i])", "",
         "void rule_describe(struct cc_rec *r, const uint64_t a[6])", "{",
         "\tswitch (r->call) {"]
    supervised = [c for c in t.calls.values() if c.syscalls
                  and t.wrap_of(c).hooks != "none"]

    def casts(w):
        return [f"ARG({_hook_type(p.type, True)}, {i})"
                for i, p in enumerate(w.all_params)]
    for c in supervised:
        w = t.wrap_of(c)
        o.append(f"\tcase CALL_{c.name}:")
        o.append(f"\t\trule_{w.hooks}_describe(r" + "".join(
            ", " + x for x in casts(w)) + ");")
        o.append("\t\tbreak;")
    o += ["\tdefault:", "\t\tbreak;", "\t}", "}", "",
          "/* the hooks' changes to the arguments go back into A; the bits of",
          " * those that changed */",
          "unsigned rule_prepare(struct cc_rec *r, uint64_t a[6])", "{",
          "\tunsigned changed = 0;", "",
          "\tswitch (r->call) {"]
    for c in supervised:
        w = t.wrap_of(c)
        if "F_SHORT" not in c.flags:
            continue
        o.append(f"\tcase CALL_{c.name}: {{")
        for i, p in enumerate(w.all_params):
            o.append(f"\t\t{_decl(_hook_type(p.type, True), p.name)} = "
                     f"ARG({_hook_type(p.type, True)}, {i});")
        o.append(f"\t\trule_{w.hooks}_prepare(r" + "".join(
            ", &" + p.name for p in w.all_params) + ");")
        for i, p in enumerate(w.all_params):
            ty = _hook_type(p.type, True)
            o.append(f"\t\tif ({p.name} != ARG({ty}, {i})) {{")
            o.append(f"\t\t\ta[{i}] = (uint64_t){p.name};")
            o.append(f"\t\t\tchanged |= 1u << {i};")
            o.append("\t\t}")
        o.append("\t\tbreak;")
        o.append("\t}")
    o += ["\tdefault:", "\t\tbreak;", "\t}", "\treturn changed;", "}", "",
          "void rule_after(struct cc_rec *r, const uint64_t a[6])", "{",
          "\tswitch (r->call) {"]
    for c in supervised:
        w = t.wrap_of(c)
        ret = "" if w.returns == "void" else \
            f", ({_hook_type(w.returns, True)})r->ret"
        o.append(f"\tcase CALL_{c.name}:")
        o.append(f"\t\trule_{w.hooks}_after(r{ret}" + "".join(
            ", " + x for x in casts(w)) + ");")
        o.append("\t\tbreak;")
    o += ["\tdefault:", "\t\tbreak;", "\t}", "}", ""]
    return "\n".join(o)


# ---- CALLS.md ---------------------------------------------------------------

_MD_HEAD = """\
# Intercepted calls

Generated from `faults/calls.def` by `faults/calldef.py`; do not edit.

Faults: the fault classes the sweep applies to the call (crash-model.md);
`errno` means any errno of the plan language may be planned by hand.
Point: the libfiu point the errno faults go through (`crashcheck/...`
points are ours, for calls libfiu does not wrap). Preload: the call is a
C library function the preload wraps (with its 64-bit twin). System
calls: those the syscall backend's supervisor traps and counts as the
call (`mmap` only for a shared mapping of a file, `munmap` only where it
unmaps one); a call with none is seen by the preload alone, and one with
no preload function by the supervisor alone.

| call | libfiu point | faults | class | preload | system calls |
| --- | --- | --- | --- | --- | --- |
"""

_MD_FAULT = {"F_EINTR": "EINTR", "F_SHORT": "short", "F_ENOSPC": "ENOSPC",
             "F_EIO": "EIO", "F_CRASH": "crash", "F_ERRNO": "errno"}


def markdown(t):
    out = [_MD_HEAD]
    for c in t.calls.values():
        wrapped = t.wrap_of(c).hooks != "none"
        pre = ", ".join(f"`{s}`" for s in [c.name] + c.aliases) if wrapped else ""
        sysc = ", ".join(f"`{s}`" for s in c.syscalls)
        faults = " ".join(_MD_FAULT[f] for f in c.flags)
        cls = c.cls[2:].lower()
        out.append(f"| `{c.name}` | `{c.point}` | {faults} | {cls} | {pre} | {sysc} |\n")
    return "".join(out)


GENERATORS = {"wrappers": wrappers, "hooks": hooks, "dispatch": dispatch,
              "md": markdown}


def main(argv):
    if len(argv) != 3 or argv[1] not in GENERATORS:
        sys.stderr.write(f"usage: calldef.py {{{','.join(GENERATORS)}}} calls.def\n")
        return 2
    try:
        table = read(argv[2])
    except OSError as e:
        sys.stderr.write(f"calldef: {argv[2]}: {e.strerror}\n")
        return 2
    except CallsDefError as e:
        sys.stderr.write(f"calldef: {argv[2]}: {e}\n")
        return 2
    sys.stdout.write(GENERATORS[argv[1]](table))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
