"""ext4-ordered: ext4's default mount (data=ordered, delalloc,
auto_da_alloc).

One journal (jbd2) carries every metadata change in order. Delayed
allocation keeps appended data out of the journal until write-back
allocates it, and then data=ordered writes it before the commit that
records its size: an appended file grows only over data on disk.
auto_da_alloc forces the data of a file renamed over another, or
truncated to zero and rewritten, before the rename or the close
commits. Overwrites of allocated blocks are not ordered at all."""

from . import base


class Ext4Ordered(base.Model):
    name = "ext4-ordered"
    summary = ("ext4 data=ordered: metadata in one journal, appends in "
               "order behind it, a replaced file's data forced first")
    metadata = base.JOURNAL
    file_sync = base.LOG_TO_FILE
    dir_sync = base.LOG_TO_DIR
    overwrite = base.INDEPENDENT
    append = base.PREFIX
    replace_flush = frozenset((base.RENAME, base.TRUNCATE))
    torn_sectors = True
    failed_sync = base.PAGE
    sources = (
        "Documentation/admin-guide/ext4.rst: data=ordered writes data "
        "before its metadata is committed; auto_da_alloc forces the "
        "blocks of a replace-via-rename or replace-via-truncate file out "
        "before the rename, in data=ordered",
        "Pillai et al., All File Systems Are Not Created Equal, OSDI 2014 "
        "(ALICE): ext4-ordered orders directory operations and a rename "
        "after the appends before it, not overwrites",
        "measured here (ext4 on a loop device, shutdown ioctl with "
        "NOLOGFLUSH, kernel 6.18): fdatasync of a file only overwritten "
        "commits no earlier rename of another file; fsync of it does",
    )


MODEL = Ext4Ordered()
