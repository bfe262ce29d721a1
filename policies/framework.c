/*
 * framework.c - the baseline: what a framework does with no memory
 * policy at all (TF-ori, Caffe, "base" in the papers).
 *
 * No offload, no recomputation: every tensor stays on the device from its
 * producer to its last reader, and an allocation that does not fit ends
 * the run as OOM. Two presets (Capuchin section 2.2):
 *   graph  TensorFlow graph mode / Caffe: ops marked in-place (ReLU) write
 *          over their input when nothing reads the input later, and every
 *          tensor is freed after its last use;
 *   eager  PyTorch / TF eager: no in-place rewriting, and parameter
 *          gradients (.grad) stay allocated until the iteration ends.
 */
#include "../sim/ex.h"
#include "pol.h"

#include <stddef.h>

struct framework_params {
	int mode; /* enum ex_mode */
};

static const struct prm_def framework_params[] = {
	{"mode", PRM_ENUM, "graph", 0, 0, ex_mode_names,
	 "graph (in-place where safe) or eager (no in-place, gradients "
	 "held to the iteration end)",
	 offsetof(struct framework_params, mode)},
	PRM_END,
};

static int framework_plan(struct pol *p, struct ex *ex, gms_err *err)
{
	const struct framework_params *prm = p->params;
	if (ex_set_mode(ex, (enum ex_mode)prm->mode) < 0)
		return gms_errf(err, "%s", ex_last_error(ex));
	return 0;
}

const struct pol_ops pol_framework_ops = {
	.name = "framework",
	.summary = "no offload, no recompute: the framework baseline "
		   "(graph or eager)",
	.params = framework_params,
	.params_size = sizeof(struct framework_params),
	.plan = framework_plan,
	.on_alloc_fail = ex_fallback_or_fail,
};
