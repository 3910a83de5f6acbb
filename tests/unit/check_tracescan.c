/*
 * Check tests of harness/engine/tracescan.c, the moot-write scan trace.py loads
 * with ctypes. tests/test_tracescan.py holds its answers to the Python
 * scan's; these run it where the sanitizers can watch (SANITIZE builds
 * this test, never the shared object): each input is copied into a buffer
 * of its own length, so that a read past a line's end is a report.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../harness/engine/tracescan.h"

#define WRITE_77 \
	"{\"ev\":\"call\",\"seq\":1,\"pid\":4,\"call\":\"pwrite64\",\"n\":1," \
	"\"fd\":3,\"path\":\"/w/t\",\"ino\":77,\"off\":0,\"len\":2,\"flags\":[]," \
	"\"ret\":2,\"errno\":0,\"snap\":{\"files\":{\"77\":{\"size\":2,\"off\":0," \
	"\"len\":2,\"data\":\"abcd\"}}}}"
#define SYNC_77 \
	"{\"ev\":\"call\",\"seq\":2,\"pid\":4,\"call\":\"fsync\",\"n\":1,\"fd\":3," \
	"\"path\":\"/w/t\",\"ino\":77,\"ret\":0,\"errno\":0,\"snap\":{\"files\":" \
	"{\"77\":{\"size\":2,\"hash\":\"0123456789abcdef\"}}}}"

static unsigned char kind[256];
static unsigned long long ino[256];

/* tracescan_moot() of LEN bytes of TEXT, NLINES lines, from a heap copy
 * of exactly that size */
static long scan(const char *text, size_t len, size_t nlines)
{
	char *buf = malloc(len ? len : 1);
	long got;

	ck_assert_ptr_nonnull(buf);
	memcpy(buf, text, len);
	got = tracescan_moot(buf, len, nlines, kind, ino);
	free(buf);
	return got;
}

START_TEST(test_abi)
{
	ck_assert_int_eq(tracescan_abi(), TRACESCAN_ABI);
}
END_TEST

START_TEST(test_a_write_then_its_fsync)
{
	const char text[] = WRITE_77 "\n" WRITE_77 "\n" SYNC_77;

	ck_assert_int_eq(scan(text, strlen(text), 3), 2);
	/* pwrite64, the first of its run */
	ck_assert_uint_eq(kind[0], 3 | TRACESCAN_RUN);
	ck_assert_uint_eq(kind[1], 3);
	ck_assert_uint_eq(kind[2], 0);
	ck_assert_uint_eq(ino[0], 77);
	ck_assert_uint_eq(ino[1], 77);
}
END_TEST

/* a thin write (faults/trace.c): no offset, no snapshot, the mark */
#define THIN_77 \
	"{\"ev\":\"call\",\"seq\":1,\"pid\":4,\"call\":\"write\",\"n\":1," \
	"\"fd\":3,\"path\":\"/w/t\",\"ino\":77,\"len\":2,\"flags\":[]," \
	"\"ret\":2,\"errno\":0,\"thin\":true}"

START_TEST(test_thin_writes_then_their_fsync)
{
	const char text[] = THIN_77 "\n" WRITE_77 "\n" THIN_77 "\n" SYNC_77;
	/* the mark where the library never puts it: not a write's shape */
	const char odd[] = "{\"ev\":\"call\",\"seq\":1,\"pid\":4,\"call\":"
		"\"write\",\"n\":1,\"fd\":3,\"path\":\"/w/t\",\"ino\":77,"
		"\"thin\":true,\"len\":2,\"flags\":[],\"ret\":2,\"errno\":0}\n"
		SYNC_77;

	ck_assert_int_eq(scan(text, strlen(text), 4), 3);
	ck_assert_uint_eq(kind[0], 1 | TRACESCAN_RUN);
	ck_assert_uint_eq(kind[1], 3);
	ck_assert_uint_eq(kind[2], 1);
	ck_assert_uint_eq(kind[3], 0);
	ck_assert_uint_eq(ino[2], 77);
	ck_assert_int_eq(scan(odd, strlen(odd), 2), 0);
	ck_assert_uint_eq(kind[0], 0);
}
END_TEST

/* the line heads trace.Lazy reads: ev, seq, and whether a fault fired */
START_TEST(test_index)
{
	const char text[] = "\n{\"ev\":\"init\",\"seq\":0,\"pid\":4}\n\n"
			    "{\"ev\":\"call\",\"seq\":18446744073709551615,"
			    "\"fault\":{}}\n{\"ev\":\"crash\",\"seq\":07,\"pid\":4}\n";
	unsigned long long seq[3];
	unsigned char ev[3];
	char *buf = malloc(sizeof(text) - 1);

	ck_assert_ptr_nonnull(buf);
	memcpy(buf, text, sizeof(text) - 1);
	ck_assert_int_eq(tracescan_index(buf, sizeof(text) - 1, 3, seq, ev), 0);
	ck_assert_uint_eq(ev[0], 1);
	ck_assert_uint_eq(ev[1], 2 | TRACESCAN_FAULT);
	ck_assert_uint_eq(ev[2], 3);
	ck_assert_uint_eq(seq[1], 18446744073709551615ULL);
	ck_assert_uint_eq(seq[2], 7);
	/* not three lines; and every cut of the text: none reads past it */
	ck_assert_int_eq(tracescan_index(buf, sizeof(text) - 1, 2, seq, ev), -1);
	ck_assert_int_eq(tracescan_index(buf, sizeof(text) - 1, 4, seq, ev), -1);
	free(buf);
	for (size_t cut = 0; cut < sizeof(text) - 1; cut++) {
		buf = malloc(cut ? cut : 1);
		ck_assert_ptr_nonnull(buf);
		memcpy(buf, text, cut);
		tracescan_index(buf, cut, 3, seq, ev);
		free(buf);
	}
}
END_TEST

/* a seq of 2^64 is past what it gives */
START_TEST(test_index_seq_past_64_bits)
{
	const char text[] = "{\"ev\":\"call\",\"seq\":18446744073709551616,}";
	unsigned long long seq[1];
	unsigned char ev[1];

	ck_assert_int_eq(tracescan_index(text, strlen(text), 1, seq, ev), -1);
}
END_TEST

START_TEST(test_nothing)
{
	ck_assert_int_eq(scan("", 0, 0), 0);
	ck_assert_int_eq(scan(SYNC_77, strlen(SYNC_77), 1), 0);
	ck_assert_int_eq(scan(WRITE_77, strlen(WRITE_77), 1), 0);
}
END_TEST

START_TEST(test_a_line_between_that_names_the_inode)
{
	const char text[] = WRITE_77 "\n{\"ev\":\"call\",\"path\":\"/w/x77\"}\n"
			    SYNC_77;

	ck_assert_int_eq(scan(text, strlen(text), 3), 0);
}
END_TEST

/* every cut of the write line, then of the sync line: no read past the
 * end (the sanitizers say), and only the cut where the range's object
 * opens is still moot (as in Python) */
START_TEST(test_every_cut)
{
	const char w[] = WRITE_77, s[] = SYNC_77;
	char text[sizeof(w) + sizeof(s)];
	const char *open = strstr(w, "\"77\":{") + strlen("\"77\":{");
	size_t moot = 0;

	for (size_t cut = 1; cut < strlen(w); cut++) {
		memcpy(text, w, cut);
		text[cut] = '\n';
		memcpy(text + cut + 1, s, strlen(s));
		if (scan(text, cut + 1 + strlen(s), 2) == 1) {
			ck_assert_uint_eq(cut, (size_t)(open - w));
			moot++;
		}
	}
	ck_assert_uint_eq(moot, 1);
	for (size_t cut = 1; cut < strlen(s); cut++) {
		memcpy(text, w, strlen(w));
		text[strlen(w)] = '\n';
		memcpy(text + strlen(w) + 1, s, cut);
		ck_assert_int_eq(scan(text, strlen(w) + 1 + cut, 2), 0);
	}
}
END_TEST

/* an inode number that fits in 64 bits is given; one that does not is
 * left to be replayed */
START_TEST(test_inode_numbers_past_64_bits)
{
	static const char *const inodes[] = {
		"18446744073709551615", "18446744073709551616",
		"99999999999999999999", "000000000000000000000007",
	};
	static const int given[] = {1, 0, 0, 1};
	char text[2048];

	for (size_t i = 0; i < sizeof(inodes) / sizeof(inodes[0]); i++) {
		int n = snprintf(text, sizeof(text),
			"{\"ev\":\"call\",\"seq\":1,\"pid\":4,\"call\":\"write\","
			"\"n\":1,\"fd\":3,\"path\":\"/w/t\",\"ino\":%s,\"flags\":[],"
			"\"ret\":2,\"errno\":0}\n"
			"{\"ev\":\"call\",\"seq\":2,\"pid\":4,\"call\":\"fsync\","
			"\"n\":1,\"fd\":3,\"path\":\"/w/t\",\"ino\":%s,\"ret\":0,"
			"\"errno\":0,\"snap\":{\"files\":{\"%s\":{\"size\":2,"
			"\"hash\":\"0123456789abcdef\"}}}}",
			inodes[i], inodes[i], inodes[i]);

		ck_assert_int_eq(scan(text, (size_t)n, 2), given[i]);
		if (given[i])
			ck_assert_uint_eq(ino[0], i == 0 ? 18446744073709551615ULL : 7);
	}
}
END_TEST

/* past TRACESCAN_MAX_SYNCED files fsync'd at once it gives up */
START_TEST(test_too_many_fsyncd_files)
{
	static char text[65 * 256];
	size_t len = 0;

	for (int i = 0; i <= TRACESCAN_MAX_SYNCED; i++) {
		len += (size_t)snprintf(text + len, sizeof(text) - len,
			"%s{\"ev\":\"call\",\"seq\":%d,\"pid\":4,\"call\":\"fsync\","
			"\"n\":1,\"fd\":3,\"path\":\"/w/t\",\"ino\":%d,\"ret\":0,"
			"\"errno\":0,\"snap\":{\"files\":{\"%d\":{\"size\":2,"
			"\"hash\":\"0123456789abcdef\"}}}}", i ? "\n" : "",
			i, 1000 + i, 1000 + i);
		ck_assert_int_eq(scan(text, len, (size_t)i + 1),
				 i < TRACESCAN_MAX_SYNCED ? 0 : -1);
	}
}
END_TEST

static Suite *tracescan_suite(void)
{
	Suite *s = suite_create("tracescan");
	TCase *tc = tcase_create("moot");

	tcase_add_test(tc, test_abi);
	tcase_add_test(tc, test_a_write_then_its_fsync);
	tcase_add_test(tc, test_thin_writes_then_their_fsync);
	tcase_add_test(tc, test_index);
	tcase_add_test(tc, test_index_seq_past_64_bits);
	tcase_add_test(tc, test_nothing);
	tcase_add_test(tc, test_a_line_between_that_names_the_inode);
	tcase_add_test(tc, test_every_cut);
	tcase_add_test(tc, test_inode_numbers_past_64_bits);
	tcase_add_test(tc, test_too_many_fsyncd_files);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(tracescan_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
