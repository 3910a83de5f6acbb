/*
 * minikv: a tiny key-value store kept in a directory, for the tests of
 * the tree contract (tests/test_apps.py).
 *
 * Method: the store is the current directory. `db` holds the map, one
 * "key=value" line per key, then the line "end" (a db without it was cut
 * short). `minikv set KEY VALUE` replaces it atomically: it writes
 * db.tmp, fsyncs it, renames it over db and fsyncs the directory, and
 * prints nothing unless a call fails (then one line naming the call, the
 * file and the error, exit 1). It claims: once it exits 0 the new map is
 * durable; at every moment db holds the old map or the new one.
 *
 * Two defects on request, one rule each: --no-fsync leaves out the fsync
 * of db.tmp (the rename can reach the disk before the data: under posix
 * an empty db; under ext4-ordered zeros: auto_da_alloc allocates the
 * blocks, unwritten until written, dioread_nolock); --no-dir-fsync
 * leaves out the fsync of the directory (the new map is not durable when
 * it exits 0).
 *
 * `minikv check LOG KEY OLD NEW` is its checker: exit 0 when db is whole
 * and KEY is NEW, or OLD too when CRASHCHECK_EXPECT is old-or-new; else
 * one line saying what it found, exit 1. Each run appends its working
 * directory to LOG, so a test can count the runs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_DB 65536

static int fail(const char *call, const char *path)
{
	fprintf(stderr, "minikv: %s '%s': %s\n", call, path, strerror(errno));
	return 1;
}

/* the whole of PATH into buf (NUL-terminated); its length, or -1 */
static ssize_t slurp(const char *path, char *buf, size_t cap)
{
	size_t len = 0;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return -1;
	for (;;) {
		ssize_t n = read(fd, buf + len, cap - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			close(fd);
			errno = e;
			return -1;
		}
		if (n == 0)
			break;
		len += n;
	}
	/* a read-only close fails only where the file system is failing */
	if (close(fd) < 0)
		return -1;
	buf[len] = '\0';
	return len;
}

/* KEY's value in a db's text (copied into out), 0 when found */
static int lookup(const char *db, const char *key, char *out, size_t cap)
{
	size_t klen = strlen(key);
	const char *line = db;

	while (*line) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		if (len > klen && !strncmp(line, key, klen) && line[klen] == '=') {
			snprintf(out, cap, "%.*s", (int)(len - klen - 1), line + klen + 1);
			return 0;
		}
		line += len + (end != NULL);
	}
	return -1;
}

static int set(const char *key, const char *value, int fsync_file, int fsync_dir)
{
	static char old[MAX_DB], new[MAX_DB + 512];
	size_t klen = strlen(key), len = 0, done = 0;
	const char *line = old;
	int fd, dfd;

	if (slurp("db", old, sizeof(old)) < 0) {
		if (errno != ENOENT)
			return fail("read", "db");
		old[0] = '\0';
	}
	/* every line but KEY's and the end line, then KEY's, then the end */
	while (*line) {
		const char *end = strchr(line, '\n');
		size_t n = end ? (size_t)(end - line) : strlen(line);
		if (!(n > klen && !strncmp(line, key, klen) && line[klen] == '=') &&
		    !(n == 3 && !strncmp(line, "end", 3)) && len + n + 1 < MAX_DB) {
			memcpy(new + len, line, n);
			new[len + n] = '\n';
			len += n + 1;
		}
		line += n + (end != NULL);
	}
	len += snprintf(new + len, sizeof(new) - len, "%s=%s\nend\n", key, value);

	fd = open("db.tmp", O_WRONLY | O_CREAT | O_TRUNC, 0666);
	if (fd < 0)
		return fail("open", "db.tmp");
	while (done < len) {
		ssize_t n = write(fd, new + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return fail("write", "db.tmp");
		done += n;
	}
	if (fsync_file && fsync(fd) < 0)
		return fail("fsync", "db.tmp");
	if (close(fd) < 0)
		return fail("close", "db.tmp");
	if (rename("db.tmp", "db") < 0)
		return fail("rename", "db.tmp");
	if (!fsync_dir)
		return 0;
	dfd = open(".", O_RDONLY | O_DIRECTORY);
	if (dfd < 0)
		return fail("open", ".");
	if (fsync(dfd) < 0)
		return fail("fsync", ".");
	if (close(dfd) < 0)
		return fail("close", ".");
	return 0;
}

static int check(const char *log, const char *key, const char *old,
		 const char *new)
{
	static char db[MAX_DB], cwd[4096];
	const char *expect = getenv("CRASHCHECK_EXPECT");
	char value[256];
	ssize_t len;
	FILE *fp = fopen(log, "a");

	if (fp) {
		fprintf(fp, "%s\n", getcwd(cwd, sizeof(cwd)) ? cwd : "?");
		fclose(fp);
	}
	if (!expect)
		expect = "new";
	len = slurp("db", db, sizeof(db));
	if (len < 0) {
		printf("db is %s\n", errno == ENOENT ? "missing" : strerror(errno));
		return 1;
	}
	if (len < 4 || strcmp(db + len - 4, "end\n") || (len > 4 && db[len - 5] != '\n')) {
		printf("db is cut short (%zd bytes, no end line)\n", len);
		return 1;
	}
	if (lookup(db, key, value, sizeof(value))) {
		printf("%s is not in db (CRASHCHECK_EXPECT=%s)\n", key, expect);
		return 1;
	}
	if (!strcmp(value, new) ||
	    (!strcmp(value, old) && !strcmp(expect, "old-or-new")))
		return 0;
	printf("%s is '%s' (CRASHCHECK_EXPECT=%s)\n", key, value, expect);
	return 1;
}

int main(int argc, char **argv)
{
	int fsync_file = 1, fsync_dir = 1, i, n = 0;
	char *args[4];

	if (argc == 6 && !strcmp(argv[1], "check"))
		return check(argv[2], argv[3], argv[4], argv[5]);
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--no-fsync"))
			fsync_file = 0;
		else if (!strcmp(argv[i], "--no-dir-fsync"))
			fsync_dir = 0;
		else if (n < 4)
			args[n++] = argv[i];
		else
			n = 5;
	}
	if (n != 3 || strcmp(args[0], "set") || strchr(args[1], '=') ||
	    strchr(args[1], '\n') || strchr(args[2], '\n')) {
		fprintf(stderr, "usage: minikv set KEY VALUE [--no-fsync] "
			"[--no-dir-fsync] | check LOG KEY OLD NEW\n");
		return 2;
	}
	return set(args[1], args[2], fsync_file, fsync_dir);
}
