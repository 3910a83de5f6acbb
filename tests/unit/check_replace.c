/*
 * Failure paths of replace_file() and overwrite_file() (workloads/lib).
 *
 * The library objects are linked unchanged, with -Wl,--wrap for every
 * libc call they make that can fail (see check_replace_WRAP in the
 * Makefile): each call goes through __wrap_<call> below, which passes
 * through to the real call unless a fault is armed for it. A fault fails
 * the nth call of one kind (or the nth and every later one, like a full
 * disk that stays full) with EIO. For each strategy and payload size, each
 * kind of call is failed at n = 1, 2, ... until the fault no longer fires
 * (the run then succeeds), as SQLite's I/O-error tests raise the fault
 * point until the operation completes. After every failing run:
 *
 *  - the function returned IO_FAILED and printed exactly one line, naming
 *    the failed call and strerror(EIO);
 *  - no temp file is left in the directory;
 *  - replace: TARGET holds its old content if the fault hit before the
 *    rename took effect, the new content if it hit after (the directory
 *    fsync), and nothing else.
 *
 * The wrappers are armed only around the call under test, so Check's own
 * I/O (libcheck is a static archive, wrapped too) always passes through.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../workloads/lib/error.h"
#include "../../workloads/lib/update.h"

/* ---- the fault double ------------------------------------------------ */

enum fault_kind {
	FAULT_ERRNO,		/* fail with err */
	FAULT_EINTR,		/* write, fwrite, fflush: fail with EINTR (transient) */
	FAULT_SHORT,		/* write only: write half (whole O_DIRECT units) */
	FAULT_DIO_EINVAL,	/* open with O_DIRECT: create the file, then EINVAL */
	FAULT_DIO_EINVAL_NOCREATE, /* open with O_DIRECT: EINVAL, nothing created */
};

static struct {
	int armed;		/* faults fire only while set */
	const char *call;	/* which wrapped call, e.g. "fsync" */
	int nth;		/* fire on the nth call to it, 1-based */
	int persist;		/* and on every later one too */
	enum fault_kind kind;
	int err;		/* errno for FAULT_ERRNO */
	int calls;		/* calls to it seen while armed */
	int fired;		/* times the fault fired */
	int fired_after_rename;	/* the first firing came after a successful rename */
	int renamed;		/* a real rename has succeeded while armed */
} F;

static int should_fail(const char *call)
{
	if (!F.armed || strcmp(call, F.call))
		return 0;
	F.calls++;
	if (F.calls == F.nth || (F.persist && F.calls > F.nth)) {
		if (!F.fired)
			F.fired_after_rename = F.renamed;
		F.fired++;
		return 1;
	}
	return 0;
}

int __real_open(const char *path, int flags, ...);
FILE *__real_fopen(const char *path, const char *mode);
size_t __real_fwrite(const void *p, size_t size, size_t n, FILE *fp);
int __real_fflush(FILE *fp);
int __real_fclose(FILE *fp);
ssize_t __real_write(int fd, const void *buf, size_t len);
int __real_fsync(int fd);
int __real_fdatasync(int fd);
int __real_ftruncate(int fd, off_t len);
int __real_posix_fallocate(int fd, off_t off, off_t len);
void *__real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int __real_msync(void *addr, size_t len, int flags);
int __real_munmap(void *addr, size_t len);
int __real_close(int fd);
int __real_rename(const char *from, const char *to);

int __wrap_open(const char *path, int flags, ...)
{
	mode_t mode = 0;
	va_list ap;

	if (flags & (O_CREAT | O_TMPFILE)) {
		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	if ((flags & O_DIRECT) && F.kind >= FAULT_DIO_EINVAL && should_fail("open")) {
		/* What tmpfs did before Linux 6.6: create, then refuse. */
		if (F.kind == FAULT_DIO_EINVAL) {
			int fd = __real_open(path, flags & ~O_DIRECT, mode);

			if (fd >= 0)
				__real_close(fd);
		}
		errno = EINVAL;
		return -1;
	}
	if (F.kind == FAULT_ERRNO && should_fail("open")) {
		errno = F.err;
		return -1;
	}
	return __real_open(path, flags, mode);
}

FILE *__wrap_fopen(const char *path, const char *mode)
{
	if (should_fail("fopen")) {
		errno = F.err;
		return NULL;
	}
	return __real_fopen(path, mode);
}

size_t __wrap_fwrite(const void *p, size_t size, size_t n, FILE *fp)
{
	if (should_fail("fwrite")) {
		errno = F.kind == FAULT_EINTR ? EINTR : F.err;
		return 0;
	}
	return __real_fwrite(p, size, n, fp);
}

int __wrap_fflush(FILE *fp)
{
	if (should_fail("fflush")) {
		errno = F.kind == FAULT_EINTR ? EINTR : F.err;
		return EOF;
	}
	return __real_fflush(fp);
}

int __wrap_fclose(FILE *fp)
{
	/* A failing fclose still releases the stream (C11 7.21.5.1). */
	if (should_fail("fclose")) {
		__real_fclose(fp);
		errno = F.err;
		return EOF;
	}
	return __real_fclose(fp);
}

ssize_t __wrap_write(int fd, const void *buf, size_t len)
{
	if (F.kind == FAULT_SHORT) {
		size_t half = len / 2;

		/* A short O_DIRECT write still covers whole units. */
		if (fcntl(fd, F_GETFL) & O_DIRECT)
			half -= half % 4096;
		if (half > 0 && should_fail("write"))
			return __real_write(fd, buf, half);
		return __real_write(fd, buf, len);
	}
	if (should_fail("write")) {
		errno = F.kind == FAULT_EINTR ? EINTR : F.err;
		return -1;
	}
	return __real_write(fd, buf, len);
}

#define WRAP_INT1(name, type)						\
	int __wrap_##name(type a)					\
	{								\
		if (should_fail(#name)) {				\
			errno = F.err;					\
			return -1;					\
		}							\
		return __real_##name(a);				\
	}

WRAP_INT1(fsync, int)
WRAP_INT1(fdatasync, int)

int __wrap_ftruncate(int fd, off_t len)
{
	if (should_fail("ftruncate")) {
		errno = F.err;
		return -1;
	}
	return __real_ftruncate(fd, len);
}

int __wrap_posix_fallocate(int fd, off_t off, off_t len)
{
	/* Returns the error number and leaves errno alone, like glibc's. */
	if (should_fail("posix_fallocate"))
		return F.err;
	return __real_posix_fallocate(fd, off, len);
}

void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (should_fail("mmap")) {
		errno = F.err;
		return MAP_FAILED;
	}
	return __real_mmap(addr, len, prot, flags, fd, off);
}

int __wrap_msync(void *addr, size_t len, int flags)
{
	if (should_fail("msync")) {
		errno = F.err;
		return -1;
	}
	return __real_msync(addr, len, flags);
}

int __wrap_munmap(void *addr, size_t len)
{
	if (should_fail("munmap")) {
		errno = F.err;
		return -1;
	}
	return __real_munmap(addr, len);
}

int __wrap_close(int fd)
{
	/* Linux releases the descriptor even when close reports an error. */
	if (should_fail("close")) {
		__real_close(fd);
		errno = F.err;
		return -1;
	}
	return __real_close(fd);
}

int __wrap_rename(const char *from, const char *to)
{
	int ret;

	if (should_fail("rename")) {
		errno = F.err;
		return -1;
	}
	ret = __real_rename(from, to);
	if (ret == 0 && F.armed)
		F.renamed = 1;
	return ret;
}

static const char *const wrapped_calls[] = {
	"open", "fopen", "fwrite", "fflush", "fclose", "write", "fsync",
	"fdatasync", "ftruncate", "posix_fallocate", "mmap", "msync",
	"munmap", "close", "rename",
};
#define NWRAPPED (sizeof(wrapped_calls) / sizeof(wrapped_calls[0]))

/* ---- scratch directory and helpers ---------------------------------- */

static char scratch[256], target[300], tmpname[310];
static unsigned char *old_data, *new_data;
static size_t old_size, new_size;

static void scratch_setup(void)
{
	const char *base = getenv("TMPDIR");

	snprintf(scratch, sizeof(scratch), "%s/check_replace.XXXXXX",
		 base && *base ? base : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(scratch));
	snprintf(target, sizeof(target), "%s/target", scratch);
	snprintf(tmpname, sizeof(tmpname), "%s%s", target, REPLACE_TMP_SUFFIX);
}

static void scratch_clear(void)
{
	DIR *d = opendir(scratch);
	struct dirent *e;
	char path[600];

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			snprintf(path, sizeof(path), "%s/%s", scratch, e->d_name);
			ck_assert_int_eq(unlink(path), 0);
		}
	closedir(d);
}

static void scratch_teardown(void)
{
	if (!scratch[0])
		return;
	scratch_clear();
	rmdir(scratch);
	free(old_data);
	free(new_data);
	old_data = new_data = NULL;
}

static unsigned char *pattern(size_t size, unsigned seed)
{
	unsigned char *p = malloc(size ? size : 1);
	size_t i;

	ck_assert_ptr_nonnull(p);
	for (i = 0; i < size; i++)
		p[i] = (unsigned char)((i * 2654435761u) >> 13 ^ seed);
	return p;
}

static void write_file(const char *path, const void *data, size_t size)
{
	FILE *fp = fopen(path, "w");

	ck_assert_ptr_nonnull(fp);
	ck_assert_uint_eq(fwrite(data, 1, size, fp), size);
	ck_assert_int_eq(fclose(fp), 0);
}

/* Compare path with data; return a static description of the mismatch, or NULL. */
static const char *differs(const char *path, const void *data, size_t size)
{
	static char why[128];
	struct stat st;
	unsigned char *buf;
	FILE *fp;
	size_t got;

	if (stat(path, &st) < 0)
		return "missing";
	if ((size_t)st.st_size != size) {
		snprintf(why, sizeof(why), "%lld bytes where %zu expected",
			 (long long)st.st_size, size);
		return why;
	}
	buf = malloc(size ? size : 1);
	fp = fopen(path, "r");
	ck_assert_ptr_nonnull(fp);
	got = fread(buf, 1, size, fp);
	fclose(fp);
	if (got != size || memcmp(buf, data, size)) {
		free(buf);
		return "different bytes";
	}
	free(buf);
	return NULL;
}

/* Names in the scratch directory other than "target", space-separated. */
static const char *leftovers(void)
{
	static char names[512];
	DIR *d = opendir(scratch);
	struct dirent *e;

	names[0] = '\0';
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
		    strcmp(e->d_name, "target")) {
			strncat(names, " ", sizeof(names) - strlen(names) - 1);
			strncat(names, e->d_name, sizeof(names) - strlen(names) - 1);
		}
	closedir(d);
	return names;
}

/*
 * Run fn with stderr captured and the fault armed; fill lines[] with what
 * it printed (at most 4 lines) and return its result.
 */
static int run_armed(update_fn *fn, enum put_strategy s, char lines[4][512], int *nlines)
{
	char errpath[320];
	FILE *err;
	int saved, fd, ret;

	snprintf(errpath, sizeof(errpath), "%s.stderr", scratch);
	fflush(stderr);
	saved = dup(2);
	fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(dup2(fd, 2), 2);
	close(fd);

	F.armed = 1;
	ret = fn(target, new_data, new_size, s);
	F.armed = 0;

	ck_assert_int_eq(dup2(saved, 2), 2);
	close(saved);
	err = fopen(errpath, "r");
	ck_assert_ptr_nonnull(err);
	*nlines = 0;
	while (*nlines < 4 && fgets(lines[*nlines], 512, err))
		(*nlines)++;
	fclose(err);
	unlink(errpath);
	return ret;
}

static void arm(const char *call, int nth, int persist, enum fault_kind kind)
{
	memset(&F, 0, sizeof(F));
	F.call = call;
	F.nth = nth;
	F.persist = persist;
	F.kind = kind;
	F.err = EIO;
}

/* ---- the sweep ------------------------------------------------------- */

static const size_t sizes[] = { 0, 1, 4097, 65537 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
#define NSTRATEGIES 4

/*
 * Calls each strategy must make for a non-empty payload: if a fault on one
 * of these never fires, the sweep is not testing what it claims to.
 */
static const char *const used_by[NSTRATEGIES][8] = {
	[PUT_STDIO] = { "fopen", "fwrite", "fflush", "fsync", "fclose", NULL },
	[PUT_DIRECT] = { "open", "write", "ftruncate", "fsync", "close", NULL },
	[PUT_SYNC] = { "open", "write", "close", NULL },
	[PUT_MMAP] = { "open", "posix_fallocate", "mmap", "msync", "munmap",
		       "fsync", "close", NULL },
};

static int must_use(enum put_strategy s, const char *call)
{
	int i;

	for (i = 0; used_by[s][i]; i++)
		if (!strcmp(used_by[s][i], call))
			return 1;
	return 0;
}

static void sweep(const char *prog, update_fn *fn, int atomic, int loop)
{
	enum put_strategy s = (enum put_strategy)(loop / NSIZES);
	size_t c, failures = 0;
	char lines[4][512], want[64];
	int nlines, ret, persist, nth;

	error_prog = prog;
	scratch_setup();
	new_size = sizes[loop % NSIZES];
	new_data = pattern(new_size, 0x5a);
	old_size = new_size + 5000;	/* longer: in-place must truncate */
	old_data = pattern(old_size, 0xc3);

	for (c = 0; c < NWRAPPED; c++) {
		const char *call = wrapped_calls[c];

		for (persist = 0; persist <= 1; persist++) {
			for (nth = 1;; nth++) {
				const char *bad;

				ck_assert_msg(nth < 100, "%s %s %zuB: %s#%d still fires",
					      prog, put_strategy_name(s), new_size, call, nth);
				scratch_clear();
				write_file(target, old_data, old_size);
				arm(call, nth, persist, FAULT_ERRNO);
				ret = run_armed(fn, s, lines, &nlines);

				if (ret == IO_UNSUPPORTED) {
					fprintf(stderr, "SKIP %s %s: %s", prog,
						put_strategy_name(s), nlines ? lines[0] : "\n");
					return;
				}
				if (!F.fired) {
					/* Past the last such call: a clean run. */
					ck_assert_msg(ret == 0 && nlines == 0,
						      "%s %s %zuB %s#%d (not fired): expected success, got %d: %s",
						      prog, put_strategy_name(s), new_size, call, nth,
						      ret, nlines ? lines[0] : "(no message)");
					bad = differs(target, new_data, new_size);
					ck_assert_msg(!bad, "%s %s %zuB clean run: target %s",
						      prog, put_strategy_name(s), new_size, bad);
					if (nth == 1 && new_size > 0)
						ck_assert_msg(!must_use(s, call),
							      "%s %s %zuB: a fault on %s never fired",
							      prog, put_strategy_name(s), new_size, call);
					break;
				}
				failures++;
				ck_assert_msg(ret == IO_FAILED,
					      "%s %s %zuB %s#%d%s=EIO: expected IO_FAILED, got %d",
					      prog, put_strategy_name(s), new_size, call, nth,
					      persist ? "+" : "", ret);
				ck_assert_msg(nlines == 1,
					      "%s %s %zuB %s#%d%s=EIO: expected one line on stderr, got %d: %s",
					      prog, put_strategy_name(s), new_size, call, nth,
					      persist ? "+" : "", nlines, nlines ? lines[0] : "");
				snprintf(want, sizeof(want), "%s: %s '", prog, call);
				ck_assert_msg(!strncmp(lines[0], want, strlen(want)) &&
					      strstr(lines[0], ": Input/output error\n"),
					      "%s %s %zuB %s#%d%s=EIO: expected \"%s...: Input/output error\", got \"%s\"",
					      prog, put_strategy_name(s), new_size, call, nth,
					      persist ? "+" : "", want, lines[0]);
				ck_assert_msg(!*leftovers(),
					      "%s %s %zuB %s#%d%s=EIO: left behind:%s",
					      prog, put_strategy_name(s), new_size, call, nth,
					      persist ? "+" : "", leftovers());
				if (!atomic)
					continue;
				if (F.fired_after_rename) {
					bad = differs(target, new_data, new_size);
					ck_assert_msg(!bad, "%s %s %zuB %s#%d=EIO after rename: expected new content, target %s",
						      prog, put_strategy_name(s), new_size, call, nth, bad);
				} else {
					bad = differs(target, old_data, old_size);
					ck_assert_msg(!bad, "%s %s %zuB %s#%d=EIO before rename: expected old content, target %s",
						      prog, put_strategy_name(s), new_size, call, nth, bad);
				}
			}
		}
	}
	/* Every strategy has at least open/close (or fopen/fclose) and the rest. */
	ck_assert_uint_ge(failures, 4);
	scratch_teardown();
}

START_TEST(test_replace_each_call_fails)
{
	sweep("replace", replace_file, 1, _i);
}
END_TEST

START_TEST(test_overwrite_each_call_fails)
{
	sweep("overwrite", overwrite_file, 0, _i);
}
END_TEST

/* EINTR and short writes are transient: the update must still succeed. */
static void transient(update_fn *fn, enum fault_kind kind, int loop)
{
	enum put_strategy s = loop / NSIZES == 0 ? PUT_DIRECT : PUT_SYNC;
	char lines[4][512];
	const char *bad;
	int nth, nlines, fired = 0;

	error_prog = "replace";
	scratch_setup();
	new_size = sizes[loop % NSIZES] * 3;	/* several O_DIRECT units */
	new_data = pattern(new_size, 0x11);
	old_size = 10;
	old_data = pattern(old_size, 0x22);
	for (nth = 1; nth < 50; nth++) {
		scratch_clear();
		write_file(target, old_data, old_size);
		arm("write", nth, 0, kind);
		ck_assert_int_eq(run_armed(fn, s, lines, &nlines), 0);
		ck_assert_int_eq(nlines, 0);
		bad = differs(target, new_data, new_size);
		ck_assert_msg(!bad, "%s %zuB write#%d transient fault: target %s",
			      put_strategy_name(s), new_size, nth, bad);
		ck_assert_msg(!*leftovers(), "left behind:%s", leftovers());
		if (!F.fired)
			break;
		fired++;
	}
	/* Nothing to write for 0 bytes; short needs more than one unit. */
	if (new_size > (kind == FAULT_SHORT && s == PUT_DIRECT ? 8192u : 0u))
		ck_assert_int_ge(fired, 1);
	scratch_teardown();
}

/*
 * An EINTR from the write inside fwrite or fflush (what the syscall
 * backend gives stdio): the stream cannot be retried where it stopped,
 * and put_stdio starts its writing over; the update still succeeds, and
 * in place the file is truncated to the new size.
 */
static void stdio_eintr(update_fn *fn, const char *call, int loop)
{
	char lines[4][512];
	const char *bad;
	int nth, nlines, fired = 0;

	error_prog = "replace";
	scratch_setup();
	new_size = sizes[loop % NSIZES];
	new_data = pattern(new_size, 0x33);
	old_size = new_size + 5000;
	old_data = pattern(old_size, 0x44);
	for (nth = 1; nth < 50; nth++) {
		scratch_clear();
		write_file(target, old_data, old_size);
		arm(call, nth, 0, FAULT_EINTR);
		ck_assert_int_eq(run_armed(fn, PUT_STDIO, lines, &nlines), 0);
		ck_assert_msg(nlines == 0, "stdio %zuB %s#%d=EINTR: %s", new_size,
			      call, nth, lines[0]);
		bad = differs(target, new_data, new_size);
		ck_assert_msg(!bad, "stdio %zuB %s#%d=EINTR: target %s",
			      new_size, call, nth, bad);
		ck_assert_msg(!*leftovers(), "left behind:%s", leftovers());
		if (!F.fired)
			break;
		fired++;
	}
	/* fwrite of nothing is skipped; fflush is always called */
	if (new_size > 0 || !strcmp(call, "fflush"))
		ck_assert_int_ge(fired, 1);
	scratch_teardown();
}

START_TEST(test_replace_stdio_eintr)
{
	stdio_eintr(replace_file, _i < (int)NSIZES ? "fwrite" : "fflush", _i);
}
END_TEST

START_TEST(test_overwrite_stdio_eintr)
{
	stdio_eintr(overwrite_file, _i < (int)NSIZES ? "fwrite" : "fflush", _i);
}
END_TEST

START_TEST(test_replace_eintr)
{
	transient(replace_file, FAULT_EINTR, _i);
}
END_TEST

START_TEST(test_replace_short_write)
{
	transient(replace_file, FAULT_SHORT, _i);
}
END_TEST

START_TEST(test_overwrite_short_write)
{
	transient(overwrite_file, FAULT_SHORT, _i);
}
END_TEST

/* O_DIRECT refused at open: IO_UNSUPPORTED, the message, nothing left. */
static void dio_refused(enum fault_kind kind)
{
	char lines[4][512], want[512];
	const char *bad;
	int nlines;

	error_prog = "replace";
	scratch_setup();
	new_size = 4096;
	new_data = pattern(new_size, 1);
	old_size = 100;
	old_data = pattern(old_size, 2);
	write_file(target, old_data, old_size);
	arm("open", 1, 0, kind);
	ck_assert_int_eq(run_armed(replace_file, PUT_DIRECT, lines, &nlines), IO_UNSUPPORTED);
	ck_assert_int_eq(F.fired, 1);
	ck_assert_int_eq(nlines, 1);
	snprintf(want, sizeof(want), "replace: O_DIRECT unsupported on this filesystem: '%s'\n",
		 tmpname);
	ck_assert_str_eq(lines[0], want);
	ck_assert_msg(!*leftovers(), "left behind:%s", leftovers());
	bad = differs(target, old_data, old_size);
	ck_assert_msg(!bad, "target %s", bad);
	scratch_teardown();
}

START_TEST(test_direct_refused_after_create)
{
	dio_refused(FAULT_DIO_EINVAL);
}
END_TEST

START_TEST(test_direct_refused_before_create)
{
	dio_refused(FAULT_DIO_EINVAL_NOCREATE);
}
END_TEST

/*
 * A temp file that is not ours (a crashed run's, or a concurrent
 * replace's) must be neither written through nor removed.
 */
START_TEST(test_stale_temp_is_not_touched)
{
	enum put_strategy s = (enum put_strategy)_i;
	static const char stale[] = "someone else's temp file";
	char lines[4][512], want[512];
	const char *bad;
	int nlines;

	error_prog = "replace";
	scratch_setup();
	new_size = 5000;
	new_data = pattern(new_size, 3);
	old_size = 7;
	old_data = pattern(old_size, 4);
	write_file(target, old_data, old_size);
	write_file(tmpname, stale, sizeof(stale));
	arm("none", 1, 0, FAULT_ERRNO);
	ck_assert_int_eq(run_armed(replace_file, s, lines, &nlines), IO_FAILED);
	ck_assert_int_eq(nlines, 1);
	snprintf(want, sizeof(want), "replace: %s '%s': File exists\n",
		 s == PUT_STDIO ? "fopen" : "open", tmpname);
	ck_assert_str_eq(lines[0], want);
	bad = differs(tmpname, stale, sizeof(stale));
	ck_assert_msg(!bad, "stale temp file %s", bad);
	bad = differs(target, old_data, old_size);
	ck_assert_msg(!bad, "target %s", bad);
	scratch_teardown();
}
END_TEST

static Suite *replace_suite(void)
{
	Suite *s = suite_create("replace");
	TCase *tc;

	tc = tcase_create("each_call_fails");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_replace_each_call_fails, 0, NSTRATEGIES * NSIZES);
	tcase_add_loop_test(tc, test_overwrite_each_call_fails, 0, NSTRATEGIES * NSIZES);
	suite_add_tcase(s, tc);

	tc = tcase_create("transient");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_replace_eintr, 0, 2 * NSIZES);
	tcase_add_loop_test(tc, test_replace_short_write, 0, 2 * NSIZES);
	tcase_add_loop_test(tc, test_overwrite_short_write, 0, 2 * NSIZES);
	tcase_add_loop_test(tc, test_replace_stdio_eintr, 0, 2 * NSIZES);
	tcase_add_loop_test(tc, test_overwrite_stdio_eintr, 0, 2 * NSIZES);
	suite_add_tcase(s, tc);

	tc = tcase_create("refusals");
	tcase_add_test(tc, test_direct_refused_after_create);
	tcase_add_test(tc, test_direct_refused_before_create);
	tcase_add_loop_test(tc, test_stale_temp_is_not_touched, 0, NSTRATEGIES);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(replace_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
