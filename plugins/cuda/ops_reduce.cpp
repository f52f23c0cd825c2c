// The Reduce* family and ArgMax/ArgMin (kernels_math.cu), with the CPU's
// opset ranges, axes rules and accumulation (ops_reduce/reduce.cpp,
// ops_reduce/argminmax.cpp).
#include "kernels_math.hpp"
#include "ops_common.hpp"
#include "register.hpp"

namespace singa {
namespace cuda {

namespace {

// `axes` as a per-dim mask; empty axes mean every axis. Duplicates and
// out-of-range values fail naming the value.
std::vector<bool> axes_mask(const std::vector<int64_t>& axes, int64_t rank, const NodeKernel& k) {
  std::vector<bool> mask(size_t(rank), axes.empty());
  for (int64_t a : axes) {
    const int64_t d = k.axis_in(a, rank, "axes value");
    k.check(!mask[size_t(d)], "axes value " + std::to_string(a) + " names an axis twice");
    mask[size_t(d)] = true;
  }
  return mask;
}

// Groups adjacent dims of the same kind (size-1 dims vanish) into the
// kernel's plan; `out` gets the output shape.
ReducePlan make_reduce_plan(const sdk::Shape& in, const std::vector<bool>& reduce, bool keepdims, sdk::Shape& out,
                            const NodeKernel& k) {
  std::vector<int64_t> gdims;
  std::vector<bool> gred;
  out.clear();
  for (size_t d = 0; d < in.size(); ++d) {
    if (!reduce[d] || keepdims) out.push_back(reduce[d] ? 1 : in[d]);
    if (in[d] == 1) continue;
    if (!gdims.empty() && gred.back() == reduce[d]) {
      gdims.back() *= in[d];
    } else {
      gdims.push_back(in[d]);
      gred.push_back(reduce[d]);
    }
  }
  ReducePlan p;
  p.outputs = 1;
  p.count = 1;
  int64_t st = 1;
  std::vector<int64_t> gstrides(gdims.size());
  for (size_t i = gdims.size(); i-- > 0;) {
    gstrides[i] = st;
    st *= gdims[i];
  }
  for (size_t i = 0; i < gdims.size(); ++i) {
    int& rank = gred[i] ? p.red_rank : p.kept_rank;
    if (rank >= kMaxReduceDims)
      k.fail("the reduction needs more than " + std::to_string(kMaxReduceDims) + " separate dimension groups",
             SINGA_UNIMPLEMENTED);
    (gred[i] ? p.red_dims : p.kept_dims)[rank] = gdims[i];
    (gred[i] ? p.red_strides : p.kept_strides)[rank] = gstrides[i];
    ++rank;
    (gred[i] ? p.count : p.outputs) *= gdims[i];
  }
  return p;
}

// AxesFromInput: ReduceSum from opset 13 reads `axes` from input 1 (on the
// host) and knows noop_with_empty_axes; the other forms read the attribute.
template <ReduceOp Op, bool AxesFromInput>
class Reduce : public NodeKernel {
 public:
  explicit Reduce(const sdk::Node& node)
      : NodeKernel(node), keepdims_(node.attr_int("keepdims", 1) != 0),
        noop_(AxesFromInput && node.attr_int("noop_with_empty_axes", 0) != 0) {
    if (!AxesFromInput) axes_ = node.attr_ints("axes");
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "data");
    std::vector<int64_t> axes = axes_;
    if (AxesFromInput && ctx.has_input(1)) {
      sdk::Tensor a = ctx.input(1);
      check(a.dtype() == SINGA_ONNX_INT64, std::string("input 'axes' must be int64, got ") + sdk::dtype_name(a.dtype()));
      axes = host_ints(a, "axes");
    }
    const sdk::Shape in = x.shape();
    const int64_t rank = int64_t(in.size());
    const std::vector<bool> mask = (noop_ && axes.empty()) ? std::vector<bool>(size_t(rank), false)
                                                           : axes_mask(axes, rank, *this);
    sdk::Shape out;
    const ReducePlan plan = make_reduce_plan(in, mask, keepdims_, out, *this);
    sdk::Tensor y = ctx.output(0, out, x.dl_dtype());
    if (y.numel() == 0) return;
    DeviceGuard guard(device_of(ctx));
    check_launch(launch_reduce(Op, dtype_of(x), x.data_ptr(), y.data_ptr(), plan, stream_of(ctx)), "reduce kernel");
  }

 private:
  bool keepdims_, noop_;
  std::vector<int64_t> axes_;
};

template <bool IsMax>
class ArgExtreme : public NodeKernel {
 public:
  explicit ArgExtreme(const sdk::Node& node)
      : NodeKernel(node), axis_(node.attr_int("axis", 0)), keepdims_(node.attr_int("keepdims", 1) != 0),
        last_(node.attr_int("select_last_index", 0) != 0) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "data");
    const sdk::Shape in = x.shape();
    const int64_t axis = axis_in(axis_, int64_t(in.size()), "axis");
    check(in[size_t(axis)] != 0, "cannot take the index of an extreme along an empty axis");
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < int64_t(in.size()); ++i)
      if (i != axis) (i < axis ? outer : inner) *= in[size_t(i)];
    sdk::Shape out = in;
    if (keepdims_)
      out[size_t(axis)] = 1;
    else
      out.erase(out.begin() + axis);
    sdk::Tensor y = ctx.output(0, out, SINGA_ONNX_INT64);
    DeviceGuard guard(device_of(ctx));
    check_launch(launch_arg_extreme(IsMax, last_, dtype_of(x), x.data_ptr(), y.data<int64_t>(), outer, in[size_t(axis)],
                                    inner, stream_of(ctx)),
                 "arg max/min kernel");
  }

 private:
  int64_t axis_;
  bool keepdims_, last_;
};

template <ReduceOp Op>
void reg_attr_reduce(sdk::Registrar& reg, const char* op, bool split_at_12) {
  using K = Reduce<Op, false>;
  // ReduceMax/Min-12 add 8-bit integers (which stay on the CPU).
  if (split_at_12) {
    reg.kernel<K>("", op, 1, 11, "cuda", {{"T", 0, kRealInt}});
    reg.kernel<K>("", op, 12, 12, "cuda", {{"T", 0, kRealInt}});
  } else {
    reg.kernel<K>("", op, 1, 12, "cuda", {{"T", 0, kRealInt}});
  }
  reg.kernel<K>("", op, 13, 17, "cuda", {{"T", 0, kRealInt}});
}

}  // namespace

void register_reduce(sdk::Registrar& reg) {
  reg.kernel<Reduce<ReduceOp::kSum, false>>("", "ReduceSum", 1, 12, "cuda", {{"T", 0, kRealInt}});
  reg.kernel<Reduce<ReduceOp::kSum, true>>("", "ReduceSum", 13, SINGA_VERSION_OPEN, "cuda", {{"T", 0, kRealInt}}, 0, input_bit(1));
  reg_attr_reduce<ReduceOp::kMean>(reg, "ReduceMean", false);
  reg_attr_reduce<ReduceOp::kProd>(reg, "ReduceProd", false);
  reg_attr_reduce<ReduceOp::kSumSquare>(reg, "ReduceSumSquare", false);
  reg_attr_reduce<ReduceOp::kL1>(reg, "ReduceL1", false);
  reg_attr_reduce<ReduceOp::kL2>(reg, "ReduceL2", false);
  reg_attr_reduce<ReduceOp::kLogSum>(reg, "ReduceLogSum", false);
  reg_attr_reduce<ReduceOp::kLogSumExp>(reg, "ReduceLogSumExp", false);
  reg_attr_reduce<ReduceOp::kMax>(reg, "ReduceMax", true);
  reg_attr_reduce<ReduceOp::kMin>(reg, "ReduceMin", true);

  reg.kernel<ArgExtreme<true>>("", "ArgMax", 1, 12, "cuda", {{"T", 0, kRealInt}});
  reg.kernel<ArgExtreme<true>>("", "ArgMax", 13, SINGA_VERSION_OPEN, "cuda", {{"T", 0, kRealInt}});
  reg.kernel<ArgExtreme<false>>("", "ArgMin", 1, 12, "cuda", {{"T", 0, kRealInt}});
  reg.kernel<ArgExtreme<false>>("", "ArgMin", 13, SINGA_VERSION_OPEN, "cuda", {{"T", 0, kRealInt}});
}

}  // namespace cuda
}  // namespace singa
