"""Bad input raises singa.SingaError subclasses (also ValueError / TypeError)
whose messages name the input, what was expected and what was given; malformed
model bytes raise, never crash."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import singa
from singa import autograd, sonnx, tensor


def _mlp():
    rng = np.random.default_rng(0)
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W1"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
         helper.make_node("MatMul", ["r", "W2"], ["y"])], "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])],
        [numpy_helper.from_array(rng.standard_normal((8, 4)).astype(np.float32), "W1"),
         numpy_helper.from_array(rng.standard_normal((4, 2)).astype(np.float32), "W2")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


@pytest.fixture(scope="module")
def rep():
    return sonnx.prepare(_mlp())


GOOD = np.ones((1, 8), np.float32)


@pytest.mark.parametrize("inputs, words", [
    ([np.ones((1, 9), np.float32)], ["'x'", "[1,9]", "[1,8]"]),                       # wrong shape
    ([np.ones(8, np.float32)], ["'x'", "[8]", "rank 2"]),                              # wrong rank
    ([np.ones((1, 8), np.float64)], ["'x'", "double", "float"]),                       # wrong dtype
    ([np.ones((1, 8), np.int32)], ["'x'", "int32", "float"]),
    ([tensor.Tensor(data=np.ones((1, 8), np.int64))], ["'x'", "int64", "float"]),      # a Tensor of the wrong dtype
    ([], ["'x'", "missing"]),                                                          # too few
    ([GOOD, GOOD], ["2 inputs", "takes 1"]),                                           # too many
    ({"y": GOOD}, ["'x'", "not given"]),                                               # by name, missing
    ({"x": GOOD, "z": GOOD}, ["'z'", "no input named", "'x'"]),                        # by name, unknown
    (["text"], ["'x'", "string", "float"]),
])
def test_run_rejects_bad_inputs(rep, inputs, words):
    with pytest.raises(singa.InvalidArgumentError) as e:
        rep.run(inputs)
    assert isinstance(e.value, ValueError) and isinstance(e.value, singa.SingaError)
    for w in words:
        assert w in str(e.value), (w, str(e.value))
    np.testing.assert_allclose(rep.run([GOOD])[0].shape, (1, 2))  # the rep still works


def test_run_rejects_positive_last_layers(rep):
    with pytest.raises(singa.InvalidArgumentError, match="last_layers"):
        rep.run([GOOD], last_layers=2)


def test_tensor_ops_raise_clear_errors():
    a = tensor.Tensor(data=np.ones((2, 3), np.float32))
    cases = [
        (lambda: a + tensor.Tensor(data=np.ones((4, 5), np.float32)), singa.InvalidArgumentError,
         ["Add", "[2,3]", "[4,5]"]),
        (lambda: a @ a, singa.InvalidArgumentError, ["MatMul", "[2,3]"]),
        (lambda: a + tensor.Tensor(data=np.ones((2, 3), np.int64)), singa.InvalidArgumentError, ["float", "int64"]),
        (lambda: a.reshape((7,)), singa.InvalidArgumentError, ["[2,3]", "[7]"]),
        (lambda: tensor.Tensor((2, 3), data=np.ones(4, np.float32)), singa.InvalidArgumentError, ["(2, 3)", "(4,)"]),
        (lambda: tensor.Tensor((2,), dtype="no-such-type"), singa.InvalidArgumentError, ["no-such-type", "dtype"]),
        (lambda: a.copy_data(tensor.Tensor(data=np.ones((4, 5), np.float32))), singa.InvalidArgumentError,
         ["(4, 5)", "(2, 3)"]),
        (lambda: autograd.apply("Add", a, a, a), singa.InvalidArgumentError, ["'Add'", "takes 2 inputs", "got 3"]),
        (lambda: autograd.apply("Add", a), singa.InvalidArgumentError, ["'Add'", "takes 2 inputs", "got 1"]),
        (lambda: autograd.apply("Relu", a, num_outputs=3), singa.InvalidArgumentError, ["'Relu'", "1 outputs", "3"]),
        (lambda: tensor.to_numpy(np.ones(3)), singa.InvalidTypeError, ["Tensor", "ndarray"]),
        (lambda: autograd.relu("text"), singa.InvalidTypeError, ["Tensor", "str"]),
        (lambda: list(autograd.backward(3.0)), singa.InvalidTypeError, ["loss", "float"]),  # a generator
    ]
    for fn, cls, words in cases:
        with pytest.raises(cls) as e:
            fn()
        assert isinstance(e.value, singa.SingaError)
        assert isinstance(e.value, TypeError if cls is singa.InvalidTypeError else ValueError)
        for w in words:
            assert w in str(e.value), (w, str(e.value))


def test_prepare_rejects_wrong_python_types():
    with pytest.raises(singa.InvalidTypeError, match="ModelProto"):
        sonnx.prepare(12345)
    with pytest.raises(singa.InvalidTypeError, match="device"):
        sonnx.prepare(_mlp(), device=3.5)
    with pytest.raises(singa.InvalidArgumentError, match="unknown device"):
        sonnx.prepare(_mlp(), device="TPU")


# Mutations of valid and invalid models, each prepared (and run when that
# succeeds) in a child process, so a crash shows as a signal, not a lost run.
_FUZZ = textwrap.dedent("""
    import json, sys
    import numpy as np
    import singa
    from singa import sonnx
    cases = [bytes.fromhex(h) for h in json.load(sys.stdin)]
    outcome = {"raised": 0, "ran": 0, "other": []}
    for i, data in enumerate(cases):
        try:
            rep = sonnx.prepare(data)
            for info in rep.inputs:
                pass
            try:
                rep.run([np.ones([d if isinstance(d, int) and d > 0 else 1 for d in (i["shape"] or [1])],
                                 singa._singa.numpy_dtype(i["dtype"])) for i in rep.inputs])
            except singa.SingaError:
                pass
            outcome["ran"] += 1
        except singa.SingaError:
            outcome["raised"] += 1
        except Exception as e:
            outcome["other"].append("case %d: %s: %s" % (i, type(e).__name__, e))
    print(json.dumps(outcome))
""")


def _conv_bn():
    rng = np.random.default_rng(1)
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "W"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2]),
         helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"]),
         helper.make_node("MaxPool", ["n"], ["y"], kernel_shape=[2, 2])], "conv_bn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 2, 2])],
        [numpy_helper.from_array(rng.standard_normal((4, 2, 3, 3)).astype(np.float32), "W")] +
        [numpy_helper.from_array(np.full(4, v, np.float32), k) for k, v in [("s", 1), ("b", 0), ("m", 0), ("v", 1)]])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def _flips(data, rng, count):
    out = []
    for _ in range(count):
        b = bytearray(data)
        for p in rng.integers(0, len(b), 3):
            b[p] = int(rng.integers(0, 256))
        out.append(bytes(b))
    return out


def _bad_models():
    good = _mlp()
    data = good.SerializeToString()
    rng = np.random.default_rng(7)
    cases = [b"", b"\x00", b"not a model", bytes(rng.integers(0, 256, 64, dtype=np.uint8)),
             bytes(rng.integers(0, 256, 4096, dtype=np.uint8))]
    cases += [data[:n] for n in range(1, len(data), max(1, len(data) // 40))]  # truncations
    cases += _flips(data, rng, 150) + _flips(_conv_bn().SerializeToString(), rng, 150)  # byte flips

    def variant(edit):
        m = onnx.ModelProto()
        m.CopyFrom(good)
        edit(m)
        return m.SerializeToString()

    cases += [
        variant(lambda m: m.graph.node[0].input.__setitem__(1, "nowhere")),                 # dangling input
        variant(lambda m: setattr(m.graph.node[1], "op_type", "NoSuchOp")),                  # unknown op
        variant(lambda m: m.graph.node[0].attribute.append(helper.make_attribute("alpha", "x"))),  # stray attribute
        variant(lambda m: m.graph.initializer[0].ClearField("raw_data")),                    # no data
        variant(lambda m: m.graph.initializer[0].dims.__setitem__(0, 1 << 40)),              # huge dims
        variant(lambda m: m.graph.initializer[0].dims.__setitem__(0, -3)),                   # negative dims
        variant(lambda m: setattr(m.graph.initializer[0], "data_type", 999)),                # bad element type
        variant(lambda m: m.graph.node[2].output.__setitem__(0, "h")),                       # two producers
        variant(lambda m: m.graph.node[0].input.__setitem__(0, "y")),                        # a cycle
        variant(lambda m: m.opset_import[0].__setattr__("version", 99999)),                  # unknown opset
        variant(lambda m: m.graph.ClearField("output")),                                      # no outputs
    ]
    return cases


def test_malformed_models_raise_and_never_crash():
    cases = _bad_models()
    env = dict(os.environ)
    r = subprocess.run([sys.executable, "-c", _FUZZ], input=json.dumps([c.hex() for c in cases]), capture_output=True,
                       text=True, timeout=600, env=env)
    assert r.returncode == 0, "the child died (%d): %s" % (r.returncode, r.stderr[-2000:])
    outcome = json.loads(r.stdout.strip().splitlines()[-1])
    assert outcome["other"] == [], outcome["other"][:10]
    assert outcome["raised"] + outcome["ran"] == len(cases)
    assert outcome["raised"] >= 20  # the obviously broken ones at least


def test_names_that_are_not_utf8():
    """Names are bytes in the file: undecodable ones come back escaped, in results and in errors."""
    g = helper.make_graph([helper.make_node("MatMul", ["xxxx", "WWWW"], ["yyyy"], name="nnnn")], "g",
                          [helper.make_tensor_value_info("xxxx", TensorProto.FLOAT, [1, 2])],
                          [helper.make_tensor_value_info("yyyy", TensorProto.FLOAT, [1, 2])],
                          [numpy_helper.from_array(np.eye(2, dtype=np.float32), "WWWW")])
    data = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()
    for good, bad in [(b"WWWW", b"W\xffW\xfe"), (b"xxxx", b"x\xffx\xfe"), (b"yyyy", b"y\xfey\xff"), (b"nnnn", b"n\xc3(n")]:
        data = data.replace(good, bad)
    rep = sonnx.prepare(data)
    assert rep.inputs[0]["name"] == "x\\xffx\\xfe" and rep.nodes()[0]["name"] == "n\\xc3(n"
    outs = rep.run([np.ones((1, 2), np.float32)], all_outputs=True)
    assert list(outs) == ["y\\xfey\\xff"]
    with pytest.raises(singa.InvalidArgumentError, match=r"x\\xffx\\xfe"):
        rep.run([np.ones((1, 3), np.float32)])
    assert list(rep.tensor_map) == ["W\\xffW\\xfe"]
    np.testing.assert_array_equal(rep.run([np.ones((1, 2), np.float32)])[0], [[1.0, 1.0]])
