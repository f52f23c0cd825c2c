"""singa.autograd: values and gradients against torch (Debian's python3-torch), and
the training flag / backward() contract."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import singa  # noqa: E402
from singa import autograd, layer, tensor  # noqa: E402

RNG = np.random.default_rng(7)


@pytest.fixture(autouse=True)
def recording():
    was = autograd.training
    autograd.training = True
    yield
    autograd.training = was


def leaf(a):
    t = tensor.from_numpy(np.ascontiguousarray(a, dtype=np.float32))
    t.requires_grad = True
    t.stores_grad = True
    return t


def grads_of(loss, *ts):
    """Gradients of `loss` for the given leaves, matched by identity of their Variables."""
    got = {p._var.id: tensor.to_numpy(g) for p, g in autograd.backward(loss)}
    return [got[t._var.id] for t in ts]


def check(singa_fn, torch_fn, *arrays, rtol=1e-4, atol=1e-5):
    """singa_fn and torch_fn on the same inputs: same value, same gradients of sum(y * w)."""
    xs = [leaf(a) for a in arrays]
    txs = [torch.tensor(a, dtype=torch.float32, requires_grad=True) for a in arrays]
    y = singa_fn(*xs)
    ty = torch_fn(*txs)
    np.testing.assert_allclose(tensor.to_numpy(y), ty.detach().numpy(), rtol=rtol, atol=atol)
    w = RNG.standard_normal(tuple(ty.shape)).astype(np.float32)
    loss = autograd.reduce_sum(autograd.mul(y, tensor.from_numpy(w)), None, 0)
    (ty * torch.tensor(w)).sum().backward()
    for g, tx in zip(grads_of(loss, *xs), txs):
        np.testing.assert_allclose(g, tx.grad.numpy(), rtol=rtol, atol=atol)


def r(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def test_elementwise_with_broadcast():
    check(autograd.add, torch.add, r(3, 4), r(4))
    check(autograd.sub, torch.sub, r(3, 4), r(3, 1))
    check(autograd.mul, torch.mul, r(2, 3, 4), r(3, 4))
    check(autograd.div, torch.div, r(3, 4), np.abs(r(3, 4)) + 0.5)


def test_matmul_and_gemm():
    check(autograd.matmul, torch.matmul, r(5, 3), r(3, 4))
    check(autograd.matmul, torch.matmul, r(2, 5, 3), r(3, 4))
    check(lambda a, b, c: autograd.gemm(a, b, c, alpha=0.5, beta=2.0, transB=1),
          lambda a, b, c: 0.5 * a @ b.T + 2.0 * c, r(4, 3), r(5, 3), r(5))


@pytest.mark.parametrize("name,tfn", [
    ("relu", torch.relu), ("sigmoid", torch.sigmoid), ("tanh", torch.tanh), ("exp", torch.exp),
    ("softplus", torch.nn.functional.softplus), ("sin", torch.sin), ("neg", torch.neg),
])
def test_unary(name, tfn):
    check(getattr(autograd, name), tfn, r(4, 5))


def test_log_sqrt_on_positive():
    check(autograd.log, torch.log, np.abs(r(3, 4)) + 0.1)
    check(autograd.sqrt, torch.sqrt, np.abs(r(3, 4)) + 0.1)


def test_softmax_and_activations_with_attributes():
    check(lambda x: autograd.softmax(x, 1), lambda x: torch.softmax(x, 1), r(4, 6))
    check(lambda x: autograd.leakyrelu(x, 0.2), lambda x: torch.nn.functional.leaky_relu(x, 0.2), r(4, 6))
    check(lambda x: autograd.elu(x, 0.7), lambda x: torch.nn.functional.elu(x, 0.7), r(4, 6))


def test_shapes():
    check(lambda x: autograd.reshape(x, [6, -1]), lambda x: x.reshape(6, -1), r(2, 3, 4))
    check(autograd.flatten, lambda x: torch.flatten(x, 1), r(2, 3, 4, 5))
    check(lambda x: autograd.transpose(x, [1, 0, 2]), lambda x: x.permute(1, 0, 2), r(2, 3, 4))
    check(lambda a, b: autograd.cat([a, b], 1), lambda a, b: torch.cat([a, b], 1), r(2, 3), r(2, 5))
    check(lambda x: autograd.reduce_mean(x, [1], 0), lambda x: x.mean(1), r(3, 4, 2))
    check(lambda x: autograd.reduce_sum(x, [0, 2], 1), lambda x: x.sum((0, 2), keepdim=True), r(3, 4, 2))


def test_conv_and_pooling_layers_match_torch():
    x = r(2, 3, 9, 9)
    conv = autograd.Conv2d(3, 4, 3, stride=2, padding=1)
    tconv = torch.nn.Conv2d(3, 4, 3, stride=2, padding=1)
    with torch.no_grad():
        tconv.weight.copy_(torch.tensor(tensor.to_numpy(conv.W)))
        tconv.bias.copy_(torch.tensor(tensor.to_numpy(conv.b)))
    pool = autograd.MaxPool2d(2, 2)
    avg = autograd.AvgPool2d(2, 1)

    sx = leaf(x)
    tx = torch.tensor(x, requires_grad=True)
    y = avg(pool(autograd.relu(conv(sx))))
    ty = torch.nn.functional.avg_pool2d(torch.nn.functional.max_pool2d(torch.relu(tconv(tx)), 2, 2), 2, 1)
    np.testing.assert_allclose(tensor.to_numpy(y), ty.detach().numpy(), rtol=1e-4, atol=1e-5)
    w = r(*ty.shape)
    loss = autograd.reduce_sum(autograd.mul(y, tensor.from_numpy(w)), None, 0)
    (ty * torch.tensor(w)).sum().backward()
    gx, gw, gb = grads_of(loss, sx, conv.W, conv.b)
    np.testing.assert_allclose(gx, tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(gw, tconv.weight.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(gb, tconv.bias.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_linear_matches_torch():
    lin = autograd.Linear(5, 3)
    x = r(4, 5)
    tx = torch.tensor(x)
    W, b = tensor.to_numpy(lin.W), tensor.to_numpy(lin.b)
    y = lin(leaf(x))
    np.testing.assert_allclose(tensor.to_numpy(y), x @ W.T + b, rtol=1e-5, atol=1e-5)
    tw = torch.tensor(W, requires_grad=True)
    (torch.nn.functional.linear(tx, tw, torch.tensor(b)) ** 2).sum().backward()
    gw, = grads_of(autograd.reduce_sum(autograd.mul(y, y), None, 0), lin.W)
    np.testing.assert_allclose(gw, tw.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_losses_match_torch():
    logits = r(6, 4)
    labels = RNG.integers(0, 4, 6)
    onehot = np.eye(4, dtype=np.float32)[labels]
    tl = torch.tensor(logits, requires_grad=True)
    ref = torch.nn.functional.cross_entropy(tl, torch.tensor(labels))
    ref.backward()
    for target in (tensor.from_numpy(onehot), tensor.from_numpy(labels.astype(np.int32))):
        x = leaf(logits)
        loss = autograd.softmax_cross_entropy(x, target)
        assert tuple(loss.shape) == (1,)  # SINGA's losses are shape (1,)
        np.testing.assert_allclose(tensor.to_numpy(loss)[0], ref.item(), rtol=1e-5)
        g, = grads_of(loss, x)
        np.testing.assert_allclose(g, tl.grad.numpy(), rtol=1e-4, atol=1e-6)

    a, b = r(3, 5), r(3, 5)
    x = leaf(a)
    loss = autograd.mse_loss(x, tensor.from_numpy(b))
    ta = torch.tensor(a, requires_grad=True)
    tref = torch.nn.functional.mse_loss(ta, torch.tensor(b))
    tref.backward()
    np.testing.assert_allclose(tensor.to_numpy(loss)[0], tref.item(), rtol=1e-5)
    np.testing.assert_allclose(grads_of(loss, x)[0], ta.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_gradient_against_finite_differences():
    # An independent reference for a composite: tanh(x W) summed with weights.
    x0, w0 = r(3, 4).astype(np.float64), r(4, 2).astype(np.float64)
    c = r(3, 2).astype(np.float64)

    def f(xv):
        return float((np.tanh(xv @ w0) * c).sum())
    x = leaf(x0)
    y = autograd.reduce_sum(autograd.mul(autograd.tanh(autograd.matmul(x, tensor.from_numpy(w0.astype(np.float32)))),
                                         tensor.from_numpy(c.astype(np.float32))), None, 0)
    g, = grads_of(y, x)
    eps = 1e-4
    num = np.zeros_like(x0)
    for i in np.ndindex(*x0.shape):
        d = np.zeros_like(x0)
        d[i] = eps
        num[i] = (f(x0 + d) - f(x0 - d)) / (2 * eps)
    np.testing.assert_allclose(g, num, rtol=1e-3, atol=1e-4)


def test_backward_yields_layer_parameters_themselves_and_fresh_grads():
    lin = autograd.Linear(3, 2)
    x = tensor.from_numpy(r(4, 3))
    first = None
    for _ in range(2):
        loss = autograd.reduce_sum(lin(x), None, 0)
        pairs = list(autograd.backward(loss))
        params = [p for p, _ in pairs]
        assert any(p is lin.W for p in params) and any(p is lin.b for p in params)
        assert len(pairs) == 2  # x takes no gradient
        gW = dict((id(p), tensor.to_numpy(g)) for p, g in pairs)[id(lin.W)]
        if first is None:
            first = gW
        else:  # not accumulated across calls
            np.testing.assert_allclose(gW, first)


def test_not_recorded_when_not_training():
    lin = autograd.Linear(3, 2)
    autograd.training = False
    loss = autograd.reduce_sum(lin(tensor.from_numpy(r(2, 3))), None, 0)
    with pytest.raises(ValueError, match="training"):
        list(autograd.backward(loss))


def test_apply_any_op_and_clear_errors():
    x = tensor.from_numpy(r(2, 3))
    y = autograd.apply("LeakyRelu", x, alpha=0.5)
    a = tensor.to_numpy(x)
    np.testing.assert_allclose(tensor.to_numpy(y), np.where(a >= 0, a, 0.5 * a), rtol=1e-6)
    with pytest.raises(singa.InvalidArgumentError, match="MatMul.*inner dimensions"):
        autograd.matmul(x, tensor.from_numpy(r(4, 5)))
    with pytest.raises(ValueError, match=r"Linear.*\[N, 4\]"):  # InvalidArgumentError is a ValueError
        layer.Linear(4, 2)(x)
    with pytest.raises(singa.NotFoundError, match="NoSuchOp"):
        autograd.apply("NoSuchOp", x)
    with pytest.raises(singa.SingaError, match="attribute 'foo'"):
        autograd.apply("Relu", x, foo={"a": 1})
    with pytest.raises(TypeError, match="singa.tensor.Tensor"):
        autograd.relu("not a tensor")


def test_scalars_mix_with_tensors():
    a = r(2, 3)
    x = tensor.from_numpy(a)
    np.testing.assert_allclose(tensor.to_numpy(autograd.add(x, 1.5)), a + 1.5, rtol=1e-6)
    np.testing.assert_allclose(tensor.to_numpy(autograd.mul(2.0, x)), 2 * a, rtol=1e-6)


def test_dropout_layer_modes():
    d = layer.Dropout(0.5, seed=3)
    x = tensor.from_numpy(np.ones((100, 100), np.float32))
    y = tensor.to_numpy(d(x))
    assert set(np.unique(y)) <= {0.0, 2.0} and 0.4 < (y == 0).mean() < 0.6
    autograd.training = False
    np.testing.assert_array_equal(tensor.to_numpy(d(x)), 1.0)
