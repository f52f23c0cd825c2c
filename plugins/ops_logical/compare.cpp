// Equal, Less, Greater, LessOrEqual, GreaterOrEqual: bool results of
// elementwise comparisons over broadcast operands (Equal-19 also of strings).
#include <cstring>

#include "half_convert_f32.hpp"
#include "logical_common.hpp"

namespace singa {
namespace ops {
namespace logical {
namespace {

// Each op's AVX compare predicate (ordered: false when either side is NaN),
// for the float16 loop below.
#ifdef SINGA_HAVE_F16C_PATH
#define SINGA_CMP_PREDICATE(p) static constexpr int kPred = p;
#else
#define SINGA_CMP_PREDICATE(p)
#endif

struct EqualOp {
  SINGA_CMP_PREDICATE(_CMP_EQ_OQ)
  template <typename C> bool operator()(C a, C b) const { return a == b; }
};
struct LessOp {
  SINGA_CMP_PREDICATE(_CMP_LT_OQ)
  template <typename C> bool operator()(C a, C b) const { return a < b; }
};
struct GreaterOp {
  SINGA_CMP_PREDICATE(_CMP_GT_OQ)
  template <typename C> bool operator()(C a, C b) const { return a > b; }
};
struct LessEqualOp {
  SINGA_CMP_PREDICATE(_CMP_LE_OQ)
  template <typename C> bool operator()(C a, C b) const { return a <= b; }
};
struct GreaterEqualOp {
  SINGA_CMP_PREDICATE(_CMP_GE_OQ)
  template <typename C> bool operator()(C a, C b) const { return a >= b; }
};

// Whether the AVX2 loops below may run on this CPU.
inline bool has_avx2() {
  static const bool ok = __builtin_cpu_supports("avx2");
  return ok;
}

// One run of float / double comparisons, `sx`/`sy` 0 (repeat) or 1. Compiled
// for AVX2 so the loops vectorize (compare, narrow to bytes) instead of the
// baseline's SSE2 scalar loop; results are those of the C++ operators.
template <typename Cmp, typename T>
__attribute__((target("avx2"))) void compare_run_avx2(const T* x, int64_t sx, const T* y, int64_t sy, uint8_t* z,
                                                      int64_t n) {
  const Cmp cmp;
  if (sx == 1 && sy == 1) {
    for (int64_t i = 0; i < n; ++i) z[i] = uint8_t(cmp(x[i], y[i]));
  } else if (sx == 1) {
    const T yv = y[0];
    for (int64_t i = 0; i < n; ++i) z[i] = uint8_t(cmp(x[i], yv));
  } else if (sy == 1) {
    const T xv = x[0];
    for (int64_t i = 0; i < n; ++i) z[i] = uint8_t(cmp(xv, y[i]));
  } else {
    const uint8_t v = uint8_t(cmp(x[0], y[0]));
    for (int64_t i = 0; i < n; ++i) z[i] = v;
  }
}

#ifdef SINGA_HAVE_F16C_PATH
// Bytes 0/1 of the 8 bits of a compare mask, bit i in byte i.
struct MaskBytes {
  uint64_t v[256];
  constexpr MaskBytes() : v() {
    for (int m = 0; m < 256; ++m)
      for (int b = 0; b < 8; ++b) v[m] |= uint64_t((m >> b) & 1) << (8 * b);
  }
};
constexpr MaskBytes kMaskBytes;

// One run of float16 comparisons, 8 at a time: vcvtph2ps (exact; a NaN stays
// a NaN, which compares false as the scalar float comparison does), an
// ordered compare, the mask's bits as bytes. `sx`/`sy` 0 (repeat) or 1.
template <typename Cmp>
__attribute__((target("avx2,f16c"))) void compare_run_half(const sdk::half* x, int64_t sx, const sdk::half* y,
                                                           int64_t sy, uint8_t* z, int64_t n) {
  if (n <= 0) return;
  const auto* hx = reinterpret_cast<const uint16_t*>(x);
  const auto* hy = reinterpret_cast<const uint16_t*>(y);
  const __m256 x0 = _mm256_set1_ps(float(x[0])), y0 = _mm256_set1_ps(float(y[0]));
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 a = sx ? _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(hx + i))) : x0;
    const __m256 b = sy ? _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(hy + i))) : y0;
    const uint64_t bytes = kMaskBytes.v[_mm256_movemask_ps(_mm256_cmp_ps(a, b, Cmp::kPred))];
    std::memcpy(z + i, &bytes, 8);
  }
  const Cmp cmp;
  for (; i < n; ++i) z[i] = uint8_t(cmp(float(x[sx * i]), float(y[sy * i])));
}
#endif

template <typename Cmp, bool Legacy> class Compare {
 public:
  explicit Compare(const sdk::Node& node) : form_(node, Legacy) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor a = ctx.input(0), b = ctx.input(1);
    if (a.dtype() != b.dtype())
      sdk::fail(std::string("inputs must share one element type, got ") + sdk::dtype_name(a.dtype()) + " and " +
                sdk::dtype_name(b.dtype()));
    BinaryShapes s = form_.shapes(a.shape(), b.shape());
    sdk::Tensor y = ctx.output(0, s.out, SINGA_ONNX_BOOL);
    if (a.dtype() == SINGA_ONNX_STRING) {
      // Equal-19: strings compare by content (the registrations admit them only there).
      if constexpr (std::is_same<Cmp, EqualOp>::value) {
        binary_apply<bool, const char*, const char*>(
            ctx, s, a.data<const char*>(), b.data<const char*>(), y.data<bool>(), [](const char* x, const char* z) {
              return std::strcmp(x ? x : "", z ? z : "") == 0;
            });
        return;
      }
      sdk::fail("string inputs are not supported by this comparison");
    }
    static_assert(sizeof(bool) == 1, "bool tensors hold one byte per element");
    // A vector path: each broadcast run of the output through `run_row`.
    auto by_rows = [&](auto* pa, auto* pb, auto run_row) {
      auto* pz = reinterpret_cast<uint8_t*>(y.data<bool>());
      if (sdk::numel(s.out) == 0) return;
      Broadcaster<2> bc(s.out, {s.a, s.b});
      run_pieces(ctx, bc, [&](int64_t o, const int64_t* off, const int64_t* st, int64_t n) {
        run_row(pa + off[0], st[0], pb + off[1], st[1], pz + o, n);
      });
    };
    sdk::dispatch(
        a.dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          if constexpr (std::is_same<T, float>::value || std::is_same<T, double>::value) {
            if (has_avx2()) {
              by_rows(a.data<T>(), b.data<T>(), compare_run_avx2<Cmp, T>);
              return;
            }
          }
#ifdef SINGA_HAVE_F16C_PATH
          if constexpr (std::is_same<T, sdk::half>::value) {
            if (vec::f16c_supported()) {
              by_rows(a.data<T>(), b.data<T>(), compare_run_half<Cmp>);
              return;
            }
          }
#endif
          binary_apply<bool, T, T>(ctx, s, a.data<T>(), b.data<T>(), y.data<bool>(),
                                   [](T x, T z) { return Cmp()(as_cmp(x), as_cmp(z)); });
        },
        sdk::kNumericTypes | kBool);
  }

 private:
  BinaryForm form_;
};

// (since, end, types) of one registration.
struct Range {
  int since, end;
  uint64_t types;
};

template <typename Cmp> void register_op(sdk::Registrar& reg, const char* op, std::initializer_list<Range> ranges) {
  const uint64_t out = kBool;
  for (const Range& r : ranges) {
    if (r.since < 7)
      reg.kernel<Compare<Cmp, true>>("", op, r.since, r.end, "cpu", {{"T", 0, r.types}, {"T1", -1, out}});
    else
      reg.kernel<Compare<Cmp, false>>("", op, r.since, r.end, "cpu", {{"T", 0, r.types}, {"T1", -1, out}});
  }
}

}  // namespace

void register_compare(sdk::Registrar& reg) {
  const uint64_t floats = sdk::kFloatTypes;
  const uint64_t numeric = sdk::kFloatTypes | sdk::kIntTypes;
  const uint64_t eq_old = kBool | sdk::bit(SINGA_ONNX_INT32) | sdk::bit(SINGA_ONNX_INT64);
  register_op<EqualOp>(reg, "Equal",
                       {{1, 6, eq_old},
                        {7, 10, eq_old},
                        {11, 12, numeric | kBool},
                        {13, 17, numeric | kBool | kBf16},
                        {19, SINGA_VERSION_OPEN, numeric | kBool | kBf16 | sdk::bit(SINGA_ONNX_STRING)}});
  register_op<LessOp>(reg, "Less", {{1, 6, floats}, {7, 8, floats}, {9, 12, numeric}, {13, 17, numeric | kBf16}});
  register_op<GreaterOp>(reg, "Greater", {{1, 6, floats}, {7, 8, floats}, {9, 12, numeric}, {13, 17, numeric | kBf16}});
  register_op<LessEqualOp>(reg, "LessOrEqual", {{12, 15, numeric}, {16, 17, numeric | kBf16}});
  register_op<GreaterEqualOp>(reg, "GreaterOrEqual", {{12, 15, numeric}, {16, 17, numeric | kBf16}});
}

}  // namespace logical
}  // namespace ops
}  // namespace singa
