/*
 * wl_gen.h - the network generators: one training iteration of a named
 * network (AlexNet, VGG, ResNet, GoogLeNet, Inception, DenseNet, BERT, the
 * vDNN++ constructed net) at a given batch and input size.
 *
 * Each generator builds through the wl.h builder and returns a finalized
 * workload. The table wl_gens[] is what `gpumemsim list workloads` prints
 * and what an experiment's `{name: resnet50, batch: 64}` looks up.
 */
#ifndef GMS_WL_GEN_H
#define GMS_WL_GEN_H

#include "wl.h"

/* The framework personality a generated workload follows: what the
 * framework keeps for backward, what runs in place, how long gradients
 * live, and which definition of the network it ships (README, "Framework
 * personalities", lists every rule with its source). */
enum wl_framework {
	WL_FW_TF_GRAPH, /* TensorFlow 1.x graph mode: buffer forwarding (ReLU
			   and elementwise gradients in place), dead tensors
			   freed at once */
	WL_FW_TF_EAGER, /* TensorFlow 1.x eager GradientTape: the tape keeps
			   every recorded op's inputs and outputs until that
			   op's gradient has run; nothing in place; gradients
			   held until apply_gradients */
	WL_FW_PYTORCH,	/* PyTorch autograd: each op's saved tensors;
			   torchvision's inplace ReLUs; .grad held to the
			   step; the caching allocator */
	WL_FW_CAFFE,	/* BVLC Caffe: every blob and diff allocated on first
			   use and kept; in-place layers share their blob */
	WL_FW_COUNT
};

/* Optimizer of the update phase (its state and update ops). */
enum wl_optim {
	WL_OPTIM_NONE,	   /* no update ops, no state (gradients only) */
	WL_OPTIM_SGD,	   /* plain SGD: p -= lr*g, no state */
	WL_OPTIM_MOMENTUM, /* SGD with momentum: one state tensor */
	WL_OPTIM_ADAM,	   /* Adam: two (first and second moment) */
	WL_OPTIM_ADAMW,	   /* AdamW (Loshchilov & Hutter 2019): Adam's two
			      moments, decoupled weight decay (the same
			      memory; torch.optim.AdamW) */
	WL_OPTIM_ADAM8BIT, /* Adam with blockwise 8-bit states
			      (bitsandbytes Adam8bit; gen.c has the rule) */
	WL_OPTIM_COUNT
};

/* Numeric precision of a generated workload (gen.c, "PRECISION", has
 * what each keeps in which dtype, with torch's autocast op lists). */
enum wl_precision {
	WL_PREC_FP32,	    /* everything fp32, FP32 CUDA-core math */
	WL_PREC_TF32,	    /* fp32 storage, TF32 tensor-core matmuls */
	WL_PREC_FP16_AUTO,  /* torch.autocast(float16): fp32 weights,
			       grads and states; fp16 matmul outputs */
	WL_PREC_BF16_AUTO,  /* the same with bfloat16 */
	WL_PREC_BF16_PURE,  /* model.to(bfloat16): bf16 weights, grads,
			       optimizer states and activations */
	WL_PREC_COUNT
};

/* Attention kernel of the transformer generators (gpt2, llama). */
enum wl_attn {
	WL_ATTN_EAGER, /* attn_implementation="eager": scores and
			  probabilities materialised and saved */
	WL_ATTN_SDPA,  /* fused (FlashAttention / SDPA): output and
			  logsumexp saved, no seq x seq tensor */
	WL_ATTN_COUNT
};

/* Loss of the language-model generators. */
enum wl_loss {
	WL_LOSS_FULL,	 /* full-vocabulary logits in the compute dtype, an
			    fp32 upcast, cross-entropy (Hugging Face) */
	WL_LOSS_CHUNKED, /* fused linear cross-entropy in row chunks (Liger
			    Kernel): no vocabulary-sized tensor saved */
	WL_LOSS_COUNT
};

/* Architecture of a decoder-only language model (gen_llm.c). 0 in a field
 * = the preset's value; the preset is the generator's name. */
struct wl_arch {
	int64_t layers, hidden, heads, kv_heads, ffn, vocab;
	enum wl_attn attention;
	enum wl_loss loss;
	int64_t lora; /* LoRA rank r (0: off): the base model frozen, rank-r
			 adapters on the attention projections (gen_llm.c) */
};

/* "tf-graph", "tf-eager", "pytorch", "caffe", NULL */
extern const char *const wl_framework_names[];
/* "none", "sgd", "momentum", "adam", "adamw", "adam8bit", NULL */
extern const char *const wl_optim_names[];
/* "fp32", "tf32", "fp16-autocast", "bf16-autocast", "bf16-pure", NULL */
extern const char *const wl_precision_names[];
/* "eager", "sdpa", NULL */
extern const char *const wl_attn_names[];
/* "full", "chunked", NULL */
extern const char *const wl_loss_names[];

/* The matmul/conv arithmetic of a precision (fp32 -> fp32, tf32 -> tf32,
 * fp16-autocast -> fp16, bf16-* -> bf16). */
enum wl_math wl_precision_math(enum wl_precision p);

/* Index of a framework name in wl_framework_names, -1 when unknown. */
int wl_framework_from(const char *name);

/* Arguments every generator takes. */
struct wl_gen_args {
	int64_t batch;		  /* samples per iteration, >= 1 */
	int64_t size;		  /* input side in pixels (images) or
				     sequence length (BERT); 0 = the
				     generator's default_size */
	enum wl_framework framework; /* personality (wl_framework) */
	enum wl_optim optimizer;     /* update rule and its state */
	struct wl_reserve reserve;   /* room to reserve (wl_reserve): the
					counts of an earlier build of the
					same network; zeros: none */
	enum wl_precision precision; /* dtypes and math (fp32 = 0) */
	struct wl_arch arch;	     /* language models only (zeros: the
					preset's) */
	int64_t depth;		     /* resnet-N only: N, from the name
					(wl_gen_name_depth); 0 otherwise
					(resnet-N itself builds N = 50) */
};

struct wl_gen {
	const char *name;	/* "resnet50": what experiments name */
	const char *desc;	/* one line: the network and its source */
	const char *size_name;	/* "image" or "seq": what `size` means */
	int64_t default_size;	/* e.g. 224, 299, 128 */
	int64_t min_size;	/* smallest size the architecture accepts */
	/* Build one iteration; returns a finalized workload, or NULL with
	 * err (bad size, out of memory). */
	struct wl_workload *(*build)(const struct wl_gen_args *a,
				     gms_err *err);
	bool arch;		/* takes struct wl_arch (layers, hidden, ...,
				   attention, loss, lora); others refuse it */
	bool depth_in_name;	/* "resnet-N": the name gives the depth, N
				   in place of the "N" (wl_gen_name_depth) */
};

/* Largest depth resnet-N builds (B = 33333 blocks, some 400,000 ops). */
#define GEN_RESNET_MAX_DEPTH 100001

/* Every generator, in the order `list workloads` prints; ends with an
 * entry whose name is NULL. */
extern const struct wl_gen wl_gens[];

/* Check a language-model generator's architecture (gen_llm.c): 0, or -1
 * with err and *key the offending key ("heads", "kv_heads", ...). */
int wl_llm_check(const char *gen, const struct wl_arch *a,
		 const char **key, gms_err *err);

/* Look a generator up by name; NULL when unknown. */
const struct wl_gen *wl_gen_find(const char *name);
/* The depth a name gives a depth_in_name generator ("resnet-1001" ->
 * 1001), 0 for any other; and whether the generator builds it: 0, or -1
 * with err naming the rule. */
int64_t wl_gen_name_depth(const struct wl_gen *g, const char *name);
int wl_gen_check_depth(const struct wl_gen *g, int64_t depth, gms_err *err);
/* wl_gen_find, or NULL with "unknown generator 'x' (known: ...)". */
const struct wl_gen *wl_gen_lookup(const char *name, gms_err *err);

/* Build: checks a->batch >= 1 and a->size (0 -> default, else >=
 * min_size) and calls g->build. */
struct wl_workload *wl_gen_build(const struct wl_gen *g,
				 const struct wl_gen_args *a, gms_err *err);

#endif
