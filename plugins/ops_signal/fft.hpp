// fft.hpp - a complex discrete Fourier transform of any length: an iterative
// radix-2 FFT for powers of two, Bluestein's chirp-z transform (built on a
// power-of-two FFT) for every other length, so all lengths cost O(n log n).
#ifndef SINGA_OPS_SIGNAL_FFT_HPP
#define SINGA_OPS_SIGNAL_FFT_HPP

#include <complex>
#include <cstdint>
#include <memory>
#include <vector>

namespace singa {
namespace ops {
namespace signal {

using cplx = std::complex<double>;

// The plan for one length: twiddles and, for Bluestein, the transformed
// chirp. Building it is O(n log n); running it is const and thread-safe as
// long as each thread passes its own scratch.
class FftPlan {
 public:
  explicit FftPlan(int64_t n);
  ~FftPlan();
  FftPlan(const FftPlan&) = delete;
  FftPlan& operator=(const FftPlan&) = delete;

  int64_t size() const { return n_; }
  // Elements of scratch that run() needs (0 for powers of two).
  size_t scratch_size() const { return size_t(m_); }
  // In place: x[k] <- sum_j x[j] exp(-+2 pi i jk / n), with the + sign and a
  // 1/n scale when inverse (the inverse DFT).
  void run(cplx* x, bool inverse, cplx* scratch) const;

 private:
  void radix2(cplx* x) const;  // forward, unscaled, n_ a power of two
  void bluestein(cplx* x, cplx* scratch) const;

  int64_t n_;
  bool pow2_;
  std::vector<uint32_t> bitrev_;  // radix-2: the input permutation
  std::vector<cplx> twiddle_;     // radix-2: exp(-2 pi i k / n), k < n/2
  int64_t m_ = 0;                 // Bluestein: padded power-of-two length
  std::vector<cplx> chirp_;       // Bluestein: exp(-pi i k^2 / n), k < n
  std::vector<cplx> kernel_;      // Bluestein: FFT of the conjugate chirp, padded to m
  std::unique_ptr<FftPlan> inner_;
};

}  // namespace signal
}  // namespace ops
}  // namespace singa
#endif
