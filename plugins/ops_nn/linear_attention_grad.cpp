// The backward of LinearAttention (linear_attention.cpp), per (batch, KV
// head), walking the steps in reverse with dS the gradient of the state
// leaving step t. Step t is, with S0 the state entering it:
//   Sa = diag(e) S0, e = exp(decay_t)           (gated rules)
//   r = Sa^T ke, ke = erase_t * k_t, u = beta_t (v_t - r)   (delta rules; u = v_t else)
//   S1 = Sa + k_t u^T,  out_h = scale q_h^T S1
// so dq_h = scale S1 dout_h, dS += scale q_h dout_h^T, dk_t += dS u,
// du = dS^T k_t, then (delta) dbeta = du . (v - r), dv = beta du,
// dr = -beta du, dSa += ke dr^T, dke = Sa dr (onto k_t and erase_t), and
// (gated) ddecay = e * rowsum(dSa * S0), dS0 = diag(e) dSa.
// The states entering each step come from replaying the forward.
#include "linear_attention_scan.hpp"

#include <algorithm>
#include <vector>

namespace singa {
namespace nn {
namespace {

template <class A>
void run(sdk::Context& ctx, const LinearAttentionDims& m, const std::string& where) {
  const size_t nin = ctx.num_outputs();  // one gradient per forward input
  SINGA_CHECK(ctx.num_inputs() >= nin && (ctx.num_inputs() - nin) % 2 == 0,
              "backward of LinearAttention: expected the forward inputs, outputs and output gradients, got " +
                  std::to_string(ctx.num_inputs()) + " inputs for " + std::to_string(nin) + " gradients");
  const size_t nout = (ctx.num_inputs() - nin) / 2;
  const auto in = [&](size_t i) { return i < nin ? ctx.input(i) : sdk::Tensor(); };
  const auto out_grad = [&](size_t k) { return k < nout ? ctx.input(nin + nout + k) : sdk::Tensor(); };
  const sdk::Tensor q = in(0), k = in(1), v = in(2), past = in(3), decay = in(4), beta = in(5), erase = in(6);
  const std::vector<A> qf = values_as<A>(q, where), kf = values_as<A>(k, where), vf = values_as<A>(v, where);
  const std::vector<A> df = decay.present() ? values_as<A>(decay, where) : std::vector<A>();
  const std::vector<A> bf = beta.present() ? values_as<A>(beta, where) : std::vector<A>();
  const std::vector<A> ef = erase.present() ? values_as<A>(erase, where) : std::vector<A>();
  LinearAttentionInputs<A> fin;
  fin.q = qf.data(), fin.k = kf.data(), fin.v = vf.data();
  fin.decay = df.empty() ? nullptr : df.data();
  fin.beta = bf.empty() ? nullptr : bf.data();
  fin.erase = ef.empty() ? nullptr : ef.data();
  const int64_t B = m.B, T = m.T, Hq = m.Hq, Hkv = m.Hkv, dk = m.dk, dv = m.dv, G = Hq / Hkv, SS = dk * dv;
  std::vector<A> state(size_t(B * Hkv * SS), A(0));
  if (past.present()) state = values_as<A>(past, where);
  const sdk::Tensor gy = out_grad(0), gs = out_grad(1);
  const std::vector<A> dy = gy.present() ? values_as<A>(gy, where) : std::vector<A>(size_t(B * T * Hq * dv), A(0));
  std::vector<A> dstate = gs.present() ? values_as<A>(gs, where) : std::vector<A>(size_t(B * Hkv * SS), A(0));

  std::vector<A> dq(qf.size(), A(0)), dkk(kf.size(), A(0)), dvv(vf.size(), A(0)), dd(df.size(), A(0)),
      de(ef.size(), A(0));
  // beta [B, T, 1] is shared by the KV heads: each head's part apart.
  std::vector<A> db(size_t(B * T * Hkv), A(0));
  ctx.parallel_for(B * Hkv, 1, [&](int64_t lo, int64_t hi) {
    const size_t ss = static_cast<size_t>(SS), nk = static_cast<size_t>(dk), nv = static_cast<size_t>(dv);
    std::vector<A> entering(size_t(T) * ss), S(ss), Sa(ss), S1(ss);
    std::vector<A> ke(nk), r(nv), u(nv), du(nv), dke(nk), e(nk);
    for (int64_t bg = lo; bg < hi; ++bg) {
      const int64_t b = bg / Hkv, g = bg % Hkv;
      std::copy(state.begin() + bg * SS, state.begin() + (bg + 1) * SS, S.begin());
      linear_attention_head(m, fin, b, g, S.data(), (A*)nullptr, entering.data());
      A* dS = dstate.data() + bg * SS;
      for (int64_t t = T - 1; t >= 0; --t) {
        const int64_t bt = b * T + t;
        const A* S0 = entering.data() + t * SS;
        const int64_t ko = bt * Hkv * dk + g * dk, vo = bt * Hkv * dv + g * dv;
        const A* kt = fin.k + ko;
        const A* vin = fin.v + vo;
        // The step again: Sa, ke, r, u, S1.
        for (int64_t d = 0; d < dk; ++d) {
          e[size_t(d)] = decay_factor(m, fin, bt, g, d);
          for (int64_t j = 0; j < dv; ++j) Sa[size_t(d * dv + j)] = e[size_t(d)] * S0[d * dv + j];
        }
        A bv = A(1);
        if (m.delta) {
          for (int64_t d = 0; d < dk; ++d) ke[size_t(d)] = fin.erase ? fin.erase[ko + d] * kt[d] : kt[d];
          bv = fin.beta[bt * m.beta_w + (m.beta_w == 1 ? 0 : g)];
          std::fill(r.begin(), r.end(), A(0));
          for (int64_t d = 0; d < dk; ++d)
            for (int64_t j = 0; j < dv; ++j) r[size_t(j)] += Sa[size_t(d * dv + j)] * ke[size_t(d)];
          for (int64_t j = 0; j < dv; ++j) u[size_t(j)] = bv * (vin[j] - r[size_t(j)]);
        } else {
          std::copy(vin, vin + dv, u.begin());
        }
        for (int64_t d = 0; d < dk; ++d)
          for (int64_t j = 0; j < dv; ++j) S1[size_t(d * dv + j)] = Sa[size_t(d * dv + j)] + kt[d] * u[size_t(j)];
        // The outputs of the group's query heads.
        for (int64_t h = g * G; h < (g + 1) * G; ++h) {
          const A* qt = fin.q + bt * Hq * dk + h * dk;
          const A* go = dy.data() + bt * Hq * dv + h * dv;
          A* gq = dq.data() + bt * Hq * dk + h * dk;
          for (int64_t d = 0; d < dk; ++d) {
            A acc = 0;
            for (int64_t j = 0; j < dv; ++j) {
              acc += S1[size_t(d * dv + j)] * go[j];
              dS[d * dv + j] += A(m.scale) * qt[d] * go[j];
            }
            gq[d] += A(m.scale) * acc;
          }
        }
        // S1 = Sa + k u^T.
        std::fill(du.begin(), du.end(), A(0));
        for (int64_t d = 0; d < dk; ++d) {
          A acc = 0;
          for (int64_t j = 0; j < dv; ++j) {
            acc += dS[d * dv + j] * u[size_t(j)];
            du[size_t(j)] += dS[d * dv + j] * kt[d];
          }
          dkk[size_t(ko + d)] += acc;
        }
        if (m.delta) {
          A dbeta = 0;
          for (int64_t j = 0; j < dv; ++j) {
            dbeta += du[size_t(j)] * (vin[j] - r[size_t(j)]);
            dvv[size_t(vo + j)] += bv * du[size_t(j)];
            du[size_t(j)] *= -bv;  // now dr
          }
          db[size_t(bt * Hkv + g)] += dbeta;
          for (int64_t d = 0; d < dk; ++d) {
            A acc = 0;
            for (int64_t j = 0; j < dv; ++j) {
              acc += Sa[size_t(d * dv + j)] * du[size_t(j)];
              dS[d * dv + j] += ke[size_t(d)] * du[size_t(j)];
            }
            dke[size_t(d)] = acc;
          }
          for (int64_t d = 0; d < dk; ++d) {
            dkk[size_t(ko + d)] += fin.erase ? fin.erase[ko + d] * dke[size_t(d)] : dke[size_t(d)];
            if (fin.erase) de[size_t(ko + d)] += kt[d] * dke[size_t(d)];
          }
        } else {
          for (int64_t j = 0; j < dv; ++j) dvv[size_t(vo + j)] += du[size_t(j)];
        }
        if (m.gating)
          for (int64_t d = 0; d < dk; ++d) {
            A acc = 0;
            for (int64_t j = 0; j < dv; ++j) {
              acc += dS[d * dv + j] * S0[d * dv + j];
              dS[d * dv + j] *= e[size_t(d)];
            }
            dd[size_t(bt * m.decay_w + (m.decay_per_dim ? g * dk + d : g))] += e[size_t(d)] * acc;
          }
      }
    }
  });

  // The gradients, in each input's type.
  const auto emit = [&](size_t i, const sdk::Tensor& x, const std::vector<A>& g) {
    if (!x.present()) return;
    sdk::Tensor o = ctx.output(i, x.shape(), x.dl_dtype());
    dispatch_real(x.dtype(), where, [&](auto tag) {
      using T2 = decltype(tag);
      T2* p = o.data<T2>();
      for (size_t n = 0; n < g.size(); ++n) p[n] = from_acc<T2>(g[n]);
    });
  };
  emit(0, q, dq);
  emit(1, k, dkk);
  emit(2, v, dvv);
  emit(3, past, dstate);
  emit(4, decay, dd);
  if (beta.present()) {
    std::vector<A> dbeta(size_t(beta.numel()), A(0));
    for (int64_t bt = 0; bt < B * T; ++bt)
      for (int64_t g = 0; g < Hkv; ++g) dbeta[size_t(bt * m.beta_w + (m.beta_w == 1 ? 0 : g))] += db[size_t(bt * Hkv + g)];
    emit(5, beta, dbeta);
  }
  emit(6, erase, de);
}

}  // namespace

void linear_attention_backward(sdk::Context& ctx, const LinearAttentionDims& m, const std::string& where) {
  if (ctx.input(0).dtype() == SINGA_ONNX_DOUBLE)
    run<double>(ctx, m, where);
  else
    run<float>(ctx, m, where);
}

}  // namespace nn
}  // namespace singa
