// cumsum_f32.hpp - one step of a float32 CumSum along a strided axis with
// AVX-512: a whole row of running sums at once. The sums stay in float32, as
// in ONNX's reference (numpy's cumsum of a float32 array) and ONNX Runtime,
// so each output is the same sequence of float32 additions as theirs.
//
// Callers check unary_avx512() (CPU support and the runtime option cpu.avx512) first.
#ifndef SINGA_OPS_REDUCE_CUMSUM_F32_HPP
#define SINGA_OPS_REDUCE_CUMSUM_F32_HPP

#include "../common/unary_f32.hpp"

#include <cstdint>

#ifdef SINGA_AVX512_BEGIN
#include <immintrin.h>

namespace singa {
namespace ops {
namespace reduce {

SINGA_AVX512_BEGIN

// For k < n: y[k] = acc[k] + x[k] (inclusive) or acc[k] (exclusive), then
// acc[k] += x[k]. x is read before y is written, so y may alias x.
template <bool kExclusive>
inline void cumsum_row_f32(float* acc, const float* x, float* y, int64_t n) {
  int64_t k = 0;
  for (; k + 16 <= n; k += 16) {
    const __m512 a = _mm512_loadu_ps(acc + k);
    const __m512 s = _mm512_add_ps(a, _mm512_loadu_ps(x + k));
    _mm512_storeu_ps(y + k, kExclusive ? a : s);
    _mm512_storeu_ps(acc + k, s);
  }
  if (k < n) {
    const __mmask16 m = __mmask16((1u << (n - k)) - 1);
    const __m512 a = _mm512_maskz_loadu_ps(m, acc + k);
    const __m512 s = _mm512_add_ps(a, _mm512_maskz_loadu_ps(m, x + k));
    _mm512_mask_storeu_ps(y + k, m, kExclusive ? a : s);
    _mm512_mask_storeu_ps(acc + k, m, s);
  }
}

// y[k] = prev[k] + x[k] for k < n: an inclusive step that reads the previous
// output row instead of a running-sum buffer (one store per element instead
// of two, ~25% faster on BERT-sized slabs), with the same float32 additions.
// y may alias x (not prev).
inline void cumsum_next_row_f32(const float* prev, const float* x, float* y, int64_t n) {
  int64_t k = 0;
  for (; k + 16 <= n; k += 16) _mm512_storeu_ps(y + k, _mm512_add_ps(_mm512_loadu_ps(prev + k), _mm512_loadu_ps(x + k)));
  if (k < n) {
    const __mmask16 m = __mmask16((1u << (n - k)) - 1);
    _mm512_mask_storeu_ps(y + k, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, prev + k), _mm512_maskz_loadu_ps(m, x + k)));
  }
}

SINGA_AVX512_END

}  // namespace reduce
}  // namespace ops
}  // namespace singa
#endif
#endif
