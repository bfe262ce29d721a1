/*
 * test_checkpoint_blocks.c - the checkpoint policy's blocks and selective
 * modes (policies/checkpoint.c, issue 32) on a 3-block toy transformer
 * worked out by hand, and on the generators and a recorded trace.
 *
 * Runs use hw_test_profile (a kernel of F FLOPs takes F / 1000 ns, launch
 * latency 0, so no host launch cost can move a figure; a copy of b bytes
 * takes b ns on its own engine) and the `arena` allocator (memory figures
 * are plain sums of live tensors). The generator runs name the framework
 * personality explicitly (pytorch).
 *
 * THE TOY TRANSFORMER (every tensor's size in bytes in brackets; times in
 * ns = FLOPs / 1000):
 *   embed            x (input) [1000] -> h0 [1000]                  1000
 *   block l = 0,1,2 (wl_set_block l; core attention marked):
 *     qkv            h_l -> q_l [1000]                              3000
 *     scores   (ca)  q_l -> s_l [4000]                              2000
 *     softmax  (ca)  s_l -> p_l [4000]                              1000
 *     dropout  (ca)  p_l -> d_l [4000], m_l [1000] (not recomputable
 *                    in the workload, as gen.c makes dropout)       1000
 *     context  (ca)  d_l, q_l -> c_l [1000]                         2000
 *     proj           c_l -> o_l [1000]                              1000
 *     add            h_l, o_l -> h_{l+1} [1000]                     1000
 *   loss             h3 -> y [1000]                                 1000
 *   backward: loss_bwd y -> g3 (2000); per block l = 2, 1, 0:
 *     proj_bwd   c_l, g_{l+1} -> gc_l   2000
 *     ctx_bwd    d_l, q_l, gc_l -> gd_l 4000
 *     drop_bwd   m_l, gd_l -> gp_l      1000
 *     smax_bwd   p_l, gp_l -> gs_l      1000
 *     scores_bwd q_l, gs_l -> gq_l      4000
 *     qkv_bwd    h_l, gq_l, g_{l+1} -> g_l 6000
 *   embed_bwd g0 -> dW (a parameter gradient) 1000.
 * Gradients are 1000 B (gd, gp, gs: 4000 B).
 * Forward: 1000 + 3 x 11000 + 1000 = 35000; backward: 2000 + 3 x 18000 +
 * 1000 = 57000; an iteration without recomputation: 92000 ns.
 *
 * What the backward pass reads of each block: q, p, d, m, c and h_l; s
 * and o are read by no backward op (freed after softmax and add).
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
#include "tmpkit.h"
#include "wlkit.h"

static void K(struct wl_workload *w, const char *name, enum wl_op_type type,
	      enum wl_phase ph, double ns, const uint32_t *in, uint32_t n_in,
	      const uint32_t *out, uint32_t n_out)
{
	gms_err err;
	struct wl_op_desc d = {.name = name, .type = type, .phase = ph,
			       .in = in, .n_in = n_in, .out = out,
			       .n_out = n_out, .flops = ns * 1000,
			       .recomputable = ph == WL_FWD &&
					       type != OT_DROPOUT};
	if (wl_add_op(w, &d, &err) == WL_NONE)
		fail_msg("%s", err.msg);
}

static struct wl_workload *toy3(bool marked)
{
	struct wl_workload *w = wl_new("toy3", 1);
	char n[32];
	uint32_t x = T(w, "x", 1000, WL_INPUT), h[4], q[3], s[3], p[3],
		 d[3], m[3], c[3], o[3], g[4], gc[3], gd[3], gp[3], gs[3],
		 gq[3];
#define TN(arr, l, fmt, sz, kind)                                              \
	(snprintf(n, sizeof n, fmt, l), arr[l] = T(w, n, sz, kind))
	for (int l = 0; l < 4; l++)
		TN(h, l, "h%d", 1000, WL_ACT);
	for (int l = 0; l < 3; l++) {
		TN(q, l, "q%d", 1000, WL_ACT);
		TN(s, l, "s%d", 4000, WL_ACT);
		TN(p, l, "p%d", 4000, WL_ACT);
		TN(d, l, "d%d", 4000, WL_ACT);
		TN(m, l, "m%d", 1000, WL_ACT);
		TN(c, l, "c%d", 1000, WL_ACT);
		TN(o, l, "o%d", 1000, WL_ACT);
		TN(gc, l, "gc%d", 1000, WL_ACT_GRAD);
		TN(gd, l, "gd%d", 4000, WL_ACT_GRAD);
		TN(gp, l, "gp%d", 4000, WL_ACT_GRAD);
		TN(gs, l, "gs%d", 4000, WL_ACT_GRAD);
		TN(gq, l, "gq%d", 1000, WL_ACT_GRAD);
	}
	for (int l = 0; l < 4; l++)
		TN(g, l, "g%d", 1000, WL_ACT_GRAD);
#undef TN
	uint32_t y = T(w, "y", 1000, WL_ACT);
	uint32_t dw = T(w, "dW", 1000, WL_PARAM_GRAD);
	K(w, "embed", OT_EMBEDDING, WL_FWD, 1000, &x, 1, &h[0], 1);
	for (int l = 0; l < 3; l++) {
		if (marked)
			wl_set_block(w, (uint32_t)l, WL_REGION_NONE);
#define OPN(fmt) (snprintf(n, sizeof n, fmt, l), n)
		K(w, OPN("qkv%d"), OT_MATMUL, WL_FWD, 3000, &h[l], 1, &q[l], 1);
		if (marked)
			wl_set_block(w, (uint32_t)l, WL_REGION_CORE_ATTN);
		K(w, OPN("scores%d"), OT_MATMUL, WL_FWD, 2000, &q[l], 1, &s[l],
		  1);
		K(w, OPN("softmax%d"), OT_SOFTMAX, WL_FWD, 1000, &s[l], 1, &p[l],
		  1);
		uint32_t dout[] = {d[l], m[l]};
		K(w, OPN("dropout%d"), OT_DROPOUT, WL_FWD, 1000, &p[l], 1, dout,
		  2);
		uint32_t cin[] = {d[l], q[l]};
		K(w, OPN("context%d"), OT_MATMUL, WL_FWD, 2000, cin, 2, &c[l],
		  1);
		if (marked)
			wl_set_block(w, (uint32_t)l, WL_REGION_NONE);
		K(w, OPN("proj%d"), OT_MATMUL, WL_FWD, 1000, &c[l], 1, &o[l], 1);
		uint32_t ain[] = {h[l], o[l]};
		K(w, OPN("add%d"), OT_ADD, WL_FWD, 1000, ain, 2, &h[l + 1], 1);
	}
	wl_set_block(w, WL_NONE, WL_REGION_NONE);
	K(w, "loss", OT_LOSS, WL_FWD, 1000, &h[3], 1, &y, 1);
	K(w, "loss_bwd", OT_LOSS_BWD, WL_BWD, 2000, &y, 1, &g[3], 1);
	for (int l = 2; l >= 0; l--) {
		if (marked)
			wl_set_block(w, (uint32_t)l, WL_REGION_NONE);
		uint32_t i1[] = {c[l], g[l + 1]};
		K(w, OPN("proj_bwd%d"), OT_MATMUL_BWD, WL_BWD, 2000, i1, 2,
		  &gc[l], 1);
		uint32_t i2[] = {d[l], q[l], gc[l]};
		K(w, OPN("ctx_bwd%d"), OT_MATMUL_BWD, WL_BWD, 4000, i2, 3,
		  &gd[l], 1);
		uint32_t i3[] = {m[l], gd[l]};
		K(w, OPN("drop_bwd%d"), OT_DROPOUT_BWD, WL_BWD, 1000, i3, 2,
		  &gp[l], 1);
		uint32_t i4[] = {p[l], gp[l]};
		K(w, OPN("smax_bwd%d"), OT_SOFTMAX_BWD, WL_BWD, 1000, i4, 2,
		  &gs[l], 1);
		uint32_t i5[] = {q[l], gs[l]};
		K(w, OPN("scores_bwd%d"), OT_MATMUL_BWD, WL_BWD, 4000, i5, 2,
		  &gq[l], 1);
		uint32_t i6[] = {h[l], gq[l], g[l + 1]};
		K(w, OPN("qkv_bwd%d"), OT_MATMUL_BWD, WL_BWD, 6000, i6, 3,
		  &g[l], 1);
#undef OPN
	}
	wl_set_block(w, WL_NONE, WL_REGION_NONE);
	K(w, "embed_bwd", OT_EMBEDDING_BWD, WL_BWD, 1000, &g[0], 1, &dw, 1);
	finalize(w);
	return w;
}

/* What a run did, from the timeline (an ex_observer): recomputed ops
 * and copies of the last iteration, by name, in order. */
struct seen {
	const struct wl_workload *wl;
	sim_time_t from;   /* the last iteration's start */
	char recs[1024];   /* recomputed ops, space separated */
	unsigned n_recs;
	char copies[1024]; /* "D2H h0 12000-13000" ... (times from the
			      iteration's start) */
};

static void seen_iter(void *obj, int iter, bool end, sim_time_t now)
{
	struct seen *v = obj;
	(void)iter;
	if (!end) {
		v->from = now;
		v->recs[0] = v->copies[0] = '\0';
		v->n_recs = 0;
	}
}

static void seen_span(void *obj, enum eng_q q, const struct eng_item *it,
		      sim_time_t start, sim_time_t end)
{
	struct seen *v = obj;
	size_t l;
	if (q == ENG_COMPUTE && it->type == ENG_KERNEL && it->kind == 1) {
		l = strlen(v->recs);
		snprintf(v->recs + l, sizeof v->recs - l, "%s%s",
			 l ? " " : "", v->wl->ops[it->tag].name);
		v->n_recs++;
	} else if (it->type == ENG_COPY) {
		l = strlen(v->copies);
		snprintf(v->copies + l, sizeof v->copies - l,
			 "%s%s %s %lld-%lld", l ? " " : "",
			 q == ENG_D2H ? "D2H" : "H2D",
			 v->wl->tensors[it->tag].name,
			 (long long)(start - v->from),
			 (long long)(end - v->from));
	}
}

/* Run w under checkpoint with kv (n of them; NULL: framework) for two
 * iterations on the 1 MiB test device with `arena`; the steady figures
 * are the second iteration's. */
static void run_toy(const struct wl_workload *w, const char *const *kv,
		    size_t n, struct st_run *st, struct seen *v, char *rep,
		    size_t cap)
{
	struct pol p;
	make_policy(&p, kv ? "checkpoint" : "framework", kv, n);
	struct hw_profile hw;
	hw_test_profile(&hw, 1 << 20);
	assert_int_equal(hw.op[OT_MATMUL].launch, 0);
	memset(v, 0, sizeof *v);
	v->wl = w;
	struct ex_observer obs = {.obj = v, .span = seen_span,
				  .iter = seen_iter};
	struct ex_cfg cfg = {.hw = &hw, .wl = w, .pol = &p,
			     .allocator = "arena", .iterations = 2,
			     .warmup = 1, .obs = &obs};
	gms_err err = {{0}};
	memset(st, 0, sizeof *st);
	if (ex_run(&cfg, st, &err) < 0)
		fail_msg("%s", err.msg);
	assert_false(st->oom.hit);
	report_into(&p, rep, cap);
	pol_destroy(&p);
}

/* The steady iteration's figures. */
static void assert_iter(const struct st_run *st, sim_time_t time,
			sim_time_t recompute, uint64_t n_recompute,
			uint64_t peak)
{
	const struct st_iter *it = &st->iter[1];
	assert_int_equal(it->time, time);
	assert_int_equal(it->recompute, recompute);
	assert_int_equal(it->n_recompute, n_recompute);
	assert_int_equal(st->mem.peak_requested, peak);
}

/* ---- the toy, by hand ----------------------------------------------------
 *
 * x is read by embed only, so it is freed after it. Without a policy the
 * peak is at ctx_bwd2: h0, h1, h2 (read by the qkv_bwd's), g3, blocks 0
 * and 1's saved q, p, d, m, c (11000 each), block 2's less c2 (freed
 * after proj_bwd2: 10000), gc2 (its input) and gd2 (its output):
 * 3000 + 1000 + 22000 + 10000 + 1000 + 4000 = 41000. */
static void test_toy_framework(void **state)
{
	(void)state;
	struct wl_workload *w = toy3(true);
	struct st_run st;
	struct seen v;
	char rep[4096];
	run_toy(w, NULL, 0, &st, &v, rep, sizeof rep);
	assert_iter(&st, 92000, 0, 0, 41000);
	st_run_free(&st);
	wl_free(w);
}

/* blocks, every 1 (torch.utils.checkpoint on each block):
 * saved    h1, h2, h3 (each block's output; h0..h2 also as the next
 *          block's input); q, p, d, m, c of every block dropped after
 *          their last forward use (15 drops), s and o freed as always;
 * regained at proj_bwd_l, the first backward op to read a dropped tensor
 *          of block l (c_l): qkv, scores (s_l is needed again by
 *          softmax), softmax, dropout (its mask re-drawn), context --
 *          3000 + 2000 + 1000 + 1000 + 2000 = 9000 ns a block, 5
 *          kernels; proj and add are not re-run (o_l is saved by no
 *          one: early stop);
 * time     92000 + 3 x 9000 = 119000 ns;
 * peak     at ctx_bwd2: h0, h1, h2, g3 (4000), block 2's regenerated q,
 *          p, d, m (10000; c2 freed after proj_bwd2), gc2 and gd2 (5000):
 *          19000. (Forward: at dropout2, h0..h2 + q2 p2 d2 m2 = 13000.) */
static void test_toy_blocks_every1(void **state)
{
	(void)state;
	struct wl_workload *w = toy3(true);
	static const char *const kv[] = {"mode=blocks", "every=1"};
	struct st_run st;
	struct seen v;
	char rep[4096];
	run_toy(w, kv, 2, &st, &v, rep, sizeof rep);
	assert_iter(&st, 119000, 27000, 15, 19000);
	assert_string_equal(v.recs,
			    "qkv2 scores2 softmax2 dropout2 context2 "
			    "qkv1 scores1 softmax1 dropout1 context1 "
			    "qkv0 scores0 softmax0 dropout0 context0");
	assert_string_equal(v.copies, "");
	assert_int_equal(st.iter[1].n_drop, 15);
	assert_has(rep, "3 marked by the workload");
	assert_has(rep, "region outputs     3 tensors, 0.0 MiB: h1 h2 h3");
	assert_has(rep, "dropout re-run     3 ops");
	assert_has(rep, "drops refused      0");
	assert_has(rep, "region regens      6"); /* 3 a iteration, 2 */
	st_run_free(&st);
	wl_free(w);
}

/* blocks, every 2 (torchtitan's ac_freq: the 2nd block, index 1):
 * block 1 as above (5 kernels, 9000 ns), blocks 0 and 2 keep all;
 * time 101000 ns; peak at ctx_bwd2 as without a policy less block 1's
 * 11000: 30000. */
static void test_toy_blocks_every2(void **state)
{
	(void)state;
	struct wl_workload *w = toy3(true);
	static const char *const kv[] = {"mode=blocks", "every=2"};
	struct st_run st;
	struct seen v;
	char rep[4096];
	run_toy(w, kv, 2, &st, &v, rep, sizeof rep);
	assert_iter(&st, 101000, 9000, 5, 30000);
	assert_string_equal(v.recs,
			    "qkv1 scores1 softmax1 dropout1 context1");
	assert_has(rep, "region outputs     1 tensors, 0.0 MiB: h2");
	st_run_free(&st);
	wl_free(w);
}

/* selective (Megatron): the core attention scores .. context of each
 * block; q (its input) and c (its output, read by proj) are kept, p, d
 * and m dropped (9 drops); regained at ctx_bwd_l, the first backward op
 * to read one (d_l): scores, softmax, dropout = 4000 ns, 3 kernels a
 * block; time 92000 + 12000 = 104000 ns; peak at ctx_bwd2: h0..h2, g3,
 * q0, c0, q1, c1, q2 (9000; c2 freed after proj_bwd2), p2, d2, m2
 * (9000), gc2, gd2 (5000): 23000. */
static void test_toy_selective(void **state)
{
	(void)state;
	struct wl_workload *w = toy3(true);
	static const char *const kv[] = {"mode=selective"};
	struct st_run st;
	struct seen v;
	char rep[4096];
	run_toy(w, kv, 1, &st, &v, rep, sizeof rep);
	assert_iter(&st, 104000, 12000, 9, 23000);
	assert_string_equal(v.recs, "scores2 softmax2 dropout2 "
				    "scores1 softmax1 dropout1 "
				    "scores0 softmax0 dropout0");
	assert_int_equal(st.iter[1].n_drop, 9);
	assert_has(rep, "region outputs     3 tensors, 0.0 MiB: c0 c1 c2");
	assert_has(rep, "12 forward ops marked");
	st_run_free(&st);
	wl_free(w);
}

/* blocks every 1 with offload: the inputs h0, h1, h2 (each read last in
 * forward by its block's add) go D2H after the block's add completes
 * (1000 B = 1000 ns each on the D2H engine, overlapping the next
 * block): D2H h0 12000-13000, h1 23000-24000, h2 34000-35000 (block l's
 * add ends at 12000 + 11000 l). Backward: loss ends at 35000, loss_bwd
 * at 37000; at proj_bwd2 block 2 is regenerated: h2 is fetched at once
 * (H2D 37000-38000; qkv2's recomputation waits for it: a 1000 ns h2d
 * stall) and h1 prefetched behind it (38000-39000); block 1's
 * regeneration at 65000 (38000 + 9000 + 18000) finds h1 back and
 * prefetches h0 (65000-66000), block 0's finds h0 back. Time 119000 +
 * 1000 = 120000 ns; 3000 B each way; peak at ctx_bwd2 as without offload
 * less h0 (on the host then): 18000. */
static void test_toy_blocks_offload(void **state)
{
	(void)state;
	struct wl_workload *w = toy3(true);
	static const char *const kv[] = {"mode=blocks", "every=1",
					 "offload=true"};
	struct st_run st;
	struct seen v;
	char rep[4096];
	run_toy(w, kv, 3, &st, &v, rep, sizeof rep);
	assert_iter(&st, 120000, 27000, 15, 18000);
	assert_string_equal(v.copies,
			    "D2H h0 12000-13000 D2H h1 23000-24000 "
			    "D2H h2 34000-35000 H2D h2 37000-38000 "
			    "H2D h1 38000-39000 H2D h0 65000-66000");
	const struct st_iter *it = &st.iter[1];
	assert_int_equal(it->stall[ST_STALL_H2D], 1000);
	assert_int_equal(it->bytes_h2d, 3000);
	assert_int_equal(it->bytes_d2h, 3000);
	assert_has(rep, "offloads           6, 0.0 MiB; refused 0; fetches "
			"back 6, refused 0");
	st_run_free(&st);
	wl_free(w);
}

/* The same toy with no block marks (a recorded trace's situation).
 * selective has no core attention to work on: it says so and runs as the
 * framework. blocks falls back, and says so, to the stretches between the
 * articulation points h0, h1, h2, h3: [embed], block 0, block 1, block
 * 2 (loss, after h3, is the tail). every 1: the first stretch saves
 * nothing (h0 is its output), the others are the blocks: as marked,
 * 119000 ns. every 2: stretches 1 and 3, blocks 0 and 2: 92000 + 18000
 * = 110000 ns; peak at ctx_bwd2: h0..h2, g3, block 1's 11000, block 2's
 * regenerated q2 p2 d2 m2, gc2, gd2: 4000 + 11000 + 10000 + 5000 =
 * 30000. */
static void test_toy_unmarked(void **state)
{
	(void)state;
	struct wl_workload *w = toy3(false);
	assert_int_equal(w->n_blocks, 0);
	struct st_run st;
	struct seen v;
	char rep[4096];
	static const char *const sel[] = {"mode=selective"};
	run_toy(w, sel, 1, &st, &v, rep, sizeof rep);
	assert_iter(&st, 92000, 0, 0, 41000);
	assert_has(rep, "none marked by the workload: NOTHING to recompute");
	st_run_free(&st);
	static const char *const b1[] = {"mode=blocks", "every=1"};
	run_toy(w, b1, 2, &st, &v, rep, sizeof rep);
	assert_iter(&st, 119000, 27000, 15, 19000);
	assert_has(rep, "FALLBACK to the 4 stretches between articulation "
			"points");
	st_run_free(&st);
	static const char *const b2[] = {"mode=blocks", "every=2"};
	run_toy(w, b2, 2, &st, &v, rep, sizeof rep);
	assert_iter(&st, 110000, 18000, 10, 30000);
	assert_string_equal(v.recs,
			    "qkv2 scores2 softmax2 dropout2 context2 "
			    "qkv0 scores0 softmax0 dropout0 context0");
	st_run_free(&st);
	wl_free(w);
}

/* Parameters: every and offload belong to blocks (the error names the
 * key); every must be at least 1. */
static void test_params_blocks(void **state)
{
	(void)state;
	struct pol p;
	gms_err err = {{0}};
	static const char *const a[] = {"mode=selective", "offload=true"};
	assert_int_equal(pol_create(&p, "checkpoint", NULL, NULL, a, 2, &err),
			 -1);
	assert_has(err.msg, "key 'offload': only with mode blocks");
	static const char *const b[] = {"mode=memory", "every=2"};
	assert_int_equal(pol_create(&p, "checkpoint", NULL, NULL, b, 2, &err),
			 -1);
	assert_has(err.msg, "key 'every'");
	static const char *const c[] = {"mode=blocks", "every=0"};
	assert_int_equal(pol_create(&p, "checkpoint", NULL, NULL, c, 2, &err),
			 -1);
	assert_has(err.msg, "every");
}

/* One block whose first backward op reads two of its dropped tensors:
 *   block 0: f1 x -> a, f2 a -> b, f3 b -> c (1000 B, 1000 ns each);
 *   loss c -> y; loss_bwd y -> gc; bb a, b, gc -> gx; bx gx, x -> dW
 *   (x, the block's input, is read in backward, as a layer's weight
 *   gradient reads its input: see docs/checkpoint-modes.md on inputs
 *   no backward op reads).
 * a and b are dropped; at bb the block is regenerated once (f1, f2: 2
 * kernels, 2000 ns), not once per input read: 2 regenerations in 2
 * iterations. */
static void test_regen_once_per_op(void **state)
{
	(void)state;
	struct wl_workload *w = wl_new("two_reads", 1);
	uint32_t x = T(w, "x", 1000, WL_INPUT), a = T(w, "a", 1000, WL_ACT),
		 b = T(w, "b", 1000, WL_ACT), c = T(w, "c", 1000, WL_ACT),
		 y = T(w, "y", 1000, WL_ACT), gc = T(w, "gc", 1000, WL_ACT_GRAD),
		 gx = T(w, "gx", 1000, WL_ACT_GRAD),
		 dw = T(w, "dW", 1000, WL_PARAM_GRAD);
	wl_set_block(w, 0, WL_REGION_NONE);
	K(w, "f1", OT_OTHER, WL_FWD, 1000, &x, 1, &a, 1);
	K(w, "f2", OT_OTHER, WL_FWD, 1000, &a, 1, &b, 1);
	K(w, "f3", OT_OTHER, WL_FWD, 1000, &b, 1, &c, 1);
	wl_set_block(w, WL_NONE, WL_REGION_NONE);
	K(w, "loss", OT_LOSS, WL_FWD, 1000, &c, 1, &y, 1);
	K(w, "loss_bwd", OT_LOSS_BWD, WL_BWD, 1000, &y, 1, &gc, 1);
	wl_set_block(w, 0, WL_REGION_NONE);
	uint32_t in[] = {a, b, gc};
	K(w, "bb", OT_OTHER, WL_BWD, 1000, in, 3, &gx, 1);
	uint32_t inx[] = {gx, x};
	K(w, "bx", OT_OTHER, WL_BWD, 1000, inx, 2, &dw, 1);
	finalize(w);
	static const char *const kv[] = {"mode=blocks"};
	struct st_run st;
	struct seen v;
	char rep[4096];
	run_toy(w, kv, 1, &st, &v, rep, sizeof rep);
	assert_string_equal(v.recs, "f1 f2");
	assert_int_equal(st.iter[1].recompute, 2000);
	assert_has(rep, "region regens      2 ");
	st_run_free(&st);
	wl_free(w);
}

/* A workload file marks blocks and core attention with `block:` and
 * `region:` (wl_yaml.c); a bad region names the file, line, column and
 * key. Two blocks of one op each (f0, f1), the loss in none; blocks mode
 * then finds them marked. */
static void test_yaml_marks(void **state)
{
	(void)state;
	static const char good[] =
		"name: marked\n"
		"batch: 1\n"
		"tensors:\n"
		"  - {name: x, kind: input, bytes: 1000}\n"
		"  - {name: h1, kind: activation, bytes: 1000}\n"
		"  - {name: h2, kind: activation, bytes: 1000}\n"
		"  - {name: y, kind: activation, bytes: 1000}\n"
		"  - {name: g2, kind: act_grad, bytes: 1000}\n"
		"  - {name: g1, kind: act_grad, bytes: 1000}\n"
		"  - {name: gx, kind: act_grad, bytes: 1000}\n"
		"ops:\n"
		"  - {name: f0, type: matmul, phase: forward, inputs: [x], "
		"outputs: [h1], block: 0}\n"
		"  - {name: f1, type: softmax, phase: forward, inputs: [h1], "
		"outputs: [h2], block: 1, region: core_attention}\n"
		"  - {name: loss, type: loss, phase: forward, inputs: [h2], "
		"outputs: [y]}\n"
		"  - {name: loss_bwd, type: loss_bwd, phase: backward, "
		"inputs: [y], outputs: [g2]}\n"
		"  - {name: f1_bwd, type: softmax_bwd, phase: backward, "
		"inputs: [h2, g2], outputs: [g1], block: 1}\n"
		"  - {name: f0_bwd, type: matmul_bwd, phase: backward, "
		"inputs: [x, g1], outputs: [gx], block: 0}\n";
	char path[64];
	tmp_text(path, "ckblocks", good);
	gms_err err = {{0}};
	struct wl_workload *w = wl_load_yaml(path, 0, &err);
	remove(path);
	if (!w)
		fail_msg("%s", err.msg);
	assert_int_equal(w->n_blocks, 2);
	assert_int_equal(op(w, "f0")->block, 0);
	assert_int_equal(op(w, "f1")->block, 1);
	assert_int_equal(op(w, "f1")->region, WL_REGION_CORE_ATTN);
	assert_int_equal(op(w, "f0")->region, WL_REGION_NONE);
	assert_int_equal(op(w, "loss")->block, WL_NONE);
	assert_int_equal(op(w, "f1_bwd")->block, 1);
	static const char *const kv[] = {"mode=blocks"};
	struct st_run st;
	struct seen v;
	char rep[4096];
	run_toy(w, kv, 1, &st, &v, rep, sizeof rep);
	assert_has(rep, "2 marked by the workload");
	st_run_free(&st);
	wl_free(w);
	char bad[sizeof good + 8];
	snprintf(bad, sizeof bad, "%s", good);
	char *r = strstr(bad, "core_attention");
	assert_non_null(r);
	memcpy(r, "core_attentiox", 14);
	tmp_text(path, "ckblocks", bad);
	w = wl_load_yaml(path, 0, &err);
	remove(path);
	assert_null(w);
	assert_has(err.msg, ":13:");
	assert_has(err.msg, "region");
}

/* describe's per-block section on the toy, its middle block 1: saved
 * for backward q1, p1, d1, m1, c1 and h2 (add1's output, read by
 * qkv_bwd2): 1000 + 4000 + 4000 + 1000 + 1000 + 1000 = 12000 B, 6
 * tensors; core attention p1, d1, m1 (s1 is read by no backward op, c1 by
 * proj1 outside): 9000 B; inputs h1: 1000 B. */
static void test_describe_block(void **state)
{
	(void)state;
	struct wl_workload *w = toy3(true);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	assert_non_null(f);
	wl_describe(w, false, f);
	fclose(f);
	assert_has(text, "per block (3 marked; block 1):");
	assert_has(text, "saved for backward  12000 B (0.01 MiB, 6 tensors)");
	assert_has(text, "core attention      9000 B");
	assert_has(text, "inputs              1000 B");
	free(text);
	wl_free(w);
}

/* ---- the generators and a recorded trace --------------------------------- */

/* A small GPT-2 (2 layers, seq 64, pytorch, fp32, eager attention). */
static struct wl_workload *small_gpt2(void)
{
	struct wl_gen_args a = {.batch = 1, .size = 64,
				.framework = WL_FW_PYTORCH,
				.optimizer = WL_OPTIM_ADAMW,
				.arch = {.layers = 2}};
	gms_err err = {{0}};
	struct wl_workload *w = wl_gen_build(wl_gen_find("gpt2"), &a, &err);
	if (!w)
		fail_msg("%s", err.msg);
	return w;
}

/* gen_llm.c marks transformer.h.l's forward and backward ops block l,
 * nothing else (embeddings, ln_f, lm_head, loss, updates; a gradient
 * sum belongs to the block whose backward emits it); the core
 * attention of each block in fp32 eager is scores, scale, causal_mask,
 * softmax, attn_dropout, context (the cast to the value's dtype is no op
 * in fp32): 6 forward ops, c_attn_* and c_proj outside. */
static void test_gpt2_marks(void **state)
{
	(void)state;
	struct wl_workload *w = small_gpt2();
	assert_int_equal(w->n_blocks, 2);
	unsigned core[2] = {0, 0};
	for (uint32_t o = 0; o < w->n_ops; o++) {
		const struct wl_op *op = &w->ops[o];
		uint32_t want = WL_NONE;
		if (op->phase != WL_UPD &&
		    !strncmp(op->name, "transformer.h.", 14))
			want = (uint32_t)(op->name[14] - '0');
		/* a gradient sum is the block's whose backward makes the
		 * last contribution (transformer.h.0.add_mlp.out's: block
		 * 1's ln_1.bwd), so only kernels of a layer are checked */
		bool kernel = op->phase == WL_FWD || strstr(op->name, ".bwd");
		if (kernel && op->block != want)
			fail_msg("%s: block %u, want %u", op->name, op->block,
				 want);
		if (op->phase == WL_FWD && op->region == WL_REGION_CORE_ATTN)
			core[op->block]++;
	}
	assert_int_equal(core[0], 6);
	assert_int_equal(core[1], 6);
	assert_int_equal(op(w, "transformer.h.1.attn.softmax")->region,
			 WL_REGION_CORE_ATTN);
	assert_int_equal(op(w, "transformer.h.1.attn.c_proj")->region,
			 WL_REGION_NONE);
	assert_int_equal(op(w, "transformer.h.0.attn.c_attn_q")->region,
			 WL_REGION_NONE);
	wl_free(w);
}

/* Run w under policy (kv: checkpoint's settings, NULL: framework) on the
 * 64 GiB test device with arena, 2 iterations; the run must finish with
 * no OOM, and the report must not show a refused drop or offload. */
static void run_family(const struct wl_workload *w, const char *const *kv,
		       size_t n, struct st_run *st, char *rep, size_t cap)
{
	struct pol p;
	make_policy(&p, kv ? "checkpoint" : "framework", kv, n);
	struct hw_profile hw;
	hw_test_profile(&hw, (uint64_t)64 << 30);
	memset(st, 0, sizeof *st);
	if (run_on(w, &p, &hw, "arena", 0, 0, 2, st) < 0)
		fail_msg("%s: run failed", w->name);
	assert_false(st->oom.hit);
	report_into(&p, rep, cap);
	if (kv) {
		assert_has(rep, "drops refused      0");
		if (strstr(rep, "offloads"))
			assert_has(rep, "refused 0; fetches back");
	}
	pol_destroy(&p);
}

/* Every family, under every mode: blocks (every 1 and 2, offload)
 * recompute and lower the peak below the framework's; selective does
 * where the generator marks core attention (the transformers) and says
 * it has nothing to do elsewhere; networks whose generator marks no
 * blocks (Inception) and the recorded trace use the fallback, which the
 * report names. */
static void test_families(void **state)
{
	(void)state;
	static const struct {
		const char *gen;
		int64_t size;
		bool marked, attention;
	} fams[] = {
		{"gpt2", 128, true, true},	  {"llama", 128, true, true},
		{"bert_base", 128, true, true},	  {"resnet50", 64, true, false},
		{"densenet121", 64, true, false}, {"inception_v3", 299, false,
						   false},
		{"trace", 0, false, false},
	};
	static const char *const modes[][3] = {
		{"mode=blocks", "every=1", NULL},
		{"mode=blocks", "every=2", NULL},
		{"mode=blocks", "offload=true", NULL},
		{"mode=selective", NULL, NULL},
	};
	static const size_t nk[] = {2, 2, 2, 1};
	char rep[8192];
	for (size_t i = 0; i < sizeof fams / sizeof *fams; i++) {
		struct wl_workload *w;
		gms_err err = {{0}};
		if (!strcmp(fams[i].gen, "trace")) {
			w = wl_load_dtr("workloads/traces/recorded/"
					"gpt2tiny-2-recorded.log",
					&err);
		} else {
			/* batch 16: activations, not the parameters
			 * and their gradients, make the peak */
			struct wl_gen_args a = {
				.batch = 16, .size = fams[i].size,
				.framework = WL_FW_PYTORCH,
				.optimizer = WL_OPTIM_SGD};
			if (!strcmp(fams[i].gen, "llama"))
				a.arch = (struct wl_arch){.layers = 2,
							  .hidden = 256,
							  .heads = 4,
							  .kv_heads = 2,
							  .ffn = 512,
							  .vocab = 1000};
			if (!strcmp(fams[i].gen, "gpt2")) {
				/* a small vocabulary: the logits are not
				 * the peak */
				a.arch.layers = 4;
				a.arch.vocab = 1000;
			}
			w = wl_gen_build(wl_gen_find(fams[i].gen), &a, &err);
		}
		if (!w)
			fail_msg("%s: %s", fams[i].gen, err.msg);
		assert_int_equal(w->n_blocks > 0, fams[i].marked);
		struct st_run st;
		run_family(w, NULL, 0, &st, rep, sizeof rep);
		uint64_t peak = st.mem.peak_requested;
		st_run_free(&st);
		for (size_t m = 0; m < 4; m++) {
			run_family(w, modes[m], nk[m], &st, rep, sizeof rep);
			bool sel = m == 3;
			bool acts = !sel || fams[i].attention;
			if (acts != (st.iter[1].n_recompute > 0) ||
			    acts != (st.mem.peak_requested < peak))
				fail_msg("%s %s: %llu recomputations, peak "
					 "%llu (framework %llu)\n%s",
					 fams[i].gen, modes[m][0],
					 (unsigned long long)
						 st.iter[1].n_recompute,
					 (unsigned long long)
						 st.mem.peak_requested,
					 (unsigned long long)peak, rep);
			if (sel && !acts)
				assert_has(rep, "NOTHING to recompute");
			if (!sel)
				assert_has(rep, fams[i].marked
							? "marked by the workload"
							: "FALLBACK");
			st_run_free(&st);
		}
		wl_free(w);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_toy_framework),
		cmocka_unit_test(test_toy_blocks_every1),
		cmocka_unit_test(test_toy_blocks_every2),
		cmocka_unit_test(test_toy_selective),
		cmocka_unit_test(test_toy_blocks_offload),
		cmocka_unit_test(test_toy_unmarked),
		cmocka_unit_test(test_params_blocks),
		cmocka_unit_test(test_regen_once_per_op),
		cmocka_unit_test(test_yaml_marks),
		cmocka_unit_test(test_describe_block),
		cmocka_unit_test(test_gpt2_marks),
		cmocka_unit_test(test_families),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
