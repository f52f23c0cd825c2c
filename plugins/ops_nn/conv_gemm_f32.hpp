// conv_gemm_f32.hpp - float Conv through fast::sgemm (plugins/common), the
// path every float Conv takes on AVX-512 CPUs when oneDNN was not planned at
// create time (as on the eager training path, where the input shape is open).
// One image and group per task: unfold its windows (unfold_f32.hpp, AVX-512
// like fast::sgemm's tiles, so this runs only where fast::avx512()), then
// Y_g = W_g cols + bias in one product; 1x1 stride-1 unpadded kernels
// multiply the input itself.
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

inline void conv_gemm_f32(const sdk::Context& ctx, const float* x, const float* w, const float* bias, float* y,
                          const Geometry& g, int64_t N, int64_t C, int64_t M, int64_t Cg, int64_t group) {
  const int64_t Mg = M / group, in_size = g.in_size(), P = g.out_size(), K = Cg * g.k_size();
  bool pointwise = g.k_size() == 1 && g.no_padding();
  for (int i = 0; i < kMaxSpatial; ++i) pointwise = pointwise && g.s[i] == 1;
  const int64_t chunk = pointwise ? P : unfold_chunk(g, K, kGemmColBudget);
  ctx.parallel_for(N * group, 1, [&](int64_t b, int64_t e) {
    thread_local std::vector<float> col;
    if (!pointwise && col.size() < size_t(K * chunk)) col.resize(size_t(K * chunk));
    for (int64_t t = b; t < e; ++t) {
      const int64_t n = t / group, gi = t % group;
      const float* xg = x + (n * C + gi * Cg) * in_size;
      float* yg = y + (n * M + gi * Mg) * P;
      fast::Out out;
      out.row_bias = bias ? bias + gi * Mg : nullptr;
      for (int64_t p0 = 0; p0 < P; p0 += chunk) {
        const int64_t cols = std::min(chunk, P - p0);
        if (pointwise) {
          fast::sgemm(false, false, Mg, cols, K, w + gi * Mg * K, K, xg + p0, in_size, yg + p0, P, out);
        } else {
          im2col_f32(xg, g, Cg, p0, cols, col.data());
          fast::sgemm(false, false, Mg, cols, K, w + gi * Mg * K, K, col.data(), cols, yg + p0, P, out);
        }
      }
    }
  });
}

}  // namespace nn
}  // namespace singa
#endif
