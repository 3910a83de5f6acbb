/*
 * writers: one program, many ways to replace TARGET with the content of
 * NEW, for the tests of names, directories and the calls that change data
 * without write(2).
 *
 * Method. Each mode reads NEW whole, then puts it in place its own way.
 * Every call is checked; a failure is one line on stderr ("writers: <call>
 * '<path>': <error>") and exit 1. Whether a mode is durable is what the
 * tests judge, as crash-model.md says, so the modes below say what they
 * do and what they skip, not whether that is enough:
 *
 *   tmp-rename      write target.tmp, fsync, rename over TARGET, fsync "."
 *   staging         mkdir stage/ (if absent), write stage/target.tmp, fsync
 *                   it, rename it to TARGET, fsync stage/ only
 *   staging-both    the same, then fsync "." too
 *   tmpfile         O_TMPFILE in ".", write, fsync, linkat(AT_EMPTY_PATH)
 *                   as target.tmp, rename over TARGET, fsync "."
 *   tmpfile-proc    the same, linked through /proc/self/fd/N
 *   tmpfile-nolink  O_TMPFILE, write, fsync, then nothing: never named
 *   exchange        write target.tmp, fsync, renameat2(RENAME_EXCHANGE)
 *                   with TARGET, fsync ".", unlink target.tmp, fsync "."
 *   noreplace       write target.tmp, fsync, renameat2(RENAME_NOREPLACE)
 *                   onto TARGET (fails EEXIST when it exists: then rename)
 *   dsync           target.tmp written by pwritev2(RWF_DSYNC), no fsync,
 *                   rename, fsync "."
 *   copy            copy_file_range from NEW into target.tmp, fsync,
 *                   rename, fsync "."
 *   copy-nofsync    the same without the file's fsync
 *   sendfile        sendfile from NEW into target.tmp, fsync, rename, fsync "."
 *   sendfile-nofsync  the same without the file's fsync
 *   splice          NEW through a pipe into target.tmp with splice, fsync,
 *                   rename, fsync "."
 *   raw             target.tmp written with syscall(SYS_write), which no
 *                   library sees, fsync, rename, fsync "."
 *   raw-rename      write target.tmp, fsync, rename it with
 *                   syscall(SYS_rename), fsync "."
 *   remove          tmp-rename, then a file "junk" made and removed with
 *                   remove(3), whose unlink libc makes inside itself
 *   mkdir           mkdir sub/, write sub/TARGET, fsync it, fsync sub/,
 *                   no fsync of "."
 *   mkdir-both      the same, then fsync "."
 *   symlink         write target.tmp (fsync), symlink "target.tmp" as
 *                   link, fsync "."
 *   hardlink        write target.tmp, fsync, link it as TARGET.new,
 *                   rename that over TARGET, unlink target.tmp, fsync "."
 *   fork            16 child processes at once, each making a file of its
 *                   own (c0..c15: open O_CREAT, write its name, close);
 *                   once all have exited, tmp-rename
 *   fork-raw        the same, child 0's file r0 opened with
 *                   syscall(SYS_openat), which no library sees
 *
 * usage: writers MODE TARGET NEW   (TARGET is a name in the cwd)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *mode, *target, *newpath;
static char *data;
static size_t size;

static int fail(const char *call, const char *path)
{
	fprintf(stderr, "writers: %s '%s': %s\n", call, path, strerror(errno));
	exit(1);
}

static void read_new(void)
{
	struct stat st;
	int fd = open(newpath, O_RDONLY);
	size_t got = 0;

	if (fd < 0 || fstat(fd, &st) < 0)
		fail("open", newpath);
	size = st.st_size;
	data = malloc(size ? size : 1);
	if (!data)
		fail("malloc", newpath);
	while (got < size) {
		ssize_t n = read(fd, data + got, size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			fail("read", newpath);
		got += n;
	}
	if (close(fd) < 0)
		fail("close", newpath);
}

static void write_all(int fd, const char *path)
{
	size_t done = 0;

	while (done < size) {
		ssize_t n = write(fd, data + done, size - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			fail("write", path);
		done += n;
	}
}

static void sync_fd(int fd, const char *path)
{
	if (fsync(fd) < 0)
		fail("fsync", path);
}

static void sync_dir(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY);

	if (fd < 0)
		fail("open", path);
	sync_fd(fd, path);
	if (close(fd) < 0)
		fail("close", path);
}

static void close_fd(int fd, const char *path)
{
	if (close(fd) < 0)
		fail("close", path);
}

/* PATH created with the content, fsync'd when SYNC */
static void write_file(const char *path, int sync)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0)
		fail("open", path);
	write_all(fd, path);
	if (sync)
		sync_fd(fd, path);
	close_fd(fd, path);
}

static void rename_over(const char *from, const char *to)
{
	if (rename(from, to) < 0)
		fail("rename", from);
}

static int tmpfile_open(void)
{
	int fd = open(".", O_TMPFILE | O_WRONLY, 0644);

	if (fd < 0) {
		if (errno == EOPNOTSUPP || errno == EISDIR) {
			fprintf(stderr, "writers: O_TMPFILE unsupported here\n");
			exit(77);
		}
		fail("open", ".");
	}
	write_all(fd, "O_TMPFILE");
	sync_fd(fd, "O_TMPFILE");
	return fd;
}

/* the content copied from NEW into a new target.tmp by copy_file_range,
 * sendfile or splice (HOW), looping over short copies */
static void copy_into(const char *how, int sync)
{
	int in = open(newpath, O_RDONLY), out, p[2];
	size_t done = 0;

	if (in < 0)
		fail("open", newpath);
	out = open("target.tmp", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (out < 0)
		fail("open", "target.tmp");
	if (!strcmp(how, "splice") && pipe(p) < 0)
		fail("pipe", how);
	while (done < size) {
		ssize_t n;

		if (!strcmp(how, "copy")) {
			n = copy_file_range(in, NULL, out, NULL, size - done, 0);
		} else if (!strcmp(how, "sendfile")) {
			n = sendfile(out, in, NULL, size - done);
		} else {
			n = splice(in, NULL, p[1], NULL, size - done, 0);
			if (n > 0) {
				ssize_t left = n;

				while (left > 0) {
					ssize_t m = splice(p[0], NULL, out, NULL, left, 0);
					if (m < 0 && errno == EINTR)
						continue;
					if (m <= 0)
						fail("splice", "target.tmp");
					left -= m;
				}
			}
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			fail(how, "target.tmp");
		done += n;
	}
	if (sync)
		sync_fd(out, "target.tmp");
	close_fd(out, "target.tmp");
	close_fd(in, newpath);
	rename_over("target.tmp", target);
	sync_dir(".");
}

#define FORKS 16

/* FORKS children at once, each making a file of its own; child 0 opens
 * r0 with a raw system call when RAW; fail() when any child failed */
static void children(int raw)
{
	pid_t pids[FORKS];
	int i;

	for (i = 0; i < FORKS; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			fail("fork", ".");
		if (pids[i] == 0) {
			char name[16];
			int fd, unseen = raw && i == 0;
			int flags = O_WRONLY | O_CREAT | O_TRUNC;

			snprintf(name, sizeof(name), "%c%d", unseen ? 'r' : 'c',
				 i);
			fd = unseen ? (int)syscall(SYS_openat, AT_FDCWD, name,
						   flags, 0644)
				    : open(name, flags, 0644);
			if (fd < 0)
				fail("open", name);
			if (write(fd, name, strlen(name)) !=
			    (ssize_t)strlen(name))
				fail("write", name);
			close_fd(fd, name);
			_exit(0);
		}
	}
	for (i = 0; i < FORKS; i++) {
		int status;

		if (waitpid(pids[i], &status, 0) < 0)
			fail("waitpid", ".");
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			fprintf(stderr, "writers: child %d failed\n", i);
			exit(1);
		}
	}
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: writers MODE TARGET NEW\n");
		return 2;
	}
	mode = argv[1];
	target = argv[2];
	newpath = argv[3];
	read_new();

	if (!strcmp(mode, "tmp-rename")) {
		write_file("target.tmp", 1);
		rename_over("target.tmp", target);
		sync_dir(".");
		} else if (!strcmp(mode, "fork") || !strcmp(mode, "fork-raw")) {
		children(!strcmp(mode, "fork-raw"));
		write_file("target.tmp", 1);
		rename_over("target.tmp", target);
		sync_dir(".");
	} else if (!strcmp(mode, "staging") || !strcmp(mode, "staging-both")) {
		if (mkdir("stage", 0755) < 0 && errno != EEXIST)
			fail("mkdir", "stage");
		write_file("stage/target.tmp", 1);
		rename_over("stage/target.tmp", target);
		sync_dir("stage");
		if (!strcmp(mode, "staging-both"))
			sync_dir(".");
	} else if (!strncmp(mode, "tmpfile", 7)) {
		int fd = tmpfile_open();
		char proc[64];

		if (!strcmp(mode, "tmpfile")) {
			if (linkat(fd, "", AT_FDCWD, "target.tmp", AT_EMPTY_PATH) < 0)
				fail("linkat", "target.tmp");
		} else if (!strcmp(mode, "tmpfile-proc")) {
			snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
			if (linkat(AT_FDCWD, proc, AT_FDCWD, "target.tmp",
				   AT_SYMLINK_FOLLOW) < 0)
				fail("linkat", "target.tmp");
		}
		close_fd(fd, "O_TMPFILE");
		if (strcmp(mode, "tmpfile-nolink")) {
			rename_over("target.tmp", target);
			sync_dir(".");
		}
	} else if (!strcmp(mode, "exchange")) {
		write_file("target.tmp", 1);
		if (renameat2(AT_FDCWD, "target.tmp", AT_FDCWD, target,
			      RENAME_EXCHANGE) < 0)
			fail("renameat2", target);
		sync_dir(".");
		if (unlink("target.tmp") < 0)
			fail("unlink", "target.tmp");
		sync_dir(".");
	} else if (!strcmp(mode, "noreplace")) {
		write_file("target.tmp", 1);
		if (renameat2(AT_FDCWD, "target.tmp", AT_FDCWD, target,
			      RENAME_NOREPLACE) < 0) {
			if (errno != EEXIST)
				fail("renameat2", target);
			rename_over("target.tmp", target);
		}
		sync_dir(".");
	} else if (!strcmp(mode, "dsync")) {
		int fd = open("target.tmp", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		size_t done = 0;

		if (fd < 0)
			fail("open", "target.tmp");
		while (done < size) {
			struct iovec iov = { data + done, size - done };
			ssize_t n = pwritev2(fd, &iov, 1, done, RWF_DSYNC);

			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				if (errno == EOPNOTSUPP || errno == ENOSYS) {
					fprintf(stderr, "writers: RWF_DSYNC unsupported here\n");
					return 77;
				}
				fail("pwritev2", "target.tmp");
			}
			done += n;
		}
		close_fd(fd, "target.tmp");
		rename_over("target.tmp", target);
		sync_dir(".");
	} else if (!strcmp(mode, "copy") || !strcmp(mode, "copy-nofsync")) {
		copy_into("copy", !strcmp(mode, "copy"));
	} else if (!strcmp(mode, "sendfile") || !strcmp(mode, "sendfile-nofsync")) {
		copy_into("sendfile", !strcmp(mode, "sendfile"));
	} else if (!strcmp(mode, "splice")) {
		copy_into("splice", 1);
	} else if (!strcmp(mode, "raw")) {
		int fd = open("target.tmp", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		size_t done = 0;

		if (fd < 0)
			fail("open", "target.tmp");
		while (done < size) {
			long n = syscall(SYS_write, fd, data + done, size - done);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				fail("write", "target.tmp");
			done += n;
		}
		sync_fd(fd, "target.tmp");
		close_fd(fd, "target.tmp");
		rename_over("target.tmp", target);
		sync_dir(".");
	} else if (!strcmp(mode, "raw-rename")) {
		write_file("target.tmp", 1);
		if (syscall(SYS_rename, "target.tmp", target) < 0)
			fail("rename", "target.tmp");
		sync_dir(".");
	} else if (!strcmp(mode, "remove")) {
		write_file("target.tmp", 1);
		rename_over("target.tmp", target);
		sync_dir(".");
		write_file("junk", 0);
		if (remove("junk") < 0)
			fail("remove", "junk");
	} else if (!strcmp(mode, "mkdir") || !strcmp(mode, "mkdir-both")) {
		char path[4096];

		if (mkdir("sub", 0755) < 0)
			fail("mkdir", "sub");
		snprintf(path, sizeof(path), "sub/%s", target);
		write_file(path, 1);
		sync_dir("sub");
		if (!strcmp(mode, "mkdir-both"))
			sync_dir(".");
	} else if (!strcmp(mode, "symlink")) {
		write_file("target.tmp", 1);
		if (symlink("target.tmp", "link") < 0)
			fail("symlink", "link");
		sync_dir(".");
	} else if (!strcmp(mode, "hardlink")) {
		char name[4096];

		write_file("target.tmp", 1);
		snprintf(name, sizeof(name), "%s.new", target);
		if (link("target.tmp", name) < 0)
			fail("link", name);
		rename_over(name, target);
		if (unlink("target.tmp") < 0)
			fail("unlink", "target.tmp");
		sync_dir(".");
	} else {
		fprintf(stderr, "writers: unknown mode '%s'\n", mode);
		return 2;
	}
	return 0;
}
