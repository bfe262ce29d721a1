/*
 * wl.h - the workload model: one training iteration as ops over tensors.
 *
 * A workload is built with the builder calls below (generators, the trace
 * loader and the YAML loader all use them) and then frozen by wl_finalize,
 * which derives each tensor's producer and readers and checks the graph:
 * every input of an op is produced earlier (or has no producer: inputs,
 * parameters, optimizer state), no tensor is produced twice, sizes > 0.
 *
 * Names live in the workload's own storage; ids are dense indices.
 */
#ifndef GMS_WL_H
#define GMS_WL_H

#include "../sim/common.h"

#include <stdio.h>

/* Tensor kinds (SPEC "Workload"). */
enum wl_kind {
	WL_INPUT,      /* the batch read by the first ops; per iteration */
	WL_PARAM,      /* weights; live for the whole run */
	WL_PARAM_GRAD, /* weight gradients, produced in backward */
	WL_OPT_STATE,  /* optimizer state (momentum, Adam moments); whole run */
	WL_ACT,	       /* forward activations */
	WL_ACT_GRAD,   /* gradients of activations */
	WL_WORKSPACE,  /* scratch named explicitly by a workload */
	WL_KIND_COUNT
};

enum wl_phase { WL_FWD, WL_BWD, WL_UPD, WL_PHASE_COUNT };

/* Physical bounds of the workload figures the input files give (YAML,
 * DTR traces; issue 17). They feed kernel and copy durations; each is far
 * beyond any real figure, so a value past one is a typo or garbage, and
 * the loaders reject it at its file:line:col. What they cannot bound, a
 * sum of legal durations, the clock checks (SIM_TIME_LIMIT, common.h).
 *
 * WL_FLOPS_MAX, FLOPs of one kernel: a kernel's operands are in device
 * memory, at most 141 GB on the largest GPU (H200, NVIDIA datasheet);
 * a square fp16 GEMM whose three n x n operands fill it has n = 1.5e5 and
 * 2n^3 = 7e15 FLOPs, so 1e18 is over 100 times beyond any kernel. */
#define WL_FLOPS_MAX 1e18
/* WL_BYTES_MAX, bytes of one tensor or moved by one kernel: 1e15 (1 PB),
 * about 7,000 times the H200's 141 GB. */
#define WL_BYTES_MAX 1e15
/* WL_OP_TIME_MAX, a measured kernel time in ns: 1e15 ns = 1e6 s, 11.6
 * days; the kernels of the shipped traces and calibrations take us to ms
 * and a training step of the largest models seconds. */
#define WL_OP_TIME_MAX 1e15

/* Op types. Backward forms are their own types because their costs differ.
 * Keep wl_op_type_name() and the hardware profile's classes in step. */
enum wl_op_type {
	OT_CONV, OT_CONV_BWD_DATA, OT_CONV_BWD_FILTER,
	OT_MATMUL, OT_MATMUL_BWD,
	OT_BATCHNORM, OT_BATCHNORM_BWD,
	OT_LAYERNORM, OT_LAYERNORM_BWD,
	OT_RELU, OT_RELU_BWD,
	OT_POOL, OT_POOL_BWD,
	OT_ADD, OT_CONCAT, OT_SPLIT,
	OT_SOFTMAX, OT_SOFTMAX_BWD,
	OT_DROPOUT, OT_DROPOUT_BWD,
	OT_ATTENTION, OT_ATTENTION_BWD,
	OT_EMBEDDING, OT_EMBEDDING_BWD,
	OT_LOSS, OT_LOSS_BWD,
	OT_UPDATE,
	OT_ELEMWISE, /* any other memory-bound elementwise kernel */
	OT_OTHER,
	OT_COUNT
};

/* Lower-case names as written in YAML ("conv_bwd_data"); NULL-safe. */
const char *wl_op_type_name(enum wl_op_type t);
const char *wl_kind_name(enum wl_kind k);
const char *wl_phase_name(enum wl_phase p);
/* Reverse look-ups; return -1 when the name is unknown. */
int wl_op_type_from(const char *name);
int wl_kind_from(const char *name);
int wl_phase_from(const char *name);
/* NULL-terminated name lists, for prm_def choices and messages. */
extern const char *const wl_op_type_names[];
extern const char *const wl_kind_names[];
extern const char *const wl_phase_names[];

#define WL_NONE UINT32_MAX /* "no op" / "no tensor" */

struct wl_tensor {
	uint32_t id;	   /* index in wl_workload.tensors */
	const char *name;  /* unique within the workload */
	uint64_t bytes;	   /* size at the workload's batch */
	enum wl_kind kind; /* what it holds */
	uint32_t producer; /* op that writes it, WL_NONE if none */
	uint32_t *readers; /* ops that read it, in issue order, no repeats */
	uint32_t n_readers;
	uint32_t last_fwd_reader; /* last reader in the forward phase, or
				     WL_NONE (vDNN offloads after it) */
	uint32_t release_after;	  /* release point: the storage is held at
				     least until this op completes (a
				     recorded trace's last handle release),
				     even past its last reader; WL_NONE =
				     freed after the last reader */
	bool held;		  /* allocated when first written and never
				     freed: kept for the rest of the run
				     (Caffe's blobs, wl_set_held) */
	uint8_t esz;		  /* bytes an element as a generator stated
				     it (1, 2, 4, 8: its dtype; wl_set_esz),
				     0 = not stated (files, traces) */
};

/* A convolution algorithm choice (cuDNN-like). */
struct wl_algo {
	const char *name;   /* e.g. "IMPLICIT_GEMM", "FFT" (cuDNN's enum
			       names less their prefix; workloads/conv_algo.h) */
	uint64_t workspace; /* scratch bytes it needs */
	double time_scale;  /* kernel time relative to the op's base time */
	sim_time_t time;    /* measured kernel time, 0 = time_scale times
			       the base time (set only by the executor when
			       it binds a profile's conv_algos: entries) */
};

/* Geometry of a convolution (NCHW, fp32), the key a hardware profile's
 * measured conv_algos: entries are matched on. */
struct wl_conv {
	int64_t n;	     /* batch */
	int64_t c, k;	     /* input and output channels */
	int64_t h, w;	     /* input height and width */
	int64_t ho, wo;	     /* output height and width */
	int64_t r, s;	     /* filter height and width */
	int64_t stride;	     /* both spatial dimensions */
	int64_t pad_h, pad_w; /* zero padding */
	int64_t groups;	     /* 1 (grouped convolutions are not modelled) */
};

/* Shape of a GEMM, the key a hardware profile's measured gemms: entries
 * are matched on (sim/hw.h, struct hw_gemm): `batch` products of an
 * m x k and a k x n matrix (C = A B, 2 m n k FLOPs each). batch 0: the
 * op is no GEMM a generator described. */
struct wl_gemm {
	uint32_t batch;	  /* matrices multiplied (attention: batch x heads;
			     a linear layer: 1) */
	uint32_t m, n, k; /* C is m x n, the reduction k long */
};

struct wl_op {
	uint32_t id;		/* index in wl_workload.ops (issue order) */
	const char *name;	/* unique within the workload */
	enum wl_op_type type;	/* kind of kernel */
	enum wl_phase phase;	/* forward, backward or update */
	uint32_t layer;		/* index in wl_workload.layers */
	uint32_t *in, n_in;	/* tensors read */
	uint32_t *out, n_out;	/* tensors written (allocated at op start) */
	double flops;		/* floating-point operations of the kernel */
	double bytes;		/* bytes the kernel moves to/from DRAM */
	sim_time_t time;	/* measured kernel time; 0 = use the profile */
	uint64_t workspace;	/* scratch for the duration of the kernel,
				   when the op has no algos */
	bool recomputable;	/* may be re-run to regenerate its outputs */
	bool inplace;		/* out[0] may reuse in[0]'s storage (graph
				   mode, when in[0] has no later reader) */
	struct wl_algo *algos;	/* algorithm choices, fastest first; NULL
				   when the op has none */
	uint32_t n_algos;
	const struct wl_conv *conv; /* geometry of a conv, conv_bwd_data or
				   conv_bwd_filter op of a generated
				   workload; NULL otherwise (YAML, traces) */
	uint32_t block;		/* the repeated unit the op belongs to (a
				   transformer layer, a residual block or
				   stage; its backward ops too), numbered
				   from 0 in forward order; WL_NONE = in
				   none, or not marked (files, traces):
				   wl_set_block */
	uint8_t region;		/* enum wl_region: a part of its block
				   the op belongs to */
	struct wl_gemm gemm;	/* shape of a matmul or matmul_bwd op of a
				   generated workload that is one GEMM
				   (gen.c); batch 0 otherwise */
};

/* Parts of a block the generators mark (wl_set_block): what Megatron's
 * selective recomputation checkpoints. Names (YAML `region:`):
 * wl_region_names. */
enum wl_region {
	WL_REGION_NONE,	     /* no particular part */
	WL_REGION_CORE_ATTN, /* core attention: QK^T, scale, mask,
				softmax, dropout, attention over V, or the
				fused kernel that does them (Megatron's
				core_attention module) */
	WL_REGION_COUNT
};
/* "none", "core_attention", NULL */
extern const char *const wl_region_names[];

/* The arithmetic of a workload's matmuls and convolutions: which of the
 * profile's throughputs time them (sim/hw.c, tensor:). */
enum wl_math {
	WL_MATH_FP32, /* FP32 on CUDA cores (the profile's compute classes) */
	WL_MATH_TF32, /* TF32 tensor cores (fp32 storage) */
	WL_MATH_FP16, /* FP16 tensor cores, fp32 accumulation */
	WL_MATH_BF16, /* BF16 tensor cores, fp32 accumulation */
	WL_MATH_COUNT
};
/* "fp32", "tf32", "fp16", "bf16", NULL */
extern const char *const wl_math_names[];

struct wl_workload {
	const char *name;	  /* workload name */
	const char *framework;	  /* personality it follows ("tf-graph",
				     ...; wl_set_framework), NULL when
				     none was given (files, traces) */
	int64_t batch;		  /* batch size the sizes were built for */
	struct wl_tensor *tensors; /* all tensors, by id */
	uint32_t n_tensors;
	struct wl_op *ops;	   /* one iteration, in issue order */
	uint32_t n_ops;
	const char **layers;	   /* layer names, by index */
	uint32_t n_layers;
	bool finalized;		   /* wl_finalize succeeded */
	enum wl_math math;	   /* matmul/conv arithmetic (generators:
				      their precision's; else fp32) */
	uint32_t n_blocks;	   /* 1 + the largest op block mark, 0 when
				      no op is marked (wl_finalize) */
	struct wl_store *store;	   /* private: strings and arrays */
};

/* ---- Builder ------------------------------------------------------- */

struct wl_workload *wl_new(const char *name, int64_t batch);

/* Room for a workload's arrays and name tables, taken from one built
 * earlier (the same network at another batch): building then grows
 * nothing. A hint only; no output depends on it. Zeros: none.
 *
 * `like`, a finalized workload (the same network built at another batch,
 * as exp_run's cache passes it), is followed as a template: while each
 * tensor and op added has the name (and a tensor the kind) of the
 * template's at the same index, the build shares the template's strings,
 * name tables and id lists instead of copying and hashing them, and
 * wl_finalize copies the template's producers and readers when every op
 * read and wrote the template's tensors in the same phase. At the first
 * difference the build makes its own tables of what it has and goes on
 * as any build, so the result is the same, field by field and in every
 * error, as without a template (tests/test_gen_cnn.c, tests/test_wl.c).
 * The build holds a reference to the template (wl_free of either, in any
 * order). Issue 18: names and tables were most of a build's memory and
 * hashing its hottest code. */
struct wl_reserve {
	uint32_t tensors; /* tensors to make room for */
	uint32_t ops;	  /* ops */
	uint32_t layers;  /* layer names */
	const struct wl_workload *like; /* template, NULL: none */
};

/* Reserve room in a workload being built, and take r->like as its
 * template (before anything is added; a finalized one); -1 on out of
 * memory or when the workload is not empty. */
int wl_reserve(struct wl_workload *w, const struct wl_reserve *r);
/* Room for finalized t's tensors, ops and layers, t the template. */
struct wl_reserve wl_reserve_like(const struct wl_workload *t);

/* Does w share its template's names (it matched the template, or a
 * prefix of it, wholly)? For tests. */
bool wl_follows_template(const struct wl_workload *w);

/* The hash of a name in the workload's (and the DTR reader's) name
 * tables; for lookups only, so its values are in no output. */
uint32_t wl_name_hash(const char *s);
void wl_free(struct wl_workload *w);
/* One more holder of finalized w, released by wl_free: a template kept
 * alive between the look-up that found it and the build that follows it
 * (exp_run.c, cache_room). Returns w. */
struct wl_workload *wl_hold(const struct wl_workload *w);
/* The workload a build of the same network may follow as its template
 * (wl_reserve) without making a chain of templates: w when it follows
 * none, the one it follows when it matched it wholly; NULL when it left
 * its template (it holds that one, which would stay alive too). */
const struct wl_workload *wl_template_root(const struct wl_workload *w);

/* Add a tensor; returns its id, or WL_NONE with err (duplicate name,
 * zero size). */
/* State tensor t's element size (1, 2, 4 or 8 bytes; struct
 * wl_tensor.esz). Does nothing to a bad id or size. */
void wl_set_esz(struct wl_workload *w, uint32_t t, unsigned esz);

uint32_t wl_add_tensor(struct wl_workload *w, const char *name,
		       uint64_t bytes, enum wl_kind kind, gms_err *err);

/* Look-ups by name; WL_NONE when absent. */
uint32_t wl_tensor_id(const struct wl_workload *w, const char *name);
uint32_t wl_op_id(const struct wl_workload *w, const char *name);

/* Description of an op to add; arrays are copied. */
struct wl_op_desc {
	const char *name;
	enum wl_op_type type;
	enum wl_phase phase;
	const char *layer;	 /* layer name; NULL = the op's own name */
	const uint32_t *in;	 /* tensor ids read */
	uint32_t n_in;
	const uint32_t *out;	 /* tensor ids written */
	uint32_t n_out;
	double flops, bytes;
	sim_time_t time;	 /* 0 = profile's compute model */
	uint64_t workspace;
	bool recomputable;
	bool inplace;
	const struct wl_algo *algos; /* copied, names included */
	uint32_t n_algos;
	const struct wl_conv *conv; /* copied; NULL: none */
	struct wl_gemm gemm;	    /* batch 0: none */
};
/* Block marks (struct wl_op.block, .region) for the ops added from now
 * on: block (WL_NONE: none) and region (enum wl_region). A workload
 * starts with none; generators set them per layer (gen_block). */
void wl_set_block(struct wl_workload *w, uint32_t block, uint8_t region);

/* Append an op; returns its id or WL_NONE with err. */
uint32_t wl_add_op(struct wl_workload *w, const struct wl_op_desc *d,
		   gms_err *err);

/* Set tensor t's release point (struct wl_tensor.release_after) to op, an
 * op already added, or WL_NONE to clear it; before wl_finalize, and not for
 * parameters or optimizer state (they live for the whole run). wl_finalize
 * checks that the op is not before t's producer or last reader. 0 or -1
 * with err. */
int wl_set_release_after(struct wl_workload *w, uint32_t t, uint32_t op,
			 gms_err *err);

/* Mark tensor t held (struct wl_tensor.held): an activation, gradient or
 * input, before wl_finalize; it then has no release point. 0 or -1 with
 * err. */
int wl_set_held(struct wl_workload *w, uint32_t t, gms_err *err);

/* Record the framework personality the workload follows (a static
 * string, e.g. wl_framework_names[k]); for reports and describe. */
void wl_set_framework(struct wl_workload *w, const char *framework);

/* The allocator model a framework runs on, for runs whose allocator is
 * "framework" (the default): tf-graph and tf-eager "bfc" (TensorFlow's
 * GPU allocator, core/common_runtime/gpu/gpu_bfc_allocator.cc), pytorch
 * "caching" (c10/cuda/CUDACachingAllocator.cpp), caffe "arena" (Caffe
 * cudaMallocs each blob once, src/caffe/syncedmem.cpp, and never frees
 * it, so placement cannot fragment: the plain sum is exact); "bfc" for a
 * workload with no framework (files, traces) or an unknown name. */
const char *wl_framework_allocator(const char *framework);

/* Whether the framework's host thread runs ahead of the device, launching
 * kernels without waiting for them (sim/ex.c, "the host thread"): true
 * for tf-graph, tf-eager, pytorch and caffe (wl.c has the source for
 * each); false for a workload with no framework (files, traces) or an
 * unknown name, which keeps the executor's wait-per-kernel host. */
bool wl_framework_runahead(const char *framework);

/* Derive producers/readers and validate. After this the workload is
 * read-only. */
int wl_finalize(struct wl_workload *w, gms_err *err);

/* The first input tensor (WL_INPUT) no op reads, or WL_NONE; needs only
 * the ops' inputs. The file loaders refuse such a workload (the executor
 * would load the input each iteration and never release it); hand-built
 * ones for analysis (tests) may have one. */
uint32_t wl_unread_input(const struct wl_workload *w);

/* ---- Loaders -------------------------------------------------------- */

/* Load a hand-written workload YAML (format in workloads/README or
 * wl_yaml.c). batch > 0 overrides the file's batch (sizes written as
 * *_per_sample scale with it). Returns a finalized workload or NULL. */
/* The largest workload YAML file wl_load_yaml reads (README, "Input
 * limits"): 4 GiB. The file is streamed, so its size costs time, not
 * memory; a generated 1M-op file is 274 MB, and 4 GiB (some 15M ops)
 * bounds one load to minutes while refusing an endless input
 * (/dev/zero). Other YAML inputs keep cfg.h's CFG_MAX_BYTES. */
#define WL_YAML_MAX_BYTES ((uint64_t)4 << 30)

struct wl_workload *wl_load_yaml(const char *path, int64_t batch,
				 gms_err *err);

/* Load a recorded PyTorch training trace in the JSON-lines format of the
 * Dynamic Tensor Rematerialization project (workloads/wl_dtr.c; the
 * mapping is in workloads/README.md, "Recorded traces"): one op per CALL
 * and per MUTATE, with the measured times; one tensor per storage, held
 * until the trace releases its last handle. Errors name "path:line:col".
 * Returns a finalized workload or NULL. */
struct wl_workload *wl_load_dtr(const char *path, gms_err *err);
/* wl_load_dtr; profile_times: every op timed by the hardware profile from
 * its type, FLOPs and bytes (from SHAPES, workloads/wl_aten.c), the log's
 * TIME values ignored. A log without TIME keys (gpumemsim-record's) is so
 * timed either way. */
struct wl_workload *wl_load_dtr_opt(const char *path, bool profile_times,
				    gms_err *err);
/* Where a trace's op times come from (`times:` of an experiment's trace
 * entry, `simulate --times`): log (the log's TIME where it has one, the
 * profile elsewhere) or profile (the profile for every op:
 * profile_times). */
enum wl_dtr_times { WL_DTR_TIMES_LOG, WL_DTR_TIMES_PROFILE };
extern const char *const wl_dtr_times_names[]; /* "log", "profile" */

/* Which recorded ops the trace loader marks recomputable (`remat:` of an
 * experiment's trace entry, `simulate --remat`):
 *   forward  a forward CALL whose results no MUTATE writes later (the
 *            default: what a framework could re-run and get the same
 *            values back; checkpoint, capuchin);
 *   simrd    every op, backward and mutated results included, as DTR's
 *            simulator rematerialises any op (dtr-semantics.md section 4;
 *            simrd/simrd/runtime/v2.py `_materialize`). */
enum wl_dtr_remat { WL_DTR_REMAT_FORWARD, WL_DTR_REMAT_SIMRD };
extern const char *const wl_dtr_remat_names[]; /* "forward", "simrd" */

/* wl_load_dtr with the recomputability rule r. */
struct wl_workload *wl_load_dtr_remat(const char *path, enum wl_dtr_remat r,
				      gms_err *err);
/* Both options: the rule r and profile_times (wl_load_dtr_opt). */
struct wl_workload *wl_load_dtr_with(const char *path, enum wl_dtr_remat r,
				     bool profile_times, gms_err *err);
/* A PyTorch execution trace (torch.profiler.ExecutionTraceObserver's
 * JSON, Chakra's input; workloads/wl_et.c), r the recomputability rule;
 * errors name file:line:col. wl_load_dtr_batch loads a path ending in
 * ".json" with it. */
struct wl_workload *wl_load_et(const char *path, enum wl_dtr_remat r,
			       gms_err *err);
/* wl_load_dtr_with at batch (0: the log's own). Another batch needs the
 * log's batch marks (ANNOTATE BATCH, gpumemsim-record 2 or later; issue
 * 35): sizes and SHAPES dimensions marked proportional to the batch are
 * scaled to it; without marks it is an error. */
struct wl_workload *wl_load_dtr_batch(const char *path, enum wl_dtr_remat r,
				      bool profile_times, int64_t batch,
				      gms_err *err);
/* wl_load_dtr_batch under each of the n rules r[i] into out[i], from one
 * reading of the log (the rule decides only which ops are recomputable,
 * after the log is read): the workloads two calls would build, at about
 * the cost of one (recorded.yaml names each log under both rules; issue
 * 37). 0, or -1 with err set and every out[i] NULL. */
int wl_load_dtr_rules(const char *path, const enum wl_dtr_remat *r, size_t n,
		      bool profile_times, int64_t batch,
		      struct wl_workload **out, gms_err *err);

/* The DTR traces' directory (README, "Third-party data"): the logs are
 * not shipped (their repository carries no licence). It is
 * $GMS_DTR_DIR when set and not empty, else <data dir>/../shared/data/dtr
 * (hw_datadir(): $GPUMEMSIM_HOME or the checkout built from). Written
 * into out (cap bytes); -1 when it does not fit. */
int wl_dtr_dir(char *out, size_t cap);

/* A trace name as an experiment or the command line gives it: a name
 * "dtr:FILE" is FILE in wl_dtr_dir(); anything else is a path, copied.
 * Returns 0 with the path in out; WL_DTR_ABSENT when it is a "dtr:" name
 * and the directory does not exist (err says so and how to get the
 * logs: callers skip); -1 with err when it does not fit. */
#define WL_DTR_PREFIX "dtr:"
/* The largest DTR or recorded log read (whole, into memory; README
 * "Input limits"): 1 GiB, some 600 times the largest shipped
 * (densenet121-2-recorded.log, 1.7 MB) and 1000 times simrd's largest
 * (transformer, 1.06 MB); lines at most GMS_MAX_LINE (shipped: 1100
 * bytes). */
#define WL_DTR_MAX_BYTES ((uint64_t)1 << 30)
#define WL_DTR_ABSENT 1
int wl_dtr_resolve(const char *spec, char *out, size_t cap, gms_err *err);

/* Sum of bytes of tensors of a kind. */
uint64_t wl_bytes_of_kind(const struct wl_workload *w, enum wl_kind k);

/* The op's fastest algorithm: the least time_scale, ties to the least
 * workspace (vDNN's performance-optimal "p" choice); 0 when the op has none. */
uint32_t wl_fastest_algo(const struct wl_op *op);

/* The same over a list al[0..n): the fastest whose workspace is at most
 * limit (Caffe's choice under its workspace limit, gen.c conv_choice);
 * n when none is. */
uint32_t wl_fastest_algo_within(const struct wl_algo *al, uint32_t n,
				uint64_t limit);

/* The op's memory-optimal algorithm: the least workspace, ties to the
 * least time_scale (vDNN's "m" choice; the executor's fallback offer); 0
 * when the op has none. */
uint32_t wl_least_workspace_algo(const struct wl_op *op);

/* cuDNN's convolution algorithms by enum value (cuDNN 7/8 cudnn.h) for
 * the pass of op type t (OT_CONV: cudnnConvolutionFwdAlgo_t,
 * OT_CONV_BWD_DATA, OT_CONV_BWD_FILTER: their own enums), named less
 * their prefix ("IMPLICIT_GEMM", "ALGO_0"); NULL when t is not a
 * convolution or v is out of range. */
const char *wl_conv_algo_name(enum wl_op_type t, int v);
/* The same names as one NULL-terminated table by enum value; NULL when t
 * is not a convolution. */
const char *const *wl_conv_algo_names(enum wl_op_type t);

/* The enum value of an algorithm of op type t's pass written as its
 * decimal value (what `gpumemsim calibrate` records), its name less the
 * prefix or its full cuDNN name, in any case ("7", "winograd_nonfused",
 * "CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED"); -1 if none. */
int wl_conv_algo_value(enum wl_op_type t, const char *s);

/* The same two choices over any algorithm list (fastest: least
 * time_scale, ties to the least workspace; least workspace: ties to the
 * least time_scale); 0 when n == 0. */
uint32_t wl_fastest_of(const struct wl_algo *a, uint32_t n);
uint32_t wl_least_workspace_of(const struct wl_algo *a, uint32_t n);

/* Scratch bytes of op under algorithm a (op->workspace when it has no
 * algos); wl_op_max_workspace: the most any of its algorithms needs. */
uint64_t wl_op_workspace(const struct wl_op *op, uint32_t a);
uint64_t wl_op_max_workspace(const struct wl_op *op);

/* Print a table of the workload (wl_describe.c): per layer (ops,
 * parameters, activation bytes, forward and backward FLOPs) and totals,
 * or with per_op, one row per op (type, phase, layer, inputs, output
 * bytes, FLOPs, DRAM bytes, workspace of the fastest algorithm and the
 * most of any). For `gpumemsim describe`. */
void wl_describe(const struct wl_workload *w, bool per_op, FILE *f);

#endif
