#!/usr/bin/python3
"""Training images/s of the seed CNN in PyTorch (Debian's python3-torch), the
reference for bench/train_bench.sh. Same model, batch, optimizer and data as
`singa train --stages train`: Fashion-MNIST, SGD with momentum 0.9.

Usage: train_torch.py --threads N [--batch 64] [--images 12800] [--data DIR]
Prints one JSON line: {"threads": N, "images_per_second": X, ...}.
"""
import argparse
import gzip
import json
import os
import struct
import time

import numpy as np
import torch
import torch.nn as nn


def read_idx(path):
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
        data = f.read()
    rank = data[3]
    shape = struct.unpack(">" + "I" * rank, data[4:4 + 4 * rank])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * rank).reshape(shape)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--images", type=int, default=12800)
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    x = read_idx(os.path.join(a.data, "train-images-idx3-ubyte.gz"))[: a.images]
    y = read_idx(os.path.join(a.data, "train-labels-idx1-ubyte.gz"))[: a.images]
    x = torch.from_numpy(((x.astype(np.float32) / 255.0 - 0.2860) / 0.3530)[:, None])
    y = torch.from_numpy(y.astype(np.int64))
    model = nn.Sequential(
        nn.Conv2d(1, 20, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(20, 50, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(800, 500), nn.ReLU(), nn.Linear(500, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    perm = torch.randperm(len(x))

    def step(i):
        idx = perm[i:i + a.batch]
        opt.zero_grad()
        loss = loss_fn(model(x[idx]), y[idx])
        loss.backward()
        opt.step()
        return loss

    for i in range(0, 10 * a.batch, a.batch):  # warm-up
        step(i)
    t0 = time.perf_counter()
    seen = 0
    for i in range(0, len(x), a.batch):
        step(i)
        seen += min(a.batch, len(x) - i)
    dt = time.perf_counter() - t0
    print(json.dumps({"framework": "pytorch " + torch.__version__, "threads": a.threads, "batch": a.batch,
                      "images": seen, "seconds": dt, "images_per_second": seen / dt}))


if __name__ == "__main__":
    main()
