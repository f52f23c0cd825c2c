// rnn.cpp - the plain recurrent cell: H = f(X*W^T + H_prev*R^T + Wb + Rb).
#include "recurrent.hpp"
#include "recurrent_grad.hpp"
#include "registry.hpp"

namespace singa {
namespace ops {
namespace rnn {
namespace {

class Rnn {
 public:
  explicit Rnn(const sdk::Node& node) : attrs_(node, {"Tanh"}) {}

  void compute(sdk::Context& ctx) const {
    const int32_t dt = ctx.input(0).dtype();
    dispatch_real(dt, [&](auto tag) { this->run<decltype(tag)>(ctx, dt); });
  }

  // Gradients of X, W, R, B and initial_h (rnn_grad.cpp).
  void backward(sdk::Context& ctx) const { rnn_backward(ctx, attrs_); }

 private:
  template <typename T>
  void run(sdk::Context& ctx, int32_t dt) const {
    const Problem<T> p = read_problem<T>(ctx, attrs_, 1);
    const Outputs<T> out = allocate_outputs(ctx, p, dt, 2);
    const int64_t H = p.hidden, steps = longest(p.lens);
    std::vector<T> hr(size_t(p.batch * H));
    for (int64_t d = 0; d < p.dirs; ++d) {
      const T* proj = input_projection(p, d);
      std::vector<T> h = load_state(p, p.init_h, d);
      const Activation& f = attrs_.acts[size_t(d)];
      const bool rev = attrs_.is_reverse(d);
      for (int64_t s = 0; s < steps; ++s) {
        recurrent_product(p, d, h.data(), hr.data());
        for (int64_t b = 0; b < p.batch; ++b) {
          const int64_t len = p.lens[size_t(b)];
          if (s >= len) continue;
          const int64_t t = step_time(rev, s, len);
          const T* x = proj + p.x_row(t, b) * H;
          const T* r = hr.data() + b * H;
          T* hb = h.data() + b * H;
          for (int64_t j = 0; j < H; ++j) hb[j] = f(clip_to(x[j] + r[j], attrs_.has_clip, attrs_.clip));
          if (out.Y) std::copy(hb, hb + H, out.Y + p.y_off(t, d, b));
        }
      }
      store_state(p, h, d, out.states[0]);
    }
  }

  CommonAttrs attrs_;
};

}  // namespace

void register_rnn(sdk::Registrar& reg) {
  // 14 added `layout`; one class serves both and checks the opset.
  reg.kernel<Rnn>("", "RNN", 7, 13, "cpu", {{"T", 0, kRnnTypes}, {"T1", 4, sdk::bit(SINGA_ONNX_INT32)}});
  reg.kernel<Rnn>("", "RNN", 14, 22, "cpu", {{"T", 0, kRnnTypes}, {"T1", 4, sdk::bit(SINGA_ONNX_INT32)}});
}

}  // namespace rnn
}  // namespace ops
}  // namespace singa
