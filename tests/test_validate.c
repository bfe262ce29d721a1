/*
 * test_validate.c - validation mode end to end without a GPU: a policy's
 * run writes its schedule log (sim/sched), the log is read back and
 * checked, replayed on the host backend (validate/replay_host: threads as
 * streams, spin kernels), the replay's measurement CSV written and read
 * back (sim/msr), and compared with the prediction (exp/compare). What a
 * real GPU would measure differs; what is checked here is that the
 * pieces fit: every kernel and copy the log holds is replayed and
 * measured once, every measured row belongs to the log, and the replay
 * honours every dependency the log states (rp_replay refuses a wait on
 * an event nobody signalled, a copy of an unallocated block, a block
 * outside the arena).
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

#include "testkit.h"
#include "wlkit.h"
#include "../exp/compare.h"
#include "../sim/msr.h"
#include "../sim/sched.h"
#include "../validate/replay_host.h"

/* Simulate w under `policy` (settings kv) with a schedule log, replay it
 * on the host, compare. Returns the comparison's join counts through
 * *cr (freed by the caller with cmp_free, log and msr too). */
static void validate(const struct wl_workload *w, const char *policy,
		     const char *const *kv, size_t n_kv, uint64_t budget,
		     struct sch_log *log, struct msr *m, struct cmp_result *cr)
{
	char slog[] = "/tmp/gms_test_validate_XXXXXX";
	int fd = mkstemp(slog);
	assert_true(fd >= 0);
	close(fd);
	char csv[64];
	snprintf(csv, sizeof csv, "%s.csv", slog);
	struct hw_profile hw;
	gms_err err = {{0}};
	if (hw_load(&hw, "V100-16GB", &err) < 0)
		fail_msg("%s", err.msg);
	struct pol pol;
	make_policy(&pol, policy, kv, n_kv);
	struct sch_writer *sw = sch_writer_open(slog, w, &hw, pol.label, 3, 1,
						&err);
	if (!sw)
		fail_msg("%s", err.msg);
	struct ex_cfg cfg = {.hw = &hw, .wl = w, .pol = &pol,
			     .allocator = "bfc", .budget = budget,
			     .iterations = 3, .warmup = 1,
			     .obs = sch_writer_observer(sw)};
	struct st_run st;
	if (ex_run(&cfg, &st, &err) < 0)
		fail_msg("%s", err.msg);
	assert_false(st.oom.hit);
	if (sch_writer_close(sw, st.mem.peak_allocated, st.mem.peak_reserved,
			     &err) < 0)
		fail_msg("%s", err.msg);
	st_run_free(&st);
	pol_destroy(&pol);

	if (sch_read(slog, log, &err) < 0 || sch_check(log, &err) < 0)
		fail_msg("%s", err.msg);
	struct rp_host_cfg hc = {.arena = rp_arena_extent(log),
				 .time_div = RP_HOST_TIME_DIV,
				 .copy_cap = 4096};
	struct rp_host *h = rp_host_new(&hc, &err);
	if (!h)
		fail_msg("%s", err.msg);
	struct rp_meas rm = {0};
	snprintf(rm.device, sizeof rm.device, "host");
	snprintf(rm.mode, sizeof rm.mode, "spin");
	snprintf(rm.alloc, sizeof rm.alloc, "arena");
	if (rp_replay(log, rp_host_backend(h), hc.arena, &rm, &err) < 0 ||
	    rp_meas_write(&rm, csv, &err) < 0)
		fail_msg("%s", err.msg);
	rp_meas_free(&rm);
	rp_host_free(h);
	if (msr_read(csv, m, &err) < 0 || cmp_run(log, m, cr, &err) < 0)
		fail_msg("%s", err.msg);
	unlink(slog);
	unlink(csv);
}

/* Count the log's kernels and copies of iteration i. */
static size_t items_of(const struct sch_log *log, int i)
{
	size_t n = 0;
	for (size_t k = 0; k < log->n; k++)
		n += log->it[k].iter == i && (log->it[k].kind == SCH_KERNEL ||
					      log->it[k].kind == SCH_COPY);
	return n;
}

/* ResNet-50 at batch 2 under ondemand with a budget that makes it swap
 * (60% of what framework needs beyond the whole-run tensors; as
 * test_capuchin's pressure), and under vdnnpp: every item joined. */
static void test_end_to_end(void **state)
{
	(void)state;
	struct wl_workload *w = gen_build_ok("resnet50", 2, 0, WL_FW_TF_GRAPH,
					     WL_OPTIM_SGD);
	static const char *const pols[] = {"ondemand", "vdnnpp", "capuchin"};
	for (size_t p = 0; p < 3; p++) {
		struct sch_log log = {0};
		struct msr m = {0};
		struct cmp_result cr = {0};
		validate(w, pols[p], NULL, 0, pressure_budget(w), &log, &m,
			 &cr);
		size_t copies = 0;
		for (size_t k = 0; k < log.n; k++)
			copies += log.it[k].kind == SCH_COPY;
		print_message("%s: %zu records, %zu copies, %zu rows\n",
			      pols[p], log.n, copies, m.n);
		assert_true(copies > 0); /* it did swap */
		assert_int_equal(cr.n_unmeasured, 0);
		assert_int_equal(cr.n_unscheduled, 0);
		assert_int_equal(cr.n_iter_unmeasured, 0);
		assert_int_equal(cr.n_iter_unscheduled, 0);
		assert_int_equal(cr.n_steady, 2);
		/* one row per kernel and copy, plus one per iteration */
		assert_int_equal(m.n, items_of(&log, 0) + items_of(&log, 1) +
					      items_of(&log, 2) + 3);
		cmp_free(&cr);
		msr_free(&m);
		sch_free(&log);
	}
	wl_free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_end_to_end),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
