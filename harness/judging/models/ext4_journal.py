"""ext4-journal: ext4 mounted data=journal.

Every write's data goes into the journal in the same transaction
stream as the metadata (delalloc and dioread_nolock are off in this
mode), so a crash keeps a prefix of all changes, data included: a
write of several pages may be cut between pages, each page its own
journal handle. Journal recovery writes whole blocks: nothing tears
inside a block. Data changed through a shared mapping reaches the
journal only when write-back takes it, in no order with the calls."""

from . import base


class Ext4Journal(base.Model):
    name = "ext4-journal"
    summary = ("ext4 data=journal: data and metadata in one journal, a "
               "crash keeps a prefix of every change")
    metadata = base.JOURNAL
    file_sync = base.LOG_TO_FILE
    dir_sync = base.LOG_TO_DIR
    overwrite = base.JOURNALED
    append = base.JOURNALED
    torn_sectors = False
    failed_sync = base.PAGE
    sources = (
        "Documentation/admin-guide/ext4.rst: data=journal commits all data "
        "into the journal before it is written to the main file system; "
        "the mode disables delayed allocation and O_DIRECT",
        "Pillai et al., OSDI 2014 (ALICE): ext4 data=journal orders every "
        "operation, overwrites and appends included",
        "measured here (shutdown ioctl with NOLOGFLUSH): an append or an "
        "overwrite never synced is on disk after an fsync of another "
        "file; a file truncated and rewritten, left open, shows the new "
        "content",
    )


MODEL = Ext4Journal()
