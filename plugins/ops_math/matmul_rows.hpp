// matmul_rows.hpp - float products of a few rows (at most 8) by a constant B:
// a decoder step's projections, a classifier's last Linear, short sequences.
//
// Such a product does a handful of multiply-adds per weight it reads, so it
// runs as fast as B streams from memory. oneDNN's matmul primitive splits
// rows across threads, so with one row one thread streams all of B while
// the others idle. Here B is packed once into panels of 64 columns
// ([panel][K][64], alpha folded in) and the panels are split over the pool:
// each thread streams its own columns, and one thread reads each panel as one
// contiguous run.
#ifndef SINGA_OPS_MATH_MATMUL_ROWS_HPP
#define SINGA_OPS_MATH_MATMUL_ROWS_HPP

#include "matmul_dnnl.hpp"

#include <singa/kernel.hpp>

#include <cstdint>
#include <memory>

namespace singa {
namespace ops {
namespace math {

class RowsMatMul {
 public:
  static constexpr int64_t kMaxRows = 8;

  // Y [rows, N] = alpha A [rows, K] B + bias, then the epilogue. B is [K, N]
  // ([N, K] when trans_b) and read only here; bias is [N] or null (copied).
  // Null when the CPU lacks AVX-512 (or option cpu.avx512 is 0), when rows
  // is outside 1..kMaxRows, or for an empty product.
  static std::unique_ptr<RowsMatMul> plan(int64_t rows, int64_t K, int64_t N, const float* b, bool trans_b,
                                          const float* bias, float alpha, MatMulEpilogue epilogue = MatMulEpilogue());
  ~RowsMatMul();
  int64_t rows() const;
  // a [rows, K] and y [rows, N] row-major; z [rows, N] when the epilogue has
  // a residual, else ignored.
  void run(const sdk::Context& ctx, const float* a, float* y, const float* z = nullptr) const;
  struct State;  // opaque outside matmul_rows.cpp

 private:
  RowsMatMul() = default;
  std::unique_ptr<State> s_;
};

}  // namespace math
}  // namespace ops
}  // namespace singa
#endif
