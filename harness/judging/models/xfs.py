"""xfs: XFS with its default mount.

Metadata goes through one log, in order. Data is never ordered with
it: delayed allocation writes it when write-back comes, and the size
on disk moves only when that write-back completes, so an extended file
reads zeros where its data has not landed, never old blocks. XFS has
no rename heuristic: a file written and renamed over another, without
fsync, is empty once the rename commits. Its flush on close after a
truncation only starts write-back, ordering nothing."""

from . import base


class Xfs(base.Model):
    name = "xfs"
    summary = ("XFS: metadata in one log, data never ordered with it: a "
               "renamed or extended file can read empty or zeros")
    metadata = base.JOURNAL
    file_sync = base.LOG_TO_FILE
    dir_sync = base.LOG_TO_DIR
    overwrite = base.INDEPENDENT
    append = base.ZERO_FILL
    torn_sectors = True
    failed_sync = base.PAGE
    sources = (
        "Documentation/filesystems/xfs/xfs-delayed-logging-design.rst: "
        "one log, checkpoints written in order; a log force covers every "
        "change committed before it",
        "Pillai et al., OSDI 2014 (ALICE): XFS orders directory "
        "operations, not appends before a rename",
        "measured here (shutdown ioctl with NOLOGFLUSH): write, rename "
        "over an existing file, fsync of another file: the target is "
        "empty (4 runs of 4)",
        "Rebello et al., USENIX ATC 2020: a failed fsync on XFS marks the "
        "pages clean, new content still readable",
    )


MODEL = Xfs()
