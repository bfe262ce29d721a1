/*
 * gen_bert.c - BERT (Devlin et al., "BERT: Pre-training of Deep
 * Bidirectional Transformers for Language Understanding", NAACL 2019)
 * fine-tuned for sequence classification, as HuggingFace transformers'
 * BertForSequenceClassification runs it in training mode with the eager
 * ("manual") attention implementation (modeling_bert.py; the same graph as
 * google-research/bert modeling.py). size = sequence length. This is what
 * bert_base and bert_large build for the pytorch and caffe frameworks;
 * for tf-graph and tf-eager they build TF 1.x's unfused graph
 * (gen_bert_tf1.c), with the same parameters.
 *
 *   bert_base:  L = 12, H = 768,  A = 12, intermediate 3072
 *   bert_large: L = 24, H = 1024, A = 16, intermediate 4096
 *   both: vocab 30522, max positions 512, type vocab 2, GELU, dropout 0.1
 *   (hidden and attention probabilities), layer-norm eps 1e-12.
 *
 * Ops (names follow the HuggingFace module paths, so the parameters are
 * called as in a BertModel state dict, e.g.
 * encoder.layer.3.attention.self.query.weight):
 *
 *   embeddings: word, token_type and position lookups (three
 *     OT_EMBEDDING), add, add, LayerNorm, dropout
 *   encoder.layer.N (N = 0..L-1):
 *     attention.self.query / key / value    three linears H -> H
 *     attention.self.scores    Q K^T / sqrt(d) per head (batched matmul,
 *                              2*seq*seq*H FLOPs a sample), written as a
 *                              (seq_k, seq_q, heads) tensor of
 *                              batch*A*seq*seq*4 bytes
 *     attention.self.mask_add  + the extended attention mask (a new
 *                              tensor of the same size, as HF's
 *                              `attention_scores + attention_mask`)
 *     attention.self.softmax   probabilities (same size; softmax backward
 *                              reads them and dy)
 *     attention.self.dropout   dropout on the probabilities (same size,
 *                              plus a 1-byte-an-element mask, which the
 *                              backward reads with dy)
 *     attention.self.context   P V per head (2*seq*seq*H FLOPs a sample)
 *     attention.output.dense, .dropout, .add (residual), .LayerNorm
 *     intermediate.dense (H -> I), intermediate.gelu (backward reads x)
 *     output.dense (I -> H), .dropout, .add (residual), .LayerNorm
 *   pooler.first_token (the [CLS] row, a view), pooler.dense (H -> H),
 *   pooler.activation (tanh)
 *   head (prefix "cls."): cls.dropout, cls.classifier (linear H -> 2), and
 *   the softmax cross-entropy loss gen_finish adds.
 *
 * The head. We chose the sequence-classification head (pooler output ->
 * dropout -> 2-way linear) over the masked-LM head: it is what fine-tuning
 * (the task these runs model) trains, and it adds only 2H + 2 parameters
 * and a (2, 1, 1) logit a sample, so the memory stays the encoder's. Its
 * tensors all start with "cls." (BERT_HEAD_PREFIX); the published counts
 * (109,482,240 and 335,141,888) are embeddings + encoder + pooler, i.e.
 * every parameter outside that prefix.
 *
 * Parameters by hand (HuggingFace BertModel, with pooler):
 *   embeddings   V*H + 512*H + 2*H + 2*H (LayerNorm)
 *   one layer    4*(H*H + H) (Q, K, V, output) + 2H (LayerNorm)
 *                + (H*I + I) + (I*H + H) + 2H (LayerNorm)
 *   pooler       H*H + H
 *   base  (H 768, I 3072):  embeddings 23,440,896 + 393,216 + 1,536 +
 *     1,536 = 23,837,184; a layer 2,362,368 + 1,536 + 2,362,368 +
 *     2,360,064 + 1,536 = 7,087,872, x12 = 85,054,464; pooler 590,592;
 *     total 109,482,240 (sum(p.numel()) of bert-base-uncased).
 *   large (H 1024, I 4096): embeddings 31,254,528 + 524,288 + 2,048 +
 *     2,048 = 31,782,912; a layer 4,198,400 + 2,048 + 4,198,400 +
 *     4,195,328 + 2,048 = 12,596,224, x24 = 302,309,376; pooler
 *     1,049,600; total 335,141,888, which is also what users of
 *     transformers report for sum(p.numel() for p in
 *     AutoModel.from_pretrained("bert-large-uncased").parameters())
 *     (the paper rounds to "340M").
 *
 * Where the model departs from the PyTorch run, all small:
 *   - HF's position_ids are a (1, 512) buffer and its position embedding
 *     is (1, seq, H), broadcast into the sum with an in-place `+=`; here
 *     position ids are a per-sample int64 input and the lookup and the
 *     second add are batch-sized (gen_embedding and gen_add have no
 *     broadcast form): batch*seq*H*4 bytes more, transient.
 *   - HF's context matmul writes (batch, A, seq, d) and
 *     permute(...).contiguous() copies it to (batch, seq, H); here the
 *     context kernel writes (H, seq, 1) directly (no copy op).
 *   - token_type_ids and attention_mask are given (int64 inputs), as in
 *     fine-tuning; the extended mask's float conversion (batch*seq*4
 *     bytes) is folded into mask_add.
 */
#include "gen_dense_bert.h"

#include "gen.h"

#include <stdio.h>

/* One encoder layer (BertLayer) on x; returns its output. */
static struct gen_tensor bert_layer(struct gen *g, const struct bert_cfg *c,
				    int64_t l, struct gen_tensor x,
				    struct gen_tensor mask)
{
	char p[48], nm[112];
	gen_fmt(p, sizeof p, "encoder.layer.%lld", (long long)l);
#define N(suffix) (gen_fmt(nm, sizeof nm, "%s.%s", p, suffix), nm)
	/* BertSelfAttention */
	struct gen_tensor q =
		gen_linear(g, N("attention.self.query"), x, c->hidden, true);
	struct gen_tensor k =
		gen_linear(g, N("attention.self.key"), x, c->hidden, true);
	struct gen_tensor v =
		gen_linear(g, N("attention.self.value"), x, c->hidden, true);
	gen_region(g, WL_REGION_CORE_ATTN); /* scores .. context */
	struct gen_tensor s =
		gen_attn_scores(g, N("attention.self.scores"), q, k, c->heads);
	s = gen_mask_add(g, N("attention.self.mask_add"), s, mask);
	s = gen_softmax(g, N("attention.self.softmax"), s);
	s = gen_dropout(g, N("attention.self.dropout"), s, BERT_DROPOUT);
	struct gen_tensor ctx =
		gen_attn_context(g, N("attention.self.context"), s, v);
	gen_region(g, WL_REGION_NONE);
	/* BertSelfOutput */
	struct gen_tensor o = gen_linear(g, N("attention.output.dense"), ctx,
					 c->hidden, true);
	o = gen_dropout(g, N("attention.output.dropout"), o, BERT_DROPOUT);
	o = gen_add(g, N("attention.output.add"), o, x);
	struct gen_tensor att = gen_layernorm(g, N("attention.output.LayerNorm"),
					      o);
	/* BertIntermediate, BertOutput */
	struct gen_tensor i =
		gen_linear(g, N("intermediate.dense"), att, c->inter, true);
	i = gen_gelu(g, N("intermediate.gelu"), i);
	o = gen_linear(g, N("output.dense"), i, c->hidden, true);
	o = gen_dropout(g, N("output.dropout"), o, BERT_DROPOUT);
	o = gen_add(g, N("output.add"), o, att);
	return gen_layernorm(g, N("output.LayerNorm"), o);
#undef N
}

static struct wl_workload *bert_build(const struct bert_cfg *c,
				      const struct wl_gen_args *a,
				      gms_err *err)
{
	int64_t seq = a->size ? a->size : BERT_DEFAULT_SEQ;
	if (seq < BERT_MIN_SEQ || seq > BERT_MAX_SEQ) {
		gms_errf(err,
			 "%s: sequence length %lld is out of range (%d to %d, "
			 "the number of position embeddings)",
			 c->name, (long long)seq, BERT_MIN_SEQ, BERT_MAX_SEQ);
		return NULL;
	}
	struct wl_gen_args args = *a;
	args.size = seq;
	if (a->framework == WL_FW_TF_GRAPH || a->framework == WL_FW_TF_EAGER)
		return gen_bert_tf1(c, &args, err);
	return gen_bert_fused(c, &args, err);
}

struct wl_workload *gen_bert_fused(const struct bert_cfg *c,
				   const struct wl_gen_args *a, gms_err *err)
{
	int64_t seq = a->size;
	if (seq < 1 || seq > c->max_pos) {
		gms_errf(err, "%s: sequence length %lld not in 1..%lld",
			 c->name, (long long)seq, (long long)c->max_pos);
		return NULL;
	}
	struct gen *g = gen_new(c->name, a, err);
	if (!g)
		return NULL;
	int64_t h = c->hidden;
	struct gen_tensor ids = gen_input_ids(g, "input_ids", seq);
	struct gen_tensor tt = gen_input_ids(g, "token_type_ids", seq);
	struct gen_tensor pos = gen_input_ids(g, "position_ids", seq);
	struct gen_tensor mask = gen_input_ids(g, "attention_mask", seq);
	/* BertEmbeddings */
	struct gen_tensor x = gen_embedding(g, "embeddings.word_embeddings",
					    ids, c->vocab, h);
	struct gen_tensor t = gen_embedding(
		g, "embeddings.token_type_embeddings", tt, BERT_TYPE_VOCAB, h);
	struct gen_tensor pe = gen_embedding(
		g, "embeddings.position_embeddings", pos, c->max_pos, h);
	x = gen_add(g, "embeddings.add_token_type", x, t);
	x = gen_add(g, "embeddings.add_position", x, pe);
	x = gen_layernorm(g, "embeddings.LayerNorm", x);
	x = gen_dropout(g, "embeddings.dropout", x, BERT_DROPOUT);
	for (int64_t l = 0; l < c->layers; l++) {
		gen_block(g, l); /* encoder.layer.l */
		x = bert_layer(g, c, l, x, mask);
	}
	gen_block(g, -1);
	/* BertPooler: dense + tanh on the [CLS] token */
	x = gen_slice(g, "pooler.first_token", x, 0, 1);
	x = gen_linear(g, "pooler.dense", x, h, true);
	x = gen_tanh(g, "pooler.activation", x);
	/* the classification head (not in the published counts) */
	x = gen_dropout(g, BERT_HEAD_PREFIX "dropout", x, BERT_DROPOUT);
	x = gen_linear(g, BERT_HEAD_PREFIX "classifier", x, BERT_CLASSES,
		       true);
	return gen_finish(g, x, err);
}

struct wl_workload *wl_gen_bert_base(const struct wl_gen_args *a,
				     gms_err *err)
{
	static const struct bert_cfg c = {"bert_base", 12, 768, 12, 3072,
					  BERT_VOCAB, BERT_MAX_SEQ};
	return bert_build(&c, a, err);
}

struct wl_workload *wl_gen_bert_large(const struct wl_gen_args *a,
				      gms_err *err)
{
	static const struct bert_cfg c = {"bert_large", 24, 1024, 16, 4096,
					  BERT_VOCAB, BERT_MAX_SEQ};
	return bert_build(&c, a, err);
}
