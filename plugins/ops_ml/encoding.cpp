// encoding.cpp - the category ops: ArrayFeatureExtractor (pick columns) and
// OneHotEncoder (integer categories); LabelEncoder is in label_encoder.cpp.
// The string forms of these two ops are refused with a message that names the
// op.
#include "features.hpp"
#include "registry.hpp"

#include <cmath>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace singa {
namespace ops {
namespace ml {
namespace {

constexpr int64_t kGrain = 4096;

[[noreturn]] void no_strings(const std::string& op, const std::string& what) {
  sdk::fail(op + ": " + what + " need string tensors, which the plugin ABI cannot carry yet; only the numeric form is "
                               "supported");
}

class ArrayFeatureExtractor {
 public:
  explicit ArrayFeatureExtractor(const sdk::Node&) {}

  void compute(sdk::Context& ctx) const {
    const sdk::Tensor x = ctx.input(0), idx = ctx.input(1);
    if (x.dtype() == SINGA_ONNX_STRING) no_strings("ArrayFeatureExtractor", "string features");
    if (x.ndim() < 1) sdk::fail("ArrayFeatureExtractor: X must have rank >= 1");
    if (idx.dtype() != SINGA_ONNX_INT64)
      sdk::fail(std::string("ArrayFeatureExtractor: the indices must be int64, got ") + sdk::dtype_name(idx.dtype()));
    const int64_t cols = x.dim(-1), k = idx.numel(), rows = cols ? x.numel() / cols : 0;
    const int64_t* ip = idx.data<int64_t>();
    for (int64_t i = 0; i < k; ++i)
      if (ip[i] < 0 || ip[i] >= cols)
        sdk::fail("ArrayFeatureExtractor: index " + std::to_string(ip[i]) + " (position " + std::to_string(i) +
                  ") is outside the last axis of X, which has " + std::to_string(cols) + " entries");
    // A vector X is one row, so the result is [1, k] as in other runtimes.
    sdk::Shape shape = x.shape();
    if (shape.size() == 1) shape.insert(shape.begin(), 1);
    shape.back() = k;
    const sdk::Tensor y = ctx.output(0, shape, x.dtype());
    sdk::dispatch(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* p = x.data<T>();
      T* q = y.data<T>();
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < k; ++i) q[r * k + i] = p[r * cols + ip[i]];
    }, kFeatureTypes);
  }
};

class OneHotEncoder {
 public:
  explicit OneHotEncoder(const sdk::Node& node) : zeros_(node.attr_int("zeros", 1) != 0) {
    if (node.has_attr("cats_strings")) no_strings("OneHotEncoder", "string categories (cats_strings)");
    const std::vector<int64_t> cats = node.attr_ints("cats_int64s");
    if (cats.empty()) node.fail("attribute 'cats_int64s' is missing or empty");
    for (size_t i = 0; i < cats.size(); ++i)
      if (!index_.emplace(cats[i], int64_t(i)).second)
        node.fail("cats_int64s lists category " + std::to_string(cats[i]) + " twice");
    n_ = int64_t(cats.size());
  }

  void compute(sdk::Context& ctx) const {
    const sdk::Tensor x = ctx.input(0);
    if (x.dtype() == SINGA_ONNX_STRING) no_strings("OneHotEncoder", "string inputs");
    sdk::Shape shape = x.shape();
    shape.push_back(n_);
    float* y = ctx.output(0, shape, SINGA_ONNX_FLOAT).data<float>();
    const int64_t n = x.numel();
    std::fill(y, y + n * n_, 0.0f);
    sdk::dispatch(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* p = x.data<T>();
      for (int64_t i = 0; i < n; ++i) {
        // Float inputs name categories by their integer value.
        const int64_t v = int64_t(p[i]);
        auto it = index_.find(v);
        if (it != index_.end()) {
          y[i * n_ + it->second] = 1.0f;
        } else if (!zeros_) {
          sdk::fail("OneHotEncoder: value " + std::to_string(v) + " at position " + std::to_string(i) +
                    " is not a known category and zeros=0 forbids unknown values");
        }
      }
    }, kFeatureTypes);
  }

 private:
  bool zeros_;
  int64_t n_ = 0;
  std::unordered_map<int64_t, int64_t> index_;
};

}  // namespace

void register_encoding(sdk::Registrar& reg) {
  reg.kernel<ArrayFeatureExtractor>(kDomain, "ArrayFeatureExtractor", 1, kLastOpset, "cpu",
                                    {{"T", 0, kFeatureTypes | sdk::bit(SINGA_ONNX_STRING)}});
  reg.kernel<OneHotEncoder>(kDomain, "OneHotEncoder", 1, kLastOpset, "cpu",
                            {{"T", 0, kFeatureTypes | sdk::bit(SINGA_ONNX_STRING)}});
}

}  // namespace ml
}  // namespace ops
}  // namespace singa
