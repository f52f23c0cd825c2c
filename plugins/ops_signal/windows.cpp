// windows.cpp - HannWindow, HammingWindow, BlackmanWindow (opset 17): the
// generalized cosine window w[k] = a0 - a1 cos(2 pi k / N) + a2 cos(4 pi k / N),
// with N = size (periodic) or size - 1 (symmetric).
#include <cmath>

#include "common.hpp"
#include "registry.hpp"

namespace singa {
namespace ops {
namespace signal {
namespace {

constexpr double kPi = 3.14159265358979323846;

class CosineWindow {
 public:
  explicit CosineWindow(const sdk::Node& node)
      : periodic_(node.attr_int("periodic", 1)), dtype_(output_datatype(node)) {
    if (periodic_ != 0 && periodic_ != 1) node.fail("periodic must be 0 or 1, got " + std::to_string(periodic_));
    const std::string op = node.op_type();
    if (op == "HannWindow") {
      a0_ = 0.5, a1_ = 0.5;
    } else if (op == "HammingWindow") {
      a0_ = 25.0 / 46.0, a1_ = 21.0 / 46.0;
    } else {
      a0_ = 0.42, a1_ = 0.5, a2_ = 0.08;
    }
  }

  void compute(sdk::Context& ctx) const {
    const int64_t size = read_scalar_int(ctx.input(0), "size");
    if (size < 0) sdk::fail("size must be >= 0, got " + std::to_string(size));
    sdk::Tensor y = ctx.output(0, {size}, dtype_);
    const int64_t N = periodic_ ? size : size - 1;
    sdk::dispatch(
        dtype_,
        [&](auto tag) {
          using T = decltype(tag);
          T* out = y.data<T>();
          for (int64_t k = 0; k < size; ++k) {
            // a symmetric window of one sample has no period: its value is the peak, 1
            const double w = N == 0 ? 1.0
                                    : a0_ - a1_ * std::cos(2 * kPi * double(k) / double(N)) +
                                          a2_ * std::cos(4 * kPi * double(k) / double(N));
            out[k] = store<T>(w);
          }
        },
        kGeneratedTypes);
  }

 private:
  int64_t periodic_;
  int32_t dtype_;
  double a0_ = 0, a1_ = 0, a2_ = 0;
};

}  // namespace

void register_windows(sdk::Registrar& reg) {
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"})
    reg.kernel<CosineWindow>("", op, 17, 17, "cpu", {{"T1", 0, kIndexTypes}, {"T2", -1, kGeneratedTypes}}, 0,
                             input_bit(0));
}

}  // namespace signal
}  // namespace ops
}  // namespace singa
