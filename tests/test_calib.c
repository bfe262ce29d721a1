/*
 * test_calib.c - the host side of calibration: the profile's host keys
 * (zvc_decompress_bytes_per_s, memcpy_bytes_per_s), the ZVC compressor's
 * exact round trip, and `gpumemsim calibrate --host` writing a profile the
 * simulator loads.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../sim/hw.h"

/* A valid profile but for its host line, which each test supplies. */
#define BASE                                                               \
	"device: {capacity: 1GiB}\n"                                       \
	"compute:\n"                                                       \
	"  conv:   {peak_flops: 1e12}\n"                                   \
	"  matmul: {peak_flops: 1e12}\n"                                   \
	"  memory: {peak_flops: 1e12}\n"                                   \
	"link:\n"                                                          \
	"  h2d: {bw_pinned: 1e9, bw_pageable: 1e9}\n"                      \
	"  d2h: {bw_pinned: 1e9, bw_pageable: 1e9}\n"

/* Load BASE + host (host is line 9); rc and message into err. */
static int load_host(struct hw_profile *hw, const char *host, gms_err *err)
{
	char text[1024];
	snprintf(text, sizeof text, "%s%s", BASE, host);
	err->msg[0] = 0;
	return hw_load_string(hw, "h.yaml", text, err);
}

static void test_host_keys(void **state)
{
	(void)state;
	struct hw_profile hw;
	gms_err err;
	/* Both optional keys given: kept as written. */
	assert_int_equal(load_host(&hw,
				   "host: {zvc_bytes_per_s: 2e9, "
				   "zvc_decompress_bytes_per_s: 3e9, "
				   "memcpy_bytes_per_s: 8e9}\n",
				   &err),
			 0);
	assert_true(hw.zvc_bytes_per_s == 2e9);
	assert_true(hw.zvc_decompress_bytes_per_s == 3e9);
	assert_true(hw.memcpy_bytes_per_s == 8e9);
	/* Absent: decompression takes the compression figure (the brief's
	 * default), memcpy stays 0 = not given. */
	assert_int_equal(load_host(&hw, "host: {zvc_bytes_per_s: 2e9}\n", &err),
			 0);
	assert_true(hw.zvc_decompress_bytes_per_s == 2e9);
	assert_true(hw.memcpy_bytes_per_s == 0);
	/* Given as 0: an error at the value, line 9. "host: {" is 7
	 * characters and "zvc_bytes_per_s: 2e9, " 22, so the second key
	 * starts at column 30; "zvc_decompress_bytes_per_s: " is 28
	 * characters, its value at 58; "memcpy_bytes_per_s: " is 20, its
	 * value at 50. */
	assert_int_equal(load_host(&hw,
				   "host: {zvc_bytes_per_s: 2e9, "
				   "zvc_decompress_bytes_per_s: 0}\n",
				   &err),
			 -1);
	assert_string_equal(err.msg,
			    "h.yaml:9:58: host: key "
			    "'zvc_decompress_bytes_per_s': must be > 0 "
			    "(found 0)");
	assert_int_equal(load_host(&hw,
				   "host: {zvc_bytes_per_s: 2e9, "
				   "memcpy_bytes_per_s: 0}\n",
				   &err),
			 -1);
	assert_string_equal(err.msg, "h.yaml:9:50: host: key "
				     "'memcpy_bytes_per_s': must be > 0 "
				     "(found 0)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_host_keys),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
