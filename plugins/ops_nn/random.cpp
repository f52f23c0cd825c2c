// Random generators: RandomUniform, RandomNormal, their *Like forms,
// Bernoulli and Multinomial.
//
// Numbers come from a counter-based generator: element i of a call is a
// hash of (call key, i), and each call takes a fresh key from an atomic call
// counter mixed with the node's seed. So concurrent computes share no mutable
// state but an atomic, an output does not depend on how parallel_for splits
// the work, and a `seed` attribute makes the sequence of outputs of
// successive calls reproducible. Without a seed the node's key comes from
// std::random_device.
#include "nn_common.hpp"
#include "register.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <random>
#include <type_traits>
#include <string>
#include <vector>

namespace singa {
namespace nn {
namespace {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

// SplitMix64's output function: a bijective 64-bit mixer.
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The random numbers of one compute call.
class CallStream {
 public:
  explicit CallStream(uint64_t key) : key_(key) {}
  uint64_t bits(uint64_t i) const { return mix64(key_ + (i + 1) * kGolden); }
  // Uniform in [0, 1) with 53 random bits.
  double uniform(uint64_t i) const { return double(bits(i) >> 11) * 0x1.0p-53; }
  // Uniform in (0, 1], safe for log().
  double uniform_open0(uint64_t i) const { return double((bits(i) >> 11) + 1) * 0x1.0p-53; }
  // Standard normal number i; pairs (2k, 2k+1) share one Box-Muller draw.
  double normal(uint64_t i) const {
    uint64_t pair = i / 2;
    double r = std::sqrt(-2.0 * std::log(uniform_open0(2 * pair)));
    double theta = 6.283185307179586 * uniform(2 * pair + 1);
    return r * (i % 2 == 0 ? std::cos(theta) : std::sin(theta));
  }

 private:
  uint64_t key_;
};

// Base of the random kernels: the node's key and its call counter.
class RandomKernel : public NodeKernel {
 public:
  explicit RandomKernel(const sdk::Node& node) : NodeKernel(node) {
    if (node.has_attr("seed")) {
      double seed = node.attr_float("seed", 0.0f);
      uint64_t b;
      std::memcpy(&b, &seed, sizeof b);
      key_ = mix64(b ^ 0x5EEDull);
    } else {
      std::random_device rd;
      key_ = mix64((uint64_t(rd()) << 32) ^ rd());
    }
  }

 protected:
  CallStream next_call() const {
    uint64_t call = calls_.fetch_add(1, std::memory_order_relaxed);
    return CallStream(mix64(key_ ^ mix64(call * kGolden + 1)));
  }

  // Reads the optional `dtype` attribute; `def` (0 = "take the input's")
  // when absent. Only the types in `allowed` are accepted.
  static int32_t read_dtype(const sdk::Node& node, int32_t def, uint64_t allowed) {
    if (!node.has_attr("dtype")) return def;
    int64_t t = node.attr_int("dtype", def);
    if (t < 0 || t > 63 || !(allowed & (uint64_t(1) << t)))
      node.fail("attribute dtype " + std::to_string(t) + " (" + sdk::dtype_name(int32_t(t)) +
                ") is not an allowed output type");
    return int32_t(t);
  }

 private:
  uint64_t key_ = 0;
  mutable std::atomic<uint64_t> calls_{0};
};

// Fills `out` with f(stream, i) converted to its real type.
template <class F>
void fill_real(const sdk::Context& ctx, const sdk::Tensor& out, const std::string& where, F&& f) {
  int64_t n = out.numel();
  dispatch_real(out.dtype(), where, [&](auto tag) {
    using T = decltype(tag);
    T* p = out.data<T>();
    ctx.parallel_for(n, 1 << 14, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) p[i] = from_acc<T>(acc_t<T>(f(i)));
    });
  });
}

// The value of a uniform draw u in [low, high); rounding to a narrower type
// could give `high`, which the half-open interval excludes.
template <class T>
inline T uniform_value(double u, double low, double high) {
  double v = low + (high - low) * u;
  T t = from_acc<T>(acc_t<T>(v));
  if (!(to_acc<double>(t) < high) && high > low) {
    float below = std::nextafter(float(high), float(low));
    if constexpr (is_half_like<T>()) {
      T c = T(below);
      while (!(to_acc<double>(c) < high)) {
        below = std::nextafter(below, float(low));
        c = T(below);
      }
      return c;
    } else {
      return T(std::nextafter(T(high), T(low)));
    }
  }
  return t;
}

class RandomDistribution : public RandomKernel {
 public:
  enum Kind { kUniform, kNormal };
  RandomDistribution(const sdk::Node& node, Kind kind, bool like) : RandomKernel(node), kind_(kind), like_(like) {
    if (kind == kUniform) {
      a_ = node.attr_float("low", 0.0f);
      b_ = node.attr_float("high", 1.0f);
      if (!(std::isfinite(a_) && std::isfinite(b_) && a_ <= b_))
        node.fail("attributes low " + std::to_string(a_) + " and high " + std::to_string(b_) +
                  " must be finite with low <= high");
    } else {
      a_ = node.attr_float("mean", 0.0f);
      b_ = node.attr_float("scale", 1.0f);
      if (!(std::isfinite(a_) && std::isfinite(b_) && b_ >= 0))
        node.fail("attribute mean must be finite and scale finite and >= 0, got mean " + std::to_string(a_) +
                  ", scale " + std::to_string(b_));
    }
    // Opset 22 adds bfloat16 outputs.
    types_ = node.opset() >= 22 ? kRealTypes : sdk::kFloatTypes;
    if (like) {
      dtype_ = read_dtype(node, 0, types_);
      if (dtype_ == 0) {
        int32_t in = node.input_info(0).onnx_dtype;
        if (in != 0 && !(types_ & bit(in)))
          node.fail(std::string("input type ") + sdk::dtype_name(in) +
                    " is not a float type; set attribute dtype to choose the output type");
      }
    } else {
      dtype_ = read_dtype(node, SINGA_ONNX_FLOAT, types_);
      if (!node.has_attr("shape")) node.fail("required attribute shape is missing");
      shape_ = node.attr_ints("shape");
      for (int64_t d : shape_)
        if (d < 0) node.fail("attribute shape " + shape_str(shape_) + " has a negative dimension");
    }
  }

  void compute(sdk::Context& ctx) const {
    Shape shape = shape_;
    int32_t dtype = dtype_;
    if (like_) {
      sdk::Tensor x = required(ctx, 0, "input");
      shape = x.shape();
      if (dtype == 0) dtype = x.dtype();
      SINGA_CHECK((types_ & bit(dtype)) != 0,
                  std::string("input type ") + sdk::dtype_name(dtype) +
                      " is not a float type; set attribute dtype to choose the output type");
    }
    sdk::Tensor y = ctx.output(0, shape, dtype);
    CallStream s = next_call();
    if (kind_ == kNormal) {
      fill_real(ctx, y, where(), [&](int64_t i) { return double(a_) + double(b_) * s.normal(uint64_t(i)); });
      return;
    }
    int64_t n = y.numel();
    dispatch_real(dtype, where(), [&](auto tag) {
      using T = decltype(tag);
      T* p = y.data<T>();
      ctx.parallel_for(n, 1 << 14, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) p[i] = uniform_value<T>(s.uniform(uint64_t(i)), a_, b_);
      });
    });
  }

 private:
  Kind kind_;
  bool like_;
  float a_ = 0, b_ = 1;
  int32_t dtype_ = SINGA_ONNX_FLOAT;
  uint64_t types_ = sdk::kFloatTypes;
  Shape shape_;
};

struct RandomUniform : RandomDistribution {
  explicit RandomUniform(const sdk::Node& n) : RandomDistribution(n, kUniform, false) {}
};
struct RandomNormal : RandomDistribution {
  explicit RandomNormal(const sdk::Node& n) : RandomDistribution(n, kNormal, false) {}
};
struct RandomUniformLike : RandomDistribution {
  explicit RandomUniformLike(const sdk::Node& n) : RandomDistribution(n, kUniform, true) {}
};
struct RandomNormalLike : RandomDistribution {
  explicit RandomNormalLike(const sdk::Node& n) : RandomDistribution(n, kNormal, true) {}
};

constexpr uint64_t kBernoulliOut = sdk::kNumericTypes | bit(SINGA_ONNX_BOOL);

// Bernoulli (15): 1 with probability p, else 0, in the input's type or `dtype`.
class Bernoulli : public RandomKernel {
 public:
  explicit Bernoulli(const sdk::Node& node) : RandomKernel(node), dtype_(read_dtype(node, 0, kBernoulliOut)) {}

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "input");
    std::vector<double> p = real_values(x, where());
    for (size_t i = 0; i < p.size(); ++i)
      SINGA_CHECK(p[i] >= 0.0 && p[i] <= 1.0,
                  "probability " + std::to_string(p[i]) + " at element " + std::to_string(i) + " is not in [0, 1]");
    int32_t dtype = dtype_ ? dtype_ : x.dtype();
    sdk::Tensor y = ctx.output(0, x.shape(), dtype);
    CallStream s = next_call();
    int64_t n = x.numel();
    sdk::dispatch(dtype, [&](auto tag) {
      using T = decltype(tag);
      T* py = y.data<T>();
      const T one = from_acc<T>(acc_t<T>(1)), zero = from_acc<T>(acc_t<T>(0));
      ctx.parallel_for(n, 1 << 14, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) py[i] = s.uniform(uint64_t(i)) < p[size_t(i)] ? one : zero;
      });
    }, kBernoulliOut);
  }

 private:
  int32_t dtype_;
};

// Multinomial: sample_size class indices per batch row, drawn from the
// softmax of that row's unnormalised log-probabilities.
class Multinomial : public RandomKernel {
 public:
  explicit Multinomial(const sdk::Node& node)
      : RandomKernel(node),
        samples_(node.attr_int("sample_size", 1)),
        dtype_(read_dtype(node, SINGA_ONNX_INT32, bit(SINGA_ONNX_INT32) | bit(SINGA_ONNX_INT64))) {
    if (samples_ < 1) node.fail("attribute sample_size must be >= 1, got " + std::to_string(samples_));
  }

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "input");
    SINGA_CHECK(x.ndim() == 2, "input must be 2-D [batch_size, class_size], got shape " + shape_str(x.shape()));
    int64_t batch = x.dim(0), classes = x.dim(1);
    SINGA_CHECK(classes > 0 || batch == 0, "input has no classes: shape " + shape_str(x.shape()));
    std::vector<double> logits = real_values(x, where());
    sdk::Tensor y = ctx.output(0, {batch, samples_}, dtype_);
    CallStream s = next_call();
    std::vector<double> cdf(size_t(batch * classes));
    for (int64_t r = 0; r < batch; ++r) {
      const double* l = logits.data() + r * classes;
      double* c = cdf.data() + r * classes;
      double top = *std::max_element(l, l + classes);
      SINGA_CHECK(!std::isnan(top) && top != -INFINITY && top != INFINITY,
                  "row " + std::to_string(r) + " has no finite log-probability to sample from");
      double sum = 0;
      for (int64_t k = 0; k < classes; ++k) {
        SINGA_CHECK(!std::isnan(l[k]), "input has NaN in row " + std::to_string(r));
        sum += std::exp(l[k] - top);
        c[k] = sum;
      }
    }
    sdk::dispatch(dtype_, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_integral<T>::value) {
        T* py = y.data<T>();
        ctx.parallel_for(batch * samples_, 256, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) {
            const double* c = cdf.data() + (i / samples_) * classes;
            double target = s.uniform(uint64_t(i)) * c[classes - 1];
            int64_t k = std::upper_bound(c, c + classes, target) - c;
            py[i] = T(std::min(k, classes - 1));
          }
        });
      }
    }, bit(SINGA_ONNX_INT32) | bit(SINGA_ONNX_INT64));
  }

 private:
  int64_t samples_;
  int32_t dtype_;
};

}  // namespace

void register_random(sdk::Registrar& reg) {
  const uint32_t random = SINGA_KERNEL_NONDETERMINISTIC;
  const uint64_t any_input = sdk::kAllTypes | bit(SINGA_ONNX_COMPLEX64) | bit(SINGA_ONNX_COMPLEX128);
  reg.kernel<RandomUniform>("", "RandomUniform", 1, SINGA_VERSION_OPEN, "cpu", {{"T", -1, sdk::kFloatTypes}}, random);
  reg.kernel<RandomNormal>("", "RandomNormal", 1, SINGA_VERSION_OPEN, "cpu", {{"T", -1, sdk::kFloatTypes}}, random);
  reg.kernel<RandomUniformLike>("", "RandomUniformLike", 1, SINGA_VERSION_OPEN, "cpu",
                                {{"T1", 0, any_input}, {"T2", -1, sdk::kFloatTypes}}, random);
  reg.kernel<RandomNormalLike>("", "RandomNormalLike", 1, SINGA_VERSION_OPEN, "cpu",
                               {{"T1", 0, any_input}, {"T2", -1, sdk::kFloatTypes}}, random);
  reg.kernel<Bernoulli>("", "Bernoulli", 15, SINGA_VERSION_OPEN, "cpu", {{"T1", 0, sdk::kFloatTypes}, {"T2", -1, kBernoulliOut}},
                        random);
  reg.kernel<Multinomial>("", "Multinomial", 7, SINGA_VERSION_OPEN, "cpu",
                          {{"T1", 0, sdk::kFloatTypes}, {"T2", -1, bit(SINGA_ONNX_INT32) | bit(SINGA_ONNX_INT64)}},
                          random);
  // Opset 22 adds bfloat16 (outputs, and Bernoulli's and Multinomial's input).
  const uint64_t r = kRealTypes;
  reg.kernel<RandomUniform>("", "RandomUniform", 22, SINGA_VERSION_OPEN, "cpu", {{"T", -1, r}}, random);
  reg.kernel<RandomNormal>("", "RandomNormal", 22, SINGA_VERSION_OPEN, "cpu", {{"T", -1, r}}, random);
  reg.kernel<RandomUniformLike>("", "RandomUniformLike", 22, SINGA_VERSION_OPEN, "cpu",
                                {{"T1", 0, any_input}, {"T2", -1, r}}, random);
  reg.kernel<RandomNormalLike>("", "RandomNormalLike", 22, SINGA_VERSION_OPEN, "cpu",
                               {{"T1", 0, any_input}, {"T2", -1, r}}, random);
  reg.kernel<Bernoulli>("", "Bernoulli", 22, SINGA_VERSION_OPEN, "cpu", {{"T1", 0, r}, {"T2", -1, kBernoulliOut}},
                        random);
  reg.kernel<Multinomial>("", "Multinomial", 22, SINGA_VERSION_OPEN, "cpu",
                          {{"T1", 0, r}, {"T2", -1, bit(SINGA_ONNX_INT32) | bit(SINGA_ONNX_INT64)}}, random);
}

}  // namespace nn
}  // namespace singa
