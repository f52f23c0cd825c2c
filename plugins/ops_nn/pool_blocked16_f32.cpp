#include "pool_blocked16_f32.hpp"

#include <avx512_region.hpp>

#ifdef SINGA_AVX512_BEGIN  // x86-64; elsewhere fast::avx512() is false and nothing here is called
#include <immintrin.h>

#include <algorithm>

namespace singa {
namespace nn {

SINGA_AVX512_BEGIN

void max_pool_blocked16_f32(const float* b, int64_t N, int64_t M, int64_t R, int64_t r0, const Geometry& pg,
                            int64_t q0, int64_t q1, float* out) {
  constexpr int64_t kL = 16;
  const int64_t H = pg.in[1], W = pg.in[2], PW = pg.out[2], KH = pg.k[1], KW = pg.k[2];
  const int64_t SH = pg.s[1], SW = pg.s[2], PT = pg.pb[1], PL = pg.pb[2], Q = q1 - q0;
  const __m512 lowest = _mm512_set1_ps(-__builtin_inff());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t cb = 0; cb < M / kL; ++cb) {
      const float* plane = b + (n * (M / kL) + cb) * R * W * kL;  // conv row iy at plane + (iy - r0) * W * kL
      float* o = out + (n * (M / kL) + cb) * Q * PW * kL;
      for (int64_t qy = q0; qy < q1; ++qy) {
        const int64_t y0 = qy * SH - PT, ky0 = std::max<int64_t>(0, -y0), ky1 = std::min(KH, H - y0);
        for (int64_t px = 0; px < PW; ++px) {
          const int64_t x0 = px * SW - PL, kx0 = std::max<int64_t>(0, -x0), kx1 = std::min(KW, W - x0);
          __m512 best = lowest;
          bool first = true;
          for (int64_t ky = ky0; ky < ky1; ++ky)
            for (int64_t kx = kx0; kx < kx1; ++kx) {
              const __m512 v = _mm512_loadu_ps(plane + ((y0 + ky - r0) * W + x0 + kx) * kL);
              // v where v > best (ordered), else best: NaN never wins after
              // the first tap, as in MaxPool's loop.
              best = first ? v : _mm512_maskz_max_ps(0xFFFF, v, best);
              first = false;
            }
          _mm512_storeu_ps(o + ((qy - q0) * PW + px) * kL, best);
        }
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
void max_pool_blocked16_f32(const float*, int64_t, int64_t, int64_t, int64_t, const Geometry&, int64_t, int64_t,
                            float*) {
  std::abort();
}
}  // namespace nn
}  // namespace singa
#endif
