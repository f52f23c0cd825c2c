// bf16_dnnl.hpp - what the bfloat16 Conv and MatMul kernels
// (conv_bf16.cpp, matmul_bf16.cpp) share: the engine, a fused activation as
// oneDNN post-ops, and rounding float rows to bfloat16.
#ifndef SINGA_PLUGINS_COMMON_BF16_DNNL_HPP
#define SINGA_PLUGINS_COMMON_BF16_DNNL_HPP

#include "fused_activation.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace singa {
namespace ops {

inline const dnnl::engine& bf16_engine() {
  static const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

// Appends the activation to `po`; false when oneDNN 2.6 cannot express it.
// HardSigmoid, which it lacks, is max(0, min(1, alpha x + beta)): a linear
// step then a clip.
inline bool append_activation(dnnl::post_ops& po, const FusedActivation& act) {
  using A = dnnl::algorithm;
  switch (act.kind) {
    case FusedActivation::kNone: return true;
    case FusedActivation::kRelu: po.append_eltwise(1.f, A::eltwise_relu, 0.f, 0.f); return true;
    case FusedActivation::kLeakyRelu: po.append_eltwise(1.f, A::eltwise_relu, act.alpha, 0.f); return true;
    case FusedActivation::kClip: po.append_eltwise(1.f, A::eltwise_clip, act.lo, act.hi); return true;
    case FusedActivation::kSigmoid: po.append_eltwise(1.f, A::eltwise_logistic, 0.f, 0.f); return true;
    case FusedActivation::kTanh: po.append_eltwise(1.f, A::eltwise_tanh, 0.f, 0.f); return true;
    case FusedActivation::kSwish: po.append_eltwise(1.f, A::eltwise_swish, act.alpha, 0.f); return true;
    case FusedActivation::kHardSwish: po.append_eltwise(1.f, A::eltwise_hardswish, 0.f, 0.f); return true;
    case FusedActivation::kHardSigmoid:
      po.append_eltwise(1.f, A::eltwise_linear, act.alpha, act.beta);
      po.append_eltwise(1.f, A::eltwise_clip, 0.f, 1.f);
      return true;
    default: return false;
  }
}

// bfloat16 bits of x rounded to nearest even (NaNs stay NaN), as
// sdk::bfloat16 rounds.
inline uint16_t bf16_bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

// n floats rounded to bfloat16 with AVX512-BF16's conversion (nearest even;
// the CPUs that reach the bfloat16 kernels have it, cpu_has_bf16()).
__attribute__((target("avx512f,avx512bf16"))) inline void round_to_bf16(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(x + i));
    _mm512_storeu_si512(y + i, (__m512i)v);
  }
  for (; i < n; ++i) y[i] = bf16_bits(x[i]);
}

}  // namespace ops
}  // namespace singa
#endif
