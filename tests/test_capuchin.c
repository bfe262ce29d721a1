/*
 * test_capuchin.c - the capuchin policy's runtime (policies/capuchin.c)
 * on small graphs whose timelines are worked out by hand: guided
 * execution of a plan, feedback moving an in-trigger, decoupled
 * swapping. The Policy Maker's algorithms alone are in
 * test_capuchin_plan.c.
 *
 * All on hw_test_profile: a copy of b bytes takes b ns in either
 * direction, on its own engine (H2D and D2H are separate FIFOs), no
 * latency; kernels take their given time; the `arena` allocator, so
 * memory is a plain sum of live tensor bytes.
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

#define OP(w, n, t, in, nin, out, nout) \
	OPX(w, n, WL_FWD, t, in, nin, out, nout, NULL, 0)

/*
 * The workload of the tests (times on the stall-free timeline, sizes in
 * bytes; x is the iteration's input):
 *
 *   A   x -> a (1000)          100 ns   @0
 *   Z   a -> z (500)           100 ns   @100   a's 2nd access
 *   B   z -> b (100)           100 ns   @200   z's 2nd access (B's time
 *                                             is a parameter: 100 here)
 *   P   b -> p (3000)         1000 ns   @300
 *   Q   p -> q (100)           100 ns   @1300
 *   L   q -> l (100)          1000 ns   @1400
 *   S1..S6  l -> s1 -> .. -> s6 (100 each), 100 ns   @2400 .. @2900
 *   Gz  z, s6 -> gz (100)      100 ns   @3000  z's back-access
 *   S7..S11 gz -> s7 .. s11,   100 ns   @3100 .. @3500
 *   Ga  a, s11 -> ga (100)     100 ns   @3600  a's back-access
 *
 * Budget 3200. Everything resident, P would need a + z + b + p = 4600.
 *
 * Measured iteration (passive mode): P's 3000 bytes fail; no tensor of
 * 3000..6000 bytes, so from the start of the access list [x a a z z b]:
 * x is dead, a (1000) and z (500) are evicted, b is P's input. 1500 bytes
 * evicted: the memory reduction required.
 *
 * The Policy Maker (hand-run, capuchin_plan.h's rules):
 * - usage from first to last access: 1100 @0, 1500 @100, 1600 @200, 4600
 *   @300 (a z b p), 4600 @1300 (a z p q), 1700 @1400: peak period
 *   [300, 1300];
 * - candidates (a pair of consecutive accesses whose gap overlaps it): a
 *   (@100, @3600), z (@200, @3000), b (@200, @300), p (@300, @1300), q
 *   (@1300, @1400);
 * - FT = (back - swap_in) - (evict + swap_out): z (3000-500) - (200+500)
 *   = 1800; a (3600-1000) - (100+1000) = 1500; b, q -100; p -5000;
 * - z first: SwapInStartTime 2500; walking back from Gz, the first access
 *   earlier than it is S1's write of s1 (@2400), outside the peak:
 *   overhead max(2400, 700) + 500 - 3000 < 0 -> 0: swapped. 1000 left;
 * - a: start 2600: S2's write of s2 (@2500); 2500 + 1000 - 3600 < 0:
 *   swapped. 0 left: done. Plan: z (evict 2, back 3, trigger s1:1) and
 *   a (evict 2, back 3, trigger s2:1).
 * The planner does not see that both swap-ins share the H2D engine: a's
 * waits for z's. That is what feedback is for.
 */
static struct wl_workload *capuchin_net_l(sim_time_t b_time, int l_ops);

static struct wl_workload *capuchin_net(sim_time_t b_time)
{
	return capuchin_net_l(b_time, 1);
}

/* The net with L's 1000 ns split into l_ops ops of 1000 / l_ops ns (L1
 * .. Ln, each q or the previous l -> the next l, 100 bytes); 1: the net
 * above, L and l. */
static struct wl_workload *capuchin_net_l(sim_time_t b_time, int l_ops)
{
	struct wl_workload *w = wl_new("cap", 1);
	uint32_t x = T(w, "x", 100, WL_INPUT), a = T(w, "a", 1000, WL_ACT),
		 z = T(w, "z", 500, WL_ACT), b = T(w, "b", 100, WL_ACT),
		 p = T(w, "p", 3000, WL_ACT), q = T(w, "q", 100, WL_ACT),
		 l = T(w, l_ops > 1 ? "l1" : "l", 100, WL_ACT);
	OP(w, "A", 100, &x, 1, &a, 1);
	OP(w, "Z", 100, &a, 1, &z, 1);
	OP(w, "B", b_time, &z, 1, &b, 1);
	OP(w, "P", 1000, &b, 1, &p, 1);
	OP(w, "Q", 100, &p, 1, &q, 1);
	char name[16];
	uint32_t prev = q;
	for (int i = 1; i <= l_ops; i++) {
		uint32_t li = l;
		if (l_ops > 1) {
			snprintf(name, sizeof name, "l%d", i);
			if (i > 1)
				li = T(w, name, 100, WL_ACT);
		}
		if (l_ops > 1)
			snprintf(name, sizeof name, "L%d", i);
		else
			snprintf(name, sizeof name, "L");
		OP(w, name, 1000 / l_ops, &prev, 1, &li, 1);
		prev = li;
	}
	for (int i = 1; i <= 11; i++) {
		if (i == 7) { /* Gz between S6 and S7 */
			uint32_t gz = T(w, "gz", 100, WL_ACT);
			uint32_t in[] = {z, prev};
			OP(w, "Gz", 100, in, 2, &gz, 1);
			prev = gz;
		}
		snprintf(name, sizeof name, "s%d", i);
		uint32_t s = T(w, name, 100, WL_ACT);
		snprintf(name, sizeof name, "S%d", i);
		OP(w, name, 100, &prev, 1, &s, 1);
		prev = s;
	}
	uint32_t ga = T(w, "ga", 100, WL_ACT);
	uint32_t in[] = {a, prev};
	OP(w, "Ga", 100, in, 2, &ga, 1);
	finalize(w);
	return w;
}

/* Run the net (B taking b_time) under capuchin with settings kv for
 * `iters` iterations. */
static void run_capuchin_b(sim_time_t b_time, const char *const *kv,
			   size_t n, int iters, struct st_run *st,
			   char **report)
{
	struct wl_workload *w = capuchin_net(b_time);
	struct pol pol;
	make_policy(&pol, "capuchin", kv, n);
	memset(st, 0, sizeof *st);
	assert_int_equal(run_hw(w, &pol, 3200, iters, st, false), 0);
	assert_false(st->oom.hit);
	gms_err err;
	assert_int_equal(pol_report_text(&pol, report, &err), 0);
	pol_destroy(&pol);
	wl_free(w);
}

static void run_capuchin(const char *const *kv, size_t n, int iters,
			 struct st_run *st, char **report)
{
	run_capuchin_b(100, kv, n, iters, st, report);
}

static bool has_line(const char *report, const char *line)
{
	size_t n = strlen(line);
	for (const char *s = report; (s = strstr(s, line)) != NULL; s += n)
		if ((s == report || s[-1] == '\n') &&
		    (s[n] == '\n' || s[n] == '\0'))
			return true;
	return false;
}

/* The plan worked out in the header comment. */
static void test_plan(void **state)
{
	(void)state;
	/* feedback off: the report shows the in-triggers as planned */
	static const char *const kv[] = {"fa=false"};
	struct st_run st;
	char *rep = NULL;
	run_capuchin(kv, 1, 2, &st, &rep);
	print_message("%s", rep);
	assert_true(has_line(rep, "mem_saving_required 1500"));
	assert_true(has_line(rep, "peak_period_ns 300 1300"));
	assert_true(has_line(rep, "plan_swaps 2"));
	assert_true(has_line(rep, "plan_recomputes 0"));
	assert_non_null(strstr(rep, "plan z swap evict 2 back 3 trigger s1:1 "));
	assert_non_null(strstr(rep, "plan a swap evict 2 back 3 trigger s2:1 "));
	free(rep);
	st_run_free(&st);
}

/*
 * Guided execution and feedback (section 4.4: "the in-trigger is adjusted
 * earlier by 5% of its swapping time in the next iteration").
 *
 * Guided iteration 1 (DS on): A 0-100; Z 100-200, whose read of a is a's
 * evicted-access: D2H of a 100-1100; B 200-300, z's: D2H of z 1100-1600.
 * P at 300 fails (a z b + p = 4600): DS waits for the earliest unfinished
 * swap-out, a, until 1100; a is freed, still 3600: waits for z until
 * 1600; then 3100 fits. P 1600-2600, Q -2700, L -3700, S1 at 3700 (z's
 * in-trigger: H2D 3700-4200), S2 at 3800 (a's: H2D queued behind z,
 * 4200-5200), S3..S6 to 4300, Gz at 4300 finds z IN, S7..S11 4400-4900;
 * Ga at 4900 finds a still SWAPPING_IN: late, waits 300 until 5200; ends
 * 5300. D2H stall 1300, H2D stall 300.
 * Feedback moves the in-trigger itself: from its time on the measured
 * timeline, 5% of a's swap time (50) earlier. a's trigger is S2's write
 * of s2 (@2500): target 2450, and the first access earlier than it,
 * walking back, is S1's write of s1 (@2400): moved to S1.
 * Iteration 2: both prefetches at S1, in back-access order (z's Gz
 * before a's Ga): z 3700-4200, a 4200-5200, as in iteration 1: a late
 * again, 5300. Target 2400 - 50 = 2350: the first access earlier is L's
 * write of l (@1400; L is after the peak period [300, 1300]): moved.
 * Iteration 3: L at 2700 prefetches a (2700-3700; a's swap-out ended at
 * 1100, and p died with Q), S1 at 3700 prefetches z (3700-4200); Gz at
 * 4300 and Ga at 4900 find both IN; ends 5000. Nothing late, nothing
 * moves: the plan is stable from iteration 3 (and settled once
 * iterations 3 and 4 have run with it, CAP_STABLE_K = 2).
 */
static void test_feedback(void **state)
{
	(void)state;
	struct st_run st;
	char *rep = NULL;
	run_capuchin(NULL, 0, 8, &st, &rep);
	print_message("%s", rep);
	static const sim_time_t want[] = {0, 5300, 5300, 5000, 5000,
					  5000, 5000, 5000};
	for (int i = 1; i < 8; i++)
		assert_int_equal(st.iter[i].time, want[i]);
	assert_int_equal(st.iter[1].stall[ST_STALL_D2H], 1300);
	assert_int_equal(st.iter[1].stall[ST_STALL_H2D], 300);
	assert_int_equal(st.iter[7].stall[ST_STALL_H2D], 0);
	assert_true(has_line(rep, "plan_stable_iter 3"));
	assert_non_null(strstr(rep, "plan z swap evict 2 back 3 trigger s1:1 moves 0 "));
	assert_non_null(strstr(rep, "plan a swap evict 2 back 3 trigger l:1 moves 2 "));
	/* iterations 1 and 2: a late, moved; 3: nothing late */
	for (int i = 1; i <= 2; i++) {
		char line[128];
		snprintf(line, sizeof line, "iter %d swap_outs 2 drops 0 "
			 "prefetches 2 late 1 missed 0 recomputed 0 moves 1 ", i);
		assert_non_null(strstr(rep, line));
	}
	assert_non_null(strstr(rep, "iter 3 swap_outs 2 drops 0 prefetches 2 "
				    "late 0 missed 0 recomputed 0 moves 0 "));
	/* the executor's count of late swap-ins agrees */
	assert_int_equal(st.iter[2].n_late_in, 1);
	assert_int_equal(st.iter[3].n_late_in, 0);
	free(rep);
	st_run_free(&st);
}

/*
 * Several feedback steps: the net with L split into L1..L10 (100 ns
 * each, stall-free @1400..@2300), so an in-trigger can move one op at a
 * time. The plan is test_plan's (z at S1 @2400, a at S2 @2500). Guided
 * iterations run every op from P on 1300 ns later than on the stall-free
 * timeline (forward waits for a's and z's swap-outs, as test_feedback
 * says): L_i at 2600 + 100 i, S1 3700, S6 4200, Gz 4300, S11 4800, Ga
 * 4900, end 5000 when nothing is late. Both swap-ins share the one H2D
 * engine (z 500 ns, a 1000 ns); prefetches of one in-trigger go in
 * back-access order (z first). Feedback moves a late tensor's in-trigger
 * 5% of its swap time before the trigger's stall-free time (a 50, z 25)
 * to the first access earlier, which here is the previous op.
 *   it  triggers (z, a)  H2D                     late  ends  move
 *   1   S1, S2           z 3700-4200 a 4200-5200  a     5300  a -> S1
 *   2   S1, S1           z 3700-4200 a 4200-5200  a     5300  a -> L10
 *   3   S1, L10          a 3600-4600 z 4600-5100  z     5800  z -> L10
 *      (Gz waits for z until 5100: Gz 5100, S7..S11 5200-5700, Ga 5700)
 *   4   L10, L10         z 3600-4100 a 4100-5100  a     5200  a -> L9
 *      (Ga waits for a until 5100 and runs 5100-5200)
 *   5   L10, L9          a 3500-4500 z 4500-5000  z     5700  z -> L9
 *   6   L9, L9           z 3500-4000 a 4000-5000  a     5100  a -> L8
 *   7   L9, L8           a 3400-4400 z 4400-4900  z     5600  z -> L8
 *   8   L8, L8           z 3400-3900 a 3900-4900  -     5000
 * In iteration 8 a's copy ends at 4900, when Ga is issued: the copy's
 * completion was scheduled at 3900, S11's at 4800, and events at one time
 * run in the order they were scheduled, so Ga finds a IN. Nothing moves
 * after 7: stable from 8 (settled once 8 and 9 ran unchanged)..
 *
 * The cascade the report's fa_iter lines show (diagnostics, issue 37):
 * moving the late tensor's trigger puts its copy ahead of the other's
 * on the one H2D FIFO, and the other is late in the next iteration,
 * though it was neither late nor moved before (newly_late). Per
 * iteration: late_ns = copy end - back-access; queue_ns = copy end -
 * issue - own copy time (the wait behind the other copy); late_steps =
 * late_ns / (5% of its swap time: a 50, z 25); move_ns = the trigger's
 * stall-free time before - after (one op, 100):
 *   it  late  late_ns        queue_ns                newly  steps
 *   1   a     5200-4900=300  5200-3800-1000=400      1      6.0
 *   2   a     5200-4900=300  5200-3700-1000=500      0      6.0
 *   3   z     5100-4300=800  5100-3700-500=900       1     32.0
 *   4   a     5100-4900=200  5100-3600-1000=500      1      4.0
 *   5   z     5000-4300=700  5000-3600-500=900       1     28.0
 *   6   a     5000-4900=100  5000-3500-1000=500      1      2.0
 *   7   z     4900-4300=600  4900-3500-500=900       1     24.0
 * Seven moves take seven iterations: one tensor is late at a time.
 */
static void test_feedback_steps(void **state)
{
	(void)state;
	struct wl_workload *w = capuchin_net_l(100, 10);
	struct pol pol;
	make_policy(&pol, "capuchin", NULL, 0);
	struct st_run st;
	memset(&st, 0, sizeof st);
	assert_int_equal(run_hw(w, &pol, 3200, 10, &st, false), 0);
	assert_false(st.oom.hit);
	char *rep = NULL;
	gms_err err;
	assert_int_equal(pol_report_text(&pol, &rep, &err), 0);
	print_message("%s", rep);
	static const sim_time_t want[] = {0,    5300, 5300, 5800, 5200,
					  5700, 5100, 5600, 5000, 5000};
	for (int i = 1; i < 10; i++)
		assert_int_equal(st.iter[i].time, want[i]);
	for (int i = 1; i <= 7; i++) {
		char line[128];
		snprintf(line, sizeof line, "iter %d swap_outs 2 drops 0 "
			 "prefetches 2 late 1 missed 0 recomputed 0 moves 1 ", i);
		assert_non_null(strstr(rep, line));
	}
	assert_non_null(strstr(rep, "iter 8 swap_outs 2 drops 0 prefetches 2 "
				    "late 0 missed 0 recomputed 0 moves 0 "));
	assert_true(has_line(rep, "plan_stable_iter 8"));
	assert_non_null(strstr(rep, "plan z swap evict 2 back 3 trigger l8:1 moves 3 "));
	assert_non_null(strstr(rep, "plan a swap evict 2 back 3 trigger l8:1 moves 4 "));
	static const char *const fa[] = {
		"fa_iter 1 late 1 newly_late 1 late_ns 300 late_max_ns 300 "
		"queue_ns 400 late_steps 6.0 move_ns 100",
		"fa_iter 2 late 1 newly_late 0 late_ns 300 late_max_ns 300 "
		"queue_ns 500 late_steps 6.0 move_ns 100",
		"fa_iter 3 late 1 newly_late 1 late_ns 800 late_max_ns 800 "
		"queue_ns 900 late_steps 32.0 move_ns 100",
		"fa_iter 4 late 1 newly_late 1 late_ns 200 late_max_ns 200 "
		"queue_ns 500 late_steps 4.0 move_ns 100",
		"fa_iter 5 late 1 newly_late 1 late_ns 700 late_max_ns 700 "
		"queue_ns 900 late_steps 28.0 move_ns 100",
		"fa_iter 6 late 1 newly_late 1 late_ns 100 late_max_ns 100 "
		"queue_ns 500 late_steps 2.0 move_ns 100",
		"fa_iter 7 late 1 newly_late 1 late_ns 600 late_max_ns 600 "
		"queue_ns 900 late_steps 24.0 move_ns 100",
	};
	for (size_t i = 0; i < sizeof fa / sizeof *fa; i++)
		assert_true(has_line(rep, fa[i]));
	assert_null(strstr(rep, "fa_iter 8 ")); /* nothing late, no move */
	free(rep);
	st_run_free(&st);
	pol_destroy(&pol);
	wl_free(w);
}

/*
 * Run until stable (6.3.2: "only measure the performance until the
 * policy is stable"): iterations 3, warmup 1, settle_max 10 on
 * test_feedback's run. The executor asks after the last warm-up
 * iteration and adds one while the policy has not settled: after 0 (no
 * guided iteration yet), 1 and 2 (a moved), 3 (one clean iteration with
 * the final plan), then after 4 the plan has run clean twice
 * (CAP_STABLE_K): settled from 3. Warm-up 1 + 4 = 5, iterations 3 + 4 =
 * 7: the steady window is iterations 5 and 6, 5000 each. With
 * settle_max 2 it stops at warm-up 3 unsettled, and the steady window
 * (3, 4) is already the stable 5000.
 */
static void test_settle(void **state)
{
	(void)state;
	static const struct {
		int max, extra, settled, warmup;
	} want[] = {{10, 4, 3, 5}, {2, 2, -1, 3}};
	for (size_t i = 0; i < 2; i++) {
		struct wl_workload *w = capuchin_net(100);
		struct pol pol;
		make_policy(&pol, "capuchin", NULL, 0);
		struct hw_profile hw;
		hw_test_profile(&hw, 1 << 20);
		struct ex_cfg cfg = {.hw = &hw, .wl = w, .pol = &pol,
				     .allocator = "arena", .budget = 3200,
				     .iterations = 3, .warmup = 1,
				     .settle_max = want[i].max};
		struct st_run st;
		gms_err err;
		assert_int_equal(ex_run(&cfg, &st, &err), 0);
		st_finish(&st);
		assert_true(st.settle_asked);
		assert_int_equal(st.settle_extra, want[i].extra);
		assert_int_equal(st.settled_iter, want[i].settled);
		assert_int_equal(st.warmup, want[i].warmup);
		assert_int_equal(st.n_iter, want[i].warmup + 2);
		assert_int_equal(st.steady.time, 5000);
		assert_int_equal(st.steady.n_late_in, 0);
		st_run_free(&st);
		pol_destroy(&pol);
		wl_free(w);
	}
}

/* Without feedback the in-triggers stay: every guided iteration is
 * iteration 1's 5300. */
static void test_no_feedback(void **state)
{
	(void)state;
	static const char *const kv[] = {"fa=false"};
	struct st_run st;
	char *rep = NULL;
	run_capuchin(kv, 1, 5, &st, &rep);
	for (int i = 1; i < 5; i++)
		assert_int_equal(st.iter[i].time, 5300);
	assert_true(has_line(rep, "plan_stable_iter 1"));
	free(rep);
	st_run_free(&st);
}

/*
 * Decoupled swapping (5.3): with ds=false, "the next computation can only
 * start when current computation that uses this tensor and this tensor's
 * swapping-out both finish". Figure 7's case needs work after the
 * eviction that does not need the memory: B takes 1500 ns. Stall-free:
 * A @0, Z @100, B @200, P @1700, Q @2700, L @2800, S1..S6 @3800..4300,
 * Gz @4400, S7..S11 @4500..4900, Ga @5000; the measured iteration again
 * evicts a and z at P (1500 bytes); peak period [1700, 2700]; FT z
 * (4400-500) - (200+500) = 3200, a (5000-1000) - (100+1000) = 2900; z's
 * in-trigger S1 (first access before 3900), a's S2 (before 4000): the
 * same plan as above.
 * Guided iteration 1, DS: Z (100-200) evicts a, D2H 100-1100; B
 * (200-1700) evicts z, D2H 1100-1600; P at 1700 finds both freed: no
 * stall. P -2700, Q -2800, L -3800, S1 at 3800 (z in 3800-4300), S2 at
 * 3900 (a in 4300-5300), Gz at 4400 (z IN), S7..S11 4500-5000, Ga at
 * 5000 waits for a until 5300: ends 5400. D2H stall 0, H2D 300.
 * ds=false: B waits for a's swap-out: B 1100-2600 (its swap-out of z,
 * 1100-1600, is done before B ends); every later op 900 later: ends
 * 6300. D2H stall 900, H2D 300.
 */
static void test_decoupled_swapping(void **state)
{
	(void)state;
	/* feedback off: the in-triggers stay as planned */
	static const char *const kv[] = {"fa=false", "ds=false"};
	static const struct {
		size_t n;
		sim_time_t time, d2h, h2d;
	} want[] = {{1, 5400, 0, 300}, {2, 6300, 900, 300}};
	for (size_t i = 0; i < 2; i++) {
		struct st_run st;
		char *rep = NULL;
		run_capuchin_b(1500, kv, want[i].n, 2, &st, &rep);
		assert_non_null(strstr(rep, "plan z swap evict 2 back 3 trigger s1:1 "));
		assert_non_null(strstr(rep, "plan a swap evict 2 back 3 trigger s2:1 "));
		assert_int_equal(st.iter[1].time, want[i].time);
		assert_int_equal(st.iter[1].stall[ST_STALL_D2H], want[i].d2h);
		assert_int_equal(st.iter[1].stall[ST_STALL_H2D], want[i].h2d);
		free(rep);
		st_run_free(&st);
	}
}

/*
 * Every mode on every generator (tf-graph and tf-eager, batch 2) and on
 * every shipped trace, under memory pressure: the budget keeps the
 * whole-run tensors (parameters, optimizer state) and 60% of what the
 * framework policy needs beyond them. Each run must complete its three
 * iterations (measured, then guided) without an engine error or an OOM,
 * and with a plan (the measured iteration had to evict). */
static void run_all_modes(const struct wl_workload *w, const char *what)
{
	static const char *const modes[] = {"mode=hybrid", "mode=swap-only",
					    "mode=recompute-only"};
	run_under_pressure(w, what, "capuchin", modes, 3, "plan_swaps",
			   pressure_budget(w), false);
}

static void test_all_generators(void **state)
{
	(void)state;
	static const enum wl_framework fws[] = {WL_FW_TF_GRAPH, WL_FW_TF_EAGER};
	for (const struct wl_gen *g = wl_gens; g->name; g++)
		for (size_t f = 0; f < 2 && !g->arch; f++) {
			/* (not the language models, issue 31: llama3-8b's
			 * fp32 weights exceed the 64 GiB test device;
			 * tests/test_gen_llm.c runs them small) */
			struct wl_workload *w =
				gen_build_ok(g->name, 2, 0, fws[f], WL_OPTIM_SGD);
			char what[96];
			snprintf(what, sizeof what, "%s/%s", g->name,
				 w->framework);
			run_all_modes(w, what);
			wl_free(w);
		}
}

static void test_all_traces(void **state)
{
	(void)state;
	static const char *const logs[] = {DTR_RESNET32, DTR_TRANSFORMER,
					   DTR_UNET};
	for (size_t i = 0; i < 3; i++) {
		gms_err err;
		char path[GMS_PATH_MAX];
		dtr_path_or_skip(logs[i], path, sizeof path);
		struct wl_workload *w = wl_load_dtr(path, &err);
		if (!w)
			fail_msg("%s", err.msg);
		run_all_modes(w, logs[i]);
		wl_free(w);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plan),
		cmocka_unit_test(test_feedback),
		cmocka_unit_test(test_feedback_steps),
		cmocka_unit_test(test_settle),
		cmocka_unit_test(test_no_feedback),
		cmocka_unit_test(test_decoupled_swapping),
		cmocka_unit_test(test_all_generators),
		cmocka_unit_test(test_all_traces),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
