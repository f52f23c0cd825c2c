"""singa.opt against torch.optim on the same numbers."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from singa import autograd, layer, opt, tensor  # noqa: E402

RNG = np.random.default_rng(3)


@pytest.fixture(autouse=True)
def recording():
    was = autograd.training
    autograd.training = True
    yield
    autograd.training = was


def run_both(make_singa, make_torch, steps=5, schedule=None):
    """A tiny regression trained by both optimizers; returns both final weights."""
    w0 = RNG.standard_normal((3, 4)).astype(np.float32)
    xs = [RNG.standard_normal((5, 3)).astype(np.float32) for _ in range(steps)]
    w = tensor.from_numpy(w0.copy())
    w.requires_grad = True
    w.stores_grad = True
    tw = torch.tensor(w0.copy(), requires_grad=True)
    sopt, topt = make_singa(), make_torch([tw])
    for x in xs:
        loss = autograd.reduce_sum(autograd.mul(autograd.tanh(autograd.matmul(tensor.from_numpy(x), w)),
                                                autograd.tanh(autograd.matmul(tensor.from_numpy(x), w))), None, 0)
        sopt.backward_and_update(loss)
        topt.zero_grad()
        (torch.tanh(torch.tensor(x) @ tw) ** 2).sum().backward()
        topt.step()
        if schedule:
            schedule.step()
    return tensor.to_numpy(w), tw.detach().numpy()


@pytest.mark.parametrize("kw", [
    dict(lr=0.1),
    dict(lr=0.05, momentum=0.9),
    dict(lr=0.05, momentum=0.9, weight_decay=0.01),
    dict(lr=0.05, momentum=0.9, dampening=0.3),
    dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.001),
])
def test_sgd_matches_torch(kw):
    a, b = run_both(lambda: opt.SGD(**kw), lambda p: torch.optim.SGD(p, **kw))
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_adam_and_adamw_match_torch():
    a, b = run_both(lambda: opt.Adam(lr=0.01, beta_1=0.8, beta_2=0.99, epsilon=1e-7, weight_decay=0.01),
                    lambda p: torch.optim.Adam(p, lr=0.01, betas=(0.8, 0.99), eps=1e-7, weight_decay=0.01))
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    a, b = run_both(lambda: opt.AdamW(lr=0.01, weight_decay=0.1),
                    lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.1))
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_exponential_decay_schedule_matches_torch():
    holder = {}

    def make_torch(p):
        holder["o"] = torch.optim.SGD(p, lr=0.1)
        holder["s"] = torch.optim.lr_scheduler.ExponentialLR(holder["o"], gamma=0.5)
        return holder["o"]

    class Sched:
        def step(self):
            holder["s"].step()
    a, b = run_both(lambda: opt.SGD(lr=opt.ExponentialDecay(0.1, 1, 0.5, staircase=True)), make_torch,
                    schedule=Sched())
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_update_and_step_as_the_guide_calls_them():
    lin = layer.Linear(2, 2)
    before = tensor.to_numpy(lin.W).copy()
    x = tensor.from_numpy(np.ones((1, 2), np.float32))
    sgd = opt.SGD(lr=0.5)
    loss = autograd.reduce_sum(lin(x), None, 0)
    grads = {}
    for p, g in autograd.backward(loss):
        grads[id(p)] = tensor.to_numpy(g).copy()
        sgd.update(p, g)
    sgd.step()
    assert sgd.step_counter == 1
    np.testing.assert_allclose(tensor.to_numpy(lin.W), before - 0.5 * grads[id(lin.W)], rtol=1e-6)


def test_update_rejects_mismatched_gradient():
    w = tensor.from_numpy(np.zeros((2, 2), np.float32))
    with pytest.raises(ValueError, match="shape"):
        opt.SGD(lr=0.1).update(w, tensor.from_numpy(np.zeros((3,), np.float32)))
    with pytest.raises(TypeError):
        opt.SGD(lr=0.1).update(w, np.zeros((2, 2)))
