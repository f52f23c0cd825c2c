// Where: out = condition ? X : Y with all three broadcast together. The
// choice only moves elements, so one loop per element width serves every
// fixed-size type (complex included).
#include "logical_common.hpp"

namespace singa {
namespace ops {
namespace logical {
namespace {

struct Bytes16 {
  uint64_t lo, hi;
};

// Whether the AVX2 loops below may run on this CPU.
inline bool has_avx2() {
  static const bool ok = __builtin_cpu_supports("avx2");
  return ok;
}

// One run of the select, steps 0 (repeat) or 1 (advance) per operand. Both
// values are loaded before choosing so the loop is a vector blend, not a
// branch per element.
template <typename E>
inline void select_run(const uint8_t* c, const E* x, const E* y, E* z, const int64_t* st, int64_t n) {
  if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
    for (int64_t i = 0; i < n; ++i) {
      const E a = x[i], b = y[i];
      z[i] = c[i] ? a : b;
    }
  } else if (st[0] == 1 && st[1] == 0 && st[2] == 1) {
    const E a = x[0];
    for (int64_t i = 0; i < n; ++i) {
      const E b = y[i];
      z[i] = c[i] ? a : b;
    }
  } else if (st[0] == 1 && st[1] == 1 && st[2] == 0) {
    const E b = y[0];
    for (int64_t i = 0; i < n; ++i) {
      const E a = x[i];
      z[i] = c[i] ? a : b;
    }
  } else {
    for (int64_t i = 0; i < n; ++i) z[i] = c[i * st[0]] ? x[i * st[1]] : y[i * st[2]];
  }
}

template <typename E>
__attribute__((target("avx2"))) void select_run_avx2(const uint8_t* c, const E* x, const E* y, E* z,
                                                     const int64_t* st, int64_t n) {
  select_run(c, x, y, z, st, n);
}

template <typename E>
void run(const sdk::Context& ctx, const Shape& out, const std::array<Shape, 3>& shapes, const uint8_t* c, const E* x,
         const E* y, E* z) {
  if (sdk::numel(out) == 0) return;
  Broadcaster<3> bc(out, shapes);
  const bool avx2 = sizeof(E) <= 8 && has_avx2();
  run_pieces(ctx, bc, [&](int64_t o, const int64_t* off, const int64_t* st, int64_t n) {
    if (avx2)
      select_run_avx2(c + off[0], x + off[1], y + off[2], z + o, st, n);
    else
      select_run(c + off[0], x + off[1], y + off[2], z + o, st, n);
  });
}

class Where {
 public:
  explicit Where(const sdk::Node& node) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor c = ctx.input(0), x = ctx.input(1), y = ctx.input(2);
    if (c.dtype() != SINGA_ONNX_BOOL)
      sdk::fail(std::string("condition must be bool, got ") + sdk::dtype_name(c.dtype()));
    if (x.dtype() != y.dtype() || x.dtype() == SINGA_ONNX_UNDEFINED)
      sdk::fail(std::string("X and Y must share one element type, got ") + sdk::dtype_name(x.dtype()) + " and " +
                sdk::dtype_name(y.dtype()));
    if (x.dtype() == SINGA_ONNX_STRING)
      sdk::fail("string tensors are not supported: the ABI gives a kernel no storage for output strings");
    std::array<Shape, 3> shapes{c.shape(), x.shape(), y.shape()};
    Shape out = broadcast_shapes({shapes[0], shapes[1], shapes[2]});
    sdk::Tensor z = ctx.output(0, out, x.dl_dtype());
    const DLDataType t = x.dl_dtype();
    const auto* pc = static_cast<const uint8_t*>(c.data_ptr());
    switch (t.bits * t.lanes) {
      case 8:
        run(ctx, out, shapes, pc, x.data<uint8_t>(), y.data<uint8_t>(), z.data<uint8_t>());
        break;
      case 16:
        run(ctx, out, shapes, pc, x.data<uint16_t>(), y.data<uint16_t>(), z.data<uint16_t>());
        break;
      case 32:
        run(ctx, out, shapes, pc, x.data<uint32_t>(), y.data<uint32_t>(), z.data<uint32_t>());
        break;
      case 64:
        run(ctx, out, shapes, pc, x.data<uint64_t>(), y.data<uint64_t>(), z.data<uint64_t>());
        break;
      case 128:
        run(ctx, out, shapes, pc, x.data<Bytes16>(), y.data<Bytes16>(), z.data<Bytes16>());
        break;
      default:
        sdk::fail(std::string("unsupported element type ") + sdk::dtype_name(x.dtype()));
    }
  }

 private:
};

}  // namespace

void register_where(sdk::Registrar& reg) {
  const uint64_t v9 =
      sdk::kFloatTypes | sdk::kIntTypes | kBool | sdk::bit(SINGA_ONNX_COMPLEX64) | sdk::bit(SINGA_ONNX_COMPLEX128);
  reg.kernel<Where>("", "Where", 9, 15, "cpu", {{"B", 0, kBool}, {"T", 1, v9}});
  reg.kernel<Where>("", "Where", 16, SINGA_VERSION_OPEN, "cpu", {{"B", 0, kBool}, {"T", 1, v9 | kBf16}});
}

}  // namespace logical
}  // namespace ops
}  // namespace singa
