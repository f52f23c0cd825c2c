#include "blocked16_f32.hpp"

#include "sgemm.hpp"  // fast::avx512
#include "unblock16_f32.hpp"
#include "vec_math.hpp"  // SINGA_VEC_CLONES

#include <algorithm>
#include <cstring>

namespace singa {
namespace nn {

namespace {
constexpr int64_t kB = 16;
}

void load_blocked16_rows(const float* x, float* b, int64_t N, int64_t C, int64_t H, int64_t W, int64_t r0,
                         int64_t R) {
  const int64_t chunk = R * W * kB, plane = H * W * kB;
  for (int64_t i = 0; i < N * (C / kB); ++i)
    std::memcpy(b + i * chunk, x + i * plane + r0 * W * kB, size_t(chunk) * sizeof(float));
}

SINGA_VEC_CLONES void store_blocked16_rows(const float* b, float* y, int64_t N, int64_t M, int64_t R, int64_t W,
                                           int64_t YM, int64_t YH, int64_t m0, int64_t r0, const float* z,
                                           const ops::FusedActivation& act) {
  const int64_t chunk = R * W * kB, plane = YH * W * kB;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t cb = 0; cb < M / kB; ++cb) {
      const int64_t at = (n * (YM / kB) + m0 / kB + cb) * plane + r0 * W * kB;
      const float* src = b + (n * (M / kB) + cb) * chunk;
      if (z) {
        act.apply_sum(y + at, src, z + at, chunk);  // one pass: the copy is the sum
      } else {
        std::memcpy(y + at, src, size_t(chunk) * sizeof(float));
        act.apply_rows(y + at, 1, chunk, chunk, nullptr);
      }
    }
}

void store_band16(const float* b, float* y, bool blocked, int64_t N, int64_t M, int64_t R, int64_t W, int64_t H,
                  int64_t r0, const ops::FusedActivation& act) {
  if (blocked)
    store_blocked16_rows(b, y, N, M, R, W, M, H, 0, r0, nullptr, act);
  else
    unblock16_f32(b, y + r0 * W, N, M, R, W, M * H * W, H * W, nullptr, act);
}

void nchw_to_blocked16(const float* x, float* y, int64_t N, int64_t C, int64_t HW) {
  // Block by block, 16 pixels of each plane at a time: the writes stay one
  // contiguous run per block and the 16 read streams short.
  if (fast::avx512()) return block16_f32(x, y, N * C / kB, HW);  // 16x16 register transposes
  constexpr int64_t kP = 16;
  for (int64_t blk = 0; blk < N * C / kB; ++blk) {
    const float* src = x + blk * kB * HW;
    float* dst = y + blk * kB * HW;
    for (int64_t p0 = 0; p0 < HW; p0 += kP) {
      const int64_t p1 = std::min(HW, p0 + kP);
      for (int64_t l = 0; l < kB; ++l)
        for (int64_t p = p0; p < p1; ++p) dst[p * kB + l] = src[l * HW + p];
    }
  }
}

void blocked16_to_nchw(const float* x, float* y, int64_t N, int64_t C, int64_t HW) {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      const float* src = x + (n * C + c / kB * kB) * HW + c % kB;
      float* dst = y + (n * C + c) * HW;
      for (int64_t p = 0; p < HW; ++p) dst[p] = src[p * kB];
    }
}

}  // namespace nn
}  // namespace singa
