// Prepares, runs and destroys models in a loop, valid ones and ones that fail
// at every stage (parse, initializer conversion, checker, kernel selection, a
// kernel at run time), and fails when memory stays behind. Under ASan the
// verdict is LeakSanitizer's; otherwise glibc's count of bytes in use must
// not grow between two equal batches of iterations (the first batch warms up
// caches that live for the whole process: plugins, schema tables).
#include "../unit/model_builder.hpp"

#include <singa/onnx.hpp>
#include <singa/runtime.hpp>

#include <malloc.h>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define SINGA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SINGA_ASAN 1
#endif
#endif
#ifdef SINGA_ASAN
#include <sanitizer/lsan_interface.h>
#endif

using singa::Tensor;
using testing_util::ModelBuilder;

namespace {

ModelBuilder conv_relu() {
  ModelBuilder b;
  std::vector<float> w(2 * 3 * 3 * 3, 0.5f);
  b.input("x", SINGA_ONNX_FLOAT, {1, 3, 8, 8})
      .initializer("W", Tensor::from_vector<float>({2, 3, 3, 3}, SINGA_ONNX_FLOAT, w))
      .node("Conv", {"x", "W"}, {"c"}, "conv")
      .node("Relu", {"c"}, {"r"}, "relu")
      .node("Flatten", {"r"}, {"y"}, "flatten")
      .output("y", SINGA_ONNX_FLOAT, {1, 128});
  return b;
}

struct Case {
  std::string name, bytes;
  std::string expect;  // in the error of a failing model: it failed where it should
};

// A valid model, then one per stage at which preparing or running can fail.
std::vector<Case> cases() {
  std::vector<Case> out;
  std::string good = conv_relu().bytes();
  out.push_back({"valid", good, ""});
  out.push_back({"truncated", good.substr(0, good.size() / 2), "not a valid ONNX model"});
  {
    ModelBuilder b = conv_relu();
    b.g->mutable_initializer(0)->set_raw_data("short");
    out.push_back({"bad initializer", b.bytes(), "raw_data holds"});
  }
  {
    ModelBuilder b = conv_relu();
    b.node("NoSuchOp", {"y"}, {"z"}, "bad").output("z", SINGA_ONNX_FLOAT, {1, 128});
    out.push_back({"checker", b.bytes(), "NoSuchOp"});
  }
  {
    ModelBuilder b(99);
    b.input("x", SINGA_ONNX_FLOAT, {2}).node("Relu", {"x"}, {"y"}, "relu").output("y", SINGA_ONNX_FLOAT, {2});
    out.push_back({"no kernel", b.bytes(), "opset 99"});
  }
  {
    ModelBuilder b;
    b.input("x", SINGA_ONNX_FLOAT, {2, 3})
        .initializer("i", Tensor::from_vector<int64_t>({1}, SINGA_ONNX_INT64, {7}))
        .node("Gather", {"x", "i"}, {"y"}, "gather")
        .output("y", SINGA_ONNX_FLOAT, {1, 3});
    out.push_back({"kernel error", b.bytes(), "out of range"});
  }
  {
    ModelBuilder b;
    b.initializer("s", Tensor::from_vector<int64_t>({2}, SINGA_ONNX_INT64, {1000000, 1000000}))
        .node("ConstantOfShape", {"s"}, {"y"}, "cos")
        .output("y", SINGA_ONNX_FLOAT, {1000000, 1000000});
    out.push_back({"memory limit", b.bytes(), "memory limit"});
  }
  return out;
}

// One prepare + run of each model; false when one did not end as it should
// (the valid one ran, each other failed with its expected message).
bool round_trip(const std::vector<Case>& models, bool report) {
  bool as_expected = true;
  singa::onnx::PrepareOptions o;
  o.threads = 1;
  for (size_t i = 0; i < models.size(); ++i) {
    std::string error;
    try {
      auto rep = singa::onnx::prepare_bytes(models[i].bytes, o);
      std::vector<Tensor> inputs;
      for (const auto& vi : rep->inputs()) inputs.emplace_back(vi.dims, vi.dtype);
      rep->run(inputs);
    } catch (const singa::Error& e) {
      error = e.what();
    }
    const bool ok = models[i].expect.empty() ? error.empty() : error.find(models[i].expect) != std::string::npos;
    if (!ok) {
      as_expected = false;
      if (report)
        std::fprintf(stderr, "leak_loop: model '%s' %s\n", models[i].name.c_str(),
                     error.empty() ? "ran, but must fail" : ("failed: " + error).c_str());
    }
  }
  return as_expected;
}

}  // namespace

int main() {
  singa::Runtime::instance().load();
  auto models = cases();
  const int kRounds = 200;
  for (int i = 0; i < kRounds; ++i)
    if (!round_trip(models, i == 0)) return 1;
#ifdef SINGA_ASAN
  if (__lsan_do_recoverable_leak_check()) {
    std::fprintf(stderr, "leak_loop: LeakSanitizer found leaks after %d rounds\n", kRounds);
    return 1;
  }
  std::printf("leak_loop: %d rounds of %zu models, LeakSanitizer found no leak\n", kRounds, models.size());
#else
  const int kMeasured = 1000;
  size_t before = mallinfo2().uordblks;
  for (int i = 0; i < kMeasured; ++i) round_trip(models, false);
  size_t after = mallinfo2().uordblks;
  // A leak of one small object per model per round adds at least
  // kMeasured * models.size() * 16 = 112000 bytes. Without a leak the count
  // moves by a few KB that do not grow with the rounds (allocator caches).
  const size_t slack = 32 * 1024;
  std::printf("leak_loop: heap in use %zu -> %zu bytes over %d rounds of %zu models\n", before, after, kMeasured, models.size());
  if (after > before + slack) {
    std::fprintf(stderr, "leak_loop: heap grew by %zu bytes: something leaks\n", after - before);
    return 1;
  }
#endif
  return 0;
}
