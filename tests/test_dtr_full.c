/*
 * test_dtr_full.c - the `dtr` policy, preset full (policies/dtr_full.c):
 * DTR's heuristics in the executor, on a small graph under memory
 * pressure worked out by hand, and its parameters.
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
#include "../policies/dtr.h"
#include "../policies/dtr_full.h"

/* The graph (arena allocator, the test profile: a kernel takes its
 * time, no gaps between kernels):
 *   w  parameter, 50 B (persistent)
 *   op0  w -> a (100 B)   1000 ns
 *   op1  w -> b (100 B)    100 ns
 *   op2  w -> c (100 B)     10 ns
 *   op3  a, c -> d (50 B)   10 ns
 *   op4  b, d -> e (50 B)   10 ns
 * every op recomputable; a and c are last read by op3, b and d by op4, e
 * by nobody (freed at once). Budget 300 B.
 * Without pressure the iteration takes 1000+100+10+10+10 = 1130 ns.
 *
 * op2's output: w+a+b = 250, +100 = 350 > 300: the first failure.
 * Candidates a and b (op2 reads only w). Now = 1100 (op0 ran [0,1000],
 * op1 [1000,1100]); last accesses a 0, b 1000; no evicted neighbours.
 *   dtr:     a 1000 / (100 x 1100) = 0.00909, b 100 / (100 x 100) = 0.01
 *            -> a.
 *   msps:    a 1000/100 = 10, b 100/100 = 1 -> b.
 *   lru:     a 0 < b 1000 -> a.
 *   largest: 1/100 both: the tie goes to the later in the pool -> b.
 * Evicting a: c fits (w,b,c = 250). op3 reads a: rematerialise op0
 * (1000 ns): a needs 350 > 300, a second failure; only b is evictable (c
 * is op3's input) -> b. Then d: w,c,a,d = 300 fits; after op3 a and c go
 * (w,d = 100). op4 reads b: rematerialise op1 (100 ns): 200, e 250.
 * So dtr and lru: 2 evictions, 2 remats of 1100 ns, iteration 2230 ns.
 * Evicting b: c fits, op3 runs (w,a,c,d = 300), a, c freed; op4
 * rematerialises op1 (100 ns). msps and largest: 1 eviction, 1 remat of
 * 100 ns, iteration 1230 ns. Peak allocated 300 in both. Arena: the
 * largest free block is all that is free, so no failure is
 * fragmentation's. */
static struct wl_workload *graph(void)
{
	struct wl_workload *w = wl_new("dtr5", 1);
	uint32_t wt = T(w, "w", 50, WL_PARAM), a = T(w, "a", 100, WL_ACT),
		 b = T(w, "b", 100, WL_ACT), c = T(w, "c", 100, WL_ACT),
		 d = T(w, "d", 50, WL_ACT), e = T(w, "e", 50, WL_ACT);
	uint32_t in3[] = {a, c}, in4[] = {b, d};
	OPX(w, "op0", WL_FWD, 1000, &wt, 1, &a, 1, NULL, 0);
	OPX(w, "op1", WL_FWD, 100, &wt, 1, &b, 1, NULL, 0);
	OPX(w, "op2", WL_FWD, 10, &wt, 1, &c, 1, NULL, 0);
	OPX(w, "op3", WL_FWD, 10, in3, 2, &d, 1, NULL, 0);
	OPX(w, "op4", WL_FWD, 10, in4, 2, &e, 1, NULL, 0);
	finalize(w);
	return w;
}

static void check(const char *heur, uint64_t evictions, uint64_t remats,
		  sim_time_t remat_ns, sim_time_t iter_ns)
{
	struct wl_workload *w = graph();
	char kv[64];
	snprintf(kv, sizeof kv, "heuristic=%s", heur);
	const char *kvs[] = {kv};
	struct pol pol;
	make_policy(&pol, "dtr", kvs, 1);
	struct st_run st;
	memset(&st, 0, sizeof st);
	assert_int_equal(run_hw(w, &pol, 300, 2, &st, false), 0);
	if (st.oom.hit)
		fail_msg("%s: OOM at %s: %s", heur, st.oom.op, st.oom.reason);
	assert_int_equal(st.n_iter, 2);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(st.iter[i].n_drop, evictions);
		assert_int_equal(st.iter[i].n_recompute, remats);
		assert_int_equal(st.iter[i].recompute, remat_ns);
		assert_int_equal(st.iter[i].time, iter_ns);
	}
	assert_int_equal(st.mem.peak_allocated, 300);
	char *rep = NULL;
	gms_err err;
	assert_int_equal(pol_report_text(&pol, &rep, &err), 0);
	char want[128];
	snprintf(want, sizeof want, "evictions %llu\nremats %llu\n",
		 (unsigned long long)(2 * evictions),
		 (unsigned long long)(2 * remats));
	if (!strstr(rep, want) || !strstr(rep, "fragmentation_failures 0\n") ||
	    !strstr(rep, "stop none\n") || !strstr(rep, "refusals 0\n"))
		fail_msg("%s: report:\n%s", heur, rep);
	free(rep);
	st_run_free(&st);
	pol_destroy(&pol);
	wl_free(w);
}

static void test_heuristics(void **state)
{
	(void)state;
	check("dtr", 2, 2, 1100, 2230);
	check("lru", 2, 2, 1100, 2230);
	check("msps", 1, 1, 100, 1230);
	check("largest", 1, 1, 100, 1230);
}

/* With 250 B under dtr: op2 fails (w,a,b = 250, + c = 350): a is
 * evicted (as above), c fits (250). op3 rematerialises a (1000 ns): w,b,c
 * + a = 350 > 250, b is evicted (c is busy), a fits (250). Then d: 300 >
 * 250, a failure after 1000 ns of remats. With the default remat_limit
 * 1.0 (1130 ns) that is no thrash: nothing is evictable (a and c are
 * op3's inputs), stop oom. With remat_limit 0.5 (565 ns < 1000): stop
 * thrash. Either way the run ends as OOM at op3's d after 2 evictions. */
static void stop_case(const char *limit, const char *want)
{
	struct wl_workload *w = graph();
	const char *kvs[] = {limit};
	struct pol pol;
	make_policy(&pol, "dtr", kvs, 1);
	struct st_run st;
	memset(&st, 0, sizeof st);
	assert_int_equal(run_hw(w, &pol, 250, 1, &st, false), 0);
	assert_true(st.oom.hit);
	assert_string_equal(st.oom.op, "op3");
	assert_string_equal(st.oom.tensor, "d");
	char *rep = NULL;
	gms_err err;
	assert_int_equal(pol_report_text(&pol, &rep, &err), 0);
	if (!strstr(rep, want) || !strstr(rep, "evictions 2\n") ||
	    !strstr(rep, "remats 1\n") || !strstr(rep, "alloc_failures 3\n"))
		fail_msg("%s: report:\n%s", limit, rep);
	free(rep);
	st_run_free(&st);
	pol_destroy(&pol);
	wl_free(w);
}

static void test_stop(void **state)
{
	(void)state;
	stop_case("remat_limit=1.0", "stop oom\n");
	stop_case("remat_limit=0.5", "stop thrash\n");
}

/* The thrash check is made at failed allocations only (the executor has
 * no call to end a run from another hook). At 300 B under dtr
 * (test_heuristics): the failures are op2's c and op3's rematerialised
 * a, both before that remat's 1000 ns are counted (at its kernel); op4's
 * remat of b (100 ns) fits. With remat_limit 0.5 (565 ns) each iteration
 * passes the limit (1100 ns) and no failure follows to stop it: both
 * run, as at the default limit, and the report counts 2 unchecked
 * iterations; at the default (1130 ns) none. */
static void test_unchecked_thrash(void **state)
{
	(void)state;
	const char *cases[][2] = {{"remat_limit=0.5", "unchecked_thrash 2\n"},
				  {"remat_limit=1.0", "unchecked_thrash 0\n"}};
	for (int c = 0; c < 2; c++) {
		struct wl_workload *w = graph();
		const char *kvs[] = {"heuristic=dtr", cases[c][0]};
		struct pol pol;
		make_policy(&pol, "dtr", kvs, 2);
		struct st_run st;
		memset(&st, 0, sizeof st);
		assert_int_equal(run_hw(w, &pol, 300, 2, &st, false), 0);
		assert_false(st.oom.hit);
		assert_int_equal(st.n_iter, 2);
		assert_int_equal(st.iter[1].recompute, 1100);
		char *rep = NULL;
		gms_err err;
		assert_int_equal(pol_report_text(&pol, &rep, &err), 0);
		if (!strstr(rep, cases[c][1]) || !strstr(rep, "stop none\n"))
			fail_msg("%s: report:\n%s", cases[c][0], rep);
		free(rep);
		st_run_free(&st);
		pol_destroy(&pol);
		wl_free(w);
	}
}

static void test_params(void **state)
{
	(void)state;
	/* the parameter table's names are dtr.h's */
	for (int h = 0; h < DTR_H_COUNT; h++) {
		char kv[64];
		snprintf(kv, sizeof kv, "heuristic=%s",
			 dtr_heuristic_name((enum dtr_heuristic)h));
		const char *kvs[] = {kv};
		struct pol pol;
		make_policy(&pol, "dtr", kvs, 1);
		pol_destroy(&pol);
	}
	struct pol pol;
	gms_err err;
	const char *bad[] = {"heuristic=mru"};
	assert_int_equal(pol_create(&pol, "dtr", NULL, NULL, bad, 1, &err),
			 -1);
	assert_non_null(strstr(err.msg, "mru"));
	/* preset serial is for experiments (dtr_full_run_serial): the
	 * executor refuses it at plan, before anything runs */
	const char *ser[] = {"preset=serial"};
	make_policy(&pol, "dtr", ser, 1);
	assert_true(dtr_full_is_serial(&pol));
	struct wl_workload *w = graph();
	struct hw_profile hw;
	hw_test_profile(&hw, 1 << 20);
	struct ex_cfg cfg = {.hw = &hw, .wl = w, .pol = &pol,
			     .allocator = "arena", .iterations = 1};
	struct st_run st;
	memset(&st, 0, sizeof st);
	assert_int_equal(ex_run(&cfg, &st, &err), -1);
	assert_non_null(strstr(err.msg, "preset serial"));
	st_run_free(&st);
	pol_destroy(&pol);
	wl_free(w);
	make_policy(&pol, "dtr", NULL, 0);
	assert_false(dtr_full_is_serial(&pol));
	pol_destroy(&pol);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_heuristics),
		cmocka_unit_test(test_stop),
		cmocka_unit_test(test_unchecked_thrash),
		cmocka_unit_test(test_params),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
