"""Confinement: a program under test changes nothing outside its scratch.

A program under fault injection runs its error paths, and those can
remove or overwrite anything its user can; a careful one still writes
where it pleases (augtool keeps ~/.augeas/history in the home the password
database gives, whatever $HOME says). So each run gets a view of the
machine of its own, a private mount namespace in which

- every filesystem is an overlay whose upper directory is ours (View.dir,
  beside the scratch directories): what the program writes or removes
  there lands in it, and the real tree stays as it was;
- /proc, /dev (with an overlay on /dev/shm) and a read-only /sys are
  the machine's; /tmp, /var/tmp and /dev/shm are private to the run like
  the rest, but what the program leaves there is not named (a program
  may keep its temporary files where it likes);
- the directories the run may change (its scratch: the work directory,
  the trace, the snapshots) are the real ones, bound at their own paths.

After the run the upper directories are read: what the program wrote,
made or removed outside its scratch is named in the Run (Run.outside, the
case's "outside" in results.json and its report), and thrown away.

The view is made in the process about to become the program, from steps
this module writes (CRASHCHECK_VIEW; faults/confine.c makes them): by
faults/bin/confine, which a run is exec'd through (and a sweep's fork
server, whose runs are forked in its view), by the preload's fork
server's child where the server has none, and by the supervisor's
child. As root the namespace is a
plain mount namespace; as another user a user namespace owns it (where
the kernel allows unprivileged ones), and since an overlay there cannot
lie on the host's locked mounts, the view is the machine read-only: a
write outside the scratch fails (EROFS) and is not named. Where neither
can be made, or the
helper is not built, crashcheck says so once on the console and runs
programs as before, unconfined.

CRASHCHECK_CONFINE=off turns it off (to debug a program with the host's
view), on requires it (an error where it cannot be had), auto (the
default) takes it where it can.
"""

import os
import select
import shutil
import stat
import subprocess
import sys

from .. import ROOT, UsageError

ENV_MODE = "CRASHCHECK_CONFINE"
VIEW_VAR = "CRASHCHECK_VIEW"
MODES = ("auto", "on", "off")
HELPER = ROOT / "faults" / "bin" / "confine"

# filesystems no overlay goes on: bound read-only instead
NO_OVERLAY = {"proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2",
              "mqueue", "debugfs", "tracefs", "securityfs", "pstore", "bpf",
              "autofs", "binfmt_misc", "configfs", "fusectl", "hugetlbfs",
              "nsfs", "efivarfs", "selinuxfs", "rpc_pipefs", "ramfs"}
# what the view takes from the machine as it is (B, R)
MACHINE = ("/proc", "/sys", "/dev")
# temporary directories: overlays like the rest, private to the run, but
# what a program leaves in them is not named (a program may use /tmp)
PRIVATE = ("/tmp", "/var/tmp", "/dev/shm")


class ConfineError(UsageError):
    """Confinement asked for (CRASHCHECK_CONFINE=on) cannot be had here,
    or the variable is not one of MODES."""


def mode():
    value = os.environ.get(ENV_MODE, "auto") or "auto"
    if value not in MODES:
        raise ConfineError(f"{ENV_MODE}: '{value}' is not one of "
                           f"{', '.join(MODES)}")
    return value


# per process: None (not yet looked at), or (ok, reason)
_checked = None
_said = False
_view = {}          # pid -> this process's View
_atexit = False


def available():
    """Whether runs are confined here: CRASHCHECK_CONFINE is not off and
    a view could be made (tried once per process tree, with /bin/true).
    Where it cannot, the reason is said once on stderr (ConfineError
    when CRASHCHECK_CONFINE=on)."""
    global _checked, _said
    m = mode()
    if m == "off":
        return False
    if _checked is None:
        _checked = _probe()
    ok, reason = _checked
    if not ok:
        if m == "on":
            raise ConfineError(f"{ENV_MODE}=on: {reason}")
        if not _said:
            _said = True
            print(f"crashcheck: programs run unconfined: {reason} "
                  f"(see 'Confinement' in docs/guide.md)", file=sys.stderr)
    return ok


def reason():
    """Why runs are not confined, or "" when they are (or not asked)."""
    return "" if _checked is None or _checked[0] else _checked[1]


def _probe():
    if not HELPER.is_file():
        return False, f"the confine helper is not built: {HELPER} (run 'make')"
    true = shutil.which("true") or "/bin/true"
    from . import runner
    base = runner.scratch_base()
    scratch = runner.make_scratch("crashcheck-probe-")
    view = None
    try:
        view = View(base)
        text = view.steps([str(scratch)], str(scratch))
        env = {"PATH": os.environ.get("PATH", os.defpath), VIEW_VAR: text}
        try:
            done = subprocess.run([str(HELPER), true, "true"], env=env,
                                  cwd=scratch, capture_output=True,
                                  timeout=30)
        except (OSError, subprocess.TimeoutExpired) as e:
            return False, f"the confine helper did not run: {e}"
        if done.returncode != 0:
            lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
            why = lines[-1] if lines else f"exit {done.returncode}"
            return False, why.removeprefix("crashcheck: ")
        return True, ""
    except Unconfinable as e:
        return False, str(e)
    finally:
        if view is not None:
            view.drop()
        shutil.rmtree(scratch, ignore_errors=True)


class Unconfinable(Exception):
    """The machine's mounts cannot be written as a view."""


def _unescape(field):
    """A path of /proc/self/mountinfo, whose space, tab, newline and
    backslash are written as octal escapes."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and i + 4 <= len(field) and \
                field[i + 1:i + 4].isdigit():
            out.append(chr(int(field[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


_MOUNTS = [None, []]        # the last mountinfo read, and mounts() of it
# [pid, descriptor of its /proc/self/mountinfo, the text read after that
# descriptor was opened]: the process's mounts, watched (_unchanged)
_WATCH = [None, None, None]


def _unchanged():
    """Whether this process's mounts are still those mounts() last read.
    A descriptor of /proc/self/mountinfo polls POLLPRI once its mount
    namespace changed after it was opened (proc(5)): one system call,
    where reading and comparing the text took four and 0.3 ms a run
    (cProfile of a sweep). A process forked since (a pool's) opens its
    own and reads."""
    pid, fd, text = _WATCH
    if pid != os.getpid() or text is None or _MOUNTS[0] is not text:
        return False
    poller = select.poll()
    poller.register(fd, select.POLLPRI)
    return not poller.poll(0)


def _watch():
    """A new descriptor watching this process's mounts (_WATCH): opened
    before the text is read, so that a change while it is read is seen
    by the next poll. None where it cannot be had: then every call
    reads."""
    pid, fd, _ = _WATCH
    if pid == os.getpid() and fd is not None:
        os.close(fd)
    _WATCH[:] = [None, None, None]
    try:
        fd = os.open("/proc/self/mountinfo", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    _WATCH[:2] = [os.getpid(), fd]
    return fd


def mounts():
    """[(mount point, filesystem type, read-only)] of this process, in
    mount order. Looked at on every call (a mount may come or go between
    two runs: _unchanged), read and parsed again only when they changed:
    a sweep asks before each of thousands of runs."""
    if _unchanged():
        return list(_MOUNTS[1])
    watching = _watch() is not None
    with open("/proc/self/mountinfo") as fh:
        text = fh.read()
    if watching:
        _WATCH[2] = text
    if text == _MOUNTS[0]:
        if watching:
            _MOUNTS[0] = text
        return list(_MOUNTS[1])
    found = []
    for line in text.split("\n"):
        left, _, right = line.partition(" - ")
        fields = left.split(" ")
        if len(fields) < 6 or not right:
            continue
        found.append((_unescape(fields[4]), right.split(" ", 1)[0],
                      "ro" in fields[5].split(",")))
    _MOUNTS[:] = [text, found]
    return list(found)


def under(path, top):
    """Whether the absolute PATH is TOP or below it (by name)."""
    return path == top or path.startswith(top.rstrip("/") + "/")


def _opt(path):
    """PATH as an overlay option's value: its separators escaped."""
    return path.replace("\\", "\\\\").replace(",", "\\,").replace(":", "\\:")


def _check(path):
    if "\n" in path or "\t" in path:
        raise Unconfinable(f"a path with a tab or newline: {path!r}")
    return path


class View:
    """One process's view directory (in the scratch base): ROOT, where
    the view's root is put together, and an upper and a work directory
    per overlay. Used run after run while the runs write nothing outside
    their scratch; one that did leaves it to be read (outside()) and
    thrown away (drop()), and the next run gets a new one."""

    def __init__(self, base):
        from . import runner
        self.base = str(base)
        self.dir = str(runner.make_scratch("crashcheck-view-"))
        self.root = os.path.join(self.dir, "root")
        os.mkdir(self.root)
        self.overlays = []      # [(mount point, upper directory)]
        self._made = set()
        # the last steps made: ((mountinfo, writable, cwd), the text,
        # its overlays), given again while those are the same
        self._last = None
        # in a user namespace overlayfs keeps its marks in user.*
        # extended attributes (Linux 5.11)
        self.xattr = ",userxattr" if os.geteuid() != 0 else ""

    def _layer(self, n):
        upper = os.path.join(self.dir, f"u{n}")
        work = os.path.join(self.dir, f"w{n}")
        if n not in self._made:
            os.mkdir(upper)
            os.mkdir(work)
            self._made.add(n)
        return upper, work

    def _overlay(self, n, lower, target):
        """The step that mounts layer N over LOWER at TARGET (kept in
        overlays, for what the run wrote there)."""
        upper, work = self._layer(n)
        self.overlays.append((lower, upper))
        return (f"O\t{target}\tlowerdir={_opt(lower)},"
                f"upperdir={_opt(upper)},workdir={_opt(work)}" + self.xattr)

    def steps(self, writable, cwd):
        """The steps of a view (faults/confine.c) in which the directories
        WRITABLE are the real ones and everything else is as described in
        the module's docstring; the program starts in CWD."""
        root = self.root
        self.overlays = []
        writable = [os.path.abspath(os.fspath(p)) for p in writable]
        cwd = os.fspath(cwd)
        self.writable = writable
        if os.geteuid() != 0:
            return self._readonly_steps(writable, cwd)
        found = mounts()
        # a sweep asks case after case for the same view: made once
        # while the mounts, the scratch and the directory are the same
        key = (_MOUNTS[0], tuple(writable), cwd)
        if self._last is not None and self._last[0] == key:
            self.overlays = list(self._last[2])
            return self._last[1]
        skip = [*MACHINE, self.base, self.dir, *writable]
        lines = ["N", "P"]
        n = 0
        for point, fstype, readonly in found:
            _check(point)
            if point != "/" and any(under(point, s) for s in skip):
                continue
            target = root + (point if point != "/" else "")
            if readonly and point != "/":
                # nothing can be written there: itself, as it is (what
                # is mounted below it comes in its own turn)
                lines.append(f"r\t{point}\t{target}")
                continue
            if fstype in NO_OVERLAY or fstype.startswith("fuse") or \
                    not os.path.isdir(point):
                lines.append(f"R\t{point}\t{target}")
                continue
            lines.append(self._overlay(n, point, target))
            n += 1
        # /sys alone: its submounts (a dozen cgroup hierarchies) cost a
        # quarter of the view, and a program under test has no use for them
        lines += [f"B\t/proc\t{root}/proc", f"r\t/sys\t{root}/sys",
                  f"B\t/dev\t{root}/dev"]
        shm = "/dev/shm"
        if os.path.isdir(shm) and not os.path.islink(shm) and \
                not any(under(shm, w) for w in writable):
            # the machine's /dev/shm (other runs' scratch among it) is
            # not the run's to change
            lines.append(self._overlay(n, shm, f"{root}{shm}"))
            n += 1
        lines += self._scratch_steps(writable, cwd)
        text = "\n".join(lines)
        self._last = (key, text, list(self.overlays))
        return text

    def _scratch_steps(self, writable, cwd):
        """The end of every view: WRITABLE bound at their own paths, the
        root taken, CWD the working directory."""
        root, lines = self.root, []
        for path in writable:
            path = _check(os.path.abspath(path))
            parts = path.strip("/").split("/")
            for i in range(1, len(parts)):
                lines.append(f"D\t{root}/{'/'.join(parts[:i])}")
            lines.append(f"D\t{root}{path}")
            lines.append(f"B\t{path}\t{root}{path}")
        lines += [f"V\t{root}", f"C\t{_check(os.path.abspath(cwd))}"]
        return lines

    def _readonly_steps(self, writable, cwd):
        """Not root: in a user namespace, where an overlay cannot have a
        lower layer with mounts below it (the host's are locked there),
        the view is the machine read-only, /tmp included (a program
        and its inputs may live there; a run's TMPDIR is in its
        scratch): a write outside the scratch fails (EROFS) instead of
        landing in an upper directory, and is not named."""
        root = self.root
        _check(root)
        lines = [f"U\t{os.geteuid()}\t{os.getegid()}", "P",
                 f"R\t/\t{root}"]
        lines += self._scratch_steps(writable, cwd)
        return "\n".join(lines)

    def outside(self):
        """What the run wrote outside its scratch: a path a line, as
        "~/.augeas/history", "/etc/x (removed)"; [] when nothing."""
        found = []
        home = os.path.expanduser("~")
        for point, upper in self.overlays:
            for rel, what in _changes(upper, point):
                real = os.path.normpath(os.path.join(point, rel))
                if any(under(w, real) for w in self.writable) or \
                        any(under(real, p) for p in PRIVATE):
                    # a directory made to bind the scratch on, a
                    # temporary file
                    continue
                shown = real
                if home not in ("", "/") and under(real, home):
                    shown = "~" + real[len(home.rstrip("/")):]
                found.append(shown + ("/" if rel.endswith("/") else "")
                             + what)
        return sorted(found)

    def empty(self):
        """Whether every upper directory is empty: the run wrote nothing
        outside its scratch (outside() would find nothing, and reset()
        keep the view). One listing each, where outside() and reset()
        read each one twice and more."""
        for n in self._made:
            try:
                with os.scandir(os.path.join(self.dir, f"u{n}")) as it:
                    if next(it, None) is not None:
                        return False
            except OSError:
                return False
        return True

    def reset(self):
        """After a run: the view again for the next run when the run
        wrote nothing (its upper directories are empty), else False, and
        the caller drops it."""
        for n in self._made:
            try:
                if os.listdir(os.path.join(self.dir, f"u{n}")):
                    return False
            except OSError:
                return False
        return True

    def drop(self):
        _remove(self.dir)


def _remove(path):
    """Remove PATH, ours, whatever the overlay left in it (its work
    directory's mode 000 subdirectory): opened up on the way down."""
    for dirpath, dirnames, _ in os.walk(path):
        for name in dirnames:
            try:
                os.chmod(os.path.join(dirpath, name), 0o700)
            except OSError:
                pass
    shutil.rmtree(path, ignore_errors=True)


def _changes(upper, point):
    """(relative path, "" or " (removed)") of what an overlay's upper
    directory UPPER holds over the real tree at POINT: files, links and
    new directories; whiteouts (a character device 0:0) are removals; a
    directory that exists on the real tree is looked into, not named. A
    file identical to the real one (opened for writing, left as it was)
    is not named."""
    out = []
    for dirpath, dirnames, filenames in os.walk(upper):
        rel_dir = os.path.relpath(dirpath, upper)
        for name in list(dirnames):
            rel = os.path.normpath(os.path.join(rel_dir, name))
            real = os.path.join(point, rel)
            if not os.path.isdir(real) or os.path.islink(real):
                out.append((rel + "/", ""))
                dirnames.remove(name)
        for name in filenames:
            rel = os.path.normpath(os.path.join(rel_dir, name))
            path = os.path.join(upper, rel)
            real = os.path.join(point, rel)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:
                out.append((rel, " (removed)"))
            elif not _same(path, real, st):
                out.append((rel, ""))
    return out


def _same(path, real, st):
    try:
        rst = os.lstat(real)
    except OSError:
        return False
    if stat.S_IFMT(st.st_mode) != stat.S_IFMT(rst.st_mode) or \
            st.st_mode != rst.st_mode or st.st_size != rst.st_size:
        return False
    if stat.S_ISLNK(st.st_mode):
        return os.readlink(path) == os.readlink(real)
    if not stat.S_ISREG(st.st_mode) or st.st_size > (16 << 20):
        return False
    try:
        with open(path, "rb") as a, open(real, "rb") as b:
            return a.read() == b.read()
    except OSError:
        return False


def view():
    """This process's View, made on first use."""
    pid = os.getpid()
    v = _view.get(pid)
    if v is None:
        from . import runner
        global _atexit
        if not _atexit:
            import atexit
            atexit.register(shutdown)
            _atexit = True
        _view.clear()
        v = _view[pid] = View(runner.scratch_base())
    return v


def prepare(writable, cwd):
    """(the view's steps, the View) of a run that may change WRITABLE
    and starts in CWD; (None, None) when runs are not confined here."""
    if not available():
        return None, None
    v = view()
    try:
        return v.steps(writable, cwd), v
    except Unconfinable:
        return None, None


def mounted_under(paths):
    """The mount points of this process at or under PATHS (a run's
    filesystem on its work directory, --fs), in mount order."""
    tops = [os.path.abspath(os.fspath(p)) for p in paths]
    return [point for point, _, _ in mounts()
            if any(under(point, t) for t in tops)]


def current(v):
    """Whether the View V is still this process's (not dropped after a
    run that wrote outside its scratch)."""
    return v is not None and _view.get(os.getpid()) is v


def finish(v):
    """After a confined run: what it wrote outside (View.outside), and
    the View made ready for the next run (or dropped)."""
    if v is None:
        return []
    if v.empty():
        return []
    found = v.outside()
    if not v.reset():
        v.drop()
        _view.pop(os.getpid(), None)
    return found


def shutdown():
    """Remove this process's view directory (at exit)."""
    v = _view.pop(os.getpid(), None)
    if v is not None:
        v.drop()
