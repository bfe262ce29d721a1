/*
 * test_recorded.c - logs of gpumemsim-record (cli/gpumemsim_record.py):
 * the DTR format's SHAPES extension, op costs from ATen names and shapes
 * (workloads/wl_aten.c), and the shipped recordings
 * (workloads/traces/recorded/) against the generators' pytorch
 * personality (README "Recorded PyTorch steps").
 *
 * Run from the repository root.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../policies/pol.h"
#include "../sim/ex.h"
#include "../workloads/wl_aten.h"
#include "testkit.h"
#include "tmpkit.h"
#include "wlkit.h"

#define REC "workloads/traces/recorded/"

static struct wl_workload *load_text(const char *text, gms_err *err)
{
	char path[32];
	tmp_text(path, "gms_test_rec", text);
	struct wl_workload *w = wl_load_dtr(path, err);
	unlink(path);
	return w;
}

#define L(...) "{" __VA_ARGS__ "}\n"
#define CONST(n, b)                                                        \
	L("\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"" n "\"")               \
	L("\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"" n "\",\"MEMORY\":\"" b "\"")
#define RES(n, b, a)                                                       \
	L("\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"" n "\",\"MEMORY\":\"" b "\"") \
	L("\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"" n "\",\"ALIAS\":\"" a "\"")

/* A step as gpumemsim-record writes it (no TIME): a 3x3 convolution of
 * x (2,3,8,8) by w (8,3,3,3), a view, a sum, the convolution's backward
 * and an SGD-with-momentum update of w through its buffer m. */
static const char step_log[] =
	L("\"INSTRUCTION\":\"ANNOTATE\",\"ANNOTATION\":\"NOTE by hand\"")
	L("\"INSTRUCTION\":\"ANNOTATE\",\"ANNOTATION\":\"START\"")
	CONST("w", "864") CONST("m", "864") CONST("x", "1536")
	L("\"INSTRUCTION\":\"CALL\",\"NAME\":\"convolution\",\"ARGS\":[\"x\","
	  "\"w\"],\"RESULT\":[\"y\"],\"SHAPES\":[\"float32[2,3,8,8]\","
	  "\"float32[8,3,3,3]\",\"float32[2,8,8,8]\"]")
	RES("y", "4096", "-1")
	L("\"INSTRUCTION\":\"CALL\",\"NAME\":\"view\",\"ARGS\":[\"y\"],"
	  "\"RESULT\":[\"v\"],\"SHAPES\":[\"float32[2,8,8,8]\","
	  "\"float32[2,512]\"]")
	RES("v", "4096", "0")
	L("\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"v\"")
	L("\"INSTRUCTION\":\"CALL\",\"NAME\":\"sum\",\"ARGS\":[\"y\"],"
	  "\"RESULT\":[\"s\"],\"SHAPES\":[\"float32[2,8,8,8]\",\"float32[]\"]")
	RES("s", "4", "-1")
	L("\"INSTRUCTION\":\"ANNOTATE\",\"ANNOTATION\":\"BACKWARD\"")
	L("\"INSTRUCTION\":\"CALL\",\"NAME\":\"convolution_backward\","
	  "\"ARGS\":[\"y\",\"x\",\"w\"],\"RESULT\":[\"dx\",\"dw\"],"
	  "\"SHAPES\":[\"float32[2,8,8,8]\",\"float32[2,3,8,8]\","
	  "\"float32[8,3,3,3]\",\"float32[2,3,8,8]\",\"float32[8,3,3,3]\"]")
	RES("dx", "1536", "-1") RES("dw", "864", "-1")
	L("\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"dx\"")
	L("\"INSTRUCTION\":\"MUTATE\",\"NAME\":\"mul_\",\"ARGS\":[\"m\"],"
	  "\"MUTATE\":[\"0\"],\"SHAPES\":[\"float32[8,3,3,3]\"]")
	L("\"INSTRUCTION\":\"MUTATE\",\"NAME\":\"add_\",\"ARGS\":[\"w\",\"m\"],"
	  "\"MUTATE\":[\"0\"],\"SHAPES\":[\"float32[8,3,3,3]\","
	  "\"float32[8,3,3,3]\"]")
	L("\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"x\"");

/* By hand:
 *   convolution: FLOPs 2 N K Ho Wo C R S = 2*2*8*8*8*3*3*3 = 55296; bytes
 *     (x 384 + w 216 + y 1024 elements) * 4 = 6496; geometry: stride
 *     ceil(8/8) = 1, padding 3/2 = 1, (8 + 2 - 3)/1 + 1 = 8 = Ho: kept;
 *   view: its only result is an alias: no kernel, 1 ns;
 *   sum: one FLOP an output element (1), bytes (1024 + 1) * 4 = 4100;
 *   convolution_backward: both passes, 2 * 55296 = 110592 FLOPs;
 *   mul_, add_: MUTATEs after BACKWARD writing constants only: update;
 *   kinds: w read by the forward: parameter; m read only by the update:
 *     optimizer state; x released: input; dw never released, made in
 *     backward: param_grad. */
static void test_step_costs(void **state)
{
	(void)state;
	gms_err err = {{0}};
	struct wl_workload *w = load_text(step_log, &err);
	if (!w)
		fail_msg("%s", err.msg);
	assert_int_equal(w->n_ops, 6);
	const struct wl_op *cv = op(w, "convolution/0");
	assert_int_equal(cv->type, OT_CONV);
	assert_int_equal(cv->time, 0);
	assert_true(cv->flops == 55296);
	assert_true(cv->bytes == 6496);
	assert_non_null(cv->conv);
	assert_int_equal(cv->conv->stride, 1);
	assert_int_equal(cv->conv->pad_h, 1);
	assert_int_equal(cv->conv->k, 8);
	assert_true(cv->n_algos >= 2);
	assert_int_equal(op(w, "view/1")->time, 1);
	const struct wl_op *sm = op(w, "sum/2");
	assert_true(sm->flops == 1 && sm->bytes == 4100);
	const struct wl_op *bw = op(w, "convolution_backward/3");
	assert_int_equal(bw->phase, WL_BWD);
	assert_true(bw->flops == 110592);
	assert_int_equal(op(w, "mul_/4")->phase, WL_UPD);
	assert_int_equal(op(w, "add_/5")->phase, WL_UPD);
	assert_int_equal(tensor(w, "w")->kind, WL_PARAM);
	assert_int_equal(tensor(w, "m")->kind, WL_OPT_STATE);
	assert_int_equal(tensor(w, "x")->kind, WL_INPUT);
	assert_int_equal(tensor(w, "dw")->kind, WL_PARAM_GRAD);
	wl_free(w);
	/* asked for: the profile times even a log with TIME */
	w = wl_load_dtr_opt("tests/fixtures/dtr/mini-4-all.log", true, &err);
	assert_non_null(w);
	wl_free(w);
}

/* wl_load_dtr_rules: one reading of step_log built under simrd's rule and
 * the forward rule (issue 37). By hand: forward marks the forward CALLs
 * (convolution, view, sum: no MUTATE writes their results) recomputable,
 * not the backward CALL or the two MUTATEs; simrd marks all six. The
 * rest is the same workload: 6 ops, the same tensors. */
static void test_rules_one_reading(void **state)
{
	(void)state;
	char path[32];
	tmp_text(path, "gms_test_rec", step_log);
	const enum wl_dtr_remat r[2] = {WL_DTR_REMAT_SIMRD,
					WL_DTR_REMAT_FORWARD};
	struct wl_workload *w[2];
	gms_err err = {{0}};
	int rc = wl_load_dtr_rules(path, r, 2, false, 0, w, &err);
	unlink(path);
	if (rc < 0)
		fail_msg("%s", err.msg);
	static const bool fwd[6] = {true, true, true, false, false, false};
	for (int k = 0; k < 2; k++) {
		assert_int_equal(w[k]->n_ops, 6);
		assert_int_equal(w[k]->n_tensors, w[0]->n_tensors);
		for (uint32_t o = 0; o < 6; o++) {
			assert_string_equal(w[k]->ops[o].name,
					    w[0]->ops[o].name);
			assert_int_equal(w[k]->ops[o].recomputable,
					 k == 0 ? true : fwd[o]);
		}
	}
	wl_free(w[0]);
	wl_free(w[1]);
	/* an unreadable log: an error, and no workload */
	w[0] = w[1] = (struct wl_workload *)path; /* overwritten */
	assert_int_equal(wl_load_dtr_rules("/nonexistent/x-1.log", r, 2,
					   false, 0, w, &err),
			 -1);
	assert_null(w[0]);
	assert_null(w[1]);
	assert_has(err.msg, "/nonexistent/x-1.log");
}

/* The type of an operator is classified once a log (issue 37: a memo by
 * name, grown past 32 names): "relu" is OT_RELU in forward before and
 * after 40 other names (each "opN", unknown: other), and OT_RELU_BWD in
 * backward, the same name in another phase. */
static void test_type_memo(void **state)
{
	(void)state;
	size_t cap = 1 << 16, n = 0;
	char *log = malloc(cap);
	assert_non_null(log);
#define ADD(...) (n += (size_t)snprintf(log + n, cap - n, __VA_ARGS__))
	ADD(CONST("a", "16"));
	for (int i = 0; i < 43; i++) {
		const char *nm = i == 0 || i == 41 || i == 42 ? "relu" : NULL;
		char own[16];
		snprintf(own, sizeof own, "op%d", i);
		if (i == 42)
			ADD(L("\"INSTRUCTION\":\"ANNOTATE\",\"ANNOTATION\":"
			      "\"BACKWARD\""));
		ADD(L("\"INSTRUCTION\":\"CALL\",\"NAME\":\"%s\",\"ARGS\":"
		      "[\"a\"],\"RESULT\":[\"r%d\"],\"TIME\":\"5\""),
		    nm ? nm : own, i);
		ADD(L("\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"r%d\","
		      "\"MEMORY\":\"16\"")
			    L("\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"r%d\","
			      "\"ALIAS\":\"-1\""),
		    i, i);
	}
#undef ADD
	assert_true(n < cap);
	gms_err err = {{0}};
	struct wl_workload *w = load_text(log, &err);
	free(log);
	if (!w)
		fail_msg("%s", err.msg);
	assert_int_equal(w->n_ops, 43);
	assert_int_equal(w->ops[0].type, OT_RELU);
	for (uint32_t o = 1; o <= 40; o++)
		assert_int_equal(w->ops[o].type, OT_OTHER);
	assert_int_equal(w->ops[41].type, OT_RELU);
	assert_int_equal(w->ops[42].type, OT_RELU_BWD);
	wl_free(w);
}

/* A zero-batch step (issue 38: "a zero dimension gives NaN FLOPs"): the
 * convolution of an empty x (0,3,8,8) has 2*0*8*8*8*27 = 0 FLOPs and no
 * geometry (no algorithm to choose: before, cuDNN's per-algorithm times
 * were 0/0 and the load failed on a NaN time_scale); every op's FLOPs
 * and bytes are finite, and its time is the profile's. */
static void test_zero_dimension(void **state)
{
	(void)state;
	char *text = strdup(step_log), *p;
	assert_non_null(text);
	while ((p = strstr(text, "[2,")))
		p[1] = '0';
	gms_err err = {{0}};
	struct wl_workload *w = load_text(text, &err);
	free(text);
	if (!w)
		fail_msg("%s", err.msg);
	const struct wl_op *cv = op(w, "convolution/0");
	assert_true(cv->flops == 0);
	assert_null(cv->conv);
	assert_int_equal(cv->n_algos, 0);
	for (uint32_t i = 0; i < w->n_ops; i++)
		assert_true(isfinite(w->ops[i].flops) &&
			    isfinite(w->ops[i].bytes));
	/* backward: 2 * 2 * numel(grad_y) (0) * numel(w) / K = 0 */
	assert_true(op(w, "convolution_backward/3")->flops == 0);
	wl_free(w);
}

/* A TIME the log gives is kept, SHAPES or not; profile_times drops it. */
static void test_time_kept_or_dropped(void **state)
{
	(void)state;
	static const char log[] =
		CONST("a", "400")
		L("\"INSTRUCTION\":\"CALL\",\"NAME\":\"relu\",\"ARGS\":[\"a\"],"
		  "\"RESULT\":[\"b\"],\"TIME\":\"70\",\"SHAPES\":["
		  "\"float32[100]\",\"float32[100]\"]")
		RES("b", "400", "-1");
	gms_err err = {{0}};
	struct wl_workload *w = load_text(log, &err);
	if (!w)
		fail_msg("%s", err.msg);
	assert_int_equal(w->ops[0].time, 70);
	wl_free(w);
	char path[32];
	tmp_text(path, "gms_test_rec", log);
	w = wl_load_dtr_opt(path, true, &err);
	unlink(path);
	assert_non_null(w);
	assert_int_equal(w->ops[0].time, 0);
	assert_true(w->ops[0].bytes == 800); /* 100 + 100 floats */
	wl_free(w);
}

/* An ATen name wl_aten.c does not know stays type other, is timed by the
 * profile (time 0) from its bytes, and describe counts it: one here
 * (the view is a view, not counted). */
static void test_unknown_counted(void **state)
{
	(void)state;
	static const char log[] =
		CONST("a", "16")
		L("\"INSTRUCTION\":\"CALL\",\"NAME\":\"frobnicate\",\"ARGS\":"
		  "[\"a\"],\"RESULT\":[\"b\"],\"SHAPES\":[\"float32[4]\","
		  "\"float32[4]\"]")
		RES("b", "16", "-1")
		L("\"INSTRUCTION\":\"CALL\",\"NAME\":\"view\",\"ARGS\":"
		  "[\"b\"],\"RESULT\":[\"c\"],\"SHAPES\":[\"float32[4]\","
		  "\"float32[2,2]\"]")
		RES("c", "16", "0");
	gms_err err = {{0}};
	struct wl_workload *w = load_text(log, &err);
	if (!w)
		fail_msg("%s", err.msg);
	assert_int_equal(w->ops[0].type, OT_OTHER);
	assert_int_equal(w->ops[0].time, 0);
	assert_true(w->ops[0].bytes == 32); /* 4 + 4 floats */
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	wl_describe(w, false, f);
	fclose(f);
	assert_has(buf, "unclassified ops    1 (type other");
	free(buf);
	wl_free(w);
}

static void test_bad_shapes(void **state)
{
	(void)state;
	static const struct {
		const char *shapes; /* the SHAPES value */
		const char *msg;    /* a part of the error */
	} cases[] = {
		{"[\"float32[4]\"]", "1 shapes for 1 arguments and 1 results"},
		{"[\"float32[4]\",\"float32[4,x]\"]",
		 "a dimension is not an integer"},
		{"[\"floaty[4]\",\"float32[4]\"]", "expected DTYPE["},
		{"[\"float32[4]\",\"float32[4]x\"]", "characters after ']'"},
		{"[\"float32[4]\",4]", "expected a string"},
		{"\"float32[4]\"", "expected an array"},
		/* issue 38: a shape of more bytes than a tensor may hold
		 * (WL_BYTES_MAX, 1e15: 2.5e14 float32 elements) ran as a
		 * 44-day iteration; 2.5e14 elements of 4 bytes are 1e15 and
		 * pass, one more element of 8 bytes does not */
		{"[\"float32[4]\",\"float32[1000000000000000]\"]",
		 "more than 1e15 bytes"},
		{"[\"float32[4]\",\"int64[125000000000001]\"]",
		 "more than 1e15 bytes"},
		{"[\"float32[4]\",\"float32[1000000,1000000,1000000]\"]",
		 "more than 1e15 bytes"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char log[512];
		snprintf(log, sizeof log,
			 CONST("a", "16") "{\"INSTRUCTION\":\"CALL\","
			 "\"NAME\":\"relu\",\"ARGS\":[\"a\"],\"RESULT\":"
			 "[\"b\"],\"SHAPES\":%s}\n" RES("b", "16", "-1"),
			 cases[i].shapes);
		gms_err err = {{0}};
		struct wl_workload *w = load_text(log, &err);
		assert_null(w);
		assert_has(err.msg, cases[i].msg);
		assert_has(err.msg, ":3:"); /* the CALL's line */
	}
	gms_err err = {{0}};
	assert_null(load_text(
		L("\"INSTRUCTION\":\"ANNOTATE\",\"ANNOTATION\":\"NOTES\""),
		&err));
	assert_has(err.msg, "unknown annotation 'NOTES'");
}

/* Batch marks (issue 35) read at a batch: a marked MEMORY and a marked
 * SHAPES dimension scale as size / recorded batch * batch, and each way
 * a mark can be wrong is a located error naming the value (issue 37
 * made the check apart from its message). Columns: the MEMORY value's
 * quote is byte 45 of {"INSTRUCTION":"MEMORY","NAME":"x","MEMORY":"8",
 * ...}; the SHAPES items' columns are the CALL line's. */
static struct wl_workload *load_batch(const char *text, int64_t batch,
				      gms_err *err)
{
	char path[32];
	tmp_text(path, "gms_test_rec", text);
	struct wl_workload *w = wl_load_dtr_batch(
		path, WL_DTR_REMAT_FORWARD, false, batch, err);
	unlink(path);
	return w;
}

#define MARKED(b) L("\"INSTRUCTION\":\"ANNOTATE\",\"ANNOTATION\":\"BATCH " b "\"")
#define START L("\"INSTRUCTION\":\"ANNOTATE\",\"ANNOTATION\":\"START\"")
#define MEM_B(n, b)                                                        \
	L("\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"" n "\"")               \
	L("\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"" n "\",\"MEMORY\":\"" b   \
	  "\",\"BATCH\":\"1\"")
#define RELU(sh_in, sh_out)                                                \
	L("\"INSTRUCTION\":\"CALL\",\"NAME\":\"relu\",\"ARGS\":[\"x\"],"     \
	  "\"RESULT\":[\"y\"],\"SHAPES\":[\"" sh_in "\",\"" sh_out "\"]")     \
	RES("y", "16", "-1")

static void test_batch_marks(void **state)
{
	(void)state;
	/* recorded at 2, loaded at 6: x is 8 / 2 * 6 = 24 bytes, and the
	 * relu's shapes float32[2b] become float32[6]: its bytes are one
	 * input and one output of 6 floats, 48 */
	gms_err err = {{0}};
	struct wl_workload *w =
		load_batch(MARKED("2") START MEM_B("x", "8")
				   RELU("float32[2b]", "float32[2b]"),
			   6, &err);
	if (!w)
		fail_msg("%s", err.msg);
	assert_int_equal(w->batch, 6);
	assert_true(w->tensors[0].bytes == 24);
	assert_true(w->ops[0].bytes == 48);
	wl_free(w);
	static const struct {
		const char *text; /* the log */
		int64_t batch;	  /* loaded at */
		const char *msg;  /* a part of the error */
	} cases[] = {
		{START MEM_B("x", "8"), 0,
		 ":3:45: key 'MEMORY': MEMORY 8 is marked proportional to "
		 "the batch, but no ANNOTATE BATCH came before"},
		{MARKED("3") START MEM_B("x", "8"), 0,
		 ":4:45: key 'MEMORY': MEMORY 8 is marked proportional to "
		 "the batch, but is not a multiple of the batch 3"},
		/* 1e15 bytes at batch 1 are 2e15 at batch 2 */
		{MARKED("1") START MEM_B("x", "1000000000000000"), 2,
		 ":4:45: key 'MEMORY': MEMORY 1000000000000000 at batch 2 is "
		 "more than 1e15"},
		{MARKED("2") START MEM_B("x", "8")
			 RELU("float32[2b]", "float32[4,3b]"), 0,
		 ":5:"},
		{MARKED("2") START MEM_B("x", "8")
			 RELU("float32[2b]", "float32[4,3b]"), 0,
		 "key 'SHAPES': item 2's dimension 2 is marked proportional "
		 "to the batch, but is not a multiple of the batch 2"},
		{START L("\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"x\"")
			 L("\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"x\","
			   "\"MEMORY\":\"8\"") RELU("float32[2b]", "float32[2]"),
		 0,
		 "key 'SHAPES': item 1's dimension 1 is marked proportional "
		 "to the batch, but no ANNOTATE BATCH came before"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		gms_err e = {{0}};
		assert_null(load_batch(cases[i].text, cases[i].batch, &e));
		assert_has(e.msg, cases[i].msg);
	}
}

/* The shipped recording of net (batch 2) and the generator's pytorch
 * personality at the same batch, 224x224, SGD with momentum (the
 * recorder's default) into *gen. */
static struct wl_workload *recorded_and_generated(const char *net,
						  struct wl_workload **gen)
{
	char path[128];
	snprintf(path, sizeof path, REC "%s-2-recorded.log", net);
	gms_err err = {{0}};
	struct wl_workload *r = wl_load_dtr(path, &err);
	if (!r)
		fail_msg("%s", err.msg);
	assert_int_equal(r->batch, 2);
	*gen = gen_build_ok(net, 2, 224, WL_FW_PYTORCH, WL_OPTIM_MOMENTUM);
	return r;
}

/* The shipped recordings against the generators' pytorch personality at
 * the same batch (2, 224x224, SGD with momentum as the recorder's
 * default): parameters (batch-norm buffers included), optimizer state
 * and parameter gradients must be equal byte for byte (the same tensors:
 * torchvision's layers, fp32), and the peak under framework (arena: plain
 * sums) within 1%: the peak is one of test_live_curve's segments, where
 * the recording may hold, beyond the generator's, a weight gradient, a
 * workspace and one gradient sum (the largest, on ResNet-50: a 3x3
 * 512-channel weight gradient, 9 MiB, 2% of the peak, held in a
 * segment that is not the peak's); measured +0.34% on ResNet-50 (1.49
 * MB), 24 bytes on VGG-16 and DenseNet-121. */
static void test_against_generators(void **state)
{
	(void)state;
	/* batch norms and the sum of their channels (torchvision: ResNet-50
	 * 1 + 16 * 3 + 4 downsamples = 53 layers, DenseNet-121 2 per dense
	 * layer (58 * 2) + 3 transitions + norm0 + norm5 = 121) */
	static const struct {
		const char *net;
		uint64_t bns, channels;
	} nets[] = {{"resnet50", 53, 26560},
		    {"vgg16", 0, 0},
		    {"densenet121", 121, 41824}};
	struct hw_profile hw;
	hw_test_profile(&hw, 64 * GMS_GIB);
	for (size_t i = 0; i < sizeof nets / sizeof *nets; i++) {
		struct wl_workload *g, *r = recorded_and_generated(
					       nets[i].net, &g);
		/* both count the batch norms' buffers as parameters:
		 * running mean and variance (fp32, 8 bytes a channel) and
		 * num_batches_tracked (one int64 each) */
		uint64_t learned = 0;
		for (uint32_t t = 0; t < g->n_tensors; t++)
			if (g->tensors[t].kind == WL_PARAM &&
			    !strstr(g->tensors[t].name, ".running_") &&
			    !strstr(g->tensors[t].name, ".num_batches"))
				learned += g->tensors[t].bytes;
		assert_int_equal(wl_bytes_of_kind(g, WL_PARAM),
				 learned + 8 * nets[i].channels +
					 8 * nets[i].bns);
		/* the learned ones: as many as their momentum buffers */
		assert_int_equal(learned, wl_bytes_of_kind(g, WL_OPT_STATE));
		static const enum wl_kind same[] = {WL_PARAM, WL_OPT_STATE,
						    WL_PARAM_GRAD};
		for (size_t k = 0; k < 3; k++)
			assert_int_equal(wl_bytes_of_kind(r, same[k]),
					 wl_bytes_of_kind(g, same[k]));
		uint64_t pr = framework_peak(r, &hw);
		uint64_t pg = framework_peak(g, &hw);
		print_message("%s: recorded peak %llu, generated %llu\n",
			      nets[i].net, (unsigned long long)pr,
			      (unsigned long long)pg);
		assert_within((double)pr, (double)pg, 0.01);
		wl_free(r);
		wl_free(g);
	}
}

/* ---- live bytes over the iteration ------------------------------------ */

/* Segments of an iteration, anchored on the convolutions a recording and
 * a generator both have, one for one: segment 0 runs from the start to
 * the first forward convolution; segment 1 + k from the k-th forward
 * convolution to the next anchor; then one a backward convolution layer
 * (generated: the first of its bwd_data and bwd_filter ops, which share
 * a layer; recorded: its one convolution_backward), the last running to
 * the iteration's end, the update included. A net with C convolutions
 * has 2C + 1 segments; segment C holds the head, the loss and the head's
 * backward. */
struct segs {
	uint32_t n;	    /* segments */
	uint64_t live[512]; /* most live bytes during an op of each */
	uint64_t slack[512]; /* recordings: what the segment may hold beyond
				the generator's (test_live_curve) */
	uint64_t peak;	    /* most live bytes of the iteration */
};

/* Does op begin a segment? *last: the layer of the last backward
 * anchor. */
static bool seg_anchor(const struct wl_op *op, uint32_t *last)
{
	if (op->type == OT_CONV && op->phase == WL_FWD)
		return true;
	if ((op->type != OT_CONV_BWD_DATA &&
	     op->type != OT_CONV_BWD_FILTER) ||
	    op->layer == *last)
		return false;
	*last = op->layer;
	return true;
}

/* The segments of w. slack[j], for a recording: the parameter gradient
 * and the (fastest algorithm's) workspace of the segment's fused
 * convolution_backward, plus the largest gradient sum (a backward `add`)
 * in it. */
static void live_segments(const struct wl_workload *w, struct segs *s)
{
	uint64_t *live = live_bytes(w);
	uint32_t last = WL_NONE;
	memset(s, 0, sizeof *s);
	s->n = 1;
	for (uint32_t k = 0; k < w->n_ops; k++) {
		const struct wl_op *op = &w->ops[k];
		if (seg_anchor(op, &last)) {
			assert_true(s->n < sizeof s->live / sizeof *s->live);
			s->n++;
		}
		uint32_t j = s->n - 1;
		if (live[k] > s->live[j])
			s->live[j] = live[k];
		if (live[k] > s->peak)
			s->peak = live[k];
		uint64_t add = 0;
		for (uint32_t i = 0; i < op->n_out; i++) {
			const struct wl_tensor *x = &w->tensors[op->out[i]];
			if (op->type == OT_CONV_BWD_DATA ||
			    op->type == OT_CONV_BWD_FILTER)
				add += x->kind == WL_PARAM_GRAD ? x->bytes : 0;
			else if (op->phase == WL_BWD && op->type == OT_ADD &&
				 x->bytes > add)
				add = x->bytes;
		}
		if (op->n_algos && (op->type == OT_CONV_BWD_DATA ||
				    op->type == OT_CONV_BWD_FILTER))
			add += op->algos[wl_fastest_algo(op)].workspace;
		s->slack[j] += add;
	}
	free(live);
}

/* Live bytes over the iteration, recorded against generated (pytorch
 * personality, SGD with momentum, batch 2, 224x224), segment by
 * segment (live_segments). By the categories README "Recorded PyTorch
 * steps" lists:
 *  - forward segments 0 .. C-1: equal to the byte. Both hold the same
 *    tensors (torchvision's layers, fp32) for the same spans: parameters,
 *    batch-norm buffers, momentum, the batch and labels, the
 *    activations autograd saves, the in-place ReLUs and residual sums;
 *    views add no bytes.
 *  - segment C (head, loss, head backward): up to 64 bytes more, the
 *    loss's scalars (a few fp32 and int64 values) the generator leaves
 *    out.
 *  - backward segments: at least the generator's and at most 64 bytes
 *    plus slack more: the fused convolution_backward holds the data and
 *    filter gradients and its workspace at once, where the generator's
 *    bwd_data and bwd_filter hold one gradient each (its weight
 *    gradient and workspace at most), and torch 1.13 sums two gradient
 *    contributions out of place (an `add` into a new buffer, measured
 *    without the recorder too: README), where the personality sums in
 *    place (at most the sum's bytes).
 * The live bytes are the executor's: the same walk gives each
 * workload's simulated framework peak on arena, asserted here. */
static void test_live_curve(void **state)
{
	(void)state;
	static const struct {
		const char *net;
		uint32_t convs; /* torchvision: ResNet-50 1 + 16 * 3 + 4
				   downsamples; VGG-16 13; DenseNet-121 1 +
				   58 * 2 + 3 transitions */
	} nets[] = {{"resnet50", 53}, {"vgg16", 13}, {"densenet121", 120}};
	struct hw_profile hw;
	hw_test_profile(&hw, 64 * GMS_GIB);
	static struct segs sr, sg;
	for (size_t i = 0; i < sizeof nets / sizeof *nets; i++) {
		struct wl_workload *g, *r = recorded_and_generated(
					       nets[i].net, &g);
		live_segments(r, &sr);
		live_segments(g, &sg);
		assert_int_equal(sr.peak, framework_peak(r, &hw));
		assert_int_equal(sg.peak, framework_peak(g, &hw));
		uint32_t c = nets[i].convs;
		assert_int_equal(sr.n, 2 * c + 1);
		assert_int_equal(sg.n, 2 * c + 1);
		double worst = 0;
		for (uint32_t k = 0; k < sr.n; k++) {
			uint64_t most = k < c	 ? sg.live[k]
					: k == c ? sg.live[k] + 64
						 : sg.live[k] + 64 +
							   sr.slack[k];
			if (sr.live[k] < sg.live[k] || sr.live[k] > most)
				fail_msg("%s segment %u: recorded %llu, "
					 "generated %llu, allowed up to %llu",
					 nets[i].net, k,
					 (unsigned long long)sr.live[k],
					 (unsigned long long)sg.live[k],
					 (unsigned long long)most);
			double d = ((double)sr.live[k] - (double)sg.live[k]) /
				   (double)sg.live[k];
			if (d > worst)
				worst = d;
		}
		print_message("%s: %u segments, recorded at most %+.2f%% "
			      "(peak %llu against %llu)\n",
			      nets[i].net, sr.n, 100 * worst,
			      (unsigned long long)sr.peak,
			      (unsigned long long)sg.peak);
		wl_free(r);
		wl_free(g);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_step_costs),
		cmocka_unit_test(test_zero_dimension),
		cmocka_unit_test(test_time_kept_or_dropped),
		cmocka_unit_test(test_bad_shapes),
		cmocka_unit_test(test_batch_marks),
		cmocka_unit_test(test_rules_one_reading),
		cmocka_unit_test(test_type_memo),
		cmocka_unit_test(test_unknown_counted),
		cmocka_unit_test(test_against_generators),
		cmocka_unit_test(test_live_curve),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
