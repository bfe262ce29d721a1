/*
 * wl_gen.h - the network generators: one training iteration of a named
 * network (AlexNet, VGG, ResNet, GoogLeNet, Inception, DenseNet, BERT, the
 * vDNN++ constructed net) at a given batch and input size.
 *
 * Each generator builds through the wl.h builder and returns a finalized
 * workload. The table wl_gens[] is what `gpumemsim list workloads` prints
 * and what an experiment's `{name: resnet50, batch: 64}` looks up.
 */
#ifndef GMS_WL_GEN_H
#define GMS_WL_GEN_H

#include "wl.h"

/* What a framework keeps (the "framework presets"). */
enum wl_preset {
	WL_PRESET_GRAPH, /* in-place ReLU where safe, gradient buffers reused */
	WL_PRESET_EAGER, /* no in-place ops */
	WL_PRESET_COUNT
};

/* Optimizer of the update phase (its state sizes). */
enum wl_optim {
	WL_OPTIM_SGD,  /* SGD with momentum: one state tensor per parameter */
	WL_OPTIM_ADAM, /* Adam: two (first and second moment) */
	WL_OPTIM_COUNT
};

extern const char *const wl_preset_names[]; /* "graph", "eager", NULL */
extern const char *const wl_optim_names[];  /* "sgd", "adam", NULL */

/* Arguments every generator takes. */
struct wl_gen_args {
	int64_t batch;		  /* samples per iteration, >= 1 */
	int64_t size;		  /* input side in pixels (images) or
				     sequence length (BERT); 0 = the
				     generator's default_size */
	enum wl_preset preset;	  /* graph or eager */
	enum wl_optim optimizer;  /* sgd or adam */
};

struct wl_gen {
	const char *name;	/* "resnet50": what experiments name */
	const char *desc;	/* one line: the network and its source */
	const char *size_name;	/* "image" or "seq": what `size` means */
	int64_t default_size;	/* e.g. 224, 299, 128 */
	int64_t min_size;	/* smallest size the architecture accepts */
	/* Build one iteration; returns a finalized workload, or NULL with
	 * err (bad size, out of memory). */
	struct wl_workload *(*build)(const struct wl_gen_args *a,
				     gms_err *err);
};

/* Every generator, in the order `list workloads` prints; ends with an
 * entry whose name is NULL. */
extern const struct wl_gen wl_gens[];

/* Look a generator up by name; NULL when unknown. */
const struct wl_gen *wl_gen_find(const char *name);
/* wl_gen_find, or NULL with "unknown generator 'x' (known: ...)". */
const struct wl_gen *wl_gen_lookup(const char *name, gms_err *err);

/* Build: checks a->batch >= 1 and a->size (0 -> default, else >=
 * min_size) and calls g->build. */
struct wl_workload *wl_gen_build(const struct wl_gen *g,
				 const struct wl_gen_args *a, gms_err *err);

#endif
