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
points are ours, for calls libfiu does not wrap). Preload: the call is a
C library function the preload wraps (with its 64-bit twin). System
calls: those the syscall backend's supervisor traps and counts as the
call (`mmap` only for a shared mapping of a file, `munmap` only where it
unmaps one); a call with none is seen by the preload alone, and one with
no preload function by the supervisor alone.

| call | libfiu point | faults | class | preload | system calls |
| --- | --- | --- | --- | --- | --- |
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
/^SYSCALL\(/ {
	line = $0
	sub(/^SYSCALL\([ \t]*/, "", line)
	sub(/[ \t]*\).*$/, "", line)
	n = split(line, f, /[ \t]*,[ \t]*/)
	if (f[2] in sys)
		sys[f[2]] = sys[f[2]] ", `" f[1] "`"
	else
		sys[f[2]] = "`" f[1] "`"
	next
}
/^WRAP\(/ {
	line = $0
	sub(/^WRAP\([ \t]*/, "", line)
	n = split(line, f, /[ \t]*,[ \t]*/)
	if ($0 ~ /,[ \t]*none[ \t]*\)[ \t]*$/)
		nowrap[f[1]] = 1
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
	for (i = 1; i <= nr; i++) {
		pre = (names[i] in nowrap) ? "" : "`" names[i] "`"
		if (pre != "" && (names[i] in alias))
			pre = pre ", " alias[names[i]]
		printf "| `%s` | `%s` | %s | %s | %s | %s |\n", names[i], points[i], fl[i], cl[i], \
			pre, (names[i] in sys) ? sys[names[i]] : ""
	}
}
' "$def"
