/*
 * mem.c - the allocator registry, fragmentation, the mem_dev wrappers,
 * pinned host memory, and the ordered set of free blocks (a treap) that the
 * model files share.
 */
#include "mem.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------
 * Registry
 * ---------------------------------------------------------------------- */

static const struct mem_ops *const models[] = {
	&mem_pool_bestfit_ops, &mem_highend_ops, &mem_bfc_ops,
	&mem_caching_ops,      &mem_arena_ops,
};

#define N_MODELS (sizeof models / sizeof models[0])

const struct mem_ops *mem_model(size_t i)
{
	return i < N_MODELS ? models[i] : NULL;
}

const struct mem_ops *mem_find(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < N_MODELS; i++)
		if (strcmp(models[i]->name, name) == 0)
			return models[i];
	return NULL;
}

double mem_frag(const struct mem_stats *s)
{
	assert(s);
	if (s->reserved <= s->allocated)
		return 0.0;
	uint64_t free_bytes = s->reserved - s->allocated;
	if (s->largest_free >= free_bytes)
		return 0.0;
	return 1.0 - (double)s->largest_free / (double)free_bytes;
}

/* Is a sample with largest free block lf of fr free bytes more
 * fragmented than one with lf0 of fr0? 1 - lf/fr > 1 - lf0/fr0, compared
 * exactly (products of byte counts need 128 bits). */
static bool frag_worse(uint64_t lf, uint64_t fr, uint64_t lf0, uint64_t fr0)
{
	return (unsigned __int128)lf * fr0 < (unsigned __int128)lf0 * fr;
}

void mem_frag_sample(struct mem_frag_track *t, const struct mem_stats *s)
{
	uint64_t fr = s->reserved > s->allocated ? s->reserved - s->allocated
						 : 0;
	uint64_t lf = s->largest_free;
	if (fr == 0 || lf >= fr)
		lf = fr = 1; /* mem_frag 0 */
	if (t->n == 0 || s->allocated > t->peak) {
		t->peak = s->allocated; /* a new peak: earlier ones drop out */
		t->peak_lf = lf;
		t->peak_free = fr;
		t->at_peak = mem_frag(s);
	} else if (s->allocated == t->peak &&
		   frag_worse(lf, fr, t->peak_lf, t->peak_free)) {
		t->peak_lf = lf;
		t->peak_free = fr;
		t->at_peak = mem_frag(s);
	}
	if (t->n == 0 || frag_worse(lf, fr, t->max_lf, t->max_free)) {
		t->max_lf = lf;
		t->max_free = fr;
		t->max = mem_frag(s);
	}
	t->n++;
	assert(t->max >= t->at_peak);
}

const struct mem_ops *mem_lookup(const char *name, gms_err *err)
{
	const struct mem_ops *ops = name ? mem_find(name) : NULL;
	if (!ops) {
		char known[256] = "", hint[GMS_NEAR_BUF];
		struct gms_near near;
		gms_near_init(&near, name);
		for (size_t i = 0; i < N_MODELS; i++) {
			gms_list_add(known, sizeof known, models[i]->name);
			gms_near_add(&near, models[i]->name);
		}
		gms_errf(err, "unknown allocator '%s'%s (known: %s)",
			 name ? name : "(null)", gms_near_hint(&near, hint),
			 known);
	}
	return ops;
}

int mem_dev_open(struct mem_dev *d, const char *model,
		 const struct mem_cfg *cfg, gms_err *err)
{
	assert(d);
	d->ops = NULL;
	d->a = NULL;
	const struct mem_ops *ops = mem_lookup(model, err);
	if (!ops)
		return -1;
	struct mem_allocator *a = ops->create(cfg, err);
	if (!a)
		return gms_err_prefix(err, "allocator '%s'", ops->name);
	d->ops = ops;
	d->a = a;
	return 0;
}

void mem_dev_close(struct mem_dev *d)
{
	if (!d)
		return;
	if (d->ops && d->a)
		d->ops->destroy(d->a);
	d->ops = NULL;
	d->a = NULL;
}

/* ------------------------------------------------------------------------
 * Pinned host memory
 * ---------------------------------------------------------------------- */

int mem_host_alloc(struct mem_host *h, uint64_t bytes)
{
	assert(h);
	if (h->capacity &&
	    (bytes > h->capacity || h->in_use > h->capacity - bytes))
		return -1;
	mem_host_take(h, bytes);
	return 0;
}

void mem_host_take(struct mem_host *h, uint64_t bytes)
{
	assert(h);
	h->in_use += bytes;
	if (h->in_use > h->peak)
		h->peak = h->in_use;
	if (h->in_use > h->reserved) { /* grow by the shortfall */
		h->grown += h->in_use - h->reserved;
		h->reserved = h->in_use;
		h->n_grow++;
	}
	h->n_alloc++;
}

void mem_host_free(struct mem_host *h, uint64_t bytes)
{
	assert(h);
	assert(bytes <= h->in_use);
	h->in_use -= bytes;
}

/* ------------------------------------------------------------------------
 * Treap of free blocks
 *
 * Priorities are a hash of the block address, so a given set of keys always
 * has the same shape (runs are repeatable) and the expected depth is
 * O(log n). Recursion depth is the tree depth.
 * ---------------------------------------------------------------------- */

#define NONE MEM_HANDLE_NONE

static uint32_t addr_hash(uint64_t x)
{
	/* splitmix64 finaliser */
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	x ^= x >> 31;
	return (uint32_t)(x >> 32);
}

void mem_forest_reserve(struct mem_forest *f, uint32_t cap)
{
	assert(f);
	if (cap <= f->cap)
		return;
	uint32_t ncap = f->cap ? f->cap : 64;
	while (ncap < cap)
		ncap = ncap > UINT32_MAX / 2 ? UINT32_MAX - 1 : ncap * 2;
	struct mem_tnode *n = realloc(f->node, (size_t)ncap * sizeof *n);
	if (!n) {
		fprintf(stderr, "gpumemsim: out of host memory (allocator)\n");
		abort();
	}
	memset(n + f->cap, 0, (size_t)(ncap - f->cap) * sizeof *n);
	f->node = n;
	f->cap = ncap;
}

void mem_forest_destroy(struct mem_forest *f)
{
	if (!f)
		return;
	free(f->node);
	f->node = NULL;
	f->cap = 0;
}

/* a < b in the tree's order */
static int key_less(const struct mem_tnode *a, const struct mem_tnode *b,
		    enum mem_tree_order o)
{
	if (o == MEM_BY_SIZE && a->size != b->size)
		return a->size < b->size;
	return a->addr < b->addr;
}

static void pull(struct mem_forest *f, uint32_t t)
{
	struct mem_tnode *n = &f->node[t];
	uint64_t m = n->size;
	if (n->left != NONE && f->node[n->left].max > m)
		m = f->node[n->left].max;
	if (n->right != NONE && f->node[n->right].max > m)
		m = f->node[n->right].max;
	n->max = m;
}

static uint32_t ins(struct mem_forest *f, uint32_t t, uint32_t id,
		    enum mem_tree_order o)
{
	if (t == NONE)
		return id;
	struct mem_tnode *n = &f->node[t];
	if (key_less(&f->node[id], n, o)) {
		n->left = ins(f, n->left, id, o);
		if (f->node[n->left].prio > n->prio) { /* rotate right */
			uint32_t l = n->left;
			n->left = f->node[l].right;
			f->node[l].right = t;
			pull(f, t);
			pull(f, l);
			return l;
		}
	} else {
		n->right = ins(f, n->right, id, o);
		if (f->node[n->right].prio > n->prio) { /* rotate left */
			uint32_t r = n->right;
			n->right = f->node[r].left;
			f->node[r].left = t;
			pull(f, t);
			pull(f, r);
			return r;
		}
	}
	pull(f, t);
	return t;
}

/* Join two treaps, every key of a below every key of b. */
static uint32_t join(struct mem_forest *f, uint32_t a, uint32_t b)
{
	if (a == NONE)
		return b;
	if (b == NONE)
		return a;
	if (f->node[a].prio > f->node[b].prio) {
		f->node[a].right = join(f, f->node[a].right, b);
		pull(f, a);
		return a;
	}
	f->node[b].left = join(f, a, f->node[b].left);
	pull(f, b);
	return b;
}

static uint32_t del(struct mem_forest *f, uint32_t t, uint32_t id,
		    enum mem_tree_order o)
{
	assert(t != NONE); /* id must be in this tree */
	if (t == id)
		return join(f, f->node[t].left, f->node[t].right);
	struct mem_tnode *n = &f->node[t];
	if (key_less(&f->node[id], n, o))
		n->left = del(f, n->left, id, o);
	else
		n->right = del(f, n->right, id, o);
	pull(f, t);
	return t;
}

void mem_tree_insert(struct mem_forest *f, uint32_t *root,
		     enum mem_tree_order o, uint32_t id, uint64_t size,
		     uint64_t addr)
{
	assert(f && root && id < f->cap);
	struct mem_tnode *n = &f->node[id];
	assert(!n->linked);
	n->size = size;
	n->addr = addr;
	n->max = size;
	n->left = n->right = NONE;
	n->prio = addr_hash(addr);
	n->linked = 1;
	*root = ins(f, *root, id, o);
}

void mem_tree_erase(struct mem_forest *f, uint32_t *root,
		    enum mem_tree_order o, uint32_t id)
{
	assert(f && root && id < f->cap && f->node[id].linked);
	*root = del(f, *root, id, o);
	f->node[id].linked = 0;
	f->node[id].left = f->node[id].right = NONE;
}

uint32_t mem_tree_best_fit(const struct mem_forest *f, uint32_t root,
			   uint64_t size)
{
	uint32_t best = NONE;
	for (uint32_t t = root; t != NONE;) {
		const struct mem_tnode *n = &f->node[t];
		if (n->size >= size) {
			best = t;
			t = n->left;
		} else {
			t = n->right;
		}
	}
	return best;
}

uint32_t mem_tree_highest_fit(const struct mem_forest *f, uint32_t root,
			      uint64_t size)
{
	uint32_t t = root;
	if (t == NONE || f->node[t].max < size)
		return NONE;
	for (;;) {
		const struct mem_tnode *n = &f->node[t];
		if (n->right != NONE && f->node[n->right].max >= size) {
			t = n->right;
		} else if (n->size >= size) {
			return t;
		} else {
			/* the subtree max is >= size, so the left has it */
			assert(n->left != NONE && f->node[n->left].max >= size);
			t = n->left;
		}
	}
}

uint64_t mem_tree_max(const struct mem_forest *f, uint32_t root)
{
	return root == NONE ? 0 : f->node[root].max;
}

/* ------------------------------------------------------------------------
 * Block slab, neighbour merging and stats bookkeeping
 * ---------------------------------------------------------------------- */

void *mem_xrealloc(void *p, size_t n, const char *who)
{
	void *q = realloc(p, n);
	if (!q) {
		fprintf(stderr, "gpumemsim: out of host memory (%s)\n", who);
		abort();
	}
	return q;
}

void mem_slab_init(struct mem_slab *s, const char *who, struct mem_forest *f0,
		   struct mem_forest *f1)
{
	assert(s && who);
	memset(s, 0, sizeof *s);
	s->dead = NONE;
	s->forest[0] = f0;
	s->forest[1] = f1;
	s->who = who;
}

void mem_slab_destroy(struct mem_slab *s)
{
	if (!s)
		return;
	free(s->b);
	s->b = NULL;
	s->n = s->cap = 0;
	s->dead = NONE;
}

uint32_t mem_slab_new(struct mem_slab *s)
{
	uint32_t id;
	if (s->dead != NONE) {
		id = s->dead;
		assert(s->b[id].state == MEM_B_DEAD);
		s->dead = s->b[id].next;
	} else {
		if (s->n == s->cap) {
			s->cap = s->cap ? s->cap * 2 : 64;
			s->b = mem_xrealloc(s->b, (size_t)s->cap * sizeof *s->b,
					    s->who);
			for (int i = 0; i < 2; i++)
				if (s->forest[i])
					mem_forest_reserve(s->forest[i], s->cap);
		}
		id = s->n++;
		assert(id != NONE);
	}
	memset(&s->b[id], 0, sizeof s->b[id]);
	s->b[id].prev = s->b[id].next = NONE;
	return id;
}

void mem_slab_kill(struct mem_slab *s, uint32_t id)
{
	assert(s && id < s->n && s->b[id].state != MEM_B_DEAD);
	s->b[id].state = MEM_B_DEAD;
	s->b[id].next = s->dead;
	s->dead = id;
}

uint32_t mem_slab_split(struct mem_slab *s, uint32_t id, uint64_t lo_size)
{
	assert(s && id < s->n);
	assert(lo_size > 0 && lo_size < s->b[id].size);
	uint32_t n = mem_slab_new(s); /* may move s->b */
	struct mem_blk *k = &s->b[id], *r = &s->b[n];
	r->addr = k->addr + lo_size;
	r->size = k->size - lo_size;
	r->group = k->group;
	r->kind = k->kind;
	r->state = MEM_B_FREE;
	r->prev = id;
	r->next = k->next;
	if (k->next != NONE)
		s->b[k->next].prev = n;
	k->next = n;
	k->size = lo_size;
	return n;
}

void mem_slab_use(struct mem_slab *s, struct mem_stats *st, uint32_t id,
		  uint64_t req)
{
	assert(s && st && id < s->n && s->b[id].state == MEM_B_FREE);
	struct mem_blk *k = &s->b[id];
	k->state = MEM_B_USED;
	k->req = req;
	mem_stats_on_alloc(st, req, k->size);
}

/* Merge free neighbours lo and hi (lo directly below hi) into lo. */
static void merge(struct mem_slab *s, uint32_t lo, uint32_t hi)
{
	assert(s->b[lo].next == hi && s->b[hi].prev == lo);
	assert(s->b[lo].state == MEM_B_FREE && s->b[hi].state == MEM_B_FREE);
	s->b[lo].size += s->b[hi].size;
	s->b[lo].next = s->b[hi].next;
	if (s->b[hi].next != NONE)
		s->b[s->b[hi].next].prev = lo;
	mem_slab_kill(s, hi);
}

uint32_t mem_slab_release(struct mem_slab *s, struct mem_stats *st,
			  uint32_t h, bool next_first,
			  void (*erase)(struct mem_allocator *a, uint32_t id),
			  struct mem_allocator *a)
{
	assert(s && st && erase && h < s->n && s->b[h].state == MEM_B_USED);
	uint32_t id = h;
	mem_stats_on_free(st, s->b[id].req, s->b[id].size);
	s->b[id].state = MEM_B_FREE;
	s->b[id].req = 0;
	for (int pass = 0; pass < 2; pass++) {
		if ((pass == 0) == next_first) {
			uint32_t n = s->b[id].next;
			if (n != NONE && s->b[n].state == MEM_B_FREE) {
				erase(a, n);
				merge(s, id, n);
			}
		} else {
			uint32_t p = s->b[id].prev;
			if (p != NONE && s->b[p].state == MEM_B_FREE) {
				erase(a, p);
				merge(s, p, id);
				id = p;
			}
		}
	}
	return id;
}

uint64_t mem_slab_addr(const struct mem_slab *s, uint32_t h)
{
	assert(s && h < s->n && s->b[h].state == MEM_B_USED);
	return s->b[h].addr;
}

/* A segment's head block and its address, for sorting. */
struct seg_head {
	uint64_t addr;
	uint32_t id;
};

static int cmp_seg_head(const void *x, const void *y)
{
	const struct seg_head *a = x, *b = y;
	return (a->addr > b->addr) - (a->addr < b->addr);
}

void mem_slab_walk(const struct mem_slab *s, bool small_kind,
		   const struct mem_walk *w)
{
	struct seg_head *h = NULL;
	uint32_t n = 0, cap = 0;
	for (uint32_t i = 0; i < s->n; i++)
		if (s->b[i].state != MEM_B_DEAD &&
		    s->b[i].prev == MEM_HANDLE_NONE) {
			if (n == cap) {
				cap = cap ? 2 * cap : 16;
				h = mem_xrealloc(h, (size_t)cap * sizeof *h,
						 s->who);
			}
			h[n++] = (struct seg_head){s->b[i].addr, i};
		}
	if (n)
		qsort(h, n, sizeof *h, cmp_seg_head);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t size = 0;
		for (uint32_t b = h[i].id; b != MEM_HANDLE_NONE; b = s->b[b].next)
			size += s->b[b].size;
		w->seg(w->ctx, h[i].addr, size,
		       small_kind && s->b[h[i].id].kind);
		for (uint32_t b = h[i].id; b != MEM_HANDLE_NONE; b = s->b[b].next)
			w->blk(w->ctx, s->b[b].addr, s->b[b].size,
			       s->b[b].state == MEM_B_USED ? s->b[b].req : 0,
			       s->b[b].state == MEM_B_USED);
	}
	free(h);
}

uint64_t mem_slab_size(const struct mem_slab *s, uint32_t h)
{
	assert(h < s->n && s->b[h].state == MEM_B_USED);
	return s->b[h].size;
}

void mem_slab_dump_chain(const struct mem_slab *s, uint32_t head, FILE *f)
{
	for (uint32_t id = head; id != NONE; id = s->b[id].next)
		fprintf(f, "  [%llu, %llu) %s id %u\n",
			(unsigned long long)s->b[id].addr,
			(unsigned long long)(s->b[id].addr + s->b[id].size),
			s->b[id].state == MEM_B_USED ? "used" : "free", id);
}

void mem_stats_on_alloc(struct mem_stats *s, uint64_t req, uint64_t size)
{
	assert(s && req <= size);
	s->requested += req;
	s->allocated += size;
	if (s->requested > s->peak_requested)
		s->peak_requested = s->requested;
	if (s->allocated > s->peak_allocated)
		s->peak_allocated = s->allocated;
	s->n_alloc++;
}

void mem_stats_on_free(struct mem_stats *s, uint64_t req, uint64_t size)
{
	assert(s && req <= s->requested && size <= s->allocated);
	s->requested -= req;
	s->allocated -= size;
	s->n_free++;
}

void mem_stats_on_reserve(struct mem_stats *s, uint64_t bytes)
{
	assert(s);
	s->reserved += bytes;
	if (s->reserved > s->peak_reserved)
		s->peak_reserved = s->reserved;
	s->n_device_malloc++;
}

void mem_stats_check(const struct mem_stats *s, uint64_t largest_free)
{
	assert(s);
	assert(s->allocated <= s->reserved && s->reserved <= s->budget);
	assert(s->requested <= s->allocated);
	assert(s->peak_allocated >= s->allocated);
	assert(s->peak_reserved >= s->reserved);
	assert(s->peak_requested >= s->requested);
	assert(largest_free <= s->reserved - s->allocated);
	(void)s;
	(void)largest_free;
}
