#include "conv_grad_f32.hpp"

#include <sgemm.hpp>
#include <unfold_f32.hpp>
#include <vec_math.hpp>

#include <algorithm>
#include <mutex>
#include <vector>

namespace singa {
namespace grad {
namespace {

using nn::Geometry;

// Output positions per image from which dW takes the dot-product form: its
// sums are reduced once per tile, which needs long rows to pay off.
constexpr int64_t kLongImage = 256;
constexpr int64_t kColBudget = int64_t(1) << 20;  // floats in a task's unfolding buffer

// db[m] = sum over images and positions of dY, when nothing else walks dY.
void bias_grad(const sdk::Context& ctx, const float* dy, float* db, int64_t N, int64_t M, int64_t P) {
  ctx.parallel_for(M, 1, [&](int64_t b, int64_t e) {
    for (int64_t m = b; m < e; ++m) {
      double total = 0;
      for (int64_t n = 0; n < N; ++n) total += double(vec::lane_sum(dy + (n * M + m) * P, P));
      db[m] = float(total);
    }
  });
}

}  // namespace

void conv_grad_f32(const sdk::Context& ctx, const DyImages& dy, const float* x, const float* w, float* dx, float* dw,
                   float* db, const Geometry& g, int64_t N, int64_t C, int64_t M, int64_t Cg, int64_t group) {
  const int64_t Mg = M / group, P = g.out_size(), ks = g.k_size(), K = Cg * ks, in_size = g.in_size();
  if (!dx && !dw) {
    if (!db) return;
    if (dy.dense) {
      bias_grad(ctx, dy.dense, db, N, M, P);
      return;
    }
    std::vector<float> all(size_t(N * M * P));
    ctx.parallel_for(N, 1, [&](int64_t b, int64_t e) {
      for (int64_t n = b; n < e; ++n) dy.fill(n, all.data() + n * M * P);
    });
    bias_grad(ctx, all.data(), db, N, M, P);
    return;
  }
  const bool by_rows = dw && P < kLongImage;
  const int64_t chunk = nn::unfold_chunk(g, K, kColBudget);
  const int64_t units = N * group;
  // A few tasks per thread balance a busy machine; each sums its own dW and
  // dB (dB while each image's dY is in cache anyway).
  const int64_t tasks = std::min<int64_t>(units, 4 * std::max(1, ctx.num_threads()));
  if (dw) std::fill(dw, dw + M * K, 0.f);
  std::vector<double> bias(db ? size_t(M) : 0, 0.0);
  std::mutex mu;
  ctx.parallel_for(tasks, 1, [&](int64_t tb, int64_t te) {
    thread_local std::vector<float> col, rows, xt, dy_image;
    col.resize(std::max(col.size(), size_t(K * chunk)));
    if (!dy.dense) dy_image.resize(std::max(dy_image.size(), size_t(M * P)));
    int64_t filled = -1;  // the image whose dY is in dy_image
    if (by_rows) {
      rows.resize(std::max(rows.size(), size_t(K * chunk)));
      xt.resize(std::max(xt.size(), size_t(K > 0 ? in_size * Cg : 0)));
    }
    for (int64_t task = tb; task < te; ++task) {
      std::vector<float> local(dw ? size_t(M * K) : 0, 0.f);
      std::vector<double> local_db(db ? size_t(M) : 0, 0.0);
      for (int64_t u = units * task / tasks; u < units * (task + 1) / tasks; ++u) {
        const int64_t n = u / group, gi = u % group;
        const float* xg = x + (n * C + gi * Cg) * in_size;
        if (!dy.dense && filled != n) dy.fill(n, dy_image.data()), filled = n;
        const float* dyg = (dy.dense ? dy.dense + n * M * P : dy_image.data()) + gi * Mg * P;
        const float* wg = w + gi * Mg * K;
        float* dxg = dx ? dx + (n * C + gi * Cg) * in_size : nullptr;
        float* dwg = dw ? local.data() + gi * Mg * K : nullptr;
        if (dxg) std::fill(dxg, dxg + Cg * in_size, 0.f);
        if (db)
          for (int64_t m = 0; m < Mg; ++m) local_db[size_t(gi * Mg + m)] += double(vec::lane_sum(dyg + m * P, P));
        if (by_rows) nn::to_channels_last_f32(xg, Cg, in_size, xt.data());
        fast::Out acc;
        acc.beta = 1;
        for (int64_t p0 = 0; p0 < P; p0 += chunk) {
          const int64_t cols = std::min(chunk, P - p0);
          if (dwg && by_rows) {
            nn::im2row_f32(xt.data(), g, Cg, p0, cols, rows.data());
            fast::sgemm(false, false, Mg, K, cols, dyg + p0, P, rows.data(), K, dwg, K, acc);
          } else if (dwg) {
            nn::im2col_f32(xg, g, Cg, p0, cols, col.data());
            fast::sgemm(false, true, Mg, K, cols, dyg + p0, P, col.data(), cols, dwg, K, acc);
          }
          if (dxg) {
            fast::sgemm(true, false, K, cols, Mg, wg, K, dyg + p0, P, col.data(), cols);
            nn::col2im_add_f32(col.data(), g, Cg, p0, cols, dxg);
          }
        }
      }
      std::lock_guard<std::mutex> lock(mu);
      for (size_t m = 0; m < local_db.size(); ++m) bias[m] += local_db[m];
      if (!dw) continue;
      if (!by_rows) {
        for (size_t i = 0; i < local.size(); ++i) dw[i] += local[i];
        continue;
      }
      // local holds each row's taps as (kd, kh, kw, channel).
      for (int64_t m = 0; m < M; ++m)
        for (int64_t c = 0; c < Cg; ++c)
          for (int64_t k = 0; k < ks; ++k) dw[m * K + c * ks + k] += local[size_t(m * K + k * Cg + c)];
    }
  });
  for (int64_t m = 0; m < (db ? M : 0); ++m) db[m] = float(bias[size_t(m)]);
}

}  // namespace grad
}  // namespace singa
