// option_probe.cpp - a kernel whose result shows the named options it read,
// for tests/unit/test_options.cpp: prepare options at create time
// (host->node_option) and a runtime option at plugin init
// (host->runtime_option, ABI 1.4).
//
// com.singa.test::OptionProbe (opset 1+, cpu, float): y = x + offset + base,
// negated when option test.negate=1, where offset is option test.offset (a
// whole number, default 0) and base is the runtime option test.base, read
// once when the plugin loads (default 0). A malformed test.offset or
// test.negate fails prepare, a malformed test.base fails the plugin's load;
// both name the option.
#include <singa/kernel.hpp>

#include <cerrno>
#include <cstdlib>
#include <string>

namespace {

float g_base = 0.f;

float read_base() {
  const singa_host_api& h = singa::sdk::host();
  if (!SINGA_HAS_FIELD(&h, singa_host_api, runtime_option) || !h.runtime_option) return 0.f;
  const char* v = h.runtime_option("test.base");
  if (!v) return 0.f;
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(v, &end, 10);
  if (!*v || *end || errno || n < -1000 || n > 1000)
    throw singa::sdk::Error(SINGA_INVALID_ARGUMENT,
                            std::string("option test.base=") + v + ": expected a whole number from -1000 to 1000");
  return float(n);
}

struct OptionProbe {
  float offset = 0.f;
  bool negate = false;

  explicit OptionProbe(const singa::sdk::Node& node)
      : offset(float(node.option_int("test.offset", 0, -1000, 1000)) + g_base),
        negate(node.option_bool("test.negate", false)) {}

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
  g_base = read_base();
  reg.kernel<OptionProbe>("com.singa.test", "OptionProbe", 1, SINGA_VERSION_OPEN, "cpu",
                          {{"T", 0, singa::sdk::bit(SINGA_ONNX_FLOAT)}});
}
