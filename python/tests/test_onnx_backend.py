"""ONNX's own Python backend test runner (onnx.backend.test.BackendTest) over
singa.sonnx.SingaBackend, on the node, simple and pytorch-* suites of the
ONNX test data Debian ships (the same data the C++ conformance runner reads).

Cases singa does not pass are listed, with the reason, in
onnx_backend_excluded.txt next to this file; everything else must pass.
"""
import os
import unittest

import numpy as np
import onnx.backend.test
import onnx.backend.test.loader as _loader
import onnx.backend.test.runner as _runner

from singa import sonnx

# onnx 1.12's runner compares string outputs through np.object, which numpy
# 1.24 removed; give it the builtin it meant.
if not hasattr(np, "object"):
    np.object = object

# Debian's test data (python3-onnx links its data folder there; use it
# directly when that link is missing).
_DEBIAN_DATA = "/usr/include/onnx/backend/test/data"
_DATA = os.environ.get("SINGA_ONNX_TEST_DATA", _DEBIAN_DATA)
if not os.path.isdir(_DATA):
    _DATA = _loader.DATA_DIR


def _load_model_tests(data_dir=_DATA, kind=None):
    # 'real' models are downloaded from the network, which CI does not have.
    if kind == "real":
        return []
    return _loader.load_model_tests(data_dir, kind)


_runner.load_model_tests = _load_model_tests


def _assert_similar_outputs(cls, ref_outputs, outputs, rtol, atol):
    """onnx 1.12's comparison, with sequences compared element by element (its own
    recursion treats each element as a list of outputs and fails on 0-d tensors)."""
    np.testing.assert_equal(len(outputs), len(ref_outputs))
    for ref, out in zip(ref_outputs, outputs):
        if isinstance(ref, (list, tuple)) or isinstance(out, (list, tuple)):
            assert isinstance(out, (list, tuple)) and isinstance(ref, (list, tuple)), (type(ref), type(out))
            cls.assert_similar_outputs(list(ref), list(out), rtol, atol)
        elif ref is None or out is None:
            assert ref is None and out is None, (ref, out)
        else:
            np.testing.assert_equal(out.dtype, ref.dtype)
            if ref.dtype == object:
                np.testing.assert_array_equal(out, ref)
            else:
                np.testing.assert_allclose(out, ref, rtol=rtol, atol=atol)


_runner.Runner.assert_similar_outputs = classmethod(_assert_similar_outputs)

_HERE = os.path.dirname(os.path.abspath(__file__))


def _excluded():
    names = []
    with open(os.path.join(_HERE, "onnx_backend_excluded.txt")) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                names.append(line)
    return names


backend_test = onnx.backend.test.BackendTest(sonnx.SingaBackend, __name__)
for name in _excluded():
    backend_test.exclude(r"^%s_(cpu|cuda)$" % name)
# Model tests only: the SingaBackend runs whole models; node tests are models too.
globals().update(backend_test.test_cases)

if __name__ == "__main__":
    unittest.main()
