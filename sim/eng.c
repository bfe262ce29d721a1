/* eng.c - compute stream and copy engines as FIFOs of items; see eng.h. */
#include "eng.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

int eng_init(struct eng *e, struct ev_queue *evq, const struct hw_profile *hw)
{
	memset(e, 0, sizeof *e);
	e->evq = evq;
	e->hw = hw;
	for (int q = 0; q < ENG_Q_COUNT; q++) {
		e->f[q].cap = 64;
		e->f[q].ring = calloc(e->f[q].cap, sizeof(struct eng_item));
		if (!e->f[q].ring) {
			eng_fini(e);
			return -1;
		}
	}
	return 0;
}

void eng_fini(struct eng *e)
{
	for (int q = 0; q < ENG_Q_COUNT; q++)
		free(e->f[q].ring);
	free(e->evt);
	memset(e, 0, sizeof *e);
}

eng_event eng_event_new(struct eng *e, enum eng_q src)
{
	if (e->n_evt == e->cap_evt) {
		size_t cap = e->cap_evt ? e->cap_evt * 2 : 1024;
		struct eng_event_rec *v = realloc(e->evt, cap * sizeof *v);
		if (!v) {
			e->oom = true;
			return ENG_EVENT_NONE;
		}
		e->evt = v;
		e->cap_evt = cap;
	}
	e->evt[e->n_evt] = (struct eng_event_rec){false, 0, src};
	return (eng_event)e->n_evt++;
}

void eng_reset_events(struct eng *e)
{
	assert(eng_idle(e));
	e->n_evt = 0;
}

bool eng_idle(const struct eng *e)
{
	for (int q = 0; q < ENG_Q_COUNT; q++)
		if (e->f[q].n)
			return false;
	return true;
}

static inline struct eng_item *head(struct eng_fifo *f)
{
	return &f->ring[f->head];
}

static void kick(struct eng *e, enum eng_q q);

static void fire(struct eng *e, eng_event ev)
{
	if (ev == ENG_EVENT_NONE)
		return;
	assert(!e->evt[ev].done);
	e->evt[ev].done = true;
	e->evt[ev].when = ev_now(e->evq);
	for (int q = 0; q < ENG_Q_COUNT; q++)
		kick(e, (enum eng_q)q);
	if (e->on_event)
		e->on_event(e->on_event_obj, ev);
}

void eng_fire(struct eng *e, eng_event ev)
{
	fire(e, ev);
}

/* Remove the head of q, then tell whoever waits for it. */
static void complete(struct eng *e, enum eng_q q)
{
	struct eng_fifo *f = &e->f[q];
	struct eng_item it = *head(f);
	sim_time_t now = ev_now(e->evq);
	if (it.type == ENG_KERNEL || it.type == ENG_COPY) {
		f->busy += now - f->start;
		if (it.type == ENG_COPY)
			f->bytes += it.bytes;
		if (e->on_span)
			e->on_span(e->on_span_obj, q, &it, f->start, now);
	}
	f->head = (f->head + 1) & (f->cap - 1);
	f->n--;
	f->running = false;
	f->xfer = false;
	fire(e, it.signal);
	if (it.done)
		it.done(it.obj, it.arg);
}

static double link_rate(const struct eng *e, const struct eng_item *it,
			bool other_busy)
{
	const struct hw_link *l =
		&e->hw->link[it->q == ENG_H2D ? HW_H2D : HW_D2H];
	double bw = it->pinned ? l->bw_pinned : l->bw_pageable;
	return bw * (other_busy ? l->derate : 1.0) / 1e9; /* bytes per ns */
}

static void on_kernel_done(void *obj, uint64_t arg)
{
	struct eng *e = obj;
	complete(e, (enum eng_q)arg);
	kick(e, (enum eng_q)arg);
}

/* Copy completion events carry (generation << 2 | queue); a rescheduled
 * transfer bumps the generation so its old completion is ignored. */
static void on_copy_done(void *obj, uint64_t arg)
{
	struct eng *e = obj;
	enum eng_q q = (enum eng_q)(arg & 3);
	if (!e->f[q].running || (arg >> 2) != e->f[q].gen)
		return; /* stale: the transfer was rescheduled */
	complete(e, q);
	enum eng_q other = q == ENG_H2D ? ENG_D2H : ENG_H2D;
	if (!e->hw->shared_engine && e->f[other].xfer && !e->f[q].xfer) {
		/* the other direction now has the link to itself (unless the
		 * completion already started this queue's next transfer) */
		struct eng_fifo *o = &e->f[other];
		sim_time_t now = ev_now(e->evq);
		o->left -= o->rate * (double)(now - o->since);
		if (o->left < 0)
			o->left = 0;
		o->since = now;
		o->rate = link_rate(e, head(o), false);
		o->gen++;
		ev_after(e->evq, sim_round_ns(o->left / o->rate),
			 on_copy_done, e, o->gen << 2 | other);
	}
	kick(e, q);
}

/* Start (or re-rate) the transfer phase of q's head copy. */
static void start_xfer(struct eng *e, enum eng_q q)
{
	struct eng_fifo *f = &e->f[q];
	sim_time_t now = ev_now(e->evq);
	enum eng_q other = q == ENG_H2D ? ENG_D2H : ENG_H2D;
	bool concurrent = !e->hw->shared_engine && e->f[other].xfer;
	f->xfer = true;
	f->left = (double)head(f)->bytes;
	f->since = now;
	f->rate = link_rate(e, head(f), concurrent);
	f->gen++;
	ev_after(e->evq, sim_round_ns(f->left / f->rate), on_copy_done, e,
		 f->gen << 2 | q);
	if (concurrent) { /* the other direction slows down from now on */
		struct eng_fifo *o = &e->f[other];
		o->left -= o->rate * (double)(now - o->since);
		if (o->left < 0)
			o->left = 0;
		o->since = now;
		o->rate = link_rate(e, head(o), true);
		o->gen++;
		ev_after(e->evq, sim_round_ns(o->left / o->rate),
			 on_copy_done, e, o->gen << 2 | other);
	}
}

static void on_copy_latency(void *obj, uint64_t arg)
{
	struct eng *e = obj;
	start_xfer(e, (enum eng_q)arg);
}

/* Start whatever can start at the head of q. */
static void kick(struct eng *e, enum eng_q q)
{
	struct eng_fifo *f = &e->f[q];
	while (f->n && !f->running) {
		struct eng_item *it = head(f);
		sim_time_t now = ev_now(e->evq);
		switch (it->type) {
		case ENG_WAIT:
			if (!eng_event_done(e, it->wait))
				return;
			/* fall through */
		case ENG_MARK:
			f->running = true;
			complete(e, q);
			continue;
		case ENG_KERNEL:
			f->running = true;
			f->start = now;
			ev_after(e->evq, it->duration, on_kernel_done, e, q);
			return;
		case ENG_COPY: {
			f->running = true;
			f->start = now;
			const struct hw_link *l =
				&e->hw->link[it->q == ENG_H2D ? HW_H2D : HW_D2H];
			if (l->latency > 0)
				ev_after(e->evq, l->latency,
					 on_copy_latency, e, q);
			else
				start_xfer(e, q);
			return;
		}
		}
	}
}

int eng_issue(struct eng *e, const struct eng_item *it)
{
	enum eng_q q = it->q;
	assert(it->type != ENG_COPY || q != ENG_COMPUTE);
	if (q == ENG_D2H && e->hw->shared_engine)
		q = ENG_H2D;
	struct eng_fifo *f = &e->f[q];
	if (f->n == f->cap) {
		size_t cap = f->cap * 2;
		struct eng_item *r = malloc(cap * sizeof *r);
		if (!r)
			return -1;
		for (size_t i = 0; i < f->n; i++)
			r[i] = f->ring[(f->head + i) & (f->cap - 1)];
		free(f->ring);
		f->ring = r;
		f->head = 0;
		f->cap = cap;
	}
	struct eng_item *slot = &f->ring[(f->head + f->n) & (f->cap - 1)];
	*slot = *it;
	slot->serial = e->n_issued++;
	f->n++;
	if (e->on_issue)
		e->on_issue(e->on_issue_obj, q, slot);
	kick(e, q);
	return 0;
}

eng_event eng_record(struct eng *e, enum eng_q q)
{
	/* the event keeps q as its source (stalls on it are q's), while
	 * eng_issue puts the mark on the shared queue if there is one */
	eng_event ev = eng_event_new(e, q);
	if (ev == ENG_EVENT_NONE)
		return ev;
	struct eng_item it = {.type = ENG_MARK, .q = q, .signal = ev,
			      .wait = ENG_EVENT_NONE};
	if (eng_issue(e, &it) < 0) {
		e->oom = true;
		return ENG_EVENT_NONE;
	}
	return ev;
}
