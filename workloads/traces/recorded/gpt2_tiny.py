# A small GPT-2 written as Hugging Face transformers 4.36 writes
# GPT2LMHeadModel in eager mode (modeling_gpt2.py): Conv1D c_attn (one
# addmm) split into q, k, v; _attn: matmul, / sqrt(d), torch.where causal
# mask, softmax, .type(value.dtype), attn_dropout, matmul; merge heads;
# c_proj, resid_dropout; MLP c_fc, NewGELU (activations.py), c_proj,
# dropout; ln_f; lm_head tied to wte. Returns (batch*seq, vocab) logits.
import math
import torch
from torch import nn

L, H, A, V, S = 2, 64, 4, 1000, 32


class Conv1D(nn.Module):
    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.02)
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) *
                                       (x + 0.044715 * torch.pow(x, 3.0))))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(H)
        self.c_attn = Conv1D(3 * H, H)
        self.c_proj = Conv1D(H, H)
        self.attn_dropout = nn.Dropout(0.1)
        self.resid_dropout = nn.Dropout(0.1)
        self.ln_2 = nn.LayerNorm(H)
        self.c_fc = Conv1D(4 * H, H)
        self.mlp_proj = Conv1D(H, 4 * H)
        self.mlp_dropout = nn.Dropout(0.1)

    def split(self, t):
        return t.view(t.size()[:-1] + (A, H // A)).permute(0, 2, 1, 3)

    def forward(self, x):
        h = self.ln_1(x)
        q, k, v = self.c_attn(h).split(H, dim=2)
        q, k, v = self.split(q), self.split(k), self.split(v)
        w = torch.matmul(q, k.transpose(-1, -2))
        w = w / torch.full([], v.size(-1) ** 0.5, dtype=w.dtype)
        n = q.size(-2)
        mask = torch.ones(n, n, dtype=torch.bool).tril().view(1, 1, n, n)
        w = torch.where(mask, w, torch.full([], torch.finfo(w.dtype).min))
        w = nn.functional.softmax(w, dim=-1)
        w = w.type(v.dtype)
        w = self.attn_dropout(w)
        o = torch.matmul(w, v)
        o = o.permute(0, 2, 1, 3).contiguous()
        o = o.view(o.size()[:-2] + (H,))
        o = self.resid_dropout(self.c_proj(o))
        x = x + o
        h = self.mlp_proj(gelu_new(self.c_fc(self.ln_2(x))))
        return x + self.mlp_dropout(h)


class GPT2(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(V, H)
        self.wpe = nn.Embedding(1024, H)
        self.drop = nn.Dropout(0.1)
        self.h = nn.ModuleList([Block() for _ in range(L)])
        self.ln_f = nn.LayerNorm(H)

    def forward(self, ids):
        pos = torch.arange(0, ids.size(-1), dtype=torch.long).unsqueeze(0)
        x = self.drop(self.wte(ids) + self.wpe(pos))
        for b in self.h:
            x = b(x)
        x = self.ln_f(x)
        logits = nn.functional.linear(x, self.wte.weight)
        return logits.view(-1, V)


def make_model():
    return GPT2()
