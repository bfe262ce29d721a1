/*
 * capuchin_plan.c - Capuchin's Policy Maker (capuchin_plan.h): the peak
 * period, the eviction candidates, the swap phase, Algorithm 2
 * (recomputation) and Algorithm 1 (the hybrid of the two), on the access
 * list of the measured iteration. Pure planning: no clock, no executor.
 *
 * COMPLEXITY. n = accesses, T = tensors, C = candidates. Per-tensor
 * first/last/next accesses and the peak sweep: O(n + T). Candidates: one
 * pass over the accesses, O(n). Ranking by FT: O(C log C). In-triggers:
 * binary searches over the (sorted) access times, O(log n) each.
 * InitMSPS walks each candidate's lineage back to its sources: O(C * L),
 * L the lineage a walk crosses (a few ops in practice, the whole graph in
 * the worst case). Algorithm 2's loop as the paper writes it visits
 * every candidate and every chosen recomputation per selection (line 4,
 * lines 6-12, 17-33): O(C^2) over the plan. Here (issue 18) line 4 is a
 * tournament tree (O(log C) per change of a candidate) and lines 6-33
 * visit only the slots whose sources took the confirmed tensor in (an
 * index kept as sources are added) and the confirmed tensor's own
 * sources: per selection O((h + s) (s + log C)), h those holders and s
 * the size of a source set; the answers are the same (see "Indexes").
 * Lines 23-27's inner loop over recomps is a per-tensor count of the
 * recomps whose sources hold it (the same sum, kept as the sources
 * change).
 * The usage profile (issue 28): O(n) to build, a segment tree over its
 * instants; each candidate looked at costs a range maximum and each
 * decision a range addition, O(log n). planner: queue prices a swap on
 * two more segment trees over the accesses, O(log n) a swap.
 *
 * DETERMINISM. Every choice is a total order on integers (FT, tensor id)
 * or on an MSPS (an IEEE double from integers) then tensor id; no hashing,
 * no addresses.
 */
#include "capuchin_plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- Small sorted sets of tensor ids (Algorithm 2's srcs) ------------ */

/* A list of tensor ids: a set (sorted, no repeats) or, for the lineage
 * walk, a stack. */
struct cp_set {
	uint32_t *v;	/* members, ascending when a set */
	uint32_t n, cap; /* size and capacity */
};

/* Room for one more id. 0 or -1 (out of memory). */
static int ids_reserve(struct cp_set *s)
{
	if (s->n < s->cap)
		return 0;
	uint32_t cap = s->cap ? s->cap * 2 : 8;
	uint32_t *v = realloc(s->v, cap * sizeof *v);
	if (!v)
		return -1;
	s->v = v;
	s->cap = cap;
	return 0;
}

/* Index of the first member >= x. */
static uint32_t set_lower(const struct cp_set *s, uint32_t x)
{
	uint32_t lo = 0, hi = s->n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (s->v[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Insert x; 1 if it was added, 0 if already there, -1 out of memory. */
static int set_add(struct cp_set *s, uint32_t x)
{
	uint32_t i = set_lower(s, x);
	if (i < s->n && s->v[i] == x)
		return 0;
	if (ids_reserve(s) < 0)
		return -1;
	memmove(s->v + i + 1, s->v + i, (s->n - i) * sizeof *s->v);
	s->v[i] = x;
	s->n++;
	return 1;
}

/* ---- The peak-memory period ----------------------------------------- */

/* Per tensor: index of its first and last access, SIZE_MAX if none; and
 * per access the index of the same tensor's next access (SIZE_MAX at its
 * last). next may be NULL. */
static void cp_lifetimes(const struct cp_input *in, size_t *first,
			 size_t *last, size_t *next)
{
	uint32_t nt = in->wl->n_tensors;
	for (uint32_t t = 0; t < nt; t++)
		first[t] = last[t] = SIZE_MAX;
	for (size_t i = in->n_acc; i-- > 0;) {
		uint32_t t = in->acc[i].tensor;
		if (next)
			next[i] = first[t];
		if (last[t] == SIZE_MAX)
			last[t] = i;
		first[t] = i;
	}
}

/* Section 4.5: "During profiling, we can keep track allocation and
 * deallocation time of tensors to infer memory usage." The usage at a
 * time is the bytes of the non-persistent tensors whose first access is
 * at or before it and whose last access is at or after it: accesses of
 * equal time form one instant (all their first accesses counted, then
 * all their last accesses released). Fills grp (per access: its instant)
 * and use (per instant: the usage, plus in->demand of its accesses) and
 * returns the number of instants. O(n). */
static size_t cp_profile(const struct cp_input *in, const size_t *first,
			 const size_t *last, size_t *grp, int64_t *use)
{
	const struct wl_tensor *tt = in->wl->tensors;
	int64_t u = 0;
	size_t g = 0;
	for (size_t i = 0; i < in->n_acc; g++) {
		size_t j = i;
		sim_time_t now = in->acc[i].time;
		int64_t extra = 0;
		for (; j < in->n_acc && in->acc[j].time == now; j++) {
			uint32_t t = in->acc[j].tensor;
			grp[j] = g;
			if (first[t] == j && !in->persistent[t])
				u += (int64_t)tt[t].bytes;
			if (in->demand)
				extra += (int64_t)in->demand[j];
		}
		use[g] = u + extra;
		for (size_t k = i; k < j; k++) {
			uint32_t t = in->acc[k].tensor;
			if (last[t] == k && !in->persistent[t])
				u -= (int64_t)tt[t].bytes;
		}
		i = j;
	}
	return g;
}

/* The period over the profile: [first, last] instant over budget, or the
 * instant of the maximum. */
static void cp_sweep(const struct cp_input *in, const size_t *grp,
		     const int64_t *use, size_t ng, uint64_t budget,
		     sim_time_t *begin, sim_time_t *end)
{
	*begin = *end = in->n_acc ? in->acc[0].time : 0;
	bool over = false;
	int64_t max = 0;
	sim_time_t at_max = *begin;
	size_t i = 0;
	for (size_t g = 0; g < ng; g++) {
		while (grp[i] != g)
			i++;
		sim_time_t now = in->acc[i].time;
		if (use[g] > 0 && (uint64_t)use[g] > budget) {
			if (!over)
				*begin = now;
			*end = now;
			over = true;
		}
		if (use[g] > max) {
			max = use[g];
			at_max = now;
		}
	}
	if (!over)
		*begin = *end = at_max;
}

void cp_peak_period(const struct cp_input *in, uint64_t budget,
		    sim_time_t *begin, sim_time_t *end)
{
	uint32_t nt = in->wl->n_tensors;
	size_t na = in->n_acc ? in->n_acc : 1;
	size_t *first = malloc((nt ? nt : 1) * sizeof *first);
	size_t *last = malloc((nt ? nt : 1) * sizeof *last);
	size_t *grp = malloc(na * sizeof *grp);
	int64_t *use = malloc(na * sizeof *use);
	if (!first || !last || !grp || !use) {
		/* no memory to sweep: the whole iteration is the period */
		*begin = in->n_acc ? in->acc[0].time : 0;
		*end = in->n_acc ? in->acc[in->n_acc - 1].time : 0;
	} else {
		cp_lifetimes(in, first, last, NULL);
		size_t ng = cp_profile(in, first, last, grp, use);
		cp_sweep(in, grp, use, ng, budget, begin, end);
	}
	free(first);
	free(last);
	free(grp);
	free(use);
}

/* ---- A segment tree: add over a range, maximum over a range --------
 * The usage profile (issue 28: each chosen tensor lowers it over the
 * span it is out) and the copy queues of planner: queue (a swap added at
 * one position delays everything queued after it) are both ranges of
 * additions with maxima asked over ranges: O(log n) each. Node k holds
 * the maximum under it including its own pending addition lz[k]. */
struct cp_seg {
	size_t n;	/* positions */
	size_t tn;	/* leaves: a power of two >= n */
	int64_t *mx;	/* per node: max under it, lz[k] included */
	int64_t *lz;	/* per node: added to all under it */
};

/* Positions past n never win a maximum. */
#define CP_SEG_NONE (INT64_MIN / 4)

static int seg_init(struct cp_seg *s, size_t n, const int64_t *v)
{
	s->n = n;
	s->tn = 1;
	while (s->tn < n)
		s->tn *= 2;
	s->mx = malloc(2 * s->tn * sizeof *s->mx);
	s->lz = calloc(2 * s->tn, sizeof *s->lz);
	if (!s->mx || !s->lz)
		return -1;
	for (size_t i = 0; i < s->tn; i++)
		s->mx[s->tn + i] = i < n ? (v ? v[i] : 0) : CP_SEG_NONE;
	for (size_t k = s->tn; k-- > 1;)
		s->mx[k] = s->mx[2 * k] > s->mx[2 * k + 1] ? s->mx[2 * k]
							    : s->mx[2 * k + 1];
	return 0;
}

static void seg_free(struct cp_seg *s)
{
	free(s->mx);
	free(s->lz);
	memset(s, 0, sizeof *s);
}

static void seg_add_at(struct cp_seg *s, size_t k, size_t nl, size_t nr,
		       size_t l, size_t r, int64_t v)
{
	if (r <= nl || nr <= l)
		return;
	if (l <= nl && nr <= r) {
		s->mx[k] += v;
		s->lz[k] += v;
		return;
	}
	size_t m = nl + (nr - nl) / 2;
	seg_add_at(s, 2 * k, nl, m, l, r, v);
	seg_add_at(s, 2 * k + 1, m, nr, l, r, v);
	int64_t a = s->mx[2 * k], b = s->mx[2 * k + 1];
	s->mx[k] = (a > b ? a : b) + s->lz[k];
}

/* Add v at positions [l, r). */
static void seg_add(struct cp_seg *s, size_t l, size_t r, int64_t v)
{
	if (l < r)
		seg_add_at(s, 1, 0, s->tn, l, r, v);
}

static int64_t seg_max_at(const struct cp_seg *s, size_t k, size_t nl,
			  size_t nr, size_t l, size_t r)
{
	if (r <= nl || nr <= l)
		return CP_SEG_NONE;
	if (l <= nl && nr <= r)
		return s->mx[k];
	size_t m = nl + (nr - nl) / 2;
	int64_t a = seg_max_at(s, 2 * k, nl, m, l, r);
	int64_t b = seg_max_at(s, 2 * k + 1, m, nr, l, r);
	return (a > b ? a : b) + s->lz[k];
}

/* The maximum over [l, r); CP_SEG_NONE when empty. */
static int64_t seg_max(const struct cp_seg *s, size_t l, size_t r)
{
	return l < r ? seg_max_at(s, 1, 0, s->tn, l, r) : CP_SEG_NONE;
}

/* ---- planner: queue: one FIFO copy queue per direction ---------------
 * A copy queued at position p (an access of the measured list, in time
 * order) with issue time time(p) finishes, behind everything queued at or
 * before p, at W(p) = max over queued positions q <= p of (time(q) +
 * D(q)) - D(p + 1), D(q) being the duration queued at q or later (a
 * single server, first come first served: the busy period that contains
 * p started at some queued q). key[q] holds time(q) + D(q), less
 * CP_Q_IDLE while nothing is queued at q; dur[q] holds D(q). Adding a
 * copy of d at p adds d to both over [0, p]: O(log n). */
#define CP_Q_IDLE ((int64_t)1 << 60)

struct cp_queue {
	struct cp_seg key; /* per position: time + D, or less CP_Q_IDLE */
	struct cp_seg dur; /* per position (n + 1): D */
	uint32_t *cnt;	   /* per position: copies queued there */
};

static int q_init(struct cp_queue *q, const struct cp_input *in)
{
	size_t n = in->n_acc;
	int64_t *v = malloc((n ? n : 1) * sizeof *v);
	q->cnt = calloc(n ? n : 1, sizeof *q->cnt);
	int rc = -1;
	if (v && q->cnt) {
		for (size_t i = 0; i < n; i++)
			v[i] = in->acc[i].time - CP_Q_IDLE;
		rc = seg_init(&q->key, n, v) | seg_init(&q->dur, n + 1, NULL);
	}
	free(v);
	return rc;
}

static void q_free(struct cp_queue *q)
{
	seg_free(&q->key);
	seg_free(&q->dur);
	free(q->cnt);
}

/* Queue (d > 0) or take back (d < 0) a copy of |d| at position p. */
static void q_add(struct cp_queue *q, size_t p, sim_time_t d)
{
	seg_add(&q->key, 0, p + 1, d);
	seg_add(&q->dur, 0, p + 1, d);
	if (d > 0 && q->cnt[p]++ == 0)
		seg_add(&q->key, p, p + 1, CP_Q_IDLE);
	else if (d < 0 && --q->cnt[p] == 0)
		seg_add(&q->key, p, p + 1, -CP_Q_IDLE);
}

/* W(p): when the last copy queued at or before p finishes. */
static sim_time_t q_finish(const struct cp_queue *q, size_t p)
{
	return seg_max(&q->key, 0, p + 1) - seg_max(&q->dur, p + 1, p + 2);
}

/* ---- In-triggers ----------------------------------------------------- */

/* The first index in (lo, hi) whose time is > t (hi when none). */
static size_t first_after(const struct cp_input *in, size_t lo, size_t hi,
			  sim_time_t t)
{
	size_t a = lo + 1, b = hi;
	while (a < b) {
		size_t mid = a + (b - a) / 2;
		if (in->acc[mid].time > t)
			b = mid;
		else
			a = mid + 1;
	}
	return a;
}

size_t cp_walk_back(const struct cp_input *in, size_t evict, size_t back,
		    sim_time_t start)
{
	/* Section 4.4: "we can traverse reversely from the back-access in
	 * tensor access list to look for the first tensor access whose time
	 * is earlier than SwapInStartTime". Times do not decrease along the
	 * list, so the first such access walking back from back-1 is the
	 * last index in (evict, back) with time < start: the one before the
	 * first index there whose time is >= start (a binary search). */
	size_t a = evict + 1, b = back;
	while (a < b) {
		size_t mid = a + (b - a) / 2;
		if (in->acc[mid].time >= start)
			b = mid;
		else
			a = mid + 1;
	}
	size_t k;
	if (a > evict + 1)
		k = a - 1;
	else /* none earlier: the gap is too short to hide the swap-in;
		issue it as early as the pair allows */
		k = evict + 1 < back ? evict + 1 : back;
	return k;
}

size_t cp_choose_trigger(const struct cp_input *in, size_t evict, size_t back,
			 sim_time_t start)
{
	size_t k = cp_walk_back(in, evict, back, start);
	/* "First, the in-trigger should not be set at a point within the
	 * time range of peak memory. Doing so will likely cause the eviction
	 * of other tensors, similar to on-demand swapping in passive mode."
	 * Moved to the first access after the period. */
	if (k < back && in->acc[k].time >= in->peak_begin &&
	    in->acc[k].time <= in->peak_end)
		k = first_after(in, k, back, in->peak_end);
	return k;
}

/* ---- Candidates ------------------------------------------------------ */

/* One tensor of the eviction candidate set, with Algorithm 2's state. */
struct cp_cand {
	uint32_t tensor;     /* tensor id */
	size_t evict, back;  /* its pair: indices in cp_input.acc */
	sim_time_t ft;	     /* FT of the pair, equation (1) */
	bool live;	     /* still in the candidate set */
	bool recomp_ok;	     /* recompute-eligible: a recomputable
				producer and sources found */
	struct cp_set srcs;  /* recomputation sources */
	sim_time_t rp_time;  /* recomputation time from srcs */
	sim_time_t ext_time; /* repeated recomputation (lines 22-31) */
	double msps;	     /* equation (2) */
};

/* Where a tensor stands in the plan. */
enum cp_state {
	CS_NONE,   /* not a candidate */
	CS_CAND,   /* in the candidate set */
	CS_SWAP,   /* chosen for swapping */
	CS_RECOMP, /* chosen for recomputation */
};

/* One entry of a tensor's holders: a slot whose srcs took the tensor in
 * (it may have been replaced since: checked where used). */
struct cp_holder {
	uint32_t slot; /* index in cp_ctx.c */
	uint32_t next; /* next entry of the same tensor, or UINT32_MAX */
};

/* The planner's working state. */
struct cp_ctx {
	const struct cp_input *in; /* the input */
	struct cp_cand *c;	   /* candidates */
	size_t nc;		   /* how many */
	uint32_t *slot;		   /* per tensor: index in c, or UINT32_MAX */
	uint8_t *state;		   /* per tensor: enum cp_state */
	size_t *last;		   /* per tensor: index of its last access */
	uint32_t *nref;		   /* per tensor: recomps whose srcs hold it
				      (lines 23-27's count) */
	uint32_t *seen_t, *seen_o; /* per tensor, per op: walk stamp */
	uint32_t stamp;		   /* current walk */
	struct cp_set stack;	   /* the walk's work list */
	uint32_t *tree;		   /* MaxMSPS's tournament: node k > 0 holds
				      the best recompute-eligible live slot
				      under it (UINT32_MAX: none); leaves
				      at tn + slot */
	size_t tn;		   /* leaves (a power of two >= nc) */
	struct cp_holder *hn;	   /* who holds a tensor in its srcs */
	size_t nhn, caphn;	   /* used and allocated */
	uint32_t *hhead;	   /* per tensor: first holder, or
				      UINT32_MAX */
	uint32_t *vis;		   /* per slot: visit stamp of a holders
				      walk */
	uint32_t vstamp;	   /* current holders walk */
	uint64_t need;		   /* CP_SAVING_SCALAR: mem_saving still
				      to find */
	size_t *grp;		   /* per access: its instant */
	size_t ng;		   /* instants */
	struct cp_seg prof;	   /* CP_SAVING_PROFILE: per instant, the
				      usage left by the decisions so far */
	int64_t room;		   /* in->room */
	struct cp_queue qout, qin; /* planner: queue: D2H and H2D */
	struct cp_plan *out;	   /* the plan */
};

/* Section 4.5: "we insert a tensor to the eviction candidate set if: (i)
 * access count of the tensor is more than one; (ii) the access of the
 * tensor occurs in tensor lives in peak memory usage period." Each pair
 * of consecutive accesses (i, j) whose gap overlaps the period is
 * eligible; a tensor's pair is its eligible pair of largest FT (ties:
 * the earliest). "we generate a ranked list based on the length of FT
 * between two consecutive tensor accesses, assuming the tensor is swapped
 * out between the two accesses." FT (equation 1) = SwapInStartTime -
 * SwapOutEndTime: "SwapOutEndTime is equal to the evicted-access time
 * plus the SwapTime ... The ideal SwapInStartTime can be calculated by
 * subtracting the SwapTime from back-access time." */
static sim_time_t pair_ft(const struct cp_input *in, uint32_t t, size_t i,
			  size_t j)
{
	return (in->acc[j].time - in->swap_in[t]) -
	       (in->acc[i].time + in->swap_out[t]);
}

/* Size floor (issue 28): a tensor smaller than in->min_bytes is never a
 * candidate. capuchin.c sets it to one copy latency's worth of bytes
 * (latency x pinned bandwidth of the link, the larger direction): below
 * it a swap's time is mostly the fixed latency, not the bytes, so the
 * FT of equation (1) -- SwapTime "calculated by dividing tensor's memory
 * size by PCIe bandwidth" (4.3) -- misprices it, and what it frees is
 * less than the link moves in that latency. Batch-norm's saved
 * statistics (0.5-4 KiB at ResNet-50 b128) are such tensors. */
static void find_candidates(struct cp_ctx *x, const size_t *next)
{
	const struct cp_input *in = x->in;
	for (size_t i = 0; i < in->n_acc; i++) {
		uint32_t t = in->acc[i].tensor;
		size_t j = next[i];
		if (in->persistent[t] || j == SIZE_MAX ||
		    in->wl->tensors[t].bytes < in->min_bytes)
			continue;
		if (in->acc[i].time > in->peak_end ||
		    in->acc[j].time < in->peak_begin)
			continue;
		sim_time_t ft = pair_ft(in, t, i, j);
		uint32_t s = x->slot[t];
		if (s == UINT32_MAX) {
			s = x->slot[t] = (uint32_t)x->nc++;
			x->c[s] = (struct cp_cand){.tensor = t, .evict = i,
						   .back = j, .ft = ft,
						   .live = true};
			x->state[t] = CS_CAND;
		} else if (ft > x->c[s].ft) { /* ties keep the earliest */
			x->c[s].evict = i;
			x->c[s].back = j;
			x->c[s].ft = ft;
		}
	}
}

/* FT descending, then tensor id ascending. */
static int by_ft(const void *a, const void *b)
{
	const struct cp_cand *p = a, *q = b;
	if (p->ft != q->ft)
		return p->ft > q->ft ? -1 : 1;
	return p->tensor < q->tensor ? -1 : p->tensor > q->tensor;
}

/* Recomputation times saturate at SIM_TIME_MAX. Algorithm 2 adds a
 * source's rp_time to each candidate recomputed from it (line 21) and
 * multiplies by the repeats (lines 25, 31); where lineages share
 * ancestors (a residual add, an attention block) the same ancestor is
 * added along each path, and the sums grow geometrically with depth
 * (BERT-large: past 2^63 ns). Saturated, such a tensor ranks last by
 * MSPS, as the paper's figure would rank it. */
static sim_time_t sat_add(sim_time_t a, sim_time_t b)
{
	return a > SIM_TIME_MAX - b ? SIM_TIME_MAX : a + b;
}

static sim_time_t sat_mul(uint32_t k, sim_time_t a)
{
	return k && a > SIM_TIME_MAX / k ? SIM_TIME_MAX : (sim_time_t)k * a;
}

/* rp_time + ext_time: the recomputation time MSPS divides by. */
static sim_time_t recomp_time(const struct cp_cand *c)
{
	return sat_add(c->rp_time, c->ext_time);
}

/* ---- Indexes (issue 18): MaxMSPS and the holders of a source -------
 * Algorithm 2 as written scans every candidate for the largest MSPS
 * (line 4) and every recomputation and candidate for those whose sources
 * hold the confirmed tensor (lines 6-12, 17-33): O(C) per confirmation,
 * O(C^2) per plan. The same answers come from a tournament tree over the
 * slots, ordered as max_msps orders them (a strict total order, so the
 * maximum does not depend on the scan's order), and from an index of
 * the slots each tensor was added to the sources of. Each slot's update
 * depends on its own state, nref and the confirmed tensor only, so the
 * order of the updates does not change them. */

/* The better of slots a and b for MaxMSPS: recompute-eligible and live,
 * the larger MSPS, ties to the lower tensor id; UINT32_MAX for none. */
static uint32_t better(const struct cp_ctx *x, uint32_t a, uint32_t b)
{
	if (a == UINT32_MAX)
		return b;
	if (b == UINT32_MAX)
		return a;
	const struct cp_cand *p = &x->c[a], *q = &x->c[b];
	if (q->msps > p->msps || (q->msps == p->msps && q->tensor < p->tensor))
		return b;
	return a;
}

/* Slot i changed (MSPS, live or recomp_ok): its path to the root. */
static void tree_update(struct cp_ctx *x, size_t i)
{
	if (!x->tree)
		return;
	const struct cp_cand *c = &x->c[i];
	size_t k = x->tn + i;
	x->tree[k] = c->live && c->recomp_ok ? (uint32_t)i : UINT32_MAX;
	for (k >>= 1; k; k >>= 1)
		x->tree[k] = better(x, x->tree[2 * k], x->tree[2 * k + 1]);
}

/* The tree over every slot as it stands; -1 out of memory. */
static int tree_build(struct cp_ctx *x)
{
	x->tn = 1;
	while (x->tn < x->nc)
		x->tn *= 2;
	x->tree = malloc(2 * x->tn * sizeof *x->tree);
	if (!x->tree)
		return -1;
	for (size_t i = 0; i < x->tn; i++)
		x->tree[x->tn + i] = i < x->nc && x->c[i].live &&
					     x->c[i].recomp_ok
					     ? (uint32_t)i
					     : UINT32_MAX;
	for (size_t k = x->tn; k-- > 1;)
		x->tree[k] = better(x, x->tree[2 * k], x->tree[2 * k + 1]);
	return 0;
}

/* Slot `slot` took tensor u into its srcs. 0 or -1 out of memory. */
static int holder_push(struct cp_ctx *x, uint32_t u, size_t slot)
{
	if (x->nhn == x->caphn) {
		size_t cap = x->caphn ? x->caphn * 2 : 1024;
		struct cp_holder *h = realloc(x->hn, cap * sizeof *h);
		if (!h)
			return -1;
		x->hn = h;
		x->caphn = cap;
	}
	x->hn[x->nhn] = (struct cp_holder){(uint32_t)slot, x->hhead[u]};
	x->hhead[u] = (uint32_t)x->nhn++;
	return 0;
}

/* Add u to slot's srcs; 1 added, 0 already there or not kept, -1 out of
 * memory. Only candidates are kept: a source that is not a candidate (a
 * parameter, an input) is never confirmed, so it is never replaced (lines
 * 8-9, 19-20 replace the confirmed tensor), never one of lines 30-33's
 * candidates, and its nref is never read; keeping it changes no answer,
 * but along a run of confirmed tensors each candidate would take in all
 * their parameters, sets growing with the run (issue 18: quadratic in
 * the swaps of a long chain). */
static int src_add(struct cp_ctx *x, size_t slot, uint32_t u)
{
	if (x->slot[u] == UINT32_MAX)
		return 0;
	int r = set_add(&x->c[slot].srcs, u);
	if (r > 0 && holder_push(x, u, slot) < 0)
		return -1;
	return r;
}

/* Algorithm 2 lines 8-9 and 19-20: if t is in slot's srcs, remove it and
 * add the members of by. With count, nref (per tensor, the
 * recomputations whose sources hold it) follows the change. Returns 1 if
 * t was there, 0 if not, -1 out of memory. */
static int src_replace(struct cp_ctx *x, size_t slot, uint32_t t,
		       const struct cp_set *by, bool count)
{
	struct cp_set *s = &x->c[slot].srcs;
	uint32_t i = set_lower(s, t);
	if (i >= s->n || s->v[i] != t)
		return 0;
	memmove(s->v + i, s->v + i + 1, (s->n - i - 1) * sizeof *s->v);
	s->n--;
	if (count)
		x->nref[t]--;
	for (uint32_t k = 0; k < by->n; k++) {
		int r = src_add(x, slot, by->v[k]);
		if (r < 0)
			return -1;
		if (r > 0 && count)
			x->nref[by->v[k]]++;
	}
	return 1;
}

/* The slots that took tensor t into their srcs, each once, into *out (a
 * list, in no particular order). Returns how many, or -1 out of
 * memory. */
static long holders_of(struct cp_ctx *x, uint32_t t, struct cp_set *out)
{
	out->n = 0;
	x->vstamp++;
	for (uint32_t h = x->hhead[t]; h != UINT32_MAX; h = x->hn[h].next) {
		uint32_t slot = x->hn[h].slot;
		if (x->vis[slot] == x->vstamp)
			continue;
		x->vis[slot] = x->vstamp;
		if (ids_reserve(out) < 0)
			return -1;
		out->v[out->n++] = slot;
	}
	return (long)out->n;
}

/* ---- Decisions ------------------------------------------------------- */

/* A priced swap of a candidate: its in-trigger, when its swap-out ends,
 * and what the back-access waits. */
struct cp_price {
	size_t trigger;
	sim_time_t out_end;
	sim_time_t overhead;
};

/* Swap overhead (section 4.4) of candidate c with its in-trigger: the
 * swap-in starts at the later of the trigger and the end of the swap-out
 * (the tensor's own swap-out must end first) and the back-access waits
 * for what is left of it.
 * planner: paper prices it alone, "based on the ideal scenario without
 * considering the overall execution environment and other tensors"
 * (4.4), and leaves the rest to feedback ("because pinned memory
 * transfer occupies unidirectional PCIe lane exclusively, a swap cannot
 * start until its preceding swap finishes"). planner: queue (issue 28)
 * departs from that sentence: the swap-out joins the D2H queue at its
 * evicted-access and the swap-in the H2D queue at its in-trigger, behind
 * the swaps chosen so far (FIFO in time order, as 5.3's "two separate
 * CUDA streams to perform swapping out/in"), and is priced by when each
 * finishes there. Pricing queues it; unqueue() takes it back. Only the
 * candidate's own delay is priced: what it adds to chosen swaps queued
 * after it is left to feedback, as in the paper. */
static struct cp_price price_swap(struct cp_ctx *x, const struct cp_cand *c)
{
	const struct cp_input *in = x->in;
	uint32_t t = c->tensor;
	struct cp_price p;
	sim_time_t back = in->acc[c->back].time;
	p.trigger = cp_choose_trigger(in, c->evict, c->back, back - in->swap_in[t]);
	sim_time_t from = in->acc[p.trigger].time, in_end;
	if (in->planner == CP_PLANNER_QUEUE) {
		q_add(&x->qout, c->evict, in->swap_out[t]);
		q_add(&x->qin, p.trigger, in->swap_in[t]);
		p.out_end = q_finish(&x->qout, c->evict);
		in_end = q_finish(&x->qin, p.trigger);
		if (in_end < p.out_end + in->swap_in[t])
			in_end = p.out_end + in->swap_in[t];
	} else {
		p.out_end = in->acc[c->evict].time + in->swap_out[t];
		if (p.out_end > from)
			from = p.out_end;
		in_end = from + in->swap_in[t];
	}
	sim_time_t o = in_end - back;
	p.overhead = o > 0 ? o : 0;
	return p;
}

/* Take back what price_swap queued (a swap not chosen). */
static void unqueue(struct cp_ctx *x, const struct cp_cand *c,
		    const struct cp_price *p)
{
	if (x->in->planner != CP_PLANNER_QUEUE)
		return;
	q_add(&x->qout, c->evict, -x->in->swap_out[c->tensor]);
	q_add(&x->qin, p->trigger, -x->in->swap_in[c->tensor]);
}

/* The instants [*lo, *hi) over which c is out of memory: a swap from the
 * end of its swap-out (its block is released then) to its in-trigger
 * (the swap-in allocates there); a recomputation from after its
 * evicted-access's instant to its back-access's. p is NULL for a
 * recomputation. */
static void out_span(const struct cp_ctx *x, const struct cp_cand *c,
		     const struct cp_price *p, size_t *lo, size_t *hi)
{
	const struct cp_input *in = x->in;
	if (!p) {
		*lo = x->grp[c->evict] + 1;
		*hi = x->grp[c->back];
		return;
	}
	/* the first access after the evicted-access at or after out_end */
	size_t a = c->evict + 1, b = p->trigger;
	while (a < b) {
		size_t mid = a + (b - a) / 2;
		if (in->acc[mid].time >= p->out_end)
			b = mid;
		else
			a = mid + 1;
	}
	*lo = x->grp[a];
	*hi = x->grp[p->trigger];
}

/* Whether the plan frees enough. Section 4.5: "Note that the required
 * memory reduction to make the whole training fit in GPU memory can be
 * obtained from measured execution -- with passive mode the amount is the
 * total memory size of evicted tensors. If the reduced memory using swap
 * is larger than this amount, we have selected enough tensors in
 * eviction set and the process can terminate." and Algorithm 1 line 12,
 * "mem_saving <- mem_saving - t.mem". CP_SAVING_SCALAR does that. But an
 * evicted tensor reduces memory only while it is out, and "to make the
 * whole training fit" is a condition at every instant, not on a sum: a
 * tensor out from the first layers to the last backward ones and one out
 * over a few ops of the backward pass count the same in the sum, while
 * only the first lowers the forward-to-backward peak. CP_SAVING_PROFILE
 * (issue 28) reads the requirement as the paper's own measure of memory
 * ("keep track allocation and deallocation time of tensors to infer
 * memory usage", 4.5): the stall-free usage at each instant, which must
 * come within the budget everywhere; each chosen tensor lowers it over
 * its out_span. */
static bool enough(const struct cp_ctx *x)
{
	if (x->in->saving == CP_SAVING_SCALAR)
		return x->need == 0;
	return x->ng == 0 || seg_max(&x->prof, 0, x->ng) <= x->room;
}

/* Whether evicting c over [lo, hi) lowers an instant still over the
 * budget (CP_SAVING_SCALAR: always). A candidate that does not is left
 * out of the set: the profile only comes down, so it never will. */
static bool helps(const struct cp_ctx *x, size_t lo, size_t hi)
{
	if (x->in->saving == CP_SAVING_SCALAR)
		return true;
	return lo < hi && seg_max(&x->prof, lo, hi) > x->room;
}

/* Record a decision and take the candidate out of the set. p: the
 * swap's price (its copies stay queued), NULL for a recomputation. */
static void decide(struct cp_ctx *x, struct cp_cand *c, enum cp_how how,
		   const struct cp_price *p)
{
	struct cp_decision *d = &x->out->d[x->out->n++];
	uint64_t bytes = x->in->wl->tensors[c->tensor].bytes;
	*d = (struct cp_decision){.tensor = c->tensor, .how = how,
				  .evict = c->evict, .back = c->back,
				  .trigger = p ? p->trigger : c->back,
				  .free_time = c->ft,
				  .overhead = p ? p->overhead : recomp_time(c)};
	if (how == CP_RECOMPUTE) {
		d->msps = c->msps;
		d->rp_time = recomp_time(c);
	}
	c->live = false;
	tree_update(x, (size_t)(c - x->c));
	x->state[c->tensor] = how == CP_SWAP ? CS_SWAP : CS_RECOMP;
	x->out->saved += bytes;
	/* Algorithm 1 line 12 / Algorithm 2 line 15: mem_saving -= t.mem */
	x->need = bytes >= x->need ? 0 : x->need - bytes;
	size_t lo, hi;
	out_span(x, c, p, &lo, &hi);
	seg_add(&x->prof, lo, hi, -(int64_t)bytes);
}

/* Leave c out of the set (it lowers no instant still over the budget);
 * it stays resident, so it stays a recomputation source. */
static void drop_cand(struct cp_ctx *x, struct cp_cand *c)
{
	c->live = false;
	tree_update(x, (size_t)(c - x->c));
}

/* ---- Algorithm 2: recomputation -------------------------------------- */

/* Equation (2): MSPS = Memory Saving / Recomputation Time, the time
 * being rp_time + ext_time (Algorithm 2's UpdateMSPS). */
static void update_msps(struct cp_ctx *x, struct cp_cand *c)
{
	sim_time_t tm = recomp_time(c);
	double b = (double)x->in->wl->tensors[c->tensor].bytes;
	c->msps = tm > 0 ? b / (double)tm : INFINITY;
	tree_update(x, (size_t)(c - x->c));
}

/* Push the inputs of op o not yet seen by this walk; add its time once. */
static int walk_op(struct cp_ctx *x, uint32_t o, sim_time_t *rp)
{
	const struct wl_op *op = &x->in->wl->ops[o];
	if (x->seen_o[o] == x->stamp)
		return 0;
	x->seen_o[o] = x->stamp;
	*rp = sat_add(*rp, x->in->op_time[o]);
	for (uint32_t k = 0; k < op->n_in; k++) {
		uint32_t u = op->in[k];
		if (x->seen_t[u] == x->stamp)
			continue;
		x->seen_t[u] = x->stamp;
		if (ids_reserve(&x->stack) < 0)
			return -1;
		x->stack.v[x->stack.n++] = u;
	}
	return 0;
}

/* InitMSPS for candidate c (section 4.4): walk its lineage back from its
 * producer to the sources available at its back-access. An input u is a
 * source when it is persistent; or a candidate still in the set ("whether
 * a tensor in the lineage is recomputation candidate - they are assumed
 * to be in GPU memory"); or its last access is at or after the
 * back-access ("we compare T3's last access time with T4's back-access
 * time. If the former is larger, we assume T3 is available at T4's
 * recomputation"). A tensor chosen for swapping is never a source
 * (capuchin-review.md: "recomputation and swapping cannot occur at the
 * same time"): the walk goes through its producer. Otherwise u is
 * recomputed too ("otherwise, T3 itself also needs to be recomputed"),
 * or, with no recomputable producer, c cannot be recomputed.
 * With candidates as find_candidates makes them, the last-access rule
 * never accepts a tensor the candidate rule does not: an ancestor u of c
 * is produced before c's evicted-access, so if u is read at or after c's
 * back-access, u lives across c's pair, which overlaps the peak, and one
 * of u's own pairs overlaps it too. It is kept as the paper states it.
 * An op with several outputs on the way is re-run (and counted) once. */
static int init_msps(struct cp_ctx *x, struct cp_cand *c)
{
	const struct cp_input *in = x->in;
	const struct wl_workload *wl = in->wl;
	uint32_t p = wl->tensors[c->tensor].producer;
	c->recomp_ok = false;
	c->srcs.n = 0;
	c->rp_time = c->ext_time = 0;
	if (p == WL_NONE || !wl->ops[p].recomputable)
		return 0;
	sim_time_t back = in->acc[c->back].time, rp = 0;
	x->stamp++;
	x->stack.n = 0;
	x->seen_t[c->tensor] = x->stamp;
	if (walk_op(x, p, &rp) < 0)
		return -1;
	while (x->stack.n) {
		uint32_t u = x->stack.v[--x->stack.n];
		size_t l = x->last[u];
		bool src = in->persistent[u] ||
			   (x->state[u] != CS_SWAP &&
			    (x->state[u] == CS_CAND ||
			     (l != SIZE_MAX && in->acc[l].time >= back)));
		if (src) {
			if (src_add(x, (size_t)(c - x->c), u) < 0)
				return -1;
			continue;
		}
		uint32_t q = wl->tensors[u].producer;
		if (q == WL_NONE || !wl->ops[q].recomputable) {
			c->srcs.n = 0; /* no source: not recompute-eligible */
			return 0;
		}
		if (walk_op(x, q, &rp) < 0)
			return -1;
	}
	c->recomp_ok = true;
	c->rp_time = rp;
	update_msps(x, c);
	return 0;
}

/* Algorithm 2 line 4, MaxMSPS(candidates): ties to the lower tensor id.
 * NULL when no live candidate can be recomputed. */
static struct cp_cand *max_msps(struct cp_ctx *x)
{
	uint32_t best = x->tree[1];
	return best == UINT32_MAX ? NULL : &x->c[best];
}

/* Algorithm 2 lines 5-33: confirm t for recomputation and update the
 * recomputations and the candidates it affects. */
static int confirm_recompute(struct cp_ctx *x, struct cp_cand *t)
{
	struct cp_set h = {0};
	if (holders_of(x, t->tensor, &h) < 0)
		return -1;
	/* lines 5-12: recomputations that started from t start from t's
	 * sources; each repeats t's recomputation */
	uint32_t ext_ct = 1;
	for (uint32_t k = 0; k < h.n; k++) {
		if (x->state[x->c[h.v[k]].tensor] != CS_RECOMP)
			continue;
		int rc = src_replace(x, h.v[k], t->tensor, &t->srcs, true);
		if (rc < 0)
			goto oom;
		ext_ct += (uint32_t)rc;
	}
	/* lines 13-15 */
	for (uint32_t k = 0; k < t->srcs.n; k++)
		x->nref[t->srcs.v[k]]++;
	decide(x, t, CP_RECOMPUTE, NULL);
	/* lines 17-29: the candidates whose sources hold t */
	for (uint32_t k = 0; k < h.n; k++) {
		struct cp_cand *cand = &x->c[h.v[k]];
		if (!cand->live || !cand->recomp_ok)
			continue;
		int rc = src_replace(x, h.v[k], t->tensor, &t->srcs, false);
		if (rc < 0)
			goto oom;
		if (rc) {
			cand->rp_time = sat_add(cand->rp_time, t->rp_time);
			/* lines 22-27: one cand.rp_time per recomputation
			 * whose sources hold cand (nref counts them) */
			cand->ext_time =
				sat_mul(x->nref[cand->tensor], cand->rp_time);
			update_msps(x, cand);
		}
	}
	free(h.v);
	/* lines 30-33: the candidates among t's sources (after their
	 * lines 18-29, as in the paper's loop) */
	for (uint32_t k = 0; k < t->srcs.n; k++) {
		uint32_t slot = x->slot[t->srcs.v[k]];
		if (slot == UINT32_MAX)
			continue;
		struct cp_cand *cand = &x->c[slot];
		if (!cand->live || !cand->recomp_ok)
			continue;
		cand->ext_time = sat_mul(ext_ct, cand->rp_time);
		update_msps(x, cand);
	}
	return 0;
oom:
	free(h.v);
	return -1;
}

/* A swap is confirmed in the hybrid phase: the tensor will not be
 * resident when the others are recomputed, so candidates (and chosen
 * recomputations, for Algorithm 2's later ext_ct and lines 23-27) that
 * started from it start from its sources, and candidates add its
 * recomputation time. With no sources (it cannot be recomputed), the
 * candidates that needed it cannot be recomputed either. */
static int swap_confirmed(struct cp_ctx *x, const struct cp_cand *s)
{
	struct cp_set h = {0};
	if (holders_of(x, s->tensor, &h) < 0)
		return -1;
	int rc = 0;
	for (uint32_t k = 0; rc >= 0 && k < h.n; k++)
		if (x->state[x->c[h.v[k]].tensor] == CS_RECOMP)
			rc = src_replace(x, h.v[k], s->tensor, &s->srcs, true);
	for (uint32_t k = 0; rc >= 0 && k < h.n; k++) {
		struct cp_cand *cand = &x->c[h.v[k]];
		if (!cand->live || !cand->recomp_ok)
			continue;
		rc = src_replace(x, h.v[k], s->tensor, &s->srcs, false);
		if (rc <= 0)
			continue;
		if (!s->recomp_ok) {
			cand->recomp_ok = false;
			tree_update(x, h.v[k]);
			continue;
		}
		cand->rp_time = sat_add(cand->rp_time, s->rp_time);
		update_msps(x, cand);
	}
	free(h.v);
	return rc < 0 ? -1 : 0;
}

static int init_all(struct cp_ctx *x)
{
	for (size_t i = 0; i < x->nc; i++)
		if (x->c[i].live && init_msps(x, &x->c[i]) < 0)
			return -1;
	return tree_build(x);
}

/* ---- Algorithm 1 and the swap phase ---------------------------------- */

/* Price c's swap into *p (its copies queued). false, with the copies
 * taken back and c left out of the set, when its span lowers no instant
 * still over the budget. */
static bool swap_useful(struct cp_ctx *x, struct cp_cand *c,
			struct cp_price *p)
{
	*p = price_swap(x, c);
	size_t lo, hi;
	out_span(x, c, p, &lo, &hi);
	if (helps(x, lo, hi))
		return true;
	unqueue(x, c, p);
	drop_cand(x, c);
	return false;
}

/* The same for recomputing c. */
static bool recomp_useful(struct cp_ctx *x, struct cp_cand *c)
{
	size_t lo, hi;
	out_span(x, c, NULL, &lo, &hi);
	if (helps(x, lo, hi))
		return true;
	drop_cand(x, c);
	return false;
}

/* The next live candidate in FT order from *pos (the ranked list), or
 * NULL at its end. */
static struct cp_cand *next_swap(struct cp_ctx *x, size_t *pos)
{
	while (*pos < x->nc && !x->c[*pos].live)
		(*pos)++;
	return *pos < x->nc ? &x->c[*pos] : NULL;
}

static int plan_hybrid(struct cp_ctx *x, size_t pos)
{
	/* Section 4.5: "Otherwise, we will further consider both swap and
	 * recomputation for the tensor left in the candidate set." and
	 * "After choosing a tensor for recomputation, its overhead is
	 * compared with the overhead of the chosen tensor for swapping, the
	 * one with smaller overhead is finally confirmed. The other one is
	 * inserted back to candidate set for further consideration."
	 * Algorithm 1 lines 6-10: swap only when s_overhead < r_overhead
	 * reads as recompute on a tie; the text's "we choose the swap as the
	 * first choice" decides ties for the swap here. */
	if (init_all(x) < 0)
		return -1;
	while (!enough(x)) {
		struct cp_cand *s = next_swap(x, &pos);
		if (!s)
			break;
		struct cp_price sp;
		if (!swap_useful(x, s, &sp))
			continue;
		struct cp_cand *r = max_msps(x);
		if (r && !recomp_useful(x, r)) {
			unqueue(x, s, &sp);
			continue;
		}
		if (r && recomp_time(r) < sp.overhead) {
			unqueue(x, s, &sp);
			if (confirm_recompute(x, r) < 0)
				return -1;
		} else {
			decide(x, s, CP_SWAP, &sp);
			if (swap_confirmed(x, s) < 0)
				return -1;
		}
	}
	return 0;
}

static int plan_recompute(struct cp_ctx *x)
{
	/* Algorithm 2 lines 1-3: "while mem_saving > 0 do" */
	if (init_all(x) < 0)
		return -1;
	struct cp_cand *t;
	while (!enough(x) && (t = max_msps(x)))
		if (recomp_useful(x, t) && confirm_recompute(x, t) < 0)
			return -1;
	return 0;
}

/* Section 4.5: "we choose the swap as the first choice until we cannot
 * choose an in-trigger to perfectly hide the prefetching overhead" and
 * "we select tensor access pairs for eviction from the top of the list
 * with no overhead. The selected tensors are removed from eviction
 * candidate set." Returns the rank where it stopped. */
static size_t plan_swaps(struct cp_ctx *x)
{
	size_t pos = 0;
	struct cp_cand *c;
	while (!enough(x) && (c = next_swap(x, &pos))) {
		struct cp_price p;
		if (!swap_useful(x, c, &p))
			continue;
		if (p.overhead > 0 && x->in->mode != CP_SWAP_ONLY) {
			unqueue(x, c, &p);
			break;
		}
		decide(x, c, CP_SWAP, &p);
	}
	return pos;
}

static void ctx_free(struct cp_ctx *x)
{
	for (size_t i = 0; i < x->nc; i++)
		free(x->c[i].srcs.v);
	free(x->c);
	free(x->slot);
	free(x->state);
	free(x->last);
	free(x->nref);
	free(x->seen_t);
	free(x->seen_o);
	free(x->stack.v);
	free(x->tree);
	free(x->hn);
	free(x->hhead);
	free(x->vis);
	free(x->grp);
	seg_free(&x->prof);
	q_free(&x->qout);
	q_free(&x->qin);
}

int cp_plan(const struct cp_input *in, struct cp_plan *out, gms_err *err)
{
	memset(out, 0, sizeof *out);
	const struct wl_workload *wl = in->wl;
	size_t nt = wl->n_tensors ? wl->n_tensors : 1;
	size_t no = wl->n_ops ? wl->n_ops : 1;
	size_t na = in->n_acc ? in->n_acc : 1;
	struct cp_ctx x = {.in = in, .out = out, .need = in->mem_saving,
			   .room = in->room > INT64_MAX ? INT64_MAX
							 : (int64_t)in->room};
	size_t *first = malloc(nt * sizeof *first);
	size_t *next = malloc(na * sizeof *next);
	int64_t *use = malloc(na * sizeof *use);
	x.grp = malloc(na * sizeof *x.grp);
	x.c = malloc(nt * sizeof *x.c);
	x.slot = malloc(nt * sizeof *x.slot);
	x.state = calloc(nt, sizeof *x.state);
	x.last = malloc(nt * sizeof *x.last);
	x.nref = calloc(nt, sizeof *x.nref);
	x.seen_t = calloc(nt, sizeof *x.seen_t);
	x.seen_o = calloc(no, sizeof *x.seen_o);
	x.hhead = malloc(nt * sizeof *x.hhead);
	x.vis = calloc(nt, sizeof *x.vis);
	int rc = -1;
	if (!first || !next || !use || !x.grp || !x.c || !x.slot ||
	    !x.state || !x.last || !x.nref || !x.seen_t || !x.seen_o ||
	    !x.hhead || !x.vis)
		goto done;
	memset(x.slot, 0xff, nt * sizeof *x.slot);
	memset(x.hhead, 0xff, nt * sizeof *x.hhead);
	cp_lifetimes(in, first, x.last, next);
	x.ng = cp_profile(in, first, x.last, x.grp, use);
	if (seg_init(&x.prof, x.ng, use) < 0 ||
	    (in->planner == CP_PLANNER_QUEUE &&
	     (q_init(&x.qout, in) < 0 || q_init(&x.qin, in) < 0)))
		goto done;
	/* CP_SAVING_SCALAR: what guided iterations still evicted adds to
	 * the measured reduction */
	for (size_t i = 0; in->demand && i < in->n_acc; i++)
		x.need += in->demand[i];
	find_candidates(&x, next);
	out->n_candidates = x.nc;
	/* the ranked list; slots follow the new order */
	qsort(x.c, x.nc, sizeof *x.c, by_ft);
	for (size_t i = 0; i < x.nc; i++)
		x.slot[x.c[i].tensor] = (uint32_t)i;
	out->cap = x.nc ? x.nc : 1;
	out->d = malloc(out->cap * sizeof *out->d);
	if (!out->d)
		goto done;
	rc = 0;
	if (x.need == 0) /* nothing to save: the empty plan */
		goto done;
	if (in->mode == CP_RECOMPUTE_ONLY) {
		rc = plan_recompute(&x);
	} else {
		size_t pos = plan_swaps(&x);
		if (in->mode == CP_HYBRID && !enough(&x))
			rc = plan_hybrid(&x, pos);
	}
	if (in->saving == CP_SAVING_SCALAR) {
		out->shortfall = x.need;
	} else if (x.ng) {
		int64_t m = seg_max(&x.prof, 0, x.ng) - x.room;
		out->shortfall = m > 0 ? (uint64_t)m : 0;
		out->slack = malloc(na * sizeof *out->slack);
		if (!out->slack) {
			rc = -1;
			goto done;
		}
		for (size_t i = 0; i < in->n_acc; i++) {
			out->slack[i] = x.room - seg_max(&x.prof, x.grp[i],
							 x.grp[i] + 1);
		}
	}
done:
	free(first);
	free(next);
	free(use);
	ctx_free(&x);
	if (rc < 0) {
		cp_plan_free(out);
		return gms_errf(err, "capuchin: out of memory making the plan");
	}
	return 0;
}

void cp_plan_free(struct cp_plan *p)
{
	free(p->d);
	free(p->slack);
	memset(p, 0, sizeof *p);
}
