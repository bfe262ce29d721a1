/*
 * mem_caching.c - `caching`: PyTorch's CUDA caching allocator.
 *
 * Follows c10/cuda/CUDACachingAllocator.cpp (DeviceCachingAllocator), with
 * its default configuration (no max_split_size, no roundup_power2_divisions,
 * no expandable segments, no garbage_collection_threshold):
 *   - constants: kMinBlockSize = 512 ("all sizes are rounded to at least
 *     512 bytes"), kSmallSize = 1048576 ("largest 'small' allocation is
 *     1 MiB"), kSmallBuffer = 2097152 ("'small' allocations are packed in
 *     2 MiB blocks"), kMinLargeAlloc = 10485760 ("allocations between 1 and
 *     10 MiB may use kLargeBuffer"), kLargeBuffer = 20971520 (20 MiB),
 *     kRoundLarge = 2097152 ("round up large allocations to 2 MiB");
 *   - round_size: < 512 -> 512, else a multiple of 512;
 *   - get_pool: size <= kSmallSize -> small pool, else large pool;
 *   - get_allocation_size (the segment to cudaMalloc): <= kSmallSize ->
 *     kSmallBuffer; < kMinLargeAlloc -> kLargeBuffer; else rounded up to a
 *     multiple of kRoundLarge;
 *   - get_free_block: pool.blocks.lower_bound(search key) with blocks
 *     ordered by (stream, size, ptr) (BlockComparatorSize): the smallest
 *     cached block that fits, ties to the lowest address;
 *   - should_split: remaining = block->size - size; small pool: remaining
 *     >= kMinBlockSize; large pool: remaining > kSmallSize;
 *     alloc_found_block gives the caller the low part of the block;
 *   - free_block merges with free prev and next blocks of the same segment
 *     (try_merge_blocks) and caches the result in its pool;
 *   - malloc: get_free_block || alloc_block (cudaMalloc the segment) ||
 *     (release_available_cached_blocks && alloc_block) ||
 *     (release_cached_blocks && alloc_block), then OOM.
 *     release_available_cached_blocks returns false when max_split_size is
 *     unset (the default), so the one retry is: release_cached_blocks frees
 *     every cached block that is a whole segment (not split) in both pools
 *     (release_block: cudaFree, counted as device frees), then alloc_block
 *     once more. alloc_block fails here when reserved + segment > budget
 *     (as with set_fraction's allowed_memory_maximum).
 *     release_cached_blocks first calls synchronize_and_free_events() and
 *     release_block calls `C10_CUDA_CHECK(cudaFree((void*)block->ptr))`:
 *     each segment given back is a cudaFree (n_device_free), each segment
 *     made a cudaMalloc (n_device_malloc); the executor charges them and
 *     the device synchronisation of cudaFree (ex.c, "driver calls").
 * Streams are ignored (one stream). Segments get fresh virtual addresses
 * in creation order; a released segment's addresses are not reused.
 * largest_free is the largest cached free block of either pool.
 */
#include "mem.h"

#include <assert.h>
#include <stdlib.h>

#define NONE MEM_HANDLE_NONE
#define K_MIN_BLOCK_SIZE ((uint64_t)512)
#define K_SMALL_SIZE ((uint64_t)1048576)
#define K_SMALL_BUFFER ((uint64_t)2097152)
#define K_MIN_LARGE_ALLOC ((uint64_t)10485760)
#define K_LARGE_BUFFER ((uint64_t)20971520)
#define K_ROUND_LARGE ((uint64_t)2097152)

/* Blocks are struct mem_blk (mem.h) with kind = 1 for the small pool, 0
 * for the large one (group unused). */

struct segment {
	uint64_t base; /* first address */
	uint64_t size; /* bytes (kSmallBuffer, kLargeBuffer or rounded) */
	uint32_t head; /* id of the block at base (stable) */
};

struct mem_allocator {
	struct mem_slab s;	 /* blocks by id (sizes multiples of 512) */
	struct segment *seg;	 /* live segments (order not kept) */
	uint32_t nseg;		 /* live segments */
	uint32_t cap_seg;	 /* slots allocated in seg */
	uint64_t next_addr;	 /* where the next segment starts */
	struct mem_forest f;	 /* tree nodes, shared by both pools */
	uint32_t pool[2];	 /* roots: [0] large, [1] small pool */
	uint32_t n_whole;	 /* cached blocks that are a whole segment
				    (what release_cached_blocks frees) */
	struct mem_stats st;	 /* counters; largest_free filled on read */
};

static uint64_t round_size(uint64_t size)
{
	if (size < K_MIN_BLOCK_SIZE)
		return K_MIN_BLOCK_SIZE;
	return K_MIN_BLOCK_SIZE *
	       ((size + K_MIN_BLOCK_SIZE - 1) / K_MIN_BLOCK_SIZE);
}

static uint64_t allocation_size(uint64_t size)
{
	if (size <= K_SMALL_SIZE)
		return K_SMALL_BUFFER;
	if (size < K_MIN_LARGE_ALLOC)
		return K_LARGE_BUFFER;
	return K_ROUND_LARGE * ((size + K_ROUND_LARGE - 1) / K_ROUND_LARGE);
}

static void pool_insert(struct mem_allocator *a, uint32_t id)
{
	struct mem_blk *k = &a->s.b[id];
	assert(k->state == MEM_B_FREE);
	mem_tree_insert(&a->f, &a->pool[k->kind], MEM_BY_SIZE, id, k->size,
			k->addr);
}

static void pool_erase(struct mem_allocator *a, uint32_t id)
{
	assert(a->s.b[id].state == MEM_B_FREE);
	mem_tree_erase(&a->f, &a->pool[a->s.b[id].kind], MEM_BY_SIZE, id);
}

static uint64_t largest_free(const struct mem_allocator *a)
{
	uint64_t l = mem_tree_max(&a->f, a->pool[0]);
	uint64_t s = mem_tree_max(&a->f, a->pool[1]);
	return l > s ? l : s;
}

static void check(const struct mem_allocator *a)
{
	mem_stats_check(&a->st, largest_free(a));
}

/* A budget test that needs `need` bytes of budget passed (or failed):
 * the budgets at which it goes the same way (mem_stats.same_lo/hi). */
static void tested(struct mem_allocator *a, uint64_t need, bool passed)
{
	if (passed && need > a->st.same_lo)
		a->st.same_lo = need;
	if (!passed && need - 1 < a->st.same_hi)
		a->st.same_hi = need - 1;
}

/* alloc_block: cudaMalloc a segment if the budget allows; returns its one
 * block (free, not in a pool) or NONE. */
static uint32_t alloc_block(struct mem_allocator *a, uint64_t seg_size,
			    bool small)
{
	/* reserved + seg_size <= budget, without overflow */
	bool ok = seg_size <= a->st.budget - a->st.reserved;
	tested(a, seg_size > UINT64_MAX - a->st.reserved
			  ? UINT64_MAX
			  : a->st.reserved + seg_size,
	       ok);
	if (!ok)
		return NONE;
	if (a->nseg == a->cap_seg) {
		a->cap_seg = a->cap_seg ? a->cap_seg * 2 : 16;
		a->seg = mem_xrealloc(a->seg,
				      (size_t)a->cap_seg * sizeof *a->seg,
				      "caching");
	}
	uint32_t id = mem_slab_new(&a->s);
	struct mem_blk *k = &a->s.b[id];
	k->addr = a->next_addr;
	k->size = seg_size;
	k->kind = small;
	k->state = MEM_B_FREE;
	a->seg[a->nseg++] = (struct segment){a->next_addr, seg_size, id};
	a->next_addr += seg_size;
	mem_stats_on_reserve(&a->st, seg_size);
	return id;
}

/* Is block k a whole segment (no neighbours)? */
static bool whole(const struct mem_blk *k)
{
	return k->prev == NONE && k->next == NONE;
}

/* release_cached_blocks: cudaFree every cached block that is a whole
 * segment (not split), in both pools. The walk over the segments stops
 * after the last such block (n_whole counts them), so a failure with
 * none cached costs nothing (issue 18: it scanned every segment); the
 * order of the walk, and so the segments' order after it, is unchanged. */
static void release_cached_blocks(struct mem_allocator *a)
{
	uint32_t i = 0;
	while (a->n_whole > 0 && i < a->nseg) {
		uint32_t h = a->seg[i].head;
		const struct mem_blk *k = &a->s.b[h];
		if (k->state == MEM_B_FREE && whole(k)) {
			assert(k->size == a->seg[i].size);
			a->n_whole--;
			pool_erase(a, h);
			a->st.reserved -= a->seg[i].size;
			a->st.n_device_free++;
			mem_slab_kill(&a->s, h);
			a->seg[i] = a->seg[--a->nseg];
		} else {
			i++;
		}
	}
}

static struct mem_allocator *create(const struct mem_cfg *cfg, gms_err *err)
{
	if (!cfg || cfg->budget == 0)
		return gms_errf(err, "budget must be > 0"), NULL;
	struct mem_allocator *a = calloc(1, sizeof *a);
	if (!a)
		return gms_errf(err, "out of memory"), NULL;
	mem_slab_init(&a->s, "caching", &a->f, NULL);
	a->pool[0] = a->pool[1] = NONE;
	a->st.budget = cfg->budget;
	a->st.same_hi = UINT64_MAX;
	check(a);
	return a;
}

static void destroy(struct mem_allocator *a)
{
	if (!a)
		return;
	mem_forest_destroy(&a->f);
	free(a->seg);
	mem_slab_destroy(&a->s);
	free(a);
}

static int alloc(struct mem_allocator *a, uint64_t bytes, unsigned flags,
		 mem_handle *h)
{
	(void)flags;
	assert(a && h && bytes > 0);
	tested(a, bytes, bytes <= a->st.budget);
	if (bytes > a->st.budget) {
		a->st.n_fail++;
		return -1;
	}
	uint64_t size = round_size(bytes);
	bool small = size <= K_SMALL_SIZE;
	uint32_t id = mem_tree_best_fit(&a->f, a->pool[small], size);
	if (id != NONE) {
		pool_erase(a, id);
		a->n_whole -= whole(&a->s.b[id]);
	} else {
		uint64_t seg_size = allocation_size(size);
		id = alloc_block(a, seg_size, small);
		if (id == NONE) {
			release_cached_blocks(a);
			id = alloc_block(a, seg_size, small);
		}
		if (id == NONE) {
			a->st.n_fail++;
			check(a);
			return -1;
		}
	}
	uint64_t remaining = a->s.b[id].size - size;
	if (small ? remaining >= K_MIN_BLOCK_SIZE : remaining > K_SMALL_SIZE)
		pool_insert(a, mem_slab_split(&a->s, id, size));
	mem_slab_use(&a->s, &a->st, id, bytes);
	*h = id;
	check(a);
	return 0;
}

static void cache_free(struct mem_allocator *a, mem_handle h)
{
	assert(a);
	uint32_t id = mem_slab_release(&a->s, &a->st, h, false, pool_erase, a);
	pool_insert(a, id);
	a->n_whole += whole(&a->s.b[id]);
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
	fprintf(f, "caching: reserved %llu allocated %llu in %u segment(s)\n",
		(unsigned long long)a->st.reserved,
		(unsigned long long)a->st.allocated, a->nseg);
	for (uint32_t i = 0; i < a->nseg; i++) {
		const struct segment *g = &a->seg[i];
		fprintf(f, " segment @%llu size %llu (%s pool)\n",
			(unsigned long long)g->base,
			(unsigned long long)g->size,
			a->s.b[g->head].kind ? "small" : "large");
		mem_slab_dump_chain(&a->s, g->head, f);
	}
}

/* The segments and blocks, for a memory snapshot (mem_ops.walk). */
static void walk(const struct mem_allocator *a, const struct mem_walk *w)
{
	mem_slab_walk(&a->s, true, w);
}

static uint64_t block_size(const struct mem_allocator *a, mem_handle h)
{
	return mem_slab_size(&a->s, h);
}

const struct mem_ops mem_caching_ops = {
	.name = "caching",
	.min_budget = K_MIN_BLOCK_SIZE,
	.summary = "PyTorch's CUDA caching allocator: 512 B rounding, small "
		   "(2 MiB) and large (20 MiB / 2 MiB-rounded) segments, "
		   "free cached and retry",
	.create = create,
	.destroy = destroy,
	.alloc = alloc,
	.free = cache_free,
	.addr = addr,
	.stats = stats,
	.dump = dump,
	.walk = walk,
	.block_size = block_size,
};
