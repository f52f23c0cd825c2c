// quantized.cpp - MatMulInteger and QLinearMatMul: 8-bit products
// accumulated in int32 after subtracting the zero points, on the VNNI kernel
// (qmatmul_vnni.hpp) where the CPU has it, else on a portable integer loop.
#include "gemm.hpp"
#include "qmatmul_vnni.hpp"
#include "registry.hpp"

#include <memory>

namespace singa {
namespace ops {
namespace math {
namespace {

constexpr uint64_t k8Bit = sdk::bit(SINGA_ONNX_INT8) | sdk::bit(SINGA_ONNX_UINT8);

// A per-tensor, per-row or per-column quantisation parameter. Element e of
// the operand uses values[(e / divisor) % period] (rows of A: divisor K;
// columns of B: divisor 1, with per-matrix columns folded into `period`).
template <typename V>
struct QuantParam {
  std::vector<V> values{V(0)};
  int64_t period = 1;
};

// The scale types: float, and from QLinearMatMul-21 float16 and bfloat16.
constexpr uint64_t kScaleTypes = kFloatLike;

// Element i of a float, float16 or bfloat16 scale tensor, as float (exact).
inline float scale_at(const sdk::Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case SINGA_ONNX_FLOAT: return t.data<float>()[i];
    case SINGA_ONNX_FLOAT16: return float(t.data<half>()[i]);
    case SINGA_ONNX_BFLOAT16: return float(t.data<bfloat16>()[i]);
    default: sdk::fail(std::string("scales must be float, float16 or bfloat16, got ") + sdk::dtype_name(t.dtype()));
  }
}

// Rounds a float result to the scale type, as numpy does after each operation
// on float16/bfloat16 arrays.
inline float round_to_scale_type(float v, int32_t dtype) {
  if (dtype == SINGA_ONNX_FLOAT16) return float(half(v));
  if (dtype == SINGA_ONNX_BFLOAT16) return float(bfloat16(v));
  return v;
}

// Reads an optional zero point (same 8-bit type as its operand) or scale of
// A: scalar, one value per row (M), or per row of every matrix of A.
template <typename V>
QuantParam<V> row_param(const sdk::Tensor& t, const char* name, const Shape& a, int64_t M, bool allow_per_matrix) {
  QuantParam<V> q;
  if (!t.present()) return q;
  int64_t n = t.numel(), K = a.back(), rows = K ? sdk::numel(a) / K : 0;
  Shape per_matrix(a.begin(), a.end() - 1);
  per_matrix.push_back(1);
  bool ok = n == 1 || (t.ndim() == 1 && n == M) || (allow_per_matrix && t.shape() == per_matrix);
  SINGA_CHECK(ok, std::string(name) + " " + shape_str(t.shape()) + " must be a scalar or have one value per row of A " +
                      shape_str(a));
  q.period = n == 1 ? 1 : (t.ndim() == 1 ? M : rows);
  q.values.resize(size_t(n));
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same<V, float>::value)
      q.values[size_t(i)] = scale_at(t, i);
    else
      q.values[size_t(i)] = V(t.int_at(i));
  }
  return q;
}

// The same for B's columns: scalar, one value per column (N), or per column
// of every matrix of B ([..., 1, N]).
template <typename V>
QuantParam<V> col_param(const sdk::Tensor& t, const char* name, const Shape& b, int64_t N, bool allow_per_matrix) {
  QuantParam<V> q;
  if (!t.present()) return q;
  int64_t n = t.numel();
  Shape per_matrix = b;
  if (per_matrix.size() >= 2) per_matrix[per_matrix.size() - 2] = 1;
  bool ok = n == 1 || (t.ndim() == 1 && n == N) || (allow_per_matrix && b.size() >= 2 && t.shape() == per_matrix);
  SINGA_CHECK(ok, std::string(name) + " " + shape_str(t.shape()) +
                      " must be a scalar or have one value per column of B " + shape_str(b));
  q.period = n;
  q.values.resize(size_t(n));
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same<V, float>::value)
      q.values[size_t(i)] = scale_at(t, i);
    else
      q.values[size_t(i)] = V(t.int_at(i));
  }
  return q;
}

// out[e] = in[e] - zero_point(e), widened to int32.
void subtract_zero_points(const sdk::Context& ctx, const sdk::Tensor& in, const QuantParam<int32_t>& zp,
                          int64_t divisor, int64_t cols, int32_t* out) {
  sdk::dispatch(
      in.dtype(),
      [&](auto tag) {
        using T = decltype(tag);
        if constexpr (in_mask<T>(k8Bit)) {
          const T* p = in.data<T>();
          ctx.parallel_for(in.numel(), 16384, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) {
              // Rows of A: divisor K, cols 0. Columns of B: (matrix, column) index.
              int64_t at = cols ? (i / divisor) * cols + i % cols : i / divisor;
              out[i] = int32_t(p[i]) - zp.values[size_t(at % zp.period)];
            }
          });
        }
      },
      k8Bit);
}

void check_zero_point_type(const sdk::Tensor& zp, const sdk::Tensor& x, const char* name) {
  if (zp.present()) same_dtype(x, zp, std::string("input and ") + name);
}

// B packed at create when it and its zero point are constants: the int8
// kernel's operand, made once (option cpu.int8_matmul=0 keeps the portable
// integer loop, the reference the tests compare with).
struct ConstantB {
  std::unique_ptr<PackedB8> packed;
  const void* data = nullptr;
  Shape shape;
};

// The zero point values of a scalar or 1-D tensor (empty when absent).
std::vector<int32_t> zero_points(const sdk::Tensor& t) {
  std::vector<int32_t> v;
  for (int64_t i = 0; t.present() && i < t.numel(); ++i) v.push_back(int32_t(t.int_at(i)));
  return v;
}

ConstantB plan_constant_b(const sdk::Node& node, size_t b_in, size_t zp_in) {
  ConstantB c;
  if (!node.option_bool("cpu.int8_matmul", true) || !vnni_available() || !node.has_input(b_in)) return c;
  const sdk::Tensor b = node.constant(b_in);
  if (!b.present() || b.ndim() != 2 || b.numel() == 0) return c;
  if (b.dtype() != SINGA_ONNX_INT8 && b.dtype() != SINGA_ONNX_UINT8) return c;
  std::vector<int32_t> zb;
  if (node.has_input(zp_in)) {
    const sdk::Tensor z = node.constant(zp_in);
    if (!z.present() || z.dtype() != b.dtype() || z.ndim() > 1 || (z.numel() != 1 && z.numel() != b.dim(1))) return c;
    zb = zero_points(z);
  }
  c.packed = std::make_unique<PackedB8>();
  pack_b8(*c.packed, b.data_ptr(), b.dtype() == SINGA_ONNX_UINT8, b.dim(0), b.dim(1), b.dim(1), 1,
          zb.empty() ? nullptr : zb.data(), int64_t(zb.size()));
  if (node.option_bool("cpu.int8_amx", true)) attach_amx(*c.packed);
  c.data = b.data_ptr();
  c.shape = b.shape();
  return c;
}

// The int32 product through the VNNI kernel; false (nothing written) where
// it does not apply: zero points per matrix, or no VNNI.
bool vnni_product(const sdk::Context& ctx, const MatMulPlan& p, const sdk::Tensor& a, const sdk::Tensor& a_zp,
                  const sdk::Tensor& b, const sdk::Tensor& b_zp, const ConstantB& cb, int32_t* y) {
  if (!vnni_available() || p.M <= 0 || p.N <= 0 || p.K <= 0) return false;
  if (a_zp.present() && (a_zp.ndim() > 1 || (a_zp.numel() != 1 && a_zp.numel() != p.M))) return false;
  if (b_zp.present() && (b_zp.ndim() > 1 || (b_zp.numel() != 1 && b_zp.numel() != p.N))) return false;
  const bool a_s8 = a.dtype() == SINGA_ONNX_INT8, b_u8 = b.dtype() == SINGA_ONNX_UINT8;
  const int64_t rows = p.batch * p.M;
  // Row zero points of every row of every matrix, + 128 for a signed A.
  std::vector<int32_t> za = zero_points(a_zp);
  if (za.empty()) za.push_back(0);
  for (int32_t& z : za) z += a_s8 ? 128 : 0;
  std::vector<int32_t> za_rows;
  if (za.size() > 1)
    for (int64_t r = 0; r < rows; ++r) za_rows.push_back(za[size_t(r % p.M)]);
  const uint8_t* a8 = static_cast<const uint8_t*>(a.data_ptr());
  if (a_s8) {
    auto* shifted = static_cast<uint8_t*>(ctx.workspace(size_t(a.numel())));
    shift_s8_to_u8(ctx, static_cast<const int8_t*>(a.data_ptr()), a.numel(), shifted);
    a8 = shifted;
  }
  const bool use_cb = cb.packed && b.data_ptr() == cb.data && b.shape() == cb.shape;
  std::vector<int32_t> zb = zero_points(b_zp);
  auto run = [&](int64_t nrows, const uint8_t* a_at, const int32_t* za_at, int64_t b_off, int32_t* y_at) {
    PackedB8 own;
    const PackedB8* pb = use_cb ? cb.packed.get() : &own;
    if (!use_cb)
      pack_b8(own, static_cast<const char*>(b.data_ptr()) + b_off, b_u8, p.K, p.N, p.N, 1,
              zb.empty() ? nullptr : zb.data(), int64_t(zb.size()));
    QGemmOut out;
    out.acc = y_at, out.ld = p.N;
    qgemm_u8s8(ctx, nrows, a_at, p.K, za[0], za_at, *pb, out);
  };
  if (p.fold || p.batch == 1) {
    run(rows, a8 + (p.fold ? 0 : p.a_off[0]), za_rows.empty() ? nullptr : za_rows.data(), p.fold ? 0 : p.b_off[0], y);
    return true;
  }
  for (int64_t i = 0; i < p.batch; ++i)
    run(p.M, a8 + p.a_off[size_t(i)], za_rows.empty() ? nullptr : za_rows.data() + i * p.M, p.b_off[size_t(i)],
        y + i * p.M * p.N);
  return true;
}

// The int32 product of (A - a_zp) and (B - b_zp), into `y`.
void integer_product(const sdk::Context& ctx, const MatMulPlan& p, const sdk::Tensor& a, const sdk::Tensor& a_zp,
                     const sdk::Tensor& b, const sdk::Tensor& b_zp, bool per_matrix, bool fast, const ConstantB& cb,
                     int32_t* y) {
  Shape as = a.shape(), bs = b.shape();
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  auto azp = row_param<int32_t>(a_zp, "a_zero_point", as, p.M, per_matrix);
  auto bzp = col_param<int32_t>(b_zp, "b_zero_point", bs, p.N, per_matrix);
  if (fast && vnni_product(ctx, p, a, a_zp, b, b_zp, cb, y)) return;
  auto* a32 = static_cast<int32_t*>(ctx.workspace(size_t(std::max<int64_t>(a.numel(), 1)) * sizeof(int32_t)));
  auto* b32 = static_cast<int32_t*>(ctx.workspace(size_t(std::max<int64_t>(b.numel(), 1)) * sizeof(int32_t)));
  subtract_zero_points(ctx, a, azp, std::max<int64_t>(p.K, 1), 0, a32);
  // B columns: element e sits in matrix e / (K*N), column e % N.
  int64_t kn = std::max<int64_t>(p.K * p.N, 1);
  if (bzp.period > p.N) {
    subtract_zero_points(ctx, b, bzp, kn, p.N, b32);
  } else {
    subtract_zero_points(ctx, b, bzp, 1, 0, b32);
  }
  matmul_generic<int32_t>(ctx, p, a32, b32, y);
}

class MatMulIntegerKernel {
 public:
  explicit MatMulIntegerKernel(const sdk::Node& node)
      : fast_(node.option_bool("cpu.int8_matmul", true)), cb_(plan_constant_b(node, 1, 3)) {}
  void compute(sdk::Context& ctx) const {
    sdk::check(ctx.has_input(0) && ctx.has_input(1), "needs inputs A and B");
    sdk::Tensor a = ctx.input(0), b = ctx.input(1), a_zp = ctx.input(2), b_zp = ctx.input(3);
    check_zero_point_type(a_zp, a, "a_zero_point");
    check_zero_point_type(b_zp, b, "b_zero_point");
    MatMulPlan p = plan_matmul(a.shape(), b.shape());
    sdk::Tensor y = ctx.output(0, p.out_shape, SINGA_ONNX_INT32);
    integer_product(ctx, p, a, a_zp, b, b_zp, true, fast_, cb_, y.data<int32_t>());
  }

 private:
  bool fast_;
  ConstantB cb_;
};

// y = saturate(round_half_even((A - a_zp)(B - b_zp) * a_scale * b_scale / y_scale) + y_zp)
class QLinearMatMulKernel {
 public:
  explicit QLinearMatMulKernel(const sdk::Node& node)
      : opset_(node.opset()), fast_(node.option_bool("cpu.int8_matmul", true)), cb_(plan_constant_b(node, 3, 5)) {}
  void compute(sdk::Context& ctx) const {
    for (size_t i = 0; i < 8; ++i)
      SINGA_CHECK(ctx.has_input(i), "input " + std::to_string(i) + " is missing (all eight inputs are required)");
    sdk::Tensor a = ctx.input(0), a_scale = ctx.input(1), a_zp = ctx.input(2);
    sdk::Tensor b = ctx.input(3), b_scale = ctx.input(4), b_zp = ctx.input(5);
    sdk::Tensor y_scale = ctx.input(6), y_zp = ctx.input(7);
    check_zero_point_type(a_zp, a, "a_zero_point");
    check_zero_point_type(b_zp, b, "b_zero_point");
    // Opset 10 takes float scales; 21 any one of float, float16, bfloat16.
    const int32_t st = a_scale.dtype();
    const uint64_t scale_types = opset_ >= 21 ? kScaleTypes : sdk::bit(SINGA_ONNX_FLOAT);
    for (const sdk::Tensor* s : {&a_scale, &b_scale, &y_scale}) {
      SINGA_CHECK((scale_types & sdk::bit(s->dtype())) != 0,
                  std::string("scales must be ") + (opset_ >= 21 ? "float, float16 or bfloat16" : "float") + ", got " +
                      sdk::dtype_name(s->dtype()));
      SINGA_CHECK(s->dtype() == st, std::string("a_scale, b_scale and y_scale must share one type, got ") +
                                        sdk::dtype_name(st) + " and " + sdk::dtype_name(s->dtype()));
    }
    sdk::check(y_scale.numel() == 1 && y_zp.numel() == 1, "y_scale and y_zero_point must be scalars");
    sdk::check(scale_at(y_scale, 0) != 0.0f, "y_scale is 0");

    MatMulPlan p = plan_matmul(a.shape(), b.shape());
    int64_t count = sdk::numel(p.out_shape);
    auto* acc = static_cast<int32_t*>(ctx.workspace(size_t(std::max<int64_t>(count, 1)) * sizeof(int32_t)));
    integer_product(ctx, p, a, a_zp, b, b_zp, false, fast_, cb_, acc);

    Shape as = a.shape(), bs = b.shape();
    if (as.size() == 1) as.insert(as.begin(), 1);
    if (bs.size() == 1) bs.push_back(1);
    auto sa = row_param<float>(a_scale, "a_scale", as, p.M, false);
    auto sb = col_param<float>(b_scale, "b_scale", bs, p.N, false);
    float ys = scale_at(y_scale, 0);
    int64_t zero = y_zp.int_at(0);
    sdk::Tensor y = ctx.output(0, p.out_shape, y_zp.dtype());
    sdk::dispatch(
        y_zp.dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          if constexpr (in_mask<T>(k8Bit)) {
            T* out = y.data<T>();
            int64_t M = std::max<int64_t>(p.M, 1), N = std::max<int64_t>(p.N, 1);
            ctx.parallel_for(count, 16384, [&](int64_t b, int64_t e) {
              for (int64_t o = b; o < e; ++o) {
                int64_t i = (o / N) % M, j = o % N;
                // numpy's order: the float32 multiplier times the int32 sum in double.
                float mult = round_to_scale_type(sa.values[size_t(i % sa.period)] * sb.values[size_t(j % sb.period)], st);
                mult = round_to_scale_type(mult / ys, st);
                double v = round_half_even(double(acc[o]) * double(mult)) + double(zero);
                out[o] = float_to_int<T>(v);
              }
            });
          }
        },
        k8Bit);
  }

 private:
  int64_t opset_;
  bool fast_;
  ConstantB cb_;
};

}  // namespace

void register_quantized(sdk::Registrar& reg) {
  reg.kernel<MatMulIntegerKernel>("", "MatMulInteger", 10, SINGA_VERSION_OPEN, "cpu",
                                  {{"T1", 0, k8Bit}, {"T2", 1, k8Bit}, {"T3", -1, sdk::bit(SINGA_ONNX_INT32)}});
  reg.kernel<QLinearMatMulKernel>("", "QLinearMatMul", 10, SINGA_VERSION_OPEN, "cpu",
                                  {{"T1", 0, k8Bit}, {"T2", 3, k8Bit}, {"T3", 7, k8Bit}});
  // Version 21 added float16/bfloat16 scales (TS) and float8 operands (not implemented here).
  reg.kernel<QLinearMatMulKernel>("", "QLinearMatMul", 21, SINGA_VERSION_OPEN, "cpu",
                                  {{"T1", 0, k8Bit}, {"T2", 3, k8Bit}, {"T3", 7, k8Bit}, {"TS", 1, kScaleTypes}});
}

}  // namespace math
}  // namespace ops
}  // namespace singa
