// gru_grad.cpp - backward of the GRU (gates z, r, h; see gru.cpp). With
// H = (1-z).*n + z.*Hp:
//   dn = dH.*(1-z), dz = dH.*(Hp-n), dHp gets dH.*z directly
//   linear_before_reset = 0: q = (r.*Hp)*Rh^T + Rbh, d(r.*Hp) = dq*Rh
//   linear_before_reset = 1: q = Hp*Rh^T + Rbh and n's input is r.*q
#include "recurrent_grad.hpp"

namespace singa {
namespace ops {
namespace rnn {
namespace {

template <typename T>
void run(sdk::Context& ctx, const CommonAttrs& attrs, bool lbr, int32_t dt) {
  const BackwardLayout io(ctx);
  const Problem<T> p = read_problem<T>(ctx, attrs, 3, io.forward_inputs);
  Grads<T> g = make_grads(ctx, io, p, dt, 1);
  const int64_t H = p.hidden, G = 3 * H, N = p.batch, steps = longest(p.lens);
  auto clip = [&](T v) { return clip_to(v, attrs.has_clip, attrs.clip); };
  std::vector<T> hr(size_t(N * G)), dnext(size_t(N * H)), drh(size_t(N * H)), direct(size_t(N * H));
  for (int64_t d = 0; d < p.dirs; ++d) {
    const Activation& f = attrs.acts[size_t(2 * d)];
    const Activation& gact = attrs.acts[size_t(2 * d + 1)];
    const bool rev = attrs.is_reverse(d);
    const T* Rh = p.R + d * G * H + 2 * H * H;
    const T* Rbh = p.B ? p.B + d * 2 * G + G + 2 * H : nullptr;
    // The forward again. Per step: the input state, the gates'
    // pre-activations and values (z, r, n) and `aux`: r.*Hp (lbr = 0) or q
    // (lbr = 1).
    std::vector<T> hin(size_t(steps * N * H)), pre(size_t(steps * N * G)), post(size_t(steps * N * G));
    std::vector<T> aux(size_t(steps * N * H), T(0));
    {
      const T* proj = input_projection(p, d);
      std::vector<T> h = load_state(p, p.init_h, d), q(size_t(N * H));
      for (int64_t s = 0; s < steps; ++s) {
        const T* hp = hin.data() + s * N * H;
        std::copy(h.begin(), h.end(), hin.begin() + s * N * H);
        recurrent_product(p, d, h.data(), hr.data(), lbr ? 3 : 2);
        T* rh = aux.data() + s * N * H;
        for (int64_t b = 0; b < N; ++b) {
          const int64_t len = p.lens[size_t(b)];
          if (s >= len) continue;
          const T* x = proj + p.x_row(step_time(rev, s, len), b) * G;
          T* a = pre.data() + (s * N + b) * G;
          T* v = post.data() + (s * N + b) * G;
          for (int64_t j = 0; j < 2 * H; ++j) {
            a[j] = x[j] + hr[size_t(b * G + j)];
            v[j] = f(clip(a[j]));
          }
          for (int64_t j = 0; j < H; ++j) {
            const T r = v[H + j];
            if (lbr)
              rh[b * H + j] = hr[size_t(b * G + 2 * H + j)];  // q
            else
              rh[b * H + j] = r * hp[b * H + j];
          }
        }
        if (!lbr) {  // q = rh*Rh^T + Rbh (zero rows for ended sequences are never read)
          for (int64_t b = 0; b < N; ++b)
            for (int64_t j = 0; j < H; ++j) q[size_t(b * H + j)] = Rbh ? Rbh[j] : T(0);
          gemm_nt(N, H, H, rh, H, Rh, H, T(1), q.data(), H);
        }
        for (int64_t b = 0; b < N; ++b) {
          const int64_t len = p.lens[size_t(b)];
          if (s >= len) continue;
          const T* x = proj + p.x_row(step_time(rev, s, len), b) * G;
          T* a = pre.data() + (s * N + b) * G;
          T* v = post.data() + (s * N + b) * G;
          for (int64_t j = 0; j < H; ++j) {
            const T r = v[H + j];
            a[2 * H + j] = x[2 * H + j] + (lbr ? r * rh[b * H + j] : q[size_t(b * H + j)]);
            const T z = v[j], n = v[2 * H + j] = gact(clip(a[2 * H + j]));
            h[size_t(b * H + j)] = (T(1) - z) * n + z * hp[b * H + j];
          }
        }
      }
    }
    // Back through time.
    std::vector<T> dproj(size_t(p.seq * N * G), T(0)), dhr(size_t(steps * N * G), T(0));
    std::vector<T> dh = load_state_grad(p, g.dstate[0], d);
    for (int64_t s = steps - 1; s >= 0; --s) {
      const T* hp = hin.data() + s * N * H;
      const T* ax = aux.data() + s * N * H;
      T* dhs = dhr.data() + s * N * G;
      for (int64_t b = 0; b < N; ++b) {
        const int64_t len = p.lens[size_t(b)];
        if (s >= len) continue;
        const int64_t t = step_time(rev, s, len);
        const T* dy = g.dY ? g.dY + p.y_off(t, d, b) : nullptr;
        const T* a = pre.data() + (s * N + b) * G;
        const T* v = post.data() + (s * N + b) * G;
        T* dp = dproj.data() + p.x_row(t, b) * G;
        T* dr_ = dhs + b * G;
        for (int64_t j = 0; j < H; ++j) {
          const T dH = dh[size_t(b * H + j)] + (dy ? dy[j] : T(0));
          const T z = v[j], r = v[H + j], n = v[2 * H + j];
          const T dan = dH * (T(1) - z) * act_grad(gact, a[2 * H + j], n, attrs);
          const T daz = dH * (hp[b * H + j] - n) * act_grad(f, a[j], z, attrs);
          direct[size_t(b * H + j)] = dH * z;
          dp[j] = dr_[j] = daz;
          dp[2 * H + j] = dan;
          if (lbr) {
            dr_[2 * H + j] = dan * r;
            dp[H + j] = dr_[H + j] = dan * ax[b * H + j] * act_grad(f, a[H + j], r, attrs);  // dr = dan.*q
          } else {
            dr_[2 * H + j] = dan;
          }
        }
      }
      if (!lbr) {  // d(r.*Hp) = dq*Rh: to r's gate and directly to Hp
        std::fill(drh.begin(), drh.end(), T(0));
        gemm(false, false, N, H, H, T(1), dhs + 2 * H, G, Rh, H, T(0), drh.data(), H);
        for (int64_t b = 0; b < N; ++b) {
          const int64_t len = p.lens[size_t(b)];
          if (s >= len) continue;
          const T* a = pre.data() + (s * N + b) * G;
          const T* v = post.data() + (s * N + b) * G;
          T* dp = dproj.data() + p.x_row(step_time(rev, s, len), b) * G;
          for (int64_t j = 0; j < H; ++j) {
            const T r = v[H + j];
            const T dr = drh[size_t(b * H + j)] * hp[b * H + j];
            direct[size_t(b * H + j)] += drh[size_t(b * H + j)] * r;
            dp[H + j] = dhs[b * G + H + j] = dr * act_grad(f, a[H + j], r, attrs);
          }
        }
      }
      through_r(p, d, dhs, 0, lbr ? 3 : 2, dnext.data());
      for (int64_t b = 0; b < N; ++b)
        if (s < p.lens[size_t(b)])
          for (int64_t j = 0; j < H; ++j)
            dh[size_t(b * H + j)] = dnext[size_t(b * H + j)] + direct[size_t(b * H + j)];
    }
    store_state(p, dh, d, g.dinit[0]);
    add_input_grads(p, d, dproj.data(), g);
    add_recurrent_grads(p, d, steps, dhr.data(), hin.data(), 0, 2, g);
    add_recurrent_grads(p, d, steps, dhr.data(), lbr ? hin.data() : aux.data(), 2, 3, g);
  }
}

}  // namespace

void gru_backward(sdk::Context& ctx, const CommonAttrs& attrs, bool linear_before_reset) {
  const int32_t dt = ctx.input(0).dtype();
  dispatch_real(dt, [&](auto tag) { run<decltype(tag)>(ctx, attrs, linear_before_reset, dt); });
}

}  // namespace rnn
}  // namespace ops
}  // namespace singa
