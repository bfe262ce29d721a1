/*
 * gen_caffe.h - Caffe's own network definitions (gen_caffe.c): what the
 * generators alexnet, vgg16, resnet34/50/101/152 and googlenet build when
 * the framework is caffe (each build function dispatches here, so the
 * generator table stays one table).
 */
#ifndef GMS_GEN_CAFFE_H
#define GMS_GEN_CAFFE_H

#include "gen.h"
#include "wl_gen.h"

/* The classifier VGG (torchvision and Caffe) and BVLC AlexNet share:
 * fc6 (4096) -> relu6 -> drop6 (0.5) -> fc7 (4096) -> relu7 -> drop7 ->
 * fc8 (1000), on a flattened x (gen_alexnet_vgg.c). */
struct gen_tensor gen_vgg_head(struct gen *g, struct gen_tensor x);

/* BVLC AlexNet, models/bvlc_alexnet/train_val.prototxt. */
struct wl_workload *gen_caffe_alexnet(const struct wl_gen_args *a,
				      gms_err *err);
/* VGG_ILSVRC_16_layers (the VGG authors' Caffe model). */
struct wl_workload *gen_caffe_vgg16(const struct wl_gen_args *a,
				    gms_err *err);
/* KaimingHe/deep-residual-networks ResNet-50/101/152 (bottleneck) and
 * the same conventions for basic blocks (ResNet-34); blocks per stage. */
struct wl_workload *gen_caffe_resnet(const char *name,
				     const struct wl_gen_args *a,
				     const int blocks[4], bool bottleneck,
				     gms_err *err);
/* BVLC GoogLeNet, models/bvlc_googlenet/train_val.prototxt, with both
 * auxiliary heads. */
struct wl_workload *gen_caffe_googlenet(const struct wl_gen_args *a,
					gms_err *err);

#endif
