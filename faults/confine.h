#ifndef CRASHCHECK_CONFINE_H
#define CRASHCHECK_CONFINE_H

/*
 * Confinement of a run (harness/engine/confine.py makes the view): the
 * program gets a mount namespace of its own in which every filesystem but
 * its scratch is an overlay (what it writes there lands in an upper
 * directory the harness reads and throws away) or read-only, with
 * /proc, /dev and a private /tmp. The harness writes the steps as text,
 * one a line, fields separated by tabs (CRASHCHECK_VIEW); cf_parse reads
 * them in place, cf_apply makes them with raw system calls alone, so that
 * the supervisor's child, which shares its memory until it execs, can
 * apply steps its parent parsed.
 */

#define CF_VAR "CRASHCHECK_VIEW"
#define CF_MAX_OPS 256

struct cf_op {
	char kind;		/* a step's letter: confine.c, cf_apply */
	const char *a, *b;	/* its arguments, NULL when it has fewer */
};

/* the steps of TEXT (changed in place) into OPS; their number, or -1
 * when TEXT is not steps (an unknown letter, too many, a missing
 * argument) */
int cf_parse(char *text, struct cf_op *ops, int max);

/* make the steps; 0, or -errno with *failed the step that failed */
long cf_apply(const struct cf_op *ops, int n, const struct cf_op **failed);

/* "overlay": what a step does */
const char *cf_describe(const struct cf_op *op);

/* "confine: overlay '/x': No such file or directory" (no subject for
 * the namespace steps), into BUF */
const char *cf_message(char *buf, size_t size, const struct cf_op *op, int err);

#endif
