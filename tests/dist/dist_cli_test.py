"""`singa train` under `mpirun -np 2`: data-parallel training end to end.

    dist_cli_test.py SINGA DATA_DIR

Cases (GoogleTest-style PASSED/FAILED lines, exit 77 when mpirun is absent):
  - 2 ranks at batch b give the weights of 1 process at batch 2b (fp32), and the
    ONNX model rank 0 exports equals the single process's (graph and weights);
  - rank 0 alone prints the stage lines and the progress bar;
  - fp16, partialUpdate, sparseTopK and sparseThreshold reach fp32's test
    accuracy within one point after the same epochs;
  - killing a rank mid-epoch stops the job within a bounded time, naming the rank;
    the last checkpoint is valid, and --resume from it ends where an
    uninterrupted run ends;
  - a stuck rank (SIGSTOP) makes the others stop after --dist-timeout with an
    error naming it.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import numpy_helper

SINGA, DATA = sys.argv[1:3]
MPIRUN = shutil.which("mpirun")
MPI = [MPIRUN or "mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2"]
COMMON = ["--data", DATA, "--threads", "1", "--json"]
passed, failed = 0, 0
if MPIRUN is None:
    print("SKIP: mpirun not found (apt-get install openmpi-bin libopenmpi-dev)")
    sys.exit(77)


def case(fn):
    global passed, failed
    print(f"[ RUN      ] {fn.__name__}", flush=True)
    try:
        fn()
        print(f"[       OK ] {fn.__name__}", flush=True)
        passed += 1
    except Exception as e:  # noqa: BLE001 - any failed check fails the case
        print(f"[  FAILED  ] {fn.__name__}: {type(e).__name__}: {e}", flush=True)
        failed += 1
    return fn


def run(cmd, timeout=600, check=True):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()[-3000:]}")
    return p


def stage_lines(out):
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def assert_same_model(a, b, atol):
    ma, mb = onnx.load(a), onnx.load(b)
    assert [n.op_type for n in ma.graph.node] == [n.op_type for n in mb.graph.node], "graphs differ"
    ia = {i.name: numpy_helper.to_array(i) for i in ma.graph.initializer}
    ib = {i.name: numpy_helper.to_array(i) for i in mb.graph.initializer}
    assert ia.keys() == ib.keys(), f"initializers differ: {sorted(ia)} vs {sorted(ib)}"
    for k in ia:
        assert ia[k].shape == ib[k].shape, k
        diff = float(np.abs(ia[k] - ib[k]).max())
        assert diff <= atol, f"initializer {k} differs by {diff}"


TMP = tempfile.mkdtemp(prefix="singa-dist-")


@case
def two_ranks_equal_one_process_at_double_batch():
    args = COMMON + ["--stages", "train,export", "--limit-train", "1024", "--limit-test", "500", "--epochs", "2",
                     "--schedule", "cosine"]
    one = os.path.join(TMP, "one.onnx")
    two = os.path.join(TMP, "two.onnx")
    r1 = run([SINGA, "train", *args, "--batch", "64", "-o", one])
    r2 = run([*MPI, SINGA, "train", *args, "--batch", "32", "-o", two, "--progress"])
    lines = stage_lines(r2.stdout)
    assert [x["stage"] for x in lines] == ["train", "export"], f"rank 0 alone prints: {r2.stdout}"
    assert lines[0]["ranks"] == 2 and lines[0]["global_batch"] == 64, lines[0]
    bars = [ln for ln in r2.stderr.replace("\r", "\n").splitlines() if "train epoch 1/2" in ln and "100%" in ln]
    assert len(bars) == 1, f"one progress bar (rank 0's), got {len(bars)}"
    # K = 32 steps of SGD with momentum; float sums in another order only.
    assert_same_model(one, two, atol=2e-5)
    a1, a2 = stage_lines(r1.stdout)[0]["test_accuracy"], lines[0]["test_accuracy"]
    assert abs(a1 - a2) <= 0.004, (a1, a2)


@case
def update_modes_reach_fp32_accuracy():
    args = COMMON + ["--stages", "train", "--limit-train", "6000", "--limit-test", "2000", "--epochs", "2", "--batch", "32"]
    acc = {}
    for mode, extra in [("fp32", []), ("fp16", []), ("partialUpdate", []), ("sparseTopK", ["--spars", "0.05"]),
                        ("sparseThreshold", ["--spars", "0.001"])]:
        r = run([*MPI, SINGA, "train", *args, "--dist-mode", mode, *extra])
        line = stage_lines(r.stdout)[0]
        assert line["dist_mode"] == mode, line
        acc[mode] = line["test_accuracy"]
    print(f"    accuracy after 2 epochs: {acc}", flush=True)
    assert acc["fp32"] > 0.7, acc
    for mode, a in acc.items():
        assert abs(a - acc["fp32"]) <= 0.01, f"{mode}: {a} vs fp32 {acc['fp32']}"


def rank_pid(marker, rank):
    """The pid of the `singa` process of `rank` whose command line holds `marker`."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().split(b"\0")
            if not cmd or not cmd[0].endswith(b"singa") or marker.encode() not in cmd:
                continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
            if f"OMPI_COMM_WORLD_RANK={rank}".encode() in env:
                return int(pid)
        except OSError:
            continue
    return None


def start_and_hit(ckpt, extra, sig):
    """Starts a 2-rank run, sends `sig` to rank 1 once the first checkpoint exists; returns (rc, stderr, seconds)."""
    cmd = [*MPI, SINGA, "train", *COMMON, "--stages", "train", "--limit-train", "4096", "--limit-test", "500",
           "--epochs", "4", "--batch", "16", "--checkpoint", ckpt, *extra]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t0 = time.time()
    while not os.path.exists(ckpt):
        if p.poll() is not None or time.time() - t0 > 120:
            p.kill()
            raise AssertionError(f"no checkpoint appeared: {p.communicate()[1][-2000:]}")
        time.sleep(0.02)
    time.sleep(0.2)  # into the second epoch
    pid = rank_pid(ckpt, 1)
    assert pid, "rank 1 not found"
    hit = time.time()
    os.kill(pid, sig)
    try:
        _, err = p.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        p.kill()
        os.kill(pid, signal.SIGKILL)
        raise AssertionError("the job did not stop within 90 s of the fault")
    return p.returncode, err, time.time() - hit


def epochs_done(ckpt):
    r = run([SINGA, "export", ckpt, "-o", ckpt + ".onnx"])
    return int(r.stdout.split("after ")[1].split()[0])


@case
def killed_rank_stops_the_job_and_resume_continues():
    ckpt = os.path.join(TMP, "kill.ckpt")
    rc, err, secs = start_and_hit(ckpt, [], signal.SIGKILL)
    assert rc != 0, "the job must fail"
    assert "rank 1" in err, f"the error names rank 1: {err[-2000:]}"
    done = epochs_done(ckpt)  # the checkpoint is valid
    assert 1 <= done < 4, done
    print(f"    stopped {secs:.1f} s after the kill; checkpoint after {done} epochs", flush=True)
    common = [*COMMON, "--stages", "train,export", "--limit-train", "4096", "--limit-test", "500", "--epochs", "4",
              "--batch", "16"]
    resumed = os.path.join(TMP, "resumed.onnx")
    r = run([*MPI, SINGA, "train", *common, "--checkpoint", ckpt, "--resume", "-o", resumed])
    assert stage_lines(r.stdout)[0]["epochs"] == 4 - done, r.stdout
    whole = os.path.join(TMP, "whole.onnx")
    run([*MPI, SINGA, "train", *common, "--checkpoint", os.path.join(TMP, "whole.ckpt"), "-o", whole])
    assert_same_model(whole, resumed, atol=1e-6)


@case
def stuck_rank_is_named_after_the_timeout():
    ckpt = os.path.join(TMP, "stuck.ckpt")
    rc, err, secs = start_and_hit(ckpt, ["--dist-timeout", "4"], signal.SIGSTOP)
    assert rc != 0, "the job must fail"
    assert "rank 1 did not answer" in err, f"the error names rank 1: {err[-2000:]}"
    assert secs < 60, secs
    print(f"    stopped {secs:.1f} s after rank 1 froze", flush=True)


@case
def bad_mode_is_a_usage_error():
    r = run([SINGA, "train", *COMMON, "--dist-mode", "fp8"], check=False)
    assert r.returncode == 2 and "--dist-mode" in r.stderr, r.stderr


shutil.rmtree(TMP, ignore_errors=True)
print(f"{passed} PASSED, {failed} FAILED")
sys.exit(1 if failed else 0)
