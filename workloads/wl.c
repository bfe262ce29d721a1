/*
 * wl.c - the workload model: name tables, the builder and wl_finalize.
 *
 * Storage. A workload owns everything it points to through its private
 * struct wl_store: the tensor and op arrays grow by doubling (realloc), and
 * every string, every per-op id array, every algo array and every reader
 * list lives in a chunked arena that is never moved, so pointers handed out
 * stay valid until wl_free. Names are found through open-addressing hash
 * tables (wl_name_hash, linear probing, load <= 1/2), one for tensors, one for
 * ops and one for layers, so look-ups stay O(1) on traces with tens of
 * thousands of tensors.
 *
 * Templates (wl_reserve's like, issue 18). A build of a network at a new
 * batch has the names, kinds, layers and id lists of its build at
 * another: while each addition matches the template's at the same index
 * the build points at the template's strings and id lists, looks names up
 * in the template's tables (ids it does not have yet are absent), and
 * wl_finalize copies the template's producers and readers; at the first
 * difference it makes its own tables of what it has (leave_template) and
 * goes on as without. Every workload is reference-counted (wl_store.refs):
 * a follower holds its template until the follower is freed.
 *
 * Rules wl_finalize enforces (each error names the op and/or tensor):
 *   - a tensor is produced (listed as an output) by at most one op;
 *   - a tensor of kind input, parameter or opt_state has no producer: these
 *     exist before the iteration. Parameter updates are in place and are
 *     written by listing the parameters, their gradients and the optimizer
 *     state as *inputs* of an update op; an update op may have no outputs;
 *   - every other tensor (activation, act_grad, param_grad, workspace) has
 *     a producer, whether or not anything reads it;
 *   - an op reads only tensors produced by an earlier op (or never
 *     produced: inputs, parameters, optimizer state) - never its own
 *     output, never a later op's output;
 *   - sizes are > 0 (wl_add_tensor already refuses 0);
 *   - a release point (wl_set_release_after) is not before the tensor's
 *     producer nor before its last reader: a storage is not released while
 *     it is still to be written or read.
 * wl_add_op checks what it can see locally: unique non-empty name, valid
 * type/phase, tensor ids in range, no repeated output, finite non-negative
 * flops/bytes/time, algo names and time scales > 0, `inplace` only with an
 * input and an output. An op may read the same tensor twice (add(x, x));
 * its readers list counts the op once. An op's algos are stored fastest
 * first (stable sort by time_scale), whatever order they were given in.
 *
 * Derived by wl_finalize: producer, readers (unique op ids in issue order)
 * and last_fwd_reader of every tensor. Layer indices are assigned by
 * wl_add_op: an op's layer name (its own name when NULL) is looked up, and a
 * new name gets the next index, so layers are numbered in order of first
 * appearance.
 */
#include "wl.h"

#include <ctype.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- Name tables ---------------------------------------------------- */

const char *const wl_op_type_names[] = {
	"conv",	     "conv_bwd_data", "conv_bwd_filter", "matmul",
	"matmul_bwd", "batchnorm",    "batchnorm_bwd",	 "layernorm",
	"layernorm_bwd", "relu",      "relu_bwd",	 "pool",
	"pool_bwd",  "add",	      "concat",		 "split",
	"softmax",   "softmax_bwd",   "dropout",	 "dropout_bwd",
	"attention", "attention_bwd", "embedding",	 "embedding_bwd",
	"loss",	     "loss_bwd",      "update",		 "elemwise",
	"other",     NULL};

const char *const wl_math_names[] = {"fp32", "tf32", "fp16", "bf16", NULL};

const char *const wl_kind_names[] = {"input",	   "parameter", "param_grad",
				     "opt_state",  "activation", "act_grad",
				     "workspace", NULL};

const char *const wl_phase_names[] = {"forward", "backward", "update", NULL};
const char *const wl_region_names[] = {"none", "core_attention", NULL};

/* The tables must have exactly one name per enum value. */
_Static_assert(sizeof wl_op_type_names / sizeof *wl_op_type_names ==
		       OT_COUNT + 1,
	       "wl_op_type_names out of step with enum wl_op_type");
_Static_assert(sizeof wl_kind_names / sizeof *wl_kind_names ==
		       WL_KIND_COUNT + 1,
	       "wl_kind_names out of step with enum wl_kind");
_Static_assert(sizeof wl_phase_names / sizeof *wl_phase_names ==
		       WL_PHASE_COUNT + 1,
	       "wl_phase_names out of step with enum wl_phase");

static const char *name_at(const char *const *names, int n, int i)
{
	return i >= 0 && i < n ? names[i] : "unknown";
}

static int index_of(const char *const *names, const char *name)
{
	if (!name)
		return -1;
	for (int i = 0; names[i]; i++)
		if (strcmp(names[i], name) == 0)
			return i;
	return -1;
}

const char *wl_op_type_name(enum wl_op_type t)
{
	return name_at(wl_op_type_names, OT_COUNT, (int)t);
}

const char *wl_kind_name(enum wl_kind k)
{
	return name_at(wl_kind_names, WL_KIND_COUNT, (int)k);
}

const char *wl_phase_name(enum wl_phase p)
{
	return name_at(wl_phase_names, WL_PHASE_COUNT, (int)p);
}

int wl_op_type_from(const char *name)
{
	return index_of(wl_op_type_names, name);
}

int wl_kind_from(const char *name)
{
	return index_of(wl_kind_names, name);
}

int wl_phase_from(const char *name)
{
	return index_of(wl_phase_names, name);
}

/* ---- Arena ---------------------------------------------------------- */

/* One arena chunk; allocations are carved from data[] and never move. */
struct wl_chunk {
	struct wl_chunk *next; /* previously filled chunk, freed with this */
	size_t used;	       /* bytes of data[] handed out */
	size_t cap;	       /* bytes of data[] */
	max_align_t data[];    /* the storage, aligned for any type */
};

#define WL_CHUNK_MIN ((size_t)64 * 1024)

/* ---- Hash table of names -------------------------------------------- */

/* One slot of a name table; key == NULL marks an empty slot. */
struct wl_hslot {
	const char *key; /* the name (arena string), NULL when empty */
	uint32_t hash;	 /* wl_name_hash of key, kept to skip strcmp and rehash */
	uint32_t val;	 /* the id the name maps to */
};

/* Open-addressing table, linear probing, capacity a power of two. */
struct wl_htab {
	struct wl_hslot *slot; /* cap slots, NULL before the first insert */
	uint32_t cap;	       /* number of slots */
	uint32_t n;	       /* number of occupied slots */
};

/* The workload's private storage (see the top of this file). */
struct wl_store {
	struct wl_chunk *arena;	 /* newest chunk first */
	uint32_t tensors_cap;	 /* allocated length of w->tensors */
	uint32_t ops_cap;	 /* allocated length of w->ops */
	uint32_t layers_cap;	 /* allocated length of w->layers */
	struct wl_htab tensor_ix; /* tensor name -> id */
	struct wl_htab op_ix;	 /* op name -> id */
	struct wl_htab layer_ix; /* layer name -> layer index */
	atomic_uint refs;	 /* holders of the workload: its owner and
				    each build following it; freed at 0 */
	struct wl_workload *like; /* the template followed (wl_reserve; a
				    reference held for its strings), NULL */
	bool diverged;		 /* left the template: own tables since */
	bool same_ids;		 /* every op so far read and wrote the
				    template's tensors in its phase */
	uint32_t block;		 /* wl_set_block: marks of new ops */
	uint8_t region;
};

/* Is the build following its template (struct wl_reserve.like)? */
static bool following(const struct wl_store *s)
{
	return s->like && !s->diverged;
}

/* The store whose name tables serve s's look-ups: its own, or while it
 * follows, its template's, which never follows one itself (wl_reserve);
 * ids at or above the build's counts are not the build's yet. */
static const struct wl_store *tables(const struct wl_store *s)
{
	return following(s) ? s->like->store : s;
}

static void *arena_alloc(struct wl_store *s, size_t n)
{
	const size_t align = sizeof(max_align_t);
	n = (n + align - 1) / align * align;
	if (n == 0)
		n = align;
	struct wl_chunk *c = s->arena;
	if (!c || c->cap - c->used < n) {
		size_t cap = n > WL_CHUNK_MIN ? n : WL_CHUNK_MIN;
		c = malloc(sizeof *c + cap);
		if (!c)
			return NULL;
		c->next = s->arena;
		c->used = 0;
		c->cap = cap;
		s->arena = c;
	}
	void *p = (char *)c->data + c->used;
	c->used += n;
	return p;
}

static char *arena_strdup(struct wl_store *s, const char *str)
{
	size_t n = strlen(str) + 1;
	char *p = arena_alloc(s, n);
	if (p)
		memcpy(p, str, n);
	return p;
}

static uint32_t *arena_ids(struct wl_store *s, const uint32_t *ids,
			   uint32_t n)
{
	if (n == 0)
		return NULL;
	uint32_t *p = arena_alloc(s, (size_t)n * sizeof *p);
	if (p && ids)
		memcpy(p, ids, (size_t)n * sizeof *p);
	return p;
}

/* The hash of a name, eight bytes a step: FNV-1a's byte-at-a-time loop
 * (a multiply per byte on names of 30 to 60 characters) was the
 * builder's hottest function once workloads were built once per batch
 * (issue 18). Each 8-byte word is mixed in with a multiply and a shift;
 * the end is MurmurHash3's 64-bit finaliser fmix64, whose constants are
 * from its source (Austin Appleby, public domain,
 * github.com/aappleby/smhasher src/MurmurHash3.cpp). Only lookups use the
 * hash (a table's slots are never listed), so no output depends on it. */
uint32_t wl_name_hash(const char *s)
{
	size_t n = strlen(s);
	uint64_t h = n, v;
	for (; n >= 8; s += 8, n -= 8) {
		memcpy(&v, s, 8);
		h = (h ^ v) * 0xff51afd7ed558ccdull;
		h ^= h >> 33;
	}
	v = 0;
	memcpy(&v, s, n);
	h ^= v;
	h ^= h >> 33; /* fmix64 */
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return (uint32_t)h;
}

/* Look key, whose wl_name_hash is h, up; WL_NONE when absent. The
 * builder hashes a new name once for this look-up and the insert that
 * follows (htab_put_h). */
static uint32_t htab_get_h(const struct wl_htab *t, const char *key,
			   uint32_t h)
{
	if (!t->slot || !key)
		return WL_NONE;
	uint32_t mask = t->cap - 1;
	for (uint32_t i = h & mask;; i = (i + 1) & mask) {
		const struct wl_hslot *sl = &t->slot[i];
		if (!sl->key)
			return WL_NONE;
		if (sl->hash == h && strcmp(sl->key, key) == 0)
			return sl->val;
	}
}

static uint32_t htab_get(const struct wl_htab *t, const char *key)
{
	return key ? htab_get_h(t, key, wl_name_hash(key)) : WL_NONE;
}

static void htab_place(struct wl_hslot *slot, uint32_t cap,
		       const struct wl_hslot *item)
{
	uint32_t mask = cap - 1;
	uint32_t i = item->hash & mask;
	while (slot[i].key)
		i = (i + 1) & mask;
	slot[i] = *item;
}

/* Make room for n keys at load <= 1/2 (capacity doubling from 64),
 * rehashing what is there; -1 on out of memory. */
static int htab_reserve(struct wl_htab *t, uint32_t n)
{
	uint32_t cap = t->cap;
	while ((uint64_t)n * 2 > cap) {
		uint32_t nc = cap ? cap * 2 : 64;
		if (nc < cap)
			return -1;
		cap = nc;
	}
	if (cap == t->cap)
		return 0;
	struct wl_hslot *slot = calloc(cap, sizeof *slot);
	if (!slot)
		return -1;
	for (uint32_t i = 0; i < t->cap; i++)
		if (t->slot[i].key)
			htab_place(slot, cap, &t->slot[i]);
	free(t->slot);
	t->slot = slot;
	t->cap = cap;
	return 0;
}

/* Insert a key known to be absent, whose wl_name_hash is h; key must
 * outlive the table. */
static int htab_put_h(struct wl_htab *t, const char *key, uint32_t h,
		      uint32_t val)
{
	if (htab_reserve(t, t->n + 1) < 0)
		return -1;
	struct wl_hslot item = {key, h, val};
	htab_place(t->slot, t->cap, &item);
	t->n++;
	return 0;
}

/* The same, hashing key here. */
static int htab_put(struct wl_htab *t, const char *key, uint32_t val)
{
	return htab_put_h(t, key, wl_name_hash(key), val);
}

/* Reallocate an array to hold c elements. */
static int resize(void **arr, uint32_t *cap, uint64_t c, size_t elem)
{
	if (c > UINT32_MAX - 1)
		c = UINT32_MAX - 1; /* WL_NONE must stay free */
	void *p = realloc(*arr, (size_t)c * elem);
	if (!p)
		return -1;
	*arr = p;
	*cap = (uint32_t)c;
	return 0;
}

/* Make room for one more element in a doubling array. */
static int grow(void **arr, uint32_t *cap, uint32_t n, size_t elem)
{
	if (n < *cap)
		return 0;
	if (n == UINT32_MAX - 1)
		return -1; /* WL_NONE must stay free */
	return resize(arr, cap, *cap ? (uint64_t)*cap * 2 : 16, elem);
}

/* ---- Builder -------------------------------------------------------- */

struct wl_workload *wl_new(const char *name, int64_t batch)
{
	struct wl_workload *w = calloc(1, sizeof *w);
	if (!w)
		return NULL;
	w->store = calloc(1, sizeof *w->store);
	if (!w->store) {
		free(w);
		return NULL;
	}
	atomic_init(&w->store->refs, 1u);
	w->store->block = WL_NONE;
	w->name = arena_strdup(w->store, name ? name : "");
	if (!w->name) {
		wl_free(w);
		return NULL;
	}
	w->batch = batch;
	return w;
}

struct wl_reserve wl_reserve_like(const struct wl_workload *t)
{
	return (struct wl_reserve){t->n_tensors, t->n_ops, t->n_layers, t};
}

int wl_reserve(struct wl_workload *w, const struct wl_reserve *r)
{
	if (!w || !w->store || !r)
		return -1;
	struct wl_store *s = w->store;
	if (r->like) {
		if (s->like || w->n_tensors || w->n_ops || w->finalized ||
		    !r->like->finalized || !r->like->store)
			return -1;
		/* a template that followed its own wholly is a prefix of
		 * that one: follow the older, so that no chain grows and
		 * the template has its own tables */
		const struct wl_workload *l = r->like;
		while (following(l->store))
			l = l->store->like;
		s->like = wl_hold(l); /* a reference: wl_free */
		s->same_ids = true;
	}
	if (r->tensors > s->tensors_cap &&
	    resize((void **)&w->tensors, &s->tensors_cap, r->tensors,
		   sizeof *w->tensors) < 0)
		return -1;
	if (r->ops > s->ops_cap &&
	    resize((void **)&w->ops, &s->ops_cap, r->ops, sizeof *w->ops) < 0)
		return -1;
	if (r->layers > s->layers_cap &&
	    resize((void **)&w->layers, &s->layers_cap, r->layers,
		   sizeof *w->layers) < 0)
		return -1;
	/* a build that follows makes its tables only if it leaves */
	if (!following(s) &&
	    (htab_reserve(&s->tensor_ix, r->tensors) < 0 ||
	     htab_reserve(&s->op_ix, r->ops) < 0 ||
	     htab_reserve(&s->layer_ix, r->layers) < 0))
		return -1;
	return 0;
}

const struct wl_workload *wl_template_root(const struct wl_workload *w)
{
	const struct wl_store *s = w->store;
	if (!s->like)
		return w;
	if (!following(s))
		return NULL;
	const struct wl_workload *l = s->like;
	while (following(l->store))
		l = l->store->like;
	return l;
}

bool wl_follows_template(const struct wl_workload *w)
{
	return w && w->store && following(w->store);
}

/* Leave the template: the tables of what the build has so far (their
 * strings stay the template's, whose reference is kept), then every
 * addition as without one. -1 on out of memory. */
static int leave_template(struct wl_workload *w)
{
	struct wl_store *s = w->store;
	s->diverged = true;
	s->same_ids = false;
	/* room for the arrays' capacities (each at least its count) */
	if (htab_reserve(&s->tensor_ix, s->tensors_cap) < 0 ||
	    htab_reserve(&s->op_ix, s->ops_cap) < 0 ||
	    htab_reserve(&s->layer_ix, s->layers_cap) < 0)
		return -1;
	for (uint32_t i = 0; i < w->n_tensors; i++)
		if (htab_put(&s->tensor_ix, w->tensors[i].name, i) < 0)
			return -1;
	for (uint32_t i = 0; i < w->n_ops; i++)
		if (htab_put(&s->op_ix, w->ops[i].name, i) < 0)
			return -1;
	for (uint32_t i = 0; i < w->n_layers; i++)
		if (htab_put(&s->layer_ix, w->layers[i], i) < 0)
			return -1;
	return 0;
}

struct wl_workload *wl_hold(const struct wl_workload *w)
{
	atomic_fetch_add_explicit(&w->store->refs, 1u, memory_order_relaxed);
	return (struct wl_workload *)w;
}

void wl_free(struct wl_workload *w)
{
	if (!w)
		return;
	struct wl_store *s = w->store;
	/* the last holder frees (a build following w holds it) */
	if (s && atomic_fetch_sub_explicit(&s->refs, 1u,
					   memory_order_acq_rel) != 1u)
		return;
	struct wl_workload *like = s ? s->like : NULL;
	if (s) {
		struct wl_chunk *c = s->arena;
		while (c) {
			struct wl_chunk *next = c->next;
			free(c);
			c = next;
		}
		free(s->tensor_ix.slot);
		free(s->op_ix.slot);
		free(s->layer_ix.slot);
		free(s);
	}
	free(w->tensors);
	free(w->ops);
	free((void *)w->layers);
	free(w);
	wl_free(like);
}

/* A look-up in the tables serving w; ids w does not have yet (in its
 * template's tables) are absent. */
uint32_t wl_tensor_id(const struct wl_workload *w, const char *name)
{
	if (!w || !w->store)
		return WL_NONE;
	uint32_t id = htab_get(&tables(w->store)->tensor_ix, name);
	return id < w->n_tensors ? id : WL_NONE;
}

uint32_t wl_op_id(const struct wl_workload *w, const char *name)
{
	if (!w || !w->store)
		return WL_NONE;
	uint32_t id = htab_get(&tables(w->store)->op_ix, name);
	return id < w->n_ops ? id : WL_NONE;
}

/* Append a tensor named nm (a string that lives as long as w); room
 * made. */
static uint32_t new_tensor(struct wl_workload *w, const char *nm,
			   uint64_t bytes, enum wl_kind kind)
{
	uint32_t id = w->n_tensors++;
	w->tensors[id] = (struct wl_tensor){
		.id = id,
		.name = nm,
		.bytes = bytes,
		.kind = kind,
		.producer = WL_NONE,
		.readers = NULL,
		.n_readers = 0,
		.last_fwd_reader = WL_NONE,
		.release_after = WL_NONE,
	};
	return id;
}

void wl_set_esz(struct wl_workload *w, uint32_t t, unsigned esz)
{
	if (w && t < w->n_tensors && !w->finalized &&
	    (esz == 1 || esz == 2 || esz == 4 || esz == 8))
		w->tensors[t].esz = (uint8_t)esz;
}

uint32_t wl_add_tensor(struct wl_workload *w, const char *name,
		       uint64_t bytes, enum wl_kind kind, gms_err *err)
{
	if (!w || !w->store) {
		gms_errf(err, "wl_add_tensor: no workload");
		return WL_NONE;
	}
	struct wl_store *s = w->store;
	if (w->finalized) {
		gms_errf(err, "workload '%s': tensor '%s' added after "
			      "wl_finalize", w->name, name ? name : "");
		return WL_NONE;
	}
	if (!name || !*name) {
		gms_errf(err, "workload '%s': a tensor has an empty name",
			 w->name);
		return WL_NONE;
	}
	if ((unsigned)kind >= WL_KIND_COUNT) {
		gms_errf(err, "tensor '%s': invalid kind %d", name, (int)kind);
		return WL_NONE;
	}
	if (bytes == 0) {
		gms_errf(err, "tensor '%s': size is 0 bytes", name);
		return WL_NONE;
	}
	const char *nm = NULL; /* the template's string, when its tensor */
	if (following(s)) {
		/* the template's tensor at this index, by name and kind:
		 * its names are unique, so this one is new here */
		const struct wl_tensor *lt =
			w->n_tensors < s->like->n_tensors
				? &s->like->tensors[w->n_tensors]
				: NULL;
		if (lt && lt->kind == kind && strcmp(lt->name, name) == 0)
			nm = lt->name;
		else if (leave_template(w) < 0)
			goto oom;
	}
	uint32_t h = 0;
	if (!nm) {
		h = wl_name_hash(name);
		if (htab_get_h(&s->tensor_ix, name, h) != WL_NONE) {
			gms_errf(err, "tensor '%s' is defined twice", name);
			return WL_NONE;
		}
	}
	if (grow((void **)&w->tensors, &s->tensors_cap, w->n_tensors,
		 sizeof *w->tensors) < 0)
		goto oom;
	if (!nm && (!(nm = arena_strdup(s, name)) ||
		    htab_put_h(&s->tensor_ix, nm, h, w->n_tensors) < 0))
		goto oom;
	return new_tensor(w, nm, bytes, kind);
oom:
	gms_errf(err, "tensor '%s': out of memory", name);
	return WL_NONE;
}

/* Layer index of a name whose wl_name_hash is h, adding it when new;
 * WL_NONE when out of memory. */
static uint32_t layer_index(struct wl_workload *w, const char *name,
			    uint32_t h)
{
	struct wl_store *s = w->store;
	uint32_t ix = htab_get_h(&s->layer_ix, name, h);
	if (ix != WL_NONE)
		return ix;
	if (grow((void **)&w->layers, &s->layers_cap, w->n_layers,
		 sizeof *w->layers) < 0)
		return WL_NONE;
	const char *nm = arena_strdup(s, name);
	if (!nm || htab_put_h(&s->layer_ix, nm, h, w->n_layers) < 0)
		return WL_NONE;
	w->layers[w->n_layers] = nm;
	return w->n_layers++;
}

static bool finite_nonneg(double x)
{
	return isfinite(x) && x >= 0.0;
}

/* Local checks of an op description; 0 or -1 with err. */
static int check_desc(const struct wl_workload *w, const struct wl_op_desc *d,
		      gms_err *err)
{
	const char *nm = d->name;
	if ((unsigned)d->type >= OT_COUNT)
		return gms_errf(err, "op '%s': invalid type %d", nm,
				(int)d->type);
	if ((unsigned)d->phase >= WL_PHASE_COUNT)
		return gms_errf(err, "op '%s': invalid phase %d", nm,
				(int)d->phase);
	if (d->layer && !*d->layer)
		return gms_errf(err, "op '%s': empty layer name", nm);
	if ((d->n_in && !d->in) || (d->n_out && !d->out) ||
	    (d->n_algos && !d->algos))
		return gms_errf(err, "op '%s': array missing for a non-zero "
				     "count", nm);
	for (uint32_t i = 0; i < d->n_in; i++)
		if (d->in[i] >= w->n_tensors)
			return gms_errf(err, "op '%s': input %u is not a "
					     "tensor id (%u)", nm, i,
					d->in[i]);
	for (uint32_t i = 0; i < d->n_out; i++) {
		if (d->out[i] >= w->n_tensors)
			return gms_errf(err, "op '%s': output %u is not a "
					     "tensor id (%u)", nm, i,
					d->out[i]);
		for (uint32_t j = 0; j < i; j++)
			if (d->out[j] == d->out[i])
				return gms_errf(
					err, "op '%s': tensor '%s' listed "
					     "twice as an output", nm,
					w->tensors[d->out[i]].name);
	}
	if (!finite_nonneg(d->flops))
		return gms_errf(err, "op '%s': flops must be finite and >= 0",
				nm);
	if (!finite_nonneg(d->bytes))
		return gms_errf(err, "op '%s': bytes must be finite and >= 0",
				nm);
	if (d->time < 0)
		return gms_errf(err, "op '%s': negative time", nm);
	if (d->inplace && (d->n_in == 0 || d->n_out == 0))
		return gms_errf(err, "op '%s': inplace needs an input and an "
				     "output", nm);
	for (uint32_t i = 0; i < d->n_algos; i++) {
		const struct wl_algo *a = &d->algos[i];
		if (!a->name || !*a->name)
			return gms_errf(err, "op '%s': algo %u has no name", nm,
					i);
		if (!(isfinite(a->time_scale) && a->time_scale > 0.0))
			return gms_errf(err, "op '%s': algo '%s': time_scale "
					     "must be > 0", nm, a->name);
		for (uint32_t j = 0; j < i; j++)
			if (strcmp(d->algos[j].name, a->name) == 0)
				return gms_errf(err, "op '%s': algo '%s' "
						     "listed twice", nm,
						a->name);
	}
	return 0;
}

/* Stable insertion sort by time_scale: algos are kept fastest first. */
static void sort_algos(struct wl_algo *a, uint32_t n)
{
	for (uint32_t i = 1; i < n; i++) {
		struct wl_algo x = a[i];
		uint32_t j = i;
		for (; j > 0 && a[j - 1].time_scale > x.time_scale; j--)
			a[j] = a[j - 1];
		a[j] = x;
	}
}

/* The template's op at the next index when d is it: its name, and its
 * layer's name at the index a look-up would give (the build's layers so
 * far are the template's first ones, each name once: an index below
 * their count is found, the next one is new). NULL when not. */
static const struct wl_op *template_op(const struct wl_workload *w,
				       const struct wl_op_desc *d)
{
	const struct wl_workload *l = w->store->like;
	if (w->n_ops >= l->n_ops)
		return NULL;
	const struct wl_op *lo = &l->ops[w->n_ops];
	const char *layer = d->layer ? d->layer : d->name;
	if (strcmp(lo->name, d->name) != 0 || lo->layer > w->n_layers ||
	    strcmp(l->layers[lo->layer], layer) != 0)
		return NULL;
	return lo;
}

static bool same_ids(const uint32_t *a, uint32_t na, const uint32_t *b,
		     uint32_t nb)
{
	return na == nb && (na == 0 || memcmp(a, b, na * sizeof *a) == 0);
}

/* The template op's string for an algorithm named nm, NULL if none. */
static const char *algo_name_in(const struct wl_op *lo, const char *nm)
{
	for (uint32_t i = 0; i < lo->n_algos; i++)
		if (strcmp(lo->algos[i].name, nm) == 0)
			return lo->algos[i].name;
	return NULL;
}

uint32_t wl_add_op(struct wl_workload *w, const struct wl_op_desc *d,
		   gms_err *err)
{
	if (!w || !w->store || !d) {
		gms_errf(err, "wl_add_op: no workload or description");
		return WL_NONE;
	}
	struct wl_store *s = w->store;
	const char *nm = d->name;
	if (w->finalized) {
		gms_errf(err, "workload '%s': op '%s' added after wl_finalize",
			 w->name, nm ? nm : "");
		return WL_NONE;
	}
	if (!nm || !*nm) {
		gms_errf(err, "workload '%s': an op has an empty name",
			 w->name);
		return WL_NONE;
	}
	const struct wl_op *lo = NULL; /* the template's op, when this is it */
	uint32_t h = 0;
	if (following(s) && !(lo = template_op(w, d)) && leave_template(w) < 0)
		goto oom;
	if (!lo) {
		h = wl_name_hash(nm);
		if (htab_get_h(&s->op_ix, nm, h) != WL_NONE) {
			gms_errf(err, "op '%s' is defined twice", nm);
			return WL_NONE;
		}
	}
	if (check_desc(w, d, err) < 0)
		return WL_NONE;
	if (grow((void **)&w->ops, &s->ops_cap, w->n_ops, sizeof *w->ops) < 0)
		goto oom;

	uint32_t id = w->n_ops;
	struct wl_op op = {
		.id = id,
		.type = d->type,
		.phase = d->phase,
		.n_in = d->n_in,
		.n_out = d->n_out,
		.flops = d->flops,
		.bytes = d->bytes,
		.time = d->time,
		.workspace = d->workspace,
		.recomputable = d->recomputable,
		.inplace = d->inplace,
		.n_algos = d->n_algos,
		.block = s->block,
		.region = s->region,
	};
	bool same_in = lo && same_ids(lo->in, lo->n_in, d->in, d->n_in);
	bool same_out = lo && same_ids(lo->out, lo->n_out, d->out, d->n_out);
	if (lo)
		s->same_ids = s->same_ids && same_in && same_out &&
			      lo->phase == d->phase;
	op.name = lo ? lo->name : arena_strdup(s, nm);
	op.in = same_in ? lo->in : arena_ids(s, d->in, d->n_in);
	op.out = same_out ? lo->out : arena_ids(s, d->out, d->n_out);
	if (!op.name || (d->n_in && !op.in) || (d->n_out && !op.out))
		goto oom;
	if (d->n_algos) {
		op.algos = arena_alloc(s, (size_t)d->n_algos *
						  sizeof *op.algos);
		if (!op.algos)
			goto oom;
		for (uint32_t i = 0; i < d->n_algos; i++) {
			op.algos[i] = d->algos[i];
			const char *an = lo ? algo_name_in(lo, d->algos[i].name)
					    : NULL;
			op.algos[i].name =
				an ? an : arena_strdup(s, d->algos[i].name);
			if (!op.algos[i].name)
				goto oom;
		}
		sort_algos(op.algos, d->n_algos);
	}
	op.gemm = d->gemm;
	if (d->conv) {
		struct wl_conv *cv = arena_alloc(s, sizeof *cv);
		if (!cv)
			goto oom;
		*cv = *d->conv;
		op.conv = cv;
	}
	if (lo) { /* template_op checked its layer */
		op.layer = lo->layer;
		if (op.layer == w->n_layers) {
			if (grow((void **)&w->layers, &s->layers_cap,
				 w->n_layers, sizeof *w->layers) < 0)
				goto oom;
			w->layers[w->n_layers++] = s->like->layers[op.layer];
		}
	} else {
		op.layer = d->layer ? layer_index(w, d->layer,
						  wl_name_hash(d->layer))
				    : layer_index(w, nm, h);
		if (op.layer == WL_NONE ||
		    htab_put_h(&s->op_ix, op.name, h, id) < 0)
			goto oom;
	}
	w->ops[id] = op;
	w->n_ops++;
	return id;
oom:
	/* What was carved from the arena stays there until wl_free. */
	gms_errf(err, "op '%s': out of memory", nm);
	return WL_NONE;
}

int wl_set_release_after(struct wl_workload *w, uint32_t t, uint32_t op,
			 gms_err *err)
{
	if (!w || !w->store)
		return gms_errf(err, "wl_set_release_after: no workload");
	if (w->finalized)
		return gms_errf(err, "workload '%s': release point set after "
				     "wl_finalize", w->name);
	if (t >= w->n_tensors)
		return gms_errf(err, "workload '%s': release point of %u, not a "
				     "tensor id", w->name, t);
	struct wl_tensor *x = &w->tensors[t];
	if (op != WL_NONE && op >= w->n_ops)
		return gms_errf(err, "tensor '%s': release point %u is not an "
				     "op id", x->name, op);
	if (op != WL_NONE && (x->kind == WL_PARAM || x->kind == WL_OPT_STATE))
		return gms_errf(err, "tensor '%s' (%s) lives for the whole run "
				     "and has no release point", x->name,
				wl_kind_name(x->kind));
	x->release_after = op;
	return 0;
}

int wl_set_held(struct wl_workload *w, uint32_t t, gms_err *err)
{
	if (!w || !w->store)
		return gms_errf(err, "wl_set_held: no workload");
	if (w->finalized)
		return gms_errf(err, "workload '%s': tensor held after "
				     "wl_finalize", w->name);
	if (t >= w->n_tensors)
		return gms_errf(err, "workload '%s': held %u, not a tensor id",
				w->name, t);
	struct wl_tensor *x = &w->tensors[t];
	if (x->kind == WL_PARAM || x->kind == WL_OPT_STATE)
		return gms_errf(err, "tensor '%s' (%s) lives for the whole run "
				     "already", x->name, wl_kind_name(x->kind));
	x->held = true;
	return 0;
}

const char *wl_framework_allocator(const char *framework)
{
	if (framework && strcmp(framework, "pytorch") == 0)
		return "caching";
	if (framework && strcmp(framework, "caffe") == 0)
		return "arena";
	return "bfc";
}

/* Each framework launches its GPU kernels without waiting for them:
 *   pytorch: "By default, GPU operations are asynchronous. When you call a
 *     function that uses the GPU, the operations are enqueued to the
 *     particular device, but not necessarily executed until later"
 *     (docs/source/notes/cuda.rst, "Asynchronous execution");
 *   tf-graph, tf-eager: a GPU op's Compute enqueues its kernels on the
 *     device's compute stream and returns (BaseGPUDevice::Compute,
 *     core/common_runtime/gpu/gpu_device.cc); what must wait for the
 *     stream is deferred to the EventMgr's ThenExecute
 *     (gpu_event_mgr.cc), not waited for by the executor; eager ops run
 *     through the same device (EagerExecute, core/common_runtime/eager/
 *     execute.cc), so the Python loop runs ahead until a value is read
 *     (.numpy());
 *   caffe: a layer's Forward_gpu launches kernels with <<<...>>> and
 *     checks them with CUDA_POST_KERNEL_CHECK, which is
 *     cudaPeekAtLastError (include/caffe/util/device_alternate.hpp): no
 *     synchronisation; the host waits where it reads a blob's cpu_data()
 *     (SyncedMemory::to_cpu, a blocking cudaMemcpy, syncedmem.cpp), as
 *     for the loss.
 * Their synchronisation points are the executor's (sim/ex.c, "the host
 * thread"); the loss read is at the iteration's end there (Caffe reads
 * it at the end of the forward pass, which this does not model). */
bool wl_framework_runahead(const char *framework)
{
	static const char *const ahead[] = {"tf-graph", "tf-eager", "pytorch",
					    "caffe", NULL};
	for (int i = 0; framework && ahead[i]; i++)
		if (strcmp(framework, ahead[i]) == 0)
			return true;
	return false;
}

void wl_set_framework(struct wl_workload *w, const char *framework)
{
	if (w && !w->finalized)
		w->framework = framework;
}

/* ---- Finalize ------------------------------------------------------- */

/* Kinds that exist before the iteration and are never produced by an op. */
static bool is_source_kind(enum wl_kind k)
{
	return k == WL_INPUT || k == WL_PARAM || k == WL_OPT_STATE;
}

/* Set producers; checks the output rules. */
static int set_producers(struct wl_workload *w, gms_err *err)
{
	for (uint32_t t = 0; t < w->n_tensors; t++)
		w->tensors[t].producer = WL_NONE;
	for (uint32_t o = 0; o < w->n_ops; o++) {
		const struct wl_op *op = &w->ops[o];
		for (uint32_t i = 0; i < op->n_out; i++) {
			struct wl_tensor *t = &w->tensors[op->out[i]];
			if (is_source_kind(t->kind))
				return gms_errf(
					err, "op '%s' writes tensor '%s' of "
					     "kind %s: inputs, parameters and "
					     "optimizer state are never "
					     "produced by an op (list them as "
					     "inputs of an update op for "
					     "in-place updates)",
					op->name, t->name,
					wl_kind_name(t->kind));
			if (t->producer != WL_NONE)
				return gms_errf(
					err, "tensor '%s' is produced twice: "
					     "by op '%s' and by op '%s'",
					t->name, w->ops[t->producer].name,
					op->name);
			t->producer = o;
		}
	}
	for (uint32_t t = 0; t < w->n_tensors; t++) {
		const struct wl_tensor *x = &w->tensors[t];
		if (x->bytes == 0)
			return gms_errf(err, "tensor '%s': size is 0 bytes",
					x->name);
		if (x->producer == WL_NONE && !is_source_kind(x->kind)) {
			/* Name the first reader when there is one. */
			for (uint32_t o = 0; o < w->n_ops; o++)
				for (uint32_t i = 0; i < w->ops[o].n_in; i++)
					if (w->ops[o].in[i] == t)
						return gms_errf(
							err, "op '%s' reads "
							     "tensor '%s' (%s) "
							     "that no op "
							     "produces",
							w->ops[o].name,
							x->name,
							wl_kind_name(x->kind));
			return gms_errf(err, "tensor '%s' (%s) is never "
					     "produced by an op", x->name,
					wl_kind_name(x->kind));
		}
	}
	return 0;
}

/* Check read order and build readers and last_fwd_reader. */
static int set_readers(struct wl_workload *w, gms_err *err)
{
	struct wl_store *s = w->store;
	uint32_t nt = w->n_tensors;
	uint32_t *last = NULL; /* per tensor: last op counted as its reader */
	uint64_t total = 0;
	if (nt) {
		last = malloc((size_t)nt * sizeof *last);
		if (!last)
			return gms_errf(err, "workload '%s': out of memory",
					w->name);
	}
	for (uint32_t t = 0; t < nt; t++) {
		last[t] = WL_NONE;
		w->tensors[t].n_readers = 0;
		w->tensors[t].readers = NULL;
		w->tensors[t].last_fwd_reader = WL_NONE;
	}
	/* Pass 1: order checks and reader counts. */
	for (uint32_t o = 0; o < w->n_ops; o++) {
		const struct wl_op *op = &w->ops[o];
		for (uint32_t i = 0; i < op->n_in; i++) {
			struct wl_tensor *t = &w->tensors[op->in[i]];
			if (t->producer == o) {
				free(last);
				return gms_errf(err, "op '%s' reads its own "
						     "output '%s'",
						op->name, t->name);
			}
			if (t->producer != WL_NONE && t->producer > o) {
				free(last);
				return gms_errf(
					err, "op '%s' reads tensor '%s' "
					     "before it is produced (by the "
					     "later op '%s')",
					op->name, t->name,
					w->ops[t->producer].name);
			}
			if (last[t->id] != o) {
				last[t->id] = o;
				t->n_readers++;
				total++;
			}
		}
	}
	/* Pass 2: one arena block for every reader list, filled in order. */
	uint32_t *pool = NULL;
	if (total) {
		pool = arena_alloc(s, (size_t)total * sizeof *pool);
		if (!pool) {
			free(last);
			return gms_errf(err, "workload '%s': out of memory",
					w->name);
		}
	}
	for (uint32_t t = 0; t < nt; t++) {
		struct wl_tensor *x = &w->tensors[t];
		if (x->n_readers) {
			x->readers = pool;
			pool += x->n_readers;
		}
		x->n_readers = 0;
		last[t] = WL_NONE;
	}
	for (uint32_t o = 0; o < w->n_ops; o++) {
		const struct wl_op *op = &w->ops[o];
		for (uint32_t i = 0; i < op->n_in; i++) {
			struct wl_tensor *t = &w->tensors[op->in[i]];
			if (last[t->id] == o)
				continue;
			last[t->id] = o;
			t->readers[t->n_readers++] = o;
			if (op->phase == WL_FWD)
				t->last_fwd_reader = o;
		}
	}
	free(last);
	return 0;
}

/* A release point must not come before the producer or a reader. */
static int check_release_points(const struct wl_workload *w, gms_err *err)
{
	for (uint32_t t = 0; t < w->n_tensors; t++) {
		const struct wl_tensor *x = &w->tensors[t];
		uint32_t r = x->release_after;
		if (r == WL_NONE)
			continue;
		if (x->held)
			return gms_errf(err, "tensor '%s' is held for the whole "
					     "run and has a release point",
					x->name);
		if (x->producer != WL_NONE && r < x->producer)
			return gms_errf(err, "tensor '%s' is released after op "
					     "'%s', before its producer '%s'",
					x->name, w->ops[r].name,
					w->ops[x->producer].name);
		if (x->n_readers && r < x->readers[x->n_readers - 1])
			return gms_errf(
				err, "tensor '%s' is released after op '%s' "
				     "but read later by op '%s'",
				x->name, w->ops[r].name,
				w->ops[x->readers[x->n_readers - 1]].name);
	}
	return 0;
}

/* A build that followed its template to the end, every op reading and
 * writing the template's tensors (of the same kinds) in its phase, has
 * the template's producers, readers and last forward readers, and passes
 * the checks that derive them as the template did: copied (the reader
 * lists shared). False when not. */
static bool template_links(struct wl_workload *w)
{
	const struct wl_store *s = w->store;
	const struct wl_workload *l = s->like;
	if (!following(s) || !s->same_ids || w->n_tensors != l->n_tensors ||
	    w->n_ops != l->n_ops)
		return false;
	for (uint32_t t = 0; t < w->n_tensors; t++) {
		struct wl_tensor *x = &w->tensors[t];
		const struct wl_tensor *y = &l->tensors[t];
		x->producer = y->producer;
		x->readers = y->readers;
		x->n_readers = y->n_readers;
		x->last_fwd_reader = y->last_fwd_reader;
	}
	return true;
}

uint32_t wl_unread_input(const struct wl_workload *w)
{
	bool *read = calloc(w->n_tensors ? w->n_tensors : 1, sizeof *read);
	uint32_t r = WL_NONE;
	for (uint32_t o = 0; read && o < w->n_ops; o++)
		for (uint32_t i = 0; i < w->ops[o].n_in; i++)
			read[w->ops[o].in[i]] = true;
	for (uint32_t t = 0; read && t < w->n_tensors && r == WL_NONE; t++)
		if (w->tensors[t].kind == WL_INPUT && !read[t])
			r = t;
	free(read);
	return r;
}

void wl_set_block(struct wl_workload *w, uint32_t block, uint8_t region)
{
	if (w && w->store) {
		w->store->block = block;
		w->store->region = region;
	}
}

int wl_finalize(struct wl_workload *w, gms_err *err)
{
	if (!w || !w->store)
		return gms_errf(err, "wl_finalize: no workload");
	if (w->finalized)
		return 0;
	if (!template_links(w) &&
	    (set_producers(w, err) < 0 || set_readers(w, err) < 0))
		return gms_err_prefix(err, "workload '%s'", w->name);
	if (check_release_points(w, err) < 0)
		return gms_err_prefix(err, "workload '%s'", w->name);
	w->n_blocks = 0;
	for (uint32_t o = 0; o < w->n_ops; o++)
		if (w->ops[o].block != WL_NONE && w->ops[o].block >= w->n_blocks)
			w->n_blocks = w->ops[o].block + 1;
	w->finalized = true;
	return 0;
}

/* cuDNN's names by enum value, per pass (cudnn.h, cuDNN 7/8); DIRECT is
 * in the forward enum but never implemented, bwd filter's WINOGRAD is
 * "not implemented" (cuDNN Developer Guide). */
static const char *const conv_fwd_algos[] = {
	"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT", "FFT",
	"FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED", NULL};
static const char *const conv_data_algos[] = {
	"ALGO_0", "ALGO_1", "FFT", "FFT_TILING", "WINOGRAD",
	"WINOGRAD_NONFUSED", NULL};
static const char *const conv_filter_algos[] = {
	"ALGO_0", "ALGO_1", "FFT", "ALGO_3", "WINOGRAD", "WINOGRAD_NONFUSED",
	"FFT_TILING", NULL};

/* The name table and cuDNN prefix of op type t's pass; NULL if none. */
static const char *const *conv_algo_table(enum wl_op_type t,
					  const char **prefix)
{
	switch (t) {
	case OT_CONV:
		*prefix = "CUDNN_CONVOLUTION_FWD_ALGO_";
		return conv_fwd_algos;
	case OT_CONV_BWD_DATA:
		*prefix = "CUDNN_CONVOLUTION_BWD_DATA_ALGO_";
		return conv_data_algos;
	case OT_CONV_BWD_FILTER:
		*prefix = "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_";
		return conv_filter_algos;
	default:
		return NULL;
	}
}

const char *const *wl_conv_algo_names(enum wl_op_type t)
{
	const char *prefix;
	return conv_algo_table(t, &prefix);
}

const char *wl_conv_algo_name(enum wl_op_type t, int v)
{
	const char *prefix;
	const char *const *tab = conv_algo_table(t, &prefix);
	if (!tab || v < 0)
		return NULL;
	for (int i = 0; tab[i]; i++)
		if (i == v)
			return tab[i];
	return NULL;
}

int wl_conv_algo_value(enum wl_op_type t, const char *s)
{
	const char *prefix;
	const char *const *tab = conv_algo_table(t, &prefix);
	if (!tab || !s || !*s)
		return -1;
	if (isdigit((unsigned char)s[0])) {
		char *end;
		long v = strtol(s, &end, 10);
		if (*end || v > 64 || !wl_conv_algo_name(t, (int)v))
			return -1;
		return (int)v;
	}
	/* the full name: the prefix ends in ALGO_, so backward's ALGO_0 is
	 * ..._ALGO_0 and its remainder "0" */
	size_t pl = strlen(prefix);
	bool full = strncasecmp(s, prefix, pl) == 0;
	if (full)
		s += pl;
	for (int i = 0; tab[i]; i++) {
		const char *nm = tab[i];
		if (full && strncmp(nm, "ALGO_", 5) == 0)
			nm += 5;
		if (strcasecmp(s, nm) == 0)
			return i;
	}
	return -1;
}

uint32_t wl_fastest_algo_within(const struct wl_algo *al, uint32_t n,
				uint64_t limit)
{
	uint32_t best = n;
	for (uint32_t a = 0; a < n; a++) {
		const struct wl_algo *x = &al[a];
		if (x->workspace > limit)
			continue;
		if (best == n || x->time_scale < al[best].time_scale ||
		    (x->time_scale == al[best].time_scale &&
		     x->workspace < al[best].workspace))
			best = a;
	}
	return best;
}

uint32_t wl_fastest_of(const struct wl_algo *al, uint32_t n)
{
	uint32_t a = wl_fastest_algo_within(al, n, UINT64_MAX);
	return a < n ? a : 0;
}

uint32_t wl_least_workspace_of(const struct wl_algo *al, uint32_t n)
{
	uint32_t best = 0;
	for (uint32_t a = 1; a < n; a++) {
		const struct wl_algo *x = &al[a], *b = &al[best];
		if (x->workspace < b->workspace ||
		    (x->workspace == b->workspace &&
		     x->time_scale < b->time_scale))
			best = a;
	}
	return best;
}

uint32_t wl_fastest_algo(const struct wl_op *op)
{
	return wl_fastest_of(op->algos, op->n_algos);
}

uint32_t wl_least_workspace_algo(const struct wl_op *op)
{
	return wl_least_workspace_of(op->algos, op->n_algos);
}

uint64_t wl_op_workspace(const struct wl_op *op, uint32_t a)
{
	return a < op->n_algos ? op->algos[a].workspace : op->workspace;
}

uint64_t wl_op_max_workspace(const struct wl_op *op)
{
	uint64_t ws = op->n_algos ? 0 : op->workspace;
	for (uint32_t a = 0; a < op->n_algos; a++)
		if (op->algos[a].workspace > ws)
			ws = op->algos[a].workspace;
	return ws;
}

uint64_t wl_bytes_of_kind(const struct wl_workload *w, enum wl_kind k)
{
	uint64_t sum = 0;
	if (!w)
		return 0;
	for (uint32_t t = 0; t < w->n_tensors; t++)
		if (w->tensors[t].kind == k)
			sum += w->tensors[t].bytes;
	return sum;
}
