/*
 * gen_densenet.c - DenseNet-121 (Huang et al., "Densely Connected
 * Convolutional Networks", CVPR 2017) as torchvision.models.densenet121
 * builds it: growth rate k = 32, blocks (6, 12, 24, 16), bn_size 4 (the
 * bottleneck 1x1 convolution writes 4k = 128 channels), 64 initial
 * features, compression 0.5 in the transitions, drop_rate 0 (no dropout
 * op is emitted, as torchvision skips F.dropout when drop_rate == 0),
 * 1000 classes.
 *
 *   features.conv0   7x7/2 pad 3, 3 -> 64, no bias
 *   features.norm0, relu0, pool0 (max 3x3/2 pad 1)
 *   denseblockB (B = 1..4), layers denselayerL (L = 1..n_B), each
 *     cat(all previous features) -> norm1 -> relu1 -> conv1 (1x1, c -> 128)
 *     -> norm2 -> relu2 -> conv2 (3x3 pad 1, 128 -> 32)
 *   the block's output: cat(init features, the n_B new ones)
 *   transitionB (B = 1..3): norm -> relu -> conv (1x1, c -> c/2) ->
 *     pool (avg 2x2/2)
 *   features.norm5 -> relu (F.relu) -> adaptive avg pool 1x1 -> flatten ->
 *     classifier (linear 1024 -> 1000, bias)
 *
 * Concatenation. torchvision's default (memory_efficient=False) runs
 * _DenseLayer.bn_function = conv1(relu1(norm1(torch.cat(inputs, 1)))):
 * every dense layer copies ALL the features before it into a fresh tensor,
 * and norm1 keeps that tensor for its backward, so the concatenations of a
 * block hold sum over layers of (c0 + l*k) channels -- quadratic in the
 * block's depth -- until backward. We model exactly that: one OT_CONCAT
 * per dense layer (also for a block's first layer, where torch.cat of one
 * tensor is still a copy), whose output feeds norm1, plus the block's own
 * torch.cat(features, 1) feeding the transition (or norm5). The
 * memory-efficient variant (checkpointed bn_function) is not modelled.
 *
 * Parameters by hand (a dense layer with c input channels has
 * 2c (norm1) + 128c (conv1) + 256 (norm2) + 128*32*9 (conv2)
 * = 130c + 37120; a transition with c channels 2c + c*c/2):
 *   conv0 9408, norm0 128
 *   block1 c = 64..224 step 32:  sum c = 864,   130*864 + 6*37120 = 335040
 *   transition1 c = 256:         512 + 32768                    =  33280
 *   block2 c = 128..480:         sum c = 3648,  474240 + 445440 = 919680
 *   transition2 c = 512:         1024 + 131072                  = 132096
 *   block3 c = 256..992:         sum c = 14976, 1946880 + 890880 = 2837760
 *   transition3 c = 1024:        2048 + 524288                  = 526336
 *   block4 c = 512..992:         sum c = 12032, 1564160 + 593920 = 2158080
 *   norm5 2048, classifier 1024*1000 + 1000 = 1025000
 *   total 7,978,856 (torchvision's published figure for densenet121).
 * Batch-norm running statistics are buffers, not parameters (gen.h).
 *
 * Multiply-accumulates per image at 224 x 224 by hand (convolutions and the
 * classifier): conv0 112*112*64*147 = 118,013,952; block1 at 56x56
 * 3136*(128*864 + 6*36864) = 1,040,449,536; transition1 3136*256*128 =
 * 102,760,448; block2 at 28x28 784*(128*3648 + 12*36864) = 712,900,608;
 * transition2 784*512*256 = 102,760,448; block3 at 14x14
 * 196*(128*14976 + 24*36864) = 549,126,144; transition3 196*1024*512 =
 * 102,760,448; block4 at 7x7 49*(128*12032 + 16*36864) = 104,366,080;
 * classifier 1,024,000: total 2,834,161,664 (torchvision: 2.83 GFLOPS,
 * i.e. GMACs).
 *
 * Smallest input: three 2x2/2 average pools need 8x8 after pool0, i.e.
 * 15x15 after conv0, i.e. a 29-pixel image (28 gives 14 -> 7 -> 3 -> 1 ->
 * 0).
 */
#include "gen_dense_bert.h"

#include "gen.h"

#include <stdio.h>

#define DN_GROWTH 32
#define DN_BN_SIZE 4
#define DN_INIT 64
#define DN_CLASSES 1000
#define DN_MAX_FEATURES 64 /* most features a block concatenates: 1 + 16 */

/* Emit one dense block of n layers on x; returns the block's output (the
 * concatenation of x and the n new feature maps). */
static struct gen_tensor dense_block(struct gen *g, int blk,
				     struct gen_tensor x, int n)
{
	struct gen_tensor feats[DN_MAX_FEATURES];
	uint32_t nf = 0;
	char nm[96];
	feats[nf++] = x;
	for (int l = 1; l <= n && nf < DN_MAX_FEATURES; l++) {
		char p[64];
		gen_fmt(p, sizeof p, "features.denseblock%d.denselayer%d",
			 blk, l);
		gen_fmt(nm, sizeof nm, "%s.cat", p);
		struct gen_tensor y = gen_concat(g, nm, feats, nf);
		gen_fmt(nm, sizeof nm, "%s.norm1", p);
		y = gen_batchnorm(g, nm, y);
		gen_fmt(nm, sizeof nm, "%s.relu1", p);
		y = gen_relu(g, nm, y);
		gen_fmt(nm, sizeof nm, "%s.conv1", p);
		y = gen_conv_sq(g, nm, y, DN_BN_SIZE * DN_GROWTH, 1, 1, 0,
				false);
		gen_fmt(nm, sizeof nm, "%s.norm2", p);
		y = gen_batchnorm(g, nm, y);
		gen_fmt(nm, sizeof nm, "%s.relu2", p);
		y = gen_relu(g, nm, y);
		gen_fmt(nm, sizeof nm, "%s.conv2", p);
		y = gen_conv_sq(g, nm, y, DN_GROWTH, 3, 1, 1, false);
		feats[nf++] = y;
	}
	gen_fmt(nm, sizeof nm, "features.denseblock%d.cat", blk);
	return gen_concat(g, nm, feats, nf);
}

/* Transition: norm, relu, 1x1 conv halving the channels, 2x2/2 avg pool. */
static struct gen_tensor transition(struct gen *g, int t, struct gen_tensor x)
{
	char nm[64];
	gen_fmt(nm, sizeof nm, "features.transition%d.norm", t);
	x = gen_batchnorm(g, nm, x);
	gen_fmt(nm, sizeof nm, "features.transition%d.relu", t);
	x = gen_relu(g, nm, x);
	gen_fmt(nm, sizeof nm, "features.transition%d.conv", t);
	x = gen_conv_sq(g, nm, x, x.c / 2, 1, 1, 0, false);
	gen_fmt(nm, sizeof nm, "features.transition%d.pool", t);
	return gen_avgpool(g, nm, x, 2, 2, 0, false);
}

struct wl_workload *wl_gen_densenet121(const struct wl_gen_args *a,
				       gms_err *err)
{
	static const int blocks[4] = {6, 12, 24, 16};
	int64_t size = a->size ? a->size : DENSENET_DEFAULT_SIZE;
	if (size < DENSENET_MIN_SIZE) {
		gms_errf(err,
			 "densenet121: image size %lld is too small (at least "
			 "%d: three 2x2 pools need 8x8 after pool0)",
			 (long long)size, DENSENET_MIN_SIZE);
		return NULL;
	}
	struct wl_gen_args args = *a;
	args.size = size;
	struct gen *g = gen_new("densenet121", &args, err);
	if (!g)
		return NULL;
	struct gen_tensor x = gen_input(g, "input", 3, size, size);
	x = gen_conv_sq(g, "features.conv0", x, DN_INIT, 7, 2, 3, false);
	x = gen_batchnorm(g, "features.norm0", x);
	x = gen_relu(g, "features.relu0", x);
	x = gen_maxpool(g, "features.pool0", x, 3, 2, 1, false);
	for (int b = 0; b < 4; b++) {
		gen_block(g, b); /* features.denseblock(b+1): a stage */
		x = dense_block(g, b + 1, x, blocks[b]);
		gen_block(g, -1);
		if (b < 3)
			x = transition(g, b + 1, x);
	}
	x = gen_batchnorm(g, "features.norm5", x);
	x = gen_relu(g, "features.relu5", x);
	x = gen_global_avgpool(g, "avgpool", x);
	x = gen_linear(g, "classifier", gen_flatten(g, x), DN_CLASSES, true);
	return gen_finish(g, x, err);
}
