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
#     of finfo.min, triu(diagonal=1)), layers, norm
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


def repeat_kv(x, n_rep):
    b, kvh, slen, d = x.shape
    if n_rep == 1:
        return x
    x = x[:, :, None, :, :].expand(b, kvh, n_rep, slen, d)
    return x.reshape(b, kvh * n_rep, slen, d)


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.q_proj = nn.Linear(H, A * D, bias=False)
        self.k_proj = nn.Linear(H, KV * D, bias=False)
        self.v_proj = nn.Linear(H, KV * D, bias=False)
        self.o_proj = nn.Linear(A * D, H, bias=False)
        self.scaling = D ** -0.5

    def forward(self, x, cos, sin, mask):
        shape = x.shape[:-1]
        hs = (*shape, -1, D)
        q = self.q_proj(x).view(hs).transpose(1, 2)
        k = self.k_proj(x).view(hs).transpose(1, 2)
        v = self.v_proj(x).view(hs).transpose(1, 2)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        q = (q * cos) + (rotate_half(q) * sin)
        k = (k * cos) + (rotate_half(k) * sin)
        k = repeat_kv(k, A // KV)
        v = repeat_kv(v, A // KV)
        w = torch.matmul(q, k.transpose(2, 3)) * self.scaling
        w = w + mask[:, :, :, : k.shape[-2]]
        w = nn.functional.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        w = nn.functional.dropout(w, p=0.0, training=self.training)
        o = torch.matmul(w, v)
        o = o.transpose(1, 2).contiguous()
        o = o.reshape(*shape, -1).contiguous()
        return self.o_proj(o)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate_proj = nn.Linear(H, FFN, bias=False)
        self.up_proj = nn.Linear(H, FFN, bias=False)
        self.down_proj = nn.Linear(FFN, H, bias=False)

    def forward(self, x):
        return self.down_proj(nn.functional.silu(self.gate_proj(x)) *
                              self.up_proj(x))


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.self_attn = Attention()
        self.mlp = MLP()
        self.input_layernorm = RMSNorm()
        self.post_attention_layernorm = RMSNorm()

    def forward(self, x, cos, sin, mask):
        r = x
        x = self.self_attn(self.input_layernorm(x), cos, sin, mask)
        x = r + x
        r = x
        x = self.mlp(self.post_attention_layernorm(x))
        return r + x


class Llama(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_tokens = nn.Embedding(V, H)
        self.layers = nn.ModuleList([Layer() for _ in range(L)])
        self.norm = RMSNorm()
        self.lm_head = nn.Linear(H, V, bias=False)
        inv = 1.0 / (THETA ** (torch.arange(0, D, 2, dtype=torch.int64)
                                .float() / D))
        self.register_buffer("inv_freq", inv, persistent=False)

    def rotary(self, x, pos):
        with torch.no_grad():
            f = self.inv_freq[None, :, None].float().expand(
                pos.shape[0], -1, 1)
            p = pos[:, None, :].float()
            freqs = (f @ p).transpose(1, 2)
            emb = torch.cat((freqs, freqs), dim=-1)
            return emb.cos().to(x.dtype), emb.sin().to(x.dtype)

    def forward(self, ids):
        n = ids.size(-1)
        x = self.embed_tokens(ids)
        pos = torch.arange(0, n, dtype=torch.long).unsqueeze(0)
        mn = torch.finfo(x.dtype).min
        mask = torch.full((n, n), mn, dtype=x.dtype).triu(diagonal=1)
        mask = mask[None, None, :, :].expand(ids.size(0), 1, -1, -1)
        cos, sin = self.rotary(x, pos)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        x = self.norm(x)
        logits = self.lm_head(x).float()
        return logits.view(-1, V)


def make_model():
    return Llama()
