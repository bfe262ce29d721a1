/*
 * eng.h - the GPU's engines: one compute stream and two copy engines.
 *
 * Each engine is a FIFO of work items, like a CUDA stream:
 *   KERNEL  runs for a fixed duration on the compute stream;
 *   COPY    moves bytes between host and device: latency, then a transfer
 *           at the link's bandwidth (pinned or pageable); while both
 *           directions transfer at once, each runs at bandwidth x derate;
 *   WAIT    holds the queue until an event fires (cudaStreamWaitEvent);
 *   MARK    takes no time: an event recorded behind the queued work;
 * and any item may signal an event when it completes (cudaEventRecord
 * after it). Events are how work on one queue waits for another, and how
 * the executor (the host) waits for the device.
 *
 * With `shared_engine` both copy directions use one FIFO.
 *
 * Items run in issue order per queue; queues run concurrently. All times
 * are integers; a transfer whose rate changes mid-way (derate) has its
 * remaining bytes recomputed and its completion rescheduled, and the stale
 * completion is ignored by a generation check. Completions are scheduled
 * with ev_after: one past the clock's limit (SIM_TIME_LIMIT) is refused
 * and flagged in the event queue (evq->bad), whose runner stops.
 */
#ifndef GMS_ENG_H
#define GMS_ENG_H

#include "ev.h"
#include "hw.h"

/* The queues. ENG_HOST is the host CPU's compression threads (vDNN++
 * section IV-C): KERNEL items only, one tensor at a time, all threads on
 * it ("these threads compress different parts of the offloaded network
 * layer data in parallel"). */
enum eng_q { ENG_COMPUTE, ENG_H2D, ENG_D2H, ENG_HOST, ENG_Q_COUNT };

typedef uint32_t eng_event; /* index into the engine's event table */
#define ENG_EVENT_NONE UINT32_MAX

enum eng_item_type {
	ENG_KERNEL, /* occupies the compute stream for `duration` */
	ENG_COPY,   /* occupies a copy engine: latency + bytes / bandwidth */
	ENG_WAIT,   /* holds its queue until event `wait` has fired */
	ENG_MARK,   /* takes no time; used to record an event (eng_record) */
};

/* Called when an item completes (or, for trace hooks, starts). */
typedef void (*eng_done_fn)(void *obj, uint64_t arg);

struct eng_item {
	enum eng_item_type type; /* what it is */
	enum eng_q q;		 /* queue it was issued to (copy: direction) */
	sim_time_t duration;	 /* KERNEL: run time */
	uint64_t bytes;		 /* COPY: bytes moved */
	bool pinned;		 /* COPY: host side is pinned memory */
	eng_event wait;		 /* WAIT: event to wait for */
	eng_event signal;	 /* event to fire at completion, or NONE */
	eng_done_fn done;	 /* called at completion, may be NULL */
	void *obj;		 /* first argument of done */
	uint64_t arg;		 /* second argument of done */
	uint32_t tag;		 /* caller's label (op/tensor id) for traces */
	uint8_t kind;		 /* caller's label (what the item is) */
	uint64_t serial;	 /* issue number, set by eng_issue (0, 1, ...
				    over the engine's life): names the item
				    in its span, for observers */
};

/* Observer of every item issued (q: the queue it went to; the item as
 * queued, with its serial), for schedule logs. */
typedef void (*eng_issue_fn)(void *obj, enum eng_q q,
			     const struct eng_item *it);

/* Observer of every KERNEL and COPY interval, for timelines and stats. */
typedef void (*eng_span_fn)(void *obj, enum eng_q q,
			    const struct eng_item *it, sim_time_t start,
			    sim_time_t end);

struct eng_fifo {
	struct eng_item *ring; /* ring buffer of queued items */
	size_t head, n, cap;   /* first item, count, capacity (power of 2) */
	bool running;	       /* head item is executing */
	sim_time_t start;      /* when the head item started */
	/* COPY in transfer phase (derate bookkeeping) */
	bool xfer;	       /* head copy is past its latency */
	double rate;	       /* current bytes/ns of the transfer */
	double left;	       /* bytes left at `since` */
	sim_time_t since;      /* when `left` was computed */
	uint64_t gen;	       /* bumps when the completion is rescheduled */
	sim_time_t busy;       /* total time items ran on this queue */
	uint64_t bytes;	       /* total bytes copied by this queue */
};

struct eng_event_rec {
	bool done;	   /* fired */
	sim_time_t when;   /* time it fired */
	enum eng_q src;	   /* queue whose item signals it */
};

struct eng {
	struct ev_queue *evq;	    /* the simulation's event queue */
	const struct hw_profile *hw; /* link figures */
	struct eng_fifo f[ENG_Q_COUNT]; /* compute, H2D, D2H (D2H unused
					   when shared), host CPU */
	struct eng_event_rec *evt;  /* events by id */
	size_t n_evt, cap_evt;	    /* events made since the last reset */
	eng_done_fn on_event;	    /* told of every event that fires */
	void *on_event_obj;	    /* its first argument */
	eng_span_fn on_span;	    /* optional observer of intervals */
	void *on_span_obj;	    /* its first argument */
	eng_issue_fn on_issue;	    /* optional observer of issues */
	void *on_issue_obj;	    /* its first argument */
	uint64_t n_issued;	    /* items issued so far (next serial) */
	bool oom;		    /* an allocation failed inside the engine */
};

int eng_init(struct eng *e, struct ev_queue *evq,
	     const struct hw_profile *hw);
void eng_fini(struct eng *e);

/* A new, pending event that `src`'s item will fire (src is used to
 * attribute waits on it: waiting for an H2D event is an H2D stall). */
eng_event eng_event_new(struct eng *e, enum eng_q src);
static inline bool eng_event_done(const struct eng *e, eng_event ev)
{
	return ev == ENG_EVENT_NONE || e->evt[ev].done;
}
static inline enum eng_q eng_event_src(const struct eng *e, eng_event ev)
{
	return e->evt[ev].src;
}
/* Forget all events (only when every queue is idle). */
void eng_reset_events(struct eng *e);

/* Enqueue an item (copied). The queue is it->q, except that with a shared
 * copy engine D2H items go to the H2D queue. Returns 0 or -1 (memory). */
int eng_issue(struct eng *e, const struct eng_item *it);

/* An event fired when everything queued so far on q has completed; fires
 * at once (already done) when q is idle. */
eng_event eng_record(struct eng *e, enum eng_q q);

/* Fire pending event ev now from outside the queues (the host finished
 * something device work waits for, like a driver call it was blocked in);
 * queues waiting on it start. ev must come from eng_event_new. */
void eng_fire(struct eng *e, eng_event ev);

/* True when no queue has work. */
bool eng_idle(const struct eng *e);
static inline bool eng_q_idle(const struct eng *e, enum eng_q q)
{
	return e->f[q].n == 0;
}

#endif
