// gru.cpp - the gated recurrent unit (gates z, r, h in that order in W, R, B):
//   z = f(Xz + Hp*Rz + b), r = f(Xr + Hp*Rr + b)
//   n = g(Xh + (r.*Hp)*Rh + Rbh + Wbh)        linear_before_reset = 0
//   n = g(Xh + r.*(Hp*Rh + Rbh) + Wbh)        linear_before_reset != 0
//   H = (1 - z).*n + z.*Hp
#include "recurrent.hpp"
#include "recurrent_grad.hpp"
#include "registry.hpp"

namespace singa {
namespace ops {
namespace rnn {
namespace {

class Gru {
 public:
  explicit Gru(const sdk::Node& node)
      : attrs_(node, {"Sigmoid", "Tanh"}), linear_before_reset_(node.attr_int("linear_before_reset", 0) != 0) {}

  void compute(sdk::Context& ctx) const {
    const int32_t dt = ctx.input(0).dtype();
    dispatch_real(dt, [&](auto tag) { this->run<decltype(tag)>(ctx, dt); });
  }

  // Gradients of X, W, R, B and initial_h (gru_grad.cpp).
  void backward(sdk::Context& ctx) const { gru_backward(ctx, attrs_, linear_before_reset_); }

 private:
  template <typename T>
  void run(sdk::Context& ctx, int32_t dt) const {
    const Problem<T> p = read_problem<T>(ctx, attrs_, 3);
    const Outputs<T> out = allocate_outputs(ctx, p, dt, 2);
    const int64_t H = p.hidden, G = 3 * H, steps = longest(p.lens);
    const bool lbr = linear_before_reset_;
    std::vector<T> hr(size_t(p.batch * G)), z(size_t(p.batch * H));
    // Without linear_before_reset the h gate's product waits for r: r.*Hp and
    // its product with Rh live here.
    std::vector<T> rh(lbr ? 0 : size_t(p.batch * H)), rh_r(lbr ? 0 : size_t(p.batch * H));
    for (int64_t d = 0; d < p.dirs; ++d) {
      const T* proj = input_projection(p, d);
      std::vector<T> h = load_state(p, p.init_h, d);
      const Activation& f = attrs_.acts[size_t(2 * d)];
      const Activation& g = attrs_.acts[size_t(2 * d + 1)];
      const bool rev = attrs_.is_reverse(d);
      const T* Rh = p.R + d * G * H + 2 * H * H;
      const T* Rbh = p.B ? p.B + d * 2 * G + G + 2 * H : nullptr;
      for (int64_t s = 0; s < steps; ++s) {
        recurrent_product(p, d, h.data(), hr.data(), lbr ? 3 : 2);
        // Gates z and r, keeping r.*Hp (or r itself) for the h gate.
        for (int64_t b = 0; b < p.batch; ++b) {
          const int64_t len = p.lens[size_t(b)];
          if (s >= len) {
            if (!lbr) std::fill(rh.begin() + b * H, rh.begin() + (b + 1) * H, T(0));
            continue;
          }
          const T* x = proj + p.x_row(step_time(rev, s, len), b) * G;
          T* hrb = hr.data() + b * G;
          const T* hp = h.data() + b * H;
          for (int64_t j = 0; j < H; ++j) {
            z[size_t(b * H + j)] = f(clip(x[j] + hrb[j]));
            const T r = f(clip(x[H + j] + hrb[H + j]));
            if (lbr)
              hrb[2 * H + j] *= r;
            else
              rh[size_t(b * H + j)] = r * hp[j];
          }
        }
        if (!lbr) {
          for (int64_t b = 0; b < p.batch; ++b)
            for (int64_t j = 0; j < H; ++j) rh_r[size_t(b * H + j)] = Rbh ? Rbh[j] : T(0);
          gemm_nt(p.batch, H, H, rh.data(), H, Rh, H, T(1), rh_r.data(), H);
        }
        for (int64_t b = 0; b < p.batch; ++b) {
          const int64_t len = p.lens[size_t(b)];
          if (s >= len) continue;
          const int64_t t = step_time(rev, s, len);
          const T* x = proj + p.x_row(t, b) * G + 2 * H;
          const T* rec = lbr ? hr.data() + b * G + 2 * H : rh_r.data() + b * H;
          const T* zb = z.data() + b * H;
          T* hb = h.data() + b * H;
          for (int64_t j = 0; j < H; ++j) {
            const T n = g(clip(x[j] + rec[j]));
            hb[j] = (T(1) - zb[j]) * n + zb[j] * hb[j];
          }
          if (out.Y) std::copy(hb, hb + H, out.Y + p.y_off(t, d, b));
        }
      }
      store_state(p, h, d, out.states[0]);
    }
  }

  template <typename T>
  T clip(T v) const {
    return clip_to(v, attrs_.has_clip, attrs_.clip);
  }

  CommonAttrs attrs_;
  bool linear_before_reset_;
};

}  // namespace

void register_gru(sdk::Registrar& reg) {
  // 14 added `layout`; one class serves both and checks the opset.
  reg.kernel<Gru>("", "GRU", 7, 13, "cpu", {{"T", 0, kRnnTypes}, {"T1", 4, sdk::bit(SINGA_ONNX_INT32)}});
  reg.kernel<Gru>("", "GRU", 14, 22, "cpu", {{"T", 0, kRnnTypes}, {"T1", 4, sdk::bit(SINGA_ONNX_INT32)}});
}

}  // namespace rnn
}  // namespace ops
}  // namespace singa
