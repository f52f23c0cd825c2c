// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss over inputs shaped
// (N, C, d1..dk) with labels shaped (N, d1..dk).
//
// Both reduce to one routine: SoftmaxCrossEntropyLoss is the negative log
// likelihood of log_softmax(scores) along the class axis. Arithmetic runs in
// double and is rounded once into the output type, so float16 results carry a
// single rounding error (bfloat16 likewise).
#include "nn_common.hpp"
#include "register.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace singa {
namespace nn {
namespace {

enum class Reduction { kNone, kSum, kMean };

// Attributes and input checks shared by both losses.
class LossKernel : public NodeKernel {
 public:
  explicit LossKernel(const sdk::Node& node) : NodeKernel(node) {
    const std::string r = node.attr_string("reduction", "mean");
    if (r == "none")
      reduction_ = Reduction::kNone;
    else if (r == "sum")
      reduction_ = Reduction::kSum;
    else if (r == "mean")
      reduction_ = Reduction::kMean;
    else
      node.fail("reduction must be 'none', 'sum' or 'mean', got '" + r + "'");
    has_ignore_ = node.has_attr("ignore_index");
    ignore_index_ = node.attr_int("ignore_index", 0);
  }

 protected:
  // The (N, C, D) view of the input, D being the product of d1..dk.
  struct Dims {
    int64_t n = 0, c = 0, d = 1;
  };

  Dims check_shapes(const sdk::Tensor& x, const sdk::Tensor& labels, const sdk::Tensor* weights,
                    const char* x_name) const {
    const Shape xs = x.shape(), ls = labels.shape();
    SINGA_CHECK(xs.size() >= 2,
                std::string(x_name) + " must have rank >= 2 (N, C, d1..dk), got shape " + shape_str(xs));
    bool match = ls.size() + 1 == xs.size() && ls[0] == xs[0];
    for (size_t i = 1; match && i < ls.size(); ++i) match = ls[i] == xs[i + 1];
    SINGA_CHECK(match, "labels shape " + shape_str(ls) + " does not match " + x_name + " shape " + shape_str(xs) +
                           " without its class axis");
    Dims dims;
    dims.n = xs[0];
    dims.c = xs[1];
    for (size_t i = 2; i < xs.size(); ++i) dims.d *= xs[i];
    if (weights) {
      const Shape ws = weights->shape();
      SINGA_CHECK(ws.size() == 1 && ws[0] == dims.c,
                  "weights must have shape [" + std::to_string(dims.c) + "] (one per class), got " + shape_str(ws));
      SINGA_CHECK(weights->dtype() == x.dtype(), std::string("weights dtype ") + sdk::dtype_name(weights->dtype()) +
                                                     " differs from " + x_name + " dtype " +
                                                     sdk::dtype_name(x.dtype()));
    }
    return dims;
  }

  // Labels as int64, each checked to be a class index or the ignored value.
  std::vector<int64_t> read_labels(const sdk::Tensor& labels, int64_t classes) const {
    std::vector<int64_t> out(static_cast<size_t>(labels.numel()));
    dispatch_among<int32_t, int64_t>(labels.dtype(), where(), [&](auto tag) {
      using I = decltype(tag);
      const I* p = labels.data<I>();
      for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int64_t>(p[i]);
    });
    for (size_t i = 0; i < out.size(); ++i) {
      const int64_t t = out[i];
      if (has_ignore_ && t == ignore_index_) continue;
      SINGA_CHECK(t >= 0 && t < classes,
                  "label " + std::to_string(t) + " at flat index " + std::to_string(i) + " is outside [0, " +
                      std::to_string(classes) + ")" +
                      (has_ignore_ ? " and is not ignore_index " + std::to_string(ignore_index_) : std::string()));
    }
    return out;
  }

  // Writes the loss from log-probabilities logp (N, C, D, any element type
  // read through to_acc) into output 0.
  template <class T, class P>
  void nll(sdk::Context& ctx, const P* logp, const std::vector<int64_t>& labels, const std::vector<double>* weights,
           const Dims& dims, const Shape& label_shape) const {
    const int64_t count = dims.n * dims.d;
    std::vector<double> loss(static_cast<size_t>(count)), weight(static_cast<size_t>(count));
    for (int64_t n = 0; n < dims.n; ++n) {
      for (int64_t k = 0; k < dims.d; ++k) {
        const size_t i = size_t(n * dims.d + k);
        const int64_t t = labels[i];
        if (has_ignore_ && t == ignore_index_) {
          loss[i] = 0.0;
          weight[i] = 0.0;
          continue;
        }
        const double w = weights ? (*weights)[size_t(t)] : 1.0;
        loss[i] = -to_acc<double>(logp[(n * dims.c + t) * dims.d + k]) * w;
        weight[i] = w;
      }
    }
    if (reduction_ == Reduction::kNone) {
      T* out = ctx.output(0, label_shape, onnx_of<T>::value).template data<T>();
      for (int64_t i = 0; i < count; ++i) out[i] = from_acc<T>(acc_t<T>(loss[size_t(i)]));
      return;
    }
    double total = 0.0, total_weight = 0.0;
    for (int64_t i = 0; i < count; ++i) {
      total += loss[size_t(i)];
      total_weight += weight[size_t(i)];
    }
    // As in the ONNX definition, an all-ignored batch gives 0/0 = NaN for mean.
    const double result = reduction_ == Reduction::kSum ? total : total / total_weight;
    T* out = ctx.output(0, Shape{}, onnx_of<T>::value).template data<T>();
    out[0] = from_acc<T>(acc_t<T>(result));
  }

  std::vector<double> read_weights(const sdk::Context& ctx) const {
    if (!ctx.has_input(2)) return {};
    return real_values(ctx.input(2), where());
  }

 private:
  Reduction reduction_ = Reduction::kMean;
  bool has_ignore_ = false;
  int64_t ignore_index_ = 0;
};

class NegativeLogLikelihoodLoss : public LossKernel {
 public:
  using LossKernel::LossKernel;

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "input");
    sdk::Tensor labels = required(ctx, 1, "target");
    sdk::Tensor w = ctx.input(2);
    const Dims dims = check_shapes(x, labels, w.present() ? &w : nullptr, "input");
    const std::vector<int64_t> t = read_labels(labels, dims.c);
    const std::vector<double> weights = read_weights(ctx);
    dispatch_real(x.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      nll<T>(ctx, x.data<T>(), t, w.present() ? &weights : nullptr, dims, labels.shape());
    });
  }
};

class SoftmaxCrossEntropyLoss : public LossKernel {
 public:
  using LossKernel::LossKernel;

  void compute(sdk::Context& ctx) const {
    sdk::Tensor x = required(ctx, 0, "scores");
    sdk::Tensor labels = required(ctx, 1, "labels");
    sdk::Tensor w = ctx.input(2);
    const Dims dims = check_shapes(x, labels, w.present() ? &w : nullptr, "scores");
    const std::vector<int64_t> t = read_labels(labels, dims.c);
    const std::vector<double> weights = read_weights(ctx);
    dispatch_real(x.dtype(), where(), [&](auto tag) {
      using T = decltype(tag);
      const std::vector<double> logp = log_softmax(ctx, x.data<T>(), dims);
      nll<T>(ctx, logp.data(), t, w.present() ? &weights : nullptr, dims, labels.shape());
      if (ctx.num_outputs() > 1) {
        T* out = ctx.output(1, x.shape(), x.dl_dtype()).template data<T>();
        for (size_t i = 0; i < logp.size(); ++i) out[i] = from_acc<T>(acc_t<T>(logp[i]));
      }
    });
  }

 private:
  // log_softmax along the class axis, one (n, k) column per task.
  template <class T>
  static std::vector<double> log_softmax(const sdk::Context& ctx, const T* x, const Dims& dims) {
    std::vector<double> out(static_cast<size_t>(dims.n * dims.c * dims.d));
    const int64_t columns = dims.n * dims.d;
    const int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(1, dims.c));
    ctx.parallel_for(columns, grain, [&](int64_t b, int64_t e) {
      for (int64_t col = b; col < e; ++col) {
        const int64_t n = col / dims.d, k = col % dims.d;
        const int64_t base = n * dims.c * dims.d + k;
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t c = 0; c < dims.c; ++c) mx = std::max(mx, to_acc<double>(x[base + c * dims.d]));
        double sum = 0.0;
        for (int64_t c = 0; c < dims.c; ++c) sum += std::exp(to_acc<double>(x[base + c * dims.d]) - mx);
        const double shift = mx + std::log(sum);
        for (int64_t c = 0; c < dims.c; ++c)
          out[size_t(base + c * dims.d)] = to_acc<double>(x[base + c * dims.d]) - shift;
      }
    });
    return out;
  }
};

}  // namespace

void register_losses(sdk::Registrar& reg) {
  const uint64_t labels = bit(SINGA_ONNX_INT32) | bit(SINGA_ONNX_INT64);
  // Opset 13 changed only the type list (bfloat16 scores for the softmax loss).
  reg.kernel<NegativeLogLikelihoodLoss>("", "NegativeLogLikelihoodLoss", 12, 12, "cpu",
                                        {{"T", 0, sdk::kFloatTypes}, {"Tind", 1, labels}});
  reg.kernel<NegativeLogLikelihoodLoss>("", "NegativeLogLikelihoodLoss", 13, SINGA_VERSION_OPEN, "cpu",
                                        {{"T", 0, sdk::kFloatTypes}, {"Tind", 1, labels}});
  reg.kernel<SoftmaxCrossEntropyLoss>("", "SoftmaxCrossEntropyLoss", 12, 12, "cpu",
                                      {{"T", 0, sdk::kFloatTypes}, {"Tind", 1, labels}});
  reg.kernel<SoftmaxCrossEntropyLoss>("", "SoftmaxCrossEntropyLoss", 13, SINGA_VERSION_OPEN, "cpu",
                                      {{"T", 0, kRealTypes}, {"Tind", 1, labels}});
  // NegativeLogLikelihoodLoss-22 adds bfloat16.
  reg.kernel<NegativeLogLikelihoodLoss>("", "NegativeLogLikelihoodLoss", 22, SINGA_VERSION_OPEN, "cpu",
                                        {{"T", 0, kRealTypes}, {"Tind", 1, labels}});
}

}  // namespace nn
}  // namespace singa
