// CausalConvWithState (opset 27): a depthwise causal 1-D convolution that
// carries its left context between calls.
//
//   input [B, C, L], weight [C, 1, k], bias [C] (optional),
//   past_state [B, C, k-1] (optional; zeros without it);
//   padded = concat(past_state, input) along the length;
//   output[b, c, t] = act(bias[c] + sum_i weight[c, 0, i] padded[b, c, t + i]),
//   act = identity ("none") or x sigmoid(x) ("silu", alias "swish");
//   present_state = the last k-1 positions of padded.
#include "nn_common.hpp"
#include "register.hpp"

#include <cmath>

namespace singa {
namespace nn {
namespace {

class CausalConvWithState : public NodeKernel {
 public:
  explicit CausalConvWithState(const sdk::Node& node) : NodeKernel(node) {
    const std::string act = node.attr_string("activation", "none");
    if (act == "none")
      silu_ = false;
    else if (act == "silu" || act == "swish")
      silu_ = true;
    else
      fail("attribute activation '" + act + "' is not one of none, silu, swish");
  }

  void compute(sdk::Context& ctx) const {
    const sdk::Tensor x = required(ctx, 0, "input"), w = required(ctx, 1, "weight");
    const sdk::Tensor bias = ctx.input(2), past = ctx.input(3);
    const Shape xs = x.shape(), ws = w.shape();
    SINGA_CHECK(xs.size() == 3, "input must be [B, C, L], got " + shape_str(xs));
    const int64_t B = xs[0], C = xs[1], L = xs[2];
    SINGA_CHECK(ws.size() == 3 && ws[0] == C && ws[1] == 1 && ws[2] >= 1,
                "weight must be [" + std::to_string(C) + ", 1, k] with k >= 1, got " + shape_str(ws));
    const int64_t k = ws[2], K1 = k - 1;
    check(w.dtype() == x.dtype(), "weight must have input's element type");
    if (bias.present()) {
      check(bias.dtype() == x.dtype(), "bias must have input's element type");
      SINGA_CHECK(bias.shape() == Shape{C}, "bias must be [" + std::to_string(C) + "], got " + shape_str(bias.shape()));
    }
    if (past.present()) {
      check(past.dtype() == x.dtype(), "past_state must have input's element type");
      SINGA_CHECK(past.shape() == (Shape{B, C, K1}), "past_state must be [" + std::to_string(B) + ", " +
                                                         std::to_string(C) + ", " + std::to_string(K1) + "], got " +
                                                         shape_str(past.shape()));
    }
    sdk::Tensor y = ctx.output(0, xs, x.dl_dtype());
    sdk::Tensor st;
    if (ctx.num_outputs() > 1) st = ctx.output(1, Shape{B, C, K1}, x.dl_dtype());
    if (B * C == 0) return;
    dispatch_real(x.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      using A = acc_t<T>;
      const T* px = x.data<T>();
      const T* pw = w.data<T>();
      const T* pb = bias.present() ? bias.data<T>() : nullptr;
      const T* pp = past.present() ? past.data<T>() : nullptr;
      T* py = y.data<T>();
      T* ps = st.present() ? st.data<T>() : nullptr;
      ctx.parallel_for(B * C, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, L * k)), [&](int64_t lo, int64_t hi) {
        std::vector<A> pad(static_cast<size_t>(L + K1)), wt(static_cast<size_t>(k));
        for (int64_t bc = lo; bc < hi; ++bc) {
          const int64_t c = bc % C;
          for (int64_t i = 0; i < K1; ++i) pad[size_t(i)] = pp ? to_acc<A>(pp[bc * K1 + i]) : A(0);
          for (int64_t t = 0; t < L; ++t) pad[size_t(K1 + t)] = to_acc<A>(px[bc * L + t]);
          for (int64_t i = 0; i < k; ++i) wt[size_t(i)] = to_acc<A>(pw[c * k + i]);
          const A b0 = pb ? to_acc<A>(pb[c]) : A(0);
          for (int64_t t = 0; t < L; ++t) {
            A acc = 0;
            for (int64_t i = 0; i < k; ++i) acc += wt[size_t(i)] * pad[size_t(t + i)];
            acc += b0;
            if (silu_) {
              // The reference rounds the convolution to the input's type first.
              const A r = to_acc<A>(from_acc<T>(acc));
              acc = r / (A(1) + std::exp(-r));
            }
            py[bc * L + t] = from_acc<T>(acc);
          }
          if (ps)
            for (int64_t i = 0; i < K1; ++i) ps[bc * K1 + i] = from_acc<T>(pad[size_t(L + i)]);
        }
      });
    });
  }

 private:
  bool silu_ = false;
};

}  // namespace

void register_causal_conv_state(sdk::Registrar& reg) {
  reg.kernel<CausalConvWithState>("", "CausalConvWithState", 27, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kRealTypes}});
}

}  // namespace nn
}  // namespace singa
