// Windowed pooling: MaxPool (with Indices), AveragePool and LpPool.
#include "avg_pool_2d_f32.hpp"
#include "blocked16_f32.hpp"
#include "layouts.hpp"
#include "max_pool_3s1_narrow_f32.hpp"
#include "nn_common.hpp"
#include "pool_blocked16_f32.hpp"
#include "pool_f32.hpp"
#include "register.hpp"
#include "sgemm.hpp"
#include "spatial.hpp"
#include "vec_math.hpp"  // SINGA_VEC_CLONES

#include <half_convert_f32.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

namespace singa {
namespace nn {
namespace {

// The taps of one window along one axis: input position start + k * d for
// k in [kb, ke) all lie inside [lo, hi).
struct Taps {
  int64_t start, d, kb, ke;
  int64_t count() const { return ke > kb ? ke - kb : 0; }
  int64_t at(int64_t k) const { return start + k * d; }
};

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

inline Taps taps(int64_t o, int64_t s, int64_t pb, int64_t d, int64_t k, int64_t lo, int64_t hi) {
  Taps t{o * s - pb, d, 0, k};
  if (t.start < lo) t.kb = ceil_div(lo - t.start, d);
  if (t.start + (k - 1) * d >= hi) t.ke = hi > t.start ? ceil_div(hi - t.start, d) : 0;
  if (t.ke < t.kb) t.ke = t.kb;
  return t;
}

// Output columns [0, n) of one output row of a K x K max pool with stride S
// whose windows all lie inside the plane: row[kh] is input row kh of the
// window, at the first window's column. Same rule as the scalar loop (the
// first tap, then strictly greater taps in row-major order), as selects: with
// K and S fixed the taps unroll and the column loop vectorizes, where the
// scalar loop's data-dependent branches mispredicted on every other tap.
template <int K, int S>
SINGA_VEC_CLONES void max_row_inside(const float* const* row, int64_t n, float* __restrict y) {
  const float* r[K];
  for (int kh = 0; kh < K; ++kh) r[kh] = row[kh];
  for (int64_t ow = 0; ow < n; ++ow) {
    float best = r[0][ow * S];
    for (int kh = 0; kh < K; ++kh)
      for (int kw = kh == 0 ? 1 : 0; kw < K; ++kw) {
        const float v = r[kh][ow * S + kw];
        best = v > best ? v : best;
      }
    y[ow] = best;
  }
}

// A float16 pool on the float kernels: groups of planes widened (F16C) into
// float buffers that stay in cache, pooled by `pool(planes, xf, yf)`, Y
// rounded once. Widening is exact and max pooling only selects, so MaxPool
// gives the half loop's bits; an average is summed and divided in float as
// the half loop does, then rounded once.
template <class Pool>
void pool_half_via_float(const sdk::Context& ctx, const sdk::half* x, int64_t planes, int64_t in_plane, sdk::half* y,
                         int64_t out_plane, Pool&& pool) {
  const int64_t group = std::clamp<int64_t>(262144 / std::max<int64_t>(1, in_plane), 1, planes);
  std::vector<float> xf(size_t(group * in_plane)), yf(size_t(group * out_plane));
  constexpr int64_t kChunk = 4096;
  for (int64_t p0 = 0; p0 < planes; p0 += group) {
    const int64_t np = std::min(group, planes - p0), nx = np * in_plane, ny = np * out_plane;
    const uint16_t* xs = reinterpret_cast<const uint16_t*>(x) + p0 * in_plane;
    ctx.parallel_for((nx + kChunk - 1) / kChunk, 1, [&](int64_t b, int64_t e) {
      const int64_t lo = b * kChunk, hi = std::min(nx, e * kChunk);
      vec::f16_to_f32(xs + lo, xf.data() + lo, hi - lo);
    });
    pool(p0, np, static_cast<const float*>(xf.data()), yf.data());
    uint16_t* yd = reinterpret_cast<uint16_t*>(y) + p0 * out_plane;
    ctx.parallel_for((ny + kChunk - 1) / kChunk, 1, [&](int64_t b, int64_t e) {
      const int64_t lo = b * kChunk, hi = std::min(ny, e * kChunk);
      vec::f32_to_f16(yf.data() + lo, yd + lo, hi - lo);
    });
  }
}

using MaxRowFn = void (*)(const float* const*, int64_t, float*);

// The vector row kernel for K x K windows with stride S (equal on both axes),
// or null.
inline MaxRowFn max_row_kernel(int64_t k, int64_t s) {
  if (k == 2 && s == 1) return max_row_inside<2, 1>;
  if (k == 2 && s == 2) return max_row_inside<2, 2>;
  if (k == 3 && s == 1) return fast::avx512() ? max_pool_row_3s1_f32 : max_row_inside<3, 1>;
  // GCC does not vectorize the stride-2 loads of the generic row; the
  // AVX-512 one splits even and odd columns with permutes.
  if (k == 3 && s == 2) return fast::avx512() ? max_pool_row_3s2_f32 : max_row_inside<3, 2>;
  return nullptr;
}

// Calls visit(plane, out_offset, taps_d, taps_h, taps_w) for every output
// position of every (n, c) plane, in parallel over planes.
template <class Visit>
void for_each_window(const sdk::Context& ctx, const Geometry& g, int64_t planes, Visit&& visit) {
  const int64_t work = g.out_size() * g.k_size();
  ctx.parallel_for(planes, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, work)), [&](int64_t pb, int64_t pe) {
    for (int64_t p = pb; p < pe; ++p) {
      int64_t o = 0;
      for (int64_t od = 0; od < g.out[0]; ++od) {
        Taps td = taps(od, g.s[0], g.pb[0], g.d[0], g.k[0], 0, g.in[0]);
        for (int64_t oh = 0; oh < g.out[1]; ++oh) {
          Taps th = taps(oh, g.s[1], g.pb[1], g.d[1], g.k[1], 0, g.in[1]);
          for (int64_t ow = 0; ow < g.out[2]; ++ow, ++o) {
            Taps tw = taps(ow, g.s[2], g.pb[2], g.d[2], g.k[2], 0, g.in[2]);
            visit(p, o, td, th, tw);
          }
        }
      }
    }
  });
}

// Shared by the three pools: attributes, shape checks, output allocation.
class PoolBase : public NodeKernel {
 public:
  explicit PoolBase(const sdk::Node& node) : NodeKernel(node), attrs_(node, *this) {
    if (attrs_.kernel_shape.empty()) fail("attribute kernel_shape is required");
    if (!attrs_.pads.empty() && attrs_.pads.size() != 2 * attrs_.kernel_shape.size())
      fail("attribute pads has " + std::to_string(attrs_.pads.size()) + " values, expected " +
           std::to_string(2 * attrs_.kernel_shape.size()));
  }

 protected:
  Geometry geometry(const sdk::Tensor& x) const {
    std::vector<int64_t> in = spatial_dims(x.shape(), "X", *this);
    return window_geometry(attrs_, in, attrs_.kernel_shape, *this);
  }
  static Shape out_shape(const sdk::Tensor& x, const Geometry& g) {
    Shape s{x.dim(0), x.dim(1)};
    for (int64_t d : g.out_dims()) s.push_back(d);
    return s;
  }

  WindowAttrs attrs_;
};

class MaxPool : public PoolBase {
 public:
  explicit MaxPool(const sdk::Node& node) : PoolBase(node) {
    int64_t order = node.attr_int("storage_order", 0);
    if (order != 0 && order != 1) fail("attribute storage_order must be 0 or 1, got " + std::to_string(order));
    column_major_ = order == 1;
    // Y in 16-channel blocks (passes/blocked_layout.cpp) from X in blocks,
    // or from a plain X where the blocked region starts at the pool.
    blocked_ = node.output_layout(0) == kBlocked16Layout;
    blocked_in_ = node.input_layout(0) == kBlocked16Layout;
    if (blocked_in_ && !blocked_) fail("X is in 16-channel blocks and Y plain: MaxPool writes blocks from blocks");
    if (blocked_ && node.num_outputs() > 1) fail("Indices are not available for Y in 16-channel blocks");
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "X");
    Geometry g = geometry(x);
    Shape ys = out_shape(x, g);
    sdk::Tensor y = ctx.output(0, ys, x.dl_dtype());
    if (blocked_) {
      if (x.dtype() != SINGA_ONNX_FLOAT || x.shape().size() != 4 || x.dim(1) % 16 != 0)
        fail("X in 16-channel blocks must be a 4-D float tensor whose channels are a multiple of 16, got " +
             shape_str(x.shape()));
      if (blocked_in_) {
        max_pool_blocked(ctx, g, ys[0] * ys[1] / 16, x.data<float>(), y.data<float>());
        return;
      }
      // A plain X: the NCHW pool into Y where it covers the geometry, then
      // each block of Y's 16 planes into blocks through a small buffer; else
      // X into blocks first.
      const int64_t n = ys[0], c = ys[1], out_plane = g.out[1] * g.out[2], in_plane = g.in[1] * g.in[2];
      if (g.in[0] == 1 && g.k[0] == 1 && g.d[1] == 1 && g.d[2] == 1) {
        float* yp = y.data<float>();
        max_pool_2d(ctx, g, n * c, x.data<float>(), yp, nullptr);
        ctx.parallel_for(n * c / 16, std::max<int64_t>(1, 4096 / (16 * out_plane)), [&](int64_t b, int64_t e) {
          std::vector<float> planes(size_t(16 * out_plane));
          for (int64_t blk = b; blk < e; ++blk) {
            float* at = yp + blk * 16 * out_plane;
            std::copy(at, at + 16 * out_plane, planes.begin());
            nchw_to_blocked16(planes.data(), at, 1, 16, out_plane);
          }
        });
      } else {
        float* tmp = static_cast<float*>(ctx.workspace(size_t(n * c * in_plane) * sizeof(float)));
        nchw_to_blocked16(x.data<float>(), tmp, n, c, in_plane);
        max_pool_blocked(ctx, g, n * c / 16, tmp, y.data<float>());
      }
      return;
    }
    sdk::Tensor idx;
    if (ctx.num_outputs() > 1) idx = ctx.output(1, ys, SINGA_ONNX_INT64);
    int64_t* pi = idx.present() ? idx.data<int64_t>() : nullptr;
    const int64_t in_size = g.in_size(), out_size = g.out_size(), H = g.in[1], W = g.in[2];
    const int64_t D = g.in[0];
    if ((!pi || !column_major_) && x.dtype() == SINGA_ONNX_FLOAT && D == 1 && g.k[0] == 1 && g.d[1] == 1 &&
        g.d[2] == 1) {
      max_pool_2d(ctx, g, ys[0] * ys[1], x.data<float>(), y.data<float>(), pi);
      return;
    }
    if ((!pi || !column_major_) && x.dtype() == SINGA_ONNX_FLOAT16 && D == 1 && g.k[0] == 1 && g.d[1] == 1 &&
        g.d[2] == 1) {
      pool_half_via_float(ctx, x.data<half>(), ys[0] * ys[1], in_size, y.data<half>(), out_size,
                          [&](int64_t p0, int64_t np, const float* xf, float* yf) {
                            // Indices count from the tensor's start (-1 stays: an all-padding window).
                            int64_t* ip = pi ? pi + p0 * out_size : nullptr;
                            max_pool_2d(ctx, g, np, xf, yf, ip);
                            if (ip)
                              for (int64_t i = 0; i < np * out_size; ++i) ip[i] += ip[i] >= 0 ? p0 * in_size : 0;
                          });
      return;
    }
    dispatch_among<float, double, half, bfloat16, int8_t, uint8_t>(x.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      using A = acc_t<T>;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      for_each_window(ctx, g, ys[0] * ys[1], [&](int64_t p, int64_t o, const Taps& td, const Taps& th, const Taps& tw) {
        const T* xp = px + p * in_size;
        bool found = false;
        A best = A(0);
        int64_t best_at = 0;
        for (int64_t kd = td.kb; kd < td.ke; ++kd)
          for (int64_t kh = th.kb; kh < th.ke; ++kh) {
            const int64_t row = (td.at(kd) * H + th.at(kh)) * W;
            for (int64_t kw = tw.kb; kw < tw.ke; ++kw) {
              const int64_t at = row + tw.at(kw);
              const A v = to_acc<A>(xp[at]);
              if (!found || v > best) {
                best = v;
                best_at = at;
                found = true;
              }
            }
          }
        // A window entirely in padding (only with pads >= kernel) yields the lowest value.
        py[p * out_size + o] = found ? from_acc<T>(best) : lowest<T>();
        if (pi) pi[p * out_size + o] = found ? p * in_size + flat_index(best_at, D, H, W) : -1;
      });
    });
  }

 private:
  friend void singa::nn::max_pool_2d_f32(const sdk::Context&, const Geometry&, int64_t, const float*, float*);

  template <class T>
  static T lowest() {
    if constexpr (std::is_integral<T>::value)
      return std::numeric_limits<T>::lowest();
    else
      return from_acc<T>(-std::numeric_limits<acc_t<T>>::infinity());
  }

  // The common case (float, 2-D, no dilation; row-major Indices if any): the
  // window bounds of every output row and column are worked out once per
  // call instead of per output element. Taps are visited in the generic
  // loop's order, so NaN propagates the same way and ties keep the first.
  static void max_pool_2d(const sdk::Context& ctx, const Geometry& g, int64_t planes, const float* x, float* y,
                          int64_t* idx) {
    const int64_t H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2];
    std::vector<Taps> rows, cols;
    for (int64_t oh = 0; oh < OH; ++oh) rows.push_back(taps(oh, g.s[1], g.pb[1], 1, g.k[1], 0, H));
    for (int64_t ow = 0; ow < OW; ++ow) cols.push_back(taps(ow, g.s[2], g.pb[2], 1, g.k[2], 0, W));
    const bool two_by_two = g.k[1] == 2 && g.k[2] == 2 && g.s[1] == 2 && g.s[2] == 2 && g.pb[1] == 0 && g.pb[2] == 0 &&
                            2 * OH <= H && 2 * OW <= W;
    const bool vector_2x2 = two_by_two && fast::avx512() && H * W < (int64_t(1) << 31);
    // Without Indices, square windows of 2 or 3 with stride 1 or 2: the
    // columns whose windows lie inside the plane, [ow_in0, ow_in1).
    const MaxRowFn vector_row = !idx && g.k[1] == g.k[2] && g.s[1] == g.s[2] ? max_row_kernel(g.k[1], g.s[1]) : nullptr;
    int64_t ow_in0 = 0, ow_in1 = 0;
    while (ow_in0 < OW && !(cols[size_t(ow_in0)].kb == 0 && cols[size_t(ow_in0)].ke == g.k[2])) ++ow_in0;
    ow_in1 = ow_in0;
    while (ow_in1 < OW && cols[size_t(ow_in1)].kb == 0 && cols[size_t(ow_in1)].ke == g.k[2]) ++ow_in1;
    const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, OH * OW * g.k[1] * g.k[2]));
    const int64_t wk[2] = {g.k[1], g.k[2]}, ws[2] = {g.s[1], g.s[2]}, wp[2] = {g.pb[1], g.pb[2]};
    if (!idx && fast::avx512() && max_pool_3s1_narrow_fits(H, W, OH, OW, wk, ws, wp)) {
      ctx.parallel_for(planes, grain, [&](int64_t pb, int64_t pe) {
        max_pool_3s1_narrow_f32(x + pb * H * W, pe - pb, H, W, y + pb * H * W);
      });
      return;
    }
    if (vector_row && replicate_fits(g) && (ow_in0 > 0 || ow_in1 < OW || g.pb[1] > 0 || (OH - 1) * g.s[1] + g.k[1] > H)) {
      max_pool_replicated(ctx, g, planes, grain, vector_row, x, y);
      return;
    }
    ctx.parallel_for(planes, grain, [&](int64_t pb, int64_t pe) {
      for (int64_t p = pb; p < pe; ++p) {
        const float* xp = x + p * H * W;
        float* yp = y + p * OH * OW;
        int64_t* ip = idx ? idx + p * OH * OW : nullptr;
        if (vector_2x2) {
          max_pool_2x2_f32(xp, W, OH, OW, p * H * W, yp, ip);
          continue;
        }
        if (two_by_two) {
          pool_2x2(xp, W, OH, OW, p * H * W, yp, ip);
          continue;
        }
        for (int64_t oh = 0; oh < OH; ++oh) {
          const Taps& th = rows[size_t(oh)];
          // Whole windows of this row go through the vector kernel; the
          // edge columns (and rows that touch the padding) take the loop.
          const bool row_inside = th.kb == 0 && th.ke == g.k[1];
          int64_t skip_from = -1;
          if (vector_row && row_inside && ow_in1 > ow_in0) {
            const float* r[3];
            for (int64_t kh = 0; kh < g.k[1]; ++kh) r[kh] = xp + (th.start + kh) * W + cols[size_t(ow_in0)].start;
            vector_row(r, ow_in1 - ow_in0, yp + oh * OW + ow_in0);
            skip_from = ow_in0;
          }
          for (int64_t ow = 0; ow < OW; ++ow) {
            if (ow == skip_from) ow = ow_in1;
            if (ow >= OW) break;
            const Taps& tw = cols[size_t(ow)];
            if (th.count() == 0 || tw.count() == 0) {
              yp[oh * OW + ow] = -std::numeric_limits<float>::infinity();
              if (ip) ip[oh * OW + ow] = -1;
              continue;
            }
            int64_t at = (th.start + th.kb) * W + tw.start + tw.kb;
            float best = xp[at];
            for (int64_t kh = th.kb; kh < th.ke; ++kh) {
              const int64_t r = (th.start + kh) * W + tw.start;
              for (int64_t kw = tw.kb; kw < tw.ke; ++kw)
                if (xp[r + kw] > best) best = xp[r + kw], at = r + kw;
            }
            yp[oh * OW + ow] = best;
            if (ip) ip[oh * OW + ow] = p * H * W + at;
          }
        }
      }
    });
  }

  // X and Y in [N][C/16][H][W][16]: one vector of 16 channels per pixel, so
  // a window is its taps' loads and maxima with no transposes. Work goes by
  // (block, output row); dilated windows and CPUs without AVX-512 take the
  // portable loop, which keeps the same first-tap / strictly-greater rule.
  static void max_pool_blocked(const sdk::Context& ctx, const Geometry& g, int64_t blocks, const float* x, float* y) {
    constexpr int64_t kL = 16;
    const int64_t H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2];
    const bool vector = fast::avx512() && g.d[1] == 1 && g.d[2] == 1;
    const int64_t grain = std::max<int64_t>(1, 2048 / std::max<int64_t>(1, OW * g.k[1] * g.k[2]));
    ctx.parallel_for(blocks * OH, grain, [&](int64_t b, int64_t e) {
      while (b < e) {
        const int64_t blk = b / OH, q0 = b % OH, q1 = std::min(OH, q0 + (e - b));
        const float* xp = x + blk * H * W * kL;
        float* yp = y + (blk * OH + q0) * OW * kL;
        if (vector) {
          max_pool_blocked16_f32(xp, 1, kL, H, 0, g, q0, q1, yp);
        } else {
          for (int64_t oh = q0; oh < q1; ++oh) {
            const Taps th = taps(oh, g.s[1], g.pb[1], g.d[1], g.k[1], 0, H);
            for (int64_t ow = 0; ow < OW; ++ow, yp += kL) {
              const Taps tw = taps(ow, g.s[2], g.pb[2], g.d[2], g.k[2], 0, W);
              float best[kL];
              std::fill(best, best + kL, -std::numeric_limits<float>::infinity());
              bool first = true;
              for (int64_t kh = th.kb; kh < th.ke; ++kh)
                for (int64_t kw = tw.kb; kw < tw.ke; ++kw) {
                  const float* v = xp + (th.at(kh) * W + tw.at(kw)) * kL;
                  for (int64_t l = 0; l < kL; ++l) best[l] = first || v[l] > best[l] ? v[l] : best[l];
                  first = false;
                }
              std::copy(best, best + kL, yp);
            }
          }
        }
        b += q1 - q0;
      }
    });
  }

  // Whether every window of g holds an input row and an input column: its
  // padding and any ceil_mode overhang are shorter than the window.
  static bool replicate_fits(const Geometry& g) {
    for (int i = 1; i < 3; ++i)
      if (g.pb[i] >= g.k[i] || g.pb[i] < 0 || (g.out[i] - 1) * g.s[i] - g.pb[i] >= g.in[i] || g.out[i] < 1)
        return false;
    return true;
  }

  // Windows that reach into the padding (Inception's 3x3 stride-1 "same"
  // pools, ceil_mode overhangs), without Indices: each plane is copied with
  // its edge rows and columns repeated outwards, then every output row goes
  // through the vector row kernel. A repeated edge value only repeats a tap
  // its window already holds (it comes next to the original, with nothing
  // between them in row-major order that it could displace), so the
  // strictly-greater rule gives what the scalar loop over the inside taps
  // gives, NaNs included; and the edges no longer take the scalar loop,
  // which on 7x7 to 28x28 planes cost more than the vector rows.
  static void max_pool_replicated(const sdk::Context& ctx, const Geometry& g, int64_t planes, int64_t grain,
                                  MaxRowFn row_fn, const float* x, float* y) {
    const int64_t H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2];
    const int64_t Hp = (OH - 1) * g.s[1] + g.k[1], Wp = (OW - 1) * g.s[2] + g.k[2];
    // The padded row's slice [c0, c1) holds input columns [0, W), clipped.
    const int64_t c0 = std::min(g.pb[2], Wp), c1 = std::min(Wp, g.pb[2] + W);
    // Stride 1: the padded plane is one long row whose window i is output
    // (i / Wp, i % Wp) (the last Wp - OW of each row straddle two rows and are
    // dropped): one call of the row kernel per plane instead of one per output
    // row, whose set-up dominated on 7- to 28-wide planes (GoogLeNet's
    // Inception pools). The last window read ends inside the buffer.
    const bool flat = g.s[1] == 1 && g.s[2] == 1;
    ctx.parallel_for(planes, grain, [&](int64_t pb, int64_t pe) {
      std::vector<float> buf(size_t(Hp * Wp)), rows(flat ? size_t(OH * Wp) : 0);
      const float* r[3];
      for (int64_t p = pb; p < pe; ++p) {
        const float* xp = x + p * H * W;
        for (int64_t i = 0; i < Hp; ++i) {
          const float* src = xp + std::clamp<int64_t>(i - g.pb[1], 0, H - 1) * W;
          float* dst = buf.data() + i * Wp;
          std::fill(dst, dst + c0, src[0]);
          std::copy(src + (c0 - g.pb[2]), src + (c1 - g.pb[2]), dst + c0);
          std::fill(dst + c1, dst + Wp, src[W - 1]);
        }
        if (flat) {
          for (int64_t kh = 0; kh < g.k[1]; ++kh) r[kh] = buf.data() + kh * Wp;
          row_fn(r, (OH - 1) * Wp + OW, rows.data());
          for (int64_t oh = 0; oh < OH; ++oh)
            std::copy(rows.data() + oh * Wp, rows.data() + oh * Wp + OW, y + p * OH * OW + oh * OW);
          continue;
        }
        for (int64_t oh = 0; oh < OH; ++oh) {
          for (int64_t kh = 0; kh < g.k[1]; ++kh) r[kh] = buf.data() + (oh * g.s[1] + kh) * Wp;
          row_fn(r, OW, y + p * OH * OW + oh * OW);
        }
      }
    });
  }

  // 2x2 windows with stride 2 and no padding (the usual downsampling), as
  // selects rather than branches: which tap wins is data-dependent.
  static void pool_2x2(const float* xp, int64_t W, int64_t OH, int64_t OW, int64_t base, float* yp, int64_t* ip) {
    for (int64_t oh = 0; oh < OH; ++oh) {
      const float* r0 = xp + 2 * oh * W;
      const float* r1 = r0 + W;
      for (int64_t ow = 0; ow < OW; ++ow) {
        const float a = r0[2 * ow], b = r0[2 * ow + 1], c = r1[2 * ow], d = r1[2 * ow + 1];
        float best = a;
        int64_t at = 0;
        at = b > best ? 1 : at, best = b > best ? b : best;
        at = c > best ? W : at, best = c > best ? c : best;
        at = d > best ? W + 1 : at, best = d > best ? d : best;
        yp[oh * OW + ow] = best;
        if (ip) ip[oh * OW + ow] = base + 2 * oh * W + 2 * ow + at;
      }
    }
  }

  // Position within the plane as the Indices output stores it.
  int64_t flat_index(int64_t row_major, int64_t D, int64_t H, int64_t W) const {
    if (!column_major_) return row_major;
    const int64_t iw = row_major % W, ih = (row_major / W) % H, id = row_major / (W * H);
    return id + ih * D + iw * D * H;
  }

  bool column_major_ = false;
  bool blocked_ = false, blocked_in_ = false;
};

class AveragePool : public PoolBase {
 public:
  explicit AveragePool(const sdk::Node& node)
      : PoolBase(node), count_include_pad_(node.attr_int("count_include_pad", 0) != 0) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "X");
    Geometry g = geometry(x);
    Shape ys = out_shape(x, g);
    sdk::Tensor y = ctx.output(0, ys, x.dl_dtype());
    const int64_t in_size = g.in_size(), out_size = g.out_size(), H = g.in[1], W = g.in[2];
    if (x.dtype() == SINGA_ONNX_FLOAT && g.in[0] == 1 && g.k[0] == 1 && g.out[0] == 1 && g.pb[0] == 0) {
      average_pool_2d(ctx, g, ys[0] * ys[1], x.data<float>(), y.data<float>());
      return;
    }
    if (x.dtype() == SINGA_ONNX_FLOAT16 && g.in[0] == 1 && g.k[0] == 1 && g.out[0] == 1 && g.pb[0] == 0) {
      pool_half_via_float(ctx, x.data<half>(), ys[0] * ys[1], in_size, y.data<half>(), out_size,
                          [&](int64_t, int64_t np, const float* xf, float* yf) { average_pool_2d(ctx, g, np, xf, yf); });
      return;
    }
    dispatch_real(x.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      using A = acc_t<T>;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      for_each_window(ctx, g, ys[0] * ys[1], [&](int64_t p, int64_t o, const Taps& td, const Taps& th, const Taps& tw) {
        const T* xp = px + p * in_size;
        A sum = A(0);
        for (int64_t kd = td.kb; kd < td.ke; ++kd)
          for (int64_t kh = th.kb; kh < th.ke; ++kh) {
            const T* row = xp + (td.at(kd) * H + th.at(kh)) * W;
            for (int64_t kw = tw.kb; kw < tw.ke; ++kw) sum += to_acc<A>(row[tw.at(kw)]);
          }
        int64_t count = td.count() * th.count() * tw.count();
        if (count_include_pad_) count = padded_count(g, td, th, tw);
        py[p * out_size + o] = from_acc<T>(count > 0 ? sum / A(count) : A(0));
      });
    });
  }

 private:
  // Float 1-D and 2-D windows (avg_pool_2d_f32.hpp), in parallel over the
  // output rows of all planes, so that a single large plane splits too.
  void average_pool_2d(const sdk::Context& ctx, const Geometry& g, int64_t planes, const float* x, float* y) const {
    const PoolAxis h = pool_axis(g.in[1], g.out[1], g.k[1], g.s[1], g.d[1], g.pb[1], g.pe[1], count_include_pad_);
    const PoolAxis w = pool_axis(g.in[2], g.out[2], g.k[2], g.s[2], g.d[2], g.pb[2], g.pe[2], count_include_pad_);
    const int64_t OH = h.out, OW = w.out, rows = planes * OH;
    // Whole 2x2/2 windows (no padding, no overhang): one flat loop per plane.
    bool two_by_two = 2 * OH <= g.in[1] && 2 * OW <= g.in[2];
    for (int i = 1; i < 3; ++i)
      two_by_two = two_by_two && g.k[i] == 2 && g.s[i] == 2 && g.d[i] == 1 && g.pb[i] == 0 && g.pe[i] == 0;
    if (two_by_two) {
      const int64_t in = g.in[1] * g.in[2];
      ctx.parallel_for(planes, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, in)), [&](int64_t b, int64_t e) {
        for (int64_t p = b; p < e; ++p) avg_pool_2x2_plane_f32(x + p * in, g.in[2], OH, OW, y + p * OH * OW);
      });
      return;
    }
    const int64_t per_row = std::max<int64_t>(1, (g.k[1] + 1) * g.in[2] + g.k[2] * OW);
    ctx.parallel_for(rows, std::max<int64_t>(1, 16384 / per_row), [&](int64_t b, int64_t e) {
      std::vector<float> buf(size_t(avg_pool_buffer_size(w)));
      for (int64_t r = b; r < e; ++r) {
        const int64_t p = r / OH, oh = r % OH;
        avg_pool_row_f32(x + p * h.in * w.in, h, w, oh, buf.data(), y + p * OH * OW + oh * OW);
      }
    });
  }

  // Taps inside the padded extent [-pad_begin, in + pad_end): padding counts,
  // but a ceil_mode window hanging past the end padding does not.
  static int64_t padded_count(const Geometry& g, const Taps& td, const Taps& th, const Taps& tw) {
    const Taps* t[3] = {&td, &th, &tw};
    int64_t n = 1;
    for (int j = 0; j < kMaxSpatial; ++j) {
      int64_t o = (t[j]->start + g.pb[j]) / g.s[j];
      n *= taps(o, g.s[j], g.pb[j], g.d[j], g.k[j], -g.pb[j], g.in[j] + g.pe[j]).count();
    }
    return n;
  }

  bool count_include_pad_;
};

class LpPool : public PoolBase {
 public:
  explicit LpPool(const sdk::Node& node) : PoolBase(node) {
    // p is a float before opset 2 and an int after.
    p_ = double(node.attr_int("p", int64_t(node.attr_float("p", 2.0f))));
    if (!(p_ > 0)) fail("attribute p must be positive, got " + std::to_string(p_));
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "X");
    Geometry g = geometry(x);
    Shape ys = out_shape(x, g);
    sdk::Tensor y = ctx.output(0, ys, x.dl_dtype());
    const int64_t in_size = g.in_size(), out_size = g.out_size(), H = g.in[1], W = g.in[2];
    dispatch_real(x.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      using A = acc_t<T>;
      const A p = A(p_);
      const T* px = x.data<T>();
      T* py = y.data<T>();
      for_each_window(ctx, g, ys[0] * ys[1], [&](int64_t pl, int64_t o, const Taps& td, const Taps& th, const Taps& tw) {
        const T* xp = px + pl * in_size;
        A sum = A(0);
        for (int64_t kd = td.kb; kd < td.ke; ++kd)
          for (int64_t kh = th.kb; kh < th.ke; ++kh) {
            const T* row = xp + (td.at(kd) * H + th.at(kh)) * W;
            for (int64_t kw = tw.kb; kw < tw.ke; ++kw) sum += lp_term(to_acc<A>(row[tw.at(kw)]), p);
          }
        py[pl * out_size + o] = from_acc<T>(lp_root(sum, p));
      });
    });
  }

  template <class A>
  static A lp_term(A v, A p) {
    if (p == A(2)) return v * v;
    if (p == A(1)) return std::abs(v);
    return std::pow(std::abs(v), p);
  }
  template <class A>
  static A lp_root(A s, A p) {
    if (p == A(2)) return std::sqrt(s);
    if (p == A(1)) return s;
    return std::pow(s, A(1) / p);
  }

 private:
  double p_ = 2;
};

}  // namespace

void max_pool_2d_f32(const sdk::Context& ctx, const Geometry& g, int64_t planes, const float* x, float* y) {
  MaxPool::max_pool_2d(ctx, g, planes, x, y, nullptr);
}

void register_pool(sdk::Registrar& reg) {
  const uint64_t f = sdk::kFloatTypes;
  const uint64_t f8 = f | bit(SINGA_ONNX_INT8) | bit(SINGA_ONNX_UINT8);
  // MaxPool: 8 adds Indices and storage_order, 10 ceil_mode and dilations,
  // 11 changes pads' defaults, 12 adds 8-bit integers. Every version reads
  // and writes float 16-channel blocks as well.
  const std::initializer_list<sdk::LayoutAccept> blocked = {{0, kBlocked16Layout}, {-1, kBlocked16Layout}};
  reg.kernel<MaxPool>("", "MaxPool", 1, 7, "cpu", {{"T", 0, f}}, blocked);
  reg.kernel<MaxPool>("", "MaxPool", 8, 9, "cpu", {{"T", 0, f}}, blocked);
  reg.kernel<MaxPool>("", "MaxPool", 10, 10, "cpu", {{"T", 0, f}}, blocked);
  reg.kernel<MaxPool>("", "MaxPool", 11, 11, "cpu", {{"T", 0, f}}, blocked);
  reg.kernel<MaxPool>("", "MaxPool", 12, SINGA_VERSION_OPEN, "cpu", {{"T", 0, f8}}, blocked);
  // AveragePool: 7 adds count_include_pad, 10 ceil_mode.
  reg.kernel<AveragePool>("", "AveragePool", 1, 6, "cpu", {{"T", 0, f}});
  reg.kernel<AveragePool>("", "AveragePool", 7, 9, "cpu", {{"T", 0, f}});
  reg.kernel<AveragePool>("", "AveragePool", 10, 10, "cpu", {{"T", 0, f}});
  reg.kernel<AveragePool>("", "AveragePool", 11, SINGA_VERSION_OPEN, "cpu", {{"T", 0, f}});
  // LpPool: p is a float in 1, an int from 2.
  reg.kernel<LpPool>("", "LpPool", 1, 1, "cpu", {{"T", 0, f}});
  reg.kernel<LpPool>("", "LpPool", 2, 10, "cpu", {{"T", 0, f}});
  reg.kernel<LpPool>("", "LpPool", 11, SINGA_VERSION_OPEN, "cpu", {{"T", 0, f}});
  // LpPool-18 adds ceil_mode and dilations, AveragePool-19 dilations (the
  // window geometry above has both); opset 22 adds bfloat16 to all three.
  const uint64_t r = kRealTypes;
  reg.kernel<LpPool>("", "LpPool", 18, 18, "cpu", {{"T", 0, f}});
  reg.kernel<AveragePool>("", "AveragePool", 19, 19, "cpu", {{"T", 0, f}});
  reg.kernel<MaxPool>("", "MaxPool", 22, SINGA_VERSION_OPEN, "cpu", {{"T", 0, f8 | bit(SINGA_ONNX_BFLOAT16)}}, blocked);
  reg.kernel<AveragePool>("", "AveragePool", 22, SINGA_VERSION_OPEN, "cpu", {{"T", 0, r}});
  reg.kernel<LpPool>("", "LpPool", 22, SINGA_VERSION_OPEN, "cpu", {{"T", 0, r}});
}

}  // namespace nn
}  // namespace singa
