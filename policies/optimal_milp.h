/*
 * optimal_milp.h - the MILP of joint swapping and recomputation with two
 * timed copy engines (README, "The optimal policy"), solved with CBC.
 *
 * Stages are the workload's ops in issue order (Checkmate's
 * frontier-advancing schedule, Jain et al., MLSys 2020: op t runs in
 * stage t, earlier ops may be recomputed in it); POET's paging variables
 * (Patil et al., ICML 2022) are added, with each transfer timed on its
 * copy engine and overlapping the stage's compute. The formulation is in
 * optimal_milp.c, next to the code that builds each constraint.
 *
 * This header names no CBC type: only optimal_milp.c includes CBC's
 * Cbc_C_Interface.h (Makefile: LP_CFLAGS on that object alone).
 */
#ifndef GMS_OPTIMAL_MILP_H
#define GMS_OPTIMAL_MILP_H

#include "../sim/common.h"
#include "../workloads/wl.h"

/* What the MILP is built from: the workload and, per op and tensor, the
 * figures of the run it will be replayed in (the executor's op times,
 * workspaces and copy times, policies/optimal.c). */
/* A heuristic policy's schedule to seed CBC with (its MIP start): the
 * ops it re-ran in each stage of its measured iteration, as pairs
 * (stage, op), stages in order. Only re-runs are translated (below,
 * optimal_milp.c, seed_start), so a recompute-only policy's schedule
 * maps fully; the start is used when it satisfies every row of the MILP
 * and beats the framework's or swap-all's. */
struct opt_seed {
	const char *name;	/* the policy */
	bool fit;		/* it ran within the budget (else
				   nothing to translate) */
	double time;		/* its simulated iteration, ns */
	const uint32_t *stage, *op;
	uint32_t n;
};

/* CBC's and CLP's functions, loaded at run time (optimal_milp.c): the
 * program links no CBC library, so commands that never solve never load
 * it. */
struct opt_lib;

struct opt_memo;

struct opt_in {
	const struct opt_lib *lib;  /* opt_lib_open's (NULL: each solve
				       opens it for itself) */
	const struct wl_workload *wl;
	const sim_time_t *op_time;  /* per op: kernel time */
	const uint64_t *op_ws;	    /* per op: workspace bytes */
	const bool *managed;	    /* per tensor: a decision variable (not
				       persistent: produced this iteration,
				       or the input batch, which is there
				       when the iteration begins and cannot
				       be recomputed); the others are
				       fixed */
	const sim_time_t *op_time_lb; /* per op, for the global bound: the
					 least kernel time of an algorithm
					 that could fit (NULL: op_time) */
	const uint64_t *op_ws_lb;   /* per op, for the global bound: the
				       least workspace (NULL: op_ws) */
	const uint32_t *alg_off;    /* per op t, for the global bound: its
				       first run's algorithms that could
				       fit are alg_time/alg_ws[alg_off[t]
				       .. alg_off[t + 1]) (NULL: none; one
				       entry: no choice) */
	const sim_time_t *alg_time;
	const uint64_t *alg_ws;
	const sim_time_t *t_h2d;    /* per tensor: swap-in time */
	const sim_time_t *t_d2h;    /* per tensor: swap-out time */
	uint64_t budget;	    /* device bytes */
	uint64_t fixed;		    /* bytes of unmanaged tensors, resident
				       in every stage */
	int64_t node_limit;	    /* CBC's branch-and-bound nodes, per
				       solve (0: the root only) */
	int64_t lp_iterations;	    /* CLP's simplex iterations for each
				       LP value */
	int search;		    /* enum opt_search */
	double time_limit_s;	    /* the safety net: a solve still running
				       after this many wall seconds is
				       killed, and that is reported
				       (work.killed, bnd_work.killed) */
	bool swap;		    /* swapping allowed */
	bool remat;		    /* recomputation allowed */
	uint64_t max_vars;	    /* refuse a larger problem */
	const struct opt_seed *seed; /* heuristics' schedules (n_seed) */
	uint32_t n_seed;
	bool no_bound;		    /* skip the relaxation (a block's
				       sub-problem, policies/optimal_blocks.c:
				       its bound would not be global) */
	struct opt_memo *memo;	    /* block solves shared by the runs of
				       one experiment (optimal_blocks.h;
				       NULL: each run solves its own) */
};

/* How a model is solved: FULL by CBC's branch and bound (its
 * preprocessing, cut generators and heuristics, up to node_limit
 * nodes); LP by CLP's LP alone, its value the bound and the MIP start
 * the incumbent; AUTO full on a model of at most OPT_FULL_MAX_VARS
 * columns, lp above. The threshold is a running-time choice, measured
 * on this machine: chain-mlp's and tiny-cnn's models (up to 2,270
 * columns) solve at full in seconds; on the 376-op recorded
 * transformer's 44,514 CBC's root alone took minutes (with its cuts and
 * heuristics off, it then gave no more than the LP), its relaxation's
 * 151,358 did not end its root in 300 s, and 100 nodes without cuts
 * did not end in 9 minutes. */
enum opt_search { OPT_SEARCH_AUTO, OPT_SEARCH_FULL, OPT_SEARCH_LP };
#define OPT_FULL_MAX_VARS 20000
/* "full" or "lp": how a model of n_vars columns is searched */
const char *opt_search_used(int search, uint64_t n_vars);

enum opt_status {
	OPT_OPTIMAL,	/* proven optimal */
	OPT_FEASIBLE,	/* stopped by a limit with an incumbent */
	OPT_NO_SOLUTION, /* stopped with no incumbent */
	OPT_INFEASIBLE, /* proven infeasible */
};
extern const char *const opt_status_names[];

/* One solve's work and what stopped it: the work limits' figures, which
 * repeat on any machine (killed aside). The incumbent's solve, the
 * global bound's and, summed, the block solves' (optimal_blocks.c) each
 * carry one. */
struct opt_work {
	uint64_t nodes;	  /* branch-and-bound nodes */
	uint64_t iter;	  /* CBC's simplex iterations */
	uint64_t lp_iter; /* CLP's, for the LP value */
	bool lp_stopped;  /* CLP stopped at lp_iterations (LP value NAN) */
	bool node_limit;  /* CBC stopped at node_limit */
	bool killed;	  /* the safety net stopped the solve: its answer
			     depends on the machine's speed */
};

/* Add w's work to sum (counts summed, stops or-ed). */
static inline void opt_work_add(struct opt_work *sum,
				const struct opt_work *w)
{
	sum->nodes += w->nodes;
	sum->iter += w->iter;
	sum->lp_iter += w->lp_iter;
	sum->lp_stopped |= w->lp_stopped;
	sum->node_limit |= w->node_limit;
	sum->killed |= w->killed;
}

/* The solver's schedule, per stage t, as lists (CSR: the items of stage t
 * are x[x_off[t] .. x_off[t + 1])). */
struct opt_sched {
	enum opt_status status;
	uint32_t n_stages;
	uint64_t n_vars, n_rows, n_int; /* problem size */
	double objective;  /* incumbent, ns (constant compute included) */
	double lp_bound;   /* the LP relaxation's value, ns */
	double best_bound; /* CBC's best bound when it stopped, ns */
	double gap;	   /* (objective - best_bound) / objective */
	char start[64];	   /* MIP start given: "framework", "swap-all",
			      a seed's policy, "none" */
	char seeds[256];   /* each seed tried: "name OBJ ns" used or
			      rejected, "; "-separated */
	double start_obj;  /* its objective, ns (0: none) */
	struct opt_work work; /* the incumbent's solve (lp_stopped: lp_bound
				 NAN) */
	uint32_t *rc_off, *rc;	 /* ops recomputed in stage t (id order) */
	uint32_t *in_off, *in;	 /* tensors swapped in during stage t */
	uint32_t *out_off, *out; /* tensors swapped out during stage t */
	uint32_t *rel_off, *rel; /* tensors released after stage t */
	uint8_t *rel_evict;	 /* per rel entry: 1 = it has a host copy
				    (released as a swap-out), 0 = dropped */
	double *mem;		 /* per stage: the MILP's bytes */
	double *stall;		 /* per stage: the MILP's stall, ns */
	double peak_mem;	 /* max of mem */
	/* The global bound (optimal_milp.c, "The relaxation"): a lower
	 * bound on the iteration time of every schedule the executor can
	 * run, copies spanning stages included; solved after the
	 * incumbent's MILP, under the same limits. */
	enum opt_status bnd_status; /* OPT_INFEASIBLE: no schedule fits */
	double bnd_lp;		    /* its LP relaxation, ns (NAN: not
				       reached in the time limit) */
	double bnd_best;	    /* CBC's best bound of it, ns (its
				       optimum when bnd_status is
				       OPT_OPTIMAL) */
	double bound;		    /* the larger of the two: the bound */
	uint64_t bnd_vars, bnd_rows, bnd_int;
	struct opt_work bnd_work;   /* its solve (lp_stopped: bnd_lp NAN) */
	double solve_s;		    /* wall seconds of both solves (not
				       reported with the results: it
				       varies from run to run) */
};

/* Build and solve. 0 with s filled (any status but OPT_INFEASIBLE has a
 * schedule when status <= OPT_FEASIBLE), or -1 with err: an op whose own
 * working set exceeds the budget (named), a problem over max_vars, out of
 * memory. CBC is not reentrant (its command-line driver keeps static
 * state), so solves are serialised with a lock. */
int opt_solve(const struct opt_in *in, struct opt_sched *s, gms_err *err);
void opt_sched_free(struct opt_sched *s);
/* A deep copy of src into dst (its lists, mem and stall owned anew);
 * -1 on out of memory, dst then empty. */
int opt_sched_copy(struct opt_sched *dst, const struct opt_sched *src);

/* The global bound alone (s->bnd_* and s->bound, the rest zero): the
 * relaxation of the whole workload, without the restricted MILP (the
 * block decomposition's, policies/optimal_blocks.c, whose result is no
 * bound). 0, or -1 with err on out of memory. */
int opt_bound(const struct opt_in *in, struct opt_sched *s, gms_err *err);

/* Load libCbcSolver (the soname the program was built against) and the
 * functions optimal_milp.c calls. 0 with *lib, or -1 with err naming the
 * library and dlerror's reason (or the missing function); never exits. */
int opt_lib_open(struct opt_lib **lib, gms_err *err);
extern const char *const opt_lib_soname; /* e.g. libCbcSolver.so.3 */
/* The same from the library named soname (tests: a missing library) */
int opt_lib_open_named(const char *soname, struct opt_lib **lib,
		       gms_err *err);
void opt_lib_close(struct opt_lib *lib); /* NULL: nothing */

#endif
