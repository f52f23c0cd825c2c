// Reshape and Flatten on the device: the bytes stay as they are, so the
// output is a device-to-device copy, or nothing at all when the core hands
// the input buffer back as the output (they are registered may-in-place).
// Reshape's `shape` input is read on the host (cpu_inputs_mask).
#include "reshape_rule.hpp"
#include "ops_common.hpp"
#include "register.hpp"

namespace singa {
namespace cuda {

void device_copy(const sdk::Context& ctx, void* dst, const void* src, size_t bytes, const std::string& where) {
  if (bytes == 0 || dst == src) return;
  cudaError_t err = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_of(ctx));
  if (err != cudaSuccess) throw sdk::Error(cuda_code(err), where + ": " + cuda_message(err, "cudaMemcpyAsync"));
}

namespace {

size_t element_size(const sdk::Tensor& t) { return (size_t(t.dl_dtype().bits) * t.dl_dtype().lanes + 7) / 8; }

void emit(const sdk::Context& ctx, const NodeKernel& k, const sdk::Tensor& x, const sdk::Shape& shape) {
  sdk::Tensor y = ctx.output(0, shape, x.dl_dtype());
  if (y.numel() == 0) return;
  DeviceGuard guard(device_of(ctx));
  device_copy(ctx, y.data_ptr(), x.data_ptr(), size_t(x.numel()) * element_size(x), k.where());
}

class Reshape : public NodeKernel {
 public:
  explicit Reshape(const sdk::Node& node) : NodeKernel(node), allowzero_(node.attr_int("allowzero", 0) != 0) {
    // Reshape-1 carried the target shape as an attribute; from 5 it is input 1.
    if (node.opset() < 5) {
      if (!node.has_attr("shape")) fail("attribute 'shape' is required before opset 5");
      attr_shape_ = node.attr_ints("shape");
      from_attr_ = true;
    }
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "data");
    std::vector<int64_t> spec;
    if (from_attr_) {
      spec = attr_shape_;
    } else {
      sdk::Tensor s = required(ctx, 1, "shape");
      check(s.raw()->device.device_type == kDLCPU, "the shape input must be on the host");
      check(s.ndim() == 1, "shape must be 1-D, got " + shape_str(s.shape()));
      check(s.dtype() == SINGA_ONNX_INT64, std::string("shape must be int64, got ") + sdk::dtype_name(s.dtype()));
      spec = s.to_int_vector();
    }
    emit(ctx, *this, x, target(x.shape(), spec));
  }

 private:
  sdk::Shape target(const sdk::Shape& in, const std::vector<int64_t>& spec) const { return ::singa::ops::reshape_target(in, spec, allowzero_); }

  bool allowzero_;
  bool from_attr_ = false;
  std::vector<int64_t> attr_shape_;
};

class Flatten : public NodeKernel {
 public:
  explicit Flatten(const sdk::Node& node) : NodeKernel(node), axis_(node.attr_int("axis", 1)) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "input");
    const sdk::Shape in = x.shape();
    const int64_t r = int64_t(in.size());
    check(axis_ >= -r && axis_ <= r, "axis " + std::to_string(axis_) + " is out of range for input of shape " + shape_str(in));
    const int64_t axis = axis_ < 0 ? axis_ + r : axis_;
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < r; ++i) (i < axis ? outer : inner) *= in[size_t(i)];
    emit(ctx, *this, x, {outer, inner});
  }

 private:
  int64_t axis_;
};

}  // namespace

void register_shape(sdk::Registrar& reg) {
  const uint32_t inplace = SINGA_KERNEL_MAY_INPLACE;
  reg.kernel<Reshape>("", "Reshape", 1, 4, "cuda", {{"T", 0, kFixedSizeTypes}}, inplace);
  // 5: shape becomes input 1 (read on the host); 14 adds allowzero.
  reg.kernel<Reshape>("", "Reshape", 5, 13, "cuda", {{"T", 0, kFixedSizeTypes}}, inplace, uint64_t(1) << 1);
  reg.kernel<Reshape>("", "Reshape", 14, 17, "cuda", {{"T", 0, kFixedSizeTypes}}, inplace, uint64_t(1) << 1);
  // Flatten 9 adds types, 11 negative axes, 13 bfloat16: one class reads them all.
  reg.kernel<Flatten>("", "Flatten", 1, 17, "cuda", {{"T", 0, kFixedSizeTypes}}, inplace);
}

}  // namespace cuda
}  // namespace singa
