#include "matmul_dnnl.hpp"

#include <dnnl_threads.hpp>
#include <line_aligned.hpp>
#include <vec_math.hpp>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace singa {
namespace ops {
namespace math {

using dnnl::memory;
using dt = memory::data_type;

namespace {

// The residual goes to oneDNN as a binary post-op, free in a BERT encoder's
// projections. The GELU does not: oneDNN's gelu_erf post-op made the
// 128x256x1024 product 0.037 ms slower at 1 thread, more than the separate
// Gelu pass cost (0.025 ms), so each part applies vec::gelu to its rows
// after the product, while they are in cache; a residual after a GELU then
// follows in the same pass.
bool residual_post_op(const MatMulEpilogue& e) { return e.residual && !e.gelu; }

// Rows [r0, r0 + rows) of the product.
struct Part {
  int64_t r0 = 0, rows = 0;
  dnnl::matmul mm;
  memory::desc src, dst, scratch;
  memory weights;
};

}  // namespace

struct DnnlMatMul::State {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  sdk::Shape a;
  int64_t R = 0, K = 0, N = 0;
  std::vector<float> bias;
  float alpha = 1.f;
  bool trans_b = false;  // the model's B is [N, K]
  MatMulEpilogue epilogue;
  memory bias_mem;
  // B packed in oneDNN's layout, shared by every plan whose parts take that
  // layout: one copy of the weights beside the model's own.
  mutable memory packed;
  mutable std::mutex mu;
  mutable std::map<int, std::vector<Part>> plans;  // by thread count, made on first use
};

namespace {

// The part's primitive, with the State's packed B when its layout is the
// same, else B (the model's [K, N] constant) packed for it. Throws
// dnnl::error without brgemm code.
Part make_part(const DnnlMatMul::State& s, int64_t r0, int64_t rows, const float* b) {
  Part p;
  p.r0 = r0, p.rows = rows;
  p.src = memory::desc({rows, s.K}, dt::f32, memory::format_tag::ab);
  p.dst = memory::desc({rows, s.N}, dt::f32, memory::format_tag::ab);
  const memory::desc any({s.K, s.N}, dt::f32, memory::format_tag::any);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // see run()
  if (s.alpha != 1.f) attr.set_output_scales(0, {s.alpha});
  if (residual_post_op(s.epilogue)) {
    dnnl::post_ops po;
    po.append_binary(dnnl::algorithm::binary_add, p.dst);
    attr.set_post_ops(po);
  }
  const dnnl::matmul::desc d =
      s.bias.empty() ? dnnl::matmul::desc(p.src, any, p.dst)
                     : dnnl::matmul::desc(p.src, any, memory::desc({1, s.N}, dt::f32, memory::format_tag::ab), p.dst);
  dnnl::matmul::primitive_desc pd(d, attr, s.eng);
  if (std::string(pd.impl_info_str()).rfind("brg", 0) != 0)
    throw dnnl::error(dnnl_unimplemented, "no brgemm code for the product");
  p.mm = dnnl::matmul(pd);
  p.scratch = pd.scratchpad_desc();
  if (s.packed && s.packed.get_desc() == pd.weights_desc()) {
    p.weights = s.packed;
    return p;
  }
  memory user({{s.K, s.N}, dt::f32, s.trans_b ? memory::format_tag::ba : memory::format_tag::ab}, s.eng,
              const_cast<float*>(b));
  p.weights = memory(pd.weights_desc(), s.eng);
  dnnl::stream st(s.eng);
  dnnl::reorder(user, p.weights).execute(st, user, p.weights);
  st.wait();
  if (!s.packed) s.packed = p.weights;
  return p;
}

std::vector<Part> make_plan(const DnnlMatMul::State& s, int threads, const float* b) {
  // Parts of rows: splitting the columns instead (each thread reading half
  // of B) needs a strided destination, for which oneDNN 2.6 has no brgemm
  // code.
  const int64_t n = std::clamp<int64_t>(threads, 1, s.R);
  std::vector<Part> parts;
  for (int64_t p = 0; p < n; ++p) {
    const int64_t r0 = s.R * p / n, r1 = s.R * (p + 1) / n;
    parts.push_back(make_part(s, r0, r1 - r0, b));
  }
  return parts;
}

}  // namespace

void epilogue_pass(bool gelu, float* y, const float* z, int64_t n) {
  if (gelu) vec::gelu(y, y, n);
  if (z)
    for (int64_t i = 0; i < n; ++i) y[i] += z[i];
}

DnnlMatMul::~DnnlMatMul() = default;

const sdk::Shape& DnnlMatMul::a_shape() const { return s_->a; }

std::unique_ptr<DnnlMatMul> DnnlMatMul::plan(const sdk::Shape& a, int64_t N, const float* b, const float* bias,
                                             float alpha, MatMulEpilogue epilogue, bool trans_b) {
  if (a.size() < 2 || N <= 0) return nullptr;
  int64_t R = 1;
  for (size_t d = 0; d + 1 < a.size(); ++d) R *= a[d];
  const int64_t K = a.back();
  if (R <= 0 || K <= 0) return nullptr;
  std::unique_ptr<DnnlMatMul> m(new DnnlMatMul());
  m->s_ = std::make_unique<State>();
  State& s = *m->s_;
  s.a = a, s.R = R, s.K = K, s.N = N, s.alpha = alpha, s.epilogue = epilogue, s.trans_b = trans_b;
  if (bias) {
    s.bias.assign(bias, bias + N);
    s.bias_mem = memory({{1, N}, dt::f32, memory::format_tag::ab}, s.eng, s.bias.data());
  }
  dnnl_single_thread();
  try {
    s.plans.emplace(1, make_plan(s, 1, b));
  } catch (const dnnl::error&) {
    return nullptr;
  }
  return m;
}

void DnnlMatMul::run(const sdk::Context& ctx, const float* a, const float* b, float* y, const float* z) const {
  const State& s = *s_;
  const std::vector<Part>* parts;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    const int threads = std::max(1, ctx.num_threads());
    auto it = s.plans.find(threads);
    if (it == s.plans.end()) {
      dnnl_single_thread();
      try {
        it = s.plans.emplace(threads, make_plan(s, threads, b)).first;
      } catch (const dnnl::error&) {
        it = s.plans.find(1);  // planned at create time
      }
    }
    parts = &it->second;
  }
  ctx.parallel_for(int64_t(parts->size()), 1, [&](int64_t t0, int64_t t1) {
    dnnl_single_thread();
    dnnl::stream st(s.eng);
    // oneDNN's own scratchpad is one per process unless it was built for
    // concurrent execution, so each thread hands its parts its own.
    thread_local std::vector<float> pad;
    for (int64_t t = t0; t < t1; ++t) {
      const Part& p = (*parts)[size_t(t)];
      memory sp(p.scratch, s.eng, fast::line_aligned(pad, (p.scratch.get_size() + 3) / 4));
      const int64_t off = p.r0 * s.N;  // of the part's first element in Y and Z
      memory src(p.src, s.eng, const_cast<float*>(a) + p.r0 * s.K), dst(p.dst, s.eng, y + off);
      std::unordered_map<int, memory> args{
          {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, p.weights}, {DNNL_ARG_DST, dst}, {DNNL_ARG_SCRATCHPAD, sp}};
      if (!s.bias.empty()) args.emplace(DNNL_ARG_BIAS, s.bias_mem);
      if (residual_post_op(s.epilogue))
        args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1,
                     memory(p.dst, s.eng, const_cast<float*>(z) + off));
      p.mm.execute(st, args);
      if (s.epilogue.gelu) {
        st.wait();
        epilogue_pass(true, y + off, s.epilogue.residual ? z + off : nullptr, p.rows * s.N);
      }
    }
    st.wait();
  });
}

}  // namespace math
}  // namespace ops
}  // namespace singa
