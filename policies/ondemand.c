/*
 * ondemand.c - Capuchin's passive mode alone (Capuchin section 4.2 and
 * Figure 6, Tensor Access Tracker in section 5.2).
 *
 * The tracker records every tensor access of the iteration in order. When
 * an allocation fails (OOM), it walks the access list from the beginning
 * and evicts tensors until the allocation succeeds: each eviction copies
 * the tensor to host memory synchronously (the executor waits for the
 * copy, a D2H stall) and releases its block. When an evicted tensor is
 * accessed again ("access failure") the executor copies it back before
 * the kernel runs (an H2D stall) -- that part is the executor's default.
 *
 * "Until the allocation succeeds" is done in rounds: evict candidates
 * until their bytes cover the request, wait for those copies, retry; if
 * fragmentation still defeats the request, the next round evicts more.
 * Candidates are resident, non-persistent tensors that the op being
 * prepared does not read and no running kernel reads.
 */
#include "../sim/ex.h"
#include "pol.h"

#include <stddef.h>
#include <stdlib.h>

struct ondemand_params {
	int mode; /* enum ex_mode, as framework */
};

static const struct prm_def ondemand_params[] = {
	{"mode", PRM_ENUM, "graph", 0, 0, ex_mode_names,
	 "framework execution mode underneath (graph or eager)",
	 offsetof(struct ondemand_params, mode)},
	PRM_END,
};

struct ondemand {
	uint32_t *list;	 /* tensor ids in access order, this iteration */
	size_t n, cap;	 /* length and capacity */
	size_t dead;	 /* list[0..dead) name tensors freed for the rest of
			    the iteration (a tensor is produced once), so
			    the scan starts here */
	uint64_t evicted; /* tensors evicted over the run */
};

static int ondemand_init(struct pol *p, gms_err *err)
{
	p->priv = calloc(1, sizeof(struct ondemand));
	return p->priv ? 0 : gms_errf(err, "out of memory");
}

static void ondemand_fini(struct pol *p)
{
	struct ondemand *s = p->priv;
	if (s)
		free(s->list);
	free(s);
	p->priv = NULL;
}

static int ondemand_plan(struct pol *p, struct ex *ex, gms_err *err)
{
	const struct ondemand_params *prm = p->params;
	if (ex_set_mode(ex, (enum ex_mode)prm->mode) < 0)
		return gms_errf(err, "%s", ex_last_error(ex));
	return 0;
}

static void ondemand_iter_begin(struct pol *p, struct ex *ex, int iter)
{
	struct ondemand *s = p->priv;
	(void)ex;
	(void)iter;
	s->n = 0;
	s->dead = 0;
}

static void ondemand_on_access(struct pol *p, struct ex *ex,
			       const struct ex_access *a)
{
	struct ondemand *s = p->priv;
	(void)ex;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;
		uint32_t *l = realloc(s->list, cap * sizeof *l);
		if (!l)
			return; /* the list is a hint; a gap only costs choice */
		s->list = l;
		s->cap = cap;
	}
	s->list[s->n++] = a->tensor;
}

static enum ex_verdict ondemand_on_alloc_fail(struct pol *p, struct ex *ex,
					      const struct ex_alloc_req *req)
{
	struct ondemand *s = p->priv;
	const struct wl_workload *wl = ex_workload(ex);
	uint64_t freed = 0;
	/* TensorFlow's cuDNN scratch allocation does not retry (it fails
	 * fast and the convolution takes its no-scratch algorithm), so a
	 * workspace never reaches the allocator's OOM path that Capuchin's
	 * passive mode hooks */
	if (req->fallback != EX_NO_FALLBACK)
		return EX_FALLBACK;
	eng_event last = ENG_EVENT_NONE;
	while (s->dead < s->n && ex_tensor_state(ex, s->list[s->dead]) == TS_NONE)
		s->dead++;
	for (size_t i = s->dead; i < s->n && freed < req->bytes; i++) {
		uint32_t t = s->list[i];
		if (ex_tensor_state(ex, t) != TS_IN ||
		    ex_tensor_persistent(ex, t) || ex_tensor_busy(ex, t))
			continue;
		eng_event ev = ex_swap_out(ex, t, EX_RELEASE);
		if (ev == ENG_EVENT_NONE)
			continue; /* e.g. pinned memory exhausted */
		last = ev;
		freed += wl->tensors[t].bytes;
		s->evicted++;
	}
	if (last == ENG_EVENT_NONE)
		return EX_FAIL; /* nothing left to evict */
	ex_wait(ex, last); /* synchronous: the copies finish in FIFO order */
	return EX_RETRY;
}

static void ondemand_report(struct pol *p, FILE *out)
{
	const struct ondemand *s = p->priv;
	fprintf(out, "    evicted tensors    %llu\n", (unsigned long long)s->evicted);
}

const struct pol_ops pol_ondemand_ops = {
	.name = "ondemand",
	.summary = "Capuchin passive mode: evict from the start of the access "
		   "list on OOM, swap back on access",
	.params = ondemand_params,
	.params_size = sizeof(struct ondemand_params),
	.init = ondemand_init,
	.fini = ondemand_fini,
	.plan = ondemand_plan,
	.iter_begin = ondemand_iter_begin,
	.on_access = ondemand_on_access,
	.on_alloc_fail = ondemand_on_alloc_fail,
	.report = ondemand_report,
};
