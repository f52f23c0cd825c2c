#!/usr/bin/python3
"""A held-out benchmark set (bench/run.sh --set extra): model families that neither the six
default models nor the wide table hold, exported as torch 1.13's exporter writes them, to see how
singa does on models it was not tuned for. Random weights, batch 1.

    /usr/bin/python3 bench/extra_models.py [OUTDIR] [--only NAME ...] [--list]

Each model gets NAME.onnx and NAME.json (inputs, symbolic dims, conv multiply-adds) in OUTDIR
(default bench/.models); a model already there is kept. The families: MobileNetV3 (HardSwish at
opset 14+, HardSigmoid * x below it; HardSigmoid squeeze-excite), ShuffleNetV2 (channel shuffle
as Reshape/Transpose/Reshape), ResNeXt (grouped 3x3, group width 4), SqueezeNet 1.0,
EfficientNet-B1 at 240, RegNetX (grouped 3x3, group width 16), Swin-T (shifted windows),
ViT-B/16 at 112, a YOLOv5-style detector (SiLU, SPPF, nearest x2 Resize, Concat), a conformer
audio encoder (Conv1d subsampling, attention, GLU, depthwise Conv1d), a LLaMA-style decoder step
(RMSNorm, rotary position, SwiGLU, KV cache), and a dynamically quantized BERT
(DynamicQuantizeLinear + MatMulInteger, as onnxruntime's quantize_dynamic writes it).
"""

import argparse
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

import make_models as mm

torch.set_num_threads(1)


def conv_bn_silu(c_in, c_out, k=1, s=1, p=None):
    return nn.Sequential(nn.Conv2d(c_in, c_out, k, s, k // 2 if p is None else p, bias=False), nn.BatchNorm2d(c_out), nn.SiLU())


class C3(nn.Module):
    """YOLOv5's CSP block: two 1x1 branches, n bottlenecks (1x1, 3x3, residual) on one, concat, 1x1."""

    def __init__(self, c_in, c_out, n=1, shortcut=True):
        super().__init__()
        h = c_out // 2
        self.cv1, self.cv2, self.cv3 = conv_bn_silu(c_in, h), conv_bn_silu(c_in, h), conv_bn_silu(2 * h, c_out)
        self.m = nn.ModuleList([nn.Sequential(conv_bn_silu(h, h), conv_bn_silu(h, h, 3)) for _ in range(n)])
        self.shortcut = shortcut

    def forward(self, x):
        y = self.cv1(x)
        for b in self.m:
            y = y + b(y) if self.shortcut else b(y)
        return self.cv3(torch.cat([y, self.cv2(x)], 1))


class Sppf(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.cv1, self.cv2 = conv_bn_silu(c_in, c_in // 2), conv_bn_silu(2 * c_in, c_out)

    def forward(self, x):
        x = self.cv1(x)
        y1 = F.max_pool2d(x, 5, 1, 2)
        y2 = F.max_pool2d(y1, 5, 1, 2)
        return self.cv2(torch.cat([x, y1, y2, F.max_pool2d(y2, 5, 1, 2)], 1))


class YoloV5n(nn.Module):
    """A YOLOv5n-sized detector at 320x320: CSP backbone, SPPF, PAN neck with nearest x2 upsampling
    and Concat, three 1x1 detect convs reshaped to [batch, anchors*cells, 85] and sigmoid-decoded."""

    def __init__(self, classes=80, w=(16, 32, 64, 128, 256)):
        super().__init__()
        self.stem = conv_bn_silu(3, w[0], 6, 2, 2)
        self.b1 = nn.Sequential(conv_bn_silu(w[0], w[1], 3, 2), C3(w[1], w[1], 1))
        self.b2 = nn.Sequential(conv_bn_silu(w[1], w[2], 3, 2), C3(w[2], w[2], 2))
        self.b3 = nn.Sequential(conv_bn_silu(w[2], w[3], 3, 2), C3(w[3], w[3], 3))
        self.b4 = nn.Sequential(conv_bn_silu(w[3], w[4], 3, 2), C3(w[4], w[4], 1), Sppf(w[4], w[4]))
        self.l4 = conv_bn_silu(w[4], w[3])
        self.c3a = C3(2 * w[3], w[3], 1, False)
        self.l3 = conv_bn_silu(w[3], w[2])
        self.c3b = C3(2 * w[2], w[2], 1, False)
        self.d3 = conv_bn_silu(w[2], w[2], 3, 2)
        self.c3c = C3(2 * w[2], w[3], 1, False)
        self.d4 = conv_bn_silu(w[3], w[3], 3, 2)
        self.c3d = C3(2 * w[3], w[4], 1, False)
        self.no = classes + 5
        self.detect = nn.ModuleList([nn.Conv2d(c, 3 * self.no, 1) for c in (w[2], w[3], w[4])])

    def forward(self, x):
        p3 = self.b2(self.b1(self.stem(x)))
        p4 = self.b3(p3)
        p5 = self.b4(p4)
        h5 = self.l4(p5)
        h4 = self.l3(self.c3a(torch.cat([F.interpolate(h5, scale_factor=2.0, mode="nearest"), p4], 1)))
        o3 = self.c3b(torch.cat([F.interpolate(h4, scale_factor=2.0, mode="nearest"), p3], 1))
        o4 = self.c3c(torch.cat([self.d3(o3), h4], 1))
        o5 = self.c3d(torch.cat([self.d4(o4), h5], 1))
        outs = []
        for conv, f in zip(self.detect, (o3, o4, o5)):
            y = conv(f)
            b, _, h, w = y.shape
            y = y.view(b, 3, self.no, h, w).permute(0, 1, 3, 4, 2).sigmoid()
            outs.append(y.reshape(b, -1, self.no))
        return torch.cat(outs, 1)


class ConformerBlock(nn.Module):
    """A conformer block: half-step feed-forward (SiLU), self-attention, the conv module (pointwise
    conv to 2d, GLU, depthwise Conv1d k=15, BatchNorm, SiLU, pointwise), half-step feed-forward."""

    def __init__(self, d, heads, k=15):
        super().__init__()
        self.ff1 = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.SiLU(), nn.Linear(4 * d, d))
        self.ln_att = nn.LayerNorm(d)
        self.att = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln_conv = nn.LayerNorm(d)
        self.pw1 = nn.Conv1d(d, 2 * d, 1)
        self.dw = nn.Conv1d(d, d, k, padding=k // 2, groups=d)
        self.bn = nn.BatchNorm1d(d)
        self.pw2 = nn.Conv1d(d, d, 1)
        self.ff2 = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.SiLU(), nn.Linear(4 * d, d))
        self.ln_out = nn.LayerNorm(d)

    def forward(self, x):
        x = x + 0.5 * self.ff1(x)
        a = self.ln_att(x)
        x = x + self.att(a, a, a, need_weights=False)[0]
        c = self.ln_conv(x).transpose(1, 2)
        c = self.pw2(F.silu(self.bn(self.dw(F.glu(self.pw1(c), dim=1)))))
        x = x + c.transpose(1, 2)
        return self.ln_out(x + 0.5 * self.ff2(x))


class ConformerEncoder(nn.Module):
    """A small speech encoder on 80-band log-mel frames: Whisper-style Conv1d subsampling (k=3,
    strides 1 and 2, GELU), sinusoidal positions, 4 conformer blocks at d=256, 4 heads."""

    def __init__(self, mels=80, d=256, heads=4, layers=4, frames=400):
        super().__init__()
        self.conv1 = nn.Conv1d(mels, d, 3, padding=1)
        self.conv2 = nn.Conv1d(d, d, 3, stride=2, padding=1)
        pos = torch.arange(frames // 2).unsqueeze(1) * torch.exp(-math.log(10000.0) * torch.arange(0, d, 2) / d)
        self.register_buffer("pos", torch.cat([torch.sin(pos), torch.cos(pos)], 1))
        self.blocks = nn.ModuleList([ConformerBlock(d, heads) for _ in range(layers)])

    def forward(self, mel):
        x = F.gelu(self.conv2(F.gelu(self.conv1(mel)))).transpose(1, 2)
        x = x + self.pos[:x.shape[1]]
        for b in self.blocks:
            x = b(x)
        return x


class RmsNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d) + 0.1 * torch.randn(d))
        self.eps = eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], -1)


class LlamaStep(nn.Module):
    """One LLaMA-style decoder step with a KV cache: RMSNorm pre-norms, separate Q/K/V projections
    without bias, rotary positions (cos/sin gathered at the step's positions, rotate-half), a
    SwiGLU MLP, an untied LM head. 4 layers, hidden 512, 8 heads, MLP 1408."""

    def __init__(self, vocab=8000, d=512, heads=8, layers=4, ff=1408, max_len=1024):
        super().__init__()
        self.heads, self.d = heads, d
        hd = d // heads
        self.emb = nn.Embedding(vocab, d)
        inv = 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd))
        ang = torch.outer(torch.arange(max_len).float(), inv)
        ang = torch.cat([ang, ang], -1)
        self.register_buffer("cos", ang.cos())
        self.register_buffer("sin", ang.sin())
        self.blocks = nn.ModuleList()
        for _ in range(layers):
            self.blocks.append(nn.ModuleDict({
                "n1": RmsNorm(d), "q": nn.Linear(d, d, bias=False), "k": nn.Linear(d, d, bias=False),
                "v": nn.Linear(d, d, bias=False), "o": nn.Linear(d, d, bias=False), "n2": RmsNorm(d),
                "gate": nn.Linear(d, ff, bias=False), "up": nn.Linear(d, ff, bias=False),
                "down": nn.Linear(ff, d, bias=False)}))
        self.norm = RmsNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids, positions, *past):
        b, s = ids.shape
        h, hd = self.heads, self.d // self.heads
        cos, sin = self.cos[positions].unsqueeze(1), self.sin[positions].unsqueeze(1)
        x = self.emb(ids)
        presents = []
        for i, blk in enumerate(self.blocks):
            a = blk["n1"](x)
            q, k, v = (blk[n](a).view(b, s, h, hd).transpose(1, 2) for n in ("q", "k", "v"))
            q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
            k = torch.cat([past[2 * i], k], 2)
            v = torch.cat([past[2 * i + 1], v], 2)
            presents += [k, v]
            att = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(hd), -1)
            x = x + blk["o"](torch.matmul(att, v).transpose(1, 2).reshape(b, s, self.d))
            m = blk["n2"](x)
            x = x + blk["down"](F.silu(blk["gate"](m)) * blk["up"](m))
        return (self.head(self.norm(x)), *presents)


def _seq_spec(make, name_in, shape, axes_in, conv=True, opset=13):
    return mm.Spec(make, lambda: (torch.rand(*shape),), [name_in], ["output"],
                   {name_in: axes_in, "output": {0: "batch"}}, {name_in: list(shape)}, conv=conv, opset=opset)


def _llama_spec(layers=4, heads=8, hd=64, past=127):
    cache = ["past_%s_%d" % (kv, i) for i in range(layers) for kv in ("key", "value")]
    present = ["present_%s_%d" % (kv, i) for i in range(layers) for kv in ("key", "value")]
    axes = {"input_ids": {0: "batch", 1: "seq"}, "position_ids": {0: "batch", 1: "seq"},
            "logits": {0: "batch", 1: "seq"}}
    axes.update({n: {0: "batch", 2: "past"} for n in cache})
    axes.update({n: {0: "batch", 2: "total"} for n in present})
    shapes = {"input_ids": [1, 1], "position_ids": [1, 1]}
    shapes.update({n: [1, heads, past, hd] for n in cache})
    return mm.Spec(LlamaStep, lambda: (torch.randint(0, 8000, (1, 1)), torch.full((1, 1), past, dtype=torch.int64),
                                       *[torch.rand(1, heads, past, hd) for _ in cache]),
                   ["input_ids", "position_ids"] + cache, ["logits"] + present, axes, shapes,
                   {"past": past}, opset=14)


def unfused_attention(model):
    """Keeps torch 1.13's nn.MultiheadAttention off its fused inference path (which has no ONNX
    export) by leaving those modules in training mode; their dropout is 0, so the math is the same."""
    for m in model.modules():
        if isinstance(m, nn.MultiheadAttention):
            assert m.dropout == 0.0
            m.train = lambda mode=True: m
    return model


def vit_b16_112():
    return unfused_attention(torchvision.models.VisionTransformer(image_size=112, patch_size=16, num_layers=12,
                                                                  num_heads=12, hidden_dim=768, mlp_dim=3072))


def conformer():
    return unfused_attention(ConformerEncoder())


def extra_specs():
    """name -> Spec of the held-out set's exported models."""
    tv = torchvision.models
    return {
        "mobilenet_v3_large": mm._vision(tv.mobilenet_v3_large, opset=13),
        "mobilenet_v3_small": mm._vision(tv.mobilenet_v3_small, opset=17),
        "shufflenet_v2_x1_0": mm._vision(tv.shufflenet_v2_x1_0),
        "resnext50_32x4d": mm._vision(tv.resnext50_32x4d),
        "squeezenet1_0": mm._vision(tv.squeezenet1_0),
        "efficientnet_b1": mm._vision(tv.efficientnet_b1, size=240),
        "regnet_x_400mf": mm._vision(tv.regnet_x_400mf),
        "swin_t": mm._vision(tv.swin_t, opset=17),
        "vit_b16_112": mm._vision(vit_b16_112, size=112, opset=17),
        "yolov5n": mm._vision(YoloV5n, size=320, opset=13),
        "conformer": _seq_spec(conformer, "mel", (1, 80, 400), {0: "batch"}, conv=False, opset=14),
        "llama_step": _llama_spec(),
    }


# Made from another exported model: name -> (base, kind).
DERIVED = {"bert_dynq": ("bert_mask", "dynq")}

EXTRA = ["mobilenet_v3_large", "mobilenet_v3_small", "shufflenet_v2_x1_0", "resnext50_32x4d", "squeezenet1_0",
         "efficientnet_b1", "regnet_x_400mf", "swin_t", "vit_b16_112", "yolov5n", "conformer", "llama_step",
         "bert_dynq"]


def dynamic_quantize(model):
    """onnxruntime's quantize_dynamic layout for every MatMul with a 2-D float initializer as its
    B: the activation through DynamicQuantizeLinear (uint8, per tensor), the weight as an int8
    initializer with a per-tensor symmetric scale, MatMulInteger, Cast to float, Mul by the two
    scales' product."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    g = model.graph
    inits = {i.name: i for i in g.initializer}
    nodes, new_inits, dq_of = [], [], {}
    for n in g.node:
        w = inits.get(n.input[1]) if n.op_type == "MatMul" and len(n.input) == 2 else None
        if w is None or len(w.dims) != 2 or w.data_type != TensorProto.FLOAT:
            nodes.append(n)
            continue
        a = n.input[0]
        if a not in dq_of:
            q, s, z = a + "_dq", a + "_dq_scale", a + "_dq_zp"
            nodes.append(helper.make_node("DynamicQuantizeLinear", [a], [q, s, z], name=a + "_DynamicQuantize"))
            dq_of[a] = (q, s, z)
        q, s, z = dq_of[a]
        wf = numpy_helper.to_array(w)
        ws = float(np.abs(wf).max()) / 127.0 or 1.0
        wq = np.clip(np.round(wf / ws), -127, 127).astype(np.int8)
        base = n.name or n.output[0]
        new_inits += [numpy_helper.from_array(wq, w.name + "_quantized"),
                      numpy_helper.from_array(np.array(ws, dtype=np.float32), w.name + "_scale"),
                      numpy_helper.from_array(np.array(0, dtype=np.int8), w.name + "_zero_point")]
        nodes += [
            helper.make_node("MatMulInteger", [q, w.name + "_quantized", z, w.name + "_zero_point"],
                             [base + "_int32"], name=base + "_MatMulInteger"),
            helper.make_node("Cast", [base + "_int32"], [base + "_cast"], to=TensorProto.FLOAT, name=base + "_Cast"),
            helper.make_node("Mul", [s, w.name + "_scale"], [base + "_scales"], name=base + "_ScaleMul"),
            helper.make_node("Mul", [base + "_cast", base + "_scales"], [n.output[0]], name=base + "_Mul"),
        ]
    used = {i for n in nodes for i in n.input}
    keep = [i for i in g.initializer if i.name in used]
    del g.node[:]
    g.node.extend(nodes)
    del g.initializer[:]
    g.initializer.extend(keep + new_inits)
    onnx.checker.check_model(model)
    return model


def derive(name, outdir):
    import onnx

    base, kind = DERIVED[name]
    if not os.path.exists(os.path.join(outdir, base + ".onnx")):
        print("exporting " + base, file=sys.stderr)
        mm.export_spec(base, mm.wide_specs()[base], outdir)
    meta = json.load(open(os.path.join(outdir, base + ".json")))
    meta.pop("model", None)
    onnx.save(dynamic_quantize(onnx.load(os.path.join(outdir, base + ".onnx"))), os.path.join(outdir, name + ".onnx"))
    with open(os.path.join(outdir, name + ".json"), "w") as f:
        json.dump(meta, f)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir", nargs="?", default=os.path.join(here, ".models"))
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--list", action="store_true", help="print the held-out set's model names and exit")
    args = ap.parse_args()
    if args.list:
        print("\n".join(EXTRA))
        return 0
    unknown = [n for n in (args.only or []) if n not in EXTRA]
    if unknown:
        print("extra_models.py: unknown model(s): %s (known: %s)" % (", ".join(unknown), ", ".join(EXTRA)),
              file=sys.stderr)
        return 2
    os.makedirs(args.outdir, exist_ok=True)
    specs = extra_specs()
    for name in args.only or EXTRA:
        if os.path.exists(os.path.join(args.outdir, name + ".json")) and \
                os.path.exists(os.path.join(args.outdir, name + ".onnx")):
            continue
        print(("deriving " if name in DERIVED else "exporting ") + name, file=sys.stderr)
        if name in DERIVED:
            derive(name, args.outdir)
        else:
            mm.export_spec(name, specs[name], args.outdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
