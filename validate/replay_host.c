/*
 * replay_host.c - the host backend of the replay core (replay_host.h):
 * threads as streams, busy-wait kernels, memcpy copies.
 */
#include "replay_host.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One enqueued item (struct rp_issue, less the record). */
struct hq_item {
	uint32_t slot;	  /* where its span goes */
	uint32_t wait[RP_MAX_WAITS]; /* dense events to wait for */
	uint32_t n_wait;  /* how many of wait[] */
	uint32_t signal;  /* dense event to set, or SCH_NONE */
	int64_t spin_ns;  /* busy wait (predicted / time_div) */
	uint64_t addr;	  /* COPY: model address */
	size_t copy;	  /* COPY: bytes to memcpy (0 for a kernel) */
	bool h2d;	  /* COPY: into the arena */
};

/* A stream: a FIFO served by one thread. */
struct hq {
	struct hq_item *q;  /* items, [head, n) pending */
	size_t head, n, cap; /* first pending, count, capacity */
	bool busy;	    /* the thread is running an item */
	pthread_t th;	    /* its thread */
	struct rp_host *h;  /* back pointer */
	unsigned char *buf; /* host buffer of copy_cap bytes */
};

struct rp_host {
	struct rp_host_cfg cfg;	 /* as given */
	struct rp_backend b;	 /* hooks */
	unsigned char *arena;	 /* the device arena */
	pthread_mutex_t mu;	 /* guards everything below */
	pthread_cond_t cv;	 /* any change */
	bool quit;		 /* threads stop */
	int n_threads;		 /* threads started */
	struct hq s[RP_STREAM_COUNT]; /* the streams */
	uint64_t tick;		 /* the logical clock */
	struct timespec t0;	 /* iteration start */
	int iter;		 /* current iteration */
	bool *ev;		 /* dense events fired, this iteration */
	size_t cap_ev;		 /* its capacity */
	struct rp_host_span **spans; /* per iteration, per slot */
	uint32_t *n_spans;	 /* slots per iteration */
	int n_iters;		 /* iterations begun */
	int cap_iters;		 /* capacity of spans/n_spans */
};

static int64_t ns_since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)(t.tv_sec - t0->tv_sec) * 1000000000 +
	       (t.tv_nsec - t0->tv_nsec);
}

static void spin(int64_t ns)
{
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (ns_since(&t0) < ns)
		;
}

/* Have all of an item's waits fired? (under h->mu) */
static bool waits_fired(const struct rp_host *h, const struct hq_item *it)
{
	for (uint32_t i = 0; i < it->n_wait; i++)
		if (!h->ev[it->wait[i]])
			return false;
	return true;
}

static void *stream_main(void *arg)
{
	struct hq *s = arg;
	struct rp_host *h = s->h;
	pthread_mutex_lock(&h->mu);
	for (;;) {
		while (!h->quit && (s->head == s->n ||
				    !waits_fired(h, &s->q[s->head])))
			pthread_cond_wait(&h->cv, &h->mu);
		if (h->quit)
			break;
		struct hq_item it = s->q[s->head];
		struct rp_host_span *sp = &h->spans[h->iter][it.slot];
		sp->tick0 = ++h->tick;
		sp->ns0 = ns_since(&h->t0);
		s->busy = true;
		pthread_mutex_unlock(&h->mu);
		if (it.copy) {
			unsigned char *dev = h->arena + it.addr;
			if (it.h2d)
				memcpy(dev, s->buf, it.copy);
			else
				memcpy(s->buf, dev, it.copy);
		}
		spin(it.spin_ns);
		pthread_mutex_lock(&h->mu);
		sp->tick1 = ++h->tick;
		sp->ns1 = ns_since(&h->t0);
		sp->done = true;
		if (it.signal != SCH_NONE)
			h->ev[it.signal] = true;
		s->head++;
		s->busy = false;
		pthread_cond_broadcast(&h->cv);
	}
	pthread_mutex_unlock(&h->mu);
	return NULL;
}

/* ---- hooks --------------------------------------------------------------- */

static int h_iter_begin(void *obj, int iter, uint32_t n_slots,
			uint32_t n_events, gms_err *err)
{
	struct rp_host *h = obj;
	int rc = -1;
	/* the streams are idle (iter_end), but they read what follows */
	pthread_mutex_lock(&h->mu);
	if (iter != h->n_iters) {
		gms_errf(err, "replay-host: iteration %d after %d", iter,
			 h->n_iters - 1);
		goto out;
	}
	if (h->n_iters == h->cap_iters) {
		int cap = h->cap_iters ? 2 * h->cap_iters : 4;
		struct rp_host_span **p =
			realloc(h->spans, (size_t)cap * sizeof *p);
		if (p)
			h->spans = p;
		uint32_t *q = p ? realloc(h->n_spans, (size_t)cap * sizeof *q)
				: NULL;
		if (!q) {
			gms_errf(err, "replay-host: out of memory");
			goto out;
		}
		h->n_spans = q;
		h->cap_iters = cap;
	}
	if (n_events > h->cap_ev) {
		bool *e = realloc(h->ev, n_events * sizeof *e);
		if (!e) {
			gms_errf(err, "replay-host: out of memory");
			goto out;
		}
		h->ev = e;
		h->cap_ev = n_events;
	}
	struct rp_host_span *sp = calloc(n_slots ? n_slots : 1, sizeof *sp);
	if (!sp) {
		gms_errf(err, "replay-host: out of memory");
		goto out;
	}
	memset(h->ev, 0, h->cap_ev * sizeof *h->ev);
	h->spans[iter] = sp;
	h->n_spans[iter] = n_slots;
	h->n_iters++;
	h->iter = iter;
	for (int i = 0; i < RP_STREAM_COUNT; i++)
		h->s[i].head = h->s[i].n = 0;
	clock_gettime(CLOCK_MONOTONIC, &h->t0);
	rc = 0;
out:
	pthread_mutex_unlock(&h->mu);
	return rc;
}

static int h_issue(void *obj, const struct rp_issue *is, gms_err *err)
{
	struct rp_host *h = obj;
	struct hq *s = &h->s[is->s];
	struct hq_item it = {.slot = is->slot, .n_wait = is->n_wait,
			     .signal = is->signal,
			     .spin_ns = is->pred_ns / h->cfg.time_div,
			     .addr = is->addr, .h2d = is->s == RP_H2D};
	memcpy(it.wait, is->wait, sizeof it.wait);
	if (is->slot >= h->n_spans[h->iter])
		return gms_errf(err, "replay-host: slot %u out of range",
				is->slot);
	if (is->it->kind == SCH_COPY) {
		it.copy = is->it->size < h->cfg.copy_cap ? is->it->size
							  : h->cfg.copy_cap;
		if (is->addr + it.copy > h->cfg.arena)
			return gms_errf(err, "replay-host: copy outside the "
					     "arena");
	}
	pthread_mutex_lock(&h->mu);
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 16;
		struct hq_item *p = realloc(s->q, cap * sizeof *p);
		if (!p) {
			pthread_mutex_unlock(&h->mu);
			return gms_errf(err, "replay-host: out of memory");
		}
		s->q = p;
		s->cap = cap;
	}
	s->q[s->n++] = it;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
	return 0;
}

static int h_wait_slot(void *obj, uint32_t slot, gms_err *err)
{
	struct rp_host *h = obj;
	(void)err;
	pthread_mutex_lock(&h->mu);
	while (!h->spans[h->iter][slot].done)
		pthread_cond_wait(&h->cv, &h->mu);
	pthread_mutex_unlock(&h->mu);
	return 0;
}

static int h_wait_event(void *obj, uint32_t ev, gms_err *err)
{
	struct rp_host *h = obj;
	(void)err;
	pthread_mutex_lock(&h->mu);
	while (!h->ev[ev])
		pthread_cond_wait(&h->cv, &h->mu);
	pthread_mutex_unlock(&h->mu);
	return 0;
}

/* The core checked the block against the arena; placement is the
 * model's, so there is nothing to allocate. */
static int h_alloc(void *obj, const struct sch_item *it, gms_err *err)
{
	struct rp_host *h = obj;
	if (it->addr + it->size > h->cfg.arena)
		return gms_errf(err, "replay-host: block outside the arena");
	return 0;
}

static int h_free(void *obj, const struct sch_item *it, enum rp_stream s,
		  gms_err *err)
{
	(void)obj, (void)it, (void)s, (void)err;
	return 0;
}

static int h_iter_end(void *obj, int64_t *span_ns, gms_err *err)
{
	struct rp_host *h = obj;
	(void)err;
	pthread_mutex_lock(&h->mu);
	for (int i = 0; i < RP_STREAM_COUNT; i++)
		while (h->s[i].head < h->s[i].n || h->s[i].busy)
			pthread_cond_wait(&h->cv, &h->mu);
	/* the iteration ends when the last item does (queues drained) */
	int64_t end = 0;
	for (uint32_t i = 0; i < h->n_spans[h->iter]; i++)
		if (h->spans[h->iter][i].ns1 > end)
			end = h->spans[h->iter][i].ns1;
	pthread_mutex_unlock(&h->mu);
	*span_ns = end;
	return 0;
}

static int h_times(void *obj, uint32_t slot, int64_t *s, int64_t *e)
{
	struct rp_host *h = obj;
	const struct rp_host_span *sp = rp_host_span(h, h->iter, slot);
	if (!sp || !sp->done)
		return -1;
	*s = sp->ns0;
	*e = sp->ns1;
	return 0;
}

/* ---- life ------------------------------------------------------------------ */

struct rp_host *rp_host_new(const struct rp_host_cfg *cfg, gms_err *err)
{
	if (cfg->time_div < 1 || cfg->arena == 0) {
		gms_errf(err, "replay-host: time_div must be >= 1 and the "
			      "arena non-empty");
		return NULL;
	}
	struct rp_host *h = calloc(1, sizeof *h);
	if (!h) {
		gms_errf(err, "replay-host: out of memory");
		return NULL;
	}
	h->cfg = *cfg;
	h->b = (struct rp_backend){h, h_iter_begin, h_issue, h_wait_slot,
				   h_wait_event, h_alloc, h_free, h_iter_end,
				   h_times};
	h->arena = calloc(1, cfg->arena);
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->cv, NULL);
	if (!h->arena)
		goto fail;
	for (int i = 0; i < RP_STREAM_COUNT; i++) {
		h->s[i].h = h;
		h->s[i].buf = malloc(cfg->copy_cap ? cfg->copy_cap : 1);
		if (!h->s[i].buf)
			goto fail;
		memset(h->s[i].buf, RP_HOST_FILL, cfg->copy_cap);
	}
	for (int i = 0; i < RP_STREAM_COUNT; i++) {
		if (pthread_create(&h->s[i].th, NULL, stream_main, &h->s[i]))
			goto fail;
		h->n_threads++;
	}
	return h;
fail:
	rp_host_free(h);
	gms_errf(err, "replay-host: out of memory or threads");
	return NULL;
}

const struct rp_backend *rp_host_backend(struct rp_host *h)
{
	return &h->b;
}

const struct rp_host_span *rp_host_span(const struct rp_host *h, int iter,
					uint32_t slot)
{
	if (iter < 0 || iter >= h->n_iters || slot >= h->n_spans[iter])
		return NULL;
	return &h->spans[iter][slot];
}

const unsigned char *rp_host_arena(const struct rp_host *h)
{
	return h->arena;
}

void rp_host_free(struct rp_host *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->mu);
	h->quit = true;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
	for (int i = 0; i < h->n_threads; i++)
		pthread_join(h->s[i].th, NULL);
	for (int i = 0; i < RP_STREAM_COUNT; i++) {
		free(h->s[i].q);
		free(h->s[i].buf);
	}
	for (int i = 0; i < h->n_iters; i++)
		free(h->spans[i]);
	free(h->spans);
	free(h->n_spans);
	free(h->ev);
	free(h->arena);
	pthread_mutex_destroy(&h->mu);
	pthread_cond_destroy(&h->cv);
	free(h);
}
