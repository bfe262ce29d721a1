/*
 * gen_llm.c - decoder-only language models, one training step of causal
 * language modelling (next-token cross-entropy over every position), as
 * Hugging Face transformers' *ForCausalLM classes run them in training
 * mode. size = sequence length.
 *
 * Two families:
 *
 *   gpt2 (GPT2LMHeadModel; Radford et al. 2019): learned position
 *     embeddings, pre-LayerNorm blocks, multi-head attention with biases,
 *     MLP 4H with gelu_new, dropout 0.1 (embd, attn, resid), lm_head
 *     tied to wte.
 *   llama (LlamaForCausalLM; Touvron et al. 2023): RMSNorm, rotary
 *     position embeddings, grouped-query attention (kv_heads <= heads),
 *     SwiGLU MLP (gate, up, down), no biases, no dropout, lm_head untied
 *     (qwen2.5: q/k/v biases and tied embeddings, Qwen2ForCausalLM).
 *
 * PRESETS, each the model's config.json on the Hugging Face hub:
 *   gpt2          openai-community/gpt2: n_layer 12, n_embd 768, n_head
 *                 12, n_positions 1024, vocab_size 50257 (n_inner null:
 *                 4 * n_embd)
 *   gpt2-medium   openai-community/gpt2-medium: 24, 1024, 16
 *   gpt2-large    openai-community/gpt2-large: 36, 1280, 20
 *   gpt2-xl       openai-community/gpt2-xl: 48, 1600, 25
 *   llama3-8b     meta-llama/Meta-Llama-3-8B: hidden_size 4096,
 *                 intermediate_size 14336, num_hidden_layers 32,
 *                 num_attention_heads 32, num_key_value_heads 8,
 *                 vocab_size 128256, max_position_embeddings 8192,
 *                 tie_word_embeddings false
 *   llama2-7b     meta-llama/Llama-2-7b-hf: 4096, 11008, 32, 32, 32,
 *                 32000, 4096
 *   tinyllama-1.1b TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T:
 *                 2048, 5632, 22, 32, 4, 32000, 2048
 *   qwen2.5-0.5b  Qwen/Qwen2.5-0.5B: 896, 4864, 24, 14, 2, 151936,
 *                 32768, tie_word_embeddings true, q/k/v biases
 *                 (Qwen2Attention: q_proj, k_proj, v_proj bias=True)
 *   llama         llama3-8b's shape, to be changed with the arch keys
 *
 * PARAMETERS by hand (sum(p.numel() for p in model.parameters()), tied
 * weights once), H hidden, I ffn, V vocab, L layers, d = H/heads,
 * Hkv = kv_heads * d:
 *   gpt2:  V*H + P*H (P = 1024 positions) + L*(12H^2 + 13H) + 2H
 *     gpt2 124,439,808; medium 354,823,168; large 774,030,080;
 *     xl 1,557,611,200 (tests/test_gen_llm.c works each out)
 *   llama: 2*V*H (untied; V*H tied) + H (final norm) + L*(2H^2 +
 *     2H*Hkv [+ H + 2Hkv biases] + 3HI + 2H)
 *     llama3-8b 8,030,261,248; llama2-7b 6,738,415,616;
 *     tinyllama-1.1b 1,100,048,384; qwen2.5-0.5b 494,032,768
 *
 * FLOPs per token (the forward's matmuls, 2 per multiply-accumulate):
 * 2N' + attention, N' = the parameters the matmuls use (every weight
 * matrix, lm_head included, embeddings' lookups excluded), attention
 * 2 * 2 * seq * H per layer (QK^T and PV, no causal saving in eager);
 * training 3x that (the 6N of Kaplan et al. 2020, eq 2.1, plus the
 * attention term). Elementwise ops add their own, small, counts.
 *
 * ATTENTION (arch key attention):
 *   eager  as attn_implementation="eager": scores = QK^T (written),
 *          scaled (a new tensor: GPT-2's `attn_weights / torch.full(..)`,
 *          Llama's `* self.scaling`), masked, softmax, cast back to the
 *          value's dtype where they differ, dropout (GPT-2), PV; GQA's
 *          repeat_kv materialises k and v at the full head count (expand
 *          + reshape copies; modeling_llama.py repeat_kv).
 *          GPT-2: modeling_gpt2.py GPT2Attention._attn (transformers
 *          4.36): matmul, `/ torch.full([], value.size(-1) ** 0.5)`,
 *          torch.where(causal_mask, ...), softmax, `.type(value.dtype)`,
 *          attn_dropout, matmul. Llama: eager_attention_forward
 *          (transformers 4.48): matmul * scaling, + causal_mask,
 *          softmax(dim=-1, dtype=torch.float32).to(query.dtype),
 *          dropout(p=attention_dropout = 0.0: torch returns its input,
 *          no op), matmul.
 *   sdpa   one fused kernel (gen_sdpa: FlashAttention-2, causal), output
 *          and logsumexp kept; dropout inside the kernel (GPT-2).
 *
 * LOSS (arch key loss):
 *   full     lm_head writes the logits in the compute dtype; the loss
 *            upcasts them (ForCausalLMLoss, loss_utils.py, transformers
 *            4.46+: "logits = logits.float()") and cross_entropy keeps
 *            its fp32 log-probabilities for backward: rows x V x 4 bytes
 *            plus the upcast while it lives, the peak of small models
 *            with large vocabularies. All seq positions are scored (the
 *            last one's label is the ignore index).
 *   chunked  gen_fused_lm_loss: Liger Kernel's fused linear
 *            cross-entropy, nothing vocabulary-sized kept.
 *
 * Where the model departs from the PyTorch run:
 *   - GPT-2's c_attn (one Conv1D of H -> 3H whose output is split into
 *     q, k, v views) is three linears (the same parameters, FLOPs and
 *     saved bytes; under autocast its input is cast once, as for the
 *     one addmm); merge_heads' contiguous copy and Llama's transpose
 *     copies are not modelled (transients, as in gen_bert.c).
 *   - Masks: the causal mask (GPT-2's bias buffer, Llama's 4-D float
 *     mask built once a forward) is an int64 (1, seq) input here
 *     (gen_mask_add), as BERT's attention mask.
 *   - Rotary embeddings (q*cos + rotate_half(q)*sin) are one elementwise
 *     op whose backward reads dy only (cos and sin, seq x d, not
 *     counted); under autocast HF computes the rotated q in fp32 (cos is
 *     fp32) and the score matmul then casts it: the copy the matmul
 *     keeps is the same bf16 tensor as here, the fp32 transient is not
 *     modelled.
 *   - RMSNorm is one fused kernel (saved: the inverse RMS per row);
 *     Hugging Face's LlamaRMSNorm is Python ops that also keep the
 *     normalised x (one hidden-sized fp32 tensor more per norm) and,
 *     under torch 1.13, x^2 (MeanBackward1 saves its self): two more a
 *     norm, measured in tests/test_gen_llm.c (test_recorded_llama).
 *   - Python locals: HF's LlamaAttention.forward holds query_states,
 *     key_states and value_states until it returns (a transient of
 *     about 1.5 hidden-sized tensors during attention, not modelled),
 *     and the causal mask and cos/sin are not counted.
 *   - gelu_new (NewGELUActivation, activations.py: 0.5 * x * (1 +
 *     tanh(sqrt(2/pi) * (x + 0.044715 * pow(x, 3))))) is built op by op
 *     with what each keeps (pow: x; tanh: its output; the last mul: both
 *     factors); pow is on autocast's fp32 list, so under autocast the
 *     chain after it is fp32.
 */
#include "gen.h"

#include <stdio.h>
#include <string.h>

enum llm_family { LLM_GPT2, LLM_LLAMA };

struct llm_cfg {
	const char *name;
	enum llm_family family;
	int64_t layers, hidden, heads, kv_heads, ffn, vocab;
	int64_t max_pos;  /* GPT-2's wpe rows: the longest sequence */
	bool qkv_bias;	  /* llama family: biases on q, k, v (Qwen2) */
	bool tied;	  /* lm_head shares the token embedding */
	double dropout;	  /* GPT-2's embd/attn/resid_pdrop; 0: none */
};

#define GPT2_POS 1024
#define GPT2_VOCAB 50257
#define GPT2_DROPOUT 0.1

static const struct llm_cfg presets[] = {
	{"gpt2", LLM_GPT2, 12, 768, 12, 12, 3072, GPT2_VOCAB, GPT2_POS, true,
	 true, GPT2_DROPOUT},
	{"gpt2-medium", LLM_GPT2, 24, 1024, 16, 16, 4096, GPT2_VOCAB,
	 GPT2_POS, true, true, GPT2_DROPOUT},
	{"gpt2-large", LLM_GPT2, 36, 1280, 20, 20, 5120, GPT2_VOCAB, GPT2_POS,
	 true, true, GPT2_DROPOUT},
	{"gpt2-xl", LLM_GPT2, 48, 1600, 25, 25, 6400, GPT2_VOCAB, GPT2_POS,
	 true, true, GPT2_DROPOUT},
	{"llama", LLM_LLAMA, 32, 4096, 32, 8, 14336, 128256, 0, false, false,
	 0},
	{"llama3-8b", LLM_LLAMA, 32, 4096, 32, 8, 14336, 128256, 0, false,
	 false, 0},
	{"llama2-7b", LLM_LLAMA, 32, 4096, 32, 32, 11008, 32000, 0, false,
	 false, 0},
	{"tinyllama-1.1b", LLM_LLAMA, 22, 2048, 32, 4, 5632, 32000, 0, false,
	 false, 0},
	{"qwen2.5-0.5b", LLM_LLAMA, 24, 896, 14, 2, 4864, 151936, 0, true,
	 true, 0},
};

static const struct llm_cfg *preset(const char *name)
{
	for (size_t i = 0; i < sizeof presets / sizeof *presets; i++)
		if (!strcmp(presets[i].name, name))
			return &presets[i];
	return NULL;
}

int wl_llm_check(const char *gen, const struct wl_arch *a,
		 const char **key, gms_err *err)
{
	const struct llm_cfg *p = preset(gen);
	*key = NULL;
	if (!p)
		return gms_errf(err, "%s: not a language-model generator",
				gen);
	int64_t hid = a->hidden ? a->hidden : p->hidden;
	int64_t heads = a->heads ? a->heads : p->heads;
	int64_t kvh = a->kv_heads ? a->kv_heads
				  : p->family == LLM_GPT2 ? heads
							  : p->kv_heads;
	if (hid % heads) {
		*key = a->heads ? "heads" : "hidden";
		return gms_errf(err, "%s: hidden %lld is not a multiple of "
				     "heads %lld", gen, (long long)hid,
				(long long)heads);
	}
	if (kvh > heads || heads % kvh) {
		*key = a->kv_heads ? "kv_heads" : "heads";
		return gms_errf(err, "%s: heads %lld is not a multiple of "
				     "kv_heads %lld", gen, (long long)heads,
				(long long)kvh);
	}
	if (p->family == LLM_GPT2 && kvh != heads) {
		*key = "kv_heads";
		return gms_errf(err, "%s: GPT-2 has no grouped-query "
				     "attention (kv_heads must equal heads)",
				gen);
	}
	return 0;
}

/* GPT-2's gelu_new op by op (header). */
static struct gen_tensor gelu_new(struct gen *g, const char *p,
				  struct gen_tensor x)
{
	char nm[160];
#define N(s) (gen_fmt(nm, sizeof nm, "%s.%s", p, s), nm)
	struct gen_tensor xf = gen_precision(g) == WL_PREC_FP16_AUTO ||
					       gen_precision(g) ==
						       WL_PREC_BF16_AUTO
				       ? gen_cast(g, N("pow.autocast_in"), x, 4)
				       : x;
	/* pow(x, 3.0): pow_backward reads self (a GELU-kind op: backward
	 * reads x) */
	struct gen_tensor c = gen_gelu(g, N("pow"), xf);
	c = gen_scale(g, N("mul_0044715"), c);
	c = gen_add(g, N("add_x"), x, c);
	c = gen_scale(g, N("mul_sqrt_2_pi"), c);
	c = gen_tanh(g, N("tanh"), c);
	c = gen_scale(g, N("add_1"), c);
	struct gen_tensor h = gen_scale(g, N("mul_half"), x);
	return gen_tf(g, N("mul"), GEN_TF_MUL, h, c);
#undef N
}

/* A projection, with a LoRA adapter when the arch asks (PEFT's
 * LoraLayer Linear.forward: `result = self.base_layer(x)` then
 * `result = result + lora_B(lora_A(dropout(x))) * scaling`; lora_dropout
 * 0.0, PEFT's default, makes dropout nn.Identity). The base is frozen
 * (requires_grad=False: no gradient, no state), lora_A (r x in, no
 * bias) and lora_B (out x r) train. */
static struct gen_tensor proj(struct gen *g, const struct wl_arch *a,
			      const char *name, struct gen_tensor x,
			      int64_t out, bool bias, bool adapt)
{
	char nm[200];
	struct gen_tensor y = gen_linear(g, name, x, out, bias);
	if (!a->lora || !adapt)
		return y;
	gen_set_frozen(g, false);
	gen_fmt(nm, sizeof nm, "%s.lora_A", name);
	struct gen_tensor t = gen_linear(g, nm, x, a->lora, false);
	gen_fmt(nm, sizeof nm, "%s.lora_B", name);
	t = gen_linear(g, nm, t, out, false);
	gen_fmt(nm, sizeof nm, "%s.lora_scaling", name);
	t = gen_scale(g, nm, t);
	gen_set_frozen(g, true);
	gen_fmt(nm, sizeof nm, "%s.lora_add", name);
	return gen_add(g, nm, y, t);
}

/* Attention from q, k, v (after rotary). */
static struct gen_tensor attention(struct gen *g, const struct llm_cfg *c,
				   const struct wl_arch *a, const char *p,
				   struct gen_tensor q, struct gen_tensor k,
				   struct gen_tensor v, struct gen_tensor mask)
{
	char nm[160];
#define N(s) (gen_fmt(nm, sizeof nm, "%s.%s", p, s), nm)
	/* core attention (gen_region), Megatron's core_attention module:
	 * from the scores to the context, or the fused kernel; repeat_kv
	 * belongs to it too (Megatron's DotProductAttention expands the
	 * grouped k and v inside core_attention) */
	gen_region(g, WL_REGION_CORE_ATTN);
	struct gen_tensor ctx;
	if (a->attention == WL_ATTN_SDPA) {
		ctx = gen_sdpa(g, N("sdpa"), q, k, v, c->heads, true);
		gen_region(g, WL_REGION_NONE);
		return ctx;
	}
	if (c->kv_heads != c->heads) {
		/* repeat_kv: expand + reshape, a copy at heads * d */
		k = gen_tf_op(g, N("repeat_kv_k"), GEN_TF_TRANSPOSE, k,
			      gen_none(), c->hidden, k.h, 1);
		v = gen_tf_op(g, N("repeat_kv_v"), GEN_TF_TRANSPOSE, v,
			      gen_none(), c->hidden, v.h, 1);
	}
	struct gen_tensor s = gen_attn_scores(g, N("scores"), q, k, c->heads);
	s = gen_scale(g, N("scale"), s);
	s = gen_mask_add(g, N("causal_mask"), s, mask);
	if (c->family == LLM_GPT2) {
		s = gen_softmax(g, N("softmax"), s);
		s = gen_cast(g, N("softmax.to_value_dtype"), s,
			     gen_esz(g, v));
		s = gen_dropout(g, N("attn_dropout"), s, c->dropout);
	} else {
		s = gen_softmax_fp32(g, N("softmax"), s);
		s = gen_cast(g, N("softmax.to_query_dtype"), s,
			     gen_esz(g, q));
	}
	ctx = gen_attn_context(g, N("context"), s, v);
	gen_region(g, WL_REGION_NONE);
	return ctx;
#undef N
}

static struct gen_tensor gpt2_block(struct gen *g, const struct llm_cfg *c,
				    const struct wl_arch *a, int64_t l,
				    struct gen_tensor x, struct gen_tensor mask)
{
	char p[48], nm[160];
	gen_fmt(p, sizeof p, "transformer.h.%lld", (long long)l);
#define N(s) (gen_fmt(nm, sizeof nm, "%s.%s", p, s), nm)
	struct gen_tensor h = gen_layernorm(g, N("ln_1"), x);
	/* c_attn's one addmm casts its input once under autocast */
	h = gen_cast(g, N("attn.c_attn.autocast_in"), h, gen_compute_esz(g));
	/* LoRA: PEFT's target for GPT-2 is c_attn (all three) */
	struct gen_tensor q = proj(g, a, N("attn.c_attn_q"), h, c->hidden,
				   true, true);
	struct gen_tensor k = proj(g, a, N("attn.c_attn_k"), h, c->hidden,
				   true, true);
	struct gen_tensor v = proj(g, a, N("attn.c_attn_v"), h, c->hidden,
				   true, true);
	char ap[64];
	gen_fmt(ap, sizeof ap, "%s.attn", p);
	struct gen_tensor o = attention(g, c, a, ap, q, k, v, mask);
	o = gen_linear(g, N("attn.c_proj"), o, c->hidden, true);
	o = gen_dropout(g, N("attn.resid_dropout"), o, c->dropout);
	x = gen_add(g, N("add_attn"), x, o);
	h = gen_layernorm(g, N("ln_2"), x);
	h = gen_linear(g, N("mlp.c_fc"), h, c->ffn, true);
	char mp[64];
	gen_fmt(mp, sizeof mp, "%s.mlp.act", p);
	h = gelu_new(g, mp, h);
	h = gen_linear(g, N("mlp.c_proj"), h, c->hidden, true);
	h = gen_dropout(g, N("mlp.dropout"), h, c->dropout);
	return gen_add(g, N("add_mlp"), x, h);
#undef N
}

static struct gen_tensor llama_block(struct gen *g, const struct llm_cfg *c,
				     const struct wl_arch *a, int64_t l,
				     struct gen_tensor x,
				     struct gen_tensor mask)
{
	char p[48], nm[160];
	gen_fmt(p, sizeof p, "model.layers.%lld", (long long)l);
#define N(s) (gen_fmt(nm, sizeof nm, "%s.%s", p, s), nm)
	int64_t kvd = c->hidden / c->heads * c->kv_heads;
	struct gen_tensor h = gen_rmsnorm(g, N("input_layernorm"), x);
	/* LoRA: PEFT's default targets for Llama and Qwen2 are q_proj
	 * and v_proj (TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING) */
	struct gen_tensor q = proj(g, a, N("self_attn.q_proj"), h, c->hidden,
				   c->qkv_bias, true);
	struct gen_tensor k = proj(g, a, N("self_attn.k_proj"), h, kvd,
				   c->qkv_bias, false);
	struct gen_tensor v = proj(g, a, N("self_attn.v_proj"), h, kvd,
				   c->qkv_bias, true);
	q = gen_scale(g, N("self_attn.rotary_q"), q);
	k = gen_scale(g, N("self_attn.rotary_k"), k);
	char ap[64];
	gen_fmt(ap, sizeof ap, "%s.self_attn", p);
	struct gen_tensor o = attention(g, c, a, ap, q, k, v, mask);
	o = gen_linear(g, N("self_attn.o_proj"), o, c->hidden, false);
	x = gen_add(g, N("add_attn"), x, o);
	h = gen_rmsnorm(g, N("post_attention_layernorm"), x);
	/* LlamaMLP.forward: down_proj(act_fn(gate_proj(x)) * up_proj(x)),
	 * Python's order: gate, silu, up */
	struct gen_tensor gt = gen_linear(g, N("mlp.gate_proj"), h, c->ffn,
					  false);
	gt = gen_silu(g, N("mlp.act_fn"), gt);
	struct gen_tensor up = gen_linear(g, N("mlp.up_proj"), h, c->ffn,
					  false);
	h = gen_tf(g, N("mlp.mul"), GEN_TF_MUL, gt, up);
	h = gen_linear(g, N("mlp.down_proj"), h, c->hidden, false);
	return gen_add(g, N("add_mlp"), x, h);
#undef N
}

static struct wl_workload *llm_build(const char *name,
				     const struct wl_gen_args *a,
				     gms_err *err)
{
	const struct llm_cfg *p = preset(name);
	const char *key;
	if (!p || wl_llm_check(name, &a->arch, &key, err) < 0)
		return p ? NULL
			 : (gms_errf(err, "%s: no such preset", name), NULL);
	struct llm_cfg c = *p;
	const struct wl_arch *ar = &a->arch;
	if (ar->layers)
		c.layers = ar->layers;
	if (ar->hidden)
		c.hidden = ar->hidden;
	if (ar->heads)
		c.heads = ar->heads;
	c.kv_heads = ar->kv_heads ? ar->kv_heads
				  : c.family == LLM_GPT2 ? c.heads : c.kv_heads;
	if (ar->ffn)
		c.ffn = ar->ffn;
	else if (c.family == LLM_GPT2)
		c.ffn = 4 * c.hidden; /* n_inner null */
	if (ar->vocab)
		c.vocab = ar->vocab;
	int64_t seq = a->size;
	if (c.family == LLM_GPT2 && seq > c.max_pos) {
		gms_errf(err, "%s: sequence length %lld is more than the %lld "
			      "position embeddings", name, (long long)seq,
			 (long long)c.max_pos);
		return NULL;
	}
	struct gen *g = gen_new(name, a, err);
	if (!g)
		return NULL;
	gen_set_frozen(g, ar->lora > 0);
	struct gen_tensor ids = gen_input_ids(g, "input_ids", seq);
	/* the fused kernel takes is_causal, no mask tensor */
	struct gen_tensor mask =
		a->arch.attention == WL_ATTN_EAGER
			? gen_input_ids(g, "attention_mask", seq)
			: gen_none();
	struct gen_tensor x;
	const char *emb;
	if (c.family == LLM_GPT2) {
		emb = "transformer.wte";
		struct gen_tensor pos = gen_input_ids(g, "position_ids", seq);
		x = gen_embedding(g, emb, ids, c.vocab, c.hidden);
		struct gen_tensor pe = gen_embedding(g, "transformer.wpe", pos,
						     c.max_pos, c.hidden);
		x = gen_add(g, "transformer.add_wpe", x, pe);
		x = gen_dropout(g, "transformer.drop", x, c.dropout);
		for (int64_t l = 0; l < c.layers; l++) {
			gen_block(g, l); /* transformer.h.l */
			x = gpt2_block(g, &c, ar, l, x, mask);
		}
		gen_block(g, -1);
		x = gen_layernorm(g, "transformer.ln_f", x);
	} else {
		emb = "model.embed_tokens";
		x = gen_embedding(g, emb, ids, c.vocab, c.hidden);
		for (int64_t l = 0; l < c.layers; l++) {
			gen_block(g, l); /* model.layers.l */
			x = llama_block(g, &c, ar, l, x, mask);
		}
		gen_block(g, -1);
		x = gen_rmsnorm(g, "model.norm", x);
	}
	char wn[64];
	gen_fmt(wn, sizeof wn, "%s.weight", emb);
	uint32_t tw = c.tied ? gen_param_find(g, wn) : GEN_NONE;
	if (ar->loss == WL_LOSS_CHUNKED) {
		gen_fused_lm_loss(g, "lm_head", x, c.vocab, tw);
		return gen_finish(g, gen_none(), err);
	}
	struct gen_tensor logits =
		c.tied ? gen_linear_tied(g, "lm_head", x, c.vocab, tw, false)
		       : gen_linear(g, "lm_head", x, c.vocab, false);
	logits = gen_cast(g, "lm_head.float", logits, 4);
	gen_loss_nll(g, "loss", logits);
	return gen_finish(g, gen_none(), err);
}

#define LLM_BUILDER(fn, nm)                                                    \
	struct wl_workload *fn(const struct wl_gen_args *a, gms_err *err);     \
	struct wl_workload *fn(const struct wl_gen_args *a, gms_err *err)      \
	{                                                                      \
		return llm_build(nm, a, err);                                  \
	}
LLM_BUILDER(gen_build_gpt2, "gpt2")
LLM_BUILDER(gen_build_gpt2_medium, "gpt2-medium")
LLM_BUILDER(gen_build_gpt2_large, "gpt2-large")
LLM_BUILDER(gen_build_gpt2_xl, "gpt2-xl")
LLM_BUILDER(gen_build_llama, "llama")
LLM_BUILDER(gen_build_llama3_8b, "llama3-8b")
LLM_BUILDER(gen_build_llama2_7b, "llama2-7b")
LLM_BUILDER(gen_build_tinyllama, "tinyllama-1.1b")
LLM_BUILDER(gen_build_qwen25_05b, "qwen2.5-0.5b")
