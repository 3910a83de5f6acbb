#ifndef CRASHCHECK_PLAN_H
#define CRASHCHECK_PLAN_H

/*
 * The plan language and the table of intercepted calls.
 *
 * Pure C with no global state and no libfiu dependency, so that the preload
 * library, faults/bin/planck, the Check tests and the fuzzer all share one
 * parser. Grammar (docs/design.md):
 *
 *   PLAN   := RULE (';' RULE)*
 *   RULE   := CALL [ '(' GLOB ')' ] [ '@' THREAD ] '#' N [ '+' [ '+' ] ] '=' ACTION
 *   ACTION := ERRNO-NAME | 'short' [ ':' BYTES ] | 'crash' | 'crash-after'
 *
 * Spaces and tabs around a rule are ignored; an empty or all-blank plan has
 * no rules. Which actions a call accepts comes from calls.def: EINTR needs
 * F_EINTR, short needs F_SHORT, crash and crash-after need F_CRASH, ENOSPC
 * needs F_ENOSPC or F_ERRNO, EIO needs F_EIO or F_ERRNO, any other errno
 * needs F_ERRNO. A 64-bit twin's name (ALIAS in calls.def: pwrite64,
 * open64) names its base call: the rule's call is the base.
 */

#include <stdbool.h>
#include <stddef.h>

/* fault classes of calls.def */
#define F_EINTR  0x01u
#define F_SHORT  0x02u
#define F_ENOSPC 0x04u
#define F_EIO    0x08u
#define F_CRASH  0x10u
#define F_ERRNO  0x20u

enum call_class { C_DATA, C_SYNC, C_NAME, C_MAP, C_OTHER };

enum call_id {
#define CALL(name, point, faults, cls) CALL_##name,
#define ALIAS(name, base)
#define WRAP(...)
#include "calls.def"
#undef CALL
#undef ALIAS
#undef WRAP
	CALL__COUNT
};

struct call_info {
	const char *name;	/* as plans and traces spell it */
	const char *point;	/* libfiu point of its errno faults */
	unsigned faults;	/* F_* set */
	enum call_class cls;
};

extern const struct call_info call_table[CALL__COUNT];

/* the table's index of the call NAME[0..len), or -1 */
int call_lookup(const char *name, size_t len);
/* the base call of a 64-bit alias NAME[0..len), or -1 when it is none */
int call_alias_base(const char *name, size_t len);

/* errno names the plan accepts; NULL / 0 when unknown */
const char *plan_errno_name(int err);
int plan_errno_value(const char *name, size_t len);

#define PLAN_MAX_LEN 4096	/* bytes of plan text accepted */
#define PLAN_MAX_RULES 64	/* rules in one plan */
#define PLAN_MAX_N 4294967295UL	/* largest call number */
#define PLAN_MAX_THREAD 4294967295UL	/* largest thread number */
#define PLAN_MAX_BYTES 2147483647UL	/* largest short:BYTES */

enum plan_action { PLAN_ERRNO, PLAN_SHORT, PLAN_CRASH, PLAN_CRASH_AFTER };

struct plan_rule {
	const char *text;	/* the rule as written, blanks trimmed */
	int call;		/* enum call_id */
	const char *glob;	/* fnmatch(3) pattern on the path, or NULL */
	unsigned thread;	/* only the calls of this thread of its process
				 * (1 its first, then in the order made), 0 = any */
	unsigned long n;	/* fire on the nth matching call, 1-based */
	bool persist;		/* '+': and on every matching call after it */
	bool everywhere;	/* '++': and on every call of CALL after it, on any
				 * path: a full disk fails every file's writes */
	enum plan_action action;
	int err;		/* PLAN_ERRNO: the errno to inject */
	const char *errname;	/* PLAN_ERRNO: its name, e.g. "EIO" */
	unsigned long bytes;	/* PLAN_SHORT: bytes passed down; 0 = half */
};

struct plan {
	size_t nr;		/* rules in use */
	struct plan_rule rules[PLAN_MAX_RULES];
	/* storage of text and glob of every rule (NUL-terminated copies) */
	char buf[2 * PLAN_MAX_LEN + 2 * PLAN_MAX_RULES + 2];
};

/*
 * Parse TEXT into PLAN. Returns 0, or -1 with ERR set to one line,
 * "<problem> at '<token>'", naming the offending token (non-printable bytes
 * shown as \xNN, long tokens cut with "..."). PLAN is unusable after -1.
 */
int plan_parse(const char *text, struct plan *plan, char *err, size_t errlen);

/* a call as the plan sees it */
struct plan_call {
	int call;		/* enum call_id */
	unsigned long n;	/* the Nth call to CALL */
	unsigned thread;	/* the thread that makes it (plan_rule.thread's) */
	const char *path;	/* what it works on; "" = unknown */
	const char *root;	/* the work directory globs may be relative to, or NULL */
	bool exempt;		/* counted as any call, but no rule fires on it */
};

/*
 * The rule of PLAN that fires on call C: the index of the first rule whose
 * count it reaches (N itself, or '+' and past it), or -1. A rule with a
 * glob counts only the calls whose path (whole, its last component, or
 * relative to ROOT) matches it (fnmatch(3), no flags), a rule with a
 * thread only the calls of that thread: COUNT(CTX, I, true) is called
 * once for each such rule I that matches, whichever fires, and returns
 * that rule's new count; COUNT(CTX, I, false) returns it unchanged (a
 * '++' rule fires on any path, in any thread, once its Nth match came).
 * Both backends decide with this.
 */
int plan_fire(const struct plan *plan, const struct plan_call *c,
	      unsigned long (*count)(void *ctx, size_t rule, bool add), void *ctx);

/* the action's name as traces spell it: "EIO", "short:100", "crash" */
int plan_action_str(const struct plan_rule *r, char *buf, size_t size);

/*
 * Write the plan as one JSON object (no newline) into BUF like snprintf:
 * returns the length the whole text needs, writes at most SIZE-1 bytes
 * plus a NUL.
 */
size_t plan_json(const struct plan *plan, char *buf, size_t size);

/*
 * Append S[0..len) as a JSON string with its quotes to BUF at *POS, like
 * snprintf (*POS advances by the full length even when BUF is too small).
 * Bytes that are not valid UTF-8 come out as \u00XX of the byte so the
 * result is always valid JSON.
 */
void plan_json_quote(char *buf, size_t size, size_t *pos, const char *s, size_t len);

#endif
