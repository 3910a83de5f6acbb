/*
 * Unit tests of workloads/lib/io.c: the write loop (through a scripted
 * test double of write(2)), the alignment arithmetic, and whole-file reads.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../workloads/lib/error.h"
#include "../../workloads/lib/io.h"

/*
 * The write double follows a script: each step is what one call does,
 * either "accept at most n bytes" (n > 0), "return 0" (n == 0) or "fail
 * with errno e" (n < 0, e = -n). Past the end of the script every call
 * accepts everything. Accepted bytes are appended to sink[] at the offset
 * the double has reached, so the test sees exactly what reached the "file".
 */
#define MAX_STEPS 16

static struct {
	long steps[MAX_STEPS];	/* the script, see above */
	int nsteps;		/* length of the script */
	int calls;		/* calls made so far */
	size_t off;		/* bytes accepted so far */
	unsigned char sink[1 << 16];	/* the bytes accepted, in order */
	size_t lens[64];	/* len asked for by each call (first 64) */
} dbl;

static void script(int n, ...)
{
	va_list ap;
	int i;

	memset(&dbl, 0, sizeof(dbl));
	va_start(ap, n);
	for (i = 0; i < n; i++)
		dbl.steps[i] = va_arg(ap, long);
	va_end(ap);
	dbl.nsteps = n;
}

static ssize_t write_double(int fd, const void *buf, size_t len)
{
	long step = dbl.calls < dbl.nsteps ? dbl.steps[dbl.calls] : (long)len;
	size_t n;

	(void)fd;
	if (dbl.calls < 64)
		dbl.lens[dbl.calls] = len;
	dbl.calls++;
	ck_assert_msg(dbl.calls < 1000, "write loop spins: %d calls", dbl.calls);
	if (step < 0) {
		errno = (int)-step;
		return -1;
	}
	n = (size_t)step < len ? (size_t)step : len;
	ck_assert_uint_le(dbl.off + n, sizeof(dbl.sink));
	memcpy(dbl.sink + dbl.off, buf, n);
	dbl.off += n;
	return (ssize_t)n;
}

static unsigned char payload[10000];

static void fill_payload(void)
{
	size_t i;

	for (i = 0; i < sizeof(payload); i++)
		payload[i] = (unsigned char)(i * 131 + 7);
}

START_TEST(test_write_all_at_once)
{
	fill_payload();
	script(0);
	ck_assert_int_eq(io_write_all_with(write_double, 1, payload, sizeof(payload)), 0);
	ck_assert_int_eq(dbl.calls, 1);
	ck_assert_uint_eq(dbl.off, sizeof(payload));
	ck_assert_mem_eq(dbl.sink, payload, sizeof(payload));
}
END_TEST

START_TEST(test_write_empty_makes_no_call)
{
	script(1, -(long)EIO);
	ck_assert_int_eq(io_write_all_with(write_double, 1, payload, 0), 0);
	ck_assert_int_eq(dbl.calls, 0);
}
END_TEST

START_TEST(test_write_short_writes_continue)
{
	fill_payload();
	/* 1 byte, then 4095, then 3: each call must resume where the last stopped. */
	script(3, 1L, 4095L, 3L);
	ck_assert_int_eq(io_write_all_with(write_double, 1, payload, sizeof(payload)), 0);
	ck_assert_int_eq(dbl.calls, 4);
	ck_assert_uint_eq(dbl.lens[0], 10000);
	ck_assert_uint_eq(dbl.lens[1], 9999);
	ck_assert_uint_eq(dbl.lens[2], 5904);
	ck_assert_uint_eq(dbl.lens[3], 5901);
	ck_assert_uint_eq(dbl.off, sizeof(payload));
	ck_assert_mem_eq(dbl.sink, payload, sizeof(payload));
}
END_TEST

START_TEST(test_write_eintr_retried)
{
	fill_payload();
	/* EINTR before anything, after a short write, and twice in a row. */
	script(5, -(long)EINTR, 100L, -(long)EINTR, -(long)EINTR, 900L);
	ck_assert_int_eq(io_write_all_with(write_double, 1, payload, sizeof(payload)), 0);
	ck_assert_int_eq(dbl.calls, 6);
	ck_assert_uint_eq(dbl.lens[0], 10000);
	ck_assert_uint_eq(dbl.lens[1], 10000);
	ck_assert_uint_eq(dbl.lens[2], 9900);
	ck_assert_uint_eq(dbl.lens[4], 9900);
	ck_assert_uint_eq(dbl.lens[5], 9000);
	ck_assert_mem_eq(dbl.sink, payload, sizeof(payload));
}
END_TEST

START_TEST(test_write_error_stops)
{
	static const int errs[] = { EIO, ENOSPC, EBADF, EFBIG };
	size_t i;

	fill_payload();
	for (i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
		/* The error comes after a partial success: no retry, errno kept. */
		script(2, 512L, -(long)errs[i]);
		errno = 0;
		ck_assert_int_eq(io_write_all_with(write_double, 1, payload, sizeof(payload)), -1);
		ck_assert_int_eq(errno, errs[i]);
		ck_assert_int_eq(dbl.calls, 2);
		ck_assert_uint_eq(dbl.off, 512);
	}
}
END_TEST

START_TEST(test_write_zero_return_is_enospc)
{
	fill_payload();
	script(2, 4096L, 0L);
	errno = 0;
	ck_assert_int_eq(io_write_all_with(write_double, 1, payload, sizeof(payload)), -1);
	ck_assert_int_eq(errno, ENOSPC);
	/* One call after the zero would already be a retry of a stuck write. */
	ck_assert_int_eq(dbl.calls, 2);
}
END_TEST

START_TEST(test_write_all_real_fd)
{
	char path[] = "/tmp/check_io.XXXXXX", back[sizeof(payload)];
	int fd;

	fill_payload();
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(io_write_all(fd, payload, sizeof(payload)), 0);
	ck_assert_int_eq(pread(fd, back, sizeof(back), 0), (ssize_t)sizeof(back));
	ck_assert_mem_eq(back, payload, sizeof(payload));
	close(fd);
	/* A closed descriptor is an error the loop must pass up, not retry. */
	errno = 0;
	ck_assert_int_eq(io_write_all(fd, payload, 1), -1);
	ck_assert_int_eq(errno, EBADF);
	unlink(path);
}
END_TEST

START_TEST(test_align_up)
{
	static const struct {
		size_t n, unit, want;
	} cases[] = {
		{ 0, 512, 0 }, { 1, 512, 512 }, { 511, 512, 512 },
		{ 512, 512, 512 }, { 513, 512, 1024 }, { 4095, 4096, 4096 },
		{ 4096, 4096, 4096 }, { 4097, 4096, 8192 }, { 65537, 4096, 69632 },
		{ 4194305, 4096, 4198400 }, { 10, 3, 12 }, { 7, 1, 7 },
		{ SIZE_MAX - 4095, 4096, SIZE_MAX - 4095 },
	};
	size_t i, got;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		got = 12345;
		ck_assert_msg(io_align_up(cases[i].n, cases[i].unit, &got) == 0,
			      "io_align_up(%zu, %zu) failed", cases[i].n, cases[i].unit);
		ck_assert_msg(got == cases[i].want, "io_align_up(%zu, %zu): expected %zu, got %zu",
			      cases[i].n, cases[i].unit, cases[i].want, got);
	}
}
END_TEST

START_TEST(test_align_up_overflow)
{
	size_t got = 777;

	errno = 0;
	ck_assert_int_eq(io_align_up(SIZE_MAX, 4096, &got), -1);
	ck_assert_int_eq(errno, EOVERFLOW);
	ck_assert_uint_eq(got, 777);
	ck_assert_int_eq(io_align_up(SIZE_MAX - 4094, 4096, &got), -1);
	errno = 0;
	ck_assert_int_eq(io_align_up(1, 0, &got), -1);
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

START_TEST(test_dio_unit_choose)
{
	/* Kernel did not answer: the historical safe value. */
	ck_assert_uint_eq(io_dio_unit_choose(0, 0, 0), IO_DIO_FALLBACK);
	ck_assert_uint_eq(io_dio_unit_choose(0, 512, 512), IO_DIO_FALLBACK);
	/* Kernel said: direct I/O impossible on this file. */
	ck_assert_uint_eq(io_dio_unit_choose(1, 0, 0), 0);
	ck_assert_uint_eq(io_dio_unit_choose(1, 512, 0), 0);
	/* Not powers of two: no single unit is safe. */
	ck_assert_uint_eq(io_dio_unit_choose(1, 3000, 512), 0);
	ck_assert_uint_eq(io_dio_unit_choose(1, 512, 1536), 0);
	/* The larger of the two, which the smaller divides. */
	ck_assert_uint_eq(io_dio_unit_choose(1, 512, 512), 512);
	ck_assert_uint_eq(io_dio_unit_choose(1, 4, 512), 512);
	ck_assert_uint_eq(io_dio_unit_choose(1, 4096, 512), 4096);
	ck_assert_uint_eq(io_dio_unit_choose(1, 512, 4096), 4096);
	/* At least pointer-sized, for posix_memalign. */
	ck_assert_uint_eq(io_dio_unit_choose(1, 1, 1), sizeof(void *));
}
END_TEST

START_TEST(test_dio_unit_real_file)
{
	char path[] = "/tmp/check_io.XXXXXX";
	int fd = mkstemp(path);
	size_t unit;

	ck_assert_int_ge(fd, 0);
	unit = io_dio_unit(fd);
	/* Whatever the filesystem says, it must be a usable unit or 0. */
	ck_assert_msg(unit == 0 || (unit >= sizeof(void *) && (unit & (unit - 1)) == 0),
		      "io_dio_unit: %zu is neither 0 nor a power of two", unit);
	close(fd);
	unlink(path);
}
END_TEST

START_TEST(test_read_file)
{
	static const size_t sizes[] = { 0, 1, 4095, 4096, 4097, 65537 };
	char path[] = "/tmp/check_io.XXXXXX";
	unsigned char *big;
	size_t i, j, size;
	char *data;
	int fd;

	big = malloc(65537);
	ck_assert_ptr_nonnull(big);
	for (j = 0; j < 65537; j++)
		big[j] = (unsigned char)(j ^ (j >> 8));
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		ck_assert_int_eq(ftruncate(fd, 0), 0);
		ck_assert_int_eq(pwrite(fd, big, sizes[i], 0), (ssize_t)sizes[i]);
		data = NULL;
		size = 99;
		ck_assert_int_eq(io_read_file(path, &data, &size), 0);
		ck_assert_ptr_nonnull(data);
		ck_assert_uint_eq(size, sizes[i]);
		ck_assert_mem_eq(data, big, sizes[i]);
		free(data);
	}
	close(fd);
	unlink(path);
	free(big);
}
END_TEST

START_TEST(test_read_file_missing)
{
	char *data = (char *)0x1;
	size_t size = 5;
	char line[256] = "";
	FILE *err = tmpfile();
	int saved = dup(2);

	ck_assert_ptr_nonnull(err);
	error_prog = "check_io";
	ck_assert_int_eq(dup2(fileno(err), 2), 2);
	ck_assert_int_eq(io_read_file("/nonexistent/check_io", &data, &size), IO_FAILED);
	ck_assert_int_eq(dup2(saved, 2), 2);
	ck_assert_ptr_eq(data, (char *)0x1);
	ck_assert_uint_eq(size, 5);
	rewind(err);
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), err));
	ck_assert_str_eq(line, "check_io: open '/nonexistent/check_io': No such file or directory\n");
	ck_assert_ptr_null(fgets(line, sizeof(line), err));
	fclose(err);
}
END_TEST

static Suite *io_suite(void)
{
	Suite *s = suite_create("io");
	TCase *tc;

	tc = tcase_create("write_all");
	tcase_add_test(tc, test_write_all_at_once);
	tcase_add_test(tc, test_write_empty_makes_no_call);
	tcase_add_test(tc, test_write_short_writes_continue);
	tcase_add_test(tc, test_write_eintr_retried);
	tcase_add_test(tc, test_write_error_stops);
	tcase_add_test(tc, test_write_zero_return_is_enospc);
	tcase_add_test(tc, test_write_all_real_fd);
	suite_add_tcase(s, tc);

	tc = tcase_create("align");
	tcase_add_test(tc, test_align_up);
	tcase_add_test(tc, test_align_up_overflow);
	tcase_add_test(tc, test_dio_unit_choose);
	tcase_add_test(tc, test_dio_unit_real_file);
	suite_add_tcase(s, tc);

	tc = tcase_create("read_file");
	tcase_add_test(tc, test_read_file);
	tcase_add_test(tc, test_read_file_missing);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(io_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
