/*
 * accudnn.h - what the accudnn policy offers besides its pol_ops: the
 * hyperparameter tuner (AccUDNN section 4) as one call, for the
 * experiment runner's `efficiency-optimal` and `scaling` measures.
 *
 * accudnn_tune builds the network at its base batch, reads its GMAP,
 * runs the profiling passes (the simulator itself under the naive
 * strategy at 1/8, 1/4, 1/2, 2/3 and 1 of the largest trainable batch:
 * the paper's nvprof epochs, section 3.2), fits the performance model
 * (section 3.3), runs Algorithm 2 for k* and its strategy, and equation 9
 * for the learning rate.
 */
#ifndef GMS_ACCUDNN_H
#define GMS_ACCUDNN_H

#include "../sim/hw.h"
#include "../workloads/wl_gen.h"
#include "accudnn_model.h"
#include "pol.h"

/* The strategy the tuner chose, for the runtime memory manager to carry
 * out (section 2: "Once the optimal minibatch size is determined, the
 * concrete swap out/in strategy ... gets clear as well. Finally, the
 * concrete strategy is submitted to the runtime memory manager"). The
 * tuner's fitted model itself travels with it, so the runtime judges the
 * strategy with the same object the tuner chose it by (no second
 * profiling pass, no second fit). */
struct accudnn_plan {
	struct ac_perf perf;   /* the performance model the tuner fitted */
	int64_t k;	       /* the batch it is for (k*) */
	uint32_t n_fm;	       /* feature maps of the network (GMAP order) */
	uint32_t *fm_tensor;   /* their tensor ids */
	bool *pinned;	       /* per feature map: kept on the device */
	uint32_t n_pinned;     /* how many */
	uint32_t n_violations; /* processes violating (6) at k by the
				  tuner's GMAP (at k_base, scaled) */
	double t_iter;	       /* the tuner's predicted t_iter(k), s */
};

void accudnn_plan_free(struct accudnn_plan *plan);

/* Give a created accudnn policy (mode dynamic) the tuner's strategy:
 * its plan hook then pins exactly plan->pinned (the run's workload must
 * be the network at plan->k), profiles nothing, and reports the
 * violations of (6) it finds on its own GMAP with the plan's model
 * beside the tuner's. `plan` must outlive the run. Returns 0, or -1 with
 * err (not an accudnn policy in dynamic mode). */
int accudnn_deploy(struct pol *p, const struct accudnn_plan *plan,
		   gms_err *err);

/* Let a created accudnn policy take its performance model from memo m
 * (the experiment's: a profiling pass another run of the experiment
 * already fitted is not fitted again, issue 37). m must outlive the run.
 * Not an accudnn policy: nothing. */
void accudnn_share_fits(struct pol *p, struct ac_fit_memo *m);

/* The model a run of cfg under created accudnn policy p would fit in its
 * plan hook (mode dynamic, no tuner's strategy): its profiling pass made
 * and fitted into memo m, as the run would (the plan step, issue 37:
 * fitted once there, not in each shard). 1: fitted (or found in m); 0:
 * p fits nothing, or the pass ran out of memory (the run then goes
 * ahead naive); -1 with err. */
struct ex_cfg;
int accudnn_prefit(const struct pol *p, const struct ex_cfg *cfg,
		   struct ac_fit_memo *m, gms_err *err);

/* What the tuner is given. */
struct accudnn_tune_in {
	const struct wl_gen *gen;     /* the network */
	struct wl_gen_args args;      /* its arguments; args.batch is k_base */
	const struct hw_profile *hw;  /* the GPU and its link */
	uint64_t budget;	      /* device bytes for tensors (0: the
					 profile's capacity less reserved) */
	double lr_base;		      /* learning rate at lr_batch (eq 9's
					 alpha_base) */
	int64_t lr_batch;	      /* the batch lr_base was set for (eq
					 9's base: q = k* / lr_batch); 0:
					 k_base */
	double c;		      /* convexity constant c (eq 9) */
	struct ac_fit_memo *fits;     /* models already fitted, shared
					 with the experiment's runs (issue
					 37); NULL: fit here */
};

/* What it found. */
struct accudnn_tune_out {
	int64_t k_base;		/* the batch sizes and FLOPs were read at */
	int64_t k_max;		/* largest trainable batch, all feature
				   maps swapped (Algorithm 2, first line) */
	int64_t k_star;		/* efficiency-optimal batch */
	double t_iter_pred;	/* predicted iteration time at k_star, s
				   (equation 2; from t_ready when
				   violations are left) */
	uint32_t n_violations;	/* processes still violating (6) at
				   k_star (0 unless k reached 1) */
	double lr;		/* learning rate for k_star (equation 9) */
	uint32_t n_fm;		/* feature maps of the network */
	uint32_t n_pinned;	/* of which pinned at k_star */
	int profile_runs;	/* profiling passes simulated */
	struct accudnn_plan *plan; /* the strategy for the runtime (owned:
				      accudnn_plan_free; NULL from a stub
				      tuner) */
};

/* Tune. Returns 0, or -1 with err (the network does not fit even with
 * every feature map swapped, a profiling pass failed, ...). */
int accudnn_tune(const struct accudnn_tune_in *in, struct accudnn_tune_out *out,
		 gms_err *err);

#endif
