"""singa.layer: lazy sizes, parameters by name, values against torch, modes."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from singa import autograd, layer, tensor  # noqa: E402

RNG = np.random.default_rng(11)


@pytest.fixture(autouse=True)
def recording():
    was = autograd.training
    autograd.training = True
    yield
    autograd.training = was


def t(a):
    return tensor.from_numpy(np.ascontiguousarray(a, dtype=np.float32))


def test_linear_learns_its_input_size_and_names_params():
    lin = layer.Linear(3)
    with pytest.raises(AttributeError, match="first call"):
        lin.W
    x = RNG.standard_normal((4, 7)).astype(np.float32)
    y = lin(t(x))
    assert tuple(lin.W.shape) == (3, 7) and tuple(lin.b.shape) == (3,)
    assert set(lin.get_params()) == {"W", "b"}
    assert lin.W.requires_grad and lin.W.stores_grad
    np.testing.assert_allclose(tensor.to_numpy(y), x @ tensor.to_numpy(lin.W).T + tensor.to_numpy(lin.b),
                               rtol=1e-5, atol=1e-5)


def test_conv2d_both_signatures_and_relu_activation():
    x = RNG.standard_normal((2, 3, 8, 8)).astype(np.float32)
    a = layer.Conv2d(4, 3, padding=1, activation="RELU")  # SINGA 3: (nb_kernels, kernel_size)
    b = layer.Conv2d(3, 4, 3, padding=1)                  # (in_channels, out_channels, kernel_size)
    ya = tensor.to_numpy(a(t(x)))
    b.set_params({"W": a.W, "b": a.b})
    yb = tensor.to_numpy(b(t(x)))
    np.testing.assert_allclose(ya, np.maximum(yb, 0), rtol=1e-5, atol=1e-6)
    ref = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(tensor.to_numpy(a.W)),
                                     torch.tensor(tensor.to_numpy(a.b)), padding=1)
    np.testing.assert_allclose(yb, ref.numpy(), rtol=1e-4, atol=1e-5)


def test_bad_arguments_are_clear():
    with pytest.raises(ValueError, match="kernel_size"):
        layer.Conv2d(4, (3, 5))
    with pytest.raises(ValueError, match=r"\[N, C, H, W\]"):
        layer.Conv2d(4, 3)(t(np.zeros((2, 3), np.float32)))
    with pytest.raises(ValueError, match="ratio"):
        layer.Dropout(1.5)
    with pytest.raises(TypeError, match="Tensor"):
        layer.Linear(3)(np.zeros((2, 2)))
    with pytest.raises(KeyError, match="no parameter"):
        layer.Linear(2, 3).set_params({"nope": np.zeros(3)})


def test_batchnorm_train_and_eval_match_torch():
    x = RNG.standard_normal((8, 3, 4, 4)).astype(np.float32) * 2 + 1
    bn = layer.BatchNorm2d(momentum=0.9)
    tbn = torch.nn.BatchNorm2d(3, momentum=0.1)  # torch's momentum is 1 - SINGA's
    y = bn(t(x))
    ty = tbn(torch.tensor(x))
    np.testing.assert_allclose(tensor.to_numpy(y), ty.detach().numpy(), rtol=1e-4, atol=1e-4)
    # Running statistics follow ONNX's BatchNormalization (the batch's biased
    # variance), where torch folds in the unbiased one.
    states = bn.get_states()
    mean, var = x.mean((0, 2, 3)), x.var((0, 2, 3))
    run_mean, run_var = 0.9 * 0 + 0.1 * mean, 0.9 * 1 + 0.1 * var
    np.testing.assert_allclose(tensor.to_numpy(states["running_mean"]), run_mean, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(tensor.to_numpy(states["running_var"]), run_var, rtol=1e-4, atol=1e-5)
    autograd.training = False
    y = tensor.to_numpy(bn(t(x)))
    ref = (x - run_mean[None, :, None, None]) / np.sqrt(run_var[None, :, None, None] + 1e-5)
    scale, bias = tensor.to_numpy(bn.scale), tensor.to_numpy(bn.bias)
    np.testing.assert_allclose(y, ref * scale[None, :, None, None] + bias[None, :, None, None], rtol=1e-4,
                               atol=1e-4)


def test_pools_activations_and_composites():
    x = RNG.standard_normal((2, 2, 6, 6)).astype(np.float32)
    tx = torch.tensor(x)
    np.testing.assert_allclose(tensor.to_numpy(layer.MaxPool2d(2)(t(x))),
                               torch.nn.functional.max_pool2d(tx, 2).numpy(), rtol=1e-6)
    np.testing.assert_allclose(tensor.to_numpy(layer.AvgPool2d(3, 1, 1)(t(x))),
                               torch.nn.functional.avg_pool2d(tx, 3, 1, 1, count_include_pad=False).numpy(),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(tensor.to_numpy(layer.LeakyReLU(0.3)(t(x))),
                               torch.nn.functional.leaky_relu(tx, 0.3).numpy(), rtol=1e-6)
    np.testing.assert_allclose(tensor.to_numpy(layer.Flatten()(t(x))), x.reshape(2, -1))
    np.testing.assert_allclose(tensor.to_numpy(layer.SoftMax()(t(x[:, :, 0, 0]))),
                               torch.softmax(tx[:, :, 0, 0], 1).numpy(), rtol=1e-5)
    seq = layer.Sequential(layer.Conv2d(3, 3), layer.ReLU(), layer.Flatten(), layer.Linear(5))
    assert tuple(seq(t(x)).shape) == (2, 5)
    assert len(seq.get_params()) == 4 and "layers.3.W" in seq.get_params()


def test_lstm_matches_torch():
    x = RNG.standard_normal((3, 5, 4)).astype(np.float32)
    lstm = layer.LSTM(6, num_layers=1, batch_first=True)
    y = lstm(t(x))
    tl = torch.nn.LSTM(4, 6, 1, batch_first=True)
    with torch.no_grad():
        for name, p in tl.named_parameters():
            p.copy_(torch.tensor(tensor.to_numpy(lstm.get_params()[name])))
    ty, _ = tl(torch.tensor(x))
    np.testing.assert_allclose(tensor.to_numpy(y), ty.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_manual_seed_makes_weights_reproducible():
    layer.manual_seed(5)
    a = tensor.to_numpy(layer.Linear(4, 3).W).copy()
    layer.manual_seed(5)
    b = tensor.to_numpy(layer.Linear(4, 3).W)
    np.testing.assert_array_equal(a, b)
