// qmatmul_vnni.hpp - the int8 matrix product behind MatMulInteger,
// QLinearMatMul and the QDQ MatMul fusion: u8 A times s8 B accumulated in
// int32 with AVX-512 VNNI (vpdpbusd), B packed once into column panels.
//
// Every operand is brought to "u8 times s8" by exact shifts: a signed A is
// read as A + 128 (its zero point moves by 128), an unsigned B is stored as
// B - 128 (its zero point moves by -128). The zero points are then taken out
// of the raw sum with row and column sums,
//   sum_k (a - za)(b - zb) = sum a b - za colsum(b) - zb rowsum(a) + K za zb,
// all in wrapping 32-bit arithmetic, so the result equals the integer
// reference bit for bit whenever that reference's own int32 sum does.
#ifndef SINGA_OPS_MATH_QMATMUL_VNNI_HPP
#define SINGA_OPS_MATH_QMATMUL_VNNI_HPP

#include <singa/kernel.hpp>

#include <cstdint>
#include <memory>
#include <vector>

namespace singa {
namespace ops {
namespace math {

// True when the CPU (and OS) run AVX-512 VNNI code.
bool vnni_available();

class AmxB8;  // qmatmul_amx.hpp

// B [K, N] as s8 in panels of 64 columns: panel p holds, for each group of
// 4 rows q, 64 columns x 4 bytes (row 4q..4q+3 of one column together), the
// operand layout of vpdpbusd. Rows past K and columns past N are zero.
struct PackedB8 {
  int64_t K = 0, N = 0, groups = 0;  // groups = ceil(K / 4)
  std::vector<int8_t> data;
  int64_t offset = 0;          // of the first 64-byte aligned byte in data
  std::vector<int32_t> zb;     // per column: the stored value's zero point
  std::vector<int32_t> ccorr;  // per column: colsum - K zb (see qmatmul_vnni.cpp)
  bool any_zb = false;
  // The same B for oneDNN's AMX code: wanted (attach_amx), made on the first
  // product tall enough to use it (qmatmul_vnni.cpp's amx_for).
  bool amx_wanted = false;
  mutable bool amx_tried = false;
  mutable std::shared_ptr<AmxB8> amx;
  const int8_t* panel(int64_t p) const { return data.data() + offset + p * groups * 256; }
  int64_t panels() const { return (N + 63) / 64; }
};

// Packs element (k, n) = b[k * sk + n * sn] (s8, or u8 when b_u8) with zero
// point zb[n] (zb_count 1: one for all columns; null: 0), the zero points of
// B's own type.
void pack_b8(PackedB8& p, const void* b, bool b_u8, int64_t K, int64_t N, int64_t sk, int64_t sn, const int32_t* zb,
             int64_t zb_count);

// Lets a packed constant B take an AMX form (qmatmul_amx.hpp) where the CPU
// has AMX-INT8, so that qgemm_u8s8 runs tall products there. The copy of B
// in oneDNN's layout is made on the first such product (none for a model
// that only ever multiplies a few rows); a B packed per call should skip it.
void attach_amx(PackedB8& p);

// Where the products go (row stride ld): the exact int32 sums (acc); or
// y = float(sum) * scale[n] (+ bias[n]) as float (y); or y quantized as
// QuantizeLinear does, saturate(round_half_even(y / q_scale) + q_zero), to
// u8 or s8 (q8); or, with q_float, that quantized value dequantized again,
// (q - q_zero) * q_scale (+ post_bias[n]), as float (y): QuantizeLinear,
// DequantizeLinear and a bias Add in float, as a QDQ exporter writes them.
struct QGemmOut {
  int32_t* acc = nullptr;
  float* y = nullptr;
  void* q8 = nullptr;
  bool q_signed = false;
  float q_scale = 1.f;
  int32_t q_zero = 0;
  const float* scale = nullptr;  // N multipliers, for y and q8
  const float* bias = nullptr;   // N values or null, for y and q8
  bool q_float = false;          // y gets the quantized value dequantized
  const float* post_bias = nullptr;  // N values or null, with q_float
  int64_t ld = 0;
};

// rows x K unsigned A (row stride lda) with zero point za (or za_rows[m],
// when not null, per row) times the packed B, on the context's pool.
// Requires vnni_available().
void qgemm_u8s8(const sdk::Context& ctx, int64_t rows, const uint8_t* a, int64_t lda, int32_t za,
                const int32_t* za_rows, const PackedB8& b, const QGemmOut& out);

// An s8 A [rows, K] as u8 (a + 128) into `out`, for qgemm_u8s8 (with its
// zero point + 128).
void shift_s8_to_u8(const sdk::Context& ctx, const int8_t* a, int64_t n, uint8_t* out);

}  // namespace math
}  // namespace ops
}  // namespace singa
#endif
