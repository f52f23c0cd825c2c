"""singa.opt: optimizers with Apache SINGA's Python API.

    sgd = opt.SGD(lr=0.01, momentum=0.9, weight_decay=1e-5)
    for p, g in autograd.backward(loss):
        sgd.update(p, g)
    sgd.step()
    # or, the same in one call:
    sgd.backward_and_update(loss)

``update(param, grad)`` applies one update to one parameter in place; ``step()``
advances the step counter that learning-rate schedules (``DecayScheduler``)
read. The arithmetic runs in libsinga_core (``singa::optim``), which keeps one
C++ optimizer per parameter so that momentum buffers and Adam's moments live
beside the parameter they belong to.
"""

import math

import numpy as np

from singa import _singa
from singa import autograd
from singa import tensor as _tensor

__all__ = ["DecayScheduler", "Constant", "ExponentialDecay", "Optimizer", "SGD", "Adam", "AdamW", "DistOpt",
           "dist_update"]


class DecayScheduler:
    """A learning rate as a function of the step counter."""

    def __init__(self, init_value):
        self.init_value = float(init_value)

    def __call__(self, step):
        raise NotImplementedError


class Constant(DecayScheduler):
    """The same value at every step."""

    def __call__(self, step):
        return self.init_value


class ExponentialDecay(DecayScheduler):
    """init_value * decay_rate ** (step / decay_steps), the exponent floored when ``staircase``."""

    def __init__(self, init_value, decay_steps, decay_rate, staircase=False):
        super().__init__(init_value)
        if decay_steps <= 0:
            raise ValueError("ExponentialDecay: decay_steps must be positive, got %r" % (decay_steps,))
        self.decay_steps = decay_steps
        self.decay_rate = decay_rate
        self.staircase = staircase

    def __call__(self, step):
        e = step / self.decay_steps
        if self.staircase:
            e = math.floor(e)
        return self.init_value * self.decay_rate ** e


class Optimizer:
    """Base class: per-parameter C++ optimizers made on first ``update``."""

    def __init__(self, lr, dtype=None):
        self.lr = lr if isinstance(lr, DecayScheduler) else Constant(lr)
        self.step_counter = 0
        self._slots = {}  # Variable id -> C++ optimizer over that one parameter

    def _make(self, var):
        raise NotImplementedError

    def current_lr(self):
        """The learning rate at the current step."""
        return float(self.lr(self.step_counter))

    def update(self, param, grad):
        """Updates ``param`` in place with gradient ``grad`` (Tensors of the same shape)."""
        if not isinstance(param, _tensor.Tensor) or not isinstance(grad, _tensor.Tensor):
            raise _singa.InvalidTypeError("update: expected (param, grad) as singa.tensor.Tensor, got (%s, %s)" %
                            (type(param).__name__, type(grad).__name__))
        var = param._var
        if tuple(grad.shape) != tuple(param.shape):
            raise ValueError("update: gradient shape %s does not match parameter %r of shape %s" %
                             (tuple(grad.shape), var.name, tuple(param.shape)))
        c = self._slots.get(var.id)
        if c is None:
            c = self._slots[var.id] = self._make(var)
        c.lr = self.current_lr()
        var.grad = grad.data
        if not var.requires_grad:  # the C++ optimizer skips frozen parameters; SINGA updates what it is given
            var.requires_grad = True
            try:
                c.step()
            finally:
                var.requires_grad = False
        else:
            c.step()

    def step(self):
        """Advances the step counter (once per batch, after the updates)."""
        self.step_counter += 1

    def backward_and_update(self, loss):
        """Back-propagates from ``loss``, updates every parameter it reaches, and steps."""
        for p, g in autograd.backward(loss):
            self.update(p, g)
        self.step()

    __call__ = backward_and_update

    # DistOpt's variants compress what workers exchange. A plain optimizer has
    # one process and nothing to exchange, so each is the plain update.
    def backward_and_update_half(self, loss, *args, **kwargs):
        """As backward_and_update (fp16 exchange of gradients matters only across workers)."""
        self.backward_and_update(loss)

    def backward_and_partial_update(self, loss, *args, **kwargs):
        """As backward_and_update (partial synchronisation matters only across workers)."""
        self.backward_and_update(loss)

    def backward_and_sparse_update(self, loss, *args, **kwargs):
        """As backward_and_update (sparsified exchange matters only across workers)."""
        self.backward_and_update(loss)

    def get_states(self):
        """The step counter and each parameter's optimizer state (numpy arrays),
        keyed by parameter name."""
        states = {"step_counter": self.step_counter}
        for c in self._slots.values():
            for k, t in c.state().items():
                states[k] = np.array(t, copy=True)
        return states

    def set_states(self, states):
        """Restores what get_states returned (for the parameters updated so far)."""
        self.step_counter = int(states.get("step_counter", self.step_counter))
        for c in self._slots.values():
            mine = {k: _singa.CTensor.from_numpy(np.ascontiguousarray(v), copy=True)
                    for k, v in states.items() if k != "step_counter" and any(k.startswith(n + "/") for n, _ in c.params)}
            if mine:
                c.load_state(mine)


def _name(var):
    return var.name or "param_%x" % var.id


class SGD(Optimizer):
    """Stochastic gradient descent with momentum, dampening, Nesterov momentum and
    L2 weight decay, as PyTorch (and SINGA) define them:
    g += wd * p; v = momentum * v + (1 - dampening) * g; p -= lr * v
    (p -= lr * (g + momentum * v) with Nesterov)."""

    def __init__(self, lr=0.1, momentum=0, dampening=0, weight_decay=0, nesterov=False, dtype=None):
        super().__init__(lr, dtype)
        if momentum < 0 or weight_decay < 0:
            raise ValueError("SGD: momentum and weight_decay must be >= 0")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("SGD: Nesterov momentum needs momentum > 0 and dampening 0")
        self.momentum = float(momentum)
        self.dampening = float(dampening)
        self.weight_decay = float(weight_decay)
        self.nesterov = bool(nesterov)

    def _make(self, var):
        return _singa.SGD([(_name(var), var)], self.current_lr(), self.momentum, self.weight_decay,
                          self.nesterov, self.dampening)


class Adam(Optimizer):
    """Adam with bias correction; ``weight_decay`` adds wd * p to the gradient (L2)."""

    def __init__(self, lr=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-8, weight_decay=0, dtype=None):
        super().__init__(lr, dtype)
        self.beta_1, self.beta_2, self.epsilon, self.weight_decay = beta_1, beta_2, epsilon, weight_decay
        self._decoupled = False

    def _make(self, var):
        return _singa.Adam([(_name(var), var)], self.current_lr(), self.beta_1, self.beta_2, self.epsilon,
                           self.weight_decay, self._decoupled)


class AdamW(Adam):
    """Adam with decoupled weight decay (p -= lr * wd * p each step)."""

    def __init__(self, lr=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-8, weight_decay=0.01, dtype=None):
        super().__init__(lr, beta_1, beta_2, epsilon, weight_decay, dtype)
        self._decoupled = True


class DistOpt:
    """SINGA's distributed optimizer: wraps ``opt`` (any singa.opt optimizer) for
    data-parallel training over the ranks that ``mpirun`` (or Slurm's ``srun``)
    started::

        sgd = opt.DistOpt(opt.SGD(lr=0.005, momentum=0.9, weight_decay=1e-5))
        model.set_optimizer(sgd)
        x_mine = x_train[sgd.global_rank::sgd.world_size]   # each rank its own shard
        ...
        sgd.backward_and_update(loss)

    Each ``backward_and_*`` call back-propagates ``loss`` and averages the
    gradients over all ranks (libsinga_core's ``singa::dist::DistOpt``: MPI,
    gradients in buckets whose all-reduce overlaps the rest of backward), then
    lets ``opt`` update each parameter with the averaged gradient. So N ranks
    at batch b train like one process at batch N*b. Without a launcher there is
    one rank and DistOpt is ``opt``.

    The parameters are those the loss depends on, found at the first step (the
    model's parameters need not exist when DistOpt is made); rank 0's values
    are then copied to every rank, so all ranks start alike. When a later loss
    depends on another set of parameters (e.g. a frozen part), they are found
    again. Every rank must call the same steps in the same order; a rank that
    stops answering makes the others fail with an error naming it after
    ``timeout`` seconds.

    ``buffSize`` is SINGA's fusion buffer in float32 elements (the bucket size
    of the all-reduce); ``nccl_id`` is accepted for compatibility (ranks and
    their NCCL communicator come from the launcher); ``local_rank`` and
    ``world_size``, when given, must match the launcher's.
    """

    def __init__(self, opt=None, nccl_id=None, local_rank=None, world_size=None, buffSize=262144, timeout=300.0):
        self.opt = opt if opt is not None else SGD()
        if not isinstance(self.opt, Optimizer):
            raise _singa.InvalidTypeError("DistOpt: expected a singa.opt optimizer to wrap, got %s"
                                          % type(self.opt).__name__)
        if int(buffSize) <= 0:
            raise ValueError("DistOpt: buffSize must be a positive number of float32 elements, got %r" % (buffSize,))
        info = _singa.dist_info()
        for name, want in (("world_size", world_size), ("local_rank", local_rank)):
            if want is not None and int(want) != info[name]:
                raise ValueError("DistOpt: %s=%r, but the launcher (%s) gives %d" %
                                 (name, want, info["launcher"] or "none: a single process", info[name]))
        #: Number of ranks (processes) in the job.
        self.world_size = info["world_size"]
        #: This process's rank in the job, 0 .. world_size - 1.
        self.global_rank = info["rank"]
        #: This process's rank among those on its machine (picks its GPU).
        self.local_rank = info["local_rank"]
        #: "mpi" across processes, "single" for one.
        self.backend = info["backend"]
        self._bucket_bytes = 4 * int(buffSize)
        self._timeout = float(timeout)
        self._impl = None
        self._ids = None

    # ---- the parameters and the C++ DistOpt over them
    def _dist(self, loss):
        if not isinstance(loss, _tensor.Tensor):
            raise _singa.InvalidTypeError("DistOpt: expected the loss as a singa.tensor.Tensor, got %s"
                                          % type(loss).__name__)
        params = []
        for v in _singa.dist_leaves(loss._var):
            t = autograd._known.get(v.id)
            if t is None:
                params.append(_tensor.Tensor._wrap(v))
            elif getattr(t, "stores_grad", True) is not False:  # as autograd.backward skips them
                params.append(t)
        ids = tuple(t._var.id for t in params)
        if ids != self._ids:
            self._impl = None
            named = [("%d:%s" % (i, t._var.name), t._var) for i, t in enumerate(params)]
            self._impl = _singa.DistOptimizer(named, _forward_update(self.opt, params), self._bucket_bytes,
                                              self._timeout)
            self._impl.broadcast_state(0)
            self._ids = ids
        return self._impl

    # ---- SINGA's updates (train_one_batch's dist_option)
    def backward_and_update(self, loss, threshold=None, weight=1.0):
        """'fp32': back-propagates ``loss``, averages the float32 gradients over
        the ranks and updates. ``weight`` scales this rank's gradient first
        (world_size * local_examples / global_examples when ranks hold
        different numbers of examples). ``threshold`` (SINGA's small-tensor
        fusion size) is accepted and unused: buckets take care of it."""
        self._dist(loss).backward_and_update(loss._var, float(weight))
        self.opt.step()

    __call__ = backward_and_update

    def backward_and_update_half(self, loss, threshold=None, clipping=False, clip_Value=100, weight=1.0):
        """'fp16': as backward_and_update, but the gradients travel and are summed
        in half precision; with ``clipping`` each value is first clipped to
        +-``clip_Value``."""
        self._dist(loss).backward_and_update_half(loss._var, bool(clipping), float(clip_Value), float(weight))
        self.opt.step()

    def backward_and_partial_update(self, loss, threshold=None):
        """'partialUpdate': every rank updates with its own gradient, then one
        bucket of parameters (the next in turn each call) is averaged over the
        ranks. Call ``average_parameters`` before evaluating or saving, so that
        all ranks hold the same model."""
        self._dist(loss).backward_and_partial_update(loss._var)
        self.opt.step()

    def backward_and_sparse_update(self, loss, threshold=None, spars=0.05, topK=False, corr=True, weight=1.0):
        """'sparseTopK' (``topK=True``: each rank sends its largest ``spars``
        share of gradient values) or 'sparseThreshold' (``topK=False``: the
        values with |g| >= ``spars``), as (index, value) pairs; the averaged
        sparse gradient updates every rank. With ``corr`` the values not sent
        are added to the next step's gradient."""
        spars = 0.05 if spars is None else float(spars)
        self._dist(loss).backward_and_sparse_update(loss._var, bool(topK), spars, bool(corr), float(weight))
        self.opt.step()

    # ---- helpers
    def update(self, param, grad):
        """The wrapped optimizer's update of one parameter (no communication)."""
        self.opt.update(param, grad)

    def step(self):
        self.opt.step()

    def all_reduce(self, tensor):
        """Sums ``tensor`` (a host singa Tensor of float32/float64/int64, or a
        numpy array) over all ranks, in place, e.g. to total accuracy counts."""
        if isinstance(tensor, _tensor.Tensor):
            arr = _tensor.to_numpy(tensor)
            arr = np.array(arr, copy=True, order="C")
            _singa.dist_allreduce(arr, "DistOpt.all_reduce")
            tensor.copy_from_numpy(arr)
            return tensor
        if not isinstance(tensor, np.ndarray):
            raise _singa.InvalidTypeError("DistOpt.all_reduce: expected a singa Tensor or numpy array, got %s"
                                          % type(tensor).__name__)
        _singa.dist_allreduce(tensor, "DistOpt.all_reduce")
        return tensor

    def wait(self):
        """SINGA's wait for all_reduce; all_reduce here returns when done."""

    def average_parameters(self):
        """Averages every parameter over the ranks (after partial updates)."""
        if self._impl is not None:
            self._impl.average_parameters()

    def last_step(self):
        """Counters of the last step (buckets, started_during_backward, bytes_sent,
        wait_seconds), or {} before the first."""
        return self._impl.last_step() if self._impl is not None else {}

    def get_states(self):
        return self.opt.get_states()

    def set_states(self, states):
        self.opt.set_states(states)

    def __getattr__(self, name):
        # lr, step_counter, current_lr ... of the wrapped optimizer.
        if name.startswith("_") or name == "opt":
            raise AttributeError(name)
        return getattr(self.opt, name)


def _forward_update(optimizer, params):
    """What the C++ DistOpt calls to update parameter i with its averaged
    gradient. It holds no reference to the DistOpt, so no cycle goes through C++."""
    def apply(i):
        p = params[i]
        optimizer.update(p, _tensor.Tensor._wrap(_singa.Variable(p._var.grad)))
    return apply


def dist_update(optimizer, loss, dist_option="fp32", spars=None):
    """Applies ``optimizer`` to ``loss`` as train_one_batch's ``dist_option``
    says: 'fp32' (backward_and_update), 'fp16' (backward_and_update_half),
    'partialUpdate' (backward_and_partial_update), 'sparseTopK' and
    'sparseThreshold' (backward_and_sparse_update with topK True / False and
    ``spars``). A plain optimizer treats every option as 'fp32'."""
    if dist_option == "fp32":
        optimizer.backward_and_update(loss)
    elif dist_option == "fp16":
        optimizer.backward_and_update_half(loss)
    elif dist_option == "partialUpdate":
        optimizer.backward_and_partial_update(loss)
    elif dist_option == "sparseTopK":
        optimizer.backward_and_sparse_update(loss, topK=True, spars=spars)
    elif dist_option == "sparseThreshold":
        optimizer.backward_and_sparse_update(loss, topK=False, spars=spars)
    else:
        raise ValueError("dist_option must be 'fp32', 'fp16', 'partialUpdate', 'sparseTopK' or 'sparseThreshold', "
                         "got %r" % (dist_option,))
