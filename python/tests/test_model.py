"""singa.model.Model: compile, train/eval dispatch, training progress, states."""

import numpy as np
import pytest

from singa import autograd, layer, model, opt, tensor


class MLP(model.Model):
    def __init__(self):
        super().__init__()
        self.linear1 = layer.Linear(16)
        self.relu = layer.ReLU()
        self.linear2 = layer.Linear(2)
        self.loss = layer.SoftMaxCrossEntropy()

    def forward(self, x):
        return self.linear2(self.relu(self.linear1(x)))

    def train_one_batch(self, x, y):
        out = self.forward(x)
        loss = self.loss(out, y)
        self.optimizer(loss)
        return out, loss


def blobs(n=128, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n).astype(np.int32)
    x = rng.standard_normal((n, 4)).astype(np.float32) + 2.5 * y[:, None].astype(np.float32)
    return x, y


@pytest.fixture(autouse=True)
def restore_flag():
    was = autograd.training
    yield
    autograd.training = was


def test_compile_creates_parameters_and_sets_mode():
    m = MLP()
    assert m.get_params() == {}
    m.compile([tensor.PlaceHolder((8, 4))], is_train=False, use_graph=True, sequential=True)
    assert sorted(m.get_params()) == ["linear1.W", "linear1.b", "linear2.W", "linear2.b"]
    assert not m.training and autograd.training is False
    m.train()
    assert m.training and autograd.training is True


def test_training_lowers_the_loss_and_separates_the_blobs():
    x, y = blobs()
    m = MLP()
    m.set_optimizer(opt.SGD(lr=0.1, momentum=0.9))
    m.compile([tensor.PlaceHolder((32, 4))], is_train=True)
    losses = []
    for epoch in range(15):
        for b in range(0, len(x), 32):
            out, loss = m(tensor.from_numpy(x[b:b + 32]), tensor.from_numpy(y[b:b + 32]))
            losses.append(float(tensor.to_numpy(loss)[0]))
    assert losses[-1] < 0.5 * losses[0]
    m.eval()
    pred = np.argmax(tensor.to_numpy(m(tensor.from_numpy(x))), 1)  # eval mode: __call__ is forward
    assert (pred == y).mean() > 0.9


def test_states_round_trip(tmp_path):
    x, _ = blobs(8)
    a, b = MLP(), MLP()
    for m in (a, b):
        m.compile([tensor.from_numpy(x)], is_train=False)
    path = str(tmp_path / "mlp.states")
    a.save_states(path, aux_states={"epoch": np.array(3)})
    aux = b.load_states(path)
    assert int(aux["epoch"]) == 3
    np.testing.assert_array_equal(tensor.to_numpy(a.forward(tensor.from_numpy(x))),
                                  tensor.to_numpy(b.forward(tensor.from_numpy(x))))


def test_forward_and_train_one_batch_must_be_defined():
    m = model.Model()
    with pytest.raises(NotImplementedError):
        m.compile([tensor.PlaceHolder((1, 2))])
    with pytest.raises(TypeError, match="list"):
        MLP().compile(tensor.PlaceHolder((1, 4)))
