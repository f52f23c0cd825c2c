// kernel.hpp - header-only C++ helper over the C ABI (singa_abi.h).
//
// It makes a kernel a small class:
//
//   struct Relu {
//     explicit Relu(const singa::sdk::Node& node) {}          // read attributes
//     void compute(singa::sdk::Context& ctx) const {           // may run concurrently
//       auto x = ctx.input(0);
//       auto y = ctx.output(0, x.shape(), x.dtype());
//       ...
//     }
//   };
//   SINGA_PLUGIN("my_ops", "1.0", "what it is") {
//     reg.kernel<Relu>("", "Relu", 6, 13, "cpu", {{"T", 0, singa::sdk::kFloatTypes}});
//   }
//
// C++ exceptions never cross the ABI: SINGA_TRY_BEGIN/SINGA_TRY_END (used by
// every trampoline here) turn them into singa_status*.
//
// Build plugins with -fvisibility=hidden so that this header's inline state is
// private to each plugin.
#ifndef SINGA_KERNEL_HPP
#define SINGA_KERNEL_HPP

#include <singa/singa_abi.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <initializer_list>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace singa {
namespace sdk {

// The host table of this plugin, set by SINGA_PLUGIN before registration.
inline const singa_host_api*& host_ptr() {
  static const singa_host_api* h = nullptr;
  return h;
}
inline const singa_host_api& host() { return *host_ptr(); }

// An error a kernel throws; becomes a status with `code`.
class Error : public std::runtime_error {
 public:
  Error(singa_code code, const std::string& msg) : std::runtime_error(msg), code_(code) {}
  singa_code code() const { return code_; }

 private:
  singa_code code_;
};

[[noreturn]] inline void fail(const std::string& msg, singa_code code = SINGA_INVALID_ARGUMENT) {
  throw Error(code, msg);
}
inline void check(bool ok, const std::string& msg, singa_code code = SINGA_INVALID_ARGUMENT) {
  if (!ok) throw Error(code, msg);
}
// A literal message: no std::string is built unless the check fails.
inline void check(bool ok, const char* msg, singa_code code = SINGA_INVALID_ARGUMENT) {
  if (!ok) throw Error(code, msg);
}
// A message built by a callable (returning something a std::string can be
// made from) that runs only when the check fails:
//   check(i < n, [&] { return "index " + std::to_string(i) + " out of range"; });
template <class F, class = std::enable_if_t<std::is_invocable_v<F&> && !std::is_convertible_v<F, const char*>>>
inline void check(bool ok, F&& make_message, singa_code code = SINGA_INVALID_ARGUMENT) {
  if (!ok) throw Error(code, std::string(make_message()));
}

// The lazy check for hot paths: `cond` is evaluated once, and the message
// expression (and an optional singa_code after it) only when `cond` is false,
// so a compute function pays nothing for messages built from shapes:
//   SINGA_CHECK(a == b, "shapes " + shape_str(x) + " and " + shape_str(y) + " differ");
//   SINGA_CHECK(kind_known, "unsupported kind " + kind, SINGA_UNIMPLEMENTED);
// `check(ok, "..." + s)` instead builds its message on every call.
#if defined(__GNUC__) || defined(__clang__)
#define SINGA_UNLIKELY_(x) __builtin_expect(!!(x), 0)
#else
#define SINGA_UNLIKELY_(x) (x)
#endif
#define SINGA_CHECK(cond, ...)                                         \
  do {                                                                 \
    if (SINGA_UNLIKELY_(!(cond))) ::singa::sdk::fail(__VA_ARGS__);     \
  } while (0)

inline singa_status* status_from_current_exception() {
  try {
    throw;
  } catch (const Error& e) {
    return host().status_new(e.code(), e.what());
  } catch (const std::bad_alloc&) {
    return host().status_new(SINGA_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return host().status_new(SINGA_INTERNAL, e.what());
  } catch (...) {
    return host().status_new(SINGA_INTERNAL, "unknown C++ exception in plugin");
  }
}

// The one pair of macros that keeps exceptions on this side of the boundary.
#define SINGA_TRY_BEGIN try {
#define SINGA_TRY_END                                    \
  }                                                      \
  catch (...) {                                          \
    return ::singa::sdk::status_from_current_exception(); \
  }                                                      \
  return nullptr;

// Rethrows a status returned by a host call as an Error (and frees it).
inline void throw_if(singa_status* st) {
  if (!st) return;
  singa_code code = host().status_code(st);
  std::string msg = host().status_message(st);
  host().status_free(st);
  throw Error(code, msg);
}

// ------------------------------------------------------------- dtypes

// Takes the code as an int: a model may name any number, and an out-of-range
// value in the enum type is undefined behaviour before the range check runs.
constexpr uint64_t bit(int32_t t) { return SINGA_DTYPE_BIT(t); }
constexpr uint64_t kFloatTypes = bit(SINGA_ONNX_FLOAT) | bit(SINGA_ONNX_DOUBLE) | bit(SINGA_ONNX_FLOAT16);
constexpr uint64_t kSignedIntTypes =
    bit(SINGA_ONNX_INT8) | bit(SINGA_ONNX_INT16) | bit(SINGA_ONNX_INT32) | bit(SINGA_ONNX_INT64);
constexpr uint64_t kUnsignedIntTypes =
    bit(SINGA_ONNX_UINT8) | bit(SINGA_ONNX_UINT16) | bit(SINGA_ONNX_UINT32) | bit(SINGA_ONNX_UINT64);
constexpr uint64_t kIntTypes = kSignedIntTypes | kUnsignedIntTypes;
constexpr uint64_t kNumericTypes = kFloatTypes | kIntTypes | bit(SINGA_ONNX_BFLOAT16);
constexpr uint64_t kAllTypes = kNumericTypes | bit(SINGA_ONNX_BOOL) | bit(SINGA_ONNX_STRING);
// ABI 1.2's element types (docs/abi.md). Float8 types take one byte each;
// the packed ones (4-bit and 2-bit) share bytes, so a kernel that moves
// elements one by one must not take them, but one that moves whole buffers can.
constexpr uint64_t kFloat8Types = bit(SINGA_ONNX_FLOAT8E4M3FN) | bit(SINGA_ONNX_FLOAT8E4M3FNUZ) |
                                  bit(SINGA_ONNX_FLOAT8E5M2) | bit(SINGA_ONNX_FLOAT8E5M2FNUZ) |
                                  bit(SINGA_ONNX_FLOAT8E8M0);
constexpr uint64_t kPackedTypes = bit(SINGA_ONNX_UINT4) | bit(SINGA_ONNX_INT4) | bit(SINGA_ONNX_FLOAT4E2M1) |
                                  bit(SINGA_ONNX_UINT2) | bit(SINGA_ONNX_INT2);
constexpr uint64_t kComplexTypes = bit(SINGA_ONNX_COMPLEX64) | bit(SINGA_ONNX_COMPLEX128);
// Every type whose elements are whole bytes and hold no pointers: what a
// kernel that copies elements as bytes (Transpose, Gather, ...) can take.
constexpr uint64_t kFixedSizeTypes = kNumericTypes | bit(SINGA_ONNX_BOOL) | kComplexTypes | kFloat8Types;
// Every element type: for kernels that pass a whole buffer on unchanged
// (Identity, Reshape, Squeeze, Shape, ...).
constexpr uint64_t kAllElementTypes = kFixedSizeTypes | kPackedTypes | bit(SINGA_ONNX_STRING);

// DLPack 1.1's codes for the float8/float4 types (Debian's dlpack.h 0.6 has
// no names for them). The packed integer types travel as kDLInt/kDLUInt
// with 4 or 2 bits, packed as DLPack 1.1 specifies for sub-byte types.
constexpr uint8_t kDLCodeFloat8E4M3FN = 10, kDLCodeFloat8E4M3FNUZ = 11, kDLCodeFloat8E5M2 = 12,
                  kDLCodeFloat8E5M2FNUZ = 13, kDLCodeFloat8E8M0FNU = 14, kDLCodeFloat4E2M1FN = 17;

inline DLDataType dl_dtype(int32_t onnx) {
  switch (onnx) {
    case SINGA_ONNX_FLOAT: return {kDLFloat, 32, 1};
    case SINGA_ONNX_DOUBLE: return {kDLFloat, 64, 1};
    case SINGA_ONNX_FLOAT16: return {kDLFloat, 16, 1};
    case SINGA_ONNX_BFLOAT16: return {kDLBfloat, 16, 1};
    case SINGA_ONNX_INT8: return {kDLInt, 8, 1};
    case SINGA_ONNX_INT16: return {kDLInt, 16, 1};
    case SINGA_ONNX_INT32: return {kDLInt, 32, 1};
    case SINGA_ONNX_INT64: return {kDLInt, 64, 1};
    case SINGA_ONNX_UINT8: return {kDLUInt, 8, 1};
    case SINGA_ONNX_UINT16: return {kDLUInt, 16, 1};
    case SINGA_ONNX_UINT32: return {kDLUInt, 32, 1};
    case SINGA_ONNX_UINT64: return {kDLUInt, 64, 1};
    case SINGA_ONNX_BOOL: return {SINGA_DL_BOOL, 8, 1};
    case SINGA_ONNX_STRING: return {SINGA_DL_STRING, 64, 1};
    case SINGA_ONNX_COMPLEX64: return {kDLComplex, 64, 1};
    case SINGA_ONNX_COMPLEX128: return {kDLComplex, 128, 1};
    case SINGA_ONNX_FLOAT8E4M3FN: return {kDLCodeFloat8E4M3FN, 8, 1};
    case SINGA_ONNX_FLOAT8E4M3FNUZ: return {kDLCodeFloat8E4M3FNUZ, 8, 1};
    case SINGA_ONNX_FLOAT8E5M2: return {kDLCodeFloat8E5M2, 8, 1};
    case SINGA_ONNX_FLOAT8E5M2FNUZ: return {kDLCodeFloat8E5M2FNUZ, 8, 1};
    case SINGA_ONNX_FLOAT8E8M0: return {kDLCodeFloat8E8M0FNU, 8, 1};
    case SINGA_ONNX_FLOAT4E2M1: return {kDLCodeFloat4E2M1FN, 4, 1};
    case SINGA_ONNX_INT4: return {kDLInt, 4, 1};
    case SINGA_ONNX_UINT4: return {kDLUInt, 4, 1};
    case SINGA_ONNX_INT2: return {kDLInt, 2, 1};
    case SINGA_ONNX_UINT2: return {kDLUInt, 2, 1};
    default: return {0, 0, 0};
  }
}

inline int32_t onnx_dtype(DLDataType t) {
  if (t.lanes != 1) return SINGA_ONNX_UNDEFINED;
  switch (t.code) {
    case kDLFloat:
      return t.bits == 32 ? SINGA_ONNX_FLOAT : t.bits == 64 ? SINGA_ONNX_DOUBLE : t.bits == 16 ? SINGA_ONNX_FLOAT16 : 0;
    case kDLBfloat: return t.bits == 16 ? SINGA_ONNX_BFLOAT16 : 0;
    case kDLInt:
      return t.bits == 8 ? SINGA_ONNX_INT8 : t.bits == 16 ? SINGA_ONNX_INT16 : t.bits == 32 ? SINGA_ONNX_INT32
             : t.bits == 64 ? SINGA_ONNX_INT64 : t.bits == 4 ? SINGA_ONNX_INT4 : t.bits == 2 ? SINGA_ONNX_INT2 : 0;
    case kDLUInt:
      return t.bits == 8 ? SINGA_ONNX_UINT8 : t.bits == 16 ? SINGA_ONNX_UINT16 : t.bits == 32 ? SINGA_ONNX_UINT32
             : t.bits == 64 ? SINGA_ONNX_UINT64 : t.bits == 4 ? SINGA_ONNX_UINT4 : t.bits == 2 ? SINGA_ONNX_UINT2 : 0;
    case kDLCodeFloat8E4M3FN: return t.bits == 8 ? SINGA_ONNX_FLOAT8E4M3FN : 0;
    case kDLCodeFloat8E4M3FNUZ: return t.bits == 8 ? SINGA_ONNX_FLOAT8E4M3FNUZ : 0;
    case kDLCodeFloat8E5M2: return t.bits == 8 ? SINGA_ONNX_FLOAT8E5M2 : 0;
    case kDLCodeFloat8E5M2FNUZ: return t.bits == 8 ? SINGA_ONNX_FLOAT8E5M2FNUZ : 0;
    case kDLCodeFloat8E8M0FNU: return t.bits == 8 ? SINGA_ONNX_FLOAT8E8M0 : 0;
    case kDLCodeFloat4E2M1FN: return t.bits == 4 ? SINGA_ONNX_FLOAT4E2M1 : 0;
    case SINGA_DL_BOOL: return SINGA_ONNX_BOOL;
    case SINGA_DL_STRING: return SINGA_ONNX_STRING;
    case kDLComplex: return t.bits == 64 ? SINGA_ONNX_COMPLEX64 : t.bits == 128 ? SINGA_ONNX_COMPLEX128 : 0;
    default: return SINGA_ONNX_UNDEFINED;
  }
}

inline bool operator==(DLDataType a, DLDataType b) { return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes; }
inline bool operator!=(DLDataType a, DLDataType b) { return !(a == b); }

// The newest element type code this header knows.
constexpr int32_t kNewestDtype = SINGA_ONNX_INT2;

inline const char* dtype_name(int32_t onnx) {
  static const char* names[] = {"undefined", "float", "uint8", "int8", "uint16", "int16", "int32", "int64", "string",
                                "bool", "float16", "double", "uint32", "uint64", "complex64", "complex128", "bfloat16",
                                "float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "uint4", "int4",
                                "float4e2m1", "float8e8m0", "uint2", "int2"};
  return (onnx >= 0 && onnx <= kNewestDtype) ? names[onnx] : "unknown";
}

// Bits of one element (64 for a string's pointer); 0 for unknown codes.
inline int dtype_bits(int32_t onnx) {
  switch (onnx) {
    case SINGA_ONNX_DOUBLE: case SINGA_ONNX_INT64: case SINGA_ONNX_UINT64: case SINGA_ONNX_COMPLEX64: return 64;
    case SINGA_ONNX_STRING: return int(8 * sizeof(const char*));
    case SINGA_ONNX_COMPLEX128: return 128;
    case SINGA_ONNX_FLOAT: case SINGA_ONNX_INT32: case SINGA_ONNX_UINT32: return 32;
    case SINGA_ONNX_FLOAT16: case SINGA_ONNX_BFLOAT16: case SINGA_ONNX_INT16: case SINGA_ONNX_UINT16: return 16;
    case SINGA_ONNX_INT8: case SINGA_ONNX_UINT8: case SINGA_ONNX_BOOL: case SINGA_ONNX_FLOAT8E4M3FN:
    case SINGA_ONNX_FLOAT8E4M3FNUZ: case SINGA_ONNX_FLOAT8E5M2: case SINGA_ONNX_FLOAT8E5M2FNUZ:
    case SINGA_ONNX_FLOAT8E8M0: return 8;
    case SINGA_ONNX_UINT4: case SINGA_ONNX_INT4: case SINGA_ONNX_FLOAT4E2M1: return 4;
    case SINGA_ONNX_UINT2: case SINGA_ONNX_INT2: return 2;
    default: return 0;
  }
}

// Bytes that n elements take: ceil(n * bits / 8), so packed types round up
// to a whole byte. The one formula for a tensor's byte count.
inline size_t dtype_nbytes(int32_t onnx, int64_t n) {
  size_t bits = size_t(dtype_bits(onnx));
  if (n <= 0 || bits == 0) return 0;
  return bits >= 8 ? size_t(n) * (bits / 8) : (size_t(n) * bits + 7) / 8;
}

// IEEE half and bfloat16 storage with conversions (round to nearest even).
struct half {
  uint16_t bits;
  half() = default;
  explicit half(float f) : bits(from_float(f)) {}
  operator float() const { return to_float(bits); }
  static uint16_t from_float(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t mant = x & 0x7fffffu;
    int32_t exp = int32_t((x >> 23) & 0xff);
    if (exp == 0xff) return uint16_t(sign | 0x7c00u | (mant ? 0x200u : 0u));
    int32_t e = exp - 127 + 15;
    if (e >= 0x1f) return uint16_t(sign | 0x7c00u);
    if (e <= 0) {
      if (e < -10) return uint16_t(sign);
      mant |= 0x800000u;
      uint32_t shift = uint32_t(14 - e);
      uint32_t h = mant >> shift;
      uint32_t rem = mant & ((1u << shift) - 1), halfway = 1u << (shift - 1);
      if (rem > halfway || (rem == halfway && (h & 1u))) ++h;
      return uint16_t(sign | h);
    }
    uint32_t h = (uint32_t(e) << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
    return uint16_t(sign | h);
  }
  static float to_float(uint16_t h) {
    uint32_t sign = uint32_t(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu, x;
    if (exp == 0) {
      if (mant == 0) {
        x = sign;
      } else {
        exp = 127 - 15 + 1;
        while (!(mant & 0x400u)) { mant <<= 1; --exp; }
        mant &= 0x3ffu;
        x = sign | (exp << 23) | (mant << 13);
      }
    } else if (exp == 0x1f) {
      x = sign | 0x7f800000u | (mant << 13);
    } else {
      x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
    }
    float f;
    std::memcpy(&f, &x, 4);
    return f;
  }
};

struct bfloat16 {
  uint16_t bits;
  bfloat16() = default;
  explicit bfloat16(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) { bits = uint16_t((x >> 16) | 0x40u); return; }
    x += 0x7fffu + ((x >> 16) & 1u);
    bits = uint16_t(x >> 16);
  }
  operator float() const {
    uint32_t x = uint32_t(bits) << 16;
    float f;
    std::memcpy(&f, &x, 4);
    return f;
  }
};

// ------------------------------------------------------------- small floats
//
// Float8, float4 and packed integer elements, converted one at a time. The
// encoders round to nearest, ties to even (float8e8m0: see its round modes);
// docs/abi.md lists each type's special values.

namespace minifloat {

// |a| (finite, >= 0) rounded to nearest even in a format with `mbits`
// mantissa bits and exponent `bias`: the code's exponent and mantissa
// fields, which may exceed the format's largest finite code (the caller
// decides what overflow gives).
inline uint32_t round_magnitude(double a, int mbits, int bias) {
  uint64_t x;
  std::memcpy(&x, &a, 8);
  x &= ~(uint64_t(1) << 63);
  int e = int(x >> 52);
  if (e == 0) return 0;  // zero, or a double subnormal: far below any half step
  int E = e - 1023 + bias;
  if (E > 200) return 0xffffu;
  uint64_t sig = (x & ((uint64_t(1) << 52) - 1)) | (uint64_t(1) << 52);
  int shift = 52 - mbits + (E < 1 ? 1 - E : 0);
  if (shift >= 54) return 0;  // below half the smallest subnormal
  uint64_t q = sig >> shift, rem = sig & ((uint64_t(1) << shift) - 1), half = uint64_t(1) << (shift - 1);
  if (rem > half || (rem == half && (q & 1u))) ++q;
  // A carry out of the mantissa lands in the exponent field, as it should.
  if (E < 1) return uint32_t(q);
  return uint32_t((uint64_t(E) << mbits) + q - (uint64_t(1) << mbits));
}

// The value of a magnitude code (exponent and mantissa fields).
inline float magnitude_value(uint32_t code, int mbits, int bias) {
  uint32_t e = code >> mbits, m = code & ((1u << mbits) - 1);
  // ldexp of a small integer: exact.
  if (e == 0) return std::ldexp(float(m), 1 - bias - mbits);
  return std::ldexp(float(m | (1u << mbits)), int(e) - bias - mbits);
}

inline bool is_float8(int32_t t) { return (kFloat8Types & bit(t)) != 0; }

// double -> float8 (not e8m0; see to_e8m0). saturate: out-of-range values
// and infinities become the largest finite value of their sign instead of
// NaN (or infinity for e5m2).
inline uint8_t to_float8(double v, int32_t t, bool saturate = true) {
  const bool neg = std::signbit(v);
  const uint8_t s = neg ? 0x80 : 0;
  const bool nan = std::isnan(v), inf = std::isinf(v);
  const double a = std::fabs(v);
  switch (t) {
    case SINGA_ONNX_FLOAT8E4M3FN: {  // S.EEEE.MMM, bias 7, NaN S.1111.111, no inf, max 448
      if (nan) return uint8_t(s | 0x7f);
      uint32_t c = inf ? 0xffffu : round_magnitude(a, 3, 7);
      if (c > 0x7e) return uint8_t(s | (saturate ? 0x7e : 0x7f));
      return uint8_t(s | c);
    }
    case SINGA_ONNX_FLOAT8E4M3FNUZ:  // bias 8, NaN 0x80, no inf, no -0, max 240
    case SINGA_ONNX_FLOAT8E5M2FNUZ: {  // bias 16, same specials, max 57344
      if (nan) return 0x80;
      uint32_t c = inf ? 0xffffu
                       : t == SINGA_ONNX_FLOAT8E4M3FNUZ ? round_magnitude(a, 3, 8) : round_magnitude(a, 2, 16);
      if (c > 0x7f) return saturate ? uint8_t(s | 0x7f) : uint8_t(0x80);
      return c == 0 ? uint8_t(0) : uint8_t(s | c);
    }
    case SINGA_ONNX_FLOAT8E5M2: {  // S.EEEEE.MM, bias 15, IEEE: inf 0x7c, NaN 0x7d..0x7f, max 57344
      if (nan) return uint8_t(s | 0x7f);
      uint32_t c = inf ? 0xffffu : round_magnitude(a, 2, 15);
      if (c > 0x7b) return uint8_t(s | (saturate ? 0x7b : 0x7c));
      return uint8_t(s | c);
    }
    default: return 0;
  }
}

inline float from_float8(uint8_t b, int32_t t) {
  const float sign = (b & 0x80) ? -1.0f : 1.0f;
  const uint32_t m = b & 0x7fu;
  switch (t) {
    case SINGA_ONNX_FLOAT8E4M3FN:
      return m == 0x7f ? std::numeric_limits<float>::quiet_NaN() : sign * magnitude_value(m, 3, 7);
    case SINGA_ONNX_FLOAT8E4M3FNUZ:
      return b == 0x80 ? std::numeric_limits<float>::quiet_NaN() : sign * magnitude_value(m, 3, 8);
    case SINGA_ONNX_FLOAT8E5M2:
      if (m > 0x7c) return std::numeric_limits<float>::quiet_NaN();
      if (m == 0x7c) return sign * std::numeric_limits<float>::infinity();
      return sign * magnitude_value(m, 2, 15);
    case SINGA_ONNX_FLOAT8E5M2FNUZ:
      return b == 0x80 ? std::numeric_limits<float>::quiet_NaN() : sign * magnitude_value(m, 2, 16);
    case SINGA_ONNX_FLOAT8E8M0:
      return b == 0xff ? std::numeric_limits<float>::quiet_NaN() : std::ldexp(1.0f, int(b) - 127);
    default: return 0.0f;
  }
}

// float8e8m0: a bare exponent, 2^(code - 127), 0xff NaN; no sign, zero or
// infinity. The sign of v is ignored; 0 and values below 2^-127 give code 0.
// Round modes (Cast-25's round_mode): up = to the next power of two unless
// exact, down = to the power of two below, nearest = the nearer one, ties up.
enum class E8M0Round { kUp, kDown, kNearest };
inline uint8_t to_e8m0(double v, bool saturate = true, E8M0Round mode = E8M0Round::kUp) {
  if (std::isnan(v)) return 0xff;
  if (std::isinf(v)) return saturate ? 0xfe : 0xff;
  uint64_t x;
  std::memcpy(&x, &v, 8);
  int e = int((x >> 52) & 0x7ff);
  if (e == 0) return 0;
  uint64_t m = x & ((uint64_t(1) << 52) - 1);
  int k = e - 1023;
  if ((mode == E8M0Round::kUp && m != 0) || (mode == E8M0Round::kNearest && m >= (uint64_t(1) << 51))) ++k;
  int code = k + 127;
  if (code < 0) return 0;
  if (code > 0xfe) return saturate ? 0xfe : 0xff;
  return uint8_t(code);
}

// float4e2m1 (a nibble): S.EE.M, bias 1, values 0, 0.5, 1, 1.5, 2, 3, 4, 6;
// no NaN or infinity. Conversions always saturate to +-6; NaN gives 0x8, as
// the ONNX reference does.
inline uint8_t to_float4e2m1(double v) {
  if (std::isnan(v)) return 0x8;
  const uint8_t s = std::signbit(v) ? 0x8 : 0;
  uint32_t c = std::isinf(v) ? 7u : round_magnitude(std::fabs(v), 1, 1);
  return uint8_t(s | (c > 7 ? 7u : c));
}
inline float from_float4e2m1(uint8_t nibble) {
  float a = magnitude_value(nibble & 0x7u, 1, 1);
  return (nibble & 0x8u) ? -a : a;
}

}  // namespace minifloat

// Packed elements: element i of a 4-bit (2 per byte) or 2-bit (4 per byte)
// buffer, first element in the lowest bits.
inline uint8_t packed_get(const void* data, int64_t i, int bits) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  const int per = 8 / bits;
  const int shift = int(i % per) * bits;
  return uint8_t((p[i / per] >> shift) & ((1u << bits) - 1));
}
inline void packed_set(void* data, int64_t i, int bits, uint8_t code) {
  uint8_t* p = static_cast<uint8_t*>(data);
  const int per = 8 / bits;
  const int shift = int(i % per) * bits;
  const uint8_t mask = uint8_t(((1u << bits) - 1) << shift);
  p[i / per] = uint8_t((p[i / per] & ~mask) | ((code << shift) & mask));
}
// The integer a 4-bit or 2-bit code stands for (two's complement when signed).
inline int32_t packed_int(uint8_t code, int bits, bool is_signed) {
  int32_t v = code & ((1 << bits) - 1);
  return (is_signed && (v >> (bits - 1))) ? v - (1 << bits) : v;
}

// Calls f(T{}) with T the C++ type of an ONNX numeric/bool dtype. Throws for
// dtypes not in `allowed`.
template <typename F>
void dispatch(int32_t onnx, F&& f, uint64_t allowed = kNumericTypes | bit(SINGA_ONNX_BOOL)) {
  if (!(allowed & SINGA_DTYPE_BIT(onnx))) fail(std::string("unsupported element type ") + dtype_name(onnx));
  switch (onnx) {
    case SINGA_ONNX_FLOAT: f(float{}); break;
    case SINGA_ONNX_DOUBLE: f(double{}); break;
    case SINGA_ONNX_FLOAT16: f(half{}); break;
    case SINGA_ONNX_BFLOAT16: f(bfloat16{}); break;
    case SINGA_ONNX_INT8: f(int8_t{}); break;
    case SINGA_ONNX_INT16: f(int16_t{}); break;
    case SINGA_ONNX_INT32: f(int32_t{}); break;
    case SINGA_ONNX_INT64: f(int64_t{}); break;
    case SINGA_ONNX_UINT8: f(uint8_t{}); break;
    case SINGA_ONNX_UINT16: f(uint16_t{}); break;
    case SINGA_ONNX_UINT32: f(uint32_t{}); break;
    case SINGA_ONNX_UINT64: f(uint64_t{}); break;
    case SINGA_ONNX_BOOL: f(bool{}); break;
    default: fail(std::string("unsupported element type ") + dtype_name(onnx));
  }
}

// ------------------------------------------------------------- tensors

using Shape = std::vector<int64_t>;

// The element count; a shape whose count does not fit in int64 (a model can
// ask for any dims) is an error, not a wrapped-around number.
inline int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s)
    if (__builtin_mul_overflow(n, d, &n)) {
      std::string dims;
      for (int64_t e : s) dims += (dims.empty() ? "" : ",") + std::to_string(e);
      throw Error(SINGA_INVALID_ARGUMENT, "shape [" + dims + "] has more elements than a 64-bit count holds");
    }
  return n;
}

// A non-owning view of a DLTensor (contiguous; byte_offset honoured).
class Tensor {
 public:
  Tensor() = default;
  // `input`: the node's input index this tensor stands for, named in the
  // error when a kernel reads an input the node left out.
  explicit Tensor(const DLTensor* t, int input = -1) : t_(t), input_(input) {}
  bool present() const { return t_ != nullptr; }
  const DLTensor* raw() const { return t_; }
  int ndim() const { return get().ndim; }
  int64_t dim(int i) const { return get().shape[i < 0 ? i + t_->ndim : i]; }
  Shape shape() const { return Shape(get().shape, t_->shape + t_->ndim); }
  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < get().ndim; ++i) n *= t_->shape[i];
    return n;
  }
  DLDataType dl_dtype() const { return get().dtype; }
  int32_t dtype() const { return onnx_dtype(get().dtype); }
  void* data_ptr() const { return static_cast<char*>(get().data) + t_->byte_offset; }
  template <typename T>
  T* data() const { return reinterpret_cast<T*>(data_ptr()); }
  // Reads element i of an integer or float tensor as int64 (for shape inputs).
  int64_t int_at(int64_t i) const {
    int64_t v = 0;
    dispatch(dtype(), [&](auto tag) { v = static_cast<int64_t>(data<decltype(tag)>()[i]); }, kIntTypes | kFloatTypes | bit(SINGA_ONNX_BOOL));
    return v;
  }
  std::vector<int64_t> to_int_vector() const {
    std::vector<int64_t> v(static_cast<size_t>(numel()));
    for (int64_t i = 0; i < numel(); ++i) v[size_t(i)] = int_at(i);
    return v;
  }

 private:
  // An absent optional input (an empty name in the model) read as if it were
  // there is the model's error, not a null dereference in the kernel.
  const DLTensor& get() const {
    if (!t_)
      throw Error(SINGA_INVALID_ARGUMENT, input_ >= 0 ? "input " + std::to_string(input_) + " is absent (the node leaves it out) but the op needs it"
                                                      : std::string("a tensor the op needs is absent"));
    return *t_;
  }
  const DLTensor* t_ = nullptr;
  int input_ = -1;
};

// ------------------------------------------------------------- node

class Node {
 public:
  explicit Node(const singa_node* n) : n_(n) {}
  const singa_node* raw() const { return n_; }
  std::string name() const { return host().node_name(n_); }
  std::string op_type() const { return host().node_op_type(n_); }
  int64_t opset() const { return host().node_opset(n_); }
  size_t num_inputs() const { return host().node_num_inputs(n_); }
  size_t num_outputs() const { return host().node_num_outputs(n_); }
  bool has_input(size_t i) const {
    singa_value_info info{};
    info.struct_size = sizeof(info);
    return i < num_inputs() && host().node_input_info(n_, i, &info);
  }
  // Whether output i is wanted (an absent optional output is not): kernels
  // with optional outputs (the gradients) skip computing the rest.
  bool has_output(size_t i) const {
    singa_value_info info{};
    info.struct_size = sizeof(info);
    return i < num_outputs() && host().node_output_info(n_, i, &info);
  }
  singa_value_info input_info(size_t i) const {
    singa_value_info info{};
    info.struct_size = sizeof(info);
    info.ndim = -1;
    host().node_input_info(n_, i, &info);
    return info;
  }
  Tensor constant(size_t i) const { return Tensor(host().node_input_constant(n_, i)); }
  // The layout of input or output i ("" plain; ABI 1.4, singa_layout_ext):
  // only layouts the kernel declared reach it. "" from an older host.
  std::string input_layout(size_t i) const {
    if (!SINGA_HAS_FIELD(&host(), singa_host_api, node_input_layout) || !host().node_input_layout) return "";
    const char* l = host().node_input_layout(n_, i);
    return l ? l : "";
  }
  std::string output_layout(size_t i) const {
    if (!SINGA_HAS_FIELD(&host(), singa_host_api, node_output_layout) || !host().node_output_layout) return "";
    const char* l = host().node_output_layout(n_, i);
    return l ? l : "";
  }

  bool has_attr(const char* name) const {
    int64_t i;
    float f;
    const char* s;
    size_t n;
    const int64_t* is;
    const float* fs;
    const DLTensor* t;
    return host().node_attr_int(n_, name, &i) || host().node_attr_float(n_, name, &f) ||
           host().node_attr_string(n_, name, &s, &n) || host().node_attr_ints(n_, name, &is, &n) ||
           host().node_attr_floats(n_, name, &fs, &n) || host().node_attr_tensor(n_, name, &t) ||
           host().node_attr_num_strings(n_, name, &n);
  }
  int64_t attr_int(const char* name, int64_t def) const {
    int64_t v;
    return host().node_attr_int(n_, name, &v) ? v : def;
  }
  float attr_float(const char* name, float def) const {
    float v;
    return host().node_attr_float(n_, name, &v) ? v : def;
  }
  std::string attr_string(const char* name, const std::string& def) const {
    const char* s;
    size_t n;
    return host().node_attr_string(n_, name, &s, &n) ? std::string(s, n) : def;
  }
  std::vector<int64_t> attr_ints(const char* name, std::vector<int64_t> def = {}) const {
    const int64_t* d;
    size_t n;
    return host().node_attr_ints(n_, name, &d, &n) ? std::vector<int64_t>(d, d + n) : def;
  }
  std::vector<float> attr_floats(const char* name, std::vector<float> def = {}) const {
    const float* d;
    size_t n;
    return host().node_attr_floats(n_, name, &d, &n) ? std::vector<float>(d, d + n) : def;
  }
  std::vector<std::string> attr_strings(const char* name) const {
    size_t n = 0;
    std::vector<std::string> out;
    if (!host().node_attr_num_strings(n_, name, &n)) return out;
    for (size_t i = 0; i < n; ++i) {
      const char* s;
      size_t len;
      host().node_attr_string_at(n_, name, i, &s, &len);
      out.emplace_back(s, len);
    }
    return out;
  }
  Tensor attr_tensor(const char* name) const {
    const DLTensor* t = nullptr;
    host().node_attr_tensor(n_, name, &t);
    return Tensor(t);
  }

  // A named option of the prepare (PrepareOptions::options, the CLI's
  // --option, docs/options.md), or NULL when it is unset or the runtime
  // predates options (ABI 1.3). Read options at create time.
  const char* option(const char* key) const {
    if (!SINGA_HAS_FIELD(&host(), singa_host_api, node_option) || !host().node_option) return nullptr;
    return host().node_option(n_, key);
  }
  // A 0/1 option; `def` when unset. Any other value fails (naming the key),
  // so that a typo never silently keeps the default path.
  bool option_bool(const char* key, bool def) const {
    const char* v = option(key);
    if (!v) return def;
    if (v[0] == '0' && v[1] == '\0') return false;
    if (v[0] == '1' && v[1] == '\0') return true;
    throw Error(SINGA_INVALID_ARGUMENT, std::string("option ") + key + "=" + v + ": expected 0 or 1");
  }
  // A whole-number option in [lo, hi]; `def` when unset.
  int64_t option_int(const char* key, int64_t def, int64_t lo, int64_t hi) const {
    const char* v = option(key);
    if (!v) return def;
    char* end = nullptr;
    errno = 0;
    const long long n = std::strtoll(v, &end, 10);
    if (!*v || *end || errno || n < lo || n > hi)
      throw Error(SINGA_INVALID_ARGUMENT, std::string("option ") + key + "=" + v + ": expected a whole number from " +
                                              std::to_string(lo) + " to " + std::to_string(hi));
    return int64_t(n);
  }
  // The core prefixes every kernel error with the node's name and op type,
  // so the message need only say what is wrong.
  [[noreturn]] void fail(const std::string& msg) const { throw Error(SINGA_INVALID_ARGUMENT, msg); }

 private:
  const singa_node* n_;
};

// ------------------------------------------------------------- context

class Context {
 public:
  explicit Context(singa_kernel_context* c) : c_(c) {}
  singa_kernel_context* raw() const { return c_; }
  size_t num_inputs() const { return host().ctx_num_inputs(c_); }
  size_t num_outputs() const { return host().ctx_num_outputs(c_); }
  Tensor input(size_t i) const { return Tensor(i < num_inputs() ? host().ctx_input(c_, i) : nullptr, int(i)); }
  bool has_input(size_t i) const { return i < num_inputs() && host().ctx_input(c_, i) != nullptr; }
  Tensor output(size_t i, const Shape& shape, DLDataType dtype) const {
    DLTensor* out = nullptr;
    throw_if(host().ctx_output(c_, i, int32_t(shape.size()), shape.data(), dtype, &out));
    return Tensor(out);
  }
  Tensor output(size_t i, const Shape& shape, int32_t onnx) const { return output(i, shape, dl_dtype(onnx)); }
  void* workspace(size_t bytes) const {
    void* p = nullptr;
    throw_if(host().ctx_workspace(c_, bytes, &p));
    return p;
  }
  void* stream() const { return host().ctx_stream(c_); }
  int num_threads() const { return host().ctx_num_threads(c_); }
  std::string node_name() const { return host().ctx_node_name(c_); }
  // Element i of string input `t` (a NUL-terminated text owned by the tensor).
  static const char* string_at(const Tensor& t, int64_t i) { return t.data<const char* const>()[i]; }
  // Writes element i of string output `out` (allocated with output()).
  void set_string(size_t out, int64_t i, const std::string& text) const {
    if (!SINGA_HAS_FIELD(&host(), singa_host_api, ctx_set_string))
      throw Error(SINGA_UNIMPLEMENTED, "this runtime predates string outputs (ABI 1.1)");
    throw_if(host().ctx_set_string(c_, out, i, text.data(), text.size()));
  }

  // Runs f(begin, end) over [0, n) on the intra-op pool. f must not throw
  // past a range: exceptions are captured and rethrown here.
  template <typename F>
  void parallel_for(int64_t n, int64_t grain, F&& f) const {
    if (n <= 0) return;
    struct Call {
      F* f;
      std::exception_ptr err;
    } call{&f, nullptr};
    auto tramp = [](void* user, int64_t b, int64_t e) {
      auto* c = static_cast<Call*>(user);
      try {
        (*c->f)(b, e);
      } catch (...) {
        if (!c->err) c->err = std::current_exception();
      }
    };
    host().ctx_parallel_for(c_, n, grain < 1 ? 1 : grain, tramp, &call);
    if (call.err) std::rethrow_exception(call.err);
  }

 private:
  singa_kernel_context* c_;
};

template <typename K>
void attach_gradient(singa_kernel_def& def);  // gradient.hpp: hangs the plugin's gradient hooks on a def

// ------------------------------------------------------------- registration

struct Constraint {
  const char* name;
  int32_t index;
  uint64_t dtypes;
};

// A layout a kernel reads or writes besides plain (singa_layout_accept):
// input i, or output k as -1-k.
struct LayoutAccept {
  int32_t index;
  const char* layout;
};

namespace detail {
// One kernel's singa_layout_ext and the strings it points at, kept for the
// plugin's lifetime; chained in front of `next` (the kernel's other
// extensions).
struct LayoutSlot {
  singa_layout_ext ext{};
  std::vector<std::string> names;
  std::vector<singa_layout_accept> accepts;
};
inline const singa_extension* layout_extension(std::initializer_list<LayoutAccept> layouts, const singa_extension* next) {
  static std::deque<LayoutSlot> slots;
  if (layouts.size() == 0) return next;
  LayoutSlot& s = slots.emplace_back();
  for (const auto& l : layouts) s.names.emplace_back(l.layout ? l.layout : "");
  size_t k = 0;
  for (const auto& l : layouts) s.accepts.push_back({l.index, s.names[k++].c_str()});
  s.ext.base.struct_size = SINGA_LAYOUT_EXT_STRUCT_SIZE;
  s.ext.base.type = SINGA_EXTENSION_LAYOUT;
  s.ext.base.next = next;
  s.ext.accepts = s.accepts.data();
  s.ext.num_accepts = s.accepts.size();
  return &s.ext.base;
}
}  // namespace detail

template <typename K>
struct KernelTrampolines {
  static singa_status* create(void*, const singa_node* node, void** state) {
    SINGA_TRY_BEGIN
    *state = new K(Node(node));
    SINGA_TRY_END
  }
  static singa_status* compute(void* state, singa_kernel_context* ctx) {
    SINGA_TRY_BEGIN
    Context c(ctx);
    static_cast<const K*>(state)->compute(c);
    SINGA_TRY_END
  }
  static void destroy(void* state) { delete static_cast<K*>(state); }
};

class Registrar {
 public:
  Registrar(const singa_host_api* h, singa_plugin_handle* p, singa_plugin* info = nullptr)
      : host_(h), plugin_(p), info_(info) {}

  // Registers kernel class K for an op over opsets [since, end] on `device`.
  template <typename K>
  void kernel(const char* domain, const char* op_type, int since, int end, const char* device,
              std::initializer_list<Constraint> constraints, uint32_t flags = 0, uint64_t cpu_inputs_mask = 0) {
    kernel<K>(domain, op_type, since, end, device, constraints, std::initializer_list<LayoutAccept>{}, flags,
              cpu_inputs_mask);
  }
  // As kernel() above, for a kernel that also reads or writes the layouts
  // in `layouts` ({input i or output k as -1-k, layout}) besides plain: the
  // host chooses it for nodes whose values are in those layouts, and reads
  // them back through Node::input_layout/output_layout at create.
  template <typename K>
  void kernel(const char* domain, const char* op_type, int since, int end, const char* device,
              std::initializer_list<Constraint> constraints, std::initializer_list<LayoutAccept> layouts,
              uint32_t flags = 0, uint64_t cpu_inputs_mask = 0) {
    std::vector<singa_type_constraint> cs;
    for (const auto& c : constraints) cs.push_back({c.name, c.index, c.dtypes});
    singa_kernel_def def{};
    def.struct_size = sizeof(def);
    def.domain = domain;
    def.op_type = op_type;
    def.since_version = since;
    def.end_version = end;
    def.device = device;
    def.constraints = cs.data();
    def.num_constraints = cs.size();
    def.flags = flags | (cpu_inputs_mask ? uint32_t(SINGA_KERNEL_HOST_INPUTS) : 0u);
    def.create = &KernelTrampolines<K>::create;
    def.compute = &KernelTrampolines<K>::compute;
    def.destroy = &KernelTrampolines<K>::destroy;
    def.cpu_inputs_mask = cpu_inputs_mask;
    attach_gradient<K>(def);  // gradient.hpp: this plugin's gradient hooks for the op
    def.extensions = detail::layout_extension(layouts, def.extensions);
    throw_if(host_->register_kernel(plugin_, &def));
  }
  // Registers a raw C definition (for infer/gradient hooks).
  void kernel_def(const singa_kernel_def& def) { throw_if(host_->register_kernel(plugin_, &def)); }
  void device(const singa_device_def& def) { throw_if(host_->register_device(plugin_, &def)); }
  // Called by the host before it unloads the plugin: the place to join threads and free
  // process-lifetime state, which would otherwise outlive the code that owns it.
  void on_shutdown(void (*fn)(void)) {
    if (info_ && SINGA_HAS_FIELD(info_, singa_plugin, shutdown)) info_->shutdown = fn;
  }
  // The plugin record being filled (for extensions: singa/graph_pass.hpp).
  singa_plugin* plugin_info() const { return info_; }

 private:
  const singa_host_api* host_;
  singa_plugin_handle* plugin_;
  singa_plugin* info_;
};

inline singa_status* plugin_preamble(const singa_host_api* h, singa_plugin* p, const char* name, const char* version,
                                     const char* description) {
  // Fields up to abi_minor sit at fixed offsets in every ABI version, so a
  // host of another major is detected before anything else is touched.
  if (h == nullptr || p == nullptr) return nullptr;
  host_ptr() = h;
  if (SINGA_HAS_FIELD(p, singa_plugin, abi_minor)) {
    p->abi_major = SINGA_ABI_MAJOR;
    p->abi_minor = SINGA_ABI_MINOR;
  }
  if (SINGA_HAS_FIELD(p, singa_plugin, description)) {
    p->name = name;
    p->version = version;
    p->description = description;
  }
  if (h->abi_major != SINGA_ABI_MAJOR) {
    return h->status_new(SINGA_ABI_MISMATCH, ("plugin '" + std::string(name) + "' was built for ABI major " +
                                              std::to_string(SINGA_ABI_MAJOR) + ", host has " +
                                              std::to_string(h->abi_major))
                                                 .c_str());
  }
  return nullptr;
}

}  // namespace sdk
}  // namespace singa

// Defines the plugin's one exported symbol. The body that follows sees
// `reg` (a singa::sdk::Registrar) and may throw.
#define SINGA_PLUGIN(NAME, VERSION, DESCRIPTION)                                                           \
  static void singa_plugin_register_(::singa::sdk::Registrar& reg);                                       \
  extern "C" SINGA_EXPORT singa_status* singa_plugin_init(const singa_host_api* host, singa_plugin* plugin) { \
    if (singa_status* st = ::singa::sdk::plugin_preamble(host, plugin, NAME, VERSION, DESCRIPTION)) return st; \
    SINGA_TRY_BEGIN                                                                                        \
    ::singa::sdk::Registrar reg(host, plugin->handle, plugin);                                                  \
    singa_plugin_register_(reg);                                                                           \
    SINGA_TRY_END                                                                                          \
  }                                                                                                        \
  static void singa_plugin_register_(::singa::sdk::Registrar& reg)

#include <singa/gradient.hpp>  // GradBuilder, SINGA_GRADIENT, attach_gradient

#endif  // SINGA_KERNEL_HPP
