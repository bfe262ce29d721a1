/*
 * test_compare.c - validation mode's comparison (exp/compare.h) on a
 * schedule log built in code (no reader needed) and a synthetic
 * measurement whose errors are known, every figure worked out by hand.
 *
 * The schedule: two iterations (warmup 1, so only iteration 1 is in the
 * summary), the same in each, iteration k starting at S = 10000 k ns:
 *
 *   seq 0  iter      start S
 *   seq 1  alloc     (not compared)
 *   seq 2  kernel    conv1  [S+0,    S+1000]
 *   seq 3  copy d2h  x      [S+1000, S+1500]  signals event 1
 *   seq 4  kernel    relu1  [S+1000, S+1200]
 *   seq 5  copy h2d  w      [S+1200, S+2000]  signals event 2
 *   seq 6  hostwait  event 2, t S+1200, until S+2000, cause h2d
 *   seq 7  kernel    conv2  [S+2000, S+4000]  waits for event 2
 *   seq 8  kernel    fc     [S+4000, S+5000]
 *   seq 9  end       time 5000
 *   peak allocated 3000, reserved 4096
 *
 * The measurement of iteration 1 (relative to its start): kernels 10%
 * slower except fc, 30% slower; copies as predicted, but w's swap-in
 * starts 300 ns later than the shifted timeline puts it:
 *
 *   iter    [0, 6000]
 *   conv1   [0, 1100]       relu1 [1100, 1320]      x [1100, 1600]
 *   w       [1620, 2420]    (1320 + 300 late)
 *   conv2   [2420, 4620]    fc    [4620, 5920]      (+80 ns of tail)
 *
 * Iteration 0 (warm-up) is measured three times too slow, x's row is
 * missing, and there is a row (seq 42) the schedule does not have, and
 * an iter row for iteration 5, which was not logged.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "../exp/compare.h"
#include "json_check.h"
#include "tmpkit.h"

/* Records of the log; the schedule's reader (sched.c) is not needed. */
static struct sch_item rec(int iter, uint32_t seq, enum sch_kind kind)
{
	return (struct sch_item){.iter = iter, .seq = seq, .kind = kind,
				 .wait_ev = SCH_NONE, .signal_ev = SCH_NONE,
				 .tensor = SCH_NONE, .name = ""};
}

static struct sch_item kern(int iter, uint32_t seq, const char *name,
			    sim_time_t s, sim_time_t e)
{
	struct sch_item x = rec(iter, seq, SCH_KERNEL);
	x.q = ENG_COMPUTE;
	x.name = name;
	x.t = x.start = s;
	x.end = e;
	return x;
}

static struct sch_item copy(int iter, uint32_t seq, enum eng_q q,
			    const char *name, sim_time_t s, sim_time_t e,
			    uint32_t signal)
{
	struct sch_item x = rec(iter, seq, SCH_COPY);
	x.q = q;
	x.name = name;
	x.t = x.start = s;
	x.end = e;
	x.signal_ev = signal;
	return x;
}

static struct sch_item items[32];

/* The schedule described at the top. */
static void build_log(struct sch_log *l)
{
	memset(l, 0, sizeof *l);
	strcpy(l->workload, "tiny");
	strcpy(l->hw, "V100-16GB");
	strcpy(l->policy, "vdnn");
	strcpy(l->allocator, "arena");
	l->batch = 8;
	l->iterations = 2;
	l->warmup = 1;
	l->peak_allocated = 3000;
	l->peak_reserved = 4096;
	size_t n = 0;
	for (int k = 0; k < 2; k++) {
		sim_time_t S = 10000 * k;
		struct sch_item x = rec(k, 0, SCH_ITER);
		x.start = x.t = S;
		items[n++] = x;
		items[n++] = rec(k, 1, SCH_ALLOC);
		items[n++] = kern(k, 2, "conv1", S, S + 1000);
		items[n++] = copy(k, 3, ENG_D2H, "x", S + 1000, S + 1500, 1);
		items[n++] = kern(k, 4, "relu1", S + 1000, S + 1200);
		items[n++] = copy(k, 5, ENG_H2D, "w", S + 1200, S + 2000, 2);
		x = rec(k, 6, SCH_HOSTWAIT);
		x.wait_ev = 2;
		x.t = S + 1200;
		x.end = S + 2000;
		x.cause = ST_STALL_H2D;
		items[n++] = x;
		items[n] = kern(k, 7, "conv2", S + 2000, S + 4000);
		items[n++].wait_ev = 2;
		items[n++] = kern(k, 8, "fc", S + 4000, S + 5000);
		x = rec(k, 9, SCH_END);
		x.end = 5000;
		items[n++] = x;
	}
	l->it = items;
	l->n = l->cap = n;
}

static void add(struct msr *m, int iter, uint32_t seq, enum msr_kind k,
		sim_time_t s, sim_time_t e)
{
	gms_err err;
	assert_int_equal(msr_add(m, iter, seq, k, s, e, &err), 0);
}

/* The measurement described at the top. */
static void build_msr(struct msr *m)
{
	gms_err err;
	assert_int_equal(msr_init(m, "H100", MSR_MODE_REAL, MSR_ALLOC_ARENA,
				  &err), 0);
	m->peak_bytes = 3500;
	add(m, 1, 0, MSR_ITER, 0, 6000);
	add(m, 1, 8, MSR_KERNEL, 4620, 5920); /* any order */
	add(m, 1, 2, MSR_KERNEL, 0, 1100);
	add(m, 1, 3, MSR_COPY, 1100, 1600);
	add(m, 1, 4, MSR_KERNEL, 1100, 1320);
	add(m, 1, 5, MSR_COPY, 1620, 2420);
	add(m, 1, 7, MSR_KERNEL, 2420, 4620);
	/* warm-up: 3x, x's row missing, a row with no item */
	add(m, 0, 0, MSR_ITER, 0, 20000);
	add(m, 0, 2, MSR_KERNEL, 0, 3000);
	add(m, 0, 4, MSR_KERNEL, 3000, 3600);
	add(m, 0, 5, MSR_COPY, 3600, 4400);
	add(m, 0, 7, MSR_KERNEL, 4400, 10400);
	add(m, 0, 8, MSR_KERNEL, 10400, 13400);
	add(m, 0, 42, MSR_KERNEL, 0, 10);
	add(m, 5, 0, MSR_ITER, 0, 100);
}

static void build(struct sch_log *l, struct msr *m)
{
	build_log(l);
	build_msr(m);
}

static const char *name_of(const struct cmp_result *r, size_t item)
{
	return r->item[item].name;
}

static void test_summary(void **state)
{
	(void)state;
	struct sch_log l;
	struct msr m;
	struct cmp_result r;
	gms_err err = {{0}};
	build(&l, &m);
	assert_int_equal(cmp_run(&l, &m, &r, &err), 0);
	/* nothing dropped silently: iteration 0's x has no row, seq 42 no
	 * item; iteration 5's iter row has no iteration */
	assert_int_equal(r.n_unmeasured, 1);
	assert_int_equal(r.n_unscheduled, 1);
	assert_int_equal(r.n_iter_unmeasured, 0);
	assert_int_equal(r.n_iter_unscheduled, 1);
	/* only iteration 1: predicted 5000, measured 6000, +20% (with
	 * iteration 0 it would be 5000 against 13000) */
	assert_int_equal(r.n_steady, 1);
	assert_float_equal(r.iter_time[CMP_PRED], 5000, 0);
	assert_float_equal(r.iter_time[CMP_MEAS], 6000, 0);
	assert_float_equal(r.iter_err, 0.2, 1e-12);
	/* per kernel |error|: 0.1, 0.1, 0.1 (conv1, relu1, conv2), 0.3
	 * (fc). Median: position 0.5 x 3 = 1.5, between 0.1 and 0.1: 0.1.
	 * p90: position 0.9 x 3 = 2.7: 0.1 + 0.7 (0.3 - 0.1) = 0.24 */
	assert_int_equal(r.n_rel, 4);
	assert_int_equal(r.n_zero_pred, 0);
	assert_float_equal(r.rel_median, 0.1, 1e-12);
	assert_float_equal(r.rel_p90, 0.24, 1e-12);
	/* worst: fc, then the 10% ties in issue order */
	assert_int_equal(r.n_worst, 4);
	assert_string_equal(name_of(&r, r.worst[0]), "fc");
	assert_float_equal(r.worst_rel[0], 0.3, 1e-12);
	assert_string_equal(name_of(&r, r.worst[1]), "conv1");
	assert_string_equal(name_of(&r, r.worst[2]), "relu1");
	assert_string_equal(name_of(&r, r.worst[3]), "conv2");
	/* busy: compute 1000 + 200 + 2000 + 1000 = 4200 predicted, 1100 +
	 * 220 + 2200 + 1300 = 4820 measured; copies as predicted */
	assert_int_equal(r.busy[CMP_PRED][CMP_COMPUTE], 4200);
	assert_int_equal(r.busy[CMP_MEAS][CMP_COMPUTE], 4820);
	assert_int_equal(r.busy[CMP_PRED][CMP_H2D], 800);
	assert_int_equal(r.busy[CMP_MEAS][CMP_H2D], 800);
	assert_int_equal(r.busy[CMP_PRED][CMP_D2H], 500);
	assert_int_equal(r.busy[CMP_MEAS][CMP_D2H], 500);
	/* compute idle: predicted relu1's end 1200 to conv2's start
	 * 2000: 800, after the hostwait (seq 6, h2d) between them;
	 * measured 1320 to 2420: 1100 h2d, and fc's end 5920 to the
	 * iteration's end 6000: 80 with no hostwait after fc */
	assert_int_equal(r.stall[CMP_PRED][ST_STALL_H2D], 800);
	assert_int_equal(r.stall[CMP_PRED][CMP_UNATTRIBUTED], 0);
	assert_int_equal(r.stall[CMP_MEAS][ST_STALL_H2D], 1100);
	assert_int_equal(r.stall[CMP_MEAS][CMP_UNATTRIBUTED], 80);
	assert_int_equal(r.stall[CMP_MEAS][ST_STALL_D2H], 0);
	assert_int_equal(r.host_wait[ST_STALL_H2D], 800);
	/* disagreements, max(|start diff|, |duration diff|): fc start
	 * 4620 - 4000 = 620; w 1620 - 1200 = 420 and conv2 2420 - 2000 =
	 * 420 (start; issue order); conv1 duration 100, x start 100, relu1
	 * start 100 (its duration differs by 20) */
	assert_int_equal(r.n_top, 6);
	const char *want[] = {"fc", "w", "conv2", "conv1", "x", "relu1"};
	const sim_time_t ns[] = {620, 420, 420, 100, 100, 100};
	const bool start[] = {true, true, true, false, true, true};
	for (size_t i = 0; i < 6; i++) {
		assert_string_equal(name_of(&r, r.top[i].item), want[i]);
		assert_int_equal(r.top[i].ns, ns[i]);
		assert_int_equal(r.top[i].start, start[i]);
		assert_int_equal(r.item[r.top[i].item].iter, 1);
	}
	cmp_free(&r);
	msr_free(&m);
}

/* The stall rules in turn: without the hostwait, the gap before conv2
 * goes to the copy whose event conv2 waits for (w, h2d); without that
 * wait too, it is unattributed. */
static void test_stall_rules(void **state)
{
	(void)state;
	struct sch_log l;
	struct msr m;
	struct cmp_result r;
	gms_err err = {{0}};
	build(&l, &m);
	for (size_t i = 0; i < l.n; i++)
		if (items[i].kind == SCH_HOSTWAIT)
			items[i].kind = SCH_FREE;
	assert_int_equal(cmp_run(&l, &m, &r, &err), 0);
	assert_int_equal(r.stall[CMP_PRED][ST_STALL_H2D], 800);
	assert_int_equal(r.stall[CMP_MEAS][ST_STALL_H2D], 1100);
	assert_int_equal(r.host_wait[ST_STALL_H2D], 0);
	cmp_free(&r);
	for (size_t i = 0; i < l.n; i++)
		if (items[i].kind == SCH_KERNEL)
			items[i].wait_ev = SCH_NONE;
	assert_int_equal(cmp_run(&l, &m, &r, &err), 0);
	assert_int_equal(r.stall[CMP_PRED][ST_STALL_H2D], 0);
	assert_int_equal(r.stall[CMP_PRED][CMP_UNATTRIBUTED], 800);
	/* 1100 before conv2 and 80 of tail */
	assert_int_equal(r.stall[CMP_MEAS][CMP_UNATTRIBUTED], 1180);
	cmp_free(&r);
	msr_free(&m);
}

/* A record of an iteration that has no iter record is an error. */
static void test_bad_schedule(void **state)
{
	(void)state;
	struct sch_log l;
	struct msr m;
	struct cmp_result r;
	gms_err err = {{0}};
	build(&l, &m);
	items[10].kind = SCH_ALLOC; /* iteration 1's iter record, seq 0 */
	assert_int_equal(cmp_run(&l, &m, &r, &err), -1);
	assert_string_equal(err.msg, "schedule: record seq 0 of iteration 1, "
				     "which has no iter record");
	msr_free(&m);
}

static void test_files(void **state)
{
	(void)state;
	struct sch_log l;
	struct msr m;
	struct cmp_result r;
	gms_err err = {{0}};
	build(&l, &m);
	assert_int_equal(cmp_run(&l, &m, &r, &err), 0);
	char dir[] = "/tmp/gms-compare-XXXXXX", path[128];
	assert_non_null(mkdtemp(dir));
	if (cmp_write(&r, dir, true, NULL, &err) < 0)
		fail_msg("%s", err.msg);
	snprintf(path, sizeof path, "%s/compare.csv", dir);
	char *csv = tmp_slurp(path);
	/* the iteration: 6000 - 5000 = 1000 ns, +20% */
	assert_non_null(strstr(csv, "\n1,0,iter,,,1,0,5000,0,6000,5000,6000,"
				    "1000,0.200000,0\n"));
	/* w: same duration, 420 ns late */
	assert_non_null(strstr(csv, "\n1,5,copy,w,h2d,1,1200,2000,1620,2420,"
				    "800,800,0,0.000000,420\n"));
	/* the row without an item and the item without a row are there */
	assert_non_null(strstr(csv, "\n0,42,kernel,,,0,,,0,10,,10,,,\n"));
	assert_non_null(strstr(csv, "\n0,3,copy,x,d2h,0,1000,1500,,,500,,,,"
				    "\n"));
	/* header, 2 iterations, 6 items each and the extra row; iteration 5's iter
	 * row is counted, not listed */
	size_t lines = 0;
	for (const char *c = csv; *c; c++)
		lines += *c == '\n';
	assert_int_equal(lines, 1 + 2 + 6 + 6 + 1);
	free(csv);
	snprintf(path, sizeof path, "%s/trace.json", dir);
	char *js = tmp_slurp(path), jerr[128];
	struct jv *v = jv_parse(js, jerr, sizeof jerr);
	if (!v)
		fail_msg("trace.json: %s", jerr);
	/* metadata: process name + 9 tracks x 2; spans: iterations 2 + 2,
	 * items 6 predicted + 5 measured (iteration 0) + 6 + 6 (iteration
	 * 1), hostwaits 2 */
	const struct jv *ev = jv_get(v, "traceEvents");
	assert_non_null(ev);
	assert_int_equal(ev->n, 1 + 18 + 4 + 11 + 12 + 2);
	jv_free(v);
	free(js);
	snprintf(path, sizeof path, "%s/summary.txt", dir);
	char *sum = tmp_slurp(path);
	assert_non_null(strstr(sum, "error +20.0%"));
	free(sum);
	const char *names[] = {"compare.csv", "summary.txt", "trace.json",
			       "timeline.dat", "timeline.png",
			       "timeline.svg"};
	for (size_t i = 0; i < 6; i++) {
		struct stat st;
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		assert_int_equal(stat(path, &st), 0);
		assert_true(st.st_size > 0);
		unlink(path);
	}
	rmdir(dir);
	cmp_free(&r);
	msr_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_summary),
		cmocka_unit_test(test_stall_rules),
		cmocka_unit_test(test_bad_schedule),
		cmocka_unit_test(test_files),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
