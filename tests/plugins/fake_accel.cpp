// A device that is not host-addressable as far as the core can tell (its
// DLPack type is kDLExtDev), though it keeps buffers in host memory. It has
// only a Relu kernel (for ranks up to 2), so a model prepared on it runs Relu
// there and falls back to the CPU for the rest, with copies across the boundary; the copies are
// counted and readable through the host-side FakeAccelCopies op.
#include <singa/kernel.hpp>

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace {

std::atomic<int64_t> g_copies{0};

singa_status* count(void*, int32_t* n) {
  *n = 1;
  return nullptr;
}
singa_status* alloc(void*, int32_t, size_t bytes, size_t align, void** out) {
  *out = std::aligned_alloc(align < 64 ? 64 : align, (bytes + 63) / 64 * 64 + 64);
  return *out ? nullptr : singa::sdk::host().status_new(SINGA_OUT_OF_MEMORY, "fake_accel: out of memory");
}
void release(void*, int32_t, void* p) { std::free(p); }
singa_status* copy(void*, int32_t, void* dst, size_t doff, const void* src, size_t soff, size_t bytes, singa_copy_kind,
                   void*) {
  ++g_copies;
  std::memcpy(static_cast<char*>(dst) + doff, static_cast<const char*>(src) + soff, bytes);
  return nullptr;
}
singa_status* fill(void*, int32_t, void* p, size_t off, int v, size_t bytes, void*) {
  std::memset(static_cast<char*>(p) + off, v, bytes);
  return nullptr;
}

// Declines (UNIMPLEMENTED at create) inputs of rank above 2, as a vendor's
// kernel declines what its hardware path does not take: the node then falls
// through to the next candidate, the CPU's.
struct Relu {
  explicit Relu(const singa::sdk::Node& node) {
    const singa_value_info x = node.input_info(0);
    if (x.ndim > 2) throw singa::sdk::Error(SINGA_UNIMPLEMENTED, "fake_accel Relu takes rank <= 2, not " + std::to_string(x.ndim));
  }
  void compute(singa::sdk::Context& ctx) const {
    auto x = ctx.input(0);
    singa::sdk::check(x.raw()->device.device_type == kDLExtDev, "fake_accel Relu got an input that was not copied to it");
    auto y = ctx.output(0, x.shape(), x.dl_dtype());
    const float* a = x.data<float>();
    float* b = y.data<float>();
    for (int64_t i = 0; i < x.numel(); ++i) b[i] = a[i] > 0 ? a[i] : 0;
  }
};

// Reports how many copies the device has made so far (a host-side op).
struct Copies {
  explicit Copies(const singa::sdk::Node&) {}
  void compute(singa::sdk::Context& ctx) const {
    auto y = ctx.output(0, {}, SINGA_ONNX_INT64);
    *y.data<int64_t>() = g_copies.load();
  }
};

}  // namespace

SINGA_PLUGIN("test_fake_accel", "1.0", "a non-host test device with only a Relu kernel") {
  singa_device_def d{};
  d.struct_size = sizeof(d);
  d.name = "fakeaccel";
  d.dl_device_type = kDLExtDev;
  d.score = 1;
  d.device_count = count;
  d.alloc = alloc;
  d.free = release;
  d.copy = copy;
  d.memset = fill;
  reg.device(d);
  reg.kernel<Relu>("", "Relu", 6, 17, "fakeaccel", {{"T", 0, singa::sdk::bit(SINGA_ONNX_FLOAT)}});
  reg.kernel<Copies>("com.singa.test", "FakeAccelCopies", 1, 1, "cpu", {});
}
