#!/usr/bin/python3
"""One-node ONNX models for timing elementwise ops, singa against ONNX Runtime.

    /usr/bin/python3 bench/ops/make_unary_models.py [OUT_DIR] [--ops Sigmoid,Tanh,...]

writes OUT_DIR/<op>_<shape>.onnx (default OUT_DIR: $TMPDIR/singa_ops_models, outside the tree) for
every op at every shape below, float32, opset 20 (Mish 18 is within it), one
input "x" of a fixed shape. bench/ops/run_unary.sh times them.
"""
import os
import sys

from onnx import TensorProto, helper

SHAPES = [(1, 64, 56, 56), (8, 256, 28, 28)]

# op name -> (ONNX op type, attributes)
OPS = {
    "Sigmoid": ("Sigmoid", {}),
    "Tanh": ("Tanh", {}),
    "Exp": ("Exp", {}),
    "Log": ("Log", {}),
    "Erf": ("Erf", {}),
    "Gelu": ("Gelu", {}),
    "GeluTanh": ("Gelu", {"approximate": "tanh"}),
    "HardSwish": ("HardSwish", {}),
    "HardSigmoid": ("HardSigmoid", {}),
    "Softplus": ("Softplus", {}),
    "Mish": ("Mish", {}),
    "Elu": ("Elu", {}),
    "Relu": ("Relu", {}),
    "LeakyRelu": ("LeakyRelu", {}),
}


def make(op_type, attrs, shape, path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, list(shape))
    node = helper.make_node(op_type, ["x"], ["y"], **attrs)
    graph = helper.make_graph([node], op_type.lower(), [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 9
    with open(path, "wb") as f:
        f.write(model.SerializeToString())


def main():
    args = sys.argv[1:]
    out = os.path.join(os.environ.get("TMPDIR", "/tmp"), "singa_ops_models")
    only = None
    while args:
        a = args.pop(0)
        if a == "--ops":
            only = args.pop(0).split(",")
        elif a.startswith("-"):
            # an unknown flag (e.g. --help) must not become the output folder's name
            sys.exit("usage: %s [--ops A,B,...] [OUT_DIR]" % sys.argv[0])
        else:
            out = a
    os.makedirs(out, exist_ok=True)
    for name, (op_type, attrs) in OPS.items():
        if only and name not in only:
            continue
        for shape in SHAPES:
            path = os.path.join(out, "%s_%s.onnx" % (name, "x".join(map(str, shape))))
            make(op_type, attrs, shape, path)
            print(path)


if __name__ == "__main__":
    main()
