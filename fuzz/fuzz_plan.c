/*
 * libFuzzer target for plan_parse() (faults/plan.c).
 *
 * Beyond "does not crash" under ASan/UBSan it checks what callers rely on:
 *   - a rejected plan has a one-line error of the form "... at '...'";
 *   - an accepted plan prints as JSON whose length plan_json() predicted;
 *   - the rule texts, joined again with ';', parse to the same plan (the
 *     trace and the reports quote rules by their text).
 * Build and run: make -C faults fuzz (FUZZ_TIME=seconds).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"

static struct plan plan, again;
static char text[PLAN_MAX_LEN + 2];
static char json1[64 * 1024], json2[64 * 1024];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256], rejoined[PLAN_MAX_LEN + PLAN_MAX_RULES + 1];
	size_t len = size < sizeof(text) - 1 ? size : sizeof(text) - 1, o = 0, n;

	memcpy(text, data, len);
	text[len] = '\0';

	if (plan_parse(text, &plan, err, sizeof(err)) < 0) {
		if (!err[0] || strchr(err, '\n') || !strstr(err, " at '"))
			abort();
		return 0;
	}
	if (plan.nr > PLAN_MAX_RULES)
		abort();
	n = plan_json(&plan, json1, sizeof(json1));
	if (n >= sizeof(json1) || strlen(json1) != n)
		abort();

	for (size_t i = 0; i < plan.nr; i++) {
		size_t l = strlen(plan.rules[i].text);
		if (o + l + 2 > sizeof(rejoined))
			abort();
		if (i)
			rejoined[o++] = ';';
		memcpy(rejoined + o, plan.rules[i].text, l);
		o += l;
	}
	rejoined[o] = '\0';
	if (plan_parse(rejoined, &again, err, sizeof(err)) < 0)
		abort();
	plan_json(&again, json2, sizeof(json2));
	if (strcmp(json1, json2))
		abort();
	return 0;
}
