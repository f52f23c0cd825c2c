"""Fork safety: processes forked after the parent ran (and trained) a model,
with singa's thread pool already started, run models and finish correctly."""
import multiprocessing as mp

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from singa import autograd, opt, sonnx, tensor

TIMEOUT_S = 120  # a hang fails the test instead of stalling the suite


def _conv_model():
    """Big enough (a [1,16,64,64] conv, a 512x256x256 matmul) that the parent's runs use its thread pool."""
    rng = np.random.default_rng(0)
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "W"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["r"]),
         helper.make_node("Reshape", ["r", "s"], ["f"]), helper.make_node("MatMul", ["f", "M"], ["m"]),
         helper.make_node("ReduceMean", ["m"], ["y"], axes=[1], keepdims=0)], "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 64, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [512])],
        [numpy_helper.from_array(rng.standard_normal((32, 16, 3, 3)).astype(np.float32) / 12, "W"),
         numpy_helper.from_array(np.array([512, 256], np.int64), "s"),
         numpy_helper.from_array(rng.standard_normal((256, 256)).astype(np.float32) / 16, "M")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


_REP = None
_X = np.random.default_rng(1).standard_normal((6, 1, 16, 64, 64)).astype(np.float32)


def _run_one(i):
    return _REP.run([_X[i]])[0]


def _train_one(i):
    """A child trains a little on its own: autograd and the optimizer after fork."""
    w = tensor.Tensor(data=np.full((4, 2), 0.5, np.float32), requires_grad=True, stores_grad=True)
    x = tensor.Tensor(data=np.full((3, 4), float(i), np.float32))
    sgd = opt.SGD(lr=0.01)
    autograd.training = True
    try:
        for _ in range(3):
            sgd.backward_and_update(autograd.mse_loss(autograd.matmul(x, w), tensor.Tensor(data=np.zeros((3, 2),
                                                                                                         np.float32))))
    finally:
        autograd.training = False
    return tensor.to_numpy(w).copy()


def _numpy_train(i):
    w = np.full((4, 2), 0.5, np.float32)
    x = np.full((3, 4), float(i), np.float32)
    for _ in range(3):
        y = x @ w
        w = w - 0.01 * (x.T @ (2 * y / y.size))
    return w


@pytest.fixture(scope="module")
def parent_rep():
    """A model the parent prepared and ran on its thread pool (a thread per core), and a training step."""
    global _REP
    _REP = sonnx.prepare(_conv_model(), threads=0)
    refs = [_REP.run([_X[i]])[0].copy() for i in range(len(_X))]
    _train_one(1)
    yield refs
    _REP = None


def test_fork_pool_runs_the_parents_model(parent_rep):
    with mp.get_context("fork").Pool(2) as pool:
        outs = pool.map_async(_run_one, range(len(_X))).get(timeout=TIMEOUT_S)
    for got, want in zip(outs, parent_rep):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_fork_pool_trains(parent_rep):
    with mp.get_context("fork").Pool(2) as pool:
        outs = pool.map_async(_train_one, range(4)).get(timeout=TIMEOUT_S)
    for i, got in enumerate(outs):
        np.testing.assert_allclose(got, _numpy_train(i), rtol=1e-5, atol=1e-6)


def test_torch_style_data_loader(parent_rep):
    """torch's DataLoader with forked workers whose dataset runs the model."""
    torch_data = pytest.importorskip("torch.utils.data")

    class Features(torch_data.Dataset):
        def __len__(self):
            return len(_X)

        def __getitem__(self, i):
            return _run_one(i)

    loader = torch_data.DataLoader(Features(), batch_size=2, num_workers=2, multiprocessing_context="fork",
                                   timeout=TIMEOUT_S)
    got = np.stack([item for b in loader for item in b.numpy()])
    np.testing.assert_allclose(got, np.stack(parent_rep), rtol=1e-5, atol=1e-5)
