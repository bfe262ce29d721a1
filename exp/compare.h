/*
 * compare.h - validation mode's comparison: a schedule log (what the
 * simulator predicted, sim/sched.h) beside a measurement of its replay on
 * a GPU (sim/msr.h). `gpumemsim compare SCHEDULE MEASURED` is
 * cmp_run + cmp_report + cmp_write.
 *
 * The join: every kernel and copy of the schedule with the measured row
 * of the same (iter, seq) and kind. A row with no such item, an item with
 * no row, and iterations on one side only are counted (and listed in
 * compare.csv), never dropped silently. Predicted times are made relative
 * to their iteration's start (the schedule's `iter ... start=`), as the
 * measured ones are; a predicted iteration lasts its `end ... time=`.
 *
 * The summary covers steady-state iterations (iter >= the schedule's
 * warmup) and joined items only, so both sides count the same work:
 *   iteration time  mean over steady iterations measured and predicted;
 *                   error = (measured - predicted) / predicted;
 *   per-op error    per kernel, (measured - predicted) / predicted
 *                   duration; median and p90 of its absolute value
 *                   (linear interpolation between order statistics:
 *                   position q (n - 1) of the sorted values), and the
 *                   CMP_WORST kernels with the largest; kernels predicted
 *                   to take 0 ns are left out (counted);
 *   busy            per engine (compute, H2D, D2H) the summed durations;
 *   stall           compute idle time by cause, on each side alike: the
 *                   gaps before each kernel (from the iteration's start
 *                   or the previous kernel's end) and after the last
 *                   (to the iteration's end) go to the cause of the last
 *                   hostwait issued since the previous kernel; failing
 *                   that, for the gap before a kernel that waits on an
 *                   event a copy signals, to that copy's direction (h2d
 *                   or d2h: the executor's stall for a swap waited on by
 *                   the stream); else "unattributed". The predicted
 *                   host-blocked time per cause (hostwait until - t) is
 *                   reported beside it;
 *   peak memory     the schedule's peak allocated and reserved against
 *                   the measurement's peak_bytes (error against
 *                   allocated);
 *   disagreements   the CMP_TOP joined items with the largest absolute
 *                   difference in start or in duration (the larger of
 *                   the two), ties in (iter, seq) order.
 */
#ifndef GMS_COMPARE_H
#define GMS_COMPARE_H

#include "../sim/msr.h"
#include "../sim/sched.h"

#define CMP_TOP 10  /* disagreements listed (the "ten largest") */
#define CMP_WORST 5 /* kernels listed by relative error */

enum cmp_side { CMP_PRED, CMP_MEAS, CMP_SIDES };
enum cmp_engine { CMP_COMPUTE, CMP_H2D, CMP_D2H, CMP_ENGINES };
/* stall causes: enum st_stall, then this one */
enum { CMP_UNATTRIBUTED = ST_STALL_COUNT, CMP_CAUSES };
extern const char *const cmp_engine_names[]; /* "compute", "h2d", "d2h" */
extern const char *const cmp_cause_names[];  /* st_stall's, "unattributed" */

/* A kernel or copy on either side (or both). */
struct cmp_item {
	int iter;		      /* iteration */
	uint32_t seq;		      /* the schedule's seq */
	enum msr_kind kind;	      /* MSR_KERNEL or MSR_COPY */
	int engine;		      /* enum cmp_engine; -1: a row alone */
	const char *name;	      /* op or tensor name; "" for a row alone */
	const struct sch_item *sch;   /* its schedule record, or NULL */
	bool has[CMP_SIDES];	      /* in the schedule / measured */
	sim_time_t start[CMP_SIDES];  /* from its iteration's start */
	sim_time_t end[CMP_SIDES];    /* the same */
};

/* An iteration on either side. */
struct cmp_iter {
	bool has[CMP_SIDES];	     /* logged / measured */
	sim_time_t span[CMP_SIDES];  /* its time */
	sim_time_t start_pred;	     /* predicted start (absolute) */
	bool steady;		     /* iter >= warmup */
	size_t first, n;	     /* its items: item[first .. first+n) */
};

/* One listed disagreement. */
struct cmp_diff {
	size_t item;   /* index into item[] */
	sim_time_t ns; /* |difference| */
	bool start;    /* in start (else in duration) */
};

struct cmp_result {
	const struct sch_log *log; /* the schedule (names live there) */
	const struct msr *msr;	   /* the measurement */
	struct cmp_item *item;	   /* by (iter, seq, kind) */
	size_t n_item;		   /* count */
	struct cmp_iter *iters;	   /* by iteration number */
	int n_iter;		   /* the schedule's iterations */
	/* joins (all iterations) */
	size_t n_unmeasured;	   /* schedule kernels/copies without a row */
	size_t n_unscheduled;	   /* kernel/copy rows without an item */
	size_t n_iter_unmeasured;  /* schedule iterations without iter row */
	size_t n_iter_unscheduled; /* iter rows for iterations not logged */
	/* steady state */
	int n_steady;			 /* steady iterations on both sides */
	double iter_time[CMP_SIDES];	 /* mean, ns */
	double iter_err;		 /* relative */
	size_t n_rel;			 /* kernels in the per-op error */
	size_t n_zero_pred;		 /* kernels predicted at 0 ns, left out */
	double rel_median, rel_p90;	 /* of |relative error| */
	size_t worst[CMP_WORST];	 /* item indices, largest first */
	double worst_rel[CMP_WORST];	 /* their relative errors (signed) */
	size_t n_worst;			 /* listed */
	sim_time_t busy[CMP_SIDES][CMP_ENGINES];  /* summed durations */
	sim_time_t stall[CMP_SIDES][CMP_CAUSES];  /* compute idle by cause */
	sim_time_t host_wait[ST_STALL_COUNT];	  /* predicted host blocked */
	struct cmp_diff top[CMP_TOP];		  /* largest disagreements */
	size_t n_top;				  /* listed */
};

/* Compare; both inputs must outlive r. Errors (-1): a schedule iteration
 * without its iter record, or out of memory. */
int cmp_run(const struct sch_log *log, const struct msr *m,
	    struct cmp_result *r, gms_err *err);
void cmp_free(struct cmp_result *r);

/* The report, as printed and as summary.txt. */
void cmp_report(const struct cmp_result *r, FILE *f);

/* Into dir (created): compare.csv, summary.txt, trace.json and, with
 * plot, timeline.dat and timeline.png/.svg (results/plot-compare.gp);
 * each through a temporary renamed into place. The paths written go to
 * log (may be NULL). */
/* Check, before anything is read or written, that each file cmp_write
 * writes into dir may be written (gms_out_check). Returns 0 or -1. */
int cmp_check_out(const char *dir, gms_err *err);

int cmp_write(const struct cmp_result *r, const char *dir, bool plot,
	      FILE *log, gms_err *err);

#endif
