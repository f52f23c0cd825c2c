"""`singa train` and `singa export` end to end, on a slice of Fashion-MNIST.

    train_cli_test.py SINGA SOURCE_ROOT DATA_DIR

Checks, each as its own case (GoogleTest-style PASSED/FAILED counts at the end):
  - all five stages run and print one JSON line each, in order, and learning
    happened (accuracy far above chance after one short epoch);
  - the import stage (prepare() + the inference executor) scores what the
    trained model scored: the exported file is the trained model;
  - the exported file passes onnx.checker with strict shape inference and has a
    symbolic batch dimension;
  - ONNX Runtime (onnxruntime-node) gives the same outputs as `singa run` on it;
  - a checkpoint resumes the epoch after the one it recorded;
  - `singa export CHECKPOINT` writes a model that runs and matches the stage;
  - bad input (missing data folder, truncated checkpoint, resume without a
    checkpoint, bad option values) gives one clear error and a non-zero exit.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

SINGA, ROOT, DATA = sys.argv[1:4]
ORT = os.path.join(ROOT, "bench", "node_modules", "onnxruntime-node")
LIMITS = ["--limit-train", "1536", "--limit-test", "500", "--epochs", "1", "--batch", "64", "--threads", "2"]
passed, failed, skipped = 0, 0, 0


def case(fn):
    global passed, failed, skipped
    name = fn.__name__
    print(f"[ RUN      ] {name}", flush=True)
    try:
        fn()
        print(f"[       OK ] {name}", flush=True)
        passed += 1
    except Skip as e:
        print(f"[  SKIPPED ] {name}: {e}", flush=True)
        skipped += 1
    except Exception as e:  # noqa: BLE001 - a failed check of any kind is a failed case
        print(f"[  FAILED  ] {name}: {type(e).__name__}: {e}", flush=True)
        failed += 1
    return fn


class Skip(Exception):
    pass


def singa(*args, check=True):
    p = subprocess.run([SINGA, *args], capture_output=True, text=True, timeout=1800)
    if check and p.returncode != 0:
        raise AssertionError(f"singa {' '.join(args)} exited {p.returncode}: {p.stderr.strip()[-2000:]}")
    return p


def json_lines(text):
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


work = tempfile.mkdtemp(prefix="singa_train_test_")
model = os.path.join(work, "fm.onnx")
ckpt = os.path.join(work, "fm.ckpt")
stages = {}


@case
def all_stages_run_and_learn():
    p = singa("train", *LIMITS, "-o", model, "--checkpoint", ckpt, "--json")
    lines = json_lines(p.stdout)
    names = [line["stage"] for line in lines]
    assert names == ["train", "export", "import", "retrain", "transfer"], names
    for line in lines:
        stages[line["stage"]] = line
    for s in ("train", "import", "retrain", "transfer"):
        acc = stages[s]["test_accuracy"]
        # Chance is 0.1; one epoch over 1536 images (24 steps) reaches about 0.5-0.65,
        # and the transfer stage's fresh three-layer head about 0.5.
        assert acc > 0.3, f"{s}: test accuracy {acc}"
    # Re-training starts from the imported (trained) weights, so it ends ahead of them.
    assert stages["retrain"]["test_accuracy"] > stages["train"]["test_accuracy"], stages
    for s in ("train", "retrain", "transfer"):
        assert stages[s]["epochs"] == 1 and stages[s]["images_per_second"] > 0, stages[s]


@case
def import_scores_what_training_scored():
    if not stages:
        raise Skip("the training run failed")
    # 500 test images: one image's difference is 0.002; float drift between the
    # eager and the optimised inference path may flip at most a borderline one.
    a, b = stages["train"]["test_accuracy"], stages["import"]["test_accuracy"]
    assert abs(a - b) <= 0.0021, (a, b)


@case
def exported_model_is_valid_with_dynamic_batch():
    m = onnx.load(model)
    onnx.checker.check_model(m, full_check=True)
    onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)
    assert m.opset_import[0].version == 17, m.opset_import
    dim0 = m.graph.input[0].type.tensor_type.shape.dim[0]
    assert dim0.dim_param and not dim0.HasField("dim_value"), dim0
    names = {i.name for i in m.graph.initializer}
    assert len(names) == 8, names  # 2 convs + 2 linears, weight and bias each


def test_images(n):
    rng = np.random.default_rng(7)
    # Inputs in the range training saw (normalised Fashion-MNIST is about -0.8..2).
    return rng.uniform(-0.8, 2.0, size=(n, 1, 28, 28)).astype(np.float32)


def singa_outputs(model_path, x):
    np.save(os.path.join(work, "x.npy"), x)
    out = os.path.join(work, "out")
    shutil.rmtree(out, ignore_errors=True)
    singa("run", model_path, "--input", "input=" + os.path.join(work, "x.npy"), "--output-dir", out)
    return numpy_helper.to_array(onnx.load_tensor(os.path.join(out, "output.pb")))


@case
def onnx_runtime_matches_singa_run():
    if shutil.which("node") is None or not os.path.exists(os.path.join(ORT, "package.json")):
        raise Skip("node or onnxruntime-node is not installed (scripts/deps.sh installs them)")
    x = test_images(5)
    ours = singa_outputs(model, x)
    x.tofile(os.path.join(work, "x.f32"))
    subprocess.run(["node", os.path.join(ROOT, "tests", "ort_run.js"), ORT, model, os.path.join(work, "x.f32"),
                    json.dumps(list(x.shape)), os.path.join(work, "y.f32")], check=True, timeout=300)
    theirs = np.fromfile(os.path.join(work, "y.f32"), dtype=np.float32).reshape(ours.shape)
    err = np.abs(ours - theirs).max()
    assert np.allclose(ours, theirs, rtol=1e-5, atol=1e-5), f"max |singa - ORT| = {err}"
    assert np.abs(ours).max() > 1e-2, "outputs too small for the comparison to mean anything"


@case
def checkpoint_resumes_the_next_epoch():
    ck = os.path.join(work, "resume.ckpt")
    first = json_lines(singa("train", *LIMITS, "--stages", "train", "--checkpoint", ck, "--json").stdout)
    assert first[0]["epochs"] == 1, first
    args = [a if a != "1" or LIMITS[i - 1] != "--epochs" else "2" for i, a in enumerate(LIMITS)]
    resumed = json_lines(singa("train", *args, "--stages", "train", "--checkpoint", ck, "--resume", "--json").stdout)
    assert resumed[0]["stage"] == "train" and resumed[0]["epochs"] == 1, resumed  # only epoch 2 ran
    assert resumed[0]["test_accuracy"] > first[0]["test_accuracy"], (first, resumed)


@case
def export_of_a_checkpoint_matches_the_stage_model():
    out = os.path.join(work, "from_ckpt.onnx")
    # The checkpoint of the full run holds the transfer stage (the last one).
    p = singa("export", ckpt, "-o", out)
    onnx.checker.check_model(onnx.load(out), full_check=True)
    y = singa_outputs(out, test_images(3))
    assert y.shape == (3, 10), y.shape
    assert "transfer" in p.stdout + p.stderr, p.stdout + p.stderr


def expect_error(args, *needles, code=None):
    p = singa(*args, check=False)
    assert p.returncode != 0, f"singa {' '.join(args)} succeeded"
    if code is not None:
        assert p.returncode == code, f"exit {p.returncode}, expected {code}: {p.stderr}"
    assert p.returncode < 128, f"killed by a signal: {p.returncode}"
    for n in needles:
        assert n in p.stderr, f"'{n}' not in: {p.stderr.strip()}"
    assert "terminate called" not in p.stderr and "Segmentation" not in p.stderr, p.stderr


@case
def bad_input_gives_clear_errors():
    missing = os.path.join(work, "no_such_folder")
    expect_error(["train", "--data", missing, "--json"], missing, code=1)
    truncated = os.path.join(work, "truncated.ckpt")
    with open(ckpt, "rb") as f:
        data = f.read()
    with open(truncated, "wb") as f:
        f.write(data[: len(data) // 3])
    expect_error(["train", *LIMITS, "--stages", "train", "--checkpoint", truncated, "--resume"], truncated, code=1)
    expect_error(["export", truncated, "-o", os.path.join(work, "x.onnx")], truncated, code=1)
    expect_error(["train", "--resume"], "--checkpoint", code=2)
    expect_error(["train", "--stages", "train,fly"], "fly", code=2)
    expect_error(["train", "--epochs", "0"], "--epochs", code=2)
    expect_error(["train", "--opset", "9"], "--opset", code=2)
    expect_error(["train", "--warmup-steps", "-1"], "--warmup-steps", code=2)


@case
def warmup_steps_train_but_are_not_timed():
    # 1536 images = 24 steps; the first 20 run (the loss matches a plain run)
    # but the images/s is worked out over the last 4.
    args = ["train", *LIMITS, "--stages", "train", "--seed", "3", "--json"]
    plain = json_lines(singa(*args).stdout)[0]
    warm = json_lines(singa(*args, "--warmup-steps", "20").stdout)[0]
    # (not bit-equal: two threads sum dW in either order)
    assert abs(plain["train_loss"] - warm["train_loss"]) < 1e-3, (plain, warm)
    assert warm["images_per_second"] > 0, warm


shutil.rmtree(work, ignore_errors=True)
print(f"[==========] {passed + failed + skipped} tests ran.")
print(f"[  PASSED  ] {passed} tests.")
if skipped:
    print(f"[  SKIPPED ] {skipped} tests.")
if failed:
    print(f"[  FAILED  ] {failed} tests.")
sys.exit(1 if failed else 0)
