// fused_activation.hpp - the activation a graph pass fused into a Conv or
// Gemm/MatMul (core/passes/fuse_activation.cpp): the node keeps its op type
// and gains the attributes `activation` ("Relu", "LeakyRelu", "Clip"),
// `activation_alpha` and `activation_min`/`activation_max`. One reading of
// those attributes for every pack whose kernels honour them.
#ifndef SINGA_PLUGINS_COMMON_FUSED_ACTIVATION_HPP
#define SINGA_PLUGINS_COMMON_FUSED_ACTIVATION_HPP

#include <singa/kernel.hpp>

#include <algorithm>
#include <limits>
#include <string>

namespace singa {
namespace ops {

struct FusedActivation {
  enum Kind { kNone, kRelu, kLeakyRelu, kClip } kind = kNone;
  float alpha = 0, lo = 0, hi = 0;

  FusedActivation() = default;
  explicit FusedActivation(const sdk::Node& node) : FusedActivation(node, "") {}
  // The attributes under a prefix ("expand_activation", ...): a fused node of
  // several stages (ExpandDepthwiseProject) holds one activation per stage.
  FusedActivation(const sdk::Node& node, const std::string& prefix) {
    const std::string a = node.attr_string((prefix + "activation").c_str(), "");
    if (a.empty()) return;
    if (a == "Relu") {
      kind = kRelu;
    } else if (a == "LeakyRelu") {
      kind = kLeakyRelu;
      alpha = node.attr_float((prefix + "activation_alpha").c_str(), 0.01f);
    } else if (a == "Clip") {
      kind = kClip;
      lo = node.attr_float((prefix + "activation_min").c_str(), std::numeric_limits<float>::lowest());
      hi = node.attr_float((prefix + "activation_max").c_str(), std::numeric_limits<float>::max());
    } else {
      node.fail("attribute " + prefix + "activation '" + a + "' is not one of Relu, LeakyRelu, Clip");
    }
  }

  template <class T>
  T operator()(T v) const {
    switch (kind) {
      case kRelu: return v > T(0) ? v : T(0);
      case kLeakyRelu: return v >= T(0) ? v : T(alpha) * v;
      case kClip: return std::min(std::max(v, T(lo)), T(hi));
      default: return v;
    }
  }

  // Bias (one value per row; null for none) and the activation over `rows`
  // rows of `n` floats `ld` apart, in place, one loop per kind so that each
  // vectorizes (the per-element switch of operator() does not).
  void apply_rows(float* y, int64_t rows, int64_t n, int64_t ld, const float* bias) const {
    if (!bias && kind == kNone) return;
    for (int64_t r = 0; r < rows; ++r) {
      float* p = y + r * ld;
      const float b = bias ? bias[r] : 0.f;
      switch (kind) {
        case kRelu:
          for (int64_t i = 0; i < n; ++i) p[i] = std::max(p[i] + b, 0.f);
          break;
        case kClip:
          for (int64_t i = 0; i < n; ++i) p[i] = std::min(std::max(p[i] + b, lo), hi);
          break;
        case kLeakyRelu:
          for (int64_t i = 0; i < n; ++i) {
            const float v = p[i] + b;
            p[i] = v >= 0.f ? v : alpha * v;
          }
          break;
        default:
          for (int64_t i = 0; i < n; ++i) p[i] += b;
      }
    }
  }

  // y[i] = act(a[i] + z[i]) for n floats (y may be a): the epilogue of a
  // fused residual Add (ai.singa::ConvAdd), one loop per kind like apply_rows.
  void apply_sum(float* y, const float* a, const float* z, int64_t n) const {
    switch (kind) {
      case kRelu:
        for (int64_t i = 0; i < n; ++i) y[i] = std::max(a[i] + z[i], 0.f);
        break;
      case kClip:
        for (int64_t i = 0; i < n; ++i) y[i] = std::min(std::max(a[i] + z[i], lo), hi);
        break;
      case kLeakyRelu:
        for (int64_t i = 0; i < n; ++i) {
          const float v = a[i] + z[i];
          y[i] = v >= 0.f ? v : alpha * v;
        }
        break;
      default:
        for (int64_t i = 0; i < n; ++i) y[i] = a[i] + z[i];
    }
  }
  void apply_sum(float* y, const float* z, int64_t n) const { apply_sum(y, y, z, n); }

  // In place over a contiguous buffer, split over the context's threads.
  template <class T>
  void apply(const sdk::Context& ctx, T* y, int64_t n) const {
    if (kind == kNone) return;
    ctx.parallel_for(n, 16384, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) y[i] = (*this)(y[i]);
    });
  }
};

}  // namespace ops
}  // namespace singa
#endif
