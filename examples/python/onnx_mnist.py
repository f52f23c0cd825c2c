"""The full MNIST example of SINGA's ONNX guide, as the guide writes it:
train a CNN with singa.autograd, export it with sonnx.to_onnx, save it with
onnx.save, load it with sonnx.prepare, run inference, re-train it through
the SingaRep's tensor_map, and transfer-learn with last_layers=-1 and three
appended Linear layers.

Changes from the guide: the data loader reads Debian's Fashion-MNIST
(fashion_mnist.py; no download), the device line uses the default (CPU)
device, the guide's typo `return trans_mode` is `return trans_model`, test()
returns its accuracy, and two options make it fit a CI run:

    python3 examples/python/onnx_mnist.py --batches 300 --min-acc 0.6

--batches caps the batches of each training stage (default: a whole epoch as
in the guide); --min-acc makes the script fail when a test accuracy is lower.
"""

import argparse
import os
import sys

import numpy as np

from singa import device
from singa import tensor
from singa import opt
from singa import autograd
from singa import layer
from singa import sonnx
import onnx

from fashion_mnist import load_dataset

MAX_BATCHES = None  # set from --batches


def to_categorical(y, num_classes):
    y = np.array(y, dtype="int")
    n = y.shape[0]
    categorical = np.zeros((n, num_classes))
    categorical[np.arange(n), y] = 1
    categorical = categorical.astype(np.float32)
    return categorical


class CNN:
    def __init__(self):
        self.conv1 = autograd.Conv2d(1, 20, 5, padding=0)
        self.conv2 = autograd.Conv2d(20, 50, 5, padding=0)
        self.linear1 = autograd.Linear(4 * 4 * 50, 500, bias=False)
        self.linear2 = autograd.Linear(500, 10, bias=False)
        self.pooling1 = autograd.MaxPool2d(2, 2, padding=0)
        self.pooling2 = autograd.MaxPool2d(2, 2, padding=0)

    def forward(self, x):
        y = self.conv1(x)
        y = autograd.relu(y)
        y = self.pooling1(y)
        y = self.conv2(y)
        y = autograd.relu(y)
        y = self.pooling2(y)
        y = autograd.flatten(y)
        y = self.linear1(y)
        y = autograd.relu(y)
        y = self.linear2(y)
        return y


def accuracy(pred, target):
    y = np.argmax(pred, axis=1)
    t = np.argmax(target, axis=1)
    a = y == t
    return np.array(a, "int").sum() / float(len(t))


def batches(x, batch_size):
    n = x.shape[0] // batch_size
    return n if MAX_BATCHES is None else min(n, MAX_BATCHES)


def train(model, x, y, epochs=1, batch_size=64, dev=device.get_default_device()):
    batch_number = batches(x, batch_size)
    for i in range(epochs):
        for b in range(batch_number):
            l_idx = b * batch_size
            r_idx = (b + 1) * batch_size
            x_batch = tensor.Tensor(device=dev, data=x[l_idx:r_idx])
            target_batch = tensor.Tensor(device=dev, data=y[l_idx:r_idx])
            output_batch = model.forward(x_batch)
            # onnx_model = sonnx.to_onnx([x_batch], [y])
            # print('The model is:\n{}'.format(onnx_model))
            loss = autograd.softmax_cross_entropy(output_batch, target_batch)
            accuracy_rate = accuracy(tensor.to_numpy(output_batch), tensor.to_numpy(target_batch))
            sgd = opt.SGD(lr=0.001)
            for p, gp in autograd.backward(loss):
                sgd.update(p, gp)
            sgd.step()
            if b % 1e2 == 0:
                print("acc %6.2f loss, %6.2f" % (accuracy_rate, tensor.to_numpy(loss)[0]))
    print("training completed")
    return x_batch, output_batch


def test(model, x, y, batch_size=64, dev=device.get_default_device()):
    batch_number = x.shape[0] // batch_size
    result = 0
    for b in range(batch_number):
        l_idx = b * batch_size
        r_idx = (b + 1) * batch_size
        x_batch = tensor.Tensor(device=dev, data=x[l_idx:r_idx])
        target_batch = tensor.Tensor(device=dev, data=y[l_idx:r_idx])
        output_batch = model.forward(x_batch)
        result += accuracy(tensor.to_numpy(output_batch), tensor.to_numpy(target_batch))
    print("testing acc %6.2f" % (result / batch_number))
    return result / batch_number


def make_onnx(x, y):
    return sonnx.to_onnx([x], [y])


class Infer:
    def __init__(self, sg_ir):
        self.sg_ir = sg_ir
        for idx, tens in sg_ir.tensor_map.items():
            # allow the tensors to be updated
            tens.requires_grad = True
            tens.stores_grad = True
            sg_ir.tensor_map[idx] = tens

    def forward(self, x):
        return self.sg_ir.run([x])[0]  # we can run one step of inference by feeding input


def re_train(sg_ir, x, y, epochs=1, batch_size=64, dev=device.get_default_device()):
    batch_number = batches(x, batch_size)
    new_model = Infer(sg_ir)
    for i in range(epochs):
        for b in range(batch_number):
            l_idx = b * batch_size
            r_idx = (b + 1) * batch_size
            x_batch = tensor.Tensor(device=dev, data=x[l_idx:r_idx])
            target_batch = tensor.Tensor(device=dev, data=y[l_idx:r_idx])
            output_batch = new_model.forward(x_batch)
            loss = autograd.softmax_cross_entropy(output_batch, target_batch)
            accuracy_rate = accuracy(tensor.to_numpy(output_batch), tensor.to_numpy(target_batch))
            sgd = opt.SGD(lr=0.01)
            for p, gp in autograd.backward(loss):
                sgd.update(p, gp)
            sgd.step()
            if b % 1e2 == 0:
                print("acc %6.2f loss, %6.2f" % (accuracy_rate, tensor.to_numpy(loss)[0]))
    print("re-training completed")
    return new_model


class Trans:
    def __init__(self, sg_ir, last_layers):
        self.sg_ir = sg_ir
        self.last_layers = last_layers
        self.append_linear1 = autograd.Linear(500, 128, bias=False)
        self.append_linear2 = autograd.Linear(128, 32, bias=False)
        self.append_linear3 = autograd.Linear(32, 10, bias=False)

    def forward(self, x):
        y = self.sg_ir.run([x], last_layers=self.last_layers)[0]
        y = self.append_linear1(y)
        y = autograd.relu(y)
        y = self.append_linear2(y)
        y = autograd.relu(y)
        y = self.append_linear3(y)
        y = autograd.relu(y)
        return y


def transfer_learning(sg_ir, x, y, epochs=1, batch_size=64, dev=device.get_default_device()):
    batch_number = batches(x, batch_size)
    trans_model = Trans(sg_ir, -1)
    for i in range(epochs):
        for b in range(batch_number):
            l_idx = b * batch_size
            r_idx = (b + 1) * batch_size
            x_batch = tensor.Tensor(device=dev, data=x[l_idx:r_idx])
            target_batch = tensor.Tensor(device=dev, data=y[l_idx:r_idx])
            output_batch = trans_model.forward(x_batch)
            loss = autograd.softmax_cross_entropy(output_batch, target_batch)
            accuracy_rate = accuracy(tensor.to_numpy(output_batch), tensor.to_numpy(target_batch))
            sgd = opt.SGD(lr=0.07)
            for p, gp in autograd.backward(loss):
                sgd.update(p, gp)
            sgd.step()
            if b % 1e2 == 0:
                print("acc %6.2f loss, %6.2f" % (accuracy_rate, tensor.to_numpy(loss)[0]))
    print("transfer-learning completed")
    return trans_model


def main():
    global MAX_BATCHES
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batches", type=int, default=None, help="at most this many batches per training stage")
    ap.add_argument("--min-acc", type=float, default=0.0, help="fail when a test accuracy is below this")
    ap.add_argument("--seed", type=int, default=None, help="seed the weight initialisation")
    ap.add_argument("--model-path", default=os.path.join("/", "tmp", "mnist.onnx"))
    args = ap.parse_args()
    if args.seed is not None:
        layer.manual_seed(args.seed)
    MAX_BATCHES = args.batches

    # create device
    # dev = device.create_cuda_gpu()
    dev = device.get_default_device()
    # create model
    model = CNN()
    # load data
    train_x, train_y, valid_x, valid_y = load_dataset()
    # normalization
    train_x = train_x / 255
    valid_x = valid_x / 255
    train_y = to_categorical(train_y, 10)
    valid_y = to_categorical(valid_y, 10)
    # do training
    autograd.training = True
    x, y = train(model, train_x, train_y, dev=dev)
    onnx_model = make_onnx(x, y)
    # print('The model is:\n{}'.format(onnx_model))
    # Save the ONNX model
    model_path = args.model_path
    onnx.save(onnx_model, model_path)
    print("The model is saved.")
    autograd.training = False
    accs = {"trained": test(model, valid_x, valid_y, dev=dev)}

    # load the ONNX model
    onnx_model = onnx.load(model_path)
    sg_ir = sonnx.prepare(onnx_model, device=dev)  # parse and initiate to a singa model
    # inference
    autograd.training = False
    print("The inference result is:")
    accs["inference"] = test(Infer(sg_ir), valid_x, valid_y, dev=dev)

    # load the ONNX model
    onnx_model = onnx.load(model_path)
    sg_ir = sonnx.prepare(onnx_model, device=dev)
    # re-training
    autograd.training = True
    new_model = re_train(sg_ir, train_x, train_y, dev=dev)
    autograd.training = False
    accs["re-trained"] = test(new_model, valid_x, valid_y, dev=dev)

    # load the ONNX model
    onnx_model = onnx.load(model_path)
    sg_ir = sonnx.prepare(onnx_model, device=dev)
    # transfer-learning
    autograd.training = True
    new_model = transfer_learning(sg_ir, train_x, train_y, dev=dev)
    autograd.training = False
    accs["transfer-learned"] = test(new_model, valid_x, valid_y, dev=dev)

    print("accuracies: " + ", ".join("%s %.4f" % kv for kv in accs.items()))
    # The imported model must compute what the trained one did.
    if abs(accs["inference"] - accs["trained"]) > 1e-3:
        sys.exit("the imported model's accuracy %.4f differs from the trained model's %.4f" %
                 (accs["inference"], accs["trained"]))
    low = {k: v for k, v in accs.items() if v < args.min_acc}
    if low:
        sys.exit("accuracy below %.2f: %s" % (args.min_acc, low))


if __name__ == "__main__":
    main()
