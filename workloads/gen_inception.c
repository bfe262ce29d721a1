/*
 * gen_inception.c - the Inception family: GoogLeNet, Inception-v3 and
 * Inception-v4, one training iteration each.
 *
 * Every convolution is a BasicConv2d as the PyTorch references write it:
 * a convolution without bias, batch normalisation (eps 0.001; its gamma
 * and beta are the parameters, the running statistics are buffers and
 * not modelled, gen.h) and a ReLU. Op names are the reference modules'
 * names: "Mixed_5b.branch5x5_2.conv", ".bn", ".relu"; functional pools
 * get names of their own ("Mixed_5b.avgpool"). An Inception block is
 * described by a table of branches (a branch: a list of steps, each a
 * BasicConv2d or a pool, optionally ending in a "fork" of two convolutions
 * that both read the branch and are concatenated, as Inception-v3's E
 * block and Inception-v4's C block do); the block's output is the
 * channel concatenation of its branches (an OT_CONCAT copy, as torch.cat).
 *
 * ---- googlenet: torchvision.models.googlenet (GoogLeNet, Szegedy et
 * al., "Going Deeper with Convolutions", 2014), aux_logits=False,
 * transform_input=False, 1000 classes.
 *
 *   conv1 7x7/2 pad 3, 3 -> 64; maxpool1 3x3/2 ceil; conv2 1x1 64 -> 64;
 *   conv3 3x3 pad 1 -> 192; maxpool2 3x3/2 ceil;
 *   inception3a, 3b; maxpool3 3x3/2 ceil; inception4a..4e; maxpool4
 *   2x2/2 ceil; inception5a, 5b; adaptive avg pool 1x1; dropout 0.2;
 *   fc 1024 -> 1000 (bias).
 *   An Inception module (in, c1, c3r, c3, c5r, c5, pp):
 *     branch1   1x1 -> c1
 *     branch2   1x1 -> c3r, 3x3 pad 1 -> c3
 *     branch3   1x1 -> c5r, 3x3 pad 1 -> c5   (torchvision's known bug:
 *               a 3x3 kernel where the paper has 5x5, vision#906; the
 *               published weights and figures are for 3x3)
 *     branch4   maxpool 3x3/1 pad 1 ceil, 1x1 -> pp
 *   Parameters: in*(c1+c3r+c5r+pp) + 9*(c3r*c3 + c5r*c5) + 2*(c1+c3r+
 *   c3+c5r+c5+pp) (the 2x: batchnorm gamma and beta):
 *     conv1 9,536  conv2 4,224  conv3 110,976
 *     3a (192; 64, 96,128, 16, 32, 32)    155,872
 *     3b (256; 128,128,192, 32, 96, 64)   340,224
 *     4a (480; 192, 96,208, 16, 48, 64)   364,512
 *     4b (512; 160,112,224, 24, 64, 64)   425,232
 *     4c (512; 128,128,256, 24, 64, 64)   486,192
 *     4d (512; 112,144,288, 32, 64, 64)   573,312
 *     4e (528; 256,160,320, 32,128,128)   803,840
 *     5a (832; 256,160,320, 32,128,128)   978,944
 *     5b (832; 384,192,384, 48,128,128) 1,347,040
 *     fc 1024*1000 + 1000               1,025,000
 *   total 6,624,904 (torchvision's published num_params).
 *   MACs per image at 224 (spatial 112, 56, 28, 14, 7): conv1
 *   118,013,952; conv2 12,845,056; conv3 346,816,512; 3a 121,626,624;
 *   3b 265,732,096; 4a 71,199,744; 4b 83,091,456; 4c 95,033,344; 4d
 *   112,093,184; 4e 157,151,232; 5a 47,867,904; 5b 65,881,088; fc
 *   1,024,000: 1,498,376,192 (torchvision: 1.498 GFLOPS, i.e. GMACs).
 *   The two auxiliary classifiers torchvision builds by default are left
 *   out: the published figures and the pretrained model have none.
 *
 * ---- inception_v3: torchvision.models.inception_v3 (Inception3,
 * Szegedy et al., "Rethinking the Inception Architecture", 2015) WITH its
 * auxiliary classifier, transform_input=False, dropout 0.5, 1000 classes.
 *
 *   Conv2d_1a_3x3 3x3/2 -> 32; Conv2d_2a_3x3 3x3 -> 32; Conv2d_2b_3x3
 *   3x3 pad 1 -> 64; maxpool1 3x3/2; Conv2d_3b_1x1 -> 80; Conv2d_4a_3x3
 *   3x3 -> 192; maxpool2 3x3/2 (all pools floor mode);
 *   Mixed_5b, 5c, 5d: InceptionA(pool_features 32, 64, 64)
 *     branch1x1 1x1 64 | branch5x5_1 1x1 48, _2 5x5 pad 2 64 |
 *     branch3x3dbl_1 1x1 64, _2 3x3 pad 1 96, _3 3x3 pad 1 96 |
 *     avg pool 3x3/1 pad 1, branch_pool 1x1 pool_features
 *   Mixed_6a: InceptionB: branch3x3 3x3/2 384 | branch3x3dbl_1 1x1 64,
 *     _2 3x3 pad 1 96, _3 3x3/2 96 | max pool 3x3/2
 *   Mixed_6b..6e: InceptionC(c7 = 128, 160, 160, 192): branch1x1 192 |
 *     branch7x7_1 1x1 c7, _2 1x7 c7, _3 7x1 192 | branch7x7dbl_1 1x1 c7,
 *     _2 7x1 c7, _3 1x7 c7, _4 7x1 c7, _5 1x7 192 | avg pool 3x3/1 pad 1,
 *     branch_pool 1x1 192   (1x7 pads (0, 3), 7x1 pads (3, 0))
 *   AuxLogits (on Mixed_6e's output): avg pool 5x5/3, conv0 1x1 128,
 *     conv1 5x5 768, adaptive avg pool 1x1, fc 768 -> 1000 (bias)
 *   Mixed_7a: InceptionD: branch3x3_1 1x1 192, _2 3x3/2 320 |
 *     branch7x7x3_1 1x1 192, _2 1x7 192, _3 7x1 192, _4 3x3/2 192 |
 *     max pool 3x3/2
 *   Mixed_7b, 7c: InceptionE: branch1x1 320 | branch3x3_1 1x1 384, then
 *     cat(_2a 1x3 384, _2b 3x1 384) | branch3x3dbl_1 1x1 448, _2 3x3 pad
 *     1 384, then cat(_3a 1x3 384, _3b 3x1 384) | avg pool 3x3/1 pad 1,
 *     branch_pool 1x1 192
 *   avgpool (adaptive 1x1), dropout 0.5, fc 2048 -> 1000 (bias).
 *   Parameters by block (convolution weights + 2 per output channel):
 *     stem 172,672; 5b 255,904; 5c 277,472; 5d 285,152; 6a 1,153,280;
 *     6b 1,297,408; 6c 1,691,008; 6d 1,691,008; 6e 2,141,952;
 *     AuxLogits 3,326,696 (conv0 768*128 + 256 = 98,560; conv1
 *     128*768*25 + 1536 = 2,459,136; fc 768,000 + 1000 = 769,000);
 *     7a 1,698,304; 7b 5,044,608; 7c 6,076,800; fc 2,049,000
 *   total 27,161,264 (torchvision's published num_params; 23,834,568
 *   without AuxLogits).
 *   MACs per image at 299: 5,713,216,096 without the aux head
 *   (torchvision: 5.713 GFLOPS, measured in eval mode, without it) plus
 *   AuxLogits 5,683,200 (conv0 25*768*128, conv1 25*128*768, fc 768,000):
 *   5,718,899,296.
 *   The auxiliary head runs in training and its loss is added to the main
 *   one (torchvision's training recipe: loss + 0.4 * aux_loss; the 0.4
 *   scaling is not a separate kernel here): it is built as a second branch
 *   from Mixed_6e's output with a loss of its own ("AuxLogits.loss"), so
 *   Mixed_6e's output gradient is the sum of two contributions.
 *
 * ---- inception_v4: Inception-v4 (Szegedy et al., "Inception-v4,
 * Inception-ResNet and the Impact of Residual Connections on Learning",
 * 2016) as timm.models.inception_v4 builds it (timm's file is Cadene's
 * pretrained-models.pytorch inceptionv4.py with the fixed 8x8 average pool
 * replaced by a global one; the layers are identical). 1000 classes, no
 * dropout (timm's default drop_rate 0; Cadene has none).
 *
 *   features.0 3x3/2 -> 32; features.1 3x3 -> 32; features.2 3x3 pad 1
 *     -> 64
 *   features.3 Mixed_3a: cat(maxpool 3x3/2, conv 3x3/2 96)       -> 160
 *   features.4 Mixed_4a: branch0 1x1 64, 3x3 96 | branch1 1x1 64, 1x7
 *     64, 7x1 64, 3x3 96                                          -> 192
 *   features.5 Mixed_5a: cat(conv 3x3/2 192, maxpool 3x3/2)      -> 384
 *   features.6-9 Inception_A: branch0 1x1 96 | branch1 1x1 64, 3x3 pad 1
 *     96 | branch2 1x1 64, 3x3 pad 1 96, 3x3 pad 1 96 | branch3 avg pool
 *     3x3/1 pad 1, 1x1 96                                         -> 384
 *   features.10 Reduction_A: branch0 3x3/2 384 | branch1 1x1 192, 3x3
 *     pad 1 224, 3x3/2 256 | branch2 maxpool 3x3/2                -> 1024
 *   features.11-17 Inception_B: branch0 1x1 384 | branch1 1x1 192, 1x7
 *     224, 7x1 256 | branch2 1x1 192, 7x1 192, 1x7 224, 7x1 224, 1x7 256
 *     | branch3 avg pool 3x3/1 pad 1, 1x1 128                     -> 1024
 *   features.18 Reduction_B: branch0 1x1 192, 3x3/2 192 | branch1 1x1
 *     256, 1x7 256, 7x1 320, 3x3/2 320 | branch2 maxpool 3x3/2    -> 1536
 *   features.19-21 Inception_C: branch0 1x1 256 | branch1_0 1x1 384,
 *     cat(branch1_1a 1x3 256, branch1_1b 3x1 256) | branch2_0 1x1 384,
 *     branch2_1 3x1 448, branch2_2 1x3 512, cat(branch2_3a 1x3 256,
 *     branch2_3b 3x1 256) | branch3 avg pool 3x3/1 pad 1, 1x1 256 -> 1536
 *   global average pool, last_linear 1536 -> 1000 (bias).
 *   Parameters: stem 28,768; Mixed_3a 55,488; Mixed_4a 189,312; Mixed_5a
 *   332,160; Inception_A 317,632 (x4); Reduction_A 2,306,112;
 *   Inception_B 2,936,256 (x7); Reduction_B 2,747,392; Inception_C
 *   4,553,088 (x3); last_linear 1,537,000: total 42,679,816 (timm
 *   inception_v4, 1000 classes: "Params (M) 42.7"; Cadene's 1001-class
 *   model has 1,537 more).
 *   MACs per image at 299: 12,253,974,624 (timm: "GMACs 12.3").
 *   The branch average pools exclude the padding (count_include_pad=
 *   False) in the reference; gen_avgpool counts it: the same shapes, ops
 *   and bytes, a negligible FLOP difference.
 *
 * ---- Smallest input. Output sides: conv and floor pool (n + 2p - k)/s
 * + 1, ceil pool rounded up (a window starting in the right padding
 * dropped); each must stay >= 1.
 *   googlenet: 15 -> 8 (conv1) -> 4 (maxpool1, ceil) -> 2 (maxpool2) ->
 *     1 (maxpool3: ceil((2-3)/2) + 1) -> 1 (maxpool4); 14 -> 7 -> 3 -> 1
 *     -> 0. Minimum 15 (torchvision's min_size for googlenet).
 *   inception_v3: the aux head's 5x5 convolution needs a 5x5 input, i.e.
 *     17x17 at Mixed_6e (avg pool 5x5/3: (17-5)/3 + 1 = 5), i.e. 35 after
 *     maxpool2, 71 after Conv2d_4a, 73 after maxpool1, 147 after
 *     Conv2d_2a, 149 after Conv2d_1a: a 299-pixel image (298 gives 16 at
 *     Mixed_6e, 4 after the aux pool). Without the aux head the minimum
 *     would be 75 (torchvision's min_size, given for inference).
 *   inception_v4: 75 -> 37 -> 35 -> 35 -> 17 (Mixed_3a) -> 15 (Mixed_4a)
 *     -> 7 (Mixed_5a) -> 3 (Reduction_A) -> 1 (Reduction_B); 74 -> 36 ->
 *     34 -> 34 -> 16 -> 14 -> 6 -> 2 -> 0. Minimum 75.
 */
#include "gen_inception.h"

#include "gen.h"
#include "gen_caffe.h"

#include <stdio.h>

#define N_CLASSES 1000
#define MAX_STEPS 5    /* longest branch: Inception-v3 C's branch7x7dbl */
#define MAX_BRANCHES 4
#define NAME_LEN 128

/* ---- Block tables ---------------------------------------------------- */

enum step_kind { ST_END, ST_CONV, ST_MAXPOOL, ST_AVGPOOL };

/* One layer of a branch: a BasicConv2d or a pool. */
struct step {
	enum step_kind kind; /* ST_END ends a list */
	const char *name;    /* module name within the block */
	int cout;	     /* convolution: output channels */
	int kh, kw;	     /* kernel (a pool's window is kh x kh) */
	int stride;	     /* both axes */
	int ph, pw;	     /* zero padding */
	bool ceil;	     /* pools: ceil_mode */
};

#define CONV(n, co, k_h, k_w, s, p_h, p_w)                                   \
	{ ST_CONV, n, co, k_h, k_w, s, p_h, p_w, false }
#define CONV1(n, co) CONV(n, co, 1, 1, 1, 0, 0)		 /* 1x1 */
#define CONV3(n, co, s, p) CONV(n, co, 3, 3, s, p, p)	 /* 3x3 */
#define CONV1x7(n, co) CONV(n, co, 1, 7, 1, 0, 3)	 /* same size */
#define CONV7x1(n, co) CONV(n, co, 7, 1, 1, 3, 0)
#define CONV1x3(n, co) CONV(n, co, 1, 3, 1, 0, 1)
#define CONV3x1(n, co) CONV(n, co, 3, 1, 1, 1, 0)
#define MAXPOOL(n, k, s, p, c) { ST_MAXPOOL, n, 0, k, k, s, p, p, c }
#define AVGPOOL(n, k, s, p) { ST_AVGPOOL, n, 0, k, k, s, p, p, false }

/* A branch: its steps in order, then optionally a fork of two
 * convolutions reading the last step's output, concatenated as cat_name. */
struct branch {
	struct step s[MAX_STEPS];
	struct step fork[2]; /* kind ST_END: no fork */
	const char *cat_name;
};

/* An Inception block: its branches (a branch whose first step is ST_END
 * ends the list), concatenated in order as "<block>.cat". */
struct block {
	struct branch br[MAX_BRANCHES];
};

/* A block of a network's table: its name and how to make it. */
struct block_entry {
	const char *name;
	struct block (*make)(int arg);
	int arg; /* the block's parameter (pool features, c7), if any */
};

/* ---- Emitting -------------------------------------------------------- */

/* "prefix.name.suffix", leaving out an empty prefix or suffix. */
static const char *join(char *buf, const char *prefix, const char *name,
			const char *suffix)
{
	gen_fmt(buf, NAME_LEN, "%s%s%s%s%s", prefix, *prefix ? "." : "",
		 name, *suffix ? "." : "", suffix);
	return buf;
}

/* BasicConv2d: conv (no bias) + batchnorm + ReLU, ops P.conv, P.bn,
 * P.relu where P = prefix.name. */
static struct gen_tensor basic_conv(struct gen *g, const char *prefix,
				    const struct step *s, struct gen_tensor x)
{
	char nm[NAME_LEN];
	x = gen_conv(g, join(nm, prefix, s->name, "conv"), x, s->cout, s->kh,
		     s->kw, s->stride, s->ph, s->pw, false);
	x = gen_batchnorm(g, join(nm, prefix, s->name, "bn"), x);
	return gen_relu(g, join(nm, prefix, s->name, "relu"), x);
}

static struct gen_tensor emit_step(struct gen *g, const char *prefix,
				   const struct step *s, struct gen_tensor x)
{
	char nm[NAME_LEN];
	switch (s->kind) {
	case ST_CONV:
		return basic_conv(g, prefix, s, x);
	case ST_MAXPOOL:
		return gen_maxpool(g, join(nm, prefix, s->name, ""), x, s->kh,
				   s->stride, s->ph, s->ceil);
	case ST_AVGPOOL:
		return gen_avgpool(g, join(nm, prefix, s->name, ""), x, s->kh,
				   s->stride, s->ph, s->ceil);
	case ST_END:
		break;
	}
	return x;
}

/* Steps s[0..n) up to the first ST_END, in sequence. */
static struct gen_tensor emit_steps(struct gen *g, const char *prefix,
				    const struct step *s, size_t n,
				    struct gen_tensor x)
{
	for (size_t i = 0; i < n && s[i].kind != ST_END; i++)
		x = emit_step(g, prefix, &s[i], x);
	return x;
}

/* One Inception block on x; returns the concatenation of its branches. */
static struct gen_tensor emit_block(struct gen *g, const char *name,
				    const struct block *b, struct gen_tensor x)
{
	struct gen_tensor outs[MAX_BRANCHES];
	uint32_t n = 0;
	char nm[NAME_LEN];
	for (; n < MAX_BRANCHES && b->br[n].s[0].kind != ST_END; n++) {
		const struct branch *br = &b->br[n];
		struct gen_tensor y = emit_steps(g, name, br->s, MAX_STEPS, x);
		if (br->fork[0].kind != ST_END) {
			struct gen_tensor f[2] = {
				emit_step(g, name, &br->fork[0], y),
				emit_step(g, name, &br->fork[1], y)};
			y = gen_concat(g, join(nm, name, br->cat_name, "cat"),
				       f, 2);
		}
		outs[n] = y;
	}
	return gen_concat(g, join(nm, name, "cat", ""), outs, n);
}

/* The blocks of a table, in order. */
static struct gen_tensor emit_blocks(struct gen *g,
				     const struct block_entry *t, size_t n,
				     struct gen_tensor x)
{
	for (size_t i = 0; i < n; i++) {
		struct block b = t[i].make(t[i].arg);
		x = emit_block(g, t[i].name, &b, x);
	}
	return x;
}

/* a->size resolved against the default and checked against the minimum;
 * 0 with err when too small. */
static int64_t image_size(const struct wl_gen_args *a, const char *net,
			  int64_t def, int64_t min, const char *why,
			  gms_err *err)
{
	int64_t size = a->size ? a->size : def;
	if (size < min) {
		gms_errf(err,
			 "%s: image size %lld is too small (at least %lld: %s)",
			 net, (long long)size, (long long)min, why);
		return 0;
	}
	return size;
}

/* Open the context at the resolved size and add the input image. */
static struct gen *open_net(const char *net, const struct wl_gen_args *a,
			    int64_t size, struct gen_tensor *x, gms_err *err)
{
	struct wl_gen_args args = *a;
	args.size = size;
	struct gen *g = gen_new(net, &args, err);
	if (g)
		*x = gen_input(g, "input", 3, size, size);
	return g;
}

/* ---- GoogLeNet ------------------------------------------------------- */

/* torchvision's Inception(in, ch1x1, ch3x3red, ch3x3, ch5x5red, ch5x5,
 * pool_proj); the "5x5" branch has a 3x3 kernel (see the top). */
struct googlenet_module {
	const char *name;
	int c1, c3r, c3, c5r, c5, pp;
	const char *pool_after; /* max pool after the module, or NULL */
	int pool_k;		/* its window (stride 2, ceil mode) */
};

static const struct googlenet_module googlenet_modules[] = {
	{"inception3a", 64, 96, 128, 16, 32, 32, NULL, 0},
	{"inception3b", 128, 128, 192, 32, 96, 64, "maxpool3", 3},
	{"inception4a", 192, 96, 208, 16, 48, 64, NULL, 0},
	{"inception4b", 160, 112, 224, 24, 64, 64, NULL, 0},
	{"inception4c", 128, 128, 256, 24, 64, 64, NULL, 0},
	{"inception4d", 112, 144, 288, 32, 64, 64, NULL, 0},
	{"inception4e", 256, 160, 320, 32, 128, 128, "maxpool4", 2},
	{"inception5a", 256, 160, 320, 32, 128, 128, NULL, 0},
	{"inception5b", 384, 192, 384, 48, 128, 128, NULL, 0},
};

static struct block googlenet_block(const struct googlenet_module *m)
{
	return (struct block){.br = {
		{.s = {CONV1("branch1", m->c1)}},
		{.s = {CONV1("branch2.0", m->c3r),
		       CONV3("branch2.1", m->c3, 1, 1)}},
		{.s = {CONV1("branch3.0", m->c5r),
		       CONV3("branch3.1", m->c5, 1, 1)}},
		{.s = {MAXPOOL("branch4.0", 3, 1, 1, true),
		       CONV1("branch4.1", m->pp)}},
	}};
}

static const struct step googlenet_stem[] = {
	CONV("conv1", 64, 7, 7, 2, 3, 3),
	MAXPOOL("maxpool1", 3, 2, 0, true),
	CONV1("conv2", 64),
	CONV3("conv3", 192, 1, 1),
	MAXPOOL("maxpool2", 3, 2, 0, true),
};

struct wl_workload *wl_gen_googlenet(const struct wl_gen_args *a,
				     gms_err *err)
{
	if (a->framework == WL_FW_CAFFE)
		return gen_caffe_googlenet(a, err);
	int64_t size = image_size(a, "googlenet", GOOGLENET_DEFAULT_SIZE,
				  GOOGLENET_MIN_SIZE,
				  "maxpool3 needs 2x2 after maxpool2", err);
	if (!size)
		return NULL;
	struct gen_tensor x;
	struct gen *g = open_net("googlenet", a, size, &x, err);
	if (!g)
		return NULL;
	x = emit_steps(g, "", googlenet_stem,
		       sizeof googlenet_stem / sizeof *googlenet_stem, x);
	for (size_t i = 0;
	     i < sizeof googlenet_modules / sizeof *googlenet_modules; i++) {
		const struct googlenet_module *m = &googlenet_modules[i];
		struct block b = googlenet_block(m);
		x = emit_block(g, m->name, &b, x);
		if (m->pool_after)
			x = gen_maxpool(g, m->pool_after, x, m->pool_k, 2, 0,
					true);
	}
	x = gen_global_avgpool(g, "avgpool", x);
	x = gen_dropout(g, "dropout", gen_flatten(g, x), 0.2);
	x = gen_linear(g, "fc", x, N_CLASSES, true);
	return gen_finish(g, x, err);
}

/* ---- Inception-v3 ---------------------------------------------------- */

static struct block v3_a(int pool_features)
{
	return (struct block){.br = {
		{.s = {CONV1("branch1x1", 64)}},
		{.s = {CONV1("branch5x5_1", 48),
		       CONV("branch5x5_2", 64, 5, 5, 1, 2, 2)}},
		{.s = {CONV1("branch3x3dbl_1", 64),
		       CONV3("branch3x3dbl_2", 96, 1, 1),
		       CONV3("branch3x3dbl_3", 96, 1, 1)}},
		{.s = {AVGPOOL("avgpool", 3, 1, 1),
		       CONV1("branch_pool", pool_features)}},
	}};
}

static struct block v3_b(int unused)
{
	(void)unused;
	return (struct block){.br = {
		{.s = {CONV3("branch3x3", 384, 2, 0)}},
		{.s = {CONV1("branch3x3dbl_1", 64),
		       CONV3("branch3x3dbl_2", 96, 1, 1),
		       CONV3("branch3x3dbl_3", 96, 2, 0)}},
		{.s = {MAXPOOL("maxpool", 3, 2, 0, false)}},
	}};
}

static struct block v3_c(int c7)
{
	return (struct block){.br = {
		{.s = {CONV1("branch1x1", 192)}},
		{.s = {CONV1("branch7x7_1", c7), CONV1x7("branch7x7_2", c7),
		       CONV7x1("branch7x7_3", 192)}},
		{.s = {CONV1("branch7x7dbl_1", c7),
		       CONV7x1("branch7x7dbl_2", c7),
		       CONV1x7("branch7x7dbl_3", c7),
		       CONV7x1("branch7x7dbl_4", c7),
		       CONV1x7("branch7x7dbl_5", 192)}},
		{.s = {AVGPOOL("avgpool", 3, 1, 1),
		       CONV1("branch_pool", 192)}},
	}};
}

static struct block v3_d(int unused)
{
	(void)unused;
	return (struct block){.br = {
		{.s = {CONV1("branch3x3_1", 192),
		       CONV3("branch3x3_2", 320, 2, 0)}},
		{.s = {CONV1("branch7x7x3_1", 192),
		       CONV1x7("branch7x7x3_2", 192),
		       CONV7x1("branch7x7x3_3", 192),
		       CONV3("branch7x7x3_4", 192, 2, 0)}},
		{.s = {MAXPOOL("maxpool", 3, 2, 0, false)}},
	}};
}

static struct block v3_e(int unused)
{
	(void)unused;
	return (struct block){.br = {
		{.s = {CONV1("branch1x1", 320)}},
		{.s = {CONV1("branch3x3_1", 384)},
		 .fork = {CONV1x3("branch3x3_2a", 384),
			  CONV3x1("branch3x3_2b", 384)},
		 .cat_name = "branch3x3"},
		{.s = {CONV1("branch3x3dbl_1", 448),
		       CONV3("branch3x3dbl_2", 384, 1, 1)},
		 .fork = {CONV1x3("branch3x3dbl_3a", 384),
			  CONV3x1("branch3x3dbl_3b", 384)},
		 .cat_name = "branch3x3dbl"},
		{.s = {AVGPOOL("avgpool", 3, 1, 1),
		       CONV1("branch_pool", 192)}},
	}};
}

static const struct step v3_stem[] = {
	CONV3("Conv2d_1a_3x3", 32, 2, 0),
	CONV3("Conv2d_2a_3x3", 32, 1, 0),
	CONV3("Conv2d_2b_3x3", 64, 1, 1),
	MAXPOOL("maxpool1", 3, 2, 0, false),
	CONV1("Conv2d_3b_1x1", 80),
	CONV3("Conv2d_4a_3x3", 192, 1, 0),
	MAXPOOL("maxpool2", 3, 2, 0, false),
};

/* Up to Mixed_6e, where the auxiliary head branches off. */
static const struct block_entry v3_blocks_17[] = {
	{"Mixed_5b", v3_a, 32},	 {"Mixed_5c", v3_a, 64},
	{"Mixed_5d", v3_a, 64},	 {"Mixed_6a", v3_b, 0},
	{"Mixed_6b", v3_c, 128}, {"Mixed_6c", v3_c, 160},
	{"Mixed_6d", v3_c, 160}, {"Mixed_6e", v3_c, 192},
};

static const struct block_entry v3_blocks_8[] = {
	{"Mixed_7a", v3_d, 0},
	{"Mixed_7b", v3_e, 0},
	{"Mixed_7c", v3_e, 0},
};

/* InceptionAux up to its convolutions (then adaptive avg pool 1x1 and
 * fc 768 -> classes, in wl_gen_inception_v3). */
static const struct step v3_aux[] = {
	AVGPOOL("avgpool", 5, 3, 0),
	CONV1("conv0", 128),
	CONV("conv1", 768, 5, 5, 1, 0, 0),
};

struct wl_workload *wl_gen_inception_v3(const struct wl_gen_args *a,
					gms_err *err)
{
	int64_t size = image_size(
		a, "inception_v3", INCEPTION_V3_DEFAULT_SIZE,
		INCEPTION_V3_MIN_SIZE,
		"the auxiliary head's 5x5 conv needs 17x17 at Mixed_6e", err);
	if (!size)
		return NULL;
	struct gen_tensor x;
	struct gen *g = open_net("inception_v3", a, size, &x, err);
	if (!g)
		return NULL;
	x = emit_steps(g, "", v3_stem, sizeof v3_stem / sizeof *v3_stem, x);
	x = emit_blocks(g, v3_blocks_17,
			sizeof v3_blocks_17 / sizeof *v3_blocks_17, x);

	struct gen_tensor aux = emit_steps(
		g, "AuxLogits", v3_aux, sizeof v3_aux / sizeof *v3_aux, x);
	aux = gen_global_avgpool(g, "AuxLogits.adaptive_avgpool", aux);
	aux = gen_linear(g, "AuxLogits.fc", gen_flatten(g, aux), N_CLASSES,
			 true);

	x = emit_blocks(g, v3_blocks_8,
			sizeof v3_blocks_8 / sizeof *v3_blocks_8, x);
	x = gen_global_avgpool(g, "avgpool", x);
	x = gen_dropout(g, "dropout", x, 0.5);
	x = gen_linear(g, "fc", gen_flatten(g, x), N_CLASSES, true);
	gen_loss(g, "loss", x);
	gen_loss(g, "AuxLogits.loss", aux);
	return gen_finish(g, gen_none(), err);
}

/* ---- Inception-v4 ---------------------------------------------------- */

static struct block v4_mixed_3a(int unused)
{
	(void)unused;
	return (struct block){.br = {
		{.s = {MAXPOOL("maxpool", 3, 2, 0, false)}},
		{.s = {CONV3("conv", 96, 2, 0)}},
	}};
}

static struct block v4_mixed_4a(int unused)
{
	(void)unused;
	return (struct block){.br = {
		{.s = {CONV1("branch0.0", 64), CONV3("branch0.1", 96, 1, 0)}},
		{.s = {CONV1("branch1.0", 64), CONV1x7("branch1.1", 64),
		       CONV7x1("branch1.2", 64),
		       CONV3("branch1.3", 96, 1, 0)}},
	}};
}

static struct block v4_mixed_5a(int unused)
{
	(void)unused;
	return (struct block){.br = {
		{.s = {CONV3("conv", 192, 2, 0)}},
		{.s = {MAXPOOL("maxpool", 3, 2, 0, false)}},
	}};
}

static struct block v4_inception_a(int unused)
{
	(void)unused;
	return (struct block){.br = {
		{.s = {CONV1("branch0", 96)}},
		{.s = {CONV1("branch1.0", 64), CONV3("branch1.1", 96, 1, 1)}},
		{.s = {CONV1("branch2.0", 64), CONV3("branch2.1", 96, 1, 1),
		       CONV3("branch2.2", 96, 1, 1)}},
		{.s = {AVGPOOL("branch3.0", 3, 1, 1), CONV1("branch3.1", 96)}},
	}};
}

static struct block v4_reduction_a(int unused)
{
	(void)unused;
	return (struct block){.br = {
		{.s = {CONV3("branch0", 384, 2, 0)}},
		{.s = {CONV1("branch1.0", 192), CONV3("branch1.1", 224, 1, 1),
		       CONV3("branch1.2", 256, 2, 0)}},
		{.s = {MAXPOOL("branch2", 3, 2, 0, false)}},
	}};
}

static struct block v4_inception_b(int unused)
{
	(void)unused;
	return (struct block){.br = {
		{.s = {CONV1("branch0", 384)}},
		{.s = {CONV1("branch1.0", 192), CONV1x7("branch1.1", 224),
		       CONV7x1("branch1.2", 256)}},
		{.s = {CONV1("branch2.0", 192), CONV7x1("branch2.1", 192),
		       CONV1x7("branch2.2", 224), CONV7x1("branch2.3", 224),
		       CONV1x7("branch2.4", 256)}},
		{.s = {AVGPOOL("branch3.0", 3, 1, 1),
		       CONV1("branch3.1", 128)}},
	}};
}

static struct block v4_reduction_b(int unused)
{
	(void)unused;
	return (struct block){.br = {
		{.s = {CONV1("branch0.0", 192), CONV3("branch0.1", 192, 2, 0)}},
		{.s = {CONV1("branch1.0", 256), CONV1x7("branch1.1", 256),
		       CONV7x1("branch1.2", 320),
		       CONV3("branch1.3", 320, 2, 0)}},
		{.s = {MAXPOOL("branch2", 3, 2, 0, false)}},
	}};
}

static struct block v4_inception_c(int unused)
{
	(void)unused;
	return (struct block){.br = {
		{.s = {CONV1("branch0", 256)}},
		{.s = {CONV1("branch1_0", 384)},
		 .fork = {CONV1x3("branch1_1a", 256),
			  CONV3x1("branch1_1b", 256)},
		 .cat_name = "branch1"},
		{.s = {CONV1("branch2_0", 384), CONV3x1("branch2_1", 448),
		       CONV1x3("branch2_2", 512)},
		 .fork = {CONV1x3("branch2_3a", 256),
			  CONV3x1("branch2_3b", 256)},
		 .cat_name = "branch2"},
		{.s = {AVGPOOL("branch3.0", 3, 1, 1),
		       CONV1("branch3.1", 256)}},
	}};
}

static const struct step v4_stem[] = {
	CONV3("features.0", 32, 2, 0),
	CONV3("features.1", 32, 1, 0),
	CONV3("features.2", 64, 1, 1),
};

static const struct block_entry v4_blocks[] = {
	{"features.3", v4_mixed_3a, 0},	    {"features.4", v4_mixed_4a, 0},
	{"features.5", v4_mixed_5a, 0},	    {"features.6", v4_inception_a, 0},
	{"features.7", v4_inception_a, 0},  {"features.8", v4_inception_a, 0},
	{"features.9", v4_inception_a, 0},  {"features.10", v4_reduction_a, 0},
	{"features.11", v4_inception_b, 0}, {"features.12", v4_inception_b, 0},
	{"features.13", v4_inception_b, 0}, {"features.14", v4_inception_b, 0},
	{"features.15", v4_inception_b, 0}, {"features.16", v4_inception_b, 0},
	{"features.17", v4_inception_b, 0}, {"features.18", v4_reduction_b, 0},
	{"features.19", v4_inception_c, 0}, {"features.20", v4_inception_c, 0},
	{"features.21", v4_inception_c, 0},
};

struct wl_workload *wl_gen_inception_v4(const struct wl_gen_args *a,
					gms_err *err)
{
	int64_t size = image_size(a, "inception_v4", INCEPTION_V4_DEFAULT_SIZE,
				  INCEPTION_V4_MIN_SIZE,
				  "Reduction_B needs 3x3 after Reduction_A",
				  err);
	if (!size)
		return NULL;
	struct gen_tensor x;
	struct gen *g = open_net("inception_v4", a, size, &x, err);
	if (!g)
		return NULL;
	x = emit_steps(g, "", v4_stem, sizeof v4_stem / sizeof *v4_stem, x);
	x = emit_blocks(g, v4_blocks, sizeof v4_blocks / sizeof *v4_blocks, x);
	x = gen_global_avgpool(g, "global_pool", x);
	x = gen_linear(g, "last_linear", gen_flatten(g, x), N_CLASSES, true);
	return gen_finish(g, x, err);
}
