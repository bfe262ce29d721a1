/*
 * ev.h - the event queue: a 4-ary min-heap keyed by (time, sequence).
 *
 * Every scheduled event gets the next sequence number, so events at the
 * same time run in the order they were scheduled (as libuv's timer heap
 * does) and a run is deterministic. Time never goes backwards: scheduling
 * in the past is a bug and asserts.
 *
 * An event is a function and two words of argument; the queue knows
 * nothing about what the event means.
 */
#ifndef GMS_EV_H
#define GMS_EV_H

#include "common.h"

typedef void (*ev_fn)(void *obj, uint64_t arg);

struct ev {
	sim_time_t time; /* when it fires */
	uint64_t seq;	 /* scheduling order; breaks ties */
	ev_fn fn;	 /* what to call */
	void *obj;	 /* first argument of fn */
	uint64_t arg;	 /* second argument of fn */
};

struct ev_queue {
	struct ev *heap;  /* 4-ary heap, heap[0] is the earliest */
	size_t n;	  /* events pending */
	size_t cap;	  /* allocated slots */
	uint64_t seq;	  /* next sequence number */
	sim_time_t now;	  /* time of the event being run (or last run) */
	uint64_t n_fired; /* events run so far */
};

void ev_init(struct ev_queue *q);
void ev_fini(struct ev_queue *q);

/* Schedule fn(obj, arg) at time t >= now. Returns 0, or -1 on allocation
 * failure. */
int ev_at(struct ev_queue *q, sim_time_t t, ev_fn fn, void *obj,
	  uint64_t arg);

/* Remove and return the earliest event into *e, advancing now to its
 * time. Returns false when empty. */
bool ev_pop(struct ev_queue *q, struct ev *e);

/* Pop and run events until the queue is empty or *stop becomes true
 * (checked after each event; stop may be NULL). Returns events run. */
uint64_t ev_run(struct ev_queue *q, const bool *stop);

static inline sim_time_t ev_now(const struct ev_queue *q) { return q->now; }
static inline bool ev_empty(const struct ev_queue *q) { return q->n == 0; }

#endif
