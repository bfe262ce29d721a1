/*
 * test_exec.c - executor timelines worked out by hand.
 *
 * All runs use hw_test_profile (a copy of b bytes takes b ns; kernels
 * have explicit times) and the `arena` allocator (no placement, so memory
 * figures are plain sums). Each test states its timeline in a comment.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "../policies/passive.h"
#include "../sim/trace.h"
#include "testkit.h"
#include "wlkit.h"

/* ops of one phase with no algorithm choices */
#define OP(w, name, ph, time, in, n_in, out, n_out) \
	OPX(w, name, ph, time, in, n_in, out, n_out, NULL, 0)

/* ---- a scripted test policy ----
 * Acts on named ops: after_op / before_op of the op with the given id. */

enum act { A_NONE, A_SWAP_OUT_SYNC, A_SWAP_IN_SYNC, A_DROP, A_COPY_OUT };
struct script {
	uint32_t op;	/* op id the action is attached to */
	bool before;	/* before_op (else after_op) */
	enum act act;	/* what to do */
	uint32_t t;	/* tensor */
};
struct script_state {
	const struct script *s; /* actions */
	size_t n;		/* how many */
};

static void run_script(struct pol *p, struct ex *ex, const struct wl_op *op,
		       bool before)
{
	struct script_state *st = p->priv;
	for (size_t i = 0; i < st->n; i++) {
		const struct script *s = &st->s[i];
		if (s->op != op->id || s->before != before)
			continue;
		eng_event ev;
		switch (s->act) {
		case A_SWAP_OUT_SYNC:
			ev = ex_swap_out(ex, s->t, EX_RELEASE);
			assert_int_not_equal(ev, ENG_EVENT_NONE);
			ex_wait(ex, ev);
			break;
		case A_SWAP_IN_SYNC:
			ev = ex_swap_in(ex, s->t, ENG_EVENT_NONE);
			assert_int_not_equal(ev, ENG_EVENT_NONE);
			ex_wait(ex, ev);
			break;
		case A_COPY_OUT: /* a host copy, no release, not waited for */
			ev = ex_swap_out(ex, s->t, 0);
			assert_int_not_equal(ev, ENG_EVENT_NONE);
			break;
		case A_DROP:
			if (ex_drop(ex, s->t) < 0)
				fail_msg("%s", ex_last_error(ex));
			break;
		default:
			break;
		}
	}
}

static void script_before(struct pol *p, struct ex *ex, const struct wl_op *op)
{
	run_script(p, ex, op, true);
}

static void script_after(struct pol *p, struct ex *ex, const struct wl_op *op)
{
	run_script(p, ex, op, false);
}

static const struct pol_ops script_ops = {
	.name = "script",
	.summary = "test policy",
	.before_op = script_before,
	.after_op = script_after,
};

static int run(const struct wl_workload *w, struct pol *pol, uint64_t budget,
	       int iters, struct st_run *st)
{
	return run_hw(w, pol, budget, iters, st, false);
}

static void script_run(const struct wl_workload *w, const struct script *s,
		       size_t n, uint64_t budget, struct st_run *st)
{
	struct script_state ss = {s, n};
	struct pol pol = {.ops = &script_ops, .priv = &ss};
	assert_int_equal(run(w, &pol, budget, 2, st), 0);
}

/* script_run on profile hw with an allocator, budget and pool size. */
static void script_run_on(const struct wl_workload *w, const struct script *s,
			  size_t n, const struct hw_profile *hw,
			  const char *allocator, uint64_t budget,
			  uint64_t pool_size, int iters, struct st_run *st)
{
	struct script_state ss = {s, n};
	struct pol pol = {.ops = &script_ops, .priv = &ss};
	assert_int_equal(
		run_on(w, &pol, hw, allocator, budget, pool_size, iters, st),
		0);
}

/* Run a registered policy (with optional "key=value" parameters). */
static void policy_run(const struct wl_workload *w, const char *name,
		       const char *kv, uint64_t budget, int iters,
		       struct st_run *st)
{
	struct pol pol;
	gms_err err = {{0}};
	if (pol_create(&pol, name, NULL, NULL, &kv, kv ? 1 : 0, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(run(w, &pol, budget, iters, st), 0);
	pol_destroy(&pol);
}

/*
 * Three ops; the middle one runs while a is on the host.
 *   A: x -> a (100 ns)   B: x -> b (100 ns)   C: a, b -> c (100 ns)
 *   x 100 B, a 1000 B, b 500 B, c 100 B.
 * Policy: after A, swap a out with release and wait; before C, swap it in
 * and wait.
 *   0-100     A                      in use: x + a = 1100
 *   100-1100  D2H of a (stall d2h 1000); a released at 1100 -> 100
 *   1100-1200 B                      x + b = 600, then x freed -> 500
 *   1200-2200 H2D of a (stall h2d 1000)  -> 1500
 *   2200-2300 C                      + c = 1600 (the peak); then all freed
 * Iteration 2300 ns, compute 300, 1000 B each way, pinned peak 1000.
 */
static struct wl_workload *swap3_wl(void)
{
	struct wl_workload *w = wl_new("swap3", 1);
	uint32_t x = T(w, "x", 100, WL_INPUT), a = T(w, "a", 1000, WL_ACT),
		 b = T(w, "b", 500, WL_ACT), c = T(w, "c", 100, WL_ACT);
	OP(w, "A", WL_FWD, 100, &x, 1, &a, 1);
	OP(w, "B", WL_FWD, 100, &x, 1, &b, 1);
	uint32_t ab[] = {a, b};
	OP(w, "C", WL_FWD, 100, ab, 2, &c, 1);
	finalize(w);
	return w;
}

/* swap3's script: a (tensor 1) out after A, back before C */
static const struct script swap3_script[] = {{0, false, A_SWAP_OUT_SYNC, 1},
					     {2, true, A_SWAP_IN_SYNC, 1}};

static void test_swap_out_and_back(void **state)
{
	(void)state;
	struct wl_workload *w = swap3_wl();
	struct st_run st;
	script_run(w, swap3_script, 2, 0, &st);
	assert_false(st.oom.hit);
	assert_int_equal(st.n_iter, 2);
	for (int i = 0; i < 2; i++) {
		const struct st_iter *it = &st.iter[i];
		assert_int_equal(it->start, 2300 * i);
		assert_int_equal(it->time, 2300);
		assert_int_equal(it->compute_busy, 300);
		assert_int_equal(it->stall[ST_STALL_D2H], 1000);
		assert_int_equal(it->stall[ST_STALL_H2D], 1000);
		assert_int_equal(it->stall[ST_STALL_MEMORY], 0);
		assert_int_equal(it->bytes_d2h, 1000);
		assert_int_equal(it->bytes_h2d, 1000);
		assert_int_equal(it->n_swap_out, 1);
		assert_int_equal(it->n_swap_in, 1);
	}
	assert_int_equal(st.steady.time, 2300);
	assert_int_equal(st.mem.peak_allocated, 1600);
	assert_int_equal(st.mem.allocated, 0);
	assert_int_equal(st.pinned_peak, 1000);
	st_run_free(&st);
	wl_free(w);
}

/*
 * Recomputation, recursively.
 *   A: x -> a (100)   B: a -> b (200)   C: b -> c (300)
 *   D: b, a, c, x -> d (50)
 * After C the policy drops b, then a (x is still alive: D reads it).
 * D's first input b is RECOMPUTE: its producer B needs a, also RECOMPUTE,
 * so A is re-run first, then B, then D.
 *   A 0-100, B 100-300, C 300-600, A' 600-700, B' 700-900, D 900-950.
 * Recompute time 300 ns in 2 kernels (FLOPs 100 + 200 as given).
 * Memory: x 100, a 1000, b 1000, c 100, d 10: after C 2200, drops -> 200,
 * a' -> 1200, b' -> 2200, d -> 2210 (the peak, as without drops).
 */
static void test_recompute_chain(void **state)
{
	(void)state;
	struct wl_workload *w = wl_new("rec4", 1);
	uint32_t x = T(w, "x", 100, WL_INPUT), a = T(w, "a", 1000, WL_ACT),
		 b = T(w, "b", 1000, WL_ACT), c = T(w, "c", 100, WL_ACT),
		 d = T(w, "d", 10, WL_ACT);
	OP(w, "A", WL_FWD, 100, &x, 1, &a, 1);
	OP(w, "B", WL_FWD, 200, &a, 1, &b, 1);
	OP(w, "C", WL_FWD, 300, &b, 1, &c, 1);
	uint32_t in[] = {b, a, c, x};
	OP(w, "D", WL_BWD, 50, in, 4, &d, 1);
	finalize(w);
	const struct script s[] = {{2, false, A_DROP, b}, {2, false, A_DROP, a}};
	struct st_run st;
	script_run(w, s, 2, 0, &st);
	assert_false(st.oom.hit);
	assert_false(st.failed);
	const struct st_iter *it = &st.iter[1];
	assert_int_equal(it->time, 950);
	assert_int_equal(it->compute_busy, 950);
	assert_int_equal(it->recompute, 300);
	assert_int_equal(it->n_recompute, 2);
	assert_true(it->recompute_flops == 300.0);
	assert_int_equal(it->n_drop, 2);
	assert_int_equal(it->n_kernels, 6);
	assert_int_equal(st.mem.peak_allocated, 2210);
	st_run_free(&st);
	wl_free(w);
}

/* A drop that would need a freed tensor is refused. x is read only by A,
 * so it is gone after A; dropping a (whose producer reads x) must fail. */
static void refuse_after(struct pol *p, struct ex *ex, const struct wl_op *op)
{
	(void)p;
	if (op->id == 1) {
		assert_int_equal(ex_drop(ex, 1), -1);
		assert_non_null(strstr(ex_last_error(ex), "already freed"));
		assert_int_equal(ex_tensor_state(ex, 1), TS_IN);
	}
}

static void test_drop_refused_without_lineage(void **state)
{
	(void)state;
	struct wl_workload *w = wl_new("lin", 1);
	uint32_t x = T(w, "x", 100, WL_INPUT), a = T(w, "a", 100, WL_ACT),
		 b = T(w, "b", 100, WL_ACT), c = T(w, "c", 100, WL_ACT);
	OP(w, "A", WL_FWD, 10, &x, 1, &a, 1);
	OP(w, "B", WL_FWD, 10, &a, 1, &b, 1);
	uint32_t ab[] = {a, b};
	OP(w, "C", WL_FWD, 10, ab, 2, &c, 1);
	finalize(w);
	const struct pol_ops ops = {.name = "refuse", .after_op = refuse_after};
	struct pol pol = {.ops = &ops};
	struct st_run st;
	assert_int_equal(run(w, &pol, 0, 1, &st), 0);
	assert_false(st.oom.hit);
	st_run_free(&st);
	wl_free(w);
}

/* ---- regenerability on a Fibonacci DAG (issue 12, item 4) ----
 * t0 (input, 100 B) is read by op1, op2 and the last op "sink"; t1 =
 * op1(t0); tk = opk(t(k-1), t(k-2)) for k = 2..100; sink: t100, t0 -> s.
 * Every op takes 10 ns; every tensor is 100 B. After op100, t1 .. t99 are
 * all freed (t99's only later reader was op100), so dropping t100 needs
 * every one of them regenerated: op1 .. op100's producers, back 99 steps
 * (beyond the old depth limit of 64, and 2^99-ish paths for a walk
 * without visited marks). */
#define FIB_N 100

/* The DAG; op `stiff` (1-based, 0: none) is not recomputable. */
static struct wl_workload *fib_wl(uint32_t stiff)
{
	struct wl_workload *w = wl_new("fib", 1);
	uint32_t t[FIB_N + 1];
	char name[16];
	for (uint32_t k = 0; k <= FIB_N; k++) {
		snprintf(name, sizeof name, "t%u", k);
		t[k] = T(w, name, 100, k ? WL_ACT : WL_INPUT);
	}
	uint32_t s = T(w, "s", 100, WL_ACT);
	for (uint32_t k = 1; k <= FIB_N; k++) {
		uint32_t in[2] = {t[k - 1], k > 1 ? t[k - 2] : 0};
		snprintf(name, sizeof name, "op%u", k);
		gms_err err;
		struct wl_op_desc d = {.name = name, .type = OT_OTHER,
				       .phase = WL_FWD, .in = in,
				       .n_in = k > 1 ? 2 : 1, .out = &t[k],
				       .n_out = 1, .time = 10, .flops = 10,
				       .recomputable = k != stiff};
		if (wl_add_op(w, &d, &err) == WL_NONE)
			fail_msg("%s", err.msg);
	}
	uint32_t last[] = {t[FIB_N], t[0]};
	OP(w, "sink", WL_FWD, 10, last, 2, &s, 1);
	finalize(w);
	return w;
}

/*
 * The drop is accepted. At sink, t100 is RECOMPUTE: op100 is pushed, its
 * first input t99 is RECOMPUTE, and so on down to op1 (t0 is alive); then
 * op1, op2, ..., op100 re-run in turn, each finding both inputs
 * regenerated: 100 recompute kernels, 100 x 10 = 1000 ns, 1 drop.
 * Kernels: 101 ops + 100 = 201; iteration 201 x 10 = 2010 ns (no copies).
 * Memory (arena, 100 B each): forward holds t0, t(k-2), t(k-1) and
 * allocates tk: 400 B, t(k-2) freed after opk. After op100: t0 and t100
 * (200 B); the drop leaves t0. Regenerating: opk allocates tk while t0,
 * t(k-2), t(k-1) are held (t(k-2) by t(k-1)'s lineage until opk issues):
 * 400 B again, never more; sink: t0, t100, s = 300 B. Peak 400 B.
 */
static void test_fib_drop_regenerates_all(void **state)
{
	(void)state;
	struct wl_workload *w = fib_wl(0);
	uint32_t t100 = tensor_id(w, "t100");
	const struct script s[] = {{op_id(w, "op100"), false, A_DROP, t100}};
	struct st_run st;
	script_run(w, s, 1, 0, &st);
	assert_false(st.oom.hit);
	assert_false(st.failed);
	assert_int_equal(st.n_iter, 2);
	for (int i = 0; i < 2; i++) {
		const struct st_iter *it = &st.iter[i];
		assert_int_equal(it->n_drop, 1);
		assert_int_equal(it->n_recompute, FIB_N);
		assert_int_equal(it->recompute, 10 * FIB_N);
		assert_int_equal(it->n_kernels, 2 * FIB_N + 1);
		assert_int_equal(it->time, 10 * (2 * FIB_N + 1));
	}
	assert_int_equal(st.mem.peak_allocated, 400);
	st_run_free(&st);
	wl_free(w);
}

/* op1 is not recomputable: t1, 99 steps back from t100, cannot be had
 * again, so the drop is refused, twice in a row (the second walk must
 * not trust the first one's marks), and t100 stays resident. */
static uint32_t g_fib_t100;
static int g_fib_refusals;
static void fib_refuse_after(struct pol *p, struct ex *ex,
			     const struct wl_op *o)
{
	(void)p;
	if (strcmp(o->name, "op100") != 0)
		return;
	for (int k = 0; k < 2; k++) {
		assert_int_equal(ex_drop(ex, g_fib_t100), -1);
		assert_has(ex_last_error(ex), "already freed");
		assert_int_equal(ex_tensor_state(ex, g_fib_t100), TS_IN);
		g_fib_refusals++;
	}
}

static void test_fib_drop_refused_deep(void **state)
{
	(void)state;
	struct wl_workload *w = fib_wl(1);
	g_fib_t100 = tensor_id(w, "t100");
	g_fib_refusals = 0;
	const struct pol_ops ops = {.name = "refuse",
				    .after_op = fib_refuse_after};
	struct pol pol = {.ops = &ops};
	struct st_run st;
	assert_int_equal(run(w, &pol, 0, 2, &st), 0);
	assert_false(st.oom.hit);
	assert_int_equal(g_fib_refusals, 4);
	assert_int_equal(st.iter[1].n_drop, 0);
	assert_int_equal(st.iter[1].n_recompute, 0);
	assert_int_equal(st.iter[1].time, 10 * (FIB_N + 1));
	st_run_free(&st);
	wl_free(w);
}

/* ---- framework and ondemand on a budget ----
 *   A: x -> a   B: a -> b   C: b -> c   D: a, c -> d     (100 ns each)
 *   x 100 B, a b c 1000 B, d 100 B; budget 2200 B.
 * Without offload: after B, x is freed and a, b are live (2000); C needs
 * 1000 more -> 3000 > 2200: OOM at op C, tensor c, 1000 bytes.
 * ondemand: the access list is x, a (A), a, b (B); x is freed, a is the
 * first candidate (C reads only b) and of the requested size (1000 B, under
 * twice 1000): a goes to the host synchronously,
 * 200-1200 (stall d2h 1000), released -> 1000; c fits; C 1200-1300; b
 * freed after C. D needs a: swapped in 1300-2300 (stall h2d 1000); d;
 * D 2300-2400. Iteration 2400 ns; peak 2100 (a, c, d).
 */
static struct wl_workload *budget_wl(void)
{
	struct wl_workload *w = wl_new("budget4", 1);
	uint32_t x = T(w, "x", 100, WL_INPUT), a = T(w, "a", 1000, WL_ACT),
		 b = T(w, "b", 1000, WL_ACT), c = T(w, "c", 1000, WL_ACT),
		 d = T(w, "d", 100, WL_ACT);
	OP(w, "A", WL_FWD, 100, &x, 1, &a, 1);
	OP(w, "B", WL_FWD, 100, &a, 1, &b, 1);
	OP(w, "C", WL_FWD, 100, &b, 1, &c, 1);
	uint32_t ac[] = {a, c};
	OP(w, "D", WL_BWD, 100, ac, 2, &d, 1);
	finalize(w);
	return w;
}

static void test_framework_oom_names_op_and_bytes(void **state)
{
	(void)state;
	struct wl_workload *w = budget_wl();
	struct st_run st;
	policy_run(w, "framework", NULL, 2200, 2, &st);
	assert_true(st.oom.hit);
	assert_int_equal(st.oom.iter, 0);
	assert_string_equal(st.oom.op, "C");
	assert_string_equal(st.oom.tensor, "c");
	assert_int_equal(st.oom.bytes, 1000);
	assert_int_equal(st.n_iter, 0);
	st_run_free(&st);
	wl_free(w);
}

static void test_ondemand_evicts_and_swaps_back(void **state)
{
	(void)state;
	struct wl_workload *w = budget_wl();
	struct st_run st;
	policy_run(w, "ondemand", NULL, 2200, 2, &st);
	assert_false(st.oom.hit);
	for (int i = 0; i < 2; i++) {
		const struct st_iter *it = &st.iter[i];
		assert_int_equal(it->time, 2400);
		assert_int_equal(it->compute_busy, 400);
		assert_int_equal(it->stall[ST_STALL_D2H], 1000);
		assert_int_equal(it->stall[ST_STALL_H2D], 1000);
		assert_int_equal(it->n_swap_out, 1);
		assert_int_equal(it->n_swap_in, 1);
	}
	assert_int_equal(st.mem.peak_allocated, 2100);
	assert_int_equal(st.pinned_peak, 1000);
	st_run_free(&st);
	wl_free(w);
}

/* ---- which tensors ondemand evicts (Capuchin 5.2: "approximate size") ----
 *   A: x -> a   H: x -> h   B: x -> b   C: x -> c        (forward)
 *   D: c -> d   E: a, h, b -> e                          (backward)
 * 100 ns each; x 100 B, a 400, h 2000, b 1000, c 1000, d e 10 B.
 * C requests c, 1000 B: in use x + a + h + b = 3500, budget 3600 -> OOM.
 * The access list so far is x, a (A), x, h (H), x, b (B); x is read by C
 * (not a candidate). Candidates in order: a 400, h 2000, b 1000.
 *   evict=size: a is under the request, h = 2 x 1000 is not under twice it
 *     (BFC would split its chunk), b (1000 <= 1000 < 2000) is approximate:
 *     b alone goes out. 1 swap-out, 1000 B D2H, D2H 300-1300 (stall
 *     1000); C 1300-1400 (in use a h c x = 3500); x freed; D 1400-1500
 *     (3410), c freed (2410); E swaps b in 1500-2500 (stall 1000, 3410),
 *     e (3420), E 2500-2600. Iteration 2600 ns; pinned peak 1000.
 *   evict=order: from the start until the bytes cover 1000: a (400), then
 *     h (2400 >= 1000). 2 swap-outs, 2400 B D2H, 300-2700 (stall 2400);
 *     C 2700-2800 (in use x b c = 2100); D 2800-2900; E swaps a and h in,
 *     2400 B, 2900-5300 (3410 + e = 3420), E 5300-5400. Iteration 5400 ns;
 *   pinned peak 2400.
 * Without b (budget 3000: in use x a h = 2500, + c = 3500 -> OOM at C) no
 * tensor is of the size, so evict=size falls back to order: a and h,
 * 2400 B; A 0-100, H 100-200, D2H 200-2600, C 2600-2700, D 2700-2800,
 * H2D 2800-5200, E 5200-5300. Iteration 5300 ns.
 * Peak allocated: 3500 with b (x a h b before C; neither rule goes above
 * it afterwards: size 3500 during C, at most 3420 in E; order 2100 during
 * C, at most 3420 in E), 2500 without (x a h before C). */
static struct wl_workload *sizes_wl(bool with_b)
{
	struct wl_workload *w = wl_new("sizes", 1);
	uint32_t x = T(w, "x", 100, WL_INPUT), a = T(w, "a", 400, WL_ACT),
		 h = T(w, "h", 2000, WL_ACT), c = T(w, "c", 1000, WL_ACT),
		 d = T(w, "d", 10, WL_ACT), e = T(w, "e", 10, WL_ACT);
	uint32_t in[] = {a, h, WL_NONE};
	OP(w, "A", WL_FWD, 100, &x, 1, &a, 1);
	OP(w, "H", WL_FWD, 100, &x, 1, &h, 1);
	if (with_b) {
		in[2] = T(w, "b", 1000, WL_ACT);
		OP(w, "B", WL_FWD, 100, &x, 1, &in[2], 1);
	}
	OP(w, "C", WL_FWD, 100, &x, 1, &c, 1);
	OP(w, "D", WL_BWD, 100, &c, 1, &d, 1);
	OP(w, "E", WL_BWD, 100, in, with_b ? 3 : 2, &e, 1);
	finalize(w);
	return w;
}

static void check_evictions(const struct st_run *st, sim_time_t time,
			    uint64_t n, uint64_t bytes, uint64_t peak)
{
	assert_false(st->oom.hit);
	assert_int_equal(st->n_iter, 2);
	for (int i = 0; i < 2; i++) {
		const struct st_iter *it = &st->iter[i];
		assert_int_equal(it->time, time);
		assert_int_equal(it->n_swap_out, n);
		assert_int_equal(it->bytes_d2h, bytes);
		assert_int_equal(it->stall[ST_STALL_D2H], bytes);
		assert_int_equal(it->n_swap_in, n);
		assert_int_equal(it->bytes_h2d, bytes);
	}
	assert_int_equal(st->mem.peak_allocated, peak);
	assert_int_equal(st->pinned_peak, bytes);
}

static void test_ondemand_evicts_approximate_size(void **state)
{
	(void)state;
	struct wl_workload *w = sizes_wl(true);
	struct st_run st;
	policy_run(w, "ondemand", NULL, 3600, 2, &st); /* evict=size */
	check_evictions(&st, 2600, 1, 1000, 3500); /* b */
	st_run_free(&st);
	policy_run(w, "ondemand", "evict=order", 3600, 2, &st);
	check_evictions(&st, 5400, 2, 2400, 3500); /* a, h */
	st_run_free(&st);
	wl_free(w);
	w = sizes_wl(false);
	policy_run(w, "ondemand", NULL, 3000, 2, &st);
	check_evictions(&st, 5300, 2, 2400, 2500); /* a, h */
	st_run_free(&st);
	wl_free(w);
}

/* Nothing fits at all: the persistent set is larger than the budget. */
/* ---- the order of passive-mode evictions (policies/passive.c) ----
 * The scan from the start of the access list must pass over persistent
 * tensors, freed ones and ones already evicted without choosing them,
 * and choose again a tensor that was swapped back in (its first place
 * in the list is where it is met). A policy of passive mode alone that
 * records what each round evicts:
 *   F1: x, w1 -> a1   F2: a1, w2 -> a2   F3: a2, w3 -> a3   F4: a3, w1 -> a4
 *   B4: a4, a3 -> g4  B3: g4, a1 -> g3   B2: g3, a2 -> g2   B1: g2, a1 -> g1
 * x 100 B (input), w1..w3 100 B (parameters: persistent), a1..a4 and g3
 * 1000 B, g4 g2 g1 100 B; budget 2400 (arena: in use is a plain sum).
 *   F1: 400 + a1 = 1400; x freed -> 1300. List x w1 a1.
 *   F2: + a2 = 2300. List + w2 a2.
 *   F3: + a3 = 3300 > 2400: the scan passes x (freed), w1 (persistent),
 *       takes a1 (1000 B, not read by F3) -> 1300, a3 fits: 2300.
 *       List + w3 a3.
 *   F4: + a4 fails: x, w1, a1 (out), w2 passed; a2 taken -> 2300.
 *   B4: + g4 = 2400; a4 and a3 freed -> 400.
 *   B3: a1 swapped in (1400), + g3 = 2400; g4 freed -> 2300. a1 is read
 *       again: a candidate again at its first place.
 *   B2: swapping a2 in fails (3300): a1 (resident, not read by B2) is
 *       the first candidate -> 1300; a2 in (2300), + g2 = 2400; g3 and
 *       a2 freed -> 400.
 *   B1: a1 in (1400), + g1 = 1500.
 * Evictions in order: a1, a2, a1 -- under both rules (each request is
 * 1000 B and every candidate met first is 1000 B). */
struct pas_probe {
	struct pas pas;	      /* the access list */
	int rule;	      /* enum pas_rule */
	uint32_t seq[8];      /* tensors evicted, in order */
	int n;		      /* how many */
};

static void probe_note(void *obj, uint32_t t, eng_event ev)
{
	struct pas_probe *b = obj;
	(void)ev;
	if (b->n < 8)
		b->seq[b->n] = t;
	b->n++;
}

static void probe_access(struct pol *p, struct ex *ex,
			 const struct ex_access *a)
{
	(void)ex;
	pas_record(&((struct pas_probe *)p->priv)->pas, a->tensor);
}

static void probe_copy_done(struct pol *p, struct ex *ex,
			    const struct ex_copy *c)
{
	(void)ex;
	pas_copy_done(&((struct pas_probe *)p->priv)->pas, c);
}

static enum ex_verdict probe_alloc_fail(struct pol *p, struct ex *ex,
					const struct ex_alloc_req *req)
{
	struct pas_probe *b = p->priv;
	struct pas_round r = pas_evict(&b->pas, ex, (enum pas_rule)b->rule,
				       req->bytes, probe_note, b);
	if (r.last == ENG_EVENT_NONE)
		return EX_FAIL;
	ex_wait(ex, r.last);
	return EX_RETRY;
}

static void test_passive_eviction_order(void **state)
{
	(void)state;
	struct wl_workload *w = wl_new("passive-chain", 1);
	uint32_t x = T(w, "x", 100, WL_INPUT), wt[4], a[5], g[5];
	char name[8];
	for (int i = 1; i <= 4; i++) {
		snprintf(name, sizeof name, "a%d", i);
		a[i] = T(w, name, 1000, WL_ACT);
		snprintf(name, sizeof name, "g%d", i);
		g[i] = T(w, name, i == 3 ? 1000 : 100, WL_ACT_GRAD);
		if (i < 4) {
			snprintf(name, sizeof name, "w%d", i);
			wt[i] = T(w, name, 100, WL_PARAM);
		}
	}
	uint32_t f1[] = {x, wt[1]}, f2[] = {a[1], wt[2]}, f3[] = {a[2], wt[3]},
		 f4[] = {a[3], wt[1]}, b4[] = {a[4], a[3]}, b3[] = {g[4], a[1]},
		 b2[] = {g[3], a[2]}, b1[] = {g[2], a[1]};
	OP(w, "F1", WL_FWD, 100, f1, 2, &a[1], 1);
	OP(w, "F2", WL_FWD, 100, f2, 2, &a[2], 1);
	OP(w, "F3", WL_FWD, 100, f3, 2, &a[3], 1);
	OP(w, "F4", WL_FWD, 100, f4, 2, &a[4], 1);
	OP(w, "B4", WL_BWD, 100, b4, 2, &g[4], 1);
	OP(w, "B3", WL_BWD, 100, b3, 2, &g[3], 1);
	OP(w, "B2", WL_BWD, 100, b2, 2, &g[2], 1);
	OP(w, "B1", WL_BWD, 100, b1, 2, &g[1], 1);
	finalize(w);
	const struct pol_ops ops = {.name = "probe",
				    .on_access = probe_access,
				    .on_copy_done = probe_copy_done,
				    .on_alloc_fail = probe_alloc_fail};
	for (int rule = PAS_SIZE; rule <= PAS_ORDER; rule++) {
		struct pas_probe b = {.rule = rule};
		struct pol pol = {.ops = &ops, .priv = &b};
		struct st_run st;
		assert_int_equal(run(w, &pol, 2400, 1, &st), 0);
		assert_false(st.oom.hit);
		assert_int_equal(b.n, 3);
		assert_int_equal(b.seq[0], a[1]);
		assert_int_equal(b.seq[1], a[2]);
		assert_int_equal(b.seq[2], a[1]);
		assert_int_equal(st.mem.peak_allocated, 2400);
		st_run_free(&st);
		pas_free(&b.pas);
	}
	wl_free(w);
}

static void test_setup_oom(void **state)
{
	(void)state;
	struct wl_workload *w = wl_new("big", 1);
	uint32_t p = T(w, "p", 5000, WL_PARAM), a = T(w, "a", 10, WL_ACT);
	OP(w, "A", WL_FWD, 10, &p, 1, &a, 1);
	finalize(w);
	struct st_run st;
	policy_run(w, "ondemand", NULL, 1000, 1, &st);
	assert_true(st.oom.hit);
	assert_int_equal(st.oom.iter, -1);
	assert_string_equal(st.oom.tensor, "p");
	assert_int_equal(st.oom.bytes, 5000);
	st_run_free(&st);
	wl_free(w);
}

/* An op the workload marks in place runs in its input's block; unmarked
 * (as tf-eager's workloads leave every op), it gets its own.
 *   A: x -> a (1000 B)   R: a -> r (1000 B)   S: r -> s (10 B)
 * in place: x + a = 1100 while A runs (the peak); x is freed, R runs in
 * a's block (1000), S adds 10 (1010);
 * not: R allocates r while a is live: 100 freed after A, so 1000 + 1000
 * = 2000, then a freed; S: 1010. Peak 2000. */
static void test_inplace_graph_vs_eager(void **state)
{
	(void)state;
	const uint64_t peak[] = {1100, 2000};
	for (int m = 0; m < 2; m++) {
		struct wl_workload *w = wl_new("inplace", 1);
		uint32_t x = T(w, "x", 100, WL_INPUT),
			 a = T(w, "a", 1000, WL_ACT),
			 r = T(w, "r", 1000, WL_ACT), s = T(w, "s", 10, WL_ACT);
		OP(w, "A", WL_FWD, 10, &x, 1, &a, 1);
		gms_err err;
		struct wl_op_desc d = {.name = "R", .type = OT_RELU,
				       .phase = WL_FWD, .in = &a, .n_in = 1,
				       .out = &r, .n_out = 1, .time = 10,
				       .inplace = m == 0};
		assert_int_not_equal(wl_add_op(w, &d, &err), WL_NONE);
		OP(w, "S", WL_FWD, 10, &r, 1, &s, 1);
		finalize(w);
		struct st_run st;
		policy_run(w, "framework", NULL, 0, 1, &st);
		assert_int_equal(st.mem.peak_allocated, peak[m]);
		st_run_free(&st);
		wl_free(w);
	}
}

/*
 * frag_at_peak and frag_max on pool-bestfit (issue 12, item 5), sampled
 * after every device allocation and free. U = 1 KiB (a multiple of
 * CNMeM's 512 B: no rounding); budget = pool = 10U, reserved from the
 * start. x 1U (input, read by A and B); A: x -> a 2U; B: x -> b 1U;
 * C: a -> c 1U; D: b, c -> d 3U; E: d -> e 1U (never read).
 * mem_frag = 1 - largest free / (10U - allocated) after each step:
 *   x [0,1), a [1,3), b [3,4): one free block at the top: 0
 *   after B, x freed: [0,1) [4,10): 1 - 6/7
 *   c: best fit [0,1): 0;  after C, a freed: [1,3) [4,10): 1 - 6/8
 *   d 3U: best fit [4,10) -> [4,7): allocated 5U (the peak, once per
 *     iteration): [1,3) [7,10): 1 - 3/5 = 0.4
 *   after D, b freed: [1,4) [7,10): 1 - 3/6 = 0.5; c freed: [0,4)
 *     [7,10): 1 - 4/7
 *   e: best fit [7,10) -> [7,8): [0,4) [8,10): 1 - 4/6; d freed: [0,7)
 *     [8,10): 1 - 7/9; e freed: 0. The second iteration repeats it.
 * frag_at_peak = 0.4; frag_max = 0.5, between two frees of one kernel's
 * completion. (Sampled at kernel ends, when reserved memory peaked, as
 * before, both were 0: the pool is reserved before the first kernel and
 * the run ends with everything free.)
 */
static void test_frag_columns(void **state)
{
	(void)state;
	const uint64_t U = 1024;
	struct wl_workload *w = wl_new("frag5", 1);
	uint32_t x = T(w, "x", U, WL_INPUT), a = T(w, "a", 2 * U, WL_ACT),
		 b = T(w, "b", U, WL_ACT), c = T(w, "c", U, WL_ACT),
		 d = T(w, "d", 3 * U, WL_ACT), e = T(w, "e", U, WL_ACT);
	OP(w, "A", WL_FWD, 10, &x, 1, &a, 1);
	OP(w, "B", WL_FWD, 10, &x, 1, &b, 1);
	OP(w, "C", WL_FWD, 10, &a, 1, &c, 1);
	uint32_t bc[] = {b, c};
	OP(w, "D", WL_FWD, 10, bc, 2, &d, 1);
	OP(w, "E", WL_FWD, 10, &d, 1, &e, 1);
	finalize(w);
	const struct pol_ops ops = {.name = "none"};
	struct pol pol = {.ops = &ops};
	struct st_run st;
	struct hw_profile hw;
	hw_test_profile(&hw, 1 << 20);
	assert_int_equal(run_on(w, &pol, &hw, "pool-bestfit", 10 * U, 0, 2,
				&st),
			 0);
	assert_false(st.oom.hit);
	assert_int_equal(st.mem.peak_allocated, 5 * U);
	assert_int_equal(st.mem.peak_reserved, 10 * U);
	assert_true(st.frag_at_peak == 1.0 - 3.0 / 5.0);
	assert_true(st.frag_max == 0.5);
	st_run_free(&st);
	wl_free(w);
}

/* Same inputs, byte-identical report. */
static void report(const struct wl_workload *w, char **buf, size_t *len)
{
	FILE *f = open_memstream(buf, len);
	struct st_run st;
	policy_run(w, "ondemand", NULL, 2200, 3, &st);
	st_print(&st, f);
	fwrite(st.iter, sizeof *st.iter, (size_t)st.n_iter, f);
	fclose(f);
	st_run_free(&st);
}

/*
 * Pinned host memory is a pool that grows and is reused (mem.h, struct
 * mem_host): swap3 (above) with cudaMallocHost costing H = 10000 ns.
 * Iteration 0: A 0-100; after A the swap-out of a (1000 B) grows the
 * empty pool by 1000 B: one cudaMallocHost, the host is in it 100-10100
 * (stall alloc 10000), then the D2H copy 10100-11100 (stall d2h 1000);
 * B 11100-11200, H2D 11200-12200 (stall h2d 1000), C 12200-12300:
 * 12300 ns. Iteration 1: the same swap-out of 1000 B is served by the pool
 * (a's host copy was given back at its swap-in): no call, 2300 ns as in
 * test_swap_out_and_back. One cudaMallocHost in two swap-outs.
 */
static void test_pinned_pool_grows_once(void **state)
{
	(void)state;
	struct wl_workload *w = swap3_wl();
	struct hw_profile hw;
	hw_test_profile(&hw, 1 << 20);
	hw.host_alloc_cost = 10000;
	struct st_run st;
	script_run_on(w, swap3_script, 2, &hw, "arena", 0, 0, 2, &st);
	assert_false(st.oom.hit);
	assert_int_equal(st.iter[0].time, 12300);
	assert_int_equal(st.iter[0].n_host_alloc, 1);
	assert_int_equal(st.iter[0].alloc_time, 10000);
	assert_int_equal(st.iter[0].stall[ST_STALL_ALLOC], 10000);
	assert_int_equal(st.iter[0].stall[ST_STALL_D2H], 1000);
	assert_int_equal(st.iter[1].time, 2300);
	assert_int_equal(st.iter[1].n_host_alloc, 0);
	assert_int_equal(st.iter[1].alloc_time, 0);
	assert_int_equal(st.iter[1].stall[ST_STALL_ALLOC], 0);
	assert_int_equal(st.pinned_peak, 1000);
	st_run_free(&st);
	/* cudaMallocHost's size-dependent cost (costs.host_alloc_bytes_per_s,
	 * hw_host_alloc_time): the same with a rate of 1e8 B/s, so the
	 * growth of 1000 B costs 10000 + 1000 / 1e8 s = 20000 ns:
	 * iteration 0 is 10000 ns longer, 22300 ns; iteration 1 as above */
	hw.host_alloc_bytes_per_s = 1e8;
	script_run_on(w, swap3_script, 2, &hw, "arena", 0, 0, 2, &st);
	assert_int_equal(st.iter[0].alloc_time, 20000);
	assert_int_equal(st.iter[0].stall[ST_STALL_ALLOC], 20000);
	assert_int_equal(st.iter[0].time, 22300);
	assert_int_equal(st.iter[1].time, 2300);
	st_run_free(&st);
	wl_free(w);
}

/*
 * PyTorch's caching allocator (mem_caching.c) creating k = 3 segments
 * and doing one free-cached-and-retry, whose cudaFree waits for a D2H copy
 * in flight. cudaMalloc M = 1000 ns, cudaFree F = 500 ns, cudaMallocHost
 * 0; budget 40 MiB; one iteration.
 *   x 10 MiB (input), A: x -> a 12 MiB (1000 ns), B: a -> b 20 MiB
 *   (1000 ns). After A the policy copies a to the host (no release, not
 *   waited for): 12 MiB = 12582912 B take 12582912 ns.
 * Sizes >= 10 MiB get a segment of their size (2 MiB multiples).
 *   0      x: no cached block, cudaMalloc S1 (10 MiB): host busy to 1000
 *   1000   a: cudaMalloc S2 (12 MiB): host busy to 2000
 *   2000   A runs to 3000; x freed (S1 cached, whole)
 *   3000   copy of a on D2H until 3000 + 12582912 = 12585912 (growing the
 *          pinned pool: a cudaMallocHost of cost 0)
 *   3000   b: no cached block fits; 22 + 20 MiB > 40: release_cached_
 *          blocks cudaFrees S1, which first waits for the device: the D2H
 *          copy ends at 12585912; then F + M (the retry's cudaMalloc of
 *          S3): the host returns at 12587412
 *   12587412  B runs to 12588412; a and b freed; nothing left in flight.
 * Iteration 12588412 ns = the 12584912 it takes with zero costs (A
 * 0-1000, the copy to 12583912, the cudaFree's sync, B to 12584912; with
 * no sync B would overlap the copy: 12583912) + 3 M + 1 F; alloc time
 * 3500; compute idle only for the host's driver calls: 12588412 - 2000 =
 * 12586412 (stall alloc).
 */
static void test_caching_segments_and_retry(void **state)
{
	(void)state;
	const uint64_t MIB = 1 << 20;
	struct wl_workload *w = wl_new("retry", 1);
	uint32_t x = T(w, "x", 10 * MIB, WL_INPUT),
		 a = T(w, "a", 12 * MIB, WL_ACT),
		 b = T(w, "b", 20 * MIB, WL_ACT);
	OP(w, "A", WL_FWD, 1000, &x, 1, &a, 1);
	OP(w, "B", WL_FWD, 1000, &a, 1, &b, 1);
	finalize(w);
	const struct script s[] = {{0, false, A_COPY_OUT, a}};
	struct hw_profile hw;
	hw_test_profile(&hw, 64 * MIB);
	struct st_run st;
	script_run_on(w, s, 1, &hw, "caching", 40 * MIB, 0, 1, &st);
	assert_int_equal(st.iter[0].time, 12584912); /* zero costs */
	st_run_free(&st);
	hw.malloc_cost = 1000;
	hw.free_cost = 500;
	script_run_on(w, s, 1, &hw, "caching", 40 * MIB, 0, 1, &st);
	const struct st_iter *it = &st.iter[0];
	assert_false(st.oom.hit);
	assert_int_equal(it->time, 12588412);
	assert_int_equal(it->n_cuda_malloc, 3);
	assert_int_equal(it->n_cuda_free, 1);
	assert_int_equal(it->n_host_alloc, 1);
	assert_int_equal(it->alloc_time, 3500);
	assert_int_equal(it->stall[ST_STALL_ALLOC], 12586412);
	assert_int_equal(it->stall[ST_STALL_D2H], 0);
	assert_int_equal(st.mem.n_device_malloc, 3);
	assert_int_equal(st.mem.n_device_free, 1);
	st_run_free(&st);
	wl_free(w);
}

/*
 * Pools and regions grown on demand are cudaMalloc'd once and reused.
 * x 1 MiB (input), A: x -> a 1 MiB (1000 ns); cudaMalloc M = 1000 ns;
 * two iterations.
 *   pool-bestfit, pool_size 1 MiB: the pool is made at creation (before
 *   training, not timed) and holds x; a needs a new pool of its size
 *   (CNMeM): one cudaMalloc in iteration 0 (M + A = 2000 ns); iteration 1
 *   finds both pools free: 1000 ns.
 *   bfc, pool_size 1 MiB (allow_growth): the first region (1 MiB) is
 *   made at x's request, the second (2 MiB, doubled) at a's: 2 M + A =
 *   3000 ns; iteration 1: 1000 ns.
 */
static void test_pool_growth_charged_once(void **state)
{
	(void)state;
	const uint64_t MIB = 1 << 20;
	struct wl_workload *w = wl_new("grow", 1);
	uint32_t x = T(w, "x", MIB, WL_INPUT), a = T(w, "a", MIB, WL_ACT);
	OP(w, "A", WL_FWD, 1000, &x, 1, &a, 1);
	finalize(w);
	struct hw_profile hw;
	hw_test_profile(&hw, 64 * MIB);
	hw.malloc_cost = 1000;
	const struct {
		const char *alloc;  /* allocator */
		sim_time_t t0;	    /* iteration 0 */
		uint64_t mallocs;   /* cudaMalloc calls in iteration 0 */
	} c[] = {{"pool-bestfit", 2000, 1}, {"bfc", 3000, 2}};
	for (size_t i = 0; i < 2; i++) {
		struct st_run st;
		script_run_on(w, NULL, 0, &hw, c[i].alloc, 4 * MIB, MIB, 2,
			      &st);
		assert_false(st.oom.hit);
		assert_int_equal(st.iter[0].time, c[i].t0);
		assert_int_equal(st.iter[0].n_cuda_malloc, c[i].mallocs);
		assert_int_equal(st.iter[1].time, 1000);
		assert_int_equal(st.iter[1].n_cuda_malloc, 0);
		st_run_free(&st);
	}
	wl_free(w);
}

static void test_determinism(void **state)
{
	(void)state;
	struct wl_workload *w = budget_wl();
	char *b1, *b2;
	size_t n1, n2;
	report(w, &b1, &n1);
	report(w, &b2, &n2);
	assert_int_equal(n1, n2);
	assert_memory_equal(b1, b2, n1);
	free(b1);
	free(b2);
	wl_free(w);
}

/*
 * Regeneration replays the lineage in forward order (Capuchin 5.3: "T4's
 * recomputation will start from T1 ... and generate T2, T3 during this
 * process"). Three residual blocks, each o_k = R_k(b_k, o_k-1) with the
 * branch b_k = B_k(c_k) from a small c_k = C_k(o_k-1) that the backward
 * op keeps resident; R_k lists the branch first, as the generators do:
 *
 *   A: x -> o0 (100)   then for k = 1..3: C_k: o_k-1 -> c_k (10),
 *   B_k: c_k -> b_k (1000), R_k: b_k, o_k-1 -> o_k (100)
 *   G (backward): o3, o0, c1, c2, c3 -> g (10)
 *
 * o3 is dropped after R3; b_k and o1, o2 die in forward. At G, live are
 * o0 and c1..c3: 130. Regenerating o3 needs R3(b3, o2), o2 needs R2(b2,
 * o1), o1 needs R1(b1, o0).
 * Forward order (the earliest producer first: o2 before b3): b1 1130,
 * o1 1230, b1 dies 230, b2 1230, o2 1330, b2 and o1 die 230, b3 1230, o3
 * 1330, b3 and o2 die 230, g 240. Peak 1330 (forward's is 1240: x o0 c1
 * b1 o1 less x = 1220 at R1, 1230 at R2 with c1, c2; at R3 1240).
 * Argument order would regenerate b3, then b2, then b1 before any add
 * runs: 130 + 3000 + o1 = 3230. With a 2000-byte budget the run fits.
 */
static void test_regen_forward_order(void **state)
{
	(void)state;
	struct wl_workload *w = wl_new("blocks", 1);
	uint32_t x = T(w, "x", 10, WL_INPUT), o[4], c[4], b[4];
	o[0] = T(w, "o0", 100, WL_ACT);
	OP(w, "A", WL_FWD, 10, &x, 1, &o[0], 1);
	char name[8];
	for (int k = 1; k <= 3; k++) {
		snprintf(name, sizeof name, "c%d", k);
		c[k] = T(w, name, 10, WL_ACT);
		snprintf(name, sizeof name, "b%d", k);
		b[k] = T(w, name, 1000, WL_ACT);
		snprintf(name, sizeof name, "o%d", k);
		o[k] = T(w, name, 100, WL_ACT);
		snprintf(name, sizeof name, "C%d", k);
		OP(w, name, WL_FWD, 10, &o[k - 1], 1, &c[k], 1);
		snprintf(name, sizeof name, "B%d", k);
		OP(w, name, WL_FWD, 10, &c[k], 1, &b[k], 1);
		uint32_t in[] = {b[k], o[k - 1]};
		snprintf(name, sizeof name, "R%d", k);
		OP(w, name, WL_FWD, 10, in, 2, &o[k], 1);
	}
	uint32_t g = T(w, "g", 10, WL_ACT);
	uint32_t gin[] = {o[3], o[0], c[1], c[2], c[3]};
	OP(w, "G", WL_BWD, 10, gin, 5, &g, 1);
	finalize(w);
	/* R3 is op 9 (A, then C/B/R per block) */
	const struct script s[] = {{9, false, A_DROP, o[3]}};
	struct st_run st;
	script_run(w, s, 1, 2000, &st);
	assert_false(st.oom.hit);
	assert_int_equal(st.mem.peak_requested, 1330);
	assert_int_equal(st.iter[1].n_recompute, 6);
	st_run_free(&st);
	wl_free(w);
}

/*
 * Memory by tensor kind (issue 34), sampled where device memory changes.
 *   A: x, p -> a (100 ns, workspace 30)   B: x -> b (100 ns)
 *   C: a, b -> c (100 ns)                  D: c -> g (100 ns, backward)
 *   x 100 B input, p 10 parameter, a 1000 and b 500 activations, c 100
 *   an activation gradient, g 10 a parameter gradient (nobody reads it:
 *   it dies as D ends).
 * Policy: swap3's, a out after A (with release, waited for), back before
 * C. arena: each block counts its bytes. One iteration; several changes
 * at one instant are one sample, the last:
 *   t     allocated  input param pgrad  act  agrad  ws  host
 *   0       1140      100   10    0    1000    0    30    0  set-up p,
 *                                       iteration x; A: a, workspace
 *   100     1110      100   10    0    1000    0     0    0  A ends, its
 *                           workspace goes (the host copy of a is made
 *                           after, by the policy's after_op)
 *   1100     610      100   10    0     500    0     0 1000  a released
 *                                       as its copy ends; B: b
 *   1200    1510        0   10    0    1500    0     0 1000  B ends: x
 *                           dies; a swapped in (its block at the issue,
 *                           the host copy held while the H2D copy runs)
 *   2200    1610        0   10    0    1500  100     0    0  a is in:
 *                           its host copy goes (ex.c swap_in_done,
 *                           host_drop); C: c
 *   2300     120        0   10   10       0  100     0    0  C ends: a
 *                           and b die; D: g
 *   2400      10        0   10    0       0    0     0    0  D ends: c, g
 * The device kinds sum to allocated in every row.
 */
static void test_mem_by_kind(void **state)
{
	(void)state;
	struct wl_workload *w = wl_new("kinds", 1);
	uint32_t x = T(w, "x", 100, WL_INPUT), a = T(w, "a", 1000, WL_ACT),
		 b = T(w, "b", 500, WL_ACT), c = T(w, "c", 100, WL_ACT_GRAD),
		 p = T(w, "p", 10, WL_PARAM), g = T(w, "g", 10, WL_PARAM_GRAD);
	uint32_t xp[] = {x, p}, ab[] = {a, b};
	gms_err err;
	struct wl_op_desc d = {.name = "A", .type = OT_OTHER, .phase = WL_FWD,
			       .in = xp, .n_in = 2, .out = &a, .n_out = 1,
			       .time = 100, .flops = 100, .recomputable = true,
			       .workspace = 30};
	if (wl_add_op(w, &d, &err) == WL_NONE)
		fail_msg("%s", err.msg);
	OP(w, "B", WL_FWD, 100, &x, 1, &b, 1);
	OP(w, "C", WL_FWD, 100, ab, 2, &c, 1);
	OP(w, "D", WL_BWD, 100, &c, 1, &g, 1);
	finalize(w);
	const struct script sc[] = {{0, false, A_SWAP_OUT_SYNC, a},
				    {2, true, A_SWAP_IN_SYNC, a}};
	struct script_state ss = {sc, 2};
	struct pol pol = {.ops = &script_ops, .priv = &ss};
	struct hw_profile hw;
	hw_test_profile(&hw, 1 << 20);
	struct tr_rec rec;
	tr_init(&rec, w);
	struct ex_cfg cfg = {.hw = &hw, .wl = w, .pol = &pol,
			     .allocator = "arena", .iterations = 1,
			     .obs = tr_observer(&rec)};
	struct st_run st;
	assert_int_equal(ex_run(&cfg, &st, &err), 0);
	assert_false(st.oom.hit);
	/* t, allocated, then input param param_grad opt_state act act_grad
	 * workspace (wl_kind order), host */
	static const uint64_t want[][10] = {
		{0, 1140, 100, 10, 0, 0, 1000, 0, 30, 0},
		{100, 1110, 100, 10, 0, 0, 1000, 0, 0, 0},
		{1100, 610, 100, 10, 0, 0, 500, 0, 0, 1000},
		{1200, 1510, 0, 10, 0, 0, 1500, 0, 0, 1000},
		{2200, 1610, 0, 10, 0, 0, 1500, 100, 0, 0},
		{2300, 120, 0, 10, 10, 0, 0, 100, 0, 0},
		{2400, 10, 0, 10, 0, 0, 0, 0, 0, 0},
	};
	size_t n = 0;
	for (size_t i = 0; i < rec.n; i++) {
		const struct tr_event *e = &rec.ev[i];
		if (e->what != TR_MEM)
			continue;
		assert_true(n < sizeof want / sizeof *want);
		const uint64_t *r = want[n++];
		const struct tr_kinds *k = &rec.kinds[e->id];
		assert_int_equal(e->t0, r[0]);
		assert_int_equal(e->a, r[1]);
		for (int j = 0; j < WL_KIND_COUNT; j++)
			assert_int_equal(k->kind[j], r[2 + j]);
		assert_int_equal(k->host, r[2 + WL_KIND_COUNT]);
	}
	assert_int_equal(n, sizeof want / sizeof *want);
	/* and the Chrome trace carries them as a counter of its own */
	char path[] = "/tmp/gms-kinds-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(tr_write_chrome(&rec, path, "kinds", &err), 0);
	FILE *f = fopen(path, "r");
	char buf[1 << 14];
	size_t got = fread(buf, 1, sizeof buf - 1, f);
	buf[got] = 0;
	fclose(f);
	unlink(path);
	assert_non_null(strstr(buf, "\"name\":\"device memory by kind\",\"pid\":1,"
				    "\"ts\":1.100,\"args\":{\"input\":100,"
				    "\"parameter\":10,\"param_grad\":0,"
				    "\"opt_state\":0,\"activation\":500,"
				    "\"act_grad\":0,\"workspace\":0}"));
	assert_non_null(strstr(buf, "\"name\":\"host memory holding tensors\","
				    "\"pid\":1,\"ts\":1.100,\"args\":{"
				    "\"bytes\":1000}"));
	tr_fini(&rec);
	st_run_free(&st);
	wl_free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_swap_out_and_back),
		cmocka_unit_test(test_recompute_chain),
		cmocka_unit_test(test_drop_refused_without_lineage),
		cmocka_unit_test(test_fib_drop_regenerates_all),
		cmocka_unit_test(test_fib_drop_refused_deep),
		cmocka_unit_test(test_framework_oom_names_op_and_bytes),
		cmocka_unit_test(test_ondemand_evicts_and_swaps_back),
		cmocka_unit_test(test_ondemand_evicts_approximate_size),
		cmocka_unit_test(test_passive_eviction_order),
		cmocka_unit_test(test_setup_oom),
		cmocka_unit_test(test_inplace_graph_vs_eager),
		cmocka_unit_test(test_frag_columns),
		cmocka_unit_test(test_determinism),
		cmocka_unit_test(test_pinned_pool_grows_once),
		cmocka_unit_test(test_caching_segments_and_retry),
		cmocka_unit_test(test_pool_growth_charged_once),
		cmocka_unit_test(test_regen_forward_order),
		cmocka_unit_test(test_mem_by_kind),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
