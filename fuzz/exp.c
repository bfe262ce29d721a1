/*
 * exp.c - libFuzzer harness: the experiment YAML (exp/exp.c, exp_load: parsed and
 * validated, nothing run). Referenced hardware profiles and workload files
 * are loaded as a user's would be.
 */
#include "fuzz.h"
#include "../exp/exp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gms_err err = {{0}};
	const char *p = fz_path("exp", ".yaml", data, size);
	if (!p)
		return 0;
	struct exp e;
	struct exp_opts o = {.jobs = 1, .quiet = true};
	int rc = exp_load(&e, p, &o, &err);
	fz_check(rc, &err);
	if (rc == 0)
		exp_free(&e);
	return 0;
}
