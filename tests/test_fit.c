/*
 * test_fit.c - fitting measurements into a hardware profile
 * (calibrate/fit.c, `gpumemsim fit`): the profile keys that record fit
 * quality and measured convolution algorithms are checked and kept; the
 * fits recover known latencies, bandwidths and saturation curves from
 * synthetic measurements with noise within 1%; malformed or incomplete
 * CSVs get a line-numbered error and nothing is written; the fitted
 * profile runs a simulation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <gsl/gsl_fit.h>
#include <gsl/gsl_rng.h>

#include "../calibrate/calib.h"
#include "clikit.h"
#include "tmpkit.h"

/* A profile with every fit key; one line per macro so that error tests
 * can name line numbers. */
#define F1 "device: {capacity: 1GiB}\n"
#define F2 "compute:\n"
#define F3                                                                 \
	"  conv:   {peak_flops: 1e12, fit: {r2: 0.99, worst_rel: 0.02, "    \
	"points: 12}}\n"
#define F4 "  conv_bwd_data: {peak_flops: 2e12}\n"
#define F5                                                                 \
	"  conv_bwd_filter: {peak_flops: 3e12, fit: {r2: 0.5, worst_rel: "  \
	"0.3, points: 4}}\n"
#define F6 "  matmul: {peak_flops: 1e12}\n"
#define F7 "  memory: {peak_flops: 1e12}\n"
#define F8 "link:\n"
#define F9                                                                 \
	"  h2d: {bw_pinned: 1e9, bw_pageable: 1e9, fit: {r2: 0.999, "       \
	"worst_rel: 0.01, points: 30}, derate_fit: {r2: 0.9, worst_rel: "   \
	"0.05, points: 10}}\n"
#define F10 "  d2h: {bw_pinned: 1e9, bw_pageable: 1e9}\n"
#define F11                                                                \
	"costs: {malloc: 1us, fit: {malloc: {worst_rel: 0.4, points: 8}}}\n"
#define F12 "host: {zvc_bytes_per_s: 1e9}\n"
#define F13 "conv_algos:\n"
#define F14                                                                \
	"  - {op: conv, layer: l1, n: 2, c: 3, h: 8, w: 8, k: 4, r: 3, s: " \
	"3, pad: 1, algo: gemm, time: 5us, workspace: 1KiB}\n"
#define F15                                                                \
	"  - {op: conv_bwd_filter, layer: l1, n: 2, c: 3, h: 8, w: 8, k: "  \
	"4, r: 3, s: 3, algo: fft, time: 7us}\n"
#define FIT_PROFILE                                                        \
	F1 F2 F3 F4 F5 F6 F7 F8 F9 F10 F11 F12 F13 F14 F15

static void test_profile_fit_keys(void **state)
{
	(void)state;
	struct hw_profile hw;
	gms_err err = {{0}};
	int rc = hw_load_string(&hw, "f.yaml", FIT_PROFILE, &err);
	if (rc)
		print_error("%s\n", err.msg);
	assert_int_equal(rc, 0);
	/* compute.conv's fit, as written (line F3) */
	assert_true(hw.op[OT_CONV].fit.has_r2);
	assert_true(hw.op[OT_CONV].fit.r2 == 0.99);
	assert_true(hw.op[OT_CONV].fit.worst_rel == 0.02);
	assert_int_equal(hw.op[OT_CONV].fit.points, 12);
	/* conv_bwd_data overrides peak_flops only: keeps its class's fit */
	assert_int_equal(hw.op[OT_CONV_BWD_DATA].fit.points, 12);
	/* conv_bwd_filter gives its own (line F5) */
	assert_int_equal(hw.op[OT_CONV_BWD_FILTER].fit.points, 4);
	assert_true(hw.op[OT_CONV_BWD_FILTER].fit.r2 == 0.5);
	/* no fit given: points 0 */
	assert_int_equal(hw.op[OT_MATMUL].fit.points, 0);
	/* links (line F9, F10) */
	assert_int_equal(hw.link[HW_H2D].fit.points, 30);
	assert_true(hw.link[HW_H2D].derate_fit.worst_rel == 0.05);
	assert_int_equal(hw.link[HW_D2H].fit.points, 0);
	/* costs: malloc's fit has no r2 (a median) */
	assert_int_equal(hw.cost_fit[0].points, 8);
	assert_false(hw.cost_fit[0].has_r2);
	assert_int_equal(hw.cost_fit[1].points, 0);
	/* two conv_algos entries (F14, F15) */
	assert_int_equal(hw.n_conv_algos, 2);
}

/* Expect FIT_PROFILE with line `bad` replaced to fail with msg. */
static void expect_error(const char *text, const char *msg)
{
	struct hw_profile hw;
	gms_err err = {{0}};
	int rc = hw_load_string(&hw, "f.yaml", text, &err);
	if (rc == 0 || strcmp(err.msg, msg) != 0)
		print_error("expected: %s\ngot (rc %d): %s\n", msg, rc, err.msg);
	assert_int_equal(rc, -1);
	assert_string_equal(err.msg, msg);
}

static void test_profile_fit_errors(void **state)
{
	(void)state;
	/* r2 above 1, line 3: "  conv:   {peak_flops: 1e12, fit: " is 34
	 * characters, so the fit mapping opens at column 35 and, after
	 * "{r2: ", its value is at column 40 */
	expect_error(F1 F2
		     "  conv:   {peak_flops: 1e12, fit: {r2: 1.5, worst_rel: "
		     "0, points: 1}}\n" F6 F7 F8 F9 F10 F12,
		     "f.yaml:3:40: compute.conv.fit: key 'r2': 1.5 is out of "
		     "range [-1e+300, 1]");
	/* points missing: the fit mapping (column 35) is named */
	expect_error(F1 F2
		     "  conv:   {peak_flops: 1e12, fit: {r2: 1, worst_rel: "
		     "0}}\n" F6 F7 F8 F9 F10 F12,
		     "f.yaml:3:35: compute.conv.fit: key 'points': missing "
		     "required key");
	/* an unknown cost under costs.fit, line 9 (eight lines before
	 * it): "costs: {fit: {" is 14
	 * characters, the key at column 15 */
	expect_error(F1 F2 F3 F6 F7 F8 F9 F10
		     "costs: {fit: {mallocs: {worst_rel: 0, points: 1}}}\n" F12,
		     "f.yaml:9:15: costs.fit: key 'mallocs': unknown key; "
		     "did you mean 'malloc'? (known: malloc, free, "
		     "host_alloc)");
	/* conv_algos: an unknown op, and a zero time; line 11 is the
	 * entry (ten lines before it), "  - {op: " is 9 characters; time's
	 * value follows "...algo: a, time: " (82 characters), column 83; a
	 * mapping for the sequence: the value of conv_algos on line 10 at
	 * column 13 */
	expect_error(F1 F2 F3 F6 F7 F8 F9 F10 F12 F13
		     "  - {op: conv_fwd, layer: l, n: 1, c: 1, h: 1, w: 1, k: "
		     "1, r: 1, s: 1, algo: a, time: 1us}\n",
		     "f.yaml:11:10: conv_algos[0]: key 'op': 'conv_fwd' is "
		     "not one of: conv, conv_bwd_data, conv_bwd_filter");
	expect_error(F1 F2 F3 F6 F7 F8 F9 F10 F12 F13
		     "  - {op: conv, layer: l, n: 1, c: 1, h: 1, w: 1, k: "
		     "1, r: 1, s: 1, algo: a, time: 0}\n",
		     "f.yaml:11:83: conv_algos[0]: key 'time': must be > 0 "
		     "(found 0)");
	expect_error(F1 F2 F3 F6 F7 F8 F9 F10 F12 "conv_algos: {a: 1}\n",
		     "f.yaml:10:13: key 'conv_algos': expected a sequence");
}

/* ---- synthetic measurements ------------------------------------------ */

/* The truth the synthetic CSV is generated from; the fits must give it
 * back within 1%. Figures of the order of a PCIe 3 GPU (10-13 GB/s,
 * ~10 us copies, 5 us launches), so the noise bites as in real data. */
#define H2D_LAT 10000.0 /* ns */
#define H2D_PIN 12e9	/* B/s */
#define H2D_PAGE 6e9
#define H2D_BI 9.6e9 /* derate 0.8 */
#define D2H_LAT 12000.0
#define D2H_PIN 13e9
#define D2H_PAGE 7e9
#define D2H_BI 11.7e9 /* derate 0.9 */
#define MEM_LAUNCH 3000.0
#define MEM_BW 700e9
#define MALLOC_NS 100000.0
/* cudaMallocHost: affine in the size (calibrate/profile.c, affine_cost),
 * 20 us + bytes / 3e9 B/s; the fit's line through the smallest and the
 * largest size gives both back within the noise */
#define HOST_ALLOC_NS 20000.0
#define HOST_ALLOC_BW 3e9

/* Compute truths: (launch ns, peak FLOP/s, sat FLOPs, alpha). Each is
 * determined by the data, as on a real GPU: the smallest kernels (1e5
 * FLOPs) are mostly launch (fwd: 5 us launch, 2e9^0.6 * 1e5^0.4 / 1e13
 * s = 3.8 us compute), the largest far beyond saturation. With
 * alpha near 1 and a large sat_flops the curve below saturation is
 * nearly flat and launch and the rise cannot be told apart from data
 * with noise; no truth here is of that kind. */
static const double conv_true[3][4] = {
	{5000, 10e12, 2e9, 0.6},   /* fwd */
	{6000, 8e12, 4e9, 0.5},	   /* bwd_data */
	{7000, 6e12, 1e9, 0.3}};   /* bwd_filter */
static const double mm_true[4] = {4000, 15e12, 5e9, 0.4};

/* Relative noise: uniform in [-NOISE, NOISE], fixed seed. */
#define NOISE 0.005

static double truth_ns(const double *k, double F)
{
	double thr = k[1] * (F < k[2] ? pow(F / k[2], k[3]) : 1);
	return k[0] + F * 1e9 / thr;
}

/* One row with noise; p10/p90 bracket the median. */
static void row(FILE *f, gsl_rng *r, const char *bench, const char *kind,
		const char *param, double size, double flops, double ns)
{
	double t = ns * (1 + NOISE * (2 * gsl_rng_uniform(r) - 1));
	fprintf(f, "%s,%s,%s,%.0f,%.6g,20,%.3f,%.3f,%.3f\n", bench, kind,
		param, size, flops, t, t * 0.99, t * 1.01);
}

/* Write the synthetic measurements to path, with the metadata line
 * extra ("# key: value\n") if not NULL. */
static void write_synthetic_meta(const char *path, const char *extra)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
	gsl_rng_set(r, 1);
	fprintf(f, CAL_CSV_MAGIC "\n# device: Synthetic GPU\n# driver: "
		   "13000\n# runtime: 13000\n# memory_bytes: 17179869184\n"
		   "# free_bytes: 16106127360\n# async_engines: 2\n%s"
		   CAL_CSV_HEADER "\n", extra ? extra : "");
	/* copies: 4 KiB to 1 GiB, doubling (19 sizes) */
	for (int i = 0; i <= 18; i++) {
		double b = 4096.0 * (1 << i);
		row(f, r, "copy", "h2d_pinned", "", b, 0,
		    H2D_LAT + b * 1e9 / H2D_PIN);
		row(f, r, "copy", "h2d_pageable", "", b, 0,
		    H2D_LAT + b * 1e9 / H2D_PAGE);
		row(f, r, "copy", "d2h_pinned", "", b, 0,
		    D2H_LAT + b * 1e9 / D2H_PIN);
		row(f, r, "copy", "d2h_pageable", "", b, 0,
		    D2H_LAT + b * 1e9 / D2H_PAGE);
		row(f, r, "copy", "h2d_bidir", "", b, 0,
		    H2D_LAT + b * 1e9 / H2D_BI);
		row(f, r, "copy", "d2h_bidir", "", b, 0,
		    D2H_LAT + b * 1e9 / D2H_BI);
		row(f, r, "memory", "elementwise", "", b, b / 8,
		    MEM_LAUNCH + b * 1e9 / MEM_BW);
		row(f, r, "alloc", "malloc", "", b, 0, MALLOC_NS);
		row(f, r, "alloc", "host_alloc", "", b, 0,
		    HOST_ALLOC_NS + b * 1e9 / HOST_ALLOC_BW);
	}
	/* one measured GEMM shape in two arithmetics, no noise: the
	 * profile's gemms: carries the row of the fitted precision (fp32
	 * here) as the fp32 workload's, and leaves the TF32 row out
	 * (test_fit_recovers_truth) */
	fprintf(f, "gemm,tf32,layer=bert_base.scores;batch=384;m=128;n=128;"
		   "k=64,0,8.05306e+08,20,4321,4000,5000\n");
	fprintf(f, "gemm,fp32,layer=bert_base.scores;batch=384;m=128;n=128;"
		   "k=64,0,8.05306e+08,20,12345,12000,13000\n");
	/* 71 shapes, 1e5 to 1e12 FLOPs (10 per decade); two conv
	 * algorithms per shape, the second 1.5x slower, listed first so
	 * the fastest is not simply the first; algorithms as calibrate
	 * records them, cuDNN enum values (0 and 1 exist in every pass: the
	 * profile's loader checks them) */
	static const char *const ck[] = {"fwd", "bwd_data", "bwd_filter"};
	for (int i = 0; i <= 70; i++) {
		double F = 1e5 * pow(10, i / 10.0);
		char p[128];
		snprintf(p, sizeof p, "m=%d;n=%d;k=%d", i, i, i);
		row(f, r, "matmul", "fp32", p, 0, F, truth_ns(mm_true, F));
		static const char *const algo[2] = {"1", "0"};
		static const double slow[2] = {1.5, 1};
		for (int k = 0; k < 3; k++)
			for (int a = 0; a < 2; a++) {
				snprintf(p, sizeof p,
					 "layer=L%d;n=1;c=%d;h=8;w=8;k=8;r=3;"
					 "s=3;stride=1;pad=1;algo=%s",
					 i, i + 1, algo[a]);
				row(f, r, "conv", ck[k], p, 1024 * (1 - a), F,
				    slow[a] * truth_ns(conv_true[k], F));
			}
	}
	gsl_rng_free(r);
	assert_int_equal(fclose(f), 0);
}

static void write_synthetic(const char *path)
{
	write_synthetic_meta(path, NULL);
}

/* |got / want - 1| <= 1%, with a message naming the figure. */
static void near(const char *what, double got, double want)
{
	if (!(fabs(got / want - 1) <= 0.01))
		fail_msg("%s: fitted %.6g, true %.6g (%.3f%% off)", what, got,
			 want, 100 * (got / want - 1));
}

static char tmpdir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof tmpdir, "/tmp/gms_fit_XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
	return system(cmd);
}

static void test_fit_recovers_truth(void **state)
{
	(void)state;
	char csv[128], out[128];
	snprintf(csv, sizeof csv, "%s/synth.csv", tmpdir);
	snprintf(out, sizeof out, "%s/Synth.yaml", tmpdir);
	write_synthetic(csv);
	gms_err err = {{0}};
	struct cal_fit_opts o = {0};
	int rc = cal_fit_file(csv, out, &o, NULL, &err);
	if (rc)
		fail_msg("%s", err.msg);
	struct hw_profile hw;
	rc = hw_load(&hw, out, &err);
	if (rc)
		fail_msg("%s", err.msg);
	/* the truths above, figure by figure */
	near("h2d latency", (double)hw.link[HW_H2D].latency, H2D_LAT);
	near("h2d bw_pinned", hw.link[HW_H2D].bw_pinned, H2D_PIN);
	near("h2d bw_pageable", hw.link[HW_H2D].bw_pageable, H2D_PAGE);
	near("h2d derate", hw.link[HW_H2D].derate, H2D_BI / H2D_PIN);
	near("d2h latency", (double)hw.link[HW_D2H].latency, D2H_LAT);
	near("d2h bw_pinned", hw.link[HW_D2H].bw_pinned, D2H_PIN);
	near("d2h bw_pageable", hw.link[HW_D2H].bw_pageable, D2H_PAGE);
	near("d2h derate", hw.link[HW_D2H].derate, D2H_BI / D2H_PIN);
	near("memory launch", (double)hw.op[OT_RELU].launch, MEM_LAUNCH);
	near("memory mem_bw", hw.op[OT_RELU].mem_bw, MEM_BW);
	near("malloc", (double)hw.malloc_cost, MALLOC_NS);
	assert_int_equal(hw.n_gemms, 1);
	assert_int_equal(hw.gemms[0].math, WL_MATH_FP32);
	assert_int_equal(hw.gemms[0].batch, 384);
	assert_int_equal(hw.gemms[0].m, 128);
	assert_int_equal(hw.gemms[0].n, 128);
	assert_int_equal(hw.gemms[0].k, 64);
	assert_int_equal(hw.gemms[0].time, 12345);
	near("host_alloc", (double)hw.host_alloc_cost, HOST_ALLOC_NS);
	near("host_alloc_bytes_per_s", hw.host_alloc_bytes_per_s,
	     HOST_ALLOC_BW);
	static const enum wl_op_type ct[3] = {OT_CONV, OT_CONV_BWD_DATA,
					      OT_CONV_BWD_FILTER};
	static const char *const cn[3] = {"conv", "conv_bwd_data",
					  "conv_bwd_filter"};
	char what[64];
	for (int k = 0; k < 3; k++) {
		const struct hw_compute *c = &hw.op[ct[k]];
		snprintf(what, sizeof what, "%s launch", cn[k]);
		near(what, (double)c->launch, conv_true[k][0]);
		snprintf(what, sizeof what, "%s peak", cn[k]);
		near(what, c->peak_flops, conv_true[k][1]);
		snprintf(what, sizeof what, "%s sat", cn[k]);
		near(what, c->sat_flops, conv_true[k][2]);
		snprintf(what, sizeof what, "%s alpha", cn[k]);
		near(what, c->alpha, conv_true[k][3]);
		/* 71 shapes: only the fastest algorithm of each is fitted */
		assert_int_equal(c->fit.points, 71);
		/* noise of 0.5% bounds the relative residual of a good
		 * fit near 0.5% (1% leaves room for the fit's own error) */
		assert_true(c->fit.worst_rel < 0.01);
	}
	near("matmul launch", (double)hw.op[OT_MATMUL].launch, mm_true[0]);
	near("matmul peak", hw.op[OT_MATMUL].peak_flops, mm_true[1]);
	near("matmul sat", hw.op[OT_MATMUL].sat_flops, mm_true[2]);
	near("matmul alpha", hw.op[OT_MATMUL].alpha, mm_true[3]);
	/* 19 sizes x (pinned + pageable) in one fit per direction */
	assert_int_equal(hw.link[HW_H2D].fit.points, 38);
	assert_true(hw.link[HW_H2D].fit.worst_rel < 0.01);
	/* capacity and reserved from the metadata: 16 GiB, 16 - 15 GiB */
	assert_int_equal(hw.capacity, 16 * GMS_GIB);
	assert_int_equal(hw.reserved, GMS_GIB);
	/* every conv row in conv_algos: 71 shapes x 3 passes x 2 */
	assert_int_equal(hw.n_conv_algos, 71 * 3 * 2);
	/* name from the file stem */
	assert_string_equal(hw.name, "Synth");
}

/* `gpumemsim fit` then `gpumemsim simulate resnet50 --hw` the result. */
/* cudaMallocHost that costs the same at every size (3000 ns, the 1 GiB
 * row 3000.5 ns): the line through the smallest and the largest size
 * would pin at 2.1e18 B/s, which no profile holds; the fit takes the
 * median instead (3000 ns, no size term) and its profile loads. */
static void test_fit_flat_host_alloc(void **state)
{
	(void)state;
	char csv[128], flat[128], out[128], line[512];
	snprintf(csv, sizeof csv, "%s/synth.csv", tmpdir);
	snprintf(flat, sizeof flat, "%s/flat.csv", tmpdir);
	snprintf(out, sizeof out, "%s/Flat.yaml", tmpdir);
	write_synthetic(csv);
	FILE *in = fopen(csv, "r"), *o = fopen(flat, "w");
	assert_non_null(in);
	assert_non_null(o);
	while (fgets(line, sizeof line, in)) {
		double b;
		if (sscanf(line, "alloc,host_alloc,,%lf", &b) == 1) {
			double t = b >= 1073741824.0 ? 3000.5 : 3000;
			fprintf(o, "alloc,host_alloc,,%.0f,0,20,%.1f,%.1f,%.1f\n",
				b, t, t, t);
		} else {
			fputs(line, o);
		}
	}
	fclose(in);
	assert_int_equal(fclose(o), 0);
	gms_err err = {{0}};
	struct cal_fit_opts opts = {0};
	if (cal_fit_file(flat, out, &opts, NULL, &err))
		fail_msg("%s", err.msg);
	struct hw_profile hw;
	if (hw_load(&hw, out, &err))
		fail_msg("%s", err.msg);
	near("host_alloc", (double)hw.host_alloc_cost, 3000);
	assert_true(hw.host_alloc_bytes_per_s == 0);
}

static void test_fit_cli_profile_runs(void **state)
{
	(void)state;
	char csv[128], out[128], args[512], *o;
	snprintf(csv, sizeof csv, "%s/cli.csv", tmpdir);
	snprintf(out, sizeof out, "%s/cli.yaml", tmpdir);
	write_synthetic(csv);
	snprintf(args, sizeof args, "fit %s -o %s --name FittedGPU --base "
				    "V100-16GB", csv, out);
	int rc = sh(args, &o);
	if (rc)
		fail_msg("%s: %s", args, o);
	assert_non_null(strstr(o, "wrote "));
	free(o);
	snprintf(args, sizeof args, "simulate resnet50 --batch 8 --hw %s", out);
	rc = sh(args, &o);
	if (rc)
		fail_msg("%s: %s", args, o);
	/* the report's first line names the workload and the profile */
	assert_non_null(strstr(o, "resnet50 on FittedGPU, batch 8"));
	free(o);
	/* --base: the host section is V100-16GB's (8 threads there) */
	struct hw_profile hw, base;
	gms_err err;
	assert_int_equal(hw_load(&hw, out, &err), 0);
	assert_int_equal(hw_load(&base, "V100-16GB", &err), 0);
	assert_int_equal(hw.cpu_threads, base.cpu_threads);
	assert_true(hw.zvc_bytes_per_s == base.zvc_bytes_per_s);
}

/* Issue 17 item 7: `fit --name` with YAML's special characters wrote a
 * profile that did not load ("internal error"). The name is written as a
 * quoted scalar and comes back as given. */
static void test_fit_name_quoted(void **state)
{
	(void)state;
	char csv[128], out[128], args[512], *o;
	snprintf(csv, sizeof csv, "%s/name.csv", tmpdir);
	snprintf(out, sizeof out, "%s/name.yaml", tmpdir);
	write_synthetic(csv);
	snprintf(args, sizeof args,
		 "fit %s -o %s --name 'a: b #c \"d\" [e]'", csv, out);
	int rc = sh(args, &o);
	if (rc)
		fail_msg("%s: %s", args, o);
	free(o);
	struct hw_profile hw;
	gms_err err;
	if (hw_load(&hw, out, &err) < 0)
		fail_msg("%s", err.msg);
	assert_string_equal(hw.name, "a: b #c \"d\" [e]");
}

/* Each fixture fails with exactly its message; nothing is written. */
static void test_fit_bad_csv(void **state)
{
	(void)state;
	static const struct {
		const char *file, *msg;
	} cases[] = {
		{"bad_magic.csv",
		 "bad_magic.csv:1: not a calibration CSV (the first line must "
		 "be '# gpumemsim calibration v1')"},
		{"bad_header.csv",
		 "bad_header.csv:3: expected the header 'bench,kind,param,"
		 "size_bytes,flops,repeats,median_ns,p10_ns,p90_ns'"},
		{"bad_columns.csv",
		 "bad_columns.csv:5: 7 columns, expected 9 (bench,kind,param,"
		 "size_bytes,flops,repeats,median_ns,p10_ns,p90_ns)"},
		{"bad_number.csv",
		 "bad_number.csv:4: column 'median_ns': '12x' is not a "
		 "number"},
		{"bad_negative.csv",
		 "bad_negative.csv:4: column 'size_bytes': -4096 must be >= 0"},
		{"bad_bench.csv",
		 "bad_bench.csv:4: column 'bench': unknown 'cpy' (known: copy, "
		 "alloc, launch, matmul, conv, memory, gemm)"},
		{"bad_kind.csv",
		 "bad_kind.csv:4: column 'kind': unknown 'h2d' for bench copy "
		 "(known: h2d_pinned, h2d_pageable, d2h_pinned, d2h_pageable, "
		 "h2d_bidir, d2h_bidir)"},
		{"bad_spread.csv",
		 "bad_spread.csv:4: column 'median_ns': 900 is not between "
		 "p10_ns (1000) and p90_ns (1100)"},
		{"bad_no_header.csv",
		 "bad_no_header.csv:2: end of file before the header 'bench,"
		 "kind,param,size_bytes,flops,repeats,median_ns,p10_ns,"
		 "p90_ns'"},
		/* complete in form, but the d2h copies are missing: the
		 * error names the last line (12) */
		{"incomplete.csv",
		 "incomplete.csv:15: end of file: no 'copy,d2h_pinned' rows "
		 "(needed for link.d2h)"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char path[256], out[256], want[512];
		snprintf(path, sizeof path, "tests/fixtures/calib/%s",
			 cases[i].file);
		snprintf(out, sizeof out, "%s/bad.yaml", tmpdir);
		snprintf(want, sizeof want, "tests/fixtures/calib/%s",
			 cases[i].msg);
		gms_err err = {{0}};
		struct cal_fit_opts o = {0};
		int rc = cal_fit_file(path, out, &o, NULL, &err);
		if (rc == 0 || strcmp(err.msg, want) != 0)
			fail_msg("%s: rc %d\n got: %s\nwant: %s", cases[i].file,
				 rc, err.msg, want);
		assert_int_equal(access(out, F_OK), -1);
	}
	/* through the program: exit 2, the message on stderr */
	char args[256], *o;
	snprintf(args, sizeof args,
		 "fit tests/fixtures/calib/bad_number.csv -o %s/x.yaml", tmpdir);
	assert_int_equal(sh(args, &o), 2);
	assert_non_null(strstr(o, "bad_number.csv:4: column 'median_ns'"));
	free(o);
}

/* ---- degenerate data (issue 17, defect 5) --------------------------- */

/* Distinct points: rows (1,2) (1,2) (1,3) (2,2) are three; a linear fit
 * of 2 parameters needs 3 distinct rows, and (1,5) x 3 + (1,7) has 2. */
/* The conv rows' math mode must be the one --precision models (issue
 * 21: cuDNN's default math measured TF32 convolutions on an H100 for a
 * profile that models FP32). */
static void test_fit_conv_math(void **state)
{
	(void)state;
	char csv[128], out[128], want[512];
	snprintf(csv, sizeof csv, "%s/synth.csv", tmpdir);
	snprintf(out, sizeof out, "%s/Synth.yaml", tmpdir);
	struct cal_fit_opts o = {0};
	gms_err err = {{0}};
	/* fp32 (the default) is FMA math: accepted */
	write_synthetic_meta(csv, "# conv_math: fma\n");
	if (cal_fit_file(csv, out, &o, NULL, &err) != 0)
		fail_msg("%s", err.msg);
	/* TF32 convolutions for an FP32 profile: refused, nothing written */
	unlink(out);
	write_synthetic_meta(csv, "# conv_math: tf32\n");
	assert_int_equal(cal_fit_file(csv, out, &o, NULL, &err), -1);
	snprintf(want, sizeof want,
		 "%s: metadata 'conv_math': the conv rows were measured with "
		 "'tf32' math, but --precision fp32 models 'fma' (README, "
		 "\"Calibration\")",
		 csv);
	assert_string_equal(err.msg, want);
	assert_int_equal(access(out, F_OK), -1);
	/* and the other way round */
	write_synthetic_meta(csv, "# conv_math: fma\n");
	o.precision = "tf32";
	assert_int_equal(cal_fit_file(csv, out, &o, NULL, &err), -1);
	assert_non_null(strstr(err.msg, "measured with 'fma' math, but "
					"--precision tf32 models 'tf32'"));
	/* no line (a CSV from before the key): kept, and said */
	o.precision = NULL;
	write_synthetic(csv);
	char logp[160];
	snprintf(logp, sizeof logp, "%s/log.txt", tmpdir);
	FILE *log = fopen(logp, "w+");
	assert_non_null(log);
	if (cal_fit_file(csv, out, &o, log, &err) != 0)
		fail_msg("%s", err.msg);
	rewind(log);
	char buf[4096];
	size_t n = fread(buf, 1, sizeof buf - 1, log);
	buf[n] = 0;
	fclose(log);
	assert_non_null(strstr(buf, "note: the conv rows do not say their "
				    "math mode"));
}

static void test_fit_distinct_points(void **state)
{
	(void)state;
	const double r[] = {1, 2, 1, 2, 1, 3, 2, 2};
	assert_int_equal(cal_distinct(r, 4, 2), 3);
	assert_int_equal(cal_distinct(r, 4, 1), 2); /* 1 2 1 2: {1, 2} */
	const double x[] = {1, 5, 1, 5, 1, 5, 1, 7}, y[] = {5, 5, 5, 7};
	double c[2];
	struct cal_quality q;
	gms_err err = {{0}};
	assert_int_equal(cal_fit_linear(x, y, 4, 2, c, &q, &err), -1);
	assert_string_equal(err.msg, "2 distinct points (of 4) for 2 "
				     "parameters (need at least 3)");
	/* compute: 6 points at 4 FLOP counts */
	const double F[] = {1e6, 1e6, 1e7, 1e8, 1e9, 1e9},
		     t[] = {10, 10, 20, 30, 40, 40};
	struct cal_compute_fit f;
	assert_int_equal(cal_fit_compute(F, t, 6, &f, &err), -1);
	assert_string_equal(err.msg, "4 distinct FLOP counts (of 6 points; "
				     "need at least 5)");
}

/* The grid of cal_fit_grid, written out as fit.c's header states it (one
 * pow(sat, alpha) * pow(F, 1 - alpha) per sample per grid point, the
 * model's time per sample by model_ns's formula): issue 37 tabled the
 * pow() calls, and the result must stay bit for bit this one. */
static void naive_grid(const double *F, const double *t, size_t n,
		       struct cal_compute_fit *best_f)
{
	double fmin = F[0], fmax = F[0], best = INFINITY, w[64], g[64];
	for (size_t i = 0; i < n; i++) {
		fmin = fmin < F[i] ? fmin : F[i];
		fmax = fmax > F[i] ? fmax : F[i];
		w[i] = 1 / (t[i] * t[i]);
	}
	for (int i = -1; i <= 120; i++) { /* -1: sat = 0 */
		double sat = i < 0 ? 0 : fmin * pow(fmax / fmin, i / 120.0);
		for (int a = i < 0 ? 100 : 1; a <= 100; a++) {
			double alpha = a / 100.0, c0, c1, v0, v1, v2, chi;
			for (size_t k = 0; k < n; k++)
				g[k] = sat > 0 && F[k] < sat
					       ? pow(sat, alpha) *
							 pow(F[k], 1 - alpha)
					       : F[k];
			gsl_fit_wlinear(g, 1, w, 1, t, 1, n, &c0, &c1, &v0,
					&v1, &v2, &chi);
			if (!(c0 >= 0)) {
				c0 = 0;
				gsl_fit_wmul(g, 1, w, 1, t, 1, n, &c1, &v2,
					     &chi);
			}
			if (!(c1 > 0) || !isfinite(c1))
				continue;
			double peak = 1e9 / c1, s = 0;
			for (size_t k = 0; k < n; k++) {
				double r = (t[k] - (c0 + g[k] * 1e9 / peak)) /
					   t[k];
				s += r * r;
			}
			if (s < best) {
				best = s;
				*best_f = (struct cal_compute_fit){
					.launch_ns = c0, .peak = peak,
					.sat = sat, .alpha = i < 0 ? 1 : alpha};
			}
		}
	}
}

/* 40 samples at 9 FLOP counts, repeated and out of order, times with
 * noise from a fixed seed: the tabled grid gives exactly the naive
 * grid's parameters (compared as bits, not to a tolerance). */
static void test_fit_grid_bitwise(void **state)
{
	(void)state;
	double F[40], t[40];
	gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
	gsl_rng_set(r, 37);
	for (int i = 0; i < 40; i++) {
		F[i] = 1e5 * pow(10, (i * 7 % 9) * 0.6);
		double thr = 1e13 * pow(F[i] < 3e8 ? F[i] / 3e8 : 1, 0.45);
		t[i] = (4000 + F[i] * 1e9 / thr) *
		       (1 + 0.05 * (gsl_rng_uniform(r) - 0.5));
	}
	gsl_rng_free(r);
	struct cal_compute_fit want = {0}, got = {0};
	gms_err err = {{0}};
	naive_grid(F, t, 40, &want);
	if (cal_fit_grid(F, t, 40, &got, &err) < 0)
		fail_msg("%s", err.msg);
	assert_true(want.sat > 0); /* the saturating part of the grid won */
	assert_memory_equal(&got.launch_ns, &want.launch_ns, sizeof(double));
	assert_memory_equal(&got.peak, &want.peak, sizeof(double));
	assert_memory_equal(&got.sat, &want.sat, sizeof(double));
	assert_memory_equal(&got.alpha, &want.alpha, sizeof(double));
}

/* The regression inputs: every matmul row at one FLOP count (it fitted
 * with R^2 < 0 and was written); matmul times unrelated to FLOPs (R^2
 * below CAL_MIN_R2: refused, kept with --force); repeats of 1e300 (a
 * float-to-int conversion out of range, clang's UBSan). */
static void test_fit_degenerate(void **state)
{
	(void)state;
	char out[256], logpath[256];
	snprintf(out, sizeof out, "%s/d.yaml", tmpdir);
	snprintf(logpath, sizeof logpath, "%s/d.log", tmpdir);
	gms_err err = {{0}};
	struct cal_fit_opts o = {0};
	/* synthetic.csv's matmul rows: 11 shapes (i = 0, 7, ..., 70) */
	assert_int_equal(
		cal_fit_file("tests/fixtures/fuzz/regress/calib-same-flops.csv",
			     out, &o, NULL, &err),
		-1);
	assert_string_equal(err.msg,
			    "tests/fixtures/fuzz/regress/calib-same-flops.csv: "
			    "fitting the 'matmul,fp32' rows: 1 distinct FLOP "
			    "counts (of 11 points; need at least 5)");
	assert_int_equal(access(out, F_OK), -1);
	const char *low = "tests/fixtures/fuzz/regress/calib-low-r2.csv";
	assert_int_equal(cal_fit_file(low, out, &o, NULL, &err), -1);
	const char *want = "tests/fixtures/fuzz/regress/calib-low-r2.csv: "
			   "fitting the 'matmul,fp32' rows: R^2 -";
	assert_memory_equal(err.msg, want, strlen(want));
	assert_non_null(strstr(err.msg, " is below 0.90: the measurements "
					"do not follow the model (README, "
					"\"Calibration\"); --force writes "
					"the profile anyway"));
	assert_int_equal(access(out, F_OK), -1);
	o.force = true;
	FILE *log = fopen(logpath, "w");
	assert_non_null(log);
	assert_int_equal(cal_fit_file(low, out, &o, log, &err), 0);
	fclose(log);
	char *l = tmp_slurp(logpath);
	assert_non_null(strstr(l, "warning: the 'matmul,fp32' rows fit with "
				  "R^2 -"));
	assert_non_null(strstr(l, ", below 0.90; kept (--force)"));
	free(l);
	assert_int_equal(access(out, F_OK), 0);
	/* the command line: refused (exit 2) and --force */
	char args[512], *so;
	snprintf(args, sizeof args, "fit %s -o %s/c.yaml", low, tmpdir);
	assert_int_equal(sh(args, &so), 2);
	assert_non_null(strstr(so, "--force writes the profile anyway"));
	free(so);
	snprintf(args, sizeof args, "fit %s -o %s/c.yaml --force", low,
		 tmpdir);
	assert_int_equal(sh(args, &so), 0);
	free(so);
	o.force = false;
	/* line 9: the first data row (7 metadata lines, the header) */
	assert_int_equal(
		cal_fit_file("tests/fixtures/fuzz/regress/calib-repeats-1e300.csv",
			     out, &o, NULL, &err),
		-1);
	assert_string_equal(err.msg,
			    "tests/fixtures/fuzz/regress/calib-repeats-1e300.csv:"
			    "9: column 'repeats': 1e300 is not an integer "
			    "(below 2^63)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_profile_fit_keys),
		cmocka_unit_test(test_profile_fit_errors),
		cmocka_unit_test_setup_teardown(test_fit_flat_host_alloc, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_fit_recovers_truth, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_fit_cli_profile_runs, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_fit_name_quoted, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_fit_bad_csv, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_fit_conv_math, setup,
						teardown),
		cmocka_unit_test(test_fit_distinct_points),
		cmocka_unit_test(test_fit_grid_bitwise),
		cmocka_unit_test_setup_teardown(test_fit_degenerate, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
