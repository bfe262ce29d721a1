/*
 * dtr.c - libFuzzer harness: the DTR trace log (workloads/wl_dtr.c, wl_load_dtr).
 */
#include "fuzz.h"
#include "../workloads/wl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gms_err err = {{0}};
	const char *p = fz_path("dtr", ".log", data, size);
	if (!p)
		return 0;
	struct wl_workload *w = wl_load_dtr(p, &err);
	fz_check(w ? 0 : -1, &err);
	wl_free(w);
	return 0;
}
