/*
 * optimal_blocks.c - the optimal policy's MILP by blocks, for deep
 * networks of repeated blocks (README, "The optimal policy";
 * docs/optimal.md, "Scale").
 *
 * The exact MILP (optimal_milp.c) grows with ops times tensors: a
 * 12-block GPT-2 is far above max_vars. Rockmate (Zhao et al., "Rockmate:
 * an Efficient, Fast, Automatic and Generic Tool for Re-materialization
 * in PyTorch", ICML 2023) solves each block of a chain with Checkmate's
 * ILP for a grid of budgets ("class Rockmate: def __init__(self,
 * nb_budget_save=10, nb_budget_peak=2, mem_unit=1024 ** 2)", the budgets
 * of the memory a block saves for its backward and of its peak,
 * topal-team/rockmate hrockmate/solvers/rockmate.py), solves identical
 * blocks once ("rkgb_res.equivalent_classes"), and combines one option
 * per block with Rotor's dynamic program (Beaumont, Eyraud-Dubois,
 * Herrmann, Joly, Shilova, "Optimal checkpointing for heterogeneous
 * chains", 2019/2021). Its recurrence for the choice of option k of
 * block a (rotor_solver.py, psolve_dp_functional, "Solution 2"):
 *
 *   mem_f = cw[a + 1] + cbw[a + 1][k] + fwd_tmp[a][k]
 *   mem_b = cw[a] + cbw[a + 1][k] + bwd_tmp[a][k]
 *   if m >= max(mem_f, mem_b):
 *       time = fw[a][k] + bw[a][k] + solve_aux(m - cbw[a + 1][k], a + 1, b)
 *
 * i.e. Opt(m, a) = min_k { time_k(a) + Opt(m - keep_k(a), a + 1) :
 * peak_k(a) <= m }: the memory a block keeps for its backward (cbw) is
 * taken from what the later blocks may use. Here the same recurrence runs
 * forward over the blocks with memory in slots (Rockmate's mem_unit):
 * best[k + 1][m + keep_o] = min(best[k][m] + time_o) over block k's
 * options o whose peak fits beside the m slots blocks 0..k-1 keep.
 * Rotor's other branch ("Solution 1": forward a block without saving and
 * re-run it whole in the backward) is not taken: a block's options come
 * from its own MILP, every block input stays (below).
 *
 * What a block's problem is. A block is the ops of one wl_op.block mark
 * (its forward and backward ops), in issue order; between two of its
 * ops that are not consecutive (its forward and its backward, with the
 * later blocks and the loss in between) a zero-time "gap" stage is put,
 * whose workspace (peak budget minus keep budget) leaves exactly the keep
 * budget for what the block holds across the gap: the existing MILP,
 * unchanged, then bounds both the block's peak and what it keeps. Its
 * tensors are the block's internal ones (produced and read only by its
 * ops); every other tensor (a block's input and output, gradients
 * between blocks, parameter gradients read by the optimizer) is a
 * boundary tensor, kept on the device from its producer to its last
 * reader as the framework does, and counted in every stage's base
 * memory. An op reading a boundary tensor that the executor frees before
 * the block's last op is not re-run. Blocks whose problems are the same
 * (op times, workspaces, sizes, copy times and structure) are solved
 * once.
 *
 * Why the DP's memory check is enough. The blocks must nest as a chain
 * (block k+1's ops lie inside block k's span, none of block k's ops
 * inside block k+1's span, as forward and backward of a sequential
 * network do). Then at any stage of block k the other blocks holding
 * memory are exactly blocks 0..k-1, each at most its keep; at a stage in
 * no block, some prefix 0..n(t)-1. So stage t needs base(t) + its own
 * block's stage memory + the prefix's keeps, which the DP checks
 * (rounding each keep up to a slot). A gap stage's actions (copies or
 * re-runs the block's MILP put there) are replayed in the last stage of
 * the gap, whose memory the block's keep already covers.
 *
 * The combined schedule is one opt_sched over the whole workload,
 * replayed by policies/optimal.c like the exact MILP's.
 */
#include "optimal_blocks.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Memory slots of the DP: the budget over this many, at least 1 B
 * (Rockmate's mem_unit is 1 MiB, rotor's a fixed count of slots; 10,000
 * of a 16 GB budget is 1.6 MB, and every budget up to 10,000 B is exact,
 * as tests/test_optimal_blocks.c uses). */
#define DP_SLOTS 10000u

int opt_chain_dp(uint32_t n, const uint32_t *off,
		 const struct opt_dp_opt *opt, const uint64_t *need,
		 uint64_t budget, uint64_t unit, uint32_t *choice,
		 double *best)
{
	uint64_t M = budget / unit;
	size_t W = (size_t)M + 1;
	double *cur = calloc(W, sizeof *cur);
	double *nxt = calloc(W, sizeof *nxt);
	int32_t *ch = malloc((n ? n : 1) * W * sizeof *ch);
	int rc = -1;
	if (!cur || !nxt || !ch)
		goto out;
	for (size_t m = 0; m < W; m++)
		cur[m] = need[0] + m * unit <= budget && m == 0 ? 0 : INFINITY;
	for (uint32_t k = 0; k < n; k++) {
		int32_t *c = ch + (size_t)k * W;
		for (size_t m = 0; m < W; m++) {
			nxt[m] = INFINITY;
			c[m] = -1;
		}
		for (size_t m = 0; m < W; m++) {
			if (isinf(cur[m]))
				continue;
			uint64_t room = budget - m * unit;
			for (uint32_t o = off[k]; o < off[k + 1]; o++) {
				uint64_t sl = (opt[o].keep + unit - 1) / unit;
				if (opt[o].peak > room || sl > M - m)
					continue;
				double v = cur[m] + opt[o].time;
				if (v < nxt[m + sl]) {
					nxt[m + sl] = v;
					c[m + sl] = (int32_t)o;
				}
			}
		}
		/* the ops in no block that run while blocks 0..k keep */
		for (size_t m = 0; m < W; m++)
			if (need[k + 1] > budget - m * unit)
				nxt[m] = INFINITY;
		double *t = cur;
		cur = nxt;
		nxt = t;
	}
	size_t at = 0;
	for (size_t m = 1; m < W; m++)
		if (cur[m] < cur[at])
			at = m;
	rc = 1;
	if (isinf(cur[at]))
		goto out;
	*best = cur[at];
	for (uint32_t k = n; k-- > 0;) {
		int32_t o = ch[(size_t)k * W + at];
		choice[k] = (uint32_t)o - off[k];
		at -= (opt[o].keep + unit - 1) / unit;
	}
	rc = 0;
out:
	free(cur);
	free(nxt);
	free(ch);
	return rc;
}

/* A block's problem: a workload of its ops (and gap stages) and its
 * tensors, the figures opt_solve reads, the maps back to the whole
 * workload, and a signature to find identical blocks by. */
struct view {
	struct wl_workload w;
	struct wl_op *ops;
	struct wl_tensor *tens;
	uint32_t *ids;	 /* in, out and readers lists */
	uint32_t *gop;	 /* per local op: global op, WL_NONE: a gap */
	uint32_t *gten;	 /* per local tensor: global tensor */
	sim_time_t *time, *h2d, *d2h;
	uint64_t *ws;
	bool *man;
	uint32_t n_gaps;
	uint64_t *sig;
	size_t n_sig;
	char name[96];
};

static void view_free(struct view *v)
{
	free(v->ops);
	free(v->tens);
	free(v->ids);
	free(v->gop);
	free(v->gten);
	free(v->time);
	free(v->h2d);
	free(v->d2h);
	free(v->ws);
	free(v->man);
	free(v->sig);
}

/* What the whole workload gives every view. */
struct ctx {
	const struct opt_in *in;
	const struct wl_workload *wl;
	bool *internal;	  /* per tensor: managed, produced and read only
			     inside one block */
	uint32_t *end;	  /* per tensor: the op after which the executor
			     frees it */
	uint32_t *gmap;	  /* per tensor: local id (WL_NONE outside) */
	uint32_t *lidx;	  /* per op: local index (WL_NONE outside) */
	uint32_t *last;	  /* per block: its last op */
};

/* Build block b's view from its ops (global ids, issue order). -1 on out
 * of memory. */
static int view_build(struct ctx *x, uint32_t b, const uint32_t *bops,
		      uint32_t nb, struct view *v)
{
	const struct wl_workload *wl = x->wl;
	const struct opt_in *in = x->in;
	memset(v, 0, sizeof *v);
	uint32_t gaps = 0;
	for (uint32_t k = 1; k < nb; k++)
		gaps += bops[k] != bops[k - 1] + 1;
	uint32_t T = nb + gaps;
	v->n_gaps = gaps;
	/* tensors in order of first use */
	uint32_t N = 0, n_rel = 0;
	size_t n_ids = 0, n_outs = 0;
	for (uint32_t k = 0; k < nb; k++)
		n_outs += wl->ops[bops[k]].n_out;
	/* an internal tensor with a release point after its last reader
	 * (PyTorch's saved variables, held to the layer's last backward op:
	 * workloads/gen.c, fw_lifetimes) is read, in the block's problem, by
	 * the op of its release point: the executor holds it until then */
	uint32_t *rl = malloc((n_outs ? n_outs : 1) * sizeof *rl);
	uint32_t *xoff = calloc((size_t)nb + 2, sizeof *xoff);
	uint32_t *xl = NULL;
	int rc = -1;
	if (!rl || !xoff)
		goto out;
	for (uint32_t k = 0; k < nb; k++) {
		const struct wl_op *o = &wl->ops[bops[k]];
		x->lidx[bops[k]] = k; /* a real op's index among the block's */
		n_ids += o->n_in + o->n_out;
		for (uint32_t a = 0; a < o->n_in + o->n_out; a++) {
			uint32_t j = a < o->n_in ? o->in[a] : o->out[a - o->n_in];
			if (x->gmap[j] != WL_NONE)
				continue;
			const struct wl_tensor *g = &wl->tensors[j];
			x->gmap[j] = N++;
			n_ids += g->n_readers;
			if (x->internal[j] && g->release_after != WL_NONE &&
			    (!g->n_readers ||
			     g->release_after > g->readers[g->n_readers - 1]))
				rl[n_rel++] = j;
		}
	}
	for (uint32_t q = 0; q < n_rel; q++)
		xoff[x->lidx[wl->tensors[rl[q]].release_after] + 2]++;
	for (uint32_t k = 0; k < nb; k++)
		xoff[k + 2] += xoff[k + 1];
	xl = malloc((n_rel ? n_rel : 1) * sizeof *xl);
	if (!xl)
		goto out;
	for (uint32_t q = 0; q < n_rel; q++)
		xl[xoff[x->lidx[wl->tensors[rl[q]].release_after] + 1]++] =
			rl[q];
	n_ids += 2 * (size_t)n_rel;
	v->ops = calloc(T ? T : 1, sizeof *v->ops);
	v->gop = malloc((T ? T : 1) * sizeof *v->gop);
	v->time = calloc(T ? T : 1, sizeof *v->time);
	v->ws = calloc(T ? T : 1, sizeof *v->ws);
	v->tens = calloc(N ? N : 1, sizeof *v->tens);
	v->gten = malloc((N ? N : 1) * sizeof *v->gten);
	v->h2d = calloc(N ? N : 1, sizeof *v->h2d);
	v->d2h = calloc(N ? N : 1, sizeof *v->d2h);
	v->man = calloc(N ? N : 1, sizeof *v->man);
	v->ids = malloc((n_ids ? n_ids : 1) * sizeof *v->ids);
	/* signature: 2 + per op 7 + per tensor 6, plus every id */
	v->sig = malloc((2 + 7 * (size_t)T + 6 * (size_t)N + n_ids) *
			sizeof *v->sig);
	if (!v->ops || !v->gop || !v->time || !v->ws || !v->tens ||
	    !v->gten || !v->h2d || !v->d2h || !v->man || !v->ids || !v->sig)
		goto out;
	/* local op index of real op k: k plus the gaps before it */
	uint32_t *loc = malloc((nb ? nb : 1) * sizeof *loc);
	if (!loc)
		goto out;
	for (uint32_t k = 0, g = 0; k < nb; k++) {
		if (k && bops[k] != bops[k - 1] + 1) {
			uint32_t d = k + g++;
			v->gop[d] = WL_NONE;
			v->ops[d] = (struct wl_op){.id = d, .name = "(gap)",
						   .block = b};
		}
		loc[k] = k + g;
	}
	size_t at = 0;
	for (uint32_t k = 0; k < nb; k++) {
		const struct wl_op *o = &wl->ops[bops[k]];
		uint32_t l = loc[k];
		struct wl_op *p = &v->ops[l];
		v->gop[l] = o->id;
		v->time[l] = in->op_time[o->id];
		v->ws[l] = in->op_ws[o->id];
		bool rec = o->recomputable;
		p->id = l;
		p->name = o->name;
		p->block = b;
		p->inplace = o->inplace;
		p->in = v->ids + at;
		p->n_in = o->n_in + xoff[k + 1] - xoff[k];
		for (uint32_t q = xoff[k]; q < xoff[k + 1]; q++)
			v->ids[at + o->n_in + q - xoff[k]] = x->gmap[xl[q]];
		for (uint32_t a = 0; a < o->n_in; a++) {
			uint32_t j = o->in[a];
			v->ids[at++] = x->gmap[j];
			/* a boundary input must still be there when a re-run
			 * of o could come (any later stage of the block) */
			if (in->managed[j] && !x->internal[j] &&
			    x->end[j] < x->last[b])
				rec = false;
		}
		at += xoff[k + 1] - xoff[k];
		p->recomputable = rec;
		p->out = v->ids + at;
		p->n_out = o->n_out;
		for (uint32_t a = 0; a < o->n_out; a++)
			v->ids[at++] = x->gmap[o->out[a]];
	}
	for (uint32_t k = 0; k < nb; k++) {
		const struct wl_op *o = &wl->ops[bops[k]];
		for (uint32_t a = 0; a < o->n_in + o->n_out; a++) {
			uint32_t j = a < o->n_in ? o->in[a] : o->out[a - o->n_in];
			uint32_t l = x->gmap[j];
			struct wl_tensor *t = &v->tens[l];
			if (t->name)
				continue;
			const struct wl_tensor *g = &wl->tensors[j];
			v->gten[l] = j;
			t->id = l;
			t->name = g->name;
			t->bytes = g->bytes;
			t->kind = g->kind;
			t->release_after = WL_NONE;
			t->last_fwd_reader = WL_NONE;
			t->producer = g->producer != WL_NONE &&
						      x->lidx[g->producer] != WL_NONE
					      ? loc[x->lidx[g->producer]]
					      : WL_NONE;
			t->readers = v->ids + at;
			for (uint32_t r = 0; r < g->n_readers; r++)
				if (x->lidx[g->readers[r]] != WL_NONE)
					v->ids[at + t->n_readers++] =
						loc[x->lidx[g->readers[r]]];
			if (x->internal[j] && g->release_after != WL_NONE &&
			    (!g->n_readers ||
			     g->release_after > g->readers[g->n_readers - 1]))
				v->ids[at + t->n_readers++] =
					loc[x->lidx[g->release_after]];
			at += t->n_readers;
			v->man[l] = x->internal[j];
			v->h2d[l] = in->t_h2d[j];
			v->d2h[l] = in->t_d2h[j];
		}
	}
	free(loc);
	v->w.name = v->name;
	snprintf(v->name, sizeof v->name, "%s, block %u", wl->name, b);
	v->w.ops = v->ops;
	v->w.n_ops = T;
	v->w.tensors = v->tens;
	v->w.n_tensors = N;
	v->w.finalized = true;
	/* the signature: everything opt_solve reads, names aside */
	size_t s = 0;
	v->sig[s++] = T;
	v->sig[s++] = N;
	for (uint32_t l = 0; l < T; l++) {
		const struct wl_op *p = &v->ops[l];
		v->sig[s++] = v->gop[l] == WL_NONE;
		v->sig[s++] = (uint64_t)v->time[l];
		v->sig[s++] = v->ws[l];
		v->sig[s++] = (uint64_t)p->recomputable << 1 | p->inplace;
		v->sig[s++] = p->n_in;
		for (uint32_t a = 0; a < p->n_in; a++)
			v->sig[s++] = p->in[a];
		v->sig[s++] = p->n_out;
		for (uint32_t a = 0; a < p->n_out; a++)
			v->sig[s++] = p->out[a];
		v->sig[s++] = 0;
	}
	for (uint32_t l = 0; l < N; l++) {
		const struct wl_tensor *t = &v->tens[l];
		v->sig[s++] = t->bytes;
		v->sig[s++] = v->man[l];
		v->sig[s++] = t->producer;
		v->sig[s++] = (uint64_t)v->h2d[l];
		v->sig[s++] = (uint64_t)v->d2h[l];
		v->sig[s++] = t->n_readers;
		for (uint32_t r = 0; r < t->n_readers; r++)
			v->sig[s++] = t->readers[r];
	}
	v->n_sig = s;
	rc = 0;
out:
	free(rl);
	free(xoff);
	free(xl);
	/* reset the maps for the next block */
	for (uint32_t k = 0; k < nb; k++) {
		const struct wl_op *o = &wl->ops[bops[k]];
		x->lidx[bops[k]] = WL_NONE;
		for (uint32_t a = 0; a < o->n_in; a++)
			x->gmap[o->in[a]] = WL_NONE;
		for (uint32_t a = 0; a < o->n_out; a++)
			x->gmap[o->out[a]] = WL_NONE;
	}
	return rc;
}

/*
 * The block solves of one experiment (struct opt_memo). A block's menu
 * point is a pure function of the block's problem (the view's signature:
 * everything opt_solve reads), its two budgets, what may be used (swap,
 * recomputation) and the work limits: its budgets come from the block
 * alone (class_solve: the framework schedule's peak and keep), not from
 * the run's budget, so every budget of a sweep, and every workload built
 * of the same block (gpt2-4block's and gpt2-12block's layers), asks for
 * the same points. The first run to ask solves a point; the others take
 * a copy of its schedule and its work, so each report (solves, nodes,
 * what stopped them) reads as if it had solved them, and a run's output
 * is the same with the memo, without it, or in a shard of its own. Two
 * threads asking for the same point: the second waits for the first's
 * answer (CBC is run in a child process per solve, policies/
 * optimal_milp.c, solve_child, so different points run in parallel).
 */
enum { MEMO_PENDING, MEMO_DONE };

struct memo_ent {
	uint64_t hash;	       /* of sig and key, to compare fast */
	uint64_t *sig;	       /* the view's signature (owned) */
	size_t n_sig;
	uint64_t key[9];       /* L, K, remat_only, and the work limits */
	int state;	       /* MEMO_PENDING while its first asker solves */
	int rc;		       /* opt_solve's: 0, or -1 with err */
	gms_err err;	       /* its error (an op over the budget) */
	struct opt_sched s;    /* its schedule and work (rc 0) */
};

struct opt_memo {
	pthread_mutex_t mu;    /* guards all below */
	pthread_cond_t done;   /* signalled when a pending entry ends */
	struct memo_ent **e;   /* entries, stable addresses */
	size_t n, cap;
	size_t solves, hits;   /* points solved / taken from an entry */
};

struct opt_memo *opt_memo_new(void)
{
	struct opt_memo *m = calloc(1, sizeof *m);
	if (!m)
		return NULL;
	if (pthread_mutex_init(&m->mu, NULL) != 0) {
		free(m);
		return NULL;
	}
	if (pthread_cond_init(&m->done, NULL) != 0) {
		pthread_mutex_destroy(&m->mu);
		free(m);
		return NULL;
	}
	return m;
}

static void memo_ent_free(struct memo_ent *x)
{
	if (!x)
		return;
	free(x->sig);
	opt_sched_free(&x->s);
	free(x);
}

void opt_memo_free(struct opt_memo *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++)
		memo_ent_free(m->e[i]);
	free(m->e);
	pthread_cond_destroy(&m->done);
	pthread_mutex_destroy(&m->mu);
	free(m);
}

void opt_memo_counts(struct opt_memo *m, size_t *solves, size_t *hits)
{
	pthread_mutex_lock(&m->mu);
	*solves = m->solves;
	*hits = m->hits;
	pthread_mutex_unlock(&m->mu);
}

/* The entry of (sig, key), or NULL (m->mu held). */
static struct memo_ent *memo_find(const struct opt_memo *m, uint64_t h,
				  const uint64_t *sig, size_t n_sig,
				  const uint64_t *key)
{
	for (size_t i = 0; i < m->n; i++) {
		struct memo_ent *x = m->e[i];
		if (x->hash == h && x->n_sig == n_sig &&
		    !memcmp(x->key, key, sizeof x->key) &&
		    !memcmp(x->sig, sig, n_sig * sizeof *sig))
			return x;
	}
	return NULL;
}

/* opt_solve(in, s, err) for view v's point (in->budget the peak L, the
 * gap stages' workspace giving K), through in->memo when there is one:
 * the same return and schedule either way (an infeasible point's error
 * names the op of the run that solved it; point_solve keeps only that
 * it is infeasible). A solve the safety net killed is shared like any
 * other: its answer depends on the machine, which every report that
 * uses it says ("killed by the safety net"), and solving it again in
 * each run would cost time_limit each time. */
static int memo_solve(const struct opt_in *in, const struct view *v,
		      uint64_t K, bool remat_only, struct opt_sched *s,
		      gms_err *err)
{
	struct opt_memo *m = in->memo;
	if (!m)
		return opt_solve(in, s, err);
	uint64_t key[9] = {in->budget,
			   K,
			   remat_only,
			   (uint64_t)in->node_limit,
			   (uint64_t)in->lp_iterations,
			   (uint64_t)in->search,
			   (uint64_t)llround(in->time_limit_s * 1e6),
			   (uint64_t)in->swap << 1 | in->remat,
			   in->max_vars};
	uint64_t h = 14695981039346656037ULL;
	for (size_t i = 0; i < v->n_sig + 9; i++) {
		uint64_t w = i < v->n_sig ? v->sig[i] : key[i - v->n_sig];
		h = (h ^ w) * 1099511628211ULL;
	}
	pthread_mutex_lock(&m->mu);
	struct memo_ent *x;
	while ((x = memo_find(m, h, v->sig, v->n_sig, key)) &&
	       x->state == MEMO_PENDING)
		pthread_cond_wait(&m->done, &m->mu);
	if (x) { /* answered */
		m->hits++;
		int rc = x->rc;
		if (rc < 0)
			*err = x->err;
		else if (opt_sched_copy(s, &x->s) < 0)
			rc = gms_errf(err, "out of memory");
		pthread_mutex_unlock(&m->mu);
		return rc;
	}
	/* the first to ask: a pending entry, solved outside the lock */
	x = calloc(1, sizeof *x);
	uint64_t *sig = malloc((v->n_sig ? v->n_sig : 1) * sizeof *sig);
	if (x && sig && m->n == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 16;
		struct memo_ent **e = realloc(m->e, cap * sizeof *e);
		if (e) {
			m->e = e;
			m->cap = cap;
		}
	}
	if (!x || !sig || m->n == m->cap) { /* solved without the memo */
		pthread_mutex_unlock(&m->mu);
		free(x);
		free(sig);
		return opt_solve(in, s, err);
	}
	memcpy(sig, v->sig, v->n_sig * sizeof *sig);
	*x = (struct memo_ent){.hash = h, .sig = sig, .n_sig = v->n_sig,
			       .state = MEMO_PENDING};
	memcpy(x->key, key, sizeof key);
	m->e[m->n++] = x;
	pthread_mutex_unlock(&m->mu);
	int rc = opt_solve(in, s, err);
	pthread_mutex_lock(&m->mu);
	x->rc = rc;
	if (rc < 0)
		x->err = *err;
	bool keep = rc < 0 ? strncmp(err->msg, "infeasible", 10) == 0
			   : opt_sched_copy(&x->s, s) == 0;
	if (keep) {
		x->state = MEMO_DONE;
		m->solves++;
	} else { /* not kept (out of memory): the next asker solves it */
		for (size_t i = 0; i < m->n; i++)
			if (m->e[i] == x) {
				m->e[i] = m->e[--m->n];
				break;
			}
		memo_ent_free(x);
	}
	pthread_cond_broadcast(&m->done);
	pthread_mutex_unlock(&m->mu);
	return rc;
}

/* Solve block view v at peak budget L and keep budget K (recomputation
 * only when remat_only) into c's next option, if it has one, under the
 * whole problem's work limits and safety net (gin: node_limit,
 * lp_iterations, search, time_limit_s; policies/optimal_milp.c,
 * solve_child: no seconds limit reaches CBC, so the option is the same
 * on any machine), from opt_solve's MIP start (the framework's
 * schedule, else swap-all; the seed policies' schedules are the whole
 * workload's and are not cut into blocks); ws is scratch (per local
 * op). -1 with err. */
static int point_solve(const struct opt_in *gin, struct view *v, uint64_t L,
		       uint64_t K, bool remat_only, uint64_t *ws,
		       struct opt_blk_class *c, struct opt_blk_class *prev,
		       struct opt_blocks *bk, gms_err *err)
{
	const struct wl_workload *w = &v->w;
	uint32_t T = w->n_ops;
	if (K > L)
		K = L;
	for (uint32_t q = 0; q < c->n_opt; q++)
		if (c->opt[q].peak_cap == L && c->opt[q].keep_cap == K &&
		    c->opt[q].remat_only == remat_only)
			return 0;
	struct opt_blk_pt *pt = &c->pt[c->n_pt++];
	*pt = (struct opt_blk_pt){.peak_cap = L, .keep_cap = K,
				  .remat_only = remat_only, .opt = -1};
	/* solved for the menu before this one (doubled): the same problem
	 * under the same work limits gives the same answer, so it is
	 * taken over, not solved again */
	for (uint32_t q = 0; prev && q < prev->n_pt; q++) {
		const struct opt_blk_pt *p = &prev->pt[q];
		if (p->peak_cap != L || p->keep_cap != K ||
		    p->remat_only != remat_only)
			continue;
		bk->n_reused++;
		if (p->opt >= 0) {
			c->opt[c->n_opt] = prev->opt[p->opt];
			memset(&prev->opt[p->opt], 0, sizeof *prev->opt);
			pt->opt = (int32_t)c->n_opt++;
		}
		return 0;
	}
	for (uint32_t l = 0; l < T; l++)
		ws[l] = v->gop[l] == WL_NONE ? L - K : v->ws[l];
	struct opt_in in = {.lib = gin->lib, .wl = w, .op_time = v->time, .op_ws = ws,
			    .managed = v->man, .t_h2d = v->h2d,
			    .t_d2h = v->d2h, .budget = L, .fixed = 0,
			    .node_limit = gin->node_limit,
			    .lp_iterations = gin->lp_iterations,
			    .search = gin->search,
			    .time_limit_s = gin->time_limit_s,
			    .swap = gin->swap && !remat_only,
			    .remat = gin->remat, .max_vars = gin->max_vars,
			    .no_bound = true, .memo = gin->memo};
	struct opt_blk_opt *op = &c->opt[c->n_opt];
	gms_err e = {{0}};
	bk->n_solves++;
	if (memo_solve(&in, v, K, remat_only, &op->s, &e) < 0) {
		if (strncmp(e.msg, "infeasible", 10) == 0)
			return 0; /* an op's own working set is over L */
		return gms_errf(err, "%s", e.msg);
	}
	/* its work and what stopped it, whatever it gave */
	opt_work_add(&bk->work, &op->s.work);
	bk->n_killed += op->s.work.killed;
	bk->n_node_limit += op->s.work.node_limit && !op->s.work.killed;
	bool lp = strcmp(opt_search_used(gin->search, op->s.n_vars), "lp") == 0;
	bk->n_lp += lp;
	if (op->s.n_vars > c->n_vars)
		c->n_vars = op->s.n_vars;
	if (op->s.n_rows > c->n_rows)
		c->n_rows = op->s.n_rows;
	if (op->s.status == OPT_INFEASIBLE ||
	    op->s.status == OPT_NO_SOLUTION) {
		opt_sched_free(&op->s);
		return 0;
	}
	op->proven = op->s.status == OPT_OPTIMAL;
	op->stopped = op->proven	   ? NULL
		      : op->s.work.killed ? "safety net"
		      : lp		   ? "search lp"
		      : op->s.work.node_limit ? "node_limit"
					   : "cbc stopped short";
	op->peak_cap = L;
	op->keep_cap = K;
	op->remat_only = remat_only;
	op->time = op->s.objective;
	for (uint32_t l = 0; l < T; l++)
		if (v->gop[l] == WL_NONE &&
		    op->s.mem[l] - (double)ws[l] > (double)op->keep)
			op->keep = (uint64_t)llround(op->s.mem[l] -
						     (double)ws[l]);
	pt->opt = (int32_t)c->n_opt++;
	return 0;
}

/* Solve a distinct block (view v) for its menu of budgets: peaks Lmax
 * (the framework's own schedule's) and the midpoint between it and Lmin
 * (the largest working set of one op; Rockmate's nb_budget_peak is 2),
 * each with keeps 0, Kmax/(menu-1), ..., Kmax (what the framework's
 * schedule holds across a gap), each under the work limits, and
 * each point solved twice when both swapping and recomputation are
 * allowed (point_solve). An infeasible point gives no option. -1 with
 * err. */
static int class_solve(const struct opt_in *gin, struct view *v,
		       uint32_t menu, struct opt_blk_class *c,
		       struct opt_blk_class *prev, struct opt_blocks *bk,
		       gms_err *err)
{
	const struct wl_workload *w = &v->w;
	uint32_t T = w->n_ops, N = w->n_tensors;
	int64_t *live = calloc((size_t)T + 1, sizeof *live);
	int64_t *across = calloc((size_t)T + 1, sizeof *across);
	if (!live || !across) {
		free(live);
		free(across);
		return gms_errf(err, "out of memory");
	}
	uint64_t lmin = 0, lmax = 0, kmax = 0;
	for (uint32_t j = 0; j < N; j++) {
		const struct wl_tensor *t = &w->tensors[j];
		if (!v->man[j])
			continue;
		uint32_t p = t->producer,
			 L = t->n_readers ? t->readers[t->n_readers - 1] : p;
		live[p] += (int64_t)t->bytes;
		live[L + 1] -= (int64_t)t->bytes;
		across[p + 1] += (int64_t)t->bytes;
		across[L > p ? L : p + 1] -= (int64_t)t->bytes;
	}
	int64_t run = 0, acr = 0;
	for (uint32_t l = 0; l < T; l++) {
		run += live[l];
		acr += across[l];
		const struct wl_op *o = &w->ops[l];
		if (v->gop[l] == WL_NONE) {
			if ((uint64_t)acr > kmax)
				kmax = (uint64_t)acr;
			if ((uint64_t)acr > lmax)
				lmax = (uint64_t)acr;
			continue;
		}
		uint64_t own = v->ws[l];
		for (uint32_t a = 0; a < o->n_in + o->n_out; a++) {
			uint32_t j = a < o->n_in ? o->in[a] : o->out[a - o->n_in];
			bool first = true;
			for (uint32_t q = 0; q < a; q++)
				first &= (q < o->n_in ? o->in[q]
						      : o->out[q - o->n_in]) != j;
			if (v->man[j] && first)
				own += w->tensors[j].bytes;
		}
		if (own > lmin)
			lmin = own;
		if ((uint64_t)run + v->ws[l] > lmax)
			lmax = (uint64_t)run + v->ws[l];
	}
	free(live);
	free(across);
	if (lmin > lmax)
		lmin = lmax;
	uint64_t peaks[2] = {lmax, lmin + (lmax - lmin) / 2};
	uint32_t nk = v->n_gaps ? menu : 1;
	c->opt = calloc(4 * (size_t)nk, sizeof *c->opt);
	c->pt = calloc(4 * (size_t)nk, sizeof *c->pt);
	if (!c->opt || !c->pt)
		return gms_errf(err, "out of memory");
	if (prev) { /* the same block's problem: the same sizes */
		c->n_vars = prev->n_vars;
		c->n_rows = prev->n_rows;
	}
	uint64_t *ws = malloc((T ? T : 1) * sizeof *ws);
	if (!ws)
		return gms_errf(err, "out of memory");
	for (int pi = 0; pi < 2; pi++) {
		if (pi && peaks[pi] == peaks[pi - 1])
			continue;
		for (uint32_t ki = nk; ki-- > 0;) {
			uint64_t K = nk > 1 ? kmax * ki / (nk - 1) : 0;
			/* the joint MILP, and Checkmate's recomputation-only
			 * problem as Rockmate's options are (easier for CBC:
			 * on a 12-block GPT-2 block at 70% every one of its
			 * points is proven within node_limit 1000, where the
			 * joint tightest-keep point stops at it) */
			for (int ro = 0; ro < (gin->swap && gin->remat ? 2 : 1);
			     ro++)
				if (point_solve(gin, v, peaks[pi], K, ro, ws,
						c, prev, bk, err) < 0) {
					free(ws);
					return -1;
				}
		}
	}
	free(ws);
	return 0;
}

static void classes_free(struct opt_blk_class *c, uint32_t n)
{
	for (uint32_t k = 0; c && k < n; k++) {
		for (uint32_t o = 0; o < c[k].n_opt; o++)
			opt_sched_free(&c[k].opt[o].s);
		free(c[k].opt);
		free(c[k].pt);
	}
	free(c);
}

void opt_blocks_free(struct opt_blocks *b)
{
	classes_free(b->c, b->n_classes);
	free(b->cls);
	free(b->choice);
	memset(b, 0, sizeof *b);
}

/* CSR lists of the whole schedule: count (fill false), then fill. */
struct lists {
	uint32_t *off, *item;
	uint8_t *flag;
	uint32_t *pos;
};

static void lists_put(struct lists *l, bool fill, uint32_t t, uint32_t v,
		      uint8_t f)
{
	if (!fill) {
		l->off[t + 1]++;
		return;
	}
	uint32_t at = l->pos[t]++;
	l->item[at] = v;
	if (l->flag)
		l->flag[at] = f;
}

int opt_blocks_solve(const struct opt_in *in, uint32_t menu,
		     uint32_t menu_max, struct opt_sched *s,
		     struct opt_blocks *bk, gms_err *err)
{
	const struct wl_workload *wl = in->wl;
	uint32_t T = wl->n_ops, N = wl->n_tensors, NB = wl->n_blocks;
	memset(s, 0, sizeof *s);
	memset(bk, 0, sizeof *bk);
	bk->menu = bk->menu_first = menu < 2 ? 2 : menu;
	bk->menu_max = menu_max;
	struct opt_sched gb;
	memset(&gb, 0, sizeof gb);
	struct opt_blk_class *prev = NULL;
	bk->node_limit = in->node_limit;
	if (!NB)
		return gms_errf(err, "decompose: '%s' has no block marks "
				     "(wl_op.block): nothing to decompose",
				wl->name);
	struct ctx x = {.in = in, .wl = wl};
	int rc = -1;
	uint32_t *first = malloc(NB * sizeof *first);
	uint32_t *pos = malloc(NB * sizeof *pos); /* block -> chain index */
	uint32_t *ord = malloc(NB * sizeof *ord);
	uint32_t *nops = calloc(NB, sizeof *nops);
	uint32_t *bop_off = calloc((size_t)NB + 1, sizeof *bop_off);
	uint32_t *bops = malloc((T ? T : 1) * sizeof *bops);
	int64_t *diff = calloc((size_t)T + 2, sizeof *diff);
	uint64_t *base = calloc(T ? T : 1, sizeof *base);
	int32_t *cnt = calloc((size_t)T + 2, sizeof *cnt);
	struct view *views = NULL;
	struct opt_dp_opt *dopt = NULL;
	uint32_t *doff = NULL, *choice = NULL;
	uint64_t *need = NULL, *keep = NULL;
	x.internal = calloc(N ? N : 1, sizeof *x.internal);
	x.end = malloc((N ? N : 1) * sizeof *x.end);
	x.gmap = malloc((N ? N : 1) * sizeof *x.gmap);
	x.lidx = malloc((T ? T : 1) * sizeof *x.lidx);
	x.last = malloc(NB * sizeof *x.last);
	if (!first || !pos || !ord || !nops || !bop_off || !bops || !diff ||
	    !base || !cnt || !x.internal || !x.end || !x.gmap || !x.lidx ||
	    !x.last)
		goto oom;
	for (uint32_t b = 0; b < NB; b++) {
		first[b] = x.last[b] = pos[b] = WL_NONE;
	}
	for (uint32_t j = 0; j < N; j++)
		x.gmap[j] = WL_NONE;
	/* the chain: blocks in order of their first op */
	uint32_t nb = 0;
	for (uint32_t t = 0; t < T; t++) {
		uint32_t b = wl->ops[t].block;
		x.lidx[t] = WL_NONE;
		if (b == WL_NONE)
			continue;
		if (first[b] == WL_NONE) {
			first[b] = t;
			pos[b] = nb;
			ord[nb++] = b;
		}
		x.last[b] = t;
		nops[pos[b]]++;
	}
	for (uint32_t k = 0; k < nb; k++)
		bop_off[k + 1] = bop_off[k] + nops[k];
	for (uint32_t k = 0; k < nb; k++)
		nops[k] = 0;
	for (uint32_t t = 0; t < T; t++) {
		uint32_t b = wl->ops[t].block;
		if (b != WL_NONE)
			bops[bop_off[pos[b]] + nops[pos[b]]++] = t;
	}
	/* nested as a chain: block k+1's span inside block k's, and no op
	 * of block k inside block k+1's span */
	for (uint32_t k = 0; k + 1 < nb; k++) {
		uint32_t a = ord[k], b = ord[k + 1];
		if (x.last[b] > x.last[a]) {
			gms_errf(err,
				 "decompose: the blocks of '%s' do not nest as "
				 "a chain: block %u (ops %s .. %s) ends after "
				 "block %u (%s .. %s)",
				 wl->name, b, wl->ops[first[b]].name,
				 wl->ops[x.last[b]].name, a,
				 wl->ops[first[a]].name, wl->ops[x.last[a]].name);
			goto out;
		}
		for (uint32_t q = bop_off[k]; q < bop_off[k + 1]; q++)
			if (bops[q] > first[b] && bops[q] < x.last[b]) {
				gms_errf(err,
					 "decompose: the blocks of '%s' do not "
					 "nest as a chain: op '%s' of block %u "
					 "runs inside block %u (%s .. %s)",
					 wl->name, wl->ops[bops[q]].name, a, b,
					 wl->ops[first[b]].name,
					 wl->ops[x.last[b]].name);
				goto out;
			}
	}
	/* internal tensors; every other managed one is a boundary tensor,
	 * live from its producer (the batch: from the start) to the op
	 * after which the executor frees it (its last reader, or its
	 * release point) */
	for (uint32_t j = 0; j < N; j++) {
		const struct wl_tensor *t = &wl->tensors[j];
		uint32_t p = t->producer;
		uint32_t s0 = p == WL_NONE ? 0 : p;
		uint32_t e = t->n_readers ? t->readers[t->n_readers - 1] : s0;
		if (t->release_after != WL_NONE && t->release_after > e)
			e = t->release_after;
		x.end[j] = e;
		if (!in->managed[j])
			continue;
		/* a release point (PyTorch's saved variables, held to the
		 * layer's last backward op) inside the same block keeps it
		 * internal: the block's MILP, like the exact one, frees it
		 * after its last reader (docs/optimal.md: release points are
		 * not modelled) */
		bool inside = p != WL_NONE && wl->ops[p].block != WL_NONE &&
			      (t->release_after == WL_NONE ||
			       wl->ops[t->release_after].block ==
				       wl->ops[p].block);
		for (uint32_t r = 0; inside && r < t->n_readers; r++)
			inside = wl->ops[t->readers[r]].block ==
				 wl->ops[p].block;
		x.internal[j] = inside;
		if (!inside) {
			diff[s0] += (int64_t)t->bytes;
			diff[e + 1] -= (int64_t)t->bytes;
		}
	}
	int64_t run = 0;
	for (uint32_t t = 0; t < T; t++) {
		run += diff[t];
		base[t] = in->fixed + (uint64_t)run;
	}
	/* n(t) for an op in no block: the blocks whose span holds it */
	for (uint32_t k = 0; k < nb; k++) {
		cnt[first[ord[k]] + 1]++;
		cnt[x.last[ord[k]]]--;
	}
	need = calloc((size_t)nb + 1, sizeof *need);
	if (!need)
		goto oom;
	int32_t open = 0;
	for (uint32_t t = 0; t < T; t++) {
		open += cnt[t];
		if (wl->ops[t].block != WL_NONE)
			continue;
		bk->other_time += (double)in->op_time[t];
		uint64_t nd = base[t] + in->op_ws[t];
		if (nd > need[open])
			need[open] = nd;
	}
	/* the views, and the distinct ones solved */
	views = calloc(nb ? nb : 1, sizeof *views);
	bk->cls = malloc((nb ? nb : 1) * sizeof *bk->cls);
	bk->choice = malloc((nb ? nb : 1) * sizeof *bk->choice);
	bk->c = calloc(nb ? nb : 1, sizeof *bk->c);
	if (!views || !bk->cls || !bk->choice || !bk->c)
		goto oom;
	bk->n_blocks = nb;
	for (uint32_t k = 0; k < nb; k++) {
		struct view *v = &views[k];
		if (view_build(&x, ord[k], bops + bop_off[k],
			       bop_off[k + 1] - bop_off[k], v) < 0)
			goto oom;
		uint32_t c = 0;
		for (; c < bk->n_classes; c++) {
			const struct view *r = &views[bk->c[c].rep];
			if (r->n_sig == v->n_sig &&
			    !memcmp(r->sig, v->sig, v->n_sig * sizeof *v->sig))
				break;
		}
		bk->cls[k] = c;
		if (c < bk->n_classes)
			continue;
		bk->n_classes++;
		bk->c[c].rep = k;
		bk->c[c].n_stages = v->w.n_ops;
		bk->c[c].n_gaps = v->n_gaps;
	}
	/* the global bound: the whole workload's relaxation, never the
	 * decomposition's figures (first: when it proves that nothing
	 * fits, no finer menu is tried) */
	if (opt_bound(in, &gb, err) < 0)
		goto out;
	choice = calloc(nb ? nb : 1, sizeof *choice);
	keep = calloc((size_t)nb + 1, sizeof *keep);
	if (!choice || !keep)
		goto oom;
	bk->unit = (in->budget + DP_SLOTS - 1) / DP_SLOTS;
	if (!bk->unit)
		bk->unit = 1;
	double best = 0;
	int drc;
	for (;;) {
		for (uint32_t c = 0; c < bk->n_classes; c++)
			if (class_solve(in, &views[bk->c[c].rep], bk->menu,
					&bk->c[c], prev ? &prev[c] : NULL, bk,
					err) < 0)
				goto out;
		classes_free(prev, bk->n_classes);
		prev = NULL;
		/* each block's options: its time, its peak beside base
		 * memory, its keep */
		free(doff);
		free(dopt);
		doff = calloc((size_t)nb + 1, sizeof *doff);
		for (uint32_t k = 0; k < nb; k++)
			if (doff)
				doff[k + 1] = doff[k] + bk->c[bk->cls[k]].n_opt;
		dopt = calloc(doff && doff[nb] ? doff[nb] : 1, sizeof *dopt);
		if (!doff || !dopt)
			goto oom;
		for (uint32_t k = 0; k < nb; k++) {
			const struct view *v = &views[k];
			const struct opt_blk_class *c = &bk->c[bk->cls[k]];
			for (uint32_t o = 0; o < c->n_opt; o++) {
				struct opt_dp_opt *d = &dopt[doff[k] + o];
				d->time = c->opt[o].time;
				d->keep = c->opt[o].keep;
				for (uint32_t l = 0; l < v->w.n_ops; l++) {
					if (v->gop[l] == WL_NONE)
						continue;
					uint64_t m =
						base[v->gop[l]] +
						(uint64_t)llround(
							c->opt[o].s.mem[l]);
					if (m > d->peak)
						d->peak = m;
				}
			}
		}
		drc = opt_chain_dp(nb, doff, dopt, need, in->budget, bk->unit,
				   choice, &best);
		if (drc < 0)
			goto oom;
		if (drc == 0 || bk->menu > bk->menu_max / 2)
			break;
		if (gb.bnd_status == OPT_INFEASIBLE) {
			bk->bound_infeasible = true;
			break;
		}
		/* no combination fits: a finer menu of keep budgets
		 * (Rockmate's nb_budget_save is 10 where the default here is
		 * 4) may give a block an option between two of this menu's
		 * points; the doubling is counted and reported */
		prev = bk->c;
		bk->c = calloc(nb ? nb : 1, sizeof *bk->c);
		if (!bk->c) {
			bk->c = prev;
			prev = NULL;
			goto oom;
		}
		for (uint32_t c = 0; c < bk->n_classes; c++) {
			bk->c[c].rep = prev[c].rep;
			bk->c[c].n_stages = prev[c].n_stages;
			bk->c[c].n_gaps = prev[c].n_gaps;
		}
		bk->menu *= 2;
		bk->n_doubled++;
	}
	for (uint32_t c = 0; c < bk->n_classes; c++)
		for (uint32_t o = 0; o < bk->c[c].n_opt; o++)
			bk->n_proven += bk->c[c].opt[o].proven;
	s->n_stages = T;
	snprintf(s->start, sizeof s->start, "none");
	s->lp_bound = s->best_bound = NAN;
	s->work = bk->work;
	for (uint32_t c = 0; c < bk->n_classes; c++) {
		s->n_vars += bk->c[c].n_vars;
		s->n_rows += bk->c[c].n_rows;
	}
	if (drc == 1) {
		s->status = OPT_INFEASIBLE;
	} else {
		memcpy(bk->choice, choice, nb * sizeof *choice);
		s->status = OPT_OPTIMAL;
		s->objective = best + bk->other_time;
		for (uint32_t k = 0; k < nb; k++) {
			keep[k + 1] = keep[k] +
				      bk->c[bk->cls[k]].opt[choice[k]].keep;
			if (!bk->c[bk->cls[k]].opt[choice[k]].proven)
				s->status = OPT_FEASIBLE;
		}
		/* the whole schedule: each block's lists at its stages, a
		 * gap stage's at the last stage of its gap */
		struct lists L[4] = {{0}};
		s->rc_off = calloc((size_t)T + 1, sizeof *s->rc_off);
		s->in_off = calloc((size_t)T + 1, sizeof *s->in_off);
		s->out_off = calloc((size_t)T + 1, sizeof *s->out_off);
		s->rel_off = calloc((size_t)T + 1, sizeof *s->rel_off);
		s->mem = calloc(T ? T : 1, sizeof *s->mem);
		s->stall = calloc(T ? T : 1, sizeof *s->stall);
		uint32_t *p4 = calloc(4 * ((size_t)T + 1), sizeof *p4);
		if (!s->rc_off || !s->in_off || !s->out_off || !s->rel_off ||
		    !s->mem || !s->stall || !p4) {
			free(p4);
			goto oom;
		}
		L[0].off = s->rc_off;
		L[1].off = s->in_off;
		L[2].off = s->out_off;
		L[3].off = s->rel_off;
		for (int f = 0; f < 4; f++)
			L[f].pos = p4 + (size_t)f * (T + 1);
		for (int fill = 0; fill < 2; fill++) {
			if (fill) {
				for (int f = 0; f < 4; f++) {
					for (uint32_t t = 0; t < T; t++)
						L[f].off[t + 1] += L[f].off[t];
					memcpy(L[f].pos, L[f].off,
					       (size_t)T * sizeof *L[f].pos);
				}
				s->rc = malloc((s->rc_off[T] + 1) * sizeof *s->rc);
				s->in = malloc((s->in_off[T] + 1) * sizeof *s->in);
				s->out = malloc((s->out_off[T] + 1) *
						sizeof *s->out);
				s->rel = malloc((s->rel_off[T] + 1) *
						sizeof *s->rel);
				s->rel_evict = malloc(s->rel_off[T] + 1);
				if (!s->rc || !s->in || !s->out || !s->rel ||
				    !s->rel_evict) {
					free(p4);
					goto oom;
				}
				L[0].item = s->rc;
				L[1].item = s->in;
				L[2].item = s->out;
				L[3].item = s->rel;
				L[3].flag = s->rel_evict;
			}
			for (uint32_t k = 0; k < nb; k++) {
				const struct view *v = &views[k];
				const struct opt_sched *o =
					&bk->c[bk->cls[k]].opt[choice[k]].s;
				for (uint32_t l = 0; l < v->w.n_ops; l++) {
					/* a gap's: the stage before the op
					 * that ends it */
					uint32_t g = v->gop[l] != WL_NONE
							     ? v->gop[l]
							     : v->gop[l + 1] - 1;
					for (uint32_t q = o->rc_off[l];
					     q < o->rc_off[l + 1]; q++)
						lists_put(&L[0], fill, g,
							  v->gop[o->rc[q]], 0);
					for (uint32_t q = o->in_off[l];
					     q < o->in_off[l + 1]; q++)
						lists_put(&L[1], fill, g,
							  v->gten[o->in[q]], 0);
					for (uint32_t q = o->out_off[l];
					     q < o->out_off[l + 1]; q++)
						lists_put(&L[2], fill, g,
							  v->gten[o->out[q]], 0);
					for (uint32_t q = o->rel_off[l];
					     q < o->rel_off[l + 1]; q++)
						lists_put(&L[3], fill, g,
							  v->gten[o->rel[q]],
							  o->rel_evict[q]);
					if (fill) {
						s->stall[g] += o->stall[l];
						if (v->gop[l] != WL_NONE)
							s->mem[g] +=
								o->mem[l] +
								(double)keep[k];
					}
				}
			}
		}
		free(p4);
		open = 0;
		s->peak_mem = 0;
		for (uint32_t t = 0; t < T; t++) {
			open += cnt[t];
			if (wl->ops[t].block == WL_NONE)
				s->mem[t] += (double)(keep[open] +
						      in->op_ws[t]);
			s->mem[t] += (double)base[t];
			if (s->mem[t] > s->peak_mem)
				s->peak_mem = s->mem[t];
		}
	}
	s->bnd_status = gb.bnd_status;
	s->bnd_lp = gb.bnd_lp;
	s->bnd_best = gb.bnd_best;
	s->bound = gb.bound;
	s->bnd_vars = gb.bnd_vars;
	s->bnd_rows = gb.bnd_rows;
	s->bnd_int = gb.bnd_int;
	s->bnd_work = gb.bnd_work;
	s->solve_s += gb.solve_s;
	rc = 0;
	goto out;
oom:
	gms_errf(err, "out of memory");
out:
	opt_sched_free(&gb);
	classes_free(prev, bk->n_classes);
	for (uint32_t k = 0; views && k < nb; k++)
		view_free(&views[k]);
	free(views);
	free(first);
	free(pos);
	free(ord);
	free(nops);
	free(bop_off);
	free(bops);
	free(diff);
	free(base);
	free(cnt);
	free(need);
	free(keep);
	free(doff);
	free(dopt);
	free(choice);
	free(x.internal);
	free(x.end);
	free(x.gmap);
	free(x.lidx);
	free(x.last);
	if (rc < 0) {
		opt_sched_free(s);
		opt_blocks_free(bk);
	}
	return rc;
}

const char *opt_blocks_why_none(const struct opt_blocks *b)
{
	return b->bound_infeasible ? "the global relaxation proves that no "
				     "schedule fits, so not doubled"
				   : "doubled again it would pass menu_max";
}

void opt_blocks_report(const struct opt_blocks *b, const struct opt_sched *s,
		       FILE *out)
{
	uint32_t n_opt = 0;
	uint64_t vars = 0, rows = 0;
	uint32_t stages = 0;
	for (uint32_t c = 0; c < b->n_classes; c++) {
		n_opt += b->c[c].n_opt;
		if (b->c[c].n_vars > vars)
			vars = b->c[c].n_vars;
		if (b->c[c].n_rows > rows)
			rows = b->c[c].n_rows;
		if (b->c[c].n_stages > stages)
			stages = b->c[c].n_stages;
	}
	fprintf(out,
		"    solver             cbc by blocks, %s: the OPTIMUM OVER "
		"THE BLOCK DECOMPOSITION (Rockmate's options, Rotor's chain "
		"DP), not a global bound\n"
		"    decomposition      %u blocks, %u distinct; %u options "
		"from %u block solves (%u proven optimal), %u keep budgets "
		"per peak budget\n"
		"    problem            per block up to %u stages, %llu "
		"variables, %llu constraints; DP slot %llu B\n"
		"    block solves       node_limit %lld each: %u stopped by "
		"node_limit, %u searched as LPs, %u killed by the safety net; "
		"%llu nodes, %llu cbc iterations, %llu lp iterations\n",
		opt_status_names[s->status], b->n_blocks, b->n_classes, n_opt,
		b->n_solves, b->n_proven, b->menu, stages,
		(unsigned long long)vars, (unsigned long long)rows,
		(unsigned long long)b->unit, (long long)b->node_limit,
		b->n_node_limit, b->n_lp, b->n_killed,
		(unsigned long long)b->work.nodes,
		(unsigned long long)b->work.iter,
		(unsigned long long)b->work.lp_iter);
	fprintf(out, "    menu doubled       ");
	if (b->n_doubled)
		fprintf(out, "%u times: no combination of menu %u's options "
			     "fits, solved again up to menu %u (menu_max %u; "
			     "%u points shared with the menu before reused)",
			b->n_doubled, b->menu_first, b->menu, b->menu_max,
			b->n_reused);
	else
		fprintf(out, "0 times (menu_max %u)", b->menu_max);
	if (s->status == OPT_INFEASIBLE)
		fprintf(out, "; no combination fits at menu %u: %s", b->menu,
			opt_blocks_why_none(b));
	fprintf(out, "\n");
	for (uint32_t c = 0; c < b->n_classes; c++) {
		const struct opt_blk_class *k = &b->c[c];
		fprintf(out, "    block class %-6u %u stages, %u gaps:", c,
			k->n_stages, k->n_gaps);
		for (uint32_t o = 0; o < k->n_opt; o++) {
			const struct opt_blk_opt *op = &k->opt[o];
			fprintf(out, "%s %.0f ns keep %llu (peak<=%llu, "
				     "keep<=%llu%s, start %s%s%s)",
				o ? ";" : "", op->time,
				(unsigned long long)op->keep,
				(unsigned long long)op->peak_cap,
				(unsigned long long)op->keep_cap,
				op->remat_only ? ", recompute only" : "",
				op->s.start, op->proven ? "" : ", not proven: ",
				op->proven ? "" : op->stopped);
		}
		fprintf(out, "\n");
	}
	if (s->status == OPT_INFEASIBLE)
		return;
	fprintf(out, "    chosen             ");
	for (uint32_t k = 0; k < b->n_blocks; k++)
		fprintf(out, "%s%u:%u", k ? " " : "", b->cls[k], b->choice[k]);
	fprintf(out, " (class:option per block, chain order)\n");
}
