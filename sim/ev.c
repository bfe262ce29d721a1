/* ev.c - 4-ary min-heap of events; see ev.h. */
#include "ev.h"

#include <assert.h>
#include <stdio.h>
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

/* Record the first refused event. Returns -1. */
static int refuse(struct ev_queue *q, sim_time_t t, sim_time_t d)
{
	if (!q->bad) {
		q->bad = true;
		q->bad_now = q->now;
		q->bad_at = t;
		q->bad_d = d;
	}
	return -1;
}

int ev_at(struct ev_queue *q, sim_time_t t, ev_fn fn, void *obj,
	  uint64_t arg)
{
	if (t < q->now || sim_time_over(t))
		return refuse(q, t, -1);
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

int ev_after(struct ev_queue *q, sim_time_t d, ev_fn fn, void *obj,
	     uint64_t arg)
{
	if (d < 0)
		return refuse(q, q->now + d, d); /* now >= 0 > now + d */
	sim_time_t t = sim_time_add(q->now, d);
	if (sim_time_over(t))
		return refuse(q, t, d);
	return ev_at(q, t, fn, obj, arg);
}

const char *ev_bad_text(const struct ev_queue *q, char *buf, size_t n)
{
	if (!sim_time_over(q->bad_at))
		snprintf(buf, n,
			 "event scheduled in the past (at %lld ns, now %lld "
			 "ns)",
			 (long long)q->bad_at, (long long)q->bad_now);
	else if (q->bad_d < 0)
		snprintf(buf, n,
			 "simulated time passes its limit of 2^62 ns (about "
			 "146 years): an event at %lld ns was asked for at "
			 "%.6g s",
			 (long long)q->bad_at, (double)q->bad_now / 1e9);
	else if (sim_time_over(q->bad_d))
		snprintf(buf, n,
			 "simulated time passes its limit of 2^62 ns (about "
			 "146 years): at %.6g s a kernel, copy or host call "
			 "of more than 2^62 ns was issued; check the op times "
			 "and FLOPs and the profile's rates",
			 (double)q->bad_now / 1e9);
	else
		snprintf(buf, n,
			 "simulated time passes its limit of 2^62 ns (about "
			 "146 years): at %.6g s a kernel, copy or host call "
			 "of %.6g s was issued; check the op times and FLOPs "
			 "and the profile's rates",
			 (double)q->bad_now / 1e9, (double)q->bad_d / 1e9);
	return buf;
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
	while ((!stop || !*stop) && !q->bad && ev_pop(q, &e)) {
		e.fn(e.obj, e.arg);
		n++;
	}
	q->n_fired += n;
	return n;
}
