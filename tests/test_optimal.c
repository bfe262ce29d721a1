/*
 * test_optimal.c - the optimal policy (policies/optimal.c) and its MILP
 * (policies/optimal_milp.c) on graphs small enough to solve by hand.
 *
 * Runs use hw_test_profile (a copy of b bytes takes b ns on its engine;
 * kernels take their explicit time, no launch cost) and the `arena`
 * allocator (memory figures are plain sums), one iteration.
 *
 * The graph G (x is the input batch, 100 B: it may be swapped too, but
 * moving it never frees room for a, so it is counted as resident below):
 *
 *   op   reads   writes       time
 *   f0   x       a (1000 B)   t0
 *   f1   a       b (1000 B)   t1
 *   f2   b       c (1000 B)   3000
 *   f3   c       d (100 B)    3000
 *   g    d, a, x e (100 B)    100
 *
 * a is read by f1 and again by g, the last op (which reads the batch x
 * too, as a loss reads the labels: x stays until g, so f0 can be re-run
 * there; the executor cannot regenerate a freed batch). Framework memory per
 * stage (x + what is live): f0 1100, f1 2100, f2 3100 (x, a, b, c),
 * f3 2200, g 1300. With a budget of 2200, a cannot stay on the device
 * through f2: stage f2 holds x + b + c = 2100 and nothing of 1000 B more.
 * The ways out:
 *   - swap a out: the copy can start no earlier than stage f1 (a must be
 *     resident in the stage it is copied in, and stage f2 has no room),
 *     so it takes 1000 ns beside f1's t1 ns: a stall of max(0, 1000 -
 *     t1); a comes back in stage f3 (x + c + d + a = 2200 fits; stage f2
 *     does not), its 1000 ns hidden under f3's 3000 ns;
 *   - drop a after f1 and re-run f0 (t0 ns) in stage g (x + d + e + a =
 *     1300 fits).
 * Compute alone is t0 + t1 + 6100.
 */
#include <dlfcn.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../policies/optimal.h"
#include "../policies/optimal_blocks.h"
#include "clikit.h"
#include "testkit.h"

static struct wl_workload *graph_g(sim_time_t t0, sim_time_t t1)
{
	struct wl_workload *w = wl_new("g", 1);
	uint32_t x = T(w, "x", 100, WL_INPUT), a = T(w, "a", 1000, WL_ACT),
		 b = T(w, "b", 1000, WL_ACT), c = T(w, "c", 1000, WL_ACT),
		 d = T(w, "d", 100, WL_ACT), e = T(w, "e", 100, WL_ACT_GRAD);
	OPX(w, "f0", WL_FWD, t0, &x, 1, &a, 1, NULL, 0);
	OPX(w, "f1", WL_FWD, t1, &a, 1, &b, 1, NULL, 0);
	OPX(w, "f2", WL_FWD, 3000, &b, 1, &c, 1, NULL, 0);
	OPX(w, "f3", WL_FWD, 3000, &c, 1, &d, 1, NULL, 0);
	uint32_t dax[3] = {d, a, x};
	OPX(w, "g", WL_BWD, 100, dax, 3, &e, 1, NULL, 0);
	finalize(w);
	return w;
}

/* Run w under optimal with settings kv and budget; the report in *rep
 * (caller frees), the run in *st. Returns ex_run's code; err filled. */
static int run_opt_memo(const struct wl_workload *w, const char *const *kv,
			size_t n, uint64_t budget, struct opt_memo *memo,
			struct st_run *st, char **rep, gms_err *err)
{
	struct pol pol;
	make_policy(&pol, "optimal", kv, n);
	optimal_share_memo(&pol, memo);
	struct hw_profile hw;
	hw_test_profile(&hw, 1 << 20);
	struct ex_cfg cfg = {.hw = &hw, .wl = w, .pol = &pol,
			     .allocator = "arena", .budget = budget,
			     .iterations = 1, .warmup = 0};
	memset(st, 0, sizeof *st);
	int rc = ex_run(&cfg, st, err);
	*rep = NULL;
	gms_err e2;
	assert_int_equal(pol_report_text(&pol, rep, &e2), 0);
	pol_destroy(&pol);
	return rc;
}

static int run_opt(const struct wl_workload *w, const char *const *kv,
		   size_t n, uint64_t budget, struct st_run *st, char **rep,
		   gms_err *err)
{
	return run_opt_memo(w, kv, n, budget, NULL, st, rep, err);
}

/* The report's value for `key` (a number after it). */
static double rep_num(const char *rep, const char *key)
{
	const char *k = strstr(rep, key);
	if (!k)
		fail_msg("report lacks '%s':\n%s", key, rep);
	return strtod(k + strlen(key), NULL);
}

/* Does the report's line starting with `stage` list tensor `t` after
 * `what` (a comma-separated list)? */
static bool stage_lists(const char *rep, const char *stage, const char *what,
			const char *t)
{
	const char *l = strstr(rep, stage);
	if (!l)
		return false;
	const char *end = strchr(l, '\n');
	const char *w = strstr(l, what);
	if (!w || (end && w > end))
		return false;
	w += strlen(what) + 1;
	size_t n = strlen(t);
	for (;;) {
		if (strncmp(w, t, n) == 0 && (w[n] == ',' || w[n] == ' '))
			return true;
		const char *c = strchr(w, ',');
		const char *sp = strchr(w, ' ');
		if (!c || (sp && sp < c))
			return false;
		w = c + 1;
	}
}

/* Solve and replay; the optimum must be `want` ns, proven, and the
 * simulated iteration take exactly as long and fit, with no departure
 * from the schedule. */
static void expect_opt(const struct wl_workload *w, const char *const *kv,
		   size_t n, uint64_t budget, double want)
{
	struct st_run st;
	char *rep;
	gms_err err = {{0}};
	int rc = run_opt(w, kv, n, budget, &st, &rep, &err);
	if (rc != 0 || st.oom.hit)
		fail_msg("rc %d oom %d: %s %s\n%s", rc, st.oom.hit, err.msg,
			 st.oom.reason, rep ? rep : "");
	if (!strstr(rep, "cbc, optimal"))
		fail_msg("not proven optimal:\n%s", rep);
	if (rep_num(rep, "objective") != want)
		fail_msg("objective %.0f, want %.0f\n%s",
			 rep_num(rep, "objective"), want, rep);
	/* the LP relaxation is a bound: never above the optimum, and at
	 * least the compute every schedule runs (a number, not "not
	 * reached") */
	double lp = rep_num(rep, "lp bound");
	assert_true(lp <= want + 1e-6);
	assert_true(lp > 0);
	/* the global bound (the relaxation whose copies span stages): on
	 * these graphs no copy can span a stage to any gain, and each hand
	 * derivation holds for every schedule, so it is the optimum */
	if (!strstr(rep, "relaxation optimal") ||
	    rep_num(rep, "global bound") != want)
		fail_msg("global bound %.0f, want %.0f\n%s",
			 rep_num(rep, "global bound"), want, rep);
	assert_int_equal(st.n_iter, 1);
	if ((double)st.iter[0].time != want)
		fail_msg("simulated %lld ns, solver %.0f\n%s",
			 (long long)st.iter[0].time, want, rep);
	assert_true(st.mem.peak_requested <= budget);
	assert_non_null(strstr(rep, "0 swap-in, 0 swap-out, 0 drop, 0 "
				    "recompute refused"));
	free(rep);
	st_run_free(&st);
}

/* Swapping only: a goes out beside f1 (stall 1000 - 100 = 900) and
 * comes back beside f3: 6300 + 900. */
static void test_swap_only(void **state)
{
	(void)state;
	struct wl_workload *w = graph_g(100, 100);
	const char *kv[] = {"remat=false"};
	expect_opt(w, kv, 1, 2200, 6300 + 900);
	wl_free(w);
}

/* Recomputation only (Checkmate's problem, swap=false): drop a after f1,
 * re-run f0 (100 ns) in stage g: 6300 + 100. Checkmate on the same graph
 * and costs: the only choice is which stage re-runs f0, and g is the only
 * one where a is read after f2; so 6400 is its optimum too. */
static void test_recompute_only(void **state)
{
	(void)state;
	struct wl_workload *w = graph_g(100, 100);
	const char *kv[] = {"swap=false"};
	expect_opt(w, kv, 1, 2200, 6300 + 100);
	wl_free(w);
}

/* Both allowed, the link too slow for f1: recomputing f0 (100 ns) beats
 * the swap's 900 ns stall. */
static void test_both_recompute_wins(void **state)
{
	(void)state;
	struct wl_workload *w = graph_g(100, 100);
	expect_opt(w, NULL, 0, 2200, 6400);
	wl_free(w);
}

/* Both allowed, f0 costly (500 ns) and f1 long (3000 ns): the swap-out
 * hides under f1 and the swap-in under f3, so the optimum is compute
 * alone, 500 + 3000 + 6100 = 9600, where recomputing would add 500. The
 * swap-in overlaps compute. */
static void test_both_swap_overlaps(void **state)
{
	(void)state;
	struct wl_workload *w = graph_g(500, 3000);
	const char *kv[] = {"schedule=true"};
	struct st_run st;
	char *rep;
	gms_err err = {{0}};
	assert_int_equal(run_opt(w, kv, 1, 2200, &st, &rep, &err), 0);
	/* a goes out beside f1 and comes back beside f3 (x, 100 B, may
	 * move as well at no cost: the optimum is unique in time, not in
	 * x's moves) */
	if (!stage_lists(rep, "stage 1 f1:", "swap-out", "a") ||
	    !stage_lists(rep, "stage 1 f1:", "release", "a") ||
	    !stage_lists(rep, "stage 3 f3:", "swap-in", "a"))
		fail_msg("schedule:\n%s", rep);
	free(rep);
	st_run_free(&st);
	expect_opt(w, NULL, 0, 2200, 9600);
	/* without the budget pressure, nothing moves: compute alone */
	expect_opt(w, NULL, 0, 3100, 9600);
	wl_free(w);
}

/* A budget below one op's own working set: a clear error naming it. */
static void test_infeasible_names_op(void **state)
{
	(void)state;
	struct wl_workload *w = graph_g(100, 100);
	struct st_run st;
	char *rep;
	gms_err err = {{0}};
	/* f1 needs a + b = 2000 (f2 as much, later; x can go to the host) */
	int rc = run_opt(w, NULL, 0, 1900, &st, &rep, &err);
	assert_int_not_equal(rc, 0);
	if (!strstr(err.msg, "infeasible: op 'f1' needs 2000 bytes"))
		fail_msg("message: %s", err.msg);
	free(rep);
	st_run_free(&st);
	wl_free(w);
}

/* Recomputation because the link is busy. f0 (50 ns, no inputs: a
 * constant-like source) -> a1 (1000 B); f1 (1000 ns) a1 -> a2 (1000 B);
 * f2 (3000 ns) a2 -> b (1500 B); m (3000 ns) b -> c (100 B); n (1000 ns)
 * c -> d (100 B); g (100 ns) reads d, a1, a2 -> e (100 B). Budget 2500:
 * stage f2 holds a2 + b = 2500, so a1 leaves in stage f1 (its copy,
 * 1000 ns, hidden under f1); stage m holds b + c = 1600 and no 1000 B
 * more, so a2 leaves too (copied beside f2). Both are needed by g, and
 * the only stage they can come back in is n (c + d + a1 + a2 = 2200): two
 * copies, 2000 ns on the one H2D engine beside n's 1000 ns, stall 1000.
 * With recomputation: a2 comes back under n alone and f0 is re-run
 * (50 ns) for a1; re-running f1 instead would cost 1000. Compute is
 * 50 + 1000 + 3000 + 3000 + 1000 + 100 = 8150. */
static void test_recompute_when_link_busy(void **state)
{
	(void)state;
	struct wl_workload *w = wl_new("busy", 1);
	uint32_t a1 = T(w, "a1", 1000, WL_ACT), a2 = T(w, "a2", 1000, WL_ACT),
		 b = T(w, "b", 1500, WL_ACT), c = T(w, "c", 100, WL_ACT),
		 d = T(w, "d", 100, WL_ACT), e = T(w, "e", 100, WL_ACT_GRAD);
	OPX(w, "f0", WL_FWD, 50, NULL, 0, &a1, 1, NULL, 0);
	OPX(w, "f1", WL_FWD, 1000, &a1, 1, &a2, 1, NULL, 0);
	OPX(w, "f2", WL_FWD, 3000, &a2, 1, &b, 1, NULL, 0);
	OPX(w, "m", WL_FWD, 3000, &b, 1, &c, 1, NULL, 0);
	OPX(w, "n", WL_FWD, 1000, &c, 1, &d, 1, NULL, 0);
	uint32_t in[3] = {d, a1, a2};
	OPX(w, "g", WL_BWD, 100, in, 3, &e, 1, NULL, 0);
	finalize(w);
	const char *kv[] = {"remat=false"};
	expect_opt(w, kv, 1, 2500, 8150 + 1000);
	const char *sk[] = {"schedule=true"};
	expect_opt(w, sk, 1, 2500, 8150 + 50);
	wl_free(w);
}

/* An in-place op (a ReLU) whose output takes over its input's block, as
 * the executor does when the op is the input's last reader: x (100 B)
 * -> f0 -> a (1000 B) -> relu, in place -> r (1000 B) -> f2 -> y (100
 * B), 100 ns each. Stage relu holds one 1000 B block, not two, so a
 * budget of 1100 B (stage f0: x + a) runs everything as it is: 300 ns.
 * Counting a and r apart, relu would need 2000 B: infeasible. */
static void test_inplace_counted_once(void **state)
{
	(void)state;
	struct wl_workload *w = wl_new("inplace", 1);
	uint32_t x = T(w, "x", 100, WL_INPUT), a = T(w, "a", 1000, WL_ACT),
		 r = T(w, "r", 1000, WL_ACT), y = T(w, "y", 100, WL_ACT);
	OPX(w, "f0", WL_FWD, 100, &x, 1, &a, 1, NULL, 0);
	gms_err err;
	struct wl_op_desc d = {.name = "relu", .type = OT_RELU,
			       .phase = WL_FWD, .in = &a, .n_in = 1,
			       .out = &r, .n_out = 1, .time = 100,
			       .flops = 100, .recomputable = true,
			       .inplace = true};
	assert_int_not_equal(wl_add_op(w, &d, &err), WL_NONE);
	OPX(w, "f2", WL_FWD, 100, &r, 1, &y, 1, NULL, 0);
	finalize(w);
	expect_opt(w, NULL, 0, 1100, 300);
	wl_free(w);
}

/* The command: a budget below conv1's working set in tiny-cnn (batch 32,
 * the file's own sizes): conv1 writes c1, 16x32x32 fp32 x 32 = 2097152 B,
 * with no workspace on its least-workspace algorithm, beside its input x
 * (3x32x32 fp32 x 32 = 393216 B) and the fixed tensors: weights 102312
 * (1792 + 18560 + 81960) + their momentum 102312 = 204624 B; so 2694992
 * B. Exit 1, the op named.
 * Above the framework's peak the schedule replays to the ns. */
static void test_cli(void **state)
{
	(void)state;
	expect("optimal workloads/examples/tiny-cnn.yaml --budget 2000000", 1,
	       "infeasible: op 'conv1' needs 2694992 bytes");
	expect("optimal workloads/examples/tiny-cnn.yaml --budget 8MiB "
	       "--node-limit 100",
	       0, "(+0.0000% of the objective)");
	/* bad limits: the key and the range named, exit 2 */
	expect("optimal workloads/examples/tiny-cnn.yaml --budget 8MiB "
	       "--node-limit -1",
	       2, "key 'node_limit': -1 is out of range");
	expect("optimal workloads/examples/tiny-cnn.yaml --budget 8MiB "
	       "--set search=fast",
	       2, "key 'search': 'fast' is not one of: auto, full, lp");
	expect("optimal workloads/examples/tiny-cnn.yaml --budget 8MiB "
	       "--policy framework",
	       2, "--policy is optimal's own");
}

/* Where the restricted MILP's optimum `want` (proven, replayed to the
 * ns) and the global bound `bound` (the relaxation proven optimal) part:
 * a schedule outside the restricted class is faster. */
static void expect_split(const struct wl_workload *w, uint64_t budget,
			 double want, double bound)
{
	struct st_run st;
	char *rep;
	gms_err err = {{0}};
	assert_int_equal(run_opt(w, NULL, 0, budget, &st, &rep, &err), 0);
	if (!strstr(rep, "cbc, optimal") || rep_num(rep, "objective") != want ||
	    !strstr(rep, "relaxation optimal") ||
	    rep_num(rep, "global bound") != bound)
		fail_msg("want objective %.0f, global bound %.0f:\n%s", want,
			 bound, rep);
	assert_int_equal(st.iter[0].time, (sim_time_t)want);
	free(rep);
	st_run_free(&st);
}

/* A copy that spans two ops. x (100 B, the batch) -> f0 (1000 ns) -> a
 * (1000 B); f1 (600 ns) a -> b (100 B); f2 (600 ns) b -> c (100 B); f3
 * (600 ns) c -> d (2000 B); f4 (2000 ns) d -> d2 (100 B); f5 (2000 ns)
 * d2 -> d3 (100 B); g (100 ns) reads d3, a, x -> e (100 B). Budget 2300:
 * f3 holds x + c + d = 2200, so a (1000 B) must be gone when f3 starts;
 * it can come back under f5 (x + d2 + d3 + a = 1300) for g. Compute
 * alone is 1000 + 3 x 600 + 2 x 2000 + 100 = 6900.
 *   - The executor can copy a out from the end of f0 through f1 and f2
 *     (1200 ns for its 1000 ns copy) and back under f5 (2000 ns): no
 *     stall, 6900 ns, which is therefore the global bound (nothing runs
 *     faster than compute alone).
 *   - The restricted MILP (a copy starts and ends in one stage) copies a
 *     out beside f1 or f2 alone, 600 ns: a stall of 400 ns, cheaper than
 *     re-running f0 (1000 ns) for g; its optimum is 7300 ns, and the
 *     replay takes exactly that. */
static void test_copy_spans_two_ops(void **state)
{
	(void)state;
	struct wl_workload *w = wl_new("span", 1);
	uint32_t x = T(w, "x", 100, WL_INPUT), a = T(w, "a", 1000, WL_ACT),
		 b = T(w, "b", 100, WL_ACT), c = T(w, "c", 100, WL_ACT),
		 d = T(w, "d", 2000, WL_ACT), d2 = T(w, "d2", 100, WL_ACT),
		 d3 = T(w, "d3", 100, WL_ACT),
		 e = T(w, "e", 100, WL_ACT_GRAD);
	OPX(w, "f0", WL_FWD, 1000, &x, 1, &a, 1, NULL, 0);
	OPX(w, "f1", WL_FWD, 600, &a, 1, &b, 1, NULL, 0);
	OPX(w, "f2", WL_FWD, 600, &b, 1, &c, 1, NULL, 0);
	OPX(w, "f3", WL_FWD, 600, &c, 1, &d, 1, NULL, 0);
	OPX(w, "f4", WL_FWD, 2000, &d, 1, &d2, 1, NULL, 0);
	OPX(w, "f5", WL_FWD, 2000, &d2, 1, &d3, 1, NULL, 0);
	uint32_t in[3] = {d3, a, x};
	OPX(w, "g", WL_BWD, 100, in, 3, &e, 1, NULL, 0);
	finalize(w);
	expect_split(w, 2300, 7300, 6900);
	wl_free(w);
}

/* The algorithm of an op's own run is a choice of the bound (B12): its
 * fastest algorithm only where its workspace fits with what must stay.
 * x (100 B, the batch) -> f0 (100 ns) -> a (1000 B); f0b (100 ns) a -> c
 * (1000 B); f1 c -> b (100 B), base 100 ns, algorithms fast (workspace
 * 1000 B, x1) and slow (no workspace, x5: 500 ns); g (100 ns) reads b, a,
 * x. Budget 2200. With a, x, c, b resident f1 has 2200 B and no room for
 * the fast algorithm's 1000 B; alone (c + b + 1000 = 2100) it fits. So
 * either f1 runs slow, 800 ns in all, or a leaves before f1: dropped and
 * f0 re-run for g (100 ns: 500 in all), or copied out in the 100 ns of
 * f0b (a 900 ns stall). The bound is 500 (taking the fast algorithm's
 * time with the slow one's workspace it would be 400); the restricted
 * MILP keeps the algorithm the framework's live set allows, slow, 800. */
static void test_bound_algorithm_choice(void **state)
{
	(void)state;
	struct wl_workload *w = wl_new("algo", 1);
	uint32_t x = T(w, "x", 100, WL_INPUT), a = T(w, "a", 1000, WL_ACT),
		 c = T(w, "c", 1000, WL_ACT), b = T(w, "b", 100, WL_ACT),
		 e = T(w, "e", 100, WL_ACT_GRAD);
	static const struct wl_algo al[2] = {
		{.name = "fast", .workspace = 1000, .time_scale = 1.0},
		{.name = "slow", .workspace = 0, .time_scale = 5.0}};
	OPX(w, "f0", WL_FWD, 100, &x, 1, &a, 1, NULL, 0);
	OPX(w, "f0b", WL_FWD, 100, &a, 1, &c, 1, NULL, 0);
	OPX(w, "f1", WL_FWD, 100, &c, 1, &b, 1, al, 2);
	uint32_t in[3] = {b, a, x};
	OPX(w, "g", WL_BWD, 100, in, 3, &e, 1, NULL, 0);
	finalize(w);
	expect_split(w, 2200, 800, 500);
	wl_free(w);
}

/* The iteration time (ns) `gpumemsim simulate` reports for policy `pol`
 * on chain-mlp at `budget`, or -1 when the run does not fit. */
static double chain_time(const char *pol, uint64_t budget)
{
	char args[512], *out;
	snprintf(args, sizeof args,
		 "simulate workloads/examples/chain-mlp.yaml --hw V100-16GB "
		 "--allocator arena --iterations 2 --warmup 1 --policy %s "
		 "--budget %llu",
		 pol, (unsigned long long)budget);
	int rc = sh(args, &out);
	const char *k = strstr(out, "iteration time");
	double t = rc == 0 && k ? 1e6 * strtod(k + 15, NULL) : -1;
	free(out);
	return t;
}

/* chain-mlp (19 ops; framework peak 48 MiB on arena). At 90% capuchin
 * ran 3% under the restricted MILP's "optimum" (its copies span several
 * ops) and at 40% the MILP was infeasible while capuchin and ondemand
 * ran: neither can happen against a lower bound. The bound is whatever
 * CBC reached in 200 nodes, so only the inequalities are checked
 * (the times are printed in ms, to 0.5 us). */
static void test_chain_mlp_bound(void **state)
{
	(void)state;
	static const char *const pols[] = {"capuchin", "dtr", "vdnnpp",
					   "checkpoint", "accudnn",
					   "ondemand"};
	for (int k = 0; k < 2; k++) {
		uint64_t budget = k ? 50331648ull * 4 / 10
				    : 50331648ull * 9 / 10;
		char args[512], *out;
		snprintf(args, sizeof args,
			 "optimal workloads/examples/chain-mlp.yaml --hw "
			 "V100-16GB --budget %llu --node-limit 200",
			 (unsigned long long)budget);
		int rc = sh(args, &out);
		const char *g = strstr(out, "global bound");
		if (!g || strstr(out, "relaxation infeasible") ||
		    strstr(out, "relaxation is proven infeasible"))
			fail_msg("no global bound:\n%s", out);
		double bound = strtod(g + 13, NULL);
		/* 40%: no replayable schedule, but a bound (exit 1) */
		assert_int_equal(rc, k ? 1 : 0);
		if (!k && rep_num(out, "objective") < bound)
			fail_msg("objective below the bound:\n%s", out);
		free(out);
		assert_true(bound > 0);
		int ran = 0;
		for (size_t p = 0; p < sizeof pols / sizeof *pols; p++) {
			double t = chain_time(pols[p], budget);
			if (t < 0)
				continue;
			ran++;
			if (t < bound - 500)
				fail_msg("%s at %llu B: %.0f ns under the "
					 "bound %.0f",
					 pols[p], (unsigned long long)budget,
					 t, bound);
		}
		/* capuchin and ondemand run both points */
		assert_true(ran >= 2);
	}
}

/* Same inputs, same outputs: the limits that stop CBC are work limits
 * (nodes, simplex iterations), so two solves of one problem give the
 * same incumbent, bound, gap and node count, byte for byte. chain-mlp at
 * 90% of 48 MiB under node_limit 20: the relaxation needs more (it
 * stopped at 1000 nodes unproven), so the limit binds; the report's
 * stdout (the wall time goes to stderr) must repeat. Before the work
 * limits, CBC was stopped by the clock and the report carried the solve
 * time. */
static void test_work_limit_repeats(void **state)
{
	(void)state;
	char *out[2];
	for (int k = 0; k < 2; k++)
		assert_int_equal(
			sh_cmd(BIN " optimal workloads/examples/chain-mlp.yaml "
				   "--hw V100-16GB --budget 45298483 "
				   "--node-limit 20 2>/dev/null",
			       &out[k]),
			0);
	if (!strstr(out[0], "stopped by node_limit") ||
	    !strstr(out[0], "safety net         not hit"))
		fail_msg("the node limit does not bind, or the safety net "
			 "fired:\n%s",
			 out[0]);
	assert_string_equal(out[0], out[1]);
	free(out[0]);
	free(out[1]);
}

/* The MIP start from a heuristic policy's schedule. On G at 2200 B with
 * recomputation only (test_recompute_only: the one way is to drop a after
 * f1 and re-run f0, 100 ns, in stage g; 6400 ns), dtr, run on the side,
 * evicts a when f2 needs room and re-runs f0 when g reads it: its
 * re-runs, translated into the MILP's variables, are that schedule, so
 * the start is dtr's at 6400 ns, equal to dtr's own simulated time. CBC
 * takes it and stops at the root (node_limit 0): the incumbent is 6400,
 * at node 0. With search lp (no CBC) the start is the incumbent as it
 * is. A policy that does not fit is named as rejected. */
static void test_seed_start(void **state)
{
	(void)state;
	struct wl_workload *w = graph_g(100, 100);
	for (int k = 0; k < 2; k++) {
		const char *kv[] = {"swap=false", "node_limit=0",
				    k ? "search=lp" : "search=full",
				    "seeds=dtr,vdnn"};
		struct st_run st;
		char *rep;
		gms_err err = {{0}};
		assert_int_equal(run_opt(w, kv, 4, 2200, &st, &rep, &err), 0);
		if (!strstr(rep, "mip start          dtr (6400 ns); seeds: dtr "
				 "6400 ns (ran 6400 ns); vdnn rejected") ||
		    rep_num(rep, "objective") != 6400 ||
		    rep_num(rep, "nodes") != 0 ||
		    (double)st.iter[0].time != 6400)
			fail_msg("start:\n%s", rep);
		free(rep);
		st_run_free(&st);
	}
	wl_free(w);
}

/* The block decomposition (decompose=blocks, policies/optimal_blocks.c)
 * on a chain of three identical blocks. Block b (b = 0, 1, 2):
 *
 *   F_b  reads x_b               writes a_b (1000 B)    100 ns
 *   G_b  reads a_b               writes x_b+1 (100 B)   100 ns
 *   B_b  reads dy_b+1, a_b, x_b  writes dy_b (100 B)    100 ns
 *
 * with L (x_3 -> dy_3, 100 B, 100 ns) between the forwards and the
 * backwards and U (dy_0 -> w, 100 B, 100 ns) after them, in no block; x_0
 * (100 B) is the batch. Issue order F0 G0 F1 G1 F2 G2 L B2 B1 B0 U. a_b is
 * the only tensor inside a block; every x and dy is a boundary tensor,
 * kept from its producer to its last reader, so the base memory of each
 * stage is: F0 100, G0 200, F1 200, G1 300, F2 300, G2 400, L 500, B2
 * 500, B1 400, B0 300, U 200. A block has two options (copying a_b,
 * 1000 ns each way beside 100 ns ops, costs more than re-running F_b):
 * keep a_b (300 ns, 1000 B kept across the gap) or drop it after G_b and
 * re-run F_b in B_b's stage (400 ns, nothing kept); either way the
 * block's own stages hold 1000 B of a_b. Block k's stages need its
 * largest base plus 1000 (1300, 1400, 1500) beside what blocks 0..k-1
 * keep, and L 500 beside all three keeps:
 *   1300 <= B,  1400 + k0 <= B,  1500 + k0 + k1 <= B,
 *   500 + k0 + k1 + k2 <= B,
 * time = 300 or 400 per block + 200 (L and U). So B = 3500: all kept,
 * 1100 ns; B = 2500: k0 + k1 <= 1000 and two keeps at most, block 2 and
 * one of blocks 0 and 1: 1200 ns; B = 1500: only block 2 keeps, 1300
 * ns; B = 1499: block 2's stages do not fit, no combination. */
/* A chain of nb blocks as above (F_b, G_b, B_b; L and U in no block),
 * a_b of a_bytes; with m_bytes, each block's forward also runs M_b
 * (a_b -> m_b, not recomputable: a dropout mask, whose re-run draws a
 * new one) between F_b and G_b, G_b and B_b reading m_b as well. */
static struct wl_workload *chain_blocks(const char *name, int nb,
					uint64_t a_bytes, uint64_t m_bytes)
{
	struct wl_workload *w = wl_new(name, 1);
	uint32_t x[4], a[3], m[3], dy[4];
	char n[16];
	x[0] = T(w, "x0", 100, WL_INPUT);
	for (int b = 0; b < nb; b++) {
		snprintf(n, sizeof n, "a%d", b);
		a[b] = T(w, n, a_bytes, WL_ACT);
		snprintf(n, sizeof n, "m%d", b);
		m[b] = m_bytes ? T(w, n, m_bytes, WL_ACT) : a[b];
		snprintf(n, sizeof n, "x%d", b + 1);
		x[b + 1] = T(w, n, 100, WL_ACT);
	}
	for (int b = 0; b <= nb; b++) {
		snprintf(n, sizeof n, "dy%d", b);
		dy[b] = T(w, n, 100, WL_ACT_GRAD);
	}
	uint32_t u = T(w, "w", 100, WL_ACT_GRAD);
	for (int b = 0; b < nb; b++) {
		wl_set_block(w, (uint32_t)b, WL_REGION_NONE);
		snprintf(n, sizeof n, "F%d", b);
		OPX(w, n, WL_FWD, 100, &x[b], 1, &a[b], 1, NULL, 0);
		snprintf(n, sizeof n, "M%d", b);
		struct wl_op_desc d = {.name = n, .type = OT_OTHER,
				       .phase = WL_FWD, .in = &a[b], .n_in = 1,
				       .out = &m[b], .n_out = 1, .time = 100,
				       .flops = 100, .recomputable = false};
		gms_err err;
		if (m_bytes && wl_add_op(w, &d, &err) == WL_NONE)
			fail_msg("%s", err.msg);
		snprintf(n, sizeof n, "G%d", b);
		OPX(w, n, WL_FWD, 100, &m[b], 1, &x[b + 1], 1, NULL, 0);
	}
	wl_set_block(w, WL_NONE, WL_REGION_NONE);
	OPX(w, "L", WL_FWD, 100, &x[nb], 1, &dy[nb], 1, NULL, 0);
	for (int b = nb - 1; b >= 0; b--) {
		wl_set_block(w, (uint32_t)b, WL_REGION_NONE);
		uint32_t in[4] = {dy[b + 1], a[b], x[b], m[b]};
		snprintf(n, sizeof n, "B%d", b);
		OPX(w, n, WL_BWD, 100, in, m_bytes ? 4 : 3, &dy[b], 1, NULL,
		    0);
	}
	wl_set_block(w, WL_NONE, WL_REGION_NONE);
	OPX(w, "U", WL_BWD, 100, &dy[0], 1, &u, 1, NULL, 0);
	finalize(w);
	return w;
}

static struct wl_workload *chain3(void)
{
	return chain_blocks("chain3", 3, 1000, 0);
}

static void test_blocks_chain_by_hand(void **state)
{
	(void)state;
	struct wl_workload *w = chain3();
	static const uint64_t budget[3] = {3500, 2500, 1500};
	static const double want[3] = {1100, 1200, 1300};
	const char *kv[] = {"decompose=blocks"};
	for (int k = 0; k < 3; k++) {
		struct st_run st;
		char *rep;
		gms_err err = {{0}};
		int rc = run_opt(w, kv, 1, budget[k], &st, &rep, &err);
		if (rc != 0 || st.oom.hit)
			fail_msg("rc %d oom %d: %s %s\n%s", rc, st.oom.hit,
				 err.msg, st.oom.reason, rep ? rep : "");
		if (!strstr(rep, "cbc by blocks, optimal: the OPTIMUM OVER "
				 "THE BLOCK DECOMPOSITION") ||
		    !strstr(rep, "3 blocks, 1 distinct") ||
		    rep_num(rep, "objective") != want[k])
			fail_msg("budget %llu: want %.0f by blocks\n%s",
				 (unsigned long long)budget[k], want[k], rep);
		/* replayed to the ns, within the budget, nothing refused;
		 * the global bound (the whole graph's relaxation) apart and
		 * not above it */
		if ((double)st.iter[0].time != want[k] ||
		    st.mem.peak_requested > budget[k] ||
		    !strstr(rep, "0 swap-in, 0 swap-out, 0 drop, 0 recompute "
				 "refused") ||
		    rep_num(rep, "global bound") > want[k])
			fail_msg("budget %llu: simulated %lld ns, peak %llu\n%s",
				 (unsigned long long)budget[k],
				 (long long)st.iter[0].time,
				 (unsigned long long)st.mem.peak_requested, rep);
		free(rep);
		st_run_free(&st);
	}
	struct st_run st;
	char *rep;
	gms_err err = {{0}};
	assert_int_not_equal(run_opt(w, kv, 1, 1499, &st, &rep, &err), 0);
	if (!strstr(err.msg, "no combination of the block options"))
		fail_msg("message: %s", err.msg);
	free(rep);
	st_run_free(&st);
	wl_free(w);
}

/* The decomposition is the optimum of a restricted class (boundary
 * tensors stay, each block's schedule is its own): never faster than the
 * exact MILP's optimum on the same graph. By hand, the exact optimum:
 * stage L holds x_3 and dy_3 (its input and output, 200 B) and every a_b
 * kept through it, and each a_b not kept costs a re-run of F_b (100 ns);
 * the 100 B x_0, x_1, x_2 can be copied out beside a 100 ns op and back
 * at no stall. So 3500: 1100; 2500 and 2400: two keeps (2200 + 200 <=
 * 2400 once x_0 to x_2 are out of the way), 1200; 1500 and 1499: one
 * keep, 1300. By blocks (the x_b stay): at 2400, 1500 + k0 + k1 <= 2400
 * leaves only block 2 keeping, 1300 (8.3% above the exact optimum); at
 * 1499 no combination fits while the exact MILP runs in 1300. */
static void test_blocks_not_below_exact(void **state)
{
	(void)state;
	struct wl_workload *w = chain3();
	static const uint64_t budget[5] = {3500, 2500, 2400, 1500, 1499};
	static const double want[2][5] = {
		{1100, 1200, 1200, 1300, 1300},
		{1100, 1200, 1300, 1300, INFINITY}};
	for (int k = 0; k < 5; k++) {
		double t[2];
		for (int d = 0; d < 2; d++) {
			const char *kv[] = {d ? "decompose=blocks"
					      : "decompose=off"};
			struct st_run st;
			char *rep;
			gms_err err = {{0}};
			int rc = run_opt(w, kv, 1, budget[k], &st, &rep, &err);
			t[d] = rc == 0 ? rep_num(rep, "objective") : INFINITY;
			if (rc == 0 && !strstr(rep, d ? "cbc by blocks, optimal"
						      : "cbc, optimal"))
				fail_msg("not proven:\n%s", rep);
			free(rep);
			st_run_free(&st);
		}
		if (t[0] != want[0][k] || t[1] != want[1][k] || t[1] < t[0])
			fail_msg("budget %llu: exact %.0f, by blocks %.0f",
				 (unsigned long long)budget[k], t[0], t[1]);
	}
	wl_free(w);
}

/* decompose=auto solves by blocks only above exact_ops (chain3 has 11
 * ops); blocks that do not nest as a chain (block 0's backward before
 * block 1's) are refused with both named. */
static void test_blocks_auto_and_chain(void **state)
{
	(void)state;
	struct wl_workload *w = chain3();
	for (int k = 0; k < 2; k++) {
		const char *kv[] = {k ? "exact_ops=10" : "exact_ops=11"};
		struct st_run st;
		char *rep;
		gms_err err = {{0}};
		assert_int_equal(run_opt(w, kv, 1, 2500, &st, &rep, &err), 0);
		if (!strstr(rep, k ? "cbc by blocks, optimal" : "cbc, optimal"))
			fail_msg("exact_ops %d:\n%s", 11 - k, rep);
		free(rep);
		st_run_free(&st);
	}
	wl_free(w);
	w = wl_new("crossed", 1);
	uint32_t x = T(w, "x", 100, WL_INPUT), a = T(w, "a", 100, WL_ACT),
		 b = T(w, "b", 100, WL_ACT), g = T(w, "g", 100, WL_ACT_GRAD),
		 h = T(w, "h", 100, WL_ACT_GRAD);
	uint32_t in0[2] = {a, x}, in1[2] = {b, g};
	wl_set_block(w, 0, WL_REGION_NONE);
	OPX(w, "F0", WL_FWD, 100, &x, 1, &a, 1, NULL, 0);
	wl_set_block(w, 1, WL_REGION_NONE);
	OPX(w, "F1", WL_FWD, 100, &a, 1, &b, 1, NULL, 0);
	wl_set_block(w, 0, WL_REGION_NONE);
	OPX(w, "B0", WL_BWD, 100, in0, 2, &g, 1, NULL, 0);
	wl_set_block(w, 1, WL_REGION_NONE);
	OPX(w, "B1", WL_BWD, 100, in1, 2, &h, 1, NULL, 0);
	finalize(w);
	const char *kv[] = {"decompose=blocks"};
	struct st_run st;
	char *rep;
	gms_err err = {{0}};
	assert_int_not_equal(run_opt(w, kv, 1, 10000, &st, &rep, &err), 0);
	if (!strstr(err.msg, "do not nest as a chain: block 1 (ops F1 .. B1) "
			     "ends after block 0 (F0 .. B0)"))
		fail_msg("message: %s", err.msg);
	free(rep);
	st_run_free(&st);
	wl_free(w);
}

/* The block solves are stopped by the same work limits as the exact
 * MILP (node_limit, lp_iterations, one thread), the wall clock only the
 * reported safety net (time_limit): two runs of chain3 by blocks give
 * byte-identical reports, which carry the block solves' work (nodes,
 * iterations) and no solve time. Before, each block solve had
 * block_time_limit seconds of CBC: a solve it stopped was not reported
 * as the safety net's, and its option depended on the machine. That key
 * is gone (exit 2, named). */
static void test_blocks_work_limits(void **state)
{
	(void)state;
	struct wl_workload *w = chain3();
	const char *kv[] = {"decompose=blocks", "node_limit=50"};
	char *rep[2];
	for (int k = 0; k < 2; k++) {
		struct st_run st;
		gms_err err = {{0}};
		assert_int_equal(run_opt(w, kv, 2, 2500, &st, &rep[k], &err), 0);
		st_run_free(&st);
	}
	if (!strstr(rep[0], "block solves       node_limit 50 each: 0 stopped "
			    "by node_limit, 0 searched as LPs, 0 killed by the "
			    "safety net;") ||
	    !strstr(rep[0], "safety net         not hit") ||
	    strstr(rep[0], " s)") || strstr(rep[0], "seconds"))
		fail_msg("report:\n%s", rep[0]);
	assert_string_equal(rep[0], rep[1]);
	free(rep[0]);
	free(rep[1]);
	wl_free(w);
	expect("optimal workloads/examples/tiny-cnn.yaml --budget 8MiB "
	       "--set block_time_limit=10",
	       2, "key 'block_time_limit': unknown key");
}

/* When no combination of the menu's options fits, the menu is doubled
 * (up to menu_max) and the blocks solved again, the doubling reported.
 * Two blocks (chain_blocks with the masks), recomputation only
 * (swap=false). Block b (b = 0, 1):
 *
 *   F_b  reads x_b                   writes a_b (200 B)      100 ns
 *   M_b  reads a_b                   writes m_b (800 B)      100 ns,
 *        not recomputable (a dropout mask: a re-run draws a new one)
 *   G_b  reads m_b                   writes x_b+1 (100 B)    100 ns
 *   B_b  reads dy_b+1, a_b, x_b, m_b writes dy_b (100 B)     100 ns
 *
 * with L (x_2 -> dy_2) and U (dy_0 -> w), 100 B and 100 ns each, in no
 * block; x_0 (100 B) is the batch; order F0 M0 G0 F1 M1 G1 L B1 B0 U.
 * Inside a block only a_b and m_b are managed, and m_b can reach B_b
 * only by staying resident: a block keeps 1000 B across its gap (both)
 * in 400 ns, or 800 B (m_b; a_b dropped after M_b and F_b re-run in
 * B_b's stage) in 500 ns, and its own stages hold at most 1000 B
 * either way (M_b, B_b). The block's peak budget is that 1000 B (its
 * largest working set is too), its keep budgets Kmax * i / (menu - 1)
 * with Kmax = 1000: menu 4 gives 1000, 666, 333, 0, and only 1000 holds
 * m_b, so its one option keeps 1000; menu 8 gives 1000, 857, ... and
 * 857 gives the 800 B option. The boundary tensors (x, dy, w: from
 * producer to last reader) give each stage's base: F0 100, M0 100, G0
 * 200, F1 200, M1 200, G1 300, L 400, B1 400, B0 300, U 200; so block 0
 * needs 300 + 1000 = 1300 (at B0), block 1 400 + 1000 = 1400 (at B1)
 * beside block 0's keep k0, and L 400 beside k0 + k1:
 *   1300 <= B,  1400 + k0 <= B,  400 + k0 + k1 <= B;
 * time 400 or 500 a block + 200 (L and U). With menu 4 (k = 1000 only)
 * that needs B >= 2400 (1000 ns). At B = 2300 menu 4 has no
 * combination; menu 8 has k0 = 800 (2200 <= 2300), k1 = 1000 (400 +
 * 1800 <= 2300): 500 + 400 + 200 = 1100 ns, 4 + 6 block solves (menu
 * 8 shares keeps 1000 and 0 with menu 4: 2 points reused). With
 * menu_max 4 no doubling: none at 2300. At B = 2199 no schedule fits
 * at all: B1's stage holds its working set (dy_2, a_1, m_1, x_1, dy_1:
 * 1300 B), the batch x_0 and m_0 (neither can be made again without
 * swapping): 2200 B. The global relaxation proves it, so the menu is
 * not doubled. */
/* The part of the report from `from` to the end of its line. */
static char *rep_line(const char *rep, const char *from)
{
	const char *l = strstr(rep, from);
	if (!l)
		fail_msg("report lacks '%s':\n%s", from, rep);
	size_t n = strcspn(l, "\n");
	char *c = malloc(n + 1);
	assert_non_null(c);
	memcpy(c, l, n);
	c[n] = 0;
	return c;
}

static void test_blocks_menu_doubled(void **state)
{
	(void)state;
	struct wl_workload *w = chain_blocks("chain2m", 2, 200, 800);
	struct {
		const char *kv[2];
		uint64_t budget;
		double want; /* 0: no combination */
		const char *says;
	} c[] = {
		{{"menu_max=4", "menu=4"}, 2300, 0,
		 "least keep 1000 B; menu 4, doubled 0 times from 4, "
		 "menu_max 4: doubled again it would pass menu_max); "
		 "global bound 1100 ns"},
		{{"menu=4", "menu_max=8"}, 2400, 1000,
		 "menu doubled       0 times (menu_max 8)\n"},
		{{"menu=4", "menu_max=8"}, 2300, 1100,
		 "menu doubled       1 times: no combination of menu 4's "
		 "options fits, solved again up to menu 8 (menu_max 8; 2 "
		 "points shared with the menu before reused)\n"},
		{{"menu=8", "menu_max=8"}, 2300, 1100,
		 "menu doubled       0 times (menu_max 8)\n"},
		{{"menu=4", "menu_max=8"}, 2199, 0,
		 "least keep 1000 B; menu 4, doubled 0 times from 4, "
		 "menu_max 8: the global relaxation proves that no schedule "
		 "fits, so not doubled); global bound inf ns (relaxation "
		 "infeasible)"},
	};
	char *opts[2] = {NULL, NULL}; /* the block options, menu 8 */
	for (size_t k = 0; k < sizeof c / sizeof *c; k++) {
		const char *kv[4] = {"decompose=blocks", "swap=false",
				     c[k].kv[0], c[k].kv[1]};
		struct st_run st;
		char *rep;
		gms_err err = {{0}};
		int rc = run_opt(w, kv, 4, c[k].budget, &st, &rep, &err);
		if (!c[k].want) {
			if (rc == 0 || !strstr(err.msg, "no combination of "
							"the block options") ||
			    !strstr(err.msg, c[k].says))
				fail_msg("case %zu: rc %d: %s", k, rc, err.msg);
		} else {
			if (rc != 0 || st.oom.hit ||
			    rep_num(rep, "objective") != c[k].want ||
			    !strstr(rep, c[k].says) ||
			    (double)st.iter[0].time != c[k].want ||
			    st.mem.peak_requested > c[k].budget ||
			    !strstr(rep, "0 swap-in, 0 swap-out, 0 drop, 0 "
					 "recompute refused"))
				fail_msg("case %zu: rc %d %s, simulated %lld "
					 "ns\n%s",
					 k, rc, err.msg,
					 rc ? 0 : (long long)st.iter[0].time,
					 rep ? rep : "");
			if (c[k].want == 1100) {
				/* 4 + 6 solves doubled, 8 at menu 8 */
				if (!strstr(rep, k == 2 ? "from 10 block "
							: "from 8 block "))
					fail_msg("case %zu:\n%s", k, rep);
				opts[k == 2] = rep_line(rep, "block class 0");
			}
		}
		free(rep);
		st_run_free(&st);
	}
	/* the doubled menu's options are menu 8's, in the same order */
	assert_non_null(opts[0]);
	assert_non_null(opts[1]);
	assert_string_equal(opts[0], opts[1]);
	free(opts[0]);
	free(opts[1]);
	wl_free(w);
}

/* The experiment's memo of block solves (struct opt_memo): a block
 * point's answer depends on the block and its budgets, not on the run's
 * budget or on how many blocks surround it, so chain3 at 3500 solves
 * every point of its one distinct block (the report's "from N block
 * solves"), chain3 at 2500 and a 2-block chain of the same block
 * (chain_blocks: F_b, G_b, a gap, B_b, 100 ns each, a_b of 1000 B) take
 * all N from it, and every report is the one a run without the memo
 * writes, byte for byte (its solve counts and nodes included). */
static void test_blocks_memo(void **state)
{
	(void)state;
	struct wl_workload *w3 = chain3();
	struct wl_workload *w2 = chain_blocks("chain2", 2, 1000, 0);
	const struct wl_workload *wl[3] = {w3, w3, w2};
	static const uint64_t budget[3] = {3500, 2500, 2500};
	/* by hand (test_blocks_chain_by_hand): 1100, 1200; two blocks at
	 * 2500: 1400 + k0 <= 2500 and 400 + k0 + k1 <= 2500, both kept,
	 * 300 + 300 + L and U's 200 */
	static const double want[3] = {1100, 1200, 800};
	const char *kv[] = {"decompose=blocks"};
	struct opt_memo *memo = opt_memo_new();
	assert_non_null(memo);
	size_t n = 0;
	for (int k = 0; k < 3; k++) {
		char *rep[2];
		for (int m = 0; m < 2; m++) {
			struct st_run st;
			gms_err err = {{0}};
			int rc = run_opt_memo(wl[k], kv, 1, budget[k],
					      m ? memo : NULL, &st, &rep[m],
					      &err);
			if (rc != 0 || rep_num(rep[m], "objective") != want[k] ||
			    (double)st.iter[0].time != want[k])
				fail_msg("case %d memo %d: rc %d %s\n%s", k, m,
					 rc, err.msg, rep[m] ? rep[m] : "");
			st_run_free(&st);
		}
		assert_string_equal(rep[0], rep[1]);
		const char *f = strstr(rep[1], "options from ");
		assert_non_null(f);
		size_t solves = strtoul(f + strlen("options from "), NULL, 10);
		size_t got_solves, got_hits;
		opt_memo_counts(memo, &got_solves, &got_hits);
		if (k == 0)
			n = solves;
		if (!n || solves != n || got_solves != n ||
		    got_hits != (size_t)k * n)
			fail_msg("case %d: %zu solves listed, memo %zu solved "
				 "%zu taken (want %zu, %zu)",
				 k, solves, got_solves, got_hits, n, k * n);
		free(rep[0]);
		free(rep[1]);
	}
	/* the same block under other limits or without swapping is
	 * another problem: solved, not taken */
	static const char *const other[2][2] = {{"decompose=blocks",
						  "node_limit=999"},
						 {"decompose=blocks",
						  "swap=false"}};
	size_t taken = 2 * n;
	for (int k = 0; k < 2; k++) {
		struct st_run st;
		char *rep;
		gms_err err = {{0}};
		assert_int_equal(run_opt_memo(w3, other[k], 2, 3500, memo, &st,
					      &rep, &err),
				 0);
		size_t got_solves, got_hits;
		opt_memo_counts(memo, &got_solves, &got_hits);
		if (got_hits != taken || got_solves <= n)
			fail_msg("%s: memo %zu solved %zu taken (want > %zu, "
				 "%zu)",
				 other[k][1], got_solves, got_hits, n, taken);
		n = got_solves;
		free(rep);
		st_run_free(&st);
	}
	opt_memo_free(memo);
	wl_free(w3);
	wl_free(w2);
}

/* Rockmate's chain DP (opt_chain_dp) against every combination of
 * options, on small random chains: the least time, and infeasibility,
 * agree; keeps rounded up to the slot in both. */
static void test_chain_dp_exhaustive(void **state)
{
	(void)state;
	uint64_t r = 12345;
#define RND(m) ((r = r * 6364136223846793005ull + 1442695040888963407ull), \
		(uint32_t)(r >> 33) % (m))
	for (int trial = 0; trial < 400; trial++) {
		uint32_t n = 1 + RND(4), off[5] = {0};
		struct opt_dp_opt opt[16];
		uint64_t need[5];
		for (uint32_t k = 0; k < n; k++) {
			off[k + 1] = off[k] + 1 + RND(3);
			for (uint32_t o = off[k]; o < off[k + 1]; o++)
				opt[o] = (struct opt_dp_opt){
					.time = 1 + RND(1000),
					.peak = RND(1000), .keep = RND(500)};
		}
		for (uint32_t k = 0; k <= n; k++)
			need[k] = RND(2) ? RND(800) : 0;
		uint64_t budget = 600 + RND(1400), unit = trial % 2 ? 7 : 1;
		/* every combination: an index per block, odometer order */
		double want = INFINITY;
		uint32_t c[4] = {0};
		for (;;) {
			uint64_t m = 0; /* bytes kept, in whole slots */
			double t = 0;
			bool ok = need[0] <= budget;
			for (uint32_t k = 0; k < n && ok; k++) {
				const struct opt_dp_opt *o = &opt[off[k] + c[k]];
				ok = o->peak + m <= budget;
				m += (o->keep + unit - 1) / unit * unit;
				ok = ok && need[k + 1] + m <= budget &&
				     m <= budget / unit * unit;
				t += o->time;
			}
			if (ok && t < want)
				want = t;
			uint32_t k = 0;
			while (k < n && ++c[k] == off[k + 1] - off[k])
				c[k++] = 0;
			if (k == n)
				break;
		}
		uint32_t ch[4];
		double best = -1;
		int rc = opt_chain_dp(n, off, opt, need, budget, unit, ch, &best);
		if (isinf(want)) {
			assert_int_equal(rc, 1);
			continue;
		}
		assert_int_equal(rc, 0);
		if (best != want)
			fail_msg("trial %d: dp %.0f, every combination %.0f",
				 trial, best, want);
		double t = 0;
		for (uint32_t k = 0; k < n; k++)
			t += opt[off[k] + ch[k]].time;
		assert_true(t == best);
	}
#undef RND
}

/* Issue 37: CBC is loaded when a MILP is solved, not when the program
 * starts. Run first: nothing has solved yet, so the library is not
 * mapped (the test program, like gpumemsim, no longer links it). */
static void test_cbc_not_loaded_at_start(void **state)
{
	(void)state;
	void *h = dlopen(opt_lib_soname, RTLD_NOW | RTLD_NOLOAD);
	if (h) {
		dlclose(h);
		fail_msg("%s is loaded before any solve", opt_lib_soname);
	}
	struct opt_lib *l = NULL;
	gms_err err = {{0}};
	assert_int_equal(opt_lib_open(&l, &err), 0);
	assert_non_null(l);
	opt_lib_close(l);
}

/* A missing library: an error naming it and the package, no crash; a
 * library without CBC's functions (libm): an error naming the first
 * missing one (Clp_newModel, the table's first) */
static void test_cbc_missing_library(void **state)
{
	(void)state;
	struct opt_lib *l = (struct opt_lib *)&l;
	gms_err err = {{0}};
	assert_int_equal(opt_lib_open_named("libNoSuchCbcSolver.so.0", &l,
					    &err),
			 -1);
	assert_null(l);
	assert_non_null(strstr(err.msg, "libNoSuchCbcSolver.so.0"));
	assert_non_null(strstr(err.msg, "coinor-libcbc-dev"));
	gms_err e2 = {{0}};
	assert_int_equal(opt_lib_open_named("libm.so.6", &l, &e2), -1);
	assert_null(l);
	assert_non_null(strstr(e2.msg, "libm.so.6 has no function "
					"Clp_newModel"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cbc_not_loaded_at_start),
		cmocka_unit_test(test_cbc_missing_library),
		cmocka_unit_test(test_swap_only),
		cmocka_unit_test(test_recompute_only),
		cmocka_unit_test(test_both_recompute_wins),
		cmocka_unit_test(test_both_swap_overlaps),
		cmocka_unit_test(test_infeasible_names_op),
		cmocka_unit_test(test_recompute_when_link_busy),
		cmocka_unit_test(test_inplace_counted_once),
		cmocka_unit_test(test_cli),
		cmocka_unit_test(test_copy_spans_two_ops),
		cmocka_unit_test(test_bound_algorithm_choice),
		cmocka_unit_test(test_chain_mlp_bound),
		cmocka_unit_test(test_work_limit_repeats),
		cmocka_unit_test(test_seed_start),
		cmocka_unit_test(test_blocks_chain_by_hand),
		cmocka_unit_test(test_blocks_not_below_exact),
		cmocka_unit_test(test_blocks_auto_and_chain),
		cmocka_unit_test(test_blocks_work_limits),
		cmocka_unit_test(test_blocks_menu_doubled),
		cmocka_unit_test(test_blocks_memo),
		cmocka_unit_test(test_chain_dp_exhaustive),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
