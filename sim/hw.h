/*
 * hw.h - hardware profiles: the GPU, its PCIe link and the host.
 *
 * Loaded from configs/hw/NAME.yaml (format: the prm tables in hw.c, which
 * `gpumemsim help hw` prints). Every figure in a shipped profile carries
 * its source in a comment; estimates say so.
 *
 * Compute model (AccUDNN section 3.3.1, Figure 5): a kernel of F FLOPs
 * moving B bytes takes
 *     t = launch + max(F / thr(F), B / mem_bw)
 *     thr(F) = peak * min(1, F / sat_flops) ^ alpha
 * i.e. throughput rises with FLOPs until the saturation point sat_flops and
 * stays at peak beyond it; alpha = 1 makes every kernel below saturation
 * cost sat_flops / peak (one "wave" of the GPU). The memory term is a
 * roofline for memory-bound ops. Each op type takes the figures of its
 * class (conv, matmul, memory); a profile can override any op type.
 *
 * Copy model: a copy of b bytes takes latency + b / bandwidth, with
 * bandwidths for pinned and pageable host memory per direction. When both
 * directions transfer at once each runs at bandwidth * derate (of its
 * direction). `shared_engine: true` makes both directions one FIFO.
 */
#ifndef GMS_HW_H
#define GMS_HW_H

#include "../workloads/wl.h"
#include "common.h"

#include <stdio.h>

/* Quality of the fit a figure came from (`gpumemsim fit`); points 0 when
 * the profile gives none (a hand-written figure). */
struct hw_fit {
	double r2;	  /* coefficient of determination of the fit */
	bool has_r2;	  /* r2 given (absent for a constant figure, a
			     median, where R^2 is not defined) */
	double worst_rel; /* largest |measured - model| / measured */
	int64_t points;	  /* measurements fitted; 0 = no fit recorded */
};

/* Compute figures of one op class or type. */
struct hw_compute {
	double peak_flops; /* FLOP/s at and beyond saturation */
	double sat_flops;  /* FLOPs at the saturation point */
	double alpha;	   /* shape of the rise below saturation, (0, 1] */
	double mem_bw;	   /* achieved DRAM bytes/s for the memory term */
	sim_time_t launch; /* fixed cost per kernel (launch overhead) */
	struct hw_fit fit; /* quality of the fit of these figures */
};

/* One copy direction. */
struct hw_link {
	double bw_pinned;   /* bytes/s with pinned host memory */
	double bw_pageable; /* bytes/s with pageable host memory */
	sim_time_t latency; /* fixed cost per copy */
	double derate;	    /* bandwidth factor while the other direction is
			       also transferring, (0, 1] */
	struct hw_fit fit;  /* quality of the latency/bandwidth fit */
	struct hw_fit derate_fit; /* quality of the fit derate came from */
};

enum hw_dir { HW_H2D, HW_D2H, HW_DIR_COUNT };

/* Physical bounds of the profile figures that feed durations (issue 17: a
 * bandwidth, FLOPS, derate or ZVC throughput of 1e-300 overflowed the
 * clock). hw_load rejects a figure outside them at its file:line:col; the
 * sums of legal durations the clock checks (SIM_TIME_LIMIT, common.h).
 *
 * FLOP/s (peak_flops): 1e6 to 1e18. The first CUDA GPU, G80 (GeForce
 * 8800 GTX, 2006), peaks near 3.5e11; the fastest single GPU, B200, under
 * 1e16 (FP8; NVIDIA datasheets). A figure below 1e6 or above 1e18 is a
 * failed fit or a typo. sat_flops is at most WL_FLOPS_MAX (wl.h). alpha
 * needs no floor: thr(F) = peak (F / sat)^alpha >= peak F / sat for alpha
 * in (0, 1], so no alpha makes a kernel slower than alpha = 1 does. */
#define HW_FLOP_RATE_MIN 1e6
#define HW_FLOP_RATE_MAX 1e18
/* Bytes/s (link bandwidths, mem_bw, the host's ZVC and memcpy per
 * thread): 1e3 to 1e15. PCIe 1.0 x1 moves 2.5e8 B/s, HBM3e 4.8e12 B/s
 * (H200), one CPU thread's memcpy about 1e10 B/s; 1 kB/s is a floor below
 * any of them and 1 PB/s a ceiling 200 times above HBM. */
#define HW_BYTE_RATE_MIN 1e3
#define HW_BYTE_RATE_MAX 1e15
/* derate: at least 0.01. Measured bidirectional PCIe transfers run each
 * direction at 0.7-0.95 of its one-way bandwidth (the shipped profiles:
 * 0.85); below 0.01 a direction would be 100 times slower, a broken
 * link, not a derate. */
#define HW_DERATE_MIN 0.01
/* launch and latency, per kernel and per copy: at most 1 s (1e9 ns);
 * measured ones are 1-20 us (the shipped profiles: 5 and 10 us). */
#define HW_LATENCY_MAX 1e9
/* costs (cudaMalloc, cudaFree, cudaMallocHost): at most 100 s (1e11 ns);
 * measured ones are 0.1-10 ms, pinning tens of GiB a few seconds. */
#define HW_COST_MAX 1e11

/* Most conv_algos: entries a profile may hold (a full calibration: 71
 * shapes x at most 21 algorithms over the three passes = 1,491). */
#define HW_CONV_ALGOS_MAX 2048

/* One measured cuDNN algorithm of one convolution (conv_algos:). */
struct hw_conv_algo {
	uint8_t type;	    /* enum wl_op_type: OT_CONV, OT_CONV_BWD_DATA or
			       OT_CONV_BWD_FILTER */
	uint8_t algo;	    /* cuDNN enum value (wl_conv_algo_name) */
	uint32_t n, c, h, w; /* input: batch, channels, height, width */
	uint32_t k, r, s;   /* filters: count, height, width */
	uint32_t stride, pad; /* both spatial dimensions */
	sim_time_t time;    /* median measured kernel time */
	uint64_t workspace; /* workspace bytes it needs */
};

/* Most gemms: entries a profile may hold. */
#define HW_GEMMS_MAX 1024

/* One measured GEMM shape (gemms:): cuBLAS's time for `batch` products of
 * an m x k and a k x n matrix in arithmetic `math` (wl.h, struct
 * wl_gemm). */
struct hw_gemm {
	uint8_t math;		 /* enum wl_math */
	uint32_t batch, m, n, k; /* the shape */
	sim_time_t time;	 /* median measured time, event to event */
};

struct hw_profile {
	char name[64];		      /* profile name, e.g. "V100-16GB" */
	char path[512];		      /* file it came from */
	uint64_t capacity;	      /* device memory bytes */
	uint64_t reserved;	      /* bytes not available to tensors
					 (context, framework) */
	struct hw_compute op[OT_COUNT]; /* per op type, classes resolved */
	struct hw_compute tensor[WL_MATH_COUNT]; /* tensor: figures (peak,
					 sat_flops, alpha) that time the conv
					 and matmul classes of a workload of
					 that math; [WL_MATH_FP32] unused */
	bool has_tensor[WL_MATH_COUNT]; /* tensor: gives that math */
	struct hw_link link[HW_DIR_COUNT]; /* H2D and D2H */
	bool shared_engine;	      /* both directions on one engine */
	sim_time_t malloc_cost;	      /* cudaMalloc of a pool/segment
					 (charged by ex.c, "driver calls") */
	sim_time_t free_cost;	      /* cudaFree, after its device sync */
	sim_time_t host_alloc_cost;   /* cudaMallocHost (pinned pool
					 growth): the constant part */
	double host_alloc_bytes_per_s; /* cudaMallocHost's size-dependent
					 part: a call of b bytes costs
					 host_alloc_cost + b / this
					 (hw_host_alloc_time); 0: none */
	struct hw_fit cost_fit[3];    /* quality of malloc, free, host_alloc
					 (in that order) */
	uint64_t host_pinned;	      /* pinned host bytes available */
	int64_t cpu_threads;	      /* host threads for compression */
	double zvc_bytes_per_s;	      /* ZVC compression throughput per
					 thread (vDNN++ IV-C), bytes/s of
					 uncompressed input */
	double zvc_decompress_bytes_per_s; /* ZVC decompression throughput
					 per thread, bytes/s of output
					 (default: zvc_bytes_per_s) */
	double memcpy_bytes_per_s;    /* host memcpy bandwidth per thread,
					 bytes/s (0: not given) */
	uint64_t host_memory;	      /* host DRAM bytes for host-side
					 tensors, pinned and pageable
					 (0: unlimited) */
	double host_mem_bw;	      /* host DRAM bytes/s, all threads
					 (0: not given) */
	double host_flops_per_thread; /* FLOP/s of one host thread in an
					 optimizer step (0: not given) */
	sim_time_t host_launch;	      /* host time to issue one kernel
					 (host.launch; ex.c, "the host
					 thread"); 0: not given */
	sim_time_t host_alloc_call;   /* host time of one call into a
					 framework's caching allocator that
					 makes no driver call (host.
					 alloc_call); 0: not given */
	size_t n_conv_algos;	      /* entries of conv_algos */
	struct hw_conv_algo conv_algos[HW_CONV_ALGOS_MAX]; /* measured cuDNN
					 algorithms; the executor uses them
					 for the ops whose geometry they
					 match (ex.c, bind_conv_algos) */
	size_t n_gemms;		      /* entries of gemms */
	struct hw_gemm gemms[HW_GEMMS_MAX]; /* measured GEMM shapes; an op
					 of that shape and math takes the
					 entry's device time instead of the
					 compute curve's (ex.c, bind_gemms) */
};

/* Load a profile: `spec` is a path (contains '/' or ends in .yaml) or a
 * name looked up as <datadir>/configs/hw/<name>.yaml. */
int hw_load(struct hw_profile *hw, const char *spec, gms_err *err);

/* Load a profile from YAML text held in memory; `name` is the file name
 * used in messages and, without a `name:` key, the profile's name (minus
 * a .yaml suffix). For tests and generated profiles. */
int hw_load_string(struct hw_profile *hw, const char *name, const char *text,
		   gms_err *err);

/* Directory that holds configs/ (compiled-in, overridable with the
 * environment variable GPUMEMSIM_HOME). */
const char *hw_datadir(void);

/* Kernel time of an op type with F flops and B bytes (model above), on
 * the device: a calibrated kernel time was timed from an event recorded
 * before the launch to one after it (calibrate/gpu_bench.cu, time_gpu),
 * so it holds the host's issue cost host.launch as well; that part is
 * the host thread's (ex.c) and is taken out of the launch term here:
 *     t = max(0, launch - host.launch) + max(F / thr(F), B / mem_bw).
 * With host.launch 0 (a profile that does not give it) t is as above. */
sim_time_t hw_kernel_time(const struct hw_profile *hw, enum wl_op_type t,
			  double flops, double bytes);
/* The same for a workload of arithmetic `math`: an op of the conv or
 * matmul class takes the profile's tensor: figures for it (peak_flops,
 * sat_flops, alpha; mem_bw and launch stay the op type's). */
sim_time_t hw_kernel_time_math(const struct hw_profile *hw,
			       enum wl_op_type t, enum wl_math math,
			       double flops, double bytes);
/* 0 when the profile can time arithmetic `math` (fp32 always; others
 * need their tensor: entry), else -1 with err naming the key. */
int hw_math_check(const struct hw_profile *hw, enum wl_math math,
		  gms_err *err);

/* The device part of a kernel time measured the same way (a conv_algos:
 * or gemms: entry): measured - host.launch, at least 0. */
sim_time_t hw_device_time(const struct hw_profile *hw, sim_time_t measured);

/* Host time of n cudaMallocHost calls allocating `bytes` in all:
 * n * costs.host_alloc + bytes / costs.host_alloc_bytes_per_s (the
 * second term 0 when the rate is not given). Affine in the size because
 * the measurement is (docs/host.md, "Host cost of allocations": 2.2 us
 * at 1 MiB, 356 ms at 1 GiB on the H100, pinning pages at about 3 GB/s). */
sim_time_t hw_host_alloc_time(const struct hw_profile *hw, uint64_t n,
			      uint64_t bytes);

/* Time of a copy of `bytes` alone on its engine. */
sim_time_t hw_copy_time(const struct hw_profile *hw, enum hw_dir d,
			uint64_t bytes, bool pinned);

/* Print the profile's parameter tables (for `gpumemsim help hw`). */
void hw_print_help(FILE *f);

/* A profile for hand-derived tests, figures chosen for easy arithmetic:
 * every op type: peak 1e12 FLOP/s, sat_flops 1, alpha 1, mem_bw 0 (no
 * memory term), launch 0, so a kernel of F FLOPs takes F / 1000 ns;
 * tensor: the same figures for tf32, fp16 and bf16;
 * both links: 1e9 B/s pinned and pageable, latency 0, derate 1, so a copy
 * of b bytes takes b ns; separate engines; all allocation costs 0;
 * reserved 0; host pinned unlimited (0); 1 CPU thread; ZVC compression
 * and decompression 1e9 B/s; host memcpy 1e9 B/s. */
void hw_test_profile(struct hw_profile *hw, uint64_t capacity);

#endif
