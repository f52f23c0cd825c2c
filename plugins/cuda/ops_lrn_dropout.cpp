// LRN and Dropout on the device (kernels_nn.cu). LRN is the plugin's own
// kernel rather than cuDNN's cross-channel LRN: cuDNN limits the window to
// 1..16 channels and centres even windows its own way, while this mirrors
// ops_nn/lrn.cpp for every size. Dropout draws its keep mask on the host
// with the CPU kernel's generator and construction (plugins/common/dropout_rules.hpp), so
// a seeded node masks the same elements on either device.
#include "dropout_rules.hpp"
#include "kernels_data.hpp"
#include "kernels_nn.hpp"
#include "ops_common.hpp"
#include "register.hpp"

#include <cstring>

namespace singa {
namespace cuda {

namespace {

class LRN : public NodeKernel {
 public:
  explicit LRN(const sdk::Node& node)
      : NodeKernel(node), size_(node.attr_int("size", 0)), alpha_(node.attr_float("alpha", 1e-4f)),
        beta_(node.attr_float("beta", 0.75f)), bias_(node.attr_float("bias", 1.0f)) {
    if (size_ <= 0) fail("attribute size is required and must be positive, got " + std::to_string(size_));
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "X");
    const sdk::Shape xs = x.shape();
    check(xs.size() >= 2, "X must be [N, C, ...], got shape " + shape_str(xs));
    const int64_t N = xs[0], C = xs[1];
    sdk::Tensor y = ctx.output(0, xs, x.dl_dtype());
    if (N * C == 0) return;
    DeviceGuard guard(device_of(ctx));
    check_launch(launch_lrn(dtype_of(x), x.data_ptr(), y.data_ptr(), N, C, x.numel() / (N * C), size_, double(alpha_),
                            double(beta_), double(bias_), stream_of(ctx)),
                 "lrn kernel");
  }

 private:
  int64_t size_;
  float alpha_, beta_, bias_;
};

// The identity at inference; from opset 12 a true `training_mode` input
// (read on the host, with `ratio`) zeroes each element with probability
// ratio and scales the rest by 1 / (1 - ratio).
class Dropout : public NodeKernel {
 public:
  explicit Dropout(const sdk::Node& node) : NodeKernel(node), rules_(node) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "data");
    const ops::DropoutRules::Mode m = rules_.mode(ctx, [&](const sdk::Tensor& r) {
      check_real(r, "ratio");
      return is_double(r) ? r.data<double>()[0] : double(r.data<float>()[0]);
    });
    const bool training = m.training;
    const double ratio = m.ratio;
    sdk::Tensor y = ctx.output(0, x.shape(), x.dl_dtype());
    sdk::Tensor mask;
    if (ctx.num_outputs() > 1)
      mask = ctx.output(1, x.shape(), rules_.mask_is_bool() ? sdk::dl_dtype(SINGA_ONNX_BOOL) : x.dl_dtype());
    const int64_t n = x.numel();
    if (n == 0) return;
    DeviceGuard guard(device_of(ctx));
    const cudaStream_t stream = stream_of(ctx);
    if (!training || ratio == 0.0) {
      device_copy(ctx, y.data_ptr(), x.data_ptr(), size_t(n) * elem_size(x), where());
      if (mask.present()) check_launch(launch_fill(elem_size(mask), mask.data_ptr(), n, one_bits(mask), stream), "fill kernel");
      return;
    }
    std::vector<uint8_t> keep(static_cast<size_t>(n));
    rules_.draw_keep_mask(ratio, keep);
    const uint8_t* dkeep = static_cast<const uint8_t*>(upload(ctx, keep.data(), keep.size(), where()));
    check_launch(launch_dropout(dtype_of(x), x.data_ptr(), dkeep, y.data_ptr(),
                                mask.present() ? mask.data<uint8_t>() : nullptr, n, 1.0 / (1.0 - ratio), stream),
                 "dropout kernel");
  }

 private:
  // The bytes of 1 in the mask's type (bool, float or double).
  static uint64_t one_bits(const sdk::Tensor& mask) {
    uint64_t bits = 0;
    if (mask.dtype() == SINGA_ONNX_DOUBLE) {
      const double one = 1.0;
      std::memcpy(&bits, &one, sizeof one);
    } else if (mask.dtype() == SINGA_ONNX_FLOAT) {
      const float one = 1.0f;
      std::memcpy(&bits, &one, sizeof one);
    } else {
      bits = 1;
    }
    return bits;
  }

  ops::DropoutRules rules_;
};

}  // namespace

void register_lrn_dropout(sdk::Registrar& reg) {
  reg.kernel<LRN>("", "LRN", 1, 12, "cuda", {{"T", 0, kF32F64}});
  reg.kernel<LRN>("", "LRN", 13, SINGA_VERSION_OPEN, "cuda", {{"T", 0, kF32F64}});
  reg.kernel<Dropout>("", "Dropout", 1, 11, "cuda", {{"T", 0, kF32F64}}, SINGA_KERNEL_MAY_INPLACE);
  // From opset 12 the training_mode input can make the output random.
  reg.kernel<Dropout>("", "Dropout", 12, 17, "cuda", {{"T", 0, kF32F64}},
                      SINGA_KERNEL_MAY_INPLACE | SINGA_KERNEL_NONDETERMINISTIC, input_bit(1) | input_bit(2));
}

}  // namespace cuda
}  // namespace singa
