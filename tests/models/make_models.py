#!/usr/bin/python3
"""Write end-to-end model cases, exported from PyTorch, in the ONNX backend-test layout.

    /usr/bin/python3 make_models.py OUTDIR [--suite main|fp16] [--only CASE ...] [--list]

Each case becomes OUTDIR/CASE/model.onnx plus OUTDIR/CASE/test_data_set_N/input_K.pb and
output_K.pb. Weights are random but seeded, and the expected outputs are PyTorch's own eval-mode
results, so a case checks singa against an independent implementation rather than against itself.
Nothing here is committed: the build runs this script into its own folder. The float16 cases
(`--suite fp16`) go to a folder of their own because they are checked with wider tolerances.
"""

import argparse
import os
import shutil
import sys
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

# The case modules sit in the source tree; no __pycache__ should appear there during a build.
sys.dont_write_bytecode = True
import cases_newer  # noqa: E402
import cases_nhwc  # noqa: E402
import cases_sequence  # noqa: E402
import cases_vision  # noqa: E402
from export_helpers import calibrate_batchnorm, randomise_affine, write_case  # noqa: E402

# Exports and forward passes are tiny; extra threads only fight the build for the 2 cores.
torch.set_num_threads(1)


# ---------------------------------------------------------------------------------------------
# Models


class MnistCNN(nn.Module):
    """The CNN of SINGA's MNIST example: two conv/relu/pool stages and two linear layers."""

    def __init__(self, dynamic_flatten=False):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 20, 5)
        self.conv2 = nn.Conv2d(20, 50, 5)
        self.fc1 = nn.Linear(800, 500)
        self.fc2 = nn.Linear(500, 10)
        # A reshape driven by the runtime batch size exports as Shape/Gather/Unsqueeze/Concat/
        # Reshape, which is what breaks when a symbolic batch is bound wrongly.
        self.dynamic_flatten = dynamic_flatten

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        if self.dynamic_flatten:
            x = x.reshape(x.shape[0], -1)
        else:
            x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return self.fc2(x)


class MLPSoftmax(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 128)
        self.fc2 = nn.Linear(128, 96)
        self.fc3 = nn.Linear(96, 10)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = torch.tanh(self.fc2(x))
        # Softmax over a 3-D input: opset <13 coerces to 2-D at `axis`, opset 13 works on one
        # axis, so the two exports of this model take different paths through the runtime.
        return F.softmax(self.fc3(x), dim=-1), F.log_softmax(self.fc3(x), dim=1)


class TokenTransformer(nn.Module):
    """Token embedding + positional table + nn.TransformerEncoder (GELU) + pooled linear head.

    Token 0 is padding: the key-padding mask is computed inside the graph (Equal), so the export
    carries the masking (Where / additive -inf) as well as MatMul, Softmax and LayerNorm.
    """

    def __init__(self, vocab=50, d_model=64, heads=4, layers=2, seq=16, classes=7):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.pos = nn.Parameter(torch.randn(seq, d_model) * 0.1)
        layer = nn.TransformerEncoderLayer(d_model, heads, dim_feedforward=128, dropout=0.0,
                                           activation="gelu", batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, classes)

    def forward(self, tokens):
        pad = tokens == 0
        x = self.embed(tokens) + self.pos[: tokens.shape[1]]
        x = self.encoder(x, src_key_padding_mask=pad)
        keep = (~pad).unsqueeze(-1).to(x.dtype)
        pooled = (x * keep).sum(dim=1) / keep.sum(dim=1)
        return self.head(pooled), x


class TensorOps(nn.Module):
    """Shape and data-movement ops whose ONNX signatures changed between opsets 11 and 13.

    Split/Squeeze/Unsqueeze/ReduceSum take `split`/`axes` as attributes at opset 11 and as
    inputs at opset 13; Clip's bounds are inputs since 11. Slice with steps, Gather with a
    constant index, Pow and Sqrt ride along.
    """

    def __init__(self):
        super().__init__()
        self.register_buffer("index", torch.tensor([3, 0, 2, 2], dtype=torch.int64))
        self.scale = nn.Parameter(torch.randn(1, 6, 4))

    def forward(self, x):
        a, b, c = torch.split(x, [1, 2, 3], dim=1)
        first = a.squeeze(1)
        total = b.sum(dim=1) + torch.sum(c, dim=(1, 2), keepdim=False).unsqueeze(-1)
        strided = x[:, ::2, 1:7]
        picked = torch.index_select(x, 2, self.index)
        clipped = torch.clamp(picked * self.scale, -0.5, 0.75)
        norm = torch.sqrt(torch.pow(strided, 2).sum(dim=-1, keepdim=True) + 1e-3)
        halves = torch.chunk(c, 2, dim=2)
        swapped = torch.cat([halves[1], halves[0]], dim=2)
        mixed = first * total + swapped.sum(dim=1) - x[:, 4] * 0.5
        return mixed, strided / norm, clipped, torch.pow(x.abs() + 0.1, 1.5).max(dim=1).values


# ---------------------------------------------------------------------------------------------
# Cases


def case_mnist_cnn(root):
    torch.manual_seed(1)
    model = MnistCNN()
    x = torch.randn(1, 1, 28, 28)
    write_case(root, "mnist_cnn_opset13", model, [[x]], 13, ["image"], ["logits"])


def case_mnist_cnn_dynamic_batch(root):
    torch.manual_seed(2)
    model = MnistCNN(dynamic_flatten=True)
    traced_with = torch.randn(2, 1, 28, 28)
    # Batch 3, then batch 1 on the same model: the symbolic axis is bound per run, and a
    # smaller run after a larger one catches buffers sized once and reused.
    data_sets = [[torch.randn(3, 1, 28, 28)], [torch.randn(1, 1, 28, 28)]]
    write_case(root, "mnist_cnn_dynbatch_opset13", model, data_sets, 13, ["image"], ["logits"],
               dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}},
               export_inputs=[traced_with])


def _resnet18(seed, calib_shape):
    torch.manual_seed(seed)
    model = torchvision.models.resnet18(weights=None)
    randomise_affine(model, seed)
    calibrate_batchnorm(model, [torch.randn(*calib_shape) for _ in range(2)])
    return model


def case_resnet18_opset13(root):
    model = _resnet18(3, (4, 3, 224, 224))
    x = torch.randn(1, 3, 224, 224)
    write_case(root, "resnet18_opset13", model, [[x]], 13, ["image"], ["logits"])


def case_resnet18_opset17(root):
    # A second batch size and a non-square input: pooling windows and the final Flatten see
    # different shapes than in the opset-13 case.
    model = _resnet18(4, (4, 3, 128, 160))
    x = torch.randn(2, 3, 128, 160)
    write_case(root, "resnet18_opset17", model, [[x]], 17, ["image"], ["logits"],
               training=torch.onnx.TrainingMode.PRESERVE)


def case_mlp_softmax(root, opset):
    torch.manual_seed(5)
    model = MLPSoftmax()
    x = torch.randn(2, 5, 64)
    write_case(root, f"mlp_softmax_opset{opset}", model, [[x]], opset, ["x"], ["probs", "logprobs"])


def case_transformer(root):
    torch.manual_seed(6)
    model = TokenTransformer()
    randomise_affine(model, 6)
    # Padded tails of different lengths in each data set: the mask must really hide those keys.
    data_sets = []
    for pads in ((12, 15), (16, 5)):
        tokens = torch.randint(1, 50, (2, 16), dtype=torch.int64)
        for row, start in enumerate(pads):
            tokens[row, start:] = 0
        data_sets.append([tokens])
    write_case(root, "transformer_encoder_opset14", model, data_sets, 14, ["tokens"],
               ["logits", "hidden"])


def case_tensor_ops(root, opset):
    torch.manual_seed(7)
    model = TensorOps()
    x = torch.randn(2, 6, 8)
    write_case(root, f"tensor_ops_opset{opset}", model, [[x]], opset, ["x"],
               ["mixed", "normalised", "clipped", "powmax"])


CASES = {
    "mnist_cnn_opset13": case_mnist_cnn,
    "mnist_cnn_dynbatch_opset13": case_mnist_cnn_dynamic_batch,
    "resnet18_opset13": case_resnet18_opset13,
    "resnet18_opset17": case_resnet18_opset17,
    "mlp_softmax_opset11": lambda root: case_mlp_softmax(root, 11),
    "mlp_softmax_opset13": lambda root: case_mlp_softmax(root, 13),
    "transformer_encoder_opset14": case_transformer,
    "tensor_ops_opset11": lambda root: case_tensor_ops(root, 11),
    "tensor_ops_opset13": lambda root: case_tensor_ops(root, 13),
    "tensor_ops_opset17": lambda root: case_tensor_ops(root, 17),
}
CASES.update(cases_vision.CASES)
CASES.update(cases_sequence.CASES)
CASES.update(cases_nhwc.CASES)
# Opset 18+ / IR 10+ rewrites and float16-converter output of the cases above.
FP16_CASES = cases_newer.fp16_cases(CASES)
CASES.update(cases_newer.cases(CASES))
SUITES = {"main": CASES, "fp16": FP16_CASES}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir", nargs="?", help="folder to (re)create with one sub-folder per case")
    parser.add_argument("--suite", choices=sorted(SUITES), default="main",
                        help="which set of cases (fp16: float16 models, wider tolerances)")
    parser.add_argument("--only", nargs="+", help="write only these cases (of the suite)")
    parser.add_argument("--list", action="store_true", help="print the case names and exit")
    args = parser.parse_args()
    cases = SUITES[args.suite]
    if args.list:
        print("\n".join(cases))
        return 0
    unknown = sorted(set(args.only or ()) - set(cases))
    if unknown:
        parser.error(f"not cases of suite {args.suite}: {' '.join(unknown)}")
    if not args.outdir:
        parser.error("OUTDIR is required")

    outdir = os.path.abspath(args.outdir)
    parent = os.path.dirname(outdir)
    os.makedirs(parent, exist_ok=True)
    # Build into a sibling temp folder and swap it in, so an interrupted run never leaves a
    # half-written case set that a build system would take as up to date.
    staging = tempfile.mkdtemp(prefix=".models-", dir=parent)
    try:
        for name in args.only or cases:
            cases[name](staging)
        if os.path.exists(outdir):
            shutil.rmtree(outdir)
        os.rename(staging, outdir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main())
