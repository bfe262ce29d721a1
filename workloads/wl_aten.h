/*
 * wl_aten.h - costs of recorded ATen ops (logs of gpumemsim-record, the
 * DTR format's SHAPES extension; workloads/README.md "Logs from
 * gpumemsim-record"): the shape strings, and each op's FLOPs, bytes and
 * convolution geometry, from its ATen name and shapes, so that a
 * hardware profile times a recorded op as it times a generated one.
 */
#ifndef GMS_WL_ATEN_H
#define GMS_WL_ATEN_H

#include "wl.h"

/* Most dimensions a shape may have. ATen's own limit is 64
 * (c10/core/TensorImpl.h); no op of the shipped logs has more than 4. */
#define WL_ATEN_DIMS 8

/* A tensor's shape as the recorder writes it: "float32[2,3,224,224]", a
 * dimension proportional to the batch followed by 'b' ("float32[2b,3]"). */
struct wl_aten_shape {
	uint32_t elem;		      /* bytes per element of the dtype */
	uint32_t ndim;		      /* dimensions (0: a scalar) */
	uint32_t batched;	      /* bit k: dim[k] was written "Db",
					 proportional to the batch (issue
					 35) */
	int64_t dim[WL_ATEN_DIMS];    /* sizes */
};

/* Parse s; 0, or -1 with why (a static string) set. */
int wl_aten_shape_parse(const char *s, struct wl_aten_shape *out,
			const char **why);

/* An op's cost. */
struct wl_aten_cost {
	enum wl_op_type type; /* the op type (refined from the caller's) */
	double flops;	      /* floating-point operations */
	double bytes;	      /* bytes read and written */
	bool known;	      /* the name is one the table knows */
	bool has_conv;	      /* conv holds a convolution's geometry */
	struct wl_conv conv;  /* its geometry (forward and backward) */
};

/* Cost of ATen op `name` of type `type` (wl_dtr.c's reading of the name)
 * with inputs in[0 .. n_in) and outputs out[0 .. n_out). */
void wl_aten_cost(const char *name, enum wl_op_type type,
		  const struct wl_aten_shape *in, uint32_t n_in,
		  const struct wl_aten_shape *out, uint32_t n_out,
		  struct wl_aten_cost *c);

/* An ATen op's type (from its name and phase), FLOPs, bytes and, for a
 * convolution, its geometry and cuDNN algorithms into desc (conv and
 * algos, room for CA_MAX_ALGOS, are pointed at from desc): what the
 * recorded logs (wl_dtr.c, where it lives) and PyTorch execution traces
 * (wl_et.c) both need. */
void wl_aten_op_desc(const char *name, enum wl_phase phase,
		     const struct wl_aten_shape *in, uint32_t n_in,
		     const struct wl_aten_shape *out, uint32_t n_out,
		     struct wl_op_desc *desc, struct wl_algo *algos,
		     struct wl_conv *conv);

/* Workload name and batch from a log's file name (wl_dtr.c):
 * "<model>-<batch>-<...>.log" (or .jsonl, .json) gives (model, batch);
 * any other name (its base name without the extension, 1). */
void wl_dtr_name_from_path(const char *path, char *name, size_t cap,
			   int64_t *batch);

#endif
