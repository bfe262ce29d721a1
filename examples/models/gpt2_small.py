# gpt2_small.py - a GPT-2-small-sized model for gpumemsim-record (issue 35):
# GPT-2's block (Radford et al. 2019, "Language Models are Unsupervised
# Multitask Learners", 2.3: layer norm moved to each sub-block's input, a
# final layer norm; 117M model: d 768, 12 heads, vocabulary 50,257, context
# 1024) with LAYERS blocks, learned positions and the output projection tied
# to the token embedding. make_model(): 2 blocks, context 256.
#   build/gpumemsim-record --model examples/models/gpt2_small.py:make_model \
#       --input 4,256 --input-dtype int64 --vocab 50257 --optimizer adam \
#       -o gpt2-4-recorded.log
# The output is (batch * sequence, vocabulary) logits, as cross entropy wants.
import math

import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)

    def forward(self, x, mask):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2)
                   for z in (q, k, v))
        a = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        a = a.masked_fill(mask[:t, :t], float("-inf")).softmax(-1)
        y = (a @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.out(nn.functional.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, layers=2, d=768, heads=12, vocab=50257, ctx=256):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.wte.weight  # tied
        self.register_buffer(
            "mask", torch.triu(torch.ones(ctx, ctx, dtype=torch.bool), 1))

    def forward(self, idx):
        b, t = idx.shape
        pos = torch.arange(t, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for blk in self.blocks:
            x = blk(x, self.mask)
        return self.head(self.ln_f(x)).view(b * t, -1)


def make_model():
    return GPT()
