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

/* The shipped recordings against the generators' pytorch personality at
 * the same batch (2, 224x224, SGD with momentum as the recorder's
 * default): parameters, optimizer state and parameter gradients must be
 * equal byte for byte (the same tensors: torchvision's layers, fp32), and
 * the peak under framework (arena: plain sums) within 1%. The 1% is the
 * sum of what the generator leaves out (README "Recorded PyTorch steps"):
 * the scalars of the loss (a few bytes), the batch norms' empty reserve
 * tensors, and the one-op convolution_backward, which holds its data and
 * filter gradients and the larger pass's workspace at once where the
 * generator runs the two passes as two ops: measured 0.39% on ResNet-50,
 * 0.10% on DenseNet-121, 24 bytes on VGG-16. */
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
		char path[128];
		snprintf(path, sizeof path, REC "%s-2-recorded.log",
			 nets[i].net);
		gms_err err = {{0}};
		struct wl_workload *r = wl_load_dtr(path, &err);
		if (!r)
			fail_msg("%s", err.msg);
		assert_int_equal(r->batch, 2);
		struct wl_workload *g = gen_build_ok(
			nets[i].net, 2, 224, WL_FW_PYTORCH, WL_OPTIM_MOMENTUM);
		/* the recording's parameters include the batch norms'
		 * buffers, which the generator leaves out: running mean and
		 * variance (fp32, 8 bytes a channel) and num_batches_tracked
		 * (one int64 each) */
		assert_int_equal(wl_bytes_of_kind(r, WL_PARAM),
				 wl_bytes_of_kind(g, WL_PARAM) +
					 8 * nets[i].channels +
					 8 * nets[i].bns);
		static const enum wl_kind same[] = {WL_OPT_STATE,
						    WL_PARAM_GRAD};
		for (size_t k = 0; k < 2; k++)
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_step_costs),
		cmocka_unit_test(test_time_kept_or_dropped),
		cmocka_unit_test(test_bad_shapes),
		cmocka_unit_test(test_unknown_counted),
		cmocka_unit_test(test_against_generators),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
