/*
 * optimal_blocks.h - the block decomposition of the optimal policy's
 * MILP (README, "The optimal policy"; docs/optimal.md, "Scale"), for
 * deep networks of repeated blocks whose exact MILP is too large.
 *
 * As Rockmate does (Zhao et al., ICML 2023; topal-team/rockmate,
 * rotor_solver.py), each distinct block is solved alone for a menu of
 * budgets, giving (time, kept memory, peak) options, and one option per
 * block is chosen by a dynamic program over the chain of blocks (Rotor's,
 * Beaumont et al., 2019/2021, restricted to Rockmate's "one option per
 * block" branch). The result is the optimum OVER THAT DECOMPOSITION, not
 * a bound; the global bound is the whole workload's relaxation
 * (opt_bound), kept apart.
 */
#ifndef GMS_OPTIMAL_BLOCKS_H
#define GMS_OPTIMAL_BLOCKS_H

#include "optimal_milp.h"

#include <stdio.h>

/* One option of a block for the chain DP. */
struct opt_dp_opt {
	double time;   /* the block's time with it, ns */
	uint64_t peak; /* bytes its own stages need, besides what the
			  blocks around it keep */
	uint64_t keep; /* bytes it keeps while other ops run (its gaps) */
};

/* Rockmate's chain DP (see optimal_blocks.c): blocks k = 0..n-1 in
 * order, block k's options opt[off[k] .. off[k + 1]); need[k] (k =
 * 0..n) the bytes the ops outside every block need while blocks 0..k-1
 * keep theirs (0: none); memory in slots of `unit` bytes, each keep
 * rounded up. Fills choice[k] (an index into block k's options) and
 * *best (the least total time). 0, 1 when no choice fits, -1 on out of
 * memory. */
int opt_chain_dp(uint32_t n, const uint32_t *off,
		 const struct opt_dp_opt *opt, const uint64_t *need,
		 uint64_t budget, uint64_t unit, uint32_t *choice,
		 double *best);

/* One solved option of a distinct block. */
struct opt_blk_opt {
	uint64_t peak_cap, keep_cap; /* the budgets it was solved at */
	double time;		     /* its objective, ns */
	uint64_t keep;		     /* bytes held across its gaps */
	bool proven;		     /* CBC proved it optimal */
	const char *stopped;	     /* if not, what stopped it: "node_limit",
					"search lp", "safety net" */
	bool remat_only;	     /* solved without swapping */
	struct opt_sched s;	     /* its schedule, in local stages; its
				        start (the MIP start used), nodes,
				        iterations and what stopped it
				        (node_limit, killed) */
};

/* A menu point solved: its budgets and the option it gave (-1: none),
 * so that a finer menu (below, menu_max) reuses it instead of solving
 * it again. */
struct opt_blk_pt {
	uint64_t peak_cap, keep_cap;
	bool remat_only;
	int32_t opt;
};

/* A distinct block: its local problem and its options. */
struct opt_blk_class {
	uint32_t rep;		 /* the first block (chain order) like it */
	uint32_t n_stages;	 /* local stages (gap stages included) */
	uint32_t n_gaps;
	struct opt_blk_opt *opt;
	uint32_t n_opt;
	struct opt_blk_pt *pt;	 /* the points solved for the menu */
	uint32_t n_pt;
	uint64_t n_vars, n_rows; /* its largest sub-MILP */
};

/* The decomposition's result, for the report. */
struct opt_blocks {
	uint32_t n_blocks, n_classes;
	uint32_t *cls;	  /* per block in chain order: its class */
	uint32_t *choice; /* per block: its option */
	struct opt_blk_class *c;
	uint32_t menu;	  /* keep budgets per peak budget (the last menu
			     solved) */
	uint32_t menu_first, menu_max; /* the menu asked for, and the cap
					  of its doublings */
	uint32_t n_doubled; /* times no combination fitted and the menu
			       was doubled (reported) */
	uint32_t n_reused;  /* points a doubled menu shared with the one
			       before, not solved again */
	bool bound_infeasible; /* no doubling: the global relaxation
				  proves that no schedule fits */
	uint64_t unit;	  /* the DP's slot, bytes */
	uint32_t n_solves, n_proven;
	/* every block solve's work, options or not (work limits: these
	 * repeat on any machine) and what stopped those that did not end
	 * on their own */
	int64_t node_limit;    /* CBC's nodes per solve (opt_in's) */
	struct opt_work work;  /* summed over the block solves */
	uint32_t n_node_limit; /* stopped at node_limit */
	uint32_t n_lp;	       /* searched as an LP (search lp, or auto
				  above OPT_FULL_MAX_VARS) */
	uint32_t n_killed;     /* killed by the safety net (time_limit):
				  then the result depends on the machine */
	double other_time; /* compute of the ops in no block, ns */
};

/* Solve in->wl by blocks (wl_op.block marks) into s (a schedule of the
 * whole workload, for the optimal policy's replay; s->status
 * OPT_INFEASIBLE when no combination fits, OPT_FEASIBLE when an option
 * used was not proven optimal; s->work.killed when the safety net killed a
 * block solve) and b; the global bound (opt_bound) in s->bnd_* and
 * s->bound. Every solve, the blocks' and the bound's, runs under in's
 * work limits (node_limit, lp_iterations, search; one thread) with
 * in->time_limit_s as the safety net, as opt_solve's; in's seeds are not
 * used (each block solve starts from the framework's or swap-all's
 * schedule). menu: keep budgets per peak budget (>= 2). When no
 * combination of the options fits the budget, the menu is doubled and
 * every distinct block solved again (the points the two menus share
 * reused), up to menu_max, unless the global relaxation proves that no
 * schedule fits; b counts the doublings. -1 with err: no blocks, blocks
 * that do not nest as a chain, out of memory. */
int opt_blocks_solve(const struct opt_in *in, uint32_t menu,
		     uint32_t menu_max, struct opt_sched *s,
		     struct opt_blocks *b, gms_err *err);
void opt_blocks_free(struct opt_blocks *b);

/* The block solves of one experiment, shared by its runs and threads
 * (exp/exp_run.c, run_shared; policies/optimal_blocks.c, "The block
 * solves of one experiment"): each distinct (block problem, budgets,
 * limits) is solved once; the others take a copy of its schedule and
 * work, so outputs are the same with it or without. */
struct opt_memo *opt_memo_new(void);
void opt_memo_free(struct opt_memo *m);
/* Points solved, and points taken from an earlier solve. */
void opt_memo_counts(struct opt_memo *m, size_t *solves, size_t *hits);

/* Why the last menu was not doubled when no combination fitted. */
const char *opt_blocks_why_none(const struct opt_blocks *b);

/* The report's lines on the decomposition (indented as pol reports). */
void opt_blocks_report(const struct opt_blocks *b,
		       const struct opt_sched *s, FILE *out);

#endif
