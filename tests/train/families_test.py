#!/usr/bin/python3
"""Re-trains the model families of tests/models end to end through singa's Python API.

    families_test.py BUILD_DIR SOURCE_ROOT CASES_DIR [FAMILY...]

For each family (a model PyTorch exported with random weights, make_models.py) it

1. imports the model for training (``sonnx.SONNXModel``), converts it to float64
   (``to``), runs backward of ``sum(outputs * R)`` with fixed random R, and compares
   the gradients of a few elements of a few parameters of every layer kind (conv,
   batch-norm scale, linear, LSTM/GRU W/R/B, LayerNorm, embedding, PRelu slope)
   with two-sided finite differences of the same loss;
2. takes a few SGD steps in float32 on a small synthetic batch and checks that the
   loss falls;
3. exports the re-trained model (``sonnx.to_onnx``) and checks that ONNX Runtime
   (onnxruntime-node, tests/ort_run.js's peer; singa's own inference when node or
   ORT is missing) gives the trained model's evaluation-mode outputs.

It prints one line per family (the numbers docs/training.md reports) and exits 1 if
any family fails, 77 when the cases cannot be had (no torch to export them).

The models are prepared at reduced input sizes (all are fully convolutional up to
a global pooling, or take dynamic sequences), so a float64 forward pass of
ResNet-18 takes tens of milliseconds and the whole run a few minutes on 2 cores.
"""
import ctypes
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

SKIP = 77

# family -> (case folder, {input: reduced shape}, SGD learning rate). ShuffleNet (its channel
# shuffle's Reshape), ArcFace and FER+ (their Flatten -> Gemm) keep the exported size.
FAMILIES = {
    "resnet18": ("resnet18_opset13", {"image": [1, 3, 32, 32]}, 0.01),
    "mobilenet_v2": ("mobilenet_v2_opset11", {"image": [1, 3, 32, 32]}, 0.01),
    "squeezenet": ("squeezenet1_1_opset13", {"image": [1, 3, 48, 48]}, 0.001),
    "shufflenet_v2": ("shufflenet_v2_x0_5_opset17", {}, 0.01),
    "efficientnet_b0": ("efficientnet_b0_opset13", {"image": [1, 3, 32, 32]}, 0.01),
    "vgg11": ("vgg11_opset11", {"image": [2, 3, 32, 32]}, 0.01),
    "arcface": ("arcface_opset11", {}, 0.01),
    "ferplus": ("emotion_ferplus_opset17", {}, 0.01),
    "tiny_yolov2": ("tiny_yolov2_opset13", {"image": [1, 3, 64, 64]}, 0.01),
    "bert_tiny_opset11": ("bert_encoder_opset11", {}, 0.01),
    "bert_tiny_opset17": ("bert_encoder_opset17", {}, 0.01),
    "lstm": ("lstm_classifier_opset13", {}, 0.01),
    "gru": ("gru_classifier_opset11", {}, 0.01),
}

# (consuming op, input index) -> layer kind whose parameters get checked
KINDS = {
    ("Conv", 1): "conv.W", ("Conv", 2): "conv.B",
    ("BatchNormalization", 1): "bn.scale", ("BatchNormalization", 2): "bn.B",
    ("Gemm", 1): "linear.W", ("Gemm", 2): "linear.B", ("MatMul", 1): "linear.W",
    ("LSTM", 1): "lstm.W", ("LSTM", 2): "lstm.R", ("LSTM", 3): "lstm.B",
    ("GRU", 1): "gru.W", ("GRU", 2): "gru.R", ("GRU", 3): "gru.B",
    ("LayerNormalization", 1): "layernorm.scale", ("LayerNormalization", 2): "layernorm.B",
    ("Gather", 0): "embedding", ("PRelu", 1): "prelu.slope",
    # BERT at opset 11 spells LayerNorm's affine part, and the linear biases, as Mul / Add.
    ("Mul", 1): "mul.param", ("Add", 0): "add.param", ("Add", 1): "add.param",
}

PARAMS_PER_KIND = 2        # first and last parameter of each kind
ELEMENTS_PER_PARAM = 2     # finite differences per parameter
FD_STEP = 1e-6             # float64 central differences
GRAD_RTOL = 1e-4           # relative error allowed on one element
# Below this a gradient counts as zero: with |loss| ~ 1, rounding alone moves a central
# difference at step 1e-6 by ~1e-10 (a BatchNorm cancels a conv bias's gradient exactly).
GRAD_FLOOR = 1e-5
# |export - trained| allowed, relative to the largest output (at least 1): float32 sums in
# another order, amplified by BatchNorm's running variance after a few steps.
EXPORT_TOL = 1e-4
SGD_STEPS = 4


class Skip(Exception):
    pass


def load_singa(build, source):
    """Imports singa from the build tree: a package folder of python/singa's modules
    beside the built _singa extension (whose runpath expects it in build/python)."""
    ext = glob.glob(os.path.join(build, "python", "_singa*.so"))
    if not ext:
        raise Skip("no built Python extension in %s/python (meson option python disabled?)" % build)
    core = os.path.join(build, "core", "libsinga_core.so")
    ctypes.CDLL(core, mode=ctypes.RTLD_GLOBAL)  # the runpath is relative to the real file's folder
    pkg_root = tempfile.mkdtemp(prefix="singa_pkg_")
    pkg = os.path.join(pkg_root, "singa")
    os.mkdir(pkg)
    for f in glob.glob(os.path.join(source, "python", "singa", "*.py")):
        os.symlink(f, os.path.join(pkg, os.path.basename(f)))
    os.symlink(ext[0], os.path.join(pkg, os.path.basename(ext[0])))
    sys.path.insert(0, pkg_root)
    import singa  # noqa: F401
    return pkg_root


def small_model(path, shapes):
    """The case's model with its inputs at `shapes` and the other shapes left to inference."""
    import onnx
    m = onnx.load(path)
    for vi in m.graph.input:
        if vi.name in shapes:
            dims = vi.type.tensor_type.shape.dim
            del dims[:]
            for d in shapes[vi.name]:
                dims.add().dim_value = d
    del m.graph.value_info[:]
    for k, vi in enumerate(m.graph.output):  # symbolic: the reduced inputs change them
        for i, d in enumerate(vi.type.tensor_type.shape.dim):
            d.dim_param = "out%d_%d" % (k, i)
    return m


def case_inputs(case_dir, model, shapes, rng):
    """Inputs by graph input: the case's first data set, or random data of the reduced shape."""
    import onnx
    from onnx import numpy_helper
    inits = {i.name for i in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in inits]
    xs = []
    for k, name in enumerate(names):
        if name in shapes:
            xs.append(rng.standard_normal(shapes[name]).astype(np.float32))
        else:
            t = onnx.TensorProto()
            with open(os.path.join(case_dir, "test_data_set_0", "input_%d.pb" % k), "rb") as f:
                t.ParseFromString(f.read())
            xs.append(numpy_helper.to_array(t))
    return names, xs


def param_kinds(model):
    """initializer name -> layer kind, from the first node that reads it."""
    inits = {i.name for i in model.graph.initializer}
    kinds = {}
    for n in model.graph.node:
        for j, name in enumerate(n.input):
            if name in inits and name not in kinds:
                kinds[name] = KINDS.get((n.op_type, j))
    return kinds


class Family:
    """One model family: its (reduced) model, inputs and the three checks."""

    def __init__(self, name, case_dir, shapes, lr, singa_mods):
        self.name, self.case_dir, self.shapes, self.lr = name, case_dir, shapes, lr
        self.sonnx, self.autograd, self.tensor, self.opt = singa_mods
        self.model = small_model(os.path.join(case_dir, "model.onnx"), shapes)
        self.rng = np.random.default_rng(sum(map(ord, name)))  # fixed per family, unlike hash()
        self.input_names, self.inputs = case_inputs(case_dir, self.model, shapes, self.rng)
        self.kinds = param_kinds(self.model)

    def tensors(self, dtype):
        """The inputs as Tensors, the floating-point ones in `dtype`."""
        T = self.tensor.Tensor
        return [T(data=x.astype(dtype) if x.dtype.kind == "f" else x) for x in self.inputs]

    # ---- 1. gradients against finite differences (float64) ----
    def check_gradients(self):
        ag, T = self.autograd, self.tensor.Tensor
        m = self.sonnx.SONNXModel(self.model).to(np.float64)
        m.train()
        ag.training = True
        xs = self.tensors(np.float64)
        outs = m.forward(*xs)
        weights = []
        for o in outs:
            if o is None or o.dtype != np.float64:
                weights.append(None)
                continue
            w = self.rng.uniform(-1, 1, o.shape) / np.sqrt(o.size())
            weights.append(w)

        def loss_of(outs):
            total = None
            for o, w in zip(outs, weights):
                if w is None:
                    continue
                term = ag.reduce_sum(ag.mul(o, T(data=w)), keepdims=0)
                total = term if total is None else ag.add(total, term)
            return total

        loss = loss_of(outs)
        grads = {id(p): g.to_numpy() for p, g in ag.backward(loss)}
        params = m.get_params()

        def value():
            with self.sonnx._singa.NoGrad():
                o = m.forward(*xs)
            return sum(float(np.sum(oo.to_numpy() * w)) for oo, w in zip(o, weights) if w is not None)

        by_kind = {}
        for name, p in params.items():
            kind = self.kinds.get(name)
            if kind is not None:
                by_kind.setdefault(kind, []).append(name)
        worst, report, problems, kinks = 0.0, {}, [], 0
        for kind, names in sorted(by_kind.items()):
            chosen = names if len(names) <= PARAMS_PER_KIND else [names[0], names[-1]]
            kind_err = 0.0
            for name in chosen:
                p = params[name]
                if id(p) not in grads:
                    problems.append("%s (%s): no gradient reached it" % (name, kind))
                    continue
                g = grads[id(p)].reshape(-1)
                data = p.to_numpy().copy()
                flat = data.reshape(-1)
                # Prefer elements with a clear gradient: a relative error means little at ~0.
                big = np.flatnonzero(np.abs(g) > 1e-2 * np.abs(g).max()) if g.size else []
                pool = big if len(big) else np.arange(g.size)
                picks = self.rng.choice(pool, size=min(ELEMENTS_PER_PARAM, len(pool)), replace=False)
                for e in picks:
                    outcome, err, detail = self.finite_difference(p, data, flat, e, g[e], value)
                    if outcome == "kink":
                        kinks += 1
                    elif outcome == "mismatch":
                        problems.append("%s[%d] (%s): %s" % (name, e, kind, detail))
                    kind_err = max(kind_err, err)
            report[kind] = kind_err
            worst = max(worst, kind_err)
        ag.training = False
        return worst, report, problems, kinks

    @staticmethod
    def finite_difference(p, data, flat, e, analytic, value):
        """('ok' | 'kink' | 'mismatch', relative error, detail) of element e of parameter p.

        Central differences at FD_STEP, then at a tenth of it when the two one-sided
        slopes disagree: in a smooth region they differ by about f''h (~1e-6 relative),
        while a Relu or max crossing its kink inside the step changes them by far more.
        An element that is at a kink at both steps is not compared.
        """
        orig = flat[e]
        err, numeric = 0.0, None
        for step in (FD_STEP, FD_STEP / 10):
            h = step * max(1.0, abs(orig))
            vals = []
            for delta in (h, -h, 0.0):
                flat[e] = orig + delta
                p.copy_from_numpy(data)
                vals.append(value())
            flat[e] = orig
            p.copy_from_numpy(data)
            numeric = (vals[0] - vals[1]) / (2 * h)
            err = abs(analytic - numeric) / max(abs(numeric), abs(analytic), GRAD_FLOOR)
            if err <= GRAD_RTOL:
                return "ok", err, ""
            right, left = (vals[0] - vals[2]) / h, (vals[2] - vals[1]) / h
            if abs(right - left) <= 1e-5 * (abs(right) + abs(left)) + 1e-10:
                return "mismatch", err, "analytic %.9g, numeric %.9g" % (analytic, numeric)
        return "kink", 0.0, ""

    # ---- 2. SGD in float32 ----
    def loss_f32(self, m, xs, target):
        ag, T = self.autograd, self.tensor.Tensor
        out = m.forward(*xs)[0]
        return ag.mse_loss(out, T(data=target))

    def train(self):
        m = self.sonnx.SONNXModel(self.model)
        m.train()
        self.autograd.training = True
        xs = self.tensors(np.float32)
        out0 = m.forward(*xs)[0].to_numpy()
        target = (out0 + self.rng.standard_normal(out0.shape)).astype(np.float32)
        sgd = self.opt.SGD(lr=self.lr, momentum=0.9)
        losses = []
        for _ in range(SGD_STEPS):
            loss = self.loss_f32(m, xs, target)
            losses.append(float(loss.to_numpy().reshape(-1)[0]))
            sgd(loss)
        losses.append(float(self.loss_f32(m, xs, target).to_numpy().reshape(-1)[0]))
        return m, xs, losses

    # ---- 3. export and compare ----
    def export(self, m, xs, workdir, ort_dir):
        ag, sonnx = self.autograd, self.sonnx
        ag.training = True
        m._imported.train(False)  # trace the inference form: BatchNorm with its running statistics
        named = [self.tensor.Tensor(data=x.to_numpy()) for x in xs]
        vouts = m._imported.forward_all([x._var for x in named])
        outs = [ag._wrap(v) for v in vouts]
        onnx_model = sonnx.to_onnx(named, outs, opset=17, input_names=self.input_names,
                                   output_names=["out%d" % i for i in range(len(outs))], params=m.get_params())
        ag.training = False
        expected = [o.to_numpy() for o in outs]
        path = os.path.join(workdir, self.name + ".onnx")
        with open(path, "wb") as f:
            f.write(onnx_model.SerializeToString())
        if ort_dir:
            got = run_ort(ort_dir, path, [x.to_numpy() for x in named], self.input_names, len(expected), workdir)
            peer = "onnxruntime"
        else:
            got = sonnx.prepare(path).run([x.to_numpy() for x in named])
            peer = "singa"
        worst = 0.0
        for e, g in zip(expected, got):
            g = np.asarray(g, dtype=np.float64).reshape(e.shape)
            if e.size:
                worst = max(worst, float(np.max(np.abs(g - e))) / max(1.0, float(np.max(np.abs(e)))))
        return worst, peer


ORT_SCRIPT = r"""
'use strict';
const fs = require('fs');
const [ortDir, model, spec, outPrefix] = process.argv.slice(2);
const ort = require(ortDir);
const arrays = {float32: Float32Array, int64: BigInt64Array, int32: Int32Array, float64: Float64Array};
(async () => {
  const s = await ort.InferenceSession.create(model);
  const feeds = {};
  for (const i of JSON.parse(fs.readFileSync(spec))) {
    const b = fs.readFileSync(i.file);
    const A = arrays[i.dtype];
    const data = new A(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
    feeds[i.name] = new ort.Tensor(i.dtype, data, i.shape);
  }
  const out = await s.run(feeds);
  s.outputNames.forEach((n, k) => {
    const y = Float64Array.from(out[n].data, Number);
    fs.writeFileSync(outPrefix + k + '.f64', Buffer.from(y.buffer));
  });
})().catch(e => { console.error(e); process.exit(1); });
"""


def run_ort(ort_dir, model_path, inputs, names, n_out, workdir):
    """Outputs of `model_path` on `inputs` by ONNX Runtime (onnxruntime-node), as float64 arrays."""
    script = os.path.join(workdir, "ort_multi.js")
    if not os.path.exists(script):
        with open(script, "w") as f:
            f.write(ORT_SCRIPT)
    spec = []
    for k, (name, x) in enumerate(zip(names, inputs)):
        fn = os.path.join(workdir, "in%d.bin" % k)
        np.ascontiguousarray(x).tofile(fn)
        spec.append({"name": name, "dtype": str(x.dtype), "shape": list(x.shape), "file": fn})
    spec_path = os.path.join(workdir, "spec.json")
    with open(spec_path, "w") as f:
        json.dump(spec, f)
    prefix = os.path.join(workdir, "out")
    subprocess.run(["node", script, ort_dir, model_path, spec_path, prefix], check=True, timeout=300)
    return [np.fromfile(prefix + "%d.f64" % k, dtype=np.float64) for k in range(n_out)]


def check_opset11_export(sonnx, autograd, tensor, ort_dir, workdir):
    """Max |export - numpy| of a small opset-11 graph whose ops changed form at opset 13
    (Softmax over flattened trailing axes, Unsqueeze / ReduceSum / Split axes as
    attributes), recorded on the tape and exported at opset 17."""
    import onnx
    import onnx.numpy_helper
    from onnx import TensorProto, helper
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    w = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    nodes = [helper.make_node("Mul", ["x", "w"], ["m"]),
             helper.make_node("Softmax", ["m"], ["s"]),              # axis 1 of 4: over 60 values
             helper.make_node("Unsqueeze", ["s"], ["u"], axes=[0]),
             helper.make_node("ReduceSum", ["u"], ["r"], axes=[3], keepdims=0),
             helper.make_node("Split", ["r"], ["a", "b"], axis=2, split=[1, 2])]
    graph = helper.make_graph(nodes, "opset11", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["a", "b", "c", "d"])
                               for n in ("a", "b")], [onnx.numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    m = x * w
    e = np.exp(m.reshape(2, -1) - m.reshape(2, -1).max(axis=1, keepdims=True))
    r = (e / e.sum(axis=1, keepdims=True)).reshape(x.shape).sum(axis=2)[None]
    expected = [r[:, :, :1], r[:, :, 1:]]
    net = sonnx.SONNXModel(model)
    autograd.training = True
    xt = tensor.Tensor(data=x)
    outs = net.forward(xt)
    exported = sonnx.to_onnx([xt], outs, opset=17, input_names=["x"])
    autograd.training = False
    path = os.path.join(workdir, "opset11.onnx")
    onnx.save(exported, path)
    got = run_ort(ort_dir, path, [x], ["x"], 2, workdir) if ort_dir else sonnx.prepare(path).run([x])
    return max(float(np.max(np.abs(np.asarray(g).reshape(-1) - ex.reshape(-1)))) for g, ex in zip(got, expected))


def main(argv):
    if len(argv) < 4:
        print(__doc__)
        return 2
    build, source, cases = argv[1:4]
    wanted = argv[4:] or list(FAMILIES)
    try:
        import onnx  # noqa: F401
    except ImportError:
        print("SKIP: /usr/bin/python3 lacks onnx")
        return SKIP
    if not os.path.isdir(cases):
        try:
            import torch  # noqa: F401
        except ImportError:
            print("SKIP: no model cases in %s and no torch to export them" % cases)
            return SKIP
        print("FAIL: no model cases in %s (ninja -C build tests/models/cases)" % cases)
        return 1
    try:
        pkg_root = load_singa(build, source)
    except Skip as e:
        print("SKIP:", e)
        return SKIP
    from singa import autograd, opt, sonnx, tensor
    ort_dir = os.path.join(source, "bench", "node_modules", "onnxruntime-node")
    if not (shutil.which("node") and os.path.isdir(ort_dir)):
        print("note: node or onnxruntime-node missing; exports are checked with singa's own inference")
        ort_dir = None
    workdir = tempfile.mkdtemp(prefix="singa_families_")
    failed = []
    try:
        for name in wanted:
            case, shapes, lr = FAMILIES[name]
            case_dir = os.path.join(cases, case)
            if not os.path.isdir(case_dir):
                print("FAIL %s: no case folder %s" % (name, case_dir))
                failed.append(name)
                continue
            t0 = time.time()
            fam = Family(name, case_dir, shapes, lr, (sonnx, autograd, tensor, opt))
            try:
                gerr, kinds, problems, kinks = fam.check_gradients()
                m, xs, losses = fam.train()
                xerr, peer = fam.export(m, xs, workdir, ort_dir)
            except Exception as e:  # one family's failure must not hide the others'
                autograd.training = False
                print("FAIL %s: %s: %s" % (name, type(e).__name__, str(e).splitlines()[0] if str(e) else ""))
                failed.append(name)
                continue
            ok = not problems and losses[-1] < losses[0] and xerr < EXPORT_TOL
            print("%s %s: grad max rel err %.2e over %s (%d at kinks); loss %.5g -> %.5g (%d SGD steps); "
                  "export vs %s %.2e; %.1fs"
                  % ("PASS" if ok else "FAIL", name, gerr, ",".join(sorted(kinds)), kinks, losses[0], losses[-1],
                     SGD_STEPS, peer, xerr, time.time() - t0))
            for p in problems:
                print("    gradient mismatch:", p)
            if not ok:
                failed.append(name)
            sys.stdout.flush()
        err = check_opset11_export(sonnx, autograd, tensor, ort_dir, workdir)
        print("%s opset-11 ops exported at opset 17: max |export - numpy| %.2e" % ("PASS" if err < 1e-5 else "FAIL", err))
        if err >= 1e-5:
            failed.append("opset11_export")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        shutil.rmtree(pkg_root, ignore_errors=True)
    bad = [f for f in failed if f in FAMILIES]
    print("%d of %d families re-train end to end%s" % (len(wanted) - len(bad), len(wanted),
                                                       "; failed: " + ", ".join(failed) if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
