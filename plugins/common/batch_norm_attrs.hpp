// batch_norm_attrs.hpp - BatchNormalization's attributes and which outputs a
// node may ask for, read once for every device's kernel.
#ifndef SINGA_PLUGINS_BATCH_NORM_ATTRS_HPP
#define SINGA_PLUGINS_BATCH_NORM_ATTRS_HPP

#include <singa/kernel.hpp>

#include <string>

namespace singa {
namespace ops {

struct BatchNormAttrs {
  float epsilon = 1e-5f, momentum = 0.9f;
  bool spatial = true;    // false (spatial=0, before opset 9): per (channel, position) statistics
  bool training = false;  // training_mode=1, from opset 14
};

inline BatchNormAttrs read_batch_norm_attrs(const sdk::Node& node) {
  BatchNormAttrs a;
  a.epsilon = node.attr_float("epsilon", 1e-5f);
  a.momentum = node.attr_float("momentum", 0.9f);
  if (!(a.epsilon >= 0)) sdk::fail("attribute epsilon must not be negative, got " + std::to_string(a.epsilon));
  a.spatial = node.opset() >= 9 || node.attr_int("spatial", 1) != 0;
  const size_t outs = node.num_outputs();
  if (node.opset() >= 14) {
    a.training = node.attr_int("training_mode", 0) != 0;
    if (!a.training && outs > 1)
      sdk::fail("outputs running_mean and running_var exist only with training_mode=1 (got " + std::to_string(outs) +
                " outputs)");
  } else if (outs > 1) {
    sdk::fail("training outputs (mean, var, saved_mean, saved_var) at opset " + std::to_string(node.opset()) +
              " are not supported; only inference (one output) is, or training_mode=1 from opset 14");
  }
  return a;
}

}  // namespace ops
}  // namespace singa
#endif
