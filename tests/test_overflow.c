/*
 * test_overflow.c - issue 17, defect 1: the simulated clock overflowed and
 * the program aborted (the assert in sim/ev.c) on inputs that passed
 * validation. Each input of the report is a file in
 * tests/fixtures/fuzz/regress/; a load must fail with its located error,
 * a run that passes the clock's limit (SIM_TIME_LIMIT, 2^62 ns) must fail
 * as a run (st_run.failed, the reason in st_run.error), and an experiment
 * with such a run among good ones writes them all, the bad one `failed`.
 * Nothing here may abort. Expected texts and numbers are worked out by
 * hand in the comments (columns counted in the fixtures).
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

#include "clikit.h"

#include "../policies/pol.h"
#include "../sim/eng.h"
#include "../sim/ex.h"
#include "../sim/hw.h"
#include "../workloads/wl.h"

#define RG "tests/fixtures/fuzz/regress/"

/* The messages of a run past the limit (sim/ev.c, ev_bad_text). */
#define CHECK_HINT "; check the op times and FLOPs and the profile's rates"
#define LIMIT_TEXT "simulated time passes its limit of 2^62 ns (about 146 years)"

/* flops: 1e25 (the old range went to 1e30): refused at its value, line
 * 12, column 27 ("     outputs: [y], flops: " is 26 characters), by the
 * table's range [0, 1e18] (wl.h, WL_FLOPS_MAX). */
static void test_yaml_flops_1e25(void **state)
{
	(void)state;
	gms_err err = {{0}};
	struct wl_workload *w = wl_load_yaml(RG "workload-flops-1e25.yaml", 0, &err);
	assert_null(w);
	assert_string_equal(err.msg, RG "workload-flops-1e25.yaml:12:27: op 'mm': key "
					"'flops': 1e25 is out of range [0, "
					"1e+18]");
}

/* A DTR TIME near INT64_MAX: refused at its value, line 4, column 72
 * (the CALL line's 71 characters before the opening quote), by the range
 * [0, 1e15] (wl.h, WL_OP_TIME_MAX). */
static void test_dtr_time_near_int64_max(void **state)
{
	(void)state;
	gms_err err = {{0}};
	struct wl_workload *w = wl_load_dtr(RG "dtr-time-int64max.log", &err);
	assert_null(w);
	assert_string_equal(err.msg,
			    RG "dtr-time-int64max.log:4:72: key 'TIME': "
			       "9223372036854775000 is out of range [0, "
			       "1000000000000000]");
}

/* bw_pinned: 1e-300 (the old check was > 0): refused at its value, line
 * 14, column 20, by [1e3, 1e15] bytes/s (hw.h, HW_BYTE_RATE_MIN/MAX). */
static void test_hw_bandwidth_1e_300(void **state)
{
	(void)state;
	gms_err err = {{0}};
	struct hw_profile *hw = malloc(sizeof *hw);
	assert_non_null(hw);
	assert_int_equal(hw_load(hw, RG "hw-bw-1e-300.yaml", &err), -1);
	assert_string_equal(err.msg,
			    RG "hw-bw-1e-300.yaml:14:20: link.h2d: key "
			       "'bw_pinned': must be in [1000, 1e+15] bytes/s "
			       "(hw.h) (found 1e-300)");
	free(hw);
}

/* Run workload-op-times-past-2p63.yaml (ten ops of 1e15 ns) under `framework` on
 * hw_test_profile (1 GiB) for `iters` iterations, op0's FLOPs set to
 * `flops0` with the compute model when > 0 (past the loader's bound, as a
 * generator or a test may), and expect the run to fail after `done`
 * iterations with the error `want`. */
static void expect_clock_failure(double flops0, int iters, int done,
				 const char *want)
{
	gms_err err = {{0}};
	struct wl_workload *w =
		wl_load_yaml(RG "workload-op-times-past-2p63.yaml", 0, &err);
	if (!w)
		fail_msg("%s", err.msg);
	if (flops0 > 0) {
		w->ops[0].time = 0; /* the compute model */
		w->ops[0].flops = flops0;
	}
	struct hw_profile *hw = malloc(sizeof *hw);
	assert_non_null(hw);
	hw_test_profile(hw, GMS_GIB);
	struct pol pol;
	assert_int_equal(pol_create(&pol, "framework", NULL, NULL, NULL, 0,
				    &err),
			 0);
	struct ex_cfg cfg = {.hw = hw, .wl = w, .pol = &pol,
			     .iterations = iters, .warmup = 1};
	struct st_run st;
	assert_int_equal(ex_run(&cfg, &st, &err), -1);
	assert_true(st.failed);
	assert_int_equal(st.n_iter, done);
	assert_string_equal(st.error, want);
	assert_string_equal(err.msg, st.error);
	/* the completed iterations keep their figures: 1e16 ns each */
	for (int i = 0; i < done; i++)
		assert_true(st.iter[i].time == (sim_time_t)10000000000000000);
	st_run_free(&st);
	pol_destroy(&pol);
	wl_free(w);
	free(hw);
}

/* Ten ops of 1e15 ns each (legal), 1000 iterations: 1e19 ns in all, past
 * 2^63. Under hw_test_profile an iteration is exactly 1e16 ns (measured
 * times, no copies, no costs). 2^62 = 4,611,686,018,427,387,904: 461
 * iterations end by 4.61e18 <= 2^62; in iteration 461 op0 runs over
 * [4.61e18, 4.611e18] and op1, issued at 4.611e18 ns = 4.611e9 s, would
 * end at 4.612e18 > 2^62: refused, and the run fails there with 461
 * iterations done. */
static void test_op_times_past_2p63(void **state)
{
	(void)state;
	expect_clock_failure(0, 1000, 461,
			     "iteration 461: " LIMIT_TEXT
			     ": at 4.611e+09 s a kernel, copy or host call "
			     "of 1e+06 s was issued" CHECK_HINT);
}

/* Past the loaders: an op of 1e25 FLOPs at hw_test_profile's 1e12 FLOP/s
 * takes 1e13 s = 1e22 ns, past 2^62 by itself: sim_round_ns flags it
 * (SIM_TIME_OVER) and the first kernel, issued at 0 s, is refused. */
static void test_kernel_past_limit_at_run_time(void **state)
{
	(void)state;
	expect_clock_failure(1e25, 3, 0,
			     "iteration 0: " LIMIT_TEXT
			     ": at 0 s a kernel, copy or host call of more "
			     "than 2^62 ns was issued" CHECK_HINT);
}

static void on_done(void *obj, uint64_t arg)
{
	(void)arg;
	(*(int *)obj)++;
}

/* The engine with a bandwidth of 1e-300 B/s (set past hw_load): a copy
 * of 4096 bytes would take 4.1e312 ns, an infinite double; sim_round_ns
 * flags it and the queue refuses the completion: ev_run stops with `bad`
 * set, the copy never completes. */
static void test_copy_past_limit_in_engine(void **state)
{
	(void)state;
	struct hw_profile *hw = malloc(sizeof *hw);
	assert_non_null(hw);
	hw_test_profile(hw, GMS_GIB);
	hw->link[HW_H2D].bw_pinned = 1e-300;
	struct ev_queue q;
	struct eng e;
	ev_init(&q);
	assert_int_equal(eng_init(&e, &q, hw), 0);
	int done = 0;
	struct eng_item it = {.type = ENG_COPY, .q = ENG_H2D, .bytes = 4096,
			      .pinned = true, .wait = ENG_EVENT_NONE,
			      .signal = ENG_EVENT_NONE, .done = on_done,
			      .obj = &done};
	assert_int_equal(eng_issue(&e, &it), 0);
	ev_run(&q, NULL);
	assert_true(q.bad);
	assert_int_equal(done, 0);
	char buf[512];
	assert_string_equal(ev_bad_text(&q, buf, sizeof buf),
			    LIMIT_TEXT ": at 0 s a kernel, copy or host call "
				       "of more than 2^62 ns was issued"
				       CHECK_HINT);
	eng_fini(&e);
	ev_fini(&q);
	free(hw);
}

/* The queue itself: an event in the past or past the limit is refused
 * (returns -1, sets bad, schedules nothing) instead of asserting; the
 * first refusal is the one reported; ev_run stops on it. */
static void test_queue_refuses(void **state)
{
	(void)state;
	struct ev_queue q;
	int fired = 0;
	ev_init(&q);
	assert_int_equal(ev_at(&q, 10, on_done, &fired, 0), 0);
	assert_int_equal(ev_at(&q, SIM_TIME_LIMIT, on_done, &fired, 0), 0);
	ev_run(&q, NULL);
	assert_int_equal(fired, 2);
	assert_true(ev_now(&q) == SIM_TIME_LIMIT); /* the limit is legal */
	assert_false(q.bad);
	/* now = 2^62: 1 ns more is past it */
	assert_int_equal(ev_after(&q, 1, on_done, &fired, 0), -1);
	assert_true(q.bad);
	assert_true(ev_empty(&q));
	char buf[512];
	assert_string_equal(ev_bad_text(&q, buf, sizeof buf),
			    LIMIT_TEXT ": at 4.61169e+09 s a kernel, copy or "
				       "host call of 1e-09 s was issued"
				       CHECK_HINT);
	ev_fini(&q);

	/* in the past: a bug, reported, not an abort */
	ev_init(&q);
	assert_int_equal(ev_at(&q, 5, on_done, &fired, 0), 0);
	ev_run(&q, NULL);
	assert_int_equal(ev_at(&q, 4, on_done, &fired, 0), -1);
	assert_int_equal(ev_at(&q, INT64_MAX, on_done, &fired, 0), -1);
	assert_string_equal(ev_bad_text(&q, buf, sizeof buf),
			    "event scheduled in the past (at 4 ns, now 5 ns)");
	/* ev_run does not run past a refusal */
	q.bad = false;
	assert_int_equal(ev_at(&q, 6, on_done, &fired, 0), 0);
	assert_int_equal(ev_after(&q, SIM_TIME_OVER, on_done, &fired, 0),
			 -1);
	assert_int_equal(ev_run(&q, NULL), 0);
	assert_int_equal(fired, 3);
	ev_fini(&q);
}

/* An experiment of three points, the middle one overflowing: the program
 * exits 1 (EXIT_RUN: some runs failed) after writing summary.csv, whose
 * rows (workload order, one policy) are chain3 at batch 4 `ok`, the
 * overflowing workload `failed` with the limit in its error column, and
 * chain3 at batch 2 `ok`. */
static void test_experiment_one_overflows(void **state)
{
	(void)state;
	char dir[] = "/tmp/gms-test-overflow-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char args[512], *out;
	snprintf(args, sizeof args,
		 "run " RG "exp-one-overflows.yaml --quiet --out %s/x", dir);
	int rc = sh(args, &out);
	if (rc != 1)
		fail_msg("`%s` exited %d:\n%s", args, rc, out);
	free(out);
	char path[600];
	snprintf(path, sizeof path, "%s/x/summary.csv", dir);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char line[8192];
	const char *want[] = {"chain3-b4", "op-times-past-2p63",
			      "chain3-b2"};
	assert_non_null(fgets(line, sizeof line, f)); /* header */
	for (int i = 0; i < 3; i++) {
		assert_non_null(fgets(line, sizeof line, f));
		assert_non_null(strstr(line, want[i]));
		if (i == 1) {
			assert_non_null(strstr(line, ",failed,"));
			assert_non_null(strstr(line, LIMIT_TEXT));
		} else {
			assert_non_null(strstr(line, ",ok,"));
		}
	}
	assert_null(fgets(line, sizeof line, f)); /* three rows only */
	fclose(f);
	snprintf(args, sizeof args, "rm -rf '%s'", dir);
	assert_int_equal(system(args), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_yaml_flops_1e25),
		cmocka_unit_test(test_dtr_time_near_int64_max),
		cmocka_unit_test(test_hw_bandwidth_1e_300),
		cmocka_unit_test(test_op_times_past_2p63),
		cmocka_unit_test(test_kernel_past_limit_at_run_time),
		cmocka_unit_test(test_copy_past_limit_in_engine),
		cmocka_unit_test(test_queue_refuses),
		cmocka_unit_test(test_experiment_one_overflows),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
