/*
 * hw.c - hardware profiles: loading configs/hw/NAME.yaml and the compute
 * and copy time models (see hw.h for the formulas).
 *
 * File layout (every mapping is a prm_def table below; `gpumemsim help hw`
 * prints them):
 *
 *   name: V100-16GB              # optional; default: file name stem
 *   device:  {capacity: 16GiB, reserved: 1GiB}
 *   compute:
 *     conv:   {peak_flops: 14e12, sat_flops: 2e9, alpha: 1, mem_bw: 700e9,
 *              launch: 5us}
 *     matmul: {...}
 *     memory: {...}              # every memory-bound op type
 *     conv_bwd_filter: {peak_flops: 9e12}   # optional, per op type,
 *                                # partial: other fields keep the class's
 *   link:
 *     h2d: {bw_pinned: 12e9, bw_pageable: 8e9, latency: 10us, derate: 0.9}
 *     d2h: {...}
 *     shared_engine: false
 *   costs: {malloc: 100us, free: 50us, host_alloc: 1ms}   # optional
 *   conv_algos:                  # optional: measured cuDNN algorithms
 *     - {op: conv, layer: resnet50.conv1, n: 32, c: 3, h: 224, w: 224,
 *        k: 64, r: 7, s: 7, stride: 2, pad: 3, algo: implicit_gemm,
 *        time: 1.2ms, workspace: 0}
 *   gemms:                       # optional: measured GEMM shapes
 *     - {layer: bert_base.ffn1, m: 4096, n: 3072, k: 768, batch: 1,
 *        math: tf32, time: 0.3ms}
 *   host:  {pinned: 64GiB, cpu_threads: 8, zvc_bytes_per_s: 2e9,
 *           zvc_decompress_bytes_per_s: 3e9,   # optional
 *           memcpy_bytes_per_s: 10e9,          # optional
 *           launch: 6us, alloc_call: 1us}      # optional
 *
 * Op classes: conv = conv, conv_bwd_data, conv_bwd_filter; matmul =
 * matmul, matmul_bwd, attention, attention_bwd; memory = every other type.
 * The keys "conv" and "matmul" under compute name the classes (which the
 * op types conv and matmul take as they are).
 *
 * Fit quality: a fitted profile (`gpumemsim fit`) records beside each
 * figure the quality of the fit it came from, `fit: {r2: 0.9993,
 * worst_rel: 0.021, points: 12}` in a compute class or op type, a link
 * direction (and `derate_fit:`), and `fit: {malloc: {...}, free: {...},
 * host_alloc: {...}}` under costs. They are checked and kept, not used.
 * conv_algos: is checked entry by entry (algo: a cuDNN enum value or
 * name of the entry's pass, wl_conv_algo_value) and kept; the executor
 * replaces the model's algorithm list of every convolution op whose
 * geometry and pass an entry matches with the measured ones (ex.c).
 *
 * A profile is parsed into a local copy and handed out only when every
 * check passed, so a failed hw_load leaves *hw untouched.
 */
#include "hw.h"

#include "cfg.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef GMS_DATADIR
#define GMS_DATADIR "."
#endif

/* ---- parameter tables ----------------------------------------------- */

/* The top-level mapping; nested mappings are walked by hw_parse. */
struct hw_top {
	char name[PRM_STR_MAX]; /* profile name; "" = file name stem */
	yaml_node_t *device;	/* device: capacity, reserved */
	yaml_node_t *compute;	/* compute: classes and overrides */
	yaml_node_t *link;	/* link: h2d, d2h, shared_engine */
	yaml_node_t *costs;	/* costs: malloc, free, host_alloc; or NULL */
	yaml_node_t *host;	/* host: pinned, cpu_threads, ZVC, memcpy */
	yaml_node_t *conv_algos; /* conv_algos: sequence, or NULL */
	yaml_node_t *gemms;	/* gemms: sequence, or NULL */
	yaml_node_t *tensor;	/* tensor: tf32, fp16, bf16; or NULL */
};

static const struct prm_def top_defs[] = {
	{"name", PRM_STR, "", 0, 0, NULL,
	 "profile name in results (default: file name without .yaml)",
	 offsetof(struct hw_top, name)},
	{"device", PRM_NODE, NULL, 0, 0, NULL, "device memory (see device:)",
	 offsetof(struct hw_top, device)},
	{"compute", PRM_NODE, NULL, 0, 0, NULL,
	 "compute model per op class and op type (see compute:)",
	 offsetof(struct hw_top, compute)},
	{"link", PRM_NODE, NULL, 0, 0, NULL, "PCIe copy engines (see link:)",
	 offsetof(struct hw_top, link)},
	{"costs", PRM_NODE, "", 0, 0, NULL,
	 "allocation costs (see costs:; all 0 when absent)",
	 offsetof(struct hw_top, costs)},
	{"host", PRM_NODE, NULL, 0, 0, NULL, "host side (see host:)",
	 offsetof(struct hw_top, host)},
	{"tensor", PRM_NODE, "", 0, 0, NULL,
	 "tensor-core throughput per arithmetic (see tensor:); a workload "
	 "of precision tf32, fp16-* or bf16-* needs its entry",
	 offsetof(struct hw_top, tensor)},
	{"conv_algos", PRM_NODE, "", 0, 0, NULL,
	 "measured convolution algorithms, a sequence (see conv_algos:); "
	 "a convolution of a generated workload with the same geometry and "
	 "pass runs with their times and workspaces",
	 offsetof(struct hw_top, conv_algos)},
	{"gemms", PRM_NODE, "", 0, 0, NULL,
	 "measured GEMM shapes, a sequence (see gemms:); a matmul of a "
	 "generated workload with the same shape and arithmetic runs in "
	 "the measured time",
	 offsetof(struct hw_top, gemms)},
	PRM_END};

/* fit: the quality of a fitted figure (written by `gpumemsim fit`). */
static const struct prm_def fit_defs[] = {
	{"r2", PRM_DOUBLE, "0", -1e300, 1, NULL,
	 "R^2 of the fit, <= 1 (absent for a median)",
	 offsetof(struct hw_fit, r2)},
	{"worst_rel", PRM_DOUBLE, NULL, 0, 0, NULL,
	 "largest |measured - model| / measured over the points, >= 0",
	 offsetof(struct hw_fit, worst_rel)},
	{"points", PRM_INT, NULL, 1, 1e9, NULL, "measurements fitted",
	 offsetof(struct hw_fit, points)},
	PRM_END};

/* device: */
struct hw_device {
	uint64_t capacity; /* device memory bytes */
	uint64_t reserved; /* bytes taken by context and framework */
};

static const struct prm_def device_defs[] = {
	{"capacity", PRM_BYTES, NULL, 0, 0, NULL, "device memory, > 0",
	 offsetof(struct hw_device, capacity)},
	{"reserved", PRM_BYTES, "0", 0, 0, NULL,
	 "bytes not available to tensors (CUDA context, framework); "
	 "< capacity",
	 offsetof(struct hw_device, reserved)},
	PRM_END};

/* compute.<class> and compute.<op type>: the figures and the node of
 * their fit quality. */
struct hw_compute_in {
	struct hw_compute c; /* the figures */
	yaml_node_t *fit;    /* fit: mapping, or NULL */
};

static const struct prm_def compute_fields[] = {
	{"peak_flops", PRM_DOUBLE, NULL, 0, 0, NULL,
	 "FLOP/s at and beyond saturation, in [1e6, 1e18] (hw.h)",
	 offsetof(struct hw_compute_in, c.peak_flops)},
	{"sat_flops", PRM_DOUBLE, "0", 0, 0, NULL,
	 "FLOPs at the saturation point, in [0, 1e18] (0: always at peak)",
	 offsetof(struct hw_compute_in, c.sat_flops)},
	{"alpha", PRM_DOUBLE, "1", 0, 1, NULL,
	 "shape of the rise below saturation, (0, 1]",
	 offsetof(struct hw_compute_in, c.alpha)},
	{"mem_bw", PRM_DOUBLE, "0", 0, 0, NULL,
	 "achieved DRAM bytes/s of the roofline term, 0 (no term) or in "
	 "[1e3, 1e15] (hw.h)",
	 offsetof(struct hw_compute_in, c.mem_bw)},
	{"launch", PRM_TIME, "0", 0, HW_LATENCY_MAX, NULL,
	 "fixed cost per kernel, at most 1 s (hw.h)",
	 offsetof(struct hw_compute_in, c.launch)},
	{"fit", PRM_NODE, "", 0, 0, NULL,
	 "quality of the fit of these figures (see fit:)",
	 offsetof(struct hw_compute_in, fit)},
	PRM_END};

/* tensor.<math>: the tensor cores' figures for one arithmetic. */
static const struct prm_def tensor_fields[] = {
	{"peak_flops", PRM_DOUBLE, NULL, 0, 0, NULL,
	 "FLOP/s at and beyond saturation (dense: a datasheet's sparse "
	 "figure halved)", offsetof(struct hw_compute_in, c.peak_flops)},
	{"sat_flops", PRM_DOUBLE, "0", 0, 0, NULL,
	 "FLOPs at the saturation point (0: none)",
	 offsetof(struct hw_compute_in, c.sat_flops)},
	{"alpha", PRM_DOUBLE, "1", 0, 0, NULL,
	 "shape of the rise below saturation, (0, 1]",
	 offsetof(struct hw_compute_in, c.alpha)},
	{"fit", PRM_NODE, "", 0, 0, NULL,
	 "quality of the fit of these figures (see fit:)",
	 offsetof(struct hw_compute_in, fit)},
	PRM_END};

/* tensor: one node per arithmetic but fp32 */
struct hw_tensor_nodes {
	yaml_node_t *m[WL_MATH_COUNT];
};
static const struct prm_def tensor_defs[] = {
	{"tf32", PRM_NODE, "", 0, 0, NULL, "TF32 tensor cores",
	 offsetof(struct hw_tensor_nodes, m) +
		 WL_MATH_TF32 * sizeof(yaml_node_t *)},
	{"fp16", PRM_NODE, "", 0, 0, NULL,
	 "FP16 tensor cores, fp32 accumulation",
	 offsetof(struct hw_tensor_nodes, m) +
		 WL_MATH_FP16 * sizeof(yaml_node_t *)},
	{"bf16", PRM_NODE, "", 0, 0, NULL,
	 "BF16 tensor cores, fp32 accumulation",
	 offsetof(struct hw_tensor_nodes, m) +
		 WL_MATH_BF16 * sizeof(yaml_node_t *)},
	PRM_END};

/* The op classes, in the order of their keys under compute:. */
enum hw_class { HC_CONV, HC_MATMUL, HC_MEMORY, HC_COUNT };
static const char *const class_names[HC_COUNT] = {"conv", "matmul",
						  "memory"};

static enum hw_class class_of(enum wl_op_type t)
{
	switch (t) {
	case OT_CONV:
	case OT_CONV_BWD_DATA:
	case OT_CONV_BWD_FILTER:
		return HC_CONV;
	case OT_MATMUL:
	case OT_MATMUL_BWD:
	case OT_ATTENTION:
	case OT_ATTENTION_BWD:
		return HC_MATMUL;
	default:
		return HC_MEMORY;
	}
}

/* compute: one node per class key, then one per op type (the entries of
 * the class-named types conv and matmul stay NULL: their key is the
 * class's). */
struct hw_compute_nodes {
	yaml_node_t *cls[HC_COUNT]; /* compute.conv/matmul/memory */
	yaml_node_t *op[OT_COUNT];  /* compute.<op type>, or NULL */
};

/* Fill defs (room for HC_COUNT + OT_COUNT + 1 entries) with the keys of
 * compute:. Built at run time from wl_op_type_names, so it cannot fall out
 * of step with the op types. */
static void compute_defs(struct prm_def *defs)
{
	size_t n = 0;
	for (int c = 0; c < HC_COUNT; c++)
		defs[n++] = (struct prm_def){
			class_names[c], PRM_NODE, NULL, 0, 0, NULL,
			c == HC_CONV	 ? "class: conv, conv_bwd_data, "
					   "conv_bwd_filter"
			: c == HC_MATMUL ? "class: matmul, matmul_bwd, "
					   "attention, attention_bwd"
					 : "class: every other op type",
			offsetof(struct hw_compute_nodes, cls) +
				(size_t)c * sizeof(yaml_node_t *)};
	for (int t = 0; t < OT_COUNT; t++) {
		const char *name = wl_op_type_name((enum wl_op_type)t);
		if (strcmp(name, class_names[HC_CONV]) == 0 ||
		    strcmp(name, class_names[HC_MATMUL]) == 0)
			continue;
		defs[n++] = (struct prm_def){
			name, PRM_NODE, "", 0, 0, NULL,
			"partial override of its class's figures",
			offsetof(struct hw_compute_nodes, op) +
				(size_t)t * sizeof(yaml_node_t *)};
	}
	defs[n] = (struct prm_def)PRM_END;
}

/* link: */
struct hw_link_nodes {
	yaml_node_t *h2d;   /* link.h2d */
	yaml_node_t *d2h;   /* link.d2h */
	bool shared_engine; /* one FIFO for both directions */
};

static const struct prm_def link_defs[] = {
	{"h2d", PRM_NODE, NULL, 0, 0, NULL, "host-to-device copies",
	 offsetof(struct hw_link_nodes, h2d)},
	{"d2h", PRM_NODE, NULL, 0, 0, NULL, "device-to-host copies",
	 offsetof(struct hw_link_nodes, d2h)},
	{"shared_engine", PRM_BOOL, "false", 0, 0, NULL,
	 "both directions share one copy engine (one FIFO)",
	 offsetof(struct hw_link_nodes, shared_engine)},
	PRM_END};

/* link.h2d and link.d2h: the figures and their fit-quality nodes. */
struct hw_link_in {
	struct hw_link l;	 /* the figures */
	yaml_node_t *fit;	 /* fit: mapping, or NULL */
	yaml_node_t *derate_fit; /* derate_fit: mapping, or NULL */
};

static const struct prm_def link_dir_defs[] = {
	{"bw_pinned", PRM_DOUBLE, NULL, 0, 0, NULL,
	 "bytes/s with pinned host memory, in [1e3, 1e15] (hw.h)",
	 offsetof(struct hw_link_in, l.bw_pinned)},
	{"bw_pageable", PRM_DOUBLE, NULL, 0, 0, NULL,
	 "bytes/s with pageable host memory, in [1e3, 1e15] (hw.h)",
	 offsetof(struct hw_link_in, l.bw_pageable)},
	{"latency", PRM_TIME, "0", 0, HW_LATENCY_MAX, NULL,
	 "fixed cost per copy, at most 1 s (hw.h)",
	 offsetof(struct hw_link_in, l.latency)},
	{"derate", PRM_DOUBLE, "1", 0, 1, NULL,
	 "bandwidth factor while the other direction transfers, in [0.01, 1] "
	 "(hw.h)",
	 offsetof(struct hw_link_in, l.derate)},
	{"fit", PRM_NODE, "", 0, 0, NULL,
	 "quality of the latency and bandwidth fit (see fit:)",
	 offsetof(struct hw_link_in, fit)},
	{"derate_fit", PRM_NODE, "", 0, 0, NULL,
	 "quality of the fit derate came from (see fit:)",
	 offsetof(struct hw_link_in, derate_fit)},
	PRM_END};

/* costs: the three figures and the node of their fit quality. */
struct hw_costs_in {
	sim_time_t malloc_cost;	    /* cudaMalloc */
	sim_time_t free_cost;	    /* cudaFree */
	sim_time_t host_alloc_cost; /* cudaMallocHost */
	double host_alloc_rate;	    /* its bytes/s, 0: not given */
	yaml_node_t *fit;	    /* fit: {malloc, free, host_alloc}, or
				       NULL */
};

static const struct prm_def costs_defs[] = {
	{"malloc", PRM_TIME, "0", 0, HW_COST_MAX, NULL,
	 "cudaMalloc of a pool or segment, at most 100 s (hw.h)",
	 offsetof(struct hw_costs_in, malloc_cost)},
	{"free", PRM_TIME, "0", 0, HW_COST_MAX, NULL,
	 "cudaFree, at most 100 s (hw.h)",
	 offsetof(struct hw_costs_in, free_cost)},
	{"host_alloc", PRM_TIME, "0", 0, HW_COST_MAX, NULL,
	 "cudaMallocHost (pinned host memory), at most 100 s (hw.h)",
	 offsetof(struct hw_costs_in, host_alloc_cost)},
	{"host_alloc_bytes_per_s", PRM_DOUBLE, "0", 0, 0, NULL,
	 "cudaMallocHost's size-dependent part: a call of b bytes costs "
	 "host_alloc + b / this; bytes/s in [1e3, 1e15] when given "
	 "(default 0: host_alloc alone, whatever the size)",
	 offsetof(struct hw_costs_in, host_alloc_rate)},
	{"fit", PRM_NODE, "", 0, 0, NULL,
	 "fit quality of each cost: {malloc: FIT, free: FIT, host_alloc: "
	 "FIT}, each optional (see fit:)",
	 offsetof(struct hw_costs_in, fit)},
	PRM_END};

/* costs.fit: one node per cost, in the order of hw_profile.cost_fit. */
struct hw_cost_fits {
	yaml_node_t *f[3]; /* malloc, free, host_alloc; NULL when absent */
};

static const struct prm_def cost_fit_defs[] = {
	{"malloc", PRM_NODE, "", 0, 0, NULL, "fit of costs.malloc",
	 offsetof(struct hw_cost_fits, f[0])},
	{"free", PRM_NODE, "", 0, 0, NULL, "fit of costs.free",
	 offsetof(struct hw_cost_fits, f[1])},
	{"host_alloc", PRM_NODE, "", 0, 0, NULL, "fit of costs.host_alloc",
	 offsetof(struct hw_cost_fits, f[2])},
	PRM_END};

/* conv_algos: one measured algorithm of one convolution, as written. */
struct conv_algo_in {
	int op;			/* index in conv_ops */
	char layer[PRM_STR_MAX]; /* layer (shape) name */
	int64_t n, c, h, w;	/* input: batch, channels, height, width */
	int64_t k, r, s;	/* filters: count, height, width */
	int64_t stride, pad;	/* both spatial dimensions */
	char algo[PRM_STR_MAX]; /* cuDNN algorithm name */
	sim_time_t time;	/* median measured time */
	uint64_t workspace;	/* workspace bytes it needs */
};

static const char *const conv_ops[] = {"conv", "conv_bwd_data",
				       "conv_bwd_filter", NULL};

static const struct prm_def conv_algo_defs[] = {
	{"op", PRM_ENUM, NULL, 0, 0, conv_ops, "which pass",
	 offsetof(struct conv_algo_in, op)},
	{"layer", PRM_STR, NULL, 0, 0, NULL,
	 "name of the layer shape, e.g. resnet50.conv1",
	 offsetof(struct conv_algo_in, layer)},
	{"n", PRM_INT, NULL, 1, 1e9, NULL, "batch",
	 offsetof(struct conv_algo_in, n)},
	{"c", PRM_INT, NULL, 1, 1e9, NULL, "input channels",
	 offsetof(struct conv_algo_in, c)},
	{"h", PRM_INT, NULL, 1, 1e9, NULL, "input height",
	 offsetof(struct conv_algo_in, h)},
	{"w", PRM_INT, NULL, 1, 1e9, NULL, "input width",
	 offsetof(struct conv_algo_in, w)},
	{"k", PRM_INT, NULL, 1, 1e9, NULL, "output channels",
	 offsetof(struct conv_algo_in, k)},
	{"r", PRM_INT, NULL, 1, 1e9, NULL, "filter height",
	 offsetof(struct conv_algo_in, r)},
	{"s", PRM_INT, NULL, 1, 1e9, NULL, "filter width",
	 offsetof(struct conv_algo_in, s)},
	{"stride", PRM_INT, "1", 1, 1e9, NULL, "stride",
	 offsetof(struct conv_algo_in, stride)},
	{"pad", PRM_INT, "0", 0, 1e9, NULL, "zero padding",
	 offsetof(struct conv_algo_in, pad)},
	{"algo", PRM_STR, NULL, 0, 0, NULL, "cuDNN algorithm name",
	 offsetof(struct conv_algo_in, algo)},
	{"time", PRM_TIME, NULL, 0, WL_OP_TIME_MAX, NULL,
	 "median measured time, > 0, at most 1e15 ns (wl.h WL_OP_TIME_MAX)",
	 offsetof(struct conv_algo_in, time)},
	{"workspace", PRM_BYTES, "0", 0, 0, NULL, "workspace bytes",
	 offsetof(struct conv_algo_in, workspace)},
	PRM_END};

/* gemms: one measured GEMM shape, as written. */
struct gemm_in {
	char layer[PRM_STR_MAX]; /* shape name, e.g. bert_base.ffn1 */
	int64_t batch, m, n, k;	 /* the shape (wl.h, struct wl_gemm) */
	int math;		 /* index in wl_math_names */
	sim_time_t time;	 /* median measured time */
};

static const struct prm_def gemm_defs[] = {
	{"layer", PRM_STR, "", 0, 0, NULL,
	 "name of the shape, e.g. bert_base.ffn1 (optional)",
	 offsetof(struct gemm_in, layer)},
	{"batch", PRM_INT, "1", 1, 4294967295.0, NULL,
	 "products in the batched GEMM (1: a plain GEMM)",
	 offsetof(struct gemm_in, batch)},
	{"m", PRM_INT, NULL, 1, 4294967295.0, NULL, "rows of C and A",
	 offsetof(struct gemm_in, m)},
	{"n", PRM_INT, NULL, 1, 4294967295.0, NULL, "columns of C and B",
	 offsetof(struct gemm_in, n)},
	{"k", PRM_INT, NULL, 1, 4294967295.0, NULL,
	 "the reduction: columns of A, rows of B",
	 offsetof(struct gemm_in, k)},
	{"math", PRM_ENUM, "fp32", 0, 0, wl_math_names,
	 "arithmetic it was timed in; matches a workload of that math",
	 offsetof(struct gemm_in, math)},
	{"time", PRM_TIME, NULL, 0, WL_OP_TIME_MAX, NULL,
	 "median measured time, > 0, event to event (the host's launch is "
	 "taken out: hw_device_time)",
	 offsetof(struct gemm_in, time)},
	PRM_END};

/* host: straight into struct hw_profile. `gpumemsim calibrate --host`
 * measures the ZVC and memcpy figures. */
static const struct prm_def host_defs[] = {
	{"pinned", PRM_BYTES, "0", 0, 0, NULL,
	 "pinned host bytes available (0: unlimited)",
	 offsetof(struct hw_profile, host_pinned)},
	{"cpu_threads", PRM_INT, "1", 1, 4096, NULL,
	 "host threads for compression",
	 offsetof(struct hw_profile, cpu_threads)},
	{"zvc_bytes_per_s", PRM_DOUBLE, NULL, 0, 0, NULL,
	 "ZVC compression throughput per thread (vDNN++ IV-C), bytes/s, in "
	 "[1e3, 1e15] (hw.h)",
	 offsetof(struct hw_profile, zvc_bytes_per_s)},
	{"zvc_decompress_bytes_per_s", PRM_DOUBLE, "0", 0, 0, NULL,
	 "ZVC decompression throughput per thread, bytes/s of output, in "
	 "[1e3, 1e15] (default: zvc_bytes_per_s)",
	 offsetof(struct hw_profile, zvc_decompress_bytes_per_s)},
	{"memcpy_bytes_per_s", PRM_DOUBLE, "0", 0, 0, NULL,
	 "host memcpy bandwidth per thread, bytes/s, in [1e3, 1e15] when "
	 "given (default 0: not given)",
	 offsetof(struct hw_profile, memcpy_bytes_per_s)},
	{"memory", PRM_BYTES, "0", 0, 0, NULL,
	 "host memory (DRAM) bytes for the run's host-side tensors, pinned "
	 "and pageable together (0: unlimited); offload policies end as a "
	 "host OOM past it",
	 offsetof(struct hw_profile, host_memory)},
	{"mem_bw", PRM_DOUBLE, "0", 0, 0, NULL,
	 "host DRAM bandwidth all threads together achieve (STREAM-like), "
	 "bytes/s, in [1e3, 1e15] when given (default 0: not given); times "
	 "host-side optimizer steps (zero-offload)",
	 offsetof(struct hw_profile, host_mem_bw)},
	{"flops_per_thread", PRM_DOUBLE, "0", 0, 0, NULL,
	 "FLOP/s one host thread sustains in a vectorised optimizer step, "
	 "in [1e6, 1e18] when given (default 0: not given)",
	 offsetof(struct hw_profile, host_flops_per_thread)},
	{"launch", PRM_TIME, "0", 0, HW_LATENCY_MAX, NULL,
	 "host time to issue one kernel (the host thread, ex.c); taken out "
	 "of every kernel's calibrated launch term (0: not given)",
	 offsetof(struct hw_profile, host_launch)},
	{"alloc_call", PRM_TIME, "0", 0, HW_LATENCY_MAX, NULL,
	 "host time of one caching-allocator call that makes no driver "
	 "call (0: not given)",
	 offsetof(struct hw_profile, host_alloc_call)},
	PRM_END};

/* ---- checks beyond the tables --------------------------------------- */

/* Error at the value of `key` in map (or at map when the key is absent,
 * i.e. the value was inherited or defaulted). */
static int field_err(gms_err *err, struct cfg_doc *d, yaml_node_t *map,
		     const char *what, const char *key, const char *problem,
		     double v)
{
	yaml_node_t *at = cfg_map_get(d, map, key);
	return cfg_errf(err, d, at ? at : map, "%s: key '%s': %s (found %g)",
			what, key, problem, v);
}

/* A positive figure within its physical bounds [lo, hi] (hw.h): "must be
 * > 0" for zero or less, else "must be in [lo, hi] <unit>". */
static int check_phys(struct cfg_doc *d, yaml_node_t *map, const char *what,
		      const char *key, double v, double lo, double hi,
		      const char *unit, gms_err *err)
{
	char why[96];
	if (!(v > 0))
		return field_err(err, d, map, what, key, "must be > 0", v);
	if (v < lo || v > hi) {
		snprintf(why, sizeof why, "must be in [%g, %g] %s (hw.h)", lo,
			 hi, unit);
		return field_err(err, d, map, what, key, why, v);
	}
	return 0;
}

static int check_compute(const struct hw_compute *c, struct cfg_doc *d,
			 yaml_node_t *map, const char *what, gms_err *err)
{
	if (check_phys(d, map, what, "peak_flops", c->peak_flops,
		       HW_FLOP_RATE_MIN, HW_FLOP_RATE_MAX, "FLOP/s", err) < 0)
		return -1;
	if (!(c->sat_flops >= 0))
		return field_err(err, d, map, what, "sat_flops",
				 "must be >= 0", c->sat_flops);
	if (c->sat_flops > 0 &&
	    check_phys(d, map, what, "sat_flops", c->sat_flops, 0,
		       WL_FLOPS_MAX, "FLOPs", err) < 0)
		return -1;
	if (!(c->alpha > 0 && c->alpha <= 1))
		return field_err(err, d, map, what, "alpha",
				 "must be in (0, 1]", c->alpha);
	if (!(c->mem_bw >= 0))
		return field_err(err, d, map, what, "mem_bw", "must be >= 0",
				 c->mem_bw);
	if (c->mem_bw > 0 &&
	    check_phys(d, map, what, "mem_bw", c->mem_bw, HW_BYTE_RATE_MIN,
		       HW_BYTE_RATE_MAX, "bytes/s", err) < 0)
		return -1;
	return 0;
}

static int check_link(const struct hw_link *l, struct cfg_doc *d,
		      yaml_node_t *map, const char *what, gms_err *err)
{
	if (check_phys(d, map, what, "bw_pinned", l->bw_pinned,
		       HW_BYTE_RATE_MIN, HW_BYTE_RATE_MAX, "bytes/s", err) < 0 ||
	    check_phys(d, map, what, "bw_pageable", l->bw_pageable,
		       HW_BYTE_RATE_MIN, HW_BYTE_RATE_MAX, "bytes/s", err) < 0)
		return -1;
	if (!(l->derate > 0 && l->derate <= 1))
		return field_err(err, d, map, what, "derate",
				 "must be in (0, 1]", l->derate);
	return check_phys(d, map, what, "derate", l->derate, HW_DERATE_MIN, 1,
			  "of the one-way bandwidth", err);
}

/* Parse a fit: node (NULL: keep *f as it is). */
static int parse_fit(struct cfg_doc *d, yaml_node_t *node, const char *what,
		     struct hw_fit *f, gms_err *err)
{
	if (!node)
		return 0;
	char w[128];
	snprintf(w, sizeof w, "%s.fit", what);
	if (cfg_parse_map(d, node, fit_defs, f, w, err) < 0)
		return -1;
	f->has_r2 = cfg_map_get(d, node, "r2") != NULL;
	if (!(f->worst_rel >= 0))
		return field_err(err, d, node, w, "worst_rel", "must be >= 0",
				 f->worst_rel);
	return 0;
}

/* A sequence under `key` of at most max entries: its length in *n. */
static int seq_of(struct cfg_doc *d, yaml_node_t *seq, const char *key,
		  size_t max, size_t *n, gms_err *err)
{
	if (seq->type != YAML_SEQUENCE_NODE)
		return cfg_errf(err, d, seq, "key '%s': expected a sequence",
				key);
	*n = cfg_seq_len(seq);
	if (*n > max)
		return cfg_errf(err, d, seq, "key '%s': %zu entries, at most "
					     "%zu",
				key, *n, max);
	return 0;
}

/* conv_algos: every entry checked; the count kept. */
static int parse_conv_algos(struct hw_profile *hw, struct cfg_doc *d,
			    yaml_node_t *seq, gms_err *err)
{
	size_t n;
	if (!seq)
		return 0;
	if (seq_of(d, seq, "conv_algos", HW_CONV_ALGOS_MAX, &n, err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *e = cfg_seq_item(d, seq, i);
		struct conv_algo_in a;
		char what[48];
		snprintf(what, sizeof what, "conv_algos[%zu]", i);
		if (cfg_parse_map(d, e, conv_algo_defs, &a, what, err) < 0)
			return -1;
		if (a.time <= 0)
			return field_err(err, d, e, what, "time",
					 "must be > 0", (double)a.time);
		enum wl_op_type t = a.op == 0   ? OT_CONV
				    : a.op == 1 ? OT_CONV_BWD_DATA
						: OT_CONV_BWD_FILTER;
		int v = wl_conv_algo_value(t, a.algo);
		if (v < 0) {
			yaml_node_t *at = cfg_map_get(d, e, "algo");
			return cfg_errf(err, d, at ? at : e,
					"%s: key 'algo': '%s' is no cuDNN "
					"algorithm of %s",
					what, a.algo, conv_ops[a.op]);
		}
		const int64_t dim[] = {a.n, a.c, a.h, a.w, a.k,
				       a.r, a.s, a.stride, a.pad};
		for (size_t j = 0; j < sizeof dim / sizeof *dim; j++)
			if (dim[j] > UINT32_MAX)
				return cfg_errf(err, d, e, "%s: a size beyond "
							   "2^32", what);
		hw->conv_algos[i] = (struct hw_conv_algo){
			.type = (uint8_t)t, .algo = (uint8_t)v,
			.n = (uint32_t)a.n, .c = (uint32_t)a.c,
			.h = (uint32_t)a.h, .w = (uint32_t)a.w,
			.k = (uint32_t)a.k, .r = (uint32_t)a.r,
			.s = (uint32_t)a.s, .stride = (uint32_t)a.stride,
			.pad = (uint32_t)a.pad, .time = a.time,
			.workspace = a.workspace};
	}
	hw->n_conv_algos = n;
	return 0;
}

/* gemms: every entry checked; the count kept. */
static int parse_gemms(struct hw_profile *hw, struct cfg_doc *d,
		       yaml_node_t *seq, gms_err *err)
{
	size_t n;
	if (!seq)
		return 0;
	if (seq_of(d, seq, "gemms", HW_GEMMS_MAX, &n, err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *e = cfg_seq_item(d, seq, i);
		struct gemm_in g;
		char what[48];
		snprintf(what, sizeof what, "gemms[%zu]", i);
		if (cfg_parse_map(d, e, gemm_defs, &g, what, err) < 0)
			return -1;
		if (g.time <= 0)
			return field_err(err, d, e, what, "time",
					 "must be > 0", (double)g.time);
		hw->gemms[i] = (struct hw_gemm){
			.math = (uint8_t)g.math, .batch = (uint32_t)g.batch,
			.m = (uint32_t)g.m, .n = (uint32_t)g.n,
			.k = (uint32_t)g.k, .time = g.time};
	}
	hw->n_gemms = n;
	return 0;
}

/* ---- loading --------------------------------------------------------- */

/* The file name of path without directories and a .yaml/.yml suffix. */
static void stem_of(const char *path, char *buf, size_t n)
{
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	size_t l = strlen(b);
	if (l > 5 && strcmp(b + l - 5, ".yaml") == 0)
		l -= 5;
	else if (l > 4 && strcmp(b + l - 4, ".yml") == 0)
		l -= 4;
	if (l >= n)
		l = n - 1;
	memcpy(buf, b, l);
	buf[l] = 0;
}

/* Parse a loaded document into hw (which the caller zeroed). */
static int hw_parse(struct hw_profile *hw, struct cfg_doc *d, gms_err *err)
{
	struct hw_top top;
	yaml_node_t *root = cfg_root(d);
	if (cfg_parse_map(d, root, top_defs, &top, NULL, err) < 0)
		return -1;

	/* name */
	if (top.name[0]) {
		if (strlen(top.name) >= sizeof hw->name)
			return cfg_errf(err, d, cfg_map_get(d, root, "name"),
					"key 'name': longer than %zu "
					"characters",
					sizeof hw->name - 1);
		memcpy(hw->name, top.name, strlen(top.name) + 1);
	} else {
		stem_of(d->path, hw->name, sizeof hw->name);
	}

	/* device */
	struct hw_device dev;
	if (cfg_parse_map(d, top.device, device_defs, &dev, "device", err) < 0)
		return -1;
	if (dev.capacity == 0)
		return field_err(err, d, top.device, "device", "capacity",
				 "must be > 0", 0);
	if (dev.reserved >= dev.capacity)
		return cfg_errf(err, d, cfg_map_get(d, top.device, "reserved"),
				"device: key 'reserved': %llu bytes must be "
				"less than capacity (%llu bytes)",
				(unsigned long long)dev.reserved,
				(unsigned long long)dev.capacity);
	hw->capacity = dev.capacity;
	hw->reserved = dev.reserved;

	/* compute: classes first, then each op type over its class */
	struct prm_def cdefs[HC_COUNT + OT_COUNT + 1];
	struct hw_compute_nodes cn;
	struct hw_compute cls[HC_COUNT];
	char what[96];
	compute_defs(cdefs);
	memset(&cn, 0, sizeof cn); /* op[conv], op[matmul] have no key */
	if (cfg_parse_map(d, top.compute, cdefs, &cn, "compute", err) < 0)
		return -1;
	for (int c = 0; c < HC_COUNT; c++) {
		struct hw_compute_in in;
		snprintf(what, sizeof what, "compute.%s", class_names[c]);
		memset(&in, 0, sizeof in);
		if (cfg_parse_map(d, cn.cls[c], compute_fields, &in, what,
				  err) < 0 ||
		    check_compute(&in.c, d, cn.cls[c], what, err) < 0 ||
		    parse_fit(d, in.fit, what, &in.c.fit, err) < 0)
			return -1;
		cls[c] = in.c;
	}
	for (int t = 0; t < OT_COUNT; t++) {
		/* an override keeps its class's fit unless it gives one */
		struct hw_compute_in in = {
			.c = cls[class_of((enum wl_op_type)t)], .fit = NULL};
		if (cn.op[t]) {
			snprintf(what, sizeof what, "compute.%s",
				 wl_op_type_name((enum wl_op_type)t));
			if (cfg_parse_map_over(d, cn.op[t], compute_fields,
					       &in, what, err) < 0 ||
			    check_compute(&in.c, d, cn.op[t], what, err) < 0 ||
			    parse_fit(d, in.fit, what, &in.c.fit, err) < 0)
				return -1;
		}
		hw->op[t] = in.c;
	}

	/* link */
	struct hw_link_nodes ln;
	if (cfg_parse_map(d, top.link, link_defs, &ln, "link", err) < 0)
		return -1;
	for (int dir = 0; dir < HW_DIR_COUNT; dir++) {
		yaml_node_t *node = dir == HW_H2D ? ln.h2d : ln.d2h;
		const char *lw = dir == HW_H2D ? "link.h2d" : "link.d2h";
		struct hw_link_in in;
		memset(&in, 0, sizeof in);
		if (cfg_parse_map(d, node, link_dir_defs, &in, lw, err) < 0 ||
		    check_link(&in.l, d, node, lw, err) < 0 ||
		    parse_fit(d, in.fit, lw, &in.l.fit, err) < 0)
			return -1;
		snprintf(what, sizeof what, "%s.derate", lw);
		if (parse_fit(d, in.derate_fit, what, &in.l.derate_fit, err) <
		    0)
			return -1;
		hw->link[dir] = in.l;
	}
	hw->shared_engine = ln.shared_engine;

	/* costs (optional) */
	struct hw_costs_in ci;
	memset(&ci, 0, sizeof ci);
	if (top.costs) {
		if (cfg_parse_map(d, top.costs, costs_defs, &ci, "costs", err) <
		    0)
			return -1;
	} else if (prm_set_defaults(costs_defs, &ci, err) < 0) {
		return -1;
	}
	hw->malloc_cost = ci.malloc_cost;
	hw->free_cost = ci.free_cost;
	hw->host_alloc_cost = ci.host_alloc_cost;
	hw->host_alloc_bytes_per_s = ci.host_alloc_rate;
	if (top.costs &&
	    cfg_map_get(d, top.costs, "host_alloc_bytes_per_s") &&
	    check_phys(d, top.costs, "costs", "host_alloc_bytes_per_s",
		       ci.host_alloc_rate, HW_BYTE_RATE_MIN, HW_BYTE_RATE_MAX,
		       "bytes/s", err) < 0)
		return -1;
	if (ci.fit) {
		struct hw_cost_fits cf;
		if (cfg_parse_map(d, ci.fit, cost_fit_defs, &cf, "costs.fit",
				  err) < 0)
			return -1;
		for (int i = 0; i < 3; i++) {
			snprintf(what, sizeof what, "costs.%s",
				 cost_fit_defs[i].key);
			if (parse_fit(d, cf.f[i], what, &hw->cost_fit[i], err) <
			    0)
				return -1;
		}
	}
	if (parse_conv_algos(hw, d, top.conv_algos, err) < 0 ||
	    parse_gemms(hw, d, top.gemms, err) < 0)
		return -1;

	/* tensor (optional): figures over nothing (mem_bw, launch unused) */
	if (top.tensor) {
		struct hw_tensor_nodes tn;
		memset(&tn, 0, sizeof tn);
		if (cfg_parse_map(d, top.tensor, tensor_defs, &tn, "tensor",
				  err) < 0)
			return -1;
		for (int m = WL_MATH_TF32; m < WL_MATH_COUNT; m++) {
			if (!tn.m[m])
				continue;
			struct hw_compute_in in;
			memset(&in, 0, sizeof in);
			snprintf(what, sizeof what, "tensor.%s",
				 wl_math_names[m]);
			if (cfg_parse_map(d, tn.m[m], tensor_fields, &in, what,
					  err) < 0 ||
			    check_compute(&in.c, d, tn.m[m], what, err) < 0 ||
			    parse_fit(d, in.fit, what, &in.c.fit, err) < 0)
				return -1;
			hw->tensor[m] = in.c;
			hw->has_tensor[m] = true;
		}
	}

	/* host */
	if (cfg_parse_map(d, top.host, host_defs, hw, "host", err) < 0)
		return -1;
	if (check_phys(d, top.host, "host", "zvc_bytes_per_s",
		       hw->zvc_bytes_per_s, HW_BYTE_RATE_MIN, HW_BYTE_RATE_MAX,
		       "bytes/s", err) < 0)
		return -1;
	/* The optional figures default to 0; given, they must be in range. */
	if (cfg_map_get(d, top.host, "zvc_decompress_bytes_per_s") &&
	    check_phys(d, top.host, "host", "zvc_decompress_bytes_per_s",
		       hw->zvc_decompress_bytes_per_s, HW_BYTE_RATE_MIN,
		       HW_BYTE_RATE_MAX, "bytes/s", err) < 0)
		return -1;
	if (!(hw->zvc_decompress_bytes_per_s > 0))
		hw->zvc_decompress_bytes_per_s = hw->zvc_bytes_per_s;
	if (cfg_map_get(d, top.host, "memcpy_bytes_per_s") &&
	    check_phys(d, top.host, "host", "memcpy_bytes_per_s",
		       hw->memcpy_bytes_per_s, HW_BYTE_RATE_MIN,
		       HW_BYTE_RATE_MAX, "bytes/s", err) < 0)
		return -1;
	if (cfg_map_get(d, top.host, "mem_bw") &&
	    check_phys(d, top.host, "host", "mem_bw", hw->host_mem_bw,
		       HW_BYTE_RATE_MIN, HW_BYTE_RATE_MAX, "bytes/s", err) < 0)
		return -1;
	if (cfg_map_get(d, top.host, "flops_per_thread") &&
	    check_phys(d, top.host, "host", "flops_per_thread",
		       hw->host_flops_per_thread, HW_FLOP_RATE_MIN,
		       HW_FLOP_RATE_MAX, "FLOP/s", err) < 0)
		return -1;
	return 0;
}

/* Parse d into *hw only when it is valid. */
static int hw_from_doc(struct hw_profile *hw, struct cfg_doc *d,
		       gms_err *err)
{
	struct hw_profile tmp;
	memset(&tmp, 0, sizeof tmp);
	if (strlen(d->path) >= sizeof tmp.path)
		return gms_errf(err, "%s: path longer than %zu characters",
				d->path, sizeof tmp.path - 1);
	memcpy(tmp.path, d->path, strlen(d->path) + 1);
	if (hw_parse(&tmp, d, err) < 0)
		return -1;
	*hw = tmp;
	return 0;
}

int hw_load_string(struct hw_profile *hw, const char *name, const char *text,
		   gms_err *err)
{
	struct cfg_doc *d;
	if (cfg_load_string(&d, name, text, err) < 0)
		return -1;
	int rc = hw_from_doc(hw, d, err);
	cfg_free(d);
	return rc;
}

const char *hw_datadir(void)
{
	const char *e = getenv("GPUMEMSIM_HOME");
	return e && *e ? e : GMS_DATADIR;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && strcmp(s + a - b, suffix) == 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* "unknown hardware profile" with the names found in dir. */
static int unknown_profile(const char *spec, const char *dir, gms_err *err)
{
	DIR *dd = opendir(dir);
	if (!dd)
		return gms_errf(err,
				"unknown hardware profile '%s' (cannot list "
				"%s: %s)",
				spec, dir, strerror(errno));
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	int rc = 0;
	while ((e = readdir(dd)) != NULL) {
		if (!ends_with(e->d_name, ".yaml") || e->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			char **nn = realloc(names, cap * sizeof *names);
			if (!nn) {
				rc = -1;
				break;
			}
			names = nn;
		}
		size_t l = strlen(e->d_name) - 5;
		names[n] = malloc(l + 1);
		if (!names[n]) {
			rc = -1;
			break;
		}
		memcpy(names[n], e->d_name, l);
		names[n][l] = 0;
		n++;
	}
	closedir(dd);
	if (rc < 0) {
		gms_errf(err, "unknown hardware profile '%s' (out of memory)",
			 spec);
	} else {
		qsort(names, n, sizeof *names, cmp_str);
		char list[700] = "", hint[GMS_NEAR_BUF];
		struct gms_near near;
		gms_near_init(&near, spec);
		for (size_t i = 0; i < n; i++) {
			size_t l = strlen(list);
			snprintf(list + l, sizeof list - l, "%s%s",
				 i ? ", " : "", names[i]);
			gms_near_add(&near, names[i]);
		}
		gms_errf(err,
			 "unknown hardware profile '%s'%s (available in %s: "
			 "%s)",
			 spec, gms_near_hint(&near, hint), dir,
			 n ? list : "none");
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return -1;
}

int hw_load(struct hw_profile *hw, const char *spec, gms_err *err)
{
	if (!spec || !*spec)
		return gms_errf(err, "no hardware profile named");
	char path[1024];
	if (strchr(spec, '/') || ends_with(spec, ".yaml") ||
	    ends_with(spec, ".yml")) {
		if (strlen(spec) >= sizeof path)
			return gms_errf(err, "%s: path too long", spec);
		memcpy(path, spec, strlen(spec) + 1);
	} else {
		char dir[sizeof path];
		int l = snprintf(dir, sizeof dir, "%s/configs/hw",
				 hw_datadir());
		if (l < 0 || (size_t)l >= sizeof dir ||
		    strlen(dir) + strlen(spec) + 7 >= sizeof path)
			return gms_errf(err, "hardware profile '%s': path too "
					"long", spec);
		size_t dl = strlen(dir), sl = strlen(spec);
		memcpy(path, dir, dl);
		path[dl] = '/';
		memcpy(path + dl + 1, spec, sl);
		memcpy(path + dl + 1 + sl, ".yaml", 6);
		if (access(path, F_OK) != 0)
			return unknown_profile(spec, dir, err);
	}
	struct cfg_doc *d;
	if (cfg_load(&d, path, err) < 0)
		return -1;
	int rc = hw_from_doc(hw, d, err);
	cfg_free(d);
	return rc;
}

/* ---- models ---------------------------------------------------------- */

sim_time_t hw_kernel_time(const struct hw_profile *hw, enum wl_op_type t,
			  double flops, double bytes)
{
	return hw_kernel_time_math(hw, t, WL_MATH_FP32, flops, bytes);
}

int hw_math_check(const struct hw_profile *hw, enum wl_math math,
		  gms_err *err)
{
	if ((unsigned)math >= WL_MATH_COUNT)
		return gms_errf(err, "arithmetic %d unknown", (int)math);
	if (math == WL_MATH_FP32 || hw->has_tensor[math])
		return 0;
	return gms_errf(err, "profile %s gives no %s tensor-core throughput "
			     "(key tensor.%s; `gpumemsim help hw`)",
			hw->name, wl_math_names[math], wl_math_names[math]);
}

sim_time_t hw_kernel_time_math(const struct hw_profile *hw,
			       enum wl_op_type t, enum wl_math math,
			       double flops, double bytes)
{
	if ((int)t < 0 || t >= OT_COUNT)
		t = OT_OTHER;
	struct hw_compute tc;
	const struct hw_compute *c = &hw->op[t];
	if ((unsigned)math < WL_MATH_COUNT && math != WL_MATH_FP32 &&
	    hw->has_tensor[math] && class_of(t) != HC_MEMORY) {
		tc = *c;
		tc.peak_flops = hw->tensor[math].peak_flops;
		tc.sat_flops = hw->tensor[math].sat_flops;
		tc.alpha = hw->tensor[math].alpha;
		c = &tc;
	}
	/* Seconds are multiplied out to ns before dividing, so figures that
	 * divide exactly (the test profile's) give exact integers. */
	double comp = 0, mem = 0;
	if (flops > 0 && c->peak_flops > 0) {
		double thr = c->peak_flops;
		if (c->sat_flops > 0 && flops < c->sat_flops)
			thr *= pow(flops / c->sat_flops, c->alpha);
		comp = flops * 1e9 / thr;
	}
	if (bytes > 0 && c->mem_bw > 0)
		mem = bytes * 1e9 / c->mem_bw;
	/* the host's issue cost is not device time (hw.h) */
	double lat = (double)c->launch - (double)hw->host_launch;
	return sim_round_ns((lat > 0 ? lat : 0) + (comp > mem ? comp : mem));
}

sim_time_t hw_device_time(const struct hw_profile *hw, sim_time_t measured)
{
	return measured > hw->host_launch ? measured - hw->host_launch : 0;
}

sim_time_t hw_host_alloc_time(const struct hw_profile *hw, uint64_t n,
			      uint64_t bytes)
{
	sim_time_t t = sim_time_mul(n, hw->host_alloc_cost);
	if (n > 0 && bytes > 0 && hw->host_alloc_bytes_per_s > 0)
		t = sim_time_add(t, sim_round_ns((double)bytes * 1e9 /
						 hw->host_alloc_bytes_per_s));
	return t;
}

sim_time_t hw_copy_time(const struct hw_profile *hw, enum hw_dir dir,
			uint64_t bytes, bool pinned)
{
	if ((int)dir < 0 || dir >= HW_DIR_COUNT)
		dir = HW_H2D;
	const struct hw_link *l = &hw->link[dir];
	double bw = pinned ? l->bw_pinned : l->bw_pageable;
	double ns = (double)l->latency;
	if (bytes > 0 && bw > 0)
		ns += (double)bytes * 1e9 / bw;
	return sim_round_ns(ns);
}

/* ---- help and the test profile -------------------------------------- */

void hw_print_help(FILE *f)
{
	struct prm_def cdefs[HC_COUNT + OT_COUNT + 1];
	compute_defs(cdefs);
	/* The class keys only; the per-op-type keys are listed in prose. */
	cdefs[HC_COUNT] = (struct prm_def)PRM_END;
	fprintf(f, "Hardware profile: configs/hw/NAME.yaml (or a path); "
		   "--hw NAME\n\n");
	fprintf(f, "top level:\n");
	prm_print_help(top_defs, f, "  ");
	fprintf(f, "\ndevice:\n");
	prm_print_help(device_defs, f, "  ");
	fprintf(f, "\ncompute:\n");
	prm_print_help(cdefs, f, "  ");
	fprintf(f, "  and, optionally, any op type as a key, a partial "
		   "override of its class:\n   ");
	size_t col = 3;
	for (int t = 0; t < OT_COUNT; t++) {
		const char *n = wl_op_type_name((enum wl_op_type)t);
		if (!strcmp(n, "conv") || !strcmp(n, "matmul"))
			continue;
		if (col + 1 + strlen(n) > 76) {
			fprintf(f, "\n   ");
			col = 3;
		}
		fprintf(f, " %s", n);
		col += 1 + strlen(n);
	}
	fprintf(f, "\n\ncompute.<class> and compute.<op type> "
		   "(kernel time = launch + max(F / thr(F), B / mem_bw),\n"
		   " thr(F) = peak_flops * min(1, F / sat_flops) ^ alpha):\n");
	prm_print_help(compute_fields, f, "  ");
	fprintf(f, "\ntensor: (optional; the conv and matmul classes of a "
		   "workload of\nprecision tf32, fp16-autocast or bf16-*: "
		   "peak_flops, sat_flops and alpha\nfrom here, mem_bw and "
		   "launch from compute:)\n");
	prm_print_help(tensor_defs, f, "  ");
	fprintf(f, "\ntensor.tf32, tensor.fp16, tensor.bf16:\n");
	prm_print_help(tensor_fields, f, "  ");
	fprintf(f, "\nlink:\n");
	prm_print_help(link_defs, f, "  ");
	fprintf(f, "\nlink.h2d and link.d2h (copy time = latency + bytes / "
		   "bandwidth):\n");
	prm_print_help(link_dir_defs, f, "  ");
	fprintf(f, "\ncosts:\n");
	prm_print_help(costs_defs, f, "  ");
	fprintf(f, "\nfit: (in a compute class or op type, a link direction, "
		   "link derate_fit:,\n and each cost under costs.fit; written "
		   "by `gpumemsim fit`, kept, not used by the model)\n");
	prm_print_help(fit_defs, f, "  ");
	fprintf(f, "\nconv_algos: a sequence of measured cuDNN convolution "
		   "algorithms (`gpumemsim fit`);\n a convolution op of the "
		   "same geometry and pass runs with these instead of the "
		   "model's:\n");
	prm_print_help(conv_algo_defs, f, "  ");
	fprintf(f, "\ngemms: a sequence of measured GEMM shapes (`gpumemsim "
		   "fit`); a matmul op of a\n generated workload of the same "
		   "shape and arithmetic runs in the measured\n time (less "
		   "host.launch) instead of the compute curve's:\n");
	prm_print_help(gemm_defs, f, "  ");
	fprintf(f, "\nhost:\n");
	prm_print_help(host_defs, f, "  ");
}

void hw_test_profile(struct hw_profile *hw, uint64_t capacity)
{
	memset(hw, 0, sizeof *hw);
	snprintf(hw->name, sizeof hw->name, "test");
	hw->capacity = capacity;
	hw->reserved = 0;
	for (int t = 0; t < OT_COUNT; t++)
		hw->op[t] = (struct hw_compute){.peak_flops = 1e12,
						.sat_flops = 1,
						.alpha = 1,
						.mem_bw = 0,
						.launch = 0};
	for (int m = WL_MATH_TF32; m < WL_MATH_COUNT; m++) {
		hw->tensor[m] = hw->op[OT_MATMUL];
		hw->has_tensor[m] = true;
	}
	for (int dir = 0; dir < HW_DIR_COUNT; dir++)
		hw->link[dir] = (struct hw_link){.bw_pinned = 1e9,
						 .bw_pageable = 1e9,
						 .latency = 0,
						 .derate = 1};
	hw->shared_engine = false;
	hw->malloc_cost = 0;
	hw->free_cost = 0;
	hw->host_alloc_cost = 0;
	hw->host_pinned = 0;
	hw->cpu_threads = 1;
	hw->zvc_bytes_per_s = 1e9;
	hw->zvc_decompress_bytes_per_s = 1e9;
	hw->memcpy_bytes_per_s = 1e9;
}
