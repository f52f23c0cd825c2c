// dft.cpp - DFT: the 1-D discrete Fourier transform along one signal axis of
// [batch, signal dims..., 1 or 2] (real or complex samples). Opset 17 names
// the axis with an attribute (default 1), opset 20 with the optional scalar
// input 2 (default -2). The output is complex [..., 2], except for the
// inverse real transform (inverse=1, onesided=1): the input holds bins
// 0 .. n/2 of a Hermitian spectrum and the output is the real signal
// [..., n, ..., 1], n = dft_length or 2 * (bins - 1), like numpy's irfft.
#include "registry.hpp"
#include "transform.hpp"

namespace singa {
namespace ops {
namespace signal {
namespace {

class Dft {
 public:
  explicit Dft(const sdk::Node& node)
      : axis_input_(node.opset() >= 20),
        axis_(node.attr_int("axis", 1)),
        inverse_(node.attr_int("inverse", 0)),
        onesided_(node.attr_int("onesided", 0)) {
    if (inverse_ != 0 && inverse_ != 1) node.fail("inverse must be 0 or 1, got " + std::to_string(inverse_));
    if (onesided_ != 0 && onesided_ != 1) node.fail("onesided must be 0 or 1, got " + std::to_string(onesided_));
  }

  void compute(sdk::Context& ctx) const {
    const sdk::Tensor x = ctx.input(0);
    const int r = x.ndim();
    if (r < 2 || (x.dim(-1) != 1 && x.dim(-1) != 2))
      sdk::fail("input must be [batch, signal dims..., 1 or 2] (real or complex), got rank " + std::to_string(r) +
                (r > 0 ? " with last dim " + std::to_string(x.dim(-1)) : std::string()));
    // the last dim holds the real/imaginary parts and is never transformed
    int64_t raw_axis = axis_;
    if (axis_input_) {
      raw_axis = ctx.has_input(2) ? read_scalar_int(ctx.input(2), "axis") : -2;
      if (raw_axis == -1)
        sdk::fail("axis -1 names the real/imaginary dim; the signal axes are [-" + std::to_string(r) + ", -2] and [0, " +
                  std::to_string(r - 2) + "]");
    }
    const int64_t axis = raw_axis < 0 ? raw_axis + r : raw_axis;
    if (axis < 0 || axis > r - 2)
      sdk::fail("axis " + std::to_string(raw_axis) + " is out of range for input of rank " + std::to_string(r) +
                " (the last dim holds the complex components)");
    const bool complex_in = x.dim(-1) == 2;
    const bool irfft = inverse_ && onesided_;
    if (onesided_ && !inverse_ && complex_in)
      sdk::fail("onesided=1 needs a real input (last dim 1), the input is complex");
    const int64_t n_in = x.dim(int(axis));
    int64_t n = irfft ? 2 * (n_in - 1) : n_in;
    if (ctx.has_input(1)) {
      n = read_scalar_int(ctx.input(1), "dft_length");
      if (n < 1) sdk::fail("dft_length must be >= 1, got " + std::to_string(n));
    } else if (n < 1) {
      sdk::fail(irfft ? "the inverse real transform of " + std::to_string(n_in) +
                            " bins needs dft_length (the default 2 * (bins - 1) is " + std::to_string(n) + ")"
                      : "the signal axis " + std::to_string(axis) + " is empty");
    }
    const int64_t out_c = irfft ? 1 : 2;
    sdk::Shape out_shape = x.shape();
    out_shape[size_t(axis)] = (onesided_ && !inverse_) ? n / 2 + 1 : n;
    out_shape.back() = out_c;
    sdk::Tensor y = ctx.output(0, out_shape, x.dl_dtype());
    if (y.numel() == 0) return;

    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; ++i) outer *= x.dim(i);
    for (int i = int(axis) + 1; i < r - 1; ++i) inner *= x.dim(i);
    const int64_t c = x.dim(-1);
    LineLayout L;
    L.count = outer * inner;
    L.in_len = n_in;
    L.in_stride = inner * c;
    L.components = c;
    L.out_len = out_shape[size_t(axis)];
    L.out_stride = inner * out_c;
    L.hermitian = irfft;
    const int64_t in_block = n_in * inner * c, out_block = L.out_len * inner * out_c;
    const FftPlan plan(n);
    sdk::dispatch(
        x.dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          transform_lines<T>(ctx, plan, inverse_ != 0, L, x.data<T>(), nullptr, y.data<T>(), [&](int64_t l) {
            const int64_t o = l / inner, i = l % inner;
            return LineOffsets{o * in_block + i * c, o * out_block + i * out_c};
          });
        },
        kSignalTypes);
  }

 private:
  bool axis_input_;
  int64_t axis_, inverse_, onesided_;
};

}  // namespace

void register_dft(sdk::Registrar& reg) {
  reg.kernel<Dft>("", "DFT", 17, SINGA_VERSION_OPEN, "cpu", {{"T1", 0, kSignalTypes}, {"T2", 1, kIndexTypes}}, 0, input_bit(1));
  reg.kernel<Dft>("", "DFT", 20, SINGA_VERSION_OPEN, "cpu", {{"T1", 0, kSignalTypes}, {"T2", 1, kIndexTypes}}, 0,
                  input_bit(1) | input_bit(2));
}

}  // namespace signal
}  // namespace ops
}  // namespace singa
