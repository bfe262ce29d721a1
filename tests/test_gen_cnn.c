/*
 * test_gen_cnn.c - the layer builder (workloads/gen.h) and the CNN
 * generators: AlexNet, VGG-16/116/191, the vDNN++ Table III network,
 * ResNet-34/50/101/152.
 *
 * Every expected figure is either published (torchvision's parameter
 * counts and MACs) or worked out by hand in the comments; none is copied
 * from the program's output.
 */
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../policies/pol.h"
#include "../sim/ex.h"
#include "../sim/hw.h"
#include "../workloads/gen.h"
#include "../workloads/wl_gen.h"
#include "testkit.h"
#include "wlkit.h"

/* ---- helpers -------------------------------------------------------- */


static uint64_t count_kind(const struct wl_workload *w, enum wl_kind k)
{
	uint64_t n = 0;
	for (uint32_t i = 0; i < w->n_tensors; i++)
		n += w->tensors[i].kind == k;
	return n;
}

/* ---- published and hand-derived totals ----------------------------- */

/*
 * Parameters. torchvision: alexnet 61,100,840; vgg16 138,357,544;
 * resnet34 21,797,672; resnet50 25,557,032; resnet101 44,549,160;
 * resnet152 60,192,808.
 *
 * VGG-116/191 add 20/35 3x3 convolutions (with bias) of the group's
 * width to each group; one added layer per group costs
 *   64:  64*64*9 + 64      =    36,928
 *   128: 128*128*9 + 128   =   147,584
 *   256: 256*256*9 + 256   =   590,080
 *   512: 512*512*9 + 512   = 2,359,808  (twice: groups 4 and 5)
 *   sum                    = 5,494,208
 * vgg116 = 138,357,544 + 20 * 5,494,208 = 248,241,704
 * vgg191 = 138,357,544 + 35 * 5,494,208 = 330,654,824
 *
 * Table III: conv1 3*9*64 + 64 = 1,792; five times 1x1 (64*64 + 64 =
 * 4,160) and 5x5 (64*64*25 + 64 = 102,464): 533,120; conv3 64*3 + 3 =
 * 195; fc 3*2 + 2 = 8; total 535,115.
 */
static void test_param_counts(void **state)
{
	(void)state;
	static const struct {
		const char *name;
		uint64_t params;
	} want[] = {
		{"alexnet", 61100840},	 {"vgg16", 138357544},
		{"vgg116", 248241704},	 {"vgg191", 330654824},
		{"vdnnpp_table3", 535115}, {"resnet34", 21797672},
		{"resnet50", 25557032},	 {"resnet101", 44549160},
		{"resnet152", 60192808},
	};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		struct wl_workload *w = gen_build_ok(want[i].name, 2, 0,
					      WL_FW_TF_GRAPH, WL_OPTIM_MOMENTUM);
		uint64_t p = wl_bytes_of_kind(w, WL_PARAM) / 4;
		if (p != want[i].params)
			fail_msg("%s: %llu parameters, want %llu",
				 want[i].name, (unsigned long long)p,
				 (unsigned long long)want[i].params);
		/* every parameter gets a gradient of its size and, with SGD,
		 * one momentum buffer of its size */
		assert_int_equal(wl_bytes_of_kind(w, WL_PARAM_GRAD),
				 4 * want[i].params);
		assert_int_equal(wl_bytes_of_kind(w, WL_OPT_STATE),
				 4 * want[i].params);
		wl_free(w);
	}
}

/*
 * Forward MACs per 224x224 image. torchvision: alexnet 0.714 G, vgg16
 * 15.47 G, resnet34 3.664, resnet50 4.089, resnet101 7.801, resnet152
 * 11.514.
 * VGG-116/191: one added layer per group costs, at the group's side,
 *   224^2*64*64*9 = 112^2*128*128*9 = 56^2*256*256*9 = 28^2*512*512*9
 *   = 1,849,688,064, and 14^2*512*512*9 = 462,422,016: 7.861 G a set;
 * vgg116 = 15.47 + 20 * 7.861 = 172.70 G, vgg191 = 15.47 + 35 * 7.861 =
 * 290.61 G.
 * Table III: conv1 224^2*27*64 = 0.0867 G; CONV_2 5 * 224^2*64*64*(1+25)
 * = 26.718 G; conv3 and fc negligible: 26.80 G.
 * Within 2% (the sums here also count half a FLOP per bias add).
 */
static void test_macs(void **state)
{
	(void)state;
	static const struct {
		const char *name;
		double gmacs;
	} want[] = {
		{"alexnet", 0.714},	 {"vgg16", 15.47},  {"vgg116", 172.70},
		{"vgg191", 290.61},	 {"vdnnpp_table3", 26.80},
		{"resnet34", 3.664},	 {"resnet50", 4.089},
		{"resnet101", 7.801},	 {"resnet152", 11.514},
	};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		struct wl_workload *w = gen_build_ok(want[i].name, 1, 224,
					      WL_FW_TF_GRAPH, WL_OPTIM_MOMENTUM);
		double m = fwd_macs(w) / 1e9;
		if (fabs(m - want[i].gmacs) > 0.02 * want[i].gmacs)
			fail_msg("%s: %.4f G MACs, want %.3f +- 2%%",
				 want[i].name, m, want[i].gmacs);
		wl_free(w);
	}
}

/* ---- a tiny network built with gen.h directly ---------------------- */

/*
 * batch 2: input 3x8x8 -> conv1 (4 channels, 3x3, stride 1, pad 1, no
 * bias) 4x8x8 -> bn1 -> relu1 -> pool1 (max 2x2/2) 4x4x4 -> flatten (64)
 * -> fc (10, bias) -> loss.
 */
static struct wl_workload *tiny(enum wl_framework preset, enum wl_optim optim)
{
	struct wl_gen_args a = {2, 8, preset, optim};
	gms_err err = {{0}};
	struct gen *g = gen_new("tiny", &a, &err);
	assert_non_null(g);
	struct gen_tensor x = gen_input(g, "input", 3, 8, 8);
	x = gen_conv_sq(g, "conv1", x, 4, 3, 1, 1, false);
	assert_int_equal(x.c, 4);
	assert_int_equal(x.h, 8);
	assert_int_equal(x.w, 8);
	x = gen_batchnorm(g, "bn1", x);
	x = gen_relu(g, "relu1", x);
	x = gen_maxpool(g, "pool1", x, 2, 2, 0, false);
	assert_int_equal(x.h, 4);
	x = gen_flatten(g, x);
	assert_int_equal(x.c, 64);
	x = gen_linear(g, "fc", x, 10, true);
	struct wl_workload *w = gen_finish(g, x, &err);
	if (!w)
		fail_msg("%s", err.msg);
	return w;
}

/* Derived names are written by gen.c's own formatter (name_cat, issue
 * 18), which must cut at the same place vsnprintf did: NAME_MAX_LEN is
 * 512 with the terminator, so a layer name of 507 characters gives the
 * 511-character "NAME.out", and one of 508 a 512-character name that is
 * refused with its length and its first 40 characters. */
static void test_name_limit(void **state)
{
	(void)state;
	struct wl_gen_args a = {2, 8, WL_FW_TF_GRAPH, WL_OPTIM_SGD};
	gms_err err = {{0}};
	char name[509], want[520];
	memset(name, 'a', 507);
	name[0] = 'r';
	name[507] = '\0';
	snprintf(want, sizeof want, "%s.out", name);
	assert_int_equal(strlen(want), 511);
	struct gen *g = gen_new("names", &a, &err);
	assert_non_null(g);
	struct gen_tensor x = gen_input(g, "input", 1, 2, 2);
	x = gen_relu(g, name, x);
	assert_true(gen_ok(g));
	assert_int_equal(
		wl_tensor_id(gen_workload(g), want) != WL_NONE, 1);
	name[507] = 'b';
	name[508] = '\0';
	gen_relu(g, name, x);
	assert_false(gen_ok(g));
	assert_string_equal(gen_errmsg(g),
			    "name too long (512 characters) starting "
			    "'raaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'");
	assert_null(gen_finish(g, x, &err));
}

/* gen_fmt writes what snprintf would (issue 18: the generators' names
 * no longer go through snprintf). By hand: "%s.conv%d" of "layer1.0" and
 * 2 is the 14 characters "layer1.0.conv2"; %d of -5 is "-5"; %lld of
 * LLONG_MIN is -2^63 = "-9223372036854775808" (20 characters); %u of
 * UINT_MAX (2^32 - 1) is "4294967295"; %c and %% one character each. A
 * buffer of 8 keeps the first 7 of "features.denseblock12" and returns
 * its full length, 21; a width (%5d) is left to vsnprintf: "    7". */
static void test_gen_fmt(void **state)
{
	(void)state;
	char b[64];
	assert_int_equal(gen_fmt(b, sizeof b, "%s.conv%d", "layer1.0", 2), 14);
	assert_string_equal(b, "layer1.0.conv2");
	assert_int_equal(gen_fmt(b, sizeof b, "x%dy", -5), 4);
	assert_string_equal(b, "x-5y");
	assert_int_equal(gen_fmt(b, sizeof b, "%lld", LLONG_MIN), 20);
	assert_string_equal(b, "-9223372036854775808");
	assert_int_equal(gen_fmt(b, sizeof b, "%u|%c%%", UINT_MAX, 'a'), 13);
	assert_string_equal(b, "4294967295|a%");
	assert_int_equal(gen_fmt(b, 8, "features.denseblock%d", 12), 21);
	assert_string_equal(b, "feature");
	assert_int_equal(gen_fmt(b, sizeof b, "[%5d]", 7), 7);
	assert_string_equal(b, "[    7]");
	assert_int_equal(gen_fmt(b, sizeof b, "%s", ""), 0);
	assert_string_equal(b, "");
}

/* Every field of two workloads is the same. */
static void assert_same_workload(const struct wl_workload *a,
				 const struct wl_workload *b)
{
	assert_string_equal(a->name, b->name);
	assert_int_equal(a->batch, b->batch);
	assert_int_equal(a->n_tensors, b->n_tensors);
	assert_int_equal(a->n_ops, b->n_ops);
	assert_int_equal(a->n_layers, b->n_layers);
	assert_true((a->framework == NULL) == (b->framework == NULL));
	if (a->framework)
		assert_string_equal(a->framework, b->framework);
	for (uint32_t i = 0; i < a->n_layers; i++)
		assert_string_equal(a->layers[i], b->layers[i]);
	for (uint32_t i = 0; i < a->n_tensors; i++) {
		const struct wl_tensor *x = &a->tensors[i], *y = &b->tensors[i];
		assert_string_equal(x->name, y->name);
		assert_int_equal(x->id, y->id);
		assert_int_equal(x->bytes, y->bytes);
		assert_int_equal(x->kind, y->kind);
		assert_int_equal(x->producer, y->producer);
		assert_int_equal(x->n_readers, y->n_readers);
		assert_memory_equal(x->readers, y->readers,
				    x->n_readers * sizeof *x->readers);
		assert_int_equal(x->last_fwd_reader, y->last_fwd_reader);
		assert_int_equal(x->release_after, y->release_after);
		assert_int_equal(x->held, y->held);
	}
	for (uint32_t i = 0; i < a->n_ops; i++) {
		const struct wl_op *x = &a->ops[i], *y = &b->ops[i];
		assert_string_equal(x->name, y->name);
		assert_int_equal(x->type, y->type);
		assert_int_equal(x->phase, y->phase);
		assert_int_equal(x->layer, y->layer);
		assert_int_equal(x->n_in, y->n_in);
		assert_int_equal(x->n_out, y->n_out);
		assert_memory_equal(x->in, y->in, x->n_in * sizeof *x->in);
		assert_memory_equal(x->out, y->out, x->n_out * sizeof *x->out);
		assert_memory_equal(&x->flops, &y->flops, sizeof x->flops);
		assert_memory_equal(&x->bytes, &y->bytes, sizeof x->bytes);
		assert_int_equal(x->time, y->time);
		assert_int_equal(x->workspace, y->workspace);
		assert_int_equal(x->recomputable, y->recomputable);
		assert_int_equal(x->inplace, y->inplace);
		assert_int_equal(x->n_algos, y->n_algos);
		for (uint32_t k = 0; k < x->n_algos; k++) {
			assert_string_equal(x->algos[k].name,
					    y->algos[k].name);
			assert_int_equal(x->algos[k].workspace,
					 y->algos[k].workspace);
			assert_memory_equal(&x->algos[k].time_scale,
					    &y->algos[k].time_scale,
					    sizeof(double));
			assert_int_equal(x->algos[k].time, y->algos[k].time);
		}
		assert_true((x->conv == NULL) == (y->conv == NULL));
		if (x->conv)
			assert_memory_equal(x->conv, y->conv, sizeof *x->conv);
	}
}

/* Do a and b have the same tensors (names, kinds) and ops (names,
 * layers) in the same order? */
static bool same_names(const struct wl_workload *a,
		       const struct wl_workload *b)
{
	if (a->n_tensors != b->n_tensors || a->n_ops != b->n_ops)
		return false;
	for (uint32_t i = 0; i < a->n_tensors; i++)
		if (a->tensors[i].kind != b->tensors[i].kind ||
		    strcmp(a->tensors[i].name, b->tensors[i].name) != 0)
			return false;
	for (uint32_t i = 0; i < a->n_ops; i++)
		if (strcmp(a->ops[i].name, b->ops[i].name) != 0 ||
		    strcmp(a->layers[a->ops[i].layer],
			   b->layers[b->ops[i].layer]) != 0)
			return false;
	return true;
}

/* A generator given room to reserve (wl_gen_args.reserve: the counts of
 * its build at batch 1, as exp_run's workload cache passes them, issue
 * 18) builds at batch 3 what it builds without: every field of every
 * tensor and op, for every generator under every framework. Given that
 * build as its template (reserve.like) too, it follows it to the end
 * (its names are the template's strings) and still builds the same,
 * also once the template is freed (it holds it); a build at batch 5
 * following that one follows the first. */
static void test_reserve_same_workload(void **state)
{
	(void)state;
	for (const struct wl_gen *g = wl_gens; g->name; g++)
		for (int fw = 0; fw < WL_FW_COUNT; fw++) {
			gms_err err = {{0}};
			struct wl_gen_args a = {1, 0, (enum wl_framework)fw,
						WL_OPTIM_MOMENTUM};
			struct wl_workload *one = wl_gen_build(g, &a, &err);
			if (!one)
				fail_msg("%s: %s", g->name, err.msg);
			a.batch = 3;
			struct wl_workload *plain = wl_gen_build(g, &a, &err);
			a.reserve = (struct wl_reserve){
				one->n_tensors, one->n_ops, one->n_layers};
			struct wl_workload *room = wl_gen_build(g, &a, &err);
			a.reserve.like = one;
			struct wl_workload *tpl = wl_gen_build(g, &a, &err);
			if (!plain || !room || !tpl)
				fail_msg("%s: %s", g->name, err.msg);
			assert_same_workload(plain, room);
			/* it leaves only where the network differs by
			 * batch (Caffe's per-layer workspace blob exists
			 * only where its algorithm needs one: googlenet) */
			if (wl_follows_template(tpl) !=
			    same_names(one, plain))
				fail_msg("%s/%s: followed %d", g->name,
					 wl_framework_names[fw],
					 wl_follows_template(tpl));
			assert_ptr_equal(tpl->tensors[0].name,
					 one->tensors[0].name);
			const char *name0 = one->ops[0].name;
			wl_free(one);
			assert_same_workload(plain, tpl);
			a.batch = 5;
			a.reserve.like = tpl;
			struct wl_workload *five = wl_gen_build(g, &a, &err);
			if (!five)
				fail_msg("%s: %s", g->name, err.msg);
			assert_ptr_equal(five->ops[0].name, name0);
			/* followed, unless batch 5's network differs (the
			 * workspace blobs of the algorithms Caffe picks) */
			if (wl_follows_template(five) != same_names(tpl, five))
				fail_msg("%s/%s: batch 5 followed %d",
					 g->name, wl_framework_names[fw],
					 wl_follows_template(five));
			wl_free(plain);
			wl_free(room);
			wl_free(tpl);
			wl_free(five);
		}
}

static void test_tiny_sizes(void **state)
{
	(void)state;
	struct wl_workload *w = tiny(WL_FW_TF_GRAPH, WL_OPTIM_MOMENTUM);
	/* elements x 4 bytes, batch 2 */
	assert_int_equal(tensor(w, "input")->bytes, 2 * 3 * 8 * 8 * 4);
	assert_int_equal(tensor(w, "input")->kind, WL_INPUT);
	assert_int_equal(tensor(w, "conv1.out")->bytes, 2 * 4 * 8 * 8 * 4);
	assert_int_equal(tensor(w, "conv1.out")->kind, WL_ACT);
	assert_int_equal(tensor(w, "conv1.weight")->bytes, 4 * 3 * 3 * 3 * 4);
	assert_int_equal(tensor(w, "conv1.weight")->kind, WL_PARAM);
	assert_int_equal(wl_tensor_id(w, "conv1.bias"), WL_NONE);
	assert_int_equal(tensor(w, "bn1.weight")->bytes, 4 * 4);
	assert_int_equal(tensor(w, "bn1.bias")->bytes, 4 * 4);
	assert_int_equal(tensor(w, "bn1.saved")->bytes, 2 * 4 * 4); /* 2*C*4 */
	assert_int_equal(tensor(w, "bn1.saved")->kind, WL_ACT);
	assert_int_equal(tensor(w, "bn1.out")->bytes, 2048);
	assert_int_equal(tensor(w, "relu1.out")->bytes, 2048);
	assert_int_equal(tensor(w, "pool1.out")->bytes, 2 * 4 * 4 * 4 * 4);
	assert_int_equal(tensor(w, "fc.weight")->bytes, 10 * 64 * 4);
	assert_int_equal(tensor(w, "fc.bias")->bytes, 10 * 4);
	assert_int_equal(tensor(w, "fc.out")->bytes, 2 * 10 * 4);
	assert_int_equal(tensor(w, "loss.probs")->bytes, 2 * 10 * 4);
	assert_int_equal(tensor(w, "loss.labels")->bytes, 2 * 8); /* int64 */
	assert_int_equal(tensor(w, "loss.labels")->kind, WL_INPUT);
	assert_int_equal(tensor(w, "relu1.out.grad")->kind, WL_ACT_GRAD);
	assert_int_equal(tensor(w, "relu1.out.grad")->bytes, 2048);
	assert_int_equal(tensor(w, "fc.weight.grad")->kind, WL_PARAM_GRAD);
	assert_int_equal(tensor(w, "fc.weight.grad")->bytes, 2560);
	/* parameters: 108 + 4 + 4 + 640 + 10 = 766 */
	assert_int_equal(wl_bytes_of_kind(w, WL_PARAM), 766 * 4);
	wl_free(w);
}

static void test_tiny_backward_reads(void **state)
{
	(void)state;
	struct wl_workload *w = tiny(WL_FW_TF_GRAPH, WL_OPTIM_MOMENTUM);
	assert_op_io(w, "conv1", "input conv1.weight -> conv1.out");
	assert_op_io(w, "bn1", "conv1.out bn1.weight bn1.bias -> bn1.out bn1.saved");
	assert_op_io(w, "relu1", "bn1.out -> relu1.out");
	assert_op_io(w, "pool1", "relu1.out -> pool1.out");
	/* flatten is a view: fc reads the pool's tensor */
	assert_op_io(w, "fc", "pool1.out fc.weight fc.bias -> fc.out");
	assert_op_io(w, "loss", "fc.out loss.labels -> loss.probs loss.out");
	/* backward, in reverse order */
	assert_op_io(w, "loss.bwd", "loss.probs loss.labels -> fc.out.grad");
	assert_op_io(w, "fc.bwd_data", "fc.weight fc.out.grad -> pool1.out.grad");
	assert_op_io(w, "fc.bwd_weight",
		  "pool1.out fc.out.grad -> fc.weight.grad fc.bias.grad");
	/* max pool backward reads x, y and dy */
	assert_op_io(w, "pool1.bwd",
		  "relu1.out pool1.out pool1.out.grad -> relu1.out.grad");
	/* relu backward reads its OUTPUT (and dy) */
	assert_op_io(w, "relu1.bwd", "relu1.out.grad relu1.out -> bn1.out.grad");
	/* bn backward: input, saved statistics, gamma, dy */
	assert_op_io(w, "bn1.bwd", "conv1.out bn1.saved bn1.weight bn1.out.grad "
				"-> conv1.out.grad bn1.weight.grad "
				"bn1.bias.grad");
	/* the first conv has no bwd_data; bwd_filter reads X and dY */
	assert_int_equal(wl_op_id(w, "conv1.bwd_data"), WL_NONE);
	assert_op_io(w, "conv1.bwd_filter",
		  "input conv1.out.grad -> conv1.weight.grad");
	assert_int_equal(op(w, "conv1.bwd_filter")->type, OT_CONV_BWD_FILTER);
	assert_int_equal(op(w, "fc.bwd_data")->type, OT_MATMUL_BWD);
	assert_int_equal(op(w, "fc.bwd_weight")->type, OT_MATMUL_BWD);
	assert_int_equal(op(w, "bn1.bwd")->type, OT_BATCHNORM_BWD);
	assert_int_equal(op(w, "relu1.bwd")->type, OT_RELU_BWD);
	assert_int_equal(op(w, "pool1.bwd")->type, OT_POOL_BWD);
	/* backward ops belong to their forward op's layer */
	assert_int_equal(op(w, "conv1.bwd_filter")->layer, op(w, "conv1")->layer);
	assert_int_equal(op(w, "fc.bwd_data")->layer, op(w, "fc")->layer);

	/* phases in order, recomputable only forward */
	enum wl_phase last = WL_FWD;
	for (uint32_t i = 0; i < w->n_ops; i++) {
		const struct wl_op *op = &w->ops[i];
		assert_true(op->phase >= last);
		last = op->phase;
		assert_int_equal(op->recomputable, op->phase == WL_FWD);
	}
	/* FLOPs: conv1 2 * (2*4*8*8 outputs * 3*3*3) = 27,648 both ways;
	 * fc 2 * 2*64*10 + 2*10 (bias) = 2,580; bwd_data 2,560 */
	assert_true(op(w, "conv1")->flops == 27648.0);
	assert_true(op(w, "conv1.bwd_filter")->flops == 27648.0);
	assert_true(op(w, "fc")->flops == 2580.0);
	assert_true(op(w, "fc.bwd_data")->flops == 2560.0);
	/* bytes: conv1 reads 1,536 + 432, writes 2,048 */
	assert_true(op(w, "conv1")->bytes == 4016.0);
	wl_free(w);
}

static void test_tiny_optimizer(void **state)
{
	(void)state;
	/* five parameter tensors: conv1.weight, bn1.weight, bn1.bias,
	 * fc.weight, fc.bias */
	struct wl_workload *w = tiny(WL_FW_TF_GRAPH, WL_OPTIM_MOMENTUM);
	assert_int_equal(count_kind(w, WL_OPT_STATE), 5);
	assert_int_equal(wl_bytes_of_kind(w, WL_OPT_STATE), 766 * 4);
	assert_op_io(w, "fc.weight.update",
		  "fc.weight fc.weight.grad fc.weight.momentum -> ");
	const struct wl_op *u = op(w, "fc.weight.update");
	assert_int_equal(u->type, OT_UPDATE);
	assert_int_equal(u->phase, WL_UPD);
	assert_int_equal(u->n_out, 0);
	uint32_t n_upd = 0;
	for (uint32_t i = 0; i < w->n_ops; i++)
		n_upd += w->ops[i].type == OT_UPDATE;
	assert_int_equal(n_upd, 5);
	wl_free(w);

	w = tiny(WL_FW_TF_GRAPH, WL_OPTIM_ADAM);
	assert_int_equal(count_kind(w, WL_OPT_STATE), 10);
	assert_int_equal(wl_bytes_of_kind(w, WL_OPT_STATE), 2 * 766 * 4);
	assert_op_io(w, "conv1.weight.update",
		  "conv1.weight conv1.weight.grad conv1.weight.adam_m "
		  "conv1.weight.adam_v -> ");
	wl_free(w);
}

static void test_tiny_presets(void **state)
{
	(void)state;
	struct wl_workload *w = tiny(WL_FW_TF_GRAPH, WL_OPTIM_MOMENTUM);
	assert_true(op(w, "relu1")->inplace);
	assert_true(op(w, "relu1.bwd")->inplace); /* dx in dy's storage */
	assert_false(op(w, "conv1")->inplace);
	assert_false(op(w, "bn1")->inplace);
	assert_false(op(w, "pool1.bwd")->inplace);
	wl_free(w);
	w = tiny(WL_FW_TF_EAGER, WL_OPTIM_MOMENTUM);
	for (uint32_t i = 0; i < w->n_ops; i++)
		if (w->ops[i].inplace)
			fail_msg("eager: op '%s' in place", w->ops[i].name);
	wl_free(w);
}

/*
 * Algorithms of conv1 (batch 2, 3 -> 4 channels, 3x3 stride 1, pad 1,
 * 8x8 out), cuDNN's forward algorithms as workloads/conv_algo.c models
 * them (the model changed from the placeholder's "winograd" with its
 * F(2x2) workspace of 15,104 bytes and time 16/36: Winograd's transforms
 * are now counted, and at 3 and 4 channels they cost more than they
 * save):
 *   IMPLICIT_GEMM 0 bytes, 1.0; IMPLICIT_PRECOMP_GEMM 4 * 3*3*3 = 108
 *     bytes, 1.0; GEMM column matrix 3*3*3 * 8*8 * 2 * 4 = 13,824, 1.0;
 *   WINOGRAD (fused F(2x2,3x3)): transformed filter 4 * 16 * 3 * 4 = 768
 *     bytes; arithmetic per 2x2 tile and image: 16*3*4 = 192 products +
 *     2 * 4^3 * 3 = 384 data + (2*16 + 4*4) * 4 = 192 output = 768,
 *     16 tiles * 2 images -> 24,576, plus the filter transform
 *     (4*9 + 16*3) * 12 = 1,008: 25,584 MACs over direct 2*4*3*64*9 =
 *     13,824 -> 1.85069...;
 *   WINOGRAD_NONFUSED (F(4x4,3x3), alpha 6): 2*2 = 4 tiles, batch padded
 *     to 16: 4 * 36 * (4 * 16 * (3 + 4) + 12) = 66,240 bytes.
 * Fastest first: the three GEMMs (ties in cuDNN's enum order), WINOGRAD,
 * WINOGRAD_NONFUSED.
 */
static void test_tiny_algos(void **state)
{
	(void)state;
	struct wl_workload *w = tiny(WL_FW_TF_GRAPH, WL_OPTIM_MOMENTUM);
	const struct wl_op *c1 = op(w, "conv1");
	assert_int_equal(c1->n_algos, 5);
	const char *order[] = {"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM",
			       "GEMM", "WINOGRAD", "WINOGRAD_NONFUSED"};
	const uint64_t ws[] = {0, 108, 13824, 768, 66240};
	for (int i = 0; i < 5; i++) {
		assert_string_equal(c1->algos[i].name, order[i]);
		assert_int_equal(c1->algos[i].workspace, ws[i]);
	}
	assert_true(fabs(c1->algos[3].time_scale - 25584.0 / 13824.0) <
		    1e-12);
	assert_non_null(c1->conv);
	assert_int_equal(c1->conv->n, 2);
	assert_int_equal(c1->conv->k, 4);
	assert_int_equal(c1->conv->ho, 8);
	/* non-conv ops have none */
	assert_int_equal(op(w, "fc")->n_algos, 0);
	wl_free(w);

	/* every conv op of every network has >= 2 choices, sorted, one
	 * without workspace; the 3x3 stride-1 forward convolutions on planes
	 * of 8x8 and more (at input 64: layer1 and layer2, 64 and 128
	 * channels) have a faster one with workspace (vDNN's p) */
	w = gen_build_ok("resnet50", 4, 64, WL_FW_TF_GRAPH, WL_OPTIM_MOMENTUM);
	for (uint32_t i = 0; i < w->n_ops; i++) {
		const struct wl_op *o = &w->ops[i];
		bool conv = o->type == OT_CONV || o->type == OT_CONV_BWD_DATA ||
			    o->type == OT_CONV_BWD_FILTER;
		assert_int_equal(conv, o->n_algos > 0);
		if (!conv)
			continue;
		assert_true(o->n_algos >= 2);
		bool zero = false;
		for (uint32_t k = 0; k < o->n_algos; k++) {
			zero = zero || o->algos[k].workspace == 0;
			if (k)
				assert_true(o->algos[k - 1].time_scale <=
					    o->algos[k].time_scale);
		}
		assert_true(zero);
		if (o->type == OT_CONV && o->conv->r == 3 &&
		    o->conv->stride == 1 && o->conv->ho >= 8) {
			assert_true(o->algos[0].workspace > 0);
			assert_true(o->algos[0].time_scale < 1.0);
		}
	}
	wl_free(w);
}

/*
 * Pool output sizes, torch's rule: out = floor_or_ceil((in + 2p - k)/s)
 * + 1, and with ceil a last window starting in the right padding is
 * dropped.
 *   max 3/2 on 112: (112 - 3)/2 = 54.5: floor 54 + 1 = 55; ceil 55 + 1
 *     = 56 (GoogLeNet's ceil_mode)
 *   max 2/2 pad 1 on 5: (5 + 2 - 2)/2 = 2.5: floor -> 3; ceil -> 4, but
 *     the 4th window starts at 3*2 = 6 >= 5 + 1: dropped -> 3
 *   avg 3/1 pad 1 on 112: 112
 *   adaptive 5 -> 3: windows [0,2) [1,4) [3,5), 2 + 3 + 2 = 7 a row:
 *     FLOPs 7 * 7 per channel: 2 channels, batch 1 -> 98
 */
static void test_pool_shapes(void **state)
{
	(void)state;
	struct wl_gen_args a = {1, 112, WL_FW_TF_GRAPH, WL_OPTIM_MOMENTUM};
	gms_err err = {{0}};
	struct gen *g = gen_new("pools", &a, &err);
	struct gen_tensor x = gen_input(g, "input", 2, 112, 112);
	assert_int_equal(gen_maxpool(g, "p1", x, 3, 2, 0, false).h, 55);
	assert_int_equal(gen_maxpool(g, "p2", x, 3, 2, 0, true).h, 56);
	struct gen_tensor y = gen_input(g, "in5", 2, 5, 5);
	assert_int_equal(gen_maxpool(g, "p3", y, 2, 2, 1, true).h, 3);
	assert_int_equal(gen_maxpool(g, "p4", y, 2, 2, 1, false).h, 3);
	assert_int_equal(gen_avgpool(g, "p5", x, 3, 1, 1, false).h, 112);
	struct gen_tensor z = gen_adaptive_avgpool(g, "ad", y, 3, 3);
	assert_int_equal(z.h, 3);
	assert_int_equal(z.w, 3);
	assert_true(gen_ok(g));
	const struct wl_workload *w = gen_workload(g);
	assert_true(op(w, "ad")->flops == 98.0);
	/* max 3/2 (no ceil) on 112: 55*55 outputs * 9 * 2 channels */
	assert_true(op(w, "p1")->flops == 55.0 * 55.0 * 9.0 * 2.0);
	gen_free(g);
}

/*
 * FFT for a 5x5 stride-1 convolution: AlexNet conv2 at 224, batch 1:
 * input 64x27x27, pad 2 -> Hf = Wf = 31, 31 * 16 = 496 bins. Workspace
 * (cuDNN 9.14's rule, conv_algo.c): transforms of N = 32, 16 * 32 * 17
 * = 8,704 bytes a plane, max(64*192 + 1*64, 1*192) = 12,352 planes, plus
 * the filter 4 * 25 * 12,288 = 1,228,800: 108,740,608 bytes (the rule
 * before issue 29: 8 * 496 * 12,544 = 49,774,592). Arithmetic
 * (unchanged), planes 1*64 + 64*192 + 1*192 = 12,544: products 8 * 496 * 64 * 192 =
 * 48,758,784; transforms 2.5 * 961 * log2(961) * 12,544 = 298,228,... ;
 * direct 2 * 27*27*192*64*25 = 447,897,600: time_scale about 0.774
 * (FFT_TILING: one 32x32 tile of 28x28 outputs, (8 * 544 * 12,288 +
 * 2.5 * 1024 * 10 * 12,544) / 447,897,600 = 0.836, slower).
 * conv1 (11x11, stride 4) gets no FFT: the three GEMMs only; conv3
 * (3x3/1, 192 -> 384) gets the fused WINOGRAD first.
 */
static void test_fft_rule(void **state)
{
	(void)state;
	struct wl_workload *w = gen_build_ok("alexnet", 1, 224, WL_FW_TF_GRAPH,
				      WL_OPTIM_MOMENTUM);
	const struct wl_op *o = op(w, "conv2");
	assert_string_equal(o->algos[0].name, "FFT");
	assert_int_equal(o->algos[0].workspace, 108740608);
	double tr = 2.5 * 961.0 * log2(961.0) * 12544.0;
	double want = (48758784.0 + tr) / 447897600.0;
	assert_true(fabs(o->algos[0].time_scale - want) < 1e-9);
	assert_true(want > 0.76 && want < 0.79);
	o = op(w, "conv1");
	assert_int_equal(o->n_algos, 3);
	assert_string_equal(o->algos[0].name, "IMPLICIT_GEMM");
	assert_string_equal(op(w, "conv3")->algos[0].name, "WINOGRAD");
	wl_free(w);
}

/*
 * Fan-out and residual: input 2x4x4 -> c1 (conv 3x3/1, pad 1, 2 ch) ->
 * r1 (relu); c2 (conv on r1) ; s = add(c2, r1) -> r2 (relu) -> fc.
 * r1 is read by c2 and by the add, so its gradient has two
 * contributions: the add passes dy (r2's gradient, r2.bwd's output
 * s.out.grad) itself; c2.bwd_data writes r1.out.grad; an OT_ADD op sums
 * them (in place in graph mode, not in eager).
 */
static struct wl_workload *residual(enum wl_framework preset)
{
	struct wl_gen_args a = {1, 4, preset, WL_OPTIM_MOMENTUM};
	gms_err err = {{0}};
	struct gen *g = gen_new("res", &a, &err);
	assert_non_null(g);
	struct gen_tensor x = gen_input(g, "input", 2, 4, 4);
	struct gen_tensor r1 = gen_relu(
		g, "r1", gen_conv_sq(g, "c1", x, 2, 3, 1, 1, false));
	struct gen_tensor c2 = gen_conv_sq(g, "c2", r1, 2, 3, 1, 1, false);
	struct gen_tensor s = gen_relu(g, "r2", gen_add(g, "s", c2, r1));
	struct gen_tensor y = gen_linear(g, "fc", gen_flatten(g, s), 3, false);
	struct wl_workload *w = gen_finish(g, y, &err);
	if (!w)
		fail_msg("%s", err.msg);
	return w;
}

static void test_residual_accumulation(void **state)
{
	(void)state;
	struct wl_workload *w = residual(WL_FW_TF_GRAPH);
	assert_op_io(w, "r2.bwd", "r2.out.grad r2.out -> s.out.grad");
	/* add backward: no kernel, dy goes to both branches */
	assert_int_equal(wl_op_id(w, "s.bwd"), WL_NONE);
	assert_op_io(w, "c2.bwd_data", "c2.weight s.out.grad -> r1.out.grad");
	assert_op_io(w, "c2.bwd_filter", "r1.out s.out.grad -> c2.weight.grad");
	assert_op_io(w, "r1.out.grad_acc2",
		  "r1.out.grad s.out.grad -> r1.out.grad.sum2");
	const struct wl_op *acc = op(w, "r1.out.grad_acc2");
	assert_int_equal(acc->type, OT_ADD);
	assert_int_equal(acc->phase, WL_BWD);
	assert_true(acc->inplace);
	assert_int_equal(acc->layer, op(w, "c2")->layer);
	assert_op_io(w, "r1.bwd", "r1.out.grad.sum2 r1.out -> c1.out.grad");
	assert_int_equal(wl_op_id(w, "c1.bwd_data"), WL_NONE);
	wl_free(w);
	w = residual(WL_FW_TF_EAGER);
	assert_false(op(w, "r1.out.grad_acc2")->inplace);
	wl_free(w);
}

/*
 * Concat: x 3x2x2, a = conv1x1(x) 3 ch, b = conv1x1(x) 5 ch, y =
 * concat(a, b) 8 ch, batch 1. Backward: no kernel; both convs' backward
 * ops read y's gradient (each input's gradient is a view, a channel
 * slice of it). The op byte counts use the slice: a.bwd_filter reads x
 * (3*2*2*4 = 48 B) and a's slice of dy (3*2*2*4 = 48 B) and writes dW
 * (3*3*1*1*4 = 36 B): 132 B.
 */
static void test_concat_views(void **state)
{
	(void)state;
	struct wl_gen_args a = {1, 2, WL_FW_TF_GRAPH, WL_OPTIM_MOMENTUM};
	gms_err err = {{0}};
	struct gen *g = gen_new("cat", &a, &err);
	struct gen_tensor x = gen_input(g, "input", 3, 2, 2);
	struct gen_tensor xs[2] = {
		gen_conv_sq(g, "a", x, 3, 1, 1, 0, false),
		gen_conv_sq(g, "b", x, 5, 1, 1, 0, false)};
	struct gen_tensor y = gen_concat(g, "cat", xs, 2);
	assert_int_equal(y.c, 8);
	y = gen_linear(g, "fc", gen_flatten(g, y), 2, false);
	struct wl_workload *w = gen_finish(g, y, &err);
	if (!w)
		fail_msg("%s", err.msg);
	assert_op_io(w, "cat", "a.out b.out -> cat.out");
	assert_int_equal(op(w, "cat")->type, OT_CONCAT);
	assert_int_equal(tensor(w, "cat.out")->bytes, 8 * 2 * 2 * 4);
	assert_op_io(w, "a.bwd_filter", "input cat.out.grad -> a.weight.grad");
	assert_op_io(w, "b.bwd_filter", "input cat.out.grad -> b.weight.grad");
	/* input 48 + dy slice 48 + dW 36 */
	assert_true(op(w, "a.bwd_filter")->bytes == 132.0);
	wl_free(w);
}

/*
 * The BERT pieces, small: ids (seq 4) -> embedding (vocab 10, dim 8) ->
 * layernorm -> q, k, v (linear 8 -> 8) -> scores (2 heads) -> mask ->
 * softmax -> dropout -> context -> add with the layernorm output ->
 * gelu; the [CLS] row sliced -> tanh pooler; the MLM-like head is a
 * linear tied to the embedding table (8 -> 10) with a second loss.
 */
static void test_transformer_pieces(void **state)
{
	(void)state;
	struct wl_gen_args a = {2, 4, WL_FW_TF_GRAPH, WL_OPTIM_ADAM};
	gms_err err = {{0}};
	struct gen *g = gen_new("tx", &a, &err);
	struct gen_tensor ids = gen_input_ids(g, "ids", 4);
	struct gen_tensor mask = gen_input_ids(g, "mask", 4);
	struct gen_tensor e = gen_embedding(g, "emb", ids, 10, 8);
	struct gen_tensor h = gen_layernorm(g, "ln", e);
	struct gen_tensor q = gen_linear(g, "q", h, 8, true);
	struct gen_tensor k = gen_linear(g, "k", h, 8, true);
	struct gen_tensor v = gen_linear(g, "v", h, 8, true);
	struct gen_tensor s = gen_attn_scores(g, "scores", q, k, 2);
	assert_int_equal(s.c, 4);
	assert_int_equal(s.h, 4);
	assert_int_equal(s.w, 2);
	s = gen_mask_add(g, "masked", s, mask);
	s = gen_softmax(g, "probs", s);
	s = gen_dropout(g, "adrop", s, 0.1);
	struct gen_tensor c = gen_attn_context(g, "ctx", s, v);
	assert_int_equal(c.c, 8);
	assert_int_equal(c.h, 4);
	c = gen_gelu(g, "gelu", gen_add(g, "res", c, h));
	struct gen_tensor cls = gen_slice(g, "cls", c, 0, 1);
	struct gen_tensor pooled = gen_tanh(g, "pool",
					    gen_linear(g, "pooler", cls, 8,
						       true));
	gen_loss(g, "nsp", gen_linear(g, "nsp_fc", pooled, 2, true));
	uint32_t tab = gen_param_find(g, "emb.weight");
	assert_int_not_equal(tab, GEN_NONE);
	struct gen_tensor logits = gen_linear_tied(g, "mlm", c, 10, tab,
						   false);
	struct wl_workload *w = gen_finish(g, logits, &err);
	if (!w)
		fail_msg("%s", err.msg);
	/* sizes: ids int64 2*4*8; scores 2 images * 2 heads * 4 * 4 * 4 B;
	 * LN saved 2 floats a row: 2*4*2*4; dropout mask 1 byte an el. */
	assert_int_equal(tensor(w, "ids")->bytes, 64);
	assert_int_equal(tensor(w, "scores.out")->bytes, 2 * 2 * 4 * 4 * 4);
	assert_int_equal(tensor(w, "ln.saved")->bytes, 2 * 4 * 2 * 4);
	assert_int_equal(tensor(w, "adrop.mask")->bytes, 2 * 2 * 4 * 4);
	assert_int_equal(tensor(w, "emb.weight")->bytes, 10 * 8 * 4);
	/* FLOPs: scores 2 * batch 2 * 4 * 4 * 8 = 512 */
	assert_true(op(w, "scores")->flops == 512.0);
	assert_int_equal(op(w, "adrop")->recomputable, false);
	assert_op_io(w, "adrop", "probs.out -> adrop.out adrop.mask");
	assert_op_io(w, "adrop.bwd", "adrop.out.grad adrop.mask -> probs.out.grad");
	/* softmax backward reads its output; its input is the masked
	 * scores, whose mask add passes dy through to the scores */
	assert_op_io(w, "probs.bwd",
		  "probs.out.grad probs.out -> masked.out.grad");
	/* the context's dy is the residual add's dy, passed through */
	assert_op_io(w, "ctx.bwd_p", "res.out.grad v.out -> adrop.out.grad");
	assert_op_io(w, "ctx.bwd_v", "res.out.grad adrop.out -> v.out.grad");
	assert_op_io(w, "scores.bwd_q", "masked.out.grad k.out -> q.out.grad");
	assert_op_io(w, "scores.bwd_k", "masked.out.grad q.out -> k.out.grad");
	assert_op_io(w, "pool.bwd", "pool.out.grad pool.out -> pooler.out.grad");
	/* the pooler reads the [CLS] view of gelu.out: its dx is the
	 * view's gradient (1 row: 2*8*4 bytes), named after gelu.out (the
	 * MLM head wrote gelu.out.grad first); the slice's backward writes
	 * a full-size one, summed with the MLM head's */
	assert_op_io(w, "pooler.bwd_data",
		  "pooler.weight pooler.out.grad -> gelu.out.grad.2");
	assert_int_equal(tensor(w, "gelu.out.grad.2")->bytes, 2 * 8 * 4);
	assert_op_io(w, "cls.bwd", "gelu.out.grad.2 -> gelu.out.grad.3");
	assert_int_equal(tensor(w, "gelu.out.grad.3")->bytes,
			 tensor(w, "gelu.out")->bytes);
	assert_op_io(w, "gelu.out.grad_acc2",
		  "gelu.out.grad.3 gelu.out.grad -> gelu.out.grad.sum2");
	/* GELU backward reads x and dy */
	assert_op_io(w, "gelu.bwd",
		  "gelu.out.grad.sum2 res.out -> res.out.grad");
	assert_int_equal(op(w, "gelu.bwd")->type, OT_ELEMWISE);
	assert_op_io(w, "ln.bwd", "emb.out ln.saved ln.weight ln.out.grad.sum4 "
			       "-> emb.out.grad ln.weight.grad ln.bias.grad");
	assert_op_io(w, "emb.bwd_weight", "ids emb.out.grad -> emb.weight.grad.2");
	/* the tied table: two contributions summed before its update */
	assert_op_io(w, "emb.weight.grad_acc2",
		  "emb.weight.grad.2 emb.weight.grad -> emb.weight.grad.sum2");
	assert_op_io(w, "emb.weight.update",
		  "emb.weight emb.weight.grad.sum2 emb.weight.adam_m "
		  "emb.weight.adam_v -> ");
	assert_int_equal(wl_tensor_id(w, "mlm.weight"), WL_NONE);
	/* the mask needs no gradient */
	assert_int_equal(wl_tensor_id(w, "mask.grad"), WL_NONE);
	wl_free(w);
}

/*
 * In-place ops at work: the tiny net with a 1x1 conv1 (whose fastest
 * algorithm, implicit GEMM, needs no workspace: nothing but tensors
 * counts), batch 2, under the framework policy on the test profile with
 * the arena allocator (plain sums). Live bytes besides the persistent
 * ones (parameters and their momentum):
 *   forward, relu1: input 1,536 + conv1.out 2,048 + bn1.saved 32 +
 *     bn1.out 2,048, plus relu1.out 2,048 in eager (graph: in bn1.out's
 *     block) -> 7,712 eager, 5,664 graph; later forward ops add less
 *     than they free.
 *   backward, pool1.bwd: input, conv1.out, saved, relu1.out 2,048,
 *     pool1.out 512, pool1.out.grad 512, relu1.out.grad 2,048, fc's
 *     gradients 2,600 -> 11,336 (both presets);
 *     (graph);
 *   relu1.bwd (pool1.out and its gradient freed): input, conv1.out,
 *     saved, relu1.out, relu1.out.grad, fc grads = 10,312 (graph: dx
 *     goes in relu1.out.grad's block);
 *   bn1.bwd: input, conv1.out, saved, bn1.out.grad, conv1.out.grad,
 *     bn grads 32, fc grads -> 10,344.
 * tf-eager: the tape holds each forward tensor until its producer's
 * gradient has run, so bn1.out (2,048) lives until bn1.bwd and pool1.out
 * until pool1.bwd, and nothing is in place:
 *   pool1.bwd: the graph set 11,336 + bn1.out 2,048 = 13,384;
 *   relu1.bwd: input, conv1.out, saved, bn1.out, relu1.out,
 *     relu1.out.grad, fc grads, and bn1.out.grad 2,048 in a block of its
 *     own = 14,408 (the peak);
 *   bn1.bwd: input, conv1.out, saved, bn1.out, bn1.out.grad,
 *     conv1.out.grad, bn grads, fc grads = 12,392.
 * Persistent: parameters 12 + 4 + 4 + 640 + 10 = 670 floats and as much
 * momentum, 5,360 bytes: peaks 16,696 (graph) and 19,768 (tf-eager).
 */
static uint64_t tiny_peak(enum wl_framework preset)
{
	struct hw_profile hw;
	hw_test_profile(&hw, 1 << 20);
	struct wl_workload *w = tiny1x1(preset, WL_OPTIM_MOMENTUM);
	assert_int_equal(w->ops[0].algos[0].workspace, 0);
	uint64_t peak = framework_peak(w, &hw);
	wl_free(w);
	return peak;
}

static void test_tiny_inplace_peak(void **state)
{
	(void)state;
	uint64_t graph = tiny_peak(WL_FW_TF_GRAPH);
	uint64_t eager = tiny_peak(WL_FW_TF_EAGER);
	assert_int_equal(graph, 11336 + 5360);
	assert_int_equal(eager, 14408 + 5360);
}

/* ---- batch scaling, errors ----------------------------------------- */

/*
 * Activations are per-sample sizes times the batch, except batchnorm's
 * saved statistics (2*C floats) and the scalar loss, which do not
 * depend on it: so act(b) = fixed + b * per_sample exactly, gradients
 * and inputs are proportional, parameters and optimizer state constant.
 */
static void test_batch_scaling(void **state)
{
	(void)state;
	struct wl_workload *w1 = gen_build_ok("resnet50", 1, 64, WL_FW_TF_GRAPH,
				       WL_OPTIM_MOMENTUM);
	struct wl_workload *w2 = gen_build_ok("resnet50", 2, 64, WL_FW_TF_GRAPH,
				       WL_OPTIM_MOMENTUM);
	struct wl_workload *w4 = gen_build_ok("resnet50", 4, 64, WL_FW_TF_GRAPH,
				       WL_OPTIM_MOMENTUM);
	uint64_t a1 = wl_bytes_of_kind(w1, WL_ACT);
	uint64_t a2 = wl_bytes_of_kind(w2, WL_ACT);
	uint64_t a4 = wl_bytes_of_kind(w4, WL_ACT);
	assert_int_equal(a4 - a2, 2 * (a2 - a1));
	assert_true(a2 > a1);
	assert_int_equal(wl_bytes_of_kind(w4, WL_ACT_GRAD),
			 4 * wl_bytes_of_kind(w1, WL_ACT_GRAD));
	assert_int_equal(wl_bytes_of_kind(w4, WL_INPUT),
			 4 * wl_bytes_of_kind(w1, WL_INPUT));
	/* input 3*64*64*4 + labels 8 per sample */
	assert_int_equal(wl_bytes_of_kind(w1, WL_INPUT), 3 * 64 * 64 * 4 + 8);
	assert_int_equal(wl_bytes_of_kind(w4, WL_PARAM),
			 wl_bytes_of_kind(w1, WL_PARAM));
	assert_int_equal(wl_bytes_of_kind(w4, WL_OPT_STATE),
			 wl_bytes_of_kind(w1, WL_OPT_STATE));
	assert_int_equal(w4->n_ops, w1->n_ops);
	wl_free(w1);
	wl_free(w2);
	wl_free(w4);
}

/*
 * resnet-N (issue 36), He et al. 2016's depth N = 3B + 2 with the blocks
 * past ResNet-50's 16 in conv4_x: (3, 4, B - 10, 3).
 * A conv4_x block (torchvision: 1024 -> 256 -> 256 -> 1024 without
 * biases, two batch-norm parameters a channel): 1024 * 256 + 256 * 256 *
 * 9 + 256 * 1024 = 1,114,112 weights + 2 * (256 + 256 + 1024) = 3,072,
 * 1,117,184 parameters; (101 - 50) / 3 = 17 of them are the published
 * difference of ResNet-101 and ResNet-50, 44,549,160 - 25,557,032 =
 * 18,992,128. Forward MACs at 14x14: 1,114,112 * 196 = 218,365,952 an
 * image a block: ResNet-50's 4.089 G + 17 * 0.21837 = 7.801 G, the
 * published ResNet-101.
 *   resnet-1001: B = 333, 317 blocks more than ResNet-50:
 *     25,557,032 + 317 * 1,117,184 = 379,704,360 parameters;
 *     4.089 + 317 * 0.218366 = 73.311 G MACs.
 *   resnet-2498 (the depth of the authors' ResNet2500, B = 832):
 *     25,557,032 + 816 * 1,117,184 = 937,179,176 parameters.
 * Under caffe KaimingHe's conv1 has a bias: 64 more.
 */
static void test_resnet_deep(void **state)
{
	(void)state;
	static const struct {
		const char *name;
		enum wl_framework fw;
		uint64_t params;
		double gmacs;
	} want[] = {
		{"resnet-50", WL_FW_TF_GRAPH, 25557032, 4.089},
		{"resnet-101", WL_FW_TF_GRAPH, 44549160, 7.801},
		{"resnet-1001", WL_FW_TF_GRAPH, 379704360, 73.311},
		{"resnet-1001", WL_FW_CAFFE, 379704424, 73.311},
		{"resnet-2498", WL_FW_CAFFE, 937179240, 0},
	};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		struct wl_workload *w = gen_build_ok(want[i].name, 1, 224,
						     want[i].fw,
						     WL_OPTIM_MOMENTUM);
		uint64_t p = wl_bytes_of_kind(w, WL_PARAM) / 4;
		if (p != want[i].params)
			fail_msg("%s: %llu parameters, want %llu",
				 want[i].name, (unsigned long long)p,
				 (unsigned long long)want[i].params);
		double m = fwd_macs(w) / 1e9;
		if (want[i].gmacs > 0 &&
		    fabs(m - want[i].gmacs) > 0.02 * want[i].gmacs)
			fail_msg("%s: %.4f G MACs, want %.3f +- 2%%",
				 want[i].name, m, want[i].gmacs);
		wl_free(w);
	}
	/* resnet-50 and resnet-101 are resnet50 and resnet101, op for op;
	 * and each conv4_x block adds the same ops: ops(N) - ops(50) grows
	 * with B - 16 (17 blocks for 101, 317 for 1001). */
	uint32_t ops[3];
	const char *same[2][2] = {{"resnet-50", "resnet50"},
				  {"resnet-101", "resnet101"}};
	for (int k = 0; k < 2; k++) {
		struct wl_workload *x = gen_build_ok(same[k][0], 2, 224,
						     WL_FW_CAFFE,
						     WL_OPTIM_MOMENTUM);
		struct wl_workload *y = gen_build_ok(same[k][1], 2, 224,
						     WL_FW_CAFFE,
						     WL_OPTIM_MOMENTUM);
		assert_int_equal(x->n_ops, y->n_ops);
		assert_int_equal(x->n_tensors, y->n_tensors);
		ops[k] = x->n_ops;
		wl_free(x);
		wl_free(y);
	}
	struct wl_workload *w = gen_build_ok("resnet-1001", 2, 224,
					     WL_FW_CAFFE, WL_OPTIM_MOMENTUM);
	ops[2] = w->n_ops;
	wl_free(w);
	assert_int_equal((uint64_t)(ops[2] - ops[0]) * 17,
			 (uint64_t)(ops[1] - ops[0]) * 317);
	/* the names: a depth not 3B + 2, or below 35, is refused naming the
	 * rule; a leading zero or no number is no resnet-N at all */
	gms_err err = {{0}};
	const struct wl_gen *g = wl_gen_find("resnet-1000");
	assert_non_null(g);
	assert_int_equal(wl_gen_name_depth(g, "resnet-1000"), 1000);
	struct wl_gen_args a = {.batch = 1, .depth = 1000};
	assert_null(wl_gen_build(g, &a, &err));
	assert_has(err.msg, "resnet-1000: the depth must be 3B + 2");
	a.depth = 32;
	assert_null(wl_gen_build(g, &a, &err));
	assert_has(err.msg, "at least 35");
	/* "resnet-N" itself, without a depth, is resnet-50 */
	a.depth = 0;
	w = wl_gen_build(wl_gen_find("resnet-N"), &a, &err);
	assert_non_null(w);
	assert_string_equal(w->name, "resnet-50");
	wl_free(w);
	assert_null(wl_gen_find("resnet-050"));
	assert_null(wl_gen_find("resnet-"));
	assert_null(wl_gen_find("resnet-5x"));
	assert_int_equal(wl_gen_name_depth(wl_gen_find("resnet50"),
					   "resnet50"), 0);
	/* a depth given to a generator that takes none */
	a.depth = 50;
	assert_null(wl_gen_build(wl_gen_find("resnet50"), &a, &err));
	assert_has(err.msg, "resnet50: takes no depth");
}

static void test_errors(void **state)
{
	(void)state;
	gms_err err = {{0}};
	struct wl_gen_args a = {4, 62, WL_FW_TF_GRAPH, WL_OPTIM_MOMENTUM};
	const struct wl_gen *alex = wl_gen_find("alexnet");
	assert_non_null(alex);
	/* AlexNet needs 63 (derived in gen_alexnet_vgg.c) */
	assert_null(wl_gen_build(alex, &a, &err));
	assert_has(err.msg, "alexnet");
	assert_has(err.msg, "too small");
	assert_has(err.msg, "63");
	a.size = 63;
	struct wl_workload *w = wl_gen_build(alex, &a, &err);
	assert_non_null(w);
	wl_free(w);
	/* the builder itself reports a layer that does not fit, naming it:
	 * at 40, conv1 gives 9, pool1 4, pool2 1, and pool5 gets a 1x1
	 * input for its 3x3 window */
	a.size = 40;
	err.msg[0] = 0;
	assert_null(alex->build(&a, &err));
	assert_has(err.msg, "pool5");
	assert_has(err.msg, "too small");
	/* VGG: 32 */
	a.size = 31;
	assert_null(wl_gen_build(wl_gen_find("vgg16"), &a, &err));
	assert_has(err.msg, "too small");
	a.size = -5;
	assert_null(wl_gen_build(wl_gen_find("resnet50"), &a, &err));
	assert_has(err.msg, "too small");
	a.size = 0;
	a.batch = 0;
	assert_null(wl_gen_build(alex, &a, &err));
	assert_has(err.msg, "batch");
	assert_null(wl_gen_find("resnet51"));

	/* sticky errors in the builder: duplicate name, bad shapes */
	struct wl_gen_args b = {1, 8, WL_FW_TF_GRAPH, WL_OPTIM_MOMENTUM};
	struct gen *g = gen_new("bad", &b, &err);
	struct gen_tensor x = gen_input(g, "input", 3, 8, 8);
	struct gen_tensor y = gen_conv_sq(g, "c", x, 4, 3, 1, 1, false);
	struct gen_tensor z = gen_conv_sq(g, "c", y, 4, 3, 1, 1, false);
	assert_int_equal(z.v, GEN_NONE);
	assert_false(gen_ok(g));
	assert_has(gen_errmsg(g), "'c.out' is defined twice");
	z = gen_relu(g, "r", y); /* ignored after an error */
	assert_int_equal(z.v, GEN_NONE);
	assert_null(gen_finish(g, z, &err));
	assert_has(err.msg, "'c.out' is defined twice");

	g = gen_new("bad2", &b, &err);
	x = gen_input(g, "input", 3, 8, 8);
	y = gen_conv_sq(g, "c", x, 4, 9, 1, 0, false); /* 9x9 on 8x8 */
	assert_null(gen_finish(g, y, &err));
	assert_has(err.msg, "c: input 8x8");

	g = gen_new("bad3", &b, &err);
	x = gen_input(g, "input", 3, 8, 8);
	y = gen_conv_sq(g, "c", x, 4, 3, 2, 1, false);
	assert_null(gen_finish(g, gen_add(g, "s", x, y), &err));
	assert_has(err.msg, "s: shapes differ");

	g = gen_new("noloss", &b, &err);
	x = gen_input(g, "input", 3, 8, 8);
	assert_null(gen_finish(g, gen_none(), &err));
	assert_has(err.msg, "no loss");

	b.batch = 0;
	assert_null(gen_new("b0", &b, &err));
	assert_has(err.msg, "batch");
}

/* The name tables and the generator table. */
static void test_tables(void **state)
{
	(void)state;
	assert_string_equal(wl_framework_names[WL_FW_TF_GRAPH], "tf-graph");
	assert_string_equal(wl_framework_names[WL_FW_TF_EAGER], "tf-eager");
	assert_string_equal(wl_framework_names[WL_FW_PYTORCH], "pytorch");
	assert_string_equal(wl_framework_names[WL_FW_CAFFE], "caffe");
	assert_null(wl_framework_names[WL_FW_COUNT]);
	assert_string_equal(wl_optim_names[WL_OPTIM_NONE], "none");
	assert_string_equal(wl_optim_names[WL_OPTIM_SGD], "sgd");
	assert_string_equal(wl_optim_names[WL_OPTIM_MOMENTUM], "momentum");
	assert_string_equal(wl_optim_names[WL_OPTIM_ADAM], "adam");
	assert_null(wl_optim_names[WL_OPTIM_COUNT]);
	const char *mine[] = {"alexnet",  "vgg16",     "vgg116",
			      "vgg191",	  "vdnnpp_table3", "resnet34",
			      "resnet50", "resnet101", "resnet152"};
	for (size_t i = 0; i < sizeof mine / sizeof mine[0]; i++) {
		const struct wl_gen *g = wl_gen_find(mine[i]);
		assert_non_null(g);
		assert_string_equal(g->size_name, "image");
		assert_int_equal(g->default_size, 224);
		assert_non_null(g->desc);
	}
	/* names unique */
	for (const struct wl_gen *g = wl_gens; g->name; g++)
		for (const struct wl_gen *h = g + 1; h->name; h++)
			assert_string_not_equal(g->name, h->name);
}

/* Layer structure of ResNet-50: 53 convolutions (1 stem + 16 blocks * 3
 * + 4 downsamples), 53 batchnorms, 16 residual adds, 49 ReLUs (1 + 16 *
 * 3), one max pool, one average pool, one fc; 52 conv bwd_data (all but
 * the stem), 53 bwd_filter. */
static void test_resnet50_structure(void **state)
{
	(void)state;
	struct wl_workload *w = gen_build_ok("resnet50", 2, 224, WL_FW_TF_GRAPH,
				      WL_OPTIM_MOMENTUM);
	int n[OT_COUNT] = {0};
	for (uint32_t i = 0; i < w->n_ops; i++)
		n[w->ops[i].type]++;
	assert_int_equal(n[OT_CONV], 53);
	assert_int_equal(n[OT_BATCHNORM], 53);
	assert_int_equal(n[OT_BATCHNORM_BWD], 53);
	assert_int_equal(n[OT_RELU], 49);
	assert_int_equal(n[OT_RELU_BWD], 49);
	assert_int_equal(n[OT_POOL], 2);
	assert_int_equal(n[OT_MATMUL], 1);
	assert_int_equal(n[OT_CONV_BWD_DATA], 52);
	assert_int_equal(n[OT_CONV_BWD_FILTER], 53);
	assert_int_equal(n[OT_UPDATE], 53 + 2 * 53 + 2);
	/* the block inputs fan out (first conv and the identity): their
	 * gradients are summed; 16 adds forward, 16 accumulations */
	int acc = 0;
	for (uint32_t i = 0; i < w->n_ops; i++)
		acc += w->ops[i].type == OT_ADD && w->ops[i].phase == WL_BWD;
	assert_int_equal(n[OT_ADD] - acc, 16);
	assert_int_equal(acc, 16);
	/* v1.5: the stride is on the 3x3 of the first block of layer2 */
	assert_int_equal(tensor(w, "layer2.0.conv1.out")->bytes,
			 2u * 128 * 56 * 56 * 4);
	assert_int_equal(tensor(w, "layer2.0.conv2.out")->bytes,
			 2u * 128 * 28 * 28 * 4);
	assert_int_equal(tensor(w, "layer4.2.relu3.out")->bytes,
			 2u * 2048 * 7 * 7 * 4);
	assert_op_io(w, "layer1.0.downsample.0",
		  "maxpool.out layer1.0.downsample.0.weight -> "
		  "layer1.0.downsample.0.out");
	wl_free(w);
}

/* ResNet-50 at batch 32 trains under the framework policy on a V100
 * 16 GB (torch trains it there at 32 comfortably). */
static void run_framework(const char *net, int64_t batch,
			  enum wl_framework preset, struct st_run *st)
{
	struct hw_profile hw;
	gms_err err = {{0}};
	if (hw_load(&hw, "V100-16GB", &err) < 0)
		fail_msg("%s", err.msg);
	struct wl_workload *w = gen_build_ok(net, batch, 0, preset, WL_OPTIM_MOMENTUM);
	struct pol pol;
	if (pol_create(&pol, "framework", NULL, NULL, NULL, 0, &err) < 0)
		fail_msg("%s", err.msg);
	struct ex_cfg cfg = {.hw = &hw, .wl = w, .pol = &pol,
			     .allocator = "bfc", .iterations = 2,
			     .warmup = 1};
	memset(st, 0, sizeof *st);
	if (ex_run(&cfg, st, &err) < 0)
		fail_msg("ex_run: %s", err.msg);
	pol_destroy(&pol);
	wl_free(w);
}

static void test_resnet50_runs(void **state)
{
	(void)state;
	struct st_run st;
	run_framework("resnet50", 32, WL_FW_TF_GRAPH, &st);
	if (st.oom.hit || st.failed)
		fail_msg("resnet50@32: oom %d at %s (%s), failed %d %s",
			 st.oom.hit, st.oom.op, st.oom.tensor, st.failed,
			 st.error);
	assert_int_equal(st.n_iter, 2);
	assert_true(st.steady.time > 0);
	/* the saved activations alone are over 2 GiB at batch 32 (the
	 * stem's conv, bn and relu outputs are 3 * 32*64*112*112*4 B =
	 * 294 MiB), and all of it fits in 16 GB */
	assert_true(st.mem.peak_requested > 2 * GMS_GIB);
	assert_true(st.mem.peak_requested < 16 * GMS_GIB);
	uint64_t peak_graph = st.mem.peak_requested;
	st_run_free(&st);
	/* eager: nothing in place. The peak (the saved activations when
	 * backward starts) is not below graph mode's: in-place ReLU and
	 * gradient reuse only shorten transients here, since a ReLU's input
	 * (a batchnorm output) is not kept for backward either way. */
	run_framework("resnet50", 32, WL_FW_TF_EAGER, &st);
	assert_false(st.oom.hit || st.failed);
	assert_true(st.mem.peak_requested >= peak_graph);
	st_run_free(&st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_param_counts),
		cmocka_unit_test(test_resnet_deep),
		cmocka_unit_test(test_gen_fmt),
		cmocka_unit_test(test_macs),
		cmocka_unit_test(test_tiny_sizes),
		cmocka_unit_test(test_tiny_backward_reads),
		cmocka_unit_test(test_tiny_optimizer),
		cmocka_unit_test(test_tiny_presets),
		cmocka_unit_test(test_tiny_algos),
		cmocka_unit_test(test_tiny_inplace_peak),
		cmocka_unit_test(test_pool_shapes),
		cmocka_unit_test(test_fft_rule),
		cmocka_unit_test(test_residual_accumulation),
		cmocka_unit_test(test_concat_views),
		cmocka_unit_test(test_transformer_pieces),
		cmocka_unit_test(test_batch_scaling),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_tables),
		cmocka_unit_test(test_name_limit),
		cmocka_unit_test(test_reserve_same_workload),
		cmocka_unit_test(test_resnet50_structure),
		cmocka_unit_test(test_resnet50_runs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
