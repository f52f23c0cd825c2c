// Equal, Less, Greater, LessOrEqual, GreaterOrEqual: bool results of
// elementwise comparisons over broadcast operands (Equal-19 also of strings).
#include <cstring>

#include "compare_ops.hpp"
#include "logical_common.hpp"

namespace singa {
namespace ops {
namespace logical {
namespace {

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
              by_rows(a.data<T>(), b.data<T>(), compare_run_f16c<Cmp, sdk::half, sdk::half>);
              return;
            }
          }
          if constexpr (std::is_same<T, sdk::bfloat16>::value) {
            if (has_avx2()) {
              by_rows(a.data<T>(), b.data<T>(), compare_run_bf16<Cmp>);
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
