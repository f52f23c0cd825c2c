// lstm.cpp - long short-term memory (gates i, o, f, c in that order in W, R,
// B; peepholes P in order i, o, f):
//   i = f(Xi + Hp*Ri + Pi.*Cp + b),  ft = f(Xf + Hp*Rf + Pf.*Cp + b)  (1 - i with input_forget)
//   c = g(Xc + Hp*Rc + b),           C = ft.*Cp + i.*c
//   o = f(Xo + Hp*Ro + Po.*C + b),   H = o.*h(C)
#include "dnnl_sgemm.hpp"
#include "lstm_step_f32.hpp"
#include "recurrent.hpp"
#include "recurrent_grad.hpp"
#include "registry.hpp"
#include "step_barrier.hpp"
#include "sgemm.hpp"
#include "vec_math.hpp"

#include <algorithm>
#include <type_traits>

namespace singa {
namespace ops {
namespace rnn {
namespace {

// The most of R and W one part of a step may own and still take a share of
// the next block's projection into each step (ProjectionShare): what stays
// in L2 beside the rest. With 2 MiB of L2 a core, lstm_classifier's second
// layer (2 MiB of R and W) at 1 thread ran 20% faster projected up front.
constexpr int64_t kInterleaveBytes = int64_t(1) << 20;

class Lstm {
 public:
  explicit Lstm(const sdk::Node& node)
      : attrs_(node, {"Sigmoid", "Tanh", "Tanh"}), input_forget_(node.attr_int("input_forget", 0) != 0) {
    // A constant R is repacked once here; one given at run time is repacked
    // per call (one pass over R, against the 2 x seq passes of the steps). A
    // constant W too, for the projection each part of a step computes for
    // its own units (lstm_projection); one given at run time goes through
    // oneDNN's sgemm.
    sdk::Tensor r = node.constant(2), w = node.constant(1);
    if (fast::avx512() && r.present() && r.dtype() == SINGA_ONNX_FLOAT && r.ndim() == 3 && r.dim(1) == 4 * r.dim(2)) {
      const int64_t H = r.dim(2);
      for (int64_t d = 0; d < r.dim(0); ++d)
        pack_lstm_panels(r.data<float>() + d * 4 * H * H, H, H, packed_r_.emplace_back());
      if (w.present() && w.dtype() == SINGA_ONNX_FLOAT && w.ndim() == 3 && w.dim(0) == r.dim(0) && w.dim(1) == 4 * H)
        for (int64_t d = 0; d < w.dim(0); ++d)
          pack_lstm_panels(w.data<float>() + d * 4 * H * w.dim(2), H, w.dim(2), packed_w_.emplace_back());
    }
  }

  void compute(sdk::Context& ctx) const {
    const int32_t dt = ctx.input(0).dtype();
    dispatch_real(dt, [&](auto tag) { this->run<decltype(tag)>(ctx, dt); });
  }

  // Gradients of X, W, R, B, initial_h, initial_c and P (lstm_grad.cpp).
  void backward(sdk::Context& ctx) const { lstm_backward(ctx, attrs_, input_forget_); }

 private:
  template <typename T>
  void run(sdk::Context& ctx, int32_t dt) const {
    const Problem<T> p = read_problem<T>(ctx, attrs_, 4);
    const T* init_c = nullptr;
    if (ctx.has_input(6)) {
      sdk::Tensor c = ctx.input(6);
      check_state_input(c, p.state_shape(), "initial_c");
      if (c.dtype() != dt) sdk::fail("input initial_c has a different element type than X");
      init_c = c.template data<T>();
    }
    const T* P = nullptr;
    if (ctx.has_input(7)) {
      sdk::Tensor pt = ctx.input(7);
      check_state_input(pt, {p.dirs, 3 * p.hidden}, "P");
      if (pt.dtype() != dt) sdk::fail("input P has a different element type than X");
      P = pt.template data<T>();
    }
    const Outputs<T> out = allocate_outputs(ctx, p, dt, 3);
    const int64_t H = p.hidden, G = 4 * H, steps = longest(p.lens);
    std::vector<T> hr(size_t(p.batch * G));
    if constexpr (std::is_same<T, float>::value) {
      if (concurrent_ok(ctx, p, P)) {
        std::vector<float> h[2] = {load_state(p, p.init_h, 0), load_state(p, p.init_h, 1)};
        std::vector<float> c[2] = {load_state(p, init_c, 0), load_state(p, init_c, 1)};
        concurrent_directions(ctx, p, h, c, out.Y);
        for (int64_t d = 0; d < 2; ++d) {
          store_state(p, h[d], d, out.states[0]);
          store_state(p, c[d], d, out.states[1]);
        }
        return;
      }
    }
    for (int64_t d = 0; d < p.dirs; ++d) {
      std::vector<T> h = load_state(p, p.init_h, d);
      std::vector<T> c = load_state(p, init_c, d);
      const Activation& f = attrs_.acts[size_t(3 * d)];
      const Activation& g = attrs_.acts[size_t(3 * d + 1)];
      const Activation& hact = attrs_.acts[size_t(3 * d + 2)];
      const bool rev = attrs_.is_reverse(d);
      const bool fast = !P && !input_forget_ && f.kind == ActKind::Sigmoid && g.kind == ActKind::Tanh &&
                        hact.kind == ActKind::Tanh;
      // The float default cell's own step (lstm_step_f32.hpp) adds both
      // biases itself: the projection is then one product with nothing to
      // fill in first.
      const bool ours = std::is_same<T, float>::value && fast && fast::avx512();
      const float* packed_w = nullptr;
      if constexpr (std::is_same<T, float>::value) packed_w = ours ? packed_weights(packed_w_, p, d, p.input) : nullptr;
      const T* proj = packed_w ? nullptr : input_projection(p, d, !ours);
      const T* Pi = P ? P + d * 3 * H : nullptr;
      const T* Po = P ? Pi + H : nullptr;
      const T* Pf = P ? Pi + 2 * H : nullptr;
      if constexpr (std::is_same<T, float>::value) {
        std::vector<float> repacked;
        const float* packed = ours ? packed_for(p, d, repacked) : nullptr;
        const int64_t threads = ctx.num_threads(), panels = lstm_panels(H);
        // Ours: parts below ~128 KB of weights cost more to hand out than they
        // save. oneDNN's per-gate products want 64+ units a part.
        const int64_t parts =
            ours ? std::max<int64_t>(1, std::min<int64_t>({threads, panels, panels * H * 64 * 4 / (128 << 10)}))
                 : std::min<int64_t>(threads, H / 64);
        if (ours || (fast && parts >= 2)) {
          parallel_steps(ctx, p, d, rev, parts, proj, packed_w, h, c, out.Y, packed);
          store_state(p, h, d, out.states[0]);
          store_state(p, c, d, out.states[1]);
          continue;
        }
      }
      for (int64_t s = 0; s < steps; ++s) {
        recurrent_product(p, d, h.data(), hr.data());
        for (int64_t b = 0; b < p.batch; ++b) {
          const int64_t len = p.lens[size_t(b)];
          if (s >= len) continue;
          const int64_t t = step_time(rev, s, len);
          const T* x = proj + p.x_row(t, b) * G;
          const T* r = hr.data() + b * G;
          T* hb = h.data() + b * H;
          T* cb = c.data() + b * H;
          if constexpr (std::is_same<T, float>::value) {
            if (fast) {
              default_cell(x, hr.data() + b * G, cb, hb, H, 0, H);
              if (out.Y) std::copy(hb, hb + H, out.Y + p.y_off(t, d, b));
              continue;
            }
          }
          for (int64_t j = 0; j < H; ++j) {
            const T cp = cb[j];
            const T gi = f(clip(x[j] + r[j] + (Pi ? Pi[j] * cp : T(0))));
            const T gf = input_forget_ ? T(1) - gi : f(clip(x[2 * H + j] + r[2 * H + j] + (Pf ? Pf[j] * cp : T(0))));
            const T gc = g(clip(x[3 * H + j] + r[3 * H + j]));
            const T cn = gf * cp + gi * gc;
            const T go = f(clip(x[H + j] + r[H + j] + (Po ? Po[j] * cn : T(0))));
            cb[j] = cn;
            hb[j] = go * hact(cn);
          }
          if (out.Y) std::copy(hb, hb + H, out.Y + p.y_off(t, d, b));
        }
      }
      store_state(p, h, d, out.states[0]);
      store_state(p, c, d, out.states[1]);
    }
  }

  // One direction's recurrence as run by parallel_steps: the state its parts
  // share (h and h_next alternate by step; z is the gate pre-activations
  // when oneDNN's product is used), each part owning its own units' columns.
  struct StepJob {
    const Problem<float>* p = nullptr;
    int64_t d = 0, parts = 1;
    bool rev = false, interleave = false;
    const float* proj = nullptr;      // the input projection, or own_proj
    float* own_proj = nullptr;        // non-null: the parts project X themselves (packed_w)
    const float* packed_w = nullptr;  // W's panels
    const float* packed = nullptr;    // R's panels; null: oneDNN's per-gate products
    std::vector<float>* h = nullptr;
    std::vector<float>* c = nullptr;
    std::vector<float> h_next, z, bias;
    float* Y = nullptr;
  };

  // The default float cell with the step split over the pool by hidden
  // units: part q computes the four gates' pre-activations of its units
  // (their rows of R, against the whole previous h), then their cell. One
  // step's product is too small for the column split of ops::sgemm (an LSTM
  // ran single-threaded at any --threads); here one parallel_for runs every
  // step, its parts meeting at a StepBarrier after each (step_barrier.hpp).
  // With `packed` (R's panels, lstm_step_f32.hpp) the product and the cell
  // are ours and add both biases (proj has none), else oneDNN's product, one
  // call per gate, and default_cell. With `packed_w` (W's panels) proj is
  // null: each part first projects X on its own units' columns, which only
  // it reads.
  void parallel_steps(const sdk::Context& ctx, const Problem<float>& p, int64_t d, bool rev, int64_t parts,
                      const float* proj, const float* packed_w, std::vector<float>& h, std::vector<float>& c, float* Y,
                      const float* packed) const {
    float* own_proj = packed_w ? projection_buffer<float>(size_t(p.seq * p.batch * 4 * p.hidden)) : nullptr;
    StepJob job = make_job(p, d, rev, parts, proj, own_proj, packed_w, h, c, Y, packed);
    StepBarrier barrier(parts);
    ctx.parallel_for(parts, 1, [&](int64_t q0, int64_t q1) { run_parts(job, barrier, q0, q1); });
    finish_job(job);
  }

  // A bidirectional layer at 2 threads: each direction whole on one
  // thread, both at once, instead of each direction's steps split over the
  // threads with a barrier after every step. Same work, but no thread waits
  // on the other: on a busy machine a descheduled partner held every step up
  // (crnn's LSTMs at 2 threads took up to 3x their 1-thread time), while here
  // a late worker's direction is taken by the caller (the pool's stealing),
  // 1-thread time at worst. Both directions need W's and R's panels (the
  // parts project X themselves, into buffers of their own).
  void concurrent_directions(const sdk::Context& ctx, const Problem<float>& p, std::vector<float> (&h)[2],
                             std::vector<float> (&c)[2], float* Y) const {
    std::vector<float> own[2];
    StepJob jobs[2];
    for (int64_t d = 0; d < 2; ++d) {
      own[d].resize(size_t(p.seq * p.batch * 4 * p.hidden));
      jobs[d] = make_job(p, d, attrs_.is_reverse(d), 1, nullptr, own[d].data(),
                         packed_weights(packed_w_, p, d, p.input), h[d], c[d], Y,
                         packed_weights(packed_r_, p, d, p.hidden));
    }
    StepBarrier b0(1), b1(1);
    StepBarrier* barriers[2] = {&b0, &b1};
    ctx.parallel_for(2, 1, [&](int64_t d0, int64_t d1) {
      for (int64_t d = d0; d < d1; ++d) run_parts(jobs[d], *barriers[d], 0, 1);
    });
    for (StepJob& job : jobs) finish_job(job);
  }

  // Whether concurrent_directions runs this call: two directions, 2 threads
  // (at 3 the split steps use all three; at 4+ each direction split over half
  // the threads would need a barrier of its own), our default cell in both,
  // W and R packed.
  bool concurrent_ok(const sdk::Context& ctx, const Problem<float>& p, const float* P) const {
    const int threads = ctx.num_threads();
    if (p.dirs != 2 || threads != 2 || P || input_forget_ || !fast::avx512()) return false;
    for (int64_t d = 0; d < 2; ++d) {
      const Activation& f = attrs_.acts[size_t(3 * d)];
      const Activation& g = attrs_.acts[size_t(3 * d + 1)];
      const Activation& hact = attrs_.acts[size_t(3 * d + 2)];
      if (f.kind != ActKind::Sigmoid || g.kind != ActKind::Tanh || hact.kind != ActKind::Tanh) return false;
      if (!packed_weights(packed_w_, p, d, p.input) || !packed_weights(packed_r_, p, d, p.hidden)) return false;
    }
    return true;
  }

  StepJob make_job(const Problem<float>& p, int64_t d, bool rev, int64_t parts, const float* proj, float* own_proj,
                   const float* packed_w, std::vector<float>& h, std::vector<float>& c, float* Y,
                   const float* packed) const {
    const int64_t H = p.hidden, G = 4 * H, N = p.batch, panels = lstm_panels(H);
    StepJob job;
    job.p = &p, job.d = d, job.rev = rev, job.parts = parts, job.packed_w = packed_w, job.packed = packed;
    job.own_proj = packed_w ? own_proj : nullptr;
    job.proj = job.own_proj ? job.own_proj : proj;
    job.h = &h, job.c = &c, job.Y = Y;
    job.h_next.resize(h.size());
    if (!packed) job.z.resize(size_t(N * G));
    if (packed && p.B) {  // Wb + Rb
      const float* wb = p.B + d * 2 * G;
      job.bias.resize(size_t(G));
      for (int64_t i = 0; i < G; ++i) job.bias[size_t(i)] = wb[i] + wb[G + i];
    }
    // One row: the projection of the steps of block b + 1 (4 steps) is
    // computed in the product loops of block b's steps (ProjectionShare);
    // block 0's before the first step.
    // Only while a part's share of R and W stays in its core's L2: past that
    // (crnn's 256 units on 512 inputs, 3 MiB at 1 thread) every step would
    // stream a quarter of W from L3 beside R, and one product of all the
    // rows, W read once, is faster (crnn's LSTM node at 1 thread ~4x).
    const int64_t part_bytes = (panels + parts - 1) / parts * kUnitsPerPanel * G / H * (H + p.input) * 4;
    job.interleave = job.own_proj && N == 1 && part_bytes <= kInterleaveBytes;
    return job;
  }

  // The final state into h: step s reads states[s % 2] and writes the other.
  static void finish_job(StepJob& job) {
    if (longest(job.p->lens) % 2 == 1) job.h->swap(job.h_next);
  }

  // Parts [q0, q1) of job's parts, every step, meeting the other parts at
  // `barrier` after each.
  void run_parts(StepJob& job, StepBarrier& barrier, int64_t q0, int64_t q1) const {
    const Problem<float>& p = *job.p;
    const int64_t H = p.hidden, G = 4 * H, N = p.batch, steps = longest(p.lens), panels = lstm_panels(H);
    const int64_t parts = job.parts, I = p.input, d = job.d;
    const bool rev = job.rev, interleave = job.interleave;
    const float* packed = job.packed;
    const float* packed_w = job.packed_w;
    float* own_proj = job.own_proj;
    const float* proj = job.proj;
    const float* R = p.R + d * G * H;
    const float* rb = p.B ? p.B + d * 2 * G + G : nullptr;
    float* c = job.c->data();
    float* z = job.z.data();
    float* Y = job.Y;
    // Step s reads states[s % 2] and writes the other: after the barrier of
    // step s nobody reads what step s + 1 overwrites.
    float* states[2] = {job.h->data(), job.h_next.data()};
    auto block_time = [&](int64_t s) { return step_time(rev, s, p.lens[0]); };  // N = 1: X's row is the time
    dnnl_single_thread();
    std::vector<float> share_acc(interleave ? size_t(panels * 16 * kUnitsPerPanel) : 0);
    for (int64_t q = q0; q < q1 && own_proj; ++q) {
      const int64_t u0 = panels * q / parts, u1 = panels * (q + 1) / parts;
      if (!interleave) {
        lstm_projection(packed_w, H, I, p.X, p.seq * N, own_proj, u0, u1);
      } else if (steps > 0) {
        const int64_t count = std::min<int64_t>(4, steps), t0 = std::min(block_time(0), block_time(count - 1));
        lstm_projection(packed_w, H, I, p.X + t0 * I, count, own_proj + t0 * G, u0, u1);
      }
    }
    // Each row's projection at this step; null once its sequence has ended.
    std::vector<const float*> x(static_cast<size_t>(N));
    for (int64_t s = 0; s < steps; ++s) {
      const float* hs = states[s % 2];
      float* hn = states[(s + 1) % 2];
      for (int64_t b = 0; b < N; ++b) {
        const int64_t len = p.lens[size_t(b)];
        x[size_t(b)] = s < len ? proj + p.x_row(step_time(rev, s, len), b) * G : nullptr;
      }
      for (int64_t q = q0; q < q1; ++q) {
        // Whole panels of 16 units; the last may be short.
        const int64_t u0 = panels * q / parts, u1 = panels * (q + 1) / parts;
        const int64_t j0 = u0 * kUnitsPerPanel, j1 = std::min(H, u1 * kUnitsPerPanel), n = j1 - j0;
        const float* bs = job.bias.empty() ? nullptr : job.bias.data();
        if (interleave && 4 * (s / 4 + 1) < steps) {
          const int64_t next = 4 * (s / 4 + 1), count = std::min<int64_t>(4, steps - next), quarter = s % 4;
          ProjectionShare share;
          share.packed_w = packed_w, share.I = I, share.k0 = I * quarter / 4, share.k1 = I * (quarter + 1) / 4;
          for (int64_t r = 0; r < 4; ++r) {
            const int64_t t = block_time(next + std::min(r, count - 1));
            share.x[r] = p.X + t * I;
            share.proj[r] = r < count ? own_proj + t * G : nullptr;
          }
          share.acc = share_acc.data() + u0 * 16 * kUnitsPerPanel;
          share.first = quarter == 0, share.store = quarter == 3;
          lstm_step_projecting(packed, H, hs, x[0], bs, attrs_.has_clip, attrs_.clip, c, hn, u0, u1, s % 2 == 1,
                               share);
        } else if (packed) {
          lstm_step(packed, H, hs, N, x.data(), bs, attrs_.has_clip, attrs_.clip, c, hn, u0, u1, s % 2 == 1);
        } else {
          for (int64_t b = 0; b < N; ++b)
            for (int64_t gate = 0; gate < 4; ++gate) {
              float* zr = z + b * G + gate * H + j0;
              if (rb) std::copy(rb + gate * H + j0, rb + gate * H + j1, zr);
              else std::fill(zr, zr + n, 0.f);
            }
          for (int64_t gate = 0; gate < 4; ++gate) {
            check_sgemm(dnnl_sgemm('N', 'T', N, n, H, 1.f, hs, H, R + (gate * H + j0) * H, H, 1.f, z + gate * H + j0,
                                   G));
          }
        }
        for (int64_t b = 0; b < N; ++b) {
          float* hb = hn + b * H;
          if (!x[size_t(b)]) {  // this sequence has ended: its state stays
            if (!packed) std::copy(hs + b * H + j0, hs + b * H + j1, hb + j0);
            continue;
          }
          if (!packed) default_cell(x[size_t(b)], z + b * G, c + b * H, hb, H, j0, j1);
          const int64_t len = p.lens[size_t(b)];
          if (Y) std::copy(hb + j0, hb + j1, Y + p.y_off(step_time(rev, s, len), d, b) + j0);
        }
      }
      barrier.arrive_and_wait(s, q1 - q0);
    }
  }

  // Direction d's panels packed at construction, when the constant had this
  // call's shape (K columns); else null.
  static const float* packed_weights(const std::vector<std::vector<float>>& per_dir, const Problem<float>& p, int64_t d,
                                     int64_t K) {
    if (size_t(d) < per_dir.size() && size_t(p.dirs) == per_dir.size())
      return packed_lstm_panels(per_dir[size_t(d)], p.hidden, K);
    return nullptr;
  }

  // Direction d's R in lstm_step_f32's panels: the one packed at construction
  // when R was constant and has this call's shape, else packed into `scratch`.
  const float* packed_for(const Problem<float>& p, int64_t d, std::vector<float>& scratch) const {
    if (const float* packed = packed_weights(packed_r_, p, d, p.hidden)) return packed;
    return pack_lstm_panels(p.R + d * 4 * p.hidden * p.hidden, p.hidden, p.hidden, scratch);
  }

  // The cell with the default activations and no peepholes for hidden units
  // [j0, j1), as whole-array passes the compiler vectorizes (vec_math.hpp); z
  // is the step's gate pre-activations from R (gates i, o, f, c, H apart),
  // overwritten; c is updated and h written for those units.
  void default_cell(const float* x, float* z, float* c, float* h, int64_t H, int64_t j0, int64_t j1) const {
    const int64_t n = j1 - j0;
    for (int64_t gate = 0; gate < 4; ++gate)
      for (int64_t j = j0; j < j1; ++j) z[gate * H + j] = clip(x[gate * H + j] + z[gate * H + j]);
    for (int64_t gate = 0; gate < 3; ++gate) vec::sigmoid_inplace(z + gate * H + j0, n);  // i, o, f
    vec::tanh_inplace(z + 3 * H + j0, n);
    const float *gi = z, *go = z + H, *gf = z + 2 * H, *gc = z + 3 * H;
    for (int64_t j = j0; j < j1; ++j) {
      c[j] = gf[j] * c[j] + gi[j] * gc[j];
      h[j] = c[j];
    }
    vec::tanh_inplace(h + j0, n);
    for (int64_t j = j0; j < j1; ++j) h[j] *= go[j];
  }

  template <typename T>
  T clip(T v) const {
    return clip_to(v, attrs_.has_clip, attrs_.clip);
  }

  CommonAttrs attrs_;
  bool input_forget_;
  std::vector<std::vector<float>> packed_r_;  // per direction, when R is a float constant
  std::vector<std::vector<float>> packed_w_;  // per direction, when W is too
};

}  // namespace

void register_lstm(sdk::Registrar& reg) {
  // 14 added `layout`; one class serves both and checks the opset.
  reg.kernel<Lstm>("", "LSTM", 7, 13, "cpu", {{"T", 0, kRnnTypes}, {"T1", 4, sdk::bit(SINGA_ONNX_INT32)}});
  reg.kernel<Lstm>("", "LSTM", 14, 22, "cpu", {{"T", 0, kRnnTypes}, {"T1", 4, sdk::bit(SINGA_ONNX_INT32)}});
}

}  // namespace rnn
}  // namespace ops
}  // namespace singa
