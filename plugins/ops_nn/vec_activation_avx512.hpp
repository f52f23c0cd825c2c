// vec_activation_avx512.hpp - a fused activation (fused_activation.hpp)
// applied to 16 float lanes, for the AVX-512 convolution kernels of ops_nn
// that store their results a vector at a time. Only for callers that checked
// fast::avx512().
#ifndef SINGA_OPS_NN_VEC_ACTIVATION_AVX512_HPP
#define SINGA_OPS_NN_VEC_ACTIVATION_AVX512_HPP

#include "fused_activation.hpp"

#include <avx512_region.hpp>

#ifdef SINGA_AVX512_BEGIN
#include <immintrin.h>

#include <unary_f32.hpp>

#include <type_traits>

namespace singa {
namespace nn {

SINGA_AVX512_BEGIN

// x sigmoid(alpha x) = x / (1 + e^-z), z = alpha x, through a refined
// reciprocal instead of a division: a 512-bit vdivps issues only every 10-16
// cycles on Intel cores, and with it SiLU cost more than the FMAs of the
// EfficientNet convolutions it is fused into. z is clamped to [-80, 80], so
// that e^-z and its reciprocal stay normal floats without the two-sided
// sigmoid; e^-z = 2^n p(r) with r = -z - n ln 2 and p a degree-6
// fit of e^r (within 1.3e-7 relative over the whole function, against the
// double-precision formula); rcp14 and one Newton step give the reciprocal.
// That is 22 operations where exp16, |z|, the select between the sigmoid's
// two halves and the clamps took 27 (EfficientNet's expand products with
// SiLU spent as long in it as in their FMAs). As the division's form: NaN
// through, x * 0 where z < -80 (so -inf gives NaN, the scalar formula's -inf
// / inf).
inline __m512 swish16(__m512 x, __m512 alpha) {
  const __m512 one = _mm512_set1_ps(1.f);
  const __m512 z = _mm512_mul_ps(x, alpha);
  // max_ps/min_ps return their second operand where either is NaN: a NaN stays one.
  const __m512 zc =
      _mm512_maskz_min_ps(0xFFFF, _mm512_set1_ps(80.f), _mm512_maskz_max_ps(0xFFFF, _mm512_set1_ps(-80.f), z));
  const __m512 n = _mm512_maskz_roundscale_ps(0xFFFF, _mm512_mul_ps(zc, _mm512_set1_ps(-1.44269504088896341f)),
                                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // q = zc + n ln 2 = -r (ln 2 split in two, n * 0.693359375 exact); p(r)
  // from q with the odd coefficients' signs flipped.
  __m512 q = _mm512_fmadd_ps(n, _mm512_set1_ps(0.693359375f), zc);
  q = _mm512_fmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), q);
  __m512 p = _mm512_set1_ps(1.394858118e-3f);
  p = _mm512_fmadd_ps(p, q, _mm512_set1_ps(-8.375128731e-3f));
  p = _mm512_fmadd_ps(p, q, _mm512_set1_ps(4.166621715e-2f));
  p = _mm512_fmadd_ps(p, q, _mm512_set1_ps(-1.666641533e-1f));
  p = _mm512_fmadd_ps(p, q, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, q, _mm512_set1_ps(-1.f));
  p = _mm512_fmadd_ps(p, q, one);
  const __m512 d = _mm512_add_ps(one, _mm512_maskz_scalef_ps(0xFFFF, p, n));  // 1 + e^-zc
  __m512 r = _mm512_maskz_rcp14_ps(0xFFFF, d);  // maskz: GCC 12 warns on the plain forms
  r = _mm512_fmadd_ps(_mm512_fnmadd_ps(d, r, one), r, r);  // r + r (1 - d r)
  const __m512 y = _mm512_mul_ps(x, r);
  return _mm512_mask_mul_ps(y, _mm512_cmp_ps_mask(z, _mm512_set1_ps(-80.f), _CMP_LT_OQ), x, _mm512_setzero_ps());
}

// NaN passes through, as in the scalar form. The kind is a template argument
// so that a pixel loop has no switch (a per-pixel switch on it was a tenth of
// the depthwise kernel's time).
template <ops::FusedActivation::Kind A>
struct VecActivation {
  __m512 alpha, lo, hi, zero = _mm512_setzero_ps();
  static constexpr __mmask16 all = 0xFFFF;
  explicit VecActivation(const ops::FusedActivation& a)
      : alpha(_mm512_set1_ps(a.alpha)), lo(_mm512_set1_ps(a.lo)), hi(_mm512_set1_ps(a.hi)) {}
  __m512 operator()(__m512 v) const {
    using K = ops::FusedActivation;
    // max_ps/min_ps return their second operand when either is NaN (maskz
    // forms: GCC 12's plain ones trip -Wmaybe-uninitialized).
    if constexpr (A == K::kRelu) return _mm512_maskz_max_ps(all, zero, v);
    if constexpr (A == K::kClip) return _mm512_maskz_min_ps(all, hi, _mm512_maskz_max_ps(all, lo, v));
    if constexpr (A == K::kLeakyRelu) return _mm512_mask_mul_ps(v, _mm512_cmp_ps_mask(v, zero, _CMP_NGE_UQ), v, alpha);
    if constexpr (A == K::kSwish) return swish16(v, alpha);
    return v;
  }
};

// The kinds after kClip but SiLU under one instantiation: the formula is
// picked per vector, a predictable branch next to an exp (or HardSwish's few
// FMAs), where one instantiation per kind would double the stencil kernels'
// code. SiLU (EfficientNet's every conv) has its own: its constants stay in
// registers across a tile's stores and its vectors interleave.
template <>
struct VecActivation<ops::FusedActivation::kAny> {
  using K = ops::FusedActivation;
  using Lanes = vec::unary_detail::Lanes;
  K::Kind kind;
  Lanes c;
  explicit VecActivation(const K& a) : kind(a.kind), c(a.unary_params()) {}
  __m512 operator()(__m512 v) const {
    using U = vec::UnaryKind;
    switch (kind) {
      case K::kSwish: return swish16(v, c.alpha);
      case K::kSigmoid: return vec::unary_detail::apply<U::kSigmoid>(v, c);
      case K::kHardSwish: return vec::unary_detail::apply<U::kHardSwish>(v, c);
      case K::kHardSigmoid: return vec::unary_detail::apply<U::kHardSigmoid>(v, c);
      case K::kTanh: return vec::unary_detail::apply<U::kTanh>(v, c);
      default: return v;
    }
  }
};

// Calls f with the activation's kind as a compile-time constant (a
// std::integral_constant), the one switch for every kernel whose loops take
// the kind as a template argument.
template <class F>
decltype(auto) with_kind(const ops::FusedActivation& act, F&& f) {
  using K = ops::FusedActivation;
  switch (act.kind) {
    case K::kRelu: return f(std::integral_constant<K::Kind, K::kRelu>());
    case K::kClip: return f(std::integral_constant<K::Kind, K::kClip>());
    case K::kLeakyRelu: return f(std::integral_constant<K::Kind, K::kLeakyRelu>());
    case K::kSwish: return f(std::integral_constant<K::Kind, K::kSwish>());
    case K::kSigmoid:
    case K::kTanh:
    case K::kHardSigmoid:
    case K::kHardSwish: return f(std::integral_constant<K::Kind, K::kAny>());
    default: return f(std::integral_constant<K::Kind, K::kNone>());
  }
}

SINGA_AVX512_END

}  // namespace nn
}  // namespace singa
#endif
#endif
