"""sonnx.SONNXModel and sonnx.to_onnx: imported models run, train and cut
(last_layers) as SINGA 3.2's guide describes; exports are valid ONNX that
compute what the Python model computed."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

torch = pytest.importorskip("torch")

from singa import autograd, layer, model, opt, sonnx, tensor  # noqa: E402

RNG = np.random.default_rng(5)


@pytest.fixture(autouse=True)
def restore_flag():
    was = autograd.training
    yield
    autograd.training = was


def mlp_onnx():
    """X[N,4] -> Gemm(W1 [8,4], transB) -> Relu -> Gemm(W2 [8,3]) -> Y, written with onnx.helper."""
    w1 = RNG.standard_normal((8, 4)).astype(np.float32)
    b1 = RNG.standard_normal(8).astype(np.float32)
    w2 = RNG.standard_normal((8, 3)).astype(np.float32)
    b2 = RNG.standard_normal(3).astype(np.float32)
    nodes = [helper.make_node("Gemm", ["X", "W1", "B1"], ["h"], transB=1, name="fc1"),
             helper.make_node("Relu", ["h"], ["r"], name="relu"),
             helper.make_node("Gemm", ["r", "W2", "B2"], ["Y"], name="fc2")]
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 4])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 3])],
                          [numpy_helper.from_array(a, n) for a, n in ((w1, "W1"), (b1, "B1"), (w2, "W2"), (b2, "B2"))])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(m)
    return m, (w1, b1, w2, b2)


class Net(sonnx.SONNXModel):
    def forward(self, *x, last_layers=-1):
        return super().forward(*x, last_layers=last_layers)[0]


def test_forward_and_last_layers_match_numpy():
    m, (w1, b1, w2, b2) = mlp_onnx()
    net = Net(m)
    x = RNG.standard_normal((5, 4)).astype(np.float32)
    net.compile([tensor.from_numpy(x)], is_train=False)
    h = x @ w1.T + b1
    r = np.maximum(h, 0)
    np.testing.assert_allclose(tensor.to_numpy(net(tensor.from_numpy(x))), r @ w2 + b2, rtol=1e-5, atol=1e-5)
    # SINGA 3.2: -1 is the whole model, -2 the output of the node before the last, ...
    np.testing.assert_allclose(tensor.to_numpy(net.forward(tensor.from_numpy(x), last_layers=-2)), r, rtol=1e-5)
    np.testing.assert_allclose(tensor.to_numpy(net.forward(tensor.from_numpy(x), last_layers=-3)), h, rtol=1e-5,
                               atol=1e-5)
    with pytest.raises(ValueError, match="last_layers"):
        net.forward(tensor.from_numpy(x), last_layers=0)
    assert sorted(net.get_params()) == ["B1", "B2", "W1", "W2"]


def test_training_the_imported_weights_matches_torch():
    m, ws = mlp_onnx()
    x = RNG.standard_normal((6, 4)).astype(np.float32)
    y = RNG.integers(0, 3, 6).astype(np.int32)

    class Trainable(Net):
        def train_one_batch(self, x, y):
            out = self.forward(x)
            loss = autograd.softmax_cross_entropy(out, y)
            self.optimizer.backward_and_update(loss)
            return out, loss
    net = Trainable(m)
    net.set_optimizer(opt.SGD(lr=0.1, momentum=0.9))
    net.compile([tensor.from_numpy(x)], is_train=True)
    tw = [torch.tensor(a, requires_grad=True) for a in ws]
    topt = torch.optim.SGD(tw, lr=0.1, momentum=0.9)
    for _ in range(3):
        net(tensor.from_numpy(x), tensor.from_numpy(y))
        topt.zero_grad()
        out = torch.relu(torch.tensor(x) @ tw[0].T + tw[1]) @ tw[2] + tw[3]
        torch.nn.functional.cross_entropy(out, torch.tensor(y, dtype=torch.int64)).backward()
        topt.step()
    p = net.get_params()
    for name, t in zip(("W1", "B1", "W2", "B2"), tw):
        np.testing.assert_allclose(tensor.to_numpy(p[name]), t.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_transfer_learning_trains_only_what_requires_grad():
    m, (w1, b1, w2, b2) = mlp_onnx()

    class Trans(sonnx.SONNXModel):
        def __init__(self, onnx_model):
            super().__init__(onnx_model)
            self.linear = layer.Linear(8, 2)

        def forward(self, *x):
            return self.linear(super().forward(*x, last_layers=-2)[0])

        def train_one_batch(self, x, y):
            out = self.forward(x)
            loss = autograd.mse_loss(out, y)
            self.optimizer.backward_and_update(loss)
            return out, loss
    net = Trans(m)
    for name in ("W1", "B1", "W2", "B2"):  # freeze the imported part
        net.get_params()[name].requires_grad = False
    net.set_optimizer(opt.SGD(lr=0.05))
    x = RNG.standard_normal((16, 4)).astype(np.float32)
    target = RNG.standard_normal((16, 2)).astype(np.float32)
    net.compile([tensor.from_numpy(x)], is_train=True)
    losses = [float(tensor.to_numpy(net(tensor.from_numpy(x), tensor.from_numpy(target))[1])[0]) for _ in range(30)]
    assert losses[-1] < losses[0]
    np.testing.assert_array_equal(tensor.to_numpy(net.get_params()["W1"]), w1)
    assert "linear.W" in net.get_params()


class Small(model.Model):
    def __init__(self):
        super().__init__()
        self.conv = layer.Conv2d(2, 3, padding=1)
        self.bn = layer.BatchNorm2d()
        self.pool = layer.MaxPool2d(2)
        self.flat = layer.Flatten()
        self.fc = layer.Linear(4)

    def forward(self, x):
        return self.fc(self.flat(self.pool(autograd.relu(self.bn(self.conv(x))))))


def test_to_onnx_exports_a_valid_model_that_reimports_to_the_same_values():
    x = RNG.standard_normal((2, 1, 6, 6)).astype(np.float32)
    m = Small()
    m.compile([tensor.from_numpy(x)], is_train=False)
    autograd.training = True
    tx = tensor.from_numpy(x)
    y = m.forward(tx)
    proto = sonnx.to_onnx([tx], [y], params=m.get_states())
    onnx.checker.check_model(proto)
    ops = [n.op_type for n in proto.graph.node]
    for op in ("Conv", "BatchNormalization", "Relu", "MaxPool", "Flatten", "Gemm"):
        assert op in ops
    inits = {i.name for i in proto.graph.initializer}
    assert {"conv.W", "conv.b", "fc.W", "fc.b"} <= inits
    # The export is the inference form: compare with the model in evaluation mode.
    autograd.training = False
    expect = tensor.to_numpy(m.forward(tx))

    class Back(sonnx.SONNXModel):
        def forward(self, *x):
            return super().forward(*x)[0]
    back = Back(proto)
    back.compile([tx], is_train=False)
    np.testing.assert_allclose(tensor.to_numpy(back(tensor.from_numpy(x))), expect, rtol=1e-4, atol=1e-5)
    rep = sonnx.prepare(proto)
    np.testing.assert_allclose(tensor.to_numpy(rep.run([tensor.from_numpy(x)])[0]), expect, rtol=1e-4, atol=1e-5)


def test_to_onnx_needs_recorded_ops():
    lin = layer.Linear(3, 2)
    autograd.training = False
    x = tensor.from_numpy(np.ones((1, 3), np.float32))
    y = lin(x)
    with pytest.raises(ValueError, match="recorded"):
        sonnx.to_onnx([x], [y])
    with pytest.raises(TypeError):
        sonnx.to_onnx([np.ones(3)], [y])
