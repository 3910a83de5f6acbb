#ifndef CRASHCHECK_SB_H
#define CRASHCHECK_SB_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"

/*
 * The text of one trace line. It starts in the caller's stack frame, which
 * holds every line a write makes (a path, a range of up to CC_INLINE_MAX
 * bytes as hex), and moves to the heap only for a longer one: a walk of a
 * large directory, a long path. No stdio: the line is a few integers and
 * strings, and vsnprintf plus a malloc per line cost more than the rest of
 * the line together. On allocation failure it stops growing and the line
 * is dropped with a warning: a half line would be read as a corrupt trace.
 */
#define SB_STACK 4096

struct sb {
	char *buf;		/* stack, or heap when heap */
	size_t len, cap;	/* bytes written, bytes buf holds */
	bool oom;
	bool heap;
	char stack[SB_STACK];
};

static inline void sb_init(struct sb *sb)
{
	sb->buf = sb->stack;
	sb->len = 0;
	sb->cap = sizeof(sb->stack);
	sb->oom = sb->heap = false;
}

static inline void sb_release(struct sb *sb)
{
	if (sb->heap)
		free(sb->buf);
	sb_init(sb);
}

static void __attribute__((noinline, unused)) sb_grow_slow(struct sb *sb, size_t more)
{
	size_t want = sb->cap * 2;
	char *p;

	while (want < sb->len + more + 1)
		want *= 2;
	p = sb->heap ? realloc(sb->buf, want) : malloc(want);
	if (!p) {
		sb->oom = true;
		return;
	}
	if (!sb->heap)
		memcpy(p, sb->buf, sb->len);
	sb->buf = p;
	sb->cap = want;
	sb->heap = true;
}

/* room for MORE bytes and a NUL (plan_json_quote writes one), or oom */
static inline void sb_grow(struct sb *sb, size_t more)
{
	if (!sb->oom && sb->len + more + 1 > sb->cap)
		sb_grow_slow(sb, more);
}

static inline void sb_add(struct sb *sb, const char *s, size_t len)
{
	sb_grow(sb, len);
	if (sb->oom)
		return;
	memcpy(sb->buf + sb->len, s, len);
	sb->len += len;
}

/* a string literal */
#define sb_lit(sb, s) sb_add((sb), "" s, sizeof(s) - 1)

static inline void sb_str(struct sb *sb, const char *s)
{
	sb_add(sb, s, strlen(s));
}

/* V in decimal, as printf's %llu */
static inline void sb_u64(struct sb *sb, uint64_t v)
{
	char tmp[20], *p = tmp + sizeof(tmp);

	do {
		*--p = '0' + v % 10;
		v /= 10;
	} while (v);
	sb_add(sb, p, tmp + sizeof(tmp) - p);
}

/* V in decimal, as printf's %lld */
static inline void sb_i64(struct sb *sb, long long v)
{
	if (v < 0) {
		sb_lit(sb, "-");
		sb_u64(sb, -(uint64_t)v);
	} else {
		sb_u64(sb, v);
	}
}

/* LEN bytes of DATA as lowercase hex digits */
static inline void sb_hex(struct sb *sb, const void *data, size_t len)
{
	static const char digit[] = "0123456789abcdef";
	const uint8_t *p = data;
	char *o;

	sb_grow(sb, 2 * len);
	if (sb->oom)
		return;
	/* through a local pointer: a store through sb->buf could alias sb->len */
	o = sb->buf + sb->len;
	for (size_t i = 0; i < len; i++) {
		*o++ = digit[p[i] >> 4];
		*o++ = digit[p[i] & 15];
	}
	sb->len += 2 * len;
}

/*
 * S as a JSON string, exactly as plan_json_quote() writes it (the harness
 * and the tests compare traces byte for byte). A path almost never needs an
 * escape: printable ASCII other than '"' and '\' is copied while it is
 * checked, in one pass; anything else is left to plan_json_quote, which
 * measures first and writes second.
 */
static inline void sb_quote(struct sb *sb, const char *s)
{
	size_t len = strlen(s), need = 0, i;
	char *p;

	sb_grow(sb, len + 2);
	if (sb->oom)
		return;
	p = sb->buf + sb->len;
	*p++ = '"';
	for (i = 0; i < len; i++) {
		unsigned char c = s[i];

		if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\')
			break;
		p[i] = c;
	}
	if (i == len) {
		p[len] = '"';
		sb->len += len + 2;
		return;
	}
	plan_json_quote(NULL, 0, &need, s, len);
	sb_grow(sb, need);
	if (sb->oom)
		return;
	plan_json_quote(sb->buf + sb->len, need + 1, &(size_t){ 0 }, s, len);
	sb->len += need;
}

#endif
