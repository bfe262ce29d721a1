/*
 * gen_bert_tf1.c - BERT as TensorFlow 1.x runs it: the graph that
 * google-research/bert's modeling.py (the first release, fe35475,
 * 2018-10-31, the TF 1.11 era of Capuchin's runs) builds, one TF op a
 * gen layer (gen_tf_op), fine-tuned with run_classifier.py's head. The
 * parameters are the fused model's (gen_bert.c); the activations are
 * what TF's kernels and gradient functions really create and keep.
 * bert_base and bert_large dispatch here for the tf-graph and tf-eager
 * frameworks; pytorch and caffe keep the fused model. size = sequence
 * length. README.md ("BERT in TensorFlow 1") lists every saved tensor.
 *
 * R = batch * seq rows; H hidden; I intermediate; N heads; S seq.
 * Names are TF's scopes and default op names ("bert/encoder/layer_3/
 * attention/self/MatMul"). What each op's gradient reads is gen.c's
 * tf_defs table (math_grad.py / array_grad.py); in brief:
 *
 * GELU (modeling.py, fe35475):
 *	cdf = 0.5 * (1.0 + tf.erf(input_tensor / tf.sqrt(2.0)))
 *	return input_tensor * cdf
 *   The erf form: bee6030 (2019-02-07, "Adding TF Hub support") replaced
 *   it with the tanh approximation, so an Oct 2018 / TF 1.11 run used
 *   erf. Ops truediv, Erf, add, mul (0.5 *), mul_1 (x * cdf), each
 *   [R, I]. Kept for backward: x (mul_1's grad, _MulGrad reads both
 *   inputs), truediv's output (_ErfGrad reads x), cdf (mul_1's grad).
 *   Erf's output, add's and mul's are not (the constant-operand Add and
 *   Mul gradients read only dy), so in tf-graph they reuse each other's
 *   buffer (cwise forwarding).
 *
 * dropout (tf.nn.dropout, TF 1.x nn_ops.py; modeling.py calls
 * tf.nn.dropout(input_tensor, 1.0 - dropout_prob)):
 *	random_tensor = keep_prob
 *	random_tensor += random_ops.random_uniform(noise_shape, ...)
 *	binary_tensor = math_ops.floor(random_tensor)
 *	ret = math_ops.div(x, keep_prob) * binary_tensor
 *   and random_uniform is RandomUniform, then `rnd * (maxval - minval)`
 *   and `+ minval` (random_ops.py). Every one float32 of x's full shape.
 *   Kept: binary_tensor (Floor's output, read by mul's gradient for x:
 *   _MulGrad's grad * y), 4 bytes an element where torch keeps a 1-byte
 *   mask. x / keep_prob is read only by the gradient for binary_tensor,
 *   which nothing needs (a Floor of a random draw), so TF's graph
 *   pruning drops it: not kept.
 *
 * layer norm (tf.contrib.layers.layer_norm, begin_norm_axis=-1:
 * nn.moments(inputs, norm_axes, keep_dims=True), variance_epsilon 1e-12,
 * nn.batch_normalization(inputs, mean, variance, offset=beta,
 * scale=gamma); moments: mean = reduce_mean(y), variance =
 * reduce_mean(squared_difference(y, stop_gradient(mean)));
 * batch_normalization: inv = rsqrt(variance + eps); inv *= scale;
 * return x * inv + (offset - mean * inv)):
 *   moments/mean [R,1], moments/SquaredDifference [R,H], moments/variance
 *   [R,1], batchnorm/add [R,1], batchnorm/Rsqrt [R,1], batchnorm/mul
 *   (inv * gamma: [R,H]), mul_1 (x * inv) [R,H], mul_2 (mean * inv)
 *   [R,H], sub (beta - mul_2) [R,H], add_1 [R,H].
 *   Kept: x (SquaredDifference's and mul_1's gradients), mean
 *   (SquaredDifference's, mul_2's), Rsqrt's output (its own gradient and
 *   mul's), inv [R,H] (mul_1's and mul_2's). The fused kernel keeps x
 *   and 2 floats a row.
 *
 * attention (attention_layer): query/key/value tf.layers.dense on
 * [R,H] (MatMul + BiasAdd; BiasAdd's gradient reads nothing and its
 * kernel takes MatMul's buffer, so one gen_linear each); reshape (free)
 * and tf.transpose(.., [0,2,1,3]) (a copy: transpose, transpose_1);
 * MatMul (BatchMatMul, transpose_b) [B,N,S,S]; Mul by 1/sqrt(d); the
 * mask: adder = (1.0 - tf.cast(attention_mask, tf.float32)) * -10000.0
 * built in every layer's attention_layer call ([B,1,S,S]: sub, mul_1;
 * the cast of a float32 mask is no op); add (broadcast over heads);
 * Softmax; dropout; transpose_2 of value; MatMul_1 (probs x value);
 * transpose_3 back; then dense, dropout, residual add, layer norm; FFN:
 * dense to I with the GELU, dense to H, dropout, add, layer norm.
 *   Kept: the transposed Q and K (MatMul's gradient reads both inputs),
 *   the Softmax output (_SoftmaxGrad reads y), dropout's binary tensor,
 *   the dropped-out probabilities and transposed V (MatMul_1's
 *   gradient), and each dense's input.
 * The attention mask (create_attention_mask_from_input_mask, once):
 * to_mask = cast(reshape(input_mask, [B,1,S]), float32); broadcast_ones =
 * tf.ones([B,S,1]); mask = broadcast_ones * to_mask, [B,S,S].
 *
 * embeddings (embedding_lookup, embedding_postprocessor; defaults
 * use_one_hot_embeddings=False): word embeddings tf.gather (GatherV2:
 * its gradient reads the indices; the IndexedSlices become a dense
 * table gradient in the optimizer's arithmetic, as gen_embedding
 * writes it); token types one_hot(ids, 2) [R,2] times the table (MatMul:
 * its weight gradient reads the one-hot); add; position embeddings
 * tf.slice of the [512,H] table (the [S,H] slice copy is not modelled),
 * added with broadcast over the batch (its gradient a reduction over the
 * batch into the table's gradient); layer norm; dropout.
 * pooler: the first token (a view here; TF's strided slice copies
 * [B,H]), dense, tanh. Head as gen_bert.c (run_classifier.py's
 * create_model: dropout 0.1, a 2-way output layer, softmax cross-entropy).
 *
 * Not modelled: Grappler's rewrites (an arithmetic optimizer may merge
 * the per-layer mask chains and fold constants), TF's int32 ids (int64
 * here, as the fused model), the scalar constants (4 bytes each), and
 * the optimizer's temporaries. BinaryOpState's forwarding of input 0 or
 * 1 (cwise_ops_common.cc) is in the stored TF 1.x version (id 60158809)
 * but not in older ones: assumed in 1.11.
 */
#include "gen_dense_bert.h"

#include "gen.h"

#include <stdio.h>

#define NM_LEN 160 /* longest name built here */

/* A name "prefix/suffix" in buf; NULL when it does not fit (the layer
 * call then records "a layer has no name"). */
static const char *nm(char *buf, const char *prefix, const char *suffix)
{
	if (!prefix)
		return NULL;
	int n = gen_fmt(buf, NM_LEN, "%s/%s", prefix, suffix);
	return n >= 0 && n < NM_LEN ? buf : NULL;
}

/* A same-shape TF op on x with a constant operand, named p/sfx. */
static struct gen_tensor op1(struct gen *g, const char *p, const char *sfx,
			     enum gen_tf_op op, struct gen_tensor x)
{
	char b[NM_LEN];
	return gen_tf(g, nm(b, p, sfx), op, x, gen_none());
}

/* A two-input TF op named p/sfx. */
static struct gen_tensor op2(struct gen *g, const char *p, const char *sfx,
			     enum gen_tf_op op, struct gen_tensor x,
			     struct gen_tensor y)
{
	char b[NM_LEN];
	return gen_tf(g, nm(b, p, sfx), op, x, y);
}

/* tf.nn.dropout(x, keep_prob) as TF 1.x builds it, scope p. */
static struct gen_tensor tf1_dropout(struct gen *g, const char *p,
				     struct gen_tensor x)
{
	char b[NM_LEN];
	struct gen_tensor r = gen_tf_op(g, nm(b, p, "random_uniform/RandomUniform"),
					GEN_TF_RANDOM_UNIFORM, gen_none(),
					gen_none(), x.c, x.h, x.w);
	r = op1(g, p, "random_uniform/mul", GEN_TF_MULC, r);
	r = op1(g, p, "random_uniform", GEN_TF_ADDC, r);
	r = op1(g, p, "add", GEN_TF_ADDC, r);	      /* keep_prob + */
	struct gen_tensor bin = op1(g, p, "Floor", GEN_TF_FLOOR, r);
	struct gen_tensor s = op1(g, p, "div", GEN_TF_DIVC, x);
	return op2(g, p, "mul", GEN_TF_MUL, s, bin);
}

/* tf.contrib.layers.layer_norm over the feature axis, scope p. */
static struct gen_tensor tf1_layer_norm(struct gen *g, const char *p,
					struct gen_tensor x)
{
	char b[NM_LEN];
	struct gen_tensor beta = gen_param_value(g, nm(b, p, "beta"), x.c, 1,
						 1, x.c);
	struct gen_tensor gamma = gen_param_value(g, nm(b, p, "gamma"), x.c,
						  1, 1, x.c);
	struct gen_tensor mean = op1(g, p, "moments/mean", GEN_TF_MEAN, x);
	struct gen_tensor sq = op2(g, p, "moments/SquaredDifference",
				   GEN_TF_SQDIFF, x,
				   gen_stop_gradient(g, mean));
	struct gen_tensor var = op1(g, p, "moments/variance", GEN_TF_MEAN, sq);
	var = op1(g, p, "batchnorm/add", GEN_TF_ADDC, var); /* + eps */
	struct gen_tensor inv = op1(g, p, "batchnorm/Rsqrt", GEN_TF_RSQRT, var);
	inv = op2(g, p, "batchnorm/mul", GEN_TF_MUL, inv, gamma);
	struct gen_tensor xi = op2(g, p, "batchnorm/mul_1", GEN_TF_MUL, x, inv);
	struct gen_tensor mi = op2(g, p, "batchnorm/mul_2", GEN_TF_MUL, mean,
				   inv);
	struct gen_tensor sh = op2(g, p, "batchnorm/sub", GEN_TF_SUB, beta, mi);
	return op2(g, p, "batchnorm/add_1", GEN_TF_ADD, xi, sh);
}

/* modeling.py's gelu (the erf form of the first release), scope p. */
static struct gen_tensor tf1_gelu(struct gen *g, const char *p,
				  struct gen_tensor x)
{
	struct gen_tensor t = op1(g, p, "truediv", GEN_TF_DIVC, x);
	t = op1(g, p, "Erf", GEN_TF_ERF, t);
	t = op1(g, p, "add", GEN_TF_ADDC, t);	/* 1.0 + */
	t = op1(g, p, "mul", GEN_TF_MULC, t);	/* 0.5 * */
	return op2(g, p, "mul_1", GEN_TF_MUL, x, t);
}

/* One transformer layer (transformer_model's loop body), scope p. */
static struct gen_tensor tf1_layer(struct gen *g, const struct bert_cfg *c,
				   const char *p, struct gen_tensor x,
				   struct gen_tensor mask)
{
	char a[NM_LEN], b[NM_LEN];
	const char *sp = nm(a, p, "attention/self");
	struct gen_tensor q = gen_linear(g, nm(b, sp, "query"), x, c->hidden,
					 true);
	struct gen_tensor k = gen_linear(g, nm(b, sp, "key"), x, c->hidden,
					 true);
	struct gen_tensor v = gen_linear(g, nm(b, sp, "value"), x, c->hidden,
					 true);
	q = op1(g, sp, "transpose", GEN_TF_TRANSPOSE, q);
	k = op1(g, sp, "transpose_1", GEN_TF_TRANSPOSE, k);
	gen_region(g, WL_REGION_CORE_ATTN); /* MatMul .. MatMul_1 */
	struct gen_tensor s = gen_attn_scores(g, nm(b, sp, "MatMul"), q, k,
					      c->heads);
	s = op1(g, sp, "Mul", GEN_TF_MULC, s); /* 1/sqrt(size_per_head) */
	struct gen_tensor adder = op1(g, sp, "sub", GEN_TF_RSUBC, mask);
	adder = op1(g, sp, "mul_1", GEN_TF_MULC, adder); /* * -10000.0 */
	s = op2(g, sp, "add", GEN_TF_ADD, s, adder);
	s = gen_softmax(g, nm(b, sp, "Softmax"), s);
	s = tf1_dropout(g, nm(b, sp, "dropout"), s);
	v = op1(g, sp, "transpose_2", GEN_TF_TRANSPOSE, v);
	struct gen_tensor ctx = gen_attn_context(g, nm(b, sp, "MatMul_1"), s,
						 v);
	gen_region(g, WL_REGION_NONE);
	ctx = op1(g, sp, "transpose_3", GEN_TF_TRANSPOSE, ctx);
	const char *op = nm(a, p, "attention/output");
	struct gen_tensor o = gen_linear(g, nm(b, op, "dense"), ctx,
					 c->hidden, true);
	o = tf1_dropout(g, nm(b, op, "dropout"), o);
	o = op2(g, op, "add", GEN_TF_ADD, o, x);
	struct gen_tensor att = tf1_layer_norm(g, nm(b, op, "LayerNorm"), o);
	const char *ip = nm(a, p, "intermediate/dense");
	struct gen_tensor i = gen_linear(g, ip, att, c->inter, true);
	i = tf1_gelu(g, ip, i);
	const char *outp = nm(a, p, "output");
	o = gen_linear(g, nm(b, outp, "dense"), i, c->hidden, true);
	o = tf1_dropout(g, nm(b, outp, "dropout"), o);
	o = op2(g, outp, "add", GEN_TF_ADD, o, att);
	return tf1_layer_norm(g, nm(b, outp, "LayerNorm"), o);
}

struct wl_workload *gen_bert_tf1(const struct bert_cfg *c,
				 const struct wl_gen_args *a, gms_err *err)
{
	int64_t seq = a->size;
	if (seq < 1 || seq > c->max_pos || c->hidden % c->heads) {
		gms_errf(err, "%s: sequence length %lld not in 1..%lld or "
			      "hidden %lld not split by %lld heads",
			 c->name, (long long)seq, (long long)c->max_pos,
			 (long long)c->hidden, (long long)c->heads);
		return NULL;
	}
	struct gen *g = gen_new(c->name, a, err);
	if (!g)
		return NULL;
	char b[NM_LEN];
	int64_t h = c->hidden;
	struct gen_tensor ids = gen_input_ids(g, "input_ids", seq);
	struct gen_tensor tt = gen_input_ids(g, "token_type_ids", seq);
	struct gen_tensor im = gen_input_ids(g, "input_mask", seq);
	/* embedding_lookup, embedding_postprocessor */
	const char *ep = "bert/embeddings";
	struct gen_tensor x = gen_embedding(g, nm(b, ep, "word_embeddings"),
					    ids, c->vocab, h);
	struct gen_tensor oh = gen_tf_op(g, nm(b, ep, "one_hot"),
					 GEN_TF_ONE_HOT, tt, gen_none(),
					 BERT_TYPE_VOCAB, seq, 1);
	struct gen_tensor te = gen_linear(g, nm(b, ep, "token_type_embeddings"),
					  oh, h, false);
	x = op2(g, ep, "add", GEN_TF_ADD, x, te);
	struct gen_tensor pe = gen_param_value(
		g, nm(b, ep, "position_embeddings"), h, seq, 1, c->max_pos * h);
	x = op2(g, ep, "add_1", GEN_TF_ADD, x, pe);
	x = tf1_layer_norm(g, nm(b, ep, "LayerNorm"), x);
	x = tf1_dropout(g, nm(b, ep, "dropout"), x);
	/* create_attention_mask_from_input_mask: [B, S_from, S_to] laid out
	 * as the scores are, (keys, queries, 1) */
	const char *mp = "bert/encoder";
	struct gen_tensor to = gen_tf_op(g, nm(b, mp, "Cast"), GEN_TF_CAST,
					 im, gen_none(), seq, 1, 1);
	struct gen_tensor ones = gen_tf_op(g, nm(b, mp, "ones"), GEN_TF_FILL,
					   gen_none(), gen_none(), 1, seq, 1);
	struct gen_tensor mask = op2(g, mp, "mul", GEN_TF_MUL, ones, to);
	for (int64_t l = 0; l < c->layers; l++) {
		char p[NM_LEN];
		gen_fmt(p, sizeof p, "bert/encoder/layer_%lld", (long long)l);
		gen_block(g, l);
		x = tf1_layer(g, c, p, x, mask);
	}
	gen_block(g, -1);
	x = gen_slice(g, "bert/pooler/strided_slice", x, 0, 1);
	x = gen_linear(g, "bert/pooler/dense", x, h, true);
	x = gen_tanh(g, "bert/pooler/dense/Tanh", x);
	x = tf1_dropout(g, BERT_HEAD_PREFIX "dropout", x);
	x = gen_linear(g, BERT_HEAD_PREFIX "classifier", x, BERT_CLASSES,
		       true);
	return gen_finish(g, x, err);
}
