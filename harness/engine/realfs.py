"""The real kernel as a judge of power loss: a loop-mounted ext4, XFS or
Btrfs under the program, crashed at a crash point and mounted again.

The explorer (harness/judging/explorer.py) builds the states a power cut
could leave from a model of the filesystem. Here the filesystem itself
decides: the program runs with its work directory on a fresh filesystem
of the chosen type, is killed where the crash point is (the `crash-after`
action of the plan language, faults/plan.c), and the filesystem is cut
off from its disk at once:

- ext4 and XFS: the shutdown ioctl (FS_IOC_SHUTDOWN, which XFS calls
  XFS_IOC_GOINGDOWN, 0x8004587d) with the NOLOGFLUSH flag (2), as
  xfstests' godown does: the journal is not flushed, nothing more is
  written, the disk holds what had reached it. Unmounted and mounted
  again, the filesystem replays its journal, as after a power cut.
- Btrfs refuses that ioctl (ENOTTY). Its disk, the loop device's backing
  file, is copied while nothing is in flight: the device's
  /sys/block/loopN/inflight reads 0 0 and its counts of completed
  writes, discards and flushes are the same before and after the copy,
  else the copy is taken again.
  A copy made so holds every write the device completed and none it had
  not started: the disk as a power cut at that instant would leave it
  (Btrfs orders its commits with flushes; a device with no volatile
  cache keeps every completed write). The copy is mounted on a loop
  device of its own, which replays the log tree.

Each run gets a copy of a pristine image (Images: mkfs once per sweep,
then, per combo, the initial work directory laid in and unmounted, so
it is durable), sparse (SEEK_DATA/SEEK_HOLE and copy_file_range) or a
reflink where the scratch's filesystem has them. The filesystem's root
holds `work/` (bound onto the run's scratch work directory, so paths are
the scratch's and no lost+found shows) and `other`, a file of the
harness's own, fsynced to push the kernel forward before a crash (a real
case's second state, Disk.sync_other; scripts/validate-models).

Mounts happen in a private mount namespace (private_namespace: the
crashcheck process and the processes it forks after), invisible to the
rest of the machine; loop devices are attached with LO_FLAGS_AUTOCLEAR,
so that one is released when its last mount and descriptor go. When
every crashcheck process is gone, killed or not, the namespace goes, its
mounts with it, and so do the loop devices (tests/test_realfs.py kills a
sweep and checks).

Root only (mount, loop devices): check() says why not, in one line.
"""

import ctypes
import errno
import fcntl
import hashlib
import os
import shutil
import stat
import struct
import subprocess
import time
from pathlib import Path

FILESYSTEMS = ("ext4", "xfs", "btrfs")
# a finding's model under this mode: "ext4-real"
SUFFIX = "-real"
MODELS = tuple(fs + SUFFIX for fs in FILESYSTEMS)

# The image of every run: sparse, so its size costs nothing until
# written; large enough for the corpus's biggest payloads and the
# applications' databases, and for XFS's 300 MB floor.
IMAGE_SIZE = 1 << 30

# the fs root inside a run's scratch, the run's image, and the copy a
# Btrfs crash is mounted from
MNT = "fs"
IMAGE = "fs.img"
CRASH_IMAGE = "fs-crash.img"
# in the fs root: the program's work directory, and the harness's own file
WORK = "work"
OTHER = "other"

MKFS = {
    # lazy_itable_init=0: mke2fs writes the inode tables (zeros, made
    # holes after), and no ext4lazyinit thread writes them later, under
    # a run
    "ext4": ["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"],
    "xfs": ["mkfs.xfs", "-q", "-f"],
    "btrfs": ["mkfs.btrfs", "-q", "-f"],
}
PACKAGE = {"ext4": "e2fsprogs", "xfs": "xfsprogs", "btrfs": "btrfs-progs"}
# Every image of a sweep is a copy of one mkfs, so they share a UUID:
# XFS refuses a second mount of one unless told not to look (Btrfs gives
# each a temporary fsid, ext4 does not care).
MOUNT_OPTIONS = {"ext4": "", "xfs": "nouuid", "btrfs": ""}


def mount_options(fs, extra=""):
    """The options FS is mounted with: ours, then EXTRA's."""
    return ",".join(o for o in (MOUNT_OPTIONS[fs], extra) if o)

# <linux/fs.h>, <linux/loop.h>, <sched.h>, <sys/mount.h>
FS_IOC_SHUTDOWN = 0x8004587D
SHUTDOWN_NOLOGFLUSH = 2
LOOP_CTL_GET_FREE = 0x4C82
LOOP_CONFIGURE = 0x4C0A
LO_FLAGS_AUTOCLEAR = 4
FICLONE = 0x40049409
CLONE_NEWNS = 0x00020000
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
MNT_DETACH = 2

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                        ctypes.c_ulong, ctypes.c_char_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
_libc.unshare.argtypes = [ctypes.c_int]


class Unavailable(Exception):
    """This mode cannot run here; str() is the one-line reason."""

    def __init__(self, reason):
        self.reason = " ".join(str(reason).split())
        super().__init__(self.reason)


class RealFsError(Exception):
    """A mount, an unmount or a loop device failed under a run: the case
    cannot be judged (harness-error), and says why in one line."""


def model_of(fs):
    """The model name a case judged on FS's real kernel carries."""
    return fs + SUFFIX


def fs_of(model):
    """The filesystem behind a model name, or None for a crash model."""
    if isinstance(model, str) and model.endswith(SUFFIX):
        fs = model[:-len(SUFFIX)]
        if fs in FILESYSTEMS:
            return fs
    return None


# ------------------------------------------------------------ can we?

def _kernel_has(fs):
    try:
        with open("/proc/filesystems") as fh:
            return any(line.split()[-1] == fs for line in fh if line.strip())
    except OSError:
        return False


def check(fs):
    """Raise Unavailable with the reason when FS cannot be mounted here."""
    if fs not in FILESYSTEMS:
        raise Unavailable(f"unknown filesystem '{fs}' (one of "
                          f"{', '.join(FILESYSTEMS)})")
    if os.geteuid() != 0:
        raise Unavailable(f"needs root to mount a loop device (running as "
                          f"uid {os.geteuid()})")
    if not os.path.exists("/dev/loop-control"):
        raise Unavailable("/dev/loop-control is missing: no loop devices "
                          "here (modprobe loop)")
    if shutil.which(MKFS[fs][0]) is None:
        raise Unavailable(f"{MKFS[fs][0]} not found (install {PACKAGE[fs]})")
    if not _kernel_has(fs):
        # a module not loaded yet: mount(8) would load it, mount(2) not
        subprocess.run(["modprobe", "-q", fs], capture_output=True)
        if not _kernel_has(fs):
            raise Unavailable(f"this kernel has no {fs} (not in "
                              "/proc/filesystems, modprobe failed)")


_private = False


def private_namespace():
    """Move this process into a mount namespace of its own, every mount
    in it private: what it (and the processes it forks from now on)
    mounts is seen by no one else, and is gone when the last of them is.
    Once per process; Unavailable when the kernel refuses."""
    global _private
    if _private:
        return
    if _libc.unshare(CLONE_NEWNS) != 0:
        e = ctypes.get_errno()
        raise Unavailable(f"unshare(CLONE_NEWNS): {os.strerror(e)}")
    if _libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        e = ctypes.get_errno()
        raise Unavailable(f"mount --make-rprivate /: {os.strerror(e)}")
    _private = True


# ------------------------------------------------------------ images

def make_blank(fs, path, size=IMAGE_SIZE):
    """mkfs FS into a new sparse file PATH; its runs of zeros made holes,
    so that a copy costs what the filesystem wrote."""
    path = os.fspath(path)
    with open(path, "wb") as fh:
        fh.truncate(size)
    proc = subprocess.run(MKFS[fs] + [path], capture_output=True, text=True)
    if proc.returncode != 0:
        why = (proc.stderr or proc.stdout).strip().splitlines()
        raise RealFsError(f"{MKFS[fs][0]} failed: "
                          f"{why[-1] if why else proc.returncode}")
    dig_holes(path)


def dig_holes(path, chunk=1 << 16):
    """Punch a hole where PATH reads a whole CHUNK of zeros (what
    fallocate --dig-holes does): mkfs.xfs writes its 64 MiB log out in
    zeros."""
    zero = bytes(chunk)
    fd = os.open(path, os.O_RDWR)
    try:
        size = os.fstat(fd).st_size
        for start, end in _extents(fd, size):
            off = start - start % chunk
            while off < end:
                n = min(chunk, size - off)
                if os.pread(fd, n, off) == zero[:n]:
                    _punch(fd, off, n)
                off += chunk
    finally:
        os.close(fd)


_libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long,
                            ctypes.c_long]
FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE = 1, 2


def _punch(fd, off, n):
    if _libc.fallocate(fd, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE,
                       off, n) != 0:
        e = ctypes.get_errno()
        if e not in (errno.EOPNOTSUPP, errno.ENOSYS):
            raise OSError(e, os.strerror(e))


def _extents(fd, size):
    """(start, end) of each run of data in the file FD of SIZE bytes."""
    off = 0
    while off < size:
        try:
            start = os.lseek(fd, off, os.SEEK_DATA)
        except OSError as e:
            if e.errno == errno.ENXIO:
                return
            raise
        end = os.lseek(fd, start, os.SEEK_HOLE)
        yield start, end
        off = end


def copy_image(src, dst):
    """DST, a new file with SRC's content: a reflink where the filesystem
    has them, else a copy of its data alone (its holes stay holes)."""
    sfd = os.open(src, os.O_RDONLY | os.O_CLOEXEC)
    try:
        dfd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
                      0o600)
        try:
            try:
                fcntl.ioctl(dfd, FICLONE, sfd)
                return
            except OSError:
                pass
            size = os.fstat(sfd).st_size
            os.ftruncate(dfd, size)
            for start, end in _extents(sfd, size):
                off = start
                while off < end:
                    n = os.copy_file_range(sfd, dfd, end - off, off, off)
                    if n <= 0:
                        raise OSError(errno.EIO, f"copy_file_range stopped at {off}")
                    off += n
        finally:
            os.close(dfd)
    finally:
        os.close(sfd)


# ------------------------------------------------------------ loop, mount

def attach(image):
    """A loop device on IMAGE: (its path, an open descriptor of it). The
    device goes when the descriptor is closed and no mount holds it
    (LO_FLAGS_AUTOCLEAR), whoever closes it, a killed process too."""
    ctl = os.open("/dev/loop-control", os.O_RDWR | os.O_CLOEXEC)
    try:
        for _ in range(64):
            n = fcntl.ioctl(ctl, LOOP_CTL_GET_FREE)
            dev = f"/dev/loop{n}"
            lfd = os.open(dev, os.O_RDWR | os.O_CLOEXEC)
            ffd = os.open(image, os.O_RDWR | os.O_CLOEXEC)
            # struct loop_config: fd, block_size, loop_info64 (lo_flags
            # at 52), 64 bytes reserved
            info = bytearray(232)
            struct.pack_into("I", info, 52, LO_FLAGS_AUTOCLEAR)
            try:
                fcntl.ioctl(lfd, LOOP_CONFIGURE,
                            struct.pack("II", ffd, 0) + bytes(info) + bytes(64))
            except OSError as e:
                os.close(lfd)
                if e.errno == errno.EBUSY:
                    continue        # another process took it first
                raise RealFsError(f"loop device {dev} on '{image}': "
                                  f"{e.strerror}") from None
            finally:
                os.close(ffd)
            return dev, lfd
        raise RealFsError("no free loop device after 64 tries")
    finally:
        os.close(ctl)


def _mount(source, target, fstype, flags=0, options=""):
    if _libc.mount(os.fsencode(source), os.fsencode(target),
                   fstype.encode() if fstype else None, flags,
                   options.encode() if options else None) != 0:
        e = ctypes.get_errno()
        raise RealFsError(f"mount {fstype or 'bind'} {source} on '{target}': "
                          f"{os.strerror(e)}")


def _umount(target):
    """Unmount TARGET; lazily when something still holds it (a process
    of the program's that the runner killed and the kernel has not yet
    reaped)."""
    t = os.fsencode(target)
    for _ in range(50):
        if _libc.umount2(t, 0) == 0:
            return
        e = ctypes.get_errno()
        if e == errno.EINVAL:
            return      # not mounted
        if e != errno.EBUSY:
            raise RealFsError(f"umount '{target}': {os.strerror(e)}")
        time.sleep(0.01)
    if _libc.umount2(t, MNT_DETACH) != 0:
        e = ctypes.get_errno()
        raise RealFsError(f"umount -l '{target}': {os.strerror(e)}")


def _loop_stat(dev):
    """What the block device DEV completed (writes and the sectors they
    wrote, discards and theirs, flushes: /sys/block/NAME/stat), and the
    requests it has in flight."""
    name = os.path.basename(dev)
    with open(f"/sys/block/{name}/stat") as fh:
        f = [int(x) for x in fh.read().split()]
    with open(f"/sys/block/{name}/inflight") as fh:
        flight = sum(int(x) for x in fh.read().split())
    return (f[4], f[6], f[11], f[13], f[15]), flight


class Disk:
    """One run's filesystem: a copy of IMAGE (a pristine image, Images)
    at SCRATCH/fs.img, attached to a loop device and mounted at
    SCRATCH/fs, its work/ bound onto the run's work directory WORKDIR.

        with Disk("ext4", pristine, scratch, scratch / "work") as disk:
            ... run the program in WORKDIR ...
            top = disk.crash()      # the tree after a power cut, replayed
            ... read top ...
    """

    def __init__(self, fs, image, scratch, workdir, options=""):
        self.fs = fs
        self.pristine = os.fspath(image)
        self.scratch = os.fspath(scratch)
        self.workdir = os.fspath(workdir)
        self.options = mount_options(fs, options)
        self.image = os.path.join(self.scratch, IMAGE)
        self.mnt = os.path.join(self.scratch, MNT)
        self.dev = None
        self._lfd = None
        self._mounted = []          # mount points, innermost last
        self._images = []           # image files of ours to remove

    def __enter__(self):
        try:
            self.open()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()

    def open(self):
        os.makedirs(self.mnt, exist_ok=True)
        for p in (self.image, os.path.join(self.scratch, CRASH_IMAGE)):
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass
        copy_image(self.pristine, self.image)
        self._images.append(self.image)
        self._attach_mount(self.image)
        os.makedirs(self.workdir, exist_ok=True)
        _mount(os.path.join(self.mnt, WORK), self.workdir, None, MS_BIND)
        self._mounted.append(self.workdir)

    def _attach_mount(self, image):
        self.dev, self._lfd = attach(image)
        _mount(self.dev, self.mnt, self.fs, 0, self.options)
        self._mounted.append(self.mnt)

    @property
    def top(self):
        """The work directory as the filesystem holds it (after crash(),
        the replayed one)."""
        return os.path.join(self.mnt, WORK)

    def _unmount_all(self):
        while self._mounted:
            _umount(self._mounted[-1])
            self._mounted.pop()
        self._released()

    def _released(self, seconds=5.0):
        """Wait until the filesystem is gone from the kernel, not only
        from our mount table: a confined run's mount namespace held a
        copy of its mount (harness/engine/confine.py), and the kernel may
        let go of that a moment after the run's last process is reaped.
        Mounted again before then, the device gives back the old
        superblock, shut down (EIO). /sys/fs/FS/DEV lives as long as the
        superblock does (ext4, XFS)."""
        if self.dev is None:
            return
        gone = os.path.join("/sys/fs", self.fs, os.path.basename(self.dev))
        deadline = time.monotonic() + seconds
        while os.path.exists(gone) and time.monotonic() < deadline:
            time.sleep(0.001)

    def _detach(self):
        if self._lfd is not None:
            os.close(self._lfd)
            self._lfd = None

    def sync_other(self):
        """Write a byte to the harness's own file beside work/ and fsync
        it: under ext4's and XFS's one journal, that commits every
        change made before it. Returns its path and inode (the call the
        model validation tells the models about)."""
        path = os.path.join(self.mnt, OTHER)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
        try:
            os.write(fd, b".")
            os.fsync(fd)
            return path, os.fstat(fd).st_ino
        finally:
            os.close(fd)

    def crash(self):
        """Cut the filesystem off from its disk now, unmount it, mount
        what the disk held (the journal or log tree replayed): returns
        the path of work/ in it."""
        if self.fs == "btrfs":
            self._crash_copy()
        else:
            fd = os.open(self.mnt, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                fcntl.ioctl(fd, FS_IOC_SHUTDOWN,
                            struct.pack("I", SHUTDOWN_NOLOGFLUSH))
            except OSError as e:
                raise RealFsError(f"shutdown ioctl on {self.fs}: "
                                  f"{e.strerror}") from None
            finally:
                os.close(fd)
            self._unmount_all()
            _mount(self.dev, self.mnt, self.fs, 0, self.options)
            self._mounted.append(self.mnt)
        return self.top

    def _crash_copy(self, tries=200):
        """Btrfs: the disk copied while no write is in flight and none
        completes during the copy (module docstring), then mounted."""
        copy = os.path.join(self.scratch, CRASH_IMAGE)
        for _ in range(tries):
            before, flight = _loop_stat(self.dev)
            if flight:
                time.sleep(0.001)
                continue
            try:
                os.unlink(copy)
            except FileNotFoundError:
                pass
            copy_image(self.image, copy)
            after, flight = _loop_stat(self.dev)
            if after == before and not flight:
                break
        else:
            raise RealFsError(f"the disk of {self.dev} never stood still "
                              f"for a copy in {tries} tries")
        self._images.append(copy)
        self._unmount_all()
        self._detach()
        self._attach_mount(copy)

    def copy_out(self):
        """Leave the run's work directory as a plain directory holding
        what the program left in it (what a read sees, not what a crash
        keeps), and release the filesystem."""
        _umount(self.workdir)
        self._mounted.remove(self.workdir)
        copy_tree(self.top, self.workdir)
        self.close()

    def close(self):
        """Unmount, release the loop device, remove the images. Safe to
        call twice, and after a failure half way."""
        try:
            self._unmount_all()
        finally:
            self._detach()
            for p in self._images:
                try:
                    os.unlink(p)
                except FileNotFoundError:
                    pass
            self._images = []


def copy_tree(src, dst):
    """SRC's entries into the existing directory DST: directories,
    regular files (their bytes), symbolic links; hard links stay links
    to one copy."""
    seen = {}
    for root, dirs, files in os.walk(src):
        rel = os.path.relpath(root, src)
        out = dst if rel == "." else os.path.join(dst, rel)
        for d in list(dirs):
            s = os.path.join(root, d)
            if os.path.islink(s):
                os.symlink(os.readlink(s), os.path.join(out, d))
                dirs.remove(d)
            else:
                os.mkdir(os.path.join(out, d))
                shutil.copystat(s, os.path.join(out, d))
        for f in files:
            s, t = os.path.join(root, f), os.path.join(out, f)
            st = os.lstat(s)
            if stat.S_ISLNK(st.st_mode):
                os.symlink(os.readlink(s), t)
            elif stat.S_ISREG(st.st_mode):
                if st.st_nlink > 1 and st.st_ino in seen:
                    os.link(seen[st.st_ino], t)
                    continue
                shutil.copy2(s, t)
                seen[st.st_ino] = t


class Images:
    """The pristine images of one sweep, in DIRECTORY: one blank
    filesystem per type, made once (mkfs), and per combo a copy of it
    with the combo's starting work directory laid in and unmounted.
    Made by whichever process first asks, under an atomic rename, so
    that processes of a pool asking at once agree."""

    def __init__(self, directory, fs, options=""):
        self.dir = Path(directory)
        self.fs = fs
        self.options = mount_options(fs, options)

    @property
    def blank(self):
        path = self.dir / f"blank-{self.fs}.img"
        if not path.exists():
            self.dir.mkdir(parents=True, exist_ok=True)
            tmp = self.dir / f".blank-{self.fs}-{os.getpid()}.img"
            try:
                make_blank(self.fs, tmp)
                os.rename(tmp, path)
            finally:
                if tmp.exists():
                    tmp.unlink()
        return path

    def pristine(self, name, lay):
        """The image of combo NAME: the blank one with LAY(work) run on
        its work/ directory (the target, the start tree, TMPDIR) and
        the harness's `other` file beside it, all durable."""
        path = self.dir / f"{name}.{self.fs}.img"
        if path.exists():
            return path
        blank = self.blank
        tmp = self.dir / f".{name}-{os.getpid()}"
        tmp.mkdir(parents=True, exist_ok=True)
        image = tmp / IMAGE
        mnt = tmp / MNT
        mnt.mkdir()
        lfd = None
        mounted = False
        try:
            copy_image(blank, image)
            dev, lfd = attach(image)
            _mount(dev, mnt, self.fs, 0, self.options)
            mounted = True
            lost = mnt / "lost+found"
            if lost.is_dir():
                lost.rmdir()    # ext4's, not part of any state
            (mnt / WORK).mkdir()
            (mnt / OTHER).write_bytes(b"")
            lay(mnt / WORK)
            _umount(mnt)
            mounted = False
            os.close(lfd)
            lfd = None
            os.rename(image, path)
        finally:
            if mounted:
                _umount(mnt)
            if lfd is not None:
                os.close(lfd)
            shutil.rmtree(tmp, ignore_errors=True)
        return path


# ------------------------------------------------------------ the state

def read_tree(top):
    """(files {path: bytes}, dirs [path], links {path: target}) under
    TOP, paths relative to it with '/'; fifos, sockets and devices are
    left out, as the recorder leaves them."""
    files, dirs, links = {}, [], {}
    for root, dnames, fnames in os.walk(top):
        rel = os.path.relpath(root, top)
        pre = "" if rel == "." else rel + "/"
        for d in list(dnames):
            p = os.path.join(root, d)
            if os.path.islink(p):
                links[pre + d] = os.readlink(p)
                dnames.remove(d)
            else:
                dirs.append(pre + d)
        for f in fnames:
            p = os.path.join(root, f)
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                links[pre + f] = os.readlink(p)
            elif stat.S_ISREG(st.st_mode):
                with open(p, "rb") as fh:
                    files[pre + f] = fh.read()
    return files, sorted(dirs), links


class RealState:
    """A crash state the real kernel left: what the oracle judges (the
    explorer's CrashState's attributes: label, target, files, dirs,
    links, claimed, why, rule, persisted, lost, digest())."""

    def __init__(self, label, files, dirs, links, target_name, why,
                 rule="", persisted=(), lost=()):
        self.label = label
        self._files = files
        self.dirs = tuple(dirs)
        self.links = dict(links)
        self._target = target_name
        self.why = why
        self.rule = rule
        self.persisted = list(persisted)
        self.lost = list(lost)
        self.claimed = False

    @property
    def files(self):
        return dict(self._files)

    @property
    def target(self):
        return self._files.get(self._target)

    @property
    def key(self):
        return tree_key(self._files, self.dirs, self.links)

    def digest(self):
        return tree_digest(self._files, self.dirs, self.links)

    def copy(self):
        c = RealState(self.label, self._files, self.dirs, self.links,
                      self._target, self.why, self.rule, self.persisted,
                      self.lost)
        c.claimed = self.claimed
        return c

    def __repr__(self):
        return f"RealState({self.label!r}, files={sorted(self._files)})"


def tree_key(files, dirs, links):
    """A tree's identity, to compare a real state with a model's:
    sorted (kind, path, content digest) triples."""
    out = [("d", d, b"") for d in dirs]
    out += [("l", p, os.fsencode(t)) for p, t in links.items()]
    out += [("f", p, hashlib.blake2b(data, digest_size=16).digest())
            for p, data in files.items()]
    return tuple(sorted(out))


def tree_digest(files, dirs, links):
    """tree_key as 32 hex digits."""
    h = hashlib.blake2b(digest_size=16)
    for kind, path, d in tree_key(files, dirs, links):
        h.update(kind.encode() + b"\0" + os.fsencode(path) + b"\0" + d + b"\0")
    return h.hexdigest()


# how each filesystem is cut off from its disk (Disk.crash), in words
HOW = {"ext4": "the shutdown ioctl with NOLOGFLUSH",
       "xfs": "the shutdown ioctl with NOLOGFLUSH",
       "btrfs": "its disk copied while no write was in flight"}

# The crash model that says what each filesystem keeps (docs/crash-model.md,
# "Filesystem models"): a real state is explained by the model's state
# that is the same tree, where there is one.
COMPANION = {"ext4": "ext4-ordered", "xfs": "xfs", "btrfs": "btrfs"}


def companion(fs, models):
    """FS's model among MODELS (the explorer's), else posix."""
    m = COMPANION.get(fs)
    return m if m in models else "posix"


def differences(seen, held, most=6):
    """What the disk HELD after the crash that a read did not see just
    before it (SEEN), both read_tree's: the why of a real state that no
    model state explains, in the explorer's manner ("'a' did not
    persist; 'b' holds 0 of the 4097 bytes written")."""
    sf, sd, sl = seen
    hf, hd, hl = held
    out = []
    for p in sorted(set(sf) | set(sd) | set(sl)):
        if p in sf and p not in hf:
            out.append(f"'{p}' did not persist")
        elif p in sd and p not in hd:
            out.append(f"the directory '{p}' did not persist")
        elif p in sl and p not in hl:
            out.append(f"the symbolic link '{p}' did not persist")
        elif p in sf and hf[p] != sf[p]:
            same = sum(1 for a, b in zip(sf[p], hf[p]) if a == b)
            out.append(f"'{p}' holds {len(hf[p])} bytes, {same} of them as "
                       f"written, of the {len(sf[p])} a read saw")
    for p in sorted((set(hf) | set(hd) | set(hl)) - set(sf) - set(sd) - set(sl)):
        out.append(f"'{p}', gone before the crash, is still there")
    if not out:
        return "everything a read saw before the crash persisted"
    more = f"; and {len(out) - most} more" if len(out) > most else ""
    return "; ".join(out[:most]) + more


def with_sync_record(records, synced):
    """RECORDS and the fsync Disk.sync_other made after them ((path,
    inode) of the harness's file, outside the work directory), as the
    recorder would have written it: what a model is told of that call."""
    path, ino = synced
    last = max(r["seq"] for r in records)
    n = sum(1 for r in records if r.get("call") == "fsync") + 1
    return list(records) + [{"ev": "call", "seq": last + 1, "pid": 0,
                             "call": "fsync", "n": n, "fd": -1, "path": path,
                             "ino": ino, "ret": 0, "errno": 0}]
