/*
 * accudnn.c - AccUDNN (Guo et al.; ../shared/papers/accudnn.md): a
 * performance-model-guided swap of feature maps between the GPU and
 * pinned host memory, on Caffe, and the tuner that turns the memory it
 * saves into a larger, efficiency-optimal batch.
 *
 * The runtime memory manager (section 5), on the engine's three queues:
 * "The runtime memory manager deploys three separate CUDA streams for
 * computation, swap-out and swap-in" -- ENG_COMPUTE, ENG_D2H, ENG_H2D.
 *
 * - One pool: "we first allocate all the given memory budget as an
 *   integrated buffer pool with one cudaMalloc() call" -- the
 *   pool-bestfit allocator with the pool at the budget.
 * - Its own memory manager replaces Caffe's: a blob is allocated when
 *   written and released after its last use ("allocate ... release"),
 *   not held for the run (pol_ops.own_memory).
 * - Offload: "once a feature map generated, stream_swap-out starts
 *   offload operation immediately" -- a D2H copy issued when the kernel
 *   producing it is issued, queued behind it; the device copy is released
 *   once the copy is done and its last forward reader has run.
 * - Prefetch: "stream_swap-in prefetches successively until no GPU memory
 *   is available and the interrupt will be recovered after
 *   stream_swap-out releases some preceding memory occupancies" -- in
 *   backward order of need, from the first backward op on; a prefetch
 *   whose block cannot be allocated suspends the stream, and every
 *   release (a kernel completing, a copy completing) resumes it.
 * - Host memory "is allocated in pinned way" (ex_swap_out's copies are
 *   pinned).
 *
 * Modes: `naive` swaps every feature map "without regard to the
 * non-stall constraint" (section 6.3 A); `dynamic` first profiles the
 * workload under naive (the paper's nvprof epoch, a separate simulated
 * run of the same workload), fits the performance model, and pins the
 * feature maps whose prefetch would stall compute: Algorithm 2's step at
 * the run's batch (ac_pin_at, policies/accudnn_model.c).
 *
 * What the executor is asked and refuses is counted: offloads refused,
 * prefetches suspended, and prefetched feature maps given back when a
 * compute allocation found the pool full of them (the runtime's only
 * fallback: the prefetch stream ran ahead of compute).
 */
#include "../sim/ex.h"
#include "accudnn.h"
#include "accudnn_model.h"
#include "pol.h"

#include <assert.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum ad_mode { AD_NAIVE, AD_DYNAMIC };
static const char *const ad_mode_names[] = {"naive", "dynamic", NULL};

struct accudnn_params {
	int mode; /* enum ad_mode */
};

static const struct prm_def accudnn_params[] = {
	{"mode", PRM_ENUM, "dynamic", 0, 0, ad_mode_names,
	 "naive (swap every feature map, no stall check) or dynamic (pin "
	 "the feature maps whose prefetch would stall compute, from the "
	 "performance model of a profiling pass: Algorithm 2's step)",
	 offsetof(struct accudnn_params, mode)},
	PRM_END,
};

#define AD_NONE UINT32_MAX

/* Per tensor. */
struct ad_tensor {
	bool swap;	   /* a feature map this run swaps */
	bool prefetched;   /* brought back by the prefetch stream this
			      iteration */
	uint32_t need;	   /* its first backward reader: the op its
			      prefetch serves */
	uint32_t fwd_last; /* op after which its device copy is released:
			      its last forward reader (its producer when
			      none) */
	uint32_t queue;	   /* its index in the prefetch queue */
	eng_event ready;   /* its prefetch's arrival (this iteration) */
};

struct accudnn {
	struct accudnn_params prm; /* copy of the parameters */
	struct ad_tensor *t;	   /* per tensor */
	uint32_t *queue;	   /* swapped feature maps in backward order of
				      need (first backward reader) */
	uint32_t n_queue;	   /* how many */
	uint32_t *rel_at;	   /* per op + 1: rel_list[rel_at[o] ..
				      rel_at[o+1]) are released after op o */
	uint32_t *rel_list;	   /* tensor ids */
	uint64_t *alloc_before;	   /* per op + 1: bytes the ops before it
				      allocate for their outputs (a prefix
				      sum): the room a prefetch must leave
				      for the ops that run before the one
				      it serves */
	uint32_t next_op;	   /* the next op of the iteration to be
				      prepared */
	uint32_t head;		   /* next queue entry to prefetch */
	bool backward;		   /* the prefetch stream runs */
	bool suspended;		   /* a prefetch found no memory */
	/* the plan */
	uint32_t n_fm;		   /* feature maps of the workload */
	uint32_t n_pinned;	   /* of which pinned (dynamic) */
	double pred_iter;	   /* dynamic: predicted t_iter, s (eq 2) */
	uint64_t pinned_bytes;	   /* dynamic: bytes of the pinned maps */
	uint32_t n_violations;	   /* dynamic: processes still violating (6)
				      once nothing more could be pinned */
	uint64_t area;		   /* the active area the swap-in stream fills
				      (section 3.3.2), parameters and pinned
				      maps included */
	bool profiled;		   /* dynamic: a model was fitted (the
				      profiling pass trained, or the
				      tuner's plan was given) */
	const struct accudnn_plan *given; /* the tuner's strategy, deployed
					     as it is (accudnn_deploy) */
	struct ac_fit_memo *fits;  /* dynamic: the experiment's fitted
				      models (accudnn_share_fits), or NULL */
	bool stall_free;	   /* dynamic: no violation left, so
				      pred_iter is equation 2 */
	char why[160];		   /* dynamic: why nothing was pinned, if so */
	/* statistics, whole run */
	uint64_t offloads, offload_bytes; /* offloads issued */
	uint64_t refused;		  /* offloads/releases refused */
	uint64_t prefetches;		  /* prefetches issued */
	uint64_t suspensions;		  /* times the swap-in stream was
					     suspended for want of room */
	uint64_t undone;		  /* prefetched maps given back */
	uint64_t kept;			  /* maps whose release the swap-in
					     stream took back (still being
					     offloaded when it reached them) */
	uint64_t iters;			  /* iterations begun */
};

static int accudnn_init(struct pol *p, gms_err *err)
{
	struct accudnn *s = calloc(1, sizeof *s);
	if (!s)
		return gms_errf(err, "out of memory");
	s->prm = *(const struct accudnn_params *)p->params;
	p->priv = s;
	return 0;
}

static void accudnn_fini(struct pol *p)
{
	struct accudnn *s = p->priv;
	if (!s)
		return;
	free(s->t);
	free(s->queue);
	free(s->rel_at);
	free(s->rel_list);
	free(s->alloc_before);
	free(s);
	p->priv = NULL;
}

/* "we first allocate all the given memory budget as an integrated buffer
 * pool with one cudaMalloc() call" (section 5) */
static const char *accudnn_allocator(const struct pol *p)
{
	(void)p;
	return "pool-bestfit";
}

/* ---- the profiling pass (dynamic) ------------------------------------ */

/* Samples of a profiling pass: every kernel and copy of its iterations
 * (section 3.2, dynamic information 1 and 2). */
struct ad_prof {
	const struct wl_workload *wl; /* the workload run */
	struct ac_sample *kern, *copy; /* samples */
	size_t n_kern, n_copy, cap_kern, cap_copy;
	bool oom;		       /* out of memory (an allocation) */
};

static void prof_push(struct ac_sample **a, size_t *n, size_t *cap,
		      struct ac_sample x, bool *oom)
{
	if (*n == *cap) {
		size_t c = *cap ? 2 * *cap : 1024;
		struct ac_sample *b = realloc(*a, c * sizeof *b);
		if (!b) {
			*oom = true;
			return;
		}
		*a = b;
		*cap = c;
	}
	(*a)[(*n)++] = x;
}

static void prof_span(void *obj, enum eng_q q, const struct eng_item *it,
		      sim_time_t start, sim_time_t end)
{
	struct ad_prof *pr = obj;
	/* a span under the clock's 1 ns resolution says nothing of a rate
	 * (the test profile's tiny kernels): left out, as a profiler's
	 * resolution would */
	if (end <= start)
		return;
	if (it->type == ENG_KERNEL && q == ENG_COMPUTE && it->kind == 0) {
		const struct wl_op *op = &pr->wl->ops[it->tag];
		prof_push(&pr->kern, &pr->n_kern, &pr->cap_kern,
			  (struct ac_sample){op->type, op->flops,
					     (double)(end - start)},
			  &pr->oom);
	} else if (it->type == ENG_COPY && (q == ENG_H2D || q == ENG_D2H)) {
		prof_push(&pr->copy, &pr->n_copy, &pr->cap_copy,
			  (struct ac_sample){0, (double)it->bytes,
					     (double)(end - start)},
			  &pr->oom);
	}
}

extern const struct pol_ops pol_accudnn_ops;

/* Run `cfg` (its workload, hardware, budget) under accudnn naive for one
 * iteration, collecting samples into pr. Returns 1 when it trained, 0 on
 * an OOM, -1 with err on a failure. */
static int profile_pass(const struct ex_cfg *base, struct ad_prof *pr,
			gms_err *err)
{
	struct accudnn_params prm = {.mode = AD_NAIVE};
	struct pol child = {.ops = &pol_accudnn_ops, .params = &prm};
	snprintf(child.label, sizeof child.label, "accudnn(mode=naive)");
	if (pol_accudnn_ops.init(&child, err) < 0)
		return -1;
	struct ex_observer obs = {.obj = pr, .span = prof_span};
	struct ex_cfg cfg = *base;
	cfg.pol = &child;
	cfg.obs = &obs;
	cfg.iterations = 1;
	cfg.warmup = 0;
	pr->wl = cfg.wl;
	struct st_run r;
	int rc = ex_run(&cfg, &r, err);
	pol_accudnn_ops.fini(&child);
	bool fits = rc == 0 && !r.oom.hit && r.n_iter == 1;
	st_run_free(&r);
	if (rc < 0)
		return gms_err_prefix(err, "accudnn profiling pass");
	if (pr->oom)
		return gms_errf(err, "accudnn profiling pass: out of memory");
	return fits;
}

static void prof_free(struct ad_prof *pr)
{
	free(pr->kern);
	free(pr->copy);
	memset(pr, 0, sizeof *pr);
}

int accudnn_prefit(const struct pol *p, const struct ex_cfg *cfg,
		   struct ac_fit_memo *m, gms_err *err)
{
	const struct accudnn *s = p->ops == &pol_accudnn_ops ? p->priv : NULL;
	if (!s || s->prm.mode != AD_DYNAMIC || s->given)
		return 0; /* no profiling pass in its plan (accudnn_plan) */
	/* the pass plan_dynamic makes: ex_config() is the run's cfg as
	 * given (ex_run copies it whole before the plan hook) */
	struct ad_prof pr = {0};
	int rc = profile_pass(cfg, &pr, err);
	struct ac_perf perf;
	if (rc == 1 && ac_perf_fit_memo(m, pr.kern, pr.n_kern, pr.copy,
					pr.n_copy, &perf, err) < 0)
		rc = -1;
	prof_free(&pr);
	return rc;
}

/* The performance model from one pass at the run's own batch, and
 * Algorithm 2's pinning step for that batch. */
static int plan_dynamic(struct accudnn *s, struct ex *ex,
			const struct ac_gmap *g, bool *pinned, gms_err *err)
{
	struct ad_prof pr = {0};
	int fits = profile_pass(ex_config(ex), &pr, err);
	if (fits < 0) {
		prof_free(&pr);
		return -1;
	}
	if (!fits) {
		snprintf(s->why, sizeof s->why,
			 "the naive profiling pass ran out of memory");
		prof_free(&pr);
		return 0; /* the run goes ahead naive and reports its OOM */
	}
	s->profiled = true;
	struct ac_perf perf = {0};
	struct ac_strategy st = {0};
	struct mem_stats ms;
	ex_mem_stats(ex, &ms);
	int rc = ac_perf_fit_memo(s->fits, pr.kern, pr.n_kern, pr.copy,
				  pr.n_copy, &perf, err);
	if (rc == 0)
		rc = ac_pin_at(g, &perf, ms.budget, g->k_base, &st, err);
	if (rc == 0) {
		for (size_t i = 0; i < g->n_fm; i++)
			if (st.pinned && st.pinned[i]) {
				pinned[g->fm[i].tensor] = true;
				s->pinned_bytes += g->fm[i].bytes;
			}
		s->n_pinned = st.n_pinned;
		s->n_violations = st.n_violations;
		s->pred_iter = st.t_iter;
		s->stall_free = st.stall_free;
	}
	ac_strategy_free(&st);
	prof_free(&pr);
	return rc;
}

/* The tuner's strategy (accudnn_deploy): pin exactly its feature maps,
 * and judge it with its own fitted model on this run's GMAP -- the
 * violations found here are reported beside the tuner's. */
static int plan_given(struct accudnn *s, struct ex *ex,
		      const struct ac_gmap *g, bool *pinned, gms_err *err)
{
	const struct accudnn_plan *pl = s->given;
	if (g->k_base != pl->k || g->n_fm != pl->n_fm)
		return gms_errf(err, "accudnn: the tuner's strategy is for "
				     "batch %lld with %u feature maps; the "
				     "run is at batch %lld with %zu",
				(long long)pl->k, pl->n_fm,
				(long long)g->k_base, g->n_fm);
	for (size_t i = 0; i < g->n_fm; i++)
		if (g->fm[i].tensor != pl->fm_tensor[i])
			return gms_errf(err, "accudnn: the tuner's feature "
					     "map %zu is tensor %u, the run's "
					     "%u: not the same network",
					i, pl->fm_tensor[i], g->fm[i].tensor);
	struct mem_stats ms;
	ex_mem_stats(ex, &ms);
	struct ac_strategy st = {0};
	if (ac_assess(g, &pl->perf, ms.budget, pl->k, pl->pinned, &st, err) <
	    0)
		return -1;
	s->profiled = true;
	for (size_t i = 0; i < g->n_fm; i++)
		if (pl->pinned[i]) {
			pinned[g->fm[i].tensor] = true;
			s->pinned_bytes += g->fm[i].bytes;
		}
	s->n_pinned = pl->n_pinned;
	s->n_violations = st.n_violations;
	s->pred_iter = st.t_iter;
	s->stall_free = st.stall_free;
	ac_strategy_free(&st);
	return 0;
}

int accudnn_deploy(struct pol *p, const struct accudnn_plan *plan,
		   gms_err *err)
{
	if (p->ops != &pol_accudnn_ops)
		return gms_errf(err, "policy %s: the tuner's strategy is "
				     "accudnn's",
				p->label);
	struct accudnn *s = p->priv;
	if (s->prm.mode != AD_DYNAMIC)
		return gms_errf(err, "policy %s: the tuner's strategy pins "
				     "feature maps: mode dynamic only",
				p->label);
	s->given = plan;
	return 0;
}

void accudnn_share_fits(struct pol *p, struct ac_fit_memo *m)
{
	if (p->ops == &pol_accudnn_ops)
		((struct accudnn *)p->priv)->fits = m;
}

void accudnn_plan_free(struct accudnn_plan *plan)
{
	if (!plan)
		return;
	free(plan->fm_tensor);
	free(plan->pinned);
	free(plan);
}

/* ---- plan: which feature maps, released where, prefetched in what order */

/* A prefetch-queue entry being sorted. */
struct ad_need {
	uint32_t need; /* first backward reader */
	uint32_t t;    /* tensor */
};

static int cmp_need(const void *a, const void *b)
{
	const struct ad_need *x = a, *y = b;
	if (x->need != y->need)
		return x->need < y->need ? -1 : 1;
	return x->t < y->t ? -1 : x->t > y->t;
}

/* First backward reader of t (the op its prefetch serves). */
static uint32_t first_bwd_reader(const struct wl_workload *wl, uint32_t t)
{
	const struct wl_tensor *x = &wl->tensors[t];
	for (uint32_t r = 0; r < x->n_readers; r++)
		if (wl->ops[x->readers[r]].phase != WL_FWD)
			return x->readers[r];
	return AD_NONE;
}

static int accudnn_plan(struct pol *p, struct ex *ex, gms_err *err)
{
	struct accudnn *s = p->priv;
	const struct wl_workload *wl = ex_workload(ex);
	uint32_t nt = wl->n_tensors;
	s->t = calloc(nt, sizeof *s->t);
	s->queue = malloc((nt ? nt : 1) * sizeof *s->queue);
	s->rel_at = calloc(wl->n_ops + 2, sizeof *s->rel_at);
	s->rel_list = malloc((nt ? nt : 1) * sizeof *s->rel_list);
	s->alloc_before = calloc(wl->n_ops + 1, sizeof *s->alloc_before);
	bool *pinned = calloc(nt ? nt : 1, sizeof *pinned);
	if (!s->t || !s->queue || !s->rel_at || !s->rel_list || !pinned ||
	    !s->alloc_before) {
		free(pinned);
		return gms_errf(err, "out of memory");
	}
	bool *pers = malloc((nt ? nt : 1) * sizeof *pers);
	if (!pers) {
		free(pinned);
		return gms_errf(err, "out of memory");
	}
	for (uint32_t t = 0; t < nt; t++)
		pers[t] = ex_tensor_persistent(ex, t);
	struct ac_gmap g = {0};
	int rc = ac_gmap_build(wl, pers, &g, err);
	free(pers);
	if (rc == 0 && s->given)
		rc = plan_given(s, ex, &g, pinned, err);
	else if (rc == 0 && s->prm.mode == AD_DYNAMIC)
		rc = plan_dynamic(s, ex, &g, pinned, err);
	/* "an active area with size of peak memory usage is assigned in GPU
	 * memory to serve cyclically for per layer's computation" (3.3.2):
	 * the swap-in stream works inside it, beside the parameters and the
	 * pinned feature maps */
	s->area = g.m_para + g.m_peak + s->pinned_bytes;
	ac_gmap_free(&g);
	if (rc < 0) {
		free(pinned);
		return -1;
	}
	for (uint32_t t = 0; t < nt; t++) {
		if (ex_tensor_persistent(ex, t) || !ac_is_feature_map(wl, t))
			continue;
		s->n_fm++;
		if (pinned[t])
			continue;
		struct ad_tensor *x = &s->t[t];
		const struct wl_tensor *w = &wl->tensors[t];
		x->swap = true;
		x->need = first_bwd_reader(wl, t);
		x->fwd_last = w->producer;
		for (uint32_t r = 0; r < w->n_readers; r++)
			if (wl->ops[w->readers[r]].phase == WL_FWD)
				x->fwd_last = w->readers[r];
		s->rel_at[x->fwd_last + 1]++;
		s->queue[s->n_queue++] = t;
	}
	free(pinned);
	for (uint32_t o = 0; o < wl->n_ops; o++) {
		uint64_t b = 0;
		for (uint32_t i = 0; i < wl->ops[o].n_out; i++)
			if (!ex_tensor_persistent(ex, wl->ops[o].out[i]))
				b += wl->tensors[wl->ops[o].out[i]].bytes;
		s->alloc_before[o + 1] = s->alloc_before[o] + b;
	}
	/* the release list, grouped by op (counting sort) */
	for (uint32_t o = 0; o < wl->n_ops; o++)
		s->rel_at[o + 1] += s->rel_at[o];
	for (uint32_t i = 0; i < s->n_queue; i++) {
		uint32_t t = s->queue[i];
		s->rel_list[s->rel_at[s->t[t].fwd_last]++] = t;
	}
	for (uint32_t o = wl->n_ops; o > 0; o--)
		s->rel_at[o] = s->rel_at[o - 1];
	s->rel_at[0] = 0;
	/* prefetch order: backward order of need, ties by tensor id */
	struct ad_need *nd = malloc((s->n_queue ? s->n_queue : 1) * sizeof *nd);
	if (!nd)
		return gms_errf(err, "out of memory");
	for (uint32_t i = 0; i < s->n_queue; i++)
		nd[i] = (struct ad_need){s->t[s->queue[i]].need,
					 s->queue[i]};
	qsort(nd, s->n_queue, sizeof *nd, cmp_need);
	for (uint32_t i = 0; i < s->n_queue; i++) {
		s->queue[i] = nd[i].t;
		s->t[nd[i].t].queue = i;
	}
	free(nd);
	return 0;
}

/* ---- the runtime ------------------------------------------------------ */

static void accudnn_iter_begin(struct pol *p, struct ex *ex, int iter)
{
	struct accudnn *s = p->priv;
	(void)ex;
	(void)iter;
	s->head = 0;
	s->next_op = 0;
	s->backward = false;
	s->suspended = false;
	for (uint32_t i = 0; i < s->n_queue; i++)
		s->t[s->queue[i]].prefetched = false;
	s->iters++;
}

/* The swap-in stream: prefetch in order of need while blocks can be had
 * ("prefetches successively until no GPU memory is available"). */
static void pump(struct accudnn *s, struct ex *ex)
{
	if (!s->backward)
		return;
	bool was = s->suspended;
	s->suspended = false;
	const struct wl_workload *wl = ex_workload(ex);
	while (s->head < s->n_queue) {
		uint32_t t = s->queue[s->head];
		enum ex_state st = ex_tensor_state(ex, t);
		if (st == TS_OUT || st == TS_SWAPPING_OUT) {
			/* "stream_swap-in manages the allocate and prefetch
			 * operations" (section 5), in layer order: the ops
			 * that run before the one t serves allocate first,
			 * so the prefetch leaves their outputs room (Algorithm
			 * 1's M_used_present + Seq_allocate <= M_budget,
			 * releases not counted), inside the active area. A
			 * map still being offloaded holds its block already:
			 * keeping it (the executor takes the release back, no
			 * copy) adds nothing, but must still leave the room. */
			uint32_t need = s->t[t].need;
			uint64_t room = need > s->next_op
						? s->alloc_before[need] -
							  s->alloc_before[s->next_op]
						: 0;
			struct mem_stats ms;
			ex_mem_stats(ex, &ms);
			uint64_t b = st == TS_OUT ? wl->tensors[t].bytes : 0;
			uint64_t cap = ms.budget < s->area ? ms.budget
							   : s->area;
			eng_event ev = ENG_EVENT_NONE;
			if (ms.allocated + room + b > cap ||
			    (ev = ex_swap_in(ex, t, ENG_EVENT_NONE)) ==
				    ENG_EVENT_NONE) {
				/* "the interrupt will be recovered after
				 * stream_swap-out releases some preceding
				 * memory occupancies" */
				s->suspended = true;
				s->suspensions += !was; /* a new suspension */
				return;
			}
			if (st == TS_OUT) {
				s->t[t].prefetched = true;
				s->t[t].ready = ev;
				s->prefetches++;
			} else {
				s->t[t].prefetched = true; /* as if brought back */
				s->t[t].ready = ENG_EVENT_NONE;
				s->kept++;
			}
		}
		s->head++; /* IN already, or freed: nothing to bring back */
	}
}

/* Offload a feature map as its producer is issued (the copy queues
 * behind the kernel): "once a feature map generated, stream_swap-out
 * starts offload operation immediately". */
static void accudnn_on_access(struct pol *p, struct ex *ex,
			      const struct ex_access *a)
{
	struct accudnn *s = p->priv;
	if (!a->write || a->recompute || !s->t[a->tensor].swap)
		return;
	if (ex_swap_out(ex, a->tensor, 0) == ENG_EVENT_NONE) {
		s->refused++;
		return;
	}
	s->offloads++;
	s->offload_bytes += ex_workload(ex)->tensors[a->tensor].bytes;
}

/* The backward pass begins: the swap-in stream starts. */
static void accudnn_before_op(struct pol *p, struct ex *ex,
			      const struct wl_op *op)
{
	struct accudnn *s = p->priv;
	s->next_op = op->id;
	if (!s->backward && op->phase != WL_FWD) {
		s->backward = true;
		pump(s, ex);
	}
}

/* After a feature map's last forward reader: release its device copy
 * once the offload is done (a swap-out with release that copies nothing
 * more). Then every release resumes the swap-in stream. */
static void accudnn_after_op(struct pol *p, struct ex *ex,
			     const struct wl_op *op)
{
	struct accudnn *s = p->priv;
	s->next_op = op->id + 1;
	for (uint32_t k = s->rel_at[op->id]; k < s->rel_at[op->id + 1]; k++) {
		uint32_t t = s->rel_list[k];
		if (ex_tensor_state(ex, t) == TS_IN &&
		    ex_swap_out(ex, t, EX_RELEASE) == ENG_EVENT_NONE)
			s->refused++;
	}
	if (s->suspended || s->head < s->n_queue)
		pump(s, ex);
}

static void accudnn_on_copy_done(struct pol *p, struct ex *ex,
				 const struct ex_copy *c)
{
	struct accudnn *s = p->priv;
	if (c->dir == ENG_D2H && s->suspended)
		pump(s, ex); /* a release: room again */
}

/* Compute could not allocate. The prefetch stream may have filled the
 * pool with feature maps needed later: give back the one needed last
 * (its host copy is valid, so nothing is copied; one still arriving is
 * waited for first) and move the stream back to it. Otherwise wait for a
 * release in flight. */
static enum ex_verdict accudnn_on_alloc_fail(struct pol *p, struct ex *ex,
					     const struct ex_alloc_req *req)
{
	struct accudnn *s = p->priv;
	(void)req;
	for (uint32_t i = s->head; i-- > 0;) {
		uint32_t t = s->queue[i];
		if (!s->t[t].prefetched || ex_tensor_busy(ex, t))
			continue;
		if (ex_tensor_state(ex, t) == TS_SWAPPING_IN) {
			/* still arriving: wait for it, then give it back */
			ex_wait(ex, s->t[t].ready);
			return EX_RETRY;
		}
		if (ex_tensor_state(ex, t) != TS_IN)
			continue;
		if (ex_swap_out(ex, t, EX_RELEASE) == ENG_EVENT_NONE) {
			s->refused++;
			continue;
		}
		s->t[t].prefetched = false;
		s->undone++;
		s->head = i;
		/* freed now, or once its offload (still running) is done */
		return ex_tensor_state(ex, t) == TS_OUT ? EX_RETRY : EX_WAIT;
	}
	return EX_WAIT;
}

static void accudnn_report(struct pol *p, FILE *out)
{
	const struct accudnn *s = p->priv;
	uint64_t n = s->iters ? s->iters : 1;
	fprintf(out, "mode %s\nfeature_maps %u\nswapped %u\npinned %u\n",
		ad_mode_names[s->prm.mode], s->n_fm, s->n_queue, s->n_pinned);
	fprintf(out, "active_area_bytes %llu\n", (unsigned long long)s->area);
	if (s->prm.mode == AD_DYNAMIC) {
		if (s->given)
			fprintf(out, "strategy tuner\nviolations_tuner %u\n",
				s->given->n_violations);
		else if (s->profiled)
			fputs("strategy profiled\n", out);
		/* equation 2 is stall-free; with violations left the
		 * prediction comes from t_ready (ac_t_iter_ready) */
		if (s->profiled)
			fprintf(out, "predicted_iter_ns %.0f\nprediction %s\n"
				     "pinned_bytes %llu\nviolations_left %u\n",
				s->pred_iter * 1e9,
				s->stall_free ? "eq2" : "t_ready",
				(unsigned long long)s->pinned_bytes,
				s->n_violations);
		if (s->why[0])
			fprintf(out, "not_pinned %s\n", s->why);
	}
	fprintf(out,
		"offloads_per_iter %llu\noffload_bytes_per_iter %llu\n"
		"prefetches_per_iter %llu\nsuspensions_per_iter %llu\n"
		"prefetches_given_back %llu\nreleases_taken_back %llu\n"
		"refused %llu\n",
		(unsigned long long)(s->offloads / n),
		(unsigned long long)(s->offload_bytes / n),
		(unsigned long long)(s->prefetches / n),
		(unsigned long long)(s->suspensions / n),
		(unsigned long long)s->undone, (unsigned long long)s->kept,
		(unsigned long long)s->refused);
}

const struct pol_ops pol_accudnn_ops = {
	.name = "accudnn",
	.summary = "AccUDNN: offload feature maps as produced, prefetch in "
		   "backward order while memory allows; dynamic pins those "
		   "whose prefetch would stall",
	.params = accudnn_params,
	.params_size = sizeof(struct accudnn_params),
	.own_memory = true,
	.init = accudnn_init,
	.fini = accudnn_fini,
	.allocator = accudnn_allocator,
	.plan = accudnn_plan,
	.iter_begin = accudnn_iter_begin,
	.before_op = accudnn_before_op,
	.on_access = accudnn_on_access,
	.after_op = accudnn_after_op,
	.on_alloc_fail = accudnn_on_alloc_fail,
	.on_copy_done = accudnn_on_copy_done,
	.report = accudnn_report,
};

/* ---- the tuner (section 4; accudnn.h) ---------------------------------- */

/* Build the network at `batch`. */
static struct wl_workload *build_at(const struct accudnn_tune_in *in,
				    int64_t batch, gms_err *err)
{
	struct wl_gen_args a = in->args;
	a.batch = batch;
	return wl_gen_build(in->gen, &a, err);
}

/* The profiling passes: "we set minibatch size as 1/8, 1/4, 1/2, 2/3 and
 * 1 of the maximal trainable minibatch size respectively in the first
 * five epochs and employ the naive swap out/in strategy" (section 3.2). */
static int profile_all(const struct accudnn_tune_in *in, uint64_t budget,
		       int64_t k_max, struct ad_prof *all, int *runs,
		       gms_err *err)
{
	static const double frac[] = {1.0 / 8, 1.0 / 4, 1.0 / 2, 2.0 / 3, 1};
	int64_t last = 0;
	for (size_t f = 0; f < sizeof frac / sizeof *frac; f++) {
		int64_t k = (int64_t)floor((double)k_max * frac[f]);
		if (k < 1 || k == last)
			continue;
		last = k;
		struct wl_workload *w = build_at(in, k, err);
		if (!w)
			return -1;
		struct ex_cfg cfg = {.hw = in->hw, .wl = w, .budget = budget,
				     .iterations = 1, .warmup = 0};
		struct ad_prof pr = {0};
		int fits = profile_pass(&cfg, &pr, err);
		wl_free(w);
		if (fits < 0) {
			prof_free(&pr);
			return -1;
		}
		(*runs)++;
		if (fits) { /* an OOM pass measured only part: left out */
			for (size_t i = 0; i < pr.n_kern; i++)
				prof_push(&all->kern, &all->n_kern,
					  &all->cap_kern, pr.kern[i], &all->oom);
			for (size_t i = 0; i < pr.n_copy; i++)
				prof_push(&all->copy, &all->n_copy,
					  &all->cap_copy, pr.copy[i], &all->oom);
		}
		prof_free(&pr);
		if (all->oom)
			return gms_errf(err, "out of memory");
	}
	if (all->n_kern == 0)
		return gms_errf(err, "no profiling pass trained (largest "
				     "batch by the GMAP: %lld)",
				(long long)k_max);
	return 0;
}

/* The strategy Algorithm 2 chose, with the model it was chosen by, for
 * the runtime (accudnn_deploy). */
static int make_plan(const struct ac_gmap *g, const struct ac_perf *perf,
		     const struct ac_strategy *st, struct accudnn_tune_out *out,
		     gms_err *err)
{
	struct accudnn_plan *pl = calloc(1, sizeof *pl);
	size_t n = g->n_fm ? g->n_fm : 1;
	if (pl) {
		pl->fm_tensor = malloc(n * sizeof *pl->fm_tensor);
		pl->pinned = calloc(n, sizeof *pl->pinned);
	}
	if (!pl || !pl->fm_tensor || !pl->pinned) {
		accudnn_plan_free(pl);
		return gms_errf(err, "out of memory");
	}
	pl->perf = *perf;
	pl->k = st->k_star;
	pl->n_fm = (uint32_t)g->n_fm;
	for (size_t i = 0; i < g->n_fm; i++) {
		pl->fm_tensor[i] = g->fm[i].tensor;
		pl->pinned[i] = st->pinned && st->pinned[i];
	}
	pl->n_pinned = st->n_pinned;
	pl->n_violations = st->n_violations;
	pl->t_iter = st->t_iter;
	out->plan = pl;
	return 0;
}

int accudnn_tune(const struct accudnn_tune_in *in, struct accudnn_tune_out *out,
		 gms_err *err)
{
	memset(out, 0, sizeof *out);
	uint64_t budget = in->budget ? in->budget
				     : in->hw->capacity - in->hw->reserved;
	struct wl_workload *w = build_at(in, in->args.batch, err);
	if (!w)
		return -1;
	struct ac_gmap g = {0};
	struct ac_perf perf = {0};
	struct ac_strategy st = {0};
	struct ad_prof all = {0};
	int rc = ac_gmap_build(w, NULL, &g, err);
	if (rc == 0) {
		out->k_base = g.k_base;
		out->n_fm = (uint32_t)g.n_fm;
		rc = ac_k_max(&g, budget, &out->k_max, err);
	}
	if (rc == 0)
		rc = profile_all(in, budget, out->k_max, &all,
				 &out->profile_runs, err);
	if (rc == 0)
		rc = ac_perf_fit_memo(in->fits, all.kern, all.n_kern, all.copy,
				      all.n_copy, &perf, err);
	if (rc == 0)
		rc = ac_search(&g, &perf, budget, &st, err);
	if (rc == 0)
		rc = make_plan(&g, &perf, &st, out, err);
	if (rc == 0) {
		out->k_star = st.k_star;
		out->n_pinned = st.n_pinned;
		out->n_violations = st.n_violations;
		out->t_iter_pred = st.t_iter;
		/* (8) relates a base minibatch and its rate to k*: the
		 * base is the batch lr_base was set for, which need not be
		 * the batch the tuner started from */
		int64_t lb = in->lr_batch > 0 ? in->lr_batch : g.k_base;
		out->lr = ac_learning_rate(in->lr_base, in->c,
					   (double)st.k_star / (double)lb);
	}
	ac_strategy_free(&st);
	ac_gmap_free(&g);
	prof_free(&all);
	wl_free(w);
	return rc;
}
