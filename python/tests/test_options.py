"""singa.set_option: runtime-wide named options (docs/options.md) reach later
prepares, and a malformed value of a documented key raises naming the key."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import singa
from singa import device, sonnx


def _matmul(b):
    """y = x[2,3] @ B (a constant B: the MatMul kernel reads cpu.matmul_primitive)."""
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "B"], ["y"])], "mm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        [numpy_helper.from_array(b, "B")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def test_set_option_is_kept_as_a_string():
    singa.set_option("test.python_key", 7)
    assert singa.options()["test.python_key"] == "7"
    singa.set_option("core.op_profile", False)
    assert singa.options()["core.op_profile"] == "0"


def test_malformed_documented_key_raises_naming_it():
    with pytest.raises(singa.InvalidArgumentError, match="cpu.spin_us"):
        singa.set_option("cpu.spin_us", "soon")
    with pytest.raises(ValueError, match="cpu.avx512"):
        singa.set_option("cpu.avx512", "2")
    assert "cpu.spin_us" not in singa.options()


def test_runtime_option_reaches_a_later_prepare():
    rng = np.random.default_rng(0)
    b = rng.standard_normal((3, 4)).astype(np.float32)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    try:
        singa.set_option("cpu.matmul_primitive", "maybe")  # not checked when set: the kernel owns the key
        with pytest.raises(singa.SingaError, match="cpu.matmul_primitive"):
            sonnx.prepare(_matmul(b), device=device.get_default_device())
    finally:
        singa.set_option("cpu.matmul_primitive", "1")
    y = sonnx.prepare(_matmul(b), device=device.get_default_device()).run([x])[0]
    np.testing.assert_allclose(y, x @ b, rtol=1e-5, atol=1e-6)
