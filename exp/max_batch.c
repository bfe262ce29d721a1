/*
 * max_batch.c - the max-batch search (max_batch.h).
 *
 * The reference search (mb_walk) is the one max-batch ran before issue
 * 18: run start; double (capped at limit) while the batch fits; bisect
 * between the last batch that fitted (lo) and the first that did not
 * (hi); the answer is lo. It made 15-23 runs a search on the shipped
 * experiments, every one a full simulation.
 *
 * mb_search asks mb_walk's questions ("does batch x fit?") of a table of
 * the batches run so far, and answers one from the table without running
 * x when monotonic feasibility decides it: a batch below one that fitted
 * fits, a batch above one that did not fit does not (mb_known). When a
 * question cannot be answered, it runs either the batch asked, or a
 * batch where it predicts the boundary (mb_predict): the peak of
 * requested bytes of a batch that fits grows nearly linearly with the
 * batch for one network and policy (activations scale with it, weights
 * and workspaces do not), so the line through the two largest batches
 * that fitted reaches, at the boundary, the peak an OOM run reached
 * before it failed (or, with no OOM run yet, the budget). A policy that
 * swaps or recomputes keeps its peak near the budget and stops fitting
 * elsewhere (one op's working set); once a batch fits above a prediction
 * aimed at the budget, the search stops predicting.
 *
 * Why the answer is mb_walk's when feasibility is monotonic in the batch
 * (fits(x) and y < x imply fits(y)): every question of the walk is then
 * answered as running it would answer it -- a run gives the run's
 * result, and an inference from a run y gives fits(x) by monotonicity --
 * so the walk takes the same branches and ends at the same lo, which
 * mb_search then runs (the report is that batch's run). Predictions only
 * add rows to the table; they never answer a question wrongly.
 *
 * Fragmentation makes feasibility non-monotonic near the boundary
 * (capuchin-maxbatch: ResNet-50 under vdnn(offload=all) fits at 951, not
 * at 952 or 953, again at 954 and 955). There an inference can differ
 * from the run mb_walk made, and the walk would end elsewhere. So, once
 * the walk is complete, every question it asked within `confirm` of its
 * answer (the window the measurement already treats as non-monotonic),
 * and the answer and the batch above it, are run if they were inferred;
 * when a run contradicts its inference, the walk is asked again with it.
 * The answer is then always a batch that was run and fitted, with the
 * batch above it run and not fitting (or limit), as before.
 *
 * Predictions are safeguarded so that a bad one costs at most one run:
 * a prediction that neither halves the bracket [lo, hi) nor doubles lo
 * counts as failed and is followed by a question of the walk; after
 * MB_FAILED_MAX failed ones the search only walks. The bound on runs
 * under monotonic feasibility (mb_runs_max):
 *   1 (start) + the walk's other questions (see below)
 *   + successful predictions (each doubles lo, at most D times, or
 *     halves hi - lo, at most ceil(log2(limit - start + 2)) times)
 *   + MB_FAILED_MAX failed ones
 *   + the check: at most 2 confirm + 3 batches (the window, the answer
 *     and the batch above)
 *   + confirm
 * where D = the doublings from start to limit, and the walk asks at most
 * 1 + D + ceil(log2(limit - start + 1)) questions. For [1, 8192], confirm
 * 4: D = 13, the walk at most 27, so at most 1 + 26 + 13 + 14 + 2 + 11 +
 * 4 = 71 runs -- O(log(limit - start)), like the walk's 27 + 4.
 */
#include "max_batch.h"

#include <stdlib.h>
#include <string.h>

/* Failed predictions after which a search only walks (see above): two,
 * so that a prediction that missed once can be corrected by the next
 * (the line through a point nearer the boundary) before giving up. */
#define MB_FAILED_MAX 2

/* One batch run. */
struct mb_rec {
	int64_t batch;	  /* the batch */
	struct mb_obs o;  /* what it showed */
};

/* The table of runs and the search's counters. */
struct mb_st {
	const struct mb_cfg *c;	/* the range */
	mb_probe_fn fn;		/* runs a batch */
	void *ctx;		/* its context */
	struct mb_rec *rec;	/* batches run, in order */
	size_t n, cap;
	unsigned failed;	/* failed predictions */
	int64_t aimed;		/* the largest prediction aimed at the budget
				   (a line through two runs, no OOM peak above)
				   that fitted, 0: none */
	unsigned predicted;	/* predictions run */
};

/* The index of batch x in the table, or -1. */
static long mb_find(const struct mb_st *s, int64_t x)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->rec[i].batch == x)
			return (long)i;
	return -1;
}

/* Run batch x; -1 when fn stopped the search or memory ran out. */
static int mb_run(struct mb_st *s, int64_t x)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 32;
		struct mb_rec *p = realloc(s->rec, cap * sizeof *p);
		if (!p)
			return -1;
		s->rec = p;
		s->cap = cap;
	}
	struct mb_rec *r = &s->rec[s->n];
	memset(r, 0, sizeof *r);
	r->batch = x;
	if (s->fn(s->ctx, x, &r->o) < 0)
		return -1;
	s->n++;
	return 0;
}

/* Does x fit, as far as the table says: 1 or 0 when x was run or
 * monotonicity decides it (a batch that fitted above x, or one that did
 * not fit below it), -1 when nothing decides it or the table holds both
 * (non-monotonic around x: run it). */
static int mb_known(const struct mb_st *s, int64_t x)
{
	bool up = false, down = false;
	for (size_t i = 0; i < s->n; i++) {
		const struct mb_rec *r = &s->rec[i];
		if (r->batch == x)
			return r->o.fits;
		up |= r->o.fits && r->batch > x;
		down |= !r->o.fits && r->batch < x;
	}
	return up == down ? -1 : up;
}

/* The longest walk: start, then doublings to limit, then a bisection of
 * at most as many halvings as the last bracket's width needs. */
#define MB_PATH_CAP 128

/* One walk of the reference search over the table. */
struct mb_path {
	int64_t need;		  /* a question the table cannot answer
				     (run it), 0: the walk is complete */
	int64_t lo, hi;		  /* complete: the answer and the batch
				     above it that did not fit (lo + 1 when
				     capped) */
	bool capped;		  /* complete: lo is limit and fitted */
	int64_t q[MB_PATH_CAP];	  /* the questions asked, in order */
	bool a[MB_PATH_CAP];	  /* the answers the table gave */
	size_t n;
};

/* Ask the table x on behalf of the walk p; false when it cannot say (p
 * then needs x). */
static bool mb_ask(const struct mb_st *s, struct mb_path *p, int64_t x,
		   bool *fits)
{
	int k = mb_known(s, x);
	if (k < 0) {
		p->need = x;
		return false;
	}
	if (p->n < MB_PATH_CAP) {
		p->q[p->n] = x;
		p->a[p->n++] = k;
	}
	*fits = k;
	return true;
}

/* The reference search (the max-batch search before issue 18, step for
 * step) with the table as its oracle. start has been run and fitted. */
static void mb_walk(const struct mb_st *s, struct mb_path *p)
{
	const struct mb_cfg *c = s->c;
	memset(p, 0, sizeof *p);
	int64_t lo = c->start, hi;
	bool fits;
	mb_ask(s, p, lo, &fits); /* run first: known */
	for (;;) {
		int64_t b = lo > c->limit / 2 ? c->limit : lo * 2;
		if (b == lo) {
			p->capped = true;
			hi = lo + 1;
			break;
		}
		if (!mb_ask(s, p, b, &fits))
			return;
		if (!fits) {
			hi = b;
			break;
		}
		lo = b;
	}
	while (hi - lo > 1) {
		int64_t mid = lo + (hi - lo) / 2;
		if (!mb_ask(s, p, mid, &fits))
			return;
		if (fits)
			lo = mid;
		else
			hi = mid;
	}
	p->lo = lo;
	p->hi = hi;
}

/* The bracket the table gives assuming monotonicity: *H the least batch
 * that did not fit (limit + 1: none), *iL the index of the largest batch
 * below it that fitted (start fitted, so there is one). *iH: H's index,
 * -1 when none. */
static void mb_bracket(const struct mb_st *s, long *iL, long *iH, int64_t *H)
{
	*H = s->c->limit + 1;
	*iH = -1;
	for (size_t i = 0; i < s->n; i++)
		if (!s->rec[i].o.fits && s->rec[i].batch < *H) {
			*H = s->rec[i].batch;
			*iH = (long)i;
		}
	*iL = -1;
	for (size_t i = 0; i < s->n; i++)
		if (s->rec[i].o.fits && s->rec[i].batch < *H &&
		    (*iL < 0 || s->rec[i].batch > s->rec[*iL].batch))
			*iL = (long)i;
}

/* Where the boundary is predicted, a batch in (lo, hi) not yet run, or 0
 * when there is no prediction. The line through the two largest batches
 * below hi that fitted (through the origin when only one did: its peak
 * includes the weights, so that line is steeper and the prediction
 * short), extended to the threshold: the peak the OOM run at hi reached
 * when it is above lo's (that run failed when its requests reached what
 * the allocator could serve, so that is the most a run fits in: the
 * prediction is "calibrated"), else the budget (then only an upper
 * estimate, and none is made beyond hi). Less than one batch of headroom
 * above lo predicts lo + 1, its neighbour. A calibrated prediction at or
 * beyond hi is hi - 1: the line says the boundary is at hi. *aim: the
 * prediction is aimed at the budget along a line through two runs; when
 * one such fitted and a larger batch fitted too, the search stops
 * predicting (mb_st.aimed). */
static int64_t mb_predict(const struct mb_st *s, bool *aim)
{
	long iL, iH;
	int64_t H;
	mb_bracket(s, &iL, &iH, &H);
	const struct mb_rec *l = &s->rec[iL];
	int64_t L = l->batch;
	if (H - L <= 1 || !l->o.peak)
		return 0;
	const struct mb_rec *l2 = NULL;
	for (size_t i = 0; i < s->n; i++) {
		const struct mb_rec *r = &s->rec[i];
		if (r->o.fits && r->batch < L && r->o.peak &&
		    (!l2 || r->batch > l2->batch))
			l2 = r;
	}
	bool cal = iH >= 0 && s->rec[iH].o.peak > l->o.peak;
	/* a batch above a fitted prediction aimed at the budget fitted too:
	 * the policy does not stop where its peak reaches the budget (it
	 * swaps or recomputes), so neither the budget nor an OOM run's peak
	 * predicts where it stops */
	if (s->aimed && L > s->aimed)
		return 0;
	*aim = !cal && l2;
	double T = (double)(cal ? s->rec[iH].o.peak : l->o.budget);
	double g = (double)l->o.peak;
	if (g > T)
		return 0; /* lo fitted beyond the line: no prediction */
	double slope = l2 ? (g - (double)l2->o.peak) /
				    (double)(L - l2->batch)
			  : g / (double)L;
	if (!(slope > 0))
		return 0;
	double d = (T - g) / slope; /* batches of headroom above L */
	int64_t p = d >= (double)(H - L) ? H
		    : d < 1		 ? L + 1
					 : L + (int64_t)d;
	if (p >= H) {
		if (!cal || 0)
			return 0;
		p = H - 1;
	}
	return mb_find(s, p) < 0 ? p : 0;
}

/* Run a prediction p; false when it failed (neither halved the bracket
 * nor doubled its low end). */
static int mb_run_predicted(struct mb_st *s, int64_t p, bool *ok)
{
	long iL, iH;
	int64_t H0, H1;
	mb_bracket(s, &iL, &iH, &H0);
	int64_t L0 = s->rec[iL].batch;
	if (mb_run(s, p) < 0)
		return -1;
	s->predicted++;
	mb_bracket(s, &iL, &iH, &H1);
	int64_t L1 = s->rec[iL].batch;
	*ok = 2 * (H1 - L1) <= H0 - L0 || L1 >= 2 * L0;
	return 0;
}

/* Run, if the table only inferred it, question i of the complete walk p;
 * *contra: the run contradicts the inference. */
static int mb_check(struct mb_st *s, int64_t x, bool inferred, bool *contra)
{
	if (x > s->c->limit || mb_find(s, x) >= 0)
		return 0;
	if (mb_run(s, x) < 0)
		return -1;
	*contra |= s->rec[s->n - 1].o.fits != inferred;
	return 0;
}

int mb_search(const struct mb_cfg *c, mb_probe_fn fn, void *ctx,
	      struct mb_result *r)
{
	struct mb_st s = {.c = c, .fn = fn, .ctx = ctx};
	struct mb_path *p = malloc(sizeof *p);
	int rc = -1;
	memset(r, 0, sizeof *r);
	if (!p || mb_run(&s, c->start) < 0)
		goto out;
	if (!s.rec[0].o.fits) {
		rc = 0; /* nothing fits: best stays 0 */
		goto out;
	}
	bool walk_next = false; /* a prediction just failed */
	for (;;) {
		mb_walk(&s, p);
		if (p->need) {
			int64_t x = p->need, q = 0;
			bool ok = true, aim = false;
			if (!walk_next && s.failed < MB_FAILED_MAX)
				q = mb_predict(&s, &aim);
			if (q && q != x) {
				if (mb_run_predicted(&s, q, &ok) < 0)
					goto out;
				if (aim && s.rec[s.n - 1].o.fits && q > s.aimed)
					s.aimed = q;
			} else if (mb_run(&s, x) < 0) {
				goto out;
			}
			walk_next = !ok;
			s.failed += !ok;
			continue;
		}
		/* complete: run what it only inferred near its answer */
		bool contra = false;
		for (size_t i = 0; i < p->n; i++)
			if (p->q[i] >= p->lo - c->confirm &&
			    p->q[i] <= p->lo + c->confirm &&
			    mb_check(&s, p->q[i], p->a[i], &contra) < 0)
				goto out;
		if (mb_check(&s, p->lo, true, &contra) < 0 ||
		    (!p->capped && mb_check(&s, p->hi, false, &contra) < 0))
			goto out;
		if (!contra)
			break;
	}
	r->best = p->lo;
	r->capped = p->capped;
	for (int64_t b = p->lo + 1; b <= p->lo + c->confirm && b <= c->limit;
	     b++)
		if (mb_find(&s, b) < 0 && mb_run(&s, b) < 0)
			goto out;
	/* any batch run above the answer that fitted: the confirm window's,
	 * or an earlier one (non-monotonic feasibility) */
	for (size_t i = 0; i < s.n; i++)
		if (s.rec[i].o.fits && s.rec[i].batch > r->best &&
		    s.rec[i].batch > r->larger_fit)
			r->larger_fit = s.rec[i].batch;
	rc = 0;
out:
	r->runs = (unsigned)s.n;
	r->predicted = s.predicted;
	free(s.rec);
	free(p);
	return rc;
}

/* ceil(log2(n)) for n >= 1. */
static unsigned mb_log2_ceil(uint64_t n)
{
	unsigned k = 0;
	while (((uint64_t)1 << k) < n)
		k++;
	return k;
}

unsigned mb_runs_max(const struct mb_cfg *c)
{
	unsigned dbl = 0; /* doublings from start to limit */
	for (int64_t b = c->start; b < c->limit; b *= 2)
		dbl++;
	/* the walk: start, the doublings, a bisection of a bracket no wider
	 * than limit - start + 1 */
	unsigned path = 1 + dbl + mb_log2_ceil((uint64_t)(c->limit - c->start + 1));
	unsigned halvings = mb_log2_ceil((uint64_t)(c->limit - c->start + 2));
	return 1 + (path - 1) + dbl + halvings + MB_FAILED_MAX +
	       (unsigned)(2 * c->confirm + 3) + (unsigned)c->confirm;
}
