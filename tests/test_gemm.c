/*
 * test_gemm.c - measured GEMM shapes (a profile's gemms:, issue 30): the
 * generators' GEMM shapes, the profile key, and the executor timing an
 * op of a measured shape with the measurement (ex.c, bind_gemms).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "../policies/pol.h"
#include "../sim/ex.h"
#include "../calibrate/gemm_shapes.h"
#include "../sim/hw.h"
#include "../workloads/gen.h"
#include "../workloads/wl_gen.h"
#include "wlkit.h"

/* Batch 2, input 1000 features, fc1 1000 -> 500 and fc2 500 -> 250, no
 * bias, PyTorch personality, plain SGD. */
static struct wl_workload *two_linears(void)
{
	struct wl_gen_args ga = {2, 0, WL_FW_PYTORCH, WL_OPTIM_SGD};
	gms_err err = {{0}};
	struct gen *g = gen_new("gemms", &ga, &err);
	struct gen_tensor x = gen_input(g, "input", 1000, 1, 1);
	x = gen_linear(g, "fc1", x, 500, false);
	x = gen_linear(g, "fc2", x, 250, false);
	struct wl_workload *w = gen_finish(g, x, &err);
	if (!w)
		fail_msg("%s", err.msg);
	return w;
}

static void gemm_is(const struct wl_op *o, uint32_t batch, uint32_t m,
		    uint32_t n, uint32_t k)
{
	assert_int_equal(o->gemm.batch, batch);
	assert_int_equal(o->gemm.m, m);
	assert_int_equal(o->gemm.n, n);
	assert_int_equal(o->gemm.k, k);
}

/* The shapes gen.c gives (gemm_of): a linear layer of 2 rows, in 1000,
 * out 500 is C (2 x 500) = X (2 x 1000) W^T; its weight gradient
 * dW (500 x 1000) = dY^T (500 x 2) X; fc2's data gradient dX (2 x 500) =
 * dY (2 x 250) W (250 x 500). fc1's input needs no gradient: no
 * fc1.bwd_data. */
static void test_shapes(void **state)
{
	(void)state;
	struct wl_workload *w = two_linears();
	gemm_is(op(w, "fc1"), 1, 2, 500, 1000);
	gemm_is(op(w, "fc2"), 1, 2, 250, 500);
	gemm_is(op(w, "fc1.bwd_weight"), 1, 500, 1000, 2);
	gemm_is(op(w, "fc2.bwd_weight"), 1, 250, 500, 2);
	gemm_is(op(w, "fc2.bwd_data"), 1, 2, 500, 250);
	assert_int_equal(wl_op_id(w, "fc1.bwd_data"), WL_NONE);
	wl_free(w);
}

/*
 * One gemms: entry for fc1's forward shape (m 2, n 500, k 1000, fp32),
 * 7,000 ns. The test profile (launch 0, host.launch 0) runs a kernel of
 * F FLOPs in F / 1000 ns: fc1 forward is 2 * 2 * 1000 * 500 = 2e6 FLOPs,
 * 2,000 ns on the curve. With the entry it takes 7,000 ns: the iteration
 * is 5,000 ns longer and one op is bound; every other op (fc2 of another
 * shape, the backward GEMMs of other shapes) keeps the curve's time.
 * With host.launch 1,000 ns the entry's device time is 7,000 - 1,000 =
 * 6,000 (hw_device_time: it was timed event to event, launch included),
 * 4,000 ns above the curve's -- checked on hw_device_time, since the
 * host's launches move the iteration (docs/host.md). An entry of the
 * same shape in tf32 binds nothing in an fp32 workload.
 */
static void test_measured_shape(void **state)
{
	(void)state;
	struct wl_workload *w = two_linears();
	static struct hw_profile hw; /* large: conv_algos inline */
	sim_time_t t[3];
	uint64_t bound[3];
	for (int run = 0; run < 3; run++) {
		hw_test_profile(&hw, 1 << 30);
		if (run > 0) {
			hw.gemms[0] = (struct hw_gemm){
				.math = run == 1 ? WL_MATH_FP32 : WL_MATH_TF32,
				.batch = 1, .m = 2, .n = 500, .k = 1000,
				.time = 7000};
			hw.n_gemms = 1;
		}
		struct st_run st;
		framework_iteration(w, &hw, &st);
		t[run] = st.iter[0].time;
		bound[run] = st.gemm_bound;
		st_run_free(&st);
	}
	assert_int_equal(bound[0], 0);
	assert_int_equal(bound[1], 1);
	assert_int_equal(bound[2], 0);
	assert_int_equal(t[1] - t[0], 5000);
	assert_int_equal(t[2], t[0]);
	hw.host_launch = 1000;
	assert_int_equal(hw_device_time(&hw, 7000), 6000);
	wl_free(w);
}

/* Every GEMM the transformer generators emit (bert_base at batch 32,
 * gpt2 at batch 8, their default sequences) is a shape that calibrate-
 * gpu measures at that batch (calibrate/gemm_shapes.h), so a calibration
 * at that --batch times all of them. Returns the ops not covered; *gemms
 * the ops with a shape. */
static size_t uncovered(const char *net, int64_t batch, size_t *gemms)
{
	struct wl_workload *w = gen_build_ok(net, batch, 0, WL_FW_PYTORCH,
					     WL_OPTIM_ADAM);
	size_t n = sizeof cal_gemm_shapes / sizeof *cal_gemm_shapes;
	size_t missing = 0;
	*gemms = 0;
	for (uint32_t o = 0; o < w->n_ops; o++) {
		const struct wl_gemm *g = &w->ops[o].gemm;
		if (!g->batch)
			continue;
		bool found = false;
		for (size_t i = 0; i < n && !found; i++) {
			const struct cal_gemm_shape *c = &cal_gemm_shapes[i];
			long long d[4] = {c->batch, c->m, c->n, c->k};
			d[c->per] *= batch;
			found = d[0] == g->batch && d[1] == g->m &&
				d[2] == g->n && d[3] == g->k;
		}
		if (!found)
			print_error("%s: %s (%u x %u x %u x %u) is not in "
				    "calibrate/gemm_shapes.h\n",
				    net, w->ops[o].name, g->batch, g->m, g->n,
				    g->k);
		missing += !found;
		++*gemms;
	}
	wl_free(w);
	return missing;
}

static void test_shapes_cover_generators(void **state)
{
	(void)state;
	size_t gemms;
	/* bert_base: 12 layers x 24 (q, k, v, attention output, FFN in
	 * and out: forward, data and weight gradient each; scores and
	 * context: forward and two backward halves each), pooler 3,
	 * classifier 3 */
	assert_int_equal(uncovered("bert_base", 32, &gemms), 0);
	assert_int_equal(gemms, 12 * 24 + 6);
	assert_int_equal(uncovered("gpt2", 8, &gemms), 0);
	/* 12 layers x 24, and the tied lm_head's three */
	assert_int_equal(gemms, 12 * 24 + 3);
}

/* The key as a profile writes it; a bad entry names file, line, column
 * and key. */
#define P1 "device: {capacity: 1GiB}\n"
#define P2 "compute: {conv: {peak_flops: 1e12}, matmul: {peak_flops: 1e12}, "
#define P3 "memory: {peak_flops: 1e12}}\n"
#define P4 "link: {h2d: {bw_pinned: 1e9, bw_pageable: 1e9}, d2h: " \
	   "{bw_pinned: 1e9, bw_pageable: 1e9}}\n"
#define P5 "host: {zvc_bytes_per_s: 1e9}\n"
static void test_profile_key(void **state)
{
	(void)state;
	static struct hw_profile hw;
	gms_err err = {{0}};
	if (hw_load_string(&hw, "g.yaml",
			   P1 P2 P3 P4 P5
			   "gemms:\n"
			   "  - {layer: bert.ffn1, m: 4096, n: 3072, k: 768, "
			   "math: tf32, time: 300us}\n"
			   "  - {m: 2, n: 3, k: 4, batch: 96, time: 5us}\n",
			   &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(hw.n_gemms, 2);
	assert_int_equal(hw.gemms[0].math, WL_MATH_TF32);
	assert_int_equal(hw.gemms[0].batch, 1);
	assert_int_equal(hw.gemms[0].m, 4096);
	assert_int_equal(hw.gemms[0].time, 300000);
	assert_int_equal(hw.gemms[1].math, WL_MATH_FP32);
	assert_int_equal(hw.gemms[1].batch, 96);
	/* line 6, "  - {m: 2, n: 3, k: 4, math: " is 29 characters */
	assert_int_equal(hw_load_string(&hw, "g.yaml",
					P1 P2 P3 P4 P5
					"gemms:\n"
					"  - {m: 2, n: 3, k: 4, math: fp64, "
					"time: 5us}\n",
					&err),
			 -1);
	assert_non_null(strstr(err.msg, "g.yaml:6:30: gemms[0]: key 'math'"));
	assert_int_equal(hw_load_string(&hw, "g.yaml",
					P1 P2 P3 P4 P5 "gemms: {m: 1}\n", &err),
			 -1);
	assert_non_null(strstr(err.msg, "key 'gemms': expected a sequence"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shapes),
		cmocka_unit_test(test_measured_shape),
		cmocka_unit_test(test_shapes_cover_generators),
		cmocka_unit_test(test_profile_key),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
