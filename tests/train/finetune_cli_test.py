"""`singa train --model FILE.onnx --cut -1 --classes 10`: fine-tuning an ONNX classifier.

    finetune_cli_test.py SINGA DATA_DIR

A small ResNet (torchvision's BasicBlock, widths 16-32-64, 32x32 RGB input,
1000 classes) is exported here with PyTorch 1.13 in training form, so that
its BatchNormalization nodes and running statistics stay (an eval export
folds them into the convolutions). Checks, each its own case:
  - fine-tuning on a Fashion-MNIST slice (28x28 grey -> 32x32, 3 channels)
    reaches an accuracy far above chance (0.1);
  - the exported model has the new head [10, 64], passes onnx.checker, keeps
    the imported names, and its running statistics moved (buffers updated in
    training mode) while the dropped classifier (fc.weight) is gone;
  - `singa run` of the exported model gives 10 scores per image;
  - bad input gives a clear error and a non-zero exit.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

SINGA, DATA = sys.argv[1:3]
passed, failed = 0, 0
work = tempfile.mkdtemp(prefix="singa_finetune_test_")
model_path = os.path.join(work, "resnet_small.onnx")
out_path = os.path.join(work, "finetuned.onnx")
result = {}


def case(fn):
    global passed, failed
    print(f"[ RUN      ] {fn.__name__}", flush=True)
    try:
        fn()
        print(f"[       OK ] {fn.__name__}", flush=True)
        passed += 1
    except Exception as e:  # noqa: BLE001 - a failed check of any kind is a failed case
        print(f"[  FAILED  ] {fn.__name__}: {type(e).__name__}: {e}", flush=True)
        failed += 1
    return fn


def singa(*args, check=True):
    p = subprocess.run([SINGA, *args], capture_output=True, text=True, timeout=900)
    if check and p.returncode != 0:
        raise AssertionError(f"singa {' '.join(args)} exited {p.returncode}: {p.stderr.strip()[-2000:]}")
    return p


def small_resnet(classes):
    import torch
    from torchvision.models.resnet import BasicBlock, ResNet

    net = ResNet(BasicBlock, [1, 1, 1, 1], num_classes=classes)
    # Narrower than ResNet-18 (16-32-64-64 channels) so that CI trains it in a minute.
    net.conv1 = torch.nn.Conv2d(3, 16, 3, 1, 1, bias=False)
    net.bn1 = torch.nn.BatchNorm2d(16)
    net.inplanes = 16
    net.layer1 = net._make_layer(BasicBlock, 16, 1)
    net.layer2 = net._make_layer(BasicBlock, 32, 1, stride=2)
    net.layer3 = net._make_layer(BasicBlock, 64, 1, stride=2)
    net.layer4 = net._make_layer(BasicBlock, 64, 1, stride=2)
    net.fc = torch.nn.Linear(64, classes)
    return net


def export_small_resnet():
    import torch

    torch.manual_seed(0)
    net = small_resnet(1000)
    net.train()
    torch.onnx.export(net, torch.zeros(2, 3, 32, 32), model_path, input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}}, opset_version=13,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
    # The training export gives BatchNormalization its old training outputs;
    # with only Y it is the inference node a pretrained model file has.
    m = onnx.load(model_path)
    for n in m.graph.node:
        if n.op_type == "BatchNormalization":
            del n.output[1:]
    onnx.checker.check_model(m, full_check=True)
    onnx.save(m, model_path)


try:
    export_small_resnet()
except ImportError as e:
    print(f"SKIP: needs torch and torchvision for /usr/bin/python3 ({e})")
    sys.exit(77)


@case
def finetune_learns():
    p = singa("train", "--model", model_path, "--cut", "-1", "--classes", "10", "--data", DATA,
              "--limit-train", "4096", "--limit-test", "500", "--epochs", "1", "--batch", "32",
              "--threads", "2", "--export", out_path, "--json")
    lines = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    assert [line["stage"] for line in lines] == ["finetune"], p.stdout
    result.update(lines[0])
    print(f"    {result}")
    assert "input 3x32x32" in result["note"], result
    # Chance is 0.1; one epoch over 4096 images (128 steps) reaches about 0.75.
    assert result["test_accuracy"] > 0.55, result


def exported_state():
    return {t.name: numpy_helper.to_array(t) for t in onnx.load(out_path).graph.initializer}


@case
def export_has_the_new_head_and_updated_statistics():
    assert os.path.exists(out_path), "no exported model"
    out = onnx.load(out_path)
    onnx.checker.check_model(out, full_check=True)
    got = exported_state()
    orig = {t.name: numpy_helper.to_array(t) for t in onnx.load(model_path).graph.initializer}
    # Sequential names: "0." the imported model (its own names), "1." the new Linear.
    assert got["1.weight"].shape == (10, 64) and got["1.bias"].shape == (10,), sorted(got)
    assert not any(k.endswith("fc.weight") for k in got), "the cut classifier was exported"
    for name in ("conv1.weight", "bn1.running_mean", "bn1.running_var", "layer3.0.bn2.running_var"):
        assert "0." + name in got, f"0.{name} not among the exported initializers"
        assert got["0." + name].shape == orig[name].shape, name
        assert not np.allclose(got["0." + name], orig[name]), f"{name} did not change in training"
    dims = [d.dim_value or d.dim_param for d in out.graph.output[0].type.tensor_type.shape.dim]
    assert dims[1:] == [10], dims


@case
def exported_model_runs_as_pytorch_does():
    import torch

    # The same network in PyTorch with the exported state (eval: running statistics).
    net = small_resnet(10)
    state = {}
    for k, v in exported_state().items():
        state[("fc." + k[2:]) if k.startswith("1.") else k[2:]] = torch.from_numpy(v.copy())
    missing = net.load_state_dict(state, strict=False)
    assert not missing.unexpected_keys and all("num_batches" in k for k in missing.missing_keys), missing
    net.eval()
    x = np.random.default_rng(0).standard_normal((3, 3, 32, 32)).astype(np.float32)
    with torch.no_grad():
        want = net(torch.from_numpy(x)).numpy()
    npy = os.path.join(work, "x.npy")
    np.save(npy, x)
    singa("run", out_path, "--input", f"input={npy}", "-o", work)
    got = numpy_helper.to_array(onnx.load_tensor(os.path.join(work, "output.pb")))
    assert got.shape == (3, 10), got.shape
    assert np.allclose(got, want, atol=1e-4, rtol=1e-4), np.abs(got - want).max()


@case
def bad_input_is_refused_clearly():
    checks = [
        (["--model", model_path, "--cut", "-1"], "go with --classes"),
        (["--classes", "10"], "--model"),
        (["--model", model_path, "--classes", "10", "--cut", "no_such_node"], "no_such_node"),
        (["--model", model_path, "--classes", "10", "--cut", "3"], "--cut"),
        (["--model", model_path, "--classes", "10", "--image-size", "64"], "--image-size"),
        (["--model", model_path, "--classes", "10", "--freeze", "nothing.*"], "nothing.*"),
        (["--model", os.path.join(work, "missing.onnx"), "--classes", "10"], "missing.onnx"),
    ]
    for args, needle in checks:
        p = singa("train", "--data", DATA, "--limit-train", "64", "--limit-test", "64", *args, check=False)
        assert p.returncode != 0, f"{args}: exit 0"
        assert needle in p.stderr, f"{args}: {p.stderr.strip()[-400:]}"
        assert "Traceback" not in p.stderr and "terminate" not in p.stderr, p.stderr


print(f"[  PASSED  ] {passed} tests.")
if failed:
    print(f"[  FAILED  ] {failed} tests.")
sys.exit(1 if failed else 0)
