/*
 * accudnn_model.c - AccUDNN's memory optimizer and hyperparameter tuner
 * (accudnn_model.h; ../shared/papers/accudnn.md sections 3 and 4) as pure
 * functions: the GMAP, the performance model, Algorithm 1, constraint
 * (6), Algorithm 2 and equation 9.
 *
 * READINGS where the paper leaves a choice (each is repeated where it is
 * made):
 *  - Seq_allocate / Seq_release are per layer process, and "usage at
 *    process j" is everything allocated up to and including j minus
 *    everything released after processes before j.
 *  - Parameter gradients are in m_para with parameters and optimizer
 *    state: their size does not depend on the batch.
 *  - Equation 2's term is evaluated per op (the sum over a process's ops,
 *    each on its own type's curve, with its launch cost), which is the
 *    paper's FLOPs_j / FLOPS(FLOPs_j) for a one-op process.
 *  - Algorithm 1's traversal of Seq_release stops at j - 1.
 *  - Algorithm 2's k_max is the paper's formula, never above what (4)
 *    allows at the all-swap peak; pins are kept as k falls.
 *
 * COMPLEXITY. n = ops + tensors + reads, P = processes, F = feature maps.
 * ac_gmap_build: O(n). Algorithm 1: O(P log P) (prefix sums, a monotone
 * pointer for j_current and a binary search for j_satisfied). Algorithm
 * 2: O(steps * (P log P) + F) with steps = k_max - k*, where the paper
 * states O(N^2) for its Algorithm 2 (section 6.3 F).
 *
 * DETERMINISM. Only sums in a fixed order and comparisons of them.
 */
#include "accudnn_model.h"

#include "../calibrate/calib.h"

#include <assert.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- the GMAP (section 3.2, static information 1-3) ------------------ */

/* Memory classes at the peak (Algorithm 2's k_max needs the split). */
enum { MC_FM, MC_WS, MC_OTHER, MC_COUNT };

/* Working arrays of ac_gmap_build. */
struct build {
	uint32_t *proc;		   /* per op: its layer process */
	uint64_t *alloc[MC_COUNT]; /* per process and class: allocated */
	uint64_t *rel[MC_COUNT];   /* per process and class: released */
};

static void build_free(struct build *b)
{
	free(b->proc);
	for (int c = 0; c < MC_COUNT; c++) {
		free(b->alloc[c]);
		free(b->rel[c]);
	}
}

/* Does op o extend process `cur` (first op f)? "A layer process is a
 * maximal run of consecutive ops with the same layer and phase"; an
 * update op directly after its layer's backward run joins it (the header:
 * "update ops belong to the backward process of their layer"), otherwise
 * update ops of one layer make their own process. */
static bool same_process(const struct wl_op *f, const struct wl_op *o)
{
	if (o->layer != f->layer)
		return false;
	return o->phase == f->phase ||
	       (o->phase == WL_UPD && f->phase == WL_BWD);
}

/* The processes: fills g->layer (ops, FLOPs, type) and b->proc. */
static int split_processes(const struct wl_workload *w, struct ac_gmap *g,
			   struct build *b, gms_err *err)
{
	size_t n = 0;
	/* count, then fill: one pass each */
	for (uint32_t o = 0, first = 0; o < w->n_ops; o++) {
		if (o == 0 || !same_process(&w->ops[first], &w->ops[o])) {
			n++;
			first = o;
		}
	}
	g->layer = calloc(n ? n : 1, sizeof *g->layer);
	g->op = calloc(w->n_ops ? w->n_ops : 1, sizeof *g->op);
	b->proc = calloc(w->n_ops ? w->n_ops : 1, sizeof *b->proc);
	if (!g->layer || !g->op || !b->proc)
		return gms_errf(err, "accudnn: out of memory");
	g->n = n;
	g->n_op = w->n_ops;
	size_t j = 0;
	double best = -1;
	for (uint32_t o = 0, first = 0; o < w->n_ops; o++) {
		const struct wl_op *op = &w->ops[o];
		if (o > 0 && !same_process(&w->ops[first], op)) {
			j++;
			first = o;
			best = -1;
		}
		struct ac_layer *L = &g->layer[j];
		if (L->n_ops == 0)
			L->first_op = o;
		L->n_ops++;
		L->flops += op->flops;
		/* "categorized to multiple groups by layer type": the type of
		 * its op with the most FLOPs, ties to the first */
		if (op->flops > best) {
			best = op->flops;
			L->type = op->type;
		}
		/* the largest workspace of its ops; an op with algorithm
		 * choices takes its fastest one's (wl_fastest_algo: the
		 * performance-optimal choice the runtime makes) */
		uint64_t ws = wl_op_workspace(op, wl_fastest_algo(op));
		if (ws > L->workspace)
			L->workspace = ws;
		g->op[o] = (struct ac_op){.type = op->type, .flops = op->flops,
					  .scales = op->phase != WL_UPD};
		b->proc[o] = (uint32_t)j;
	}
	return 0;
}

/* The process where tensor x is finally released: after its last reader
 * or its release point (wl_tensor.release_after), whichever is later;
 * `dflt` (its producer's process) when it has neither. */
static uint32_t final_release(const struct wl_tensor *x, const uint32_t *proc,
			      uint32_t dflt)
{
	uint32_t r = dflt;
	if (x->n_readers > 0 && proc[x->readers[x->n_readers - 1]] > r)
		r = proc[x->readers[x->n_readers - 1]];
	if (x->release_after != WL_NONE && proc[x->release_after] > r)
		r = proc[x->release_after];
	return r;
}

/* Add a live range [a, r] of `bytes` in class c. */
static void live(struct build *b, int c, uint32_t a, uint32_t r,
		 uint64_t bytes)
{
	b->alloc[c][a] += bytes;
	b->rel[c][r] += bytes;
}

/* Feature maps: "every feature map offloaded as soon as produced and
 * prefetched for its first backward reader". Fills g->fm (by producing
 * op, hence by `produced`) and their live ranges. */
static int feature_maps(const struct wl_workload *w, struct ac_gmap *g,
			struct build *b, gms_err *err)
{
	size_t nf = 0;
	for (uint32_t t = 0; t < w->n_tensors; t++)
		nf += ac_is_feature_map(w, t);
	g->fm = calloc(nf ? nf : 1, sizeof *g->fm);
	if (!g->fm)
		return gms_errf(err, "accudnn: out of memory");
	for (uint32_t o = 0; o < w->n_ops; o++) {
		for (uint32_t i = 0; i < w->ops[o].n_out; i++) {
			uint32_t t = w->ops[o].out[i];
			if (!ac_is_feature_map(w, t))
				continue;
			const struct wl_tensor *x = &w->tensors[t];
			struct ac_fm *f = &g->fm[g->n_fm++];
			f->tensor = t;
			f->bytes = x->bytes;
			f->produced = b->proc[o];
			f->fwd_last = f->produced;
			if (x->last_fwd_reader != WL_NONE &&
			    b->proc[x->last_fwd_reader] > f->fwd_last)
				f->fwd_last = b->proc[x->last_fwd_reader];
			f->needed = UINT32_MAX;
			for (uint32_t r = 0; r < x->n_readers; r++)
				if (w->ops[x->readers[r]].phase != WL_FWD) {
					f->needed = b->proc[x->readers[r]];
					break;
				}
			f->bwd_last = final_release(x, b->proc, f->needed);
			/* "a feature map's device copy is released after its
			 * last forward reader has run, and after its
			 * offload" (section 5: "once a feature map generated,
			 * stream_swap-out starts offload operation
			 * immediately"; Seq_release is per process, so the
			 * offload is over by the end of fwd_last here) */
			live(b, MC_FM, f->produced, f->fwd_last, f->bytes);
			g->layer[f->produced].offload += f->bytes;
			/* the prefetched copy: allocated for `needed`,
			 * released after its last backward reader */
			live(b, MC_FM, f->needed, f->bwd_last, f->bytes);
			g->layer[f->needed].prefetch += f->bytes;
		}
	}
	return 0;
}

/* Is t whole-run (m_para)? persistent[t], or parameters and optimizer
 * state when persistent is NULL; and parameter gradients always: "the
 * memory footprint of model parameters and their gradients are merely
 * related to the network depth" (section 1), so they do not scale with
 * the batch and belong with m_para, not the active area. A feature map
 * never is (ac_is_feature_map is the one definition the runtime shares:
 * it swaps every one of them, even a framework's held blob). */
static bool whole_run(const struct wl_workload *w, const bool *persistent,
		      uint32_t t)
{
	enum wl_kind k = w->tensors[t].kind;
	if (k == WL_PARAM_GRAD)
		return true;
	return persistent ? persistent[t]
			  : (k == WL_PARAM || k == WL_OPT_STATE);
}

int ac_gmap_build(const struct wl_workload *w, const bool *persistent,
		  struct ac_gmap *g, gms_err *err)
{
	memset(g, 0, sizeof *g);
	if (!w->finalized)
		return gms_errf(err, "accudnn: workload %s is not finalized",
				w->name);
	if (w->n_ops == 0)
		return gms_errf(err, "accudnn: workload %s has no ops",
				w->name);
	g->k_base = w->batch;
	struct build b = {0};
	int rc = split_processes(w, g, &b, err);
	size_t n = g->n;
	for (int c = 0; c < MC_COUNT && rc == 0; c++) {
		b.alloc[c] = calloc(n, sizeof *b.alloc[c]);
		b.rel[c] = calloc(n, sizeof *b.rel[c]);
		if (!b.alloc[c] || !b.rel[c])
			rc = gms_errf(err, "accudnn: out of memory");
	}
	if (rc == 0)
		rc = feature_maps(w, g, &b, err);
	if (rc < 0) {
		build_free(&b);
		ac_gmap_free(g);
		return -1;
	}
	/* everything else: allocated with its producer's process (an input
	 * with its first reader's: its storage is needed from there on),
	 * released after its last reader's (Seq_release: "tensors whose last
	 * reader is in j") */
	for (uint32_t t = 0; t < w->n_tensors; t++) {
		const struct wl_tensor *x = &w->tensors[t];
		if (ac_is_feature_map(w, t))
			continue;
		if (whole_run(w, persistent, t)) {
			g->m_para += x->bytes;
			continue;
		}
		uint32_t first = x->producer != WL_NONE ? x->producer
			       : x->n_readers > 0	? x->readers[0]
							: WL_NONE;
		if (first == WL_NONE)
			continue; /* never touched in the iteration */
		uint32_t a = b.proc[first];
		live(&b, MC_OTHER, a, final_release(x, b.proc, a), x->bytes);
	}
	/* a workspace lives for its process only */
	for (size_t j = 0; j < n; j++)
		live(&b, MC_WS, (uint32_t)j, (uint32_t)j,
		     g->layer[j].workspace);
	/* "A peak layer-wise memory usage can be obtained by traversing the
	 * allocate/release operations in the global memory-object access
	 * pattern" (3.1): usage(j) = allocated through j - released after
	 * processes before j; per class, for the split at the peak */
	uint64_t use[MC_COUNT] = {0};
	for (size_t j = 0; j < n; j++) {
		struct ac_layer *L = &g->layer[j];
		uint64_t u = 0;
		for (int c = 0; c < MC_COUNT; c++) {
			if (j > 0)
				use[c] -= b.rel[c][j - 1];
			use[c] += b.alloc[c][j];
			u += use[c];
			L->alloc += b.alloc[c][j];
			L->release += b.rel[c][j];
		}
		if (u > g->m_peak || j == 0) {
			g->m_peak = u;
			g->peak_at = (uint32_t)j;
			g->m_fm_peak = use[MC_FM];
			g->m_ws_peak = use[MC_WS];
			g->m_others_peak = use[MC_OTHER];
		}
	}
	build_free(&b);
	return 0;
}

void ac_gmap_free(struct ac_gmap *g)
{
	free(g->layer);
	free(g->fm);
	free(g->op);
	memset(g, 0, sizeof *g);
}

/* ---- performance model (section 3.3) --------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Fit one op type from its samples x[0..n) (FLOPs), ns[0..n). */
static void fit_type(struct ac_perf *p, uint32_t t, double *x, double *ns,
		     size_t n, double *scratch)
{
	/* "All the collected information tuples, per layer's FLOPs and
	 * computation time [...] are categorized to multiple groups by layer
	 * type [...]. Via fitting, we can get the general performance trend"
	 * (3.3.1): the curve of Figure 5 is hw.h's saturating form, which
	 * cal_fit_compute fits. It needs FLOPs > 0 and at least AC_FIT_MIN
	 * distinct points to pin down four parameters. */
	size_t m = 0;
	double sf = 0, st = 0;
	for (size_t i = 0; i < n; i++) {
		sf += x[i];
		st += ns[i];
		if (x[i] > 0) {
			x[m] = x[i];
			ns[m] = ns[i];
			scratch[m++] = x[i];
		}
	}
	qsort(scratch, m, sizeof *scratch, cmp_double);
	size_t distinct = 0;
	for (size_t i = 0; i < m; i++)
		distinct += i == 0 || scratch[i] != scratch[i - 1];
	p->have[t] = true;
	struct cal_compute_fit f;
	gms_err e;
	if (distinct >= AC_FIT_MIN && cal_fit_compute(x, ns, m, &f, &e) == 0) {
		p->fitted[t] = true;
		p->peak[t] = f.peak;
		p->sat[t] = f.sat;
		p->alpha[t] = f.alpha;
		p->launch[t] = f.launch_ns;
		return;
	}
	/* too few distinct sizes (or no fit): a constant rate, total FLOPs /
	 * total time, no launch; a type of zero-FLOP kernels costs its mean
	 * time per kernel, as a launch cost */
	p->sat[t] = 0;
	p->alpha[t] = 1;
	if (sf > 0 && st > 0) {
		p->peak[t] = sf * 1e9 / st;
		p->launch[t] = 0;
	} else {
		p->peak[t] = 0;
		p->launch[t] = st / (double)n;
	}
}

int ac_perf_fit(const struct ac_sample *kern, size_t n_kern,
		const struct ac_sample *copy, size_t n_copy, struct ac_perf *p,
		gms_err *err)
{
	memset(p, 0, sizeof *p);
	/* A pass with no copy is a network with no feature map to offload
	 * (nothing written in forward is read in backward): it has no
	 * Bandwidth_avail, and needs none; the search refuses a model
	 * without one only when there is a feature map to price (issue
	 * 38). */
	if (n_kern == 0)
		return gms_errf(err, "accudnn: the performance model needs "
				     "kernel samples (0 kernels, %zu copies)",
				n_copy);
	size_t cnt[OT_COUNT + 1] = {0};
	double sf = 0, st = 0;
	for (size_t i = 0; i < n_kern; i++) {
		if (kern[i].type >= OT_COUNT || !(kern[i].ns > 0) ||
		    !(kern[i].x >= 0))
			return gms_errf(err, "accudnn: kernel sample %zu: type "
					     "%u, %g FLOPs, %g ns",
					i, kern[i].type, kern[i].x, kern[i].ns);
		cnt[kern[i].type + 1]++;
		sf += kern[i].x;
		st += kern[i].ns;
	}
	p->rate_all = sf * 1e9 / st;
	/* counting sort by type: start[t] = cnt[t] after the prefix sum */
	for (int t = 0; t < OT_COUNT; t++)
		cnt[t + 1] += cnt[t];
	double *x = malloc(3 * n_kern * sizeof *x);
	if (!x)
		return gms_errf(err, "accudnn: out of memory");
	double *ns = x + n_kern, *scratch = ns + n_kern;
	size_t pos[OT_COUNT];
	memcpy(pos, cnt, sizeof pos);
	for (size_t i = 0; i < n_kern; i++) {
		size_t k = pos[kern[i].type]++;
		x[k] = kern[i].x;
		ns[k] = kern[i].ns;
	}
	for (uint32_t t = 0; t < OT_COUNT; t++)
		if (cnt[t + 1] > cnt[t])
			fit_type(p, t, x + cnt[t], ns + cnt[t],
				 cnt[t + 1] - cnt[t], scratch);
	free(x);
	/* "By averaging a group of actual transfer rates [...] a more
	 * down-to-earth PCIe bandwidth Bandwidth_avail [...] is obtained"
	 * (3.3.3): the mean of the rates, not total bytes / total time */
	double sum = 0;
	for (size_t i = 0; i < n_copy; i++) {
		if (!(copy[i].ns > 0) || !(copy[i].x > 0))
			return gms_errf(err, "accudnn: copy sample %zu: %g "
					     "bytes, %g ns",
					i, copy[i].x, copy[i].ns);
		sum += copy[i].x * 1e9 / copy[i].ns;
	}
	p->bandwidth = n_copy ? sum / (double)n_copy : 0;
	return 0;
}

/* ---- the fit memo (issue 37) ------------------------------------------ */

struct fit_entry {
	uint64_t hash;		   /* fnv-1a of the samples */
	struct ac_sample *kern;	   /* the samples fitted (owned); NULL: an
				      entry put (ac_fit_memo_put), known by
				      its hash and counts only */
	size_t n_kern;
	struct ac_sample *copy;	   /* (owned) */
	size_t n_copy;
	struct ac_perf perf;	   /* the model they gave */
};

struct ac_fit_memo {
	pthread_mutex_t mu;	   /* guards all below */
	struct fit_entry *e;	   /* entries, in insertion order */
	size_t n, cap;
	size_t fits, hits;	   /* ac_perf_fit_memo calls fitted / found */
};

struct ac_fit_memo *ac_fit_memo_new(void)
{
	struct ac_fit_memo *m = calloc(1, sizeof *m);
	if (m && pthread_mutex_init(&m->mu, NULL) != 0) {
		free(m);
		return NULL;
	}
	return m;
}

void ac_fit_memo_free(struct ac_fit_memo *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++) {
		free(m->e[i].kern);
		free(m->e[i].copy);
	}
	free(m->e);
	pthread_mutex_destroy(&m->mu);
	free(m);
}

void ac_fit_memo_counts(struct ac_fit_memo *m, size_t *fits, size_t *hits)
{
	pthread_mutex_lock(&m->mu);
	if (fits)
		*fits = m->fits;
	if (hits)
		*hits = m->hits;
	pthread_mutex_unlock(&m->mu);
}

/* Samples compared and hashed field by field (struct ac_sample has
 * padding). */
static uint64_t fnv_bytes(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ULL;
	return h;
}

static uint64_t samples_hash(const struct ac_sample *s, size_t n,
			     uint64_t h)
{
	h = fnv_bytes(h, &n, sizeof n);
	for (size_t i = 0; i < n; i++) {
		h = fnv_bytes(h, &s[i].type, sizeof s[i].type);
		h = fnv_bytes(h, &s[i].x, sizeof s[i].x);
		h = fnv_bytes(h, &s[i].ns, sizeof s[i].ns);
	}
	return h;
}

static bool samples_equal(const struct ac_sample *a, const struct ac_sample *b,
			  size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i].type != b[i].type ||
		    memcmp(&a[i].x, &b[i].x, sizeof a[i].x) != 0 ||
		    memcmp(&a[i].ns, &b[i].ns, sizeof a[i].ns) != 0)
			return false;
	return true;
}

/* The entry for these samples, or NULL (m->mu held). */
static const struct fit_entry *memo_find(const struct ac_fit_memo *m,
					 uint64_t h,
					 const struct ac_sample *kern,
					 size_t n_kern,
					 const struct ac_sample *copy,
					 size_t n_copy)
{
	for (size_t i = 0; i < m->n; i++) {
		const struct fit_entry *x = &m->e[i];
		if (x->hash == h && x->n_kern == n_kern &&
		    x->n_copy == n_copy &&
		    (!x->kern || (samples_equal(x->kern, kern, n_kern) &&
				  samples_equal(x->copy, copy, n_copy))))
			return x;
	}
	return NULL;
}

/* Room for one more entry (m->mu held); false when out of memory. */
static bool memo_room(struct ac_fit_memo *m)
{
	struct fit_entry *e = gms_grow(m->e, &m->cap, m->n, sizeof *e, 8);
	if (e)
		m->e = e;
	return e != NULL;
}

int ac_perf_fit_memo(struct ac_fit_memo *m, const struct ac_sample *kern,
		     size_t n_kern, const struct ac_sample *copy,
		     size_t n_copy, struct ac_perf *p, gms_err *err)
{
	if (!m)
		return ac_perf_fit(kern, n_kern, copy, n_copy, p, err);
	uint64_t h = samples_hash(copy, n_copy,
				  samples_hash(kern, n_kern,
					       14695981039346656037ULL));
	pthread_mutex_lock(&m->mu);
	const struct fit_entry *x =
		memo_find(m, h, kern, n_kern, copy, n_copy);
	if (x) {
		*p = x->perf;
		m->hits++;
	}
	pthread_mutex_unlock(&m->mu);
	if (x)
		return 0;
	/* fitted outside the lock: two threads may fit the same samples at
	 * once; the model is a pure function of them, so either is it */
	if (ac_perf_fit(kern, n_kern, copy, n_copy, p, err) < 0)
		return -1; /* failures are not kept: the error says why */
	struct fit_entry y = {.hash = h, .n_kern = n_kern, .n_copy = n_copy,
			      .perf = *p};
	y.kern = malloc((n_kern ? n_kern : 1) * sizeof *y.kern);
	y.copy = malloc((n_copy ? n_copy : 1) * sizeof *y.copy);
	pthread_mutex_lock(&m->mu);
	m->fits++;
	if (y.kern && y.copy && memo_room(m) &&
	    !memo_find(m, h, kern, n_kern, copy, n_copy)) {
		memcpy(y.kern, kern, n_kern * sizeof *kern);
		memcpy(y.copy, copy, n_copy * sizeof *copy);
		m->e[m->n++] = y;
		y.kern = y.copy = NULL;
	}
	pthread_mutex_unlock(&m->mu);
	/* not kept (out of memory, or another thread kept the same): the
	 * fit is still this call's answer */
	free(y.kern);
	free(y.copy);
	return 0;
}

int ac_fit_memo_put(struct ac_fit_memo *m, uint64_t hash, size_t n_kern,
		    size_t n_copy, const struct ac_perf *p)
{
	pthread_mutex_lock(&m->mu);
	bool ok = memo_room(m);
	if (ok)
		m->e[m->n++] = (struct fit_entry){.hash = hash,
						  .n_kern = n_kern,
						  .n_copy = n_copy,
						  .perf = *p};
	pthread_mutex_unlock(&m->mu);
	return ok ? 0 : -1;
}

size_t ac_fit_memo_size(struct ac_fit_memo *m)
{
	pthread_mutex_lock(&m->mu);
	size_t n = m->n;
	pthread_mutex_unlock(&m->mu);
	return n;
}

void ac_fit_memo_get(struct ac_fit_memo *m, size_t i, uint64_t *hash,
		     size_t *n_kern, size_t *n_copy, struct ac_perf *p)
{
	pthread_mutex_lock(&m->mu);
	assert(i < m->n);
	*hash = m->e[i].hash;
	*n_kern = m->e[i].n_kern;
	*n_copy = m->e[i].n_copy;
	*p = m->e[i].perf;
	pthread_mutex_unlock(&m->mu);
}

/* One op of F FLOPs (at batch k) on its type's curve, seconds: hw.h's
 * t = launch + F / (peak * min(1, F / sat)^alpha), the form of Figure 5
 * (the launch term is how "we reduce the denominator FLOPS(*) in (2)
 * slightly to take the unmodeled overhead into account", 6.2.1 B). */
static double op_seconds(const struct ac_perf *p, uint32_t t, double F)
{
	if (t >= OT_COUNT || !p->have[t])
		return F > 0 && p->rate_all > 0 ? F / p->rate_all : 0;
	double s = p->launch[t] * 1e-9;
	if (F > 0 && p->peak[t] > 0) {
		double thr = p->peak[t];
		if (p->sat[t] > 0 && F < p->sat[t])
			thr *= pow(F / p->sat[t], p->alpha[t]);
		s += F / thr;
	}
	return s;
}

double ac_t_layer(const struct ac_perf *p, const struct ac_gmap *g, size_t j,
		  int64_t k)
{
	/* Equation 1, FLOPs_j(k) = k / k_base FLOPs_j(k_base), and equation
	 * 2's term FLOPs_j(k) / FLOPS(FLOPs_j(k)), evaluated per op: the
	 * samples are kernels (ac_sample), each type has its own curve, and
	 * a backward process holds kernels of different types (conv
	 * bwd_data and bwd_filter); evaluating the process's total FLOPs on
	 * one type's curve would price a kernel at another's throughput.
	 * For a one-op process it is the paper's term as written. */
	const struct ac_layer *L = &g->layer[j];
	double q = (double)k / (double)g->k_base, s = 0;
	for (uint32_t o = L->first_op; o < L->first_op + L->n_ops; o++) {
		const struct ac_op *op = &g->op[o];
		s += op_seconds(p, op->type,
				op->scales ? q * op->flops : op->flops);
	}
	return s;
}

double ac_t_iter(const struct ac_perf *p, const struct ac_gmap *g, int64_t k)
{
	/* (2): "t_iter(k) = sum_{j=1}^{2N} t_j(k)" */
	double s = 0;
	for (size_t j = 0; j < g->n; j++)
		s += ac_t_layer(p, g, j, k);
	return s;
}

double ac_t_whole(const struct ac_perf *p, const struct ac_gmap *g, int64_t k,
		  double epochs, double samples, double delta)
{
	/* (3): "t_whole(k) = E * m / k [t_iter(k) + Δ]" */
	return epochs * samples / (double)k * (ac_t_iter(p, g, k) + delta);
}

/* ---- constraint (section 3.4): Algorithm 1 and (6) ------------------- */

/* Bytes at batch k of a size x at k_base (equation 4's k / k_base factor;
 * multiplied before dividing, so sizes that divide stay exact). */
static double at_k(uint64_t x, int64_t k, int64_t k_base)
{
	return (double)x * (double)k / (double)k_base;
}

/* The sizes Algorithm 1 reads: per process, Seq_allocate^j and
 * Seq_release^j at k_base (the GMAP's, or less the pinned feature maps'
 * prefetches in Algorithm 2). */
struct seqs {
	size_t n;		/* processes */
	const uint64_t *alloc;	/* Seq_allocate^j */
	const uint64_t *rel;	/* Seq_release^j */
	int64_t k, k_base;	/* the batch and the one sizes are at */
};

/* Algorithm 1. S[c] = compute time of processes 0..c (the schedule
 * without stalls), PR[c] = released by processes 0..c-1 (PR[0] = 0). */
static int ready(const struct seqs *q, double budget, const double *tc,
		 const double *tp, double *tr, gms_err *err)
{
	size_t n = q->n;
	double *S = malloc((2 * n + 1) * sizeof *S);
	if (!S)
		return gms_errf(err, "accudnn: out of memory");
	double *PR = S + n;
	double s = 0;
	PR[0] = 0;
	for (size_t c = 0; c < n; c++) {
		s += tc[c];
		S[c] = s;
		PR[c + 1] = PR[c] + at_k(q->rel[c], q->k, q->k_base);
	}
	/* "if (j == 1) t_ready[j] = sum of t_pre for layer j's prefetch
	 * operations" ("On condition of trainable, the involved data of
	 * first layer can be prefetched directly at the beginning") */
	tr[0] = tp[0];
	double used = at_k(q->alloc[0], q->k, q->k_base);
	/* cur: j_current as the paper estimates it, the process executing
	 * at t_ready[j-1] by "comparing t_ready[j-1] and
	 * sum_1^current t_compute": the first c with S[c] > t_ready[j-1].
	 * t_ready never decreases (each branch adds to a time at or after
	 * t_ready[j-1]), so cur only moves forward. freed: processes whose
	 * releases are already out of M_used_present. */
	size_t cur = 0, freed = 0;
	for (size_t j = 1; j < n; j++) {
		while (cur < n && S[cur] <= tr[j - 1])
			cur++;
		/* The remark: "with the proceeding of computation, memory
		 * release operation conducted by stream_swap-out also
		 * decrease M_used_present, we just don't depict it
		 * explicitly". Implemented thus: when the prefetch for j
		 * would start (t_ready[j-1]), the processes before
		 * j_current have finished by the same estimate, so their
		 * Seq_release comes out of M_used_present, once each, and
		 * only for processes before j (whose allocations are in
		 * it). The else branch then traverses from j_current, so no
		 * release is counted twice. */
		size_t done = cur < j ? cur : j;
		for (; freed < done; freed++)
			used -= at_k(q->rel[freed], q->k, q->k_base);
		double A = at_k(q->alloc[j], q->k, q->k_base);
		if (used + A <= budget) {
			/* "else if (M_used_present + size of Seq_allocate^j
			 * <= M_budget) t_ready[j] = t_ready[j-1] + sum_j
			 * t_pre" */
			tr[j] = tr[j - 1] + tp[j];
		} else if (cur >= j) {
			/* Every process before j has finished by
			 * t_ready[j-1] and its releases are counted: no
			 * release before j can make room, and none after j
			 * can come first (j runs after its data). The paper
			 * does not cover this case; the prefetch goes as
			 * soon as its stream is free, the latest
			 * "j_satisfied = j-1" could give. */
			tr[j] = tr[j - 1] + tp[j];
		} else {
			/* "Traverse Seq_release from layer j_current to
			 * j_satisfied until find j_satisfied that satisfies
			 * sum of the released memory from layer j_current to
			 * j_satisfied larger than size of Seq_allocate^j;
			 * t_ready[j] = sum_1^satisfied t_compute + sum_j
			 * t_pre". The smallest such j_satisfied, by binary
			 * search on the prefix sums; the traversal stops at
			 * j-1 (the paper gives no bound: the prefetch for j
			 * cannot wait for j itself), and when even that does
			 * not release enough, j_satisfied = j-1. */
			size_t lo = cur, hi = j - 1;
			double need = PR[cur] + A;
			while (lo < hi) {
				size_t mid = lo + (hi - lo) / 2;
				if (PR[mid + 1] > need)
					hi = mid;
				else
					lo = mid + 1;
			}
			tr[j] = S[lo] + tp[j];
		}
		/* "M_used_present += size of Seq_allocate^j" */
		used += A;
	}
	free(S);
	return 0;
}

int ac_t_ready(const struct ac_gmap *g, int64_t k, uint64_t budget,
	       const double *t_comp, const double *t_pre, double *t_ready,
	       gms_err *err)
{
	if (g->n == 0 || k < 1 || g->k_base < 1)
		return gms_errf(err, "accudnn: t_ready of %zu processes at "
				     "batch %lld (base %lld)",
				g->n, (long long)k, (long long)g->k_base);
	uint64_t *a = malloc(2 * g->n * sizeof *a);
	if (!a)
		return gms_errf(err, "accudnn: out of memory");
	for (size_t j = 0; j < g->n; j++) {
		a[j] = g->layer[j].alloc;
		a[g->n + j] = g->layer[j].release;
	}
	struct seqs q = {.n = g->n, .alloc = a, .rel = a + g->n, .k = k,
			 .k_base = g->k_base};
	int rc = ready(&q, (double)budget, t_comp, t_pre, t_ready, err);
	free(a);
	return rc;
}

size_t ac_violations(size_t n, const double *t_comp, const double *t_ready,
		     bool *bad)
{
	/* (6): "t_ready[j] <= sum_{r=1}^{j-1} t_r": "the ready timestamp of
	 * layer j must be ahead of the accomplishment of layer (j-1)'s
	 * computation" */
	size_t v = 0;
	double s = 0;
	for (size_t j = 0; j < n; j++) {
		bool b = t_ready[j] > s + AC_EPS_S;
		if (bad)
			bad[j] = b;
		v += b;
		s += t_comp[j];
	}
	return v;
}

double ac_t_iter_ready(size_t n, const double *t_comp, const double *t_ready)
{
	double S = 0, late = 0;
	for (size_t j = 0; j < n; j++) {
		if (t_ready[j] - S > late)
			late = t_ready[j] - S;
		S += t_comp[j];
	}
	return S + late;
}

/* ---- Algorithm 2 (section 4.1) --------------------------------------- */

/* "k_max = k_base * [M_budget - M_others - M_para(in Seq_peak) -
 * M_ws(in Seq_peak)] / sum[M_FM(k_base)(in Seq_peak)]", floored. The
 * formula treats the others and the workspace at the peak as fixed while
 * (4) scales every size with k / k_base, so above k_base it can promise
 * a batch whose all-swap peak does not fit; k_max is therefore also at
 * most the largest k with k / k_base * M_peak + M_para <= M_budget ("As
 * long as the GPU memory budget is larger than the peak layer-wise
 * memory usage, the UDNN is trainable", 3.1). Below k_base the formula is
 * the smaller and is kept as written. */
int ac_k_max(const struct ac_gmap *g, uint64_t budget, int64_t *out,
	     gms_err *err)
{
	double kb = (double)g->k_base, B = (double)budget;
	double room = B - (double)g->m_para - (double)g->m_others_peak -
		      (double)g->m_ws_peak;
	double k = INFINITY;
	if (g->m_fm_peak > 0)
		k = floor(kb * room / (double)g->m_fm_peak);
	if (g->m_peak > 0) {
		double cap = floor(kb * (B - (double)g->m_para) /
				   (double)g->m_peak);
		k = cap < k ? cap : k;
	}
	if (!isfinite(k))
		return gms_errf(err, "accudnn: nothing in the GMAP scales "
				     "with the batch");
	if (k < 1)
		return gms_errf(err, "accudnn: not trainable: %llu bytes "
				     "of budget, %llu of parameters, %llu at "
				     "the all-swap peak at batch %lld",
				(unsigned long long)budget,
				(unsigned long long)g->m_para,
				(unsigned long long)g->m_peak,
				(long long)g->k_base);
	*out = k > (double)INT32_MAX ? INT32_MAX : (int64_t)k;
	return 0;
}

/* The working state of Algorithm 2. */
struct search {
	const struct ac_gmap *g; /* the GMAP */
	const struct ac_perf *p; /* the model */
	uint64_t *alloc, *rel;	 /* per process at k_base, pinned feature
				    maps' prefetches taken out */
	uint64_t *pre;		 /* per process: bytes still prefetched */
	uint32_t *by_need;	 /* feature maps grouped by `needed` */
	uint32_t *need_at;	 /* process j's: by_need[need_at[j] ..
				    need_at[j+1]) */
	double *tc, *tp, *tr;	 /* t_compute, t_pre, t_ready at k */
	bool *bad;		 /* processes violating (6) */
	bool *pinned;		 /* per feature map */
	uint32_t n_pinned;	 /* how many */
	uint64_t pinned_bytes;	 /* their bytes at k_base */
};

static void search_free(struct search *s)
{
	free(s->alloc);
	free(s->by_need);
	free(s->tc);
	free(s->bad);
	free(s->pinned);
}

static int search_init(struct search *s, const struct ac_gmap *g,
		       const struct ac_perf *p, gms_err *err)
{
	memset(s, 0, sizeof *s);
	s->g = g;
	s->p = p;
	if (g->n == 0 || g->k_base < 1)
		return gms_errf(err, "accudnn: empty GMAP");
	if (g->n_fm > 0 && !(p->bandwidth > 0))
		return gms_errf(err, "accudnn: %zu feature maps to offload but "
				     "no PCIe bandwidth in the model (the "
				     "profiling pass timed no copy)",
				g->n_fm);
	size_t n = g->n;
	s->alloc = malloc(3 * n * sizeof *s->alloc);
	s->by_need = malloc((g->n_fm + n + 1) * sizeof *s->by_need);
	s->tc = malloc(3 * n * sizeof *s->tc);
	s->bad = malloc(n * sizeof *s->bad);
	s->pinned = calloc(g->n_fm ? g->n_fm : 1, sizeof *s->pinned);
	if (!s->alloc || !s->by_need || !s->tc || !s->bad || !s->pinned) {
		search_free(s);
		return gms_errf(err, "accudnn: out of memory");
	}
	s->rel = s->alloc + n;
	s->pre = s->rel + n;
	s->need_at = s->by_need + g->n_fm;
	s->tp = s->tc + n;
	s->tr = s->tp + n;
	memset(s->need_at, 0, (n + 1) * sizeof *s->need_at);
	for (size_t j = 0; j < n; j++) {
		s->alloc[j] = g->layer[j].alloc;
		s->rel[j] = g->layer[j].release;
		s->pre[j] = g->layer[j].prefetch;
	}
	/* counting sort of the feature maps by the process they serve */
	for (size_t f = 0; f < g->n_fm; f++)
		s->need_at[g->fm[f].needed + 1]++;
	for (size_t j = 0; j < n; j++)
		s->need_at[j + 1] += s->need_at[j];
	uint32_t *pos = s->need_at; /* advanced, then shifted back */
	for (size_t f = 0; f < g->n_fm; f++)
		s->by_need[pos[g->fm[f].needed]++] = (uint32_t)f;
	for (size_t j = n; j > 0; j--)
		s->need_at[j] = s->need_at[j - 1];
	s->need_at[0] = 0;
	return 0;
}

/* t_ready at k with the active area `budget` (bytes at k) and the pins
 * so far; *v = processes violating (6), marked in s->bad. */
static int evaluate(struct search *s, int64_t k, double budget, size_t *v,
		    gms_err *err)
{
	const struct ac_gmap *g = s->g;
	for (size_t j = 0; j < g->n; j++) {
		s->tc[j] = ac_t_layer(s->p, g, j, k);
		/* (5): t_pre = k / k_base T_pre(k_base) / Bandwidth_avail;
		 * "If a feature map is pinned in GPU memory, t_pre/off = 0" */
		s->tp[j] = s->pre[j] ? at_k(s->pre[j], k, g->k_base) /
					       s->p->bandwidth
				     : 0;
	}
	struct seqs q = {.n = g->n, .alloc = s->alloc, .rel = s->rel, .k = k,
			 .k_base = g->k_base};
	if (ready(&q, budget, s->tc, s->tp, s->tr, err) < 0)
		return -1;
	*v = ac_violations(g->n, s->tc, s->tr, s->bad);
	return 0;
}

/* Pin feature map f: it is no longer prefetched. */
static void pin_one(struct search *s, uint32_t f)
{
	const struct ac_fm *m = &s->g->fm[f];
	s->pinned[f] = true;
	s->pinned_bytes += m->bytes;
	s->alloc[m->needed] -= m->bytes;
	s->rel[m->bwd_last] -= m->bytes;
	s->pre[m->needed] -= m->bytes;
	s->n_pinned++;
}

/* "Identify layer index set Ω that don't satisfy (6); Try to pin data
 * involved in Ω in GPU memory area (M_budget - M_peak(k))": the feature
 * maps prefetched for the processes of Ω, in process order, then in the
 * GMAP's order, each pinned when its bytes at k fit in what the area has
 * left (first fit: one that does not fit does not stop a smaller one).
 * A pinned map is no longer prefetched: its bytes leave Seq_allocate of
 * the process it served and Seq_release of its last reader, and its
 * t_pre is 0. Its forward device copy stays in the active area's
 * accounting, as the area is sized by the all-swap peak M_peak(k).
 * `room`: the area's bytes at k. Returns how many were pinned. */
static uint32_t pin_step(struct search *s, int64_t k, double room)
{
	const struct ac_gmap *g = s->g;
	double used = at_k(s->pinned_bytes, k, g->k_base);
	uint32_t added = 0;
	for (size_t j = 0; j < g->n; j++) {
		if (!s->bad[j])
			continue;
		for (uint32_t i = s->need_at[j]; i < s->need_at[j + 1]; i++) {
			uint32_t f = s->by_need[i];
			const struct ac_fm *m = &g->fm[f];
			double b = at_k(m->bytes, k, g->k_base);
			if (s->pinned[f] || used + b > room)
				continue;
			pin_one(s, f);
			used += b;
			added++;
		}
	}
	return added;
}

/* Hand the search's result over to *out. */
static void search_out(struct search *s, int64_t k_max, int64_t k,
		       size_t viol, struct ac_strategy *out)
{
	out->k_max = k_max;
	out->k_star = k;
	out->pinned = s->pinned;
	s->pinned = NULL;
	out->n_pinned = s->n_pinned;
	/* the last evaluate's t_compute and t_ready are at k */
	out->stall_free = viol == 0;
	out->t_iter = viol ? ac_t_iter_ready(s->g->n, s->tc, s->tr)
			   : ac_t_iter(s->p, s->g, k);
	out->steps = (int)(k_max - k);
	out->n_violations = (uint32_t)viol;
}

int ac_search(const struct ac_gmap *g, const struct ac_perf *p,
	      uint64_t budget, struct ac_strategy *out, gms_err *err)
{
	memset(out, 0, sizeof *out);
	int64_t k;
	if (ac_k_max(g, budget, &k, err) < 0)
		return -1;
	int64_t k_max = k;
	struct search s;
	if (search_init(&s, g, p, err) < 0)
		return -1;
	/* the whole budget less m_para: the active area and the pin area */
	double area = (double)budget - (double)g->m_para;
	size_t v;
	/* "Calculate t_ready under k with constraint (4)" (the whole area
	 * is M_budget here: nothing is pinned yet) */
	int rc = evaluate(&s, k, area, &v, err);
	/* "while (constraint (6) is not satisfied under k for all layer 1 to
	 * 2N)": down to k = 1, where the search stops with the violations
	 * it could not remove (reported in n_violations) */
	while (rc == 0 && v > 0 && k > 1) {
		/* "k -= 1; Calculate t_ready under k with M_budget =
		 * M_peak(k) in constraint (4)" (M_peak of the all-swap
		 * pattern, m_para excluded like the whole GMAP) */
		k--;
		double peak = at_k(g->m_peak, k, g->k_base);
		rc = evaluate(&s, k, peak, &v, err);
		/* "Identify layer index set Ω [...] Try to pin": pins are
		 * kept as k falls (a map pinned at k + 1 takes less at k,
		 * and the area M_budget - M_peak(k) only grows) */
		if (rc == 0 && v > 0 && pin_step(&s, k, area - peak) > 0)
			rc = evaluate(&s, k, peak, &v, err);
	}
	if (rc == 0)
		search_out(&s, k_max, k, v, out);
	search_free(&s);
	return rc;
}

/* The active area (budget less parameters) and the all-swap peak at a
 * fixed batch k; -1 with err when the peak does not fit. */
static int fixed_k(const struct ac_gmap *g, uint64_t budget, int64_t k,
		   double *area, double *peak, gms_err *err)
{
	*area = (double)budget - (double)g->m_para;
	*peak = at_k(g->m_peak, k, g->k_base);
	if (*peak > *area)
		return gms_errf(err, "accudnn: not trainable at batch %lld: "
				     "the all-swap peak %.0f bytes and %llu "
				     "of parameters exceed %llu",
				(long long)k, *peak,
				(unsigned long long)g->m_para,
				(unsigned long long)budget);
	return 0;
}

int ac_pin_at(const struct ac_gmap *g, const struct ac_perf *p,
	      uint64_t budget, int64_t k, struct ac_strategy *out,
	      gms_err *err)
{
	memset(out, 0, sizeof *out);
	if (k < 1)
		return gms_errf(err, "accudnn: batch %lld", (long long)k);
	int64_t k_max = 0;
	gms_err ignored;
	if (ac_k_max(g, budget, &k_max, &ignored) < 0)
		k_max = 0; /* reported, not required: k itself is checked */
	double area, peak;
	if (fixed_k(g, budget, k, &area, &peak, err) < 0)
		return -1;
	struct search s;
	if (search_init(&s, g, p, err) < 0)
		return -1;
	/* Algorithm 2's inner step at a fixed k, repeated while it pins
	 * something and (6) still fails: k cannot fall here */
	size_t v;
	int rc = evaluate(&s, k, peak, &v, err);
	while (rc == 0 && v > 0 && pin_step(&s, k, area - peak) > 0)
		rc = evaluate(&s, k, peak, &v, err);
	if (rc == 0) {
		search_out(&s, k_max, k, v, out);
		out->steps = 0;
	}
	search_free(&s);
	return rc;
}

int ac_assess(const struct ac_gmap *g, const struct ac_perf *p,
	      uint64_t budget, int64_t k, const bool *pinned,
	      struct ac_strategy *out, gms_err *err)
{
	memset(out, 0, sizeof *out);
	if (k < 1)
		return gms_errf(err, "accudnn: batch %lld", (long long)k);
	double area, peak;
	if (fixed_k(g, budget, k, &area, &peak, err) < 0)
		return -1;
	struct search s;
	if (search_init(&s, g, p, err) < 0)
		return -1;
	for (uint32_t f = 0; f < g->n_fm; f++)
		if (pinned && pinned[f])
			pin_one(&s, f);
	size_t v;
	int rc = evaluate(&s, k, peak, &v, err);
	if (rc == 0)
		search_out(&s, 0, k, v, out);
	search_free(&s);
	return rc;
}

void ac_strategy_free(struct ac_strategy *s)
{
	free(s->pinned);
	memset(s, 0, sizeof *s);
}

/* ---- equation 9 (section 4.2) ---------------------------------------- */

double ac_learning_rate(double alpha_base, double c, double q)
{
	/* (9): α* ≈ (1 - (1 - α_base c)^q) / c; as c -> 0 it tends to
	 * α_base q (the linear scaling rule), the value used at c = 0 */
	if (c == 0)
		return alpha_base * q;
	return (1 - pow(1 - alpha_base * c, q)) / c;
}
