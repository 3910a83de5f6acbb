/*
 * protocols: small update protocols of real programs, each with the habit
 * issue 35 found in it, and a checker for each; built with -g by the tests
 * (tests/test_findings.py), which check the cause, the property and the
 * severity crashcheck gives each.
 *
 * Method: protocols MODE ARGS. Every mode reports a failure on stderr
 * ("protocols: CALL 'FILE': strerror") and exits 1, except where it says
 * otherwise; 2 is a usage error.
 *
 *   append LOG NEW        Redis's append-only file: append NEW to LOG as
 *                         one record (a header with its length and
 *                         checksum, the bytes, a newline) in one write,
 *                         then fdatasync LOG. Correct: a power cut
 *                         between the write and the fdatasync can cut
 *                         the record, which no fsync placement prevents;
 *                         append-check is the reader that must cope
 *   append-check LOG NEW  the log's reader: every record whole, and with
 *                         CRASHCHECK_EXPECT=new the last one is NEW
 *   journal DB NEW        SQLite's rollback journal: copy DB to
 *                         DB-journal, fsync it and the directory, write
 *                         NEW over DB, fsync it, unlink the journal, and
 *                         fsync the directory. Defect: when the open of
 *                         the directory for that last fsync fails, it
 *                         skips the fsync and exits 0 all the same
 *   journal-full DB NEW   the same with SQLite's default sync
 *                         (synchronous=FULL): the directory synced after
 *                         the journal is made (skipped when its open
 *                         fails, as SQLite does), never after the
 *                         journal's unlink. Defect: that unlink, the
 *                         commit, is not durable, fault or none
 *   journal-check DB OLD NEW  the next opener: a journal left rolls DB
 *                         back to it; then DB must be OLD or NEW (NEW
 *                         once the run exited 0)
 *   copytrunc LOG         logrotate's copytruncate: copy LOG to LOG.1,
 *                         fsync LOG.1 ignoring what it returns, fsync the
 *                         directory, then truncate LOG to nothing and
 *                         fsync it.
 *                         Defect: the fsync's failure is ignored; it
 *                         never retries
 *   copytrunc-said LOG    the same, but it prints the fsync's error (and
 *                         goes on all the same)
 *   copytrunc-check LOG OLD  LOG is OLD (not rotated) or empty with
 *                         LOG.1 holding OLD (rotated, required once the
 *                         run exited 0)
 *   cancel DB NEW         tdb's transaction: write NEW over DB (the same
 *                         size as the old content) and fdatasync it;
 *                         when that fails, write the old content back,
 *                         fdatasync again (the transaction cancelled)
 *                         and exit 0. Defect: it says nothing and claims
 *                         success; the second fdatasync is no retry
 *   cancel-mapped DB NEW  the same through a shared mapping of DB (tdb's
 *                         own way): the stores that put the old content
 *                         back make no call
 *   prealloc TARGET NEW   tdb's file growth: reserve the temporary file's
 *                         blocks with posix_fallocate and, when that
 *                         fails, write the data anyway (its fallback),
 *                         then fsync, rename over TARGET and fsync the
 *                         directory. Correct
 *   tidy TARGET NEW       write a temporary file, fsync it, rename it,
 *                         fsync the directory; a failed close of the
 *                         temporary file prints "note: could not tidy
 *                         up" and goes on. Defect: the message names no
 *                         error (the close's is ignored, harmlessly)
 *   zip TARGET            gzip: write TARGET's bytes to TARGET.z (a new
 *                         file), close it and unlink TARGET. Defect:
 *                         TARGET.z is never fsynced, nor its directory,
 *                         before TARGET goes
 *   zip-check TARGET OLD  TARGET is OLD, or gone with TARGET.z holding
 *                         OLD (required once the run exited 0)
 *   replace-unchecked TARGET NEW  write TARGET.tmp, fsync it ignoring
 *                         what it returns, rename it over TARGET, fsync
 *                         the directory (checked). Defect: the rename
 *                         goes ahead after a failed fsync
 *   inplace TARGET NEW    a program that rewrites its file in place:
 *                         open TARGET with O_TRUNC, write NEW, fsync,
 *                         close, every call checked. Defect: in place
 *                         (a failed fsync it reports and stops at still
 *                         leaves the target torn)
 *
 * Exit status: 0 done, 1 failed (and said why), 2 usage; the checkers 0
 * when the state is acceptable, 1 with one line saying what they found.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int fail(const char *call, const char *path)
{
	fprintf(stderr, "protocols: %s '%s': %s\n", call, path, strerror(errno));
	return 1;
}

/* the whole of PATH in a malloc'd buffer (*len bytes); NULL when it is
 * absent, with errno ENOENT */
static char *slurp(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY);
	char *buf = NULL;
	size_t have = 0, cap = 0;

	if (fd < 0)
		return NULL;
	for (;;) {
		ssize_t n;

		if (have == cap) {
			cap = cap ? 2 * cap : 65536;
			buf = realloc(buf, cap + 1);
			if (!buf)
				abort();
		}
		n = read(fd, buf + have, cap - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		have += (size_t)n;
	}
	close(fd);
	*len = have;
	buf[have] = '\0';
	return buf;
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static int same(const char *a, size_t alen, const char *b, size_t blen)
{
	return a && b && alen == blen && memcmp(a, b, alen) == 0;
}

/* fsync the current directory */
static int sync_dir(void)
{
	int fd = open(".", O_RDONLY | O_DIRECTORY);

	if (fd < 0)
		return fail("open", ".");
	if (fsync(fd) < 0) {
		close(fd);
		return fail("fsync", ".");
	}
	close(fd);
	return 0;
}

static int expect_new(void)
{
	const char *e = getenv("CRASHCHECK_EXPECT");

	return !e || strcmp(e, "new") == 0;
}

static int refuse(const char *what)
{
	printf("%s (CRASHCHECK_EXPECT=%s)\n", what,
	       getenv("CRASHCHECK_EXPECT") ? getenv("CRASHCHECK_EXPECT") : "new");
	return 1;
}

/* ---------------------------------------------------------------- append */

static uint32_t checksum(const char *p, size_t n)
{
	uint32_t sum = 0;

	while (n--)
		sum = sum * 31 + (unsigned char)*p++;
	return sum;
}

static int append(const char *log, const char *newf)
{
	size_t len, hlen;
	char *data = slurp(newf, &len), *rec;
	char head[64];
	int fd;

	if (!data)
		return fail("open", newf);
	hlen = (size_t)snprintf(head, sizeof(head), "REC %08zx %08x\n", len,
				checksum(data, len));
	rec = malloc(hlen + len + 1);
	memcpy(rec, head, hlen);
	memcpy(rec + hlen, data, len);
	rec[hlen + len] = '\n';
	fd = open(log, O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (fd < 0)
		return fail("open", log);
	if (write_all(fd, rec, hlen + len + 1) < 0)
		return fail("write", log);
	if (fdatasync(fd) < 0)
		return fail("fdatasync", log);
	if (close(fd) < 0)
		return fail("close", log);
	return 0;
}

static int append_check(const char *log, const char *newf)
{
	size_t len, nlen, at = 0, last = 0, lastlen = 0;
	char *buf = slurp(log, &len), *want = slurp(newf, &nlen);
	int records = 0;

	if (!buf)
		return refuse("the log is missing");
	while (at < len) {
		size_t n;
		unsigned sum;

		if (sscanf(buf + at, "REC %zx %x\n", &n, &sum) != 2 ||
		    at + 22 + n + 1 > len || buf[at + 22 + n] != '\n' ||
		    checksum(buf + at + 22, n) != sum) {
			printf("record %d at byte %zu is cut or garbage\n",
			       records + 1, at);
			return 1;
		}
		last = at + 22;
		lastlen = n;
		at += 22 + n + 1;
		records++;
	}
	if (expect_new() && !same(buf + last, lastlen, want, nlen))
		return refuse("the last record is not the new one");
	return 0;
}

/* --------------------------------------------------------------- journal */

/* FULL: SQLite's default, synchronous=FULL: the directory is synced
 * after the journal is made (skipped, silently, when it cannot be
 * opened), never after the journal's unlink */
static int journal(const char *db, const char *newf, int full)
{
	char jname[4096];
	size_t olen, nlen;
	char *old = slurp(db, &olen), *data = slurp(newf, &nlen);
	int fd;

	if (!old)
		return fail("open", db);
	if (!data)
		return fail("open", newf);
	snprintf(jname, sizeof(jname), "%s-journal", db);
	fd = open(jname, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return fail("open", jname);
	if (write_all(fd, old, olen) < 0 || fsync(fd) < 0)
		return fail("write", jname);
	close(fd);
	if (full) {
		fd = open(".", O_RDONLY | O_DIRECTORY);
		if (fd >= 0) {	/* a failed open skips the fsync */
			if (fsync(fd) < 0)
				return fail("fsync", ".");
			close(fd);
		}
	} else if (sync_dir()) {
		return 1;
	}
	fd = open(db, O_WRONLY | O_TRUNC);
	if (fd < 0)
		return fail("open", db);
	if (write_all(fd, data, nlen) < 0)
		return fail("write", db);
	if (fsync(fd) < 0)
		return fail("fsync", db);
	close(fd);
	if (unlink(jname) < 0)
		return fail("unlink", jname);
	if (full)
		return 0;	/* BUG: the unlink that commits is never synced */
	fd = open(".", O_RDONLY | O_DIRECTORY);
	if (fd >= 0) {		/* BUG: a failed open skips the fsync, silently */
		if (fsync(fd) < 0)
			return fail("fsync", ".");
		close(fd);
	}
	return 0;
}

static int journal_check(const char *db, const char *oldf, const char *newf)
{
	char jname[4096];
	size_t len, jlen, olen, nlen;
	char *got, *j, *old = slurp(oldf, &olen), *data = slurp(newf, &nlen);

	snprintf(jname, sizeof(jname), "%s-journal", db);
	j = slurp(jname, &jlen);
	got = j ? j : slurp(db, &len);	/* a hot journal rolls DB back */
	if (j)
		len = jlen;
	if (!got)
		return refuse("the database is missing");
	if (same(got, len, data, nlen))
		return 0;
	if (same(got, len, old, olen))
		return expect_new() ? refuse(j ? "rolled back to the old content "
					       "by the journal left" :
					       "the old content") : 0;
	return refuse("neither the old content nor the new");
}

/* ------------------------------------------------------------- copytrunc */

static int copytrunc(const char *log, int said)
{
	char rotated[4096];
	size_t len;
	char *data = slurp(log, &len);
	int fd;

	if (!data)
		return fail("open", log);
	snprintf(rotated, sizeof(rotated), "%s.1", log);
	fd = open(rotated, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return fail("open", rotated);
	if (write_all(fd, data, len) < 0)
		return fail("write", rotated);
	if (fsync(fd) < 0 && said)	/* BUG: goes on either way */
		fprintf(stderr, "protocols: error: fsync '%s': %s\n", rotated,
			strerror(errno));
	if (close(fd) < 0)
		return fail("close", rotated);
	if (sync_dir())
		return 1;
	fd = open(log, O_WRONLY);
	if (fd < 0)
		return fail("open", log);
	if (ftruncate(fd, 0) < 0)
		return fail("ftruncate", log);
	if (fsync(fd) < 0)
		return fail("fsync", log);
	if (close(fd) < 0)
		return fail("close", log);
	return 0;
}

static int copytrunc_check(const char *log, const char *oldf)
{
	char rotated[4096];
	size_t len, rlen = 0, olen;
	char *got = slurp(log, &len), *old = slurp(oldf, &olen), *r;

	snprintf(rotated, sizeof(rotated), "%s.1", log);
	r = slurp(rotated, &rlen);
	if (got && len == 0 && same(r, rlen, old, olen))
		return 0;
	if (same(got, len, old, olen))
		return expect_new() ? refuse("not rotated") : 0;
	return refuse(r ? "the log rotated, its copy not whole" :
		      "the log lost");
}

/* ---------------------------------------------------------------- cancel */

static int cancel(const char *db, const char *newf)
{
	size_t olen, nlen;
	char *old = slurp(db, &olen), *data = slurp(newf, &nlen);
	int fd = open(db, O_WRONLY);

	if (fd < 0 || !old || !data)
		return fail("open", db);
	if (pwrite(fd, data, nlen, 0) != (ssize_t)nlen)
		return fail("pwrite", db);
	if (fdatasync(fd) < 0) {
		/* the transaction cancelled: the old content written back */
		if (pwrite(fd, old, olen, 0) != (ssize_t)olen ||
		    fdatasync(fd) < 0)
			return fail("pwrite", db);
		close(fd);
		return 0;	/* BUG: claims success, says nothing */
	}
	if (close(fd) < 0)
		return fail("close", db);
	return 0;
}

static int cancel_mapped(const char *db, const char *newf)
{
	size_t olen, nlen;
	char *old = slurp(db, &olen), *data = slurp(newf, &nlen), *map;
	int fd = open(db, O_RDWR);

	if (fd < 0 || !old || !data || olen != nlen)
		return fail("open", db);
	map = mmap(NULL, olen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return fail("mmap", db);
	memcpy(map, data, nlen);
	if (fdatasync(fd) < 0) {
		memcpy(map, old, olen);		/* the transaction cancelled */
		if (fdatasync(fd) < 0)
			return fail("fdatasync", db);
		munmap(map, olen);
		close(fd);
		return 0;	/* BUG: claims success, says nothing */
	}
	if (munmap(map, olen) < 0)
		return fail("munmap", db);
	if (close(fd) < 0)
		return fail("close", db);
	return 0;
}

/* -------------------------------------------------- prealloc, tidy, replace */

enum how { PREALLOC, TIDY, UNCHECKED };

static int replace(const char *target, const char *newf, enum how how)
{
	char tmp[4096];
	size_t len;
	char *data = slurp(newf, &len);
	int fd, err;

	if (!data)
		return fail("open", newf);
	snprintf(tmp, sizeof(tmp), "%s.tmp", target);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0)
		return fail("open", tmp);
	/* reserving the blocks is a help, not a must: it falls back to
	 * writing them */
	if (how == PREALLOC && len > 0 && (err = posix_fallocate(fd, 0, (off_t)len)))
		errno = err;
	if (write_all(fd, data, len) < 0)
		return fail("write", tmp);
	if (how == UNCHECKED)
		fsync(fd);	/* BUG: its failure ignored */
	else if (fsync(fd) < 0)
		return fail("fsync", tmp);
	if (close(fd) < 0) {
		if (how != TIDY)
			return fail("close", tmp);
		fprintf(stderr, "note: could not tidy up\n");	/* BUG */
	}
	if (rename(tmp, target) < 0)
		return fail("rename", tmp);
	return sync_dir();
}

/* --------------------------------------------------------------- inplace */

static int inplace(const char *target, const char *newf)
{
	size_t len;
	char *data = slurp(newf, &len);
	int fd;

	if (!data)
		return fail("open", newf);
	fd = open(target, O_WRONLY | O_TRUNC);	/* BUG: in place */
	if (fd < 0)
		return fail("open", target);
	if (write_all(fd, data, len) < 0)
		return fail("write", target);
	if (fsync(fd) < 0)
		return fail("fsync", target);
	if (close(fd) < 0)
		return fail("close", target);
	return 0;
}

/* ------------------------------------------------------------------- zip */

static int zip(const char *target)
{
	char out[4096];
	size_t len;
	char *data = slurp(target, &len);
	int fd;

	if (!data)
		return fail("open", target);
	snprintf(out, sizeof(out), "%s.z", target);
	fd = open(out, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0)
		return fail("open", out);
	if (write_all(fd, data, len) < 0) {
		int e = errno;

		unlink(out);
		errno = e;
		return fail("write", out);
	}
	if (close(fd) < 0) {		/* BUG: never fsynced */
		int e = errno;

		unlink(out);
		errno = e;
		return fail("close", out);
	}
	if (unlink(target) < 0)
		return fail("unlink", target);
	return 0;
}

static int zip_check(const char *target, const char *oldf)
{
	char out[4096];
	size_t len, zlen, olen;
	char *got = slurp(target, &len), *z, *old = slurp(oldf, &olen);

	snprintf(out, sizeof(out), "%s.z", target);
	z = slurp(out, &zlen);
	if (!got && same(z, zlen, old, olen))
		return 0;
	if (same(got, len, old, olen))
		return expect_new() ? refuse("not compressed") : 0;
	return refuse(got ? "the input changed" : z ? "the input gone, its copy "
		      "not whole" : "both the input and its copy gone");
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";

	if (!strcmp(m, "append") && argc == 4)
		return append(argv[2], argv[3]);
	if (!strcmp(m, "append-check") && argc == 4)
		return append_check(argv[2], argv[3]);
	if (!strcmp(m, "journal") && argc == 4)
		return journal(argv[2], argv[3], 0);
	if (!strcmp(m, "journal-full") && argc == 4)
		return journal(argv[2], argv[3], 1);
	if (!strcmp(m, "journal-check") && argc == 5)
		return journal_check(argv[2], argv[3], argv[4]);
	if (!strcmp(m, "copytrunc") && argc == 3)
		return copytrunc(argv[2], 0);
	if (!strcmp(m, "copytrunc-said") && argc == 3)
		return copytrunc(argv[2], 1);
	if (!strcmp(m, "copytrunc-check") && argc == 4)
		return copytrunc_check(argv[2], argv[3]);
	if (!strcmp(m, "cancel") && argc == 4)
		return cancel(argv[2], argv[3]);
	if (!strcmp(m, "cancel-mapped") && argc == 4)
		return cancel_mapped(argv[2], argv[3]);
	if (!strcmp(m, "prealloc") && argc == 4)
		return replace(argv[2], argv[3], PREALLOC);
	if (!strcmp(m, "tidy") && argc == 4)
		return replace(argv[2], argv[3], TIDY);
	if (!strcmp(m, "replace-unchecked") && argc == 4)
		return replace(argv[2], argv[3], UNCHECKED);
	if (!strcmp(m, "inplace") && argc == 4)
		return inplace(argv[2], argv[3]);
	if (!strcmp(m, "zip") && argc == 3)
		return zip(argv[2]);
	if (!strcmp(m, "zip-check") && argc == 4)
		return zip_check(argv[2], argv[3]);
	fprintf(stderr, "usage: protocols MODE ARGS (see the source's header)\n");
	return 2;
}
