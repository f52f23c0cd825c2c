// stft.cpp - STFT (opset 17): DFTs of the (optionally windowed) frames
// signal[b, f*step : f*step + frame_length] of a [batch, length, 1 or 2] signal.
#include "registry.hpp"
#include "transform.hpp"

namespace singa {
namespace ops {
namespace signal {
namespace {

class Stft {
 public:
  explicit Stft(const sdk::Node& node) : onesided_(node.attr_int("onesided", 1)) {
    if (onesided_ != 0 && onesided_ != 1) node.fail("onesided must be 0 or 1, got " + std::to_string(onesided_));
  }

  void compute(sdk::Context& ctx) const {
    const sdk::Tensor x = ctx.input(0);
    if (x.ndim() != 3 || (x.dim(2) != 1 && x.dim(2) != 2))
      sdk::fail("signal must be [batch, length, 1 or 2] (real or complex), got rank " + std::to_string(x.ndim()) +
                (x.ndim() > 0 ? " with last dim " + std::to_string(x.dim(-1)) : std::string()));
    const bool complex_in = x.dim(2) == 2;
    if (onesided_ && complex_in)
      sdk::fail("onesided=1 needs a real signal (last dim 1), the signal is complex: set onesided=0");
    const int64_t step = read_scalar_int(ctx.input(1), "frame_step");
    if (step < 1) sdk::fail("frame_step must be >= 1, got " + std::to_string(step));

    const bool has_window = ctx.has_input(2);
    const sdk::Tensor window = ctx.input(2);
    if (has_window) {
      if (window.ndim() != 1) sdk::fail("window must be 1-D, got rank " + std::to_string(window.ndim()));
      if (window.dtype() != x.dtype())
        sdk::fail(std::string("window must have the signal's element type ") + sdk::dtype_name(x.dtype()) + ", got " +
                  sdk::dtype_name(window.dtype()));
    }
    int64_t n = 0;
    if (ctx.has_input(3)) {
      n = read_scalar_int(ctx.input(3), "frame_length");
      if (has_window && window.dim(0) != n)
        sdk::fail("frame_length " + std::to_string(n) + " differs from the window length " +
                  std::to_string(window.dim(0)));
    } else if (has_window) {
      n = window.dim(0);
    } else {
      sdk::fail("either window or frame_length must be given");
    }
    if (n < 1) sdk::fail("frame_length must be >= 1, got " + std::to_string(n));
    const int64_t batch = x.dim(0), length = x.dim(1), c = x.dim(2);
    if (length < n)
      sdk::fail("the signal (length " + std::to_string(length) + ") is shorter than one frame (" + std::to_string(n) +
                ")");
    const int64_t frames = (length - n) / step + 1;
    const int64_t bins = onesided_ ? n / 2 + 1 : n;
    sdk::Tensor y = ctx.output(0, {batch, frames, bins, 2}, x.dl_dtype());
    if (y.numel() == 0) return;

    LineLayout L;
    L.count = batch * frames;
    L.in_len = n;
    L.in_stride = c;
    L.components = c;
    L.out_len = bins;
    L.out_stride = 2;
    const FftPlan plan(n);
    sdk::dispatch(
        x.dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          const T* w = has_window ? window.data<T>() : nullptr;
          transform_lines<T>(ctx, plan, false, L, x.data<T>(), w, y.data<T>(), [&](int64_t l) {
            const int64_t b = l / frames, f = l % frames;
            return LineOffsets{(b * length + f * step) * c, l * bins * 2};
          });
        },
        kSignalTypes);
  }

 private:
  int64_t onesided_;
};

}  // namespace

void register_stft(sdk::Registrar& reg) {
  reg.kernel<Stft>("", "STFT", 17, SINGA_VERSION_OPEN, "cpu", {{"T1", 0, kSignalTypes}, {"T2", 1, kIndexTypes}}, 0,
                   input_bit(1) | input_bit(3));
}

}  // namespace signal
}  // namespace ops
}  // namespace singa
