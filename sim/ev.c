/* ev.c - 4-ary min-heap of events; see ev.h. */
#include "ev.h"

#include <assert.h>
#include <stdlib.h>

void ev_init(struct ev_queue *q)
{
	*q = (struct ev_queue){0};
}

void ev_fini(struct ev_queue *q)
{
	free(q->heap);
	*q = (struct ev_queue){0};
}

static inline bool ev_before(const struct ev *a, const struct ev *b)
{
	return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

int ev_at(struct ev_queue *q, sim_time_t t, ev_fn fn, void *obj,
	  uint64_t arg)
{
	assert(t >= q->now && "event scheduled in the past");
	if (q->n == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 256;
		struct ev *h = realloc(q->heap, cap * sizeof *h);
		if (!h)
			return -1;
		q->heap = h;
		q->cap = cap;
	}
	struct ev e = {t, q->seq++, fn, obj, arg};
	size_t i = q->n++;
	while (i > 0) { /* sift up */
		size_t p = (i - 1) / 4;
		if (!ev_before(&e, &q->heap[p]))
			break;
		q->heap[i] = q->heap[p];
		i = p;
	}
	q->heap[i] = e;
	return 0;
}

bool ev_pop(struct ev_queue *q, struct ev *out)
{
	if (q->n == 0)
		return false;
	*out = q->heap[0];
	struct ev last = q->heap[--q->n];
	size_t n = q->n, i = 0;
	for (;;) { /* sift the last element down from the root */
		size_t c = 4 * i + 1, best = c;
		if (c >= n)
			break;
		size_t end = c + 4 < n ? c + 4 : n;
		for (size_t k = c + 1; k < end; k++)
			if (ev_before(&q->heap[k], &q->heap[best]))
				best = k;
		if (!ev_before(&q->heap[best], &last))
			break;
		q->heap[i] = q->heap[best];
		i = best;
	}
	if (n > 0)
		q->heap[i] = last;
	assert(out->time >= q->now);
	q->now = out->time;
	return true;
}

uint64_t ev_run(struct ev_queue *q, const bool *stop)
{
	uint64_t n = 0;
	struct ev e;
	while ((!stop || !*stop) && ev_pop(q, &e)) {
		e.fn(e.obj, e.arg);
		n++;
	}
	q->n_fired += n;
	return n;
}
