/*
 * test_wl.c - the workload model: names, builder, wl_finalize (derived
 * producers, readers and layers, and every validation error) and the YAML
 * loader (fixtures, batch scaling, errors located at file:line:col and
 * key). Run from the repository root: fixtures are found relative to it.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "../sim/cfg.h"
#include "../workloads/wl.h"
#include "../workloads/wl_cache.h"

#define FIX "tests/fixtures/"
#define MIB GMS_MIB

/* ---- helpers -------------------------------------------------------- */

static void assert_has(const char *msg, const char *part)
{
	if (!strstr(msg, part))
		fail_msg("message \"%s\" lacks \"%s\"", msg, part);
}

static uint32_t tid(const struct wl_workload *w, const char *name)
{
	uint32_t id = wl_tensor_id(w, name);
	if (id == WL_NONE)
		fail_msg("no tensor '%s'", name);
	return id;
}

static const struct wl_tensor *T(const struct wl_workload *w,
				 const char *name)
{
	return &w->tensors[tid(w, name)];
}

static const struct wl_op *O(const struct wl_workload *w, const char *name)
{
	uint32_t id = wl_op_id(w, name);
	if (id == WL_NONE)
		fail_msg("no op '%s'", name);
	return &w->ops[id];
}

/* Readers of tensor `name` as op names joined by spaces. */
static void assert_readers(const struct wl_workload *w, const char *name,
			   const char *want)
{
	const struct wl_tensor *t = T(w, name);
	char got[512] = "";
	for (uint32_t i = 0; i < t->n_readers; i++) {
		if (i)
			strcat(got, " ");
		strcat(got, w->ops[t->readers[i]].name);
	}
	if (strcmp(got, want) != 0)
		fail_msg("readers of '%s': got \"%s\", want \"%s\"", name, got,
			 want);
}

static uint32_t add_t(struct wl_workload *w, const char *name, uint64_t b,
		      enum wl_kind k)
{
	gms_err e = {{0}};
	uint32_t id = wl_add_tensor(w, name, b, k, &e);
	if (id == WL_NONE)
		fail_msg("wl_add_tensor(%s): %s", name, e.msg);
	return id;
}

/* Add an op with the given inputs and outputs (arrays end with WL_NONE);
 * returns its id or WL_NONE with the message in *e. */
static uint32_t add_o(struct wl_workload *w, const char *name,
		      enum wl_op_type type, enum wl_phase phase,
		      const char *layer, const uint32_t *in,
		      const uint32_t *out, gms_err *e)
{
	uint32_t n_in = 0, n_out = 0;
	while (in && in[n_in] != WL_NONE)
		n_in++;
	while (out && out[n_out] != WL_NONE)
		n_out++;
	struct wl_op_desc d = {
		.name = name,
		.type = type,
		.phase = phase,
		.layer = layer,
		.in = in,
		.n_in = n_in,
		.out = out,
		.n_out = n_out,
		.recomputable = phase == WL_FWD,
	};
	return wl_add_op(w, &d, e);
}

#define IDS(...) ((const uint32_t[]){__VA_ARGS__, WL_NONE})
#define NOIDS ((const uint32_t[]){WL_NONE})

static uint32_t add_ok(struct wl_workload *w, const char *name,
		       enum wl_op_type type, enum wl_phase phase,
		       const char *layer, const uint32_t *in,
		       const uint32_t *out)
{
	gms_err e = {{0}};
	uint32_t id = add_o(w, name, type, phase, layer, in, out, &e);
	if (id == WL_NONE)
		fail_msg("wl_add_op(%s): %s", name, e.msg);
	return id;
}

/* ---- names ---------------------------------------------------------- */

static void test_names(void **state)
{
	(void)state;
	int n = 0;
	while (wl_op_type_names[n])
		n++;
	assert_int_equal(n, OT_COUNT);
	for (int i = 0; i < OT_COUNT; i++) {
		assert_string_equal(wl_op_type_name((enum wl_op_type)i),
				    wl_op_type_names[i]);
		assert_int_equal(wl_op_type_from(wl_op_type_names[i]), i);
	}
	n = 0;
	while (wl_kind_names[n])
		n++;
	assert_int_equal(n, WL_KIND_COUNT);
	n = 0;
	while (wl_phase_names[n])
		n++;
	assert_int_equal(n, WL_PHASE_COUNT);
	/* Spot checks of enum order. */
	assert_string_equal(wl_op_type_name(OT_CONV_BWD_DATA), "conv_bwd_data");
	assert_string_equal(wl_op_type_name(OT_UPDATE), "update");
	assert_string_equal(wl_op_type_name(OT_OTHER), "other");
	assert_string_equal(wl_kind_name(WL_PARAM), "parameter");
	assert_string_equal(wl_kind_name(WL_OPT_STATE), "opt_state");
	assert_string_equal(wl_kind_name(WL_ACT_GRAD), "act_grad");
	assert_string_equal(wl_phase_name(WL_BWD), "backward");
	assert_int_equal(wl_kind_from("activation"), WL_ACT);
	assert_int_equal(wl_phase_from("update"), WL_UPD);
	/* Unknown and out of range. */
	assert_int_equal(wl_op_type_from("convolution"), -1);
	assert_int_equal(wl_kind_from(NULL), -1);
	assert_int_equal(wl_phase_from(""), -1);
	assert_non_null(wl_op_type_name(OT_COUNT));
	assert_non_null(wl_kind_name((enum wl_kind)-1));
	assert_non_null(wl_phase_name(WL_PHASE_COUNT));
}

/* ---- builder and finalize ------------------------------------------- */

/*
 * The hand-worked graph:
 *   0 f1  fwd  layer L1   reads x, w      writes a
 *   1 f2  fwd  layer L2   reads a, a      writes b
 *   2 f3  fwd  (f3)       reads a, b      writes c
 *   3 b3  bwd  layer f3   reads c, b, a   writes gb
 *   4 b1  bwd  layer L1   reads gb, x, w  writes gw
 *   5 upd upd  (upd)      reads w, gw, m  writes nothing
 * Readers: x f1 b1 (last fwd f1); w f1 b1 upd (f1); m upd (none);
 * a f2 f3 b3 (f3); b f3 b3 (f3); c b3 (none: b3 is backward); gb b1;
 * gw upd. Layers: L1 0, L2 1, f3 2, upd 3.
 */
/* The small workload, activations k times as large, after reserving r
 * (NULL: nothing). */
static struct wl_workload *build_small_like(const struct wl_reserve *r,
					    uint64_t k)
{
	struct wl_workload *w = wl_new("small", 2 * (int64_t)k);
	assert_non_null(w);
	if (r)
		assert_int_equal(wl_reserve(w, r), 0);
	uint32_t x = add_t(w, "x", 100 * k, WL_INPUT);
	uint32_t wt = add_t(w, "w", 10, WL_PARAM);
	uint32_t m = add_t(w, "m", 10, WL_OPT_STATE);
	uint32_t a = add_t(w, "a", 200 * k, WL_ACT);
	uint32_t b = add_t(w, "b", 300 * k, WL_ACT);
	uint32_t c = add_t(w, "c", 400 * k, WL_ACT);
	uint32_t gb = add_t(w, "gb", 300 * k, WL_ACT_GRAD);
	uint32_t gw = add_t(w, "gw", 10, WL_PARAM_GRAD);
	assert_int_equal(add_ok(w, "f1", OT_MATMUL, WL_FWD, "L1", IDS(x, wt),
				IDS(a)),
			 0);
	assert_int_equal(add_ok(w, "f2", OT_ADD, WL_FWD, "L2", IDS(a, a),
				IDS(b)),
			 1);
	assert_int_equal(add_ok(w, "f3", OT_CONCAT, WL_FWD, NULL, IDS(a, b),
				IDS(c)),
			 2);
	assert_int_equal(add_ok(w, "b3", OT_OTHER, WL_BWD, "f3",
				IDS(c, b, a), IDS(gb)),
			 3);
	assert_int_equal(add_ok(w, "b1", OT_MATMUL_BWD, WL_BWD, "L1",
				IDS(gb, x, wt), IDS(gw)),
			 4);
	assert_int_equal(add_ok(w, "upd", OT_UPDATE, WL_UPD, NULL,
				IDS(wt, gw, m), NOIDS),
			 5);
	return w;
}

static struct wl_workload *build_small(void)
{
	return build_small_like(NULL, 1);
}

static void test_builder_finalize(void **state)
{
	(void)state;
	struct wl_workload *w = build_small();
	gms_err e = {{0}};
	assert_false(w->finalized);
	assert_int_equal(wl_finalize(w, &e), 0);
	assert_true(w->finalized);
	assert_string_equal(w->name, "small");
	assert_int_equal(w->batch, 2);
	assert_int_equal(w->n_tensors, 8);
	assert_int_equal(w->n_ops, 6);

	/* Ids and look-ups. */
	for (uint32_t i = 0; i < w->n_tensors; i++) {
		assert_int_equal(w->tensors[i].id, i);
		assert_int_equal(wl_tensor_id(w, w->tensors[i].name), i);
	}
	for (uint32_t i = 0; i < w->n_ops; i++) {
		assert_int_equal(w->ops[i].id, i);
		assert_int_equal(wl_op_id(w, w->ops[i].name), i);
	}
	assert_int_equal(wl_tensor_id(w, "nope"), WL_NONE);
	assert_int_equal(wl_op_id(w, "x"), WL_NONE); /* tensor, not op */
	assert_int_equal(wl_tensor_id(NULL, "x"), WL_NONE);
	assert_int_equal(wl_tensor_id(w, NULL), WL_NONE);

	/* Producers. */
	assert_int_equal(T(w, "x")->producer, WL_NONE);
	assert_int_equal(T(w, "w")->producer, WL_NONE);
	assert_int_equal(T(w, "m")->producer, WL_NONE);
	assert_int_equal(T(w, "a")->producer, 0);
	assert_int_equal(T(w, "b")->producer, 1);
	assert_int_equal(T(w, "c")->producer, 2);
	assert_int_equal(T(w, "gb")->producer, 3);
	assert_int_equal(T(w, "gw")->producer, 4);

	/* Readers, unique, in issue order. */
	assert_readers(w, "x", "f1 b1");
	assert_readers(w, "w", "f1 b1 upd");
	assert_readers(w, "m", "upd");
	assert_readers(w, "a", "f2 f3 b3");
	assert_readers(w, "b", "f3 b3");
	assert_readers(w, "c", "b3");
	assert_readers(w, "gb", "b1");
	assert_readers(w, "gw", "upd");

	/* Last forward readers. */
	assert_int_equal(T(w, "x")->last_fwd_reader, 0);
	assert_int_equal(T(w, "w")->last_fwd_reader, 0);
	assert_int_equal(T(w, "m")->last_fwd_reader, WL_NONE);
	assert_int_equal(T(w, "a")->last_fwd_reader, 2);
	assert_int_equal(T(w, "b")->last_fwd_reader, 2);
	assert_int_equal(T(w, "c")->last_fwd_reader, WL_NONE);
	assert_int_equal(T(w, "gb")->last_fwd_reader, WL_NONE);

	/* Layers, by first appearance; NULL = the op's own name. */
	assert_int_equal(w->n_layers, 4);
	assert_string_equal(w->layers[0], "L1");
	assert_string_equal(w->layers[1], "L2");
	assert_string_equal(w->layers[2], "f3");
	assert_string_equal(w->layers[3], "upd");
	assert_int_equal(O(w, "f1")->layer, 0);
	assert_int_equal(O(w, "f2")->layer, 1);
	assert_int_equal(O(w, "f3")->layer, 2);
	assert_int_equal(O(w, "b3")->layer, 2);
	assert_int_equal(O(w, "b1")->layer, 0);
	assert_int_equal(O(w, "upd")->layer, 3);

	/* Op contents copied; an op may read a tensor twice. */
	const struct wl_op *f2 = O(w, "f2");
	assert_int_equal(f2->n_in, 2);
	assert_int_equal(f2->in[0], tid(w, "a"));
	assert_int_equal(f2->in[1], tid(w, "a"));
	assert_int_equal(O(w, "upd")->n_out, 0);
	assert_null(O(w, "upd")->out);
	assert_int_equal(O(w, "upd")->phase, WL_UPD);

	/* Sums by kind. */
	assert_int_equal(wl_bytes_of_kind(w, WL_ACT), 900);
	assert_int_equal(wl_bytes_of_kind(w, WL_PARAM), 10);
	assert_int_equal(wl_bytes_of_kind(w, WL_WORKSPACE), 0);

	/* Finalize twice is harmless; adding afterwards is refused. */
	assert_int_equal(wl_finalize(w, &e), 0);
	assert_int_equal(wl_add_tensor(w, "late", 1, WL_ACT, &e), WL_NONE);
	assert_has(e.msg, "after wl_finalize");
	assert_int_equal(add_o(w, "late", OT_RELU, WL_FWD, NULL, NOIDS, NOIDS,
			       &e),
			 WL_NONE);
	assert_has(e.msg, "after wl_finalize");
	wl_free(w);
	wl_free(NULL);
}

/* Descriptions are copied: the caller's arrays and strings may go. */
static void test_builder_copies_and_algos(void **state)
{
	(void)state;
	struct wl_workload *w = wl_new("algos", 1);
	uint32_t x = add_t(w, "x", 8, WL_INPUT);
	uint32_t y = add_t(w, "y", 8, WL_ACT);
	char n1[16], n2[16], n3[16], layer[16];
	strcpy(n1, "gemm");
	strcpy(n2, "fft");
	strcpy(n3, "wino");
	strcpy(layer, "conv");
	struct wl_algo algos[3] = {{n1, 0, 1.0}, {n2, 64 * MIB, 0.6},
				   {n3, 32 * MIB, 0.6}};
	uint32_t in[1] = {x}, out[1] = {y};
	struct wl_op_desc d = {.name = "c", .type = OT_CONV, .phase = WL_FWD,
			       .layer = layer, .in = in, .n_in = 1,
			       .out = out, .n_out = 1, .flops = 1e9,
			       .bytes = 4096, .time = 5 * SIM_US,
			       .workspace = 7, .recomputable = true,
			       .inplace = true, .algos = algos, .n_algos = 3};
	gms_err e = {{0}};
	assert_int_equal(wl_add_op(w, &d, &e), 0);
	memset(n1, 0, sizeof n1);
	memset(n2, 0, sizeof n2);
	memset(n3, 0, sizeof n3);
	memset(layer, 0, sizeof layer);
	in[0] = out[0] = 99;
	memset(algos, 0, sizeof algos);
	assert_int_equal(wl_finalize(w, &e), 0);
	const struct wl_op *c = &w->ops[0];
	assert_int_equal(c->in[0], x);
	assert_int_equal(c->out[0], y);
	assert_string_equal(w->layers[c->layer], "conv");
	assert_true(c->flops == 1e9);
	assert_true(c->bytes == 4096.0);
	assert_int_equal(c->time, 5000);
	assert_int_equal(c->workspace, 7);
	assert_true(c->recomputable);
	assert_true(c->inplace);
	/* Fastest first, stable among equals. */
	assert_int_equal(c->n_algos, 3);
	assert_string_equal(c->algos[0].name, "fft");
	assert_int_equal(c->algos[0].workspace, 64 * MIB);
	assert_string_equal(c->algos[1].name, "wino");
	assert_string_equal(c->algos[2].name, "gemm");
	assert_true(c->algos[2].time_scale == 1.0);
	wl_free(w);
}

/* `describe` shows the fastest algorithm's workspace and labels the most
 * any algorithm needs as a max. Op c has three algorithms, given in this
 * order: slow (256 MiB, 1.0), fast1 (64 MiB, 0.5), fast2 (32 MiB, 0.5);
 * stored fastest first (stable): fast1, fast2, slow. The fastest is the
 * least time_scale, ties to the least workspace (vDNN's "p"): fast2, index
 * 1, 32 MiB. Op k has no algorithms and 16 MiB of workspace.
 *   per op: c  ws 32.000, ws_max 256.000;  k  16.000 and 16.000
 *   totals: largest workspace max(32, 16) = 32.00 MiB (fastest of each);
 *           max workspace max(256, 16) = 256.00 MiB (any algorithm). */
static void test_describe_workspace(void **state)
{
	(void)state;
	struct wl_workload *w = wl_new("ws", 1);
	uint32_t x = add_t(w, "x", 8, WL_INPUT), y = add_t(w, "y", 8, WL_ACT),
		 z = add_t(w, "z", 8, WL_ACT);
	struct wl_algo algos[3] = {{"slow", 256 * MIB, 1.0},
				   {"fast1", 64 * MIB, 0.5},
				   {"fast2", 32 * MIB, 0.5}};
	struct wl_op_desc d = {.name = "c", .type = OT_CONV, .phase = WL_FWD,
			       .in = &x, .n_in = 1, .out = &y, .n_out = 1,
			       .flops = 1, .algos = algos, .n_algos = 3};
	struct wl_op_desc k = {.name = "k", .type = OT_MATMUL,
			       .phase = WL_FWD, .in = &y, .n_in = 1,
			       .out = &z, .n_out = 1, .flops = 1,
			       .workspace = 16 * MIB};
	gms_err e = {{0}};
	assert_int_equal(wl_add_op(w, &d, &e), 0);
	assert_int_equal(wl_add_op(w, &k, &e), 1);
	assert_int_equal(wl_finalize(w, &e), 0);
	assert_int_equal(wl_fastest_algo(&w->ops[0]), 1);
	assert_string_equal(w->ops[0].algos[1].name, "fast2");
	assert_int_equal(wl_op_workspace(&w->ops[0], 1), 32 * MIB);
	assert_int_equal(wl_op_max_workspace(&w->ops[0]), 256 * MIB);
	assert_int_equal(wl_fastest_algo(&w->ops[1]), 0);
	assert_int_equal(wl_op_workspace(&w->ops[1], 0), 16 * MIB);
	assert_int_equal(wl_op_max_workspace(&w->ops[1]), 16 * MIB);
	for (int by_op = 0; by_op < 2; by_op++) {
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		assert_non_null(f);
		wl_describe(w, by_op, f);
		fclose(f);
		assert_has(buf, "largest workspace   32.00 MiB (fastest "
				"algorithm of each op)");
		assert_has(buf, "max workspace       256.00 MiB (any "
				"algorithm)");
		if (by_op) {
			assert_has(buf, "ws_MiB ws_max_MiB");
			assert_has(buf, "    32.000    256.000  x\n");
			assert_has(buf, "    16.000     16.000  y\n");
		}
		free(buf);
	}
	wl_free(w);
}

/* Tens of thousands of tensors: ids and look-ups stay right. */
static void test_builder_many(void **state)
{
	(void)state;
	enum { N = 50000 };
	struct wl_workload *w = wl_new("many", 1);
	char name[32];
	uint32_t prev = add_t(w, "in", 4, WL_INPUT);
	for (uint32_t i = 0; i < N; i++) {
		snprintf(name, sizeof name, "t%u", i);
		uint32_t t = add_t(w, name, 4 + i, WL_ACT);
		snprintf(name, sizeof name, "op%u", i);
		add_ok(w, name, OT_ELEMWISE, WL_FWD, NULL, IDS(prev), IDS(t));
		prev = t;
	}
	gms_err e = {{0}};
	assert_int_equal(wl_finalize(w, &e), 0);
	assert_int_equal(w->n_tensors, N + 1);
	assert_int_equal(w->n_layers, N);
	for (uint32_t i = 0; i < N; i += 997) {
		snprintf(name, sizeof name, "t%u", i);
		assert_int_equal(wl_tensor_id(w, name), i + 1);
		assert_int_equal(w->tensors[i + 1].bytes, 4 + i);
		snprintf(name, sizeof name, "op%u", i);
		assert_int_equal(wl_op_id(w, name), i);
		assert_int_equal(w->tensors[i + 1].producer, i);
	}
	assert_int_equal(w->tensors[N].n_readers, 0);
	assert_int_equal(w->tensors[1].readers[0], 1);
	wl_free(w);
}

/* wl_reserve (issue 18): room for 300 tensors, 200 ops and 200 layers
 * is taken at once, so adding that many moves no array (the pointers
 * stay), and the name tables still find every name and refuse a
 * duplicate: a chain in -> t0 -> ... -> t199, op i writing t(i). */
static void test_builder_reserve(void **state)
{
	(void)state;
	struct wl_workload *w = wl_new("room", 1);
	struct wl_reserve r = {300, 200, 200};
	assert_int_equal(wl_reserve(w, &r), 0);
	const struct wl_tensor *tensors = w->tensors;
	const struct wl_op *ops = w->ops;
	const char **layers = w->layers;
	assert_non_null(tensors);
	char name[32];
	uint32_t prev = add_t(w, "in", 4, WL_INPUT);
	for (uint32_t i = 0; i < 200; i++) {
		snprintf(name, sizeof name, "t%u", i);
		uint32_t t = add_t(w, name, 4 + i, WL_ACT);
		snprintf(name, sizeof name, "op%u", i);
		add_ok(w, name, OT_ELEMWISE, WL_FWD, NULL, IDS(prev), IDS(t));
		prev = t;
	}
	assert_ptr_equal(w->tensors, tensors);
	assert_ptr_equal(w->ops, ops);
	assert_ptr_equal(w->layers, layers);
	/* a smaller reserve changes nothing */
	struct wl_reserve small = {1, 1, 1};
	assert_int_equal(wl_reserve(w, &small), 0);
	assert_ptr_equal(w->tensors, tensors);
	gms_err e = {{0}};
	assert_int_equal(wl_add_tensor(w, "t7", 8, WL_ACT, &e), WL_NONE);
	assert_has(e.msg, "tensor 't7' is defined twice");
	assert_int_equal(wl_finalize(w, &e), 0);
	assert_int_equal(wl_tensor_id(w, "in"), 0);
	assert_int_equal(wl_tensor_id(w, "t199"), 200);
	assert_int_equal(w->tensors[200].bytes, 4 + 199);
	assert_int_equal(wl_op_id(w, "op123"), 123);
	assert_int_equal(w->tensors[124].producer, 123);
	wl_free(w);
}

/* A build that follows a template (wl_reserve's like, issue 18) shares
 * its strings while it matches, and leaves it at the first difference
 * to go on as any build. Template: build_small (tensors x w m a b c gb
 * gw, ops f1 f2 f3 b3 b1 upd). */
static void test_builder_template(void **state)
{
	(void)state;
	gms_err e = {{0}};
	struct wl_workload *l = build_small();
	assert_int_equal(wl_finalize(l, &e), 0);
	struct wl_reserve r = {l->n_tensors, l->n_ops, l->n_layers, l};

	/* 1. the same workload (other sizes): shares every name and the
	 * reader lists, and outlives the template */
	struct wl_workload *d = build_small_like(&r, 2);
	assert_true(wl_follows_template(d));
	assert_int_equal(wl_finalize(d, &e), 0);
	assert_ptr_equal(d->tensors[3].name, l->tensors[3].name);
	assert_ptr_equal(d->ops[4].in, l->ops[4].in);
	assert_ptr_equal(d->tensors[3].readers, l->tensors[3].readers);
	/* what a build of the same network may follow without a chain
	 * (wl_template_root, issue 37): l itself, and d's is l */
	assert_ptr_equal(wl_template_root(l), l);
	assert_ptr_equal(wl_template_root(d), l);
	wl_free(l); /* d holds it: its names stay */
	/* the template's derivations (test_builder_finalize): a is read by
	 * f2 (twice, counted once), f3, b3; f3's layer is its own name */
	assert_readers(d, "a", "f2 f3 b3");
	assert_int_equal(T(d, "a")->last_fwd_reader, 2);
	assert_int_equal(T(d, "b")->bytes, 600);
	assert_int_equal(T(d, "w")->bytes, 10);
	assert_int_equal(d->n_layers, 4); /* L1 L2 f3 upd */
	assert_string_equal(d->layers[O(d, "f3")->layer], "f3");
	assert_int_equal(O(d, "b1")->layer, O(d, "f1")->layer);

	/* 2. a build following d follows d's template, l (freed above but
	 * held by d): its names are l's strings */
	struct wl_workload *d2 = wl_new("small", 6);
	struct wl_reserve r2 = {0, 0, 0, d};
	assert_int_equal(wl_reserve(d2, &r2), 0);
	add_t(d2, "x", 300, WL_INPUT);
	assert_ptr_equal(d2->tensors[0].name, d->tensors[0].name);
	/* it finds names through the template's tables only up to what it
	 * has: "a" is the template's tensor 3, f1 its op 0 */
	assert_int_equal(wl_tensor_id(d2, "x"), 0);
	assert_int_equal(wl_tensor_id(d2, "a"), WL_NONE);
	assert_int_equal(wl_op_id(d2, "f1"), WL_NONE);
	/* 3. it leaves at a different name: the name is its own, look-ups
	 * find what it has and only that, and a repeated name is refused
	 * as without a template */
	add_t(d2, "y", 10, WL_PARAM);
	assert_false(wl_follows_template(d2));
	assert_int_equal(wl_tensor_id(d2, "x"), 0);
	assert_int_equal(wl_tensor_id(d2, "y"), 1);
	assert_int_equal(wl_tensor_id(d2, "w"), WL_NONE);
	assert_int_equal(wl_add_tensor(d2, "x", 8, WL_ACT, &e), WL_NONE);
	assert_has(e.msg, "tensor 'x' is defined twice");
	uint32_t z = add_t(d2, "a", 40, WL_ACT);
	add_ok(d2, "f1", OT_MATMUL, WL_FWD, "L1", IDS(0, 1), IDS(z));
	assert_int_equal(wl_add_tensor(d2, "a", 8, WL_ACT, &e), WL_NONE);
	assert_int_equal(wl_finalize(d2, &e), 0);
	assert_readers(d2, "x", "f1");
	assert_int_equal(T(d2, "a")->producer, 0);
	/* it left its template: following it would keep l alive too */
	assert_null(wl_template_root(d2));
	wl_free(d2);

	/* 4. an op whose layer differs leaves it: f1 in "L9" gets the
	 * next layer index, as without a template */
	struct wl_workload *d3 = wl_new("small", 2);
	struct wl_reserve r3 = {0, 0, 0, d};
	assert_int_equal(wl_reserve(d3, &r3), 0);
	add_t(d3, "x", 100, WL_INPUT);
	add_t(d3, "w", 10, WL_PARAM);
	add_t(d3, "m", 10, WL_OPT_STATE);
	add_t(d3, "a", 200, WL_ACT);
	assert_true(wl_follows_template(d3));
	add_ok(d3, "f1", OT_MATMUL, WL_FWD, "L9", IDS(0, 1), IDS(3));
	assert_false(wl_follows_template(d3));
	assert_int_equal(d3->n_layers, 1);
	assert_string_equal(d3->layers[0], "L9");
	assert_int_equal(wl_op_id(d3, "f1"), 0);
	wl_free(d3);

	/* 5. the same names, but an op reads other tensors: it still
	 * follows, and the readers are its own (f2 reads x, not a) */
	struct wl_workload *d4 = wl_new("small", 2);
	struct wl_reserve r4 = {0, 0, 0, d};
	assert_int_equal(wl_reserve(d4, &r4), 0);
	const char *nm[] = {"x", "w", "m", "a", "b", "c", "gb", "gw"};
	enum wl_kind kd[] = {WL_INPUT, WL_PARAM, WL_OPT_STATE, WL_ACT,
			     WL_ACT, WL_ACT, WL_ACT_GRAD, WL_PARAM_GRAD};
	for (int i = 0; i < 8; i++)
		add_t(d4, nm[i], 100, kd[i]);
	add_ok(d4, "f1", OT_MATMUL, WL_FWD, "L1", IDS(0, 1), IDS(3));
	add_ok(d4, "f2", OT_ADD, WL_FWD, "L2", IDS(0, 3), IDS(4));
	add_ok(d4, "f3", OT_CONCAT, WL_FWD, NULL, IDS(3, 4), IDS(5));
	add_ok(d4, "b3", OT_OTHER, WL_BWD, "f3", IDS(5, 4, 3), IDS(6));
	add_ok(d4, "b1", OT_MATMUL_BWD, WL_BWD, "L1", IDS(6, 0, 1), IDS(7));
	add_ok(d4, "upd", OT_UPDATE, WL_UPD, NULL, IDS(1, 7, 2), NOIDS);
	assert_true(wl_follows_template(d4));
	assert_int_equal(wl_finalize(d4, &e), 0);
	assert_readers(d4, "x", "f1 f2 b1");
	assert_readers(d4, "a", "f2 f3 b3");
	/* it followed d, which follows l: its root is l */
	assert_ptr_equal(wl_template_root(d4), wl_template_root(d));
	wl_free(d4);

	/* a tensor of another kind leaves it (the name alone is not the
	 * template's tensor); a template is taken only by an empty build,
	 * and only a finalized one */
	struct wl_workload *d5 = wl_new("small", 2);
	assert_int_equal(wl_reserve(d5, &r4), 0);
	add_t(d5, "x", 100, WL_PARAM);
	assert_false(wl_follows_template(d5));
	wl_free(d5);
	d5 = wl_new("small", 2);
	add_t(d5, "x", 100, WL_INPUT);
	assert_int_equal(wl_reserve(d5, &r4), -1);
	struct wl_reserve r5 = {0, 0, 0, d5};
	struct wl_workload *d6 = wl_new("small", 2);
	assert_int_equal(wl_reserve(d6, &r5), -1);
	wl_free(d5);
	wl_free(d6);
	wl_free(d);
}

/* ---- builder errors ------------------------------------------------- */

static void test_add_errors(void **state)
{
	(void)state;
	struct wl_workload *w = wl_new("errs", 1);
	gms_err e = {{0}};
	uint32_t x = add_t(w, "x", 8, WL_INPUT);
	uint32_t y = add_t(w, "y", 8, WL_ACT);

	/* Tensors: zero size, duplicate name, empty name, bad kind. */
	assert_int_equal(wl_add_tensor(w, "z", 0, WL_ACT, &e), WL_NONE);
	assert_has(e.msg, "tensor 'z'");
	assert_has(e.msg, "0 bytes");
	assert_int_equal(wl_add_tensor(w, "x", 8, WL_ACT, &e), WL_NONE);
	assert_has(e.msg, "tensor 'x' is defined twice");
	assert_int_equal(wl_add_tensor(w, "", 8, WL_ACT, &e), WL_NONE);
	assert_has(e.msg, "empty name");
	assert_int_equal(wl_add_tensor(w, "k", 8, WL_KIND_COUNT, &e), WL_NONE);
	assert_has(e.msg, "tensor 'k'");
	assert_int_equal(w->n_tensors, 2); /* nothing half-added */

	/* Ops. */
	add_ok(w, "f", OT_RELU, WL_FWD, NULL, IDS(x), IDS(y));
	assert_int_equal(add_o(w, "f", OT_RELU, WL_FWD, NULL, IDS(x), NOIDS,
			       &e),
			 WL_NONE);
	assert_has(e.msg, "op 'f' is defined twice");
	assert_int_equal(add_o(w, "g", OT_RELU, WL_FWD, NULL, IDS(x, 7),
			       NOIDS, &e),
			 WL_NONE);
	assert_has(e.msg, "op 'g': input 1 is not a tensor id");
	assert_int_equal(add_o(w, "g", OT_RELU, WL_FWD, NULL, IDS(x),
			       IDS(y, y), &e),
			 WL_NONE);
	assert_has(e.msg, "op 'g': tensor 'y' listed twice as an output");
	assert_int_equal(add_o(w, "", OT_RELU, WL_FWD, NULL, NOIDS, NOIDS, &e),
			 WL_NONE);
	assert_has(e.msg, "empty name");
	assert_int_equal(add_o(w, "g", OT_COUNT, WL_FWD, NULL, NOIDS, NOIDS,
			       &e),
			 WL_NONE);
	assert_has(e.msg, "op 'g': invalid type");
	assert_int_equal(add_o(w, "g", OT_RELU, WL_PHASE_COUNT, NULL, NOIDS,
			       NOIDS, &e),
			 WL_NONE);
	assert_has(e.msg, "op 'g': invalid phase");

	struct wl_op_desc d = {.name = "g", .type = OT_RELU, .phase = WL_FWD};
	d.flops = -1;
	assert_int_equal(wl_add_op(w, &d, &e), WL_NONE);
	assert_has(e.msg, "op 'g': flops");
	d.flops = 0;
	d.bytes = INFINITY;
	assert_int_equal(wl_add_op(w, &d, &e), WL_NONE);
	assert_has(e.msg, "op 'g': bytes");
	d.bytes = 0;
	d.time = -5;
	assert_int_equal(wl_add_op(w, &d, &e), WL_NONE);
	assert_has(e.msg, "op 'g': negative time");
	d.time = 0;
	d.inplace = true;
	assert_int_equal(wl_add_op(w, &d, &e), WL_NONE);
	assert_has(e.msg, "op 'g': inplace needs an input and an output");
	d.inplace = false;
	struct wl_algo bad[2] = {{"a", 0, 0.0}, {"a", 0, 1.0}};
	d.algos = bad;
	d.n_algos = 1;
	assert_int_equal(wl_add_op(w, &d, &e), WL_NONE);
	assert_has(e.msg, "op 'g': algo 'a': time_scale must be > 0");
	bad[0].time_scale = 1.0;
	d.n_algos = 2;
	assert_int_equal(wl_add_op(w, &d, &e), WL_NONE);
	assert_has(e.msg, "op 'g': algo 'a' listed twice");
	bad[0].name = "";
	assert_int_equal(wl_add_op(w, &d, &e), WL_NONE);
	assert_has(e.msg, "op 'g': algo 0 has no name");
	d.n_algos = 0;
	d.algos = NULL;
	d.n_in = 1; /* count without an array */
	assert_int_equal(wl_add_op(w, &d, &e), WL_NONE);
	assert_has(e.msg, "op 'g'");
	assert_int_equal(w->n_ops, 1);
	assert_int_equal(w->n_layers, 1); /* failed ops add no layer */

	/* A NULL error pointer is fine. */
	assert_int_equal(wl_add_tensor(w, "x", 8, WL_ACT, NULL), WL_NONE);
	assert_int_equal(wl_add_tensor(NULL, "q", 8, WL_ACT, &e), WL_NONE);
	assert_int_equal(wl_finalize(NULL, &e), -1);
	wl_free(w);
}

/* A workload that fails wl_finalize with a message containing all of
 * `parts` (NULL-terminated). */
static void expect_finalize_error(struct wl_workload *w, const char **parts)
{
	gms_err e = {{0}};
	assert_int_equal(wl_finalize(w, &e), -1);
	assert_false(w->finalized);
	for (const char **p = parts; *p; p++)
		assert_has(e.msg, *p);
	wl_free(w);
}

static void test_finalize_errors(void **state)
{
	(void)state;
	struct wl_workload *w;
	uint32_t x, y, z, p;

	/* A tensor produced by two ops. */
	w = wl_new("twice", 1);
	x = add_t(w, "x", 8, WL_INPUT);
	y = add_t(w, "y", 8, WL_ACT);
	add_ok(w, "f", OT_RELU, WL_FWD, NULL, IDS(x), IDS(y));
	add_ok(w, "g", OT_RELU, WL_FWD, NULL, IDS(x), IDS(y));
	expect_finalize_error(w, (const char *[]){"workload 'twice'",
						  "tensor 'y' is produced "
						  "twice",
						  "op 'f'", "op 'g'", NULL});

	/* An op reading a tensor produced by a later op. */
	w = wl_new("later", 1);
	x = add_t(w, "x", 8, WL_INPUT);
	y = add_t(w, "y", 8, WL_ACT);
	z = add_t(w, "z", 8, WL_ACT);
	add_ok(w, "f", OT_RELU, WL_FWD, NULL, IDS(y), IDS(z));
	add_ok(w, "g", OT_RELU, WL_FWD, NULL, IDS(x), IDS(y));
	expect_finalize_error(w, (const char *[]){"op 'f' reads tensor 'y' "
						  "before it is produced",
						  "op 'g'", NULL});

	/* An op reading its own output. */
	w = wl_new("self", 1);
	x = add_t(w, "x", 8, WL_INPUT);
	y = add_t(w, "y", 8, WL_ACT);
	add_ok(w, "f", OT_ADD, WL_FWD, NULL, IDS(x, y), IDS(y));
	expect_finalize_error(w, (const char *[]){"op 'f' reads its own "
						  "output 'y'",
						  NULL});

	/* Producers of input, parameter and optimizer-state tensors. */
	static const enum wl_kind src[] = {WL_INPUT, WL_PARAM, WL_OPT_STATE};
	static const char *const srcname[] = {"input", "parameter",
					      "opt_state"};
	for (int i = 0; i < 3; i++) {
		w = wl_new("src", 1);
		x = add_t(w, "x", 8, WL_INPUT);
		p = add_t(w, "p", 8, src[i]);
		add_ok(w, "upd", OT_UPDATE, WL_UPD, NULL, IDS(x), IDS(p));
		expect_finalize_error(w, (const char *[]){"op 'upd' writes "
							  "tensor 'p'",
							  srcname[i], NULL});
	}

	/* An activation no op produces: read, and not read. */
	w = wl_new("orphan", 1);
	y = add_t(w, "y", 8, WL_ACT);
	z = add_t(w, "z", 8, WL_ACT);
	add_ok(w, "f", OT_RELU, WL_FWD, NULL, IDS(y), IDS(z));
	expect_finalize_error(w, (const char *[]){"op 'f' reads tensor 'y'",
						  "no op produces", NULL});
	w = wl_new("orphan2", 1);
	x = add_t(w, "x", 8, WL_INPUT);
	y = add_t(w, "y", 8, WL_ACT);
	add_t(w, "lost", 8, WL_ACT_GRAD);
	add_ok(w, "f", OT_RELU, WL_FWD, NULL, IDS(x), IDS(y));
	expect_finalize_error(w, (const char *[]){"tensor 'lost'",
						  "never produced", NULL});

	/* Zero-size tensors never get in (wl_add_tensor refuses them); ops
	 * with no outputs are fine. */
	w = wl_new("noout", 1);
	x = add_t(w, "x", 8, WL_INPUT);
	add_ok(w, "u", OT_UPDATE, WL_UPD, NULL, IDS(x), NOIDS);
	gms_err e = {{0}};
	assert_int_equal(wl_finalize(w, &e), 0);
	wl_free(w);

	/* A failed finalize can be retried after fixing the graph. */
	w = wl_new("retry", 1);
	x = add_t(w, "x", 8, WL_INPUT);
	y = add_t(w, "y", 8, WL_ACT);
	z = add_t(w, "z", 8, WL_ACT);
	add_ok(w, "f", OT_RELU, WL_FWD, NULL, IDS(x), IDS(y));
	assert_int_equal(wl_finalize(w, &e), -1); /* z never produced */
	add_ok(w, "g", OT_RELU, WL_FWD, NULL, IDS(y), IDS(z));
	assert_int_equal(wl_finalize(w, &e), 0);
	assert_readers(w, "y", "g");
	assert_int_equal(T(w, "y")->producer, 0);
	wl_free(w);
}

/* ---- YAML ----------------------------------------------------------- */

static struct wl_workload *load_ok(const char *path, int64_t batch)
{
	gms_err e = {{0}};
	struct wl_workload *w = wl_load_yaml(path, batch, &e);
	if (!w)
		fail_msg("wl_load_yaml(%s): %s", path, e.msg);
	assert_true(w->finalized);
	return w;
}

static void test_yaml_chain3(void **state)
{
	(void)state;
	struct wl_workload *w = load_ok(FIX "chain3.yaml", 0);
	assert_string_equal(w->name, "chain3");
	assert_int_equal(w->batch, 4);
	assert_int_equal(w->n_tensors, 10);
	assert_int_equal(w->n_ops, 7);

	/* Sizes: per-sample x 4, fixed as written. */
	assert_int_equal(T(w, "x")->bytes, 4 * MIB);
	assert_int_equal(T(w, "w1")->bytes, 1 * MIB);
	assert_int_equal(T(w, "a1")->bytes, 8 * MIB);
	assert_int_equal(T(w, "a2")->bytes, 4 * MIB);
	assert_int_equal(T(w, "a3")->bytes, 1 * MIB);
	assert_int_equal(T(w, "g1")->bytes, 8 * MIB);
	assert_int_equal(T(w, "g2")->bytes, 4 * MIB);
	assert_int_equal(T(w, "x")->kind, WL_INPUT);
	assert_int_equal(T(w, "gw1")->kind, WL_PARAM_GRAD);
	assert_int_equal(wl_bytes_of_kind(w, WL_INPUT), 4 * MIB);
	assert_int_equal(wl_bytes_of_kind(w, WL_PARAM), 2 * MIB);
	assert_int_equal(wl_bytes_of_kind(w, WL_PARAM_GRAD), 2 * MIB);
	assert_int_equal(wl_bytes_of_kind(w, WL_ACT), 13 * MIB);
	assert_int_equal(wl_bytes_of_kind(w, WL_ACT_GRAD), 12 * MIB);

	/* Ops in issue order, with times, FLOPs and phases. */
	static const char *const names[] = {"op1",     "op2",	  "op3",
					    "op3_bwd", "op2_bwd", "op1_bwd",
					    "sgd"};
	static const sim_time_t ms[] = {1, 2, 1, 1, 4, 2, 1};
	static const double gflops[] = {1, 2, 1, 1, 4, 2, 1};
	sim_time_t total = 0;
	for (uint32_t i = 0; i < 7; i++) {
		const struct wl_op *o = &w->ops[i];
		assert_string_equal(o->name, names[i]);
		assert_int_equal(o->time, ms[i] * SIM_MS);
		assert_true(o->flops == gflops[i] * 1e9);
		assert_true(o->bytes == 0.0);
		assert_int_equal(o->workspace, 0);
		assert_int_equal(o->n_algos, 0);
		assert_false(o->inplace);
		/* recomputable defaults to forward only */
		assert_int_equal(o->recomputable, o->phase == WL_FWD);
		total += o->time;
	}
	assert_int_equal(total, 12 * SIM_MS);
	assert_int_equal(O(w, "op1")->type, OT_MATMUL);
	assert_int_equal(O(w, "op3")->type, OT_LOSS);
	assert_int_equal(O(w, "op2_bwd")->type, OT_MATMUL_BWD);
	assert_int_equal(O(w, "op2_bwd")->phase, WL_BWD);
	assert_int_equal(O(w, "sgd")->phase, WL_UPD);
	assert_int_equal(O(w, "sgd")->n_out, 0);
	assert_int_equal(O(w, "op2_bwd")->n_out, 2);
	assert_int_equal(O(w, "op2_bwd")->out[1], tid(w, "gw2"));

	/* Layers. */
	assert_int_equal(w->n_layers, 4);
	assert_string_equal(w->layers[0], "l1");
	assert_string_equal(w->layers[3], "sgd");
	assert_int_equal(O(w, "op1_bwd")->layer, 0);
	assert_int_equal(O(w, "op3_bwd")->layer, 2);

	/* Readers as in the fixture's comment. */
	assert_readers(w, "x", "op1 op1_bwd");
	assert_readers(w, "w1", "op1 op1_bwd sgd");
	assert_readers(w, "a1", "op2 op2_bwd");
	assert_readers(w, "a2", "op3 op3_bwd");
	assert_readers(w, "a3", "");
	assert_readers(w, "g2", "op2_bwd");
	assert_readers(w, "gw2", "sgd");
	assert_int_equal(T(w, "a1")->last_fwd_reader, wl_op_id(w, "op2"));
	assert_int_equal(T(w, "w2")->last_fwd_reader, wl_op_id(w, "op2"));
	assert_int_equal(T(w, "a3")->last_fwd_reader, WL_NONE);
	assert_int_equal(T(w, "g1")->last_fwd_reader, WL_NONE);
	assert_int_equal(T(w, "a2")->producer, wl_op_id(w, "op2"));
	wl_free(w);
}

static void test_yaml_batch_override(void **state)
{
	(void)state;
	struct wl_workload *w = load_ok(FIX "chain3.yaml", 8);
	assert_int_equal(w->batch, 8);
	assert_int_equal(T(w, "x")->bytes, 8 * MIB);	/* 1 MiB x 8 */
	assert_int_equal(T(w, "a1")->bytes, 16 * MIB); /* 2 MiB x 8 */
	assert_int_equal(T(w, "w1")->bytes, 1 * MIB);	/* fixed */
	assert_int_equal(T(w, "a3")->bytes, 1 * MIB);	/* fixed */
	assert_true(O(w, "op1")->flops == 2e9);	/* 2.5e8 x 8 */
	assert_true(O(w, "sgd")->flops == 1e9);	/* fixed */
	assert_int_equal(O(w, "op1")->time, 1 * SIM_MS); /* measured */
	assert_int_equal(wl_bytes_of_kind(w, WL_ACT), 25 * MIB);
	wl_free(w);

	w = load_ok(FIX "chain3.yaml", 1);
	assert_int_equal(T(w, "x")->bytes, 1 * MIB);
	assert_true(O(w, "op2")->flops == 5e8);
	wl_free(w);
}

static void test_yaml_minimal(void **state)
{
	(void)state;
	struct wl_workload *w = load_ok(FIX "wl_minimal.yaml", 0);
	assert_string_equal(w->name, "wl_minimal"); /* from the file name */
	assert_int_equal(w->batch, 1);
	assert_int_equal(T(w, "x")->bytes, 100);
	const struct wl_op *f = O(w, "f");
	assert_int_equal(f->workspace, 1024);
	assert_false(f->recomputable); /* explicit false on a forward op */
	assert_int_equal(f->time, 0);
	assert_true(f->flops == 0.0);
	assert_int_equal(f->n_algos, 2);
	assert_string_equal(f->algos[0].name, "fast");
	assert_int_equal(f->algos[0].workspace, MIB);
	assert_true(f->algos[0].time_scale == 0.5);
	assert_string_equal(f->algos[1].name, "slow");
	assert_int_equal(f->algos[1].workspace, 0);
	assert_true(f->algos[1].time_scale == 1.0);
	assert_int_equal(O(w, "u")->n_out, 0);
	wl_free(w);
	w = load_ok(FIX "wl_minimal.yaml", 3);
	assert_int_equal(T(w, "y")->bytes, 300);
	wl_free(w);
}

static void test_yaml_tiny_cnn(void **state)
{
	(void)state;
	struct wl_workload *w = load_ok("workloads/examples/tiny-cnn.yaml", 0);
	assert_string_equal(w->name, "tiny-cnn");
	assert_int_equal(w->batch, 32);
	assert_int_equal(w->n_tensors, 26);
	assert_int_equal(w->n_ops, 18);
	/* Shapes (see the file's comments). */
	assert_int_equal(T(w, "x")->bytes, 32 * 3 * 32 * 32 * 4);
	assert_int_equal(T(w, "c1")->bytes, 32 * 16 * 32 * 32 * 4);
	assert_int_equal(T(w, "p1")->bytes, 32 * 16 * 16 * 16 * 4);
	assert_int_equal(T(w, "c2")->bytes, 32 * 32 * 16 * 16 * 4);
	assert_int_equal(T(w, "p2")->bytes, 32 * 32 * 8 * 8 * 4);
	assert_int_equal(T(w, "logits")->bytes, 32 * 10 * 4);
	assert_int_equal(T(w, "w1")->bytes, (16 * 3 * 9 + 16) * 4);
	assert_int_equal(T(w, "w2")->bytes, (32 * 16 * 9 + 32) * 4);
	assert_int_equal(T(w, "w3")->bytes, (10 * 2048 + 10) * 4);
	assert_int_equal(wl_bytes_of_kind(w, WL_PARAM), 25578 * 4);
	assert_int_equal(wl_bytes_of_kind(w, WL_PARAM_GRAD), 25578 * 4);
	assert_int_equal(wl_bytes_of_kind(w, WL_OPT_STATE), 25578 * 4);
	assert_int_equal(wl_bytes_of_kind(w, WL_INPUT), 393216 + 128);
	assert_int_equal(wl_bytes_of_kind(w, WL_ACT), 7079172);
	assert_int_equal(wl_bytes_of_kind(w, WL_ACT_GRAD), 7079168);
	/* FLOPs. */
	assert_true(O(w, "conv1")->flops == 2.0 * 16 * 32 * 32 * 3 * 9 * 32);
	assert_true(O(w, "conv2")->flops == 2.0 * 32 * 16 * 16 * 16 * 9 * 32);
	double fwd = 0, bwd = 0;
	for (uint32_t i = 0; i < w->n_ops; i++) {
		if (w->ops[i].phase == WL_FWD)
			fwd += w->ops[i].flops;
		else if (w->ops[i].phase == WL_BWD)
			bwd += w->ops[i].flops;
		assert_int_equal(w->ops[i].time, 0);
	}
	assert_true(fwd == 106694208.0);
	assert_true(bwd == 183501440.0);
	assert_true(O(w, "sgd")->flops == 102312.0);
	assert_true(O(w, "sgd")->bytes == 511560.0);
	/* What backward ops read. */
	assert_readers(w, "x", "conv1 conv1_bwd_filter");
	assert_readers(w, "w2", "conv2 conv2_bwd_data sgd");
	assert_readers(w, "p1", "conv2 conv2_bwd_filter pool1_bwd");
	assert_readers(w, "r1", "pool1 pool1_bwd relu1_bwd");
	assert_readers(w, "m3", "sgd");
	assert_int_equal(T(w, "p1")->last_fwd_reader, wl_op_id(w, "conv2"));
	assert_int_equal(O(w, "conv2_bwd_filter")->layer, O(w, "conv2")->layer);
	assert_int_equal(O(w, "relu1_bwd")->layer, O(w, "relu1")->layer);
	assert_true(O(w, "relu1")->inplace);
	/* Two algos per conv op, fastest first, the second with none. */
	for (uint32_t i = 0; i < w->n_ops; i++) {
		const struct wl_op *o = &w->ops[i];
		bool conv = o->type == OT_CONV || o->type == OT_CONV_BWD_DATA ||
			    o->type == OT_CONV_BWD_FILTER;
		assert_int_equal(o->n_algos, conv ? 2 : 0);
		if (conv) {
			assert_true(o->algos[0].time_scale < 1.0);
			assert_true(o->algos[0].workspace > 0);
			assert_string_equal(o->algos[1].name, "implicit_gemm");
			assert_int_equal(o->algos[1].workspace, 0);
		}
	}
	wl_free(w);
}

/* A YAML file that must fail with a message containing every part. */
struct yaml_bad {
	const char *file;	 /* fixture under tests/fixtures */
	const char *parts[4];	 /* substrings of the message, NULL-ended */
};

static void test_yaml_errors(void **state)
{
	(void)state;
	static const struct yaml_bad cases[] = {
		{"bad_unknown_key.yaml",
		 {FIX "bad_unknown_key.yaml:10:5: ", "op 'f'",
		  "key 'flop': unknown key", NULL}},
		{"bad_negative_size.yaml",
		 {FIX "bad_negative_size.yaml:5:51: ", "tensor 'y'",
		  "key 'bytes_per_sample': a size must not be negative", NULL}},
		{"bad_unknown_tensor.yaml",
		 {FIX "bad_unknown_tensor.yaml:12:17: ", "op 'g'",
		  "key 'inputs': unknown tensor 'z'", NULL}},
		{"bad_missing_key.yaml",
		 {FIX "bad_missing_key.yaml:7:5: ", "op 'f'",
		  "key 'phase': missing required key", NULL}},
		{"bad_both_sizes.yaml",
		 {FIX "bad_both_sizes.yaml:9:5: ", "tensor 'y'",
		  "key 'bytes_per_sample': give either bytes or "
		  "bytes_per_sample, not both",
		  NULL}},
		{"bad_no_size.yaml",
		 {FIX "bad_no_size.yaml:5:5: ", "tensor 'y'",
		  "key 'bytes': missing required key", NULL}},
		{"bad_dup_tensor.yaml",
		 {FIX "bad_dup_tensor.yaml:5:12: ", "tensor 'x'",
		  "key 'name': defined twice (first at " FIX
		  "bad_dup_tensor.yaml:4:12)",
		  NULL}},
		{"bad_malformed.yaml",
		 {FIX "bad_malformed.yaml:6:67: ", "YAML syntax error", NULL}},
		{"bad_kind.yaml",
		 {FIX "bad_kind.yaml:4:21: ", "tensor 'w'",
		  "key 'kind': 'weights' is not one of: input, parameter", NULL}},
		{"bad_zero_size.yaml",
		 {FIX "bad_zero_size.yaml:4:39: ", "tensor 'w'",
		  "key 'bytes': size must be > 0", NULL}},
		{"bad_inputs_scalar.yaml",
		 {FIX "bad_inputs_scalar.yaml:9:13: ", "op 'u'",
		  "key 'inputs': expected a list", NULL}},
		{"bad_dup_op.yaml",
		 {FIX "bad_dup_op.yaml:7:12: ", "op 'u'",
		  "key 'name': defined twice (first at " FIX
		  "bad_dup_op.yaml:6:12)",
		  NULL}},
		{"bad_algo_key.yaml",
		 {FIX "bad_algo_key.yaml:12:25: ", "op 'c': algo 'fft'",
		  "key 'speed': unknown key", NULL}},
		{"bad_order.yaml",
		 {FIX "bad_order.yaml: workload 'bad': ",
		  "op 'f' reads tensor 'y' before it is produced", "op 'g'",
		  NULL}},
		{"no_such_file.yaml",
		 {FIX "no_such_file.yaml: cannot open", NULL}},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char path[256];
		snprintf(path, sizeof path, FIX "%s", cases[i].file);
		gms_err e = {{0}};
		struct wl_workload *w = wl_load_yaml(path, 0, &e);
		if (w) {
			wl_free(w);
			fail_msg("%s loaded; an error was expected", path);
		}
		for (const char *const *p = cases[i].parts; *p; p++)
			assert_has(e.msg, *p);
	}
}

/* ---- streamed loading (issue 18) ------------------------------------- */

/* A new temp file (path: "/tmp/..._XXXXXX", filled in) to write. */
static FILE *open_tmp(char *path)
{
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	assert_non_null(f);
	return f;
}

/* How gen_file spoils its file. */
enum gen_fault {
	GEN_OK,	       /* a valid workload */
	GEN_BAD_KEY,   /* op k writes "byts" for "bytes" */
	GEN_BAD_INPUT, /* op k reads "nope" for w<k> */
	GEN_DUP_OP,    /* op k is named "op1" */
};

/* Write tests/gen-workload.sh's file of n ops into a temp file (path, of
 * "/tmp/gms_test_wl_XXXXXX"): tensors a0 (input, 4KiB per sample), then
 * w<i> (parameter, 4096 + i bytes) and a<i> (activation, 1024 + i bytes
 * per sample) for i = 1..n; op<i> (matmul, forward) reads a<i-1>, w<i>,
 * writes a<i>, flops_per_sample 1000 i, bytes 2 i; batch 2. In the usual
 * order the file is: line 1 name, 2 batch, 3 "tensors:", 4 a0, 5..4+2n
 * the w/a lines, 5+2n "ops:", then 7 lines per op, op i's from line
 * 6 + 2n + 7 (i - 1): name, type, phase, inputs, outputs, flops, bytes.
 * ops_first writes ops, tensors, batch, name (in that order). */
static void gen_file(char *path, int n, bool ops_first, int k,
		     enum gen_fault fault)
{
	FILE *f = open_tmp(path);
	for (int part = 0; part < 3; part++) {
		int what = ops_first ? 2 - part : part; /* 0 top, 1 t, 2 ops */
		if (what == 0)
			fputs("name: gen\nbatch: 2\n", f);
		if (what == 1) {
			fputs("tensors:\n  - {name: a0, kind: input, "
			      "bytes_per_sample: 4KiB}\n",
			      f);
			for (int i = 1; i <= n; i++)
				fprintf(f,
					"  - {name: w%d, kind: parameter, "
					"bytes: %d}\n  - {name: a%d, kind: "
					"activation, bytes_per_sample: %d}\n",
					i, 4096 + i, i, 1024 + i);
		}
		if (what != 2)
			continue;
		fputs("ops:\n", f);
		for (int i = 1; i <= n; i++) {
			if (i == k && fault == GEN_DUP_OP)
				fputs("  - name: op1\n", f);
			else
				fprintf(f, "  - name: op%d\n", i);
			fputs("    type: matmul\n    phase: forward\n", f);
			if (i == k && fault == GEN_BAD_INPUT)
				fprintf(f, "    inputs: [a%d, nope]\n", i - 1);
			else
				fprintf(f, "    inputs: [a%d, w%d]\n", i - 1, i);
			fprintf(f, "    outputs: [a%d]\n", i);
			fprintf(f, "    flops_per_sample: %d\n", 1000 * i);
			fprintf(f, "    %s: %d\n",
				i == k && fault == GEN_BAD_KEY ? "byts"
							       : "bytes",
				2 * i);
		}
	}
	assert_int_equal(fclose(f), 0);
}

/* The workload of gen_file(n), field by field, from its construction:
 * ids in file order (a0 = 0, w<i> = 2i - 1, a<i> = 2i; op<i> = i - 1);
 * per-sample figures times batch 2. */
static void check_gen(const struct wl_workload *w, int n)
{
	assert_string_equal(w->name, "gen");
	assert_int_equal(w->batch, 2);
	assert_int_equal(w->n_tensors, 1 + 2 * n);
	assert_int_equal(w->n_ops, n);
	assert_string_equal(w->tensors[0].name, "a0");
	assert_int_equal(w->tensors[0].kind, WL_INPUT);
	assert_int_equal(w->tensors[0].bytes, 2 * 4096);
	char name[32];
	for (int i = 1; i <= n; i++) {
		const struct wl_tensor *tw = &w->tensors[2 * i - 1];
		const struct wl_tensor *ta = &w->tensors[2 * i];
		snprintf(name, sizeof name, "w%d", i);
		assert_string_equal(tw->name, name);
		assert_int_equal(tw->kind, WL_PARAM);
		assert_int_equal(tw->bytes, 4096 + i);
		snprintf(name, sizeof name, "a%d", i);
		assert_string_equal(ta->name, name);
		assert_int_equal(ta->kind, WL_ACT);
		assert_int_equal(ta->bytes, 2 * (1024 + i));
		const struct wl_op *o = &w->ops[i - 1];
		snprintf(name, sizeof name, "op%d", i);
		assert_string_equal(o->name, name);
		assert_string_equal(w->layers[o->layer], name);
		assert_int_equal(o->type, OT_MATMUL);
		assert_int_equal(o->phase, WL_FWD);
		assert_int_equal(o->n_in, 2);
		assert_int_equal(o->in[0], 2 * i - 2);
		assert_int_equal(o->in[1], 2 * i - 1);
		assert_int_equal(o->n_out, 1);
		assert_int_equal(o->out[0], 2 * i);
		assert_true(o->flops == 2000.0 * i);
		assert_true(o->bytes == 2.0 * i);
		assert_int_equal(o->time, 0);
		assert_int_equal(o->workspace, 0);
		assert_true(o->recomputable); /* forward: the default */
		assert_false(o->inplace);
		assert_int_equal(o->n_algos, 0);
	}
}

/* A file of some thousand ops is read item by item (tensors and ops in
 * one pass, or ops first: a pass more) into the workload it describes. */
static void test_yaml_streamed(void **state)
{
	(void)state;
	for (int ops_first = 0; ops_first < 2; ops_first++) {
		char path[] = "/tmp/gms_test_wl_XXXXXX";
		gen_file(path, 3000, ops_first, 0, GEN_OK);
		gms_err e = {{0}};
		struct wl_workload *w = wl_load_yaml(path, 0, &e);
		unlink(path);
		if (!w)
			fail_msg("%s", e.msg);
		check_gen(w, 3000);
		wl_free(w);
	}
}

/* Errors deep in the streamed ops list name the exact place: n = 3000,
 * so op i's lines begin at 6 + 6000 + 7 (i - 1) (gen_file). */
static void test_yaml_streamed_errors(void **state)
{
	(void)state;
	static const struct {
		int k;		     /* the op spoilt */
		enum gen_fault fault; /* how */
		int line, col;	     /* where, by hand */
		const char *msg;     /* what follows "file:line:col: " */
	} cases[] = {
		/* op 2500's bytes line: 6006 + 7 x 2499 + 6 = 23505; the key
		 * after 4 blanks */
		{2500, GEN_BAD_KEY, 23505, 5,
		 "op 'op2500': key 'byts': unknown key"},
		/* op 2999's inputs line: 6006 + 7 x 2998 + 3 = 26995;
		 * "    inputs: [a2998, " is 20 characters */
		{2999, GEN_BAD_INPUT, 26995, 21,
		 "op 'op2999': key 'inputs': unknown tensor 'nope'"},
		/* op 3000's name: line 6006 + 7 x 2999 = 26999; "  - name: "
		 * is 10 characters; op1's name at line 6006 */
		{3000, GEN_DUP_OP, 26999, 11,
		 "op 'op1': key 'name': defined twice (first at "},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char path[] = "/tmp/gms_test_wl_XXXXXX", want[256];
		gen_file(path, 3000, false, cases[i].k, cases[i].fault);
		gms_err e = {{0}};
		struct wl_workload *w = wl_load_yaml(path, 0, &e);
		unlink(path);
		assert_null(w);
		snprintf(want, sizeof want, "%s:%d:%d: %s", path,
			 cases[i].line, cases[i].col, cases[i].msg);
		assert_has(e.msg, want);
		if (cases[i].fault == GEN_DUP_OP) {
			snprintf(want, sizeof want, "(first at %s:6006:11)",
				 path);
			assert_has(e.msg, want);
		}
	}
}

/* A streamed file past its byte limit is refused at the first byte past
 * it, and an alias at its place: chain3.yaml is longer than 10 bytes. */
static void test_yaml_stream_limits(void **state)
{
	(void)state;
	struct cfg_stream s;
	gms_err e = {{0}};
	assert_int_equal(cfg_stream_open(&s, FIX "chain3.yaml", 10, &e), 0);
	int rc = 0;
	for (int i = 0; i < 100 && rc == 0; i++) {
		yaml_event_t ev;
		rc = cfg_stream_next(&s, &ev, &e);
		if (rc == 0)
			yaml_event_delete(&ev);
	}
	cfg_stream_close(&s);
	assert_int_equal(rc, -1);
	assert_has(e.msg, FIX "chain3.yaml: byte 11: larger than 10 bytes");

	/* "  - {name: y, kind: activation, bytes: *sz}": the alias at line
	 * 4, column 40 ("  - {" 5, "name: y, " 9, "kind: activation, " 18,
	 * "bytes: " 7: 39 characters before it) */
	char path[] = "/tmp/gms_test_wl_XXXXXX";
	FILE *f = open_tmp(path);
	fputs("name: al\ntensors:\n  - {name: x, kind: input, bytes: &sz 4}\n"
	      "  - {name: y, kind: activation, bytes: *sz}\nops: [{}]\n",
	      f);
	fclose(f);
	struct wl_workload *w = wl_load_yaml(path, 0, &e);
	unlink(path);
	assert_null(w);
	char want[128];
	snprintf(want, sizeof want, "%s:4:40: YAML alias '*sz'", path);
	assert_has(e.msg, want);
}

/* load_fast reads a usual file once and stops at its first error, but
 * the message is still a document load's: a syntax error anywhere comes
 * before an unknown tensor in an earlier op (issue 37). */
static void test_yaml_one_pass_error_order(void **state)
{
	(void)state;
	char path[] = "/tmp/gms_test_wl_XXXXXX";
	FILE *f = open_tmp(path);
	fputs("name: x\n"
	      "tensors:\n"
	      "  - {name: a, kind: input, bytes: 4}\n"
	      "ops:\n"
	      "  - {name: o, type: matmul, phase: forward, inputs: [nope]}\n"
	      "  - {name: p, type: matmul, phase: forward, inputs: [a\n",
	      f);
	assert_int_equal(fclose(f), 0);
	gms_err e = {{0}};
	struct wl_workload *w = wl_load_yaml(path, 0, &e);
	unlink(path);
	assert_null(w);
	assert_has(e.msg, path);
	assert_null(strstr(e.msg, "unknown tensor"));
	/* the syntax error: the flow sequence opened on line 6 never ends */
	assert_has(e.msg, "flow sequence");
}

/* The hash is of the bytes, however they are fed, and moves with any
 * byte and with the length (zeros appended). */
static void test_cache_hash(void **state)
{
	(void)state;
	const char *text = "name: gen\nbatch: 2\ntensors: [x]";
	size_t n = strlen(text);
	uint64_t whole[2], parts[2], other[2];
	struct wl_hash h;
	wl_hash_init(&h);
	wl_hash_add(&h, text, n);
	wl_hash_value(&h, whole);
	wl_hash_init(&h);
	size_t cuts[] = {1, 3, 13, n};
	for (size_t i = 0, at = 0; i < 4; at = cuts[i++])
		wl_hash_add(&h, text + at, cuts[i] - at);
	wl_hash_value(&h, parts);
	assert_memory_equal(whole, parts, sizeof whole);
	char copy[64];
	memcpy(copy, text, n);
	copy[7] ^= 1; /* one bit of one byte */
	wl_hash_init(&h);
	wl_hash_add(&h, copy, n);
	wl_hash_value(&h, other);
	assert_true(other[0] != whole[0] && other[1] != whole[1]);
	/* "" and "\0", "\0" and "\0\0": the same words, other lengths */
	uint64_t z[3][2];
	for (int k = 0; k < 3; k++) {
		wl_hash_init(&h);
		wl_hash_add(&h, "\0\0", (size_t)k);
		wl_hash_value(&h, z[k]);
	}
	assert_true(z[0][0] != z[1][0] && z[1][0] != z[2][0]);
}

/* A fresh directory for cache entries, into dir (of
 * "/tmp/gms_test_wlc_XXXXXX"). */
static void cache_dir(char *dir)
{
	assert_non_null(mkdtemp(dir));
}

/* The one entry in dir, into path; how many there are. */
static int cache_entries(const char *dir, char *path, size_t n)
{
	char cmd[256];
	snprintf(cmd, sizeof cmd, "ls %s", dir);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	char line[256];
	int k = 0;
	while (fgets(line, sizeof line, p)) {
		line[strcspn(line, "\n")] = 0;
		snprintf(path, n, "%s/%s", dir, line);
		k++;
	}
	pclose(p);
	return k;
}

static struct wl_workload *load_c(const char *path, int64_t batch,
				  const char *dir, enum wl_cache_status want,
				  struct wl_cache_report *rep)
{
	struct wl_cache_opts o = {dir, 0};
	gms_err e = {{0}};
	struct wl_workload *w = wl_load_yaml_cached(path, batch, &o, rep, &e);
	if (!w)
		fail_msg("%s", e.msg);
	if (rep->status != want)
		fail_msg("status %d, wanted %d (%s)", (int)rep->status,
			 (int)want, rep->why);
	assert_false(rep->write_failed);
	return w;
}

/* The cache: a first load writes the entry, a second reads it back
 * (the workload gen_file describes, field by field, either way); another
 * batch is another entry; a changed file is loaded again (stale); the
 * ops-first layout is not cached. */
static void test_cache_hit_stale(void **state)
{
	(void)state;
	char dir[] = "/tmp/gms_test_wlc_XXXXXX", path[] =
						    "/tmp/gms_test_wl_XXXXXX";
	char entry[512];
	struct wl_cache_report rep;
	cache_dir(dir);
	gen_file(path, 300, false, 0, GEN_OK);
	struct wl_workload *w = load_c(path, 0, dir, WL_CACHE_MISS, &rep);
	check_gen(w, 300);
	wl_free(w);
	assert_int_equal(cache_entries(dir, entry, sizeof entry), 1);
	assert_string_equal(entry, rep.entry);
	w = load_c(path, 0, dir, WL_CACHE_HIT, &rep);
	check_gen(w, 300);
	wl_free(w);
	/* batch 4: a0 is 4 KiB a sample, a1 1025 bytes */
	w = load_c(path, 4, dir, WL_CACHE_MISS, &rep);
	assert_int_equal(w->batch, 4);
	assert_int_equal(w->tensors[0].bytes, 4 * 4096);
	assert_int_equal(w->tensors[2].bytes, 4 * 1025);
	wl_free(w);
	w = load_c(path, 4, dir, WL_CACHE_HIT, &rep);
	assert_int_equal(w->tensors[2].bytes, 4 * 1025);
	wl_free(w);
	assert_int_equal(cache_entries(dir, entry, sizeof entry), 2);
	/* the same path, other content: 200 ops (stale, then a hit); the
	 * ops first (read in passes, never cached) */
	static const struct {
		int n;
		bool ops_first;
		enum wl_cache_status first, again;
	} next[] = {{200, false, WL_CACHE_STALE, WL_CACHE_HIT},
		    {100, true, WL_CACHE_OFF, WL_CACHE_OFF}};
	for (int k = 0; k < 2; k++) {
		char path2[] = "/tmp/gms_test_wl_XXXXXX";
		gen_file(path2, next[k].n, next[k].ops_first, 0, GEN_OK);
		assert_int_equal(rename(path2, path), 0);
		w = load_c(path, 0, dir, next[k].first, &rep);
		check_gen(w, next[k].n);
		wl_free(w);
		w = load_c(path, 0, dir, next[k].again, &rep);
		check_gen(w, next[k].n);
		wl_free(w);
	}
	unlink(path);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -r %s", dir);
	assert_int_equal(system(cmd), 0);
}

/* A damaged entry is said (CORRUPT, why) and never used: the YAML is
 * loaded, and the entry written again. Damage: one byte of the payload,
 * the entry cut short, another header, a byte appended. */
static void test_cache_corrupt(void **state)
{
	(void)state;
	char dir[] = "/tmp/gms_test_wlc_XXXXXX", path[] =
						    "/tmp/gms_test_wl_XXXXXX";
	struct wl_cache_report rep;
	cache_dir(dir);
	gen_file(path, 300, false, 0, GEN_OK);
	wl_free(load_c(path, 0, dir, WL_CACHE_MISS, &rep));
	char entry[sizeof rep.entry];
	snprintf(entry, sizeof entry, "%s", rep.entry);
	struct stat st;
	assert_int_equal(stat(entry, &st), 0);
	static const char *const why[] = {
		"its payload does not match its hash", /* a size's byte */
		"truncated",
		"not a version 1 entry",
		"bytes after its end",
	};
	for (int k = 0; k < 4; k++) {
		FILE *f = fopen(entry, "r+b");
		assert_non_null(f);
		if (k == 0) {
			/* the entry ends with op300's flops (8 bytes),
			 * bytes, time, workspace (8 each), flags (1),
			 * n_algos (4) and 'E' (1): flops is at size - 38 ..
			 * size - 31; a bit of its byte at size - 34, in the
			 * mantissa, makes another legal figure, which only
			 * the hash tells */
			assert_int_equal(fseek(f, st.st_size - 34, SEEK_SET), 0);
			int c = fgetc(f);
			assert_int_equal(fseek(f, st.st_size - 34, SEEK_SET), 0);
			fputc(c ^ 0x10, f);
		} else if (k == 1) {
			assert_int_equal(ftruncate(fileno(f), st.st_size / 2), 0);
		} else if (k == 2) {
			fputs("GMSWLC9\n", f);
		} else {
			assert_int_equal(fseek(f, 0, SEEK_END), 0);
			fputc('E', f);
		}
		fclose(f);
		struct wl_workload *w =
			load_c(path, 0, dir, WL_CACHE_CORRUPT, &rep);
		check_gen(w, 300);
		wl_free(w);
		assert_has(rep.why, entry);
		assert_has(rep.why, "corrupt cache entry");
		assert_has(rep.why, why[k]);
		/* written again */
		w = load_c(path, 0, dir, WL_CACHE_HIT, &rep);
		check_gen(w, 300);
		wl_free(w);
	}
	unlink(path);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -r %s", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_builder_finalize),
		cmocka_unit_test(test_builder_copies_and_algos),
		cmocka_unit_test(test_describe_workspace),
		cmocka_unit_test(test_builder_many),
		cmocka_unit_test(test_builder_reserve),
		cmocka_unit_test(test_builder_template),
		cmocka_unit_test(test_add_errors),
		cmocka_unit_test(test_finalize_errors),
		cmocka_unit_test(test_yaml_chain3),
		cmocka_unit_test(test_yaml_batch_override),
		cmocka_unit_test(test_yaml_minimal),
		cmocka_unit_test(test_yaml_tiny_cnn),
		cmocka_unit_test(test_yaml_errors),
		cmocka_unit_test(test_yaml_streamed),
		cmocka_unit_test(test_yaml_streamed_errors),
		cmocka_unit_test(test_yaml_stream_limits),
		cmocka_unit_test(test_yaml_one_pass_error_order),
		cmocka_unit_test(test_cache_hash),
		cmocka_unit_test(test_cache_hit_stale),
		cmocka_unit_test(test_cache_corrupt),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
