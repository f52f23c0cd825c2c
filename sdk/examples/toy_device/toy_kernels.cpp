// toy_kernels.cpp - Add/AddRelu, Relu, MatMul and Gemm/GemmRelu on the toy
// device. One class serves a standard op and its fused form: the fused
// kernel is the plain one with the activation applied before the store, the
// whole point of fusing (no round trip of the intermediate through memory).
//
// compute() checks and allocates on the calling thread, then queues the
// arithmetic on the run's stream (ctx.stream(), through run_on) and returns:
// the core orders everything after it. Captures are by value, since the
// work runs after compute has returned; the buffers stay alive until the
// stream is past it (the host's promise).
#include "toy_kernels.hpp"

#include "toy_device.hpp"
#include "toy_pool.hpp"

#include <string>
#include <vector>

namespace toy {

namespace {

using singa::sdk::Context;
using singa::sdk::Node;
using singa::sdk::Shape;
using singa::sdk::Tensor;

[[noreturn]] void decline(const std::string& why) { throw singa::sdk::Error(SINGA_UNIMPLEMENTED, "toy: " + why); }

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

// The shape of input i when the prepare knows all of it; declines otherwise
// (the toy plans its work at create, as a real device compiles it then).
Shape static_shape(const Node& node, size_t i, const char* what) {
  const singa_value_info v = node.input_info(i);
  if (v.ndim < 0) decline(std::string(what) + "'s rank is unknown at prepare time");
  Shape s(v.dims, v.dims + v.ndim);
  for (int64_t d : s)
    if (d < 0) decline(std::string(what) + " has a dimension unknown at prepare time");
  return s;
}

// A kernel's inputs arrive in toy memory: the core copied them there. Seeing
// anything else means a copy was skipped, which is worth an error.
const float* toy_data(const Tensor& t, const char* what) {
  const size_t bytes = size_t(t.numel()) * sizeof(float);
  if (t.raw()->device.device_type != kDLExtDev || !pool().holds(t.data_ptr(), 0, bytes))
    singa::sdk::fail(std::string("toy: ") + what + " is not in toy memory", SINGA_INTERNAL);
  return t.data<float>();
}

inline float relu(float v) { return v > 0.0f ? v : 0.0f; }

}  // namespace

std::string add_declines(const Shape& a, const Shape& b) {
  if (a == b || singa::sdk::numel(a) == 1 || singa::sdk::numel(b) == 1) return "";
  return "Add broadcasts only a single element, not " + shape_str(a) + " with " + shape_str(b);
}

std::string dense_declines(const Shape& a, const Shape& b) {
  if (a.size() == 2 && b.size() == 2) return "";
  return "takes rank-2 A and B only, not " + shape_str(a) + " and " + shape_str(b);
}

namespace {

// ------------------------------------------------------------------ Add

// Y = A + B (then Relu when fused). Takes equal shapes or a single-element
// operand; any other broadcast is declined.
class Add {
 public:
  Add(const Node& node, bool fused_relu) : relu_(fused_relu) {
    const std::string why = add_declines(static_shape(node, 0, "A"), static_shape(node, 1, "B"));
    if (!why.empty()) decline(why);
  }
  void compute(Context& ctx) const {
    Tensor a = ctx.input(0), b = ctx.input(1);
    // The run's shapes are the prepare's unless a kernel upstream broke its
    // promise; checked, because a mismatch here would read out of bounds.
    const std::string why = add_declines(a.shape(), b.shape());
    if (!why.empty()) singa::sdk::fail(why);
    const bool a_full = a.numel() >= b.numel();
    const Tensor& big = a_full ? a : b;
    auto y = ctx.output(0, big.shape(), SINGA_ONNX_FLOAT);
    const float* pa = toy_data(a, "Add input A");
    const float* pb = toy_data(b, "Add input B");
    float* py = y.data<float>();
    const int64_t n = big.numel();
    const bool a_one = a.numel() == 1 && n != 1, b_one = b.numel() == 1 && n != 1, fused = relu_;
    run_on(ctx.stream(), [=] {
      for (int64_t i = 0; i < n; ++i) {
        const float v = pa[a_one ? 0 : i] + pb[b_one ? 0 : i];
        py[i] = fused ? relu(v) : v;
      }
    });
  }

 private:
  bool relu_;
};

struct PlainAdd : Add {
  explicit PlainAdd(const Node& node) : Add(node, false) {}
};
struct AddRelu : Add {
  explicit AddRelu(const Node& node) : Add(node, true) {}
};

// ------------------------------------------------------------------ Relu

struct Relu {
  explicit Relu(const Node&) {}
  void compute(Context& ctx) const {
    Tensor x = ctx.input(0);
    auto y = ctx.output(0, x.shape(), SINGA_ONNX_FLOAT);
    const float* px = toy_data(x, "Relu input");
    float* py = y.data<float>();
    const int64_t n = x.numel();
    run_on(ctx.stream(), [=] {
      for (int64_t i = 0; i < n; ++i) py[i] = relu(px[i]);
    });
  }
};

// ------------------------------------------------------- MatMul and Gemm

// Y[M,N] = alpha * op(A) op(B) + beta * C (then Relu when fused), with op()
// an optional transpose; MatMul is the case without C, transposes or
// scales. Only rank-2 A and B: a batched MatMul is declined.
class Dense {
 public:
  Dense(const Node& node, bool gemm, bool fused_relu) : relu_(fused_relu) {
    const Shape a = static_shape(node, 0, "A"), b = static_shape(node, 1, "B");
    const std::string why = dense_declines(a, b);
    if (!why.empty()) decline(why);
    if (gemm) {
      trans_a_ = node.attr_int("transA", 0) != 0;
      trans_b_ = node.attr_int("transB", 0) != 0;
      alpha_ = node.attr_float("alpha", 1.0f);
      beta_ = node.attr_float("beta", 1.0f);
    }
    m_ = trans_a_ ? a[1] : a[0];
    k_ = trans_a_ ? a[0] : a[1];
    n_ = trans_b_ ? b[0] : b[1];
    if ((trans_b_ ? b[1] : b[0]) != k_)
      node.fail("inner dimensions differ: A " + shape_str(a) + ", B " + shape_str(b));
    if (gemm && node.has_input(2)) {
      const Shape c = static_shape(node, 2, "C");
      // C broadcasts to [M, N] (unidirectionally): each trailing dim is 1 or matches.
      if (c.size() > 2) node.fail("C has rank " + std::to_string(c.size()) + "; Gemm takes at most 2");
      c_rows_ = c.size() == 2 ? c[0] : 1;
      c_cols_ = c.empty() ? 1 : c.back();
      if ((c_rows_ != 1 && c_rows_ != m_) || (c_cols_ != 1 && c_cols_ != n_))
        node.fail("C " + shape_str(c) + " does not broadcast to [" + std::to_string(m_) + "," + std::to_string(n_) + "]");
      has_c_ = true;
    }
  }

  void compute(Context& ctx) const {
    Tensor a = ctx.input(0), b = ctx.input(1);
    // The loops below trust the prepare-time shapes: check the run's.
    const Shape want_a = trans_a_ ? Shape{k_, m_} : Shape{m_, k_}, want_b = trans_b_ ? Shape{n_, k_} : Shape{k_, n_};
    if (a.shape() != want_a || b.shape() != want_b)
      singa::sdk::fail("toy: A " + shape_str(a.shape()) + " and B " + shape_str(b.shape()) + " are not the prepared " +
                       shape_str(want_a) + " and " + shape_str(want_b));
    if (has_c_ && ctx.input(2).numel() != c_rows_ * c_cols_)
      singa::sdk::fail("toy: C has " + std::to_string(ctx.input(2).numel()) + " elements, not the prepared " +
                       std::to_string(c_rows_ * c_cols_));
    auto y = ctx.output(0, {m_, n_}, SINGA_ONNX_FLOAT);
    const float* pa = toy_data(a, "A");
    const float* pb = toy_data(b, "B");
    const float* pc = has_c_ ? toy_data(ctx.input(2), "C") : nullptr;
    float* py = y.data<float>();
    // Strides of op(A) and op(B) as read: a transpose is only a swap of them.
    const int64_t a_row = trans_a_ ? 1 : k_, a_col = trans_a_ ? m_ : 1;
    const int64_t b_row = trans_b_ ? 1 : n_, b_col = trans_b_ ? k_ : 1;
    const int64_t m = m_, n = n_, k = k_, c_rows = c_rows_, c_cols = c_cols_;
    const float alpha = alpha_, beta = beta_;
    const bool fused = relu_;
    run_on(ctx.stream(), [=] {
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          float acc = 0.0f;
          for (int64_t p = 0; p < k; ++p) acc += pa[i * a_row + p * a_col] * pb[p * b_row + j * b_col];
          float v = alpha * acc;
          if (pc) v += beta * pc[(c_rows == 1 ? 0 : i) * c_cols + (c_cols == 1 ? 0 : j)];
          py[i * n + j] = fused ? relu(v) : v;
        }
    });
  }

 private:
  bool relu_;
  bool trans_a_ = false, trans_b_ = false, has_c_ = false;
  float alpha_ = 1.0f, beta_ = 1.0f;
  int64_t m_ = 0, k_ = 0, n_ = 0, c_rows_ = 1, c_cols_ = 1;
};

struct MatMul : Dense {
  explicit MatMul(const Node& node) : Dense(node, false, false) {}
};
struct Gemm : Dense {
  explicit Gemm(const Node& node) : Dense(node, true, false) {}
};
struct GemmRelu : Dense {
  explicit GemmRelu(const Node& node) : Dense(node, true, true) {}
};

}  // namespace

void register_kernels(singa::sdk::Registrar& reg) {
  const uint64_t f32 = singa::sdk::bit(SINGA_ONNX_FLOAT);
  // An explicit end version E serves every opset up to the op's next change
  // after E (see SINGA_VERSION_OPEN in singa_abi.h): Add-14 and Relu-14 only
  // added element types, and Gemm-13 and MatMul-13 are the newest versions.
  reg.kernel<PlainAdd>("", "Add", 7, 14, kDeviceName, {{"T", 0, f32}}, SINGA_KERNEL_MAY_INPLACE);
  reg.kernel<Relu>("", "Relu", 6, 14, kDeviceName, {{"T", 0, f32}}, SINGA_KERNEL_MAY_INPLACE);
  reg.kernel<MatMul>("", "MatMul", 1, 13, kDeviceName, {{"T", 0, f32}});
  // Gemm-7 is the first whose C broadcasts unconditionally.
  reg.kernel<Gemm>("", "Gemm", 7, 13, kDeviceName, {{"T", 0, f32}});
  // The fused ops: opset 1 of the toy's domain, for every later opset.
  reg.kernel<AddRelu>(kDomain, "AddRelu", 1, SINGA_VERSION_OPEN, kDeviceName, {{"T", 0, f32}},
                      SINGA_KERNEL_MAY_INPLACE);
  reg.kernel<GemmRelu>(kDomain, "GemmRelu", 1, SINGA_VERSION_OPEN, kDeviceName, {{"T", 0, f32}});
}

}  // namespace toy
