"""Writes an HF-style BERT-tiny (2 layers, hidden 128, 2 heads) with dynamic
`batch` and `seq` axes, as a user would export one from transformers: the
attention reshapes read x.size() at run time, so the exported graph carries
~100 small Shape/Gather/Unsqueeze/Concat nodes on the symbolic dims.

    /usr/bin/python3 bench/dynamic/make_bert_tiny.py OUT.onnx [--opset 14]

Written by hand in torch (transformers is not installed here); the layer
structure and the extended attention mask follow BertModel. Four token types
instead of two, so that the benches' random ids (0..3) stay in range.
"""
import argparse
import math

import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads, self.head = heads, d // heads
        self.q, self.k, self.v = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)

    def split(self, x):
        # As BertSelfAttention.transpose_for_scores: the new shape from x.size().
        shape = x.size()[:-1] + (self.heads, self.head)
        return x.view(shape).permute(0, 2, 1, 3)

    def forward(self, x, mask):
        q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head) + mask
        ctx = torch.matmul(scores.softmax(-1), v).permute(0, 2, 1, 3).contiguous()
        return ctx.view(ctx.size()[:-2] + (self.heads * self.head,))


class Layer(nn.Module):
    def __init__(self, d, heads, ff):
        super().__init__()
        self.att = SelfAttention(d, heads)
        self.att_out, self.ln1 = nn.Linear(d, d), nn.LayerNorm(d, eps=1e-12)
        self.inter, self.out, self.ln2 = nn.Linear(d, ff), nn.Linear(ff, d), nn.LayerNorm(d, eps=1e-12)

    def forward(self, x, mask):
        x = self.ln1(x + self.att_out(self.att(x, mask)))
        return self.ln2(x + self.out(nn.functional.gelu(self.inter(x))))


class BertTiny(nn.Module):
    def __init__(self, vocab=30522, d=128, heads=2, layers=2, ff=512, max_len=512):
        super().__init__()
        self.word, self.pos, self.token_type = nn.Embedding(vocab, d), nn.Embedding(max_len, d), nn.Embedding(4, d)
        self.ln = nn.LayerNorm(d, eps=1e-12)
        self.layers = nn.ModuleList([Layer(d, heads, ff) for _ in range(layers)])
        self.pool = nn.Linear(d, d)

    def forward(self, input_ids, attention_mask, token_type_ids):
        seq = input_ids.size(1)
        pos = torch.arange(seq, dtype=torch.long).unsqueeze(0).expand_as(input_ids)
        x = self.ln(self.word(input_ids) + self.pos(pos) + self.token_type(token_type_ids))
        mask = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
        for layer in self.layers:
            x = layer(x, mask)
        return x, torch.tanh(self.pool(x[:, 0]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--opset", type=int, default=14)
    a = ap.parse_args()
    torch.manual_seed(0)
    m = BertTiny().eval()
    ids = torch.randint(0, 30522, (1, 8))
    args = (ids, torch.ones(1, 8, dtype=torch.long), torch.zeros(1, 8, dtype=torch.long))
    axes = {n: {0: "batch", 1: "seq"} for n in ("input_ids", "attention_mask", "token_type_ids", "last_hidden_state")}
    axes["pooler_output"] = {0: "batch"}
    torch.onnx.export(m, args, a.out, input_names=["input_ids", "attention_mask", "token_type_ids"],
                      output_names=["last_hidden_state", "pooler_output"], dynamic_axes=axes, opset_version=a.opset,
                      do_constant_folding=True)


if __name__ == "__main__":
    main()
