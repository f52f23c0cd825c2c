"""The examples' data loader: Debian's Fashion-MNIST (package fashion-mnist),
read from the same IDX files the SINGA guide downloads for MNIST (there is
no network here, and Fashion-MNIST has MNIST's format and shapes).

Set SINGA_FASHION_MNIST to another folder holding the four .gz files to use
other data of that format (e.g. MNIST itself).
"""

import codecs
import gzip
import os

import numpy as np

DATA_DIR = os.environ.get("SINGA_FASHION_MNIST", "/usr/share/datasets/fashion-mnist")


def get_int(b):
    return int(codecs.encode(b, "hex"), 16)


def read_label_file(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    assert get_int(data[:4]) == 2049, "%s is not an IDX label file" % path
    length = get_int(data[4:8])
    return np.frombuffer(data, dtype=np.uint8, offset=8).reshape((length))


def read_image_file(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    assert get_int(data[:4]) == 2051, "%s is not an IDX image file" % path
    length = get_int(data[4:8])
    num_rows = get_int(data[8:12])
    num_cols = get_int(data[12:16])
    return np.frombuffer(data, dtype=np.uint8, offset=16).reshape((length, 1, num_rows, num_cols))


def check_exist(name):
    """The path of data file `name`, or a clear error naming what to install."""
    path = os.path.join(DATA_DIR, name)
    if not os.path.isfile(path):
        raise FileNotFoundError("%s is missing: install Debian's fashion-mnist package "
                                "or point SINGA_FASHION_MNIST at a folder with the IDX .gz files" % path)
    return path


def load_dataset():
    """train_x [60000, 1, 28, 28], train_y [60000], valid_x, valid_y (float32), as the guide's load_dataset."""
    train_x = read_image_file(check_exist("train-images-idx3-ubyte.gz")).astype(np.float32)
    train_y = read_label_file(check_exist("train-labels-idx1-ubyte.gz")).astype(np.float32)
    valid_x = read_image_file(check_exist("t10k-images-idx3-ubyte.gz")).astype(np.float32)
    valid_y = read_label_file(check_exist("t10k-labels-idx1-ubyte.gz")).astype(np.float32)
    return train_x, train_y, valid_x, valid_y
