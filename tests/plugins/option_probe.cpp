// option_probe.cpp - a kernel whose result shows the named options it read at
// create time (host->node_option), for tests/unit/test_options.cpp.
//
// com.singa.test::OptionProbe (opset 1+, cpu, float): y = x + offset, negated
// when option test.negate=1, where offset is option test.offset (a whole
// number, default 0). A malformed value fails prepare, naming the option.
#include <singa/kernel.hpp>

namespace {

struct OptionProbe {
  float offset = 0.f;
  bool negate = false;

  explicit OptionProbe(const singa::sdk::Node& node)
      : offset(float(node.option_int("test.offset", 0, -1000, 1000))), negate(node.option_bool("test.negate", false)) {}

  void compute(singa::sdk::Context& ctx) const {
    auto x = ctx.input(0);
    auto y = ctx.output(0, x.shape(), x.dtype());
    const float* in = x.data<float>();
    float* out = y.data<float>();
    for (int64_t i = 0; i < x.numel(); ++i) out[i] = negate ? -(in[i] + offset) : in[i] + offset;
  }
};

}  // namespace

SINGA_PLUGIN("test_option_probe", "0.0.1", "singa test plugin: a kernel that shows the options it read") {
  reg.kernel<OptionProbe>("com.singa.test", "OptionProbe", 1, SINGA_VERSION_OPEN, "cpu",
                          {{"T", 0, singa::sdk::bit(SINGA_ONNX_FLOAT)}});
}
