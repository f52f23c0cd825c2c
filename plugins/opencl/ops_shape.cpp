// Data movement on the device: Reshape/Flatten/Squeeze/Unsqueeze/Identity
// and inference Dropout keep the bytes as they are (a device-to-device copy,
// or nothing when the core hands the input buffer back as the output: they
// are registered may-in-place); Concat and Transpose gather. Registered for
// floating types only, so that integer shape arithmetic stays on the CPU
// instead of travelling to the device and back.
#include "ops_common.hpp"
#include "squeeze_rules.hpp"
#include "register.hpp"
#include "reshape_rule.hpp"

#include <algorithm>
#include <cmath>

namespace singa {
namespace opencl {

namespace {

constexpr uint64_t kDataTypes = sdk::kFloatTypes | bit(SINGA_ONNX_BFLOAT16);

void emit(const sdk::Context& ctx, const NodeKernel& k, const sdk::Tensor& x, const sdk::Shape& shape) {
  sdk::Tensor y = ctx.output(0, shape, x.dl_dtype());
  k.copy(y, x, size_t(x.numel()) * element_size(x));
}

std::vector<int64_t> host_ints(const NodeKernel& k, const sdk::Tensor& t, const char* name) {
  k.check(t.raw()->device.device_type == kDLCPU, std::string(name) + " must be on the host");
  k.check(t.dtype() == SINGA_ONNX_INT64, std::string(name) + " must be int64, got " + sdk::dtype_name(t.dtype()));
  k.check(t.ndim() <= 1, std::string(name) + " must be 1-D, got shape " + shape_str(t.shape()));
  return t.to_int_vector();
}

int64_t normalize_axis(const NodeKernel& k, int64_t a, int64_t rank) {
  k.check(a >= -rank && a < rank, "axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
  return a < 0 ? a + rank : a;
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
    const std::vector<int64_t> spec = from_attr_ ? attr_shape_ : host_ints(*this, required(ctx, 1, "shape"), "shape");
    sdk::Shape target;
    try {
      target = ops::reshape_target(x.shape(), spec, allowzero_);
    } catch (const sdk::Error& e) {
      fail(e.what());
    }
    emit(ctx, *this, x, target);
  }

 private:
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
    return axes_.get(ctx, [&](const sdk::Tensor& t) { return host_ints(*this, t, "axes"); }, out);
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

// Dropout at inference: the identity, with an all-true mask (bool from
// opset 10, the data's type before). Nodes with opset 12's training_mode
// input never come here (see register_shape), so nothing is random.
class Dropout : public NodeKernel {
 public:
  explicit Dropout(const sdk::Node& node) : NodeKernel(node), mask_is_bool_(node.opset() >= 10) {
    if (node.opset() < 12) {
      const float ratio = node.attr_float("ratio", 0.5f);
      if (!(ratio >= 0.0f && ratio < 1.0f)) fail("attribute ratio must be in [0, 1), got " + std::to_string(ratio));
    }
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "data");
    check(!ctx.has_input(2), "training_mode is not supported on the opencl device");
    emit(ctx, *this, x, x.shape());
    if (ctx.num_outputs() < 2) return;
    sdk::Tensor mask = ctx.output(1, x.shape(), mask_is_bool_ ? SINGA_ONNX_BOOL : x.dtype());
    if (mask.numel() == 0) return;
    DeviceEnv& e = env(mask);
    if (mask_is_bool_) {
      const cl_uchar one = 1;
      cl_int err = clEnqueueFillBuffer(e.queue, static_cast<cl_mem>(mask.raw()->data), &one, 1,
                                       size_t(mask.raw()->byte_offset), size_t(mask.numel()), 0, nullptr, nullptr);
      if (err != CL_SUCCESS) fail("filling the mask: " + cl_error_name(err), cl_code(err));
    } else {
      check_float(mask, "mask");
      launch(e, Program::kElementwise, "fill").arg(buf(mask)).arg(to_int(mask.numel(), "size")).arg(cl_float(1.0f))
          .run({size_t(mask.numel())});
    }
  }

 private:
  bool mask_is_bool_;
};

const char* sized_kernel(const NodeKernel& k, const char* base, size_t es) {
  static const char* names[2][4] = {{"concat_1", "concat_2", "concat_4", "concat_8"},
                                    {"transpose_1", "transpose_2", "transpose_4", "transpose_8"}};
  const int row = std::string(base) == "concat" ? 0 : 1;
  switch (es) {
    case 1: return names[row][0];
    case 2: return names[row][1];
    case 4: return names[row][2];
    case 8: return names[row][3];
    default: k.fail("element size " + std::to_string(es) + " is not supported", SINGA_UNIMPLEMENTED);
  }
}

class Concat : public NodeKernel {
 public:
  explicit Concat(const sdk::Node& node) : NodeKernel(node), axis_(node.attr_int("axis", 1)) {
    if (node.opset() >= 4 && !node.has_attr("axis")) fail("attribute axis is required");
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor first = required(ctx, 0, "inputs[0]");
    const sdk::Shape s0 = first.shape();
    const int64_t rank = int64_t(s0.size());
    check(rank > 0, "inputs must have rank >= 1");
    const int64_t axis = normalize_axis(*this, axis_, rank);
    sdk::Shape out = s0;
    out[size_t(axis)] = 0;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      sdk::Tensor t = required(ctx, i, "inputs");
      check(t.dtype() == first.dtype(), "inputs have different element types");
      const sdk::Shape s = t.shape();
      check(int64_t(s.size()) == rank, "input " + std::to_string(i) + " has shape " + shape_str(s) + ", rank differs from " +
                                           shape_str(s0));
      for (int64_t d = 0; d < rank; ++d)
        check(d == axis || s[size_t(d)] == s0[size_t(d)],
              "input " + std::to_string(i) + " has shape " + shape_str(s) + ", incompatible with " + shape_str(s0) +
                  " outside axis " + std::to_string(axis));
      out[size_t(axis)] += s[size_t(axis)];
    }
    sdk::Tensor y = ctx.output(0, out, first.dl_dtype());
    if (sdk::numel(out) == 0) return;
    to_int(sdk::numel(out), "output size");
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= out[size_t(d)];
    for (int64_t d = axis + 1; d < rank; ++d) inner *= out[size_t(d)];
    const cl_int out_block = cl_int(out[size_t(axis)] * inner);
    DeviceEnv& e = env(y);
    const char* kernel = sized_kernel(*this, "concat", element_size(first));
    int64_t at = 0;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      sdk::Tensor t = ctx.input(i);
      const int64_t block = t.dim(int(axis)) * inner;
      if (block > 0 && outer > 0)
        launch(e, Program::kCopy, kernel).arg(buf(t)).arg(buf(y)).arg(cl_int(outer)).arg(cl_int(block)).arg(out_block)
            .arg(cl_int(at)).run({size_t(outer * block)});
      at += block;
    }
  }

 private:
  int64_t axis_;
};

class Transpose : public NodeKernel {
 public:
  explicit Transpose(const sdk::Node& node) : NodeKernel(node), perm_(node.attr_ints("perm")) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "data");
    const sdk::Shape in = x.shape();
    const size_t r = in.size();
    std::vector<int64_t> perm = perm_;
    if (perm.empty())
      for (size_t i = 0; i < r; ++i) perm.push_back(int64_t(r - 1 - i));
    check(perm.size() == r, "perm " + shape_str(perm) + " does not match the input rank " + std::to_string(r));
    std::vector<bool> seen(r, false);
    for (int64_t& p : perm) {
      check(p >= -int64_t(r) && p < int64_t(r) && !seen[size_t(p < 0 ? p + int64_t(r) : p)],
            "perm " + shape_str(perm_) + " is not a permutation of 0.." + std::to_string(r - 1));
      if (p < 0) p += int64_t(r);
      seen[size_t(p)] = true;
    }
    std::vector<int64_t> strides(r);
    int64_t step = 1;
    for (size_t i = r; i-- > 0;) {
      strides[i] = step;
      step *= in[i];
    }
    sdk::Shape out;
    std::vector<int64_t> od, is;
    for (size_t i = 0; i < r; ++i) {
      const int64_t d = in[size_t(perm[i])], s = strides[size_t(perm[i])];
      out.push_back(d);
      if (d == 1) continue;
      // Neighbours in the output that are neighbours in the input merge.
      if (!is.empty() && is.back() == s * d) {
        od.back() *= d;
        is.back() = s;
      } else {
        od.push_back(d);
        is.push_back(s);
      }
    }
    sdk::Tensor y = ctx.output(0, out, x.dl_dtype());
    const int64_t n = x.numel();
    if (n == 0) return;
    Launch l = launch(env(y), Program::kCopy, sized_kernel(*this, "transpose", element_size(x)));
    l.arg(buf(x)).arg(buf(y)).arg(to_int(n, "size")).arg(cl_int(od.size())).arg(pack8(od, *this, "transpose"));
    l.arg(pack8(is, *this, "transpose")).run({size_t(n)});
  }

 private:
  std::vector<int64_t> perm_;
};

}  // namespace

void register_shape(sdk::Registrar& reg) {
  const uint32_t inplace = SINGA_KERNEL_MAY_INPLACE;
  const uint64_t shape_input = uint64_t(1) << 1;
  reg.kernel<Reshape>("", "Reshape", 1, 4, "opencl", {{"T", 0, kDataTypes}}, inplace);
  // 5: shape becomes input 1 (read on the host); 14 adds allowzero.
  reg.kernel<Reshape>("", "Reshape", 5, 13, "opencl", {{"T", 0, kDataTypes}}, inplace, shape_input);
  reg.kernel<Reshape>("", "Reshape", 14, SINGA_VERSION_OPEN, "opencl", {{"T", 0, kDataTypes}}, inplace, shape_input);
  // Flatten 9 adds types, 11 negative axes, 13 bfloat16: one class reads them all.
  reg.kernel<Flatten>("", "Flatten", 1, 17, "opencl", {{"T", 0, kDataTypes}}, inplace);
  // Squeeze/Unsqueeze: 11 negative axes, 13 axes as input 1 (on the host).
  reg.kernel<Squeeze>("", "Squeeze", 1, 12, "opencl", {{"T", 0, kDataTypes}}, inplace);
  reg.kernel<Squeeze>("", "Squeeze", 13, SINGA_VERSION_OPEN, "opencl", {{"T", 0, kDataTypes}}, inplace, shape_input);
  reg.kernel<Unsqueeze>("", "Unsqueeze", 1, 12, "opencl", {{"T", 0, kDataTypes}}, inplace);
  reg.kernel<Unsqueeze>("", "Unsqueeze", 13, SINGA_VERSION_OPEN, "opencl", {{"T", 0, kDataTypes}}, inplace, shape_input);
  reg.kernel<Identity>("", "Identity", 1, 17, "opencl", {{"T", 0, kDataTypes}}, inplace);
  reg.kernel<Dropout>("", "Dropout", 1, 11, "opencl", {{"T", 0, kF32}}, inplace);
  // From opset 12 a training_mode input may make the output random: the
  // empty type set for it sends every node that has one to the CPU, whose
  // generator the results must match.
  reg.kernel<Dropout>("", "Dropout", 12, 17, "opencl", {{"T", 0, kF32}, {"T2", 2, 0}}, inplace, 0b110);
  reg.kernel<Concat>("", "Concat", 1, 17, "opencl", {{"T", 0, kDataTypes}});
  reg.kernel<Transpose>("", "Transpose", 1, 17, "opencl", {{"T", 0, kDataTypes}});
}

}  // namespace opencl
}  // namespace singa
