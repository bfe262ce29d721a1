/*
 * ev.h - the event queue: a 4-ary min-heap keyed by (time, sequence).
 *
 * Every scheduled event gets the next sequence number, so events at the
 * same time run in the order they were scheduled (as libuv's timer heap
 * does) and a run is deterministic. Time never goes backwards and never
 * passes SIM_TIME_LIMIT (common.h): an event in the past (a bug) or
 * beyond the limit (a duration too long for the clock) is not scheduled;
 * the queue records the first such refusal in `bad` and its runner
 * (ev_run, the executor) stops and reports it. No assert: a run with
 * absurd inputs fails as a run, with NDEBUG or without.
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
	bool bad;	  /* an event was refused (past or beyond
			     SIM_TIME_LIMIT); the first one is below */
	sim_time_t bad_now; /* the time it was asked at */
	sim_time_t bad_at;  /* the time it asked for (SIM_TIME_OVER when a
			       sum passed the limit) */
	sim_time_t bad_d;   /* ev_after: the duration asked (SIM_TIME_OVER
			       for one past the limit itself); else -1 */
};

void ev_init(struct ev_queue *q);
void ev_fini(struct ev_queue *q);

/* Schedule fn(obj, arg) at time t, now <= t <= SIM_TIME_LIMIT. Returns 0,
 * or -1 on allocation failure or a time out of that range (then `bad` is
 * set and nothing is scheduled). */
int ev_at(struct ev_queue *q, sim_time_t t, ev_fn fn, void *obj,
	  uint64_t arg);

/* Schedule fn(obj, arg) a duration d >= 0 from now, the sum checked
 * (sim_time_add): past SIM_TIME_LIMIT it is refused like ev_at's. */
int ev_after(struct ev_queue *q, sim_time_t d, ev_fn fn, void *obj,
	     uint64_t arg);

/* "simulated time passes its limit ..." or "event scheduled in the past
 * ..." for a queue whose `bad` is set, into buf (size n); returns buf. */
const char *ev_bad_text(const struct ev_queue *q, char *buf, size_t n);

/* Remove and return the earliest event into *e, advancing now to its
 * time. Returns false when empty. */
bool ev_pop(struct ev_queue *q, struct ev *e);

/* Pop and run events until the queue is empty, *stop becomes true
 * (checked after each event; stop may be NULL) or an event was refused
 * (`bad`). Returns events run. */
uint64_t ev_run(struct ev_queue *q, const bool *stop);

static inline sim_time_t ev_now(const struct ev_queue *q) { return q->now; }
static inline bool ev_empty(const struct ev_queue *q) { return q->n == 0; }

#endif
