/*
 * test_fit.c - fitting measurements into a hardware profile
 * (calibrate/fit.c, `gpumemsim fit`): the profile keys that record fit
 * quality and measured convolution algorithms are checked and kept.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../sim/hw.h"

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
		     "range [0, 1]");
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
		     "f.yaml:9:15: costs.fit: key 'mallocs': unknown key "
		     "(known: malloc, free, host_alloc)");
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_profile_fit_keys),
		cmocka_unit_test(test_profile_fit_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
