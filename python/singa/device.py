"""singa.device: where tensors live and ops run.

``get_default_device()`` / ``create_cpu_device()`` give the host CPU;
``create_cuda_gpu(id)`` and ``create_opencl_device(id)`` give a GPU and raise
:class:`singa.UnavailableError` (a ``RuntimeError``) with the reason when that
device is missing (plugin not built, no driver, no such id).
"""
from singa import _singa

__all__ = ["Device", "get_default_device", "create_cpu_device", "create_cuda_gpu", "create_cuda_gpu_on",
           "create_opencl_device", "get_num_gpus", "get_num_opencl_platforms", "available_devices"]


class Device:
    """One device of the runtime (a plugin's device type and an id).

    ``spec`` is the string singa's C++ API takes (``"cpu"``, ``"cuda:0"``).
    """

    def __init__(self, cdevice, device_id=0):
        self._dev = cdevice
        self._id = int(device_id)
        self._graph = False

    @property
    def name(self):
        """The device type's name: 'cpu', 'cuda', 'opencl', ..."""
        return self._dev.name

    @property
    def id(self):
        return self._id

    @property
    def spec(self):
        """'cpu' for the host, '<name>:<id>' otherwise (PrepareOptions.device)."""
        return "cpu" if self.name == "cpu" else "%s:%d" % (self.name, self._id)

    @property
    def cdevice(self):
        """The bound _singa.Device (None-free: the host CPU is a device too)."""
        return self._dev

    @property
    def host(self):
        """Whether tensors on this device are plain host memory."""
        return self.name == "cpu"

    def _alloc_device(self):
        """The _singa.Device for CTensor allocation: None means host memory."""
        return None if self.host else self._dev

    def lang(self):
        """SINGA's name for the device kind: 'kCpp', 'kCuda' or 'kOpencl'."""
        return {"cpu": "kCpp", "cuda": "kCuda", "opencl": "kOpencl"}.get(self.name, self.name)

    def Sync(self):
        """Waits for the device's queued work."""
        self._dev.synchronize(self._id)

    sync = Sync

    def SetRandSeed(self, seed):
        """Seeds the generator that initialises new layers' weights."""
        seed_fn = getattr(_singa, "manual_seed", None)
        if seed_fn is not None:
            seed_fn(int(seed))

    set_rand_seed = SetRandSeed

    def EnableGraph(self, enable=True):
        """SINGA's graph buffering switch; singa runs eagerly and records the tape either way."""
        self._graph = bool(enable)

    def graph_enabled(self):
        return self._graph

    @property
    def num_threads(self):
        return self._dev.num_threads

    @num_threads.setter
    def num_threads(self, n):
        self._dev.num_threads = int(n)

    def __eq__(self, other):
        return isinstance(other, Device) and other.name == self.name and other.id == self.id

    def __hash__(self):
        return hash((self.name, self._id))

    def __repr__(self):
        return "Device('%s')" % self.spec


_default = None


def _find(name, device_id, what):
    dev = _singa.get_device(name)
    if dev is None:
        raise _singa.UnavailableError(
            "%s: no '%s' device is registered (its plugin was not built or failed to load; "
            "singa.plugins() lists why)" % (what, name))
    count, reason = dev.count()
    if count == 0:
        raise _singa.UnavailableError("%s: no %s device is usable: %s" % (what, name, reason or "none found"))
    if device_id < 0 or device_id >= count:
        raise _singa.UnavailableError("%s: %s device %d does not exist (%d found)" % (what, name, device_id, count))
    return Device(dev, device_id)


def create_cpu_device():
    """The host CPU."""
    dev = _singa.get_device("cpu")
    if dev is None:
        raise _singa.UnavailableError("create_cpu_device: the cpu plugin is not loaded; singa.plugins() lists why")
    return Device(dev, 0)


def get_default_device():
    """The default device: the host CPU (one object per process)."""
    global _default
    if _default is None:
        _default = create_cpu_device()
    return _default


def create_cuda_gpu(id=0):  # noqa: A002  (SINGA's argument name)
    """CUDA GPU number `id`; raises singa.UnavailableError (a RuntimeError) when missing."""
    return _find("cuda", int(id), "create_cuda_gpu")


def create_cuda_gpu_on(device_id):
    """CUDA GPU number `device_id` (SINGA's spelling)."""
    return create_cuda_gpu(device_id)


def create_opencl_device(id=0):  # noqa: A002
    """OpenCL device number `id`; raises singa.UnavailableError (a RuntimeError) when missing."""
    return _find("opencl", int(id), "create_opencl_device")


def get_num_gpus():
    """How many CUDA GPUs are usable (0 without the plugin or a driver)."""
    dev = _singa.get_device("cuda")
    return dev.count()[0] if dev is not None else 0


def get_num_opencl_platforms():
    dev = _singa.get_device("opencl")
    return dev.count()[0] if dev is not None else 0


def available_devices():
    """Names of the registered device types."""
    return [d.name for d in _singa.devices()]
