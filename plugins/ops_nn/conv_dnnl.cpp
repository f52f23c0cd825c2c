#include "conv_dnnl.hpp"

#include "blocked16_f32.hpp"
#include "conv_nchw_f32.hpp"  // sum_activation
#include "pool_blocked16_f32.hpp"
#include "unblock16_f32.hpp"

#include <dnnl_threads.hpp>
#include <oneapi/dnnl/dnnl.hpp>
#include <sgemm.hpp>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

namespace singa {
namespace nn {

using dnnl::memory;

namespace {

size_t align64(size_t n) { return (n + 63) & ~size_t(63); }

}  // namespace

// One part of a convolution: a band of output rows (all channels) or a slice
// of output channels (groups, for grouped convs; all rows), with the input it
// reads. A band's edge rows see the real padding, its inner edges none.
struct DnnlConvPart {
  dnnl::convolution_forward conv;
  dnnl::convolution_forward::primitive_desc pd;
  memory::desc user_src, user_dst;  // strided views into the NCHW tensors
  int64_t src_offset = 0, dst_offset = 0;  // elements
  memory weights, bias;  // the plan's shared copy, or this slice's own
  bool reorder_src = false, reorder_dst = false;
  dnnl::reorder src_in, dst_out;
  // A band of rows whose output oneDNN writes in 16-channel blocks goes back
  // to NCHW through unblock16_f32 instead of dst_out (see its header).
  bool unblock16 = false;
  // Set when oneDNN's Winograd code refused the activation as a post-op: it
  // then runs on the part's output right after the convolution, in cache
  // (doing it in the unblocking instead, or after the pooling for a pooled
  // part, measured the same on Tiny-YOLOv2's LeakyRelus).
  bool act_after = false;
  dnnl::eltwise_forward act;
  // A ConvAdd part whose primitive adds Z itself (a binary post-op reading
  // Z in the output's blocks) and applies the activation after it, so no
  // pass over Y and Z follows: on ResNet-50's 56x56 layers that pass cost as
  // much as the 1x1 convolution.
  bool sum_post = false;
  size_t src_bytes = 0, dst_bytes = 0, scratch_bytes = 0, ws_offset = 0;
  // With a blocked input (BlockedLayout): the input rows [lo, hi) the
  // part reads, copied into its buffer unless they are the whole tensor.
  bool copy_src = false;
  int64_t lo = 0, hi = 0;
  // With a blocked output: the part writes straight into the output tensor
  // (all rows, and one image or all channels), else into its buffer first.
  bool direct_dst = false;
  // The part's first output row and channel. A pooled plan's part: conv
  // rows from r0 in blocks, pooled rows [q0, q1) through a blocked buffer of
  // pool_bytes.
  int64_t r0 = 0, m0 = 0, q0 = 0, q1 = 0;
  size_t pool_bytes = 0;
};

// The parts for one thread count.
struct DnnlConvPlan {
  std::vector<DnnlConvPart> parts;
  size_t ws_bytes = 0;
};

struct DnnlConv::State {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  int64_t N = 0, C = 0, H = 0, W = 0, M = 0, Cg = 0, KH = 0, KW = 0, OH = 0, OW = 0, group = 1;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pb = 0, pl = 0, pr = 0;
  dnnl::primitive_attr attr, attr_no_act;  // the second without the activation post-op
  dnnl::algorithm act_alg = dnnl::algorithm::undef;
  float act_alpha = 0.f, act_beta = 0.f;
  // A ConvAdd's activation (after the sum) as a oneDNN post-op; undef when
  // there is none or oneDNN has none for it (sum_alg_ok false then).
  dnnl::algorithm sum_alg = dnnl::algorithm::undef;
  float sum_alpha = 0.f, sum_beta = 0.f;
  bool sum_alg_ok = false;
  bool winograd = false;  // a 3x3 convolution that may take oneDNN's Winograd code
  int64_t min_parts = 1;  // slices of output channels even at 1 thread, to bound Winograd's weight reorders
  bool pooled = false;    // a MaxPool over the output (pool), see plan()
  bool summand = false;   // run() adds z, then applies act (the primitives have no activation)
  bool blocked_in = false, blocked_out = false;  // BlockedLayout
  bool blocked_z = false;  // BlockedLayout::z: Z in blocks, Y NCHW
  DnnlSwitches switches;
  FusedActivation act;    // the node's fused activation
  Geometry pool;
  std::vector<float> bias;
  // Built on first use for each thread count: a Rep usually runs at one count,
  // so only that plan pays oneDNN's code generation and holds weights.
  mutable std::mutex mu;
  mutable std::map<int, std::unique_ptr<DnnlConvPlan>> plans;
};

DnnlConv::~DnnlConv() = default;

namespace {

using tag = memory::format_tag;
using dt = memory::data_type;

// Winograd's F(2x2,3x3) / F(4x4,3x3) transforms do 2.25-4x fewer
// multiplications than the direct convolution: ResNet-18's 3x3 layers ran
// 1.4-1.8x faster, Tiny-YOLOv2's 1.3-1.9x (the 7x7 and 13x13 ones break even
// or gain); outputs move by float rounding (3.8e-6 on ResNet-18's logits of
// magnitude 11). oneDNN 2.6 accepts only some activations as Winograd
// post-ops (not LeakyRelu), so a refused one runs as its own eltwise
// primitive on the part's output. False when oneDNN has no Winograd code for
// the part (or the shape is not one where it pays, see plan()).
bool winograd_part(const DnnlConv::State& s, const dnnl::convolution_forward::desc& d, DnnlConvPart& part) {
  if (!s.winograd) return false;
  try {
    part.pd = dnnl::convolution_forward::primitive_desc(d, s.attr, s.eng);
    return true;
  } catch (const dnnl::error&) {
  }
  if (s.act_alg == dnnl::algorithm::undef) return false;
  try {
    part.pd = dnnl::convolution_forward::primitive_desc(d, s.attr_no_act, s.eng);
  } catch (const dnnl::error&) {
    return false;
  }
  const dnnl::eltwise_forward::desc ed(dnnl::prop_kind::forward_inference, s.act_alg, part.pd.dst_desc(), s.act_alpha,
                                       s.act_beta);
  part.act = dnnl::eltwise_forward(dnnl::eltwise_forward::primitive_desc(ed, s.eng));
  part.act_after = true;
  return true;
}

// The part writing output rows [r0, r1) and channels [m0, m1) (for grouped
// convs a whole number of groups). Weights are `any` (oneDNN picks) unless
// `weights_md` is given. Throws dnnl::error when oneDNN refuses the shape.
DnnlConvPart make_part(const DnnlConv::State& s, int64_t r0, int64_t r1, int64_t m0, int64_t m1,
                       const memory::desc* weights_md) {
  const int64_t ext = (s.KH - 1) * s.dh + 1;
  const int64_t i0 = r0 * s.sh - s.pt, i1 = (r1 - 1) * s.sh - s.pt + ext;  // input rows the band reads
  const int64_t lo = std::clamp<int64_t>(i0, 0, s.H);
  int64_t hi = std::clamp<int64_t>(i1, 0, s.H);
  // The last band may leave input rows unread (stride 2 over an even height):
  // it then takes them too with no end padding, when that gives the same rows
  // out, so that oneDNN reads the input in place instead of through a copy
  // of its first rows (SqueezeNet's 3->64 conv: 0.02 ms).
  if (hi < s.H && i1 <= s.H && r1 == s.OH && (s.H - i0 - ext) / s.sh + 1 == r1 - r0) hi = s.H;
  if (hi <= lo) throw dnnl::error(dnnl_invalid_arguments, "a band of padding only");
  const int64_t Mg = s.M / s.group, pm = m1 - m0;
  const int64_t groups = s.group == 1 ? 1 : pm / Mg;
  const int64_t c0 = s.group == 1 ? 0 : m0 / Mg * s.Cg, pc = s.group == 1 ? s.C : groups * s.Cg;
  DnnlConvPart part;
  const memory::dims src_dims{s.N, pc, hi - lo, s.W}, dst_dims{s.N, pm, r1 - r0, s.OW};
  part.user_src = memory::desc(src_dims, dt::f32, memory::dims{s.C * s.H * s.W, s.H * s.W, s.W, 1});
  part.user_dst = memory::desc(dst_dims, dt::f32, memory::dims{s.M * s.OH * s.OW, s.OH * s.OW, s.OW, 1});
  part.src_offset = c0 * s.H * s.W + lo * s.W;
  part.dst_offset = m0 * s.OH * s.OW + r0 * s.OW;
  const memory::dims w_dims =
      s.group == 1 ? memory::dims{pm, s.Cg, s.KH, s.KW} : memory::dims{groups, Mg, s.Cg, s.KH, s.KW};
  memory::desc bias_md({pm}, dt::f32, tag::x);
  // A blocked side that oneDNN's pick reads or writes in another layout
  // costs a reorder, which is fast only on a dense tensor: a part of all
  // rows (and one image or all channels) may take it; a band gets the
  // blocked layout forced on it.
  const bool whole_rows = r0 == 0 && r1 == s.OH && (s.N == 1 || pm == s.M);
  const bool reorder_out = whole_rows && !s.pooled;  // a pooled part's pool reads its blocks
  const memory::desc blocked_src(src_dims, dt::f32, tag::nChw16c), blocked_dst(dst_dims, dt::f32, tag::nChw16c);
  bool force_src = false, force_dst = false;
  auto desc = [&](dnnl::algorithm alg, tag dst_tag) {
    return dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, alg,
                                           memory::desc(src_dims, dt::f32, force_src ? tag::nChw16c : tag::any),
                                           weights_md ? *weights_md : memory::desc(w_dims, dt::f32, tag::any), bias_md,
                                           memory::desc(dst_dims, dt::f32, force_dst ? tag::nChw16c : dst_tag),
                                           {s.sh, s.sw}, {s.dh - 1, s.dw - 1}, {lo - i0, s.pl},
                                           {std::max<int64_t>(0, i1 - hi), s.pr});
  };
  auto direct = [&] {
    // For thin inputs (a net's first conv, C = 3) oneDNN picks its brgconv
    // code with a channels-last output, whose transpose back to NCHW cost
    // almost as much as the convolution (SqueezeNet's 3->64 3x3/s2: 0.27 ms
    // + 0.22 ms reorder); its jit code writing 16-channel blocks took 0.25 ms
    // + 0.12 ms (whole nets: SqueezeNet -0.2 ms, Tiny-YOLOv2 -0.6 ms).
    if (s.C < 16) {
      try {
        part.pd = dnnl::convolution_forward::primitive_desc(desc(dnnl::algorithm::convolution_direct, tag::nChw16c),
                                                            s.attr, s.eng);
        if (std::string(part.pd.impl_info_str()).rfind("ref", 0) != 0) return;
      } catch (const dnnl::error&) {
      }
    }
    part.pd =
        dnnl::convolution_forward::primitive_desc(desc(dnnl::algorithm::convolution_direct, tag::any), s.attr, s.eng);
  };
  // A blocked side asks for 16-channel blocks first: left to pick, oneDNN
  // takes its brgconv code on channels-last (acdb) for 1x1 and strided
  // convs, and the reorders of the whole tensor in and out cost more than
  // brgconv saves (ResNet-50's 1x1 layers, 64-2048 channels: jit_1x1 on
  // blocks without reorders ran 20-40% faster than brgconv_1x1 with them).
  force_src = s.blocked_in, force_dst = s.blocked_out || s.blocked_z;
  bool planned = false;
  if (force_src || force_dst) {
    try {
      planned = winograd_part(s, desc(dnnl::algorithm::convolution_winograd, tag::any), part);
      if (!planned) direct();
      planned = std::string(part.pd.impl_info_str()).rfind("ref", 0) != 0;
    } catch (const dnnl::error&) {
    }
  }
  if (!planned) {
    if (s.blocked_z) throw dnnl::error(dnnl_unimplemented, "no 16-channel blocks to add a blocked Z to");
    force_src = force_dst = false;
    if (!winograd_part(s, desc(dnnl::algorithm::convolution_winograd, tag::any), part)) {
      direct();
      force_src = s.blocked_in && part.pd.src_desc() != blocked_src && !whole_rows;
      force_dst = s.blocked_out && part.pd.dst_desc() != blocked_dst && !reorder_out;
      if (force_src || force_dst) direct();
    }
  }
  // oneDNN's reference code is slower than the im2col path by far (a 1x1
  // band forced into another band's weight layout ran 50x slower).
  if (std::string(part.pd.impl_info_str()).rfind("ref", 0) == 0)
    throw dnnl::error(dnnl_unimplemented, "only the reference implementation");
  part.lo = lo, part.hi = hi, part.r0 = r0, part.m0 = m0;
  if (s.blocked_in) {
    // Blocked rows of the part's own, or oneDNN's layout from the whole tensor.
    part.user_src = blocked_src;
    part.src_offset = 0;
    part.reorder_src = part.pd.src_desc() != blocked_src;
    part.copy_src = !part.reorder_src && (lo > 0 || hi < s.H);
    part.src_bytes = part.reorder_src || part.copy_src ? align64(part.pd.src_desc().get_size()) : 0;
  } else {
    part.reorder_src = part.pd.src_desc() != part.user_src;
    part.src_bytes = part.reorder_src ? align64(part.pd.src_desc().get_size()) : 0;
  }
  if (s.blocked_out) {
    if (part.pd.dst_desc() != blocked_dst && !reorder_out)
      throw dnnl::error(dnnl_unimplemented, "the conv does not write 16-channel blocks");
    // Straight into the output tensor, through a reorder, or a band buffer.
    part.user_dst = blocked_dst;
    part.dst_offset = m0 * s.OH * s.OW;
    part.reorder_dst = part.pd.dst_desc() != blocked_dst;
    part.direct_dst = reorder_out && !part.reorder_dst;
    if (part.direct_dst && s.summand && s.sum_alg_ok && !part.act_after) {
      // The same convolution with Z added (and the activation applied) by
      // the primitive; kept only where oneDNN has jit code for it.
      dnnl::primitive_attr a;
      a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      dnnl::post_ops po;
      po.append_binary(dnnl::algorithm::binary_add, blocked_dst);
      if (s.sum_alg != dnnl::algorithm::undef) po.append_eltwise(1.f, s.sum_alg, s.sum_alpha, s.sum_beta);
      a.set_post_ops(po);
      const bool wino = std::string(part.pd.impl_info_str()).find("wino") != std::string::npos;
      try {
        const dnnl::convolution_forward::desc d(
            dnnl::prop_kind::forward_inference,
            wino ? dnnl::algorithm::convolution_winograd : dnnl::algorithm::convolution_direct, part.pd.src_desc(),
            part.pd.weights_desc(), bias_md, blocked_dst, {s.sh, s.sw}, {s.dh - 1, s.dw - 1}, {lo - i0, s.pl},
            {std::max<int64_t>(0, i1 - hi), s.pr});
        dnnl::convolution_forward::primitive_desc pd(d, a, s.eng);
        if (std::string(pd.impl_info_str()).rfind("ref", 0) != 0 && pd.dst_desc() == blocked_dst &&
            pd.src_desc() == part.pd.src_desc()) {
          part.pd = pd;
          part.sum_post = true;
        }
      } catch (const dnnl::error&) {
      }
    }
    part.dst_bytes = part.direct_dst ? 0 : align64(part.pd.dst_desc().get_size());
    part.scratch_bytes = align64(part.pd.scratchpad_desc().get_size());
    return part;
  }
  part.reorder_dst = part.pd.dst_desc() != part.user_dst;
  if (s.blocked_z && part.pd.dst_desc() != memory::desc(dst_dims, dt::f32, tag::nChw16c))
    throw dnnl::error(dnnl_unimplemented, "no 16-channel blocks to add a blocked Z to");
  // A whole-height part keeps oneDNN's dense reorder, unless the summand
  // rides in the unblocking.
  part.unblock16 = s.switches.unblock16 && part.reorder_dst && fast::avx512() && (r1 - r0 < s.OH || s.summand) && pm % 16 == 0 &&
                   part.pd.dst_desc() == memory::desc(dst_dims, dt::f32, tag::nChw16c);
  part.dst_bytes = part.reorder_dst ? align64(part.pd.dst_desc().get_size()) : 0;
  part.scratch_bytes = align64(part.pd.scratchpad_desc().get_size());
  return part;
}

// Generates the part's code and gives it weights: `shared` when the plan has
// one copy, else channels [m0, m0 + pm) of the OIHW (GOIHW) weights w.
void finish_part(const DnnlConv::State& s, DnnlConvPart& part, const memory* shared, const float* w, int64_t m0) {
  part.conv = dnnl::convolution_forward(part.pd);
  if (part.reorder_src)
    part.src_in = dnnl::reorder(dnnl::reorder::primitive_desc(s.eng, part.user_src, s.eng, part.pd.src_desc()));
  if (part.reorder_dst && !part.unblock16 && !s.pooled)
    part.dst_out = dnnl::reorder(dnnl::reorder::primitive_desc(s.eng, part.pd.dst_desc(), s.eng, part.user_dst));
  const int64_t pm = part.pd.dst_desc().dims()[1];
  part.bias = memory(memory::desc({pm}, dt::f32, tag::x), s.eng);
  std::copy(s.bias.begin() + m0, s.bias.begin() + m0 + pm, static_cast<float*>(part.bias.get_data_handle()));
  if (shared) {
    part.weights = *shared;
    return;
  }
  const memory::desc& wd = part.pd.weights_desc();
  memory::dims w_dims = wd.dims();
  memory::desc user_w(w_dims, dt::f32, w_dims.size() == 4 ? tag::oihw : tag::goihw);
  memory wsrc(user_w, s.eng, const_cast<float*>(w) + m0 * s.Cg * s.KH * s.KW);
  part.weights = memory(wd, s.eng);
  dnnl::stream st(s.eng);
  dnnl::reorder(wsrc, part.weights).execute(st, wsrc, part.weights);
  st.wait();
}

void add_part(DnnlConvPlan& plan, DnnlConvPart part) {
  part.ws_offset = plan.ws_bytes;
  plan.ws_bytes += part.src_bytes + part.dst_bytes + part.scratch_bytes + part.pool_bytes;
  plan.parts.push_back(std::move(part));
}

DnnlConvPlan whole(const DnnlConv::State& s, const float* w) {
  DnnlConvPlan plan;
  DnnlConvPart part = make_part(s, 0, s.OH, 0, s.M, nullptr);
  finish_part(s, part, nullptr, w, 0);
  add_part(plan, std::move(part));
  return plan;
}

// Bands of rows keep every part as wide as the whole convolution (half-width
// parts ran about 1.5x slower per flop) and share one copy of the weights;
// but every part then streams all the weights, so convolutions whose weights
// outweigh their activations (the deep, small-image layers) split their
// output channels instead, each part reading only its own weights.
// A 1x1 conv from blocks to blocks that widens (ResNet's expanding 1x1
// layers and shortcuts) splits its output channels too: a band would copy
// its input and output rows out of and back into the blocks (and add a
// ConvAdd's Z there), where a channel slice of one image reads the input in
// place and writes its own contiguous blocks, Z added by the primitive
// (ResNet-50 at 2 threads: those layers 15-30% faster in per-node minima;
// narrowing 1x1 layers ran 10-20% slower that way, so they keep bands).
bool split_rows(const DnnlConv::State& s, int64_t n) {
  const int64_t weights = s.M * s.Cg * s.KH * s.KW, acts = s.N * (s.C * s.H * s.W + s.M * s.OH * s.OW);
  const int64_t units = s.group == 1 ? s.M / 16 : s.group;  // channel slices keep oneDNN's 16-wide blocks
  if (s.blocked_in && s.blocked_out && s.KH == 1 && s.KW == 1 && s.N == 1 && s.M >= s.C && units >= n) return false;
  return s.OH >= n && (weights <= acts || units < n);
}

// A plan of bands that all read the first band's copy of the weights.
std::unique_ptr<DnnlConvPlan> sharing_weights(const DnnlConv::State& s, std::vector<DnnlConvPart> parts,
                                              const float* w) {
  auto plan = std::make_unique<DnnlConvPlan>();
  finish_part(s, parts[0], nullptr, w, 0);
  const memory shared = parts[0].weights;
  for (size_t p = 1; p < parts.size(); ++p) finish_part(s, parts[p], &shared, w, 0);
  for (auto& part : parts) add_part(*plan, std::move(part));
  return plan;
}

// Null when oneDNN refuses some band in the first band's weight layout.
std::unique_ptr<DnnlConvPlan> split_by_rows(const DnnlConv::State& s, int64_t n, const float* w) {
  std::vector<DnnlConvPart> parts;
  try {
    parts.push_back(make_part(s, 0, s.OH / n, 0, s.M, nullptr));
    const memory::desc wd = parts[0].pd.weights_desc();
    for (int64_t p = 1; p < n; ++p) parts.push_back(make_part(s, s.OH * p / n, s.OH * (p + 1) / n, 0, s.M, &wd));
    for (auto& part : parts)
      if (part.pd.weights_desc() != wd) return nullptr;
  } catch (const dnnl::error&) {
    return nullptr;
  }
  return sharing_weights(s, std::move(parts), w);
}

// The part writing the conv rows that pooled rows [q0, q1) read, for output
// channels [m0, m1) (all of them unless given).
DnnlConvPart pooled_part(const DnnlConv::State& s, int64_t q0, int64_t q1, const memory::desc* weights_md,
                         int64_t m0 = 0, int64_t m1 = -1) {
  const Geometry& pg = s.pool;
  if (m1 < 0) m1 = s.M;
  const auto [r0, r1] = pg.in_range(1, q0, q1);
  if (r1 <= r0) throw dnnl::error(dnnl_invalid_arguments, "pooled rows of padding only");
  DnnlConvPart part = make_part(s, r0, r1, m0, m1, weights_md);
  const memory::dims dst_dims{s.N, m1 - m0, r1 - r0, s.OW};
  if (part.pd.dst_desc() != memory::desc(dst_dims, dt::f32, tag::nChw16c))
    throw dnnl::error(dnnl_unimplemented, "the conv output is not in 16-channel blocks");
  part.r0 = r0, part.m0 = m0, part.q0 = q0, part.q1 = q1;
  part.unblock16 = false;
  part.pool_bytes = align64(size_t(s.N * (m1 - m0) * (q1 - q0) * pg.out[2]) * sizeof(float));
  return part;
}

// A pooled plan of n slices of 16-channel blocks, each convolving and
// pooling all rows with its own share of the weights: for the layers that
// split_rows sends to channel slices (crnn's 512-channel 3x3 convs on 4x32
// planes, 9 MiB of weights for 128 pixels), where every band would stream
// all the weights.
std::unique_ptr<DnnlConvPlan> pooled_channel_plan(const DnnlConv::State& s, int64_t n, const float* w) {
  const int64_t units = s.M / 16;
  auto plan = std::make_unique<DnnlConvPlan>();
  for (int64_t p = 0; p < n; ++p) {
    const int64_t m0 = units * p / n * 16, m1 = units * (p + 1) / n * 16;
    DnnlConvPart part = pooled_part(s, 0, s.pool.out[1], nullptr, m0, m1);
    finish_part(s, part, nullptr, w, m0);
    add_part(*plan, std::move(part));
  }
  return plan;
}

// A pooled plan: the pooled rows in n bands, each part convolving the rows
// its band reads (neighbours share a row or two) with one copy of the weights.
std::unique_ptr<DnnlConvPlan> pooled_plan(const DnnlConv::State& s, int64_t n, const float* w) {
  if (n > 1 && s.group == 1 && !split_rows(s, n)) return pooled_channel_plan(s, std::min<int64_t>(n, s.M / 16), w);
  const int64_t PH = s.pool.out[1];
  n = std::clamp<int64_t>(n, 1, PH);
  std::vector<DnnlConvPart> parts;
  parts.push_back(pooled_part(s, 0, PH / n, nullptr));
  const memory::desc wd = parts[0].pd.weights_desc();
  for (int64_t p = 1; p < n; ++p) {
    parts.push_back(pooled_part(s, PH * p / n, PH * (p + 1) / n, &wd));
    if (parts.back().pd.weights_desc() != wd) throw dnnl::error(dnnl_unimplemented, "bands disagree on weights");
  }
  return sharing_weights(s, std::move(parts), w);
}

std::unique_ptr<DnnlConvPlan> make_split(const DnnlConv::State& s, int threads, const float* w) {
  if (s.min_parts <= 1 && split_rows(s, threads))
    if (auto plan = split_by_rows(s, threads, w)) return plan;
  auto plan = std::make_unique<DnnlConvPlan>();
  const int64_t Mg = s.M / s.group;
  const int64_t units = s.group == 1 ? std::max<int64_t>(1, s.M / 16) : s.group;
  // At least min_parts slices, a multiple of the thread count.
  const int64_t n = std::min<int64_t>((std::max<int64_t>(threads, s.min_parts) + threads - 1) / threads * threads, units);
  if (n < 2) return nullptr;
  for (int64_t p = 0; p < n; ++p) {
    const int64_t u0 = units * p / n, u1 = units * (p + 1) / n;
    const int64_t m0 = s.group == 1 ? s.M * u0 / units : u0 * Mg, m1 = s.group == 1 ? s.M * u1 / units : u1 * Mg;
    DnnlConvPart part = make_part(s, 0, s.OH, m0, m1, nullptr);
    finish_part(s, part, nullptr, w, m0);
    add_part(*plan, std::move(part));
  }
  return plan;
}

}  // namespace

std::unique_ptr<DnnlConv> DnnlConv::plan(const Shape& x, const sdk::Tensor& w, const sdk::Tensor& b, const Geometry& g,
                                         int64_t group, const FusedActivation& act, const Geometry* pool,
                                         bool summand, BlockedLayout layout, const DnnlSwitches& switches) {
  if ((layout.in && (group != 1 || x.size() != 4 || x[1] % 16 != 0)) ||
      ((layout.out || layout.z) && w.dim(0) % 16 != 0) || (layout.z && (layout.out || !summand || !fast::avx512())))
    return nullptr;
  if (g.rank != 2 || x.size() != 4 || !w.present() || w.dtype() != SINGA_ONNX_FLOAT || w.ndim() != 4) return nullptr;
  if (b.present() && (b.dtype() != SINGA_ONNX_FLOAT || b.numel() != w.dim(0))) return nullptr;
  for (int64_t d : x)
    if (d <= 0) return nullptr;
  std::unique_ptr<DnnlConv> c(new DnnlConv());
  c->s_ = std::make_unique<State>();
  State& s = *c->s_;
  s.N = x[0], s.C = x[1], s.H = x[2], s.W = x[3], s.M = w.dim(0), s.Cg = w.dim(1), s.KH = w.dim(2), s.KW = w.dim(3);
  s.OH = g.out[1], s.OW = g.out[2], s.group = group;
  s.sh = g.s[1], s.sw = g.s[2], s.dh = g.d[1], s.dw = g.d[2];
  s.pt = g.pb[1], s.pl = g.pb[2], s.pb = g.pe[1], s.pr = g.pe[2];
  if (s.Cg * group != s.C || s.M % group != 0 || s.OH <= 0 || s.OW <= 0) return nullptr;
  ops::dnnl_single_thread();
  try {
    c->x_ = x;
    c->y_ = Shape{s.N, s.M, s.OH, s.OW};
    s.attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    s.attr_no_act.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    s.act = act;
    s.blocked_in = layout.in, s.blocked_out = layout.out, s.blocked_z = layout.z;
    s.switches = switches;
    if (summand) {
      if (pool) return nullptr;
      s.summand = true;
      s.sum_alg_ok = true;
      if (act.kind == FusedActivation::kRelu || act.kind == FusedActivation::kLeakyRelu) {
        s.sum_alg = dnnl::algorithm::eltwise_relu;
        s.sum_alpha = act.kind == FusedActivation::kLeakyRelu ? act.alpha : 0.f;
      } else if (act.kind == FusedActivation::kClip) {
        s.sum_alg = dnnl::algorithm::eltwise_clip, s.sum_alpha = act.lo, s.sum_beta = act.hi;
      } else if (act.kind != FusedActivation::kNone) {
        s.sum_alg_ok = false;  // the kernel's own pass applies the others after the sum
      }
    } else if (act.kind == FusedActivation::kRelu || act.kind == FusedActivation::kLeakyRelu) {
      s.act_alg = dnnl::algorithm::eltwise_relu;  // oneDNN's relu with a negative slope is LeakyRelu
      s.act_alpha = act.kind == FusedActivation::kLeakyRelu ? act.alpha : 0.f;
    } else if (act.kind == FusedActivation::kClip) {
      s.act_alg = dnnl::algorithm::eltwise_clip, s.act_alpha = act.lo, s.act_beta = act.hi;
    } else if (act.kind == FusedActivation::kSigmoid) {
      s.act_alg = dnnl::algorithm::eltwise_logistic;
    } else if (act.kind == FusedActivation::kTanh) {
      s.act_alg = dnnl::algorithm::eltwise_tanh;
    } else if (act.kind == FusedActivation::kSwish) {
      s.act_alg = dnnl::algorithm::eltwise_swish, s.act_alpha = act.alpha;
    } else if (act.kind == FusedActivation::kHardSwish) {
      s.act_alg = dnnl::algorithm::eltwise_hardswish;  // x relu6(x + 3) / 6, ONNX's HardSwish
    } else if (act.kind != FusedActivation::kNone) {
      return nullptr;  // oneDNN 2.6 has no single post-op for it (HardSigmoid): the in-house paths take it
    }
    if (s.act_alg != dnnl::algorithm::undef) {
      dnnl::post_ops po;
      po.append_eltwise(1.f, s.act_alg, s.act_alpha, s.act_beta);
      s.attr.set_post_ops(po);
    }
    // Winograd loses to the direct code on thin layers (Tiny-YOLOv2's 3->16
    // conv at 416x416 ran 2.2x slower, its 16->32 one gained 1.3x).
    s.winograd = switches.winograd && s.group == 1 && s.KH == 3 && s.KW == 3 && s.sh == 1 && s.sw == 1 && s.dh == 1 &&
                 s.dw == 1 && s.C >= 16 && s.M >= 16;
    s.bias.assign(size_t(s.M), 0.f);
    if (b.present()) std::copy(b.data<float>(), b.data<float>() + s.M, s.bias.begin());
    // oneDNN takes the whole convolution, or the im2col path does.
    const DnnlConvPart whole = make_part(s, 0, s.OH, 0, s.M, nullptr);
    // Transformed weights are 1.8x (F(2x2,3x3)) to 4x (F(4x4,3x3)) the
    // original ones, and oneDNN's reorder into them holds a second buffer of
    // that size while it runs (Tiny-YOLOv2's 1024->1024 layer: 67 MiB, and
    // 64 more during the reorder, took the peak RSS past ONNX Runtime's):
    // past 16 MiB the plans slice the output channels, even at 1 thread, so
    // that each slice's reorder holds only its own share. But every slice
    // transforms the whole input into a scratch of its own, which grows with
    // the batch (that layer at batch 8: 9 slices of 42 MiB, 2.7x slower than
    // the direct code): past 32 MiB of slice scratch in all, the layer runs
    // whole, or with the direct code when its transformed weights pass 48 MiB.
    const size_t max_winograd_part = std::max<size_t>(1, switches.winograd_part_bytes);
    const size_t wino_bytes = whole.pd.weights_desc().get_size();
    if (s.winograd && std::string(whole.pd.impl_info_str()).find("wino") != std::string::npos &&
        wino_bytes > max_winograd_part) {
      s.min_parts = std::min<int64_t>(s.M / 16, int64_t((wino_bytes + max_winograd_part - 1) / max_winograd_part));
      const DnnlConvPart slice = make_part(s, 0, s.OH, 0, s.M / s.min_parts / 16 * 16, nullptr);
      if (size_t(s.min_parts) * slice.scratch_bytes > (size_t(32) << 20)) {
        s.min_parts = 1;
        if (wino_bytes > (size_t(48) << 20)) s.winograd = false;
      }
    }
    if (pool) {
      // Pooled only where the whole convolution writes 16-channel blocks
      // and the pooling is ours to run (AVX-512); bands are checked when
      // their plan is made.
      if (!fast::avx512() || s.M % 16 != 0 || pool->rank != 2 || pool->out[1] <= 0 || pool->out[2] <= 0)
        return nullptr;
      s.pooled = true;
      s.pool = *pool;
      pooled_part(s, 0, pool->out[1], nullptr);  // throws when oneDNN picks another layout
      c->y_ = Shape{s.N, s.M, pool->out[1], pool->out[2]};
    }
    return c;
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

const DnnlConvPlan& DnnlConv::plan_for(int threads, const float* w) const {
  const State& s = *s_;
  threads = std::max(1, threads);
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.plans.find(threads);
  if (it == s.plans.end()) {
    ops::dnnl_single_thread();
    std::unique_ptr<DnnlConvPlan> plan;
    if (s.pooled) {
      try {
        plan = pooled_plan(s, threads, w);
      } catch (const dnnl::error&) {
        plan = pooled_plan(s, 1, w);  // plan() made sure the whole one works
      }
    } else if (threads > 1 || s.min_parts > 1) {
      try {
        plan = make_split(s, threads, w);
      } catch (const dnnl::error&) {
        plan.reset();  // the whole convolution, on one thread
      }
    }
    if (!plan) plan = std::make_unique<DnnlConvPlan>(whole(s, w));
    it = s.plans.emplace(threads, std::move(plan)).first;
  }
  return *it->second;
}

void DnnlConv::run(const sdk::Context& ctx, const float* x, const float* w, float* y, const float* z) const {
  const State& s = *s_;
  if (s.summand != (z != nullptr)) sdk::fail("internal: a ConvAdd plan run without its summand, or the reverse");
  const DnnlConvPlan& plan = plan_for(ctx.num_threads(), w);
  // Per-call buffers from the context keep concurrent runs apart.
  char* ws = static_cast<char*>(ctx.workspace(plan.ws_bytes + 64));
  ws = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(ws) + 63) & ~uintptr_t(63));
  ctx.parallel_for(int64_t(plan.parts.size()), 1, [&](int64_t pb, int64_t pe) {
    ops::dnnl_single_thread();
    dnnl::stream st(s.eng);
    for (int64_t i = pb; i < pe; ++i) {
      const DnnlConvPart& p = plan.parts[size_t(i)];
      char* base = ws + p.ws_offset;
      memory usrc(p.user_src, s.eng, const_cast<float*>(x) + p.src_offset), udst(p.user_dst, s.eng, y + p.dst_offset);
      memory src = usrc, dst = udst;
      if (p.reorder_src) {
        src = memory(p.pd.src_desc(), s.eng, base);
        p.src_in.execute(st, usrc, src);
      } else if (s.blocked_in) {
        float* b = p.copy_src ? reinterpret_cast<float*>(base) : const_cast<float*>(x);
        if (p.copy_src) load_blocked16_rows(x, b, s.N, s.C, s.H, s.W, p.lo, p.hi - p.lo);
        src = memory(p.pd.src_desc(), s.eng, b);
      }
      if (s.blocked_out)
        dst = memory(p.pd.dst_desc(), s.eng,
                     p.direct_dst ? y + p.dst_offset : reinterpret_cast<float*>(base + p.src_bytes));
      else if (p.reorder_dst)
        dst = memory(p.pd.dst_desc(), s.eng, base + p.src_bytes);
      memory scratch(p.pd.scratchpad_desc(), s.eng, base + p.src_bytes + p.dst_bytes);
      std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src},
                                           {DNNL_ARG_WEIGHTS, p.weights},
                                           {DNNL_ARG_BIAS, p.bias},
                                           {DNNL_ARG_DST, dst},
                                           {DNNL_ARG_SCRATCHPAD, scratch}};
      if (p.sum_post)
        args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1,
                     memory(p.pd.dst_desc(), s.eng, const_cast<float*>(z) + p.dst_offset));
      p.conv.execute(st, args);
      if (p.act_after) p.act.execute(st, {{DNNL_ARG_SRC, dst}, {DNNL_ARG_DST, dst}});
      if (s.pooled) {
        float* pooled = reinterpret_cast<float*>(base + p.src_bytes + p.dst_bytes + p.scratch_bytes);
        const int64_t PH = s.pool.out[1], PW = s.pool.out[2];
        const int64_t pm = p.pd.dst_desc().dims()[1];  // a channel slice's, or all
        max_pool_blocked16_f32(static_cast<const float*>(dst.get_data_handle()), s.N, pm, p.pd.dst_desc().dims()[2],
                               p.r0, s.pool, p.q0, p.q1, pooled);
        if (s.blocked_out)
          store_blocked16_rows(pooled, y, s.N, pm, p.q1 - p.q0, PW, s.M, PH, p.m0, p.q0, nullptr, FusedActivation());
        else
          unblock16_f32(pooled, y + (p.m0 * PH + p.q0) * PW, s.N, pm, p.q1 - p.q0, PW, s.M * PH * PW, PH * PW);
      } else if (s.blocked_out) {
        const memory::dims d = p.pd.dst_desc().dims();
        if (p.reorder_dst) p.dst_out.execute(st, dst, udst);
        if (!p.direct_dst && !p.reorder_dst) {
          store_blocked16_rows(static_cast<const float*>(dst.get_data_handle()), y, d[0], d[1], d[2], d[3], s.M, s.OH,
                               p.m0, p.r0, z, z ? s.act : FusedActivation());
        } else if (z && !p.sum_post) {
          const int64_t at = p.dst_offset;  // all rows of one image, or of all channels: contiguous
          sum_activation(s.act, y + at, z + at, d[0] * d[1] * d[2] * d[3]);
        }
      } else if (s.blocked_z) {
        // The part's rows of each 16-channel block of Z, added in blocks.
        const memory::dims d = p.pd.dst_desc().dims();
        float* blocked = static_cast<float*>(dst.get_data_handle());
        const int64_t rows = d[2] * d[3] * 16, blocks = d[1] / 16;
        for (int64_t n = 0; n < d[0]; ++n)
          for (int64_t b = 0; b < blocks; ++b)
            sum_activation(s.act, blocked + (n * blocks + b) * rows,
                           z + ((n * (s.M / 16) + p.m0 / 16 + b) * s.OH + p.r0) * s.OW * 16, rows);
        unblock16_f32(blocked, y + p.dst_offset, d[0], d[1], d[2], d[3], s.M * s.OH * s.OW, s.OH * s.OW);
      } else if (p.unblock16) {
        const memory::dims d = p.pd.dst_desc().dims();
        const float* blocked = static_cast<const float*>(dst.get_data_handle());
        unblock16_f32(blocked, y + p.dst_offset, d[0], d[1], d[2], d[3], s.M * s.OH * s.OW, s.OH * s.OW,
                      z ? z + p.dst_offset : nullptr, z ? s.act : FusedActivation());
      } else if (p.reorder_dst) {
        p.dst_out.execute(st, dst, udst);
      }
      if (z && !p.unblock16 && !s.blocked_out && !s.blocked_z) {
        // The part's rows of each of its channels, contiguous in NCHW.
        const memory::dims d = p.user_dst.dims();
        for (int64_t n = 0; n < d[0]; ++n)
          for (int64_t c = 0; c < d[1]; ++c) {
            const int64_t at = p.dst_offset + n * s.M * s.OH * s.OW + c * s.OH * s.OW;
            sum_activation(s.act, y + at, z + at, d[2] * d[3]);
          }
      }
    }
    st.wait();
  });
}

}  // namespace nn
}  // namespace singa
