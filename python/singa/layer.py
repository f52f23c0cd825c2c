"""singa.layer: layers with parameters, as Apache SINGA's Python ``layer`` module names them.

A layer is called on Tensors (``y = layer(x)``); its ops run eagerly and, while
``autograd.training`` is True, are recorded on the autograd tape, so a model
built from layers trains with ``autograd.backward`` / ``opt`` and exports with
``sonnx.to_onnx``. As in SINGA, sizes that follow from the input may be left
out: ``Linear(10)`` learns its input size from the first batch (parameters
exist after that first call, or after ``Model.compile``); ``Linear(784, 10)``
creates them at once.

The layers with parameters run the C++ layers of libsinga_core
(``singa::layer``); their parameters are Tensors with ``requires_grad`` and
``stores_grad`` set. Layers composed in Python (Sequential, Add, Cat, losses)
are written with ``singa.autograd`` ops.
"""

import numpy as np

from singa import _singa
from singa import autograd
from singa import tensor as _tensor

__all__ = [
    "Layer", "Linear", "Gemm", "Conv2d", "MaxPool2d", "AvgPool2d", "Pooling2d", "BatchNorm2d", "Dropout",
    "ReLU", "Sigmoid", "Tanh", "LeakyReLU", "ELU", "Softplus", "Flatten", "SoftMax", "Reshape", "Add", "Cat",
    "LSTM", "Sequential", "SoftMaxCrossEntropy", "MeanSquareError", "CrossEntropy", "BinaryCrossEntropy",
    "manual_seed",
]


# Draws the initial weights of Linear and Conv2d (SINGA's scheme, below).
_rng = np.random.default_rng()


def manual_seed(seed):
    """Seeds the generators that initialise new layers' weights (reproducible models)."""
    global _rng
    _singa.manual_seed(int(seed))
    _rng = np.random.default_rng(int(seed))


def _singa_init(t, std):
    """Fills parameter Tensor ``t`` from N(0, std^2) (std 0: zeros), as SINGA's
    layers initialise W and b; the examples' learning rates are tuned to it."""
    shape = tuple(t.shape)
    arr = np.zeros(shape, np.float32) if std == 0 else _rng.normal(0.0, std, shape).astype(np.float32)
    t._var.set_data(_singa.CTensor.from_numpy(arr, copy=True))


def _check_tensor(x, who):
    if not isinstance(x, _tensor.Tensor):
        raise _singa.InvalidTypeError("%s: expected a singa.tensor.Tensor input, got %s" % (who, type(x).__name__))


def _square(v, what, who):
    """An int from an int or a pair of equal ints (the C++ layers take square windows)."""
    if isinstance(v, (tuple, list)):
        if len(v) != 2 or v[0] != v[1]:
            raise ValueError("%s: %s %r is not supported; give one int or a pair of equal ints" % (who, what, v))
        v = v[0]
    return int(v)


class Layer:
    """Base of all layers: lazy initialisation on the first call, sub-layers
    found among the attributes, and parameter / state access by name."""

    def __init__(self):
        self.name = None
        self.training = True
        self._initialized = False

    def initialize(self, *inputs):
        """Creates the parameters from the first inputs (shapes); a no-op by default."""

    def forward(self, *inputs):
        """The computation; subclasses define it."""
        raise NotImplementedError("%s.forward is not defined" % type(self).__name__)

    def __call__(self, *args, **kwargs):
        if not self._initialized:
            self.initialize(*args, **kwargs)
            self._initialized = True
        return self.forward(*args, **kwargs)

    # ---- structure ----

    def _sublayers(self):
        """(name, layer) for each direct sub-layer, in attribute order."""
        out = []
        for k, v in self.__dict__.items():
            if isinstance(v, Layer):
                out.append((k, v))
            elif isinstance(v, (list, tuple)):
                out.extend(("%s.%d" % (k, i), e) for i, e in enumerate(v) if isinstance(e, Layer))
        return out

    def _own_params(self):
        """This layer's own parameters (not its sub-layers'), by local name."""
        return {}

    def _own_buffers(self):
        return {}

    def get_params(self):
        """Trainable parameters as {"sublayer.name": Tensor}."""
        out = dict(self._own_params())
        for k, l in self._sublayers():
            out.update({k + "." + n: t for n, t in l.get_params().items()})
        return out

    def parameters(self):
        """The trainable parameters as a list of Tensors."""
        return list(self.get_params().values())

    def get_states(self):
        """Parameters and non-trainable state (running statistics), by name."""
        out = dict(self._own_params())
        out.update(self._own_buffers())
        for k, l in self._sublayers():
            out.update({k + "." + n: t for n, t in l.get_states().items()})
        return out

    def set_params(self, parameters):
        """Copies values (Tensors or ndarrays, by the names get_params uses) into the parameters."""
        self._set(self.get_params(), parameters)

    def set_states(self, states):
        """Copies values into the parameters and states, by the names get_states uses."""
        self._set(self.get_states(), states)

    @staticmethod
    def _set(mine, values):
        for k, v in values.items():
            if k not in mine:
                raise KeyError("no parameter or state named %r (have: %s)" % (k, ", ".join(sorted(mine))))
            arr = _tensor.to_numpy(v) if isinstance(v, _tensor.Tensor) else np.asarray(v)
            dst = mine[k]
            if tuple(arr.shape) != tuple(dst.shape):
                raise ValueError("%s: shape %s does not match the parameter's %s" % (k, arr.shape, tuple(dst.shape)))
            dst._var.set_data(_singa.CTensor.from_numpy(np.ascontiguousarray(arr, dtype=_tensor.to_numpy(dst).dtype),
                                                        copy=True))

    def train(self, mode=True):
        """Training (batch statistics, dropout) or evaluation mode, for this layer and its sub-layers."""
        self.training = mode
        for _, l in self._sublayers():
            l.train(mode)

    def eval(self):
        self.train(False)


class _CppLayer(Layer):
    """A layer run by a C++ singa::layer object (``self._c``), made on first use."""

    # C++ parameter names -> SINGA's names.
    _renames = {}

    def __init__(self):
        super().__init__()
        self._c = None
        self._params = {}
        self._buffers = {}

    def _make(self, x):
        """The C++ layer for input ``x``."""
        raise NotImplementedError

    def _create(self, c):
        self._c = c
        self._initialized = True
        for n, v in c.parameters():
            t = _tensor.Tensor._wrap(v)
            t.requires_grad = True
            t.stores_grad = True
            self._params[self._renames.get(n, n)] = autograd._remember(t)
        for n, v in c.buffers():
            t = _tensor.Tensor._wrap(v)
            t.stores_grad = False
            self._buffers[n] = autograd._remember(t)

    def initialize(self, x, *args, **kwargs):
        if self._c is None:
            _check_tensor(x, type(self).__name__)
            self._create(self._make(x))

    def forward(self, x):
        _check_tensor(x, type(self).__name__)
        if self._c is None:
            self.initialize(x)
        # SINGA keys batch statistics and dropout on autograd.training.
        if self._c.training != autograd.training:
            self._c.train(autograd.training)
        return autograd._wrap(self._c.forward(x._var, autograd.training))

    def _own_params(self):
        return dict(self._params)

    def _own_buffers(self):
        return dict(self._buffers)

    def __getattr__(self, name):
        # W, b, scale, ... as attributes, like SINGA's layers.
        params = self.__dict__.get("_params", {})
        if name in params:
            return params[name]
        buffers = self.__dict__.get("_buffers", {})
        if name in buffers:
            return buffers[name]
        raise AttributeError("%s has no attribute %r%s" % (type(self).__name__, name,
                             " (parameters exist after the first call)" if self.__dict__.get("_c") is None else ""))


class Linear(_CppLayer):
    """y = x W + b (W stored as [out, in], SINGA's ``W``, ``b``).

    ``Linear(out_features)`` or ``Linear(in_features, out_features)``.
    """

    _renames = {"weight": "W", "bias": "b"}

    def __init__(self, out_features, *args, bias=True, **kwargs):
        super().__init__()
        self.in_features = None
        if args:
            self.in_features, out_features = out_features, args[0]
        self.out_features = int(out_features)
        self.bias = bias
        if self.in_features is not None:
            self._create(_singa.Linear(int(self.in_features), self.out_features, bool(bias)))

    def _make(self, x):
        if len(x.shape) < 1:
            raise ValueError("Linear: the input must have at least one dimension")
        self.in_features = int(x.shape[-1])
        return _singa.Linear(self.in_features, self.out_features, bool(self.bias))

    def _create(self, c):
        super()._create(c)
        _singa_init(self._params["W"], np.sqrt(2.0 / (self.in_features + self.out_features)))
        if "b" in self._params:
            _singa_init(self._params["b"], 0)


Gemm = Linear


class Conv2d(_CppLayer):
    """2-D convolution over [N, C, H, W].

    ``Conv2d(nb_kernels, kernel_size, ...)`` (input channels from the first
    batch) or ``Conv2d(in_channels, out_channels, kernel_size, ...)``; ``stride``,
    ``padding``, ``dilation``, ``group``, ``bias``, and ``activation="RELU"``
    to apply a ReLU after it.
    """

    _renames = {"weight": "W", "bias": "b"}

    def __init__(self, nb_kernels, kernel_size, *args, stride=1, padding=0, dilation=1, group=1, bias=True,
                 pad_mode="NOTSET", activation="NOTSET", **kwargs):
        super().__init__()
        self.in_channels = None
        if args:
            self.in_channels, nb_kernels, kernel_size = nb_kernels, kernel_size, args[0]
        if pad_mode not in ("NOTSET", "VALID"):
            raise ValueError("Conv2d: pad_mode %r is not supported; give padding instead" % (pad_mode,))
        self.nb_kernels = int(nb_kernels)
        self.kernel_size = _square(kernel_size, "kernel_size", "Conv2d")
        self.stride = _square(stride, "stride", "Conv2d")
        self.padding = _square(padding, "padding", "Conv2d")
        self.dilation = _square(dilation, "dilation", "Conv2d")
        self.group = int(group)
        self.bias = bias
        if activation not in ("NOTSET", "RELU"):
            raise ValueError("Conv2d: activation %r is not supported (NOTSET or RELU)" % (activation,))
        self.activation = activation
        if self.in_channels is not None:
            self._create(self._cpp(int(self.in_channels)))

    def _cpp(self, in_channels):
        return _singa.Conv2d(in_channels, self.nb_kernels, self.kernel_size, self.stride, self.padding,
                             self.dilation, self.group, bool(self.bias))

    def _make(self, x):
        if len(x.shape) != 4:
            raise ValueError("Conv2d: the input must be [N, C, H, W], got shape %s" % (tuple(x.shape),))
        self.in_channels = int(x.shape[1])
        return self._cpp(self.in_channels)

    def _create(self, c):
        super()._create(c)
        fan_in = self.in_channels // self.group * self.kernel_size * self.kernel_size
        _singa_init(self._params["W"], np.sqrt(2.0 / (fan_in + self.nb_kernels)))
        if "b" in self._params:
            _singa_init(self._params["b"], 0)

    def forward(self, x):
        y = super().forward(x)
        return autograd.relu(y) if self.activation == "RELU" else y


class _Pool(_CppLayer):
    _cls = None

    def __init__(self, kernel_size, stride=None, padding=0, **kwargs):
        super().__init__()
        self.kernel_size = _square(kernel_size, "kernel_size", type(self).__name__)
        self.stride = self.kernel_size if stride is None else _square(stride, "stride", type(self).__name__)
        self.padding = _square(padding, "padding", type(self).__name__)
        self._create(getattr(_singa, self._cls)(self.kernel_size, self.stride, self.padding))


class MaxPool2d(_Pool):
    """2-D max pooling: ``MaxPool2d(kernel_size, stride=kernel_size, padding=0)``."""
    _cls = "MaxPool2d"


class AvgPool2d(_Pool):
    """2-D average pooling: ``AvgPool2d(kernel_size, stride=kernel_size, padding=0)``."""
    _cls = "AvgPool2d"


def Pooling2d(kernel_size, stride=None, padding=0, is_max=True):
    """Max (``is_max``) or average 2-D pooling."""
    return (MaxPool2d if is_max else AvgPool2d)(kernel_size, stride, padding)


class BatchNorm2d(_CppLayer):
    """Batch normalisation over [N, C, ...]: batch statistics while training, running
    ones otherwise; running = momentum * running + (1 - momentum) * batch.

    ``BatchNorm2d(momentum=0.9)`` or ``BatchNorm2d(num_features, momentum=0.9)``.
    """

    def __init__(self, num_features=None, momentum=0.9, epsilon=1e-5):
        super().__init__()
        self.momentum = float(momentum)
        self.epsilon = float(epsilon)
        self.num_features = num_features
        if num_features is not None:
            self._create(_singa.BatchNorm2d(int(num_features), self.momentum, self.epsilon))

    def _make(self, x):
        if len(x.shape) < 2:
            raise ValueError("BatchNorm2d: the input must be [N, C, ...], got shape %s" % (tuple(x.shape),))
        self.num_features = int(x.shape[1])
        return _singa.BatchNorm2d(self.num_features, self.momentum, self.epsilon)


class Dropout(_CppLayer):
    """Zeroes each element with probability ``ratio`` while training (scaling the
    rest by 1 / (1 - ratio)); the identity in evaluation."""

    def __init__(self, ratio=0.5, seed=-1):
        super().__init__()
        self.ratio = float(ratio)
        if not 0 <= self.ratio < 1:
            raise ValueError("Dropout: ratio must be in [0, 1), got %r" % (ratio,))
        self._create(_singa.Dropout(self.ratio, int(seed)))


class _Activation(_CppLayer):
    _op = None

    def __init__(self, **attrs):
        super().__init__()
        kw = {}
        if "alpha" in attrs:
            kw.update(alpha=float(attrs["alpha"]), has_alpha=True)
        if "axis" in attrs:
            kw.update(axis=int(attrs["axis"]), has_axis=True)
        self._create(_singa.Activation(self._op, **kw))


class ReLU(_Activation):
    """max(x, 0)."""
    _op = "Relu"


class Sigmoid(_Activation):
    """1 / (1 + exp(-x))."""
    _op = "Sigmoid"


class Tanh(_Activation):
    """Hyperbolic tangent."""
    _op = "Tanh"


class Softplus(_Activation):
    """log(1 + exp(x))."""
    _op = "Softplus"


class LeakyReLU(_Activation):
    """x where x >= 0, else a * x."""
    _op = "LeakyRelu"

    def __init__(self, a=0.01):
        super().__init__(alpha=a)


class ELU(_Activation):
    """x where x > 0, else alpha * (exp(x) - 1)."""
    _op = "Elu"

    def __init__(self, alpha=1.0):
        super().__init__(alpha=alpha)


class Flatten(_Activation):
    """Reshapes to a matrix: dimensions before ``axis`` become rows."""
    _op = "Flatten"

    def __init__(self, axis=1):
        super().__init__(axis=axis)


class SoftMax(Layer):
    """Softmax along ``axis``."""

    def __init__(self, axis=1):
        super().__init__()
        self.axis = axis

    def forward(self, x):
        return autograd.softmax(x, self.axis)


class Reshape(Layer):
    """Reshapes to ``shape`` (given here or at the call)."""

    def __init__(self, shape=None):
        super().__init__()
        self.shape = shape

    def forward(self, x, shape=None):
        return autograd.reshape(x, shape if shape is not None else self.shape)


class Add(Layer):
    """a + b."""

    def forward(self, a, b):
        return autograd.add(a, b)


class Cat(Layer):
    """Concatenation of a list of Tensors along ``axis``."""

    def __init__(self, axis=0):
        super().__init__()
        self.axis = axis

    def forward(self, xs):
        return autograd.cat(xs, self.axis)


class LSTM(_CppLayer):
    """A multi-layer LSTM (PyTorch's gate order and parameter names).

    ``LSTM(hidden_size, num_layers=1, batch_first=True, return_sequences=True)``;
    the input size comes from the first batch ([N, T, in] when ``batch_first``,
    else [T, N, in]). Returns every step's hidden state of the last layer, or
    only the last step's [N, H] when ``return_sequences`` is False.
    """

    def __init__(self, hidden_size, num_layers=1, batch_first=True, return_sequences=True, input_size=None):
        super().__init__()
        self.hidden_size = int(hidden_size)
        self.num_layers = int(num_layers)
        self.batch_first = bool(batch_first)
        self.return_sequences = bool(return_sequences)
        if input_size is not None:
            self._create(self._cpp(int(input_size)))

    def _cpp(self, input_size):
        return _singa.LSTM(input_size, self.hidden_size, self.num_layers, self.batch_first, self.return_sequences)

    def _make(self, x):
        if len(x.shape) != 3:
            raise ValueError("LSTM: the input must have 3 dimensions, got shape %s" % (tuple(x.shape),))
        return self._cpp(int(x.shape[-1]))


class Sequential(Layer):
    """Layers (or callables) applied in order."""

    def __init__(self, *layers):
        super().__init__()
        if len(layers) == 1 and isinstance(layers[0], (list, tuple)):
            layers = tuple(layers[0])
        self.layers = list(layers)

    def add(self, layer):
        self.layers.append(layer)
        return self

    def forward(self, x):
        for l in self.layers:
            x = l(x)
        return x


class SoftMaxCrossEntropy(Layer):
    """Mean cross-entropy of softmax(x) against one-hot targets or class indices."""

    def forward(self, x, t):
        return autograd.softmax_cross_entropy(x, t)


class MeanSquareError(Layer):
    """Mean squared error."""

    def forward(self, x, t):
        return autograd.mse_loss(x, t)


class CrossEntropy(Layer):
    """Mean cross-entropy of probabilities against one-hot targets."""

    def forward(self, y, t):
        return autograd.cross_entropy(y, t)


class BinaryCrossEntropy(Layer):
    """Mean binary cross-entropy of probabilities against targets in [0, 1]."""

    def forward(self, x, t):
        return autograd.binary_cross_entropy(x, t)
