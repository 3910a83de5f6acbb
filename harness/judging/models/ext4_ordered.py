"""ext4-ordered: ext4's default mount (data=ordered, delalloc,
auto_da_alloc, and since Linux 5.6 dioread_nolock).

One journal (jbd2) carries every metadata change in order. Delayed
allocation keeps written data out of the journal until write-back
allocates it; with dioread_nolock (the default for a 4 KiB block on a
4 KiB page) write-back allocates unwritten extents, moves the size on
disk to the end of the pages it submits, and converts the extents to
written only when the I/O completes, in a later transaction. data=ordered
then orders nothing: unwritten extents are not on the transaction's
ordered list, so a committed size can cover blocks that read as zeros.
auto_da_alloc, on a rename over a file or the close of a file
truncated to zero and rewritten, starts that write-back (allocation and
size) before the change commits; the data itself can still read as
zeros after the rename has committed (measured here). A data block a
truncation frees is not reused before the truncation commits.
Overwrites of allocated blocks are not ordered at all."""

from . import base


class Ext4Ordered(base.Model):
    name = "ext4-ordered"
    summary = ("ext4 data=ordered (dioread_nolock): metadata in one "
               "journal, a committed size or rename can read as zeros")
    metadata = base.JOURNAL
    file_sync = base.LOG_TO_FILE
    dir_sync = base.LOG_TO_DIR
    overwrite = base.INDEPENDENT
    append = base.ZERO_FILL
    replace_alloc = frozenset((base.RENAME, base.TRUNCATE))
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
        "ext4 since Linux 5.6 mounts with dioread_nolock: write-back "
        "allocates unwritten extents, converted after the I/O completes; "
        "fs/ext4/inode.c puts only written (not unwritten) new blocks on "
        "the ordered list (ext4_map_blocks)",
        "measured here (make validate-models, kernel 6.18): a file written "
        "with no fsync and renamed over the target, then the directory "
        "fsynced, holds zeros of the new size (no-fsync-before-rename, "
        "mmap-no-msync, stdio-no-fflush); an append cut at a block "
        "boundary with zeros under the size after an unrelated fsync "
        "(fsops append)",
    )


MODEL = Ext4Ordered()
