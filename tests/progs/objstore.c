/*
 * objstore: a content-addressed store in git's manner, which syncs
 * nothing (tests/test_findings.py: many files lost by one cause are one
 * finding).
 *
 * Method: objstore store REF NEW cuts NEW into 1024-byte pieces and stores
 * each as an object, objects/XX/YYYY... named by its 64-bit hash in hex
 * (the first two digits a directory, made when missing): written to a
 * temporary file in that directory, link()ed to its name and the
 * temporary name unlinked. Then it writes the list of the objects' names
 * to REF.lock, fsyncs it, renames it over REF and fsyncs the directory.
 *
 * Defect: the objects are never fsynced, nor their directories, before
 * the rename of REF that names them: a power cut can keep REF and lose
 * the objects it points to (git's default: core.fsync is
 * committed,-loose-object).
 *
 * objstore check REF NEW: REF absent (the old state), or every object it
 * lists present and whole; with CRASHCHECK_EXPECT=new, REF lists NEW's
 * objects.
 *
 * Exit status: 0 done (the checker: acceptable), 1 failed (the checker:
 * one line saying what it found), 2 usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PIECE 1024

static uint64_t hash(const char *p, size_t n)
{
	uint64_t h = 1469598103934665603ULL;

	while (n--)
		h = (h ^ (unsigned char)*p++) * 1099511628211ULL;
	return h;
}

static int fail(const char *call, const char *path)
{
	fprintf(stderr, "objstore: %s '%s': %s\n", call, path, strerror(errno));
	return 1;
}

static char *slurp(const char *path, size_t *len)
{
	static char buf[1 << 20];
	int fd = open(path, O_RDONLY);
	ssize_t n;

	*len = 0;
	if (fd < 0)
		return NULL;
	while ((n = read(fd, buf + *len, sizeof(buf) - 1 - *len)) > 0)
		*len += (size_t)n;
	close(fd);
	buf[*len] = '\0';
	return buf;
}

static int put(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int store(const char *ref, const char *newf)
{
	char list[1 << 16], lock[4096], dir[64], tmp[128], name[128];
	size_t len, at, used = 0;
	char *data = slurp(newf, &len);
	int fd;

	if (!data)
		return fail("open", newf);
	if (mkdir("objects", 0755) < 0 && errno != EEXIST)
		return fail("mkdir", "objects");
	for (at = 0; at < len; at += PIECE) {
		size_t n = len - at < PIECE ? len - at : PIECE;
		uint64_t h = hash(data + at, n);

		snprintf(dir, sizeof(dir), "objects/%02x", (unsigned)(h >> 56));
		snprintf(name, sizeof(name), "%s/%014" PRIx64, dir,
			 (uint64_t)(h & 0xffffffffffffffULL));
		snprintf(tmp, sizeof(tmp), "%s/tmp_obj", dir);
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return fail("mkdir", dir);
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0444);
		if (fd < 0)
			return fail("open", tmp);
		if (put(fd, data + at, n) < 0)
			return fail("write", tmp);
		if (close(fd) < 0)		/* BUG: never fsynced */
			return fail("close", tmp);
		if (link(tmp, name) < 0 && errno != EEXIST)
			return fail("link", name);
		if (unlink(tmp) < 0)
			return fail("unlink", tmp);
		used += (size_t)snprintf(list + used, sizeof(list) - used, "%s\n",
					 name);
	}
	snprintf(lock, sizeof(lock), "%s.lock", ref);
	fd = open(lock, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0)
		return fail("open", lock);
	if (put(fd, list, used) < 0)
		return fail("write", lock);
	if (fsync(fd) < 0)
		return fail("fsync", lock);
	if (close(fd) < 0)
		return fail("close", lock);
	if (rename(lock, ref) < 0)
		return fail("rename", lock);
	fd = open(".", O_RDONLY | O_DIRECTORY);
	if (fd < 0 || fsync(fd) < 0)
		return fail("fsync", ".");
	close(fd);
	return 0;
}

static int check(const char *ref, const char *newf)
{
	static char want[1 << 16];
	size_t len, nlen, at, wlen = 0;
	char *list, *line, *data;
	const char *e = getenv("CRASHCHECK_EXPECT");
	int expect_new = !e || !strcmp(e, "new");

	data = slurp(newf, &nlen);
	for (at = 0; data && at < nlen; at += PIECE) {
		size_t n = nlen - at < PIECE ? nlen - at : PIECE;
		uint64_t h = hash(data + at, n);

		wlen += (size_t)snprintf(want + wlen, sizeof(want) - wlen,
					 "objects/%02x/%014" PRIx64 "\n",
					 (unsigned)(h >> 56), (uint64_t)(h & 0xffffffffffffffULL));
	}
	list = slurp(ref, &len);
	if (!list) {
		if (expect_new) {
			printf("%s is missing (CRASHCHECK_EXPECT=new)\n", ref);
			return 1;
		}
		return 0;
	}
	list = strdup(list);
	if (expect_new && strcmp(list, want)) {
		printf("%s does not list the new objects\n", ref);
		return 1;
	}
	for (line = strtok(list, "\n"); line; line = strtok(NULL, "\n")) {
		char *obj = slurp(line, &len), hex[32];

		snprintf(hex, sizeof(hex), "%014" PRIx64,
			 (uint64_t)(obj ? hash(obj, len) & 0xffffffffffffffULL : 0));
		if (!obj || strcmp(hex, strrchr(line, '/') + 1)) {
			printf("object file %s is %s\n", line,
			       !obj ? "missing" : len ? "corrupt" : "empty");
			return 1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "store"))
		return store(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "check"))
		return check(argv[2], argv[3]);
	fprintf(stderr, "usage: objstore store|check REF NEW\n");
	return 2;
}
