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
  explicit FusedActivation(const sdk::Node& node) {
    const std::string a = node.attr_string("activation", "");
    if (a.empty()) return;
    if (a == "Relu") {
      kind = kRelu;
    } else if (a == "LeakyRelu") {
      kind = kLeakyRelu;
      alpha = node.attr_float("activation_alpha", 0.01f);
    } else if (a == "Clip") {
      kind = kClip;
      lo = node.attr_float("activation_min", std::numeric_limits<float>::lowest());
      hi = node.attr_float("activation_max", std::numeric_limits<float>::max());
    } else {
      node.fail("attribute activation '" + a + "' is not one of Relu, LeakyRelu, Clip");
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
