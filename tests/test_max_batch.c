/*
 * test_max_batch.c - the max-batch search (exp/max_batch.c) on synthetic
 * feasibility oracles, every run list traced by hand below from the rules
 * in max_batch.c:
 *   - the walk (the reference search): start, doubling (capped at limit)
 *     while the batch fits, then bisection mid = lo + (hi - lo) / 2;
 *   - a question is answered from the table when a batch above it fitted
 *     (fits) or one below it did not (does not), else it needs a run;
 *   - before running a needed question, a prediction: lo = the largest
 *     batch that fitted below the least that did not (hi; limit + 1 when
 *     none); the line through lo and the largest fitting batch below it
 *     (through the origin when there is none), to T = the OOM peak at hi
 *     when above lo's peak ("calibrated"), else the budget;
 *     d = (T - peak(lo)) / slope, p = lo + max(1, floor(d)); p >= hi: none
 *     unless calibrated (then hi - 1); a prediction that neither halves
 *     hi - lo nor doubles lo has failed, and the next run is the walk's;
 *     after 2 failures only the walk;
 *   - the walk complete: every question in [answer - confirm, answer +
 *     confirm], the answer and the batch above are run if inferred; a
 *     contradiction walks again; then the confirm batches.
 * An OOM run's peak is the budget (it failed when its requests reached
 * the device).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../exp/max_batch.h"

/* A synthetic oracle: which batches fit and the peak of one that does;
 * records the batches run in order. */
struct oracle {
	bool (*fits)(int64_t b);     /* feasibility */
	uint64_t (*peak)(int64_t b); /* peak of a fitting run */
	uint64_t budget;	     /* device bytes (an OOM run's peak) */
	int64_t ran[128];	     /* batches run, in order */
	unsigned n;
	int fail_at;		     /* return -1 on this run (1-based), 0:
					never */
};

static int run(void *ctx, int64_t b, struct mb_obs *o)
{
	struct oracle *q = ctx;
	for (unsigned i = 0; i < q->n; i++)
		if (q->ran[i] == b)
			fail_msg("batch %lld run twice", (long long)b);
	if (q->n == 128)
		fail_msg("more than 128 runs");
	q->ran[q->n++] = b;
	if (q->fail_at && (int)q->n == q->fail_at)
		return -1;
	o->fits = q->fits(b);
	o->peak = o->fits ? q->peak(b) : q->budget;
	o->budget = q->budget;
	return 0;
}

static void assert_ran(const struct oracle *q, const int64_t *want,
		       unsigned n)
{
	assert_int_equal(q->n, n);
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(q->ran[i], want[i]);
}

static const struct mb_cfg range8k = {1, 8192, 4};

/* Search c with q; the answer must be best (capped or not) with
 * larger_fit. */
static void expect(struct oracle *q, const struct mb_cfg *c, int64_t best,
		   bool capped, int64_t larger_fit, struct mb_result *r)
{
	assert_int_equal(mb_search(c, run, q, r), 0);
	assert_int_equal(r->best, best);
	assert_int_equal(r->capped, capped);
	assert_int_equal(r->larger_fit, larger_fit);
	assert_int_equal(r->runs, q->n);
}

/* ---- peak = 1000 + 100 b exactly, budget 50,000: fits while b <= 490 */

static uint64_t lin_peak(int64_t b)
{
	return 1000 + 100 * (uint64_t)b;
}

static bool lin_fits(int64_t b)
{
	return lin_peak(b) <= 50000;
}

/* run 1 (peak 1100); the walk needs 2. Prediction through the origin:
 * slope 1100, d = (50000 - 1100) / 1100 = 44.45, p = 45: fits (5500),
 * lo 1 -> 45 doubles it. Walk: 2..32 inferred, needs 64. Line 1-45:
 * slope (5500 - 1100) / 44 = 100, d = 44500 / 100 = 445, p = 490: fits
 * (peak 50000, the boundary), lo 45 -> 490. Walk needs 512; peak(490) =
 * T, d = 0, p = 491: does not fit, [490, 8193) -> [490, 491) halves.
 * Walk: 512 does not (491 below), 384 448 480 fit (490 above), 496 does
 * not, 488 fits, 492 does not, 490 and 491 run: answer 490, hi 491.
 * Check [486, 494]: 488 and 492 inferred -> run (agree). Confirm 493,
 * 494. The reference search ran 1..256 (9), 512, 384, 448, 480, 496,
 * 488, 492, 490, 491 and 493, 494: 20. */
static void test_linear_exact(void **state)
{
	(void)state;
	struct oracle q = {.fits = lin_fits, .peak = lin_peak, .budget = 50000};
	struct mb_result r;
	expect(&q, &range8k, 490, false, 0, &r);
	const int64_t want[] = {1, 45, 490, 491, 488, 492, 493, 494};
	assert_ran(&q, want, 8);
	assert_int_equal(r.runs, 8);
	assert_int_equal(r.predicted, 3); /* 45, 490, 491 */
	assert_true(r.runs <= mb_runs_max(&range8k));
}

/* ---- a step: peak 1000 + 100 b up to 200, 20,000 more above (a
 * workspace that switches on): 21000 + 100 b <= 50000 while b <= 290 */

static uint64_t step_peak(int64_t b)
{
	return 1000 + 100 * (uint64_t)b + (b > 200 ? 20000 : 0);
}

static bool step_fits(int64_t b)
{
	return step_peak(b) <= 50000;
}

/* 1, then 45 (as above, fits: 5500). Line 1-45 predicts 490: 41000 +
 * 20000 > 50000, does not fit; [45, 8193) -> [45, 490) halves. Walk
 * needs 64; calibrated (peak(490) = 50000 > 5500), d = 445, p = 490 >=
 * hi -> 489: does not fit, [45, 489) neither halves nor doubles: failed
 * (1), so the walk's 64 (fits, 7400). Walk needs 128; line 45-64, slope
 * 100, d = 426, p = 490 >= 489 -> 488: does not fit, failed (2); the
 * walk's 128 (13800), then only the walk: 256 fits (46600), 512 does
 * not (488 below), 384 does not (59400), 320 does not (53000), 288 fits
 * (49800), 304 (51400), 296 (50600), 292 (50200) do not, 290 fits
 * (50000), 291 does not: answer 290. Check [286, 294]: all run. Confirm
 * 293, 294. 18 runs (the reference search: 20). */
static void test_step_misses(void **state)
{
	(void)state;
	struct oracle q = {.fits = step_fits, .peak = step_peak,
			   .budget = 50000};
	struct mb_result r;
	expect(&q, &range8k, 290, false, 0, &r);
	const int64_t want[] = {1,   45,  490, 489, 64,  488, 128, 256, 384,
				320, 288, 304, 296, 292, 290, 291, 293, 294};
	assert_ran(&q, want, 18);
	assert_int_equal(r.predicted, 4); /* 45, 490, 489, 488 */
	assert_true(r.runs <= mb_runs_max(&range8k));
}

/* ---- an adaptive policy (swapping, as ondemand): the peak grows
 * 100 a batch to 49,500 at 485, then 1 a batch (it swaps the rest);
 * it fits up to 800 (where the working set of one op no longer does) */

static uint64_t swap_peak(int64_t b)
{
	return b <= 485 ? 1000 + 100 * (uint64_t)b
			: 49500 + (uint64_t)(b - 485);
}

static bool swap_fits(int64_t b)
{
	return b <= 800;
}

/* 1 (1100), 45 (5500) and 490 (49505, fits) as in test_linear_exact;
 * 490 was aimed at the budget (a line through two runs). Walk needs 512;
 * line 45-490: slope 44005 / 445 = 98.9, d = (50000 - 49505) / 98.9 =
 * 5.0, p = 495 (49510, fits): neither halves [490, 8193) nor doubles
 * 490, failed; aimed 495. The walk's 512 fits (49527): above the aimed
 * 495, so no more predictions (the line 495-512, slope 1, would aim at
 * 985). The walk: 1024 not, 768 fits, 896 832 not, 800 fits, 816 808 804
 * 802 801 not: answer 800; the check runs nothing more; confirm adds
 * 803. 16 runs; the reference search: 1..512 (10), 1024, 768, 896, 832,
 * 800, 816, 808, 804, 802, 801, then 803: 22. */
static void test_adaptive_stops_predicting(void **state)
{
	(void)state;
	struct oracle q = {.fits = swap_fits, .peak = swap_peak,
			   .budget = 50000};
	struct mb_result r;
	expect(&q, &range8k, 800, false, 0, &r);
	const int64_t want[] = {1,   45,  490, 495, 512, 1024, 768, 896,
				832, 800, 816, 808, 804, 802,  801, 803};
	assert_ran(&q, want, 16);
	assert_int_equal(r.predicted, 3);
}

/* ---- everything fits, peak 1000 + b, budget 1e9: capped at limit ---- */

static uint64_t flat_peak(int64_t b)
{
	return 1000 + (uint64_t)b;
}

static bool all_fit(int64_t b)
{
	(void)b;
	return true;
}

/* [1, 100]: every prediction lands beyond limit + 1 (1 -> slope 1001,
 * d = 998,001 >= 100), uncalibrated: none. The walk alone: 1 2 4 8 16
 * 32 64, then 64 > 100 / 2 -> 100, fits, and 100 > 50 -> 100 = lo:
 * capped. Check: 100 was run; no batch above limit to confirm. */
static void test_capped(void **state)
{
	(void)state;
	struct oracle q = {.fits = all_fit, .peak = flat_peak,
			   .budget = 1000000000};
	struct mb_cfg c = {1, 100, 4};
	struct mb_result r;
	expect(&q, &c, 100, true, 0, &r);
	const int64_t want[] = {1, 2, 4, 8, 16, 32, 64, 100};
	assert_ran(&q, want, 8);
	assert_int_equal(r.predicted, 0);
}

/* start = limit = 5 and it fits: one run, capped. */
static void test_start_is_limit(void **state)
{
	(void)state;
	struct oracle q = {.fits = all_fit, .peak = flat_peak, .budget = 1 << 20};
	struct mb_cfg c = {5, 5, 4};
	struct mb_result r;
	expect(&q, &c, 5, true, 0, &r);
	assert_int_equal(q.n, 1);
}

static bool none_fit(int64_t b)
{
	(void)b;
	return false;
}

/* batch 1 does not fit: one run, no answer. */
static void test_start_infeasible(void **state)
{
	(void)state;
	struct oracle q = {.fits = none_fit, .peak = flat_peak, .budget = 1000};
	struct mb_result r;
	expect(&q, &range8k, 0, false, 0, &r);
	assert_int_equal(r.runs, 1);
	assert_int_equal(q.n, 1);
}

/* ---- non-monotonic near the boundary, as capuchin-maxbatch's
 * ResNet-50 under vdnn(offload=all): fits up to 951, not at 952 and
 * 953, at 954 and 955, then not; peak 1000 b, budget 955,000 ---- */

static uint64_t prop_peak(int64_t b)
{
	return 1000 * (uint64_t)b;
}

static bool dip_fits(int64_t b)
{
	return b <= 951 || b == 954 || b == 955;
}

/* The reference search: 1..512 fit, 1024 not, 768 896 fit, 960 not, 928
 * 944 fit, 952 not, 948 950 951 fit: answer 951; confirm 952..955: 954
 * and 955 fit, larger_fit 955 (23 runs).
 * mb_search: 1; through the origin d = 954000 / 1000 = 954, p = 955:
 * fits. The walk needs 1024; peak(955) = the budget, d = 0, p = 956:
 * does not fit. Walk: 1024 not (956 below), 768 896 fit, 960 not, 928
 * 944 fit, 952 INFERRED fits (955 above), 956 not, 954 inferred, 955:
 * answer 955. Check [951, 959] in walk order: 952 runs and does not fit
 * -- a contradiction; 954 runs (fits). Walk again: 952 not, 948 950 951
 * inferred (954 above): answer 951, hi 952; check [947, 955]: 948, 950,
 * 951 run and fit. Confirm: 953 (does not). The same answer and
 * larger_fit as the reference, 9 runs. */
static void test_dip_answer_as_reference(void **state)
{
	(void)state;
	struct oracle q = {.fits = dip_fits, .peak = prop_peak,
			   .budget = 955000};
	struct mb_result r;
	expect(&q, &range8k, 951, false, 955, &r);
	const int64_t want[] = {1, 955, 956, 952, 954, 948, 950, 951, 953};
	assert_ran(&q, want, 9);
}

/* The caller stops the search (out of memory) on the second run: -1. */
static void test_stopped(void **state)
{
	(void)state;
	struct oracle q = {.fits = lin_fits, .peak = lin_peak, .budget = 50000,
			   .fail_at = 2};
	struct mb_result r;
	assert_int_equal(mb_search(&range8k, run, &q, &r), -1);
	assert_int_equal(r.best, 0);
}

/* The bound, by hand (max_batch.c): [1, 8192], confirm 4: 71; [1, 100],
 * confirm 4: D = 7 (2^7 = 128 >= 100), the walk 1 + 7 + ceil(log2 100)
 * = 15, halvings ceil(log2 102) = 7: 1 + 14 + 7 + 7 + 2 + 11 + 4 = 46. */
static void test_bound(void **state)
{
	(void)state;
	assert_int_equal(mb_runs_max(&range8k), 71);
	struct mb_cfg c = {1, 100, 4};
	assert_int_equal(mb_runs_max(&c), 46);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_linear_exact),
		cmocka_unit_test(test_step_misses),
		cmocka_unit_test(test_adaptive_stops_predicting),
		cmocka_unit_test(test_capped),
		cmocka_unit_test(test_start_is_limit),
		cmocka_unit_test(test_start_infeasible),
		cmocka_unit_test(test_dip_answer_as_reference),
		cmocka_unit_test(test_stopped),
		cmocka_unit_test(test_bound),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
