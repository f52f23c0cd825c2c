#!/usr/bin/python3
"""Write the benchmark models (random weights) as ONNX files.

    /usr/bin/python3 bench/make_models.py [OUTDIR] [--only NAME ...] [--list [wide]] [--singa PATH]

OUTDIR defaults to bench/.models (git-ignored). A model already there is kept: the export
costs a minute of the machine's two cores, and the weights do not change the timings.
Each model gets NAME.onnx plus NAME.json naming its input shapes (the symbolic dimensions
bound for the benchmark) and, for conv nets, the multiply-adds of one batch-1 run, from which
run.sh derives GFLOP/s.

`--list wide` names the wide table's models (bench/run.sh --set wide): families singa was not
tuned for (bench/wide_models.py), three sequence lengths of one BERT (NAME.json then names the
shared ONNX file under "model"), and int8 QDQ / float16 variants of ResNet-50 and that BERT
(bench/variants.py; the QDQ calibration runs the float model once with `singa run`, --singa).
"""

import argparse
import json
import os
import sys

import torch
import torch.nn as nn
import torchvision

import wide_models as wm

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


class Spec:
    """One exported model of the wide table: a factory (modules are built only when exported),
    example inputs, input/output names, dynamic axes, the bench's input shapes and symbolic
    dimension bindings, whether its Conv/Linear multiply-adds are counted, and the opset."""

    def __init__(self, make, example, inputs, outputs, axes, shapes, dims=None, conv=False, opset=OPSET):
        self.make, self.example, self.inputs, self.outputs = make, example, inputs, outputs
        self.axes, self.shapes, self.dims, self.conv, self.opset = axes, shapes, dims or {}, conv, opset


def _vision(make, size=224, opset=OPSET):
    return Spec(make, lambda: (torch.rand(1, 3, size, size),), ["input"], ["output"],
                {"input": {0: "batch"}, "output": {0: "batch"}}, {"input": [1, 3, size, size]}, conv=True, opset=opset)


def _bert_spec():
    ids = {0: "batch", 1: "seq"}
    return Spec(wm.HfBert, lambda: (torch.randint(0, 8000, (1, 128)), torch.ones(1, 128, dtype=torch.int64),
                                    torch.zeros(1, 128, dtype=torch.int64)),
                ["input_ids", "attention_mask", "token_type_ids"], ["last_hidden_state", "pooler_output"],
                {"input_ids": ids, "attention_mask": ids, "token_type_ids": ids, "last_hidden_state": ids,
                 "pooler_output": {0: "batch"}},
                {"input_ids": [1, 128], "attention_mask": [1, 128], "token_type_ids": [1, 128]}, {"seq": 128}, opset=17)


def _gpt2_spec(layers=6, heads=6, hd=64, past=127):
    cache = ["past_%s_%d" % (kv, i) for i in range(layers) for kv in ("key", "value")]
    present = ["present_%s_%d" % (kv, i) for i in range(layers) for kv in ("key", "value")]
    axes = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "total"},
            "logits": {0: "batch", 1: "seq"}}
    axes.update({n: {0: "batch", 2: "past"} for n in cache})
    axes.update({n: {0: "batch", 2: "total"} for n in present})
    shapes = {"input_ids": [1, 1], "attention_mask": [1, past + 1]}
    shapes.update({n: [1, heads, past, hd] for n in cache})
    return Spec(wm.Gpt2Step, lambda: (torch.randint(0, 8000, (1, 1)), torch.ones(1, past + 1, dtype=torch.int64),
                                      *[torch.rand(1, heads, past, hd) for _ in cache]),
                ["input_ids", "attention_mask"] + cache, ["logits"] + present, axes, shapes,
                {"past": past, "total": past + 1}, opset=17)


def wide_specs():
    """name -> Spec of the wide table's exported models."""
    tv = torchvision.models
    return {
        "mnasnet1_0": _vision(tv.mnasnet1_0),
        "regnet_y_400mf": _vision(tv.regnet_y_400mf),
        "densenet121": _vision(tv.densenet121),
        "googlenet": _vision(lambda: tv.googlenet(aux_logits=False, init_weights=True)),
        "convnext_tiny": _vision(tv.convnext_tiny, opset=17),
        "vit_tiny": _vision(wm.vit_tiny, opset=17),
        "resnet50": _vision(tv.resnet50),
        "unet_small": _vision(wm.UNet, size=256),
        "db_detector": _vision(wm.DbDetector, size=320),
        "crnn": Spec(wm.Crnn, lambda: (torch.rand(1, 1, 32, 128),), ["input"], ["output"],
                     {"input": {0: "batch"}, "output": {0: "batch"}}, {"input": [1, 1, 32, 128]}, conv=True),
        "mel_frontend": Spec(wm.MelFrontEnd, lambda: (torch.rand(1, 16000),), ["input"], ["output"],
                             {"input": {0: "batch"}, "output": {0: "batch"}}, {"input": [1, 16000]}),
        "kws_cnn": Spec(wm.KwsCnn, lambda: (torch.rand(1, 1, 49, 40),), ["input"], ["output"],
                        {"input": {0: "batch"}, "output": {0: "batch"}}, {"input": [1, 1, 49, 40]}, conv=True),
        "bert_mask": _bert_spec(),
        "gpt2_step": _gpt2_spec(),
    }


# Models made from another one: (base, "dims", bindings) shares the base's file at other
# symbolic dimensions; (base, "fp16" | "qdq") converts it.
DERIVED = {
    "bert_mask_s8": ("bert_mask", "dims", {"seq": 8}),
    "bert_mask_s32": ("bert_mask", "dims", {"seq": 32}),
    "bert_mask_s128": ("bert_mask", "dims", {"seq": 128}),
    "resnet50_fp16": ("resnet50", "fp16", None),
    "resnet50_qdq": ("resnet50", "qdq", None),
    "bert_mask_fp16": ("bert_mask", "fp16", None),
    "bert_mask_qdq": ("bert_mask", "qdq", None),
}

# The wide table (issue 33 item 5): 20 models, in the order the table lists them.
WIDE = ["efficientnet_b0", "mnasnet1_0", "regnet_y_400mf", "densenet121", "googlenet", "convnext_tiny", "vit_tiny",
        "unet_small", "db_detector", "crnn", "mel_frontend", "kws_cnn", "bert_mask_s8", "bert_mask_s32",
        "bert_mask_s128", "gpt2_step", "resnet50_fp16", "resnet50_qdq", "bert_mask_fp16", "bert_mask_qdq"]


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


def export_spec(name, spec, outdir):
    """Exports a wide-table Spec: NAME.onnx and NAME.json."""
    torch.manual_seed(0)
    model = spec.make()
    randomise_batchnorm(model, 1)
    model.eval()
    example = spec.example()
    path = os.path.join(outdir, name + ".onnx")
    with torch.no_grad():
        torch.onnx.export(model, example, path, input_names=spec.inputs, output_names=spec.outputs,
                          dynamic_axes=spec.axes, opset_version=spec.opset)
    meta = {"inputs": spec.shapes, "dims": spec.dims}
    if spec.conv:
        meta["macs"] = conv_macs(model, example)
    with open(os.path.join(outdir, name + ".json"), "w") as f:
        json.dump(meta, f)


def derive(name, outdir, singa):
    """Writes a DERIVED model from its base (already exported)."""
    import onnx
    import variants

    base, kind, dims = DERIVED[name]
    meta = json.load(open(os.path.join(outdir, base + ".json")))
    base_path = os.path.join(outdir, base + ".onnx")
    if kind == "dims":
        meta["model"] = base + ".onnx"
        meta["dims"] = dims
        # Every input of the shared models carries `seq` as its second dimension.
        meta["inputs"] = {k: [dims.get("seq", d) if i == 1 else d for i, d in enumerate(v)]
                          for k, v in meta["inputs"].items()}
    else:
        model = onnx.load(base_path)
        if kind == "fp16":
            model = variants.float16(model)
        else:
            model = variants.qdq(model, variants.calibrate(base_path, singa, meta["dims"]))
        onnx.save(model, os.path.join(outdir, name + ".onnx"))
    with open(os.path.join(outdir, name + ".json"), "w") as f:
        json.dump(meta, f)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir", nargs="?", default=os.path.join(here, ".models"))
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--list", nargs="?", const="all", choices=["all", "wide"],
                    help="print the model names (all, or the wide table's) and exit")
    ap.add_argument("--singa", default=os.path.join(here, "..", "build", "tools", "singa"),
                    help="the singa CLI, run once per QDQ model to calibrate its scales")
    args = ap.parse_args()
    specs = models()
    wide = wide_specs()
    known = list(specs) + list(wide) + list(DERIVED)
    if args.list:
        print("\n".join(WIDE if args.list == "wide" else known))
        return 0
    unknown = [n for n in (args.only or []) if n not in known]
    if unknown:
        print("make_models.py: unknown model(s): " + ", ".join(unknown) + " (known: " + ", ".join(known) + ")",
              file=sys.stderr)
        return 2
    os.makedirs(args.outdir, exist_ok=True)
    def have(name):
        if not os.path.exists(os.path.join(args.outdir, name + ".json")):
            return False
        return name in DERIVED and DERIVED[name][1] == "dims" or os.path.exists(os.path.join(args.outdir, name + ".onnx"))

    for name in args.only or known:
        if have(name):
            continue
        base = DERIVED[name][0] if name in DERIVED else None
        if base and not have(base):
            print("exporting " + base, file=sys.stderr)
            export_spec(base, wide[base], args.outdir)
        print(("deriving " if base else "exporting ") + name, file=sys.stderr)
        if base:
            derive(name, args.outdir, os.path.abspath(args.singa))
        elif name in wide:
            export_spec(name, wide[name], args.outdir)
        else:
            export(name, specs[name], args.outdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
