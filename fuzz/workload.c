/*
 * workload.c - libFuzzer harness: the workload YAML (workloads/wl_yaml.c,
 * wl_load_yaml at the file's own batch).
 */
#include "fuzz.h"
#include "../workloads/wl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gms_err err = {{0}};
	const char *p = fz_path("workload", ".yaml", data, size);
	if (!p)
		return 0;
	struct wl_workload *w = wl_load_yaml(p, 0, &err);
	fz_check(w ? 0 : -1, &err);
	wl_free(w);
	return 0;
}
