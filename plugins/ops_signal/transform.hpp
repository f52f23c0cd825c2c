// transform.hpp - the part DFT and STFT share: many independent 1-D
// transforms, each reading a (real or complex) strided line of the input and
// writing a strided complex line of the output.
#ifndef SINGA_OPS_SIGNAL_TRANSFORM_HPP
#define SINGA_OPS_SIGNAL_TRANSFORM_HPP

#include <algorithm>
#include <vector>

#include "common.hpp"
#include "fft.hpp"

namespace singa {
namespace ops {
namespace signal {

// Where line l of the input and output starts, in elements of T (the
// complex pair counts as two). Returned by a callable so that DFT (outer x
// inner lines) and STFT (batch x frames) can number their lines their own way.
struct LineOffsets {
  int64_t in = 0, out = 0;
};

struct LineLayout {
  int64_t count = 0;       // number of lines
  int64_t in_len = 0;      // input samples read per line (the rest is zero-padded)
  int64_t in_stride = 0;   // elements of T between consecutive input samples
  int64_t components = 1;  // 1: real input, 2: complex input
  int64_t out_len = 0;     // output bins written per line
  int64_t out_stride = 0;  // elements of T between consecutive output bins (each bin is 2)
  // Inverse real FFT (DFT with inverse=1, onesided=1): the input line holds
  // bins 0 .. n/2 of a Hermitian spectrum; the rest are their conjugates, and
  // only the real part of each output sample is written (one element per bin).
  bool hermitian = false;
};

// For each line: x = input line (times window[k] when window is given, k < in_len),
// X = DFT_n(x) (inverse when asked), output line = X[0 .. out_len).
template <typename T, typename Offsets>
void transform_lines(const sdk::Context& ctx, const FftPlan& plan, bool inverse, const LineLayout& L, const T* in,
                     const T* window, T* out, Offsets offsets) {
  const int64_t n = plan.size();
  const int64_t take = std::min(L.in_len, L.hermitian ? n / 2 + 1 : n);
  const int64_t grain = std::max<int64_t>(1, 8192 / std::max<int64_t>(1, n));
  ctx.parallel_for(L.count, grain, [&](int64_t b, int64_t e) {
    std::vector<cplx> buf(size_t(n) + plan.scratch_size());
    cplx* x = buf.data();
    cplx* scratch = x + n;
    for (int64_t l = b; l < e; ++l) {
      const LineOffsets o = offsets(l);
      const T* src = in + o.in;
      for (int64_t k = 0; k < take; ++k) {
        const T* s = src + k * L.in_stride;
        const double w = window ? load(window, k) : 1.0;
        x[k] = cplx(load(s, 0) * w, L.components == 2 ? load(s, 1) * w : 0.0);
      }
      for (int64_t k = take; k < n; ++k) x[k] = cplx(0, 0);
      if (L.hermitian) {
        // numpy's irfft: the imaginary parts of DC (and of the Nyquist bin
        // for even n) are ignored; bin n-k is the conjugate of bin k.
        x[0] = cplx(x[0].real(), 0.0);
        if (n % 2 == 0) x[n / 2] = cplx(x[n / 2].real(), 0.0);
        for (int64_t k = n / 2 + 1; k < n; ++k) x[k] = std::conj(x[n - k]);
      }
      plan.run(x, inverse, scratch);
      T* dst = out + o.out;
      if (L.hermitian) {
        for (int64_t k = 0; k < L.out_len; ++k) dst[k * L.out_stride] = store<T>(x[k].real());
      } else {
        for (int64_t k = 0; k < L.out_len; ++k) {
          dst[k * L.out_stride] = store<T>(x[k].real());
          dst[k * L.out_stride + 1] = store<T>(x[k].imag());
        }
      }
    }
  });
}

}  // namespace signal
}  // namespace ops
}  // namespace singa
#endif
