/*
 * dtr_full.c - the `dtr` policy: Dynamic Tensor Rematerialization's
 * heuristics (Kirisame et al., ICLR 2021; policies/dtr.h) in the full
 * model, the executor with its allocator, streams and copy engines.
 *
 * Preset `full` (this file): DTR's runtime, section 3 of the paper: "when
 * memory is full, evict the tensor with the lowest score h(t) ... upon
 * access of an evicted tensor, recursively rematerialize it (and any of
 * its evicted parents)". Here:
 *   - on_alloc_fail: drop (ex_drop, no copy: the copy engines stay idle)
 *     the evictable tensor of least dtr_cost() (the same score function as
 *     the serial replay, policies/dtr.c) and retry; ties go to the later
 *     tensor of the pool, as simrd's `choose` takes `cost <= best`
 *     (dtr-semantics.md 6). Evictable: resident (IN), not persistent, not
 *     used by a kernel being prepared or running (simrd's locks), and
 *     droppable by the executor (ex_drop refuses a tensor whose producer
 *     cannot be re-run or whose inputs are gone; each refusal is counted);
 *     a refused tensor is skipped for the rest of that failure.
 *   - an access to a dropped tensor is rematerialised on demand by the
 *     executor's recomputation (the same default Capuchin's on-demand
 *     recomputation uses, sim/ex.h ex_recompute), recursively.
 *   - thrash: simrd stops a run once its rematerialised compute exceeds
 *     remat_limit (run_pareto: the baseline compute x (2.0 - 1),
 *     dtr-semantics.md 0). Here remat_limit x the iteration's own kernel
 *     time, per iteration; the executor has no call that ends a run from
 *     a hook (sim/ex.h: hooks evict, drop, prefetch and wait; only
 *     on_alloc_fail's EX_FAIL ends one), so the check is made at the
 *     next failed allocation, which then ends the run as OOM with `stop
 *     thrash` in the report. An iteration that passes the limit with no
 *     failure after it runs to its end: it is counted in the report's
 *     `unchecked_thrash` (simrd would have stopped it).
 *   - nothing evictable: OOM (simrd's MemoryError), `stop oom`.
 * The evicted neighbourhoods of the scores (region, region_rev; for
 * dtr-eqclass the evicted component around the tensor) are computed by a
 * fresh traversal at each evaluation, not by simrd's incremental rebuild
 * and absorb. dtr-semantics.md 7: re-simulations with fresh traversals
 * "gave identical status and overhead to six digits in every case tried";
 * the serial preset (policies/dtr_serial.c) is the exact one. A
 * neighbour is evicted when it was made this iteration and is not
 * resident now (dropped, or freed after its last use: simrd keeps a
 * released storage in the graph as an evicted node, section 5). Costs are
 * the producers' kernel times (ex_op_time), sizes the tensors' bytes,
 * staleness the simulated time since the last access (ns).
 *
 * Preset `serial`: an experiment point with this policy is not run by the
 * executor but by dtr_serial_run on the trace (exp/exp_run.c); as an
 * executor policy (simulate) it is refused.
 *
 * The report: evictions (drops), rematerialisations (kernels re-run and
 * their time), refusals, the stop cause, and at each failed allocation
 * the free bytes against the largest free block: a failure with enough
 * free bytes but no block for the request is fragmentation's.
 */
#include "../sim/ex.h"
#include "dtr.h"
#include "dtr_full.h"
#include "pol.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The heuristics as the parameter table takes them, in enum dtr_heuristic
 * order (dtr_heuristic_parse agrees: tests/test_dtr_full.c). */
static const char *const dtr_full_heuristics[DTR_H_COUNT + 1] = {
	"dtr", "dtr-eqclass", "msps", "lru", "largest", NULL};

enum dtr_preset { DTR_PRESET_FULL, DTR_PRESET_SERIAL };
static const char *const dtr_full_presets[] = {"full", "serial", NULL};

struct dtr_full_params {
	int heuristic;	    /* enum dtr_heuristic */
	double remat_limit; /* thrash stop: rematerialised time over one
			       iteration's kernel time */
	int preset;	    /* enum dtr_preset */
};

static const struct prm_def dtr_full_params[] = {
	{"heuristic", PRM_ENUM, "dtr", 0, 0, dtr_full_heuristics,
	 "eviction score (policies/dtr.h): dtr, dtr-eqclass, msps, lru, "
	 "largest", offsetof(struct dtr_full_params, heuristic)},
	/* run_pareto's remat_limit = compute * (2.0 - 1) */
	{"remat_limit", PRM_DOUBLE, "1.0", 0, 1e6, NULL,
	 "stop (thrash) once rematerialisation takes more than this multiple "
	 "of the iteration's kernel time (simrd: 2.0 - 1)",
	 offsetof(struct dtr_full_params, remat_limit)},
	{"preset", PRM_ENUM, "full", 0, 0, dtr_full_presets,
	 "full: the executor (allocator, streams); serial: simrd's own "
	 "replay of the trace (experiments only)",
	 offsetof(struct dtr_full_params, preset)},
	PRM_END,
};

/* Why the run stopped, if it did. */
enum dtr_stop { STOP_NONE, STOP_OOM, STOP_THRASH };
static const char *const stop_names[] = {"none", "oom", "thrash"};

struct dtr_full {
	uint32_t n;		/* tensors of the workload */
	int64_t *last;		/* per tensor: last access (ns), DTR_NEVER */
	int *made;		/* per tensor: iteration it was last written
				   (-1: never), "exists in the graph" */
	uint32_t *mark;		/* per tensor: visit generation */
	uint32_t gen;		/* current visit generation */
	uint32_t *stack;	/* traversal stack, n entries */
	uint32_t *pool;		/* tensors made resident, in order (simrd's
				   pool); compacted as they leave */
	uint32_t n_pool;
	bool *in_pool;		/* per tensor: listed in pool */
	uint32_t *refused;	/* per tensor: the failure (n_fail + 1) in
				   which ex_drop refused it */
	int iter;		/* current iteration */
	sim_time_t iter_compute; /* kernel time of the iteration's ops */
	sim_time_t remat_ns;	/* rematerialised kernel time, this
				   iteration */
	uint32_t last_op;	/* the last remat kernel counted ... */
	sim_time_t last_t;	/* ... and when it started */
	/* whole run */
	uint64_t evictions, remats, refusals, fails;
	sim_time_t remat_total;	/* rematerialised kernel time */
	uint64_t frag_fails;	/* failures with free bytes >= the request
				   but no block that large */
	uint64_t fail_free, fail_largest, fail_bytes; /* the last failure */
	enum dtr_stop stop;	/* why the run ended, if it did */
	uint64_t unchecked;	/* iterations that ended with their remat
				   time past the limit and no failed
				   allocation after it to stop the run */
	char refusal[256];	/* the first refusal's reason */
};

static int dtr_full_init(struct pol *p, gms_err *err)
{
	p->priv = calloc(1, sizeof(struct dtr_full));
	return p->priv ? 0 : gms_errf(err, "out of memory");
}

static void dtr_full_fini(struct pol *p)
{
	struct dtr_full *s = p->priv;
	if (s) {
		free(s->last);
		free(s->made);
		free(s->mark);
		free(s->stack);
		free(s->pool);
		free(s->refused);
		free(s->in_pool);
	}
	free(s);
	p->priv = NULL;
}

static int dtr_full_plan(struct pol *p, struct ex *ex, gms_err *err)
{
	struct dtr_full *s = p->priv;
	const struct wl_workload *w = ex_workload(ex);
	const struct dtr_full_params *prm = p->params;
	if (prm->preset == DTR_PRESET_SERIAL)
		return gms_errf(err, "policy 'dtr': preset serial is simrd's "
				     "own replay of a trace, run by experiments "
				     "and `gpumemsim dtr`, not by the executor");
	if (s->last) /* planned already: a second run of the instance */
		return gms_errf(err, "policy 'dtr': one run per instance");
	s->n = w->n_tensors;
	size_t n = s->n ? s->n : 1;
	s->last = malloc(n * sizeof *s->last);
	s->made = malloc(n * sizeof *s->made);
	s->mark = calloc(n, sizeof *s->mark);
	s->stack = malloc(n * sizeof *s->stack);
	s->pool = malloc(n * sizeof *s->pool);
	s->refused = calloc(n, sizeof *s->refused);
	s->in_pool = calloc(n, sizeof *s->in_pool);
	if (!s->last || !s->made || !s->mark || !s->stack || !s->pool ||
	    !s->refused || !s->in_pool)
		return gms_errf(err, "out of memory");
	for (uint32_t t = 0; t < s->n; t++) {
		s->last[t] = DTR_NEVER;
		s->made[t] = -1;
	}
	s->iter_compute = 0;
	for (uint32_t o = 0; o < w->n_ops; o++)
		s->iter_compute += ex_op_time(ex, o);
	return 0;
}

static void dtr_full_iter_begin(struct pol *p, struct ex *ex, int iter)
{
	(void)ex;
	struct dtr_full *s = p->priv;
	s->iter = iter;
	s->remat_ns = 0;
	for (uint32_t i = 0; i < s->n_pool; i++)
		s->in_pool[s->pool[i]] = false;
	s->n_pool = 0;
	s->last_op = WL_NONE;
}

/* The thrash check simrd makes after every materialize, here only at a
 * failed allocation (the executor offers no call to end a run from any
 * other hook, sim/ex.h): an iteration that passed remat_limit without a
 * failure after it is counted and reported. */
static bool past_limit(const struct dtr_full *s,
		       const struct dtr_full_params *prm)
{
	return (double)s->remat_ns > prm->remat_limit * (double)s->iter_compute;
}

static void dtr_full_iter_end(struct pol *p, struct ex *ex, int iter,
			      const struct st_iter *st)
{
	(void)ex;
	(void)iter;
	(void)st;
	struct dtr_full *s = p->priv;
	if (past_limit(s, p->params))
		s->unchecked++;
}

static void dtr_full_on_access(struct pol *p, struct ex *ex,
			       const struct ex_access *a)
{
	struct dtr_full *s = p->priv;
	s->last[a->tensor] = a->time;
	if (!a->write)
		return;
	if (!s->in_pool[a->tensor]) { /* at most n: no overflow */
		s->in_pool[a->tensor] = true;
		s->pool[s->n_pool++] = a->tensor;
	}
	s->made[a->tensor] = s->iter;
	if (a->recompute && (a->op != s->last_op || a->time != s->last_t)) {
		/* one kernel, however many outputs it writes */
		sim_time_t t = ex_op_time(ex, a->op);
		s->remat_ns += t;
		s->remat_total += t;
		s->remats++;
		s->last_op = a->op;
		s->last_t = a->time;
	}
}

/* Is u evicted (made this iteration, not resident)? */
static bool evicted(const struct dtr_full *s, struct ex *ex, uint32_t u)
{
	enum ex_state st = ex_tensor_state(ex, u);
	return s->made[u] == s->iter && (st == TS_RECOMPUTE || st == TS_NONE);
}

/* Traversal directions. */
#define DIR_CHILDREN 1u /* region: outputs of the ops reading a tensor */
#define DIR_PARENTS 2u	/* region_rev: inputs of its producer */

/* The kernel time of the evicted tensors reachable from t through evicted
 * tensors in the directions dirs (t itself not counted). */
static uint64_t region(struct dtr_full *s, struct ex *ex, uint32_t t,
		       unsigned dirs)
{
	const struct wl_workload *w = ex_workload(ex);
	if (++s->gen == 0) { /* wrapped: clear the marks */
		memset(s->mark, 0, s->n * sizeof *s->mark);
		s->gen = 1;
	}
	uint64_t sum = 0;
	size_t top = 0;
	s->mark[t] = s->gen;
	s->stack[top++] = t;
	while (top) {
		uint32_t v = s->stack[--top];
		const struct wl_tensor *tv = &w->tensors[v];
#define VISIT(u)                                                               \
	do {                                                                   \
		uint32_t u_ = (u);                                             \
		if (s->mark[u_] != s->gen && evicted(s, ex, u_)) {            \
			s->mark[u_] = s->gen;                                  \
			sum += (uint64_t)ex_op_time(                           \
				ex, w->tensors[u_].producer);                  \
			s->stack[top++] = u_;                                  \
		}                                                              \
	} while (0)
		if ((dirs & DIR_CHILDREN))
			for (uint32_t r = 0; r < tv->n_readers; r++) {
				const struct wl_op *op = &w->ops[tv->readers[r]];
				for (uint32_t k = 0; k < op->n_out; k++)
					VISIT(op->out[k]);
			}
		if ((dirs & DIR_PARENTS) && tv->producer != WL_NONE) {
			const struct wl_op *op = &w->ops[tv->producer];
			for (uint32_t k = 0; k < op->n_in; k++)
				VISIT(op->in[k]);
		}
#undef VISIT
	}
	return sum;
}

/* The score of resident tensor t (lower: evicted first). */
static double score(struct dtr_full *s, struct ex *ex,
		    enum dtr_heuristic h, uint32_t t)
{
	const struct wl_workload *w = ex_workload(ex);
	uint64_t c = (uint64_t)ex_op_time(ex, w->tensors[t].producer);
	switch (h) {
	case DTR_H_DTR:
		c += region(s, ex, t, DIR_CHILDREN) +
		     region(s, ex, t, DIR_PARENTS);
		break;
	case DTR_H_EQCLASS: /* the evicted component around t */
		c += region(s, ex, t, DIR_CHILDREN | DIR_PARENTS);
		break;
	case DTR_H_MSPS:
		c += region(s, ex, t, DIR_PARENTS);
		break;
	default:
		break;
	}
	return dtr_cost(h, c, w->tensors[t].bytes, s->last[t], ex_now(ex));
}

static enum ex_verdict dtr_full_on_alloc_fail(struct pol *p, struct ex *ex,
					      const struct ex_alloc_req *req)
{
	struct dtr_full *s = p->priv;
	const struct dtr_full_params *prm = p->params;
	struct mem_stats ms;
	ex_mem_stats(ex, &ms);
	if (req->tries == 0) { /* a new failure, not a retry of one */
		s->fails++;
		uint64_t free_b = ms.budget > ms.allocated
					  ? ms.budget - ms.allocated
					  : 0;
		s->fail_free = free_b;
		s->fail_largest = ms.largest_free;
		s->fail_bytes = req->bytes;
		if (free_b >= req->bytes)
			s->frag_fails++;
	}
	if (past_limit(s, prm)) {
		s->stop = STOP_THRASH;
		return EX_FAIL;
	}
	enum dtr_heuristic h = (enum dtr_heuristic)prm->heuristic;
	uint32_t stamp = (uint32_t)s->fails;
	for (;;) {
		uint32_t best = WL_NONE, k = 0;
		double best_c = INFINITY;
		for (uint32_t i = 0; i < s->n_pool; i++) {
			uint32_t t = s->pool[i];
			if (ex_tensor_state(ex, t) != TS_IN) {
				s->in_pool[t] = false; /* left: compacted */
				continue;
			}
			s->pool[k++] = t;
			if (ex_tensor_persistent(ex, t) ||
			    ex_tensor_busy(ex, t) || s->refused[t] == stamp)
				continue;
			double c = score(s, ex, h, t);
			if (best == WL_NONE || c <= best_c) {
				best = t;
				best_c = c;
			}
		}
		s->n_pool = k;
		if (best == WL_NONE) {
			s->stop = STOP_OOM;
			return EX_FAIL;
		}
		if (ex_drop(ex, best) == 0) {
			s->evictions++;
			return EX_RETRY;
		}
		s->refusals++;
		s->refused[best] = stamp;
		if (!s->refusal[0])
			snprintf(s->refusal, sizeof s->refusal, "%s",
				 ex_last_error(ex));
	}
}

static void dtr_full_report(struct pol *p, FILE *out)
{
	const struct dtr_full *s = p->priv;
	const struct dtr_full_params *prm = p->params;
	fprintf(out, "heuristic %s\nremat_limit %g\n",
		dtr_full_heuristics[prm->heuristic], prm->remat_limit);
	fprintf(out, "evictions %llu\nremats %llu\nremat_ms %.6f\n",
		(unsigned long long)s->evictions,
		(unsigned long long)s->remats, (double)s->remat_total / 1e6);
	fprintf(out, "refusals %llu%s%s\n", (unsigned long long)s->refusals,
		s->refusal[0] ? " first: " : "", s->refusal);
	fprintf(out, "alloc_failures %llu\nfragmentation_failures %llu\n",
		(unsigned long long)s->fails,
		(unsigned long long)s->frag_fails);
	if (s->fails)
		fprintf(out, "last_failure request %llu free %llu "
			     "largest_free %llu\n",
			(unsigned long long)s->fail_bytes,
			(unsigned long long)s->fail_free,
			(unsigned long long)s->fail_largest);
	fprintf(out, "unchecked_thrash %llu\nstop %s\n",
		(unsigned long long)s->unchecked, stop_names[s->stop]);
}

extern const struct pol_ops pol_dtr_ops;

bool dtr_full_is_serial(const struct pol *p)
{
	return p->ops == &pol_dtr_ops &&
	       ((const struct dtr_full_params *)p->params)->preset ==
		       DTR_PRESET_SERIAL;
}

int dtr_full_fraction_budget(const struct pol *p, const char *path,
			     double fraction, uint64_t *budget, gms_err *err)
{
	if (p->ops != &pol_dtr_ops)
		return 0;
	struct dtr_trace *tr;
	if (dtr_trace_load(path, &tr, err) < 0)
		return -1;
	struct dtr_baseline b;
	dtr_baseline(tr, &b);
	*budget = dtr_budget_for_ratio(&b, fraction);
	dtr_trace_free(tr);
	return 1;
}

int dtr_full_run_serial(const struct pol *p, const char *path,
			double fraction, uint64_t budget, int64_t batch,
			struct st_run *st, uint64_t *used, gms_err *err)
{
	const struct dtr_full_params *prm = p->params;
	struct dtr_trace *tr;
	if (dtr_trace_load(path, &tr, err) < 0)
		return -1;
	struct dtr_baseline b;
	dtr_baseline(tr, &b);
	struct dtr_opts o = {
		.heuristic = (enum dtr_heuristic)prm->heuristic,
		.budget_bytes = fraction > 0 ? dtr_budget_for_ratio(&b, fraction)
			       : budget	     ? budget
					     : UINT64_MAX,
		/* run_pareto: compute x (2.0 - 1) */
		.remat_limit_ns = (uint64_t)(prm->remat_limit *
					     (double)b.compute_ns)};
	struct dtr_result r;
	int rc = dtr_serial_run(tr, &o, &r, err);
	dtr_trace_free(tr);
	if (rc < 0)
		return -1;
	memset(st, 0, sizeof *st);
	st->iter = calloc(1, sizeof *st->iter);
	if (!st->iter)
		return gms_errf(err, "out of memory");
	struct st_iter *it = st->iter;
	it->time = (sim_time_t)r.clock_end;
	it->compute_busy = (sim_time_t)(r.model_compute_ns + r.remat_compute_ns);
	it->recompute = (sim_time_t)r.remat_compute_ns;
	it->n_drop = r.evictions_heuristic;
	it->n_recompute = r.remat_ops;
	it->n_kernels = b.n_ops + r.remat_ops;
	st->steady = *it;
	st->n_iter = r.status == DTR_OK;
	st->batch = batch;
	st->samples_per_s =
		r.status == DTR_OK ? (double)batch / ((double)r.clock_end / 1e9)
				   : 0;
	snprintf(st->allocator, sizeof st->allocator, "simrd");
	st->mem.budget = o.budget_bytes;
	st->mem.peak_allocated = st->mem.peak_requested = r.max_memory_bytes;
	if (r.status != DTR_OK) {
		st->oom.hit = true;
		st->oom.iter = 0;
		snprintf(st->oom.op, sizeof st->oom.op, "(serial)");
		snprintf(st->oom.tensor, sizeof st->oom.tensor, "-");
		snprintf(st->oom.reason, sizeof st->oom.reason,
			 "DTR serial: %s", dtr_status_name(r.status));
	}
	char *rep = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&rep, &len);
	if (!f)
		return gms_errf(err, "out of memory");
	fprintf(f, "preset serial\nheuristic %s\nstatus %s\noverhead %.6f\n"
		   "budget %llu\nbaseline_peak %llu\nbaseline_compute_ns "
		   "%llu\nclock %llu\nremat_ns %llu\nremat_ops %llu\n"
		   "evictions %llu\neager_evictions %llu\nmax_memory %llu\n",
		dtr_full_heuristics[prm->heuristic], dtr_status_name(r.status),
		r.overhead, (unsigned long long)o.budget_bytes,
		(unsigned long long)b.peak_bytes,
		(unsigned long long)b.compute_ns,
		(unsigned long long)r.clock_end,
		(unsigned long long)r.remat_compute_ns,
		(unsigned long long)r.remat_ops,
		(unsigned long long)r.evictions_heuristic,
		(unsigned long long)r.evictions_eager_release,
		(unsigned long long)r.max_memory_bytes);
	if (fclose(f) != 0 || !rep) {
		free(rep);
		return gms_errf(err, "out of memory");
	}
	st->pol_report = rep;
	*used = o.budget_bytes;
	return 0;
}

const struct pol_ops pol_dtr_ops = {
	.name = "dtr",
	.summary = "DTR: on OOM drop the tensor of least heuristic score "
		   "(dtr, dtr-eqclass, msps, lru, largest), rematerialise on "
		   "access; preset serial: simrd's own replay",
	.params = dtr_full_params,
	.params_size = sizeof(struct dtr_full_params),
	.init = dtr_full_init,
	.fini = dtr_full_fini,
	.plan = dtr_full_plan,
	.iter_begin = dtr_full_iter_begin,
	.on_access = dtr_full_on_access,
	.on_alloc_fail = dtr_full_on_alloc_fail,
	.iter_end = dtr_full_iter_end,
	.report = dtr_full_report,
};
