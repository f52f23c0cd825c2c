#include "channels_last_f32.hpp"

#include "vec_activation_avx512.hpp"

#include <transpose16_f32.hpp>

#ifdef SINGA_AVX512_BEGIN  // x86-64; elsewhere fast::avx512() is false and nothing here is called
#include <immintrin.h>

#include <algorithm>

namespace singa {
namespace nn {

using ops::FusedActivation;

SINGA_AVX512_BEGIN

namespace {

constexpr int64_t kL = 16;  // channels per vector

// y[p * ld + c] = act(yt[p * ld + c] + b[c]) + add[p * ld + c] for pixels
// [0, P) and channels [0, M), in place where yt is y: bias_act_channels_last
// and store_channels_last.
template <FusedActivation::Kind A>
void finish_rows_as(const float* yt, int64_t P, int64_t M, int64_t ld, const float* b, const FusedActivation& act,
                    float* y, const float* add) {
  const VecActivation<A> f(act);
  for (int64_t c0 = 0; c0 < M; c0 += kL) {
    // Masks for a last partial vector only: masked loads are slow on AMD family 1Ah.
    const bool whole = M - c0 >= kL;
    const __mmask16 lanes = __mmask16((1u << std::min(kL, M - c0)) - 1);
    auto load = [&](const float* at) { return whole ? _mm512_loadu_ps(at) : _mm512_maskz_loadu_ps(lanes, at); };
    const __m512 bv = b ? load(b + c0) : _mm512_setzero_ps();
    for (int64_t p = 0; p < P; ++p) {
      const int64_t at = p * ld + c0;
      __m512 v = f(_mm512_add_ps(load(yt + at), bv));
      if (add) v = _mm512_add_ps(v, load(add + at));
      if (whole)
        _mm512_storeu_ps(y + at, v);
      else
        _mm512_mask_storeu_ps(y + at, lanes, v);
    }
  }
}

template <FusedActivation::Kind A>
void store_nchw_as(const float* yt, int64_t P, int64_t M, const float* b, const FusedActivation& act, float* y,
                   int64_t ld, const float* add) {
  const VecActivation<A> f(act);
  __m512 v[kL];
  for (int64_t c0 = 0; c0 < M; c0 += kL) {
    const int64_t cn = std::min(kL, M - c0);
    const __mmask16 lanes = __mmask16((1u << cn) - 1);
    int64_t p = 0;
    for (; p + kL <= P; p += kL) {
      // Plain loads for whole vectors: masked ones are slow on AMD family 1Ah.
      if (cn == kL)
        for (int i = 0; i < kL; ++i) v[i] = _mm512_loadu_ps(yt + (p + i) * M + c0);
      else
        for (int i = 0; i < kL; ++i) v[i] = _mm512_maskz_loadu_ps(lanes, yt + (p + i) * M + c0);
      fast::transpose16(v);
      for (int64_t j = 0; j < cn; ++j) {
        const __m512 bj = _mm512_set1_ps(b ? b[c0 + j] : 0.f);
        __m512 out = f(_mm512_add_ps(v[j], bj));
        if (add) out = _mm512_add_ps(out, _mm512_loadu_ps(add + (c0 + j) * ld + p));
        _mm512_storeu_ps(y + (c0 + j) * ld + p, out);
      }
    }
    for (; p < P; ++p)
      for (int64_t j = 0; j < cn; ++j) {
        const int64_t at = (c0 + j) * ld + p;
        y[at] = act(yt[p * M + c0 + j] + (b ? b[c0 + j] : 0.f)) + (add ? add[at] : 0.f);
      }
  }
}

}  // namespace

void store_channels_last(const float* yt, int64_t P, int64_t M, const float* b, const FusedActivation& act, float* y,
                         const float* add) {
  with_kind(act, [&](auto k) { finish_rows_as<decltype(k)::value>(yt, P, M, M, b, act, y, add); });
}

void bias_act_channels_last(float* e, int64_t pixels, int64_t C, int64_t ld, const float* b,
                            const FusedActivation& act) {
  if (!b && act.kind == FusedActivation::kNone) return;
  with_kind(act, [&](auto k) { finish_rows_as<decltype(k)::value>(e, pixels, C, ld, b, act, e, nullptr); });
}

void to_channels_last(const float* x, int64_t plane, int64_t n, int64_t Me, float* e) {
  __m512 v[kL];
  for (int64_t c0 = 0; c0 < Me; c0 += kL) {
    int64_t p = 0;
    for (; p + kL <= n; p += kL) {
      for (int i = 0; i < kL; ++i) v[i] = _mm512_loadu_ps(x + (c0 + i) * plane + p);
      fast::transpose16(v);
      for (int j = 0; j < kL; ++j) _mm512_storeu_ps(e + (p + j) * Me + c0, v[j]);
    }
    for (; p < n; ++p)
      for (int i = 0; i < kL; ++i) e[p * Me + c0 + i] = x[(c0 + i) * plane + p];
  }
}

void store_nchw(const float* yt, int64_t P, int64_t M, const float* b, const FusedActivation& act, float* y,
                int64_t ld, const float* add) {
  with_kind(act, [&](auto k) { store_nchw_as<decltype(k)::value>(yt, P, M, b, act, y, ld, add); });
}

SINGA_AVX512_END

}  // namespace nn
}  // namespace singa

#else
#include <cstdlib>
namespace singa {
namespace nn {
void bias_act_channels_last(float*, int64_t, int64_t, int64_t, const float*, const ops::FusedActivation&) {
  std::abort();
}
void to_channels_last(const float*, int64_t, int64_t, int64_t, float*) { std::abort(); }
void store_channels_last(const float*, int64_t, int64_t, const float*, const ops::FusedActivation&, float*,
                         const float*) {
  std::abort();
}
void store_nchw(const float*, int64_t, int64_t, const float*, const ops::FusedActivation&, float*, int64_t,
                const float*) {
  std::abort();
}
}  // namespace nn
}  // namespace singa
#endif
