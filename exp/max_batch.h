/*
 * max_batch.h - the max-batch search (measure.kind max-batch, and the
 * baseline of efficiency-optimal and scaling): the largest batch in
 * [start, limit] that trains without running out of memory, over a
 * callback that runs one batch, so that tests can give it a synthetic
 * feasibility oracle (tests/test_max_batch.c) and exp_run.c the
 * simulator.
 *
 * The answer is defined by a reference search (the one max-batch ran up
 * to issue 18, kept as mb_walk in max_batch.c): doubling from start
 * (capped at limit) until a batch does not fit, then bisection between
 * the last batch that fitted and the first that did not. mb_search
 * returns that search's answer while running fewer batches: it predicts
 * the boundary from the peak bytes of the batches already run (nearly
 * linear in batch for one network and policy), runs the prediction, and
 * answers the reference search's questions from what it ran wherever
 * monotonic feasibility decides them. Then, as before, the next
 * `confirm` batches above the answer are run too, because fragmentation
 * makes feasibility non-monotonic; any that fits is reported.
 */
#ifndef GMS_MAX_BATCH_H
#define GMS_MAX_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What one run of a batch showed. */
struct mb_obs {
	bool fits;	/* it trained without OOM (and did not fail) */
	uint64_t peak;	/* its peak of requested bytes: the whole run's
			   when it fitted, up to the failure when it ran
			   out of memory; 0: unknown */
	uint64_t budget; /* the device bytes it had */
};

/* Run one batch (the search never asks for a batch twice). Returns 0,
 * or -1 to stop the search (the caller ran out of memory). */
typedef int (*mb_probe_fn)(void *ctx, int64_t batch, struct mb_obs *out);

/* The range and the check above the answer (measure: start, limit,
 * confirm). */
struct mb_cfg {
	int64_t start;	 /* first batch, >= 1 */
	int64_t limit;	 /* largest batch, >= start */
	int64_t confirm; /* batches above the answer also run, >= 0 */
};

/* What mb_search found. */
struct mb_result {
	int64_t best;	    /* the answer; 0: start itself did not fit */
	bool capped;	    /* the answer is limit and limit fitted */
	int64_t larger_fit; /* the largest batch run above the answer
			       that fitted, or 0 */
	unsigned runs;	    /* batches run */
	unsigned predicted; /* of which at a predicted boundary */
};

/* Search [c->start, c->limit] with fn. Returns 0 with *r filled, or -1
 * when fn returned -1 or memory ran out (*r as far as it got). */
int mb_search(const struct mb_cfg *c, mb_probe_fn fn, void *ctx,
	      struct mb_result *r);

/* The most batches mb_search runs for a range: the reference search's
 * questions, predictions, the check around the answer and
 * `confirm` (derived in max_batch.c; tests/test_max_batch.c holds it to
 * it). */
unsigned mb_runs_max(const struct mb_cfg *c);

#endif
