/*
 * cluster.h - the time between two iterations, the Δ of AccUDNN's
 * equation 3 (section 3.3.1), for N GPU workers training under BSP data
 * parallelism ("The most common data parallelism and the most effective
 * BSP are adopted", section 6.3 C), one GPU a host, hosts joined by a
 * full-duplex network. Two ways to synchronise:
 *
 *   ps    AccUDNN's own (6.3 C): "The parameter server are implemented in
 *         the host-side on the same server where GPU worker is equipped
 *         and each server takes charge of one parameter shard and stores
 *         in the host memory. P2P communication among cluster is
 *         implemented using sockets."
 *   ring  ring all-reduce (current practice: Baidu's ring all-reduce,
 *         NCCL, Horovod), parameters stay on the GPU.
 *
 * Cost of one message of b bytes on a link: latency + b / bandwidth (the
 * Hockney model, as Thakur, Rabenseifner and Gropp, "Optimization of
 * Collective Communication Operations in MPICH", IJHPCA 19(1) 2005, cost
 * MPI's collectives). P = the parameter bytes (fp32: the gradient has the
 * same size).
 *
 * ps, N >= 2 (every phase waits for the one before: BSP, no pipelining,
 * the paper: "Without any communication optimization"):
 *   1. D2H: the worker copies its P gradient bytes to host memory over
 *      PCIe:                                 lat_d2h + P / bw_d2h
 *   2. push: it sends each other host the slice of that host's shard,
 *      N-1 messages of P/N bytes, one after the other on its NIC; at the
 *      same time its own server receives N-1 slices of P/N (full duplex:
 *      sending and receiving overlap, so the phase costs the sending
 *      side):                                (N-1) (lat + P/(N bw))
 *   3. the servers update their shards on the host: not modelled (the
 *      simulated iteration's update kernels on the GPU stand in for it);
 *   4. pull: each server sends its updated shard to the N-1 others while
 *      each worker receives N-1 shards (full duplex again):
 *                                            (N-1) (lat + P/(N bw))
 *   5. H2D: the worker copies the P parameter bytes back over PCIe:
 *                                            lat_h2d + P / bw_h2d
 *   Δ_ps(N) = lat_d2h + lat_h2d + P/bw_d2h + P/bw_h2d
 *             + 2 (N-1) (lat + P/(N bw)).
 *   The local shard (1/N of P) never crosses the network, only PCIe.
 * ps, N = 1: Δ = 0. A single GPU runs plain Caffe: its solver updates the
 *   parameters on the GPU (sgd_solver.cpp, ApplyUpdate -> Update on GPU
 *   data), which the simulated iteration includes; there is no parameter
 *   server to copy to, and the paper says of Δ "in single GPU mode, it is
 *   negligible with pre-cached input samples".
 * ring: 2 (N-1) steps (N-1 of reduce-scatter, N-1 of all-gather), each
 *   every worker sending P/N bytes to its right neighbour while receiving
 *   P/N from its left (full duplex), each step waiting for the one before
 *   and paying the latency:
 *   Δ_ring(N) = 2 (N-1) (lat + P/(N bw)); 0 for N = 1. The reduction
 *   arithmetic (P/N adds a step on the GPU) is not counted, and neither
 *   are PCIe crossings when the NIC is not GPUDirect: libraries stage
 *   chunks through host memory pipelined with the network, and PCIe (12
 *   GB/s) is ten times the network.
 */
#ifndef GMS_CLUSTER_H
#define GMS_CLUSTER_H

#include "../sim/common.h"
#include "../sim/hw.h"

#include <stddef.h>
#include <stdint.h>

enum cl_sync { CL_SYNC_PS, CL_SYNC_RING, CL_SYNC_COUNT };
extern const char *const cl_sync_names[]; /* "ps", "ring", NULL */

/* A cluster of one-GPU hosts. */
struct cl_cluster {
	int64_t *gpus;		/* cluster sizes N to evaluate, as given */
	size_t n_gpus;		/* how many */
	double net_bw;		/* network bytes/s per direction (payload) */
	sim_time_t net_latency; /* per message */
	enum cl_sync sync;	/* ps or ring */
	double pcie_h2d, pcie_d2h;	   /* PCIe bytes/s (pinned) */
	sim_time_t pcie_lat_h2d, pcie_lat_d2h; /* PCIe latency per copy */
};

/* The PCIe figures from a hardware profile's link (pinned copies). */
void cl_set_pcie(struct cl_cluster *c, const struct hw_profile *hw);

/* Δ of equation 3, seconds, for n workers and param_bytes of parameters
 * (derivation above). */
double cl_delta(const struct cl_cluster *c, int64_t n, uint64_t param_bytes);

/* Samples/s of n workers each training batch samples an iteration in
 * t_iter seconds with delta seconds between iterations: n batch / (t_iter
 * + delta); 0 when the denominator is not positive. */
double cl_throughput(int64_t n, int64_t batch, double t_iter, double delta);

#endif
