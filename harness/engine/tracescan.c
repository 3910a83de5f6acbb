/*
 * tracescan.so: what harness/engine/trace.py's Lazy reads of every line of a
 * trace, in C, loaded with ctypes: the head of each line (its ev, its seq,
 * whether a fault fired on it) and the scan for moot writes.
 *
 * Why. A run that claims success is judged at its after-exit crash point,
 * from its whole trace, and the replay passes over the writes a later
 * whole-file fsync makes moot. Finding them took a regular expression per
 * write line, about 2.5 microseconds each inside a sweep: at 1000 writes,
 * a sixth of such a case's cost; reading the heads, another pattern and
 * a look for '"fault":' per line, cost nearly a tenth. Here a line costs
 * about 0.15 microseconds.
 *
 * What. Exactly what trace.py does in Python, which stays the reference
 * (and the way where this is not built). The head is Lazy._HEAD. The
 * moot scan: the two patterns _MOOT_WRITE (matched from the line's
 * start) and _WHOLE_SYNC (the whole line), spelled out as literal steps
 * (both patterns are deterministic: each optional part starts with a key
 * no other part starts with, so no backtracking can change a match), and
 * the same walk from the last line to the first with the set of fsync'd
 * inodes, where any line naming an inode's digits, anywhere, takes it out
 * of the set. The one difference is one of reporting: a moot write whose
 * inode number is 2^64 or more is not reported (it would not fit), which
 * only leaves a write to be replayed; a seq of 2^64 or more sends the
 * index back to Python. tests/test_tracescan.py holds the two ways to the
 * same answers, and tests/unit/check_tracescan.c runs this file under
 * the sanitizers.
 *
 * Built without sanitizers (like faults/libcrashcheck.so): a sanitized
 * shared object would need the sanitizer runtime loaded into Python.
 */
#include <stddef.h>
#include <string.h>

#include "tracescan.h"

/* The calls of a moot write, in the order harness/engine/trace.py names them. */
static const char *const WRITE_CALLS[] = {
	"write", "pwrite", "pwrite64", "writev", "pwritev", "pwritev2",
};
#define N_WRITE_CALLS (sizeof(WRITE_CALLS) / sizeof(WRITE_CALLS[0]))

/* A place in one line, and its end. */
struct cur {
	const char *p, *end;
};

/* the literal S next: step over it */
static int lit(struct cur *c, const char *s)
{
	size_t n = strlen(s);

	if ((size_t)(c->end - c->p) < n || memcmp(c->p, s, n) != 0)
		return 0;
	c->p += n;
	return 1;
}

/* \d+ (ASCII digits), where they are */
static int digits(struct cur *c, const char **at, size_t *len)
{
	const char *start = c->p;

	while (c->p < c->end && *c->p >= '0' && *c->p <= '9')
		c->p++;
	if (at) {
		*at = start;
		*len = (size_t)(c->p - start);
	}
	return c->p > start;
}

/* -?\d+ */
static int signed_digits(struct cur *c)
{
	if (c->p < c->end && *c->p == '-')
		c->p++;
	return digits(c, NULL, NULL);
}

/* [^"\\]*" : a string with no escape in it, and its closing quote */
static int plain_string(struct cur *c)
{
	while (c->p < c->end && *c->p != '"' && *c->p != '\\')
		c->p++;
	return lit(c, "\"");
}

/* the literal of LEN bytes at S next */
static int same(struct cur *c, const char *s, size_t len)
{
	if ((size_t)(c->end - c->p) < len || memcmp(c->p, s, len) != 0)
		return 0;
	c->p += len;
	return 1;
}

/* what both shapes start with, up to the call's name */
static int call_head(struct cur *c)
{
	return lit(c, "{\"ev\":\"call\",\"seq\":") && digits(c, NULL, NULL) &&
	       lit(c, ",\"pid\":") && signed_digits(c) &&
	       lit(c, ",\"call\":\"");
}

/* (?:,"at":"[^"\\]*")? : where the call was made, when the line says;
 * then (?:,"up":\[[^\]"\\]*(?:"[^"\\]*"[^\]"\\]*)*\])? : its callers */
static int call_site(struct cur *c)
{
	struct cur at = *c;

	if (lit(&at, ",\"at\":\"") && plain_string(&at))
		*c = at;
	at = *c;
	if (lit(&at, ",\"up\":[")) {
		for (;;) {
			while (at.p < at.end && *at.p != ']' && *at.p != '"' &&
			       *at.p != '\\')
				at.p++;
			if (at.p >= at.end || *at.p == '\\')
				return 1;
			if (*at.p == ']') {
				at.p++;
				*c = at;
				return 1;
			}
			at.p++;		/* the opening quote */
			if (!plain_string(&at))
				return 1;
		}
	}
	return 1;
}

/* from the call's count to the inode's digits (INO, LEN) */
static int call_file(struct cur *c, const char **ino, size_t *len)
{
	return lit(c, ",\"n\":") && digits(c, NULL, NULL) && call_site(c) &&
	       lit(c, ",\"fd\":") && digits(c, NULL, NULL) &&
	       lit(c, ",\"path\":\"") && plain_string(c) &&
	       lit(c, ",\"ino\":") && digits(c, ino, len);
}

/*
 * _MOOT_WRITE at the start of LINE (N bytes): 1 + the index of its call
 * in WRITE_CALLS, with its inode's digits (INO, INO_LEN) and where the
 * match ends (END); 0 when it does not match.
 */
static int moot_write(const char *line, size_t n, const char **ino,
		      size_t *ino_len, const char **end)
{
	struct cur c = {line, line + n}, fault;
	size_t i;

	if (!call_head(&c))
		return 0;
	for (i = 0; i < N_WRITE_CALLS; i++) {
		struct cur name = c;

		if (lit(&name, WRITE_CALLS[i]) && lit(&name, "\"")) {
			c = name;
			break;
		}
	}
	if (i == N_WRITE_CALLS || !call_file(&c, ino, ino_len) || !lit(&c, ","))
		return 0;
	if (lit(&c, "\"off\":") && !(signed_digits(&c) && lit(&c, ",")))
		return 0;
	if (lit(&c, "\"len\":") && !(signed_digits(&c) && lit(&c, ",")))
		return 0;
	if (!lit(&c, "\"flags\":["))
		return 0;
	lit(&c, "\"O_APPEND\"");
	if (!(lit(&c, "],\"ret\":") && signed_digits(&c) &&
	      lit(&c, ",\"errno\":") && digits(&c, NULL, NULL)))
		return 0;
	lit(&c, ",\"thin\":true");
	fault = c;
	if (lit(&fault, ",\"fault\":{\"rule\":") && digits(&fault, NULL, NULL) &&
	    lit(&fault, ",\"action\":\"") && plain_string(&fault) &&
	    lit(&fault, "}")) {
		c = fault;
		/* an EINTR's: the signals that could interrupt the call */
		if (lit(&fault, ",\"intr\":[")) {
			while (fault.p < fault.end &&
			       ((*fault.p >= '0' && *fault.p <= '9') || *fault.p == ','))
				fault.p++;
			if (lit(&fault, "]"))
				c = fault;
		}
	}
	if (c.end - c.p == 1 && *c.p == '}') {
		*end = c.end;
		return (int)i + 1;
	}
	if (lit(&c, ",\"snap\":{\"files\":{\"") && same(&c, *ino, *ino_len) &&
	    lit(&c, "\":{")) {
		*end = c.p;
		return (int)i + 1;
	}
	return 0;
}

/* _WHOLE_SYNC is all of LINE (N bytes), its inode's digits INO, INO_LEN */
static int whole_sync(const char *line, size_t n, const char **ino,
		      size_t *ino_len)
{
	struct cur c = {line, line + n};

	if (!call_head(&c) ||
	    !(lit(&c, "fsync\"") || lit(&c, "fdatasync\"")) ||
	    !call_file(&c, ino, ino_len) ||
	    !lit(&c, ",\"ret\":0,\"errno\":0,\"snap\":{\"files\":{\"") ||
	    !same(&c, *ino, *ino_len) ||
	    !lit(&c, "\":{\"size\":") || !digits(&c, NULL, NULL) ||
	    !lit(&c, ",\"hash\":\""))
		return 0;
	for (int i = 0; i < 16; i++, c.p++)
		if (c.p == c.end ||
		    !((*c.p >= '0' && *c.p <= '9') || (*c.p >= 'a' && *c.p <= 'f')))
			return 0;
	return lit(&c, "\"}}}}") && c.p == c.end;
}

/* the fsync'd inodes of the walk, as digits in the lines */
struct synced {
	const char *at[TRACESCAN_MAX_SYNCED];
	size_t len[TRACESCAN_MAX_SYNCED];
	size_t n;
};

/* the index of inode INO (LEN digits) in S, or -1 */
static long synced_find(const struct synced *s, const char *ino, size_t len)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->len[i] == len && memcmp(s->at[i], ino, len) == 0)
			return (long)i;
	return -1;
}

/* LINE (N bytes) names inode I of S: its digits are in it, anywhere */
static int names(const struct synced *s, size_t i, const char *line, size_t n)
{
	return memmem(line, n, s->at[i], s->len[i]) != NULL;
}

/* the value of LEN digits at D into *V; 0 when it is 2^64 or more */
static int value(const char *d, size_t len, unsigned long long *v)
{
	*v = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned digit = (unsigned)(d[i] - '0');

		if (*v > (~0ULL - digit) / 10)
			return 0;
		*v = *v * 10 + digit;
	}
	return 1;
}

/* LINE (N bytes), with the walk's set S, is a moot write: its kind, or 0 */
static int moot_line(const struct synced *s, const char *line, size_t n,
		     unsigned long long *ino_out)
{
	const char *ino, *end;
	size_t len;
	long own;
	int kind = moot_write(line, n, &ino, &len, &end);

	if (!kind || (own = synced_find(s, ino, len)) < 0)
		return 0;
	/* the snapshot of its range: no object inside it, and all closed */
	if (end != line + n &&
	    (memchr(end, '{', (size_t)(line + n - end)) != NULL || n < 4 ||
	     memcmp(line + n - 4, "}}}}", 4) != 0))
		return 0;
	/* a line that names another fsync'd inode does not stay quiet */
	if (s->n > 1)
		for (size_t i = 0; i < s->n; i++)
			if ((long)i != own && names(s, i, line, n))
				return 0;
	return value(ino, len, ino_out) ? kind : -1;
}

int tracescan_abi(void)
{
	return TRACESCAN_ABI;
}

long tracescan_index(const char *buf, size_t len, size_t nlines,
		     unsigned long long *seq, unsigned char *ev)
{
	static const char *const EVS[] = {"init", "call", "crash"};
	const char *p = buf, *end = buf + len;
	size_t i = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *stop = nl ? nl : end;
		struct cur c = {p, stop};
		const char *d;
		size_t dlen, e;

		if (stop == p) {	/* an empty line: not one of the lines */
			p = stop + 1;
			continue;
		}
		if (i == nlines || !lit(&c, "{\"ev\":\""))
			return -1;
		for (e = 0; e < 3; e++) {
			struct cur name = c;

			if (lit(&name, EVS[e]) && lit(&name, "\",\"seq\":")) {
				c = name;
				break;
			}
		}
		if (e == 3 || !digits(&c, &d, &dlen) || !lit(&c, ",") ||
		    stop[-1] != '}' || !value(d, dlen, &seq[i]))
			return -1;
		ev[i] = (unsigned char)(e + 1);
		if (memmem(p, (size_t)(stop - p), "\"fault\":", 8))
			ev[i] |= TRACESCAN_FAULT;
		i++;
		p = stop + 1;
	}
	return i == nlines ? 0 : -1;
}

long tracescan_moot(const char *buf, size_t len, size_t nlines,
		    unsigned char *kind, unsigned long long *ino)
{
	struct synced s = {.n = 0};
	const char *stop = buf + len;	/* where the line being read ends */
	long moot = 0;

	for (size_t i = nlines; i-- > 0;) {
		const char *nl = stop > buf ? memrchr(buf, '\n', (size_t)(stop - buf)) : NULL;
		const char *line = nl ? nl + 1 : buf, *at;
		size_t n = (size_t)(stop - line), at_len;
		int k = 0;

		kind[i] = 0;
		ino[i] = 0;
		stop = nl ? nl : buf;
		if (s.n && (k = moot_line(&s, line, n, &ino[i])) != 0) {
			/* -1: moot, but its inode's number does not fit */
			if (k > 0) {
				kind[i] = (unsigned char)k;
				moot++;
			} else {
				ino[i] = 0;
			}
			continue;
		}
		if (whole_sync(line, n, &at, &at_len)) {
			if (synced_find(&s, at, at_len) < 0) {
				if (s.n == TRACESCAN_MAX_SYNCED)
					return -1;
				s.at[s.n] = at;
				s.len[s.n++] = at_len;
			}
			continue;
		}
		for (size_t j = 0; j < s.n;) {
			if (names(&s, j, line, n)) {
				s.at[j] = s.at[s.n - 1];
				s.len[j] = s.len[--s.n];
			} else {
				j++;
			}
		}
	}
	/* the first line of each run of moot writes to one inode */
	for (size_t i = 0; i < nlines; i++)
		if (kind[i] && (i == 0 || !kind[i - 1] || ino[i - 1] != ino[i]))
			kind[i] |= TRACESCAN_RUN;
	return moot;
}
