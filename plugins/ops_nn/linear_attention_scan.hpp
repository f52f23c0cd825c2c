// The LinearAttention recurrence (see linear_attention.cpp), shared by the
// forward kernel and its backward (linear_attention_grad.cpp), which
// replays it to recover the state entering every step.
#ifndef SINGA_OPS_NN_LINEAR_ATTENTION_SCAN_HPP
#define SINGA_OPS_NN_LINEAR_ATTENTION_SCAN_HPP

#include "nn_common.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace singa {
namespace nn {

struct LinearAttentionDims {
  int64_t B = 0, T = 0, Hq = 0, Hkv = 0, dk = 0, dv = 0;
  int64_t decay_w = 0;  // decay's last dim (0: no decay)
  int64_t beta_w = 0;   // beta's last dim, Hkv or 1 (0: no beta)
  bool gating = false, delta = false, decay_per_dim = false;
  double scale = 1;
};

// The inputs in the compute type A; decay, beta and erase null when absent.
template <class A>
struct LinearAttentionInputs {
  const A *q = nullptr, *k = nullptr, *v = nullptr, *decay = nullptr, *beta = nullptr, *erase = nullptr;
};

// A tensor of any real type as a vector of A.
template <class A>
std::vector<A> values_as(const sdk::Tensor& t, const std::string& where) {
  std::vector<A> out(static_cast<size_t>(t.numel()));
  dispatch_real(t.dtype(), where, [&](auto tag) {
    using T = decltype(tag);
    const T* p = t.data<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = to_acc<A>(p[i]);
  });
  return out;
}

// One step's decay factor of key dim d, KV head g (1 without gating).
template <class A>
A decay_factor(const LinearAttentionDims& m, const LinearAttentionInputs<A>& in, int64_t bt, int64_t g, int64_t d) {
  if (!m.gating) return A(1);
  return std::exp(in.decay[bt * m.decay_w + (m.decay_per_dim ? g * m.dk + d : g)]);
}

// One (batch b, KV head g) recurrence over the T steps. S [dk, dv] holds the
// initial state and ends as the final one; y [B, T, Hq * dv] gets the
// group's query heads (when not null); entering, when not null, gets the
// state entering each step, [T, dk, dv].
template <class A>
void linear_attention_head(const LinearAttentionDims& m, const LinearAttentionInputs<A>& in, int64_t b, int64_t g,
                           A* S, A* y, A* entering) {
  const int64_t dk = m.dk, dv = m.dv, G = m.Hq / m.Hkv;
  std::vector<A> vt(static_cast<size_t>(dv)), ke(static_cast<size_t>(dk)), r(static_cast<size_t>(dv));
  for (int64_t t = 0; t < m.T; ++t) {
    const int64_t bt = b * m.T + t;
    if (entering) std::copy(S, S + dk * dv, entering + t * dk * dv);
    const A* kt = in.k + bt * m.Hkv * dk + g * dk;
    const A* vin = in.v + bt * m.Hkv * dv + g * dv;
    if (m.gating)
      for (int64_t d = 0; d < dk; ++d) {
        const A e = decay_factor(m, in, bt, g, d);
        for (int64_t j = 0; j < dv; ++j) S[d * dv + j] *= e;
      }
    if (m.delta) {
      for (int64_t d = 0; d < dk; ++d) ke[size_t(d)] = in.erase ? in.erase[bt * m.Hkv * dk + g * dk + d] * kt[d] : kt[d];
      const A bv = in.beta[bt * m.beta_w + (m.beta_w == 1 ? 0 : g)];
      std::fill(r.begin(), r.end(), A(0));
      for (int64_t d = 0; d < dk; ++d)
        for (int64_t j = 0; j < dv; ++j) r[size_t(j)] += S[d * dv + j] * ke[size_t(d)];
      for (int64_t j = 0; j < dv; ++j) vt[size_t(j)] = bv * (vin[j] - r[size_t(j)]);
    } else {
      std::copy(vin, vin + dv, vt.begin());
    }
    for (int64_t d = 0; d < dk; ++d)
      for (int64_t j = 0; j < dv; ++j) S[d * dv + j] += kt[d] * vt[size_t(j)];
    if (!y) continue;
    for (int64_t h = g * G; h < (g + 1) * G; ++h) {
      const A* qt = in.q + bt * m.Hq * dk + h * dk;
      A* out = y + bt * m.Hq * dv + h * dv;
      std::fill(out, out + dv, A(0));
      for (int64_t d = 0; d < dk; ++d)
        for (int64_t j = 0; j < dv; ++j) out[j] += qt[d] * S[d * dv + j];
      for (int64_t j = 0; j < dv; ++j) out[j] *= A(m.scale);
    }
  }
}

// The backward kernel of LinearAttention (linear_attention_grad.cpp).
void linear_attention_backward(sdk::Context& ctx, const LinearAttentionDims& attrs, const std::string& where);

}  // namespace nn
}  // namespace singa

#endif
