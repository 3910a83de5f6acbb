"""posix: only what POSIX and Linux promise on every filesystem.

Nothing persists but what a sync event made durable (crash-model.md's
table); every other change is on its own: each dirty block, a file's
size, each directory's changes. It is the weakest model, the default
one judges against, and a program correct under it is correct on any
filesystem that keeps the promises of fsync."""

from . import base


class Posix(base.Model):
    name = "posix"
    summary = ("only what fsync, fdatasync, msync, O_SYNC and a directory "
               "fsync made durable survives; everything else on its own")
    metadata = base.INDEPENDENT
    file_sync = base.DATA_ONLY
    dir_sync = base.DIRECTORY
    overwrite = base.INDEPENDENT
    append = base.INDEPENDENT
    torn_sectors = True
    failed_sync = base.PAGE
    sources = (
        "POSIX fsync(): the file's data and metadata, not its directory "
        "entry (Linux fsync(2): 'an explicit fsync() on a file descriptor "
        "for the directory is also needed')",
        "Rebello et al., Can Applications Recover from fsync Failures?, "
        "USENIX ATC 2020: a failed fsync marks the pages clean; their new "
        "content stays readable and a later fsync does not write it",
    )


MODEL = Posix()
