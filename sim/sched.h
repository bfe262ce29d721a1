/*
 * sched.h - the schedule log: what the executor issued, in issue order,
 * for replaying a simulated run on a real GPU (validation mode) and for
 * comparing the replay's measurements with the prediction.
 *
 * `gpumemsim simulate ... --schedule FILE` writes it (sch_writer, an
 * executor observer); build/validate-gpu (and its host twin, the replay
 * core) reads it with sch_read; `gpumemsim compare` reads it beside a
 * measurement CSV.
 *
 * The file (version 1) is text, one record a line, fields `key=value`
 * separated by single spaces, no spaces inside values (names are
 * identifiers: the writer turns a space or `=` in a name into `_`; an
 * empty string is written `-`):
 *
 *   gms-schedule 1
 *   meta workload=NAME hw=NAME policy=LABEL allocator=NAME budget=BYTES
 *        batch=N iterations=N warmup=N shared=0|1
 *   (set-up: alloc records of the persistent tensors, seq from 0)
 *   iter i=N start=NS
 *   kernel seq=N t=NS q=compute op=ID name=NAME type=TYPE recompute=0|1
 *        algo=NAME flops=F bytes=B ws=BYTES conv=N,C,K,H,W,HO,WO,R,S,STRIDE,PH,PW|-
 *        tensors=ID,ID,..|- wait=EV|- signal=EV|- start=NS end=NS
 *   copy seq=N t=NS q=h2d|d2h tensor=ID name=NAME bytes=N pinned=0|1
 *        wait=EV|- signal=EV|- start=NS end=NS
 *   wait seq=N t=NS q=compute|h2d|d2h|host event=EV
 *   record seq=N t=NS q=compute|h2d|d2h|host signal=EV
 *   cpu seq=N t=NS tensor=ID name=NAME bytes=N what=compress|decompress
 *        signal=EV start=NS end=NS
 *   driver seq=N t=NS malloc=N free=N hostalloc=N cost=NS signal=EV
 *   alloc seq=N t=NS tensor=ID|ws name=NAME bytes=N addr=A share=ID|-
 *   free seq=N t=NS tensor=ID|ws name=NAME bytes=N addr=A
 *   hostwait seq=N t=NS event=EV|memory until=NS cause=h2d|d2h|memory|alloc
 *   end i=N time=NS
 *   peak allocated=BYTES reserved=BYTES
 *
 * (a record is one line; shown folded here; keys may come in any order,
 * each exactly once). `seq` numbers every record of an iteration (or of
 * the set-up before the first `iter`) in issue order from 0; `t` is the
 * host time at which the executor issued it (the simulated clock);
 * start/end are the predicted interval on its queue. Events are the
 * engine's ids, valid within their iteration: a `signal` marks the
 * item's completion; `wait` makes its queue wait for an event
 * (cudaStreamWaitEvent) before the items issued to it after;
 * `record` signals an event once everything issued to its queue before
 * has completed (cudaEventRecord); `driver` is the host making driver
 * allocation calls (cudaMalloc, cudaFree after a device-wide sync,
 * cudaMallocHost) for `cost` ns, its event signalled when they return;
 * a kernel's or copy's own `wait` is `-` from this writer (the queue
 * waits are `wait` records). `kernel tensors` lists the op's inputs then
 * the outputs it writes (a recomputation: those it regenerates). `cpu` is host CPU (de)compression of an offloaded tensor
 * (vDNN++ IV-C) on queue host. An `alloc` with `share` takes over that
 * tensor's block in place (same address; both names then denote the
 * block until it is freed). A hostwait blocks the host until an event
 * fires (or memory is released, or its driver calls return: event is
 * then theirs). Addresses are the allocator model's, offsets into its
 * pools (arena places nothing: every address is 0). `shared=1`: one copy
 * engine serves both directions (h2d and d2h are one queue). An
 * iteration the run did not finish (an OOM) is left out.
 */
#ifndef GMS_SCHED_H
#define GMS_SCHED_H

#include "common.h"
#include "eng.h"
#include "stats.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define SCH_VERSION 1
#define SCH_NONE UINT32_MAX /* no event / workspace tensor */
/* The largest schedule log sch_read reads (whole, into memory; README
 * "Input limits"): 1 GiB, about 10 million kernel lines (80-120 bytes
 * each); lines at most GMS_MAX_LINE. */
#define SCH_MAX_BYTES ((uint64_t)1 << 30)

enum sch_kind {
	SCH_ITER,     /* iteration start */
	SCH_KERNEL,   /* a kernel on the compute stream */
	SCH_COPY,     /* a copy on a copy engine */
	SCH_ALLOC,    /* a device allocation */
	SCH_FREE,     /* a device free */
	SCH_HOSTWAIT, /* the host blocked */
	SCH_END,      /* iteration end */
	SCH_WAIT,     /* a queue waits for an event */
	SCH_RECORD,   /* an event recorded behind a queue's work */
	SCH_CPU,      /* host CPU (de)compression (queue host) */
	SCH_DRIVER,   /* driver allocation calls of the host */
	SCH_KIND_COUNT
};
extern const char *const sch_kind_names[]; /* "iter", "kernel", ... */

/* One record. Fields not used by a kind are zero (or SCH_NONE). */
struct sch_item {
	enum sch_kind kind;   /* what it is */
	int iter;	      /* iteration, -1 for the set-up */
	uint32_t seq;	      /* issue order within the iteration */
	sim_time_t t;	      /* host time when issued */
	enum eng_q q;	      /* KERNEL: ENG_COMPUTE; COPY: ENG_H2D/D2H;
				 WAIT/RECORD: the queue; CPU: ENG_HOST */
	uint32_t op;	      /* KERNEL: op id */
	uint32_t type;	      /* KERNEL: enum wl_op_type; CPU: 0
				 compress, 1 decompress */
	bool recompute;	      /* KERNEL: a recomputation */
	const char *name;     /* KERNEL: op name; COPY/ALLOC/FREE: tensor
				 name ("" for workspace); in the log's
				 string store */
	const char *algo;     /* KERNEL: convolution algorithm or "" */
	double flops;	      /* KERNEL */
	double bytes;	      /* KERNEL: DRAM bytes it moves */
	uint64_t workspace;   /* KERNEL: workspace bytes */
	bool has_conv;	      /* KERNEL: conv[] is the geometry */
	int64_t conv[12];     /* N,C,K,H,W,HO,WO,R,S,STRIDE,PH,PW */
	const uint32_t *tensors; /* KERNEL: inputs then outputs (in the
				 log's id store), NULL when none */
	uint32_t n_tensors;   /* KERNEL: how many */
	uint32_t tensor;      /* COPY/CPU/ALLOC/FREE: tensor id, SCH_NONE
				 for workspace */
	uint32_t share;	      /* ALLOC: tensor whose block it takes over,
				 SCH_NONE */
	uint64_t size;	      /* COPY/CPU/ALLOC/FREE: bytes */
	uint64_t calls[3];    /* DRIVER: cudaMalloc, cudaFree,
				 cudaMallocHost calls */
	sim_time_t cost;      /* DRIVER: host time of the calls */
	bool pinned;	      /* COPY: pinned host memory */
	uint64_t addr;	      /* ALLOC/FREE: model address */
	uint32_t wait_ev;     /* KERNEL/COPY: event waited for, SCH_NONE;
				 WAIT: the event; HOSTWAIT: the event,
				 SCH_NONE = memory */
	uint32_t signal_ev;   /* KERNEL/COPY/CPU/RECORD/DRIVER: event
				 signalled, SCH_NONE */
	sim_time_t start;     /* KERNEL/COPY/CPU: predicted start; ITER:
				 start */
	sim_time_t end;	      /* KERNEL/COPY/CPU: predicted end; HOSTWAIT:
				 until; END: iteration time */
	uint8_t cause;	      /* HOSTWAIT: enum st_stall */
	uint32_t line;	      /* line read from (0: built in memory) */
};

/* A whole log. */
struct sch_log {
	char workload[128], hw[128], policy[128], allocator[32]; /* meta */
	uint64_t budget;      /* device bytes for tensors */
	int64_t batch;	      /* samples per iteration */
	int iterations;	      /* iterations logged */
	int warmup;	      /* of which warm-up */
	bool shared_copy;     /* one copy engine for both directions */
	struct sch_item *it;  /* records, file order */
	size_t n, cap;	      /* count, capacity */
	uint64_t peak_allocated, peak_reserved; /* the run's peaks */
	char *strings;	      /* string store (names): the file's text */
	size_t n_str, cap_str; /* its use and size */
	uint32_t *ids;	      /* id store (kernel tensors) */
	size_t n_ids, cap_ids; /* its use and size */
};

/* Read a log; errors name path:line:col and the key. Strict: unknown
 * records or keys, missing keys, bad values and a wrong version are
 * errors. */
int sch_read(const char *path, struct sch_log *log, gms_err *err);
/* Consistency: per engine queue, items in FIFO order without overlap;
 * every wait names an event some earlier item signals in the same
 * iteration; every copy or kernel that touches a tensor finds it
 * allocated (alloc before, free after); allocations do not overlap in
 * address while live. Returns 0, or -1 with the first problem. */
int sch_check(const struct sch_log *log, gms_err *err);
void sch_free(struct sch_log *log);

/* ---- writing (sched.c) -------------------------------------------------
 * An executor observer (sim/ex.h struct ex_observer) that writes the log
 * as the run goes; sch_writer_open gives the observer to put in
 * ex_cfg.obs, sch_writer_close writes the peaks and renames the
 * temporary into place (nothing half-written is left on an error). */
struct sch_writer;
struct ex_observer;
struct wl_workload;
/* Open path's temporary for a run of wl on hw under the policy labelled
 * `policy`; the allocator and budget come from the run itself (the
 * observer's run hook). */
struct sch_writer *sch_writer_open(const char *path,
				   const struct wl_workload *wl,
				   const struct hw_profile *hw,
				   const char *policy, int iterations,
				   int warmup, gms_err *err);
const struct ex_observer *sch_writer_observer(struct sch_writer *w);
/* The run's real length: its iterations and warm-up once a learning
 * policy's extra warm-up is known (st_run: n_iter planned, warmup);
 * rewrites the meta line in place. */
void sch_writer_set_length(struct sch_writer *w, int iterations, int warmup);
/* Write the peaks, rename into place, free w (also on an error). */
int sch_writer_close(struct sch_writer *w, uint64_t peak_allocated,
		     uint64_t peak_reserved, gms_err *err);
void sch_writer_abort(struct sch_writer *w); /* remove the temporary,
						free w */

#endif
