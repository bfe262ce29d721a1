/*
 * replay.h - the replayer's scheduling core (validation mode, issue 16):
 * walks a schedule log (sim/sched.h, struct sch_log) iteration by
 * iteration in issue order and drives a backend -- the GPU
 * (validate/validate_gpu.cu) or host threads (validate/replay_host.c) --
 * through a small table of hooks. The core decides WHEN the host issues
 * each record; the backend decides HOW (streams, events, kernels).
 *
 * The enqueue policy is the model's (sim/ex.h): "The executor issues an
 * op only when the previous kernel has finished (the host never runs
 * ahead of the device)". Each record carries `t`, the model host's clock
 * when it was issued; the model host waits for a kernel until that
 * kernel's predicted end, so the replay host, before issuing a record
 * whose t is at or past the predicted end of the last kernel it issued,
 * waits for that kernel to finish (a host sync, cudaEventSynchronize).
 * Copies, records logged while a kernel runs (t < its predicted end,
 * e.g. an offload issued at the kernel's start), allocations and frees
 * are issued when their record comes. Cross-stream order is exactly the
 * log's: an item's `wait` is a stream-wait on the event an earlier item
 * `signal`s. A hostwait on an event blocks the host until it fires; a
 * hostwait for memory (event=memory) blocks it until every issued
 * kernel and copy whose predicted end is at or before the wait's `until`
 * has finished (in the model, what released memory by then). The host
 * time of driver allocation calls (cause=alloc) is not spent again: the
 * arena mode makes no driver calls; but where the model's host made a
 * cudaFree (a `driver` record with free > 0), which synchronises the
 * device, the replay's host waits for every stream.
 *
 * Where the model may be wrong (and the replay shows it, it does not hide
 * it): frameworks enqueue ahead of the GPU (PyTorch's caching allocator
 * and TensorFlow's executor return to the host as soon as a kernel is
 * launched), so a real framework overlaps host work with the device and
 * its policies' decisions see device state later than the model's do.
 *
 * Measurements: the iteration's span (from the host's iteration start
 * until every stream drained) and each kernel's and copy's start and end,
 * ns relative to the iteration start, written as a measurement CSV:
 *
 *   # gms-measure 1
 *   # device=NAME mode=real|spin alloc=arena|async peak_bytes=N
 *   iter,seq,kind,start_ns,end_ns
 *   0,0,iter,0,12345678
 *   0,5,kernel,100,2000
 *
 * (one `iter` row, seq 0, per iteration, then one row per kernel and copy
 * record, seq = the record's seq).
 */
#ifndef GMS_REPLAY_H
#define GMS_REPLAY_H

#include "../sim/common.h"
#include "../sim/sched.h"

#include <stdbool.h>
#include <stdint.h>

/* The replay's streams: one compute stream and two copy streams. */
enum rp_stream { RP_COMPUTE, RP_H2D, RP_D2H, RP_STREAM_COUNT };

/* What an issued kernel or copy needs besides its record. */
/* Waits one item may carry: a schedule logs, before a copy or kernel,
 * its dependency (its producer's or its copy's event, sim/ex.c wait_dep),
 * a driver call's return (drv_gate) and a policy's own `after` event. */
#define RP_MAX_WAITS 8

struct rp_issue {
	const struct sch_item *it; /* the record */
	uint32_t slot;		   /* its index among the iteration's kernels
				      and copies (0..n_slots-1): where the
				      backend keeps its start and end */
	enum rp_stream s;	   /* stream it goes to */
	uint32_t wait[RP_MAX_WAITS]; /* dense events to stream-wait for
					before it (the logged `wait`
					records since the stream's last
					item, and its own wait=) */
	uint32_t n_wait;	   /* how many of wait[] */
	uint32_t signal;	   /* dense event to record after it, or
				      SCH_NONE */
	uint64_t addr;		   /* COPY: the tensor's model address;
				      KERNEL: its workspace's address
				      (valid when has_ws) */
	bool has_ws;		   /* KERNEL: a live workspace block */
	int64_t pred_ns;	   /* predicted duration (end - start) */
};

/* The backend. Every hook returns 0 or -1 with err. Events are dense
 * indices 0..n_events-1 within the iteration (the core maps the log's
 * engine ids onto them). */
struct rp_backend {
	void *obj; /* the backend's state, first argument of every hook */
	/* A new iteration with n_slots kernels and copies and n_events
	 * events; its start is taken now (the host's clock, device idle). */
	int (*iter_begin)(void *obj, int iter, uint32_t n_slots,
			  uint32_t n_events, gms_err *err);
	/* Enqueue a kernel or copy: stream-wait for `wait`, start marker,
	 * the work, end marker, record `signal`. */
	int (*issue)(void *obj, const struct rp_issue *is, gms_err *err);
	/* Block the host until the item in `slot` has finished. */
	int (*host_wait_slot)(void *obj, uint32_t slot, gms_err *err);
	/* Block the host until dense event ev has fired. */
	int (*host_wait_event)(void *obj, uint32_t ev, gms_err *err);
	/* A device allocation of `it` (ALLOC) or its release (FREE); `s` is
	 * the stream that last used the block (the release is ordered
	 * after it). */
	int (*alloc)(void *obj, const struct sch_item *it, gms_err *err);
	int (*free)(void *obj, const struct sch_item *it, enum rp_stream s,
		    gms_err *err);
	/* Wait for every stream to drain; then the iteration's span and
	 * each slot's start and end, ns from the iteration's start. */
	int (*iter_end)(void *obj, int64_t *span_ns, gms_err *err);
	int (*times)(void *obj, uint32_t slot, int64_t *start_ns,
		     int64_t *end_ns);
};

/* One measurement row. */
struct rp_row {
	int iter;	  /* iteration */
	uint32_t seq;	  /* record's seq (0 for the iteration's row) */
	enum sch_kind kind; /* SCH_ITER, SCH_KERNEL or SCH_COPY */
	int64_t start_ns; /* from the iteration's start */
	int64_t end_ns;	  /* from the iteration's start */
};

/* A replay's measurements. */
struct rp_meas {
	char device[128];     /* device name (no spaces) */
	char mode[8];	      /* "real" or "spin" */
	char alloc[8];	      /* "arena" or "async" */
	uint64_t peak_bytes;  /* device memory the allocator held at its
				 peak (arena: the highest end address the
				 model's placement used; async: the pool's
				 reserved high-water mark) */
	struct rp_row *rows;  /* rows in replay order */
	size_t n, cap;	      /* count, capacity */
};

/* Replay the whole log through b. Checks as it goes (and fails with the
 * record's iteration and seq): records in seq order, a wait on an event
 * no earlier item of the iteration signalled (cudaStreamWaitEvent on an
 * unrecorded event would silently not wait), a copy of a tensor that is
 * not allocated, an allocation outside [0, arena) or of a live tensor.
 * `arena` is the arena's size (0: no bound). Fills m->rows and, from the
 * arena's placement, m->peak_bytes. */
int rp_replay(const struct sch_log *log, const struct rp_backend *b,
	      uint64_t arena, struct rp_meas *m, gms_err *err);

/* rp_replay with the host running ahead (runahead: true) as a framework's
 * does (sim/ex.c, "the host thread"): it launches each kernel and copy
 * when its record comes, without waiting for the kernel before it; it
 * still blocks where the log has a hostwait (the model's synchronisation
 * points: a policy's wait, memory, driver calls) and at the iteration's
 * end. runahead false is rp_replay: the wait per kernel above. Schedules
 * simulated with `--host runahead` (or a personality that runs ahead)
 * are replayed this way, those with `--host wait` the other. */
int rp_replay_host(const struct sch_log *log, const struct rp_backend *b,
		   uint64_t arena, bool runahead, struct rp_meas *m,
		   gms_err *err);

/* The arena an arena-mode replay needs: the highest end address of any
 * block the log allocates (at least 1). Not the log's budget: a run on
 * the whole device logs the device's free memory as its budget, which
 * no second allocation fits beside the replay's own buffers; and the
 * caching allocator gives each new segment fresh addresses, never
 * reusing a released segment's (sim/mem_caching.c), so its blocks may
 * end past the budget while its reserved bytes stay within it (issue
 * 21: both refused every replay on the first H100). */
uint64_t rp_arena_extent(const struct sch_log *log);

/* How long a spin kernel spins for a kernel predicted to take `pred` ns
 * when an empty one takes `overhead` ns between the events around it:
 * pred - overhead, at least 0. The prediction already holds the launch
 * (the profile's `launch`, calibrated as an empty kernel's time), so a
 * spin of the whole prediction counts it twice (issue 21: on the H100
 * every spin kernel ran 5.6 us, the empty kernel's time, over). */
uint64_t rp_spin_ns(uint64_t pred, uint64_t overhead);

/* Write the measurement CSV (temporary file + rename). */
int rp_meas_write(const struct rp_meas *m, const char *path, gms_err *err);
void rp_meas_free(struct rp_meas *m);

/* A record kind's name as the log writes it ("iter", "kernel", "copy",
 * ... ; the CSV's kind column uses the first three). */
const char *rp_kind_name(enum sch_kind k);

#endif
