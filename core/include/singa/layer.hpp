// layer.hpp - trainable building blocks over the autograd tape (SINGA's
// `layer` module): each forward() is a few recorded ops, so a model built
// from layers trains with autograd::backward() and exports with to_onnx().
#ifndef SINGA_LAYER_HPP
#define SINGA_LAYER_HPP

#include <singa/autograd.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace singa {
namespace onnx {
class Rep;
}
namespace layer {

using autograd::Variable;
using NamedVariables = std::vector<std::pair<std::string, Variable>>;

// Seeds the generator that initialises new layers' weights.
void manual_seed(uint64_t seed);

class Layer {
 public:
  virtual ~Layer() = default;
  virtual Variable forward(const Variable& x) = 0;
  Variable operator()(const Variable& x) { return forward(x); }
  // Several inputs in, every output out, for models with more than one of
  // either (an imported BERT takes input_ids and a mask and returns two
  // outputs). The default passes exactly one input to forward().
  virtual std::vector<Variable> forward_all(const std::vector<Variable>& xs);
  std::vector<Variable> operator()(const std::vector<Variable>& xs) { return forward_all(xs); }
  // Trainable parameters, named "<prefix><layer-local name>".
  NamedVariables parameters(const std::string& prefix = "") const;
  // Non-trainable state that a checkpoint must keep (running statistics).
  NamedVariables buffers(const std::string& prefix = "") const;
  // Training mode (batch statistics, dropout) or evaluation mode.
  virtual void train(bool on = true) { training_ = on; }
  void eval() { train(false); }
  bool training() const { return training_; }
  // Freezes (on = false) or unfreezes the parameters whose names match
  // `pattern`, a glob over the whole name ("layer4.*", "*.bias", "fc.?eight").
  // Returns how many matched; throws SINGA_INVALID_ARGUMENT when none does,
  // naming the pattern and some parameter names.
  int64_t set_trainable(const std::string& pattern, bool on);
  // Converts the parameters and buffers to `dtype` (SINGA_ONNX_FLOAT or
  // SINGA_ONNX_DOUBLE), like PyTorch's model.to(dtype): inputs must then be
  // of that type. Call it before an optimizer is made (its state keeps the
  // old type). Gradients are dropped.
  virtual void to(int32_t dtype);

 protected:
  virtual void collect(const std::string& prefix, NamedVariables& params, NamedVariables& buffers) const {}
  friend class Sequential;
  bool training_ = true;
};

// y = x W^T + b, W of shape [out, in] (one Gemm).
class Linear : public Layer {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Variable forward(const Variable& x) override;
  Variable weight, bias;

 protected:
  void collect(const std::string& p, NamedVariables& out, NamedVariables& buf) const override;
};

// 2-D convolution, W of shape [out, in / groups, kh, kw].
class Conv2d : public Layer {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel, int64_t stride = 1, int64_t padding = 0,
         int64_t dilation = 1, int64_t groups = 1, bool bias = true);
  Variable forward(const Variable& x) override;
  Variable weight, bias;

 protected:
  void collect(const std::string& p, NamedVariables& out, NamedVariables& buf) const override;

 private:
  friend class Sequential;
  autograd::Attrs conv_attrs() const;
  // This conv, a ReLU and an unpadded max pool as one fused op (Sequential).
  Variable forward_relu_maxpool(const Variable& x, int64_t pool_kernel, int64_t pool_stride);
  int64_t kernel_, stride_, padding_, dilation_, groups_;
};

class MaxPool2d : public Layer {
 public:
  explicit MaxPool2d(int64_t kernel, int64_t stride = 0, int64_t padding = 0);  // stride 0: the kernel size
  Variable forward(const Variable& x) override;

 private:
  friend class Sequential;
  int64_t kernel_, stride_, padding_;
};

class AvgPool2d : public Layer {
 public:
  explicit AvgPool2d(int64_t kernel, int64_t stride = 0, int64_t padding = 0);
  Variable forward(const Variable& x) override;

 private:
  int64_t kernel_, stride_, padding_;
};

// Batch normalisation over [N, C, ...]. In training mode it normalises with
// the batch's statistics and updates the running ones:
// running = running * momentum + batch * (1 - momentum) (ONNX's convention).
class BatchNorm2d : public Layer {
 public:
  explicit BatchNorm2d(int64_t channels, float momentum = 0.9f, float epsilon = 1e-5f);
  Variable forward(const Variable& x) override;
  Variable scale, bias, running_mean, running_var;

 protected:
  void collect(const std::string& p, NamedVariables& out, NamedVariables& buf) const override;

 private:
  float momentum_, epsilon_;
};

// Zeroes each element with probability `ratio` in training mode (scaling the
// rest by 1 / (1 - ratio)); the identity in evaluation mode. A `seed` makes
// the sequence of masks reproducible.
class Dropout : public Layer {
 public:
  explicit Dropout(float ratio = 0.5f, int64_t seed = -1);
  Variable forward(const Variable& x) override;

 private:
  float ratio_;
  int64_t seed_;
};

// An op without parameters applied to its input (ReLU and friends, Flatten).
class Activation : public Layer {
 public:
  explicit Activation(std::string op, autograd::Attrs attrs = {}) : op_(std::move(op)), attrs_(std::move(attrs)) {}
  Variable forward(const Variable& x) override;

 private:
  std::string op_;
  autograd::Attrs attrs_;
};
struct ReLU : Activation { ReLU() : Activation("Relu") {} };
struct Sigmoid : Activation { Sigmoid() : Activation("Sigmoid") {} };
struct Tanh : Activation { Tanh() : Activation("Tanh") {} };
struct LeakyReLU : Activation {
  explicit LeakyReLU(float alpha = 0.01f) : Activation("LeakyRelu", autograd::Attrs().set("alpha", alpha)) {}
};
struct ELU : Activation { explicit ELU(float alpha = 1.0f) : Activation("Elu", autograd::Attrs().set("alpha", alpha)) {} };
struct Softplus : Activation { Softplus() : Activation("Softplus") {} };
struct Flatten : Activation { explicit Flatten(int64_t axis = 1) : Activation("Flatten", autograd::Attrs().set("axis", axis)) {} };

// A multi-layer LSTM (PyTorch's gate order i, f, g, o and parameter layout:
// per layer l, "weight_ih_l<l>" [4H, in], "weight_hh_l<l>" [4H, H],
// "bias_ih_l<l>" and "bias_hh_l<l>" [4H]). The input is [N, T, in] when
// `batch_first`, else [T, N, in]; the state starts at zero. The output is every
// step's hidden state of the last layer, shaped like the input with H features,
// or only the last step's [N, H] when `return_sequences` is false (a
// classifier's usual input). The steps are unrolled on the tape into MatMul,
// Gemm, Sigmoid, Tanh and Mul nodes, so the layer trains with backward() and
// exports as plain ONNX ops (any batch size; the step count of the trace).
class LSTM : public Layer {
 public:
  LSTM(int64_t input_size, int64_t hidden_size, int64_t num_layers = 1, bool batch_first = true,
       bool return_sequences = true);
  Variable forward(const Variable& x) override;
  struct Weights {
    Variable w_ih, w_hh, b_ih, b_hh;
  };
  std::vector<Weights> weights;  // one per layer

 protected:
  void collect(const std::string& p, NamedVariables& out, NamedVariables& buf) const override;

 private:
  int64_t input_size_, hidden_;
  bool batch_first_, return_sequences_;
};

// Passes on input `index` of several (one output of a multi-output layer
// before it in a Sequential, e.g. the pooled output of an imported BERT).
class Select : public Layer {
 public:
  explicit Select(size_t index) : index_(index) {}
  Variable forward(const Variable& x) override;
  std::vector<Variable> forward_all(const std::vector<Variable>& xs) override;

 private:
  size_t index_;
};

// Layers applied in order; parameters are named "<index>.<name>".
// forward_all() feeds every input to the first layer and every output of
// each layer to the next, so a multi-input model can lead and a Select can
// pick one of several outputs.
// A Conv2d followed by a ReLU and an unpadded MaxPool2d runs as one fused op
// (ConvReluMaxPool of domain "ai.singa"), which gives the same values and
// gradients with far less memory traffic; to_onnx writes it back as the
// three ONNX nodes. The runtime option core.fuse_layers=0 turns this off.
class Sequential : public Layer {
 public:
  Sequential() = default;
  Sequential(std::vector<std::shared_ptr<Layer>> layers) : layers_(std::move(layers)) {}  // NOLINT
  Sequential& add(std::shared_ptr<Layer> l);
  template <class L, class... Args>
  Sequential& emplace(Args&&... args) { return add(std::make_shared<L>(std::forward<Args>(args)...)); }
  // The single output of forward_all (an error when there are several).
  Variable forward(const Variable& x) override;
  std::vector<Variable> forward_all(const std::vector<Variable>& xs) override;
  void train(bool on = true) override;
  void to(int32_t dtype) override;
  const std::vector<std::shared_ptr<Layer>>& layers() const { return layers_; }

 protected:
  void collect(const std::string& p, NamedVariables& out, NamedVariables& buf) const override;

 private:
  std::vector<std::shared_ptr<Layer>> layers_;
};

// An imported ONNX model (a prepared Rep) as a layer: its nodes run eagerly
// on the tape, and `last_layers = -k` stops k nodes before the end (in the
// order Rep::nodes() lists), so that layers appended after it can replace its
// head (transfer learning, as sonnx's SingaRep does). Its floating-point
// initializers are split as PyTorch splits a module's state, named as in the
// model: parameters() are those some node reads as a differentiable input
// (weights, biases, BatchNorm's scale and B); buffers() are BatchNorm's
// running mean and variance, which never require a gradient and, in training
// mode, are updated from each batch (running = running * momentum + batch *
// (1 - momentum), the node's momentum, ONNX's convention: PyTorch's momentum
// 0.1 exports as 0.9); other float initializers (Resize scales, Pad values)
// are constants. Only state read by the nodes that run (before the cut) is
// listed. The Rep must be prepared without graph optimisation (fused nodes
// have no gradients): use prepare_for_training(), or
// PrepareOptions::optimize = false.
class ImportedModel : public Layer {
 public:
  explicit ImportedModel(std::shared_ptr<onnx::Rep> rep, int last_layers = 0);
  // Cut after the node named `last_node` (Rep::nodes() names them).
  ImportedModel(std::shared_ptr<onnx::Rep> rep, const std::string& last_node);
  static std::shared_ptr<onnx::Rep> prepare_for_training(const std::string& path);
  // The first output of forward_all.
  Variable forward(const Variable& x) override;
  // All graph inputs by position; returns the graph outputs (or the outputs
  // of the last node run when last_layers < 0).
  std::vector<Variable> forward_all(const std::vector<Variable>& inputs) override;
  void set_last_layers(int k) { last_layers_ = k; }
  // Stops after the node of this name; an error names an unknown one.
  void set_last_node(const std::string& name);
  int last_layers() const { return last_layers_; }
  // Freezes (or unfreezes) every imported parameter.
  void set_trainable(bool on);
  using Layer::set_trainable;  // by name pattern
  // Also runs the imported graph in `dtype`: float constants and values
  // that a node reads where its schema allows `dtype` are cast on the way in,
  // and Cast nodes to the other float type cast to `dtype` instead.
  void to(int32_t dtype) override;

 protected:
  void collect(const std::string& p, NamedVariables& out, NamedVariables& buf) const override;

 private:
  struct State {
    std::string name;
    Variable var;
    size_t first_reader;  // the first node that reads it
  };
  size_t stop() const;
  std::shared_ptr<onnx::Rep> rep_;
  int last_layers_;
  int32_t dtype_ = 0;             // 0: as imported
  std::vector<Variable> values_;  // per graph value: initializers as Variables
  std::vector<State> params_, buffers_;
};

}  // namespace layer
}  // namespace singa
#endif
