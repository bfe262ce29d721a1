/*
 * msr.c - libFuzzer harness: the measurement CSV (sim/msr.c, msr_read).
 */
#include "fuzz.h"
#include "../sim/msr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gms_err err = {{0}};
	const char *p = fz_path("msr", ".csv", data, size);
	if (!p)
		return 0;
	struct msr m;
	int rc = msr_read(p, &m, &err);
	fz_check(rc, &err);
	if (rc == 0)
		msr_free(&m);
	return 0;
}
