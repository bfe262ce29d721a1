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
#include "wlkit.h"
#include "../policies/dtr.h"
#include "../policies/dtr_full.h"
#include "../workloads/wl_gen.h"

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

/* A `dtr` instance with heuristic heur; verify: the whole scan kept
 * beside the tree (dtr_full_verify). */
static void make_dtr(struct pol *pol, const char *heur, bool verify)
{
	char kv[64];
	snprintf(kv, sizeof kv, "heuristic=%s", heur);
	const char *kvs[] = {kv};
	make_policy(pol, "dtr", kvs, 1);
	if (verify)
		assert_int_equal(dtr_full_verify(pol), 0);
}

static void check(const char *heur, uint64_t evictions, uint64_t remats,
		  sim_time_t remat_ns, sim_time_t iter_ns)
{
	struct wl_workload *w = graph();
	struct pol pol;
	make_dtr(&pol, heur, false);
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
		struct pol pol;
		make_dtr(&pol, dtr_heuristic_name((enum dtr_heuristic)h), false);
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


/* ---- the choice of a victim: the pool's tree against the whole scan ----
 * (policies/dtr_full.c, "The pool"). The tree must choose what simrd's
 * whole scan chooses, a tie to the later tensor of the pool, skipping
 * busy and refused tensors however low their score. */

/* An op of `time` ns reading in, writing out, recomputable or not. */
static void op_rc(struct wl_workload *w, const char *name, sim_time_t time,
		  const uint32_t *in, uint32_t n_in, uint32_t out, bool rc)
{
	gms_err err;
	struct wl_op_desc d = {.name = name, .type = OT_OTHER,
			       .phase = WL_FWD, .in = in, .n_in = n_in,
			       .out = &out, .n_out = 1, .time = time,
			       .flops = (double)time, .recomputable = rc};
	if (wl_add_op(w, &d, &err) == WL_NONE)
		fail_msg("%s", err.msg);
}

/* n ops op0, op1, ... reading wt, op i writing x[i] ("xi", bytes[i])
 * in ns[i] ns; op `fixed` not recomputable (-1: none). */
static void fan(struct wl_workload *w, uint32_t wt, int n,
		const uint64_t *bytes, const sim_time_t *ns, int fixed,
		uint32_t *x)
{
	for (int i = 0; i < n; i++) {
		char name[8];
		snprintf(name, sizeof name, "x%d", i);
		x[i] = T(w, name, bytes[i], WL_ACT);
		snprintf(name, sizeof name, "op%d", i);
		op_rc(w, name, ns[i], &wt, 1, x[i], i != fixed);
	}
}

/* Run w for 2 iterations at budget under `heuristic` with the whole scan
 * kept beside the tree (dtr_full_verify); each iteration must drop once
 * and rematerialise remat_ns; the report must hold `want`. */
static void victim_case(struct wl_workload *w, const char *heuristic,
			uint64_t budget, sim_time_t remat_ns, const char *want)
{
	struct pol pol;
	make_dtr(&pol, heuristic, true);
	struct st_run st;
	memset(&st, 0, sizeof st);
	assert_int_equal(run_hw(w, &pol, budget, 2, &st, false), 0);
	if (st.oom.hit)
		fail_msg("%s: OOM at %s: %s", heuristic, st.oom.op,
			 st.oom.reason);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(st.iter[i].n_drop, 1);
		assert_int_equal(st.iter[i].recompute, remat_ns);
	}
	struct dtr_full_counts c;
	dtr_full_counts(&pol, &c);
	assert_int_equal(c.mismatches, 0);
	char *rep = NULL;
	gms_err err;
	assert_int_equal(pol_report_text(&pol, &rep, &err), 0);
	if (!strstr(rep, want))
		fail_msg("%s: want \"%s\" in the report:\n%s", heuristic, want,
			 rep);
	free(rep);
	st_run_free(&st);
	pol_destroy(&pol);
}

/* A tie across the tree. w 50 B (persistent); op0..op4 read w and write
 * x0..x4 of 100, 60, 100, 60, 80 B in 1000, 1, 200, 1, 1 ns; op5 reads
 * w, writes z (100 B, read by nobody: freed at once); op6 reads x0..x4,
 * writes y (10 B). Budget 500 B.
 * op5's z: 50 + 400 + 100 = 550 > 500, a failure. Candidates x0..x4
 * (op5 reads only w). largest scores 1 / bytes: 1/100 for x0 and x2, more
 * for the others: a tie, which simrd gives to the later in the pool, x2
 * (positions in write order: x0 0, x1 1, x2 2, ...; x0 and x2 sit under
 * different nodes of the tree, both of bound 1/100). Dropping x2 leaves
 * 350; z fits (450) and is freed. op6 rematerialises x2 (op2, 200 ns):
 * 350 + 100 = 450, y 460 <= 500. So one drop and 200 ns of remat per
 * iteration; x0 would have cost 1000 ns. */
static void test_tie_later(void **state)
{
	(void)state;
	struct wl_workload *w = wl_new("tie", 1);
	uint32_t wt = T(w, "w", 50, WL_PARAM), x[5], z, y;
	const uint64_t bytes[5] = {100, 60, 100, 60, 80};
	const sim_time_t ns[5] = {1000, 1, 200, 1, 1};
	fan(w, wt, 5, bytes, ns, -1, x);
	z = T(w, "z", 100, WL_ACT);
	y = T(w, "y", 10, WL_ACT);
	op_rc(w, "op5", 1, &wt, 1, z, true);
	op_rc(w, "op6", 1, x, 5, y, true);
	finalize(w);
	victim_case(w, "largest", 500, 200, "refusals 0\n");
	wl_free(w);
}

/* The true argmin busy, the next refused. w 50 B; op0..op3 read w and
 * write x0..x3 of 100, 90, 80, 60 B in 1000, 100, 30, 7 ns; op1 is not
 * recomputable. op4 reads x0, writes z (100 B, freed at once); op5 reads
 * x0..x3, writes y (10 B). Budget 430 B.
 * op4's z: 50 + 330 + 100 = 480 > 430, a failure. largest: x0 (1/100) is
 * the least but op4 reads it (busy); x1 (1/90) next, but ex_drop refuses
 * it (op1 is not recomputable): a refusal, and a second scan without it;
 * x2 (1/80) then, dropped: 400 <= 430. op5 rematerialises x2 (op2, 30
 * ns): 300 + 80 = 380, y 390. Per iteration one drop, one refusal and 30
 * ns of remat (x0 would have been 1000). */
static void test_busy_refused(void **state)
{
	(void)state;
	struct wl_workload *w = wl_new("skip", 1);
	uint32_t wt = T(w, "w", 50, WL_PARAM), x[4], z, y;
	const uint64_t bytes[4] = {100, 90, 80, 60};
	const sim_time_t ns[4] = {1000, 100, 30, 7};
	fan(w, wt, 4, bytes, ns, 1, x);
	z = T(w, "z", 100, WL_ACT);
	y = T(w, "y", 10, WL_ACT);
	op_rc(w, "op4", 1, &x[0], 1, z, true);
	op_rc(w, "op5", 1, x, 4, y, true);
	finalize(w);
	victim_case(w, "largest", 430, 30,
		    "refusals 2 first: drop x1: producer op1 is not "
		    "recomputable\n");
	wl_free(w);
}

/* The chain of `gpumemsim-bench scale` (sim/bench/bench_main.c): n
 * layers, a_i = fwd_i(a_i-1, w_i), then g_i-1, gw_i = bwd_i(g_i (a_n for
 * the last), a_i-1, w_i); activations 96 B, weights 12 B. */
static struct wl_workload *chain(int n)
{
	struct wl_workload *w = wl_new("chain", 1);
	uint32_t *a = calloc((size_t)n + 1, sizeof *a),
		 *g = calloc((size_t)n + 1, sizeof *g),
		 *wt = calloc((size_t)n + 1, sizeof *wt),
		 *gw = calloc((size_t)n + 1, sizeof *gw);
	assert_non_null(a && g && wt && gw);
	char name[32];
	a[0] = T(w, "x", 96, WL_INPUT);
	for (int i = 1; i <= n; i++) {
		snprintf(name, sizeof name, "a%d", i);
		a[i] = T(w, name, 96, WL_ACT);
		snprintf(name, sizeof name, "w%d", i);
		wt[i] = T(w, name, 12, WL_PARAM);
		snprintf(name, sizeof name, "gw%d", i);
		gw[i] = T(w, name, 12, WL_PARAM_GRAD);
		snprintf(name, sizeof name, "g%d", i - 1);
		g[i - 1] = T(w, name, 96, WL_ACT_GRAD);
	}
	for (int i = 1; i <= n; i++) {
		uint32_t in[2] = {a[i - 1], wt[i]};
		snprintf(name, sizeof name, "fwd%d", i);
		OPX(w, name, WL_FWD, 10, in, 2, &a[i], 1, NULL, 0);
	}
	for (int i = n; i >= 1; i--) {
		uint32_t in[3] = {i == n ? a[i] : g[i], a[i - 1], wt[i]};
		uint32_t out[2] = {g[i - 1], gw[i]};
		snprintf(name, sizeof name, "bwd%d", i);
		OPX(w, name, WL_BWD, 20, in, 3, out, 2, NULL, 0);
	}
	finalize(w);
	free(a);
	free(g);
	free(wt);
	free(gw);
	return w;
}

/* Every heuristic, the tree against the whole scan at every choice: the
 * same victim and the same resident tensors listed in the same order
 * (dtr_full_verify), on the chain at half its activations and on
 * ResNet-50 and BERT-base at budgets where they evict and ex_drop refuses
 * (a gradient's producer is not recomputable). On the chain the tree must
 * score under a tenth of the tensors the scan scores: each failure finds
 * about half the chain resident (the scan scores all of it), the tree
 * about the few near the least bound. */
static void verify_run(struct wl_workload *w, const struct hw_profile *hw,
		       const char *alloc, uint64_t budget, bool pruned)
{
	for (int h = 0; h < DTR_H_COUNT; h++) {
		const char *heur = dtr_heuristic_name((enum dtr_heuristic)h);
		struct pol pol;
		make_dtr(&pol, heur, true);
		struct st_run st;
		memset(&st, 0, sizeof st);
		assert_int_equal(run_on(w, &pol, hw, alloc, budget, 0, 2, &st),
				 0);
		struct dtr_full_counts c;
		dtr_full_counts(&pol, &c);
		if (c.mismatches || !c.searches ||
		    (pruned && c.scored * 10 > c.scan_scored))
			fail_msg("%s %s: %llu differences, %llu searches "
				 "scoring %llu, the scan %llu",
				 w->name, heur,
				 (unsigned long long)c.mismatches,
				 (unsigned long long)c.searches,
				 (unsigned long long)c.scored,
				 (unsigned long long)c.scan_scored);
		st_run_free(&st);
		pol_destroy(&pol);
	}
}

static void test_tree_is_scan(void **state)
{
	(void)state;
	struct hw_profile hw;
	hw_test_profile(&hw, 1 << 20);
	struct wl_workload *w = chain(400);
	/* the activations (400 x 96) and weights with their gradients
	 * (800 x 12): half of that */
	verify_run(w, &hw, "arena", (400 * 96 + 800 * 12) / 2, true);
	wl_free(w);
	gms_err err;
	assert_int_equal(hw_load(&hw, "V100-16GB", &err), 0);
	w = gen_build_ok("resnet50", 64, 0, WL_FW_TF_GRAPH, WL_OPTIM_MOMENTUM);
	verify_run(w, &hw, "bfc", 2ull << 30, false);
	wl_free(w);
	w = gen_build_ok("bert_base", 32, 0, WL_FW_TF_GRAPH, WL_OPTIM_MOMENTUM);
	verify_run(w, &hw, "bfc", 2ull << 30, false);
	wl_free(w);
}

/* The trace memo (issue 37): a log is parsed once per memo, however many
 * points ask for it, and a serial replay from the memo is the replay of
 * a log loaded for it alone (same report, same numbers); a log that
 * cannot be read is an error every time, not kept. */
static void test_trace_memo(void **state)
{
	(void)state;
	const char *log = "tests/fixtures/dtr/mini-4-all.log";
	const char *ser[] = {"preset=serial"};
	struct pol pol;
	make_policy(&pol, "dtr", ser, 1);
	struct dtr_trace_memo *m = dtr_trace_memo_new();
	assert_non_null(m);
	gms_err err = {{0}};
	uint64_t b0 = 0, b1 = 0, u0 = 0, u1 = 0;
	assert_int_equal(dtr_full_fraction_budget(&pol, NULL, log, 0.5, &b0,
						  &err), 1);
	assert_int_equal(dtr_full_fraction_budget(&pol, m, log, 0.5, &b1,
						  &err), 1);
	assert_true(b0 == b1 && b0 > 0);
	struct st_run s0, s1;
	memset(&s0, 0, sizeof s0);
	memset(&s1, 0, sizeof s1);
	if (dtr_full_run_serial(&pol, NULL, log, 0.5, 0, 1, &s0, &u0, &err) < 0 ||
	    dtr_full_run_serial(&pol, m, log, 0.5, 0, 1, &s1, &u1, &err) < 0)
		fail_msg("%s", err.msg);
	assert_true(u0 == u1);
	assert_string_equal(s0.pol_report, s1.pol_report);
	assert_true(s0.steady.time == s1.steady.time);
	assert_true(s0.mem.peak_allocated == s1.mem.peak_allocated);
	size_t loads, hits;
	dtr_trace_memo_counts(m, &loads, &hits);
	assert_int_equal(loads, 1);
	assert_int_equal(hits, 1);
	assert_int_equal(dtr_full_fraction_budget(&pol, m, "tests/fixtures/"
							   "dtr/absent.log",
						  0.5, &b1, &err), -1);
	assert_int_equal(dtr_full_fraction_budget(&pol, m, "tests/fixtures/"
							   "dtr/absent.log",
						  0.5, &b1, &err), -1);
	dtr_trace_memo_counts(m, &loads, &hits);
	assert_int_equal(loads, 1);
	assert_int_equal(hits, 1);
	st_run_free(&s0);
	st_run_free(&s1);
	dtr_trace_memo_free(m);
	pol_destroy(&pol);
}

/* The plan step's hand-over (issue 37): a baseline put by path answers a
 * budget fraction without reading the log -- peak 1000 bytes put by
 * hand, fraction 0.5: int(1000 x 0.5) = 500 bytes, 0 logs read -- and a
 * replay, which needs the log, reads it once and refuses it when its
 * baseline is not the one put; with the log's own baseline put, the
 * replay runs, and the log is read once. */
static void test_trace_memo_put(void **state)
{
	(void)state;
	const char *log = "tests/fixtures/dtr/mini-4-all.log";
	const char *ser[] = {"preset=serial"};
	struct pol pol;
	make_policy(&pol, "dtr", ser, 1);
	struct dtr_trace_memo *m = dtr_trace_memo_new();
	assert_non_null(m);
	gms_err err = {{0}};
	struct dtr_baseline b = {.peak_bytes = 1000, .compute_ns = 1};
	assert_int_equal(dtr_trace_memo_put(m, log, &b), 0);
	uint64_t budget = 0, used;
	assert_int_equal(dtr_full_fraction_budget(&pol, m, log, 0.5, &budget,
						  &err), 1);
	assert_int_equal(budget, 500);
	size_t loads, hits;
	dtr_trace_memo_counts(m, &loads, &hits);
	assert_int_equal(loads, 0);
	struct st_run st;
	memset(&st, 0, sizeof st);
	assert_int_equal(dtr_full_run_serial(&pol, m, log, 0.5, 0, 1, &st,
					     &used, &err), -1);
	assert_non_null(strstr(err.msg, "not the one given for it"));
	dtr_trace_memo_free(m);
	/* the log's own baseline */
	struct dtr_trace *tr;
	assert_int_equal(dtr_trace_load(log, &tr, &err), 0);
	dtr_baseline(tr, &b);
	dtr_trace_free(tr);
	assert_non_null(m = dtr_trace_memo_new());
	assert_int_equal(dtr_trace_memo_put(m, log, &b), 0);
	if (dtr_full_run_serial(&pol, m, log, 0.5, 0, 1, &st, &used, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(used, dtr_budget_for_ratio(&b, 0.5));
	dtr_trace_memo_counts(m, &loads, &hits);
	assert_int_equal(loads, 1);
	st_run_free(&st);
	dtr_trace_memo_free(m);
	pol_destroy(&pol);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_heuristics),
		cmocka_unit_test(test_trace_memo),
		cmocka_unit_test(test_trace_memo_put),
		cmocka_unit_test(test_stop),
		cmocka_unit_test(test_unchecked_thrash),
		cmocka_unit_test(test_params),
		cmocka_unit_test(test_tie_later),
		cmocka_unit_test(test_busy_refused),
		cmocka_unit_test(test_tree_is_scan),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
