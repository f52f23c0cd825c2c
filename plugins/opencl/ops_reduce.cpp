// Softmax (the 2-D coerced form before opset 13, one axis from 13) and
// ReduceSum/ReduceMean/ReduceMax over any axes (attribute, or ReduceSum's
// `axes` input from opset 13, read on the host), float.
#include "ops_common.hpp"
#include "register.hpp"

namespace singa {
namespace opencl {

namespace {

class Softmax : public NodeKernel {
 public:
  explicit Softmax(const sdk::Node& node) : NodeKernel(node) {
    // Up to opset 12 the input is coerced to 2-D at `axis` (default 1) and
    // normalised over the flattened trailing block; from 13 over `axis`
    // (default -1) alone.
    coerce_2d_ = node.opset() < 13;
    axis_ = node.attr_int("axis", coerce_2d_ ? 1 : -1);
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "input");
    check_float(x, "input");
    const sdk::Shape s = x.shape();
    const int64_t rank = int64_t(s.size());
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    // Coerced 2-D allows axis == rank (an empty trailing block of size 1).
    const bool ok = coerce_2d_ ? (axis >= 0 && axis <= rank) : (axis >= 0 && axis < rank);
    check(ok, "axis " + std::to_string(axis_) + " is out of range for an input of shape " + shape_str(s));
    int64_t outer = 1, n = 1, inner = 1;
    for (int64_t i = 0; i < rank; ++i) {
      const int64_t d = s[size_t(i)];
      if (i < axis)
        outer *= d;
      else if (i == axis || coerce_2d_)
        n *= d;
      else
        inner *= d;
    }
    sdk::Tensor y = ctx.output(0, s, x.dl_dtype());
    if (x.numel() == 0) return;
    to_int(x.numel(), "size");
    Launch l = launch(env(y), Program::kReduce, "softmax");
    l.arg(buf(x)).arg(buf(y)).arg(cl_int(outer)).arg(cl_int(n)).arg(cl_int(inner)).run({size_t(outer * inner)});
  }

 private:
  bool coerce_2d_ = false;
  int64_t axis_ = -1;
};

enum ReduceOp : cl_int { kSum = 0, kMean = 1, kMax = 2 };

template <ReduceOp Op, bool kAxesInput>
class Reduce : public NodeKernel {
 public:
  explicit Reduce(const sdk::Node& node) : NodeKernel(node), keepdims_(node.attr_int("keepdims", 1) != 0) {
    if (kAxesInput)
      noop_ = node.attr_int("noop_with_empty_axes", 0) != 0;
    else
      axes_ = node.attr_ints("axes");
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "data");
    check_float(x, "data");
    std::vector<int64_t> axes = axes_;
    if (kAxesInput && ctx.has_input(1)) {
      sdk::Tensor a = ctx.input(1);
      check(a.raw()->device.device_type == kDLCPU, "axes must be on the host");
      check(a.dtype() == SINGA_ONNX_INT64, std::string("input 'axes' must be int64, got ") + sdk::dtype_name(a.dtype()));
      check(a.ndim() <= 1, "input 'axes' must be 1-D, got rank " + std::to_string(a.ndim()));
      axes = a.to_int_vector();
    }
    const sdk::Shape s = x.shape();
    const int64_t rank = int64_t(s.size());
    std::vector<bool> mask(s.size(), axes.empty() && !noop_);
    for (int64_t a : axes) {
      check(a >= -rank && a < rank, "axes value " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
      const size_t d = size_t(a < 0 ? a + rank : a);
      check(!mask[d], "axes value " + std::to_string(a) + " names an axis twice");
      mask[d] = true;
    }
    sdk::Shape out;
    // Kept and reduced dims with their input strides, merged where contiguous.
    std::vector<int64_t> kd, ks, rd, rs;
    int64_t count = 1, stride = 1;
    std::vector<int64_t> strides(s.size());
    for (size_t i = s.size(); i-- > 0;) {
      strides[i] = stride;
      stride *= s[i];
    }
    for (size_t i = 0; i < s.size(); ++i) {
      if (mask[i]) {
        count *= s[i];
        if (keepdims_) out.push_back(1);
      } else {
        out.push_back(s[i]);
      }
      if (s[i] == 1) continue;
      auto& dims = mask[i] ? rd : kd;
      auto& st = mask[i] ? rs : ks;
      if (!dims.empty() && st.back() == strides[i] * s[i]) {
        dims.back() *= s[i];
        st.back() = strides[i];
      } else {
        dims.push_back(s[i]);
        st.push_back(strides[i]);
      }
    }
    sdk::Tensor y = ctx.output(0, out, x.dl_dtype());
    const int64_t nout = sdk::numel(out);
    if (nout == 0) return;
    to_int(x.numel(), "input size");
    Launch l = launch(env(y), Program::kReduce, "reduce");
    l.arg(buf(x)).arg(buf(y)).arg(cl_int(nout)).arg(cl_int(kd.size())).arg(pack8(kd, *this, "kept dims"));
    l.arg(pack8(ks, *this, "kept dims")).arg(cl_int(rd.size())).arg(pack8(rd, *this, "reduced dims"));
    l.arg(pack8(rs, *this, "reduced dims")).arg(cl_int(count)).arg(cl_int(Op)).run({size_t(nout)});
  }

 private:
  bool keepdims_, noop_ = false;
  std::vector<int64_t> axes_;
};

}  // namespace

void register_reduce(sdk::Registrar& reg) {
  const uint32_t inplace = SINGA_KERNEL_MAY_INPLACE;
  reg.kernel<Softmax>("", "Softmax", 1, 12, "opencl", {{"T", 0, kF32}}, inplace);
  reg.kernel<Softmax>("", "Softmax", 13, SINGA_VERSION_OPEN, "opencl", {{"T", 0, kF32}}, inplace);
  // Versions up to 13 differ in types only (integers and bfloat16 stay on
  // the CPU); ReduceSum 13 takes axes as an input.
  reg.kernel<Reduce<kSum, false>>("", "ReduceSum", 1, 12, "opencl", {{"T", 0, kF32}});
  reg.kernel<Reduce<kSum, true>>("", "ReduceSum", 13, SINGA_VERSION_OPEN, "opencl", {{"T", 0, kF32}}, 0, uint64_t(1) << 1);
  reg.kernel<Reduce<kMean, false>>("", "ReduceMean", 1, 12, "opencl", {{"T", 0, kF32}});
  reg.kernel<Reduce<kMean, false>>("", "ReduceMean", 13, SINGA_VERSION_OPEN, "opencl", {{"T", 0, kF32}});
  reg.kernel<Reduce<kMax, false>>("", "ReduceMax", 1, 11, "opencl", {{"T", 0, kF32}});
  reg.kernel<Reduce<kMax, false>>("", "ReduceMax", 12, 12, "opencl", {{"T", 0, kF32}});
  reg.kernel<Reduce<kMax, false>>("", "ReduceMax", 13, SINGA_VERSION_OPEN, "opencl", {{"T", 0, kF32}});
}

}  // namespace opencl
}  // namespace singa
