/*
 * test_gen_dense_bert.c - the DenseNet-121 and BERT generators
 * (workloads/gen_densenet.c, workloads/gen_bert.c).
 *
 * Every expected figure is published or worked out by hand here (fp32, 4
 * bytes an element; dropout masks 1 byte an element; int64 ids 8 bytes):
 *   densenet121  7,978,856 parameters (torchvision), 2.834 GMACs an image
 *                at 224 (torchvision's "GFLOPS" column, MACs); the sums are
 *                in the comment at the top of gen_densenet.c.
 *   bert_base    109,482,240 parameters (BertModel with pooler: embeddings
 *                23,837,184 + 12 x 7,087,872 + pooler 590,592)
 *   bert_large   335,141,888 (31,782,912 + 24 x 12,596,224 + 1,049,600)
 *   the head     2H + 2 = 1,538 (bert_base), outside those counts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "../policies/pol.h"
#include "../sim/ex.h"
#include "../workloads/gen_dense_bert.h"
#include "wlkit.h"

static struct wl_workload *build(const char *name, int64_t batch,
				 int64_t size)
{
	/* bert_base/bert_large build the fused model these tests pin down
	 * for pytorch (and caffe); tf-graph/tf-eager get the TF 1.x graph
	 * (gen_bert_tf1.c, tests/test_gen_bert_tf1.c) */
	enum wl_framework fw = strncmp(name, "bert", 4) == 0
				       ? WL_FW_PYTORCH
				       : WL_FW_TF_GRAPH;
	return gen_build_ok(name, batch, size, fw, WL_OPTIM_MOMENTUM);
}

/* The backward op of type t in the layer of forward op `fwd` (a forward
 * op is its own layer); exactly one must exist. */
static const struct wl_op *bwd_of(const struct wl_workload *w,
				  const char *fwd, enum wl_op_type t)
{
	uint32_t layer = op(w, fwd)->layer;
	const struct wl_op *found = NULL;
	for (uint32_t i = 0; i < w->n_ops; i++) {
		const struct wl_op *o = &w->ops[i];
		if (o->phase == WL_BWD && o->layer == layer && o->type == t) {
			if (found)
				fail_msg("two %s ops in layer of '%s'",
					 wl_op_type_name(t), fwd);
			found = o;
		}
	}
	if (!found)
		fail_msg("no %s op in layer of '%s'", wl_op_type_name(t), fwd);
	return found;
}

static bool reads(const struct wl_workload *w, const struct wl_op *o,
		  const char *tname)
{
	uint32_t id = wl_tensor_id(w, tname);
	assert_int_not_equal(id, WL_NONE);
	for (uint32_t i = 0; i < o->n_in; i++)
		if (o->in[i] == id)
			return true;
	return false;
}

/* Number of inputs of o that are activation gradients (dy). */
static uint32_t n_grad_inputs(const struct wl_workload *w,
			      const struct wl_op *o)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < o->n_in; i++)
		n += w->tensors[o->in[i]].kind == WL_ACT_GRAD;
	return n;
}

/* ---- DenseNet-121 -------------------------------------------------- */

static void test_densenet_params(void **state)
{
	(void)state;
	struct wl_workload *w = build("densenet121", 1, 224);
	assert_int_equal(param_count(w, NULL), 7978856);
	assert_int_equal(wl_bytes_of_kind(w, WL_PARAM), 4 * 7978856ull);
	wl_free(w);
}

/* MACs per image: forward convolutions and matmuls, flops / 2 / batch.
 * By hand 2,834,161,664 (gen_densenet.c); published 2.834 G. */
static void test_densenet_macs(void **state)
{
	(void)state;
	struct wl_workload *w = build("densenet121", 2, 224);
	double macs = 0;
	unsigned n_conv = 0, n_mm = 0;
	for (uint32_t i = 0; i < w->n_ops; i++) {
		const struct wl_op *o = &w->ops[i];
		if (o->phase != WL_FWD)
			continue;
		if (o->type == OT_CONV)
			n_conv++;
		else if (o->type == OT_MATMUL)
			n_mm++;
		else
			continue;
		macs += o->flops / 2 / (double)w->batch;
	}
	/* conv0 + 2 a dense layer x 58 + 3 transitions; the classifier */
	assert_int_equal(n_conv, 1 + 2 * 58 + 3);
	assert_int_equal(n_mm, 1);
	assert_true(macs > 2.834e9 * 0.98 && macs < 2.834e9 * 1.02);
	wl_free(w);
}

/* torchvision's concatenations, at batch 1, 224 x 224 (block1 is 56x56,
 * 3136 positions): denselayer L of block1 copies 64 + 32(L-1) channels,
 * the block's own cat 64 + 6*32 = 256. */
static void test_densenet_concat(void **state)
{
	(void)state;
	struct wl_workload *w = build("densenet121", 1, 224);
	unsigned n_cat = 0;
	for (uint32_t i = 0; i < w->n_ops; i++)
		n_cat += w->ops[i].phase == WL_FWD &&
			 w->ops[i].type == OT_CONCAT;
	assert_int_equal(n_cat, 58 + 4); /* one a dense layer, one a block */
	/* 224 channels x 3136 x 4 B */
	assert_int_equal(
		tensor(w, "features.denseblock1.denselayer6.cat.out")->bytes,
		2809856);
	/* the first layer's cat of one tensor is a copy too: 64 x 3136 x 4 */
	assert_int_equal(
		tensor(w, "features.denseblock1.denselayer1.cat.out")->bytes,
		802816);
	/* 256 x 3136 x 4 */
	assert_int_equal(tensor(w, "features.denseblock1.cat.out")->bytes,
			 3211264);
	/* block4 at 7x7: its cat has 512 + 16*32 = 1024 channels */
	assert_int_equal(tensor(w, "features.denseblock4.cat.out")->bytes,
			 1024 * 49 * 4);
	/* Every concatenation of block1 (sum of c = 864 channels) is held for
	 * norm1's backward, which reads the layer's input. */
	uint64_t held = 0;
	for (int l = 1; l <= 6; l++) {
		char cat[64], norm[64];
		snprintf(cat, sizeof cat,
			 "features.denseblock1.denselayer%d.cat.out", l);
		snprintf(norm, sizeof norm,
			 "features.denseblock1.denselayer%d.norm1", l);
		assert_true(reads(w, bwd_of(w, norm, OT_BATCHNORM_BWD), cat));
		held += tensor(w, cat)->bytes;
	}
	assert_int_equal(held, 864ull * 3136 * 4);
	wl_free(w);
}

static void test_densenet_sizes(void **state)
{
	(void)state;
	/* 29 -> 15 -> 8 -> 4 -> 2 -> 1; 28 -> 14 -> 7 -> 3 -> 1 -> 0 */
	struct wl_workload *w = build("densenet121", 1, 29);
	assert_int_equal(tensor(w, "features.denseblock4.cat.out")->bytes,
			 1024 * 4);
	wl_free(w);
	const struct wl_gen *g = wl_gen_find("densenet121");
	assert_non_null(g);
	assert_int_equal(g->default_size, 224);
	assert_int_equal(g->min_size, 29);
	struct wl_gen_args a = {.batch = 1, .size = 28};
	gms_err err = {{0}};
	assert_null(wl_gen_build(g, &a, &err));
	assert_true(err.msg[0] != '\0');
	err.msg[0] = '\0';
	assert_null(wl_gen_densenet121(&a, &err)); /* directly, too */
	assert_non_null(strstr(err.msg, "densenet121"));
}

/* ---- BERT ------------------------------------------------------------ */

static void test_bert_params(void **state)
{
	(void)state;
	struct wl_workload *w = build("bert_base", 1, 8);
	assert_int_equal(param_count(w, BERT_HEAD_PREFIX), 109482240);
	/* the head: classifier 768 x 2 + 2 */
	assert_int_equal(param_count(w, NULL) - 109482240, 1538);
	assert_int_equal(tensor(w, "cls.classifier.weight")->bytes,
			 768 * 2 * 4);
	/* a few by name, as HuggingFace calls them */
	assert_int_equal(tensor(w, "embeddings.word_embeddings.weight")->bytes,
			 30522ull * 768 * 4);
	assert_int_equal(
		tensor(w, "embeddings.position_embeddings.weight")->bytes,
		512 * 768 * 4);
	assert_int_equal(
		tensor(w, "encoder.layer.11.output.LayerNorm.weight")->bytes,
		768 * 4);
	assert_int_equal(tensor(w, "pooler.dense.weight")->bytes,
			 768 * 768 * 4);
	wl_free(w);

	w = build("bert_large", 1, 8);
	assert_int_equal(param_count(w, BERT_HEAD_PREFIX), 335141888);
	assert_int_equal(param_count(w, NULL) - 335141888, 1024 * 2 + 2);
	assert_int_equal(
		tensor(w, "encoder.layer.23.intermediate.dense.weight")->bytes,
		4096ull * 1024 * 4);
	wl_free(w);
}

/* bert_base at seq 8, batch 2 (H 768, A 12, I 3072), by hand:
 *   attention scores / masked / probabilities / dropped: 2*12*8*8*4 = 6144
 *   attention dropout mask: 2*12*8*8*1 = 1536
 *   a hidden-size activation: 2*8*768*4 = 49152; intermediate 196608
 *   layernorm saved mean + rstd: 2*(8 rows)*4 a sample = 128
 *   scores and context FLOPs: 2*seq*seq*H a sample = 98304, x2 = 196608 */
static void test_bert_tiny_sizes(void **state)
{
	(void)state;
	struct wl_workload *w = build("bert_base", 2, 8);
	const char *att[] = {"encoder.layer.0.attention.self.scores.out",
			     "encoder.layer.0.attention.self.mask_add.out",
			     "encoder.layer.0.attention.self.softmax.out",
			     "encoder.layer.0.attention.self.dropout.out"};
	for (size_t i = 0; i < sizeof att / sizeof *att; i++)
		assert_int_equal(tensor(w, att[i])->bytes, 6144);
	assert_int_equal(
		tensor(w, "encoder.layer.5.attention.self.dropout.mask")->bytes,
		1536);
	assert_int_equal(
		tensor(w, "encoder.layer.0.attention.self.query.out")->bytes,
		49152);
	assert_int_equal(
		tensor(w, "encoder.layer.0.intermediate.dense.out")->bytes,
		196608);
	assert_int_equal(
		tensor(w, "encoder.layer.0.output.LayerNorm.saved")->bytes, 128);
	assert_int_equal(tensor(w, "input_ids")->bytes, 2 * 8 * 8);
	assert_true(op(w, "encoder.layer.0.attention.self.scores")->flops ==
		    196608.0);
	assert_int_equal(op(w, "encoder.layer.0.attention.self.scores")->type,
			 OT_MATMUL);
	assert_true(op(w, "encoder.layer.0.attention.self.context")->flops ==
		    196608.0);
	/* Q, K, V and the output projection are four separate linears */
	const char *proj[] = {"query", "key", "value"};
	for (size_t i = 0; i < 3; i++) {
		char nm[64];
		snprintf(nm, sizeof nm, "encoder.layer.3.attention.self.%s",
			 proj[i]);
		assert_int_equal(op(w, nm)->type, OT_MATMUL);
	}
	assert_int_equal(op(w, "encoder.layer.3.attention.output.dense")->type,
			 OT_MATMUL);
	/* 12 layers of attention probabilities */
	unsigned n_softmax = 0;
	for (uint32_t i = 0; i < w->n_ops; i++)
		n_softmax += w->ops[i].type == OT_SOFTMAX;
	assert_int_equal(n_softmax, 12);
	wl_free(w);
}

/* What the backward ops of layer 0 read (bert_base, seq 8, batch 2). */
static void test_bert_backward_reads(void **state)
{
	(void)state;
	struct wl_workload *w = build("bert_base", 2, 8);
#define L0 "encoder.layer.0."
	/* softmax backward: the probabilities and dy, not the scores */
	const struct wl_op *o =
		bwd_of(w, L0 "attention.self.softmax", OT_SOFTMAX_BWD);
	assert_true(reads(w, o, L0 "attention.self.softmax.out"));
	assert_false(reads(w, o, L0 "attention.self.mask_add.out"));
	assert_false(reads(w, o, L0 "attention.self.scores.out"));
	assert_int_equal(n_grad_inputs(w, o), 1);
	assert_int_equal(o->n_in, 2);
	/* attention dropout backward: its mask and dy, not the probabilities
	 * nor its output */
	o = bwd_of(w, L0 "attention.self.dropout", OT_DROPOUT_BWD);
	assert_true(reads(w, o, L0 "attention.self.dropout.mask"));
	assert_false(reads(w, o, L0 "attention.self.softmax.out"));
	assert_false(reads(w, o, L0 "attention.self.dropout.out"));
	assert_int_equal(n_grad_inputs(w, o), 1);
	assert_int_equal(o->n_in, 2);
	/* hidden dropout likewise */
	o = bwd_of(w, L0 "output.dropout", OT_DROPOUT_BWD);
	assert_true(reads(w, o, L0 "output.dropout.mask"));
	assert_int_equal(o->n_in, 2);
	/* GELU backward: its input (the intermediate dense output) and dy */
	o = bwd_of(w, L0 "intermediate.gelu", OT_ELEMWISE);
	assert_true(reads(w, o, L0 "intermediate.dense.out"));
	assert_false(reads(w, o, L0 "intermediate.gelu.out"));
	assert_int_equal(n_grad_inputs(w, o), 1);
	/* layernorm backward: input (the residual sum), saved mean/rstd,
	 * gamma and dy */
	o = bwd_of(w, L0 "attention.output.LayerNorm", OT_LAYERNORM_BWD);
	assert_true(reads(w, o, L0 "attention.output.add.out"));
	assert_true(reads(w, o, L0 "attention.output.LayerNorm.saved"));
	assert_true(reads(w, o, L0 "attention.output.LayerNorm.weight"));
	assert_int_equal(n_grad_inputs(w, o), 1);
	/* the attention matmuls' backward reads both operands: dS with K
	 * (for dQ) and with Q (for dK); dC with V (for dP) and with P (dV) */
	o = op(w, L0 "attention.self.scores.bwd_q");
	assert_int_equal(o->type, OT_MATMUL_BWD);
	assert_true(reads(w, o, L0 "attention.self.key.out"));
	assert_int_equal(n_grad_inputs(w, o), 1);
	uint32_t ds = WL_NONE; /* dS: what softmax backward wrote */
	o = bwd_of(w, L0 "attention.self.softmax", OT_SOFTMAX_BWD);
	assert_int_equal(o->n_out, 1);
	ds = o->out[0];
	assert_int_equal(w->tensors[ds].bytes, 6144);
	o = op(w, L0 "attention.self.scores.bwd_q");
	assert_true(reads(w, o, w->tensors[ds].name));
	o = op(w, L0 "attention.self.scores.bwd_k");
	assert_true(reads(w, o, L0 "attention.self.query.out"));
	assert_true(reads(w, o, w->tensors[ds].name));
	o = op(w, L0 "attention.self.context.bwd_p");
	assert_true(reads(w, o, L0 "attention.self.value.out"));
	o = op(w, L0 "attention.self.context.bwd_v");
	assert_true(reads(w, o, L0 "attention.self.dropout.out"));
	/* so the probabilities (softmax bwd), the dropped probabilities
	 * (context bwd) and the mask (dropout bwd) live until backward, and
	 * the scores do not: their last reader is mask_add */
	const struct wl_tensor *sc = tensor(w, L0 "attention.self.scores.out");
	assert_int_equal(sc->n_readers, 1);
	assert_int_equal(sc->readers[0],
			 wl_op_id(w, L0 "attention.self.mask_add"));
#undef L0
	wl_free(w);
}

/* Activation bytes of bert_base per sample at seq 128, by hand (S 128,
 * H 768, I 3072, A 12, L 12; u = S*H*4 = 393,216, a = A*S*S*4 = 786,432):
 *   a layer: Q, K, V, context, attention dense, its dropout, add,
 *     LayerNorm, output dense, its dropout, add, LayerNorm (12u),
 *     intermediate and GELU (2 * S*I*4 = 8u), two hidden dropout masks
 *     (2 * S*H), two LayerNorm saved (2 * 2*S*4); attention scores,
 *     masked, probabilities, dropped (4a) and the mask (A*S*S)
 *   embeddings: three lookups, two adds, LayerNorm, dropout (7u), mask
 *     (S*H), LayerNorm saved (2*S*4)
 *   head: pooler dense, tanh, dropout (3 * H*4), mask H, logits and loss
 *     probabilities (2 * 2*4); the loss value (4 bytes a batch)
 * Of which held for backward (read by a backward op): a layer's Q, K, V,
 * context (dQ/dK/dV/dP and the output dense's weight gradient), both
 * adds and both LayerNorm outputs (layernorm backward; the next linear's
 * weight gradient), intermediate and GELU (GELU backward; output dense),
 * the masks, LayerNorm saved, probabilities (softmax backward), dropped
 * probabilities (context backward) and the attention mask: everything but
 * the two dense outputs, the two dropout outputs, the scores and the
 * masked scores; embeddings: the second add, LayerNorm saved, mask and
 * the dropout output (layer 0's input); head: tanh output, mask, dropout
 * output, loss probabilities. */
static void test_bert_activation_bytes(void **state)
{
	(void)state;
	const uint64_t S = 128, H = 768, I = 3072, A = 12, L = 12;
	const uint64_t u = S * H * 4, att = A * S * S * 4;
	uint64_t layer = 12 * u + 2 * S * I * 4 + 2 * S * H + 2 * 2 * S * 4 +
			 4 * att + A * S * S;
	uint64_t emb = 7 * u + S * H + 2 * S * 4;
	uint64_t head = 3 * H * 4 + H + 2 * 2 * 4;
	uint64_t all = L * layer + emb + head; /* + 4 for the loss value */
	uint64_t kept_layer = 8 * u + 2 * S * I * 4 + 2 * S * H +
			      2 * 2 * S * 4 + 2 * att + A * S * S;
	uint64_t kept = L * kept_layer + (2 * u + S * H + 2 * S * 4) +
			(2 * H * 4 + H + 2 * 4);
	assert_int_equal(all, 139725584);   /* 139.7 MB a sample */
	assert_int_equal(kept, 100007688);  /* 100.0 MB a sample */
	struct wl_workload *w = build("bert_base", 1, 128);
	uint64_t got_all = 0, got_kept = 0;
	for (uint32_t i = 0; i < w->n_tensors; i++) {
		const struct wl_tensor *t = &w->tensors[i];
		if (t->kind != WL_ACT)
			continue;
		got_all += t->bytes;
		bool bwd = false;
		for (uint32_t r = 0; r < t->n_readers; r++)
			bwd = bwd || w->ops[t->readers[r]].phase == WL_BWD;
		if (bwd)
			got_kept += t->bytes;
	}
	assert_int_equal(got_all, all + 4);
	assert_int_equal(got_kept, kept);
	wl_free(w);
}

static void test_bert_sizes(void **state)
{
	(void)state;
	const struct wl_gen *g = wl_gen_find("bert_base");
	assert_non_null(g);
	assert_int_equal(g->default_size, 128);
	assert_int_equal(g->min_size, 1);
	assert_non_null(wl_gen_find("bert_large"));
	gms_err err = {{0}};
	/* longer than the 512 position embeddings */
	struct wl_gen_args a = {.batch = 1, .size = 513};
	assert_null(wl_gen_build(g, &a, &err));
	assert_non_null(strstr(err.msg, "513"));
	err.msg[0] = '\0';
	assert_null(wl_gen_bert_large(&a, &err));
	assert_non_null(strstr(err.msg, "512"));
	/* below 1 */
	a.size = -1;
	err.msg[0] = '\0';
	assert_null(wl_gen_build(g, &a, &err));
	assert_true(err.msg[0] != '\0');
	err.msg[0] = '\0';
	assert_null(wl_gen_bert_base(&a, &err));
	assert_non_null(strstr(err.msg, "-1"));
	/* 0 means the default (wl_gen.h): 1*12*128*128*4 bytes */
	struct wl_workload *w = build("bert_base", 1, 0);
	assert_int_equal(
		tensor(w, "encoder.layer.0.attention.self.softmax.out")->bytes,
		786432);
	wl_free(w);
	/* the extremes build: seq 1 and seq 512 (1*12*512*512*4) */
	w = build("bert_base", 1, 1);
	wl_free(w);
	w = build("bert_base", 1, 512);
	assert_int_equal(
		tensor(w, "encoder.layer.0.attention.self.softmax.out")->bytes,
		12ull * 512 * 512 * 4);
	wl_free(w);
}

/* ---- Runs ------------------------------------------------------------ */

static void run_framework(const char *name, int64_t size)
{
	struct wl_workload *w = build(name, 2, size);
	struct hw_profile hw;
	gms_err err = {{0}};
	if (hw_load(&hw, "V100-16GB", &err) < 0)
		fail_msg("%s", err.msg);
	struct pol pol;
	if (pol_create(&pol, "framework", NULL, NULL, NULL, 0, &err) < 0)
		fail_msg("%s", err.msg);
	struct ex_cfg cfg = {.hw = &hw, .wl = w, .pol = &pol,
			     .allocator = "bfc", .iterations = 2,
			     .warmup = 1};
	struct st_run st;
	memset(&st, 0, sizeof st);
	int rc = ex_run(&cfg, &st, &err);
	if (rc < 0)
		fail_msg("%s: %s", name, err.msg);
	assert_false(st.oom.hit);
	assert_false(st.failed);
	assert_int_equal(st.n_iter, 2);
	assert_true(st.steady.time > 0);
	/* parameters, their gradients' peak and SGD momentum all fit: the
	 * peak holds at least parameters + momentum */
	assert_true(st.mem.peak_requested >=
		    2 * wl_bytes_of_kind(w, WL_PARAM));
	st_run_free(&st);
	pol_destroy(&pol);
	wl_free(w);
}

static void test_run_densenet(void **state)
{
	(void)state;
	run_framework("densenet121", 224);
}

static void test_run_bert(void **state)
{
	(void)state;
	run_framework("bert_base", 128);
	run_framework("bert_large", 128);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_densenet_params),
		cmocka_unit_test(test_densenet_macs),
		cmocka_unit_test(test_densenet_concat),
		cmocka_unit_test(test_densenet_sizes),
		cmocka_unit_test(test_bert_params),
		cmocka_unit_test(test_bert_tiny_sizes),
		cmocka_unit_test(test_bert_backward_reads),
		cmocka_unit_test(test_bert_activation_bytes),
		cmocka_unit_test(test_bert_sizes),
		cmocka_unit_test(test_run_densenet),
		cmocka_unit_test(test_run_bert),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
