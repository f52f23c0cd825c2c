// Ops that change only the shape: Reshape, Flatten, Squeeze, Unsqueeze and
// Identity keep the bytes as they are, so the output is a device-to-device
// copy, or nothing at all when the core hands the input buffer back as the
// output (they are registered may-in-place). Shape-like inputs are read on
// the host (cpu_inputs_mask). Shape and Size read only the input's dims;
// ConstantOfShape fills.
#include "kernels_data.hpp"
#include "reshape_rule.hpp"
#include "ops_common.hpp"
#include "squeeze_rules.hpp"
#include "register.hpp"

#include <algorithm>
#include <cstring>

namespace singa {
namespace cuda {

void device_copy(const sdk::Context& ctx, void* dst, const void* src, size_t bytes, const std::string& where) {
  if (bytes == 0 || dst == src) return;
  cudaError_t err = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_of(ctx));
  if (err != cudaSuccess) throw sdk::Error(cuda_code(err), where + ": " + cuda_message(err, "cudaMemcpyAsync"));
}

void* upload(const sdk::Context& ctx, const void* host, size_t bytes, const std::string& where) {
  void* dst = ctx.workspace(bytes == 0 ? 1 : bytes);
  upload_to(ctx, dst, host, bytes, where);
  return dst;
}

void upload_to(const sdk::Context& ctx, void* dst, const void* host, size_t bytes, const std::string& where) {
  if (bytes == 0) return;
  cudaError_t err = cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, stream_of(ctx));
  if (err != cudaSuccess) throw sdk::Error(cuda_code(err), where + ": " + cuda_message(err, "cudaMemcpyAsync"));
}

namespace {

void emit(const sdk::Context& ctx, const NodeKernel& k, const sdk::Tensor& x, const sdk::Shape& shape) {
  sdk::Tensor y = ctx.output(0, shape, x.dl_dtype());
  if (y.numel() == 0) return;
  DeviceGuard guard(device_of(ctx));
  device_copy(ctx, y.data_ptr(), x.data_ptr(), size_t(x.numel()) * elem_size(x), k.where());
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
    auto x = required(ctx, 0, "input");
    emit(ctx, *this, x, ops::flatten_shape(x.shape(), axis_));
  }

 private:
  int64_t axis_;
};

// Squeeze and Unsqueeze (plugins/common/squeeze_rules.hpp).
class AxesKernel : public NodeKernel {
 public:
  explicit AxesKernel(const sdk::Node& node) : NodeKernel(node), axes_(node) {}

 protected:
  // The axes, or false when none are given.
  bool axes(const sdk::Context& ctx, std::vector<int64_t>& out) const {
    return axes_.get(ctx, [&](const sdk::Tensor& t) { return host_ints(t, "axes"); }, out);
  }

 private:
  ops::SqueezeAxes axes_;
};

class Squeeze : public AxesKernel {
 public:
  using AxesKernel::AxesKernel;

  void compute(sdk::Context& ctx) const {
    auto x = required(ctx, 0, "data");
    std::vector<int64_t> given;
    const bool has = axes(ctx, given);
    emit(ctx, *this, x, ops::squeeze_shape(x.shape(), has ? &given : nullptr));
  }
};

class Unsqueeze : public AxesKernel {
 public:
  using AxesKernel::AxesKernel;

  void compute(sdk::Context& ctx) const {
    auto x = required(ctx, 0, "data");
    std::vector<int64_t> given;
    check(axes(ctx, given), "axes are required");
    emit(ctx, *this, x, ops::unsqueeze_shape(x.shape(), given));
  }
};

class Identity : public NodeKernel {
 public:
  explicit Identity(const sdk::Node& node) : NodeKernel(node) {}
  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "input");
    emit(ctx, *this, x, x.shape());
  }
};

// The dims are known on the host; the few bytes of the result go to the
// device, where the node's output lives.
class ShapeOp : public NodeKernel {
 public:
  // start/end exist from opset 15; earlier nodes cannot carry them.
  explicit ShapeOp(const sdk::Node& node)
      : NodeKernel(node), start_(node.attr_int("start", 0)), has_end_(node.has_attr("end")), end_(node.attr_int("end", 0)) {}

  void compute(sdk::Context& ctx) const {
    const sdk::Shape in = required(ctx, 0, "data").shape();
    const int64_t r = int64_t(in.size());
    auto clamp_index = [r](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + r : i, 0, r); };
    const int64_t s = clamp_index(start_), e = has_end_ ? clamp_index(end_) : r;
    const int64_t n = std::max<int64_t>(0, e - s);
    const std::vector<int64_t> dims(in.begin() + s, in.begin() + s + n);
    sdk::Tensor y = ctx.output(0, {n}, SINGA_ONNX_INT64);
    DeviceGuard guard(device_of(ctx));
    upload_to(ctx, y.data_ptr(), dims.data(), dims.size() * sizeof(int64_t), where());
  }

 private:
  int64_t start_;
  bool has_end_;
  int64_t end_;
};

class Size : public NodeKernel {
 public:
  explicit Size(const sdk::Node& node) : NodeKernel(node) {}

  void compute(sdk::Context& ctx) const {
    const int64_t n = required(ctx, 0, "data").numel();
    sdk::Tensor y = ctx.output(0, {}, SINGA_ONNX_INT64);
    DeviceGuard guard(device_of(ctx));
    upload_to(ctx, y.data_ptr(), &n, sizeof n, where());
  }
};

// The shape input is read on the host; the value (attribute `value`, float
// 0 by default) is kept from create time.
class ConstantOfShape : public NodeKernel {
 public:
  explicit ConstantOfShape(const sdk::Node& node) : NodeKernel(node) {
    if (node.has_attr("value")) {
      sdk::Tensor t = node.attr_tensor("value");
      if (!t.present() || t.numel() != 1) fail("attribute 'value' must be a one-element tensor");
      if (!(kFixedSizeTypes & bit(t.dtype())) || elem_size(t) > sizeof(value_))
        fail(std::string("value of type ") + sdk::dtype_name(t.dtype()) + " is not supported on cuda",
             SINGA_UNIMPLEMENTED);
      dtype_ = t.dtype();
      size_ = elem_size(t);
      std::memcpy(&value_, t.data_ptr(), size_);
    }
  }

  void compute(sdk::Context& ctx) const {
    const std::vector<int64_t> shape = host_ints(required(ctx, 0, "input"), "input");
    for (int64_t d : shape) check(d >= 0, "shape " + shape_str(shape) + " has a negative dimension");
    sdk::Tensor y = ctx.output(0, shape, dtype_);
    DeviceGuard guard(y.raw()->device.device_id);  // no input is on the device
    check_launch(launch_fill(size_, y.data_ptr(), y.numel(), value_, stream_of(ctx)), "fill kernel");
  }

 private:
  int32_t dtype_ = SINGA_ONNX_FLOAT;
  size_t size_ = sizeof(float);
  uint64_t value_ = 0;  // float 0.0 is all zero bits
};

}  // namespace

void register_shape(sdk::Registrar& reg) {
  const uint32_t inplace = SINGA_KERNEL_MAY_INPLACE;
  const uint64_t t = kFixedSizeTypes;
  reg.kernel<Reshape>("", "Reshape", 1, 4, "cuda", {{"T", 0, t}}, inplace);
  // 5: shape becomes input 1 (read on the host); 14 adds allowzero.
  reg.kernel<Reshape>("", "Reshape", 5, 13, "cuda", {{"T", 0, t}}, inplace, input_bit(1));
  reg.kernel<Reshape>("", "Reshape", 14, SINGA_VERSION_OPEN, "cuda", {{"T", 0, t}}, inplace, input_bit(1));
  // Flatten 9 adds types, 11 negative axes, 13 bfloat16: one class reads them all.
  reg.kernel<Flatten>("", "Flatten", 1, 17, "cuda", {{"T", 0, t}}, inplace);
  reg.kernel<Squeeze>("", "Squeeze", 1, 12, "cuda", {{"T", 0, t}}, inplace);
  reg.kernel<Squeeze>("", "Squeeze", 13, SINGA_VERSION_OPEN, "cuda", {{"T", 0, t}}, inplace, input_bit(1));
  reg.kernel<Unsqueeze>("", "Unsqueeze", 1, 12, "cuda", {{"T", 0, t}}, inplace);
  reg.kernel<Unsqueeze>("", "Unsqueeze", 13, SINGA_VERSION_OPEN, "cuda", {{"T", 0, t}}, inplace, input_bit(1));
  reg.kernel<Identity>("", "Identity", 1, 17, "cuda", {{"T", 0, t}}, inplace);
  reg.kernel<ShapeOp>("", "Shape", 1, 14, "cuda", {{"T", 0, t}});
  reg.kernel<ShapeOp>("", "Shape", 15, SINGA_VERSION_OPEN, "cuda", {{"T", 0, t}});
  reg.kernel<Size>("", "Size", 1, 17, "cuda", {{"T", 0, t}});
  reg.kernel<ConstantOfShape>("", "ConstantOfShape", 9, SINGA_VERSION_OPEN, "cuda", {{"T1", 0, kInt64Type}, {"T2", -1, t}}, 0,
                              input_bit(0));
}

}  // namespace cuda
}  // namespace singa
