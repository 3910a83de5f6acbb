/*
 * planck: check a crashcheck plan and print it as JSON.
 *
 *   planck PLAN       one JSON line {"rules":[...]}, exit 0; a bad plan is
 *                     one line "planck: bad plan: <problem> at '<token>'",
 *                     exit 2
 *
 * The harness validates every plan with this program before running
 * anything, so the library and the harness can never disagree on what a plan
 * means: both use plan.c.
 */
#include "plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] = "usage: planck PLAN";

int main(int argc, char **argv)
{
	static struct plan plan;
	char err[256];
	char *json;
	size_t need;

	if (argc != 2) {
		fprintf(stderr, "%s\n", usage);
		return 2;
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
	free(json);
	/* stdout may be a full pipe or disk: a lost answer must not exit 0 */
	if (fflush(stdout) == EOF || ferror(stdout)) {
		perror("planck: write stdout");
		return 1;
	}
	return 0;
}
