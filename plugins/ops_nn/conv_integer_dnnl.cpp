#include "conv_integer_dnnl.hpp"
#include "qdq_conv_transpose.hpp"

#include <dnnl_threads.hpp>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <unordered_map>

namespace singa {
namespace nn {

using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;

namespace {

size_t align64(size_t n) { return (n + 63) & ~size_t(63); }

// oneDNN's int8 code turns the int32 accumulator into float on the way out
// (for scales and post-ops), which is exact only below 2^24; a convolution
// whose accumulator could pass that runs as slices of input channels whose
// int32 outputs are summed here.
constexpr int64_t kExactBound = int64_t(1) << 24;

// The convolution over input channels [c0, c0 + cc) of one band.
struct Chunk {
  dnnl::convolution_forward conv;
  dnnl::reorder src_in, dst_out;
  memory::desc user_src, user_dst, src_md, dst_md, scratch_md;
  memory weights;
  int64_t c0 = 0;
  size_t src_bytes = 0, dst_bytes = 0, scratch_bytes = 0;
  // oneDNN chose dense channels-last for src / dst: transposed here
  // (qdq_conv_transpose.hpp), faster than its reorders.
  bool src_nhwc = false, dst_nhwc = false;
};

// One band of output rows [r0, r1) for all images and channels, reading
// input rows [lo, hi); its edge rows see the real padding, inner edges none.
struct Part {
  std::vector<Chunk> chunks;
  int64_t r0 = 0, r1 = 0, lo = 0, hi = 0;
  size_t bytes = 0, sum_bytes = 0, tmp_bytes = 0, ws_offset = 0;  // chunk buffers, window sums, later chunks' output
};

struct Plan {
  std::vector<Part> parts;
  size_t ws_bytes = 0;
};

// Image stems (a few input channels, one group): oneDNN's int8 convolutions
// have no good blocking for them (ResNet-50's 3-channel 7x7 stem took 5x the
// float time), so the windows are unfolded into rows [N * OH * OW, K] (K
// padded with zero weights to whole 64-byte blocks, which AMX and VNNI take
// at full speed) and multiplied by the weights on oneDNN's int8 matmul; its
// rows come out channels-last.
constexpr int64_t kStemChannels = 8;

// At most this many rows per matmul call: the unfolded rows and the output
// stay a few hundred KiB per thread whatever the image size.
constexpr int64_t kStemRows = 4096;

struct StemPart {
  int64_t r0 = 0, r1 = 0;  // rows of the unfolded matrix, within one image
};

struct StemPlan {
  std::map<int64_t, dnnl::matmul> by_rows;  // a primitive per part height
  std::vector<StemPart> parts;
  memory weights;
  memory::desc scratch_md;  // the largest part's
  int64_t Kp = 0, max_rows = 0, slots = 1;
  size_t slot_bytes = 0, scratch_bytes = 0, rows_bytes = 0;  // per slot: scratchpad, rows, output
};

}  // namespace

struct DnnlInt8Conv::State {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  int64_t M = 0, Cg = 0, KH = 0, KW = 0, group = 1;
  std::vector<int8_t> w8;   // OIHW, s8
  std::vector<int32_t> c;   // per output channel: shift - wz[m]
  bool need_sum = false;    // some c[m] != 0
  int64_t wmax = 0;         // max |w8|
  // The output of run_scaled (set_scaled_output): per output channel
  // scale, bias / scale (oneDNN 2 adds the bias before scaling), a Relu,
  // the element type and (8-bit) zero point.
  std::vector<float> out_scale, out_bias;
  bool relu = false;
  dt out_type = dt::f32;
  int32_t out_zp = 0;
  bool x_nhwc = false, y_nhwc = false;  // run_scaled's x / y channels-last
  mutable std::mutex mu;
  // Keyed by thread count (negative for s8 x), float output or not, x's
  // zero point nonzero or not, and input shape (N, C, H, W).
  mutable std::map<std::tuple<int, bool, bool, int64_t, int64_t, int64_t, int64_t>, std::unique_ptr<Plan>> plans;
  mutable std::map<std::tuple<int, bool, int64_t, int64_t, int64_t>, std::unique_ptr<StemPlan>> stem_plans;
};

DnnlInt8Conv::~DnnlInt8Conv() = default;

bool dnnl_int8_exact() {
  static const bool exact = [] {
    const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
    return isa == dnnl::cpu_isa::avx512_core_vnni || isa == dnnl::cpu_isa::avx512_core_bf16 ||
           isa == dnnl::cpu_isa::avx512_core_amx || isa == dnnl::cpu_isa::avx2_vnni;
  }();
  return exact;
}

std::unique_ptr<DnnlInt8Conv> DnnlInt8Conv::create(const sdk::Tensor& w, const std::vector<int32_t>& wz,
                                                    int64_t group) {
  if (!w.present() || w.ndim() != 4 || !dnnl_int8_exact()) return nullptr;
  if (w.dtype() != SINGA_ONNX_UINT8 && w.dtype() != SINGA_ONNX_INT8) return nullptr;
  auto s = std::make_unique<State>();
  s->M = w.dim(0), s->Cg = w.dim(1), s->KH = w.dim(2), s->KW = w.dim(3), s->group = group;
  if (s->M == 0 || group < 1 || s->M % group != 0 || (wz.size() != 1 && int64_t(wz.size()) != s->M)) return nullptr;
  const bool u8 = w.dtype() == SINGA_ONNX_UINT8;
  const int32_t shift = u8 ? 128 : 0;  // w8 = w - shift
  const int64_t n = w.numel();
  s->w8.resize(size_t(n));
  int8_t* w8 = s->w8.data();
  if (u8) {
    const uint8_t* p = w.data<uint8_t>();
    for (int64_t i = 0; i < n; ++i) w8[i] = int8_t(int32_t(p[i]) - 128);
  } else {
    std::memcpy(w8, w.data<int8_t>(), size_t(n));
  }
  int32_t wmax = 0;
  for (int64_t i = 0; i < n; ++i) wmax = std::max(wmax, std::abs(int32_t(w8[i])));
  s->wmax = wmax;
  s->c.resize(size_t(s->M));
  for (int64_t m = 0; m < s->M; ++m) {
    s->c[size_t(m)] = shift - wz[wz.size() == 1 ? 0 : size_t(m)];
    s->need_sum = s->need_sum || s->c[size_t(m)] != 0;
  }
  std::unique_ptr<DnnlInt8Conv> k(new DnnlInt8Conv);
  k->s_ = std::move(s);
  return k;
}

namespace {

// The primitive attributes of an int8 product: a runtime source zero point
// when x has one (a zero point of 0 leaves it out: oneDNN's kernels then skip
// the compensation), a user scratchpad, and for a scaled output the output
// scales, the destination zero point and the Relu.
dnnl::primitive_attr int8_attr(const DnnlInt8Conv::State& s, bool scaled, bool zp) {
  dnnl::primitive_attr attr;
  if (zp) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (scaled) {
    attr.set_output_scales(s.out_scale.size() == 1 ? 0 : 1 << 1, s.out_scale);
    // Added after the Relu, as QuantizeLinear(Relu(y)) does.
    if (s.out_zp != 0) attr.set_zero_points(DNNL_ARG_DST, 0, {DNNL_RUNTIME_S32_VAL});
    if (s.relu) {
      dnnl::post_ops ops;
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
      attr.set_post_ops(ops);
    }
  }
  return attr;
}

// The plan for x of shape {N, C, H, W} at `threads` threads; throws
// dnnl::error when oneDNN has no (non-reference) code for it.
std::unique_ptr<Plan> make_plan(const DnnlInt8Conv::State& s, dt xt, const Geometry& g, int64_t N, int64_t C,
                                int threads, bool scaled, bool zp) {
  const int64_t H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2];
  const int64_t sh = g.s[1], sw = g.s[2], dh = g.d[1], dw = g.d[2], pt = g.pb[1], pl = g.pb[2], pr = g.pe[2];
  const int64_t Mg = s.M / s.group;
  const dnnl::primitive_attr attr = int8_attr(s, scaled, zp);
  const dt out_t = scaled ? s.out_type : dt::s32;
  auto plan = std::make_unique<Plan>();
  const int64_t nparts = std::max<int64_t>(1, std::min<int64_t>(threads, OH));
  const int64_t ext = (s.KH - 1) * dh + 1;
  dnnl::stream st(s.eng);
  // Input channels per chunk (each group's, for grouped convs, must fit whole).
  const int64_t xmax = 255;  // |x - xz| for any zero point
  const int64_t per_channel = std::max<int64_t>(1, s.KH * s.KW * xmax * std::max<int64_t>(s.wmax, 1));
  int64_t cc = std::max<int64_t>(1, (kExactBound - 1) / per_channel);
  if (cc < s.Cg && s.group != 1) throw dnnl::error(dnnl_unimplemented, "grouped conv past float's exact range");
  if (cc >= 16) cc -= cc % 16;  // whole 16-channel blocks
  // A scaled output rounds through float anyway: no slices (and run_scaled has no weight offsets to add).
  if (s.group != 1 || cc > C || scaled) cc = C;
  // Bands usually get the same weight layout: reordered once, shared by them
  // (keyed by the chunk's first channel).
  std::map<int64_t, memory> reordered;
  for (int64_t p = 0; p < nparts; ++p) {
    Part part;
    part.r0 = OH * p / nparts, part.r1 = OH * (p + 1) / nparts;
    const int64_t i0 = part.r0 * sh - pt, i1 = (part.r1 - 1) * sh - pt + ext;
    part.lo = std::clamp<int64_t>(i0, 0, H), part.hi = std::clamp<int64_t>(i1, 0, H);
    if (part.hi <= part.lo) throw dnnl::error(dnnl_invalid_arguments, "a band of padding only");
    const int64_t rows = part.r1 - part.r0;
    for (int64_t c0 = 0; c0 < C; c0 += cc) {
      Chunk ch;
      ch.c0 = c0;
      const int64_t n = std::min(cc, C - c0);
      const memory::dims src_dims{N, n, part.hi - part.lo, W}, dst_dims{N, s.M, rows, OW};
      const bool xl = scaled && s.x_nhwc, yl = scaled && s.y_nhwc;
      ch.user_src = xl ? memory::desc(src_dims, xt, memory::dims{C * H * W, 1, W * C, C})
                       : memory::desc(src_dims, xt, memory::dims{C * H * W, H * W, W, 1});
      // The first chunk writes the output; later ones a dense buffer added to it.
      ch.user_dst = c0 != 0 ? memory::desc(dst_dims, dt::s32, tag::nchw)
                    : yl    ? memory::desc(dst_dims, out_t, memory::dims{s.M * OH * OW, 1, OW * s.M, s.M})
                            : memory::desc(dst_dims, out_t, memory::dims{s.M * OH * OW, OH * OW, OW, 1});
      const memory::dims w_dims = s.group == 1 ? memory::dims{s.M, n, s.KH, s.KW}
                                               : memory::dims{s.group, Mg, s.Cg, s.KH, s.KW};
      const memory::desc user_w = s.group == 1 ? memory::desc(w_dims, dt::s8, memory::dims{s.Cg * s.KH * s.KW,
                                                                                          s.KH * s.KW, s.KW, 1})
                                               : memory::desc(w_dims, dt::s8, tag::goihw);
      const memory::desc src_any(src_dims, xt, tag::any), w_any(w_dims, dt::s8, tag::any),
          dst_any(dst_dims, out_t, tag::any);
      const memory::dims stride{sh, sw}, dil{dh - 1, dw - 1}, pad_l{part.lo - i0, pl}, pad_r{i1 - part.hi, pr};
      const auto prop = dnnl::prop_kind::forward_inference;
      const auto alg = dnnl::algorithm::convolution_direct;
      const memory::desc bias_md({s.M}, dt::f32, tag::x);
      using conv_desc = dnnl::convolution_forward::desc;
      const conv_desc d = scaled ? conv_desc(prop, alg, src_any, w_any, bias_md, dst_any, stride, dil, pad_l, pad_r)
                                 : conv_desc(prop, alg, src_any, w_any, dst_any, stride, dil, pad_l, pad_r);
      dnnl::convolution_forward::primitive_desc pd(d, attr, s.eng);
      if (std::string(pd.impl_info_str()).rfind("ref", 0) == 0)
        throw dnnl::error(dnnl_unimplemented, "only the reference implementation");
      ch.conv = dnnl::convolution_forward(pd);
      ch.src_md = pd.src_desc(), ch.dst_md = pd.dst_desc(), ch.scratch_md = pd.scratchpad_desc();
      ch.src_nhwc = ch.src_md == memory::desc(src_dims, xt, tag::nhwc);
      ch.dst_nhwc = ch.dst_md == memory::desc(dst_dims, out_t, tag::nhwc);
      ch.src_in = dnnl::reorder(dnnl::reorder::primitive_desc(s.eng, ch.user_src, s.eng, ch.src_md));
      ch.dst_out = dnnl::reorder(dnnl::reorder::primitive_desc(s.eng, ch.dst_md, s.eng, ch.user_dst));
      auto shared = reordered.find(c0);
      if (shared != reordered.end() && shared->second.get_desc() == pd.weights_desc()) {
        ch.weights = shared->second;
      } else {
        ch.weights = memory(pd.weights_desc(), s.eng);
        memory wsrc(user_w, s.eng, const_cast<int8_t*>(s.w8.data()) + (s.group == 1 ? c0 * s.KH * s.KW : 0));
        dnnl::reorder(wsrc, ch.weights).execute(st, wsrc, ch.weights);
        reordered[c0] = ch.weights;
      }
      ch.src_bytes = align64(ch.src_md.get_size());
      ch.dst_bytes = align64(ch.dst_md.get_size());
      ch.scratch_bytes = align64(ch.scratch_md.get_size());
      part.bytes = std::max(part.bytes, ch.src_bytes + ch.dst_bytes + ch.scratch_bytes);
      part.chunks.push_back(std::move(ch));
    }
    if (part.chunks.size() > 1) part.tmp_bytes = align64(size_t(N * s.M * rows * OW) * sizeof(int32_t));
    // Channel sums of one image's group over the band's input rows.
    part.sum_bytes = s.need_sum ? align64(size_t(part.hi - part.lo) * size_t(W) * sizeof(int32_t)) : 0;
    part.ws_offset = plan->ws_bytes;
    plan->ws_bytes += part.bytes + part.tmp_bytes + part.sum_bytes;
    plan->parts.push_back(std::move(part));
  }
  st.wait();
  return plan;
}

// acc[n, m, r0..r1) += c[m] * S, S the window sum of (x - xz) over group g's
// channels with padding taps left out. Unsigned arithmetic wraps like the
// accumulator's, so the result is exact whenever the true value fits int32.
template <typename X>
void add_window_sums(const DnnlInt8Conv::State& s, const Part& part, const Geometry& g, const X* x, int32_t xz,
                     int64_t N, int64_t C, int32_t* sum, int32_t* acc) {
  const int64_t H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2], Mg = s.M / s.group;
  const int64_t rows = part.hi - part.lo;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t gi = 0; gi < s.group; ++gi) {
      const X* xg = x + (n * C + gi * s.Cg) * H * W + part.lo * W;
      std::fill(sum, sum + rows * W, -int32_t(s.Cg) * xz);
      for (int64_t c = 0; c < s.Cg; ++c) {
        const X* xc = xg + c * H * W;
        for (int64_t i = 0; i < rows * W; ++i) sum[i] += int32_t(xc[i]);
      }
      for (int64_t oh = part.r0; oh < part.r1; ++oh) {
        for (int64_t ow = 0; ow < OW; ++ow) {
          uint32_t total = 0;
          for (int64_t kh = 0; kh < s.KH; ++kh) {
            const int64_t ih = oh * g.s[1] - g.pb[1] + kh * g.d[1];
            if (ih < part.lo || ih >= part.hi) continue;
            const int32_t* row = sum + (ih - part.lo) * W;
            for (int64_t kw = 0; kw < s.KW; ++kw) {
              const int64_t iw = ow * g.s[2] - g.pb[2] + kw * g.d[2];
              if (iw >= 0 && iw < W) total += uint32_t(row[iw]);
            }
          }
          for (int64_t mm = 0; mm < Mg; ++mm) {
            const int64_t m = gi * Mg + mm;
            int32_t& a = acc[((n * s.M + m) * OH + oh) * OW + ow];
            a = int32_t(uint32_t(a) + uint32_t(s.c[size_t(m)]) * total);
          }
        }
      }
    }
  }
}

// The stem plan for N images of g's geometry at `threads` threads: each
// image's rows split into parts (at least one per thread, at most
// kStemRows rows each), run in `slots` buffers. Throws dnnl::error without
// fast code.
std::unique_ptr<StemPlan> make_stem_plan(const DnnlInt8Conv::State& s, dt xt, const Geometry& g, int64_t N,
                                         int threads, bool zp) {
  const int64_t K = s.Cg * s.KH * s.KW, Kp = (K + 63) / 64 * 64, M = s.M, Q = g.out[1] * g.out[2];
  if (N * Q == 0) throw dnnl::error(dnnl_invalid_arguments, "no output");
  const dnnl::primitive_attr attr = int8_attr(s, true, zp);
  auto plan = std::make_unique<StemPlan>();
  plan->Kp = Kp;
  const int64_t per_image = std::min(Q, std::max((Q + kStemRows - 1) / kStemRows, (threads + N - 1) / N));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t j = 0; j < per_image; ++j) plan->parts.push_back({n * Q + Q * j / per_image, n * Q + Q * (j + 1) / per_image});
  const memory::desc w_any({Kp, M}, dt::s8, tag::any), bias_md({1, M}, dt::f32, tag::ab);
  dnnl::stream st(s.eng);
  size_t scratch = 0;
  for (const StemPart& part : plan->parts) {
    const int64_t r = part.r1 - part.r0;
    plan->max_rows = std::max(plan->max_rows, r);
    if (plan->by_rows.count(r)) continue;
    const memory::desc src({r, Kp}, xt, tag::ab), dst({r, M}, s.out_type, tag::ab);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, w_any, bias_md, dst), attr, s.eng);
    if (std::string(pd.impl_info_str()).rfind("ref", 0) == 0)
      throw dnnl::error(dnnl_unimplemented, "only the reference implementation");
    plan->by_rows.emplace(r, dnnl::matmul(pd));
    if (pd.scratchpad_desc().get_size() >= scratch) scratch = pd.scratchpad_desc().get_size(), plan->scratch_md = pd.scratchpad_desc();
    if (!plan->weights) {
      // The weights as [Kp, M]: OIHW is [M][K]; the padded rows stay 0.
      std::vector<int8_t> wk(size_t(Kp * M), 0);
      for (int64_t m = 0; m < M; ++m)
        for (int64_t k = 0; k < K; ++k) wk[size_t(k * M + m)] = s.w8[size_t(m * K + k)];
      memory wsrc({{Kp, M}, dt::s8, tag::ab}, s.eng, wk.data());
      plan->weights = memory(pd.weights_desc(), s.eng);
      dnnl::reorder(wsrc, plan->weights).execute(st, wsrc, plan->weights);
      st.wait();
    } else if (plan->weights.get_desc() != pd.weights_desc()) {
      throw dnnl::error(dnnl_unimplemented, "parts want different weight layouts");
    }
  }
  const size_t out_size = s.out_type == dt::f32 ? 4 : 1;
  plan->slots = std::max<int64_t>(1, std::min<int64_t>(threads, int64_t(plan->parts.size())));
  plan->scratch_bytes = align64(scratch);
  plan->rows_bytes = align64(size_t(plan->max_rows * Kp));
  // The output rows go to y directly when y is channels-last, else here first.
  const size_t out_bytes = s.y_nhwc ? 0 : align64(size_t(plan->max_rows * M) * out_size);
  plan->slot_bytes = plan->scratch_bytes + plan->rows_bytes + out_bytes;
  return plan;
}

// Rows [r0, r1) of the unfolded x, from `rows` on: row (n, oh, ow) holds x[n, c, ih, iw] at
// (c * KH + kh) * KW + kw, the zero point where the window leaves the image
// (padding contributes nothing) and in the padding columns.
template <typename X>
void unfold_rows(const DnnlInt8Conv::State& s, const Geometry& g, const X* x, int32_t xz, int64_t C, bool nhwc,
                 int64_t Kp, int64_t r0, int64_t r1, X* rows) {
  const int64_t H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2], K = C * s.KH * s.KW;
  const int64_t KW = s.KW, dw = g.d[2];
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t n = r / (OH * OW), oh = r / OW % OH, ow = r % OW;
    const int64_t iw0 = ow * g.s[2] - g.pb[2];
    // The whole window row inside the image, contiguous in NCHW x: copied
    // 8 bytes at a time when that stays inside x's row and this row of the
    // unfolded matrix (the extra bytes are overwritten by the next tap).
    const bool inside = !nhwc && dw == 1 && iw0 >= 0 && iw0 + KW <= W;
    const bool wide = inside && KW <= 8 && iw0 + 8 <= W;
    X* row = rows + (r - r0) * Kp;
    for (int64_t c = 0; c < C; ++c)
      for (int64_t kh = 0; kh < s.KH; ++kh) {
        const int64_t ih = oh * g.s[1] - g.pb[1] + kh * g.d[1];
        X* out = row + (c * s.KH + kh) * KW;
        if (ih < 0 || ih >= H) {
          std::fill(out, out + KW, X(xz));
        } else if (inside) {
          const X* src = x + ((n * C + c) * H + ih) * W + iw0;
          if (wide && (c * s.KH + kh) * KW + 8 <= Kp)
            std::memcpy(out, src, 8);
          else
            std::memcpy(out, src, size_t(KW));
        } else {
          for (int64_t kw = 0; kw < KW; ++kw) {
            const int64_t iw = iw0 + kw * dw;
            const bool in = iw >= 0 && iw < W;
            out[kw] = in ? x[nhwc ? ((n * H + ih) * W + iw) * C + c : ((n * C + c) * H + ih) * W + iw] : X(xz);
          }
        }
      }
    std::fill(row + K, row + Kp, X(xz));
  }
}

}  // namespace

bool DnnlInt8Conv::execute_stem(const sdk::Context& ctx, const sdk::Tensor& x, int32_t xz, const Geometry& g,
                                void* y_out) const {
  const State& s = *s_;
  const int64_t N = x.dim(0), C = x.dim(1), M = s.M, OH = g.out[1], OW = g.out[2];
  const dt xt = x.dtype() == SINGA_ONNX_UINT8 ? dt::u8 : dt::s8;
  const int threads = std::max(1, ctx.num_threads());
  const StemPlan* plan = nullptr;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    auto key = std::make_tuple(threads * (xt == dt::u8 ? 1 : -1), xz != 0, N, g.in[1], g.in[2]);
    auto it = s.stem_plans.find(key);
    if (it == s.stem_plans.end()) {
      std::unique_ptr<StemPlan> made;
      ops::dnnl_single_thread();
      try {
        made = make_stem_plan(s, xt, g, N, threads, xz != 0);
      } catch (const dnnl::error&) {  // no fast code: the caller's path
      }
      it = s.stem_plans.emplace(key, std::move(made)).first;
    }
    plan = it->second.get();
  }
  if (!plan) return false;
  const size_t out_size = s.out_type == dt::f32 ? 4 : 1;
  char* ws = static_cast<char*>(ctx.workspace(std::max<size_t>(plan->slot_bytes * size_t(plan->slots), 64)));
  const int64_t nparts = int64_t(plan->parts.size()), Q = OH * OW;
  int32_t zp = xz, out_zp = s.out_zp;
  ctx.parallel_for(plan->slots, 1, [&](int64_t b, int64_t e) {
    ops::dnnl_single_thread();
    dnnl::stream st(s.eng);
    memory zp_mem({{1}, dt::s32, tag::x}, s.eng, &zp), out_zp_mem({{1}, dt::s32, tag::x}, s.eng, &out_zp);
    memory bias_mem({{1, M}, dt::f32, tag::ab}, s.eng, const_cast<float*>(s.out_bias.data()));
    for (int64_t slot = b; slot < e; ++slot) {
      char* buf = ws + size_t(slot) * plan->slot_bytes;
      char* rows = buf + plan->scratch_bytes;
      char* staged = rows + plan->rows_bytes;
      memory scratch(plan->scratch_md, s.eng, buf);
      for (int64_t i = slot; i < nparts; i += plan->slots) {
        const StemPart& part = plan->parts[size_t(i)];
        const int64_t r = part.r1 - part.r0;
        if (xt == dt::u8)
          unfold_rows(s, g, static_cast<const uint8_t*>(x.data_ptr()), xz, C, s.x_nhwc, plan->Kp, part.r0, part.r1,
                      reinterpret_cast<uint8_t*>(rows));
        else
          unfold_rows(s, g, static_cast<const int8_t*>(x.data_ptr()), xz, C, s.x_nhwc, plan->Kp, part.r0, part.r1,
                      reinterpret_cast<int8_t*>(rows));
        char* out = s.y_nhwc ? static_cast<char*>(y_out) + size_t(part.r0 * M) * out_size : staged;
        memory src({{r, plan->Kp}, xt, tag::ab}, s.eng, rows);
        memory dst({{r, M}, s.out_type, tag::ab}, s.eng, out);
        std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src},
                                             {DNNL_ARG_WEIGHTS, plan->weights},
                                             {DNNL_ARG_BIAS, bias_mem},
                                             {DNNL_ARG_DST, dst},
                                             {DNNL_ARG_SCRATCHPAD, scratch}};
        if (zp != 0) args[DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC] = zp_mem;
        if (out_zp != 0) args[DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST] = out_zp_mem;
        plan->by_rows.at(r).execute(st, args);
        st.wait();
        if (s.y_nhwc) continue;
        // The part's channels-last rows into its image's NCHW planes.
        const int64_t n = part.r0 / Q, q0 = part.r0 % Q;
        if (out_size == 1)
          transpose_bytes(out, M, static_cast<char*>(y_out) + n * M * Q + q0, Q, r, M);
        else
          transpose_floats(reinterpret_cast<const float*>(out), M, static_cast<float*>(y_out) + n * M * Q + q0, Q, r, M);
      }
    }
  });
  return true;
}

void DnnlInt8Conv::set_scaled_output(const std::vector<float>& scale, const std::vector<float>& bias, bool relu,
                                     int32_t out_dtype, int32_t out_zp, bool x_nhwc, bool y_nhwc) {
  s_->out_type = out_dtype == SINGA_ONNX_UINT8 ? dt::u8 : out_dtype == SINGA_ONNX_INT8 ? dt::s8 : dt::f32;
  s_->out_zp = s_->out_type == dt::f32 ? 0 : out_zp;
  s_->x_nhwc = x_nhwc, s_->y_nhwc = y_nhwc;
  s_->out_scale = scale;
  s_->out_bias.assign(size_t(s_->M), 0.0f);
  for (int64_t m = 0; m < s_->M; ++m) {
    const float sc = scale[scale.size() == 1 ? 0 : size_t(m)];
    if (!bias.empty()) s_->out_bias[size_t(m)] = bias[size_t(m)] / sc;
  }
  s_->relu = relu;
}

bool DnnlInt8Conv::run(const sdk::Context& ctx, const sdk::Tensor& x, int32_t xz, const Geometry& g,
                       int32_t* acc) const {
  return execute(ctx, x, xz, g, acc, false);
}

bool DnnlInt8Conv::run_scaled(const sdk::Context& ctx, const sdk::Tensor& x, int32_t xz, const Geometry& g,
                              void* y) const {
  if (s_->need_sum || s_->out_scale.empty()) return false;
  if (g.rank == 2 && x.ndim() == 4 && s_->group == 1 && x.dim(1) == s_->Cg && s_->Cg < kStemChannels &&
      g.k[1] == s_->KH && g.k[2] == s_->KW)
    return execute_stem(ctx, x, xz, g, y);
  return execute(ctx, x, xz, g, y, true);
}

bool DnnlInt8Conv::execute(const sdk::Context& ctx, const sdk::Tensor& x, int32_t xz, const Geometry& g, void* y_out,
                           bool scaled) const {
  if (g.rank != 2 || x.ndim() != 4) return false;
  int32_t* acc = static_cast<int32_t*>(y_out);
  const State& s = *s_;
  const int64_t N = x.dim(0), C = x.dim(1);
  if (C != s.Cg * s.group || g.k[1] != s.KH || g.k[2] != s.KW) return false;
  const dt xt = x.dtype() == SINGA_ONNX_UINT8 ? dt::u8 : dt::s8;
  const int threads = std::max(1, ctx.num_threads());
  const Plan* plan = nullptr;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    auto key = std::make_tuple(threads * (xt == dt::u8 ? 1 : -1), scaled, xz != 0, N, C, g.in[1], g.in[2]);
    auto it = s.plans.find(key);
    if (it == s.plans.end()) {
      std::unique_ptr<Plan> made;
      // The weight reorders too: a first oneDNN call at OpenMP's default
      // thread count leaves a worker that spins through every later run.
      ops::dnnl_single_thread();
      try {
        made = make_plan(s, xt, g, N, C, threads, scaled, xz != 0);
      } catch (const dnnl::error&) {  // no int8 code for this shape: the double path
      }
      it = s.plans.emplace(key, std::move(made)).first;
    }
    plan = it->second.get();
  }
  if (!plan) return false;
  char* ws = static_cast<char*>(ctx.workspace(std::max<size_t>(plan->ws_bytes, 64)));
  int32_t zp = xz;
  const void* px = x.data_ptr();
  ctx.parallel_for(int64_t(plan->parts.size()), 1, [&](int64_t b, int64_t e) {
    ops::dnnl_single_thread();
    dnnl::stream st(s.eng);
    memory zp_mem({{1}, dt::s32, tag::x}, s.eng, &zp);
    memory bias_mem;
    int32_t out_zp = s.out_zp;
    memory out_zp_mem({{1}, dt::s32, tag::x}, s.eng, &out_zp);
    if (scaled) bias_mem = memory({{s.M}, dt::f32, tag::x}, s.eng, const_cast<float*>(s.out_bias.data()));
    const size_t out_size = !scaled || s.out_type == dt::f32 ? 4 : 1;
    for (int64_t i = b; i < e; ++i) {
      const Part& part = plan->parts[size_t(i)];
      char* buf = ws + part.ws_offset;
      int32_t* tmp = reinterpret_cast<int32_t*>(buf + part.bytes);
      const int64_t rows = part.r1 - part.r0, OH = g.out[1], OW = g.out[2];
      for (const Chunk& ch : part.chunks) {
        const bool xl = scaled && s.x_nhwc, yl = scaled && s.y_nhwc;
        const int64_t HW = g.in[1] * g.in[2];
        const size_t xoff = xl ? size_t(part.lo * g.in[2] * C + ch.c0) : size_t(ch.c0 * HW + part.lo * g.in[2]);
        uint8_t* xb = const_cast<uint8_t*>(static_cast<const uint8_t*>(px));
        memory user_src(ch.user_src, s.eng, xb + xoff);
        // Channels-last on both sides and one image: the band is oneDNN's src as it is.
        const bool src_direct = xl && ch.src_nhwc && N == 1;
        memory src(ch.src_md, s.eng, src_direct ? static_cast<void*>(xb + xoff) : static_cast<void*>(buf));
        const size_t y_first = size_t(yl ? part.r0 * g.out[2] * s.M : part.r0 * g.out[2]) * out_size;
        const bool dst_direct = yl && ch.dst_nhwc && N == 1 && ch.c0 == 0;
        memory dst(ch.dst_md, s.eng, dst_direct ? static_cast<void*>(static_cast<char*>(y_out) + y_first)
                                                : static_cast<void*>(buf + ch.src_bytes));
        memory scratch(ch.scratch_md, s.eng, buf + ch.src_bytes + ch.dst_bytes);
        void* first = static_cast<char*>(y_out) + y_first;
        memory user_dst(ch.user_dst, s.eng, ch.c0 == 0 ? first : tmp);
        const int64_t n_ch = ch.src_md.dims()[1], P = (part.hi - part.lo) * g.in[2];
        if (src_direct) {
          // oneDNN reads x in place.
        } else if (xl && ch.src_nhwc) {  // whole rows of each image's band
          for (int64_t n = 0; n < N; ++n)
            std::memcpy(buf + n * P * n_ch, xb + xoff + n * C * HW, size_t(P * n_ch));
        } else if (!xl && ch.src_nhwc) {
          for (int64_t n = 0; n < N; ++n) transpose_bytes(xb + xoff + n * C * HW, HW, buf + n * P * n_ch, n_ch, n_ch, P);
        } else {
          ch.src_in.execute(st, user_src, src);
        }
        std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src},
                                             {DNNL_ARG_WEIGHTS, ch.weights},
                                             {DNNL_ARG_DST, dst},
                                             {DNNL_ARG_SCRATCHPAD, scratch}};
        if (zp != 0) args[DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC] = zp_mem;
        if (scaled) args[DNNL_ARG_BIAS] = bias_mem;
        if (scaled && out_zp != 0) args[DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST] = out_zp_mem;
        ch.conv.execute(st, args);
        if (dst_direct) {
          st.wait();
        } else if (yl && ch.dst_nhwc && ch.c0 == 0) {
          st.wait();
          const size_t band = size_t(rows * OW * s.M) * out_size;
          for (int64_t n = 0; n < N; ++n)
            std::memcpy(static_cast<char*>(first) + size_t(n * s.M * OH * OW) * out_size, buf + ch.src_bytes + n * band,
                        band);
        } else if (!yl && ch.dst_nhwc) {
          st.wait();
          // Planes of the whole output for the first chunk, of the band for the rest.
          const int64_t Q = rows * OW, plane = ch.c0 == 0 ? OH * OW : Q;
          char* base = ch.c0 == 0 ? static_cast<char*>(first) : reinterpret_cast<char*>(tmp);
          const size_t es = ch.c0 == 0 ? out_size : 4;
          for (int64_t n = 0; n < x.dim(0); ++n) {
            const char* from = buf + ch.src_bytes + size_t(n * Q * s.M) * es;
            char* to = base + size_t(n * s.M * plane) * es;
            if (es == 1)
              transpose_bytes(from, s.M, to, plane, Q, s.M);
            else
              transpose_floats(reinterpret_cast<const float*>(from), s.M, reinterpret_cast<float*>(to), plane, Q, s.M);
          }
        } else {
          ch.dst_out.execute(st, dst, user_dst);
          st.wait();
        }
        if (ch.c0 == 0) continue;
        const int64_t planes = x.dim(0) * s.M;
        for (int64_t q = 0; q < planes; ++q) {
          int32_t* out = acc + q * OH * OW + part.r0 * OW;
          const int32_t* add = tmp + q * rows * OW;
          for (int64_t j = 0; j < rows * OW; ++j) out[j] = int32_t(uint32_t(out[j]) + uint32_t(add[j]));
        }
      }
      if (s.need_sum && !scaled) {
        int32_t* sum = reinterpret_cast<int32_t*>(buf + part.bytes + part.tmp_bytes);
        if (xt == dt::u8)
          add_window_sums(s, part, g, static_cast<const uint8_t*>(px), xz, N, C, sum, acc);
        else
          add_window_sums(s, part, g, static_cast<const int8_t*>(px), xz, N, C, sum, acc);
      }
    }
  });
  return true;
}

}  // namespace nn
}  // namespace singa
