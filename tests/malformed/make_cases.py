#!/usr/bin/python3
"""Write the malformed-model corpus: models and inputs that singa must refuse with one clear error.

    /usr/bin/python3 make_cases.py OUTDIR

OUTDIR/cases/NAME/ holds each case's model.onnx and input files, OUTDIR/outside/ holds files that
no case may read (external data pointing there must be refused), and OUTDIR/manifest.json lists, per
case, the `singa` arguments ({case} stands for the case folder), the substring the error line must
contain, the exit code (1; 2 only for what docs/cli.md calls bad usage) and why the case exists.
Everything is generated, deterministic and small (the "huge" tensors are only declared).
"""

import json
import os
import shutil
import sys
import warnings

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

CASES = []


def case(name, expect, why, exit_code=1, command="run", extra=(), xfail=None):
    """Register a case; the decorated function writes its files into the case folder."""
    def register(fn):
        CASES.append(dict(name=name, expect=expect, why=why, exit=exit_code, command=command,
                          extra=list(extra), xfail=xfail, make=fn))
        return fn
    return register


def vi(name, elem=TensorProto.FLOAT, shape=(1, 3, 4, 4)):
    """A tensor value; an int for `shape` means that rank with symbolic dims (the checker wants a shape)."""
    if isinstance(shape, int):
        shape = ["%s_d%d" % (name, i) for i in range(shape)]
    return helper.make_tensor_value_info(name, elem, shape)


def make(nodes, inputs, outputs, inits=(), opset=13, ir=8, extra_opsets=(), sparse=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits),
                              sparse_initializer=list(sparse))
    ops = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in extra_opsets]
    m = helper.make_model(graph, opset_imports=ops, producer_name="malformed-corpus")
    m.ir_version = ir
    return m


def arr(values, dtype=np.float32):
    return np.array(values, dtype=dtype)


def raw_tensor(name, elem, dims, data):
    """A TensorProto whose dims and raw_data need not agree (make_tensor would refuse)."""
    t = TensorProto()
    t.name, t.data_type, t.raw_data = name, elem, data
    t.dims.extend(dims)
    return t


def init(name, values):
    return numpy_helper.from_array(np.asarray(values), name)


def save(d, model, name="model.onnx"):
    data = model if isinstance(model, (bytes, bytearray)) else model.SerializeToString()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def conv_model():
    """A valid Conv+Relu model with real weights: the base for truncation."""
    rng = np.random.RandomState(0)
    w = init("W", rng.rand(2, 3, 3, 3).astype(np.float32))
    b = init("B", rng.rand(2).astype(np.float32))
    nodes = [helper.make_node("Conv", ["x", "W", "B"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    return make(nodes, [vi("x")], [vi("y", shape=(1, 2, 4, 4))], [w, b])


def relu_model(shape=(2, 3), elem=TensorProto.FLOAT):
    return make([helper.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", elem, shape)],
                [vi("y", elem, shape)])


def single(op, inputs, inits=(), attrs=None, opset=13, in_shape=(2, 3), out_shape=2, name=None,
           in_elem=TensorProto.FLOAT, out_elem=TensorProto.FLOAT, domain=None, extra_opsets=()):
    """A one-node model: graph input x, the node's other inputs from initializers."""
    node = helper.make_node(op, inputs, ["y"], name=name or op.lower(), domain=domain, **(attrs or {}))
    return make([node], [vi("x", in_elem, in_shape)], [vi("y", out_elem, out_shape)], inits, opset=opset,
                extra_opsets=extra_opsets)


def external(d, tensor, location, offset=None, length=None):
    """Marks an initializer as external data at `location` (file created by the caller)."""
    tensor.ClearField("raw_data")
    tensor.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", offset), ("length", length)):
        if v is not None:
            e = tensor.external_data.add()
            e.key, e.value = k, str(v)
    return tensor


def ext_model(tensor):
    """Add(x, W) where W is the external initializer."""
    return make([helper.make_node("Add", ["x", "W"], ["y"], name="add")], [vi("x", shape=tensor.dims)],
                [vi("y", shape=tensor.dims)], [tensor])


# ------------------------------------------------------------------------- valid controls
# Models that must run (exit 0, no error line): they show the refusals below are not a
# runtime that refuses everything, and they share the harness (strace, timeout).

@case("control_valid_conv", "", "a valid Conv+Relu model", exit_code=0)
def _(d):
    save(d, conv_model())


@case("control_external_data", "", "a valid model whose weight is external data in its own folder", exit_code=0)
def _(d):
    t = ext_tensor()
    with open(os.path.join(d, "weights.bin"), "wb") as f:
        f.write(t.raw_data)
    save(d, ext_model(external(d, t, "weights.bin", length=24)))


# ------------------------------------------------------------------------------------------ files

@case("empty_file", "empty file", "zero bytes")
def _(d):
    save(d, b"")


@case("random_bytes", "not a valid ONNX model", "4 KB of seeded random bytes")
def _(d):
    save(d, np.random.RandomState(1).bytes(4096))


@case("text_file", "not a valid ONNX model", "a text file named .onnx")
def _(d):
    save(d, b"this is not an onnx model\n" * 8)


for _frac in (0.02, 0.3, 0.5, 0.9, 0.999):
    @case("truncated_%03d" % int(_frac * 1000), "not a valid ONNX model",
          "a valid model cut at %.1f%% of its length" % (_frac * 100))
    def _(d, frac=_frac):
        data = conv_model().SerializeToString()
        save(d, data[:max(1, int(len(data) * frac))])


@case("tensor_proto_not_model", "not", "a valid TensorProto (an input .pb) given as the model")
def _(d):
    save(d, numpy_helper.from_array(np.arange(64, dtype=np.float32).reshape(8, 8), "t"))


@case("ir_version_0", "no ir_version", "ir_version 0 (unset)")
def _(d):
    m = relu_model()
    m.ir_version = 0
    save(d, m)


@case("no_graph", "no graph", "a ModelProto with ir_version and opsets but no graph")
def _(d):
    m = onnx.ModelProto()
    m.ir_version = 8
    m.opset_import.add().version = 13
    save(d, m)


@case("no_opset_import", "no opset_import", "IR 8 model without opset_import")
def _(d):
    m = relu_model()
    del m.opset_import[:]
    save(d, m)


@case("missing_model_file", "no such file", "the model path does not exist", extra=())
def _(d):
    pass  # nothing written: {case}/model.onnx is absent


@case("model_is_folder", "is a folder", "the model path is a directory")
def _(d):
    os.makedirs(os.path.join(d, "model.onnx"))


# ------------------------------------------------------------------------------------------ graph

@case("cycle", "cycle", "two nodes feeding each other")
def _(d):
    nodes = [helper.make_node("Add", ["x", "b"], ["a"], name="n_a"),
             helper.make_node("Relu", ["a"], ["b"], name="n_b"),
             helper.make_node("Relu", ["a"], ["y"], name="n_y")]
    m = make(nodes, [vi("x", shape=(2, 3))], [vi("y", shape=(2, 3))])
    save(d, m)


@case("dangling_input", "nowhere", "a node reads a value no node, input or initializer produces")
def _(d):
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="r1"),
             helper.make_node("Add", ["a", "nowhere"], ["y"], name="add")]
    save(d, make(nodes, [vi("x", shape=(2, 3))], [vi("y", shape=(2, 3))]))


@case("duplicate_output", "dup", "two nodes write the same output name")
def _(d):
    nodes = [helper.make_node("Relu", ["x"], ["dup"], name="r1"),
             helper.make_node("Neg", ["x"], ["dup"], name="r2"),
             helper.make_node("Relu", ["dup"], ["y"], name="r3")]
    save(d, make(nodes, [vi("x", shape=(2, 3))], [vi("y", shape=(2, 3))]))


@case("node_lists_output_twice", "'p'", "one Split node naming the same output twice")
def _(d):
    nodes = [helper.make_node("Split", ["x"], ["p", "p"], name="split", axis=1),
             helper.make_node("Relu", ["p"], ["y"], name="relu")]
    save(d, make(nodes, [vi("x", shape=(2, 4))], [vi("y", shape=(2, 2))]))


@case("output_never_produced", "ghost_out", "a graph output no node writes")
def _(d):
    save(d, make([helper.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", shape=(2, 3))],
                 [vi("y", shape=(2, 3)), vi("ghost_out", shape=(2, 3))]))


@case("missing_initializer", "'W'", "Conv weight neither initializer nor input")
def _(d):
    m = conv_model()
    del m.graph.initializer[0]
    save(d, m)


@case("initializer_twice", "B", "two initializers with the same name")
def _(d):
    m = conv_model()
    m.graph.initializer.append(m.graph.initializer[1])
    save(d, m)


@case("input_twice", "x", "the same graph input listed twice")
def _(d):
    m = relu_model()
    m.graph.input.append(m.graph.input[0])
    save(d, m)


@case("empty_op_type", "op_type", "a node without op_type")
def _(d):
    m = relu_model()
    m.graph.node[0].op_type = ""
    save(d, m)


@case("input_negative_dim", "-5", "a graph input declared with dim_value -5")
def _(d):
    m = relu_model()
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_value = -5
    save(d, m)


# ------------------------------------------------------------------------------------ initializers

@case("mistyped_initializer", "int64", "Add of a float input and an int64 initializer")
def _(d):
    save(d, single("Add", ["x", "c"], [init("c", arr([[1, 2, 3]], np.int64))], in_shape=(2, 3), out_shape=(2, 3)))


@case("raw_data_too_short", "raw_data holds 8 bytes", "raw_data shorter than shape x dtype size")
def _(d):
    t = init("c", arr(np.ones((2, 3))))
    t.raw_data = t.raw_data[:8]
    save(d, single("Add", ["x", "c"], [t], out_shape=(2, 3)))


@case("raw_data_too_long", "raw_data holds 28 bytes", "raw_data longer than shape x dtype size")
def _(d):
    t = init("c", arr(np.ones((2, 3))))
    t.raw_data = t.raw_data + b"\0" * 4
    save(d, single("Add", ["x", "c"], [t], out_shape=(2, 3)))


@case("float_data_count", "holds 5 values", "float_data with 5 values for a [2,3] tensor")
def _(d):
    t = helper.make_tensor("c", TensorProto.FLOAT, [2, 3], [1.0] * 6)
    del t.float_data[5:]
    save(d, single("Add", ["x", "c"], [t], out_shape=(2, 3)))


@case("negative_dims", "negative dimension", "initializer with dims [-1, 3]")
def _(d):
    t = init("c", arr(np.ones((2, 3))))
    t.dims[0] = -1
    save(d, single("Add", ["x", "c"], [t], out_shape=(2, 3)))


@case("huge_initializer", "raw_data holds 16 bytes", "10^12-element initializer with 16 bytes of data")
def _(d):
    t = raw_tensor("c", TensorProto.FLOAT, [1000000, 1000000], b"\0" * 16)
    save(d, single("Add", ["x", "c"], [t], in_shape=(1, 1)))


@case("overflowing_dims", "absurdly large", "dims whose product overflows int64")
def _(d):
    t = raw_tensor("c", TensorProto.FLOAT, [1 << 62, 1 << 62], b"")
    save(d, single("Add", ["x", "c"], [t], in_shape=(1, 1)))


@case("unsupported_data_type", "data_type 99", "initializer with data_type 99")
def _(d):
    t = init("c", arr(np.ones((2, 3))))
    t.data_type = 99
    save(d, single("Add", ["x", "c"], [t], out_shape=(2, 3)))


@case("string_data_count", "string_data holds 1", "string tensor with too few strings")
def _(d):
    t = helper.make_tensor("c", TensorProto.STRING, [3], [b"a", b"b", b"c"])
    del t.string_data[1:]
    node = helper.make_node("Identity", ["c"], ["y"], name="id")
    save(d, make([node], [], [helper.make_tensor_value_info("y", TensorProto.STRING, [3])], [t]))


@case("sparse_initializer", "sparse", "a sparse initializer")
def _(d):
    values = init("c", arr([1.0]))
    indices = init("c_idx", arr([0], np.int64))
    sp = helper.make_sparse_tensor(values, indices, [2, 3])
    save(d, make([helper.make_node("Add", ["x", "c"], ["y"], name="add")], [vi("x", shape=(2, 3))],
                 [vi("y", shape=(2, 3))], sparse=[sp]))


@case("huge_rank_initializer", "rank", "an initializer of rank 5000 (all dims 1)")
def _(d):
    t = raw_tensor("c", TensorProto.FLOAT, [1] * 5000, b"\0" * 4)
    node = helper.make_node("Relu", ["c"], ["y"], name="relu")
    save(d, make([node], [], [vi("y", shape=5000)], [t]))


@case("huge_rank_input", "rank", "a graph input of rank 5000")
def _(d):
    save(d, relu_model(shape=[1] * 5000))


# ------------------------------------------------------------------------------------- ops/opsets

@case("unknown_domain", "com.example.evil", "a node in an imported but unknown domain")
def _(d):
    save(d, single("Frobnicate", ["x"], domain="com.example.evil", extra_opsets=[("com.example.evil", 1)]))


@case("domain_not_imported", "com.example.other", "a node in a domain the model does not import")
def _(d):
    save(d, single("Frobnicate", ["x"], domain="com.example.other"))


@case("unknown_op", "NoSuchOp", "an op ONNX does not define")
def _(d):
    save(d, single("NoSuchOp", ["x"]))


@case("opset_too_new", "opset", "default-domain opset 99")
def _(d):
    save(d, relu_model().__class__.FromString(make([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                                                    [vi("x", shape=(2, 3))], [vi("y", shape=(2, 3))],
                                                    opset=99).SerializeToString()))


@case("attribute_wrong_type", "strides", "Conv strides given as floats")
def _(d):
    m = conv_model()
    m.graph.node[0].attribute.append(helper.make_attribute("strides", [1.0, 1.0]))
    save(d, m)


@case("missing_required_attribute", "to", "Cast without its required 'to'")
def _(d):
    save(d, single("Cast", ["x"], out_shape=(2, 3)))


@case("graphs_attribute", "bodies", "an attribute holding a list of graphs")
def _(d):
    sub = helper.make_graph([helper.make_node("Relu", ["x"], ["z"])], "s", [], [vi("z", shape=(2, 3))])
    node = helper.make_node("Relu", ["x"], ["y"], name="relu")
    node.attribute.append(helper.make_attribute("bodies", [sub, sub]))
    save(d, make([node], [vi("x", shape=(2, 3))], [vi("y", shape=(2, 3))]))


def if_model(branch_reads):
    then_g = helper.make_graph([helper.make_node("Relu", [branch_reads], ["t"], name="then_relu")], "then", [],
                               [vi("t", shape=(2, 3))])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"], name="else_neg")], "else", [],
                               [vi("e", shape=(2, 3))])
    node = helper.make_node("If", ["cond"], ["y"], name="if", then_branch=then_g, else_branch=else_g)
    return make([node], [vi("x", shape=(2, 3)), vi("cond", TensorProto.BOOL, ())], [vi("y", shape=(2, 3))])


@case("if_missing_outer_value", "ghost", "If then-branch reads a value no enclosing graph has")
def _(d):
    save(d, if_model("ghost"))


@case("loop_missing_outer_value", "ghost", "Loop body reads a value no enclosing graph has")
def _(d):
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep"),
         helper.make_node("Add", ["acc_in", "ghost"], ["acc_out"], name="body_add")],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, ()),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, ()), vi("acc_in", shape=(2, 3))],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, ()), vi("acc_out", shape=(2, 3))])
    node = helper.make_node("Loop", ["n", "c", "x"], ["y"], name="loop", body=body)
    save(d, make([node], [vi("x", shape=(2, 3))], [vi("y", shape=(2, 3))],
                 [init("n", arr(3, np.int64)), init("c", arr(True, np.bool_))]))


# -------------------------------------------------------------------------------- external data

def ext_tensor():
    return init("W", arr(np.ones((2, 3))))


@case("external_dotdot", "escapes the model's folder", "external data at ../../outside/secret.bin")
def _(d):
    save(d, ext_model(external(d, ext_tensor(), "../../outside/secret.bin")))


@case("external_absolute", "is absolute", "external data at the absolute path of a file outside")
def _(d):
    secret = os.path.abspath(os.path.join(d, "..", "..", "outside", "secret.bin"))
    save(d, ext_model(external(d, ext_tensor(), secret)))


@case("external_symlink", "resolves outside", "external data through a symlink that leaves the folder")
def _(d):
    os.symlink(os.path.join("..", "..", "outside", "secret.bin"), os.path.join(d, "weights.bin"))
    save(d, ext_model(external(d, ext_tensor(), "weights.bin")))


@case("external_missing_file", "absent.bin", "external data file that does not exist")
def _(d):
    save(d, ext_model(external(d, ext_tensor(), "absent.bin")))


@case("external_short_file", "shorter than offset+length", "external file of 10 bytes for a 24-byte tensor")
def _(d):
    with open(os.path.join(d, "weights.bin"), "wb") as f:
        f.write(b"\1" * 10)
    save(d, ext_model(external(d, ext_tensor(), "weights.bin")))


@case("external_offset_beyond", "shorter than offset+length", "external data offset past the end of the file")
def _(d):
    with open(os.path.join(d, "weights.bin"), "wb") as f:
        f.write(b"\1" * 24)
    save(d, ext_model(external(d, ext_tensor(), "weights.bin", offset=1 << 20)))


@case("external_length_mismatch", "external data length 12", "declared length disagrees with the shape")
def _(d):
    with open(os.path.join(d, "weights.bin"), "wb") as f:
        f.write(b"\1" * 24)
    save(d, ext_model(external(d, ext_tensor(), "weights.bin", length=12)))


@case("external_bad_offset", "bad external_data entry 'offset'", "external data offset that is not a number")
def _(d):
    with open(os.path.join(d, "weights.bin"), "wb") as f:
        f.write(b"\1" * 24)
    save(d, ext_model(external(d, ext_tensor(), "weights.bin", offset="12abc")))


@case("external_3gb_declared", "shorter than offset+length", "750M-float (3 GB) external tensor, 24-byte file")
def _(d):
    with open(os.path.join(d, "weights.bin"), "wb") as f:
        f.write(b"\1" * 24)
    t = raw_tensor("W", TensorProto.FLOAT, [750000000], b"")
    node = helper.make_node("Relu", ["W"], ["y"], name="relu")
    save(d, make([node], [], [vi("y", shape=(750000000,))],
                 [external(d, t, "weights.bin", length=3000000000)]))


# ------------------------------------------------------------------------ run-time refusals

@case("constantofshape_1e12", "memory limit", "ConstantOfShape of 10^12 floats, refused by the memory limit")
def _(d):
    node = helper.make_node("ConstantOfShape", ["shape"], ["y"], name="cos",
                            value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.0]))
    save(d, make([node], [], [vi("y", shape=2)], [init("shape", arr([1000000, 1000000], np.int64))]))


@case("constantofshape_runtime_shape", "memory limit", "ConstantOfShape whose shape comes from an input at run time",
      extra=["--input", "shape={case}/shape.pb"])
def _(d):
    node = helper.make_node("ConstantOfShape", ["shape"], ["y"], name="cos")
    save(d, make([node], [helper.make_tensor_value_info("shape", TensorProto.INT64, [2])], [vi("y", shape=2)]))
    save(d, numpy_helper.from_array(arr([1000000, 1000000], np.int64), "shape"), "shape.pb")


@case("max_tensor_bytes_flag", "memory limit", "a 4 MB Expand under --max-tensor-bytes 1000000",
      extra=["--max-tensor-bytes", "1000000"])
def _(d):
    node = helper.make_node("Expand", ["x", "shape"], ["y"], name="expand")
    save(d, make([node], [vi("x", shape=(1, 1))], [vi("y", shape=2)],
                 [init("shape", arr([1024, 1024], np.int64))]))


@case("tile_huge", "memory limit", "Tile to 10^12 elements")
def _(d):
    save(d, single("Tile", ["x", "r"], [init("r", arr([1000000, 1000000], np.int64))], in_shape=(1, 1)))


@case("range_huge", "memory limit", "Range with 10^12 elements")
def _(d):
    node = helper.make_node("Range", ["s", "l", "dl"], ["y"], name="range")
    save(d, make([node], [], [vi("y", shape=2)],
                 [init("s", arr(0.0)), init("l", arr(1e12)), init("dl", arr(1.0))]))


@case("gather_index_out_of_range", "out of range", "Gather index 7 on an axis of size 2")
def _(d):
    save(d, single("Gather", ["x", "i"], [init("i", arr([7], np.int64))], out_shape=2))


@case("reshape_wrong_count", "reshape", "Reshape of 6 elements to [4,4]")
def _(d):
    save(d, single("Reshape", ["x", "s"], [init("s", arr([4, 4], np.int64))], out_shape=2))


@case("add_incompatible_shapes", "broadcast", "Add of [2,3] and [4,5]", extra=[])
def _(d):
    node = helper.make_node("Add", ["x", "z"], ["y"], name="add")
    save(d, make([node], [vi("x", shape=(2, 3)), vi("z", shape=(4, 5))], [vi("y", shape=2)]))


@case("matmul_inner_mismatch", "matmul", "MatMul of [2,3] by [4,5]")
def _(d):
    save(d, single("MatMul", ["x", "w"], [init("w", arr(np.ones((4, 5))))], out_shape=2))


@case("transpose_bad_perm", "perm", "Transpose with perm [0,0]")
def _(d):
    save(d, single("Transpose", ["x"], attrs={"perm": [0, 0]}, out_shape=2))


@case("concat_bad_axis", "axis", "Concat with axis 5 on rank-2 inputs")
def _(d):
    save(d, single("Concat", ["x", "x"], attrs={"axis": 5}, out_shape=2))


@case("slice_step_zero", "step", "Slice with a step of 0")
def _(d):
    save(d, single("Slice", ["x", "s", "e", "a", "st"],
                   [init("s", arr([0], np.int64)), init("e", arr([2], np.int64)), init("a", arr([0], np.int64)),
                    init("st", arr([0], np.int64))], out_shape=2))


@case("split_sizes_mismatch", "split", "Split sizes [1,1] for an axis of 3")
def _(d):
    node = helper.make_node("Split", ["x", "sp"], ["y", "y2"], name="split", axis=1)
    save(d, make([node], [vi("x", shape=(2, 3))], [vi("y", shape=2), vi("y2", shape=2)],
                 [init("sp", arr([1, 1], np.int64))]))


@case("conv_channel_mismatch", "channel", "Conv with 3 input channels and a weight for 5")
def _(d):
    m = conv_model()
    m.graph.initializer[0].CopyFrom(init("W", np.ones((2, 5, 3, 3), np.float32)))
    save(d, m)


# ---------------------------------------------------------------------------------------- inputs

def xpb(d, array, name="x.pb", tensor_name="x"):
    save(d, numpy_helper.from_array(array, tensor_name), name)


@case("input_wrong_dtype", "element type int64", "an int64 input for a float model",
      extra=["--input", "x={case}/x.pb"])
def _(d):
    save(d, relu_model())
    xpb(d, np.ones((2, 3), np.int64))


@case("input_wrong_rank", "expects rank 2", "a rank-3 input for a rank-2 model",
      extra=["--input", "x={case}/x.pb"])
def _(d):
    save(d, relu_model())
    xpb(d, np.ones((2, 3, 1), np.float32))


@case("input_wrong_dim", "dimension 1", "a [2,4] input for a [2,3] model", extra=["--input", "x={case}/x.pb"])
def _(d):
    save(d, relu_model())
    xpb(d, np.ones((2, 4), np.float32))


@case("input_file_missing", "cannot open", "--input naming a file that does not exist",
      extra=["--input", "x={case}/absent.pb"])
def _(d):
    save(d, relu_model())


@case("input_extra_name", "no input of that name", "--input for a name the model does not have (bad usage: 2)",
      exit_code=2, extra=["--input", "nope={case}/x.pb"])
def _(d):
    save(d, relu_model())
    xpb(d, np.ones((2, 3), np.float32))


@case("input_missing_string", "string", "a string input the CLI cannot invent")
def _(d):
    save(d, make([helper.make_node("Identity", ["x"], ["y"], name="id")],
                 [helper.make_tensor_value_info("x", TensorProto.STRING, [2])],
                 [helper.make_tensor_value_info("y", TensorProto.STRING, [2])]))


@case("input_truncated_pb", "not a valid TensorProto", "an input .pb cut in the middle of its raw_data",
      extra=["--input", "x={case}/x.pb"])
def _(d):
    save(d, relu_model())
    data = numpy_helper.from_array(np.ones((2, 3), np.float32), "x").SerializeToString()
    save(d, data[:len(data) - 7], "x.pb")


@case("input_pb_short_raw", "raw_data holds", "an input .pb whose raw_data is shorter than its dims",
      extra=["--input", "x={case}/x.pb"])
def _(d):
    save(d, relu_model())
    t = numpy_helper.from_array(np.ones((2, 3), np.float32), "x")
    t.raw_data = t.raw_data[:12]
    save(d, t, "x.pb")


@case("input_pb_external_escape", "escapes the model's folder", "an input .pb with external data at ../",
      extra=["--input", "x={case}/x.pb"])
def _(d):
    save(d, relu_model())
    save(d, external(d, numpy_helper.from_array(np.ones((2, 3), np.float32), "x"), "../../outside/secret.bin"),
         "x.pb")


@case("input_truncated_npy", "data bytes", "an input .npy with half its data",
      extra=["--input", "x={case}/x.npy"])
def _(d):
    save(d, relu_model())
    np.save(os.path.join(d, "x.npy"), np.ones((2, 3), np.float32))
    with open(os.path.join(d, "x.npy"), "rb+") as f:
        f.truncate(os.path.getsize(os.path.join(d, "x.npy")) - 12)


@case("input_npy_huge_shape", "x.npy", "an .npy header declaring 10^12 elements",
      extra=["--input", "x={case}/x.npy"])
def _(d):
    save(d, relu_model())
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000, 1000000), }"
    header += " " * (64 - (10 + len(header) + 1) % 64) + "\n"
    with open(os.path.join(d, "x.npy"), "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + bytes([len(header) & 0xff, len(header) >> 8]) + header.encode() + b"\0" * 16)


def npy_with_shape(path, shape_text, data=b"\0" * 16):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % shape_text
    header += " " * (64 - (10 + len(header) + 1) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + bytes([len(header) & 0xff, len(header) >> 8]) + header.encode() + data)


@case("input_npy_negative_dim", "x.npy: negative dimension", "an .npy header with shape (-3, 2)",
      extra=["--input", "x={case}/x.npy"])
def _(d):
    save(d, relu_model())
    npy_with_shape(os.path.join(d, "x.npy"), "(-3, 2)")


@case("input_npy_overflowing_shape", "x.npy: .npy shape", "an .npy header whose element count overflows int64",
      extra=["--input", "x={case}/x.npy"])
def _(d):
    save(d, relu_model())
    npy_with_shape(os.path.join(d, "x.npy"), "(4611686018427387904, 4)")


@case("input_npy_bad_header", ".npy", "an .npy whose header is garbage", extra=["--input", "x={case}/x.npy"])
def _(d):
    save(d, relu_model())
    with open(os.path.join(d, "x.npy"), "wb") as f:
        f.write(b"\x93NUMPY\x01\x00\xff\xff{'descr'")


@case("info_truncated", "not a valid ONNX model", "`singa info` on a truncated model", command="info")
def _(d):
    save(d, conv_model().SerializeToString()[:100])


@case("info_long_op_name", "", "`singa info` lists an op whose name is wider than its column "
      "(it threw std::length_error from a negative pad)", exit_code=0, command="info")
def _(d):
    node = helper.make_node("AVeryLongOperatorNameForTheColumn", ["x"], ["y"], domain="com.example.long")
    save(d, make([node], [vi("x", shape=(2,))], [vi("y", shape=(2,))], extra_opsets=[("com.example.long", 1)]))


# Every case whose model is an IR 8 ModelProto is written again at IR 10 (same opsets), which the
# onnx 1.12 library's checker does not cover: singa's own intake (core/onnx/intake.cpp) must refuse
# it as clearly. Where the two paths word the error differently, the variant expects this text.
NEWER_IR = 10
NEWER_IR_EXPECT = {
    "empty_op_type": "no op_type",
    "attribute_wrong_type": "strides",
    "unknown_op": "NoSuchOp",
    "unknown_domain": "com.example.evil",
    "missing_required_attribute": "to",
    "node_lists_output_twice": "lists output 'p' twice",
}


def newer_ir_variant(d, name):
    """Rewrites d/model.onnx at IR NEWER_IR into a sibling folder; its name, or None when the case's
    model is not an IR 8 ModelProto (bytes, truncations, no model)."""
    path = os.path.join(d, "model.onnx")
    if not os.path.isfile(path) or os.path.islink(path):
        return None
    m = onnx.ModelProto()
    try:
        with warnings.catch_warnings():  # protobuf warns on bytes that are no model
            warnings.simplefilter("ignore")
            m.ParseFromString(open(path, "rb").read())
    except Exception:
        return None
    if m.ir_version != 8 or not m.HasField("graph"):
        return None
    m.ir_version = NEWER_IR
    variant = name + "_ir%d" % NEWER_IR
    vd = os.path.join(os.path.dirname(d), variant)
    shutil.copytree(d, vd, symlinks=True)
    save(vd, m)
    return variant


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(os.path.join(out, "outside"))
    with open(os.path.join(out, "outside", "secret.bin"), "wb") as f:
        f.write(b"\7" * 24)  # the size W needs: only the path checks stop a read
    names = set()
    manifest = []
    for c in CASES:
        if c["name"] in names:
            sys.exit("duplicate case name " + c["name"])
        names.add(c["name"])
        d = os.path.join(out, "cases", c["name"])
        os.makedirs(d)
        c["make"](d)
        manifest.append(dict(name=c["name"], args=[c["command"], "{case}/model.onnx"] + c["extra"],
                             expect=c["expect"], exit=c["exit"], why=c["why"],
                             **({"xfail": c["xfail"]} if c["xfail"] else {})))
        variant = newer_ir_variant(d, c["name"])
        if variant:
            names.add(variant)
            manifest.append(dict(name=variant, args=[c["command"], "{case}/model.onnx"] + c["extra"],
                                 expect=NEWER_IR_EXPECT.get(c["name"], c["expect"]), exit=c["exit"],
                                 why=c["why"] + " (at IR %d: singa's own checks)" % NEWER_IR,
                                 **({"xfail": c["xfail"]} if c["xfail"] else {})))
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print("wrote %d cases to %s" % (len(manifest), out))


if __name__ == "__main__":
    main()
