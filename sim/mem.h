/*
 * mem.h - device memory allocator models behind one narrow interface.
 *
 * The executor asks an allocator for device blocks and gives them back;
 * the allocator decides placement and when to take more memory from the
 * device ("cudaMalloc" a pool, segment or region) within the device budget.
 * Models (mem_ops tables, one per file):
 *   pool-bestfit  mem_pool.c    CNMeM as vDNN uses it: one pre-allocated
 *                               pool, best fit, split and coalesce; when
 *                               full, a new pool of exactly the request,
 *                               never merged with the others.
 *   highend       mem_pool.c    pool-bestfit, but requests flagged
 *                               MEM_HIGH go to the highest free address
 *                               (vDNN++ section IV-B).
 *   bfc           mem_bfc.c     TensorFlow's best-fit with coalescing.
 *   caching       mem_caching.c PyTorch's CUDA caching allocator.
 *   arena         mem_arena.c   no placement: a request fits iff the bytes
 *                               in use plus it fit the budget (AccUDNN's
 *                               buffer pool; the fragmentation-free bound).
 *
 * Invariants every model keeps (and asserts):
 *   allocated <= reserved <= budget; peak_* >= current; a handle is freed
 *   at most once; largest_free <= reserved - allocated (except arena, which
 *   reserves nothing ahead: reserved == allocated and largest_free is
 *   budget - allocated, so its mem_frag is 0).
 *
 * Addresses are virtual: pool/segment k starts where the previous one ends
 * (in creation order), so tests can check placement exactly.
 */
#ifndef GMS_MEM_H
#define GMS_MEM_H

#include "common.h"

#include <stdio.h>

/* Request flags. */
#define MEM_HIGH 0x1u /* placement hint: tensor will be offloaded (vDNN++) */

typedef uint32_t mem_handle; /* names one live block inside an allocator */
#define MEM_HANDLE_NONE UINT32_MAX

/* What an allocator reports. Byte counts are of the allocator's rounded
 * sizes (what the device really holds), except `requested` which sums the
 * sizes callers asked for. */
struct mem_stats {
	uint64_t budget;	  /* device bytes this allocator may reserve */
	uint64_t requested;	  /* bytes asked for by live blocks */
	uint64_t allocated;	  /* bytes in live blocks (after rounding) */
	uint64_t reserved;	  /* bytes taken from the device */
	uint64_t peak_requested;  /* max of requested over the run */
	uint64_t peak_allocated;  /* max of allocated over the run */
	uint64_t peak_reserved;	  /* max of reserved over the run */
	uint64_t largest_free;	  /* largest block servable without a new
				     device allocation */
	uint64_t n_alloc;	  /* successful allocations */
	uint64_t n_free;	  /* frees */
	uint64_t n_fail;	  /* allocations that failed (out of memory) */
	uint64_t n_device_malloc; /* device allocations made (cudaMalloc) */
	uint64_t n_device_free;	  /* device frees made (cudaFree) */
	/* The budgets at which each of the run's budget tests would have
	 * gone the same way, so the allocator made the same decisions
	 * (caching only, issue 37: the baseline search's shortcut,
	 * exp_run.c): same_lo, the most any passed test needed; same_hi,
	 * one less than the least any failed test needed (UINT64_MAX: none
	 * failed). same_hi 0: not tracked (every other allocator). Read
	 * within the run only: shard files do not carry them. */
	uint64_t same_lo, same_hi;
};

/* External fragmentation: share of the free reserved bytes that the
 * largest free block does not cover, 1 - largest_free / (reserved -
 * allocated); 0 when nothing is free. "Free" is reserved memory not in
 * live blocks: for a model that reserves its whole budget at creation
 * (bfc without growth, pool-bestfit with the default pool) that is the
 * budget minus the allocated bytes, never-touched space included; for
 * caching, the cached blocks of its segments; arena reserves nothing
 * ahead, so 0. Rounding (internal fragmentation: allocated - requested)
 * is not counted. */
double mem_frag(const struct mem_stats *s);

/* mem_frag over a run, sampled after every allocation (failed ones too)
 * and every free. A sample is O(1) given the stats and divides only when
 * it is a new worst: samples are compared as fractions (largest free
 * block / free bytes, exactly, in integers). */
struct mem_frag_track {
	uint64_t peak;	     /* largest `allocated` sampled so far */
	uint64_t peak_lf;    /* the worst sample at `peak`: largest free */
	uint64_t peak_free;  /* ... and free bytes (1, 1 when none free) */
	uint64_t max_lf;     /* the worst sample of all: largest free */
	uint64_t max_free;   /* ... and free bytes */
	double at_peak;	     /* mem_frag of the worst sample whose
				allocated equals `peak` (every moment at
				the peak, in every iteration) */
	double max;	     /* mem_frag of the worst sample (>= at_peak) */
	uint64_t n;	     /* samples taken */
};
void mem_frag_sample(struct mem_frag_track *t, const struct mem_stats *s);

/* Parameters common to all models; zero means "the model's default". */
struct mem_cfg {
	uint64_t budget;    /* device bytes the allocator may use (capacity
			       minus reserved part), required */
	uint64_t pool_size; /* pool-bestfit/highend: initial pool; 0 = the
			       whole budget. bfc: 0 = whole budget up front
			       (TF default), else first region size with
			       growth ("allow_growth"). Ignored elsewhere. */
};

struct mem_allocator; /* an instance; its model's private state */

/* What mem_ops.walk reports: seg once per segment (small: PyTorch's small
 * pool), then blk for each of its blocks (used: handed out, req the
 * bytes asked for; free: cached). */
struct mem_walk {
	void *ctx;
	void (*seg)(void *ctx, uint64_t addr, uint64_t size, bool small);
	void (*blk)(void *ctx, uint64_t addr, uint64_t size, uint64_t req,
		    bool used);
};

/* A model: a table of functions, like sqlite3_pcache_methods2. */
struct mem_ops {
	const char *name;    /* as written in YAML: "pool-bestfit" */
	const char *summary; /* one line for `gpumemsim list allocators` */
	uint64_t min_budget; /* the least budget that holds any block: the
				model's smallest block (1 where any byte
				serves); an experiment refuses a smaller
				budget at load */
	/* Create an instance; returns NULL with err filled. */
	struct mem_allocator *(*create)(const struct mem_cfg *cfg,
					gms_err *err);
	void (*destroy)(struct mem_allocator *a);
	/* Allocate bytes (> 0). Returns 0 and *h, or -1 when the model cannot
	 * serve it within its budget (n_fail counted, state unchanged except
	 * for what the model does on failure, e.g. caching's free-cached-
	 * and-retry). */
	int (*alloc)(struct mem_allocator *a, uint64_t bytes, unsigned flags,
		     mem_handle *h);
	void (*free)(struct mem_allocator *a, mem_handle h);
	/* Virtual address of a live block (for placement tests/timelines). */
	uint64_t (*addr)(const struct mem_allocator *a, mem_handle h);
	void (*stats)(const struct mem_allocator *a, struct mem_stats *out);
	/* Optional: print free/used map for debugging; may be NULL. */
	void (*dump)(const struct mem_allocator *a, FILE *f);
	/* Optional (NULL: the model places nothing, arena): the device
	 * allocations (segments) in address order, each with its blocks in
	 * address order, for a memory snapshot (snapshot.h, issue 34). */
	void (*walk)(const struct mem_allocator *a, const struct mem_walk *w);
	/* Optional: the bytes of live block h (the model's rounded size). */
	uint64_t (*block_size)(const struct mem_allocator *a, mem_handle h);
};

/* Registry. */
const struct mem_ops *mem_find(const char *name);
/* mem_find, or NULL with "unknown allocator 'x' (known: ...)" in err. */
const struct mem_ops *mem_lookup(const char *name, gms_err *err);
/* The i-th model (NULL past the end), for listings. */
const struct mem_ops *mem_model(size_t i);

/* The models' tables (mem_pool.c, mem_bfc.c, mem_caching.c, mem_arena.c),
 * in mem_model() order. */
extern const struct mem_ops mem_pool_bestfit_ops;
extern const struct mem_ops mem_highend_ops;
extern const struct mem_ops mem_bfc_ops;
extern const struct mem_ops mem_caching_ops;
extern const struct mem_ops mem_arena_ops;

/* Convenience wrappers: an instance remembers its ops. */
struct mem_dev {
	const struct mem_ops *ops; /* the model */
	struct mem_allocator *a;   /* its instance */
};
int mem_dev_open(struct mem_dev *d, const char *model,
		 const struct mem_cfg *cfg, gms_err *err);
void mem_dev_close(struct mem_dev *d);

/* CNMeM's allocation unit: every request and pool size is rounded up to
 * it (`#define CNMEM_GRANULARITY 512` in NVIDIA/cnmem src/cnmem.cpp);
 * pool-bestfit and highend (mem_pool.c) follow it, and the pool search
 * (mem_search.h) steps in it. */
#define MEM_CNMEM_GRANULARITY ((uint64_t)512)

/* Host pinned memory as frameworks keep it: a pool that grows with
 * cudaMallocHost and is reused, never given back during training
 * (PyTorch's CachingHostAllocator, aten/src/ATen/cuda/
 * CachingHostAllocator.h: "re-uses freed pinned (page-locked) memory
 * allocations. This avoids device synchronizations due to cudaFreeHost
 * calls"; TensorFlow serves pinned host memory from a BFCAllocator over
 * cudaHostAlloc'd regions, GPUProcessState::GetGpuHostAllocator). The
 * model is the pool's fragmentation-free bound: a request is served from
 * the pool when in_use + bytes <= reserved, else the pool grows by the
 * shortfall with one cudaMallocHost (n_grow). PyTorch's power-of-two
 * block sizes and TF's bins are not modelled. */
struct mem_host {
	uint64_t capacity; /* pinned bytes available; 0 = unlimited */
	uint64_t in_use;   /* pinned bytes held now */
	uint64_t peak;	   /* max of in_use */
	uint64_t reserved; /* pinned bytes taken with cudaMallocHost (the
			      pool; equals peak: it grows to the high-water
			      mark and is kept) */
	uint64_t n_alloc;  /* pinned buffers handed out from the pool */
	uint64_t n_grow;   /* cudaMallocHost calls (pool growths) */
	uint64_t grown;	   /* bytes those calls allocated, in all (the
			      sum of the shortfalls; sizes their cost,
			      hw_host_alloc_time) */
};
/* Returns 0, or -1 when capacity would be exceeded (nothing changes). */
int mem_host_alloc(struct mem_host *h, uint64_t bytes);
/* mem_host_alloc without the capacity check: for pinned buffers the
 * caller has already committed to (vDNN++'s staging and compressed
 * chunks of a copy already on the host). */
void mem_host_take(struct mem_host *h, uint64_t bytes);
/* Give bytes back to the pool (no cudaFreeHost). */
void mem_host_free(struct mem_host *h, uint64_t bytes);

/*
 * Model internals (mem.c), shared by the model files; callers of the
 * allocators do not need them. An ordered set of free blocks: a treap whose
 * nodes are indexed by the model's own block ids, so one "forest" of nodes
 * holds several trees (bins, pools) and a block sits in at most one tree of
 * a forest at a time. Every node keeps the largest size in its subtree, so
 * both best-fit and highest-address-that-fits queries are O(log n).
 */
enum mem_tree_order {
	MEM_BY_SIZE, /* ordered by (size, addr): best fit */
	MEM_BY_ADDR  /* ordered by addr: highest address that fits */
};

struct mem_tnode {
	uint64_t size;	   /* key: block bytes */
	uint64_t addr;	   /* key: block start address (unique in a tree) */
	uint64_t max;	   /* largest size in this node's subtree */
	uint32_t left;	   /* left child id, or MEM_HANDLE_NONE */
	uint32_t right;	   /* right child id, or MEM_HANDLE_NONE */
	uint32_t prio;	   /* heap priority, a hash of addr (deterministic) */
	uint8_t linked;	   /* 1 while the node is in some tree */
};

struct mem_forest {
	struct mem_tnode *node; /* nodes indexed by block id */
	uint32_t cap;		/* nodes allocated */
};

/* Make ids [0, cap) usable (new nodes unlinked). Aborts on host OOM. */
void mem_forest_reserve(struct mem_forest *f, uint32_t cap);
void mem_forest_destroy(struct mem_forest *f);
/* Insert block id with its key into the tree at *root (MEM_HANDLE_NONE =
 * empty tree); remove it (using the key stored at insertion). */
void mem_tree_insert(struct mem_forest *f, uint32_t *root,
		     enum mem_tree_order o, uint32_t id, uint64_t size,
		     uint64_t addr);
void mem_tree_erase(struct mem_forest *f, uint32_t *root,
		    enum mem_tree_order o, uint32_t id);
/* MEM_BY_SIZE tree: the block with the smallest (size, addr) whose size is
 * >= size, or MEM_HANDLE_NONE. */
uint32_t mem_tree_best_fit(const struct mem_forest *f, uint32_t root,
			   uint64_t size);
/* MEM_BY_ADDR tree: the block with the highest address whose size is >=
 * size, or MEM_HANDLE_NONE. */
uint32_t mem_tree_highest_fit(const struct mem_forest *f, uint32_t root,
			      uint64_t size);
/* Largest size in a tree (0 when empty). */
uint64_t mem_tree_max(const struct mem_forest *f, uint32_t root);

/*
 * Blocks of the placing models (pool, bfc, caching; arena uses the slab
 * alone): one array of blocks indexed by id (the mem_handle), dead slots
 * reused last-in first-out, each live block linked to its address
 * neighbours inside the device allocation (pool, region, segment) holding
 * it. Free trees are the model's own; the helpers below take a callback to
 * take a block out of them.
 */
enum mem_blk_state {
	MEM_B_DEAD, /* slot on the dead list (0: a new slot is dead) */
	MEM_B_FREE, /* free, normally in one of the model's free trees */
	MEM_B_USED  /* handed out to a caller */
};

struct mem_blk {
	uint64_t addr;	/* virtual start address */
	uint64_t size;	/* bytes (the model's rounded size) */
	uint64_t req;	/* bytes the caller asked for (used blocks) */
	uint32_t prev;	/* lower neighbour in the same device allocation,
			   or MEM_HANDLE_NONE */
	uint32_t next;	/* upper neighbour in the same device allocation,
			   or MEM_HANDLE_NONE; next dead slot while dead */
	uint32_t group; /* model-defined: pool or region index */
	uint8_t state;	/* enum mem_blk_state */
	uint8_t kind;	/* model-defined: bfc's bin while free, caching's
			   small-pool flag; copied to a split's remainder */
};

struct mem_slab {
	struct mem_blk *b;	    /* blocks by id */
	uint32_t n;		    /* ids handed out so far */
	uint32_t cap;		    /* slots allocated in b */
	uint32_t dead;		    /* first dead slot, or MEM_HANDLE_NONE */
	struct mem_forest *forest[2]; /* forests kept at >= cap nodes
					 (NULL: unused) */
	const char *who;	    /* model name for the host OOM message */
};

/* realloc that aborts with "out of host memory (who)" on failure. */
void *mem_xrealloc(void *p, size_t n, const char *who);
/* An empty slab whose growth also grows forests f0 and f1 (may be NULL). */
void mem_slab_init(struct mem_slab *s, const char *who, struct mem_forest *f0,
		   struct mem_forest *f1);
void mem_slab_destroy(struct mem_slab *s);
/* A zeroed block (state MEM_B_DEAD, no neighbours); may move s->b. */
uint32_t mem_slab_new(struct mem_slab *s);
/* Put block id on the dead list. */
void mem_slab_kill(struct mem_slab *s, uint32_t id);
/* Split block id: it keeps its first lo_size bytes; the rest becomes a new
 * free block (same group and kind, in no tree) linked above it, whose id
 * is returned. May move s->b. */
uint32_t mem_slab_split(struct mem_slab *s, uint32_t id, uint64_t lo_size);
/* Hand out free block id (out of every tree) for a request of req bytes:
 * mark it used and count it in st. */
void mem_slab_use(struct mem_slab *s, struct mem_stats *st, uint32_t id,
		  uint64_t req);
/* Give back used block h: uncount it in st, mark it free, then merge it
 * with its free neighbours (the next one first iff next_first; each is
 * taken out of its tree by erase(a, id) before the merge, which keeps the
 * lower block's id and kills the upper). Returns the id of the merged
 * block, which is in no tree. */
uint32_t mem_slab_release(struct mem_slab *s, struct mem_stats *st,
			  uint32_t h, bool next_first,
			  void (*erase)(struct mem_allocator *a, uint32_t id),
			  struct mem_allocator *a);
/* Address of used block h. */
uint64_t mem_slab_addr(const struct mem_slab *s, uint32_t h);
/* mem_ops.walk over a slab: every live block without a lower neighbour
 * starts a device allocation; they are reported by address, each with its
 * blocks up the next links. small_kind: a block's kind != 0 marks the
 * small pool (caching). O(n log n) in the blocks. */
void mem_slab_walk(const struct mem_slab *s, bool small_kind,
		   const struct mem_walk *w);
/* mem_ops.block_size over a slab. */
uint64_t mem_slab_size(const struct mem_slab *s, uint32_t h);
/* Print the blocks from head up its next links, one "  [lo, hi) used|free
 * id N" line each. */
void mem_slab_dump_chain(const struct mem_slab *s, uint32_t head, FILE *f);

/* Stats bookkeeping. A block of size bytes (rounded) handed out for req
 * bytes: requested, allocated, their peaks, n_alloc. */
void mem_stats_on_alloc(struct mem_stats *s, uint64_t req, uint64_t size);
/* The same block given back: requested, allocated, n_free. */
void mem_stats_on_free(struct mem_stats *s, uint64_t req, uint64_t size);
/* A device allocation of bytes: reserved, peak_reserved, n_device_malloc. */
void mem_stats_on_reserve(struct mem_stats *s, uint64_t bytes);
/* Assert the invariants of a model that reserves ahead, given its largest
 * free block. */
void mem_stats_check(const struct mem_stats *s, uint64_t largest_free);

#endif
