// mel_weight_matrix.cpp - MelWeightMatrix (opset 17): triangular filters,
// evenly spaced on the mel scale mel(f) = 2595 log10(1 + f/700), mapping the
// floor(dft_length/2)+1 bins of a onesided spectrum to num_mel_bins bands.
// The band edges follow the ONNX reference: num_mel_bins + 2 points spaced by
// (mel(upper) - mel(lower)) / (num_mel_bins + 2), snapped to the bin
// floor((dft_length + 1) * hz / sample_rate).
#include <cmath>
#include <vector>

#include "common.hpp"
#include "registry.hpp"

namespace singa {
namespace ops {
namespace signal {
namespace {

double hz_to_mel(double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); }
double mel_to_hz(double mel) { return 700.0 * (std::pow(10.0, mel / 2595.0) - 1.0); }

class MelWeightMatrix {
 public:
  explicit MelWeightMatrix(const sdk::Node& node) : dtype_(output_datatype(node)) {}

  void compute(sdk::Context& ctx) const {
    const int64_t mel_bins = read_scalar_int(ctx.input(0), "num_mel_bins");
    const int64_t dft_length = read_scalar_int(ctx.input(1), "dft_length");
    const int64_t sample_rate = read_scalar_int(ctx.input(2), "sample_rate");
    const double lower = read_scalar_float(ctx.input(3), "lower_edge_hertz");
    const double upper = read_scalar_float(ctx.input(4), "upper_edge_hertz");
    if (mel_bins < 1) sdk::fail("num_mel_bins must be >= 1, got " + std::to_string(mel_bins));
    if (dft_length < 1) sdk::fail("dft_length must be >= 1, got " + std::to_string(dft_length));
    if (sample_rate < 1) sdk::fail("sample_rate must be >= 1, got " + std::to_string(sample_rate));
    if (!(lower >= 0)) sdk::fail("lower_edge_hertz must be >= 0, got " + std::to_string(lower));
    if (!(upper > lower))
      sdk::fail("upper_edge_hertz (" + std::to_string(upper) + ") must be above lower_edge_hertz (" +
                std::to_string(lower) + ")");
    const int64_t spectrum_bins = dft_length / 2 + 1;

    const int64_t points = mel_bins + 2;
    const double low_mel = hz_to_mel(lower), step = (hz_to_mel(upper) - low_mel) / double(points);
    std::vector<int64_t> edge(static_cast<size_t>(points));
    for (int64_t i = 0; i < points; ++i) {
      const double hz = mel_to_hz(low_mel + step * double(i));
      edge[size_t(i)] = int64_t(std::floor(double(dft_length + 1) * hz / double(sample_rate)));
    }
    std::vector<double> w(size_t(spectrum_bins * mel_bins), 0.0);
    // bins past the spectrum (an upper edge above Nyquist) have no row to land in
    auto set = [&](int64_t bin, int64_t band, double v) {
      if (bin >= 0 && bin < spectrum_bins) w[size_t(bin * mel_bins + band)] = v;
    };
    for (int64_t i = 0; i < mel_bins; ++i) {
      const int64_t lo = edge[size_t(i)], mid = edge[size_t(i + 1)], hi = edge[size_t(i + 2)];
      if (mid == lo) {
        set(mid, i, 1.0);
      } else {
        for (int64_t j = lo; j <= mid; ++j) set(j, i, double(j - lo) / double(mid - lo));
      }
      if (hi > mid)
        for (int64_t j = mid; j < hi; ++j) set(j, i, double(hi - j) / double(hi - mid));
    }
    sdk::Tensor y = ctx.output(0, {spectrum_bins, mel_bins}, dtype_);
    sdk::dispatch(
        dtype_,
        [&](auto tag) {
          using T = decltype(tag);
          T* out = y.data<T>();
          for (size_t i = 0; i < w.size(); ++i) out[i] = store<T>(w[i]);
        },
        kGeneratedTypes);
  }

 private:
  int32_t dtype_;
};

}  // namespace

void register_mel(sdk::Registrar& reg) {
  reg.kernel<MelWeightMatrix>("", "MelWeightMatrix", 17, SINGA_VERSION_OPEN, "cpu",
                              {{"T1", 0, kIndexTypes}, {"T2", 3, kSignalTypes}, {"T3", -1, kGeneratedTypes}}, 0,
                              input_bit(0) | input_bit(1) | input_bit(2) | input_bit(3) | input_bit(4));
}

}  // namespace signal
}  // namespace ops
}  // namespace singa
