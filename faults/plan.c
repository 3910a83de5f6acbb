/*
 * The plan parser, the call table and the JSON printer shared by
 * libcrashcheck.so, planck, the unit tests and the fuzzer.
 *
 * The parser copies what it keeps into struct plan itself, so a plan needs no
 * allocation and no freeing: the preload library parses one in its
 * constructor, before malloc may be safe to use, and the fuzzer can run it a
 * million times without a leak to chase.
 */
#include "plan.h"

#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const struct call_info call_table[CALL__COUNT] = {
#define CALL(name, point, faults, cls) [CALL_##name] = { #name, point, faults, cls },
#define ALIAS(name, base)
#define WRAP(...)
#include "calls.def"
#undef CALL
#undef ALIAS
#undef WRAP
};

static const struct {
	const char *name;
	int base;
} alias_table[] = {
#define CALL(name, point, faults, cls)
#define ALIAS(name, base) { #name, CALL_##base },
#define WRAP(...)
#include "calls.def"
#undef CALL
#undef ALIAS
#undef WRAP
};

static int name_is(const char *want, const char *name, size_t len)
{
	return strlen(want) == len && !memcmp(want, name, len);
}

int call_lookup(const char *name, size_t len)
{
	for (int i = 0; i < CALL__COUNT; i++)
		if (name_is(call_table[i].name, name, len))
			return i;
	return -1;
}

int call_alias_base(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(alias_table) / sizeof(alias_table[0]); i++)
		if (name_is(alias_table[i].name, name, len))
			return alias_table[i].base;
	return -1;
}

/* The errnos a plan may name: what storage and file-system calls return. */
static const struct {
	const char *name;
	int value;
} errno_table[] = {
#define E(x) { #x, x }
	E(EIO), E(ENOSPC), E(EINTR), E(EDQUOT), E(EFBIG), E(EROFS), E(EACCES),
	E(EPERM), E(EAGAIN), E(EBADF), E(EINVAL), E(ENOMEM), E(EMFILE),
	E(ENFILE), E(ENOENT), E(EEXIST), E(EXDEV), E(EISDIR), E(ENOTDIR),
	E(EBUSY), E(ETXTBSY), E(EOVERFLOW), E(ENAMETOOLONG), E(ELOOP),
	E(EPIPE), E(ENXIO), E(ESPIPE), E(ENODEV), E(EOPNOTSUPP), E(ETIMEDOUT),
	E(ECANCELED), E(EMLINK), E(ENOTEMPTY), E(ESTALE), E(EFAULT),
	E(ENOTSUP), E(EWOULDBLOCK), E(ENOLCK), E(ENOSYS), E(ECONNRESET),
#undef E
};

const char *plan_errno_name(int err)
{
	for (size_t i = 0; i < sizeof(errno_table) / sizeof(errno_table[0]); i++)
		if (errno_table[i].value == err)
			return errno_table[i].name;
	return NULL;
}

int plan_errno_value(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(errno_table) / sizeof(errno_table[0]); i++)
		if (name_is(errno_table[i].name, name, len))
			return errno_table[i].value;
	return 0;
}

/*
 * Error reporting: "<problem> at '<token>'". The token is shown with
 * non-printable bytes as \xNN and cut at 40 bytes, so that whatever the input
 * holds the message stays one short line.
 */
#define TOKEN_SHOWN 40

static int fail(char *err, size_t errlen, const char *tok, size_t toklen,
		const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int fail(char *err, size_t errlen, const char *tok, size_t toklen,
		const char *fmt, ...)
{
	char shown[TOKEN_SHOWN * 4 + 4];
	size_t o = 0;
	va_list ap;
	int n;

	for (size_t i = 0; i < toklen && i < TOKEN_SHOWN; i++) {
		unsigned char c = tok[i];
		if (c >= 0x20 && c < 0x7f)
			shown[o++] = c;
		else
			o += sprintf(shown + o, "\\x%02x", c);
	}
	if (toklen > TOKEN_SHOWN) {
		memcpy(shown + o, "...", 3);
		o += 3;
	}
	shown[o] = '\0';

	if (!err || !errlen)
		return -1;
	va_start(ap, fmt);
	n = vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < errlen)
		snprintf(err + n, errlen - n, " at '%s'", shown);
	return -1;
}

static int is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* a decimal number without sign or leading zero, at most MAX */
static int parse_number(const char *s, size_t len, unsigned long max,
			unsigned long *out)
{
	unsigned long v = 0;

	if (!len)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		if (v > (max - (s[i] - '0')) / 10)
			return -2;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

static char *keep(struct plan *plan, size_t *used, const char *s, size_t len)
{
	char *p = plan->buf + *used;

	memcpy(p, s, len);
	p[len] = '\0';
	*used += len + 1;
	return p;
}

static int parse_rule(struct plan *plan, size_t *used, const char *s,
		      size_t len, char *err, size_t errlen)
{
	struct plan_rule *r = &plan->rules[plan->nr];
	const char *p = s, *end = s + len, *tok, *act;
	const struct call_info *ci;
	size_t toklen;
	unsigned long v;
	int call, rc;

	memset(r, 0, sizeof(*r));

	for (tok = p; p < end && (islower((unsigned char)*p) ||
				  isdigit((unsigned char)*p) || *p == '_'); p++)
		;
	toklen = p - tok;
	if (!toklen) {
		/* show the whole rule: the name is what is missing */
		return fail(err, errlen, s, len, "expected a call name");
	}
	call = call_lookup(tok, toklen);
	/* a 64-bit twin (glibc's pwrite64, the kernel's pwrite64) counts
	 * as its base, in plans as in traces */
	if (call < 0)
		call = call_alias_base(tok, toklen);
	if (call < 0) {
		/* the name may run on into junk: show what follows it too */
		while (p < end && *p != '(' && *p != '#')
			p++;
		return fail(err, errlen, tok, p - tok, "unknown call");
	}
	ci = &call_table[call];
	r->call = call;

	if (p < end && *p == '(') {
		const char *g = ++p;
		while (p < end && *p != ')')
			p++;
		if (p == end)
			return fail(err, errlen, g - 1, end - g + 1,
				    "unterminated '('");
		if (p == g)
			return fail(err, errlen, g - 1, 2, "empty glob");
		for (const char *c = g; c < p; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f || *c == '(')
				/* '(' would only be a typo for a missing ')' */
				return fail(err, errlen, g - 1, p - g + 2,
					    "bad character in glob");
		r->glob = keep(plan, used, g, p - g);
		p++;
	}

	if (p < end && *p == '@') {
		tok = p++;
		while (p < end && isdigit((unsigned char)*p))
			p++;
		toklen = p - tok;
		if (toklen == 1)
			return fail(err, errlen, tok, end - tok,
				    "expected a thread number after '@'");
		if (tok[1] == '0')
			return fail(err, errlen, tok, toklen, toklen == 2 ?
				    "threads count from 1" :
				    "leading zero in thread number");
		if (parse_number(tok + 1, toklen - 1, PLAN_MAX_THREAD, &v) < 0)
			return fail(err, errlen, tok, toklen,
				    "thread number larger than %lu", PLAN_MAX_THREAD);
		r->thread = v;
	}

	if (p == end || *p != '#')
		return fail(err, errlen, p == end ? s : p, p == end ? len : (size_t)(end - p),
			    "expected '#N' after '%s'", ci->name);
	tok = p++;
	while (p < end && isdigit((unsigned char)*p))
		p++;
	toklen = p - tok;
	if (toklen == 1)
		return fail(err, errlen, tok, end - tok,
			    "expected a call number after '#'");
	if (tok[1] == '0')
		return fail(err, errlen, tok, toklen, toklen == 2 ?
			    "calls count from 1" : "leading zero in call number");
	rc = parse_number(tok + 1, toklen - 1, PLAN_MAX_N, &v);
	if (rc < 0)
		return fail(err, errlen, tok, toklen,
			    "call number larger than %lu", PLAN_MAX_N);
	r->n = v;

	if (p < end && *p == '+') {
		r->persist = true;
		p++;
		if (p < end && *p == '+') {
			r->everywhere = true;
			p++;
		}
	}
	if (p == end || *p != '=')
		return fail(err, errlen, p == end ? s : p, p == end ? len : (size_t)(end - p),
			    "expected '=' and an action");
	act = ++p;
	toklen = end - act;
	if (!toklen)
		return fail(err, errlen, s, len, "missing action");

	if (toklen >= 5 && !memcmp(act, "short", 5) &&
	    (toklen == 5 || act[5] == ':')) {
		r->action = PLAN_SHORT;
		if (toklen > 5) {
			rc = parse_number(act + 6, toklen - 6, PLAN_MAX_BYTES, &v);
			if (toklen == 6)
				return fail(err, errlen, act, toklen,
					    "expected a byte count after 'short:'");
			if (rc == -2)
				return fail(err, errlen, act, toklen,
					    "byte count larger than %lu",
					    PLAN_MAX_BYTES);
			if (rc < 0 || act[6] == '0')
				return fail(err, errlen, act, toklen,
					    rc == 0 && v == 0 ?
					    "short write of 0 bytes" :
					    "bad byte count");
			r->bytes = v;
		}
		if (!(ci->faults & F_SHORT))
			return fail(err, errlen, s, len,
				    "short does not apply to %s", ci->name);
	} else if (name_is("crash", act, toklen) ||
		   name_is("crash-after", act, toklen)) {
		r->action = toklen == 5 ? PLAN_CRASH : PLAN_CRASH_AFTER;
		if (!(ci->faults & F_CRASH))
			return fail(err, errlen, s, len,
				    "crash does not apply to %s", ci->name);
	} else {
		int e = plan_errno_value(act, toklen);
		unsigned need;

		if (!e) {
			if (isupper((unsigned char)*act))
				return fail(err, errlen, act, toklen, "unknown errno");
			return fail(err, errlen, act, toklen, "unknown action");
		}
		r->action = PLAN_ERRNO;
		r->err = e;
		r->errname = plan_errno_name(e);
		if (e == EINTR)
			need = F_EINTR;
		else if (e == ENOSPC)
			need = F_ENOSPC | F_ERRNO;
		else if (e == EIO)
			need = F_EIO | F_ERRNO;
		else
			need = F_ERRNO;
		if (!(ci->faults & need))
			return fail(err, errlen, s, len, "%s does not apply to %s",
				    r->errname, ci->name);
	}

	for (size_t i = 0; i < plan->nr; i++) {
		const struct plan_rule *o = &plan->rules[i];
		if (o->call == r->call && o->n == r->n && o->thread == r->thread &&
		    o->persist == r->persist && o->everywhere == r->everywhere &&
		    (o->glob ? r->glob && !strcmp(o->glob, r->glob) : !r->glob))
			return fail(err, errlen, s, len,
				    "same call as rule %zu ('%s')", i + 1, o->text);
	}

	r->text = keep(plan, used, s, len);
	plan->nr++;
	return 0;
}

int plan_parse(const char *text, struct plan *plan, char *err, size_t errlen)
{
	size_t len, used = 0;
	const char *p, *end;

	if (err && errlen)
		err[0] = '\0';
	memset(plan, 0, sizeof(plan->nr) + sizeof(plan->rules));
	if (!text)
		return 0;
	len = strnlen(text, PLAN_MAX_LEN + 1);
	if (len > PLAN_MAX_LEN)
		return fail(err, errlen, text, TOKEN_SHOWN + 1,
			    "plan longer than %d bytes", PLAN_MAX_LEN);

	p = text;
	end = text + len;
	while (p < end && is_blank(*p))
		p++;
	if (p == end)
		return 0;	/* blank plan: no faults, as when unset */

	for (p = text;;) {
		const char *semi = memchr(p, ';', end - p);
		const char *rend = semi ? semi : end;
		const char *s = p, *e = rend;

		while (s < e && is_blank(*s))
			s++;
		while (e > s && is_blank(e[-1]))
			e--;
		if (s == e) {
			if (!semi && p > text)
				return fail(err, errlen, text, len, "trailing ';'");
			/* show the separators around the hole */
			const char *a = p > text ? p - 1 : p;
			return fail(err, errlen, a, rend - a + (semi ? 1 : 0),
				    "empty rule");
		}
		for (const char *c = s; c < e; c++)
			if (is_blank(*c) || (unsigned char)*c < 0x20 || *c == 0x7f)
				return fail(err, errlen, s, e - s,
					    (unsigned char)*c < 0x20 && !is_blank(*c) ?
					    "control character in rule" :
					    "blank inside rule");
		if (plan->nr == PLAN_MAX_RULES)
			return fail(err, errlen, s, e - s, "more than %d rules",
				    PLAN_MAX_RULES);
		if (parse_rule(plan, &used, s, e - s, err, errlen) < 0)
			return -1;
		if (!semi)
			break;
		p = semi + 1;
	}
	return 0;
}

/*
 * A rule's glob matches the full path, its last component, or the path
 * relative to ROOT ("." for ROOT itself): the sweep names a file as the
 * program sees it from its work directory ("write(target.tmp)#3",
 * "fsync(.)#1", "write(sub/x)#1"), so that its plans count the calls on
 * that file alone, wherever the scratch directory is.
 */
static bool glob_match(const char *glob, const char *path, const char *root)
{
	const char *base = strrchr(path, '/'), *rel = NULL;
	size_t len = root ? strlen(root) : 0;

	if (len && !strncmp(path, root, len)) {
		rel = path + len;
		if (!*rel || !strcmp(rel, "/."))
			/* the directory itself: as '.' or by its full path */
			return !fnmatch(glob, ".", 0) || !fnmatch(glob, path, 0);
		rel = *rel == '/' ? rel + 1 : NULL;
	}
	return !fnmatch(glob, path, 0) || (base && !fnmatch(glob, base + 1, 0)) ||
	       (rel && !fnmatch(glob, rel, 0));
}

int plan_fire(const struct plan *plan, const struct plan_call *c,
	      unsigned long (*count)(void *ctx, size_t rule, bool add), void *ctx)
{
	int fire = -1;

	for (size_t i = 0; i < plan->nr; i++) {
		const struct plan_rule *p = &plan->rules[i];
		unsigned long k = c->n;

		if (p->call != c->call)
			continue;
		if ((p->glob && (!c->path[0] || !glob_match(p->glob, c->path, c->root))) ||
		    (p->thread && p->thread != c->thread)) {
			/* '++': once its Nth match came, every call, on any
			 * path, in any thread */
			if (p->everywhere && fire < 0 && !c->exempt &&
			    count(ctx, i, false) >= p->n)
				fire = (int)i;
			continue;
		}
		/* a rule with a glob or a thread counts its own matches */
		if (p->glob || p->thread)
			k = count(ctx, i, true);
		if (fire < 0 && !c->exempt && (k == p->n || (p->persist && k > p->n)))
			fire = (int)i;
	}
	return fire;
}

int plan_action_str(const struct plan_rule *r, char *buf, size_t size)
{
	switch (r->action) {
	case PLAN_ERRNO:
		return snprintf(buf, size, "%s", r->errname);
	case PLAN_SHORT:
		if (r->bytes)
			return snprintf(buf, size, "short:%lu", r->bytes);
		return snprintf(buf, size, "short");
	case PLAN_CRASH:
		return snprintf(buf, size, "crash");
	case PLAN_CRASH_AFTER:
		return snprintf(buf, size, "crash-after");
	}
	return snprintf(buf, size, "?");
}

/* bytes in the valid UTF-8 sequence at S (at most LEN long), or 0 */
static size_t utf8_seq(const unsigned char *s, size_t len)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		n = 3;
		if (s[0] == 0xe0)
			lo = 0xa0;	/* overlong */
		if (s[0] == 0xed)
			hi = 0x9f;	/* surrogates */
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		n = 4;
		if (s[0] == 0xf0)
			lo = 0x90;
		if (s[0] == 0xf4)
			hi = 0x8f;	/* above U+10FFFF */
	} else
		return 0;
	if (len < n || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

static void put(char *buf, size_t size, size_t *pos, const char *s, size_t len)
{
	if (*pos < size) {
		size_t room = size - *pos - 1;
		memcpy(buf + *pos, s, len < room ? len : room);
	}
	*pos += len;
	if (size)
		buf[*pos < size ? *pos : size - 1] = '\0';
}

void plan_json_quote(char *buf, size_t size, size_t *pos, const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	char esc[8];

	put(buf, size, pos, "\"", 1);
	for (size_t i = 0; i < len;) {
		size_t n = utf8_seq(u + i, len - i);

		if (n > 1) {
			put(buf, size, pos, s + i, n);
			i += n;
			continue;
		}
		if (u[i] == '"' || u[i] == '\\') {
			esc[0] = '\\';
			esc[1] = u[i];
			put(buf, size, pos, esc, 2);
		} else if (u[i] == '\n') {
			put(buf, size, pos, "\\n", 2);
		} else if (u[i] == '\t') {
			put(buf, size, pos, "\\t", 2);
		} else if (u[i] < 0x20 || u[i] == 0x7f) {
			snprintf(esc, sizeof(esc), "\\u%04x", u[i]);
			put(buf, size, pos, esc, 6);
		} else if (u[i] >= 0x80) {
			/* a byte that is not UTF-8, as Python's surrogateescape
			 * spells it (os.fsdecode): the line stays valid JSON and
			 * the name comes back as the bytes it was */
			snprintf(esc, sizeof(esc), "\\udc%02x", u[i]);
			put(buf, size, pos, esc, 6);
		} else {
			put(buf, size, pos, s + i, 1);
		}
		i++;
	}
	put(buf, size, pos, "\"", 1);
}

static void putf(char *buf, size_t size, size_t *pos, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void putf(char *buf, size_t size, size_t *pos, const char *fmt, ...)
{
	char tmp[128];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0)
		put(buf, size, pos, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

static const char *action_json_name(enum plan_action a)
{
	switch (a) {
	case PLAN_ERRNO: return "errno";
	case PLAN_SHORT: return "short";
	case PLAN_CRASH: return "crash";
	case PLAN_CRASH_AFTER: return "crash-after";
	}
	return "?";
}

size_t plan_json(const struct plan *plan, char *buf, size_t size)
{
	size_t pos = 0;

	if (size)
		buf[0] = '\0';
	putf(buf, size, &pos, "{\"rules\":[");
	for (size_t i = 0; i < plan->nr; i++) {
		const struct plan_rule *r = &plan->rules[i];

		putf(buf, size, &pos, "%s{\"text\":", i ? "," : "");
		plan_json_quote(buf, size, &pos, r->text, strlen(r->text));
		putf(buf, size, &pos, ",\"call\":\"%s\",\"glob\":",
		     call_table[r->call].name);
		if (r->glob)
			plan_json_quote(buf, size, &pos, r->glob, strlen(r->glob));
		else
			putf(buf, size, &pos, "null");
		if (r->thread)
			putf(buf, size, &pos, ",\"thread\":%u", r->thread);
		else
			putf(buf, size, &pos, ",\"thread\":null");
		putf(buf, size, &pos, ",\"n\":%lu,\"persist\":%s,\"everywhere\":%s,"
		     "\"action\":\"%s\"",
		     r->n, r->persist ? "true" : "false",
		     r->everywhere ? "true" : "false",
		     action_json_name(r->action));
		if (r->action == PLAN_ERRNO)
			putf(buf, size, &pos, ",\"errno\":%d,\"errname\":\"%s\"",
			     r->err, r->errname);
		else
			putf(buf, size, &pos, ",\"errno\":null,\"errname\":null");
		if (r->action == PLAN_SHORT && r->bytes)
			putf(buf, size, &pos, ",\"bytes\":%lu}", r->bytes);
		else
			putf(buf, size, &pos, ",\"bytes\":null}");
	}
	putf(buf, size, &pos, "]}");
	return pos;
}
