/*
 * test_offload.c - the offload and zero-offload policies (policies/
 * offload.c, policies/zero_offload.c; issue 32) on a 3-block toy
 * transformer whose every copy and kernel is worked out on paper.
 *
 * The profile is hw_test_profile (launch latency 0, no allocation costs,
 * copy engines independent, derate 1) with the links set to 1e9 B/s
 * pinned and 0.5e9 B/s pageable: a 1000-byte copy takes 1000 ns pinned,
 * 2000 ns pageable. The allocator is `arena` (plain sums), the
 * workload's personality pytorch (named; no generator rule applies to a
 * hand-built workload). Kernels take their stated time.
 *
 * The toy (bytes; ns):
 *   x0 input 1000. Block k = 1, 2, 3 (layer "bk"):
 *     bk.attn  fwd 100   x(k-1), Wa_k   -> hk 1000
 *     bk.mlp   fwd 200   hk, Wm_k       -> xk 1000
 *   loss       fwd  10   x3             -> l 10 (no reader)
 *   loss.bwd   bwd  10   x3             -> g3 1000      (layer "loss")
 *   bk.mlp.bwd bwd 400   gk, hk, Wm_k   -> ghk 1000, dWm_k 100
 *   bk.attn.bwd bwd 200  ghk, x(k-1), Wa_k -> g(k-1) 1000, dWa_k 100
 *   Wa_1, Wm_1, ..., Wm_3 update 5 ns each, reading W, dW, W.m, W.v
 *   (parameters and states 100 bytes, element size unstated: 4 bytes,
 *   25 elements each).
 * Saved for backward: x0, h1, x1, h2, x2, h3, x3 (7 x 1000 bytes).
 * Compute: forward 910, backward 10 + 3 x 600 = 1810, updates 30.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testkit.h"
#include "wlkit.h"

#include <stdlib.h>
#include <string.h>

static void O(struct wl_workload *w, const char *name, enum wl_op_type ty,
	      enum wl_phase ph, const char *layer, sim_time_t time,
	      const uint32_t *in, uint32_t n_in, const uint32_t *out,
	      uint32_t n_out)
{
	gms_err err;
	struct wl_op_desc d = {.name = name, .type = ty, .phase = ph,
			       .layer = layer, .in = in, .n_in = n_in,
			       .out = out, .n_out = n_out, .time = time,
			       .flops = (double)time, .recomputable = true};
	if (wl_add_op(w, &d, &err) == WL_NONE)
		fail_msg("%s", err.msg);
}

/* The toy; held_grad: dWa1 held for the run (as the caffe personality
 * holds every diff, wl_set_held). */
static struct wl_workload *toy_opt(bool held_grad)
{
	struct wl_workload *w = wl_new("toy3", 1);
	wl_set_framework(w, "pytorch");
	char n[64], m[64];
	uint32_t x[4], h[4], Wa[4], Wm[4], g[4], gh[4], dWa[4], dWm[4];
	x[0] = T(w, "x0", 1000, WL_INPUT);
	for (int k = 1; k <= 3; k++) {
		snprintf(n, sizeof n, "Wa%d", k);
		Wa[k] = T(w, n, 100, WL_PARAM);
		snprintf(n, sizeof n, "Wm%d", k);
		Wm[k] = T(w, n, 100, WL_PARAM);
	}
	for (int k = 1; k <= 3; k++) {
		snprintf(m, sizeof m, "b%d", k);
		snprintf(n, sizeof n, "h%d", k);
		h[k] = T(w, n, 1000, WL_ACT);
		snprintf(n, sizeof n, "x%d", k);
		x[k] = T(w, n, 1000, WL_ACT);
		uint32_t in1[] = {x[k - 1], Wa[k]};
		snprintf(n, sizeof n, "b%d.attn", k);
		O(w, n, OT_MATMUL, WL_FWD, m, 100, in1, 2, &h[k], 1);
		uint32_t in2[] = {h[k], Wm[k]};
		snprintf(n, sizeof n, "b%d.mlp", k);
		O(w, n, OT_MATMUL, WL_FWD, m, 200, in2, 2, &x[k], 1);
	}
	uint32_t l = T(w, "l", 10, WL_ACT);
	O(w, "loss", OT_LOSS, WL_FWD, "loss", 10, &x[3], 1, &l, 1);
	g[3] = T(w, "g3", 1000, WL_ACT_GRAD);
	O(w, "loss.bwd", OT_LOSS_BWD, WL_BWD, "loss", 10, &x[3], 1, &g[3], 1);
	for (int k = 3; k >= 1; k--) {
		snprintf(m, sizeof m, "b%d", k);
		snprintf(n, sizeof n, "gh%d", k);
		gh[k] = T(w, n, 1000, WL_ACT_GRAD);
		snprintf(n, sizeof n, "dWm%d", k);
		dWm[k] = T(w, n, 100, WL_PARAM_GRAD);
		uint32_t in1[] = {g[k], h[k], Wm[k]}, o1[] = {gh[k], dWm[k]};
		snprintf(n, sizeof n, "b%d.mlp.bwd", k);
		O(w, n, OT_MATMUL_BWD, WL_BWD, m, 400, in1, 3, o1, 2);
		snprintf(n, sizeof n, "g%d", k - 1);
		g[k - 1] = T(w, n, 1000, WL_ACT_GRAD);
		snprintf(n, sizeof n, "dWa%d", k);
		dWa[k] = T(w, n, 100, WL_PARAM_GRAD);
		uint32_t in2[] = {gh[k], x[k - 1], Wa[k]}, o2[] = {g[k - 1],
								  dWa[k]};
		snprintf(n, sizeof n, "b%d.attn.bwd", k);
		O(w, n, OT_MATMUL_BWD, WL_BWD, m, 200, in2, 3, o2, 2);
	}
	for (int k = 1; k <= 3; k++) {
		for (int a = 0; a < 2; a++) {
			uint32_t P = a ? Wm[k] : Wa[k], G = a ? dWm[k] : dWa[k];
			const char *pn = w->tensors[P].name;
			snprintf(n, sizeof n, "%s.m", pn);
			uint32_t sm = T(w, n, 100, WL_OPT_STATE);
			snprintf(n, sizeof n, "%s.v", pn);
			uint32_t sv = T(w, n, 100, WL_OPT_STATE);
			uint32_t in[] = {P, G, sm, sv};
			snprintf(n, sizeof n, "%s.update", pn);
			O(w, n, OT_UPDATE, WL_UPD, "update", 5, in, 4, NULL, 0);
		}
	}
	if (held_grad) {
		gms_err err;
		assert_int_equal(wl_set_held(w, dWa[1], &err), 0);
	}
	finalize(w);
	return w;
}

static struct wl_workload *toy(void) { return toy_opt(false); }

static void profile(struct hw_profile *hw)
{
	hw_test_profile(hw, 1 << 20);
	for (int d = 0; d < HW_DIR_COUNT; d++) {
		hw->link[d].bw_pinned = 1e9;
		hw->link[d].bw_pageable = 0.5e9;
	}
}

/* One iteration of the toy under `name` with settings kv. */
static void run_toy(const struct hw_profile *hw, const char *name,
		    const char *const *kv, size_t n, struct st_run *st,
		    char **rep)
{
	struct wl_workload *w = toy();
	struct pol p;
	make_policy(&p, name, kv, n);
	memset(st, 0, sizeof *st);
	assert_int_equal(run_on(w, &p, hw, "arena", 0, 0, 1, st), 0);
	if (rep) {
		gms_err err = {{0}};
		assert_int_equal(pol_report_text(&p, rep, &err), 0);
	}
	pol_destroy(&p);
	wl_free(w);
}

/* Peak device bytes without offload: at b3.mlp.bwd the six saved tensors
 * not yet read (x0 h1 x1 h2 x2 h3: x3 went after loss.bwd), g3, gh3 and
 * dWm3 = 8100, plus parameters and states 1800: 9900. Time 910 + 1810 +
 * 30 = 2750. */
static void test_framework_baseline(void **state)
{
	(void)state;
	struct hw_profile hw;
	profile(&hw);
	struct st_run st;
	run_toy(&hw, "framework", NULL, 0, &st, NULL);
	assert_false(st.oom.hit);
	assert_int_equal(st.steady.time, 2750);
	assert_int_equal(st.mem.peak_requested, 9900);
	st_run_free(&st);
}

/* save_on_cpu, pin_memory false (its default): every saved tensor is
 * copied out synchronously (2000 ns pageable) right after the kernel that
 * saves it, and back on demand (2000 ns) before the backward op that
 * reads it; nothing overlaps. Its hook packs the weights too: after
 * bk.mlp (layer bk's last forward op) Wm_k and Wa_k go out again (200 ns
 * each, pageable), and entering bk's backward they come back (200 ns
 * each); no activation is read by two backward layers. Time = 2750 +
 * 7 x 2000 x 2 + 6 x 200 x 2 = 33150, stalls 14000 + 1200 = 15200 each
 * way, 7600 bytes each way. Device peak: forward holds at most hk and xk
 * (2000); backward at b1.attn.bwd: gh1, x0 (back), g0, six dW = 3600;
 * plus 1800 whole-run bytes = 5400 (a weight comes back into its own
 * block). */
static void test_save_on_cpu_blocking(void **state)
{
	(void)state;
	struct hw_profile hw;
	profile(&hw);
	struct st_run st;
	char *rep = NULL;
	run_toy(&hw, "offload", NULL, 0, &st, &rep);
	assert_false(st.oom.hit);
	assert_int_equal(st.steady.time, 33150);
	assert_int_equal(st.steady.stall[ST_STALL_D2H], 15200);
	assert_int_equal(st.steady.stall[ST_STALL_H2D], 15200);
	assert_int_equal(st.steady.bytes_d2h, 7600);
	assert_int_equal(st.steady.bytes_h2d, 7600);
	assert_int_equal(st.mem.peak_requested, 5400);
	assert_int_equal(st.pinned_peak, 0); /* pageable */
	assert_non_null(strstr(rep, "saved_tensors 7\n"));
	free(rep);
	st_run_free(&st);

	/* pin_memory: true, copies of 1000 ns and 100 ns: 2750 + 14 x 1000
	 * + 12 x 100; at the end of forward the host holds the seven
	 * activations and the six weights' copies: 7600 pinned */
	const char *kv[] = {"pin_memory=true"};
	run_toy(&hw, "offload", kv, 1, &st, NULL);
	assert_int_equal(st.steady.time, 17950);
	assert_int_equal(st.pinned_peak, 7600);
	st_run_free(&st);
}

/*
 * torchtune's OffloadActivations (pinned: 1000 ns a copy), min_bytes 0,
 * stash 5. Forward: the D2H engine copies x0 [100,1100], h1 [1100,2100],
 * x1 [2100,3100], h2 [3100,4100], x2 [4100,5100], h3 [5100,6100], x3
 * [6100,7100]. The 6th pack (h3, after b3.attn at 700) lets x0 go: the
 * compute stream waits to 1100 (stall 400); the 7th (x3, after b3.mlp
 * [1100,1300]) lets h1 go: wait to 2100 (800); loss [2100,2110].
 * Backward: loss.bwd reads x3 from the stash [2110,2120]; its hook waits
 * for every stashed copy, to 7100 (4980). Then b3 brings back h3
 * [7100,8100] and x2 [8100,9100] and prefetches b2's h2 [9100,10100] and
 * x1 [10100,11100]: b3.mlp.bwd [8100,8500] (H2D stall 1000), b3.attn.bwd
 * [9100,9300] (600); b2 prefetches b1's h1 [11100,12100] and x0
 * [12100,13100]: b2.mlp.bwd [10100,10500] (800), b2.attn.bwd
 * [11100,11300] (600), b1.mlp.bwd [12100,12500] (800), b1.attn.bwd
 * [13100,13300] (600); updates to 13330. D2H stalls 6180, H2D 4400;
 * six copies back (x3 never left).
 */
static void test_overlap_streams(void **state)
{
	(void)state;
	struct hw_profile hw;
	profile(&hw);
	struct st_run st;
	const char *kv[] = {"overlap=true", "min_bytes=0"};
	run_toy(&hw, "offload", kv, 2, &st, NULL);
	assert_false(st.oom.hit);
	assert_int_equal(st.steady.time, 13330);
	assert_int_equal(st.steady.stall[ST_STALL_D2H], 6180);
	assert_int_equal(st.steady.stall[ST_STALL_H2D], 4400);
	assert_int_equal(st.steady.bytes_d2h, 7000);
	assert_int_equal(st.steady.bytes_h2d, 6000);
	st_run_free(&st);

	/* its default min_offload_size, 1024 bytes: every saved tensor
	 * (1000 bytes) stays, and the run is the framework's */
	const char *kv2[] = {"overlap=true"};
	char *rep = NULL;
	run_toy(&hw, "offload", kv2, 1, &st, &rep);
	assert_int_equal(st.steady.time, 2750);
	assert_int_equal(st.steady.bytes_d2h, 0);
	assert_non_null(strstr(rep, "kept_small 7\n"));
	free(rep);
	st_run_free(&st);
}

/*
 * ZeRO-Offload, host.mem_bw 1e9 B/s (1 byte/ns), no flops term, pageable
 * (DeepSpeed's default). CPU-Adam bytes of one parameter: m and v read
 * and written 400, the device copy written 100, the fp32 gradient read
 * 4 x 25 = 100, the fp32 master read and written 8 x 25 = 200: 800 ns.
 * Backward as the framework's to 2720; each dW (100 bytes, 200 ns) goes
 * out after its kernel: the last, dWa1, [2720,2920]. Wa1.update waits
 * for it and runs [2920,3720]; each later one follows (800 ns), each
 * parameter copied back in 200 ns after its step: the last [7720,7920].
 * Time 7920; host CPU 4800; 600 bytes each way; the drain of the last
 * copy, 200, is the iteration's H2D stall. Host: states 1200 + masters
 * 6 x 100 + the six gradients 600 = 2400. Device: no states (1200 less
 * than the framework's whole-run bytes), the gradients leave.
 */
static void test_zero_offload(void **state)
{
	(void)state;
	struct hw_profile hw;
	profile(&hw);
	hw.host_mem_bw = 1e9;
	struct st_run st;
	run_toy(&hw, "zero-offload", NULL, 0, &st, NULL);
	assert_false(st.oom.hit);
	assert_int_equal(st.steady.time, 7920);
	assert_int_equal(st.steady.host_busy, 4800);
	assert_int_equal(st.steady.bytes_d2h, 600);
	assert_int_equal(st.steady.bytes_h2d, 600);
	assert_int_equal(st.steady.stall[ST_STALL_H2D], 200);
	assert_int_equal(st.host_peak, 2400);
	st_run_free(&st);

	/* DPU: the six steps (800 each) and the parameter copies run from
	 * the iteration's start, [0,4800] on the host, each copy (200) after
	 * its step: the last [4800,5000]; the update ops wait behind the
	 * steps on the host queue (4800); time 5000 */
	const char *kv[] = {"dpu=true"};
	run_toy(&hw, "zero-offload", kv, 1, &st, NULL);
	assert_int_equal(st.steady.time, 5000);
	st_run_free(&st);

	/* host OOM is a result: 1500 bytes of host memory hold the states
	 * (1200) but not the masters (600 more) */
	hw.host_memory = 1500;
	run_toy(&hw, "zero-offload", NULL, 0, &st, NULL);
	assert_true(st.oom.hit);
	assert_non_null(strstr(st.oom.reason, "host memory"));
	st_run_free(&st);

	/* 2000 hold states and masters (1800) but not every gradient: the
	 * third copy out is refused and the run ends as a host OOM */
	hw.host_memory = 2000;
	run_toy(&hw, "zero-offload", NULL, 0, &st, NULL);
	assert_true(st.oom.hit);
	assert_non_null(strstr(st.oom.reason, "host memory exhausted"));
	st_run_free(&st);
}

/* zero-offload needs the host's memory bandwidth: a profile without
 * host.mem_bw is refused at planning, naming the key. */
static void test_zero_offload_needs_host_bw(void **state)
{
	(void)state;
	struct hw_profile hw;
	profile(&hw);
	struct wl_workload *w = toy();
	struct pol p;
	make_policy(&p, "zero-offload", NULL, 0);
	struct st_run st;
	memset(&st, 0, sizeof st);
	assert_int_equal(run_on(w, &p, &hw, "arena", 0, 0, 1, &st), -1);
	assert_non_null(strstr(st.error, "host.mem_bw"));
	st_run_free(&st);
	pol_destroy(&p);
	wl_free(w);
}

/* A gradient the framework holds for the run cannot leave the device:
 * zero-offload refuses at planning, naming it and the personality;
 * offload counts the held saved tensors it leaves alone. */
static void test_held_gradient_refused(void **state)
{
	(void)state;
	struct hw_profile hw;
	profile(&hw);
	hw.host_mem_bw = 1e9;
	struct wl_workload *w = toy_opt(true);
	struct pol p;
	make_policy(&p, "zero-offload", NULL, 0);
	struct st_run st;
	memset(&st, 0, sizeof st);
	assert_int_equal(run_on(w, &p, &hw, "arena", 0, 0, 1, &st), -1);
	assert_non_null(strstr(st.error, "dWa1 is held"));
	assert_non_null(strstr(st.error, "pytorch"));
	st_run_free(&st);
	pol_destroy(&p);
	wl_free(w);
}

/* ---- every family, and a recorded trace ------------------------------ */

/* The header's definition of saved for backward: not a parameter or
 * optimizer state, made in forward (or an input), read in backward. */
static bool is_saved(const struct wl_workload *w, uint32_t t)
{
	const struct wl_tensor *x = &w->tensors[t];
	if (x->kind == WL_PARAM || x->kind == WL_OPT_STATE || x->held)
		return false;
	if (x->producer == WL_NONE ? x->kind != WL_INPUT
	    : w->ops[x->producer].phase != WL_FWD)
		return false;
	bool bwd = false;
	for (uint32_t i = 0; i < x->n_readers; i++)
		bwd |= w->ops[x->readers[i]].phase == WL_BWD;
	return bwd;
}

/* What save_on_cpu copies each way (docs/offload.md): per run of
 * backward ops of one layer (one autograd node), each distinct tensor
 * they read that is saved or a parameter; a run whose layer has no
 * forward op (a recorded trace's backward ops are layers of their own)
 * has no pack point and copies each saved tensor once, as before. */
static uint64_t pack_bytes(const struct wl_workload *w)
{
	uint64_t b = 0;
	uint32_t *seen = calloc(w->n_tensors + 1, sizeof *seen), run = 0;
	bool *fwd = calloc(w->n_layers + 1, sizeof *fwd);
	assert_non_null(seen);
	assert_non_null(fwd);
	for (uint32_t o = 0; o < w->n_ops; o++)
		fwd[w->ops[o].layer] |= w->ops[o].phase == WL_FWD;
	/* first: each saved tensor once */
	for (uint32_t t = 0; t < w->n_tensors; t++)
		b += is_saved(w, t) ? w->tensors[t].bytes : 0;
	/* then the second and later packs, and every weight, of the runs
	 * with a forward layer: run by run, a saved tensor's first listing
	 * (in any run with a forward layer) is the copy counted above */
	bool *first = calloc(w->n_tensors + 1, sizeof *first);
	assert_non_null(first);
	for (uint32_t o = 0; o < w->n_ops; o++) {
		const struct wl_op *op = &w->ops[o];
		if (op->phase != WL_BWD)
			continue;
		if (!run || w->ops[o - 1].phase != WL_BWD ||
		    w->ops[o - 1].layer != op->layer)
			run++;
		if (!fwd[op->layer])
			continue;
		for (uint32_t i = 0; i < op->n_in; i++) {
			uint32_t t = op->in[i];
			if (seen[t] == run || !(is_saved(w, t) ||
						w->tensors[t].kind == WL_PARAM))
				continue;
			seen[t] = run;
			if (w->tensors[t].kind != WL_PARAM && !first[t]) {
				first[t] = true;
				continue;
			}
			b += w->tensors[t].bytes;
		}
	}
	free(seen);
	free(fwd);
	free(first);
	return b;
}

/* Blocking offload (save_on_cpu) copies out and back what each saving
 * node packs (pack_bytes);
 * zero-offload copies each gradient an update reads out and each updated
 * parameter back, and holds at least the optimizer states and the fp32
 * masters (4 bytes an element) in host memory. On the 64 GiB test
 * device nothing runs out. */
static void check_family(struct wl_workload *w, const char *what)
{
	struct hw_profile hw;
	hw_test_profile(&hw, (uint64_t)64 << 30);
	hw.host_mem_bw = 1e9;
	struct pol p;
	struct st_run st;
	const char *pin[] = {"pin_memory=true"};
	make_policy(&p, "offload", pin, 1);
	memset(&st, 0, sizeof st);
	if (run_on(w, &p, &hw, "arena", 0, 0, 1, &st) < 0 || st.oom.hit)
		fail_msg("%s: offload failed: %s", what, st.error);
	uint64_t want = pack_bytes(w);
	if (st.steady.bytes_d2h != want || st.steady.bytes_h2d != want)
		fail_msg("%s: offload moved %llu out, %llu in; packed %llu",
			 what, (unsigned long long)st.steady.bytes_d2h,
			 (unsigned long long)st.steady.bytes_h2d,
			 (unsigned long long)want);
	assert_true(want > 0);
	st_run_free(&st);
	pol_destroy(&p);

	/* each tensor once, however many update ops read it (pytorch's
	 * foreach ops read a parameter's tensors in several) */
	uint64_t grads = 0, params = 0, states = 0, masters = 0;
	bool *seen = calloc(w->n_tensors, sizeof *seen);
	assert_non_null(seen);
	for (uint32_t o = 0; o < w->n_ops; o++) {
		const struct wl_op *op = &w->ops[o];
		if (op->type != OT_UPDATE || op->phase != WL_UPD)
			continue;
		for (uint32_t i = 0; i < op->n_in; i++) {
			const struct wl_tensor *x = &w->tensors[op->in[i]];
			if (seen[op->in[i]])
				continue;
			seen[op->in[i]] = true;
			if (x->kind == WL_PARAM) {
				params += x->bytes;
				masters += 4 * (x->bytes / (x->esz ? x->esz : 4));
			} else if (x->kind == WL_OPT_STATE) {
				states += x->bytes;
			} else if (x->kind != WL_WORKSPACE) {
				/* (a foreach temporary stays host scratch) */
				grads += x->bytes;
			}
		}
	}
	free(seen);
	make_policy(&p, "zero-offload", NULL, 0);
	memset(&st, 0, sizeof st);
	if (run_on(w, &p, &hw, "arena", 0, 0, 1, &st) < 0 || st.oom.hit)
		fail_msg("%s: zero-offload failed: %s", what, st.error);
	if (st.steady.bytes_d2h != grads || st.steady.bytes_h2d != params)
		fail_msg("%s: zero-offload moved %llu out, %llu in; gradients "
			 "%llu, parameters %llu",
			 what, (unsigned long long)st.steady.bytes_d2h,
			 (unsigned long long)st.steady.bytes_h2d,
			 (unsigned long long)grads, (unsigned long long)params);
	assert_true(st.host_peak >= states + masters);
	st_run_free(&st);
	pol_destroy(&p);
}

static void test_every_family(void **state)
{
	(void)state;
	static const struct {
		const char *name;
		int64_t size;
	} nets[] = {{"alexnet", 64},  {"resnet50", 32},	  {"densenet121", 32},
		    {"inception_v3", 299}, {"bert_base", 32}, {"gpt2", 64},
		    {"tinyllama-1.1b", 32}};
	for (size_t i = 0; i < sizeof nets / sizeof *nets; i++) {
		struct wl_workload *w = gen_build_ok(nets[i].name, 1,
						     nets[i].size, WL_FW_PYTORCH,
						     WL_OPTIM_ADAMW);
		check_family(w, nets[i].name);
		wl_free(w);
	}
}

/* A recorded trace: offload as on the generators; it has no optimizer
 * step, so zero-offload moves nothing and says so. */
static void test_recorded_trace(void **state)
{
	(void)state;
	char path[4096];
	dtr_path_or_skip(DTR_RESNET32, path, sizeof path);
	gms_err err = {{0}};
	struct wl_workload *w = wl_load_dtr(path, &err);
	if (!w)
		fail_msg("%s", err.msg);
	struct hw_profile hw;
	hw_test_profile(&hw, (uint64_t)64 << 30);
	hw.host_mem_bw = 1e9;
	struct pol p;
	struct st_run st;
	make_policy(&p, "offload", NULL, 0);
	memset(&st, 0, sizeof st);
	assert_int_equal(run_on(w, &p, &hw, "arena", 0, 0, 1, &st), 0);
	assert_int_equal(st.steady.bytes_d2h, pack_bytes(w));
	assert_int_equal(st.steady.bytes_h2d, pack_bytes(w));
	st_run_free(&st);
	pol_destroy(&p);
	char *rep = NULL;
	make_policy(&p, "zero-offload", NULL, 0);
	memset(&st, 0, sizeof st);
	assert_int_equal(run_on(w, &p, &hw, "arena", 0, 0, 1, &st), 0);
	assert_int_equal(pol_report_text(&p, &rep, &err), 0);
	assert_non_null(strstr(rep, "update_ops_on_host 0\n"));
	assert_int_equal(st.steady.bytes_d2h + st.steady.bytes_h2d, 0);
	free(rep);
	st_run_free(&st);
	pol_destroy(&p);
	wl_free(w);
}

/* ---- the executor's host-side calls, with a scripted policy ---------- */

/* plan: make Wa1's states host-resident and, `host_op`, run its update on
 * the host; after b1.mlp: copy h1 out pageable (the toy's h1 is read by
 * b1.mlp.bwd, swapped in on demand). */
struct host_script {
	bool host_op;	     /* Wa1.update on the host */
	bool state_on_dev_op; /* a device op reads a host-resident state */
};

static int hs_plan(struct pol *p, struct ex *ex, gms_err *err)
{
	const struct host_script *h = p->priv;
	const struct wl_workload *w = ex_workload(ex);
	(void)err;
	assert_int_equal(ex_host_resident(ex, tensor_id(w, "Wa1.m")), 0);
	assert_int_equal(ex_host_resident(ex, tensor_id(w, "Wa1.v")), 0);
	/* only whole-run tensors may live on the host */
	assert_int_equal(ex_host_resident(ex, tensor_id(w, "h1")), -1);
	/* only an update op may run on the host */
	assert_int_equal(ex_run_on_host(ex, op_id(w, "b1.attn"), 5), -1);
	if (h->host_op)
		assert_int_equal(ex_run_on_host(ex, op_id(w, "Wa1.update"), 50),
				 0);
	return 0;
}

static void hs_after(struct pol *p, struct ex *ex, const struct wl_op *op)
{
	(void)p;
	const struct wl_workload *w = ex_workload(ex);
	if (strcmp(op->name, "b1.mlp") == 0) {
		eng_event ev = ex_swap_out(ex, tensor_id(w, "h1"),
					   EX_RELEASE | EX_PAGEABLE);
		assert_int_not_equal(ev, ENG_EVENT_NONE);
		ex_wait(ex, ev);
	}
	if (strcmp(op->name, "b1.attn.bwd") == 0)
		assert_int_not_equal(ex_swap_out(ex, tensor_id(w, "dWa1"),
						 EX_RELEASE | EX_PAGEABLE),
				     ENG_EVENT_NONE);
}

static int run_script(struct host_script *h, struct st_run *st)
{
	struct hw_profile hw;
	profile(&hw);
	struct wl_workload *w = toy();
	const struct pol_ops ops = {.name = "host-script", .plan = hs_plan,
				    .after_op = hs_after};
	struct pol pol = {.ops = &ops, .priv = h};
	memset(st, 0, sizeof *st);
	int rc = run_on(w, &pol, &hw, "arena", 0, 0, 1, st);
	wl_free(w);
	return rc;
}

/* Wa1.update on the host reads Wa1.m and .v there and dWa1's host copy.
 * h1 goes out after b1.mlp (pageable, 2000 ns, waited for: [300,2300])
 * and comes back for b1.mlp.bwd ([4120,6120]); dWa1 goes out after
 * b1.attn.bwd ([6720,6920], 200 ns); Wa1.update runs on the host after it
 * [6920,6970]; the five others take 25 on the device: 6995. The host
 * holds the two states (200) and h1 (1000) at once: 1200; nothing pinned. */
static void test_host_calls(void **state)
{
	(void)state;
	struct host_script h = {.host_op = true};
	struct st_run st;
	assert_int_equal(run_script(&h, &st), 0);
	assert_false(st.oom.hit);
	assert_int_equal(st.steady.time, 6995);
	assert_int_equal(st.steady.stall[ST_STALL_D2H], 2000);
	assert_int_equal(st.steady.stall[ST_STALL_H2D], 2000);
	assert_int_equal(st.steady.host_busy, 50);
	assert_int_equal(st.host_peak, 1200);
	assert_int_equal(st.pinned_peak, 0);
	st_run_free(&st);
}

/* the update left on the device reads a host-resident state: an error
 * naming the op and the tensor, not a crash */
static void test_device_op_reads_host_tensor(void **state)
{
	(void)state;
	struct host_script h = {.host_op = false};
	struct st_run st;
	assert_int_equal(run_script(&h, &st), -1);
	assert_true(st.failed);
	assert_non_null(strstr(st.error, "Wa1.update"));
	assert_non_null(strstr(st.error, "Wa1.m"));
	st_run_free(&st);
}

/* What save_on_cpu's hook would copy (the report's save_on_cpu_packs and
 * save_on_cpu_pack_bytes), once per saving layer and tensor, parameters
 * included, on a graph built for it (bytes):
 *   x input 100, W parameter 10
 *   l1   fwd  x, W -> a 1000
 *   l2   fwd  a    -> b 1000
 *   l3   fwd  a, b -> c 1000
 *   loss fwd  c    -> l 10
 *   loss.bwd       (layer loss) c          -> gc
 *   l3.bwd_a, l3.bwd_b (layer l3) gc, a; gc, b, a -> ga3; gb
 *   l2.bwd         (layer l2) gb, a        -> ga2
 *   l1.bwd         (layer l1) ga2, ga3, x, W -> gW
 * Nodes and what each packs: loss: c (1000); l3: a, b, a counted once in
 * the node (2000); l2: a again (1000); l1: x and W (110). 6 packs,
 * 4110 bytes; the policy's own copies are x, a, b, c once (4 tensors,
 * 3100 bytes) and the second ones ex_copy_again: W and a's second.
 *
 * Timed with pin_memory=true (1 ns per byte), every copy synchronous:
 * forward l1 [0,10]; its own packs x [10,110], a [110,1110]; layer l1's
 * node: x is its own first pack, W again [1110,1120]. l2 [1120,1130];
 * b [1130,2130]; its node: a's first pack (a's own copy). l3
 * [2130,2140]; c [2140,3140]; its node: a again [3140,4140], b first.
 * loss [4140,4150]; its node: c first. Backward: loss.bwd swaps c in
 * [4150,5150], runs [5150,5160]; l3's node: a and b first unpacks, the
 * executor's swap-ins before l3.bwd_a (a [5160,6160], op [6160,6170])
 * and l3.bwd_b (b [6170,7170], op [7170,7180]); l2's node: a again into
 * its block [7180,8180], l2.bwd [8180,8190]; l1's node: W again
 * [8190,8200], then x's swap-in [8200,8300], l1.bwd [8300,8310];
 * W.update [8310,8315]. Time 8315 = 95 of kernels + 4110 stalled each
 * way; 4110 bytes each way; 2 copies again each way. Without the second
 * copies: 95 + 2 x 3100 = 6295. */
static void test_save_on_cpu_packs(void **state)
{
	(void)state;
	struct wl_workload *w = wl_new("packs", 1);
	wl_set_framework(w, "pytorch");
	uint32_t x = T(w, "x", 100, WL_INPUT), W = T(w, "W", 10, WL_PARAM);
	uint32_t a = T(w, "a", 1000, WL_ACT), b = T(w, "b", 1000, WL_ACT);
	uint32_t c = T(w, "c", 1000, WL_ACT), l = T(w, "l", 10, WL_ACT);
	uint32_t gc = T(w, "gc", 1000, WL_ACT_GRAD);
	uint32_t ga3 = T(w, "ga3", 1000, WL_ACT_GRAD);
	uint32_t gb = T(w, "gb", 1000, WL_ACT_GRAD);
	uint32_t ga2 = T(w, "ga2", 1000, WL_ACT_GRAD);
	uint32_t gW = T(w, "gW", 10, WL_PARAM_GRAD);
	uint32_t i1[] = {x, W}, i3[] = {a, b}, i3a[] = {gc, a},
		 i3b[] = {gc, b, a}, i2[] = {gb, a}, i1b[] = {ga2, ga3, x, W},
		 iu[] = {W, gW};
	O(w, "l1", OT_MATMUL, WL_FWD, "l1", 10, i1, 2, &a, 1);
	O(w, "l2", OT_MATMUL, WL_FWD, "l2", 10, &a, 1, &b, 1);
	O(w, "l3", OT_MATMUL, WL_FWD, "l3", 10, i3, 2, &c, 1);
	O(w, "loss", OT_LOSS, WL_FWD, "loss", 10, &c, 1, &l, 1);
	O(w, "loss.bwd", OT_LOSS_BWD, WL_BWD, "loss", 10, &c, 1, &gc, 1);
	O(w, "l3.bwd_a", OT_MATMUL_BWD, WL_BWD, "l3", 10, i3a, 2, &ga3, 1);
	O(w, "l3.bwd_b", OT_MATMUL_BWD, WL_BWD, "l3", 10, i3b, 3, &gb, 1);
	O(w, "l2.bwd", OT_MATMUL_BWD, WL_BWD, "l2", 10, i2, 2, &ga2, 1);
	O(w, "l1.bwd", OT_MATMUL_BWD, WL_BWD, "l1", 10, i1b, 4, &gW, 1);
	O(w, "W.update", OT_UPDATE, WL_UPD, "update", 5, iu, 2, NULL, 0);
	finalize(w);
	struct hw_profile hw;
	profile(&hw);
	struct pol p;
	const char *kv[] = {"pin_memory=true"};
	make_policy(&p, "offload", kv, 1);
	struct st_run st;
	memset(&st, 0, sizeof st);
	assert_int_equal(run_on(w, &p, &hw, "arena", 0, 0, 1, &st), 0);
	assert_false(st.oom.hit);
	assert_int_equal(st.steady.time, 8315);
	assert_int_equal(st.steady.stall[ST_STALL_D2H], 4110);
	assert_int_equal(st.steady.stall[ST_STALL_H2D], 4110);
	assert_int_equal(st.steady.bytes_d2h, 4110);
	assert_int_equal(st.steady.bytes_h2d, 4110);
	char *rep = NULL;
	gms_err err = {{0}};
	assert_int_equal(pol_report_text(&p, &rep, &err), 0);
	assert_non_null(strstr(rep, "saved_tensors 4\n"));
	assert_non_null(strstr(rep, "saved_bytes 3100\n"));
	assert_non_null(strstr(rep, "save_on_cpu_packs 6\n"));
	assert_non_null(strstr(rep, "save_on_cpu_pack_bytes 4110\n"));
	assert_non_null(strstr(rep, "again_packs 2\n"));
	assert_non_null(strstr(rep, "again_unpacks 2\n"));
	assert_non_null(strstr(rep, "again_refused 0\n"));
	free(rep);
	pol_destroy(&p);
	st_run_free(&st);

	/* Pinned memory for 3500 bytes: after l3 the host holds x, a, W's
	 * second copy, b and c (3110), so a's second pack (1000) is
	 * refused, and so is its second unpack in l2's node: nothing of its
	 * own to bring back. 8315 - 2 x 1000 = 6315; 3110 bytes and stalls
	 * each way; W's second copies only. */
	hw.host_pinned = 3500;
	make_policy(&p, "offload", kv, 1);
	memset(&st, 0, sizeof st);
	assert_int_equal(run_on(w, &p, &hw, "arena", 0, 0, 1, &st), 0);
	assert_false(st.oom.hit);
	assert_int_equal(st.steady.time, 6315);
	assert_int_equal(st.steady.bytes_d2h, 3110);
	assert_int_equal(st.steady.bytes_h2d, 3110);
	assert_int_equal(st.steady.stall[ST_STALL_H2D], 3110);
	rep = NULL;
	assert_int_equal(pol_report_text(&p, &rep, &err), 0);
	assert_non_null(strstr(rep, "again_packs 1\n"));
	assert_non_null(strstr(rep, "again_unpacks 1\n"));
	assert_non_null(strstr(rep, "again_refused 2\n"));
	free(rep);
	pol_destroy(&p);
	st_run_free(&st);
	wl_free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_framework_baseline),
		cmocka_unit_test(test_save_on_cpu_blocking),
		cmocka_unit_test(test_overlap_streams),
		cmocka_unit_test(test_zero_offload),
		cmocka_unit_test(test_zero_offload_needs_host_bw),
		cmocka_unit_test(test_held_gradient_refused),
		cmocka_unit_test(test_every_family),
		cmocka_unit_test(test_recorded_trace),
		cmocka_unit_test(test_host_calls),
		cmocka_unit_test(test_device_op_reads_host_tensor),
		cmocka_unit_test(test_save_on_cpu_packs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
