/*
 * test_conv_algo.c - the cuDNN algorithm model (workloads/conv_algo.c) on
 * hand-derived layer shapes, and the binding of a profile's measured
 * conv_algos: to a workload's convolutions (sim/ex.c).
 */
#include <math.h>
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
#include "../sim/hw.h"
#include "../workloads/conv_algo.h"
#include "../workloads/gen.h"
#include "../workloads/wl_gen.h"
#include "wlkit.h"

/* Square convolution geometry: batch n, c -> k channels, side h, filter
 * r, stride, pad. */
static struct wl_conv geo(int64_t n, int64_t c, int64_t k, int64_t h,
			  int64_t r, int64_t stride, int64_t pad)
{
	int64_t ho = (h + 2 * pad - r) / stride + 1;
	return (struct wl_conv){n, c, k, h, h, ho, ho, r, r, stride,
				pad, pad, 1};
}

/* The entry named `name` of a list; fails when absent. */
static const struct wl_algo *find(const struct wl_algo *a, uint32_t n,
				  const char *name)
{
	for (uint32_t i = 0; i < n; i++)
		if (strcmp(a[i].name, name) == 0)
			return &a[i];
	fail_msg("no algorithm %s", name);
	return NULL;
}

static bool has(const struct wl_algo *a, uint32_t n, const char *name)
{
	for (uint32_t i = 0; i < n; i++)
		if (strcmp(a[i].name, name) == 0)
			return true;
	return false;
}

/*
 * ResNet-50 res2a_branch2b, batch 32: 64 -> 64, 3x3, stride 1, pad 1,
 * 56x56. By hand (conv_algo.c's rules):
 *   IMPLICIT_GEMM 0; IMPLICIT_PRECOMP_GEMM 4 * 64*3*3 = 2,304;
 *   GEMM 4 * 64*9 * 56*56 * 32 = 231,211,008;
 *   WINOGRAD 4 * 16 * 64 * 64 = 262,144 = 256 KiB (LBANN PR #437 reports
 *     256 KiB from cuDNN for this layer);
 *   WINOGRAD_NONFUSED: 14*14 = 196 tiles, batch 32 (a multiple of 16):
 *     4 * 36 * (196 * 32 * 128 + 4,096) = 144 * 806,912 = 116,195,328;
 *   FFT (cuDNN 9.14's rule): 58 padded, N = 64: 16 * 64 * 33 = 33,792
 *     bytes a plane, max(64*64 + 32*64, 32*64) = 6,144 planes, plus the
 *     filter 4 * 9 * 4,096 = 147,456: 207,765,504;
 *   FFT_TILING (cuDNN 9.14's rule): 58 > 32, so t = 2: 4,352 * (4,096
 *     + 2 * 32 * 128) = 53,477,376.
 *   (cudnnGetConvolutionForwardWorkspaceSize on the H100, cuDNN 9.14,
 *   row resnet50.l1.c2 of the calibration: the same three figures,
 *   116,195,328, 207,765,504 and 53,477,376. The rules before issue 29
 *   gave FFT 114,032,640 and FFT_TILING 89,128,960.)
 * Fused WINOGRAD's arithmetic: 28*28 = 784 tiles; per tile 16*4096 +
 * 2*64*64 + 48*64 = 65,536 + 8,192 + 3,072 = 76,800; times 784 * 32 =
 * 1,926,758,400, plus the filter transform (36 + 48) * 4096 = 344,064;
 * over direct 32*64*64*3136*9 = 3,699,376,128: 0.52093...
 * Backward filter has no fused WINOGRAD (cuDNN: "not implemented") and
 * ALGO_3 with the index buffer; backward data has no GEMM.
 */
static void test_resnet_layer(void **state)
{
	(void)state;
	struct wl_conv g = geo(32, 64, 64, 56, 3, 1, 1);
	struct wl_algo a[CA_MAX_ALGOS];
	uint32_t n = ca_algos(&g, CA_FWD, a);
	assert_int_equal(n, 7);
	assert_int_equal(find(a, n, "IMPLICIT_GEMM")->workspace, 0);
	assert_int_equal(find(a, n, "IMPLICIT_PRECOMP_GEMM")->workspace,
			 2304);
	assert_int_equal(find(a, n, "GEMM")->workspace, 231211008);
	assert_int_equal(find(a, n, "WINOGRAD")->workspace, 262144);
	assert_int_equal(find(a, n, "WINOGRAD_NONFUSED")->workspace,
			 116195328);
	assert_int_equal(find(a, n, "FFT")->workspace, 207765504);
	assert_int_equal(find(a, n, "FFT_TILING")->workspace, 53477376);
	double want = (1926758400.0 + 344064.0) / 3699376128.0;
	assert_true(fabs(find(a, n, "WINOGRAD")->time_scale - want) < 1e-12);
	n = ca_algos(&g, CA_BWD_FILTER, a);
	assert_false(has(a, n, "WINOGRAD"));
	assert_int_equal(find(a, n, "ALGO_3")->workspace, 2304);
	assert_int_equal(find(a, n, "ALGO_0")->workspace, 0);
	n = ca_algos(&g, CA_BWD_DATA, a);
	assert_false(has(a, n, "GEMM"));
	assert_int_equal(find(a, n, "WINOGRAD")->workspace, 262144);
}

/*
 * Every forward FFT and FFT_TILING shape, and every 3x3
 * WINOGRAD_NONFUSED one, that the H100 calibration measured
 * (results/calibration/H100-80GB-HBM3/measurements.csv: cuDNN 9.14's
 * cudnnGetConvolutionForwardWorkspaceSize in size_bytes, batch 32,
 * AlexNet, VGG-16 and ResNet-50): the rule gives the byte count cuDNN
 * reported, all 62 + 16 of them (78 rows; AlexNet's 5x5 nonfused, the
 * one row left out, asks 55% of the rule).
 */
static void test_cudnn914_workspaces(void **state)
{
	(void)state;
	FILE *f = fopen(GMS_DATADIR "/results/calibration/H100-80GB-HBM3/"
				    "measurements.csv",
			"r");
	assert_non_null(f);
	char line[512];
	int checked = 0;
	while (fgets(line, sizeof line, f)) {
		long long n, c, h, w, k, r, s, st, pad, algo;
		unsigned long long ws;
		char lay[64];
		if (sscanf(line,
			   "conv,fwd,layer=%63[^;];n=%lld;c=%lld;h=%lld;w=%lld;"
			   "k=%lld;r=%lld;s=%lld;stride=%lld;pad=%lld;"
			   "algo=%lld,%llu",
			   lay, &n, &c, &h, &w, &k, &r, &s, &st, &pad, &algo,
			   &ws) != 12)
			continue;
		const char *name = algo == 4   ? "FFT"
				   : algo == 5 ? "FFT_TILING"
				   : algo == 7 && r == 3 ? "WINOGRAD_NONFUSED"
							 : NULL;
		if (!name)
			continue;
		struct wl_conv g = geo(n, c, k, h, r, st, pad);
		uint64_t got = ca_workspace(&g, CA_FWD, name);
		if (got != ws)
			fail_msg("%s %s: rule %llu, cuDNN %llu", lay, name,
				 (unsigned long long)got, ws);
		checked++;
	}
	fclose(f);
	assert_int_equal(checked, 78);
}

/*
 * Constraints: a strided 3x3 (ResNet-50 conv3 downsampling at 56, 128 ch)
 * and a 1x1 get the GEMM family only; a 7x7 stride-2 conv1 the same; a
 * 5x5 stride-1 (AlexNet conv2) gets WINOGRAD_NONFUSED's 5x5 form but no
 * fused WINOGRAD; FFT needs the padded side <= 256: VGG's 224 + 2 = 226
 * qualifies, 300 + 2 does not. The nonfused batch padding: batch 10 takes
 * the workspace of batch 16 (4 * 36 * (196 * 16 * 128 + 4,096) =
 * 58,392,576 at 64 -> 64, 56x56).
 */
static void test_constraints(void **state)
{
	(void)state;
	struct wl_algo a[CA_MAX_ALGOS];
	struct wl_conv g = geo(8, 128, 128, 56, 3, 2, 1);
	uint32_t n = ca_algos(&g, CA_FWD, a);
	assert_int_equal(n, 3);
	g = geo(8, 64, 256, 56, 1, 1, 0);
	n = ca_algos(&g, CA_FWD, a);
	assert_false(has(a, n, "WINOGRAD"));
	assert_false(has(a, n, "WINOGRAD_NONFUSED"));
	g = geo(8, 3, 64, 224, 7, 2, 3);
	assert_int_equal(ca_algos(&g, CA_FWD, a), 3);
	g = geo(8, 64, 192, 27, 5, 1, 2);
	n = ca_algos(&g, CA_FWD, a);
	assert_false(has(a, n, "WINOGRAD"));
	assert_true(has(a, n, "FFT"));
	g = geo(1, 64, 64, 300, 3, 1, 1);
	n = ca_algos(&g, CA_FWD, a);
	assert_false(has(a, n, "FFT"));
	g = geo(10, 64, 64, 56, 3, 1, 1);
	n = ca_algos(&g, CA_FWD, a);
	assert_int_equal(find(a, n, "WINOGRAD_NONFUSED")->workspace,
			 58392576);
	/* names */
	assert_int_equal(wl_conv_algo_value(OT_CONV, "7"), 7);
	assert_int_equal(wl_conv_algo_value(OT_CONV, "winograd_nonfused"), 7);
	assert_int_equal(
		wl_conv_algo_value(OT_CONV_BWD_FILTER,
				   "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3"),
		3);
	assert_int_equal(wl_conv_algo_value(OT_CONV_BWD_DATA, "ALGO_3"), -1);
	assert_int_equal(wl_conv_algo_value(OT_CONV, "8"), -1);
	assert_string_equal(wl_conv_algo_name(OT_CONV_BWD_FILTER, 6),
			    "FFT_TILING");
}

/*
 * vDNN++ Table III conv1 at batch 256: 3 -> 64, 3x3, stride 1, pad 1,
 * 224x224. The placeholder gave its "winograd" 4 * 16 * (12,544 tiles *
 * 256 * 67 + 192) = 13,770,0... bytes (13.7 GB, F(2x2) buffers for the
 * whole batch) and called it the fused algorithm. Now:
 *   fused WINOGRAD: the transformed filter, 4 * 16 * 3 * 64 = 12,288
 *     bytes (12 KiB);
 *   WINOGRAD_NONFUSED: 56*56 = 3,136 tiles, batch 256: 4 * 36 *
 *     (3,136 * 256 * 67 + 192) = 7,745,596,416 bytes (7.7 GB: the
 *     transformed product planes of the whole batch are 36/16 of y's
 *     3.29 GB);
 *   the fastest by the model's arithmetic: WINOGRAD_NONFUSED (at 3 input
 *     channels the transforms dominate: 0.85 of direct against fused
 *     WINOGRAD's 0.94; FFT is dearer than direct and not listed).
 */
static void test_table3_conv1(void **state)
{
	(void)state;
	struct wl_workload *w = gen_build_ok("vdnnpp_table3", 256, 224,
					     WL_FW_TF_GRAPH, WL_OPTIM_MOMENTUM);
	const struct wl_op *o = op(w, "conv1");
	assert_non_null(o->conv);
	const struct wl_algo *f = find(o->algos, o->n_algos, "WINOGRAD");
	assert_int_equal(f->workspace, 12288);
	const struct wl_algo *nf =
		find(o->algos, o->n_algos, "WINOGRAD_NONFUSED");
	assert_int_equal(nf->workspace, 7745596416ull);
	assert_string_equal(o->algos[0].name, "WINOGRAD_NONFUSED");
	assert_false(has(o->algos, o->n_algos, "FFT"));
	assert_true(f->time_scale > nf->time_scale);
	wl_free(w);
}

/*
 * A profile's conv_algos: for one shape replace the model for that op.
 * Workload: input 3x8x8, batch 2, conv1 3 -> 4 (3x3, pad 1, no bias),
 * then flatten and fc. The test profile runs a kernel of F FLOPs in
 * F / 1000 ns. conv1 forward's model list starts with IMPLICIT_GEMM
 * (time_scale 1: Winograd's transforms cost more at 3-4 channels), so it
 * takes 2 * 2*4*3*64*9 / 1000 = 27.648 -> 28 ns. The profile measures
 * conv (n 2, c 3, h w 8, k 4, r s 3, stride 1, pad 1): IMPLICIT_GEMM
 * 5 us, GEMM 3 us with 1 KiB workspace. The framework policy runs every
 * op's first (fastest) algorithm: GEMM, 3,000 ns. So the iteration takes
 * 3,000 - 28 = 2,972 ns longer than without the entries, one op is bound
 * (the backward passes have no entries and keep the model), and the run
 * without the entries binds none.
 */
static void test_profile_binding(void **state)
{
	(void)state;
	struct wl_gen_args ga = {2, 8, WL_FW_TF_GRAPH, WL_OPTIM_MOMENTUM};
	gms_err err = {{0}};
	struct gen *g = gen_new("bind", &ga, &err);
	struct gen_tensor x = gen_input(g, "input", 3, 8, 8);
	x = gen_conv_sq(g, "conv1", x, 4, 3, 1, 1, false);
	x = gen_linear(g, "fc", gen_flatten(g, x), 10, true);
	struct wl_workload *w = gen_finish(g, x, &err);
	if (!w)
		fail_msg("%s", err.msg);
	assert_string_equal(op(w, "conv1")->algos[0].name, "IMPLICIT_GEMM");
	sim_time_t t[2];
	uint64_t bound[2];
	static struct hw_profile hw; /* large: conv_algos inline */
	for (int run = 0; run < 2; run++) {
		hw_test_profile(&hw, 1 << 30);
		if (run == 1) {
			struct hw_conv_algo e = {.type = OT_CONV, .n = 2,
						 .c = 3, .h = 8, .w = 8,
						 .k = 4, .r = 3, .s = 3,
						 .stride = 1, .pad = 1};
			e.algo = 0, e.time = 5000, e.workspace = 0;
			hw.conv_algos[0] = e;
			e.algo = 2, e.time = 3000, e.workspace = 1024;
			hw.conv_algos[1] = e;
			hw.n_conv_algos = 2;
		}
		struct st_run st;
		framework_iteration(w, &hw, &st);
		t[run] = st.iter[0].time;
		bound[run] = st.conv_bound;
		st_run_free(&st);
	}
	assert_int_equal(bound[0], 0);
	assert_int_equal(bound[1], 1);
	assert_int_equal(t[1] - t[0], 2972);
	wl_free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resnet_layer),
		cmocka_unit_test(test_cudnn914_workspaces),
		cmocka_unit_test(test_constraints),
		cmocka_unit_test(test_table3_conv1),
		cmocka_unit_test(test_profile_binding),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
