// Attention (domain ai.singa.cpu, opset 1; also ai.singa, its domain before):
// scaled dot-product attention over heads that sit side by side in the rows
// of their tensors, which passes/fuse_attention.cpp (cpu.attention) makes
// from MatMul -> Softmax -> MatMul and the view ops around them:
//
//   Attention(Q, K, V) -> Y
//     Q [B, Sq, Wq], K [B, Sk, Wk], V [B, Sk, Wv]; head h of each is the D
//     columns from `<x>_offset + h * D` of every row (Q, K and V may be one
//     packed tensor with three offsets);
//     Y [B, Sq, H * D], head h in columns h * D ..: softmax(scale Q_h K_h^T) V_h.
//   Attributes: num_heads (H), head_size (D), scale (default 1), q_offset,
//   k_offset, v_offset (default 0).
//
// Each task takes a block of one head's query rows: its scores (rows x Sk)
// stay in a per-task buffer that fits in the core's L2, exp'd in place; the
// rows are normalised after the product with V, on D columns rather than Sk.
#include "conv_relu_pool.hpp"  // kFusedDomain
#include "dnnl_sgemm.hpp"      // check_sgemm, dnnl_single_thread
#include "register.hpp"
#include "vec_math.hpp"

#include <cpu_domain.hpp>
#include <exp_avx512.hpp>
#include <sgemm.hpp>  // fast::avx512

#include <algorithm>
#include <string>
#include <vector>

namespace singa {
namespace nn {
namespace {

// Scores of one task, at most this many floats (256 KiB): a long key
// sequence gets smaller row blocks.
constexpr int64_t kScoreFloats = int64_t(1) << 16;

// x[i] = e^(x[i] - max(x)); returns the sum. A NaN anywhere makes the sum
// NaN, so the whole row comes out NaN, as Softmax's does.
SINGA_VEC_CLONES float exp_shifted_any(float* x, int64_t n) {
  float lanes[16];
  for (float& l : lanes) l = x[0];
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int l = 0; l < 16; ++l) lanes[l] = x[i + l] > lanes[l] ? x[i + l] : lanes[l];
  float mx = lanes[0];
  for (int l = 1; l < 16; ++l) mx = lanes[l] > mx ? lanes[l] : mx;
  for (; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
  for (i = 0; i < n; ++i) x[i] = vec::exp_one(x[i] - mx);
  return vec::lane_sum(x, n);
}

#ifdef SINGA_AVX512_BEGIN
SINGA_AVX512_BEGIN
// exp_shifted_any with exp_avx512.hpp's exp, and the exp and the sum in one
// pass: 2.9 against 7.1 us for a head's 128 x 128 scores.
float exp_shifted_avx512(float* x, int64_t n) {
  const int64_t full = n / 16 * 16;
  const __mmask16 tail = __mmask16((1u << (n - full)) - 1);
  // max_ps(m, v) gives v when either is NaN: a NaN may or may not win the
  // maximum, and either way its exp makes the sum NaN.
  __m512 m = _mm512_set1_ps(x[0]);
  for (int64_t i = 0; i < full; i += 16) m = _mm512_maskz_max_ps(vec::kAllLanes, m, _mm512_loadu_ps(x + i));
  if (tail) m = _mm512_mask_max_ps(m, tail, m, _mm512_maskz_loadu_ps(tail, x + full));
  const __m512 mx = _mm512_set1_ps(vec::lane_max16(m));
  __m512 s = _mm512_setzero_ps();
  for (int64_t i = 0; i < full; i += 16) {
    const __m512 e = vec::exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), mx));
    _mm512_storeu_ps(x + i, e);
    s = _mm512_add_ps(s, e);
  }
  if (tail) {
    const __m512 e = vec::exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, x + full), mx));
    _mm512_mask_storeu_ps(x + full, tail, e);
    s = _mm512_mask_add_ps(s, tail, s, e);
  }
  return vec::lane_sum16(s);
}
SINGA_AVX512_END
#endif

float exp_shifted(float* x, int64_t n) {
#ifdef SINGA_AVX512_BEGIN
  static const bool avx512 = fast::avx512();
  if (avx512) return exp_shifted_avx512(x, n);
#endif
  return exp_shifted_any(x, n);
}

SINGA_VEC_CLONES void scale_row(float* y, int64_t n, float s) {
  for (int64_t i = 0; i < n; ++i) y[i] *= s;
}

class Attention : public NodeKernel {
 public:
  explicit Attention(const sdk::Node& node)
      : NodeKernel(node),
        heads_(node.attr_int("num_heads", 0)),
        head_size_(node.attr_int("head_size", 0)),
        scale_(node.attr_float("scale", 1.f)),
        offsets_{node.attr_int("q_offset", 0), node.attr_int("k_offset", 0), node.attr_int("v_offset", 0)} {}

  void compute(sdk::Context& ctx) const {
    SINGA_CHECK(heads_ > 0 && head_size_ > 0, "attributes num_heads and head_size must be positive, got " +
                                                  std::to_string(heads_) + " and " + std::to_string(head_size_));
    const sdk::Tensor t[3] = {required(ctx, 0, "Q"), required(ctx, 1, "K"), required(ctx, 2, "V")};
    const char* names[3] = {"Q", "K", "V"};
    const int64_t H = heads_, D = head_size_;
    for (int i = 0; i < 3; ++i) {
      SINGA_CHECK(t[i].dtype() == SINGA_ONNX_FLOAT, std::string(names[i]) + " must be float");
      SINGA_CHECK(t[i].shape().size() == 3,
                  std::string(names[i]) + " must be [B, S, W], got " + shape_str(t[i].shape()));
      SINGA_CHECK(offsets_[i] >= 0 && offsets_[i] + H * D <= t[i].dim(2),
                  std::string(names[i]) + " " + shape_str(t[i].shape()) + " has no columns " +
                      std::to_string(offsets_[i]) + ".." + std::to_string(offsets_[i] + H * D) + " for " +
                      std::to_string(H) + " heads of " + std::to_string(D));
    }
    const int64_t B = t[0].dim(0), Sq = t[0].dim(1), Sk = t[1].dim(1);
    SINGA_CHECK(t[1].dim(0) == B && t[2].dim(0) == B && t[2].dim(1) == Sk,
                "K " + shape_str(t[1].shape()) + " and V " + shape_str(t[2].shape()) + " must be [" +
                    std::to_string(B) + ", Sk, W] alike for Q " + shape_str(t[0].shape()));
    sdk::Tensor y = ctx.output(0, Shape{B, Sq, H * D}, t[0].dl_dtype());
    if (y.numel() == 0) return;
    const float* q = t[0].data<float>() + offsets_[0];
    const float* k = t[1].data<float>() + offsets_[1];
    const float* v = t[2].data<float>() + offsets_[2];
    const int64_t wq = t[0].dim(2), wk = t[1].dim(2), wv = t[2].dim(2), wy = H * D;
    float* out = y.data<float>();
    if (Sk == 0) {  // softmax over no keys: nothing to average, and no NaN from 0/0 either
      std::fill(out, out + y.numel(), 0.f);
      return;
    }
    // Enough row blocks for every thread to have work when B * H is small,
    // and small enough for the scores to stay in cache.
    const int64_t threads = std::max(1, ctx.num_threads());
    int64_t blocks = std::min((Sq + 31) / 32, (2 * threads + B * H - 1) / (B * H));
    blocks = std::max({int64_t(1), blocks, (Sq * Sk + kScoreFloats - 1) / kScoreFloats});
    blocks = std::min(blocks, Sq);
    const int64_t rows = (Sq + blocks - 1) / blocks;
    const float scale = scale_;
    ctx.parallel_for(B * H * blocks, 1, [&](int64_t tb, int64_t te) {
      ops::dnnl_single_thread();
      // Per thread, kept between runs: allocating and zeroing 64 KiB per
      // call was a tenth of a head's time.
      thread_local std::vector<float> scores, inv;
      if (scores.size() < size_t(rows * Sk)) scores.resize(size_t(rows * Sk));
      if (inv.size() < size_t(rows)) inv.resize(size_t(rows));
      for (int64_t task = tb; task < te; ++task) {
        const int64_t bh = task / blocks, b = bh / H, h = bh % H;
        const int64_t r0 = (task % blocks) * rows, n = std::min(rows, Sq - r0);
        if (n <= 0) continue;
        const float* qb = q + (b * Sq + r0) * wq + h * D;
        const float* kb = k + b * Sk * wk + h * D;
        const float* vb = v + b * Sk * wv + h * D;
        float* yb = out + (b * Sq + r0) * wy + h * D;
        ops::check_sgemm(dnnl_sgemm('N', 'T', n, Sk, D, scale, qb, wq, kb, wk, 0.f, scores.data(), Sk));
        for (int64_t i = 0; i < n; ++i) inv[size_t(i)] = 1.f / exp_shifted(scores.data() + i * Sk, Sk);
        ops::check_sgemm(dnnl_sgemm('N', 'N', n, D, Sk, 1.f, scores.data(), Sk, vb, wv, 0.f, yb, wy));
        for (int64_t i = 0; i < n; ++i) scale_row(yb + i * wy, D, inv[size_t(i)]);
      }
    });
  }

 private:
  int64_t heads_, head_size_;
  float scale_;
  int64_t offsets_[3];
};

}  // namespace

void register_attention(sdk::Registrar& reg) {
  reg.kernel<Attention>(ops::kCpuDomain, "Attention", 1, 1, "cpu", {{"T", 0, sdk::bit(SINGA_ONNX_FLOAT)}});
  // Models written by `singa optimize` before the pass moved into this pack.
  reg.kernel<Attention>(kFusedDomain, "Attention", 1, 1, "cpu", {{"T", 0, sdk::bit(SINGA_ONNX_FLOAT)}});
}

}  // namespace nn
}  // namespace singa
