/*
 * exp.h - experiments: a YAML file that names the hardware, the workloads,
 * the policies and a measurement, run into results/<name>/.
 *
 *   exp_load   parse and validate the whole file (every key against the
 *              tables that `gpumemsim help experiment` prints; generators,
 *              workload files, traces, policies and the profile are all
 *              checked) before anything runs or is written;
 *   exp_run    run the measurement, points in parallel on `jobs` threads;
 *              results do not depend on `jobs`;
 *   exp_write  summary.csv, runs.json and the plot data, each written to
 *              a temporary and renamed; then the gnuplot plot.
 *
 * Measurements (measure.kind):
 *   run             each (workload, policy) once at the workload's batch;
 *   sweep           over batch sizes (measure.batch), or over device
 *                   budgets as bytes (measure.budget) or as fractions of
 *                   the workload's baseline (measure.budget_fraction): the
 *                   least device memory `framework` (graph mode) needs
 *                   with the experiment's allocator, found to 1 MiB by
 *                   bisection from its peak of live tensor bytes;
 *   max-batch       the largest batch each policy trains without OOM:
 *                   the answer of doubling from measure.start and
 *                   bisection, found with fewer runs from a boundary
 *                   predicted by the runs' peak bytes (max_batch.h), then
 *                   the next measure.confirm batches above the answer are
 *                   checked too, because fragmentation makes feasibility
 *                   non-monotonic; any that fits is reported;
 *   best-throughput the batch in [measure.min, measure.max] with the most
 *                   samples/s: a grid (measure.step, or powers of two),
 *                   then an integer ternary search between the best grid
 *                   point's neighbours;
 *   min-pool        the smallest allocator pool that serves each (workload,
 *                   policy), vDNN++ section IV-B: a run with the
 *                   experiment's budget gives the aggregate peak (bytes in
 *                   live blocks, "assuming no fragmentation"); from there
 *                   each run has budget = pool = P, and a run that runs out
 *                   of memory restarts with P + (request - largest free
 *                   block) (mem_min_pool), up to measure.limit; with
 *                   measure.shrink, a bisection below that answer for
 *                   the smallest pool that still serves (policies whose
 *                   footprint grows with what they are given);
 *   efficiency-optimal  per workload (generators only), AccUDNN section
 *                   4: the first policy's largest batch (the max-batch
 *                   search) and its samples/s, the tuner's k*
 *                   (accudnn_tune: predicted iteration time, learning
 *                   rate, pinned feature maps), then a run of the second
 *                   policy at k*;
 *   scaling         the same, then per cluster size N of `cluster:` the
 *                   samples/s N batch / (t_iter + Δ(N)) of both
 *                   (cluster.h) and the speed-up against N = 1.
 */
#ifndef GMS_EXP_H
#define GMS_EXP_H

#include "../sim/cfg.h"
#include "../sim/hw.h"
#include "../sim/mem_search.h"
#include "../sim/stats.h"
#include "../sim/ex.h"
#include "../sim/trace.h"
#include "../policies/accudnn.h"
#include "cluster.h"
#include "../workloads/wl_gen.h"

#include <stdio.h>

enum exp_kind {
	EXP_RUN,
	EXP_SWEEP,
	EXP_MAX_BATCH,
	EXP_BEST,
	EXP_MIN_POOL,
	EXP_EFF,
	EXP_SCALING,
	EXP_KIND_COUNT
};
extern const char *const exp_kind_names[]; /* "run", "sweep", ... */

/* What a sweep varies. */
enum exp_axis { EXP_AXIS_NONE, EXP_AXIS_BATCH, EXP_AXIS_BUDGET,
		EXP_AXIS_FRACTION };

/* Where a workload comes from. */
enum exp_src { EXP_SRC_GEN, EXP_SRC_FILE, EXP_SRC_TRACE };

/* A workload's bytes over its ops, from one build (shd_scan in shard.c,
 * issue 37): the bytes live for the whole run (weights, optimizer state)
 * and two prefix maxima over the ops in issue order: reach[j], the most
 * other bytes live at ops 0..j (each tensor from its producer or first
 * reader to its last reader or release point, a held one to the end,
 * with the workspace of the op's least-workspace algorithm, which
 * framework falls back to); need[j], the most bytes one op of 0..j
 * reads, writes and works in (least-workspace algorithm). */
struct exp_liveness {
	int64_t batch;		/* the build's batch */
	uint32_t ops;		/* its ops */
	uint64_t persist;	/* bytes live throughout */
	uint64_t *reach, *need; /* per op; NULL: not scanned */
};

/* One entry of `workloads:`. */
struct exp_workload {
	char label[128];	   /* its name in results */
	enum exp_src src;	   /* generator, workload YAML or DTR trace */
	const struct wl_gen *gen;  /* EXP_SRC_GEN: the generator */
	struct wl_gen_args args;   /* EXP_SRC_GEN: its arguments (batch) */
	char path[PRM_PATH_MAX];   /* EXP_SRC_FILE / TRACE: the file */
	int64_t batch;		   /* batch to build at; 0 = the file's */
	enum wl_dtr_remat remat;   /* EXP_SRC_TRACE: which ops are
				      recomputable (`remat:`) */
	bool profile_times;	   /* EXP_SRC_TRACE: every op timed by the
				      profile (`times: profile`) */
	const yaml_node_t *node;   /* the entry, for messages */
	uint32_t ops;		   /* ops of the build exp_load checks (at
				      the measurement's first batch): the
				      order exp_run starts tasks in */
	struct wl_workload *first; /* that build (a search's first probe,
				      the other measurements' one build),
				      kept for exp_run, which takes it
				      over; NULL once taken. exp_free
				      frees what is left */
	int64_t first_batch;	   /* the batch it was built at */
	struct exp_liveness live;  /* of the build exp_load checks: what
				      a shard plan costs tasks from
				      (shd_scan, shard.c) */
};

/* One entry of `policies:`. */
struct exp_policy {
	char name[64];		 /* policy name */
	char label[160];	 /* name and parameters, e.g. "vdnn(conv,m)" */
	yaml_node_t *node;	 /* the mapping pol_create checks */
	char allocator[32];	 /* its own allocator (pol_ops.allocator);
				    empty: the experiment's */
};

/* A parsed, validated experiment. */
struct exp {
	struct cfg_doc *doc;	     /* the YAML (nodes point into it) */
	char path[PRM_PATH_MAX];     /* the file */
	char name[128];		     /* results/<name>/ */
	char out_dir[PRM_PATH_MAX];  /* where results go */
	struct hw_profile hw;	     /* the GPU */
	char allocator[PRM_STR_MAX]; /* device allocator (mem_find name) */
	uint64_t budget;	     /* device bytes for tensors; 0 = usable */
	bool above_device;	     /* budget_above_device: byte budgets
					above the profile's usable memory
					simulate a larger device (labelled);
					else exp_load refuses them */
	uint64_t pool_size;	     /* allocator's initial pool; 0 = budget */
	int iterations, warmup;	     /* per run */
	int settle_max;		     /* ex_cfg.settle_max of each run */
	int grow_max;		     /* ex_cfg.grow_max of each run */
	bool plot;		     /* draw the plot with gnuplot */
	struct exp_workload *wl;     /* workloads, in file order */
	size_t n_wl;
	struct exp_policy *pol;	     /* policies, in file order */
	size_t n_pol;
	enum exp_kind kind;	     /* the measurement */
	enum exp_axis axis;	     /* sweep: what varies */
	int64_t *batches;	     /* sweep over batch: the values */
	uint64_t *budgets;	     /* sweep over budget: bytes */
	yaml_node_t *budgets_node;   /* their sequence (error locations) */
	double *fractions;	     /* sweep over budget_fraction */
	size_t n_values;	     /* length of the one in use */
	int64_t start, limit, confirm; /* max-batch */
	int64_t lo, hi, step;	     /* best-throughput range and grid */
	bool pool_shrink;	     /* min-pool: then bisect below the answer
					for the smallest pool that serves */
	uint64_t pool_limit;	     /* min-pool: largest pool tried; 0 = the
					budget of the aggregate-peak run */
	int64_t lr_batch;	     /* efficiency-optimal, scaling: the
					batch lr_base belongs to */
	double lr_base, lr_c;	     /* efficiency-optimal, scaling: the
					tuner's base learning rate and the
					convexity c of equation 9 */
	struct cl_cluster cluster;   /* scaling: the cluster (`cluster:`) */
	char skip[1024];	     /* why the experiment cannot run here (a
					dtr: trace whose directory is absent,
					wl_dtr_resolve), "" when it can */
};

/* The tuner (accudnn_tune's signature); a hook so that tests can give a
 * stub with known answers. */
typedef int (*exp_tune_fn)(const struct accudnn_tune_in *in,
			   struct accudnn_tune_out *out, gms_err *err);

/* Knobs from the command line. */
struct exp_opts {
	const char *out;	/* --out DIR: replaces the file's out/name */
	int jobs;		/* -j N; <= 0: the number of cores */
	bool quiet;		/* no progress line */
	const char *trace;	/* --trace FILE: timeline of one point */
	const char *schedule;	/* --schedule FILE: schedule log of one
				   point */
	long trace_point;	/* --trace-point N: which (summary row) of
				   --trace and --schedule */
	exp_tune_fn tune;	/* efficiency-optimal, scaling: the tuner;
				   NULL = accudnn_tune */
	const bool *only;	/* --shard: which tasks to run (exp_planned_rows
				   entries: points, searches or workloads,
				   in summary order); NULL = all. The rest
				   stay zeroed (shard.h) */
	bool lazy;		/* exp_load builds no workload (each is
				   built when a task first needs it): a
				   shard run from a plan file, whose plan
				   step built and checked them all, and
				   merge of such shards (shard.h) */
	const uint64_t *baselines; /* budget fractions: each workload's
				   baseline, given (a plan file's) instead
				   of searched; NULL: searched */
	/* work stealing (shard.c, `plan --steal`): every task `only`
	 * admits is offered to claim just before it would run, in `order`;
	 * claim NULL: none */
	bool (*claim)(void *ctx, size_t task); /* true: run it here; false:
				   another process runs it (or claiming
				   failed: the caller's ctx says) */
	void *claim_ctx;	/* claim's context */
	const size_t *order;	/* every task (exp_planned_rows), in the
				   order they are run or offered (a plan
				   file's shard: by the plan's bound);
				   NULL: the pool's (largest workload
				   first) */
	struct exp_models *models; /* given: the runs' shared models start
				   from these (a plan file's) and keep what
				   the runs fit; NULL: fresh ones, freed
				   with the run */
	bool *ran;		/* with claim, out: the tasks run here
				   (exp_planned_rows entries, zeroed by the
				   caller) */
};

/* Models an experiment's runs fit once and share (issue 37; exp_run's
 * memos): accudnn's performance models by profiling pass, and DTR logs'
 * simrd baselines. The plan step fits them (exp_plan_step) and writes
 * them into the plan file; a shard starts from the file's (shard.h). */
struct exp_models {
	struct ac_fit_memo *fits;      /* accudnn's fitted models */
	struct dtr_trace_memo *traces; /* DTR logs and their baselines */
};

/* One simulated configuration and what it measured. */
struct exp_point {
	size_t wl, pol;		/* indices into exp.wl / exp.pol */
	int64_t batch;		/* batch simulated */
	uint64_t budget;	/* device bytes for tensors (0 = usable) */
	uint64_t pool_size;	/* allocator's initial pool; 0 = the
				   experiment's pool_size */
	double fraction;	/* budget as a fraction of the baseline
				   (budget_fraction sweeps), else 0 */
	struct st_run st;	/* the run's statistics */
	char error[1024];	/* set when it could not run (st.failed) */
	bool ran;		/* st is valid (may still be failed) */
	struct tr_rec *tl;	/* `run` measurements: its timeline (for the
				   memory plot; no workload names), else
				   NULL */
	const struct accudnn_plan *plan; /* efficiency-optimal, scaling: the
					    tuner's strategy the run at k*
					    deploys (accudnn only), else
					    NULL */
};

/* A max-batch, best-throughput or min-pool search for one (workload,
 * policy). min-pool: probe[0] is the aggregate-peak run, probe[1..] the
 * pools tried in order. */
struct exp_search {
	size_t wl, pol;		/* what was searched */
	struct exp_point *probe; /* every batch tried, in order */
	size_t n_probe, cap_probe;
	long best;		/* index in probe of the answer, -1: none */
	bool capped;		/* max-batch: the limit itself fitted */
	int64_t larger_fit;	/* max-batch: a checked batch above the
				   answer that also fitted, or 0 */
	uint64_t peak;		/* min-pool: aggregate peak bytes (0: the
				   peak run did not complete) */
	uint64_t limit;		/* min-pool: largest pool it could try */
	struct mem_search mp;	/* min-pool: what mem_min_pool found */
	char error[1024];	/* min-pool: why the search itself stopped
				   on an error (its runs may be fine) */
};

/* efficiency-optimal and scaling: one workload. */
struct exp_eff {
	struct exp_search base;	      /* max-batch of the first policy */
	int64_t k_base;		      /* the batch the tuner started from */
	struct accudnn_tune_out tune; /* what it found */
	bool tuned;		      /* tune is valid */
	struct exp_point run;	      /* the second policy at k_star */
	bool assessed;		      /* run deployed the tuner's strategy
					 and judged it (accudnn) */
	uint32_t run_pinned;	      /* then: the maps it pinned */
	uint32_t run_violations;      /* and the violations of (6) it found
					 on its own GMAP with the tuner's
					 model */
	uint64_t param_bytes;	      /* parameter bytes (Δ's P) */
	char error[1024];	      /* why the row is incomplete */
};

/* Results of exp_run. */
struct exp_result {
	struct exp_point *pt;	   /* run / sweep points, summary order */
	size_t n_pt;
	struct exp_search *srch;   /* searches: one per (wl, pol) */
	size_t n_srch;
	struct exp_eff *eff;	   /* efficiency-optimal, scaling: per wl */
	size_t n_eff;
	uint64_t *baseline;	   /* budget_fraction: baseline bytes per wl */
	size_t n_failed;	   /* points whose run failed (not OOM) */
	double wall_s;		   /* wall-clock seconds of exp_run */
};

/* Parse and validate; nothing is run or written. Returns 0, -1 with err
 * (bad input), or EXP_SKIPPED with err saying why: the experiment reads
 * DTR traces by `dtr:` name and their directory is absent (third-party
 * data the repository does not ship; README "Third-party data"); e is
 * then freed, and `run` prints the reason and exits 0. */
#define EXP_SKIPPED 1
int exp_load(struct exp *e, const char *path, const struct exp_opts *o,
	     gms_err *err);
void exp_free(struct exp *e);

/* New empty models (both memos); 0, or -1 when out of memory (none
 * made). free: both, either may be NULL. */
int exp_models_new(struct exp_models *m);
void exp_models_free(struct exp_models *m);

/* A shard plan's step (shard.c), with one build of each workload: the
 * baselines of budget fractions (exp_result.baseline) of every workload
 * into base[e->n_wl] as exp_run searches them (base NULL: e sweeps
 * none), then the models e's points would fit, fitted into m as their
 * runs would (exp_run), run nowhere: each accudnn point's profiling pass
 * and fit, each DTR log's baseline for a budget fraction. Points only
 * (searches probe batches no plan knows: other measurements fit nothing
 * here). A point whose model cannot be made is left to its run, which
 * meets the same failure and says it. -j jobs (<= 0: the cores). 0, or
 * -1 with err (out of memory). */
int exp_plan_step(const struct exp *e, int jobs, uint64_t *base,
		  struct exp_models *m, gms_err *err);

/* Print the tables of every key (for `gpumemsim help experiment`). */
void exp_print_help(FILE *f);

/* Build workload i at a batch (0 = its own). */
struct wl_workload *exp_build_workload(const struct exp *e, size_t i,
				       int64_t batch, gms_err *err);
/* The same with room reserved as r says (a generator's: wl_reserve; a
 * hint, the workload is the same); r may be NULL. */
struct wl_workload *exp_build_workload_in(const struct exp *e, size_t i,
					  int64_t batch,
					  const struct wl_reserve *r,
					  gms_err *err);
/* Does workload b come from the generator workload a does (so that a
 * build of a may serve one of b as its template, wl_reserve: another
 * batch, sequence length, attention or loss of the same network)? */
bool exp_same_gen(const struct exp *e, size_t a, size_t b);

/* Workloads i and j build from the same reading of one log at batch (0:
 * their own): two entries of one trace, with the same times and batch,
 * their `remat` rules aside (recorded.yaml names each log under both). */
bool exp_same_log(const struct exp *e, size_t i, size_t j, int64_t batch);
/* Workloads i and j (exp_same_log) at batch from one reading of their
 * log (wl_load_dtr_rules): *wi and *wj as exp_build_workload builds each,
 * at about the cost of one (issue 37: each shard built both). 0, or -1
 * with err and both NULL; a caller then builds each alone, for each its
 * own message. */
int exp_build_log_pair(const struct exp *e, size_t i, size_t j,
		       int64_t batch, struct wl_workload **wi,
		       struct wl_workload **wj, gms_err *err);

/* Simulate one point (p->wl, p->pol, p->batch, p->budget) with an
 * optional observer; fills p->st / p->error. `built` is the point's
 * workload when the caller has built it (exp_build_workload at p->batch,
 * e.g. to name things in a trace afterwards), else NULL: built here.
 * Thread-safe. */
void exp_simulate(const struct exp *e, struct exp_point *p,
		  const struct wl_workload *built,
		  const struct ex_observer *obs);

/* Run the measurement. Returns 0 (points may have failed: r->n_failed),
 * or -1 with err when it could not run at all. */
int exp_run(const struct exp *e, const struct exp_opts *o,
	    struct exp_result *r, gms_err *err);
void exp_result_free(struct exp_result *r);

/* The runs of r that failed (not OOM), counting only the tasks `only`
 * selects (NULL: all): exp_result.n_failed. */
size_t exp_count_failed(const struct exp_result *r, const bool *only);

/* The baseline of budget fractions of workload wl (exp_run.c): the least
 * device memory framework needs with e's allocator, to 1 MiB. known: skip
 * the runs a run already made answers (exp_run.c, struct base_known: the
 * same value; false only to check that). *runs (may be NULL): the
 * framework runs made. */
uint64_t exp_baseline_of(const struct exp *e, const struct wl_workload *wl,
			 bool known, unsigned *runs);

/* Write summary.csv, runs.json, plot data and (if e->plot) the plot into
 * e->out_dir; prints the paths written to `log` (may be NULL). */
int exp_write(const struct exp *e, const struct exp_result *r, FILE *log,
	      gms_err *err);

/* Before anything runs: create e->out_dir, check that each file of the
 * result set may be written there (gms_out_check) and that a temporary
 * can be made, and probe --trace and --schedule (gms_out_probe), so a bad
 * output path is found before the work, not after it. Returns 0 or -1
 * with the first problem. */
int exp_check_out(const struct exp *e, const struct exp_opts *o,
		  gms_err *err);

/* The row of the summary table a --trace-point index names. */
const struct exp_point *exp_row(const struct exp_result *r, size_t i);
size_t exp_n_rows(const struct exp_result *r);
/* The number of rows the summary will have, known before running. */
/* The measurement's kind of task: a search per (workload, policy)
 * (max-batch, best-throughput, min-pool), or a tuned run per workload
 * (efficiency-optimal, scaling); else points. */
bool exp_is_search(const struct exp *e);
bool exp_is_eff(const struct exp *e);
size_t exp_planned_rows(const struct exp *e);

/* The answer table `run` prints at its end (issue 34): per workload and
 * policy the batch (a search's answer, or fit / OOM at the run's batch
 * and budget), samples/s, slowdown against the `framework` policy at the
 * same workload, batch and budget (exp_slowdown), peak device bytes
 * (allocated) and pinned host bytes; a workload whose batch fits under
 * no policy names the largest batch `framework` trains (from the runs
 * made) and points to `measure: max-batch`. */
void exp_print_answers(const struct exp *e, const struct exp_result *r,
		       FILE *f);

/* The slowdown of point p against the `framework` policy's point of the
 * same workload, batch and budget among r's points: p's steady iteration
 * time over framework's; 0 when there is no such framework point, either
 * did not train (OOM, failed) or p is itself framework's. */
double exp_slowdown(const struct exp *e, const struct exp_result *r,
		    const struct exp_point *p);

/* The usable device bytes of the experiment's profile (capacity minus
 * reserved). */
uint64_t exp_usable(const struct exp *e);

/* Status of a run: "ok", "oom" or "failed". */
const char *exp_status(const struct exp_point *p);

/* Write s as a CSV field (quoted when it holds a comma, quote or line
 * break). */
void exp_csv_str(FILE *f, const char *s);
/* Run gnuplot on <datadir>/results/<script> for the png and the svg
 * terminal, one after the other in one gnuplot (exp_out.c), with the
 * variables dat, out, term, titles, xlabel and ptitle set; each image
 * goes to a temporary renamed onto png / svg. */
int exp_gnuplot(const char *script, const char *dat, const char *titles,
		const char *xlabel, const char *title, const char *png,
		const char *svg, gms_err *err);

#endif
