"""singa.sonnx: run ONNX models with singa (SINGA's ``sonnx`` API).

    import onnx
    from singa import device, sonnx, tensor
    rep = sonnx.prepare(onnx.load("model.onnx"), device=device.get_default_device())
    y = rep.run([tensor.Tensor(data=x)])[0]

``SingaBackend`` is an ``onnx.backend.base.Backend`` (ONNX's backend test
runner drives it); ``prepare``, ``run_model``, ``run_node`` and
``supports_device`` are its methods as module functions. A ``SingaRep``
runs numpy arrays (returning numpy arrays that share the outputs' memory) or
singa Tensors (returning Tensors).

Training: ``rep.tensor_map`` holds the model's float initializers as Tensors
(``requires_grad`` off until you turn it on). Once it has been read, ``run``
executes the graph node by node on the autograd tape with those tensors, so
``autograd.backward`` reaches them and updated values take effect in the next
run. Before that, and for ``all_outputs=True``, runs go through the prepared
(optimized) executor.
"""
import collections
import os

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep

from singa import _singa
from singa import device as _device
from singa import tensor as _tensor

__all__ = ["SingaBackend", "SingaRep", "prepare", "run_model", "run_node", "supports_device", "SONNXModel",
           "to_onnx"]


def _device_spec(device):
    """PrepareOptions.device for a singa Device, 'CPU' / 'CUDA' / 'CUDA:1' (ONNX's spelling) or None."""
    if device is None:
        return "cpu", _device.get_default_device()
    if isinstance(device, _device.Device):
        return device.spec, device
    if isinstance(device, str):
        kind, _, num = device.partition(":")
        kind = kind.strip().lower()
        idx = int(num) if num else 0
        if kind == "cpu":
            return "cpu", _device.get_default_device()
        if kind == "cuda":
            return "cuda:%d" % idx, _device.create_cuda_gpu(idx)
        if kind == "opencl":
            return "opencl:%d" % idx, _device.create_opencl_device(idx)
        raise _singa.InvalidArgumentError("sonnx: unknown device %r (use 'CPU', 'CUDA[:id]' or a singa Device)" % device)
    raise _singa.InvalidTypeError("sonnx: device must be a singa.device.Device or a string, got %s"
                                  % type(device).__name__)


def _model_bytes(model):
    """(serialized model, source name, base dir for external data) of a ModelProto, path or bytes."""
    if isinstance(model, onnx.ModelProto):
        return model.SerializeToString(), "<model>", ""
    if isinstance(model, (bytes, bytearray)):
        return bytes(model), "<bytes>", ""
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise _singa.NotFoundError("sonnx.prepare: cannot read %s: %s" % (path, e.strerror))
        return data, path, os.path.dirname(os.path.abspath(path))
    raise _singa.InvalidTypeError("sonnx.prepare: expected an onnx.ModelProto, a file path or bytes, got %s"
                                  % type(model).__name__)


class SingaRep(BackendRep):
    """A prepared model (SINGA's SingaRep): ``run(inputs, last_layers=0, all_outputs=False)``.

    ``tensor_map`` maps initializer names to trainable Tensors (see the module docs).
    """

    def __init__(self, crep, model_bytes, source, base_dir, device, spec, options):
        self._rep = crep
        self._bytes = model_bytes
        self._source = source
        self._base_dir = base_dir
        self._device = device
        self._spec = spec
        self._options = options
        self._imported = None
        self._tensor_map = None
        self._originals = None

    @property
    def device(self):
        return self._device

    @property
    def inputs(self):
        """The model's inputs: dicts of name, kind, dtype (ONNX code), shape (None if unknown), dim_names."""
        return self._rep.inputs

    @property
    def outputs(self):
        return self._rep.outputs

    def nodes(self):
        """The model's nodes in the order last_layers counts (dicts: name, op_type, domain, outputs)."""
        return self._rep.nodes()

    @property
    def crep(self):
        """The bound _singa.Rep."""
        return self._rep

    # ---- training support ----
    def _ensure_imported(self):
        if self._imported is None:
            opts = dict(self._options)
            opts["optimize"] = False  # the graph as written: backward rules need the model's own ops
            train_rep = _singa.prepare(self._bytes, device=self._spec, source=self._source, base_dir=self._base_dir,
                                       **opts)
            imported = _singa.ImportedModel(train_rep, 0)
            imported.set_trainable(False)  # SINGA: frozen until the user sets requires_grad
            tm = collections.OrderedDict()
            remember = _remember_fn()
            for name, var in imported.parameters():
                t = _tensor.Tensor._wrap(var)
                tm[name] = remember(t) if remember else t
            self._imported = imported
            self._tensor_map = tm
            self._originals = dict(tm)
        return self._imported

    @property
    def tensor_map(self):
        """Initializer name -> Tensor (the model's float weights), for re-training.

        Set ``requires_grad`` / ``stores_grad`` on them to train; assigning a new
        Tensor to a name copies its values into the model.
        """
        self._ensure_imported()
        return self._tensor_map

    def _sync_tensor_map(self):
        for name, t in self._tensor_map.items():
            orig = self._originals.get(name)
            if orig is not None and t is not orig:
                if tuple(t.shape) != tuple(orig.shape):
                    raise _singa.InvalidArgumentError(
                        "tensor_map['%s']: shape %s, the model's initializer is %s" % (name, t.shape, orig.shape))
                orig._var.set_data(t.data)

    # ---- running ----
    def run(self, inputs, last_layers=0, all_outputs=False, **kwargs):
        """Runs the model on `inputs` (a list by position, or a dict by name; numpy
        arrays or singa Tensors; a list for a sequence input, None for an empty optional).

        last_layers: <= 0 stops that many nodes before the end; the outputs are
            then those of the last node run (SINGA's transfer-learning cut).
        all_outputs: return an OrderedDict of every value by name instead.
        Returns a list of outputs: Tensors when any input is a Tensor, else numpy
        arrays viewing singa's output memory (numpy inputs are shared, not copied).
        Raises singa.InvalidArgumentError (a ValueError) naming the input, what the
        model expects and what was given for a wrong count, shape or dtype.
        """
        if isinstance(inputs, dict):
            seq = list(inputs.values())
        elif isinstance(inputs, (list, tuple)):
            seq = list(inputs)
        else:
            seq = [inputs]
        # One pass over the inputs: note whether any is a Tensor (the outputs are
        # Tensors then) and unwrap them; this path is timed by bench/python_overhead.py.
        as_tensor = False
        cin = []
        for v in seq:
            if type(v) is np.ndarray:
                cin.append(v)
            else:
                as_tensor = as_tensor or isinstance(v, _tensor.Tensor)
                cin.append(_raw(v))
        if last_layers:
            last_layers = int(last_layers)
            if last_layers > 0:
                raise _singa.InvalidArgumentError("run: last_layers must be <= 0 (nodes cut from the end), got %d"
                                                  % last_layers)
        else:
            last_layers = 0
        if self._imported is not None and not all_outputs:
            return self._run_on_tape(inputs, seq, last_layers)
        if isinstance(inputs, dict):
            cin = dict(zip(inputs.keys(), cin))
        if not as_tensor:
            out = self._rep.run(cin, last_layers, "", bool(all_outputs), True)
            if all_outputs:
                return collections.OrderedDict((name, _to_numpy_out(v)) for name, v in out)
            return [_to_numpy_out(v) for _, v in out]
        out = self._rep.run(cin, last_layers, "", bool(all_outputs))
        if all_outputs:
            return collections.OrderedDict((name, _to_tensor_out(v, self._device)) for name, v in out)
        return [_to_tensor_out(v, self._device) for _, v in out]

    def _run_on_tape(self, inputs, seq, last_layers):
        from singa import autograd
        imported = self._imported
        self._sync_tensor_map()
        if isinstance(inputs, dict):
            names = [i["name"] for i in self._rep.inputs]
            missing = [n for n in names if n not in inputs]
            if missing:
                raise _singa.InvalidArgumentError("run: input '%s' was not given" % missing[0])
            seq = [inputs[n] for n in names]
        xs = [x if isinstance(x, _tensor.Tensor) else _tensor.Tensor(data=np.asarray(x), device=self._device)
              for x in seq]
        imported.set_last_layers(last_layers)
        imported.train(bool(autograd.training))
        vars_in = [x._var for x in xs]
        if autograd.training:
            outs = imported.forward_all(vars_in)
        else:
            with _singa.NoGrad():
                outs = imported.forward_all(vars_in)
        wrap = getattr(autograd, "_wrap", _tensor.Tensor._wrap)
        result = [wrap(v) for v in outs]
        if any(isinstance(x, _tensor.Tensor) for x in seq):
            return result
        return [t.to_numpy() for t in result]


def _remember_fn():
    try:
        from singa import autograd
    except ImportError:
        return None
    return getattr(autograd, "_remember", None)


def _raw(x):
    """What _singa.Rep.run takes: CTensor, numpy array, list (sequence) or None."""
    if isinstance(x, _tensor.Tensor):
        return x.data
    if isinstance(x, (list, tuple)):
        return [_raw(e) for e in x]
    if x is None or isinstance(x, (_singa.CTensor, np.ndarray)):
        return x
    return np.asarray(x)


def _to_numpy_out(v):
    """A run's output as numpy: arrays pass through (the C++ side made them), CTensors are viewed."""
    if v is None or type(v) is np.ndarray:
        return v
    if isinstance(v, list):
        return [_to_numpy_out(e) for e in v]
    if isinstance(v, tuple):  # a map: (keys, values)
        keys, values = v[0].numpy(), v[1].numpy()
        return dict(zip(keys.tolist(), list(values)))
    return v.numpy()


def _to_tensor_out(v, device):
    if v is None:
        return None
    if isinstance(v, list):
        return [_to_tensor_out(e, device) for e in v]
    if isinstance(v, tuple):
        return _to_numpy_out(v)
    return _tensor.Tensor(data=v, device=device)


class SingaBackend(Backend):
    """singa as an ONNX backend (``onnx.backend.base.Backend``)."""

    @classmethod
    def prepare(cls, model, device="CPU", **kwargs):
        """Checks and prepares `model` (ModelProto, path or bytes) for `device`.

        Keyword options (PrepareOptions): fallback=True (CPU kernels where the
        device has none), optimize=True (graph passes), check_model=True,
        threads=0 (one per core), dims={} (values of symbolic dimensions).
        Returns a SingaRep.
        """
        spec, dev = _device_spec(device)
        data, source, base_dir = _model_bytes(model)
        options = {k: kwargs[k] for k in ("fallback", "optimize", "check_model", "threads", "dims") if k in kwargs}
        crep = _singa.prepare(data, device=spec, source=source, base_dir=base_dir, **options)
        return SingaRep(crep, data, source, base_dir, dev, spec, options)

    @classmethod
    def run_model(cls, model, inputs, device="CPU", **kwargs):
        """prepare(model, device).run(inputs)."""
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node, inputs, device="CPU", outputs_info=None, **kwargs):
        """Runs one NodeProto on numpy `inputs` (by position, matching node.input).

        `outputs_info`: optional [(numpy dtype, shape)] per output; `opset_version`
        (kwarg) picks the default domain's opset (the newest onnx knows otherwise).
        """
        opset = kwargs.pop("opset_version", None) or onnx.defs.onnx_opset_version()
        if isinstance(inputs, dict):
            inputs = [inputs[n] for n in node.input if n]
        inputs = list(inputs)
        names = [n for n in node.input if n]
        if len(names) != len(inputs):
            raise _singa.InvalidArgumentError("run_node: %s takes %d inputs, got %d" % (node.op_type, len(names),
                                                                                    len(inputs)))
        graph_inputs = []
        for name, x in zip(names, inputs):
            a = np.asarray(x)
            graph_inputs.append(onnx.helper.make_tensor_value_info(
                name, _singa.onnx_dtype(a.dtype),
                list(a.shape)))
        graph_outputs = []
        for i, name in enumerate(n for n in node.output if n):
            if outputs_info and i < len(outputs_info):
                dt, shape = outputs_info[i]
                graph_outputs.append(onnx.helper.make_tensor_value_info(
                    name, _singa.onnx_dtype(np.dtype(dt)), shape))
            else:
                graph_outputs.append(onnx.helper.make_empty_tensor_value_info(name))
        graph = onnx.helper.make_graph([node], "run_node_" + node.op_type, graph_inputs, graph_outputs)
        opsets = [onnx.helper.make_opsetid("", opset)]
        if node.domain not in ("", "ai.onnx"):
            opsets.append(onnx.helper.make_opsetid(node.domain, 1))
        model = onnx.helper.make_model(graph, opset_imports=opsets)
        kwargs.setdefault("check_model", False)  # untyped outputs are fine here
        return cls.prepare(model, device, **kwargs).run([np.asarray(x) for x in inputs])

    @classmethod
    def supports_device(cls, device):
        """Whether `device` ('CPU', 'CUDA', 'OPENCL') is usable in this process."""
        kind = str(device).partition(":")[0].strip().lower()
        if kind == "cpu":
            return True
        if kind == "cuda":
            return _device.get_num_gpus() > 0
        if kind == "opencl":
            return _device.get_num_opencl_platforms() > 0
        return False


def prepare(model, device=None, **kwargs):
    """Prepares an ONNX model for running with singa; returns a SingaRep.

    Args:
        model: an ``onnx.ModelProto``, the path of a ``.onnx`` file (external
            data is read from beside it) or the serialized bytes.
        device: a singa ``Device`` (``device.get_default_device()``,
            ``device.create_cuda_gpu()``, ...) or ``"CPU"`` / ``"CUDA[:id]"``;
            the host CPU when None.
        **kwargs: prepare options:
            ``fallback=True`` (CPU kernels for nodes the device has none for),
            ``optimize=True`` (graph passes such as fusions),
            ``check_model=True`` (run onnx's checker rules first),
            ``threads=0`` (intra-op threads; 0 is one per core),
            ``dims={"batch": 8}`` (values of symbolic input dimensions).

    Returns:
        A ``SingaRep``: ``rep.run(inputs, last_layers=0, all_outputs=False)``
        runs it (numpy in, numpy out, sharing memory; or Tensors in, Tensors
        out), ``rep.tensor_map`` holds the initializers for re-training. One
        rep may be run from several threads; runs release the GIL.

    Raises:
        singa.InvalidArgumentError (a ValueError): malformed or invalid model,
            bad option value.
        singa.NotFoundError (a LookupError): the file does not exist.
        singa.UnimplementedError (a NotImplementedError): an operator or type
            singa has no kernel for on this device.
        singa.UnavailableError (a RuntimeError): the device is missing.
        TypeError: ``model`` or ``device`` of the wrong kind.

    Example::

        import numpy as np, onnx
        from singa import device, sonnx
        rep = sonnx.prepare(onnx.load("mnist.onnx"), device=device.get_default_device())
        x = np.zeros((1, 1, 28, 28), np.float32)
        y = rep.run([x])[0]                       # numpy in, numpy out
        feats = rep.run([x], last_layers=-1)[0]   # stop one node before the end
    """
    return SingaBackend.prepare(model, device if device is not None else "CPU", **kwargs)


def run_model(model, inputs, device=None, **kwargs):
    """prepare(model, device).run(inputs)."""
    return SingaBackend.run_model(model, inputs, device if device is not None else "CPU", **kwargs)


def run_node(node, inputs, device=None, outputs_info=None, **kwargs):
    """Runs one NodeProto on numpy inputs (see SingaBackend.run_node)."""
    return SingaBackend.run_node(node, inputs, device if device is not None else "CPU", outputs_info, **kwargs)


def supports_device(device):
    """Whether singa can run on `device` ('CPU', 'CUDA', 'OPENCL') here."""
    return SingaBackend.supports_device(device)


from singa._sonnx_model import SONNXModel, to_onnx  # noqa: E402,F401  (PY2's half)
