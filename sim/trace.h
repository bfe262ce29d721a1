/*
 * trace.h - the simulated timeline, recorded and written out.
 *
 * A tr_rec is an ex_observer (ex.h): hand tr_observer() to ex_cfg.obs and
 * it records every kernel and copy interval, every eviction and drop, and
 * every change of device memory. Then:
 *   tr_write_chrome  the Chrome trace-event JSON that Perfetto and
 *                    chrome://tracing load: one track each for compute,
 *                    H2D and D2H (complete events named after the op or
 *                    tensor), instant events for evictions, drops and
 *                    recomputations, and counters "device memory
 *                    allocated" and "device memory reserved" (bytes),
 *                    and "device memory by kind" (one series a tensor
 *                    kind, stacked by the viewer) and "host memory
 *                    holding tensors";
 *   tr_write_mem     the memory counter as a table (time_ms, allocated,
 *                    reserved) for plots.
 * Both write to a temporary file and rename it into place.
 */
#ifndef GMS_TRACE_H
#define GMS_TRACE_H

#include "../workloads/wl.h"
#include "ex.h"

/* A memory sample's breakdown (ex_mem_sample without the totals). */
struct tr_kinds {
	uint64_t kind[WL_KIND_COUNT]; /* allocated bytes by wl_kind */
	uint64_t host;		      /* host bytes holding tensors */
};

/* One recorded thing. */
struct tr_event {
	sim_time_t t0, t1; /* start and end (equal for marks and memory) */
	uint64_t a, b;	   /* memory: allocated, reserved; copy: bytes */
	uint32_t id;	   /* op id (kernel) or tensor id (copy, mark);
			      memory: its index in tr_rec.kinds */
	uint8_t what;	   /* enum tr_what */
	uint8_t q;	   /* queue of a span (enum eng_q) */
	uint8_t flag;	   /* kernel: recomputation; mark: enum ex_mark */
};

enum tr_what { TR_SPAN, TR_MARK, TR_MEM, TR_HOST /* a launch */ };

struct tr_rec {
	const struct wl_workload *wl; /* names for ops and tensors */
	struct tr_event *ev;	      /* recorded, in time order */
	size_t n, cap;		      /* used and allocated entries */
	bool oom;		      /* an append failed (out of memory) */
	struct tr_kinds *kinds;	      /* per TR_MEM event (its id): the
					 allocated bytes by tensor kind and
					 the host bytes (ex_mem_sample) */
	size_t n_kinds, cap_kinds;    /* used and allocated entries */
	struct ex_observer obs;	      /* what tr_observer() returns */
};

/* wl names ops and tensors; NULL records device memory only (for a
 * memory plot), and tr_write_chrome then refuses. */
void tr_init(struct tr_rec *r, const struct wl_workload *wl);
void tr_fini(struct tr_rec *r);

/* A new memory breakdown for TR_MEM event e (sets e->id), zeroed;
 * NULL (and r->oom) when out of memory. */
struct tr_kinds *tr_kinds_add(struct tr_rec *r, struct tr_event *e);

/* The observer to put in ex_cfg.obs; valid while r lives. */
const struct ex_observer *tr_observer(struct tr_rec *r);

/* Write the Chrome trace JSON; `title` names the process track. */
int tr_write_chrome(const struct tr_rec *r, const char *path,
		    const char *title, gms_err *err);

/* Pieces of the trace JSON, for other writers of the same style
 * (exp/compare.c): a time in microseconds with nanosecond digits, and a
 * track's thread_name and thread_sort_index metadata (each preceded by
 * ",\n"). */
void tr_json_us(FILE *f, sim_time_t ns);
/* The file's opening up to the process_name metadata of pid 1. */
void tr_json_begin(FILE *f, const char *title);
void tr_json_track(FILE *f, int pid, int tid, const char *name, int sort);

/* Write the memory counter as whitespace-separated columns with a header
 * line: time_ms allocated_MiB reserved_MiB. */
int tr_write_mem(const struct tr_rec *r, const char *path, gms_err *err);

#endif
