/*
 * test_checkpoint.c - the recomputation baselines (policies/checkpoint.c)
 * on graphs small enough to work out by hand.
 *
 * Runs use hw_test_profile (a kernel of F FLOPs takes F / 1000 ns, no
 * launch cost) and the `arena` allocator (memory figures are plain sums of
 * live tensors). Ops carry FLOPs, not explicit times, so every kernel time
 * below is FLOPs / 1000. No op is in place, so graph mode changes nothing.
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

/* Add an op of a type with FLOPs (time from the profile); forward ops
 * but dropout are recomputable, as the generators make them (gen.c: a
 * re-run dropout would draw another mask). */
static void K(struct wl_workload *w, const char *name, enum wl_op_type type,
	      enum wl_phase ph, double flops, const uint32_t *in, uint32_t n_in,
	      const uint32_t *out, uint32_t n_out)
{
	gms_err err;
	struct wl_op_desc d = {.name = name, .type = type, .phase = ph,
			       .in = in, .n_in = n_in, .out = out,
			       .n_out = n_out, .flops = flops,
			       .recomputable = ph == WL_FWD &&
					       type != OT_DROPOUT};
	if (wl_add_op(w, &d, &err) == WL_NONE)
		fail_msg("%s", err.msg);
}

/* Add n tensors of 1000 B named names[]: the first an input, the next
 * n_act - 1 activations, the last a parameter gradient, the rest
 * activation gradients; their ids in id[]. */
static void add_named(struct wl_workload *w, const char *const *names, int n,
		      int n_act, uint32_t *id)
{
	for (int i = 0; i < n; i++)
		id[i] = T(w, names[i], 1000,
			  i == 0	  ? WL_INPUT
			  : i < n_act	  ? WL_ACT
			  : i == n - 1 ? WL_PARAM_GRAD
				       : WL_ACT_GRAD);
}

/* Ops re-run as recomputations, in order (an observer of the timeline). */
struct recs {
	uint32_t op[64]; /* op ids */
	size_t n;	 /* how many */
};

static void rec_span(void *obj, enum eng_q q, const struct eng_item *it,
		     sim_time_t start, sim_time_t end)
{
	struct recs *r = obj;
	(void)start;
	(void)end;
	if (q == ENG_COMPUTE && it->type == ENG_KERNEL && it->kind == 1 &&
	    r->n < 64)
		r->op[r->n++] = (uint32_t)it->tag;
}

/* Make a checkpoint instance with key=value parameters. */
static void make(struct pol *p, const char *const *kv, size_t n)
{
	gms_err err = {{0}};
	if (pol_create(p, "checkpoint", NULL, NULL, kv, n, &err) < 0)
		fail_msg("%s", err.msg);
}

/* Run 2 iterations under p on the whole 1 MiB test device, recording
 * recomputed ops (of both iterations) in r. Returns ex_run's code. */
static int run_rec(const struct wl_workload *w, struct pol *p,
		   struct st_run *st, struct recs *r, gms_err *err)
{
	struct hw_profile hw;
	hw_test_profile(&hw, 1 << 20);
	struct ex_observer obs = {.obj = r, .span = rec_span};
	struct ex_cfg cfg = {.hw = &hw, .wl = w, .pol = p,
			     .allocator = "arena", .iterations = 2,
			     .warmup = 0, .obs = &obs};
	memset(r, 0, sizeof *r);
	return ex_run(&cfg, st, err);
}

static void assert_has(const char *msg, const char *part)
{
	if (!strstr(msg, part))
		fail_msg("\"%s\" lacks \"%s\"", msg, part);
}

/* ---- a chain of 16 equal ops -------------------------------------------
 *   forward  f_i (i = 1..16): a_{i-1} -> a_i, 1e6 FLOPs = 1000 ns; a_0 = x
 *   backward b16: a15, a16 -> g15; b_i (i = 15..2): a_{i-1}, g_i ->
 *            g_{i-1}; b1: x, g1 -> g0; 2e6 FLOPs = 2000 ns each
 * Every tensor is 1000 B. a_i is read by f_{i+1} in forward and b_{i+1} in
 * backward (a16 by b16 only); x (an input) lives the whole iteration.
 * Without a policy: 16 x 1000 + 16 x 2000 = 48000 ns, and the peak is at
 * b16: x, a1..a16 and g15 = 18 tensors = 18000 B. */
static struct wl_workload *chain16(void)
{
	struct wl_workload *w = wl_new("chain16", 1);
	uint32_t a[17], g[16];
	char name[16];
	a[0] = T(w, "x", 1000, WL_INPUT);
	for (int i = 1; i <= 16; i++) {
		snprintf(name, sizeof name, "a%d", i);
		a[i] = T(w, name, 1000, WL_ACT);
	}
	for (int i = 0; i < 16; i++) {
		snprintf(name, sizeof name, "g%d", i);
		g[i] = T(w, name, 1000, WL_ACT_GRAD);
	}
	for (int i = 1; i <= 16; i++) {
		snprintf(name, sizeof name, "f%d", i);
		K(w, name, OT_OTHER, WL_FWD, 1e6, &a[i - 1], 1, &a[i], 1);
	}
	uint32_t in16[] = {a[15], a[16]};
	K(w, "b16", OT_OTHER, WL_BWD, 2e6, in16, 2, &g[15], 1);
	for (int i = 15; i >= 1; i--) {
		uint32_t in[] = {a[i - 1], g[i]};
		snprintf(name, sizeof name, "b%d", i);
		K(w, name, OT_OTHER, WL_BWD, 2e6, in, 2, &g[i - 1], 1);
	}
	finalize(w);
	return w;
}

/* sqrt, n = 16 forward ops: k = ceil(sqrt(16)) = 4 segments of 4 ops,
 * boundaries after f4, f8, f12, each a single tensor on a chain: a4, a8,
 * a12 kept. a13..a16 follow the last checkpoint: kept (keep_last).
 * Dropped after their forward reader: a1-a3, a5-a7, a9-a11 (9 drops).
 * Backward: b12 needs a11 -> f9, f10, f11 re-run from a8 (and they stay
 * for b11, b10); b8 re-runs f5-f7 from a4; b4 re-runs f1-f3 from x:
 * 9 kernels x 1000 ns = 9000 ns, 9e6 FLOPs; iteration 48000 + 9000.
 * Peak: end of forward holds x, a4, a8, a12, a13..a16 (8000 B); b16 adds
 * g15: 9000 B, i.e. 7 activations = about 2 sqrt(16) = 8. Later peaks
 * are lower: at b12, x, a8, a4, g12, a9..a11 and g11 = 8000 B. */
static void test_sqrt_chain(void **state)
{
	(void)state;
	struct wl_workload *w = chain16();
	struct pol p;
	const char *kv[] = {"mode=sqrt"};
	make(&p, kv, 1);
	struct st_run st;
	struct recs r;
	gms_err err = {{0}};
	assert_int_equal(run_rec(w, &p, &st, &r, &err), 0);
	assert_false(st.oom.hit);
	const struct st_iter *it = &st.iter[1];
	assert_int_equal(it->n_drop, 9);
	assert_int_equal(it->n_recompute, 9);
	assert_int_equal(it->recompute, 9000);
	assert_true(it->recompute_flops == 9e6);
	assert_int_equal(it->time, 57000);
	assert_int_equal(st.mem.peak_allocated, 9000);
	/* iteration 1's recomputations, in order: f9 f10 f11 (ids 8-10),
	 * f5 f6 f7 (4-6), f1 f2 f3 (0-2) */
	const uint32_t want[] = {8, 9, 10, 4, 5, 6, 0, 1, 2};
	assert_int_equal(r.n, 18);
	for (size_t i = 0; i < 9; i++)
		assert_int_equal(r.op[9 + i], want[i]);
	char rep[4096];
	report_into(&p, rep, sizeof rep);
	assert_has(rep, "segments           4");
	assert_has(rep, "checkpoints        3 tensors, 0.0 MiB: a4 a8 a12");
	assert_has(rep, "kept tail          4 tensors");
	st_run_free(&st);
	pol_destroy(&p);
	wl_free(w);
}

/* keep_last=false: a13..a16 are dropped too (a16 at once: no forward
 * reader), so b16 re-runs f13..f16 from a12 before it starts: 13 kernels,
 * 13000 ns, one extra forward pass less the 3 kept boundaries. The peak
 * is unchanged, 9000 B at b16 (x, a4, a8, a12, a13..a16 regenerated,
 * g15): recomputing the tail bought nothing. segments=2: a8 alone kept,
 * a9..a16 the tail; f1..f7 re-run at b8 (7000 ns); peak at b16: x, a8,
 * a9..a16, g15 = 11000 B. */
static void test_sqrt_options(void **state)
{
	(void)state;
	struct wl_workload *w = chain16();
	struct pol p;
	struct st_run st;
	struct recs r;
	gms_err err = {{0}};
	const char *kv[] = {"mode=sqrt", "keep_last=false"};
	make(&p, kv, 2);
	assert_int_equal(run_rec(w, &p, &st, &r, &err), 0);
	assert_int_equal(st.iter[1].n_recompute, 13);
	assert_int_equal(st.iter[1].recompute, 13000);
	assert_int_equal(st.iter[1].time, 61000);
	assert_int_equal(st.mem.peak_allocated, 9000);
	st_run_free(&st);
	pol_destroy(&p);
	const char *kv2[] = {"mode=sqrt", "segments=2"};
	make(&p, kv2, 2);
	assert_int_equal(run_rec(w, &p, &st, &r, &err), 0);
	assert_int_equal(st.iter[1].n_recompute, 7);
	assert_int_equal(st.iter[1].recompute, 7000);
	assert_int_equal(st.mem.peak_allocated, 11000);
	st_run_free(&st);
	pol_destroy(&p);
	/* framework on the same chain: 48000 ns, 18000 B (see chain16) */
	struct pol fp;
	assert_int_equal(pol_create(&fp, "framework", NULL, NULL, NULL, 0, &err),
			 0);
	assert_int_equal(run_rec(w, &fp, &st, &r, &err), 0);
	assert_int_equal(st.iter[1].time, 48000);
	assert_int_equal(st.mem.peak_allocated, 18000);
	st_run_free(&st);
	pol_destroy(&fp);
	wl_free(w);
}

/* ---- a residual block ----------------------------------------------------
 *   c1: x -> h1 (conv)   r1: h1 -> y1 (relu)
 *   c2: y1 -> h2 (conv)  r2: h2 -> h3 (relu)  c3: h3 -> h4 (conv)
 *   add: h4, y1 -> s     r3: s -> y2 (relu)
 *   c4: y2 -> z (conv)   loss: z -> L
 * Backward as the generators read (conv: its input; relu: its output;
 * loss: its output; add: nothing):
 *   loss_b: L -> gz   c4_b: gz, y2 -> gy2   r3_b: gy2, y2 -> gs
 *   c3_b: gs, h3 -> gh3   r2_b: gh3, h3 -> gh2   c2_b: gh2, y1 -> gy1
 *   r1_b: gy1, gs, y1 -> gh1   c1_b: gh1, x -> gw
 * All 1000 B, 1e6 FLOPs (1000 ns) each.
 * Frontiers (activations made so far and read by a later forward op):
 *   after c1 {h1}, r1 {y1}, c2 {y1, h2}, r2 {y1, h3}, c3 {y1, h4},
 *   add {s}, r3 {y2}, c4 {z}
 * so the articulation tensors are h1 y1 s y2 z; of them, y1 and y2 are
 * read in backward. The activations backward reads: y1 h3 y2 L, N = 4,
 * ceil(sqrt(4)) = 2 >= 2 articulation tensors: both kept. L follows the
 * last checkpoint (y2): the tail. h3 is dropped after c3; its producer's
 * input h2 was freed after r2, but c2 can re-make it from y1, so h2 is
 * marked for recomputation too. c3_b re-runs c2 then r2: 2 kernels,
 * 2000 ns; iteration 17 x 1000 + 2000 = 19000 ns.
 * Memory: without the policy the forward pass peaks at loss (x y1 h3 y2
 * z L = 6000 B); with it h3 is gone from c3 on, so loss holds 5000 B.
 * Both peak at r2_b (x y1 gs h3 gh3 gh2 = 6000 B): the gradients, not the
 * activations, bound this small block. */
static struct wl_workload *resblock(void)
{
	struct wl_workload *w = wl_new("res", 1);
	const char *names[] = {"x",  "h1", "y1", "h2", "h3", "h4",
			       "s",  "y2", "z",  "L",  "gz", "gy2",
			       "gs", "gh3", "gh2", "gy1", "gh1", "gw"};
	uint32_t id[18];
	add_named(w, names, 18, 10, id);
	enum { x, h1, y1, h2, h3, h4, s, y2, z, L, gz, gy2, gs, gh3, gh2, gy1,
	       gh1, gw };
	K(w, "c1", OT_CONV, WL_FWD, 1e6, &id[x], 1, &id[h1], 1);
	K(w, "r1", OT_RELU, WL_FWD, 1e6, &id[h1], 1, &id[y1], 1);
	K(w, "c2", OT_CONV, WL_FWD, 1e6, &id[y1], 1, &id[h2], 1);
	K(w, "r2", OT_RELU, WL_FWD, 1e6, &id[h2], 1, &id[h3], 1);
	K(w, "c3", OT_CONV, WL_FWD, 1e6, &id[h3], 1, &id[h4], 1);
	uint32_t add_in[] = {id[h4], id[y1]};
	K(w, "add", OT_ADD, WL_FWD, 1e6, add_in, 2, &id[s], 1);
	K(w, "r3", OT_RELU, WL_FWD, 1e6, &id[s], 1, &id[y2], 1);
	K(w, "c4", OT_CONV, WL_FWD, 1e6, &id[y2], 1, &id[z], 1);
	K(w, "loss", OT_LOSS, WL_FWD, 1e6, &id[z], 1, &id[L], 1);
	K(w, "loss_b", OT_LOSS_BWD, WL_BWD, 1e6, &id[L], 1, &id[gz], 1);
	uint32_t i1[] = {id[gz], id[y2]}, i2[] = {id[gy2], id[y2]},
		 i3[] = {id[gs], id[h3]}, i4[] = {id[gh3], id[h3]},
		 i5[] = {id[gh2], id[y1]}, i6[] = {id[gy1], id[gs], id[y1]},
		 i7[] = {id[gh1], id[x]};
	K(w, "c4_b", OT_CONV_BWD_DATA, WL_BWD, 1e6, i1, 2, &id[gy2], 1);
	K(w, "r3_b", OT_RELU_BWD, WL_BWD, 1e6, i2, 2, &id[gs], 1);
	K(w, "c3_b", OT_CONV_BWD_DATA, WL_BWD, 1e6, i3, 2, &id[gh3], 1);
	K(w, "r2_b", OT_RELU_BWD, WL_BWD, 1e6, i4, 2, &id[gh2], 1);
	K(w, "c2_b", OT_CONV_BWD_DATA, WL_BWD, 1e6, i5, 2, &id[gy1], 1);
	K(w, "r1_b", OT_RELU_BWD, WL_BWD, 1e6, i6, 3, &id[gh1], 1);
	K(w, "c1_b", OT_CONV_BWD_FILTER, WL_BWD, 1e6, i7, 2, &id[gw], 1);
	finalize(w);
	return w;
}

static void test_memory_residual(void **state)
{
	(void)state;
	struct wl_workload *w = resblock();
	struct pol p;
	make(&p, NULL, 0); /* mode memory is the default */
	struct st_run st;
	struct recs r;
	gms_err err = {{0}};
	assert_int_equal(run_rec(w, &p, &st, &r, &err), 0);
	assert_false(st.oom.hit);
	char rep[4096];
	report_into(&p, rep, sizeof rep);
	assert_has(rep, "articulation pts   5 separate the graph, 2 read in "
			"backward: y1 y2\n");
	assert_has(rep, "N = 4, target 2.0");
	assert_has(rep, "checkpoints        2 tensors, 0.0 MiB: y1 y2\n");
	assert_has(rep, "kept tail          1 tensors, 0.0 MiB: L\n");
	assert_has(rep, "dropped            1 of 4");
	const struct st_iter *it = &st.iter[1];
	assert_int_equal(it->n_drop, 1);
	assert_int_equal(it->n_recompute, 2);
	assert_int_equal(it->recompute, 2000);
	assert_int_equal(it->time, 19000);
	assert_int_equal(r.n, 4); /* c2 (id 2) then r2 (id 3), twice */
	assert_int_equal(r.op[2], 2);
	assert_int_equal(r.op[3], 3);
	assert_int_equal(st.mem.peak_allocated, 6000);
	st_run_free(&st);
	pol_destroy(&p);
	wl_free(w);
}

/* ---- memory with a mask built from the input -----------------------------
 *   mk: x -> m (a mask from the input alone, as BERT's attention mask)
 *   f1: x, p -> a1 (p a parameter)   f2: a1, m -> a2   f3: a2, m -> a3
 *   f4: a3, m -> a4   loss: a4 -> L
 *   lb: L -> gL   b4: gL, a3, m -> g3   b3: g3, a2, m -> g2
 *   b2: g2, a1, m -> g1   b1: g1, x -> gp
 * m has no parameter upstream: it is not in memory_saving_gradients.py's
 * fwd_ops, so it neither counts as a shortcut nor is recomputed (issue
 * 29: read by every layer, it was on every frontier and only a4 was a
 * bottleneck, "1 separate the graph, 0 read in backward"). Frontiers of
 * the trained tensors after f1..f4 (positions 1..4 of mk f1 f2 f3 f4
 * loss): {a1} {a2} {a3} {a4}: 4 bottlenecks, of which a1 a2 a3 are read
 * in backward. N = |{a1, a2, a3, L}| = 4, target 2, 3 > 2: every
 * ceil(3/2) = 2nd from index 2: a3 kept. a4 and L after it: L the kept
 * tail (a4 is read by nothing in backward). Dropped: a1 and a2, of the 4
 * backward-read activations. m is never re-run (op 0). */
static void test_memory_untrained_mask(void **state)
{
	(void)state;
	struct wl_workload *w = wl_new("mask", 1);
	const char *names[] = {"x", "m", "a1", "a2", "a3", "a4", "L",
			       "gL", "g3", "g2", "g1", "gp"};
	uint32_t id[12];
	add_named(w, names, 12, 7, id);
	enum { x, m, a1, a2, a3, a4, L, gL, g3, g2, g1, gp };
	uint32_t pp = T(w, "p", 1000, WL_PARAM);
	K(w, "mk", OT_OTHER, WL_FWD, 1e6, &id[x], 1, &id[m], 1);
	uint32_t i1[] = {id[x], pp}, i2[] = {id[a1], id[m]},
		 i3[] = {id[a2], id[m]}, i4[] = {id[a3], id[m]};
	K(w, "f1", OT_OTHER, WL_FWD, 1e6, i1, 2, &id[a1], 1);
	K(w, "f2", OT_OTHER, WL_FWD, 1e6, i2, 2, &id[a2], 1);
	K(w, "f3", OT_OTHER, WL_FWD, 1e6, i3, 2, &id[a3], 1);
	K(w, "f4", OT_OTHER, WL_FWD, 1e6, i4, 2, &id[a4], 1);
	K(w, "loss", OT_LOSS, WL_FWD, 1e6, &id[a4], 1, &id[L], 1);
	K(w, "lb", OT_LOSS_BWD, WL_BWD, 1e6, &id[L], 1, &id[gL], 1);
	uint32_t j4[] = {id[gL], id[a3], id[m]}, j3[] = {id[g3], id[a2], id[m]},
		 j2[] = {id[g2], id[a1], id[m]}, j1[] = {id[g1], id[x]};
	K(w, "b4", OT_OTHER, WL_BWD, 1e6, j4, 3, &id[g3], 1);
	K(w, "b3", OT_OTHER, WL_BWD, 1e6, j3, 3, &id[g2], 1);
	K(w, "b2", OT_OTHER, WL_BWD, 1e6, j2, 3, &id[g1], 1);
	K(w, "b1", OT_OTHER, WL_BWD, 1e6, j1, 2, &id[gp], 1);
	finalize(w);
	struct pol p;
	make(&p, NULL, 0);
	struct st_run st;
	struct recs r;
	gms_err err = {{0}};
	assert_int_equal(run_rec(w, &p, &st, &r, &err), 0);
	assert_false(st.oom.hit);
	char rep[4096];
	report_into(&p, rep, sizeof rep);
	assert_has(rep, "articulation pts   4 separate the graph, 3 read in "
			"backward: a1 a2 a3\n");
	assert_has(rep, "N = 4, target 2.0: every 2 from index 2\n");
	assert_has(rep, "checkpoints        1 tensors, 0.0 MiB: a3\n");
	assert_has(rep, "kept tail          1 tensors, 0.0 MiB: L\n");
	assert_has(rep, "dropped            2 of 4");
	assert_has(rep, "untrained inputs   1 activations");
	assert_int_equal(st.iter[1].n_drop, 2);
	for (size_t i = 0; i < r.n; i++)
		assert_int_not_equal(r.op[i], 0); /* mk */
	st_run_free(&st);
	pol_destroy(&p);
	wl_free(w);
}

/* ---- speed on a conv-bn-relu chain ----------------------------------------
 *   conv1: x -> c1   bn1: c1 -> b1, s1 (saved stats)   relu1: b1 -> r1
 *   conv2: r1 -> c2  bn2: c2 -> b2, s2                 relu2: b2 -> r2
 *   conv3: r2 -> c3
 * Backward (conv: its input; bn: X and saved; relu: its output; the loss
 * folded into loss_b, which reads c3):
 *   loss_b: c3 -> g3   conv3_b: g3, r2 -> gr2   relu2_b: gr2, r2 -> gb2
 *   bn2_b: gb2, c2, s2 -> gc2   conv2_b: gc2, r1 -> gr1
 *   relu1_b: gr1, r1 -> gb1   bn1_b: gb1, c1, s1 -> gc1
 *   conv1_b: gc1, x -> gw
 * Forward op ids: conv1 0, bn1 1, relu1 2, conv2 3, bn2 4, relu2 5,
 * conv3 6. speed keeps c1 c2 c3 (conv3 is last: no tail). Dropped: the
 * activations backward reads that are not conv outputs, s1 r1 s2 r2 (b1
 * and b2 are freed by relu already; dropping r1 marks b1 for
 * recomputation, bn1 can re-make it from c1). Each non-conv op is re-run
 * once, when backward first needs one of its outputs: conv3_b needs r2:
 * bn2 (for b2; s2 comes back with it) then relu2; conv2_b needs r1: bn1
 * then relu1. Re-run order 4 5 1 2: 4 kernels, 4000 ns; iteration 7 + 8
 * kernels = 15000 + 4000 ns.
 * (On conv-relu-bn the conv output would be read by nobody in backward;
 * the executor frees it after the ReLU, and regenerating the ReLU's output
 * would then re-run the convolution too: the policy cannot pin a tensor.) */
static struct wl_workload *cbr_chain(void)
{
	struct wl_workload *w = wl_new("cbr", 1);
	const char *names[] = {"x",  "c1",  "b1",  "s1",  "r1",  "c2",
			       "b2", "s2",  "r2",  "c3",  "g3",  "gr2",
			       "gb2", "gc2", "gr1", "gb1", "gc1", "gw"};
	uint32_t id[18];
	add_named(w, names, 18, 10, id);
	enum { x, c1, b1, s1, r1, c2, b2, s2, r2, c3, g3, gr2, gb2, gc2, gr1,
	       gb1, gc1, gw };
	uint32_t bn1o[] = {id[b1], id[s1]}, bn2o[] = {id[b2], id[s2]};
	K(w, "conv1", OT_CONV, WL_FWD, 1e6, &id[x], 1, &id[c1], 1);
	K(w, "bn1", OT_BATCHNORM, WL_FWD, 1e6, &id[c1], 1, bn1o, 2);
	K(w, "relu1", OT_RELU, WL_FWD, 1e6, &id[b1], 1, &id[r1], 1);
	K(w, "conv2", OT_CONV, WL_FWD, 1e6, &id[r1], 1, &id[c2], 1);
	K(w, "bn2", OT_BATCHNORM, WL_FWD, 1e6, &id[c2], 1, bn2o, 2);
	K(w, "relu2", OT_RELU, WL_FWD, 1e6, &id[b2], 1, &id[r2], 1);
	K(w, "conv3", OT_CONV, WL_FWD, 1e6, &id[r2], 1, &id[c3], 1);
	uint32_t i1[] = {id[g3], id[r2]}, i2[] = {id[gr2], id[r2]},
		 i3[] = {id[gb2], id[c2], id[s2]}, i4[] = {id[gc2], id[r1]},
		 i5[] = {id[gr1], id[r1]}, i6[] = {id[gb1], id[c1], id[s1]},
		 i7[] = {id[gc1], id[x]};
	K(w, "loss_b", OT_LOSS_BWD, WL_BWD, 1e6, &id[c3], 1, &id[g3], 1);
	K(w, "conv3_b", OT_CONV_BWD_DATA, WL_BWD, 1e6, i1, 2, &id[gr2], 1);
	K(w, "relu2_b", OT_RELU_BWD, WL_BWD, 1e6, i2, 2, &id[gb2], 1);
	K(w, "bn2_b", OT_BATCHNORM_BWD, WL_BWD, 1e6, i3, 3, &id[gc2], 1);
	K(w, "conv2_b", OT_CONV_BWD_DATA, WL_BWD, 1e6, i4, 2, &id[gr1], 1);
	K(w, "relu1_b", OT_RELU_BWD, WL_BWD, 1e6, i5, 2, &id[gb1], 1);
	K(w, "bn1_b", OT_BATCHNORM_BWD, WL_BWD, 1e6, i6, 3, &id[gc1], 1);
	K(w, "conv1_b", OT_CONV_BWD_FILTER, WL_BWD, 1e6, i7, 2, &id[gw], 1);
	finalize(w);
	return w;
}

/* The run of p on the chain recomputes exactly bn2 relu2 bn1 relu1. */
static void check_cbr(const struct wl_workload *w, struct pol *p)
{
	struct st_run st;
	struct recs r;
	gms_err err = {{0}};
	assert_int_equal(run_rec(w, p, &st, &r, &err), 0);
	assert_false(st.oom.hit);
	const uint32_t want[] = {4, 5, 1, 2};
	assert_int_equal(r.n, 8); /* 4 per iteration */
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(r.op[4 + i], want[i]);
	assert_int_equal(st.iter[1].recompute, 4000);
	assert_int_equal(st.iter[1].n_drop, 4); /* s1 r1 s2 r2 */
	assert_int_equal(st.iter[1].time, 15000 + 4000);
	st_run_free(&st);
}

static void test_speed_cbr(void **state)
{
	(void)state;
	struct wl_workload *w = cbr_chain();
	struct pol p;
	const char *kv[] = {"mode=speed"};
	make(&p, kv, 1);
	check_cbr(w, &p);
	char rep[4096];
	report_into(&p, rep, sizeof rep);
	assert_has(rep, "checkpoints        3 tensors, 0.0 MiB: c1 c2 c3\n");
	assert_has(rep, "kept tail          0 tensors");
	pol_destroy(&p);
	/* list naming the same tensors does the same */
	const char *kv2[] = {"mode=list", "tensors=c1, c2,c3"};
	make(&p, kv2, 2);
	check_cbr(w, &p);
	pol_destroy(&p);
	wl_free(w);
}

/* ---- a residual add after dropout -----------------------------------------
 *   lin: x -> h   drop: h -> d, m (dropout: output, mask; not
 *   recomputable)   add: d, h -> a   norm: a -> y   lin2: y -> z
 * Backward (norm reads its input, the add nothing, dropout its mask):
 *   lin2_b: y, z -> gy   norm_b: a, gy -> ga   add_b: ga -> gd
 *   drop_b: m, gd -> gh   lin_b: x, gh -> gw
 * Op ids 0..9 in that order; all 1000 B, 1e6 FLOPs (1000 ns) each.
 * mode=list keeps z. The others: y, a, h have recomputable producers
 * (dropped after their last forward use), m is the dropout's (kept, read
 * in backward), d too (read by nobody in backward: not the policy's).
 * Backward reads y a m z: N = 4.
 *   h: last forward reader add; nobody reads it later, so the executor
 *      frees it after add: nothing to drop.
 *   a: dropped after norm; its producer add needs d, which was freed
 *      after add (its only reader) and cannot be re-made (dropout), so
 *      ex_drop would refuse: the plan keeps a ("not regenerable").
 *   y: dropped after lin2; norm needs a, resident (read by norm_b): kept
 *      a makes y regenerable. 1 drop per iteration, 2 in the run, none
 *      refused (before the fix the plan counted a as dropped, "2 of 4",
 *      and the run refused it every iteration: 2 refusals).
 * lin2_b re-runs norm: 1 kernel, 1000 ns; iteration 10 x 1000 + 1000.
 * Memory (arena, sums): after add x m a (h, d freed) = 3000; lin2 adds z
 * while y drops: x m a z = 4000; lin2_b re-makes y and adds gy: x m a z y
 * gy = 6000 B, the peak; then z and y go (4000), norm_b frees a and gy
 * for ga (3000), and the rest is lower. */
static struct wl_workload *resdrop(void)
{
	struct wl_workload *w = wl_new("resdrop", 1);
	const char *names[] = {"x",  "h",  "d",	 "m",  "a",  "y",
			       "z",  "gy", "ga", "gd", "gh", "gw"};
	uint32_t id[12];
	add_named(w, names, 12, 7, id);
	enum { x, h, d, m, a, y, z, gy, ga, gd, gh, gw };
	uint32_t dro[] = {id[d], id[m]}, addi[] = {id[d], id[h]};
	K(w, "lin", OT_MATMUL, WL_FWD, 1e6, &id[x], 1, &id[h], 1);
	K(w, "drop", OT_DROPOUT, WL_FWD, 1e6, &id[h], 1, dro, 2);
	K(w, "add", OT_ADD, WL_FWD, 1e6, addi, 2, &id[a], 1);
	K(w, "norm", OT_LAYERNORM, WL_FWD, 1e6, &id[a], 1, &id[y], 1);
	K(w, "lin2", OT_MATMUL, WL_FWD, 1e6, &id[y], 1, &id[z], 1);
	uint32_t i1[] = {id[y], id[z]}, i2[] = {id[a], id[gy]},
		 i4[] = {id[m], id[gd]}, i5[] = {id[x], id[gh]};
	K(w, "lin2_b", OT_MATMUL_BWD, WL_BWD, 1e6, i1, 2, &id[gy], 1);
	K(w, "norm_b", OT_LAYERNORM_BWD, WL_BWD, 1e6, i2, 2, &id[ga], 1);
	K(w, "add_b", OT_ELEMWISE, WL_BWD, 1e6, &id[ga], 1, &id[gd], 1);
	K(w, "drop_b", OT_DROPOUT_BWD, WL_BWD, 1e6, i4, 2, &id[gh], 1);
	K(w, "lin_b", OT_MATMUL_BWD, WL_BWD, 1e6, i5, 2, &id[gw], 1);
	finalize(w);
	return w;
}

/* Run mode=list keeping z (p made here) on w without an OOM; the
 * policy's report in rep. */
static void run_keep_z(const struct wl_workload *w, struct pol *p,
		       struct st_run *st, struct recs *r, char *rep,
		       size_t cap)
{
	const char *kv[] = {"mode=list", "tensors=z"};
	make(p, kv, 2);
	gms_err err = {{0}};
	assert_int_equal(run_rec(w, p, st, r, &err), 0);
	assert_false(st->oom.hit);
	report_into(p, rep, cap);
}

static void test_unregenerable_add(void **state)
{
	(void)state;
	struct wl_workload *w = resdrop();
	struct pol p;
	struct st_run st;
	struct recs r;
	char rep[4096];
	run_keep_z(w, &p, &st, &r, rep, sizeof rep);
	assert_has(rep, "checkpoints        1 tensors, 0.0 MiB: z\n");
	assert_has(rep, "not recomputable   1 tensors, 0.0 MiB: m\n");
	assert_has(rep, "not regenerable    1 tensors, 0.0 MiB: a\n");
	assert_has(rep, "first: a: input d of add is freed by then");
	assert_has(rep, "dropped            1 of 4 backward-read");
	assert_has(rep, "drops planned      1 per iteration\n");
	assert_has(rep, "drops              2\n");
	assert_has(rep, "drops refused      0\n");
	for (int i = 0; i < 2; i++) {
		const struct st_iter *it = &st.iter[i];
		assert_int_equal(it->n_drop, 1);
		assert_int_equal(it->n_recompute, 1);
		assert_int_equal(it->recompute, 1000);
		assert_int_equal(it->time, 11000);
	}
	assert_int_equal(r.n, 2); /* norm (id 3), each iteration */
	assert_int_equal(r.op[0], 3);
	assert_int_equal(r.op[1], 3);
	assert_int_equal(st.mem.peak_allocated, 6000);
	st_run_free(&st);
	pol_destroy(&p);
	wl_free(w);
}

/* ---- a drop that lineage makes possible --------------------------------
 *   drop: x -> w, mw (dropout)   relu: w -> u   a1: u -> t1
 *   a2: u -> t2   out: t2 -> z
 * Backward: bz: z -> gz   out_b: t2, gz -> g2   a1_b: t1, g2 -> g1
 *   drop_b: mw, g1 -> gw
 * Op ids 0..8 in that order; all 1000 B, 1e6 FLOPs (1000 ns) each.
 * mode=list keeps z; mw is kept (dropout, read by drop_b); t1, t2 and u
 * (read by no backward op) have recomputable producers. Replaying the run:
 *   after relu: w freed (its only reader), and dropout cannot re-make it.
 *   after a1: t1 dropped (its input u is resident, a2 reads it); the
 *      drop holds u as lineage (ex.c lineage_take).
 *   after a2: u's last reader is done, but t1's lineage keeps it, so it
 *      is still resident and on the drop list; relu would need w: the
 *      engine refuses, the plan keeps u ("not regenerable").
 *   after out: t2 dropped: a2's input u is still held by t1's lineage (a
 *      plan that looked only at readers would take u for freed and keep
 *      t2).
 * So 2 drops per iteration, none refused (before the plan checked, u's
 * drop was refused every iteration). out_b re-runs a2, a1_b re-runs a1,
 * both from u: iteration 9 x 1000 + 2 x 1000 = 11000 ns; op ids 3, 2.
 * Memory: x is freed after drop, w after relu; the forward pass holds at
 * most 4000 B (mw u t2 z at out). out_b holds mw u gz, the re-made t2 and
 * g2: 5000 B, the peak; a1_b holds mw u g2 t1, then u goes (its lineage
 * released when t1 is re-made) and g1 comes: at most 4000 B. */
static struct wl_workload *lineage_drop(void)
{
	struct wl_workload *w = wl_new("lineage", 1);
	const char *names[] = {"x",  "w",  "mw", "u",  "t1", "t2",
			       "z",  "gz", "g2", "g1", "gw"};
	uint32_t id[11];
	add_named(w, names, 11, 7, id);
	enum { x, ww, mw, u, t1, t2, z, gz, g2, g1, gw };
	uint32_t dro[] = {id[ww], id[mw]};
	K(w, "drop", OT_DROPOUT, WL_FWD, 1e6, &id[x], 1, dro, 2);
	K(w, "relu", OT_RELU, WL_FWD, 1e6, &id[ww], 1, &id[u], 1);
	K(w, "a1", OT_MATMUL, WL_FWD, 1e6, &id[u], 1, &id[t1], 1);
	K(w, "a2", OT_MATMUL, WL_FWD, 1e6, &id[u], 1, &id[t2], 1);
	K(w, "out", OT_MATMUL, WL_FWD, 1e6, &id[t2], 1, &id[z], 1);
	uint32_t i1[] = {id[t2], id[gz]}, i2[] = {id[t1], id[g2]},
		 i3[] = {id[mw], id[g1]};
	K(w, "bz", OT_LOSS_BWD, WL_BWD, 1e6, &id[z], 1, &id[gz], 1);
	K(w, "out_b", OT_MATMUL_BWD, WL_BWD, 1e6, i1, 2, &id[g2], 1);
	K(w, "a1_b", OT_MATMUL_BWD, WL_BWD, 1e6, i2, 2, &id[g1], 1);
	K(w, "drop_b", OT_DROPOUT_BWD, WL_BWD, 1e6, i3, 2, &id[gw], 1);
	finalize(w);
	return w;
}

static void test_lineage_drop(void **state)
{
	(void)state;
	struct wl_workload *w = lineage_drop();
	struct pol p;
	struct st_run st;
	struct recs r;
	char rep[4096];
	run_keep_z(w, &p, &st, &r, rep, sizeof rep);
	assert_has(rep, "not regenerable    1 tensors, 0.0 MiB: u\n");
	assert_has(rep, "first: u: input w of relu is freed by then");
	assert_has(rep, "dropped            2 of 4 backward-read");
	assert_has(rep, "drops planned      2 per iteration\n");
	assert_has(rep, "drops              4\n");
	assert_has(rep, "drops refused      0\n");
	const uint32_t want[] = {3, 2, 3, 2};
	assert_int_equal(r.n, 4);
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(r.op[i], want[i]);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(st.iter[i].n_drop, 2);
		assert_int_equal(st.iter[i].time, 11000);
	}
	assert_int_equal(st.mem.peak_allocated, 5000);
	st_run_free(&st);
	pol_destroy(&p);
	wl_free(w);
}

/* Parameters: the mode is one of four; a list names tensors that exist. */
static void test_params(void **state)
{
	(void)state;
	struct pol p;
	gms_err err = {{0}};
	const char *bad[] = {"mode=fast"};
	assert_int_equal(pol_create(&p, "checkpoint", NULL, NULL, bad, 1, &err),
			 -1);
	assert_has(err.msg, "'mode'");
	const char *neg[] = {"segments=-1"};
	assert_int_equal(pol_create(&p, "checkpoint", NULL, NULL, neg, 1, &err),
			 -1);
	assert_has(err.msg, "'segments'");
	struct wl_workload *w = cbr_chain();
	const char *kv[] = {"mode=list", "tensors=c1,c9"};
	make(&p, kv, 2);
	struct st_run st;
	struct recs r;
	assert_int_equal(run_rec(w, &p, &st, &r, &err), -1);
	assert_has(err.msg, "unknown tensor 'c9'");
	st_run_free(&st);
	pol_destroy(&p);
	const char *none[] = {"mode=list"};
	make(&p, none, 1);
	assert_int_equal(run_rec(w, &p, &st, &r, &err), -1);
	assert_has(err.msg, "at least one tensor");
	st_run_free(&st);
	pol_destroy(&p);
	wl_free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sqrt_chain),
		cmocka_unit_test(test_sqrt_options),
		cmocka_unit_test(test_memory_residual),
		cmocka_unit_test(test_memory_untrained_mask),
		cmocka_unit_test(test_speed_cbr),
		cmocka_unit_test(test_unregenerable_add),
		cmocka_unit_test(test_lineage_drop),
		cmocka_unit_test(test_params),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
