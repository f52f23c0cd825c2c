"""singa.tensor: n-d arrays on a device, with SINGA's Python Tensor API.

Design (shared with singa.autograd, read this before binding Variable):

* ``_singa.CTensor`` (python/src/bind_tensor.cpp, PY1) is a raw ``singa::Tensor``:
  ``CTensor(shape, onnx_dtype, device=None, device_id=0)``, ``.shape``, ``.dtype``
  (ONNX code), ``.device`` (name), ``.device_id``, ``.to(device, id)``, ``.to_host()``,
  ``.clone()``, ``.reshaped(shape)``, the buffer protocol (host tensors: numpy views
  share its memory), ``CTensor.from_numpy(arr, copy=False)``, ``__dlpack__`` /
  ``__dlpack_device__`` and ``CTensor.from_dlpack(obj)``.
* ``_singa.Variable`` (python/src/bind_autograd.cpp, PY2) is a
  ``singa::autograd::Variable``: ``Variable(CTensor, requires_grad=False, name="")``,
  properties ``data`` (CTensor, read; ``set_data(CTensor)`` writes), ``grad``
  (CTensor or None), ``requires_grad`` (read/write), ``name`` (read/write),
  ``shape``, ``dtype``, ``id`` (int identity), and ``detach()``, ``zero_grad()``.
  ``_singa.apply(op_type, inputs, attrs={}, num_outputs=1, domain="", opset=0)``
  runs one op eagerly and records it on the tape (``None`` inputs are absent
  optional inputs; ``attrs`` maps names to int / float / str / list[int] /
  list[float]); it returns a list of Variables.
* ``singa.tensor.Tensor`` (this file) is SINGA's Python Tensor: it holds one
  ``_singa.Variable`` in ``self._var``, so every Tensor can take part in
  autograd. ``requires_grad`` lives on the Variable; ``stores_grad`` (keep the
  gradient, i.e. a parameter) is a Python attribute, as in SINGA.
  ``Tensor._wrap(var)`` makes a Tensor around an existing Variable (use it for
  op results); ``t.data`` is the CTensor; arithmetic calls ``_singa.apply``.
"""
import numpy as np

from singa import _singa
from singa import device as _device

__all__ = ["Tensor", "PlaceHolder", "from_numpy", "to_numpy", "from_dlpack", "to_host", "copy_from_numpy",
           "zeros", "ones", "zeros_like", "ones_like", "reshape", "float16", "float32", "float64", "int8", "int16",
           "int32", "int64", "uint8", "bool_"]

# Element types are numpy dtypes (``tensor.float32 == numpy.float32``).
float16 = np.dtype("float16")
float32 = np.dtype("float32")
float64 = np.dtype("float64")
int8 = np.dtype("int8")
int16 = np.dtype("int16")
int32 = np.dtype("int32")
int64 = np.dtype("int64")
uint8 = np.dtype("uint8")
bool_ = np.dtype("bool")


def _autograd():
    # singa.autograd imports this module; import it on first use instead.
    from singa import autograd
    return autograd


def _resolve_device(dev):
    return _device.get_default_device() if dev is None else dev


def _check_dtype(dtype):
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise _singa.InvalidArgumentError("Tensor: %r is not a dtype (use tensor.float32, numpy.int64, ...)" % (dtype,))
    _singa.onnx_dtype(dt)  # raises a clear error for types singa lacks
    return dt


def _ctensor_on(ct, dev):
    """`ct` on device `dev` (a copy unless already there)."""
    if dev is None or dev.host:
        return ct if ct.on_host else ct.to_host()
    if ct.device == dev.name and ct.device_id == dev.id:
        return ct
    return ct.to(dev.cdevice, dev.id)


class Tensor:
    """An n-d array on a device that can take part in autograd (SINGA's Tensor).

    ``Tensor(shape=None, device=None, dtype=float32, data=None, requires_grad=False,
    stores_grad=False, name=None)``: with ``data`` (a numpy array or anything
    numpy accepts) the tensor holds that data (sharing a C-contiguous array's
    memory on the host); otherwise a zero-filled tensor of ``shape``.
    ``requires_grad`` makes autograd compute its gradient; ``stores_grad``
    marks a parameter (SINGA's flag: ``autograd.backward`` yields its gradient).

    Host tensors convert to numpy without copying: ``np.asarray(t)`` and
    ``tensor.to_numpy(t)`` view the same memory. ``__dlpack__`` /
    ``tensor.from_dlpack`` share memory with torch, numpy and others.
    """

    __array_priority__ = 100  # ndarray (op) Tensor uses Tensor's operators

    def __init__(self, shape=None, device=None, dtype=float32, data=None, requires_grad=False, stores_grad=False,
                 name=None, creator=None):
        dev = _resolve_device(device)
        if data is not None:
            if isinstance(data, Tensor):
                ct = data.data
            elif isinstance(data, _singa.CTensor):
                ct = data
            else:
                arr = np.asarray(data)
                if dtype is not None and data is not None and not isinstance(data, np.ndarray):
                    arr = arr.astype(_check_dtype(dtype), copy=False)  # Python lists/scalars take `dtype`
                ct = _singa.CTensor.from_numpy(arr)
            if shape is not None and tuple(shape) != tuple(ct.shape):
                raise _singa.InvalidArgumentError(
                    "Tensor: shape %s does not match the data's shape %s" % (tuple(shape), tuple(ct.shape)))
            ct = _ctensor_on(ct, dev)
        else:
            dt = _check_dtype(float32 if dtype is None else dtype)
            shape = () if shape is None else tuple(int(d) for d in shape)
            if any(d < 0 for d in shape):
                raise _singa.InvalidArgumentError("Tensor: negative dimension in shape %s" % (shape,))
            ct = _ctensor_on(_singa.CTensor.from_numpy(np.zeros(shape, dt)), dev)
        self._var = _singa.Variable(ct, bool(requires_grad), name or "")
        self.stores_grad = bool(stores_grad)
        self.creator = creator
        if requires_grad:
            # backward() then yields this very object, and skips it unless stores_grad.
            from singa import autograd as _autograd
            _autograd._remember(self)

    @classmethod
    def _wrap(cls, var):
        """A Tensor around an existing _singa.Variable (op results)."""
        t = cls.__new__(cls)
        t._var = var
        t.stores_grad = False
        t.creator = None
        return t

    # ---- properties ----
    @property
    def data(self):
        """The raw _singa.CTensor holding the values."""
        return self._var.data

    @property
    def shape(self):
        return tuple(self._var.shape)

    @property
    def dtype(self):
        """The element type as a numpy dtype (compare with tensor.float32, ...)."""
        return np.dtype(_singa.numpy_dtype(self._var.dtype)) if self._var.dtype != 8 else np.dtype(object)

    @property
    def device(self):
        ct = self._var.data
        if ct.on_host:
            return _device.get_default_device()
        return _device.Device(_singa.get_device(ct.device), ct.device_id)

    @property
    def requires_grad(self):
        return self._var.requires_grad

    @requires_grad.setter
    def requires_grad(self, on):
        self._var.requires_grad = bool(on)

    @property
    def name(self):
        return self._var.name

    @name.setter
    def name(self, n):
        self._var.name = str(n)

    @property
    def grad(self):
        """The gradient autograd accumulated (a Tensor), or None."""
        g = self._var.grad
        return None if g is None else Tensor(data=g)

    def ndim(self):
        return len(self._var.shape)

    def size(self):
        """Number of elements."""
        return int(np.prod(self._var.shape, dtype=np.int64))

    def memsize(self):
        """Bytes the data takes."""
        return self._var.data.nbytes

    def is_empty(self):
        return self.size() == 0

    def __len__(self):
        if not self.shape:
            raise _singa.InvalidTypeError("len() of a 0-d Tensor")
        return self.shape[0]

    # ---- conversion ----
    def to_numpy(self):
        """A numpy array of the values: a view sharing memory for host tensors."""
        return self._var.data.numpy()

    numpy = to_numpy

    def __array__(self, dtype=None):
        a = self._var.data.numpy()
        return a if dtype is None else a.astype(dtype, copy=False)

    def __dlpack__(self, stream=None):
        return self._var.data.__dlpack__(stream)

    def __dlpack_device__(self):
        return self._var.data.__dlpack_device__()

    def item(self):
        return self.to_numpy().item()

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def to_device(self, device):
        """Moves the data to `device` (in place, as SINGA does); returns self."""
        self._var.set_data(_ctensor_on(self._var.data, _resolve_device(device)))
        return self

    def to_host(self):
        """Moves the data to the host (in place); returns self."""
        return self.to_device(_device.get_default_device())

    def as_type(self, dtype):
        """A copy of this tensor in element type `dtype` (not recorded)."""
        return Tensor(data=self.to_numpy().astype(_check_dtype(dtype)), device=self.device)

    def clone(self):
        """A copy with its own memory (same device, dtype, flags)."""
        t = Tensor(data=self._var.data.clone(), device=self.device, requires_grad=self.requires_grad,
                   stores_grad=self.stores_grad, name=self.name)
        return t

    def deepcopy(self):
        return self.clone()

    def detach(self):
        """The same values, cut from the autograd record."""
        return Tensor._wrap(self._var.detach())

    # ---- in-place value setting (not recorded) ----
    def copy_from_numpy(self, np_array, offset=0):
        """Copies `np_array` (same number of elements) into this tensor's memory."""
        arr = np.ascontiguousarray(np_array, dtype=self.dtype).reshape(-1)
        if offset or arr.size != self.size():
            flat = self.to_numpy().reshape(-1).copy()
            flat[offset:offset + arr.size] = arr
            arr = flat
        self.copy_data(Tensor(data=arr.reshape(self.shape)))

    def copy_from(self, t):
        """Copies the values of Tensor `t` (same shape)."""
        self.copy_data(t)

    def copy_data(self, t):
        src = t.data if isinstance(t, Tensor) else t
        if tuple(src.shape) != self.shape:
            raise _singa.InvalidArgumentError(
                "copy_data: shape %s into a tensor of shape %s" % (tuple(src.shape), self.shape))
        dst = self._var.data
        if dst.on_host and src.on_host and dst.dtype == src.dtype:
            dst.copy_from(src)
        else:
            host = np.asarray(src.to_host().numpy(), dtype=self.dtype)
            self._var.set_data(_ctensor_on(_singa.CTensor.from_numpy(host, copy=True), self.device))

    def set_value(self, x):
        """Sets every element to `x`."""
        self._fill(np.full(self.shape, x, dtype=self.dtype))
        return self

    def gaussian(self, mean=0.0, std=1.0):
        """Fills with N(mean, std^2) samples."""
        self._fill(np.random.normal(mean, std, self.shape).astype(self.dtype))
        return self

    def uniform(self, low=0.0, high=1.0):
        """Fills with U(low, high) samples."""
        self._fill(np.random.uniform(low, high, self.shape).astype(self.dtype))
        return self

    def bernoulli(self, p):
        """Fills with Bernoulli(p) samples (0 or 1)."""
        self._fill((np.random.uniform(0, 1, self.shape) < p).astype(self.dtype))
        return self

    def _fill(self, arr):
        dst = self._var.data
        if dst.on_host:
            dst.copy_from(_singa.CTensor.from_numpy(np.ascontiguousarray(arr)))
        else:
            self._var.set_data(_ctensor_on(_singa.CTensor.from_numpy(arr, copy=True), self.device))

    # ---- ops (recorded while autograd.training is on) ----
    def reshape(self, shape):
        return _autograd().reshape(self, list(shape))

    def transpose(self, axes=None):
        return _autograd().transpose(self, None if axes is None else list(axes))

    @property
    def T(self):
        return self.transpose()

    def flatten(self, axis=1):
        return _autograd().flatten(self, axis)

    def sum(self, axis=None, keepdims=False):
        ag = _autograd()
        axes = None if axis is None else ([axis] if isinstance(axis, int) else list(axis))
        return ag.reduce_sum(self, axes, int(keepdims))

    def mean(self, axis=None, keepdims=False):
        ag = _autograd()
        axes = None if axis is None else ([axis] if isinstance(axis, int) else list(axis))
        return ag.reduce_mean(self, axes, int(keepdims))

    def __add__(self, other):
        return _autograd().add(self, other)

    def __radd__(self, other):
        return _autograd().add(other, self)

    def __sub__(self, other):
        return _autograd().sub(self, other)

    def __rsub__(self, other):
        return _autograd().sub(other, self)

    def __mul__(self, other):
        return _autograd().mul(self, other)

    def __rmul__(self, other):
        return _autograd().mul(other, self)

    def __truediv__(self, other):
        return _autograd().div(self, other)

    def __rtruediv__(self, other):
        return _autograd().div(other, self)

    def __matmul__(self, other):
        return _autograd().matmul(self, other)

    def __rmatmul__(self, other):
        return _autograd().matmul(other, self)

    def __pow__(self, other):
        return _autograd().pow(self, other)

    def __neg__(self):
        return _autograd().apply("Neg", self)

    def _compare(self, op, other):
        ag = _autograd()
        b = ag.apply(op, self, other if isinstance(other, Tensor) else Tensor(data=np.asarray(other, self.dtype)))
        return ag.apply("Cast", b, to=_singa.onnx_dtype(self.dtype))

    # SINGA's comparisons give 0/1 in the tensor's own element type.
    def __lt__(self, other):
        return self._compare("Less", other)

    def __le__(self, other):
        return self._compare("LessOrEqual", other)

    def __gt__(self, other):
        return self._compare("Greater", other)

    def __ge__(self, other):
        return self._compare("GreaterOrEqual", other)

    def __repr__(self):
        flags = (", requires_grad" if self.requires_grad else "") + (", stores_grad" if self.stores_grad else "")
        return "Tensor(shape=%s, dtype=%s, device=%s%s)" % (self.shape, self.dtype, self.device.spec, flags)


class PlaceHolder(Tensor):
    """A Tensor standing for a model input whose values come later (model.compile)."""

    def __init__(self, shape, device=None, dtype=float32, name=None):
        super().__init__(shape=shape, device=device, dtype=dtype, name=name)


# ---- module functions (SINGA's) ----

def from_numpy(np_array, dev=None, requires_grad=False, stores_grad=False):
    """A Tensor of `np_array` on `dev` (sharing a C-contiguous array's memory on the host)."""
    return Tensor(data=np.asarray(np_array), device=dev, requires_grad=requires_grad, stores_grad=stores_grad)


def to_numpy(t):
    """The values of Tensor `t` as numpy (a view sharing memory for host tensors)."""
    if not isinstance(t, Tensor):
        raise _singa.InvalidTypeError("to_numpy: expected a singa.tensor.Tensor, got %s" % type(t).__name__)
    return t.to_numpy()


def from_dlpack(obj, dev=None):
    """A Tensor sharing the memory of `obj` (anything with ``__dlpack__``, e.g. a torch
    tensor or a numpy array, or a DLPack capsule)."""
    t = Tensor(data=_singa.CTensor.from_dlpack(obj))
    return t if dev is None else t.to_device(dev)


def to_host(t):
    """A Tensor with `t`'s values on the host."""
    return Tensor(data=t.data.to_host(), requires_grad=t.requires_grad)


def copy_from_numpy(t, np_array):
    t.copy_from_numpy(np_array)


def zeros(shape, device=None, dtype=float32):
    return Tensor(shape=shape, device=device, dtype=dtype)


def ones(shape, device=None, dtype=float32):
    return Tensor(shape=shape, device=device, dtype=dtype).set_value(1)


def zeros_like(t):
    return Tensor(shape=t.shape, device=t.device, dtype=t.dtype)


def ones_like(t):
    return ones(t.shape, t.device, t.dtype)


def reshape(t, shape):
    return t.reshape(shape)
