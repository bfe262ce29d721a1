/*
 * ondemand.c - Capuchin's passive mode alone (Capuchin section 4.2 and
 * Figure 6, Tensor Access Tracker in section 5.2).
 *
 * The tracker records every tensor access of the iteration in order. When
 * an allocation fails (OOM), it evicts tensors found in the access list:
 * each eviction copies the tensor to host memory synchronously (the
 * executor waits for the copy, a D2H stall) and releases its block. When
 * an evicted tensor is accessed again ("access failure") the executor
 * copies it back before the kernel runs (an H2D stall) -- that part is the
 * executor's default.
 *
 * Which tensors, Capuchin section 5.2: "When an OOM is detected, TAT will
 * look for one or multiple tensors with an approximate size to be evicted
 * in tensor access list from the beginning until the current allocation is
 * successful." The paper does not say how close "approximate" is. Here
 * (evict=size, the default) a tensor is of approximately the requested
 * size when request <= bytes < 2 * request: at least the request, so its
 * block alone can hold it, and less than twice it, the window in which
 * TensorFlow's BFC allocator (Capuchin is built on TensorFlow 1.11) hands
 * a free chunk out whole rather than splitting it (bfc_allocator.cc
 * FindChunkPtr, `chunk->size >= rounded_bytes * 2` -> SplitChunk; see
 * sim/mem_bfc.c), i.e. what the allocator itself treats as a fit. A round
 * evicts the first such tensor from the start of the list; when the list
 * holds none, it evicts from the start of the list whatever the sizes,
 * until the evicted bytes cover the request (the "multiple tensors" case).
 * evict=order keeps the earlier rule: always the latter, from the start of
 * the list regardless of size.
 *
 * "Until the allocation succeeds" is done in rounds: evict as above, wait
 * for those copies, retry; if fragmentation still defeats the request, the
 * next round evicts more. Candidates are resident, non-persistent tensors
 * that the op being prepared does not read and no running kernel reads.
 */
#include "../sim/ex.h"
#include "pol.h"

#include <stddef.h>
#include <stdlib.h>

/* A tensor is of approximately the requested size when request <= bytes <
 * OD_APPROX_FACTOR * request: BFC hands a chunk of under twice the
 * (rounded) request out whole (bfc_allocator.cc FindChunkPtr; mem_bfc.c). */
#define OD_APPROX_FACTOR 2

/* How a round picks the tensors to evict (the header says why). */
enum od_evict {
	OD_SIZE,  /* first tensor of approximately the requested size, else
		     as OD_ORDER (Capuchin section 5.2) */
	OD_ORDER, /* from the start of the list until the bytes cover the
		     request, regardless of size */
};
static const char *const od_evict_names[] = {"size", "order", NULL};

struct ondemand_params {
	int evict; /* enum od_evict */
};

static const struct prm_def ondemand_params[] = {
	{"evict", PRM_ENUM, "size", 0, 0, od_evict_names,
	 "which tensors an OOM evicts: size (the first in access order of "
	 "req to 2*req bytes, Capuchin 5.2; else as order) or order (from "
	 "the start of the access list until their bytes cover the request)",
	 offsetof(struct ondemand_params, evict)},
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

/* May t be evicted now? Resident, not persistent, not read by the op being
 * prepared nor by a running kernel. */
static bool evictable(const struct ex *ex, uint32_t t)
{
	return ex_tensor_state(ex, t) == TS_IN &&
	       !ex_tensor_persistent(ex, t) && !ex_tensor_busy(ex, t);
}

/* Start t's synchronous eviction; its bytes, 0 when the executor refused
 * (e.g. pinned memory exhausted). *last is the copy's event. */
static uint64_t evict(struct ondemand *s, struct ex *ex, uint32_t t,
		      eng_event *last)
{
	eng_event ev = ex_swap_out(ex, t, EX_RELEASE);
	if (ev == ENG_EVENT_NONE)
		return 0;
	*last = ev;
	s->evicted++;
	return ex_workload(ex)->tensors[t].bytes;
}

static enum ex_verdict ondemand_on_alloc_fail(struct pol *p, struct ex *ex,
					      const struct ex_alloc_req *req)
{
	struct ondemand *s = p->priv;
	const struct ondemand_params *prm = p->params;
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
	if (prm->evict == OD_SIZE) {
		/* one tensor of approximately the requested size */
		for (size_t i = s->dead; i < s->n && !freed; i++) {
			uint32_t t = s->list[i];
			uint64_t b = wl->tensors[t].bytes;
			if (b >= req->bytes &&
			    b / OD_APPROX_FACTOR < req->bytes && evictable(ex, t))
				freed = evict(s, ex, t, &last);
		}
	}
	/* none of that size (or evict=order): from the start, any size */
	for (size_t i = s->dead; i < s->n && freed < req->bytes; i++)
		if (evictable(ex, s->list[i]))
			freed += evict(s, ex, s->list[i], &last);
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
	.report = ondemand_report,
};
