// A device ("fuser", buffers in host memory behind kDLExtDev) whose plugin
// owns a graph pass (ABI 1.3): it claims Add -> Relu chains whose Add result
// nobody else reads and rewrites each into one op of its own domain,
// test.fuser::AddRelu, which it runs. It has no other kernels, so everything
// else falls back to the CPU. The named option "fuser.test" makes the pass
// attempt an edit the host must refuse (tests/unit/test_graph_pass.cpp).
#include <singa/graph_pass.hpp>

#include <cstdlib>
#include <cstring>

namespace {

namespace sdk = singa::sdk;

singa_status* count(void*, int32_t* n) {
  *n = 1;
  return nullptr;
}
singa_status* alloc(void*, int32_t, size_t bytes, size_t align, void** out) {
  *out = std::aligned_alloc(align < 64 ? 64 : align, (bytes + 63) / 64 * 64 + 64);
  return *out ? nullptr : sdk::host().status_new(SINGA_OUT_OF_MEMORY, "fuser: out of memory");
}
void release(void*, int32_t, void* p) { std::free(p); }
singa_status* copy(void*, int32_t, void* dst, size_t doff, const void* src, size_t soff, size_t bytes, singa_copy_kind,
                   void*) {
  std::memcpy(static_cast<char*>(dst) + doff, static_cast<const char*>(src) + soff, bytes);
  return nullptr;
}
singa_status* fill(void*, int32_t, void* p, size_t off, int v, size_t bytes, void*) {
  std::memset(static_cast<char*>(p) + off, v, bytes);
  return nullptr;
}

// y = max(a + b, 0) for same-shape float tensors (declines broadcasting).
struct AddRelu {
  explicit AddRelu(const sdk::Node& node) {
    const singa_value_info a = node.input_info(0), b = node.input_info(1);
    bool same = a.ndim >= 0 && a.ndim == b.ndim;
    for (int i = 0; same && i < a.ndim; ++i) same = a.dims[i] == b.dims[i] && a.dims[i] >= 0;
    if (!same) throw sdk::Error(SINGA_UNIMPLEMENTED, "fuser AddRelu takes two inputs of one known shape");
  }
  void compute(sdk::Context& ctx) const {
    auto a = ctx.input(0), b = ctx.input(1);
    sdk::check(a.raw()->device.device_type == kDLExtDev, "fuser AddRelu got an input that was not copied to it");
    auto y = ctx.output(0, a.shape(), a.dl_dtype());
    const float* pa = a.data<float>();
    const float* pb = b.data<float>();
    float* py = y.data<float>();
    for (int64_t i = 0; i < a.numel(); ++i) py[i] = pa[i] + pb[i] > 0 ? pa[i] + pb[i] : 0;
  }
};

// How many DequantizeLinear nodes read a constant (an int8 weight): a pass
// reports it by failing, in the test modes that ask (test_graph_pass).
void report_dequantize(const sdk::Graph& g, const char* when) {
  int n = 0;
  for (const sdk::GraphNode& node : g.nodes())
    n += node.alive() && node.op_type() == "DequantizeLinear" && g.constant(node.input_name(0)).present();
  throw sdk::Error(SINGA_INVALID_ARGUMENT, std::string(when) + " saw " + std::to_string(n) + " DequantizeLinear of a constant");
}

// At SINGA_PASS_PRIORITY_QUANTIZED: sees the model's quantized weights.
int probe_dequantize(sdk::Graph& g) {
  if (g.option("fuser.test") == "dq_early") report_dequantize(g, "dq_early");
  return 0;
}

int fuse_add_relu(sdk::Graph& g) {
  const std::string mode = g.option("fuser.test");
  if (mode == "dq_late") report_dequantize(g, "dq_late");
  int rewrites = 0;
  for (const sdk::GraphNode& add : g.nodes()) {
    if (!add.alive() || add.op_type() != "Add" || !add.domain().empty()) continue;
    const std::string sum = add.output_name(0);
    const auto readers = g.consumers(sum);
    if (readers.size() != 1 || readers[0].op_type() != "Relu" || g.is_output(sum)) continue;
    const sdk::GraphNode& relu = readers[0];
    sdk::NewNode fused("test.fuser", "AddRelu");
    fused.inputs = {add.input_name(0), add.input_name(1)};
    fused.outputs = {relu.output_name(0)};
    if (mode == "drop_output") fused.outputs = {"somewhere_else"};
    if (mode == "no_kernel") fused.op_type = "NoSuchOp";
    if (mode == "cycle") {
      // The Add alone, rewritten to read the Relu that reads it.
      sdk::NewNode looped("test.fuser", "AddRelu");
      looped.inputs = {add.input_name(0), relu.output_name(0)};
      looped.outputs = {sum};
      g.replace({add}, {looped});
      return 1;
    }
    g.replace({add, relu}, {fused});
    if (mode == "stale") g.replace({add}, {fused});
    ++rewrites;
  }
  return rewrites;
}

}  // namespace

SINGA_PLUGIN("test_fusing_accel", "1.0", "a test device whose graph pass fuses Add+Relu") {
  singa_device_def d{};
  d.struct_size = sizeof(d);
  d.name = "fuser";
  d.dl_device_type = kDLExtDev;
  d.score = 1;
  d.device_count = count;
  d.alloc = alloc;
  d.free = release;
  d.copy = copy;
  d.memset = fill;
  reg.device(d);
  reg.kernel<AddRelu>("test.fuser", "AddRelu", 1, SINGA_VERSION_OPEN, "fuser", {{"T", 0, sdk::bit(SINGA_ONNX_FLOAT)}});
  sdk::register_graph_pass(reg, "fuser.add_relu", "fuser", 0, fuse_add_relu);
  sdk::register_graph_pass(reg, "fuser.dequantize_probe", "fuser", SINGA_PASS_PRIORITY_QUANTIZED, probe_dequantize);
}
