"""What a program's stderr says about a failure: whether it names the
error and the call (stderr_names_failure, noticed), and the line that
does (naming_line)."""

import errno as errno_mod
import os
import re


def strerror(name):
    """glibc's text for an errno name ("EIO" -> "Input/output error")."""
    number = getattr(errno_mod, name, None) if name else None
    return os.strerror(number) if isinstance(number, int) else (name or "")


def stderr_names_failure(stderr, errno_name, call=None):
    """Whether a failure message says what failed.

    True when `stderr` holds strerror's text for `errno_name` (case
    insensitive; the symbolic name, e.g. "ENOSPC", is accepted too) and,
    when `call` is given ("fsync" or "fsync#1"), that call's name as a word.
    Built-in workloads print "fsync 'target.tmp': Input/output error".
    """
    text = stderr.lower()
    names = strerror(errno_name).lower() in text or \
        re.search(rf"\b{re.escape(errno_name.lower())}\b", text) is not None
    if not names:
        return False
    if call:
        base = call.split("#")[0]
        return re.search(rf"\b{re.escape(base.lower())}\b", text) is not None
    return True


# A call's name as a program may write it in its own message: "fclose"
# fails inside "close", "fdatasync" is a "sync" to vim ("E667: Fsync
# failed").
_CALL_ALIASES = {
    "fclose": ("close",), "fflush": ("flush", "write"), "fwrite": ("write",),
    "fputs": ("write",), "fputc": ("write",), "fprintf": ("write",),
    "pwrite": ("write",), "writev": ("write",), "pwritev": ("write",),
    "pwritev2": ("write",), "fdatasync": ("fsync", "sync"),
    "fsync": ("sync",), "msync": ("sync",), "syncfs": ("sync",),
    "renameat": ("rename",), "renameat2": ("rename",),
    "unlinkat": ("unlink", "remove", "delete"), "unlink": ("remove", "delete"),
    "ftruncate": ("truncate",), "posix_fallocate": ("fallocate",),
    "openat": ("open",), "creat": ("open", "create"), "fopen": ("open",),
}
_FAILURE_WORDS = re.compile(r"\b(fail\w*|error\w*|cannot|can't|unable|could "
                            r"not|couldn't|not written|lost)\b")


def noticed(stderr, errno_name, call, strict=False):
    """Whether a program that went on after a fault said so on stderr.

    The built-in corpus (strict) must name the call and the error
    (stderr_names_failure). Any other program has noticed when its stderr
    names the error (strerror's text or the symbol), or names the call
    (or a word for it, _CALL_ALIASES) on a line that says something
    failed: "E667: Fsync failed", "close failed in file object
    destructor".
    """
    if not stderr or not errno_name:
        return False
    if strict:
        return stderr_names_failure(stderr, errno_name, call)
    if stderr_names_failure(stderr, errno_name):
        return True
    if not call:
        return False
    base = call.split("#")[0]
    words = (base,) + _CALL_ALIASES.get(base, ())
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, words)) + r")", re.I)
    return any(pattern.search(line) and _FAILURE_WORDS.search(line.lower())
               for line in stderr.splitlines())


def naming_line(stderr, errno_name, call):
    """The first stderr line that says what failed (for a note)."""
    for line in (stderr or "").splitlines():
        if line.strip() and noticed(line, errno_name, call):
            return line.strip()
    return first_line(stderr)


def first_line(text):
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()
    return ""
