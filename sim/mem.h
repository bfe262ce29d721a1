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
 *   at most once; largest_free <= reserved - allocated.
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

#endif
