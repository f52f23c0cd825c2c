"""Shared pieces of the model-case generators: weight preparation and the backend-test writer.

A case is CASE/model.onnx plus CASE/test_data_set_N/{input,output}_K.pb (onnx TensorProto).
"""

import contextlib
import io
import os

import numpy as np
import onnx
from onnx import numpy_helper
import torch
import torch.nn as nn


def calibrate_batchnorm(model, batches):
    """Give every BatchNorm the statistics of real activations.

    Freshly built BatchNorms have mean 0 / variance 1, which makes them nearly the identity in
    eval mode: a runtime that dropped or mis-folded them would still pass. Running random batches
    in train mode with a cumulative average gives non-trivial, well-scaled statistics instead.
    """
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.reset_running_stats()
            m.momentum = None
    model.train()
    with torch.no_grad():
        for b in batches:
            model(b)
    model.eval()


def randomise_affine(model, seed):
    """BatchNorm and LayerNorm start with gamma=1, beta=0; random values make the scale/shift count."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.modules.batchnorm._BatchNorm, nn.LayerNorm)):
                m.weight.copy_(torch.rand(m.weight.shape, generator=g) + 0.5)
                m.bias.copy_(torch.randn(m.bias.shape, generator=g) * 0.1)


def scale_outputs(model, layer, sample):
    """Rescale `layer` (the last affine layer) so `model(sample)` has a standard deviation of 1.

    Deep stacks with default initialisation can leave logits of ~1e-2, where the suite's atol
    would accept almost anything; outputs of order one keep the relative bound in charge.
    """
    model.eval()
    with torch.no_grad():
        std = float(model(sample).std())
        layer.weight.div_(std)
        if layer.bias is not None:
            layer.bias.div_(std)


def write_tensor(path, name, value):
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    # np.ascontiguousarray would turn a 0-d (scalar) value into shape [1].
    tensor = numpy_helper.from_array(np.array(value, order="C"), name=name)
    with open(path, "wb") as f:
        f.write(tensor.SerializeToString())


def graph_op_types(graph):
    """Op types of a graph and of every subgraph inside it (If branches, Loop bodies)."""
    ops = set()
    for node in graph.node:
        ops.add(node.op_type)
        for attr in node.attribute:
            for sub in list(attr.graphs) + ([attr.g] if attr.HasField("g") else []):
                ops |= graph_op_types(sub)
    return ops


def write_proto_case(root, name, proto, data_sets, reference, check=True):
    """Save `proto` as root/name and, for each input list in `data_sets`, `reference(*inputs)`.

    `reference` is the independent implementation (PyTorch or numpy) whose outputs the runtime
    must match; it returns one tensor or a tuple, in graph-output order. `check=False` is for
    models that onnx.checker cannot or must not pass (an IR or opset newer than the installed
    onnx library, a graph written out of order on purpose); their generators check them instead.
    """
    if check:
        onnx.checker.check_model(proto)
    case_dir = os.path.join(root, name)
    os.makedirs(case_dir)
    onnx.save(proto, os.path.join(case_dir, "model.onnx"))

    initializers = {init.name for init in proto.graph.initializer}
    graph_inputs = [i.name for i in proto.graph.input if i.name not in initializers]
    graph_outputs = [o.name for o in proto.graph.output]
    largest = 0.0
    for d, inputs in enumerate(data_sets):
        outputs = reference(*inputs)
        if not isinstance(outputs, (tuple, list)):
            outputs = (outputs,)
        if len(graph_inputs) != len(inputs) or len(graph_outputs) != len(outputs):
            raise RuntimeError(f"{name}: exported graph has {len(graph_inputs)} inputs / "
                               f"{len(graph_outputs)} outputs, model has {len(inputs)} / {len(outputs)}")
        data_dir = os.path.join(case_dir, f"test_data_set_{d}")
        os.makedirs(data_dir)
        for k, (n, t) in enumerate(zip(graph_inputs, inputs)):
            write_tensor(os.path.join(data_dir, f"input_{k}.pb"), n, t)
        for k, (n, t) in enumerate(zip(graph_outputs, outputs)):
            t = torch.as_tensor(t.detach() if isinstance(t, torch.Tensor) else t)
            if t.is_floating_point():
                if not torch.all(torch.isfinite(t)):
                    raise RuntimeError(f"{name}: reference output {n} is not finite; "
                                       "the case would test nothing")
                largest = max(largest, float(t.abs().max()))
            write_tensor(os.path.join(data_dir, f"output_{k}.pb"), n, t)
    ops = sorted(graph_op_types(proto.graph))
    opset = max(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx"))
    # max|out| is printed so a case whose outputs all sit under atol (and so test little)
    # shows up in the log.
    print(f"{name}: opset {opset}, {len(proto.graph.node)} nodes, {len(data_sets)} data set(s), "
          f"max|out| {largest:.3g}: {' '.join(ops)}", flush=True)


_captured = None


@contextlib.contextmanager
def capturing_cases():
    """Within this block write_case exports nothing and records its arguments in the list
    yielded, so another family can re-export a case's model, inputs and reference its own way
    (cases_newer.py rewrites them at newer opsets and in float16)."""
    global _captured
    saved, _captured = _captured, []
    try:
        yield _captured
    finally:
        _captured = saved


def export_model(model, export_inputs, opset, input_names, output_names, dynamic_axes=None,
                 training=torch.onnx.TrainingMode.EVAL):
    """torch.onnx.export into memory; returns the ModelProto."""
    model.eval()
    # Export and the reference forward run with autograd enabled on purpose: under no_grad,
    # eval-mode nn.TransformerEncoderLayer switches to a fused kernel the exporter cannot write.
    buf = io.BytesIO()
    torch.onnx.export(model, tuple(export_inputs), buf, opset_version=opset,
                      input_names=input_names, output_names=output_names,
                      dynamic_axes=dynamic_axes,
                      do_constant_folding=training == torch.onnx.TrainingMode.EVAL,
                      training=training)
    return onnx.load_from_string(buf.getvalue())


def write_case(root, name, model, data_sets, opset, input_names, output_names,
               dynamic_axes=None, export_inputs=None, training=torch.onnx.TrainingMode.EVAL):
    """Export `model` and write PyTorch's outputs for each input list in `data_sets`.

    Each entry of `data_sets` becomes test_data_set_N. `export_inputs` is what the tracer sees
    (defaults to the first data set; a different batch size proves that a dynamic axis really
    is dynamic). TrainingMode.EVAL lets the exporter fold BatchNorm into Conv; PRESERVE (with
    the model in eval mode) keeps the BatchNormalization nodes, so the runtime's own BatchNorm
    kernel and fusion get tested. A torch.jit.ScriptModule exports its control flow as If/Loop.
    """
    model.eval()
    export_inputs = data_sets[0] if export_inputs is None else export_inputs
    if _captured is not None:
        _captured.append(dict(name=name, model=model, data_sets=data_sets, opset=opset,
                              input_names=input_names, output_names=output_names,
                              dynamic_axes=dynamic_axes, export_inputs=export_inputs,
                              training=training))
        return
    proto = export_model(model, export_inputs, opset, input_names, output_names,
                         dynamic_axes, training)
    write_proto_case(root, name, proto, data_sets, model)
