"""singa.sonnx: prepare / run against numpy references, last_layers,
all_outputs, tensor_map re-training, run_node and errors."""
import threading

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import singa
from singa import autograd, device, sonnx, tensor


def _mlp(seed=0):
    """x[2,4] -> MatMul W1[4,3] -> Relu -> MatMul W2[3,2] -> y."""
    rng = np.random.default_rng(seed)
    w1 = rng.standard_normal((4, 3)).astype(np.float32)
    w2 = rng.standard_normal((3, 2)).astype(np.float32)
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W1"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
         helper.make_node("MatMul", ["r", "W2"], ["y"])], "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])],
        [numpy_helper.from_array(w1, "W1"), numpy_helper.from_array(w2, "W2")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), w1, w2


def _ref(x, w1, w2):
    return np.maximum(x @ w1, 0) @ w2


def test_run_numpy_and_tensor_inputs():
    m, w1, w2 = _mlp()
    rep = sonnx.prepare(m, device=device.get_default_device())
    assert isinstance(rep, onnx.backend.base.BackendRep)
    x = np.random.default_rng(1).standard_normal((2, 4)).astype(np.float32)
    y = rep.run([x])[0]
    assert isinstance(y, np.ndarray)
    np.testing.assert_allclose(y, _ref(x, w1, w2), rtol=1e-5, atol=1e-6)
    yt = rep.run([tensor.Tensor(data=x)])[0]
    assert isinstance(yt, tensor.Tensor)
    np.testing.assert_allclose(tensor.to_numpy(yt), _ref(x, w1, w2), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rep.run({"x": x})[0], _ref(x, w1, w2), rtol=1e-5, atol=1e-6)


def test_last_layers_and_all_outputs():
    m, w1, w2 = _mlp()
    rep = sonnx.prepare(m)
    x = np.ones((2, 4), np.float32)
    np.testing.assert_allclose(rep.run([x], last_layers=-1)[0], np.maximum(x @ w1, 0), rtol=1e-5)
    np.testing.assert_allclose(rep.run([x], last_layers=-2)[0], x @ w1, rtol=1e-5)
    outs = rep.run([x], all_outputs=True)
    assert list(outs)[-1] == "y" and "h" in outs
    np.testing.assert_allclose(outs["h"], x @ w1, rtol=1e-5)


def test_module_functions():
    m, w1, w2 = _mlp()
    x = np.ones((2, 4), np.float32)
    np.testing.assert_allclose(sonnx.run_model(m, [x])[0], _ref(x, w1, w2), rtol=1e-5)
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(sonnx.run_node(helper.make_node("Mul", ["a", "b"], ["c"]), [a, a])[0], a * a)
    assert sonnx.supports_device("CPU")
    assert sonnx.supports_device("CUDA") == (device.get_num_gpus() > 0)
    assert "model" in (sonnx.prepare.__doc__ or "")


def test_errors_are_clear():
    m, _, _ = _mlp()
    rep = sonnx.prepare(m)
    with pytest.raises(ValueError, match="expects|shape"):
        rep.run([np.ones((3, 5), np.float32)])
    with pytest.raises(ValueError, match="element type|float"):
        rep.run([np.ones((2, 4), np.int64)])
    with pytest.raises(singa.InvalidArgumentError):
        sonnx.prepare(b"not a model")
    with pytest.raises(LookupError):
        sonnx.prepare("/nonexistent/model.onnx")


def test_tensor_map_retraining_changes_the_run():
    """One SGD step on tensor_map by hand, checked against numpy's gradient."""
    m, w1, w2 = _mlp()
    rep = sonnx.prepare(m)
    tm = rep.tensor_map
    assert set(tm) == {"W1", "W2"}
    np.testing.assert_array_equal(tensor.to_numpy(tm["W2"]), w2)
    for t in tm.values():
        t.requires_grad = True
        t.stores_grad = True
    x = np.random.default_rng(2).standard_normal((2, 4)).astype(np.float32)
    target = np.zeros((2, 2), np.float32)
    autograd.training = True
    try:
        y = rep.run([tensor.Tensor(data=x)])[0]
        loss = autograd.mse_loss(y, tensor.Tensor(data=target))
        grads = {id(p): g for p, g in autograd.backward(loss)}
    finally:
        autograd.training = False
    assert id(tm["W2"]) in grads
    # numpy: loss = mean((r W2)^2) -> dW2 = r^T (2 (r W2) / n)
    r = np.maximum(x @ w1, 0)
    d_w2 = r.T @ (2 * (r @ w2) / y.size())
    np.testing.assert_allclose(tensor.to_numpy(grads[id(tm["W2"])]), d_w2, rtol=1e-4, atol=1e-5)
    tm["W2"].copy_from_numpy(w2 - 0.1 * d_w2)
    y2 = rep.run([x])[0]
    np.testing.assert_allclose(y2, r @ (w2 - 0.1 * d_w2), rtol=1e-4, atol=1e-5)


def test_one_rep_from_several_threads():
    m, w1, w2 = _mlp()
    rep = sonnx.prepare(m)
    xs = [np.full((2, 4), i, np.float32) for i in range(8)]
    results = [None] * len(xs)

    def work(i):
        for _ in range(20):
            results[i] = rep.run([xs[i]])[0]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(xs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for x, y in zip(xs, results):
        np.testing.assert_allclose(y, _ref(x, w1, w2), rtol=1e-5, atol=1e-5)
