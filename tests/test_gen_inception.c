/*
 * test_gen_inception.c - the GoogLeNet, Inception-v3 and Inception-v4
 * generators: parameter counts, forward multiply-accumulates, shapes at
 * chosen points, the smallest input, and a run under `framework`.
 *
 * Expected figures are published ones or worked out by hand (the
 * derivations are in workloads/gen_inception.c):
 *   googlenet     6,624,904 parameters (torchvision GoogLeNet_Weights
 *                 num_params); 1.498 GMACs at 224 (torchvision "GFLOPS"
 *                 1.50, counted as MACs; 1,498,376,192 by hand)
 *   inception_v3  27,161,264 parameters with AuxLogits (torchvision
 *                 Inception_V3_Weights num_params); 5.713 GMACs at 299
 *                 (torchvision, without the aux head; the head adds
 *                 5,683,200 by hand, 0.1%)
 *   inception_v4  42,679,816 parameters: timm inception_v4 (= Cadene
 *                 pretrained-models.pytorch InceptionV4 with 1000 classes),
 *                 by hand: stem 28,768 + Mixed_3a 55,488 + Mixed_4a
 *                 189,312 + Mixed_5a 332,160 + 4 x 317,632 (Inception_A)
 *                 + 2,306,112 (Reduction_A) + 7 x 2,936,256 (Inception_B)
 *                 + 2,747,392 (Reduction_B) + 3 x 4,553,088 (Inception_C)
 *                 + 1,537,000 (last_linear); timm's model card: "Params
 *                 (M) 42.7", "GMACs 12.3" at 299
 * MACs are measured as the sum over forward conv and matmul ops of
 * flops / 2 / batch (gen.c: conv and linear FLOPs = 2 * MACs, plus the
 * bias adds of the linear layers, 0.0002% here).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../policies/pol.h"
#include "../sim/ex.h"
#include "../sim/hw.h"
#include "../sim/stats.h"
#include "../workloads/wl_gen.h"
#include "wlkit.h"

/* ---- helpers -------------------------------------------------------- */

static const struct wl_gen *gen(const char *name)
{
	const struct wl_gen *g = wl_gen_find(name);
	if (!g)
		fail_msg("no generator '%s'", name);
	return g;
}

static struct wl_workload *build(const char *name, int64_t batch,
				 int64_t size)
{
	return gen_build_ok(name, batch, size, WL_FW_TF_GRAPH, WL_OPTIM_MOMENTUM);
}

/* Bytes of an fp32 tensor of batch x c x h x w. */
static uint64_t f32(int64_t batch, int64_t c, int64_t h, int64_t w)
{
	return (uint64_t)(batch * c * h * w * 4);
}

static bool reads(const struct wl_tensor *t, const struct wl_op *o)
{
	for (uint32_t i = 0; i < t->n_readers; i++)
		if (t->readers[i] == o->id)
			return true;
	return false;
}

/* ---- the registry -------------------------------------------------- */

static void test_registry(void **state)
{
	(void)state;
	/* default sizes from the references; minimums by hand (see
	 * gen_inception.c "Smallest input") */
	const struct wl_gen *g = gen("googlenet");
	assert_int_equal(g->default_size, 224);
	assert_int_equal(g->min_size, 15);
	assert_string_equal(g->size_name, "image");
	g = gen("inception_v3");
	assert_int_equal(g->default_size, 299);
	assert_int_equal(g->min_size, 299);
	g = gen("inception_v4");
	assert_int_equal(g->default_size, 299);
	assert_int_equal(g->min_size, 75);
}

/* ---- googlenet ----------------------------------------------------- */

static void test_googlenet(void **state)
{
	(void)state;
	struct wl_workload *w = build("googlenet", 2, 0);
	assert_int_equal(param_count(w, NULL), 6624904);
	assert_within(fwd_macs(w), 1.498e9, 0.02);
	/* the "5x5" branch is 3x3 (torchvision): 16 -> 32 channels */
	assert_int_equal(tensor(w, "inception3a.branch3.1.conv.weight")->bytes,
			 16 * 32 * 3 * 3 * 4);
	/* ceil-mode pools: 224 -> 112 -> 56 -> 28 -> 14 -> 7 */
	assert_int_equal(tensor(w, "inception3b.cat.out")->bytes,
			 f32(2, 480, 28, 28));
	assert_int_equal(tensor(w, "inception4e.cat.out")->bytes,
			 f32(2, 832, 14, 14));
	assert_int_equal(tensor(w, "inception5b.cat.out")->bytes,
			 f32(2, 1024, 7, 7));
	/* no auxiliary heads, one loss */
	assert_int_equal(wl_op_id(w, "aux1.conv.conv"), WL_NONE);
	assert_int_equal(op(w, "loss")->type, OT_LOSS);
	wl_free(w);
}

/* At 15 every ceil-mode pool still has one window: 15 -> 8 -> 4 -> 2 ->
 * 1 (maxpool3 on 2x2) -> 1 (maxpool4 on 1x1). */
static void test_googlenet_smallest(void **state)
{
	(void)state;
	struct wl_workload *w = build("googlenet", 1, 15);
	assert_int_equal(tensor(w, "inception3b.cat.out")->bytes,
			 f32(1, 480, 2, 2));
	assert_int_equal(tensor(w, "inception5b.cat.out")->bytes,
			 f32(1, 1024, 1, 1));
	wl_free(w);
}

/* ---- inception_v3 -------------------------------------------------- */

static void test_inception_v3(void **state)
{
	(void)state;
	struct wl_workload *w = build("inception_v3", 2, 0);
	assert_int_equal(param_count(w, NULL), 27161264);
	/* without the aux head's weights: torchvision's 23.8 M */
	uint64_t aux = (768 * 128 + 2 * 128) + (128 * 768 * 25 + 2 * 768) +
		       (768 * 1000 + 1000);
	assert_int_equal(param_count(w, NULL) - aux, 23834568);
	assert_within(fwd_macs(w), 5.713e9, 0.02);
	/* 299 -> 149 -> 147 -> 73 -> 71 -> 35 -> 17 -> 8 */
	assert_int_equal(tensor(w, "Mixed_5d.cat.out")->bytes,
			 f32(2, 288, 35, 35));
	const struct wl_tensor *m6e = tensor(w, "Mixed_6e.cat.out");
	assert_int_equal(m6e->bytes, f32(2, 768, 17, 17));
	assert_int_equal(tensor(w, "Mixed_7c.cat.out")->bytes,
			 f32(2, 2048, 8, 8));
	/* the aux head: 17 -> 5 (avg 5x5/3) -> 1 (conv1 5x5) */
	assert_int_equal(tensor(w, "AuxLogits.conv1.conv.out")->bytes,
			 f32(2, 768, 1, 1));
	/* it reads Mixed_6e's output, as Mixed_7a does, and its logits feed
	 * a second loss */
	assert_true(reads(m6e, op(w, "AuxLogits.avgpool")));
	assert_true(reads(m6e, op(w, "Mixed_7a.branch3x3_1.conv")));
	assert_int_equal(op(w, "AuxLogits.loss")->type, OT_LOSS);
	assert_int_equal(op(w, "loss")->type, OT_LOSS);
	assert_true(reads(tensor(w, "AuxLogits.fc.out"),
			  op(w, "AuxLogits.loss")));
	/* so Mixed_6e's output gradient sums four contributions: Mixed_7a's
	 * three branches and the aux head (accumulations 2, 3 and 4) */
	const struct wl_op *acc = op(w, "Mixed_6e.cat.out.grad_acc4");
	assert_int_equal(acc->type, OT_ADD);
	assert_int_equal(acc->phase, WL_BWD);
	assert_int_equal(wl_op_id(w, "Mixed_6e.cat.out.grad_acc5"), WL_NONE);
	/* InceptionE's inner concatenation of the 1x3 and 3x1 convs */
	assert_int_equal(tensor(w, "Mixed_7b.branch3x3.cat.out")->bytes,
			 f32(2, 768, 8, 8));
	/* InceptionC's 1x7 kernel */
	assert_int_equal(
		tensor(w, "Mixed_6b.branch7x7_2.conv.weight")->bytes,
		128 * 128 * 1 * 7 * 4);
	wl_free(w);
}

/* ---- inception_v4 -------------------------------------------------- */

static void test_inception_v4(void **state)
{
	(void)state;
	struct wl_workload *w = build("inception_v4", 2, 0);
	/* timm inception_v4 / Cadene InceptionV4(num_classes=1000) */
	assert_int_equal(param_count(w, NULL), 42679816);
	assert_within((double)param_count(w, NULL), 42.7e6, 0.01);
	assert_within(fwd_macs(w), 12.3e9, 0.02);
	/* 299 -> 149 -> 147 -> 147 -> 73 -> 71 -> 35 -> 17 -> 8 */
	assert_int_equal(tensor(w, "features.3.cat.out")->bytes,
			 f32(2, 160, 73, 73));
	assert_int_equal(tensor(w, "features.5.cat.out")->bytes,
			 f32(2, 384, 35, 35));
	assert_int_equal(tensor(w, "features.10.cat.out")->bytes,
			 f32(2, 1024, 17, 17));
	assert_int_equal(tensor(w, "features.21.cat.out")->bytes,
			 f32(2, 1536, 8, 8));
	assert_int_equal(tensor(w, "features.21.branch2.cat.out")->bytes,
			 f32(2, 512, 8, 8));
	wl_free(w);
}

/* 75 -> 37 -> 35 -> 35 -> 17 -> 15 -> 7 -> 3 -> 1 */
static void test_inception_v4_smallest(void **state)
{
	(void)state;
	struct wl_workload *w = build("inception_v4", 1, 75);
	assert_int_equal(tensor(w, "features.21.cat.out")->bytes,
			 f32(1, 1536, 1, 1));
	wl_free(w);
}

/* ---- sizes below the minimum --------------------------------------- */

static void test_too_small(void **state)
{
	(void)state;
	static const struct {
		const char *name;
		int64_t min;
		const char *min_text;
	} nets[] = {{"googlenet", 15, "15"},
		    {"inception_v3", 299, "299"},
		    {"inception_v4", 75, "75"}};
	for (size_t i = 0; i < sizeof nets / sizeof *nets; i++) {
		const struct wl_gen *g = gen(nets[i].name);
		struct wl_gen_args a = {.batch = 2, .size = nets[i].min - 1};
		gms_err err = {{0}};
		/* through the registry */
		assert_null(wl_gen_build(g, &a, &err));
		assert_non_null(strstr(err.msg, nets[i].name));
		assert_non_null(strstr(err.msg, nets[i].min_text));
		/* and the build function itself, called directly */
		err.msg[0] = '\0';
		assert_null(g->build(&a, &err));
		assert_non_null(strstr(err.msg, "too small"));
		assert_non_null(strstr(err.msg, nets[i].min_text));
		/* size 0 is the default, which builds */
		a.size = 0;
		a.batch = 1;
		struct wl_workload *w = g->build(&a, &err);
		if (!w)
			fail_msg("%s: %s", nets[i].name, err.msg);
		wl_free(w);
	}
}

/* ---- eager preset and Adam ------------------------------------------ */

static void test_presets_and_adam(void **state)
{
	(void)state;
	struct wl_gen_args a = {.batch = 1, .size = 0,
				.framework = WL_FW_TF_EAGER,
				.optimizer = WL_OPTIM_ADAM};
	gms_err err = {{0}};
	struct wl_workload *w = wl_gen_build(gen("googlenet"), &a, &err);
	if (!w)
		fail_msg("%s", err.msg);
	/* Adam: two moments per parameter; no op in place in eager mode */
	assert_int_equal(wl_bytes_of_kind(w, WL_OPT_STATE),
			 2 * wl_bytes_of_kind(w, WL_PARAM));
	assert_int_equal(wl_bytes_of_kind(w, WL_PARAM_GRAD),
			 wl_bytes_of_kind(w, WL_PARAM));
	for (uint32_t i = 0; i < w->n_ops; i++)
		assert_false(w->ops[i].inplace);
	wl_free(w);
}

/* ---- a run under `framework` on a V100-16GB ------------------------- */

static void test_run_framework(void **state)
{
	(void)state;
	static const char *const nets[] = {"googlenet", "inception_v3",
					   "inception_v4"};
	struct hw_profile hw;
	gms_err err = {{0}};
	if (hw_load(&hw, "V100-16GB", &err) < 0)
		fail_msg("%s", err.msg);
	for (size_t i = 0; i < sizeof nets / sizeof *nets; i++) {
		struct wl_workload *w = build(nets[i], 2, 0);
		struct pol pol;
		if (pol_create(&pol, "framework", NULL, NULL, NULL, 0, &err) <
		    0)
			fail_msg("%s", err.msg);
		struct ex_cfg cfg = {.hw = &hw, .wl = w, .pol = &pol,
				     .allocator = "caching", .iterations = 2,
				     .warmup = 1};
		struct st_run st;
		if (ex_run(&cfg, &st, &err) < 0)
			fail_msg("%s: ex_run: %s", nets[i], err.msg);
		assert_false(st.failed);
		assert_false(st.oom.hit);
		assert_int_equal(st.n_iter, 2);
		assert_true(st.steady.time > 0);
		/* every parameter, its gradient and its momentum fit at once */
		assert_true(st.mem.peak_allocated >=
			    3 * wl_bytes_of_kind(w, WL_PARAM));
		st_run_free(&st);
		pol_destroy(&pol);
		wl_free(w);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_registry),
		cmocka_unit_test(test_googlenet),
		cmocka_unit_test(test_googlenet_smallest),
		cmocka_unit_test(test_inception_v3),
		cmocka_unit_test(test_inception_v4),
		cmocka_unit_test(test_inception_v4_smallest),
		cmocka_unit_test(test_too_small),
		cmocka_unit_test(test_presets_and_adam),
		cmocka_unit_test(test_run_framework),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
