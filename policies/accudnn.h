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
#include "pol.h"

/* What the tuner is given. */
struct accudnn_tune_in {
	const struct wl_gen *gen;     /* the network */
	struct wl_gen_args args;      /* its arguments; args.batch is k_base */
	const struct hw_profile *hw;  /* the GPU and its link */
	uint64_t budget;	      /* device bytes for tensors (0: the
					 profile's capacity less reserved) */
	double lr_base;		      /* learning rate at k_base (eq 9) */
	double c;		      /* convexity constant c (eq 9) */
};

/* What it found. */
struct accudnn_tune_out {
	int64_t k_base;		/* the batch sizes and FLOPs were read at */
	int64_t k_max;		/* largest trainable batch, all feature
				   maps swapped (Algorithm 2, first line) */
	int64_t k_star;		/* efficiency-optimal batch */
	double t_iter_pred;	/* predicted iteration time at k_star, s
				   (equation 2) */
	double lr;		/* learning rate for k_star (equation 9) */
	uint32_t n_fm;		/* feature maps of the network */
	uint32_t n_pinned;	/* of which pinned at k_star */
	int profile_runs;	/* profiling passes simulated */
};

/* Tune. Returns 0, or -1 with err (the network does not fit even with
 * every feature map swapped, a profiling pass failed, ...). */
int accudnn_tune(const struct accudnn_tune_in *in, struct accudnn_tune_out *out,
		 gms_err *err);

#endif
