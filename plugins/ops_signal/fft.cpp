// fft.cpp - see fft.hpp.
#include "fft.hpp"

#include <cmath>
#include <stdexcept>

namespace singa {
namespace ops {
namespace signal {
namespace {

constexpr double kPi = 3.14159265358979323846;

bool is_pow2(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

}  // namespace

FftPlan::FftPlan(int64_t n) : n_(n), pow2_(is_pow2(n)) {
  if (n < 1) throw std::invalid_argument("FFT length must be >= 1, got " + std::to_string(n));
  if (pow2_) {
    int bits = 0;
    while ((int64_t(1) << bits) < n) ++bits;
    bitrev_.resize(size_t(n));
    for (int64_t i = 0; i < n; ++i) {
      uint32_t r = 0;
      for (int b = 0; b < bits; ++b)
        if (i & (int64_t(1) << b)) r |= uint32_t(1) << (bits - 1 - b);
      bitrev_[size_t(i)] = r;
    }
    twiddle_.resize(size_t(n / 2));
    for (int64_t k = 0; k < n / 2; ++k) twiddle_[size_t(k)] = std::polar(1.0, -2.0 * kPi * double(k) / double(n));
    return;
  }
  m_ = 1;
  while (m_ < 2 * n - 1) m_ <<= 1;
  inner_.reset(new FftPlan(m_));
  chirp_.resize(size_t(n));
  for (int64_t k = 0; k < n; ++k) {
    // k^2 mod 2n keeps the angle small, so large k lose no precision
    const int64_t k2 = (k * k) % (2 * n);
    chirp_[size_t(k)] = std::polar(1.0, -kPi * double(k2) / double(n));
  }
  kernel_.assign(size_t(m_), cplx(0, 0));
  kernel_[0] = std::conj(chirp_[0]);
  for (int64_t k = 1; k < n; ++k) kernel_[size_t(k)] = kernel_[size_t(m_ - k)] = std::conj(chirp_[size_t(k)]);
  inner_->radix2(kernel_.data());
}

FftPlan::~FftPlan() = default;

void FftPlan::radix2(cplx* x) const {
  for (int64_t i = 0; i < n_; ++i) {
    const int64_t j = bitrev_[size_t(i)];
    if (i < j) std::swap(x[i], x[j]);
  }
  for (int64_t len = 2; len <= n_; len <<= 1) {
    const int64_t half = len / 2, step = n_ / len;
    for (int64_t s = 0; s < n_; s += len) {
      for (int64_t k = 0; k < half; ++k) {
        const cplx t = twiddle_[size_t(k * step)] * x[s + k + half];
        x[s + k + half] = x[s + k] - t;
        x[s + k] += t;
      }
    }
  }
}

void FftPlan::bluestein(cplx* x, cplx* a) const {
  // x_k = conj(c_k) * sum_j (x_j c_j) conj(c_{k-j}) with c_k = exp(-pi i k^2/n):
  // a circular convolution of length m >= 2n-1, done by three FFTs.
  for (int64_t k = 0; k < n_; ++k) a[k] = x[k] * chirp_[size_t(k)];
  for (int64_t k = n_; k < m_; ++k) a[k] = cplx(0, 0);
  inner_->radix2(a);
  for (int64_t k = 0; k < m_; ++k) a[k] = std::conj(a[k] * kernel_[size_t(k)]);
  inner_->radix2(a);  // conj(FFT(conj(.))) / m is the inverse FFT
  const double scale = 1.0 / double(m_);
  for (int64_t k = 0; k < n_; ++k) x[k] = std::conj(a[k]) * scale * chirp_[size_t(k)];
}

void FftPlan::run(cplx* x, bool inverse, cplx* scratch) const {
  // The inverse DFT is conj(DFT(conj(x))) / n.
  if (inverse)
    for (int64_t k = 0; k < n_; ++k) x[k] = std::conj(x[k]);
  if (pow2_)
    radix2(x);
  else
    bluestein(x, scratch);
  if (inverse) {
    const double scale = 1.0 / double(n_);
    for (int64_t k = 0; k < n_; ++k) x[k] = std::conj(x[k]) * scale;
  }
}

}  // namespace signal
}  // namespace ops
}  // namespace singa
