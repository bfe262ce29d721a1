/*
 * dtr.h - Dynamic Tensor Rematerialization (DTR, Kirisame et al., ICLR
 * 2021): the eviction heuristics and the "serial" replay, an exact
 * reimplementation of the DTR authors' simulator simrd
 * (uwsampl/dtr-prototype at commit eff53cc, subdirectory simrd/; the
 * semantics are summarised in /work/shared/dtr-semantics.md).
 *
 * Two parts:
 *
 *  - The heuristics (policies/dtr.c): dtr_cost() is the eviction score
 *    simrd computes for a storage (lower is evicted first), as a double
 *    rounded exactly as Python's int/int rounds. It is meant to be shared
 *    by every engine that evicts by DTR's scores (the serial replay here,
 *    and a full-model executor policy).
 *
 *  - The serial replay (policies/dtr_serial.c): a DTR JSON-lines log
 *    (the format workloads/wl_dtr.c reads, through its scanner) parsed
 *    into simrd's op/storage stream, and replayed under a memory budget
 *    the way simrd's RuntimeV2EagerOptimized does: memory is one counter,
 *    no copies, no placement, no time overlap; constants are pinned and
 *    never freed; a storage is evicted as soon as its last handle is
 *    released; evicted neighbourhoods are kept by rebuild and absorb at
 *    the points simrd does them; ties go to the later storage in pool
 *    order; the clock starts at 1. It is its own small engine, not an
 *    executor policy: simrd's model has no streams, copies or allocator
 *    (README, "The dtr policy (serial preset)").
 *
 * No global state: a loaded trace is read-only and may be replayed by
 * several threads at once; each dtr_serial_run allocates its own state.
 */
#ifndef GMS_DTR_H
#define GMS_DTR_H

#include "../sim/common.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The eviction heuristics (simrd/simrd/heuristic/dtr.py, etc.py). */
enum dtr_heuristic {
	DTR_H_DTR,     /* "dtr": (compute of the storage and of its evicted
			  neighbourhoods, both directions) / (size x
			  staleness); simrd's DTR */
	DTR_H_EQCLASS, /* "dtr-eqclass": the same with the neighbourhoods
			  approximated by union-find equivalence classes of
			  evicted storages; simrd's DTREqClass
			  (optimization/eqclass.py) */
	DTR_H_MSPS,    /* "msps": (compute of the storage and of its evicted
			  ancestors) / size, Capuchin's memory saving per
			  second; simrd's MSPS */
	DTR_H_LRU,     /* "lru": the last access time; simrd's LRU */
	DTR_H_LARGEST, /* "largest": 1 / size; simrd's LargestStorage */
	DTR_H_COUNT
};

/* The heuristic called name ("dtr", "dtr-eqclass", "msps", "lru",
 * "largest"), or DTR_H_COUNT when none is. */
enum dtr_heuristic dtr_heuristic_parse(const char *name);

/* The heuristic's name as dtr_heuristic_parse takes it. */
const char *dtr_heuristic_name(enum dtr_heuristic h);

/* simrd's name of the heuristic's class ("DTR", "DTREqClass", "MSPS",
 * "LRU", "LargestStorage"), as the reference file keys its runs. */
const char *dtr_heuristic_simrd_name(enum dtr_heuristic h);

/* The last access time of a storage never accessed (Python's -inf in
 * simrd, which stamps new storages with it). */
#define DTR_NEVER INT64_MIN

/* The correctly rounded double nearest num / den (ties to even), as
 * Python's int / int gives it; den > 0 and den < 2^127. */
double dtr_div(unsigned __int128 num, unsigned __int128 den);

/* The eviction score simrd's heuristic h gives a storage; the storage with
 * the lowest score is evicted. compute_sum: for DTR_H_DTR the storage's
 * compute plus the compute of its two evicted regions; for DTR_H_MSPS the
 * storage's compute plus its reverse region's; for DTR_H_EQCLASS the
 * storage's compute plus the values of its distinct neighbouring classes;
 * unused by LRU and LARGEST. size: the storage's bytes. last_access: its
 * last access time (DTR_NEVER if none), clock: the current clock. Returns
 * INFINITY where simrd does (a denominator <= 0), -INFINITY for LRU on a
 * storage never accessed. For LRU the score is the access time itself
 * (exact as a double below 2^53 ns). */
double dtr_cost(enum dtr_heuristic h, uint64_t compute_sum, uint64_t size,
		int64_t last_access, int64_t clock);

/* A parsed trace: simrd's op/storage stream and schedule (opaque). */
struct dtr_trace;

/* Load a DTR log (the whole file through workloads/wl_dtr.c's scanner:
 * its errors, "path:line:col: ...", are returned in err). 0, or -1 with
 * err set. */
int dtr_trace_load(const char *path, struct dtr_trace **out, gms_err *err);

/* The same from a log held in memory (tests); name is used in messages. */
int dtr_trace_load_mem(const char *name, const char *text, size_t len,
		       struct dtr_trace **out, gms_err *err);

void dtr_trace_free(struct dtr_trace *tr);

/* The baseline simrd measures budgets and overheads against: the trace
 * replayed with an unlimited budget by simrd's RuntimeV1 (which, unlike
 * the budgeted runs, frees a constant when its last handle is released).
 * run_pareto: budgets are int(peak_bytes x ratio), the thrash limit
 * compute_ns x (2.0 - 1). */
struct dtr_baseline {
	uint64_t peak_bytes;  /* highest memory (simrd's max_memory) */
	uint64_t compute_ns;  /* sum of the ops' TIME (model_compute) */
	uint64_t const_bytes; /* bytes of all CONSTANTs (model_const_memory) */
	uint32_t n_ops;	      /* ops, CONSTANTs included (one per CONSTANT,
				 CALL and MUTATE) */
	uint32_t n_cmds;      /* schedule commands (compute, get, pin,
				 release) */
	uint32_t n_storages;  /* storages */
};

/* Fill b for the trace; 0. */
int dtr_baseline(const struct dtr_trace *tr, struct dtr_baseline *b);

/* One replay's settings. */
struct dtr_opts {
	enum dtr_heuristic heuristic; /* eviction choice */
	uint64_t budget_bytes;	      /* the memory budget, constants
					 included; UINT64_MAX: unlimited */
	uint64_t remat_limit_ns;      /* stop ("thrash") once the
					 rematerialized compute exceeds this;
					 UINT64_MAX: never. run_pareto uses
					 the baseline compute x 1 */
	bool walk_regions;	      /* rebuild every region by its own DFS,
					 as simrd does, instead of from the
					 closures shared within one update
					 (README, "The serial preset");
					 slower, the same results: for tests */
};

/* How a replay ended (simrd: pass, fail (OOM), fail (thrashed)). */
enum dtr_status {
	DTR_OK,	    /* the whole schedule ran */
	DTR_OOM,    /* memory was needed and nothing was evictable
		       (simrd's MemoryError) */
	DTR_THRASH, /* the rematerialized compute passed the limit
		       (RematExceededError) */
};

/* "ok", "OOM", "thrash": the reference file's spelling. */
const char *dtr_status_name(enum dtr_status s);

/* One replay's outcome. */
struct dtr_result {
	enum dtr_status status;		/* how it ended */
	uint64_t clock_end;		/* simrd's clock at the end or at the
					   stop (it starts at 1) */
	double overhead;		/* clock_end / baseline compute;
					   meaningful when status is DTR_OK
					   (the same ratio otherwise, as
					   overhead_at_stop) */
	uint64_t model_compute_ns;	/* TIME of the ops run as scheduled */
	uint64_t remat_compute_ns;	/* TIME of the rematerializations */
	uint64_t evictions_heuristic;	/* storages the heuristic evicted */
	uint64_t evictions_eager_release; /* storages evicted when their last
					     handle was released */
	uint64_t remat_ops;		/* ops re-run to rematerialize */
	uint64_t max_memory_bytes;	/* highest memory counter */
	uint64_t memory_bytes;		/* the memory counter at the end */
	uint64_t cost_evals;		/* heuristic scores computed */
	uint64_t rebuilds;		/* regions rebuilt (DTR, MSPS) */
	uint64_t rebuilds_walked;	/* of those, by simrd's own DFS from
					   the base (walk_regions, or out of
					   host memory for the closures)
					   rather than from the closures
					   shared within one update: the
					   same sets, more time */
};

/* Replay the trace under o into r; 0, or -1 with err set (bad options,
 * out of memory). OOM and thrash are results, not errors. */
int dtr_serial_run(const struct dtr_trace *tr, const struct dtr_opts *o,
		   struct dtr_result *r, gms_err *err);

/* A storage's state after the first commands of a replay
 * (dtr_serial_probe): for tests and inspection. Storages are numbered in
 * creation order (a CONSTANT's, a CALL's fresh results', a MUTATE's
 * outputs'), from 0. */
struct dtr_probe_sto {
	bool material;		   /* its bytes are in memory */
	bool pinned;		   /* permanently locked */
	int64_t last_access;	   /* last_access_int (DTR_NEVER: none) */
	uint64_t compute;	   /* Storage.compute: TIME of the distinct
				      ops that made its tensors so far */
	uint64_t region_compute[2]; /* [0]: its region (children side),
				       [1]: region_rev (parents side);
				       DTR and MSPS only, else 0. A pinned
				       storage's regions are not kept up to
				       date (nothing reads them again), nor
				       under MSPS the interiors and compute
				       of [0] (nothing reads them) */
	uint64_t interior[2];	   /* the regions' interiors, as masks of
				      the storages numbered below 64 */
	uint64_t frontier[2];	   /* and their frontiers */
};

/* Run the first n_cmds commands of the schedule (all if more) under o;
 * r as dtr_serial_run gives it at that point (clock_end: the clock then;
 * memory_bytes: the counter then), and the first n_sto storages' state
 * into sto. 0, or -1 with err set. */
int dtr_serial_probe(const struct dtr_trace *tr, const struct dtr_opts *o,
		     uint32_t n_cmds, struct dtr_result *r,
		     struct dtr_probe_sto *sto, uint32_t n_sto, gms_err *err);

/* run_pareto's budget for a ratio of the baseline peak:
 * int(peak_bytes * ratio) in double arithmetic, as Python computes it. */
uint64_t dtr_budget_for_ratio(const struct dtr_baseline *b, double ratio);

#endif
