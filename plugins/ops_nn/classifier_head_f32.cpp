#include "classifier_head_f32.hpp"

#include <dnnl_sgemm.hpp>

#include <algorithm>

namespace singa {
namespace nn {

void classifier_head_f32(const sdk::Context& ctx, const float* means, int64_t N, int64_t M, const float* w,
                         bool trans_b, int64_t outputs, const float* bias, float* y) {
  if (N == 0 || outputs == 0) return;
  if (M == 0)  // no means to sum (ops::sgemm needs K > 0)
    std::fill(y, y + N * outputs, 0.f);
  else
    ops::sgemm(ctx, false, trans_b, N, outputs, M, 1.f, means, M, w, trans_b ? M : outputs, 0.f, y, outputs);
  if (!bias) return;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < outputs; ++o) y[n * outputs + o] += bias[o];
}

}  // namespace nn
}  // namespace singa
