"""Data-parallel training with singa.opt.DistOpt, as SINGA's guide writes it.

    mpirun -np 2 python examples/python/dist_train.py --dist-option fp32
    python examples/python/dist_train.py            # one process works too

Each rank reads its own shard of Fashion-MNIST (a rank-strided slice), trains
a small MLP at --batch images per rank (the global batch is world_size x
--batch), and the ranks' accuracy counts are summed with all_reduce. Rank 0
alone prints.
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fashion_mnist import load_dataset  # noqa: E402

from singa import autograd, layer, model, opt, tensor  # noqa: E402


class MLP(model.Model):
    def __init__(self, classes=10):
        super().__init__()
        self.fc1 = layer.Linear(128)
        self.fc2 = layer.Linear(classes)

    def forward(self, x):
        return self.fc2(autograd.relu(self.fc1(autograd.flatten(x))))

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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dist-option", default="fp32",
                    choices=["fp32", "fp16", "partialUpdate", "sparseTopK", "sparseThreshold"])
    ap.add_argument("--spars", type=float, default=0.05)
    ap.add_argument("--batch", type=int, default=64, help="images per rank and step")
    ap.add_argument("--steps", type=int, default=300, help="training steps (each rank)")
    ap.add_argument("--lr", type=float, default=0.05)
    args = ap.parse_args()

    sgd = opt.DistOpt(opt.SGD(lr=args.lr, momentum=0.9, weight_decay=1e-5))
    rank, world = sgd.global_rank, sgd.world_size

    train_x, train_y, valid_x, valid_y = load_dataset()
    # This rank's shard: every world-th image, starting at its rank.
    train_x, train_y = train_x[rank::world] / 255.0, train_y[rank::world].astype(np.int64)
    valid_x, valid_y = valid_x[rank::world] / 255.0, valid_y[rank::world].astype(np.int64)

    np.random.seed(0)  # the same initial weights everywhere (DistOpt also copies rank 0's at its first step)
    m = MLP()
    m.set_optimizer(sgd)
    m.compile([tensor.PlaceHolder((args.batch, 1, 28, 28))], is_train=True)

    eye = np.eye(10, dtype=np.float32)
    n = len(train_x) // args.batch
    for step in range(args.steps):
        k = step % n
        x = tensor.from_numpy(np.ascontiguousarray(train_x[k * args.batch:(k + 1) * args.batch], dtype=np.float32))
        y = tensor.from_numpy(eye[train_y[k * args.batch:(k + 1) * args.batch]])
        _, loss = m(x, y, args.dist_option, args.spars)
        if rank == 0 and step % 50 == 0:
            print("step %d  loss %.4f" % (step, float(tensor.to_numpy(loss).reshape(-1)[0])), flush=True)

    if args.dist_option == "partialUpdate":
        sgd.average_parameters()  # all ranks evaluate the same model
    m.eval()
    correct = 0
    for k in range(0, len(valid_x), 500):
        out = tensor.to_numpy(m(tensor.from_numpy(np.ascontiguousarray(valid_x[k:k + 500], dtype=np.float32))))
        correct += int((np.argmax(out, axis=1) == valid_y[k:k + 500]).sum())
    totals = sgd.all_reduce(np.array([correct, len(valid_x)], dtype=np.int64))
    if rank == 0:
        print("%s on %d rank(s): validation accuracy %.4f" % (args.dist_option, world, totals[0] / totals[1]))


if __name__ == "__main__":
    main()
