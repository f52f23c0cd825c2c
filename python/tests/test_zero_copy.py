"""numpy inputs and outputs of SingaRep.run are shared with singa, not copied
(the claims bench/python_overhead.py also checks)."""
import subprocess
import sys
import textwrap

import numpy as np
from onnx import TensorProto, helper

from singa import sonnx, tensor


def _model(op, out_type, out_shape):
    g = helper.make_graph([helper.make_node(op, ["x"], ["y"])], op.lower(),
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])],
                          [helper.make_tensor_value_info("y", out_type, out_shape)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def test_outputs_are_views_of_singa_memory():
    rep = sonnx.prepare(_model("Relu", TensorProto.FLOAT, ["n"]))
    y = rep.run([np.arange(-3, 5, dtype=np.float32)])[0]
    np.testing.assert_array_equal(y, np.maximum(np.arange(-3, 5), 0))
    assert not y.flags.owndata and type(y.base).__name__ == "PyCapsule"
    # The Tensor route views the same memory as the CTensor it wraps.
    t = rep.run([tensor.Tensor(data=np.ones(4, np.float32))])[0]
    a = tensor.to_numpy(t)
    assert a.__array_interface__["data"][0] == t.data.data_ptr()


def test_inputs_are_shared():
    x = np.arange(16, dtype=np.float32)
    assert tensor.Tensor(data=x).data.data_ptr() == x.__array_interface__["data"][0]
    # A non-contiguous array cannot be shared; it is copied (and still correct).
    rep = sonnx.prepare(_model("Neg", TensorProto.FLOAT, ["n"]))
    np.testing.assert_array_equal(rep.run([x[::2]])[0], -x[::2])


# In a fresh process, so the peak RSS before the run is this input's, not an earlier test's.
_BIG = textwrap.dedent("""
    import resource, sys
    import numpy as np
    from onnx import TensorProto, helper
    from singa import sonnx
    g = helper.make_graph([helper.make_node("Shape", ["x"], ["y"])], "shape",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])],
                          [helper.make_tensor_value_info("y", TensorProto.INT64, [1])])
    rep = sonnx.prepare(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]))
    n = 48 << 20                      # 192 MiB of float32, every page touched
    x = np.ones(n, np.float32)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for _ in range(3):
        assert int(rep.run([x])[0][0]) == n
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    print(grown // 1024)
""")


def test_big_input_is_not_copied():
    r = subprocess.run([sys.executable, "-c", _BIG], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    grown_mib = int(r.stdout.strip().splitlines()[-1])
    assert grown_mib < 64, "peak RSS grew %d MiB running a 192 MiB input: it was copied" % grown_mib
