"""The guides' examples (examples/python/) run as scripts on a few hundred
batches of Fashion-MNIST and reach an accuracy well above chance (0.1).

Each script also fails by itself when the model re-imported from its ONNX
export does not reproduce the trained model's accuracy."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "python"
DATA = os.environ.get("SINGA_FASHION_MNIST", "/usr/share/datasets/fashion-mnist")

pytestmark = pytest.mark.skipif(not os.path.isfile(os.path.join(DATA, "train-images-idx3-ubyte.gz")),
                                reason="Fashion-MNIST is not installed (Debian package fashion-mnist)")


def run(script, *args):
    p = subprocess.run([sys.executable, str(EXAMPLES / script), *args], capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, "%s failed:\n%s\n%s" % (script, p.stdout[-3000:], p.stderr[-3000:])
    lines = [l for l in p.stdout.splitlines() if l.startswith("accuracies:")]
    assert lines, p.stdout
    return lines[-1]


def test_onnx_guide_full_mnist_example(tmp_path):
    # Guide's learning rates (0.001 / 0.01 / 0.07, plain SGD) on 300 batches per stage;
    # its transfer model ends in a ReLU, which costs it some classes.
    out = run("onnx_mnist.py", "--batches", "300", "--seed", "1", "--min-acc", "0.3",
              "--model-path", str(tmp_path / "mnist.onnx"))
    print(out)


def test_sonnx_model_guide_example(tmp_path):
    out = run("sonnx_model.py", "--batches", "300", "--seed", "1", "--min-acc", "0.7",
              "--model-path", str(tmp_path / "cnn.onnx"))
    print(out)
