/*
 * format: the trace line builder of sb.h against the formatters it
 * replaced, byte for byte.
 *
 * Method. The recorder builds each trace line by hand (no stdio): integers in
 * decimal, strings quoted in one pass when they need no escape, in a stack
 * buffer that moves to the heap past SB_STACK bytes. The harness and the
 * tests compare traces byte for byte, so each of these must write exactly
 * what printf's %llu / %lld and plan_json_quote() write. This program
 * includes sb.h (its helpers are static) and plan.c, and checks
 *
 *   - sb_u64 / sb_i64 against snprintf for the edges of their types, every
 *     power of ten and its neighbours, and pseudo-random values;
 *   - sb_quote against plan_json_quote for every byte alone and between
 *     letters, every pair of bytes that matter to the escaper (control
 *     characters, '"', '\', DEL, the lead and continuation bytes of valid
 *     and invalid UTF-8), pseudo-random strings of those bytes, and strings
 *     either side of the stack buffer's size, quoted after a prefix so the
 *     move to the heap falls inside the string;
 *   - a line that grows across SB_STACK keeps every byte added before.
 *
 * usage: format    exit 0 all agree, 1 a mismatch (said on stderr)
 */
#include <limits.h>

#include <stdio.h>

#include "../sb.h"
#include "../plan.c"

static int failures;

static void check(const char *what, const char *want, size_t want_len,
		  const struct sb *sb, size_t from)
{
	size_t got_len = sb->len - from;

	if (sb->oom) {
		fprintf(stderr, "format: %s: expected %zu bytes, found out of memory\n",
			what, want_len);
		failures++;
		return;
	}
	if (got_len == want_len && !memcmp(sb->buf + from, want, want_len))
		return;
	fprintf(stderr, "format: %s: expected %zu bytes '%.*s', found %zu bytes '%.*s'\n",
		what, want_len, (int)(want_len > 200 ? 200 : want_len), want,
		got_len, (int)(got_len > 200 ? 200 : got_len), sb->buf + from);
	failures++;
}

static void check_u64(uint64_t v)
{
	char want[32], what[64];
	struct sb sb;

	sb_init(&sb);
	sb_u64(&sb, v);
	snprintf(want, sizeof(want), "%llu", (unsigned long long)v);
	snprintf(what, sizeof(what), "sb_u64(%s)", want);
	check(what, want, strlen(want), &sb, 0);
	sb_release(&sb);
}

static void check_i64(long long v)
{
	char want[32], what[64];
	struct sb sb;

	sb_init(&sb);
	sb_i64(&sb, v);
	snprintf(want, sizeof(want), "%lld", v);
	snprintf(what, sizeof(what), "sb_i64(%s)", want);
	check(what, want, strlen(want), &sb, 0);
	sb_release(&sb);
}

/* S quoted after PREFIX bytes of 'x', as plan_json_quote writes it */
static void check_quote(const char *s, size_t prefix)
{
	size_t len = strlen(s), need = 0;
	char *want, what[64];
	struct sb sb;

	plan_json_quote(NULL, 0, &need, s, len);
	want = malloc(need + 1);
	if (!want) {
		fprintf(stderr, "format: malloc %zu bytes: out of memory\n", need + 1);
		exit(1);
	}
	plan_json_quote(want, need + 1, &(size_t){ 0 }, s, len);
	sb_init(&sb);
	for (size_t i = 0; i < prefix; i++)
		sb_lit(&sb, "x");
	sb_quote(&sb, s);
	snprintf(what, sizeof(what), "sb_quote of %zu bytes after %zu", len, prefix);
	check(what, want, need, &sb, prefix);
	sb_release(&sb);
	free(want);
}

/* xorshift64: the same pseudo-random cases on every run */
static uint64_t rnd_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static const unsigned char interesting[] = {
	0x01, 0x09, 0x0a, 0x1f, ' ', '"', '\\', '/', 'a', '~', 0x7f,
	0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc2, 0xdf, 0xe0, 0xed,
	0xef, 0xf0, 0xf4, 0xf5, 0xff,
};
#define NINTERESTING (sizeof(interesting) / sizeof(interesting[0]))

static void numbers(void)
{
	uint64_t p = 1;

	check_u64(0);
	check_u64(UINT64_MAX);
	check_i64(0);
	check_i64(LLONG_MAX);
	check_i64(LLONG_MIN);
	check_i64(LLONG_MIN + 1);
	for (int i = 0; i < 20; i++, p *= 10) {
		check_u64(p - 1);
		check_u64(p);
		check_u64(p + 1);
		if (p > LLONG_MAX / 10)
			continue;
		check_i64((long long)p - 1);
		check_i64(-(long long)p + 1);
		check_i64(-(long long)p);
	}
	for (int i = 0; i < 100000; i++) {
		uint64_t v = rnd() >> (rnd() % 64);

		check_u64(v);
		check_i64((long long)v);
	}
}

static void quotes(void)
{
	char s[16];

	check_quote("", 0);
	check_quote("/tmp/x/target.tmp", 0);
	for (int b = 1; b < 256; b++) {
		s[0] = b;
		s[1] = '\0';
		check_quote(s, 0);
		snprintf(s, sizeof(s), "ab%cyz", b);
		check_quote(s, 0);
	}
	for (size_t i = 0; i < NINTERESTING; i++)
		for (size_t j = 0; j < NINTERESTING; j++)
			for (size_t k = 0; k < NINTERESTING; k++) {
				s[0] = interesting[i];
				s[1] = interesting[j];
				s[2] = interesting[k];
				s[3] = '\0';
				check_quote(s, 0);
			}
	for (int i = 0; i < 50000; i++) {
		size_t len = rnd() % 15;

		for (size_t j = 0; j < len; j++)
			s[j] = rnd() % 4 ? interesting[rnd() % NINTERESTING] : 'a' + rnd() % 26;
		s[len] = '\0';
		check_quote(s, rnd() % 3);
	}
}

/* strings and prefixes that put the move to the heap inside the string */
static void long_quotes(void)
{
	static char s[3 * SB_STACK];

	for (size_t len = SB_STACK - 4; len <= SB_STACK + 4; len++) {
		memset(s, 'p', len);
		s[len] = '\0';
		check_quote(s, 0);
		check_quote(s, 100);
		s[len / 2] = '"';	/* the measuring path, across the move */
		check_quote(s, SB_STACK - 10);
	}
	memset(s, 'q', sizeof(s) - 1);
	s[sizeof(s) - 1] = '\0';
	check_quote(s, 1);
	s[10] = '\n';
	check_quote(s, 1);
}

static void growth(void)
{
	static char want[4 * SB_STACK];
	size_t len = 0;
	struct sb sb;

	sb_init(&sb);
	for (unsigned i = 0; len + 40 < sizeof(want); i++) {
		char piece[40];
		int n = snprintf(piece, sizeof(piece), "%u,", i * 2654435761u);

		memcpy(want + len, piece, n);
		len += n;
		sb_add(&sb, piece, n);
	}
	check("a line grown across the stack buffer", want, len, &sb, 0);
	if (!sb.heap) {
		fprintf(stderr, "format: expected a %zu-byte line on the heap, found it on the stack\n",
			len);
		failures++;
	}
	sb_release(&sb);
}

int main(void)
{
	numbers();
	quotes();
	long_quotes();
	growth();
	if (failures) {
		fprintf(stderr, "format: %d mismatches\n", failures);
		return 1;
	}
	return 0;
}
