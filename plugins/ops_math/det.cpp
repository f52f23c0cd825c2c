// det.cpp - Det (opsets 11-17): the determinant of each square matrix of a
// [*, M, M] batch, by LU factorisation with partial pivoting (in double, so
// float and float16 inputs lose nothing to the elimination).
#include <cmath>
#include <utility>
#include <vector>

#include "math_common.hpp"
#include "registry.hpp"

namespace singa {
namespace ops {
namespace math {
namespace {

constexpr uint64_t kDetTypes = kFloatLike;

// Destroys a (row-major m x m): it holds the LU factors afterwards.
double lu_determinant(double* a, int64_t m) {
  double det = 1.0;
  for (int64_t c = 0; c < m; ++c) {
    int64_t p = c;
    double best = std::fabs(a[c * m + c]);
    for (int64_t r = c + 1; r < m; ++r) {
      const double v = std::fabs(a[r * m + c]);
      if (v > best) best = v, p = r;
    }
    if (best == 0.0) return 0.0;  // singular: a whole column below the diagonal is zero
    if (p != c) {
      for (int64_t j = 0; j < m; ++j) std::swap(a[c * m + j], a[p * m + j]);
      det = -det;
    }
    const double pivot = a[c * m + c];
    det *= pivot;
    for (int64_t r = c + 1; r < m; ++r) {
      const double f = a[r * m + c] / pivot;
      if (f == 0.0) continue;
      for (int64_t j = c + 1; j < m; ++j) a[r * m + j] -= f * a[c * m + j];
    }
  }
  return det;
}

class Det {
 public:
  explicit Det(const sdk::Node&) {}

  void compute(sdk::Context& ctx) const {
    const sdk::Tensor x = ctx.input(0);
    const int r = x.ndim();
    const Shape in_shape = x.shape();
    if (r < 2) sdk::fail("input must have rank >= 2 ([*, M, M]), got rank " + std::to_string(r));
    const int64_t m = x.dim(-1);
    if (x.dim(-2) != m) sdk::fail("input matrices must be square, got shape " + shape_str(in_shape));
    const Shape out_shape(in_shape.begin(), in_shape.end() - 2);
    sdk::Tensor y = ctx.output(0, out_shape, x.dl_dtype());
    const int64_t batch = sdk::numel(out_shape);
    sdk::dispatch(
        x.dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          if constexpr (in_mask<T>(kDetTypes)) {
            const T* in = x.data<T>();
            T* out = y.data<T>();
            const int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(1, m * m * m));
            ctx.parallel_for(batch, grain, [&](int64_t b, int64_t e) {
              std::vector<double> a(size_t(m * m));
              for (int64_t i = b; i < e; ++i) {
                const T* src = in + i * m * m;
                for (int64_t j = 0; j < m * m; ++j) a[size_t(j)] = double(compute_t<T>(src[j]));
                out[i] = convert<T>(lu_determinant(a.data(), m));
              }
            });
          }
        },
        kDetTypes);
  }
};

}  // namespace

// Det-22 added bfloat16.
void register_det(sdk::Registrar& reg) {
  reg.kernel<Det>("", "Det", 11, SINGA_VERSION_OPEN, "cpu", {{"T", 0, sdk::kFloatTypes}});
  reg.kernel<Det>("", "Det", 22, SINGA_VERSION_OPEN, "cpu", {{"T", 0, kDetTypes}});
}

}  // namespace math
}  // namespace ops
}  // namespace singa
