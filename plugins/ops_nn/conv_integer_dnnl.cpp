#include "conv_integer_dnnl.hpp"

#include <dnnl_threads.hpp>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <tuple>

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

}  // namespace

struct DnnlInt8Conv::State {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  int64_t M = 0, Cg = 0, KH = 0, KW = 0, group = 1;
  std::vector<int8_t> w8;   // OIHW, s8
  std::vector<int32_t> c;   // per output channel: shift - wz[m]
  bool need_sum = false;    // some c[m] != 0
  int64_t wmax = 0;         // max |w8|
  mutable std::mutex mu;
  // Keyed by thread count and input shape (N, C, H, W).
  mutable std::map<std::tuple<int, int64_t, int64_t, int64_t, int64_t>, std::unique_ptr<Plan>> plans;
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
  s->w8.resize(size_t(w.numel()));
  for (int64_t i = 0; i < w.numel(); ++i) {
    s->w8[size_t(i)] = u8 ? int8_t(int32_t(w.data<uint8_t>()[i]) - 128) : w.data<int8_t>()[i];
    s->wmax = std::max<int64_t>(s->wmax, std::abs(int64_t(s->w8[size_t(i)])));
  }
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

// The plan for x of shape {N, C, H, W} at `threads` threads; throws
// dnnl::error when oneDNN has no (non-reference) code for it.
std::unique_ptr<Plan> make_plan(const DnnlInt8Conv::State& s, dt xt, const Geometry& g, int64_t N, int64_t C,
                                int threads) {
  const int64_t H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2];
  const int64_t sh = g.s[1], sw = g.s[2], dh = g.d[1], dw = g.d[2], pt = g.pb[1], pl = g.pb[2], pr = g.pe[2];
  const int64_t Mg = s.M / s.group;
  dnnl::primitive_attr attr;
  attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
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
  if (s.group != 1 || cc > C) cc = C;
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
      ch.user_src = memory::desc(src_dims, xt, memory::dims{C * H * W, H * W, W, 1});
      // The first chunk writes the output; later ones a dense buffer added to it.
      ch.user_dst = c0 == 0 ? memory::desc(dst_dims, dt::s32, memory::dims{s.M * OH * OW, OH * OW, OW, 1})
                            : memory::desc(dst_dims, dt::s32, tag::nchw);
      const memory::dims w_dims = s.group == 1 ? memory::dims{s.M, n, s.KH, s.KW}
                                               : memory::dims{s.group, Mg, s.Cg, s.KH, s.KW};
      const memory::desc user_w = s.group == 1 ? memory::desc(w_dims, dt::s8, memory::dims{s.Cg * s.KH * s.KW,
                                                                                          s.KH * s.KW, s.KW, 1})
                                               : memory::desc(w_dims, dt::s8, tag::goihw);
      const dnnl::convolution_forward::desc d(
          dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
          memory::desc(src_dims, xt, tag::any), memory::desc(w_dims, dt::s8, tag::any),
          memory::desc(dst_dims, dt::s32, tag::any), {sh, sw}, {dh - 1, dw - 1}, {part.lo - i0, pl},
          {i1 - part.hi, pr});
      dnnl::convolution_forward::primitive_desc pd(d, attr, s.eng);
      if (std::string(pd.impl_info_str()).rfind("ref", 0) == 0)
        throw dnnl::error(dnnl_unimplemented, "only the reference implementation");
      ch.conv = dnnl::convolution_forward(pd);
      ch.src_md = pd.src_desc(), ch.dst_md = pd.dst_desc(), ch.scratch_md = pd.scratchpad_desc();
      ch.src_in = dnnl::reorder(dnnl::reorder::primitive_desc(s.eng, ch.user_src, s.eng, ch.src_md));
      ch.dst_out = dnnl::reorder(dnnl::reorder::primitive_desc(s.eng, ch.dst_md, s.eng, ch.user_dst));
      ch.weights = memory(pd.weights_desc(), s.eng);
      memory wsrc(user_w, s.eng, const_cast<int8_t*>(s.w8.data()) + (s.group == 1 ? c0 * s.KH * s.KW : 0));
      dnnl::reorder(wsrc, ch.weights).execute(st, wsrc, ch.weights);
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

}  // namespace

bool DnnlInt8Conv::run(const sdk::Context& ctx, const sdk::Tensor& x, int32_t xz, const Geometry& g,
                       int32_t* acc) const {
  if (g.rank != 2 || x.ndim() != 4) return false;
  const State& s = *s_;
  const int64_t N = x.dim(0), C = x.dim(1);
  if (C != s.Cg * s.group || g.k[1] != s.KH || g.k[2] != s.KW) return false;
  const dt xt = x.dtype() == SINGA_ONNX_UINT8 ? dt::u8 : dt::s8;
  const int threads = std::max(1, ctx.num_threads());
  const Plan* plan = nullptr;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    auto key = std::make_tuple(threads * (xt == dt::u8 ? 1 : -1), N, C, g.in[1], g.in[2]);
    auto it = s.plans.find(key);
    if (it == s.plans.end()) {
      std::unique_ptr<Plan> made;
      try {
        made = make_plan(s, xt, g, N, C, threads);
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
    for (int64_t i = b; i < e; ++i) {
      const Part& part = plan->parts[size_t(i)];
      char* buf = ws + part.ws_offset;
      int32_t* tmp = reinterpret_cast<int32_t*>(buf + part.bytes);
      const int64_t rows = part.r1 - part.r0, OH = g.out[1], OW = g.out[2];
      for (const Chunk& ch : part.chunks) {
        const size_t xoff = size_t(ch.c0 * g.in[1] * g.in[2] + part.lo * g.in[2]);
        memory user_src(ch.user_src, s.eng, const_cast<uint8_t*>(static_cast<const uint8_t*>(px)) + xoff);
        memory src(ch.src_md, s.eng, buf);
        memory dst(ch.dst_md, s.eng, buf + ch.src_bytes);
        memory scratch(ch.scratch_md, s.eng, buf + ch.src_bytes + ch.dst_bytes);
        memory user_dst(ch.user_dst, s.eng, ch.c0 == 0 ? static_cast<void*>(acc + part.r0 * OW) : tmp);
        ch.src_in.execute(st, user_src, src);
        ch.conv.execute(st, {{DNNL_ARG_SRC, src},
                             {DNNL_ARG_WEIGHTS, ch.weights},
                             {DNNL_ARG_DST, dst},
                             {DNNL_ARG_SCRATCHPAD, scratch},
                             {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, zp_mem}});
        ch.dst_out.execute(st, dst, user_dst);
        st.wait();
        if (ch.c0 == 0) continue;
        const int64_t planes = x.dim(0) * s.M;
        for (int64_t q = 0; q < planes; ++q) {
          int32_t* out = acc + q * OH * OW + part.r0 * OW;
          const int32_t* add = tmp + q * rows * OW;
          for (int64_t j = 0; j < rows * OW; ++j) out[j] = int32_t(uint32_t(out[j]) + uint32_t(add[j]));
        }
      }
      if (s.need_sum) {
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
