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
// Everything computes in float, as the reference does.
#include "nn_common.hpp"
#include "register.hpp"

#include <algorithm>
#include <cmath>

namespace singa {
namespace nn {
namespace {

// A [B, T, W] input of any real type as float.
std::vector<float> floats_of(const sdk::Tensor& t, const std::string& where) {
  std::vector<float> out(size_t(t.numel()));
  dispatch_real(t.dtype(), where, [&](auto tag) {
    using T = decltype(tag);
    const T* p = t.data<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = to_acc<float>(p[i]);
  });
  return out;
}

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
    const sdk::Tensor q = required(ctx, 0, "query"), k = required(ctx, 1, "key"), v = required(ctx, 2, "value");
    const sdk::Tensor past = ctx.input(3), decay = ctx.input(4), beta = ctx.input(5), erase = ctx.input(6);
    const int64_t Hq = q_heads_, Hkv = kv_heads_, G = Hq / Hkv;
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
    bool decay_per_dim = false;
    if (decay.present()) {
      SINGA_CHECK(decay.ndim() == 3 && decay.dim(0) == B && decay.dim(1) == T &&
                      (decay.dim(2) == Hkv || decay.dim(2) == Hkv * dk),
                  "decay must be [" + std::to_string(B) + ", " + std::to_string(T) + ", " + std::to_string(Hkv) +
                      " or " + std::to_string(Hkv * dk) + "], got " + shape_str(decay.shape()));
      decay_per_dim = decay.dim(2) == Hkv * dk;  // with dk == 1 both readings agree
    }
    int64_t beta_w = 0;
    if (beta.present()) {
      SINGA_CHECK(beta.ndim() == 3 && beta.dim(0) == B && beta.dim(1) == T && (beta.dim(2) == Hkv || beta.dim(2) == 1),
                  "beta must be [" + std::to_string(B) + ", " + std::to_string(T) + ", " + std::to_string(Hkv) +
                      " or 1], got " + shape_str(beta.shape()));
      beta_w = beta.dim(2);
    }
    if (erase.present())
      SINGA_CHECK(erase.shape() == (Shape{B, T, Hkv * dk}), "erase_gate must be [" + std::to_string(B) + ", " +
                                                                std::to_string(T) + ", " + std::to_string(Hkv * dk) +
                                                                "], got " + shape_str(erase.shape()));
    if (past.present())
      SINGA_CHECK(past.shape() == (Shape{B, Hkv, dk, dv}),
                  "past_state must be [" + std::to_string(B) + ", " + std::to_string(Hkv) + ", " + std::to_string(dk) +
                      ", " + std::to_string(dv) + "], got " + shape_str(past.shape()));

    sdk::Tensor y = ctx.output(0, Shape{B, T, Hq * dv}, q.dl_dtype());
    sdk::Tensor st;
    if (ctx.num_outputs() > 1)
      st = ctx.output(1, Shape{B, Hkv, dk, dv}, past.present() ? past.dl_dtype() : q.dl_dtype());

    const std::vector<float> qf = floats_of(q, where()), kf = floats_of(k, where()), vf = floats_of(v, where());
    const std::vector<float> df = decay.present() ? floats_of(decay, where()) : std::vector<float>();
    const std::vector<float> bf = beta.present() ? floats_of(beta, where()) : std::vector<float>();
    const std::vector<float> ef = erase.present() ? floats_of(erase, where()) : std::vector<float>();
    std::vector<float> state(size_t(B * Hkv * dk * dv), 0.f);
    if (past.present()) state = floats_of(past, where());
    std::vector<float> yf(size_t(B * T * Hq * dv));
    const float scale = scale_ != 0.f ? scale_ : (dk > 0 ? 1.f / std::sqrt(float(dk)) : 1.f);
    const int64_t dw = decay.present() ? decay.dim(2) : 0;

    ctx.parallel_for(B * Hkv, 1, [&](int64_t lo, int64_t hi) {
      std::vector<float> vt(static_cast<size_t>(dv)), ke(static_cast<size_t>(dk)), r(static_cast<size_t>(dv));
      for (int64_t bg = lo; bg < hi; ++bg) {
        const int64_t b = bg / Hkv, g = bg % Hkv;
        float* S = state.data() + bg * dk * dv;
        for (int64_t t = 0; t < T; ++t) {
          const int64_t bt = b * T + t;
          const float* kt = kf.data() + bt * Hkv * dk + g * dk;
          const float* vin = vf.data() + bt * Hkv * dv + g * dv;
          if (gating_) {
            const float* dt = df.data() + bt * dw;
            for (int64_t d = 0; d < dk; ++d) {
              const float e = std::exp(decay_per_dim ? dt[g * dk + d] : dt[g]);
              float* row = S + d * dv;
              for (int64_t m = 0; m < dv; ++m) row[m] *= e;
            }
          }
          if (delta_) {
            for (int64_t d = 0; d < dk; ++d)
              ke[size_t(d)] = ef.empty() ? kt[d] : ef[size_t(bt * Hkv * dk + g * dk + d)] * kt[d];
            const float bv = bf[size_t(bt * beta_w + (beta_w == 1 ? 0 : g))];
            std::fill(r.begin(), r.end(), 0.f);
            for (int64_t d = 0; d < dk; ++d) {
              const float kd = ke[size_t(d)];
              const float* row = S + d * dv;
              for (int64_t m = 0; m < dv; ++m) r[size_t(m)] += row[m] * kd;
            }
            for (int64_t m = 0; m < dv; ++m) vt[size_t(m)] = bv * (vin[m] - r[size_t(m)]);
          } else {
            for (int64_t m = 0; m < dv; ++m) vt[size_t(m)] = vin[m];
          }
          for (int64_t d = 0; d < dk; ++d) {
            const float kd = kt[d];
            float* row = S + d * dv;
            for (int64_t m = 0; m < dv; ++m) row[m] += kd * vt[size_t(m)];
          }
          for (int64_t j = 0; j < G; ++j) {
            const int64_t h = g * G + j;
            const float* qt = qf.data() + bt * Hq * dk + h * dk;
            float* out = yf.data() + bt * Hq * dv + h * dv;
            for (int64_t m = 0; m < dv; ++m) out[m] = 0.f;
            for (int64_t d = 0; d < dk; ++d) {
              const float qd = qt[d];
              const float* row = S + d * dv;
              for (int64_t m = 0; m < dv; ++m) out[m] += qd * row[m];
            }
            for (int64_t m = 0; m < dv; ++m) out[m] *= scale;
          }
        }
      }
    });

    dispatch_real(y.dtype(), where(), [&](auto tag) {
      using T2 = decltype(tag);
      T2* p = y.data<T2>();
      for (size_t i = 0; i < yf.size(); ++i) p[i] = from_acc<T2>(yf[i]);
    });
    if (st.present())
      dispatch_real(st.dtype(), where(), [&](auto tag) {
        using T2 = decltype(tag);
        T2* p = st.data<T2>();
        for (size_t i = 0; i < state.size(); ++i) p[i] = from_acc<T2>(state[i]);
      });
  }

 private:
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
