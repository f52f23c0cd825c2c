"""The GIL is released while a model runs and while it trains.

The proof does not rest on timing. The model's last node adds an input,
`flag`, that the main thread keeps overwriting with a counter while a worker
thread runs the model; numpy inputs are shared, not copied, so that node reads
whatever the counter is when it runs, after ~100 ms of matrix products. If the
run held the GIL the main thread could not write during it and the output
would equal the counter as the worker saw it just before the call. The check
is that the counter advanced during the run by a good share of what it
advanced over the worker's whole life.
"""
import sys
import threading
import time

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from singa import autograd, opt, sonnx, tensor

N = 512  # three [N,N] products: tens of milliseconds on one thread


def _slow_model():
    """y[1,1] = mean(x W W W) * 1e-30 + flag: the Add runs last and reads `flag`."""
    w = (np.random.default_rng(0).standard_normal((N, N)) / np.sqrt(N)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h1"]), helper.make_node("MatMul", ["h1", "W"], ["h2"]),
             helper.make_node("MatMul", ["h2", "W"], ["h3"]), helper.make_node("ReduceMean", ["h3"], ["m"]),
             helper.make_node("Mul", ["m", "tiny"], ["z"]), helper.make_node("Add", ["z", "flag"], ["y"])]
    g = helper.make_graph(nodes, "slow",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [N, N]),
                           helper.make_tensor_value_info("flag", TensorProto.FLOAT, [1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1])],
                          [numpy_helper.from_array(w, "W"),
                           numpy_helper.from_array(np.array(1e-30, np.float32), "tiny")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def _counter_seen_by_run(call, flag):
    """Runs call() in a thread while this thread writes 1, 2, 3, ... into flag[0].

    Returns (advance during the call, advance over the worker's life): the
    first is what call() returned minus the counter just before the call.
    """
    state = {"phase": 0}
    box = {}

    def worker():
        state["phase"] = 1
        box["before"] = float(flag[0])
        try:
            box["out"] = call()
        except BaseException as e:  # reported by the main thread
            box["error"] = e
        state["phase"] = 2

    flag[0] = 0.0
    t = threading.Thread(target=worker)
    t.start()
    while state["phase"] == 0:
        time.sleep(0.0005)
    n = 1
    while state["phase"] == 1:
        flag[0] = n
        n += 1
        if n >= 1 << 24:  # float32 counts exactly up to here
            n = 1 << 23
    t.join()
    if "error" in box:
        raise box["error"]
    return float(box["out"]) - box["before"], float(n)


def _assert_released(call, flag, what):
    # Up to three tries: a worker the OS leaves unscheduled for the whole call could see little progress.
    results = []
    for _ in range(3):
        during, total = _counter_seen_by_run(call, flag)
        results.append((during, total))
        if during > 0.2 * total and during > 100:
            return
    pytest.fail("%s: the main thread made (almost) no progress while it ran, so the GIL was held "
                "(counter advance during the call, over the worker's life: %s)" % (what, results))


@pytest.fixture
def short_switch_interval():
    old = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)
    yield
    sys.setswitchinterval(old)


def test_gil_released_while_a_model_runs(short_switch_interval):
    rep = sonnx.prepare(_slow_model(), threads=1)
    x = np.random.default_rng(1).standard_normal((N, N)).astype(np.float32)
    flag = np.zeros(1, np.float32)
    np.testing.assert_array_equal(rep.run([x, np.array([7.0], np.float32)])[0], [[7.0]])  # y is the flag
    _assert_released(lambda: rep.run([x, flag])[0][0, 0], flag, "SingaRep.run")


def test_gil_released_while_training(short_switch_interval):
    """The tensor_map path: the forward pass is recorded on the tape (training)."""
    rep = sonnx.prepare(_slow_model(), threads=1)
    w = rep.tensor_map["W"]
    w.requires_grad = True
    w.stores_grad = True
    x = tensor.Tensor(data=np.random.default_rng(1).standard_normal((N, N)).astype(np.float32))
    flag = np.zeros(1, np.float32)
    flag_t = tensor.Tensor(data=flag)  # shares flag's memory
    autograd.training = True
    try:
        _assert_released(lambda: tensor.to_numpy(rep.run([x, flag_t])[0])[0, 0], flag, "training forward")
        # And the step itself still works on what was recorded.
        y = rep.run([x, flag_t])[0]
        sgd = opt.SGD(lr=0.1)
        sgd.backward_and_update(autograd.mse_loss(y, tensor.Tensor(data=np.zeros((1, 1), np.float32))))
    finally:
        autograd.training = False


def _main_thread_share(fn):
    """Iterations this thread's loop makes while fn() runs in another thread, per
    second of fn's own duration (a held GIL leaves this thread only the moments
    after fn returns, which count for little against fn's time)."""
    state = {"phase": 0}

    def worker():
        t0 = time.perf_counter()
        state["phase"] = 1
        fn()
        state["took"] = time.perf_counter() - t0
        state["phase"] = 2

    t = threading.Thread(target=worker)
    t.start()
    while state["phase"] == 0:
        time.sleep(0.0005)
    n = 0
    while state["phase"] == 1:
        n += 1
    t.join()
    return n / max(state["took"], 1e-6)


def test_gil_released_during_backward(short_switch_interval):
    """backward is one C++ call over the tape: compare this thread's progress during it
    with its progress during a call that holds the GIL (sum over a range) for as long."""
    a = tensor.Tensor(data=np.random.default_rng(2).standard_normal((N, N)).astype(np.float32) / N,
                      requires_grad=True, stores_grad=True)
    x = tensor.Tensor(data=np.random.default_rng(3).standard_normal((N, N)).astype(np.float32))
    autograd.training = True
    try:
        def step():
            for _ in range(3):  # long enough that one switch interval after it counts for little
                y = autograd.matmul(autograd.matmul(autograd.matmul(x, a), a), a)
                list(autograd.backward(autograd.reduce_mean(autograd.mul(y, y))))

        t0 = time.perf_counter()
        step()
        took = time.perf_counter() - t0
        k = 1 << 16
        t0 = time.perf_counter()
        sum(range(k))
        per = (time.perf_counter() - t0) / k
        hold_n = max(k, int(took / per))
        tries = []
        for _ in range(3):
            released = _main_thread_share(step)
            held = _main_thread_share(lambda: sum(range(hold_n)))
            tries.append((released, held))
            if released > 4 * held:
                return
        pytest.fail("backward: this thread's loop rate during it is not well above its rate during a "
                    "GIL-holding call (per second, during / holding): %s" % tries)
    finally:
        autograd.training = False
