// dataset.hpp - reading IDX files (the MNIST family's format), gzipped or
// not, and batching examples for training.
#ifndef SINGA_DATASET_HPP
#define SINGA_DATASET_HPP

#include <singa/tensor.hpp>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace singa {
namespace data {

// One IDX file as a tensor of its element type (uint8, int8, int16, int32,
// float or double) and shape. Files ending in .gz are decompressed.
// Errors name the file and what is wrong (magic, truncation).
Tensor read_idx(const std::string& path);

// Images and labels of an MNIST-style split: images as float32 [N, 1, H, W]
// scaled to [0, 1], labels as int64 [N].
struct Split {
  Tensor images, labels;
  int64_t size() const { return labels.defined() ? labels.numel() : 0; }
};
// Reads DIR/<prefix>-images-idx3-ubyte[.gz] and DIR/<prefix>-labels-idx1-ubyte[.gz]
// (prefix "train" or "t10k"); `limit` > 0 keeps the first `limit` examples.
Split load_mnist(const std::string& dir, const std::string& prefix, int64_t limit = 0);

// Normalises images in place: (x - mean) / stddev.
void normalize(Tensor& images, float mean, float stddev);

// Float images [N, c, h, w] resized to [N, channels, height, width]:
// bilinear, sampling at pixel centres (ONNX Resize's half_pixel, PyTorch's
// align_corners=False), each channel of a single-channel image repeated (a
// grey image for a model that expects RGB).
Tensor resize_images(const Tensor& images, int64_t channels, int64_t height, int64_t width);

// Rows [begin, end) of `order` gathered from a split (a batch).
Split batch(const Split& s, const std::vector<int64_t>& order, int64_t begin, int64_t end);

// 0..n-1, shuffled with `rng` when `shuffle`.
std::vector<int64_t> permutation(int64_t n, std::mt19937_64& rng, bool shuffle = true);

}  // namespace data
}  // namespace singa
#endif
