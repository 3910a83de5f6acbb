"""ext4-writeback: ext4 mounted data=writeback (delalloc and
auto_da_alloc still on).

Metadata goes through the journal as in data=ordered, but data is not
ordered with it: a size (or the allocation a rename or truncation
triggers) can commit before the data it covers. On kernels since 5.6
buffered write-back allocates unwritten extents (dioread_nolock is the
default), so such blocks read as zeros rather than the stale blocks
the documentation warns of. Unlike data=ordered, a data block a
truncation frees goes back to the allocator at once: a file truncated
and rewritten can have its new data written into its old blocks while
the truncation is still uncommitted (measured here: the old size with
the new bytes, fsops truncate and ftruncate)."""

from .ext4_ordered import Ext4Ordered


class Ext4Writeback(Ext4Ordered):
    """data=ordered's policies (since dioread_nolock, ordered data orders
    no more than this), but for the reuse of freed blocks."""
    name = "ext4-writeback"
    summary = ("ext4 data=writeback: metadata in one journal, data not "
               "ordered with it: a committed size can read as zeros")
    freed_reuse = True
    sources = (
        "Documentation/admin-guide/ext4.rst: data=writeback does not "
        "preserve data ordering, data may reach the disk after its "
        "metadata is committed; auto_da_alloc orders the replaced file's "
        "data only in data=ordered",
        "Pillai et al., OSDI 2014 (ALICE): appends in ext4-writeback are "
        "not atomic and not ordered before a rename",
        "ext4 dioread_nolock (default since Linux 5.6): write-back "
        "allocates unwritten extents, which read as zeros until written",
        "fs/ext4/mballoc.c (ext4_free_blocks): freed data blocks wait "
        "for the commit before reuse except in data=writeback",
        "measured here (make validate-models, kernel 6.18): a file opened "
        "with O_TRUNC and rewritten holds the old size and the new bytes "
        "after a crash (fsops truncate, ftruncate)",
    )


MODEL = Ext4Writeback()
