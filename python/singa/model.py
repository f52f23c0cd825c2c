"""singa.model: Apache SINGA's ``Model`` base class.

Subclass it, create layers in ``__init__``, define ``forward`` and
``train_one_batch``, then::

    model = MyModel()
    model.set_optimizer(opt.SGD(lr=0.01))
    model.compile([placeholder], is_train=True, use_graph=False, sequential=False)
    out, loss = model(x, y)      # training mode: calls train_one_batch
    model.eval()
    out = model(x)               # evaluation mode: calls forward

``compile`` runs ``forward`` once on the given inputs (e.g.
``tensor.PlaceHolder``s) so that layers whose sizes come from their input
create their parameters. ``use_graph`` and ``sequential`` are accepted for
SINGA compatibility: singa always executes eagerly (each op runs at once), so
buffering the operations into a graph brings nothing here and both flags only
take effect as recorded attributes.
"""

import os
import numpy as np

from singa import _singa
from singa import autograd
from singa import layer
from singa import tensor as _tensor

__all__ = ["Model"]


class Model(layer.Layer):
    """Base class of user models (a Layer with training / evaluation modes)."""

    def __init__(self):
        super().__init__()
        self.training = True
        self.graph_mode = False
        self.sequential = False
        self.optimizer = None
        self._compiled = False

    def compile(self, inputs, is_train=True, use_graph=False, sequential=False):
        """Creates the parameters by running ``forward`` once on ``inputs`` (a list
        of Tensors, typically PlaceHolders with the batch shape), without
        recording, then enters training (``is_train``) or evaluation mode."""
        if not isinstance(inputs, (list, tuple)) or not all(isinstance(x, _tensor.Tensor) for x in inputs):
            raise _singa.InvalidTypeError("Model.compile: inputs must be a list of singa.tensor.Tensor")
        self.graph_mode = bool(use_graph)
        self.sequential = bool(sequential)
        was = autograd.training
        autograd.training = False
        try:
            self.forward(*inputs)
        finally:
            autograd.training = was
        self._initialized = True
        self._compiled = True
        self.train(is_train)

    def set_optimizer(self, optimizer):
        """The optimizer train_one_batch uses (``self.optimizer``)."""
        self.optimizer = optimizer

    def train(self, mode=True):
        """Training mode (ops recorded, batch statistics, dropout) or evaluation;
        sets ``autograd.training`` as SINGA does."""
        super().train(mode)
        autograd.training = bool(mode)

    def eval(self):
        self.train(False)

    def graph(self, mode=True, sequential=False):
        """Records the use_graph / sequential choice (execution stays eager)."""
        self.graph_mode = bool(mode)
        self.sequential = bool(sequential)

    def forward(self, *inputs):
        raise NotImplementedError("%s.forward is not defined" % type(self).__name__)

    def train_one_batch(self, *inputs, **kwargs):
        """One training step on a batch; subclasses define it (forward, loss,
        ``self.optimizer.backward_and_update(loss)``) and return (out, loss)."""
        raise NotImplementedError("%s.train_one_batch is not defined" % type(self).__name__)

    def __call__(self, *inputs, **kwargs):
        if self.training:
            return self.train_one_batch(*inputs, **kwargs)
        return self.forward(*inputs, **kwargs)

    def save_states(self, fpath, aux_states=None):
        """Writes the parameters and states, and ``aux_states`` (a dict of arrays
        or Tensors), to ``fpath`` (numpy's .npz format, no pickling)."""
        arrays = {"s:" + k: np.array(_tensor.to_numpy(v)) for k, v in self.get_states().items()}
        for k, v in (aux_states or {}).items():
            arrays["a:" + k] = np.array(_tensor.to_numpy(v) if isinstance(v, _tensor.Tensor) else v)
        with open(fpath, "wb") as f:
            np.savez(f, **arrays)

    def load_states(self, fpath):
        """Reads what save_states wrote into the model; returns the aux states."""
        if not os.path.isfile(fpath):
            raise FileNotFoundError("load_states: no file %r" % (fpath,))
        with np.load(fpath, allow_pickle=False) as z:
            states = {k[2:]: z[k] for k in z.files if k.startswith("s:")}
            aux = {k[2:]: z[k] for k in z.files if k.startswith("a:")}
        self.set_states(states)
        return aux
