// binary.cpp - Add, Sub, Mul, Div, Pow, Mod, BitShift, BitwiseAnd/Or/Xor with broadcasting.
#include "binary_common.hpp"
#include "binary_half.hpp"
#include "registry.hpp"

namespace singa {
namespace ops {
namespace math {
namespace {

// The kernels whose output takes A's type and the broadcast shape: f(T{}, io,
// out) runs for A's type T when it is one of kTypes.
class SameTypeBinary : public BinaryBase {
 public:
  using BinaryBase::BinaryBase;

 protected:
  template <uint64_t kTypes, typename F>
  void same_type(sdk::Context& ctx, F&& f) const {
    BinaryOperands io;
    operands(ctx, io);
    sdk::Tensor out = ctx.output(0, io.out_shape, io.a.dtype());
    sdk::dispatch(
        io.a.dtype(),
        [&](auto tag) {
          if constexpr (in_mask<decltype(tag)>(kTypes)) f(tag, io, out);
        },
        kTypes);
  }
};

struct AddFn {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (is_int_v<C>) {
      using W = wide_unsigned_t<C>;
      return C(W(a) + W(b));
    } else {
      return a + b;
    }
  }
};
struct SubFn {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (is_int_v<C>) {
      using W = wide_unsigned_t<C>;
      return C(W(a) - W(b));
    } else {
      return a - b;
    }
  }
};
struct MulFn {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (is_int_v<C>) {
      using W = wide_unsigned_t<C>;
      return C(W(a) * W(b));
    } else {
      return a * b;
    }
  }
};
// Integers truncate toward zero (C semantics, as the ONNX tests expect);
// INT_MIN / -1 wraps instead of trapping.
struct DivFn {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (is_int_v<C> && std::is_signed<C>::value) {
      return b == C(-1) ? wrap_neg(a) : C(a / b);
    } else {
      return C(a / b);
    }
  }
};

#ifdef SINGA_HAVE_F16C_PATH
template <typename Fn> constexpr half_binary::Arith arith_of() {
  if constexpr (std::is_same<Fn, AddFn>::value) return half_binary::Arith::kAdd;
  if constexpr (std::is_same<Fn, SubFn>::value) return half_binary::Arith::kSub;
  if constexpr (std::is_same<Fn, MulFn>::value) return half_binary::Arith::kMul;
  return half_binary::Arith::kDiv;
}
#endif

// Add, Sub, Mul, Div: one kernel shape, four functors.
template <typename Fn, bool kIsDivision>
class ArithKernel : public SameTypeBinary {
 public:
  using SameTypeBinary::SameTypeBinary;
  void compute(sdk::Context& ctx) const {
    same_type<kNumeric>(ctx, [&](auto tag, const BinaryOperands& io, sdk::Tensor& out) {
      using T = decltype(tag);
      if constexpr (kIsDivision && is_int_v<T>) sdk::check(!has_zero<T>(io.b), "integer division by zero");
#ifdef SINGA_HAVE_F16C_PATH
      if constexpr (std::is_same<T, half>::value || std::is_same<T, bfloat16>::value) {
        if (half_binary_supported()) {
          half_binary_broadcast<arith_of<Fn>(), T, Fn>(ctx, io.a, io.b, out);
          return;
        }
      }
#endif
      binary_broadcast<T, T, T>(ctx, io.a, io.b, out, Via<T, Fn>{});
    });
  }
};

// ------------------------------------------------------------------ Mod

// fmod=1: the remainder of truncated division (sign of the dividend).
struct FmodFn {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_floating_point<C>::value) {
      return std::fmod(a, b);
    } else if constexpr (std::is_signed<C>::value) {
      return b == C(-1) ? C(0) : C(a % b);
    } else {
      return C(a % b);
    }
  }
};
// fmod=0: the remainder of floored division (sign of the divisor), integers only.
struct FloorModFn {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_signed<C>::value) {
      if (b == C(-1)) return C(0);
      C r = C(a % b);
      return (r != 0 && ((r < 0) != (b < 0))) ? C(r + b) : r;
    } else {
      return C(a % b);
    }
  }
};

class ModKernel : public SameTypeBinary {
 public:
  explicit ModKernel(const sdk::Node& node) : SameTypeBinary(node) {
    int64_t f = node.attr_int("fmod", 0);
    if (f != 0 && f != 1) sdk::fail("attribute fmod must be 0 or 1, got " + std::to_string(f));
    fmod_ = f == 1;
    int32_t t = node.input_info(0).onnx_dtype;
    if (!fmod_ && (SINGA_DTYPE_BIT(t) & kFloatLike))
      sdk::fail(std::string("fmod must be 1 for floating-point inputs (got ") + sdk::dtype_name(t) + ")");
  }
  void compute(sdk::Context& ctx) const {
    same_type<kNumeric>(ctx, [&](auto tag, const BinaryOperands& io, sdk::Tensor& out) {
      using T = decltype(tag);
      if constexpr (is_float_v<T>) {
        SINGA_CHECK(
            fmod_, std::string("fmod must be 1 for floating-point inputs (got ") + sdk::dtype_name(io.a.dtype()) + ")");
        binary_broadcast<T, T, T>(ctx, io.a, io.b, out, Via<T, FmodFn>{});
      } else if constexpr (is_int_v<T>) {
        sdk::check(!has_zero<T>(io.b), "integer modulo by zero");
        if (fmod_)
          binary_broadcast<T, T, T>(ctx, io.a, io.b, out, FmodFn{});
        else
          binary_broadcast<T, T, T>(ctx, io.a, io.b, out, FloorModFn{});
      }
    });
  }

 private:
  bool fmod_ = false;
};

// ------------------------------------------------------------- BitShift

// Shifting by the bit width or more gives 0 (numpy), not C's undefined result.
struct ShiftLeftFn {
  template <typename C>
  C operator()(C a, C b) const {
    return b >= C(sizeof(C) * 8) ? C(0) : C(wide_unsigned_t<C>(a) << b);
  }
};
struct ShiftRightFn {
  template <typename C>
  C operator()(C a, C b) const {
    return b >= C(sizeof(C) * 8) ? C(0) : C(a >> b);
  }
};

class BitShiftKernel : public SameTypeBinary {
 public:
  explicit BitShiftKernel(const sdk::Node& node) : SameTypeBinary(node) {
    std::string dir = node.attr_string("direction", "");
    if (dir != "LEFT" && dir != "RIGHT")
      sdk::fail("attribute direction must be \"LEFT\" or \"RIGHT\", got \"" + dir + "\"");
    left_ = dir == "LEFT";
  }
  void compute(sdk::Context& ctx) const {
    same_type<sdk::kUnsignedIntTypes>(ctx, [&](auto tag, const BinaryOperands& io, sdk::Tensor& out) {
      using T = decltype(tag);
      if (left_)
        binary_broadcast<T, T, T>(ctx, io.a, io.b, out, ShiftLeftFn{});
      else
        binary_broadcast<T, T, T>(ctx, io.a, io.b, out, ShiftRightFn{});
    });
  }

 private:
  bool left_ = true;
};

// ------------------------------------------------------ BitwiseAnd/Or/Xor

struct BitAndFn {
  template <typename C>
  C operator()(C a, C b) const {
    return C(a & b);
  }
};
struct BitOrFn {
  template <typename C>
  C operator()(C a, C b) const {
    return C(a | b);
  }
};
struct BitXorFn {
  template <typename C>
  C operator()(C a, C b) const {
    return C(a ^ b);
  }
};

// Opset 18: every signed and unsigned integer type, numpy broadcasting.
template <typename Fn>
class BitwiseKernel : public SameTypeBinary {
 public:
  using SameTypeBinary::SameTypeBinary;
  void compute(sdk::Context& ctx) const {
    same_type<sdk::kIntTypes>(ctx, [&](auto tag, const BinaryOperands& io, sdk::Tensor& out) {
      using T = decltype(tag);
      binary_broadcast<T, T, T>(ctx, io.a, io.b, out, Fn{});
    });
  }
};

// ------------------------------------------------------------------ Pow

constexpr uint64_t kPowBase = kFloatLike | sdk::bit(SINGA_ONNX_INT32) | sdk::bit(SINGA_ONNX_INT64);

// Integer power by squaring, wrapping on overflow. A negative exponent gives
// the exact result truncated toward zero (0 unless the base is 1 or -1).
template <typename T, typename E>
T int_pow(T base, E e) {
  if constexpr (std::is_signed<E>::value) {
    if (e < 0) {
      if (base == T(1)) return T(1);
      if (base == T(-1)) return (e & 1) ? T(-1) : T(1);
      return T(0);
    }
  }
  using U = std::make_unsigned_t<T>;
  U r = 1, b = U(base);
  for (uint64_t n = uint64_t(e); n; n >>= 1) {
    if (n & 1) r = U(r * b);
    b = U(b * b);
  }
  return T(r);
}

template <typename T, typename T1>
struct PowFn {
  T operator()(T a, T1 b) const {
    if constexpr (is_int_v<T> && is_int_v<T1>) {
      return int_pow(a, b);
    } else if constexpr (std::is_same<T, float>::value && std::is_same<T1, float>::value) {
      return std::pow(a, b);
    } else {
      return convert<T>(std::pow(double(compute_t<T>(a)), double(compute_t<T1>(b))));
    }
  }
};
// The common x^2 (e.g. variance in decomposed normalisations) is a product.
template <typename T, typename T1>
struct SquareFn {
  T operator()(T a, T1) const {
    compute_t<T> x = a;
    return T(x * x);
  }
};

class PowKernel : public BinaryBase {
 public:
  using BinaryBase::BinaryBase;
  void compute(sdk::Context& ctx) const {
    BinaryOperands io;
    // Before opset 12 base and exponent share one type.
    operands(ctx, io, /*same_type=*/false);
    sdk::Tensor out = ctx.output(0, io.out_shape, io.a.dtype());
    sdk::dispatch(
        io.a.dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          if constexpr (in_mask<T>(kPowBase)) {
            sdk::dispatch(
                io.b.dtype(),
                [&](auto tag1) {
                  using T1 = decltype(tag1);
                  if constexpr (in_mask<T1>(kNumeric)) {
                    if constexpr (is_float_v<T>) {
                      if (io.b.numel() == 1 && double(compute_t<T1>(io.b.data<T1>()[0])) == 2.0) {
                        binary_broadcast<T, T, T1>(ctx, io.a, io.b, out, SquareFn<T, T1>{});
                        return;
                      }
                    }
                    binary_broadcast<T, T, T1>(ctx, io.a, io.b, out, PowFn<T, T1>{});
                  }
                },
                kNumeric);
          }
        },
        kPowBase);
  }
};

template <typename K>
void register_two_eras(sdk::Registrar& reg, const char* op, uint64_t types_a, const char* b_name, uint64_t types_b) {
  // 1-6: the broadcast/axis attributes; 7-17: numpy broadcasting.
  reg.kernel<K>("", op, 1, 6, "cpu", {{"T", 0, types_a}, {b_name, 1, types_b}});
  reg.kernel<K>("", op, 7, 17, "cpu", {{"T", 0, types_a}, {b_name, 1, types_b}});
}

}  // namespace

void register_binary(sdk::Registrar& reg) {
  register_two_eras<ArithKernel<AddFn, false>>(reg, "Add", kNumeric, "T", kNumeric);
  register_two_eras<ArithKernel<SubFn, false>>(reg, "Sub", kNumeric, "T", kNumeric);
  register_two_eras<ArithKernel<MulFn, false>>(reg, "Mul", kNumeric, "T", kNumeric);
  register_two_eras<ArithKernel<DivFn, true>>(reg, "Div", kNumeric, "T", kNumeric);
  // Pow: the exponent has its own type T1 from opset 12 on; accepting any
  // numeric exponent earlier is a superset.
  register_two_eras<PowKernel>(reg, "Pow", kPowBase, "T1", kNumeric);
  reg.kernel<ModKernel>("", "Mod", 10, 17, "cpu", {{"T", 0, kNumeric}, {"T", 1, kNumeric}});
  reg.kernel<BitShiftKernel>("", "BitShift", 11, SINGA_VERSION_OPEN, "cpu",
                             {{"T", 0, sdk::kUnsignedIntTypes}, {"T", 1, sdk::kUnsignedIntTypes}});
  const uint64_t ints = sdk::kIntTypes;
  reg.kernel<BitwiseKernel<BitAndFn>>("", "BitwiseAnd", 18, SINGA_VERSION_OPEN, "cpu", {{"T", 0, ints}, {"T", 1, ints}});
  reg.kernel<BitwiseKernel<BitOrFn>>("", "BitwiseOr", 18, SINGA_VERSION_OPEN, "cpu", {{"T", 0, ints}, {"T", 1, ints}});
  reg.kernel<BitwiseKernel<BitXorFn>>("", "BitwiseXor", 18, SINGA_VERSION_OPEN, "cpu", {{"T", 0, ints}, {"T", 1, ints}});
}

}  // namespace math
}  // namespace ops
}  // namespace singa
