# A small Llama-style decoder written as Hugging Face transformers 4.48
# writes LlamaForCausalLM with attn_implementation="eager"
# (models/llama/modeling_llama.py), in plain torch (transformers is not
# installed here), fp32:
#   LlamaRMSNorm.forward: hidden_states.to(torch.float32);
#     variance = hidden_states.pow(2).mean(-1, keepdim=True);
#     hidden_states * torch.rsqrt(variance + eps);
#     self.weight * hidden_states.to(input_dtype)
#   LlamaRotaryEmbedding.forward (@torch.no_grad, once a forward in
#     LlamaModel): inv_freq @ position_ids, cat((freqs, freqs)), cos, sin
#   apply_rotary_pos_emb: q * cos + rotate_half(q) * sin, rotate_half =
#     cat((-x2, x1), dim=-1); the same for k
#   LlamaAttention.forward: q/k/v_proj(x).view(..., -1, head_dim)
#     .transpose(1, 2) (k, v with num_key_value_heads < heads: GQA),
#     eager_attention_forward, reshape(...).contiguous(), o_proj
#   eager_attention_forward: repeat_kv (expand + reshape) of k and v;
#     matmul(q, k.transpose(2, 3)) * scaling; + causal_mask;
#     softmax(dim=-1, dtype=torch.float32).to(query.dtype);
#     dropout(p=attention_dropout=0.0); matmul; transpose(1, 2).contiguous()
#   LlamaMLP.forward: down_proj(act_fn(gate_proj(x)) * up_proj(x)), silu
#   LlamaDecoderLayer.forward: residual + self_attn(input_layernorm(x)),
#     residual + mlp(post_attention_layernorm(x))
#   LlamaModel: embed_tokens, the 4-D float causal mask built once
#     (_prepare_4d_causal_attention_mask_with_cache_position: torch.full
#     of finfo.min, triu(diagonal=1), *= arange > cache_position, expand),
#     position_embeddings (cos, sin) held for the whole forward, layers,
#     norm. Python locals as HF names them (query_states, key_states,
#     value_states live until LlamaAttention.forward returns; residual),
#     since they decide when torch frees a tensor.
#   LlamaForCausalLM: lm_head = nn.Linear(hidden, vocab, bias=False),
#     untied (tie_word_embeddings false); ForCausalLMLoss (loss_utils.py):
#     logits.float() then cross_entropy over every position (the recorder
#     applies it to the (batch*seq, vocab) logits this returns).
# Shapes: 2 layers, hidden 256, 4 heads (head_dim 64), 2 kv heads, ffn
# 688, vocab 4096, seq 64 (the recorder's --input 2,64); no biases
# (attention_bias, mlp_bias false).
import torch
from torch import nn

L, H, A, KV, FFN, V, S = 2, 256, 4, 2, 688, 4096, 64
D = H // A
EPS = 1e-6
THETA = 10000.0


class RMSNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(H))

    def forward(self, x):
        dt = x.dtype
        x = x.to(torch.float32)
        variance = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(variance + EPS)
        return self.weight * x.to(dt)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(
        batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen,
                                 head_dim)


def eager_attention_forward(module, query, key, value, attention_mask,
                            scaling, dropout=0.0):
    key_states = repeat_kv(key, module.num_key_value_groups)
    value_states = repeat_kv(value, module.num_key_value_groups)
    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    if attention_mask is not None:
        causal_mask = attention_mask[:, :, :, : key_states.shape[-2]]
        attn_weights = attn_weights + causal_mask
    attn_weights = nn.functional.softmax(attn_weights, dim=-1,
                                         dtype=torch.float32).to(query.dtype)
    attn_weights = nn.functional.dropout(attn_weights, p=dropout,
                                         training=module.training)
    attn_output = torch.matmul(attn_weights, value_states)
    attn_output = attn_output.transpose(1, 2).contiguous()
    return attn_output, attn_weights


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.num_key_value_groups = A // KV
        self.scaling = D ** -0.5
        self.attention_dropout = 0.0
        self.q_proj = nn.Linear(H, A * D, bias=False)
        self.k_proj = nn.Linear(H, KV * D, bias=False)
        self.v_proj = nn.Linear(H, KV * D, bias=False)
        self.o_proj = nn.Linear(A * D, H, bias=False)

    def forward(self, hidden_states, position_embeddings, attention_mask):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, D)
        query_states = self.q_proj(hidden_states).view(
            hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(
            hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(
            hidden_shape).transpose(1, 2)
        cos, sin = position_embeddings
        query_states, key_states = apply_rotary_pos_emb(
            query_states, key_states, cos, sin)
        attn_output, attn_weights = eager_attention_forward(
            self, query_states, key_states, value_states, attention_mask,
            dropout=0.0 if not self.training else self.attention_dropout,
            scaling=self.scaling)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        attn_output = self.o_proj(attn_output)
        return attn_output, attn_weights


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate_proj = nn.Linear(H, FFN, bias=False)
        self.up_proj = nn.Linear(H, FFN, bias=False)
        self.down_proj = nn.Linear(FFN, H, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        down_proj = self.down_proj(self.act_fn(self.gate_proj(x)) *
                                   self.up_proj(x))
        return down_proj


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.self_attn = Attention()
        self.mlp = MLP()
        self.input_layernorm = RMSNorm()
        self.post_attention_layernorm = RMSNorm()

    def forward(self, hidden_states, attention_mask, position_embeddings):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states, self_attn_weights = self.self_attn(
            hidden_states=hidden_states,
            position_embeddings=position_embeddings,
            attention_mask=attention_mask)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        hidden_states = residual + hidden_states
        return (hidden_states,)


class RotaryEmbedding(nn.Module):
    def __init__(self):
        super().__init__()
        inv_freq = 1.0 / (THETA ** (torch.arange(0, D, 2, dtype=torch.int64)
                                    .float() / D))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.attention_scaling = 1.0

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(
            position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded.float() @
                 position_ids_expanded.float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = emb.cos()
        sin = emb.sin()
        cos = cos * self.attention_scaling
        sin = sin * self.attention_scaling
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


class Llama(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_tokens = nn.Embedding(V, H)
        self.layers = nn.ModuleList([Layer() for _ in range(L)])
        self.norm = RMSNorm()
        self.rotary_emb = RotaryEmbedding()
        self.lm_head = nn.Linear(H, V, bias=False)

    def model(self, input_ids):
        inputs_embeds = self.embed_tokens(input_ids)
        n = inputs_embeds.shape[1]
        cache_position = torch.arange(0, n)
        position_ids = cache_position.unsqueeze(0)
        dtype = inputs_embeds.dtype
        min_dtype = torch.finfo(dtype).min
        causal_mask = torch.full((n, n), fill_value=min_dtype, dtype=dtype)
        causal_mask = torch.triu(causal_mask, diagonal=1)
        causal_mask *= torch.arange(n) > cache_position.reshape(-1, 1)
        causal_mask = causal_mask[None, None, :, :].expand(
            inputs_embeds.shape[0], 1, -1, -1)
        hidden_states = inputs_embeds
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        for decoder_layer in self.layers:
            layer_outputs = decoder_layer(
                hidden_states, attention_mask=causal_mask,
                position_embeddings=position_embeddings)
            hidden_states = layer_outputs[0]
        hidden_states = self.norm(hidden_states)
        return hidden_states

    def forward(self, input_ids):
        hidden_states = self.model(input_ids)
        logits = self.lm_head(hidden_states[:, -0:, :])
        # ForCausalLMLoss: logits.float(), then cross_entropy over the
        # flattened positions (the recorder's loss)
        logits = logits.float()
        return logits.view(-1, V)


def make_model():
    return Llama()
