/*
 * conv_algo.h - the cuDNN convolution algorithm model: which algorithms
 * cuDNN offers for a convolution's geometry and pass, with the workspace
 * each needs and its arithmetic relative to direct convolution. The
 * sources of every rule are in conv_algo.c's header comment (and in
 * README.md, "Convolution algorithms").
 *
 * Names are cuDNN's enum names less their prefix, as wl_conv_algo_name
 * (wl.h) spells them: "IMPLICIT_GEMM", "WINOGRAD_NONFUSED", "ALGO_0", ...
 */
#ifndef GMS_CONV_ALGO_H
#define GMS_CONV_ALGO_H

#include "wl.h"

/* The three cuDNN convolution calls. */
enum ca_pass {
	CA_FWD,	       /* cudnnConvolutionForward (OT_CONV) */
	CA_BWD_DATA,   /* cudnnConvolutionBackwardData (OT_CONV_BWD_DATA) */
	CA_BWD_FILTER, /* cudnnConvolutionBackwardFilter (OT_CONV_BWD_FILTER) */
	CA_PASS_COUNT
};

/* Most entries ca_algos writes (forward offers at most 7). */
#define CA_MAX_ALGOS 8

/* Fill out[] (room for CA_MAX_ALGOS) with the algorithms the model says
 * cuDNN offers for a convolution of geometry g (g->groups must be 1;
 * g->ho, g->wo the forward output) in pass p, in cuDNN's enum order;
 * return the count (>= 2: one without workspace is always offered).
 * Names point to static strings; time_scale is the algorithm's
 * arithmetic over direct convolution's; time is 0. */
uint32_t ca_algos(const struct wl_conv *g, enum ca_pass p,
		  struct wl_algo out[CA_MAX_ALGOS]);

/* The workspace rule of algorithm `name` ("FFT", "FFT_TILING",
 * "WINOGRAD_NONFUSED") in pass p, whether or not ca_algos would list it
 * for g; 0 for any other name. */
uint64_t ca_workspace(const struct wl_conv *g, enum ca_pass p,
		      const char *name);

/* The pass of a convolution op type; -1 for any other type. */
int ca_pass_of(enum wl_op_type t);

#endif
