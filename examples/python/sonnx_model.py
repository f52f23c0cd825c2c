"""SINGA 3.2's ONNX guide with sonnx.SONNXModel: inference, re-training and
transfer learning of an ONNX model, with the guide's classes as written.

The guide starts from "PATH/To/ONNX/MODEL"; this script first makes one: a
CNN written with singa.model / singa.layer (SINGA 3's style) is trained for
a few batches and exported with sonnx.to_onnx. Then:

1. inference: MyModel(onnx_model), compile(is_train=False), forward;
2. re-training: train_one_batch with the guide's dist_option branches,
   opt.SGD(lr=0.005, momentum=0.9, weight_decay=1e-5), compile(is_train=True);
3. transfer learning: forward(*x, last_layers=-3) and an appended
   layer.Linear (500 -> 10 here: the CNN's features and Fashion-MNIST's classes,
   where the guide's ImageNet model has 1000 -> 3).

Changes from the guide: Debian's Fashion-MNIST instead of the guide's data,
the default (CPU) device, and options for CI:

    python3 examples/python/sonnx_model.py --batches 300 --min-acc 0.6
"""

import argparse
import sys

import numpy as np
import onnx

from singa import autograd
from singa import device
from singa import layer
from singa import model
from singa import opt
from singa import sonnx
from singa import tensor

from fashion_mnist import load_dataset


# ---- an ONNX model to start from (SINGA 3's model API) ----

class CNN(model.Model):
    def __init__(self, num_classes=10):
        super(CNN, self).__init__()
        self.conv1 = layer.Conv2d(20, 5, padding=0, activation="RELU")
        self.conv2 = layer.Conv2d(50, 5, padding=0, activation="RELU")
        self.linear1 = layer.Linear(500)
        self.linear2 = layer.Linear(num_classes)
        self.pooling1 = layer.MaxPool2d(2, 2, padding=0)
        self.pooling2 = layer.MaxPool2d(2, 2, padding=0)
        self.relu = layer.ReLU()
        self.flatten = layer.Flatten()
        self.softmax_cross_entropy = layer.SoftMaxCrossEntropy()

    def forward(self, x):
        y = self.conv1(x)
        y = self.pooling1(y)
        y = self.conv2(y)
        y = self.pooling2(y)
        y = self.flatten(y)
        y = self.linear1(y)
        y = self.relu(y)
        y = self.linear2(y)
        return y

    def train_one_batch(self, x, y, dist_option="fp32", spars=None):
        out = self.forward(x)
        loss = self.softmax_cross_entropy(out, y)
        self.optimizer(loss)
        return out, loss


# ---- the guide's classes ----

class InferModel(sonnx.SONNXModel):

    def __init__(self, onnx_model):
        super(InferModel, self).__init__(onnx_model)

    def forward(self, *x):
        y = super(InferModel, self).forward(*x)
        # Since SINGA model returns the output as a list,
        # if there is only one output,
        # you just need to take the first element.
        return y[0]

    def train_one_batch(self, x, y):
        pass


class RetrainModel(sonnx.SONNXModel):

    def __init__(self, onnx_model):
        super(RetrainModel, self).__init__(onnx_model)

    def forward(self, *x):
        y = super(RetrainModel, self).forward(*x)
        return y[0]

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

    def set_optimizer(self, optimizer):
        self.optimizer = optimizer


class TransferModel(sonnx.SONNXModel):

    def __init__(self, onnx_model):
        super(TransferModel, self).__init__(onnx_model)
        self.linear = layer.Linear(500, 10)

    def forward(self, *x):
        # cut off after the last third layer
        # and append a linear layer
        y = super(TransferModel, self).forward(*x, last_layers=-3)[0]
        y = self.linear(y)
        return y

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

    def set_optimizer(self, optimizer):
        self.optimizer = optimizer


# ---- training and evaluation loops (SINGA's examples/onnx/training style) ----

def accuracy(pred, target):
    return float((np.argmax(pred, axis=1) == target).sum()) / len(target)


def run_training(m, train_x, train_y, batches, batch_size, dev, dist_option="fp32", spars=None):
    m.train()
    for b in range(batches):
        x = train_x[b * batch_size:(b + 1) * batch_size]
        y = train_y[b * batch_size:(b + 1) * batch_size]
        tx = tensor.Tensor(device=dev, data=x)
        ty = tensor.Tensor(device=dev, data=y)
        out, loss = m(tx, ty, dist_option, spars)
        if b % 100 == 0:
            print("batch %d: loss %.4f acc %.3f" % (b, tensor.to_numpy(loss)[0],
                                                     accuracy(tensor.to_numpy(out), y)))


def evaluate(m, valid_x, valid_y, batch_size, dev):
    m.eval()
    n = valid_x.shape[0] // batch_size
    correct = 0.0
    for b in range(n):
        x = tensor.Tensor(device=dev, data=valid_x[b * batch_size:(b + 1) * batch_size])
        y = m.forward(x)
        correct += accuracy(tensor.to_numpy(y), valid_y[b * batch_size:(b + 1) * batch_size])
    return correct / n


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batches", type=int, default=300, help="training batches per stage")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--min-acc", type=float, default=0.0, help="fail when a test accuracy is below this")
    ap.add_argument("--seed", type=int, default=None, help="seed the weight initialisation")
    ap.add_argument("--model-path", default="/tmp/sonnx_model_cnn.onnx")
    args = ap.parse_args()
    if args.seed is not None:
        layer.manual_seed(args.seed)

    dev = device.get_default_device()  # the guide: device.create_cuda_gpu()
    train_x, train_y, valid_x, valid_y = load_dataset()
    train_x, valid_x = train_x / 255, valid_x / 255
    train_y, valid_y = train_y.astype(np.int32), valid_y.astype(np.int32)
    bs = args.batch_size
    batches = min(args.batches, train_x.shape[0] // bs)
    accs = {}

    # An ONNX model to start from.
    cnn = CNN()
    cnn.set_optimizer(opt.SGD(lr=0.05, momentum=0.9))
    tx = tensor.PlaceHolder((bs, 1, 28, 28), device=dev)
    cnn.compile([tx], is_train=True, use_graph=False, sequential=False)
    run_training(cnn, train_x, train_y, batches, bs, dev)
    accs["cnn"] = evaluate(cnn, valid_x, valid_y, bs, dev)
    autograd.training = True
    x = tensor.Tensor(device=dev, data=valid_x[:bs])
    onnx.save(sonnx.to_onnx([x], [cnn.forward(x)]), args.model_path)
    autograd.training = False
    onnx_model = onnx.load(args.model_path)

    # 1. Inference.
    x = tensor.PlaceHolder((bs, 1, 28, 28), device=dev)
    m = InferModel(onnx_model)
    m.compile([x], is_train=False, use_graph=True, sequential=True)
    accs["inference"] = evaluate(m, valid_x, valid_y, bs, dev)

    # 2. Re-training.
    m = RetrainModel(onnx_model)
    sgd = opt.SGD(lr=0.005, momentum=0.9, weight_decay=1e-5)
    m.set_optimizer(sgd)
    m.compile([x], is_train=True, use_graph=True, sequential=True)
    run_training(m, train_x[-batches * bs:], train_y[-batches * bs:], batches, bs, dev)
    accs["re-trained"] = evaluate(m, valid_x, valid_y, bs, dev)

    # 3. Transfer learning.
    m = TransferModel(onnx_model)
    sgd = opt.SGD(lr=0.005, momentum=0.9, weight_decay=1e-5)
    m.set_optimizer(sgd)
    m.compile([x], is_train=True, use_graph=True, sequential=True)
    run_training(m, train_x, train_y, batches, bs, dev)
    accs["transfer-learned"] = evaluate(m, valid_x, valid_y, bs, dev)

    print("accuracies: " + ", ".join("%s %.4f" % kv for kv in accs.items()))
    if abs(accs["inference"] - accs["cnn"]) > 1e-3:
        sys.exit("the imported model's accuracy %.4f differs from the trained model's %.4f" %
                 (accs["inference"], accs["cnn"]))
    low = {k: v for k, v in accs.items() if v < args.min_acc}
    if low:
        sys.exit("accuracy below %.2f: %s" % (args.min_acc, low))


if __name__ == "__main__":
    main()
