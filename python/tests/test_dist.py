"""singa.opt.DistOpt across processes: `mpirun -np 2` against one process.

The test runs this file as a worker (``python test_dist.py worker OUT MODE...``)
under mpirun, and once without a launcher as the reference. The reference is
the plain optimizer (no DistOpt) at twice the batch: 2 ranks at batch b must
train exactly like it in fp32, because DistOpt averages their gradients.
"""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

B = 8           # per-rank batch
STEPS = 30      # steps of each mode (fp32: compared against the single process)
FEATURES, CLASSES = 10, 4


def data(n, seed=7):
    """A learnable problem: labels from a fixed random linear map."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, FEATURES)).astype(np.float32)
    w = rng.standard_normal((FEATURES, CLASSES)).astype(np.float32)
    y = np.eye(CLASSES, dtype=np.float32)[np.argmax(x @ w, axis=1)]
    return x, y


# ---- the worker (runs in each rank)

def worker(out, modes):
    from singa import autograd, layer, model, opt, tensor

    class MLP(model.Model):
        def __init__(self):
            super().__init__()
            self.fc1 = layer.Linear(16)
            self.fc2 = layer.Linear(CLASSES)

        def forward(self, x):
            return self.fc2(autograd.relu(self.fc1(x)))

        # As the SINGA v3.2 guide writes it.
        def train_one_batch(self, x, y, dist_option, spars):
            out = self.forward(x)
            loss = autograd.softmax_cross_entropy(out, y)
            if dist_option == 'fp32':
                self.optimizer.backward_and_update(loss)
            elif dist_option == 'fp16':
                self.optimizer.backward_and_update_half(loss)
            elif dist_option == 'partialUpdate':
                self.optimizer.backward_and_partial_update(loss)
            elif dist_option == 'sparseTopK':
                self.optimizer.backward_and_sparse_update(loss, topK=True, spars=spars)
            elif dist_option == 'sparseThreshold':
                self.optimizer.backward_and_sparse_update(loss, topK=False, spars=spars)
            return out, loss

    def make(dist):
        m = MLP()
        sgd = opt.SGD(lr=0.1, momentum=0.9, weight_decay=1e-4)
        sgd = opt.DistOpt(sgd) if dist else sgd
        m.set_optimizer(sgd)
        m.compile([tensor.PlaceHolder((B, FEATURES))], is_train=True)
        rng = np.random.default_rng(1)  # the same start on every rank
        for name in sorted(m.get_params()):
            p = m.get_params()[name]
            p.copy_from_numpy((0.3 * rng.standard_normal(p.shape)).astype(np.float32))
        return m, sgd

    for spec in modes:
        mode, dist = spec.split(":")  # e.g. "fp32:dist" or "fp32:plain"
        m, sgd = make(dist == "dist")
        rank, world = (sgd.global_rank, sgd.world_size) if dist == "dist" else (0, 1)
        steps = STEPS
        x, y = data(steps * 2 * B)
        xs, ys = x[rank::world], y[rank::world]  # this rank's shard
        b = len(xs) // steps
        losses = []
        for k in range(steps):
            tx = tensor.from_numpy(np.ascontiguousarray(xs[k * b:(k + 1) * b]))
            ty = tensor.from_numpy(np.ascontiguousarray(ys[k * b:(k + 1) * b]))
            _, loss = m(tx, ty, mode, 0.3 if mode == "sparseThreshold" else 0.2)
            losses.append(float(tensor.to_numpy(loss).reshape(-1)[0]))
        if mode == "partialUpdate":
            sgd.average_parameters()
        params = {n: tensor.to_numpy(p) for n, p in m.get_params().items()}
        np.savez(os.path.join(out, "%s_%s_r%d.npz" % (mode, dist, rank)), losses=np.array(losses),
                 **{"p:" + n: v for n, v in params.items()})


def fault_worker(kind):
    """Rank 1 misbehaves: 'die' exits in the middle of training, 'shape' has another hidden width.
    Rank 0 reports what DistOpt raised on stderr and exits 3; nothing may hang."""
    from singa import autograd, layer, model, opt, tensor

    class MLP(model.Model):
        def __init__(self, hidden):
            super().__init__()
            self.fc1 = layer.Linear(hidden)
            self.fc2 = layer.Linear(CLASSES)

        def forward(self, x):
            return self.fc2(autograd.relu(self.fc1(x)))

        def train_one_batch(self, x, y):
            loss = autograd.softmax_cross_entropy(self.forward(x), y)
            self.optimizer.backward_and_update(loss)
            return loss

    sgd = opt.DistOpt(opt.SGD(lr=0.1), timeout=10.0)
    rank = sgd.global_rank
    m = MLP(17 if kind == "shape" and rank == 1 else 16)
    m.set_optimizer(sgd)
    m.compile([tensor.PlaceHolder((B, FEATURES))], is_train=True)
    x, y = data(20 * B)
    try:
        for k in range(20):
            if kind == "die" and rank == 1 and k == 5:
                os._exit(9)  # no MPI_Finalize, no goodbye: as a crashed process
            m(tensor.from_numpy(x[k * B:(k + 1) * B]), tensor.from_numpy(y[k * B:(k + 1) * B]))
    except Exception as e:  # singa's errors: InvalidArgumentError, UnavailableError, ...
        sys.stderr.write("rank %d stopped: %s\n" % (rank, e))
        sys.stderr.flush()
        os._exit(3)


if __name__ == "__main__" and len(sys.argv) > 2 and sys.argv[1] == "worker":
    worker(sys.argv[2], sys.argv[3:])
    sys.exit(0)
if __name__ == "__main__" and len(sys.argv) > 2 and sys.argv[1] == "fault":
    fault_worker(sys.argv[2])
    sys.exit(0)


# ---- the tests

MODES = ["fp32", "fp16", "partialUpdate", "sparseTopK", "sparseThreshold"]


def params(path):
    with np.load(path) as z:
        return {k[2:]: z[k] for k in z.files if k.startswith("p:")}, z["losses"]


def launcher_env():
    """This environment without a launcher's variables (pytest itself may run under one)."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMI", "PMIX_", "SLURM_"))}


def mpirun_or_skip():
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        pytest.skip("mpirun is not installed (Debian's openmpi-bin)")
    return mpirun


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    mpirun = mpirun_or_skip()
    out = str(tmp_path_factory.mktemp("dist"))
    env = launcher_env()
    here = os.path.abspath(__file__)
    subprocess.run([sys.executable, here, "worker", out, "fp32:plain"], env=env, check=True, timeout=60)
    r = subprocess.run([mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "2", sys.executable, here, "worker",
                        out] + [m + ":dist" for m in MODES], env=env, timeout=120, capture_output=True, text=True)
    assert r.returncode == 0, "mpirun failed:\n" + r.stdout[-3000:] + r.stderr[-3000:]
    return out


def test_two_ranks_at_b_equal_one_rank_at_2b_in_fp32(runs):
    ref, _ = params(os.path.join(runs, "fp32_plain_r0.npz"))
    for rank in (0, 1):
        got, _ = params(os.path.join(runs, "fp32_dist_r%d.npz" % rank))
        assert sorted(got) == sorted(ref)
        for n in ref:
            assert not np.allclose(ref[n], 0)
            np.testing.assert_allclose(got[n], ref[n], rtol=1e-4, atol=1e-5, err_msg="parameter %s, rank %d" % (n, rank))


@pytest.mark.parametrize("mode", MODES)
def test_every_mode_keeps_ranks_alike_and_reduces_the_loss(runs, mode):
    p0, l0 = params(os.path.join(runs, "%s_dist_r0.npz" % mode))
    p1, l1 = params(os.path.join(runs, "%s_dist_r1.npz" % mode))
    for n in p0:  # every mode ends with the same model on both ranks
        np.testing.assert_allclose(p0[n], p1[n], rtol=1e-5, atol=1e-6, err_msg="parameter %s" % n)
    for losses in (l0, l1):
        first, last = losses[:5].mean(), losses[-5:].mean()
        assert last < 0.7 * first, "%s: loss %.3f -> %.3f" % (mode, first, last)


def test_single_process_dist_opt_is_the_wrapped_optimizer():
    from singa import autograd, opt, tensor
    x, y = data(2 * B)
    rng = np.random.default_rng(5)
    w0 = rng.standard_normal((FEATURES, CLASSES)).astype(np.float32)
    ws = []
    for make in (lambda: opt.SGD(lr=0.1, momentum=0.9), lambda: opt.DistOpt(opt.SGD(lr=0.1, momentum=0.9))):
        sgd = make()
        w = tensor.from_numpy(w0.copy())
        w.requires_grad = w.stores_grad = True
        was, autograd.training = autograd.training, True
        try:
            for k in range(3):
                loss = autograd.softmax_cross_entropy(autograd.matmul(tensor.from_numpy(x), w), tensor.from_numpy(y))
                sgd.backward_and_update(loss)
        finally:
            autograd.training = was
        ws.append(tensor.to_numpy(w))
    assert not np.allclose(ws[0], w0)
    np.testing.assert_allclose(ws[1], ws[0], rtol=1e-6, atol=1e-7)


def test_dist_opt_rejects_bad_arguments():
    from singa import opt
    with pytest.raises(TypeError, match="optimizer to wrap"):
        opt.DistOpt(object())
    with pytest.raises(ValueError, match="world_size"):
        opt.DistOpt(opt.SGD(), world_size=3)
    with pytest.raises(ValueError, match="dist_option"):
        opt.dist_update(opt.SGD(), None, "fp8")


@pytest.mark.parametrize("kind", ["die", "shape"])
def test_a_faulty_rank_stops_the_job_with_an_error_naming_it(kind):
    import time
    mpirun = mpirun_or_skip()
    t0 = time.time()
    r = subprocess.run([mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "2", sys.executable,
                        os.path.abspath(__file__), "fault", kind], env=launcher_env(), timeout=120,
                       capture_output=True, text=True)
    secs = time.time() - t0
    out = r.stdout + r.stderr
    assert r.returncode != 0, "the job must fail:\n" + out[-3000:]
    assert secs < 90, "stopped only after %.0f s" % secs
    if kind == "shape":  # DistOpt's own check names the parameter and the ranks
        assert "rank 0 stopped" in out and "rank 1" in out, out[-3000:]
    else:  # the launcher (Open MPI: "Process name: [[job,1],RANK]") or DistOpt's timeout names rank 1
        import re
        assert re.search(r"Process name: \[\[\d+,\d+\],1\]", out) or "rank 1" in out, out[-3000:]
