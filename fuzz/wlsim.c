/*
 * wlsim.c - libFuzzer harness: what the workload harness loads, simulated
 * (issue 38, item 6). The workload harness (workload.c) stops at the
 * load; turn 2's overflow was found only by simulating a loaded file, so
 * here every workload that loads is run, as `simulate` runs it, under
 * framework with the whole device (its peak) and then under ondemand
 * (swapping) with half that peak as the budget, 2 iterations (1 warm-up),
 * on hw_test_profile (round costs: no float surprises from a profile).
 * The oracle beyond the sanitizers: a run that fails must say why, and a
 * simulated time never passes the clock's overflow mark.
 */
#include "fuzz.h"
#include "../policies/pol.h"
#include "../sim/ex.h"
#include "../sim/hw.h"
#include "../workloads/wl.h"

#include <stdio.h>
#include <stdlib.h>

/* One run of w under policy name with budget; its peak into *peak. */
static void run(const struct hw_profile *hw, const struct wl_workload *w,
		const char *name, uint64_t budget, uint64_t *peak)
{
	gms_err err = {{0}};
	struct pol pol;
	int rc = pol_create(&pol, name, NULL, NULL, NULL, 0, &err);
	fz_check(rc, &err);
	if (rc < 0)
		return;
	struct ex_cfg cfg = {.hw = hw, .wl = w, .pol = &pol,
			     .budget = budget, .iterations = 2, .warmup = 1};
	struct st_run st;
	rc = ex_run(&cfg, &st, &err);
	fz_check(rc, &err);
	if (st.steady.time < 0 || st.steady.time > SIM_TIME_OVER) {
		fprintf(stderr, "fuzz: %s: a steady iteration of %lld ns\n",
			name, (long long)st.steady.time);
		abort();
	}
	if (peak)
		*peak = st.mem.peak_allocated;
	st_run_free(&st);
	pol_destroy(&pol);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gms_err err = {{0}};
	const char *p = fz_path("wlsim", ".yaml", data, size);
	if (!p)
		return 0;
	struct wl_workload *w = wl_load_yaml(p, 0, &err);
	fz_check(w ? 0 : -1, &err);
	if (!w)
		return 0;
	struct hw_profile hw;
	hw_test_profile(&hw, (uint64_t)1 << 40);
	uint64_t peak = 0;
	run(&hw, w, "framework", 0, &peak);
	if (peak / 2)
		run(&hw, w, "ondemand", peak / 2, NULL);
	wl_free(w);
	return 0;
}
