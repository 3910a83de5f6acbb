"""What a crash model is: the policies the replay and the crash-state
space consult, each a named attribute of a Model.

A model answers, for one storage stack, what a power cut may leave of
the changes a program made (docs/crash-model.md, "Filesystem models").
The explorer never asks which model it has; it asks these questions:

metadata        how name and size changes reach the disk:
                INDEPENDENT  each directory's changes on their own, a
                             call's change to one directory whole (posix);
                JOURNAL      one ordered log: a crash keeps a prefix of
                             every change, in the order they were made.
file_sync       what a successful fsync, fdatasync, msync(MS_SYNC) or
                O_SYNC/O_DSYNC write commits besides the file's data:
                DATA_ONLY    nothing else (posix);
                LOG          the whole log, whatever the file;
                LOG_TO_FILE  the log up to the file's last change (the
                             transaction holding it commits, and with it
                             everything logged before); for fdatasync,
                             msync and O_DSYNC, its last change of size,
                             allocation or name: an overwrite alone
                             commits nothing;
                FILE_NAMES   the file's own name changes, out of order
                             (a per-file log, Btrfs's log tree).
dir_sync        what a successful fsync of a directory commits:
                DIRECTORY    that directory's changes (posix, Btrfs);
                LOG          the whole log;
                LOG_TO_DIR   the log up to the directory's last change.
overwrite       how data written over blocks the file already has
                reaches the disk: INDEPENDENT (each block old or new) or
                JOURNALED (in the log, in order, with the metadata).
append          how data past the durable size reaches the disk:
                INDEPENDENT  each block and the size on their own; a
                             size that got there before its data reads
                             zeros (posix);
                PREFIX       in file order, the size following the data
                             written (delayed allocation with ordered
                             data; copy-on-write): never zeros;
                ZERO_FILL    the size may commit before the data, whose
                             blocks read as zeros until written;
                JOURNALED    in the log with the metadata.
replace_flush   the patterns after which the file's data is forced out
                before the change that replaces the old content commits:
                RENAME (a rename over an existing file) and TRUNCATE (a
                truncation to zero, rewritten, then closed).
replace_alloc   the same patterns when they only allocate: the new size
                commits with the change, the data is not ordered with it.
torn_sectors    whether a block written in place can reach the disk in
                part, sector by sector, when the device's atomic unit
                is smaller than a block.
freed_reuse     whether a data block a truncation freed can be given
                to new data before that truncation commits (ext4
                data=writeback): the old size's blocks may then read
                the data written after it.
failed_sync     what a failed fsync leaves a read to see in the range it
                covered, the data being lost to later syncs in every
                model: PAGE (the new content, pages marked clean) or
                DISK (the content on disk: the failed pages are dropped).
"""

INDEPENDENT = "independent"
JOURNAL = "journal"

DATA_ONLY = "data-only"
LOG = "log"
LOG_TO_FILE = "log-to-file"
FILE_NAMES = "file-names"

DIRECTORY = "directory"
LOG_TO_DIR = "log-to-dir"

JOURNALED = "journaled"
PREFIX = "prefix"
ZERO_FILL = "zero-fill"

RENAME = "rename"
TRUNCATE = "truncate"

PAGE = "page"
DISK = "disk"


class Model:
    """One crash model. Subclasses set every policy and say where each
    comes from (sources: one line each, a document or a measurement)."""

    name = ""
    summary = ""            # one line, for `crashcheck help models`
    metadata = INDEPENDENT
    file_sync = DATA_ONLY
    dir_sync = DIRECTORY
    overwrite = INDEPENDENT
    append = INDEPENDENT
    replace_flush = frozenset()
    replace_alloc = frozenset()
    torn_sectors = True
    freed_reuse = False
    failed_sync = PAGE
    sources = ()

    # -- what the policies imply, asked by the replay

    @property
    def journal(self):
        """Metadata is one ordered log (a crash keeps a prefix)."""
        return self.metadata == JOURNAL

    @property
    def journaled_data(self):
        """Data written by a call goes into the log with the metadata."""
        return self.append == JOURNALED

    def flushes(self, pattern):
        """Whether PATTERN (RENAME or TRUNCATE) forces the data out
        before the change commits."""
        return pattern in self.replace_flush

    def allocates(self, pattern):
        """Whether PATTERN commits the file's new size with the change,
        its data left unordered."""
        return pattern in self.replace_alloc

    def policies(self):
        """{policy: value} of every policy, for docs and reports."""
        return {k: (sorted(v) if isinstance(v, frozenset) else v)
                for k, v in (("metadata", self.metadata),
                             ("file_sync", self.file_sync),
                             ("dir_sync", self.dir_sync),
                             ("overwrite", self.overwrite),
                             ("append", self.append),
                             ("replace_flush", self.replace_flush),
                             ("replace_alloc", self.replace_alloc),
                             ("torn_sectors", self.torn_sectors),
                             ("freed_reuse", self.freed_reuse),
                             ("failed_sync", self.failed_sync))}

    def __repr__(self):
        return f"<model {self.name}>"
