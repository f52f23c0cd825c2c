// rnn_grad.cpp - backward of the plain cell H = f(X*W^T + Hp*R^T + Wb + Rb):
// one gradient da = dH .* f'(a) feeds both products.
#include "recurrent_grad.hpp"

namespace singa {
namespace ops {
namespace rnn {
namespace {

template <typename T>
void run(sdk::Context& ctx, const CommonAttrs& attrs, int32_t dt) {
  const BackwardLayout io(ctx);
  const Problem<T> p = read_problem<T>(ctx, attrs, 1, io.forward_inputs);
  Grads<T> g = make_grads(ctx, io, p, dt, 1);
  const int64_t H = p.hidden, N = p.batch, steps = longest(p.lens);
  std::vector<T> hr(size_t(N * H)), dnext(size_t(N * H));
  for (int64_t d = 0; d < p.dirs; ++d) {
    const Activation& f = attrs.acts[size_t(d)];
    const bool rev = attrs.is_reverse(d);
    // The forward again, keeping each step's input state, pre-activation and
    // output.
    std::vector<T> hin(size_t(steps * N * H)), pre(size_t(steps * N * H)), post(size_t(steps * N * H));
    {
      const T* proj = input_projection(p, d);
      std::vector<T> h = load_state(p, p.init_h, d);
      for (int64_t s = 0; s < steps; ++s) {
        std::copy(h.begin(), h.end(), hin.begin() + s * N * H);
        recurrent_product(p, d, h.data(), hr.data());
        for (int64_t b = 0; b < N; ++b) {
          const int64_t len = p.lens[size_t(b)];
          if (s >= len) continue;
          const T* x = proj + p.x_row(step_time(rev, s, len), b) * H;
          T* a = pre.data() + (s * N + b) * H;
          T* y = post.data() + (s * N + b) * H;
          for (int64_t j = 0; j < H; ++j) {
            a[j] = x[j] + hr[size_t(b * H + j)];
            h[size_t(b * H + j)] = y[j] = f(clip_to(a[j], attrs.has_clip, attrs.clip));
          }
        }
      }
    }
    // Back through time: dh is the gradient of the state after step s.
    std::vector<T> dproj(size_t(p.seq * N * H), T(0)), dhr(size_t(steps * N * H), T(0));
    std::vector<T> dh = load_state_grad(p, g.dstate[0], d);
    for (int64_t s = steps - 1; s >= 0; --s) {
      for (int64_t b = 0; b < N; ++b) {
        const int64_t len = p.lens[size_t(b)];
        if (s >= len) continue;
        const int64_t t = step_time(rev, s, len);
        const T* dy = g.dY ? g.dY + p.y_off(t, d, b) : nullptr;
        const T* a = pre.data() + (s * N + b) * H;
        const T* y = post.data() + (s * N + b) * H;
        T* da = dhr.data() + (s * N + b) * H;
        for (int64_t j = 0; j < H; ++j) {
          const T dhj = dh[size_t(b * H + j)] + (dy ? dy[j] : T(0));
          da[j] = dhj * act_grad(f, a[j], y[j], attrs);
        }
        std::copy(da, da + H, dproj.begin() + p.x_row(t, b) * H);
      }
      through_r(p, d, dhr.data() + s * N * H, 0, 1, dnext.data());
      for (int64_t b = 0; b < N; ++b)
        if (s < p.lens[size_t(b)]) std::copy(dnext.begin() + b * H, dnext.begin() + (b + 1) * H, dh.begin() + b * H);
    }
    store_state(p, dh, d, g.dinit[0]);
    add_input_grads(p, d, dproj.data(), g);
    add_recurrent_grads(p, d, steps, dhr.data(), hin.data(), 0, 1, g);
  }
}

}  // namespace

void rnn_backward(sdk::Context& ctx, const CommonAttrs& attrs) {
  const int32_t dt = ctx.input(0).dtype();
  dispatch_real(dt, [&](auto tag) { run<decltype(tag)>(ctx, attrs, dt); });
}

}  // namespace rnn
}  // namespace ops
}  // namespace singa
