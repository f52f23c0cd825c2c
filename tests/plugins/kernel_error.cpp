// kernel_error.cpp - kernels that fail at run time or at prepare time on
// purpose, for the tests of how errors cross the ABI and what the runtime
// does after them.
//
// com.singa.test::CheckedSqrt (opset 1-10, cpu, float): y = sqrt(x).
//   attribute mode: "strict" (default) fails compute with INVALID_ARGUMENT
//   naming the first negative element; "nan" yields NaN there instead. Any
//   other mode fails at prepare time.
#include <singa/kernel.hpp>

#include <cmath>
#include <string>

namespace {

struct CheckedSqrt {
  bool strict = true;

  explicit CheckedSqrt(const singa::sdk::Node& node) {
    std::string mode = node.attr_string("mode", "strict");
    if (mode != "strict" && mode != "nan") node.fail("attribute mode must be \"strict\" or \"nan\", got \"" + mode + "\"");
    strict = mode == "strict";
  }

  void compute(singa::sdk::Context& ctx) const {
    auto x = ctx.input(0);
    const float* in = x.data<float>();
    const int64_t n = x.numel();
    if (strict) {
      for (int64_t i = 0; i < n; ++i)
        if (in[i] < 0.0f)
          singa::sdk::fail("CheckedSqrt node '" + ctx.node_name() + "': input element " + std::to_string(i) +
                           " is negative (" + std::to_string(in[i]) + ")");
    }
    auto y = ctx.output(0, x.shape(), x.dtype());
    float* out = y.data<float>();
    for (int64_t i = 0; i < n; ++i) out[i] = std::sqrt(in[i]);
  }
};

}  // namespace

SINGA_PLUGIN("test_kernel_error", "0.0.1", "singa test plugin with kernels that fail on purpose") {
  reg.kernel<CheckedSqrt>("com.singa.test", "CheckedSqrt", 1, 10, "cpu", {{"T", 0, singa::sdk::bit(SINGA_ONNX_FLOAT)}});
}
