#include "matmul_dnnl.hpp"

#include <dnnl_threads.hpp>
#include <line_aligned.hpp>
#include <vec_math.hpp>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cstring>
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
// follows in the same pass. The other activations (SiLU, ...) go the same way.
bool residual_post_op(const MatMulEpilogue& e) { return e.residual && !e.activates(); }

// Rows [r0, r0 + rows) and columns [c0, c0 + cols) of the product. A part
// of some of the columns writes them densely into a buffer of its own and
// then into Y's rows with the epilogue: oneDNN 2.6's brgemm code wants a
// dense destination.
struct Part {
  int64_t r0 = 0, rows = 0, c0 = 0, cols = 0;
  bool some_columns = false;
  dnnl::matmul mm;
  memory::desc src, dst, scratch;
  memory weights, bias;
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
  // B packed in oneDNN's layout, shared by every plan whose parts take that
  // layout: one copy of the weights beside the model's own.
  mutable memory packed;
  mutable std::mutex mu;
  mutable std::map<int, std::vector<Part>> plans;  // by thread count, made on first use
};

namespace {

// A column part's packed B is often a contiguous run of the whole product's
// (oneDNN's layouts block the columns outermost): where its bytes are
// found there, the part reads them in place and drops its own copy, so that
// the column plan adds no second copy of the weights.
void share_packed(const DnnlMatMul::State& s, Part& p) {
  const size_t bytes = p.weights.get_desc().get_size(), whole = s.packed.get_desc().get_size();
  if (bytes == 0 || bytes % size_t(p.cols) != 0) return;
  const size_t at = size_t(p.c0) * (bytes / size_t(p.cols));
  const char* packed = static_cast<const char*>(s.packed.get_data_handle());
  if (at + bytes > whole || std::memcmp(packed + at, p.weights.get_data_handle(), bytes) != 0) return;
  p.weights = memory(p.weights.get_desc(), s.eng, const_cast<char*>(packed) + at);
}

// The part's primitive, with the State's packed B when its layout is the
// same, else B (the model's [K, N] constant) packed for it. Throws
// dnnl::error without brgemm code.
Part make_part(const DnnlMatMul::State& s, int64_t r0, int64_t rows, const float* b, int64_t c0 = 0,
               int64_t cols = -1) {
  Part p;
  if (cols < 0) cols = s.N;
  p.r0 = r0, p.rows = rows, p.c0 = c0, p.cols = cols, p.some_columns = cols < s.N;
  p.src = memory::desc({rows, s.K}, dt::f32, memory::format_tag::ab);
  p.dst = memory::desc({rows, cols}, dt::f32, memory::format_tag::ab);
  const memory::desc any({s.K, cols}, dt::f32, memory::format_tag::any);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // see run()
  if (s.alpha != 1.f) attr.set_output_scales(0, {s.alpha});
  if (residual_post_op(s.epilogue) && !p.some_columns) {
    dnnl::post_ops po;
    po.append_binary(dnnl::algorithm::binary_add, p.dst);
    attr.set_post_ops(po);
  }
  const memory::desc bias_md({1, cols}, dt::f32, memory::format_tag::ab);
  const dnnl::matmul::desc d =
      s.bias.empty() ? dnnl::matmul::desc(p.src, any, p.dst) : dnnl::matmul::desc(p.src, any, bias_md, p.dst);
  if (!s.bias.empty()) p.bias = memory(bias_md, s.eng, const_cast<float*>(s.bias.data()) + c0);
  dnnl::matmul::primitive_desc pd(d, attr, s.eng);
  if (std::string(pd.impl_info_str()).rfind("brg", 0) != 0)
    throw dnnl::error(dnnl_unimplemented, "no brgemm code for the product");
  p.mm = dnnl::matmul(pd);
  p.scratch = pd.scratchpad_desc();
  if (!p.some_columns && s.packed && s.packed.get_desc() == pd.weights_desc()) {
    p.weights = s.packed;
    return p;
  }
  // B's columns [c0, c0 + cols): [K, N] row-major, or [N, K] when trans_b.
  const memory::desc user_md({s.K, cols}, dt::f32, s.trans_b ? memory::dims{1, s.K} : memory::dims{s.N, 1});
  memory user(user_md, s.eng, const_cast<float*>(b) + (s.trans_b ? c0 * s.K : c0));
  p.weights = memory(pd.weights_desc(), s.eng);
  dnnl::stream st(s.eng);
  dnnl::reorder(user, p.weights).execute(st, user, p.weights);
  st.wait();
  if (!s.packed && !p.some_columns) s.packed = p.weights;
  if (p.some_columns && s.packed) share_packed(s, p);
  return p;
}

// Column parts when B weighs more than twice A and Y together (a short
// sequence's projections: 32 x 256 by 256 x 1024): row parts would each
// stream all of B, where a part of the columns reads only its own share.
// Below that the copy of each part's columns into Y's rows costs what the
// split saves (128 x 256 by 256 x 1024 measured the same both ways). Each
// part takes a multiple of 64 columns, 64 at least.
int64_t column_parts(const DnnlMatMul::State& s, int threads) {
  if (threads < 2 || s.K * s.N <= 2 * s.R * (s.K + s.N)) return 0;
  return std::min<int64_t>(threads, s.N / 64);
}

std::vector<Part> make_plan(const DnnlMatMul::State& s, int threads, const float* b) {
  // Parts of columns where B is the heavy operand (column_parts), else of rows.
  std::vector<Part> parts;
  if (const int64_t nc = column_parts(s, threads); nc >= 2) {
    const int64_t panels = s.N / 64;
    for (int64_t p = 0; p < nc; ++p) {
      const int64_t c0 = panels * p / nc * 64, c1 = p + 1 == nc ? s.N : panels * (p + 1) / nc * 64;
      parts.push_back(make_part(s, 0, s.R, b, c0, c1 - c0));
    }
    return parts;
  }
  const int64_t n = std::clamp<int64_t>(threads, 1, s.R);
  for (int64_t p = 0; p < n; ++p) {
    const int64_t r0 = s.R * p / n, r1 = s.R * (p + 1) / n;
    parts.push_back(make_part(s, r0, r1 - r0, b));
  }
  return parts;
}

}  // namespace

void epilogue_pass(const MatMulEpilogue& e, float* y, const float* z, int64_t n) {
  if (e.gelu)
    vec::gelu(y, y, n);
  else if (e.act.kind != FusedActivation::kNone)
    e.act.apply_rows(y, 1, n, n, nullptr);
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
  if (bias) s.bias.assign(bias, bias + N);  // the parts' bias memories point into it
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
    thread_local std::vector<float> pad, cols;
    for (int64_t t = t0; t < t1; ++t) {
      const Part& p = (*parts)[size_t(t)];
      memory sp(p.scratch, s.eng, fast::line_aligned(pad, (p.scratch.get_size() + 3) / 4));
      const int64_t off = p.r0 * s.N;  // of the part's first element in Y and Z
      float* out = p.some_columns ? fast::line_aligned(cols, size_t(p.rows * p.cols)) : y + off;
      memory src(p.src, s.eng, const_cast<float*>(a) + p.r0 * s.K), dst(p.dst, s.eng, out);
      std::unordered_map<int, memory> args{
          {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, p.weights}, {DNNL_ARG_DST, dst}, {DNNL_ARG_SCRATCHPAD, sp}};
      if (!s.bias.empty()) args.emplace(DNNL_ARG_BIAS, p.bias);
      if (p.some_columns) {
        p.mm.execute(st, args);
        st.wait();
        for (int64_t r = 0; r < p.rows; ++r) {
          float* row = out + r * p.cols;
          float* yr = y + off + r * s.N + p.c0;
          epilogue_pass(s.epilogue, row, nullptr, p.cols);
          if (s.epilogue.residual) {
            const float* zr = z + off + r * s.N + p.c0;
            for (int64_t j = 0; j < p.cols; ++j) yr[j] = row[j] + zr[j];
          } else {
            std::copy(row, row + p.cols, yr);
          }
        }
        continue;
      }
      if (residual_post_op(s.epilogue))
        args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1,
                     memory(p.dst, s.eng, const_cast<float*>(z) + off));
      p.mm.execute(st, args);
      if (s.epilogue.activates()) {
        st.wait();
        epilogue_pass(s.epilogue, y + off, s.epilogue.residual ? z + off : nullptr, p.rows * s.N);
      }
    }
    st.wait();
  });
}

}  // namespace math
}  // namespace ops
}  // namespace singa
