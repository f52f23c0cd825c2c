// libFuzzer target: arbitrary bytes as a model file. Parses, prepares on the
// CPU and, when every input has a small known shape, runs once on zero-filled
// inputs. Any singa::Error (or other C++ exception the CLI turns into one
// error line) is an accepted outcome; a sanitizer report, a crash, a hang or
// an allocation past the fuzzer's limits is a finding.
#include "fuzz_common.hpp"

#include <singa/onnx.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace {

// Zero-filled inputs, or false when an input cannot be made cheaply
// (unknown rank, string type, sequence, too large).
bool zero_inputs(const singa::onnx::Rep& rep, std::vector<singa::Value>& out) {
  size_t total = 0;
  for (const auto& vi : rep.inputs()) {
    if (vi.kind == singa::onnx::ValueInfo::Kind::kOptional) {
      out.emplace_back();
      continue;
    }
    if (vi.kind != singa::onnx::ValueInfo::Kind::kTensor || !vi.rank_known || vi.dtype == 0 ||
        vi.dtype == SINGA_ONNX_STRING || singa::dtype_size(vi.dtype) == 0)
      return false;
    singa::Shape shape;
    size_t n = 1;
    for (int64_t d : vi.dims) {
      int64_t v = d < 0 ? 1 : d;  // symbolic dims become 1, as `singa run` does
      if (v > 4096) return false;
      shape.push_back(v);
      n *= size_t(v);
      if (n > (size_t(1) << 20)) return false;
    }
    total += n * singa::dtype_size(vi.dtype);
    if (total > (size_t(16) << 20)) return false;
    singa::Tensor t(shape, vi.dtype);
    singa::fuzz::zero(t);
    out.emplace_back(std::move(t));
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  singa::fuzz::init_runtime();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  singa::onnx::PrepareOptions options;
  options.threads = 1;
  options.max_tensor_bytes = singa::fuzz::kMaxTensorBytes;
  try {
    auto rep = singa::onnx::prepare_bytes(std::string(reinterpret_cast<const char*>(data), size), options);
    std::vector<singa::Value> inputs;
    if (zero_inputs(*rep, inputs)) rep->run_values(inputs);
  } catch (const std::exception&) {
    // refused with a message: the expected outcome for malformed bytes
  }
  return 0;
}
