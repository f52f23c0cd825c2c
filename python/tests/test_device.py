"""singa.device: the CPU is always there; missing GPUs give clear RuntimeErrors."""
import pytest

import singa
from singa import device


def test_default_device_is_cpu():
    d = device.get_default_device()
    assert d.name == "cpu" and d.spec == "cpu" and d.lang() == "kCpp"
    assert d is device.get_default_device()
    assert device.create_cpu_device() == d
    assert "cpu" in device.available_devices()


def test_plugins_are_loaded():
    loaded = [p for p in singa.plugins() if p["loaded"]]
    assert any("cpu" in p["devices"] for p in loaded)
    assert len(loaded) >= 5  # the CPU device and the op packs


@pytest.mark.parametrize("make", [device.create_cuda_gpu, device.create_opencl_device])
def test_missing_gpu_raises_runtime_error(make):
    if make is device.create_cuda_gpu and device.get_num_gpus() > 0:
        pytest.skip("a CUDA GPU is present")
    if make is device.create_opencl_device and device.get_num_opencl_platforms() > 0:
        pytest.skip("an OpenCL device is present")
    with pytest.raises(RuntimeError) as e:
        make()
    assert isinstance(e.value, singa.UnavailableError)
    assert "create_" in str(e.value)


def test_bad_gpu_id():
    with pytest.raises(RuntimeError):
        device.create_cuda_gpu(99)


def test_errors_are_builtin_subclasses():
    assert issubclass(singa.InvalidArgumentError, ValueError)
    assert issubclass(singa.InvalidArgumentError, singa.SingaError)
    assert issubclass(singa.UnavailableError, RuntimeError)
    assert issubclass(singa.UnimplementedError, NotImplementedError)
    assert issubclass(singa.NotFoundError, LookupError)
