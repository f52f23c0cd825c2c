// Attention (domain ai.singa.cpu, opset 1; also ai.singa, its domain before):
// scaled dot-product attention, which passes/fuse_attention.cpp
// (cpu.attention) makes from MatMul -> [Add mask] -> Softmax -> MatMul and
// the view ops around them:
//
//   Attention(Q, K, V, mask?) -> Y
//     Q, K and V each either [B, S, W] (rows holding the H heads side by
//     side: head h is the D columns from `<x>_offset + h * D`; Q, K and V may
//     be one packed tensor with three offsets) or [B, H, S, D] (a KV cache);
//     mask, optional: float, broadcast to the scores [B, H, Sq, Sk] (numpy
//     rules: [B, 1, 1, Sk], [B, 1, Sq, Sk], [Sq, Sk], ...), added to them
//     before the softmax;
//     Y [B, Sq, H * D], head h in columns h * D ..: softmax(scale Q_h K_h^T +
//     mask) V_h.
//   Attributes: num_heads (H), head_size (D), scale (default 1), q_offset,
//   k_offset, v_offset (default 0), seq_first (default 0; 1: every [B, S, W]
//   input and Y are [S, B, W] instead, as torch's MultiheadAttention has them).
//
// Every size is read from the inputs at run time, so one node serves any
// batch and sequence length. A row whose keys are all masked with -inf comes
// out NaN, as Softmax's does.
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

// A node of fewer multiply-adds (B H Sq Sk D) than this runs on the calling
// thread: a BERT at seq 8 or a decoder step's heads take a few microseconds
// each, about what handing them to another thread costs.
constexpr int64_t kInlineWork = int64_t(1) << 16;

// Below this, e^(x - max) is stored as 0: the exp clamps there (e^-87, the
// least normal float's neighbourhood), and a masked key's e^-87 times V's
// values would be subnormal products in the GEMM, which run on the CPU's
// slow assists. Softmax writes these probabilities as 0 as well.
constexpr float kExpFloor = -87.f;

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
  for (i = 0; i < n; ++i) x[i] = x[i] - mx < kExpFloor ? 0.f : vec::exp_one(x[i] - mx);
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
  const __m512 mx = _mm512_set1_ps(vec::lane_max16(m)), floor = _mm512_set1_ps(kExpFloor);
  // e^d, 0 where d < kExpFloor (not-less-than is true for a NaN: it stays).
  auto exp_or_zero = [&](__m512 d) {
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(d, floor, _CMP_NLT_UQ), vec::exp16(d));
  };
  __m512 s = _mm512_setzero_ps();
  for (int64_t i = 0; i < full; i += 16) {
    const __m512 e = exp_or_zero(_mm512_sub_ps(_mm512_loadu_ps(x + i), mx));
    _mm512_storeu_ps(x + i, e);
    s = _mm512_add_ps(s, e);
  }
  if (tail) {
    const __m512 e = exp_or_zero(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, x + full), mx));
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

SINGA_VEC_CLONES void add_row(float* y, const float* m, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += m[i];
}

// Where one input keeps its heads: element (b, h, s, d) of head h's [S, D]
// matrix in batch b is at base[b * batch + h * head + s * row + d].
struct HeadLayout {
  const float* base = nullptr;
  int64_t B = 0, S = 0, batch = 0, head = 0, row = 0;
};

// The broadcast strides of the mask over the scores [B, H, Sq, Sk].
struct MaskLayout {
  const float* base = nullptr;
  int64_t stride[4] = {0, 0, 0, 0};
};

class Attention : public NodeKernel {
 public:
  explicit Attention(const sdk::Node& node)
      : NodeKernel(node),
        heads_(node.attr_int("num_heads", 0)),
        head_size_(node.attr_int("head_size", 0)),
        scale_(node.attr_float("scale", 1.f)),
        offsets_{node.attr_int("q_offset", 0), node.attr_int("k_offset", 0), node.attr_int("v_offset", 0)},
        seq_first_(node.attr_int("seq_first", 0) != 0) {}

  void compute(sdk::Context& ctx) const {
    SINGA_CHECK(heads_ > 0 && head_size_ > 0, "attributes num_heads and head_size must be positive, got " +
                                                  std::to_string(heads_) + " and " + std::to_string(head_size_));
    const sdk::Tensor t[3] = {required(ctx, 0, "Q"), required(ctx, 1, "K"), required(ctx, 2, "V")};
    const char* names[3] = {"Q", "K", "V"};
    const int64_t H = heads_, D = head_size_;
    HeadLayout l[3];
    for (int i = 0; i < 3; ++i) l[i] = layout(t[i], names[i], offsets_[i]);
    const int64_t B = l[0].B, Sq = l[0].S, Sk = l[1].S;
    SINGA_CHECK(l[1].B == B && l[2].B == B && l[2].S == Sk,
                "K " + shape_str(t[1].shape()) + " and V " + shape_str(t[2].shape()) + " must be [" +
                    std::to_string(B) + ", Sk, W] alike for Q " + shape_str(t[0].shape()));
    MaskLayout mask;
    if (ctx.has_input(3)) mask = mask_layout(ctx.input(3), B, Sq, Sk);
    const int64_t wy = H * D;
    sdk::Tensor y = ctx.output(0, seq_first_ ? Shape{Sq, B, wy} : Shape{B, Sq, wy}, t[0].dl_dtype());
    if (y.numel() == 0) return;
    float* out = y.data<float>();
    // Y's strides: a batch and a row of context vectors.
    const int64_t y_batch = seq_first_ ? wy : Sq * wy, y_row = seq_first_ ? B * wy : wy;
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
    const int64_t tasks = B * H * blocks;
    const int64_t grain = B * H * Sq * Sk * D < kInlineWork ? tasks : 1;
    ctx.parallel_for(tasks, grain, [&](int64_t tb, int64_t te) {
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
        const float* qb = l[0].base + b * l[0].batch + h * l[0].head + r0 * l[0].row;
        const float* kb = l[1].base + b * l[1].batch + h * l[1].head;
        const float* vb = l[2].base + b * l[2].batch + h * l[2].head;
        float* yb = out + b * y_batch + r0 * y_row + h * D;
        float* s = scores.data();
        ops::check_sgemm(dnnl_sgemm('N', 'T', n, Sk, D, scale, qb, l[0].row, kb, l[1].row, 0.f, s, Sk));
        if (mask.base) add_mask(mask, b, h, r0, n, Sk, s);
        for (int64_t i = 0; i < n; ++i) inv[size_t(i)] = 1.f / exp_shifted(s + i * Sk, Sk);
        ops::check_sgemm(dnnl_sgemm('N', 'N', n, D, Sk, 1.f, s, Sk, vb, l[2].row, 0.f, yb, y_row));
        for (int64_t i = 0; i < n; ++i) scale_row(yb + i * y_row, D, inv[size_t(i)]);
      }
    });
  }

 private:
  // Input `t`'s heads: [B, S, W] ([S, B, W] with seq_first) read at column
  // `offset`, or [B, H, S, D].
  HeadLayout layout(const sdk::Tensor& t, const char* name, int64_t offset) const {
    const int64_t H = heads_, D = head_size_;
    SINGA_CHECK(t.dtype() == SINGA_ONNX_FLOAT, std::string(name) + " must be float");
    HeadLayout l;
    l.base = t.data<float>();
    if (t.ndim() == 4) {
      SINGA_CHECK(t.dim(1) == H && t.dim(3) == D && offset == 0,
                  std::string(name) + " " + shape_str(t.shape()) + " is not [B, " + std::to_string(H) + ", S, " +
                      std::to_string(D) + "]" + (offset ? " (it has a column offset)" : ""));
      l.B = t.dim(0), l.S = t.dim(2), l.row = D, l.head = l.S * D, l.batch = H * l.head;
      return l;
    }
    SINGA_CHECK(t.ndim() == 3, std::string(name) + " must be " + (seq_first_ ? "[S, B, W]" : "[B, S, W]") +
                                   " or [B, H, S, D], got " + shape_str(t.shape()));
    const int64_t W = t.dim(2);
    SINGA_CHECK(offset >= 0 && offset + H * D <= W,
                std::string(name) + " " + shape_str(t.shape()) + " has no columns " + std::to_string(offset) + ".." +
                    std::to_string(offset + H * D) + " for " + std::to_string(H) + " heads of " + std::to_string(D));
    l.base += offset;
    l.B = t.dim(seq_first_ ? 1 : 0), l.S = t.dim(seq_first_ ? 0 : 1), l.head = D;
    l.row = seq_first_ ? l.B * W : W;
    l.batch = seq_first_ ? W : l.S * W;
    return l;
  }

  // The mask's strides over [B, H, Sq, Sk]: its dims, right-aligned, must
  // each be 1 or the scores' own.
  MaskLayout mask_layout(const sdk::Tensor& m, int64_t B, int64_t Sq, int64_t Sk) const {
    const int64_t want[4] = {B, heads_, Sq, Sk};
    const Shape ms = m.shape();
    bool ok = m.dtype() == SINGA_ONNX_FLOAT && ms.size() <= 4;
    MaskLayout l;
    int64_t stride = 1;
    for (size_t k = 0; ok && k < ms.size(); ++k) {
      const size_t axis = 3 - k, dim = ms.size() - 1 - k;
      ok = ms[dim] == 1 || ms[dim] == want[axis];
      l.stride[axis] = ms[dim] == 1 ? 0 : stride;
      stride *= ms[dim];
    }
    SINGA_CHECK(ok, "the mask must be float and broadcast to the scores [" + std::to_string(B) + ", " +
                        std::to_string(heads_) + ", " + std::to_string(Sq) + ", " + std::to_string(Sk) + "], got " +
                        shape_str(ms));
    l.base = m.data<float>();
    return l;
  }

  // Scores rows r0 .. r0 + n of head (b, h) += the mask's.
  static void add_mask(const MaskLayout& m, int64_t b, int64_t h, int64_t r0, int64_t n, int64_t Sk, float* s) {
    for (int64_t i = 0; i < n; ++i) {
      const float* mr = m.base + b * m.stride[0] + h * m.stride[1] + (r0 + i) * m.stride[2];
      float* sr = s + i * Sk;
      if (m.stride[3])
        add_row(sr, mr, Sk);
      else
        for (int64_t j = 0; j < Sk; ++j) sr[j] += mr[0];
    }
  }

  int64_t heads_, head_size_;
  float scale_;
  int64_t offsets_[3];
  bool seq_first_;
};

}  // namespace

void register_attention(sdk::Registrar& reg) {
  reg.kernel<Attention>(ops::kCpuDomain, "Attention", 1, 1, "cpu", {{"T", 0, sdk::bit(SINGA_ONNX_FLOAT)}});
  // Models written by `singa optimize` before the pass moved into this pack.
  reg.kernel<Attention>(kFusedDomain, "Attention", 1, 1, "cpu", {{"T", 0, sdk::bit(SINGA_ONNX_FLOAT)}});
}

}  // namespace nn
}  // namespace singa
