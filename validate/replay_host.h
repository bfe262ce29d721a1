/*
 * replay_host.h - the replay core's host backend: the GPU played by host
 * threads, so that the scheduling core (replay.h) runs and is tested
 * without a GPU, in spin mode.
 *
 *   streams   one thread per stream (compute, h2d, d2h), each running
 *             its FIFO of items in order
 *   kernels   a busy wait for the predicted duration divided by
 *             `time_div` (RP_HOST_TIME_DIV: 1 ms predicted spins 1 us)
 *   copies    memcpy of up to `copy_cap` bytes between the arena at the
 *             tensor's model address and a host buffer (h2d fills the
 *             block with the byte RP_HOST_FILL), then a busy wait as a
 *             kernel's
 *   events    flags under one mutex and condition variable
 *   arena     one malloc'd block of the budget's size; every allocation
 *             is checked to lie inside it (by the core) and copies touch
 *             it at the model's addresses
 * Each item's start and end are taken from CLOCK_MONOTONIC (the CSV) and
 * from a logical clock, a counter bumped at every start and end under the
 * mutex, so tests check order without reading wall-clock times.
 */
#ifndef GMS_REPLAY_HOST_H
#define GMS_REPLAY_HOST_H

#include "replay.h"

/* The default time scale: predicted ns per spun ns. Tests replay
 * schedules of milliseconds in microseconds. */
#define RP_HOST_TIME_DIV 1000
/* Byte an h2d copy writes into its block (a test sees the model's
 * address was used). */
#define RP_HOST_FILL 0xA5

struct rp_host_cfg {
	uint64_t arena;	  /* arena bytes (the log's budget) */
	int64_t time_div; /* predicted ns per spun ns (>= 1) */
	size_t copy_cap;  /* most bytes a copy moves with memcpy */
};

/* When an item ran, on both clocks. */
struct rp_host_span {
	uint64_t tick0, tick1; /* logical clock at its start and end */
	int64_t ns0, ns1;      /* ns from the iteration's start */
	bool done;	       /* it ran */
};

struct rp_host;
struct rp_host *rp_host_new(const struct rp_host_cfg *cfg, gms_err *err);
/* The hook table (valid while h lives). */
const struct rp_backend *rp_host_backend(struct rp_host *h);
/* Item `slot` of iteration `iter` (as numbered by the core), or NULL. */
const struct rp_host_span *rp_host_span(const struct rp_host *h, int iter,
					uint32_t slot);
/* The arena (cfg.arena bytes). */
const unsigned char *rp_host_arena(const struct rp_host *h);
void rp_host_free(struct rp_host *h);

#endif
