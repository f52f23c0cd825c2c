// matmul_dnnl.hpp - float MatMul with a constant 2-D B through oneDNN's matmul
// primitive, planned once for A's shape (a transformer's projections).
//
// The MatMul kernel otherwise calls oneDNN's sgemm, which repacks B on every
// call. The primitive packs B once into its brgemm layout, adds the bias row
// (the MatMul+Add pass's third input) and the scale (the MatMul-scale pass's
// alpha) itself, and ran a BERT encoder's shapes 2-14% faster in a
// micro-benchmark at 1 thread (128x256x1024: 290 -> 254 us, 64 rows a part:
// 142 -> 123 us). At N threads the rows of A split into N parts, one
// primitive each, or B's columns where B outweighs A and Y (few rows, see
// column_parts in matmul_dnnl.cpp); every plan shares one packed copy of B
// when the layouts agree (a copy per plan took a BERT encoder's peak RSS
// from 54 to 92 MiB).
#ifndef SINGA_OPS_MATH_MATMUL_DNNL_HPP
#define SINGA_OPS_MATH_MATMUL_DNNL_HPP

#include <singa/kernel.hpp>

#include "fused_activation.hpp"

#include <memory>

namespace singa {
namespace ops {
namespace math {

// What comes after A B + bias, in this order (passes/fuse_matmul_epilogue.cpp):
// GELU (approximate "none") or one of fused_activation.hpp's activations
// (SiLU, ...), then a residual Z of the output's shape added. Each part
// applies it to its own rows (matmul_dnnl.cpp says how).
struct MatMulEpilogue {
  bool gelu = false;
  FusedActivation act;
  bool residual = false;
  bool activates() const { return gelu || act.kind != FusedActivation::kNone; }
};

// The epilogue over n floats of Y already holding A B + bias: the GELU or
// activation, then Z added when z is not null. For the rows no oneDNN
// post-op covered (matmul_dnnl.cpp's activations, the sgemm path's all).
void epilogue_pass(const MatMulEpilogue& e, float* y, const float* z, int64_t n);

class DnnlMatMul {
 public:
  // A is [..., M, K] (rows = the product of its leading dims times M), B
  // [K, N] ([N, K] when trans_b; read here and on the first run at each
  // thread count, not kept) and bias [N] or null (copied). Null when oneDNN
  // has no brgemm code for the shape.
  static std::unique_ptr<DnnlMatMul> plan(const sdk::Shape& a, int64_t N, const float* b, const float* bias,
                                          float alpha, MatMulEpilogue epilogue = MatMulEpilogue(),
                                          bool trans_b = false);
  ~DnnlMatMul();
  const sdk::Shape& a_shape() const;
  // a of a_shape(), b the B of plan(), y [rows, N]; z [rows, N] when the
  // epilogue has a residual, else ignored.
  void run(const sdk::Context& ctx, const float* a, const float* b, float* y, const float* z = nullptr) const;
  struct State;  // opaque outside matmul_dnnl.cpp

 private:
  DnnlMatMul() = default;
  std::unique_ptr<State> s_;
};

}  // namespace math
}  // namespace ops
}  // namespace singa
#endif
