/*
 * fsops: put NEWFILE's content in TARGET by one pattern of name and data
 * calls, for checking crash models against real kernels.
 *
 *	fsops OPERATION TARGET NEWFILE
 *
 * Method: each OPERATION reaches the same end, TARGET holding NEWFILE's
 * content durably, by a different road through the calls crashcheck
 * intercepts (faults/CALLS.md), with windows where nothing is synced, so
 * that a power cut at each call leaves the filesystem something to
 * choose. scripts/validate-models kills it after every call on a real
 * ext4, XFS or Btrfs, takes the state the kernel left, and asks each
 * crash model whether that state is one of its own: a state the kernel
 * shows and a model does not is a bug of the model.
 *
 *   rename-over     a temp file written, closed unsynced, renamed over
 *                   TARGET (ext4's auto_da_alloc flushes it first); then
 *                   TARGET and the directory fsynced
 *   rename-new      written and fsynced as "a", renamed to the new name
 *                   "b", the directory fsynced, "b" renamed over TARGET
 *   rename-dir      made in d1/, moved to d2/ (a rename between two
 *                   directories, each synced after), then over TARGET
 *   link            written as "n", linked as TARGET after unlinking the
 *                   old one, "n" unlinked; a symbolic link made and
 *                   removed on the way
 *   mkdir           made in sub/deep/ (two mkdirs), renamed over TARGET,
 *                   both directories removed again (rmdir)
 *   tmpfile         an O_TMPFILE file, written and fsynced with no name,
 *                   given one by linkat, renamed over TARGET
 *   exchange        a new file swapped with TARGET by RENAME_EXCHANGE,
 *                   the old content then unlinked under the new one's name
 *   copy-range      a copy of NEWFILE made here ("src"), copied into a
 *                   temp file by copy_file_range
 *   sendfile        NEWFILE copied into a temp file by sendfile
 *   truncate        TARGET opened with O_TRUNC, rewritten and closed
 *                   (auto_da_alloc again), then fsynced
 *   ftruncate       TARGET cut to 0 by ftruncate, grown to the new size
 *                   (a hole), rewritten a block at a time, fsynced
 *   append          "log" written in three appends (O_APPEND), fsynced
 *                   after the first, fdatasynced at the end, renamed
 *   fallocate       space reserved by fallocate, then written, fdatasynced
 *   mmap            ftruncate, a shared mapping, stores, msync(MS_SYNC)
 *   dsync           a temp file opened O_DSYNC, written by writev
 *   syncfs          a temp file written and renamed over TARGET, then
 *                   everything made durable by syncfs (never sync(2): it
 *                   would flush the machine's other filesystems too)
 *
 * Claim ("in-place" contract, crash-model.md): after exit 0 TARGET holds
 * the new content, durably; while it runs, a crash may leave anything.
 * Exit 0 done, 1 a call failed (one line naming it), 2 usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "../lib/error.h"
#include "../lib/io.h"

#define BLOCK 4096

static const char *target;
static const char *newfile;
static char *data;		/* NEWFILE's content */
static size_t size;		/* its length in bytes */

static int write_file(const char *path, int flags)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | flags, 0644);

	if (fd < 0)
		return error_errno("open '%s'", path);
	if (io_write_all(fd, data, size) < 0) {
		error_errno("write '%s'", path);
		close(fd);
		return IO_FAILED;
	}
	return fd;
}

static int sync_path(const char *path)
{
	int fd = open(path, O_RDONLY), err = 0;

	if (fd < 0)
		return error_errno("open '%s'", path);
	if (fsync(fd) < 0)
		err = error_errno("fsync '%s'", path);
	/* a read-only descriptor: its close cannot lose data */
	close(fd);
	return err;
}

static int closed(int fd, const char *path)
{
	/* close reports write-back errors of NFS and the like: checked */
	if (close(fd) < 0)
		return error_errno("close '%s'", path);
	return 0;
}

static int synced(int fd, const char *path)
{
	if (fsync(fd) < 0) {
		error_errno("fsync '%s'", path);
		close(fd);
		return IO_FAILED;
	}
	return closed(fd, path);
}

static int renamed(const char *from, const char *to)
{
	if (rename(from, to) < 0)
		return error_errno("rename '%s' to '%s'", from, to);
	return 0;
}

static int op_rename_over(void)
{
	int fd = write_file("target.tmp", 0);

	if (fd < 0 || closed(fd, "target.tmp") ||
	    renamed("target.tmp", target) || sync_path(target))
		return IO_FAILED;
	return sync_path(".");
}

static int op_rename_new(void)
{
	int fd = write_file("a", 0);

	if (fd < 0 || synced(fd, "a") || renamed("a", "b") || sync_path(".") ||
	    renamed("b", target))
		return IO_FAILED;
	return sync_path(".");
}

static int op_rename_dir(void)
{
	int fd;

	if (mkdir("d1", 0755) < 0)
		return error_errno("mkdir 'd1'");
	if (mkdir("d2", 0755) < 0)
		return error_errno("mkdir 'd2'");
	if (sync_path("."))
		return IO_FAILED;
	fd = write_file("d1/f", 0);
	if (fd < 0 || synced(fd, "d1/f") || sync_path("d1") ||
	    renamed("d1/f", "d2/f") || sync_path("d2") || sync_path("d1") ||
	    renamed("d2/f", target) || sync_path("d2"))
		return IO_FAILED;
	return sync_path(".");
}

static int op_link(void)
{
	int fd = write_file("n", 0);

	if (fd < 0 || synced(fd, "n"))
		return IO_FAILED;
	if (symlink("n", "n.link") < 0)
		return error_errno("symlink 'n.link'");
	if (unlink(target) < 0)
		return error_errno("unlink '%s'", target);
	if (link("n", target) < 0)
		return error_errno("link 'n' to '%s'", target);
	if (sync_path("."))
		return IO_FAILED;
	if (unlink("n.link") < 0)
		return error_errno("unlink 'n.link'");
	if (unlinkat(AT_FDCWD, "n", 0) < 0)
		return error_errno("unlinkat 'n'");
	return sync_path(".");
}

static int op_mkdir(void)
{
	int fd;

	if (mkdir("sub", 0755) < 0)
		return error_errno("mkdir 'sub'");
	if (mkdirat(AT_FDCWD, "sub/deep", 0755) < 0)
		return error_errno("mkdirat 'sub/deep'");
	fd = write_file("sub/deep/f", 0);
	if (fd < 0 || synced(fd, "sub/deep/f") || sync_path("sub/deep") ||
	    sync_path("sub") || sync_path(".") ||
	    renamed("sub/deep/f", target) || sync_path("."))
		return IO_FAILED;
	if (rmdir("sub/deep") < 0)
		return error_errno("rmdir 'sub/deep'");
	if (rmdir("sub") < 0)
		return error_errno("rmdir 'sub'");
	return sync_path(".");
}

static int op_tmpfile(void)
{
	char proc[64];
	int fd = open(".", O_TMPFILE | O_WRONLY, 0644);

	if (fd < 0)
		return error_errno("open '.' O_TMPFILE");
	if (io_write_all(fd, data, size) < 0) {
		error_errno("write O_TMPFILE");
		close(fd);
		return IO_FAILED;
	}
	if (fsync(fd) < 0) {
		error_errno("fsync O_TMPFILE");
		close(fd);
		return IO_FAILED;
	}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (linkat(AT_FDCWD, proc, AT_FDCWD, "t2", AT_SYMLINK_FOLLOW) < 0) {
		error_errno("linkat '%s' to 't2'", proc);
		close(fd);
		return IO_FAILED;
	}
	if (closed(fd, "t2") || sync_path(".") || renamed("t2", target))
		return IO_FAILED;
	return sync_path(".");
}

static int op_exchange(void)
{
	int fd = write_file("x", 0);

	if (fd < 0 || synced(fd, "x"))
		return IO_FAILED;
	if (renameat2(AT_FDCWD, "x", AT_FDCWD, target, RENAME_EXCHANGE) < 0)
		return error_errno("renameat2 'x' '%s' RENAME_EXCHANGE", target);
	if (sync_path("."))
		return IO_FAILED;
	if (unlink("x") < 0)
		return error_errno("unlink 'x'");
	return sync_path(".");
}

/*
 * copy_file_range or sendfile into "c", then over TARGET: sendfile from
 * NEWFILE, copy_file_range from a copy of it "src" made on this
 * filesystem first (across two, Linux refuses it with EXDEV)
 */
static int op_copy(int by_sendfile)
{
	const char *from = by_sendfile ? newfile : "src";
	int in, out, err = 0;
	size_t done = 0;

	if (!by_sendfile) {
		int fd = write_file("src", 0);

		if (fd < 0 || synced(fd, "src"))
			return IO_FAILED;
	}
	in = open(from, O_RDONLY);
	if (in < 0)
		return error_errno("open '%s'", from);
	out = open("c", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (out < 0) {
		close(in);
		return error_errno("open 'c'");
	}
	while (done < size) {
		ssize_t n = by_sendfile ? sendfile(out, in, NULL, size - done)
			: copy_file_range(in, NULL, out, NULL, size - done, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO;	/* NEWFILE shrank under us */
			err = error_errno("%s 'c'", by_sendfile ? "sendfile"
					  : "copy_file_range");
			break;
		}
		done += n;
	}
	close(in);
	if (err) {
		close(out);
		return err;
	}
	if (synced(out, "c") || renamed("c", target))
		return IO_FAILED;
	return sync_path(".");
}

static int op_copy_range(void)
{
	return op_copy(0);
}

static int op_sendfile(void)
{
	return op_copy(1);
}

static int op_truncate(void)
{
	int fd = write_file(target, 0);

	if (fd < 0 || closed(fd, target))
		return IO_FAILED;
	return sync_path(target);
}

static int op_ftruncate(void)
{
	int fd = open(target, O_RDWR);

	if (fd < 0)
		return error_errno("open '%s'", target);
	if (ftruncate(fd, 0) < 0 || ftruncate(fd, size) < 0) {
		error_errno("ftruncate '%s'", target);
		close(fd);
		return IO_FAILED;
	}
	for (size_t off = 0; off < size;) {
		size_t n = size - off < BLOCK ? size - off : BLOCK;
		ssize_t w = pwrite(fd, data + off, n, off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = ENOSPC;
			error_errno("pwrite '%s'", target);
			close(fd);
			return IO_FAILED;
		}
		off += w;	/* a short write: the rest at its own offset */
	}
	return synced(fd, target);
}

static int op_append(void)
{
	int fd = open("log", O_WRONLY | O_CREAT | O_APPEND, 0644);
	size_t third = size / 3;
	size_t cut[4] = { 0, third, 2 * third, size };

	if (fd < 0)
		return error_errno("open 'log'");
	for (int i = 0; i < 3; i++) {
		if (io_write_all(fd, data + cut[i], cut[i + 1] - cut[i]) < 0) {
			error_errno("write 'log'");
			close(fd);
			return IO_FAILED;
		}
		if (i == 0 && fsync(fd) < 0) {
			error_errno("fsync 'log'");
			close(fd);
			return IO_FAILED;
		}
	}
	if (fdatasync(fd) < 0) {
		error_errno("fdatasync 'log'");
		close(fd);
		return IO_FAILED;
	}
	if (closed(fd, "log") || renamed("log", target))
		return IO_FAILED;
	return sync_path(".");
}

static int op_fallocate(void)
{
	int fd = open("f", O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0)
		return error_errno("open 'f'");
	if (size && fallocate(fd, 0, 0, size) < 0) {
		error_errno("fallocate 'f'");
		close(fd);
		return IO_FAILED;
	}
	if (io_write_all(fd, data, size) < 0) {
		error_errno("write 'f'");
		close(fd);
		return IO_FAILED;
	}
	if (fdatasync(fd) < 0) {
		error_errno("fdatasync 'f'");
		close(fd);
		return IO_FAILED;
	}
	if (closed(fd, "f") || renamed("f", target))
		return IO_FAILED;
	return sync_path(".");
}

static int op_mmap(void)
{
	int fd = open("m", O_RDWR | O_CREAT | O_TRUNC, 0644);
	char *map;

	if (fd < 0)
		return error_errno("open 'm'");
	if (ftruncate(fd, size) < 0) {
		error_errno("ftruncate 'm'");
		close(fd);
		return IO_FAILED;
	}
	if (size) {
		map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (map == MAP_FAILED) {
			error_errno("mmap 'm'");
			close(fd);
			return IO_FAILED;
		}
		memcpy(map, data, size);
		if (msync(map, size, MS_SYNC) < 0) {
			error_errno("msync 'm'");
			munmap(map, size);
			close(fd);
			return IO_FAILED;
		}
		if (munmap(map, size) < 0) {
			error_errno("munmap 'm'");
			close(fd);
			return IO_FAILED;
		}
	}
	if (closed(fd, "m") || renamed("m", target))
		return IO_FAILED;
	return sync_path(".");
}

static int op_dsync(void)
{
	int fd = open("target.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_DSYNC, 0644);
	size_t half = size / 2, done = 0;

	if (fd < 0)
		return error_errno("open 'target.tmp'");
	while (done < size) {
		struct iovec iov[2];
		int n = 0;
		ssize_t w;

		if (done < half)
			iov[n++] = (struct iovec){ data + done, half - done };
		iov[n++] = (struct iovec){ data + (done > half ? done : half),
					   size - (done > half ? done : half) };
		w = writev(fd, iov, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = ENOSPC;
			error_errno("writev 'target.tmp'");
			close(fd);
			return IO_FAILED;
		}
		done += w;
	}
	if (closed(fd, "target.tmp") || renamed("target.tmp", target))
		return IO_FAILED;
	return sync_path(".");
}

static int op_syncfs(void)
{
	int fd = write_file("target.tmp", 0), err = 0;

	if (fd < 0 || closed(fd, "target.tmp") || renamed("target.tmp", target))
		return IO_FAILED;
	fd = open(".", O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return error_errno("open '.'");
	if (syncfs(fd) < 0)
		err = error_errno("syncfs '.'");
	close(fd);
	return err;
}

static const struct {
	const char *name;
	int (*run)(void);
} ops[] = {
	{ "rename-over", op_rename_over },
	{ "rename-new", op_rename_new },
	{ "rename-dir", op_rename_dir },
	{ "link", op_link },
	{ "mkdir", op_mkdir },
	{ "tmpfile", op_tmpfile },
	{ "exchange", op_exchange },
	{ "copy-range", op_copy_range },
	{ "sendfile", op_sendfile },
	{ "truncate", op_truncate },
	{ "ftruncate", op_ftruncate },
	{ "append", op_append },
	{ "fallocate", op_fallocate },
	{ "mmap", op_mmap },
	{ "dsync", op_dsync },
	{ "syncfs", op_syncfs },
};

static int usage(void)
{
	fprintf(stderr, "usage: fsops OPERATION TARGET NEWFILE; OPERATION one of:");
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		fprintf(stderr, " %s", ops[i].name);
	fprintf(stderr, "\n");
	return 2;
}

int main(int argc, char **argv)
{
	error_prog = "fsops";
	if (argc != 4)
		return usage();
	target = argv[2];
	newfile = argv[3];
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		if (strcmp(argv[1], ops[i].name))
			continue;
		if (io_read_file(newfile, &data, &size) < 0)
			return 1;
		return ops[i].run() ? 1 : 0;
	}
	return usage();
}
