#!/usr/bin/python3
"""Write the wrappers of libcrashcheck.so from calls.def's WRAP rows.

    gen-wrappers.py calls.def > lib/wrappers.c

Every intercepted call goes through the same steps (preload.c's header):
pass straight through when a wrapper is already active, count the call
and decide the plan's rule, carry out a crash, arm an errno fault, call
down, trace the call with its snapshot. Only what the call works on and
what it may have changed differ from call to call: those are the hooks
a WRAP row names, written in preload.c. The generated file is included
at the end of preload.c, so the hooks are static functions the compiler
inlines into each wrapper.

A row whose symbol has no CALL or ALIAS row, a CALL or ALIAS with no
WRAP row, or a row this script cannot read, stops the build with one
line naming it.
"""
import re
import sys

CALL = re.compile(r'^CALL\(\s*(\w+)\s*,\s*"[^"]*"\s*,\s*([\w|]+)\s*,\s*\w+\s*\)\s*$')
ALIAS = re.compile(r'^ALIAS\(\s*(\w+)\s*,\s*(\w+)\s*\)\s*$')
WRAP = re.compile(r'^WRAP\(\s*(\w+)\s*,\s*([\w ]+?\**)\s*,\s*\(([^()]*)\)\s*,'
                  r'\s*(\w+)\s*,\s*(\w+)\s*\)\s*$')

# fails: how the call says it failed, what an injected errno makes it
# return, and the errno the trace gives it (E is the call's errno)
FAILS = {
    "neg": ("ret < 0", "(errno = inj, -1)"),
    "eof": ("ret == EOF", "(errno = inj, EOF)"),
    "null": ("!ret", "(errno = inj, NULL)"),
    "mapfailed": ("ret == MAP_FAILED", "(errno = inj, MAP_FAILED)"),
    "items": ("size && ret < nmemb", "(errno = inj, 0)"),
    "errno": (None, "inj"),
    "void": (None, None),
}


def die(msg):
    sys.exit(f"gen-wrappers: {msg}")


def params_of(text, sym):
    """[(declaration, name)] of a parameter list, and the name of the
    variadic mode (open's "... mode_t mode") or None."""
    if text.strip() == "void":
        return [], None
    out, va = [], None
    for p in (s.strip() for s in text.split(",")):
        if p.startswith("..."):
            rest = p[3:].strip()
            if rest != "mode_t mode":
                die(f"{sym}: a variadic parameter list must end in "
                    f"'... mode_t mode', not '{p}'")
            va = "mode"
            continue
        m = re.match(r"^(.*?[\s*])(\w+)$", p)
        if not m:
            die(f"{sym}: cannot read parameter '{p}'")
        out.append((p, m.group(2)))
    return out, va


def wrapper(sym, call, short, ret_type, params, va, fails, hooks):
    decls = ", ".join(d for d, _ in params) + (", ..." if va else "")
    names = [n for _, n in params] + ([va] if va else [])
    args = ", ".join(names)
    hargs = "".join(", " + n for n in names)
    void = fails == "void"
    failed, injected = FAILS[fails]
    last = params[-1][1] if params else None
    o = []
    w = o.append
    w(f"DECLARE_NEXT({sym});\n")
    w(f"{ret_type} {sym}({decls or 'void'})")
    w("{")
    w("\tstruct cc_rec r;")
    if not void:
        w(f"\t{ret_type} ret;")
    w("\tint inj, e;")
    if va:
        w(f"\tmode_t {va};")
    w("")
    if va:
        w(f"\tOPEN_MODE({last}, {last}, {va});")
    if void:
        w("\tif (!enter()) {")
        w(f"\t\tREAL({sym})({args});")
        w("\t\treturn;")
        w("\t}")
    else:
        w("\tif (!enter())")
        w(f"\t\treturn REAL({sym})({args});")
    w("\te = errno;")
    w(f"\trec_init(&r, CALL_{call});")
    w("\tr.at = __builtin_return_address(0);")
    w(f"\t{hooks}_describe(&r{hargs});")
    w("\tpre(&r);")
    if short:
        w(f"\t{hooks}_prepare(&r" + "".join(", &" + n for n in names) + ");")
    w("\tinj = arm(&r);")
    w("\terrno = e;")
    if void:
        w("\t(void)inj;\t/* a call that returns nothing takes no errno */")
        w(f"\tREAL({sym})({args});")
    else:
        w(f"\tret = inj ? {injected} : REAL({sym})({args});")
    w("\te = errno;")
    w("\tdisarm(&r);")
    if fails == "mapfailed":
        w("\tr.ret = ret == MAP_FAILED ? -1 : (long long)(uintptr_t)ret;")
    elif fails not in ("null", "void"):
        w("\tr.ret = ret;")
    w(f"\t{hooks}_after(&r{'' if void else ', ret'}{hargs});")
    if void:
        err = "0"
    elif fails == "errno":
        err = "ret"
    else:
        err = f"{failed} ? e : 0"
    w(f"\tfinish(&r, {err}, e);")
    if short:
        w("\tif (r.tofree)\n\t\tfree(r.tofree);")
    if not void:
        w("\treturn ret;")
    w("}\n")
    return "\n".join(o)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen-wrappers.py calls.def")
    calls, aliases, wraps = {}, {}, []
    with open(sys.argv[1]) as f:
        for lineno, line in enumerate(f, 1):
            if line.startswith("CALL("):
                m = CALL.match(line) or die(f"line {lineno}: bad CALL row")
                calls[m.group(1)] = "F_SHORT" in m.group(2).split("|")
            elif line.startswith("ALIAS("):
                m = ALIAS.match(line) or die(f"line {lineno}: bad ALIAS row")
                aliases[m.group(1)] = m.group(2)
            elif line.startswith("WRAP("):
                m = WRAP.match(line) or die(f"line {lineno}: bad WRAP row")
                wraps.append((lineno,) + m.groups())
    seen = set()
    out = ["/* Generated from calls.def by gen-wrappers.py; do not edit. */\n"]
    for lineno, sym, ret_type, ptext, fails, hooks in wraps:
        call = sym if sym in calls else aliases.get(sym)
        if call is None:
            die(f"line {lineno}: WRAP {sym}: no CALL or ALIAS row names it")
        if fails not in FAILS:
            die(f"line {lineno}: WRAP {sym}: fails '{fails}' is none of "
                f"{', '.join(FAILS)}")
        if sym in seen:
            die(f"line {lineno}: WRAP {sym} twice")
        seen.add(sym)
        if hooks in ("manual", "none"):
            continue
        params, va = params_of(ptext, sym)
        out.append(wrapper(sym, call, calls[call], ret_type, params, va,
                           fails, hooks))
    missing = [s for s in list(calls) + list(aliases) if s not in seen]
    if missing:
        die(f"no WRAP row for {', '.join(missing)}")
    sys.stdout.write("\n".join(out))


if __name__ == "__main__":
    main()
