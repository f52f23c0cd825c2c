// affine_activation_f32.hpp - y = act(x * a + c) over a run of floats: an
// inference BatchNorm's per-channel affine map with its fused activation
// (batch_norm.cpp, batch_norm_conv_f32.cpp). One loop per kind so that each
// vectorizes (the build's baseline is SSE2; the clones take AVX-512).
#ifndef SINGA_OPS_NN_AFFINE_ACTIVATION_F32_HPP
#define SINGA_OPS_NN_AFFINE_ACTIVATION_F32_HPP

#include "fused_activation.hpp"
#include "vec_math.hpp"  // SINGA_VEC_CLONES

#include <algorithm>
#include <cstdint>

namespace singa {
namespace nn {

SINGA_VEC_CLONES inline void affine_activation_f32(const float* __restrict x, float* __restrict y, int64_t n, float a,
                                                   float c, const ops::FusedActivation& act) {
  using ops::FusedActivation;
  switch (act.kind) {
    case FusedActivation::kRelu:
      for (int64_t i = 0; i < n; ++i) y[i] = std::max(x[i] * a + c, 0.f);
      return;
    case FusedActivation::kClip:
      for (int64_t i = 0; i < n; ++i) y[i] = std::min(std::max(x[i] * a + c, act.lo), act.hi);
      return;
    case FusedActivation::kLeakyRelu:
      for (int64_t i = 0; i < n; ++i) {
        const float v = x[i] * a + c;
        y[i] = v >= 0.f ? v : act.alpha * v;
      }
      return;
    default:
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] * a + c;
      if (act.kind != FusedActivation::kNone) act.apply_smooth(y, n);
  }
}

}  // namespace nn
}  // namespace singa
#endif
