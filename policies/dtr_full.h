/*
 * dtr_full.h - the `dtr` policy's presets (policies/dtr_full.c): what an
 * experiment needs to run a `dtr` point with preset serial through DTR's
 * own replay (policies/dtr.h, dtr_serial_run) instead of the executor.
 */
#ifndef GMS_DTR_FULL_H
#define GMS_DTR_FULL_H

#include "../sim/stats.h"
#include "dtr.h"
#include "pol.h"

/* True when p is a `dtr` instance with preset serial. */
bool dtr_full_is_serial(const struct pol *p);

/* DTR logs parsed once per experiment (issue 37: dtr-pareto loaded its
 * three logs 360 times, about 30% of its time): each path's trace and
 * its simrd baseline, loaded on first use and kept until the memo is
 * freed; the traces are read-only afterwards, so the experiment's worker
 * threads share them (a mutex guards the list). Both calls below take
 * one, or NULL to load the log for the call alone. */
struct dtr_trace_memo;
struct dtr_trace_memo *dtr_trace_memo_new(void);
void dtr_trace_memo_free(struct dtr_trace_memo *m);
/* Loads (or finds) counted for the tests. */
void dtr_trace_memo_counts(struct dtr_trace_memo *m, size_t *loads,
			   size_t *hits);
/* The plan step's hand-over (exp/shard.c, issue 37): a memo's baselines
 * are written into the plan file by path and put into each shard's
 * memo, so a shard reads a log only to replay it (preset serial), never
 * for a budget fraction alone. A log read after its baseline was put
 * must give the same baseline (else an error). put: 0, or -1 when out
 * of memory. get: entry i < dtr_trace_memo_size(m), in the order they
 * were kept; *path lives as long as m. */
int dtr_trace_memo_put(struct dtr_trace_memo *m, const char *path,
		       const struct dtr_baseline *b);
size_t dtr_trace_memo_size(struct dtr_trace_memo *m);
void dtr_trace_memo_get(struct dtr_trace_memo *m, size_t i,
			const char **path, struct dtr_baseline *b);

/* A budget fraction for a `dtr` point on the DTR log at path, either
 * preset: *budget = int(simrd's baseline peak x fraction), run_pareto's
 * budget, so that the two presets' points at one fraction have the same
 * bytes (README, "The dtr policy"). 1 when p is a `dtr` instance, 0 (and
 * *budget untouched) when not, -1 with err when the log cannot be read. */
int dtr_full_fraction_budget(const struct pol *p,
			     struct dtr_trace_memo *traces, const char *path,
			     double fraction, uint64_t *budget, gms_err *err);

/* Replay the DTR log at path with simrd's engine (dtr_serial_run) under
 * p's heuristic and remat_limit (x the trace's compute). The budget is
 * int(simrd's baseline peak x fraction) when fraction > 0 (run_pareto),
 * else `budget` bytes. Fills st as a one-iteration run: steady.time =
 * simrd's clock at the end, compute_busy = the ops' TIME run, recompute
 * = the rematerialised part, n_drop = heuristic evictions, n_recompute =
 * ops re-run, mem.peak_allocated = max_memory; an OOM or thrash is
 * st->oom (reason "DTR serial: OOM" / "... thrash"); st->pol_report has
 * the status, overhead, budget and baseline. *used = the budget. 0, or
 * -1 with err (the log could not be read). */
int dtr_full_run_serial(const struct pol *p, struct dtr_trace_memo *traces,
			const char *path, double fraction, uint64_t budget,
			int64_t batch, struct st_run *st, uint64_t *used,
			gms_err *err);

/* For tests and checks: keep beside p's pool (a `dtr` instance, preset
 * full, after init and before its run) the list simrd's whole scan keeps,
 * scan it at each choice as the pool's tree replaced, and count the
 * choices, or lists of resident tensors, that differ. Built with
 * -DDTR_FULL_VERIFY, every instance does, and aborts at a difference.
 * 0, or -1 when out of memory. */
int dtr_full_verify(struct pol *p);

/* What a `dtr` instance (preset full) did so far. */
struct dtr_full_counts {
	uint64_t searches;    /* choices of a victim (one per scan of
				 simrd's) */
	uint64_t scored;      /* tensors scored by them */
	uint64_t scan_scored; /* tensors the whole scan scored beside them
				 (dtr_full_verify; else 0) */
	uint64_t mismatches;  /* differences dtr_full_verify found */
};
void dtr_full_counts(const struct pol *p, struct dtr_full_counts *c);

#endif
