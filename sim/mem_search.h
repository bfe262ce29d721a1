/*
 * mem_search.h - the smallest pool that serves a sequence of requests
 * (vDNN++ section IV-B), and a replay of an allocation sequence through
 * any allocator model of mem.h.
 *
 * vDNN++ IV-B: "Given a sequence of requests and initial pool size, we
 * simulate the heuristic for that sequence. If at some allocation request,
 * the pool is not able to serve it, we start the simulation again with an
 * extra initial pool size equal to ((request size at failure) - (size of
 * largest free block))." mem_min_pool is that loop over a callback that
 * runs one attempt at a given pool size: the executor for experiments
 * (exp_run.c), mem_replay for a plain list of requests (tests, papers'
 * examples). The paper warns that the answer is an approximation: best fit
 * can serve a sequence with a 9-unit pool but not with 11 units, so the
 * search may report a pool larger than the smallest one, or "does not fit"
 * where a smaller pool would have served.
 */
#ifndef GMS_MEM_SEARCH_H
#define GMS_MEM_SEARCH_H

#include "mem.h"

/* Pool sizes the experiments try are multiples of this: CNMeM's unit
 * (mem.h), since cnmemInit rounds a pool up to it, so a pool between two
 * multiples is the larger one anyway. The other models round requests to
 * 256 (bfc), 512 (caching) or 1 byte (arena), all divisors of it. */
#define MEM_SEARCH_GRANULE MEM_CNMEM_GRANULARITY

/* One attempt: run the sequence with a pool (and budget) of `pool` bytes.
 * Returns 1 when every request was served; 0 when one failed, with the
 * bytes it asked for in *fail_bytes and the allocator's largest free block
 * at that moment in *largest_free; -1 on an error (err filled). */
typedef int (*mem_attempt_fn)(void *ctx, uint64_t pool, uint64_t *fail_bytes,
			      uint64_t *largest_free, gms_err *err);

/* What mem_min_pool found. */
struct mem_search {
	uint64_t pool;	      /* the pool that served (over_limit: the next
				 size the search would have tried, > limit) */
	unsigned attempts;    /* attempts made (runs of the sequence) */
	unsigned restarts;    /* attempts that failed and were restarted
				 with a larger pool */
	bool over_limit;      /* the next pool exceeded `limit`: the answer
				 is "does not fit" */
	uint64_t fail_bytes;  /* last failed attempt: the request (0: none) */
	uint64_t largest_free; /* last failed attempt: largest free block */
};

/* vDNN++ IV-B's search: try `start` (rounded up to a multiple of granule,
 * >= 1), and after each failure the pool plus (fail_bytes - largest_free),
 * rounded up likewise, until an attempt serves everything or the next pool
 * exceeds limit. Returns 0 with *out filled (over_limit or not), or -1 with
 * err when an attempt failed with an error or without a shortfall (see
 * mem_search.c). */
int mem_min_pool(uint64_t start, uint64_t limit, uint64_t granule,
		 mem_attempt_fn attempt, void *ctx, struct mem_search *out,
		 gms_err *err);

/* One request of a replayed sequence. */
struct mem_req {
	uint32_t id;	/* the allocation it names: A_id or D_id */
	uint64_t bytes; /* > 0: allocate this many bytes as `id`; 0: free
			   the block allocated as `id` */
	unsigned flags; /* allocation flags (MEM_HIGH) */
};

/* A sequence to replay through one model (the ctx of mem_replay_attempt). */
struct mem_replay {
	const char *model;	   /* allocator model, mem_find name */
	const struct mem_req *req; /* the requests, in order */
	size_t n;		   /* how many */
};

/* Replay r through r->model with budget = pool_size = pool: a
 * mem_attempt_fn. An id freed that is not live, or allocated twice while
 * live, is an error. */
int mem_replay_attempt(void *r, uint64_t pool, uint64_t *fail_bytes,
		       uint64_t *largest_free, gms_err *err);

#endif
