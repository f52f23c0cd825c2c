// dft.cpp - DFT (opset 17): the 1-D discrete Fourier transform along one
// signal axis of [batch, signal dims..., 1 or 2] (real or complex samples),
// always producing complex [..., 2] output.
#include "registry.hpp"
#include "transform.hpp"

namespace singa {
namespace ops {
namespace signal {
namespace {

class Dft {
 public:
  explicit Dft(const sdk::Node& node)
      : axis_(node.attr_int("axis", 1)), inverse_(node.attr_int("inverse", 0)), onesided_(node.attr_int("onesided", 0)) {
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
    const int64_t axis = axis_ < 0 ? axis_ + r : axis_;
    if (axis < 0 || axis > r - 2)
      sdk::fail("axis " + std::to_string(axis_) + " is out of range for input of rank " + std::to_string(r) +
                " (the last dim holds the complex components)");
    const bool complex_in = x.dim(-1) == 2;
    if (onesided_ && complex_in) sdk::fail("onesided=1 needs a real input (last dim 1), the input is complex");
    const int64_t n_in = x.dim(int(axis));
    int64_t n = n_in;
    if (ctx.has_input(1)) {
      n = read_scalar_int(ctx.input(1), "dft_length");
      if (n < 1) sdk::fail("dft_length must be >= 1, got " + std::to_string(n));
    } else if (n < 1) {
      sdk::fail("the signal axis " + std::to_string(axis) + " is empty");
    }
    sdk::Shape out_shape = x.shape();
    out_shape[size_t(axis)] = onesided_ ? n / 2 + 1 : n;
    out_shape.back() = 2;
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
    L.out_stride = inner * 2;
    const int64_t in_block = n_in * inner * c, out_block = L.out_len * inner * 2;
    const FftPlan plan(n);
    sdk::dispatch(
        x.dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          transform_lines<T>(ctx, plan, inverse_ != 0, L, x.data<T>(), nullptr, y.data<T>(), [&](int64_t l) {
            const int64_t o = l / inner, i = l % inner;
            return LineOffsets{o * in_block + i * c, o * out_block + i * 2};
          });
        },
        kSignalTypes);
  }

 private:
  int64_t axis_, inverse_, onesided_;
};

}  // namespace

void register_dft(sdk::Registrar& reg) {
  reg.kernel<Dft>("", "DFT", 17, 17, "cpu", {{"T1", 0, kSignalTypes}, {"T2", 1, kIndexTypes}}, 0, input_bit(1));
}

}  // namespace signal
}  // namespace ops
}  // namespace singa
