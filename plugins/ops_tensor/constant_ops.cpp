// Ops whose output is made rather than moved: Constant, ConstantOfShape,
// EyeLike and Range.
#include "common.hpp"
#include "registry.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <type_traits>

namespace singa {
namespace ops {
namespace tensor {
namespace {

// A value captured at create time (node attributes do not outlive create).
struct HostValue {
  int32_t dtype = SINGA_ONNX_FLOAT;
  Shape shape;
  std::vector<char> data;

  static HostValue of(const Tensor& t) {
    HostValue v;
    v.dtype = t.dtype();
    v.shape = t.shape();
    v.data.assign(bytes(t), bytes(t) + size_t(t.numel()) * elem_size(t));
    return v;
  }
  template <typename T>
  static HostValue of(int32_t dtype, Shape shape, const std::vector<T>& values) {
    HostValue v;
    v.dtype = dtype;
    v.shape = std::move(shape);
    v.data.resize(values.size() * sizeof(T));
    if (!values.empty()) std::memcpy(v.data.data(), values.data(), v.data.size());
    return v;
  }
};

class Constant : public KernelBase {
 public:
  explicit Constant(const Node& node) : KernelBase(node) {
    int given = 0;
    for (const char* name : {"sparse_value", "value_string", "value_strings"}) {
      if (node.has_attr(name))
        sdk::fail(std::string("attribute '") + name + "' is not supported (sparse and string constants)", SINGA_UNIMPLEMENTED);
    }
    if (node.has_attr("value")) {
      Tensor t = node.attr_tensor("value");
      if (!t.present()) sdk::fail("attribute 'value' is not a readable tensor");
      if (t.dtype() == SINGA_ONNX_STRING)
        sdk::fail("string constants are not supported", SINGA_UNIMPLEMENTED);
      value_ = HostValue::of(t);
      ++given;
    }
    if (node.has_attr("value_float")) {
      value_ = HostValue::of<float>(SINGA_ONNX_FLOAT, {}, {node.attr_float("value_float", 0.f)});
      ++given;
    }
    if (node.has_attr("value_floats")) {
      std::vector<float> v = node.attr_floats("value_floats");
      value_ = HostValue::of<float>(SINGA_ONNX_FLOAT, {int64_t(v.size())}, v);
      ++given;
    }
    if (node.has_attr("value_int")) {
      value_ = HostValue::of<int64_t>(SINGA_ONNX_INT64, {}, {node.attr_int("value_int", 0)});
      ++given;
    }
    if (node.has_attr("value_ints")) {
      std::vector<int64_t> v = node.attr_ints("value_ints");
      value_ = HostValue::of<int64_t>(SINGA_ONNX_INT64, {int64_t(v.size())}, v);
      ++given;
    }
    if (given != 1) sdk::fail("exactly one of value, value_float(s), value_int(s) must be given, found " + std::to_string(given));
  }

  void compute(Context& ctx) const {
    Tensor y = ctx.output(0, value_.shape, value_.dtype);
    if (!value_.data.empty()) std::memcpy(y.data_ptr(), value_.data.data(), value_.data.size());
  }

 private:
  HostValue value_;
};

class ConstantOfShape : public KernelBase {
 public:
  explicit ConstantOfShape(const Node& node) : KernelBase(node) {
    value_ = HostValue::of<float>(SINGA_ONNX_FLOAT, {1}, {0.f});
    if (node.has_attr("value")) {
      Tensor t = node.attr_tensor("value");
      if (!t.present() || t.numel() != 1) sdk::fail("attribute 'value' must be a one-element tensor");
      if (t.dtype() == SINGA_ONNX_STRING) sdk::fail("string values are not supported", SINGA_UNIMPLEMENTED);
      value_ = HostValue::of(t);
    }
  }

  void compute(Context& ctx) const {
    std::vector<int64_t> shape = read_ints(required(ctx, 0, "input"), "input");
    for (int64_t d : shape) SINGA_CHECK(d >= 0, "shape " + ints_str(shape) + " has a negative dimension");
    Tensor y = ctx.output(0, shape, value_.dtype);
    const size_t es = value_.data.size();
    char* dst = mutable_bytes(y);
    const void* v = value_.data.data();
    ctx.parallel_for(y.numel(), 65536, [&](int64_t b, int64_t e) { fill_elems(dst + size_t(b) * es, v, e - b, es); });
  }

 private:
  HostValue value_;
};

class EyeLike : public KernelBase {
 public:
  explicit EyeLike(const Node& node) : KernelBase(node), dtype_(int32_t(node.attr_int("dtype", 0))), k_(node.attr_int("k", 0)) {
    if (dtype_ != 0 && !(sdk::bit(dtype_) & (sdk::kNumericTypes | sdk::bit(SINGA_ONNX_BOOL))))
      sdk::fail(std::string("attribute 'dtype' names unsupported type ") + sdk::dtype_name(dtype_));
  }

  void compute(Context& ctx) const {
    Tensor x = required(ctx, 0, "input");
    SINGA_CHECK(x.ndim() == 2, "input must be 2-d, got shape " + shape_str(x.shape()));
    const int32_t dt = dtype_ ? dtype_ : x.dtype();
    Tensor y = ctx.output(0, x.shape(), dt);
    const int64_t rows = x.dim(0), cols = x.dim(1);
    const size_t es = elem_size(y);
    char one[16] = {};
    sdk::dispatch(dt, [&](auto tag) {
      using T = decltype(tag);
      T v = T(1.0f);
      std::memcpy(one, &v, sizeof(T));
    });
    char* dst = mutable_bytes(y);
    std::memset(dst, 0, size_t(rows * cols) * es);
    for (int64_t i = 0; i < rows; ++i) {
      int64_t j = i + k_;
      if (j >= 0 && j < cols) std::memcpy(dst + size_t(i * cols + j) * es, one, es);
    }
  }

 private:
  int32_t dtype_;
  int64_t k_;
};

constexpr uint64_t kRangeTypes = sdk::bit(SINGA_ONNX_FLOAT) | sdk::bit(SINGA_ONNX_DOUBLE) | sdk::bit(SINGA_ONNX_INT16) |
                                  sdk::bit(SINGA_ONNX_INT32) | sdk::bit(SINGA_ONNX_INT64);

class Range : public KernelBase {
 public:
  using KernelBase::KernelBase;

  void compute(Context& ctx) const {
    Tensor start = required(ctx, 0, "start"), limit = required(ctx, 1, "limit"), delta = required(ctx, 2, "delta");
    for (const Tensor* t : {&start, &limit, &delta})
      SINGA_CHECK(t->numel() == 1 && t->ndim() <= 1,
                  "start, limit and delta must be scalars, got shape " + shape_str(t->shape()));
    check(start.dl_dtype() == limit.dl_dtype() && start.dl_dtype() == delta.dl_dtype(),
          "start, limit and delta must share one element type");
    sdk::dispatch(
        start.dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          const T s = *start.data<T>(), l = *limit.data<T>(), d = *delta.data<T>();
          if constexpr (std::is_arithmetic<T>::value) check(d != T(0), "delta must not be 0");
          int64_t n;
          if constexpr (std::is_same<T, sdk::half>::value || std::is_same<T, sdk::bfloat16>::value) {
            // Range-27's float16/bfloat16: computed in float, rounded once.
            const float fs = float(s), fl = float(l), fd = float(d);
            check(fd != 0.0f, "delta must not be 0");
            double count = std::ceil((double(fl) - double(fs)) / double(fd));
            check(std::isfinite(double(fs)) && std::isfinite(count) && count < 9.0e18,
                  "start, limit and delta give no finite number of elements");
            n = int64_t(std::max<double>(0.0, count));
            Tensor y = ctx.output(0, {n}, start.dl_dtype());
            T* out = y.data<T>();
            for (int64_t i = 0; i < n; ++i) out[i] = T(fs + float(i) * fd);
            return;
          } else if constexpr (std::is_floating_point<T>::value) {
            double count = std::ceil(double((l - s) / d));
            check(std::isfinite(double(s)) && std::isfinite(count) && count < 9.0e18,
                  "start, limit and delta give no finite number of elements");
            n = int64_t(std::max<double>(0.0, count));
          } else {
            // exact integer count, without the overflow of l - s in T
            int64_t diff = int64_t(l) - int64_t(s), step = int64_t(d);
            n = (diff > 0) == (step > 0) && diff != 0 ? (std::abs(diff) + std::abs(step) - 1) / std::abs(step) : 0;
          }
          Tensor y = ctx.output(0, {n}, start.dl_dtype());
          T* out = y.data<T>();
          for (int64_t i = 0; i < n; ++i) out[i] = T(s + T(i) * d);
        },
        kRangeTypes | sdk::bit(SINGA_ONNX_FLOAT16) | sdk::bit(SINGA_ONNX_BFLOAT16));
  }
};

}  // namespace

void register_constant_ops(sdk::Registrar& reg) {
  reg.kernel<Constant>("", "Constant", 1, 17, "cpu", {{"T", -1, kMoveTypes}});
  reg.kernel<ConstantOfShape>("", "ConstantOfShape", 9, SINGA_VERSION_OPEN, "cpu",
                              {{"T1", 0, kInt64}, {"T2", -1, sdk::kNumericTypes | sdk::bit(SINGA_ONNX_BOOL)}}, 0,
                              input_bit(0));
  const uint64_t eye = sdk::kNumericTypes | sdk::bit(SINGA_ONNX_BOOL);
  reg.kernel<EyeLike>("", "EyeLike", 9, SINGA_VERSION_OPEN, "cpu", {{"T1", 0, eye}, {"T2", -1, eye}});
  // Later versions only add element types.
  for (int v : {19, 21, 23, 24, 25})
    reg.kernel<Constant>("", "Constant", v, SINGA_VERSION_OPEN, "cpu", {{"T", -1, kMoveTypes | sdk::kFloat8Types}});
  for (int v : {20, 21, 23, 24, 25})
    reg.kernel<ConstantOfShape>("", "ConstantOfShape", v, SINGA_VERSION_OPEN, "cpu",
                                {{"T1", 0, kInt64}, {"T2", -1, sdk::kNumericTypes | sdk::bit(SINGA_ONNX_BOOL) | sdk::kFloat8Types}}, 0,
                                input_bit(0));
  reg.kernel<EyeLike>("", "EyeLike", 22, SINGA_VERSION_OPEN, "cpu", {{"T1", 0, eye}, {"T2", -1, eye}});
  reg.kernel<Range>("", "Range", 11, SINGA_VERSION_OPEN, "cpu",
                    {{"T", 0, kRangeTypes}}, 0, input_bit(0) | input_bit(1) | input_bit(2));
  // 27: float16 and bfloat16.
  reg.kernel<Range>("", "Range", 27, SINGA_VERSION_OPEN, "cpu",
                    {{"T", 0, kRangeTypes | sdk::bit(SINGA_ONNX_FLOAT16) | sdk::bit(SINGA_ONNX_BFLOAT16)}}, 0,
                    input_bit(0) | input_bit(1) | input_bit(2));
}

}  // namespace tensor
}  // namespace ops
}  // namespace singa
