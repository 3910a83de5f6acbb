/*
 * Check tests of faults/plan.c: every feature of the plan grammar, every
 * error path of plan_parse() (with the token it must name), the call table
 * and the JSON printer.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../faults/plan.h"

static struct plan plan;
static char err[256];

static void parse_ok(const char *text)
{
	int rc = plan_parse(text, &plan, err, sizeof(err));
	ck_assert_msg(rc == 0, "expected '%s' to parse, got error '%s'", text, err);
}

static void parse_bad(const char *text, const char *want)
{
	int rc = plan_parse(text, &plan, err, sizeof(err));
	ck_assert_msg(rc == -1, "expected '%s' to be rejected, it parsed", text);
	ck_assert_msg(!strcmp(err, want), "plan '%s': expected error \"%s\", got \"%s\"",
		      text, want, err);
}

START_TEST(test_errno_rule)
{
	parse_ok("fsync#1=EIO");
	ck_assert_uint_eq(plan.nr, 1);
	ck_assert_int_eq(plan.rules[0].call, CALL_fsync);
	ck_assert_ptr_null(plan.rules[0].glob);
	ck_assert_uint_eq(plan.rules[0].n, 1);
	ck_assert(!plan.rules[0].persist);
	ck_assert_int_eq(plan.rules[0].action, PLAN_ERRNO);
	ck_assert_int_eq(plan.rules[0].err, EIO);
	ck_assert_str_eq(plan.rules[0].errname, "EIO");
	ck_assert_str_eq(plan.rules[0].text, "fsync#1=EIO");
}
END_TEST

START_TEST(test_glob_persist_everywhere)
{
	parse_ok("write(target.tmp)#3++=ENOSPC;write(x)#1+=EIO;write(x)#1++=EIO");
	ck_assert(plan.rules[0].persist && plan.rules[0].everywhere);
	ck_assert_str_eq(plan.rules[0].glob, "target.tmp");
	ck_assert_uint_eq(plan.rules[0].n, 3);
	ck_assert(plan.rules[1].persist && !plan.rules[1].everywhere);
	ck_assert(plan.rules[2].everywhere);
	parse_bad("write#3+++=EIO", "expected '=' and an action at '+=EIO'");
}
END_TEST

START_TEST(test_thread)
{
	parse_ok("pwrite(data)@2#1=EIO;write@12#3+=ENOSPC;write(x)@1#1++=EIO");
	ck_assert_str_eq(plan.rules[0].glob, "data");
	ck_assert_uint_eq(plan.rules[0].thread, 2);
	ck_assert_uint_eq(plan.rules[0].n, 1);
	ck_assert_str_eq(plan.rules[0].text, "pwrite(data)@2#1=EIO");
	ck_assert_ptr_null(plan.rules[1].glob);
	ck_assert_uint_eq(plan.rules[1].thread, 12);
	ck_assert_uint_eq(plan.rules[1].n, 3);
	ck_assert(plan.rules[1].persist && !plan.rules[1].everywhere);
	ck_assert_uint_eq(plan.rules[2].thread, 1);
	ck_assert(plan.rules[2].everywhere);
	parse_ok("write#1=EIO");
	ck_assert_uint_eq(plan.rules[0].thread, 0);
	/* the same call of another thread is another rule */
	parse_ok("write(x)@1#1=EIO;write(x)@2#1=EIO;write(x)#1=EIO");
	parse_bad("write(x)@2#1=EIO;write(x)@2#1=EIO",
		  "same call as rule 1 ('write(x)@2#1=EIO') at 'write(x)@2#1=EIO'");
}
END_TEST

static unsigned long counts[PLAN_MAX_RULES];

static unsigned long count(void *ctx, size_t i, bool add)
{
	(void)ctx;
	return add ? ++counts[i] : counts[i];
}

/* the rule of the plan that fires on a call of CALL number N by THREAD
 * on PATH */
static int fire(int call, unsigned long n, unsigned thread, const char *path)
{
	return plan_fire(&plan, &(struct plan_call){ call, n, thread, path, "/w",
						     false }, count, NULL);
}

START_TEST(test_fire_by_thread)
{
	/* thread 2's second pwrite of data, whoever writes between */
	parse_ok("pwrite(data)@2#2=EIO");
	memset(counts, 0, sizeof(counts));
	ck_assert_int_eq(fire(CALL_pwrite, 1, 2, "/w/data"), -1);
	ck_assert_int_eq(fire(CALL_pwrite, 2, 1, "/w/data"), -1);
	ck_assert_int_eq(fire(CALL_pwrite, 3, 2, "/w/other"), -1);
	ck_assert_int_eq(fire(CALL_pwrite, 4, 3, "/w/data"), -1);
	ck_assert_int_eq(fire(CALL_pwrite, 5, 2, "/w/data"), 0);
	ck_assert_int_eq(fire(CALL_pwrite, 6, 2, "/w/data"), -1);
	/* without a glob: thread 3's first fsync, on any file */
	parse_ok("fsync@3#1=EIO");
	memset(counts, 0, sizeof(counts));
	ck_assert_int_eq(fire(CALL_fsync, 1, 1, "/w/a"), -1);
	ck_assert_int_eq(fire(CALL_fsync, 2, 3, "/w/b"), 0);
	ck_assert_int_eq(fire(CALL_fsync, 3, 3, "/w/b"), -1);
	/* '++': from thread 2's first on, every write, of any thread, any file */
	parse_ok("write(data)@2#1++=ENOSPC");
	memset(counts, 0, sizeof(counts));
	ck_assert_int_eq(fire(CALL_write, 1, 1, "/w/data"), -1);
	ck_assert_int_eq(fire(CALL_write, 2, 2, "/w/data"), 0);
	ck_assert_int_eq(fire(CALL_write, 3, 1, "/w/other"), 0);
	ck_assert_int_eq(fire(CALL_write, 4, 3, "/w/data"), 0);
}
END_TEST

START_TEST(test_glob_persist_multi)
{
	parse_ok(" write(*.tmp)#2+=ENOSPC ;\trename#1=crash ; msync#3=crash-after");
	ck_assert_uint_eq(plan.nr, 3);
	ck_assert_str_eq(plan.rules[0].glob, "*.tmp");
	ck_assert_uint_eq(plan.rules[0].n, 2);
	ck_assert(plan.rules[0].persist);
	ck_assert_int_eq(plan.rules[0].err, ENOSPC);
	ck_assert_str_eq(plan.rules[0].text, "write(*.tmp)#2+=ENOSPC");
	ck_assert_int_eq(plan.rules[1].call, CALL_rename);
	ck_assert_int_eq(plan.rules[1].action, PLAN_CRASH);
	ck_assert_str_eq(plan.rules[1].text, "rename#1=crash");
	ck_assert_int_eq(plan.rules[2].call, CALL_msync);
	ck_assert_int_eq(plan.rules[2].action, PLAN_CRASH_AFTER);
	ck_assert_uint_eq(plan.rules[2].n, 3);
}
END_TEST

START_TEST(test_short)
{
	parse_ok("write#1=short");
	ck_assert_int_eq(plan.rules[0].action, PLAN_SHORT);
	ck_assert_uint_eq(plan.rules[0].bytes, 0);
	parse_ok("pwritev#4=short:100");
	ck_assert_uint_eq(plan.rules[0].bytes, 100);
	parse_ok("writev#1=short:2147483647");
	ck_assert_uint_eq(plan.rules[0].bytes, PLAN_MAX_BYTES);
}
END_TEST

START_TEST(test_limits_accepted)
{
	parse_ok("write#4294967295=EIO");
	ck_assert_uint_eq(plan.rules[0].n, PLAN_MAX_N);
	parse_ok("write([a-z]?.tmp)#1=EIO");
	ck_assert_str_eq(plan.rules[0].glob, "[a-z]?.tmp");
}
END_TEST

START_TEST(test_empty_plans)
{
	parse_ok("");
	ck_assert_uint_eq(plan.nr, 0);
	parse_ok(" \t ");
	ck_assert_uint_eq(plan.nr, 0);
	ck_assert_int_eq(plan_parse(NULL, &plan, err, sizeof(err)), 0);
	ck_assert_uint_eq(plan.nr, 0);
}
END_TEST

START_TEST(test_every_errno_name)
{
	static const char *const names[] = {
		"EIO", "ENOSPC", "EDQUOT", "EFBIG", "EROFS", "EACCES", "EPERM",
		"EAGAIN", "EBADF", "EINVAL", "ENOMEM", "EMFILE", "ENFILE", "ENOENT",
		"EEXIST", "EXDEV", "EISDIR", "ENOTDIR", "EBUSY", "ETXTBSY",
		"EOVERFLOW", "ENAMETOOLONG", "ELOOP", "EPIPE", "ENXIO", "ESPIPE",
		"ENODEV", "EOPNOTSUPP", "ETIMEDOUT", "ECANCELED",
	};
	char text[64];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(text, sizeof(text), "openat#1=%s", names[i]);
		parse_ok(text);
		ck_assert_int_eq(plan.rules[0].err, plan_errno_value(names[i], strlen(names[i])));
		ck_assert_msg(plan.rules[0].err > 0, "%s has a value", names[i]);
	}
	parse_ok("write#1=EINTR");
	ck_assert_int_eq(plan.rules[0].err, EINTR);
}
END_TEST

START_TEST(test_every_call_crashes)
{
	char text[64];

	for (int i = 0; i < CALL__COUNT; i++) {
		snprintf(text, sizeof(text), "%s#1=crash", call_table[i].name);
		parse_ok(text);
		ck_assert_int_eq(plan.rules[0].call, i);
	}
}
END_TEST

START_TEST(test_bad_call)
{
	parse_bad("wirte#1=EIO", "unknown call at 'wirte'");
	parse_bad("write2x(*)#1=EIO", "unknown call at 'write2x'");
	parse_bad("Write#1=EIO", "expected a call name at 'Write#1=EIO'");
	parse_bad("#1=EIO", "expected a call name at '#1=EIO'");
}
END_TEST

/* glibc's and the kernel's 64-bit names count as their base call */
START_TEST(test_alias_is_base)
{
	static const struct { const char *text; int call; } cases[] = {
		{ "pwrite64#1=EIO", CALL_pwrite },
		{ "open64(*.tmp)#2=ENOSPC", CALL_open },
		{ "pwritev64#3=short", CALL_pwritev },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct plan plan;
		char err[256];

		ck_assert_msg(plan_parse(cases[i].text, &plan, err, sizeof(err)) == 0,
			      "%s: %s", cases[i].text, err);
		ck_assert_int_eq(plan.rules[0].call, cases[i].call);
		ck_assert_str_eq(plan.rules[0].text, cases[i].text);
	}
}
END_TEST

START_TEST(test_bad_glob)
{
	parse_bad("write()#1=EIO", "empty glob at '()'");
	parse_bad("write(*.tmp#1=EIO", "unterminated '(' at '(*.tmp#1=EIO'");
	parse_bad("write(a(b)#1=EIO", "bad character in glob at '(a(b)'");
}
END_TEST

START_TEST(test_bad_number)
{
	parse_bad("write", "expected '#N' after 'write' at 'write'");
	parse_bad("write=EIO", "expected '#N' after 'write' at '=EIO'");
	parse_bad("write#=EIO", "expected a call number after '#' at '#=EIO'");
	parse_bad("write#0=EIO", "calls count from 1 at '#0'");
	parse_bad("write#007=EIO", "leading zero in call number at '#007'");
	parse_bad("write#4294967296=EIO", "call number larger than 4294967295 at '#4294967296'");
	parse_bad("write#99999999999999999999999=EIO",
		  "call number larger than 4294967295 at '#99999999999999999999999'");
	parse_bad("write#1", "expected '=' and an action at 'write#1'");
	parse_bad("write#1+", "expected '=' and an action at 'write#1+'");
	parse_bad("write#1x=EIO", "expected '=' and an action at 'x=EIO'");
	parse_bad("write#1+++=EIO", "expected '=' and an action at '+=EIO'");
}
END_TEST

START_TEST(test_bad_thread)
{
	parse_bad("write@#1=EIO", "expected a thread number after '@' at '@#1=EIO'");
	parse_bad("write(x)@=EIO", "expected a thread number after '@' at '@=EIO'");
	parse_bad("write@0#1=EIO", "threads count from 1 at '@0'");
	parse_bad("write@02#1=EIO", "leading zero in thread number at '@02'");
	parse_bad("write@4294967296#1=EIO",
		  "thread number larger than 4294967295 at '@4294967296'");
	parse_bad("write@2=EIO", "expected '#N' after 'write' at '=EIO'");
	parse_bad("write#1@2=EIO", "expected '=' and an action at '@2=EIO'");
}
END_TEST

START_TEST(test_bad_action)
{
	parse_bad("write#1=", "missing action at 'write#1='");
	parse_bad("write#1=EFOO", "unknown errno at 'EFOO'");
	parse_bad("write#1=eio", "unknown action at 'eio'");
	parse_bad("write#1=crashafter", "unknown action at 'crashafter'");
	parse_bad("write#1=EIO=EIO", "unknown errno at 'EIO=EIO'");
	parse_bad("write#1=shortx", "unknown action at 'shortx'");
	parse_bad("write#1=short:", "expected a byte count after 'short:' at 'short:'");
	parse_bad("write#1=short:0", "short write of 0 bytes at 'short:0'");
	parse_bad("write#1=short:012", "bad byte count at 'short:012'");
	parse_bad("write#1=short:1k", "bad byte count at 'short:1k'");
	parse_bad("write#1=short:-1", "bad byte count at 'short:-1'");
	parse_bad("write#1=short:2147483648",
		  "byte count larger than 2147483647 at 'short:2147483648'");
}
END_TEST

START_TEST(test_not_applicable)
{
	parse_bad("fsync#1=EINTR", "EINTR does not apply to fsync at 'fsync#1=EINTR'");
	parse_bad("fwrite#1=EINTR", "EINTR does not apply to fwrite at 'fwrite#1=EINTR'");
	parse_bad("fsync#1=short", "short does not apply to fsync at 'fsync#1=short'");
	parse_bad("fwrite#1=short:3", "short does not apply to fwrite at 'fwrite#1=short:3'");
	parse_bad("sync#1=EIO", "EIO does not apply to sync at 'sync#1=EIO'");
	parse_bad("sync#1=ENOSPC", "ENOSPC does not apply to sync at 'sync#1=ENOSPC'");
	/* F_ERRNO lets a hand-written plan use errnos the sweep does not */
	parse_ok("unlink#1=ENOSPC");
	parse_ok("close#1=EINVAL");
}
END_TEST

START_TEST(test_bad_structure)
{
	parse_bad("write#1=EIO;", "trailing ';' at 'write#1=EIO;'");
	parse_bad("write#1=EIO; ", "trailing ';' at 'write#1=EIO; '");
	parse_bad(";write#1=EIO", "empty rule at ';'");
	parse_bad("write#1=EIO;;fsync#1=EIO", "empty rule at ';;'");
	parse_bad("write#1=EIO; ;fsync#1=EIO", "empty rule at '; ;'");
	parse_bad(";", "empty rule at ';'");
	parse_bad("write #1=EIO", "blank inside rule at 'write #1=EIO'");
	parse_bad("write#1=\x01", "control character in rule at 'write#1=\\x01'");
	parse_bad("write#1=EIO\nfsync#1=EIO",
		  "control character in rule at 'write#1=EIO\\x0afsync#1=EIO'");
	parse_bad("write#1=\xff", "unknown action at '\\xff'");
	parse_bad("write#1=EIO;write#1=ENOSPC",
		  "same call as rule 1 ('write#1=EIO') at 'write#1=ENOSPC'");
	parse_bad("write(*.tmp)#1=EIO;write(*.tmp)#1=crash",
		  "same call as rule 1 ('write(*.tmp)#1=EIO') at 'write(*.tmp)#1=crash'");
	/* a glob, or a '+', makes it a different rule */
	parse_ok("write#1=EIO;write(*.tmp)#1=ENOSPC;write#1+=crash");
	ck_assert_uint_eq(plan.nr, 3);
}
END_TEST

START_TEST(test_too_long)
{
	char *text = malloc(PLAN_MAX_LEN + 2);

	memset(text, 'a', PLAN_MAX_LEN + 1);
	text[PLAN_MAX_LEN + 1] = '\0';
	parse_bad(text, "plan longer than 4096 bytes at "
		  "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...'");
	free(text);
}
END_TEST

START_TEST(test_max_rules)
{
	char text[PLAN_MAX_LEN + 1];
	size_t o = 0;

	for (int i = 1; i <= PLAN_MAX_RULES; i++)
		o += snprintf(text + o, sizeof(text) - o, "%swrite#%d=EIO", i > 1 ? ";" : "", i);
	parse_ok(text);
	ck_assert_uint_eq(plan.nr, PLAN_MAX_RULES);
	snprintf(text + o, sizeof(text) - o, ";write#999=EIO");
	parse_bad(text, "more than 64 rules at 'write#999=EIO'");
}
END_TEST

START_TEST(test_longest_plan_fits)
{
	/* the longest plan keeps text and glob of every rule in plan.buf */
	char *text = malloc(PLAN_MAX_LEN + 1);
	size_t head = strlen("write("), tail = strlen(")#1=EIO");

	memcpy(text, "write(", head);
	memset(text + head, '*', PLAN_MAX_LEN - head - tail);
	memcpy(text + PLAN_MAX_LEN - tail, ")#1=EIO", tail + 1);
	parse_ok(text);
	ck_assert_uint_eq(strlen(plan.rules[0].glob), PLAN_MAX_LEN - head - tail);
	ck_assert_str_eq(plan.rules[0].text, text);
	free(text);
}
END_TEST

START_TEST(test_error_buffer)
{
	char small[8];

	ck_assert_int_eq(plan_parse("wirte#1=EIO", &plan, small, sizeof(small)), -1);
	ck_assert_str_eq(small, "unknown");
	ck_assert_int_eq(plan_parse("wirte#1=EIO", &plan, NULL, 0), -1);
}
END_TEST

START_TEST(test_call_table)
{
	ck_assert_int_eq(call_lookup("write", 5), CALL_write);
	ck_assert_int_eq(call_lookup("writ", 4), -1);
	ck_assert_int_eq(call_lookup("open64", 6), -1);
	ck_assert_int_eq(call_alias_base("open64", 6), CALL_open);
	ck_assert_int_eq(call_alias_base("posix_fallocate64", 17), CALL_posix_fallocate);
	ck_assert_int_eq(call_alias_base("open", 4), -1);
	ck_assert_str_eq(call_table[CALL_write].point, "posix/io/rw/write");
	ck_assert_str_eq(call_table[CALL_openat].point, "crashcheck/io/oc/openat");
	ck_assert_uint_eq(call_table[CALL_write].faults,
			  F_EINTR | F_SHORT | F_ENOSPC | F_EIO | F_CRASH | F_ERRNO);
	ck_assert_int_eq(call_table[CALL_fsync].cls, C_SYNC);
	ck_assert_int_eq(call_table[CALL_rename].cls, C_NAME);
	ck_assert_int_eq(call_table[CALL_mmap].cls, C_MAP);
	ck_assert_int_eq(call_table[CALL_close].cls, C_OTHER);
	ck_assert_str_eq(plan_errno_name(ENOSPC), "ENOSPC");
	ck_assert_ptr_null(plan_errno_name(0));
	ck_assert_int_eq(plan_errno_value("EIOX", 4), 0);
	/* every call libfiu does not wrap has a point of our own */
	ck_assert(!strncmp(call_table[CALL_renameat2].point, "crashcheck/", 11));
	ck_assert(!strncmp(call_table[CALL_sync].point, "crashcheck/", 11));
}
END_TEST

START_TEST(test_json)
{
	char buf[1024];
	size_t n;

	parse_ok("fsync#1=EIO");
	n = plan_json(&plan, buf, sizeof(buf));
	ck_assert_str_eq(buf, "{\"rules\":[{\"text\":\"fsync#1=EIO\",\"call\":\"fsync\","
			 "\"glob\":null,\"thread\":null,\"n\":1,\"persist\":false,"
			 "\"everywhere\":false,\"action\":\"errno\","
			 "\"errno\":5,\"errname\":\"EIO\",\"bytes\":null}]}");
	ck_assert_uint_eq(n, strlen(buf));

	parse_ok("write(\"a\\b\")@2#2+=short:7;rename#1=crash-after");
	plan_json(&plan, buf, sizeof(buf));
	ck_assert_str_eq(buf, "{\"rules\":["
			 "{\"text\":\"write(\\\"a\\\\b\\\")@2#2+=short:7\",\"call\":\"write\","
			 "\"glob\":\"\\\"a\\\\b\\\"\",\"thread\":2,\"n\":2,\"persist\":true,"
			 "\"everywhere\":false,\"action\":\"short\","
			 "\"errno\":null,\"errname\":null,\"bytes\":7},"
			 "{\"text\":\"rename#1=crash-after\",\"call\":\"rename\",\"glob\":null,"
			 "\"thread\":null,\"n\":1,\"persist\":false,\"everywhere\":false,"
			 "\"action\":\"crash-after\","
			 "\"errno\":null,\"errname\":null,\"bytes\":null}]}");

	parse_ok("");
	plan_json(&plan, buf, sizeof(buf));
	ck_assert_str_eq(buf, "{\"rules\":[]}");
}
END_TEST

START_TEST(test_json_truncates_like_snprintf)
{
	char buf[16];
	size_t need;

	parse_ok("fsync#1=EIO");
	need = plan_json(&plan, NULL, 0);
	ck_assert_uint_gt(need, sizeof(buf));
	ck_assert_uint_eq(plan_json(&plan, buf, sizeof(buf)), need);
	ck_assert_str_eq(buf, "{\"rules\":[{\"tex");
}
END_TEST

START_TEST(test_json_quote)
{
	char buf[64];
	size_t pos = 0;

	/* a byte that is not UTF-8 as os.fsdecode's surrogateescape spells it */
	plan_json_quote(buf, sizeof(buf), &pos, "a\"\\\n\t\x01\xc3\xa9\xff\xed\xa0\x80", 12);
	ck_assert_str_eq(buf, "\"a\\\"\\\\\\n\\t\\u0001\xc3\xa9\\udcff\\udced\\udca0\\udc80\"");
	ck_assert_uint_eq(pos, strlen(buf));
}
END_TEST

START_TEST(test_action_str)
{
	char buf[32];

	parse_ok("write#1=short:9;write#2=short;write#3=crash;write#4=crash-after;write#5=EDQUOT");
	plan_action_str(&plan.rules[0], buf, sizeof(buf));
	ck_assert_str_eq(buf, "short:9");
	plan_action_str(&plan.rules[1], buf, sizeof(buf));
	ck_assert_str_eq(buf, "short");
	plan_action_str(&plan.rules[2], buf, sizeof(buf));
	ck_assert_str_eq(buf, "crash");
	plan_action_str(&plan.rules[3], buf, sizeof(buf));
	ck_assert_str_eq(buf, "crash-after");
	plan_action_str(&plan.rules[4], buf, sizeof(buf));
	ck_assert_str_eq(buf, "EDQUOT");
}
END_TEST

static Suite *plan_suite(void)
{
	Suite *s = suite_create("plan");
	TCase *ok = tcase_create("grammar");
	TCase *bad = tcase_create("errors");
	TCase *out = tcase_create("table-json");

	tcase_add_test(ok, test_errno_rule);
	tcase_add_test(ok, test_glob_persist_multi);
	tcase_add_test(ok, test_glob_persist_everywhere);
	tcase_add_test(ok, test_thread);
	tcase_add_test(ok, test_fire_by_thread);
	tcase_add_test(ok, test_short);
	tcase_add_test(ok, test_limits_accepted);
	tcase_add_test(ok, test_empty_plans);
	tcase_add_test(ok, test_alias_is_base);
	tcase_add_test(ok, test_every_errno_name);
	tcase_add_test(ok, test_every_call_crashes);
	tcase_add_test(ok, test_longest_plan_fits);
	tcase_add_test(bad, test_bad_call);
	tcase_add_test(bad, test_bad_glob);
	tcase_add_test(bad, test_bad_thread);
	tcase_add_test(bad, test_bad_number);
	tcase_add_test(bad, test_bad_action);
	tcase_add_test(bad, test_not_applicable);
	tcase_add_test(bad, test_bad_structure);
	tcase_add_test(bad, test_too_long);
	tcase_add_test(bad, test_max_rules);
	tcase_add_test(bad, test_error_buffer);
	tcase_add_test(out, test_call_table);
	tcase_add_test(out, test_json);
	tcase_add_test(out, test_json_truncates_like_snprintf);
	tcase_add_test(out, test_json_quote);
	tcase_add_test(out, test_action_str);
	suite_add_tcase(s, ok);
	suite_add_tcase(s, bad);
	suite_add_tcase(s, out);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(plan_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
