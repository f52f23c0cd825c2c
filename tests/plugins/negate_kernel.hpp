// negate_kernel.hpp - y = -x over float, written with the SDK's C++ helper;
// used by the C++ test plugins when the kernel's body does not matter but its
// result must identify which plugin's kernel ran.
#ifndef SINGA_TEST_NEGATE_KERNEL_HPP
#define SINGA_TEST_NEGATE_KERNEL_HPP

#include <singa/kernel.hpp>

namespace singa_test {

struct Negate {
  explicit Negate(const singa::sdk::Node& node) {
    if (node.num_inputs() != 1) node.fail("expects exactly 1 input");
  }
  void compute(singa::sdk::Context& ctx) const {
    auto x = ctx.input(0);
    auto y = ctx.output(0, x.shape(), x.dtype());
    const float* in = x.data<float>();
    float* out = y.data<float>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i) out[i] = -in[i];
  }
};

constexpr uint64_t kFloatOnly = singa::sdk::bit(SINGA_ONNX_FLOAT);

}  // namespace singa_test

#endif
