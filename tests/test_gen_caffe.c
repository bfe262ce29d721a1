/*
 * test_gen_caffe.c - the caffe personality: static allocation (every blob,
 * diff, parameter, its history, hidden buffer and convolution workspace
 * held for the run), Caffe's hidden per-layer buffers, Split/Eltwise/
 * Concat diffs, the workspace limit, and Caffe's network definitions.
 *
 * Every expected figure is worked out by hand in the comments (or is a
 * published parameter count); none is copied from the program's output.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../workloads/gen.h"
#include "testkit.h"
#include "wlkit.h"

static const struct wl_gen_args CAFFE2 = {.batch = 2, .size = 8,
					  .framework = WL_FW_CAFFE,
					  .optimizer = WL_OPTIM_MOMENTUM};

static struct wl_workload *finish_ok(struct gen *g, struct gen_tensor x)
{
	gms_err err = {{0}};
	struct wl_workload *w = gen_finish(g, x, &err);
	if (!w)
		fail_msg("%s", err.msg);
	return w;
}

/* The 3-layer net of the tests below, batch 2: input 16x8x8 -> conv1 (16
 * outputs, 3x3, pad 1, bias) -> relu1 (in place) -> fc (10, bias) ->
 * SoftmaxWithLoss. (16 channels: enough for fused Winograd to beat the
 * GEMMs, so the layer holds a workspace.) */
static struct wl_workload *three_layer(enum wl_framework fw)
{
	struct wl_gen_args a = CAFFE2;
	a.framework = fw;
	gms_err err = {{0}};
	struct gen *g = gen_new("three", &a, &err);
	assert_non_null(g);
	struct gen_tensor x = gen_input(g, "data", 16, 8, 8);
	x = gen_conv_sq(g, "conv1", x, 16, 3, 1, 1, true);
	x = gen_relu(g, "relu1", x);
	x = gen_linear(g, "fc", gen_flatten(g, x), 10, true);
	return finish_ok(g, x);
}

/* Issue 13: "Caffe static allocation: peak equals the sum of blob and diff
 * sizes plus parameters, workspace and the limit, computed by hand for a
 * 3-layer net". Batch 2, fp32:
 *   data                 2*16*8*8*4                =  8192
 *   conv1 top            2*16*8*8*4                =  8192 (relu1 in
 *                        place: relu1.out is the same blob)
 *   relu1 top diff       written by fc's backward  =  8192; relu1's
 *                        backward writes conv1's top diff over it (the
 *                        same blob); conv1 has no bottom diff: data
 *                        needs no backward
 *   fc top               2*10*4                    =    80
 *   fc top diff          80: SoftmaxWithLoss's forward takes it as
 *                        scratch, its backward writes dlogits there
 *   loss prob_           2*10*4                    =    80
 *   loss top             one float                 =     4
 *   label                Blob<float> of the batch  =     8
 *   parameters           conv1 16*16*3*3 + 16 = 2320, fc 10*1024 + 10 =
 *                        10250: 12570 floats = 50280 bytes, and as much
 *                        again for their diffs and for SGD's history_
 *                        (momentum): 3 * 50280     = 150840
 *   conv1 workspace      each pass's fastest algorithm within 8 MiB
 *                        (conv_algo.c's model): forward and bwd data
 *                        fused WINOGRAD F(2x2,3x3), 16 tiles of 2x2 per
 *                        image: 2*16*(16*16*16 + 2*64*16 + 48*16) +
 *                        84*256 = 242,688 MACs against direct
 *                        2*16*16*64*9 = 294,912 (0.82), workspace the
 *                        transformed filter 4*16*16*16 = 16384; the
 *                        GEMMs are 1.0, nonfused Winograd and the FFTs
 *                        slower than direct. Bwd filter has no fused
 *                        Winograd: ALGO_0, none. The layer holds
 *                        16384 * group 1 * 3 streams = 49152
 *   total                8192 + 8192 + 8192 + 80 + 80 + 80 + 4 + 8 +
 *                        150840 + 49152 = 224820
 * Nothing is freed, so the peak is reached in iteration 1 and stays.
 * Blocks: 24 tensors (data, conv1.out, relu1.out, fc.out, loss.probs,
 * loss.out, loss.labels, loss.scratch, conv1.workspace, relu1.out.grad,
 * conv1.out.grad, fc.out.grad, 4 parameters, 4 gradients, 4 momentum
 * buffers) of which 3 share a block (relu1.out, conv1.out.grad,
 * fc.out.grad): 21 allocations over the 3 iterations, all in the first. */
static void test_static_peak(void **state)
{
	(void)state;
	struct wl_workload *w = three_layer(WL_FW_CAFFE);
	assert_int_equal(w->n_tensors, 24);
	assert_int_equal(tensor(w, "conv1.workspace")->bytes, 49152);
	assert_int_equal(tensor(w, "conv1.workspace")->kind, WL_WORKSPACE);
	uint64_t sum = 0;
	for (uint32_t t = 0; t < w->n_tensors; t++) {
		sum += w->tensors[t].bytes;
		enum wl_kind k = w->tensors[t].kind;
		assert_true(w->tensors[t].held ||
			    k == WL_PARAM || k == WL_OPT_STATE);
	}
	/* the three shared blocks counted twice: 8192 + 8192 + 80 */
	assert_int_equal(sum, 224820 + 8192 + 8192 + 80);
	struct pol pol;
	make_policy(&pol, "framework", NULL, 0);
	struct st_run st;
	memset(&st, 0, sizeof st);
	assert_int_equal(run_hw(w, &pol, 0, 3, &st, false), 0);
	assert_false(st.oom.hit);
	assert_int_equal(st.mem.peak_allocated, 224820);
	assert_int_equal(st.mem.n_alloc, 21);
	assert_int_equal(st.n_iter, 3);
	st_run_free(&st);
	pol_destroy(&pol);
	wl_free(w);
}

/* The hidden buffers, batch 2, on c (4 x 8x8 after a 3x3 pad-1 conv):
 * BatchNorm temp_ and x_norm_ of the bottom's size (2*256*4 = 2048 each)
 * and, in place, x_norm_'s diff; an in-place Scale's temp_ (2048); max
 * pooling's int32 max_idx_ of the top's size (2*4*4*4 elements * 4 =
 * 512), read with the top diff only; Dropout's uint32 rand_vec_ (2*10
 * elements * 4 = 80); SoftmaxWithLoss's scratch in the bottom diff. */
static struct wl_workload *hidden_net(enum wl_framework fw)
{
	struct wl_gen_args a = CAFFE2;
	a.framework = fw;
	gms_err err = {{0}};
	struct gen *g = gen_new("hidden", &a, &err);
	assert_non_null(g);
	gen_set_layers_inplace(g, true);
	struct gen_tensor x = gen_input(g, "data", 3, 8, 8);
	x = gen_conv_sq(g, "c", x, 4, 3, 1, 1, false);
	x = gen_bn_noaffine(g, "bn", x);
	x = gen_affine(g, "sc", x, true);
	x = gen_relu(g, "r", x);
	x = gen_maxpool(g, "p", x, 2, 2, 0, true);
	x = gen_linear(g, "fc", gen_flatten(g, x), 10, true);
	x = gen_relu(g, "r2", x);
	x = gen_dropout(g, "d", x, 0.5);
	x = gen_linear(g, "fc2", x, 5, true);
	return finish_ok(g, x);
}

static void test_hidden_buffers(void **state)
{
	(void)state;
	struct wl_workload *w = hidden_net(WL_FW_CAFFE);
	assert_op_io(w, "bn", "c.out -> bn.out bn.saved bn.temp bn.x_norm");
	assert_true(op(w, "bn")->inplace);
	assert_int_equal(tensor(w, "bn.temp")->bytes, 2048);
	assert_int_equal(tensor(w, "bn.x_norm")->bytes, 2048);
	assert_op_io(w, "bn.bwd", "bn.out.grad bn.x_norm bn.temp bn.saved -> "
			       "c.out.grad bn.x_norm.diff");
	assert_true(op(w, "bn.bwd")->inplace);
	assert_int_equal(tensor(w, "bn.x_norm.diff")->bytes, 2048);
	assert_op_io(w, "sc", "bn.out sc.weight sc.bias -> sc.out sc.temp");
	assert_int_equal(tensor(w, "sc.temp")->bytes, 2048);
	assert_op_io(w, "sc.bwd", "sc.out.grad sc.temp sc.weight -> bn.out.grad "
			       "sc.weight.grad sc.bias.grad");
	assert_true(op(w, "sc.bwd")->inplace);
	assert_op_io(w, "p", "r.out -> p.out p.max_idx");
	assert_int_equal(tensor(w, "p.max_idx")->bytes, 512);
	assert_op_io(w, "p.bwd", "p.out.grad p.max_idx -> r.out.grad");
	assert_op_io(w, "d", "r2.out -> d.out d.mask");
	assert_true(op(w, "d")->inplace);
	assert_int_equal(tensor(w, "d.mask")->bytes, 80);
	assert_op_io(w, "loss", "fc2.out loss.labels -> loss.probs loss.out "
			     "loss.scratch");
	assert_op_io(w, "loss.bwd", "loss.scratch loss.probs loss.labels -> "
				 "fc2.out.grad");
	assert_true(op(w, "loss.bwd")->inplace);
	assert_int_equal(tensor(w, "loss.labels")->bytes, 8);
	wl_free(w);

	/* none of it outside caffe: a 1-byte mask, nothing in place but
	 * the ReLUs, int64 labels, max pooling reads x, y and dy */
	w = hidden_net(WL_FW_PYTORCH);
	assert_int_equal(wl_tensor_id(w, "bn.temp"), WL_NONE);
	assert_int_equal(wl_tensor_id(w, "sc.temp"), WL_NONE);
	assert_int_equal(wl_tensor_id(w, "p.max_idx"), WL_NONE);
	assert_int_equal(wl_tensor_id(w, "loss.scratch"), WL_NONE);
	assert_int_equal(tensor(w, "d.mask")->bytes, 20);
	assert_int_equal(tensor(w, "loss.labels")->bytes, 16);
	assert_false(op(w, "bn")->inplace);
	assert_false(op(w, "d")->inplace);
	/* pytorch: max_pool2d_with_indices' input and int64 indices */
	assert_op_io(w, "p.bwd", "r.out p.indices p.out.grad -> r.out.grad");
	wl_free(w);
}

/* Split and Concat: a read by three 1x1 convs b, c, d concatenated. Caffe
 * gives each Split top a diff (the three bwd_data outputs a.out.grad,
 * .2, .3) and the bottom one more: the first two summed into a new blob
 * (sum2, caffe_gpu_add), the third added into it in place (sum3,
 * caffe_gpu_axpy): 4 blocks. Concat gives each bottom its own diff, a
 * copy of its slice of the top diff. */
static void test_split_concat(void **state)
{
	(void)state;
	gms_err err = {{0}};
	struct gen *g = gen_new("split", &CAFFE2, &err);
	assert_non_null(g);
	struct gen_tensor x = gen_input(g, "data", 3, 8, 8);
	struct gen_tensor a = gen_conv_sq(g, "a", x, 4, 1, 1, 0, false);
	struct gen_tensor br[3] = {gen_conv_sq(g, "b", a, 4, 1, 1, 0, false),
				   gen_conv_sq(g, "c", a, 4, 1, 1, 0, false),
				   gen_conv_sq(g, "d", a, 4, 1, 1, 0, false)};
	x = gen_concat(g, "cat", br, 3);
	struct wl_workload *w =
		finish_ok(g, gen_linear(g, "fc", gen_flatten(g, x), 10, true));
	assert_op_io(w, "cat.bwd", "cat.out.grad -> b.out.grad");
	assert_op_io(w, "cat.bwd.3", "cat.out.grad -> d.out.grad");
	assert_int_equal(tensor(w, "d.out.grad")->bytes, 2 * 4 * 64 * 4);
	assert_op_io(w, "a.out.grad_acc2", "a.out.grad.2 a.out.grad -> "
					"a.out.grad.sum2");
	assert_false(op(w, "a.out.grad_acc2")->inplace);
	assert_op_io(w, "a.out.grad_acc3", "a.out.grad.sum2 a.out.grad.3 -> "
					"a.out.grad.sum3");
	assert_true(op(w, "a.out.grad_acc3")->inplace);
	wl_free(w);
}

/* The workspace limit: at batch 64, a 64 -> 64 3x3 convolution on 56x56.
 * Fastest overall is WINOGRAD_NONFUSED F(4x4,3x3): 14*14 tiles, batch 64
 * (already a multiple of 16): 64*196*(36*4096 + 2*216*64 + 240*64) +
 * 162*4096 = 2.39e9 MACs against direct 64*64*64*56*56*9 = 7.40e9
 * (0.32), but its workspace 4*36*(196*64*128 + 4096) = 231,800,832 is
 * over 8 MiB = 8,388,608; so are GEMM's and the FFTs'. Within the limit
 * the fastest is fused WINOGRAD: 64*784*(16*4096 + 2*64*64 + 48*64) +
 * 84*4096 = 3.85e9 (0.52), workspace 4*16*64*64 = 262,144; bwd data the
 * same; bwd filter has no fused Winograd and takes ALGO_0 (no
 * workspace). The layer holds 262,144 * 3 = 786,432. */
static void test_workspace_limit(void **state)
{
	(void)state;
	struct wl_gen_args a = CAFFE2;
	a.batch = 64;
	struct wl_workload *w[2];
	for (int f = 0; f < 2; f++) {
		a.framework = f ? WL_FW_CAFFE : WL_FW_TF_GRAPH;
		gms_err err = {{0}};
		struct gen *g = gen_new("limit", &a, &err);
		assert_non_null(g);
		struct gen_tensor x = gen_input(g, "data", 64, 56, 56);
		x = gen_conv_sq(g, "c", x, 64, 3, 1, 1, false);
		w[f] = finish_ok(
			g, gen_linear(g, "fc", gen_flatten(g, x), 2, true));
	}
	const struct wl_op *c = op(w[0], "c");
	assert_string_equal(c->algos[wl_fastest_algo(c)].name,
			    "WINOGRAD_NONFUSED");
	assert_int_equal(c->algos[wl_fastest_algo(c)].workspace, 231800832);
	assert_int_equal(tensor(w[1], "c.workspace")->bytes, 786432);
	assert_int_equal(op(w[1], "c")->n_algos, 1);
	assert_string_equal(op(w[1], "c")->algos[0].name, "WINOGRAD");
	assert_int_equal(op(w[1], "c")->algos[0].workspace, 0);
	assert_string_equal(op(w[1], "c.bwd_filter")->algos[0].name, "ALGO_0");
	wl_free(w[0]);
	wl_free(w[1]);
	/* the 3-layer net: fused Winograd within the limit, carried with
	 * workspace 0 (the layer's held blob is the scratch), read by the
	 * backward pass */
	struct wl_workload *t = three_layer(WL_FW_CAFFE);
	assert_int_equal(op(t, "conv1")->n_algos, 1);
	assert_string_equal(op(t, "conv1")->algos[0].name, "WINOGRAD");
	assert_int_equal(op(t, "conv1")->algos[0].workspace, 0);
	assert_op_io(t, "conv1.bwd_filter", "data conv1.out.grad conv1.workspace "
					 "-> conv1.weight.grad conv1.bias.grad");
	wl_free(t);
}

/* Parameter counts of Caffe's definitions, by hand:
 *   BVLC AlexNet (group 2 on conv2/4/5): conv1 96*3*11*11 + 96 = 34,944;
 *     conv2 256*48*25 + 256 = 307,456; conv3 384*256*9 + 384 = 885,120;
 *     conv4 384*192*9 + 384 = 663,936; conv5 256*192*9 + 256 = 442,624;
 *     fc6 4096*9216 + 4096 = 37,752,832; fc7 4096*4096 + 4096 =
 *     16,781,312; fc8 1000*4096 + 1000 = 4,097,000: 60,965,224.
 *   VGG_ILSVRC_16_layers: torchvision's vgg16, 138,357,544.
 *   KaimingHe ResNet-50: torchvision's 25,557,032 (the Scale layers'
 *     gamma and beta are its batchnorm affine parameters; Caffe's
 *     BatchNorm blobs are statistics) + conv1's bias 64 = 25,557,096.
 *   BVLC GoogLeNet (every conv with a bias; conv(ci, co, k) = co*ci*k*k +
 *     co): stem conv1 9,472 + conv2/3x3_reduce 4,160 + conv2/3x3 110,784
 *     = 124,416; modules 3a 163,696, 3b 388,736, 4a 376,176, 4b 449,160,
 *     4c 510,104, 4d 605,376, 4e 868,352, 5a 1,043,456, 5b 1,444,080;
 *     loss3/classifier 1,025,000: 6,998,552 without the auxiliary heads;
 *     loss1 (512 -> 128 1x1: 65,664; fc 2048 -> 1024: 2,098,176;
 *     classifier 1,025,000) 3,188,840 and loss2 (528 in: 67,712)
 *     3,190,888: 13,378,280. */
static void test_param_counts(void **state)
{
	(void)state;
	struct wl_workload *w =
		gen_build_ok("alexnet", 1, 227, WL_FW_CAFFE, WL_OPTIM_SGD);
	assert_int_equal(param_count(w, NULL), 60965224);
	/* group 2: conv2's FLOPs are 2 * 27*27 outputs * 256 channels *
	 * 48 inputs * 25 taps = 447,897,600 a sample */
	assert_int_equal((int64_t)op(w, "conv2")->flops, 447897600 + 256 * 729);
	/* crop 227: conv1 55x55, pools round up: 27, 13, 6 */
	assert_int_equal(tensor(w, "conv1.out")->bytes, 96 * 55 * 55 * 4);
	assert_int_equal(tensor(w, "pool5.out")->bytes, 256 * 6 * 6 * 4);
	wl_free(w);
	w = gen_build_ok("vgg16", 1, 0, WL_FW_CAFFE, WL_OPTIM_SGD);
	assert_int_equal(param_count(w, NULL), 138357544);
	wl_free(w);
	w = gen_build_ok("resnet50", 1, 0, WL_FW_CAFFE, WL_OPTIM_SGD);
	assert_int_equal(param_count(w, NULL), 25557096);
	/* stride 2 on the first 1x1 of res3a: 128 x 28 x 28 out of it */
	assert_int_equal(tensor(w, "res3a_branch2a.out")->bytes,
			 128 * 28 * 28 * 4);
	assert_true(op(w, "bn3a_branch2a")->inplace);
	assert_true(op(w, "scale3a_branch2a")->inplace);
	wl_free(w);
	/* no adaptive pooling in Caffe: at 64, res5 is 2x2 (64 -> 32 ->
	 * 16 (ceil pool) -> 8 -> 4 -> 2) and pool5's 7x7 does not fit */
	struct wl_gen_args a = {1, 64, WL_FW_CAFFE, WL_OPTIM_SGD};
	gms_err err = {{0}};
	assert_null(wl_gen_build(wl_gen_find("resnet50"), &a, &err));
	assert_has(err.msg, "pool5: input 2x2");
	assert_has(err.msg, "too small");
	w = gen_build_ok("googlenet", 1, 0, WL_FW_CAFFE, WL_OPTIM_SGD);
	assert_int_equal(param_count(w, NULL), 13378280);
	assert_int_equal(param_count(w, NULL) - param_count(w, "loss1/"),
			 3188840);
	assert_int_equal(param_count(w, NULL) - param_count(w, "loss2/"),
			 3190888);
	wl_free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_static_peak),
		cmocka_unit_test(test_hidden_buffers),
		cmocka_unit_test(test_split_concat),
		cmocka_unit_test(test_workspace_limit),
		cmocka_unit_test(test_param_counts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
