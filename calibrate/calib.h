/*
 * calib.h - calibration: the measurement CSV, fitting it into a hardware
 * profile (fit.c, `gpumemsim fit`) and measuring the host (host.c,
 * `gpumemsim calibrate --host`).
 *
 * The GPU microbenchmarks (calibrate/gpu_*.cu, `make calibrate`, run as
 * build/calibrate-gpu) write one CSV; `gpumemsim fit` reads it. Its
 * format, defined here once (README.md quotes it):
 *
 *   # gpumemsim calibration v1
 *   # device: NVIDIA H100 PCIe          metadata lines "# key: value",
 *   # driver: 13000                     before the header; keys below
 *   # runtime: 13000
 *   bench,kind,param,size_bytes,flops,repeats,median_ns,p10_ns,p90_ns
 *   copy,h2d_pinned,,4096,0,50,5210,5150,5400
 *   conv,fwd,layer=r50.c1;n=32;c=3;h=224;w=224;k=64;r=7;s=7;stride=2;pad=3;algo=IMPLICIT_GEMM,0,7.5e10,20,...
 *
 * Metadata keys: device (name), driver and runtime (CUDA versions as
 * cudaDriverGetVersion/cudaRuntimeGetVersion give them), cudnn, cublas
 * (versions, when built with them), memory_bytes (cudaDeviceProp
 * totalGlobalMem), free_bytes (cudaMemGetInfo free after the context and
 * library handles exist), sms, async_engines (asyncEngineCount),
 * conv_math (fma: the conv rows ran FP32 on CUDA cores, cuDNN's
 * CUDNN_FMA_MATH; tf32: on TF32 Tensor Cores, --tf32; `fit` checks it
 * against --precision). Other
 * keys are kept as comments. Any other line starting with '#' is a
 * comment; blank lines are skipped.
 *
 * Columns (all present on every row; empty param allowed):
 *   bench       copy | alloc | launch | matmul | conv | memory
 *   kind        per bench:
 *     copy      h2d_pinned h2d_pageable d2h_pinned d2h_pageable
 *               h2d_bidir d2h_bidir (pinned, this direction's copy timed
 *               on its own stream while the other direction runs)
 *     alloc     malloc free host_alloc host_free
 *     launch    empty (an empty kernel, launch to completion)
 *     matmul    fp32 tf32 fp16 (cuBLAS GEMM)
 *     conv      fwd bwd_data bwd_filter (cuDNN, one row per algorithm)
 *     memory    elementwise batchnorm pool
 *   param       ';'-separated key=value: matmul m,n,k; conv layer, n, c,
 *               h, w, k, r, s, stride, pad, algo; else empty
 *   size_bytes  bytes copied / allocated / moved to and from DRAM
 *               (memory, matmul); for conv: the algorithm's workspace
 *   flops       floating-point operations (matmul 2mnk, conv 2 x MACs)
 *   repeats     timed repetitions after warm-up, >= 1
 *   median_ns   median time of one repetition, > 0
 *   p10_ns, p90_ns   10th and 90th percentiles (the spread)
 */
#ifndef GMS_CALIB_H
#define GMS_CALIB_H

#include "../sim/hw.h"

/* The largest calibration CSV cal_csv_read reads (README "Input
 * limits"): 64 MiB, some 1.5 million rows (a calibration writes a few
 * thousand); lines at most GMS_MAX_LINE. */
#define CAL_CSV_MAX_BYTES ((uint64_t)64 << 20)
#define CAL_CSV_MAGIC "# gpumemsim calibration v1"
#define CAL_CSV_HEADER                                                     \
	"bench,kind,param,size_bytes,flops,repeats,median_ns,p10_ns,p90_ns"

enum cal_bench { CB_COPY, CB_ALLOC, CB_LAUNCH, CB_MATMUL, CB_CONV,
		 CB_MEMORY, CB_GEMM, CB_COUNT };

/* One measurement row. */
struct cal_row {
	enum cal_bench bench; /* which benchmark */
	int kind;	      /* index in the bench's kinds (cal_kinds) */
	char param[256];      /* the param column as written */
	double size_bytes;    /* bytes (conv: workspace) */
	double flops;	      /* FLOPs */
	int64_t repeats;      /* timed repetitions */
	double median_ns;     /* median time */
	double p10_ns, p90_ns; /* spread */
	long line;	      /* line in the file, for messages */
};

/* A metadata line "# key: value". */
struct cal_meta {
	char key[64];	/* key */
	char value[192]; /* value, trimmed */
};

/* A measurement file read into memory. */
struct cal_csv {
	char path[512];	       /* file name for messages */
	struct cal_row *rows;  /* measurement rows in file order */
	size_t n_rows;	       /* entries of rows */
	struct cal_meta *meta; /* metadata in file order */
	size_t n_meta;	       /* entries of meta */
	long lines;	       /* lines in the file (for end-of-file
				  messages) */
};

/* The bench names and each bench's kinds (NULL-terminated). */
const char *cal_bench_name(enum cal_bench b);
const char *const *cal_kinds(enum cal_bench b);

/* Read a measurement CSV. Errors read "FILE:LINE: column 'x': problem"
 * (or "FILE:LINE: problem" for the line as a whole). */
int cal_csv_read(struct cal_csv *c, const char *path, gms_err *err);
void cal_csv_free(struct cal_csv *c);

/* A metadata value, or NULL. */
const char *cal_meta_get(const struct cal_csv *c, const char *key);

/* Integer value of `key` in a param string "a=1;b=2" (0 and -1 when
 * absent or not an integer), and a string value into buf (-1 absent). */
int cal_param_int(const char *param, const char *key, int64_t *out);
int cal_param_str(const char *param, const char *key, char *buf, size_t n);

/* ---- fitting (fit.c) ----------------------------------------------- */

/* Quality of one fit (the profile's fit: keys). */
struct cal_quality {
	double r2;	  /* R^2 (NAN for a median) */
	double worst_rel; /* max |y - model| / y */
	size_t points;	  /* points fitted */
};

/* y = c[0] * x0 + c[1] * x1 + ... by least squares weighted 1/y^2 (the
 * relative residuals are minimised: sizes span six decades). x is n rows
 * of p columns, row-major. Needs p + 1 distinct rows of x (one more
 * than the parameters, so that the fit has a residual to judge it by).
 * Returns 0 or -1 (singular, too few distinct points). */
int cal_fit_linear(const double *x, const double *y, size_t n, size_t p,
		   double *c, struct cal_quality *q, gms_err *err);

/* Distinct rows among n rows of p columns (row-major). */
size_t cal_distinct(const double *x, size_t n, size_t p);

/* The compute model of hw.h fitted to (flops, ns) points (at least 5
 * distinct FLOP counts: four parameters and one more): t = launch +
 * F / (peak * min(1, F / sat)^alpha). Fills launch (ns), peak (FLOP/s),
 * sat (FLOPs; 0 when no saturation shows), alpha. */
struct cal_compute_fit {
	double launch_ns; /* fixed cost per kernel */
	double peak;	  /* FLOP/s at saturation */
	double sat;	  /* saturation point, FLOPs */
	double alpha;	  /* rise below saturation, (0, 1] */
	struct cal_quality q; /* fit quality */
};
int cal_fit_compute(const double *flops, const double *ns, size_t n,
		    struct cal_compute_fit *f, gms_err *err);
/* Its first step alone: the best point of the (sat, alpha) grid, each
 * solved by weighted linear least squares (no polish, no quality). */
int cal_fit_grid(const double *flops, const double *ns, size_t n,
		 struct cal_compute_fit *f, gms_err *err);

/* Options of `gpumemsim fit`. */
struct cal_fit_opts {
	const char *name;      /* profile name; NULL: the output's stem */
	const char *base;      /* profile for what is not measured (host
				  section), or NULL */
	const char *precision; /* matmul rows that make compute.matmul:
				  fp32 (default), tf32, fp16 */
	bool force;	       /* --force: keep fits whose R^2 is below
				  CAL_MIN_R2 (said in the log) */
};

/* The least R^2 a fit may have for `gpumemsim fit` to write it (README,
 * "Calibration"): below it the model leaves more than a tenth of the
 * variance of the times unexplained, i.e. the measurements do not follow
 * it (a project choice: the synthetic data of tests/test_fit.c, with
 * 0.5% noise, fits at R^2 > 0.9999; a degenerate file, every matmul at
 * one FLOP count, gave R^2 < 0). --force keeps such a fit. */
#define CAL_MIN_R2 0.9

/* Fit the CSV at `csv` into a profile written to `out` (all or nothing;
 * the text is loaded with hw_load_string before it is committed).
 * Prints a summary of the fits to `log` (may be NULL). */
int cal_fit_file(const char *csv, const char *out,
		 const struct cal_fit_opts *o, FILE *log, gms_err *err);

/* Write a profile's text to `out` all or nothing, after checking that it
 * loads (hw_load_string) as it is. */
int cal_write_profile(const char *out, const char *text, gms_err *err);

/* ---- host calibration (host.c) ------------------------------------- */

/* Zero-value compression (vDNN++ IV-C, Rhu et al. cDMA): the input is
 * 32-bit words in groups of 32; each group becomes a 32-bit mask of its
 * nonzero words followed by those words, packed. A tail of fewer than 32
 * words is a group with fewer mask bits. Worst case n + ceil(n / 32)
 * words. Returns the compressed size in words. */
size_t cal_zvc_compress(const uint32_t *in, size_t n, uint32_t *out);
/* Inverse: writes n words to out from the compressed stream; returns the
 * words of `in` consumed. */
size_t cal_zvc_decompress(const uint32_t *in, size_t n, uint32_t *out);
/* Words of output space the compressor may need for n input words. */
size_t cal_zvc_bound(size_t n);

/* Synthetic activations: n floats, each nonzero (a positive value, as
 * after ReLU) with probability `density`, from a fixed seed. */
void cal_activations(uint32_t *out, size_t n, double density,
		     unsigned long seed);

/* Options and results of `gpumemsim calibrate --host`. */
struct cal_host_opts {
	int64_t threads;   /* threads timed at once (each its own buffer) */
	double density;	   /* fraction of nonzero activations */
	uint64_t bytes;	   /* buffer bytes per thread */
	int64_t repeats;   /* timed repetitions (median kept) */
};

struct cal_host_result {
	double memcpy_bps;	   /* memcpy bytes/s per thread */
	double zvc_bps;		   /* compression input bytes/s per thread */
	double zvc_decompress_bps; /* decompression output bytes/s per
				      thread */
	double ratio;		   /* compressed / original bytes */
	bool round_trip_ok;	   /* every buffer decompressed exactly */
};

int cal_host_measure(const struct cal_host_opts *o,
		     struct cal_host_result *r, gms_err *err);

/* Write `base_path` (a profile) to `out` with its host: section replaced
 * by the measured figures (pinned kept from the base), all or nothing,
 * checked with hw_load_string first. */
int cal_host_write(const char *base_path, const char *out,
		   const struct cal_host_opts *o,
		   const struct cal_host_result *r, gms_err *err);

#endif
