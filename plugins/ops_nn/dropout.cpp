// Dropout: the identity at inference; from opset 12 a true `training_mode`
// input zeroes each element with probability `ratio` and scales the rest.
#include "dropout_rules.hpp"
#include "nn_common.hpp"
#include "register.hpp"

#include <cstring>

namespace singa {
namespace nn {
namespace {

class Dropout : public NodeKernel {
 public:
  explicit Dropout(const sdk::Node& node) : NodeKernel(node), rules_(node) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "data");
    const ops::DropoutRules::Mode m = rules_.mode(ctx, [&](const sdk::Tensor& r) { return real_values(r, where())[0]; });
    const bool training = m.training;
    const double ratio = m.ratio;

    sdk::Tensor y = ctx.output(0, x.shape(), x.dl_dtype());
    sdk::Tensor mask;
    if (ctx.num_outputs() > 1)
      mask = ctx.output(1, x.shape(), rules_.mask_is_bool() ? sdk::dl_dtype(SINGA_ONNX_BOOL) : x.dl_dtype());
    int64_t n = x.numel();

    if (!training || ratio == 0.0) {
      if (y.data_ptr() != x.data_ptr()) std::memcpy(y.data_ptr(), x.data_ptr(), size_t(n) * (x.dl_dtype().bits / 8));
      if (mask.present()) fill_ones(mask, n);
      return;
    }
    std::vector<uint8_t> keep(static_cast<size_t>(n));
    rules_.draw_keep_mask(ratio, keep);
    dispatch_real(x.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      using A = acc_t<T>;
      const A scale = A(1.0 / (1.0 - ratio));
      const T* px = x.data<T>();
      T* py = y.data<T>();
      for (int64_t i = 0; i < n; ++i) py[i] = keep[size_t(i)] ? from_acc<T>(to_acc<A>(px[i]) * scale) : from_acc<T>(A(0));
    });
    if (mask.present()) {
      bool* pm = mask.data<bool>();
      for (int64_t i = 0; i < n; ++i) pm[i] = keep[size_t(i)] != 0;
    }
  }

 private:
  void fill_ones(const sdk::Tensor& mask, int64_t n) const {
    if (mask.dtype() == SINGA_ONNX_BOOL) {
      std::memset(mask.data_ptr(), 1, size_t(n));
      return;
    }
    dispatch_real(mask.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      T* p = mask.data<T>();
      for (int64_t i = 0; i < n; ++i) p[i] = from_acc<T>(acc_t<T>(1));
    });
  }

  ops::DropoutRules rules_;
};

}  // namespace

void register_dropout(sdk::Registrar& reg) {
  reg.kernel<Dropout>("", "Dropout", 1, 11, "cpu", {{"T", 0, sdk::kFloatTypes}}, SINGA_KERNEL_MAY_INPLACE);
  // From opset 12 the training_mode input can make the output random.
  reg.kernel<Dropout>("", "Dropout", 12, 17, "cpu", {{"T", 0, kRealTypes}},
                      SINGA_KERNEL_MAY_INPLACE | SINGA_KERNEL_NONDETERMINISTIC, 0b110);
  reg.kernel<Dropout>("", "Dropout", 22, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kRealTypes}},
                      SINGA_KERNEL_MAY_INPLACE | SINGA_KERNEL_NONDETERMINISTIC, 0b110);
}

}  // namespace nn
}  // namespace singa
