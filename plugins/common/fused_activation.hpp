// fused_activation.hpp - the activation a graph pass fused into a Conv, Gemm
// or MatMul: the fused op (ai.singa.cpu FusedConv, ConvAdd, FusedGemm, ...;
// plugins/ops_nn/passes, plugins/ops_math/passes, activation_match.hpp)
// carries the attributes `activation` ("Relu", "LeakyRelu", "Clip",
// "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Swish"),
// `activation_alpha` (LeakyRelu's slope, HardSigmoid's and Swish's alpha),
// `activation_beta` (HardSigmoid's) and `activation_min`/`activation_max`
// (Clip's). Swish is x sigmoid(alpha x): SiLU for alpha 1. One reading of
// those attributes for every pack whose kernels honour them.
//
// The kinds after kClip cost an exp or a few FMAs per element: their array
// forms run unary_f32.hpp's AVX-512 code (a scalar loop without AVX-512),
// and kernels that take the kind as a template argument fold them all into
// kAny (vec_activation_avx512.hpp), which picks the formula per vector.
#ifndef SINGA_PLUGINS_COMMON_FUSED_ACTIVATION_HPP
#define SINGA_PLUGINS_COMMON_FUSED_ACTIVATION_HPP

#include <singa/kernel.hpp>

#include "unary_f32.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

namespace singa {
namespace ops {

struct FusedActivation {
  // kAny is never a node's kind: it is the compile-time tag under which
  // templated kernels run every kind after kClip (see above).
  enum Kind { kNone, kRelu, kLeakyRelu, kClip, kSigmoid, kTanh, kHardSigmoid, kHardSwish, kSwish, kAny } kind = kNone;
  float alpha = 0, beta = 0, lo = 0, hi = 0;

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
    } else if (a == "Sigmoid") {
      kind = kSigmoid;
    } else if (a == "Tanh") {
      kind = kTanh;
    } else if (a == "HardSigmoid") {
      kind = kHardSigmoid;
      alpha = node.attr_float((prefix + "activation_alpha").c_str(), 0.2f);
      beta = node.attr_float((prefix + "activation_beta").c_str(), 0.5f);
    } else if (a == "HardSwish") {
      kind = kHardSwish;
    } else if (a == "Swish") {
      kind = kSwish;
      alpha = node.attr_float((prefix + "activation_alpha").c_str(), 1.f);
    } else {
      node.fail("attribute " + prefix + "activation '" + a +
                "' is not one of Relu, LeakyRelu, Clip, Sigmoid, Tanh, HardSigmoid, HardSwish, Swish");
    }
  }

  // One of the kinds that unary_f32.hpp computes (after kClip).
  bool smooth() const { return kind > kClip && kind < kAny; }
  vec::UnaryKind unary_kind() const {
    switch (kind) {
      case kSigmoid: return vec::UnaryKind::kSigmoid;
      case kTanh: return vec::UnaryKind::kTanh;
      case kHardSigmoid: return vec::UnaryKind::kHardSigmoid;
      case kHardSwish: return vec::UnaryKind::kHardSwish;
      default: return vec::UnaryKind::kSwish;
    }
  }
  vec::UnaryParams unary_params() const {
    vec::UnaryParams p;
    p.alpha = alpha, p.beta = beta;
    return p;
  }

  // n floats in place through unary_f32.hpp, or the scalar loop without AVX-512.
  void apply_smooth(float* p, int64_t n) const {
    if (vec::unary_run(unary_kind(), vec::UnaryType::kFloat, unary_params(), p, p, n)) return;
    for (int64_t i = 0; i < n; ++i) p[i] = (*this)(p[i]);
  }

  template <class T>
  T operator()(T v) const {
    switch (kind) {
      case kRelu: return v > T(0) ? v : T(0);
      case kLeakyRelu: return v >= T(0) ? v : T(alpha) * v;
      case kClip: return std::min(std::max(v, T(lo)), T(hi));
      case kSigmoid: return T(1) / (T(1) + std::exp(-v));
      case kTanh: return std::tanh(v);
      case kHardSigmoid: return std::min(std::max(T(alpha) * v + T(beta), T(0)), T(1));
      case kHardSwish: return v * std::min(std::max((v + T(3)) / T(6), T(0)), T(1));
      case kSwish: return v / (T(1) + std::exp(-T(alpha) * v));
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
      if (smooth()) {
        if (bias)
          for (int64_t i = 0; i < n; ++i) p[i] += b;
        apply_smooth(p, n);
        continue;
      }
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
  // fused residual Add (ai.singa.cpu::ConvAdd), one loop per kind like apply_rows.
  void apply_sum(float* y, const float* a, const float* z, int64_t n) const {
    if (smooth()) {
      for (int64_t i = 0; i < n; ++i) y[i] = a[i] + z[i];
      apply_smooth(y, n);
      return;
    }
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
      if constexpr (std::is_same<T, float>::value) {
        if (smooth()) return apply_smooth(y + b, e - b);
      }
      for (int64_t i = b; i < e; ++i) y[i] = (*this)(y[i]);
    });
  }
};

}  // namespace ops
}  // namespace singa
#endif
