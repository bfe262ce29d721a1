/*
 * wlkit.h - looking into built workloads, for the generator and trace
 * tests: tensors and ops by name (the test fails when absent), tensor-name
 * lists, building a generator, parameter and MAC totals, live bytes op
 * by op. Include after <cmocka.h>.
 */
#ifndef GMS_WLKIT_H
#define GMS_WLKIT_H

#include "../policies/pol.h"
#include "../sim/ex.h"
#include "../workloads/gen.h"
#include "../workloads/wl_gen.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The DTR trace `file` (a log's name) in the trace directory
 * (wl_dtr_dir: $GMS_DTR_DIR, else ../shared/data/dtr beside the
 * checkout), into path. The logs are not shipped (README, "Third-party
 * data"): when the directory is absent, the test is skipped with the
 * reason (cmocka's skip() leaves the test). */
static inline void dtr_path_or_skip(const char *file, char *path, size_t cap)
{
	char spec[512];
	gms_err err = {{0}};
	snprintf(spec, sizeof spec, "%s%s", WL_DTR_PREFIX, file);
	int rc = wl_dtr_resolve(spec, path, cap, &err);
	if (rc == WL_DTR_ABSENT) {
		print_message("skipped: %s\n", err.msg);
		skip();
	}
	if (rc < 0)
		fail_msg("%s", err.msg);
}

/* The three DTR logs the project reads (README, "Third-party data"). */
#define DTR_RESNET32 "resnet32-56-9000000000.0-2020-10-1-13-3-30-default.log"
#define DTR_TRANSFORMER \
	"transformer-10-8000000000.0-2020-10-1-10-56-5-default.log"
#define DTR_UNET "unet-6-8000000000.0-2020-10-1-10-57-18-default.log"

static inline uint32_t tensor_id(const struct wl_workload *w, const char *name)
{
	uint32_t id = wl_tensor_id(w, name);
	if (id == WL_NONE)
		fail_msg("no tensor '%s'", name);
	return id;
}

static inline uint32_t op_id(const struct wl_workload *w, const char *name)
{
	uint32_t id = wl_op_id(w, name);
	if (id == WL_NONE)
		fail_msg("no op '%s'", name);
	return id;
}

static inline const struct wl_tensor *tensor(const struct wl_workload *w,
					     const char *name)
{
	return &w->tensors[tensor_id(w, name)];
}

static inline const struct wl_op *op(const struct wl_workload *w,
				     const char *name)
{
	return &w->ops[op_id(w, name)];
}

/* One iteration of w under the framework policy on the arena allocator
 * with profile hw, into *st (no OOM asserted); the caller frees it. */
static inline void framework_iteration(const struct wl_workload *w,
				       const struct hw_profile *hw,
				       struct st_run *st)
{
	gms_err err = {{0}};
	struct pol pol;
	if (pol_create(&pol, "framework", NULL, NULL, NULL, 0, &err) < 0)
		fail_msg("%s", err.msg);
	struct ex_cfg cfg = {.hw = hw, .wl = w, .pol = &pol,
			     .allocator = "arena", .iterations = 1};
	memset(st, 0, sizeof *st);
	if (ex_run(&cfg, st, &err) < 0)
		fail_msg("%s", err.msg);
	assert_false(st->oom.hit);
	pol_destroy(&pol);
}

/* Tensor names of an id list, space separated. */
static inline void names_of(const struct wl_workload *w, const uint32_t *ids,
			    uint32_t n, char *buf, size_t cap)
{
	buf[0] = '\0';
	for (uint32_t i = 0; i < n; i++) {
		size_t l = strlen(buf);
		snprintf(buf + l, cap - l, "%s%s", i ? " " : "",
			 w->tensors[ids[i]].name);
	}
}

/* Inputs and outputs of op `name` as "in1 in2 -> out1 out2". */
static inline void assert_op_io(const struct wl_workload *w, const char *name,
			     const char *want)
{
	const struct wl_op *o = op(w, name);
	char in[1024], out[1024], got[2100];
	names_of(w, o->in, o->n_in, in, sizeof in);
	names_of(w, o->out, o->n_out, out, sizeof out);
	snprintf(got, sizeof got, "%s -> %s", in, out);
	if (strcmp(got, want) != 0)
		fail_msg("op '%s': got \"%s\", want \"%s\"", name, got, want);
}

static inline void assert_has(const char *msg, const char *part)
{
	if (!strstr(msg, part))
		fail_msg("message \"%s\" lacks \"%s\"", msg, part);
}

static inline void assert_within(double got, double want, double rel)
{
	if (fabs(got - want) > rel * want)
		fail_msg("%.6g is not within %.2g%% of %.6g", got, rel * 100,
			 want);
}

/* Build generator `name`; the test fails unless it builds, finalized, at
 * the batch asked for. */
static inline struct wl_workload *gen_build_ok(const char *name,
					       int64_t batch, int64_t size,
					       enum wl_framework preset,
					       enum wl_optim optim)
{
	const struct wl_gen *g = wl_gen_find(name);
	if (!g)
		fail_msg("no generator '%s'", name);
	struct wl_gen_args a = {.batch = batch, .size = size,
				.framework = preset, .optimizer = optim,
				.depth = wl_gen_name_depth(g, name)};
	gms_err err = {{0}};
	struct wl_workload *w = wl_gen_build(g, &a, &err);
	if (!w)
		fail_msg("%s: %s", name, err.msg);
	assert_true(w->finalized);
	assert_int_equal(w->batch, batch);
	return w;
}

/* Forward MACs per sample: forward conv and matmul FLOPs / 2 / batch. */
static inline double fwd_macs(const struct wl_workload *w)
{
	double f = 0;
	for (uint32_t i = 0; i < w->n_ops; i++) {
		const struct wl_op *o = &w->ops[i];
		if (o->phase == WL_FWD &&
		    (o->type == OT_CONV || o->type == OT_MATMUL))
			f += o->flops;
	}
	return f / 2.0 / (double)w->batch;
}

/* Parameter elements (fp32) of tensors whose name does not start with
 * `skip` (NULL: all). */
static inline uint64_t param_count(const struct wl_workload *w,
				   const char *skip)
{
	uint64_t bytes = 0;
	for (uint32_t i = 0; i < w->n_tensors; i++) {
		const struct wl_tensor *t = &w->tensors[i];
		if (t->kind != WL_PARAM)
			continue;
		if (skip && strncmp(t->name, skip, strlen(skip)) == 0)
			continue;
		bytes += t->bytes;
	}
	assert_int_equal(bytes % 4, 0);
	return bytes / 4;
}

/* The tiny net of the in-place and personality tests: input 3x8x8, a
 * 1x1 conv to 4 channels (implicit GEMM, no workspace), batchnorm, ReLU,
 * 2x2 max pool, fc to 10 classes, batch 2. */
static inline struct wl_workload *tiny1x1(enum wl_framework fw,
					  enum wl_optim opt)
{
	struct wl_gen_args a = {2, 8, fw, opt};
	gms_err err = {{0}};
	struct gen *g = gen_new("tiny1x1", &a, &err);
	struct gen_tensor x = gen_input(g, "input", 3, 8, 8);
	x = gen_conv_sq(g, "conv1", x, 4, 1, 1, 0, false);
	x = gen_relu(g, "relu1", gen_batchnorm(g, "bn1", x));
	x = gen_maxpool(g, "pool1", x, 2, 2, 0, false);
	x = gen_linear(g, "fc", gen_flatten(g, x), 10, true);
	struct wl_workload *w = gen_finish(g, x, &err);
	if (!w)
		fail_msg("%s", err.msg);
	return w;
}

/* Live tensor bytes during each op of one iteration, at op granularity,
 * by the executor's rules for the framework policy (sim/ex.c): the
 * parameters and optimizer state always; the inputs from the start; an
 * op's outputs from its start (an `inplace` op's output takes over in[0]'s
 * block when this op is in[0]'s last use and it is no larger, as
 * alloc_outputs does) and its workspace (the fastest algorithm's, as
 * framework picks) while it runs; a tensor is freed when its last reader
 * and its release point (wl_tensor.release_after) have run, or after its
 * producer when it has neither. live[k] is the bytes during op k. */
static inline uint64_t *live_bytes(const struct wl_workload *w)
{
	uint64_t *live = calloc(w->n_ops, sizeof *live);
	uint32_t *end = malloc(w->n_tensors * sizeof *end);
	bool *moved = calloc(w->n_tensors, sizeof *moved);
	assert_true(live && end && moved);
	uint64_t now = 0;
	for (uint32_t t = 0; t < w->n_tensors; t++) {
		const struct wl_tensor *x = &w->tensors[t];
		end[t] = x->producer;
		if (x->n_readers && (end[t] == WL_NONE ||
				     x->readers[x->n_readers - 1] > end[t]))
			end[t] = x->readers[x->n_readers - 1];
		if (x->release_after != WL_NONE &&
		    (end[t] == WL_NONE || x->release_after > end[t]))
			end[t] = x->release_after;
		if (x->kind == WL_PARAM || x->kind == WL_OPT_STATE ||
		    x->held)
			end[t] = WL_NONE; /* never freed */
		if (x->producer == WL_NONE)
			now += x->bytes; /* whole-run or per-step input */
	}
	for (uint32_t k = 0; k < w->n_ops; k++) {
		const struct wl_op *op = &w->ops[k];
		for (uint32_t i = 0; i < op->n_out; i++) {
			uint32_t t = op->out[i], s = op->n_in ? op->in[0] : 0;
			if (i == 0 && op->inplace && op->n_in && end[s] == k &&
			    w->tensors[s].bytes >= w->tensors[t].bytes) {
				moved[s] = true; /* its block is t's now */
				now += w->tensors[t].bytes -
				       w->tensors[s].bytes;
				continue;
			}
			now += w->tensors[t].bytes;
		}
		uint64_t ws = op->n_algos
				      ? op->algos[wl_fastest_algo(op)].workspace
				      : op->workspace;
		live[k] = now + ws;
		for (uint32_t t = 0; t < w->n_tensors; t++)
			if (end[t] == k && !moved[t])
				now -= w->tensors[t].bytes;
	}
	free(end);
	free(moved);
	return live;
}

#endif
