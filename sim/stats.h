/*
 * stats.h - what a run measured, per iteration and for the run.
 */
#ifndef GMS_STATS_H
#define GMS_STATS_H

#include "common.h"
#include "mem.h"

#include <stdio.h>

/* Why the compute stream sat idle. */
enum st_stall {
	ST_STALL_H2D,	 /* waiting for a swap-in (H2D copy) */
	ST_STALL_D2H,	 /* waiting for a swap-out (D2H copy) */
	ST_STALL_MEMORY, /* waiting for device memory to be released */
	ST_STALL_ALLOC,	 /* the host in driver allocation calls (cudaMalloc,
			    cudaMallocHost, cudaFree and its device sync) */
	ST_STALL_COUNT
};
extern const char *const st_stall_names[]; /* "h2d", "d2h", "memory",
					      "alloc" */

/* One iteration. */
struct st_iter {
	sim_time_t start;		/* when it began */
	sim_time_t time;		/* its length (until all queues drained) */
	sim_time_t compute_busy;	/* kernel time, recompute included */
	sim_time_t recompute;		/* kernel time spent recomputing */
	sim_time_t stall[ST_STALL_COUNT]; /* compute idle, by cause */
	uint64_t bytes_h2d;		/* bytes copied host to device */
	uint64_t bytes_d2h;		/* bytes copied device to host */
	uint64_t n_swap_out;		/* swap-outs issued: one per D2H
					   copy (with or without release) */
	uint64_t n_release;		/* releases without a copy: a
					   swap-out with release of a tensor
					   whose host copy is already valid
					   or being made (the copy was
					   counted when issued) */
	uint64_t n_swap_in;		/* swap-ins issued */
	uint64_t n_swap_out_cancelled;	/* swap-outs with release whose
					   release a swap-in took back
					   while the copy ran (the tensor
					   never left the device) */
	uint64_t n_algo_fallback;	/* convolutions run with a cheaper
					   algorithm than planned because
					   the workspace did not fit (the
					   policy's EX_FALLBACK) */
	uint64_t n_drop;		/* tensors dropped for recomputation */
	uint64_t n_recompute;		/* kernels re-run */
	double recompute_flops;		/* FLOPs of those kernels */
	uint64_t n_kernels;		/* kernels run, recompute included */
	sim_time_t host_busy;		/* host CPU time (de)compressing
					   offloaded data (ENG_HOST) */
	sim_time_t host_issue;		/* host time launching kernels
					   (host.launch each) and calling
					   the allocator (host.alloc_call
					   each; ex.c, "the host thread") */
	sim_time_t host_bound;		/* time the compute stream sat
					   idle waiting for the host to
					   launch its next kernel */
	sim_time_t alloc_time;		/* host time charged to driver
					   allocation calls (their costs,
					   not cudaFree's sync wait) */
	uint64_t n_cuda_malloc;		/* cudaMalloc calls (device) */
	uint64_t n_cuda_free;		/* cudaFree calls (device) */
	uint64_t n_host_alloc;		/* cudaMallocHost calls (pinned
					   pool growths) */
	uint64_t n_late_in;		/* accesses that found their tensor
					   still SWAPPING_IN (a prefetch too
					   late: the kernel waited for it) */
	uint64_t n_replan;		/* times the policy remade its plan
					   after this iteration
					   (ex_note_replan) */
};

/* Where and why a run ran out of memory. */
struct st_oom {
	bool hit;	      /* the run ended as OOM */
	int iter;	      /* iteration (0-based), -1 = during set-up */
	char op[128];	      /* op being issued ("(setup)" before iter 0) */
	char tensor[128];     /* tensor or "workspace" that failed */
	uint64_t bytes;	      /* size of the failed request */
	uint64_t largest_free; /* allocator's largest free block at the
				  failure */
	char reason[256];     /* what the policy or executor said */
};

/* A whole run. */
struct st_run {
	int n_iter;		 /* iterations simulated (completed) */
	int warmup;		 /* leading iterations not in the steady state
				    (ex_cfg.warmup plus settle_extra and
				    grow_extra) */
	int settle_extra;	 /* warm-up iterations added because the
				    policy had not settled (pol_ops.settled) */
	int settled_iter;	 /* the first iteration from which the policy
				    reported itself settled; -1: it never did
				    within ex_cfg.settle_max, or settling was
				    not asked for or the policy does not learn
				    (see settle_asked) */
	bool settle_asked;	 /* the policy learns and the run allowed
				    settling: settled_iter is meaningful */
	int grow_extra;		 /* warm-up iterations added because a
				    measured iteration grew a pool
				    (ex_cfg.grow_max; ex.c, settle_pools) */
	bool grow_capped;	 /* the cap was hit: a measured iteration
				    still grew a pool */
	bool grow_asked;	 /* ex_cfg.grow_max > 0 and warmup > 0:
				    grow_capped is meaningful */
	struct st_iter *iter;	 /* per iteration, n_iter entries */
	struct st_iter steady;	 /* mean over iterations >= warmup (sums
				    divided, rounded down; n_late_in and
				    n_replan rounded up) */
	int64_t batch;		 /* samples per iteration */
	double samples_per_s;	 /* batch / steady.time */
	char allocator[32];	 /* device allocator model used (the
				    policy's own, or the run's) */
	struct mem_stats mem;	 /* device allocator at the end */
	double frag_at_peak;	 /* mem_frag at the peak of allocated
				    bytes (the worst of the moments at
				    it; mem_frag_track) */
	double frag_max;	 /* largest mem_frag after any device
				    allocation, failed or not, or free
				    (>= frag_at_peak) */
	uint64_t pinned_peak;	 /* host pinned bytes, peak */
	uint64_t host_peak;	 /* host bytes, pinned and pageable copies
				    and host-resident tensors, peak */
	uint64_t events;	 /* simulation events run */
	struct st_oom oom;	 /* set when the run ended as OOM */
	uint64_t fallbacks;	 /* algorithm fallbacks in the whole run,
				    warm-up included (st_iter.n_algo_fallback
				    summed) */
	uint64_t fallback_bytes; /* the first one: the workspace that did
				    not fit */
	uint64_t conv_bound;	 /* convolution ops that ran with the
				    profile's measured conv_algos: instead
				    of the workload's algorithm model */
	uint64_t gemm_bound;	 /* matmul ops that ran in the time of the
				    profile's measured gemms: entry of
				    their shape instead of the curve's */
	uint64_t fallback_largest_free; /* and the allocator's largest
					   free block then */
	bool failed;		 /* the run stopped on an error (not OOM) */
	char error[1024];	 /* that error */
	char *pol_report;	 /* the policy's report lines (pol_ops.report,
				    captured by the caller after ex_run),
				    owned; NULL: none */
};

void st_run_free(struct st_run *r);

/* Compute `steady` and samples_per_s from iter[warmup..n_iter). */
void st_finish(struct st_run *r);

/* Human-readable report. */
void st_print(const struct st_run *r, FILE *f);

#endif
