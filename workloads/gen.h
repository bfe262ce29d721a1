/*
 * gen.h - the layer builder the network generators share.
 *
 * A generator opens a context with gen_new, describes the FORWARD pass
 * layer by layer (gen_conv, gen_batchnorm, gen_relu, ...), each call
 * emitting its forward op(s) into the workload and recording the layer on
 * a tape, and ends with gen_finish, which emits the loss, the whole
 * backward pass in reverse tape order, gradient accumulation, the
 * parameter updates, and calls wl_finalize:
 *
 *	struct gen *g = gen_new("tiny", a, err);
 *	if (!g)
 *		return NULL;
 *	struct gen_tensor x = gen_input(g, "input", 3, 32, 32);
 *	x = gen_conv(g, "conv1", x, 16, 3, 3, 1, 1, 1, false);
 *	x = gen_batchnorm(g, "bn1", x);
 *	x = gen_relu(g, "relu1", x);
 *	x = gen_global_avgpool(g, "avgpool", x);
 *	x = gen_linear(g, "fc", gen_flatten(g, x), 10, true);
 *	return gen_finish(g, x, err);	// frees g, always
 *
 * Errors are sticky: the first failing call (a shape that does not fit,
 * a duplicate name, out of memory) records its message in the context;
 * every later call does nothing and returns an invalid tensor, and
 * gen_finish returns NULL with that message. So a generator needs no
 * error checks between layers. gen_fail lets it report its own.
 *
 * Shapes are PER SAMPLE (the batch is the context's): images are
 * (c, h, w) = (channels, height, width); token tensors are
 * (features, seq, 1). The "feature" axis c is the one linear, layernorm,
 * softmax and the loss act on; every (h, w) position is a row. All
 * tensors are fp32 (4 bytes an element) at precision fp32 (other
 * precisions: gen.c, "PRECISION") except token ids and labels
 * (int64) and dropout masks (1 byte an element); under caffe labels are
 * fp32 and masks 4 bytes (Caffe's Blob<Dtype> label, uint32 rand_vec_).
 *
 * Names: every layer call takes the op name (unique in the workload,
 * e.g. "layer1.0.conv2"); the op is its own layer. Derived names:
 *	NAME.out          its output activation
 *	NAME.weight, NAME.bias            parameters (NAME.weight.grad, ...)
 *	NAME.weight.momentum              SGD state
 *	NAME.weight.adam_m, .adam_v       Adam state
 *	NAME.saved        batchnorm/layernorm saved mean and inverse std
 *	NAME.running_mean, NAME.running_var, NAME.num_batches_tracked
 *	                  batchnorm buffers (pytorch; whole-run, no grad)
 *	NAME.mask         dropout mask
 *	NAME.probs, NAME.labels           loss: softmax output, int64 labels
 *	NAME.bwd, NAME.bwd_data, NAME.bwd_filter (conv), NAME.bwd_weight
 *	(linear, embedding), ...          backward ops, in NAME's layer
 *	T.grad, T.grad.2, ...             contributions to tensor T's gradient
 *	T.grad.sum2, ...                  their accumulation (op T.grad_acc2)
 *	P.update                          update op of parameter P
 *
 * The conventions (FLOPs, DRAM bytes, what each backward op reads, the
 * convolution algorithm rule, what each preset does) are written in
 * gen.c and workloads/README.md ("Generators").
 *
 * A network file (workloads/gen_NAME.c) declares its build function
 * just before defining it (the -Wmissing-prototypes rule), e.g.
 *	struct wl_workload *gen_build_resnet50(const struct wl_gen_args *a,
 *					       gms_err *err);
 * and wl_gen.c declares it again beside its line in wl_gens[]. The build
 * function receives a->size already resolved (0 -> default_size) and
 * checked against min_size by wl_gen_build.
 */
#ifndef GMS_GEN_H
#define GMS_GEN_H

/* GEN_API_STABLE */

#include "wl.h"
#include "wl_gen.h"

#define GEN_NONE UINT32_MAX /* an invalid value index */

/* A forward value (an activation or an input) as a generator holds it:
 * passed and returned by value. Views (gen_flatten, gen_slice) share the
 * wl tensor of the value they view. */
struct gen_tensor {
	uint32_t v;	 /* value index in the context; GEN_NONE = invalid
			    (an earlier call failed) */
	int64_t c, h, w; /* per-sample shape: channels/features, rows */
};

/* The builder context (opaque; defined in gen.c). It holds the workload
 * under construction, batch, size, preset, optimizer, the sticky error,
 * the values, the parameters and the tape of forward layers. */
struct gen;

/* ---- Context ------------------------------------------------------ */

/* Open a context for workload `name` with a's batch, size, preset and
 * optimizer (a->size is kept as given: generators resolve 0 -> their
 * default before, or use gen_size). NULL with err on out of memory or a
 * bad batch (< 1). */
struct gen *gen_new(const char *name, const struct wl_gen_args *a,
		    gms_err *err);

/* Free a context that will not be finished (gen_finish frees its own). */
void gen_free(struct gen *g);

/* Accessors. */
int64_t gen_batch(const struct gen *g);
int64_t gen_size(const struct gen *g);	/* a->size as passed to gen_new */
enum wl_framework gen_framework(const struct gen *g);
enum wl_optim gen_optim(const struct gen *g);
bool gen_ok(const struct gen *g);	/* no error recorded yet */
const char *gen_errmsg(const struct gen *g); /* "" when none */
/* The workload under construction (read-only use: look tensors up). */
const struct wl_workload *gen_workload(const struct gen *g);
/* wl tensor id of a value, WL_NONE when invalid. */
uint32_t gen_tensor_id(const struct gen *g, struct gen_tensor t);
/* Elements per sample of a value (c*h*w). */
int64_t gen_numel(struct gen_tensor t);

/* snprintf(buf, cap, fmt, ...) for names, the same bytes and count:
 * %s, %c, %d, %u, %lld and %% are written directly, anything else by
 * vsnprintf. */
int gen_fmt(char *buf, size_t cap, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Record an error of the generator's own (first one wins); returns -1. */
int gen_fail(struct gen *g, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ---- Inputs ------------------------------------------------------- */

/* The batch of images: WL_INPUT, fp32, batch*c*h*w*4 bytes; no gradient
 * (so the first layer has no backward-data op). */
struct gen_tensor gen_input(struct gen *g, const char *name, int64_t c,
			    int64_t h, int64_t w);
/* Token ids (or an attention mask): WL_INPUT, int64, batch*seq*8 bytes,
 * shape (1, seq, 1); no gradient. */
struct gen_tensor gen_input_ids(struct gen *g, const char *name,
				int64_t seq);

/* ---- Convolutional layers ---------------------------------------- */

/* 2-D convolution, `cout` output channels, kernel kh x kw, one stride
 * for both axes, zero padding pad_h/pad_w, optional bias. Output
 * (cout, (h+2pad_h-kh)/stride+1, (w+2pad_w-kw)/stride+1); an output
 * side < 1 is an error naming the op. Algos per the rule in gen.c. */
struct gen_tensor gen_conv(struct gen *g, const char *name,
			   struct gen_tensor x, int64_t cout, int64_t kh,
			   int64_t kw, int64_t stride, int64_t pad_h,
			   int64_t pad_w, bool bias);
/* Grouped convolution (Caffe's `group`, AlexNet's conv2/4/5): x.c and
 * cout divide by groups; each group convolves x.c/groups input channels
 * into cout/groups outputs, so parameters, FLOPs and the algorithms'
 * geometry are per group (square kernel k, pad on both axes). */
struct gen_tensor gen_conv_grouped(struct gen *g, const char *name,
				   struct gen_tensor x, int64_t cout,
				   int64_t k, int64_t stride, int64_t pad,
				   int64_t groups, bool bias);
/* Square kernel k x k, pad on both axes. */
struct gen_tensor gen_conv_sq(struct gen *g, const char *name,
			      struct gen_tensor x, int64_t cout, int64_t k,
			      int64_t stride, int64_t pad, bool bias);

/* Batch normalisation (training): gamma and beta of c each (parameters),
 * saved mean and inverse std (NAME.saved, 2*c*4 bytes, an activation
 * output of the forward op). Running statistics (buffers, 2*c floats)
 * are not modelled. Same shape as x; works on any (c, h, w). */
struct gen_tensor gen_batchnorm(struct gen *g, const char *name,
				struct gen_tensor x);

/* Batch normalisation without affine parameters (Caffe's BatchNorm
 * layer: mean and variance only, its scale and shift are a separate
 * Scale layer, gen_affine). NAME.saved holds the per-channel mean and
 * variance (2*c*4 bytes). Under caffe its hidden buffers (README,
 * "caffe") are added; in place when the context's definition runs its
 * layers in place (gen_set_layers_inplace). */
struct gen_tensor gen_bn_noaffine(struct gen *g, const char *name,
				  struct gen_tensor x);

/* Per-channel y = gamma * x (+ beta with bias): Caffe's Scale layer
 * (bias_term adds its Bias layer). Parameters NAME.weight (c) and
 * NAME.bias (c). Backward (one OT_ELEMWISE op NAME.bwd) reads dY, x (or
 * the in-place copy NAME.temp) and gamma, writes dX, dgamma, dbeta. */
struct gen_tensor gen_affine(struct gen *g, const char *name,
			     struct gen_tensor x, bool bias);

/* Local response normalisation across channels, window local_size
 * (Caffe's LRN layer, ACROSS_CHANNELS, run by cuDNN: no hidden buffer).
 * OT_ELEMWISE; backward reads y, dY and x (the arguments of
 * cudnnLRNCrossChannelBackward). */
struct gen_tensor gen_lrn(struct gen *g, const char *name,
			  struct gen_tensor x, int64_t local_size);

/* The network definition runs its Dropout, BatchNorm (gen_bn_noaffine)
 * and Scale (gen_affine) layers in place (Caffe prototxts: top ==
 * bottom). Only the caffe personality acts on it (fw_inplace). */
void gen_set_layers_inplace(struct gen *g, bool on);

/* Parameters created from now on are frozen (requires_grad=False: no
 * gradient, no optimizer state, no update; LoRA's base model) until
 * called with false. Linear, norm and embedding layers honour it: their
 * outputs need a gradient only when their input does. */
void gen_set_frozen(struct gen *g, bool on);

/* Block marks (struct wl_op.block, .region): the layers added from now
 * on, their forward ops and, at gen_finish, their backward ops belong to
 * block `block` (a transformer layer, a residual block; numbered from 0
 * in forward order; -1: none) and region `region` (enum wl_region) of
 * it. What the checkpoint policy's blocks and selective modes work on. */
void gen_block(struct gen *g, int64_t block);
void gen_region(struct gen *g, enum wl_region region);

/* ReLU. In the graph preset the forward op is marked in place. */
struct gen_tensor gen_relu(struct gen *g, const char *name,
			   struct gen_tensor x);

/* Max / average pooling, k x k window (one stride, one pad), floor or
 * ceil output rounding as torch.nn.MaxPool2d(ceil_mode): with ceil, a
 * last window that would start in the right padding is dropped.
 * Average pooling counts the padding (count_include_pad = true, the
 * torch default). */
struct gen_tensor gen_maxpool(struct gen *g, const char *name,
			      struct gen_tensor x, int64_t k, int64_t stride,
			      int64_t pad, bool ceil_mode);
struct gen_tensor gen_avgpool(struct gen *g, const char *name,
			      struct gen_tensor x, int64_t k, int64_t stride,
			      int64_t pad, bool ceil_mode);
/* torch.nn.AdaptiveAvgPool2d((oh, ow)): windows [floor(i*h/oh),
 * ceil((i+1)*h/oh)). */
struct gen_tensor gen_adaptive_avgpool(struct gen *g, const char *name,
				       struct gen_tensor x, int64_t oh,
				       int64_t ow);
/* Global average pooling: adaptive to 1 x 1. */
struct gen_tensor gen_global_avgpool(struct gen *g, const char *name,
				     struct gen_tensor x);

/* ---- Structure ---------------------------------------------------- */

/* (c*h*w, 1, 1): a view (no op, same tensor); its gradient too. */
struct gen_tensor gen_flatten(struct gen *g, struct gen_tensor x);

/* Elementwise sum a + b (same shape): the residual add. Backward: no
 * kernel, dy is passed (the same tensor) to both branches. */
struct gen_tensor gen_add(struct gen *g, const char *name,
			  struct gen_tensor a, struct gen_tensor b);
/* gen_add written by the network as `a += b`: out over a's storage where
 * the personality runs it so (pytorch: torchvision's `out += identity`;
 * the others allocate, as gen_add). */
struct gen_tensor gen_add_inplace(struct gen *g, const char *name,
				  struct gen_tensor a, struct gen_tensor b);

/* Channel concatenation of n values of equal (h, w): an OT_CONCAT copy.
 * Backward: no kernel; each input's gradient is a view (a channel slice)
 * of the output's gradient, which stays allocated until the last slice
 * is consumed (as torch's cat backward, which returns narrow() views). */
struct gen_tensor gen_concat(struct gen *g, const char *name,
			     const struct gen_tensor *xs, uint32_t n);

/* Rows [h0, h0+nh) of x (e.g. BERT's [CLS] token: h0 = 0, nh = 1): a
 * view, no forward op (the viewed tensor stays allocated while the view
 * is used). Backward: an OT_ELEMWISE op NAME.bwd writing a full-size
 * gradient (zeros, then the slice of dy). */
struct gen_tensor gen_slice(struct gen *g, const char *name,
			    struct gen_tensor x, int64_t h0, int64_t nh);

/* ---- Fully connected and elementwise ------------------------------ */

/* y = x W^T (+ b) on every row: x (in, h, w) -> (out, h, w); W is
 * out x in. Flatten images first. Backward: two OT_MATMUL_BWD ops,
 * NAME.bwd_data (reads W, dY; writes dX) and NAME.bwd_weight (reads X,
 * dY; writes dW and db). */
struct gen_tensor gen_linear(struct gen *g, const char *name,
			     struct gen_tensor x, int64_t out, bool bias);
/* The same with an existing weight (tied weights, e.g. BERT's MLM
 * decoder and the word embedding): `weight` is a parameter index from
 * gen_param_find whose element count must be out * x.c. Its gradient
 * contributions are summed (like an activation's) before the update. */
struct gen_tensor gen_linear_tied(struct gen *g, const char *name,
				  struct gen_tensor x, int64_t out,
				  uint32_t weight, bool bias);

/* Parameter index by tensor name ("NAME.weight"); GEN_NONE if none. */
uint32_t gen_param_find(const struct gen *g, const char *tensor_name);

/* Dropout with probability p, 0 <= p < 1 (p = 0 still emits the op;
 * callers skip the call where the framework would). Writes NAME.mask
 * (1 byte an element). Not recomputable (a re-run draws a new mask).
 * Backward reads the mask and dy. */
struct gen_tensor gen_dropout(struct gen *g, const char *name,
			      struct gen_tensor x, double p);

/* GELU (OT_ELEMWISE; backward reads x and dy). */
struct gen_tensor gen_gelu(struct gen *g, const char *name,
			   struct gen_tensor x);
/* tanh (OT_ELEMWISE, e.g. BERT's pooler; backward reads y and dy). */
struct gen_tensor gen_tanh(struct gen *g, const char *name,
			   struct gen_tensor x);
/* Multiply by a constant (OT_ELEMWISE; backward reads only dy). */
struct gen_tensor gen_scale(struct gen *g, const char *name,
			    struct gen_tensor x);
/* Add a broadcast mask built from `mask` (a gen_input_ids value of
 * (1, x.c, 1): the attention mask over the keys of scores
 * (seq_k, seq_q, heads)) to x (OT_ELEMWISE; reads x
 * and mask). Backward: no kernel, dy passes through; no gradient to the
 * mask. */
struct gen_tensor gen_mask_add(struct gen *g, const char *name,
			       struct gen_tensor x, struct gen_tensor mask);

/* Softmax over the feature axis c (OT_SOFTMAX; backward reads y, dy). */
struct gen_tensor gen_softmax(struct gen *g, const char *name,
			      struct gen_tensor x);

/* Layer normalisation over the feature axis: gamma, beta of c each,
 * NAME.saved = mean and inverse std per row (2*h*w*4 bytes a sample).
 * Backward (one OT_LAYERNORM_BWD op) reads x, saved, gamma, dy and
 * writes dx, dgamma, dbeta. */
struct gen_tensor gen_layernorm(struct gen *g, const char *name,
				struct gen_tensor x);

/* RMS normalisation (Zhang & Sennrich 2019; Llama's LlamaRMSNorm):
 * weight only (NAME.weight, c), NAME.saved = the inverse RMS per row
 * (h*w*4 bytes a sample). One fused kernel (OT_LAYERNORM; backward
 * OT_LAYERNORM_BWD reads x, saved, weight, dy). */
struct gen_tensor gen_rmsnorm(struct gen *g, const char *name,
			      struct gen_tensor x);

/* SiLU (OT_ELEMWISE; backward reads x and dy). */
struct gen_tensor gen_silu(struct gen *g, const char *name,
			   struct gen_tensor x);

/* softmax(x, dtype=torch.float32): fp32 output whatever x's dtype. */
struct gen_tensor gen_softmax_fp32(struct gen *g, const char *name,
				   struct gen_tensor x);

/* Convert x to elements of esz bytes (4 fp32, 2 fp16/bf16): a copy
 * (OT_ELEMWISE) whose backward converts dy back; x itself when it has
 * that size already. */
struct gen_tensor gen_cast(struct gen *g, const char *name,
			   struct gen_tensor x, int esz);

/* Element sizes: of a value; of a matmul's output under the context's
 * precision (2 under fp16/bf16, else 4); of a parameter (2 under pure
 * bf16). The precision itself. */
int gen_esz(const struct gen *g, struct gen_tensor x);
int gen_compute_esz(const struct gen *g);
int gen_param_esz(const struct gen *g);
enum wl_precision gen_precision(const struct gen *g);

/* Embedding lookup: ids (1, seq, 1) from gen_input_ids -> (dim, seq, 1),
 * table NAME.weight of vocab x dim. Backward NAME.bwd_weight
 * (OT_EMBEDDING_BWD) reads ids and dy and writes the dense table
 * gradient (vocab*dim*4 bytes, as torch's sparse=False). */
struct gen_tensor gen_embedding(struct gen *g, const char *name,
				struct gen_tensor ids, int64_t vocab,
				int64_t dim);

/* ---- Attention ---------------------------------------------------- */

/* Batched matmuls of multi-head self-attention, heads splitting the
 * feature axis of q, k, v (hidden, seq, 1), hidden % heads == 0.
 * Scores S = Q K^T / sqrt(d) per head (the scale folded into the
 * kernel): (seq_k, seq_q, heads), OT_MATMUL, 2*seq*seq*hidden FLOPs a
 * sample. Backward: NAME.bwd_q (reads dS, K) and NAME.bwd_k (reads dS,
 * Q), OT_MATMUL_BWD. */
struct gen_tensor gen_attn_scores(struct gen *g, const char *name,
				  struct gen_tensor q, struct gen_tensor k,
				  int64_t heads);
/* Context C = P V per head: p (seq_k, seq_q, heads), v (hidden, seq, 1)
 * -> (hidden, seq, 1), OT_MATMUL. Backward: NAME.bwd_p (reads dC, V)
 * and NAME.bwd_v (reads dC, P), OT_MATMUL_BWD. */
struct gen_tensor gen_attn_context(struct gen *g, const char *name,
				   struct gen_tensor p, struct gen_tensor v);

/* Fused scaled-dot-product attention (FlashAttention-2 / torch SDPA):
 * q (hidden, seq, 1) in `heads` heads, k and v (kv_hidden, seq_k, 1) in
 * fewer heads for grouped-query attention; writes NAME.out (hidden, seq,
 * 1) and NAME.logsumexp (fp32) and keeps nothing of seq x seq. Backward
 * NAME.bwd (OT_MATMUL_BWD) reads q, k, v, out, logsumexp, dy. causal:
 * half the FLOPs. Sources in gen.c. */
struct gen_tensor gen_sdpa(struct gen *g, const char *name,
			   struct gen_tensor q, struct gen_tensor k,
			   struct gen_tensor v, int64_t heads, bool causal);

/* ---- TensorFlow ops ----------------------------------------------- */

/* One TensorFlow 1.x op each, for networks written as TF builds them
 * (gen_bert_tf1.c). Each call is its own layer: one forward kernel (an
 * OT_ELEMWISE op, OT_OTHER for Mean) writing NAME.out, and in backward,
 * per input that needs a gradient, what TF's gradient function does:
 * dy itself (Add's x and y, Sub's x, when not broadcast), or one kernel
 * NAME.bwd (one input) / NAME.bwd_x, NAME.bwd_y (two) reading dy and the
 * tensors listed below -- nothing else is kept for it. Sources: the
 * gradient functions of tensorflow/python/ops/math_grad.py and
 * array_grad.py; the table in gen.c (tf_defs) also holds what the TF 1.x
 * eager tape keeps for each (backprop.py's pruning lists). "C" ops take
 * a scalar constant (not a tensor). */
enum gen_tf_op {
	GEN_TF_ADD,	/* x + y, broadcasting; gradient dy (reduced) */
	GEN_TF_SUB,	/* x - y; x: dy, y: -dy (a kernel) */
	GEN_TF_MUL,	/* x * y; x's reads y, y's reads x */
	GEN_TF_SQDIFF,	/* (x - y)^2; both read x and y */
	GEN_TF_ADDC,	/* x + c; dy */
	GEN_TF_RSUBC,	/* c - x; -dy (a kernel reading dy only) */
	GEN_TF_MULC,	/* x * c; dy * c (reads dy only) */
	GEN_TF_DIVC,	/* x / c; dy / c (reads dy only) */
	GEN_TF_ERF,	/* erf(x); reads x */
	GEN_TF_RSQRT,	/* 1/sqrt(x); reads its output */
	GEN_TF_FLOOR,	/* floor(x); no gradient */
	GEN_TF_MEAN,	/* mean over the feature axis, keep_dims:
			   (c,h,w) -> (1,h,w); gradient reads dy only */
	GEN_TF_TRANSPOSE, /* a copy in another layout (same shape here);
			     gradient: the inverse transpose of dy */
	GEN_TF_CAST,	/* type/shape change of an integer input; no
			   gradient; give the output shape */
	GEN_TF_ONE_HOT,	/* one-hot of integer ids; no gradient; give the
			   output shape */
	GEN_TF_FILL,	/* tf.ones / tf.fill (no input); give the shape */
	GEN_TF_RANDOM_UNIFORM, /* float32 uniform draw (no input); give the
				  shape */
	GEN_TF_COUNT
};

/* The TF op type name ("Mul", "RealDiv", ...). */
const char *gen_tf_name(enum gen_tf_op op);

/* Emit TF op `op` on x (and y for two-input ops; gen_none() otherwise;
 * both ignored for Fill and RandomUniform). The output shape is the
 * broadcast of the inputs' (each axis equal or 1; a parameter value is
 * not batch-sized and broadcasts over the batch), (1,h,w) for Mean, or
 * (c,h,w) when c > 0. In tf-graph the forward kernel of a cwise op may
 * write over input 0 (IP_CWISE). The output needs a gradient when an
 * input with one does. */
struct gen_tensor gen_tf_op(struct gen *g, const char *name,
			    enum gen_tf_op op, struct gen_tensor x,
			    struct gen_tensor y, int64_t c, int64_t h,
			    int64_t w);
/* The same, output shape by broadcasting. */
struct gen_tensor gen_tf(struct gen *g, const char *name, enum gen_tf_op op,
			 struct gen_tensor x, struct gen_tensor y);

/* tf.stop_gradient(x): the same tensor, no gradient flows back through
 * this use (no op: StopGradient hands its input's buffer on). */
struct gen_tensor gen_stop_gradient(struct gen *g, struct gen_tensor x);

/* A parameter tensor named `name` of `numel` elements (with its optimizer
 * state), usable as a value of per-sample shape (c, h, w), c*h*w <= numel
 * (a slice of it: e.g. the first seq rows of a position table; the
 * slice's copy is not modelled), not batch-sized. Its gradient
 * contributions go to the parameter (full size). */
struct gen_tensor gen_param_value(struct gen *g, const char *name,
				  int64_t c, int64_t h, int64_t w,
				  int64_t numel);

/* ---- Loss and the end --------------------------------------------- */

/* Softmax cross-entropy over the feature axis of logits (classes, h, w):
 * creates NAME.labels (WL_INPUT, int64 a row: batch*h*w*8 bytes); the
 * forward op (OT_LOSS) writes NAME.probs (kept for backward) and the
 * scalar NAME.out (4 bytes); NAME.bwd (OT_LOSS_BWD) reads probs and
 * labels and writes dlogits. May be called several times (BERT's two
 * heads); the losses are summed. */
void gen_loss(struct gen *g, const char *name, struct gen_tensor logits);

/* gen_loss with torch's two backward kernels for cross_entropy
 * (nll_loss_backward writes a full-size dlogprobs, then log_softmax's
 * backward; gen.c has the source). */
void gen_loss_nll(struct gen *g, const char *name, struct gen_tensor logits);

/* The fused linear cross-entropy of a language model's head (Liger
 * Kernel; gen.c has the model): x (hidden, seq, 1) -> loss over `vocab`
 * classes per row, with a new NAME.weight (vocab x hidden) or the tied
 * parameter `weight`; no vocabulary-sized tensor is kept. A loss, as
 * gen_loss. */
void gen_fused_lm_loss(struct gen *g, const char *name, struct gen_tensor x,
		       int64_t vocab, uint32_t weight);

/* Finish: if logits is valid, gen_loss(g, "loss", logits); then the
 * backward pass in reverse tape order, the updates (one OT_UPDATE op per
 * parameter tensor, in creation order; under pytorch with sgd, momentum,
 * adam or adamw, one per launch of torch.optim's foreach kernels
 * instead: gen.c, "foreach") and wl_finalize. Returns the
 * finalized workload, or NULL with err (the first error recorded).
 * Always frees g. */
struct wl_workload *gen_finish(struct gen *g, struct gen_tensor logits,
			       gms_err *err);

/* One launch of ATen's multi_tensor_apply (gen.c, "foreach"): the
 * tensors t0..t1 of the list (indices into the numel array given; t0's
 * first chunks or t1's last may lie in a neighbouring launch) and the
 * elements its blocks cover. */
struct gen_launch {
	uint32_t t0, t1;
	uint64_t elems;
};
/* Split a tensor list of n tensors (numel[i] elements each) into the
 * launches multi_tensor_apply issues with at most max_tensors tensors
 * and max_blocks chunks of chunk elements a launch; writes up to cap of
 * them to out (NULL: count only) and returns how many there are. */
uint32_t gen_foreach_launches(const uint64_t *numel, uint32_t n,
			      uint64_t chunk, uint32_t max_tensors,
			      uint32_t max_blocks, struct gen_launch *out,
			      uint32_t cap);

/* An invalid tensor (for gen_finish when the losses were added with
 * gen_loss). */
struct gen_tensor gen_none(void);

#endif
