// Cast and CastLike between every pair of float, double, float16, bfloat16,
// integer and bool types, and from strings to those. Float-to-integer
// conversions saturate (NaN -> 0) instead of invoking C++'s undefined
// out-of-range conversion.
#include "common.hpp"
#include "registry.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <type_traits>

namespace singa {
namespace ops {
namespace tensor {
namespace {

constexpr uint64_t kCastTypes = sdk::kNumericTypes | sdk::bit(SINGA_ONNX_BOOL);

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
  using KernelBase::KernelBase;

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
      parallel_memcpy(ctx, y.data_ptr(), x.data_ptr(), size_t(x.numel()) * elem_size(x));
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

  // Number -> string: the shortest text that reads back as the same value
  // (what numpy's str gives), "NaN"/"INF"/"-INF" as the ONNX reference writes.
  void format_strings(const Context& ctx, const Tensor& x) const {
    ctx.output(0, x.shape(), SINGA_ONNX_STRING);  // the strings go in through set_string
    if (x.dtype() == SINGA_ONNX_STRING) {
      for (int64_t i = 0; i < x.numel(); ++i) ctx.set_string(0, i, Context::string_at(x, i));
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
    sdk::dispatch(
        to,
        [&](auto ttag) {
          using T = decltype(ttag);
          T* dst = y.data<T>();
          for (int64_t i = 0; i < x.numel(); ++i) {
            const char* text = src[i] ? src[i] : "";
            char* end = nullptr;
            errno = 0;
            if constexpr (std::is_unsigned<T>::value && !std::is_same<T, bool>::value) {
              dst[i] = static_cast<T>(std::strtoull(text, &end, 10));
            } else if constexpr (std::is_integral<T>::value && !std::is_same<T, bool>::value) {
              dst[i] = static_cast<T>(std::strtoll(text, &end, 10));
            } else {
              dst[i] = convert<T>(std::strtod(text, &end));
              errno = 0;  // out-of-range floats become +-inf or 0, as in numpy
            }
            if (end == text || *end != '\0' || errno != 0)
              fail(std::string("cannot parse '") + text + "' as " + sdk::dtype_name(to));
          }
        },
        kCastTypes);
  }
};

class Cast : public CastBase {
 public:
  explicit Cast(const Node& node) : CastBase(node) {
    // Cast-1..5 name the type as a string; from 6 it is the enum value.
    std::string name = node.attr_string("to", "");
    to_ = name.empty() ? int32_t(node.attr_int("to", 0)) : dtype_from_name(name);
    if (to_ <= 0 || to_ > 16)
      sdk::fail("attribute 'to' is missing or names no known type (" + (name.empty() ? std::to_string(to_) : name) + ")");
    if (!(sdk::bit(to_) & (kCastTypes | sdk::bit(SINGA_ONNX_STRING))))
      sdk::fail(std::string("casting to ") + sdk::dtype_name(to_) + " is not supported");
  }

  void compute(Context& ctx) const { cast(ctx, required(ctx, 0, "input"), to_); }

 private:
  int32_t to_ = 0;
};

class CastLike : public CastBase {
 public:
  using CastBase::CastBase;

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
  reg.kernel<CastLike>("", "CastLike", 15, 17, "cpu", {{"T1", 0, any}, {"T2", 1, any}});
}

}  // namespace tensor
}  // namespace ops
}  // namespace singa
