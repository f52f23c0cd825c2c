// LinearAttention (opset 27): recurrent (linear) attention over a per-head
// state S [dk, dv], step by step along the sequence.
//
//   query [B, T, Hq*dk], key [B, T, Hkv*dk], value [B, T, Hkv*dv];
//   past_state [B, Hkv, dk, dv] (zeros without it);
//   decay [B, T, Hkv] or [B, T, Hkv*dk] (log gates; update rules "gated",
//   "gated_delta"); beta [B, T, Hkv] or [B, T, 1] ("delta", "gated_delta");
//   erase_gate [B, T, Hkv*dk] (optional, delta rules only).
//   Each step t, per KV head:
//     S *= exp(decay_t)                               (gated rules)
//     v  = beta_t (v_t - S^T (erase_t * k_t))         (delta rules)
//     S += k_t v^T
//     output_t for every query head h of the group (h / (Hq/Hkv) is the KV
//     head) = scale q_t S, scale defaulting to 1/sqrt(dk).
//   present_state = S, in past_state's type (query's without one).
// float and 16-bit types compute in float, as the reference does, double in
// double; the backward kernel is in linear_attention_grad.cpp.
#include "linear_attention_scan.hpp"
#include "nn_common.hpp"
#include "register.hpp"

#include <algorithm>
#include <cmath>

namespace singa {
namespace nn {
namespace {

class LinearAttention : public NodeKernel {
 public:
  explicit LinearAttention(const sdk::Node& node)
      : NodeKernel(node),
        q_heads_(node.attr_int("q_num_heads", 0)),
        kv_heads_(node.attr_int("kv_num_heads", 0)),
        scale_(node.attr_float("scale", 0.f)) {
    const std::string rule = node.attr_string("update_rule", "gated_delta");
    if (rule == "linear")
      gating_ = false, delta_ = false;
    else if (rule == "gated")
      gating_ = true, delta_ = false;
    else if (rule == "delta")
      gating_ = false, delta_ = true;
    else if (rule == "gated_delta")
      gating_ = true, delta_ = true;
    else
      fail("attribute update_rule '" + rule + "' is not one of linear, gated, delta, gated_delta");
    if (q_heads_ <= 0 || kv_heads_ <= 0 || q_heads_ % kv_heads_ != 0)
      fail("attributes q_num_heads (" + std::to_string(q_heads_) + ") and kv_num_heads (" + std::to_string(kv_heads_) +
           ") must be positive, q_num_heads a multiple of kv_num_heads");
  }

  void compute(sdk::Context& ctx) const {
    const LinearAttentionDims m = dims(ctx, ctx.num_inputs());
    const sdk::Tensor q = ctx.input(0), past = ctx.input(3);
    sdk::Tensor y = ctx.output(0, Shape{m.B, m.T, m.Hq * m.dv}, q.dl_dtype());
    sdk::Tensor st;
    if (ctx.num_outputs() > 1)
      st = ctx.output(1, Shape{m.B, m.Hkv, m.dk, m.dv}, past.present() ? past.dl_dtype() : q.dl_dtype());
    // float and the 16-bit types compute in float, as the reference does;
    // double in double (so that its gradient can be checked in float64).
    if (q.dtype() == SINGA_ONNX_DOUBLE)
      run<double>(ctx, m, y, st);
    else
      run<float>(ctx, m, y, st);
  }

  // The backward kernel: inputs are the forward inputs, outputs and output
  // gradients; one output per forward input.
  void backward(sdk::Context& ctx) const { linear_attention_backward(ctx, dims(ctx, ctx.num_outputs()), where()); }

 private:
  // The problem's sizes, from the first `inputs` inputs of ctx (checked).
  LinearAttentionDims dims(const sdk::Context& ctx, size_t inputs) const {
    const auto in = [&](size_t i) { return i < inputs ? ctx.input(i) : sdk::Tensor(); };
    const sdk::Tensor q = required(ctx, 0, "query"), k = required(ctx, 1, "key"), v = required(ctx, 2, "value");
    const sdk::Tensor past = in(3), decay = in(4), beta = in(5), erase = in(6);
    const int64_t Hq = q_heads_, Hkv = kv_heads_;
    for (const sdk::Tensor* t : {&q, &k, &v})
      SINGA_CHECK(t->ndim() == 3, "query, key and value must be [B, T, H*D], got " + shape_str(t->shape()));
    check(k.dtype() == q.dtype() && v.dtype() == q.dtype(), "query, key and value must have one element type");
    const int64_t B = q.dim(0), T = q.dim(1);
    SINGA_CHECK(k.dim(0) == B && v.dim(0) == B && k.dim(1) == T && v.dim(1) == T,
                "query " + shape_str(q.shape()) + ", key " + shape_str(k.shape()) + " and value " +
                    shape_str(v.shape()) + " must share batch and sequence length");
    check(q.dim(2) % Hq == 0 && k.dim(2) % Hkv == 0 && v.dim(2) % Hkv == 0,
          "hidden sizes are not multiples of the head counts");
    const int64_t dk = q.dim(2) / Hq, dv = v.dim(2) / Hkv;
    SINGA_CHECK(k.dim(2) / Hkv == dk,
                "key's head size " + std::to_string(k.dim(2) / Hkv) + " differs from query's " + std::to_string(dk));
    if (gating_ != decay.present())
      fail(std::string("update_rule ") + (gating_ ? "needs" : "forbids") + " the decay input");
    if (delta_ != beta.present()) fail(std::string("update_rule ") + (delta_ ? "needs" : "forbids") + " the beta input");
    if (erase.present() && !delta_) fail("update_rule forbids the erase_gate input");
    LinearAttentionDims m;
    if (decay.present()) {
      SINGA_CHECK(decay.ndim() == 3 && decay.dim(0) == B && decay.dim(1) == T &&
                      (decay.dim(2) == Hkv || decay.dim(2) == Hkv * dk),
                  "decay must be [" + std::to_string(B) + ", " + std::to_string(T) + ", " + std::to_string(Hkv) +
                      " or " + std::to_string(Hkv * dk) + "], got " + shape_str(decay.shape()));
      m.decay_per_dim = decay.dim(2) == Hkv * dk;  // with dk == 1 both readings agree
      m.decay_w = decay.dim(2);
    }
    if (beta.present()) {
      SINGA_CHECK(beta.ndim() == 3 && beta.dim(0) == B && beta.dim(1) == T && (beta.dim(2) == Hkv || beta.dim(2) == 1),
                  "beta must be [" + std::to_string(B) + ", " + std::to_string(T) + ", " + std::to_string(Hkv) +
                      " or 1], got " + shape_str(beta.shape()));
      m.beta_w = beta.dim(2);
    }
    if (erase.present())
      SINGA_CHECK(erase.shape() == (Shape{B, T, Hkv * dk}), "erase_gate must be [" + std::to_string(B) + ", " +
                                                                std::to_string(T) + ", " + std::to_string(Hkv * dk) +
                                                                "], got " + shape_str(erase.shape()));
    if (past.present())
      SINGA_CHECK(past.shape() == (Shape{B, Hkv, dk, dv}),
                  "past_state must be [" + std::to_string(B) + ", " + std::to_string(Hkv) + ", " + std::to_string(dk) +
                      ", " + std::to_string(dv) + "], got " + shape_str(past.shape()));
    m.B = B, m.T = T, m.Hq = Hq, m.Hkv = Hkv, m.dk = dk, m.dv = dv;
    m.gating = gating_, m.delta = delta_;
    m.scale = scale_ != 0.f ? double(scale_) : (dk > 0 ? 1.0 / std::sqrt(double(dk)) : 1.0);
    return m;
  }

  template <class A>
  void run(sdk::Context& ctx, const LinearAttentionDims& m, sdk::Tensor& y, sdk::Tensor& st) const {
    const sdk::Tensor q = ctx.input(0), k = ctx.input(1), v = ctx.input(2), past = ctx.input(3);
    const sdk::Tensor decay = ctx.input(4), beta = ctx.input(5), erase = ctx.input(6);
    const std::vector<A> qf = values_as<A>(q, where()), kf = values_as<A>(k, where()), vf = values_as<A>(v, where());
    const std::vector<A> df = decay.present() ? values_as<A>(decay, where()) : std::vector<A>();
    const std::vector<A> bf = beta.present() ? values_as<A>(beta, where()) : std::vector<A>();
    const std::vector<A> ef = erase.present() ? values_as<A>(erase, where()) : std::vector<A>();
    LinearAttentionInputs<A> in;
    in.q = qf.data(), in.k = kf.data(), in.v = vf.data();
    in.decay = df.empty() ? nullptr : df.data();
    in.beta = bf.empty() ? nullptr : bf.data();
    in.erase = ef.empty() ? nullptr : ef.data();
    std::vector<A> state(size_t(m.B * m.Hkv * m.dk * m.dv), A(0));
    if (past.present()) state = values_as<A>(past, where());
    std::vector<A> ya(size_t(m.B * m.T * m.Hq * m.dv));
    ctx.parallel_for(m.B * m.Hkv, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t bg = lo; bg < hi; ++bg)
        linear_attention_head(m, in, bg / m.Hkv, bg % m.Hkv, state.data() + bg * m.dk * m.dv, ya.data(), (A*)nullptr);
    });
    dispatch_real(y.dtype(), where(), [&](auto tag) {
      using T2 = decltype(tag);
      T2* p = y.data<T2>();
      for (size_t i = 0; i < ya.size(); ++i) p[i] = from_acc<T2>(ya[i]);
    });
    if (st.present())
      dispatch_real(st.dtype(), where(), [&](auto tag) {
        using T2 = decltype(tag);
        T2* p = st.data<T2>();
        for (size_t i = 0; i < state.size(); ++i) p[i] = from_acc<T2>(state[i]);
      });
  }

  int64_t q_heads_, kv_heads_;
  float scale_;
  bool gating_ = true, delta_ = true;
};

}  // namespace

void register_linear_attention(sdk::Registrar& reg) {
  reg.kernel<LinearAttention>("", "LinearAttention", 27, SINGA_VERSION_OPEN, "cpu",
                              {{"T", 0, kRealTypes}, {"S", 3, kRealTypes}});
}

}  // namespace nn
}  // namespace singa
