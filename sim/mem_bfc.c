/*
 * mem_bfc.c - `bfc`: TensorFlow's best-fit-with-coalescing allocator.
 *
 * Follows tensorflow/core/common_runtime/bfc_allocator.{h,cc}:
 *   - RoundedBytes: every request is rounded up to kMinAllocationSize =
 *     1 << kMinAllocationBits = 256 bytes;
 *   - kNumBins = 21 bins; BinNumForSize(bytes) = min(kNumBins - 1,
 *     floor(log2(max(bytes, 256) >> 8))), so bin i holds free chunks of size
 *     [256 << i, 256 << (i + 1)) and the last bin everything from 256 MiB up;
 *     each bin's free chunks are ordered by (size, ptr) (Bin::
 *     ChunkComparator);
 *   - FindChunkPtr searches from the request's bin upwards and takes the
 *     first chunk with size >= rounded bytes: the smallest fitting chunk,
 *     ties to the lowest address;
 *   - it splits the chunk (SplitChunk: the used part keeps the low address,
 *     the remainder becomes a free chunk) iff
 *     `chunk->size >= rounded_bytes * 2 || chunk->size - rounded_bytes >=
 *     kMaxInternalFragmentation` (128 MiB); otherwise the whole chunk is
 *     handed out and counted in bytes_in_use;
 *   - DeallocateRawInternal -> TryToCoalesce merges the freed chunk with a
 *     free next neighbour, then with a free previous neighbour, within its
 *     region (chunks are address-ordered and linked inside a region);
 *   - Extend: available = (memory_limit - total_region_allocated) rounded
 *     down to 256; fail if rounded_bytes > available; while rounded_bytes >
 *     curr_region_allocation_bytes, double it; allocate min(curr, available)
 *     as a new region; if the size was not increased for this request,
 *     double it for the next one. The GPU sub-allocator does not support
 *     coalescing, so regions are never merged;
 *   - DeallocateFreeRegions (garbage_collection, on by default for GPUs:
 *     GPUBFCAllocator reads TF_ENABLE_GPU_GARBAGE_COLLECTION, default true):
 *     when neither a chunk nor Extend can serve a request, regions with no
 *     chunk in use are freed if (limit - allocated + their bytes) >= the
 *     request, then Extend is tried again.
 * Regions: cfg.pool_size == 0 is TF's default (allow_growth off,
 * curr_region_allocation_bytes = RoundedBytes(total_memory)): one region of
 * the whole budget (rounded down to 256 B, as Extend does), taken up front
 * here at create rather than lazily at the first request. Otherwise
 * allow_growth: curr_region_allocation_bytes starts at
 * RoundedBytes(pool_size) (TF uses 2 MiB) and grows as above.
 * Not modelled: timestamped chunks (freed_at_count), the allocation retry
 * with a wait, backpedalling when cudaMalloc itself fails (here the budget
 * is checked before "calling" it, so it cannot fail).
 */
#include "mem.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#define NONE MEM_HANDLE_NONE
#define K_MIN_ALLOCATION_BITS 8
#define K_MIN_ALLOCATION_SIZE ((uint64_t)1 << K_MIN_ALLOCATION_BITS)
#define K_NUM_BINS 21
#define K_MAX_INTERNAL_FRAGMENTATION ((uint64_t)128 << 20)

enum { C_DEAD, C_FREE, C_USED };

struct chunk {
	uint64_t addr;	/* virtual start address */
	uint64_t size;	/* bytes, a multiple of 256 */
	uint64_t req;	/* bytes the caller asked for (in use) */
	uint32_t prev;	/* lower neighbour in the region, or NONE */
	uint32_t next;	/* upper neighbour in the region, or NONE; next
			   dead slot while dead */
	uint32_t region; /* index of the region holding the chunk */
	uint8_t state;	/* C_DEAD, C_FREE or C_USED */
	uint8_t bin;	/* bin while free */
};

struct region {
	uint64_t base; /* first address */
	uint64_t size; /* bytes */
	uint32_t head; /* id of the chunk at base (stable) */
	uint8_t live;  /* 0 once deallocated by garbage collection */
};

struct mem_allocator {
	struct chunk *c;	  /* chunks by id */
	uint32_t nc;		  /* ids handed out so far */
	uint32_t cap;		  /* slots allocated in c */
	uint32_t dead;		  /* first dead slot to reuse, or NONE */
	struct region *r;	  /* regions in creation order */
	uint32_t nr;		  /* regions made (live or not) */
	uint32_t cap_r;		  /* slots allocated in r */
	uint64_t next_addr;	  /* where the next region starts */
	uint64_t curr_region;	  /* curr_region_allocation_bytes_ */
	struct mem_forest f;	  /* tree nodes, shared by the bins */
	uint32_t bin[K_NUM_BINS]; /* roots: free chunks by (size, addr) */
	struct mem_stats st;	  /* counters; largest_free filled on read */
};

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n);
	if (!q) {
		fprintf(stderr, "gpumemsim: out of host memory (bfc)\n");
		abort();
	}
	return q;
}

static uint64_t rounded_bytes(uint64_t bytes)
{
	return (bytes + K_MIN_ALLOCATION_SIZE - 1) / K_MIN_ALLOCATION_SIZE *
	       K_MIN_ALLOCATION_SIZE;
}

static unsigned bin_for_size(uint64_t bytes)
{
	uint64_t v = (bytes < 256 ? 256 : bytes) >> K_MIN_ALLOCATION_BITS;
	unsigned b = 63u ^ (unsigned)__builtin_clzll(v);
	return b < K_NUM_BINS - 1 ? b : K_NUM_BINS - 1;
}

static uint32_t new_chunk(struct mem_allocator *a)
{
	uint32_t id;
	if (a->dead != NONE) {
		id = a->dead;
		a->dead = a->c[id].next;
	} else {
		if (a->nc == a->cap) {
			a->cap = a->cap ? a->cap * 2 : 64;
			a->c = xrealloc(a->c, (size_t)a->cap * sizeof *a->c);
			mem_forest_reserve(&a->f, a->cap);
		}
		id = a->nc++;
		assert(id != NONE);
	}
	memset(&a->c[id], 0, sizeof a->c[id]);
	a->c[id].prev = a->c[id].next = NONE;
	return id;
}

static void kill_chunk(struct mem_allocator *a, uint32_t id)
{
	a->c[id].state = C_DEAD;
	a->c[id].next = a->dead;
	a->dead = id;
}

static void bin_insert(struct mem_allocator *a, uint32_t id)
{
	struct chunk *k = &a->c[id];
	assert(k->state == C_FREE);
	k->bin = (uint8_t)bin_for_size(k->size);
	mem_tree_insert(&a->f, &a->bin[k->bin], MEM_BY_SIZE, id, k->size,
			k->addr);
}

static void bin_erase(struct mem_allocator *a, uint32_t id)
{
	assert(a->c[id].state == C_FREE);
	mem_tree_erase(&a->f, &a->bin[a->c[id].bin], MEM_BY_SIZE, id);
}

static uint64_t largest_free(const struct mem_allocator *a)
{
	for (int b = K_NUM_BINS - 1; b >= 0; b--)
		if (a->bin[b] != NONE)
			return mem_tree_max(&a->f, a->bin[b]);
	return 0;
}

static void check(const struct mem_allocator *a)
{
	const struct mem_stats *s = &a->st;
	(void)s;
	assert(s->allocated <= s->reserved && s->reserved <= s->budget);
	assert(s->requested <= s->allocated);
	assert(s->peak_allocated >= s->allocated);
	assert(s->peak_reserved >= s->reserved);
	assert(s->peak_requested >= s->requested);
	assert(largest_free(a) <= s->reserved - s->allocated);
}

/* A new region of `bytes`, its one chunk free in its bin. */
static void add_region(struct mem_allocator *a, uint64_t bytes)
{
	if (a->nr == a->cap_r) {
		a->cap_r = a->cap_r ? a->cap_r * 2 : 8;
		a->r = xrealloc(a->r, (size_t)a->cap_r * sizeof *a->r);
	}
	uint32_t id = new_chunk(a);
	struct chunk *k = &a->c[id];
	k->addr = a->next_addr;
	k->size = bytes;
	k->region = a->nr;
	k->state = C_FREE;
	a->r[a->nr++] = (struct region){a->next_addr, bytes, id, 1};
	a->next_addr += bytes;
	a->st.reserved += bytes;
	if (a->st.reserved > a->st.peak_reserved)
		a->st.peak_reserved = a->st.reserved;
	a->st.n_device_malloc++;
	bin_insert(a, id);
}

/* BFCAllocator::Extend */
static bool extend(struct mem_allocator *a, uint64_t rounded)
{
	uint64_t avail = (a->st.budget - a->st.reserved) /
			 K_MIN_ALLOCATION_SIZE * K_MIN_ALLOCATION_SIZE;
	if (rounded > avail)
		return false;
	bool increased = false;
	while (rounded > a->curr_region) {
		a->curr_region *= 2;
		increased = true;
	}
	add_region(a, a->curr_region < avail ? a->curr_region : avail);
	if (!increased && a->curr_region <= UINT64_MAX / 2)
		a->curr_region *= 2;
	return true;
}

/* BFCAllocator::DeallocateFreeRegions (garbage collection) */
static bool deallocate_free_regions(struct mem_allocator *a, uint64_t rounded)
{
	uint64_t total_free = 0;
	for (uint32_t i = 0; i < a->nr; i++) {
		const struct region *g = &a->r[i];
		/* fully coalesced: no chunk in use iff one free chunk */
		if (g->live && a->c[g->head].state == C_FREE &&
		    a->c[g->head].size == g->size)
			total_free += g->size;
	}
	if (total_free == 0)
		return false;
	if (rounded > a->st.budget - a->st.reserved + total_free)
		return false;
	for (uint32_t i = 0; i < a->nr; i++) {
		struct region *g = &a->r[i];
		if (g->live && a->c[g->head].state == C_FREE &&
		    a->c[g->head].size == g->size) {
			bin_erase(a, g->head);
			kill_chunk(a, g->head);
			g->live = 0;
			g->head = NONE;
			a->st.reserved -= g->size;
			a->st.n_device_free++;
		}
	}
	return true;
}

/* FindChunkPtr's search: from the request's bin upwards. */
static uint32_t find_chunk(const struct mem_allocator *a, uint64_t rounded)
{
	for (unsigned b = bin_for_size(rounded); b < K_NUM_BINS; b++) {
		uint32_t id = mem_tree_best_fit(&a->f, a->bin[b], rounded);
		if (id != NONE)
			return id;
	}
	return NONE;
}

static struct mem_allocator *create(const struct mem_cfg *cfg, gms_err *err)
{
	if (!cfg || cfg->budget == 0)
		return gms_errf(err, "budget must be > 0"), NULL;
	if (cfg->budget < K_MIN_ALLOCATION_SIZE)
		return gms_errf(err, "budget %llu is below 256 bytes",
				(unsigned long long)cfg->budget),
		       NULL;
	if (cfg->pool_size > cfg->budget)
		return gms_errf(err, "pool_size %llu exceeds the budget %llu",
				(unsigned long long)cfg->pool_size,
				(unsigned long long)cfg->budget),
		       NULL;
	struct mem_allocator *a = calloc(1, sizeof *a);
	if (!a)
		return gms_errf(err, "out of memory"), NULL;
	a->dead = NONE;
	for (int b = 0; b < K_NUM_BINS; b++)
		a->bin[b] = NONE;
	a->st.budget = cfg->budget;
	if (cfg->pool_size == 0) {
		a->curr_region = rounded_bytes(cfg->budget);
		bool ok = extend(a, K_MIN_ALLOCATION_SIZE);
		assert(ok);
		(void)ok;
	} else {
		a->curr_region = rounded_bytes(cfg->pool_size);
	}
	check(a);
	return a;
}

static void destroy(struct mem_allocator *a)
{
	if (!a)
		return;
	mem_forest_destroy(&a->f);
	free(a->r);
	free(a->c);
	free(a);
}

static int alloc(struct mem_allocator *a, uint64_t bytes, unsigned flags,
		 mem_handle *h)
{
	(void)flags;
	assert(a && h && bytes > 0);
	if (bytes > a->st.budget) {
		a->st.n_fail++;
		return -1;
	}
	uint64_t rounded = rounded_bytes(bytes);
	uint32_t id = find_chunk(a, rounded);
	if (id == NONE && extend(a, rounded))
		id = find_chunk(a, rounded);
	if (id == NONE && deallocate_free_regions(a, rounded) &&
	    extend(a, rounded))
		id = find_chunk(a, rounded);
	if (id == NONE) {
		a->st.n_fail++;
		check(a);
		return -1;
	}
	bin_erase(a, id);
	if (a->c[id].size >= rounded * 2 ||
	    a->c[id].size - rounded >= K_MAX_INTERNAL_FRAGMENTATION) {
		/* SplitChunk(h, rounded_bytes) */
		uint32_t n = new_chunk(a); /* may move a->c */
		struct chunk *k = &a->c[id], *r = &a->c[n];
		r->addr = k->addr + rounded;
		r->size = k->size - rounded;
		r->region = k->region;
		r->state = C_FREE;
		r->prev = id;
		r->next = k->next;
		if (k->next != NONE)
			a->c[k->next].prev = n;
		k->next = n;
		k->size = rounded;
		bin_insert(a, n);
	}
	struct chunk *k = &a->c[id];
	k->state = C_USED;
	k->req = bytes;
	struct mem_stats *s = &a->st;
	s->requested += bytes;
	s->allocated += k->size;
	if (s->requested > s->peak_requested)
		s->peak_requested = s->requested;
	if (s->allocated > s->peak_allocated)
		s->peak_allocated = s->allocated;
	s->n_alloc++;
	*h = id;
	check(a);
	return 0;
}

static void merge(struct mem_allocator *a, uint32_t lo, uint32_t hi)
{
	assert(a->c[lo].next == hi && a->c[hi].prev == lo);
	a->c[lo].size += a->c[hi].size;
	a->c[lo].next = a->c[hi].next;
	if (a->c[hi].next != NONE)
		a->c[a->c[hi].next].prev = lo;
	kill_chunk(a, hi);
}

static void bfree(struct mem_allocator *a, mem_handle h)
{
	assert(a && h < a->nc && a->c[h].state == C_USED);
	uint32_t id = h;
	struct mem_stats *s = &a->st;
	s->requested -= a->c[id].req;
	s->allocated -= a->c[id].size;
	s->n_free++;
	a->c[id].state = C_FREE;
	a->c[id].req = 0;
	/* TryToCoalesce: next first, then prev */
	uint32_t n = a->c[id].next;
	if (n != NONE && a->c[n].state == C_FREE) {
		bin_erase(a, n);
		merge(a, id, n);
	}
	uint32_t p = a->c[id].prev;
	if (p != NONE && a->c[p].state == C_FREE) {
		bin_erase(a, p);
		merge(a, p, id);
		id = p;
	}
	bin_insert(a, id);
	check(a);
}

static uint64_t addr(const struct mem_allocator *a, mem_handle h)
{
	assert(a && h < a->nc && a->c[h].state == C_USED);
	return a->c[h].addr;
}

static void stats(const struct mem_allocator *a, struct mem_stats *out)
{
	assert(a && out);
	*out = a->st;
	out->largest_free = largest_free(a);
}

static void dump(const struct mem_allocator *a, FILE *f)
{
	fprintf(f, "bfc: reserved %llu allocated %llu, next region %llu\n",
		(unsigned long long)a->st.reserved,
		(unsigned long long)a->st.allocated,
		(unsigned long long)a->curr_region);
	for (uint32_t i = 0; i < a->nr; i++) {
		const struct region *g = &a->r[i];
		fprintf(f, " region %u @%llu size %llu%s\n", i,
			(unsigned long long)g->base,
			(unsigned long long)g->size,
			g->live ? "" : " (deallocated)");
		if (!g->live)
			continue;
		for (uint32_t id = g->head; id != NONE; id = a->c[id].next)
			fprintf(f, "  [%llu, %llu) %s id %u\n",
				(unsigned long long)a->c[id].addr,
				(unsigned long long)(a->c[id].addr +
						     a->c[id].size),
				a->c[id].state == C_USED ? "used" : "free",
				id);
	}
}

const struct mem_ops mem_bfc_ops = {
	.name = "bfc",
	.summary = "TensorFlow's best-fit with coalescing: 256 B rounding, "
		   "power-of-two bins, split/merge rules, regions",
	.create = create,
	.destroy = destroy,
	.alloc = alloc,
	.free = bfree,
	.addr = addr,
	.stats = stats,
	.dump = dump,
};
