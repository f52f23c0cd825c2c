#include "conv_dnnl.hpp"

#include <cblas.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <atomic>
#include <thread>

namespace singa {
namespace nn {

using dnnl::memory;

namespace {

// oneDNN runs single-threaded inside each call: its OpenMP workers would spin
// between calls and fight the runtime's own pool (and other processes) for
// the cores, which on a busy 2-core machine costs several times the
// convolution. Parallelism comes from running parts on the pool instead.
void single_omp_thread() {
#ifdef _OPENMP
  omp_set_num_threads(1);
#endif
}

}  // namespace

// One slice of the output channels (of the groups for grouped convs).
struct DnnlConvPart {
  dnnl::convolution_forward conv;
  dnnl::convolution_forward::primitive_desc pd;
  memory::desc user_src, user_dst;  // strided views into the NCHW tensors
  int64_t src_offset = 0, dst_offset = 0;  // elements
  memory weights, bias;
  bool reorder_src = false, reorder_dst = false;
  dnnl::reorder src_in, dst_out;
  size_t src_bytes = 0, dst_bytes = 0, scratch_bytes = 0, ws_offset = 0;
};

struct DnnlConv::State {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  std::vector<DnnlConvPart> parts;
  size_t ws_bytes = 0;
};

DnnlConv::~DnnlConv() = default;

void use_context_threads(const sdk::Context& ctx) {
  static std::atomic<int> current{0};
  const int n = std::max(1, ctx.num_threads());
  if (current.exchange(n) != n) openblas_set_num_threads(n);
}

std::unique_ptr<DnnlConv> DnnlConv::plan(const Shape& x, const sdk::Tensor& w, const sdk::Tensor& b, const Geometry& g,
                                         int64_t group, const FusedActivation& act) {
  if (g.rank != 2 || x.size() != 4 || !w.present() || w.dtype() != SINGA_ONNX_FLOAT || w.ndim() != 4) return nullptr;
  if (b.present() && (b.dtype() != SINGA_ONNX_FLOAT || b.numel() != w.dim(0))) return nullptr;
  for (int64_t d : x)
    if (d <= 0) return nullptr;
  const int64_t N = x[0], C = x[1], H = x[2], W = x[3], M = w.dim(0), Cg = w.dim(1), KH = w.dim(2), KW = w.dim(3);
  const int64_t OH = g.out[1], OW = g.out[2];
  if (Cg * group != C || M % group != 0 || OH <= 0 || OW <= 0) return nullptr;
  const int64_t Mg = M / group;
  single_omp_thread();
  try {
    std::unique_ptr<DnnlConv> c(new DnnlConv());
    c->s_ = std::make_unique<State>();
    State& s = *c->s_;
    c->x_ = x;
    c->y_ = Shape{N, M, OH, OW};
    // Slices: output channels for plain convs (blocks of 16 keep oneDNN's
    // vector layout whole), groups for grouped ones.
    const int64_t hw = std::max<int64_t>(1, std::thread::hardware_concurrency());
    const int64_t units = group == 1 ? std::max<int64_t>(1, M / 16) : group;
    const int64_t nparts = std::max<int64_t>(1, std::min(hw, units));
    const memory::dims strides{g.s[1], g.s[2]}, dil{g.d[1] - 1, g.d[2] - 1}, pl{g.pb[1], g.pb[2]}, pr{g.pe[1], g.pe[2]};
    using tag = memory::format_tag;
    using dt = memory::data_type;
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::post_ops po;
    switch (act.kind) {
      case FusedActivation::kRelu: po.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f); break;
      case FusedActivation::kLeakyRelu: po.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, act.alpha, 0.f); break;
      case FusedActivation::kClip: po.append_eltwise(1.f, dnnl::algorithm::eltwise_clip, act.lo, act.hi); break;
      default: break;
    }
    attr.set_post_ops(po);
    dnnl::stream st(s.eng);
    const memory::dims src_strides{C * H * W, H * W, W, 1}, dst_strides{M * OH * OW, OH * OW, OW, 1};
    auto align = [](size_t n) { return (n + 63) & ~size_t(63); };
    for (int64_t p = 0; p < nparts; ++p) {
      const int64_t u0 = units * p / nparts, u1 = units * (p + 1) / nparts;
      if (u1 <= u0) continue;
      // Channels this part reads and writes, and its group count.
      int64_t m0, m1, c0, c1, groups;
      if (group == 1) {
        m0 = M * u0 / units;
        m1 = M * u1 / units;
        c0 = 0, c1 = C, groups = 1;
      } else {
        m0 = u0 * Mg, m1 = u1 * Mg, c0 = u0 * Cg, c1 = u1 * Cg, groups = u1 - u0;
      }
      const int64_t pm = m1 - m0, pc = c1 - c0;
      DnnlConvPart part;
      const memory::dims src_dims{N, pc, H, W}, dst_dims{N, pm, OH, OW};
      const memory::dims w_dims = groups == 1 && group == 1 ? memory::dims{pm, Cg, KH, KW}
                                                            : memory::dims{groups, Mg, Cg, KH, KW};
      part.user_src = memory::desc(src_dims, dt::f32, src_strides);
      part.user_dst = memory::desc(dst_dims, dt::f32, dst_strides);
      part.src_offset = c0 * H * W;
      part.dst_offset = m0 * OH * OW;
      memory::desc bias_md({pm}, dt::f32, tag::x);
      dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                        memory::desc(src_dims, dt::f32, tag::any), memory::desc(w_dims, dt::f32, tag::any),
                                        bias_md, memory::desc(dst_dims, dt::f32, tag::any), strides, dil, pl, pr);
      part.pd = dnnl::convolution_forward::primitive_desc(d, attr, s.eng);
      part.conv = dnnl::convolution_forward(part.pd);
      // Weights: this part's rows of OIHW (GOIHW for groups) -> oneDNN's layout, once.
      memory::desc user_w(w_dims, dt::f32, w_dims.size() == 4 ? tag::oihw : tag::goihw);
      memory wsrc(user_w, s.eng, const_cast<float*>(w.data<float>()) + m0 * Cg * KH * KW);
      part.weights = memory(part.pd.weights_desc(), s.eng);
      dnnl::reorder(wsrc, part.weights).execute(st, wsrc, part.weights);
      part.bias = memory(bias_md, s.eng);
      float* bp = static_cast<float*>(part.bias.get_data_handle());
      for (int64_t m = 0; m < pm; ++m) bp[m] = b.present() ? b.data<float>()[m0 + m] : 0.f;
      part.reorder_src = part.pd.src_desc() != part.user_src;
      part.reorder_dst = part.pd.dst_desc() != part.user_dst;
      if (part.reorder_src)
        part.src_in = dnnl::reorder(dnnl::reorder::primitive_desc(s.eng, part.user_src, s.eng, part.pd.src_desc()));
      if (part.reorder_dst)
        part.dst_out = dnnl::reorder(dnnl::reorder::primitive_desc(s.eng, part.pd.dst_desc(), s.eng, part.user_dst));
      part.src_bytes = part.reorder_src ? align(part.pd.src_desc().get_size()) : 0;
      part.dst_bytes = part.reorder_dst ? align(part.pd.dst_desc().get_size()) : 0;
      part.scratch_bytes = align(part.pd.scratchpad_desc().get_size());
      part.ws_offset = s.ws_bytes;
      s.ws_bytes += part.src_bytes + part.dst_bytes + part.scratch_bytes;
      s.parts.push_back(std::move(part));
    }
    st.wait();
    return c;
  } catch (const dnnl::error&) {
    return nullptr;  // the im2col path takes it
  }
}

void DnnlConv::run(const sdk::Context& ctx, const float* x, float* y) const {
  const State& s = *s_;
  // Per-call buffers from the context keep concurrent runs apart.
  char* ws = static_cast<char*>(ctx.workspace(s.ws_bytes + 64));
  ws = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(ws) + 63) & ~uintptr_t(63));
  ctx.parallel_for(int64_t(s.parts.size()), 1, [&](int64_t pb, int64_t pe) {
    single_omp_thread();
    dnnl::stream st(s.eng);
    for (int64_t i = pb; i < pe; ++i) {
      const DnnlConvPart& p = s.parts[size_t(i)];
      char* base = ws + p.ws_offset;
      memory usrc(p.user_src, s.eng, const_cast<float*>(x) + p.src_offset), udst(p.user_dst, s.eng, y + p.dst_offset);
      memory src = usrc, dst = udst;
      if (p.reorder_src) {
        src = memory(p.pd.src_desc(), s.eng, base);
        p.src_in.execute(st, usrc, src);
      }
      if (p.reorder_dst) dst = memory(p.pd.dst_desc(), s.eng, base + p.src_bytes);
      memory scratch(p.pd.scratchpad_desc(), s.eng, base + p.src_bytes + p.dst_bytes);
      p.conv.execute(st, {{DNNL_ARG_SRC, src},
                          {DNNL_ARG_WEIGHTS, p.weights},
                          {DNNL_ARG_BIAS, p.bias},
                          {DNNL_ARG_DST, dst},
                          {DNNL_ARG_SCRATCHPAD, scratch}});
      if (p.reorder_dst) p.dst_out.execute(st, dst, udst);
    }
    st.wait();
  });
}

}  // namespace nn
}  // namespace singa
