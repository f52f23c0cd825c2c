// Cast and CastLike between every pair of float, double, float16, bfloat16,
// integer and bool types, and from strings to those. Float-to-integer
// conversions saturate (NaN -> 0) instead of invoking C++'s undefined
// out-of-range conversion.
//
// Cast-19..25 add the float8 types (with `saturate`), the packed 4-bit and
// 2-bit integers, float4e2m1 and float8e8m0 (with `round_mode`). Those go
// element by element through float (the small floats) or int32 (the packed
// integers), both exact for them; conversions to the packed integers keep
// the low bits of the integer (as ONNX's reference does), to the small floats
// round to nearest even (sdk::minifloat, docs/abi.md).
#include "cast_int_avx512.hpp"
#include "common.hpp"
#include "half_convert_f32.hpp"
#include "registry.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

namespace singa {
namespace ops {
namespace tensor {
namespace {

constexpr uint64_t kCastTypes = sdk::kNumericTypes | sdk::bit(SINGA_ONNX_BOOL);
// Types converted one element at a time through float or int32.
constexpr uint64_t kSmallTypes = sdk::kFloat8Types | sdk::kPackedTypes;
constexpr uint64_t kPackedIntTypes = sdk::bit(SINGA_ONNX_UINT4) | sdk::bit(SINGA_ONNX_INT4) |
                                     sdk::bit(SINGA_ONNX_UINT2) | sdk::bit(SINGA_ONNX_INT2);

inline bool is_small(int32_t t) { return (kSmallTypes & sdk::bit(t)) != 0; }
inline bool is_packed_int(int32_t t) { return (kPackedIntTypes & sdk::bit(t)) != 0; }
inline bool is_signed_packed(int32_t t) { return t == SINGA_ONNX_INT4 || t == SINGA_ONNX_INT2; }

// The opset whose Cast first takes each newer type.
int first_opset_of(int32_t t) {
  switch (t) {
    case SINGA_ONNX_FLOAT8E4M3FN: case SINGA_ONNX_FLOAT8E4M3FNUZ: case SINGA_ONNX_FLOAT8E5M2:
    case SINGA_ONNX_FLOAT8E5M2FNUZ: return 19;
    case SINGA_ONNX_UINT4: case SINGA_ONNX_INT4: return 21;
    case SINGA_ONNX_FLOAT4E2M1: return 23;
    case SINGA_ONNX_FLOAT8E8M0: return 24;
    case SINGA_ONNX_UINT2: case SINGA_ONNX_INT2: return 25;
    default: return 1;
  }
}

// How a conversion to the small types behaves (Cast-19's saturate,
// Cast-25's round_mode).
struct SmallOptions {
  bool saturate = true;
  sdk::minifloat::E8M0Round round = sdk::minifloat::E8M0Round::kUp;
};

// A source value as a double / an int64, whatever its C++ type.
template <typename F>
inline double as_double(F v) {
  if constexpr (std::is_same<F, bool>::value)
    return v ? 1.0 : 0.0;
  else if constexpr (std::is_same<F, sdk::half>::value || std::is_same<F, sdk::bfloat16>::value)
    return double(float(v));
  else
    return double(v);
}
template <typename F>
inline int64_t as_int64(F v) {
  if constexpr (std::is_same<F, bool>::value) {
    return v ? 1 : 0;
  } else if constexpr (std::is_integral<F>::value) {
    return int64_t(v);  // uint64 beyond int64 keeps its low bits, which is all a packed type keeps
  } else {
    double d = as_double(v);
    if (std::isnan(d)) return 0;
    if (d <= -9.2233720368547758e18) return std::numeric_limits<int64_t>::min();
    if (d >= 9.2233720368547758e18) return std::numeric_limits<int64_t>::max();
    return int64_t(d);  // toward zero
  }
}

// The code of one value in a small float type (float8, e8m0, float4).
inline uint8_t small_float_code(double v, int32_t to, const SmallOptions& o) {
  if (to == SINGA_ONNX_FLOAT4E2M1) return sdk::minifloat::to_float4e2m1(v);
  if (to == SINGA_ONNX_FLOAT8E8M0) return sdk::minifloat::to_e8m0(v, o.saturate, o.round);
  return sdk::minifloat::to_float8(v, to, o.saturate);
}

// Writes n values src[i] to `dst` in small type `to`.
template <typename F>
void encode_small(const Context& ctx, const F* src, int64_t n, int32_t to, const SmallOptions& o, void* dst) {
  uint8_t* out = static_cast<uint8_t*>(dst);
  const int bits = sdk::dtype_bits(to);
  if (bits == 8) {
    ctx.parallel_for(n, 16384, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) out[i] = small_float_code(as_double(src[i]), to, o);
    });
    return;
  }
  // Packed: each byte is built from its 2 or 4 elements (padding bits 0).
  const int per = 8 / bits;
  const uint8_t mask = uint8_t((1u << bits) - 1);
  const bool is_int = is_packed_int(to);
  const int64_t nbytes = int64_t(sdk::dtype_nbytes(to, n));
  ctx.parallel_for(nbytes, 8192, [&](int64_t b, int64_t e) {
    for (int64_t j = b; j < e; ++j) {
      uint8_t byte = 0;
      for (int k = 0; k < per; ++k) {
        int64_t i = j * per + k;
        if (i >= n) break;
        uint8_t code = is_int ? uint8_t(uint64_t(as_int64(src[i])) & mask) : small_float_code(as_double(src[i]), to, o);
        byte = uint8_t(byte | ((code & mask) << (k * bits)));
      }
      out[j] = byte;
    }
  });
}

// The values of a small-type tensor: as floats (small floats) or int32
// (packed integers), both exact.
std::vector<float> decode_small_floats(const Tensor& x) {
  const int32_t t = x.dtype();
  const int64_t n = x.numel();
  std::vector<float> out(static_cast<size_t>(n));
  if (t == SINGA_ONNX_FLOAT4E2M1) {
    for (int64_t i = 0; i < n; ++i) out[size_t(i)] = sdk::minifloat::from_float4e2m1(sdk::packed_get(x.data_ptr(), i, 4));
    return out;
  }
  float table[256];
  for (int c = 0; c < 256; ++c) table[c] = sdk::minifloat::from_float8(uint8_t(c), t);
  const uint8_t* p = x.data<uint8_t>();
  for (int64_t i = 0; i < n; ++i) out[size_t(i)] = table[p[i]];
  return out;
}
std::vector<int32_t> decode_packed_ints(const Tensor& x) {
  const int32_t t = x.dtype();
  const int bits = sdk::dtype_bits(t);
  const int64_t n = x.numel();
  std::vector<int32_t> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    out[size_t(i)] = sdk::packed_int(sdk::packed_get(x.data_ptr(), i, bits), bits, is_signed_packed(t));
  return out;
}

template <typename T>
constexpr bool is_narrow_float = std::is_same<T, sdk::half>::value || std::is_same<T, sdk::bfloat16>::value;

template <typename To, typename From>
To saturate(From v) {
  if (std::isnan(v)) return To(0);
  if (v <= From(std::numeric_limits<To>::lowest())) return std::numeric_limits<To>::lowest();
  if (v >= From(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
  return static_cast<To>(v);
}

// Cast to bfloat16 truncates the float's low 16 bits, as the ONNX reference
// (and the node suite's expected data) does; NaN stays a quiet NaN.
inline sdk::bfloat16 truncate_to_bfloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  sdk::bfloat16 b;
  b.bits = std::isnan(f) ? uint16_t((x >> 16) | 0x40u) : uint16_t(x >> 16);
  return b;
}

template <typename To, typename From>
To convert(From v) {
  if constexpr (std::is_same<To, From>::value) {
    return v;
  } else if constexpr (std::is_same<To, sdk::bfloat16>::value) {
    if constexpr (is_narrow_float<From>)
      return truncate_to_bfloat16(float(v));
    else
      return truncate_to_bfloat16(static_cast<float>(v));
  } else if constexpr (is_narrow_float<From>) {
    return convert<To>(float(v));
  } else if constexpr (is_narrow_float<To>) {
    return To(float(v));
  } else if constexpr (std::is_same<To, bool>::value) {
    return v != From(0);
  } else if constexpr (std::is_integral<To>::value && std::is_floating_point<From>::value) {
    return saturate<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

// ONNX TensorProto.DataType names, as Cast-1..5 spell its `to` attribute.
int32_t dtype_from_name(const std::string& name) {
  static const char* names[] = {"UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64", "STRING",
                                "BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16"};
  for (int32_t i = 1; i <= 16; ++i)
    if (name == names[i]) return i;
  return 0;
}

class CastBase : public KernelBase {
 protected:
  explicit CastBase(const Node& node) : KernelBase(node) {
    // The ONNX reference truncated float -> bfloat16 until it moved to
    // ml_dtypes (round to nearest even); the node suites' data follow it:
    // opset 13's truncates, opset 19 and later round.
    bf16_round_ = node.opset() >= 19;
    if (node.opset() >= 19) {
      int64_t sat = node.attr_int("saturate", 1);
      if (sat != 0 && sat != 1) sdk::fail("attribute 'saturate' must be 0 or 1, got " + std::to_string(sat));
      small_.saturate = sat != 0;
    }
    std::string mode = node.attr_string("round_mode", "up");
    if (mode == "up") small_.round = sdk::minifloat::E8M0Round::kUp;
    else if (mode == "down") small_.round = sdk::minifloat::E8M0Round::kDown;
    else if (mode == "nearest") small_.round = sdk::minifloat::E8M0Round::kNearest;
    else sdk::fail("attribute 'round_mode' must be 'up', 'down' or 'nearest', got '" + mode + "'");
  }

  void cast(const Context& ctx, const Tensor& x, int32_t to) const {
    const int32_t from = x.dtype();
    if (to == SINGA_ONNX_STRING) {
      format_strings(ctx, x);
      return;
    }
    if (from == SINGA_ONNX_STRING) {
      parse_strings(ctx, x, to);
      return;
    }
    Tensor y = ctx.output(0, x.shape(), to);
    if (from == to) {
      parallel_memcpy(ctx, y.data_ptr(), x.data_ptr(), sdk::dtype_nbytes(from, x.numel()));
      return;
    }
    if (is_small(from) || is_small(to)) {
      cast_small(ctx, x, y, to);
      return;
    }
    if (cast_half(ctx, x, y, to)) return;
    if (cast_int(ctx, x, y, to)) return;
    if (to == SINGA_ONNX_BFLOAT16 && bf16_round_) {
      sdk::dispatch(
          from,
          [&](auto ftag) {
            using F = decltype(ftag);
            const F* src = x.data<F>();
            sdk::bfloat16* dst = y.data<sdk::bfloat16>();
            ctx.parallel_for(x.numel(), 16384, [&](int64_t b, int64_t e) {
              for (int64_t i = b; i < e; ++i) dst[i] = sdk::bfloat16(float(as_double(src[i])));
            });
          },
          kCastTypes);
      return;
    }
    sdk::dispatch(
        from,
        [&](auto ftag) {
          using F = decltype(ftag);
          sdk::dispatch(
              to,
              [&](auto ttag) {
                using T = decltype(ttag);
                const F* src = x.data<F>();
                T* dst = y.data<T>();
                ctx.parallel_for(x.numel(), 16384, [&](int64_t b, int64_t e) {
                  for (int64_t i = b; i < e; ++i) dst[i] = convert<T>(src[i]);
                });
              },
              kCastTypes);
        },
        kCastTypes);
  }

  // float <-> float16, the mixed-precision casts: F16C where the CPU has it
  // (half_convert_f32.hpp, bit-exact with sdk::half). False for other pairs.
  static bool cast_half(const Context& ctx, const Tensor& x, const Tensor& y, int32_t to) {
    const int32_t from = x.dtype();
    if (from == SINGA_ONNX_FLOAT && to == SINGA_ONNX_FLOAT16) {
      const float* src = x.data<float>();
      uint16_t* dst = static_cast<uint16_t*>(y.data_ptr());
      ctx.parallel_for(x.numel(), 16384, [&](int64_t b, int64_t e) { vec::f32_to_f16(src + b, dst + b, e - b); });
      return true;
    }
    if (from == SINGA_ONNX_FLOAT16 && to == SINGA_ONNX_FLOAT) {
      const uint16_t* src = static_cast<const uint16_t*>(x.data_ptr());
      float* dst = y.data<float>();
      ctx.parallel_for(x.numel(), 16384, [&](int64_t b, int64_t e) { vec::f16_to_f32(src + b, dst + b, e - b); });
      return true;
    }
    return false;
  }

  // float32 / float64 -> int32 / int64 with AVX-512 (cast_int_avx512.hpp),
  // the casts of index and shape computations. False for other pairs.
  static bool cast_int(const Context& ctx, const Tensor& x, const Tensor& y, int32_t to) {
#ifdef SINGA_CAST_INT_AVX512
    const int32_t from = x.dtype();
    const bool f32 = from == SINGA_ONNX_FLOAT, f64 = from == SINGA_ONNX_DOUBLE;
    const bool i64 = to == SINGA_ONNX_INT64, i32 = to == SINGA_ONNX_INT32;
    if (!((f32 && (i64 || i32)) || (f64 && i64)) || !cast_int_avx512_supported()) return false;
    ctx.parallel_for(x.numel(), 16384, [&](int64_t b, int64_t e) {
      if (f32 && i64)
        cast_f32_to_i64_avx512(x.data<float>() + b, y.data<int64_t>() + b, e - b);
      else if (f32)
        cast_f32_to_i32_avx512(x.data<float>() + b, y.data<int32_t>() + b, e - b);
      else
        cast_f64_to_i64_avx512(x.data<double>() + b, y.data<int64_t>() + b, e - b);
    });
    return true;
#else
    (void)ctx, (void)x, (void)y, (void)to;
    return false;
#endif
  }

  // From or to a small type: through float (small floats) or int32 (packed
  // integers), which hold every value of those types exactly.
  void cast_small(const Context& ctx, const Tensor& x, const Tensor& y, int32_t to) const {
    const int32_t from = x.dtype();
    const int64_t n = x.numel();
    if (is_small(from)) {
      if (is_packed_int(from)) {
        std::vector<int32_t> v = decode_packed_ints(x);
        store(ctx, v.data(), n, y, to);
      } else {
        std::vector<float> v = decode_small_floats(x);
        store(ctx, v.data(), n, y, to);
      }
      return;
    }
    sdk::dispatch(
        from, [&](auto ftag) { encode_small(ctx, x.data<decltype(ftag)>(), n, to, small_, y.data_ptr()); }, kCastTypes);
  }

  // Writes n values of C++ type F to y (of any cast type, small or not).
  template <typename F>
  void store(const Context& ctx, const F* src, int64_t n, const Tensor& y, int32_t to) const {
    if (is_small(to)) {
      encode_small(ctx, src, n, to, small_, y.data_ptr());
      return;
    }
    sdk::dispatch(
        to,
        [&](auto ttag) {
          using T = decltype(ttag);
          T* dst = y.data<T>();
          ctx.parallel_for(n, 16384, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) dst[i] = convert<T>(src[i]);
          });
        },
        kCastTypes);
  }

  // Number -> string: the shortest text that reads back as the same value
  // (what numpy's str gives), "NaN"/"INF"/"-INF" as the ONNX reference writes.
  void format_strings(const Context& ctx, const Tensor& x) const {
    ctx.output(0, x.shape(), SINGA_ONNX_STRING);  // the strings go in through set_string
    if (x.dtype() == SINGA_ONNX_STRING) {
      for (int64_t i = 0; i < x.numel(); ++i) ctx.set_string(0, i, Context::string_at(x, i));
      return;
    }
    if (is_packed_int(x.dtype())) {
      std::vector<int32_t> v = decode_packed_ints(x);
      for (int64_t i = 0; i < x.numel(); ++i) ctx.set_string(0, i, std::to_string(v[size_t(i)]));
      return;
    }
    if (is_small(x.dtype())) {
      std::vector<float> v = decode_small_floats(x);
      for (int64_t i = 0; i < x.numel(); ++i) ctx.set_string(0, i, to_text(v[size_t(i)]));
      return;
    }
    sdk::dispatch(
        x.dtype(),
        [&](auto ftag) {
          using F = decltype(ftag);
          const F* src = x.data<F>();
          for (int64_t i = 0; i < x.numel(); ++i) ctx.set_string(0, i, to_text(src[i]));
        },
        kCastTypes);
  }

  template <typename F>
  static std::string to_text(F v) {
    char buf[64];
    if constexpr (std::is_same<F, bool>::value) {
      return v ? "1" : "0";
    } else if constexpr (std::is_integral<F>::value) {
      return std::to_string(v);
    } else {
      double d = static_cast<double>(convert<double>(v));
      if (std::isnan(d)) return "NaN";
      if (std::isinf(d)) return d > 0 ? "INF" : "-INF";
      // Narrow types round-trip through their own width, doubles through 17 digits.
      bool is_double = std::is_same<F, double>::value;
      for (int prec = 1; prec <= 17; ++prec) {
        std::snprintf(buf, sizeof buf, "%.*g", prec, d);
        double back = std::strtod(buf, nullptr);
        if (is_double ? back == d : float(convert<F>(back)) == float(v)) break;
      }
      return buf;
    }
  }

  // String -> number: each element is parsed as a decimal number (strtod
  // accepts "NaN", "INF", "+INF", "-INF" as the ONNX reference writes them).
  void parse_strings(const Context& ctx, const Tensor& x, int32_t to) const {
    Tensor y = ctx.output(0, x.shape(), to);
    const char* const* src = x.data<const char*>();
    if (is_small(to)) {
      // Parsed as double (or int64 for the packed integers), then converted.
      const bool as_int = is_packed_int(to);
      std::vector<double> d(as_int ? 0 : size_t(x.numel()));
      std::vector<int64_t> k(as_int ? size_t(x.numel()) : 0);
      for (int64_t i = 0; i < x.numel(); ++i) {
        if (as_int) k[size_t(i)] = parse_as<int64_t>(src[i], to);
        else d[size_t(i)] = parse_as<double>(src[i], to);
      }
      if (as_int) store(ctx, k.data(), x.numel(), y, to);
      else store(ctx, d.data(), x.numel(), y, to);
      return;
    }
    sdk::dispatch(
        to,
        [&](auto ttag) {
          using T = decltype(ttag);
          T* dst = y.data<T>();
          for (int64_t i = 0; i < x.numel(); ++i) dst[i] = parse_as<T>(src[i], to);
        },
        kCastTypes);
  }

  // One string element (null reads as "") parsed as a decimal number of type
  // T; an integer out of T's parse range, or any text left over, fails naming
  // `to`.
  template <typename T>
  T parse_as(const char* s, int32_t to) const {
    const char* text = s ? s : "";
    char* end = nullptr;
    errno = 0;
    T v;
    if constexpr (std::is_unsigned<T>::value && !std::is_same<T, bool>::value) {
      v = static_cast<T>(std::strtoull(text, &end, 10));
    } else if constexpr (std::is_integral<T>::value && !std::is_same<T, bool>::value) {
      v = static_cast<T>(std::strtoll(text, &end, 10));
    } else {
      v = convert<T>(std::strtod(text, &end));
      errno = 0;  // out-of-range floats become +-inf or 0, as in numpy
    }
    if (end == text || *end != '\0' || errno != 0)
      fail(std::string("cannot parse '") + text + "' as " + sdk::dtype_name(to));
    return v;
  }

 private:
  bool bf16_round_ = false;
  SmallOptions small_;
};

class Cast : public CastBase {
 public:
  explicit Cast(const Node& node) : CastBase(node) {
    // Cast-1..5 name the type as a string; from 6 it is the enum value.
    std::string name = node.attr_string("to", "");
    int64_t to = name.empty() ? node.attr_int("to", 0) : dtype_from_name(name);
    if (to <= 0 || to > sdk::kNewestDtype)
      sdk::fail("attribute 'to' is missing or names no known type (" + (name.empty() ? std::to_string(to) : name) + ")");
    to_ = int32_t(to);
    if (!(sdk::bit(to_) & (kCastTypes | kSmallTypes | sdk::bit(SINGA_ONNX_STRING))))
      sdk::fail(std::string("casting to ") + sdk::dtype_name(to_) + " is not supported");
    if (node.opset() < first_opset_of(to_))
      sdk::fail(std::string("casting to ") + sdk::dtype_name(to_) + " needs opset " + std::to_string(first_opset_of(to_)) +
                ", the model has " + std::to_string(node.opset()));
  }

  void compute(Context& ctx) const { cast(ctx, required(ctx, 0, "input"), to_); }

 private:
  int32_t to_ = 0;
};

class CastLike : public CastBase {
 public:
  explicit CastLike(const Node& node) : CastBase(node) {}

  void compute(Context& ctx) const {
    cast(ctx, required(ctx, 0, "input"), required(ctx, 1, "target_type").dtype());
  }
};

}  // namespace

void register_cast_ops(sdk::Registrar& reg) {
  // Strings are written through the host's ctx_set_string (ABI 1.1).
  const uint64_t any = kCastTypes | sdk::bit(SINGA_ONNX_STRING);
  reg.kernel<Cast>("", "Cast", 1, 5, "cpu", {{"T1", 0, any}, {"T2", -1, any}});
  reg.kernel<Cast>("", "Cast", 6, 17, "cpu", {{"T1", 0, any}, {"T2", -1, any}});
  reg.kernel<CastLike>("", "CastLike", 15, SINGA_VERSION_OPEN, "cpu", {{"T1", 0, any}, {"T2", 1, any}});
  // Each later version takes the types of the one before and more.
  using sdk::bit;
  const uint64_t v19 = any | bit(SINGA_ONNX_FLOAT8E4M3FN) | bit(SINGA_ONNX_FLOAT8E4M3FNUZ) | bit(SINGA_ONNX_FLOAT8E5M2) |
                       bit(SINGA_ONNX_FLOAT8E5M2FNUZ);
  const uint64_t v21 = v19 | bit(SINGA_ONNX_UINT4) | bit(SINGA_ONNX_INT4);
  const uint64_t v23 = v21 | bit(SINGA_ONNX_FLOAT4E2M1);
  const uint64_t v24 = v23 | bit(SINGA_ONNX_FLOAT8E8M0);
  const uint64_t v25 = v24 | bit(SINGA_ONNX_UINT2) | bit(SINGA_ONNX_INT2);
  for (auto v : {std::pair<int, uint64_t>{19, v19}, {21, v21}, {23, v23}, {24, v24}, {25, v25}}) {
    reg.kernel<Cast>("", "Cast", v.first, SINGA_VERSION_OPEN, "cpu", {{"T1", 0, v.second}, {"T2", -1, v.second}});
    reg.kernel<CastLike>("", "CastLike", v.first, SINGA_VERSION_OPEN, "cpu", {{"T1", 0, v.second}, {"T2", 1, v.second}});
  }
}

}  // namespace tensor
}  // namespace ops
}  // namespace singa
