/*
 * mem_pool.c - `pool-bestfit` (CNMeM as vDNN uses it) and `highend`
 * (vDNN++'s "non-offloaded high end allocation").
 *
 * pool-bestfit follows NVIDIA/cnmem src/cnmem.cpp:
 *   - every size is rounded up to CNMEM_GRANULARITY = 512 bytes
 *     (`#define CNMEM_GRANULARITY 512`; cnmemMalloc does
 *     `size = cnmem::ceilInt(size, CNMEM_GRANULARITY)`, and cnmemInit rounds
 *     the pool size the same way);
 *   - cnmemInit reserves one pool ("Manager::reserve" -> one cudaMalloc);
 *   - Manager::findBestBlockUnsafe walks the address-sorted free list and
 *     keeps a block only if `temp->getSize() < best->getSize()`, i.e. the
 *     smallest free block that fits, ties to the lowest address;
 *   - Manager::extractBlockUnsafe keeps the used part at the block's start
 *     (low address) and puts the remainder back as a free block;
 *   - when nothing fits, Manager::allocateBlockUnsafe cudaMallocs a new pool
 *     of exactly the (rounded) request and marks it a "head" block;
 *     releaseBlockUnsafe merges a freed block with its free neighbours but
 *     "can't merge over cudaMalloc boundaries", so pools are never merged.
 *   Here a new pool is "cudaMalloc'd" only if reserved + size <= budget;
 *   each new pool after the first counts one device malloc, which the
 *   executor charges (ex.c, "driver calls"; the first is made at
 *   cnmemInit, before training). Pools are never freed while running.
 *
 * highend (vDNN++ section IV-B): "For all allocations except for layers
 * chosen to be offloaded, we follow the default best-fit algorithm. For
 * allocation of layer's input which is chosen to be offloaded to CPU, we
 * allocate it at the highest available address." Our reading: a request
 * flagged MEM_HIGH takes, among the free blocks (of every pool) that are at
 * least as large as the rounded request, the one with the highest address,
 * and occupies the TOP end of it (its last `size` bytes); the rest of that
 * block stays free below it. So high-flagged tensors fill memory downwards
 * from the top of the highest free range and the others fill upwards from
 * the bottom by best fit ("memory gets assigned at the two ends of the
 * memory range"). When no free block fits, a new pool of exactly the
 * request is made, as for best fit, and the block fills it.
 * pool-bestfit ignores MEM_HIGH.
 *
 * Data structures: blocks of every pool in one array, each linked to its
 * address neighbours inside its pool; free blocks in a (size, addr) treap
 * for best fit and, for highend, also in an address treap with subtree
 * maxima for the highest fit. Every operation is O(log n).
 */
#include "mem.h"

#include <assert.h>
#include <stdlib.h>

#define NONE MEM_HANDLE_NONE
#define CNMEM_GRANULARITY MEM_CNMEM_GRANULARITY /* mem.h */

/* Blocks are struct mem_blk (mem.h) with group = the pool's index. */

struct ppool {
	uint64_t base; /* first address */
	uint64_t size; /* bytes */
	uint32_t head; /* id of the block at base (stable: merges keep the
			  lower block, splits keep the lower id) */
};

struct mem_allocator {
	bool high;		  /* highend: honour MEM_HIGH */
	struct mem_slab s;	  /* blocks by id (sizes multiples of 512) */
	struct ppool *pools;	  /* pools in creation (address) order */
	uint32_t npools;	  /* pools made */
	uint32_t cap_pools;	  /* slots allocated in pools */
	uint64_t next_addr;	  /* where the next pool starts */
	struct mem_forest fsize;  /* nodes of the (size, addr) tree */
	uint32_t by_size;	  /* root: every free block, best fit */
	struct mem_forest faddr;  /* nodes of the address tree (highend) */
	uint32_t by_addr;	  /* root: every free block, highest fit */
	struct mem_stats st;	  /* counters; largest_free filled on read */
};

static void free_insert(struct mem_allocator *a, uint32_t id)
{
	struct mem_blk *k = &a->s.b[id];
	assert(k->state == MEM_B_FREE);
	mem_tree_insert(&a->fsize, &a->by_size, MEM_BY_SIZE, id, k->size,
			k->addr);
	if (a->high)
		mem_tree_insert(&a->faddr, &a->by_addr, MEM_BY_ADDR, id,
				k->size, k->addr);
}

static void free_erase(struct mem_allocator *a, uint32_t id)
{
	mem_tree_erase(&a->fsize, &a->by_size, MEM_BY_SIZE, id);
	if (a->high)
		mem_tree_erase(&a->faddr, &a->by_addr, MEM_BY_ADDR, id);
}

static void check(const struct mem_allocator *a)
{
	mem_stats_check(&a->st, mem_tree_max(&a->fsize, a->by_size));
}

/* Make a pool of `size` bytes; returns its single (free, untracked) block. */
static uint32_t new_pool(struct mem_allocator *a, uint64_t size)
{
	if (a->npools == a->cap_pools) {
		a->cap_pools = a->cap_pools ? a->cap_pools * 2 : 8;
		a->pools = mem_xrealloc(a->pools,
					(size_t)a->cap_pools * sizeof *a->pools,
					"pool");
	}
	uint32_t id = mem_slab_new(&a->s);
	struct mem_blk *k = &a->s.b[id];
	k->addr = a->next_addr;
	k->size = size;
	k->group = a->npools;
	k->state = MEM_B_FREE;
	a->pools[a->npools++] = (struct ppool){a->next_addr, size, id};
	a->next_addr += size;
	mem_stats_on_reserve(&a->st, size);
	return id;
}

static struct mem_allocator *create(const struct mem_cfg *cfg, gms_err *err,
				    bool high)
{
	if (!cfg || cfg->budget == 0)
		return gms_errf(err, "budget must be > 0"), NULL;
	uint64_t pool;
	if (cfg->pool_size == 0) {
		/* the whole budget, in whole granules */
		pool = cfg->budget / CNMEM_GRANULARITY * CNMEM_GRANULARITY;
		if (pool == 0)
			return gms_errf(err,
					"budget %llu is below the 512-byte "
					"granularity",
					(unsigned long long)cfg->budget),
			       NULL;
	} else {
		if (cfg->pool_size > cfg->budget)
			return gms_errf(err,
					"pool_size %llu exceeds the budget "
					"%llu",
					(unsigned long long)cfg->pool_size,
					(unsigned long long)cfg->budget),
			       NULL;
		pool = (cfg->pool_size + CNMEM_GRANULARITY - 1) /
		       CNMEM_GRANULARITY * CNMEM_GRANULARITY;
		if (pool > cfg->budget)
			return gms_errf(err,
					"pool_size %llu rounded to 512 bytes "
					"exceeds the budget %llu",
					(unsigned long long)cfg->pool_size,
					(unsigned long long)cfg->budget),
			       NULL;
	}
	struct mem_allocator *a = calloc(1, sizeof *a);
	if (!a)
		return gms_errf(err, "out of memory"), NULL;
	a->high = high;
	mem_slab_init(&a->s, "pool", &a->fsize, high ? &a->faddr : NULL);
	a->by_size = a->by_addr = NONE;
	a->st.budget = cfg->budget;
	uint32_t id = new_pool(a, pool);
	free_insert(a, id);
	check(a);
	return a;
}

static struct mem_allocator *create_bestfit(const struct mem_cfg *cfg,
					    gms_err *err)
{
	return create(cfg, err, false);
}

static struct mem_allocator *create_highend(const struct mem_cfg *cfg,
					    gms_err *err)
{
	return create(cfg, err, true);
}

static void destroy(struct mem_allocator *a)
{
	if (!a)
		return;
	mem_forest_destroy(&a->fsize);
	mem_forest_destroy(&a->faddr);
	free(a->pools);
	mem_slab_destroy(&a->s);
	free(a);
}

static int alloc(struct mem_allocator *a, uint64_t bytes, unsigned flags,
		 mem_handle *h)
{
	assert(a && h && bytes > 0);
	if (bytes > a->st.budget) {
		a->st.n_fail++;
		return -1;
	}
	uint64_t size = (bytes + CNMEM_GRANULARITY - 1) / CNMEM_GRANULARITY *
			CNMEM_GRANULARITY;
	bool top = a->high && (flags & MEM_HIGH);
	uint32_t id = top ? mem_tree_highest_fit(&a->faddr, a->by_addr, size)
			  : mem_tree_best_fit(&a->fsize, a->by_size, size);
	if (id == NONE) {
		if (size > a->st.budget - a->st.reserved) {
			a->st.n_fail++;
			return -1;
		}
		id = new_pool(a, size);
	} else {
		free_erase(a, id);
		uint64_t bsize = a->s.b[id].size;
		if (bsize > size) {
			if (top) {
				/* used part on top; id stays free below */
				uint32_t n = mem_slab_split(&a->s, id,
							    bsize - size);
				free_insert(a, id);
				id = n;
			} else {
				/* used part at the low address */
				free_insert(a, mem_slab_split(&a->s, id, size));
			}
		}
	}
	assert(a->s.b[id].state == MEM_B_FREE && a->s.b[id].size == size);
	mem_slab_use(&a->s, &a->st, id, bytes);
	*h = id;
	check(a);
	return 0;
}

static void pfree(struct mem_allocator *a, mem_handle h)
{
	assert(a);
	uint32_t id = mem_slab_release(&a->s, &a->st, h, false, free_erase, a);
	free_insert(a, id);
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
	out->largest_free = mem_tree_max(&a->fsize, a->by_size);
}

static void dump(const struct mem_allocator *a, FILE *f)
{
	fprintf(f, "%s: reserved %llu allocated %llu in %u pool(s)\n",
		a->high ? "highend" : "pool-bestfit",
		(unsigned long long)a->st.reserved,
		(unsigned long long)a->st.allocated, a->npools);
	for (uint32_t p = 0; p < a->npools; p++) {
		fprintf(f, " pool %u @%llu size %llu\n", p,
			(unsigned long long)a->pools[p].base,
			(unsigned long long)a->pools[p].size);
		mem_slab_dump_chain(&a->s, a->pools[p].head, f);
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

const struct mem_ops mem_pool_bestfit_ops = {
	.name = "pool-bestfit",
	.min_budget = CNMEM_GRANULARITY,
	.summary = "CNMeM as vDNN uses it: one pool, best fit, split and "
		   "coalesce, new unmerged pools when full",
	.create = create_bestfit,
	.destroy = destroy,
	.alloc = alloc,
	.free = pfree,
	.addr = addr,
	.stats = stats,
	.dump = dump,
	.walk = walk,
	.block_size = block_size,
};

const struct mem_ops mem_highend_ops = {
	.name = "highend",
	.min_budget = CNMEM_GRANULARITY,
	.summary = "pool-bestfit, but tensors to be offloaded (MEM_HIGH) go "
		   "to the highest free address (vDNN++ IV-B)",
	.create = create_highend,
	.destroy = destroy,
	.alloc = alloc,
	.free = pfree,
	.addr = addr,
	.stats = stats,
	.dump = dump,
	.walk = walk,
	.block_size = block_size,
};
