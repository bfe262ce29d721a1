/*
 * gen_alexnet_vgg.c - AlexNet, VGG-16, the deep VGGs of the vDNN++ paper
 * (VGG-116, VGG-191) and the network of its Table III, built with gen.h.
 *
 * Under the caffe framework alexnet and vgg16 build Caffe's own
 * definitions instead (gen_caffe.c); vgg116, vgg191 and vdnnpp_table3
 * have none and keep these under Caffe's memory rules.
 *
 * AlexNet and VGG-16 follow torchvision (models/alexnet.py, vgg.py):
 *   alexnet: 61,100,840 parameters, 0.714 G MACs at 224x224;
 *   vgg16:   138,357,544 parameters, 15.47 G MACs.
 * Smallest input (every layer at least 1x1):
 *   alexnet 63: conv1 (11x11/4, pad 2) gives (S-7)/4+1, three 3x3/2 max
 *     pools each need >= 3 in: 63 -> 15 -> 7 -> 7 -> 3 -> 3 -> 1;
 *   vgg 32: five 2x2/2 pools: 32 -> 16 -> 8 -> 4 -> 2 -> 1.
 */
#include "gen.h"
#include "gen_caffe.h"

#include <stdio.h>

/* ---- AlexNet ------------------------------------------------------- */

struct wl_workload *gen_build_alexnet(const struct wl_gen_args *a,
				      gms_err *err);
struct wl_workload *gen_build_alexnet(const struct wl_gen_args *a,
				      gms_err *err)
{
	if (a->framework == WL_FW_CAFFE)
		return gen_caffe_alexnet(a, err);
	struct gen *g = gen_new("alexnet", a, err);
	if (!g)
		return NULL;
	struct gen_tensor x = gen_input(g, "input", 3, a->size, a->size);
	x = gen_conv_sq(g, "conv1", x, 64, 11, 4, 2, true);
	x = gen_relu(g, "relu1", x);
	x = gen_maxpool(g, "pool1", x, 3, 2, 0, false);
	x = gen_conv_sq(g, "conv2", x, 192, 5, 1, 2, true);
	x = gen_relu(g, "relu2", x);
	x = gen_maxpool(g, "pool2", x, 3, 2, 0, false);
	x = gen_conv_sq(g, "conv3", x, 384, 3, 1, 1, true);
	x = gen_relu(g, "relu3", x);
	x = gen_conv_sq(g, "conv4", x, 256, 3, 1, 1, true);
	x = gen_relu(g, "relu4", x);
	x = gen_conv_sq(g, "conv5", x, 256, 3, 1, 1, true);
	x = gen_relu(g, "relu5", x);
	x = gen_maxpool(g, "pool5", x, 3, 2, 0, false);
	x = gen_adaptive_avgpool(g, "avgpool", x, 6, 6);
	x = gen_flatten(g, x);
	/* classifier: Dropout, Linear, ReLU, Dropout, Linear, ReLU, Linear */
	x = gen_dropout(g, "drop6", x, 0.5);
	x = gen_linear(g, "fc6", x, 4096, true);
	x = gen_relu(g, "relu6", x);
	x = gen_dropout(g, "drop7", x, 0.5);
	x = gen_linear(g, "fc7", x, 4096, true);
	x = gen_relu(g, "relu7", x);
	x = gen_linear(g, "fc8", x, 1000, true);
	return gen_finish(g, x, err);
}

/* ---- VGG ------------------------------------------------------------- */

struct gen_tensor gen_vgg_head(struct gen *g, struct gen_tensor x)
{
	x = gen_linear(g, "fc6", x, 4096, true);
	x = gen_relu(g, "relu6", x);
	x = gen_dropout(g, "drop6", x, 0.5);
	x = gen_linear(g, "fc7", x, 4096, true);
	x = gen_relu(g, "relu7", x);
	x = gen_dropout(g, "drop7", x, 0.5);
	return gen_linear(g, "fc8", x, 1000, true);
}

/* VGG-16 (configuration D) with `extra` more 3x3 convolutions (+ ReLU)
 * at the end of each of its five groups, before the group's max pool:
 * the vDNN++ paper's VGG-116 (extra = 20: 13 + 5*20 = 113 convolutions
 * and 3 fully connected layers) and VGG-191 (extra = 35: 188 + 3). The
 * added layers keep the group's width (64, 128, 256, 512, 512), stride 1,
 * pad 1, with bias, as VGG's own. The classifier is torchvision's:
 * Linear, ReLU, Dropout, Linear, ReLU, Dropout, Linear. */
static struct wl_workload *vgg(const char *name, const struct wl_gen_args *a,
			       int extra, gms_err *err)
{
	static const int width[5] = {64, 128, 256, 512, 512};
	static const int convs[5] = {2, 2, 3, 3, 3};
	char n1[64], n2[64];
	struct gen *g = gen_new(name, a, err);
	if (!g)
		return NULL;
	struct gen_tensor x = gen_input(g, "input", 3, a->size, a->size);
	for (int grp = 0; grp < 5; grp++) {
		for (int i = 1; i <= convs[grp] + extra; i++) {
			gen_fmt(n1, sizeof n1, "conv%d_%d", grp + 1, i);
			gen_fmt(n2, sizeof n2, "relu%d_%d", grp + 1, i);
			x = gen_conv_sq(g, n1, x, width[grp], 3, 1, 1, true);
			x = gen_relu(g, n2, x);
		}
		gen_fmt(n1, sizeof n1, "pool%d", grp + 1);
		x = gen_maxpool(g, n1, x, 2, 2, 0, false);
	}
	x = gen_adaptive_avgpool(g, "avgpool", x, 7, 7);
	return gen_finish(g, gen_vgg_head(g, gen_flatten(g, x)), err);
}

struct wl_workload *gen_build_vgg16(const struct wl_gen_args *a,
				    gms_err *err);
struct wl_workload *gen_build_vgg16(const struct wl_gen_args *a,
				    gms_err *err)
{
	if (a->framework == WL_FW_CAFFE)
		return gen_caffe_vgg16(a, err);
	return vgg("vgg16", a, 0, err);
}

struct wl_workload *gen_build_vgg116(const struct wl_gen_args *a,
				     gms_err *err);
struct wl_workload *gen_build_vgg116(const struct wl_gen_args *a,
				     gms_err *err)
{
	return vgg("vgg116", a, 20, err);
}

struct wl_workload *gen_build_vgg191(const struct wl_gen_args *a,
				     gms_err *err);
struct wl_workload *gen_build_vgg191(const struct wl_gen_args *a,
				     gms_err *err)
{
	return vgg("vgg191", a, 35, err);
}

/* ---- vDNN++ Table III ------------------------------------------------ */

/* The constructed network of the vDNN++ paper's Table III ("CONV_2 has
 * 1x1 conv (fast compute) interspersed among 5x5 conv (long compute)"),
 * at 224x224x3 as in the paper (other sizes scale the same layers):
 *   CONV_1   3x3, 64 (pad 1)                        -> S x S x 64
 *   CONV_2   [1x1, 64; 5x5, 64 (pad 2)] x 5         -> S x S x 64
 *   POOL_1   max pool, S x S window                 -> 1 x 1 x 64
 *   CONV_3   1x1, 3                                 -> 1 x 1 x 3
 *   FC_1     2 outputs; SOFTMAX_1 (the loss)
 * The table lists no activations; a ReLU follows every convolution, as
 * in VGG (the paper's library is nn.Sequential-like; this is our
 * reading). Convolutions and the FC layer have biases. */
struct wl_workload *gen_build_vdnnpp_table3(const struct wl_gen_args *a,
					    gms_err *err);
struct wl_workload *gen_build_vdnnpp_table3(const struct wl_gen_args *a,
					    gms_err *err)
{
	char n1[64];
	struct gen *g = gen_new("vdnnpp_table3", a, err);
	if (!g)
		return NULL;
	struct gen_tensor x = gen_input(g, "input", 3, a->size, a->size);
	x = gen_conv_sq(g, "conv1", x, 64, 3, 1, 1, true);
	x = gen_relu(g, "relu1", x);
	for (int i = 1; i <= 5; i++) {
		gen_fmt(n1, sizeof n1, "conv2_%da", i);
		x = gen_conv_sq(g, n1, x, 64, 1, 1, 0, true);
		gen_fmt(n1, sizeof n1, "relu2_%da", i);
		x = gen_relu(g, n1, x);
		gen_fmt(n1, sizeof n1, "conv2_%db", i);
		x = gen_conv_sq(g, n1, x, 64, 5, 1, 2, true);
		gen_fmt(n1, sizeof n1, "relu2_%db", i);
		x = gen_relu(g, n1, x);
	}
	x = gen_maxpool(g, "pool1", x, a->size, a->size, 0, false);
	x = gen_conv_sq(g, "conv3", x, 3, 1, 1, 0, true);
	x = gen_relu(g, "relu3", x);
	x = gen_flatten(g, x);
	x = gen_linear(g, "fc1", x, 2, true);
	return gen_finish(g, x, err);
}
