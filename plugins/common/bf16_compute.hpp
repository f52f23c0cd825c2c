// bf16_compute.hpp - the opt-in bfloat16 compute of the CPU pack
// (docs/options.md, `cpu.precision`): with `cpu.precision=bf16`, float32
// Conv / MatMul / Gemm (and their fused forms) round their activations and
// weights to bfloat16 and multiply on AMX / AVX512-BF16 through oneDNN,
// accumulating and writing float32. Graphs whose Conv / MatMul / Gemm are
// already bfloat16 take the same kernels whatever the option says: their
// operands are bfloat16 by the model's own choice.
//
// Where the CPU has no bfloat16 dot products the passes leave the graph as it
// is and log one warning: oneDNN would emulate bfloat16 there, slower than
// float32 and less accurate, which is never what the option asks for.
#ifndef SINGA_PLUGINS_COMMON_BF16_COMPUTE_HPP
#define SINGA_PLUGINS_COMMON_BF16_COMPUTE_HPP

#include <singa/graph_pass.hpp>
#include <singa/kernel.hpp>

#include "cpu_domain.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace singa {
namespace ops {

constexpr const char* kPrecisionOption = "cpu.precision";
// The fused ops of the CPU domain that compute in bfloat16
// (plugins/ops_nn/conv_bf16.cpp, plugins/ops_math/matmul_bf16.cpp).
constexpr const char* kBf16ConvOp = "Bf16Conv";
constexpr const char* kBf16MatMulOp = "Bf16MatMul";

// oneDNN runs bfloat16 products natively: its effective ISA includes
// AVX512-BF16 (AMX implies it). Honours ONEDNN_MAX_CPU_ISA, so a test can
// take the path of a CPU without.
inline bool cpu_has_bf16() {
  const unsigned isa = unsigned(dnnl::get_effective_cpu_isa());
  const unsigned need = unsigned(dnnl_cpu_isa_avx512_core_bf16);
  return (isa & need) == need;
}

// What `cpu.precision` asks for: true for "bf16", false for "fp32" or unset.
// Any other value fails the prepare with a message naming the option.
inline bool bf16_requested(const sdk::Graph& g) {
  const std::string v = g.option(kPrecisionOption, "fp32");
  if (v == "fp32") return false;
  if (v == "bf16") return true;
  throw sdk::Error(SINGA_INVALID_ARGUMENT, std::string("option ") + kPrecisionOption + "=" + v +
                                               ": expected fp32 (the default) or bf16");
}

// Logs `message` once per process, whichever plugin asks first. Every plugin
// that includes this header has its own copy of its statics (plugins export
// nothing but their entry point) and the C ABI has no process-wide store, so
// the first caller marks the environment with a variable named after the
// message, holding the process id: a child process that inherits it logs
// again. The mutex orders callers within one plugin; two plugins preparing
// at the same instant could both log, which only repeats a line.
inline void log_once_per_process(singa_log_level level, const char* message) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  uint64_t h = 1469598103934665603ull;  // FNV-1a of the message
  for (const char* p = message; *p; ++p) h = (h ^ uint8_t(*p)) * 1099511628211ull;
  char name[40], pid[24];
  std::snprintf(name, sizeof name, "SINGA_LOGGED_%016llx", static_cast<unsigned long long>(h));
  std::snprintf(pid, sizeof pid, "%ld", static_cast<long>(getpid()));
  const char* mark = std::getenv(name);
  if (mark && std::strcmp(mark, pid) == 0) return;
  setenv(name, pid, 1);
  const singa_host_api* host = sdk::host_ptr();
  if (host && host->log) host->log(level, message);
}

// Whether the passes turn float32 products into bfloat16 ones for this graph:
// requested and the CPU can. A request the CPU cannot honour is logged once
// per process (the graph then runs in float32).
inline bool bf16_compute_on(const sdk::Graph& g) {
  if (!bf16_requested(g)) return false;
  if (cpu_has_bf16()) return true;
  log_once_per_process(SINGA_LOG_WARNING, "option cpu.precision=bf16: this CPU (or ONEDNN_MAX_CPU_ISA) has no "
                                          "AVX512-BF16 or AMX, so Conv, MatMul and Gemm stay in float32");
  return false;
}

// Replaces each live node that `takes` accepts by the CPU domain's `op` with
// the same inputs, outputs and attributes (the bfloat16 kernels read their
// float op's attributes); returns the count.
template <typename Takes> int retype_nodes(sdk::Graph& g, const char* op, Takes takes) {
  int rewrites = 0;
  for (sdk::GraphNode n : g.nodes()) {
    if (!n.alive() || !takes(n)) continue;
    sdk::NewNode b(kCpuDomain, op);
    b.name = n.name();
    b.opset = 1;
    b.inputs = n.input_names();
    b.outputs = n.output_names();
    b.attrs_from = n.raw();
    g.replace({n}, {b});
    ++rewrites;
  }
  return rewrites;
}

}  // namespace ops
}  // namespace singa
#endif
