"""The training half of singa.sonnx: ``to_onnx`` and ``SONNXModel``.

``singa.sonnx`` re-exports both; import them from there::

    from singa import sonnx
    onnx_model = sonnx.to_onnx([x], [y])

    class MyModel(sonnx.SONNXModel):
        def forward(self, *x):
            return super().forward(*x)[0]
"""

import numpy as np
import onnx

from singa import _singa
from singa import autograd
from singa import layer
from singa import model
from singa import opt as _opt
from singa import tensor as _tensor

__all__ = ["to_onnx", "SONNXModel"]


def _vars(ts, what):
    if not isinstance(ts, (list, tuple)):
        ts = [ts]
    out = []
    for t in ts:
        if not isinstance(t, _tensor.Tensor):
            raise _singa.InvalidTypeError("to_onnx: %s must be singa.tensor.Tensor, got %s" % (what, type(t).__name__))
        out.append(t._var)
    return out


def to_onnx(inputs, outputs, model_name="singa", opset=17, input_names=None, output_names=None, params=None,
            dynamic_batch=True):
    """Writes the computation recorded between ``inputs`` and ``outputs`` (lists
    of Tensors) as an ``onnx.ModelProto`` (SINGA's SingaFrontend).

    The ops must have been run while ``autograd.training`` was True. Tensors the
    outputs depend on that are not inputs (the weights) become initializers,
    named after ``params`` ({name: Tensor}, e.g. ``model.get_params()``) when
    given. Dimension 0 of the inputs is written as the symbolic "batch" when
    ``dynamic_batch``. ``opset`` (13 to 17) is that of the default domain.
    The result passes ``onnx.checker``.
    """
    ins, outs = _vars(inputs, "inputs"), _vars(outputs, "outputs")
    in_ids = {v.id for v in ins}
    for i, v in enumerate(outs):
        if v.is_leaf and v.id not in in_ids:
            raise ValueError("to_onnx: output %d was not computed by recorded ops "
                             "(set autograd.training = True before the forward pass)" % i)
    named = []
    if params:
        named = [(k, v._var) for k, v in params.items() if isinstance(v, _tensor.Tensor)]
    data = _singa.to_onnx(ins, outs, int(opset), list(input_names or []),
                          list(output_names or []), named, bool(dynamic_batch), str(model_name))
    return onnx.load_from_string(data)


singa_to_onnx_model = to_onnx


def _model_bytes(onnx_model):
    if isinstance(onnx_model, onnx.ModelProto):
        return onnx_model.SerializeToString()
    if isinstance(onnx_model, (bytes, bytearray)):
        return bytes(onnx_model)
    if isinstance(onnx_model, str):
        return onnx.load(onnx_model).SerializeToString()
    raise _singa.InvalidTypeError("SONNXModel: expected an onnx.ModelProto, its bytes or a file path, got %s" %
                    type(onnx_model).__name__)


class SONNXModel(model.Model):
    """An imported ONNX model as a SINGA ``Model``: inference, re-training and
    transfer learning.

    Its nodes run one by one on the autograd tape, and its floating-point
    initializers become trainable parameters (``get_params()``, named as in the
    model), so ``train_one_batch`` can back-propagate into them. Subclass it,
    define ``forward`` (calling ``super().forward(*x)``, which returns the list
    of outputs) and ``train_one_batch``, then ``compile``.

    ``forward(*x, last_layers=-k)`` returns the outputs of the k-th node from
    the end: -1 (the default) runs the whole model, -2 stops before the last
    node, -3 before the last two, so that layers appended in the subclass
    replace the model's head (transfer learning). (This is the counting of
    SINGA 3.2's SONNXModel; ``SingaRep.run(last_layers=-k)`` of the older
    guide instead leaves out k nodes.)
    """

    def __init__(self, onnx_model, device=None):
        super().__init__()
        # The tape runs its ops on the host; `device` is accepted for SINGA's signature.
        # Prepared as written (no graph optimisation: fused nodes have no gradients).
        rep = _singa.prepare(_model_bytes(onnx_model), optimize=False)
        self._imported = _singa.ImportedModel(rep, 0)
        self._params = {}
        for n, v in self._imported.parameters():
            t = _tensor.Tensor._wrap(v)
            t.requires_grad = True
            t.stores_grad = True
            self._params[n] = autograd._remember(t)
        self._buffers = {}
        for n, v in self._imported.buffers():
            t = _tensor.Tensor._wrap(v)
            self._buffers[n] = autograd._remember(t)

    def forward(self, *x, last_layers=-1, aux_output=()):
        """Runs the model on inputs ``x`` (Tensors, one per graph input) and
        returns the list of its outputs (see the class for ``last_layers``)."""
        if aux_output:
            raise ValueError("SONNXModel.forward: aux_output is not supported; use last_layers")
        if not isinstance(last_layers, int) or last_layers > -1:
            raise ValueError("SONNXModel.forward: last_layers must be a negative int (-1 = the whole model), "
                             "got %r" % (last_layers,))
        for t in x:
            if not isinstance(t, _tensor.Tensor):
                raise _singa.InvalidTypeError("SONNXModel.forward: inputs must be singa.tensor.Tensor, got %s"
                                              % type(t).__name__)
        self._imported.set_last_layers(last_layers + 1)
        if self._imported.training != autograd.training:
            self._imported.train(autograd.training)
        xs = [t._var for t in x]
        if autograd.training:
            outs = self._imported.forward_all(xs)
        else:
            with _singa.NoGrad():
                outs = self._imported.forward_all(xs)
        return [autograd._wrap(o) for o in outs]

    def train_one_batch(self, x, y, dist_option="fp32", spars=None):
        """A default step: softmax cross-entropy of ``forward(x)`` against ``y``,
        back-propagated and applied by ``self.optimizer`` as ``dist_option``
        says ('fp32', 'fp16', 'partialUpdate', 'sparseTopK', 'sparseThreshold';
        see ``opt.dist_update``). Returns (out, loss)."""
        if self.optimizer is None:
            raise RuntimeError("SONNXModel.train_one_batch: call set_optimizer first")
        out = self.forward(x)
        if isinstance(out, (list, tuple)):
            out = out[0]
        loss = autograd.softmax_cross_entropy(out, y)
        _opt.dist_update(self.optimizer, loss, dist_option, spars)
        return out, loss

    def train(self, mode=True):
        super().train(mode)
        self._imported.train(bool(mode))

    def to(self, dtype):
        """Converts the parameters and buffers to ``dtype`` (``tensor.float32`` /
        ``tensor.float64``, a numpy float type or an ONNX code), like PyTorch's
        ``model.double()``; the graph then computes in that type, so inputs must
        be of it too. Returns self. Call it before making the optimizer."""
        code = dtype
        if not isinstance(dtype, int):
            code = _singa.onnx_dtype(np.dtype(dtype))
        self._imported.to(int(code))
        return self

    def _own_params(self):
        return dict(self._params)

    def _own_buffers(self):
        return dict(self._buffers)
