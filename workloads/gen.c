/*
 * gen.c - the layer builder behind the network generators (gen.h).
 *
 * Each forward call emits its op into the workload at once and records a
 * tape entry; gen_finish walks the tape backwards emitting the backward
 * ops, then the updates. Element sizes follow the precision (PRECISION
 * below; fp32, 4 bytes an element, unless the workload asks otherwise).
 *
 * CONVENTIONS (also in workloads/README.md, "Generators"). B = batch,
 * n = elements of the tensor concerned (whole batch), MAC = multiply-
 * accumulate.
 *
 * FLOPs per op:
 *   conv, conv_bwd_data, conv_bwd_filter   2 * MACs, MACs =
 *        B * cout * hout * wout * cin * kh * kw; a bias adds
 *        B * cout * hout * wout (forward: the add; bwd_filter: the
 *        reduction of dy into db, folded into that op)
 *   linear (matmul), bwd_data, bwd_weight  2 * rows * in * out (rows =
 *        B * h * w); bias as for conv
 *   attention scores / context and their backward halves
 *        2 * B * seq_q * seq_k * hidden each
 *   batchnorm, layernorm forward  7 / element: statistics 3 (x, x*x
 *        accumulated), normalise 2 (subtract, multiply), affine 2
 *   batchnorm, layernorm backward 9 / element: sums of dy and dy*xhat 3,
 *        xhat 2, dx = k*(dy - mean(dy) - xhat*mean(dy*xhat)) 4
 *   relu, relu_bwd, add, scale, mask add, gradient accumulation  1 / el.
 *   max pool  kh*kw / output element (compares); backward the same (the
 *        arg-max is found again by comparing x with y in the window)
 *   avg pool  kh*kw / output element (adds, the divide folded); backward
 *        the same (scatter adds); adaptive pools: the window sizes
 *   dropout   2 / element (compare the draw, scale; the RNG not
 *        counted); backward 2 (mask times scale times dy)
 *   softmax   5 / element (max, subtract, exp, sum, divide); backward 4
 *        (dy*y, row sum, subtract, multiply)
 *   softmax cross-entropy loss  forward 5 / logit (the softmax; the
 *        per-row log and pick are not counted); backward 2 / logit
 *        (subtract the one-hot, scale by 1/rows)
 *   GELU 8 / element forward, 12 backward; tanh 4 forward, 3 backward
 *        (1 - y*y, times dy): estimates, transcendental functions counted
 *        as 4 FLOPs
 *   embedding forward 0 (a gather); backward 1 / element of dy (scatter
 *        add into the table)
 *   concat, slice backward 0 (copies)
 *   update    plain SGD 2 / parameter element (p -= lr*g; 12 DRAM bytes);
 *        SGD with momentum 4 (buf = mu*buf + g,
 *        p -= lr*buf); Adam 13 (m: 3, v: 4, p -= lr*m/(sqrt(v)+eps) with
 *        bias corrections: 6)
 *
 * DRAM bytes per op: a roofline lower bound, every input, output and
 * weight read or written once (4 bytes an fp32 element; masks 1 byte,
 * ids and labels 8). Updates: SGD reads p, g, buf and writes p, buf
 * (20 bytes an element); Adam reads p, g, m, v and writes p, m, v (28).
 *
 * WHAT EACH BACKWARD OP READS (and writes):
 *   conv        NAME.bwd_data   (OT_CONV_BWD_DATA)   W, dY     -> dX
 *               NAME.bwd_filter (OT_CONV_BWD_FILTER) X, dY     -> dW [db]
 *               no bwd_data when X needs no gradient (the first layer)
 *   linear      NAME.bwd_data   (OT_MATMUL_BWD)      W, dY     -> dX
 *               NAME.bwd_weight (OT_MATMUL_BWD)      X, dY     -> dW [db]
 *   batchnorm   NAME.bwd (OT_BATCHNORM_BWD)  X, saved, gamma, dY
 *                                            -> dX, dgamma, dbeta
 *   layernorm   NAME.bwd (OT_LAYERNORM_BWD)  the same
 *   relu        NAME.bwd (OT_RELU_BWD)       dY, Y (its OUTPUT) -> dX
 *   max pool    NAME.bwd (OT_POOL_BWD)       X, Y, dY  -> dX
 *   avg pool    NAME.bwd (OT_POOL_BWD)       dY        -> dX
 *   dropout     NAME.bwd (OT_DROPOUT_BWD)    dY, mask  -> dX
 *   softmax     NAME.bwd (OT_SOFTMAX_BWD)    dY, Y     -> dX
 *   loss        NAME.bwd (OT_LOSS_BWD)       probs, labels -> dlogits
 *   GELU        NAME.bwd (OT_ELEMWISE)       dY, X     -> dX
 *   tanh        NAME.bwd (OT_ELEMWISE)       dY, Y     -> dX
 *   scale       NAME.bwd (OT_ELEMWISE)       dY        -> dX
 *   embedding   NAME.bwd_weight (OT_EMBEDDING_BWD) ids, dY -> dtable
 *   attn scores NAME.bwd_q (OT_MATMUL_BWD) dS, K -> dQ;
 *               NAME.bwd_k dS, Q -> dK
 *   attn ctx    NAME.bwd_p (OT_MATMUL_BWD) dC, V -> dP;
 *               NAME.bwd_v dC, P -> dV
 *   slice       NAME.bwd (OT_ELEMWISE)       dY -> dX (full size)
 *   TF op       gen_tf_op: per input with a gradient, none (dY itself)
 *               or NAME.bwd / .bwd_x / .bwd_y (OT_ELEMWISE) reading dY
 *               and what TF's gradient function reads (tf_defs)
 *   add, mask add, flatten: no kernel; dY itself is the gradient of the
 *               input(s) (add: of both branches)
 *   concat      no kernel; each input's gradient is a view (channel
 *               slice) of dY, which stays allocated until its last
 *               reader; byte counts of the readers use the slice's size
 * A value that several layers read gets one gradient contribution from
 * each; they are summed as they arrive (as torch's autograd input
 * buffers do) by an OT_ADD op T.grad_acc<k> in the consumer's layer.
 * Parameter gradients are summed the same way (tied weights).
 *
 * PRESETS:
 *   graph  inplace = true on: forward ReLU (y in x's storage); the
 *          elementwise backward ops relu_bwd, dropout_bwd, and the GELU,
 *          tanh and scale backward ops (dx in dy's storage; dY is their
 *          input 0); gradient accumulation (the sum in its first
 *          addend's storage). Only where input 0 and output 0 have the
 *          same size. The executor applies inplace only in its graph mode
 *          and only when nothing later reads input 0.
 *   eager  no op is in place. Everything else is identical.
 *
 * CAFFE (the caffe personality; sources in the comments where each is
 * built and in README, "Framework personalities"): hidden buffers the
 * forward op writes and the backward reads -- batchnorm NAME.temp and
 * NAME.x_norm (+ NAME.x_norm.diff written by the backward when in
 * place), in-place Scale (gen_affine) NAME.temp, max pool NAME.max_idx
 * (int32, output size; the backward then reads dY and it only), dropout
 * masks of 4 bytes an element, the loss's NAME.scratch (the logits' diff
 * used in forward; the backward writes dlogits over it in place); fp32
 * labels; Eltwise (add) and Concat backward as copies into each input's
 * own gradient (bwd_copies); the third and later gradient contributions
 * summed in place into the running sum (IP_SPLIT); per conv layer one
 * NAME.workspace (conv_choice) that its ops read, the ops carrying the
 * one chosen algorithm with workspace 0. Grouped convolutions
 * (gen_conv_grouped) count parameters, FLOPs and algorithms per group.
 * LRN (gen_lrn): forward 2n+7 FLOPs an element, backward 4n+10, reads
 * dY, Y, X; Scale (gen_affine): 2 forward, 4 backward.
 *
 * PRECISION (wl_gen_args.precision; every value carries its element
 * size, gen_val.esz, and every tensor states it, wl_tensor.esz):
 *   fp32, tf32  everything 4 bytes; tf32 changes only the matmul and
 *          convolution math (the profile's tensor-core figures, sim/hw.c)
 *   fp16-autocast, bf16-autocast  torch.autocast around the forward
 *          and loss, model and optimizer in fp32 (torch.cuda.amp's
 *          recipe; docs/source/amp.rst, "Autocast Op Reference", torch
 *          2.x): parameters, their .grad and the optimizer states stay
 *          fp32 (4 bytes: the "master weights" are the parameters
 *          themselves); ops on the lower-precision list (linear, matmul,
 *          bmm, baddbmm, addmm, conv*) write 2-byte outputs and read
 *          2-byte copies of their inputs (ac_input, ac_weight, with
 *          torch's cast cache for weights); ops on the fp32 list
 *          (layer_norm, softmax, log_softmax, cross_entropy / nll_loss,
 *          pow, ...) write fp32; any other op writes its inputs' widest
 *          type (type promotion: an fp32 residual plus a half-precision
 *          branch is fp32), batch_norm its input's (cuDNN's mixed
 *          batchnorm). Activation gradients have their value's size.
 *          Embeddings read the fp32 table: fp32 output.
 *   bf16-pure  model.to(torch.bfloat16): parameters, gradients,
 *          optimizer states and every activation bf16 (2 bytes); the
 *          losses still see fp32 logits where the network upcasts them
 *          (gen_cast; Hugging Face's loss does). Images and ids stay as
 *          loaded (fp32, int64).
 *   Optimizer states: the parameter's size, except adam8bit (state_bytes,
 *   bitsandbytes' rule). Gradient scaling (GradScaler, fp16) keeps no
 *   tensor of parameter size and is not modelled. Not scaled with
 *   precision: cuDNN workspaces (conv_algo.c works them out for fp32).
 *
 * CONVOLUTION ALGORITHMS (every conv, conv_bwd_data and conv_bwd_filter
 * op): cuDNN's algorithms as workloads/conv_algo.c models them (names,
 * constraints, workspace and arithmetic, with their sources); wl keeps
 * them fastest first. Each conv op also carries its geometry (wl_op.conv)
 * so that a calibrated profile's measured conv_algos: can replace the
 * model's list (sim/ex.c).
 */
#include "gen.h"

#include "conv_algo.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define F32 4.0		  /* bytes of an fp32 element */
#define NAME_MAX_LEN 512  /* longest derived name */

/* Kinds of tape entries. */
enum gen_lk {
	GL_CONV, GL_BN, GL_RELU, GL_MAXPOOL, GL_AVGPOOL, GL_FLATTEN, GL_ADD,
	GL_CONCAT, GL_SLICE, GL_LINEAR, GL_DROPOUT, GL_GELU, GL_TANH,
	GL_SCALE, GL_MASK_ADD, GL_SOFTMAX, GL_LAYERNORM, GL_EMBEDDING,
	GL_ATTN_SCORES, GL_ATTN_CONTEXT, GL_LOSS, GL_AFFINE, GL_LRN,
	GL_TF,	  /* one TensorFlow op (gen_tf_op; gen_layer.tf says which) */
	GL_RMSNORM, GL_SILU, GL_CAST, GL_SDPA,
	GL_FUSED_LOSS, /* gen_fused_lm_loss */
	GL_PARAM  /* a parameter used as a value (gen_param_value): no op */
};

/* A forward value. */
struct gen_val {
	uint32_t tensor;    /* wl tensor id (views share their source's) */
	uint32_t root;	    /* value that owns the tensor (itself unless a
			       view): holds the gradient name counters */
	int64_t c, h, w;    /* per-sample shape */
	bool needs_grad;    /* a parameter lies upstream: gets a gradient */
	uint32_t grad;	    /* gradient so far (summed contributions),
			       WL_NONE before the first */
	uint32_t n_named;   /* gradient tensors named after this root */
	uint32_t n_sums;    /* accumulation ops named after this root */
	uint32_t param;	    /* parameter index when the value is a
			       parameter (gen_param_value: not batch-sized,
			       its gradient goes to the parameter),
			       GEN_NONE otherwise */
	int esz;	    /* bytes an element (4 fp32, 2 fp16/bf16;
			       PRECISION); its gradient's too */
};

/* A parameter tensor. */
struct gen_param {
	uint32_t tensor;   /* the WL_PARAM tensor */
	uint32_t state[2]; /* optimizer state tensors, WL_NONE if unused */
	uint64_t numel;	   /* elements */
	uint32_t grad;	   /* gradient so far, WL_NONE before the first */
	uint32_t n_named;  /* gradient tensors created */
	uint32_t n_sums;   /* accumulation ops emitted */
	uint32_t layer;	   /* tape index of the layer that created it */
	bool frozen;	   /* requires_grad=False (gen_set_frozen): no
			      gradient, state or update */
};

/* A forward layer on the tape. */
struct gen_layer {
	enum gen_lk kind;   /* what it is */
	char *name;	    /* its op name (owned; NULL for flatten) */
	uint32_t in0, n_in; /* inputs: g->ins[in0 .. in0 + n_in) (values) */
	uint32_t out;	    /* output value, GEN_NONE for a loss */
	uint32_t aux;	    /* tensor: BN/LN saved stats, dropout mask, loss
			       probs; WL_NONE otherwise */
	uint32_t aux2;	    /* tensor: loss labels; value: mask of mask
			       add; WL_NONE otherwise */
	uint32_t wp, bp;    /* weight / bias parameter index, GEN_NONE */
	uint32_t block;	    /* gen_block when it was added (WL_NONE) */
	uint8_t region;	    /* gen_region when it was added */
	int64_t kh, kw;	    /* conv/pool kernel */
	int64_t stride;	    /* conv/pool stride */
	int64_t ph, pw;	    /* conv/pool padding */
	int64_t heads;	    /* attention heads */
	int64_t groups;	    /* conv groups (1 when ungrouped) */
	uint32_t hid[2];    /* caffe: hidden buffers the forward op writes
			       and the backward reads (fw_hidden), WL_NONE
			       when none */
	bool inplace;	    /* the forward op runs in place (IP_LAYER
			       granted): its backward runs in place too */
	double work;	    /* pool: window elements summed over the batch's
			       outputs (the FLOPs of forward and backward) */
	uint32_t fwd_op;    /* its forward op (the op named as the layer),
			       WL_NONE for views */
	enum gen_tf_op tf;  /* GL_TF: which TensorFlow op */
	uint32_t wcast;	    /* tensor: the autocast copy of the weight the
			       forward and bwd_data read, WL_NONE */
	double causal;	    /* GL_SDPA: FLOP fraction computed (0.5 causal,
			       1 full) */
	bool nll;	    /* GL_LOSS: backward as torch's nll_loss then
			       log_softmax backward (gen_loss_nll) */
};

struct gen {
	struct wl_workload *w;	 /* the workload being built (owned) */
	int64_t batch;		 /* samples per iteration */
	int64_t size;		 /* wl_gen_args.size as given */
	enum wl_framework fw;	 /* framework personality */
	enum wl_optim optim;	 /* update rule */
	enum wl_precision prec;	 /* PRECISION */
	bool autocast;		 /* fp16-/bf16-autocast */
	int aesz;		 /* bytes of a matmul output element */
	int pesz;		 /* bytes of a parameter (and .grad) element */
	gms_err err;		 /* first error, msg[0] == 0 when none */
	struct gen_val *vals;	 /* forward values */
	uint32_t n_vals;	 /* values in use */
	uint32_t cap_vals;	 /* allocated length of vals */
	struct gen_param *params; /* parameters in creation order */
	uint32_t n_params;	 /* parameters in use */
	uint32_t cap_params;	 /* allocated length of params */
	struct gen_layer *tape;	 /* forward layers in order */
	uint32_t n_tape;	 /* layers on the tape */
	uint32_t cap_tape;	 /* allocated length of tape */
	uint32_t *ins;		 /* pooled input lists of the tape */
	uint32_t n_ins;		 /* entries of ins in use */
	uint32_t cap_ins;	 /* allocated length of ins */
	bool backward;		 /* gen_finish is emitting backward ops */
	bool layers_inplace;	 /* the definition runs Dropout, BatchNorm
				    and Scale in place (Caffe prototxts;
				    gen_set_layers_inplace) */
	bool frozen;		 /* new parameters are frozen
				    (gen_set_frozen) */
	const char *cur_layer;	 /* layer of the backward op emitted last
				    (for accumulations a view triggers) */
	uint32_t block;		 /* gen_block (WL_NONE: none) */
	uint8_t region;		 /* gen_region */
};

/* ---- Small helpers ------------------------------------------------- */

static const struct gen_tensor NONE_T = {GEN_NONE, 0, 0, 0};

struct gen_tensor gen_none(void)
{
	return NONE_T;
}

int gen_fail(struct gen *g, const char *fmt, ...)
{
	if (!g || g->err.msg[0])
		return -1;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(g->err.msg, sizeof g->err.msg, fmt, ap);
	va_end(ap);
	if (!g->err.msg[0])
		snprintf(g->err.msg, sizeof g->err.msg, "generator error");
	return -1;
}

bool gen_ok(const struct gen *g)
{
	return g && !g->err.msg[0];
}

const char *gen_errmsg(const struct gen *g)
{
	return g ? g->err.msg : "no generator context";
}

void gen_set_frozen(struct gen *g, bool on)
{
	if (g)
		g->frozen = on;
}

void gen_block(struct gen *g, int64_t block)
{
	g->block = block < 0 || block >= (int64_t)WL_NONE ? WL_NONE
							 : (uint32_t)block;
	wl_set_block(g->w, g->block, g->region);
}

void gen_region(struct gen *g, enum wl_region region)
{
	g->region = (uint8_t)region;
	wl_set_block(g->w, g->block, g->region);
}

void gen_set_layers_inplace(struct gen *g, bool on)
{
	if (g)
		g->layers_inplace = on;
}

int64_t gen_batch(const struct gen *g)
{
	return g ? g->batch : 0;
}

int64_t gen_size(const struct gen *g)
{
	return g ? g->size : 0;
}

enum wl_framework gen_framework(const struct gen *g)
{
	return g ? g->fw : WL_FW_TF_GRAPH;
}

enum wl_optim gen_optim(const struct gen *g)
{
	return g ? g->optim : WL_OPTIM_MOMENTUM;
}

const struct wl_workload *gen_workload(const struct gen *g)
{
	return g ? g->w : NULL;
}

int64_t gen_numel(struct gen_tensor t)
{
	return t.c * t.h * t.w;
}

uint32_t gen_tensor_id(const struct gen *g, struct gen_tensor t)
{
	if (!g || t.v >= g->n_vals)
		return WL_NONE;
	return g->vals[t.v].tensor;
}

/* Grow an array to hold n + 1 elements; -1 on out of memory (recorded). */
static int grow(struct gen *g, void **arr, uint32_t *cap, uint32_t n,
		size_t elem)
{
	if (n < *cap)
		return 0;
	uint32_t nc = *cap ? *cap * 2 : 64;
	void *p = realloc(*arr, (size_t)nc * elem);
	if (!p)
		return gen_fail(g, "%s: out of memory", g->w->name);
	*arr = p;
	*cap = nc;
	return 0;
}

/* Format a name into buf (NAME_MAX_LEN); NULL (error recorded) when it
 * does not fit. */
static const char *fmt_name(struct gen *g, char *buf, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The conversions of names: %s, %c, %d, %u, %lld and %%, written here
 * (vsnprintf's format interpreter was the largest part of building a
 * network once each max-batch probe built its own; then the generators'
 * own snprintf calls were 4% of max-batch.yaml's instructions, issue 18).
 * Writes what vsnprintf(buf, cap, fmt, ap) would and returns its count;
 * -1 on any other conversion (a flag, a width, another length), for
 * vsnprintf to do. cap >= 1. */
static int name_cat(char *buf, size_t cap, const char *fmt, va_list ap)
{
	size_t n = 0; /* characters of the full result so far */
	for (const char *f = fmt; *f; f++) {
		const char *add = f;
		size_t len = strcspn(f, "%");
		char num[24];
		if (len) {
			f += len - 1;
		} else {
			f++;
			long long v = 0;
			unsigned long long u = 0;
			bool neg = false;
			switch (*f) {
			case 's':
				add = va_arg(ap, const char *);
				len = strlen(add);
				break;
			case 'c':
				num[0] = (char)va_arg(ap, int);
				add = num;
				len = 1;
				break;
			case '%':
				len = 1;
				break;
			case 'u':
				u = va_arg(ap, unsigned);
				goto digits;
			case 'd':
				v = va_arg(ap, int);
				goto sign;
			case 'l':
				if (f[1] != 'l' || f[2] != 'd')
					return -1;
				f += 2;
				v = va_arg(ap, long long);
			sign:
				neg = v < 0;
				u = neg ? 0ull - (unsigned long long)v
					: (unsigned long long)v;
			digits: {
				char *e = num + sizeof num, *d = e;
				do
					*--d = (char)('0' + u % 10);
				while (u /= 10);
				if (neg)
					*--d = '-';
				add = d;
				len = (size_t)(e - d);
				break;
			}
			default:
				return -1;
			}
		}
		if (n < cap - 1) {
			size_t room = cap - 1 - n;
			memcpy(buf + n, add, len < room ? len : room);
		}
		n += len;
	}
	buf[n < cap - 1 ? n : cap - 1] = '\0';
	return n > INT_MAX ? -1 : (int)n;
}

int gen_fmt(char *buf, size_t cap, const char *fmt, ...)
{
	va_list ap, ap2;
	va_start(ap, fmt);
	va_copy(ap2, ap);
	int n = cap ? name_cat(buf, cap, fmt, ap) : -1;
	if (n < 0)
		n = vsnprintf(buf, cap, fmt, ap2);
	va_end(ap2);
	va_end(ap);
	return n;
}

static const char *fmt_name(struct gen *g, char *buf, const char *fmt, ...)
{
	va_list ap, ap2;
	va_start(ap, fmt);
	va_copy(ap2, ap);
	int n = name_cat(buf, NAME_MAX_LEN, fmt, ap);
	if (n < 0)
		n = vsnprintf(buf, NAME_MAX_LEN, fmt, ap2);
	va_end(ap2);
	va_end(ap);
	if (n < 0 || n >= NAME_MAX_LEN) {
		gen_fail(g, "name too long (%d characters) starting '%.40s'",
			 n, buf);
		return NULL;
	}
	return buf;
}

/* Bytes of a per-sample element count at the batch, fp32. */
static uint64_t fbytes(const struct gen *g, int64_t numel)
{
	return (uint64_t)numel * (uint64_t)g->batch * 4u;
}

static int64_t vnumel(const struct gen_val *v)
{
	return v->c * v->h * v->w;
}

/* Elements of a value over the whole batch, as a double (a parameter
 * value: the parameter's elements). */
static double velems(const struct gen *g, uint32_t v)
{
	const struct gen_val *x = &g->vals[v];
	if (x->param != GEN_NONE)
		return (double)g->params[x->param].numel;
	return (double)vnumel(x) * (double)g->batch;
}

/* Bytes of a value at the batch (fp32). */
static double vbytes(const struct gen *g, uint32_t v)
{
	const struct gen_val *x = &g->vals[v];
	if (x->param != GEN_NONE)
		return velems(g, v) * (double)g->pesz;
	return velems(g, v) * (double)x->esz;
}

static const char *tname(const struct gen *g, uint32_t t)
{
	return g->w->tensors[t].name;
}

/* Add a tensor; WL_NONE with the error recorded. */
static uint32_t add_tensor(struct gen *g, const char *name, uint64_t bytes,
			   enum wl_kind k, int esz)
{
	if (!gen_ok(g) || !name)
		return WL_NONE;
	gms_err e;
	uint32_t id = wl_add_tensor(g->w, name, bytes, k, &e);
	if (id == WL_NONE)
		gen_fail(g, "%s", e.msg);
	else
		wl_set_esz(g->w, id, (unsigned)esz);
	return id;
}

/* Where an op may write its output over its input (input 0 and output 0
 * of equal size; the executor takes the block over only when nothing
 * later reads the input). Which of these a framework does is
 * fw_inplace's table. */
enum gen_ip {
	IP_NO,	 /* never in place */
	IP_RELU, /* forward ReLU */
	IP_GRAD, /* elementwise backward: dx over dy (relu, dropout, GELU,
		    tanh and scale backward) */
	IP_ACC,	 /* gradient accumulation: the sum over an addend */
	IP_LAYER, /* a layer the network definition runs in place (Caffe's
		     top == bottom: Dropout, BatchNorm, Scale; forward and
		     backward) */
	IP_SPLIT, /* a third or later gradient added into the running sum
		     (Caffe's Split backward) */
	IP_CWISE, /* a TensorFlow cwise forward kernel (gen_tf_op): the
		     output over input 0 */
	IP_RESID, /* a residual sum the network definition writes into its
		     first operand (gen_add_inplace: torchvision's
		     `out += identity`) */
};

/* Does the context's framework run an op of in-place kind k in place?
 *   tf-graph  all four. TensorFlow 1.x kernels call
 *             forward_input_or_allocate_output, which reuses an input
 *             buffer no other op still needs: ReluOp (UnaryElementWiseOp,
 *             core/kernels/relu_op.h), the *Grad binary kernels
 *             (BinaryElementWiseOp, the same file; cwise_ops_common.h)
 *             and AddN (core/kernels/aggregate_ops.cc); the cwise
 *             forward kernels of gen_tf_op likewise (BinaryOpState:
 *             forward_input_or_allocate_output({0, 1}, 0, ...) in
 *             cwise_ops_common.cc, as stored for TF 1.x, id 60158809;
 *             older versions allocate: assumed present in 1.11).
 *   tf-eager  none: every eager op's inputs are still referenced by the
 *             Python handles and by the tape (eager/tape.h keeps them
 *             for the gradient), so a buffer is never the sole owner.
 *   pytorch   forward ReLU only where the model says inplace=True, as
 *             torchvision's models do (nn.ReLU(inplace=True) in
 *             resnet.py, vgg.py, alexnet.py, densenet.py, googlenet.py);
 *             the residual sum, which torchvision's BasicBlock and
 *             Bottleneck write as `out += identity` (resnet.py forward,
 *             torchvision 0.14: an add_ into bn's output, which batch
 *             norm's backward does not read);
 *             autograd's threshold_backward allocates its result, and
 *             InputBuffer::accumulate (torch/csrc/autograd/
 *             input_buffer.cpp) sums a second gradient in place into the
 *             first when that one is not shared.
 *   caffe     forward ReLU and the elementwise backward: an in-place layer
 *             (top == bottom in the prototxt) shares the blob's data and
 *             diff, so its backward writes bottom_diff over top_diff
 *             (relu_layer.cu, dropout_layer.cu); a Split layer's
 *             backward sums its first two tops' diffs into the bottom's
 *             own diff (caffe_gpu_add) and adds the others into that sum
 *             (caffe_gpu_axpy, split_layer.cu): the first sum is a new
 *             blob, later ones are in place (IP_SPLIT). Layers the
 *             prototxt runs in place (IP_LAYER: Dropout, BatchNorm and
 *             Scale in BVLC's and KaimingHe's definitions) share the
 *             blob in forward and its diff in backward. */
static bool fw_inplace(const struct gen *g, enum gen_ip k)
{
	switch (g->fw) {
	case WL_FW_TF_GRAPH:
		/* IP_RESID: TF's Add would forward its input too (cwise
		 * BinaryOp), but gen_add_inplace names a PyTorch model's
		 * own `+=`; tf-graph models keep their allocating add */
		return k != IP_NO && k != IP_RESID;
	case WL_FW_PYTORCH:
		return k == IP_RELU || k == IP_ACC || k == IP_RESID;
	case WL_FW_CAFFE:
		return k == IP_RELU || k == IP_GRAD || k == IP_SPLIT ||
		       (k == IP_LAYER && g->layers_inplace);
	case WL_FW_TF_EAGER:
	case WL_FW_COUNT:
		break;
	}
	return false;
}

/* Description of an op to emit (a compact wl_op_desc). */
struct op_spec {
	const char *name;	/* op name */
	const char *layer;	/* layer name */
	enum wl_op_type type;	/* kernel type */
	enum wl_phase phase;	/* forward / backward / update */
	uint32_t in[6];		/* inputs (tensor ids) */
	uint32_t n_in;		/* inputs used */
	uint32_t out[4];	/* outputs (tensor ids) */
	uint32_t n_out;		/* outputs used */
	double flops, bytes;	/* cost figures */
	enum gen_ip inplace;	/* which in-place rule may let out[0]
				   reuse in[0] (fw_inplace) */
	const struct wl_algo *algos; /* convolution algorithms */
	uint32_t n_algos;	/* entries of algos */
	const struct wl_conv *conv; /* convolution geometry, NULL */
	struct wl_gemm gemm;	/* GEMM shape (gemm_of), batch 0: none */
	uint64_t workspace;	/* scratch of the kernel (no algos) */
};

/* The GEMM an op runs, as wl.h's struct wl_gemm keys it: `batch`
 * products C (m x n) = A (m x k) B (k x n). None (batch 0) when a
 * figure does not fit 32 bits. A linear layer (torch.nn.functional.
 * linear: addmm/matmul of X (rows x in) by W^T) is m = rows (batch x
 * sequence), n = out, k = in; its backward's data gradient dX = dY W is
 * m = rows, n = in, k = out, its weight gradient dW = dY^T X is m = out,
 * n = in, k = rows. Attention's scores Q K^T are batch x heads products
 * of seq_q x head_dim by head_dim x seq_k; its context P V of seq_q x
 * seq_k by seq_k x head_dim (torch.matmul on 4-d tensors: a batched
 * GEMM). */
static struct wl_gemm gemm_of(double batch, double m, double n, double k)
{
	const double d[] = {batch, m, n, k};
	for (size_t i = 0; i < 4; i++)
		if (!(d[i] >= 1 && d[i] <= (double)UINT32_MAX))
			return (struct wl_gemm){0, 0, 0, 0};
	return (struct wl_gemm){(uint32_t)batch, (uint32_t)m, (uint32_t)n,
				(uint32_t)k};
}

static int emit(struct gen *g, const struct op_spec *s)
{
	if (!gen_ok(g) || !s->name)
		return -1;
	struct wl_op_desc d = {
		.name = s->name,
		.type = s->type,
		.phase = s->phase,
		.layer = s->layer,
		.in = s->in,
		.n_in = s->n_in,
		.out = s->out,
		.n_out = s->n_out,
		.flops = s->flops,
		.bytes = s->bytes,
		.recomputable = s->phase == WL_FWD && s->type != OT_DROPOUT,
		.inplace = fw_inplace(g, s->inplace),
		.algos = s->algos,
		.n_algos = s->n_algos,
		.conv = s->conv,
		.gemm = s->gemm,
		.workspace = s->workspace,
	};
	gms_err e;
	uint32_t id = wl_add_op(g->w, &d, &e);
	if (id == WL_NONE)
		return gen_fail(g, "%s", e.msg);
	struct gen_layer *L = g->n_tape ? &g->tape[g->n_tape - 1] : NULL;
	if (s->phase == WL_FWD && L && L->name && !strcmp(L->name, s->name)) {
		L->fwd_op = id;
		L->inplace = d.inplace;
	}
	return 0;
}

/* A caffe hidden buffer NAME.SFX of `bytes` (fw_hidden); WL_NONE with
 * the error recorded. */
static uint32_t hidden(struct gen *g, const char *name, const char *sfx,
		       uint64_t bytes, enum wl_kind k, int esz)
{
	char buf[NAME_MAX_LEN];
	return add_tensor(g, fmt_name(g, buf, "%s.%s", name, sfx), bytes, k,
			  esz);
}

/* Is the context's personality Caffe (fw_hidden buffers, the limited
 * convolution workspace)? */
static bool caffe(const struct gen *g)
{
	return g->fw == WL_FW_CAFFE;
}

/* inplace is only offered when input 0 and output 0 have equal sizes. */
static bool same_size(const struct gen *g, uint32_t a, uint32_t b)
{
	return g->w->tensors[a].bytes == g->w->tensors[b].bytes;
}

/* New value over tensor t. */
static struct gen_tensor new_val(struct gen *g, uint32_t t, uint32_t root,
				 int64_t c, int64_t h, int64_t w,
				 bool needs_grad, int esz)
{
	if (!gen_ok(g) || t == WL_NONE ||
	    grow(g, (void **)&g->vals, &g->cap_vals, g->n_vals,
		 sizeof *g->vals) < 0)
		return NONE_T;
	uint32_t v = g->n_vals++;
	g->vals[v] = (struct gen_val){.tensor = t,
				      .root = root == GEN_NONE ? v : root,
				      .c = c, .h = h, .w = w,
				      .needs_grad = needs_grad,
				      .grad = WL_NONE, .param = GEN_NONE,
				      .esz = esz};
	return (struct gen_tensor){v, c, h, w};
}

/* Check a value passed in by a generator; records an error. */
static bool check_in(struct gen *g, const char *op, struct gen_tensor x)
{
	if (!gen_ok(g))
		return false;
	if (x.v >= g->n_vals)
		return gen_fail(g, "%s: invalid input tensor", op), false;
	return true;
}

/* Check a name and the context before a layer. */
static bool start(struct gen *g, const char *name)
{
	if (!gen_ok(g))
		return false;
	if (!name || !*name)
		return gen_fail(g, "%s: a layer has no name", g->w->name),
		       false;
	if (g->backward)
		return gen_fail(g, "%s: layer added after gen_finish", name),
		       false;
	return true;
}

/* Output activation NAME.out of a forward op, per-sample shape. */
static struct gen_tensor out_val(struct gen *g, const char *name, int64_t c,
				 int64_t h, int64_t w, bool needs_grad,
				 int esz)
{
	char buf[NAME_MAX_LEN];
	if (c < 1 || h < 1 || w < 1) {
		gen_fail(g, "%s: empty output %lldx%lldx%lld", name,
			 (long long)c, (long long)h, (long long)w);
		return NONE_T;
	}
	if ((double)c * (double)h * (double)w * (double)g->batch * 4.0 >
	    4.0e18) {
		gen_fail(g, "%s: output too large", name);
		return NONE_T;
	}
	uint32_t t = add_tensor(g, fmt_name(g, buf, "%s.out", name),
				(uint64_t)(c * h * w) * (uint64_t)g->batch *
					(uint64_t)esz,
				WL_ACT, esz);
	return new_val(g, t, GEN_NONE, c, h, w, needs_grad, esz);
}

/* Record a tape entry; returns its index or GEN_NONE. */
static uint32_t tape_add(struct gen *g, enum gen_lk kind, const char *name,
			 const uint32_t *in, uint32_t n_in, uint32_t out)
{
	if (!gen_ok(g) ||
	    grow(g, (void **)&g->tape, &g->cap_tape, g->n_tape,
		 sizeof *g->tape) < 0)
		return GEN_NONE;
	for (uint32_t i = 0; i < n_in; i++) {
		if (grow(g, (void **)&g->ins, &g->cap_ins, g->n_ins + i,
			 sizeof *g->ins) < 0)
			return GEN_NONE;
		g->ins[g->n_ins + i] = in[i];
	}
	char *nm = NULL;
	if (name) {
		nm = malloc(strlen(name) + 1);
		if (!nm)
			return gen_fail(g, "%s: out of memory", name), GEN_NONE;
		strcpy(nm, name);
	}
	uint32_t l = g->n_tape++;
	g->tape[l] = (struct gen_layer){.kind = kind, .name = nm,
					.in0 = g->n_ins, .n_in = n_in,
					.out = out, .aux = WL_NONE,
					.aux2 = WL_NONE, .wp = GEN_NONE,
					.groups = 1,
					.hid = {WL_NONE, WL_NONE},
					.bp = GEN_NONE, .fwd_op = WL_NONE,
					.wcast = WL_NONE, .block = g->block,
					.region = g->region};
	g->n_ins += n_in;
	return l;
}

/* Bytes of one optimizer state tensor of a parameter of numel elements:
 * the parameter's dtype (fp32 master weights keep fp32 states; pure bf16
 * keeps bf16 ones), except adam8bit, as bitsandbytes' Optimizer2State
 * (bitsandbytes/optim/optimizer.py, init_state): a parameter of fewer
 * than min_8bit_size = 4096 elements keeps fp32 states ("if
 * config['optim_bits'] == 32 or p.numel() < config['min_8bit_size']"),
 * a larger one a uint8 state (torch.zeros_like(p, dtype=torch.uint8))
 * plus, blockwise (block_wise=True, the default), one fp32 absmax per
 * block of 256 elements ("blocks = n // 256; blocks += 1 if n % 256 > 0
 * else 0"). The 256-entry quantisation maps (state['qmap1'], 'qmap2',
 * 1 KiB each) are not counted. */
static uint64_t state_bytes(const struct gen *g, int64_t numel)
{
	uint64_t n = (uint64_t)numel;
	if (g->optim != WL_OPTIM_ADAM8BIT)
		return n * (uint64_t)g->pesz;
	if (n < 4096)
		return n * 4u;
	return n + (n / 256 + (n % 256 > 0)) * 4u;
}

/* A parameter of `numel` elements named NAME.SUFFIX, with its optimizer
 * state; returns its index or GEN_NONE. */
static uint32_t new_param(struct gen *g, const char *name, const char *sfx,
			  int64_t numel, uint32_t layer)
{
	char buf[NAME_MAX_LEN], sb[NAME_MAX_LEN];
	if (!gen_ok(g))
		return GEN_NONE;
	if (numel < 1)
		return gen_fail(g, "%s: empty parameter", name), GEN_NONE;
	const char *pn = sfx ? fmt_name(g, buf, "%s.%s", name, sfx)
			     : fmt_name(g, buf, "%s", name);
	uint64_t b = (uint64_t)numel * (uint64_t)g->pesz;
	uint64_t sb8 = state_bytes(g, numel);
	uint32_t t = add_tensor(g, pn, b, WL_PARAM, g->pesz);
	int se = g->optim != WL_OPTIM_ADAM8BIT ? g->pesz : numel < 4096 ? 4 : 1;
	if (t == WL_NONE ||
	    grow(g, (void **)&g->params, &g->cap_params, g->n_params,
		 sizeof *g->params) < 0)
		return GEN_NONE;
	struct gen_param p = {.tensor = t, .state = {WL_NONE, WL_NONE},
			      .numel = (uint64_t)numel, .grad = WL_NONE,
			      .layer = layer, .frozen = g->frozen};
	if (g->frozen) {
		/* no gradient, no optimizer state */
	} else if (g->optim == WL_OPTIM_MOMENTUM) {
		p.state[0] = add_tensor(
			g, fmt_name(g, sb, "%s.momentum", pn), sb8,
			WL_OPT_STATE, se);
	} else if (g->optim >= WL_OPTIM_ADAM) {
		p.state[0] = add_tensor(g, fmt_name(g, sb, "%s.adam_m", pn),
					sb8, WL_OPT_STATE, se);
		p.state[1] = add_tensor(g, fmt_name(g, sb, "%s.adam_v", pn),
					sb8, WL_OPT_STATE, se);
	}
	if (!gen_ok(g))
		return GEN_NONE;
	g->params[g->n_params] = p;
	return g->n_params++;
}

static double pbytes(const struct gen *g, uint32_t p)
{
	return p == GEN_NONE ? 0.0
			     : (double)g->params[p].numel * (double)g->pesz;
}

/* ---- Context ------------------------------------------------------ */

struct gen *gen_new(const char *name, const struct wl_gen_args *a,
		    gms_err *err)
{
	if (!a || !name || !*name) {
		gms_errf(err, "gen_new: no name or arguments");
		return NULL;
	}
	if (a->batch < 1) {
		gms_errf(err, "%s: batch must be >= 1 (got %lld)", name,
			 (long long)a->batch);
		return NULL;
	}
	if ((unsigned)a->framework >= WL_FW_COUNT ||
	    (unsigned)a->optimizer >= WL_OPTIM_COUNT ||
	    (unsigned)a->precision >= WL_PREC_COUNT) {
		gms_errf(err, "%s: invalid framework, optimizer or precision",
			 name);
		return NULL;
	}
	struct gen *g = calloc(1, sizeof *g);
	if (!g || !(g->w = wl_new(name, a->batch)) ||
	    wl_reserve(g->w, &a->reserve) < 0) {
		if (g)
			wl_free(g->w);
		free(g);
		gms_errf(err, "%s: out of memory", name);
		return NULL;
	}
	g->batch = a->batch;
	g->block = WL_NONE;
	g->size = a->size;
	g->fw = a->framework;
	g->optim = a->optimizer;
	g->prec = a->precision;
	g->autocast = a->precision == WL_PREC_FP16_AUTO ||
		      a->precision == WL_PREC_BF16_AUTO;
	g->aesz = a->precision >= WL_PREC_FP16_AUTO ? 2 : 4;
	g->pesz = a->precision == WL_PREC_BF16_PURE ? 2 : 4;
	g->w->math = wl_precision_math(a->precision);
	return g;
}

void gen_free(struct gen *g)
{
	if (!g)
		return;
	for (uint32_t i = 0; i < g->n_tape; i++)
		free(g->tape[i].name);
	free(g->tape);
	free(g->ins);
	free(g->vals);
	free(g->params);
	wl_free(g->w);
	free(g);
}

uint32_t gen_param_find(const struct gen *g, const char *tensor_name)
{
	if (!g || !tensor_name)
		return GEN_NONE;
	uint32_t t = wl_tensor_id(g->w, tensor_name);
	for (uint32_t p = 0; t != WL_NONE && p < g->n_params; p++)
		if (g->params[p].tensor == t)
			return p;
	return GEN_NONE;
}

/* ---- Inputs ------------------------------------------------------- */

struct gen_tensor gen_input(struct gen *g, const char *name, int64_t c,
			    int64_t h, int64_t w)
{
	if (!start(g, name))
		return NONE_T;
	if (c < 1 || h < 1 || w < 1) {
		gen_fail(g, "%s: empty input %lldx%lldx%lld", name,
			 (long long)c, (long long)h, (long long)w);
		return NONE_T;
	}
	uint32_t t = add_tensor(g, name, fbytes(g, c * h * w), WL_INPUT, 4);
	return new_val(g, t, GEN_NONE, c, h, w, false, 4);
}

struct gen_tensor gen_input_ids(struct gen *g, const char *name, int64_t seq)
{
	if (!start(g, name))
		return NONE_T;
	if (seq < 1) {
		gen_fail(g, "%s: sequence length must be >= 1", name);
		return NONE_T;
	}
	uint32_t t = add_tensor(g, name, (uint64_t)seq * (uint64_t)g->batch * 8u,
				WL_INPUT, 8);
	/* esz 4: the cost figures of ops reading ids count 4 bytes an
	 * element (vbytes), as they always have; the tensor is int64 */
	return new_val(g, t, GEN_NONE, 1, seq, 1, false, 4);
}

/* PRECISION, autocast. torch.autocast casts the inputs of an op on its
 * lower-precision list (linear, matmul, bmm, addmm, conv*; "CUDA Ops
 * that can autocast to float16", docs/source/amp.rst, torch 2.x) to the
 * autocast dtype: an activation of another dtype is copied (the copy,
 * not the original, is what the op saves for backward: q, k and v
 * projections of one input each make their own), and a weight through
 * the cast cache, one copy per use ("cached_cast ... only for leaf
 * tensors that require grad", aten/src/ATen/autocast_mode.h), which
 * lives until the autocast region ends and then as long as the op's
 * backward holds it. ac_input makes the activation's copy as a layer of
 * its own (NAME.autocast_in, gen_cast); ac_weight emits the weight's
 * copy NAME.weight.autocast (op NAME.weight_cast) that the forward and
 * bwd_data read instead of the fp32 weight; the weight's gradient is
 * written in the parameter's dtype (the cast's backward folded in). */
static struct gen_tensor ac_input(struct gen *g, const char *name,
				  struct gen_tensor x)
{
	char buf[NAME_MAX_LEN];
	if (!g->autocast || g->vals[x.v].esz == g->aesz)
		return x;
	return gen_cast(g, fmt_name(g, buf, "%s.autocast_in", name), x,
			g->aesz);
}

static uint32_t ac_weight(struct gen *g, const char *name, uint32_t p)
{
	char b1[NAME_MAX_LEN], b2[NAME_MAX_LEN];
	uint32_t wt = g->params[p].tensor;
	if (!g->autocast || g->aesz == g->pesz || !gen_ok(g))
		return wt;
	double n = (double)g->params[p].numel;
	uint32_t c = add_tensor(g, fmt_name(g, b1, "%s.autocast", tname(g, wt)),
				g->params[p].numel * (uint64_t)g->aesz, WL_ACT,
				g->aesz);
	struct op_spec s = {.name = fmt_name(g, b2, "%s.weight_cast", name),
			    .layer = name, .type = OT_ELEMWISE,
			    .phase = WL_FWD, .in = {wt}, .n_in = 1,
			    .out = {c}, .n_out = 1, .flops = n,
			    .bytes = n * (double)(g->pesz + g->aesz)};
	if (emit(g, &s) < 0)
		return WL_NONE;
	return c;
}

/* ---- Convolutional layers ---------------------------------------- */

/* The geometry of the convolution of tape entry L from x to y. */
static struct wl_conv conv_geo(const struct gen *g, const struct gen_val *x,
			       const struct gen_val *y,
			       const struct gen_layer *L)
{
	/* one group's channels: cuDNN's descriptors (as Caffe builds them,
	 * channels_ / group_, num_output_ / group_) are per group */
	return (struct wl_conv){.n = g->batch, .c = x->c / L->groups,
				.k = y->c / L->groups, .h = x->h, .w = x->w,
				.ho = y->h, .wo = y->w, .r = L->kh,
				.s = L->kw, .stride = L->stride,
				.pad_h = L->ph, .pad_w = L->pw,
				.groups = L->groups};
}

/* Multiply-accumulates of a direct convolution of geometry c, over all
 * its groups (c's channels are one group's). */
static double conv_macs(const struct wl_conv *c)
{
	return (double)c->n * (double)c->c * (double)c->k * (double)c->ho *
	       (double)c->wo * (double)c->r * (double)c->s *
	       (double)c->groups;
}

/* Caffe's per-algorithm workspace limit: `size_t workspace_limit_bytes
 * = 8*1024*1024;` in CuDNNConvolutionLayer::Reshape
 * (src/caffe/layers/cudnn_conv_layer.cpp). */
#define CAFFE_WS_LIMIT ((uint64_t)8 * 1024 * 1024)
/* The layer's workspace is the largest pass's times group times
 * `#define CUDNN_STREAMS_PER_GROUP 3` (the same file). */
#define CAFFE_STREAMS_PER_GROUP 3

/* The algorithms a convolution pass's op carries: ca_algos's list, or
 * under caffe the one Caffe runs -- the fastest whose workspace is
 * within the limit (cudnnGetConvolution*Algorithm with
 * *_SPECIFY_WORKSPACE_LIMIT, cudnn_conv_layer.cpp) -- with workspace 0
 * in the op, because the layer's held NAME.workspace is its scratch.
 * *ws: the chosen algorithm's workspace (0 outside caffe). Fills al
 * (room for CA_MAX_ALGOS); returns the count. */
static uint32_t conv_choice(const struct gen *g, const struct wl_conv *c,
			    enum ca_pass d, struct wl_algo *al, uint64_t *ws)
{
	uint32_t n = ca_algos(c, d, al);
	*ws = 0;
	if (!caffe(g))
		return n;
	uint32_t k = wl_fastest_algo_within(al, n, CAFFE_WS_LIMIT);
	if (k >= n)
		return n; /* none within the limit: ca_algos always lists
			     IMPLICIT_GEMM (no workspace), so never */
	*ws = al[k].workspace;
	al[0] = al[k];
	al[0].workspace = 0;
	return 1;
}

/* ---- Convolutional layers ---------------------------------------- */

/* gen_conv with groups (gen_conv_grouped). */
static struct gen_tensor conv(struct gen *g, const char *name,
			      struct gen_tensor x, int64_t cout, int64_t kh,
			      int64_t kw, int64_t stride, int64_t pad_h,
			      int64_t pad_w, int64_t groups, bool bias)
{
	if (!start(g, name) || !check_in(g, name, x))
		return NONE_T;
	x = ac_input(g, name, x);
	if (!gen_ok(g))
		return NONE_T;
	const struct gen_val xv = g->vals[x.v];
	if (cout < 1 || kh < 1 || kw < 1 || stride < 1 || pad_h < 0 ||
	    pad_w < 0 || groups < 1 || xv.c % groups || cout % groups) {
		gen_fail(g, "%s: bad convolution geometry", name);
		return NONE_T;
	}
	int64_t hp = xv.h + 2 * pad_h, wp = xv.w + 2 * pad_w;
	if (hp < kh || wp < kw) {
		gen_fail(g, "%s: input %lldx%lld (padded %lldx%lld) is "
			    "smaller than the %lldx%lld kernel: the input "
			    "size is too small for this network",
			 name, (long long)xv.h, (long long)xv.w,
			 (long long)hp, (long long)wp, (long long)kh,
			 (long long)kw);
		return NONE_T;
	}
	int64_t ho = (hp - kh) / stride + 1, wo = (wp - kw) / stride + 1;
	struct gen_tensor y = out_val(g, name, cout, ho, wo, true, g->aesz);
	uint32_t l = tape_add(g, GL_CONV, name, &x.v, 1, y.v);
	if (l == GEN_NONE)
		return NONE_T;
	struct gen_layer *L = &g->tape[l];
	L->kh = kh, L->kw = kw, L->stride = stride, L->ph = pad_h,
	L->pw = pad_w, L->groups = groups;
	L->wp = new_param(g, name, "weight",
			  cout * (xv.c / groups) * kh * kw, l);
	if (bias)
		L->bp = new_param(g, name, "bias", cout, l);
	if (!gen_ok(g))
		return NONE_T;
	struct wl_conv cg = conv_geo(g, &xv, &g->vals[y.v], L);
	struct wl_algo al[CA_MAX_ALGOS], tmp[CA_MAX_ALGOS];
	uint64_t wf, wd, wb;
	uint32_t na = conv_choice(g, &cg, CA_FWD, al, &wf);
	conv_choice(g, &cg, CA_BWD_DATA, tmp, &wd);
	conv_choice(g, &cg, CA_BWD_FILTER, tmp, &wb);
	double macs = conv_macs(&cg);
	uint32_t wt = ac_weight(g, name, L->wp);
	L = &g->tape[l];
	L->wcast = wt != g->params[L->wp].tensor ? wt : WL_NONE;
	struct op_spec s = {.name = name, .layer = name, .type = OT_CONV,
			    .phase = WL_FWD,
			    .in = {xv.tensor, wt},
			    .n_in = 2, .out = {g->vals[y.v].tensor},
			    .n_out = 1, .algos = al, .n_algos = na,
			    .conv = &cg};
	/* caffe: the layer's one workspace, max(fwd, bwd_data,
	 * bwd_filter) * group * CUDNN_STREAMS_PER_GROUP, cudaMalloc'd in
	 * Reshape and kept (`total_max_workspace`, cudnn_conv_layer.cpp);
	 * the backward data pass counts even where it never runs. None
	 * when every chosen algorithm needs no workspace. */
	uint64_t wmax = wf > wd ? wf : wd;
	wmax = wmax > wb ? wmax : wb;
	if (wmax > 0) {
		L->hid[0] = hidden(g, name, "workspace",
				   wmax * (uint64_t)groups *
					   CAFFE_STREAMS_PER_GROUP,
				   WL_WORKSPACE, 1);
		s.out[s.n_out++] = L->hid[0];
	}
	s.flops = 2.0 * macs;
	s.bytes = vbytes(g, x.v) + pbytes(g, L->wp) + vbytes(g, y.v);
	if (bias) {
		s.in[s.n_in++] = g->params[L->bp].tensor;
		s.flops += velems(g, y.v);
		s.bytes += pbytes(g, L->bp);
	}
	emit(g, &s);
	return gen_ok(g) ? y : NONE_T;
}

struct gen_tensor gen_conv(struct gen *g, const char *name,
			   struct gen_tensor x, int64_t cout, int64_t kh,
			   int64_t kw, int64_t stride, int64_t pad_h,
			   int64_t pad_w, bool bias)
{
	return conv(g, name, x, cout, kh, kw, stride, pad_h, pad_w, 1, bias);
}

struct gen_tensor gen_conv_sq(struct gen *g, const char *name,
			      struct gen_tensor x, int64_t cout, int64_t k,
			      int64_t stride, int64_t pad, bool bias)
{
	return conv(g, name, x, cout, k, k, stride, pad, pad, 1, bias);
}

struct gen_tensor gen_conv_grouped(struct gen *g, const char *name,
				   struct gen_tensor x, int64_t cout,
				   int64_t k, int64_t stride, int64_t pad,
				   int64_t groups, bool bias)
{
	return conv(g, name, x, cout, k, k, stride, pad, pad, groups, bias);
}

/* A normalisation layer: y = gamma * (x - mean) / std + beta, with the
 * mean and inverse std kept in `<name>.saved` for the backward pass --
 * BatchNorm: per channel, 2 x C fp32 values whatever the batch;
 * LayerNorm: per token, 2 values each. DRAM bytes: x read, y written,
 * gamma and beta read, the statistics written. */
static struct gen_tensor norm_fwd(struct gen *g, enum gen_lk kind,
				  enum wl_op_type type, const char *name,
				  struct gen_tensor x, bool affine)
{
	char buf[NAME_MAX_LEN];
	if (!start(g, name) || !check_in(g, name, x))
		return NONE_T;
	const struct gen_val xv = g->vals[x.v];
	/* autocast runs layer_norm in fp32 (its fp32 list); RMSNorm as
	 * Hugging Face writes it returns weight * x.to(input_dtype): the
	 * wider of the weight's and x's dtypes (PRECISION) */
	int oe = kind == GL_LAYERNORM && g->autocast ? 4 : xv.esz;
	if (kind == GL_RMSNORM && g->pesz > oe)
		oe = g->pesz;
	struct gen_tensor y = out_val(g, name, xv.c, xv.h, xv.w,
				      xv.needs_grad || (affine && !g->frozen),
				      oe);
	uint32_t saved = add_tensor(g, fmt_name(g, buf, "%s.saved", name),
				    kind == GL_BN ? (uint64_t)xv.c * 2u * 4u
				    : fbytes(g, (kind == GL_RMSNORM ? 1 : 2) *
						       xv.h * xv.w),
				    WL_ACT, 4);
	uint32_t l = tape_add(g, kind, name, &x.v, 1, y.v);
	if (l == GEN_NONE)
		return NONE_T;
	struct gen_layer *L = &g->tape[l];
	L->aux = saved;
	if (affine) {
		L->wp = new_param(g, name, "weight", xv.c, l);
		if (kind != GL_RMSNORM)
			L->bp = new_param(g, name, "bias", xv.c, l);
	}
	if (!gen_ok(g))
		return NONE_T;
	struct op_spec s = {.name = name, .layer = name, .type = type,
			    .phase = WL_FWD, .in = {xv.tensor}, .n_in = 1,
			    .out = {g->vals[y.v].tensor, saved},
			    .n_out = 2};
	/* RMSNorm: square, row sum, scale, weight: 4 / element */
	s.flops = (kind == GL_RMSNORM ? 4.0 : affine ? 7.0 : 5.0) *
		  velems(g, x.v);
	s.bytes = vbytes(g, x.v) + vbytes(g, y.v) +
		  (double)g->w->tensors[saved].bytes;
	if (affine) {
		s.in[s.n_in++] = g->params[L->wp].tensor;
		s.bytes += pbytes(g, L->wp);
	}
	if (L->bp != GEN_NONE) {
		s.in[s.n_in++] = g->params[L->bp].tensor;
		s.bytes += pbytes(g, L->bp);
	}
	if (kind == GL_BN && g->fw == WL_FW_PYTORCH) {
		/* nn.BatchNorm2d's buffers (_NormBase.__init__, torch
		 * 1.13 nn/modules/batchnorm.py, track_running_stats=True
		 * as torchvision builds them): `register_buffer(
		 * 'running_mean', torch.zeros(num_features))`, the same
		 * for running_var (fp32), and `num_batches_tracked`
		 * (torch.tensor(0, dtype=torch.long): 8 bytes). They live
		 * as long as the model, like the parameters, but get no
		 * gradient; training-mode forward reads and updates the
		 * statistics in place (F.batch_norm), counted as read and
		 * written; num_batches_tracked.add_(1) is its own tiny
		 * kernel, not modelled. */
		static const char *const bufs[] = {"running_mean",
						   "running_var",
						   "num_batches_tracked"};
		for (int i = 0; i < 3; i++) {
			uint32_t t = hidden(g, name, bufs[i],
					    i < 2 ? (uint64_t)xv.c * 4u : 8u,
					    WL_PARAM, i < 2 ? 4 : 8);
			if (t == WL_NONE)
				return NONE_T;
			s.in[s.n_in++] = t;
		}
		s.bytes += 4.0 * (double)xv.c * F32;
	}
	if (kind == GL_BN && caffe(g)) {
		/* BatchNormLayer: `temp_.ReshapeLike(*bottom[0]);
		 * x_norm_.ReshapeLike(*bottom[0]);` (batch_norm_layer.cpp
		 * Reshape); Forward_gpu writes temp_ (sqrt(var + eps)
		 * broadcast) and copies top into x_norm_ ("later in-place
		 * layers might clobber the data", batch_norm_layer.cu) */
		L->hid[0] = hidden(g, name, "temp", fbytes(g, vnumel(&xv)),
				   WL_ACT, 4);
		L->hid[1] = hidden(g, name, "x_norm", fbytes(g, vnumel(&xv)),
				   WL_ACT, 4);
		s.out[s.n_out++] = L->hid[0];
		s.out[s.n_out++] = L->hid[1];
		s.bytes += 2.0 * vbytes(g, x.v);
	}
	if (!affine)
		s.inplace = IP_LAYER;
	emit(g, &s);
	return gen_ok(g) ? y : NONE_T;
}

struct gen_tensor gen_batchnorm(struct gen *g, const char *name,
				struct gen_tensor x)
{
	return norm_fwd(g, GL_BN, OT_BATCHNORM, name, x, true);
}

struct gen_tensor gen_bn_noaffine(struct gen *g, const char *name,
				  struct gen_tensor x)
{
	return norm_fwd(g, GL_BN, OT_BATCHNORM, name, x, false);
}

/* Caffe's Scale layer (scale_layer.cpp / .cu): y = gamma * x (+ beta,
 * its bias_layer_), per channel; 2 FLOPs an element. In place
 * (`if (bottom[0] == top[0]) {  // in-place computation
 * temp_.ReshapeLike(*bottom[0]);`, Reshape) the forward first copies
 * x into temp_, which the backward reads for dgamma: a full-size
 * hidden buffer. Its small sum_result_ (N*C) and sum_multiplier_ (H*W)
 * are not modelled. */
struct gen_tensor gen_affine(struct gen *g, const char *name,
			     struct gen_tensor x, bool bias)
{
	if (!start(g, name) || !check_in(g, name, x))
		return NONE_T;
	const struct gen_val xv = g->vals[x.v];
	struct gen_tensor y = out_val(g, name, xv.c, xv.h, xv.w, true, xv.esz);
	uint32_t l = tape_add(g, GL_AFFINE, name, &x.v, 1, y.v);
	if (l == GEN_NONE)
		return NONE_T;
	struct gen_layer *L = &g->tape[l];
	L->wp = new_param(g, name, "weight", xv.c, l);
	if (bias)
		L->bp = new_param(g, name, "bias", xv.c, l);
	if (!gen_ok(g))
		return NONE_T;
	struct op_spec s = {.name = name, .layer = name, .type = OT_ELEMWISE,
			    .phase = WL_FWD,
			    .in = {xv.tensor, g->params[L->wp].tensor},
			    .n_in = 2, .out = {g->vals[y.v].tensor},
			    .n_out = 1, .inplace = IP_LAYER};
	s.flops = 2.0 * velems(g, x.v);
	s.bytes = 2.0 * vbytes(g, x.v) + pbytes(g, L->wp) + pbytes(g, L->bp);
	if (bias)
		s.in[s.n_in++] = g->params[L->bp].tensor;
	if (caffe(g) && fw_inplace(g, IP_LAYER)) {
		L->hid[0] = hidden(g, name, "temp", fbytes(g, vnumel(&xv)),
				   WL_ACT, 4);
		s.out[s.n_out++] = L->hid[0];
		s.bytes += vbytes(g, x.v);
	}
	emit(g, &s);
	return gen_ok(g) ? y : NONE_T;
}

/* An elementwise forward layer: one input, same shape out, elements of
 * esz bytes (0: x's). */
static struct gen_tensor unary_e(struct gen *g, enum gen_lk kind,
				 const char *name, struct gen_tensor x,
				 enum wl_op_type type, double flops_per_el,
				 enum gen_ip inplace, int esz)
{
	if (!start(g, name) || !check_in(g, name, x))
		return NONE_T;
	const struct gen_val xv = g->vals[x.v];
	struct gen_tensor y = out_val(g, name, xv.c, xv.h, xv.w,
				      xv.needs_grad, esz ? esz : xv.esz);
	uint32_t l = tape_add(g, kind, name, &x.v, 1, y.v);
	if (l == GEN_NONE)
		return NONE_T;
	struct op_spec s = {.name = name, .layer = name, .type = type,
			    .phase = WL_FWD, .in = {xv.tensor}, .n_in = 1,
			    .out = {g->vals[y.v].tensor}, .n_out = 1};
	s.inplace = same_size(g, xv.tensor, s.out[0]) ? inplace : IP_NO;
	s.flops = flops_per_el * velems(g, x.v);
	s.bytes = vbytes(g, x.v) + vbytes(g, y.v);
	emit(g, &s);
	return gen_ok(g) ? y : NONE_T;
}

static struct gen_tensor unary(struct gen *g, enum gen_lk kind,
			       const char *name, struct gen_tensor x,
			       enum wl_op_type type, double flops_per_el,
			       enum gen_ip inplace)
{
	return unary_e(g, kind, name, x, type, flops_per_el, inplace, 0);
}

struct gen_tensor gen_relu(struct gen *g, const char *name,
			   struct gen_tensor x)
{
	return unary(g, GL_RELU, name, x, OT_RELU, 1.0, IP_RELU);
}

struct gen_tensor gen_gelu(struct gen *g, const char *name,
			   struct gen_tensor x)
{
	return unary(g, GL_GELU, name, x, OT_ELEMWISE, 8.0, IP_NO);
}

struct gen_tensor gen_tanh(struct gen *g, const char *name,
			   struct gen_tensor x)
{
	return unary(g, GL_TANH, name, x, OT_ELEMWISE, 4.0, IP_NO);
}

struct gen_tensor gen_scale(struct gen *g, const char *name,
			    struct gen_tensor x)
{
	return unary(g, GL_SCALE, name, x, OT_ELEMWISE, 1.0, IP_NO);
}

/* softmax is on autocast's fp32 list ("CUDA Ops that can autocast to
 * float32", amp.rst): its output is fp32 under autocast. */
struct gen_tensor gen_softmax(struct gen *g, const char *name,
			      struct gen_tensor x)
{
	return unary_e(g, GL_SOFTMAX, name, x, OT_SOFTMAX, 5.0, IP_NO,
		       g && g->autocast ? 4 : 0);
}

struct gen_tensor gen_softmax_fp32(struct gen *g, const char *name,
				   struct gen_tensor x)
{
	return unary_e(g, GL_SOFTMAX, name, x, OT_SOFTMAX, 5.0, IP_NO, 4);
}

/* SiLU x * sigmoid(x): exp (4), add, divide, multiply: 7 / element;
 * backward sigmoid again and s * (1 + x * (1 - s)) * dy: 10 (estimates,
 * transcendental functions as 4, as GELU). torch's silu_backward reads
 * dy and x (derivatives.yaml: silu_backward(grad, self)). */
struct gen_tensor gen_silu(struct gen *g, const char *name,
			   struct gen_tensor x)
{
	return unary(g, GL_SILU, name, x, OT_ELEMWISE, 7.0, IP_NO);
}

/* A dtype conversion (Tensor.to / autocast's cast): a copy, 1 FLOP an
 * element counted; backward converts dy back (reads dy only). The same
 * value when x already has that element size. */
struct gen_tensor gen_cast(struct gen *g, const char *name,
			   struct gen_tensor x, int esz)
{
	if (!gen_ok(g) || !check_in(g, name ? name : "cast", x))
		return NONE_T;
	if (g->vals[x.v].esz == esz)
		return x;
	if (esz != 1 && esz != 2 && esz != 4 && esz != 8) {
		gen_fail(g, "%s: element size %d", name, esz);
		return NONE_T;
	}
	return unary_e(g, GL_CAST, name, x, OT_ELEMWISE, 1.0, IP_NO, esz);
}

int gen_esz(const struct gen *g, struct gen_tensor x)
{
	return g && x.v < g->n_vals ? g->vals[x.v].esz : 0;
}

int gen_compute_esz(const struct gen *g)
{
	return g ? g->aesz : 4;
}

int gen_param_esz(const struct gen *g)
{
	return g ? g->pesz : 4;
}

enum wl_precision gen_precision(const struct gen *g)
{
	return g ? g->prec : WL_PREC_FP32;
}

/* LRN across channels: per element the window's sum of squares (2n
 * FLOPs), the scale k + alpha/n * sum (2), its power (a transcendental,
 * 4) and the product (1): 2n + 7; backward 4n + 10 (the scale again,
 * the window sum of dy*y/scale, 3 to combine). Estimates. */
struct gen_tensor gen_lrn(struct gen *g, const char *name,
			  struct gen_tensor x, int64_t local_size)
{
	if (gen_ok(g) && local_size < 1) {
		gen_fail(g, "%s: LRN window %lld < 1", name ? name : "lrn",
			 (long long)local_size);
		return NONE_T;
	}
	struct gen_tensor y = unary(g, GL_LRN, name, x, OT_ELEMWISE,
				    2.0 * (double)local_size + 7.0, IP_NO);
	if (y.v != GEN_NONE)
		g->tape[g->n_tape - 1].kh = local_size;
	return y;
}

/* Output side of a pool (torch's rule); < 1 when it does not fit. */
static int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t p,
			bool ceil_mode)
{
	/* torch's pooling_output_shape: in ceil mode a last window may
	 * overhang the input as long as it starts inside it */
	int64_t span = in + 2 * p - k;
	int64_t num = span + (ceil_mode ? s - 1 : 0);
	if (num < 0)
		return 0;
	int64_t o = num / s + 1;
	if (ceil_mode && (o - 1) * s >= in + p)
		o--;
	return o;
}

static struct gen_tensor pool(struct gen *g, enum gen_lk kind,
			      const char *name, struct gen_tensor x,
			      int64_t k, int64_t stride, int64_t pad,
			      bool ceil_mode)
{
	if (!start(g, name) || !check_in(g, name, x))
		return NONE_T;
	const struct gen_val xv = g->vals[x.v];
	if (k < 1 || stride < 1 || pad < 0 || 2 * pad > k) {
		gen_fail(g, "%s: bad pooling geometry (kernel %lld, stride "
			    "%lld, pad %lld)", name, (long long)k,
			 (long long)stride, (long long)pad);
		return NONE_T;
	}
	int64_t ho = pool_out(xv.h, k, stride, pad, ceil_mode);
	int64_t wo = pool_out(xv.w, k, stride, pad, ceil_mode);
	if (ho < 1 || wo < 1) {
		gen_fail(g, "%s: input %lldx%lld is smaller than the %lldx%lld "
			    "window: the input size is too small for this "
			    "network", name, (long long)xv.h, (long long)xv.w,
			 (long long)k, (long long)k);
		return NONE_T;
	}
	struct gen_tensor y = out_val(g, name, xv.c, ho, wo, xv.needs_grad,
				      xv.esz);
	uint32_t l = tape_add(g, kind, name, &x.v, 1, y.v);
	if (l == GEN_NONE)
		return NONE_T;
	struct gen_layer *L = &g->tape[l];
	L->kh = L->kw = k, L->stride = stride, L->ph = L->pw = pad;
	L->work = velems(g, y.v) * (double)(k * k);
	struct op_spec s = {.name = name, .layer = name, .type = OT_POOL,
			    .phase = WL_FWD, .in = {xv.tensor}, .n_in = 1,
			    .out = {g->vals[y.v].tensor}, .n_out = 1};
	s.flops = L->work;
	s.bytes = vbytes(g, x.v) + vbytes(g, y.v);
	if (kind == GL_MAXPOOL && g->fw == WL_FW_PYTORCH) {
		/* max_pool2d_with_indices returns the arg-max of every
		 * window as int64 (result1), saved for backward
		 * (tools/autograd/derivatives.yaml) */
		char buf[NAME_MAX_LEN];
		L->aux = add_tensor(g, fmt_name(g, buf, "%s.indices", name),
				    (uint64_t)velems(g, y.v) * 8u, WL_ACT, 8);
		s.out[s.n_out++] = L->aux;
		s.bytes += velems(g, y.v) * 8.0;
	}
	if (kind == GL_MAXPOOL && caffe(g)) {
		/* Caffe's own PoolingLayer runs MAX (layer_factory.cpp: "use
		 * Caffe layer to max pooling"): `Blob<int> max_idx_`
		 * reshaped to the top's shape (pooling_layer.cpp), int32 */
		L->hid[0] = hidden(g, name, "max_idx",
				   (uint64_t)velems(g, y.v) * 4u, WL_ACT, 4);
		s.out[s.n_out++] = L->hid[0];
		s.bytes += velems(g, y.v) * 4.0;
	}
	emit(g, &s);
	return gen_ok(g) ? y : NONE_T;
}

struct gen_tensor gen_maxpool(struct gen *g, const char *name,
			      struct gen_tensor x, int64_t k, int64_t stride,
			      int64_t pad, bool ceil_mode)
{
	return pool(g, GL_MAXPOOL, name, x, k, stride, pad, ceil_mode);
}

struct gen_tensor gen_avgpool(struct gen *g, const char *name,
			      struct gen_tensor x, int64_t k, int64_t stride,
			      int64_t pad, bool ceil_mode)
{
	return pool(g, GL_AVGPOOL, name, x, k, stride, pad, ceil_mode);
}

/* Sum over the adaptive windows of one axis: sum_i (end_i - start_i). */
static int64_t adaptive_span(int64_t in, int64_t out)
{
	int64_t s = 0;
	for (int64_t i = 0; i < out; i++)
		s += (((i + 1) * in + out - 1) / out) - (i * in / out);
	return s;
}

struct gen_tensor gen_adaptive_avgpool(struct gen *g, const char *name,
				       struct gen_tensor x, int64_t oh,
				       int64_t ow)
{
	if (!start(g, name) || !check_in(g, name, x))
		return NONE_T;
	const struct gen_val xv = g->vals[x.v];
	if (oh < 1 || ow < 1) {
		gen_fail(g, "%s: bad adaptive pool output %lldx%lld", name,
			 (long long)oh, (long long)ow);
		return NONE_T;
	}
	struct gen_tensor y = out_val(g, name, xv.c, oh, ow, xv.needs_grad,
				      xv.esz);
	uint32_t l = tape_add(g, GL_AVGPOOL, name, &x.v, 1, y.v);
	if (l == GEN_NONE)
		return NONE_T;
	struct gen_layer *L = &g->tape[l];
	L->work = (double)g->batch * (double)xv.c *
		  (double)adaptive_span(xv.h, oh) *
		  (double)adaptive_span(xv.w, ow);
	struct op_spec s = {.name = name, .layer = name, .type = OT_POOL,
			    .phase = WL_FWD, .in = {xv.tensor}, .n_in = 1,
			    .out = {g->vals[y.v].tensor}, .n_out = 1};
	s.flops = L->work;
	s.bytes = vbytes(g, x.v) + vbytes(g, y.v);
	emit(g, &s);
	return gen_ok(g) ? y : NONE_T;
}

struct gen_tensor gen_global_avgpool(struct gen *g, const char *name,
				     struct gen_tensor x)
{
	return gen_adaptive_avgpool(g, name, x, 1, 1);
}

/* ---- Structure ---------------------------------------------------- */

struct gen_tensor gen_flatten(struct gen *g, struct gen_tensor x)
{
	if (!gen_ok(g) || !check_in(g, "flatten", x))
		return NONE_T;
	const struct gen_val xv = g->vals[x.v];
	struct gen_tensor y = new_val(g, xv.tensor, xv.root, vnumel(&xv), 1,
				      1, xv.needs_grad, xv.esz);
	if (tape_add(g, GL_FLATTEN, NULL, &x.v, 1, y.v) == GEN_NONE)
		return NONE_T;
	return y;
}

static struct gen_tensor add_op(struct gen *g, const char *name,
				struct gen_tensor a, struct gen_tensor b,
				enum gen_ip ip)
{
	if (!start(g, name) || !check_in(g, name, a) || !check_in(g, name, b))
		return NONE_T;
	const struct gen_val av = g->vals[a.v], bv = g->vals[b.v];
	if (av.c != bv.c || av.h != bv.h || av.w != bv.w) {
		gen_fail(g, "%s: shapes differ (%lldx%lldx%lld and "
			    "%lldx%lldx%lld)", name, (long long)av.c,
			 (long long)av.h, (long long)av.w, (long long)bv.c,
			 (long long)bv.h, (long long)bv.w);
		return NONE_T;
	}
	/* type promotion: the wider of the two (an fp32 residual plus a
	 * half-precision branch under autocast is fp32) */
	struct gen_tensor y = out_val(g, name, av.c, av.h, av.w,
				      av.needs_grad || bv.needs_grad,
				      av.esz > bv.esz ? av.esz : bv.esz);
	uint32_t in[2] = {a.v, b.v};
	if (tape_add(g, GL_ADD, name, in, 2, y.v) == GEN_NONE)
		return NONE_T;
	struct op_spec s = {.name = name, .layer = name, .type = OT_ADD,
			    .phase = WL_FWD, .in = {av.tensor, bv.tensor},
			    .n_in = 2, .out = {g->vals[y.v].tensor},
			    .n_out = 1, .inplace = ip};
	s.flops = velems(g, y.v);
	s.bytes = 3.0 * vbytes(g, y.v);
	emit(g, &s);
	return gen_ok(g) ? y : NONE_T;
}

struct gen_tensor gen_add(struct gen *g, const char *name,
			  struct gen_tensor a, struct gen_tensor b)
{
	return add_op(g, name, a, b, IP_NO);
}

struct gen_tensor gen_add_inplace(struct gen *g, const char *name,
				  struct gen_tensor a, struct gen_tensor b)
{
	return add_op(g, name, a, b, IP_RESID);
}

struct gen_tensor gen_concat(struct gen *g, const char *name,
			     const struct gen_tensor *xs, uint32_t n)
{
	if (!start(g, name))
		return NONE_T;
	if (!xs || n < 1) {
		gen_fail(g, "%s: nothing to concatenate", name);
		return NONE_T;
	}
	int64_t c = 0;
	bool ng = false;
	uint32_t *vin = malloc((size_t)n * sizeof *vin);
	uint32_t *tin = malloc((size_t)n * sizeof *tin);
	struct gen_tensor y = NONE_T;
	if (!vin || !tin) {
		gen_fail(g, "%s: out of memory", name);
		goto out;
	}
	for (uint32_t i = 0; i < n; i++) {
		if (!check_in(g, name, xs[i]))
			goto out;
		const struct gen_val *v = &g->vals[xs[i].v];
		const struct gen_val *v0 = &g->vals[xs[0].v];
		if (v->h != v0->h || v->w != v0->w) {
			gen_fail(g, "%s: input %u is %lldx%lld, input 0 "
				    "%lldx%lld", name, i, (long long)v->h,
				 (long long)v->w, (long long)v0->h,
				 (long long)v0->w);
			goto out;
		}
		c += v->c;
		ng = ng || v->needs_grad;
		vin[i] = xs[i].v;
		tin[i] = v->tensor;
	}
	const struct gen_val v0 = g->vals[xs[0].v];
	y = out_val(g, name, c, v0.h, v0.w, ng, v0.esz);
	if (tape_add(g, GL_CONCAT, name, vin, n, y.v) == GEN_NONE) {
		y = NONE_T;
		goto out;
	}
	struct wl_op_desc d = {.name = name, .type = OT_CONCAT,
			       .phase = WL_FWD, .layer = name, .in = tin,
			       .n_in = n, .out = &g->vals[y.v].tensor,
			       .n_out = 1, .flops = 0.0,
			       .bytes = 2.0 * vbytes(g, y.v),
			       .recomputable = true};
	gms_err e;
	if (wl_add_op(g->w, &d, &e) == WL_NONE) {
		gen_fail(g, "%s", e.msg);
		y = NONE_T;
	}
out:
	free(vin);
	free(tin);
	return gen_ok(g) ? y : NONE_T;
}

struct gen_tensor gen_slice(struct gen *g, const char *name,
			    struct gen_tensor x, int64_t h0, int64_t nh)
{
	if (!start(g, name) || !check_in(g, name, x))
		return NONE_T;
	const struct gen_val xv = g->vals[x.v];
	if (h0 < 0 || nh < 1 || h0 + nh > xv.h) {
		gen_fail(g, "%s: rows [%lld, %lld) outside 0..%lld", name,
			 (long long)h0, (long long)(h0 + nh), (long long)xv.h);
		return NONE_T;
	}
	struct gen_tensor y = new_val(g, xv.tensor, xv.root, xv.c, nh, xv.w,
				      xv.needs_grad, xv.esz);
	if (tape_add(g, GL_SLICE, name, &x.v, 1, y.v) == GEN_NONE)
		return NONE_T;
	return y;
}

/* ---- Fully connected and elementwise ------------------------------ */

static struct gen_tensor linear(struct gen *g, const char *name,
				struct gen_tensor x, int64_t out,
				uint32_t weight, bool bias)
{
	if (!start(g, name) || !check_in(g, name, x))
		return NONE_T;
	x = ac_input(g, name, x);
	if (!gen_ok(g))
		return NONE_T;
	const struct gen_val xv = g->vals[x.v];
	if (out < 1) {
		gen_fail(g, "%s: no output features", name);
		return NONE_T;
	}
	if (weight != GEN_NONE &&
	    (weight >= g->n_params ||
	     g->params[weight].numel != (uint64_t)(out * xv.c))) {
		gen_fail(g, "%s: tied weight is not %lld x %lld", name,
			 (long long)out, (long long)xv.c);
		return NONE_T;
	}
	struct gen_tensor y = out_val(g, name, out, xv.h, xv.w,
				      xv.needs_grad || !g->frozen, g->aesz);
	uint32_t l = tape_add(g, GL_LINEAR, name, &x.v, 1, y.v);
	if (l == GEN_NONE)
		return NONE_T;
	struct gen_layer *L = &g->tape[l];
	L->wp = weight != GEN_NONE ? weight
				   : new_param(g, name, "weight",
					       out * xv.c, l);
	if (bias)
		L->bp = new_param(g, name, "bias", out, l);
	if (!gen_ok(g))
		return NONE_T;
	uint32_t wt = ac_weight(g, name, L->wp);
	L = &g->tape[l];
	L->wcast = wt != g->params[L->wp].tensor ? wt : WL_NONE;
	double rows = (double)g->batch * (double)(xv.h * xv.w);
	struct op_spec s = {.name = name, .layer = name, .type = OT_MATMUL,
			    .phase = WL_FWD,
			    .in = {xv.tensor, wt},
			    .n_in = 2, .out = {g->vals[y.v].tensor},
			    .n_out = 1};
	s.flops = 2.0 * rows * (double)xv.c * (double)out;
	s.bytes = vbytes(g, x.v) + pbytes(g, L->wp) + vbytes(g, y.v);
	s.gemm = gemm_of(1, rows, (double)out, (double)xv.c);
	if (bias) {
		s.in[s.n_in++] = g->params[L->bp].tensor;
		s.flops += rows * (double)out;
		s.bytes += pbytes(g, L->bp);
	}
	emit(g, &s);
	return gen_ok(g) ? y : NONE_T;
}

struct gen_tensor gen_linear(struct gen *g, const char *name,
			     struct gen_tensor x, int64_t out, bool bias)
{
	return linear(g, name, x, out, GEN_NONE, bias);
}

struct gen_tensor gen_linear_tied(struct gen *g, const char *name,
				  struct gen_tensor x, int64_t out,
				  uint32_t weight, bool bias)
{
	if (gen_ok(g) && weight == GEN_NONE) {
		gen_fail(g, "%s: no tied weight", name ? name : "linear");
		return NONE_T;
	}
	return linear(g, name, x, out, weight, bias);
}

struct gen_tensor gen_dropout(struct gen *g, const char *name,
			      struct gen_tensor x, double p)
{
	char buf[NAME_MAX_LEN];
	if (!start(g, name) || !check_in(g, name, x))
		return NONE_T;
	if (!(p >= 0.0 && p < 1.0)) {
		gen_fail(g, "%s: dropout probability %g not in [0, 1)", name,
			 p);
		return NONE_T;
	}
	const struct gen_val xv = g->vals[x.v];
	struct gen_tensor y = out_val(g, name, xv.c, xv.h, xv.w,
				      xv.needs_grad, xv.esz);
	/* caffe: `Blob<unsigned int> rand_vec_` of the bottom's shape
	 * (dropout_layer.hpp), 4 bytes an element; else a 1-byte mask */
	uint64_t mb = caffe(g) ? 4u : 1u;
	uint32_t mask = add_tensor(g, fmt_name(g, buf, "%s.mask", name),
				   (uint64_t)vnumel(&xv) *
					   (uint64_t)g->batch * mb,
				   WL_ACT, (int)mb);
	uint32_t l = tape_add(g, GL_DROPOUT, name, &x.v, 1, y.v);
	if (l == GEN_NONE)
		return NONE_T;
	g->tape[l].aux = mask;
	struct op_spec s = {.name = name, .layer = name, .type = OT_DROPOUT,
			    .phase = WL_FWD, .in = {xv.tensor}, .n_in = 1,
			    .out = {g->vals[y.v].tensor, mask}, .n_out = 2,
			    .inplace = IP_LAYER};
	s.flops = 2.0 * velems(g, x.v);
	s.bytes = 2.0 * vbytes(g, x.v) + velems(g, x.v) * (double)mb;
	emit(g, &s);
	return gen_ok(g) ? y : NONE_T;
}

struct gen_tensor gen_mask_add(struct gen *g, const char *name,
			       struct gen_tensor x, struct gen_tensor mask)
{
	if (!start(g, name) || !check_in(g, name, x) ||
	    !check_in(g, name, mask))
		return NONE_T;
	const struct gen_val xv = g->vals[x.v], mv = g->vals[mask.v];
	if (mv.h != xv.c) {
		gen_fail(g, "%s: mask of %lld positions for %lld keys", name,
			 (long long)mv.h, (long long)xv.c);
		return NONE_T;
	}
	struct gen_tensor y = out_val(g, name, xv.c, xv.h, xv.w,
				      xv.needs_grad, xv.esz);
	uint32_t l = tape_add(g, GL_MASK_ADD, name, &x.v, 1, y.v);
	if (l == GEN_NONE)
		return NONE_T;
	g->tape[l].aux2 = mask.v;
	struct op_spec s = {.name = name, .layer = name, .type = OT_ELEMWISE,
			    .phase = WL_FWD, .in = {xv.tensor, mv.tensor},
			    .n_in = 2, .out = {g->vals[y.v].tensor},
			    .n_out = 1};
	s.flops = velems(g, x.v);
	s.bytes = 2.0 * vbytes(g, x.v) + (double)g->w->tensors[mv.tensor].bytes;
	emit(g, &s);
	return gen_ok(g) ? y : NONE_T;
}

struct gen_tensor gen_layernorm(struct gen *g, const char *name,
				struct gen_tensor x)
{
	return norm_fwd(g, GL_LAYERNORM, OT_LAYERNORM, name, x, true);
}

struct gen_tensor gen_rmsnorm(struct gen *g, const char *name,
			      struct gen_tensor x)
{
	return norm_fwd(g, GL_RMSNORM, OT_LAYERNORM, name, x, true);
}

struct gen_tensor gen_embedding(struct gen *g, const char *name,
				struct gen_tensor ids, int64_t vocab,
				int64_t dim)
{
	if (!start(g, name) || !check_in(g, name, ids))
		return NONE_T;
	const struct gen_val iv = g->vals[ids.v];
	if (vocab < 1 || dim < 1 || iv.c != 1) {
		gen_fail(g, "%s: bad embedding (vocab %lld, dim %lld, ids of "
			    "%lld features)", name, (long long)vocab,
			 (long long)dim, (long long)iv.c);
		return NONE_T;
	}
	struct gen_tensor y = out_val(g, name, dim, iv.h, iv.w, !g->frozen,
				      g->pesz);
	uint32_t l = tape_add(g, GL_EMBEDDING, name, &ids.v, 1, y.v);
	if (l == GEN_NONE)
		return NONE_T;
	struct gen_layer *L = &g->tape[l];
	L->wp = new_param(g, name, "weight", vocab * dim, l);
	if (!gen_ok(g))
		return NONE_T;
	struct op_spec s = {.name = name, .layer = name,
			    .type = OT_EMBEDDING, .phase = WL_FWD,
			    .in = {iv.tensor, g->params[L->wp].tensor},
			    .n_in = 2, .out = {g->vals[y.v].tensor},
			    .n_out = 1};
	s.flops = 0.0;
	s.bytes = (double)g->w->tensors[iv.tensor].bytes +
		  2.0 * vbytes(g, y.v);
	emit(g, &s);
	return gen_ok(g) ? y : NONE_T;
}

/* ---- Attention ---------------------------------------------------- */

struct gen_tensor gen_attn_scores(struct gen *g, const char *name,
				  struct gen_tensor q, struct gen_tensor k,
				  int64_t heads)
{
	if (!start(g, name) || !check_in(g, name, q) || !check_in(g, name, k))
		return NONE_T;
	const struct gen_val qv = g->vals[q.v], kv = g->vals[k.v];
	if (heads < 1 || qv.c % heads || qv.c != kv.c || qv.w != 1 ||
	    kv.w != 1) {
		gen_fail(g, "%s: q (%lld features) and k (%lld) do not split "
			    "into %lld heads", name, (long long)qv.c,
			 (long long)kv.c, (long long)heads);
		return NONE_T;
	}
	struct gen_tensor y = out_val(g, name, kv.h, qv.h, heads,
				      qv.needs_grad || kv.needs_grad, g->aesz);
	uint32_t in[2] = {q.v, k.v};
	uint32_t l = tape_add(g, GL_ATTN_SCORES, name, in, 2, y.v);
	if (l == GEN_NONE)
		return NONE_T;
	g->tape[l].heads = heads;
	struct op_spec s = {.name = name, .layer = name, .type = OT_MATMUL,
			    .phase = WL_FWD, .in = {qv.tensor, kv.tensor},
			    .n_in = 2, .out = {g->vals[y.v].tensor},
			    .n_out = 1};
	s.flops = 2.0 * (double)g->batch * (double)qv.h * (double)kv.h *
		  (double)qv.c;
	s.bytes = vbytes(g, q.v) + vbytes(g, k.v) + vbytes(g, y.v);
	s.gemm = gemm_of((double)g->batch * (double)heads, (double)qv.h,
			 (double)kv.h, (double)(qv.c / heads));
	emit(g, &s);
	return gen_ok(g) ? y : NONE_T;
}

struct gen_tensor gen_attn_context(struct gen *g, const char *name,
				   struct gen_tensor p, struct gen_tensor v)
{
	if (!start(g, name) || !check_in(g, name, p) || !check_in(g, name, v))
		return NONE_T;
	const struct gen_val pv = g->vals[p.v], vv = g->vals[v.v];
	if (pv.c != vv.h || vv.w != 1 || vv.c % pv.w) {
		gen_fail(g, "%s: probabilities %lldx%lldx%lld do not fit "
			    "values %lldx%lld", name, (long long)pv.c,
			 (long long)pv.h, (long long)pv.w, (long long)vv.c,
			 (long long)vv.h);
		return NONE_T;
	}
	struct gen_tensor y = out_val(g, name, vv.c, pv.h, 1,
				      pv.needs_grad || vv.needs_grad, g->aesz);
	uint32_t in[2] = {p.v, v.v};
	uint32_t l = tape_add(g, GL_ATTN_CONTEXT, name, in, 2, y.v);
	if (l == GEN_NONE)
		return NONE_T;
	g->tape[l].heads = pv.w;
	struct op_spec s = {.name = name, .layer = name, .type = OT_MATMUL,
			    .phase = WL_FWD, .in = {pv.tensor, vv.tensor},
			    .n_in = 2, .out = {g->vals[y.v].tensor},
			    .n_out = 1};
	s.flops = 2.0 * (double)g->batch * (double)pv.h * (double)pv.c *
		  (double)vv.c;
	s.bytes = vbytes(g, p.v) + vbytes(g, v.v) + vbytes(g, y.v);
	s.gemm = gemm_of((double)g->batch * (double)pv.w, (double)pv.h,
			 (double)(vv.c / pv.w), (double)pv.c);
	emit(g, &s);
	return gen_ok(g) ? y : NONE_T;
}

/* Fused attention (FlashAttention; torch's scaled_dot_product_attention
 * on its flash or memory-efficient kernel). FlashAttention-2 (Dao 2023,
 * section 3.1.1): "we only need to store the output O and the logsumexp
 * L for the backward pass"; PyTorch's _scaled_dot_product_flash_attention
 * returns (output, logsumexp, ..., philox_seed, philox_offset, ...) and
 * its backward takes grad_out, query, key, value, out, logsumexp and the
 * seed and offset (tools/autograd/derivatives.yaml, torch 2.1+). So the
 * op writes NAME.out (hidden, seq, 1) in the compute dtype and
 * NAME.logsumexp (fp32, batch * heads * seq_q) -- the RNG state is two
 * int64 scalars, not counted -- and its backward NAME.bwd reads q, k, v,
 * out, logsumexp and dy and writes dq, dk, dv. Grouped-query attention
 * reads k and v with kv_heads heads as they are (flash-attn's
 * flash_attn_func takes "number of heads in KV ... divides the number of
 * heads in Q"): no repeat. FLOPs: 4 * seq_q * seq_k * hidden a sample
 * forward (QK^T and PV), 2.5 times that backward (the FlashAttention-2
 * paper's count: five matmuls in place of two), times `frac` (0.5 for a
 * causal mask, whose upper blocks the kernel skips; FlashAttention-2
 * section 4.1 counts causal FLOPs so). Scratch the backward allocates
 * (dq_accum, softmax_d) is not modelled. */
struct gen_tensor gen_sdpa(struct gen *g, const char *name,
			   struct gen_tensor q, struct gen_tensor k,
			   struct gen_tensor v, int64_t heads, bool causal)
{
	char buf[NAME_MAX_LEN];
	if (!start(g, name) || !check_in(g, name, q) ||
	    !check_in(g, name, k) || !check_in(g, name, v))
		return NONE_T;
	const struct gen_val qv = g->vals[q.v], kv = g->vals[k.v],
			     vv = g->vals[v.v];
	if (heads < 1 || qv.c % heads || kv.c != vv.c || kv.h != vv.h ||
	    (kv.c * heads) % qv.c || heads % ((kv.c * heads) / qv.c)) {
		gen_fail(g, "%s: q (%lld features), k and v (%lld) do not "
			    "split into %lld query heads", name,
			 (long long)qv.c, (long long)kv.c, (long long)heads);
		return NONE_T;
	}
	bool ng = qv.needs_grad || kv.needs_grad || vv.needs_grad;
	struct gen_tensor y = out_val(g, name, qv.c, qv.h, 1, ng, g->aesz);
	uint32_t lse = add_tensor(g, fmt_name(g, buf, "%s.logsumexp", name),
				  (uint64_t)(heads * qv.h) *
					  (uint64_t)g->batch * 4u,
				  WL_ACT, 4);
	uint32_t in[3] = {q.v, k.v, v.v};
	uint32_t l = tape_add(g, GL_SDPA, name, in, 3, y.v);
	if (l == GEN_NONE)
		return NONE_T;
	g->tape[l].heads = heads;
	g->tape[l].aux = lse;
	g->tape[l].causal = causal ? 0.5 : 1.0;
	struct op_spec s = {.name = name, .layer = name, .type = OT_MATMUL,
			    .phase = WL_FWD,
			    .in = {qv.tensor, kv.tensor, vv.tensor}, .n_in = 3,
			    .out = {g->vals[y.v].tensor, lse}, .n_out = 2};
	s.flops = g->tape[l].causal * 4.0 * (double)g->batch *
		  (double)qv.h * (double)kv.h * (double)qv.c;
	s.bytes = vbytes(g, q.v) + vbytes(g, k.v) + vbytes(g, v.v) +
		  vbytes(g, y.v) + (double)g->w->tensors[lse].bytes;
	emit(g, &s);
	return gen_ok(g) ? y : NONE_T;
}

/* ---- TensorFlow ops ----------------------------------------------- */

/* What the gradient of an input is (tf_def.grad). */
enum tf_grad {
	TG_NONE,   /* none: no gradient function, an integer input, or
		      a constant */
	TG_PASS,   /* dy itself (reshape(reduce_sum(grad, rx), sx) with
		      nothing to reduce: TF's Sum over no axes hands its
		      input's buffer on); a broadcast input gets a
		      reduction kernel reading dy only */
	TG_KERNEL, /* a kernel reading dy and tf_def.reads */
};

/* Tensors a gradient kernel reads besides dy (tf_def.reads). */
#define TR_X 1u /* op.inputs[0] */
#define TR_Y 2u /* op.inputs[1] */
#define TR_Z 4u /* op.outputs[0] */

/* One TensorFlow op type: what its gradient function reads
 * (tensorflow/python/ops/math_grad.py, array_grad.py; the functions
 * named below, as in the TF 1.x files stored under ids 28309536,
 * 144530963) and what the TF 1.x eager tape keeps for it
 * (tensorflow/python/eager/backprop.py, _ops_which_dont_need_outputs /
 * _ops_which_dont_need_inputs, stored id 124155874: 1 = the inputs,
 * 2 = the outputs). A scalar constant operand (keep_prob, 0.5, eps, ...)
 * is not a tensor here: 4 bytes, and its gradient is never needed. */
struct tf_def {
	const char *tf;		/* TF op type */
	uint32_t n_in;		/* tensor inputs (0, 1 or 2) */
	enum tf_grad grad[2];	/* per input */
	unsigned reads[2];	/* per TG_KERNEL input: TR_* */
	unsigned tape;		/* eager tape keeps: 1 inputs, 2 outputs */
	bool cwise;		/* forward kernel may take input 0's buffer */
	double fl;		/* forward FLOPs per output element */
	double bfl;		/* backward FLOPs per gradient element */
};

static const struct tf_def tf_defs[GEN_TF_COUNT] = {
	/* _AddGrad: reshape(reduce_sum(grad, rx), sx), the same for y */
	[GEN_TF_ADD] = {"Add", 2, {TG_PASS, TG_PASS}, {0, 0}, 1, true, 1, 1},
	/* _SubGrad: grad for x, -grad (a Neg kernel) for y */
	[GEN_TF_SUB] = {"Sub", 2, {TG_PASS, TG_KERNEL}, {0, 0}, 1, true, 1, 1},
	/* _MulGrad: reduce_sum(grad * y, rx) and reduce_sum(x * grad, ry) */
	[GEN_TF_MUL] = {"Mul", 2, {TG_KERNEL, TG_KERNEL}, {TR_Y, TR_X}, 1,
			true, 1, 1},
	/* _SquaredDifferenceGrad: x_grad = scalar_mul(2.0, grad) * (x - y)
	 * for both */
	[GEN_TF_SQDIFF] = {"SquaredDifference", 2, {TG_KERNEL, TG_KERNEL},
			   {TR_X | TR_Y, TR_X | TR_Y}, 1, true, 2, 3},
	/* x + c: _AddGrad, grad itself */
	[GEN_TF_ADDC] = {"Add", 1, {TG_PASS, TG_NONE}, {0, 0}, 1, true, 1, 1},
	/* c - x: _SubGrad, -grad */
	[GEN_TF_RSUBC] = {"Sub", 1, {TG_KERNEL, TG_NONE}, {0, 0}, 1, true, 1,
			  1},
	/* x * c: _MulGrad, grad * c (c is a constant) */
	[GEN_TF_MULC] = {"Mul", 1, {TG_KERNEL, TG_NONE}, {0, 0}, 1, true, 1,
			 1},
	/* x / c: _RealDivGrad, grad / c */
	[GEN_TF_DIVC] = {"RealDiv", 1, {TG_KERNEL, TG_NONE}, {0, 0}, 1, true,
			 1, 1},
	/* _ErfGrad: grad * 2/sqrt(pi) * exp(-square(x)): reads x */
	[GEN_TF_ERF] = {"Erf", 1, {TG_KERNEL, TG_NONE}, {TR_X, 0}, 3, true, 4,
			8},
	/* _RsqrtGrad: rsqrt_grad(y, grad): reads the output y */
	[GEN_TF_RSQRT] = {"Rsqrt", 1, {TG_KERNEL, TG_NONE}, {TR_Z, 0}, 3,
			  true, 4, 4},
	/* Floor: its gradient is None */
	[GEN_TF_FLOOR] = {"Floor", 1, {TG_NONE, TG_NONE}, {0, 0}, 3, true, 1,
			  0},
	/* _MeanGrad: tile(reshape(grad)) / factor from static shapes: no
	 * tensor read */
	[GEN_TF_MEAN] = {"Mean", 1, {TG_KERNEL, TG_NONE}, {0, 0}, 3, false, 1,
			 1},
	/* _TransposeGrad: transpose(grad, invert_permutation(p)) */
	[GEN_TF_TRANSPOSE] = {"Transpose", 1, {TG_KERNEL, TG_NONE}, {0, 0}, 3,
			      false, 0, 0},
	/* ops on integer or random inputs: no gradient */
	[GEN_TF_CAST] = {"Cast", 1, {TG_NONE, TG_NONE}, {0, 0}, 1, false, 1,
			 0},
	[GEN_TF_ONE_HOT] = {"OneHot", 1, {TG_NONE, TG_NONE}, {0, 0}, 3, false,
			    1, 0},
	[GEN_TF_FILL] = {"Fill", 0, {TG_NONE, TG_NONE}, {0, 0}, 3, false, 0,
			 0},
	[GEN_TF_RANDOM_UNIFORM] = {"RandomUniform", 0, {TG_NONE, TG_NONE},
				   {0, 0}, 3, false, 1, 0},
};

const char *gen_tf_name(enum gen_tf_op op)
{
	return (unsigned)op < GEN_TF_COUNT ? tf_defs[op].tf : "?";
}

/* Values are batch-sized unless they are parameters. */
static bool batched(const struct gen_val *v)
{
	return v->param == GEN_NONE;
}

/* One axis of numpy-style broadcasting; -1 when a and b do not
 * broadcast. */
static int64_t bcast_dim(int64_t a, int64_t b)
{
	if (a == b || b == 1)
		return a;
	return a == 1 ? b : -1;
}

struct gen_tensor gen_tf_op(struct gen *g, const char *name,
			    enum gen_tf_op op, struct gen_tensor x,
			    struct gen_tensor y, int64_t c, int64_t h,
			    int64_t w)
{
	if (!start(g, name))
		return NONE_T;
	if ((unsigned)op >= GEN_TF_COUNT) {
		gen_fail(g, "%s: unknown TensorFlow op %d", name, (int)op);
		return NONE_T;
	}
	const struct tf_def *d = &tf_defs[op];
	struct gen_tensor xs[2] = {x, y};
	uint32_t vin[2], tin[2];
	bool ng = false;
	int64_t oc = 1, oh = 1, ow = 1;
	for (uint32_t i = 0; i < d->n_in; i++) {
		if (!check_in(g, name, xs[i]))
			return NONE_T;
		const struct gen_val *v = &g->vals[xs[i].v];
		vin[i] = xs[i].v;
		tin[i] = v->tensor;
		ng = ng || (d->grad[i] != TG_NONE && v->needs_grad);
		oc = bcast_dim(oc, v->c), oh = bcast_dim(oh, v->h);
		ow = bcast_dim(ow, v->w);
		if (oc < 0 || oh < 0 || ow < 0) {
			gen_fail(g, "%s: shapes do not broadcast", name);
			return NONE_T;
		}
	}
	if (op == GEN_TF_MEAN)
		oc = 1; /* over the feature axis, keep_dims */
	if (c > 0)
		oc = c, oh = h, ow = w;
	int esz = 0;
	for (uint32_t i = 0; i < d->n_in; i++)
		if (g->vals[vin[i]].esz > esz)
			esz = g->vals[vin[i]].esz;
	struct gen_tensor out = out_val(g, name, oc, oh, ow, ng,
					esz ? esz : 4);
	uint32_t l = tape_add(g, GL_TF, name, vin, d->n_in, out.v);
	if (l == GEN_NONE)
		return NONE_T;
	g->tape[l].tf = op;
	struct op_spec s = {.name = name, .layer = name,
			    .type = op == GEN_TF_MEAN ? OT_OTHER : OT_ELEMWISE,
			    .phase = WL_FWD, .n_in = d->n_in,
			    .out = {g->vals[out.v].tensor}, .n_out = 1};
	s.bytes = vbytes(g, out.v);
	for (uint32_t i = 0; i < d->n_in; i++) {
		s.in[i] = tin[i];
		s.bytes += vbytes(g, vin[i]);
	}
	s.flops = d->fl * (op == GEN_TF_MEAN ? vbytes(g, vin[0]) / F32
					     : velems(g, out.v));
	/* BinaryOpState forwards input 0 or 1 ({0, 1}); the executor
	 * offers in[0], so a candidate input 1 goes first */
	for (uint32_t i = 0; d->cwise && i < d->n_in; i++) {
		if (!batched(&g->vals[vin[i]]) ||
		    !same_size(g, tin[i], s.out[0]))
			continue;
		s.in[i] = s.in[0];
		s.in[0] = tin[i];
		s.inplace = IP_CWISE;
		break;
	}
	emit(g, &s);
	return gen_ok(g) ? out : NONE_T;
}

struct gen_tensor gen_tf(struct gen *g, const char *name, enum gen_tf_op op,
			 struct gen_tensor x, struct gen_tensor y)
{
	return gen_tf_op(g, name, op, x, y, 0, 0, 0);
}

struct gen_tensor gen_stop_gradient(struct gen *g, struct gen_tensor x)
{
	if (!gen_ok(g) || !check_in(g, "stop_gradient", x))
		return NONE_T;
	const struct gen_val xv = g->vals[x.v];
	return new_val(g, xv.tensor, xv.root, xv.c, xv.h, xv.w, false, xv.esz);
}

struct gen_tensor gen_param_value(struct gen *g, const char *name,
				  int64_t c, int64_t h, int64_t w,
				  int64_t numel)
{
	if (!start(g, name))
		return NONE_T;
	if (c < 1 || h < 1 || w < 1 || numel < c * h * w) {
		gen_fail(g, "%s: parameter of %lld elements viewed as "
			    "%lldx%lldx%lld", name, (long long)numel,
			 (long long)c, (long long)h, (long long)w);
		return NONE_T;
	}
	uint32_t l = tape_add(g, GL_PARAM, name, NULL, 0, GEN_NONE);
	if (l == GEN_NONE)
		return NONE_T;
	uint32_t p = new_param(g, name, NULL, numel, l);
	if (p == GEN_NONE)
		return NONE_T;
	struct gen_tensor v = new_val(g, g->params[p].tensor, GEN_NONE, c, h,
				      w, true, g->pesz);
	if (v.v != GEN_NONE)
		g->vals[v.v].param = p;
	return v;
}

/* ---- Loss --------------------------------------------------------- */

/* torch's cross_entropy is log_softmax then nll_loss
 * (aten/src/ATen/native/LossNLL.cpp, cross_entropy_loss: "at::nll_loss_nd(
 * at::log_softmax(self, class_dim, self.scalar_type()), target, ...)"),
 * and autograd runs their backward as two kernels (derivatives.yaml):
 * nll_loss_backward writes a gradient of the log-probabilities' full size
 * (zeros, then -1/rows at each label), which _log_softmax_backward_data
 * reads with the saved log-probabilities to write dlogits. The forward is
 * gen_loss's; the backward: NAME.bwd_nll (OT_LOSS_BWD: labels ->
 * dlogprobs) and NAME.bwd (OT_SOFTMAX_BWD: dlogprobs, logprobs ->
 * dlogits), so both V-wide gradients are live at once. The language
 * models use it (a recorded GPT-2 step holds the three; gen_loss's one
 * fused backward op is what the CNN generators keep). */
void gen_loss_nll(struct gen *g, const char *name, struct gen_tensor logits)
{
	gen_loss(g, name, logits);
	if (gen_ok(g) && g->n_tape && g->tape[g->n_tape - 1].kind == GL_LOSS)
		g->tape[g->n_tape - 1].nll = true;
}

void gen_loss(struct gen *g, const char *name, struct gen_tensor logits)
{
	char b1[NAME_MAX_LEN], b2[NAME_MAX_LEN], b3[NAME_MAX_LEN];
	if (!start(g, name) || !check_in(g, name, logits))
		return;
	const struct gen_val lv = g->vals[logits.v];
	uint64_t rows = (uint64_t)(lv.h * lv.w) * (uint64_t)g->batch;
	/* caffe: the data layer's label top is a Blob<Dtype> of the batch
	 * (base_data_layer.cpp, data_layer.cpp: label_shape(1, batch)),
	 * fp32; else int64 */
	uint32_t labels = add_tensor(g, fmt_name(g, b1, "%s.labels", name),
				     rows * (caffe(g) ? 4u : 8u), WL_INPUT,
				     caffe(g) ? 4 : 8);
	/* cross_entropy is on autocast's fp32 list; otherwise its
	 * log-probabilities have the logits' dtype */
	int pe = g->autocast || lv.esz > 4 ? 4 : lv.esz;
	uint32_t probs = add_tensor(g, fmt_name(g, b2, "%s.probs", name),
				    (uint64_t)vnumel(&lv) *
					    (uint64_t)g->batch * (uint64_t)pe,
				    WL_ACT, pe);
	uint32_t loss = add_tensor(g, fmt_name(g, b3, "%s.out", name), 4,
				   WL_ACT, 4);
	uint32_t l = tape_add(g, GL_LOSS, name, &logits.v, 1, GEN_NONE);
	if (l == GEN_NONE)
		return;
	g->tape[l].aux = probs;
	g->tape[l].aux2 = labels;
	struct op_spec s = {.name = name, .layer = name, .type = OT_LOSS,
			    .phase = WL_FWD, .in = {lv.tensor, labels},
			    .n_in = 2, .out = {probs, loss}, .n_out = 2};
	s.flops = 5.0 * velems(g, logits.v);
	s.bytes = 2.0 * vbytes(g, logits.v) +
		  (double)g->w->tensors[labels].bytes + 4.0;
	if (caffe(g) && lv.needs_grad) {
		/* SoftmaxWithLoss's prob_ is NAME.probs; its Forward_gpu
		 * takes the bottom's diff as scratch ("Since this memory is
		 * not used for anything, we use it here to avoid having to
		 * allocate new GPU memory", softmax_loss_layer.cu): the
		 * logits' diff is allocated in forward. NAME.scratch is that
		 * blob; the backward writes dlogits over it (in place) */
		g->tape[l].hid[0] = hidden(g, name, "scratch",
					   fbytes(g, vnumel(&lv)),
					   WL_ACT_GRAD, 4);
		s.out[s.n_out++] = g->tape[l].hid[0];
	}
	emit(g, &s);
}

static void pcontrib(struct gen *g, uint32_t p, uint32_t t,
		     const char *layer);
static uint32_t pgrad_tensor(struct gen *g, uint32_t p);

/* Fused linear cross-entropy, as Liger Kernel's
 * LigerFusedLinearCrossEntropyFunction (src/liger_kernel/ops/
 * fused_linear_cross_entropy.py, fused_linear_cross_entropy_forward): the
 * rows are taken in chunks ("inc_factor = triton.cdiv(V, H)",
 * "chunk_size = triton.next_power_of_2(triton.cdiv(BT, inc_factor))");
 * per chunk the logits are computed in the input's dtype, the softmax
 * cross-entropy's gradient written over them in place by the kernel, and
 * grad_input (torch.zeros_like(_input)) and grad_weight
 * (torch.zeros_like(weight), the weight's dtype) filled in the forward.
 * The backward multiplies grad_input by the loss's gradient. So: one
 * forward op reading x, the (cast) weight and the labels, writing the
 * loss, NAME.grad_input (saved; x's size) and the weight's gradient
 * (held to the update, as every .grad), with the chunk's logits as
 * scratch (workspace: chunk * V elements of the compute dtype); backward
 * NAME.bwd reads grad_input and writes dx. FLOPs: three matmuls (logits,
 * grad_input, grad_weight) and 7 an element of logits (softmax and its
 * gradient). weight: a tied parameter index, or GEN_NONE for a new
 * NAME.weight (vocab x x.c). */
void gen_fused_lm_loss(struct gen *g, const char *name, struct gen_tensor x,
		       int64_t vocab, uint32_t weight)
{
	char b1[NAME_MAX_LEN], b2[NAME_MAX_LEN], b3[NAME_MAX_LEN];
	if (!start(g, name) || !check_in(g, name, x))
		return;
	x = ac_input(g, name, x);
	if (!gen_ok(g))
		return;
	const struct gen_val xv = g->vals[x.v];
	int64_t rows = (xv.h * xv.w) * g->batch, hdim = xv.c;
	if (vocab < 1 || (weight != GEN_NONE &&
			  (weight >= g->n_params ||
			   g->params[weight].numel !=
				   (uint64_t)(vocab * hdim)))) {
		gen_fail(g, "%s: weight is not %lld x %lld", name,
			 (long long)vocab, (long long)hdim);
		return;
	}
	uint32_t labels = add_tensor(g, fmt_name(g, b1, "%s.labels", name),
				     (uint64_t)rows * 8u, WL_INPUT, 8);
	uint32_t loss = add_tensor(g, fmt_name(g, b2, "%s.out", name), 4,
				   WL_ACT, 4);
	uint32_t gin = add_tensor(g, fmt_name(g, b3, "%s.grad_input", name),
				  (uint64_t)vbytes(g, x.v), WL_ACT, xv.esz);
	uint32_t l = tape_add(g, GL_FUSED_LOSS, name, &x.v, 1, GEN_NONE);
	if (l == GEN_NONE)
		return;
	uint32_t p = weight != GEN_NONE
			     ? weight
			     : new_param(g, name, "weight", vocab * hdim, l);
	if (!gen_ok(g))
		return;
	g->tape[l].wp = p;
	g->tape[l].aux = gin;
	g->tape[l].aux2 = labels;
	uint32_t wt = ac_weight(g, name, p);
	bool frozen = g->params[p].frozen;
	uint32_t dw = frozen ? WL_NONE : pgrad_tensor(g, p);
	int64_t inc = (vocab + hdim - 1) / hdim, chunk = 1;
	while (chunk < (rows + inc - 1) / inc)
		chunk *= 2;
	double mm = 2.0 * (double)rows * (double)hdim * (double)vocab;
	struct op_spec s = {.name = name, .layer = name, .type = OT_MATMUL,
			    .phase = WL_FWD, .in = {xv.tensor, wt, labels},
			    .n_in = 3, .out = {loss, gin, dw},
			    .n_out = frozen ? 2 : 3};
	s.flops = 3.0 * mm + 7.0 * (double)rows * (double)vocab;
	s.bytes = 2.0 * vbytes(g, x.v) + 2.0 * pbytes(g, p) +
		  (double)rows * 8.0 + 4.0;
	s.workspace = (uint64_t)chunk * (uint64_t)vocab * (uint64_t)g->aesz;
	if (emit(g, &s) == 0 && !frozen)
		pcontrib(g, p, dw, name);
}

/* ---- Backward ----------------------------------------------------- */

/* A new gradient tensor for value v (its full size), named
 * T.grad[.k] after v's root tensor T. */
static uint32_t grad_tensor(struct gen *g, uint32_t v)
{
	char buf[NAME_MAX_LEN];
	struct gen_val *r = &g->vals[g->vals[v].root];
	uint32_t k = ++r->n_named;
	const char *t = tname(g, r->tensor);
	const char *nm = k == 1 ? fmt_name(g, buf, "%s.grad", t)
				: fmt_name(g, buf, "%s.grad.%u", t, k);
	return add_tensor(g, nm, (uint64_t)vbytes(g, v), WL_ACT_GRAD,
			  g->vals[v].esz);
}

/* A new gradient tensor for parameter p. */
static uint32_t pgrad_tensor(struct gen *g, uint32_t p)
{
	char buf[NAME_MAX_LEN];
	struct gen_param *P = &g->params[p];
	uint32_t k = ++P->n_named;
	const char *t = tname(g, P->tensor);
	const char *nm = k == 1 ? fmt_name(g, buf, "%s.grad", t)
				: fmt_name(g, buf, "%s.grad.%u", t, k);
	return add_tensor(g, nm, P->numel * (uint64_t)g->pesz, WL_PARAM_GRAD,
			  g->pesz);
}

/* Sum gradient `t` into accumulator *acc (of `bytes`, named after tensor
 * `base`, counter *n_sums): the first contribution becomes *acc, later
 * ones are added by an OT_ADD op in `layer`. */
static void accumulate(struct gen *g, uint32_t *acc, uint32_t t,
		       uint64_t bytes, const char *base, uint32_t *n_sums,
		       enum wl_kind kind, const char *layer)
{
	char ob[NAME_MAX_LEN], tb[NAME_MAX_LEN];
	if (!gen_ok(g) || t == WL_NONE)
		return;
	if (*acc == WL_NONE) {
		*acc = t;
		return;
	}
	uint32_t k = ++*n_sums + 1;
	uint32_t sum = add_tensor(g, fmt_name(g, tb, "%s.grad.sum%u", base, k),
				  bytes, kind, g->w->tensors[t].esz);
	if (sum == WL_NONE)
		return;
	/* in place into an addend of the sum's own size (not a view),
	 * preferably the new one: an older one may be a tensor passed on
	 * unchanged (add, concat) that other layers still read */
	uint32_t a = t, b = *acc;
	enum gen_ip ip = IP_ACC;
	if (!same_size(g, a, sum) && same_size(g, b, sum))
		a = *acc, b = t;
	if (k > 2 && same_size(g, *acc, sum)) {
		/* a third or later addend goes into the running sum (Caffe's
		 * Split: caffe_gpu_axpy into the bottom's diff) */
		a = *acc, b = t;
		ip = IP_SPLIT;
	}
	struct op_spec s = {.name = fmt_name(g, ob, "%s.grad_acc%u", base, k),
			    .layer = layer, .type = OT_ADD, .phase = WL_BWD,
			    .in = {a, b}, .n_in = 2, .out = {sum},
			    .n_out = 1,
			    .inplace = same_size(g, a, sum) ? ip : IP_NO};
	s.flops = (double)bytes /
		  (double)(g->w->tensors[t].esz ? g->w->tensors[t].esz : 4);
	s.bytes = 3.0 * (double)bytes;
	if (emit(g, &s) == 0)
		*acc = sum;
}

/* Gradient contribution t to value v from the layer named `layer`. */
static void contrib(struct gen *g, uint32_t v, uint32_t t, const char *layer)
{
	struct gen_val *r = &g->vals[g->vals[v].root];
	const char *base = tname(g, r->tensor);
	uint32_t acc = g->vals[v].grad;
	accumulate(g, &acc, t, (uint64_t)vbytes(g, v), base, &r->n_sums,
		   WL_ACT_GRAD, layer);
	g->vals[v].grad = acc;
}

static void pcontrib(struct gen *g, uint32_t p, uint32_t t,
		     const char *layer)
{
	struct gen_param *P = &g->params[p];
	uint32_t acc = P->grad;
	accumulate(g, &acc, t, P->numel * (uint64_t)g->pesz,
		   tname(g, P->tensor),
		   &P->n_sums, WL_PARAM_GRAD, layer);
	g->params[p].grad = acc;
}

/* Value index of input i of layer L. */
static uint32_t lin(const struct gen *g, const struct gen_layer *L,
		    uint32_t i)
{
	return g->ins[L->in0 + i];
}

static bool needs(const struct gen *g, uint32_t v)
{
	return g->vals[v].needs_grad;
}

static uint32_t vt(const struct gen *g, uint32_t v)
{
	return g->vals[v].tensor;
}

/* After a layer's backward ops: hand dx (if any) to input x and the
 * weight (and bias) gradients to the parameters, as autograd does once
 * the layer's backward node has run. */
static void layer_grads(struct gen *g, const struct gen_layer *L, uint32_t x,
			uint32_t dx, uint32_t dw, uint32_t db)
{
	if (dx != WL_NONE)
		contrib(g, x, dx, L->name);
	pcontrib(g, L->wp, dw, L->name);
	if (db != WL_NONE)
		pcontrib(g, L->bp, db, L->name);
}

/* Backward of a convolution (data, then filter). */
static void bwd_conv(struct gen *g, const struct gen_layer *L, uint32_t dy)
{
	char b1[NAME_MAX_LEN], b2[NAME_MAX_LEN];
	uint32_t x = lin(g, L, 0), y = L->out, dx = WL_NONE;
	const struct gen_val *xv = &g->vals[x], *yv = &g->vals[y];
	struct wl_conv cg = conv_geo(g, xv, yv, L);
	double macs = conv_macs(&cg);
	struct wl_algo al[CA_MAX_ALGOS];
	uint64_t ws;
	uint32_t wt = L->wcast != WL_NONE ? L->wcast : g->params[L->wp].tensor;
	if (needs(g, x)) {
		dx = grad_tensor(g, x);
		uint32_t na = conv_choice(g, &cg, CA_BWD_DATA, al, &ws);
		struct op_spec s = {.name = fmt_name(g, b1, "%s.bwd_data",
						     L->name),
				    .layer = L->name,
				    .type = OT_CONV_BWD_DATA,
				    .phase = WL_BWD, .in = {wt, dy},
				    .n_in = 2, .out = {dx}, .n_out = 1,
				    .algos = al, .n_algos = na,
				    .conv = &cg};
		if (L->hid[0] != WL_NONE)
			s.in[s.n_in++] = L->hid[0];
		s.flops = 2.0 * macs;
		s.bytes = pbytes(g, L->wp) + vbytes(g, y) + vbytes(g, x);
		emit(g, &s);
	}
	uint32_t dw = pgrad_tensor(g, L->wp);
	uint32_t db = L->bp != GEN_NONE ? pgrad_tensor(g, L->bp) : WL_NONE;
	uint32_t na = conv_choice(g, &cg, CA_BWD_FILTER, al, &ws);
	struct op_spec s = {.name = fmt_name(g, b2, "%s.bwd_filter", L->name),
			    .layer = L->name, .type = OT_CONV_BWD_FILTER,
			    .phase = WL_BWD, .in = {vt(g, x), dy}, .n_in = 2,
			    .out = {dw}, .n_out = 1, .algos = al,
			    .n_algos = na, .conv = &cg};
	if (L->hid[0] != WL_NONE)
		s.in[s.n_in++] = L->hid[0];
	s.flops = 2.0 * macs;
	s.bytes = vbytes(g, x) + vbytes(g, y) + pbytes(g, L->wp);
	if (db != WL_NONE) {
		s.out[s.n_out++] = db;
		s.flops += velems(g, y);
		s.bytes += pbytes(g, L->bp);
	}
	if (emit(g, &s) == 0)
		layer_grads(g, L, x, dx, dw, db);
}

/* Backward of a linear layer (data, then weight). */
static void bwd_linear(struct gen *g, const struct gen_layer *L, uint32_t dy)
{
	char b1[NAME_MAX_LEN], b2[NAME_MAX_LEN];
	uint32_t x = lin(g, L, 0), y = L->out, dx = WL_NONE;
	const struct gen_val *xv = &g->vals[x], *yv = &g->vals[y];
	double rows = (double)g->batch * (double)(xv->h * xv->w);
	double fl = 2.0 * rows * (double)xv->c * (double)yv->c;
	uint32_t wt = L->wcast != WL_NONE ? L->wcast : g->params[L->wp].tensor;
	if (needs(g, x)) {
		dx = grad_tensor(g, x);
		struct op_spec s = {.name = fmt_name(g, b1, "%s.bwd_data",
						     L->name),
				    .layer = L->name, .type = OT_MATMUL_BWD,
				    .phase = WL_BWD, .in = {wt, dy},
				    .n_in = 2, .out = {dx}, .n_out = 1};
		s.flops = fl;
		s.bytes = pbytes(g, L->wp) + vbytes(g, y) + vbytes(g, x);
		s.gemm = gemm_of(1, rows, (double)xv->c, (double)yv->c);
		emit(g, &s);
	}
	if (g->params[L->wp].frozen) {
		/* no weight gradient, and the input is not kept for one:
		 * autograd saves an input only when the gradient needing it
		 * is required (tools/autograd/gen_variable_type.py,
		 * guard_for: `if (grad_fn->should_compute_output(1))`) */
		if (dx != WL_NONE)
			contrib(g, x, dx, L->name);
		return;
	}
	uint32_t dw = pgrad_tensor(g, L->wp);
	uint32_t db = L->bp != GEN_NONE ? pgrad_tensor(g, L->bp) : WL_NONE;
	struct op_spec s = {.name = fmt_name(g, b2, "%s.bwd_weight", L->name),
			    .layer = L->name, .type = OT_MATMUL_BWD,
			    .phase = WL_BWD, .in = {vt(g, x), dy}, .n_in = 2,
			    .out = {dw}, .n_out = 1};
	s.flops = fl;
	s.bytes = vbytes(g, x) + vbytes(g, y) + pbytes(g, L->wp);
	s.gemm = gemm_of(1, (double)yv->c, (double)xv->c, rows);
	if (db != WL_NONE) {
		s.out[s.n_out++] = db;
		s.flops += rows * (double)yv->c;
		s.bytes += pbytes(g, L->bp);
	}
	if (emit(g, &s) == 0)
		layer_grads(g, L, x, dx, dw, db);
}

/* Backward of batchnorm / layernorm: one op, dx and the affine grads. */
static void bwd_norm(struct gen *g, const struct gen_layer *L, uint32_t dy,
		     enum wl_op_type type)
{
	char b1[NAME_MAX_LEN];
	uint32_t x = lin(g, L, 0);
	bool affine = L->wp != GEN_NONE && !g->params[L->wp].frozen;
	uint32_t dx = needs(g, x) ? grad_tensor(g, x) : WL_NONE;
	if (!affine && dx == WL_NONE)
		return;
	struct op_spec s = {.name = fmt_name(g, b1, "%s.bwd", L->name),
			    .layer = L->name, .type = type, .phase = WL_BWD};
	s.flops = 9.0 * velems(g, x);
	s.bytes = 3.0 * vbytes(g, x) + (double)g->w->tensors[L->aux].bytes;
	if (L->hid[1] != WL_NONE) {
		/* caffe (batch_norm_layer.cu Backward_gpu): reads top_diff,
		 * x_norm_ and temp_ (x itself may be clobbered); in place it
		 * first copies top_diff into x_norm_'s diff, a full-size
		 * blob of its own (`x_norm_.mutable_gpu_diff()`) */
		s.in[s.n_in++] = dy;
		s.in[s.n_in++] = L->hid[1];
		s.in[s.n_in++] = L->hid[0];
		s.in[s.n_in++] = L->aux;
		s.bytes += vbytes(g, x);
	} else {
		s.in[s.n_in++] = vt(g, x);
		s.in[s.n_in++] = L->aux;
		if (L->wp != GEN_NONE) /* gamma scales dx, frozen or not */
			s.in[s.n_in++] = g->params[L->wp].tensor;
		s.in[s.n_in++] = dy;
	}
	if (dx != WL_NONE) {
		s.out[s.n_out++] = dx;
		s.inplace = L->inplace ? IP_LAYER : IP_NO;
	}
	if (L->hid[1] != WL_NONE && L->inplace) {
		s.out[s.n_out++] = hidden(g, L->name, "x_norm.diff",
					  (uint64_t)vbytes(g, x), WL_ACT_GRAD,
					  g->vals[x].esz);
		s.bytes += vbytes(g, x);
	}
	uint32_t dg = WL_NONE, dbeta = WL_NONE;
	if (affine) {
		dg = pgrad_tensor(g, L->wp);
		if (L->bp != GEN_NONE)
			dbeta = pgrad_tensor(g, L->bp);
		if (L->hid[1] != WL_NONE)
			s.in[s.n_in++] = g->params[L->wp].tensor;
		s.out[s.n_out++] = dg;
		if (dbeta != WL_NONE)
			s.out[s.n_out++] = dbeta;
		s.bytes += (dbeta != WL_NONE ? 3.0 : 2.0) * pbytes(g, L->wp);
	}
	if (emit(g, &s) == 0) {
		if (dx != WL_NONE)
			contrib(g, x, dx, L->name);
		if (affine) {
			pcontrib(g, L->wp, dg, L->name);
			if (dbeta != WL_NONE)
				pcontrib(g, L->bp, dbeta, L->name);
		}
	}
}

/* A one-op backward writing dX of input 0 from the listed reads. */
static void bwd_simple(struct gen *g, const struct gen_layer *L,
		       enum wl_op_type type, const uint32_t *in, uint32_t n_in,
		       double flops, double bytes, enum gen_ip inplace)
{
	char b1[NAME_MAX_LEN];
	uint32_t x = lin(g, L, 0);
	if (!needs(g, x))
		return;
	uint32_t dx = grad_tensor(g, x);
	struct op_spec s = {.name = fmt_name(g, b1, "%s.bwd", L->name),
			    .layer = L->name, .type = type, .phase = WL_BWD,
			    .n_in = n_in, .out = {dx}, .n_out = 1,
			    .flops = flops, .bytes = bytes};
	for (uint32_t i = 0; i < n_in; i++)
		s.in[i] = in[i];
	s.inplace = dx != WL_NONE && same_size(g, in[0], dx) ? inplace : IP_NO;
	if (emit(g, &s) == 0)
		contrib(g, x, dx, L->name);
}

/* One half of an attention matmul's backward: grad of value `x` from
 * dy and `other`; returns it (WL_NONE when x needs none). */
static uint32_t bwd_half(struct gen *g, const struct gen_layer *L,
			 const char *sfx, uint32_t x, uint32_t dy,
			 uint32_t other, double flops, struct wl_gemm gemm)
{
	char b1[NAME_MAX_LEN];
	if (!needs(g, x))
		return WL_NONE;
	uint32_t dx = grad_tensor(g, x);
	struct op_spec s = {.name = fmt_name(g, b1, "%s.%s", L->name, sfx),
			    .layer = L->name, .type = OT_MATMUL_BWD,
			    .phase = WL_BWD, .in = {dy, vt(g, other)},
			    .n_in = 2, .out = {dx}, .n_out = 1,
			    .flops = flops, .gemm = gemm};
	s.bytes = vbytes(g, L->out) + (double)g->w->tensors[vt(g, other)].bytes +
		  vbytes(g, x);
	return emit(g, &s) == 0 ? dx : WL_NONE;
}

/* Backward of an attention matmul with inputs a, b: a's half, b's half
 * (GEMMs ga and gb, gemm_of), then the contributions. */
static void bwd_pair(struct gen *g, const struct gen_layer *L,
		     const char *sa, const char *sb, uint32_t dy, double fl,
		     struct wl_gemm ga, struct wl_gemm gb)
{
	uint32_t a = lin(g, L, 0), b = lin(g, L, 1);
	uint32_t da = bwd_half(g, L, sa, a, dy, b, fl, ga);
	uint32_t db = bwd_half(g, L, sb, b, dy, a, fl, gb);
	if (da != WL_NONE)
		contrib(g, a, da, L->name);
	if (db != WL_NONE)
		contrib(g, b, db, L->name);
}

/* Backward of a Scale layer (scale_layer.cu Backward_gpu): dgamma from
 * dy and the bottom data -- temp_ when in place --, dbeta (the Bias
 * layer) from dy, dx = gamma * dy over dy when in place; 4 FLOPs an
 * element. */
static void bwd_affine(struct gen *g, const struct gen_layer *L,
		       uint32_t dy)
{
	char b1[NAME_MAX_LEN];
	uint32_t x = lin(g, L, 0);
	uint32_t dx = needs(g, x) ? grad_tensor(g, x) : WL_NONE;
	uint32_t dw = pgrad_tensor(g, L->wp);
	uint32_t db = L->bp != GEN_NONE ? pgrad_tensor(g, L->bp) : WL_NONE;
	struct op_spec s = {.name = fmt_name(g, b1, "%s.bwd", L->name),
			    .layer = L->name, .type = OT_ELEMWISE,
			    .phase = WL_BWD,
			    .in = {dy, L->hid[0] != WL_NONE ? L->hid[0]
							   : vt(g, x),
				   g->params[L->wp].tensor},
			    .n_in = 3};
	if (dx != WL_NONE) {
		s.out[s.n_out++] = dx;
		s.inplace = L->inplace ? IP_LAYER : IP_NO;
	}
	s.out[s.n_out++] = dw;
	if (db != WL_NONE)
		s.out[s.n_out++] = db;
	s.flops = 4.0 * velems(g, x);
	s.bytes = 3.0 * vbytes(g, x) + 2.0 * pbytes(g, L->wp) +
		  pbytes(g, L->bp);
	if (emit(g, &s) == 0)
		layer_grads(g, L, x, dx, dw, db);
}

/* caffe: Eltwise SUM and Concat give each bottom a diff of its own, a
 * copy of (a slice of) the top's diff: `caffe_copy(count, top_diff,
 * bottom_diff)` (eltwise_layer.cu Backward_gpu, coefficient 1) and the
 * per-bottom copy of concat_layer.cu. One OT_ELEMWISE op per input
 * that needs a gradient: NAME.bwd, NAME.bwd.2, ... (no FLOPs). */
static void bwd_copies(struct gen *g, const struct gen_layer *L, uint32_t dy)
{
	char b1[NAME_MAX_LEN];
	for (uint32_t i = 0; i < L->n_in && gen_ok(g); i++) {
		uint32_t x = lin(g, L, i);
		if (!needs(g, x))
			continue;
		uint32_t dx = grad_tensor(g, x);
		struct op_spec s = {
			.name = i ? fmt_name(g, b1, "%s.bwd.%u", L->name, i + 1)
				  : fmt_name(g, b1, "%s.bwd", L->name),
			.layer = L->name, .type = OT_ELEMWISE,
			.phase = WL_BWD, .in = {dy}, .n_in = 1, .out = {dx},
			.n_out = 1, .flops = 0.0,
			.bytes = 2.0 * vbytes(g, x)};
		if (emit(g, &s) == 0)
			contrib(g, x, dx, L->name);
	}
}

/* Gradient contribution t to value v: a parameter value's goes to its
 * parameter. */
static void give(struct gen *g, uint32_t v, uint32_t t, const char *layer)
{
	if (g->vals[v].param != GEN_NONE)
		pcontrib(g, g->vals[v].param, t, layer);
	else
		contrib(g, v, t, layer);
}

/* Backward of a TensorFlow op (gen_tf_op): per input with a gradient,
 * in input order, dy itself (TG_PASS, same shape) or one kernel
 * NAME.bwd (unary) / NAME.bwd_x, NAME.bwd_y reading dy and what the
 * gradient function reads (tf_defs). */
static void bwd_tf(struct gen *g, const struct gen_layer *L, uint32_t dy)
{
	char b1[NAME_MAX_LEN];
	const struct tf_def *d = &tf_defs[L->tf];
	for (uint32_t i = 0; i < L->n_in && gen_ok(g); i++) {
		uint32_t v = lin(g, L, i);
		if (d->grad[i] == TG_NONE || !needs(g, v))
			continue;
		const struct gen_val *xv = &g->vals[v], *yv = &g->vals[L->out];
		if (d->grad[i] == TG_PASS && batched(xv) && xv->c == yv->c &&
		    xv->h == yv->h && xv->w == yv->w) {
			give(g, v, dy, L->name);
			continue;
		}
		uint32_t dx = xv->param != GEN_NONE ? pgrad_tensor(g, xv->param)
						    : grad_tensor(g, v);
		const char *sfx = d->n_in == 1 ? "bwd" : i ? "bwd_y" : "bwd_x";
		struct op_spec s = {
			.name = fmt_name(g, b1, "%s.%s", L->name, sfx),
			.layer = L->name, .type = OT_ELEMWISE,
			.phase = WL_BWD, .in = {dy}, .n_in = 1, .out = {dx},
			.n_out = 1};
		if (dx == WL_NONE)
			return;
		unsigned r = d->grad[i] == TG_KERNEL ? d->reads[i] : 0;
		if (r & TR_X)
			s.in[s.n_in++] = vt(g, lin(g, L, 0));
		if (r & TR_Y)
			s.in[s.n_in++] = vt(g, lin(g, L, 1));
		if (r & TR_Z)
			s.in[s.n_in++] = vt(g, L->out);
		s.bytes = (double)g->w->tensors[dx].bytes;
		for (uint32_t k = 0; k < s.n_in; k++)
			s.bytes += (double)g->w->tensors[s.in[k]].bytes;
		s.flops = d->bfl * velems(g, L->out);
		s.inplace = same_size(g, dy, dx) ? IP_GRAD : IP_NO;
		if (emit(g, &s) == 0)
			give(g, v, dx, L->name);
	}
}

/* gen_loss_nll's backward: nll_loss_backward, then log_softmax's. */
static void bwd_nll(struct gen *g, const struct gen_layer *L)
{
	char b1[NAME_MAX_LEN], b2[NAME_MAX_LEN];
	uint32_t x = lin(g, L, 0);
	if (!needs(g, x))
		return;
	const struct wl_tensor *lp = &g->w->tensors[L->aux];
	uint32_t dlp = add_tensor(g, fmt_name(g, b1, "%s.dlogprobs", L->name),
				  lp->bytes, WL_ACT_GRAD, lp->esz);
	double n = velems(g, x);
	struct op_spec s = {.name = fmt_name(g, b2, "%s.bwd_nll", L->name),
			    .layer = L->name, .type = OT_LOSS_BWD,
			    .phase = WL_BWD, .in = {L->aux2}, .n_in = 1,
			    .out = {dlp}, .n_out = 1, .flops = n,
			    .bytes = (double)lp->bytes +
				     (double)g->w->tensors[L->aux2].bytes};
	if (emit(g, &s) < 0)
		return;
	uint32_t in[2] = {dlp, L->aux};
	/* dx = dy - exp(y) * sum(dy): 4 an element */
	bwd_simple(g, L, OT_SOFTMAX_BWD, in, 2, 4.0 * n,
		   2.0 * (double)lp->bytes + vbytes(g, x), IP_NO);
}

/* gen_sdpa's backward: one kernel, dq, dk, dv. */
static void bwd_sdpa(struct gen *g, const struct gen_layer *L, uint32_t dy)
{
	char b1[NAME_MAX_LEN];
	uint32_t q = lin(g, L, 0), k = lin(g, L, 1), v = lin(g, L, 2);
	struct op_spec s = {.name = fmt_name(g, b1, "%s.bwd", L->name),
			    .layer = L->name, .type = OT_MATMUL_BWD,
			    .phase = WL_BWD,
			    .in = {vt(g, q), vt(g, k), vt(g, v), vt(g, L->out),
				   L->aux, dy},
			    .n_in = 6};
	s.flops = 2.5 * L->causal * 4.0 * (double)g->batch *
		  (double)g->vals[q].h * (double)g->vals[k].h *
		  (double)g->vals[q].c;
	s.bytes = 2.0 * (vbytes(g, q) + vbytes(g, k) + vbytes(g, v)) +
		  2.0 * vbytes(g, L->out) +
		  (double)g->w->tensors[L->aux].bytes;
	uint32_t xs[3] = {q, k, v}, dx[3] = {WL_NONE, WL_NONE, WL_NONE};
	for (int i = 0; i < 3; i++)
		if (needs(g, xs[i]))
			s.out[s.n_out++] = dx[i] = grad_tensor(g, xs[i]);
	if (!s.n_out || emit(g, &s) < 0)
		return;
	for (int i = 0; i < 3; i++)
		if (dx[i] != WL_NONE)
			contrib(g, xs[i], dx[i], L->name);
}

static void bwd_layer(struct gen *g, const struct gen_layer *L)
{
	uint32_t dy = L->out != GEN_NONE ? g->vals[L->out].grad : WL_NONE;
	if (L->kind != GL_LOSS && L->kind != GL_FUSED_LOSS && dy == WL_NONE)
		return; /* nothing downstream reached the loss */
	if (L->name)
		g->cur_layer = L->name;
	wl_set_block(g->w, L->block, L->region); /* its backward ops */
	uint32_t x = L->n_in ? lin(g, L, 0) : GEN_NONE;
	double ny = L->out != GEN_NONE ? velems(g, L->out) : 0.0;
	double by = L->out != GEN_NONE ? vbytes(g, L->out) : 0.0;
	switch (L->kind) {
	case GL_CONV:
		bwd_conv(g, L, dy);
		break;
	case GL_LINEAR:
		bwd_linear(g, L, dy);
		break;
	case GL_BN:
		bwd_norm(g, L, dy, OT_BATCHNORM_BWD);
		break;
	case GL_LAYERNORM:
	case GL_RMSNORM:
		bwd_norm(g, L, dy, OT_LAYERNORM_BWD);
		break;
	case GL_RELU: {
		uint32_t in[2] = {dy, vt(g, L->out)};
		bwd_simple(g, L, OT_RELU_BWD, in, 2, ny, 3.0 * by, IP_GRAD);
		break;
	}
	case GL_MAXPOOL: {
		/* TensorFlow's MaxPoolGrad(orig_input, orig_output, grad)
		 * (nn_grad.py _MaxPoolGrad); PyTorch's
		 * max_pool2d_with_indices_backward(grad, self, ..., indices)
		 * (derivatives.yaml): the input and the saved indices */
		uint32_t in[3] = {vt(g, x), vt(g, L->out), dy};
		if (L->hid[0] != WL_NONE) {
			/* caffe: MaxPoolBackward reads top_diff and
			 * max_idx_ only (pooling_layer.cu) */
			uint32_t cin[2] = {dy, L->hid[0]};
			bwd_simple(g, L, OT_POOL_BWD, cin, 2, L->work,
				   vbytes(g, x) + 2.0 * by, IP_NO);
			break;
		}
		double b = 2.0 * vbytes(g, x) + 2.0 * by;
		if (L->aux != WL_NONE) {
			in[1] = L->aux;
			b = vbytes(g, x) + by + ny * 8.0;
		}
		bwd_simple(g, L, OT_POOL_BWD, in, 3, L->work, b, IP_NO);
		break;
	}
	case GL_LRN: {
		/* cudnnLRNCrossChannelBackward(handle, norm, mode, alpha,
		 * yDesc, y, dyDesc, dy, xDesc, x, beta, dxDesc, dx)
		 * (CuDNNLRNLayer::Backward_gpu, cudnn_lrn_layer.cu) */
		uint32_t in[3] = {dy, vt(g, L->out), vt(g, x)};
		bwd_simple(g, L, OT_ELEMWISE, in, 3,
			   (4.0 * (double)L->kh + 10.0) * ny, 4.0 * by, IP_NO);
		break;
	}
	case GL_AFFINE:
		bwd_affine(g, L, dy);
		break;
	case GL_AVGPOOL: {
		/* PyTorch saves self for avg_pool2d_backward and
		 * _adaptive_avg_pool2d_backward (derivatives.yaml): it is
		 * held to the backward op, which reads only its shape */
		uint32_t in[2] = {dy, vt(g, x)};
		bwd_simple(g, L, OT_POOL_BWD, in,
			   g->fw == WL_FW_PYTORCH ? 2 : 1, L->work,
			   vbytes(g, x) + by, IP_NO);
		break;
	}
	case GL_DROPOUT: {
		uint32_t in[2] = {dy, L->aux};
		bwd_simple(g, L, OT_DROPOUT_BWD, in, 2, 2.0 * ny,
			   2.0 * by + ny, IP_GRAD);
		break;
	}
	case GL_GELU: {
		uint32_t in[2] = {dy, vt(g, x)};
		bwd_simple(g, L, OT_ELEMWISE, in, 2, 12.0 * ny, 3.0 * by,
			   IP_GRAD);
		break;
	}
	case GL_SILU: {
		uint32_t in[2] = {dy, vt(g, x)};
		bwd_simple(g, L, OT_ELEMWISE, in, 2, 10.0 * ny,
			   2.0 * by + vbytes(g, x), IP_GRAD);
		break;
	}
	case GL_CAST: {
		uint32_t in[1] = {dy};
		bwd_simple(g, L, OT_ELEMWISE, in, 1, ny, by + vbytes(g, x),
			   IP_NO);
		break;
	}
	case GL_SDPA:
		bwd_sdpa(g, L, dy);
		break;
	case GL_FUSED_LOSS: {
		/* grad_input * grad_output (1 for the loss itself) */
		uint32_t in[1] = {L->aux};
		bwd_simple(g, L, OT_ELEMWISE, in, 1, velems(g, x),
			   2.0 * vbytes(g, x), IP_NO);
		break;
	}
	case GL_TANH: {
		uint32_t in[2] = {dy, vt(g, L->out)};
		bwd_simple(g, L, OT_ELEMWISE, in, 2, 3.0 * ny, 3.0 * by, IP_GRAD);
		break;
	}
	case GL_SCALE: {
		uint32_t in[1] = {dy};
		bwd_simple(g, L, OT_ELEMWISE, in, 1, ny, 2.0 * by, IP_GRAD);
		break;
	}
	case GL_SOFTMAX: {
		uint32_t in[2] = {dy, vt(g, L->out)};
		bwd_simple(g, L, OT_SOFTMAX_BWD, in, 2, 4.0 * ny, 3.0 * by,
			   IP_NO);
		break;
	}
	case GL_SLICE: {
		uint32_t in[1] = {dy};
		bwd_simple(g, L, OT_ELEMWISE, in, 1, 0.0,
			   by + vbytes(g, x), IP_NO);
		break;
	}
	case GL_EMBEDDING: {
		char b1[NAME_MAX_LEN];
		if (g->params[L->wp].frozen)
			break;
		uint32_t dt = pgrad_tensor(g, L->wp);
		struct op_spec s = {
			.name = fmt_name(g, b1, "%s.bwd_weight", L->name),
			.layer = L->name, .type = OT_EMBEDDING_BWD,
			.phase = WL_BWD, .in = {vt(g, x), dy}, .n_in = 2,
			.out = {dt}, .n_out = 1, .flops = ny};
		s.bytes = (double)g->w->tensors[vt(g, x)].bytes + by +
			  pbytes(g, L->wp);
		if (emit(g, &s) == 0)
			pcontrib(g, L->wp, dt, L->name);
		break;
	}
	case GL_ATTN_SCORES: {
		uint32_t q = lin(g, L, 0), k = lin(g, L, 1);
		double fl = 2.0 * (double)g->batch *
			    (double)(g->vals[q].h * g->vals[k].h) *
			    (double)g->vals[q].c;
		/* dQ = dS K (seq_q x head_dim, over seq_k), dK = dS^T Q
		 * (seq_k x head_dim, over seq_q), per sample and head */
		double bh = (double)g->batch * (double)L->heads,
		       hd = (double)(g->vals[q].c / L->heads);
		double sq = (double)g->vals[q].h, sk = (double)g->vals[k].h;
		bwd_pair(g, L, "bwd_q", "bwd_k", dy, fl,
			 gemm_of(bh, sq, hd, sk), gemm_of(bh, sk, hd, sq));
		break;
	}
	case GL_ATTN_CONTEXT: {
		uint32_t p = lin(g, L, 0), v = lin(g, L, 1);
		double fl = 2.0 * (double)g->batch *
			    (double)(g->vals[p].h * g->vals[p].c) *
			    (double)g->vals[v].c;
		/* dP = dC V^T (seq_q x seq_k, over head_dim), dV = P^T dC
		 * (seq_k x head_dim, over seq_q), per sample and head */
		double bh = (double)g->batch * (double)L->heads,
		       hd = (double)(g->vals[v].c / L->heads);
		double sq = (double)g->vals[p].h, sk = (double)g->vals[p].c;
		bwd_pair(g, L, "bwd_p", "bwd_v", dy, fl,
			 gemm_of(bh, sq, sk, hd), gemm_of(bh, sk, hd, sq));
		break;
	}
	case GL_LOSS: {
		uint32_t in[3] = {L->aux, L->aux2, WL_NONE};
		double nl = velems(g, x);
		double b = 2.0 * vbytes(g, x) +
			   (double)g->w->tensors[L->aux2].bytes;
		if (L->hid[0] != WL_NONE) {
			/* caffe: dlogits over the forward's scratch */
			uint32_t cin[3] = {L->hid[0], L->aux, L->aux2};
			bwd_simple(g, L, OT_LOSS_BWD, cin, 3, 2.0 * nl, b,
				   IP_GRAD);
			break;
		}
		if (L->nll) {
			bwd_nll(g, L);
			break;
		}
		bwd_simple(g, L, OT_LOSS_BWD, in, 2, 2.0 * nl, b, IP_NO);
		break;
	}
	case GL_ADD:
		if (caffe(g)) {
			bwd_copies(g, L, dy);
			break;
		}
		for (uint32_t i = 0; i < L->n_in; i++)
			if (needs(g, lin(g, L, i)))
				contrib(g, lin(g, L, i), dy, L->name);
		break;
	case GL_MASK_ADD:
		if (needs(g, x))
			contrib(g, x, dy, L->name);
		break;
	case GL_FLATTEN:
		if (needs(g, x))
			contrib(g, x, dy, g->cur_layer);
		break;
	case GL_CONCAT:
		if (caffe(g)) {
			bwd_copies(g, L, dy);
			break;
		}
		for (uint32_t i = 0; i < L->n_in; i++)
			if (needs(g, lin(g, L, i)))
				contrib(g, lin(g, L, i), dy, L->name);
		break;
	case GL_TF:
		bwd_tf(g, L, dy);
		break;
	case GL_PARAM:
		break;
	}
}

/* ---- foreach: torch.optim's multi-tensor update ---------------------
 *
 * PyTorch 2.x runs an optimizer's step as foreach kernels by default:
 * torch/optim/optimizer.py, _default_to_fused_or_foreach, returns
 * foreach=True when foreach and fused are left None and every parameter
 * is a CUDA tensor of a floating dtype ("foreach = not fused and all(p
 * is None or (type(p) in _foreach_supported_types and p.device.type in
 * fused_supported_devices ...))"); Adam.step then calls
 * _multi_tensor_adam, SGD.step _multi_tensor_sgd. Each groups the
 * parameters by (device, dtype) (Optimizer._group_tensors_by_device_and_
 * dtype: one group here, every parameter has the context's dtype) and
 * runs a sequence of torch._foreach_* ops over the whole group; each op
 * is launched by ATen's multi_tensor_apply (aten/src/ATen/native/cuda/
 * MultiTensorApply.cuh), which walks the tensors in order, one block per
 * chunk of kChunkSize = 65536 elements, and launches "when EITHER the
 * blocks get filled up OR the tensors get filled up" (tensors_full: the
 * depth's tensor limit reached at a tensor's last chunk; blocks_full:
 * the block limit reached, the tensor's remaining chunks going on in
 * the next launch), and once more for what is left. The limits are
 * DepthToMaxConfig<true>'s, the 32 KB kernel-argument build taken when
 * CUDART >= 12.1, the driver >= 12.1 and sm >= 70
 * (supports_large_kernel_arg): depth_to_max_tensors {770, 448, 336,
 * 252, 210}, depth_to_max_tensors_scalarlist {672, 448, 336, 252, 210}
 * for ops with a per-tensor scalar list, depth_to_max_blocks 2240 at
 * every depth. The committed H100 measurements ran torch 2.11+cu130
 * (results/validation/H100-80GB-HBM3/log.txt), so the large build; the
 * 4 KB build's {110, 64, 48, 36, 30} and 320 blocks are older CUDA's.
 * The depth is the number of tensor lists the kernel walks: an in-place
 * op over one list is 1, an out-of-place one writes a second list.
 *
 * The sequences (torch/optim/adam.py _multi_tensor_adam and sgd.py
 * _multi_tensor_sgd, capturable=False, maximize=False, the defaults;
 * Adam's weight_decay 0 and SGD's dampening 0, nesterov False):
 *   adam   _foreach_lerp_(exp_avgs, grads, 1 - beta1)           depth 2
 *          _foreach_mul_(exp_avg_sqs, beta2)                    depth 1
 *          _foreach_addcmul_(exp_avg_sqs, grads, grads, 1-b2)   depth 3
 *          exp_avg_sq_sqrt = _foreach_sqrt(exp_avg_sqs)         depth 2
 *          _foreach_div_(exp_avg_sq_sqrt, bias_correction2_sqrt)
 *                                                depth 1, scalar list
 *          _foreach_add_(exp_avg_sq_sqrt, eps)                  depth 1
 *          _foreach_addcdiv_(params, exp_avgs, exp_avg_sq_sqrt,
 *                            step_size)          depth 3, scalar list
 *   adamw  the same after _foreach_mul_(params, 1 - lr *
 *          weight_decay) (depth 1; adamw.py _multi_tensor_adamw, decoupled
 *          decay, weight_decay 1e-2 by default)
 *   momentum  _foreach_mul_(bufs, momentum)                     depth 1
 *          _foreach_add_(bufs, grads, alpha=1 - dampening)      depth 2
 *          _foreach_add_(params, bufs, alpha=-lr)               depth 2
 *   sgd    _foreach_add_(params, grads, alpha=-lr)              depth 2
 * The step counters (torch._foreach_add_(device_state_steps, ...)) are
 * CPU tensors unless capturable or fused ("if device_state_steps[0].
 * is_cpu"), so no kernel. One OT_UPDATE op per launch, named
 * optimizer.K_OP.L (K the op's place in the sequence, L the launch), in
 * layer "optimizer"; it reads and writes the launch's tensors of the
 * lists the op touches, its FLOPs and DRAM bytes those of the elements
 * its blocks cover (each list element read or written once). So each
 * foreach op's totals are its own, not a fused kernel's: Adam moves 18
 * elements a parameter (fp32: 72 bytes) where one fused kernel would
 * move 7; the FLOPs (13 a parameter, 14 AdamW, 2 SGD, 5 momentum) are
 * the ops' arithmetic as before.
 *
 * The temporary list exp_avg_sq_sqrt (one tensor per parameter, its
 * size, the states' dtype) is allocated by _foreach_sqrt before its
 * first launch and freed when _multi_tensor_adam returns; torch's own
 * docs count it: "the foreach implementation uses ~ sizeof(params) more
 * peak memory than the for-loop version due to the intermediates being a
 * tensorlist vs just one tensor" (torch/optim/optimizer.py,
 * _foreach_doc). Here one tensor a parameter, NAME.exp_avg_sq_sqrt
 * (WL_WORKSPACE), written by the sqrt launch that holds the parameter's
 * first chunk (a later launch holding its other chunks reads and
 * writes it), read by the div_, add_ and addcdiv_ launches holding its
 * chunks, and held to the step's last op. adam8bit keeps one op per parameter: bitsandbytes'
 * Optimizer8bit.step loops over the parameters and runs update_step, one
 * kernel, for each (bitsandbytes/optim/optimizer.py). */

enum { FE_P = 1, FE_G = 2, FE_M = 4, FE_V = 8, FE_T = 16 };

struct fe_op {
	const char *name; /* torch._foreach_ op */
	uint8_t depth;	  /* tensor lists multi_tensor_apply walks */
	bool slist;	  /* a per-tensor scalar list (its own limits) */
	uint8_t rd, wr;	  /* lists read and written (FE_*) */
	double flops;	  /* per element */
};

static const struct fe_op fe_adam[] = {
	{"lerp_", 2, false, FE_M | FE_G, FE_M, 3},
	{"mul_", 1, false, FE_V, FE_V, 1},
	{"addcmul_", 3, false, FE_V | FE_G, FE_V, 3},
	{"sqrt", 2, false, FE_V, FE_T, 1},
	{"div_", 1, true, FE_T, FE_T, 1},
	{"add_", 1, false, FE_T, FE_T, 1},
	{"addcdiv_", 3, true, FE_P | FE_M | FE_T, FE_P, 3},
};
static const struct fe_op fe_decay = {"mul_", 1, false, FE_P, FE_P, 1};
static const struct fe_op fe_momentum[] = {
	{"mul_", 1, false, FE_M, FE_M, 1},
	{"add_", 2, false, FE_M | FE_G, FE_M, 2},
	{"add_", 2, false, FE_P | FE_M, FE_P, 2},
};
static const struct fe_op fe_sgd[] = {{"add_", 2, false, FE_P | FE_G, FE_P, 2}};

/* MultiTensorApply.cuh: kChunkSize, DepthToMaxConfig<true> (above) */
#define FE_CHUNK 65536
static const uint32_t fe_max_tensors[5] = {770, 448, 336, 252, 210};
static const uint32_t fe_max_tensors_slist[5] = {672, 448, 336, 252, 210};
#define FE_MAX_BLOCKS 2240

uint32_t gen_foreach_launches(const uint64_t *numel, uint32_t n,
			      uint64_t chunk, uint32_t max_tensors,
			      uint32_t max_blocks, struct gen_launch *out,
			      uint32_t cap)
{
	uint32_t nl = 0, blocks = 0, tensors = 0, start = 0, last = 0;
	uint64_t elems = 0;
	if (!numel || chunk == 0 || max_tensors == 0 || max_blocks == 0)
		return 0;
	for (uint32_t t = 0; t < n; t++) {
		if (numel[t] == 0) /* "short-circuit ... empty tensors" */
			continue;
		if (tensors++ == 0)
			start = t;
		last = t;
		/* whole runs of chunks at a time, up to the next full block
		 * list (linear in tensors and launches, not chunks) */
		uint64_t chunks = (numel[t] + chunk - 1) / chunk, c = 0;
		while (c < chunks) {
			uint64_t take = max_blocks - blocks;
			if (take > chunks - c)
				take = chunks - c;
			blocks += (uint32_t)take;
			c += take;
			elems += c == chunks ? numel[t] - (c - take) * chunk
					     : take * chunk;
			bool tfull = tensors == max_tensors && c == chunks;
			if (!tfull && blocks != max_blocks)
				continue;
			if (out && nl < cap)
				out[nl] = (struct gen_launch){start, t, elems};
			nl++;
			blocks = 0;
			elems = 0;
			/* the tensor's remaining chunks open the next */
			tensors = c == chunks ? 0 : 1;
			start = t;
		}
	}
	if (blocks) {
		if (out && nl < cap)
			out[nl] = (struct gen_launch){start, last, elems};
		nl++;
	}
	return nl;
}

/* The tensor of list bit b of parameter P (FE_T: tmp, its temporary). */
static uint32_t fe_tensor(const struct gen_param *P, unsigned b,
			  uint32_t tmp)
{
	switch (b) {
	case FE_P: return P->tensor;
	case FE_G: return P->grad;
	case FE_M: return P->state[0];
	case FE_V: return P->state[1];
	default: return tmp;
	}
}

/* One foreach op k over the parameters ps[0..n) (numel[]), one
 * OT_UPDATE op per launch; tmp[i] is parameter i's temporary, made[i]
 * whether a launch wrote it already. */
static void fe_emit(struct gen *g, const struct fe_op *f, unsigned k,
		    const uint32_t *ps, const uint64_t *numel, uint32_t n,
		    uint32_t *in, uint32_t *out, const uint32_t *tmp,
		    bool *made, struct gen_launch *ls, uint32_t cap)
{
	char b1[NAME_MAX_LEN];
	uint32_t mt = f->slist ? fe_max_tensors_slist[f->depth - 1]
			       : fe_max_tensors[f->depth - 1];
	uint32_t nl = gen_foreach_launches(numel, n, FE_CHUNK, mt,
					   FE_MAX_BLOCKS, ls, cap);
	unsigned lists = f->rd | f->wr;
	/* bytes an element: each list read, each written, all in the
	 * parameters' dtype (adam8bit's states are not foreach) */
	double per = 0;
	for (unsigned b = 0; b < 5; b++)
		per += (double)g->pesz *
		       (((f->rd >> b) & 1) + ((f->wr >> b) & 1));
	for (uint32_t l = 0; l < nl && l < cap && gen_ok(g); l++) {
		uint32_t n_in = 0, n_out = 0;
		for (uint32_t i = ls[l].t0; i <= ls[l].t1; i++)
			for (unsigned b = FE_P; b <= FE_T; b <<= 1) {
				if (!(lists & b))
					continue;
				uint32_t t = fe_tensor(&g->params[ps[i]], b,
						       tmp ? tmp[i] : WL_NONE);
				if (b == FE_T && !made[i]) {
					made[i] = true;
					out[n_out++] = t;
				} else {
					in[n_in++] = t;
				}
			}
		double e = (double)ls[l].elems;
		struct wl_op_desc d = {
			.name = fmt_name(g, b1, "optimizer.%u_%s.%u", k,
					 f->name, (unsigned)l),
			.type = OT_UPDATE, .phase = WL_UPD,
			.layer = "optimizer", .in = in, .n_in = n_in,
			.out = out, .n_out = n_out,
			.flops = f->flops * e, .bytes = per * e};
		gms_err err;
		if (!d.name)
			return;
		if (wl_add_op(g->w, &d, &err) == WL_NONE)
			gen_fail(g, "%s", err.msg);
	}
}

/* Does the personality run the optimizer as foreach kernels? */
static bool foreach_step(const struct gen *g)
{
	return g->fw == WL_FW_PYTORCH && g->optim != WL_OPTIM_NONE &&
	       g->optim != WL_OPTIM_ADAM8BIT;
}

static void foreach_updates(struct gen *g)
{
	uint32_t n = 0;
	for (uint32_t p = 0; p < g->n_params; p++)
		n += g->params[p].grad != WL_NONE;
	if (n == 0)
		return;
	/* launches: at most one per tensor (tensors_full) plus one per
	 * max_blocks chunks, plus the last */
	uint64_t chunks = 0;
	for (uint32_t p = 0; p < g->n_params; p++)
		if (g->params[p].grad != WL_NONE)
			chunks += (g->params[p].numel + FE_CHUNK - 1) /
				  FE_CHUNK;
	uint64_t cap64 = (uint64_t)n + chunks / FE_MAX_BLOCKS + 1;
	uint32_t cap = cap64 > UINT32_MAX ? UINT32_MAX : (uint32_t)cap64;
	uint32_t *ps = malloc((size_t)n * sizeof *ps);
	uint64_t *numel = malloc((size_t)n * sizeof *numel);
	/* a launch's inputs and outputs: its tensors of <= 3 lists */
	uint32_t *in = malloc((size_t)n * 3 * sizeof *in);
	uint32_t *out = malloc((size_t)n * sizeof *out);
	uint32_t *tmp = malloc((size_t)n * sizeof *tmp);
	bool *made = calloc(n, sizeof *made);
	struct gen_launch *ls = malloc((size_t)cap * sizeof *ls);
	if (!ps || !numel || !in || !out || !tmp || !made || !ls) {
		gen_fail(g, "%s: out of memory", g->w->name);
		goto out;
	}
	n = 0;
	for (uint32_t p = 0; p < g->n_params; p++)
		if (g->params[p].grad != WL_NONE) {
			numel[n] = g->params[p].numel;
			ps[n++] = p;
		}
	const struct fe_op *seq = fe_sgd;
	size_t len = 1;
	unsigned k = 0;
	bool adam = g->optim == WL_OPTIM_ADAM || g->optim == WL_OPTIM_ADAMW;
	if (g->optim == WL_OPTIM_ADAMW)
		fe_emit(g, &fe_decay, k++, ps, numel, n, in, out, NULL, made,
			ls, cap);
	if (adam)
		seq = fe_adam, len = sizeof fe_adam / sizeof *fe_adam;
	else if (g->optim == WL_OPTIM_MOMENTUM)
		seq = fe_momentum,
		len = sizeof fe_momentum / sizeof *fe_momentum;
	for (uint32_t i = 0; i < n && adam; i++) {
		char b1[NAME_MAX_LEN];
		const struct gen_param *P = &g->params[ps[i]];
		tmp[i] = add_tensor(g, fmt_name(g, b1, "%s.exp_avg_sq_sqrt",
						tname(g, P->tensor)),
				    numel[i] * (uint64_t)g->pesz, WL_WORKSPACE,
				    g->pesz);
	}
	for (size_t i = 0; i < len && gen_ok(g); i++)
		fe_emit(g, &seq[i], k++, ps, numel, n, in, out,
			adam ? tmp : NULL, made, ls, cap);
	/* freed when _multi_tensor_adam returns: after the step's last op */
	for (uint32_t i = 0; i < n && adam && gen_ok(g); i++) {
		gms_err e;
		if (wl_set_release_after(g->w, tmp[i], g->w->n_ops - 1, &e) < 0)
			gen_fail(g, "%s", e.msg);
	}
out:
	free(ps);
	free(numel);
	free(in);
	free(out);
	free(tmp);
	free(made);
	free(ls);
}

/* One OT_UPDATE per parameter with a gradient, in creation order, where
 * the framework runs one update kernel per parameter: TensorFlow's
 * apply_gradients adds one apply op per variable (tensorflow/python/
 * training/optimizer.py, Optimizer.apply_gradients: "for grad, var,
 * processor in converted_grads_and_vars: ... update_ops.append(
 * processor.update_op(self, grad))", each a ResourceApplyAdam /
 * ApplyMomentum kernel), Caffe's SGDSolver::ApplyUpdate loops "for (int
 * param_id = 0; param_id < this->net_->learnable_params().size();
 * ++param_id)" (src/caffe/solvers/sgd_solver.cpp), and bitsandbytes'
 * 8-bit step (above); pytorch's torch.optim step is foreach (above). */
static void updates(struct gen *g)
{
	char b1[NAME_MAX_LEN];
	if (g->optim == WL_OPTIM_NONE)
		return;
	if (foreach_step(g)) {
		foreach_updates(g);
		return;
	}
	for (uint32_t p = 0; p < g->n_params && gen_ok(g); p++) {
		const struct gen_param *P = &g->params[p];
		if (P->grad == WL_NONE)
			continue;
		double n = (double)P->numel;
		struct op_spec s = {
			.name = fmt_name(g, b1, "%s.update",
					 tname(g, P->tensor)),
			.layer = g->tape[P->layer].name, .type = OT_UPDATE,
			.phase = WL_UPD, .in = {P->tensor, P->grad}, .n_in = 2};
		for (int k = 0; k < 2; k++)
			if (P->state[k] != WL_NONE)
				s.in[s.n_in++] = P->state[k];
		/* p and g read, p written (the parameter's dtype); each
		 * state read and written (state_bytes) */
		double pb = 3.0 * n * (double)g->pesz;
		double sb = 2.0 * (double)g->w->tensors[P->state[0] != WL_NONE
							 ? P->state[0]
							 : P->tensor].bytes;
		switch (g->optim) {
		case WL_OPTIM_ADAM:
		case WL_OPTIM_ADAM8BIT:
			s.flops = 13.0 * n;
			s.bytes = pb + 2.0 * sb;
			break;
		case WL_OPTIM_ADAMW:
			/* torch.optim.AdamW: param.mul_(1 - lr * wd)
			 * first, 2 more */
			s.flops = 15.0 * n;
			s.bytes = pb + 2.0 * sb;
			break;
		case WL_OPTIM_MOMENTUM:
			s.flops = 4.0 * n;
			s.bytes = pb + sb;
			break;
		default: /* sgd: p -= lr*g reads p and g, writes p */
			s.flops = 2.0 * n;
			s.bytes = pb;
			break;
		}
		emit(g, &s);
	}
}

/* Which of a forward layer's tensors the TF 1.x eager tape keeps for its
 * gradient: bit 1 its inputs, bit 2 its outputs (backprop.py's pruning
 * lists: Conv2D, MatMul, BatchMatMul, BiasAdd, AvgPool, Add, Mul need no
 * outputs; Relu, Tanh, Softmax need no inputs; FusedBatchNorm, MaxPool,
 * ConcatV2, GatherV2 and SoftmaxCrossEntropyWithLogits are in neither
 * list and keep both). A TensorFlow op (GL_TF) keeps what tf_defs says
 * (Add, Sub, Mul, RealDiv, SquaredDifference, Cast: inputs only; Erf,
 * Rsqrt, Floor, Mean, Transpose, OneHot, Fill, RandomUniform: both);
 * none when no input has a gradient: the tape records an op only when
 * one of its inputs is watched (record_operation's ShouldRecord), and a
 * parameter or a value with a gradient is. */
static unsigned tape_keeps(const struct gen *g, const struct gen_layer *L)
{
	if (L->kind == GL_TF) {
		bool rec = false;
		for (uint32_t i = 0; i < L->n_in; i++)
			rec = rec || needs(g, lin(g, L, i));
		return rec ? tf_defs[L->tf].tape : 0;
	}
	switch (L->kind) {
	case GL_CONV: case GL_LINEAR: case GL_ATTN_SCORES:
	case GL_ATTN_CONTEXT: case GL_AVGPOOL: case GL_ADD: case GL_SCALE:
	case GL_MASK_ADD: case GL_DROPOUT: case GL_SLICE:
		return 1;
	case GL_RELU: case GL_TANH: case GL_SOFTMAX:
		return 2;
	default: /* BN, layernorm, max pool, concat, embedding, GELU, loss */
		return 3;
	}
}

/* Hold tensor t at least until op `until` (its release point), never
 * before its last use (last[t]). */
static void hold_until(struct gen *g, const uint32_t *last, uint32_t t,
		       uint32_t until)
{
	gms_err e;
	uint32_t r = last[t] != WL_NONE && last[t] > until ? last[t] : until;
	if (wl_set_release_after(g->w, t, r, &e) < 0)
		gen_fail(g, "%s", e.msg);
}

/* The framework's lifetimes, once every op is emitted:
 *   tf-eager  the tape records each executed op with its input and
 *             output tensors (tape.record_operation in
 *             tensorflow/python/eager/backprop.py, _record_gradient) and
 *             keeps them until tape.gradient has run that op's gradient
 *             function -- except the inputs of ops listed in
 *             _ops_which_dont_need_inputs and the outputs of those in
 *             _ops_which_dont_need_outputs (the same file, TF 1.5 on;
 *             Capuchin ran TF 1.11): tape_keeps() below. A kept tensor
 *             is held until its layer's last backward op (to the end of
 *             backward when the layer has none). Gradients come back
 *             from tape.gradient as one list and live until
 *             apply_gradients has used them: the end of the iteration.
 *   pytorch   a parameter's .grad lives from backward to the next
 *             zero_grad(set_to_none=True), i.e. through optimizer.step():
 *             held to the end of the iteration. A forward tensor that
 *             a layer's backward reads is one of its autograd node's
 *             saved variables, released only when the whole node has
 *             run (Engine::evaluate_function, torch/csrc/autograd/
 *             engine.cpp: call_function, then "if
 *             (!graph_task->keep_graph_) { fn.release_variables(); }"):
 *             held to the layer's last backward op, not freed after
 *             the first of its ops that reads it last (a mul's y after
 *             bwd_x while bwd_y runs; seen in the recorded Llama,
 *             tests/test_gen_llm.c).
 *   caffe     every blob's data and diff is allocated when first touched
 *             (SyncedMemory::to_gpu, src/caffe/syncedmem.cpp) and kept
 *             while the Net lives: activations, their gradients, the
 *             input blobs and parameter diffs are held for the run.
 *   tf-graph  the executor frees a tensor when its last consumer has run
 *             (the default: no release point). */
static void fw_lifetimes(struct gen *g)
{
	struct wl_workload *w = g->w;
	wl_set_framework(w, wl_framework_names[g->fw]);
	if (g->fw == WL_FW_TF_GRAPH || !gen_ok(g) || w->n_ops == 0)
		return;
	uint32_t *last = malloc(((size_t)w->n_tensors + 1) * sizeof *last);
	uint32_t *first = malloc(((size_t)w->n_tensors + 1) * sizeof *first);
	uint32_t *lbwd = malloc(((size_t)w->n_layers + 1) * sizeof *lbwd);
	if (!last || !first || !lbwd) {
		gen_fail(g, "%s: out of memory", w->name);
		goto out;
	}
	uint32_t end_bwd = WL_NONE;
	for (uint32_t t = 0; t < w->n_tensors; t++)
		last[t] = first[t] = WL_NONE;
	for (uint32_t l = 0; l < w->n_layers; l++)
		lbwd[l] = WL_NONE;
	for (uint32_t o = 0; o < w->n_ops; o++) {
		const struct wl_op *op = &w->ops[o];
		for (uint32_t i = 0; i < op->n_in; i++) {
			last[op->in[i]] = o;
			if (first[op->in[i]] == WL_NONE)
				first[op->in[i]] = o;
		}
		for (uint32_t i = 0; i < op->n_out; i++)
			last[op->out[i]] = first[op->out[i]] = o;
		if (op->phase == WL_BWD)
			lbwd[op->layer] = end_bwd = o;
	}
	const uint32_t end = w->n_ops - 1;
	for (uint32_t t = 0; t < w->n_tensors && gen_ok(g); t++) {
		const struct wl_tensor *x = &w->tensors[t];
		if (x->kind == WL_PARAM || x->kind == WL_OPT_STATE)
			continue;
		if (g->fw == WL_FW_CAFFE) {
			gms_err e;
			if (wl_set_held(w, t, &e) < 0)
				gen_fail(g, "%s", e.msg);
			continue;
		}
		if (x->kind == WL_PARAM_GRAD)
			hold_until(g, last, t, end);
	}
	if (g->fw == WL_FW_PYTORCH && end_bwd != WL_NONE) {
		/* saved variables: a forward tensor (first[]: its writer, a
		 * forward op) that a backward op reads is held to that
		 * op's layer's last backward op; last[] reused as the
		 * hold point */
		for (uint32_t o = 0; o < w->n_ops; o++) {
			const struct wl_op *op = &w->ops[o];
			if (op->phase != WL_BWD)
				continue;
			for (uint32_t i = 0; i < op->n_in; i++) {
				uint32_t t = op->in[i], f = first[t];
				if (f == WL_NONE || w->ops[f].phase != WL_FWD ||
				    w->tensors[t].kind == WL_PARAM ||
				    w->tensors[t].kind == WL_OPT_STATE)
					continue;
				if (lbwd[op->layer] > last[t])
					last[t] = lbwd[op->layer];
			}
		}
		for (uint32_t t = 0; t < w->n_tensors && gen_ok(g); t++) {
			uint32_t f = first[t];
			if (f != WL_NONE && w->ops[f].phase == WL_FWD &&
			    last[t] != WL_NONE &&
			    w->ops[last[t]].phase == WL_BWD &&
			    w->tensors[t].kind != WL_PARAM &&
			    w->tensors[t].kind != WL_OPT_STATE)
				hold_until(g, last, t, last[t]);
		}
		goto out;
	}
	if (g->fw != WL_FW_TF_EAGER || end_bwd == WL_NONE)
		goto out;
	/* a TensorFlow op whose gradient is dy itself (Add) has no
	 * backward op: its tape entry is used up once dy is complete, i.e.
	 * when the op writing dy's final sum has run (first[] is each
	 * tensor's writer here) */
	for (uint32_t i = 0; i < g->n_tape; i++) {
		const struct gen_layer *L = &g->tape[i];
		if (L->kind != GL_TF || L->fwd_op == WL_NONE)
			continue;
		uint32_t ly = w->ops[L->fwd_op].layer;
		uint32_t dy = g->vals[L->out].grad;
		if (lbwd[ly] == WL_NONE && dy != WL_NONE)
			lbwd[ly] = first[dy];
	}
	/* the tape: hold[t] = the latest backward op a keeping layer waits
	 * for (WL_NONE: not kept) */
	for (uint32_t t = 0; t < w->n_tensors; t++)
		first[t] = WL_NONE; /* reused as hold[] */
	for (uint32_t i = 0; i < g->n_tape; i++) {
		const struct gen_layer *L = &g->tape[i];
		if (L->fwd_op == WL_NONE)
			continue;
		const struct wl_op *op = &w->ops[L->fwd_op];
		uint32_t b = lbwd[op->layer] != WL_NONE ? lbwd[op->layer]
							: end_bwd;
		unsigned keep = tape_keeps(g, L);
		for (int side = 0; side < 2; side++) {
			if (!(keep & (1u << side)))
				continue;
			const uint32_t *ts = side ? op->out : op->in;
			uint32_t n = side ? op->n_out : op->n_in;
			for (uint32_t j = 0; j < n; j++) {
				uint32_t t = ts[j];
				enum wl_kind k = w->tensors[t].kind;
				if (k == WL_PARAM || k == WL_OPT_STATE)
					continue;
				if (first[t] == WL_NONE || first[t] < b)
					first[t] = b;
			}
		}
	}
	for (uint32_t t = 0; t < w->n_tensors && gen_ok(g); t++)
		if (first[t] != WL_NONE)
			hold_until(g, last, t, first[t]);
out:
	free(last);
	free(first);
	free(lbwd);
}

struct wl_workload *gen_finish(struct gen *g, struct gen_tensor logits,
			       gms_err *err)
{
	if (!g) {
		gms_errf(err, "gen_finish: no generator context");
		return NULL;
	}
	if (gen_ok(g) && logits.v != GEN_NONE)
		gen_loss(g, "loss", logits);
	if (gen_ok(g)) {
		bool any = false;
		for (uint32_t i = 0; i < g->n_tape; i++)
			any = any || g->tape[i].kind == GL_LOSS ||
			      g->tape[i].kind == GL_FUSED_LOSS;
		if (!any)
			gen_fail(g, "%s: no loss (gen_finish without logits "
				    "and no gen_loss)", g->w->name);
	}
	g->backward = true;
	for (uint32_t i = g->n_tape; i-- > 0 && gen_ok(g);)
		bwd_layer(g, &g->tape[i]);
	if (g->w)
		wl_set_block(g->w, WL_NONE, WL_REGION_NONE);
	if (gen_ok(g))
		updates(g);
	fw_lifetimes(g);
	struct wl_workload *w = NULL;
	if (gen_ok(g)) {
		gms_err e;
		if (wl_finalize(g->w, &e) < 0)
			gen_fail(g, "%s", e.msg);
		else
			w = g->w, g->w = NULL;
	}
	if (!w)
		gms_errf(err, "%s", g->err.msg);
	gen_free(g);
	return w;
}
