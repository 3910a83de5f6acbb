"""btrfs: Btrfs with its default mount (copy-on-write, log tree).

A transaction commit writes a consistent tree of every metadata change
made until then, so a crash keeps a prefix of them; data joins the
tree only when its write-back completes, and a file's size on disk
covers no more than the data there (never zeros or old blocks). An
fsync does not commit the transaction: it writes that file's data and
its names into a log tree, out of order with the rest. A rename over
an existing file starts write-back of the renamed file but does not
wait for it: the rename can commit first, with the file shorter or
empty. Blocks are copied, never written in place: nothing tears inside
one. After a failed fsync, reads see what is on disk again."""

from . import base


class Btrfs(base.Model):
    name = "btrfs"
    summary = ("Btrfs: copy-on-write transactions keep a prefix of the "
               "metadata; fsync logs one file; no data is ordered first")
    metadata = base.JOURNAL
    file_sync = base.FILE_NAMES
    dir_sync = base.DIRECTORY
    overwrite = base.INDEPENDENT
    append = base.PREFIX
    torn_sectors = False
    failed_sync = base.DISK
    sources = (
        "Btrfs documentation (btrfs(5), flushoncommit): without it, a "
        "commit does not wait for data dirtied before it",
        "Linux commit 5a3f23d515a2 (2009) added a flush for renames and "
        "truncates; today's btrfs_rename only starts it (filemap_flush)",
        "measured here (image copied while mounted, then mounted): a "
        "64 MiB file written and renamed over another, then an fsync of "
        "a third file: the target empty in 2 runs of 3; with 12 KiB, "
        "the old target and the rename not committed",
        "Pillai et al., OSDI 2014 (ALICE): Btrfs does not order directory "
        "operations with each other; Mohan et al., OSDI 2018 "
        "(CrashMonkey): fsync persists the file's names",
        "Rebello et al., USENIX ATC 2020: after a failed fsync Btrfs "
        "returns the on-disk content, unlike ext4 and XFS",
    )


MODEL = Btrfs()
