// Dropout: the identity at inference; from opset 12 a true `training_mode`
// input zeroes each element with probability `ratio` and scales the rest.
#include "nn_common.hpp"
#include "register.hpp"

#include <cstring>
#include <mutex>
#include <random>

namespace singa {
namespace nn {
namespace {

class Dropout : public NodeKernel {
 public:
  explicit Dropout(const sdk::Node& node) : NodeKernel(node) {
    // Before opset 10 the optional mask has the data's type; after, bool.
    mask_is_bool_ = node.opset() >= 10;
    inputs_drive_training_ = node.opset() >= 12;
    // `is_test` (opsets 1-6) is ignored: like other inference runtimes, old
    // models always run in test mode here.
    if (!inputs_drive_training_) {
      float ratio = node.attr_float("ratio", 0.5f);
      if (!(ratio >= 0.0f && ratio < 1.0f)) fail("attribute ratio must be in [0, 1), got " + std::to_string(ratio));
    }
    int64_t seed = 0;
    if (node.has_attr("seed")) {
      seed = node.attr_int("seed", 0);
    } else {
      std::random_device rd;
      seed = (int64_t(rd()) << 32) ^ rd();
    }
    rng_.seed(static_cast<std::mt19937::result_type>(seed));
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "data");
    bool training = false;
    double ratio = 0.5;
    if (inputs_drive_training_) {
      if (ctx.has_input(2)) {
        sdk::Tensor t = ctx.input(2);
        check(t.dtype() == SINGA_ONNX_BOOL && t.numel() == 1, "training_mode must be a bool scalar");
        training = *t.data<bool>();
      }
      if (ctx.has_input(1)) {
        sdk::Tensor r = ctx.input(1);
        check(r.numel() == 1, "ratio must be a scalar, got shape " + shape_str(r.shape()));
        ratio = real_values(r, where())[0];
      }
    }
    if (training) check(ratio >= 0.0 && ratio < 1.0, "ratio must be in [0, 1), got " + std::to_string(ratio));

    sdk::Tensor y = ctx.output(0, x.shape(), x.dl_dtype());
    sdk::Tensor mask;
    if (ctx.num_outputs() > 1)
      mask = ctx.output(1, x.shape(), mask_is_bool_ ? sdk::dl_dtype(SINGA_ONNX_BOOL) : x.dl_dtype());
    int64_t n = x.numel();

    if (!training || ratio == 0.0) {
      if (y.data_ptr() != x.data_ptr()) std::memcpy(y.data_ptr(), x.data_ptr(), size_t(n) * (x.dl_dtype().bits / 8));
      if (mask.present()) fill_ones(mask, n);
      return;
    }
    std::vector<uint8_t> keep(static_cast<size_t>(n));
    draw_keep_mask(ratio, keep);
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
  // Uniform doubles in [0, 1) with 53 random bits from two 32-bit draws
  // (the construction numpy's legacy generator uses, so a given seed gives
  // the masks of ONNX's reference implementation). The generator advances
  // across calls, so repeated training steps get fresh masks.
  void draw_keep_mask(double ratio, std::vector<uint8_t>& keep) const {
    std::lock_guard<std::mutex> lock(rng_mutex_);
    for (auto& k : keep) {
      uint32_t a = rng_() >> 5, b = rng_() >> 6;
      double u = (double(a) * 67108864.0 + double(b)) / 9007199254740992.0;
      k = u >= ratio;
    }
  }

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

  bool mask_is_bool_ = true;
  bool inputs_drive_training_ = true;
  mutable std::mutex rng_mutex_;
  mutable std::mt19937 rng_;
};

}  // namespace

void register_dropout(sdk::Registrar& reg) {
  reg.kernel<Dropout>("", "Dropout", 1, 11, "cpu", {{"T", 0, sdk::kFloatTypes}}, SINGA_KERNEL_MAY_INPLACE);
  // From opset 12 the training_mode input can make the output random.
  reg.kernel<Dropout>("", "Dropout", 12, 17, "cpu", {{"T", 0, kRealTypes}},
                      SINGA_KERNEL_MAY_INPLACE | SINGA_KERNEL_NONDETERMINISTIC, 0b110);
}

}  // namespace nn
}  // namespace singa
