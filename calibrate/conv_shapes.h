/*
 * conv_shapes.h - the convolution shapes calibrate-gpu measures
 * (calibrate/gpu_bench.cu): every distinct forward convolution of the
 * shipped AlexNet, VGG-16 and ResNet-50 generators (torchvision
 * conventions; tests/test_calib.c checks that none is missing), at the
 * --batch given. Plain C, included by the CUDA program and the test.
 */
#ifndef GMS_CONV_SHAPES_H
#define GMS_CONV_SHAPES_H

struct cal_conv_shape {
	const char *name;		   /* layer name, as in the CSV */
	int c, h, w, k, r, s, stride, pad; /* channels in, input plane,
					      channels out, filter,
					      stride, padding */
};
static const struct cal_conv_shape cal_conv_shapes[] = {
	{"alexnet.conv1", 3, 224, 224, 64, 11, 11, 4, 2},
	{"alexnet.conv2", 64, 27, 27, 192, 5, 5, 1, 2},
	{"alexnet.conv3", 192, 13, 13, 384, 3, 3, 1, 1},
	{"alexnet.conv4", 384, 13, 13, 256, 3, 3, 1, 1},
	{"alexnet.conv5", 256, 13, 13, 256, 3, 3, 1, 1},
	{"vgg16.conv1_1", 3, 224, 224, 64, 3, 3, 1, 1},
	{"vgg16.conv1_2", 64, 224, 224, 64, 3, 3, 1, 1},
	{"vgg16.conv2_1", 64, 112, 112, 128, 3, 3, 1, 1},
	{"vgg16.conv2_2", 128, 112, 112, 128, 3, 3, 1, 1},
	{"vgg16.conv3_1", 128, 56, 56, 256, 3, 3, 1, 1},
	{"vgg16.conv3_2", 256, 56, 56, 256, 3, 3, 1, 1},
	{"vgg16.conv4_1", 256, 28, 28, 512, 3, 3, 1, 1},
	{"vgg16.conv4_2", 512, 28, 28, 512, 3, 3, 1, 1},
	{"vgg16.conv5_1", 512, 14, 14, 512, 3, 3, 1, 1},
	{"resnet50.conv1", 3, 224, 224, 64, 7, 7, 2, 3},
	{"resnet50.l1.c1", 64, 56, 56, 64, 1, 1, 1, 0},
	{"resnet50.l1.c2", 64, 56, 56, 64, 3, 3, 1, 1},
	{"resnet50.l1.c3", 64, 56, 56, 256, 1, 1, 1, 0},
	{"resnet50.l1.c1b", 256, 56, 56, 64, 1, 1, 1, 0},
	{"resnet50.l2.c1", 256, 56, 56, 128, 1, 1, 1, 0},
	{"resnet50.l2.c2s", 128, 56, 56, 128, 3, 3, 2, 1},
	{"resnet50.l2.c2", 128, 28, 28, 128, 3, 3, 1, 1},
	{"resnet50.l2.c3", 128, 28, 28, 512, 1, 1, 1, 0},
	{"resnet50.l2.down", 256, 56, 56, 512, 1, 1, 2, 0},
	{"resnet50.l3.c1", 512, 28, 28, 256, 1, 1, 1, 0},
	{"resnet50.l3.c2", 256, 14, 14, 256, 3, 3, 1, 1},
	{"resnet50.l3.c3", 256, 14, 14, 1024, 1, 1, 1, 0},
	{"resnet50.l4.c1", 1024, 14, 14, 512, 1, 1, 1, 0},
	{"resnet50.l4.c2", 512, 7, 7, 512, 3, 3, 1, 1},
	{"resnet50.l4.c3", 512, 7, 7, 2048, 1, 1, 1, 0},
	/* missing until issue 21 (their times came from the class fit):
	 * v1.5's strided 3x3 and downsampling 1x1 of layers 3 and 4, and
	 * the first 1x1 of the later blocks of layers 2 to 4 */
	{"resnet50.l2.c1b", 512, 28, 28, 128, 1, 1, 1, 0},
	{"resnet50.l3.c1b", 1024, 14, 14, 256, 1, 1, 1, 0},
	{"resnet50.l4.c1b", 2048, 7, 7, 512, 1, 1, 1, 0},
	{"resnet50.l3.c2s", 256, 28, 28, 256, 3, 3, 2, 1},
	{"resnet50.l3.down", 512, 28, 28, 1024, 1, 1, 2, 0},
	{"resnet50.l4.c2s", 512, 14, 14, 512, 3, 3, 2, 1},
	{"resnet50.l4.down", 1024, 14, 14, 2048, 1, 1, 2, 0},
};

#endif
