// qmatmul_amx.hpp - the raw u8 x s8 sums of the int8 matmuls on oneDNN's
// AMX-INT8 brgemm code, for CPUs that have it.
//
// Only the exact int32 sums come from oneDNN; the zero-point corrections,
// scales, bias and output quantization stay in qmatmul_vnni.cpp's epilogue,
// so both kernels give the same bits. A constant B is reordered into
// oneDNN's layout once, on its first product of 32 or more rows (a model
// that only multiplies a few rows keeps no second copy); A goes in as parts
// of a few dozen rows, each part's sums landing in a per-thread buffer that
// stays in cache for the epilogue.
#ifndef SINGA_OPS_MATH_QMATMUL_AMX_HPP
#define SINGA_OPS_MATH_QMATMUL_AMX_HPP

#include <cstdint>
#include <memory>
#include <vector>

namespace singa {
namespace ops {
namespace math {

// True when oneDNN runs AMX-INT8 code on this CPU (and the OS allows it).
bool amx_int8_available();

class AmxB8 {
 public:
  // B as s8 [K, N], row-major (taken over); null when oneDNN has no AMX
  // code for the product.
  static std::shared_ptr<AmxB8> plan(std::vector<int8_t> b, int64_t K, int64_t N);
  ~AmxB8();
  // acc [rows, N] (row stride N) = the exact sums of rows x K u8 A (row
  // stride lda) times B. Runs on the calling thread; false (acc untouched)
  // when oneDNN refuses the part's shape.
  bool product(int64_t rows, const uint8_t* a, int64_t lda, int32_t* acc) const;
  struct State;  // opaque outside qmatmul_amx.cpp

 private:
  AmxB8() = default;
  std::unique_ptr<State> s_;
};

}  // namespace math
}  // namespace ops
}  // namespace singa
#endif
