// Bf16MatMul (matmul_bf16.hpp). B is rounded to bfloat16 once, at create,
// and packed by oneDNN into the layout its primitive picks (one packed copy
// per distinct layout, shared by every primitive). At each run the rows of A
// split into one part per thread; a part rounds its rows of A to bfloat16
// (when A is float) and runs the primitive made for its row count, cached
// per count, with oneDNN single-threaded inside (dnnl_threads.hpp).
#include "matmul_bf16.hpp"

#include <bf16_compute.hpp>
#include <bf16_dnnl.hpp>
#include <broadcast.hpp>
#include <cpu_domain.hpp>
#include <dnnl_threads.hpp>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace singa {
namespace ops {
namespace math {

int register_bf16_matmul_pass(sdk::Registrar& reg);  // passes/bf16_matmuls.cpp

namespace {

using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;

// Rows a part takes at least: fewer would spend more on the call than on the product.
constexpr int64_t kRowsPerPart = 16;
// Primitives cached per row count (dynamic shapes): past this many the cache starts over.
constexpr size_t kMaxPrimitives = 64;

float read_float(const sdk::Tensor& t, int64_t i) {
  return t.dtype() == SINGA_ONNX_BFLOAT16 ? float(t.data<sdk::bfloat16>()[i]) : t.data<float>()[i];
}

class Bf16MatMul {
 public:
  explicit Bf16MatMul(const sdk::Node& node) {
    if (!cpu_has_bf16())
      throw sdk::Error(SINGA_UNIMPLEMENTED, "a Bf16MatMul needs a CPU with AVX512-BF16 (the pass makes none elsewhere)");
    const float alpha = node.attr_float("alpha", 1.f);
    const bool trans_b = node.attr_int("transB", 0) != 0;
    if (node.attr_int("transA", 0) != 0) node.fail("a Bf16MatMul takes no transposed A");
    const std::string act = node.attr_string("activation", "");
    gelu_ = act == "Gelu";
    if (!gelu_) act_ = FusedActivation(node);
    const sdk::Tensor b = node.constant(1);
    if (!b.present() || b.ndim() != 2 || (b.dtype() != SINGA_ONNX_FLOAT && b.dtype() != SINGA_ONNX_BFLOAT16))
      node.fail("B must be a float or bfloat16 constant of rank 2");
    // A's type is read at each run: shape inference may not know it (the
    // values a pass made), and the primitives are cached per type.
    const int32_t at = node.input_info(0).onnx_dtype;
    if (at != 0 && at != SINGA_ONNX_FLOAT && at != SINGA_ONNX_BFLOAT16) node.fail("A must be float or bfloat16");
    const Shape bs = b.shape();
    K_ = trans_b ? bs[1] : bs[0];
    N_ = trans_b ? bs[0] : bs[1];
    // B as [K, N] float, times alpha (folded here, before the rounding).
    std::vector<float> wk(size_t(K_ * N_));
    for (int64_t k = 0; k < K_; ++k)
      for (int64_t n = 0; n < N_; ++n) wk[size_t(k * N_ + n)] = alpha * read_float(b, trans_b ? n * K_ + k : k * N_ + n);
    b_.resize(wk.size());
    for (size_t i = 0; i < wk.size(); ++i) b_[i] = bf16_bits(wk[i]);
    if (node.has_input(2)) {
      const sdk::Tensor c = node.constant(2);
      if (!c.present() || c.numel() != N_)
        node.fail("the bias must be a constant of " + std::to_string(N_) + " values");
      if (node.attr_float("beta", 1.f) != 1.f) node.fail("a Bf16MatMul's bias takes beta 1");
      bias_.resize(size_t(N_));
      for (int64_t n = 0; n < N_; ++n) bias_[size_t(n)] = read_float(c, n);
    }
    summand_ = node.has_input(3);
    dnnl::post_ops po;
    if (!gelu_ && !append_activation(po, act_)) node.fail("oneDNN cannot apply the fused activation");
  }

  void compute(sdk::Context& ctx) const {
    const sdk::Tensor a = ctx.input(0);
    sdk::check(a.present() && a.ndim() >= 2, "A must have rank 2 or more");
    const int32_t at = a.dtype();
    SINGA_CHECK((at == SINGA_ONNX_FLOAT || at == SINGA_ONNX_BFLOAT16) && a.shape().back() == K_,
                "A is " + shape_str(a.shape()) + " " + sdk::dtype_name(at) + "; expected float or bfloat16 with " +
                    std::to_string(K_) + " columns");
    Shape ys = a.shape();
    ys.back() = N_;
    const int64_t rows = a.numel() / K_;
    sdk::Tensor z = summand_ ? ctx.input(3) : sdk::Tensor();
    if (summand_)
      SINGA_CHECK(z.present() && z.shape() == ys && z.dtype() == at,
                  "Z must be " + std::string(sdk::dtype_name(at)) + " " + shape_str(ys));
    sdk::Tensor y = ctx.output(0, ys, at);
    if (rows == 0) return;
    const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(ctx.num_threads(), rows / kRowsPerPart));
    const bool round = at == SINGA_ONNX_FLOAT;
    uint16_t* a16 = round ? static_cast<uint16_t*>(ctx.workspace(size_t(rows * K_) * 2)) : nullptr;
    const size_t elem = round ? 4 : 2;
    // The primitives and packed B the parts need, made before they start.
    std::vector<std::shared_ptr<const Prim>> prims(static_cast<size_t>(parts));
    for (int64_t p = 0; p < parts; ++p) prims[size_t(p)] = prim_for(rows * (p + 1) / parts - rows * p / parts, round);
    const auto& eng = bf16_engine();
    ctx.parallel_for(parts, 1, [&](int64_t p0, int64_t p1) {
      dnnl_single_thread();
      dnnl::stream st(eng);
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t r0 = rows * p / parts, r1 = rows * (p + 1) / parts;
        const Prim& pr = *prims[size_t(p)];
        void* src = round ? static_cast<void*>(a16 + r0 * K_)
                          : static_cast<void*>(static_cast<char*>(a.data_ptr()) + size_t(r0 * K_) * elem);
        if (round) round_to_bf16(a.data<float>() + r0 * K_, a16 + r0 * K_, (r1 - r0) * K_);
        char* yp = static_cast<char*>(y.data_ptr()) + size_t(r0 * N_) * elem;
        if (summand_ && z.data_ptr() != y.data_ptr())
          std::memcpy(yp, static_cast<const char*>(z.data_ptr()) + size_t(r0 * N_) * elem, size_t((r1 - r0) * N_) * elem);
        std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, memory(pr.src, eng, src)},
                                                {DNNL_ARG_WEIGHTS, *pr.weights},
                                                {DNNL_ARG_DST, memory(pr.dst, eng, yp)}};
        if (!bias_.empty()) args[DNNL_ARG_BIAS] = memory(pr.bias, eng, const_cast<float*>(bias_.data()));
        pr.mm.execute(st, args);
      }
      st.wait();
    });
  }

 private:
  struct Prim {
    dnnl::matmul mm;
    memory::desc src, dst, bias;
    const memory* weights = nullptr;
  };

  // The primitive for `m` rows writing float (else bfloat16), made on first use.
  std::shared_ptr<const Prim> prim_for(int64_t m, bool f32) const {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t key = m * 2 + (f32 ? 1 : 0);
    auto it = prims_.find(key);
    if (it != prims_.end()) return it->second;
    if (prims_.size() >= kMaxPrimitives) prims_.clear();  // packed B stays: it depends on the layout only
    const auto& eng = bf16_engine();
    auto pr = std::make_shared<Prim>();
    pr->src = memory::desc({m, K_}, dt::bf16, tag::ab);
    pr->dst = memory::desc({m, N_}, f32 ? dt::f32 : dt::bf16, tag::ab);
    pr->bias = memory::desc({1, N_}, dt::f32, tag::ab);
    dnnl::post_ops po;
    if (gelu_)
      po.append_eltwise(1.f, dnnl::algorithm::eltwise_gelu_erf, 0.f, 0.f);
    else
      append_activation(po, act_);
    if (summand_) po.append_sum(1.f);
    dnnl::primitive_attr attr;
    attr.set_post_ops(po);
    const dnnl::matmul::desc d(pr->src, memory::desc({K_, N_}, dt::bf16, tag::any),
                               bias_.empty() ? memory::desc() : pr->bias, pr->dst);
    const dnnl::matmul::primitive_desc pd(d, attr, eng);
    pr->mm = dnnl::matmul(pd);
    pr->weights = &packed(pd.weights_desc());
    prims_.emplace(key, pr);
    return pr;
  }

  // B in `layout`, packed once (under mu_).
  const memory& packed(const memory::desc& layout) const {
    for (const auto& [d, m] : packed_)
      if (d == layout) return *m;
    const auto& eng = bf16_engine();
    dnnl_single_thread();
    dnnl::stream st(eng);
    const memory::desc plain({K_, N_}, dt::bf16, tag::ab);
    auto m = std::make_unique<memory>(layout, eng);
    memory src(plain, eng, const_cast<uint16_t*>(b_.data()));
    dnnl::reorder(src, *m).execute(st, src, *m);
    st.wait();
    packed_.emplace_back(layout, std::move(m));
    return *packed_.back().second;
  }

  int64_t K_ = 0, N_ = 0;
  bool gelu_ = false, summand_ = false;
  FusedActivation act_;
  std::vector<uint16_t> b_;  // alpha B in bfloat16, [K, N]
  std::vector<float> bias_;
  mutable std::mutex mu_;
  mutable std::map<int64_t, std::shared_ptr<const Prim>> prims_;
  mutable std::vector<std::pair<memory::desc, std::unique_ptr<memory>>> packed_;
};

}  // namespace

void register_bf16_matmul(sdk::Registrar& reg) {
  const uint64_t types = sdk::bit(SINGA_ONNX_FLOAT) | sdk::bit(SINGA_ONNX_BFLOAT16);
  reg.kernel<Bf16MatMul>(kCpuDomain, kBf16MatMulOp, 1, 1, "cpu", {{"T", 0, types}});
  register_bf16_matmul_pass(reg);
}

}  // namespace math
}  // namespace ops
}  // namespace singa
