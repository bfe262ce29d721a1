/*
 * wl_gen.c - the table of network generators and its look-ups (wl_gen.h).
 *
 * Generators live in workloads/gen_*.c and are built with the layer
 * builder of gen.h; each file exports its build functions through the
 * declarations below. To add a network: write its build function, declare
 * it here and add a line to wl_gens[].
 */
#include "wl_gen.h"
#include "gen_dense_bert.h" /* densenet121, bert_base, bert_large */
#include "gen_inception.h" /* googlenet, inception_v3, inception_v4 */

#include <stdlib.h>
#include <string.h>

const char *const wl_framework_names[] = {"tf-graph", "tf-eager", "pytorch",
					   "caffe", NULL};
const char *const wl_optim_names[] = {"none", "sgd", "momentum", "adam",
				      "adamw", "adam8bit", NULL};
const char *const wl_precision_names[] = {"fp32", "tf32", "fp16-autocast",
					  "bf16-autocast", "bf16-pure", NULL};
const char *const wl_attn_names[] = {"eager", "sdpa", NULL};
const char *const wl_loss_names[] = {"full", "chunked", NULL};

/* gen_alexnet_vgg.c */
struct wl_workload *gen_build_alexnet(const struct wl_gen_args *a,
				      gms_err *err);
struct wl_workload *gen_build_vgg16(const struct wl_gen_args *a,
				    gms_err *err);
struct wl_workload *gen_build_vgg116(const struct wl_gen_args *a,
				     gms_err *err);
struct wl_workload *gen_build_vgg191(const struct wl_gen_args *a,
				     gms_err *err);
struct wl_workload *gen_build_vdnnpp_table3(const struct wl_gen_args *a,
					    gms_err *err);
/* gen_resnet.c */
struct wl_workload *gen_build_resnet34(const struct wl_gen_args *a,
				       gms_err *err);
struct wl_workload *gen_build_resnet50(const struct wl_gen_args *a,
				       gms_err *err);
struct wl_workload *gen_build_resnet101(const struct wl_gen_args *a,
					gms_err *err);
struct wl_workload *gen_build_resnet_deep(const struct wl_gen_args *a,
					  gms_err *err);
int gen_resnet_deep_blocks(int64_t depth, int blocks[4], gms_err *err);
struct wl_workload *gen_build_resnet152(const struct wl_gen_args *a,
					gms_err *err);

/* gen_llm.c */
struct wl_workload *gen_build_gpt2(const struct wl_gen_args *a, gms_err *err);
struct wl_workload *gen_build_gpt2_medium(const struct wl_gen_args *a,
					  gms_err *err);
struct wl_workload *gen_build_gpt2_large(const struct wl_gen_args *a,
					 gms_err *err);
struct wl_workload *gen_build_gpt2_xl(const struct wl_gen_args *a,
				      gms_err *err);
struct wl_workload *gen_build_llama(const struct wl_gen_args *a,
				    gms_err *err);
struct wl_workload *gen_build_llama3_8b(const struct wl_gen_args *a,
					gms_err *err);
struct wl_workload *gen_build_llama2_7b(const struct wl_gen_args *a,
					gms_err *err);
struct wl_workload *gen_build_tinyllama(const struct wl_gen_args *a,
					gms_err *err);
struct wl_workload *gen_build_qwen25_05b(const struct wl_gen_args *a,
					 gms_err *err);

/* min_size: the smallest input side at which every layer has an output
 * of at least 1x1 (derivations in the generator files). */
const struct wl_gen wl_gens[] = {
	{"alexnet", "AlexNet (torchvision; Krizhevsky 2014 one-GPU form; caffe: "
		    "BVLC bvlc_alexnet, groups and LRN)",
	 "image", 224, 63, gen_build_alexnet},
	{"vgg16", "VGG-16, configuration D (torchvision, no batchnorm; caffe: "
		  "VGG_ILSVRC_16_layers)",
	 "image", 224, 32, gen_build_vgg16},
	{"vgg116", "VGG-116: VGG-16 + 20 3x3 convolutions in each group "
		   "(vDNN++ section V)",
	 "image", 224, 32, gen_build_vgg116},
	{"vgg191", "VGG-191: VGG-16 + 35 3x3 convolutions in each group "
		   "(vDNN++ section V)",
	 "image", 224, 32, gen_build_vgg191},
	{"vdnnpp_table3", "the constructed network of vDNN++ Table III "
			  "(1x1 among 5x5 convolutions)",
	 "image", 224, 1, gen_build_vdnnpp_table3},
	{"resnet34", "ResNet-34 (torchvision; caffe: KaimingHe conventions)", "image", 224, 1,
	 gen_build_resnet34},
	{"resnet50", "ResNet-50 v1.5 (torchvision: stride on the 3x3; caffe: "
		     "KaimingHe, stride on the first 1x1)",
	 "image", 224, 1, gen_build_resnet50},
	{"resnet101", "ResNet-101 v1.5 (torchvision; caffe: KaimingHe)", "image", 224, 1,
	 gen_build_resnet101},
	{"resnet152", "ResNet-152 v1.5 (torchvision; caffe: KaimingHe)", "image", 224, 1,
	 gen_build_resnet152},
	{"resnet-N", "ResNet of any depth N = 3B + 2 (He et al. 2016's bottleneck count; "
	 "the blocks past ResNet-50's in conv4_x, as ResNet-101's): resnet-1001, ...",
	 "image", 224, 1, gen_build_resnet_deep, false, true},
	{"densenet121", "DenseNet-121 (torchvision, concatenations not memory-efficient)", "image", DENSENET_DEFAULT_SIZE, DENSENET_MIN_SIZE, wl_gen_densenet121},
	{"bert_base", "BERT-base, L12 H768 A12 (HuggingFace; TF 1 graph for tf-*; classification head)", "seq", BERT_DEFAULT_SEQ, BERT_MIN_SEQ, wl_gen_bert_base},
	{"bert_large", "BERT-large, L24 H1024 A16 (HuggingFace; TF 1 graph for tf-*; classification head)", "seq", BERT_DEFAULT_SEQ, BERT_MIN_SEQ, wl_gen_bert_large},
	{"googlenet", "GoogLeNet (torchvision, no aux heads; 3x3 \"5x5\" branch; caffe: BVLC bvlc_googlenet with both)", "image", GOOGLENET_DEFAULT_SIZE, GOOGLENET_MIN_SIZE, wl_gen_googlenet},
	{"inception_v3", "Inception-v3 (torchvision, with the aux head and its loss)", "image", INCEPTION_V3_DEFAULT_SIZE, INCEPTION_V3_MIN_SIZE, wl_gen_inception_v3},
	{"inception_v4", "Inception-v4 (Szegedy 2016, as timm/Cadene)", "image", INCEPTION_V4_DEFAULT_SIZE, INCEPTION_V4_MIN_SIZE, wl_gen_inception_v4},
	{"gpt2", "GPT-2 small, L12 H768 A12 (HuggingFace GPT2LMHeadModel, causal LM)", "seq", 1024, 1, gen_build_gpt2, true},
	{"gpt2-medium", "GPT-2 medium, L24 H1024 A16 (HuggingFace)", "seq", 1024, 1, gen_build_gpt2_medium, true},
	{"gpt2-large", "GPT-2 large, L36 H1280 A20 (HuggingFace)", "seq", 1024, 1, gen_build_gpt2_large, true},
	{"gpt2-xl", "GPT-2 XL, L48 H1600 A25 (HuggingFace)", "seq", 1024, 1, gen_build_gpt2_xl, true},
	{"llama", "Llama-style decoder (RMSNorm, RoPE, GQA, SwiGLU), llama3-8b's shape unless layers/hidden/... say", "seq", 2048, 1, gen_build_llama, true},
	{"llama3-8b", "Llama 3 8B, L32 H4096 A32 KV8 FFN14336 V128256 (HuggingFace LlamaForCausalLM)", "seq", 2048, 1, gen_build_llama3_8b, true},
	{"llama2-7b", "Llama 2 7B, L32 H4096 A32 FFN11008 V32000", "seq", 2048, 1, gen_build_llama2_7b, true},
	{"tinyllama-1.1b", "TinyLlama 1.1B, L22 H2048 A32 KV4 FFN5632 V32000", "seq", 2048, 1, gen_build_tinyllama, true},
	{"qwen2.5-0.5b", "Qwen2.5-0.5B, L24 H896 A14 KV2 FFN4864 V151936, tied, qkv biases", "seq", 2048, 1, gen_build_qwen25_05b, true},
	{NULL, NULL, NULL, 0, 0, NULL, false},
};

enum wl_math wl_precision_math(enum wl_precision p)
{
	static const enum wl_math m[WL_PREC_COUNT] = {
		WL_MATH_FP32, WL_MATH_TF32, WL_MATH_FP16, WL_MATH_BF16,
		WL_MATH_BF16};
	return (unsigned)p < WL_PREC_COUNT ? m[p] : WL_MATH_FP32;
}

int wl_framework_from(const char *name)
{
	for (int i = 0; name && wl_framework_names[i]; i++)
		if (strcmp(wl_framework_names[i], name) == 0)
			return i;
	return -1;
}

/* The N of NAME when it is G's name with a number in place of the "N"
 * ("resnet-N": "resnet-1001"; 1 to 9 digits, no leading zero), else 0. */
static int64_t name_depth(const struct wl_gen *g, const char *name)
{
	size_t pl = strlen(g->name) - 1; /* up to the "N" */
	if (!g->depth_in_name || strncmp(g->name, name, pl) != 0)
		return 0;
	const char *d = name + pl;
	size_t nd = strspn(d, "0123456789");
	if (nd < 1 || nd > 9 || d[nd] || d[0] == '0')
		return 0;
	return strtoll(d, NULL, 10);
}

const struct wl_gen *wl_gen_find(const char *name)
{
	if (!name)
		return NULL;
	for (const struct wl_gen *g = wl_gens; g->name; g++)
		if (strcmp(g->name, name) == 0 || name_depth(g, name) > 0)
			return g;
	return NULL;
}

int64_t wl_gen_name_depth(const struct wl_gen *g, const char *name)
{
	return g && name ? name_depth(g, name) : 0;
}

int wl_gen_check_depth(const struct wl_gen *g, int64_t depth, gms_err *err)
{
	int blocks[4];
	if (!g->depth_in_name) {
		if (depth)
			return gms_errf(err, "%s: takes no depth", g->name);
		return 0;
	}
	return depth ? gen_resnet_deep_blocks(depth, blocks, err) : 0;
}

const struct wl_gen *wl_gen_lookup(const char *name, gms_err *err)
{
	const struct wl_gen *g = wl_gen_find(name);
	if (!g) {
		char known[1024] = "", hint[GMS_NEAR_BUF];
		struct gms_near near;
		gms_near_init(&near, name);
		for (const struct wl_gen *k = wl_gens; k->name; k++) {
			gms_list_add(known, sizeof known, k->name);
			gms_near_add(&near, k->name);
		}
		gms_errf(err, "unknown generator '%s'%s (known: %s)",
			 name ? name : "(null)", gms_near_hint(&near, hint),
			 known);
	}
	return g;
}

struct wl_workload *wl_gen_build(const struct wl_gen *g,
				 const struct wl_gen_args *a, gms_err *err)
{
	if (!g || !a || !g->build) {
		gms_errf(err, "wl_gen_build: no generator or arguments");
		return NULL;
	}
	if (a->batch < 1) {
		gms_errf(err, "%s: batch must be >= 1 (got %lld)", g->name,
			 (long long)a->batch);
		return NULL;
	}
	if ((unsigned)a->framework >= WL_FW_COUNT) {
		gms_errf(err, "%s: invalid framework %d", g->name,
			 (int)a->framework);
		return NULL;
	}
	if (!g->arch && memcmp(&a->arch, &(struct wl_arch){0},
			       sizeof a->arch) != 0) {
		gms_errf(err, "%s: takes no architecture keys (layers, "
			      "hidden, heads, ...; language models only)",
			 g->name);
		return NULL;
	}
	if (wl_gen_check_depth(g, a->depth, err) < 0)
		return NULL;
	if ((unsigned)a->optimizer >= WL_OPTIM_COUNT) {
		gms_errf(err, "%s: invalid optimizer %d", g->name,
			 (int)a->optimizer);
		return NULL;
	}
	struct wl_gen_args b = *a;
	if (b.size == 0)
		b.size = g->default_size;
	if (b.size < g->min_size) {
		gms_errf(err, "%s: %s size %lld is too small: the network "
			      "needs at least %lld", g->name, g->size_name,
			 (long long)b.size, (long long)g->min_size);
		return NULL;
	}
	return g->build(&b, err);
}
