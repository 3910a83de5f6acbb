/*
 * planck: check a crashcheck plan and print it as JSON.
 *
 *   planck PLAN       one JSON line {"rules":[...]}, exit 0; a bad plan is
 *                     one line "planck: bad plan: <problem> at '<token>'",
 *                     exit 2
 *   planck --calls    the call table of calls.def as one JSON line
 *
 * The harness validates every plan with this program before running
 * anything, so the library and the harness can never disagree on what a plan
 * means: both use plan.c.
 */
#include "plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] = "usage: planck PLAN | planck --calls";

static const char *const fault_names[] = {
	"EINTR", "short", "ENOSPC", "EIO", "crash", "errno",
};

static int print_calls(void)
{
	static char buf[64 * 1024];
	size_t pos = 0;

	pos += snprintf(buf + pos, sizeof(buf) - pos, "{\"calls\":[");
	for (int i = 0; i < CALL__COUNT && pos < sizeof(buf); i++) {
		const struct call_info *ci = &call_table[i];
		int first = 1;

		pos += snprintf(buf + pos, sizeof(buf) - pos,
				"%s{\"name\":\"%s\",\"point\":\"%s\",\"faults\":[",
				i ? "," : "", ci->name, ci->point);
		for (unsigned b = 0; b < 6 && pos < sizeof(buf); b++) {
			if (!(ci->faults & (1u << b)))
				continue;
			pos += snprintf(buf + pos, sizeof(buf) - pos, "%s\"%s\"",
					first ? "" : ",", fault_names[b]);
			first = 0;
		}
		if (pos < sizeof(buf))
			pos += snprintf(buf + pos, sizeof(buf) - pos,
					"],\"class\":\"%s\"}",
					call_class_name(ci->cls));
	}
	if (pos < sizeof(buf))
		pos += snprintf(buf + pos, sizeof(buf) - pos, "]}");
	if (pos >= sizeof(buf)) {
		fprintf(stderr, "planck: call table larger than %zu bytes\n",
			sizeof(buf));
		return 1;
	}
	puts(buf);
	return 0;
}

int main(int argc, char **argv)
{
	static struct plan plan;
	char err[256];
	char *json = NULL;
	size_t need;
	int ret = 0;

	if (argc != 2) {
		fprintf(stderr, "%s\n", usage);
		return 2;
	}
	if (!strcmp(argv[1], "--calls")) {
		ret = print_calls();
		goto out;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		printf("%s\n", usage);
		return 0;
	}
	if (plan_parse(argv[1], &plan, err, sizeof(err)) < 0) {
		fprintf(stderr, "planck: bad plan: %s\n", err);
		return 2;
	}
	need = plan_json(&plan, NULL, 0) + 1;
	json = malloc(need);
	if (!json) {
		fprintf(stderr, "planck: malloc %zu bytes: out of memory\n", need);
		return 1;
	}
	plan_json(&plan, json, need);
	puts(json);
out:
	free(json);
	/* stdout may be a full pipe or disk: a lost answer must not exit 0 */
	if (fflush(stdout) == EOF || ferror(stdout)) {
		perror("planck: write stdout");
		return 1;
	}
	return ret;
}
