// lstm_grad.cpp - backward of the LSTM (gates i, o, f, c; peepholes i, o, f;
// see lstm.cpp). With C = ft.*Cp + i.*c and H = o.*h(C), the gradient of C
// collects dH.*o.*h'(C), the next step's dCp and o's peephole; Cp's gradient
// is dC.*ft plus the i and f peepholes.
#include "recurrent_grad.hpp"

namespace singa {
namespace ops {
namespace rnn {
namespace {

template <typename T>
void run(sdk::Context& ctx, const CommonAttrs& attrs, bool input_forget, int32_t dt) {
  const BackwardLayout io(ctx);
  const Problem<T> p = read_problem<T>(ctx, attrs, 4, io.forward_inputs);
  const T* init_c = nullptr;
  if (io.has_input(ctx, 6)) {
    sdk::Tensor c = ctx.input(6);
    check_state_input(c, p.state_shape(), "initial_c");
    if (c.dtype() != dt) sdk::fail("input initial_c has a different element type than X");
    init_c = c.template data<T>();
  }
  const T* P = nullptr;
  T* dP = nullptr;
  if (io.has_input(ctx, 7)) {
    sdk::Tensor pt = ctx.input(7);
    check_state_input(pt, {p.dirs, 3 * p.hidden}, "P");
    if (pt.dtype() != dt) sdk::fail("input P has a different element type than X");
    P = pt.template data<T>();
  }
  Grads<T> g = make_grads(ctx, io, p, dt, 2);
  if (P) {
    sdk::Tensor t = ctx.output(7, {p.dirs, 3 * p.hidden}, dt);
    dP = t.template data<T>();
    std::fill(dP, dP + t.numel(), T(0));
  }
  const int64_t H = p.hidden, G = 4 * H, N = p.batch, steps = longest(p.lens);
  auto clip = [&](T v) { return clip_to(v, attrs.has_clip, attrs.clip); };
  std::vector<T> hr(size_t(N * G)), dnext(size_t(N * H));
  for (int64_t d = 0; d < p.dirs; ++d) {
    const Activation& f = attrs.acts[size_t(3 * d)];
    const Activation& gact = attrs.acts[size_t(3 * d + 1)];
    const Activation& hact = attrs.acts[size_t(3 * d + 2)];
    const bool rev = attrs.is_reverse(d);
    const T* Pi = P ? P + d * 3 * H : nullptr;
    const T* Po = P ? Pi + H : nullptr;
    const T* Pf = P ? Pi + 2 * H : nullptr;
    // The forward again. Per step: the input state and cell, the gates'
    // pre-activations (peepholes included) and values (i, o, f, c), the new
    // cell and h(cell).
    std::vector<T> hin(size_t(steps * N * H)), cin(size_t(steps * N * H)), cnext(size_t(steps * N * H));
    std::vector<T> hc(size_t(steps * N * H)), pre(size_t(steps * N * G)), post(size_t(steps * N * G));
    {
      const T* proj = input_projection(p, d);
      std::vector<T> h = load_state(p, p.init_h, d), c = load_state(p, init_c, d);
      for (int64_t s = 0; s < steps; ++s) {
        std::copy(h.begin(), h.end(), hin.begin() + s * N * H);
        std::copy(c.begin(), c.end(), cin.begin() + s * N * H);
        recurrent_product(p, d, h.data(), hr.data());
        for (int64_t b = 0; b < N; ++b) {
          const int64_t len = p.lens[size_t(b)];
          if (s >= len) continue;
          const T* x = proj + p.x_row(step_time(rev, s, len), b) * G;
          const T* r = hr.data() + b * G;
          T* a = pre.data() + (s * N + b) * G;
          T* v = post.data() + (s * N + b) * G;
          const size_t row = size_t((s * N + b) * H);
          for (int64_t j = 0; j < H; ++j) {
            const T cp = c[size_t(b * H + j)];
            a[j] = x[j] + r[j] + (Pi ? Pi[j] * cp : T(0));
            a[2 * H + j] = x[2 * H + j] + r[2 * H + j] + (Pf ? Pf[j] * cp : T(0));
            a[3 * H + j] = x[3 * H + j] + r[3 * H + j];
            const T gi = v[j] = f(clip(a[j]));
            const T gf = v[2 * H + j] = input_forget ? T(1) - gi : f(clip(a[2 * H + j]));
            const T cn = gf * cp + gi * (v[3 * H + j] = gact(clip(a[3 * H + j])));
            a[H + j] = x[H + j] + r[H + j] + (Po ? Po[j] * cn : T(0));
            v[H + j] = f(clip(a[H + j]));
            c[size_t(b * H + j)] = cnext[row + size_t(j)] = cn;
            hc[row + size_t(j)] = hact(cn);
            h[size_t(b * H + j)] = v[H + j] * hc[row + size_t(j)];
          }
        }
      }
    }
    // Back through time: dh, dc are the gradients of the state after step s.
    std::vector<T> dproj(size_t(p.seq * N * G), T(0)), dhr(size_t(steps * N * G), T(0));
    std::vector<T> dh = load_state_grad(p, g.dstate[0], d), dc = load_state_grad(p, g.dstate[1], d);
    T* dPi = dP ? dP + d * 3 * H : nullptr;
    for (int64_t s = steps - 1; s >= 0; --s) {
      for (int64_t b = 0; b < N; ++b) {
        const int64_t len = p.lens[size_t(b)];
        if (s >= len) continue;
        const int64_t t = step_time(rev, s, len);
        const T* dy = g.dY ? g.dY + p.y_off(t, d, b) : nullptr;
        const T* a = pre.data() + (s * N + b) * G;
        const T* v = post.data() + (s * N + b) * G;
        const size_t row = size_t((s * N + b) * H);
        T* da = dhr.data() + (s * N + b) * G;
        for (int64_t j = 0; j < H; ++j) {
          const T cp = cin[row + size_t(j)], cn = cnext[row + size_t(j)], hcn = hc[row + size_t(j)];
          const T gi = v[j], go = v[H + j], gf = v[2 * H + j], gc = v[3 * H + j];
          const T dH = dh[size_t(b * H + j)] + (dy ? dy[j] : T(0));
          const T dao = dH * hcn * act_grad(f, a[H + j], go, attrs);
          const T dC = dc[size_t(b * H + j)] + dH * go * hact.derivative(cn, hcn) + (Po ? dao * Po[j] : T(0));
          T di = dC * gc;
          const T dgf = dC * cp;
          T dcp = dC * gf;
          T daf = 0;
          if (input_forget)
            di -= dgf;
          else
            daf = dgf * act_grad(f, a[2 * H + j], gf, attrs);
          const T dai = di * act_grad(f, a[j], gi, attrs);
          const T dac = dC * gi * act_grad(gact, a[3 * H + j], gc, attrs);
          if (P) {
            dcp += dai * Pi[j] + daf * Pf[j];
            dPi[j] += dai * cp;
            dPi[H + j] += dao * cn;
            dPi[2 * H + j] += daf * cp;
          }
          da[j] = dai, da[H + j] = dao, da[2 * H + j] = daf, da[3 * H + j] = dac;
          dc[size_t(b * H + j)] = dcp;
        }
        std::copy(da, da + G, dproj.begin() + p.x_row(t, b) * G);
      }
      through_r(p, d, dhr.data() + s * N * G, 0, 4, dnext.data());
      for (int64_t b = 0; b < N; ++b)
        if (s < p.lens[size_t(b)]) std::copy(dnext.begin() + b * H, dnext.begin() + (b + 1) * H, dh.begin() + b * H);
    }
    store_state(p, dh, d, g.dinit[0]);
    store_state(p, dc, d, g.dinit[1]);
    add_input_grads(p, d, dproj.data(), g);
    add_recurrent_grads(p, d, steps, dhr.data(), hin.data(), 0, 4, g);
  }
}

}  // namespace

void lstm_backward(sdk::Context& ctx, const CommonAttrs& attrs, bool input_forget) {
  const int32_t dt = ctx.input(0).dtype();
  dispatch_real(dt, [&](auto tag) { run<decltype(tag)>(ctx, attrs, input_forget, dt); });
}

}  // namespace rnn
}  // namespace ops
}  // namespace singa
