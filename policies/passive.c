/*
 * passive.c - Capuchin's passive mode: the access list and on-demand
 * eviction (passive.h says which tensors and why).
 */
#include "passive.h"

#include <stdlib.h>

/* A tensor is of approximately the requested size when request <= bytes <
 * PAS_APPROX_FACTOR * request: BFC hands a chunk of under twice the
 * (rounded) request out whole (bfc_allocator.cc FindChunkPtr; mem_bfc.c). */
#define PAS_APPROX_FACTOR 2

const char *const pas_rule_names[] = {"size", "order", NULL};

void pas_reset(struct pas *s)
{
	s->n = 0;
	s->dead = 0;
	s->evicted_iter = 0;
	s->bytes_iter = 0;
}

void pas_record(struct pas *s, uint32_t t)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;
		uint32_t *l = realloc(s->list, cap * sizeof *l);
		if (!l)
			return; /* the list is a hint; a gap only costs choice */
		s->list = l;
		s->cap = cap;
	}
	s->list[s->n++] = t;
}

void pas_free(struct pas *s)
{
	free(s->list);
	s->list = NULL;
	s->n = s->cap = 0;
}

/* May t be evicted now? Resident, not persistent, not read by the op being
 * prepared nor by a running kernel. */
static bool evictable(const struct ex *ex, uint32_t t)
{
	return ex_tensor_state(ex, t) == TS_IN &&
	       !ex_tensor_persistent(ex, t) && !ex_tensor_busy(ex, t);
}

/* Start t's eviction; false when the executor refused (e.g. pinned
 * memory exhausted). */
static bool evict(struct pas *s, struct ex *ex, uint32_t t,
		  struct pas_round *r, pas_note_fn note, void *obj)
{
	eng_event ev = ex_swap_out(ex, t, EX_RELEASE);
	if (ev == ENG_EVENT_NONE)
		return false;
	if (r->first == ENG_EVENT_NONE)
		r->first = ev;
	r->last = ev;
	if (note)
		note(obj, t, ev);
	uint64_t b = ex_workload(ex)->tensors[t].bytes;
	r->bytes += b;
	s->evicted++;
	s->evicted_iter++;
	s->bytes_iter += b;
	return true;
}

struct pas_round pas_evict(struct pas *s, struct ex *ex, enum pas_rule rule,
			   uint64_t bytes, pas_note_fn note, void *obj)
{
	const struct wl_workload *wl = ex_workload(ex);
	struct pas_round r = {ENG_EVENT_NONE, ENG_EVENT_NONE, 0};
	while (s->dead < s->n &&
	       ex_tensor_state(ex, s->list[s->dead]) == TS_NONE)
		s->dead++;
	if (rule == PAS_SIZE) {
		/* one tensor of approximately the requested size */
		for (size_t i = s->dead; i < s->n && !r.bytes; i++) {
			uint32_t t = s->list[i];
			uint64_t b = wl->tensors[t].bytes;
			if (b >= bytes && b / PAS_APPROX_FACTOR < bytes &&
			    evictable(ex, t))
				evict(s, ex, t, &r, note, obj);
		}
	}
	/* none of that size (or PAS_ORDER): from the start, any size */
	for (size_t i = s->dead; i < s->n && r.bytes < bytes; i++)
		if (evictable(ex, s->list[i]))
			evict(s, ex, s->list[i], &r, note, obj);
	return r;
}
