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
