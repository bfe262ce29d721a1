/*
 * ondemand.c - Capuchin's passive mode alone (Capuchin section 4.2 and
 * Figure 6, Tensor Access Tracker in section 5.2; policies/passive.h).
 *
 * The tracker records every tensor access of the iteration in order. When
 * an allocation fails (OOM), it evicts tensors found in the access list:
 * each eviction copies the tensor to host memory synchronously (the
 * executor waits for the copy, a D2H stall: "the tensor's memory will be
 * copied to CPU memory synchronously", section 4.2) and releases its
 * block. When an evicted tensor is accessed again ("access failure") the
 * executor copies it back before the kernel runs (an H2D stall) -- that
 * part is the executor's default.
 */
#include "../sim/ex.h"
#include "passive.h"
#include "pol.h"

#include <stddef.h>
#include <stdlib.h>

struct ondemand_params {
	int evict; /* enum pas_rule */
};

static const struct prm_def ondemand_params[] = {
	{"evict", PRM_ENUM, "size", 0, 0, pas_rule_names,
	 "which tensors an OOM evicts: size (the first in access order of "
	 "req to 2*req bytes, Capuchin 5.2; else as order) or order (from "
	 "the start of the access list until their bytes cover the request)",
	 offsetof(struct ondemand_params, evict)},
	PRM_END,
};

static int ondemand_init(struct pol *p, gms_err *err)
{
	p->priv = calloc(1, sizeof(struct pas));
	return p->priv ? 0 : gms_errf(err, "out of memory");
}

static void ondemand_fini(struct pol *p)
{
	if (p->priv)
		pas_free(p->priv);
	free(p->priv);
	p->priv = NULL;
}

static void ondemand_iter_begin(struct pol *p, struct ex *ex, int iter)
{
	(void)ex;
	(void)iter;
	pas_reset(p->priv);
}

static void ondemand_on_access(struct pol *p, struct ex *ex,
			       const struct ex_access *a)
{
	(void)ex;
	pas_record(p->priv, a->tensor);
}

static void ondemand_on_copy_done(struct pol *p, struct ex *ex,
				  const struct ex_copy *c)
{
	(void)ex;
	pas_copy_done(p->priv, c);
}

static enum ex_verdict ondemand_on_alloc_fail(struct pol *p, struct ex *ex,
					      const struct ex_alloc_req *req)
{
	const struct ondemand_params *prm = p->params;
	/* TensorFlow's cuDNN scratch allocation does not retry (it fails
	 * fast and the convolution takes its no-scratch algorithm), so a
	 * workspace never reaches the allocator's OOM path that Capuchin's
	 * passive mode hooks */
	if (req->fallback != EX_NO_FALLBACK)
		return EX_FALLBACK;
	struct pas_round r =
		pas_evict(p->priv, ex, (enum pas_rule)prm->evict, req->bytes,
			  NULL, NULL);
	if (r.last == ENG_EVENT_NONE)
		return EX_FAIL; /* nothing left to evict */
	ex_wait(ex, r.last); /* synchronous: the copies finish in FIFO order */
	return EX_RETRY;
}

static void ondemand_report(struct pol *p, FILE *out)
{
	const struct pas *s = p->priv;
	fprintf(out, "    evicted tensors    %llu\n", (unsigned long long)s->evicted);
}

const struct pol_ops pol_ondemand_ops = {
	.name = "ondemand",
	.summary = "Capuchin passive mode: on OOM evict a tensor of about the "
		   "requested size from the start of the access list, swap "
		   "back on access",
	.params = ondemand_params,
	.params_size = sizeof(struct ondemand_params),
	.init = ondemand_init,
	.fini = ondemand_fini,
	.iter_begin = ondemand_iter_begin,
	.on_access = ondemand_on_access,
	.on_alloc_fail = ondemand_on_alloc_fail,
	.on_copy_done = ondemand_on_copy_done,
	.report = ondemand_report,
};
