// "ai.singa" CastHalfCompare: Equal / Less / Greater / LessOrEqual /
// GreaterOrEqual (attribute `op`) of two float16 operands, either of which
// may arrive as the float32 value a Cast(to float16) would have rounded. The
// pass cpu.cast_half_compares puts it in place of such Casts and their
// compare, so the rounded tensor is never written: each float32 element is
// rounded to half in registers (vcvtps2ph, nearest even, as the Cast), and
// the comparison is the float16 one, so results are the original graph's bit
// for bit. Numpy broadcasting, as the standard ops from opset 7.
#include "compare_ops.hpp"
#include "logical_common.hpp"

namespace singa {
namespace ops {
namespace logical {
namespace {

// Rows of one comparison with operand types X and Y (float or sdk::half).
template <typename Cmp, typename X, typename Y>
void compare_rows(const sdk::Context& ctx, const BinaryShapes& s, const X* pa, const Y* pb, uint8_t* pz) {
  if (sdk::numel(s.out) == 0) return;
#ifdef SINGA_HAVE_F16C_PATH
  if (vec::f16c_supported()) {
    Broadcaster<2> bc(s.out, {s.a, s.b});
    run_pieces(ctx, bc, [&](int64_t o, const int64_t* off, const int64_t* st, int64_t n) {
      compare_run_f16c<Cmp, X, Y>(pa + off[0], st[0], pb + off[1], st[1], pz + o, n);
    });
    return;
  }
#endif
  binary_apply<uint8_t, X, Y>(ctx, s, pa, pb, pz, [](X u, Y v) { return uint8_t(Cmp()(half_value(u), half_value(v))); });
}

template <typename Cmp> void compare_half(sdk::Context& ctx) {
  const sdk::Tensor a = ctx.input(0), b = ctx.input(1);
  const bool fa = a.dtype() == SINGA_ONNX_FLOAT, fb = b.dtype() == SINGA_ONNX_FLOAT;
  if ((!fa && a.dtype() != SINGA_ONNX_FLOAT16) || (!fb && b.dtype() != SINGA_ONNX_FLOAT16))
    sdk::fail(std::string("inputs must be float or float16, got ") + sdk::dtype_name(a.dtype()) + " and " +
              sdk::dtype_name(b.dtype()));
  const BinaryShapes s{a.shape(), b.shape(), broadcast_shapes({a.shape(), b.shape()})};
  sdk::Tensor y = ctx.output(0, s.out, SINGA_ONNX_BOOL);
  auto* pz = reinterpret_cast<uint8_t*>(y.data<bool>());
  if (fa && fb)
    compare_rows<Cmp>(ctx, s, a.data<float>(), b.data<float>(), pz);
  else if (fa)
    compare_rows<Cmp>(ctx, s, a.data<float>(), b.data<sdk::half>(), pz);
  else if (fb)
    compare_rows<Cmp>(ctx, s, a.data<sdk::half>(), b.data<float>(), pz);
  else
    compare_rows<Cmp>(ctx, s, a.data<sdk::half>(), b.data<sdk::half>(), pz);
}

// The comparison named by the `op` attribute, chosen once at create.
class CastHalfCompare {
 public:
  explicit CastHalfCompare(const sdk::Node& node) {
    const std::string op = node.attr_string("op", "");
    if (op == "Equal") fn_ = compare_half<EqualOp>;
    else if (op == "Less") fn_ = compare_half<LessOp>;
    else if (op == "Greater") fn_ = compare_half<GreaterOp>;
    else if (op == "LessOrEqual") fn_ = compare_half<LessEqualOp>;
    else if (op == "GreaterOrEqual") fn_ = compare_half<GreaterEqualOp>;
    else
      sdk::fail("attribute op must be Equal, Less, Greater, LessOrEqual or GreaterOrEqual, got '" + op + "'");
  }
  void compute(sdk::Context& ctx) const { fn_(ctx); }

 private:
  void (*fn_)(sdk::Context&) = nullptr;
};

}  // namespace

void register_cast_half_compare(sdk::Registrar& reg) {
  const uint64_t t = sdk::bit(SINGA_ONNX_FLOAT) | sdk::bit(SINGA_ONNX_FLOAT16);
  reg.kernel<CastHalfCompare>("ai.singa", "CastHalfCompare", 1, SINGA_VERSION_OPEN, "cpu",
                         {{"T1", 0, t}, {"T2", 1, t}, {"T", -1, kBool}});
}

}  // namespace logical
}  // namespace ops
}  // namespace singa
