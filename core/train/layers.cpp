#include <singa/layer.hpp>

#include "cast.hpp"
#include "fuse.hpp"
#include "init.hpp"
#include "../env_options.hpp"

#include <singa/error.hpp>

#include <cmath>
#include <cstdlib>
#include <fnmatch.h>
#include <typeinfo>
#include <mutex>
#include <random>

namespace singa {
namespace layer {

using autograd::apply;
using autograd::apply1;
using autograd::Attrs;
using detail::uniform;

namespace {

std::mutex g_rng_mu;
std::mt19937_64& rng() {
  static std::mt19937_64 r(0x5eed);
  return r;
}

Variable filled(const Shape& shape, float v, bool trainable, const std::string& name) {
  Tensor t(shape, SINGA_ONNX_FLOAT);
  std::fill(t.data<float>(), t.data<float>() + t.numel(), v);
  return Variable(t, trainable, name);
}

}  // namespace

// kaiming_uniform with a = sqrt(5), PyTorch's default, gives bound = 1 / sqrt(fan_in).
Variable detail::uniform(const Shape& shape, double bound, const std::string& name) {
  Tensor t(shape, SINGA_ONNX_FLOAT);
  std::lock_guard<std::mutex> lock(g_rng_mu);
  std::uniform_real_distribution<float> d(float(-bound), float(bound));
  float* p = t.data<float>();
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) p[i] = d(rng());
  return Variable(t, true, name);
}

void manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(g_rng_mu);
  rng().seed(seed);
}

NamedVariables Layer::parameters(const std::string& prefix) const {
  NamedVariables p, b;
  collect(prefix, p, b);
  return p;
}

NamedVariables Layer::buffers(const std::string& prefix) const {
  NamedVariables p, b;
  collect(prefix, p, b);
  return b;
}

std::vector<Variable> Layer::forward_all(const std::vector<Variable>& xs) {
  if (xs.size() != 1)
    throw Error(SINGA_INVALID_ARGUMENT, "a layer of one input was given " + std::to_string(xs.size()) +
                                            " (the outputs of a multi-output layer before it? a layer::Select picks one)");
  return {forward(xs[0])};
}

int64_t Layer::set_trainable(const std::string& pattern, bool on) {
  NamedVariables params = parameters();
  int64_t n = 0;
  for (auto& [name, v] : params)
    if (::fnmatch(pattern.c_str(), name.c_str(), 0) == 0) {
      v.set_requires_grad(on);
      ++n;
    }
  if (n == 0) {
    std::string some;
    for (size_t i = 0; i < params.size() && i < 6; ++i) some += (i ? ", " : "") + params[i].first;
    if (params.size() > 6) some += ", ... (" + std::to_string(params.size()) + " in all)";
    throw Error(SINGA_INVALID_ARGUMENT, "set_trainable: pattern '" + pattern + "' matches no parameter name" +
                                            (params.empty() ? std::string(" (the layer has none)") : " (names: " + some + ")"));
  }
  return n;
}

void Layer::to(int32_t dtype) {
  detail::check_float_dtype(dtype, "Layer");
  NamedVariables p, b;
  collect("", p, b);
  for (auto* vars : {&p, &b})
    for (auto& kv : *vars) detail::cast_variable(kv.second, dtype);
}

// ---------------------------------------------------------------- Linear
Linear::Linear(int64_t in, int64_t out, bool with_bias) {
  if (in <= 0 || out <= 0) throw Error(SINGA_INVALID_ARGUMENT, "Linear: feature counts must be positive");
  double bound = 1.0 / std::sqrt(double(in));
  weight = uniform({out, in}, bound, "weight");
  if (with_bias) bias = uniform({out}, bound, "bias");
}

Variable Linear::forward(const Variable& x) {
  if (x.shape().size() != 2 || x.shape()[1] != weight.shape()[1])
    throw Error(SINGA_INVALID_ARGUMENT, "Linear: input of shape " + shape_to_string(x.shape()) + " for weight " +
                                            shape_to_string(weight.shape()) + " (expects [N, " +
                                            std::to_string(weight.shape()[1]) + "])");
  std::vector<Variable> in{x, weight};
  if (bias.defined()) in.push_back(bias);
  return apply1("Gemm", in, Attrs().set("transB", int64_t(1)));
}

void Linear::collect(const std::string& p, NamedVariables& out, NamedVariables&) const {
  out.emplace_back(p + "weight", weight);
  if (bias.defined()) out.emplace_back(p + "bias", bias);
}

// ---------------------------------------------------------------- Conv2d
Conv2d::Conv2d(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t padding, int64_t dilation, int64_t groups,
               bool with_bias)
    : kernel_(kernel), stride_(stride), padding_(padding), dilation_(dilation), groups_(groups) {
  if (in <= 0 || out <= 0 || kernel <= 0 || stride <= 0 || padding < 0 || dilation <= 0 || groups <= 0 ||
      in % groups || out % groups)
    throw Error(SINGA_INVALID_ARGUMENT, "Conv2d: bad configuration (channels " + std::to_string(in) + "->" +
                                            std::to_string(out) + ", kernel " + std::to_string(kernel) + ", groups " +
                                            std::to_string(groups) + ")");
  double bound = 1.0 / std::sqrt(double(in / groups * kernel * kernel));
  weight = uniform({out, in / groups, kernel, kernel}, bound, "weight");
  if (with_bias) bias = uniform({out}, bound, "bias");
}

Attrs Conv2d::conv_attrs() const {
  Attrs a;
  a.set("kernel_shape", std::vector<int64_t>{kernel_, kernel_})
      .set("strides", std::vector<int64_t>{stride_, stride_})
      .set("pads", std::vector<int64_t>{padding_, padding_, padding_, padding_})
      .set("dilations", std::vector<int64_t>{dilation_, dilation_})
      .set("group", groups_);
  return a;
}

Variable Conv2d::forward(const Variable& x) {
  std::vector<Variable> in{x, weight};
  if (bias.defined()) in.push_back(bias);
  return apply1("Conv", in, conv_attrs());
}

Variable Conv2d::forward_relu_maxpool(const Variable& x, int64_t pool_kernel, int64_t pool_stride) {
  std::vector<Variable> in{x, weight};
  if (bias.defined()) in.push_back(bias);
  Attrs a = conv_attrs();
  a.set("pool_kernel_shape", std::vector<int64_t>{pool_kernel, pool_kernel})
      .set("pool_strides", std::vector<int64_t>{pool_stride, pool_stride});
  // The Indices output only when a backward pass will read it.
  bool grad = false;
  for (const Variable& v : in) grad = grad || v.requires_grad();
  const bool indices = autograd::recording() && grad;
  return apply("ConvReluMaxPool", in, a, indices ? 2 : 1, "ai.singa")[0];
}

void Conv2d::collect(const std::string& p, NamedVariables& out, NamedVariables&) const {
  out.emplace_back(p + "weight", weight);
  if (bias.defined()) out.emplace_back(p + "bias", bias);
}

// ---------------------------------------------------------------- pooling
static Attrs pool_attrs(int64_t k, int64_t s, int64_t p) {
  Attrs a;
  a.set("kernel_shape", std::vector<int64_t>{k, k})
      .set("strides", std::vector<int64_t>{s, s})
      .set("pads", std::vector<int64_t>{p, p, p, p});
  return a;
}

MaxPool2d::MaxPool2d(int64_t kernel, int64_t stride, int64_t padding)
    : kernel_(kernel), stride_(stride ? stride : kernel), padding_(padding) {
  if (kernel <= 0 || stride_ <= 0 || padding < 0) throw Error(SINGA_INVALID_ARGUMENT, "MaxPool2d: bad configuration");
}
// While training, the Indices output saves the backward pass from finding
// each window's maximum again (the export drops it).
Variable MaxPool2d::forward(const Variable& x) {
  if (!training_ || !autograd::recording() || !x.requires_grad()) return apply1("MaxPool", {x}, pool_attrs(kernel_, stride_, padding_));
  return apply("MaxPool", {x}, pool_attrs(kernel_, stride_, padding_), 2)[0];
}

AvgPool2d::AvgPool2d(int64_t kernel, int64_t stride, int64_t padding)
    : kernel_(kernel), stride_(stride ? stride : kernel), padding_(padding) {
  if (kernel <= 0 || stride_ <= 0 || padding < 0) throw Error(SINGA_INVALID_ARGUMENT, "AvgPool2d: bad configuration");
}
Variable AvgPool2d::forward(const Variable& x) { return apply1("AveragePool", {x}, pool_attrs(kernel_, stride_, padding_)); }

// ---------------------------------------------------------------- BatchNorm2d
BatchNorm2d::BatchNorm2d(int64_t channels, float momentum, float epsilon) : momentum_(momentum), epsilon_(epsilon) {
  if (channels <= 0) throw Error(SINGA_INVALID_ARGUMENT, "BatchNorm2d: channels must be positive");
  scale = filled({channels}, 1.0f, true, "scale");
  bias = filled({channels}, 0.0f, true, "bias");
  running_mean = filled({channels}, 0.0f, false, "running_mean");
  running_var = filled({channels}, 1.0f, false, "running_var");
}

Variable BatchNorm2d::forward(const Variable& x) {
  Attrs a;
  a.set("epsilon", epsilon_).set("momentum", momentum_);
  if (!training_) return apply1("BatchNormalization", {x, scale, bias, running_mean, running_var}, a);
  a.set("training_mode", int64_t(1));
  auto out = apply("BatchNormalization", {x, scale, bias, running_mean, running_var}, a, 3);
  running_mean.set_data(out[1].data());
  running_var.set_data(out[2].data());
  return out[0];
}

void BatchNorm2d::collect(const std::string& p, NamedVariables& out, NamedVariables& buf) const {
  out.emplace_back(p + "scale", scale);
  out.emplace_back(p + "bias", bias);
  buf.emplace_back(p + "running_mean", running_mean);
  buf.emplace_back(p + "running_var", running_var);
}

// ---------------------------------------------------------------- Dropout
Dropout::Dropout(float ratio, int64_t seed) : ratio_(ratio), seed_(seed) {
  if (!(ratio >= 0.0f && ratio < 1.0f)) throw Error(SINGA_INVALID_ARGUMENT, "Dropout: ratio must be in [0, 1)");
}

Variable Dropout::forward(const Variable& x) {
  if (!training_ || ratio_ == 0.0f) return x;
  Tensor mode(Shape{}, SINGA_ONNX_BOOL);
  *mode.data<bool>() = true;
  Attrs a;
  if (seed_ >= 0) a.set("seed", seed_);
  return apply("Dropout", {x, Variable(autograd::scalar(ratio_, x.dtype())), Variable(mode)}, a, 2)[0];
}

// ---------------------------------------------------------------- others
Variable Activation::forward(const Variable& x) { return apply1(op_, {x}, attrs_); }

Sequential& Sequential::add(std::shared_ptr<Layer> l) {
  if (!l) throw Error(SINGA_INVALID_ARGUMENT, "Sequential::add: null layer");
  l->train(training_);
  layers_.push_back(std::move(l));
  return *this;
}

bool fuse_conv_blocks() {
  static const bool on = [] {
    return runtime_flag("core.fuse_layers", true);
  }();
  return on;
}

Variable Select::forward(const Variable& x) {
  if (index_ != 0) throw Error(SINGA_INVALID_ARGUMENT, "Select(" + std::to_string(index_) + ") was given one input");
  return x;
}

std::vector<Variable> Select::forward_all(const std::vector<Variable>& xs) {
  if (index_ >= xs.size())
    throw Error(SINGA_INVALID_ARGUMENT, "Select(" + std::to_string(index_) + ") was given " + std::to_string(xs.size()) +
                                            " inputs");
  return {xs[index_]};
}

Variable Sequential::forward(const Variable& x) {
  std::vector<Variable> ys = forward_all({x});
  if (ys.size() != 1)
    throw Error(SINGA_INVALID_ARGUMENT, "Sequential::forward: the last layer gave " + std::to_string(ys.size()) +
                                            " outputs; use forward_all, or end with a Select");
  return ys[0];
}

std::vector<Variable> Sequential::forward_all(const std::vector<Variable>& xs) {
  std::vector<Variable> ys = xs;
  for (size_t i = 0; i < layers_.size(); ++i) {
    if (ys.size() != 1) {
      ys = layers_[i]->forward_all(ys);
      continue;
    }
    Variable& y = ys[0];
    // Exact types only: a subclass may have its own forward().
    if (fuse_conv_blocks() && i + 2 < layers_.size() && typeid(*layers_[i]) == typeid(Conv2d) &&
        typeid(*layers_[i + 1]) == typeid(ReLU) && typeid(*layers_[i + 2]) == typeid(MaxPool2d)) {
      auto& pool = static_cast<const MaxPool2d&>(*layers_[i + 2]);
      if (pool.padding_ == 0) {
        y = static_cast<Conv2d&>(*layers_[i]).forward_relu_maxpool(y, pool.kernel_, pool.stride_);
        i += 2;
        continue;
      }
    }
    ys = layers_[i]->forward_all(ys);
  }
  return ys;
}

void Sequential::to(int32_t dtype) {
  for (auto& l : layers_) l->to(dtype);
}

void Sequential::train(bool on) {
  training_ = on;
  for (auto& l : layers_) l->train(on);
}

void Sequential::collect(const std::string& p, NamedVariables& out, NamedVariables& buf) const {
  for (size_t i = 0; i < layers_.size(); ++i) layers_[i]->collect(p + std::to_string(i) + ".", out, buf);
}

}  // namespace layer
}  // namespace singa
