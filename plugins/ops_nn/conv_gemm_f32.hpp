// conv_gemm_f32.hpp - float Conv through fast::sgemm (plugins/common), the
// path every float Conv takes on AVX-512 CPUs when oneDNN was not planned at
// create time (as on the eager training path, where the input shape is open).
// Per image and group: unfold its windows (unfold_f32.hpp, AVX-512 like
// fast::sgemm's tiles, so this runs only where fast::avx512()), then
// Y_g = W_g cols + bias in one product; 1x1 stride-1 unpadded kernels
// multiply the input itself. conv_gemm_image_f32 is one image, serial, for
// callers that do more with its output while it is in cache.
#ifndef SINGA_OPS_NN_CONV_GEMM_F32_HPP
#define SINGA_OPS_NN_CONV_GEMM_F32_HPP

#include "sgemm.hpp"
#include "spatial.hpp"
#include "unfold_f32.hpp"

#include <algorithm>
#include <vector>

namespace singa {
namespace nn {

// Bounds a task's column buffer (floats) for large images.
constexpr int64_t kGemmColBudget = int64_t(1) << 20;

// Whether Y_g = W_g X_g needs no unfolding (1x1, stride 1, unpadded).
inline bool conv_gemm_pointwise(const Geometry& g) {
  bool pointwise = g.k_size() == 1 && g.no_padding();
  for (int i = 0; i < kMaxSpatial; ++i) pointwise = pointwise && g.s[i] == 1;
  return pointwise;
}

// Floats of the column buffer conv_gemm_image_f32 needs (0 for pointwise).
inline int64_t conv_gemm_col_floats(const Geometry& g, int64_t Cg) {
  const int64_t K = Cg * g.k_size();
  return conv_gemm_pointwise(g) ? 0 : K * unfold_chunk(g, K, kGemmColBudget);
}

// One image, serial: x its C input planes, y its M output planes; col holds
// conv_gemm_col_floats() floats.
inline void conv_gemm_image_f32(const float* x, const float* w, const float* bias, float* y, const Geometry& g,
                                int64_t C, int64_t M, int64_t Cg, int64_t group, float* col) {
  const int64_t Mg = M / group, in_size = g.in_size(), P = g.out_size(), K = Cg * g.k_size();
  const bool pointwise = conv_gemm_pointwise(g);
  const int64_t chunk = pointwise ? P : unfold_chunk(g, K, kGemmColBudget);
  for (int64_t gi = 0; gi < group; ++gi) {
    const float* xg = x + gi * Cg * in_size;
    float* yg = y + gi * Mg * P;
    fast::Out out;
    out.row_bias = bias ? bias + gi * Mg : nullptr;
    for (int64_t p0 = 0; p0 < P; p0 += chunk) {
      const int64_t cols = std::min(chunk, P - p0);
      if (pointwise) {
        fast::sgemm(false, false, Mg, cols, K, w + gi * Mg * K, K, xg + p0, in_size, yg + p0, P, out);
      } else {
        im2col_f32(xg, g, Cg, p0, cols, col);
        fast::sgemm(false, false, Mg, cols, K, w + gi * Mg * K, K, col, cols, yg + p0, P, out);
      }
    }
  }
}

// Row blocks per (image, group) task: a single image of one group (a 1-D
// conv such as an audio front end's 400-tap filter bank) would otherwise
// keep every thread but one idle. Each block unfolds the columns itself,
// which costs K * P copies against its Mg / parts * K * P multiply-adds, so
// the rows split only in whole 16-row tiles and only for products big
// enough to pay for waking the pool.
inline int64_t conv_gemm_row_parts(const sdk::Context& ctx, int64_t tasks, int64_t Mg, int64_t K, int64_t P) {
  const int64_t threads = ctx.num_threads();
  if (tasks >= threads || Mg * K * P < (int64_t(1) << 20)) return 1;
  return std::clamp<int64_t>((threads + tasks - 1) / tasks, 1, std::max<int64_t>(1, Mg / 16));
}

inline void conv_gemm_f32(const sdk::Context& ctx, const float* x, const float* w, const float* bias, float* y,
                          const Geometry& g, int64_t N, int64_t C, int64_t M, int64_t Cg, int64_t group) {
  const int64_t P = g.out_size(), in_size = g.in_size(), col_floats = conv_gemm_col_floats(g, Cg);
  const int64_t Mg = M / group, K = Cg * g.k_size();
  const int64_t parts = conv_gemm_row_parts(ctx, N * group, Mg, K, P);
  // Tasks of single groups when an image has several, so that grouped convs
  // of a small batch still spread over the pool.
  ctx.parallel_for(N * group * parts, 1, [&](int64_t b, int64_t e) {
    thread_local std::vector<float> col;
    if (col.size() < size_t(col_floats)) col.resize(size_t(col_floats));
    for (int64_t t = b; t < e; ++t) {
      const int64_t n = t / (group * parts), gi = t / parts % group, part = t % parts;
      // Rows [m0, m1) of the group, on 16-row boundaries.
      const int64_t tiles = (Mg + 15) / 16;
      const int64_t m0 = std::min(Mg, tiles * part / parts * 16), m1 = std::min(Mg, tiles * (part + 1) / parts * 16);
      if (m1 <= m0) continue;
      const int64_t m = gi * Mg + m0;
      conv_gemm_image_f32(x + (n * C + gi * Cg) * in_size, w + m * K, bias ? bias + m : nullptr, y + (n * M + m) * P,
                          g, Cg, m1 - m0, Cg, 1, col.data());
    }
  });
}

}  // namespace nn
}  // namespace singa
#endif
