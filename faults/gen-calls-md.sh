#!/bin/sh
# Generate CALLS.md from calls.def: the docs list exactly what the library
# intercepts, because both come from the one table.
set -eu
def=${1:-calls.def}

cat <<'HEAD'
# Intercepted calls

Generated from `faults/calls.def` by `faults/gen-calls-md.sh`; do not edit.

Faults: the fault classes the sweep applies to the call (crash-model.md);
`errno` means any errno of the plan language may be planned by hand.
Point: the libfiu point the errno faults go through (`crashcheck/...`
points are ours, for calls libfiu does not wrap).

| call | libfiu point | faults | class | 64-bit twin |
| --- | --- | --- | --- | --- |
HEAD

awk '
/^ALIAS\(/ {
	line = $0
	sub(/^ALIAS\([ \t]*/, "", line)
	sub(/[ \t]*\).*$/, "", line)
	n = split(line, f, /[ \t]*,[ \t]*/)
	if (f[2] in alias)
		alias[f[2]] = alias[f[2]] ", `" f[1] "`"
	else
		alias[f[2]] = "`" f[1] "`"
	next
}
/^CALL\(/ {
	line = $0
	sub(/^CALL\([ \t]*/, "", line)
	sub(/[ \t]*\)[ \t]*$/, "", line)
	n = split(line, f, /[ \t]*,[ \t]*/)
	if (n != 4) {
		print "gen-calls-md: bad CALL line: " $0 > "/dev/stderr"
		exit 1
	}
	gsub(/"/, "", f[2])
	faults = f[3]
	gsub(/F_/, "", faults)
	gsub(/\|/, " ", faults)
	faults = tolower(faults)
	sub(/eintr/, "EINTR", faults); sub(/enospc/, "ENOSPC", faults); sub(/eio/, "EIO", faults)
	cls = tolower(f[4]); sub(/^c_/, "", cls)
	names[++nr] = f[1]; points[nr] = f[2]; fl[nr] = faults; cl[nr] = cls
}
END {
	for (i = 1; i <= nr; i++)
		printf "| `%s` | `%s` | %s | %s | %s |\n", names[i], points[i], fl[i], cl[i], \
			(names[i] in alias) ? alias[names[i]] : ""
}
' "$def"
