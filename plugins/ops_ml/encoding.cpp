// encoding.cpp - the category ops: ArrayFeatureExtractor (pick columns),
// OneHotEncoder (integer categories) and LabelEncoder (numeric keys/values).
// String tensors are not yet carried by the plugin ABI, so the string forms of
// these ops are refused with a message that names the op.
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

// Opset 2 forms: keys_int64s or keys_floats mapped to values_int64s or
// values_floats, with default_int64 / default_float for unknown keys.
class LabelEncoder {
 public:
  explicit LabelEncoder(const sdk::Node& node) {
    if (node.opset() < 2 || node.has_attr("keys_strings") || node.has_attr("values_strings") ||
        node.has_attr("classes_strings"))
      no_strings("LabelEncoder", "string keys or values");
    const std::vector<int64_t> ki = node.attr_ints("keys_int64s"), vi = node.attr_ints("values_int64s");
    const std::vector<float> kf = node.attr_floats("keys_floats"), vf = node.attr_floats("values_floats");
    if (ki.empty() == kf.empty()) node.fail("give exactly one of keys_int64s and keys_floats");
    if (vi.empty() == vf.empty()) node.fail("give exactly one of values_int64s and values_floats");
    int_keys_ = !ki.empty();
    int_values_ = !vi.empty();
    const size_t n = int_keys_ ? ki.size() : kf.size();
    check_len(node, int_values_ ? "values_int64s" : "values_floats", int_values_ ? vi.size() : vf.size(), n);
    for (size_t i = 0; i < n; ++i) {
      const double k = int_keys_ ? double(ki[i]) : double(kf[i]);
      if (std::isnan(k)) node.fail("keys_floats[" + std::to_string(i) + "] is NaN");
      // Doubles hold both key kinds exactly; int64 keys beyond 2^53 would
      // collide, so they are refused.
      if (int_keys_ && (ki[i] > (int64_t(1) << 53) || ki[i] < -(int64_t(1) << 53)))
        node.fail("keys_int64s[" + std::to_string(i) + "] is beyond 2^53");
      map_[k] = int_values_ ? double(vi[i]) : double(vf[i]);
    }
    default_ = int_values_ ? double(node.attr_int("default_int64", -1)) : double(node.attr_float("default_float", -0.0f));
  }

  void compute(sdk::Context& ctx) const {
    const sdk::Tensor x = ctx.input(0);
    const int32_t want = int_keys_ ? SINGA_ONNX_INT64 : SINGA_ONNX_FLOAT;
    if (x.dtype() != want)
      sdk::fail(std::string("LabelEncoder: X is ") + sdk::dtype_name(x.dtype()) + " but the keys are " +
                sdk::dtype_name(want));
    const sdk::Tensor y = ctx.output(0, x.shape(), int_values_ ? SINGA_ONNX_INT64 : SINGA_ONNX_FLOAT);
    const int64_t n = x.numel();
    ctx.parallel_for(n, kGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const double k = int_keys_ ? double(x.data<int64_t>()[i]) : double(x.data<float>()[i]);
        double v = default_;
        if (!std::isnan(k)) {
          auto it = map_.find(k);
          if (it != map_.end()) v = it->second;
        }
        if (int_values_) y.data<int64_t>()[i] = int64_t(v);
        else y.data<float>()[i] = float(v);
      }
    });
  }

 private:
  bool int_keys_ = true, int_values_ = true;
  std::map<double, double> map_;
  double default_ = 0;
};

}  // namespace

void register_encoding(sdk::Registrar& reg) {
  reg.kernel<ArrayFeatureExtractor>(kDomain, "ArrayFeatureExtractor", 1, kLastOpset, "cpu",
                                    {{"T", 0, kFeatureTypes | sdk::bit(SINGA_ONNX_STRING)}});
  reg.kernel<OneHotEncoder>(kDomain, "OneHotEncoder", 1, kLastOpset, "cpu",
                            {{"T", 0, kFeatureTypes | sdk::bit(SINGA_ONNX_STRING)}});
  // Opset 1 has only string<->int64 maps; its kernel exists to refuse them
  // with a message about strings rather than about a missing opset.
  reg.kernel<LabelEncoder>(kDomain, "LabelEncoder", 1, 1, "cpu", {});
  reg.kernel<LabelEncoder>(kDomain, "LabelEncoder", 2, kLastOpset, "cpu",
                           {{"T1", 0, sdk::bit(SINGA_ONNX_INT64) | sdk::bit(SINGA_ONNX_FLOAT) | sdk::bit(SINGA_ONNX_STRING)}});
}

}  // namespace ml
}  // namespace ops
}  // namespace singa
