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
};

/* External fragmentation: share of the free reserved bytes that the
 * largest free block does not cover, 1 - largest_free / (reserved -
 * allocated); 0 when nothing is free. */
double mem_frag(const struct mem_stats *s);

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

/* A model: a table of functions, like sqlite3_pcache_methods2. */
struct mem_ops {
	const char *name;    /* as written in YAML: "pool-bestfit" */
	const char *summary; /* one line for `gpumemsim list allocators` */
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
};

/* Registry. */
const struct mem_ops *mem_find(const char *name);
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

/* Host pinned memory: bytes in use and their peak, within a capacity. */
struct mem_host {
	uint64_t capacity; /* pinned bytes available; 0 = unlimited */
	uint64_t in_use;   /* pinned bytes held now */
	uint64_t peak;	   /* max of in_use */
	uint64_t n_alloc;  /* pinned allocations (cudaMallocHost) */
};
/* Returns 0, or -1 when capacity would be exceeded (nothing changes). */
int mem_host_alloc(struct mem_host *h, uint64_t bytes);
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

#endif
