// linear.cpp - LinearRegressor and LinearClassifier: scores = X * W^T + b.
#include "features.hpp"
#include "post_transform.hpp"
#include "registry.hpp"

#include <algorithm>
#include <vector>

namespace singa {
namespace ops {
namespace ml {
namespace {

constexpr int64_t kRowGrain = 256;

// W is [outputs, C] row-major as the attribute lists it; C comes from the
// coefficient count, so a mismatched X is caught at run time.
struct Affine {
  std::vector<double> w, b;
  int64_t outputs = 0, cols = 0;

  Affine(const sdk::Node& node, int64_t n_out) : outputs(n_out) {
    const std::vector<float> cw = node.attr_floats("coefficients");
    const std::vector<float> cb = node.attr_floats("intercepts");
    if (n_out <= 0) node.fail("the number of outputs must be positive");
    if (cw.empty() || cw.size() % size_t(n_out) != 0)
      node.fail("coefficients has " + std::to_string(cw.size()) + " values, not a positive multiple of " +
                std::to_string(n_out) + " outputs");
    if (!cb.empty() && int64_t(cb.size()) != n_out)
      node.fail("intercepts has " + std::to_string(cb.size()) + " values, expected " + std::to_string(n_out));
    w.assign(cw.begin(), cw.end());
    b = cb.empty() ? std::vector<double>(size_t(n_out), 0.0) : std::vector<double>(cb.begin(), cb.end());
    cols = int64_t(cw.size()) / n_out;
  }

  void check(const Features& f) const {
    if (f.cols != cols)
      sdk::fail("X has " + std::to_string(f.cols) + " features but the coefficients expect " + std::to_string(cols));
  }

  void scores(const double* x, double* s) const {
    for (int64_t k = 0; k < outputs; ++k) {
      const double* wk = w.data() + k * cols;
      double acc = b[size_t(k)];
      for (int64_t c = 0; c < cols; ++c) acc += wk[c] * x[c];
      s[k] = acc;
    }
  }
};

class LinearRegressor {
 public:
  explicit LinearRegressor(const sdk::Node& node)
      : affine_(node, node.attr_int("targets", 1)), post_(read_post_transform(node)) {}

  void compute(sdk::Context& ctx) const {
    const Features f = read_features(ctx.input(0), "LinearRegressor");
    affine_.check(f);
    const int64_t T = affine_.outputs;
    float* y = ctx.output(0, {f.rows, T}, SINGA_ONNX_FLOAT).data<float>();
    ctx.parallel_for(f.rows, kRowGrain, [&](int64_t b, int64_t e) {
      std::vector<double> s(static_cast<size_t>(T));
      for (int64_t r = b; r < e; ++r) {
        affine_.scores(f.row(r), s.data());
        apply_post_transform(post_, s.data(), T);
        for (int64_t k = 0; k < T; ++k) y[r * T + k] = float(s[size_t(k)]);
      }
    });
  }

 private:
  Affine affine_;
  PostTransform post_;
};

class LinearClassifier {
 public:
  explicit LinearClassifier(const sdk::Node& node)
      : labels_(node, "classlabels_ints"),
        affine_(node, int64_t(node.attr_floats("intercepts").size()) > 0 ? int64_t(node.attr_floats("intercepts").size())
                                                                         : int64_t(labels_.size())),
        post_(read_post_transform(node)) {
    const int64_t E = affine_.outputs;
    if (E != int64_t(labels_.size()) && !(E == 1 && labels_.size() == 2))
      node.fail(std::to_string(E) + " score rows for " + std::to_string(labels_.size()) +
                " class labels; expected one row per class, or one row for two classes");
  }

  void compute(sdk::Context& ctx) const {
    const Features f = read_features(ctx.input(0), "LinearClassifier");
    affine_.check(f);
    const int64_t E = int64_t(labels_.size());
    std::vector<int64_t> picked(size_t(f.rows));
    int64_t* y = picked.data();
    float* z = ctx.output(1, {f.rows, E}, SINGA_ONNX_FLOAT).data<float>();
    ctx.parallel_for(f.rows, kRowGrain, [&](int64_t b, int64_t e) {
      std::vector<double> s(static_cast<size_t>(E));
      for (int64_t r = b; r < e; ++r) {
        affine_.scores(f.row(r), s.data());
        if (affine_.outputs == 1) {
          // One row for two classes: its score is the second class's margin,
          // and the transformed score that class's probability (as in ONNX
          // Runtime, the first class gets its complement).
          const double v = s[0];
          y[r] = labels_[v > 0 ? 1 : 0];
          apply_post_transform(post_, s.data(), 1);
          s = {1.0 - s[0], s[0]};
        } else {
          apply_post_transform(post_, s.data(), E);
          y[r] = labels_[size_t(std::max_element(s.begin(), s.end()) - s.begin())];
        }
        for (int64_t k = 0; k < E; ++k) z[r * E + k] = float(s[size_t(k)]);
      }
    });
    labels_.emit(ctx, 0, picked);
  }

 private:
  ClassLabels labels_;
  Affine affine_;
  PostTransform post_;
};

}  // namespace

void register_linear(sdk::Registrar& reg) {
  reg.kernel<LinearRegressor>(kDomain, "LinearRegressor", 1, kLastOpset, "cpu", {{"T", 0, kFeatureTypes}});
  reg.kernel<LinearClassifier>(kDomain, "LinearClassifier", 1, kLastOpset, "cpu", {{"T1", 0, kFeatureTypes}});
}

}  // namespace ml
}  // namespace ops
}  // namespace singa
