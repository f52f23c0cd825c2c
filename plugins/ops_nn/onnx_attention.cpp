// Attention (ai.onnx, opsets 23 and 24): scaled dot-product attention with
// grouped KV heads, a mask, causal masking, a softcap and a KV cache.
//
//   Q [B, Hq, Sq, D]  K [B, Hkv, Skv, D]  V [B, Hkv, Skv, Dv]   (4-D), or
//   Q [B, Sq, Hq*D]   K [B, Skv, Hkv*D]   V [B, Skv, Hkv*Dv]    (3-D, with
//   attributes q_num_heads and kv_num_heads);
//   attn_mask (bool: true takes part; or additive, Q's type) broadcast to
//   [B, Hq, Sq, T], a last dim shorter than T padded with "masked";
//   past_key [B, Hkv, P, D], past_value [B, Hkv, P, Dv]; T = P + Skv;
//   nonpad_kv_seqlen [B] (opset 24): keys from nonpad_kv_seqlen[b] on are
//   masked.
//   Y like Q with Dv; present_key/value [B, Hkv, T, D/Dv] (past then K/V);
//   qk_matmul_output [B, Hq, Sq, T]: qk_matmul_output_mode 0 the scaled
//   Q K^T, 1 after the softcap, 2 after the mask, 3 the softmax.
//
// Scores = scale Q K^T (scale defaults to 1/sqrt(D)); softcap c > 0 maps
// them to c tanh(s / c); the bias (mask, causal, padding) is added; a row
// whose every score is -inf gets zero weights (so Y's row is 0, not NaN);
// query head h reads KV head h / (Hq / Hkv). is_causal masks key j for query
// i when j > i + offset, offset being P with a past, else
// nonpad_kv_seqlen[b] - Sq where that input is given, else 0.
//
// float, float16 and bfloat16 compute in float (one task's scores through
// oneDNN's sgemm), double in double.
#include "dnnl_sgemm.hpp"  // check_sgemm, dnnl_single_thread
#include "nn_common.hpp"
#include "register.hpp"
#include "vec_math.hpp"

#include <exp_avx512.hpp>
#include <sgemm.hpp>  // fast::avx512

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace singa {
namespace nn {
namespace {

// One task's scores at most this many values (256 KiB of float).
constexpr int64_t kScoreValues = int64_t(1) << 16;

// ----------------------------------------------------------- softmax rows

// x = softmax(x) over n values; a row of only -inf (every key masked) comes
// out all zeros; a NaN anywhere makes the row NaN.
SINGA_VEC_CLONES void softmax_row_any(float* x, int64_t n) {
  const float ninf = -std::numeric_limits<float>::infinity();
  float lanes[16];
  for (float& l : lanes) l = ninf;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int l = 0; l < 16; ++l) lanes[l] = x[i + l] > lanes[l] ? x[i + l] : lanes[l];
  float mx = ninf;
  for (int l = 0; l < 16; ++l) mx = lanes[l] > mx ? lanes[l] : mx;
  for (; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
  if (mx == ninf) {  // every score -inf (or NaN, which wins no comparison)
    bool nan = false;
    for (i = 0; i < n; ++i) nan |= x[i] != x[i];
    const float fill = nan ? std::numeric_limits<float>::quiet_NaN() : 0.f;
    for (i = 0; i < n; ++i) x[i] = fill;
    return;
  }
  for (i = 0; i < n; ++i) {
    const float e = vec::exp_one(x[i] - mx);
    x[i] = x[i] == ninf ? 0.f : (x[i] != x[i] ? x[i] : e);
  }
  const float inv = 1.f / vec::lane_sum(x, n);
  for (i = 0; i < n; ++i) x[i] *= inv;
}

#ifdef SINGA_AVX512_BEGIN
SINGA_AVX512_BEGIN
// softmax_row_any with exp_avx512.hpp's exp, the exp and the sum in one pass.
void softmax_row_avx512(float* x, int64_t n) {
  const int64_t full = n / 16 * 16;
  const __mmask16 tail = __mmask16((1u << (n - full)) - 1);
  const __m512 ninf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  // max_ps(m, v) gives v when either is NaN: a NaN may or may not win; either
  // way its exp makes the sum NaN.
  __m512 m = ninf;
  for (int64_t i = 0; i < full; i += 16) m = _mm512_maskz_max_ps(vec::kAllLanes, m, _mm512_loadu_ps(x + i));
  if (tail) m = _mm512_mask_max_ps(m, tail, m, _mm512_maskz_loadu_ps(tail, x + full));
  const float mxs = vec::lane_max16(m);
  if (mxs == -std::numeric_limits<float>::infinity()) {
    softmax_row_any(x, n);  // every key masked (or NaN): the rare path
    return;
  }
  const __m512 mx = _mm512_set1_ps(mxs);
  __m512 s = _mm512_setzero_ps();
  for (int64_t i = 0; i < full; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    const __mmask16 live = _mm512_cmp_ps_mask(v, ninf, _CMP_NEQ_UQ);
    const __m512 e = _mm512_maskz_mov_ps(live, vec::exp16(_mm512_sub_ps(v, mx)));
    _mm512_storeu_ps(x + i, e);
    s = _mm512_add_ps(s, e);
  }
  if (tail) {
    const __m512 v = _mm512_mask_loadu_ps(ninf, tail, x + full);
    const __mmask16 live = _mm512_cmp_ps_mask(v, ninf, _CMP_NEQ_UQ);
    const __m512 e = _mm512_maskz_mov_ps(live, vec::exp16(_mm512_sub_ps(v, mx)));
    _mm512_mask_storeu_ps(x + full, tail, e);
    s = _mm512_add_ps(s, e);
  }
  const __m512 inv = _mm512_set1_ps(1.f / vec::lane_sum16(s));
  for (int64_t i = 0; i < full; i += 16) _mm512_storeu_ps(x + i, _mm512_mul_ps(_mm512_loadu_ps(x + i), inv));
  if (tail) _mm512_mask_storeu_ps(x + full, tail, _mm512_mul_ps(_mm512_maskz_loadu_ps(tail, x + full), inv));
}
SINGA_AVX512_END
#endif

void softmax_row(float* x, int64_t n) {
#ifdef SINGA_AVX512_BEGIN
  static const bool avx512 = fast::avx512();
  if (avx512) return softmax_row_avx512(x, n);
#endif
  softmax_row_any(x, n);
}

void softmax_row(double* x, int64_t n) {
  const double ninf = -std::numeric_limits<double>::infinity();
  double mx = ninf;
  for (int64_t i = 0; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
  if (mx == ninf) {
    bool nan = false;
    for (int64_t i = 0; i < n; ++i) nan |= x[i] != x[i];
    const double fill = nan ? std::numeric_limits<double>::quiet_NaN() : 0.0;
    for (int64_t i = 0; i < n; ++i) x[i] = fill;
    return;
  }
  double s = 0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = x[i] == ninf ? 0.0 : std::exp(x[i] - mx);
    s += x[i];
  }
  const double inv = 1.0 / s;
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

// c tanh(x / c) in place.
SINGA_VEC_CLONES void softcap_row(float* x, int64_t n, float c) {
  const float ic = 1.f / c;
  for (int64_t i = 0; i < n; ++i) x[i] *= ic;
  vec::tanh_inplace(x, n);
  for (int64_t i = 0; i < n; ++i) x[i] *= c;
}
void softcap_row(double* x, int64_t n, double c) {
  for (int64_t i = 0; i < n; ++i) x[i] = c * std::tanh(x[i] / c);
}

// ----------------------------------------------------------- products

// S[n, T] = alpha Q[n, D] K[T, D]^T (Q rows ldq apart, K rows D apart).
void qk_product(int64_t n, int64_t T, int64_t D, float alpha, const float* q, int64_t ldq, const float* k, float* s) {
  if (T == 0) return;
  if (D == 0) {
    std::fill(s, s + n * T, 0.f);
    return;
  }
  ops::check_sgemm(dnnl_sgemm('N', 'T', n, T, D, alpha, q, ldq, k, D, 0.f, s, T));
}
void qk_product(int64_t n, int64_t T, int64_t D, double alpha, const double* q, int64_t ldq, const double* k,
                double* s) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < T; ++j) {
      double acc = 0;
      for (int64_t d = 0; d < D; ++d) acc += q[i * ldq + d] * k[j * D + d];
      s[i * T + j] = alpha * acc;
    }
}

// Y[n, Dv] (rows ldy apart) = P[n, T] V[T, Dv].
void pv_product(int64_t n, int64_t Dv, int64_t T, const float* p, const float* v, float* y, int64_t ldy) {
  if (T == 0) {
    for (int64_t i = 0; i < n; ++i) std::fill(y + i * ldy, y + i * ldy + Dv, 0.f);
    return;
  }
  ops::check_sgemm(dnnl_sgemm('N', 'N', n, Dv, T, 1.f, p, T, v, Dv, 0.f, y, ldy));
}
void pv_product(int64_t n, int64_t Dv, int64_t T, const double* p, const double* v, double* y, int64_t ldy) {
  for (int64_t i = 0; i < n; ++i) {
    double* yr = y + i * ldy;
    std::fill(yr, yr + Dv, 0.0);
    for (int64_t j = 0; j < T; ++j) {
      const double w = p[i * T + j];
      const double* vr = v + j * Dv;
      for (int64_t d = 0; d < Dv; ++d) yr[d] += w * vr[d];
    }
  }
}

// ----------------------------------------------------------- the kernel

// Where head h, row s of a [B, H, S, W] (4-D) or [B, S, H*W] (3-D) tensor
// starts: b * sb + h * sh + s * ss.
struct Layout {
  int64_t sb, sh, ss;
};
Layout layout_of(bool four, int64_t H, int64_t S, int64_t W) {
  return four ? Layout{H * S * W, S * W, W} : Layout{S * H * W, W, H * W};
}

class OnnxAttention : public NodeKernel {
 public:
  explicit OnnxAttention(const sdk::Node& node)
      : NodeKernel(node),
        is_causal_(node.attr_int("is_causal", 0)),
        q_heads_(node.attr_int("q_num_heads", 0)),
        kv_heads_(node.attr_int("kv_num_heads", 0)),
        mode_(node.attr_int("qk_matmul_output_mode", 0)),
        has_scale_(node.has_attr("scale")),
        scale_(node.attr_float("scale", 1.f)),
        softcap_(node.attr_float("softcap", 0.f)),
        want_{node.has_output(1), node.has_output(2), node.has_output(3)} {
    if (is_causal_ != 0 && is_causal_ != 1) fail("attribute is_causal must be 0 or 1, got " + std::to_string(is_causal_));
    if (mode_ < 0 || mode_ > 3) fail("attribute qk_matmul_output_mode must be 0..3, got " + std::to_string(mode_));
    if (q_heads_ < 0 || kv_heads_ < 0) fail("attributes q_num_heads and kv_num_heads must not be negative");
    if (!(softcap_ >= 0)) fail("attribute softcap must not be negative, got " + std::to_string(softcap_));
    if (node.has_attr("softmax_precision")) {
      // The softmax runs in float (double for double inputs) whatever the
      // precision asked; it must name a floating type.
      const int64_t p = node.attr_int("softmax_precision", 1);
      if (p != SINGA_ONNX_FLOAT && p != SINGA_ONNX_FLOAT16 && p != SINGA_ONNX_DOUBLE && p != SINGA_ONNX_BFLOAT16)
        fail("attribute softmax_precision " + std::to_string(p) + " is not a floating-point type");
    }
  }

  void compute(sdk::Context& ctx) const {
    const sdk::Tensor q = required(ctx, 0, "Q"), k = required(ctx, 1, "K"), v = required(ctx, 2, "V");
    const int32_t dt = q.dtype();
    check(k.dtype() == dt && v.dtype() == dt, "Q, K and V must have one element type");
    dispatch_real(dt, where(), [&](auto tag) {
      using T = decltype(tag);
      run<T, acc_t<T>>(ctx);
    });
  }

 private:
  template <class E, class A>
  void run(sdk::Context& ctx) const {
    const sdk::Tensor q = ctx.input(0), k = ctx.input(1), v = ctx.input(2);
    const sdk::Tensor mask = ctx.input(3), past_k = ctx.input(4), past_v = ctx.input(5), nonpad = ctx.input(6);
    const Shape qs = q.shape(), ks = k.shape(), vs = v.shape();
    SINGA_CHECK(qs.size() == 3 || qs.size() == 4, "Q must be 3-D or 4-D, got " + shape_str(qs));
    SINGA_CHECK(ks.size() == qs.size() && vs.size() == qs.size(),
                "Q " + shape_str(qs) + ", K " + shape_str(ks) + " and V " + shape_str(vs) + " must have one rank");
    const bool four = qs.size() == 4;
    const int64_t B = qs[0];
    int64_t Hq, Hkv, Sq, Skv, D, Dv;
    if (four) {
      Hq = qs[1], Sq = qs[2], D = qs[3];
      Hkv = ks[1], Skv = ks[2];
      Dv = vs[3];
      SINGA_CHECK(ks[3] == D, "K's head size " + std::to_string(ks[3]) + " differs from Q's " + std::to_string(D));
      SINGA_CHECK(vs[1] == Hkv && vs[2] == Skv,
                  "V " + shape_str(vs) + " must have K's heads and sequence length (K " + shape_str(ks) + ")");
    } else {
      check(q_heads_ > 0 && kv_heads_ > 0, "3-D inputs need attributes q_num_heads and kv_num_heads");
      Hq = q_heads_, Hkv = kv_heads_;
      Sq = qs[1], Skv = ks[1];
      SINGA_CHECK(qs[2] % Hq == 0 && ks[2] % Hkv == 0 && vs[2] % Hkv == 0,
                  "hidden sizes of Q " + shape_str(qs) + ", K " + shape_str(ks) + ", V " + shape_str(vs) +
                      " are not multiples of q_num_heads " + std::to_string(Hq) + " / kv_num_heads " +
                      std::to_string(Hkv));
      D = qs[2] / Hq, Dv = vs[2] / Hkv;
      SINGA_CHECK(ks[2] / Hkv == D,
                  "K's head size " + std::to_string(ks[2] / Hkv) + " differs from Q's " + std::to_string(D));
      SINGA_CHECK(vs[1] == Skv, "V " + shape_str(vs) + " must have K's sequence length (K " + shape_str(ks) + ")");
    }
    check(ks[0] == B && vs[0] == B, "Q, K and V must have one batch size");
    SINGA_CHECK(Hkv > 0 && Hq % Hkv == 0,
                "q_num_heads " + std::to_string(Hq) + " must be a multiple of kv_num_heads " + std::to_string(Hkv));
    const int64_t group = Hq / Hkv;

    // The KV cache.
    check(past_k.present() == past_v.present(), "past_key and past_value must be given together");
    int64_t P = 0;
    if (past_k.present()) {
      check(past_k.dtype() == q.dtype() && past_v.dtype() == q.dtype(), "past_key and past_value must have Q's type");
      P = past_k.ndim() == 4 ? past_k.dim(2) : -1;
      SINGA_CHECK((past_k.shape() == Shape{B, Hkv, P, D}), "past_key must be [" + std::to_string(B) + ", " +
                                                               std::to_string(Hkv) + ", P, " + std::to_string(D) +
                                                               "], got " + shape_str(past_k.shape()));
      SINGA_CHECK((past_v.shape() == Shape{B, Hkv, P, Dv}),
                  "past_value must be [" + std::to_string(B) + ", " + std::to_string(Hkv) + ", " + std::to_string(P) +
                      ", " + std::to_string(Dv) + "], got " + shape_str(past_v.shape()));
    }
    const int64_t T = P + Skv;

    // nonpad_kv_seqlen.
    std::vector<int64_t> valid;
    if (nonpad.present()) {
      check(nonpad.dtype() == SINGA_ONNX_INT64, "nonpad_kv_seqlen must be int64");
      SINGA_CHECK(nonpad.shape() == Shape{B},
                  "nonpad_kv_seqlen must be [" + std::to_string(B) + "], got " + shape_str(nonpad.shape()));
      // Clamped to [-Sq-1, T+Sq]: beyond either end every key is masked
      // (or none is), and the frontier arithmetic cannot overflow.
      const int64_t* nv = nonpad.data<int64_t>();
      valid.resize(size_t(B));
      for (int64_t b = 0; b < B; ++b) valid[size_t(b)] = std::min(std::max(nv[b], -Sq - 1), T + Sq);
    }

    // The mask, as additive values of A, aligned right to [B, Hq, Sq, T].
    std::vector<A> mvals;
    int64_t mstride[3] = {0, 0, 0}, mlen = 0;
    if (mask.present()) {
      const Shape ms = mask.shape();
      SINGA_CHECK(ms.size() >= 1 && ms.size() <= 4, "attn_mask must have rank 1 to 4, got " + shape_str(ms));
      SINGA_CHECK(mask.dtype() == SINGA_ONNX_BOOL || mask.dtype() == q.dtype(),
                  std::string("attn_mask must be bool or Q's type, got ") + sdk::dtype_name(mask.dtype()));
      Shape m4(4 - ms.size(), 1);
      m4.insert(m4.end(), ms.begin(), ms.end());
      const int64_t want[3] = {B, Hq, Sq};
      for (int d = 0; d < 3; ++d)
        SINGA_CHECK(m4[size_t(d)] == 1 || m4[size_t(d)] == want[d],
                    "attn_mask " + shape_str(ms) + " does not broadcast to [" + std::to_string(B) + ", " +
                        std::to_string(Hq) + ", " + std::to_string(Sq) + ", " + std::to_string(T) + "]");
      mlen = m4[3];
      SINGA_CHECK(mlen <= T, "attn_mask's last dim " + std::to_string(mlen) + " exceeds the total sequence length " +
                                 std::to_string(T));
      mstride[2] = m4[2] == 1 ? 0 : mlen;
      mstride[1] = m4[1] == 1 ? 0 : m4[2] * mlen;
      mstride[0] = m4[0] == 1 ? 0 : m4[1] * m4[2] * mlen;
      mvals.resize(size_t(mask.numel()));
      if (mask.dtype() == SINGA_ONNX_BOOL) {
        const bool* mb = mask.data<bool>();
        for (size_t i = 0; i < mvals.size(); ++i) mvals[i] = mb[i] ? A(0) : -std::numeric_limits<A>::infinity();
      } else {
        const E* mt = mask.data<E>();
        for (size_t i = 0; i < mvals.size(); ++i) mvals[i] = to_acc<A>(mt[i]);
      }
    }

    // Outputs.
    const bool want_pk = want_[0] && ctx.num_outputs() > 1, want_pv = want_[1] && ctx.num_outputs() > 2,
               want_qk = want_[2] && ctx.num_outputs() > 3;
    const Shape yshape = four ? Shape{B, Hq, Sq, Dv} : Shape{B, Sq, Hq * Dv};
    sdk::numel(yshape);
    sdk::Tensor y = ctx.output(0, yshape, q.dl_dtype());
    sdk::Tensor pk, pv, qko;
    if (want_pk) pk = ctx.output(1, Shape{B, Hkv, T, D}, q.dl_dtype());
    if (want_pv) pv = ctx.output(2, Shape{B, Hkv, T, Dv}, q.dl_dtype());
    if (want_qk) qko = ctx.output(3, Shape{B, Hq, Sq, T}, q.dl_dtype());
    constexpr bool same = std::is_same<E, A>::value;

    // Q in A, in its own layout.
    const Layout ql = layout_of(four, Hq, Sq, D), yl = layout_of(four, Hq, Sq, Dv);
    std::vector<A> qbuf;
    const A* qa;
    if constexpr (same) {
      qa = q.data<A>();
    } else {
      qbuf.resize(size_t(q.numel()));
      const E* src = q.data<E>();
      for (size_t i = 0; i < qbuf.size(); ++i) qbuf[i] = to_acc<A>(src[i]);
      qa = qbuf.data();
    }

    // present_key / present_value in A, [B, Hkv, T, W]: past rows then K/V's.
    auto cache = [&](const sdk::Tensor& cur, const sdk::Tensor& past, sdk::Tensor& out, bool want, int64_t W,
                     std::vector<A>& buf) -> const A* {
      if constexpr (same) {
        if (!want && four && P == 0) return cur.data<A>();
      }
      A* dst;
      if constexpr (same) {
        if (want) {
          dst = out.data<A>();
        } else {
          buf.resize(size_t(B * Hkv * T * W));
          dst = buf.data();
        }
      } else {
        buf.resize(size_t(B * Hkv * T * W));
        dst = buf.data();
      }
      const E* ps = past.present() ? past.data<E>() : nullptr;
      const E* cs = cur.data<E>();
      const Layout cl = layout_of(four, Hkv, Skv, W);
      for (int64_t b = 0; b < B; ++b)
        for (int64_t g = 0; g < Hkv; ++g) {
          A* d = dst + (b * Hkv + g) * T * W;
          if (ps) {
            const E* s = ps + (b * Hkv + g) * P * W;
            for (int64_t i = 0; i < P * W; ++i) d[i] = to_acc<A>(s[i]);
          }
          for (int64_t s = 0; s < Skv; ++s) {
            const E* r = cs + b * cl.sb + g * cl.sh + s * cl.ss;
            A* o = d + (P + s) * W;
            for (int64_t i = 0; i < W; ++i) o[i] = to_acc<A>(r[i]);
          }
        }
      if constexpr (!same) {
        if (want) {
          E* o = out.data<E>();
          for (size_t i = 0; i < buf.size(); ++i) o[i] = from_acc<E>(buf[i]);
        }
      }
      return dst;
    };
    std::vector<A> kbuf, vbuf;
    const A* kc = cache(k, past_k, pk, want_pk, D, kbuf);
    const A* vc = cache(v, past_v, pv, want_pv, Dv, vbuf);

    // Y and qk_matmul_output in A.
    std::vector<A> ybuf, qkbuf;
    A* ya;
    A* qka = nullptr;
    if constexpr (same) {
      ya = y.data<A>();
      if (want_qk) qka = qko.data<A>();
    } else {
      ybuf.resize(size_t(y.numel()));
      ya = ybuf.data();
      if (want_qk) {
        qkbuf.resize(size_t(qko.numel()));
        qka = qkbuf.data();
      }
    }

    if (B * Hq * Sq > 0) {
      const A scale = has_scale_ ? A(scale_) : (D > 0 ? A(1) / std::sqrt(A(D)) : A(1));
      const A cap = A(softcap_);
      const A ninf = -std::numeric_limits<A>::infinity();
      const int64_t threads = std::max(1, ctx.num_threads());
      const int64_t Tn = std::max<int64_t>(T, 1);
      int64_t blocks = std::min((Sq + 31) / 32, (2 * threads + B * Hq - 1) / (B * Hq));
      blocks = std::max({int64_t(1), blocks, (Sq * Tn + kScoreValues - 1) / kScoreValues});
      blocks = std::min(blocks, Sq);
      const int64_t rows = (Sq + blocks - 1) / blocks;
      const A* mv = mvals.empty() ? nullptr : mvals.data();
      const bool causal = is_causal_ == 1;
      ctx.parallel_for(B * Hq * blocks, 1, [&](int64_t tb, int64_t te) {
        ops::dnnl_single_thread();
        thread_local std::vector<A> scores;
        if (scores.size() < size_t(rows * Tn)) scores.resize(size_t(rows * Tn));
        for (int64_t task = tb; task < te; ++task) {
          const int64_t bh = task / blocks, b = bh / Hq, h = bh % Hq, g = h / group;
          const int64_t r0 = (task % blocks) * rows, n = std::min(rows, Sq - r0);
          if (n <= 0) continue;
          const A* qb = qa + b * ql.sb + h * ql.sh + r0 * ql.ss;
          const A* kb = kc + (b * Hkv + g) * T * D;
          const A* vb = vc + (b * Hkv + g) * T * Dv;
          A* yb = ya + b * yl.sb + h * yl.sh + r0 * yl.ss;
          A* s = scores.data();
          // The causal frontier: key j is masked for query i when j > i + off.
          int64_t off = 0;
          if (past_k.present())
            off = P;
          else if (!valid.empty())
            off = valid[size_t(b)] - Sq;
          const int64_t vlen = valid.empty() ? T : valid[size_t(b)];
          // Keys from Tc on are masked for every row of the block (causal or
          // padding): without a qk_matmul_output to fill, they are skipped,
          // their weights being exactly 0.
          int64_t Tc = T;
          if (!qka) {
            if (causal) Tc = std::min(Tc, std::max<int64_t>(0, r0 + n + off));
            Tc = std::min(Tc, std::max<int64_t>(0, vlen));
          }
          qk_product(n, Tc, D, scale, qb, ql.ss, kb, s);
          for (int64_t r = 0; r < n; ++r) {
            const int64_t i = r0 + r;
            A* sr = s + r * Tc;
            A* qr = qka ? qka + ((b * Hq + h) * Sq + i) * T : nullptr;
            if (qr && mode_ == 0) std::copy(sr, sr + Tc, qr);
            if (cap > 0) softcap_row(sr, Tc, cap);
            if (qr && mode_ == 1) std::copy(sr, sr + Tc, qr);
            if (mv) {
              const A* m = mv + b * mstride[0] + h * mstride[1] + i * mstride[2];
              const int64_t ml = std::min(mlen, Tc);
              for (int64_t j = 0; j < ml; ++j) sr[j] += m[j];
              for (int64_t j = ml; j < Tc; ++j) sr[j] += ninf;
            }
            if (causal) {
              const int64_t first = std::max<int64_t>(0, std::min<int64_t>(Tc, i + off + 1));
              for (int64_t j = first; j < Tc; ++j) sr[j] += ninf;
            }
            for (int64_t j = std::max<int64_t>(0, std::min(vlen, Tc)); j < Tc; ++j) sr[j] += ninf;
            if (qr && mode_ == 2) std::copy(sr, sr + Tc, qr);
            softmax_row(sr, Tc);
            if (qr && mode_ == 3) std::copy(sr, sr + Tc, qr);
          }
          if (Dv > 0) pv_product(n, Dv, Tc, s, vb, yb, yl.ss);
        }
      });
    }

    if constexpr (!same) {
      E* yo = y.data<E>();
      for (size_t i = 0; i < ybuf.size(); ++i) yo[i] = from_acc<E>(ybuf[i]);
      if (want_qk) {
        E* o = qko.data<E>();
        for (size_t i = 0; i < qkbuf.size(); ++i) o[i] = from_acc<E>(qkbuf[i]);
      }
    }
  }

  int64_t is_causal_, q_heads_, kv_heads_, mode_;
  bool has_scale_;
  float scale_, softcap_;
  bool want_[3];  // present_key, present_value, qk_matmul_output: absent ones are not computed
};

}  // namespace

void register_onnx_attention(sdk::Registrar& reg) {
  // Opset 24 added nonpad_kv_seqlen (input 6) and the offset causal frontier
  // for it; the kernel serves both.
  for (int since : {23, 24})
    reg.kernel<OnnxAttention>("", "Attention", since, SINGA_VERSION_OPEN, "cpu",
                              {{"T1", 0, kRealTypes}, {"U", 3, kRealTypes | sdk::bit(SINGA_ONNX_BOOL)}});
}

}  // namespace nn
}  // namespace singa
