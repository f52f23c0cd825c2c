// features.hpp - what every ai.onnx.ml estimator shares: reading the feature
// matrix X, real-valued attributes that opset 3 may give as tensors, and the
// class-label attributes of classifiers.
#ifndef SINGA_OPS_ML_FEATURES_HPP
#define SINGA_OPS_ML_FEATURES_HPP

#include <singa/kernel.hpp>

#include <string>
#include <vector>

namespace singa {
namespace ops {
namespace ml {

// X as a row-major [rows, cols] matrix of doubles. The estimators take X of
// shape [N, C] or [C] (one row). Doubles hold every float, int32 and (up to
// 2^53) int64 feature exactly, so comparisons with float thresholds decide
// exactly as they would in the input's own type.
struct Features {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<double> data;
  const double* row(int64_t r) const { return data.data() + r * cols; }
};

Features read_features(const sdk::Tensor& x, const std::string& op);

// The attribute `name` (floats) or, from opset 3 on, `name`_as_tensor (a float
// or double tensor); giving both is an error. Absent: empty.
std::vector<double> attr_reals(const sdk::Node& node, const std::string& name);

// classlabels_int64s of a classifier (`ints_name` lets LinearClassifier and
// SVMClassifier pass their `classlabels_ints`). String labels make a string
// output, which this ABI version cannot carry: refused with a message naming
// the op.
std::vector<int64_t> int_class_labels(const sdk::Node& node, const char* ints_name);

// Throws unless `n` equals `want`, naming the attribute.
void check_len(const sdk::Node& node, const char* attr, size_t n, size_t want);

}  // namespace ml
}  // namespace ops
}  // namespace singa
#endif
