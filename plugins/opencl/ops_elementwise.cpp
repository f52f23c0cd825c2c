// Add/Sub/Mul/Div/Pow with numpy broadcasting (and the broadcast/axis
// attributes before opset 7), unary activations and Clip (float).
#include "ops_common.hpp"
#include "register.hpp"

#include <cmath>
#include <limits>

namespace singa {
namespace opencl {

namespace {

enum BinaryOp : cl_int { kAdd = 0, kSub = 1, kMul = 2, kDiv = 3, kPow = 4 };
enum UnaryOp : cl_int {
  kRelu = 0, kSigmoid = 1, kTanh = 2, kLeakyRelu = 3, kElu = 4, kExp = 5, kLog = 6, kSqrt = 7, kNeg = 8, kAbs = 9,
  kClip = 10
};

bool broadcast_shape(const sdk::Shape& a, const sdk::Shape& b, sdk::Shape& out) {
  const size_t r = a.size() > b.size() ? a.size() : b.size();
  out.assign(r, 1);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da == db || db == 1)
      out[i] = da;
    else if (da == 1)
      out[i] = db;
    else
      return false;
  }
  return true;
}

// Element strides of `in` right-aligned to a rank-r output, 0 on broadcast dims.
std::vector<int64_t> aligned_strides(const sdk::Shape& in, size_t r) {
  std::vector<int64_t> s(r, 0);
  int64_t step = 1;
  for (size_t k = in.size(); k-- > 0;) {
    s[k + (r - in.size())] = in[k] == 1 ? 0 : step;
    step *= in[k];
  }
  return s;
}

template <BinaryOp Op>
class Binary : public NodeKernel {
 public:
  explicit Binary(const sdk::Node& node) : NodeKernel(node) {
    // Before opset 7, B broadcasts onto A only with broadcast=1, aligned at
    // `axis` (default: trailing dims); from 7 numpy rules apply.
    legacy_ = node.opset() < 7;
    if (legacy_) {
      broadcast_ = node.attr_int("broadcast", 0) != 0;
      has_axis_ = node.has_attr("axis");
      axis_ = node.attr_int("axis", 0);
    }
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor a = required(ctx, 0, "A"), b = required(ctx, 1, "B");
    check_float(a, "A");
    check_float(b, "B");
    const sdk::Shape as = a.shape();
    const sdk::Shape bs = legacy_ ? legacy_b_shape(as, b.shape()) : b.shape();
    sdk::Shape out;
    check(broadcast_shape(as, bs, out), "shapes " + shape_str(as) + " and " + shape_str(b.shape()) + " do not broadcast");
    sdk::Tensor y = ctx.output(0, out, a.dl_dtype());
    const int64_t n = sdk::numel(out);
    if (n == 0) return;
    const cl_int count = to_int(n, "output size");
    DeviceEnv& e = env(y);
    if (as == out && bs == out) {
      launch(e, Program::kElementwise, "binary_same").arg(buf(a)).arg(buf(b)).arg(buf(y)).arg(count).arg(cl_int(Op)).run({size_t(n)});
      return;
    }
    if (as == out && b.numel() == 1) {
      launch(e, Program::kElementwise, "binary_scalar_b").arg(buf(a)).arg(buf(b)).arg(buf(y)).arg(count).arg(cl_int(Op)).run({size_t(n)});
      return;
    }
    // Merge adjacent dims that both inputs step through as through one.
    const size_t r = out.size();
    const std::vector<int64_t> sa = aligned_strides(as, r), sb = aligned_strides(bs, r);
    std::vector<int64_t> dims, ga, gb;
    for (size_t i = 0; i < r; ++i) {
      if (out[i] == 1) continue;
      if (!dims.empty() && ga.back() == sa[i] * out[i] && gb.back() == sb[i] * out[i]) {
        dims.back() *= out[i];
        ga.back() = sa[i];
        gb.back() = sb[i];
        continue;
      }
      dims.push_back(out[i]);
      ga.push_back(sa[i]);
      gb.push_back(sb[i]);
    }
    Launch l = launch(e, Program::kElementwise, "binary_bcast");
    l.arg(buf(a)).arg(buf(b)).arg(buf(y)).arg(count).arg(cl_int(dims.size()));
    l.arg(pack8(dims, *this, "broadcast")).arg(pack8(ga, *this, "broadcast")).arg(pack8(gb, *this, "broadcast"));
    l.arg(cl_int(Op)).run({size_t(n)});
  }

 private:
  sdk::Shape legacy_b_shape(const sdk::Shape& as, const sdk::Shape& bs) const {
    if (!broadcast_) {
      check(as == bs, "shapes " + shape_str(as) + " and " + shape_str(bs) +
                          " differ and the broadcast attribute is not set (opset < 7)");
      return bs;
    }
    const int64_t rank = int64_t(as.size()), brank = int64_t(bs.size());
    int64_t axis = has_axis_ ? axis_ : rank - brank;
    if (axis < 0) axis += rank;
    check(brank <= rank && axis >= 0 && axis + brank <= rank,
          "cannot broadcast B " + shape_str(bs) + " onto A " + shape_str(as) + " at axis " + std::to_string(axis));
    sdk::Shape full(as.size(), 1);
    for (int64_t i = 0; i < brank; ++i) {
      const int64_t d = bs[size_t(i)];
      check(d == 1 || d == as[size_t(axis + i)],
            "cannot broadcast B " + shape_str(bs) + " onto A " + shape_str(as) + " at axis " + std::to_string(axis));
      full[size_t(axis + i)] = d;
    }
    return full;
  }

  bool legacy_ = false, broadcast_ = false, has_axis_ = false;
  int64_t axis_ = 0;
};

void run_unary(const NodeKernel& k, sdk::Context& ctx, UnaryOp op, float alpha, float beta) {
  sdk::Tensor x = k.required(ctx, 0, "X");
  k.check_float(x, "X");
  sdk::Tensor y = ctx.output(0, x.shape(), x.dl_dtype());  // may be x itself (in place)
  const int64_t n = x.numel();
  if (n == 0) return;
  Launch l = k.launch(k.env(y), Program::kElementwise, "unary");
  l.arg(k.buf(x)).arg(k.buf(y)).arg(k.to_int(n, "size")).arg(cl_int(op)).arg(alpha).arg(beta).run({size_t(n)});
}

template <UnaryOp Op>
class Unary : public NodeKernel {
 public:
  explicit Unary(const sdk::Node& node)
      : NodeKernel(node), alpha_(node.attr_float("alpha", Op == kLeakyRelu ? 0.01f : 1.0f)) {}
  void compute(sdk::Context& ctx) const { run_unary(*this, ctx, Op, alpha_, 0.0f); }

 private:
  float alpha_;
};

// Clip: bounds are attributes before opset 11, optional scalar inputs (read
// on the host) from 11; absent bounds do not clip.
class Clip : public NodeKernel {
 public:
  explicit Clip(const sdk::Node& node) : NodeKernel(node), from_attrs_(node.opset() < 11) {
    if (from_attrs_) {
      min_ = node.attr_float("min", -std::numeric_limits<float>::max());
      max_ = node.attr_float("max", std::numeric_limits<float>::max());
    }
  }

  void compute(sdk::Context& ctx) const {
    float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
    if (from_attrs_) {
      lo = min_;
      hi = max_;
    } else {
      lo = bound(ctx, 1, "min", lo);
      hi = bound(ctx, 2, "max", hi);
    }
    run_unary(*this, ctx, kClip, lo, hi);
  }

 private:
  float bound(const sdk::Context& ctx, size_t i, const char* name, float def) const {
    sdk::Tensor t = ctx.input(i);
    if (!t.present()) return def;
    check(t.raw()->device.device_type == kDLCPU, std::string(name) + " must be on the host");
    check_float(t, name);
    check(t.numel() == 1, std::string(name) + " must be a scalar, got shape " + shape_str(t.shape()));
    return t.data<float>()[0];
  }

  bool from_attrs_;
  float min_ = 0, max_ = 0;
};

template <class K>
void register_two_eras(sdk::Registrar& reg, const char* op) {
  // 1-6: the broadcast/axis attributes; 7 on: numpy broadcasting.
  reg.kernel<K>("", op, 1, 6, "opencl", {{"T", 0, kF32}, {"T", 1, kF32}});
  reg.kernel<K>("", op, 7, 17, "opencl", {{"T", 0, kF32}, {"T", 1, kF32}});
}

template <UnaryOp Op>
void register_unary(sdk::Registrar& reg, const char* op, int since = 1) {
  reg.kernel<Unary<Op>>("", op, since, 17, "opencl", {{"T", 0, kF32}}, SINGA_KERNEL_MAY_INPLACE);
}

}  // namespace

void register_elementwise(sdk::Registrar& reg) {
  register_two_eras<Binary<kAdd>>(reg, "Add");
  register_two_eras<Binary<kSub>>(reg, "Sub");
  register_two_eras<Binary<kMul>>(reg, "Mul");
  register_two_eras<Binary<kDiv>>(reg, "Div");
  register_two_eras<Binary<kPow>>(reg, "Pow");

  // Versions differ in the ignored consumed_inputs attribute and in types
  // (integers, bfloat16) that stay on the CPU.
  register_unary<kRelu>(reg, "Relu");
  register_unary<kSigmoid>(reg, "Sigmoid");
  register_unary<kTanh>(reg, "Tanh");
  register_unary<kLeakyRelu>(reg, "LeakyRelu");
  register_unary<kElu>(reg, "Elu");
  register_unary<kExp>(reg, "Exp");
  register_unary<kLog>(reg, "Log");
  register_unary<kSqrt>(reg, "Sqrt");
  register_unary<kNeg>(reg, "Neg");
  register_unary<kAbs>(reg, "Abs");

  const uint32_t inplace = SINGA_KERNEL_MAY_INPLACE;
  reg.kernel<Clip>("", "Clip", 1, 10, "opencl", {{"T", 0, kF32}}, inplace);
  reg.kernel<Clip>("", "Clip", 11, 11, "opencl", {{"T", 0, kF32}}, inplace, 0b110);
  reg.kernel<Clip>("", "Clip", 12, 17, "opencl", {{"T", 0, kF32}}, inplace, 0b110);
}

}  // namespace opencl
}  // namespace singa
