/*
 * gen_caffe.c - the networks as Caffe's reference prototxts define them,
 * built with gen.h under the caffe personality (README, "Framework
 * personalities", "caffe"). Sources: BVLC/caffe@9b891540 models/ and
 * KaimingHe/deep-residual-networks@a7026cb6 prototxt/.
 *
 * Conventions every definition here shares:
 *   - ReLU, Dropout, BatchNorm and Scale run in place (top == bottom in
 *     the prototxts): gen_set_layers_inplace;
 *   - Caffe pooling rounds up (pooling_layer.cpp Reshape:
 *     `static_cast<int>(ceil(static_cast<float>(height_ + 2 * pad_h_ -
 *     kernel_h_) / stride_h_)) + 1`, minus a last window that would start
 *     in the padding): ceil_mode on every pool;
 *   - no adaptive pooling: the classifier's input grows with the image;
 *   - convolutions and inner products have a bias unless the prototxt
 *     says `bias_term: false` (ConvolutionParameter's default is true);
 *   - Accuracy layers are `phase: TEST` only: not built.
 * Loss weights (GoogLeNet's 0.3 on its auxiliary losses) scale gradients,
 * not memory or time, and are not modelled.
 */
#include "gen_caffe.h"
#include "gen.h"

#include <stdio.h>

/* Open a context for a Caffe definition: layers in place. */
static struct gen *open_caffe(const char *name, const struct wl_gen_args *a,
			      gms_err *err)
{
	struct gen *g = gen_new(name, a, err);
	gen_set_layers_inplace(g, true);
	return g;
}

/* conv -> ReLU, the ReLU named RELU (in place). */
static struct gen_tensor conv_relu(struct gen *g, const char *conv,
				   const char *relu, struct gen_tensor x,
				   int64_t cout, int64_t k, int64_t stride,
				   int64_t pad, int64_t groups)
{
	x = gen_conv_grouped(g, conv, x, cout, k, stride, pad, groups, true);
	return gen_relu(g, relu, x);
}

/* ---- AlexNet -------------------------------------------------------- */

/* models/bvlc_alexnet/train_val.prototxt: crop 227 (pass size 227; at
 * 224 conv1 gives 54x54 instead of 55x55 and every later shape is the
 * same), conv -> relu -> LRN (local_size 5) -> pool, group 2 on conv2,
 * conv4 and conv5, fc6 and fc7 of 4096 each followed by ReLU and Dropout
 * 0.5 in place, fc8 of 1000, SoftmaxWithLoss. 60,965,224 parameters. */
struct wl_workload *gen_caffe_alexnet(const struct wl_gen_args *a,
				      gms_err *err)
{
	struct gen *g = open_caffe("alexnet", a, err);
	if (!g)
		return NULL;
	struct gen_tensor x = gen_input(g, "data", 3, a->size, a->size);
	x = conv_relu(g, "conv1", "relu1", x, 96, 11, 4, 0, 1);
	x = gen_lrn(g, "norm1", x, 5);
	x = gen_maxpool(g, "pool1", x, 3, 2, 0, true);
	x = conv_relu(g, "conv2", "relu2", x, 256, 5, 1, 2, 2);
	x = gen_lrn(g, "norm2", x, 5);
	x = gen_maxpool(g, "pool2", x, 3, 2, 0, true);
	x = conv_relu(g, "conv3", "relu3", x, 384, 3, 1, 1, 1);
	x = conv_relu(g, "conv4", "relu4", x, 384, 3, 1, 1, 2);
	x = conv_relu(g, "conv5", "relu5", x, 256, 3, 1, 1, 2);
	x = gen_maxpool(g, "pool5", x, 3, 2, 0, true);
	return gen_finish(g, gen_vgg_head(g, gen_flatten(g, x)), err);
}

/* ---- VGG-16 --------------------------------------------------------- */

/* VGG_ILSVRC_16_layers (configuration D, no batchnorm): 3x3 pad-1
 * convolutions with in-place ReLUs, 2x2/2 max pools, fc6 and fc7 of 4096
 * with ReLU and Dropout 0.5 in place, fc8. The same layers as
 * torchvision's vgg16 (138,357,544 parameters at 224). */
struct wl_workload *gen_caffe_vgg16(const struct wl_gen_args *a,
				    gms_err *err)
{
	static const int width[5] = {64, 128, 256, 512, 512};
	static const int convs[5] = {2, 2, 3, 3, 3};
	char n1[64], n2[64];
	struct gen *g = open_caffe("vgg16", a, err);
	if (!g)
		return NULL;
	struct gen_tensor x = gen_input(g, "data", 3, a->size, a->size);
	for (int grp = 0; grp < 5; grp++) {
		for (int i = 1; i <= convs[grp]; i++) {
			gen_fmt(n1, sizeof n1, "conv%d_%d", grp + 1, i);
			gen_fmt(n2, sizeof n2, "relu%d_%d", grp + 1, i);
			x = conv_relu(g, n1, n2, x, width[grp], 3, 1, 1, 1);
		}
		gen_fmt(n1, sizeof n1, "pool%d", grp + 1);
		x = gen_maxpool(g, n1, x, 2, 2, 0, true);
	}
	return gen_finish(g, gen_vgg_head(g, gen_flatten(g, x)), err);
}

/* ---- ResNet --------------------------------------------------------- */

/* KaimingHe's conv unit: conv NAME (res<B>_branch<X>) -> BatchNorm
 * bn<B>_branch<X> -> Scale scale<B>_branch<X> (bias_term: true) [->
 * ReLU NAME_relu], all in place on the conv's top; convolutions have
 * `bias_term: false`. */
static struct gen_tensor unit(struct gen *g, const char *blk,
			      const char *br, struct gen_tensor x,
			      int64_t cout, int64_t k, int64_t stride,
			      bool relu)
{
	char n[128];
	gen_fmt(n, sizeof n, "res%s_branch%s", blk, br);
	x = gen_conv_sq(g, n, x, cout, k, stride, k / 2, false);
	gen_fmt(n, sizeof n, "bn%s_branch%s", blk, br);
	x = gen_bn_noaffine(g, n, x);
	gen_fmt(n, sizeof n, "scale%s_branch%s", blk, br);
	x = gen_affine(g, n, x, true);
	if (relu) {
		gen_fmt(n, sizeof n, "res%s_branch%s_relu", blk, br);
		x = gen_relu(g, n, x);
	}
	return x;
}

/* Block names: stage s (2..5), block b: letters (2a, 2b, ...) for up to
 * 6 blocks, else "a" then "b1", "b2", ... (ResNet-101's res4b1..res4b22,
 * ResNet-152's res3b1..res3b7 and res4b1..res4b35). */
static void block_name(char *buf, size_t cap, int s, int b, int n)
{
	if (n <= 6 || b == 0)
		gen_fmt(buf, cap, "%d%c", s, 'a' + b);
	else
		gen_fmt(buf, cap, "%db%d", s, b);
}

/* prototxt/ResNet-{50,101,152}-deploy.prototxt, as trained (BatchNorm
 * use_global_stats false): conv1 7x7/2 pad 3 WITH bias -> bn_conv1 ->
 * scale_conv1 -> conv1_relu, pool1 MAX 3x3/2, bottlenecks with the
 * stride on the FIRST 1x1 (branch2a) and on the projection branch1 (a
 * projection on every stage's first block, res2a's at stride 1), Eltwise
 * SUM then an in-place ReLU, pool5 AVE 7x7/1, fc1000. Basic blocks
 * (ResNet-34: no Caffe definition exists in that repository, whose
 * README points to fb.resnet.torch for 18/34) follow the same
 * conventions: branch2a 3x3 with the stride, branch2b 3x3, a projection
 * where the shape changes. */
struct wl_workload *gen_caffe_resnet(const char *name,
				     const struct wl_gen_args *a,
				     const int blocks[4], bool bottleneck,
				     gms_err *err)
{
	char blk[32], n[128];
	struct gen *g = open_caffe(name, a, err);
	if (!g)
		return NULL;
	struct gen_tensor x = gen_input(g, "data", 3, a->size, a->size);
	x = gen_conv_sq(g, "conv1", x, 64, 7, 2, 3, true);
	x = gen_bn_noaffine(g, "bn_conv1", x);
	x = gen_affine(g, "scale_conv1", x, true);
	x = gen_relu(g, "conv1_relu", x);
	x = gen_maxpool(g, "pool1", x, 3, 2, 0, true);
	for (int s = 0; s < 4; s++)
		for (int b = 0; b < blocks[s]; b++) {
			int64_t planes = (int64_t)64 << s;
			int64_t cout = bottleneck ? planes * 4 : planes;
			int64_t stride = (s > 0 && b == 0) ? 2 : 1;
			block_name(blk, sizeof blk, s + 2, b, blocks[s]);
			struct gen_tensor id = x, y;
			if (b == 0 && (stride != 1 || x.c != cout))
				id = unit(g, blk, "1", x, cout, 1, stride,
					  false);
			if (bottleneck) {
				y = unit(g, blk, "2a", x, planes, 1, stride,
					 true);
				y = unit(g, blk, "2b", y, planes, 3, 1, true);
				y = unit(g, blk, "2c", y, cout, 1, 1, false);
			} else {
				y = unit(g, blk, "2a", x, planes, 3, stride,
					 true);
				y = unit(g, blk, "2b", y, planes, 3, 1, false);
			}
			gen_fmt(n, sizeof n, "res%s", blk);
			x = gen_add(g, n, id, y);
			gen_fmt(n, sizeof n, "res%s_relu", blk);
			x = gen_relu(g, n, x);
		}
	x = gen_avgpool(g, "pool5", x, 7, 1, 0, true);
	x = gen_flatten(g, x);
	x = gen_linear(g, "fc1000", x, 1000, true);
	return gen_finish(g, x, err);
}

/* ---- GoogLeNet ------------------------------------------------------ */

/* One inception module of models/bvlc_googlenet/train_val.prototxt:
 * 1x1; 3x3_reduce -> 3x3 (pad 1); 5x5_reduce -> 5x5 (pad 2, a true 5x5);
 * pool (MAX 3x3/1 pad 1) -> pool_proj; Concat "output". Every conv has a
 * bias and an in-place ReLU. */
struct incep {
	const char *name; /* "3a" */
	int64_t c1, r3, c3, r5, c5, pp; /* branch widths */
};

static struct gen_tensor inception(struct gen *g, const struct incep *m,
				   struct gen_tensor x)
{
	char n1[64], n2[64];
	struct gen_tensor br[4];
#define IC(sfx) (gen_fmt(n1, sizeof n1, "inception_%s/%s", m->name, sfx), \
		 gen_fmt(n2, sizeof n2, "inception_%s/relu_%s", m->name,   \
			  sfx))
	IC("1x1");
	br[0] = conv_relu(g, n1, n2, x, m->c1, 1, 1, 0, 1);
	IC("3x3_reduce");
	br[1] = conv_relu(g, n1, n2, x, m->r3, 1, 1, 0, 1);
	IC("3x3");
	br[1] = conv_relu(g, n1, n2, br[1], m->c3, 3, 1, 1, 1);
	IC("5x5_reduce");
	br[2] = conv_relu(g, n1, n2, x, m->r5, 1, 1, 0, 1);
	IC("5x5");
	br[2] = conv_relu(g, n1, n2, br[2], m->c5, 5, 1, 2, 1);
	gen_fmt(n1, sizeof n1, "inception_%s/pool", m->name);
	br[3] = gen_maxpool(g, n1, x, 3, 1, 1, true);
	IC("pool_proj");
	br[3] = conv_relu(g, n1, n2, br[3], m->pp, 1, 1, 0, 1);
#undef IC
	gen_fmt(n1, sizeof n1, "inception_%s/output", m->name);
	return gen_concat(g, n1, br, 4);
}

/* An auxiliary head lossK: ave_pool AVE 5x5/3 -> conv 128 1x1 + ReLU ->
 * fc 1024 + ReLU -> drop_fc (`dropout_ratio: 0.7`) -> classifier 1000 ->
 * SoftmaxWithLoss (loss_weight 0.3). */
static void aux_head(struct gen *g, int k, struct gen_tensor x)
{
	char n1[64], n2[64];
	gen_fmt(n1, sizeof n1, "loss%d/ave_pool", k);
	x = gen_avgpool(g, n1, x, 5, 3, 0, true);
	gen_fmt(n1, sizeof n1, "loss%d/conv", k);
	gen_fmt(n2, sizeof n2, "loss%d/relu_conv", k);
	x = conv_relu(g, n1, n2, x, 128, 1, 1, 0, 1);
	x = gen_flatten(g, x);
	gen_fmt(n1, sizeof n1, "loss%d/fc", k);
	x = gen_linear(g, n1, x, 1024, true);
	gen_fmt(n1, sizeof n1, "loss%d/relu_fc", k);
	x = gen_relu(g, n1, x);
	gen_fmt(n1, sizeof n1, "loss%d/drop_fc", k);
	x = gen_dropout(g, n1, x, 0.7);
	gen_fmt(n1, sizeof n1, "loss%d/classifier", k);
	x = gen_linear(g, n1, x, 1000, true);
	gen_fmt(n1, sizeof n1, "loss%d/loss", k);
	gen_loss(g, n1, x);
}

/* models/bvlc_googlenet/train_val.prototxt (crop 224): conv1/7x7_s2,
 * pool1/3x3_s2, pool1/norm1 (LRN after the pool), conv2/3x3_reduce,
 * conv2/3x3, conv2/norm2 (LRN before the pool), pool2/3x3_s2, 3a, 3b,
 * pool3, 4a (-> loss1), 4b, 4c, 4d (-> loss2), 4e, pool4, 5a, 5b,
 * pool5/7x7_s1 (AVE), dropout 0.4, loss3/classifier, loss3/loss3. */
struct wl_workload *gen_caffe_googlenet(const struct wl_gen_args *a,
					gms_err *err)
{
	static const struct incep m3[2] = {{"3a", 64, 96, 128, 16, 32, 32},
					   {"3b", 128, 128, 192, 32, 96, 64}};
	static const struct incep m4[5] = {
		{"4a", 192, 96, 208, 16, 48, 64},
		{"4b", 160, 112, 224, 24, 64, 64},
		{"4c", 128, 128, 256, 24, 64, 64},
		{"4d", 112, 144, 288, 32, 64, 64},
		{"4e", 256, 160, 320, 32, 128, 128}};
	static const struct incep m5[2] = {
		{"5a", 256, 160, 320, 32, 128, 128},
		{"5b", 384, 192, 384, 48, 128, 128}};
	struct gen *g = open_caffe("googlenet", a, err);
	if (!g)
		return NULL;
	struct gen_tensor x = gen_input(g, "data", 3, a->size, a->size);
	x = conv_relu(g, "conv1/7x7_s2", "conv1/relu_7x7", x, 64, 7, 2, 3, 1);
	x = gen_maxpool(g, "pool1/3x3_s2", x, 3, 2, 0, true);
	x = gen_lrn(g, "pool1/norm1", x, 5);
	x = conv_relu(g, "conv2/3x3_reduce", "conv2/relu_3x3_reduce", x, 64,
		      1, 1, 0, 1);
	x = conv_relu(g, "conv2/3x3", "conv2/relu_3x3", x, 192, 3, 1, 1, 1);
	x = gen_lrn(g, "conv2/norm2", x, 5);
	x = gen_maxpool(g, "pool2/3x3_s2", x, 3, 2, 0, true);
	for (int i = 0; i < 2; i++)
		x = inception(g, &m3[i], x);
	x = gen_maxpool(g, "pool3/3x3_s2", x, 3, 2, 0, true);
	for (int i = 0; i < 5; i++) {
		x = inception(g, &m4[i], x);
		if (i == 0 || i == 3)
			aux_head(g, i == 0 ? 1 : 2, x);
	}
	x = gen_maxpool(g, "pool4/3x3_s2", x, 3, 2, 0, true);
	for (int i = 0; i < 2; i++)
		x = inception(g, &m5[i], x);
	x = gen_avgpool(g, "pool5/7x7_s1", x, 7, 1, 0, true);
	x = gen_dropout(g, "pool5/drop_7x7_s1", x, 0.4);
	x = gen_flatten(g, x);
	x = gen_linear(g, "loss3/classifier", x, 1000, true);
	gen_loss(g, "loss3/loss3", x);
	return gen_finish(g, gen_none(), err);
}
