"""singa.tensor: construction, numpy / DLPack sharing, arithmetic against numpy."""
import numpy as np
import pytest

import singa
from singa import device, tensor


def test_from_numpy_shares_memory_both_ways():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = tensor.Tensor(data=a)
    assert t.shape == (3, 4) and t.dtype == tensor.float32
    view = tensor.to_numpy(t)
    assert np.shares_memory(view, a)
    a[0, 0] = 42.0  # the tensor sees writes to the array ...
    assert tensor.to_numpy(t)[0, 0] == 42.0
    view2 = np.asarray(t)  # ... and __array__ views the same memory
    assert np.shares_memory(view2, a)


def test_buffer_protocol_of_ctensor():
    a = np.arange(6, dtype=np.int64).reshape(2, 3)
    ct = tensor.Tensor(data=a).data
    m = memoryview(ct)
    assert m.format == "q" and m.shape == (2, 3)
    assert np.shares_memory(np.asarray(ct), a)


def test_non_contiguous_and_foreign_order_are_copied_correctly():
    a = np.arange(12, dtype=np.float64).reshape(3, 4).T  # Fortran order
    t = tensor.Tensor(data=a)
    np.testing.assert_array_equal(tensor.to_numpy(t), a)
    b = np.arange(4, dtype=">i4")  # big-endian
    np.testing.assert_array_equal(tensor.to_numpy(tensor.Tensor(data=b)), b.astype("<i4"))


def test_shape_constructor_and_dtypes():
    t = tensor.Tensor((2, 3), dtype=tensor.int32)
    assert t.shape == (2, 3) and t.dtype == np.int32
    np.testing.assert_array_equal(tensor.to_numpy(t), np.zeros((2, 3), np.int32))
    assert tensor.ones((2,)).to_numpy().tolist() == [1.0, 1.0]
    with pytest.raises(ValueError):
        tensor.Tensor(data=np.zeros(3, np.float32), shape=(4,))
    with pytest.raises(ValueError):
        tensor.Tensor((2,), dtype="not-a-dtype")
    with pytest.raises(singa.SingaError):
        tensor.Tensor(data=np.zeros(2, dtype=np.float128) if hasattr(np, "float128") else np.zeros(2, "V4"))


def test_flags():
    t = tensor.Tensor((2,), requires_grad=True, stores_grad=True)
    assert t.requires_grad and t.stores_grad
    t.requires_grad = False
    assert not t.requires_grad
    assert isinstance(tensor.PlaceHolder((1, 3)), tensor.Tensor)


@pytest.mark.parametrize("op", ["+", "-", "*", "/", "@"])
def test_arithmetic_matches_numpy(op):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 3)).astype(np.float32)
    b = rng.standard_normal((3, 3)).astype(np.float32) + 3.0
    ta, tb = tensor.from_numpy(a), tensor.from_numpy(b)
    got = tensor.to_numpy(eval("ta %s tb" % op))
    want = eval("a %s b" % op)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_scalar_operands_and_comparisons():
    a = np.array([1.0, 2.0, 3.0], np.float32)
    t = tensor.from_numpy(a)
    np.testing.assert_allclose(tensor.to_numpy(t * 2 + 1), a * 2 + 1)
    np.testing.assert_allclose(tensor.to_numpy(1 - t), 1 - a)
    np.testing.assert_allclose(tensor.to_numpy(-t), -a)
    np.testing.assert_array_equal(tensor.to_numpy(t > 1.5), (a > 1.5).astype(np.float32))


def test_dlpack_roundtrip_with_numpy():
    a = np.arange(5, dtype=np.float32)
    t = tensor.Tensor(data=a)
    assert t.__dlpack_device__() == (1, 0)  # kDLCPU
    back = np.from_dlpack(t)
    assert np.shares_memory(back, a)
    t2 = tensor.from_dlpack(a)
    assert np.shares_memory(tensor.to_numpy(t2), a)
    t2.data.copy_from(tensor.Tensor(data=np.full(5, 7, np.float32)).data)
    assert a.tolist() == [7.0] * 5


def test_dlpack_with_torch():
    torch = pytest.importorskip("torch")
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    t = tensor.from_dlpack(x)
    np.testing.assert_array_equal(tensor.to_numpy(t), x.numpy())
    y = torch.from_dlpack(t)
    y[0, 0] = 5.0
    assert x[0, 0].item() == 5.0  # one memory for all three


def test_values_outlive_the_source_objects():
    t = tensor.Tensor(data=np.arange(4, dtype=np.float32))
    v = tensor.to_numpy(t)
    del t
    assert v.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_set_value_and_copy_from_numpy():
    t = tensor.Tensor((2, 2))
    t.set_value(3.0)
    assert tensor.to_numpy(t).tolist() == [[3.0, 3.0], [3.0, 3.0]]
    t.copy_from_numpy(np.array([[1, 2], [3, 4]], np.float32))
    assert tensor.to_numpy(t).tolist() == [[1, 2], [3, 4]]
    t.gaussian(0.0, 1.0)
    assert np.isfinite(tensor.to_numpy(t)).all()


def test_to_numpy_rejects_non_tensors():
    with pytest.raises(TypeError):
        tensor.to_numpy(np.zeros(2))


def test_strings():
    a = np.array(["a", "bc"], dtype=object)
    t = tensor.Tensor(data=a)
    assert tensor.to_numpy(t).tolist() == ["a", "bc"]
