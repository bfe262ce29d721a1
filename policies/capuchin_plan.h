/*
 * capuchin_plan.h - Capuchin's Policy Maker (Capuchin sections 4.3-4.5):
 * from the tensor access sequence of the measured iteration, decide which
 * tensors to evict between which two accesses, and how to regenerate each
 * (swap with an in-trigger, or recompute).
 *
 * Pure planning: no executor, no clock. policies/capuchin.c records the
 * accesses (the Tensor Access Tracker), calls cp_plan() after the measured
 * iteration, and carries the plan out in guided execution. Keeping the
 * Policy Maker apart lets the tests check Algorithms 1 and 2 on lineages
 * worked out on paper (the T1->T2->T3->T4 examples of sections 4.4, 4.5).
 *
 * Terms (section 4.2): the evicted-access of a tensor is the access after
 * which it is evicted; its back-access is the next access of it; its
 * in-trigger is the access at which its swap-in is issued.
 */
#ifndef GMS_CAPUCHIN_PLAN_H
#define GMS_CAPUCHIN_PLAN_H

#include "../sim/common.h"
#include "../workloads/wl.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One access of the measured iteration, as the Tensor Access Tracker
 * records it ({tensor_id, access_count, timestamp}, section 5.2). Only
 * the iteration's own accesses (the write by its producer and the reads
 * of the ops of the iteration) are listed, never a recomputation's, so
 * `key` names the same access in every iteration. */
struct cp_access {
	uint32_t tensor;  /* tensor id */
	uint32_t key;	  /* 1 for its first access this iteration, 2 for
			     the next, ... (original accesses only) */
	uint32_t op;	  /* op whose kernel made the access */
	sim_time_t time;  /* kernel start, stall-free: measured time since
			     the iteration began minus the stalls before it
			     (section 5.2: "we need to subtract this time
			     from tensor access time") */
};

/* How the Policy Maker may regenerate a tensor. */
enum cp_mode {
	CP_HYBRID,	   /* Algorithm 1: swap while an in-trigger hides it,
			      then the cheaper of swap and recompute */
	CP_SWAP_ONLY,	   /* swap every chosen tensor, overhead or not */
	CP_RECOMPUTE_ONLY, /* Algorithm 2 alone */
};

enum cp_how { CP_SWAP, CP_RECOMPUTE };

/* When the eviction set is enough (issue 28). */
enum cp_saving {
	CP_SAVING_SCALAR,  /* Algorithm 1 line 12 as printed: mem_saving -=
			      t.mem, enough once mem_saving <= 0 */
	CP_SAVING_PROFILE, /* time-resolved: each chosen tensor is taken off
			      the stall-free usage profile over the span it
			      is out of memory; enough once the profile is
			      within `room` at every instant */
};

/* How a swap's overhead is priced (issue 28). */
enum cp_planner {
	CP_PLANNER_PAPER, /* alone, on an idle link (section 4.4) */
	CP_PLANNER_QUEUE, /* behind the swaps already chosen, on one FIFO
			     queue per direction over the measured
			     timeline */
};

/* What the Policy Maker is given. */
struct cp_input {
	const struct wl_workload *wl;  /* lineage: tensors' producers, ops'
					  inputs, ops' recomputable */
	const bool *persistent;	       /* per tensor: lives the whole run
					  (parameters, optimizer state,
					  held blobs): never evicted,
					  always a recomputation source */
	const struct cp_access *acc;   /* the measured iteration's
					  accesses, in order (times do not
					  decrease) */
	size_t n_acc;		       /* how many */
	const sim_time_t *op_time;     /* per op: its kernel time, the
					  recomputation cost of its
					  outputs (section 4.3) */
	const sim_time_t *swap_out;    /* per tensor: SwapTime device to
					  host (bytes / D2H bandwidth) */
	const sim_time_t *swap_in;     /* per tensor: SwapTime host to
					  device */
	uint64_t mem_saving;	       /* required reduction: the bytes the
					  measured iteration evicted on
					  demand (section 4.5); 0: the empty
					  plan; CP_SAVING_SCALAR's stop
					  rule */
	sim_time_t peak_begin;	       /* the peak-memory period [begin,
					  end] on the access timeline */
	sim_time_t peak_end;
	enum cp_mode mode;	       /* which regeneration methods */
	enum cp_saving saving;	       /* the stop rule */
	enum cp_planner planner;       /* how swaps are priced */
	uint64_t room;		       /* CP_SAVING_PROFILE: bytes the
					  non-persistent tensors may hold
					  (the budget less the persistent
					  tensors) */
	const uint64_t *demand;	       /* per access, or NULL: bytes passive
					  mode still had to evict at it in
					  guided iterations, added to the
					  profile at its instant (runtime
					  refinement; capuchin.c) */
	uint64_t min_bytes;	       /* size floor: tensors smaller are
					  never candidates */
};

/* One tensor of the eviction set. */
struct cp_decision {
	uint32_t tensor;      /* tensor id */
	enum cp_how how;      /* swap or recompute */
	size_t evict;	      /* index in cp_input.acc of its
				 evicted-access */
	size_t back;	      /* index in cp_input.acc of its back-access */
	size_t trigger;	      /* CP_SWAP: index of its in-trigger (evict <
				 trigger < back, or == back when none
				 hides anything); CP_RECOMPUTE: == back
				 (on demand, section 4.4) */
	sim_time_t free_time; /* FT of the pair, equation (1) */
	sim_time_t overhead;  /* estimated time the back-access waits:
				 CP_SWAP, what the swap-in from the
				 trigger (or the end of the swap-out,
				 whichever is later) leaves unhidden;
				 CP_RECOMPUTE, rp_time below */
	double msps;	      /* CP_RECOMPUTE: MSPS when chosen, eq. (2) */
	sim_time_t rp_time;   /* CP_RECOMPUTE: recomputation time from its
				 sources when chosen (rp_time + ext_time
				 of Algorithm 2) */
};

/* The plan. */
struct cp_plan {
	struct cp_decision *d; /* eviction set, in the order chosen */
	size_t n, cap;	       /* its size and capacity */
	uint64_t saved;	       /* bytes of the tensors in the eviction
				  set */
	uint64_t shortfall;    /* what the plan could not save: the
				  profile's excess over room at its worst
				  instant (CP_SAVING_PROFILE), or
				  mem_saving left (CP_SAVING_SCALAR) */
	size_t n_candidates;   /* tensors in the initial candidate set */
	int64_t *slack;	       /* per access (n_acc): room less the
				  profile the plan leaves at its instant,
				  negative where over (CP_SAVING_PROFILE;
				  NULL otherwise) */
};

/* The peak-memory period of the measured iteration: the stall-free usage
 * (each non-persistent tensor counted from its first access to its last,
 * plus in->demand where given) is computed over the access list; the
 * period is [first, last] access
 * time at which it exceeds `budget`, or the single instant of its maximum
 * when it never does. */
void cp_peak_period(const struct cp_input *in, uint64_t budget,
		    sim_time_t *begin, sim_time_t *end);

/* Make the plan (Algorithms 1 and 2). Returns 0, or -1 with err (out of
 * memory). */
int cp_plan(const struct cp_input *in, struct cp_plan *out, gms_err *err);

/* The in-trigger for a swap whose swap-in should start by `start` (the
 * ideal SwapInStartTime, or an earlier time after feedback): walking back
 * from the back-access `back`, the first access earlier than `start`,
 * moved after the peak-memory period when it falls inside it, and never
 * at or before `evict`. Returns its index (== back when none fits). */
size_t cp_choose_trigger(const struct cp_input *in, size_t evict, size_t back,
			 sim_time_t start);

/* cp_choose_trigger's walk alone: the first access before `start`
 * walking back from `back` (evict + 1 when none, or back when the pair
 * has nothing in between), wherever it falls. Feedback moves an
 * in-trigger with it (capuchin.c says why). */
size_t cp_walk_back(const struct cp_input *in, size_t evict, size_t back,
		    sim_time_t start);

void cp_plan_free(struct cp_plan *p);

#endif
