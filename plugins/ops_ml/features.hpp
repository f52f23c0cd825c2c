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

// A classifier's labels: integers (the `ints_name` attribute) or strings
// (classlabels_strings). Kernels pick a label by index; operator[] gives the
// integer label, or the index itself for string labels, which emit() then
// turns into text when it writes the label output.
class ClassLabels {
 public:
  ClassLabels(const sdk::Node& node, const char* ints_name);
  size_t size() const { return strings_.empty() ? ints_.size() : strings_.size(); }
  int64_t operator[](size_t i) const { return strings_.empty() ? ints_[i] : int64_t(i); }
  // Writes output `out` (shape [rows]) from what operator[] gave for each row.
  void emit(const sdk::Context& ctx, size_t out, const std::vector<int64_t>& picked) const;

 private:
  std::vector<int64_t> ints_;
  std::vector<std::string> strings_;
};

// Throws unless `n` equals `want`, naming the attribute.
void check_len(const sdk::Node& node, const char* attr, size_t n, size_t want);

}  // namespace ml
}  // namespace ops
}  // namespace singa
#endif
