/*
 * shard.h - an experiment split over machines (issue 18): `gpumemsim run
 * EXP.yaml --shard K/N` runs the K-th of N slices of its tasks and writes
 * one shard file; `gpumemsim merge DIR...` reads the N files and writes
 * the result set (summary.csv, runs.json, plot data, plots) byte-identical
 * to the unsharded run's, through the same exp_write.
 *
 * Tasks: what exp_run schedules, one summary row each -- a point of a
 * `run` or `sweep`, a search (max-batch, best-throughput, min-pool) of one
 * (workload, policy), a workload of efficiency-optimal / scaling.
 *
 * The plan: each task's estimated cost is
 *     ns(policy) x the ops its runs are expected to simulate
 * (ns: the policy's nanoseconds per op-iteration in `make bench`'s
 * table; ops: a full run simulates ops x (warmup + iterations) of the
 * workload built at its own batch; a point whose budget is below what
 * its first iteration needs, by a linear walk of the workload's tensor
 * lifetimes, only the ops up to where it fails; a search, the probes
 * its algorithm runs, a max-batch search doubling only up to the batch
 * the workload's bytes allow -- shd_plan in shard.c, issue 37). A shard
 * also pays once for each workload it touches (its build and, for budget
 * fractions, its baseline search: each shard computes those of the
 * workloads its points need, deterministic, so the copies agree; merge
 * checks that they do), so the tasks are dealt by workload (shd_group,
 * issue 37: dealing each task alone by greedy longest-processing-time
 * spread every workload over every shard, and 16 shards of a 1,000-point
 * sweep cost 2.8x one run): McNaughton's wrap-around rule, workloads in
 * order of decreasing cost (ties: lower index first) filling shard K up
 * to a limit, then shard K + 1, the limit the least at which all fit, a
 * workload's tasks taken in a scrambled order, each at its own cost, so
 * the shards it spans get a mix of its points. N shards then
 * split workloads at most N - 1 times. Integers only: every machine
 * finds the same plan.
 *
 * A plan step (issue 37): `gpumemsim plan EXP.yaml --shards N` builds
 * every workload, searches the budget fractions' baselines once and
 * writes <out>/plan-of-N.plan; `run --shard K/N --plan FILE` then takes
 * its tasks and the baselines from it, builds only the workloads of the
 * tasks it runs (exp_opts.lazy) and searches no baseline, and merge of
 * its shards builds nothing; with `plan --steal` the shards claim tasks
 * from each other (work stealing, shard.c). The plan file (text, as
 * below):
 *     gpumemsim-plan 2 / version / experiment / path / identity /
 *     of N / tasks T / steal 0|1 (work stealing: shard.c)
 *     baselines B (0, or one a workload: fraction sweeps), then B times:
 *       bytes V
 *     fits F (the accudnn models the points fit: exp_plan_step), then F
 *       times: hash H / kern NK / copy NC / types M, then M times:
 *       type I / fitted 0|1 / peak / sat / alpha / launch (hex floats);
 *       then rate_all / bandwidth
 *     traces R (DTR logs' baselines for budget fractions), then R times:
 *       log "PATH" / peak_bytes / compute_ns / const_bytes / ops / cmds /
 *       storages
 *     then T times: shard K / cost X / bound Y
 *     end
 *   (format 2; 1 had no fits and traces). A shard fits none of the
 *   models the file holds and parses a DTR log for simrd only to replay
 *   it (preset serial; points the executor runs still build their
 *   workload from it): 16 shards of `default` fitted AccUDNN's three models
 *   up to 16 times, and each dtr-pareto shard parsed its logs for their
 *   baselines.
 *
 * The shard file (text, one "name value" per line, strings quoted, floats
 * as C99 hex so they read back exactly):
 *     gpumemsim-shard 3
 *     version "<GMS_VERSION>"       merge refuses another version's
 *     experiment "<name>"
 *     path "<the experiment file as given to run>"
 *     identity <64-bit integer>     FNV-1a 64 of the experiment file, the
 *                                   hardware profile and the workload
 *                                   files' bytes, the path, the task count
 *     shard K / of N / tasks T
 *     plan P                        the plan file's tag (shd_plan.tag),
 *                                   0: the shard planned itself
 *     baselines B, then B times: workload W / bytes V
 *     count C (its tasks), then C times: task I / cost X / the task's
 *       record (the exp_point / exp_search / exp_eff fields exp_write
 *       reads, every field of st_run; a point's timeline, what the
 *       memory plots read: timeline 0|1, other_events 0|1, mem_events
 *       M, then M lines "ev t0 a b k0 .. k6 host": the event's time,
 *       its two byte counts, its bytes by tensor kind (the seven of
 *       wl_kind, in its order), and its host bytes) / end
 *     end
 *   (format 3; 2 wrote an event as twelve "name value" lines, and a
 *   merge of `run` shards cost about what the run did, issue 37).
 */
#ifndef GMS_SHARD_H
#define GMS_SHARD_H

#include "exp.h"
#include "../policies/accudnn_model.h"
#include "../policies/dtr_full.h"

/* N-way plan of an experiment's tasks. */
struct shd_plan {
	size_t n_tasks;	    /* exp_planned_rows */
	unsigned n;	    /* shards */
	uint32_t *owner;    /* per task: the shard that runs it */
	uint64_t *cost;	    /* per task: its estimated cost */
	uint64_t *bound;    /* per task: the most it may cost (a policy
			       run until it settles, under pressure: up
			       to settle_max more iterations), the order
			       work stealing offers tasks in */
	uint64_t *load;	    /* per shard: the sum of its tasks' costs */
	uint64_t identity;  /* the experiment's identity (above) */
	uint64_t *baseline; /* per workload: a plan file's baselines
			       (budget fractions), else NULL */
	uint64_t tag;	    /* a plan file's tag (its identity, N, steal,
			       owners and baselines, FNV-1a), which its
			       shards carry; 0: each shard planned itself */
	bool steal;	    /* a plan file's: its shards claim tasks
			       (work stealing, shard.c) */
	struct shd_fit *fits; /* a plan file's accudnn models (below) */
	size_t n_fits;
	struct shd_trace *traces; /* a plan file's DTR baselines (below) */
	size_t n_traces;
};

/* A model the plan step fitted (exp_plan_step), as the plan file holds
 * it: its samples' hash and counts, and the model (accudnn_model.h). */
struct shd_fit {
	uint64_t hash;	       /* FNV-1a of the samples */
	size_t n_kern, n_copy; /* how many */
	struct ac_perf perf;   /* the model */
};

/* A DTR log's simrd baseline, by the path the experiment names. */
struct shd_trace {
	char path[GMS_PATH_MAX]; /* as in exp_workload.path */
	struct dtr_baseline b;	 /* its baseline */
};

/* "K/N", 0 <= K < N: the shard (0-based, as Slurm's --array=0-(N-1)). */
int shd_parse(const char *arg, unsigned *k, unsigned *n, gms_err *err);

/* The balancing alone: cost[T] dealt to n shards (owner[T], load[n]) by
 * greedy longest-processing-time. Returns 0, or -1 out of memory. */
int shd_lpt(const uint64_t *cost, size_t T, unsigned n, uint32_t *owner,
	    uint64_t *load);

/* The plan's dealing: T tasks of cost[T] in groups grp[T] < G (a
 * workload), each group costing extra[g] more on every shard that runs
 * any of its tasks, dealt to n shards (owner[T]; load[n]: the sum of the
 * tasks' costs, extras left out). Returns 0, or -1 out of memory. */
int shd_group(const uint64_t *cost, const uint32_t *grp, size_t T,
	      const uint64_t *extra, size_t G, unsigned n, uint32_t *owner,
	      uint64_t *load);

/* The plan's view of a built workload (struct exp_liveness, exp.h): one
 * linear walk of its tensors and ops; exp_load keeps it for each
 * workload. Returns 0, or -1 out of memory (f zeroed). */
int shd_scan(const struct wl_workload *wl, struct exp_liveness *f);

int shd_plan(const struct exp *e, unsigned n, struct shd_plan *p,
	     gms_err *err);

/* Task i's workload, as exp_run lays tasks out: efficiency rows one a
 * workload; searches workload-major, then policy; points workload, then
 * swept value, then policy. */
size_t shd_task_wl(const struct exp *e, size_t i);

/* The order shard `mine` of plan p (a plan file's) runs its tasks in,
 * or with stealing offers itself every task in: its own; then the
 * others' of the workloads its own need; then the rest; each by p's
 * bound, the largest first (ties: index), the last two grouped by
 * workload (the groups by their largest bound). Returns the T task
 * indices (malloc'd), or NULL out of memory. */
size_t *shd_order(const struct exp *e, const struct shd_plan *p,
		  const bool *mine);

/* The experiment's identity (above): what shards, plans and merge
 * compare to know they are of the same files. */
uint64_t shd_identity(const struct exp *e);

/* The plan file of e for n shards: <out_dir>/plan-of-N.plan. */
void shd_plan_path(const struct exp *e, unsigned n, char *buf, size_t len);

/* `gpumemsim plan EXP --shards N [--steal]`: search the baselines
 * (budget fractions; -j jobs), plan with them and write the plan file
 * (temporary + rename); steal: and an empty claims directory beside it
 * (work stealing, shard.c). Its path and the loads go to `log` (may be
 * NULL). Returns 0, or -1 with err. */
int shd_plan_make(const struct exp *e, int jobs, unsigned n, bool steal,
		  FILE *log, gms_err *err);
void shd_plan_free(struct shd_plan *p);

/* The shard file of shard k of n: <out_dir>/shard-K-of-N.shard. */
void shd_path(const struct exp *e, unsigned k, unsigned n, char *buf,
	      size_t len);

/* Run shard k of n of e (o: jobs, quiet) and write its file (temporary +
 * rename); its path goes to `log` (may be NULL). plan: a plan file
 * (shd_plan_make's) to take the tasks and baselines from, its tag
 * written in the header (e then loaded lazily: exp_opts.lazy), or NULL:
 * the shard plans itself. Returns the number of failed runs
 * (exp_count_failed, >= 0), -2 with err when the plan file is refused
 * (bad input), or -1 with err. */
long shd_run(const struct exp *e, const struct exp_opts *o, unsigned k,
	     unsigned n, const char *plan, FILE *log, gms_err *err);

/* Read the shard files in inputs (files, or directories: their
 * shard-*-of-*.shard), check that they are the N shards of one plan of
 * one experiment by this version, load the experiment (from the path the
 * shards recorded; results to `out`, NULL: the first shard's directory)
 * into e and the merged results into r (n_failed counted). Returns 0, or
 * -1 with err (nothing loaded). */
int shd_merge(char *const *inputs, size_t n_in, const char *out,
	      struct exp *e, struct exp_result *r, gms_err *err);

/* The version a shard file of this build carries and merge wants
 * (GMS_VERSION as this library was compiled; for fuzz/shard.c). */
const char *shd_version(void);

#endif
