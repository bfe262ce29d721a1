/*
 * test_accudnn_model.c - AccUDNN's model (policies/accudnn_model.c) on
 * networks worked out on paper, every expected value derived in the
 * comment above it: the GMAP of a 3-layer network, Algorithm 1 on a
 * 4-layer one (8 processes), Algorithm 2 stepping down twice to pin one
 * feature map, the fitted FLOPS curve, equations 2, 3 and 9.
 *
 * Processes are numbered from 0 (the paper counts from 1). Sizes are
 * bytes at k_base, times seconds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>

#include "../policies/accudnn_model.h"
#include "testkit.h"

/* Add an op of layer `layer`, type, phase and FLOPs, with optional
 * algorithm choices. */
static void op(struct wl_workload *w, const char *name, const char *layer,
	       enum wl_op_type type, enum wl_phase ph, double flops,
	       const uint32_t *in, uint32_t n_in, const uint32_t *out,
	       uint32_t n_out, const struct wl_algo *al, uint32_t n_al)
{
	gms_err err;
	struct wl_op_desc d = {.name = name, .layer = layer, .type = type,
			       .phase = ph, .in = in, .n_in = n_in, .out = out,
			       .n_out = n_out, .flops = flops, .time = 1,
			       .algos = al, .n_algos = n_al};
	if (wl_add_op(w, &d, &err) == WL_NONE)
		fail_msg("%s", err.msg);
}

static void gmap_ok(const struct wl_workload *w, const bool *pers,
		    struct ac_gmap *g)
{
	gms_err err = {{0}};
	if (ac_gmap_build(w, pers, g, &err) < 0)
		fail_msg("%s", err.msg);
}

/* |x - y| within 1e-12 of |y| (or 1e-15 absolute near 0). */
static void near(double x, double y)
{
	if (!(fabs(x - y) <= 1e-12 * fabs(y) + 1e-15))
		fail_msg("%.17g != %.17g", x, y);
}

/* The all-swap peak and its split. */
static void check_peak(const struct ac_gmap *g, uint64_t peak, uint32_t at,
		       uint64_t fm, uint64_t ws, uint64_t others)
{
	assert_int_equal(g->m_peak, peak);
	assert_int_equal(g->peak_at, at);
	assert_int_equal(g->m_fm_peak, fm);
	assert_int_equal(g->m_ws_peak, ws);
	assert_int_equal(g->m_others_peak, others);
}

/* A strategy's batches, pins and remaining violations. */
static void check_strategy(const struct ac_strategy *s, int64_t k_max,
			   int64_t k_star, uint32_t n_pinned, uint32_t viol)
{
	assert_int_equal(s->k_max, k_max);
	assert_int_equal(s->k_star, k_star);
	assert_int_equal(s->n_pinned, n_pinned);
	assert_int_equal(s->n_violations, viol);
}

/* One process's expected figures. */
struct want {
	uint32_t first, n_ops, type;
	double flops;
	uint64_t alloc, release, prefetch, offload, workspace;
};

static void check_layer(const struct ac_gmap *g, size_t j,
			const struct want *e)
{
	const struct ac_layer *L = &g->layer[j];
	print_message("process %zu\n", j);
	assert_int_equal(L->first_op, e->first);
	assert_int_equal(L->n_ops, e->n_ops);
	assert_int_equal(L->type, e->type);
	near(L->flops, e->flops);
	assert_int_equal(L->alloc, e->alloc);
	assert_int_equal(L->release, e->release);
	assert_int_equal(L->prefetch, e->prefetch);
	assert_int_equal(L->offload, e->offload);
	assert_int_equal(L->workspace, e->workspace);
}

/* ---- the GMAP of a 3-layer network -------------------------------------
 * Layers c (conv), r (relu), l (loss); k_base 4. Tensors: x input 8,
 * w param 40, a act 100, b act 60, y act 4, gb act-grad 60, ga act-grad
 * 100, gw param-grad 40. Ops (issue order):
 *   0 c.fwd  CONV      fwd  x,w  -> a   1000 FLOPs; algos A (ws 30,
 *                                       scale 1) and B (ws 10, scale 2)
 *   1 r.fwd  RELU      fwd  a    -> b     50
 *   2 l.fwd  LOSS      fwd  b    -> y     20
 *   3 l.bwd  LOSS_BWD  bwd  y,b  -> gb    20
 *   4 r.bwd  RELU_BWD  bwd  gb,a -> ga    50
 *   5 c.bwdf CONV_BWD_FILTER bwd ga,x -> gw 900
 *   6 c.upd  UPDATE    upd  w,gw         80
 * Processes: 0 c.fwd, 1 r.fwd, 2 l.fwd, 3 l.bwd, 4 r.bwd, 5 c.bwdf +
 * c.upd (the update directly follows its layer's backward run: 980
 * FLOPs, type CONV_BWD_FILTER, the op with the most FLOPs).
 * Feature maps (forward-produced, read in backward), by producer:
 *   a 100: produced 0, last fwd reader r.fwd -> fwd_last 1, first bwd
 *          reader r.bwd -> needed 4, bwd_last 4
 *   b 60:  produced 1, fwd_last 2, needed 3, bwd_last 3
 *   y 4:   produced 2, no fwd reader -> fwd_last 2, needed 3, bwd_last 3
 * m_para = w 40 + gw 40 = 80 (gradients of parameters do not scale).
 * Others: x 8 alive 0..5 (first reader c.fwd, last c.bwdf), gb 60 3..4,
 * ga 100 4..5. Workspace: c.fwd's fastest algo A, 30 (B would give 10).
 * Seq_allocate: 0: a 100 + x 8 + ws 30 = 138; 1: b 60; 2: y 4;
 *   3: gb 60 + prefetch b 60 + y 4 = 124; 4: ga 100 + prefetch a 100 =
 *   200; 5: 0 (gw is in m_para).
 * Seq_release: 0: ws 30; 1: a's device copy 100; 2: b's and y's device
 *   copies 64; 3: b's and y's prefetched copies 64; 4: gb 60 + a's
 *   prefetched copy 100 = 160; 5: ga 100 + x 8 = 108.
 * Prefetch: 3: 64, 4: 100. Offload: 0: 100, 1: 60, 2: 4.
 * Usage (alloc through j - release before j): 138, 198-30 = 168,
 * 202-130 = 72, 326-194 = 132, 526-258 = 268, 526-418 = 108: peak 268 at
 * 4, of which feature maps = a's prefetched copy 100, workspace 0, others
 * gb 60 + ga 100 + x 8 = 168.
 * With persistent = {x, w} (gw is m_para regardless): m_para 88, x leaves
 * the active area: alloc[0] 130, release[5] 100, peak 268-8 = 260 at 4,
 * others 160. */
static struct wl_workload *net3(void)
{
	struct wl_workload *w = wl_new("net3", 4);
	uint32_t x = T(w, "x", 8, WL_INPUT), wt = T(w, "w", 40, WL_PARAM);
	uint32_t a = T(w, "a", 100, WL_ACT), b = T(w, "b", 60, WL_ACT);
	uint32_t y = T(w, "y", 4, WL_ACT), gb = T(w, "gb", 60, WL_ACT_GRAD);
	uint32_t ga = T(w, "ga", 100, WL_ACT_GRAD);
	uint32_t gw = T(w, "gw", 40, WL_PARAM_GRAD);
	struct wl_algo al[2] = {{.name = "A", .workspace = 30,
				 .time_scale = 1},
				{.name = "B", .workspace = 10,
				 .time_scale = 2}};
	op(w, "c.fwd", "c", OT_CONV, WL_FWD, 1000, (uint32_t[]){x, wt}, 2, &a,
	   1, al, 2);
	op(w, "r.fwd", "r", OT_RELU, WL_FWD, 50, &a, 1, &b, 1, NULL, 0);
	op(w, "l.fwd", "l", OT_LOSS, WL_FWD, 20, &b, 1, &y, 1, NULL, 0);
	op(w, "l.bwd", "l", OT_LOSS_BWD, WL_BWD, 20, (uint32_t[]){y, b}, 2,
	   &gb, 1, NULL, 0);
	op(w, "r.bwd", "r", OT_RELU_BWD, WL_BWD, 50, (uint32_t[]){gb, a}, 2,
	   &ga, 1, NULL, 0);
	op(w, "c.bwdf", "c", OT_CONV_BWD_FILTER, WL_BWD, 900,
	   (uint32_t[]){ga, x}, 2, &gw, 1, NULL, 0);
	op(w, "c.upd", "c", OT_UPDATE, WL_UPD, 80, (uint32_t[]){wt, gw}, 2,
	   NULL, 0, NULL, 0);
	finalize(w);
	return w;
}

static void test_gmap_3_layers(void **state)
{
	(void)state;
	struct wl_workload *w = net3();
	struct ac_gmap g;
	gmap_ok(w, NULL, &g);
	assert_int_equal(g.n, 6);
	assert_int_equal(g.k_base, 4);
	const struct want e[6] = {
		{0, 1, OT_CONV, 1000, 138, 30, 0, 100, 30},
		{1, 1, OT_RELU, 50, 60, 100, 0, 60, 0},
		{2, 1, OT_LOSS, 20, 4, 64, 0, 4, 0},
		{3, 1, OT_LOSS_BWD, 20, 124, 64, 64, 0, 0},
		{4, 1, OT_RELU_BWD, 50, 200, 160, 100, 0, 0},
		{5, 2, OT_CONV_BWD_FILTER, 980, 0, 108, 0, 0, 0}};
	for (size_t j = 0; j < 6; j++)
		check_layer(&g, j, &e[j]);
	assert_int_equal(g.n_fm, 3);
	const struct ac_fm fm[3] = {
		{wl_tensor_id(w, "a"), 100, 0, 1, 4, 4},
		{wl_tensor_id(w, "b"), 60, 1, 2, 3, 3},
		{wl_tensor_id(w, "y"), 4, 2, 2, 3, 3}};
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(g.fm[i].tensor, fm[i].tensor);
		assert_int_equal(g.fm[i].bytes, fm[i].bytes);
		assert_int_equal(g.fm[i].produced, fm[i].produced);
		assert_int_equal(g.fm[i].fwd_last, fm[i].fwd_last);
		assert_int_equal(g.fm[i].needed, fm[i].needed);
		assert_int_equal(g.fm[i].bwd_last, fm[i].bwd_last);
	}
	assert_int_equal(g.m_para, 80);
	check_peak(&g, 268, 4, 100, 0, 168);
	ac_gmap_free(&g);

	bool pers[8] = {0};
	pers[wl_tensor_id(w, "x")] = pers[wl_tensor_id(w, "w")] = true;
	gmap_ok(w, pers, &g);
	assert_int_equal(g.m_para, 88);
	assert_int_equal(g.layer[0].alloc, 130);
	assert_int_equal(g.layer[5].release, 100);
	check_peak(&g, 260, 4, 100, 0, 160);
	ac_gmap_free(&g);
	wl_free(w);
}

/* ---- a 4-layer chain (8 processes) ------------------------------------
 * k_base kb. Tensors: x input 10, a1 100, a2 200, a3 A3 (acts), y 10
 * (the loss), g3 300, g2 200, g1 100 (act grads), w1g 50 (param grad).
 * Ops, one per process, all OT_OTHER of 10 FLOPs:
 *   0 F1 x->a1  1 F2 a1->a2  2 F3 a2->a3  3 F4 a3->y
 *   4 B4 y->g3  5 B3 g3,a2->g2  6 B2 g2,a1->g1  7 B1 g1,x->w1g
 * Feature maps: a1 (produced 0, fwd_last 1, needed 6, bwd_last 6), a2 (1,
 * 2, 5, 5), y (3, 3, 4, 4); a3 is read in forward only. m_para = 50.
 * Seq_allocate: [a1 100 + x 10, a2 200, a3 A3, y 10, g3 300 + y 10,
 *   g2 200 + a2 200, g1 100 + a1 100, 0]
 *   = [110, 200, A3, 10, 310, 400, 200, 0]
 * Seq_release: [0, a1 100, a2 200, a3 A3 + y 10, y 10, g3 300 + a2 200,
 *   g2 200 + a1 100, g1 100 + x 10]
 *   = [0, 100, 200, A3+10, 10, 500, 300, 110]
 * Prefetch: [0, 0, 0, 0, 10, 200, 100, 0]. */
static struct wl_workload *chain4(uint64_t a3_bytes, int64_t kb)
{
	struct wl_workload *w = wl_new("chain4", kb);
	uint32_t x = T(w, "x", 10, WL_INPUT), a1 = T(w, "a1", 100, WL_ACT);
	uint32_t a2 = T(w, "a2", 200, WL_ACT),
		 a3 = T(w, "a3", a3_bytes, WL_ACT);
	uint32_t y = T(w, "y", 10, WL_ACT), g3 = T(w, "g3", 300, WL_ACT_GRAD);
	uint32_t g2 = T(w, "g2", 200, WL_ACT_GRAD),
		 g1 = T(w, "g1", 100, WL_ACT_GRAD);
	uint32_t w1g = T(w, "w1g", 50, WL_PARAM_GRAD);
	const enum wl_op_type o = OT_OTHER;
	op(w, "F1", "L1", o, WL_FWD, 10, &x, 1, &a1, 1, NULL, 0);
	op(w, "F2", "L2", o, WL_FWD, 10, &a1, 1, &a2, 1, NULL, 0);
	op(w, "F3", "L3", o, WL_FWD, 10, &a2, 1, &a3, 1, NULL, 0);
	op(w, "F4", "L4", o, WL_FWD, 10, &a3, 1, &y, 1, NULL, 0);
	op(w, "B4", "L4", o, WL_BWD, 10, &y, 1, &g3, 1, NULL, 0);
	op(w, "B3", "L3", o, WL_BWD, 10, (uint32_t[]){g3, a2}, 2, &g2, 1,
	   NULL, 0);
	op(w, "B2", "L2", o, WL_BWD, 10, (uint32_t[]){g2, a1}, 2, &g1, 1,
	   NULL, 0);
	op(w, "B1", "L1", o, WL_BWD, 10, (uint32_t[]){g1, x}, 2, &w1g, 1,
	   NULL, 0);
	finalize(w);
	return w;
}

static void check_chain4(const struct ac_gmap *g, uint64_t a3)
{
	const uint64_t al[8] = {110, 200, a3, 10, 310, 400, 200, 0};
	const uint64_t rl[8] = {0, 100, 200, a3 + 10, 10, 500, 300, 110};
	const uint64_t pf[8] = {0, 0, 0, 0, 10, 200, 100, 0};
	assert_int_equal(g->n, 8);
	assert_int_equal(g->m_para, 50);
	for (size_t j = 0; j < 8; j++) {
		assert_int_equal(g->layer[j].alloc, al[j]);
		assert_int_equal(g->layer[j].release, rl[j]);
		assert_int_equal(g->layer[j].prefetch, pf[j]);
	}
}

static void ready_ok(const struct ac_gmap *g, int64_t k, uint64_t budget,
		     const double *tc, const double *tp, double *tr)
{
	gms_err err = {{0}};
	if (ac_t_ready(g, k, budget, tc, tp, tr, &err) < 0)
		fail_msg("%s", err.msg);
}

/* ---- Algorithm 1 --------------------------------------------------------
 * chain4 with A3 = 300, k = k_base = 1, budget 1000, t_compute 1 s each,
 * so the compute of processes 0..c ends at S[c] = c + 1. Prefetch times
 * at 400 B/s: y 0.025, a2 0.5, a1 0.25: t_pre = [0,0,0,0, .025, .5, .25,
 * 0].
 *   j0: t_ready = t_pre[0] = 0; M = 110.
 *   j1..j3: nothing has finished at t = 0 (S[0] = 1); M + alloc = 310,
 *     610, 620 <= 1000: t_ready = 0; M = 620.
 *   j4: 620 + 310 = 930 <= 1000: t_ready = 0 + 0.025; M = 930.
 *   j5: nothing finished by 0.025; 930 + 400 > 1000: suspended.
 *     j_current = 0 (S[0] = 1 > 0.025); releases from 0: 0, 100, 300,
 *     610 > 400 at 3 = j_satisfied; t_ready = S[3] + 0.5 = 4.5; M = 1330.
 *   j6: the remark: processes with S[c] <= 4.5, i.e. 0..3, have finished:
 *     M -= 0 + 100 + 200 + 310 -> 720; 720 + 200 = 920 <= 1000: t_ready =
 *     4.5 + 0.25 = 4.75; M = 920.
 *   j7: nothing more finished by 4.75 (S[4] = 5); 920 + 0 <= 1000:
 *     t_ready = 4.75.
 * (6) (t_ready[j] <= S[j-1], 0 for j = 0): 4.5 <= 5, 4.75 <= 6, 4.75 <=
 * 7: no violation. Without the remark j6 would be suspended (1330 + 200
 * > 1000): j_current = 4, releases 10, 510 > 200 at 5, t_ready = 6 +
 * 0.25 = 6.25 > 6, a violation.
 * At k = 2 with budget 2000 every size doubles with the budget: the same
 * decisions, the same times (unscaled sizes would let j5 through at once:
 * 0.525).
 * At 100 B/s (t_pre = [0,0,0,0, .1, 2, 1, 0]):
 *   j4: 0.1; j5: suspended as above, t_ready = S[3] + 2 = 6; j6: finished
 *   by 6: 0..5 (S[5] = 6), M = 1330 - 1120 = 210, 410 <= 1000: t_ready =
 *   6 + 1 = 7; j7: 6 finished too, t_ready = 7.
 *   (6): 6 > S[4] = 5 and 7 > S[5] = 6: processes 5 and 6 violate. */
static void test_t_ready_4_layers(void **state)
{
	(void)state;
	struct wl_workload *w = chain4(300, 1);
	struct ac_gmap g;
	gmap_ok(w, NULL, &g);
	check_chain4(&g, 300);
	const double tc[8] = {1, 1, 1, 1, 1, 1, 1, 1};
	const double tp[8] = {0, 0, 0, 0, 0.025, 0.5, 0.25, 0};
	const double want[8] = {0, 0, 0, 0, 0.025, 4.5, 4.75, 4.75};
	double tr[8];
	bool bad[8];
	ready_ok(&g, 1, 1000, tc, tp, tr);
	for (size_t j = 0; j < 8; j++)
		near(tr[j], want[j]);
	assert_int_equal(ac_violations(8, tc, tr, bad), 0);

	ready_ok(&g, 2, 2000, tc, tp, tr);
	for (size_t j = 0; j < 8; j++)
		near(tr[j], want[j]);

	const double tp2[8] = {0, 0, 0, 0, 0.1, 2, 1, 0};
	const double want2[8] = {0, 0, 0, 0, 0.1, 6, 7, 7};
	ready_ok(&g, 1, 1000, tc, tp2, tr);
	for (size_t j = 0; j < 8; j++)
		near(tr[j], want2[j]);
	assert_int_equal(ac_violations(8, tc, tr, bad), 2);
	for (size_t j = 0; j < 8; j++)
		assert_int_equal(bad[j], j == 5 || j == 6);
	ac_gmap_free(&g);
	wl_free(w);
}

/* ---- Algorithm 1: "larger than" is strict ---------------------------------
 * A GMAP written by hand, 4 processes, k = k_base = 1: alloc [100, 0, 50,
 * 0], release [50, 50, 50, 0], budget 120, t_compute 1 each, t_pre [0, 0,
 * 0.5, 0].
 *   j0: 0, M 100; j1: 100 + 0 <= 120: 0; j2: 100 + 50 > 120: j_current 0
 *   (S[0] = 1 > 0); releases from 0: 50 (not larger than 50), 100 > 50:
 *   j_satisfied 1, t_ready = S[1] + 0.5 = 2.5 (">=" would stop at 0: 1.5);
 *   j3: 0 and 1 finished by 2.5: M 150 - 100 = 50, +0: 2.5.
 *   (6): 2.5 > S[1] = 2: process 2 violates. */
static void test_t_ready_strict(void **state)
{
	(void)state;
	struct ac_layer L[4] = {{.alloc = 100, .release = 50},
				{.alloc = 0, .release = 50},
				{.alloc = 50, .release = 50},
				{.alloc = 0, .release = 0}};
	struct ac_gmap g = {.layer = L, .n = 4, .k_base = 1};
	const double tc[4] = {1, 1, 1, 1}, tp[4] = {0, 0, 0.5, 0};
	const double want[4] = {0, 0, 2.5, 2.5};
	double tr[4];
	bool bad[4];
	ready_ok(&g, 1, 120, tc, tp, tr);
	for (size_t j = 0; j < 4; j++)
		near(tr[j], want[j]);
	assert_int_equal(ac_violations(4, tc, tr, bad), 1);
	assert_true(bad[2]);
}

/* A model where every op type costs F / 10 s (peak 10 FLOP/s, no
 * saturation, no launch) and copies run at `bw` B/s. */
static void flat_perf(struct ac_perf *p, double bw)
{
	memset(p, 0, sizeof *p);
	for (int t = 0; t < OT_COUNT; t++) {
		p->have[t] = true;
		p->peak[t] = 10;
		p->alpha[t] = 1;
	}
	p->bandwidth = bw;
}

/* ---- Algorithm 2 ---------------------------------------------------------
 * chain4 with A3 = 1000 and k_base 10; 10 FLOPs per op at 10 FLOP/s: 1 s
 * per process at k_base, k / 10 s at k; 400 B/s.
 * GMAP: alloc [110, 200, 1000, 10, 310, 400, 200, 0], release [0, 100,
 * 200, 1010, 10, 500, 300, 110]; usage 110, 310, 1310-100 = 1210,
 * 1320-300 = 1020, 1630-1310 = 320, 2030-1320 = 710, 2230-1820 = 410,
 * 2230-2120 = 110: M_peak = 1210 at 2, feature maps there a2's device
 * copy 200, workspace 0, others x 10 + a3 1000 = 1010; m_para 50.
 * Budget 24250: k_max = floor(10 (24250 - 1010 - 50 - 0) / 200) = 1159 by
 * the formula, capped by (4) at floor(10 (24250 - 50) / 1210) = 200.
 * Every size and time scales by k / 10 and so does M_peak(k) = 121 k, so
 * Algorithm 1 at budget M_peak(k) takes the same branches at every k;
 * at k_base, budget 1210, t_pre = [0,0,0,0, .025, .5, .25, 0]:
 *   j0 0 (M 110); j1 0 (310); j2: 1310 > 1210, j_current 0, releases 0,
 *   100 never exceed 1000 by j-1 = 1: j_satisfied 1, t = S[1] = 2
 *   (M 1310); j3: 0, 1 finished by 2: M 1210, +10 > 1210, j_current 2,
 *   R[2] = 200 > 10: t = S[2] = 3 (M 1220); j4: 2 finished: M 1020, +310
 *   > 1210, j_current 3, R[3] = 1010 > 310: t = S[3] + .025 = 4.025 > 4:
 *   VIOLATES; M 1330; j5: 3 finished by 4.025: M 320, +400 = 720 <=
 *   1210: 4.525 <= 5; j6: 920: 4.775 <= 6; j7: 4.775 <= 7.
 *   Ω = {4}: y (prefetched for process 4) is the candidate.
 * With y pinned (alloc[4] 300, release[4] 0, t_pre[4] 0): j4: 1020 + 300
 *   > 1210, j_satisfied 3: t = 4 <= 4; j5: M 1320 - 1010 = 310, +400 =
 *   710: 4.5; j6: 910: 4.75; j7: 4.75: no violation.
 * Search: k = 200, budget 24250 - 50 = 24200 = M_peak(200): Ω = {4}.
 *   k = 199: area 24200 - 121*199 = 121 < y's 199 bytes: no pin, Ω = {4}.
 *   k = 198: area 242 >= 198: pin y; (6) holds. k* = 198, 2 steps, 1
 *   pinned (y, the third feature map by producer: a1, a2, y).
 * t_iter(198) = 8 processes * 19.8 s = 158.4 s.
 * At 199 with nothing pinned every time is 19.9 times k_base's: process 4
 * is ready at S[3] + t_pre[4] = 4 * 19.9 + 0.025 * 19.9 = 80.0975 s,
 * 0.4975 s after process 3 ends, the only lateness; equation 2 (159.2 s)
 * does not hold, so the prediction is t_ready's: 159.2 + 0.4975 =
 * 159.6975 s (issue 29: it was 159.2 whatever the violations). ac_assess
 * of the search's own pins at 198 finds what the search found. */
static void test_search_steps_twice_pins_one(void **state)
{
	(void)state;
	struct wl_workload *w = chain4(1000, 10);
	struct ac_gmap g;
	gmap_ok(w, NULL, &g);
	check_chain4(&g, 1000);
	check_peak(&g, 1210, 2, 200, 0, 1010);
	struct ac_perf p;
	flat_perf(&p, 400);
	struct ac_strategy s;
	gms_err err = {{0}};
	if (ac_search(&g, &p, 24250, &s, &err) < 0)
		fail_msg("%s", err.msg);
	check_strategy(&s, 200, 198, 1, 0);
	assert_int_equal(s.steps, 2);
	assert_int_equal(g.fm[2].tensor, wl_tensor_id(w, "y"));
	assert_false(s.pinned[0]);
	assert_false(s.pinned[1]);
	assert_true(s.pinned[2]);
	near(s.t_iter, 158.4);
	ac_strategy_free(&s);

	/* ac_pin_at, the inner step at a fixed k: at 198 it pins y as
	 * above; at 199 the area (121) is too small and process 4 still
	 * violates; at 201, M_peak = 24321 > 24200: not trainable */
	if (ac_pin_at(&g, &p, 24250, 198, &s, &err) < 0)
		fail_msg("%s", err.msg);
	check_strategy(&s, 200, 198, 1, 0);
	assert_true(s.pinned[2]);
	ac_strategy_free(&s);
	if (ac_pin_at(&g, &p, 24250, 199, &s, &err) < 0)
		fail_msg("%s", err.msg);
	check_strategy(&s, 200, 199, 0, 1);
	assert_false(s.stall_free);
	near(s.t_iter, 159.6975);
	ac_strategy_free(&s);
	assert_int_equal(ac_pin_at(&g, &p, 24250, 201, &s, &err), -1);
	/* a given pinned set judged as the search would */
	bool pins[3] = {false, false, true};
	if (ac_assess(&g, &p, 24250, 198, pins, &s, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(s.n_pinned, 1);
	assert_int_equal(s.n_violations, 0);
	assert_true(s.stall_free);
	near(s.t_iter, 158.4);
	ac_strategy_free(&s);
	bool none[3] = {false, false, false};
	if (ac_assess(&g, &p, 24250, 199, none, &s, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(s.n_violations, 1);
	near(s.t_iter, 159.6975);
	ac_strategy_free(&s);
	ac_gmap_free(&g);
	wl_free(w);
}

/* ---- k_max --------------------------------------------------------------
 * The same GMAP (M_others 1010, M_ws 0, M_FM 200 at the peak, m_para 50,
 * M_peak 1210, k_base 10).
 *   budget 1160: formula floor(10 (1160 - 1010 - 50) / 200) = 5; (4)
 *     allows floor(10 (1160 - 50) / 1210) = 9: k_max = 5 (the formula).
 *   budget 1065: formula floor(10 * 5 / 200) = 0: not trainable. */
static void test_k_max(void **state)
{
	(void)state;
	struct wl_workload *w = chain4(1000, 10);
	struct ac_gmap g;
	gmap_ok(w, NULL, &g);
	struct ac_perf p;
	flat_perf(&p, 400);
	struct ac_strategy s;
	gms_err err = {{0}};
	if (ac_search(&g, &p, 1160, &s, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(s.k_max, 5);
	ac_strategy_free(&s);
	assert_int_equal(ac_search(&g, &p, 1065, &s, &err), -1);
	assert_non_null(strstr(err.msg, "not trainable"));
	ac_gmap_free(&g);
	wl_free(w);
}

/* ---- the fitted FLOPS curve ---------------------------------------------
 * 30 conv kernels from t = 5000 ns + F / (1e12 min(1, F / 1e9)^0.6) at F
 * log-spaced over 1e6 .. 1e11: the fit recovers peak 1e12, sat 1e9,
 * alpha 0.6, launch 5000 ns (to 1%: the samples are exact, the fitter's
 * grid and polish leave only rounding).
 * Relu: FLOPs 1e6, 1e6, 3e6 in 1000, 1000, 2000 ns: 2 distinct sizes, a
 * constant rate 5e6 / 4000 ns = 1.25e12 FLOP/s, no launch.
 * Copies: 1000 B in 1000 ns (1 B/ns) and 4000 B in 2000 ns (2 B/ns):
 * bandwidth = the mean rate 1.5e9 B/s (total/total would be 1.667e9).
 * rate_all with the relu kernels alone: 1.25e12. No copy: bandwidth 0. */
static void test_fit_recovers_curve(void **state)
{
	(void)state;
	struct ac_sample k[33], c[2] = {{0, 1000, 1000}, {0, 4000, 2000}};
	for (int i = 0; i < 30; i++) {
		double F = 1e6 * pow(10, 5.0 * i / 29);
		double thr = 1e12 * pow(F < 1e9 ? F / 1e9 : 1, 0.6);
		k[i] = (struct ac_sample){OT_CONV, F, 5000 + F * 1e9 / thr};
	}
	k[30] = (struct ac_sample){OT_RELU, 1e6, 1000};
	k[31] = (struct ac_sample){OT_RELU, 1e6, 1000};
	k[32] = (struct ac_sample){OT_RELU, 3e6, 2000};
	struct ac_perf p;
	gms_err err = {{0}};
	if (ac_perf_fit(k, 33, c, 2, &p, &err) < 0)
		fail_msg("%s", err.msg);
	assert_true(p.have[OT_CONV] && p.fitted[OT_CONV]);
	assert_true(fabs(p.peak[OT_CONV] / 1e12 - 1) < 0.01);
	assert_true(fabs(p.sat[OT_CONV] / 1e9 - 1) < 0.01);
	assert_true(fabs(p.alpha[OT_CONV] / 0.6 - 1) < 0.01);
	assert_true(fabs(p.launch[OT_CONV] / 5000 - 1) < 0.01);
	assert_true(p.have[OT_RELU] && !p.fitted[OT_RELU]);
	near(p.peak[OT_RELU], 1.25e12);
	near(p.launch[OT_RELU], 0);
	assert_false(p.have[OT_POOL]);
	near(p.bandwidth, 1.5e9);
	if (ac_perf_fit(k + 30, 3, c, 2, &p, &err) < 0)
		fail_msg("%s", err.msg);
	near(p.rate_all, 1.25e12);
	/* no copy sample: a model without bandwidth (a network with no
	 * feature map needs none); no kernel sample: refused */
	assert_int_equal(ac_perf_fit(k, 33, c, 0, &p, &err), 0);
	near(p.bandwidth, 0);
	assert_int_equal(ac_perf_fit(k, 0, c, 2, &p, &err), -1);
}

/* The fit memo (issue 37): the same samples are fitted once and give the
 * same model, bit for bit, as ac_perf_fit; one sample changed (a time
 * 1 ns longer) is a new fit; a failed fit (no kernel sample) is not
 * kept. */
static void test_fit_memo(void **state)
{
	(void)state;
	struct ac_sample k[30], c[2] = {{0, 1000, 1000}, {0, 4000, 2000}};
	for (int i = 0; i < 30; i++) {
		double F = 1e6 * pow(10, 5.0 * (i % 10) / 9);
		k[i] = (struct ac_sample){OT_CONV, F, 5000 + F / 1e3};
	}
	struct ac_perf want, a, b, d;
	gms_err err = {{0}};
	if (ac_perf_fit(k, 30, c, 2, &want, &err) < 0)
		fail_msg("%s", err.msg);
	struct ac_fit_memo *m = ac_fit_memo_new();
	assert_non_null(m);
	size_t fits, hits;
	assert_int_equal(ac_perf_fit_memo(m, k, 30, c, 2, &a, &err), 0);
	assert_int_equal(ac_perf_fit_memo(m, k, 30, c, 2, &b, &err), 0);
	ac_fit_memo_counts(m, &fits, &hits);
	assert_int_equal(fits, 1);
	assert_int_equal(hits, 1);
	assert_memory_equal(&a, &want, sizeof want);
	assert_memory_equal(&b, &want, sizeof want);
	k[7].ns += 1;
	assert_int_equal(ac_perf_fit_memo(m, k, 30, c, 2, &d, &err), 0);
	assert_int_equal(ac_perf_fit_memo(m, k, 0, c, 2, &d, &err), -1);
	assert_int_equal(ac_perf_fit_memo(m, k, 0, c, 2, &d, &err), -1);
	ac_fit_memo_counts(m, &fits, &hits);
	assert_int_equal(fits, 2);
	assert_int_equal(hits, 1);
	ac_fit_memo_free(m);
}

/* The plan step's hand-over (issue 37): an entry got from one memo and
 * put into another, its model changed by hand (bandwidth 12345 B/s), is
 * what the second memo answers for the same samples -- found, not
 * fitted (0 fits, 1 hit) -- so a shard takes the plan file's model; the
 * same hash with other counts (one copy sample fewer) is another entry,
 * fitted. */
static void test_fit_memo_put(void **state)
{
	(void)state;
	struct ac_sample k[30], c[2] = {{0, 1000, 1000}, {0, 4000, 2000}};
	for (int i = 0; i < 30; i++) {
		double F = 1e6 * pow(10, 5.0 * (i % 10) / 9);
		k[i] = (struct ac_sample){OT_CONV, F, 5000 + F / 1e3};
	}
	gms_err err = {{0}};
	struct ac_fit_memo *a = ac_fit_memo_new(), *b = ac_fit_memo_new();
	assert_true(a && b);
	struct ac_perf p, q;
	assert_int_equal(ac_perf_fit_memo(a, k, 30, c, 2, &p, &err), 0);
	assert_int_equal(ac_fit_memo_size(a), 1);
	uint64_t h;
	size_t nk, nc;
	ac_fit_memo_get(a, 0, &h, &nk, &nc, &q);
	assert_int_equal(nk, 30);
	assert_int_equal(nc, 2);
	assert_memory_equal(&q, &p, sizeof p);
	q.bandwidth = 12345;
	/* the other counts put first: found first, were counts ignored */
	assert_int_equal(ac_fit_memo_put(b, h, nk, nc - 1, &p), 0);
	assert_int_equal(ac_fit_memo_put(b, h, nk, nc, &q), 0);
	struct ac_perf r;
	assert_int_equal(ac_perf_fit_memo(b, k, 30, c, 2, &r, &err), 0);
	assert_true(r.bandwidth == 12345);
	size_t fits, hits;
	ac_fit_memo_counts(b, &fits, &hits);
	assert_int_equal(fits, 0);
	assert_int_equal(hits, 1);
	/* one copy sample: its own hash, fitted (bandwidth 1000 B / 1000 ns
	 * = 1e9 B/s, eq 5's mean of one rate) */
	assert_int_equal(ac_perf_fit_memo(b, k, 30, c, 1, &r, &err), 0);
	assert_true(r.bandwidth == 1e9);
	ac_fit_memo_counts(b, &fits, &hits);
	assert_int_equal(fits, 1);
	ac_fit_memo_free(a);
	ac_fit_memo_free(b);
}

/* ---- equations 2 and 3 ------------------------------------------------
 * k_base 2. Layer c: c.fwd CONV 2.5e8 FLOPs; c.bwd CONV_BWD_DATA 4e8 and
 * c.upd UPDATE 1e5 (joins the backward process; its FLOPs do not scale).
 * Curves: CONV peak 1e12, sat 1e9, alpha 0.5, launch 1000 ns;
 * CONV_BWD_DATA 2e12, no saturation, no launch; UPDATE 1e9, no
 * saturation, launch 500 ns.
 *   k = 2: fwd F = 2.5e8 < sat: FLOPS = 1e12 * 0.25^0.5 = 5e11, t =
 *     5e-4 + 1e-6 = 5.01e-4; bwd 4e8 / 2e12 = 2e-4, update 1e5 / 1e9 +
 *     5e-7 = 1.005e-4: t_iter = 8.015e-4.
 *   k = 8: fwd F = 1e9 = sat: 1e-3 + 1e-6 = 1.001e-3; bwd 1.6e9 -> 8e-4;
 *     update 1.005e-4: t_iter = 1.9015e-3.
 *   k = 16: fwd 2e9 beyond sat: 2e-3 + 1e-6; bwd 1.6e-3; update: t_iter
 *     = 3.7015e-3.
 *   (3): t_whole(8; E = 2, m = 80, Δ = 1e-4) = 2 * 80 / 8 * (1.9015e-3 +
 *     1e-4) = 20 * 2.0015e-3 = 0.04003. */
static void test_equations_2_3(void **state)
{
	(void)state;
	struct wl_workload *w = wl_new("eq2", 2);
	uint32_t in = T(w, "in", 8, WL_INPUT), wt = T(w, "w", 16, WL_PARAM);
	uint32_t a = T(w, "a", 32, WL_ACT), gw = T(w, "gw", 16, WL_PARAM_GRAD);
	op(w, "c.fwd", "c", OT_CONV, WL_FWD, 2.5e8, (uint32_t[]){in, wt}, 2,
	   &a, 1, NULL, 0);
	op(w, "c.bwd", "c", OT_CONV_BWD_DATA, WL_BWD, 4e8, &a, 1, &gw, 1,
	   NULL, 0);
	op(w, "c.upd", "c", OT_UPDATE, WL_UPD, 1e5, (uint32_t[]){wt, gw}, 2,
	   NULL, 0, NULL, 0);
	finalize(w);
	struct ac_gmap g;
	gmap_ok(w, NULL, &g);
	assert_int_equal(g.n, 2);
	struct ac_perf p;
	memset(&p, 0, sizeof p);
	p.have[OT_CONV] = p.have[OT_CONV_BWD_DATA] = p.have[OT_UPDATE] = true;
	p.peak[OT_CONV] = 1e12;
	p.sat[OT_CONV] = 1e9;
	p.alpha[OT_CONV] = 0.5;
	p.launch[OT_CONV] = 1000;
	p.peak[OT_CONV_BWD_DATA] = 2e12;
	p.alpha[OT_CONV_BWD_DATA] = 1;
	p.peak[OT_UPDATE] = 1e9;
	p.alpha[OT_UPDATE] = 1;
	p.launch[OT_UPDATE] = 500;
	near(ac_t_layer(&p, &g, 0, 2), 5.01e-4);
	near(ac_t_layer(&p, &g, 1, 2), 3.005e-4);
	near(ac_t_iter(&p, &g, 2), 8.015e-4);
	near(ac_t_iter(&p, &g, 8), 1.9015e-3);
	near(ac_t_iter(&p, &g, 16), 3.7015e-3);
	near(ac_t_whole(&p, &g, 8, 2, 80, 1e-4), 0.04003);
	ac_gmap_free(&g);
	wl_free(w);
}

/* ---- equation 9 -----------------------------------------------------------
 * α* = (1 - (1 - α_base c)^q) / c:
 *   q = 1: (1 - (1 - α c)) / c = α: 0.1 at c = 1 and c = 2.
 *   q = 2, α 0.1, c 1: 1 - 0.9^2 = 0.19.
 *   q = 3, α 0.1, c 2: (1 - 0.8^3) / 2 = (1 - 0.512) / 2 = 0.244.
 *   c = 0 (the limit): α q = 0.4 at q = 4. */
static void test_learning_rate(void **state)
{
	(void)state;
	near(ac_learning_rate(0.1, 1, 1), 0.1);
	near(ac_learning_rate(0.1, 2, 1), 0.1);
	near(ac_learning_rate(0.1, 1, 2), 0.19);
	near(ac_learning_rate(0.1, 2, 3), 0.244);
	near(ac_learning_rate(0.1, 0, 4), 0.4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gmap_3_layers),
		cmocka_unit_test(test_t_ready_4_layers),
		cmocka_unit_test(test_t_ready_strict),
		cmocka_unit_test(test_search_steps_twice_pins_one),
		cmocka_unit_test(test_k_max),
		cmocka_unit_test(test_fit_recovers_curve),
		cmocka_unit_test(test_fit_memo),
		cmocka_unit_test(test_fit_memo_put),
		cmocka_unit_test(test_equations_2_3),
		cmocka_unit_test(test_learning_rate),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
