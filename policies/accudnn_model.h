/*
 * accudnn_model.h - AccUDNN's memory optimizer and hyperparameter tuner
 * as pure functions (AccUDNN sections 3 and 4,
 * ../shared/papers/accudnn.md): the global memory-object access pattern
 * (GMAP) of a workload, the performance model fitted from profiling
 * samples, Algorithm 1 (t_ready), constraint (6), Algorithm 2 (the
 * efficiency-optimal batch k* and which feature maps to pin), and the
 * learning-rate rule (9).
 *
 * No executor, no clock: policies/accudnn.c runs the profiling passes and
 * carries the strategy out; the tests check each algorithm on networks
 * worked out on paper.
 *
 * Conventions (section 3.1): the N layers are unfolded into 2N layer
 * processes j = 0 .. 2N-1 here (the paper counts from 1): a forward
 * process per layer in forward order, then a backward process per layer
 * in backward order. A layer process is a maximal run of consecutive ops
 * of the workload with the same wl_op.layer and wl_op.phase (update ops
 * belong to the backward process of their layer when they directly
 * follow it, or are their own process when they come after all backward
 * ops). Sizes and FLOPs are at the workload's batch k_base and scale with
 * k / k_base (equations 1, 4, 5), except what does not depend on the
 * batch: parameters, their gradients and optimizer state (m_para), and
 * the FLOPs of update-phase ops (they scale with the parameters).
 *
 * Times: the model works in seconds (doubles); the simulator's clock is
 * integer ns (sim/common.h), so two times closer than half a clock tick
 * (AC_EPS_S) are equal for constraint (6).
 */
#ifndef GMS_ACCUDNN_MODEL_H
#define GMS_ACCUDNN_MODEL_H

#include "../sim/common.h"
#include "../workloads/wl.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A feature map (section 3.1, prerequisite 2: "the memory optimizer
 * mainly targets feature maps"): a non-persistent tensor written in the
 * forward phase and read by a backward op. Its offload starts when it is
 * produced; its prefetch serves the first backward process that reads
 * it. The one definition the model and the runtime share. */
static inline bool ac_is_feature_map(const struct wl_workload *w, uint32_t t)
{
	const struct wl_tensor *x = &w->tensors[t];
	if (x->producer == WL_NONE || x->kind == WL_PARAM ||
	    x->kind == WL_OPT_STATE || x->kind == WL_PARAM_GRAD ||
	    w->ops[x->producer].phase != WL_FWD)
		return false;
	for (uint32_t r = 0; r < x->n_readers; r++)
		if (w->ops[x->readers[r]].phase != WL_FWD)
			return true;
	return false;
}

/* One feature map of the GMAP. */
struct ac_fm {
	uint32_t tensor;   /* tensor id */
	uint64_t bytes;	   /* size at k_base */
	uint32_t produced; /* layer process that writes it (offload after) */
	uint32_t fwd_last; /* last forward process that reads it (its
			      device copy is released after this one and
			      the offload) */
	uint32_t needed;   /* first backward process that reads it (the
			      prefetch serves this one) */
	uint32_t bwd_last; /* last process that reads it (released after) */
};

/* One op of the GMAP, for equation 2 (a process's time is the sum of
 * its ops' times: see ac_t_layer). */
struct ac_op {
	uint32_t type; /* enum wl_op_type: the fitted curve it takes */
	double flops;  /* FLOPs at k_base */
	bool scales;   /* FLOPs scale with k / k_base (equation 1); false
			  for update-phase ops */
};

/* One layer process j of the GMAP, under the all-swap ("naive")
 * strategy: every feature map offloaded once produced, prefetched for
 * the process that needs it. */
struct ac_layer {
	uint32_t first_op, n_ops; /* its ops: first_op .. first_op+n_ops-1 */
	uint32_t type;		  /* enum wl_op_type of its op with the most
				     FLOPs (the paper's "layer type";
				     reports only: the time is per op) */
	double flops;		  /* FLOPs of its ops at k_base */
	uint64_t alloc;		  /* Seq_allocate^j at k_base: its outputs,
				     its largest workspace and the feature
				     maps prefetched for it */
	uint64_t release;	  /* Seq_release^j at k_base: what is freed
				     once it has run (tensors read for the
				     last time, feature maps offloaded) */
	uint64_t prefetch;	  /* feature-map bytes prefetched for it */
	uint64_t offload;	  /* feature-map bytes offloaded after it */
	uint64_t workspace;	  /* its largest workspace */
};

/* The GMAP (section 3.2, static information 1-3). */
struct ac_gmap {
	struct ac_layer *layer; /* the 2N layer processes, in order */
	size_t n;		/* how many */
	struct ac_fm *fm;	/* feature maps, by `produced` */
	size_t n_fm;		/* how many */
	int64_t k_base;		/* the workload's batch */
	uint64_t m_para;	/* bytes that do not scale with the batch:
				   parameters, gradients, optimizer state */
	uint64_t m_peak;	/* peak layer-wise usage of the all-swap
				   strategy at k_base, m_para excluded */
	uint32_t peak_at;	/* the first process where it is reached
				   (Seq_peak) */
	uint64_t m_fm_peak;	/* feature-map bytes live at the peak */
	uint64_t m_ws_peak;	/* workspace live at the peak */
	uint64_t m_others_peak; /* the rest live at the peak (gradients of
				   activations, non-feature-map tensors) */
	struct ac_op *op;	/* the workload's ops, by op id (layer j's
				   are op[first_op .. first_op+n_ops-1]) */
	size_t n_op;		/* how many */
};

/* Build the GMAP of a finalized workload. persistent[t] (may be NULL:
 * parameters and optimizer state) marks whole-run tensors. */
int ac_gmap_build(const struct wl_workload *w, const bool *persistent,
		  struct ac_gmap *g, gms_err *err);
void ac_gmap_free(struct ac_gmap *g);

/* ---- performance model (section 3.3) ------------------------------- */

/* A profiled kernel or copy (section 3.2, dynamic information). */
struct ac_sample {
	uint32_t type; /* enum wl_op_type (kernels); unused for copies */
	double x;      /* FLOPs (kernels) or bytes (copies) */
	double ns;     /* measured time */
};

/* The fitted model: per op type, FLOPS(F) as hw.h's form (a saturating
 * rise, Figure 5: peak * min(1, F / sat)^alpha, plus a launch cost), and
 * the PCIe bandwidth as the average of measured transfer rates (eq 5). */
struct ac_perf {
	bool have[OT_COUNT]; /* a fit exists for the type */
	double peak[OT_COUNT];  /* FLOP/s at saturation */
	double sat[OT_COUNT];   /* FLOPs at the saturation point */
	double alpha[OT_COUNT]; /* shape below it */
	double launch[OT_COUNT]; /* ns per kernel */
	bool fitted[OT_COUNT];	 /* the saturating curve was fitted; false:
				    a constant rate (too few distinct
				    FLOPs, see ac_perf_fit) */
	double rate_all;  /* FLOP/s over every kernel sample: the rate of a
			     type never sampled */
	double bandwidth; /* bytes/s, eq 5 */
};

/* Half a tick of the simulator's clock (1 ns), in seconds: the
 * tolerance of constraint (6). */
#define AC_EPS_S 0.5e-9

/* Fit the model (GSL, through calibrate's cal_fit_compute): per op type
 * with samples, the saturating curve when the type has at least
 * AC_FIT_MIN distinct FLOP counts, else a constant rate (total FLOPs /
 * total time, no launch). Bandwidth: the mean of bytes / time over the
 * copy samples, 0 with none (a network with no feature map). Needs at
 * least one kernel sample. */
#define AC_FIT_MIN 5 /* cal_fit_compute: 4 parameters + 1 */
int ac_perf_fit(const struct ac_sample *kern, size_t n_kern,
		const struct ac_sample *copy, size_t n_copy, struct ac_perf *p,
		gms_err *err);
/* A memo of ac_perf_fit by its samples (issue 37): runs of one
 * experiment repeat the same profiling pass (one network and batch at
 * several budgets, the tuner and the runs), and the fit is a pure
 * function of the samples, so each distinct sample set is fitted once
 * and the same model object handed to every run that profiled it. It
 * hangs off the experiment's run (exp_run.c's run_ctx) and may be shared
 * by its worker threads (a mutex guards it). */
struct ac_fit_memo;
struct ac_fit_memo *ac_fit_memo_new(void);
void ac_fit_memo_free(struct ac_fit_memo *m);
/* ac_perf_fit through memo m (NULL: no memo, fit every time). Counts
 * in *hits / *fits (may be NULL) for the tests. */
int ac_perf_fit_memo(struct ac_fit_memo *m, const struct ac_sample *kern,
		     size_t n_kern, const struct ac_sample *copy,
		     size_t n_copy, struct ac_perf *p, gms_err *err);
void ac_fit_memo_counts(struct ac_fit_memo *m, size_t *fits, size_t *hits);
/* The plan step's hand-over (exp/shard.c, issue 37): a memo's entries
 * are written into the plan file as (hash, counts, model) and put into
 * each shard's memo, so a shard fits none the plan step fitted. An entry
 * put is found by the FNV-1a hash of the samples and their counts alone
 * (a fitted one compares the samples too): two sample sets of equal
 * counts colliding in 64 bits would take each other's model. put: 0, or
 * -1 when out of memory. get: entry i < ac_fit_memo_size(m), in the
 * order they were kept. */
int ac_fit_memo_put(struct ac_fit_memo *m, uint64_t hash, size_t n_kern,
		    size_t n_copy, const struct ac_perf *p);
size_t ac_fit_memo_size(struct ac_fit_memo *m);
void ac_fit_memo_get(struct ac_fit_memo *m, size_t i, uint64_t *hash,
		     size_t *n_kern, size_t *n_copy, struct ac_perf *p);
/* Equation 2's term: layer j's time at batch k, seconds. */
double ac_t_layer(const struct ac_perf *p, const struct ac_gmap *g, size_t j,
		  int64_t k);
/* Equation 2: t_iter(k), seconds. */
double ac_t_iter(const struct ac_perf *p, const struct ac_gmap *g, int64_t k);
/* Equation 3: t_whole(k) for E epochs of m samples with Δ seconds
 * between iterations. */
double ac_t_whole(const struct ac_perf *p, const struct ac_gmap *g, int64_t k,
		  double epochs, double samples, double delta);

/* ---- constraint (section 3.4) and tuner (section 4) ------------------ */

/* Algorithm 1 at batch k with the budget `budget` for the active area:
 * t_ready[j] (seconds) from per-layer compute times t_comp[j] (seconds)
 * and prefetch times t_pre[j] (seconds; 0 for pinned feature maps).
 * Returns 0, -1 with err. */
int ac_t_ready(const struct ac_gmap *g, int64_t k, uint64_t budget,
	       const double *t_comp, const double *t_pre, double *t_ready,
	       gms_err *err);
/* Constraint (6): marks bad[j] (may be NULL) where t_ready[j] exceeds
 * the compute time of processes 0 .. j-1 by more than AC_EPS_S; returns
 * how many. */
size_t ac_violations(size_t n, const double *t_comp, const double *t_ready,
		     bool *bad);

/* Algorithm 2's answer. */
struct ac_strategy {
	int64_t k_max;	    /* largest trainable batch (all-swap) */
	int64_t k_star;	    /* efficiency-optimal batch */
	bool *pinned;	    /* per feature map (index in gmap.fm): kept on
			       the device at k_star */
	uint32_t n_pinned;  /* how many */
	double t_iter;	    /* predicted t_iter(k_star), seconds:
			       equation 2 when (6) holds everywhere
			       (stall_free), else from t_ready (see
			       ac_t_iter_ready) */
	bool stall_free;    /* n_violations == 0: equation 2 applies */
	int steps;	    /* batches tried below k_max */
	uint32_t n_violations; /* processes still violating (6) at k_star
				  (0 unless the search reached k = 1, or
				  ac_pin_at ran out of room) */
};

/* Algorithm 2's first line: the largest trainable batch with every
 * feature map swapped, the paper's formula capped by (4) at the all-swap
 * peak (accudnn_model.c says why). Returns 0, or -1 with err when not
 * even one sample trains. */
int ac_k_max(const struct ac_gmap *g, uint64_t budget, int64_t *out,
	     gms_err *err);

/* Algorithm 2 for a device budget (bytes for tensors). */
int ac_search(const struct ac_gmap *g, const struct ac_perf *p,
	      uint64_t budget, struct ac_strategy *s, gms_err *err);
/* Algorithm 2's inner step alone at a fixed batch k (the `dynamic`
 * strategy of a run at the workload's batch): pin feature maps of the
 * processes that violate (6), as long as the memory left above the
 * all-swap peak allows. */
int ac_pin_at(const struct ac_gmap *g, const struct ac_perf *p,
	      uint64_t budget, int64_t k, struct ac_strategy *s, gms_err *err);
/* A given pinned set (per feature map of g, e.g. the tuner's at k_star
 * applied to the GMAP of the network built at k) evaluated at batch k:
 * the violations of (6) left and the predicted t_iter, as Algorithm 2
 * would report them; nothing is pinned or unpinned. s->pinned is a copy.
 * Returns 0, or -1 with err (not trainable at k). */
int ac_assess(const struct ac_gmap *g, const struct ac_perf *p,
	      uint64_t budget, int64_t k, const bool *pinned,
	      struct ac_strategy *s, gms_err *err);
/* The iteration time when (6) fails somewhere: equation 2 assumes "the
 * elimination of GPU computation stall"; with a process j whose data are
 * ready only at t_ready[j], after processes 0 .. j-1 have computed
 * (S_{j-1}), compute waits t_ready[j] - S_{j-1}. t_ready is worked out
 * on the stall-free schedule (Algorithm 1), so the prediction is that
 * schedule delayed by its largest lateness: sum t_comp + max_j
 * max(0, t_ready[j] - S_{j-1}) (S_{-1} = 0). Equal to equation 2 when
 * (6) holds. */
double ac_t_iter_ready(size_t n, const double *t_comp, const double *t_ready);
void ac_strategy_free(struct ac_strategy *s);

/* Equation 9: the learning rate for q = k* / k_base. */
double ac_learning_rate(double alpha_base, double c, double q);

#endif
