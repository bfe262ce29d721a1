/*
 * test_exec_edges.c - regression tests for engine edge cases found in
 * review: a reader's input released while the reader waits for memory,
 * algorithm picks in before_op, several pending waits, derate with
 * back-to-back copies, copy issue times, drops of a tensor being written,
 * stall cause on a shared copy engine, recompute requested from
 * on_access. Each timeline is worked out in its comment. (The hooks talk
 * to the tests through file-scope variables: test code only.)
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
#include "../sim/eng.h"
#include "../sim/ev.h"

/* forward ops */
#define OP(w, n, t, in, nin, out, nout) \
	OPX(w, n, WL_FWD, t, in, nin, out, nout, NULL, 0)

/* globals for hooks */
static uint32_t g_a, g_s;
static int g_bad;
static sim_time_t g_time;
static sim_time_t g_issued;
static int g_rc;

/* ---- 1. input released while its reader is in PH_ALLOC ----
 * A: x -> a (100 ns)  B: a -> b (100 ns); a, b 1000 B; budget 1500.
 * before_op(B): swap_out(a, RELEASE) without waiting. Allocating b fails;
 * on_alloc_fail answers EX_WAIT (vDNN++). a must stay resident until B,
 * which reads it, has run; so nothing can make room for b (x 100 + a 1000
 * + b 1000 > 1500) and the run ends as OOM -- never with B reading a
 * released tensor. */
static void b1_before(struct pol *p, struct ex *ex, const struct wl_op *op)
{
	(void)p;
	if (op->id == 1)
		assert_int_not_equal(ex_swap_out(ex, g_a, EX_RELEASE),
				     ENG_EVENT_NONE);
}
static enum ex_verdict b1_fail(struct pol *p, struct ex *ex,
			       const struct ex_alloc_req *r)
{
	(void)p; (void)ex; (void)r;
	return EX_WAIT;
}
static void b1_access(struct pol *p, struct ex *ex, const struct ex_access *a)
{
	(void)p;
	if (!a->write) {
		enum ex_state s = ex_tensor_state(ex, a->tensor);
		if (s != TS_IN && s != TS_SWAPPING_OUT) {
			print_message("kernel %u reads tensor %u in state %s\n",
				      a->op, a->tensor, ex_state_names[s]);
			g_bad++;
		}
	}
}
static void test_input_released_before_issue(void **state)
{
	(void)state;
	struct wl_workload *w = wl_new("r1", 1);
	uint32_t x = T(w, "x", 100, WL_INPUT), a = T(w, "a", 1000, WL_ACT),
		 b = T(w, "b", 1000, WL_ACT);
	OP(w, "A", 100, &x, 1, &a, 1);
	OP(w, "B", 100, &a, 1, &b, 1);
	finalize(w);
	g_a = a; g_bad = 0;
	const struct pol_ops ops = {.name = "r1", .before_op = b1_before,
				    .on_alloc_fail = b1_fail,
				    .on_access = b1_access};
	struct pol pol = {.ops = &ops};
	struct st_run st;
	run_hw(w, &pol, 1500, 1, &st, false);
	assert_true(st.oom.hit);
	assert_string_equal(st.oom.tensor, "b");
	assert_int_equal(st.mem.peak_allocated, 1100);
	st_run_free(&st);
	wl_free(w);
	assert_int_equal(g_bad, 0);
}

/* ---- 2. ex_pick_algo in before_op does not apply to this issue ----
 * One op with algos {fast: 1x, slow: 3x}; before_op picks 1 (slow).
 * Expected kernel time 300 in iteration 0. */
static void b2_before(struct pol *p, struct ex *ex, const struct wl_op *op)
{
	(void)p;
	if (op->n_algos)
		assert_int_equal(ex_pick_algo(ex, op->id, 1), 0);
}
static void test_pick_algo_before_op(void **state)
{
	(void)state;
	struct wl_workload *w = wl_new("r2", 1);
	uint32_t x = T(w, "x", 100, WL_INPUT), a = T(w, "a", 100, WL_ACT);
	struct wl_algo al[] = {{"fast", 0, 1.0}, {"slow", 0, 3.0}};
	OPX(w, "A", WL_FWD, 100, &x, 1, &a, 1, al, 2);
	finalize(w);
	const struct pol_ops ops = {.name = "r2", .before_op = b2_before};
	struct pol pol = {.ops = &ops};
	struct st_run st;
	assert_int_equal(run_hw(w, &pol, 0, 2, &st, false), 0);
	sim_time_t t0 = st.iter[0].compute_busy, t1 = st.iter[1].compute_busy;
	st_run_free(&st);
	wl_free(w);
	assert_int_equal(t0, 300);
	assert_int_equal(t1, 300);
}

/* ---- 3. a second ex_wait replaces the first ----
 * op0: x -> s (10 B); after op0: swap s out with release and wait (10 ns).
 * op1: x -> a (1000 B); after op1: ev_d = swap_out(a) (1000 ns D2H),
 * ev_h = swap_in(s) (10 ns H2D); ex_wait(ev_d); ex_wait(ev_h).
 * op2: a, s -> c. Expected: op2 starts after both (>= 1000 ns after op1). */
static void b3_after(struct pol *p, struct ex *ex, const struct wl_op *op)
{
	(void)p;
	if (op->id == 0) {
		eng_event e = ex_swap_out(ex, g_s, EX_RELEASE);
		ex_wait(ex, e);
	} else if (op->id == 1) {
		eng_event ed = ex_swap_out(ex, g_a, 0);
		eng_event eh = ex_swap_in(ex, g_s, ENG_EVENT_NONE);
		assert_int_not_equal(ed, ENG_EVENT_NONE);
		assert_int_not_equal(eh, ENG_EVENT_NONE);
		ex_wait(ex, ed);
		ex_wait(ex, eh);
		g_time = ex_now(ex);
	}
}
static sim_time_t g_op2_start;
static void b3_access(struct pol *p, struct ex *ex, const struct ex_access *a)
{
	(void)p;
	if (a->op == 2)
		g_op2_start = a->time;
	(void)ex;
}
static void test_two_waits(void **state)
{
	(void)state;
	struct wl_workload *w = wl_new("r3", 1);
	uint32_t x = T(w, "x", 100, WL_INPUT), s = T(w, "s", 10, WL_ACT),
		 a = T(w, "a", 1000, WL_ACT), c = T(w, "c", 10, WL_ACT);
	OP(w, "S", 10, &x, 1, &s, 1);
	OP(w, "A", 100, &x, 1, &a, 1);
	uint32_t as[] = {a, s};
	OP(w, "C", 10, as, 2, &c, 1);
	finalize(w);
	g_s = s; g_a = a;
	const struct pol_ops ops = {.name = "r3", .after_op = b3_after,
				    .on_access = b3_access};
	struct pol pol = {.ops = &ops};
	struct st_run st;
	assert_int_equal(run_hw(w, &pol, 0, 1, &st, false), 0);
	print_message("after op1 at %lld, op2 starts %lld, stall d2h %lld h2d %lld\n",
		      (long long)g_time, (long long)g_op2_start,
		      (long long)st.iter[0].stall[ST_STALL_D2H],
		      (long long)st.iter[0].stall[ST_STALL_H2D]);
	/* S 0-10, D2H of s 10-20 (waited), A 20-120, D2H of a 120-1120 and
	 * H2D of s 120-130, both waited: C starts at 1120 */
	assert_int_equal(g_op2_start, 1120);
	assert_int_equal(st.iter[0].stall[ST_STALL_D2H], 1010);
	assert_int_equal(st.iter[0].stall[ST_STALL_H2D], 0);
	st_run_free(&st);
	wl_free(w);
	assert_true(g_op2_start >= g_time + 1000);
}

/* ---- 4. derate: back-to-back copy on one side with latency 0 ----
 * derate 0.5, 1 B/ns alone. H2D: 500 B then 1000 B; D2H: 2000 B, all at 0.
 *   0-1000    both at 0.5: H2D#1 done at 1000, D2H 1500 left
 *   1000-3000 H2D#2 and D2H both at 0.5: H2D#2 done at 3000, D2H 500 left
 *   3000-3500 D2H alone at 1 B/ns: done at 3500. */
static sim_time_t g_done[3];
static void rec_done(void *obj, uint64_t arg)
{
	struct ev_queue *q = obj;
	g_done[arg] = ev_now(q);
}
static void test_derate_back_to_back(void **state)
{
	(void)state;
	struct hw_profile hw;
	hw_test_profile(&hw, 1 << 20);
	hw.link[HW_H2D].derate = hw.link[HW_D2H].derate = 0.5;
	struct ev_queue q;
	ev_init(&q);
	struct eng e;
	assert_int_equal(eng_init(&e, &q, &hw), 0);
	uint64_t bytes[3] = {500, 1000, 2000};
	enum eng_q dir[3] = {ENG_H2D, ENG_H2D, ENG_D2H};
	for (int i = 0; i < 3; i++) {
		struct eng_item it = {.type = ENG_COPY, .q = dir[i],
				      .bytes = bytes[i], .pinned = true,
				      .wait = ENG_EVENT_NONE,
				      .signal = eng_event_new(&e, dir[i]),
				      .done = rec_done, .obj = &q, .arg = i};
		assert_int_equal(eng_issue(&e, &it), 0);
	}
	ev_run(&q, NULL);
	print_message("H2D#1 %lld H2D#2 %lld D2H %lld\n", (long long)g_done[0],
		      (long long)g_done[1], (long long)g_done[2]);
	eng_fini(&e);
	ev_fini(&q);
	assert_int_equal(g_done[0], 1000);
	assert_int_equal(g_done[1], 3000);
	assert_int_equal(g_done[2], 3500);
}

/* ---- 5. ex_copy.issued is never filled ----
 * A: x -> a (100); after A swap a out (no release). Expected issued 100. */
static void b5_after(struct pol *p, struct ex *ex, const struct wl_op *op)
{
	(void)p;
	if (op->id == 0)
		ex_swap_out(ex, g_a, 0);
}
static void b5_copy(struct pol *p, struct ex *ex, const struct ex_copy *c)
{
	(void)p; (void)ex;
	g_issued = c->issued;
}
static void test_copy_issued(void **state)
{
	(void)state;
	struct wl_workload *w = wl_new("r5", 1);
	uint32_t x = T(w, "x", 100, WL_INPUT), a = T(w, "a", 1000, WL_ACT),
		 b = T(w, "b", 10, WL_ACT);
	OP(w, "A", 100, &x, 1, &a, 1);
	OP(w, "B", 100, &a, 1, &b, 1);
	finalize(w);
	g_a = a; g_issued = -1;
	const struct pol_ops ops = {.name = "r5", .after_op = b5_after,
				    .on_copy_done = b5_copy};
	struct pol pol = {.ops = &ops};
	struct st_run st;
	assert_int_equal(run_hw(w, &pol, 0, 1, &st, false), 0);
	st_run_free(&st);
	wl_free(w);
	assert_int_equal(g_issued, 100);
}

/* ---- 6. ex_drop of the tensor the running kernel writes frees it now ----
 * A: x -> a (100 ns, a 1000 B). on_access(write a): ex_drop(a). The block
 * must stay allocated until A's kernel finishes (A writes into it). */
static uint64_t g_alloc_before, g_alloc_after;
static void b6_access(struct pol *p, struct ex *ex, const struct ex_access *a)
{
	(void)p;
	if (a->write && a->tensor == g_a && ex_iter(ex) == 0 && a->count == 1) {
		struct mem_stats ms;
		ex_mem_stats(ex, &ms);
		g_alloc_before = ms.allocated;
		g_rc = ex_drop(ex, g_a);
		ex_mem_stats(ex, &ms);
		g_alloc_after = ms.allocated;
	}
}
static void test_drop_output_being_written(void **state)
{
	(void)state;
	struct wl_workload *w = wl_new("r6", 1);
	uint32_t x = T(w, "x", 100, WL_INPUT), a = T(w, "a", 1000, WL_ACT),
		 b = T(w, "b", 10, WL_ACT);
	OP(w, "A", 100, &x, 1, &a, 1);
	uint32_t xa[] = {x, a};
	OP(w, "B", 100, xa, 2, &b, 1);
	finalize(w);
	g_a = a; g_rc = 99;
	const struct pol_ops ops = {.name = "r6", .on_access = b6_access};
	struct pol pol = {.ops = &ops};
	struct st_run st;
	run_hw(w, &pol, 0, 1, &st, false);
	print_message("drop rc %d, allocated %llu -> %llu while A runs\n", g_rc,
		      (unsigned long long)g_alloc_before,
		      (unsigned long long)g_alloc_after);
	st_run_free(&st);
	wl_free(w);
	assert_true(g_rc < 0 || g_alloc_after == g_alloc_before);
}

/* ---- 6b. ex_drop of an input held by the op waiting for memory ----
 * A: x -> a (a 1000 B); B: x, a -> b (b 1000 B); budget 1500. B is past its
 * input check when b does not fit (x 100 + a 1000 + b 1000). Its
 * on_alloc_fail drops a and retries: a's block must stay (B reads it), so
 * nothing changes (x + a = 1100 B stay allocated) and the retry guard
 * ends the run as OOM on b. */
static enum ex_verdict b6b_fail(struct pol *p, struct ex *ex,
				const struct ex_alloc_req *r)
{
	(void)p;
	(void)r;
	if (ex_tensor_state(ex, g_a) == TS_IN) {
		struct mem_stats ms;
		ex_mem_stats(ex, &ms);
		g_alloc_before = ms.allocated;
		g_rc = ex_drop(ex, g_a);
		ex_mem_stats(ex, &ms);
		g_alloc_after = ms.allocated;
	}
	return EX_RETRY;
}
static void test_drop_held_input(void **state)
{
	(void)state;
	struct wl_workload *w = wl_new("r6b", 1);
	uint32_t x = T(w, "x", 100, WL_INPUT), a = T(w, "a", 1000, WL_ACT),
		 b = T(w, "b", 1000, WL_ACT);
	OP(w, "A", 100, &x, 1, &a, 1);
	uint32_t xa[] = {x, a}; /* x stays alive: a's lineage */
	OP(w, "B", 100, xa, 2, &b, 1);
	finalize(w);
	g_a = a; g_rc = 99;
	const struct pol_ops ops = {.name = "r6b", .on_alloc_fail = b6b_fail};
	struct pol pol = {.ops = &ops};
	struct st_run st;
	run_hw(w, &pol, 1500, 1, &st, false);
	assert_int_equal(g_rc, 0);
	assert_int_equal(g_alloc_before, 1100); /* x and a */
	assert_int_equal(g_alloc_after, 1100);
	assert_true(st.oom.hit);
	assert_string_equal(st.oom.tensor, "b");
	st_run_free(&st);
	wl_free(w);
}

/* ---- 7. shared engine: waiting for a swap-out counts as an H2D stall ----
 * A: x -> a; after A: swap_out(a, 0); ev = swap_out(a, RELEASE) (copy in
 * flight: eng_record(D2H)); wait. Expected stall D2H 1000, H2D 0. */
static void b7_after(struct pol *p, struct ex *ex, const struct wl_op *op)
{
	(void)p;
	if (op->id == 0) {
		ex_swap_out(ex, g_a, 0);
		ex_wait(ex, ex_swap_out(ex, g_a, EX_RELEASE));
	}
}
static void test_shared_engine_stall_cause(void **state)
{
	(void)state;
	struct wl_workload *w = wl_new("r7", 1);
	uint32_t x = T(w, "x", 100, WL_INPUT), a = T(w, "a", 1000, WL_ACT),
		 b = T(w, "b", 10, WL_ACT), c = T(w, "c", 10, WL_ACT);
	OP(w, "A", 100, &x, 1, &a, 1);
	OP(w, "B", 100, &x, 1, &b, 1);
	uint32_t ab[] = {a, b};
	OP(w, "C", 100, ab, 2, &c, 1);
	finalize(w);
	g_a = a;
	const struct pol_ops ops = {.name = "r7", .after_op = b7_after};
	struct pol pol = {.ops = &ops};
	struct st_run st;
	assert_int_equal(run_hw(w, &pol, 0, 1, &st, true), 0);
	sim_time_t d = st.iter[0].stall[ST_STALL_D2H],
		   h = st.iter[0].stall[ST_STALL_H2D];
	print_message("shared: stall d2h %lld h2d %lld\n", (long long)d,
		      (long long)h);
	st_run_free(&st);
	wl_free(w);
	assert_int_equal(d, 1000);
}

/* A: x -> a; B: a -> b; C: x -> c; D: a, c -> d; every tensor 100 B,
 * every op 100 ns. Returns a's id. */
static uint32_t abcd(struct wl_workload *w)
{
	uint32_t x = T(w, "x", 100, WL_INPUT), a = T(w, "a", 100, WL_ACT),
		 b = T(w, "b", 100, WL_ACT), c = T(w, "c", 100, WL_ACT),
		 d = T(w, "d", 100, WL_ACT);
	OP(w, "A", 100, &x, 1, &a, 1);
	OP(w, "B", 100, &a, 1, &b, 1);
	OP(w, "C", 100, &x, 1, &c, 1);
	uint32_t ac[] = {a, c};
	OP(w, "D", 100, ac, 2, &d, 1);
	finalize(w);
	return a;
}

/* ---- 8. ex_recompute from on_access (Capuchin in-trigger) refused ----
 * A: x -> a; B: a -> b; C: x -> c; D: a, c -> d. after B drop a;
 * on_access of C (the trigger) ex_recompute(a). */
static void b8_after(struct pol *p, struct ex *ex, const struct wl_op *op)
{
	(void)p;
	if (op->id == 1)
		assert_int_equal(ex_drop(ex, g_a), 0);
}
static void b8_access(struct pol *p, struct ex *ex, const struct ex_access *a)
{
	(void)p;
	if (a->op == 2 && !a->write)
		g_rc = ex_recompute(ex, g_a);
}
static void test_recompute_from_on_access(void **state)
{
	(void)state;
	struct wl_workload *w = wl_new("r8", 1);
	uint32_t a = abcd(w);
	g_a = a; g_rc = 99;
	const struct pol_ops ops = {.name = "r8", .after_op = b8_after,
				    .on_access = b8_access};
	struct pol pol = {.ops = &ops};
	struct st_run st;
	assert_int_equal(run_hw(w, &pol, 0, 1, &st, false), 0);
	st_run_free(&st);
	wl_free(w);
	assert_int_equal(g_rc, 0);
}

/* ---- 9. high-end placement follows an in-place chain (issue 12) ----
 * Units of U = 512 B (the highend model rounds to 512); a 10 U pool.
 *   A: x (1 U, input) -> c (4 U)      B, in place: c -> r (4 U)
 *   C: r -> d (3 U)                   D: d, x -> e (5 U)
 * The policy marks r high (as vDNN++ marks a tensor it will offload); r
 * never gets a block of its own: it takes over c's. So c's block must go
 * high. Marked: x [0,1), c = r [6,10), d best fit [1,4); after C, r's
 * last use, [4,10) is free and e (5 U) fits. Were c placed low: c [1,5),
 * d [5,8), and after C the free space is [1,5) and [8,10): e does not
 * fit -- which is what happens with nothing marked (the control). */
static uint32_t g_mark;
static int b9_plan(struct pol *p, struct ex *ex, gms_err *err)
{
	(void)p;
	(void)err;
	if (g_mark != WL_NONE)
		ex_place_high(ex, g_mark, true);
	return 0;
}
static void test_high_through_inplace(void **state)
{
	(void)state;
	const uint64_t U = 512;
	struct wl_workload *w = wl_new("r9", 1);
	uint32_t x = T(w, "x", U, WL_INPUT), c = T(w, "c", 4 * U, WL_ACT),
		 r = T(w, "r", 4 * U, WL_ACT), d = T(w, "d", 3 * U, WL_ACT),
		 e = T(w, "e", 5 * U, WL_ACT);
	OP(w, "A", 100, &x, 1, &c, 1);
	gms_err err;
	struct wl_op_desc b = {.name = "B", .type = OT_RELU, .phase = WL_FWD,
			       .in = &c, .n_in = 1, .out = &r, .n_out = 1,
			       .time = 100, .recomputable = true,
			       .inplace = true};
	if (wl_add_op(w, &b, &err) == WL_NONE)
		fail_msg("%s", err.msg);
	OP(w, "C", 100, &r, 1, &d, 1);
	uint32_t dx[2] = {d, x};
	OP(w, "D", 100, dx, 2, &e, 1);
	finalize(w);
	const struct pol_ops ops = {.name = "r9", .plan = b9_plan};
	struct pol pol = {.ops = &ops};
	struct hw_profile hw;
	hw_test_profile(&hw, 1 << 20);
	struct ex_cfg cfg = {.hw = &hw, .wl = w, .pol = &pol,
			     .allocator = "highend", .budget = 10 * U,
			     .iterations = 1};
	struct st_run st;
	g_mark = r;
	assert_int_equal(ex_run(&cfg, &st, &err), 0);
	assert_false(st.oom.hit);
	st_run_free(&st);
	g_mark = WL_NONE;
	assert_int_equal(ex_run(&cfg, &st, &err), 0);
	assert_true(st.oom.hit);
	assert_string_equal(st.oom.tensor, "e");
	st_run_free(&st);
	wl_free(w);
}

/* ---- 10. before_access sees a late prefetch; stall-free time ----
 * 1 B/ns both ways. x input (100 B); a 150 B.
 *   A: x -> a   0-100       B: a -> b   100-200
 *   C: x -> c   200-300     C2: x -> e  300-400     D: a, c -> d
 * on_access of B's read of a: swap_out(a, release): D2H 100-250, a OUT
 * at 250. on_access of C2 (the in-trigger, at 300): swap_in(a): H2D
 * 300-450. D is prepared at 400: before_access must see a SWAPPING_IN,
 * with count = orig = 3 (A's write, B's read, D's read to come). The
 * executor then waits 50 ns (an H2D stall): D starts at 450, and at D's
 * on_access ex_stalled() = 50, so the stall-free time of the access is
 * 450 - 50 = 400, when D would have started with infinite memory. */
static int g_seen_state = -1;
static uint32_t g_seen_count, g_seen_orig;
static sim_time_t g_d_time, g_d_stalled;
static void b10_access(struct pol *p, struct ex *ex, const struct ex_access *a)
{
	(void)p;
	if (a->tensor == g_a && a->op == 1)
		assert_int_not_equal(ex_swap_out(ex, g_a, EX_RELEASE),
				     ENG_EVENT_NONE);
	if (a->op == 3 && !a->write)
		assert_int_not_equal(ex_swap_in(ex, g_a, ENG_EVENT_NONE),
				     ENG_EVENT_NONE);
	if (a->op == 4 && a->tensor == g_a) {
		g_d_time = a->time - ex_iter_start(ex);
		g_d_stalled = ex_stalled(ex);
	}
}
static void b10_before(struct pol *p, struct ex *ex, const struct ex_access *a)
{
	(void)p;
	if (a->op == 4 && a->tensor == g_a) {
		g_seen_state = ex_tensor_state(ex, g_a);
		g_seen_count = a->count;
		g_seen_orig = a->orig;
	}
}
static void test_before_access_sees_swapping_in(void **state)
{
	(void)state;
	struct wl_workload *w = wl_new("r10", 1);
	uint32_t x = T(w, "x", 100, WL_INPUT), a = T(w, "a", 150, WL_ACT),
		 b = T(w, "b", 10, WL_ACT), c = T(w, "c", 10, WL_ACT),
		 e = T(w, "e", 10, WL_ACT), d = T(w, "d", 10, WL_ACT);
	OP(w, "A", 100, &x, 1, &a, 1);
	OP(w, "B", 100, &a, 1, &b, 1);
	OP(w, "C", 100, &x, 1, &c, 1);
	OP(w, "C2", 100, &x, 1, &e, 1);
	uint32_t ac[] = {a, c};
	OP(w, "D", 100, ac, 2, &d, 1);
	finalize(w);
	g_a = a;
	const struct pol_ops ops = {.name = "r10", .on_access = b10_access,
				    .before_access = b10_before};
	struct pol pol = {.ops = &ops};
	struct st_run st;
	assert_int_equal(run_hw(w, &pol, 0, 1, &st, false), 0);
	assert_int_equal(g_seen_state, TS_SWAPPING_IN);
	assert_int_equal(g_seen_count, 3);
	assert_int_equal(g_seen_orig, 3);
	assert_int_equal(st.iter[0].stall[ST_STALL_H2D], 50);
	assert_int_equal(g_d_time, 450);
	assert_int_equal(g_d_stalled, 50);
	st_run_free(&st);
	wl_free(w);
}

/* ---- 11. access keys stay stable across a recomputation ----
 * A: x -> a; B: a -> b; C: x -> c; D: a, c -> d. After B, drop a; D's
 * read of a makes the executor re-run A. The accesses of a, in order:
 *   A writes a            count 1, orig 1
 *   B reads a             count 2, orig 2
 *   before_access of D    count 3, orig 3, state RECOMPUTE
 *   A re-run writes a     count 3, orig 2 (recompute: not an own access)
 *   D reads a             count 4, orig 3 */
#define B11_MAX 8
static struct ex_access g_acc[B11_MAX];
static int g_acc_state[B11_MAX];
static size_t g_n_acc;
static void b11_note(struct ex *ex, const struct ex_access *a, int st)
{
	if (a->tensor == g_a && g_n_acc < B11_MAX) {
		g_acc_state[g_n_acc] = st;
		g_acc[g_n_acc++] = *a;
	}
	(void)ex;
}
static void b11_access(struct pol *p, struct ex *ex, const struct ex_access *a)
{
	(void)p;
	b11_note(ex, a, -1);
}
static void b11_before(struct pol *p, struct ex *ex, const struct ex_access *a)
{
	(void)p;
	b11_note(ex, a, ex_tensor_state(ex, a->tensor));
}
static void b11_after(struct pol *p, struct ex *ex, const struct wl_op *op)
{
	(void)p;
	if (op->id == 1)
		assert_int_equal(ex_drop(ex, g_a), 0);
}
static void test_access_keys_stable(void **state)
{
	(void)state;
	struct wl_workload *w = wl_new("r11", 1);
	uint32_t a = abcd(w);
	g_a = a;
	g_n_acc = 0;
	const struct pol_ops ops = {.name = "r11", .on_access = b11_access,
				    .before_access = b11_before,
				    .after_op = b11_after};
	struct pol pol = {.ops = &ops};
	struct st_run st;
	assert_int_equal(run_hw(w, &pol, 0, 1, &st, false), 0);
	/* B's before_access of a (IN), then the five of the comment */
	assert_int_equal(g_n_acc, 6);
	static const struct {
		uint32_t op, count, orig;
		bool write, rec;
		int state;
	} want[] = {{0, 1, 1, true, false, -1},	 {1, 2, 2, false, false, TS_IN},
		    {1, 2, 2, false, false, -1}, {3, 3, 3, false, false, TS_RECOMPUTE},
		    {0, 3, 2, true, true, -1},	 {3, 4, 3, false, false, -1}};
	for (size_t i = 0; i < 6; i++) {
		assert_int_equal(g_acc[i].op, want[i].op);
		assert_int_equal(g_acc[i].count, want[i].count);
		assert_int_equal(g_acc[i].orig, want[i].orig);
		assert_int_equal(g_acc[i].write, want[i].write);
		assert_int_equal(g_acc[i].recompute, want[i].rec);
		assert_int_equal(g_acc_state[i], want[i].state);
	}
	st_run_free(&st);
	wl_free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_input_released_before_issue),
		cmocka_unit_test(test_pick_algo_before_op),
		cmocka_unit_test(test_two_waits),
		cmocka_unit_test(test_derate_back_to_back),
		cmocka_unit_test(test_copy_issued),
		cmocka_unit_test(test_drop_output_being_written),
		cmocka_unit_test(test_drop_held_input),
		cmocka_unit_test(test_shared_engine_stall_cause),
		cmocka_unit_test(test_high_through_inplace),
		cmocka_unit_test(test_recompute_from_on_access),
		cmocka_unit_test(test_before_access_sees_swapping_in),
		cmocka_unit_test(test_access_keys_stable),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
