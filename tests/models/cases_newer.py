"""Models as today's exporters and converters write them, from models torch 1.13 exports.

PyTorch 1.13 writes at most opset 17 / IR 8, while current exporters write opset 18 and newer
at IR 10 and up, and the ubiquitous float16 converter (onnxconverter-common's
convert_float_to_float16) leaves graphs whose nodes are out of order. Neither tool is installed
here, so this module carries two small converters of its own and applies them to models of the
other families, with PyTorch's float32 outputs as the expected values:

- `upgrade_opset`: an opset-17 model rewritten at opset 18..23 (IR 10, or IR 11 at opset 23),
  converting every op whose signature changed on the way (Reduce* `axes` from attribute to input
  at 18, Split's `num_outputs` at 18, Pad's `axes` input at 18, Resize's `axes` attribute at 18)
  and refusing the ops whose meaning changed that it does not convert (DFT-20, GridSample-20,
  GroupNormalization-21, ...). The rest only gained types.
- `convert_float16`: float initializers and constants to float16, float32 graph inputs and outputs
  kept by Cast nodes APPENDED to the node list (as the common converter does), so the graph is
  not topologically sorted; optionally some op types kept in float32 between Casts.

onnx 1.12's checker knows neither IR 10 nor opset 18, and refuses unsorted graphs, so these
cases are written unchecked; each converter checks its own output instead (see _check_upgraded
and _check_float16).
"""

import copy

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

from export_helpers import (calibrate_batchnorm, capturing_cases, export_model,
                            randomise_affine, scale_outputs, write_case,
                            write_proto_case)

PRESERVE = torch.onnx.TrainingMode.PRESERVE

# ---------------------------------------------------------------------------------------------
# Opset upgrade

# Ops whose opset-18 version takes `axes` as an optional int64 input instead of an attribute.
REDUCE_AXES_18 = {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                  "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}
# Ops whose meaning (not only their type lists) changed between opsets 18 and 23 in ways this
# converter does not rewrite: refuse rather than write a model that means something else.
# Every other version in that range only added types or optional attributes/inputs whose
# defaults keep the old behaviour (AveragePool-19 dilations, Cast-19 saturate, LpPool-18
# ceil_mode, Resize-19 half_pixel_symmetric, Pad-19 wrap, ScatterND/Elements-18 min/max, ...).
CHANGED_UNCONVERTED = {"DFT": 20, "GridSample": 20, "GroupNormalization": 21,
                       "OptionalHasElement": 18, "OptionalGetElement": 18}
NEWEST_UPGRADE = 23           # opsets above 23 changed ops (TopK-24, ...) not reviewed here
IR_FOR_OPSET = {18: 10, 19: 10, 20: 10, 21: 10, 22: 10, 23: 11}


def _ai_onnx_opset(model):
    return max(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))


def _subgraphs(node):
    for attr in node.attribute:
        if attr.type == onnx.AttributeProto.GRAPH:
            yield attr.g
        for g in attr.graphs:
            yield g


class _Scope:
    """Constant values visible in a graph: its initializers, Constant nodes and what a few
    shape-building ops compute from constants alone (PyTorch 1.13 spells F.pad's pads as
    ConstantOfShape/Concat/Reshape/Slice/Transpose/Reshape/Cast, which newer exporters fold),
    then the enclosing graphs' (a subgraph may read an outer constant by name)."""

    def __init__(self, graph, outer=None):
        self.graph, self.outer = graph, outer
        self.values = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
        for node in graph.node:
            try:
                value = self._fold(node)
            except (ValueError, IndexError):
                value = None
            if value is not None:
                self.values[node.output[0]] = value

    def _fold(self, node):
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        op = node.op_type
        if op == "Constant":
            return numpy_helper.to_array(attrs["value"]) if "value" in attrs else None
        ins = [self.const(n) if n else None for n in node.input]
        present = [v for n, v in zip(node.input, ins) if n]
        if op not in ("ConstantOfShape", "Concat", "Reshape", "Slice", "Transpose", "Cast") \
                or any(v is None for v in present) or len(node.output) != 1:
            return None
        if op == "ConstantOfShape":
            fill = numpy_helper.to_array(attrs["value"]) if "value" in attrs \
                else np.zeros(1, np.float32)
            return np.full(ins[0].astype(np.int64), fill.reshape(-1)[0], dtype=fill.dtype)
        if op == "Concat":
            return np.concatenate(ins, axis=attrs["axis"])
        if op == "Reshape":
            data, shape = ins
            if attrs.get("allowzero", 0) == 0:
                shape = [data.shape[i] if d == 0 else d for i, d in enumerate(shape)]
            return data.reshape(shape)
        if op == "Transpose":
            return np.transpose(ins[0], attrs.get("perm"))
        if op == "Cast":
            return ins[0].astype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[attrs["to"]])
        data, starts, ends = ins[:3]
        axes = ins[3] if len(ins) > 3 and ins[3] is not None else range(len(starts))
        steps = ins[4] if len(ins) > 4 and ins[4] is not None else [1] * len(starts)
        index = [slice(None)] * data.ndim
        for a, b, e, st in zip(axes, starts, ends, steps):
            index[int(a)] = slice(int(b), int(e), int(st))
        return data[tuple(index)]

    def const(self, name):
        if not name:
            return None
        if name in self.values:
            return self.values[name]
        return self.outer.const(name) if self.outer else None


def _drop_dead_nodes(graph):
    """Nodes whose outputs nothing reads any more (a folded pads computation); main graph."""
    while True:
        read = {o.name for o in graph.output}
        for node in _all_nodes(graph):
            read.update(node.input)
        keep = [n for n in graph.node if any(o in read for o in n.output)]
        if len(keep) == len(graph.node):
            return
        del graph.node[:]
        graph.node.extend(keep)


class _Upgrader:
    def __init__(self, target, use_axes):
        self.target, self.use_axes = target, use_axes
        self.count = 0
        self.changes = {}

    def _note(self, what):
        self.changes[what] = self.changes.get(what, 0) + 1

    def _int64(self, graph, is_main, hint, values):
        """An int64 constant for a new input: an initializer of the main graph, or a Constant
        node placed before its consumer in a subgraph (both are how exporters write them)."""
        self.count += 1
        name = f"{hint}__opset{self.target}_{self.count}"
        tensor = numpy_helper.from_array(np.asarray(values, dtype=np.int64), name)
        if is_main:
            graph.initializer.append(tensor)
            return name, []
        return name, [helper.make_node("Constant", [], [name], name=name, value=tensor)]

    def graph(self, graph, outer=None, is_main=True):
        scope = _Scope(graph, outer)
        nodes = []
        for node in graph.node:
            if node.domain not in ("", "ai.onnx"):
                nodes.append(node)
                continue
            since = CHANGED_UNCONVERTED.get(node.op_type)
            if since is not None and self.target >= since:
                raise RuntimeError(f"upgrade to opset {self.target}: {node.op_type} changed "
                                   f"meaning at opset {since} and is not converted here")
            for sub in _subgraphs(node):
                self.graph(sub, scope, is_main=False)
            hint = node.name or node.output[0]
            op = node.op_type
            if op in REDUCE_AXES_18:
                axes = [a for a in node.attribute if a.name == "axes"]
                if axes:
                    name, extra = self._int64(graph, is_main, hint + "_axes", axes[0].ints)
                    node.attribute.remove(axes[0])
                    del node.input[1:]
                    node.input.append(name)
                    nodes += extra
                    self._note(f"{op} axes attribute -> input")
            elif op == "Split":
                split = scope.const(node.input[1]) if len(node.input) > 1 else None
                if len(node.input) > 1 and node.input[1] and split is None:
                    pass                          # computed at run time: stays an input
                elif split is None or len(set(split.tolist())) == 1:
                    # Even split: opset 18 says so with num_outputs (the input must go; the
                    # two are exclusive, and one of them is now required).
                    del node.input[1:]
                    node.attribute.append(helper.make_attribute("num_outputs", len(node.output)))
                    self._note("Split even -> num_outputs")
                else:
                    self._note("Split uneven: split input kept")
            elif op == "Pad" and self.use_axes:
                pads = scope.const(node.input[1]) if len(node.input) > 1 else None
                if pads is not None and len(node.input) < 4:
                    rank = len(pads) // 2
                    begin, end = pads[:rank], pads[rank:]
                    axes = [a for a in range(rank) if begin[a] or end[a]]
                    if axes and len(axes) < rank:
                        # Only the padded axes, counted from the end as newer exporters do.
                        neg = [a - rank for a in axes]
                        pname, extra1 = self._int64(graph, is_main, hint + "_pads",
                                                    [begin[a] for a in axes] + [end[a] for a in axes])
                        aname, extra2 = self._int64(graph, is_main, hint + "_axes", neg)
                        value = node.input[2] if len(node.input) > 2 else ""
                        del node.input[1:]
                        node.input.extend([pname, value, aname])
                        nodes += extra1 + extra2
                        self._note("Pad pads on all axes -> pads and axes inputs")
            elif op == "Resize" and self.use_axes:
                scales = scope.const(node.input[2]) if len(node.input) > 2 else None
                roi = scope.const(node.input[1]) if len(node.input) > 1 else None
                roi_empty = len(node.input) < 2 or not node.input[1] or (roi is not None and roi.size == 0)
                if scales is not None and scales.size and roi_empty and len(node.input) < 4:
                    rank = scales.size
                    first = next((a for a in range(rank) if scales[a] != 1.0), rank)
                    if 0 < first < rank:
                        self.count += 1
                        sname = f"{hint}_scales__opset{self.target}_{self.count}"
                        t = numpy_helper.from_array(scales[first:].astype(np.float32), sname)
                        if is_main:
                            graph.initializer.append(t)
                        else:
                            nodes.append(helper.make_node("Constant", [], [sname], name=sname, value=t))
                        node.input[2] = sname
                        node.attribute.append(helper.make_attribute("axes", list(range(first, rank))))
                        self._note("Resize scales on all axes -> axes attribute")
            nodes.append(node)
        del graph.node[:]
        graph.node.extend(nodes)


def upgrade_opset(model, target, use_axes=True):
    """Rewrite an opset-17 ai.onnx model at opset `target` (18..23). Returns (model, changes)."""
    if _ai_onnx_opset(model) != 17:
        raise RuntimeError(f"upgrade_opset expects an opset-17 model, got {_ai_onnx_opset(model)}")
    if not 18 <= target <= NEWEST_UPGRADE:
        raise RuntimeError(f"upgrade_opset: target opset {target} outside 18..{NEWEST_UPGRADE}")
    model = copy.deepcopy(model)
    up = _Upgrader(target, use_axes)
    up.graph(model.graph)
    _drop_dead_nodes(model.graph)
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = target
    model.ir_version = IR_FOR_OPSET[target]
    _check_upgraded(model, target)
    return model, up.changes


def _all_nodes(graph):
    for node in graph.node:
        yield node
        for sub in _subgraphs(node):
            yield from _all_nodes(sub)


def _check_upgraded(model, target):
    """What onnx 1.12's checker cannot: the stamps, and no opset-17 signature left behind."""
    assert model.ir_version == IR_FOR_OPSET[target], model.ir_version
    assert _ai_onnx_opset(model) == target
    for node in _all_nodes(model.graph):
        names = {a.name for a in node.attribute}
        if node.op_type in REDUCE_AXES_18:
            assert "axes" not in names, f"{node.name}: {node.op_type} still has an axes attribute"
            assert len(node.input) <= 2
        if node.op_type == "Split":
            has_split = len(node.input) > 1 and bool(node.input[1])
            assert has_split != ("num_outputs" in names), f"{node.name}: Split needs exactly one"
    assert is_topologically_sorted(model.graph), "upgrade must keep the node order valid"


# ---------------------------------------------------------------------------------------------
# float16 conversion


def is_topologically_sorted(graph, outer=()):
    """Every node input is a graph input, an initializer, an outer-scope name or the output of
    an earlier node (subgraphs checked the same way against what is visible at their node)."""
    known = set(outer) | {i.name for i in graph.input} | {i.name for i in graph.initializer}
    for node in graph.node:
        if any(n and n not in known for n in node.input):
            return False
        for sub in _subgraphs(node):
            if not is_topologically_sorted(sub, known):
                return False
        known.update(node.output)
    return True


def _topologically_sorted_copy(model):
    """The same model with its nodes in a valid order (stable), for checking the converter."""
    model = copy.deepcopy(model)
    g = model.graph
    known = {i.name for i in g.input} | {i.name for i in g.initializer}
    pending, ordered = list(g.node), []
    while pending:
        rest = []
        for node in pending:
            # Outer names read by a subgraph count as inputs of the node that holds it.
            needed = [n for n in node.input if n]
            for sub in _subgraphs(node):
                inner = {i.name for i in sub.initializer} | {i.name for i in sub.input}
                for sn in _all_nodes(sub):
                    inner.update(sn.output)
                needed += [n for sn in _all_nodes(sub) for n in sn.input if n and n not in inner]
            (ordered if all(n in known for n in needed) else rest).append(node)
            if ordered and ordered[-1] is node:
                known.update(node.output)
        if len(rest) == len(pending):
            raise RuntimeError("graph has a cycle")
        pending = rest
    del g.node[:]
    g.node.extend(ordered)
    return model


FP16_MAX = float(np.finfo(np.float16).max)


def _to_fp16_array(a):
    # Finite values beyond float16's range saturate (as the common converter clamps them)
    # instead of turning into infinities; true infinities (masks) stay infinite.
    finite = np.isfinite(a)
    return np.where(finite, np.clip(a, -FP16_MAX, FP16_MAX), a).astype(np.float16)


def _fp16_tensor(t):
    return numpy_helper.from_array(_to_fp16_array(numpy_helper.to_array(t)), t.name)


def convert_float16(model, keep_float32_ops=()):
    """float32 -> float16 in the manner of onnxconverter-common's convert_float_to_float16 with
    keep_io_types=True: weights and constants become float16, float32 graph inputs and outputs
    keep their type through Cast nodes that are appended at the END of the node list (so the
    graph is out of order), intermediate value_info types follow. Nodes of `keep_float32_ops`
    stay float32 between Casts (appended too), as the converter's op_block_list does.
    Returns (model, notes)."""
    # Types of every tensor, to know which inputs of a kept-float32 node are float.
    typed = onnx.shape_inference.infer_shapes(model)
    elem = {}
    for vi in list(typed.graph.value_info) + list(typed.graph.input) + list(typed.graph.output):
        elem[vi.name] = vi.type.tensor_type.elem_type
    for init in model.graph.initializer:
        elem[init.name] = init.data_type

    model = copy.deepcopy(model)
    g = model.graph
    notes = {}
    float_names = {n for n, t in elem.items() if t == TensorProto.FLOAT}

    def note(what, n=1):
        notes[what] = notes.get(what, 0) + n

    def rename_readers(old, new):
        for node in _all_nodes(g):
            for k, n in enumerate(node.input):
                if n == old:
                    node.input[k] = new

    kept = [n for n in g.node if n.op_type in keep_float32_ops]
    kept_ids = {id(n) for n in kept}
    # Initializers read only by float32-kept nodes stay float32.
    readers = {}
    for node in _all_nodes(g):
        for n in node.input:
            readers.setdefault(n, []).append(node)
    for init in g.initializer:
        if init.data_type == TensorProto.FLOAT and \
                not all(id(r) in kept_ids for r in readers.get(init.name, [])):
            init.CopyFrom(_fp16_tensor(init))
            note("float initializers -> float16")
    still_float32 = {i.name for i in g.initializer if i.data_type == TensorProto.FLOAT}
    for node in _all_nodes(g):
        if id(node) in kept_ids:
            continue
        if node.op_type in ("Resize", "Upsample", "Range", "RandomNormal", "RandomUniform",
                            "EyeLike", "RandomNormalLike", "RandomUniformLike"):
            raise RuntimeError(f"convert_float16: {node.op_type} has float32-only inputs or a "
                               "dtype attribute this converter does not handle")
        for attr in node.attribute:
            if attr.name == "value" and attr.type == onnx.AttributeProto.TENSOR \
                    and attr.t.data_type == TensorProto.FLOAT:
                attr.t.CopyFrom(_fp16_tensor(attr.t))
                note(f"{node.op_type} float value -> float16")
            if node.op_type == "Cast" and attr.name == "to" and attr.i == TensorProto.FLOAT:
                attr.i = TensorProto.FLOAT16
                note("Cast to float -> float16")
    # Intermediate types follow (the converter rewrites value_info; it could drop it too).
    io_names = {v.name for v in g.input} | {v.name for v in g.output}
    for vi in g.value_info:
        if vi.name not in io_names and vi.type.tensor_type.elem_type == TensorProto.FLOAT:
            vi.type.tensor_type.elem_type = TensorProto.FLOAT16
            note("value_info float -> float16")
    # Graph inputs stay float32: a Cast to float16 appended at the end, readers rewired.
    for i, vi in enumerate(g.input):
        if vi.type.tensor_type.elem_type != TensorProto.FLOAT or vi.name in still_float32 \
                or vi.name in {init.name for init in g.initializer}:
            continue
        cast_out = f"{vi.name}__float16"
        rename_readers(vi.name, cast_out)
        float_names.add(cast_out)
        g.node.append(helper.make_node("Cast", [vi.name], [cast_out],
                                       name=f"graph_input_cast_{i}", to=TensorProto.FLOAT16))
        note("float32 graph input -> appended Cast to float16")
    # Float32-kept nodes: float16 inputs cast up, float32 outputs cast down, Casts appended.
    for j, node in enumerate(kept):
        for k, n in enumerate(node.input):
            if n in float_names and n not in still_float32:
                up = f"{n}__to_float32_{j}_{k}"
                g.node.append(helper.make_node("Cast", [n], [up], name=up, to=TensorProto.FLOAT))
                node.input[k] = up
        for k, n in enumerate(node.output):
            if n in float_names:
                wide = f"{n}__float32"
                node.output[k] = wide
                g.node.append(helper.make_node("Cast", [wide], [n], name=f"{n}__to_float16",
                                               to=TensorProto.FLOAT16))
        note(f"{node.op_type} kept float32 between appended Casts")
    # Graph outputs stay float32: the producer writes a float16 tensor, an appended Cast
    # writes the output.
    for i, vi in enumerate(g.output):
        if vi.type.tensor_type.elem_type != TensorProto.FLOAT:
            continue
        half = f"{vi.name}__float16"
        for node in g.node:
            for k, n in enumerate(node.output):
                if n == vi.name:
                    node.output[k] = half
        rename_readers(vi.name, half)
        g.node.append(helper.make_node("Cast", [half], [vi.name],
                                       name=f"graph_output_cast_{i}", to=TensorProto.FLOAT))
        note("float32 graph output <- appended Cast from float16")
    _check_float16(model)
    return model, notes


def _check_float16(model):
    """The converter's output must be what it claims: out of order, refused by onnx's checker
    for exactly that, and otherwise a valid model (its sorted copy passes the full check,
    type inference included)."""
    assert not is_topologically_sorted(model.graph), "float16 graph should be out of order"
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as e:
        assert "topologically sorted" in str(e), f"checker refused it for another reason: {e}"
    else:
        raise AssertionError("onnx.checker accepted a graph that is out of order")
    onnx.checker.check_model(_topologically_sorted_copy(model), full_check=True)


# ---------------------------------------------------------------------------------------------
# A model with the ops whose opset-18 signatures gained `axes`: Pad and Resize


class UpsampleSegmenter(nn.Module):
    """A tiny encoder/decoder segmenter: reflect padding, two strided conv stages, a bilinear
    x2 upsampling joined to the skip connection, a 1x1 classifier, nearest x2 upsampling and a
    constant border. Pads and Resize scales touch only H and W, so the opset-18 rewrite uses
    Pad's `axes` input and Resize's `axes` attribute."""

    def __init__(self, classes=5):
        super().__init__()
        self.pad = nn.ReflectionPad2d((1, 1, 2, 0))
        self.down = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2), nn.BatchNorm2d(16), nn.ReLU())
        self.mid = nn.Conv2d(16, 64, 3, stride=2, padding=1)
        self.fuse = nn.Conv2d(48, 24, 3, padding=1)
        self.head = nn.Conv2d(24, classes, 1)

    def forward(self, x):
        d1 = self.down(self.pad(x))
        # A gated linear unit: an even Split (num_outputs at opset 18) and a global mean
        # (ReduceMean, axes an input at opset 18) scaling the channels.
        a, b = torch.split(self.mid(d1), [32, 32], dim=1)
        d2 = a * torch.sigmoid(b)
        d2 = d2 * torch.sigmoid(d2.mean(dim=(2, 3), keepdim=True))
        up = F.interpolate(d2, scale_factor=2.0, mode="bilinear", align_corners=False)
        y = self.head(F.relu(self.fuse(torch.cat([up, d1], dim=1))))
        y = F.interpolate(y, scale_factor=2.0, mode="nearest")
        return F.pad(y, (0, 1, 1, 0), value=0.5)


def _segmenter_case(root):
    torch.manual_seed(41)
    model = UpsampleSegmenter()
    randomise_affine(model, 41)
    calibrate_batchnorm(model, [torch.randn(4, 3, 32, 32) for _ in range(2)])
    scale_outputs(model, model.head, torch.randn(4, 3, 32, 32))
    x = torch.randn(2, 3, 32, 32)
    # Exported with constant folding (BatchNorm folded), so pads and scales are constants.
    write_case(root, "segmenter_opset17", model, [[x]], 17, ["image"], ["scores"])


class NormalisedVoiceActivity(nn.Module):
    """cases_sequence.VoiceActivity with per-utterance feature normalisation inside the If
    branches (mean removal at 16 kHz, peak scaling at 8 kHz): ReduceMean and ReduceMax in a
    subgraph, whose opset-18 axes inputs are Constant nodes of the branch."""

    def __init__(self):
        super().__init__()
        self.filters16 = nn.Conv1d(1, 24, 32, stride=16)
        self.filters8 = nn.Conv1d(1, 24, 16, stride=8)
        self.lstm16 = nn.LSTM(24, 32, batch_first=True)
        self.lstm8 = nn.LSTM(24, 32, batch_first=True)
        self.head = nn.Linear(32, 1)

    def forward(self, audio: torch.Tensor, sr: torch.Tensor, h: torch.Tensor, c: torch.Tensor):
        if bool(sr == 16000):
            feats = torch.relu(self.filters16(audio.unsqueeze(1))).transpose(1, 2)
            feats = feats - feats.mean(dim=1, keepdim=True)
            out, (h2, c2) = self.lstm16(feats, (h, c))
        else:
            feats = torch.relu(self.filters8(audio.unsqueeze(1))).transpose(1, 2)
            feats = feats / (feats.amax(dim=1, keepdim=True) + 1e-3)
            out, (h2, c2) = self.lstm8(feats, (h, c))
        return torch.sigmoid(self.head(out[:, -1])), h2, c2


def _vad_norm_case(root):
    torch.manual_seed(42)
    model = torch.jit.script(NormalisedVoiceActivity())
    h, c = torch.randn(1, 2, 32) * 0.1, torch.randn(1, 2, 32) * 0.1
    audio = torch.randn(2, 512)
    data_sets = [[audio, torch.tensor(16000), h, c], [audio, torch.tensor(8000), h, c]]
    write_case(root, "vad_if_norm_opset17", model, data_sets, 17, ["audio", "sr", "h", "c"],
               ["speech", "hn", "cn"])


# ---------------------------------------------------------------------------------------------
# Cases


def _capture(case_fn):
    with capturing_cases() as captured:
        case_fn(None)
    if len(captured) != 1:
        raise RuntimeError(f"expected one case from {case_fn}, got {len(captured)}")
    return captured[0]


def _export17(c, training=None):
    return export_model(c["model"], c["export_inputs"], 17, c["input_names"], c["output_names"],
                        c["dynamic_axes"], c["training"] if training is None else training)


def _newer_case(base_fn, name, target, training=None):
    def make(root):
        c = _capture(base_fn)
        proto = _export17(c, training)
        onnx.checker.check_model(proto)          # the opset-17 export is valid before the rewrite
        proto, changes = upgrade_opset(proto, target)
        write_proto_case(root, name, proto, c["data_sets"], c["model"], check=False)
        if changes:
            print(f"  {name}: " + "; ".join(f"{k} x{v}" for k, v in sorted(changes.items())),
                  flush=True)
    return make


def _fp16_case(base_fn, name, keep_float32_ops=(), training=None, opset=None, prepare=None):
    def make(root):
        c = _capture(base_fn)
        if prepare:
            prepare(c["model"])
        proto = export_model(c["model"], c["export_inputs"], opset or c["opset"],
                             c["input_names"], c["output_names"], c["dynamic_axes"],
                             c["training"] if training is None else training)
        onnx.checker.check_model(proto)
        proto, notes = convert_float16(proto, keep_float32_ops)
        write_proto_case(root, name, proto, c["data_sets"], c["model"], check=False)
        print(f"  {name}: " + "; ".join(f"{k} x{v}" for k, v in sorted(notes.items())), flush=True)
    return make


def cases(base):
    """The opset-18+ cases, built from the base families' case functions (name -> function)."""
    b = dict(base)
    b["segmenter_opset17"] = _segmenter_case
    b["vad_if_norm_opset17"] = _vad_norm_case
    plan = [
        # CNN with BatchNorm kept and a ReduceMean global pool (axes -> input).
        ("shufflenet_v2_x0_5_opset17", "shufflenet_v2_x0_5_opset18_ir10", 18, None),
        # depthwise CNN, BatchNorm kept (re-exported with PRESERVE), GlobalAveragePool, Clip.
        ("mobilenet_v2_opset11", "mobilenet_v2_opset21_ir10", 21, PRESERVE),
        ("mobilenet_v2_opset11", "mobilenet_v2_opset23_ir11", 23, PRESERVE),
        # BERT: dynamic axes, LayerNormalization, Softmax, Erf.
        ("bert_encoder_opset17", "bert_encoder_opset18_ir10", 18, None),
        ("bert_encoder_opset17", "bert_encoder_opset23_ir11", 23, None),
        # Split (uneven: input kept; even: num_outputs), ReduceMax/ReduceSum.
        ("tensor_ops_opset17", "tensor_ops_opset18_ir10", 18, None),
        # ReduceMean, Softmax, ArgMax in an unrolled attention decoder.
        ("ocr_attention_opset13", "ocr_attention_opset18_ir10", 18, None),
        # ReduceL2 (F.normalize), PRelu, BatchNorm.
        ("arcface_opset11", "arcface_opset18_ir10", 18, None),
        # Pad (axes input) and Resize (axes attribute), reflect and constant padding.
        ("segmenter_opset17", "segmenter_opset18_ir10", 18, None),
        ("segmenter_opset17", "segmenter_opset19_ir10", 19, None),
        # Recurrent classifiers: LSTM/GRU with sequence_lens, TopK, ScatterElements.
        ("lstm_classifier_opset13", "lstm_classifier_opset18_ir10", 18, None),
        ("gru_classifier_opset11", "gru_classifier_opset22_ir10", 22, None),
        # Silero-VAD-shaped models at IR 10 / opset 18: If and Loop with LSTMs inside.
        ("vad_if_lstm_opset17", "vad_if_lstm_opset18_ir10", 18, None),
        ("vad_loop_lstm_opset13", "vad_loop_lstm_opset18_ir10", 18, None),
        ("vad_if_lstm_opset17", "vad_if_lstm_opset23_ir11", 23, None),
        # Reduce nodes inside the If branches: their axes become Constant nodes of the branch.
        ("vad_if_norm_opset17", "vad_if_norm_opset18_ir10", 18, None),
    ]
    out = {name: _newer_case(b[src], name, target, training)
           for src, name, target, training in plan}
    return out


def fp16_cases(base):
    """The float16-converter cases (checked with their own tolerances)."""
    return {
        # The MNIST CNN's default initialisation leaves logits of ~0.1, where the float16
        # suite's atol would accept too much: rescaled to unit spread first.
        "mnist_cnn_fp16": _fp16_case(
            base["mnist_cnn_opset13"], "mnist_cnn_fp16",
            prepare=lambda m: scale_outputs(m, m.fc2, torch.randn(8, 1, 28, 28,
                                            generator=torch.Generator().manual_seed(31)))),
        "resnet18_fp16": _fp16_case(base["resnet18_opset17"], "resnet18_fp16"),
        # BERT's inputs are int64, so only a float32-kept op puts Casts before their readers:
        # LayerNormalization stays float32, as converter users often keep it.
        "bert_encoder_fp16": _fp16_case(base["bert_encoder_opset17"], "bert_encoder_fp16",
                                        keep_float32_ops=("LayerNormalization",)),
    }
