// scaling.cpp - the elementwise preprocessing ops: Normalizer, Scaler,
// Binarizer and Imputer.
#include "features.hpp"
#include "registry.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace singa {
namespace ops {
namespace ml {
namespace {

constexpr int64_t kGrain = 4096;

// The last axis is the feature axis; a rank-0 tensor is one feature.
int64_t last_dim(const sdk::Tensor& x) { return x.ndim() == 0 ? 1 : x.dim(-1); }

// A per-feature parameter list: one value for all features or one each.
void check_per_feature(const std::vector<double>& v, int64_t cols, const std::string& attr) {
  if (v.size() != 1 && int64_t(v.size()) != cols)
    sdk::fail("attribute '" + attr + "' has " + std::to_string(v.size()) + " values; X has " + std::to_string(cols) +
              " features (give 1 or " + std::to_string(cols) + ")");
}

class Normalizer {
 public:
  explicit Normalizer(const sdk::Node& node) {
    const std::string n = node.attr_string("norm", "MAX");
    if (n == "MAX") norm_ = kMax;
    else if (n == "L1") norm_ = kL1;
    else if (n == "L2") norm_ = kL2;
    else node.fail("norm '" + n + "' is not one of MAX, L1, L2");
  }

  void compute(sdk::Context& ctx) const {
    const Features f = read_features(ctx.input(0), "Normalizer");
    float* y = ctx.output(0, ctx.input(0).shape(), SINGA_ONNX_FLOAT).data<float>();
    ctx.parallel_for(f.rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, f.cols)), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const double* x = f.row(r);
        double d = 0;
        if (norm_ == kMax) {
          // The spec's MAX divides by the row's largest value (not its largest
          // magnitude).
          d = -INFINITY;
          for (int64_t c = 0; c < f.cols; ++c) d = std::max(d, x[c]);
        } else {
          for (int64_t c = 0; c < f.cols; ++c) d += norm_ == kL1 ? std::fabs(x[c]) : x[c] * x[c];
          if (norm_ == kL2) d = std::sqrt(d);
        }
        // A zero row stays zero rather than becoming NaN.
        if (d == 0 || std::isinf(d)) d = 1;
        for (int64_t c = 0; c < f.cols; ++c) y[r * f.cols + c] = float(x[c] / d);
      }
    });
  }

 private:
  enum { kMax, kL1, kL2 } norm_ = kMax;
};

class Scaler {
 public:
  explicit Scaler(const sdk::Node& node) {
    const std::vector<float> o = node.attr_floats("offset"), s = node.attr_floats("scale");
    offset_.assign(o.begin(), o.end());
    scale_.assign(s.begin(), s.end());
    if (offset_.empty()) offset_ = {0.0};
    if (scale_.empty()) scale_ = {1.0};
  }

  void compute(sdk::Context& ctx) const {
    const sdk::Tensor x = ctx.input(0);
    const int64_t cols = last_dim(x), n = x.numel();
    check_per_feature(offset_, cols, "offset");
    check_per_feature(scale_, cols, "scale");
    float* y = ctx.output(0, x.shape(), SINGA_ONNX_FLOAT).data<float>();
    sdk::dispatch(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* p = x.data<T>();
      ctx.parallel_for(n, kGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          const int64_t c = cols ? i % cols : 0;
          const double o = offset_[offset_.size() == 1 ? 0 : size_t(c)];
          const double s = scale_[scale_.size() == 1 ? 0 : size_t(c)];
          y[i] = float((double(p[i]) - o) * s);
        }
      });
    }, kFeatureTypes);
  }

 private:
  std::vector<double> offset_, scale_;
};

class Binarizer {
 public:
  explicit Binarizer(const sdk::Node& node) : threshold_(node.attr_float("threshold", 0.0f)) {}

  void compute(sdk::Context& ctx) const {
    const sdk::Tensor x = ctx.input(0);
    const sdk::Tensor y = ctx.output(0, x.shape(), x.dtype());
    sdk::dispatch(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* p = x.data<T>();
      T* q = y.data<T>();
      ctx.parallel_for(x.numel(), kGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) q[i] = double(p[i]) > threshold_ ? T(1) : T(0);
      });
    }, kFeatureTypes);
  }

 private:
  double threshold_;
};

class Imputer {
 public:
  explicit Imputer(const sdk::Node& node) {
    const std::vector<float> vf = node.attr_floats("imputed_value_floats");
    const std::vector<int64_t> vi = node.attr_ints("imputed_value_int64s");
    if (vf.empty() == vi.empty())
      node.fail("give exactly one of imputed_value_floats and imputed_value_int64s");
    floats_ = !vf.empty();
    if (floats_) values_.assign(vf.begin(), vf.end());
    else values_.assign(vi.begin(), vi.end());
    replaced_float_ = node.attr_float("replaced_value_float", 0.0f);
    replaced_int_ = node.attr_int("replaced_value_int64", 0);
  }

  void compute(sdk::Context& ctx) const {
    const sdk::Tensor x = ctx.input(0);
    const bool x_float = x.dtype() == SINGA_ONNX_FLOAT || x.dtype() == SINGA_ONNX_DOUBLE;
    if (x_float != floats_)
      sdk::fail(std::string("X is ") + sdk::dtype_name(x.dtype()) + " but the imputed values are " +
                (floats_ ? "floats (imputed_value_floats)" : "integers (imputed_value_int64s)"));
    const int64_t cols = last_dim(x);
    check_per_feature(values_, cols, floats_ ? "imputed_value_floats" : "imputed_value_int64s");
    const sdk::Tensor y = ctx.output(0, x.shape(), x.dtype());
    sdk::dispatch(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* p = x.data<T>();
      T* q = y.data<T>();
      const bool nan_marks = floats_ && std::isnan(replaced_float_);
      ctx.parallel_for(x.numel(), kGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          const double v = double(p[i]);
          const bool missing = floats_ ? (nan_marks ? std::isnan(v) : v == double(replaced_float_))
                                       : int64_t(p[i]) == replaced_int_;
          q[i] = missing ? T(values_[values_.size() == 1 ? 0 : size_t(i % cols)]) : p[i];
        }
      });
    }, kFeatureTypes);
  }

 private:
  bool floats_ = true;
  std::vector<double> values_;
  float replaced_float_ = 0;
  int64_t replaced_int_ = 0;
};

}  // namespace

void register_scaling(sdk::Registrar& reg) {
  reg.kernel<Normalizer>(kDomain, "Normalizer", 1, kLastOpset, "cpu", {{"T", 0, kFeatureTypes}});
  reg.kernel<Scaler>(kDomain, "Scaler", 1, kLastOpset, "cpu", {{"T", 0, kFeatureTypes}});
  reg.kernel<Binarizer>(kDomain, "Binarizer", 1, kLastOpset, "cpu", {{"T", 0, kFeatureTypes}});
  reg.kernel<Imputer>(kDomain, "Imputer", 1, kLastOpset, "cpu", {{"T", 0, kFeatureTypes}});
}

}  // namespace ml
}  // namespace ops
}  // namespace singa
