#!/usr/bin/python3
"""Write the benchmark models (random weights) as ONNX files.

    /usr/bin/python3 bench/make_models.py [OUTDIR] [--only NAME ...] [--list]

OUTDIR defaults to bench/.models (git-ignored). A model already there is kept: the export
costs a minute of the machine's two cores, and the weights do not change the timings.
Each model gets NAME.onnx plus NAME.json naming its input shapes (the symbolic dimensions
bound for the benchmark) and, for conv nets, the multiply-adds of one batch-1 run, from which
run.sh derives GFLOP/s.
"""

import argparse
import json
import os
import sys

import torch
import torch.nn as nn
import torchvision

torch.set_num_threads(1)
OPSET = 13


def conv_macs(model, example):
    """Multiply-adds of every Conv2d and Linear for one forward pass, from forward hooks."""
    total = [0]

    def conv_hook(m, inp, out):
        k = m.kernel_size[0] * m.kernel_size[1] * (m.in_channels // m.groups)
        total[0] += out.numel() * k

    def linear_hook(m, inp, out):
        total[0] += out.numel() * m.in_features

    hooks = []
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            hooks.append(m.register_forward_hook(conv_hook))
        elif isinstance(m, nn.Linear):
            hooks.append(m.register_forward_hook(linear_hook))
    with torch.no_grad():
        model(*example)
    for h in hooks:
        h.remove()
    return total[0]


class TinyYolo(nn.Module):
    """Tiny-YOLOv2's layout: 3x3 conv + BatchNorm + LeakyReLU(0.1) blocks with 2x2 max-pools,
    416x416 input, a 1x1 conv to 125 = 5 anchors x (20 classes + 5) channels."""

    def __init__(self):
        super().__init__()
        layers = []
        chans = [3, 16, 32, 64, 128, 256, 512]
        for i in range(6):
            layers += [nn.Conv2d(chans[i], chans[i + 1], 3, padding=1, bias=False), nn.BatchNorm2d(chans[i + 1]),
                       nn.LeakyReLU(0.1)]
            # The sixth pool keeps 13x13 (stride 1, padded on the right/bottom as in darknet).
            layers.append(nn.MaxPool2d(2, 2) if i < 5 else nn.Sequential(nn.ZeroPad2d((0, 1, 0, 1)), nn.MaxPool2d(2, 1)))
        for c_in, c_out in [(512, 1024), (1024, 1024)]:
            layers += [nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.LeakyReLU(0.1)]
        layers.append(nn.Conv2d(1024, 125, 1))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


class EncoderLayer(nn.Module):
    """A post-norm BERT layer written out, so the export is plain MatMul/Add/Softmax/LayerNorm."""

    def __init__(self, d, heads, ff):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.ln1 = nn.LayerNorm(d)
        self.ff1 = nn.Linear(d, ff)
        self.ff2 = nn.Linear(ff, d)
        self.ln2 = nn.LayerNorm(d)

    def forward(self, x):
        b, s, d = x.shape
        h = self.heads
        q, k, v = self.qkv(x).reshape(b, s, 3, h, d // h).permute(2, 0, 3, 1, 4)
        att = torch.softmax(q @ k.transpose(-1, -2) / (d // h) ** 0.5, dim=-1)
        ctx = (att @ v).transpose(1, 2).reshape(b, s, d)
        x = self.ln1(x + self.out(ctx))
        return self.ln2(x + self.ff2(nn.functional.gelu(self.ff1(x))))


class Bert(nn.Module):
    def __init__(self, vocab=8000, d=256, heads=4, layers=4, ff=1024, max_len=512):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(max_len, d)
        self.ln = nn.LayerNorm(d)
        self.layers = nn.ModuleList([EncoderLayer(d, heads, ff) for _ in range(layers)])
        self.pool = nn.Linear(d, d)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1]).unsqueeze(0)
        x = self.ln(self.tok(ids) + self.pos(pos))
        for layer in self.layers:
            x = layer(x)
        return x, torch.tanh(self.pool(x[:, 0]))


class LstmClassifier(nn.Module):
    def __init__(self, features=64, hidden=256, classes=10):
        super().__init__()
        self.lstm = nn.LSTM(features, hidden, num_layers=2, batch_first=True)
        self.fc = nn.Linear(hidden, classes)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.fc(out[:, -1])


def models():
    """name -> (module, example inputs, input names, dynamic axes, bench shapes, conv net?)"""
    img = lambda s: torch.rand(1, 3, s, s)
    batch_axes = {"input": {0: "batch"}, "output": {0: "batch"}}
    return {
        "resnet18": (torchvision.models.resnet18(), (img(224),), ["input"], batch_axes, {"input": [1, 3, 224, 224]}, True),
        "mobilenet_v2": (torchvision.models.mobilenet_v2(), (img(224),), ["input"], batch_axes,
                         {"input": [1, 3, 224, 224]}, True),
        "squeezenet1_1": (torchvision.models.squeezenet1_1(), (img(224),), ["input"], batch_axes,
                          {"input": [1, 3, 224, 224]}, True),
        # SiLU activations, squeeze-and-excitation gates and 5x5 stride-2 depthwise convolutions.
        "efficientnet_b0": (torchvision.models.efficientnet_b0(), (img(224),), ["input"], batch_axes,
                            {"input": [1, 3, 224, 224]}, True),
        "tiny_yolov2": (TinyYolo(), (img(416),), ["input"], batch_axes, {"input": [1, 3, 416, 416]}, True),
        "bert_encoder": (Bert(), (torch.randint(0, 8000, (1, 128)),), ["input_ids"],
                         {"input_ids": {0: "batch", 1: "seq"}, "output": {0: "batch", 1: "seq"}, "pooled": {0: "batch"}},
                         {"input_ids": [1, 128]}, False),
        "lstm_classifier": (LstmClassifier(), (torch.rand(1, 64, 64),), ["input"], batch_axes,
                            {"input": [1, 64, 64]}, False),
    }


def randomise_batchnorm(model, seed):
    """Fresh BatchNorms are near-identity in eval mode; random statistics make them real work."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=g) + 0.5)
                m.weight.copy_(torch.rand(m.weight.shape, generator=g) + 0.5)
                m.bias.copy_(torch.randn(m.bias.shape, generator=g) * 0.1)


def export(name, spec, outdir):
    model, example, names, axes, shapes, conv = spec
    torch.manual_seed(0)
    randomise_batchnorm(model, 1)
    model.eval()
    outputs = ["output", "pooled"] if name == "bert_encoder" else ["output"]
    path = os.path.join(outdir, name + ".onnx")
    with torch.no_grad():
        torch.onnx.export(model, example, path, input_names=names, output_names=outputs, dynamic_axes=axes,
                          opset_version=OPSET)
    meta = {"inputs": shapes, "dims": {"seq": 128} if name == "bert_encoder" else {}}
    if conv:
        meta["macs"] = conv_macs(model, example)
    with open(os.path.join(outdir, name + ".json"), "w") as f:
        json.dump(meta, f)
    return path


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir", nargs="?", default=os.path.join(here, ".models"))
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()
    specs = models()
    if args.list:
        print("\n".join(specs))
        return 0
    unknown = [n for n in (args.only or []) if n not in specs]
    if unknown:
        print("make_models.py: unknown model(s): " + ", ".join(unknown) + " (known: " + ", ".join(specs) + ")",
              file=sys.stderr)
        return 2
    os.makedirs(args.outdir, exist_ok=True)
    for name in args.only or specs:
        path = os.path.join(args.outdir, name + ".onnx")
        if os.path.exists(path) and os.path.exists(os.path.join(args.outdir, name + ".json")):
            continue
        print("exporting " + name, file=sys.stderr)
        export(name, specs[name], args.outdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
