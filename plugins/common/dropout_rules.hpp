// dropout_rules.hpp - what Dropout's attributes and inputs mean, shared by
// the CPU and CUDA kernels (each had a copy): the mask's type, whether the
// inputs decide training mode (opset 12 on), the ratio, and the seeded
// generator whose keep-mask matches ONNX's reference implementation for a
// given seed. Errors are plain sdk::fail messages; the host prefixes them with
// the model, node and op.
#ifndef SINGA_PLUGINS_DROPOUT_RULES_HPP
#define SINGA_PLUGINS_DROPOUT_RULES_HPP

#include "broadcast.hpp"  // shape_str

#include <singa/kernel.hpp>

#include <cstdint>
#include <mutex>
#include <random>
#include <string>
#include <vector>

namespace singa {
namespace ops {

class DropoutRules {
 public:
  struct Mode {
    bool training = false;
    double ratio = 0.5;
  };

  explicit DropoutRules(const sdk::Node& node)
      : mask_is_bool_(node.opset() >= 10),  // before opset 10 the optional mask has the data's type
        inputs_drive_training_(node.opset() >= 12) {
    // `is_test` (opsets 1-6) is ignored: like other inference runtimes, old
    // models always run in test mode here.
    if (!inputs_drive_training_) {
      const float ratio = node.attr_float("ratio", 0.5f);
      if (!(ratio >= 0.0f && ratio < 1.0f)) node.fail("attribute ratio must be in [0, 1), got " + std::to_string(ratio));
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

  bool mask_is_bool() const { return mask_is_bool_; }

  // Training mode and ratio for this call: from the `training_mode` and
  // `ratio` inputs (opset 12 on), read on the host; `read_ratio(tensor)`
  // reads the ratio scalar as a double the way the pack reads reals.
  template <class ReadRatio>
  Mode mode(const sdk::Context& ctx, ReadRatio&& read_ratio) const {
    Mode m;
    if (inputs_drive_training_) {
      if (ctx.has_input(2)) {
        sdk::Tensor t = ctx.input(2);
        sdk::check(t.dtype() == SINGA_ONNX_BOOL && t.numel() == 1, "training_mode must be a bool scalar");
        m.training = *t.data<uint8_t>() != 0;
      }
      if (ctx.has_input(1)) {
        sdk::Tensor r = ctx.input(1);
        sdk::check(r.numel() == 1, "ratio must be a scalar, got shape " + shape_str(r.shape()));
        m.ratio = read_ratio(r);
      }
    }
    if (m.training) sdk::check(m.ratio >= 0.0 && m.ratio < 1.0, "ratio must be in [0, 1), got " + std::to_string(m.ratio));
    return m;
  }

  // keep[i] = 1 with probability 1 - ratio. Uniform doubles in [0, 1) with
  // 53 random bits from two 32-bit draws (the construction numpy's legacy
  // generator uses, so a given seed gives the masks of ONNX's reference
  // implementation). The generator advances across calls, so repeated
  // training steps get fresh masks.
  void draw_keep_mask(double ratio, std::vector<uint8_t>& keep) const {
    std::lock_guard<std::mutex> lock(rng_mutex_);
    for (auto& k : keep) {
      const uint32_t a = rng_() >> 5, b = rng_() >> 6;
      const double u = (double(a) * 67108864.0 + double(b)) / 9007199254740992.0;
      k = u >= ratio;
    }
  }

 private:
  bool mask_is_bool_;
  bool inputs_drive_training_;
  mutable std::mutex rng_mutex_;
  mutable std::mt19937 rng_;
};

}  // namespace ops
}  // namespace singa
#endif
