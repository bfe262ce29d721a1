/*
 * framework.c - the baseline: what a framework does with no memory
 * policy at all (TF-ori, Caffe, "base" in the papers).
 *
 * No offload, no recomputation: every tensor stays on the device from its
 * producer to its last reader (or its release point, or for good when the
 * workload holds it), and an allocation that does not fit ends the run as
 * OOM. What the framework keeps, frees and runs in place is the
 * workload's framework personality (tf-graph, tf-eager, pytorch, caffe;
 * workloads/wl_gen.h), so this policy, like every other, is the same
 * whatever the framework: README, "Framework personalities".
 */
#include "../sim/ex.h"
#include "pol.h"

const struct pol_ops pol_framework_ops = {
	.name = "framework",
	.summary = "no offload, no recompute: the framework baseline (the "
		   "workload's framework personality decides what is kept)",
	.on_alloc_fail = ex_fallback_or_fail,
};
