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
 *     (dtr-semantics.md 6); found by a best-first search of a tree of
 *     score bounds, not a scan (below, "The pool"). Evictable: resident
 *     (IN), not persistent, not used by a kernel being prepared or
 *     running (simrd's locks), and
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

#include <assert.h>
#include <math.h>
#include <pthread.h>
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
enum dtr_stop { STOP_NONE, STOP_OOM, STOP_THRASH, STOP_NOMEM };
static const char *const stop_names[] = {"none", "oom", "thrash",
					 "host-memory"};

/* ---- The pool ------------------------------------------------------------
 *
 * simrd's pool is a list of the storages made resident, in order; its
 * `choose` scores each and keeps the least, `cost <= best` (ties to the
 * later one), and the list drops a storage that is no longer resident
 * when a scan finds it so (dtr-semantics.md 6). Scoring the whole pool at
 * each failed allocation makes a run quadratic in its length (half of a
 * long chain is evicted: README, "Other targets", the scaling table).
 * Here the same choice, exactly, in O(log n) amortised per failure on a
 * chain:
 *
 * The pool's positions (the order of the list) are the leaves of a
 * segment tree; each node keeps, over the tensors below it that may be
 * candidates, the least remembered cost (c), the largest size (bytes) and
 * the earliest last access (last). A tensor's score is
 * dtr_cost(h, cost, bytes, last, now), where cost is its producer's
 * kernel time plus r >= 0, the kernel time of its evicted neighbourhoods
 * (region()); its leaf remembers a cost <= the current one (below), and
 * dtr_cost(h, node.c, node.bytes, node.last, now) is <= the score of
 * every tensor below the node, for every heuristic:
 *   dtr, dtr-eqclass: the exact c / (bytes x (now - last)) correctly
 *     rounded (dtr_div); the node's numerator is no larger, its
 *     denominator no smaller, and correct rounding is monotonic. Special
 *     cases: node bytes 0 means every size is 0 (+inf each); a node last
 *     of DTR_NEVER gives 0 <= any score; now <= node.last means
 *     now <= every last (+inf each).
 *   msps: c / bytes, the same without staleness.
 *   lru: the last access itself, as a double (monotonic).
 *   largest: 1 / bytes.
 * No heuristic falls back to a scan. The search is best-first (a heap of
 * nodes by bound, the later range first on equal bounds) and drops a node
 * whose bound is greater than the best score found, or equal to it with
 * every position of the node before the best's (a tie goes to the later
 * tensor): what remains is simrd's choice. bytes never goes stale, last
 * is refreshed at each access (a stale one would be earlier: lower).
 *
 * Remembered costs: a leaf starts from its producer's kernel time (the
 * dtr policy picks no algorithm, so it is fixed) and remembers the cost
 * of its last score. A neighbourhood only grows while its evicted tensors
 * stay evicted (its paths run through them), and an evicted tensor (made
 * this iteration, RECOMPUTE or NONE) stops being one only when it is
 * written again. So each evicted tensor met while scoring x gets a note
 * naming x; when it is written again, the leaves its notes name forget
 * back to their producer's time. Without them the bound ignores the
 * neighbourhoods, which on the bench's chain (about half evicted) triple
 * a cost: a search scored about 990 tensors a failure at 10K ops, 2.7
 * with them (the scan: 2,200; README, "Other targets", the scaling
 * table). A walk from the rewritten tensor instead of the notes would
 * cross every freed gradient of the chain (freed tensors count as
 * evicted): linear per write.
 *
 * Leaving the list: the scan drops every listed tensor that is not
 * resident (TS_IN) when it runs, and a tensor written again after that is
 * listed anew at the end. The tree sees only the tensors it visits, so a
 * tensor that left unseen is sorted out when it is written again: the
 * list would have dropped it iff a scan ran while it was away, which the
 * executor's departure stamps tell (ex_tensor_left_in against the
 * ex_departures noted at the scan; a tensor comes back to TS_IN only by a
 * write: the dtr policy never swaps). A tensor known to be away (dropped
 * here, or found away) is taken out of the bounds at once; one that left
 * unseen stays in them until a search reaches it (a bound lower than
 * need be, never higher). */
struct dtr_node {
	uint64_t c;	/* least own kernel time below */
	uint64_t bytes; /* largest size below */
	int64_t last;	/* earliest last access below; NODE_EMPTY: no
			   candidate below */
};
#define NODE_EMPTY INT64_MAX

/* A node waiting in the search's heap. */
struct dtr_heap {
	double bound; /* its bound */
	uint32_t node; /* its index */
	uint32_t hi;   /* its last position */
};

/* A note that leaf x's remembered cost counts a tensor (that tensor's
 * list, dtr_pool.notes). */
struct dtr_note {
	uint32_t x;    /* the listed tensor whose leaf remembers */
	uint32_t ver;  /* x's cver when noted: stale once it moved on */
	uint32_t next; /* the next note of the list (or free list) */
};

struct dtr_pool {
	uint32_t cap;	       /* leaves (a power of 2) */
	uint32_t n_pos;	       /* positions handed out this iteration */
	uint32_t *leaf;	       /* per position: its tensor, WL_NONE once
				  it left the list */
	struct dtr_node *node; /* 2 cap nodes, 1 the root, cap + position
				  the leaves */
	struct dtr_heap *heap; /* the search's heap */
	size_t heap_cap;       /* its entries */
	uint32_t *slot;	       /* per tensor: its position, WL_NONE: not
				  listed */
	uint64_t *wdep;	       /* per tensor: ex_departures() at its last
				  write */
	uint32_t *wscan;       /* per tensor: scans at its last write */
	bool *wout;	       /* per tensor: not TS_IN after its last
				  write */
	uint32_t *notes;       /* per tensor: its first note, WL_NONE */
	uint32_t *cver;	       /* per tensor: version of its leaf's
				  remembered cost */
	struct dtr_note *note; /* the notes */
	size_t n_note, cap_note; /* notes handed out, allocated */
	uint32_t free_note;    /* first free note, WL_NONE */
	bool note_lost;	       /* a note could not be made (host memory) */
	uint64_t scan_dep;     /* ex_departures() at the last scan */
	uint32_t scans;	       /* scans this iteration */
	uint64_t scored;       /* tensors scored, whole run */
	uint64_t searches;     /* searches, whole run */
};

/* The list as simrd keeps it, scanned whole (the code the tree
 * replaced), for dtr_full_verify. */
struct dtr_ref {
	uint32_t *pool;	  /* tensors in order; compacted as they leave */
	uint32_t n_pool;  /* entries */
	bool *in_pool;	  /* per tensor: listed */
	uint32_t *seq;	  /* scratch: the tree's resident tensors */
	uint64_t mismatches; /* choices or lists that differed */
	uint64_t scored;  /* tensors the whole scan scored */
};

struct dtr_full {
	uint32_t n;		/* tensors of the workload */
	int64_t *last;		/* per tensor: last access (ns), DTR_NEVER */
	int *made;		/* per tensor: iteration it was last written
				   (-1: never), "exists in the graph" */
	uint32_t *mark;		/* per tensor: visit generation */
	uint32_t gen;		/* current visit generation */
	uint32_t *stack;	/* traversal stack, n entries */
	struct dtr_pool pool;	/* tensors made resident, in order (simrd's
				   pool), as a tree of score bounds */
	struct dtr_ref *ref;	/* the exact scan kept beside the tree, to
				   check it (dtr_full_verify); NULL: off */
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
	bool nomem;		/* the pool could not grow (host memory):
				   the next failed allocation ends the run,
				   `stop host-memory` */
};

static int dtr_full_init(struct pol *p, gms_err *err)
{
	p->priv = calloc(1, sizeof(struct dtr_full));
	if (!p->priv)
		return gms_errf(err, "out of memory");
#ifdef DTR_FULL_VERIFY /* every run checked, aborting at a difference */
	if (dtr_full_verify(p) < 0)
		return gms_errf(err, "out of memory");
#endif
	return 0;
}

int dtr_full_verify(struct pol *p)
{
	struct dtr_full *s = p->priv;
	if (!s->ref)
		s->ref = calloc(1, sizeof *s->ref);
	return s->ref ? 0 : -1;
}

void dtr_full_counts(const struct pol *p, struct dtr_full_counts *c)
{
	const struct dtr_full *s = p->priv;
	c->mismatches = s->ref ? s->ref->mismatches : 0;
	c->scan_scored = s->ref ? s->ref->scored : 0;
	c->scored = s->pool.scored;
	c->searches = s->pool.searches;
}

static void ref_free(struct dtr_ref *r)
{
	if (r) {
		free(r->pool);
		free(r->in_pool);
		free(r->seq);
	}
	free(r);
}

static void dtr_full_fini(struct pol *p)
{
	struct dtr_full *s = p->priv;
	if (s) {
		free(s->last);
		free(s->made);
		free(s->mark);
		free(s->stack);
		free(s->refused);
		free(s->pool.leaf);
		free(s->pool.node);
		free(s->pool.heap);
		free(s->pool.slot);
		free(s->pool.wdep);
		free(s->pool.wscan);
		free(s->pool.wout);
		free(s->pool.notes);
		free(s->pool.cver);
		free(s->pool.note);
		ref_free(s->ref);
	}
	free(s);
	p->priv = NULL;
}

static const struct dtr_node node_empty = {UINT64_MAX, 0, NODE_EMPTY};

/* Double the array *p of *cap elements of elem bytes (first: the size of
 * an empty one). 0, or -1 (nothing changed) when out of memory. */
static int grow(void **p, size_t *cap, size_t elem, size_t first)
{
	size_t c = *cap ? 2 * *cap : first;
	void *n = realloc(*p, c * elem);
	if (!n)
		return -1;
	*p = n;
	*cap = c;
	return 0;
}

/* Node i's bounds from its children's. */
static void node_pull(struct dtr_node *nd, uint32_t i)
{
	const struct dtr_node *a = &nd[2 * i], *b = &nd[2 * i + 1];
	nd[i].c = a->c < b->c ? a->c : b->c;
	nd[i].bytes = a->bytes > b->bytes ? a->bytes : b->bytes;
	nd[i].last = a->last < b->last ? a->last : b->last;
}

/* Set position pos's leaf to v and refresh its ancestors, stopping where
 * nothing changes. */
static void pool_set(struct dtr_pool *q, uint32_t pos, struct dtr_node v)
{
	uint32_t i = q->cap + pos;
	q->node[i] = v;
	for (i >>= 1; i; i >>= 1) {
		struct dtr_node old = q->node[i];
		node_pull(q->node, i);
		if (old.c == q->node[i].c && old.bytes == q->node[i].bytes &&
		    old.last == q->node[i].last)
			break;
	}
}

/* Room for one more position: the positions that left the list are
 * squeezed out (the order kept), and the leaves doubled when more than
 * half are listed, so that each squeeze pays for the appends since the
 * last. 0, or -1 when out of memory. */
static int pool_room(struct dtr_pool *q)
{
	if (q->n_pos < q->cap)
		return 0;
	uint32_t k = 0, old = q->cap, cap = q->cap;
	for (uint32_t i = 0; i < q->n_pos; i++)
		k += q->leaf[i] != WL_NONE;
	if (k > cap / 2) {
		if (cap > UINT32_MAX / 4)
			return -1;
		cap *= 2;
		uint32_t *l = realloc(q->leaf, cap * sizeof *l);
		if (!l)
			return -1;
		q->leaf = l;
		struct dtr_node *nd = realloc(q->node, 2 * (size_t)cap * sizeof *nd);
		if (!nd)
			return -1;
		q->node = nd;
	}
	uint32_t j = 0; /* the leaves move down (j <= i) or to a new range */
	for (uint32_t i = 0; i < q->n_pos; i++) {
		uint32_t t = q->leaf[i];
		if (t == WL_NONE)
			continue;
		q->leaf[j] = t;
		q->slot[t] = j;
		q->node[cap + j++] = q->node[old + i];
	}
	q->n_pos = j;
	for (; j < cap; j++) {
		q->leaf[j] = WL_NONE;
		q->node[cap + j] = node_empty;
	}
	q->cap = cap;
	for (uint32_t i = cap - 1; i >= 1; i--)
		node_pull(q->node, i);
	return 0;
}

/* Take position pos out of the list (simrd's pool drops the storage). */
static void pool_remove(struct dtr_pool *q, uint32_t pos)
{
	q->slot[q->leaf[pos]] = WL_NONE;
	q->leaf[pos] = WL_NONE;
	pool_set(q, pos, node_empty);
}

/* Would the whole scan have dropped listed tensor t since its last write?
 * It would iff a scan ran while t was away from the device: after a write
 * that left it away (no block), any scan since; else after a departure
 * since the write (a return is a write, the header above). */
static bool pool_left(const struct dtr_pool *q, struct ex *ex, uint32_t t)
{
	if (q->wout[t])
		return q->scans > q->wscan[t];
	uint64_t d = ex_tensor_left_in(ex, t);
	return d > q->wdep[t] && d <= q->scan_dep;
}

/* t's leaf as the bounds see it. */
static struct dtr_node pool_leaf(const struct dtr_full *s, struct ex *ex,
				 uint32_t t)
{
	const struct wl_tensor *w = &ex_workload(ex)->tensors[t];
	return (struct dtr_node){
		.c = (uint64_t)ex_op_time(ex, w->producer),
		.bytes = w->bytes,
		.last = s->last[t]};
}

/* Listed tensor u's leaf forgets the cost it remembers: a tensor of u's
 * evicted neighbourhood is back (the pool's header). */
static void pool_forget(struct dtr_full *s, struct ex *ex, uint32_t u)
{
	struct dtr_pool *q = &s->pool;
	uint32_t pos = q->slot[u];
	if (pos == WL_NONE)
		return;
	struct dtr_node v = q->node[q->cap + pos];
	uint64_t c0 = (uint64_t)ex_op_time(
		ex, ex_workload(ex)->tensors[u].producer);
	if (v.last != NODE_EMPTY && v.c > c0) {
		v.c = c0;
		pool_set(q, pos, v);
	}
}

/* Note that rec's remembered cost counts evicted tensor u. Out of host
 * memory, note_lost says so (and rec's leaf does not remember). */
static void pool_note(struct dtr_pool *q, uint32_t u, uint32_t rec)
{
	uint32_t e = q->free_note;
	if (e != WL_NONE) {
		q->free_note = q->note[e].next;
	} else {
		if (q->n_note == q->cap_note &&
		    (q->cap_note >= WL_NONE / 2 ||
		     grow((void **)&q->note, &q->cap_note, sizeof *q->note,
			  1024) < 0)) {
			q->note_lost = true;
			return;
		}
		e = (uint32_t)q->n_note++;
	}
	q->note[e] = (struct dtr_note){rec, q->cver[rec], q->notes[u]};
	q->notes[u] = e;
}

/* t is back (written while made this iteration: rematerialised), so the
 * leaves whose remembered cost counted it forget it; its notes are
 * freed. */
static void pool_recall(struct dtr_full *s, struct ex *ex, uint32_t t)
{
	struct dtr_pool *q = &s->pool;
	uint32_t e = q->notes[t];
	while (e != WL_NONE) {
		struct dtr_note *n = &q->note[e];
		uint32_t next = n->next;
		if (n->ver == q->cver[n->x]) {
			q->cver[n->x]++;
			pool_forget(s, ex, n->x);
		}
		n->next = q->free_note;
		q->free_note = e;
		e = next;
	}
	q->notes[t] = WL_NONE;
}

/* A write of t (simrd: the storage made resident is appended to the pool
 * unless listed). Persistent tensors are never candidates and stay out.
 * 0, or -1 when out of memory. */
static int pool_write(struct dtr_full *s, struct ex *ex, uint32_t t)
{
	struct dtr_pool *q = &s->pool;
	if (ex_tensor_persistent(ex, t))
		return 0;
	if (q->slot[t] != WL_NONE && pool_left(q, ex, t))
		pool_remove(q, q->slot[t]);
	if (q->slot[t] == WL_NONE) {
		if (pool_room(q) < 0)
			return -1;
		q->slot[t] = q->n_pos;
		q->leaf[q->n_pos++] = t;
	}
	bool in = ex_tensor_state(ex, t) == TS_IN;
	q->wdep[t] = ex_departures(ex);
	q->wscan[t] = q->scans;
	q->wout[t] = !in;
	pool_set(q, q->slot[t], in ? pool_leaf(s, ex, t) : node_empty);
	return 0;
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
	struct dtr_pool *q = &s->pool;
	q->cap = 64; /* grows by doubling (pool_room) */
	s->last = malloc(n * sizeof *s->last);
	s->made = malloc(n * sizeof *s->made);
	s->mark = calloc(n, sizeof *s->mark);
	s->stack = malloc(n * sizeof *s->stack);
	s->refused = calloc(n, sizeof *s->refused);
	q->slot = malloc(n * sizeof *q->slot);
	q->wdep = calloc(n, sizeof *q->wdep);
	q->wscan = calloc(n, sizeof *q->wscan);
	q->wout = calloc(n, sizeof *q->wout);
	q->notes = malloc(n * sizeof *q->notes);
	q->cver = calloc(n, sizeof *q->cver);
	q->leaf = malloc(q->cap * sizeof *q->leaf);
	q->node = malloc(2 * q->cap * sizeof *q->node);
	if (!s->last || !s->made || !s->mark || !s->stack || !s->refused ||
	    !q->slot || !q->wdep || !q->wscan || !q->wout || !q->leaf ||
	    !q->node || !q->notes || !q->cver)
		return gms_errf(err, "out of memory");
	if (s->ref) {
		s->ref->pool = malloc(n * sizeof *s->ref->pool);
		s->ref->in_pool = calloc(n, sizeof *s->ref->in_pool);
		s->ref->seq = malloc(n * sizeof *s->ref->seq);
		if (!s->ref->pool || !s->ref->in_pool || !s->ref->seq)
			return gms_errf(err, "out of memory");
	}
	for (uint32_t t = 0; t < s->n; t++) {
		s->last[t] = DTR_NEVER;
		s->made[t] = -1;
		q->slot[t] = WL_NONE;
		q->notes[t] = WL_NONE;
	}
	q->free_note = WL_NONE;
	for (uint32_t i = 0; i < q->cap; i++)
		q->leaf[i] = WL_NONE;
	for (uint32_t i = 0; i < 2 * q->cap; i++)
		q->node[i] = node_empty;
	s->iter_compute = 0;
	for (uint32_t o = 0; o < w->n_ops; o++)
		s->iter_compute += ex_op_time(ex, o);
	return 0;
}

static void dtr_full_iter_begin(struct pol *p, struct ex *ex, int iter)
{
	struct dtr_full *s = p->priv;
	struct dtr_pool *q = &s->pool;
	s->iter = iter;
	s->remat_ns = 0;
	for (uint32_t i = 0; i < q->n_pos; i++)
		if (q->leaf[i] != WL_NONE)
			pool_remove(q, i);
	q->n_pos = 0;
	q->scans = 0;
	for (uint32_t t = 0; t < s->n; t++)
		q->notes[t] = WL_NONE;
	q->n_note = 0;
	q->free_note = WL_NONE;
	q->scan_dep = ex_departures(ex);
	if (s->ref) {
		for (uint32_t i = 0; i < s->ref->n_pool; i++)
			s->ref->in_pool[s->ref->pool[i]] = false;
		s->ref->n_pool = 0;
	}
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
 * tensors in the directions dirs (t itself not counted). rec (unless
 * WL_NONE): the tensor whose leaf will remember the cost, noted in each
 * evicted tensor met (pool_note). */
static uint64_t region(struct dtr_full *s, struct ex *ex, uint32_t t,
		       unsigned dirs, uint32_t rec)
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
			if (rec != WL_NONE)                                    \
				pool_note(&s->pool, u_, rec);                  \
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

/* The compute sum of resident tensor t's score under h (dtr_cost); rec:
 * region()'s. */
static uint64_t cost(struct dtr_full *s, struct ex *ex, enum dtr_heuristic h,
		     uint32_t t, uint32_t rec)
{
	const struct wl_workload *w = ex_workload(ex);
	uint64_t c = (uint64_t)ex_op_time(ex, w->tensors[t].producer);
	switch (h) {
	case DTR_H_DTR:
		c += region(s, ex, t, DIR_CHILDREN, rec) +
		     region(s, ex, t, DIR_PARENTS, rec);
		break;
	case DTR_H_EQCLASS: /* the evicted component around t */
		c += region(s, ex, t, DIR_CHILDREN | DIR_PARENTS, rec);
		break;
	case DTR_H_MSPS:
		c += region(s, ex, t, DIR_PARENTS, rec);
		break;
	default:
		break;
	}
	return c;
}

/* The score of resident tensor t (lower: evicted first), given its cost
 * c. */
static double score(struct dtr_full *s, struct ex *ex, enum dtr_heuristic h,
		    uint32_t t, uint64_t c)
{
	return dtr_cost(h, c, ex_workload(ex)->tensors[t].bytes, s->last[t],
			ex_now(ex));
}

static void dtr_full_on_access(struct pol *p, struct ex *ex,
			       const struct ex_access *a)
{
	struct dtr_full *s = p->priv;
	struct dtr_pool *q = &s->pool;
	uint32_t t = a->tensor;
	s->last[t] = a->time;
	if (!a->write) {
		uint32_t pos = q->slot[t];
		if (pos != WL_NONE && q->node[q->cap + pos].last != NODE_EMPTY) {
			struct dtr_node v = q->node[q->cap + pos];
			v.last = a->time;
			pool_set(q, pos, v);
		}
		return;
	}
	if (s->made[t] == s->iter) /* rematerialised */
		pool_recall(s, ex, t);
	if (s->ref && !s->ref->in_pool[t]) { /* at most n: no overflow */
		s->ref->in_pool[t] = true;
		s->ref->pool[s->ref->n_pool++] = t;
	}
	if (pool_write(s, ex, t) < 0)
		s->nomem = true; /* the next failed allocation ends the run */
	s->made[t] = s->iter;
	if (a->recompute && (a->op != s->last_op || a->time != s->last_t)) {
		/* one kernel, however many outputs it writes */
		sim_time_t rt = ex_op_time(ex, a->op);
		s->remat_ns += rt;
		s->remat_total += rt;
		s->remats++;
		s->last_op = a->op;
		s->last_t = a->time;
	}
}

/* The last position below node i (the root is 1, leaves cap + pos). */
static uint32_t node_hi(const struct dtr_pool *q, uint32_t i)
{
	int shift = __builtin_clz(i) - __builtin_clz(q->cap);
	return (uint32_t)((((uint64_t)i + 1) << shift) - 1 - q->cap);
}

/* The heap's order: the least bound first, the later range on a tie (a
 * tie goes to the later tensor, so it is met first). */
static bool heap_before(const struct dtr_heap *a, const struct dtr_heap *b)
{
	return a->bound < b->bound || (a->bound == b->bound && a->hi > b->hi);
}

static int heap_push(struct dtr_pool *q, size_t *n, struct dtr_heap e)
{
	if (*n == q->heap_cap &&
	    grow((void **)&q->heap, &q->heap_cap, sizeof *q->heap, 256) < 0)
		return -1;
	size_t i = (*n)++;
	while (i > 0 && heap_before(&e, &q->heap[(i - 1) / 2])) {
		q->heap[i] = q->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	q->heap[i] = e;
	return 0;
}

static struct dtr_heap heap_pop(struct dtr_pool *q, size_t *n)
{
	struct dtr_heap top = q->heap[0], e = q->heap[--*n];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= *n)
			break;
		if (c + 1 < *n && heap_before(&q->heap[c + 1], &q->heap[c]))
			c++;
		if (!heap_before(&q->heap[c], &e))
			break;
		q->heap[i] = q->heap[c];
		i = c;
	}
	if (*n)
		q->heap[i] = e;
	return top;
}

/* Can nothing below a node of this bound and last position beat the best
 * so far (best_c at position best_pos; none: WL_NONE)? */
static bool beaten(uint32_t best, double best_c, uint32_t best_pos,
		   double bound, uint32_t hi)
{
	return best != WL_NONE &&
	       (bound > best_c || (bound == best_c && hi < best_pos));
}

/* simrd's choice (the header of the pool): the candidate of least score,
 * the later in the list on a tie, into *out (WL_NONE: none). Listed
 * tensors the search finds away are dropped from the list, as simrd's
 * scan drops them. 0, or -1 when out of memory. */
static int pool_choose(struct dtr_full *s, struct ex *ex, enum dtr_heuristic h,
		       uint32_t stamp, uint32_t *out)
{
	struct dtr_pool *q = &s->pool;
	sim_time_t now = ex_now(ex);
	uint32_t best = WL_NONE, best_pos = 0;
	double best_c = INFINITY;
	size_t n = 0;
	q->searches++;
	*out = WL_NONE;
	const struct dtr_node *r = &q->node[1];
	if (r->last != NODE_EMPTY &&
	    heap_push(q, &n, (struct dtr_heap){
				     dtr_cost(h, r->c, r->bytes, r->last, now),
				     1, q->cap - 1}) < 0)
		return -1;
	while (n) {
		struct dtr_heap e = heap_pop(q, &n);
		if (beaten(best, best_c, best_pos, e.bound, e.hi)) {
			if (e.bound > best_c)
				break; /* the heap holds nothing better */
			continue;
		}
		if (e.node >= q->cap) { /* a leaf */
			uint32_t pos = e.node - q->cap, t = q->leaf[pos];
			if (ex_tensor_state(ex, t) != TS_IN) {
				/* left unseen since its write (pool_left) */
				assert(q->wout[t] ||
				       ex_tensor_left_in(ex, t) > q->wdep[t]);
				pool_remove(q, pos);
				continue;
			}
			if (ex_tensor_busy(ex, t) || s->refused[t] == stamp)
				continue;
			q->cver[t]++; /* its earlier notes are void */
			q->note_lost = false;
			uint64_t cc = cost(s, ex, h, t, t);
			double c = score(s, ex, h, t, cc);
			q->scored++;
			struct dtr_node v = q->node[e.node];
			v.c = q->note_lost ? pool_leaf(s, ex, t).c : cc;
			pool_set(q, pos, v); /* remembered */
			if (best == WL_NONE || c < best_c ||
			    (c == best_c && pos > best_pos)) {
				best = t;
				best_c = c;
				best_pos = pos;
			}
			continue;
		}
		for (uint32_t k = 2 * e.node; k <= 2 * e.node + 1; k++) {
			const struct dtr_node *nd = &q->node[k];
			if (nd->last == NODE_EMPTY)
				continue;
			struct dtr_heap c = {
				dtr_cost(h, nd->c, nd->bytes, nd->last, now), k,
				node_hi(q, k)};
			if (!beaten(best, best_c, best_pos, c.bound, c.hi) &&
			    heap_push(q, &n, c) < 0)
				return -1;
		}
	}
	*out = best;
	return 0;
}

/* The whole scan the tree replaced (simrd's `choose`), on the list kept
 * beside it: the choice, and the list compacted. */
static uint32_t ref_choose(struct dtr_full *s, struct ex *ex,
			   enum dtr_heuristic h, uint32_t stamp)
{
	struct dtr_ref *r = s->ref;
	uint32_t best = WL_NONE, k = 0;
	double best_c = INFINITY;
	for (uint32_t i = 0; i < r->n_pool; i++) {
		uint32_t t = r->pool[i];
		if (ex_tensor_state(ex, t) != TS_IN) {
			r->in_pool[t] = false; /* left: compacted */
			continue;
		}
		r->pool[k++] = t;
		if (ex_tensor_persistent(ex, t) || ex_tensor_busy(ex, t) ||
		    s->refused[t] == stamp)
			continue;
		double c = score(s, ex, h, t, cost(s, ex, h, t, WL_NONE));
		r->scored++;
		if (best == WL_NONE || c <= best_c) {
			best = t;
			best_c = c;
		}
	}
	r->n_pool = k;
	return best;
}

/* dtr_full_verify's check of one choice: the same victim, and the same
 * resident tensors listed in the same order. */
static void ref_check(struct dtr_full *s, struct ex *ex, uint32_t best,
		      uint32_t ref_best)
{
	struct dtr_ref *r = s->ref;
	const struct dtr_pool *q = &s->pool;
	uint32_t n = 0, m = 0;
	bool same = best == ref_best;
	for (uint32_t i = 0; i < q->n_pos; i++) {
		uint32_t t = q->leaf[i];
		if (t != WL_NONE && ex_tensor_state(ex, t) == TS_IN)
			r->seq[n++] = t;
	}
	for (uint32_t i = 0; i < r->n_pool && same; i++) {
		uint32_t t = r->pool[i];
		if (!ex_tensor_persistent(ex, t))
			same = m < n && r->seq[m++] == t;
	}
	same = same && m == n;
	if (!same) {
		r->mismatches++;
#ifdef DTR_FULL_VERIFY
		fprintf(stderr, "dtr_full: the tree chose %u, the scan %u "
				"(failure %llu)\n",
			best, ref_best, (unsigned long long)s->fails);
		abort();
#endif
	}
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
		uint32_t best;
		s->pool.scans++;
		s->pool.scan_dep = ex_departures(ex);
		if (s->nomem || pool_choose(s, ex, h, stamp, &best) < 0) {
			s->stop = STOP_NOMEM;
			return EX_FAIL;
		}
		if (s->ref)
			ref_check(s, ex, best, ref_choose(s, ex, h, stamp));
		if (best == WL_NONE) {
			s->stop = STOP_OOM;
			return EX_FAIL;
		}
		if (ex_drop(ex, best) == 0) {
			s->evictions++;
			/* away now: out of the bounds, listed until a scan
			 * finds it away or a write finds it left */
			pool_set(&s->pool, s->pool.slot[best], node_empty);
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

struct trace_entry {
	char *path;		  /* as the experiment names it */
	struct dtr_trace *tr;	  /* parsed (owned); NULL: its baseline
				     was put (dtr_trace_memo_put), the log
				     is read when a replay needs it */
	struct dtr_baseline b;	  /* its baseline */
};

struct dtr_trace_memo {
	pthread_mutex_t mu;	  /* guards all below */
	struct trace_entry *e;
	size_t n, cap;
	size_t loads, hits;
};

struct dtr_trace_memo *dtr_trace_memo_new(void)
{
	struct dtr_trace_memo *m = calloc(1, sizeof *m);
	if (m && pthread_mutex_init(&m->mu, NULL) != 0) {
		free(m);
		return NULL;
	}
	return m;
}

void dtr_trace_memo_free(struct dtr_trace_memo *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++) {
		free(m->e[i].path);
		dtr_trace_free(m->e[i].tr);
	}
	free(m->e);
	pthread_mutex_destroy(&m->mu);
	free(m);
}

void dtr_trace_memo_counts(struct dtr_trace_memo *m, size_t *loads,
			   size_t *hits)
{
	pthread_mutex_lock(&m->mu);
	*loads = m->loads;
	*hits = m->hits;
	pthread_mutex_unlock(&m->mu);
}

/* Room for one more entry in m (m->mu held); false when out of memory. */
static bool trace_room(struct dtr_trace_memo *m)
{
	struct trace_entry *e = gms_grow(m->e, &m->cap, m->n, sizeof *e, 4);
	if (e)
		m->e = e;
	return e != NULL;
}

int dtr_trace_memo_put(struct dtr_trace_memo *m, const char *path,
		       const struct dtr_baseline *b)
{
	char *c = strdup(path);
	pthread_mutex_lock(&m->mu);
	bool ok = c && trace_room(m);
	if (ok)
		m->e[m->n++] = (struct trace_entry){.path = c, .b = *b};
	pthread_mutex_unlock(&m->mu);
	if (!ok)
		free(c);
	return ok ? 0 : -1;
}

size_t dtr_trace_memo_size(struct dtr_trace_memo *m)
{
	pthread_mutex_lock(&m->mu);
	size_t n = m->n;
	pthread_mutex_unlock(&m->mu);
	return n;
}

void dtr_trace_memo_get(struct dtr_trace_memo *m, size_t i,
			const char **path, struct dtr_baseline *b)
{
	pthread_mutex_lock(&m->mu);
	assert(i < m->n);
	*path = m->e[i].path;
	*b = m->e[i].b;
	pthread_mutex_unlock(&m->mu);
}

/* a and b field by field (the struct has padding). */
static bool same_baseline(const struct dtr_baseline *a,
			  const struct dtr_baseline *b)
{
	return a->peak_bytes == b->peak_bytes &&
	       a->compute_ns == b->compute_ns &&
	       a->const_bytes == b->const_bytes && a->n_ops == b->n_ops &&
	       a->n_cmds == b->n_cmds && a->n_storages == b->n_storages;
}

/* The baseline of the trace at path, and the trace itself when tr is
 * not NULL: from memo m (loaded there on first use: under the lock, so a
 * log is parsed once however many threads ask for it; an entry put holds
 * the baseline only, and its log is read the first time a caller needs
 * the trace), or, with no memo, loaded for the caller (*own set: free it
 * with dtr_trace_free). 0, or -1 with err (the log cannot be read, or
 * its baseline is not the one put; a failure is not kept: the next
 * caller gets the same error). */
static int trace_get(struct dtr_trace_memo *m, const char *path,
		     const struct dtr_trace **tr, struct dtr_baseline *b,
		     struct dtr_trace **own, gms_err *err)
{
	*own = NULL;
	if (!m) {
		if (dtr_trace_load(path, own, err) < 0)
			return -1;
		if (tr)
			*tr = *own;
		dtr_baseline(*own, b);
		if (!tr) {
			dtr_trace_free(*own);
			*own = NULL;
		}
		return 0;
	}
	int rc = 0;
	pthread_mutex_lock(&m->mu);
	size_t i = 0;
	while (i < m->n && strcmp(m->e[i].path, path) != 0)
		i++;
	if (i < m->n && (m->e[i].tr || !tr)) {
		m->hits++;
	} else if (i < m->n) { /* put: the baseline only */
		struct dtr_baseline lb;
		if (dtr_trace_load(path, &m->e[i].tr, err) < 0) {
			rc = -1;
		} else if (dtr_baseline(m->e[i].tr, &lb),
			   !same_baseline(&lb, &m->e[i].b)) {
			/* the plan file's, for another log than this */
			rc = gms_errf(err, "%s: its baseline is not the one "
					   "given for it (peak %llu, not "
					   "%llu bytes)",
				      path, (unsigned long long)lb.peak_bytes,
				      (unsigned long long)m->e[i].b.peak_bytes);
			dtr_trace_free(m->e[i].tr);
			m->e[i].tr = NULL;
		} else {
			m->loads++;
		}
	} else {
		struct trace_entry x = {.path = strdup(path)};
		if (!x.path || !trace_room(m)) {
			free(x.path);
			rc = gms_errf(err, "out of memory");
		} else if (dtr_trace_load(path, &x.tr, err) < 0) {
			free(x.path);
			rc = -1;
		} else {
			dtr_baseline(x.tr, &x.b);
			m->e[m->n++] = x;
			m->loads++;
		}
	}
	if (rc == 0) {
		if (tr)
			*tr = m->e[i].tr;
		*b = m->e[i].b;
	}
	pthread_mutex_unlock(&m->mu);
	return rc;
}

int dtr_full_fraction_budget(const struct pol *p,
			     struct dtr_trace_memo *traces, const char *path,
			     double fraction, uint64_t *budget, gms_err *err)
{
	if (p->ops != &pol_dtr_ops)
		return 0;
	struct dtr_trace *own;
	struct dtr_baseline b;
	if (trace_get(traces, path, NULL, &b, &own, err) < 0)
		return -1;
	*budget = dtr_budget_for_ratio(&b, fraction);
	return 1;
}

int dtr_full_run_serial(const struct pol *p, struct dtr_trace_memo *traces,
			const char *path, double fraction, uint64_t budget,
			int64_t batch, struct st_run *st, uint64_t *used,
			gms_err *err)
{
	const struct dtr_full_params *prm = p->params;
	const struct dtr_trace *tr;
	struct dtr_trace *own;
	struct dtr_baseline b;
	if (trace_get(traces, path, &tr, &b, &own, err) < 0)
		return -1;
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
	dtr_trace_free(own);
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
