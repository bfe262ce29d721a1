/*
 * msr.h - the measurement CSV of validation mode: what a replay of a
 * schedule log (sched.h) measured on a real GPU, item by item.
 *
 * The replayer (build/validate-gpu) writes it with msr_init / msr_add /
 * msr_write; `gpumemsim compare SCHEDULE MEASURED` reads it with
 * msr_read and sets it beside the schedule (exp/compare.h).
 *
 * The file (version 1):
 *
 *   # gms-measure 1
 *   # device=NAME mode=real|spin alloc=arena|async peak_bytes=N
 *   iter,seq,kind,start_ns,end_ns
 *   0,0,iter,0,12345678
 *   0,5,kernel,100,2000
 *   0,6,copy,150,900
 *
 * Line 1 is exactly `# gms-measure 1`. Line 2 holds the four keys once
 * each, in any order, separated by single spaces: `device` the GPU's
 * name (no spaces; `-` when unknown), `mode` `real` (the kernels ran) or
 * `spin` (each kernel spun for its predicted time), `alloc` `arena` (one
 * preallocated pool, the schedule's addresses) or `async`
 * (cudaMallocAsync), `peak_bytes` the device bytes the replay held at
 * its peak. Line 3 is exactly the header. Then one row per iteration
 * (kind `iter`: seq 0, start 0, end its measured span) and per kernel
 * and copy of the schedule (kind `kernel` or `copy`, seq the schedule
 * record's seq in that iteration), times in integer nanoseconds relative
 * to the iteration's start, measured on the GPU; end >= start. Rows may
 * come in any order; a row may not repeat (iter, seq) within its class
 * (iter rows; kernel and copy rows), and every iteration that has kernel
 * or copy rows has its iter row. A final newline is optional, a CR before
 * a newline is ignored, and nothing else is: no blank lines, no comments
 * after line 2, no spaces inside fields.
 *
 * Errors name "FILE:LINE:COL: column 'x': problem" (COL counts bytes
 * from 1, at the field); the first problem stops the read.
 */
#ifndef GMS_MSR_H
#define GMS_MSR_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MSR_VERSION 1
/* The largest measurement CSV msr_read reads (README "Input limits"):
 * 1 GiB, about 20 million rows of 40-60 bytes; lines at most
 * GMS_MAX_LINE. */
#define MSR_MAX_BYTES ((uint64_t)1 << 30)

enum msr_kind { MSR_ITER, MSR_KERNEL, MSR_COPY, MSR_KIND_COUNT };
extern const char *const msr_kind_names[]; /* "iter", "kernel", "copy" */

enum msr_mode { MSR_MODE_REAL, MSR_MODE_SPIN, MSR_MODE_COUNT };
extern const char *const msr_mode_names[]; /* "real", "spin" */

enum msr_alloc { MSR_ALLOC_ARENA, MSR_ALLOC_ASYNC, MSR_ALLOC_COUNT };
extern const char *const msr_alloc_names[]; /* "arena", "async" */

/* One row. */
struct msr_row {
	int iter;	    /* iteration (>= 0) */
	uint32_t seq;	    /* the schedule record's seq; 0 for ITER */
	enum msr_kind kind; /* what was measured */
	sim_time_t start;   /* ns from the iteration's start */
	sim_time_t end;	    /* ns from the iteration's start, >= start */
	long line;	    /* line in the file it came from (0: added) */
};

/* A whole measurement. */
struct msr {
	char device[128];     /* GPU name, "-" when unknown */
	enum msr_mode mode;   /* real kernels or spins */
	enum msr_alloc alloc; /* how device memory was allocated */
	uint64_t peak_bytes;  /* device bytes held at the peak */
	struct msr_row *row;  /* rows, file (or msr_add) order */
	size_t n, cap;	      /* count, capacity */
};

/* Read path strictly (format above). On error *m is left empty. */
int msr_read(const char *path, struct msr *m, gms_err *err);
void msr_free(struct msr *m);

/* Writing: msr_init, msr_add per row, set m->peak_bytes, msr_write
 * (temporary + rename; rows written in (iter, kind iter first, seq)
 * order). device must have no blanks or commas (else -1). */
int msr_init(struct msr *m, const char *device, enum msr_mode mode,
	     enum msr_alloc alloc, gms_err *err);
int msr_add(struct msr *m, int iter, uint32_t seq, enum msr_kind kind,
	    sim_time_t start, sim_time_t end, gms_err *err);
int msr_write(const struct msr *m, const char *path, gms_err *err);

#ifdef __cplusplus
}
#endif

#endif
