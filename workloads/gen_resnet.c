/*
 * gen_resnet.c - ResNet-34/50/101/152 as torchvision builds them
 * (models/resnet.py; the v1.5 bottleneck with the stride on its 3x3),
 * 1000 classes, built with gen.h. Published figures (torchvision):
 *   resnet34   21,797,672 parameters,  3.664 G MACs at 224x224
 *   resnet50   25,557,032              4.089
 *   resnet101  44,549,160              7.801
 *   resnet152  60,192,808             11.514
 * Any input side >= 1 gives every layer an output >= 1x1 (the 7x7/2 stem
 * pads by 3, the 3x3/2 max pool by 1, strided convolutions pad), hence
 * min_size 1.
 *
 * Under the caffe framework these build KaimingHe's Caffe definitions
 * instead (gen_caffe.c: stride on the first 1x1, BatchNorm + Scale).
 *
 * resnet-N (issue 36: SuperNeurons' headline, "SuperNeurons can train
 * ResNet2500 that has 10^4 basic network layers on a 12GB K40c") is the
 * bottleneck ResNet of any depth N. He et al. 2016 (Deep Residual
 * Learning, Table 1 and section 4.1) count the weighted layers: conv1,
 * three per bottleneck block, the fc, so N = 3B + 2 for B blocks; "We
 * construct 101-layer and 152-layer ResNets by using more 3-layer blocks",
 * and ResNet-101 adds all of its 17 blocks past ResNet-50's to conv4_x
 * (3, 4, 23, 3). resnet-N does the same for every N: (3, 4, B - 10, 3),
 * so resnet-50 is resnet50 and resnet-101 is resnet101, while resnet-152
 * (3, 4, 40, 3) is not He et al.'s resnet152 (3, 8, 36, 3). The authors'
 * ResNet2500 (superneurons-release at d20d25c,
 * testing/residual_imagenet_max.cpp) is (6, 32, 788, 6) bottlenecks,
 * 3 x 832 + 2 = 2498 layers, nearly all in conv4_x as well; its Caffe
 * personality, torchvision's and ours differ only in where the blocks
 * other than conv4_x's go. Each block adds (torchvision, conv4_x: 1024 ->
 * 256 -> 256 -> 1024, no biases, batch-norm weight and bias) 1024 x 256 +
 * 256 x 256 x 9 + 256 x 1024 + 2 x (256 + 256 + 1024) = 1,117,184
 * parameters, the difference of ResNet-101's and ResNet-50's published
 * counts over 17 blocks. The build is linear in N.
 *
 * Names follow torchvision's modules: conv1, bn1, relu, maxpool,
 * layer1.0.conv1, layer1.0.bn1, layer1.0.relu1, ..., layer1.0.add,
 * layer1.0.downsample.0 (1x1 conv), layer1.0.downsample.1 (bn), avgpool,
 * fc. torchvision reuses one ReLU module per block; here each use is an
 * op of its own: relu1, relu2 (and relu3 in a bottleneck), the last one
 * after the residual add.
 */
#include "gen.h"
#include "gen_caffe.h"

#include <stdio.h>

/* conv -> bn [-> relu], names PREFIX.convK, PREFIX.bnK, PREFIX.reluK. */
static struct gen_tensor cbr(struct gen *g, const char *pfx, int k,
			     struct gen_tensor x, int64_t cout, int64_t ks,
			     int64_t stride, bool relu)
{
	char n[128];
	gen_fmt(n, sizeof n, "%s.conv%d", pfx, k);
	x = gen_conv_sq(g, n, x, cout, ks, stride, ks / 2, false);
	gen_fmt(n, sizeof n, "%s.bn%d", pfx, k);
	x = gen_batchnorm(g, n, x);
	if (relu) {
		gen_fmt(n, sizeof n, "%s.relu%d", pfx, k);
		x = gen_relu(g, n, x);
	}
	return x;
}

/* One residual block: BasicBlock (bottleneck false) or Bottleneck. */
static struct gen_tensor block(struct gen *g, const char *pfx,
			       struct gen_tensor x, int64_t planes,
			       int64_t stride, bool bottleneck)
{
	char n[128];
	int64_t cout = bottleneck ? planes * 4 : planes;
	struct gen_tensor id = x, y;
	int last;
	if (bottleneck) {
		y = cbr(g, pfx, 1, x, planes, 1, 1, true);
		y = cbr(g, pfx, 2, y, planes, 3, stride, true);
		y = cbr(g, pfx, 3, y, cout, 1, 1, false);
		last = 3;
	} else {
		y = cbr(g, pfx, 1, x, planes, 3, stride, true);
		y = cbr(g, pfx, 2, y, planes, 3, 1, false);
		last = 2;
	}
	if (stride != 1 || x.c != cout) {
		gen_fmt(n, sizeof n, "%s.downsample.0", pfx);
		id = gen_conv_sq(g, n, x, cout, 1, stride, 0, false);
		gen_fmt(n, sizeof n, "%s.downsample.1", pfx);
		id = gen_batchnorm(g, n, id);
	}
	gen_fmt(n, sizeof n, "%s.add", pfx);
	/* torchvision resnet.py: `out += identity` */
	y = gen_add_inplace(g, n, y, id);
	gen_fmt(n, sizeof n, "%s.relu%d", pfx, last);
	return gen_relu(g, n, y);
}

static struct wl_workload *resnet(const char *name,
				  const struct wl_gen_args *a,
				  const int blocks[4], bool bottleneck,
				  gms_err *err)
{
	char pfx[64];
	if (a->framework == WL_FW_CAFFE)
		return gen_caffe_resnet(name, a, blocks, bottleneck, err);
	struct gen *g = gen_new(name, a, err);
	if (!g)
		return NULL;
	struct gen_tensor x = gen_input(g, "input", 3, a->size, a->size);
	x = gen_conv_sq(g, "conv1", x, 64, 7, 2, 3, false);
	x = gen_batchnorm(g, "bn1", x);
	x = gen_relu(g, "relu", x);
	x = gen_maxpool(g, "maxpool", x, 3, 2, 1, false);
	int64_t nb = 0; /* residual blocks, numbered in forward order */
	for (int s = 0; s < 4; s++)
		for (int b = 0; b < blocks[s]; b++) {
			gen_fmt(pfx, sizeof pfx, "layer%d.%d", s + 1, b);
			gen_block(g, nb++);
			x = block(g, pfx, x, (int64_t)64 << s,
				  (s > 0 && b == 0) ? 2 : 1, bottleneck);
		}
	gen_block(g, -1);
	x = gen_global_avgpool(g, "avgpool", x);
	x = gen_flatten(g, x);
	x = gen_linear(g, "fc", x, 1000, true);
	return gen_finish(g, x, err);
}

struct wl_workload *gen_build_resnet34(const struct wl_gen_args *a,
				       gms_err *err);
struct wl_workload *gen_build_resnet34(const struct wl_gen_args *a,
				       gms_err *err)
{
	static const int b[4] = {3, 4, 6, 3};
	return resnet("resnet34", a, b, false, err);
}

struct wl_workload *gen_build_resnet50(const struct wl_gen_args *a,
				       gms_err *err);
struct wl_workload *gen_build_resnet50(const struct wl_gen_args *a,
				       gms_err *err)
{
	static const int b[4] = {3, 4, 6, 3};
	return resnet("resnet50", a, b, true, err);
}

struct wl_workload *gen_build_resnet101(const struct wl_gen_args *a,
					gms_err *err);
struct wl_workload *gen_build_resnet101(const struct wl_gen_args *a,
					gms_err *err)
{
	static const int b[4] = {3, 4, 23, 3};
	return resnet("resnet101", a, b, true, err);
}

struct wl_workload *gen_build_resnet152(const struct wl_gen_args *a,
					gms_err *err);
struct wl_workload *gen_build_resnet152(const struct wl_gen_args *a,
					gms_err *err)
{
	static const int b[4] = {3, 8, 36, 3};
	return resnet("resnet152", a, b, true, err);
}

/* resnet-N: the stages of depth N = 3B + 2, B - 10 >= 1 of the blocks in
 * conv4_x (the file comment). */
int gen_resnet_deep_blocks(int64_t depth, int blocks[4], gms_err *err);
int gen_resnet_deep_blocks(int64_t depth, int blocks[4], gms_err *err)
{
	if (depth < 35 || depth > GEN_RESNET_MAX_DEPTH || (depth - 2) % 3) {
		return gms_errf(err, "resnet-%lld: the depth must be 3B + 2 "
				     "for B bottleneck blocks (He et al. "
				     "2016), at least 35 (one block in "
				     "conv4_x) and at most %d: 35, 38, ..., "
				     "50, ..., 101, ...",
				(long long)depth, GEN_RESNET_MAX_DEPTH);
	}
	int b = (int)((depth - 2) / 3);
	blocks[0] = 3;
	blocks[1] = 4;
	blocks[2] = b - 10;
	blocks[3] = 3;
	return 0;
}

struct wl_workload *gen_build_resnet_deep(const struct wl_gen_args *a,
					  gms_err *err);
struct wl_workload *gen_build_resnet_deep(const struct wl_gen_args *a,
					  gms_err *err)
{
	int b[4];
	char name[32];
	int64_t depth = a->depth ? a->depth : 50; /* "resnet-N" itself */
	if (gen_resnet_deep_blocks(depth, b, err) < 0)
		return NULL;
	snprintf(name, sizeof name, "resnet-%lld", (long long)depth);
	return resnet(name, a, b, true, err);
}
