#include "pointwise_dnnl.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

#include "channels_last_f32.hpp"

#include <line_aligned.hpp>
#include <oneapi/dnnl/dnnl.hpp>
#include <sgemm.hpp>  // fast::avx512

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace singa {
namespace nn {

using dnnl::memory;
using dt = memory::data_type;

namespace {

// One slice of output channels [m0, m0 + mn): its own primitive and packed
// weights.
struct Part {
  int64_t m0 = 0, mn = 0;
  dnnl::matmul mm;
  memory::desc src, dst, scratch;
  memory weights;
};

// oneDNN single-threaded inside each call: the runtime's pool runs the parts.
void single_omp_thread() {
#ifdef _OPENMP
  omp_set_num_threads(1);
#endif
}

}  // namespace

struct DnnlPointwise::State {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  Shape x;
  int64_t N = 0, C = 0, M = 0, HW = 0;
  std::vector<float> bias;
  ops::FusedActivation act;
  mutable std::mutex mu;
  mutable std::map<int, std::vector<Part>> plans;  // by thread count, made on first use
};

namespace {

// The part computing Y^T[:, m0 : m0 + mn] = X^T W^T[:, m0 : m0 + mn] for one
// image: X^T is the image's NCHW planes read through strides, the weights
// are packed from W's rows [m0, m0 + mn). Throws dnnl::error when oneDNN
// has only its reference code.
Part make_part(const DnnlPointwise::State& s, int64_t m0, int64_t mn, const float* w) {
  Part p;
  p.m0 = m0, p.mn = mn;
  p.src = memory::desc({s.HW, s.C}, dt::f32, memory::dims{1, s.HW});
  p.dst = memory::desc({s.HW, mn}, dt::f32, memory::dims{mn, 1});
  const memory::desc any({s.C, mn}, dt::f32, memory::format_tag::any);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // see run()
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(p.src, any, p.dst), attr, s.eng);
  if (std::string(pd.impl_info_str()).rfind("brg", 0) != 0)
    throw dnnl::error(dnnl_unimplemented, "no brgemm code for the product");
  p.mm = dnnl::matmul(pd);
  p.scratch = pd.scratchpad_desc();
  // W^T's slice: element (c, m) of the [C, mn] matrix is w[(m0 + m) * C + c].
  const memory::desc user({s.C, mn}, dt::f32, memory::dims{1, s.C});
  memory wsrc(user, s.eng, const_cast<float*>(w) + m0 * s.C);
  p.weights = memory(pd.weights_desc(), s.eng);
  dnnl::stream st(s.eng);
  dnnl::reorder(wsrc, p.weights).execute(st, wsrc, p.weights);
  st.wait();
  return p;
}

// One slice of the output channels per thread, in multiples of 16 so that
// the transposing store runs whole blocks.
std::vector<Part> make_plan(const DnnlPointwise::State& s, int threads, const float* w) {
  const int64_t blocks = (s.M + 15) / 16, n = std::clamp<int64_t>(threads, 1, blocks);
  std::vector<Part> parts;
  for (int64_t p = 0; p < n; ++p) {
    const int64_t m0 = std::min(s.M, blocks * p / n * 16), m1 = std::min(s.M, blocks * (p + 1) / n * 16);
    if (m1 > m0) parts.push_back(make_part(s, m0, m1 - m0, w));
  }
  return parts;
}

}  // namespace

DnnlPointwise::~DnnlPointwise() = default;

const Shape& DnnlPointwise::input_shape() const { return s_->x; }

std::unique_ptr<DnnlPointwise> DnnlPointwise::plan(const Shape& x, int64_t M, const float* w, const float* bias,
                                                   const ops::FusedActivation& act) {
  if (!fast::avx512() || x.size() != 4 || M < 256) return nullptr;
  for (int64_t d : x)
    if (d <= 0) return nullptr;
  std::unique_ptr<DnnlPointwise> p(new DnnlPointwise());
  p->s_ = std::make_unique<State>();
  State& s = *p->s_;
  s.x = x;
  s.N = x[0], s.C = x[1], s.M = M, s.HW = x[2] * x[3];
  if (bias) s.bias.assign(bias, bias + M);
  s.act = act;
  single_omp_thread();
  // Only whether oneDNN has brgemm code for the whole product: the parts, and
  // the weights packed for them, are made on the first run at each thread
  // count (packing here too kept a second copy in 2-thread runs).
  try {
    const memory::desc src({s.HW, s.C}, dt::f32, memory::dims{1, s.HW}), dst({s.HW, M}, dt::f32, memory::dims{M, 1});
    dnnl::matmul::primitive_desc pd(
        dnnl::matmul::desc(src, memory::desc({s.C, M}, dt::f32, memory::format_tag::any), dst), s.eng);
    if (std::string(pd.impl_info_str()).rfind("brg", 0) != 0) return nullptr;
  } catch (const dnnl::error&) {
    return nullptr;
  }
  (void)w;
  return p;
}

void DnnlPointwise::run(const sdk::Context& ctx, const float* x, const float* w, float* y) const {
  const State& s = *s_;
  const std::vector<Part>* parts;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    const int threads = std::max(1, ctx.num_threads());
    auto it = s.plans.find(threads);
    if (it == s.plans.end()) {
      single_omp_thread();
      try {
        it = s.plans.emplace(threads, make_plan(s, threads, w)).first;
      } catch (const dnnl::error&) {
        it = s.plans.emplace(threads, make_plan(s, 1, w)).first;  // the whole product, which plan() checked
      }
    }
    parts = &it->second;
  }
  const float* bias = s.bias.empty() ? nullptr : s.bias.data();
  ctx.parallel_for(s.N * int64_t(parts->size()), 1, [&](int64_t t0, int64_t t1) {
    single_omp_thread();
    dnnl::stream st(s.eng);
    // oneDNN's own scratchpad is one per process unless it was built for
    // concurrent execution: two threads' parts then wrote over each other's
    // (a test failed 1 run in 6), so each thread hands its part its own.
    thread_local std::vector<float> scratch, pad;
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t n = t / int64_t(parts->size());
      const Part& p = (*parts)[size_t(t % int64_t(parts->size()))];
      float* yt = fast::line_aligned(scratch, size_t(s.HW * p.mn));
      memory src(p.src, s.eng, const_cast<float*>(x) + n * s.C * s.HW), dst(p.dst, s.eng, yt);
      memory sp(p.scratch, s.eng, fast::line_aligned(pad, (p.scratch.get_size() + 3) / 4));
      p.mm.execute(st, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, p.weights}, {DNNL_ARG_DST, dst},
                        {DNNL_ARG_SCRATCHPAD, sp}});
      st.wait();
      store_nchw(yt, s.HW, p.mn, bias ? bias + p.m0 : nullptr, s.act, y + (n * s.M + p.m0) * s.HW, s.HW);
    }
  });
}

}  // namespace nn
}  // namespace singa
