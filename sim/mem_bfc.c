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
 * Regions: cfg.pool_size == 0 is TF's default (allow_growth off; the
 * GPUOptions documentation of allow_growth: "If true, the allocator does
 * not pre-allocate the entire specified GPU memory region, instead
 * starting small and growing as needed";
 * curr_region_allocation_bytes = RoundedBytes(total_memory)): one region of
 * the whole budget (rounded down to 256 B, as Extend does), taken up front
 * here at create rather than lazily at the first request. Otherwise
 * allow_growth: curr_region_allocation_bytes starts at
 * RoundedBytes(pool_size) (TF uses 2 MiB) and grows as above.
 * Each region made by Extend is one cudaMalloc (n_device_malloc), each
 * region freed by garbage collection one cudaFree (n_device_free); the
 * executor charges them (ex.c, "driver calls"), except the region made at
 * create, which TF makes before training.
 * Not modelled: timestamped chunks (freed_at_count), the allocation retry
 * with a wait, backpedalling when cudaMalloc itself fails (here the budget
 * is checked before "calling" it, so it cannot fail).
 */
#include "mem.h"

#include <assert.h>
#include <stdlib.h>

#define NONE MEM_HANDLE_NONE
#define K_MIN_ALLOCATION_BITS 8
#define K_MIN_ALLOCATION_SIZE ((uint64_t)1 << K_MIN_ALLOCATION_BITS)
#define K_NUM_BINS 21
_Static_assert(K_NUM_BINS <= 32, "struct mem_allocator.used has a bit a bin");
#define K_MAX_INTERNAL_FRAGMENTATION ((uint64_t)128 << 20)

/* Chunks are struct mem_blk (mem.h) with group = the region's index and
 * kind = the bin while free. */

struct region {
	uint64_t base; /* first address */
	uint64_t size; /* bytes */
	uint32_t head; /* id of the chunk at base (stable) */
	uint8_t live;  /* 0 once deallocated by garbage collection */
};

struct mem_allocator {
	struct mem_slab s;	  /* chunks by id (sizes multiples of 256) */
	struct region *r;	  /* regions in creation order */
	uint32_t nr;		  /* regions made (live or not) */
	uint32_t cap_r;		  /* slots allocated in r */
	uint64_t next_addr;	  /* where the next region starts */
	uint64_t curr_region;	  /* curr_region_allocation_bytes_ */
	struct mem_forest f;	  /* tree nodes, shared by the bins */
	uint32_t bin[K_NUM_BINS]; /* roots: free chunks by (size, addr) */
	uint32_t used;		  /* bit b set when bin b holds a chunk: the
				     searches below skip empty bins (a
				     best-fit call per empty bin was 2% of
				     max-batch.yaml's instructions, issue
				     18) */
	struct mem_stats st;	  /* counters; largest_free filled on read */
};

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

static void bin_insert(struct mem_allocator *a, uint32_t id)
{
	struct mem_blk *k = &a->s.b[id];
	assert(k->state == MEM_B_FREE);
	k->kind = (uint8_t)bin_for_size(k->size);
	mem_tree_insert(&a->f, &a->bin[k->kind], MEM_BY_SIZE, id, k->size,
			k->addr);
	a->used |= (uint32_t)1 << k->kind;
}

static void bin_erase(struct mem_allocator *a, uint32_t id)
{
	assert(a->s.b[id].state == MEM_B_FREE);
	unsigned b = a->s.b[id].kind;
	mem_tree_erase(&a->f, &a->bin[b], MEM_BY_SIZE, id);
	if (a->bin[b] == NONE)
		a->used &= ~((uint32_t)1 << b);
}

static uint64_t largest_free(const struct mem_allocator *a)
{
	if (!a->used)
		return 0;
	return mem_tree_max(&a->f, a->bin[31 - __builtin_clz(a->used)]);
}

static void check(const struct mem_allocator *a)
{
	mem_stats_check(&a->st, largest_free(a));
}

/* A new region of `bytes`, its one chunk free in its bin. */
static void add_region(struct mem_allocator *a, uint64_t bytes)
{
	if (a->nr == a->cap_r) {
		a->cap_r = a->cap_r ? a->cap_r * 2 : 8;
		a->r = mem_xrealloc(a->r, (size_t)a->cap_r * sizeof *a->r,
				    "bfc");
	}
	uint32_t id = mem_slab_new(&a->s);
	struct mem_blk *k = &a->s.b[id];
	k->addr = a->next_addr;
	k->size = bytes;
	k->group = a->nr;
	k->state = MEM_B_FREE;
	a->r[a->nr++] = (struct region){a->next_addr, bytes, id, 1};
	a->next_addr += bytes;
	mem_stats_on_reserve(&a->st, bytes);
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
		if (g->live && a->s.b[g->head].state == MEM_B_FREE &&
		    a->s.b[g->head].size == g->size)
			total_free += g->size;
	}
	if (total_free == 0)
		return false;
	if (rounded > a->st.budget - a->st.reserved + total_free)
		return false;
	for (uint32_t i = 0; i < a->nr; i++) {
		struct region *g = &a->r[i];
		if (g->live && a->s.b[g->head].state == MEM_B_FREE &&
		    a->s.b[g->head].size == g->size) {
			bin_erase(a, g->head);
			mem_slab_kill(&a->s, g->head);
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
	uint32_t from = ~(((uint32_t)1 << bin_for_size(rounded)) - 1);
	for (uint32_t m = a->used & from; m; m &= m - 1) {
		unsigned b = (unsigned)__builtin_ctz(m);
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
	mem_slab_init(&a->s, "bfc", &a->f, NULL);
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
	mem_slab_destroy(&a->s);
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
	if (a->s.b[id].size >= rounded * 2 ||
	    a->s.b[id].size - rounded >= K_MAX_INTERNAL_FRAGMENTATION)
		/* SplitChunk(h, rounded_bytes) */
		bin_insert(a, mem_slab_split(&a->s, id, rounded));
	mem_slab_use(&a->s, &a->st, id, bytes);
	*h = id;
	check(a);
	return 0;
}

static void bfree(struct mem_allocator *a, mem_handle h)
{
	assert(a);
	/* TryToCoalesce: next first, then prev */
	uint32_t id = mem_slab_release(&a->s, &a->st, h, true, bin_erase, a);
	bin_insert(a, id);
	check(a);
}

static uint64_t addr(const struct mem_allocator *a, mem_handle h)
{
	assert(a);
	return mem_slab_addr(&a->s, h);
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
		mem_slab_dump_chain(&a->s, g->head, f);
	}
}

/* The segments and blocks, for a memory snapshot (mem_ops.walk). */
static void walk(const struct mem_allocator *a, const struct mem_walk *w)
{
	mem_slab_walk(&a->s, false, w);
}

static uint64_t block_size(const struct mem_allocator *a, mem_handle h)
{
	return mem_slab_size(&a->s, h);
}

const struct mem_ops mem_bfc_ops = {
	.name = "bfc",
	.min_budget = K_MIN_ALLOCATION_SIZE,
	.summary = "TensorFlow's best-fit with coalescing: 256 B rounding, "
		   "power-of-two bins, split/merge rules, regions",
	.create = create,
	.destroy = destroy,
	.alloc = alloc,
	.free = bfree,
	.addr = addr,
	.stats = stats,
	.dump = dump,
	.walk = walk,
	.block_size = block_size,
};
