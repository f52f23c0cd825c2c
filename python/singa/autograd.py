"""singa.autograd: eager operators that record themselves on a tape, and backward().

Every function here runs at once through the runtime's plugin kernels (the
same kernels an imported ONNX graph runs) on ``singa.tensor.Tensor`` values.
While ``autograd.training`` is True each op is also recorded, so that
``backward(loss)`` can compute gradients and ``sonnx.to_onnx`` can write the
recorded computation as an ONNX model. While it is False (evaluation), ops
run without being recorded and layers use their inference behaviour
(BatchNorm's running statistics, no dropout).

The names and calls are Apache SINGA's::

    autograd.training = True
    y = autograd.relu(conv(x))
    loss = autograd.softmax_cross_entropy(y, onehot_target)
    for p, g in autograd.backward(loss):
        sgd.update(p, g)

``Conv2d``, ``Linear``, ``MaxPool2d``, ``AvgPool2d`` and ``BatchNorm2d`` are
SINGA's operator-with-parameters classes (the same classes as in
``singa.layer``, constructed with the input size given).
"""

import weakref

import numpy as np

from singa import _singa
from singa import tensor as _tensor

#: Whether ops are recorded for backward() (SINGA's flag; False by default).
training = False

# Python Tensors known to wrap parameters, by Variable id: backward() hands
# these same objects back, so that attributes set on them (stores_grad) and
# their identity survive the trip through C++.
_known = weakref.WeakValueDictionary()


def _remember(t):
    """Registers Tensor ``t`` so that backward() yields this very object for its Variable."""
    _known[t._var.id] = t
    return t


def _wrap(var):
    """A Tensor around Variable ``var`` (the registered one when there is one)."""
    if var is None:
        return None
    t = _known.get(var.id)
    return t if t is not None else _tensor.Tensor._wrap(var)


def _const(value, like=None):
    """A Variable holding the constant ``value`` (a number or array), in the
    element type of Tensor ``like`` when given."""
    dtype = np.float32 if like is None else _np_dtype(like)
    arr = np.array(value, dtype=dtype)
    return _singa.Variable(_singa.CTensor.from_numpy(arr, copy=True))


def _np_dtype(t):
    return _singa.numpy_dtype(t._var.dtype)


def _var(x, like=None):
    """The Variable of ``x``: a Tensor, a bare Variable, or a number / ndarray
    (made a constant)."""
    if x is None:
        return None
    if isinstance(x, _tensor.Tensor):
        return x._var
    if isinstance(x, _singa.Variable):
        return x
    if isinstance(x, (int, float, np.ndarray, np.generic, list, tuple)):
        return _const(x, like)
    raise _singa.InvalidTypeError("singa.autograd: expected a singa.tensor.Tensor, a number or a numpy array, got %s" %
                    type(x).__name__)


def _apply(op_type, inputs, attrs=None, num_outputs=1, domain="", opset=0):
    """Runs ONNX op ``op_type`` on ``inputs`` (Tensors; None = absent optional
    input) and returns the list of output Tensors."""
    like = next((x for x in inputs if isinstance(x, _tensor.Tensor)), None)
    outs = _singa.apply(op_type, [_var(x, like) for x in inputs], attrs or {}, num_outputs, domain, opset, training)
    return [_wrap(o) for o in outs]


def apply(op_type, *inputs, num_outputs=1, domain="", opset=0, **attrs):
    """Runs any ONNX operator eagerly, e.g. ``apply("LeakyRelu", x, alpha=0.2)``.

    Attributes are keyword arguments (int, float, str or lists of them). Returns
    one Tensor, or a list when ``num_outputs`` > 1.
    """
    _check_arity(op_type, len(inputs), num_outputs, domain, opset)
    outs = _apply(op_type, list(inputs), attrs, num_outputs, domain, opset)
    return outs[0] if num_outputs == 1 else outs


_ARITY = {}  # (op_type, domain, opset) -> (min_in, max_in, min_out, max_out), or () when onnx has no schema


def _check_arity(op_type, n_in, n_out, domain, opset):
    """Rejects input / output counts the operator's ONNX schema does not allow:
    kernels read the inputs they know and would silently ignore extra ones."""
    key = (op_type, domain, opset)
    lim = _ARITY.get(key)
    if lim is None:
        try:
            import onnx.defs
            s = onnx.defs.get_schema(op_type, opset or onnx.defs.onnx_opset_version(), domain)
            lim = (s.min_input, s.max_input, s.min_output, s.max_output)
        except Exception:  # not an ONNX operator (a plugin's own domain): the kernel checks
            lim = ()
        _ARITY[key] = lim
    if not lim:
        return
    lo, hi, olo, ohi = lim
    if not lo <= n_in <= hi:
        raise _singa.InvalidArgumentError("apply: op '%s' takes %s inputs, got %d" % (
            op_type, lo if lo == hi else "%d to %d" % (lo, hi) if hi < 1 << 30 else "at least %d" % lo, n_in))
    if not olo <= n_out <= ohi:
        raise _singa.InvalidArgumentError("apply: op '%s' has %s outputs, num_outputs=%d asked for" % (
            op_type, olo if olo == ohi else "%d to %d" % (olo, ohi) if ohi < 1 << 30 else "at least %d" % olo, n_out))


def _op1(op_type, x, **attrs):
    return _apply(op_type, [x], attrs)[0]


def _op2(op_type, a, b, **attrs):
    if not isinstance(a, _tensor.Tensor) and isinstance(b, _tensor.Tensor):
        a = _wrap(_var(a, b))
    return _apply(op_type, [a, b], attrs)[0]


# ---- elementwise arithmetic (broadcasting as ONNX does) ----

def add(a, b):
    """a + b."""
    return _op2("Add", a, b)


def sub(a, b):
    """a - b."""
    return _op2("Sub", a, b)


def mul(a, b):
    """a * b (elementwise)."""
    return _op2("Mul", a, b)


def div(a, b):
    """a / b."""
    return _op2("Div", a, b)


def pow(a, b):  # noqa: A001 (SINGA's name)
    """a ** b."""
    return _op2("Pow", a, b)


def matmul(a, b):
    """Matrix product (batched and broadcast as numpy.matmul)."""
    return _op2("MatMul", a, b)


def gemm(A, B, C=None, alpha=1.0, beta=1.0, transA=0, transB=0):
    """alpha * A' B' + beta * C, A' and B' optionally transposed (ONNX Gemm)."""
    return _apply("Gemm", [A, B, C], dict(alpha=float(alpha), beta=float(beta), transA=int(transA),
                                          transB=int(transB)))[0]


def add_bias(x, b, axis=0):
    """Adds the vector ``b`` to every row (axis=0) or every column (axis=1) of the matrix ``x``."""
    if axis == 0:
        return add(x, b)
    return add(x, reshape(b, [-1, 1]))


def _unary(op_type, doc):
    def f(x):
        return _op1(op_type, x)
    f.__name__ = op_type.lower()
    f.__doc__ = doc
    return f


relu = _unary("Relu", "max(x, 0).")
sigmoid = _unary("Sigmoid", "1 / (1 + exp(-x)).")
tanh = _unary("Tanh", "Hyperbolic tangent.")
exp = _unary("Exp", "e ** x.")
log = _unary("Log", "Natural logarithm.")
sqrt = _unary("Sqrt", "Square root.")
abs = _unary("Abs", "|x|.")  # noqa: A001
neg = _unary("Neg", "-x.")
reciprocal = _unary("Reciprocal", "1 / x.")
sign = _unary("Sign", "The sign of x (-1, 0 or 1).")
softsign = _unary("Softsign", "x / (1 + |x|).")
softplus = _unary("Softplus", "log(1 + exp(x)).")
erf = _unary("Erf", "The error function.")
identity = _unary("Identity", "x itself (a recorded copy).")
sin = _unary("Sin", "Sine.")
cos = _unary("Cos", "Cosine.")
tan = _unary("Tan", "Tangent.")
asin = _unary("Asin", "Arcsine.")
acos = _unary("Acos", "Arccosine.")
atan = _unary("Atan", "Arctangent.")
sinh = _unary("Sinh", "Hyperbolic sine.")
cosh = _unary("Cosh", "Hyperbolic cosine.")
asinh = _unary("Asinh", "Inverse hyperbolic sine.")
acosh = _unary("Acosh", "Inverse hyperbolic cosine.")
atanh = _unary("Atanh", "Inverse hyperbolic tangent.")
ceil = _unary("Ceil", "Rounds up (zero gradient).")
floor = _unary("Floor", "Rounds down (zero gradient).")


def leakyrelu(x, a=0.01):
    """x where x >= 0, else a * x."""
    return _op1("LeakyRelu", x, alpha=float(a))


def elu(x, alpha=1.0):
    """x where x > 0, else alpha * (exp(x) - 1)."""
    return _op1("Elu", x, alpha=float(alpha))


def selu(x, alpha=1.67326, gamma=1.0507):
    """Scaled ELU."""
    return _op1("Selu", x, alpha=float(alpha), gamma=float(gamma))


def hardsigmoid(x, alpha=0.2, gamma=0.5):
    """max(0, min(1, alpha * x + gamma))."""
    return _op1("HardSigmoid", x, alpha=float(alpha), beta=float(gamma))


def prelu(x, slope):
    """x where x >= 0, else slope * x (``slope`` broadcast and trained)."""
    return _op2("PRelu", x, slope)


def clip(x, min=None, max=None):  # noqa: A002
    """x limited to [min, max] (either bound may be None)."""
    lo = None if min is None else _wrap(_const(min, x))
    hi = None if max is None else _wrap(_const(max, x))
    return _apply("Clip", [x, lo, hi])[0]


def softmax(x, axis=1):
    """Softmax along ``axis`` (SINGA's default: 1)."""
    return _op1("Softmax", x, axis=int(axis))


def log_softmax(x, axis=1):
    """log(softmax(x)) along ``axis``, computed stably."""
    return _op1("LogSoftmax", x, axis=int(axis))


# ---- shapes ----

def _int64s(values):
    return _wrap(_singa.Variable(_singa.CTensor.from_numpy(np.array(values, dtype=np.int64), copy=True)))


def reshape(x, shape):
    """x with a new shape (one entry may be -1, 0 keeps that dimension)."""
    return _apply("Reshape", [x, _int64s(list(shape))])[0]


def flatten(x, axis=1):
    """x as a matrix: dimensions before ``axis`` become rows, the rest columns."""
    return _op1("Flatten", x, axis=int(axis))


def transpose(x, shape=None):
    """x with its axes permuted (reversed when ``shape``, the permutation, is None)."""
    if shape is None:
        return _op1("Transpose", x)
    return _op1("Transpose", x, perm=[int(s) for s in shape])


def squeeze(x, axis=None):
    """Removes the size-1 dimensions listed in ``axis`` (all when None)."""
    if axis is None:
        return _apply("Squeeze", [x])[0]
    axes = [axis] if isinstance(axis, int) else list(axis)
    return _apply("Squeeze", [x, _int64s(axes)])[0]


def unsqueeze(x, axis):
    """Inserts size-1 dimensions at ``axis`` (an int or a list)."""
    axes = [axis] if isinstance(axis, int) else list(axis)
    return _apply("Unsqueeze", [x, _int64s(axes)])[0]


def cat(xs, axis=0):
    """Concatenates the Tensors ``xs`` along ``axis``."""
    return _apply("Concat", list(xs), dict(axis=int(axis)))[0]


concat = cat


def split(x, axis, parts):
    """Splits x along ``axis`` into pieces of the sizes in ``parts``."""
    return _apply("Split", [x, _int64s(list(parts))], dict(axis=int(axis)), num_outputs=len(parts))


def slice(x, starts, ends, axes=None, steps=None):  # noqa: A001
    """x[starts:ends:steps] along ``axes`` (ONNX Slice)."""
    ins = [x, _int64s(starts), _int64s(ends)]
    ins.append(None if axes is None else _int64s(axes))
    ins.append(None if steps is None else _int64s(steps))
    return _apply("Slice", ins)[0]


def gather(x, axis, indices):
    """Entries of x at ``indices`` along ``axis``."""
    return _apply("Gather", [x, _int64s(indices)], dict(axis=int(axis)))[0]


def tile(x, repeats):
    """x repeated ``repeats[i]`` times along each axis i."""
    return _apply("Tile", [x, _int64s(repeats)])[0]


def expand(x, shape):
    """x broadcast to ``shape``."""
    return _apply("Expand", [x, _int64s(shape)])[0]


# ---- reductions ----

def _reduce(op_type, x, axes, keepdims):
    ins = [x] if axes is None else [x, _int64s([axes] if isinstance(axes, int) else list(axes))]
    return _apply(op_type, ins, dict(keepdims=int(keepdims)))[0]


def reduce_sum(x, axes=None, keepdims=1):
    """Sum over ``axes`` (all when None)."""
    return _reduce("ReduceSum", x, axes, keepdims)


def reduce_mean(x, axes=None, keepdims=1):
    """Mean over ``axes`` (all when None)."""
    if axes is None:  # ReduceMean takes its axes as an attribute at opset 17
        return _apply("ReduceMean", [x], dict(keepdims=int(keepdims)))[0]
    axes = [axes] if isinstance(axes, int) else list(axes)
    return _apply("ReduceMean", [x], dict(keepdims=int(keepdims), axes=axes))[0]


def sum(*xs):  # noqa: A001
    """Elementwise sum of several Tensors."""
    return _apply("Sum", list(xs))[0]


def mean(*xs):
    """Elementwise mean of several Tensors."""
    return _apply("Mean", list(xs))[0]


def max(*xs):  # noqa: A001
    """Elementwise maximum of several Tensors."""
    return _apply("Max", list(xs))[0]


def min(*xs):  # noqa: A001
    """Elementwise minimum of several Tensors."""
    return _apply("Min", list(xs))[0]


def dropout(x, ratio=0.5):
    """Zeroes each element with probability ``ratio`` and scales the rest while
    training; the identity otherwise."""
    if not training:
        return x
    on = _singa.Variable(_singa.CTensor.from_numpy(np.array(True), copy=True))
    return _apply("Dropout", [x, _wrap(_const(ratio, x)), _wrap(on)])[0]


# ---- losses ----

def _is_int(t):
    return np.issubdtype(_np_dtype(t), np.integer)


def _as_1(loss):
    # SINGA's losses are Tensors of shape (1,) (examples read to_numpy(loss)[0]).
    return reshape(_wrap(loss), [1])


def softmax_cross_entropy(x, t):
    """Mean cross-entropy of softmax(x) ([N, C] scores) against ``t``: one-hot or
    soft targets [N, C] (as SINGA's examples pass them) or integer class
    indices [N]."""
    if _is_int(t):
        return _as_1(_singa.softmax_cross_entropy(x._var, t._var, training))
    return _as_1(_singa.softmax_cross_entropy_onehot(x._var, _var(t, x), training))


def mse_loss(x, t):
    """Mean squared error between ``x`` and ``t``."""
    return _as_1(_singa.mse_loss(x._var, _var(t, x), training))


def binary_cross_entropy(x, t, epsilon=1e-7):
    """Mean binary cross-entropy of probabilities ``x`` against targets ``t`` in [0, 1]."""
    return _as_1(_singa.binary_cross_entropy(x._var, _var(t, x), float(epsilon), training))


def cross_entropy(y, t):
    """Mean cross-entropy of probabilities ``y`` [N, C] against one-hot ``t``:
    -sum(t * log(y)) / N."""
    n = y.shape[0]
    return reshape(div(neg(reduce_sum(mul(t, log(y)), None, 0)), float(n)), [1])


def ranking_loss(pos, neg_, M=0.2):
    """Mean of max(0, M - pos + neg) (SINGA's ranking loss)."""
    return reshape(reduce_mean(relu(add(sub(neg_, pos), float(M))), None, 0), [1])


# ---- backward ----

def backward(y, dy=None):
    """Back-propagates from ``y`` (a loss with one element, unless ``dy`` gives
    its gradient) and yields ``(param, grad)`` for every leaf Tensor that ``y``
    depends on and that requires a gradient (layer parameters come back as the
    very Tensor objects the layer holds; a parameter Tensor whose
    ``stores_grad`` was set to False is skipped).

    Gradients are fresh for each call (they do not accumulate across calls).
    ``y`` must have been computed while ``autograd.training`` was True.
    """
    if not isinstance(y, _tensor.Tensor):
        raise _singa.InvalidTypeError("backward: expected the loss as a singa.tensor.Tensor, got %s" % type(y).__name__)
    if y._var.is_leaf:
        raise ValueError("backward: the loss was not computed by recorded ops "
                         "(set autograd.training = True before the forward pass)")
    seed = None if dy is None else (dy.data if isinstance(dy, _tensor.Tensor) else
                                    _singa.CTensor.from_numpy(np.asarray(dy), copy=True))
    leaves = _singa.backward(y._var, seed)
    for v in leaves:
        p = _known.get(v.id)
        if p is None:
            p = _tensor.Tensor._wrap(v)
        elif getattr(p, "stores_grad", True) is False:
            continue
        g = v.grad
        if g is None:
            continue
        yield p, _tensor.Tensor._wrap(_singa.Variable(g))


def gradients(y, dy=None):
    """All gradients of ``backward(y, dy)`` as a dict {param: grad}."""
    return {p: g for p, g in backward(y, dy)}


# ---- SINGA's operators with parameters (defined in singa.layer) ----

def __getattr__(name):
    # Linear, Conv2d, ... live in singa.layer, which imports this module.
    if name in ("Linear", "Conv2d", "MaxPool2d", "AvgPool2d", "BatchNorm2d", "Dropout", "Flatten", "ReLU",
                "LSTM", "Sequential"):
        from singa import layer
        return getattr(layer, name)
    raise AttributeError("module 'singa.autograd' has no attribute '%s'" % name)
