#include "unblock16_f32.hpp"

#include <avx512_region.hpp>
#include <transpose16_f32.hpp>

#ifdef SINGA_AVX512_BEGIN  // x86-64; elsewhere fast::avx512() is false and nothing here is called
#include <immintrin.h>

#include "vec_activation_avx512.hpp"

#include <algorithm>

namespace singa {
namespace nn {

SINGA_AVX512_BEGIN

namespace {

// kAdd: each stored vector first gains z's values at the same place in NCHW,
// then goes through the activation.
template <ops::FusedActivation::Kind A, bool kAdd>
void unblock16_as(const float* b, float* y, int64_t N, int64_t M, int64_t R, int64_t W, int64_t y_image,
                  int64_t y_channel, const float* z, const ops::FusedActivation& act) {
  const VecActivation<A> f(act);
  const int64_t blocks = M / 16, full = W / 16 * 16, tail = W - full;
  const __mmask16 tail_mask = __mmask16((1u << tail) - 1u);
  // Full vectors take plain loads and stores: masked ones are slow on AMD's
  // family 1Ah (pool.cpp).
  auto store = [&](int64_t at, __m512 v) {
    if constexpr (kAdd) v = _mm512_add_ps(v, _mm512_loadu_ps(z + at));
    _mm512_storeu_ps(y + at, f(v));
  };
  auto store_tail = [&](int64_t at, __m512 v, __mmask16 mask) {
    if constexpr (kAdd) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, z + at));
    _mm512_mask_storeu_ps(y + at, mask, f(v));
  };
  __m512 v[16];
  for (int64_t n = 0; n < N; ++n)
    for (int64_t cb = 0; cb < blocks; ++cb) {
      const float* src = b + ((n * blocks + cb) * R) * W * 16;
      const int64_t dst = n * y_image + cb * 16 * y_channel;
      for (int64_t r = 0; r < R; ++r) {
        const float* row = src + r * W * 16;
        const int64_t out = dst + r * W;
        for (int64_t w = 0; w < full; w += 16) {
          for (int i = 0; i < 16; ++i) v[i] = _mm512_loadu_ps(row + (w + i) * 16);
          fast::transpose16(v);
          for (int c = 0; c < 16; ++c) store(out + c * y_channel + w, v[c]);
        }
        if (tail) {
          for (int64_t i = 0; i < 16; ++i) v[i] = i < tail ? _mm512_loadu_ps(row + (full + i) * 16) : _mm512_setzero_ps();
          fast::transpose16(v);
          for (int c = 0; c < 16; ++c) store_tail(out + c * y_channel + full, v[c], tail_mask);
        }
      }
    }
}

template <bool kAdd>
void unblock16_with(const float* b, float* y, int64_t N, int64_t M, int64_t R, int64_t W, int64_t y_image,
                    int64_t y_channel, const float* z, const ops::FusedActivation& act) {
  with_kind(act, [&](auto k) { unblock16_as<decltype(k)::value, kAdd>(b, y, N, M, R, W, y_image, y_channel, z, act); });
}

}  // namespace

void unblock16_f32(const float* b, float* y, int64_t N, int64_t M, int64_t R, int64_t W, int64_t y_image,
                   int64_t y_channel, const float* z, const ops::FusedActivation& act) {
  if (z)
    unblock16_with<true>(b, y, N, M, R, W, y_image, y_channel, z, act);
  else
    unblock16_with<false>(b, y, N, M, R, W, y_image, y_channel, z, act);
}

void block16_f32(const float* x, float* y, int64_t blocks, int64_t HW) {
  __m512 v[16];
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const float* src = x + blk * 16 * HW;
    float* dst = y + blk * 16 * HW;
    for (int64_t p = 0; p < HW; p += 16) {
      const int64_t n = std::min<int64_t>(16, HW - p);
      const __mmask16 mask = __mmask16((1u << n) - 1u);
      for (int l = 0; l < 16; ++l)
        v[l] = n == 16 ? _mm512_loadu_ps(src + l * HW + p) : _mm512_maskz_loadu_ps(mask, src + l * HW + p);
      fast::transpose16(v);
      for (int64_t i = 0; i < n; ++i) _mm512_storeu_ps(dst + (p + i) * 16, v[i]);
    }
  }
}

SINGA_AVX512_END

}  // namespace nn
}  // namespace singa
#else
#include <cstdlib>

namespace singa {
namespace nn {
void unblock16_f32(const float*, float*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, const float*,
                   const ops::FusedActivation&) {
  std::abort();
}
void block16_f32(const float*, float*, int64_t, int64_t) { std::abort(); }
}  // namespace nn
}  // namespace singa
#endif
