/*
 * test_gen_bert_tf1.c - BERT as TensorFlow 1.x runs it
 * (workloads/gen_bert_tf1.c) against the fused model (gen_bert.c).
 *
 * "Kept" below = the tensors alive at the forward/backward boundary under
 * tf-graph: activations and inputs written in forward that a backward op
 * reads (the executor frees every other forward tensor after its last
 * forward reader). Every figure is worked out by hand here from what each
 * TF gradient function reads (gen.c, tf_defs; README "BERT in
 * TensorFlow 1"): fp32 4 bytes an element, int64 ids 8.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../policies/pol.h"
#include "../sim/ex.h"
#include "../sim/hw.h"
#include "../workloads/gen_dense_bert.h"
#include "testkit.h"
#include "wlkit.h"

static const struct bert_cfg base = {"bert_base", 12, 768, 12, 3072,
				     BERT_VOCAB, BERT_MAX_SEQ};
/* the tiny one-layer BERT: H 8, 2 heads, I 32, vocab 10, 16 positions */
static const struct bert_cfg tiny = {"tiny_bert", 1, 8, 2, 32, 10, 16};

static struct wl_workload *build(const struct bert_cfg *c, bool tf1,
				 int64_t batch, int64_t seq,
				 enum wl_framework fw)
{
	struct wl_gen_args a = {.batch = batch, .size = seq, .framework = fw,
				.optimizer = WL_OPTIM_ADAM};
	gms_err err = {{0}};
	struct wl_workload *w = tf1 ? gen_bert_tf1(c, &a, &err)
				    : gen_bert_fused(c, &a, &err);
	if (!w)
		fail_msg("%s", err.msg);
	return w;
}

/* Is tensor t written in forward (or an input) and read in backward? */
static bool kept(const struct wl_workload *w, uint32_t t)
{
	const struct wl_tensor *x = &w->tensors[t];
	if (x->kind != WL_ACT && x->kind != WL_INPUT)
		return false;
	for (uint32_t r = 0; r < x->n_readers; r++)
		if (w->ops[x->readers[r]].phase == WL_BWD)
			return true;
	return false;
}

/* Names of the kept tensors in creation order (space separated) and
 * their bytes. */
static uint64_t kept_list(const struct wl_workload *w, char *buf, size_t cap)
{
	uint64_t bytes = 0;
	buf[0] = '\0';
	for (uint32_t t = 0; t < w->n_tensors; t++) {
		if (!kept(w, t))
			continue;
		size_t l = strlen(buf);
		snprintf(buf + l, cap - l, "%s%s", l ? " " : "",
			 w->tensors[t].name);
		bytes += w->tensors[t].bytes;
	}
	return bytes;
}

/*
 * (1) Parameters: the TF graph has exactly the fused model's (the
 * variables of modeling.py are BertModel's): 109,482,240 for bert_base
 * outside the head, whose output layer is 2H + 2 = 1,538 (the sums in
 * gen_bert.c's comment). The tiny one by hand: embeddings V*H 80 + token
 * types 2*8 16 + positions 16*8 128 + LayerNorm 16 = 240; the layer
 * 4*(8*8 + 8) 288 + LN 16 + 8*32 + 32 = 288 + 32*8 + 8 = 264 + LN 16 =
 * 872; pooler 72: 1,184; head 18.
 */
static void test_params(void **state)
{
	(void)state;
	struct wl_workload *w = build(&base, true, 1, 128, WL_FW_TF_GRAPH);
	assert_int_equal(param_count(w, BERT_HEAD_PREFIX), 109482240);
	assert_int_equal(param_count(w, NULL) -
				 param_count(w, BERT_HEAD_PREFIX),
			 1538);
	/* bert_base itself dispatches here for tf-graph */
	struct wl_workload *g = gen_build_ok("bert_base", 1, 128,
					     WL_FW_TF_GRAPH, WL_OPTIM_ADAM);
	assert_int_equal(g->n_ops, w->n_ops);
	assert_int_not_equal(wl_tensor_id(g, "bert/encoder/layer_11/"
					     "intermediate/dense/Erf.out"),
			     WL_NONE);
	wl_free(g);
	/* and for pytorch to the fused model */
	g = gen_build_ok("bert_base", 1, 128, WL_FW_PYTORCH, WL_OPTIM_ADAM);
	assert_int_equal(wl_tensor_id(g, "bert/embeddings/one_hot.out"),
			 WL_NONE);
	assert_int_equal(param_count(g, BERT_HEAD_PREFIX), 109482240);
	wl_free(g);
	wl_free(w);
	w = build(&tiny, true, 1, 4, WL_FW_TF_GRAPH);
	assert_int_equal(param_count(w, BERT_HEAD_PREFIX), 1184);
	assert_int_equal(param_count(w, NULL), 1184 + 18);
	/* Adam: two slots a parameter tensor */
	assert_int_equal(wl_bytes_of_kind(w, WL_OPT_STATE),
			 2 * (1184 + 18) * 4);
	wl_free(w);
}

/*
 * (2) The tiny BERT at batch 1, seq 4 (R = 4 rows): the tensors kept
 * across the boundary, by what each gradient reads. [R,H] = 128 bytes,
 * [R,1] = 16, [R,I] = 512, scores [N,S,S] = 128, [1,H] = 32.
 *   input_ids 32 (GatherV2's gradient reads the indices)
 *   embeddings: one_hot [R,2] 32 (token-type MatMul's weight gradient);
 *     LayerNorm: x = add_1 128 (SquaredDifference's and mul_1's
 *     gradients), moments/mean 16 (SquaredDifference's, mul_2's),
 *     Rsqrt 16 (its own gradient reads y; mul's gamma gradient),
 *     batchnorm/mul = inv 128 (mul_1's and mul_2's);
 *     dropout: Floor 128 (mul's gradient for x reads y), mul 128 (the
 *     query/key/value weight gradients)
 *   layer 0: transpose (Q) 128 and transpose_1 (K) 128 (MatMul's
 *     gradients), Softmax 128 (y), dropout Floor 128, dropout mul 128
 *     and transpose_2 (V) 128 (MatMul_1's gradients), transpose_3 128
 *     (the output dense's weight gradient), output dropout Floor 128,
 *     LayerNorm x (add) 128 + mean 16 + Rsqrt 16 + inv 128, its output
 *     128 (intermediate dense), intermediate/dense 512 (mul_1 = x * cdf),
 *     truediv 512 (Erf), mul = cdf 512, mul_1 512 (output dense), output
 *     dropout Floor 128, LayerNorm 288 as above, its output 128 (the
 *     pooler dense reads the whole tensor through the [CLS] view)
 *   pooler Tanh 32 (y), head dropout Floor 32 and mul 32 (classifier),
 *   loss.labels 8 and loss.probs 8.
 * Not kept: every Mean/SquaredDifference/variance/add output (their
 * gradients read nothing of them), mul_1/mul_2/sub of the layer norms,
 * the scores before softmax (Mul by a constant and Add read only dy),
 * dropout's draw and x/keep_prob (its gradient is only needed for the
 * Floor branch, which has none), Erf's output, the q/k/v dense outputs
 * (Transpose's gradient reads nothing), the attention mask chain.
 * Sum: input_ids 32; embeddings 32 + 128 + 16 + 16 + 128 + 128 + 128 =
 * 576; the layer: 8 x 128 (Q^T, K^T, Softmax, Floor, mul, V^T,
 * transpose_3, output dropout Floor) = 1,024, + LayerNorm 288 + its
 * output 128 + the GELU 4 x 512 = 2,048 + Floor 128 + LayerNorm 288 +
 * output 128 = 4,032; pooler and head 96; loss 16: 4,752.
 */
static void test_tiny_kept(void **state)
{
	(void)state;
	struct wl_workload *w = build(&tiny, true, 1, 4, WL_FW_TF_GRAPH);
	static char buf[8192];
	uint64_t bytes = kept_list(w, buf, sizeof buf);
#define E "bert/embeddings/"
#define L "bert/encoder/layer_0/"
#define LN(p) p "moments/mean.out " p "batchnorm/Rsqrt.out " \
	      p "batchnorm/mul.out "
	const char *want =
		"input_ids " E "one_hot.out " E "add_1.out "
		LN(E "LayerNorm/") E "dropout/Floor.out " E "dropout/mul.out "
		L "attention/self/transpose.out "
		L "attention/self/transpose_1.out "
		L "attention/self/Softmax.out "
		L "attention/self/dropout/Floor.out "
		L "attention/self/dropout/mul.out "
		L "attention/self/transpose_2.out "
		L "attention/self/transpose_3.out "
		L "attention/output/dropout/Floor.out "
		L "attention/output/add.out " LN(L "attention/output/LayerNorm/")
		L "attention/output/LayerNorm/batchnorm/add_1.out "
		L "intermediate/dense.out " L "intermediate/dense/truediv.out "
		L "intermediate/dense/mul.out " L "intermediate/dense/mul_1.out "
		L "output/dropout/Floor.out " L "output/add.out "
		LN(L "output/LayerNorm/")
		L "output/LayerNorm/batchnorm/add_1.out "
		"bert/pooler/dense/Tanh.out cls.dropout/Floor.out "
		"cls.dropout/mul.out loss.labels loss.probs";
#undef LN
	assert_string_equal(buf, want);
	assert_int_equal(bytes, 4752);
	/* what the layer norm's gradients read, one by one */
	char io[512];
	const struct wl_op *o =
		op(w, L "output/LayerNorm/batchnorm/mul_1.bwd_y");
	names_of(w, o->in, o->n_in, io, sizeof io);
	/* dy: add_1.out.grad.2, the full-size gradient the [CLS] slice's
	 * backward writes (.grad is the view's, from pooler/dense) */
	assert_string_equal(io, L "output/LayerNorm/batchnorm/add_1.out.grad.2 "
				L "output/add.out");
	o = op(w, L "output/LayerNorm/batchnorm/Rsqrt.bwd");
	names_of(w, o->in, o->n_in, io, sizeof io);
	assert_has(io, L "output/LayerNorm/batchnorm/Rsqrt.out");
	/* the residual Add has no kernel; Sub's y gradient is -dy */
	assert_int_equal(wl_op_id(w, L "output/add.bwd_x"), WL_NONE);
	o = op(w, L "output/LayerNorm/batchnorm/sub.bwd_y");
	assert_int_equal(o->n_in, 1);
	/* beta's gradient: the batch sum of dy (a reduction kernel) */
	o = op(w, L "output/LayerNorm/batchnorm/sub.bwd_x");
	names_of(w, o->out, o->n_out, io, sizeof io);
	assert_string_equal(io, L "output/LayerNorm/beta.grad");
	wl_free(w);
#undef E
#undef L
}

/*
 * tf-eager keeps more: the tape holds Mul's inputs (Mul is in
 * _ops_which_dont_need_outputs only), so the raw scores MatMul.out,
 * which tf-graph frees after the scaling Mul, are held until that Mul's
 * gradient has run.
 */
static void test_tiny_eager_tape(void **state)
{
	(void)state;
	struct wl_workload *w = build(&tiny, true, 1, 4, WL_FW_TF_EAGER);
	const char *sc = "bert/encoder/layer_0/attention/self/MatMul.out";
	uint32_t r = tensor(w, sc)->release_after;
	assert_int_not_equal(r, WL_NONE);
	assert_int_equal(r, op_id(w, "bert/encoder/layer_0/attention/self/"
				     "Mul.bwd"));
	/* a draw nothing differentiates is not recorded: not held */
	assert_int_equal(tensor(w, "bert/encoder/layer_0/attention/self/"
				   "dropout/random_uniform/RandomUniform.out")
				 ->release_after,
			 WL_NONE);
	wl_free(w);
	w = build(&tiny, true, 1, 4, WL_FW_TF_GRAPH);
	assert_int_equal(tensor(w, sc)->release_after, WL_NONE);
	wl_free(w);
}

/*
 * (3) bert_base, seq 128: kept bytes a sample, by hand. u = S*H*4 =
 * 393,216; att = N*S*S*4 = 786,432; I-sized = 4u.
 * A TF-1 layer keeps 28u + 3 att + 4*S*4: u-sized Q^T, K^T, V^T,
 * transpose_3, two dropout Floors, two layer-norm inputs and their inv,
 * the attention layer norm's output and the layer's output (12u), four
 * [S,I] GELU tensors (16u), the softmax output, the probs' Floor and
 * the dropped probabilities (3 att), two means and two Rsqrts (2,048):
 * 11,010,048 + 2,359,296 + 2,048 = 13,371,392.
 * The fused layer (test_gen_dense_bert.c, test_bert_activation_bytes):
 * 8u + 2 x 4u + 2 masks S*H + LN saved 2*2*S*4 + 2 att + mask N*S*S =
 * 8,259,584. Difference 5,111,808 = 13u a layer: GELU truediv and cdf
 * (8u), the layer norms' inv (2u), float32 dropout masks instead of
 * bytes (2 x 3/4 u + 3/4 att = 1.5u + 1.5u).
 * Embeddings: TF-1 one_hot 2*S*4 + x, inv, Floor, output (4u) + mean and
 * Rsqrt (1,024) = 1,574,912; head: Tanh, Floor, mul 3 x 3,072 + probs
 * 8 = 9,224. Total 12 x 13,371,392 + 1,574,912 + 9,224 = 162,040,840
 * activation bytes (+ input_ids 1,024 and labels 8, inputs); the fused
 * model's activations are 100,007,688.
 */
static uint64_t kept_act(const struct wl_workload *w)
{
	uint64_t b = 0;
	for (uint32_t t = 0; t < w->n_tensors; t++)
		if (kept(w, t) && w->tensors[t].kind == WL_ACT)
			b += w->tensors[t].bytes;
	return b;
}

static uint64_t peak(const struct wl_workload *w)
{
	struct hw_profile hw;
	gms_err err = {{0}};
	if (hw_load(&hw, "H100-80GB-PCIe", &err) < 0)
		fail_msg("%s", err.msg);
	return framework_peak(w, &hw);
}

static void test_base_vs_fused(void **state)
{
	(void)state;
	struct wl_workload *t = build(&base, true, 1, 128, WL_FW_TF_GRAPH);
	struct wl_workload *f = build(&base, false, 1, 128, WL_FW_TF_GRAPH);
	assert_int_equal(kept_act(t), 162040840);
	assert_int_equal(kept_act(f), 100007688);
	wl_free(t);
	wl_free(f);
	/* batch 32 under tf-graph (arena: plain sums). At the boundary
	 * the parameters and Adam's two slots, 3 x 109,483,778 x 4 =
	 * 1,313,805,336 bytes, and every kept activation are live, so the
	 * peak is at least 1,313,805,336 + 32 x 162,040,840 = 6,499,112,216
	 * (TF-1) and 1,313,805,336 + 32 x 100,007,688 = 4,514,051,352
	 * (fused); the kept activations differ by 32 x 62,033,152 =
	 * 1,985,060,864 (1.85 GiB). Measured: 6,535,797,792 and
	 * 4,572,896,288, 1,962,901,504 apart (+42.9%): both peaks sit a
	 * little after the boundary, the fused one further above its
	 * boundary (its first backward gradients) than TF-1's. */
	t = build(&base, true, 32, 128, WL_FW_TF_GRAPH);
	f = build(&base, false, 32, 128, WL_FW_TF_GRAPH);
	uint64_t pt = peak(t), pf = peak(f);
	assert_true(pt >= 6499112216ull);
	assert_true(pf >= 4514051352ull);
	assert_true(pt > pf);
	wl_free(t);
	wl_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_params),
		cmocka_unit_test(test_tiny_kept),
		cmocka_unit_test(test_tiny_eager_tape),
		cmocka_unit_test(test_base_vs_fused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
